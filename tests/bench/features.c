/*
 * features benchmark (not a test): configurations per second of each kind
 * of feature extraction (knob, itervar, curve, tlp) over random
 * configurations of a ResNet-18 convolution and a 512^3 GEMM, the rate the
 * tuner's simulated annealing needs. For tlp a configuration is one
 * schedule sequence; the line "sc_from_config" times building the sequence
 * alone, the part of tlp that is not feature extraction. One line per
 * (task, kind):
 *
 *     features <kind> <task> <N> configs/s
 *
 * Each line runs over the N configurations as many times as it takes to
 * fill a quarter of a second, so that the fast kinds are timed too.
 *
 * Build: make build/bench/features
 * Usage: features [N [TASK...]]   (default 2000 configurations, the two
 *                                  tasks above)
 */
#include <stdio.h>
#include <stdlib.h>

#include "features/feature.h"
#include "schedule/sched.h"

#define MIN_SECONDS 0.25

static const char *const default_tasks[] = {
	"conv2d:c=64,h=56,w=56,k=64,pad=1",
	"dense:m=512,n=512,k=512",
};

/* Configurations per second of kind k (-1: sc_from_config alone). */
static int rate(int k, const sp_space *sp, const sp_config *cfg, int n, double *out)
{
	static sc_sched sched;
	int len = 1, valid;
	if (k >= 0 && feat_length(k, sp, &len))
		return -1;
	float *v = malloc(sizeof *v * (size_t)(len ? len : 1));
	if (!v)
		return -1;
	double t0 = tk_now(), dt;
	long done = 0;
	do {
		for (int i = 0; i < n; i++) {
			if (k < 0)
				sc_from_config(sp, &cfg[i], &sched);
			else if (feat_extract(k, sp, &cfg[i], v, &valid)) {
				free(v);
				return -1;
			}
		}
		done += n;
		dt = tk_now() - t0;
	} while (dt < MIN_SECONDS);
	free(v);
	*out = done / dt;
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	const char *const *tasks = argc > 2 ? (const char *const *)argv + 2 : default_tasks;
	int ntask = argc > 2 ? argc - 2 : (int)(sizeof default_tasks / sizeof default_tasks[0]);
	if (n < 1) {
		fprintf(stderr, "usage: features [N [TASK...]]\n");
		return 2;
	}
	sp_config *cfg = malloc(sizeof *cfg * (size_t)n);
	if (!cfg)
		return 1;
	for (int t = 0; t < ntask; t++) {
		te_prog *p;
		sp_space *sp;
		tk_rng rng;
		double r;
		if (te_task_parse(tasks[t], &p) || sp_space_create(p, &sp)) {
			fprintf(stderr, "features: %s: %s\n", tasks[t], tk_errmsg());
			return 1;
		}
		tk_rng_seed(&rng, 1, (uint64_t)t);
		for (int i = 0; i < n; i++)
			sp_sample(sp, &rng, &cfg[i]);
		for (int k = -1; k < FEAT_NKIND; k++) {
			if (rate(k, sp, cfg, n, &r)) {
				fprintf(stderr, "features: %s\n", tk_errmsg());
				return 1;
			}
			printf("features %s %s %d %.0f configs/s\n", k < 0 ? "sc_from_config" : feat_kind_name(k),
			       tasks[t], n, r);
		}
		sp_space_free(sp);
		te_prog_free(p);
	}
	free(cfg);
	return 0;
}
