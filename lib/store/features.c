/*
 * features: the feature table of the record store: put and get one vector
 * (zlib float32 BLOBs via store_floats_encode/decode), and the iterator over
 * configurations that lack a kind of features, which extract-features
 * walks. The iterator reads a page of rows at a time and resets its
 * statement between pages, so no statement is pending while the caller
 * writes and commits. Contracts are in store_features.h.
 */
#include "store_features.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define TODO_PAGE 256
#define FEATURE_MAXN (1 << 24) /* a larger n column is damage, not data */

int store_feature_put(tk_store *s, int64_t config_id, const char *kind, int version,
                      const float *v, int n)
{
	sqlite3_stmt *st;
	unsigned char *aBlob;
	int nBlob, rc;
	assert(s && kind && n >= 0 && (v || n == 0));
	if ((rc = store_floats_encode(v, n, &aBlob, &nBlob)))
		return rc;
	if ((rc = store_prepare(s, "INSERT OR REPLACE INTO feature (config_id, kind, version, n, data)"
	                           " VALUES (?1, ?2, ?3, ?4, ?5)", &st))) {
		free(aBlob);
		return rc;
	}
	sqlite3_bind_int64(st, 1, config_id);
	store_bind_text(st, 2, kind);
	sqlite3_bind_int(st, 3, version);
	sqlite3_bind_int(st, 4, n);
	sqlite3_bind_blob(st, 5, aBlob, nBlob, SQLITE_STATIC);
	rc = store_step_done(s, st);
	sqlite3_finalize(st);
	free(aBlob);
	return rc;
}

int store_feature_get(tk_store *s, int64_t config_id, const char *kind, int version,
                      float **v, int *n)
{
	sqlite3_stmt *st;
	int rc;
	assert(s && kind && v && n);
	*v = NULL;
	*n = 0;
	if ((rc = store_prepare(s, "SELECT n, data FROM feature"
	                           " WHERE config_id = ?1 AND kind = ?2 AND version = ?3", &st)))
		return rc;
	sqlite3_bind_int64(st, 1, config_id);
	store_bind_text(st, 2, kind);
	sqlite3_bind_int(st, 3, version);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		int64_t nv = sqlite3_column_int64(st, 0);
		const void *aBlob = sqlite3_column_blob(st, 1);
		int nBlob = sqlite3_column_bytes(st, 1);
		float *out;
		if (nv < 0 || nv > FEATURE_MAXN || sqlite3_column_type(st, 1) != SQLITE_BLOB) {
			rc = tk_seterr(TK_ECORRUPT, "damaged %s features of configuration %lld", kind,
			               (long long)config_id);
		} else if (!(out = malloc(sizeof *out * (size_t)(nv ? nv : 1)))) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
		} else if ((rc = store_floats_decode(aBlob, nBlob, out, (int)nv))) {
			free(out);
		} else {
			*v = out;
			*n = (int)nv;
		}
	} else if (rc == SQLITE_DONE) {
		rc = tk_seterr(TK_ENOTFOUND, "configuration %lld has no %s features (version %d)",
		               (long long)config_id, kind, version);
	} else {
		rc = store_err(s, rc);
	}
	sqlite3_finalize(st);
	return rc;
}

/* ---- the iterator -------------------------------------------------------------------- */

struct store_ftodo {
	tk_store *s;
	char *kind;
	int version;
	int64_t hw;
	sqlite3_stmt *page;   /* paged mode: the page query; NULL in list mode */
	int64_t after;        /* paged mode: last config id read */
	int done;             /* no rows beyond those in row[] */
	int n, pos, cap;
	store_fcfg *row;      /* each row's strings are one allocation at row.task */
	int64_t scope, missing;
};

#define TODO_WHERE \
	" (?4 = 0 OR EXISTS (SELECT 1 FROM measurement m" \
	"   WHERE m.config_id = c.id AND m.hardware_id = ?4))"
#define TODO_HAS \
	" EXISTS (SELECT 1 FROM feature f" \
	"   WHERE f.config_id = c.id AND f.kind = ?2 AND f.version = ?3)"
#define TODO_LACKS " NOT" TODO_HAS

static void rows_clear(store_ftodo *it)
{
	for (int i = 0; i < it->n; i++)
		free((char *)it->row[i].task);
	it->n = it->pos = 0;
}

/* Append a row, copying the strings (space may be NULL). */
static int row_add(store_ftodo *it, int64_t cid, const char *task, const char *config,
                   const char *space)
{
	if (it->n == it->cap) {
		int cap = it->cap ? 2 * it->cap : 64;
		store_fcfg *r = realloc(it->row, sizeof *r * (size_t)cap);
		if (!r)
			return tk_seterr(TK_ENOMEM, "out of memory");
		it->row = r;
		it->cap = cap;
	}
	size_t lt = strlen(task) + 1, lc = strlen(config) + 1, ls = space ? strlen(space) + 1 : 0;
	char *p = malloc(lt + lc + ls);
	if (!p)
		return tk_seterr(TK_ENOMEM, "out of memory");
	store_fcfg *r = &it->row[it->n++];
	r->config_id = cid;
	r->task = memcpy(p, task, lt);
	r->config = memcpy(p + lt, config, lc);
	r->space = space ? memcpy(p + lt + lc, space, ls) : NULL;
	return TK_OK;
}

static const char *col_text(sqlite3_stmt *st, int i)
{
	const char *z = (const char *)sqlite3_column_text(st, i);
	return z ? z : "";
}

static void bind_common(store_ftodo *it, sqlite3_stmt *st)
{
	store_bind_text(st, 2, it->kind);
	sqlite3_bind_int(st, 3, it->version);
	sqlite3_bind_int64(st, 4, it->hw);
}

static int fetch_page(store_ftodo *it)
{
	int rc, got = 0;
	rows_clear(it);
	sqlite3_bind_int64(it->page, 1, it->after);
	bind_common(it, it->page);
	sqlite3_bind_int(it->page, 5, TODO_PAGE);
	while ((rc = sqlite3_step(it->page)) == SQLITE_ROW) {
		int64_t cid = sqlite3_column_int64(it->page, 0);
		const char *space = (const char *)sqlite3_column_text(it->page, 3);
		got++;
		it->after = cid;
		if ((rc = row_add(it, cid, col_text(it->page, 1), col_text(it->page, 2), space))) {
			store_stmt_reset(it->page);
			return rc;
		}
	}
	rc = rc == SQLITE_DONE ? TK_OK : store_err(it->s, rc);
	store_stmt_reset(it->page);
	if (got < TODO_PAGE)
		it->done = 1;
	return rc;
}

static int count_query(store_ftodo *it, const char *zSql, int64_t *out)
{
	sqlite3_stmt *st;
	int found, rc = store_prepare(it->s, zSql, &st);
	if (rc)
		return rc;
	bind_common(it, st);
	rc = store_step_id(it->s, st, out, &found);
	sqlite3_finalize(st);
	return rc;
}

typedef struct idpos {
	int64_t id;
	int pos;
} idpos;

static int cmp_id(const void *a, const void *b)
{
	const idpos *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

static int cmp_pos(const void *a, const void *b)
{
	const idpos *x = a, *y = b;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

/* List mode: the configurations of the measurements, each once in the order
 * of its first appearance, all read now. */
static int open_list(store_ftodo *it, const int64_t *meas_ids, int nmeas)
{
	sqlite3_stmt *sm = NULL, *sc = NULL;
	idpos *cfg = malloc(sizeof *cfg * (size_t)nmeas);
	int ncfg = 0, rc;
	if (!cfg)
		return tk_seterr(TK_ENOMEM, "out of memory");
	if ((rc = store_prepare(it->s, "SELECT config_id, hardware_id FROM measurement WHERE id = ?1",
	                        &sm)) ||
	    (rc = store_prepare(it->s,
	                        "SELECT t.key, c.text, t.space," TODO_HAS
	                        " FROM config c JOIN task t ON t.id = c.task_id WHERE c.id = ?1",
	                        &sc)))
		goto out;
	for (int i = 0; i < nmeas; i++) {
		sqlite3_bind_int64(sm, 1, meas_ids[i]);
		rc = sqlite3_step(sm);
		if (rc == SQLITE_ROW) {
			int64_t cid = sqlite3_column_int64(sm, 0), hw = sqlite3_column_int64(sm, 1);
			if (!it->hw || hw == it->hw)
				cfg[ncfg++] = (idpos){ cid, i };
			rc = TK_OK;
		} else if (rc == SQLITE_DONE) {
			rc = tk_seterr(TK_ENOTFOUND, "no measurement with id %lld", (long long)meas_ids[i]);
		} else {
			rc = store_err(it->s, rc);
		}
		store_stmt_reset(sm);
		if (rc)
			goto out;
	}
	qsort(cfg, (size_t)ncfg, sizeof *cfg, cmp_id);
	int m = 0;
	for (int i = 0; i < ncfg; i++)
		if (!m || cfg[m - 1].id != cfg[i].id)
			cfg[m++] = cfg[i];
	qsort(cfg, (size_t)m, sizeof *cfg, cmp_pos);
	for (int i = 0; i < m && !rc; i++) {
		sqlite3_bind_int64(sc, 1, cfg[i].id);
		bind_common(it, sc);
		rc = sqlite3_step(sc);
		if (rc == SQLITE_ROW) {
			it->scope++;
			rc = TK_OK;
			if (!sqlite3_column_int(sc, 3)) {
				it->missing++;
				rc = row_add(it, cfg[i].id, col_text(sc, 0), col_text(sc, 1),
				             (const char *)sqlite3_column_text(sc, 2));
			}
		} else {
			rc = rc == SQLITE_DONE ? tk_seterr(TK_ECORRUPT, "configuration %lld is missing",
			                                   (long long)cfg[i].id)
			                       : store_err(it->s, rc);
		}
		store_stmt_reset(sc);
	}
	it->done = 1;
out:
	sqlite3_finalize(sm);
	sqlite3_finalize(sc);
	free(cfg);
	return rc;
}

int store_feature_todo_open(tk_store *s, const char *kind, int version, int64_t hardware_id,
                            const int64_t *meas_ids, int nmeas, store_ftodo **out)
{
	int rc;
	assert(s && kind && out && nmeas >= 0 && (meas_ids || nmeas == 0));
	*out = NULL;
	store_ftodo *it = calloc(1, sizeof *it);
	if (!it || !(it->kind = strdup(kind))) {
		free(it);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	it->s = s;
	it->version = version;
	it->hw = hardware_id;
	if (nmeas > 0) {
		rc = open_list(it, meas_ids, nmeas);
	} else if (!(rc = count_query(it, "SELECT COUNT(*) FROM config c WHERE" TODO_WHERE,
	                              &it->scope)) &&
	           !(rc = count_query(it, "SELECT COUNT(*) FROM config c WHERE" TODO_WHERE
	                                  " AND" TODO_LACKS, &it->missing))) {
		rc = store_prepare(s, "SELECT c.id, t.key, c.text, t.space"
		                      " FROM config c JOIN task t ON t.id = c.task_id"
		                      " WHERE c.id > ?1 AND" TODO_WHERE " AND" TODO_LACKS
		                      " ORDER BY c.id LIMIT ?5", &it->page);
	}
	if (rc) {
		store_feature_todo_free(it);
		return rc;
	}
	*out = it;
	return TK_OK;
}

int store_feature_todo_next(store_ftodo *it, const store_fcfg **row)
{
	int rc;
	assert(it && row);
	*row = NULL;
	if (it->pos == it->n) {
		if (it->done)
			return TK_OK;
		if ((rc = fetch_page(it)))
			return rc;
		if (it->n == 0)
			return TK_OK;
	}
	*row = &it->row[it->pos++];
	return TK_OK;
}

void store_feature_todo_counts(const store_ftodo *it, int64_t *scope, int64_t *missing)
{
	*scope = it->scope;
	*missing = it->missing;
}

void store_feature_todo_free(store_ftodo *it)
{
	if (!it)
		return;
	rows_clear(it);
	free(it->row);
	sqlite3_finalize(it->page);
	free(it->kind);
	free(it);
}
