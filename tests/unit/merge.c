/*
 * Unit tests for lib/store/merge.c: stores of two hosts merged into one
 * (keys unified, runs with the same local id kept apart, every table
 * carried), merging twice adds nothing, a run resumed after a merge brings
 * only its new trials, a run that diverged in two copies becomes two runs,
 * damaged inputs and the output itself are refused, and an interrupted
 * merge leaves the output as it was. Files live in a mkdtemp() directory.
 */
#include "unit.h"

#include <signal.h>
#include <sqlite3.h>

#include "store/store.h"
#include "store/store_features.h"
#include "store/store_import.h"
#include "store/store_int.h"
#include "store/store_merge.h"
#include "store/store_models.h"
#include "store/store_tuning.h"
#include "util/util.h"

/* ---- helpers -------------------------------------------------------- */

/* One integer from a query on the store's connection; -12345 on error. */
static long long q(tk_store *s, const char *sql)
{
	sqlite3_stmt *st;
	long long v = -12345;
	if (sqlite3_prepare_v2(store_db(s), sql, -1, &st, NULL) != SQLITE_OK)
		return v;
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static const store_hw HW_A = { "cpu-a|avx2|gcc 12|threads=2", "cpu", "CPU A", "avx2", "gcc 12",
                               "native", 2 };
static const store_hw HW_B = { "cpu-b|avx512|gcc 12|threads=4", "cpu", "CPU B", "avx512",
                               "gcc 12", "native", 4 };

/* Measure configuration text cfg of the dense task as trial of run. */
static int add(tk_store *s, int64_t hw, int64_t run, int trial, const char *cfg, double median)
{
	int64_t task, config, id;
	double times[2] = { median, median * 1.01 };
	int rc = store_task_get(s, "dense:k=8,m=8,n=8", "dense", 1024, &task);
	if (!rc)
		rc = store_config_get(s, task, trial, cfg, "split i 1\n", &config);
	if (rc)
		return rc;
	store_meas m = { .config_id = config, .hardware_id = hw, .run_id = run, .trial = trial,
	                 .valid = 1, .error = MEAS_OK, .mean = median, .std = 0,
	                 .median = median, .number = 1, .nrepeat = 2, .times = times,
	                 .compile_s = 0.1, .at = 0, .load = 0.5 };
	return store_meas_add(s, &m, &id);
}

/* A store at path as a host fills it: one run on hw of n trials whose
 * configurations are "PREFIX-i", a run log row, a feature vector and a
 * model. The run's id is 1 in every such store. */
static int host_store(const char *path, const store_hw *hw, const char *prefix, int n)
{
	tk_store *s;
	int64_t hw_id, run, model;
	char cfg[64];
	float v[3] = { 1, 2, 3 };
	int rc = store_open(path, 0, &s), added;
	if (rc)
		return rc;
	store_run r = { .argv = "tunekit tune", .method = "tune/xgb+sa", .seed = 1 };
	if (!(rc = store_hardware_get(s, hw, &hw_id))) {
		r.hardware_id = hw_id;
		rc = store_run_begin(s, &r, &run);
	}
	for (int i = 0; i < n && !rc; i++) {
		snprintf(cfg, sizeof cfg, "%s-%d", prefix, i);
		rc = add(s, hw_id, run, i, cfg, 1e-3 * (i + 1));
	}
	if (!rc)
		rc = store_run_log(s, run, n, "seconds:run", 1.5);
	if (!rc)
		rc = store_feature_put(s, 1, "knob", 1, v, 3);
	if (!rc)
		rc = store_model_add(s, "xgb", hw_id, "kind=xgb\n", prefix, strlen(prefix), &model);
	if (!rc)
		rc = store_foreign_add(s, "autotvm", "x.log", 1, "unknown template", prefix, run, &added);
	if (!rc)
		rc = store_run_end(s, run);
	store_close(s);
	return rc;
}

static int copy_file(const char *from, const char *to)
{
	FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
	char buf[4096];
	size_t n;
	int rc = a && b ? 0 : -1;
	while (!rc && (n = fread(buf, 1, sizeof buf, a)) > 0)
		if (fwrite(buf, 1, n, b) != n)
			rc = -1;
	if (a)
		fclose(a);
	if (b && fclose(b))
		rc = -1;
	return rc;
}

/* ---- 1. two hosts, twice ------------------------------------------------ */

TEST(test_two_hosts)
{
	const char *a = tpath("a.db"), *b = tpath("b.db"), *out = tpath("out.db");
	store_merge_stats m;
	tk_store *s = NULL;

	CHECK_EQ_INT(host_store(a, &HW_A, "x", 3), TK_OK);
	CHECK_EQ_INT(host_store(b, &HW_B, "y", 2), TK_OK);
	CHECK_EQ_INT(store_merge_check(a, out), TK_OK);
	CHECK_EQ_INT(store_merge_check(b, out), TK_OK);
	CHECK_EQ_INT(store_merge_open(out, &s), TK_OK);
	if (!s)
		return;
	CHECK_EQ_INT(store_merge(s, a, NULL, &m), TK_OK);
	CHECK_EQ_INT(m.hardware, 1);
	CHECK_EQ_INT(m.tasks, 1);
	CHECK_EQ_INT(m.configs, 3);
	CHECK_EQ_INT(m.runs, 1);
	CHECK_EQ_INT(m.records, 3);
	CHECK_EQ_INT(m.duplicates, 0);
	CHECK_EQ_INT(m.logs, 1);
	CHECK_EQ_INT(m.features, 1);
	CHECK_EQ_INT(m.models, 1);
	CHECK_EQ_INT(m.foreign, 1);
	CHECK_EQ_INT(store_merge(s, b, NULL, &m), TK_OK);
	CHECK_EQ_INT(m.hardware, 1);
	CHECK_EQ_INT(m.tasks, 0);   /* the same task: one row */
	CHECK_EQ_INT(m.configs, 2);
	CHECK_EQ_INT(m.runs, 1);    /* run 1 of b is not run 1 of a */
	CHECK_EQ_INT(m.records, 2);
	CHECK_EQ_INT(m.features, 1); /* of y-0, config 1 in b as x-0 is in a */
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM run"), 2);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM task"), 1);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM measurement"), 5);
	/* each run keeps its own trials, on its own hardware */
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM (SELECT run_id, trial FROM measurement"
	                  " GROUP BY run_id, trial HAVING count(*) > 1)"), 0);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM measurement m JOIN run r ON r.id = m.run_id"
	                  " WHERE r.hardware_id <> m.hardware_id"), 0);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM measurement m JOIN config c ON c.id = m.config_id"
	                  " JOIN hardware h ON h.id = m.hardware_id WHERE c.text LIKE 'y-%'"
	                  " AND h.key = 'cpu-b|avx512|gcc 12|threads=4'"), 2);
	/* the times and the load travel with the records */
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM measurement WHERE times IS NULL OR load IS NULL"), 0);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM run WHERE ended IS NULL"), 0);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM model"), 2);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM foreign_record"), 2);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM foreign_record f JOIN run r ON r.id = f.run_id"), 2);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM run_log"), 2);

	/* again, in the other order: nothing new */
	CHECK_EQ_INT(store_merge(s, b, NULL, &m), TK_OK);
	CHECK_EQ_INT(m.runs + m.records + m.configs + m.hardware + m.tasks, 0);
	CHECK_EQ_INT(m.runs_known, 1);
	CHECK_EQ_INT(m.duplicates, 2);
	CHECK_EQ_INT(m.logs + m.features + m.models + m.foreign, 0);
	CHECK_EQ_INT(store_merge(s, a, NULL, &m), TK_OK);
	CHECK_EQ_INT(m.runs + m.records + m.configs + m.logs + m.features + m.models + m.foreign, 0);
	CHECK_EQ_INT(m.duplicates, 3);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM measurement"), 5);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM run"), 2);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM feature"), 2);
	store_close(s);
}

/* ---- 2. a run resumed after a merge, and one that diverged ---------------- */

TEST(test_resumed_and_diverged)
{
	const char *a = tpath("ra.db"), *fork = tpath("rfork.db"), *out = tpath("rout.db");
	store_merge_stats m;
	tk_store *s = NULL, *in = NULL;

	CHECK_EQ_INT(host_store(a, &HW_A, "x", 2), TK_OK);
	CHECK_EQ_INT(copy_file(a, fork), 0);
	CHECK_EQ_INT(store_merge_open(out, &s), TK_OK);
	if (!s)
		return;
	CHECK_EQ_INT(store_merge(s, a, NULL, &m), TK_OK);
	CHECK_EQ_INT(m.records, 2);
	double ended = 0;
	{
		sqlite3_stmt *st;
		sqlite3_prepare_v2(store_db(s), "SELECT ended FROM run", -1, &st, NULL);
		if (sqlite3_step(st) == SQLITE_ROW)
			ended = sqlite3_column_double(st, 0);
		sqlite3_finalize(st);
	}

	/* the host resumes run 1: trial 2, and a later end */
	CHECK_EQ_INT(store_open(a, 0, &in), TK_OK);
	if (in) {
		CHECK_EQ_INT(store_run_reopen(in, 1), TK_OK);
		CHECK_EQ_INT(add(in, 1, 1, 2, "x-2", 3e-3), TK_OK);
		CHECK_EQ_INT(store_run_end(in, 1), TK_OK);
		store_close(in);
	}
	CHECK_EQ_INT(store_merge(s, a, NULL, &m), TK_OK);
	CHECK_EQ_INT(m.runs, 0);
	CHECK_EQ_INT(m.runs_known, 1);
	CHECK_EQ_INT(m.records, 1);
	CHECK_EQ_INT(m.duplicates, 2);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM run"), 1);
	CHECK_EQ_INT(q(s, "SELECT max(trial) FROM measurement WHERE run_id = 1"), 2);
	{
		sqlite3_stmt *st;
		double now = 0;
		sqlite3_prepare_v2(store_db(s), "SELECT ended FROM run", -1, &st, NULL);
		if (sqlite3_step(st) == SQLITE_ROW)
			now = sqlite3_column_double(st, 0);
		sqlite3_finalize(st);
		CHECK(now > ended);
	}

	/* the copy resumed run 1 on its own: its trial 2 is another record */
	in = NULL;
	CHECK_EQ_INT(store_open(fork, 0, &in), TK_OK);
	if (in) {
		CHECK_EQ_INT(add(in, 1, 1, 2, "x-other", 9e-3), TK_OK);
		store_close(in);
	}
	CHECK_EQ_INT(store_merge(s, fork, NULL, &m), TK_OK);
	CHECK_EQ_INT(m.runs, 1);
	CHECK_EQ_INT(m.runs_known, 0);
	CHECK_EQ_INT(m.records, 3);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM run"), 2);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM (SELECT run_id, trial FROM measurement"
	                  " GROUP BY run_id, trial HAVING count(*) > 1)"), 0);
	/* and merging both again finds each run's own copy */
	CHECK_EQ_INT(store_merge(s, fork, NULL, &m), TK_OK);
	CHECK_EQ_INT(m.runs + m.records, 0);
	CHECK_EQ_INT(m.runs_known, 1);
	CHECK_EQ_INT(store_merge(s, a, NULL, &m), TK_OK);
	CHECK_EQ_INT(m.runs + m.records, 0);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM measurement"), 6);
	store_close(s);
}

/* ---- 3. refusals ------------------------------------------------------------ */

TEST(test_refused)
{
	const char *a = tpath("fa.db"), *cut = tpath("fcut.db"), *out = tpath("fout.db");
	const char *junk = tpath("junk.db");
	store_merge_stats m;
	tk_store *s = NULL;

	CHECK_EQ_INT(host_store(a, &HW_A, "x", 40), TK_OK);
	/* a copy cut short */
	FILE *f = fopen(a, "rb"), *g = fopen(cut, "wb");
	char buf[3 * 4096];
	size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
	if (g) {
		fwrite(buf, 1, n, g);
		fclose(g);
	}
	if (f)
		fclose(f);
	CHECK_EQ_INT(store_merge_check(cut, out), TK_ECORRUPT);
	CHECK(strstr(tk_errmsg(), "damaged") != NULL);
	f = fopen(junk, "wb");
	if (f) {
		fputs("not a database at all, just some text that is long enough", f);
		fclose(f);
	}
	CHECK_EQ_INT(store_merge_check(junk, out), TK_ECORRUPT);
	CHECK_EQ_INT(store_merge_check(tpath("absent.db"), out), TK_ESTORE);

	/* the output itself */
	CHECK_EQ_INT(store_merge_open(out, &s), TK_OK);
	if (!s)
		return;
	CHECK_EQ_INT(store_merge_check(out, out), TK_EINVAL);
	/* an input that is not a store is refused by the merge too, with
	 * nothing written */
	CHECK(store_merge(s, junk, NULL, &m) != TK_OK);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM hardware"), 0);

	/* interrupted: rolled back, nothing merged, the next merge works */
	volatile sig_atomic_t stop = 1;
	CHECK_EQ_INT(store_merge(s, a, &stop, &m), TK_EINTR);
	CHECK_EQ_INT(m.records, 0);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM measurement"), 0);
	CHECK_EQ_INT(q(s, "SELECT count(*) FROM hardware"), 0);
	stop = 0;
	CHECK_EQ_INT(store_merge(s, a, &stop, &m), TK_OK);
	CHECK_EQ_INT(m.records, 40);
	store_close(s);
}

UNIT_MAIN(test_two_hosts, test_resumed_and_diverged, test_refused)
