/*
 * store_check: the queries of `tunekit report check`, the regression gate
 * that compares the best configurations of two stores (lib/report/check.c):
 * the hardware a store measured on, and every valid measurement of one
 * configuration with its repeat times.
 */
#ifndef TK_STORE_CHECK_H
#define TK_STORE_CHECK_H

#include <stdint.h>

#include "store.h"

/* One hardware row of a store. Strings are valid only during the callback. */
typedef struct store_hwinfo {
	int64_t id;
	const char *key;  /* identity: cpu|isa|compiler version|opt|threads=N */
	int64_t nvalid;   /* valid measurements on it */
} store_hwinfo;
/* Callback: 0 continues, non-zero stops (returned by the query). */
typedef int (*store_hwinfo_cb)(void *ctx, const store_hwinfo *h);

/* Every hardware of the store with at least one valid measurement, in id
 * order. Store errors as store.h. */
int store_check_hardware(tk_store *s, store_hwinfo_cb cb, void *ctx);

/* One valid measurement: its recorded median and its repeats. times is
 * NULL and ntimes 0 when the measurement kept no repeat times (imported
 * records). The array is valid only during the callback. */
typedef struct store_sample {
	int64_t id;
	double at;            /* when it was measured (seconds since the epoch) */
	double median;        /* seconds per call: the latency tunekit reports */
	const double *times;  /* [ntimes] seconds per call of each repeat */
	int ntimes;
	int cpu_clock;        /* timed in CPU time: its run has cpu_clock=1 among
	                         its parameters (measure and tune --clock cpu);
	                         0: wall-clock time, or a run that did not say */
} store_sample;
typedef int (*store_sample_cb)(void *ctx, const store_sample *m);

/* Every valid measurement of configuration config_id on hardware
 * hardware_id, in id order, with its repeat times decoded. Returns the
 * callback's non-zero value if it stops, TK_ECORRUPT for a damaged times
 * BLOB, store errors as store.h. No rows is not an error. */
int store_check_samples(tk_store *s, int64_t config_id, int64_t hardware_id,
                        store_sample_cb cb, void *ctx);

#endif
