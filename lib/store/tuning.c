/*
 * tuning: store queries of the tuning loop (see store_tuning.h).
 */
#include "store_tuning.h"

#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "util/util.h"

int store_run_set_params(tk_store *s, int64_t run_id, const char *params)
{
	sqlite3_stmt *st;
	int rc = store_prepare(s, "UPDATE run SET params = ?2 WHERE id = ?1", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, run_id);
	store_bind_text(st, 2, params);
	rc = store_step_done(s, st);
	sqlite3_finalize(st);
	return rc;
}

/* A text column of run run_id, from one of the SELECTs below. */
static int run_text(tk_store *s, const char *zSql, int64_t run_id, char **out)
{
	sqlite3_stmt *st;
	*out = NULL;
	int rc = store_prepare(s, zSql, &st), found;
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, run_id);
	if (!(rc = store_step_text(s, st, out, &found)) && !found)
		rc = tk_seterr(TK_ENOTFOUND, "no run %lld", (long long)run_id);
	sqlite3_finalize(st);
	return rc;
}

int store_run_params(tk_store *s, int64_t run_id, char **params)
{
	return run_text(s, "SELECT params FROM run WHERE id = ?1", run_id, params);
}

int store_run_unfinished(tk_store *s, const char *prefix, int64_t *run_id)
{
	sqlite3_stmt *st;
	int found;
	int rc = store_prepare(s, "SELECT id FROM run WHERE ended IS NULL AND substr(method, 1, length(?1)) = ?1"
	                          " ORDER BY id DESC LIMIT 1", &st);
	if (rc)
		return rc;
	store_bind_text(st, 1, prefix);
	rc = store_step_id(s, st, run_id, &found);
	sqlite3_finalize(st);
	if (!rc && !found)
		rc = tk_seterr(TK_ENOTFOUND, "no unfinished %s run to resume", prefix);
	return rc;
}

int store_run_reopen(tk_store *s, int64_t run_id)
{
	sqlite3_stmt *st;
	int rc = store_prepare(s, "UPDATE run SET ended = NULL WHERE id = ?1", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, run_id);
	rc = store_step_done(s, st);
	sqlite3_finalize(st);
	return rc;
}

int store_run_log(tk_store *s, int64_t run_id, int round, const char *key, double value)
{
	sqlite3_stmt *st;
	int rc = store_prepare(s, "INSERT OR REPLACE INTO run_log(run_id, round, key, value)"
	                          " VALUES (?1, ?2, ?3, ?4)", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_int(st, 2, round);
	store_bind_text(st, 3, key);
	sqlite3_bind_double(st, 4, value);
	rc = store_step_done(s, st);
	sqlite3_finalize(st);
	return rc;
}

int store_run_log_read(tk_store *s, int64_t run_id, const char *prefix, store_log_cb cb,
                       void *ctx)
{
	sqlite3_stmt *st;
	int rc = store_prepare(s, "SELECT round, key, value FROM run_log WHERE run_id = ?1"
	                          " AND substr(key, 1, length(?2)) = ?2 ORDER BY key, round", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, run_id);
	store_bind_text(st, 2, prefix);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int stop = cb(ctx, sqlite3_column_int(st, 0), (const char *)sqlite3_column_text(st, 1),
		              sqlite3_column_double(st, 2));
		if (stop)
			return store_finalize(s, st, rc, stop);
	}
	return store_finalize(s, st, rc, 0);
}

int store_run_method(tk_store *s, int64_t run_id, char **method)
{
	return run_text(s, "SELECT method FROM run WHERE id = ?1", run_id, method);
}

int store_task_hardware(tk_store *s, const char *task_key, store_hwcount_cb cb, void *ctx)
{
	sqlite3_stmt *st;
	int rc = store_prepare(s,
		"SELECT m.hardware_id, h.key, COUNT(*) AS n FROM measurement m"
		" JOIN config c ON c.id = m.config_id JOIN task t ON t.id = c.task_id"
		" JOIN hardware h ON h.id = m.hardware_id WHERE t.key = ?1"
		" GROUP BY m.hardware_id ORDER BY n DESC, m.hardware_id", &st);
	if (rc)
		return rc;
	store_bind_text(st, 1, task_key);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int stop = cb(ctx, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
		              sqlite3_column_int64(st, 2));
		if (stop)
			return store_finalize(s, st, rc, stop);
	}
	return store_finalize(s, st, rc, 0);
}

/* store_lookup passes the chosen record with the configuration's
 * largest compile time */
typedef struct lookup_pass {
	store_rec_cb cb;
	void *ctx;
	double compile_s;
} lookup_pass;

static int lookup_rec(void *p, const store_rec *r)
{
	lookup_pass *L = p;
	store_rec rec = *r;
	rec.compile_s = L->compile_s;
	return L->cb(L->ctx, &rec);
}

int store_lookup(tk_store *s, const char *task_key, const char *config, int64_t hw_id,
                 store_rec_cb cb, void *ctx)
{
	sqlite3_stmt *st;
	int found;
	int64_t id;
	/* the median valid record, else the first record */
	int rc = store_prepare(s,
		"WITH r AS (SELECT m.id, m.valid, m.compile_s," STORE_MEDIAN_RANK("m.valid")
		" FROM measurement m JOIN config c ON c.id = m.config_id"
		" JOIN task t ON t.id = c.task_id"
		" WHERE t.key = ?1 AND c.text = ?2 AND m.hardware_id = ?3)"
		" SELECT id, (SELECT MAX(COALESCE(compile_s, 0)) FROM r) FROM r"
		" ORDER BY valid DESC, valid AND" STORE_IS_MEDIAN " DESC, id LIMIT 1", &st);
	if (rc)
		return rc;
	store_bind_text(st, 1, task_key);
	store_bind_text(st, 2, config);
	sqlite3_bind_int64(st, 3, hw_id);
	lookup_pass L = { cb, ctx, 0 };
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		found = 1;
		id = sqlite3_column_int64(st, 0);
		L.compile_s = sqlite3_column_double(st, 1);
		rc = SQLITE_DONE;
	} else {
		found = 0;
	}
	if ((rc = store_finalize(s, st, rc, 0)))
		return rc;
	if (!found)
		return TK_ENOTFOUND;
	return store_meas_get(s, id, lookup_rec, &L);
}

int store_task_configs(tk_store *s, const char *task_key, int64_t hw_id, store_text_cb cb,
                       void *ctx)
{
	sqlite3_stmt *st;
	int rc = store_prepare(s,
		"SELECT c.text FROM config c JOIN task t ON t.id = c.task_id"
		" JOIN measurement m ON m.config_id = c.id"
		" WHERE t.key = ?1 AND m.hardware_id = ?2 GROUP BY c.id ORDER BY min(m.id)", &st);
	if (rc)
		return rc;
	store_bind_text(st, 1, task_key);
	sqlite3_bind_int64(st, 2, hw_id);
	int src;
	while (!rc && (src = sqlite3_step(st)) == SQLITE_ROW)
		rc = cb(ctx, (const char *)sqlite3_column_text(st, 0));
	return store_finalize(s, st, src, rc);
}

int store_task_space_json(tk_store *s, const char *task_key, char **json)
{
	sqlite3_stmt *st;
	*json = NULL;
	int rc = store_prepare(s, "SELECT space FROM task WHERE key = ?1", &st);
	if (rc)
		return rc;
	store_bind_text(st, 1, task_key);
	int found;
	if (!(rc = store_step_text(s, st, json, &found)) && !found)
		rc = tk_seterr(TK_ENOTFOUND, "no task %s", task_key);
	sqlite3_finalize(st);
	return rc;
}

int store_task_flops(tk_store *s, const char *task_key, double *flops)
{
	sqlite3_stmt *st;
	int rc = store_prepare(s, "SELECT flops FROM task WHERE key = ?1", &st);
	if (rc)
		return rc;
	store_bind_text(st, 1, task_key);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*flops = sqlite3_column_double(st, 0);
		rc = TK_OK;
	} else if (rc == SQLITE_DONE) {
		rc = tk_seterr(TK_ENOTFOUND, "no task %s", task_key);
	} else {
		rc = store_err(s, rc);
	}
	sqlite3_finalize(st);
	return rc;
}
