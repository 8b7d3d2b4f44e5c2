/*
 * foreign: the store queries of the importers and the AutoTVM exporter
 * (store_import.h): foreign records (insert-or-ignore on (format, text),
 * counts by reason), the JSON space of imported tasks, the set of
 * configurations an earlier import already measured on a hardware, and all
 * records in export order. Statements are prepared per call: each of these
 * runs once per file or once per task, never per record.
 */
#include "store_int.h"
#include "store_import.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "../util/util.h"

int store_foreign_add(tk_store *s, const char *format, const char *source, int64_t line,
                      const char *reason, const char *text, int64_t run_id, int *added)
{
	sqlite3_stmt *st;
	int rc;

	assert(s && format && source && reason && text && added);
	*added = 0;
	rc = store_prepare(s, "INSERT INTO foreign_record(format, source, line, reason, text,"
	                      " run_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
	                      " ON CONFLICT(format, text) DO NOTHING", &st);
	if (rc)
		return rc;
	store_bind_text(st, 1, format);
	store_bind_text(st, 2, source);
	if (line > 0)
		sqlite3_bind_int64(st, 3, line);
	store_bind_text(st, 4, reason);
	store_bind_text(st, 5, text);
	store_bind_id(st, 6, run_id);
	rc = store_step_done(s, st);
	if (rc == TK_OK)
		*added = sqlite3_changes(store_db(s)) > 0;
	sqlite3_finalize(st);
	return rc;
}

int store_foreign_max_id(tk_store *s, int64_t *id)
{
	assert(s && id);
	return store_query_int(s, "SELECT coalesce(max(id), 0) FROM foreign_record", id);
}

int store_foreign_reasons(tk_store *s, const char *format, int64_t after_id,
                          store_reason_cb cb, void *ctx)
{
	sqlite3_stmt *st;
	int rc, stop = 0;

	assert(s && format && cb);
	rc = store_prepare(s, "SELECT reason, count(*) AS n FROM foreign_record"
	                      " WHERE format = ?1 AND id > ?2 GROUP BY reason"
	                      " ORDER BY n DESC, reason", &st);
	if (rc)
		return rc;
	store_bind_text(st, 1, format);
	sqlite3_bind_int64(st, 2, after_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if ((stop = cb(ctx, (const char *)sqlite3_column_text(st, 0),
		               sqlite3_column_int64(st, 1))) != 0)
			break;
	rc = stop ? stop : rc == SQLITE_DONE ? TK_OK : store_err(s, rc);
	sqlite3_finalize(st);
	return rc;
}

int store_task_space_set(tk_store *s, int64_t task_id, const char *json)
{
	sqlite3_stmt *st;
	int rc;

	assert(s);
	rc = store_prepare(s, "UPDATE task SET space = ?2 WHERE id = ?1", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, task_id);
	store_bind_text(st, 2, json);
	rc = store_step_done(s, st);
	if (rc == TK_OK && sqlite3_changes(store_db(s)) == 0)
		rc = tk_seterr(TK_ENOTFOUND, "no task %lld", (long long)task_id);
	sqlite3_finalize(st);
	return rc;
}

int store_task_space_get(tk_store *s, int64_t task_id, char **json)
{
	sqlite3_stmt *st;
	int rc;

	assert(s && json);
	*json = NULL;
	rc = store_prepare(s, "SELECT space FROM task WHERE id = ?1", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, task_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *z = (const char *)sqlite3_column_text(st, 0);
		rc = TK_OK;
		if (z && !(*json = strdup(z)))
			rc = tk_seterr(TK_ENOMEM, "out of memory");
	} else if (rc == SQLITE_DONE) {
		rc = tk_seterr(TK_ENOTFOUND, "no task %lld", (long long)task_id);
	} else {
		rc = store_err(s, rc);
	}
	sqlite3_finalize(st);
	return rc;
}

int store_imported_configs(tk_store *s, int64_t hardware_id, int64_t **ids, int64_t *n)
{
	sqlite3_stmt *st;
	int64_t *a = NULL, cap = 0, len = 0;
	int rc;

	assert(s && ids && n);
	*ids = NULL;
	*n = 0;
	rc = store_prepare(s, "SELECT DISTINCT m.config_id FROM measurement m"
	                      " JOIN run r ON r.id = m.run_id"
	                      " WHERE m.hardware_id = ?1 AND r.method LIKE 'import/%'"
	                      " ORDER BY m.config_id", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, hardware_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (len == cap) {
			int64_t *b = realloc(a, sizeof *a * (size_t)(cap = cap ? 2 * cap : 1024));
			if (!b) {
				rc = SQLITE_NOMEM;
				break;
			}
			a = b;
		}
		a[len++] = sqlite3_column_int64(st, 0);
	}
	if (rc == SQLITE_NOMEM)
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	else
		rc = rc == SQLITE_DONE ? TK_OK : store_err(s, rc);
	sqlite3_finalize(st);
	if (rc) {
		free(a);
		return rc;
	}
	*ids = a;
	*n = len;
	return TK_OK;
}

/* A REAL column, or dflt when NULL. */
static double col_real(sqlite3_stmt *st, int i, double dflt)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : sqlite3_column_double(st, i);
}

/* An INTEGER column, or dflt when NULL. */
static int64_t col_int(sqlite3_stmt *st, int i, int64_t dflt)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, i);
}

int store_records_all(tk_store *s, int64_t hardware_id, store_rec_cb cb, void *ctx)
{
	sqlite3_stmt *st;
	store_rec r;
	int rc, stop = 0;

	assert(s && cb);
	rc = store_prepare(s,
		"SELECT m.id, m.config_id, c.task_id, m.hardware_id, m.run_id, m.trial, m.valid,"
		" m.error, t.key, c.text, c.sched, h.key, m.message, c.idx, t.flops, m.mean,"
		" m.std, m.median, m.compile_s, m.at, m.number, m.nrepeat, m.load, h.kind,"
		" m.bounded"
		" FROM measurement m JOIN config c ON c.id = m.config_id"
		" JOIN task t ON t.id = c.task_id JOIN hardware h ON h.id = m.hardware_id"
		" WHERE ?1 = 0 OR m.hardware_id = ?1 ORDER BY t.key, h.key, m.id", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, hardware_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r.id = sqlite3_column_int64(st, 0);
		r.config_id = sqlite3_column_int64(st, 1);
		r.task_id = sqlite3_column_int64(st, 2);
		r.hardware_id = sqlite3_column_int64(st, 3);
		r.run_id = col_int(st, 4, 0);
		r.trial = (int)col_int(st, 5, -1);
		r.valid = sqlite3_column_int(st, 6);
		r.error = sqlite3_column_int(st, 7);
		r.task = (const char *)sqlite3_column_text(st, 8);
		r.config = (const char *)sqlite3_column_text(st, 9);
		r.sched = (const char *)sqlite3_column_text(st, 10);
		r.hardware = (const char *)sqlite3_column_text(st, 11);
		r.message = (const char *)sqlite3_column_text(st, 12);
		r.idx = col_int(st, 13, -1);
		r.flops = sqlite3_column_double(st, 14);
		r.mean = col_real(st, 15, -1);
		r.std = col_real(st, 16, -1);
		r.median = col_real(st, 17, -1);
		r.compile_s = col_real(st, 18, 0);
		r.at = sqlite3_column_double(st, 19);
		r.number = (int)col_int(st, 20, 0);
		r.nrepeat = (int)col_int(st, 21, 0);
		r.load = col_real(st, 22, -1);
		r.hw_kind = (const char *)sqlite3_column_text(st, 23);
		r.bounded = sqlite3_column_int(st, 24);
		if ((stop = cb(ctx, &r)) != 0)
			break;
	}
	rc = stop ? stop : rc == SQLITE_DONE ? TK_OK : store_err(s, rc);
	sqlite3_finalize(st);
	return rc;
}
