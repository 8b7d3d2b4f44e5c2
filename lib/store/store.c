/*
 * store: the SQLite record store every tunekit subcommand shares. This file
 * opens a store (creating the schema in an empty file, migrating an older one
 * forward, refusing files that are not tunekit stores), wraps the
 * get-or-create inserts for hardware, tasks and configurations, records runs
 * and measurements (repeat times as a zlib-compressed float64 BLOB), and
 * answers the queries the commands need: one record, a run's records, the
 * best record per (task, hardware) and a summary of every run. The hot
 * statements are prepared once per connection and cached in struct
 * tk_store; query functions that call back into the caller prepare their own
 * statement so that a callback may use the store again. The contracts are in
 * store.h.
 */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include "store_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <sqlite3.h>
#include <zlib.h>

#include "../util/util.h"

extern const char tk_schema_sql[]; /* schemas/store.sql, see the Makefile */

/*
 * Migrations, indexed by the version they start from: migrations[v] takes a
 * store from version v to v + 1 and runs in the same transaction that sets
 * user_version. An empty file (version 0) does not walk the chain: it gets
 * the current schema, tk_schema_sql, in one step, so entry 0 is never run and
 * schemas/store.sql must always equal version 1 plus every later migration.
 * Version 2 adds entry [1], version 3 entry [2], version 4 entry [3].
 */
static const char *const migrations[] = {
	NULL, /* 0 -> STORE_VERSION: tk_schema_sql */
	/* 1 -> 2: the tuning loop */
	"ALTER TABLE run ADD COLUMN params TEXT;"
	"CREATE TABLE run_log (run_id INTEGER NOT NULL REFERENCES run(id),"
	" round INTEGER NOT NULL, key TEXT NOT NULL, value REAL,"
	" PRIMARY KEY (run_id, round, key));"
	"CREATE TABLE foreign_record (id INTEGER PRIMARY KEY, format TEXT NOT NULL,"
	" source TEXT NOT NULL, line INTEGER, reason TEXT NOT NULL, text TEXT NOT NULL,"
	" run_id INTEGER REFERENCES run(id), UNIQUE (format, text));",
	/* 2 -> 3: the load the measurement was taken under */
	"ALTER TABLE measurement ADD COLUMN load REAL;",
	/* 3 -> 4: bounded timing; every older record was timed in full */
	"ALTER TABLE measurement ADD COLUMN bounded INTEGER NOT NULL DEFAULT 0;",
};
_Static_assert(ArraySize(migrations) == STORE_VERSION,
               "one migration per version step");

/* Statements prepared once per connection (SQLITE_PREPARE_PERSISTENT). */
enum {
	ST_HW_INSERT,
	ST_HW_SELECT,
	ST_TASK_INSERT,
	ST_TASK_SELECT,
	ST_CONFIG_INSERT,
	ST_CONFIG_SELECT,
	ST_RUN_INSERT,
	ST_RUN_END,
	ST_MEAS_INSERT,
	ST_MEAS_TIMES,
	ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
	[ST_HW_INSERT] =
		"INSERT INTO hardware(key, kind, cpu, isa, cc, threads, spec)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
		" ON CONFLICT(key) DO NOTHING RETURNING id",
	[ST_HW_SELECT] = "SELECT id FROM hardware WHERE key = ?1",
	[ST_TASK_INSERT] =
		"INSERT INTO task(key, op, flops) VALUES (?1, ?2, ?3)"
		" ON CONFLICT(key) DO NOTHING RETURNING id",
	[ST_TASK_SELECT] = "SELECT id FROM task WHERE key = ?1",
	[ST_CONFIG_INSERT] =
		"INSERT INTO config(task_id, idx, text, sched) VALUES (?1, ?2, ?3, ?4)"
		" ON CONFLICT(task_id, text) DO NOTHING RETURNING id",
	[ST_CONFIG_SELECT] = "SELECT id FROM config WHERE task_id = ?1 AND text = ?2",
	[ST_RUN_INSERT] =
		"INSERT INTO run(argv, method, seed, hardware_id, replay, started)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[ST_RUN_END] = "UPDATE run SET ended = ?2 WHERE id = ?1",
	[ST_MEAS_INSERT] =
		"INSERT INTO measurement(config_id, hardware_id, run_id, trial, valid,"
		" error, message, mean, std, median, number, nrepeat, times, compile_s, at, load,"
		" bounded)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
	[ST_MEAS_TIMES] = "SELECT times, nrepeat FROM measurement WHERE id = ?1",
};

struct tk_store {
	sqlite3 *db;
	char *zPath;                    /* as given to store_open, for messages */
	sqlite3_stmt *aStmt[ST_COUNT];  /* prepared on first use */
	int lockfd;                     /* PATH-lock, holding the runs this
	                                   connection owns; -1 until the first */
};

/* ---- errors --------------------------------------------------------- */

/* 1 if the filesystem holding path (or, when path does not exist, its
 * directory) is mounted read-only. */
static int on_readonly_fs(const char *path)
{
	struct statvfs sv;
	char dir[4096];
	if (statvfs(path, &sv) == 0)
		return (sv.f_flag & ST_RDONLY) != 0;
	tk_dirname(dir, sizeof dir, path);
	return statvfs(dir, &sv) == 0 && (sv.f_flag & ST_RDONLY) != 0;
}

/* Map an SQLite result code to a tunekit one and set the message from the
 * connection's last error. Call before resetting the failed statement. */
int store_err(tk_store *s, int rc)
{
	const char *zMsg = s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
	int e = s->db ? sqlite3_system_errno(s->db) : 0;
	/* Conditions of the machine, not of the store: an I/O error (exit 1),
	 * named as the manual names them. */
	int prim = rc & 0xff, io = prim == SQLITE_IOERR || prim == SQLITE_FULL ||
	                           prim == SQLITE_CANTOPEN || prim == SQLITE_READONLY;
	if (prim == SQLITE_FULL || (io && (e == ENOSPC || e == EDQUOT)))
		return tk_seterr(TK_EIO, "%s: disk full (%s)", s->zPath,
		                 e == EDQUOT ? "quota exceeded" : "no space left on the device");
	if (io && (e == EROFS || on_readonly_fs(s->zPath)))
		return tk_seterr(TK_EIO, "%s: the record store is on a read-only filesystem",
		                 s->zPath);
	switch (rc & 0xff) {
	case SQLITE_NOTADB:
		return tk_seterr(TK_ECORRUPT,
		                 "%s: not a tunekit record store (not an SQLite database)",
		                 s->zPath);
	case SQLITE_CORRUPT:
		return tk_seterr(TK_ECORRUPT, "%s: record store is damaged (%s)",
		                 s->zPath, zMsg);
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return tk_seterr(TK_ESTORE, "%s: database is locked", s->zPath);
	case SQLITE_CANTOPEN: {
		return tk_seterr(TK_ESTORE, "%s: cannot open record store: %s", s->zPath,
		                 e ? strerror(e) : zMsg);
	}
	}
	return tk_seterr(TK_ESTORE, "%s: %s", s->zPath, zMsg);
}

/* ---- statements ----------------------------------------------------- */

/* The cached statement i, reset and ready to bind. */
static int stmt_get(tk_store *s, int i, sqlite3_stmt **out)
{
	assert(i >= 0 && i < ST_COUNT);
	if (!s->aStmt[i]) {
		int rc = sqlite3_prepare_v3(s->db, stmt_sql[i], -1,
		                            SQLITE_PREPARE_PERSISTENT, &s->aStmt[i], NULL);
		if (rc != SQLITE_OK)
			return store_err(s, rc);
	}
	*out = s->aStmt[i];
	return TK_OK;
}

/* A one-shot statement for queries whose callbacks may re-enter the store. */
int store_prepare(tk_store *s, const char *zSql, sqlite3_stmt **out)
{
	int rc = sqlite3_prepare_v2(s->db, zSql, -1, out, NULL);
	return rc == SQLITE_OK ? TK_OK : store_err(s, rc);
}

/* Make a cached statement ready for its next use, dropping the bindings,
 * which point at the caller's memory (see store_bind_text). */
void store_stmt_reset(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

/* Step a statement that returns no rows (or whose rows are ignored) to the
 * end and reset it. */
int store_step_done(tk_store *s, sqlite3_stmt *st)
{
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	rc = rc == SQLITE_DONE ? TK_OK : store_err(s, rc);
	store_stmt_reset(st);
	return rc;
}

/* Finalize a one-shot statement whose last step returned src: stop when a
 * callback stopped the rows, else TK_OK after the last row or the store's
 * error (taken before the statement goes). */
int store_finalize(tk_store *s, sqlite3_stmt *st, int src, int stop)
{
	int rc = stop ? stop : src == SQLITE_DONE ? TK_OK : store_err(s, src);
	sqlite3_finalize(st);
	return rc;
}

/* Step st once. On a row, *id receives column 0 and *found is 1; on no row
 * *found is 0. The statement is reset either way. */
int store_step_id(tk_store *s, sqlite3_stmt *st, int64_t *id, int *found)
{
	int rc = sqlite3_step(st);
	*found = 0;
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		*found = 1;
		rc = TK_OK;
	} else {
		rc = rc == SQLITE_DONE ? TK_OK : store_err(s, rc);
	}
	store_stmt_reset(st);
	return rc;
}

int store_step_text(tk_store *s, sqlite3_stmt *st, char **text, int *found)
{
	int rc = sqlite3_step(st);
	*text = NULL;
	*found = 0;
	if (rc == SQLITE_ROW) {
		const char *p = (const char *)sqlite3_column_text(st, 0);
		*found = 1;
		rc = TK_OK;
		if (p && !(*text = strdup(p)))
			rc = tk_seterr(TK_ENOMEM, "out of memory");
	} else {
		rc = rc == SQLITE_DONE ? TK_OK : store_err(s, rc);
	}
	store_stmt_reset(st);
	return rc;
}

/* Run SQL text with no results (pragmas, schema, transaction control). */
int store_exec_sql(tk_store *s, const char *zSql)
{
	int rc = sqlite3_exec(s->db, zSql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? TK_OK : store_err(s, rc);
}

/* Run a query returning one integer (a pragma, a count). */
int store_query_int(tk_store *s, const char *zSql, int64_t *out)
{
	sqlite3_stmt *st;
	int found, rc = store_prepare(s, zSql, &st);
	if (rc)
		return rc;
	*out = 0;
	rc = store_step_id(s, st, out, &found);
	sqlite3_finalize(st);
	return rc;
}

/* Bind text or NULL. Values are bound SQLITE_STATIC: every statement is
 * stepped and its bindings cleared before the function that bound them
 * returns, so SQLite need not copy them, and binding cannot fail (only a bad
 * index or a value over SQLITE_MAX_LENGTH could make it). */
void store_bind_text(sqlite3_stmt *st, int i, const char *z)
{
	if (z)
		sqlite3_bind_text(st, i, z, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

/* Bind an id, with 0 meaning NULL. */
void store_bind_id(sqlite3_stmt *st, int i, int64_t id)
{
	if (id)
		sqlite3_bind_int64(st, i, id);
	else
		sqlite3_bind_null(st, i);
}

/* ---- schema --------------------------------------------------------- */

/* Copy into name (size n) the table created by the next "CREATE TABLE" in the
 * schema text after *pz, advancing *pz. Returns 0 when there is none. */
static int schema_next_table(const char **pz, char *name, size_t n)
{
	const char *p = strstr(*pz, "CREATE TABLE ");
	size_t len = 0;
	if (!p)
		return 0;
	p += strlen("CREATE TABLE ");
	while (p[len] == '_' || (p[len] >= 'a' && p[len] <= 'z') ||
	       (p[len] >= 'A' && p[len] <= 'Z') || (p[len] >= '0' && p[len] <= '9'))
		len++;
	assert(len > 0 && len < n);
	memcpy(name, p, len);
	name[len] = 0;
	*pz = p + len;
	return 1;
}

static int schema_has_table(const char *zName)
{
	const char *z = tk_schema_sql;
	char name[64];
	while (schema_next_table(&z, name, sizeof name))
		if (!strcmp(name, zName))
			return 1;
	return 0;
}

/* Check that the tables are exactly those of the schema (SQLite's own
 * sqlite_* tables aside). With bEmptyOk, no tables at all is accepted and
 * *nTable tells the caller. */
static int schema_check(tk_store *s, int bEmptyOk, int *nTable)
{
	sqlite3_stmt *st;
	const char *z = tk_schema_sql;
	char name[64];
	int nFound = 0, nWant = 0, rc;

	rc = store_prepare(s, "SELECT name FROM sqlite_schema WHERE type = 'table'"
	                     " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
	                  &st);
	if (rc)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *zName = (const char *)sqlite3_column_text(st, 0);
		if (!schema_has_table(zName)) {
			rc = tk_seterr(TK_ECORRUPT,
			               "%s: not a tunekit record store (unexpected table '%s')",
			               s->zPath, zName);
			sqlite3_finalize(st);
			return rc;
		}
		nFound++;
	}
	rc = rc == SQLITE_DONE ? TK_OK : store_err(s, rc);
	sqlite3_finalize(st);
	if (rc)
		return rc;
	*nTable = nFound;
	if (nFound == 0 && bEmptyOk)
		return TK_OK;

	/* Every table found is in the schema; any missing? */
	while (schema_next_table(&z, name, sizeof name))
		nWant++;
	if (nFound == nWant)
		return TK_OK;
	z = tk_schema_sql;
	while (schema_next_table(&z, name, sizeof name)) {
		int64_t n;
		char *zSql = sqlite3_mprintf("SELECT count(*) FROM sqlite_schema"
		                             " WHERE type = 'table' AND name = %Q", name);
		if (!zSql)
			return tk_seterr(TK_ENOMEM, "%s: out of memory", s->zPath);
		rc = store_query_int(s, zSql, &n);
		sqlite3_free(zSql);
		if (rc)
			return rc;
		if (n == 0)
			return tk_seterr(TK_ECORRUPT,
			                 "%s: record store is damaged (table '%s' is missing)",
			                 s->zPath, name);
	}
	return TK_OK;
}

/* TK_ECORRUPT unless v is a version this build can open or migrate. */
static int version_check(tk_store *s, int64_t v)
{
	if (v > STORE_VERSION)
		return tk_seterr(TK_ECORRUPT,
		                 "%s: store schema version %lld is newer than this tunekit (%d)",
		                 s->zPath, (long long)v, STORE_VERSION);
	if (v < 0)
		return tk_seterr(TK_ECORRUPT,
		                 "%s: not a tunekit record store (schema version %lld)",
		                 s->zPath, (long long)v);
	return TK_OK;
}

/* With user_version 0 the file must hold no tables at all. */
static int empty_check(tk_store *s)
{
	int nTable, rc = schema_check(s, 1, &nTable);
	if (rc == TK_OK && nTable > 0) /* only our tables, but no version */
		rc = tk_seterr(TK_ECORRUPT,
		               "%s: not a tunekit record store (no schema version)",
		               s->zPath);
	return rc;
}

/* Bring the store to STORE_VERSION. Called inside BEGIN IMMEDIATE, so the
 * version read here cannot change under us and two processes opening the
 * same new file do not both create the schema. */
static int schema_migrate(tk_store *s)
{
	int64_t v;
	int rc = store_query_int(s, "PRAGMA user_version", &v);
	if (rc || (rc = version_check(s, v)))
		return rc;
	if (v == STORE_VERSION)
		return TK_OK; /* another process migrated it first */
	if (v == 0) {
		if ((rc = empty_check(s)))
			return rc;
		rc = store_exec_sql(s, tk_schema_sql);
	} else {
		for (; v < STORE_VERSION && !rc; v++) {
			assert(migrations[v]);
			rc = store_exec_sql(s, migrations[v]);
		}
	}
	if (rc)
		return rc;
	char zSql[64];
	snprintf(zSql, sizeof zSql, "PRAGMA user_version = %d", STORE_VERSION);
	return store_exec_sql(s, zSql);
}

/* SQLite's quick_check (the b-trees and their pages, not the indexes'
 * contents) is what a store gets when it is opened: a damaged store is
 * refused before a command has printed or written anything. */
int store_check_pragma(tk_store *s, const char *pragma)
{
	sqlite3_stmt *st;
	char *zOk = NULL, zSql[64];
	int found, rc;
	assert(!strcmp(pragma, "quick_check") || !strcmp(pragma, "integrity_check"));
	snprintf(zSql, sizeof zSql, "PRAGMA %s(1)", pragma);
	if ((rc = store_prepare(s, zSql, &st)))
		return rc;
	rc = store_step_text(s, st, &zOk, &found);
	sqlite3_finalize(st);
	for (char *p = zOk; p && *p; p++)
		if (*p == '\n')
			*p = ' '; /* one line: "*** in database main *** Page 6: ..." */
	if (!rc && (!found || !zOk || strcmp(zOk, "ok")))
		rc = tk_seterr(TK_ECORRUPT, "%s: record store is damaged (%s)", s->zPath,
		               zOk ? zOk : "the check returned nothing");
	free(zOk);
	return rc;
}

/* Check the version and the tables, then switch to WAL and migrate if
 * needed and allowed. Nothing is written to a file until it has shown to be
 * a tunekit store (or empty), so refusing a file leaves it as it was. */
static int store_setup(tk_store *s, int flags)
{
	int64_t v;
	int nTable, rc = store_query_int(s, "PRAGMA user_version", &v);
	if (rc || (rc = version_check(s, v)))
		return rc;
	if (v == 0)
		rc = empty_check(s);
	else if (v == STORE_VERSION)
		rc = schema_check(s, 0, &nTable);
	/* else an older tunekit store: its tables are checked after migrating */
	if (rc || (v > 0 && (rc = store_check_pragma(s, "quick_check"))))
		return rc;

	if (flags & STORE_READONLY) {
		if (v == 0)
			return tk_seterr(TK_ECORRUPT,
			                 "%s: not a tunekit record store (empty database)",
			                 s->zPath);
		if (v < STORE_VERSION)
			return tk_seterr(TK_ESTORE,
			                 "%s: store schema version %lld is older than this"
			                 " tunekit (%d); open it once for writing to upgrade it",
			                 s->zPath, (long long)v, STORE_VERSION);
		return TK_OK;
	}

	rc = store_exec_sql(s, "PRAGMA journal_mode = WAL");
	if (rc || v == STORE_VERSION)
		return rc;
	rc = store_exec_sql(s, "BEGIN IMMEDIATE");
	if (rc)
		return rc;
	rc = schema_migrate(s);
	if (rc == TK_OK)
		rc = store_exec_sql(s, "COMMIT");
	if (rc) {
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		return rc;
	}
	return schema_check(s, 0, &nTable);
}

/* ---- open and close ------------------------------------------------- */

/* The last open failed because SQLite could not make the -shm file of a
 * WAL store it may only read, and no -wal file holds pages the database
 * file lacks. */
static int readonly_wal(tk_store *s)
{
	int e = s->db ? sqlite3_extended_errcode(s->db) : 0;
	struct stat sb;
	char zWal[4096];
	if ((e & 0xff) != SQLITE_READONLY && (e & 0xff) != SQLITE_CANTOPEN)
		return 0;
	snprintf(zWal, sizeof zWal, "%s-wal", s->zPath);
	return stat(zWal, &sb) < 0 ? errno == ENOENT : sb.st_size == 0;
}

char *store_uri(const char *path, const char *query)
{
	tk_sb sb;
	tk_sb_init(&sb);
	tk_sb_printf(&sb, "file:");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		if (*p == '%' || *p == '?' || *p == '#' || *p < 0x20 || *p >= 0x7f)
			tk_sb_printf(&sb, "%%%02X", *p);
		else
			tk_sb_printf(&sb, "%c", *p);
	if (query)
		tk_sb_printf(&sb, "?%s", query);
	return tk_sb_take(&sb);
}

int store_open(const char *path, int flags, tk_store **out)
{
	return store_open_uri(path, flags, 0, out);
}

int store_open_uri(const char *path, int flags, int bUri, tk_store **out)
{
	tk_store *s;
	int rc, oflags;
	char *zUri = NULL;

	assert(path && out);
	assert((flags & ~STORE_READONLY) == 0);
	*out = NULL;
	s = calloc(1, sizeof *s);
	if (!s || !(s->zPath = strdup(path)) || (bUri && !(zUri = store_uri(path, NULL)))) {
		if (s)
			free(s->zPath);
		free(s);
		return tk_seterr(TK_ENOMEM, "%s: out of memory", path);
	}
	s->lockfd = -1;
	oflags = (flags & STORE_READONLY) ? SQLITE_OPEN_READONLY
	                                  : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	if (bUri)
		oflags |= SQLITE_OPEN_URI;
	rc = sqlite3_open_v2(bUri ? zUri : path, &s->db, oflags, NULL);
	free(zUri);
	if (rc != SQLITE_OK) {
		rc = store_err(s, rc);
		goto fail;
	}
	/* Settings of this connection only; journal_mode, which changes the
	 * file, waits in store_setup() until the file is known to be ours. */
	rc = store_exec_sql(s, "PRAGMA busy_timeout = 10000; PRAGMA foreign_keys = ON;"
	                   " PRAGMA synchronous = NORMAL");
	/* SQLite answers some lock waits at once, without the busy handler:
	 * the switch to WAL while another process creates the same new store,
	 * a read while one recovers its WAL index. Setting up is read-only
	 * until it holds its own write lock, so it is tried again, for as
	 * long as the busy timeout would have waited. */
	for (int tries = 0; !rc; tries++) {
		rc = store_setup(s, flags);
		if (!rc || tries == 200 || (sqlite3_errcode(s->db) & 0xff) != SQLITE_BUSY)
			break;
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		usleep(50000);
		rc = 0;
	}
	if (rc && (flags & STORE_READONLY) && readonly_wal(s)) {
		/* A WAL store whose directory we cannot write (no -shm to share):
		 * with nothing in a -wal file, the database file is the whole
		 * store, and SQLite may read it as immutable. */
		char *zUri = store_uri(path, "immutable=1");
		sqlite3_close_v2(s->db);
		s->db = NULL;
		if (!zUri) {
			rc = tk_seterr(TK_ENOMEM, "%s: out of memory", path);
			goto fail;
		}
		rc = sqlite3_open_v2(zUri, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
		free(zUri);
		rc = rc != SQLITE_OK ? store_err(s, rc)
		                     : store_exec_sql(s, "PRAGMA foreign_keys = ON");
		if (!rc)
			rc = store_setup(s, flags);
	}
	if (rc)
		goto fail;
	*out = s;
	return TK_OK;

fail:
	store_close(s);
	return rc;
}

void store_close(tk_store *s)
{
	if (!s)
		return;
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(s->aStmt[i]);
	sqlite3_close_v2(s->db);
	if (s->lockfd >= 0)
		close(s->lockfd); /* the runs it owned are free again */
	free(s->zPath);
	free(s);
}

/* ---- run ownership -------------------------------------------------- */

/* Each run owns 16 bytes of PATH-lock, at run_id * 16: an open-file-
 * description lock over them (released when the connection closes or the
 * process dies, however it dies), and the owner's pid as text inside them,
 * for the message a second owner gets. */
#define RUN_LOCK_BYTES 16

int store_run_own(tk_store *s, int64_t run_id)
{
	char zLock[4096], zPid[RUN_LOCK_BYTES + 1];
	assert(s && run_id > 0);
	if (!strcmp(s->zPath, ":memory:") || !s->zPath[0])
		return TK_OK;
	if (s->lockfd < 0) {
		snprintf(zLock, sizeof zLock, "%s-lock", s->zPath);
		s->lockfd = open(zLock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (s->lockfd < 0)
			return tk_seterr(TK_ESTORE, "%s: %s", zLock, strerror(errno));
	}
	struct flock fl;
	memset(&fl, 0, sizeof fl);
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = (off_t)(run_id * RUN_LOCK_BYTES);
	fl.l_len = RUN_LOCK_BYTES;
	if (fcntl(s->lockfd, F_OFD_SETLK, &fl) < 0) {
		if (errno != EAGAIN && errno != EACCES)
			return tk_seterr(TK_ESTORE, "%s-lock: %s", s->zPath, strerror(errno));
		ssize_t n = pread(s->lockfd, zPid, RUN_LOCK_BYTES, fl.l_start);
		zPid[n > 0 ? n : 0] = 0;
		zPid[strspn(zPid, "0123456789")] = 0;
		return tk_seterr(TK_ESTORE, "run %lld is being tuned by process %s", (long long)run_id,
		                 zPid[0] ? zPid : "(unknown)");
	}
	memset(zPid, 0, sizeof zPid);
	snprintf(zPid, sizeof zPid, "%ld", (long)getpid());
	if (pwrite(s->lockfd, zPid, RUN_LOCK_BYTES, fl.l_start) != RUN_LOCK_BYTES)
		return tk_seterr(TK_ESTORE, "%s-lock: %s", s->zPath, strerror(errno));
	return TK_OK;
}

int store_run_hardware(tk_store *s, int64_t run_id, int64_t *hw_id)
{
	sqlite3_stmt *st;
	int found, rc = store_prepare(s, "SELECT ifnull(hardware_id, 0) FROM run WHERE id = ?1", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, run_id);
	rc = store_step_id(s, st, hw_id, &found);
	sqlite3_finalize(st);
	if (!rc && !found)
		rc = tk_seterr(TK_ENOTFOUND, "no run %lld in %s", (long long)run_id, s->zPath);
	return rc;
}

sqlite3 *store_db(tk_store *s)
{
	assert(s);
	return s->db;
}

const char *store_path(tk_store *s)
{
	assert(s);
	return s->zPath;
}

/* ---- transactions --------------------------------------------------- */

int store_begin(tk_store *s)
{
	return store_exec_sql(s, "BEGIN IMMEDIATE");
}

int store_commit(tk_store *s)
{
	return store_exec_sql(s, "COMMIT");
}

int store_rollback(tk_store *s)
{
	/* SQLite may already have rolled back (after SQLITE_FULL, say). */
	if (sqlite3_get_autocommit(s->db))
		return TK_OK;
	return store_exec_sql(s, "ROLLBACK");
}

/* ---- get-or-create -------------------------------------------------- */

/* Insert with ON CONFLICT DO NOTHING RETURNING id; when the row already
 * existed, look it up with sel (bound by the caller the same way). */
static int get_or_create(tk_store *s, sqlite3_stmt *ins, sqlite3_stmt *sel,
                         int64_t *id)
{
	int found, rc = store_step_id(s, ins, id, &found);
	if (rc || found)
		return rc;
	rc = store_step_id(s, sel, id, &found);
	if (!rc && !found) /* deleted in between: only by hand */
		rc = tk_seterr(TK_ESTORE, "%s: row vanished during insert", s->zPath);
	return rc;
}

int store_hardware_get(tk_store *s, const store_hw *hw, int64_t *id)
{
	sqlite3_stmt *ins = NULL, *sel = NULL;
	int rc;

	assert(s && hw && hw->key && hw->kind && id);
	if ((rc = stmt_get(s, ST_HW_INSERT, &ins)) || (rc = stmt_get(s, ST_HW_SELECT, &sel)))
		return rc;
	store_bind_text(ins, 1, hw->key);
	store_bind_text(ins, 2, hw->kind);
	store_bind_text(ins, 3, hw->cpu);
	store_bind_text(ins, 4, hw->isa);
	store_bind_text(ins, 5, hw->cc);
	if (hw->threads > 0)
		sqlite3_bind_int(ins, 6, hw->threads);
	else
		sqlite3_bind_null(ins, 6);
	store_bind_text(ins, 7, hw->spec);
	store_bind_text(sel, 1, hw->key);
	return get_or_create(s, ins, sel, id);
}

int store_task_get(tk_store *s, const char *key, const char *op, double flops,
                   int64_t *id)
{
	sqlite3_stmt *ins = NULL, *sel = NULL;
	int rc;

	assert(s && key && op && id);
	if ((rc = stmt_get(s, ST_TASK_INSERT, &ins)) ||
	    (rc = stmt_get(s, ST_TASK_SELECT, &sel)))
		return rc;
	store_bind_text(ins, 1, key);
	store_bind_text(ins, 2, op);
	sqlite3_bind_double(ins, 3, flops);
	store_bind_text(sel, 1, key);
	return get_or_create(s, ins, sel, id);
}

int store_config_get(tk_store *s, int64_t task_id, int64_t idx, const char *text,
                     const char *sched, int64_t *id)
{
	sqlite3_stmt *ins = NULL, *sel = NULL;
	int rc;

	assert(s && task_id > 0 && text && sched && id);
	if ((rc = stmt_get(s, ST_CONFIG_INSERT, &ins)) ||
	    (rc = stmt_get(s, ST_CONFIG_SELECT, &sel)))
		return rc;
	sqlite3_bind_int64(ins, 1, task_id);
	if (idx >= 0)
		sqlite3_bind_int64(ins, 2, idx);
	else
		sqlite3_bind_null(ins, 2);
	store_bind_text(ins, 3, text);
	store_bind_text(ins, 4, sched);
	sqlite3_bind_int64(sel, 1, task_id);
	store_bind_text(sel, 2, text);
	return get_or_create(s, ins, sel, id);
}

/* ---- runs and measurements ------------------------------------------ */

int store_run_begin(tk_store *s, const store_run *r, int64_t *id)
{
	sqlite3_stmt *st = NULL;
	int rc;

	assert(s && r && r->argv && r->method && id);
	if ((rc = stmt_get(s, ST_RUN_INSERT, &st)))
		return rc;
	store_bind_text(st, 1, r->argv);
	store_bind_text(st, 2, r->method);
	sqlite3_bind_int64(st, 3, r->seed);
	store_bind_id(st, 4, r->hardware_id);
	store_bind_text(st, 5, r->replay);
	sqlite3_bind_double(st, 6, tk_walltime());
	rc = store_step_done(s, st);
	if (rc == TK_OK)
		*id = sqlite3_last_insert_rowid(s->db);
	return rc;
}

int store_run_end(tk_store *s, int64_t id)
{
	sqlite3_stmt *st = NULL;
	int rc;

	assert(s);
	if ((rc = stmt_get(s, ST_RUN_END, &st)))
		return rc;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_double(st, 2, tk_walltime());
	rc = store_step_done(s, st);
	if (rc == TK_OK && sqlite3_changes(s->db) == 0)
		rc = tk_seterr(TK_ENOTFOUND, "%s: no run %lld", s->zPath, (long long)id);
	return rc;
}

/*
 * The times BLOB: a 4-byte little-endian count of uncompressed bytes, then
 * zlib (compress2) of the float64 values as little-endian IEEE 754. The
 * count lets the reader allocate exactly and reject a damaged blob. The
 * limit (32M repeats) keeps any blob under SQLite's 1e9-byte value limit.
 */
#define TIMES_MAX_BYTES (1u << 28)

/* Encode n > 0 times into a malloc'd blob of *nByte bytes. */
static int times_encode(const double *aTime, int n, unsigned char **out,
                        int *nByte)
{
	size_t nRaw = (size_t)n * 8;
	uLongf nZip;
	unsigned char *aRaw, *aBlob;
	int rc = TK_OK;

	assert(n > 0);
	if (nRaw > TIMES_MAX_BYTES)
		return tk_seterr(TK_EINVAL, "%d repeat times are too many to store", n);
	nZip = compressBound(nRaw);
	aRaw = malloc(nRaw);
	aBlob = malloc(4 + nZip);
	if (!aRaw || !aBlob) {
		rc = tk_seterr(TK_ENOMEM, "out of memory encoding %d times", n);
		goto done;
	}
	for (int i = 0; i < n; i++) {
		uint64_t u;
		memcpy(&u, &aTime[i], 8);
		for (int k = 0; k < 8; k++)
			aRaw[8 * i + k] = (unsigned char)(u >> (8 * k));
	}
	tk_put_le32(aBlob, (uint32_t)nRaw);
	if (compress2(aBlob + 4, &nZip, aRaw, nRaw, Z_DEFAULT_COMPRESSION) != Z_OK) {
		rc = tk_seterr(TK_ENOMEM, "out of memory compressing %d times", n);
		goto done;
	}
	*out = aBlob;
	*nByte = (int)(4 + nZip);
	aBlob = NULL;
done:
	free(aRaw);
	free(aBlob);
	return rc;
}

/* Decode the blob of measurement id (nExpect values, -1 if unknown) into a
 * malloc'd array. TK_ECORRUPT on anything that does not decode exactly. */
static int times_decode(tk_store *s, int64_t id, const unsigned char *aBlob,
                        int nBlob, int64_t nExpect, double **out, int *n)
{
	uint32_t nRaw;
	uLongf nGot;
	unsigned char *aRaw;
	double *aTime;
	const char *zWhy = NULL;

	if (nBlob < 4)
		zWhy = "too short";
	else if ((nRaw = tk_get_le32(aBlob)) % 8 || nRaw == 0 || nRaw > TIMES_MAX_BYTES ||
	         nRaw / 1032 > (uint32_t)nBlob) /* zlib cannot shrink more than 1032:1 */
		zWhy = "bad length";
	else if (nExpect >= 0 && nExpect != nRaw / 8)
		zWhy = "count differs from nrepeat";
	if (zWhy)
		return tk_seterr(TK_ECORRUPT, "%s: measurement %lld: damaged times (%s)",
		                 s->zPath, (long long)id, zWhy);

	/* Inflate into the result array, then turn the bytes into doubles in
	 * place (each value is read whole before it is written). */
	aTime = malloc(nRaw);
	if (!aTime)
		return tk_seterr(TK_ENOMEM, "out of memory decoding %u bytes of times", nRaw);
	aRaw = (unsigned char *)aTime;
	nGot = nRaw;
	int zrc = uncompress(aRaw, &nGot, aBlob + 4, (uLong)nBlob - 4);
	if (zrc != Z_OK || nGot != nRaw) {
		free(aTime);
		if (zrc == Z_MEM_ERROR)
			return tk_seterr(TK_ENOMEM, "out of memory decoding times");
		return tk_seterr(TK_ECORRUPT, "%s: measurement %lld: damaged times (%s)",
		                 s->zPath, (long long)id,
		                 zrc == Z_OK ? "short data" : "bad zlib stream");
	}
	for (uint32_t i = 0; i < nRaw / 8; i++) {
		uint64_t u = 0;
		for (int k = 0; k < 8; k++)
			u |= (uint64_t)aRaw[8 * i + k] << (8 * k);
		memcpy(&aTime[i], &u, 8);
	}
	*out = aTime;
	*n = (int)(nRaw / 8);
	return TK_OK;
}

int store_meas_add(tk_store *s, const store_meas *m, int64_t *id)
{
	sqlite3_stmt *st = NULL;
	unsigned char *aBlob = NULL;
	int nBlob = 0, rc;

	assert(s && m && id);
	assert(m->config_id > 0 && m->hardware_id > 0);
	assert(m->error >= 0 && m->error < MEAS_NERROR);
	assert(m->nrepeat >= 0 && (m->nrepeat == 0 || m->times));
	if ((rc = stmt_get(s, ST_MEAS_INSERT, &st)))
		return rc;
	if (m->nrepeat > 0 && (rc = times_encode(m->times, m->nrepeat, &aBlob, &nBlob)))
		return rc;
	sqlite3_bind_int64(st, 1, m->config_id);
	sqlite3_bind_int64(st, 2, m->hardware_id);
	store_bind_id(st, 3, m->run_id);
	sqlite3_bind_int(st, 4, m->trial);
	sqlite3_bind_int(st, 5, m->valid ? 1 : 0);
	sqlite3_bind_int(st, 6, m->error);
	store_bind_text(st, 7, m->message);
	if (m->valid) {
		sqlite3_bind_double(st, 8, m->mean);
		sqlite3_bind_double(st, 9, m->std);
		sqlite3_bind_double(st, 10, m->median);
	} else {
		sqlite3_bind_null(st, 8);
		sqlite3_bind_null(st, 9);
		sqlite3_bind_null(st, 10);
	}
	sqlite3_bind_int(st, 11, m->number);
	sqlite3_bind_int(st, 12, m->nrepeat);
	if (aBlob)
		sqlite3_bind_blob(st, 13, aBlob, nBlob, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 13);
	sqlite3_bind_double(st, 14, m->compile_s);
	sqlite3_bind_double(st, 15, m->at != 0 ? m->at : tk_walltime());
	if (m->load > 0)
		sqlite3_bind_double(st, 16, m->load);
	else
		sqlite3_bind_null(st, 16);
	sqlite3_bind_int(st, 17, m->valid && m->bounded ? 1 : 0);
	rc = store_step_done(s, st);
	free(aBlob);
	if (rc == TK_OK)
		*id = sqlite3_last_insert_rowid(s->db);
	return rc;
}

int store_meas_times(tk_store *s, int64_t id, double **times, int *n)
{
	sqlite3_stmt *st = NULL;
	int rc;

	assert(s && times && n);
	*times = NULL;
	*n = 0;
	if ((rc = stmt_get(s, ST_MEAS_TIMES, &st)))
		return rc;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const unsigned char *aBlob = sqlite3_column_blob(st, 0);
		int nBlob = sqlite3_column_bytes(st, 0);
		int64_t nExpect = sqlite3_column_type(st, 1) == SQLITE_NULL
		                      ? -1 : sqlite3_column_int64(st, 1);
		if (sqlite3_column_type(st, 0) == SQLITE_NULL)
			rc = TK_OK; /* no times kept */
		else
			rc = times_decode(s, id, aBlob, nBlob, nExpect, times, n);
	} else if (rc == SQLITE_DONE) {
		rc = tk_seterr(TK_ENOTFOUND, "%s: no measurement %lld", s->zPath,
		               (long long)id);
	} else {
		rc = store_err(s, rc);
	}
	store_stmt_reset(st);
	return rc;
}

/* ---- queries -------------------------------------------------------- */

/* The columns of a store_rec, in the order rec_read() expects. */
#define REC_COLUMNS \
	"m.id, m.config_id, c.task_id, m.hardware_id, m.run_id, m.trial, m.valid," \
	" m.error, t.key AS task_key, c.text, c.sched, h.key AS hw_key, m.message," \
	" c.idx, t.flops, m.mean, m.std, m.median, m.compile_s, m.at, m.number," \
	" m.nrepeat, m.load, h.kind AS hw_kind, m.bounded"
#define REC_FROM \
	" FROM measurement m JOIN config c ON c.id = m.config_id" \
	" JOIN task t ON t.id = c.task_id JOIN hardware h ON h.id = m.hardware_id"

/* A REAL column, or dflt when NULL. */
static double col_real(sqlite3_stmt *st, int i, double dflt)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt
	                                                 : sqlite3_column_double(st, i);
}

/* An INTEGER column, or dflt when NULL. */
static int64_t col_int(sqlite3_stmt *st, int i, int64_t dflt)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt
	                                                 : sqlite3_column_int64(st, i);
}

/* Fill r from the current row of a REC_COLUMNS query. NULL mean, std and
 * median (invalid records) read as -1, NULL run_id as 0, NULL idx, trial
 * and load as -1. */
static void rec_read(sqlite3_stmt *st, store_rec *r)
{
	r->id = sqlite3_column_int64(st, 0);
	r->config_id = sqlite3_column_int64(st, 1);
	r->task_id = sqlite3_column_int64(st, 2);
	r->hardware_id = sqlite3_column_int64(st, 3);
	r->run_id = col_int(st, 4, 0);
	r->trial = (int)col_int(st, 5, -1);
	r->valid = sqlite3_column_int(st, 6);
	r->error = sqlite3_column_int(st, 7);
	r->task = (const char *)sqlite3_column_text(st, 8);
	r->config = (const char *)sqlite3_column_text(st, 9);
	r->sched = (const char *)sqlite3_column_text(st, 10);
	r->hardware = (const char *)sqlite3_column_text(st, 11);
	r->message = (const char *)sqlite3_column_text(st, 12);
	r->idx = col_int(st, 13, -1);
	r->flops = sqlite3_column_double(st, 14);
	r->mean = col_real(st, 15, -1);
	r->std = col_real(st, 16, -1);
	r->median = col_real(st, 17, -1);
	r->compile_s = col_real(st, 18, 0);
	r->at = sqlite3_column_double(st, 19);
	r->number = (int)col_int(st, 20, 0);
	r->nrepeat = (int)col_int(st, 21, 0);
	r->load = col_real(st, 22, -1);
	r->hw_kind = (const char *)sqlite3_column_text(st, 23);
	r->bounded = sqlite3_column_int(st, 24);
}

/* Step a REC_COLUMNS query, calling cb per row, and finalize st. Returns
 * the callback's non-zero value if it stopped early. *nRow receives the
 * number of rows delivered. */
static int rec_each(tk_store *s, sqlite3_stmt *st, store_rec_cb cb, void *ctx,
                    int64_t *nRow)
{
	store_rec r;
	int rc, stop = 0;

	*nRow = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		rec_read(st, &r);
		++*nRow;
		if ((stop = cb(ctx, &r)) != 0)
			break;
	}
	return store_finalize(s, st, rc, stop);
}

int store_best(tk_store *s, int64_t hardware_id, store_rec_cb cb, void *ctx)
{
	sqlite3_stmt *st;
	int64_t nRow;
	int rc;

	assert(s && cb);
	/* per configuration its median record, then per task the
	 * configuration whose median record is fastest */
	rc = store_prepare(s,
		"WITH r AS (SELECT " REC_COLUMNS ","
		STORE_MEDIAN_RANK("m.config_id, m.hardware_id")
		REC_FROM
		" WHERE m.valid AND m.median IS NOT NULL AND NOT m.bounded"
		" AND (?1 = 0 OR m.hardware_id = ?1)),"
		" ranked AS (SELECT *, ROW_NUMBER() OVER"
		" (PARTITION BY task_id, hardware_id ORDER BY median, id) AS rn"
		" FROM r WHERE" STORE_IS_MEDIAN ")"
		" SELECT * FROM ranked WHERE rn = 1 ORDER BY task_key, hw_key", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, hardware_id);
	return rec_each(s, st, cb, ctx, &nRow);
}

int store_meas_get(tk_store *s, int64_t id, store_rec_cb cb, void *ctx)
{
	sqlite3_stmt *st;
	int64_t nRow;
	int rc;

	assert(s && cb);
	rc = store_prepare(s, "SELECT " REC_COLUMNS REC_FROM " WHERE m.id = ?1", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, id);
	rc = rec_each(s, st, cb, ctx, &nRow);
	if (rc == TK_OK && nRow == 0)
		rc = tk_seterr(TK_ENOTFOUND, "%s: no measurement %lld", s->zPath,
		               (long long)id);
	return rc;
}

int store_run_records(tk_store *s, int64_t run_id, store_rec_cb cb, void *ctx)
{
	sqlite3_stmt *st;
	int64_t nRow, nRun;
	int rc, found;

	assert(s && cb);
	rc = store_prepare(s, "SELECT " REC_COLUMNS REC_FROM
	                     " WHERE m.run_id = ?1 ORDER BY m.trial, m.id", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, run_id);
	rc = rec_each(s, st, cb, ctx, &nRow);
	if (rc || nRow > 0)
		return rc;
	/* No records: an empty run, or no such run? */
	rc = store_prepare(s, "SELECT count(*) FROM run WHERE id = ?1", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, run_id);
	rc = store_step_id(s, st, &nRun, &found);
	sqlite3_finalize(st);
	if (rc == TK_OK && nRun == 0)
		rc = tk_seterr(TK_ENOTFOUND, "%s: no run %lld", s->zPath, (long long)run_id);
	return rc;
}

int store_hw_records(tk_store *s, const char *hw_key, const char *task, store_rec_cb cb,
                     void *ctx)
{
	sqlite3_stmt *st;
	int64_t nRow;
	int rc;

	assert(s && cb);
	rc = store_prepare(s, "SELECT " REC_COLUMNS REC_FROM
	                     " WHERE (?1 IS NULL OR h.key = ?1 OR CAST(h.id AS TEXT) = ?1)"
	                     " AND (?2 IS NULL OR t.key = ?2)"
	                     " ORDER BY t.key, m.id", &st);
	if (rc)
		return rc;
	store_bind_text(st, 1, hw_key);
	store_bind_text(st, 2, task);
	return rec_each(s, st, cb, ctx, &nRow);
}

int store_hw_configs(tk_store *s, const char *hw_key, const char *task, int64_t *n)
{
	sqlite3_stmt *st;
	int found, rc;

	assert(s && hw_key && task && n);
	*n = 0;
	rc = store_prepare(s, "SELECT count(DISTINCT m.config_id)" REC_FROM
	                      " WHERE (h.key = ?1 OR CAST(h.id AS TEXT) = ?1) AND t.key = ?2", &st);
	if (rc)
		return rc;
	store_bind_text(st, 1, hw_key);
	store_bind_text(st, 2, task);
	rc = store_step_id(s, st, n, &found);
	sqlite3_finalize(st);
	return rc;
}

int store_runs(tk_store *s, store_run_cb cb, void *ctx)
{
	sqlite3_stmt *st;
	store_runinfo r;
	int rc, stop = 0;

	assert(s && cb);
	rc = store_prepare(s,
		"SELECT r.id, r.seed, r.hardware_id, r.argv, r.method, r.replay, h.key,"
		" r.started, r.ended, count(m.id), count(CASE WHEN m.valid THEN 1 END),"
		" min(CASE WHEN m.valid AND NOT m.bounded THEN m.median END), l.search, l.fit,"
		" l.compile, l.run, l.compiled, l.cached, l.codegen, l.reference, l.store,"
		" l.measured, l.predicted, count(CASE WHEN m.valid AND m.bounded THEN 1 END),"
		" (SELECT group_concat(CASE WHEN g.value > 0 THEN 's' ELSE 'f' END, '')"
		"  FROM (SELECT value FROM run_log WHERE run_id = r.id AND key LIKE 'guard:%'"
		"   ORDER BY round) g)"
		" FROM run r LEFT JOIN hardware h ON h.id = r.hardware_id"
		" LEFT JOIN measurement m ON m.run_id = r.id"
		" LEFT JOIN (SELECT run_id,"
		"  sum(CASE WHEN key = 'seconds:search' THEN value END) AS search,"
		"  sum(CASE WHEN key = 'seconds:fit' THEN value END) AS fit,"
		"  sum(CASE WHEN key = 'seconds:codegen' THEN value END) AS codegen,"
		"  sum(CASE WHEN key = 'seconds:compile' THEN value END) AS compile,"
		"  sum(CASE WHEN key = 'seconds:reference' THEN value END) AS reference,"
		"  sum(CASE WHEN key = 'seconds:store' THEN value END) AS store,"
		"  sum(CASE WHEN key = 'seconds:run' THEN value END) AS run,"
		"  sum(CASE WHEN key = 'kernels:compiled' THEN value END) AS compiled,"
		"  sum(CASE WHEN key = 'kernels:cached' THEN value END) AS cached,"
		"  sum(CASE WHEN key LIKE 'trials:measured:%' THEN value END) AS measured,"
		"  sum(CASE WHEN key LIKE 'trials:predicted:%' THEN value END) AS predicted"
		"  FROM run_log GROUP BY run_id) l ON l.run_id = r.id"
		" GROUP BY r.id ORDER BY r.id", &st);
	if (rc)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r.id = sqlite3_column_int64(st, 0);
		r.seed = col_int(st, 1, 0);
		r.hardware_id = col_int(st, 2, 0);
		r.argv = (const char *)sqlite3_column_text(st, 3);
		r.method = (const char *)sqlite3_column_text(st, 4);
		r.replay = (const char *)sqlite3_column_text(st, 5);
		r.hardware = (const char *)sqlite3_column_text(st, 6);
		r.started = sqlite3_column_double(st, 7);
		r.ended = col_real(st, 8, -1);
		r.ntrials = sqlite3_column_int64(st, 9);
		r.nvalid = sqlite3_column_int64(st, 10);
		r.best_median = col_real(st, 11, -1);
		r.search_s = col_real(st, 12, -1);
		r.fit_s = col_real(st, 13, -1);
		r.compile_s = col_real(st, 14, -1);
		r.run_s = col_real(st, 15, -1);
		r.compiled = col_real(st, 16, -1);
		r.cached = col_real(st, 17, -1);
		r.codegen_s = col_real(st, 18, -1);
		r.ref_s = col_real(st, 19, -1);
		r.store_s = col_real(st, 20, -1);
		r.measured = col_real(st, 21, -1);
		r.predicted = col_real(st, 22, -1);
		r.nbounded = sqlite3_column_int64(st, 23);
		r.guard = (const char *)sqlite3_column_text(st, 24);
		if ((stop = cb(ctx, &r)) != 0)
			break;
	}
	return store_finalize(s, st, rc, stop);
}

int store_config_median(tk_store *s, int64_t task_id, const char *config, int64_t hardware_id,
                        double *median)
{
	sqlite3_stmt *st;
	int rc = store_prepare(s,
		"SELECT MIN(m.median) FROM measurement m JOIN config c ON c.id = m.config_id"
		" WHERE c.task_id = ?1 AND c.text = ?2 AND m.hardware_id = ?3 AND m.valid", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, task_id);
	sqlite3_bind_text(st, 2, config, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, hardware_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		*median = sqlite3_column_double(st, 0);
		rc = TK_OK;
	} else if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
		rc = tk_seterr(TK_ENOTFOUND, "no valid measurement of that configuration");
	} else {
		rc = store_err(s, rc);
	}
	sqlite3_finalize(st);
	return rc;
}

int store_floats_encode(const float *v, int n, unsigned char **blob, int *len)
{
	uLongf cap = compressBound((uLong)n * 4);
	unsigned char *raw = malloc((size_t)n * 4 + 1), *out = malloc(cap);
	if (!raw || !out) {
		free(raw);
		free(out);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		uint32_t x;
		memcpy(&x, &v[i], 4);
		raw[4 * i] = (unsigned char)x;
		raw[4 * i + 1] = (unsigned char)(x >> 8);
		raw[4 * i + 2] = (unsigned char)(x >> 16);
		raw[4 * i + 3] = (unsigned char)(x >> 24);
	}
	int rc = compress2(out, &cap, raw, (uLong)n * 4, 6);
	free(raw);
	if (rc != Z_OK || cap > INT32_MAX) {
		free(out);
		return tk_seterr(TK_ENOMEM, "cannot compress %d floats", n);
	}
	*blob = out;
	*len = (int)cap;
	return TK_OK;
}

int store_floats_decode(const void *blob, int len, float *out, int n)
{
	uLongf got = (uLongf)n * 4;
	unsigned char *raw = malloc((size_t)n * 4 + 1);
	if (!raw)
		return tk_seterr(TK_ENOMEM, "out of memory");
	int rc = uncompress(raw, &got, blob, (uLong)len);
	if (rc != Z_OK || got != (uLongf)n * 4) {
		free(raw);
		return tk_seterr(TK_ECORRUPT, "damaged feature blob (expected %d floats)", n);
	}
	for (int i = 0; i < n; i++) {
		uint32_t x = (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
		             (uint32_t)raw[4 * i + 2] << 16 | (uint32_t)raw[4 * i + 3] << 24;
		memcpy(&out[i], &x, 4);
	}
	free(raw);
	return TK_OK;
}
