/*
 * nn benchmark (not a test): GFLOPS of lib/nn's linear layer and masked
 * multi-head self-attention, forward and backward, at TLP's size: sequences
 * of L = 25 positions embedded in E = 256 (after TLP's upsampling), 8
 * heads, a batch of B sequences with lengths drawn in [L/2, L]. Each row
 * is the median of R timed runs after one warm-up run; FLOPs count the
 * multiply-adds of the matrix products as 2 (attention over each
 * sequence's valid length only). Threads: OpenBLAS's own
 * (OPENBLAS_NUM_THREADS).
 *
 * Usage: nn [B [R]]   (defaults 512 and 7)
 */
#include <stdio.h>
#include <stdlib.h>

#include "nn/nn.h"

enum { L = 25, E = 256, H = 8 };

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

typedef struct bench {
	int B;
	const int *len;
	float *x, *w, *b, *y, *dx, *dw, *db, *dy;            /* linear */
	float *qkv, *out, *att, *dqkv, *dout, *scratch;      /* attention */
} bench;

static void lin_fwd(bench *s)
{
	nn_linear_forward(s->y, s->x, s->w, s->b, s->B * L, E, E);
}

static void lin_bwd(bench *s)
{
	nn_linear_backward(s->dx, s->dw, s->db, s->dy, s->x, s->w, s->B * L, E, E);
}

static void att_fwd(bench *s)
{
	nn_attention_forward(s->out, s->att, s->qkv, s->len, s->B, L, E, H);
}

static void att_bwd(bench *s)
{
	nn_attention_backward(s->dqkv, s->scratch, s->dout, s->qkv, s->att, s->len, s->B, L, E, H);
}

static double median_seconds(void (*fn)(bench *), bench *s, int runs)
{
	double *t = malloc(sizeof *t * (size_t)runs), m;
	fn(s);
	for (int r = 0; r < runs; r++) {
		double t0 = tk_now();
		fn(s);
		t[r] = tk_now() - t0;
	}
	qsort(t, (size_t)runs, sizeof *t, cmp_double);
	m = runs % 2 ? t[runs / 2] : (t[runs / 2 - 1] + t[runs / 2]) / 2;
	free(t);
	return m;
}

int main(int argc, char **argv)
{
	int B = argc > 1 ? atoi(argv[1]) : 512, runs = argc > 2 ? atoi(argv[2]) : 7;
	bench s = { .B = B };
	tk_rng rng;
	int *len;
	float *block;
	size_t R = (size_t)B * L;
	if (B < 1 || runs < 1) {
		fprintf(stderr, "usage: nn [B [R]]\n");
		return 2;
	}
	const size_t sizes[] = { R * E, E * E, E, R * E, R * E, E * E, E, R * E,
	                         R * 3 * E, R * E, (size_t)B * H * L * L, R * 3 * E, R * E, L * L };
	float **const ptrs[] = { &s.x, &s.w, &s.b, &s.y, &s.dx, &s.dw, &s.db, &s.dy,
	                         &s.qkv, &s.out, &s.att, &s.dqkv, &s.dout, &s.scratch };
	size_t n;
	len = malloc(sizeof *len * (size_t)B);
	if (!len || nn_alloc(&block, &n, ptrs, sizes, ArraySize(sizes))) {
		fprintf(stderr, "nn: out of memory\n");
		return 1;
	}
	tk_rng_seed(&rng, 1, 1);
	nn_init_uniform(block, n, 1, &rng);
	double attflops = 0;
	for (int b = 0; b < B; b++) {
		len[b] = L / 2 + (int)tk_rng_below(&rng, L - L / 2 + 1);
		/* S = q k^T and out = S v per head: 2 n^2 D multiply-adds each */
		attflops += 2.0 * 2.0 * len[b] * len[b] * E;
	}
	s.len = len;
	double linflops = 2.0 * R * E * E;
	struct { const char *name; void (*fn)(bench *); double flops; } rows[] = {
		{ "linear forward", lin_fwd, linflops },
		{ "linear backward", lin_bwd, 2 * linflops },
		{ "attention forward", att_fwd, attflops },
		{ "attention backward", att_bwd, 2 * attflops },
	};
	printf("OpenBLAS core %s\n\n", nn_blas_core());
	printf("| layer (B=%d, L=%d, E=%d, H=%d) | median ms | GFLOPS |\n|---|---|---|\n", B, L, E, H);
	for (int i = 0; i < ArraySize(rows); i++) {
		double t = median_seconds(rows[i].fn, &s, runs);
		printf("| %s | %.3f | %.1f |\n", rows[i].name, t * 1e3, rows[i].flops / t * 1e-9);
	}
	free(block);
	free(len);
	return 0;
}
