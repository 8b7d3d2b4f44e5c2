/*
 * store_models: what cost models need from the record store: training rows
 * (measurements joined with their task and their configuration's feature
 * vector), the hardware that has records (to choose what to train on), and
 * the model table (trained models with their meta and file contents).
 * Errors as in store.h: TK_ESTORE, TK_ECORRUPT (a feature BLOB that does
 * not decode), TK_ENOTFOUND, TK_ENOMEM; tk_errmsg() is set.
 */
#ifndef TK_STORE_MODELS_H
#define TK_STORE_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* One configuration on one hardware as a training row: valid if any of its
 * records is, median the median of the valid records' medians (the mean of
 * the middle two for an even count), meas_id its first record. Pointers
 * are valid only during the callback. */
typedef struct store_train_row {
	int64_t meas_id, task_id, config_id, hardware_id;
	const char *task;   /* task key */
	double flops;       /* the task's nominal FLOPs */
	int valid;          /* valid and timed */
	double median;      /* seconds; -1 unless valid */
	int n;              /* feature values; 0 if the configuration has none
	                       of the kind and version asked for */
	const float *x;     /* n values, NULL if n == 0 */
} store_train_row;
/* Return 0 to go on; non-zero stops the query, which returns that value. */
typedef int (*store_train_cb)(void *ctx, const store_train_row *r);

/* Training rows for features of (kind, version), ordered by task id then
 * first measurement id (rows of a task are contiguous). hardware_id 0
 * means any hardware. With ids == NULL: every configuration and hardware
 * whose configuration has such features, from all its records. With nid
 * ids: from those measurements alone, also configurations without
 * features (n = 0), so the caller can tell; ids absent from the store are
 * skipped, duplicates counted once. */
int store_train_rows(tk_store *s, int64_t hardware_id, const char *kind, int version,
                     const int64_t *ids, int nid, store_train_cb cb, void *ctx);

/* Hardware that has records, with counts; ordered by nfeat, then nrec,
 * both descending, then id. */
typedef struct store_hw_count {
	int64_t id;
	const char *key;    /* valid during the callback */
	int64_t nrec;       /* measurements */
	int64_t nvalid;     /* valid ones */
	int64_t nfeat;      /* measurements with features of (kind, version);
	                       0 if kind is NULL */
} store_hw_count;
typedef int (*store_hw_count_cb)(void *ctx, const store_hw_count *h);
int store_hardware_counts(tk_store *s, const char *kind, int version, store_hw_count_cb cb,
                          void *ctx);

/* Add a model: kind ("xgb"), hardware_id (0 stores NULL), meta (key=value
 * lines, may be NULL) and data (the model file's contents, len bytes).
 * created is now. *id (may be NULL) receives the new id. */
int store_model_add(tk_store *s, const char *kind, int64_t hardware_id, const char *meta,
                    const void *data, size_t len, int64_t *id);

/* Every model in id order, without its data. */
typedef struct store_model {
	int64_t id, hardware_id;  /* hardware_id 0 if NULL */
	const char *kind, *meta;  /* meta "" if NULL */
	const char *hardware;     /* the hardware key, NULL if none */
	double created;
	int64_t size;             /* bytes of data */
} store_model;
typedef int (*store_model_cb)(void *ctx, const store_model *m);
int store_models(tk_store *s, store_model_cb cb, void *ctx);

/* The data of model id in a malloc'd *data (caller frees) of *len bytes;
 * TK_ENOTFOUND if there is no such model. */
int store_model_data(tk_store *s, int64_t id, void **data, size_t *len);

#endif
