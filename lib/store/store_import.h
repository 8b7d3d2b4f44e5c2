/*
 * store_import: the queries of the importers and exporters of other tools'
 * records (lib/import): foreign records kept verbatim, the JSON space of an
 * imported task, which configurations an earlier import already measured,
 * and every record in export order. Implemented in foreign.c. Errors are
 * those of store.h: TK_ESTORE for SQLite failures, TK_ENOMEM, TK_ENOTFOUND
 * for absent ids.
 */
#ifndef TK_STORE_IMPORT_H
#define TK_STORE_IMPORT_H

#include <stdint.h>

#include "store.h"

/* Keep a record tunekit cannot interpret: format ("autotvm",
 * "kernel-tuner"), source file, line (or entry number, 0 if none), reason
 * and the record's text as it was; run_id 0 stores NULL. A record whose
 * (format, text) is already kept is left alone: *added is 1 if the row is
 * new, 0 if it was there. */
int store_foreign_add(tk_store *s, const char *format, const char *source, int64_t line,
                      const char *reason, const char *text, int64_t run_id, int *added);

/* The largest foreign_record id (0 if none), to count later additions. */
int store_foreign_max_id(tk_store *s, int64_t *id);

/* Count per reason of the foreign records of format with id > after_id,
 * most frequent first (ties by reason). The callback returns non-zero to
 * stop; that value is returned. */
typedef int (*store_reason_cb)(void *ctx, const char *reason, int64_t n);
int store_foreign_reasons(tk_store *s, const char *format, int64_t after_id,
                          store_reason_cb cb, void *ctx);

/* Set task.space (JSON text, NULL clears it). TK_ENOTFOUND if no task. */
int store_task_space_set(tk_store *s, int64_t task_id, const char *json);
/* task.space of task_id into *json (malloc'd, caller frees; NULL when the
 * column is NULL). TK_ENOTFOUND if no task. */
int store_task_space_get(tk_store *s, int64_t task_id, char **json);

/* The ids of the configurations that have a measurement on hardware_id from
 * a run whose method starts with "import/", ascending and distinct, in a
 * malloc'd array the caller frees (*ids NULL when *n is 0). An importer
 * loads this set before it adds anything, so that importing the same file
 * twice adds nothing. */
int store_imported_configs(tk_store *s, int64_t hardware_id, int64_t **ids, int64_t *n);

/* Every measurement of hardware_id (0: all) as store_recs, ordered by task
 * key, hardware key and measurement id. Strings are valid only during the
 * callback; the callback may use the store (times with store_meas_times). */
int store_records_all(tk_store *s, int64_t hardware_id, store_rec_cb cb, void *ctx);

#endif
