/*
 * Unit tests for the graph feature kind (lib/features/graph.c): the exact
 * nodes, features and edges of a hand-checked GEMM nest in the
 * super-graph; the same loop context as itervar; Winograd's reads in the
 * data and weight slots; the contract over random configurations of every
 * operator (root, a for and an iterval node per loop in the slots of its
 * axis and level, 3L - 1 edges among present nodes, placeholders zero);
 * zeros for a configuration that cannot be lowered; and spaces whose graph
 * is larger than the super-graph refused with a message.
 */
#include "unit.h"
#include "feat_task.h"

#include "features/feature.h"

#define N FEAT_GRAPH_N
#define F FEAT_GRAPH_F
#define EMAX FEAT_GRAPH_EMAX
#define J FEAT_GRAPH_LOOPS

static const float *node(const float *v, int i)
{
	return v + i * F;
}

/* Edges of v as pairs (src, dst) into e[EMAX][2]; returns their number
 * (pairs with src == dst are unused). */
static int edges(const float *v, int e[EMAX][2])
{
	int n = 0;
	for (int k = 0; k < EMAX; k++) {
		float s = v[N * F + 2 * k], d = v[N * F + 2 * k + 1];
		if (s == d)
			continue;
		e[n][0] = (int)s;
		e[n][1] = (int)d;
		n++;
	}
	return n;
}

static int has_edge(int e[EMAX][2], int n, int s, int d)
{
	for (int k = 0; k < n; k++)
		if (e[k][0] == s && e[k][1] == d)
			return 1;
	return 0;
}

TEST(test_kind)
{
	CHECK_EQ_INT(FEAT_NKIND, 6);
	CHECK_EQ_STR(feat_kind_name(FEAT_GRAPH), "graph");
	CHECK_EQ_INT(feat_kind_parse("graph"), FEAT_GRAPH);
	CHECK_EQ_INT(feat_version(FEAT_GRAPH), 1);
	CHECK_EQ_INT(feat_seq_width(FEAT_GRAPH), 0);
	CHECK_EQ_INT(N, 67);
	CHECK_EQ_INT(FEAT_GRAPH_LEN, 67 * 30 + 2 * 100);
	CHECK(feat_graph_template() == feat_graph_template());
	CHECK(feat_graph_template() != 0);
}

/*
 * dense:m=4,n=8,k=2 with the configuration below (as in features.c):
 *
 *   loop  IR name   extent  annotation  super-graph slot (dense: i->ow, j->k, r->c)
 *   0     i_0_j_0   1       parallel    32 (fused)   for node 33, iterval 66
 *   1     i_1       4                   10 (ow.1)    11, 44
 *   2     j_1       2                    4 (k.1)      5, 38
 *   3     r_0       1                   24 (c.0)     25, 58
 *   4     r_1       2                   25 (c.1)     26, 59
 *   5     i_2       1       unroll      11 (ow.2)    12, 45
 *   6     j_2       4       vectorize    5 (k.2)      6, 39
 *
 * Reads: A (data) [4, 2], B_p0_1 (weight, packed) [2, 2, 4]; written C_acc[4].
 */
static const char *const hand_cfg =
	"tile_i=1x4x1;tile_j=1x2x4;tile_r=1x2;order=0;vec=j;unroll=0;unroll_explicit=0;"
	"pack_A=0;pack_B=1";

TEST(test_dense_layout)
{
	task t;
	sp_config c;
	int n, valid;
	float *v = malloc(sizeof *v * (FEAT_GRAPH_LEN + 1));
	if (!v || task_open(&t, "dense:m=4,n=8,k=2")) {
		CHECK(0);
		free(v);
		return;
	}
	CHECK_EQ_INT(feat_length(FEAT_GRAPH, t.sp, &n), TK_OK);
	CHECK_EQ_INT(n, FEAT_GRAPH_LEN);
	CHECK_EQ_INT(sp_parse(t.sp, hand_cfg, &c), TK_OK);
	for (int i = 0; i <= n; i++)
		v[i] = -7.0f;
	CHECK_EQ_INT(feat_extract(FEAT_GRAPH, t.sp, &c, v, &valid), TK_OK);
	CHECK_EQ_INT(valid, 1);
	CHECK_NEAR(v[n], -7.0, 0); /* nothing written past the end */
	static const int slot[7] = { 32, 10, 4, 24, 25, 11, 5 };
	static const double ext[7] = { 1, 4, 2, 1, 2, 1, 4 };
	static const int ann[7] = { 1, 0, 0, 0, 0, 3, 2 };
	static const int parts[7] = { 2, 1, 1, 1, 1, 1, 1 };
	static const int red[7] = { 0, 0, 0, 1, 1, 0, 0 };
	int present[N] = { 0 };
	present[0] = 1;
	CHECK_NEAR(node(v, 0)[0], 1, 0);
	double top = 1;
	for (int l = 0; l < 7; l++) {
		const float *fo = node(v, 1 + slot[l]), *iv = node(v, 1 + J + slot[l]);
		double bot = 1;
		for (int m = l; m < 7; m++)
			bot *= ext[m];
		top *= ext[l];
		present[1 + slot[l]] = present[1 + J + slot[l]] = 1;
		/* the for node: its flag only */
		CHECK_NEAR(fo[1], 1, 0);
		for (int f = 0; f < F; f++)
			if (f != 1)
				CHECK_NEAR(fo[f], 0, 0);
		CHECK_NEAR(iv[0], 0, 0);
		CHECK_NEAR(iv[1], 0, 0);
		CHECK_NEAR(iv[2], 1, 0);
		CHECK_NEAR(iv[3], lg(ext[l]), 1e-6);
		CHECK_NEAR(iv[4], l + 1, 0);
		CHECK_NEAR(iv[5], lg(top), 1e-6);
		CHECK_NEAR(iv[6], lg(bot), 1e-6);
		for (int a = 0; a < 4; a++)
			CHECK_NEAR(iv[7 + a], a == ann[l], 0);
		CHECK_NEAR(iv[11], lg(bot / ext[l]), 1e-6); /* one add and one mul per statement */
		CHECK_NEAR(iv[12], lg(bot / ext[l]), 1e-6);
		for (int f = 22; f < 28; f++)
			CHECK_NEAR(iv[f], 0, 0); /* no transform reads */
		CHECK_NEAR(iv[28], parts[l], 0);
		CHECK_NEAR(iv[29], red[l], 0);
	}
	/* buffers: written C_acc[j_2]; data A[i_1, r_1] of [4, 2]; weight
	 * B_p0_1[j_1, r_1, j_2] of [2, 2, 4] */
	const float *i1 = node(v, 1 + J + 10), *j1 = node(v, 1 + J + 4), *j2 = node(v, 1 + J + 5);
	const float *r1 = node(v, 1 + J + 25);
	CHECK_NEAR(j2[13], lg(1), 1e-6);  /* C_acc stride in j_2 */
	CHECK_NEAR(i1[13], lg(0), 1e-6);
	CHECK_NEAR(i1[16], lg(2), 1e-6);  /* A stride 2 in i_1 */
	CHECK_NEAR(r1[16], lg(1), 1e-6);  /* ... and 1 in r_1 */
	CHECK_NEAR(i1[17], lg(2), 1e-6);  /* inside i_1 A is touched at r_1's 2 */
	CHECK_NEAR(i1[18], lg(8), 1e-6);  /* and reused over j_1, j_2 */
	CHECK_NEAR(j1[19], lg(8), 1e-6);  /* B_p0_1 stride 8 in j_1 */
	CHECK_NEAR(r1[19], lg(4), 1e-6);
	CHECK_NEAR(j2[19], lg(1), 1e-6);
	CHECK_NEAR(i1[19], lg(0), 1e-6);
	CHECK_NEAR(i1[20], lg(16), 1e-6); /* inside i_1: all of B */
	/* placeholders are zero */
	for (int i = 0; i < N; i++)
		if (!present[i])
			for (int f = 0; f < F; f++)
				CHECK_NEAR(node(v, i)[f], 0, 0);
	/* edges, in order: root -> for, for -> iterval, enclosing for -> for */
	int e[EMAX][2];
	CHECK_EQ_INT(edges(v, e), 3 * 7 - 1);
	CHECK_EQ_INT(e[0][0], 0);
	CHECK_EQ_INT(e[0][1], 33);
	CHECK_EQ_INT(e[1][0], 33);
	CHECK_EQ_INT(e[1][1], 66);
	CHECK_EQ_INT(e[2][0], 0);
	CHECK_EQ_INT(e[2][1], 11);
	CHECK_EQ_INT(e[3][0], 11);
	CHECK_EQ_INT(e[3][1], 44);
	CHECK_EQ_INT(e[4][0], 33);
	CHECK_EQ_INT(e[4][1], 11);
	for (int l = 1; l < 7; l++) {
		CHECK(has_edge(e, 20, 0, 1 + slot[l]));
		CHECK(has_edge(e, 20, 1 + slot[l], 1 + J + slot[l]));
		CHECK(has_edge(e, 20, 1 + slot[l - 1], 1 + slot[l]));
	}
	/* unused pairs are (0, 0) */
	for (int k = 20; k < EMAX; k++) {
		CHECK_NEAR(v[N * F + 2 * k], 0, 0);
		CHECK_NEAR(v[N * F + 2 * k + 1], 0, 0);
	}
	free(v);
	task_close(&t);
}

/* Winograd's main stage depends on the shape: its batched product M
 * (reads U, the transformed weight, then V, the data) for most shapes, a
 * transform (U, V) or the inverse transform (Y: At, M, At) for small ones.
 * Each read goes to its buffer slot; the iterval nodes hold itervar's
 * values of their loop. */
static void check_winograd(const char *key, const char *stage, const int *buf, int nread)
{
	task t;
	tk_rng r;
	int n, valid, nvalid = 0;
	if (task_open(&t, key)) {
		CHECK(0);
		return;
	}
	CHECK_EQ_STR(t.p->tensor[t.p->stage[t.sp->main_stage].out].name, stage);
	CHECK_EQ_INT(t.p->stage[t.sp->main_stage].nread, nread);
	CHECK_EQ_INT(feat_length(FEAT_ITERVAR, t.sp, &n), TK_OK);
	const int P = 10 + 3 * (1 + nread), L = n / P;
	float *g = malloc(sizeof *g * FEAT_GRAPH_LEN), *iv = malloc(sizeof *iv * (size_t)n);
	tk_rng_seed(&r, 7, 1);
	for (int k = 0; g && iv && k < 20; k++) {
		sp_config c;
		sp_sample(t.sp, &r, &c);
		CHECK_EQ_INT(feat_extract(FEAT_GRAPH, t.sp, &c, g, &valid), TK_OK);
		CHECK_EQ_INT(feat_extract(FEAT_ITERVAR, t.sp, &c, iv, NULL), TK_OK);
		if (!valid)
			continue;
		nvalid++;
		int seen = 0, first = 0;
		while (first < L && iv[first * P + 1] == 0)
			first++; /* itervar aligns a shorter nest at the innermost loop */
		for (int i = 1 + J; i < N; i++) {
			const float *x = node(g, i);
			if (x[2] == 0)
				continue;
			seen++;
			int level = (int)x[4];
			const float *o = iv + (first + level - 1) * P;
			CHECK_NEAR(o[1], level, 0);
			for (int f = 0; f < 10; f++)
				CHECK_NEAR(x[3 + f], o[f], 1e-6);
			for (int f = 0; f < 3; f++) {
				CHECK_NEAR(x[13 + f], o[10 + f], 1e-6); /* the written buffer */
				for (int rd = 0; rd < nread; rd++)
					CHECK_NEAR(x[13 + 3 * buf[rd] + f], o[13 + 3 * rd + f], 1e-6);
			}
			if (nread == 2)
				for (int f = 22; f < 28; f++)
					CHECK_NEAR(x[f], 0, 0);
		}
		CHECK_EQ_INT(seen, L - first);
	}
	CHECK(nvalid > 0);
	free(g);
	free(iv);
	task_close(&t);
}

TEST(test_winograd_slots)
{
	/* buffer slots: 1 data, 2 weight, 3 left transform, 4 right */
	static const int m[2] = { 2, 1 }, uw[3] = { 3, 2, 4 }, vy[3] = { 3, 1, 4 };
	check_winograd("conv2d_winograd:c=64,h=56,w=56,k=64", "M", m, 2);
	check_winograd("conv2d_winograd:c=16,h=5,w=5,k=16", "U", uw, 3);
	check_winograd("conv2d_winograd:c=2,h=7,w=5,k=3", "V", vy, 3);
	check_winograd("conv2d_winograd:c=2,h=7,w=7,k=16", "Y", vy, 3);
}

/* The contract over random configurations of every operator. */
TEST(test_every_op_contract)
{
	static const char *tasks[] = {
		"batch_matmul:b=2,m=5,n=7,k=3", "conv1d:c=3,w=13,k=2,stride=2,pad=1",
		"conv1d_transpose:c=2,w=7,k=3,stride=2", "conv2d_transpose:c=2,h=5,w=3,k=3,stride=2,pad=1",
		"depthwise_conv2d:c=3,h=7,w=5,pad=1", "conv2d_winograd:c=2,h=7,w=5,k=3",
		"conv2d_winograd:c=8,h=14,w=14,k=8,m=4", "dense_relu:m=5,n=3,k=7", "dense:m=1,n=64,k=9",
		"conv2d:c=3,h=9,w=9,k=4,stride=2,r=1,s=1", "conv2d:n=2,c=64,h=56,w=56,k=64,pad=1",
		"conv2d_nchwc:c=4,h=6,w=5,k=6,cb=2,kb=3,pad=1",
		"depthwise_conv2d_nchwc:c=6,h=7,w=5,cb=3,pad=1",
		"layout_transform:c=32,h=5,w=7,ib=1,ob=16", "layout_transform:c=6,h=5,w=4,ib=3,ob=1",
	};
	float *v = malloc(sizeof *v * FEAT_GRAPH_LEN), *w = malloc(sizeof *w * FEAT_GRAPH_LEN);
	tk_rng r;
	tk_rng_seed(&r, 13, 2);
	for (int ti = 0; v && w && ti < ArraySize(tasks); ti++) {
		task t;
		int n, nvalid = 0;
		if (task_open(&t, tasks[ti])) {
			CHECK(0);
			continue;
		}
		CHECK_EQ_INT(feat_length(FEAT_GRAPH, t.sp, &n), TK_OK);
		CHECK_EQ_INT(n, FEAT_GRAPH_LEN);
		for (int k = 0; k < 25; k++) {
			sp_config c;
			int valid, e[EMAX][2];
			sp_sample(t.sp, &r, &c);
			CHECK_EQ_INT(feat_extract(FEAT_GRAPH, t.sp, &c, v, &valid), TK_OK);
			if (!valid) {
				for (int i = 0; i < n; i++)
					CHECK_NEAR(v[i], 0, 0);
				continue;
			}
			nvalid++;
			int L = 0, levels = 0, fused = 0;
			for (int j = 0; j < J; j++) {
				const float *fo = node(v, 1 + j), *iv = node(v, 1 + J + j);
				CHECK(fo[1] == iv[2]); /* a for node and its iterval together */
				if (iv[2] == 0) {
					for (int f = 0; f < F; f++)
						CHECK_NEAR(iv[f] + fo[f], 0, 0);
					continue;
				}
				L++;
				levels |= 1 << ((int)iv[4] - 1);
				fused += iv[28] > 1;
				CHECK((iv[28] > 1) == (j == J - 1));
			}
			CHECK(L > 0);
			CHECK_EQ_INT(levels, (1 << L) - 1); /* levels 1..L, each once */
			CHECK(fused <= 1);
			int ne = edges(v, e);
			CHECK_EQ_INT(ne, 3 * L - 1);
			for (int k2 = 0; k2 < ne; k2++) {
				CHECK(e[k2][0] >= 0 && e[k2][0] < N && e[k2][1] >= 0 && e[k2][1] < N);
				CHECK(node(v, e[k2][0])[0] + node(v, e[k2][0])[1] == 1); /* from root or for */
				CHECK(node(v, e[k2][1])[1] + node(v, e[k2][1])[2] == 1); /* to for or iterval */
			}
			/* deterministic */
			CHECK_EQ_INT(feat_extract(FEAT_GRAPH, t.sp, &c, w, NULL), TK_OK);
			CHECK(!memcmp(v, w, sizeof *v * FEAT_GRAPH_LEN));
		}
		CHECK(nvalid > 0);
		task_close(&t);
	}
	free(v);
	free(w);
}

/* A graph larger than the super-graph: an operator without a template in
 * it, an axis without a node; refused by feat_length and feat_extract. */
TEST(test_larger_than_supergraph)
{
	task t;
	sp_config c;
	int n = -1, valid = 1;
	float *v = malloc(sizeof *v * FEAT_GRAPH_LEN);
	if (!v || task_open(&t, "dense:m=4,n=8,k=2")) {
		CHECK(0);
		free(v);
		return;
	}
	sp_naive(t.sp, &c);
	const char *op = t.p->op;
	t.p->op = "conv3d";
	CHECK_EQ_INT(feat_length(FEAT_GRAPH, t.sp, &n), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "conv3d") && strstr(tk_errmsg(), "larger than the super-graph"));
	CHECK_EQ_INT(feat_extract(FEAT_GRAPH, t.sp, &c, v, &valid), TK_EINVAL);
	CHECK_EQ_INT(valid, 0);
	/* the other kinds do not care */
	CHECK_EQ_INT(feat_length(FEAT_ITERVAR, t.sp, &n), TK_OK);
	t.p->op = op;
	const char *ax = t.p->stage[0].axis[1].name;
	t.p->stage[0].axis[1].name = "w";
	CHECK_EQ_INT(feat_length(FEAT_GRAPH, t.sp, &n), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "axis w of dense has no node"));
	t.p->stage[0].axis[1].name = ax;
	CHECK_EQ_INT(feat_length(FEAT_GRAPH, t.sp, &n), TK_OK);
	free(v);
	task_close(&t);
}

UNIT_MAIN(test_kind, test_dense_layout, test_winograd_slots, test_every_op_contract,
          test_larger_than_supergraph)
