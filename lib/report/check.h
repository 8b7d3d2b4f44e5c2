/*
 * check: the regression gate of `tunekit report check`. For every task both
 * stores measured on the same hardware, the latency of the current store's
 * best configuration against the baseline store's, with an interval that
 * comes from the repeats of their measurements, and a verdict a CI job can
 * act on. Nothing here prints: cmd/report.c formats the rows.
 *
 * Definitions (and in man/tunekit-report.1):
 *   - the best configuration of a task on a hardware is store_best()'s: the
 *     configuration whose median record is fastest;
 *   - its sample is the repeats of all its valid measurements on that
 *     hardware, each measurement's repeats scaled so that their median is
 *     the measurement's recorded median (the two agree in every store
 *     tunekit writes; a record edited by hand keeps its edit), or the
 *     recorded median alone when a measurement kept no repeats;
 *   - ratio = median(current sample) / median(baseline sample): above 1 the
 *     current kernel is slower;
 *   - its interval: the 2.5th and 97.5th percentiles of that ratio over
 *     RP_CHECK_NBOOT bootstrap resamples (each sample resampled with
 *     replacement by a generator seeded by the caller, so that a check
 *     repeats exactly);
 *   - paired: when the two sides' measurements were taken in turn (as
 *     examples/ci-benchmark.sh does with the release binary: the same
 *     number n >= RP_CHECK_MINPAIRS of each, and in time order every
 *     measurement of one side next to one of the other, A B B A ...), the
 *     load of the machine changed between the pairs but hardly within one.
 *     Then ratio = the median over the pairs of median(cur_i) / median
 *     (base_i), and its interval the 2.5th and 97.5th percentiles of that
 *     median over RP_CHECK_NBOOT resamples of the pairs, so that a change
 *     of load that hit both sides of a pair cancels;
 *   - verdict, with t the threshold (0.05 for 5%): slower when the whole
 *     interval is above 1 + t, improved when it is below 1 / (1 + t),
 *     unchanged otherwise. A difference inside the noise, or within the
 *     threshold, is never "slower".
 */
#ifndef TK_REPORT_CHECK_H
#define TK_REPORT_CHECK_H

#include <stdint.h>

#include "store/store.h"

#define RP_CHECK_NBOOT 4000
#define RP_CHECK_MINPAIRS 3

enum { RP_UNCHANGED = 0, RP_IMPROVED = 1, RP_SLOWER = 2 };

/* The verdict's name: "unchanged", "improved", "slower". */
const char *rp_check_verdict_name(int verdict);

/* The verdict of an interval [lo, hi] of the ratio current / baseline
 * with threshold t >= 0 (see above). */
int rp_check_verdict(double lo, double hi, double t);

/* The ratio of the medians of aCur[0..nCur) and aBase[0..nBase) (both
 * n >= 1, values > 0) into *ratio, and its bootstrap interval from nBoot
 * resamples seeded with seed into *lo, *hi. TK_ENOMEM or TK_OK. */
int rp_check_ratio(const double *aCur, int nCur, const double *aBase, int nBase, int nBoot,
                   uint64_t seed, double *ratio, double *lo, double *hi);

/* The paired ratio of n >= 1 pairs (aCur[i], aBase[i], values > 0): the
 * median of aCur[i] / aBase[i] into *ratio, and its bootstrap interval
 * (the pairs resampled nBoot times, seeded with seed) into *lo, *hi.
 * TK_ENOMEM or TK_OK. */
int rp_check_ratio_paired(const double *aCur, const double *aBase, int n, int nBoot,
                          uint64_t seed, double *ratio, double *lo, double *hi);

/* Whether the measurements taken at aCurAt[0..nCur) and aBaseAt[0..nBase)
 * were taken in turn (see "paired" above): 1 with the pairs' indices in
 * aPairCur[], aPairBase[] (room for nCur each), else 0. */
int rp_check_pairs(const double *aCurAt, int nCur, const double *aBaseAt, int nBase,
                   int *aPairCur, int *aPairBase);

/* One task on one hardware. */
typedef struct rp_check_row {
	char *task;             /* canonical task key */
	char *config;           /* the current best configuration */
	char *base_config;      /* the baseline's best configuration */
	int64_t hardware_id;    /* in the current store */
	double cur, base;       /* sample medians, seconds */
	int ncur, nbase;        /* sample sizes (repeats) */
	int npair;              /* pairs of measurements compared, 0: the samples */
	double ratio, lo, hi;   /* cur / base and its interval */
	int verdict;            /* RP_UNCHANGED, RP_IMPROVED, RP_SLOWER */
} rp_check_row;

typedef struct rp_check {
	double threshold;       /* as given, a fraction */
	int nrow;
	rp_check_row *row;      /* by hardware (id in cur), then task key */
	int count[3];           /* rows per verdict */
	int nonly_cur;          /* tasks with a best configuration only in the current store */
	int nonly_base;         /* ... only in the baseline */
	int nhw;                /* hardware compared */
	char *hw_keys;          /* their keys, one per line */
	char *compiler_changes; /* "BASE -> CUR" per hardware compared across a
	                           compiler change, one per line; NULL if none */
} rp_check;

/* Compare the best configurations of store cur with those of store base,
 * task by task on the hardware both stores measured (same hardware key):
 * all of it, or, when hardware_id is not 0, that hardware of cur only.
 * A hardware of cur without its key in base is compared with the one
 * hardware of base whose key differs only in the compiler (after a
 * compiler upgrade, the change a benchmark job is there to judge), and
 * the two compilers are named in compiler_changes; with several such, or
 * any other difference (CPU, ISA, flags, threads), it is not compared.
 * Threshold t >= 0 as a fraction; seed seeds the bootstrap. Errors:
 * TK_EINVAL when the stores have no hardware in common (the message names
 * both sides' hardware: figures from different machines never compare) or
 * no task in common on it; TK_ENOTFOUND when cur has no valid measurement
 * on hardware_id; store errors as store.h; TK_ENOMEM. On success *out is a
 * new rp_check the caller frees with rp_check_free(); NULL otherwise. */
int rp_check_build(tk_store *cur, tk_store *base, int64_t hardware_id, double t,
                   uint64_t seed, rp_check **out);
void rp_check_free(rp_check *c); /* NULL is allowed */

#endif
