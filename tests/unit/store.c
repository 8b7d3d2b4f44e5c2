/*
 * Unit tests for lib/store: creating and reopening a store, the get-or-create
 * and measurement round trip through every query, refusing files that are
 * not tunekit stores, damaged times BLOBs, a writer killed mid-batch, and a
 * reader that does not block a writer. Files live in a mkdtemp() directory
 * removed at exit.
 */
#include "unit.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.h"
#include "store/store_tuning.h"
#include "store/store_int.h"
#include "store/store_report.h"
#include "util/util.h"

/* ---- helpers -------------------------------------------------------- */

static int file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* One integer from a query on a raw connection; -12345 on error. */
static long long sql_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	long long v = -12345;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return v;
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* One text value from a query, copied into buf; "" on error or NULL. */
static const char *sql_text(sqlite3 *db, const char *sql, char *buf, size_t n)
{
	sqlite3_stmt *st;
	buf[0] = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return buf;
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		snprintf(buf, n, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return buf;
}

/* Run SQL on a raw connection to path (outside the store API). */
static int sql_on(const char *path, const char *sql)
{
	sqlite3 *db;
	int rc = sqlite3_open(path, &db);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

static int contains(const char *hay, const char *needle)
{
	return strstr(hay, needle) != NULL;
}

/* Collects records from query callbacks (copies what it checks). */
typedef struct recs {
	int n, stop_after, stop_value;
	store_rec r[16];
	char task[16][64], config[16][64], sched[16][64], hw[16][64], msg[16][64];
	int has_msg[16];
} recs;

static int recs_cb(void *ctx, const store_rec *r)
{
	recs *c = ctx;
	if (c->n < 16) {
		int i = c->n;
		c->r[i] = *r;
		snprintf(c->task[i], 64, "%s", r->task);
		snprintf(c->config[i], 64, "%s", r->config);
		snprintf(c->sched[i], 64, "%s", r->sched);
		snprintf(c->hw[i], 64, "%s", r->hardware);
		c->has_msg[i] = r->message != NULL;
		snprintf(c->msg[i], 64, "%s", r->message ? r->message : "");
	}
	c->n++;
	if (c->stop_after && c->n >= c->stop_after)
		return c->stop_value;
	return 0;
}

typedef struct runs {
	int n;
	store_runinfo r[8];
	char hw[8][64], argv[8][64], replay[8][64];
	int has_hw[8], has_replay[8];
} runs;

static int runs_cb(void *ctx, const store_runinfo *r)
{
	runs *c = ctx;
	if (c->n < 8) {
		int i = c->n;
		c->r[i] = *r;
		c->has_hw[i] = r->hardware != NULL;
		snprintf(c->hw[i], 64, "%s", r->hardware ? r->hardware : "");
		snprintf(c->argv[i], 64, "%s", r->argv);
		c->has_replay[i] = r->replay != NULL;
		snprintf(c->replay[i], 64, "%s", r->replay ? r->replay : "");
	}
	c->n++;
	return 0;
}

static const store_hw HW_A = {
	"cpu-a|avx2|gcc 12|2", "cpu", "Test CPU A", "avx2", "gcc 12.2", "-march=native", 2
};
static const store_hw HW_B = { "cpu-b", "imported", NULL, NULL, NULL, NULL, 0 };

/* A store at path with hardware A, one task and one config; closed again. */
static int seed_store(const char *path, int64_t *hw, int64_t *cfg)
{
	tk_store *s;
	int64_t task;
	int rc = store_open(path, 0, &s);
	if (!rc)
		rc = store_hardware_get(s, &HW_A, hw);
	if (!rc)
		rc = store_task_get(s, "dense:k=8,m=8,n=8", "dense", 1024, &task);
	if (!rc)
		rc = store_config_get(s, task, 0, "tile=1", "split i 1\n", cfg);
	store_close(s);
	return rc;
}

/* ---- 1. a new store ------------------------------------------------- */

TEST(test_create)
{
	const char *path = tpath("new.db");
	tk_store *s = NULL;
	char buf[256];

	CHECK(!file_exists(path));
	CHECK_EQ_INT(store_open(path, 0, &s), TK_OK);
	CHECK(s != NULL);
	if (!s)
		return;
	sqlite3 *db = store_db(s);
	CHECK_EQ_INT(sql_int(db, "PRAGMA user_version"), STORE_VERSION);
	CHECK_EQ_STR(sql_text(db, "PRAGMA journal_mode", buf, sizeof buf), "wal");
	CHECK_EQ_INT(sql_int(db, "PRAGMA foreign_keys"), 1);
	CHECK_EQ_INT(sql_int(db, "PRAGMA busy_timeout"), 10000);
	CHECK_EQ_INT(sql_int(db, "PRAGMA synchronous"), 1); /* NORMAL */
	CHECK_EQ_STR(sql_text(db, "SELECT group_concat(name, ',') FROM (SELECT name"
	                          " FROM sqlite_schema WHERE type = 'table' ORDER BY name)",
	                      buf, sizeof buf),
	             "config,feature,foreign_record,hardware,measurement,model,run,run_log,task");
	CHECK_EQ_INT(sql_int(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'index'"
	                         " AND name LIKE 'measurement_%'"), 3);
	store_close(s);
	CHECK(file_exists(path));

	/* Reopening keeps the store as it is. */
	s = NULL;
	CHECK_EQ_INT(store_open(path, 0, &s), TK_OK);
	if (s) {
		CHECK_EQ_INT(sql_int(store_db(s), "PRAGMA user_version"), STORE_VERSION);
		CHECK_EQ_INT(sql_int(store_db(s), "SELECT count(*) FROM sqlite_schema"
		                                  " WHERE type = 'table'"), 9);
	}
	store_close(s);
	/* A read-only open of an existing store works too. */
	s = NULL;
	CHECK_EQ_INT(store_open(path, STORE_READONLY, &s), TK_OK);
	CHECK(s != NULL);
	store_close(s);
	store_close(NULL);
}

/* ---- 2. round trip -------------------------------------------------- */

static int64_t add_meas(tk_store *s, int64_t cfg, int64_t hw, int64_t run, int trial,
                        int valid, double median, const double *times, int n)
{
	store_meas m = {
		.config_id = cfg, .hardware_id = hw, .run_id = run, .trial = trial,
		.valid = valid, .error = valid ? MEAS_OK : MEAS_RUNTIME_CRASH,
		.message = valid ? NULL : "signal 11",
		.mean = median * 1.1, .std = median / 10, .median = median,
		.number = 4, .nrepeat = n, .times = times, .compile_s = 0.25, .at = 0,
	};
	int64_t id = -1;
	int rc = store_meas_add(s, &m, &id);
	CHECK_EQ_INT(rc, TK_OK);
	if (rc)
		fprintf(stderr, "  %s\n", tk_errmsg());
	return id;
}

TEST(test_roundtrip)
{
	const char *path = tpath("rt.db");
	tk_store *s = NULL, *s2 = NULL;
	int64_t hwA, hwA2, hwB, t1, t1b, t2, c1, c1b, c1c, c2, c3, id, r1, r2, r3;
	recs q;
	runs rr;
	char buf[256];

	CHECK_EQ_INT(store_open(path, 0, &s), TK_OK);
	if (!s)
		return;
	sqlite3 *db = store_db(s);

	/* Hardware, task, config: idempotent, copied, distinct per key. */
	CHECK_EQ_INT(store_hardware_get(s, &HW_A, &hwA), TK_OK);
	CHECK_EQ_INT(store_hardware_get(s, &HW_A, &hwA2), TK_OK);
	CHECK_EQ_INT(hwA2, hwA);
	CHECK_EQ_INT(store_hardware_get(s, &HW_B, &hwB), TK_OK);
	CHECK(hwB != hwA);
	CHECK_EQ_INT(sql_int(db, "SELECT count(*) FROM hardware"), 2);
	CHECK_EQ_STR(sql_text(db, "SELECT cpu || '/' || isa || '/' || cc || '/' || spec"
	                          " || '/' || threads FROM hardware WHERE key LIKE 'cpu-a%'",
	                      buf, sizeof buf),
	             "Test CPU A/avx2/gcc 12.2/-march=native/2");
	CHECK_EQ_INT(sql_int(db, "SELECT count(*) FROM hardware WHERE key = 'cpu-b' AND"
	                         " kind = 'imported' AND cpu IS NULL AND threads IS NULL"), 1);

	CHECK_EQ_INT(store_task_get(s, "dense:k=8,m=8,n=8", "dense", 1024, &t1), TK_OK);
	CHECK_EQ_INT(store_task_get(s, "dense:k=8,m=8,n=8", "dense", 1024, &t1b), TK_OK);
	CHECK_EQ_INT(t1b, t1);
	CHECK_EQ_INT(store_task_get(s, "conv2d:c=3,h=8", "conv2d", 2048, &t2), TK_OK);
	CHECK(t2 != t1);

	CHECK_EQ_INT(store_config_get(s, t1, 0, "tile=1", "split i 1\n", &c1), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t1, 0, "tile=1", "split i 1\n", &c1b), TK_OK);
	CHECK_EQ_INT(c1b, c1);
	/* Existing (task, text): sched and idx stay as first stored. */
	CHECK_EQ_INT(store_config_get(s, t1, 5, "tile=1", "other\n", &c1c), TK_OK);
	CHECK_EQ_INT(c1c, c1);
	CHECK_EQ_INT(store_config_get(s, t1, -1, "tile=2", "split i 2\n", &c2), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t2, 3, "tile=1", "split j 1\n", &c3), TK_OK);
	CHECK(c2 != c1 && c3 != c1 && c3 != c2);
	CHECK_EQ_INT(sql_int(db, "SELECT count(*) FROM config"), 3);
	/* Foreign keys are enforced. */
	CHECK_EQ_INT(store_config_get(s, 9999, 0, "tile=1", "x", &id), TK_ESTORE);
	CHECK(contains(tk_errmsg(), path));
	CHECK(contains(tk_errmsg(), "FOREIGN KEY"));

	/* A second connection gets the same ids, creates no duplicate. */
	CHECK_EQ_INT(store_open(path, 0, &s2), TK_OK);
	if (s2) {
		CHECK_EQ_INT(store_hardware_get(s2, &HW_A, &hwA2), TK_OK);
		CHECK_EQ_INT(hwA2, hwA);
		CHECK_EQ_INT(store_config_get(s2, t1, 0, "tile=1", "split i 1\n", &c1b), TK_OK);
		CHECK_EQ_INT(c1b, c1);
		store_close(s2);
	}

	/* Runs. */
	store_run run1 = { "tunekit measure dense", "measure/random", NULL, 42, hwA };
	store_run run2 = { "tunekit import x.json", "import/autotvm", NULL, 7, 0 };
	store_run run3 = { "tunekit replay", "tune/random", "data.json", 1, hwB };
	CHECK_EQ_INT(store_run_begin(s, &run1, &r1), TK_OK);
	CHECK_EQ_INT(store_run_begin(s, &run2, &r2), TK_OK);
	CHECK_EQ_INT(store_run_begin(s, &run3, &r3), TK_OK);
	CHECK(r1 != r2 && r2 != r3);

	/* Measurements. In run 1, insertion order differs from trial order;
	 * m2 and m4 tie on median (m2 has the lower id and wins); m5 is invalid
	 * with a tiny median that must be ignored. */
	const double tA[5] = { 3e-3, 1e-3, 2e-3, 5e-3, 4e-3 };
	const double tB[5] = { 1.0 / 3, 3.141592653589793e-3, 1e-300, 5e-324, -0.0 };
	CHECK_EQ_INT(store_begin(s), TK_OK);
	int64_t m1 = add_meas(s, c1, hwA, r1, 0, 1, 3e-3, tA, 5);
	int64_t m2 = add_meas(s, c2, hwA, r1, 1, 1, 2e-3, tB, 5);
	int64_t m4 = add_meas(s, c2, hwA, r1, 3, 1, 2e-3, tA, 5);
	int64_t m3 = add_meas(s, c1, hwA, r1, 2, 0, 7.0, NULL, 0);
	int64_t m5 = add_meas(s, c1, hwA, r1, 4, 0, 1e-9, tA, 3);
	int64_t m6 = add_meas(s, c3, hwB, r2, 0, 1, 9e-3, tA, 5);
	int64_t m7 = add_meas(s, c1, hwB, r2, 1, 1, 4e-3, tA, 5);
	int64_t m8 = add_meas(s, c2, hwB, 0, 0, 1, 5e-3, tA, 5);
	CHECK_EQ_INT(store_commit(s), TK_OK);
	CHECK(m1 < m2 && m2 < m4 && m4 < m3 && m3 < m5 && m5 < m6 && m6 < m7 && m7 < m8);
	CHECK_EQ_INT(sql_int(db, "SELECT count(*) FROM measurement"), 8);
	/* Invalid records keep no statistics. */
	CHECK_EQ_INT(sql_int(db, "SELECT count(*) FROM measurement WHERE NOT valid AND"
	                         " mean IS NULL AND std IS NULL AND median IS NULL"), 2);

	/* store_meas_get: every field. */
	memset(&q, 0, sizeof q);
	CHECK_EQ_INT(store_meas_get(s, m1, recs_cb, &q), TK_OK);
	CHECK_EQ_INT(q.n, 1);
	if (q.n == 1) {
		store_rec *r = &q.r[0];
		CHECK_EQ_INT(r->id, m1);
		CHECK_EQ_INT(r->config_id, c1);
		CHECK_EQ_INT(r->task_id, t1);
		CHECK_EQ_INT(r->hardware_id, hwA);
		CHECK_EQ_INT(r->run_id, r1);
		CHECK_EQ_INT(r->trial, 0);
		CHECK_EQ_INT(r->valid, 1);
		CHECK_EQ_INT(r->error, MEAS_OK);
		CHECK_EQ_STR(q.task[0], "dense:k=8,m=8,n=8");
		CHECK_EQ_STR(q.config[0], "tile=1");
		CHECK_EQ_STR(q.sched[0], "split i 1\n");
		CHECK_EQ_STR(q.hw[0], HW_A.key);
		CHECK(!q.has_msg[0]);
		CHECK_EQ_INT(r->idx, 0);
		CHECK(r->flops == 1024);
		CHECK(r->mean == 3e-3 * 1.1);
		CHECK(r->std == 3e-3 / 10);
		CHECK(r->median == 3e-3);
		CHECK(r->compile_s == 0.25);
		CHECK(fabs(r->at - tk_walltime()) < 60);
		CHECK_EQ_INT(r->number, 4);
		CHECK_EQ_INT(r->nrepeat, 5);
	}
	memset(&q, 0, sizeof q);
	CHECK_EQ_INT(store_meas_get(s, m3, recs_cb, &q), TK_OK);
	CHECK_EQ_INT(q.n, 1);
	if (q.n == 1) {
		CHECK_EQ_INT(q.r[0].valid, 0);
		CHECK_EQ_INT(q.r[0].error, MEAS_RUNTIME_CRASH);
		CHECK(q.has_msg[0]);
		CHECK_EQ_STR(q.msg[0], "signal 11");
		CHECK(q.r[0].mean < 0 && q.r[0].std < 0 && q.r[0].median < 0);
		CHECK_EQ_INT(q.r[0].nrepeat, 0);
		CHECK_EQ_INT(q.r[0].trial, 2);
	}
	memset(&q, 0, sizeof q);
	CHECK_EQ_INT(store_meas_get(s, m2, recs_cb, &q), TK_OK);
	CHECK_EQ_INT(q.r[0].idx, -1); /* config stored with idx NULL */
	memset(&q, 0, sizeof q);
	CHECK_EQ_INT(store_meas_get(s, m8, recs_cb, &q), TK_OK);
	CHECK_EQ_INT(q.r[0].run_id, 0);
	memset(&q, 0, sizeof q);
	CHECK_EQ_INT(store_meas_get(s, 99999, recs_cb, &q), TK_ENOTFOUND);
	CHECK_EQ_INT(q.n, 0);
	CHECK(contains(tk_errmsg(), "99999"));

	/* store_meas_times: exact doubles back, NULL when none kept. */
	double *times = NULL;
	int n = -1;
	CHECK_EQ_INT(store_meas_times(s, m2, &times, &n), TK_OK);
	CHECK_EQ_INT(n, 5);
	CHECK(times && !memcmp(times, tB, sizeof tB));
	free(times);
	CHECK_EQ_INT(store_meas_times(s, m5, &times, &n), TK_OK);
	CHECK_EQ_INT(n, 3);
	CHECK(times && !memcmp(times, tA, 3 * sizeof(double)));
	free(times);
	CHECK_EQ_INT(store_meas_times(s, m3, &times, &n), TK_OK);
	CHECK_EQ_INT(n, 0);
	CHECK(times == NULL);
	CHECK_EQ_INT(store_meas_times(s, 99999, &times, &n), TK_ENOTFOUND);

	/* store_run_records: trial order, every record of the run only. */
	memset(&q, 0, sizeof q);
	CHECK_EQ_INT(store_run_records(s, r1, recs_cb, &q), TK_OK);
	CHECK_EQ_INT(q.n, 5);
	if (q.n == 5) {
		CHECK_EQ_INT(q.r[0].id, m1);
		CHECK_EQ_INT(q.r[1].id, m2);
		CHECK_EQ_INT(q.r[2].id, m3);
		CHECK_EQ_INT(q.r[3].id, m4);
		CHECK_EQ_INT(q.r[4].id, m5);
		for (int i = 0; i < 5; i++)
			CHECK_EQ_INT(q.r[i].trial, i);
	}
	memset(&q, 0, sizeof q);
	CHECK_EQ_INT(store_run_records(s, r3, recs_cb, &q), TK_OK);
	CHECK_EQ_INT(q.n, 0);
	CHECK_EQ_INT(store_run_records(s, 9999, recs_cb, &q), TK_ENOTFOUND);

	/* store_best: per (task, hardware), ordered by task key then hardware
	 * key: (conv2d, B) = m6, (dense, A) = m4 (c2's median record: of m2
	 * and m4, equal in latency, the second by id), (dense, B) = m7. */
	memset(&q, 0, sizeof q);
	CHECK_EQ_INT(store_best(s, 0, recs_cb, &q), TK_OK);
	CHECK_EQ_INT(q.n, 3);
	if (q.n == 3) {
		CHECK_EQ_INT(q.r[0].id, m6);
		CHECK_EQ_INT(q.r[1].id, m4);
		CHECK_EQ_INT(q.r[2].id, m7);
		CHECK_EQ_STR(q.task[0], "conv2d:c=3,h=8");
		CHECK_EQ_STR(q.hw[1], HW_A.key);
		CHECK(q.r[1].median == 2e-3);
		CHECK(q.r[2].median == 4e-3);
	}
	memset(&q, 0, sizeof q);
	CHECK_EQ_INT(store_best(s, hwA, recs_cb, &q), TK_OK);
	CHECK_EQ_INT(q.n, 1);
	CHECK_EQ_INT(q.r[0].id, m4);
	memset(&q, 0, sizeof q);
	CHECK_EQ_INT(store_best(s, hwB, recs_cb, &q), TK_OK);
	CHECK_EQ_INT(q.n, 2);
	CHECK_EQ_INT(q.r[0].id, m6);
	CHECK_EQ_INT(q.r[1].id, m7);
	/* A callback stops the query with its own value. */
	memset(&q, 0, sizeof q);
	q.stop_after = 1;
	q.stop_value = 42;
	CHECK_EQ_INT(store_best(s, 0, recs_cb, &q), 42);
	CHECK_EQ_INT(q.n, 1);
	memset(&q, 0, sizeof q);
	q.stop_after = 2;
	q.stop_value = -3;
	CHECK_EQ_INT(store_run_records(s, r1, recs_cb, &q), -3);
	CHECK_EQ_INT(q.n, 2);

	/* store_runs. */
	CHECK_EQ_INT(store_run_end(s, r1), TK_OK);
	CHECK_EQ_INT(store_run_end(s, 9999), TK_ENOTFOUND);
	memset(&rr, 0, sizeof rr);
	CHECK_EQ_INT(store_runs(s, runs_cb, &rr), TK_OK);
	CHECK_EQ_INT(rr.n, 3);
	if (rr.n == 3) {
		CHECK_EQ_INT(rr.r[0].id, r1);
		CHECK_EQ_INT(rr.r[0].ntrials, 5);
		CHECK_EQ_INT(rr.r[0].nvalid, 3);
		CHECK(rr.r[0].best_median == 2e-3);
		CHECK_EQ_INT(rr.r[0].seed, 42);
		CHECK_EQ_INT(rr.r[0].hardware_id, hwA);
		CHECK_EQ_STR(rr.hw[0], HW_A.key);
		CHECK_EQ_STR(rr.argv[0], "tunekit measure dense");
		CHECK(!rr.has_replay[0]);
		CHECK(rr.r[0].ended >= rr.r[0].started && rr.r[0].started > 1e9);

		CHECK_EQ_INT(rr.r[1].id, r2);
		CHECK_EQ_INT(rr.r[1].ntrials, 2);
		CHECK_EQ_INT(rr.r[1].nvalid, 2);
		CHECK(rr.r[1].best_median == 4e-3);
		CHECK_EQ_INT(rr.r[1].hardware_id, 0);
		CHECK(!rr.has_hw[1]);
		CHECK(rr.r[1].ended < 0);

		CHECK_EQ_INT(rr.r[2].id, r3);
		CHECK_EQ_INT(rr.r[2].ntrials, 0);
		CHECK_EQ_INT(rr.r[2].nvalid, 0);
		CHECK(rr.r[2].best_median < 0);
		CHECK_EQ_STR(rr.hw[2], "cpu-b");
		CHECK_EQ_STR(rr.replay[2], "data.json");
		CHECK(rr.r[0].compile_s < 0 && rr.r[0].codegen_s < 0 && rr.r[0].ref_s < 0 &&
		      rr.r[0].store_s < 0);
	}

	/* The time split is summed over a run's processes (rounds), per key. */
	static const char *const aKey[] = { "seconds:codegen", "seconds:compile", "seconds:run",
	                                    "seconds:reference", "seconds:store" };
	for (int i = 0; i < ArraySize(aKey); i++) {
		CHECK_EQ_INT(store_run_log(s, r1, 5, aKey[i], 1.0 + i), TK_OK);
		CHECK_EQ_INT(store_run_log(s, r1, 9, aKey[i], 10.0 * (1 + i)), TK_OK);
	}
	memset(&rr, 0, sizeof rr);
	CHECK_EQ_INT(store_runs(s, runs_cb, &rr), TK_OK);
	if (rr.n == 3) {
		CHECK(rr.r[0].codegen_s == 11 && rr.r[0].compile_s == 22 && rr.r[0].run_s == 33);
		CHECK(rr.r[0].ref_s == 44 && rr.r[0].store_s == 55);
		CHECK(rr.r[0].search_s < 0 && rr.r[0].fit_s < 0);
		CHECK(rr.r[1].codegen_s < 0 && rr.r[1].store_s < 0);
	}

	/* Transactions: rollback drops the batch; not nestable. */
	CHECK_EQ_INT(store_begin(s), TK_OK);
	CHECK_EQ_INT(store_begin(s), TK_ESTORE);
	add_meas(s, c1, hwA, r1, 9, 1, 1e-6, tA, 5);
	CHECK_EQ_INT(sql_int(db, "SELECT count(*) FROM measurement"), 9);
	CHECK_EQ_INT(store_rollback(s), TK_OK);
	CHECK_EQ_INT(sql_int(db, "SELECT count(*) FROM measurement"), 8);
	CHECK_EQ_INT(store_rollback(s), TK_OK); /* none open: harmless */
	CHECK_EQ_INT(store_commit(s), TK_ESTORE);
	store_close(s);
}

/* store_best and store_lookup take a configuration's median record, so
 * that one lucky timing does not make it best: X at 1, 9 and 9 ms (median
 * 9) loses to Y, measured once at 5; Z at 3 and 4.5 (the slower middle one
 * of an even count) beats Y until three more records of 6, 7 and 8 move
 * its median to 6. */
TEST(test_best_is_median)
{
	tk_store *s = NULL;
	int64_t hw, t, x, y, z, run;
	recs q;
	CHECK_EQ_INT(store_open(tpath("median.db"), 0, &s), TK_OK);
	if (!s)
		return;
	store_run r = { "tunekit tune", "tune/xgb+sa", NULL, 1, 0 };
	CHECK_EQ_INT(store_hardware_get(s, &HW_A, &hw), TK_OK);
	r.hardware_id = hw;
	CHECK_EQ_INT(store_run_begin(s, &r, &run), TK_OK);
	CHECK_EQ_INT(store_task_get(s, "dense:k=8,m=8,n=8", "dense", 1024, &t), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t, 0, "x", "x\n", &x), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t, 1, "y", "y\n", &y), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t, 2, "z", "z\n", &z), TK_OK);
	add_meas(s, x, hw, run, 0, 1, 1e-3, NULL, 0);
	int64_t mx = add_meas(s, x, hw, run, 1, 1, 9e-3, NULL, 0);
	add_meas(s, x, hw, run, 2, 1, 9e-3, NULL, 0);
	int64_t my = add_meas(s, y, hw, run, 3, 1, 5e-3, NULL, 0);
	add_meas(s, z, hw, run, 4, 1, 3e-3, NULL, 0);
	int64_t mz = add_meas(s, z, hw, run, 5, 1, 4.5e-3, NULL, 0);
	memset(&q, 0, sizeof q);
	CHECK_EQ_INT(store_best(s, hw, recs_cb, &q), TK_OK);
	CHECK_EQ_INT(q.n, 1);
	CHECK_EQ_INT(q.r[0].id, mz);
	for (int i = 0; i < 3; i++)
		add_meas(s, z, hw, run, 6 + i, 1, (6 + i) * 1e-3, NULL, 0);
	memset(&q, 0, sizeof q);
	CHECK_EQ_INT(store_best(s, hw, recs_cb, &q), TK_OK);
	CHECK_EQ_INT(q.n, 1);
	CHECK_EQ_INT(q.r[0].id, my);

	/* A replay returns the same record, its compile time the largest of
	 * the configuration's (repeats from the kernel cache compiled
	 * nothing); invalid records count only where none is valid. */
	int64_t w;
	CHECK_EQ_INT(store_config_get(s, t, 3, "w", "w\n", &w), TK_OK);
	int64_t mw = add_meas(s, w, hw, run, 9, 0, 0, NULL, 0);
	add_meas(s, w, hw, run, 10, 0, 0, NULL, 0);
	add_meas(s, x, hw, run, 11, 0, 0, NULL, 0);
	CHECK_EQ_INT(sqlite3_exec(store_db(s), "UPDATE measurement SET compile_s = 0"
	                          " WHERE trial != 0; UPDATE measurement SET compile_s = 2"
	                          " WHERE trial = 0", NULL, NULL, NULL), SQLITE_OK);
	struct { const char *config; int64_t id; double compile_s; } want[] = {
		{ "x", mx, 2 }, { "y", my, 0 }, { "z", 0, 0 }, { "w", mw, 0 },
	};
	for (int i = 0; i < 4; i++) {
		memset(&q, 0, sizeof q);
		CHECK_EQ_INT(store_lookup(s, "dense:k=8,m=8,n=8", want[i].config, hw, recs_cb, &q),
		             TK_OK);
		CHECK_EQ_INT(q.n, 1);
		if (want[i].id)
			CHECK_EQ_INT(q.r[0].id, want[i].id);
		else
			CHECK(q.r[0].median == 6e-3);
		CHECK(q.r[0].compile_s == want[i].compile_s);
	}
	CHECK_EQ_INT(store_lookup(s, "dense:k=8,m=8,n=8", "v", hw, recs_cb, &q), TK_ENOTFOUND);
	store_close(s);
}

/* ---- 2b. the lookups of report and export ---------------------------- */

TEST(test_report_lookups)
{
	tk_store *s = NULL;
	int64_t hwA, hwB, t1, t2, c1, c2, r1, r2, id = -1;
	double started = -1, best = 0;
	char *key = NULL, *spec = NULL;

	CHECK_EQ_INT(store_open(tpath("lookups.db"), 0, &s), TK_OK);
	if (!s)
		return;
	/* no runs yet */
	CHECK_EQ_INT(store_run_latest(s, &id), TK_ENOTFOUND);
	CHECK_EQ_STR(tk_errmsg(), "the store has no runs");
	CHECK_EQ_INT(store_run_info(s, 1, &started, NULL, 0), TK_ENOTFOUND);
	CHECK_EQ_STR(tk_errmsg(), "no run 1");

	CHECK_EQ_INT(store_hardware_get(s, &HW_A, &hwA), TK_OK);
	CHECK_EQ_INT(store_hardware_get(s, &HW_B, &hwB), TK_OK);
	CHECK_EQ_INT(store_task_get(s, "dense:k=8,m=8,n=8", "dense", 1024, &t1), TK_OK);
	CHECK_EQ_INT(store_task_get(s, "dense:k=4,m=4,n=4", "dense", 128, &t2), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t1, 0, "a", "a\n", &c1), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t1, 1, "b", "b\n", &c2), TK_OK);
	store_run r = { "tunekit measure", "measure", NULL, 1, hwA };
	CHECK_EQ_INT(store_run_begin(s, &r, &r1), TK_OK);
	CHECK_EQ_INT(store_run_begin(s, &r, &r2), TK_OK);
	CHECK_EQ_INT(store_run_latest(s, &id), TK_OK);
	CHECK_EQ_INT(id, r2);
	CHECK_EQ_INT(store_run_info(s, r1, &started, NULL, 0), TK_OK);
	CHECK(started > 1.6e9);
	char method[8];
	CHECK_EQ_INT(store_run_info(s, r1, &started, method, sizeof method), TK_OK);
	CHECK_EQ_STR(method, "measure");
	CHECK_EQ_INT(store_run_info(s, r1, &started, method, 5), TK_OK);
	CHECK_EQ_STR(method, "meas"); /* cut to the buffer */
	CHECK_EQ_INT(store_run_info(s, r2 + 1, &started, NULL, 0), TK_ENOTFOUND);

	/* best: valid, positive medians of the task on that hardware, any run */
	CHECK_EQ_INT(store_task_best(s, t1, hwA, &best), TK_OK);
	CHECK_EQ_INT(best, -1);
	add_meas(s, c1, hwA, r1, 0, 1, 4e-3, NULL, 0);
	add_meas(s, c2, hwA, r2, 0, 1, 3e-3, NULL, 0);
	add_meas(s, c2, hwA, r2, 1, 0, 1e-3, NULL, 0);  /* invalid: not counted */
	add_meas(s, c1, hwA, 0, 1, 1, 0, NULL, 0);      /* zero median: not counted */
	add_meas(s, c1, hwB, r1, 2, 1, 2e-3, NULL, 0);  /* other hardware */
	CHECK_EQ_INT(store_task_best(s, t1, hwA, &best), TK_OK);
	CHECK_NEAR(best, 3e-3, 1e-15);
	CHECK_EQ_INT(store_task_best(s, t1, hwB, &best), TK_OK);
	CHECK_NEAR(best, 2e-3, 1e-15);
	CHECK_EQ_INT(store_task_best(s, t2, hwA, &best), TK_OK);
	CHECK_EQ_INT(best, -1);

	/* hardware by id or by key, with or without a spec */
	id = -1;
	CHECK_EQ_INT(store_hardware_find(s, hwA, NULL, &id, &key, &spec), TK_OK);
	CHECK_EQ_INT(id, hwA);
	CHECK_EQ_STR(key, HW_A.key);
	CHECK_EQ_STR(spec, HW_A.spec);
	free(key);
	free(spec);
	id = -1;
	CHECK_EQ_INT(store_hardware_find(s, 0, "cpu-b", &id, &key, &spec), TK_OK);
	CHECK_EQ_INT(id, hwB);
	CHECK_EQ_STR(key, "cpu-b");
	CHECK(spec == NULL);
	free(key);
	CHECK_EQ_INT(store_hardware_find(s, 0, "cpu-b", &id, NULL, NULL), TK_OK);
	key = spec = (char *)"x";
	CHECK_EQ_INT(store_hardware_find(s, hwB + 5, NULL, &id, &key, &spec), TK_ENOTFOUND);
	CHECK(key == NULL && spec == NULL);
	CHECK(contains(tk_errmsg(), "no hardware"));
	CHECK_EQ_INT(store_hardware_find(s, 0, "cpu-z", &id, &key, &spec), TK_ENOTFOUND);
	CHECK_EQ_STR(tk_errmsg(), "no hardware 'cpu-z' in the store");
	CHECK_EQ_INT(store_hardware_find(s, 0, NULL, &id, NULL, NULL), TK_ENOTFOUND);

	/* a failing query is TK_ESTORE with the store's path in the message */
	CHECK_EQ_INT(sqlite3_exec(store_db(s), "ALTER TABLE run RENAME TO run_gone",
	                          NULL, NULL, NULL), SQLITE_OK);
	CHECK_EQ_INT(store_run_latest(s, &id), TK_ESTORE);
	CHECK(contains(tk_errmsg(), "lookups.db"));
	CHECK_EQ_INT(store_run_info(s, r1, &started, NULL, 0), TK_ESTORE);
	store_close(s);
}

/* ---- 3. an empty file ----------------------------------------------- */

TEST(test_empty_file)
{
	const char *path = tpath("empty.db");
	tk_store *s = (tk_store *)&s;
	struct stat st;
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	CHECK(fd >= 0);
	close(fd);

	/* Read-only cannot create the schema. */
	CHECK_EQ_INT(store_open(path, STORE_READONLY, &s), TK_ECORRUPT);
	CHECK(s == NULL);
	CHECK(stat(path, &st) == 0 && st.st_size == 0);

	CHECK_EQ_INT(store_open(path, 0, &s), TK_OK);
	if (!s)
		return;
	char buf[64];
	CHECK_EQ_INT(sql_int(store_db(s), "PRAGMA user_version"), STORE_VERSION);
	CHECK_EQ_STR(sql_text(store_db(s), "PRAGMA journal_mode", buf, sizeof buf), "wal");
	CHECK_EQ_INT(sql_int(store_db(s), "SELECT count(*) FROM sqlite_schema"
	                                  " WHERE type = 'table'"), 9);
	int64_t task;
	CHECK_EQ_INT(store_task_get(s, "t", "dense", 1, &task), TK_OK);
	store_close(s);
}

/* ---- 3a. bounded records: kept and read back, never a best ----------- */

TEST(test_bounded)
{
	const char *path = tpath("bounded.db");
	tk_store *s = NULL;
	int64_t hw, t1, t2, c1, c2, c3, r1;
	recs q;
	runs rr;
	const double t[1] = { 1e-3 };

	CHECK_EQ_INT(store_open(path, 0, &s), TK_OK);
	if (!s)
		return;
	store_run run1 = { "tunekit tune", "tune/xgb+sa", NULL, 1, 0 };
	CHECK_EQ_INT(store_hardware_get(s, &HW_A, &hw), TK_OK);
	run1.hardware_id = hw;
	CHECK_EQ_INT(store_task_get(s, "dense:k=8,m=8,n=8", "dense", 1024, &t1), TK_OK);
	CHECK_EQ_INT(store_task_get(s, "dense:k=9,m=9,n=9", "dense", 1458, &t2), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t1, 0, "tile=1", "a\n", &c1), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t1, 1, "tile=2", "b\n", &c2), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t2, 0, "tile=1", "c\n", &c3), TK_OK);
	CHECK_EQ_INT(store_run_begin(s, &run1, &r1), TK_OK);
	/* Task 1: c1 timed in full at 5 ms, c2 bounded at 1 ms (faster: a
	 * record no tune makes, but a best must not rest on it either way);
	 * task 2: only a bounded record. An invalid record is never bounded. */
	store_meas m = { .config_id = c1, .hardware_id = hw, .run_id = r1, .trial = 0,
	                 .valid = 1, .mean = 5e-3, .median = 5e-3, .number = 1, .nrepeat = 1,
	                 .times = t };
	int64_t m1, m2, m3, m4;
	CHECK_EQ_INT(store_meas_add(s, &m, &m1), TK_OK);
	m.config_id = c2, m.trial = 1, m.mean = m.median = 1e-3, m.bounded = 1;
	CHECK_EQ_INT(store_meas_add(s, &m, &m2), TK_OK);
	m.config_id = c3, m.trial = 2;
	CHECK_EQ_INT(store_meas_add(s, &m, &m3), TK_OK);
	m.trial = 3, m.valid = 0, m.error = MEAS_RUNTIME_CRASH, m.nrepeat = 0;
	CHECK_EQ_INT(store_meas_add(s, &m, &m4), TK_OK);
	CHECK_EQ_INT(sql_int(store_db(s), "SELECT count(*) FROM measurement WHERE bounded"), 2);

	memset(&q, 0, sizeof q);
	CHECK_EQ_INT(store_run_records(s, r1, recs_cb, &q), TK_OK);
	CHECK_EQ_INT(q.n, 4);
	if (q.n == 4) {
		CHECK_EQ_INT(q.r[0].bounded, 0);
		CHECK_EQ_INT(q.r[1].bounded, 1);
		CHECK_EQ_INT(q.r[2].bounded, 1);
		CHECK_EQ_INT(q.r[3].bounded, 0);
	}
	/* store_best: task 1's best is c1; task 2 has none. */
	memset(&q, 0, sizeof q);
	CHECK_EQ_INT(store_best(s, 0, recs_cb, &q), TK_OK);
	CHECK_EQ_INT(q.n, 1);
	CHECK_EQ_INT(q.r[0].id, m1);
	CHECK(q.r[0].median == 5e-3);
	double best;
	CHECK_EQ_INT(store_task_best(s, t1, hw, &best), TK_OK);
	CHECK(best == 5e-3);
	CHECK_EQ_INT(store_task_best(s, t2, hw, &best), TK_OK);
	CHECK(best < 0);
	/* store_runs counts them; the run's best latency is not one of them. */
	memset(&rr, 0, sizeof rr);
	CHECK_EQ_INT(store_runs(s, runs_cb, &rr), TK_OK);
	CHECK_EQ_INT(rr.n, 1);
	CHECK_EQ_INT(rr.r[0].nbounded, 2);
	CHECK(rr.r[0].best_median == 5e-3);
	store_close(s);
}

/* ---- 3b. a version-1 store migrates to the current version ---------- */

TEST(test_migrate_v1)
{
	const char *path = tpath("v1.db");
	FILE *f = fopen("tests/data/store-v1.sql", "r");
	char sql[16384];
	size_t n = f ? fread(sql, 1, sizeof sql - 1, f) : 0;
	if (f)
		fclose(f);
	CHECK(n > 1000);
	sql[n] = 0;
	sqlite3 *db;
	CHECK_EQ_INT(sqlite3_open(path, &db), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_exec(db,
		"PRAGMA user_version = 1;"
		"INSERT INTO hardware(key, kind) VALUES ('hw', 'cpu');"
		"INSERT INTO task(key, op, flops) VALUES ('dense:k=1,m=1,n=1', 'dense', 2);"
		"INSERT INTO run(argv, method, started) VALUES ('x', 'measure', 1);", NULL, NULL, NULL),
	             SQLITE_OK);
	sqlite3_close(db);

	tk_store *s;
	CHECK_EQ_INT(store_open(path, STORE_READONLY, &s), TK_ESTORE); /* read-only cannot upgrade */
	CHECK_EQ_INT(store_open(path, 0, &s), TK_OK);
	if (!s)
		return;
	CHECK_EQ_INT(sql_int(store_db(s), "PRAGMA user_version"), STORE_VERSION);
	CHECK_EQ_INT(sql_int(store_db(s), "SELECT count(*) FROM run WHERE params IS NULL"), 1);
	CHECK_EQ_INT(sql_int(store_db(s), "SELECT count(*) FROM task"), 1);
	CHECK_EQ_INT(sql_int(store_db(s), "SELECT count(*) FROM foreign_record"), 0);
	CHECK_EQ_INT(sql_int(store_db(s), "SELECT count(*) FROM run_log"), 0);
	/* version 3: the measurement's load */
	CHECK_EQ_INT(sql_int(store_db(s), "SELECT count(*) FROM pragma_table_info('measurement')"
	                                  " WHERE name = 'load'"), 1);
	/* version 4: bounded timing; older records were timed in full */
	CHECK_EQ_INT(sql_int(store_db(s), "SELECT count(*) FROM pragma_table_info('measurement')"
	                                  " WHERE name = 'bounded' AND \"notnull\" AND dflt_value = '0'"), 1);
	store_close(s);
	/* and opens again without migrating */
	CHECK_EQ_INT(store_open(path, STORE_READONLY, &s), TK_OK);
	store_close(s);
}

/* ---- 4. files that are not tunekit stores --------------------------- */

TEST(test_corrupt)
{
	tk_store *s;
	char buf[64];

	/* Random bytes: refused, and left as they were. */
	const char *junk = tpath("junk.db");
	unsigned char bytes[8192], back[8192];
	tk_rng rng;
	tk_rng_seed(&rng, 1, 2);
	for (size_t i = 0; i < sizeof bytes; i++)
		bytes[i] = (unsigned char)tk_rng_u32(&rng);
	FILE *f = fopen(junk, "wb");
	CHECK(f && fwrite(bytes, 1, sizeof bytes, f) == sizeof bytes);
	if (f)
		fclose(f);
	s = (tk_store *)&s;
	CHECK_EQ_INT(store_open(junk, 0, &s), TK_ECORRUPT);
	CHECK(s == NULL);
	CHECK(contains(tk_errmsg(), junk));
	CHECK(contains(tk_errmsg(), "not an SQLite database"));
	s = (tk_store *)&s;
	CHECK_EQ_INT(store_open(junk, STORE_READONLY, &s), TK_ECORRUPT);
	CHECK(s == NULL);
	f = fopen(junk, "rb");
	CHECK(f && fread(back, 1, sizeof back, f) == sizeof back && fgetc(f) == EOF);
	if (f)
		fclose(f);
	CHECK(!memcmp(bytes, back, sizeof bytes));

	/* Someone else's SQLite database: refused, untouched. */
	const char *other = tpath("other.db");
	CHECK_EQ_INT(sql_on(other, "CREATE TABLE foo(x); INSERT INTO foo VALUES (1)"),
	             SQLITE_OK);
	s = (tk_store *)&s;
	CHECK_EQ_INT(store_open(other, 0, &s), TK_ECORRUPT);
	CHECK(s == NULL);
	CHECK(contains(tk_errmsg(), "unexpected table 'foo'"));
	CHECK(contains(tk_errmsg(), other));
	sqlite3 *db;
	CHECK_EQ_INT(sqlite3_open(other, &db), SQLITE_OK);
	CHECK_EQ_INT(sql_int(db, "SELECT count(*) FROM sqlite_schema"), 1);
	CHECK_EQ_INT(sql_int(db, "PRAGMA user_version"), 0);
	CHECK_EQ_STR(sql_text(db, "PRAGMA journal_mode", buf, sizeof buf), "delete");
	sqlite3_close(db);

	/* A store from a newer tunekit. */
	const char *newer = tpath("newer.db");
	s = NULL;
	CHECK_EQ_INT(store_open(newer, 0, &s), TK_OK);
	store_close(s);
	CHECK_EQ_INT(sql_on(newer, "PRAGMA user_version = 99"), SQLITE_OK);
	s = (tk_store *)&s;
	CHECK_EQ_INT(store_open(newer, 0, &s), TK_ECORRUPT);
	CHECK(s == NULL);
	CHECK(contains(tk_errmsg(), "version 99 is newer"));
	CHECK_EQ_INT(store_open(newer, STORE_READONLY, &s), TK_ECORRUPT);

	/* A store with a foreign table, and one missing a table. */
	const char *extra = tpath("extra.db");
	s = NULL;
	CHECK_EQ_INT(store_open(extra, 0, &s), TK_OK);
	store_close(s);
	CHECK_EQ_INT(sql_on(extra, "CREATE TABLE notes(x)"), SQLITE_OK);
	CHECK_EQ_INT(store_open(extra, 0, &s), TK_ECORRUPT);
	CHECK(contains(tk_errmsg(), "'notes'"));
	CHECK_EQ_INT(sql_on(extra, "DROP TABLE notes; DROP TABLE model"), SQLITE_OK);
	CHECK_EQ_INT(store_open(extra, 0, &s), TK_ECORRUPT);
	CHECK(contains(tk_errmsg(), "'model' is missing"));

	/* Read-only on a missing file fails without creating it. */
	const char *missing = tpath("missing.db");
	s = (tk_store *)&s;
	CHECK_EQ_INT(store_open(missing, STORE_READONLY, &s), TK_ESTORE);
	CHECK(s == NULL);
	CHECK(contains(tk_errmsg(), missing));
	CHECK(contains(tk_errmsg(), "No such file"));
	CHECK(!file_exists(missing));

	/* Read-only stores read but refuse writes. */
	const char *ro = tpath("ro.db");
	int64_t hw, cfg, id;
	CHECK_EQ_INT(seed_store(ro, &hw, &cfg), TK_OK);
	s = NULL;
	CHECK_EQ_INT(store_open(ro, STORE_READONLY, &s), TK_OK);
	if (s) {
		CHECK_EQ_STR(sql_text(store_db(s), "SELECT key FROM hardware", buf, sizeof buf),
		             HW_A.key);
		CHECK_EQ_INT(store_hardware_get(s, &HW_A, &id), TK_ESTORE);
		CHECK(contains(tk_errmsg(), "readonly"));
		store_close(s);
	}
}

/* ---- damaged times BLOBs -------------------------------------------- */

TEST(test_bad_times)
{
	const char *path = tpath("times.db");
	const double t[4] = { 1, 2, 3, 4 };
	tk_store *s = NULL;
	int64_t hw, cfg, id;
	double *times = NULL;
	int n = 0;

	CHECK_EQ_INT(seed_store(path, &hw, &cfg), TK_OK);
	CHECK_EQ_INT(store_open(path, 0, &s), TK_OK);
	if (!s)
		return;
	id = add_meas(s, cfg, hw, 0, 0, 1, 2.5, t, 4);
	CHECK_EQ_INT(store_meas_times(s, id, &times, &n), TK_OK);
	CHECK_EQ_INT(n, 4);
	CHECK(times && times[3] == 4);
	free(times);

	/* The stored form: 4-byte little-endian length, then zlib. */
	sqlite3 *db = store_db(s);
	CHECK_EQ_INT(sql_int(db, "SELECT hex(substr(times, 1, 5)) = '2000000078'"
	                         " FROM measurement"), 1);

	static const char *const bad[] = {
		"x'0102'",                          /* shorter than the prefix */
		"x'20000000'",                      /* no data */
		"x'200000007801'",                  /* truncated stream */
		"x'21000000' || substr(times, 5)",  /* length not a multiple of 8 */
		"x'18000000' || substr(times, 5)",  /* length says 3 values */
		"x'00010000' || substr(times, 5)",  /* length says 32 values */
		"x'20000000' || zeroblob(20)",      /* not zlib */
		"x'ffffff7f' || substr(times, 5)",  /* absurd length */
	};
	char sql[256];
	for (int i = 0; i < ArraySize(bad); i++) {
		snprintf(sql, sizeof sql, "UPDATE measurement SET times = CAST(%s AS BLOB)"
		         " WHERE id = %lld",
		         bad[i], (long long)id);
		CHECK_EQ_INT(sql_on(path, sql), SQLITE_OK);
		times = (double *)&n;
		n = -1;
		CHECK_EQ_INT(store_meas_times(s, id, &times, &n), TK_ECORRUPT);
		CHECK(times == NULL && n == 0);
		CHECK(contains(tk_errmsg(), "damaged times"));
		/* Restore the good blob for the next case. */
		snprintf(sql, sizeof sql, "DELETE FROM measurement WHERE id = %lld",
		         (long long)id);
		CHECK_EQ_INT(sql_on(path, sql), SQLITE_OK);
		id = add_meas(s, cfg, hw, 0, 0, 1, 2.5, t, 4);
	}
	/* A good blob that disagrees with nrepeat. */
	snprintf(sql, sizeof sql, "UPDATE measurement SET nrepeat = 3 WHERE id = %lld",
	         (long long)id);
	CHECK_EQ_INT(sql_on(path, sql), SQLITE_OK);
	CHECK_EQ_INT(store_meas_times(s, id, &times, &n), TK_ECORRUPT);
	CHECK(contains(tk_errmsg(), "nrepeat"));
	/* Without nrepeat to compare, the length prefix alone must match. */
	snprintf(sql, sizeof sql, "UPDATE measurement SET nrepeat = NULL,"
	         " times = CAST(x'28000000' || substr(times, 5) AS BLOB) WHERE id = %lld",
	         (long long)id);
	CHECK_EQ_INT(sql_on(path, sql), SQLITE_OK);
	CHECK_EQ_INT(store_meas_times(s, id, &times, &n), TK_ECORRUPT);
	CHECK(contains(tk_errmsg(), "short data"));
	store_close(s);
}

/* ---- 5. a killed writer --------------------------------------------- */

static void child_writer(const char *path, int64_t hw, int64_t cfg)
{
	tk_store *s;
	double t[200];
	for (int i = 0; i < 200; i++)
		t[i] = 1e-3 + i * 1e-7 + 1e-12 * (i * i % 97);
	if (store_open(path, 0, &s))
		_exit(2);
	/* A tiny page cache makes the second batch spill uncommitted pages
	 * into the WAL before the kill, which recovery must ignore. */
	sqlite3_exec(store_db(s), "PRAGMA cache_size = 2", NULL, NULL, NULL);
	for (int batch = 0; batch < 2; batch++) {
		if (store_begin(s))
			_exit(3);
		for (int i = 0; i < 10; i++) {
			store_meas m = {
				.config_id = cfg, .hardware_id = hw, .trial = batch * 10 + i,
				.valid = 1, .mean = 1e-3, .median = 1e-3, .number = 1,
				.nrepeat = 200, .times = t,
			};
			int64_t id;
			if (store_meas_add(s, &m, &id))
				_exit(4);
		}
		if (batch == 1)
			raise(SIGKILL);
		if (store_commit(s))
			_exit(5);
	}
	_exit(6); /* not reached */
}

TEST(test_killed_writer)
{
	const char *path = tpath("killed.db");
	int64_t hw, cfg;
	tk_store *s = NULL;
	char buf[64];
	int status = 0;

	CHECK_EQ_INT(seed_store(path, &hw, &cfg), TK_OK);
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		child_writer(path, hw, cfg);
	CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	if (WIFEXITED(status))
		fprintf(stderr, "  child exited %d\n", WEXITSTATUS(status));

	CHECK_EQ_INT(store_open(path, 0, &s), TK_OK);
	if (!s)
		return;
	sqlite3 *db = store_db(s);
	CHECK_EQ_INT(sql_int(db, "SELECT count(*) FROM measurement"), 10);
	CHECK_EQ_INT(sql_int(db, "SELECT max(trial) FROM measurement"), 9);
	CHECK_EQ_STR(sql_text(db, "PRAGMA integrity_check", buf, sizeof buf), "ok");
	double *times = NULL;
	int n = 0;
	int64_t last = sql_int(db, "SELECT max(id) FROM measurement");
	CHECK_EQ_INT(store_meas_times(s, last, &times, &n), TK_OK);
	CHECK_EQ_INT(n, 200);
	CHECK(times && times[199] == 1e-3 + 199 * 1e-7 + 1e-12 * (199 * 199 % 97));
	free(times);
	store_close(s);
}

/* ---- 6. a reader does not block a writer ---------------------------- */

TEST(test_reader_writer)
{
	const char *path = tpath("rw.db");
	const double t[2] = { 1, 2 };
	int64_t hw, cfg;
	tk_store *reader = NULL, *writer = NULL;
	sqlite3_stmt *st = NULL;

	CHECK_EQ_INT(seed_store(path, &hw, &cfg), TK_OK);
	CHECK_EQ_INT(store_open(path, 0, &reader), TK_OK);
	CHECK_EQ_INT(store_open(path, 0, &writer), TK_OK);
	if (!reader || !writer)
		goto done;
	add_meas(writer, cfg, hw, 0, 0, 1, 1.5, t, 2);
	add_meas(writer, cfg, hw, 0, 1, 1, 1.5, t, 2);

	/* Fail at once instead of waiting out the busy timeout. */
	sqlite3_exec(store_db(writer), "PRAGMA busy_timeout = 0", NULL, NULL, NULL);
	CHECK_EQ_INT(sqlite3_prepare_v2(store_db(reader), "SELECT id FROM measurement",
	                                -1, &st, NULL), SQLITE_OK);
	CHECK_EQ_INT(sqlite3_step(st), SQLITE_ROW);

	CHECK_EQ_INT(store_begin(writer), TK_OK);
	add_meas(writer, cfg, hw, 0, 2, 1, 1.5, t, 2);
	/* A writer's open batch does not block readers either. */
	CHECK_EQ_INT(sql_int(store_db(reader), "SELECT count(*) FROM measurement"), 2);
	CHECK_EQ_INT(store_commit(writer), TK_OK);
	CHECK_EQ_INT(sql_int(store_db(writer), "SELECT count(*) FROM measurement"), 3);

	/* The reader's statement keeps its snapshot: one more row, then done. */
	CHECK_EQ_INT(sqlite3_step(st), SQLITE_ROW);
	CHECK_EQ_INT(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	CHECK_EQ_INT(sql_int(store_db(reader), "SELECT count(*) FROM measurement"), 3);

	/* Two writers do conflict; past the timeout that is a clear error. */
	CHECK_EQ_INT(store_begin(reader), TK_OK);
	CHECK_EQ_INT(store_begin(writer), TK_ESTORE);
	CHECK(contains(tk_errmsg(), path));
	CHECK(contains(tk_errmsg(), ": database is locked"));
	CHECK_EQ_INT(store_rollback(reader), TK_OK);
	CHECK_EQ_INT(store_begin(writer), TK_OK);
	CHECK_EQ_INT(store_commit(writer), TK_OK);
done:
	store_close(reader);
	store_close(writer);
}

UNIT_MAIN(test_create, test_roundtrip, test_best_is_median, test_report_lookups,
          test_empty_file, test_bounded, test_migrate_v1, test_corrupt, test_bad_times,
          test_killed_writer, test_reader_writer)
