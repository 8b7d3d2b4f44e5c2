/*
 * features benchmark (not a test): configurations per second of knob,
 * itervar and curve extraction over random configurations of a ResNet-18
 * convolution and a 512^3 GEMM, the rate the tuner's simulated annealing
 * needs. One line per (task, kind):
 *
 *     features <kind> <task> <N> configs/s
 *
 * Build: cc -O2 -Ilib tests/bench/features.c build/libtunekit.a \
 *        $(pkg-config --libs sqlite3 zlib jansson xgboost) -ldl -lm
 * Usage: features [N]   (default 2000 configurations per line)
 */
#include <stdio.h>
#include <stdlib.h>

#include "features/feature.h"

static const char *const tasks[] = {
	"conv2d:c=64,h=56,w=56,k=64,pad=1",
	"dense:m=512,n=512,k=512",
};

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	if (n < 1) {
		fprintf(stderr, "usage: features [N]\n");
		return 2;
	}
	sp_config *cfg = malloc(sizeof *cfg * (size_t)n);
	if (!cfg)
		return 1;
	for (int t = 0; t < (int)(sizeof tasks / sizeof tasks[0]); t++) {
		te_prog *p;
		sp_space *sp;
		tk_rng rng;
		if (te_task_parse(tasks[t], &p) || sp_space_create(p, &sp)) {
			fprintf(stderr, "features: %s: %s\n", tasks[t], tk_errmsg());
			return 1;
		}
		tk_rng_seed(&rng, 1, (uint64_t)t);
		for (int i = 0; i < n; i++)
			sp_sample(sp, &rng, &cfg[i]);
		for (int k = 0; k < FEAT_NKIND; k++) {
			int len, valid;
			if (feat_length(k, sp, &len))
				return 1;
			float *v = malloc(sizeof *v * (size_t)(len ? len : 1));
			if (!v)
				return 1;
			double t0 = tk_now();
			for (int i = 0; i < n; i++) {
				if (feat_extract(k, sp, &cfg[i], v, &valid)) {
					fprintf(stderr, "features: %s\n", tk_errmsg());
					return 1;
				}
			}
			double dt = tk_now() - t0;
			printf("features %s %s %d %.0f configs/s\n", feat_kind_name(k), tasks[t], n,
			       dt > 0 ? n / dt : 0.0);
			free(v);
		}
		sp_space_free(sp);
		te_prog_free(p);
	}
	free(cfg);
	return 0;
}
