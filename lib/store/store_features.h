/*
 * store_features: feature vectors in the record store (table feature:
 * config_id, kind, version, n, data = zlib of n little-endian float32), and
 * the configurations that still lack a kind of them. Functions return TK_OK
 * or an error code with tk_errmsg() set, as in store.h.
 */
#ifndef TK_STORE_FEATURES_H
#define TK_STORE_FEATURES_H

#include <stdint.h>

#include "store.h"

/* Store v[0..n) as the (kind, version) features of config_id, replacing
 * any stored before (INSERT OR REPLACE). n >= 0. TK_ESTORE on SQLite
 * failure, TK_ENOMEM. Call inside store_begin/store_commit to batch. */
int store_feature_put(tk_store *s, int64_t config_id, const char *kind, int version,
                      const float *v, int n);

/* The (kind, version) features of config_id: on success *v is a malloc'd
 * array the caller frees and *n its length. TK_ENOTFOUND (message set) if
 * there are none, TK_ECORRUPT if the stored BLOB does not hold n floats;
 * *v is NULL and *n 0 on any error. */
int store_feature_get(tk_store *s, int64_t config_id, const char *kind, int version,
                      float **v, int *n);

/* ---- configurations lacking features -------------------------------------------- */

/* One configuration to extract. Strings are owned by the iterator and valid
 * until the next call of store_feature_todo_next() or _free(). */
typedef struct store_fcfg {
	int64_t config_id;
	const char *task;    /* task key */
	const char *config;  /* configuration text */
	const char *space;   /* task.space: JSON of an imported space, NULL for templates */
} store_fcfg;

typedef struct store_ftodo store_ftodo;

/* Iterate, in config id order, over the configurations that have no
 * features of (kind, version):
 *   nmeas == 0    every configuration in the store, or with hardware_id
 *                 != 0 only those with a measurement on that hardware;
 *   nmeas > 0     the configurations of measurements meas_ids[0..nmeas)
 *                 (each once; with hardware_id != 0 only the measurements
 *                 on that hardware), TK_ENOTFOUND if an id is not a
 *                 measurement.
 * Rows are read a page at a time, so the caller may write features (and
 * commit) between calls; configurations that gain features after they were
 * paged in are still returned. On success *out is freed with
 * store_feature_todo_free(). */
int store_feature_todo_open(tk_store *s, const char *kind, int version, int64_t hardware_id,
                            const int64_t *meas_ids, int nmeas, store_ftodo **out);
/* The next configuration into *row, or *row = NULL at the end. */
int store_feature_todo_next(store_ftodo *it, const store_fcfg **row);
/* Counts taken when the iterator was opened: *scope the configurations the
 * selection names (with features or not), *missing those without. */
void store_feature_todo_counts(const store_ftodo *it, int64_t *scope, int64_t *missing);
void store_feature_todo_free(store_ftodo *it); /* NULL is allowed */

#endif
