/*
 * Unit tests for the ONNX reader (lib/import/onnx): the task strings of
 * convolutions, --input parsing, and ONNX's own node tests from Debian's
 * libonnx-testdata: for Conv, ConvTranspose, Gemm and MatMul the task's
 * output shape is that of the test's output_0.pb, and tunekit's reference
 * on the test's inputs (the weights are graph inputs there) matches
 * output_0.pb. Node tests of features tunekit cannot express are listed
 * as refusals. Shape inference alone against every node test the reader
 * follows. Without the package the node tests are skipped, saying so.
 * The blocked layout's variant of models of data/models: its convolutions
 * those of the hand-written data/networks/NAME-nchwc.tsv, and its reorders.
 *
 * Shape key: M N K of a matrix product (A[M,K] * B[K,N]).
 */
#include "unit.h"

#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>

#include "import/onnx.h"
#include "task/network.h"
#include "task/ref.h"
#include "task/te.h"
#include "util/util.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

/* ---- the task strings ------------------------------------------------ */

/* cv with a stride, dilation or groups of 0 meaning 1 (the default). */
static void conv_case(const onnx_conv *cv0, const char *want)
{
	char buf[400];
	te_prog *p;
	onnx_conv cv = *cv0;
	for (int i = 0; i < 2; i++) {
		cv.stride[i] += !cv.stride[i];
		cv.dilation[i] += !cv.dilation[i];
	}
	cv.groups += !cv.groups;
	CHECK_EQ_INT(onnx_conv_task(&cv, buf, sizeof buf), TK_OK);
	CHECK_EQ_STR(buf, want);
	/* the string is te's canonical key */
	int rc = te_task_parse(buf, &p);
	CHECK_EQ_INT(rc, TK_OK);
	if (!rc) {
		CHECK_EQ_STR(p->key, want);
		te_prog_free(p);
	}
}

#define CONV2(...) (&(onnx_conv){ .nsp = 2, .n = 1, __VA_ARGS__ })
#define CONV1(...) (&(onnx_conv){ .nsp = 1, .n = 1, __VA_ARGS__ })

TEST(conv_task_strings)
{
	conv_case(CONV2(.c = 64, .k = 64, .in = { 56, 56 }, .kernel = { 3, 3 },
	                .pad_begin = { 1, 1 }, .pad_end = { 1, 1 }),
	          "conv2d:c=64,h=56,k=64,n=1,pad=1,r=3,s=3,stride=1,w=56");
	conv_case(CONV2(.c = 3, .k = 64, .in = { 224, 224 }, .kernel = { 7, 7 },
	                .stride = { 2, 2 }, .pad_begin = { 3, 3 }, .pad_end = { 3, 3 }),
	          "conv2d:c=3,h=224,k=64,n=1,pad=3,r=7,s=7,stride=2,w=224");
	/* depthwise: groups == c == k */
	conv_case(CONV2(.c = 32, .k = 32, .groups = 32, .in = { 112, 112 }, .kernel = { 3, 3 },
	                .pad_begin = { 1, 1 }, .pad_end = { 1, 1 }),
	          "depthwise_conv2d:c=32,h=112,n=1,pad=1,r=3,s=3,stride=1,w=112");
	/* group == C_in == C_out taken literally, as data/models' reference does */
	conv_case(CONV2(.c = 1, .k = 1, .in = { 5, 5 }, .kernel = { 3, 3 }),
	          "depthwise_conv2d:c=1,h=5,n=1,pad=0,r=3,s=3,stride=1,w=5");
	/* the examples of the task syntax */
	conv_case(CONV2(.c = 64, .k = 64, .groups = 32, .in = { 56, 56 }, .kernel = { 3, 3 },
	                .pad_begin = { 1, 1 }, .pad_end = { 1, 1 }),
	          "conv2d:c=64,groups=32,h=56,k=64,n=1,pad=1,r=3,s=3,stride=1,w=56");
	conv_case(CONV2(.c = 192, .k = 192, .in = { 17, 17 }, .kernel = { 1, 7 },
	                .pad_begin = { 0, 3 }, .pad_end = { 0, 3 }),
	          "conv2d:c=192,h=17,k=192,n=1,pad=0,pad_l=3,r=1,s=7,stride=1,w=17");
	/* 7x1: pad (top) 3, left 0: pad_l and pad_r are 0, pad_b the default */
	conv_case(CONV2(.c = 192, .k = 192, .in = { 17, 17 }, .kernel = { 7, 1 },
	                .pad_begin = { 3, 0 }, .pad_end = { 3, 0 }),
	          "conv2d:c=192,h=17,k=192,n=1,pad=3,pad_l=0,r=7,s=1,stride=1,w=17");
	/* every parameter away from its default */
	conv_case(CONV2(.c = 8, .k = 4, .groups = 2, .in = { 20, 30 }, .kernel = { 3, 5 },
	                .stride = { 2, 3 }, .dilation = { 2, 1 }, .pad_begin = { 1, 2 },
	                .pad_end = { 0, 4 }),
	          "conv2d:c=8,dilation=2,dilation_w=1,groups=2,h=20,k=4,n=1,pad=1,pad_b=0,pad_l=2,"
	          "pad_r=4,r=3,s=5,stride=2,stride_w=3,w=30");
	/* a depthwise multiplier of 2 is a grouped conv2d */
	conv_case(CONV2(.c = 16, .k = 32, .groups = 16, .in = { 8, 8 }, .kernel = { 3, 3 }),
	          "conv2d:c=16,groups=16,h=8,k=32,n=1,pad=0,r=3,s=3,stride=1,w=8");
	conv_case(CONV2(.transpose = 1, .c = 1, .k = 2, .in = { 3, 3 }, .kernel = { 3, 3 },
	                .stride = { 3, 2 }, .out_pad = { 1, 1 }),
	          "conv2d_transpose:c=1,h=3,k=2,n=1,out_pad=1,pad=0,r=3,s=3,stride=3,stride_w=2,w=3");
	conv_case(CONV2(.transpose = 1, .c = 1, .k = 2, .in = { 3, 3 }, .kernel = { 3, 3 },
	                .out_pad = { 0, 1 }),
	          "conv2d_transpose:c=1,h=3,k=2,n=1,out_pad_w=1,pad=0,r=3,s=3,stride=1,w=3");
	conv_case(CONV2(.transpose = 1, .c = 1, .k = 2, .in = { 3, 3 }, .kernel = { 3, 3 }),
	          "conv2d_transpose:c=1,h=3,k=2,n=1,pad=0,r=3,s=3,stride=1,w=3");
	conv_case(CONV1(.c = 4, .k = 8, .in = { 0, 100 }, .kernel = { 0, 5 }, .stride = { 1, 2 },
	                .pad_begin = { 0, 2 }, .pad_end = { 0, 2 }),
	          "conv1d:c=4,k=8,n=1,pad=2,r=5,stride=2,w=100");
	conv_case(CONV1(.c = 4, .k = 4, .groups = 4, .in = { 0, 100 }, .kernel = { 0, 3 },
	                .dilation = { 1, 2 }, .pad_begin = { 0, 2 }, .pad_end = { 0, 0 }),
	          "conv1d:c=4,dilation=2,groups=4,k=4,n=1,pad=2,pad_r=0,r=3,stride=1,w=100");
	conv_case(CONV1(.transpose = 1, .c = 1, .k = 2, .in = { 0, 3 }, .kernel = { 0, 3 }),
	          "conv1d_transpose:c=1,k=2,n=1,pad=0,r=3,stride=1,w=3");
	conv_case(CONV1(.transpose = 1, .c = 1, .k = 2, .in = { 0, 3 }, .kernel = { 0, 3 },
	                .stride = { 1, 2 }, .out_pad = { 0, 1 }),
	          "conv1d_transpose:c=1,k=2,n=1,out_pad=1,pad=0,r=3,stride=2,w=3");
	char small[8];
	CHECK_EQ_INT(onnx_conv_task(CONV2(.c = 1, .k = 1, .in = { 1, 1 }, .kernel = { 1, 1 },
	                                  .groups = 1, .stride = { 1, 1 }, .dilation = { 1, 1 }),
	                            small, sizeof small), TK_EINVAL);
	CHECK_EQ_INT(onnx_conv_task(&(onnx_conv){ .nsp = 3 }, small, sizeof small), TK_EINVAL);
}

TEST(input_parse)
{
	onnx_input in;
	CHECK_EQ_INT(onnx_input_parse("input=1x3x224x224", &in), TK_OK);
	CHECK_EQ_STR(in.name, "input");
	CHECK_EQ_INT(in.ndim, 4);
	CHECK_EQ_INT(in.dim[3], 224);
	CHECK_EQ_INT(onnx_input_parse("a=b=7", &in), TK_OK);
	CHECK_EQ_STR(in.name, "a=b");
	CHECK_EQ_INT(in.ndim, 1);
	CHECK_EQ_INT(onnx_input_parse("x", &in), TK_EINVAL);
	CHECK_EQ_INT(onnx_input_parse("=1x2", &in), TK_EINVAL);
	CHECK_EQ_INT(onnx_input_parse("x=", &in), TK_EINVAL);
	CHECK_EQ_INT(onnx_input_parse("x=1x", &in), TK_EINVAL);
	CHECK_EQ_INT(onnx_input_parse("x=0x2", &in), TK_EINVAL);
	CHECK_EQ_INT(onnx_input_parse("x=-1", &in), TK_EINVAL);
	CHECK_EQ_INT(onnx_input_parse("x=1x2x3x4x5x6x7x8x9", &in), TK_EINVAL);
	CHECK_EQ_INT(onnx_input_parse("x=99999999999999", &in), TK_EINVAL);
}

/* ---- a TensorProto file (input_N.pb, output_0.pb) -------------------- */

typedef struct tensor {
	int ndim;
	int64_t dim[8];
	int64_t n;
	float *v;
} tensor;

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;
	for (int s = 0; s < 64 && *p < end; s += 7) {
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

/* A float or double tensor from path (as floats): dims, and raw_data,
 * float_data or double_data (any type when !want_values: dims only). 0 on
 * success. */
static int tensor_read(const char *path, tensor *t, int want_values)
{
	FILE *f = fopen(path, "rb");
	static uint8_t buf[1 << 20];
	size_t n;
	memset(t, 0, sizeof *t);
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	const uint8_t *p = buf, *end = buf + n, *raw = NULL, *fd = NULL;
	size_t rawlen = 0, fdlen = 0;
	int dtype = 0;
	while (p < end) {
		uint64_t tag, v, len = 0;
		if (varint(&p, end, &tag))
			return -1;
		int field = (int)(tag >> 3), wt = (int)(tag & 7);
		if (wt == 0) {
			if (varint(&p, end, &v))
				return -1;
			if (field == 1 && t->ndim < 8)
				t->dim[t->ndim++] = (int64_t)v;
			if (field == 2)
				dtype = (int)v;
		} else if (wt == 2) {
			if (varint(&p, end, &len) || len > (uint64_t)(end - p))
				return -1;
			if (field == 1) { /* packed dims */
				const uint8_t *q = p;
				while (q < p + len && t->ndim < 8 && !varint(&q, p + len, &v))
					t->dim[t->ndim++] = (int64_t)v;
			}
			if (field == 9) { raw = p; rawlen = len; }
			if (field == 4 || field == 10) { fd = p; fdlen = len; }
			p += len;
		} else if (wt == 5)
			p += 4;
		else if (wt == 1)
			p += 8;
		else
			return -1;
	}
	t->n = 1;
	for (int i = 0; i < t->ndim; i++)
		t->n *= t->dim[i];
	if (!want_values)
		return dtype ? 0 : -1;
	if (dtype != 1 && dtype != 11)
		return -1;
	/* little-endian float32 or float64, as on this machine */
	size_t es = dtype == 1 ? 4 : 8;
	const uint8_t *src = raw ? raw : fd;
	size_t srclen = raw ? rawlen : fdlen;
	if (!src || srclen != (size_t)t->n * es)
		return -1;
	t->v = malloc(sizeof *t->v * (size_t)(t->n ? t->n : 1));
	for (int64_t i = 0; i < t->n; i++) {
		if (es == 4)
			memcpy(&t->v[i], src + 4 * i, 4);
		else {
			double d;
			memcpy(&d, src + 8 * i, 8);
			t->v[i] = (float)d;
		}
	}
	return 0;
}

static int tensor_load(const char *path, tensor *t)
{
	return tensor_read(path, t, 1);
}

/* ---- ONNX's node tests --------------------------------------------- */

enum { ACCEPT, REFUSE };

static const struct node_test {
	const char *name;
	int expect;
	int trans_a, trans_b;    /* Gemm */
	double alpha, beta;      /* Gemm: 0 for the defaults 1 and 1 */
} node_tests[] = {
	{ "test_basic_conv_with_padding", ACCEPT, 0, 0, 0, 0 },
	{ "test_basic_conv_without_padding", ACCEPT, 0, 0, 0, 0 },
	{ "test_conv_with_autopad_same", ACCEPT, 0, 0, 0, 0 },
	{ "test_conv_with_strides_and_asymmetric_padding", ACCEPT, 0, 0, 0, 0 },
	{ "test_conv_with_strides_no_padding", ACCEPT, 0, 0, 0, 0 },
	{ "test_conv_with_strides_padding", ACCEPT, 0, 0, 0, 0 },
	{ "test_convtranspose", ACCEPT, 0, 0, 0, 0 },
	{ "test_convtranspose_1d", ACCEPT, 0, 0, 0, 0 },
	{ "test_convtranspose_autopad_same", ACCEPT, 0, 0, 0, 0 },
	{ "test_convtranspose_dilations", ACCEPT, 0, 0, 0, 0 },
	{ "test_convtranspose_kernel_shape", ACCEPT, 0, 0, 0, 0 },
	{ "test_convtranspose_output_shape", ACCEPT, 0, 0, 0, 0 },
	{ "test_convtranspose_pad", ACCEPT, 0, 0, 0, 0 },
	{ "test_convtranspose_pads", ACCEPT, 0, 0, 0, 0 },
	{ "test_convtranspose_with_kernel", ACCEPT, 0, 0, 0, 0 },
	{ "test_gemm_all_attributes", ACCEPT, 1, 1, 0.25, 0.35 },
	{ "test_gemm_alpha", ACCEPT, 0, 0, 0.5, 0 },
	{ "test_gemm_beta", ACCEPT, 0, 0, 0, 0.5 },
	{ "test_gemm_default_matrix_bias", ACCEPT, 0, 0, 0, 0 },
	{ "test_gemm_default_no_bias", ACCEPT, 0, 0, 0, 0 },
	{ "test_gemm_default_scalar_bias", ACCEPT, 0, 0, 0, 0 },
	{ "test_gemm_default_single_elem_vector_bias", ACCEPT, 0, 0, 0, 0 },
	{ "test_gemm_default_vector_bias", ACCEPT, 0, 0, 0, 0 },
	{ "test_gemm_default_zero_bias", ACCEPT, 0, 0, 0, 0 },
	{ "test_gemm_transposeA", ACCEPT, 1, 0, 0, 0 },
	{ "test_gemm_transposeB", ACCEPT, 0, 1, 0, 0 },
	{ "test_matmul_2d", ACCEPT, 0, 0, 0, 0 },
	{ "test_matmul_3d", ACCEPT, 0, 0, 0, 0 },
	{ "test_matmul_4d", ACCEPT, 0, 0, 0, 0 },
	{ "test_einsum_batch_matmul", ACCEPT, 0, 0, 0, 0 },
	{ "test_einsum_inner_prod", ACCEPT, 0, 0, 0, 0 },
	/* tunekit has no 3-d convolution, no integer operators */
	{ "test_convtranspose_3d", REFUSE, 0, 0, 0, 0 },
	{ "test_basic_convinteger", REFUSE, 0, 0, 0, 0 },
	{ "test_convinteger_with_padding", REFUSE, 0, 0, 0, 0 },
	{ "test_convinteger_without_padding", REFUSE, 0, 0, 0, 0 },
	{ "test_matmulinteger", REFUSE, 0, 0, 0, 0 },
};

static float *transposed(const tensor *t)
{
	float *v = malloc(sizeof *v * (size_t)t->n);
	for (int64_t i = 0; i < t->dim[0]; i++)
		for (int64_t j = 0; j < t->dim[1]; j++)
			v[j * t->dim[0] + i] = t->v[i * t->dim[1] + j];
	return v;
}

/* Node test nt read in layout (ONNX_LAYOUT_*): its one task's output
 * shape, and the reference on the test's inputs against output_0.pb. */
static void node_test(const struct node_test *nt, int layout)
{
	char path[512], *tsv = NULL;
	tk_network *net = NULL;
	te_prog *p = NULL;
	tensor in[3], out;
	int nin = 0;
	snprintf(path, sizeof path, "%s/%s/model.onnx", NODE_DIR, nt->name);
	int rc = onnx_import_layout(path, NULL, 0, layout, &tsv);
	if (nt->expect == REFUSE) {
		if (rc != TK_EINVAL)
			fprintf(stderr, "%s: expected a refusal, got %d\n", nt->name, rc);
		CHECK_EQ_INT(rc, TK_EINVAL);
		/* the message names the node's operator */
		CHECK(strstr(tk_errmsg(), "(Conv") || strstr(tk_errmsg(), "(MatMul"));
		free(tsv);
		return;
	}
	if (rc) {
		fprintf(stderr, "%s: %s\n", nt->name, tk_errmsg());
		CHECK_EQ_INT(rc, TK_OK);
		return;
	}
	CHECK_EQ_INT(net_parse(path, nt->name, tsv, &net), TK_OK);
	free(tsv);
	if (!net)
		return;
	CHECK_EQ_INT(net->n, 1);
	CHECK_EQ_INT(te_task_parse(net->task[0].task, &p), TK_OK);
	snprintf(path, sizeof path, "%s/%s/test_data_set_0/output_0.pb", NODE_DIR, nt->name);
	CHECK_EQ_INT(tensor_load(path, &out), 0);
	for (nin = 0; nin < 3; nin++) {
		snprintf(path, sizeof path, "%s/%s/test_data_set_0/input_%d.pb", NODE_DIR, nt->name, nin);
		struct stat st;
		if (stat(path, &st))
			break;
		CHECK_EQ_INT(tensor_load(path, &in[nin]), 0);
	}
	if (!p || !out.v) {
		net_free(net);
		te_prog_free(p);
		return;
	}
	/* the output shape: te's output tensor against output_0.pb (a batched
	 * product's batch dimensions flatten into b) */
	const te_tensor *to = &p->tensor[p->output];
	CHECK_EQ_INT(to->size, out.n);
	int tnd = to->ndim - (layout == ONNX_LAYOUT_BLOCKED); /* less the block of 1 */
	int nd = tnd < out.ndim ? tnd : out.ndim;
	for (int i = 1; i <= nd; i++)
		if (to->shape[tnd - i] != out.dim[out.ndim - i]) {
			fprintf(stderr, "%s: %s: dimension -%d is %lld, output_0.pb's %lld\n", nt->name,
			        p->key, i, (long long)to->shape[tnd - i], (long long)out.dim[out.ndim - i]);
			CHECK(0);
		}
	/* the reference on the test's inputs, laid out as the task wants */
	int isgemm = !strncmp(nt->name, "test_gemm", 9);
	CHECK(nin >= p->ninput);
	if (nin >= p->ninput && to->size == out.n) {
		const float *args[4];
		float *ta = NULL, *tb = NULL;
		for (int i = 0; i < p->ninput; i++) {
			args[i] = in[i].v;
			CHECK_EQ_INT(in[i].n, p->tensor[p->input[i]].size);
		}
		if (isgemm && nt->trans_a)
			args[0] = ta = transposed(&in[0]);
		if (isgemm && nt->trans_b)
			args[1] = tb = transposed(&in[1]);
		double *ref = malloc(sizeof *ref * (size_t)out.n), *abs = malloc(sizeof *abs * (size_t)out.n);
		CHECK_EQ_INT(ref_compute(p, args, ref, abs), TK_OK);
		double rtol = ref_rtol(p);
		int bad = 0;
		for (int64_t e = 0; e < out.n; e++) {
			double want = out.v[e], got = ref[e], tol = rtol * abs[e] + 1e-5;
			if (isgemm) {
				/* alpha * A B + beta * C, C broadcast to [M, N] */
				int64_t m = to->shape[0], n = to->shape[1], i = e / n, j = e % n;
				double alpha = nt->alpha ? nt->alpha : 1, beta = nt->beta ? nt->beta : 1, c = 0;
				if (nin > 2) {
					const tensor *C = &in[2];
					int64_t ci = C->ndim == 2 && C->dim[0] == m ? i : 0;
					int64_t cj = C->ndim >= 1 && C->dim[C->ndim - 1] == n ? j : 0;
					int64_t cn = C->ndim >= 1 ? C->dim[C->ndim - 1] : 1;
					c = C->v[ci * cn + cj];
				}
				got = alpha * got + beta * c;
				tol = alpha * tol + 1e-5 * (1 + fabs(c));
			}
			if (!(fabs(got - want) <= tol) && bad++ < 3)
				fprintf(stderr, "%s: %s: element %lld: reference %.7g, output_0.pb %.7g\n",
				        nt->name, p->key, (long long)e, got, want);
		}
		CHECK_EQ_INT(bad, 0);
		free(ref);
		free(abs);
		free(ta);
		free(tb);
	}
	for (int i = 0; i < nin; i++)
		free(in[i].v);
	free(out.v);
	te_prog_free(p);
	net_free(net);
}

TEST(onnx_node_tests)
{
	struct stat st;
	if (stat(NODE_DIR, &st)) {
		printf("onnx_node_tests: skipped: libonnx-testdata is not installed (%s)\n", NODE_DIR);
		return;
	}
	for (size_t i = 0; i < ArraySize(node_tests); i++)
		node_test(&node_tests[i], ONNX_LAYOUT_NCHW);
	/* their convolutions have one channel: in the blocked layout (a block
	 * of 1, the same memory, no reorder) depthwise_conv2d_nchwc with its
	 * strides and asymmetric pads computes ONNX's output too */
	for (size_t i = 0; i < ArraySize(node_tests); i++)
		if (strstr(node_tests[i].name, "_conv_"))
			node_test(&node_tests[i], ONNX_LAYOUT_BLOCKED);
}

/* Shape inference alone against every node test of the package: where
 * the reader follows a test's graph, each output's shape is that of its
 * output_K.pb. A test it does not follow (an operator it does not know, a
 * shape input that is not constant) is fine; a wrong shape is not. */
TEST(onnx_node_shapes)
{
	DIR *d = opendir(NODE_DIR);
	struct dirent *e;
	int followed = 0, refused = 0, wrong = 0;
	static unsigned char buf[1 << 22];
	if (!d) {
		printf("onnx_node_shapes: skipped: libonnx-testdata is not installed (%s)\n", NODE_DIR);
		return;
	}
	while ((e = readdir(d))) {
		char path[768], *text = NULL;
		if (strncmp(e->d_name, "test_", 5))
			continue;
		snprintf(path, sizeof path, "%s/%s/model.onnx", NODE_DIR, e->d_name);
		FILE *f = fopen(path, "rb");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof buf, f);
		fclose(f);
		if (n == sizeof buf)
			continue;
		int rc = onnx_output_shapes(buf, n, e->d_name, NULL, 0, &text);
		CHECK(rc == TK_OK || rc == TK_EINVAL);
		if (rc) {
			refused++;
			continue;
		}
		followed++;
		int k = 0, bad = 0;
		for (char *line = text, *nl; *line; line = nl + 1, k++) {
			nl = strchr(line, '\n');
			*nl = 0;
			char want[256] = "", *got = strchr(line, '\t') + 1;
			tensor t;
			snprintf(path, sizeof path, "%s/%s/test_data_set_0/output_%d.pb", NODE_DIR, e->d_name, k);
			if (tensor_read(path, &t, 0)) {
				bad = 1;
				fprintf(stderr, "%s: output %d: no tensor in %s\n", e->d_name, k, path);
				break;
			}
			for (int i = 0; i < t.ndim; i++)
				snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", i ? "x" : "",
				         (long long)t.dim[i]);
			if (strcmp(want, got)) {
				bad = 1;
				fprintf(stderr, "%s: output %d: inferred %s, output_%d.pb has %s\n", e->d_name, k,
				        got, k, want);
			}
		}
		wrong += bad;
		free(text);
	}
	closedir(d);
	printf("onnx_node_shapes: %d node tests followed with their output shapes right, %d refused, "
	       "%d wrong\n", followed, refused, wrong);
	CHECK_EQ_INT(wrong, 0);
	CHECK(followed >= 600);
}

/* A model built in memory: protobuf by hand, the smallest Gemm. */
TEST(read_memory)
{
	char *tsv = NULL;
	/* truncations of a node-test model are refused, never crash */
	char path[512];
	snprintf(path, sizeof path, "%s/test_gemm_default_no_bias/model.onnx", NODE_DIR);
	FILE *f = fopen(path, "rb");
	if (!f) {
		printf("read_memory: skipped: libonnx-testdata is not installed\n");
		return;
	}
	static unsigned char buf[65536];
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	CHECK_EQ_INT(onnx_read(buf, n, "gemm", NULL, 0, &tsv), TK_OK);
	CHECK(tsv && strstr(tsv, "\n1\tdense:k=10,m=2,n=3\n"));
	free(tsv);
	for (size_t cut = 0; cut < n; cut++) {
		int rc = onnx_read(buf, cut, "cut", NULL, 0, &tsv);
		CHECK_EQ_INT(rc, TK_EINVAL);
		CHECK(tsv == NULL);
	}
}


/* ---- the blocked layout ------------------------------------------------ */

/* Weight of task in net, 0 if absent. */
static double weight_of(const tk_network *net, const char *task)
{
	for (int i = 0; i < net->n; i++)
		if (!strcmp(net->task[i].task, task))
			return net->task[i].weight;
	return 0;
}

/* The blocked variant of data/models/NAME.onnx: every task but the
 * reorders is the hand-written nchwc network's (when given), and the
 * reorders are exactly reorders[0, nre) (task, weight). */
static void check_blocked(const char *name, const char *nchwc, const char *const *reorders,
                          const double *weights, int nre)
{
	char path[256];
	tk_network *net = NULL, *want = NULL;
	snprintf(path, sizeof path, "data/models/%s.onnx", name);
	int rc = onnx_net_load_layout(path, ONNX_LAYOUT_BLOCKED, &net);
	if (rc)
		fprintf(stderr, "%s: %s\n", path, tk_errmsg());
	CHECK_EQ_INT(rc, TK_OK);
	if (!net)
		return;
	int nlt = 0;
	for (int i = 0; i < net->n; i++)
		nlt += !strncmp(net->task[i].task, "layout_transform:", 17);
	CHECK_EQ_INT(nlt, nre);
	for (int i = 0; i < nre; i++) {
		if (weight_of(net, reorders[i]) != weights[i])
			fprintf(stderr, "%s: %s has weight %g\n", name, reorders[i],
			        weight_of(net, reorders[i]));
		CHECK_NEAR(weight_of(net, reorders[i]), weights[i], 0);
	}
	if (nchwc) {
		CHECK_EQ_INT(net_load(nchwc, &want), TK_OK);
		CHECK_EQ_INT(net->n - nlt, want ? want->n : -1);
		for (int i = 0; want && i < want->n; i++)
			CHECK_NEAR(weight_of(net, want->task[i].task), want->task[i].weight, 0);
		if (want)
			net_free(want);
	}
	net_free(net);
}

TEST(layout_blocked)
{
	/* block(3) is 3 (all channels below 16): NCHW -> NCHW3c at the input;
	 * the global pool leaves 1x1, so the classifier reads it as it is */
	check_blocked("resnet-18", "resnet-18-nchwc",
	              (const char *[]){ "layout_transform:c=3,h=224,ib=1,n=1,ob=3,w=224" },
	              (double[]){ 1 }, 1);
	/* depthwise convolutions; the residual Adds keep the block */
	check_blocked("mobilenet-v2", "mobilenet-v2-nchwc",
	              (const char *[]){ "layout_transform:c=3,h=224,ib=1,n=1,ob=3,w=224" },
	              (double[]){ 1 }, 1);
	/* the transition layers' Pad keeps the block, and so does each dense
	 * block's Concat of whole blocks */
	check_blocked("densenet-121", NULL,
	              (const char *[]){ "layout_transform:c=3,h=224,ib=1,n=1,ob=3,w=224" },
	              (double[]){ 1 }, 1);
	/* Flatten of 256x6x6 needs NCHW back */
	check_blocked("alexnet", NULL,
	              (const char *[]){ "layout_transform:c=3,h=224,ib=1,n=1,ob=3,w=224",
	                                "layout_transform:c=256,h=6,ib=16,n=1,ob=1,w=6" },
	              (double[]){ 1, 1 }, 2);
	/* a built-in network finds its compiled-in graph: the variant of the
	 * file; one without a graph (no convolutions, a TSV) is refused */
	tk_network *net = NULL, *file = NULL;
	CHECK_EQ_INT(onnx_net_load_layout("resnet-18", ONNX_LAYOUT_BLOCKED, &net), TK_OK);
	CHECK_EQ_INT(onnx_net_load_layout("data/models/resnet-18.onnx", ONNX_LAYOUT_BLOCKED, &file),
	             TK_OK);
	CHECK(net && file && net->n == file->n);
	for (int i = 0; net && file && i < net->n && i < file->n; i++)
		CHECK_EQ_STR(net->task[i].task, file->task[i].task);
	if (net)
		net_free(net);
	if (file)
		net_free(file);
	net = NULL;
	CHECK_EQ_INT(onnx_net_load_layout("bert-tiny", ONNX_LAYOUT_BLOCKED, &net), TK_EINVAL);
	CHECK(net == NULL);
	CHECK(strstr(tk_errmsg(), "a layout needs the graph") != NULL);
	CHECK_EQ_INT(onnx_net_load_layout("data/networks/resnet-18-nchwc.tsv", ONNX_LAYOUT_BLOCKED,
	                                  &net), TK_EINVAL);
}

/* --layout auto tunes the union of the variants: each task once, at its
 * larger weight, in the order met. */
TEST(layout_union)
{
	tk_network *a = NULL, *b = NULL, *u = NULL;
	CHECK_EQ_INT(net_parse("a", "a", "weight\ttask\n2\tdense:m=1,n=2,k=3\n1\tdense:m=4,n=4,k=4\n",
	                       &a), TK_OK);
	CHECK_EQ_INT(net_parse("b", "b", "weight\ttask\n1\tdense:m=1,n=2,k=3\n3\tdense:m=4,n=4,k=4\n"
	                       "1\tlayout_transform:c=16,h=2,w=2\n", &b), TK_OK);
	if (!a || !b)
		return;
	const tk_network *v[] = { a, b };
	CHECK_EQ_INT(net_union(v, 2, &u), TK_OK);
	CHECK(u && u->n == 3);
	if (u && u->n == 3) {
		CHECK_EQ_STR(u->name, "a");
		CHECK_EQ_STR(u->task[0].task, "dense:k=3,m=1,n=2");
		CHECK_NEAR(u->task[0].weight, 2, 0);
		CHECK_NEAR(u->task[1].weight, 3, 0);
		CHECK_EQ_STR(u->task[2].task, "layout_transform:c=16,h=2,ib=1,n=1,ob=16,w=2");
		CHECK_NEAR(u->task[2].weight, 1, 0);
	}
	net_free(u);
	net_free(a);
	net_free(b);
}

UNIT_MAIN(conv_task_strings, input_parse, onnx_node_tests, onnx_node_shapes, read_memory,
          layout_blocked, layout_union)
