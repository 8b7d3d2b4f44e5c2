/* Unit tests for lib/task: task parsing, canonical keys, errors, reference. */
#include <stdlib.h>

#include "task/ref.h"
#include "task/te.h"
#include "unit.h"

TEST(test_parse_dense)
{
	te_prog *p;
	CHECK_EQ_INT(te_task_parse("dense:n=32,m=16,k=8", &p), TK_OK);
	if (!p)
		return;
	CHECK_EQ_STR(p->key, "dense:k=8,m=16,n=32");
	CHECK_EQ_INT(p->ninput, 2);
	CHECK_EQ_INT(p->nstage, 1);
	CHECK_NEAR(p->flops, 2.0 * 16 * 32 * 8, 0);
	CHECK_EQ_INT(p->tensor[p->output].size, 16 * 32);
	te_prog_free(p);
}

TEST(test_parse_defaults)
{
	te_prog *p;
	CHECK_EQ_INT(te_task_parse("conv2d:c=3,h=8,w=9,k=4", &p), TK_OK);
	if (!p)
		return;
	CHECK_EQ_STR(p->key, "conv2d:c=3,h=8,k=4,n=1,pad=0,r=3,s=3,stride=1,w=9");
	const te_tensor *o = &p->tensor[p->output];
	CHECK_EQ_INT(o->ndim, 4);
	CHECK_EQ_INT(o->shape[2], 6);
	CHECK_EQ_INT(o->shape[3], 7);
	te_prog_free(p);
	CHECK_EQ_INT(te_task_parse("conv2d:c=3,h=9,w=9,k=4,stride=2,pad=1", &p), TK_OK);
	if (p) {
		CHECK_EQ_INT(p->tensor[p->output].shape[2], 5);
		te_prog_free(p);
	}
}

TEST(test_parse_errors)
{
	static const char *bad[] = {
		"", "nosuchop:m=1", "dense", "dense:m=1,n=2", "dense:m=1,n=2,k=3,q=4",
		"dense:m=1,n=2,k=x", "dense:m=1,n=2,k=0", "dense:m=1,m=2,n=2,k=3",
		"dense:m=1,n=2,k=3,", "dense:m=1, n=2,k=3", "conv2d:c=3,h=2,w=2,k=4",
		"conv2d_winograd:c=1,h=4,w=4,k=1,m=3", "dense:m=-1,n=2,k=3", "dense:m=1,n=2,k",
		"conv2d:c=1,h=4,w=4,k=1,pad=-1", "conv2d_nchwc:c=6,h=4,w=4,k=4,cb=4,kb=2",
		"depthwise_conv2d_nchwc:c=6,h=4,w=4", "conv2d_nchwc:c=4,h=4,w=4,k=4,cb=4,kb=3",
	};
	for (int i = 0; i < ArraySize(bad); i++) {
		te_prog *p = (te_prog *)1;
		int rc = te_task_parse(bad[i], &p);
		if (rc != TK_EINVAL)
			fprintf(stderr, "accepted bad task '%s'\n", bad[i]);
		CHECK_EQ_INT(rc, TK_EINVAL);
		CHECK(p == NULL);
		CHECK(tk_errmsg()[0] != 0);
	}
}

TEST(test_every_op_parses)
{
	static const char *tasks[] = {
		"batch_matmul:b=2,m=3,n=4,k=5", "conv1d:c=2,w=7,k=3", "conv1d_transpose:c=2,w=5,k=3,stride=2,pad=1",
		"conv2d:c=2,h=5,w=6,k=3,pad=1", "conv2d_transpose:c=2,h=3,w=4,k=3,stride=2",
		"conv2d_winograd:c=2,h=5,w=6,k=3", "conv2d_winograd:c=2,h=6,w=6,k=3,m=4",
		"dense:m=3,n=4,k=5", "dense_relu:m=3,n=4,k=5", "depthwise_conv2d:c=3,h=5,w=5,pad=1",
		"conv2d_nchwc:c=4,h=5,w=5,k=6,cb=2,kb=3", "depthwise_conv2d_nchwc:c=4,h=5,w=5,cb=2",
		"layout_transform:c=4,h=3,w=2,ib=1,ob=4",
	};
	CHECK_EQ_INT(ArraySize(tasks), te_nops + 1);
	for (int i = 0; i < ArraySize(tasks); i++) {
		te_prog *p = NULL;
		int rc = te_task_parse(tasks[i], &p);
		if (rc)
			fprintf(stderr, "%s: %s\n", tasks[i], tk_errmsg());
		CHECK_EQ_INT(rc, TK_OK);
		te_prog_free(p);
	}
}

/* Run the reference of task with seed 7; returns malloc'd output. */
static double *reference(const char *task, te_prog **pp, float ***inp)
{
	te_prog *p;
	if (te_task_parse(task, &p))
		return NULL;
	float **in = calloc((size_t)p->ninput, sizeof *in);
	for (int i = 0; i < p->ninput; i++)
		in[i] = malloc((size_t)p->tensor[p->input[i]].size * sizeof(float));
	ref_random_inputs(p, 7, in);
	int64_t n = p->tensor[p->output].size;
	double *out = malloc((size_t)n * sizeof *out), *abs_ = malloc((size_t)n * sizeof *abs_);
	CHECK_EQ_INT(ref_compute(p, (const float *const *)in, out, abs_), TK_OK);
	for (int64_t i = 0; i < n; i++)
		CHECK(abs_[i] >= fabs(out[i]) - 1e-12);
	free(abs_);
	*pp = p;
	*inp = in;
	return out;
}

static void free_inputs(te_prog *p, float **in)
{
	for (int i = 0; i < p->ninput; i++)
		free(in[i]);
	free(in);
	te_prog_free(p);
}

TEST(test_ref_dense_by_hand)
{
	te_prog *p;
	float **in;
	double *out = reference("dense:m=3,n=4,k=5", &p, &in);
	if (!out)
		return;
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++) {
			double s = 0;
			for (int k = 0; k < 5; k++)
				s += (double)in[0][i * 5 + k] * in[1][k * 4 + j];
			CHECK_NEAR(out[i * 4 + j], s, 1e-12);
		}
	free(out);
	free_inputs(p, in);
}

TEST(test_ref_conv_padding_by_hand)
{
	te_prog *p;
	float **in;
	double *out = reference("conv2d:c=2,h=5,w=4,k=3,stride=2,pad=1", &p, &in);
	if (!out)
		return;
	int oh = 3, ow = 2;
	for (int f = 0; f < 3; f++)
		for (int y = 0; y < oh; y++)
			for (int x = 0; x < ow; x++) {
				double s = 0;
				for (int c = 0; c < 2; c++)
					for (int ry = 0; ry < 3; ry++)
						for (int rx = 0; rx < 3; rx++) {
							int iy = y * 2 + ry - 1, ix = x * 2 + rx - 1;
							if (iy < 0 || iy >= 5 || ix < 0 || ix >= 4)
								continue;
							s += (double)in[0][(c * 5 + iy) * 4 + ix] *
							     in[1][((f * 2 + c) * 3 + ry) * 3 + rx];
						}
				CHECK_NEAR(out[(f * oh + y) * ow + x], s, 1e-12);
			}
	free(out);
	free_inputs(p, in);
}

/* Wider than a block of the interpreter's spatial points (64), with
 * padding at both ends of a row: the same to the bit as summing each
 * output's terms in order, a padded term adding 0 * w as it always did. */
TEST(test_ref_blocks_to_the_bit)
{
	te_prog *p;
	float **in;
	double *out = reference("conv2d:c=2,h=3,w=131,k=2,stride=1,pad=1", &p, &in);
	if (!out)
		return;
	int h = 3, w = 131;
	for (int f = 0; f < 2; f++)
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++) {
				double s = 0;
				for (int c = 0; c < 2; c++)
					for (int ry = 0; ry < 3; ry++)
						for (int rx = 0; rx < 3; rx++) {
							int iy = y + ry - 1, ix = x + rx - 1;
							int inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
							double v = inside ? in[0][(c * h + iy) * w + ix] : 0;
							s += v * in[1][((f * 2 + c) * 3 + ry) * 3 + rx];
						}
				CHECK(out[(f * h + y) * w + x] == s);
			}
	free(out);
	free_inputs(p, in);
	out = reference("dense:m=2,n=150,k=9", &p, &in);
	if (!out)
		return;
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 150; j++) {
			double s = 0;
			for (int k = 0; k < 9; k++)
				s += (double)in[0][i * 9 + k] * in[1][k * 150 + j];
			CHECK(out[i * 150 + j] == s);
		}
	free(out);
	free_inputs(p, in);
}

TEST(test_ref_transpose_by_scatter)
{
	/* conv2d_transpose computed by scattering each input point */
	te_prog *p;
	float **in;
	double *out = reference("conv2d_transpose:c=2,h=3,w=4,k=3,r=3,s=2,stride=2,pad=1", &p, &in);
	if (!out)
		return;
	int oh = (3 - 1) * 2 - 2 + 3, ow = (4 - 1) * 2 - 2 + 2;
	double *want = calloc((size_t)(3 * oh * ow), sizeof *want);
	for (int c = 0; c < 2; c++)
		for (int iy = 0; iy < 3; iy++)
			for (int ix = 0; ix < 4; ix++)
				for (int f = 0; f < 3; f++)
					for (int ry = 0; ry < 3; ry++)
						for (int rx = 0; rx < 2; rx++) {
							int y = iy * 2 + ry - 1, x = ix * 2 + rx - 1;
							if (y < 0 || y >= oh || x < 0 || x >= ow)
								continue;
							want[(f * oh + y) * ow + x] += (double)in[0][(c * 3 + iy) * 4 + ix] *
							                               in[1][((c * 3 + f) * 3 + ry) * 2 + rx];
						}
	for (int i = 0; i < 3 * oh * ow; i++)
		CHECK_NEAR(out[i], want[i], 1e-12);
	free(want);
	free(out);
	free_inputs(p, in);
}

static void check_winograd(int m, int h, int w, int pad)
{
	char t1[128], t2[128];
	snprintf(t1, sizeof t1, "conv2d_winograd:c=3,h=%d,w=%d,k=2,pad=%d,m=%d", h, w, pad, m);
	snprintf(t2, sizeof t2, "conv2d:c=3,h=%d,w=%d,k=2,pad=%d", h, w, pad);
	te_prog *p1, *p2;
	float **in1, **in2;
	double *o1 = reference(t1, &p1, &in1), *o2 = reference(t2, &p2, &in2);
	CHECK(o1 && o2);
	if (!o1 || !o2) {
		if (o1)
			free_inputs(p1, in1);
		if (o2)
			free_inputs(p2, in2);
		free(o1);
		free(o2);
		return;
	}
	CHECK_EQ_INT(p1->tensor[p1->output].size, p2->tensor[p2->output].size);
	CHECK_NEAR(p1->flops, p2->flops, 0);
	for (int64_t i = 0; i < p2->tensor[p2->output].size; i++)
		CHECK_NEAR(o1[i], o2[i], 1e-5);
	free(o1);
	free(o2);
	free_inputs(p1, in1);
	free_inputs(p2, in2);
}

TEST(test_ref_winograd_equals_direct)
{
	check_winograd(2, 6, 7, 1);
	check_winograd(4, 9, 5, 1);
	check_winograd(2, 5, 5, 3);
	check_winograd(4, 7, 10, 2);
	/* winograd's input transform reads a padded tile: pad 0 is refused */
	te_prog *p;
	CHECK_EQ_INT(te_task_parse("conv2d_winograd:c=3,h=5,w=5,k=2,pad=0,m=2", &p), TK_EINVAL);
	/* an unsupported tile is refused before its constants are allocated
	 * (make fuzz found m = 499999994 asking for 6 GB) */
	CHECK_EQ_INT(te_task_parse("conv2d_winograd:c=1,h=3,w=1,k=2,m=499999994", &p), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "m must be 2 or 4") != NULL);
}

TEST(test_divides_message)
{
	te_prog *p;
	CHECK_EQ_INT(te_task_parse("conv2d_nchwc:c=6,h=4,w=4,k=4,cb=4,kb=2", &p), TK_EINVAL);
	CHECK_EQ_STR(tk_errmsg(), "conv2d_nchwc: cb=4 must divide c=6");
}

/* The blocked operators compute the plain ones on blocked data: inputs of
 * the plain task reordered into the blocked layouts give the plain output,
 * reordered. x[n][c][p] (p over hw) is y[n][c/b][p][c%b] blocked. */
static int64_t blk(int64_t n, int64_t c, int64_t p, int64_t C, int64_t hw, int64_t b)
{
	return ((n * (C / b) + c / b) * hw + p) * b + c % b;
}

static void check_blocked(const char *plain, const char *blocked, int depthwise)
{
	te_prog *p, *q;
	float **in;
	double *want = reference(plain, &p, &in);
	if (!want)
		return;
	CHECK_EQ_INT(te_task_parse(blocked, &q), TK_OK);
	if (!q)
		return;
	const te_tensor *I = &p->tensor[p->input[0]], *W = &p->tensor[p->input[1]];
	const te_tensor *O = &p->tensor[p->output];
	int64_t C = I->shape[1], K = O->shape[1], hw = I->shape[2] * I->shape[3];
	int64_t ohw = O->shape[2] * O->shape[3], rs = W->shape[2] * W->shape[3];
	int64_t cb = q->tensor[q->input[0]].shape[4], kb = q->tensor[q->output].shape[4];
	CHECK_NEAR(p->flops, q->flops, 0);
	CHECK_EQ_INT(q->tensor[q->output].size, O->size);
	float *bi[2] = { malloc((size_t)I->size * sizeof(float)),
	                 malloc((size_t)W->size * sizeof(float)) };
	for (int64_t n = 0; n < I->shape[0]; n++)
		for (int64_t c = 0; c < C; c++)
			for (int64_t i = 0; i < hw; i++)
				bi[0][blk(n, c, i, C, hw, cb)] = in[0][(n * C + c) * hw + i];
	for (int64_t k = 0; k < K; k++)
		for (int64_t c = 0; c < (depthwise ? 1 : C); c++)
			for (int64_t i = 0; i < rs; i++) /* W[k/kb][c/cb][rs][cb][kb], W[c/cb][rs][cb] */
				bi[1][depthwise ? blk(0, k, i, K, rs, cb)
				                : blk(k / kb, c, i, C, rs, cb) * kb + k % kb] =
					in[1][(k * (depthwise ? 1 : C) + c) * rs + i];
	double *got = malloc((size_t)O->size * sizeof *got), *abs_ = malloc((size_t)O->size * sizeof *abs_);
	CHECK_EQ_INT(ref_compute(q, (const float *const *)bi, got, abs_), TK_OK);
	for (int64_t n = 0; n < O->shape[0]; n++)
		for (int64_t k = 0; k < K; k++)
			for (int64_t i = 0; i < ohw; i++)
				CHECK_NEAR(got[blk(n, k, i, K, ohw, kb)], want[(n * K + k) * ohw + i], 1e-12);
	free(got);
	free(abs_);
	free(bi[0]);
	free(bi[1]);
	free(want);
	te_prog_free(q);
	free_inputs(p, in);
}

TEST(test_ref_blocked_equals_plain)
{
	check_blocked("conv2d:n=2,c=6,h=7,w=5,k=4,r=3,s=2,stride=2,pad=1",
	              "conv2d_nchwc:n=2,c=6,h=7,w=5,k=4,r=3,s=2,stride=2,pad=1,cb=3,kb=2", 0);
	check_blocked("conv2d:c=4,h=5,w=5,k=6,r=1,s=1",
	              "conv2d_nchwc:c=4,h=5,w=5,k=6,r=1,s=1,cb=4,kb=6", 0);
	check_blocked("depthwise_conv2d:n=2,c=6,h=6,w=7,stride=2,pad=1",
	              "depthwise_conv2d_nchwc:n=2,c=6,h=6,w=7,stride=2,pad=1,cb=3", 1);
	/* the optional parameters real layers need: per-axis stride and
	 * dilation, per-side pads */
	check_blocked("conv2d:c=4,h=9,w=8,k=6,r=3,s=2,stride=2,stride_w=1,dilation=2,dilation_w=3,"
	              "pad=1,pad_l=2,pad_b=0,pad_r=1",
	              "conv2d_nchwc:c=4,h=9,w=8,k=6,r=3,s=2,stride=2,stride_w=1,dilation=2,"
	              "dilation_w=3,pad=1,pad_l=2,pad_b=0,pad_r=1,cb=2,kb=3", 0);
	check_blocked("depthwise_conv2d:c=6,h=8,w=9,r=3,s=3,stride=1,stride_w=2,dilation=2,"
	              "pad=2,pad_l=0,pad_b=1,pad_r=2",
	              "depthwise_conv2d_nchwc:c=6,h=8,w=9,r=3,s=3,stride=1,stride_w=2,dilation=2,"
	              "pad=2,pad_l=0,pad_b=1,pad_r=2,cb=3", 1);
}

/* layout_transform moves every element from block ib to block ob and
 * computes nothing: no FLOPs; a block of 1 leaves vectorising free. */
TEST(test_layout_transform)
{
	static const int64_t ab[][2] = { { 1, 3 }, { 2, 3 }, { 6, 1 }, { 3, 3 } };
	for (int t = 0; t < ArraySize(ab); t++) {
		char task[80];
		int64_t ib = ab[t][0], ob = ab[t][1], N = 2, C = 6, hw = 3 * 5;
		snprintf(task, sizeof task, "layout_transform:n=2,c=6,h=3,w=5,ib=%lld,ob=%lld",
		         (long long)ib, (long long)ob);
		te_prog *p;
		float **in;
		double *got = reference(task, &p, &in);
		if (!got)
			continue;
		CHECK_NEAR(p->flops, 0, 0);
		CHECK_EQ_INT(p->stage[p->nstage - 1].vector, ob > 1 ? 4 : -1);
		for (int64_t n = 0; n < N; n++)
			for (int64_t c = 0; c < C; c++)
				for (int64_t i = 0; i < hw; i++)
					CHECK_NEAR(got[blk(n, c, i, C, hw, ob)],
					           in[0][blk(n, c, i, C, hw, ib)], 0);
		free(got);
		free_inputs(p, in);
	}
	te_prog *p;
	CHECK_EQ_INT(te_task_parse("layout_transform:c=6,h=2,w=2,ob=4", &p), TK_EINVAL);
	CHECK_EQ_STR(tk_errmsg(), "layout_transform: ob=4 must divide c=6");
}

TEST(test_optional_params_key)
{
	/* optional parameters at their default are left out of the key; given
	 * explicitly at the default, the task is the same task */
	static const char *const same[][2] = {
		{ "conv2d:c=8,h=9,w=9,k=4,pad=1,groups=1,dilation=1,stride_w=1,pad_l=1,pad_b=1,pad_r=1",
		  "conv2d:c=8,h=9,k=4,n=1,pad=1,r=3,s=3,stride=1,w=9" },
		{ "conv2d:c=8,h=9,w=9,k=4,groups=4,dilation=2,pad=2",
		  "conv2d:c=8,dilation=2,groups=4,h=9,k=4,n=1,pad=2,r=3,s=3,stride=1,w=9" },
		/* pad_r follows pad_l, dilation_w follows dilation, stride_w stride */
		{ "conv2d:c=8,h=17,w=17,k=8,r=1,s=7,pad_l=3,pad_r=3",
		  "conv2d:c=8,h=17,k=8,n=1,pad=0,pad_l=3,r=1,s=7,stride=1,w=17" },
		{ "conv2d:c=8,h=9,w=9,k=4,dilation=2,dilation_w=2,stride=2,stride_w=2",
		  "conv2d:c=8,dilation=2,h=9,k=4,n=1,pad=0,r=3,s=3,stride=2,w=9" },
		{ "conv2d_transpose:c=4,h=5,w=5,k=4,stride=2,out_pad=1,out_pad_w=1",
		  "conv2d_transpose:c=4,h=5,k=4,n=1,out_pad=1,pad=0,r=3,s=3,stride=2,w=5" },
		{ "depthwise_conv2d:c=8,h=9,w=9,pad=1,pad_b=0",
		  "depthwise_conv2d:c=8,h=9,n=1,pad=1,pad_b=0,r=3,s=3,stride=1,w=9" },
		{ "conv1d:c=4,w=9,k=4,pad=1,pad_r=1,groups=2",
		  "conv1d:c=4,groups=2,k=4,n=1,pad=1,r=3,stride=1,w=9" },
	};
	for (int i = 0; i < (int)ArraySize(same); i++) {
		te_prog *p;
		CHECK_EQ_INT(te_task_parse(same[i][0], &p), TK_OK);
		if (!p)
			continue;
		CHECK_EQ_STR(p->key, same[i][1]);
		te_prog *q;
		CHECK_EQ_INT(te_task_parse(p->key, &q), TK_OK);
		if (q)
			CHECK_EQ_STR(q->key, p->key);
		te_prog_free(q);
		te_prog_free(p);
	}
	static const char *const bad[][2] = {
		{ "conv2d:c=8,h=9,w=9,k=4,groups=3", "groups=3 must divide c=8" },
		{ "conv2d:c=8,h=9,w=9,k=6,groups=4", "groups=4 must divide k=6" },
		{ "conv2d:c=8,h=9,w=9,k=4,dilation=0", "'dilation' must be >= 1" },
		{ "conv2d:c=8,h=9,w=9,k=4,pad_l=-1", "'pad_l' must be >= 0" },
		{ "conv2d:c=8,h=9,w=9,k=4,stride_w=0", "'stride_w' must be >= 1" },
		{ "conv2d:c=8,h=5,w=5,k=4,dilation=3", "shapes too small" },
		{ "depthwise_conv2d:c=8,h=9,w=9,groups=8", "unknown parameter 'groups'" },
	};
	for (int i = 0; i < (int)ArraySize(bad); i++) {
		te_prog *p;
		CHECK_EQ_INT(te_task_parse(bad[i][0], &p), TK_EINVAL);
		if (!strstr(tk_errmsg(), bad[i][1]))
			fprintf(stderr, "  %s: %s\n", bad[i][0], tk_errmsg());
		CHECK(strstr(tk_errmsg(), bad[i][1]) != NULL);
	}
}

TEST(test_optional_params_keep_programs)
{
	/* a task without the optional parameters instantiates the program it did
	 * before they existed: no x*1 for a dilation, no group arithmetic */
	static const char *const want[][2] = {
		{ "conv2d:c=3,h=9,w=9,k=4,stride=2,pad=1",
		  "O[b:1, f:4, y:5, x:5] += I[b, rc, y*2 + ry - 1, x*2 + rx - 1]"
		  " * W[f, rc, ry, rx] over rc:3 ry:3 rx:3" },
		{ "depthwise_conv2d:c=8,h=9,w=9,pad=1",
		  "O[b:1, f:8, y:9, x:9] += I[b, f, y*1 + ry - 1, x*1 + rx - 1]"
		  " * W[f, 0, ry, rx] over ry:3 rx:3" },
		{ "conv2d_transpose:c=2,h=3,w=4,k=3,stride=2,pad=1",
		  "O[b:1, f:3, y:5, x:7] += I[b, rc, ediv(y + 1 - ry, 2), ediv(x + 1 - rx, 2)]"
		  " * W[rc, f, ry, rx] over rc:2 ry:3 rx:3" },
		{ "conv1d:c=4,w=9,k=2",
		  "O[b:1, f:2, x:7] += I[b, rc, x*1 + rx - 0] * W[f, rc, rx] over rc:4 rx:3" },
		{ "conv2d:c=8,h=9,w=9,k=4,groups=2,dilation=2,pad=2",
		  "O[b:1, f:4, y:9, x:9] += I[b, f/2*4 + rc, y*1 + ry*2 - 2, x*1 + rx*2 - 2]"
		  " * W[f, rc, ry, rx] over rc:4 ry:3 rx:3" },
	};
	for (int i = 0; i < (int)ArraySize(want); i++) {
		te_prog *p;
		CHECK_EQ_INT(te_task_parse(want[i][0], &p), TK_OK);
		if (!p)
			continue;
		tk_sb sb;
		tk_sb_init(&sb);
		te_stage_print(&sb, p, &p->stage[0]);
		CHECK_EQ_STR(sb.s, want[i][1]);
		tk_sb_free(&sb);
		te_prog_free(p);
	}
}

static int64_t pval(const te_prog *p, const char *name)
{
	for (int i = 0; i < p->nparam; i++)
		if (!strcmp(p->param[i].name, name))
			return p->param[i].val;
	return -1;
}

/* The general 2-d convolution written out: groups, per-axis stride and
 * dilation, per-side padding, the reference against it. */
TEST(test_ref_general_conv_by_hand)
{
	static const char *const tasks[] = {
		"conv2d:c=6,h=9,w=8,k=4,r=3,s=2,stride=2,stride_w=1,dilation_w=2,pad=0,pad_l=2,"
		"pad_b=1,pad_r=1,groups=2",
		"conv2d:c=4,h=7,w=7,k=8,dilation=2,pad=2,groups=4",
		"depthwise_conv2d:c=3,h=8,w=6,r=5,s=3,pad=1,pad_b=3,pad_l=0,dilation=2,stride_w=2",
	};
	for (int t = 0; t < (int)ArraySize(tasks); t++) {
		te_prog *p;
		float **in;
		double *out = reference(tasks[t], &p, &in);
		if (!out)
			continue;
		int dw = !strncmp(tasks[t], "depthwise", 9);
		const te_tensor *I = &p->tensor[p->input[0]], *W = &p->tensor[p->input[1]];
		const te_tensor *O = &p->tensor[p->output];
		int64_t c = I->shape[1], h = I->shape[2], w = I->shape[3], k = O->shape[1];
		int64_t oh = O->shape[2], ow = O->shape[3], r = W->shape[2], s = W->shape[3];
		int64_t cg = dw ? 1 : W->shape[1], groups = dw ? c : c / cg, kg = k / groups;
		int64_t sh = pval(p, "stride"), sw = pval(p, "stride_w"), dh = pval(p, "dilation");
		int64_t dwl = pval(p, "dilation_w"), pt = pval(p, "pad"), pl = pval(p, "pad_l");
		int64_t pb = pval(p, "pad_b"), pr = pval(p, "pad_r");
		CHECK_EQ_INT(oh, (h + pt + pb - dh * (r - 1) - 1) / sh + 1);
		CHECK_EQ_INT(ow, (w + pl + pr - dwl * (s - 1) - 1) / sw + 1);
		for (int64_t f = 0; f < k; f++)
			for (int64_t y = 0; y < oh; y++)
				for (int64_t x = 0; x < ow; x++) {
					double sum = 0;
					for (int64_t rc = 0; rc < cg; rc++)
						for (int64_t ry = 0; ry < r; ry++)
							for (int64_t rx = 0; rx < s; rx++) {
								int64_t ch = f / kg * cg + rc;
								int64_t iy = y * sh + ry * dh - pt, ix = x * sw + rx * dwl - pl;
								if (iy < 0 || iy >= h || ix < 0 || ix >= w)
									continue;
								sum += (double)in[0][(ch * h + iy) * w + ix] *
								       in[1][((f * cg + rc) * r + ry) * s + rx];
							}
					CHECK_NEAR(out[(f * oh + y) * ow + x], sum, 1e-12);
				}
		free(out);
		free_inputs(p, in);
	}
}

TEST(test_ref_grouped_transpose_by_scatter)
{
	/* ONNX ConvTranspose: W[c, k/groups, r, s], output padding, dilation */
	te_prog *p;
	float **in;
	double *out = reference("conv2d_transpose:c=4,h=3,w=4,k=6,r=3,s=2,stride=2,stride_w=3,pad=1,"
	                        "pad_l=0,pad_r=1,dilation=2,out_pad=1,groups=2", &p, &in);
	if (!out)
		return;
	int C = 4, H = 3, Wd = 4, K = 6, R = 3, S = 2, G = 2, cg = C / G, kg = K / G;
	/* dilation_w follows dilation, out_pad_w follows out_pad */
	int oh = (H - 1) * 2 - 1 - 1 + 2 * (R - 1) + 1 + 1, ow = (Wd - 1) * 3 - 0 - 1 + 2 * (S - 1) + 1 + 1;
	CHECK_EQ_INT(p->tensor[p->output].shape[2], oh);
	CHECK_EQ_INT(p->tensor[p->output].shape[3], ow);
	double *want = calloc((size_t)(K * oh * ow), sizeof *want);
	for (int c = 0; c < C; c++)
		for (int iy = 0; iy < H; iy++)
			for (int ix = 0; ix < Wd; ix++)
				for (int fk = 0; fk < kg; fk++)
					for (int ry = 0; ry < R; ry++)
						for (int rx = 0; rx < S; rx++) {
							int f = c / cg * kg + fk;
							int y = iy * 2 + ry * 2 - 1, x = ix * 3 + rx * 2 - 0;
							if (y < 0 || y >= oh || x < 0 || x >= ow)
								continue;
							want[(f * oh + y) * ow + x] += (double)in[0][(c * H + iy) * Wd + ix] *
							                               in[1][((c * kg + fk) * R + ry) * S + rx];
						}
	for (int i = 0; i < K * oh * ow; i++)
		CHECK_NEAR(out[i], want[i], 1e-12);
	free(want);
	free(out);
	free_inputs(p, in);
}

UNIT_MAIN(test_parse_dense, test_parse_defaults, test_parse_errors, test_every_op_parses,
          test_ref_dense_by_hand, test_ref_conv_padding_by_hand, test_ref_blocks_to_the_bit,
          test_ref_transpose_by_scatter,
          test_ref_winograd_equals_direct, test_divides_message, test_ref_blocked_equals_plain, test_layout_transform,
          test_optional_params_key, test_optional_params_keep_programs,
          test_ref_general_conv_by_hand, test_ref_grouped_transpose_by_scatter)
