/*
 * driver: one workload of `make bench-kernels`. It times a kernel exported
 * by `tunekit export` against the vendor library a user would otherwise
 * call, in one process, on the same inputs: cblas_sgemm for dense
 * (batch_matmul as a loop of sgemm calls, one per matrix) of OpenBLAS, or
 * of BLIS when built with -DBLAS_BLIS (kernels.sh builds it against the
 * faster of the two, and runs it with the OpenBLAS core type that won,
 * see tests/bench/kernels/blas.c and select.awk), oneDNN's
 * convolution for conv2d and depthwise_conv2d (a grouped convolution with one
 * channel per group). oneDNN chooses its own memory formats (format tag
 * `any`); the reorders of the inputs into its layout and of its output back
 * to NCHW are done outside the timed region. For reference a third timing,
 * "lib+reorder", runs oneDNN from NCHW to NCHW: source reorder, convolution,
 * destination reorder, the weights reordered once beforehand as an inference
 * framework would.
 *
 * The blocked-layout operators conv2d_nchwc and depthwise_conv2d_nchwc
 * take and give blocked tensors (NCHW[cb]c in, NCHW[kb]c out, weights
 * pre-blocked). The kernel runs on blocked copies of the same inputs, and
 * its output is unblocked for the check. Beside "tunekit" (blocked in and
 * out, as oneDNN's "lib" runs in its own formats) a fourth timing,
 * "tunekit+reorder", runs from NCHW to NCHW: the source blocked, the kernel,
 * the destination unblocked, the weights blocked once beforehand, the same
 * terms as "lib+reorder".
 *
 * Before timing, the tunekit kernel's output is checked against the
 * library's with tunekit's tolerance doubled (both are float results, each
 * within rtol of the exact one): |tk - lib| <= 2 rtol sum|terms| + 1e-30 with
 * rtol = 16 FLT_EPSILON (1 + sqrt(reduction length)) as in lib/task/ref.c;
 * sum|terms| is the library's result on the absolute values of the inputs.
 *
 * Timing: each side runs in blocks of at least MIN_MS (calls per block
 * calibrated once), each block after one untimed warm-up call; ROUNDS rounds
 * interleave the sides (ABBA for two, all orders for three, each side in each
 * place equally often for four); the median over
 * the rounds of seconds per call is reported. With THREADS > 1 the driver
 * sleeps PAUSE_MS before each block so that the worker threads of the side
 * that ran before (OpenBLAS's spin for about 2^28 cycles, OpenMP's for less)
 * have gone to sleep and do not steal a core. With THREADS = 1 the process
 * is pinned to the last CPU, as tunekit pins its one-thread measurements.
 * One more side, "peak", runs the FMA loop of the FP32 peak (fma.h) on
 * THREADS OpenMP threads in the same rounds, so that a busy machine slows it
 * as it slows the kernels: the ratios to it hold on a machine that other
 * jobs share; its best round is reported, which no kernel can beat.
 * Threads: OpenBLAS by openblas_set_num_threads (BLIS by
 * bli_thread_set_num_threads), oneDNN (built on OpenMP in
 * Debian) by omp_set_num_threads, tunekit's kernel by the num_threads()
 * clause it was generated with for --target cpu:threads=N.
 *
 * Shape key:
 *   dense             C[M,N] = A[M,K] * B[K,N]         (B stored K x N, row-major)
 *   batch_matmul      C[Bt,M,N] = A[Bt,M,K] * B[Bt,K,N]
 *   conv2d            O[n,k,oh,ow] = I[n,c,h,w] * W[k,c,r,s]   (NCHW, KCRS)
 *   depthwise_conv2d  O[n,c,oh,ow] = I[n,c,h,w] * W[c,1,r,s]
 *   conv2d_nchwc      O[n,k/kb,oh,ow,kb] = I[n,c/cb,h,w,cb] * W[k/kb,c/cb,r,s,cb,kb]
 *   depthwise_conv2d_nchwc  O[n,c/cb,oh,ow,cb] = I[n,c/cb,h,w,cb] * W[c/cb,r,s,cb]
 *
 *   usage: driver [-r ROUNDS] [-m MIN_MS] [-p PAUSE_MS] TASK THREADS
 *
 * Built per workload by tests/bench/kernels.sh with -DKERNEL=NAME (the
 * exported kernel's name) and linked with NAME.o compiled by the export's
 * Makefile. Prints lines starting with '#' that describe the run, then a TSV
 * header and one line of results. Exit status: 0 done, 1 the tunekit kernel's
 * output does not match the library's (nothing is timed), 2 bad command line
 * or a library or allocation failure. This is a benchmark program, not
 * library code: a failure prints a message and exits.
 */
#define _GNU_SOURCE
#ifdef BLAS_BLIS
#include <blis.h>
#else
#include <cblas.h>
#endif
#include <float.h>
#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <oneapi/dnnl/dnnl.h>

#include "fma.h"
#include "random.h"

#ifndef KERNEL
#error "build with -DKERNEL=NAME, the name of an exported tunekit kernel"
#endif
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define STR_(a) #a
#define STR(a) STR_(a)
#define TK_FN CAT(tk_, KERNEL)
#define TK_WS CAT(CAT(tk_, KERNEL), _workspace_floats)

/* The exported kernel (see its NAME.h): bufs[0] the output, bufs[1..] the
 * inputs; ws scratch of TK_WS floats. */
void TK_FN(float *const *bufs, float *ws);
extern const unsigned long TK_WS;

#define MAXROUNDS 101
#define MAXSIDES 5
#define PEAK_ITERS (1L << 16) /* steps of the FMA loop per call of the peak side */

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("driver: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

#define DNNL(call)                                                                   \
	do {                                                                         \
		dnnl_status_t st_ = (call);                                          \
		if (st_ != dnnl_success)                                             \
			die("oneDNN: %s failed with status %d", #call, (int)st_);    \
	} while (0)

/* ---- the task ------------------------------------------------------- */

enum { OP_DENSE, OP_BMM, OP_CONV, OP_DWCONV };

typedef struct task {
	int op;
	long b, m, n, k;               /* dense, batch_matmul */
	long bn, c, h, w, kc, r, s;    /* conv: batch, in/out channels, input, kernel */
	long stride, pad, oh, ow;
	long cb, kb;                   /* channel blocks of the _nchwc operators, 0 if plain */
	double flops, red;             /* nominal FLOPs; reduction length */
	long in_n[2], out_n;           /* floats of A/I, B/W, C/O */
} task;

/* Parse "op:key=value,..." with the defaults of lib/task/ops.c. */
static void task_parse(const char *text, task *t)
{
	static const struct { const char *name; int op; } ops[] = {
		{ "dense", OP_DENSE }, { "batch_matmul", OP_BMM },
		{ "conv2d", OP_CONV }, { "depthwise_conv2d", OP_DWCONV },
		{ "conv2d_nchwc", OP_CONV }, { "depthwise_conv2d_nchwc", OP_DWCONV },
	};
	int blocked = 0;
	char buf[512];
	const char *colon = strchr(text, ':');
	size_t nop = colon ? (size_t)(colon - text) : strlen(text);
	memset(t, 0, sizeof *t);
	t->op = -1;
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (strlen(ops[i].name) == nop && !strncmp(text, ops[i].name, nop)) {
			t->op = ops[i].op;
			blocked = strstr(ops[i].name, "_nchwc") != NULL;
		}
	if (t->op < 0)
		die("%s: operator not benchmarked (dense, batch_matmul, conv2d, "
		    "depthwise_conv2d and their _nchwc forms)", text);
	t->bn = 1, t->r = 3, t->s = 3, t->stride = 1;
	if (blocked)
		t->cb = t->kb = 16;
	snprintf(buf, sizeof buf, "%s", colon ? colon + 1 : "");
	for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv;
	     kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '='), *end;
		if (!eq)
			die("%s: '%s' is not key=value", text, kv);
		*eq = 0;
		long v = strtol(eq + 1, &end, 10);
		if (*end || eq[1] == 0 || v < 0)
			die("%s: bad value for %s", text, kv);
		int conv = t->op == OP_CONV || t->op == OP_DWCONV;
		long *p = NULL;
		if (!strcmp(kv, "b") && t->op == OP_BMM) p = &t->b;
		else if (!strcmp(kv, "m") && !conv) p = &t->m;
		else if (!strcmp(kv, "n")) p = conv ? &t->bn : &t->n;
		else if (!strcmp(kv, "k")) p = conv ? &t->kc : &t->k;
		else if (!strcmp(kv, "c") && conv) p = &t->c;
		else if (!strcmp(kv, "h") && conv) p = &t->h;
		else if (!strcmp(kv, "w") && conv) p = &t->w;
		else if (!strcmp(kv, "r") && conv) p = &t->r;
		else if (!strcmp(kv, "s") && conv) p = &t->s;
		else if (!strcmp(kv, "stride") && conv) p = &t->stride;
		else if (!strcmp(kv, "pad") && conv) p = &t->pad;
		else if (!strcmp(kv, "cb") && blocked) p = &t->cb;
		else if (!strcmp(kv, "kb") && blocked && t->op == OP_CONV) p = &t->kb;
		if (!p)
			die("%s: unknown parameter '%s'", text, kv);
		*p = v;
	}
	switch (t->op) {
	case OP_DENSE:
	case OP_BMM:
		if (t->op == OP_DENSE)
			t->b = 1;
		if (t->b < 1 || t->m < 1 || t->n < 1 || t->k < 1)
			die("%s: needs m, n, k (and b) >= 1", text);
		t->in_n[0] = t->b * t->m * t->k;
		t->in_n[1] = t->b * t->k * t->n;
		t->out_n = t->b * t->m * t->n;
		t->red = (double)t->k;
		t->flops = 2.0 * t->b * t->m * t->n * t->k;
		break;
	case OP_CONV:
	case OP_DWCONV:
		if (t->op == OP_DWCONV)
			t->kc = t->c, t->kb = t->cb;
		if (t->bn < 1 || t->c < 1 || t->h < 1 || t->w < 1 || t->kc < 1 || t->r < 1 ||
		    t->s < 1 || t->stride < 1)
			die("%s: needs c, h, w (and k) >= 1", text);
		if (blocked && (t->cb < 1 || t->kb < 1 || t->c % t->cb || t->kc % t->kb))
			die("%s: the channel blocks must divide the channels", text);
		t->oh = (t->h + 2 * t->pad - t->r) / t->stride + 1;
		t->ow = (t->w + 2 * t->pad - t->s) / t->stride + 1;
		if (t->oh < 1 || t->ow < 1)
			die("%s: empty output", text);
		t->in_n[0] = t->bn * t->c * t->h * t->w;
		t->in_n[1] = t->kc * (t->op == OP_DWCONV ? 1 : t->c) * t->r * t->s;
		t->out_n = t->bn * t->kc * t->oh * t->ow;
		t->red = (double)(t->op == OP_DWCONV ? 1 : t->c) * t->r * t->s;
		t->flops = 2.0 * t->out_n * t->red;
		break;
	}
}

/* ---- buffers -------------------------------------------------------- */

static float *floats(long n)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, (size_t)(n ? n : 1) * sizeof(float)))
		die("out of memory (%ld floats)", n);
	return p;
}


/* Between NCHW x[n][c][hw] and blocked y[n][c/b][hw][b], either way; hw is
 * the product of the spatial sizes. Parallel over n * c/b (OpenMP). */
static void reblock(float *dst, const float *src, long n, long c, long hw, long b,
                    int to_blocked)
{
	long nc = n * (c / b);
	/* b x 16 tiles, so that both the strided and the contiguous side stay
	 * within a few cache lines */
#pragma omp parallel for
	for (long q = 0; q < nc; q++) {
		long i = q / (c / b), co = q % (c / b);
		for (long p0 = 0; p0 < hw; p0 += 16) {
			long p1 = p0 + 16 < hw ? p0 + 16 : hw;
			for (long ci = 0; ci < b; ci++) {
				const long x = (i * c + co * b + ci) * hw, y = q * hw * b + ci;
				if (to_blocked)
					for (long p = p0; p < p1; p++)
						dst[y + p * b] = src[x + p];
				else
					for (long p = p0; p < p1; p++)
						dst[x + p] = src[y + p * b];
			}
		}
	}
}

/* KCRS weights to tunekit's blocked W[k/kb][c/cb][r][s][cb][kb] (conv2d_nchwc)
 * or, depthwise, C1RS to W[c/cb][r][s][cb]. */
static void block_weights(const task *t, float *dst, const float *src)
{
	long rs = t->r * t->s;
	if (t->op == OP_DWCONV) {
		reblock(dst, src, 1, t->c, rs, t->cb, 1);
		return;
	}
	for (long k = 0; k < t->kc; k++)
		for (long c = 0; c < t->c; c++)
			for (long p = 0; p < rs; p++)
				dst[((((k / t->kb) * (t->c / t->cb) + c / t->cb) * rs + p) * t->cb +
				     c % t->cb) * t->kb + k % t->kb] = src[(k * t->c + c) * rs + p];
}

/* ---- the benchmark state -------------------------------------------- */

typedef struct bench {
	task t;
	int threads;
	float *in[2], *absin[2];
	float *tk_out, *lib_out, *abs_out, *ws;
	float *bufs[3];            /* the kernel's: blocked copies for the _nchwc operators */
	float *tk_blk;             /* _nchwc: the kernel's blocked output, else NULL */
	/* oneDNN: user (NCHW/KCRS) memories wrap the buffers above; the
	 * convolution's own memories are allocated by oneDNN in its layout */
	dnnl_engine_t eng;
	dnnl_stream_t strm;
	dnnl_primitive_t conv, r_src, r_wei, r_dst;
	dnnl_memory_t u_src, u_wei, u_dst, c_src, c_wei, c_dst;
	const char *impl;
	char fmt[3][64];
} bench;

/* sgemm on row-major operands: C = A * B with B stored K x N, as tunekit's
 * dense declares it (input B[k, n]), so no transposition. */
static void gemm_run(const task *t, float *C, const float *A, const float *B)
{
	for (long z = 0; z < t->b; z++)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)t->m, (int)t->n,
		            (int)t->k, 1.0f, A + z * t->m * t->k, (int)t->k,
		            B + z * t->k * t->n, (int)t->n, 0.0f, C + z * t->m * t->n, (int)t->n);
}

static void exec2(bench *bk, dnnl_primitive_t p, int a0, dnnl_memory_t m0, int a1,
                  dnnl_memory_t m1)
{
	dnnl_exec_arg_t args[2] = { { a0, m0 }, { a1, m1 } };
	DNNL(dnnl_primitive_execute(p, bk->strm, 2, args));
}

static void conv_exec(bench *bk)
{
	dnnl_exec_arg_t args[3] = { { DNNL_ARG_SRC, bk->c_src },
	                            { DNNL_ARG_WEIGHTS, bk->c_wei },
	                            { DNNL_ARG_DST, bk->c_dst } };
	DNNL(dnnl_primitive_execute(bk->conv, bk->strm, 3, args));
}

/* oneDNN from NCHW inputs src, wei to NCHW output dst, every reorder
 * included; leaves the convolution's memories holding these inputs. */
static void conv_full(bench *bk, float *dst, float *src, float *wei)
{
	DNNL(dnnl_memory_set_data_handle(bk->u_src, src));
	DNNL(dnnl_memory_set_data_handle(bk->u_wei, wei));
	DNNL(dnnl_memory_set_data_handle(bk->u_dst, dst));
	exec2(bk, bk->r_src, DNNL_ARG_FROM, bk->u_src, DNNL_ARG_TO, bk->c_src);
	exec2(bk, bk->r_wei, DNNL_ARG_FROM, bk->u_wei, DNNL_ARG_TO, bk->c_wei);
	conv_exec(bk);
	exec2(bk, bk->r_dst, DNNL_ARG_FROM, bk->c_dst, DNNL_ARG_TO, bk->u_dst);
	DNNL(dnnl_stream_wait(bk->strm));
}

/* oneDNN's notation of a plain or blocked format: dimensions a, b, c, ...
 * outermost first, upper case if blocked, then the inner blocks ("aBcd16b"). */
static void fmt_str(char *out, size_t nout, const dnnl_memory_desc_t *md)
{
	const dnnl_blocking_desc_t *bd = &md->format_desc.blocking;
	int order[DNNL_MAX_NDIMS], nd = md->ndims, blocked[DNNL_MAX_NDIMS] = { 0 };
	size_t n = 0;
	if (md->format_kind != dnnl_blocked) {
		snprintf(out, nout, "%s", "opaque");
		return;
	}
	for (int i = 0; i < bd->inner_nblks; i++)
		blocked[bd->inner_idxs[i]] = 1;
	for (int i = 0; i < nd; i++)
		order[i] = i;
	for (int i = 1; i < nd; i++) /* by stride, descending; stable */
		for (int j = i; j > 0 && bd->strides[order[j]] > bd->strides[order[j - 1]]; j--) {
			int x = order[j];
			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	for (int i = 0; i < nd && n + 1 < nout; i++)
		out[n++] = (char)((blocked[order[i]] ? 'A' : 'a') + order[i]);
	for (int i = 0; i < bd->inner_nblks && n + 1 < nout; i++)
		n += (size_t)snprintf(out + n, nout - n, "%ld%c", (long)bd->inner_blks[i],
		                      (char)('a' + bd->inner_idxs[i]));
	out[n < nout ? n : nout - 1] = 0;
}

/* Create the convolution with formats `any`, its memories, and the three
 * reorders from and to the plain layouts. */
static void conv_setup(bench *bk)
{
	const task *t = &bk->t;
	int dw = t->op == OP_DWCONV;
	dnnl_dims_t src_d = { t->bn, t->c, t->h, t->w };
	dnnl_dims_t dst_d = { t->bn, t->kc, t->oh, t->ow };
	dnnl_dims_t wei_d = { t->kc, t->c, t->r, t->s };
	dnnl_dims_t gwei_d = { t->c, 1, 1, t->r, t->s }; /* goihw: one channel per group */
	dnnl_dims_t strides = { t->stride, t->stride }, pad = { t->pad, t->pad };
	dnnl_memory_desc_t u_src, u_wei, u_dst, a_src, a_wei, a_dst;
	dnnl_convolution_desc_t cd;
	dnnl_primitive_desc_t pd, rpd;

	DNNL(dnnl_engine_create(&bk->eng, dnnl_cpu, 0));
	DNNL(dnnl_stream_create(&bk->strm, bk->eng, dnnl_stream_default_flags));
	DNNL(dnnl_memory_desc_init_by_tag(&u_src, 4, src_d, dnnl_f32, dnnl_nchw));
	DNNL(dnnl_memory_desc_init_by_tag(&u_dst, 4, dst_d, dnnl_f32, dnnl_nchw));
	if (dw)
		DNNL(dnnl_memory_desc_init_by_tag(&u_wei, 5, gwei_d, dnnl_f32, dnnl_goihw));
	else
		DNNL(dnnl_memory_desc_init_by_tag(&u_wei, 4, wei_d, dnnl_f32, dnnl_oihw));
	DNNL(dnnl_memory_desc_init_by_tag(&a_src, 4, src_d, dnnl_f32, dnnl_format_tag_any));
	DNNL(dnnl_memory_desc_init_by_tag(&a_dst, 4, dst_d, dnnl_f32, dnnl_format_tag_any));
	DNNL(dnnl_memory_desc_init_by_tag(&a_wei, dw ? 5 : 4, dw ? gwei_d : wei_d, dnnl_f32,
	                                  dnnl_format_tag_any));
	/* padding_r = padding_l: oneDNN's output size is the same floor as
	 * tunekit's, and reads outside the input are zero in both */
	DNNL(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference,
	                                        dnnl_convolution_direct, &a_src, &a_wei, NULL,
	                                        &a_dst, strides, pad, pad));
	DNNL(dnnl_primitive_desc_create(&pd, &cd, NULL, bk->eng, NULL));
	DNNL(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &bk->impl));
	const dnnl_memory_desc_t *c_src = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
	const dnnl_memory_desc_t *c_wei =
		dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	const dnnl_memory_desc_t *c_dst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
	fmt_str(bk->fmt[0], sizeof bk->fmt[0], c_src);
	fmt_str(bk->fmt[1], sizeof bk->fmt[1], c_wei);
	fmt_str(bk->fmt[2], sizeof bk->fmt[2], c_dst);
	DNNL(dnnl_primitive_create(&bk->conv, pd));

	DNNL(dnnl_memory_create(&bk->u_src, &u_src, bk->eng, bk->in[0]));
	DNNL(dnnl_memory_create(&bk->u_wei, &u_wei, bk->eng, bk->in[1]));
	DNNL(dnnl_memory_create(&bk->u_dst, &u_dst, bk->eng, bk->lib_out));
	DNNL(dnnl_memory_create(&bk->c_src, c_src, bk->eng, DNNL_MEMORY_ALLOCATE));
	DNNL(dnnl_memory_create(&bk->c_wei, c_wei, bk->eng, DNNL_MEMORY_ALLOCATE));
	DNNL(dnnl_memory_create(&bk->c_dst, c_dst, bk->eng, DNNL_MEMORY_ALLOCATE));

	DNNL(dnnl_reorder_primitive_desc_create(&rpd, &u_src, bk->eng, c_src, bk->eng, NULL));
	DNNL(dnnl_primitive_create(&bk->r_src, rpd));
	DNNL(dnnl_primitive_desc_destroy(rpd));
	DNNL(dnnl_reorder_primitive_desc_create(&rpd, &u_wei, bk->eng, c_wei, bk->eng, NULL));
	DNNL(dnnl_primitive_create(&bk->r_wei, rpd));
	DNNL(dnnl_primitive_desc_destroy(rpd));
	DNNL(dnnl_reorder_primitive_desc_create(&rpd, c_dst, bk->eng, &u_dst, bk->eng, NULL));
	DNNL(dnnl_primitive_create(&bk->r_dst, rpd));
	DNNL(dnnl_primitive_desc_destroy(rpd));
	/* bk->impl points into pd, which is kept for the life of the process */
}

/* ---- the timed sides -------------------------------------------------- */

static void side_tk(bench *bk)
{
	TK_FN(bk->bufs, bk->ws);
}

static void side_lib(bench *bk)
{
	if (bk->t.op == OP_DENSE || bk->t.op == OP_BMM) {
		gemm_run(&bk->t, bk->lib_out, bk->in[0], bk->in[1]);
	} else {
		conv_exec(bk);
		DNNL(dnnl_stream_wait(bk->strm));
	}
}

/* tunekit from NCHW to NCHW (_nchwc operators): the source blocked, the
 * kernel, the destination unblocked into tk_out; the weights blocked once. */
static void side_tk_nchw(bench *bk)
{
	const task *t = &bk->t;
	reblock(bk->bufs[1], bk->in[0], t->bn, t->c, t->h * t->w, t->cb, 1);
	TK_FN(bk->bufs, bk->ws);
	reblock(bk->tk_out, bk->tk_blk, t->bn, t->kc, t->oh * t->ow, t->kb, 0);
}

/* oneDNN from NCHW to NCHW: the source and destination reorders timed too,
 * the weights' reorder hoisted (done once in the check). */
static void side_lib_nchw(bench *bk)
{
	exec2(bk, bk->r_src, DNNL_ARG_FROM, bk->u_src, DNNL_ARG_TO, bk->c_src);
	conv_exec(bk);
	exec2(bk, bk->r_dst, DNNL_ARG_FROM, bk->c_dst, DNNL_ARG_TO, bk->u_dst);
	DNNL(dnnl_stream_wait(bk->strm));
}

/* The FP32 peak: the FMA loop on every thread; FLOPs per call in peak_flops. */
static volatile float peak_sink;
static double peak_flops(int threads)
{
	return (double)threads * PEAK_ITERS * CHAINS * LANES * FLOPS_PER_OP;
}

static void side_peak(bench *bk)
{
	float sum = 0;
#pragma omp parallel num_threads(bk->threads) reduction(+ : sum)
	sum += fma_loop(PEAK_ITERS);
	peak_sink = sum;
}

typedef struct side {
	const char *name;
	void (*run)(bench *);
	long ncall;
	double t[MAXROUNDS], med;
} side;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds per call of one block of s->ncall calls after a pause and a
 * warm-up call. */
static double block(bench *bk, side *s, long pause_us)
{
	if (pause_us > 0)
		usleep((useconds_t)pause_us);
	s->run(bk);
	double t0 = now();
	for (long i = 0; i < s->ncall; i++)
		s->run(bk);
	return (now() - t0) / (double)s->ncall;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *x, int n)
{
	double y[MAXROUNDS];
	memcpy(y, x, (size_t)n * sizeof *x);
	qsort(y, (size_t)n, sizeof *y, cmp_double);
	return n % 2 ? y[n / 2] : 0.5 * (y[n / 2 - 1] + y[n / 2]);
}

/* ---- checking --------------------------------------------------------- */

/* The largest |tk - lib| / tolerance over the output (> 1: wrong; NaN or
 * infinity in the kernel's output counts as infinitely wrong). */
static double check(const bench *bk, long *worst)
{
	const task *t = &bk->t;
	double rtol = 2 * 16 * FLT_EPSILON * (1 + sqrt(t->red)), e = 0;
	*worst = 0;
	for (long i = 0; i < t->out_n; i++) {
		double d = fabs((double)bk->tk_out[i] - (double)bk->lib_out[i]);
		double tol = rtol * (double)bk->abs_out[i] + 1e-30;
		double q = isfinite(bk->tk_out[i]) ? d / tol : INFINITY;
		if (!(q <= e)) {
			e = q;
			*worst = i;
		}
	}
	return e;
}

static void usage(void)
{
	fprintf(stderr, "usage: driver [-r ROUNDS] [-m MIN_MS] [-p PAUSE_MS] TASK THREADS\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int rounds = 7, opt;
	double min_ms = 100, pause_ms = 200;
	char *end;
	bench bk;

	while ((opt = getopt(argc, argv, "r:m:p:")) != -1) {
		switch (opt) {
		case 'r':
			rounds = (int)strtol(optarg, &end, 10);
			if (*end || rounds < 1 || rounds > MAXROUNDS)
				usage();
			break;
		case 'm':
			min_ms = strtod(optarg, &end);
			if (*end || !(min_ms >= 0 && min_ms <= 1e5))
				usage();
			break;
		case 'p':
			pause_ms = strtod(optarg, &end);
			if (*end || !(pause_ms >= 0 && pause_ms <= 1e4))
				usage();
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
	memset(&bk, 0, sizeof bk);
	task_parse(argv[optind], &bk.t);
	bk.threads = (int)strtol(argv[optind + 1], &end, 10);
	if (*end || bk.threads < 1 || bk.threads > 256)
		usage();
	const task *t = &bk.t;
	int conv = t->op == OP_CONV || t->op == OP_DWCONV;

	/* Threads of every side, before any library sets up its pools. */
	if (bk.threads == 1)
		pin_last_cpu();
#ifdef BLAS_BLIS
	bli_thread_set_num_threads(bk.threads);
#else
	openblas_set_num_threads(bk.threads);
#endif
	omp_set_num_threads(bk.threads);

	for (int i = 0; i < 2; i++) {
		bk.in[i] = floats(t->in_n[i]);
		bk.absin[i] = floats(t->in_n[i]);
		fill_random(bk.in[i], t->in_n[i], (uint64_t)i + 1);
		for (long j = 0; j < t->in_n[i]; j++)
			bk.absin[i][j] = fabsf(bk.in[i][j]);
	}
	bk.tk_out = floats(t->out_n);
	bk.lib_out = floats(t->out_n);
	bk.abs_out = floats(t->out_n);
	bk.ws = TK_WS ? floats((long)TK_WS) : NULL;
	bk.bufs[0] = bk.tk_out;
	bk.bufs[1] = bk.in[0];
	bk.bufs[2] = bk.in[1];
	if (t->cb) {
		bk.tk_blk = bk.bufs[0] = floats(t->out_n);
		bk.bufs[1] = floats(t->in_n[0]);
		bk.bufs[2] = floats(t->in_n[1]);
		reblock(bk.bufs[1], bk.in[0], t->bn, t->c, t->h * t->w, t->cb, 1);
		block_weights(t, bk.bufs[2], bk.in[1]);
	}

	char lib[200];
	if (conv) {
		const dnnl_version_t *v = dnnl_version();
		conv_setup(&bk);
		snprintf(lib, sizeof lib, "oneDNN %d.%d.%d %s", v->major, v->minor, v->patch,
		         bk.impl);
	} else {
#ifdef BLAS_BLIS
		snprintf(lib, sizeof lib, "BLIS %s %s", bli_info_get_version_str(),
		         bli_arch_string(bli_arch_query_id()));
#else
		char ver[64] = "?"; /* "OpenBLAS 0.3.21 DYNAMIC_ARCH ...": the second word */
		sscanf(openblas_get_config(), "OpenBLAS %63s", ver);
		snprintf(lib, sizeof lib, "OpenBLAS %s %s", ver, openblas_get_corename());
#endif
	}

	/* Check: the kernel against the library on the same inputs. */
	for (long i = 0; i < t->out_n; i++)
		bk.tk_out[i] = bk.lib_out[i] = bk.abs_out[i] = NAN;
	side_tk(&bk);
	if (t->cb)
		reblock(bk.tk_out, bk.tk_blk, t->bn, t->kc, t->oh * t->ow, t->kb, 0);
	if (conv) {
		conv_full(&bk, bk.abs_out, bk.absin[0], bk.absin[1]);
		conv_full(&bk, bk.lib_out, bk.in[0], bk.in[1]); /* last: the timed inputs */
	} else {
		gemm_run(t, bk.abs_out, bk.absin[0], bk.absin[1]);
		gemm_run(t, bk.lib_out, bk.in[0], bk.in[1]);
	}
	long worst;
	double err = check(&bk, &worst);

	printf("# task %s, %d thread%s%s\n", argv[optind], bk.threads,
	       bk.threads > 1 ? "s" : "", bk.threads == 1 ? ", pinned to one CPU" : "");
	if (t->cb && t->op == OP_DWCONV)
		printf("# tunekit: tk_%s, exported kernel (blocked: src NCHW%ldc, weights "
		       "CRS%ldc, dst NCHW%ldc; tunekit+reorder: src and dst reorders timed too)\n",
		       STR(KERNEL), t->cb, t->cb, t->kb);
	else if (t->cb)
		printf("# tunekit: tk_%s, exported kernel (blocked: src NCHW%ldc, weights "
		       "KCRS%ldc%ldk, dst NCHW%ldc; tunekit+reorder: src and dst reorders "
		       "timed too)\n", STR(KERNEL), t->cb, t->cb, t->kb, t->kb);
	else
		printf("# tunekit: tk_%s, exported kernel (%s in, %s out)\n", STR(KERNEL),
		       conv ? "NCHW/KCRS" : "row-major", conv ? "NCHW" : "row-major");
	if (conv) {
		printf("# library: %s; formats chosen by oneDNN (tag any): src %s, weights %s, "
		       "dst %s; reorders to and from them outside the timed region "
		       "(lib+reorder: src and dst reorders timed too)\n",
		       lib, bk.fmt[0], bk.fmt[1], bk.fmt[2]);
	} else {
#ifdef BLAS_BLIS
		const char *config = "BLIS, threads set by bli_thread_set_num_threads";
#else
		const char *config = openblas_get_config();
#endif
		printf("# library: %s, cblas_sgemm(RowMajor, NoTrans, NoTrans)%s; %s\n", lib,
		       t->op == OP_BMM ? " in a loop over the batch" : "", config);
	}
	printf("# check: max |tk - lib| / (2 rtol sum|terms|) = %.3g at element %ld "
	       "(rtol = 16 eps (1 + sqrt(%g))): %s\n", err, worst, t->red,
	       err <= 1 ? "OK" : "WRONG");
	if (!(err <= 1)) {
		printf("# tk[%ld] = %.9g, lib[%ld] = %.9g; not timed\n", worst,
		       (double)bk.tk_out[worst], worst, (double)bk.lib_out[worst]);
		fflush(stdout);
		return 1;
	}

	side sides[MAXSIDES] = { { .name = "tunekit", .run = side_tk },
	                         { .name = "lib", .run = side_lib },
	                         { .name = "lib+reorder", .run = side_lib_nchw },
	                         { .name = "tunekit+reorder", .run = side_tk_nchw },
	                         { .name = "peak", .run = side_peak } };
	int ns = t->cb ? 4 : conv ? 3 : 2;
	sides[ns++] = sides[MAXSIDES - 1]; /* the peak, last */
	long pause_us = bk.threads > 1 ? (long)(pause_ms * 1000) : 0;
	for (int i = 0; i < ns; i++) { /* calls per block */
		sides[i].ncall = 1;
		double s1 = block(&bk, &sides[i], pause_us);
		sides[i].ncall = (long)ceil(min_ms * 1e-3 / s1);
		if (sides[i].ncall < 1)
			sides[i].ncall = 1;
	}
	for (int r = 0; r < rounds; r++) {
		for (int j = 0; j < ns; j++) {
			/* rotated by r/2, reversed on odd rounds: ABBA, all 6 orders of 3 */
			int k = (j + r / 2) % ns;
			if (r % 2)
				k = (ns - 1 - j + r / 2) % ns;
			sides[k].t[r] = block(&bk, &sides[k], pause_us);
		}
	}
	printf("# timing: %d rounds interleaved, blocks of >= %g ms after a warm-up call%s, "
	       "median seconds per call\n", rounds, min_ms,
	       pause_us ? " and an idle pause" : "");
	double peak_best = 0;
	for (int i = 0; i < ns; i++) {
		side *s = &sides[i];
		double lo = s->t[0], hi = s->t[0];
		double flops = s->run == side_peak ? peak_flops(bk.threads) : t->flops;
		for (int r = 1; r < rounds; r++) {
			lo = s->t[r] < lo ? s->t[r] : lo;
			hi = s->t[r] > hi ? s->t[r] : hi;
		}
		s->med = median(s->t, rounds);
		if (s->run == side_peak)
			peak_best = flops / lo * 1e-9;
		printf("# %-15s %10.4f ms  %8.2f GFLOPS  (min %.4f, max %.4f ms, %ld calls/block)\n",
		       s->name, s->med * 1e3, flops / s->med * 1e-9, lo * 1e3, hi * 1e3,
		       s->ncall);
	}
	printf("# peak: %s, %d chains, best round %.2f GFLOPS\n", ISA, CHAINS, peak_best);
	printf("task\tthreads\tflops\ttk_s\tlib_s\tlib_reorder_s\ttk_gflops\tlib_gflops\t"
	       "check\tlibrary\ttk_reorder_s\tpeak_gflops\n");
	printf("%s\t%d\t%.0f\t%.6g\t%.6g\t", argv[optind], bk.threads, t->flops, sides[0].med,
	       sides[1].med);
	if (conv)
		printf("%.6g", sides[2].med);
	else
		printf("-");
	printf("\t%.2f\t%.2f\t%.3g\t%s\t", t->flops / sides[0].med * 1e-9,
	       t->flops / sides[1].med * 1e-9, err, lib);
	if (t->cb)
		printf("%.6g", sides[3].med);
	else
		printf("-");
	printf("\t%.2f\n", peak_best);
	return 0;
}
