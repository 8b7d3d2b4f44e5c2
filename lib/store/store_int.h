/*
 * store_int: what the files of lib/store share and nothing outside it may
 * use (the white-box unit tests aside): the connection, statement helpers
 * and the SQLite-to-tunekit error mapping. Each group of queries lives in
 * its own file (store.c: open, runs and measurements; features.c;
 * foreign.c; models.c; report.c; tuning.c) on top of these. This is the
 * only header of tunekit that includes sqlite3.h.
 */
#ifndef TK_STORE_INT_H
#define TK_STORE_INT_H

#include <sqlite3.h>

#include "store.h"
#include "util/util.h"

/* The store's connection, owned by the store. Only lib/store and the
 * white-box unit tests (tests/unit) use it: every other module reads and
 * writes the store through the functions of the public store headers. */
sqlite3 *store_db(tk_store *s);
/* The path the store was opened with, for messages. */
const char *store_path(tk_store *s);

/* store_open() with URI filenames enabled on the connection when bUri is
 * set (path itself is still a plain file name), so that ATTACH can take
 * "file:...?mode=ro" (see merge.c). */
int store_open_uri(const char *path, int flags, int bUri, tk_store **out);
/* "file:PATH" with PATH's URI metacharacters escaped, then "?query" unless
 * query is NULL (malloc'd; NULL when out of memory). */
char *store_uri(const char *path, const char *query);

/* Map SQLite result code rc to TK_ESTORE / TK_ECORRUPT with the message set
 * from the connection. Call before resetting the failed statement. */
int store_err(tk_store *s, int rc);
/* A one-shot statement (finalize it yourself). */
int store_prepare(tk_store *s, const char *zSql, sqlite3_stmt **out);
/* SQLite's check pragma ("quick_check" or "integrity_check") of s:
 * TK_OK, or TK_ECORRUPT "PATH: record store is damaged (WHAT)" in one
 * line. */
int store_check_pragma(tk_store *s, const char *pragma);
/* Reset a statement and clear its bindings. */
void store_stmt_reset(sqlite3_stmt *st);
/* Step to the end ignoring rows, then reset. */
int store_step_done(tk_store *s, sqlite3_stmt *st);
/* Finalize a one-shot statement after its last step src: stop if nonzero,
 * else TK_OK on SQLITE_DONE or the store's error. */
int store_finalize(tk_store *s, sqlite3_stmt *st, int src, int stop);
/* Step once: column 0 into *id and *found = 1 on a row; reset. */
int store_step_id(tk_store *s, sqlite3_stmt *st, int64_t *id, int *found);
/* Step once: a malloc'd copy of text column 0 into *text (NULL for SQL
 * NULL; the caller frees it) and *found = 1 on a row; reset. */
int store_step_text(tk_store *s, sqlite3_stmt *st, char **text, int *found);
/* Execute SQL text without results. */
int store_exec_sql(tk_store *s, const char *zSql);
/* A query returning one integer. */
int store_query_int(tk_store *s, const char *zSql, int64_t *out);
/* A configuration's median record, one rule for store_best and
 * store_lookup: select STORE_MEDIAN_RANK(PART) with the columns of
 * measurement m to number each PART's records k of n by latency (ties by
 * id); the median is the row where STORE_IS_MEDIAN holds, the (n/2 + 1)-th
 * fastest (the slower middle one of an even count). */
#define STORE_MEDIAN_RANK(PART) \
	" ROW_NUMBER() OVER (PARTITION BY " PART " ORDER BY m.median, m.id) AS k," \
	" COUNT(*) OVER (PARTITION BY " PART ") AS n"
#define STORE_IS_MEDIAN " k = n / 2 + 1"

/* Bind text (NULL binds NULL) or an id (0 binds NULL), SQLITE_STATIC. */
void store_bind_text(sqlite3_stmt *st, int i, const char *z);
void store_bind_id(sqlite3_stmt *st, int i, int64_t id);

/* Feature and model BLOBs: zlib(compress2) of the raw little-endian float32
 * array, without a header (the count lives in its own column). Encode
 * returns a malloc'd buffer the caller frees; decode fills out[0..n) and
 * returns TK_ECORRUPT if the BLOB does not inflate to exactly n floats. */
int store_floats_encode(const float *v, int n, unsigned char **blob, int *len);
int store_floats_decode(const void *blob, int len, float *out, int n);

#endif
