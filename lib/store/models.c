/*
 * models: the store queries cost models need (contracts in store_models.h):
 * training rows, measurements joined with task and feature vector, decoded
 * from their zlib float32 BLOBs into one reused buffer; per-hardware record
 * counts for choosing what to train on; and the model table. A list of
 * measurement ids reaches SQL as one JSON array bound to json_each(), so a
 * record stream of any length is one statement.
 */
#include "store_models.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "../util/util.h"

/* ---- training rows ------------------------------------------------------- */

/* One row per configuration and hardware from the records r (its
 * measurements, all or the ones asked for): valid if any record is, its
 * latency the median of the valid records' (the mean of the middle two
 * for an even count), its id the first record's. A configuration timed
 * again at other times gets a steadier label, not a second row that
 * contradicts the first. k numbers a configuration's records valid ones
 * first, fastest first; nv counts the valid ones. */
#define TRAIN_RANKED(where) \
	"WITH r AS (SELECT m.id, m.config_id, m.hardware_id, m.median," \
	" row_number() OVER (PARTITION BY m.config_id, m.hardware_id" \
	"  ORDER BY (m.valid AND m.median > 0) DESC, m.median, m.id) AS k," \
	" sum(m.valid AND m.median > 0) OVER (PARTITION BY m.config_id, m.hardware_id) AS nv," \
	" min(m.id) OVER (PARTITION BY m.config_id, m.hardware_id) AS first" \
	" FROM measurement m WHERE " where ")"
#define TRAIN_SELECT \
	" SELECT r.first, t.id, c.id, r.hardware_id, t.key, t.flops, r.nv > 0," \
	" CASE WHEN r.nv > 0 THEN avg(r.median) END, f.n, f.data" \
	" FROM r JOIN config c ON c.id = r.config_id JOIN task t ON t.id = c.task_id"
#define TRAIN_MEDIAN \
	" WHERE (r.nv = 0 AND r.k = 1) OR (r.nv > 0 AND r.k IN ((r.nv + 1) / 2, r.nv / 2 + 1))" \
	" GROUP BY r.config_id, r.hardware_id ORDER BY t.id, r.first"

/* ids as a JSON array "[1,2,3]" (malloc'd), or NULL on out of memory. */
static char *ids_json(const int64_t *ids, int nid)
{
	tk_sb sb;
	tk_sb_init(&sb);
	tk_sb_putc(&sb, '[');
	for (int i = 0; i < nid; i++)
		tk_sb_printf(&sb, "%s%lld", i ? "," : "", (long long)ids[i]);
	tk_sb_putc(&sb, ']');
	return tk_sb_take(&sb);
}

int store_train_rows(tk_store *s, int64_t hardware_id, const char *kind, int version,
                     const int64_t *ids, int nid, store_train_cb cb, void *ctx)
{
	sqlite3_stmt *st;
	char *json = NULL;
	float *x = NULL;
	int cap = 0, rc, err = TK_OK, stop = 0;

	assert(s && kind && cb && nid >= 0 && (ids || nid == 0));
	if (ids) {
		if (!(json = ids_json(ids, nid)))
			return tk_seterr(TK_ENOMEM, "out of memory");
		rc = store_prepare(s,
			TRAIN_RANKED("m.id IN (SELECT value FROM json_each(?4))"
			             " AND (?1 = 0 OR m.hardware_id = ?1)")
			TRAIN_SELECT
			" LEFT JOIN feature f ON f.config_id = c.id AND f.kind = ?2 AND f.version = ?3"
			TRAIN_MEDIAN, &st);
	} else {
		rc = store_prepare(s,
			TRAIN_RANKED("(?1 = 0 OR m.hardware_id = ?1)")
			TRAIN_SELECT
			" JOIN feature f ON f.config_id = c.id AND f.kind = ?2 AND f.version = ?3"
			TRAIN_MEDIAN, &st);
	}
	if (rc) {
		free(json);
		return rc;
	}
	sqlite3_bind_int64(st, 1, hardware_id);
	store_bind_text(st, 2, kind);
	sqlite3_bind_int(st, 3, version);
	if (json)
		store_bind_text(st, 4, json);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		store_train_row r;
		r.meas_id = sqlite3_column_int64(st, 0);
		r.task_id = sqlite3_column_int64(st, 1);
		r.config_id = sqlite3_column_int64(st, 2);
		r.hardware_id = sqlite3_column_int64(st, 3);
		r.task = (const char *)sqlite3_column_text(st, 4);
		r.flops = sqlite3_column_double(st, 5);
		r.median = sqlite3_column_type(st, 7) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 7);
		r.valid = sqlite3_column_int(st, 6) && r.median > 0;
		if (!r.valid)
			r.median = -1;
		r.n = sqlite3_column_type(st, 8) == SQLITE_NULL ? 0 : sqlite3_column_int(st, 8);
		r.x = NULL;
		if (sqlite3_column_type(st, 9) == SQLITE_NULL)
			r.n = 0;
		if (r.n < 0 || r.n > (1 << 24)) {
			err = tk_seterr(TK_ECORRUPT, "feature of configuration %lld: bad length %d",
			                (long long)r.config_id, r.n);
			break;
		}
		if (r.n > 0) {
			if (r.n > cap) {
				float *nx = realloc(x, sizeof *nx * (size_t)r.n);
				if (!nx) {
					err = tk_seterr(TK_ENOMEM, "out of memory");
					break;
				}
				x = nx;
				cap = r.n;
			}
			err = store_floats_decode(sqlite3_column_blob(st, 9), sqlite3_column_bytes(st, 9),
			                          x, r.n);
			if (err) {
				char msg[256];
				snprintf(msg, sizeof msg, "%s", tk_errmsg());
				tk_seterr(err, "configuration %lld: %s", (long long)r.config_id, msg);
				break;
			}
			r.x = x;
		}
		if ((stop = cb(ctx, &r)) != 0)
			break;
	}
	if (err)
		rc = err;
	else if (stop)
		rc = stop;
	else
		rc = rc == SQLITE_DONE ? TK_OK : store_err(s, rc);
	sqlite3_finalize(st);
	free(json);
	free(x);
	return rc;
}

/* ---- hardware ------------------------------------------------------------ */

int store_hardware_counts(tk_store *s, const char *kind, int version, store_hw_count_cb cb,
                          void *ctx)
{
	sqlite3_stmt *st;
	int rc, stop = 0;

	assert(s && cb);
	rc = store_prepare(s,
		"SELECT h.id, h.key, count(*), count(CASE WHEN m.valid THEN 1 END),"
		" count(f.config_id)"
		" FROM measurement m JOIN hardware h ON h.id = m.hardware_id"
		" LEFT JOIN feature f ON f.config_id = m.config_id AND f.kind = ?1 AND f.version = ?2"
		" GROUP BY h.id ORDER BY 5 DESC, 3 DESC, h.id", &st);
	if (rc)
		return rc;
	store_bind_text(st, 1, kind);
	sqlite3_bind_int(st, 2, version);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		store_hw_count h;
		h.id = sqlite3_column_int64(st, 0);
		h.key = (const char *)sqlite3_column_text(st, 1);
		h.nrec = sqlite3_column_int64(st, 2);
		h.nvalid = sqlite3_column_int64(st, 3);
		h.nfeat = sqlite3_column_int64(st, 4);
		if ((stop = cb(ctx, &h)) != 0)
			break;
	}
	return store_finalize(s, st, rc, stop);
}

/* ---- models -------------------------------------------------------------- */

int store_model_add(tk_store *s, const char *kind, int64_t hardware_id, const char *meta,
                    const void *data, size_t len, int64_t *id)
{
	sqlite3_stmt *st;
	int rc;

	assert(s && kind && (data || len == 0));
	if (len > 0x7fffffff)
		return tk_seterr(TK_EINVAL, "model of %zu bytes is too large for the store", len);
	rc = store_prepare(s,
		"INSERT INTO model(kind, hardware_id, created, meta, data)"
		" VALUES (?1, ?2, ?3, ?4, ?5)", &st);
	if (rc)
		return rc;
	store_bind_text(st, 1, kind);
	store_bind_id(st, 2, hardware_id);
	sqlite3_bind_double(st, 3, tk_walltime());
	store_bind_text(st, 4, meta);
	sqlite3_bind_blob(st, 5, data ? data : "", (int)len, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		rc = TK_OK;
		if (id)
			*id = sqlite3_last_insert_rowid(store_db(s));
	} else {
		rc = store_err(s, rc);
	}
	sqlite3_finalize(st);
	return rc;
}

int store_models(tk_store *s, store_model_cb cb, void *ctx)
{
	sqlite3_stmt *st;
	int rc, stop = 0;

	assert(s && cb);
	rc = store_prepare(s,
		"SELECT m.id, m.hardware_id, m.kind, m.meta, h.key, m.created, length(m.data)"
		" FROM model m LEFT JOIN hardware h ON h.id = m.hardware_id ORDER BY m.id", &st);
	if (rc)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		store_model m;
		m.id = sqlite3_column_int64(st, 0);
		m.hardware_id = sqlite3_column_type(st, 1) == SQLITE_NULL ? 0
		                                                          : sqlite3_column_int64(st, 1);
		m.kind = (const char *)sqlite3_column_text(st, 2);
		m.meta = sqlite3_column_type(st, 3) == SQLITE_NULL
		             ? "" : (const char *)sqlite3_column_text(st, 3);
		m.hardware = (const char *)sqlite3_column_text(st, 4);
		m.created = sqlite3_column_double(st, 5);
		m.size = sqlite3_column_int64(st, 6);
		if ((stop = cb(ctx, &m)) != 0)
			break;
	}
	return store_finalize(s, st, rc, stop);
}

int store_model_data(tk_store *s, int64_t id, void **data, size_t *len)
{
	sqlite3_stmt *st;
	int rc;

	assert(s && data && len);
	*data = NULL;
	*len = 0;
	rc = store_prepare(s, "SELECT data FROM model WHERE id = ?1", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		int n = sqlite3_column_bytes(st, 0);
		const void *b = sqlite3_column_blob(st, 0);
		if (!(*data = malloc(n > 0 ? (size_t)n : 1))) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
		} else {
			if (n > 0)
				memcpy(*data, b, (size_t)n);
			*len = (size_t)n;
			rc = TK_OK;
		}
	} else if (rc == SQLITE_DONE) {
		rc = tk_seterr(TK_ENOTFOUND, "no model %lld", (long long)id);
	} else {
		rc = store_err(s, rc);
	}
	sqlite3_finalize(st);
	return rc;
}
