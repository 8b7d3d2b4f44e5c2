/*
 * store_report: the lookups `tunekit report` and `tunekit export` make
 * besides the record queries of store.h: when a run started, which run is
 * the most recent, the best latency a task has reached on a hardware, and
 * a hardware row by id or key. All are read-only. Functions return TK_OK or
 * an error code with tk_errmsg() set, as in store.h.
 */
#ifndef TK_STORE_REPORT_H
#define TK_STORE_REPORT_H

#include <stdint.h>

#include "store.h"

/* When run run_id started (run.started, Unix seconds) into *started.
 * TK_ENOTFOUND ("no run ID") if there is no such run; TK_ESTORE. */
int store_run_started(tk_store *s, int64_t run_id, double *started);

/* The id of the most recent run (the highest id) into *run_id. TK_ENOTFOUND
 * ("the store has no runs") if there is none; TK_ESTORE. */
int store_run_latest(tk_store *s, int64_t *run_id);

/* The lowest median (seconds) of the valid measurements of task task_id on
 * hardware hardware_id that have a positive median, from any run, into
 * *median; -1 when there is none (that is not an error). TK_ESTORE. */
int store_task_best(tk_store *s, int64_t task_id, int64_t hardware_id, double *median);

/* Find a hardware row: by id when id > 0, otherwise by its key (NULL is
 * taken as ""). On TK_OK *id_out receives its id and *key_out, *spec_out
 * (either may be NULL) its key and target spec as malloc'd strings the
 * caller frees (*spec_out NULL when the store has no spec: imported
 * hardware). TK_ENOTFOUND ("no hardware ID in the store") when there is no
 * such row, TK_ESTORE, TK_ENOMEM; on error the strings are NULL. */
int store_hardware_find(tk_store *s, int64_t id, const char *key, int64_t *id_out,
                        char **key_out, char **spec_out);

#endif
