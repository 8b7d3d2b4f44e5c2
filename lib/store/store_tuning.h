/*
 * store_tuning: the queries of the tuning loop: run parameters (to resume
 * a run), the per-round log, and the lookups a replayed run answers its
 * measurements with.
 */
#ifndef TK_STORE_TUNING_H
#define TK_STORE_TUNING_H

#include <stdint.h>

#include "store.h"

/* Set / get run.params (key=value lines). get returns a malloc'd string
 * (NULL if unset) the caller frees; TK_ENOTFOUND for an unknown run. */
int store_run_set_params(tk_store *s, int64_t run_id, const char *params);
int store_run_params(tk_store *s, int64_t run_id, char **params);

/* The most recent run whose method starts with prefix and that has not
 * ended; TK_ENOTFOUND if none. */
int store_run_unfinished(tk_store *s, const char *prefix, int64_t *run_id);
/* Clear run.ended (a resumed run is running again). */
int store_run_reopen(tk_store *s, int64_t run_id);

/* Record one value of a round of a run (insert or replace). */
int store_run_log(tk_store *s, int64_t run_id, int round, const char *key, double value);

/* The values of run run_id's log whose keys start with prefix, ordered by
 * key then round: cb(ctx, round, key, value) for each (key valid during
 * the call); a non-zero return stops the query and is returned. */
typedef int (*store_log_cb)(void *ctx, int round, const char *key, double value);
int store_run_log_read(tk_store *s, int64_t run_id, const char *prefix, store_log_cb cb,
                       void *ctx);
/* run.method of run_id (malloc'd, the caller frees); TK_ENOTFOUND for an
 * unknown run. */
int store_run_method(tk_store *s, int64_t run_id, char **method);

/* Hardware ids that have measurements of the task with this key, with
 * their counts and keys, most records first. */
typedef int (*store_hwcount_cb)(void *ctx, int64_t hw_id, const char *hw_key, int64_t n);
int store_task_hardware(tk_store *s, const char *task_key, store_hwcount_cb cb, void *ctx);

/* The measurement that stands for (task key, config text) on hardware
 * hw_id, what a replay of it returns: of a configuration timed more than
 * once, its median valid record as store_best ranks it (the (n/2 + 1)-th
 * fastest), or its first record when none is valid; TK_ENOTFOUND when it
 * was never measured there. The record is passed to cb as in
 * store_meas_get, with compile_s the largest of the configuration's
 * records (a repeat timed from the kernel cache compiled nothing). */
int store_lookup(tk_store *s, const char *task_key, const char *config, int64_t hw_id,
                 store_rec_cb cb, void *ctx);

/* The distinct configuration texts of the task with this key measured on
 * hardware hw_id (valid or not), in the order first recorded: cb(ctx,
 * text) for each (text valid during the call); a non-zero return stops
 * the query and is returned. */
typedef int (*store_text_cb)(void *ctx, const char *text);
int store_task_configs(tk_store *s, const char *task_key, int64_t hw_id, store_text_cb cb,
                       void *ctx);

/* task.flops of the task with this key; TK_ENOTFOUND if unknown. */
int store_task_flops(tk_store *s, const char *task_key, double *flops);

/* task.space of the task with this key (malloc'd JSON, NULL for template
 * tasks), TK_ENOTFOUND if the task is unknown. */
int store_task_space_json(tk_store *s, const char *task_key, char **json);

#endif
