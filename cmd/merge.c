/*
 * merge: stores filled on many machines (or by the shards of one job) into
 * one, with a row per input saying what it added (lib/store/merge.c).
 */
#include <stdio.h>

#include "cmd.h"
#include "store/store_merge.h"

static const char *const usage[] = {
	"tunekit merge [--format table|tsv|json] OUT.db IN.db...",
	"Append the records of the stores IN.db to OUT.db (created if absent): hardware, tasks\n"
	"and configurations are unified by their keys; runs, measurements, run logs, foreign\n"
	"records, features and models are appended unless OUT.db already has them, so merging\n"
	"an input twice adds nothing. Every input is checked first (SQLite's integrity check):\n"
	"if one is damaged, as a partial copy is, nothing is merged. Each input is merged in\n"
	"one transaction; the inputs are only read. Prints a row per input with the rows it\n"
	"added: a table on a terminal, TSV otherwise.",
};

static struct {
	const char *format;
} o;

static const opt options[] = {
	{ OPT_STRING, "format", 'f', &o.format, "FMT", "table, tsv or json (default: table on a terminal)" },
	OPT_END_
};

static const char *const header[] = {
	"input", "hardware", "tasks", "configs", "runs", "runs_known", "records", "duplicates",
	"logs", "foreign", "features", "models",
};

static void stats_row(table *tb, const char *path, const store_merge_stats *m)
{
	int64_t v[] = { m->hardware, m->tasks, m->configs, m->runs, m->runs_known, m->records,
	                 m->duplicates, m->logs, m->foreign, m->features, m->models };
	char buf[ArraySize(v)][24];
	const char *cells[ArraySize(header)] = { path };
	_Static_assert(ArraySize(v) + 1 == ArraySize(header), "a value per column");
	for (int i = 0; i < ArraySize(v); i++) {
		snprintf(buf[i], sizeof buf[i], "%lld", (long long)v[i]);
		cells[i + 1] = buf[i];
	}
	table_row(tb, cells);
}

int cmd_merge(int argc, char **argv, tk_ctx *ctx)
{
	tk_store *out;
	int rc, fmt, status = EXIT_OK;
	if ((rc = opt_parse(ctx, &argc, argv, options, usage)))
		return rc < 0 ? EXIT_OK : rc;
	if ((fmt = format_parse(o.format)) < 0)
		return tk_fail(ctx, TK_EINVAL, "unknown format '%s' (table, tsv, json)", o.format);
	if (argc < 2)
		return tk_fail(ctx, TK_EINVAL, "expected OUT.db and at least one IN.db (see '%s --help')",
		               ctx->prog);
	/* every input first: a damaged one leaves OUT untouched */
	for (int i = 1; i < argc; i++) {
		progress_draw(ctx, "check", i - 1, argc - 1, argv[i]);
		if ((rc = store_merge_check(argv[i], argv[0])))
			return tk_fail(ctx, rc, NULL);
	}
	progress_end(ctx);
	if ((rc = store_merge_open(argv[0], &out)))
		return tk_fail(ctx, rc, NULL);
	ctx->store = out; /* closed by the dispatcher */
	table *tb = table_new(ArraySize(header), header);
	if (!tb)
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	for (int i = 1; i < argc; i++) {
		store_merge_stats m;
		progress_draw(ctx, "merge", i - 1, argc - 1, argv[i]);
		if ((rc = store_merge(out, argv[i], &tk_interrupted, &m))) {
			status = tk_fail(ctx, rc, NULL);
			break;
		}
		stats_row(tb, argv[i], &m);
	}
	progress_end(ctx);
	rc = table_print(tb, stdout, fmt);
	return status ? status : rc;
}
