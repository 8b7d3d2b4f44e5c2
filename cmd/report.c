/*
 * report: what the store knows: the best configuration per task and
 * hardware, and the runs that produced the records.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "space/space.h"
#include "task/te.h"

static const char *const usage[] = {
	"tunekit report [--format table|tsv|json] [--hardware ID] (best | runs)",
	"best: the fastest valid configuration of every task on every hardware, with its\n"
	"latency (median of its repeats), GFLOPS, and its speed-up over the naive loop nest\n"
	"when that was measured on the same hardware.\n"
	"runs: every run with its method, trials, valid records, best latency and duration.\n"
	"Prints a table on a terminal and TSV otherwise (a record stream for best: its id\n"
	"column names the measurement).",
};

static struct {
	const char *format;
	int64_t hardware;
} o;

static const opt options[] = {
	{ OPT_STRING, "format", 'f', &o.format, "FMT", "table, tsv or json (default: table on a terminal)" },
	{ OPT_INT, "hardware", 0, &o.hardware, "ID", "only records of this hardware id" },
	OPT_END_
};

typedef struct best_ctx {
	tk_ctx *ctx;
	table *t;
	int fmt;
} best_ctx;

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

static int best_row(void *p, const store_rec *r)
{
	best_ctx *b = p;
	char id[24], hw[24], run[24], lat[32], gf[32], sp[32] = "";
	double speedup;
	snprintf(id, sizeof id, "%lld", (long long)r->id);
	snprintf(hw, sizeof hw, "%lld", (long long)r->hardware_id);
	snprintf(run, sizeof run, "%lld", (long long)r->run_id);
	if (b->fmt == FMT_TABLE)
		fmt_seconds(lat, r->median);
	else
		snprintf(lat, sizeof lat, "%.9g", r->median);
	snprintf(gf, sizeof gf, "%.3f", r->flops / r->median * 1e-9);
	if (!naive_speedup(b->ctx, r, &speedup))
		snprintf(sp, sizeof sp, "%.2f", speedup);
	const char *cells[] = { id, r->task, r->config, hw, lat, gf, sp, run };
	table_row(b->t, cells);
	return 0;
}

static int report_best(tk_ctx *ctx, int fmt)
{
	static const char *const hdr[] = {
		"id", "task", "config", "hw", "latency_s", "gflops", "vs_naive", "run",
	};
	best_ctx b = { ctx, table_new(ArraySize(hdr), hdr), fmt };
	if (!b.t)
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	int rc = store_best(ctx->store, o.hardware, best_row, &b);
	if (rc) {
		table_free(b.t);
		return tk_fail(ctx, rc, NULL);
	}
	return table_print(b.t, stdout, fmt);
}

static int run_row(void *p, const store_runinfo *r)
{
	best_ctx *b = p;
	char id[24], trials[24], valid[24], best[32] = "", start[32], dur[32] = "", hw[24];
	time_t t = (time_t)r->started;
	struct tm tm;
	if (o.hardware && r->hardware_id != o.hardware)
		return 0;
	snprintf(id, sizeof id, "%lld", (long long)r->id);
	snprintf(trials, sizeof trials, "%lld", (long long)r->ntrials);
	snprintf(valid, sizeof valid, "%lld", (long long)r->nvalid);
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
	const char *cells[] = { id, r->method, start, dur, trials, valid, best, hw,
	                        r->replay ? r->replay : "", r->argv };
	table_row(b->t, cells);
	return 0;
}

static int report_runs(tk_ctx *ctx, int fmt)
{
	static const char *const hdr[] = {
		"run", "method", "started", "seconds", "trials", "valid", "best_latency", "hw",
		"replay", "command",
	};
	best_ctx b = { ctx, table_new(ArraySize(hdr), hdr), fmt };
	if (!b.t)
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	int rc = store_runs(ctx->store, run_row, &b);
	if (rc) {
		table_free(b.t);
		return tk_fail(ctx, rc, NULL);
	}
	return table_print(b.t, stdout, fmt);
}

int cmd_report(int argc, char **argv, tk_ctx *ctx)
{
	tk_store *st;
	int rc;
	if ((rc = opt_parse(ctx, &argc, argv, options, usage)))
		return rc < 0 ? EXIT_OK : rc;
	int fmt = format_parse(o.format);
	if (fmt < 0)
		return tk_fail(ctx, TK_EINVAL, "unknown format '%s' (table, tsv, json)", o.format);
	if (fmt == FMT_AUTO)
		fmt = ctx->out_tty ? FMT_TABLE : FMT_TSV;
	if (argc != 1)
		return tk_fail(ctx, TK_EINVAL, "expected one report: best or runs");
	if (strcmp(argv[0], "best") && strcmp(argv[0], "runs"))
		return tk_fail(ctx, TK_EINVAL, "unknown report '%s' (best, runs)", argv[0]);
	if ((rc = tk_ctx_store(ctx, &st)))
		return rc;
	return !strcmp(argv[0], "best") ? report_best(ctx, fmt) : report_runs(ctx, fmt);
}
