/*
 * merge: the records of another store appended to this one (see
 * store_merge.h for the identity rules). The input is attached read-only
 * as merge_src; temporary tables map each of its ids (hardware, task,
 * configuration, run) to the output's, and each table is then copied with
 * one INSERT ... SELECT that skips what the output already holds. Runs are
 * matched one at a time, since a run's identity needs its measurements.
 */
#include "store_merge.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store_int.h"
#include "util/util.h"

/* ---- checking an input ------------------------------------------------ */

/* SQLite's full integrity_check (b-trees, free list, indexes against their
 * tables) and foreign_key_check of the store s. */
static int full_check(tk_store *s)
{
	sqlite3_stmt *st;
	int rc = store_check_pragma(s, "integrity_check");
	if (rc || (rc = store_prepare(s, "PRAGMA foreign_key_check", &st)))
		return rc;
	int src = sqlite3_step(st);
	if (src == SQLITE_ROW)
		rc = tk_seterr(TK_ECORRUPT, "%s: record store is damaged (%s row %lld refers to a"
		               " missing %s)", store_path(s), sqlite3_column_text(st, 0),
		               (long long)sqlite3_column_int64(st, 1), sqlite3_column_text(st, 2));
	else if (src != SQLITE_DONE)
		rc = store_err(s, src);
	sqlite3_finalize(st);
	return rc;
}

int store_merge_check(const char *path, const char *out_path)
{
	struct stat a, b;
	tk_store *s;
	int rc;

	assert(path);
	if (out_path && stat(path, &a) == 0 && stat(out_path, &b) == 0 && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino)
		return tk_seterr(TK_EINVAL, "%s is the output store", path);
	if ((rc = store_open(path, STORE_READONLY, &s)))
		return rc;
	rc = full_check(s);
	store_close(s);
	return rc;
}

int store_merge_open(const char *path, tk_store **out)
{
	return store_open_uri(path, 0, 1, out);
}

/* ---- merging ------------------------------------------------------------ */

/* The tables that map the input's ids (sid) to the output's (mid). */
static const char zMapTables[] =
	"CREATE TEMP TABLE merge_hw(sid INTEGER PRIMARY KEY, mid INTEGER NOT NULL);"
	"CREATE TEMP TABLE merge_task(sid INTEGER PRIMARY KEY, mid INTEGER NOT NULL);"
	"CREATE TEMP TABLE merge_config(sid INTEGER PRIMARY KEY, mid INTEGER NOT NULL);"
	"CREATE TEMP TABLE merge_run(sid INTEGER PRIMARY KEY, mid INTEGER NOT NULL);";
static const char zDropTables[] =
	"DROP TABLE IF EXISTS temp.merge_hw; DROP TABLE IF EXISTS temp.merge_task;"
	"DROP TABLE IF EXISTS temp.merge_config; DROP TABLE IF EXISTS temp.merge_run;";

/* Run SQL text and add the rows it changed to *n (n may be NULL). */
static int exec_count(tk_store *s, const char *zSql, int64_t *n)
{
	int rc = store_exec_sql(s, zSql);
	if (!rc && n)
		*n += sqlite3_changes64(store_db(s));
	return rc;
}

/* Hardware, tasks and configurations: the new ones appended, every one
 * mapped by its key. */
static int merge_keys(tk_store *s, store_merge_stats *st)
{
	int rc;
	if ((rc = exec_count(s,
		"INSERT INTO main.hardware(key, kind, cpu, isa, cc, threads, spec)"
		" SELECT key, kind, cpu, isa, cc, threads, spec FROM merge_src.hardware"
		" WHERE true ORDER BY id ON CONFLICT(key) DO NOTHING", &st->hardware)) ||
	    (rc = store_exec_sql(s,
		"INSERT INTO temp.merge_hw(sid, mid) SELECT s.id, m.id FROM merge_src.hardware s"
		" JOIN main.hardware m ON m.key = s.key")) ||
	    (rc = exec_count(s,
		"INSERT INTO main.task(key, op, flops, space)"
		" SELECT key, op, flops, space FROM merge_src.task"
		" WHERE true ORDER BY id ON CONFLICT(key) DO NOTHING", &st->tasks)) ||
	    (rc = store_exec_sql(s,
		"UPDATE main.task SET space = (SELECT s.space FROM merge_src.task s"
		" WHERE s.key = task.key) WHERE space IS NULL AND EXISTS (SELECT 1"
		" FROM merge_src.task s WHERE s.key = task.key AND s.space IS NOT NULL)")) ||
	    (rc = store_exec_sql(s,
		"INSERT INTO temp.merge_task(sid, mid) SELECT s.id, m.id FROM merge_src.task s"
		" JOIN main.task m ON m.key = s.key")) ||
	    (rc = exec_count(s,
		"INSERT INTO main.config(task_id, idx, text, sched)"
		" SELECT t.mid, c.idx, c.text, c.sched FROM merge_src.config c"
		" JOIN temp.merge_task t ON t.sid = c.task_id"
		" WHERE true ORDER BY c.id ON CONFLICT(task_id, text) DO NOTHING", &st->configs)))
		return rc;
	return store_exec_sql(s,
		"INSERT INTO temp.merge_config(sid, mid) SELECT c.id, m.id FROM merge_src.config c"
		" JOIN temp.merge_task t ON t.sid = c.task_id"
		" JOIN main.config m ON m.task_id = t.mid AND m.text = c.text");
}

/* The runs, one at a time in id order: each maps to the first output run
 * with its identity that no other input run of this merge took and whose
 * trials agree with its own, or is appended. */
static int merge_runs(tk_store *s, store_merge_stats *st)
{
	enum { Q_EACH, Q_FIND, Q_UPDATE, Q_INSERT, Q_MAP, Q_N };
	static const char *const azSql[Q_N] = {
		[Q_EACH] = "SELECT r.id, h.mid FROM merge_src.run r"
		           " LEFT JOIN temp.merge_hw h ON h.sid = r.hardware_id ORDER BY r.id",
		[Q_FIND] = "SELECT m.id FROM main.run m, merge_src.run r WHERE r.id = ?1"
		           " AND m.started = r.started AND m.method = r.method AND m.argv = r.argv"
		           " AND m.seed IS r.seed AND m.replay IS r.replay AND m.hardware_id IS ?2"
		           " AND m.id NOT IN (SELECT mid FROM temp.merge_run)"
		           " AND NOT EXISTS (SELECT 1 FROM merge_src.measurement a"
		           "  JOIN main.measurement b ON b.run_id = m.id AND b.trial = a.trial"
		           "  LEFT JOIN temp.merge_config c ON c.sid = a.config_id"
		           "  WHERE a.run_id = r.id AND (b.at IS NOT a.at OR b.config_id IS NOT c.mid))"
		           " ORDER BY m.id LIMIT 1",
		/* a run resumed since: it ended later; parameters only fill a gap */
		[Q_UPDATE] = "UPDATE main.run SET ended = CASE WHEN r.ended IS NOT NULL AND"
		             " (run.ended IS NULL OR r.ended > run.ended) THEN r.ended ELSE run.ended END,"
		             " params = coalesce(run.params, r.params)"
		             " FROM merge_src.run r WHERE r.id = ?1 AND run.id = ?2",
		[Q_INSERT] = "INSERT INTO main.run(argv, method, seed, hardware_id, replay, started,"
		             " ended, params) SELECT argv, method, seed, ?2, replay, started, ended,"
		             " params FROM merge_src.run WHERE id = ?1",
		[Q_MAP] = "INSERT INTO temp.merge_run(sid, mid) VALUES (?1, ?2)",
	};
	sqlite3_stmt *aSt[Q_N] = { NULL };
	int rc = TK_OK, src;

	for (int i = 0; i < Q_N && !rc; i++)
		rc = store_prepare(s, azSql[i], &aSt[i]);
	while (!rc && (src = sqlite3_step(aSt[Q_EACH])) == SQLITE_ROW) {
		int64_t sid = sqlite3_column_int64(aSt[Q_EACH], 0), mid = 0;
		int64_t hw = sqlite3_column_type(aSt[Q_EACH], 1) == SQLITE_NULL
		                 ? 0 : sqlite3_column_int64(aSt[Q_EACH], 1);
		int found;
		sqlite3_bind_int64(aSt[Q_FIND], 1, sid);
		store_bind_id(aSt[Q_FIND], 2, hw);
		if ((rc = store_step_id(s, aSt[Q_FIND], &mid, &found)))
			break;
		if (found) {
			sqlite3_bind_int64(aSt[Q_UPDATE], 1, sid);
			sqlite3_bind_int64(aSt[Q_UPDATE], 2, mid);
			rc = store_step_done(s, aSt[Q_UPDATE]);
			st->runs_known++;
		} else {
			sqlite3_bind_int64(aSt[Q_INSERT], 1, sid);
			store_bind_id(aSt[Q_INSERT], 2, hw);
			rc = store_step_done(s, aSt[Q_INSERT]);
			mid = sqlite3_last_insert_rowid(store_db(s));
			st->runs++;
		}
		if (rc)
			break;
		sqlite3_bind_int64(aSt[Q_MAP], 1, sid);
		sqlite3_bind_int64(aSt[Q_MAP], 2, mid);
		rc = store_step_done(s, aSt[Q_MAP]);
	}
	if (!rc && src != SQLITE_DONE)
		rc = store_err(s, src);
	for (int i = 0; i < Q_N; i++)
		sqlite3_finalize(aSt[i]);
	return rc;
}

/* Measurements, then what hangs off runs, configurations and hardware. */
static int merge_rows(tk_store *s, store_merge_stats *st)
{
	int64_t nSrc = 0;
	int rc;
	if ((rc = store_query_int(s, "SELECT count(*) FROM merge_src.measurement", &nSrc)) ||
	    (rc = exec_count(s,
		"INSERT INTO main.measurement(config_id, hardware_id, run_id, trial, valid, error,"
		" message, mean, std, median, number, nrepeat, times, compile_s, at, load, bounded)"
		" SELECT c.mid, h.mid, r.mid, a.trial, a.valid, a.error, a.message, a.mean, a.std,"
		" a.median, a.number, a.nrepeat, a.times, a.compile_s, a.at, a.load, a.bounded"
		" FROM merge_src.measurement a JOIN temp.merge_config c ON c.sid = a.config_id"
		" JOIN temp.merge_hw h ON h.sid = a.hardware_id"
		" LEFT JOIN temp.merge_run r ON r.sid = a.run_id"
		" WHERE NOT EXISTS (SELECT 1 FROM main.measurement m WHERE m.config_id = c.mid"
		"  AND m.hardware_id = h.mid AND m.run_id IS r.mid AND m.trial IS a.trial"
		"  AND m.at = a.at) ORDER BY a.id", &st->records)) ||
	    (rc = exec_count(s,
		"INSERT INTO main.run_log(run_id, round, key, value)"
		" SELECT r.mid, l.round, l.key, l.value FROM merge_src.run_log l"
		" JOIN temp.merge_run r ON r.sid = l.run_id WHERE true ON CONFLICT DO NOTHING",
		&st->logs)) ||
	    (rc = exec_count(s,
		"INSERT INTO main.foreign_record(format, source, line, reason, text, run_id)"
		" SELECT f.format, f.source, f.line, f.reason, f.text, r.mid"
		" FROM merge_src.foreign_record f LEFT JOIN temp.merge_run r ON r.sid = f.run_id"
		" WHERE true ORDER BY f.id ON CONFLICT(format, text) DO NOTHING", &st->foreign)) ||
	    (rc = exec_count(s,
		"INSERT INTO main.feature(config_id, kind, version, n, data)"
		" SELECT c.mid, f.kind, f.version, f.n, f.data FROM merge_src.feature f"
		" JOIN temp.merge_config c ON c.sid = f.config_id WHERE true ON CONFLICT DO NOTHING",
		&st->features)) ||
	    (rc = exec_count(s,
		"INSERT INTO main.model(kind, hardware_id, created, meta, data)"
		" SELECT a.kind, h.mid, a.created, a.meta, a.data FROM merge_src.model a"
		" LEFT JOIN temp.merge_hw h ON h.sid = a.hardware_id"
		" WHERE NOT EXISTS (SELECT 1 FROM main.model m WHERE m.kind = a.kind"
		"  AND m.hardware_id IS h.mid AND m.created = a.created AND m.meta IS a.meta"
		"  AND m.data IS a.data) ORDER BY a.id", &st->models)))
		return rc;
	st->duplicates = nSrc - st->records;
	return TK_OK;
}

/* SQLite's progress handler: non-zero interrupts the statement. */
static int merge_progress(void *p)
{
	volatile sig_atomic_t *stop = p;
	return *stop != 0;
}

/* The attached input is a store of this version. */
static int src_check(tk_store *s, const char *path)
{
	int64_t v, n;
	int rc = store_query_int(s, "PRAGMA merge_src.user_version", &v);
	if (!rc && v != STORE_VERSION)
		rc = tk_seterr(TK_ECORRUPT, "%s: not a tunekit record store of version %d (version"
		               " %lld)", path, STORE_VERSION, (long long)v);
	if (!rc)
		rc = store_query_int(s, "SELECT count(*) FROM merge_src.sqlite_schema WHERE type ="
		                        " 'table' AND name IN ('hardware', 'task', 'config', 'run',"
		                        " 'run_log', 'foreign_record', 'measurement', 'feature',"
		                        " 'model')", &n);
	if (!rc && n != 9)
		rc = tk_seterr(TK_ECORRUPT, "%s: not a tunekit record store (tables missing)", path);
	return rc;
}

int store_merge(tk_store *out, const char *path, volatile sig_atomic_t *stop,
                store_merge_stats *st)
{
	sqlite3 *db = store_db(out);
	sqlite3_stmt *at;
	char *zUri;
	int rc;

	assert(out && path && st);
	memset(st, 0, sizeof *st);
	if (!(zUri = store_uri(path, "mode=ro")))
		return tk_seterr(TK_ENOMEM, "out of memory");
	rc = store_prepare(out, "ATTACH ?1 AS merge_src", &at);
	if (!rc) {
		store_bind_text(at, 1, zUri);
		rc = store_step_done(out, at);
		sqlite3_finalize(at);
		if (rc) { /* the message names the output: say which file failed */
			char zWhy[512];
			snprintf(zWhy, sizeof zWhy, "%s", tk_errmsg());
			rc = tk_seterr(rc, "%s: cannot attach it (%s)", path, zWhy);
		}
	}
	free(zUri);
	if (rc)
		return rc;
	if (stop)
		sqlite3_progress_handler(db, 1000, merge_progress, (void *)stop);
	if (!(rc = src_check(out, path)) && !(rc = store_begin(out))) {
		if (!(rc = store_exec_sql(out, zDropTables)) && !(rc = store_exec_sql(out, zMapTables)) &&
		    !(rc = merge_keys(out, st)) && !(rc = merge_runs(out, st)) &&
		    !(rc = merge_rows(out, st)) && !(rc = store_exec_sql(out, zDropTables)))
			rc = store_commit(out);
		if (rc)
			store_rollback(out);
	}
	if (stop)
		sqlite3_progress_handler(db, 0, NULL, NULL);
	if (rc && stop && *stop)
		rc = tk_seterr(TK_EINTR, "interrupted: nothing of %s was merged", path);
	if (rc)
		memset(st, 0, sizeof *st);
	sqlite3_exec(db, "DETACH merge_src", NULL, NULL, NULL);
	return rc;
}
