/*
 * report: what the store knows: the best configuration per task and
 * hardware, the runs that produced the records, the tuning curves of runs
 * (as tables or as an SVG chart), comparisons of runs on the same tasks,
 * the cost models with their holdout metrics, and the regression gate that
 * compares the best configurations with a baseline store. The curves,
 * comparisons, models, the gate and the SVG are computed in lib/report;
 * this file picks the runs, formats the cells and writes the table or the
 * file.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "import/onnx.h"
#include "measure/hidden.h"
#include "model/cost.h"
#include "report/check.h"
#include "report/report.h"
#include "space/space.h"
#include "store/store_report.h"
#include "store/store_tuning.h"
#include "task/network.h"
#include "task/te.h"

static const char *const usage[] = {
	"tunekit report [--format table|tsv|json] [--hardware ID] (best | runs | model | hardware)\n"
	"   or: tunekit report [--format FMT] [--hardware ID] --network NAME best\n"
	"   or: tunekit report [--format FMT] [--hardware ID | --run ID...] [--task TASK] records\n"
	"   or: tunekit report [--format FMT] curve [--run ID]... [--task TASK | --network NAME]\n"
	"                      [--plot FILE [--x trials|seconds] [--log]]\n"
	"   or: tunekit report [--format FMT] compare --run ID [--run ID]... [--network NAME]\n"
	"   or: tunekit report [--format table|tsv|json|junit] check --baseline OLD.db\n"
	"                      [--threshold PCT] [--hardware ID]\n"
	"   or: tunekit report [--format FMT] invalid [--run ID]... [--batch N] [--plot FILE]\n"
	"   or: tunekit report [--format FMT] importance --model-file FILE [--task TASK]",
	"best: the fastest valid configuration of every task on every hardware, ranked by\n"
	"its median measurement (one lucky timing does not make it best), with that\n"
	"measurement's latency (median of its repeats), GFLOPS, and its speed-up over the\n"
	"naive loop nest when that was measured on the same hardware; hw_kind says whether\n"
	"the latency was timed on a cpu or is a simulator's (simulated). With --network, the\n"
	"network's tasks only, with their weights, and on stderr the estimated latency per\n"
	"hardware (sum of weight x best latency).\n"
	"runs: every run with its method, duration (and for tune and measure, where it went:\n"
	"search, model fits, compilation, running; the build cache's hit rate; code\n"
	"generation, the reference, storing), trials, valid records, bounded records (tune\n"
	"--bound), trials measured and answered by the model (tune --controller), the model\n"
	"each measured batch was planned on in order (tune --model-file: the file's, or the\n"
	"guard's from scratch), and best latency.\n"
	"curve: the best GFLOPS found so far after each trial of each task of a run (default:\n"
	"the most recent run), with the seconds since the run started; with --network, the\n"
	"network's estimated latency instead; with --plot, an SVG chart instead of the table.\n"
	"compare: per task and overall, the trials and seconds each run needed to reach 95% of\n"
	"the best throughput known for the task, its final GFLOPS and their ratio to the\n"
	"first run's.\n"
	"model: the cost models in the store with their holdout metrics.\n"
	"records: every measurement, valid or not (of --hardware, of the --run runs, of\n"
	"--task), by task then id: its id, task, config, hw, valid, error, latency, GFLOPS,\n"
	"run, the load it was timed under, hw_kind and bounded (1: tune --bound stopped its\n"
	"timing after one repeat). As TSV a record stream: 'tunekit\n"
	"measure --config -' measures its configurations again, on another target say.\n"
	"hardware: every hardware in the store: its id (what --hardware takes), kind, target\n"
	"spec, records, valid records, tasks, and key.\n"
	"check: per task measured on the same hardware in both stores, the latency of the\n"
	"best configuration against the baseline store's: the ratio of the medians of their\n"
	"repeats with a 95% bootstrap interval, and improved, unchanged or slower (slower: the\n"
	"whole interval above 1 + threshold). Exit 1 when a task is slower (listed on stderr),\n"
	"2 when the stores share no hardware.\n"
	"invalid: per batch of --batch trials (default: the run's tune --batch) of each run,\n"
	"how many configurations were invalid and their share; with --plot, an SVG chart of\n"
	"the share against the batch.\n"
	"importance: the features of a model file ranked by XGBoost's total gain, with\n"
	"their names where known (hidden features, named for --task on --target).\n"
	"Prints a table on a terminal and TSV otherwise (a record stream for best and\n"
	"records: their id column names the measurement).",
};

static struct {
	const char *format;
	int64_t hardware;
	opt_list run;
	const char *task, *network, *layout, *x, *plot;
	int log;
	const char *baseline;
	double threshold;
	int64_t batch;
	const char *model_file;
} o;

static const opt options[] = {
	{ OPT_STRING, "format", 'f', &o.format, "FMT", "table, tsv or json; junit for check (default: table on a terminal)" },
	{ OPT_INT, "hardware", 0, &o.hardware, "ID", "best, runs, model, check, hardware, records: only this hardware id" },
	{ OPT_LIST, "run", 0, &o.run, "ID", "curve, compare, invalid, records: a run (repeatable; default: the latest)" },
	{ OPT_STRING, "task", 0, &o.task, "TASK", "curve, records: only this task; importance: name the features for it" },
	{ OPT_STRING, "network", 0, &o.network, "NAME", "best: its tasks and estimated latency; curve, compare: a network (name, file or MODEL.onnx) as one workload" },
	{ OPT_STRING, "layout", 0, &o.layout, "L", "best, curve, compare --network: nchw (default) or blocked; best: auto (the smaller estimate's)" },
	{ OPT_STRING, "plot", 0, &o.plot, "FILE", "curve, invalid: write an SVG chart to FILE (- for stdout)" },
	{ OPT_INT, "batch", 0, &o.batch, "N", "invalid: trials per batch (default: the run's)" },
	{ OPT_STRING, "model-file", 0, &o.model_file, "FILE", "importance: the model file (tunekit train)" },
	{ OPT_STRING, "x", 0, &o.x, "AXIS", "curve --plot: trials or seconds (default: both, side by side)" },
	{ OPT_FLAG, "log", 0, &o.log, NULL, "curve --plot: logarithmic seconds axis" },
	{ OPT_STRING, "baseline", 0, &o.baseline, "FILE", "check: the store to compare with (read only)" },
	{ OPT_DOUBLE, "threshold", 0, &o.threshold, "PCT", "check: slower only beyond PCT percent (default 5)" },
	OPT_END_
};

/* best --network: per hardware, the sum of weight x best latency */
typedef struct net_sum {
	int64_t hw;
	double latency;
	int ntask;
} net_sum;

typedef struct best_ctx {
	tk_ctx *ctx;
	table *t;
	int fmt;
	const char *task; /* records: only this task key */
	const tk_network *net; /* best: only its tasks, with their weights */
	net_sum *sum;      /* one per hardware met, in the order met */
	int nsum, cap;
} best_ctx;

/* The store's key of --task: canonical for a template task, as given for an
 * imported one (malloc'd; NULL when out of memory). */
static char *task_key(const char *task)
{
	te_prog *p;
	char *key;
	if (te_task_parse(task, &p))
		return strdup(task);
	key = strdup(p->key);
	te_prog_free(p);
	return key;
}

/* Speed-up of the record over the naive configuration of its task. */
static int naive_speedup(tk_ctx *ctx, const store_rec *r, double *out)
{
	te_prog *p;
	sp_space *sp;
	sp_config c;
	double naive;
	int rc = -1;
	if (te_task_parse(r->task, &p))
		return -1; /* imported tasks have no template */
	if (!sp_space_create(p, &sp)) {
		tk_sb sb;
		tk_sb_init(&sb);
		sp_naive(sp, &c);
		sp_format(&sb, sp, &c);
		if (sb.s && !store_config_median(ctx->store, r->task_id, sb.s, r->hardware_id, &naive)) {
			*out = naive / r->median;
			rc = 0;
		}
		tk_sb_free(&sb);
		sp_space_free(sp);
	}
	te_prog_free(p);
	return rc;
}

/* A measurement was taken on a busy machine when, over the minute before
 * its timed runs, more tasks were runnable than there are CPUs. */
#define BUSY_LOAD 1.0

static int best_row(void *p, const store_rec *r)
{
	best_ctx *b = p;
	char id[24], hw[24], run[24], lat[32], gf[32], sp[32] = "", wt[32] = "";
	double speedup;
	if (b->net) {
		int i, h;
		for (i = 0; i < b->net->n && strcmp(b->net->task[i].task, r->task); i++)
			;
		if (i == b->net->n)
			return 0;
		for (h = 0; h < b->nsum && b->sum[h].hw != r->hardware_id; h++)
			;
		if (h == b->nsum) {
			if (b->nsum == b->cap) {
				int cap = b->cap ? 2 * b->cap : 8;
				net_sum *s = realloc(b->sum, sizeof *s * (size_t)cap);
				if (!s)
					return TK_ENOMEM;
				b->sum = s;
				b->cap = cap;
			}
			b->sum[b->nsum++] = (net_sum){ r->hardware_id, 0, 0 };
		}
		b->sum[h].latency += b->net->task[i].weight * r->median;
		b->sum[h].ntask++;
		snprintf(wt, sizeof wt, "%g", b->net->task[i].weight);
	}
	snprintf(id, sizeof id, "%lld", (long long)r->id);
	snprintf(hw, sizeof hw, "%lld", (long long)r->hardware_id);
	snprintf(run, sizeof run, "%lld", (long long)r->run_id);
	if (b->fmt == FMT_TABLE)
		fmt_seconds(lat, r->median);
	else
		snprintf(lat, sizeof lat, "%.9g", r->median);
	gf[0] = 0; /* a reorder has no FLOPs: its latency alone */
	if (r->flops > 0)
		snprintf(gf, sizeof gf, "%.3f", r->flops / r->median * 1e-9);
	if (!naive_speedup(b->ctx, r, &speedup))
		snprintf(sp, sizeof sp, "%.2f", speedup);
	const char *busy = r->load < 0 ? "" : r->load > BUSY_LOAD ? "1" : "0";
	const char *cells[] = { id, r->task, r->config, hw, lat, gf, sp, run, busy,
	                        r->hw_kind ? r->hw_kind : "", wt };
	table_row(b->t, cells);
	return 0;
}

static int report_best(tk_ctx *ctx, int fmt)
{
	static const char *const hdr[] = {
		"id", "task", "config", "hw", "latency_s", "gflops", "vs_naive", "run", "busy",
		"hw_kind", "weight",
	};
	tk_network *nets[2] = { NULL, NULL }, *net = NULL;
	int64_t hw = o.hardware;
	int rc, nnet = 0, layout, status;
	if (o.network && (status = net_load_layout(ctx, o.network, o.layout, &layout, nets, &nnet)))
		return status;
	net = nets[0];
	if (nnet == 2) {
		/* auto: both estimates on one hardware, the chosen variant's table */
		tk_target tg;
		int chosen = -1;
		rc = hw ? TK_OK : tk_target_parse(ctx->common.target, &tg);
		if (!rc && !hw)
			rc = store_hardware_find(ctx->store, 0, tg.key, &hw, NULL, NULL);
		status = rc ? tk_fail(ctx, rc, rc == TK_ENOTFOUND ? "no records of this target (%s) in"
		                      " the store: give --hardware" : NULL, tg.spec)
		            : layout_choose(ctx, ctx->store, hw, nets, &chosen);
		net = nets[chosen > 0];
		net_free(nets[chosen <= 0]);
		if (status) {
			net_free(net);
			return status;
		}
	}
	best_ctx b = { .ctx = ctx, .t = table_new(ArraySize(hdr) - !net, hdr), .fmt = fmt, .net = net };
	if (!b.t) {
		net_free(net);
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	}
	rc = store_best(ctx->store, hw, best_row, &b);
	if (rc) {
		table_free(b.t);
		net_free(net);
		free(b.sum);
		return tk_fail(ctx, rc, rc == TK_ENOMEM ? "out of memory" : NULL);
	}
	status = table_print(b.t, stdout, fmt);
	/* the estimate: every task of the network tuned on the hardware, or not */
	for (int h = 0; net && h < b.nsum && !ctx->common.quiet; h++) {
		char lat[32];
		fmt_seconds(lat, b.sum[h].latency);
		fprintf(stderr, "network %s on hardware %lld: estimated latency %s%s (%d of %d tasks"
		        " tuned)\n", net->name, (long long)b.sum[h].hw, lat,
		        b.sum[h].ntask < net->n ? " and more" : "", b.sum[h].ntask, net->n);
	}
	if (net && b.nsum == 0 && !ctx->common.quiet)
		fprintf(stderr, "network %s: none of its %d tasks has a valid record%s\n", net->name,
		        net->n, hw ? " on that hardware" : "");
	net_free(net);
	free(b.sum);
	return status;
}

/* tune's guard ('f' or 's' a batch, in order) as runs of one model: "3 file,
 * 9 scratch, 2 file". */
static void guard_runs(char *out, size_t size, const char *g)
{
	size_t at = 0;
	out[0] = 0;
	for (const char *p = g; p && *p && at < size;) {
		int n = 0;
		char c = *p;
		while (p[n] == c)
			n++;
		at += (size_t)snprintf(out + at, size - at, "%s%d %s", at ? ", " : "", n,
		                       c == 's' ? "scratch" : "file");
		p += n;
	}
}

static int run_row(void *p, const store_runinfo *r)
{
	best_ctx *b = p;
	char id[24], trials[24], valid[24], best[32] = "", start[32], dur[32] = "", hw[24];
	char bounded[24];
	time_t t = (time_t)r->started;
	struct tm tm;
	if (o.hardware && r->hardware_id != o.hardware)
		return 0;
	snprintf(id, sizeof id, "%lld", (long long)r->id);
	snprintf(trials, sizeof trials, "%lld", (long long)r->ntrials);
	snprintf(valid, sizeof valid, "%lld", (long long)r->nvalid);
	snprintf(bounded, sizeof bounded, "%lld", (long long)r->nbounded);
	snprintf(hw, sizeof hw, "%lld", (long long)r->hardware_id);
	strftime(start, sizeof start, "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
	if (r->best_median >= 0) {
		if (b->fmt == FMT_TABLE)
			fmt_seconds(best, r->best_median);
		else
			snprintf(best, sizeof best, "%.9g", r->best_median);
	}
	if (r->ended >= 0)
		snprintf(dur, sizeof dur, "%.1f", r->ended - r->started);
	char split[7][24] = { "", "", "", "", "", "", "" }, hit[24] = "";
	const double sec[7] = { r->search_s, r->fit_s, r->compile_s, r->run_s,
	                        r->codegen_s, r->ref_s, r->store_s };
	for (int i = 0; i < 7; i++)
		if (sec[i] >= 0)
			snprintf(split[i], sizeof split[i], "%.3g", sec[i]);
	if (r->compiled >= 0 && r->compiled + r->cached > 0)
		snprintf(hit, sizeof hit, "%.2f", r->cached / (r->compiled + r->cached));
	char meas[24] = "", pred[24] = "";
	if (r->measured >= 0)
		snprintf(meas, sizeof meas, "%.0f", r->measured);
	if (r->predicted >= 0)
		snprintf(pred, sizeof pred, "%.0f", r->predicted);
	char planned[256];
	guard_runs(planned, sizeof planned, r->guard);
	const char *cells[] = { id, r->method, start, dur, split[0], split[1], split[2], split[3],
	                        hit, split[4], split[5], split[6], trials, valid, bounded, meas, pred,
	                        planned, best, hw, r->replay ? r->replay : "", r->argv };
	table_row(b->t, cells);
	return 0;
}

static int report_runs(tk_ctx *ctx, int fmt)
{
	static const char *const hdr[] = {
		"run", "method", "started", "seconds", "search_s", "fit_s", "compile_s", "run_s",
		"cache_hits", "codegen_s", "ref_s", "store_s", "trials", "valid", "bounded", "measured",
		"predicted", "planned_on",
		"best_latency", "hw", "replay", "command",
	};
	best_ctx b = { .ctx = ctx, .t = table_new(ArraySize(hdr), hdr), .fmt = fmt, .task = NULL };
	if (!b.t)
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	int rc = store_runs(ctx->store, run_row, &b);
	if (rc) {
		table_free(b.t);
		return tk_fail(ctx, rc, NULL);
	}
	return table_print(b.t, stdout, fmt);
}

static int hw_row(void *p, const store_hwinfo *h)
{
	table *t = p;
	char id[24], nrec[24], nvalid[24], ntask[24];
	snprintf(id, sizeof id, "%lld", (long long)h->id);
	snprintf(nrec, sizeof nrec, "%lld", (long long)h->nrec);
	snprintf(nvalid, sizeof nvalid, "%lld", (long long)h->nvalid);
	snprintf(ntask, sizeof ntask, "%lld", (long long)h->ntask);
	const char *cells[] = { id, h->kind ? h->kind : "", h->spec ? h->spec : "", nrec, nvalid,
	                        ntask, h->key ? h->key : "" };
	table_row(t, cells);
	return 0;
}

static int report_hardware(tk_ctx *ctx, int fmt)
{
	static const char *const hdr[] = { "hw", "kind", "target", "records", "valid", "tasks", "key" };
	table *t = table_new(ArraySize(hdr), hdr);
	if (!t)
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	int rc = store_hardware_list(ctx->store, o.hardware, hw_row, t);
	if (rc) {
		table_free(t);
		return tk_fail(ctx, rc, NULL);
	}
	return table_print(t, stdout, fmt);
}

/* ---- curve and compare --------------------------------------------------- */

/* The runs named by --run (or the latest when none and dflt_latest), loaded
 * into a new array *paRun of *pn runs; prints the error and returns the exit
 * status on failure. */
static int load_runs(tk_ctx *ctx, int dflt_latest, rp_run ***paRun, int *pn)
{
	int n = o.run.n ? o.run.n : 1, rc;
	int64_t id;
	rp_run **a = calloc((size_t)n, sizeof *a);
	*paRun = a;
	*pn = 0;
	if (!a)
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		if (!o.run.n) {
			if (!dflt_latest)
				return tk_fail(ctx, TK_EINVAL, "compare needs --run ID (at least one)");
			if ((rc = store_run_latest(ctx->store, &id)))
				return tk_fail(ctx, rc, NULL);
		} else if (tk_parse_i64(o.run.v[i], &id) || id <= 0) {
			return tk_fail(ctx, TK_EINVAL, "--run needs a run id, got '%s'", o.run.v[i]);
		}
		for (int j = 0; j < i; j++)
			if (a[j]->id == id)
				return tk_fail(ctx, TK_EINVAL, "run %lld is given twice", (long long)id);
		if ((rc = rp_run_load(ctx->store, id, &a[i])))
			return tk_fail(ctx, rc, NULL);
		*pn = i + 1;
	}
	return EXIT_OK;
}

static void free_runs(rp_run **a, int n)
{
	for (int i = 0; i < n; i++)
		rp_run_free(a[i]);
	free(a);
}

/* The curves a curve report shows: per run, the selected tasks or the
 * network aggregate. */
typedef struct curve_sel {
	int n;
	const rp_curve **curve; /* [n] */
	int64_t *run;           /* [n] the run of each */
	rp_curve *agg;          /* [nrun] network aggregates, or NULL */
	int nrun;
} curve_sel;

static void sel_free(curve_sel *s)
{
	if (s->agg)
		for (int i = 0; i < s->nrun; i++)
			rp_curve_clear(&s->agg[i]);
	free(s->agg);
	free(s->curve);
	free(s->run);
}

/* --network of curve and compare in the layout of --layout: nchw or
 * blocked, as one workload. Returns 0, or the exit status after an error. */
static int load_network(tk_ctx *ctx, tk_network **out)
{
	tk_network *nets[2];
	int layout, nnet, status;
	*out = NULL;
	if (layout_parse(o.layout) == LAYOUT_AUTO)
		return tk_fail(ctx, TK_EINVAL, "--layout auto chooses in report best; curve and "
		               "compare take nchw or blocked");
	if ((status = net_load_layout(ctx, o.network, o.layout, &layout, nets, &nnet)))
		return status;
	*out = nets[0];
	return EXIT_OK;
}

static int select_curves(tk_ctx *ctx, rp_run **aRun, int nRun, curve_sel *sel)
{
	int max = nRun, rc;
	char *key = NULL;
	memset(sel, 0, sizeof *sel);
	sel->nrun = nRun;
	for (int i = 0; i < nRun; i++)
		max += aRun[i]->ncurve;
	sel->curve = calloc((size_t)max, sizeof *sel->curve);
	sel->run = calloc((size_t)max, sizeof *sel->run);
	if (!sel->curve || !sel->run)
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	if (o.network) {
		tk_network *net;
		if ((rc = load_network(ctx, &net)))
			return rc;
		if (!(sel->agg = calloc((size_t)nRun, sizeof *sel->agg))) {
			net_free(net);
			return tk_fail(ctx, TK_ENOMEM, "out of memory");
		}
		for (int i = 0; i < nRun && !rc; i++) {
			rc = rp_network_curve(aRun[i], net, &sel->agg[i]);
			if (!rc && sel->agg[i].nmissing && !ctx->common.quiet)
				fprintf(stderr, "%s: warning: run %lld has no measurements of %d of the"
				        " %d tasks of %s\n", ctx->prog, (long long)aRun[i]->id,
				        sel->agg[i].nmissing, net->n, net->name);
			sel->curve[sel->n] = &sel->agg[i];
			sel->run[sel->n++] = aRun[i]->id;
		}
		net_free(net);
		return rc ? tk_fail(ctx, rc, NULL) : EXIT_OK;
	}
	if (o.task && !(key = task_key(o.task)))
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	for (int i = 0; i < nRun; i++)
		for (int k = 0; k < aRun[i]->ncurve; k++)
			if (!key || !strcmp(key, aRun[i]->curve[k].task)) {
				sel->curve[sel->n] = &aRun[i]->curve[k];
				sel->run[sel->n++] = aRun[i]->id;
			}
	if (key && !sel->n) {
		rc = tk_fail(ctx, TK_ENOTFOUND, "no measurements of task %s in %s", key,
		             nRun > 1 ? "these runs" : "the run");
		free(key);
		return rc;
	}
	free(key);
	return EXIT_OK;
}

/* A number, or "" when v < 0 (none). */
static const char *cell_num(char *buf, const char *fmt, double v)
{
	if (v < 0)
		buf[0] = 0;
	else
		snprintf(buf, 32, fmt, v);
	return buf;
}

static int curve_table(const curve_sel *sel, int fmt)
{
	static const char *const hdr[] = {
		"run", "task", "trial", "seconds", "best_gflops", "best_latency_s", "unit",
	};
	table *t = table_new(ArraySize(hdr), hdr);
	if (!t)
		return EXIT_FAIL;
	for (int k = 0; k < sel->n; k++) {
		const rp_curve *c = sel->curve[k];
		char run[24], trial[24], sec[32], thr[32], lat[32];
		snprintf(run, sizeof run, "%lld", (long long)sel->run[k]);
		for (int i = 0; i < c->n; i++) {
			const rp_point *p = &c->pt[i];
			snprintf(trial, sizeof trial, "%d", p->trial);
			snprintf(sec, sizeof sec, "%.3f", p->seconds);
			cell_num(thr, "%.3f", p->latency > 0 ? p->thr : -1);
			if (fmt == FMT_TABLE && p->latency > 0)
				fmt_seconds(lat, p->latency);
			else
				cell_num(lat, "%.9g", p->latency);
			const char *cells[] = { run, c->task, trial, sec, thr, lat, rp_unit(c) };
			table_row(t, cells);
		}
	}
	return table_print(t, stdout, fmt);
}

/* The output of an SVG document (sb) to --plot. */
static int write_plot(tk_ctx *ctx, const tk_sb *sb)
{
	int rc;
	FILE *f = strcmp(o.plot, "-") ? fopen(o.plot, "w") : stdout;
	if (!f) {
		rc = tk_fail(ctx, TK_EIO, "%s: %s", o.plot, strerror(errno));
	} else {
		int bad = fwrite(sb->s, 1, sb->n, f) != sb->n;
		bad |= f == stdout ? fflush(f) != 0 || ferror(f) : fclose(f) != 0;
		rc = bad ? tk_fail(ctx, TK_EIO, "%s: write error", o.plot) : EXIT_OK;
	}
	return rc;
}

/* The plot of a curve report: one chart (--x) or two side by side. */
static int curve_plot(tk_ctx *ctx, const curve_sel *sel, int nRun, rp_run **aRun)
{
	rp_plot_line *aLine = calloc((size_t)sel->n + 1, sizeof *aLine);
	int xaxes = !o.x ? RP_X_TRIALS | RP_X_SECONDS
	          : !strcmp(o.x, "trials") ? RP_X_TRIALS : RP_X_SECONDS;
	int rc;
	tk_sb sb;

	if (!aLine)
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	for (int k = 0; k < sel->n; k++) {
		aLine[k].curve = sel->curve[k];
		aLine[k].run_id = sel->run[k];
		aLine[k].run_end = NAN;
		for (int i = 0; i < nRun; i++)
			if (aRun[i]->id == sel->run[k]) {
				aLine[k].method = aRun[i]->method;
				if (aRun[i]->nstep)
					aLine[k].run_end = aRun[i]->step[aRun[i]->nstep - 1].seconds;
			}
	}
	tk_sb_init(&sb);
	rc = rp_plot_svg(&sb, aLine, sel->n, xaxes, o.log);
	free(aLine);
	if (rc) {
		tk_sb_free(&sb);
		return tk_fail(ctx, rc, NULL);
	}
	rc = write_plot(ctx, &sb);
	tk_sb_free(&sb);
	return rc;
}

/* The loss curve of a meta-training run: a table, or with --plot the
 * pre-training loss per epoch and MAML's query loss per meta-step (after
 * and before adapting) side by side. */
static int loss_curve(tk_ctx *ctx, int64_t run, int fmt)
{
	static const char *const hdr[] = { "run", "phase", "step", "loss", "loss_before" };
	rp_loss l;
	int rc;
	if (o.task || o.network || o.x || o.log)
		return tk_fail(ctx, TK_EINVAL, "run %lld is a meta-training run: its curve is a loss"
		               " curve, without --task, --network, --x or --log", (long long)run);
	if ((rc = rp_loss_load(ctx->store, run, &l)))
		return tk_fail(ctx, rc, NULL);
	if (!o.plot) {
		table *t = table_new(ArraySize(hdr), hdr);
		if (!t) {
			rp_loss_free(&l);
			return tk_fail(ctx, TK_ENOMEM, "out of memory");
		}
		for (int i = 0; i < l.n; i++) {
			char b[4][32];
			const rp_loss_pt *p = &l.pt[i];
			snprintf(b[0], 32, "%lld", (long long)run);
			snprintf(b[1], 32, "%d", p->step);
			snprintf(b[2], 32, "%.6f", p->loss);
			snprintf(b[3], 32, "%.6f", p->before);
			const char *cells[] = { b[0], p->phase == RP_LOSS_PRETRAIN ? "pretrain" : "maml",
			                        b[1], b[2], isnan(p->before) ? NULL : b[3] };
			table_row(t, cells);
		}
		rp_loss_free(&l);
		return table_print(t, stdout, fmt);
	}
	double *x = malloc(sizeof *x * (size_t)(l.n + 1)), *y = malloc(sizeof *y * (size_t)(l.n + 1));
	double *yb = malloc(sizeof *yb * (size_t)(l.n + 1));
	if (!x || !y || !yb) {
		free(x), free(y), free(yb);
		rp_loss_free(&l);
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	}
	int np = 0;
	for (int i = 0; i < l.n; i++) {
		x[i] = l.pt[i].step;
		y[i] = l.pt[i].loss;
		yb[i] = l.pt[i].before;
		np += l.pt[i].phase == RP_LOSS_PRETRAIN;
	}
	rp_series pre = { "training loss", np, x, y, 0, 0 };
	rp_series after = { "query loss after adapting", l.n - np, x + np, y + np, 0, 0 };
	rp_series before = { "query loss before adapting", l.n - np, x + np, yb + np, 0, 0 };
	rp_series maml[2] = { after, before };
	char t0[64], t1[64];
	snprintf(t0, sizeof t0, "run %lld: supervised pre-training", (long long)run);
	snprintf(t1, sizeof t1, "run %lld: first-order MAML", (long long)run);
	rp_chart ch[2] = { { t0, "epoch", "MSE", 0, 1, &pre }, { t1, "meta-step", "MSE", 0, 2, maml } };
	tk_sb sb;
	tk_sb_init(&sb);
	rc = rp_svg(&sb, ch, 2, RP_SVG_W, RP_SVG_H);
	rc = rc ? tk_fail(ctx, rc, NULL) : write_plot(ctx, &sb);
	tk_sb_free(&sb);
	free(x), free(y), free(yb);
	rp_loss_free(&l);
	return rc;
}

/* The run of a curve report if it is one meta-training run, else 0 (the
 * tuning curves' own path reports bad or unknown runs). */
static int training_run(tk_ctx *ctx, int64_t *run)
{
	int64_t id;
	char *method = NULL;
	int rc;
	*run = 0;
	if (o.run.n > 1 || (o.run.n == 1 && (tk_parse_i64(o.run.v[0], &id) || id <= 0)) ||
	    (o.run.n == 0 && store_run_latest(ctx->store, &id)))
		return EXIT_OK;
	if ((rc = store_run_method(ctx->store, id, &method)) == TK_ENOTFOUND)
		return EXIT_OK;
	if (rc)
		return tk_fail(ctx, rc, NULL);
	if (!strcmp(method, "pretrain-meta"))
		*run = id;
	free(method);
	return EXIT_OK;
}

static int report_curve(tk_ctx *ctx, int fmt)
{
	rp_run **aRun;
	curve_sel sel;
	int nRun, rc;
	int64_t train_run;
	memset(&sel, 0, sizeof sel);
	if ((rc = training_run(ctx, &train_run)))
		return rc;
	if (train_run)
		return loss_curve(ctx, train_run, fmt);
	if (o.x && strcmp(o.x, "trials") && strcmp(o.x, "seconds"))
		return tk_fail(ctx, TK_EINVAL, "--x must be trials or seconds, not '%s'", o.x);
	if ((o.x || o.log) && !o.plot)
		return tk_fail(ctx, TK_EINVAL, "--x and --log apply to --plot");
	if (o.log && o.x && !strcmp(o.x, "trials"))
		return tk_fail(ctx, TK_EINVAL, "--log applies to the seconds axis, not to trials");
	if (o.task && o.network)
		return tk_fail(ctx, TK_EINVAL, "--task and --network exclude each other");
	if ((rc = load_runs(ctx, 1, &aRun, &nRun)) == EXIT_OK &&
	    (rc = select_curves(ctx, aRun, nRun, &sel)) == EXIT_OK)
		rc = o.plot ? curve_plot(ctx, &sel, nRun, aRun) : curve_table(&sel, fmt);
	sel_free(&sel);
	free_runs(aRun, nRun);
	return rc;
}

/* Trials to 95%: a count, "never", or "" if the run lacks the task. */
static const char *cell_trials(char *buf, const rp_curve *c)
{
	if (!c)
		buf[0] = 0;
	else if (c->trials_to_95 < 0)
		strcpy(buf, "never");
	else
		snprintf(buf, 32, "%d", c->trials_to_95);
	return buf;
}

static const char *cell_seconds(char *buf, const rp_curve *c)
{
	if (!c)
		buf[0] = 0;
	else if (c->seconds_to_95 < 0)
		strcpy(buf, "never");
	else
		snprintf(buf, 32, "%.3f", c->seconds_to_95);
	return buf;
}

static int report_compare(tk_ctx *ctx, int fmt)
{
	static const char *const aSuffix[] = {
		"trials_to_95", "seconds_to_95", "final_gflops", "ratio",
	};
	rp_run **aRun;
	rp_compare *cmp = NULL;
	tk_network *net = NULL;
	table *t = NULL;
	int nRun, rc, nCol = 0;
	char (*aBuf)[64] = NULL;
	const char **aCell = NULL;

	if ((rc = load_runs(ctx, 0, &aRun, &nRun)))
		goto done;
	if (o.network && (rc = load_network(ctx, &net)))
		goto done;
	if ((rc = rp_compare_build((const rp_run *const *)aRun, nRun, net, &cmp))) {
		rc = tk_fail(ctx, rc, NULL);
		goto done;
	}
	/* task, covered, 4 per run, best_known_gflops, unit */
	nCol = 4 + 4 * nRun;
	aBuf = calloc((size_t)nCol, sizeof *aBuf);
	aCell = calloc((size_t)nCol, sizeof *aCell);
	if (!aBuf || !aCell)
		goto oom;
	aCell[0] = "task";
	aCell[1] = "covered";
	for (int j = 0; j < nRun; j++)
		for (int k = 0; k < 4; k++) {
			snprintf(aBuf[2 + 4 * j + k], sizeof aBuf[0], "r%lld_%s", (long long)aRun[j]->id,
			         aSuffix[k]);
			aCell[2 + 4 * j + k] = aBuf[2 + 4 * j + k];
		}
	aCell[nCol - 2] = "best_known_gflops";
	aCell[nCol - 1] = "unit";
	if (!(t = table_new(nCol, aCell)))
		goto oom;
	for (int r = 0; r < cmp->nrow; r++) {
		const rp_cmp_row *w = &cmp->row[r];
		aCell[0] = w->task;
		snprintf(aBuf[1], sizeof aBuf[0], "%d/%d", w->ncovered, nRun);
		aCell[1] = aBuf[1];
		for (int j = 0; j < nRun; j++) {
			const rp_curve *c = w->cell[j];
			int i = 2 + 4 * j;
			aCell[i] = cell_trials(aBuf[i], c);
			aCell[i + 1] = cell_seconds(aBuf[i + 1], c);
			aCell[i + 2] = cell_num(aBuf[i + 2], "%.3f", c && c->final_thr > 0 ? c->final_thr : -1);
			aCell[i + 3] = cell_num(aBuf[i + 3], "%.3f", w->ratio[j]);
		}
		aCell[nCol - 2] = cell_num(aBuf[nCol - 2], "%.3f",
		                           w->best_known_thr > 0 ? w->best_known_thr : -1);
		aCell[nCol - 1] = w->unit;
		table_row(t, aCell);
	}
	rc = table_print(t, stdout, fmt);
	t = NULL;
	goto done;
oom:
	rc = tk_fail(ctx, TK_ENOMEM, "out of memory");
done:
	free(aBuf);
	free(aCell);
	table_free(t);
	rp_compare_free(cmp);
	net_free(net);
	free_runs(aRun, nRun);
	return rc;
}

/* ---- models --------------------------------------------------------------- */

static int model_row(void *p, const rp_model *m)
{
	best_ctx *b = p;
	char id[24], hw[24] = "", created[32];
	time_t tt = (time_t)m->created;
	struct tm tm;
	const char *cells[4 + RP_MODEL_NKEY];
	if (o.hardware && m->hardware_id != o.hardware)
		return 0;
	snprintf(id, sizeof id, "%lld", (long long)m->id);
	if (m->hardware_id)
		snprintf(hw, sizeof hw, "%lld", (long long)m->hardware_id);
	strftime(created, sizeof created, "%Y-%m-%d %H:%M:%S", localtime_r(&tt, &tm));
	cells[0] = id;
	cells[1] = m->kind;
	cells[2] = hw;
	cells[3] = created;
	for (int k = 0; k < RP_MODEL_NKEY; k++)
		cells[4 + k] = m->val[k];
	table_row(b->t, cells);
	return 0;
}

static int report_model(tk_ctx *ctx, int fmt)
{
	const char *hdr[4 + RP_MODEL_NKEY] = { "id", "kind", "hw", "created" };
	for (int k = 0; k < RP_MODEL_NKEY; k++)
		hdr[4 + k] = rp_model_keys[k];
	best_ctx b = { .ctx = ctx, .t = table_new(ArraySize(hdr), hdr), .fmt = fmt, .task = NULL };
	if (!b.t)
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	int rc = rp_models(ctx->store, model_row, &b);
	if (rc) {
		table_free(b.t);
		return tk_fail(ctx, rc, NULL);
	}
	return table_print(b.t, stdout, fmt);
}

/* ---- check ------------------------------------------------------------------------ */

/* The JUnit XML of a check: one test case per task (and hardware), a
 * failure for each slower one. */
static int check_junit(const rp_check *c, FILE *f)
{
	tk_sb sb;
	tk_sb_init(&sb);
	tk_sb_printf(&sb, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	             "<testsuites name=\"tunekit report check\" tests=\"%d\" failures=\"%d\">\n"
	             "  <testsuite name=\"tunekit.check\" tests=\"%d\" failures=\"%d\" errors=\"0\""
	             " skipped=\"0\">\n", c->nrow, c->count[RP_SLOWER], c->nrow,
	             c->count[RP_SLOWER]);
	for (int i = 0; i < c->nrow; i++) {
		const rp_check_row *r = &c->row[i];
		char what[200];
		snprintf(what, sizeof what, "%s: ratio %.3f [%.3f, %.3f], %.6g s against %.6g s",
		         rp_check_verdict_name(r->verdict), r->ratio, r->lo, r->hi, r->cur, r->base);
		tk_sb_printf(&sb, "    <testcase classname=\"tunekit.check.hw%lld\" name=\"",
		             (long long)r->hardware_id);
		rp_xml_escape(&sb, r->task);
		tk_sb_printf(&sb, "\" time=\"%.9f\">\n", r->cur);
		if (r->verdict == RP_SLOWER) {
			tk_sb_printf(&sb, "      <failure type=\"regression\" message=\"");
			rp_xml_escape(&sb, what);
			tk_sb_printf(&sb, "\">slower beyond %g%%: ", c->threshold * 100);
			rp_xml_escape(&sb, what);
			tk_sb_puts(&sb, "; config ");
			rp_xml_escape(&sb, r->config);
			tk_sb_puts(&sb, "</failure>\n");
		}
		tk_sb_puts(&sb, "      <system-out>");
		rp_xml_escape(&sb, what);
		tk_sb_puts(&sb, "</system-out>\n    </testcase>\n");
	}
	tk_sb_puts(&sb, "  </testsuite>\n</testsuites>\n");
	int bad = sb.oom || fwrite(sb.s, 1, sb.n, f) != sb.n || fflush(f) != 0;
	tk_sb_free(&sb);
	return bad ? EXIT_FAIL : EXIT_OK;
}

static int check_table(const rp_check *c, int fmt)
{
	static const char *const hdr[] = {
		"task", "hw", "verdict", "ratio", "ratio_lo", "ratio_hi", "latency_s",
		"baseline_latency_s", "repeats", "baseline_repeats", "config", "baseline_config",
		"pairs",
	};
	table *t = table_new(ArraySize(hdr), hdr);
	if (!t)
		return EXIT_FAIL;
	for (int i = 0; i < c->nrow; i++) {
		const rp_check_row *r = &c->row[i];
		char hw[24], ratio[32], lo[32], hi[32], cur[32], base[32], nc[24], nb[24], np[24];
		snprintf(hw, sizeof hw, "%lld", (long long)r->hardware_id);
		snprintf(ratio, sizeof ratio, "%.3f", r->ratio);
		snprintf(lo, sizeof lo, "%.3f", r->lo);
		snprintf(hi, sizeof hi, "%.3f", r->hi);
		if (fmt == FMT_TABLE) {
			fmt_seconds(cur, r->cur);
			fmt_seconds(base, r->base);
		} else {
			snprintf(cur, sizeof cur, "%.9g", r->cur);
			snprintf(base, sizeof base, "%.9g", r->base);
		}
		snprintf(nc, sizeof nc, "%d", r->ncur);
		snprintf(nb, sizeof nb, "%d", r->nbase);
		snprintf(np, sizeof np, "%d", r->npair);
		const char *cells[] = { r->task, hw, rp_check_verdict_name(r->verdict), ratio, lo, hi,
		                        cur, base, nc, nb, r->config, r->base_config, np };
		table_row(t, cells);
	}
	return table_print(t, stdout, fmt);
}

static int report_check(tk_ctx *ctx, int fmt, int junit)
{
	tk_store *base = NULL;
	rp_check *c = NULL;
	double t = isnan(o.threshold) ? 5 : o.threshold;
	int rc;

	if (!o.baseline)
		return tk_fail(ctx, TK_EINVAL, "check needs --baseline FILE, the store to compare with");
	if (!(t >= 0 && t < 1000))
		return tk_fail(ctx, TK_EINVAL, "--threshold must be a percentage in [0, 1000), got %g", t);
	if ((rc = store_open(o.baseline, STORE_READONLY, &base)))
		return tk_fail(ctx, rc, NULL);
	rc = rp_check_build(ctx->store, base, o.hardware, t / 100, (uint64_t)ctx->common.seed, &c);
	store_close(base);
	if (rc)
		return tk_fail(ctx, rc, NULL);
	for (const char *p = c->compiler_changes; p && *p;) {
		const char *e = strchr(p, '\n');
		int n = e ? (int)(e - p) : (int)strlen(p);
		fprintf(stderr, "%s: warning: compared across a compiler change: %.*s\n", ctx->prog,
		        n, p);
		p += n + (e != NULL);
	}
	if (!ctx->common.quiet && (c->nonly_cur || c->nonly_base))
		fprintf(stderr, "%s: %d task(s) only in this store and %d only in the baseline are not"
		        " compared\n", ctx->prog, c->nonly_cur, c->nonly_base);
	rc = junit ? check_junit(c, stdout) : check_table(c, fmt);
	if (rc == EXIT_OK && c->count[RP_SLOWER]) {
		for (int i = 0; i < c->nrow; i++) {
			const rp_check_row *r = &c->row[i];
			if (r->verdict == RP_SLOWER)
				fprintf(stderr, "%s: slower: %s (hw %lld): ratio %.3f [%.3f, %.3f] beyond"
				        " %g%%\n", ctx->prog, r->task, (long long)r->hardware_id, r->ratio,
				        r->lo, r->hi, t);
		}
		rc = EXIT_FAIL;
	}
	rp_check_free(c);
	return rc;
}

/* ---- invalid configurations per batch ---------------------------------------- */

/* The run's tune --batch from its params; 0 if it has none. */
static int64_t run_batch_param(tk_ctx *ctx, int64_t run)
{
	char *params = NULL;
	int64_t v = 0;
	if (!store_run_params(ctx->store, run, &params) && params)
		for (char *l = params; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
			if (!strncmp(l, "batch=", 6)) {
				char num[32];
				size_t n = strcspn(l + 6, "\n");
				snprintf(num, sizeof num, "%.*s", (int)(n < 31 ? n : 31), l + 6);
				if (tk_parse_i64(num, &v) || v < 1)
					v = 0;
				break;
			}
	free(params);
	return v;
}

static int report_invalid(tk_ctx *ctx, int fmt)
{
	rp_run **aRun = NULL;
	int nRun = 0, rc;
	static const char *const hdr[] = { "run", "batch", "first", "trials", "invalid", "share" };
	if (o.batch < 0 || o.batch > 1000000)
		return tk_fail(ctx, TK_EINVAL, "--batch needs a number of trials from 1");
	if ((rc = load_runs(ctx, 1, &aRun, &nRun))) {
		free_runs(aRun, nRun);
		return rc;
	}
	rp_batch **b = calloc((size_t)nRun, sizeof *b);
	int *nb = calloc((size_t)nRun, sizeof *nb);
	int64_t *ids = calloc((size_t)nRun, sizeof *ids);
	table *t = table_new(ArraySize(hdr), hdr);
	if (!b || !nb || !ids || !t)
		rc = tk_fail(ctx, TK_ENOMEM, "out of memory");
	for (int i = 0; i < nRun && !rc; i++) {
		int64_t size = o.batch ? o.batch : run_batch_param(ctx, aRun[i]->id);
		int e = rp_invalid_batches(aRun[i], (int)(size > 0 ? size : 16), &b[i], &nb[i]);
		if (e)
			rc = tk_fail(ctx, e, NULL);
		ids[i] = aRun[i]->id;
		for (int k = 0; k < nb[i] && !rc; k++) {
			char c[5][32];
			const char *cells[6] = { c[0], c[1], c[2], c[3], c[4], c[4] };
			snprintf(c[0], 32, "%lld", (long long)aRun[i]->id);
			snprintf(c[1], 32, "%d", b[i][k].batch);
			snprintf(c[2], 32, "%d", b[i][k].first);
			snprintf(c[3], 32, "%d", b[i][k].trials);
			snprintf(c[4], 32, "%d", b[i][k].invalid);
			char share[32];
			snprintf(share, sizeof share, "%.4f", b[i][k].share);
			cells[5] = share;
			table_row(t, cells);
		}
	}
	if (!rc && o.plot) {
		tk_sb sb;
		tk_sb_init(&sb);
		if ((rc = rp_invalid_svg(&sb, ids, (const rp_batch *const *)b, nb, nRun)))
			rc = tk_fail(ctx, rc, NULL);
		else
			rc = write_plot(ctx, &sb);
		tk_sb_free(&sb);
		table_free(t);
	} else if (!rc) {
		rc = table_print(t, stdout, fmt);
	} else {
		table_free(t);
	}
	for (int i = 0; b && i < nRun; i++)
		free(b[i]);
	free(b);
	free(nb);
	free(ids);
	free_runs(aRun, nRun);
	return rc;
}

/* ---- feature importance of a model file -------------------------------------- */

typedef struct imp_row {
	int i;
	double gain;
} imp_row;

static int by_gain(const void *a, const void *b)
{
	const imp_row *x = a, *y = b;
	if (x->gain != y->gain)
		return x->gain > y->gain ? -1 : 1;
	return x->i - y->i;
}

static int report_importance(tk_ctx *ctx, int fmt)
{
	static const char *const hdr[] = { "rank", "feature", "name", "gain", "share" };
	mf_meta meta;
	cm_model *m = NULL;
	ms_task *mt = NULL;
	double *gain = NULL, total = 0;
	int d = 0, rc;
	if (!o.model_file)
		return tk_fail(ctx, TK_EINVAL, "report importance needs --model-file FILE");
	if ((rc = cm_read(o.model_file, &meta, &m)))
		return tk_fail(ctx, rc == TK_ECORRUPT ? TK_EINVAL : rc, NULL);
	if ((rc = cm_importance(m, &d, &gain))) {
		cm_free(m);
		return tk_fail(ctx, rc, NULL);
	}
	const char *feat = mf_get(&meta, "feature");
	int hidden = feat && !strcmp(feat, "hidden");
	if (hidden && o.task) {
		tk_target tg;
		int hd = 0;
		if ((rc = tk_target_parse(ctx->common.target, &tg)) ||
		    (rc = ms_task_open_target(o.task, &tg, 0, &mt)) || (rc = ms_hidden_length(mt, &hd)) ||
		    (hd != d && (rc = tk_seterr(TK_EINVAL, "%s: %d hidden features on %s, the model"
		                                " has %d", o.task, hd, tg.spec, d)))) {
			ms_task_free(mt);
			cm_free(m);
			free(gain);
			return tk_fail(ctx, rc == TK_EUNSUPP ? TK_EINVAL : rc, NULL);
		}
	}
	imp_row *r = malloc(sizeof *r * (size_t)(d > 0 ? d : 1));
	table *t = table_new(ArraySize(hdr), hdr);
	if (!r || !t) {
		rc = tk_fail(ctx, TK_ENOMEM, "out of memory");
	} else {
		for (int i = 0; i < d; i++) {
			r[i] = (imp_row){ i, gain[i] };
			total += gain[i];
		}
		qsort(r, (size_t)d, sizeof *r, by_gain);
		for (int k = 0; k < d; k++) {
			char c[4][64];
			const char *cells[5] = { c[0], c[1], c[2], c[3], NULL };
			char share[32];
			snprintf(c[0], 64, "%d", k + 1);
			snprintf(c[1], 64, "%d", r[k].i);
			if (mt)
				ms_hidden_name(mt, r[k].i, c[2], 64);
			else
				snprintf(c[2], 64, "%s[%d]", feat ? feat : "f", r[k].i);
			snprintf(c[3], 64, "%.6g", r[k].gain);
			snprintf(share, sizeof share, "%.4f", total > 0 ? r[k].gain / total : 0);
			cells[4] = share;
			table_row(t, cells);
		}
		rc = table_print(t, stdout, fmt);
		t = NULL;
	}
	if (t)
		table_free(t);
	free(r);
	free(gain);
	ms_task_free(mt);
	cm_free(m);
	return rc;
}

/* ---- records ------------------------------------------------------------------ */

static int record_row(void *p, const store_rec *r)
{
	best_ctx *b = p;
	char id[24], hw[24], run[24], valid[4], lat[32] = "", gf[32] = "", load[32] = "";
	char bounded[4] = "";
	if (b->task && strcmp(b->task, r->task)) /* --run: store_run_records reads all tasks */
		return 0;
	snprintf(id, sizeof id, "%lld", (long long)r->id);
	snprintf(hw, sizeof hw, "%lld", (long long)r->hardware_id);
	snprintf(run, sizeof run, "%lld", (long long)r->run_id);
	snprintf(valid, sizeof valid, "%d", r->valid != 0);
	if (r->valid && r->median > 0) {
		if (b->fmt == FMT_TABLE)
			fmt_seconds(lat, r->median);
		else
			snprintf(lat, sizeof lat, "%.9g", r->median);
		snprintf(gf, sizeof gf, "%.3f", r->flops / r->median * 1e-9);
	}
	if (r->load >= 0)
		snprintf(load, sizeof load, "%.2f", r->load);
	if (r->valid)
		snprintf(bounded, sizeof bounded, "%d", r->bounded != 0);
	const char *cells[] = { id, r->task, r->config, hw, valid, r->valid ? "" : r->message ? r->message : "",
	                        lat, gf, run, load, r->hw_kind ? r->hw_kind : "", bounded };
	table_row(b->t, cells);
	return 0;
}

static int report_records(tk_ctx *ctx, int fmt)
{
	static const char *const hdr[] = {
		"id", "task", "config", "hw", "valid", "error", "latency_s", "gflops", "run", "load",
		"hw_kind", "bounded",
	};
	char hw[24];
	best_ctx b = { .ctx = ctx, .t = table_new(ArraySize(hdr), hdr), .fmt = fmt,
	               .task = o.task ? task_key(o.task) : NULL };
	int rc = TK_OK;
	if (o.run.n && o.hardware)
		rc = tk_seterr(TK_EINVAL, "report records takes --hardware or --run, not both");
	else if (!b.t || (o.task && !b.task))
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	for (int i = 0; !rc && i < o.run.n; i++) {
		int64_t id, run_hw;
		if (tk_parse_i64(o.run.v[i], &id) || id <= 0)
			rc = tk_seterr(TK_EINVAL, "--run needs a run id, got '%s'", o.run.v[i]);
		else if (!(rc = store_run_hardware(ctx->store, id, &run_hw))) /* TK_ENOTFOUND: no run */
			rc = store_run_records(ctx->store, id, record_row, &b);
	}
	snprintf(hw, sizeof hw, "%lld", (long long)o.hardware);
	if (!rc && !o.run.n)
		rc = store_hw_records(ctx->store, o.hardware ? hw : NULL, b.task, record_row, &b);
	free((char *)b.task);
	if (rc) {
		table_free(b.t);
		return tk_fail(ctx, rc, NULL);
	}
	return table_print(b.t, stdout, fmt);
}

/* ---- dispatch ----------------------------------------------------------------- */

enum { R_BEST, R_RUNS, R_CURVE, R_COMPARE, R_MODEL, R_CHECK, R_INVALID, R_IMPORTANCE,
       R_HARDWARE, R_RECORDS };
static const char *const aReport[] = { "best", "runs", "curve", "compare", "model", "check",
                                       "invalid", "importance", "hardware", "records" };

/* Refuse options that the chosen report does not use. */
static int check_options(tk_ctx *ctx, int r)
{
	const char *bad = NULL;
	if (o.hardware && (r == R_CURVE || r == R_COMPARE))
		bad = "--hardware";
	else if (o.run.n && r != R_CURVE && r != R_COMPARE && r != R_INVALID && r != R_RECORDS)
		bad = "--run";
	else if (o.network && r != R_CURVE && r != R_COMPARE && r != R_BEST)
		bad = "--network";
	else if (o.layout && (!o.network || (r != R_BEST && r != R_CURVE && r != R_COMPARE)))
		bad = "--layout";
	else if (o.task && r != R_CURVE && r != R_IMPORTANCE && r != R_RECORDS)
		bad = "--task";
	else if (o.plot && r != R_CURVE && r != R_INVALID)
		bad = "--plot";
	else if (o.batch && r != R_INVALID)
		bad = "--batch";
	else if (o.model_file && r != R_IMPORTANCE)
		bad = "--model-file";
	else if (o.x && r != R_CURVE)
		bad = "--x";
	else if (o.log && r != R_CURVE)
		bad = "--log";
	else if (o.baseline && r != R_CHECK)
		bad = "--baseline";
	else if (!isnan(o.threshold) && r != R_CHECK)
		bad = "--threshold";
	if (bad)
		return tk_fail(ctx, TK_EINVAL, "option %s does not apply to report %s", bad, aReport[r]);
	return EXIT_OK;
}

int cmd_report(int argc, char **argv, tk_ctx *ctx)
{
	tk_store *st;
	int rc, r;
	o.threshold = NAN; /* unset */
	if ((rc = opt_parse(ctx, &argc, argv, options, usage)))
		return rc < 0 ? EXIT_OK : rc;
	int junit = o.format && !strcmp(o.format, "junit");
	int fmt = junit ? FMT_TABLE : out_format(ctx, o.format);
	if (fmt < 0)
		return tk_fail(ctx, TK_EINVAL, "unknown format '%s' (table, tsv, json; junit for check)",
		               o.format);
	if (argc != 1)
		return tk_fail(ctx, TK_EINVAL,
		               "expected one report: best, runs, curve, compare, model, check, invalid,"
		               " importance, hardware or records");
	for (r = 0; r < ArraySize(aReport) && strcmp(argv[0], aReport[r]); r++)
		;
	if (r == ArraySize(aReport))
		return tk_fail(ctx, TK_EINVAL,
		               "unknown report '%s' (best, runs, curve, compare, model, check, invalid,"
		               " importance, hardware, records)", argv[0]);
	if (junit && r != R_CHECK)
		return tk_fail(ctx, TK_EINVAL, "--format junit applies to report check");
	if ((rc = check_options(ctx, r)) || (rc = tk_ctx_store(ctx, &st)))
		return rc;
	switch (r) {
	case R_BEST: return report_best(ctx, fmt);
	case R_RUNS: return report_runs(ctx, fmt);
	case R_CURVE: return report_curve(ctx, fmt);
	case R_COMPARE: return report_compare(ctx, fmt);
	case R_CHECK: return report_check(ctx, fmt, junit);
	case R_INVALID: return report_invalid(ctx, fmt);
	case R_IMPORTANCE: return report_importance(ctx, fmt);
	case R_HARDWARE: return report_hardware(ctx, fmt);
	case R_RECORDS: return report_records(ctx, fmt);
	}
	return report_model(ctx, fmt);
}
