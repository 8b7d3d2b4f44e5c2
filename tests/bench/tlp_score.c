/*
 * tlp_score benchmark (not a test): candidates per second the TLP cost model
 * scores, the rate a tuner's search asks of it: tlp features of N random
 * configurations of a task (extracted once, as the tuner's feature cache
 * holds them), then cm_predict over all of them, repeated for at least a
 * second; median of 5 such timings. The network's weights are an
 * initialisation (one epoch on the same rows): speed does not depend on
 * them. One line per task:
 *
 *     tlp_score <task> <N> <mean sequence length> <candidates/s>
 *
 * Build: make build/bench/tlp_score
 * Usage: tlp_score [N [TASK...]]   (default 4096, a ResNet-18 convolution and
 *                                   a 512^3 GEMM)
 */
#include <stdio.h>
#include <stdlib.h>

#include "features/feature.h"
#include "model/cost.h"
#include "nn/nn.h"
#include "task/te.h"

static const char *const default_tasks[] = {
	"conv2d:c=64,h=56,w=56,k=64,pad=1",
	"dense:m=512,n=512,k=512",
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int bench(const char *task, int n)
{
	te_prog *p;
	sp_space *sp;
	tk_rng rng;
	int d, rc = 1;
	if (te_task_parse(task, &p) || sp_space_create(p, &sp)) {
		fprintf(stderr, "tlp_score: %s: %s\n", task, tk_errmsg());
		return 1;
	}
	feat_length(FEAT_TLP, sp, &d);
	float *x = malloc(sizeof *x * (size_t)n * d), *y = malloc(sizeof *y * (size_t)n);
	float *out = malloc(sizeof *out * (size_t)n);
	if (!x || !y || !out)
		goto done;
	tk_rng_seed(&rng, 1, 0);
	long positions = 0;
	for (int i = 0; i < n; i++) {
		sp_config c;
		sp_sample(sp, &rng, &c);
		feat_extract(FEAT_TLP, sp, &c, x + (size_t)i * d, NULL);
		y[i] = (float)tk_rng_unif(&rng);
		for (int l = 0; l < FEAT_TLP_L; l++)
			for (int e = 0; e < FEAT_TLP_E; e++)
				if (x[(size_t)i * d + l * FEAT_TLP_E + e] != 0) {
					positions++;
					break;
				}
	}
	cm_params cp;
	cm_params_default(&cp);
	cp.seq_e = FEAT_TLP_E;
	cp.rounds = 1;
	cm_data data = { .n = n, .d = d, .x = x, .y = y };
	cm_model *m;
	if (cm_fit(cm_find("tlp"), &cp, &data, NULL, &m)) {
		fprintf(stderr, "tlp_score: %s\n", tk_errmsg());
		goto done;
	}
	double rate[5];
	for (int r = 0; r < 5; r++) {
		double t0 = tk_now(), dt;
		long done = 0;
		do {
			cm_predict(m, x, n, d, NULL, out);
			done += n;
			dt = tk_now() - t0;
		} while (dt < 1.0);
		rate[r] = done / dt;
	}
	qsort(rate, 5, sizeof *rate, cmp_double);
	printf("tlp_score %s %d %.1f %.0f\n", task, n, (double)positions / n, rate[2]);
	cm_free(m);
	rc = 0;
done:
	free(x);
	free(y);
	free(out);
	sp_space_free(sp);
	te_prog_free(p);
	return rc;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4096, rc = 0;
	if (n < 1) {
		fprintf(stderr, "usage: tlp_score [N [TASK...]]\n");
		return 2;
	}
	printf("OpenBLAS core %s\n", nn_blas_core());
	if (argc > 2)
		for (int i = 2; i < argc; i++)
			rc |= bench(argv[i], n);
	else
		for (int i = 0; i < 2; i++)
			rc |= bench(default_tasks[i], n);
	return rc;
}
