/*
 * kernel_tuner: import a Kernel Tuner cache file (JSON, gzip-compressed or
 * not) into the store.
 *
 * A cache file holds one kernel on one problem size on one device: the
 * tunable parameters (tune_params_keys, tune_params) and, under "cache",
 * one entry per configuration that was run, keyed by the comma-joined
 * parameter values. The import makes
 *   - the task "kt:KERNEL:P1xP2..." (op "kernel-tuner") whose task.space is
 *     the Cartesian space of tune_params (sp_space_custom, knobs in
 *     tune_params_keys order, labels the values as the cache keys print
 *     them), its FLOPs from GFLOP/s * time (the median over valid entries)
 *     or, without GFLOP/s, from the problem size of the kernels it knows;
 *   - the hardware "kt:DEVICE" (kind "imported", cpu the device name);
 *   - one run (method "import/kernel-tuner") holding one measurement per
 *     cache entry: a valid one with the time (ms -> s) and its repeats, or
 *     an invalid one for "CompilationFailedConfig" (compile error),
 *     "RuntimeFailedConfig" (runtime crash) or any other string (unknown,
 *     with the string as message).
 * Configurations absent from the cache are not stored. An entry whose
 * values are not in tune_params is kept as a foreign record. Records whose
 * (configuration, hardware) already has a measurement from an earlier
 * import are skipped, so importing a file twice adds nothing. Everything
 * happens in one transaction.
 */
#ifndef TK_KERNEL_TUNER_H
#define TK_KERNEL_TUNER_H

#include <stdint.h>

#include "store/store.h"

typedef struct kt_stats {
	char task[256];       /* task key */
	char hardware[256];   /* hardware key */
	int64_t entries;      /* cache entries in the file */
	int64_t records;      /* measurements added */
	int64_t invalid;      /* ... of which invalid */
	int64_t duplicates;   /* entries skipped: already imported */
	int64_t foreign;      /* entries kept as new foreign records */
	uint64_t space_size;  /* configurations in the Cartesian space */
	double flops;         /* the task's FLOPs (0: unknown) */
} kt_stats;

/* Import the cache file at path ("-": standard input). hardware names the device (NULL: the
 * file's device_name; a file whose device_name is empty needs it). argv is
 * the command line kept with the run. On success *st describes what was
 * done (st may be NULL). Errors: TK_EIO if the file cannot be read,
 * TK_EINVAL ("PATH:LINE:COLUMN: ..." for JSON errors, "PATH: ..." for a
 * file that is JSON but not a cache file, an empty device_name without
 * hardware, a task already stored with a different space), store errors;
 * on error nothing is stored. */
int kt_import(tk_store *s, const char *path, const char *hardware, const char *argv,
              kt_stats *st);

#endif
