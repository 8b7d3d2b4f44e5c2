/*
 * Unit tests for lib/report: tuning curves from hand-made record lists
 * (best so far is monotone, trials and seconds to 95% on a sequence built
 * around the threshold, never reached, tasks without flops), aggregates,
 * comparisons, runs and models read from a store (the best known latency
 * of a task comes from every run on the same hardware), model meta
 * parsing, round ticks, and SVG charts checked for
 * XML well-formedness by a small checker here (and by xmllint when it is
 * installed), one <path> per series, and escaped text.
 */
#include "unit.h"

#include <unistd.h>

#include "report/report.h"
#include "store/store_models.h"
#include "util/util.h"

/* ---- helpers -------------------------------------------------------------- */

/* A valid (median > 0) or invalid (median <= 0) record of a task. */
static store_rec rec(const char *task, int64_t task_id, double flops, double median, double at)
{
	store_rec r;
	memset(&r, 0, sizeof r);
	r.task = task;
	r.task_id = task_id;
	r.hardware_id = 1;
	r.flops = flops;
	r.valid = median > 0;
	r.median = median > 0 ? median : -1;
	r.at = at;
	return r;
}

/* Is s well-formed XML (one root element, balanced tags, quoted
 * attributes, known entities, no stray '<' or '&')? Returns 1 if so. */
static int entity_ok(const char **pp)
{
	static const char *const aEnt[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&apos;" };
	for (int i = 0; i < ArraySize(aEnt); i++)
		if (!strncmp(*pp, aEnt[i], strlen(aEnt[i]))) {
			*pp += strlen(aEnt[i]) - 1;
			return 1;
		}
	return 0;
}

static int is_name(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == ':' || c == '.';
}

static int xml_ok(const char *s)
{
	const char *aStack[64];
	size_t aLen[64];
	int depth = 0, nRoot = 0;
	const char *p = s;
	if (!strncmp(p, "<?xml", 5)) {
		if (!(p = strstr(p, "?>")))
			return 0;
		p += 2;
	}
	for (; *p; p++) {
		if (*p == '&') {
			if (!entity_ok(&p))
				return 0;
			continue;
		}
		if (*p == '>')
			return 0;
		if (*p != '<') {
			if (depth == 0 && !(*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
				return 0; /* text outside the root */
			continue;
		}
		p++;
		if (*p == '/') { /* end tag */
			const char *n = ++p;
			while (is_name(*p))
				p++;
			if (!depth || (size_t)(p - n) != aLen[depth - 1] ||
			    strncmp(n, aStack[depth - 1], aLen[depth - 1]) || *p != '>')
				return 0;
			depth--;
			continue;
		}
		const char *n = p;
		while (is_name(*p))
			p++;
		if (p == n)
			return 0;
		const char *name = n;
		size_t len = (size_t)(p - n);
		for (;;) { /* attributes */
			while (*p == ' ' || *p == '\n' || *p == '\t')
				p++;
			if (*p == '>' || (*p == '/' && p[1] == '>'))
				break;
			const char *a = p;
			while (is_name(*p))
				p++;
			if (p == a || *p++ != '=' || (*p != '"' && *p != '\''))
				return 0;
			char q = *p++;
			for (; *p && *p != q; p++)
				if (*p == '<' || (*p == '&' && !entity_ok(&p)))
					return 0;
			if (*p++ != q)
				return 0;
		}
		if (*p == '/') { /* empty element */
			p++;
			if (depth == 0)
				nRoot++;
			continue;
		}
		if (depth == 0)
			nRoot++;
		if (depth == ArraySize(aStack))
			return 0;
		aStack[depth] = name;
		aLen[depth++] = len;
	}
	return depth == 0 && nRoot == 1;
}

static int count(const char *s, const char *sub)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, sub)); p += strlen(sub))
		n++;
	return n;
}

/* xmllint --noout on text: 1 valid, 0 invalid, -1 when xmllint is absent. */
static int xmllint_ok(const char *text)
{
	char path[] = "/tmp/tk-report-svg-XXXXXX", cmd[128];
	if (system("command -v xmllint >/dev/null 2>&1") != 0)
		return -1;
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	size_t len = strlen(text);
	int ok = write(fd, text, len) == (ssize_t)len;
	close(fd);
	snprintf(cmd, sizeof cmd, "xmllint --noout %s 2>/dev/null", path);
	if (ok)
		ok = system(cmd) == 0;
	unlink(path);
	return ok;
}

/* ---- curves ------------------------------------------------------------------ */

TEST(test_curve_best_so_far)
{
	/* latencies 4, 5, invalid, 2, 3, 1 seconds of a 1e9-flop task */
	double aLat[] = { 4, 5, -1, 2, 3, 1 }, want[] = { 4, 4, 4, 2, 2, 1 };
	store_rec aRec[6];
	rp_run *r;
	for (int i = 0; i < 6; i++)
		aRec[i] = rec("dense:k=1,m=1,n=1", 7, 1e9, aLat[i], 1000 + 10 * i);
	CHECK_EQ_INT(rp_run_build(3, 995, aRec, 6, &r), TK_OK);
	CHECK_EQ_INT(r->ncurve, 1);
	CHECK_EQ_INT(r->nstep, 6);
	const rp_curve *c = &r->curve[0];
	CHECK_EQ_STR(c->task, "dense:k=1,m=1,n=1");
	CHECK_EQ_INT(c->n, 6);
	for (int i = 0; i < c->n; i++) {
		CHECK_EQ_INT(c->pt[i].trial, i + 1);
		CHECK_NEAR(c->pt[i].seconds, 5 + 10 * i, 1e-9);
		CHECK_NEAR(c->pt[i].latency, want[i], 0);
		CHECK_NEAR(c->pt[i].thr, 1 / want[i], 1e-12); /* 1e9 flops: GFLOPS = 1/latency */
		if (i)
			CHECK(c->pt[i].thr >= c->pt[i - 1].thr);
	}
	CHECK_NEAR(c->final_latency, 1, 0);
	CHECK_NEAR(c->final_thr, 1, 1e-12);
	CHECK_EQ_STR(rp_unit(c), "GFLOPS");
	/* its own best is the best known: reached at the last trial */
	CHECK_NEAR(c->best_known, 1, 0);
	CHECK_EQ_INT(c->trials_to_95, 6);
	CHECK_NEAR(c->seconds_to_95, 55, 1e-9);
	rp_run_free(r);
}

TEST(test_curve_to95_exact)
{
	/* best known 1 s: 95% of its throughput is a latency of 1/0.95 =
	 * 1.0526315789... s. 1.0527 misses it, 1.0526 reaches it. */
	double aLat[] = { 3, 1.0527, -1, 1.2, 1.0526, 1.01 };
	store_rec aRec[6];
	rp_run *r;
	for (int i = 0; i < 6; i++)
		aRec[i] = rec("conv2d:c=1", 2, 2e9, aLat[i], 100 + i * i);
	CHECK_EQ_INT(rp_run_build(1, 100, aRec, 6, &r), TK_OK);
	rp_curve *c = &r->curve[0];
	rp_curve_set_best(c, 1.0);
	CHECK_NEAR(c->best_known, 1.0, 0);
	CHECK_EQ_INT(c->trials_to_95, 5);
	CHECK_NEAR(c->seconds_to_95, 16, 1e-9);
	/* exactly at the boundary counts as reached */
	aRec[1].median = 1 / 0.95;
	rp_run_free(r);
	CHECK_EQ_INT(rp_run_build(1, 100, aRec, 6, &r), TK_OK);
	c = &r->curve[0];
	rp_curve_set_best(c, 1.0);
	CHECK_EQ_INT(c->trials_to_95, 2);
	CHECK_NEAR(c->seconds_to_95, 1, 1e-9);
	/* a best known worse than the run's own is replaced by the run's */
	rp_curve_set_best(c, 5.0);
	CHECK_NEAR(c->best_known, 1.01, 0);
	CHECK_EQ_INT(c->trials_to_95, 2);
	rp_run_free(r);
}

TEST(test_curve_never)
{
	store_rec aRec[4] = {
		rec("a:x=1", 1, 1e9, 2.0, 10), rec("b:x=1", 2, 1e9, -1, 11),
		rec("a:x=1", 1, 1e9, 1.5, 12), rec("b:x=1", 2, 1e9, -1, 13),
	};
	rp_run *r;
	CHECK_EQ_INT(rp_run_build(1, 10, aRec, 4, &r), TK_OK);
	CHECK_EQ_INT(r->ncurve, 2);
	rp_curve *a = &r->curve[rp_run_find(r, "a:x=1")], *b = &r->curve[rp_run_find(r, "b:x=1")];
	rp_curve_set_best(a, 1.0); /* another run found 1.0: 1.5 is 67% */
	CHECK_EQ_INT(a->trials_to_95, -1);
	CHECK_NEAR(a->seconds_to_95, -1, 0);
	CHECK_NEAR(a->final_latency, 1.5, 0);
	/* no valid record at all */
	rp_curve_set_best(b, -1);
	CHECK_EQ_INT(b->n, 2);
	CHECK_EQ_INT(b->trials_to_95, -1);
	CHECK_NEAR(b->final_thr, 0, 0);
	CHECK(b->final_latency < 0);
	CHECK(b->pt[1].latency < 0);
	CHECK_EQ_INT(rp_run_find(r, "c:x=1"), -1);
	rp_run_free(r);
}

TEST(test_curve_no_flops)
{
	store_rec aRec[2] = { rec("imported", 4, 0, 0.5, 1), rec("imported", 4, 0, 0.25, 2) };
	rp_run *r;
	CHECK_EQ_INT(rp_run_build(1, 0, aRec, 2, &r), TK_OK);
	const rp_curve *c = &r->curve[0];
	CHECK_EQ_STR(rp_unit(c), "1/s");
	CHECK_NEAR(c->pt[0].thr, 2, 1e-12);
	CHECK_NEAR(c->pt[1].thr, 4, 1e-12);
	CHECK_NEAR(c->final_thr, 4, 1e-12);
	rp_run_free(r);
}

TEST(test_aggregate)
{
	/* a (1 GFLOP) and b (2 GFLOP) interleaved; weights 2 and 1 */
	store_rec aRec[5] = {
		rec("a:x=1", 1, 1e9, 1.0, 1), rec("a:x=1", 1, 1e9, 0.5, 2),
		rec("b:x=1", 2, 2e9, -1, 3), rec("b:x=1", 2, 2e9, 2.0, 4),
		rec("a:x=1", 1, 1e9, 0.25, 5),
	};
	const char *aTask[] = { "a:x=1", "b:x=1" };
	double aW[] = { 2, 1 };
	rp_run *r;
	rp_curve g;
	CHECK_EQ_INT(rp_run_build(1, 0, aRec, 5, &r), TK_OK);
	CHECK_EQ_INT(rp_aggregate(r, 2, aTask, aW, "network:t", &g), TK_OK);
	CHECK_EQ_STR(g.task, "network:t");
	CHECK_EQ_INT(g.n, 5);
	CHECK_EQ_INT(g.nmissing, 0);
	CHECK_NEAR(g.flops, 4e9, 0);
	CHECK(g.pt[0].latency < 0 && g.pt[2].latency < 0); /* b has no valid record yet */
	CHECK_NEAR(g.pt[3].latency, 2 * 0.5 + 2.0, 1e-12);
	CHECK_NEAR(g.pt[4].latency, 2 * 0.25 + 2.0, 1e-12);
	CHECK_NEAR(g.pt[4].thr, 4.0 / 2.5, 1e-12);
	CHECK_EQ_INT(g.pt[4].trial, 5);
	CHECK_EQ_INT(g.trials_to_95, 5); /* best known: its own final */
	rp_curve_clear(&g);
	/* a task the run never measured: no values, counted missing */
	const char *aTask2[] = { "a:x=1", "zzz" };
	CHECK_EQ_INT(rp_aggregate(r, 2, aTask2, NULL, "all", &g), TK_OK);
	CHECK_EQ_INT(g.nmissing, 1);
	CHECK(g.pt[4].latency < 0);
	CHECK_EQ_INT(g.trials_to_95, -1);
	CHECK_NEAR(g.flops, 0, 0);
	rp_curve_clear(&g);
	rp_run_free(r);
}

TEST(test_compare)
{
	store_rec a1[3] = { rec("a:x=1", 1, 1e9, 1.0, 1), rec("b:x=1", 2, 1e9, 2.0, 2),
	                    rec("a:x=1", 1, 1e9, 0.5, 3) };
	store_rec a2[3] = { rec("b:x=1", 2, 1e9, 1.0, 11), rec("a:x=1", 1, 1e9, 1.0, 12),
	                    rec("c:x=1", 3, 1e9, 1.0, 13) };
	rp_run *r1, *r2;
	rp_compare *c;
	CHECK_EQ_INT(rp_run_build(1, 0, a1, 3, &r1), TK_OK);
	CHECK_EQ_INT(rp_run_build(2, 10, a2, 3, &r2), TK_OK);
	/* the store-wide best known: the better of the two runs */
	rp_curve_set_best(&r1->curve[1], 1.0); /* b */
	rp_curve_set_best(&r2->curve[1], 0.5); /* a */
	const rp_run *aRun[2] = { r1, r2 };
	CHECK_EQ_INT(rp_compare_build(aRun, 2, NULL, &c), TK_OK);
	CHECK_EQ_INT(c->nrow, 4);
	CHECK_EQ_STR(c->row[0].task, "a:x=1");
	CHECK_EQ_STR(c->row[1].task, "b:x=1");
	CHECK_EQ_STR(c->row[2].task, "c:x=1");
	CHECK_EQ_STR(c->row[3].task, "all");
	CHECK_EQ_INT(c->row[0].ncovered, 2);
	CHECK_EQ_INT(c->row[2].ncovered, 1); /* only run 2: marked */
	CHECK(c->row[2].cell[0] == NULL && c->row[2].cell[1] != NULL);
	CHECK_NEAR(c->row[2].ratio[1], -1, 0);
	CHECK_NEAR(c->row[0].ratio[0], 1, 1e-12);
	CHECK_NEAR(c->row[0].ratio[1], 0.5, 1e-12); /* 1 GFLOPS against 2 */
	CHECK_NEAR(c->row[1].ratio[1], 2, 1e-12);
	CHECK_EQ_INT(c->row[0].cell[0]->trials_to_95, 2);
	CHECK_EQ_INT(c->row[0].cell[1]->trials_to_95, -1);
	CHECK_NEAR(c->row[0].best_known_thr, 2, 1e-12);
	/* summary: a and b, weight 1: run 1 ends at 0.5 + 2.0, run 2 at 1.0 + 1.0 */
	CHECK_EQ_INT(c->ncommon, 2);
	CHECK_EQ_INT(c->row[3].ncovered, 2);
	CHECK_NEAR(c->row[3].cell[0]->final_latency, 2.5, 1e-12);
	CHECK_NEAR(c->row[3].cell[1]->final_latency, 2.0, 1e-12);
	CHECK_NEAR(c->row[3].ratio[1], 2.5 / 2.0, 1e-12);
	CHECK_EQ_STR(c->row[3].unit, "GFLOPS");
	rp_compare_free(c);
	rp_run_free(r1);
	rp_run_free(r2);
}

TEST(test_model_meta)
{
	char buf[] = "kind xgb\nholdout_rmse 0.125\nfeature=itervar\n  holdout_top5\t0.9 \r\n"
	             "n_train 1234\nholdout_spearman\nbogus 1\n";
	const char *aVal[RP_MODEL_NKEY];
	rp_model_meta_parse(buf, aVal);
	CHECK_EQ_STR(rp_model_keys[0], "n_train");
	CHECK_EQ_STR(aVal[0], "1234");
	CHECK_EQ_STR(aVal[1], "itervar");
	CHECK(aVal[2] == NULL); /* objective */
	CHECK_EQ_STR(aVal[3], "0.125");
	CHECK_EQ_STR(aVal[7], "0.9");
	CHECK(aVal[8] == NULL); /* a key without a value */
}

/* ---- from a store ---------------------------------------------------------------- */

/* Add a measurement of config cfg to the store; median <= 0 is invalid. */
static void add_meas(tk_store *s, int64_t cfg, int64_t hw, int64_t run, int trial,
                     double median, double at)
{
	store_meas m = {
		.config_id = cfg, .hardware_id = hw, .run_id = run, .trial = trial,
		.valid = median > 0, .error = median > 0 ? MEAS_OK : MEAS_RUNTIME_CRASH,
		.mean = median, .median = median, .number = 1, .nrepeat = 0, .at = at,
	};
	int64_t id;
	CHECK_EQ_INT(store_meas_add(s, &m, &id), TK_OK);
}

/* rp_run_load reads a run's records in trial order and takes each task's
 * best known latency from every run on the task's hardware, not from
 * other hardware; an absent run is TK_ENOTFOUND. */
TEST(test_run_load)
{
	tk_store *s = NULL;
	int64_t hwA, hwB, t1, t2, c1, c2, c3, r1, r2;
	rp_run *r = NULL;
	const store_hw A = { "cpu-a", "cpu", NULL, NULL, NULL, NULL, 1 };
	const store_hw B = { "cpu-b", "cpu", NULL, NULL, NULL, NULL, 1 };

	CHECK_EQ_INT(store_open(tpath("load.db"), 0, &s), TK_OK);
	if (!s)
		return;
	CHECK_EQ_INT(store_hardware_get(s, &A, &hwA), TK_OK);
	CHECK_EQ_INT(store_hardware_get(s, &B, &hwB), TK_OK);
	CHECK_EQ_INT(store_task_get(s, "dense:k=8,m=8,n=8", "dense", 1e9, &t1), TK_OK);
	CHECK_EQ_INT(store_task_get(s, "dense:k=4,m=4,n=4", "dense", 0, &t2), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t1, 0, "a", "a\n", &c1), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t1, 1, "b", "b\n", &c2), TK_OK);
	CHECK_EQ_INT(store_config_get(s, t2, 0, "a", "a\n", &c3), TK_OK);
	store_run run = { "tunekit measure", "measure", NULL, 1, hwA };
	CHECK_EQ_INT(store_run_begin(s, &run, &r1), TK_OK);
	CHECK_EQ_INT(store_run_begin(s, &run, &r2), TK_OK);
	/* run 1 on A: task 1 at 4, invalid, 2 ms; task 2 at 1 ms */
	add_meas(s, c1, hwA, r1, 0, 4e-3, 1000);
	add_meas(s, c3, hwA, r1, 1, 1e-3, 1001);
	add_meas(s, c2, hwA, r1, 2, -1, 1002);
	add_meas(s, c2, hwA, r1, 3, 2e-3, 1003);
	/* run 2 on A finds task 1 at 1 ms; hardware B has it at 0.5 ms */
	add_meas(s, c2, hwA, r2, 0, 1e-3, 2000);
	add_meas(s, c1, hwB, 0, 0, 0.5e-3, 2001);

	CHECK_EQ_INT(rp_run_load(s, r1, &r), TK_OK);
	if (r) {
		CHECK_EQ_INT(r->id, r1);
		CHECK_EQ_INT(r->nstep, 4);
		CHECK_EQ_INT(r->ncurve, 2);
		const rp_curve *c = &r->curve[0];
		CHECK_EQ_STR(c->task, "dense:k=8,m=8,n=8");
		CHECK_EQ_INT(c->hardware_id, hwA);
		CHECK_EQ_INT(c->n, 3);
		CHECK_NEAR(c->final_latency, 2e-3, 1e-15);
		CHECK_NEAR(c->best_known, 1e-3, 1e-15);   /* run 2's, not B's */
		CHECK_EQ_INT(c->trials_to_95, -1);         /* 2 ms never within 95% of 1 */
		CHECK_NEAR(c->pt[2].seconds, r->step[3].seconds, 0);
		c = &r->curve[1];
		CHECK_EQ_STR(c->task, "dense:k=4,m=4,n=4");
		CHECK_NEAR(c->best_known, 1e-3, 1e-15);
		CHECK_EQ_INT(c->trials_to_95, 1);
		CHECK_EQ_STR(rp_unit(c), "1/s");
	}
	rp_run_free(r);
	r = (rp_run *)&r;
	CHECK_EQ_INT(rp_run_load(s, r2 + 1, &r), TK_ENOTFOUND);
	CHECK(r == NULL);
	store_close(s);
}

typedef struct models_seen {
	int n, stop_at;
	int64_t id[4];
	char kind[4][16], rmse[4][16];
} models_seen;

static int models_cb(void *ctx, const rp_model *m)
{
	models_seen *x = ctx;
	if (x->n < 4) {
		x->id[x->n] = m->id;
		snprintf(x->kind[x->n], sizeof x->kind[0], "%s", m->kind);
		snprintf(x->rmse[x->n], sizeof x->rmse[0], "%s", m->val[3] ? m->val[3] : "-");
	}
	return ++x->n == x->stop_at ? 7 : 0;
}

/* rp_models lists the store's models in id order with their meta parsed;
 * a callback's non-zero value stops the list and is returned. */
TEST(test_models_from_store)
{
	tk_store *s = NULL;
	int64_t m1, m2;
	models_seen x;

	CHECK_EQ_INT(store_open(tpath("models.db"), 0, &s), TK_OK);
	if (!s)
		return;
	memset(&x, 0, sizeof x);
	CHECK_EQ_INT(rp_models(s, models_cb, &x), TK_OK);
	CHECK_EQ_INT(x.n, 0);
	CHECK_EQ_INT(store_model_add(s, "xgb", 0, "holdout_rmse 0.25\nn_train 10\n", "ab", 2, &m1),
	             TK_OK);
	CHECK_EQ_INT(store_model_add(s, "rf", 0, NULL, "c", 1, &m2), TK_OK);
	memset(&x, 0, sizeof x);
	CHECK_EQ_INT(rp_models(s, models_cb, &x), TK_OK);
	CHECK_EQ_INT(x.n, 2);
	CHECK_EQ_INT(x.id[0], m1);
	CHECK_EQ_STR(x.kind[0], "xgb");
	CHECK_EQ_STR(x.rmse[0], "0.25");
	CHECK_EQ_INT(x.id[1], m2);
	CHECK_EQ_STR(x.kind[1], "rf");
	CHECK_EQ_STR(x.rmse[1], "-");
	memset(&x, 0, sizeof x);
	x.stop_at = 1;
	CHECK_EQ_INT(rp_models(s, models_cb, &x), 7);
	CHECK_EQ_INT(x.n, 1);
	store_close(s);
}

/* ---- SVG ------------------------------------------------------------------------ */

TEST(test_ticks)
{
	double a[16];
	int n;
	CHECK_NEAR(rp_ticks(0, 47, 7, a, &n), 10, 0);
	CHECK_EQ_INT(n, 5);
	CHECK_NEAR(a[4], 40, 0);
	CHECK_NEAR(rp_ticks(0, 1, 6, a, &n), 0.2, 1e-15);
	CHECK_EQ_INT(n, 6);
	CHECK_NEAR(a[5], 1, 1e-12);
	CHECK_NEAR(rp_ticks(3, 6, 8, a, &n), 0.5, 0);
	CHECK_NEAR(a[0], 3, 0);
	CHECK_EQ_INT(n, 7);
}

TEST(test_xml_checker)
{
	/* the checker itself must reject what is not XML */
	CHECK(xml_ok("<a><b x=\"1\"/>t &amp; u</a>"));
	CHECK(!xml_ok("<a><b></a>"));
	CHECK(!xml_ok("<a>x & y</a>"));
	CHECK(!xml_ok("<a t=\"<\"/>"));
	CHECK(!xml_ok("<a/><b/>"));
	CHECK(!xml_ok("<a x=1/>"));
}

TEST(test_svg_chart)
{
	double x1[] = { 1, 2, 3, 4 }, y1[] = { NAN, 1.5, 3, 3 };
	double x2[] = { 0.5, 2, 8 }, y2[] = { 2, 2.5, 40 };
	rp_series aSer[2] = {
		{ "run 1 <dense> & \"co\"", 4, x1, y1, 1, 6 },
		{ "run 2", 3, x2, y2, 0, NAN },
	};
	rp_chart aChart[2] = {
		{ "Tuning <A & B>", "Trials", "Best GFLOPS so far", 0, 2, aSer },
		{ "Over 'time'", "Seconds since the run started", "Best GFLOPS so far", 1, 2, aSer },
	};
	tk_sb sb;
	tk_sb_init(&sb);
	CHECK_EQ_INT(rp_svg(&sb, aChart, 2, 0, 0), TK_OK);
	CHECK(sb.s && !strncmp(sb.s, "<?xml", 5));
	CHECK(xml_ok(sb.s));
	CHECK(xmllint_ok(sb.s) != 0);
	CHECK(strstr(sb.s, "width=\"1600\" height=\"500\"") != NULL);
	CHECK_EQ_INT(count(sb.s, "<path"), 4); /* one per series per chart */
	CHECK(strstr(sb.s, "Tuning &lt;A &amp; B&gt;") != NULL);
	CHECK(strstr(sb.s, "run 1 &lt;dense&gt; &amp; &quot;co&quot;") != NULL);
	CHECK(strstr(sb.s, "Over &apos;time&apos;") != NULL);
	CHECK(strstr(sb.s, "<dense>") == NULL);
	CHECK(strstr(sb.s, ">Trials</text>") != NULL);
	CHECK(strstr(sb.s, ">Seconds since the run started</text>") != NULL);
	CHECK(strstr(sb.s, "stroke-dasharray") != NULL); /* series differ beyond colour */
	CHECK(strstr(sb.s, ">40</text>") != NULL);       /* a round y tick at the data maximum */
	tk_sb_free(&sb);

	/* a chart without data and with a label full of markup stays valid */
	rp_series empty = { "<&>", 0, x1, y1, 1, 10 };
	rp_chart one = { "empty", "Trials", "y", 0, 1, &empty };
	tk_sb_init(&sb);
	CHECK_EQ_INT(rp_svg(&sb, &one, 1, 0, 0), TK_OK);
	CHECK(xml_ok(sb.s));
	CHECK(xmllint_ok(sb.s) != 0);
	CHECK_EQ_INT(count(sb.s, "<path"), 1);
	CHECK(strstr(sb.s, "width=\"800\" height=\"500\"") != NULL);
	tk_sb_free(&sb);
}

TEST(test_svg_many_series)
{
	/* more series than the legend has rows: every series is still drawn */
	enum { N = 40 };
	double x[2] = { 1, 2 }, y[2] = { 1, 2 };
	rp_series aSer[N];
	char aLab[N][16];
	for (int i = 0; i < N; i++) {
		snprintf(aLab[i], sizeof aLab[i], "s%d", i);
		aSer[i] = (rp_series){ aLab[i], 2, x, y, 1, 3 };
	}
	rp_chart c = { "many", "Trials", "y", 0, N, aSer };
	tk_sb sb;
	tk_sb_init(&sb);
	CHECK_EQ_INT(rp_svg(&sb, &c, 1, 0, 0), TK_OK);
	CHECK(xml_ok(sb.s));
	CHECK_EQ_INT(count(sb.s, "<path"), N);
	CHECK(strstr(sb.s, "more</text>") != NULL);
	tk_sb_free(&sb);
}

TEST(test_network_curve)
{
	store_rec aRec[3] = { rec("a:x=1", 1, 1e9, 1.0, 1), rec("b:x=1", 2, 3e9, 2.0, 2),
	                      rec("a:x=1", 1, 1e9, 0.5, 3) };
	net_task aNt[2] = { { "a:x=1", 4 }, { "b:x=1", 1 } };
	tk_network net = { "tiny", 2, aNt };
	rp_run *r;
	rp_curve g;
	CHECK_EQ_INT(rp_run_build(1, 0, aRec, 3, &r), TK_OK);
	CHECK_EQ_INT(rp_network_curve(r, &net, &g), TK_OK);
	CHECK_EQ_STR(g.task, "network:tiny");
	CHECK_NEAR(g.flops, 7e9, 0);
	CHECK(g.pt[0].latency < 0);
	CHECK_NEAR(g.pt[1].latency, 4 * 1.0 + 2.0, 1e-12);
	CHECK_NEAR(g.pt[2].latency, 4 * 0.5 + 2.0, 1e-12);
	CHECK_NEAR(g.final_thr, 7.0 / 4.0, 1e-12);
	rp_curve_clear(&g);
	rp_run_free(r);
}

TEST(test_plot_svg)
{
	store_rec a1[3] = { rec("a:x=1", 1, 1e9, 1.0, 1), rec("b:x=1", 2, 1e9, 2.0, 2),
	                    rec("a:x=1", 1, 1e9, 0.5, 3) };
	store_rec a2[2] = { rec("a:x=1", 1, 1e9, 0.8, 11), rec("b:x=1", 2, 1e9, 1.0, 12) };
	rp_run *r1, *r2;
	CHECK_EQ_INT(rp_run_build(1, 0, a1, 3, &r1), TK_OK);
	CHECK_EQ_INT(rp_run_build(2, 10, a2, 2, &r2), TK_OK);
	rp_plot_line aLine[4] = {
		{ &r1->curve[0], 1, 3, NULL }, { &r1->curve[1], 1, 3, NULL },
		{ &r2->curve[0], 2, 2, "tune/xgb+sa" }, { &r2->curve[1], 2, 2, "tune/xgb+sa" },
	};
	tk_sb sb;
	tk_sb_init(&sb);
	CHECK_EQ_INT(rp_plot_svg(&sb, aLine, 4, RP_X_TRIALS | RP_X_SECONDS, 0), TK_OK);
	CHECK(xml_ok(sb.s));
	CHECK_EQ_INT(count(sb.s, "<path"), 8);
	CHECK(strstr(sb.s, ">Runs 1, 2: best so far by trial</text>") != NULL);
	CHECK(strstr(sb.s, ">Runs 1, 2: best so far over time</text>") != NULL);
	CHECK(strstr(sb.s, ">run 2 tune/xgb+sa: b:x=1</text>") != NULL);
	CHECK(strstr(sb.s, ">run 1: b:x=1</text>") != NULL); /* no method named */
	CHECK(strstr(sb.s, ">Trials (measurements of the task)</text>") != NULL);
	CHECK(strstr(sb.s, ">Best GFLOPS so far</text>") != NULL);
	tk_sb_free(&sb);
	/* one run, one axis: labels are the tasks */
	tk_sb_init(&sb);
	CHECK_EQ_INT(rp_plot_svg(&sb, aLine, 2, RP_X_SECONDS, 1), TK_OK);
	CHECK(xml_ok(sb.s));
	CHECK_EQ_INT(count(sb.s, "<path"), 2);
	CHECK(strstr(sb.s, ">Run 1: best so far over time</text>") != NULL);
	CHECK(strstr(sb.s, ">a:x=1</text>") != NULL);
	CHECK(strstr(sb.s, "(log scale)") != NULL);
	CHECK(strstr(sb.s, "by trial") == NULL);
	tk_sb_free(&sb);
	rp_run_free(r1);
	rp_run_free(r2);
}

/* The invalid share per batch: batches of size trials in trial order, the
 * last one short; the chart is well-formed SVG. */
TEST(test_invalid_batches)
{
	double aLat[] = { 4, -1, -1, 2, -1, 1, -1 };
	store_rec aRec[7];
	rp_run *r;
	rp_batch *b = NULL;
	int n = 0;
	for (int i = 0; i < 7; i++)
		aRec[i] = rec("dense:k=1,m=1,n=1", 7, 1e9, aLat[i], 1000 + 10 * i);
	CHECK_EQ_INT(rp_run_build(3, 995, aRec, 7, &r), TK_OK);
	CHECK_EQ_INT(rp_invalid_batches(r, 3, &b, &n), TK_OK);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(b[0].batch, 1);
	CHECK_EQ_INT(b[0].first, 1);
	CHECK_EQ_INT(b[0].invalid, 2);
	CHECK_NEAR(b[0].share, 2.0 / 3, 1e-12);
	CHECK_EQ_INT(b[1].first, 4);
	CHECK_EQ_INT(b[1].invalid, 1);
	CHECK_EQ_INT(b[2].trials, 1);
	CHECK_EQ_INT(b[2].invalid, 1);
	CHECK_NEAR(b[2].share, 1, 0);
	tk_sb sb;
	tk_sb_init(&sb);
	int64_t id = 3;
	const rp_batch *bb = b;
	CHECK_EQ_INT(rp_invalid_svg(&sb, &id, &bb, &n, 1), TK_OK);
	CHECK(sb.s && strstr(sb.s, "Invalid configurations per batch") != NULL);
	CHECK(xml_ok(sb.s));
	tk_sb_free(&sb);
	free(b);
	CHECK_EQ_INT(rp_invalid_batches(r, 0, &b, &n), TK_EINVAL);
	rp_run_free(r);
}

UNIT_MAIN(test_curve_best_so_far, test_curve_to95_exact, test_curve_never, test_curve_no_flops,
          test_aggregate, test_compare, test_run_load, test_models_from_store, test_model_meta,
          test_ticks, test_xml_checker,
          test_svg_chart, test_svg_many_series, test_network_curve, test_plot_svg,
          test_invalid_batches)
