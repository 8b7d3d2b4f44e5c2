/*
 * Unit tests for lib/features and lib/store/features.c: kind names and
 * versions; knob, itervar and curve values on a hand-checked GEMM loop nest
 * (tlp values: tlp.c);
 * fixed lengths over random configurations of a convolution and of every
 * operator (checked against the nest the IR really has); zeros and valid = 0
 * for a configuration that cannot be lowered; knob features of an imported
 * space; and the feature table: put/get round trip, absent and damaged
 * vectors, the iterator over configurations lacking features (all, by
 * hardware, by measurement ids). Store files live in a mkdtemp() directory
 * removed at exit.
 */
#include "unit.h"
#include "feat_task.h"

#include <dirent.h>
#include <math.h>
#include <sqlite3.h>
#include <unistd.h>

#include "features/feature.h"
#include "store/store_features.h"
#include "store/store_int.h"

/* Features of kind k of config text into a malloc'd array; *n its length. */
static float *extract(const task *t, int k, const char *text, int *n, int *valid)
{
	sp_config c;
	float *v;
	*n = -1;
	*valid = -1;
	if (sp_parse(t->sp, text, &c) || feat_length(k, t->sp, n) || !(v = malloc(sizeof *v * (size_t)*n)))
		return NULL;
	for (int i = 0; i < *n; i++)
		v[i] = -7.0f; /* every value must be written */
	if (feat_extract(k, t->sp, &c, v, valid)) {
		free(v);
		return NULL;
	}
	return v;
}

TEST(test_kinds)
{
	CHECK_EQ_INT(FEAT_NKIND, 6);
	for (int k = 0; k < FEAT_NKIND; k++) {
		CHECK_EQ_INT(feat_kind_parse(feat_kind_name(k)), k);
		CHECK(feat_version(k) > 0);
	}
	CHECK_EQ_STR(feat_kind_name(FEAT_KNOB), "knob");
	CHECK_EQ_STR(feat_kind_name(FEAT_ITERVAR), "itervar");
	CHECK_EQ_STR(feat_kind_name(FEAT_CURVE), "curve");
	CHECK_EQ_STR(feat_kind_name(FEAT_TLP), "tlp");
	CHECK_EQ_STR(feat_kind_name(FEAT_GRAPH), "graph");
	CHECK_EQ_STR(feat_kind_name(FEAT_HIDDEN), "hidden");
	CHECK_EQ_INT(feat_kind_parse("bogus"), -1);
	CHECK_EQ_INT(feat_kind_parse(""), -1);
	CHECK_EQ_INT(feat_kind_parse("Knob"), -1);
	CHECK_EQ_INT(feat_kind_parse(NULL), -1);
}

/*
 * dense:m=4,n=8,k=2 with the configuration below lowers to (tunekit measure
 * --emit-ir; pack and init/write-back nests omitted):
 *
 *   buffer local C_acc[4]        buffer input A[4, 2]
 *   buffer work B_p0_1[2, 2, 4]  (B[k, n] packed as [n/4][k][4])
 *   for i_0_j_0 in 0..1 parallel:                       loop 0
 *     for i_1 in 0..4:                                  loop 1
 *       for j_1 in 0..2:                                loop 2
 *         alloc C_acc[4]:
 *           for r_0 in 0..1:                            loop 3
 *             for r_1 in 0..2:                          loop 4
 *               for i_2 in 0..1 unroll:                 loop 5
 *                 for j_2 in 0..4 vectorize:            loop 6
 *                   C_acc[j_2] += (A[i_1, r_1]*B_p0_1[j_1, r_1, j_2])
 *
 * Slots: 0 C_acc, 1 A, 2 B_p0_1; P = 10 + 3*3 = 19 values per loop.
 */
static const char *const hand_cfg =
	"tile_i=1x4x1;tile_j=1x2x4;tile_r=1x2;order=0;vec=j;unroll=0;unroll_explicit=0;"
	"pack_A=0;pack_B=1";

TEST(test_dense_knob)
{
	task t;
	int n, valid;
	if (task_open(&t, "dense:m=4,n=8,k=2")) {
		CHECK(0);
		return;
	}
	float *v = extract(&t, FEAT_KNOB, hand_cfg, &n, &valid);
	CHECK(v != NULL);
	if (v) {
		/* tile_i 1x4x1, tile_j 1x2x4, tile_r 1x2: log2 of each factor */
		static const float want[] = {
			0, 2, 0,  0, 1, 2,  0, 1,
			1, 0, 0,  /* order one-hot: 0 of {0, 1, 2} */
			1, 0,     /* vec one-hot: j of {j, i} */
			0, 0,     /* unroll 0, unroll_explicit 0: log2(1 + v) */
			0, 1,     /* pack_A 0, pack_B 1 */
		};
		CHECK_EQ_INT(n, ArraySize(want));
		CHECK_EQ_INT(valid, 1);
		for (int i = 0; i < n && i < ArraySize(want); i++)
			CHECK_NEAR(v[i], want[i], 1e-6);
		free(v);
	}
	v = extract(&t, FEAT_KNOB, "tile_i=4x1x1;tile_j=1x8x1;tile_r=2x1;order=1;vec=i;unroll=64;"
	                           "unroll_explicit=1;pack_A=1;pack_B=0", &n, &valid);
	CHECK(v != NULL);
	if (v) {
		CHECK_NEAR(v[0], 2, 1e-6);           /* tile_i outer 4 */
		CHECK_NEAR(v[4], 3, 1e-6);           /* tile_j middle 8 */
		CHECK_NEAR(v[8], 0, 0);              /* order=1 */
		CHECK_NEAR(v[9], 1, 0);
		CHECK_NEAR(v[10], 0, 0);
		CHECK_NEAR(v[11], 0, 0);             /* vec=i */
		CHECK_NEAR(v[12], 1, 0);
		CHECK_NEAR(v[13], lg(64), 1e-6);     /* unroll=64 */
		CHECK_NEAR(v[14], 1, 1e-6);
		CHECK_NEAR(v[15], 1, 1e-6);
		CHECK_NEAR(v[16], 0, 1e-6);
		free(v);
	}
	task_close(&t);
}

TEST(test_dense_itervar)
{
	task t;
	int n, valid;
	const int P = 19;
	const int Z = 1; /* order 2's nest has one more loop: slot 0 is empty */
	if (task_open(&t, "dense:m=4,n=8,k=2")) {
		CHECK(0);
		return;
	}
	float *v = extract(&t, FEAT_ITERVAR, hand_cfg, &n, &valid);
	CHECK(v != NULL);
	if (!v) {
		task_close(&t);
		return;
	}
	CHECK_EQ_INT(n, (7 + Z) * P);
	CHECK_EQ_INT(valid, 1);
	for (int i = 0; i < n; i++)
		CHECK(v[i] >= 0 && (i >= Z * P || v[i] == 0));
	/* per loop: extent, level, top-down, bottom-up, annotation */
	static const double ext[7] = { 1, 4, 2, 1, 2, 1, 4 };
	static const int ann[7] = { 1, 0, 0, 0, 0, 3, 2 }; /* parallel, ..., unroll, vectorize */
	double top = 1;
	for (int l = 0; l < 7; l++) {
		double bot = 1, inner = 1;
		for (int m = l; m < 7; m++)
			bot *= ext[m];
		inner = bot / ext[l];
		top *= ext[l];
		const float *o = v + (l + Z) * P;
		CHECK_NEAR(o[0], lg(ext[l]), 1e-6);
		CHECK_NEAR(o[1], l + 1, 0);
		CHECK_NEAR(o[2], lg(top), 1e-6);
		CHECK_NEAR(o[3], lg(bot), 1e-6);
		for (int a = 0; a < 4; a++)
			CHECK_NEAR(o[4 + a], a == ann[l], 0);
		/* one add (+=) and one multiplication per statement */
		CHECK_NEAR(o[8], lg(inner), 1e-6);
		CHECK_NEAR(o[9], lg(inner), 1e-6);
	}
	/* loop 0 (i_0_j_0, one iteration): top 1, bottom 64 */
	CHECK_NEAR(v[(0 + Z) * P + 2], lg(1), 1e-6);
	CHECK_NEAR(v[(0 + Z) * P + 3], lg(64), 1e-6);
	/* slot 0, C_acc[j_2]: stride 1 in j_2 only; count 4 (j_2) below r_1 */
	CHECK_NEAR(v[(6 + Z) * P + 10], lg(1), 1e-6);
	CHECK_NEAR(v[(4 + Z) * P + 10], lg(0), 1e-6);
	CHECK_NEAR(v[(4 + Z) * P + 11], lg(4), 1e-6);
	CHECK_NEAR(v[(4 + Z) * P + 12], lg(1), 1e-6);  /* i_2 has one iteration */
	CHECK_NEAR(v[(0 + Z) * P + 11], lg(4), 1e-6);  /* whole nest: 4 elements, */
	CHECK_NEAR(v[(0 + Z) * P + 12], lg(16), 1e-6); /* each reused 4*2*2 times */
	/* slot 1, A[i_1, r_1] of A[4, 2]: stride 2 in i_1, 1 in r_1 */
	CHECK_NEAR(v[(1 + Z) * P + 13], lg(2), 1e-6);
	CHECK_NEAR(v[(4 + Z) * P + 13], lg(1), 1e-6);
	CHECK_NEAR(v[(2 + Z) * P + 13], lg(0), 1e-6);
	CHECK_NEAR(v[(1 + Z) * P + 14], lg(2), 1e-6);  /* inside i_1: r_1 */
	CHECK_NEAR(v[(1 + Z) * P + 15], lg(8), 1e-6);  /* reused over j_1, j_2 */
	CHECK_NEAR(v[(4 + Z) * P + 14], lg(1), 1e-6);
	CHECK_NEAR(v[(4 + Z) * P + 15], lg(4), 1e-6);  /* reused over j_2 */
	/* slot 2, B_p0_1[j_1, r_1, j_2] of [2, 2, 4]: strides 8, 4, 1 */
	CHECK_NEAR(v[(2 + Z) * P + 16], lg(8), 1e-6);
	CHECK_NEAR(v[(4 + Z) * P + 16], lg(4), 1e-6);
	CHECK_NEAR(v[(6 + Z) * P + 16], lg(1), 1e-6);
	CHECK_NEAR(v[(1 + Z) * P + 16], lg(0), 1e-6);
	CHECK_NEAR(v[(2 + Z) * P + 17], lg(8), 1e-6);  /* inside j_1: r_1 * j_2 */
	CHECK_NEAR(v[(2 + Z) * P + 18], lg(1), 1e-6);
	CHECK_NEAR(v[(1 + Z) * P + 17], lg(16), 1e-6); /* inside i_1: all of B */
	CHECK_NEAR(v[(1 + Z) * P + 18], lg(1), 1e-6);
	CHECK_NEAR(v[(0 + Z) * P + 18], lg(4), 1e-6);  /* reused over i_1 */
	/* innermost loop: nothing inside one iteration */
	for (int s = 0; s < 3; s++) {
		CHECK_NEAR(v[(6 + Z) * P + 11 + 3 * s], lg(1), 1e-6);
		CHECK_NEAR(v[(6 + Z) * P + 12 + 3 * s], lg(1), 1e-6);
	}
	free(v);
	task_close(&t);
}

TEST(test_dense_curve)
{
	task t;
	int n, valid;
	if (task_open(&t, "dense:m=4,n=8,k=2")) {
		CHECK(0);
		return;
	}
	float *v = extract(&t, FEAT_CURVE, hand_cfg, &n, &valid);
	CHECK(v != NULL);
	if (!v) {
		task_close(&t);
		return;
	}
	CHECK_EQ_INT(n, 3 * 2 * 20);
	CHECK_EQ_INT(valid, 1);
	/* levels j = 1..7 from the innermost loop; x_t = t*6/19 */
	/* C_acc: count 4 from level 1 on (j_2), reuse 1,1,2,2,2,8,8 */
	for (int t2 = 0; t2 < 20; t2++)
		CHECK_NEAR(v[t2], lg(4), 1e-6);
	CHECK_NEAR(v[20 + 0], lg(1), 1e-6);
	CHECK_NEAR(v[20 + 19], lg(16), 1e-6);
	/* x_5 = 30/19 = 1.5789: between level 2 (reuse 1) and 3 (reuse 2) */
	{
		double x = 30.0 / 19, w = x - 1;
		CHECK_NEAR(v[20 + 5], lg(1) * (1 - w) + lg(2) * w, 1e-5);
	}
	/* A: count at the outermost level = 8 elements, reuse 8 */
	CHECK_NEAR(v[40 + 19], lg(8), 1e-6);
	CHECK_NEAR(v[40 + 20 + 19], lg(8), 1e-6);
	CHECK_NEAR(v[40 + 0], lg(1), 1e-6);      /* j_2 alone: one element of A */
	CHECK_NEAR(v[40 + 20 + 0], lg(4), 1e-6); /* ... reused 4 times */
	/* B_p0_1: 16 elements, reuse 4 (i_1) at the top; 4 at level 1 */
	CHECK_NEAR(v[80 + 19], lg(16), 1e-6);
	CHECK_NEAR(v[80 + 20 + 19], lg(4), 1e-6);
	CHECK_NEAR(v[80 + 0], lg(4), 1e-6);
	free(v);
	task_close(&t);
}

/* The level of the last loop is the number of loops the nest really has. */
static void check_fixed_length(const char *key, int nconfig, int want_loops)
{
	task t;
	tk_rng r;
	int len[FEAT_NKIND], P, nloops;
	if (task_open(&t, key)) {
		CHECK(0);
		return;
	}
	for (int k = 0; k < FEAT_NKIND; k++)
		CHECK_EQ_INT(feat_length(k, t.sp, &len[k]), TK_OK);
	P = 10 + 3 * (1 + t.p->stage[t.sp->main_stage].nread);
	nloops = len[FEAT_ITERVAR] / P;
	CHECK_EQ_INT(len[FEAT_ITERVAR] % P, 0);
	CHECK_EQ_INT(len[FEAT_CURVE], (1 + t.p->stage[t.sp->main_stage].nread) * 40);
	if (want_loops)
		CHECK_EQ_INT(nloops, want_loops);
	float *v = malloc(sizeof *v * (size_t)(len[FEAT_ITERVAR] + 1));
	tk_rng_seed(&r, 11, 3);
	int nvalid = 0;
	for (int i = 0; v && i < nconfig; i++) {
		sp_config c;
		int valid, n;
		sp_sample(t.sp, &r, &c);
		v[len[FEAT_ITERVAR]] = 12345.0f; /* guard */
		CHECK_EQ_INT(feat_extract(FEAT_ITERVAR, t.sp, &c, v, &valid), TK_OK);
		CHECK_NEAR(v[len[FEAT_ITERVAR]], 12345.0, 0);
		if (valid) {
			/* aligned at the innermost loop: a shorter nest (orders 0
			 * and 1 when order 2 exists) starts later */
			int first = 0;
			while (first < nloops - 1 && v[first * P + 1] == 0)
				first++;
			nvalid++;
			CHECK_NEAR(v[(nloops - 1) * P + 1], nloops - first, 0); /* innermost level */
			CHECK_NEAR(v[first * P + 1], 1, 0);
			CHECK_NEAR(v[first * P + 4 + 1], 1, 0); /* the outer fused loop is parallel */
			CHECK(first < t.p->stage[t.sp->main_stage].nspatial);
		}
		for (int k = 0; k < FEAT_NKIND; k++) {
			CHECK_EQ_INT(feat_length(k, t.sp, &n), TK_OK);
			CHECK_EQ_INT(n, len[k]);
		}
	}
	CHECK(nvalid > 0);
	free(v);
	task_close(&t);
}

TEST(test_conv2d_fixed_length)
{
	/* conv2d axes b (extent 1) f y x rc ry rx: 1 + 3*3 + 3*2 leaves = 16
	 * loops, the most order 2 makes (it fuses only f, the one spatial axis
	 * of the weight); 3 slots: 16 * 19 = 304 */
	check_fixed_length("conv2d:c=64,h=56,w=56,k=64,pad=1", 50, 16);
	task t;
	int n;
	if (task_open(&t, "conv2d:c=64,h=56,w=56,k=64,pad=1")) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(feat_length(FEAT_ITERVAR, t.sp, &n), TK_OK);
	CHECK_EQ_INT(n, 304);
	CHECK_EQ_INT(feat_length(FEAT_CURVE, t.sp, &n), TK_OK);
	CHECK_EQ_INT(n, 120);
	CHECK_EQ_INT(feat_length(FEAT_KNOB, t.sp, &n), TK_OK);
	CHECK_EQ_INT(n, 3 * 3 + 3 * 2 + 3 + 3 + 1 + 1 + 2); /* tiles, order, vec f/y/x, ... */
	task_close(&t);
	check_fixed_length("dense:m=512,n=512,k=512", 20, 8);
}

TEST(test_every_op_fixed_length)
{
	static const char *tasks[] = {
		"batch_matmul:b=2,m=5,n=7,k=3", "conv1d:c=3,w=13,k=2,stride=2,pad=1",
		"conv1d_transpose:c=2,w=7,k=3,stride=2", "conv2d_transpose:c=2,h=5,w=3,k=3,stride=2,pad=1",
		"depthwise_conv2d:c=3,h=7,w=5,pad=1", "conv2d_winograd:c=2,h=7,w=5,k=3",
		"conv2d_winograd:c=8,h=14,w=14,k=8,m=4", "dense_relu:m=5,n=3,k=7", "dense:m=1,n=64,k=9",
		"conv2d:c=3,h=9,w=9,k=4,stride=2,r=1,s=1", "conv2d_nchwc:c=4,h=6,w=5,k=6,cb=2,kb=3,pad=1",
		"depthwise_conv2d_nchwc:c=6,h=7,w=5,cb=3,pad=1",
		"layout_transform:c=32,h=5,w=7,ib=1,ob=16", "layout_transform:c=6,h=5,w=4,ib=3,ob=1",
	};
	for (int i = 0; i < ArraySize(tasks); i++)
		check_fixed_length(tasks[i], 30, 0);
}

TEST(test_invalid_zeros)
{
	task t;
	sp_config c;
	int n, valid;
	if (task_open(&t, "dense:m=1024,n=1024,k=1")) {
		CHECK(0);
		return;
	}
	/* register tile 1024x1024: an accumulator of 4 MiB, over the 1 MiB limit */
	sp_naive(t.sp, &c);
	int found = 0;
	for (int k = 0; k < t.sp->nknob; k++) {
		const sp_knob *kn = &t.sp->knob[k];
		if (kn->role != KR_TILE)
			continue;
		for (int j = 0; j < kn->n; j++)
			if (kn->cand[j * 3] == 1 && kn->cand[j * 3 + 1] == 1 && kn->cand[j * 3 + 2] == 1024) {
				c.v[k] = j;
				found++;
			}
	}
	CHECK_EQ_INT(found, 2);
	for (int k = 0; k < FEAT_NKIND; k++) {
		CHECK_EQ_INT(feat_length(k, t.sp, &n), TK_OK);
		float *v = malloc(sizeof *v * (size_t)n);
		if (!v)
			continue;
		if (k == FEAT_HIDDEN) {
			/* hidden features need a compile: feat_extract refuses them,
			 * feat_hidden_cpu gives zeros for an unlowerable configuration */
			CHECK_EQ_INT(feat_extract(k, t.sp, &c, v, &valid), TK_EUNSUPP);
			CHECK_EQ_INT(feat_hidden_cpu(t.sp, &c, NULL, v, &valid), TK_OK);
			CHECK_EQ_INT(valid, 0);
			for (int i = 0; i < n; i++)
				CHECK_NEAR(v[i], 0, 0);
			free(v);
			continue;
		}
		for (int i = 0; i < n; i++)
			v[i] = 3.0f;
		valid = -1;
		CHECK_EQ_INT(feat_extract(k, t.sp, &c, v, &valid), TK_OK);
		int nonzero = 0;
		for (int i = 0; i < n; i++)
			nonzero += v[i] != 0;
		if (k == FEAT_KNOB || k == FEAT_TLP) {
			CHECK_EQ_INT(valid, 1); /* knob and tlp features never lower */
			CHECK(nonzero > 0);
		} else {
			CHECK_EQ_INT(valid, 0);
			CHECK_EQ_INT(nonzero, 0);
		}
		CHECK_EQ_INT(feat_extract(k, t.sp, &c, v, NULL), TK_OK); /* valid may be NULL */
		free(v);
	}
	/* the naive configuration of the same task lowers */
	sp_naive(t.sp, &c);
	float *v = malloc(sizeof *v * 7 * 19);
	if (v) {
		CHECK_EQ_INT(feat_length(FEAT_ITERVAR, t.sp, &n), TK_OK);
		CHECK_EQ_INT(n, 6 * 19); /* i: 3 levels, j: 3, k=1: 1; i_0, j_0 fused */
		CHECK_EQ_INT(feat_extract(FEAT_ITERVAR, t.sp, &c, v, &valid), TK_OK);
		CHECK_EQ_INT(valid, 1);
		free(v);
	}
	task_close(&t);
}

TEST(test_imported_knob)
{
	static const char *const names[] = { "block", "mode", "ratio" };
	static const char *const v0[] = { "16", "32", "64" };
	static const char *const v1[] = { "True", "False" };
	static const char *const v2[] = { "0.5", "1.5", "-3" };
	static const char *const *const vals[] = { v0, v1, v2 };
	static const int nval[] = { 3, 2, 3 };
	sp_space *sp;
	sp_config c;
	int n, valid;
	float v[8];
	CHECK_EQ_INT(sp_space_custom(3, names, nval, vals, &sp), TK_OK);
	if (!sp)
		return;
	CHECK_EQ_INT(feat_length(FEAT_KNOB, sp, &n), TK_OK);
	CHECK_EQ_INT(n, 1 + 2 + 1);
	CHECK_EQ_INT(sp_parse(sp, "block=32;mode=False;ratio=1.5", &c), TK_OK);
	CHECK_EQ_INT(feat_extract(FEAT_KNOB, sp, &c, v, &valid), TK_OK);
	CHECK_EQ_INT(valid, 1);
	CHECK_NEAR(v[0], lg(32), 1e-6);
	CHECK_NEAR(v[1], 0, 0);
	CHECK_NEAR(v[2], 1, 0);
	CHECK_NEAR(v[3], lg(1.5), 1e-6);
	CHECK_EQ_INT(sp_parse(sp, "block=16;mode=True;ratio=-3", &c), TK_OK);
	CHECK_EQ_INT(feat_extract(FEAT_KNOB, sp, &c, v, &valid), TK_OK);
	CHECK_NEAR(v[0], lg(16), 1e-6);
	CHECK_NEAR(v[1], 1, 0);
	CHECK_NEAR(v[3], lg(3), 1e-6);
	/* the loop-nest and schedule kinds need a program */
	for (int k = FEAT_ITERVAR; k <= FEAT_GRAPH; k++) {
		n = -1;
		CHECK_EQ_INT(feat_length(k, sp, &n), TK_EUNSUPP);
		CHECK(tk_errmsg()[0] != 0);
		valid = 1;
		CHECK_EQ_INT(feat_extract(k, sp, &c, v, &valid), TK_EUNSUPP);
		CHECK_EQ_INT(valid, 0);
	}
	sp_space_free(sp);
}

/* ---- the feature table ------------------------------------------------------------- */

static char tmpdir[256];

static void tmpdir_remove(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	char path[512];
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
			unlink(path);
		}
	}
	closedir(d);
	rmdir(tmpdir);
}

static tk_store *store_new(void)
{
	char path[300];
	tk_store *s = NULL;
	if (!tmpdir[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(tmpdir, sizeof tmpdir, "%s/tk-features-XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(tmpdir)) {
			perror("mkdtemp");
			exit(2);
		}
		atexit(tmpdir_remove);
	}
	snprintf(path, sizeof path, "%s/f.db", tmpdir);
	unlink(path);
	if (store_open(path, 0, &s))
		fprintf(stderr, "store_open: %s\n", tk_errmsg());
	return s;
}

/* All rows of a todo iterator: config ids into ids[], count returned. */
static int todo_ids(tk_store *s, const char *kind, int64_t hw, const int64_t *meas, int nmeas,
                    int64_t *ids, int max, int64_t *scope, int64_t *missing)
{
	store_ftodo *it;
	const store_fcfg *r;
	int n = 0;
	if (store_feature_todo_open(s, kind, 1, hw, meas, nmeas, &it))
		return -1;
	store_feature_todo_counts(it, scope, missing);
	while (!store_feature_todo_next(it, &r) && r) {
		if (n < max)
			ids[n] = r->config_id;
		n++;
	}
	store_feature_todo_free(it);
	return n;
}

TEST(test_store_features)
{
	tk_store *s = store_new();
	int64_t task, tk2, hw1, hw2, cfg[600], meas[4], ids[700], scope, missing;
	float v[5] = { 0, 1.5f, -2, 1e-3f, 12345 }, *got;
	int n;
	CHECK(s != NULL);
	if (!s)
		return;
	store_hw h1 = { .key = "hw-one", .kind = "cpu" }, h2 = { .key = "hw-two", .kind = "cpu" };
	CHECK_EQ_INT(store_task_get(s, "dense:k=2,m=4,n=8", "dense", 128, &task), TK_OK);
	CHECK_EQ_INT(store_task_get(s, "kt:imported", "kt", 1, &tk2), TK_OK);
	CHECK_EQ_INT(sqlite3_exec(store_db(s), "UPDATE task SET space = '{\"knobs\": []}'"
	                          " WHERE key = 'kt:imported'", NULL, NULL, NULL), SQLITE_OK);
	CHECK_EQ_INT(store_hardware_get(s, &h1, &hw1), TK_OK);
	CHECK_EQ_INT(store_hardware_get(s, &h2, &hw2), TK_OK);
	CHECK_EQ_INT(store_begin(s), TK_OK);
	for (int i = 0; i < 600; i++) {
		char text[32];
		snprintf(text, sizeof text, "c=%d", i);
		CHECK_EQ_INT(store_config_get(s, i == 599 ? tk2 : task, -1, text, "", &cfg[i]), TK_OK);
	}
	CHECK_EQ_INT(store_commit(s), TK_OK);
	/* measurements: cfg[3] on hw1 twice, cfg[5] on hw2, cfg[599] on hw1 */
	int64_t mcfg[4] = { cfg[3], cfg[5], cfg[3], cfg[599] }, mhw[4] = { hw1, hw2, hw1, hw1 };
	for (int i = 0; i < 4; i++) {
		store_meas m = { .config_id = mcfg[i], .hardware_id = mhw[i], .valid = 0, .error = 1 };
		CHECK_EQ_INT(store_meas_add(s, &m, &meas[i]), TK_OK);
	}

	/* round trip, replace, absent, other version */
	CHECK_EQ_INT(store_feature_put(s, cfg[3], "knob", 1, v, 5), TK_OK);
	CHECK_EQ_INT(store_feature_get(s, cfg[3], "knob", 1, &got, &n), TK_OK);
	CHECK_EQ_INT(n, 5);
	for (int i = 0; got && i < 5; i++)
		CHECK_NEAR(got[i], v[i], 0);
	free(got);
	v[0] = 42;
	CHECK_EQ_INT(store_feature_put(s, cfg[3], "knob", 1, v, 3), TK_OK);
	CHECK_EQ_INT(store_feature_get(s, cfg[3], "knob", 1, &got, &n), TK_OK);
	CHECK_EQ_INT(n, 3);
	CHECK(got && got[0] == 42);
	free(got);
	got = (float *)1;
	CHECK_EQ_INT(store_feature_get(s, cfg[3], "knob", 2, &got, &n), TK_ENOTFOUND);
	CHECK(got == NULL && n == 0);
	CHECK_EQ_INT(store_feature_get(s, cfg[4], "knob", 1, &got, &n), TK_ENOTFOUND);
	CHECK_EQ_INT(store_feature_put(s, cfg[4], "curve", 1, NULL, 0), TK_OK);
	CHECK_EQ_INT(store_feature_get(s, cfg[4], "curve", 1, &got, &n), TK_OK);
	CHECK_EQ_INT(n, 0);
	free(got);

	/* damaged blobs and counts */
	CHECK_EQ_INT(sqlite3_exec(store_db(s), "UPDATE feature SET data = x'00112233' WHERE kind = 'knob'",
	                          NULL, NULL, NULL), SQLITE_OK);
	CHECK_EQ_INT(store_feature_get(s, cfg[3], "knob", 1, &got, &n), TK_ECORRUPT);
	CHECK_EQ_INT(store_feature_put(s, cfg[3], "knob", 1, v, 3), TK_OK);
	CHECK_EQ_INT(sqlite3_exec(store_db(s), "UPDATE feature SET n = 4 WHERE kind = 'knob'",
	                          NULL, NULL, NULL), SQLITE_OK);
	CHECK_EQ_INT(store_feature_get(s, cfg[3], "knob", 1, &got, &n), TK_ECORRUPT);
	CHECK_EQ_INT(sqlite3_exec(store_db(s), "UPDATE feature SET n = -1 WHERE kind = 'knob'",
	                          NULL, NULL, NULL), SQLITE_OK);
	CHECK_EQ_INT(store_feature_get(s, cfg[3], "knob", 1, &got, &n), TK_ECORRUPT);
	CHECK(got == NULL);
	CHECK_EQ_INT(store_feature_put(s, cfg[3], "knob", 1, v, 3), TK_OK);

	/* every configuration lacking knob features, over several pages */
	CHECK_EQ_INT(todo_ids(s, "knob", 0, NULL, 0, ids, 700, &scope, &missing), 599);
	CHECK_EQ_INT(scope, 600);
	CHECK_EQ_INT(missing, 599);
	CHECK_EQ_INT(ids[0], cfg[0]);
	CHECK_EQ_INT(ids[3], cfg[4]); /* cfg[3] has knob features */
	CHECK_EQ_INT(ids[598], cfg[599]);
	int sorted = 1;
	for (int i = 1; i < 599; i++)
		sorted &= ids[i] > ids[i - 1];
	CHECK(sorted);
	CHECK_EQ_INT(todo_ids(s, "curve", 0, NULL, 0, ids, 700, &scope, &missing), 599);
	/* writing while iterating: every row still comes once */
	{
		store_ftodo *it;
		const store_fcfg *r;
		int k = 0, imported = 0;
		CHECK_EQ_INT(store_feature_todo_open(s, "itervar", 1, 0, NULL, 0, &it), TK_OK);
		CHECK_EQ_INT(store_begin(s), TK_OK);
		while (it && !store_feature_todo_next(it, &r) && r) {
			CHECK_EQ_INT(store_feature_put(s, r->config_id, "itervar", 1, v, 2), TK_OK);
			imported += r->space != NULL;
			if (++k % 100 == 0) {
				CHECK_EQ_INT(store_commit(s), TK_OK);
				CHECK_EQ_INT(store_begin(s), TK_OK);
			}
		}
		CHECK_EQ_INT(store_commit(s), TK_OK);
		store_feature_todo_free(it);
		CHECK_EQ_INT(k, 600);
		CHECK_EQ_INT(imported, 1);
	}
	CHECK_EQ_INT(todo_ids(s, "itervar", 0, NULL, 0, ids, 700, &scope, &missing), 0);
	CHECK_EQ_INT(scope, 600);
	CHECK_EQ_INT(missing, 0);

	/* by hardware */
	CHECK_EQ_INT(todo_ids(s, "curve", hw1, NULL, 0, ids, 700, &scope, &missing), 2);
	CHECK_EQ_INT(ids[0], cfg[3]);
	CHECK_EQ_INT(ids[1], cfg[599]);
	CHECK_EQ_INT(scope, 2);
	CHECK_EQ_INT(todo_ids(s, "knob", hw1, NULL, 0, ids, 700, &scope, &missing), 1);
	CHECK_EQ_INT(ids[0], cfg[599]);
	CHECK_EQ_INT(scope, 2);
	CHECK_EQ_INT(missing, 1);

	/* by measurement ids: each configuration once, in input order */
	int64_t list[5] = { meas[3], meas[0], meas[1], meas[2], meas[3] };
	CHECK_EQ_INT(todo_ids(s, "curve", 0, list, 5, ids, 700, &scope, &missing), 3);
	CHECK_EQ_INT(ids[0], cfg[599]);
	CHECK_EQ_INT(ids[1], cfg[3]);
	CHECK_EQ_INT(ids[2], cfg[5]);
	CHECK_EQ_INT(scope, 3);
	CHECK_EQ_INT(missing, 3);
	CHECK_EQ_INT(todo_ids(s, "knob", 0, list, 5, ids, 700, &scope, &missing), 2);
	CHECK_EQ_INT(scope, 3);
	CHECK_EQ_INT(missing, 2);
	CHECK_EQ_INT(todo_ids(s, "curve", hw2, list, 5, ids, 700, &scope, &missing), 1);
	CHECK_EQ_INT(ids[0], cfg[5]);
	{
		store_ftodo *it = (store_ftodo *)1;
		int64_t bad[2] = { meas[0], 99999 };
		CHECK_EQ_INT(store_feature_todo_open(s, "curve", 1, 0, bad, 2, &it), TK_ENOTFOUND);
		CHECK(it == NULL);
		CHECK(strstr(tk_errmsg(), "99999") != NULL);
	}
	/* the row carries task, config text and space */
	{
		store_ftodo *it;
		const store_fcfg *r = NULL;
		CHECK_EQ_INT(store_feature_todo_open(s, "curve", 1, 0, &meas[1], 1, &it), TK_OK);
		CHECK_EQ_INT(store_feature_todo_next(it, &r), TK_OK);
		CHECK(r != NULL);
		if (r) {
			CHECK_EQ_STR(r->task, "dense:k=2,m=4,n=8");
			CHECK_EQ_STR(r->config, "c=5");
			CHECK(r->space == NULL);
		}
		CHECK_EQ_INT(store_feature_todo_next(it, &r), TK_OK);
		CHECK(r == NULL);
		store_feature_todo_free(it);
	}
	store_close(s);
}


/* Hidden features of the CPU: the tile, tail and padding of each split
 * knob from its factors, the nest's values, the compiler's facts where
 * given, and their names. */
TEST(test_hidden_cpu)
{
	task t;
	tk_rng r;
	int n, ns = 0, valid;
	if (task_open(&t, "dense:m=24,n=40,k=16")) {
		CHECK(0);
		return;
	}
	for (int k = 0; k < t.sp->nknob; k++)
		ns += t.sp->knob[k].kind == KNOB_SPLIT;
	CHECK_EQ_INT(feat_length(FEAT_HIDDEN, t.sp, &n), TK_OK);
	CHECK_EQ_INT(n, FEAT_HIDDEN_TILE * ns + FEAT_HIDDEN_NEST + FEAT_HIDDEN_CC);
	CHECK_EQ_INT(feat_hidden_length(t.sp), n);
	float *v = malloc(sizeof *v * (size_t)n);
	feat_cc cc = { 96, 1, 255, 1023, 3, 2 };
	tk_rng_seed(&r, 5, 1);
	int nvalid = 0;
	for (int i = 0; v && i < 40; i++) {
		sp_config c;
		sp_sample(t.sp, &r, &c);
		CHECK_EQ_INT(feat_hidden_cpu(t.sp, &c, &cc, v, &valid), TK_OK);
		if (!valid)
			continue;
		nvalid++;
		for (int k = 0, at = 0; k < t.sp->nknob; k++) {
			const sp_knob *kn = &t.sp->knob[k];
			if (kn->kind != KNOB_SPLIT)
				continue;
			const int64_t *f = &kn->cand[(size_t)c.v[k] * (size_t)kn->nlevel];
			int64_t tile = 1;
			for (int l = 1; l < kn->nlevel; l++)
				tile *= f[l];
			CHECK_NEAR(v[at + 0], log2(1.0 + (double)f[kn->nlevel - 1]), 1e-5);
			CHECK_NEAR(v[at + 1], log2(1.0 + (double)tile), 1e-5);
			CHECK_NEAR(v[at + 2], log2(1.0 + (double)f[0]), 1e-5);
			CHECK_NEAR(v[at + 3], log2(1.0 + (double)(kn->extent % tile)), 1e-5);
			at += FEAT_HIDDEN_TILE;
		}
		int cc0 = n - FEAT_HIDDEN_CC;
		CHECK(v[cc0 - FEAT_HIDDEN_NEST] >= 1); /* loops of the nest */
		CHECK_NEAR(v[cc0 + 0], log2(97.0), 1e-5);
		CHECK_NEAR(v[cc0 + 1], 1, 0);
		CHECK_NEAR(v[cc0 + 2], 8, 1e-5);
		CHECK_NEAR(v[cc0 + 3], 10, 1e-5);
		CHECK_NEAR(v[cc0 + 4], 3, 0);
		CHECK_NEAR(v[cc0 + 5], 2, 0);
		/* without the compiler's facts they are zero, the rest the same */
		float w[256];
		if (n <= 256) {
			CHECK_EQ_INT(feat_hidden_cpu(t.sp, &c, NULL, w, &valid), TK_OK);
			for (int j = 0; j < cc0; j++)
				CHECK_NEAR(w[j], v[j], 0);
			for (int j = cc0; j < n; j++)
				CHECK_NEAR(w[j], 0, 0);
		}
	}
	CHECK(nvalid > 0);
	char name[64];
	feat_hidden_name(t.sp, n - FEAT_HIDDEN_CC, name, sizeof name);
	CHECK_EQ_STR(name, "cc_stack_bytes");
	feat_hidden_name(t.sp, 3, name, sizeof name);
	CHECK(strstr(name, ".tail") != NULL);
	feat_hidden_name(t.sp, n - FEAT_HIDDEN_CC - FEAT_HIDDEN_NEST, name, sizeof name);
	CHECK_EQ_STR(name, "nest_loops");
	free(v);
	task_close(&t);
}

UNIT_MAIN(test_kinds, test_dense_knob, test_dense_itervar, test_dense_curve,
          test_conv2d_fixed_length, test_every_op_fixed_length, test_invalid_zeros,
          test_imported_knob, test_store_features, test_hidden_cpu)
