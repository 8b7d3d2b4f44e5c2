/*
 * report: store lookups of `tunekit report` and `tunekit export` (see
 * store_report.h): a run's start and method, the latest run, a task's best latency on
 * a hardware, a hardware row, the hardware list.
 */
#include "store_report.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "util/util.h"

int store_run_info(tk_store *s, int64_t run_id, double *started, char *method, size_t size)
{
	sqlite3_stmt *st;
	int rc;

	assert(s && started);
	if ((rc = store_prepare(s, "SELECT started, method FROM run WHERE id = ?1", &st)))
		return rc;
	sqlite3_bind_int64(st, 1, run_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*started = sqlite3_column_double(st, 0);
		if (method && size) {
			const char *m = (const char *)sqlite3_column_text(st, 1);
			snprintf(method, size, "%s", m ? m : "");
		}
		rc = TK_OK;
	} else if (rc == SQLITE_DONE) {
		rc = tk_seterr(TK_ENOTFOUND, "no run %lld", (long long)run_id);
	} else {
		rc = store_err(s, rc);
	}
	sqlite3_finalize(st);
	return rc;
}

int store_run_latest(tk_store *s, int64_t *run_id)
{
	sqlite3_stmt *st;
	int rc;

	assert(s && run_id);
	if ((rc = store_prepare(s, "SELECT MAX(id) FROM run", &st)))
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		*run_id = sqlite3_column_int64(st, 0);
		rc = TK_OK;
	} else if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
		rc = tk_seterr(TK_ENOTFOUND, "the store has no runs");
	} else {
		rc = store_err(s, rc);
	}
	sqlite3_finalize(st);
	return rc;
}

int store_task_best(tk_store *s, int64_t task_id, int64_t hardware_id, double *median)
{
	sqlite3_stmt *st;
	int rc;

	assert(s && median);
	*median = -1;
	if ((rc = store_prepare(s,
	        "SELECT MIN(m.median) FROM measurement m JOIN config c ON c.id = m.config_id"
	        " WHERE c.task_id = ?1 AND m.hardware_id = ?2 AND m.valid AND m.median > 0"
	        " AND NOT m.bounded",
	        &st)))
		return rc;
	sqlite3_bind_int64(st, 1, task_id);
	sqlite3_bind_int64(st, 2, hardware_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		if (sqlite3_column_type(st, 0) != SQLITE_NULL)
			*median = sqlite3_column_double(st, 0);
		rc = TK_OK;
	} else {
		rc = rc == SQLITE_DONE ? TK_OK : store_err(s, rc);
	}
	sqlite3_finalize(st);
	return rc;
}

/* A malloc'd copy of text column col, NULL for SQL NULL; *oom set when the
 * copy fails. */
static char *col_dup(sqlite3_stmt *st, int col, int *oom)
{
	const char *z = (const char *)sqlite3_column_text(st, col);
	char *d;
	if (!z)
		return NULL;
	if (!(d = strdup(z)))
		*oom = 1;
	return d;
}

int store_hardware_find(tk_store *s, int64_t id, const char *key, int64_t *id_out,
                        char **key_out, char **spec_out)
{
	sqlite3_stmt *st;
	char *zKey = NULL, *zSpec = NULL;
	int rc, oom = 0;

	assert(s && id_out);
	if (key_out)
		*key_out = NULL;
	if (spec_out)
		*spec_out = NULL;
	if ((rc = store_prepare(s, id > 0 ? "SELECT id, key, spec FROM hardware WHERE id = ?1"
	                                  : "SELECT id, key, spec FROM hardware WHERE key = ?1",
	                        &st)))
		return rc;
	if (id > 0)
		sqlite3_bind_int64(st, 1, id);
	else
		store_bind_text(st, 1, key ? key : "");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*id_out = sqlite3_column_int64(st, 0);
		if (key_out)
			zKey = col_dup(st, 1, &oom);
		if (spec_out)
			zSpec = col_dup(st, 2, &oom);
		rc = oom ? tk_seterr(TK_ENOMEM, "out of memory") : TK_OK;
	} else if (rc == SQLITE_DONE) {
		rc = id > 0 ? tk_seterr(TK_ENOTFOUND, "no hardware %lld in the store", (long long)id)
		            : tk_seterr(TK_ENOTFOUND, "no hardware '%s' in the store", key ? key : "");
	} else {
		rc = store_err(s, rc);
	}
	sqlite3_finalize(st);
	if (rc) {
		free(zKey);
		free(zSpec);
	} else {
		if (key_out)
			*key_out = zKey;
		if (spec_out)
			*spec_out = zSpec;
	}
	return rc;
}

int store_hardware_list(tk_store *s, int64_t hardware_id, store_hw_cb cb, void *ctx)
{
	sqlite3_stmt *st;
	store_hwinfo h;
	int rc, stop = 0;

	assert(s && cb);
	if ((rc = store_prepare(s,
		"SELECT h.id, h.key, h.kind, h.spec, count(m.id), count(CASE WHEN m.valid THEN 1 END),"
		" count(DISTINCT c.task_id)"
		" FROM hardware h LEFT JOIN measurement m ON m.hardware_id = h.id"
		" LEFT JOIN config c ON c.id = m.config_id"
		" WHERE ?1 <= 0 OR h.id = ?1 GROUP BY h.id ORDER BY h.id", &st)))
		return rc;
	sqlite3_bind_int64(st, 1, hardware_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		h.id = sqlite3_column_int64(st, 0);
		h.key = (const char *)sqlite3_column_text(st, 1);
		h.kind = (const char *)sqlite3_column_text(st, 2);
		h.spec = (const char *)sqlite3_column_text(st, 3);
		h.nrec = sqlite3_column_int64(st, 4);
		h.nvalid = sqlite3_column_int64(st, 5);
		h.ntask = sqlite3_column_int64(st, 6);
		if ((stop = cb(ctx, &h)) != 0)
			break;
	}
	return store_finalize(s, st, rc, stop);
}
