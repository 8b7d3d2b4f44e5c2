/*
 * Unit tests for the tlp feature kind (lib/features/tlp.c): the exact rows
 * of a hand-checked GEMM schedule; loop tokens that line up across
 * operators (conv2d's fused outer loop reads like dense's) and the stage
 * columns of Winograd's multi-stage schedule; the contract of feature.h
 * over random configurations of every operator (one row per primitive,
 * its kind one-hot, zero padding, the length as the leading non-zero rows,
 * no template longer than L, deterministic values); zeros and valid = 0 for
 * a schedule that cannot be walked; features without lowering; imported
 * spaces refused.
 */
#include "unit.h"
#include "feat_task.h"

#include "features/feature.h"
#include "schedule/sched.h"

#define L FEAT_TLP_L
#define E FEAT_TLP_E

/* tlp features of configuration text into v[L*E] (every value overwritten
 * first with a marker, so that unwritten values show). */
static int extract(const task *t, const char *text, float *v, int *valid)
{
	sp_config c;
	for (int i = 0; i < L * E; i++)
		v[i] = -7.0f;
	*valid = -1;
	if (sp_parse(t->sp, text, &c))
		return -1;
	return feat_extract(FEAT_TLP, t->sp, &c, v, valid);
}

/* Leading rows with a non-zero value. */
static int seq_length(const float *v)
{
	int n = 0;
	for (; n < L; n++) {
		int nz = 0;
		for (int j = 0; j < E; j++)
			nz |= v[n * E + j] != 0;
		if (!nz)
			break;
	}
	return n;
}

TEST(test_kind)
{
	task t;
	int n;
	CHECK_EQ_STR(feat_kind_name(FEAT_TLP), "tlp");
	CHECK_EQ_INT(feat_kind_parse("tlp"), FEAT_TLP);
	CHECK_EQ_INT(feat_version(FEAT_TLP), 2);
	CHECK_EQ_INT(L, 32);
	CHECK_EQ_INT(E, 25);
	if (task_open(&t, "dense:m=4,n=8,k=2")) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(feat_length(FEAT_TLP, t.sp, &n), TK_OK);
	CHECK_EQ_INT(n, L * E); /* the same for every task */
	task_close(&t);
}

/*
 * dense:m=4,n=8,k=2 (axes i j spatial, r reduction) with this configuration
 * is the sequence (tunekit measure --emit-sched):
 *
 *   0 split C i 4 1         4 fuse C i.0 j.0        8 cache_write C j.1
 *   1 split C j 2 4         5 parallel C i.0+j.0    9 pack C B
 *   2 split C r 2           6 vectorize C j.2      10 pragma C unroll_max 0 explicit 0
 *   3 reorder C i.0 j.0 i.1 j.1 r.0 r.1 i.2 j.2     7 unroll C i.2
 *
 * Loop tokens (axis, level, reduction, lg extent, loops fused): i is the
 * second spatial axis from the last (axis 2), j and r the last of theirs
 * (axis 1); i.0 has extent ceil(4 / (4*1)) = 1, j.0 ceil(8 / (2*4)) = 1.
 */
static const char *const hand_cfg =
	"tile_i=1x4x1;tile_j=1x2x4;tile_r=1x2;order=0;vec=j;unroll=0;unroll_explicit=0;"
	"pack_A=0;pack_B=1";

TEST(test_dense_rows)
{
	task t;
	int valid;
	float v[L * E];
	if (task_open(&t, "dense:m=4,n=8,k=2")) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(extract(&t, hand_cfg, v, &valid), TK_OK);
	CHECK_EQ_INT(valid, 1);
	const double l1 = lg(1), l2 = lg(2), l4 = lg(4), l8 = lg(8), l16 = lg(16);
	/*               kind one-hot        main stage  loop A             loop B           numbers */
	const double want[11][E] = {
		{ 1, 0, 0, 0, 0, 0, 0, 0, 0,  1, 0,  2, 0, 0, l4, 1,  0, 0, 0, 0, 0,  l1, l4, l1, 0 },
		{ 1, 0, 0, 0, 0, 0, 0, 0, 0,  1, 0,  1, 0, 0, l8, 1,  0, 0, 0, 0, 0,  l1, l2, l4, 0 },
		{ 1, 0, 0, 0, 0, 0, 0, 0, 0,  1, 0,  1, 0, 1, l2, 1,  0, 0, 0, 0, 0,  l1, l2, 0, 0 },
		/* reorder: per class S0 S1 S2 R0 R1 R2, lg(count) and mean position / 7 */
		{ 0, 1, 0, 0, 0, 0, 0, 0, 0,  1, 0,  l2, 0.5 / 7, l2, 2.5 / 7, l2, 6.5 / 7,
		  l1, 4.0 / 7, l1, 5.0 / 7, 0, 0,  0, 0 },
		{ 0, 0, 1, 0, 0, 0, 0, 0, 0,  1, 0,  2, 1, 0, l1, 1,  1, 1, 0, l1, 1,  0, 0, 0, 0 },
		{ 0, 0, 0, 1, 0, 0, 0, 0, 0,  1, 0,  1, 1, 0, l1, 2,  0, 0, 0, 0, 0,  0, 0, 0, 0 },
		{ 0, 0, 0, 0, 1, 0, 0, 0, 0,  1, 0,  1, 3, 0, l4, 1,  0, 0, 0, 0, 0,  0, 0, 0, 0 },
		{ 0, 0, 0, 0, 0, 1, 0, 0, 0,  1, 0,  2, 3, 0, l1, 1,  0, 0, 0, 0, 0,  0, 0, 0, 0 },
		/* cache_write below j.1: r.0 r.1 (1 x 2) and the tile i.2 j.2 (1 x 4) */
		{ 0, 0, 0, 0, 0, 0, 1, 0, 0,  1, 0,  1, 2, 0, l2, 1,  0, 0, 0, 0, 0,  l4, l2, 4, 0 },
		/* pack B before the nest: no loop; read 2 of 2, 16 elements */
		{ 0, 0, 0, 0, 0, 0, 0, 1, 0,  1, 0,  0, 0, 0, 0, 0,  0, 0, 0, 0, 0,  2, l16, 0, 0 },
		{ 0, 0, 0, 0, 0, 0, 0, 0, 1,  1, 0,  0, 0, 0, 0, 0,  0, 0, 0, 0, 0,  0, 0, 0, 0 },
	};
	for (int i = 0; i < 11; i++)
		for (int j = 0; j < E; j++)
			if (fabs(v[i * E + j] - want[i][j]) > 1e-6) {
				fprintf(stderr, "row %d column %d: ", i, j);
				CHECK_NEAR(v[i * E + j], want[i][j], 1e-6);
			}
	for (int i = 11 * E; i < L * E; i++)
		if (v[i] != 0) {
			CHECK_NEAR(v[i], 0, 0); /* padding */
			break;
		}
	CHECK_EQ_INT(seq_length(v), 11);

	/* a change of the order knob shows in the reorder row only: order 2 puts
	 * j.0 outermost, then r.0, then i.0 (unfused) */
	float w[L * E];
	CHECK_EQ_INT(extract(&t, "tile_i=1x4x1;tile_j=1x2x4;tile_r=1x2;order=2;vec=j;unroll=0;"
	                         "unroll_explicit=0;pack_A=0;pack_B=1", w, &valid), TK_OK);
	CHECK_EQ_INT(valid, 1);
	CHECK_NEAR(w[3 * E + 11], l2, 1e-6);
	CHECK_NEAR(w[3 * E + 12], (0 + 2) / 2.0 / 7, 1e-6);   /* j.0 at 0, i.0 at 2 */
	CHECK_NEAR(w[3 * E + 17], l1, 1e-6);
	CHECK_NEAR(w[3 * E + 18], 1.0 / 7, 1e-6);             /* r.0 at 1 */
	CHECK_EQ_INT(memcmp(v, w, sizeof(float) * 3 * E), 0); /* the splits are the same */
	/* no fuse now: cache_write C j.1 is row 7, and below j.1 are r.1 i.2 j.2 */
	CHECK_NEAR(w[7 * E + 6], 1, 0);
	CHECK_NEAR(w[7 * E + 21], l4, 1e-6);
	CHECK_NEAR(w[7 * E + 22], l2, 1e-6);
	CHECK_NEAR(w[7 * E + 23], 3, 0);
	task_close(&t);
}

/* The tile of conv2d's cache_write after a reorder: order 2 is
 *   reorder O f.0 rc.0 ry.0 rx.0 b y.0 x.0 f.1 y.1 x.1 rc.1 ry.1 rx.1 y.2 x.2 f.2
 *   cache_write O x.1
 * so the tile is y.2 x.2 f.2 = 2 x 3 x 4 and rc.1 ry.1 rx.1 = 2 x 1 x 3
 * reduce into it. */
TEST(test_conv2d_cache_tile)
{
	task t;
	int valid;
	float v[L * E];
	if (task_open(&t, "conv2d:c=4,h=6,w=6,k=8,pad=1")) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(extract(&t, "tile_f=2x1x4;tile_y=3x1x2;tile_x=1x2x3;tile_rc=2x2;tile_ry=3x1;"
	                         "tile_rx=1x3;order=2;vec=f;unroll=0;unroll_explicit=1;pack_I=1;"
	                         "pack_W=1", v, &valid), TK_OK);
	CHECK_EQ_INT(valid, 1);
	int cw = -1;
	for (int i = 0; i < L; i++)
		if (v[i * E + 6] == 1)
			cw = i;
	CHECK_EQ_INT(cw, 11);
	if (cw >= 0) {
		CHECK_NEAR(v[cw * E + 21], lg(24), 1e-5);
		CHECK_NEAR(v[cw * E + 22], lg(6), 1e-5);
		CHECK_NEAR(v[cw * E + 23], 6, 0);
	}
	task_close(&t);
}

/* The tokens of conv2d's fused outer loop read like dense's: its innermost
 * part is x.0, the last spatial axis's outer part; the whole batch axis b
 * (extent 1, no tile knob) is the first of the 4 loops fused. */
TEST(test_conv2d_tokens)
{
	task t;
	int valid;
	float v[L * E];
	sc_sched s;
	sp_config c;
	if (task_open(&t, "conv2d:c=4,h=6,w=6,k=8,pad=1")) {
		CHECK(0);
		return;
	}
	sp_naive(t.sp, &c);
	CHECK_EQ_INT(sc_from_config(t.sp, &c, &s), TK_OK);
	CHECK_EQ_INT(feat_extract(FEAT_TLP, t.sp, &c, v, &valid), TK_OK);
	CHECK_EQ_INT(valid, 1);
	int par = -1, nsplit = 0;
	for (int i = 0; i < s.nprim; i++) {
		if (s.prim[i].kind == SC_PARALLEL)
			par = i;
		if (s.prim[i].kind == SC_SPLIT) {
			/* splits of f y x (spatial: axes 3 2 1) and rc ry rx (3 2 1) */
			const float *o = v + i * E;
			CHECK_NEAR(o[11], 3 - (nsplit % 3), 0);
			CHECK_NEAR(o[13], nsplit >= 3, 0);
			nsplit++;
		}
	}
	CHECK_EQ_INT(nsplit, 6);
	CHECK(par >= 0);
	if (par >= 0) {
		const float *o = v + par * E;
		CHECK_NEAR(o[11], 1, 0);  /* x */
		CHECK_NEAR(o[12], 1, 0);  /* outer part */
		CHECK_NEAR(o[13], 0, 0);
		/* naive splits are E x 1 x 1: the outer parts are whole, b * f.0 *
		 * y.0 * x.0 = 1 * 8 * 6 * 6 iterations */
		CHECK_NEAR(o[14], lg(8 * 6 * 6), 1e-5);
		CHECK_NEAR(o[15], 4, 0);
	}
	task_close(&t);
}

/* Winograd: the fixed schedules of the transform stages come first, off the
 * main stage, with the stage's offset from it. */
TEST(test_winograd_stages)
{
	task t;
	tk_rng r;
	float v[L * E];
	sc_sched s;
	sp_config c;
	int valid;
	if (task_open(&t, "conv2d_winograd:c=4,h=6,w=6,k=4")) {
		CHECK(0);
		return;
	}
	tk_rng_seed(&r, 5, 1);
	sp_sample(t.sp, &r, &c);
	CHECK_EQ_INT(sc_from_config(t.sp, &c, &s), TK_OK);
	CHECK_EQ_INT(feat_extract(FEAT_TLP, t.sp, &c, v, &valid), TK_OK);
	CHECK_EQ_INT(valid, 1);
	CHECK_EQ_INT(seq_length(v), s.nprim);
	int off = 0;
	for (int i = 0; i < s.nprim; i++) {
		int main = s.prim[i].stage == t.sp->main_stage;
		CHECK_NEAR(v[i * E + 9], main, 0);
		CHECK_NEAR(v[i * E + 10], s.prim[i].stage - t.sp->main_stage, 0);
		off += !main;
	}
	CHECK_EQ_INT(off, 8); /* parallel and cache_write or vectorize, 4 stages */
	task_close(&t);
}

/* feature.h's contract over random configurations of every operator, among
 * them the longest sequences the templates make. Returns the longest. */
static int check_contract(const char *key, int nconfig)
{
	task t;
	tk_rng r;
	float v[L * E], w[L * E];
	int longest = 0;
	if (task_open(&t, key)) {
		CHECK(0);
		return 0;
	}
	tk_rng_seed(&r, 21, 4);
	for (int k = 0; k < nconfig; k++) {
		sp_config c;
		sc_sched s;
		int valid;
		sp_sample(t.sp, &r, &c);
		CHECK_EQ_INT(sc_from_config(t.sp, &c, &s), TK_OK);
		CHECK(s.nprim <= L); /* no template is cropped */
		if (s.nprim > longest)
			longest = s.nprim;
		CHECK_EQ_INT(feat_extract(FEAT_TLP, t.sp, &c, v, &valid), TK_OK);
		CHECK_EQ_INT(valid, 1);
		CHECK_EQ_INT(seq_length(v), s.nprim);
		for (int i = 0; i < s.nprim && i < L; i++) {
			int hot = 0;
			for (int j = 0; j < SC_NKIND; j++)
				hot += v[i * E + j] == 1 ? 1 : v[i * E + j] == 0 ? 0 : 100;
			CHECK_EQ_INT(hot, 1);
			CHECK_NEAR(v[i * E + s.prim[i].kind], 1, 0);
			for (int j = 0; j < E; j++)
				CHECK(isfinite(v[i * E + j]) && fabs(v[i * E + j]) < 40); /* O(1)..O(lg size) */
		}
		for (int i = s.nprim * E; i < L * E; i++)
			if (v[i] != 0) {
				CHECK_NEAR(v[i], 0, 0);
				break;
			}
		/* deterministic, and no state carried from one call to the next */
		sp_config other;
		sp_sample(t.sp, &r, &other);
		CHECK_EQ_INT(feat_extract(FEAT_TLP, t.sp, &other, w, NULL), TK_OK);
		CHECK_EQ_INT(feat_extract(FEAT_TLP, t.sp, &c, w, NULL), TK_OK);
		CHECK_EQ_INT(memcmp(v, w, sizeof v), 0);
	}
	task_close(&t);
	return longest;
}

TEST(test_every_op_contract)
{
	static const char *tasks[] = {
		"batch_matmul:b=2,m=5,n=7,k=3", "conv1d:n=2,c=3,w=13,k=2,stride=2,pad=1",
		"conv1d_transpose:c=2,w=7,k=3,stride=2", "conv2d_transpose:n=2,c=2,h=5,w=3,k=3,stride=2",
		"depthwise_conv2d:n=2,c=3,h=7,w=5,pad=1", "dense_relu:m=5,n=3,k=7", "dense:m=1,n=64,k=9",
		"conv2d:n=2,c=3,h=9,w=9,k=4,stride=2", "conv2d:c=64,h=56,w=56,k=64,pad=1",
		"depthwise_conv2d_nchwc:n=2,c=6,h=7,w=5,cb=3,pad=1",
		"conv2d_winograd:c=8,h=14,w=14,k=8,m=4", "layout_transform:n=2,c=32,h=5,w=7,ob=16",
		"layout_transform:c=6,h=5,w=4,ib=3,ob=1",
	};
	for (int i = 0; i < ArraySize(tasks); i++)
		check_contract(tasks[i], 40);
	/* the longest sequences: 9-axis blocked conv2d with a batch (24), and
	 * Winograd with a batch (8 + 24), which is what sets L */
	CHECK_EQ_INT(check_contract("conv2d_nchwc:n=2,c=8,h=6,w=5,k=6,cb=2,kb=3,pad=1", 200), 24);
	CHECK_EQ_INT(check_contract("conv2d_winograd:n=2,c=16,h=14,w=14,k=16", 200), L);
}

/* tlp never lowers: a configuration lowering refuses (an accumulator tile
 * over its limit) has a sequence and features; one whose sequence names
 * something impossible (here a split factor of 0 planted in the space's
 * candidates: sc_from_config itself fails only past SC_MAXPRIM primitives,
 * which no operator comes near) gets zeros and valid = 0. */
TEST(test_invalid)
{
	task t;
	sp_config c;
	float v[L * E];
	int valid;
	if (task_open(&t, "dense:m=1024,n=1024,k=1")) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(extract(&t, "tile_i=1x1x1024;tile_j=1x1x1024;order=0;vec=j;unroll=0;"
	                         "unroll_explicit=0;pack_A=0;pack_B=0", v, &valid), TK_OK);
	CHECK_EQ_INT(valid, 1);
	CHECK(seq_length(v) > 0);

	sp_naive(t.sp, &c);
	int k = sp_knob_find(t.sp, "tile_i");
	CHECK(k >= 0);
	if (k >= 0) {
		sp_knob *kn = &t.sp->knob[k];
		kn->cand[c.v[k] * kn->nlevel + 1] = 0;
		for (int i = 0; i < L * E; i++)
			v[i] = 3.0f;
		CHECK_EQ_INT(feat_extract(FEAT_TLP, t.sp, &c, v, &valid), TK_OK);
		CHECK_EQ_INT(valid, 0);
		int nonzero = 0;
		for (int i = 0; i < L * E; i++)
			nonzero += v[i] != 0;
		CHECK_EQ_INT(nonzero, 0);
		CHECK_EQ_INT(feat_extract(FEAT_TLP, t.sp, &c, v, NULL), TK_OK); /* valid may be NULL */
	}
	task_close(&t);
}

TEST(test_imported)
{
	static const char *const names[] = { "block" };
	static const char *const v0[] = { "16", "32" };
	static const char *const *const vals[] = { v0 };
	static const int nval[] = { 2 };
	sp_space *sp;
	sp_config c;
	float v[L * E];
	int n = -1, valid = 1;
	CHECK_EQ_INT(sp_space_custom(1, names, nval, vals, &sp), TK_OK);
	if (!sp)
		return;
	CHECK_EQ_INT(feat_length(FEAT_TLP, sp, &n), TK_EUNSUPP);
	CHECK(strstr(tk_errmsg(), "tlp features need a template task") != NULL);
	CHECK_EQ_INT(sp_parse(sp, "block=32", &c), TK_OK);
	CHECK_EQ_INT(feat_extract(FEAT_TLP, sp, &c, v, &valid), TK_EUNSUPP);
	CHECK_EQ_INT(valid, 0);
	sp_space_free(sp);
}

UNIT_MAIN(test_kind, test_dense_rows, test_conv2d_tokens, test_conv2d_cache_tile,
          test_winograd_stages, test_every_op_contract, test_invalid, test_imported)
