/*
 * common: the option parser, context helpers and output helpers that the
 * subcommands share (see cmd.h).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "import/onnx.h"
#include "measure/measure.h"
#include "report/report.h"
#include "record/record.h"

volatile sig_atomic_t tk_interrupted;

/* ---- options -------------------------------------------------------------- */

static const opt common_opts_table[] = {
	{ OPT_STRING, "db", 0, NULL, "PATH", "record store (default $TUNEKIT_DB, else tunekit.db)" },
	{ OPT_STRING, "target", 0, NULL, "SPEC", "hardware target (default native)" },
	{ OPT_INT, "seed", 0, NULL, "N", "random seed (default 1)" },
	{ OPT_INT, "jobs", 'j', NULL, "N", "parallel compilers (default: number of CPUs)" },
	{ OPT_FLAG, "quiet", 'q', NULL, NULL, "no progress or summaries on stderr" },
	{ OPT_FLAG, "help", 'h', NULL, NULL, "show this help" },
	OPT_END_
};

static void *common_value(tk_ctx *ctx, int i)
{
	void *v[] = { &ctx->common.db, &ctx->common.target, &ctx->common.seed, &ctx->common.jobs,
	              &ctx->common.quiet, &ctx->common.help };
	return v[i];
}

static void print_opts(FILE *f, const opt *o)
{
	for (; o->type != OPT_END; o++) {
		char lhs[64];
		if (o->sname)
			snprintf(lhs, sizeof lhs, "-%c, --%s%s%s", o->sname, o->name, o->argh ? " " : "",
			         o->argh ? o->argh : "");
		else
			snprintf(lhs, sizeof lhs, "    --%s%s%s", o->name, o->argh ? " " : "",
			         o->argh ? o->argh : "");
		fprintf(f, "  %-26s %s\n", lhs, o->help);
	}
}

void opt_usage(tk_ctx *ctx, FILE *f, const opt *opts, const char *const *usage)
{
	fprintf(f, "usage: %s\n\n%s\n", usage[0], usage[1]);
	if (opts && opts[0].type != OPT_END) {
		fprintf(f, "\noptions:\n");
		print_opts(f, opts);
	}
	fprintf(f, "\ncommon options:\n");
	print_opts(f, common_opts_table);
}

static int set_value(tk_ctx *ctx, const opt *o, void *dst, const char *name, const char *arg)
{
	switch (o->type) {
	case OPT_STRING:
		*(const char **)dst = arg;
		return 0;
	case OPT_LIST: {
		opt_list *l = dst;
		const char **v = realloc(l->v, sizeof *v * (size_t)(l->n + 1));
		if (!v)
			return tk_fail(ctx, TK_ENOMEM, "out of memory");
		v[l->n++] = arg;
		l->v = v;
		return 0;
	}
	case OPT_INT:
		if (tk_parse_i64(arg, dst))
			return tk_fail(ctx, TK_EINVAL, "option --%s needs an integer, got '%s'", name, arg);
		return 0;
	case OPT_DOUBLE:
		if (tk_parse_f64(arg, dst))
			return tk_fail(ctx, TK_EINVAL, "option --%s needs a number, got '%s'", name, arg);
		return 0;
	}
	return 0;
}

/* Find the option for a long name or a short letter in opts then common. */
static const opt *find_opt(tk_ctx *ctx, const opt *opts, const char *lname, size_t llen,
                           char sname, void **dst)
{
	for (const opt *o = opts; o && o->type != OPT_END; o++)
		if ((lname && strlen(o->name) == llen && !strncmp(o->name, lname, llen)) ||
		    (!lname && o->sname == sname)) {
			*dst = o->value;
			return o;
		}
	for (int i = 0; common_opts_table[i].type != OPT_END; i++) {
		const opt *o = &common_opts_table[i];
		if ((lname && strlen(o->name) == llen && !strncmp(o->name, lname, llen)) ||
		    (!lname && o->sname == sname)) {
			*dst = common_value(ctx, i);
			return o;
		}
	}
	return NULL;
}

int opt_parse(tk_ctx *ctx, int *argc, char **argv, const opt *opts, const char *const *usage)
{
	int n = *argc, nrest = 0, rc;
	for (int i = 1; i < n; i++) {
		char *a = argv[i];
		void *dst;
		const opt *o;
		if (!strcmp(a, "--")) {
			while (++i < n)
				argv[nrest++] = argv[i];
			break;
		}
		if (a[0] != '-' || !a[1]) {
			argv[nrest++] = a; /* operand (including "-" for stdin) */
			continue;
		}
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			if (!(o = find_opt(ctx, opts, name, len, 0, &dst)))
				return tk_fail(ctx, TK_EINVAL, "unknown option '--%.*s' (see '%s --help')",
				               (int)len, name, ctx->prog);
			if (o->type == OPT_FLAG) {
				if (eq)
					return tk_fail(ctx, TK_EINVAL, "option --%s takes no value", o->name);
				*(int *)dst = 1;
				continue;
			}
			const char *arg = eq ? eq + 1 : (i + 1 < n ? argv[++i] : NULL);
			if (!arg)
				return tk_fail(ctx, TK_EINVAL, "option --%s needs a value", o->name);
			if ((rc = set_value(ctx, o, dst, o->name, arg)))
				return rc;
			continue;
		}
		/* short options, possibly bundled: -qj2 */
		for (char *s = a + 1; *s; s++) {
			if (!(o = find_opt(ctx, opts, NULL, 0, *s, &dst)))
				return tk_fail(ctx, TK_EINVAL, "unknown option '-%c' (see '%s --help')", *s,
				               ctx->prog);
			if (o->type == OPT_FLAG) {
				*(int *)dst = 1;
				continue;
			}
			const char *arg = s[1] ? s + 1 : (i + 1 < n ? argv[++i] : NULL);
			if (!arg)
				return tk_fail(ctx, TK_EINVAL, "option -%c needs a value", *s);
			if ((rc = set_value(ctx, o, dst, o->name, arg)))
				return rc;
			break;
		}
	}
	*argc = nrest;
	if (ctx->common.help) {
		opt_usage(ctx, stdout, opts, usage);
		return -1;
	}
	if (ctx->common.jobs < 1 || ctx->common.jobs > 256)
		return tk_fail(ctx, TK_EINVAL, "--jobs must be between 1 and 256");
	return 0;
}

/* ---- context ---------------------------------------------------------------- */

int tk_exit_status(int rc)
{
	switch (rc) {
	case TK_OK: return EXIT_OK;
	case TK_EINVAL:
	case TK_ENOTFOUND: return EXIT_USAGE;
	case TK_ESTORE:
	case TK_ECORRUPT: return EXIT_STORE;
	case TK_EINTR: return EXIT_INTR;
	}
	return EXIT_FAIL;
}

int tk_fail(tk_ctx *ctx, int rc, const char *fmt, ...)
{
	char msg[600];
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof msg, fmt, ap);
		va_end(ap);
	} else {
		snprintf(msg, sizeof msg, "%s", tk_errmsg()[0] ? tk_errmsg() : tk_strerror(rc));
	}
	progress_end(ctx);
	fprintf(stderr, "%s: %s\n", ctx->prog, msg);
	return tk_exit_status(rc);
}

int tk_ctx_store(tk_ctx *ctx, tk_store **out)
{
	if (!ctx->store) {
		int rc = store_open(ctx->common.db,
		                    (ctx->cmd->flags & STORE_WRITE) ? 0 : STORE_READONLY, &ctx->store);
		if (rc)
			return tk_fail(ctx, rc, NULL);
	}
	*out = ctx->store;
	return 0;
}

/* ---- progress ------------------------------------------------------------------ */

static int progress_shown;

void progress_draw(tk_ctx *ctx, const char *label, double done, double total, const char *extra)
{
	if (!ctx->err_tty || ctx->common.quiet)
		return;
	int width = 30, fill = total > 0 ? (int)(width * done / total + 0.5) : 0;
	char bar[64];
	if (fill > width)
		fill = width;
	for (int i = 0; i < width; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[width] = 0;
	fprintf(stderr, "\r\033[K%s [%s] %.0f/%.0f %s", label, bar, done, total, extra ? extra : "");
	fflush(stderr);
	progress_shown = 1;
}

void progress_epochs(void *ctx, int done, int total)
{
	progress_draw(ctx, "training", done, total, "epochs");
}

void progress_end(tk_ctx *ctx)
{
	if (progress_shown) {
		fprintf(stderr, "\r\033[K");
		fflush(stderr);
		progress_shown = 0;
	}
}

/* ---- tables ------------------------------------------------------------------- */

struct table {
	int ncol, nrow, cap;
	char **cell; /* nrow+1 rows (header first) of ncol */
	int oom;
};

table *table_new(int ncol, const char *const *header)
{
	table *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->ncol = ncol;
	table_row(t, header);
	return t;
}

void table_row(table *t, const char *const *cells)
{
	if (t->nrow == t->cap) {
		int cap = t->cap ? 2 * t->cap : 16;
		char **c = realloc(t->cell, sizeof *c * (size_t)(cap * t->ncol));
		if (!c) {
			t->oom = 1;
			return;
		}
		t->cell = c;
		t->cap = cap;
	}
	for (int i = 0; i < t->ncol; i++)
		t->cell[t->nrow * t->ncol + i] = cells[i] ? strdup(cells[i]) : NULL;
	t->nrow++;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* A cell is printed as a JSON number if it parses as one. */
static void json_value(FILE *f, const char *s)
{
	double v;
	if (!s || !*s)
		fputs("null", f);
	else if (!tk_parse_f64(s, &v))
		fputs(s, f);
	else
		json_string(f, s);
}

void table_free(table *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->nrow * t->ncol; i++)
		free(t->cell[i]);
	free(t->cell);
	free(t);
}

int table_print(table *t, FILE *f, int format)
{
	int nc = t->ncol;
	if (format == FMT_AUTO)
		format = isatty(fileno(f)) ? FMT_TABLE : FMT_TSV;
	if (format == FMT_TABLE) {
		int w[64] = { 0 };
		for (int r = 0; r < t->nrow; r++)
			for (int c = 0; c < nc && c < 64; c++) {
				const char *s = t->cell[r * nc + c];
				int l = s ? (int)strlen(s) : 0;
				if (l > w[c])
					w[c] = l;
			}
		for (int r = 0; r < t->nrow; r++) {
			for (int c = 0; c < nc; c++) {
				const char *s = t->cell[r * nc + c];
				if (c == nc - 1)
					fprintf(f, "%s", s ? s : "");
				else
					fprintf(f, "%-*s  ", w[c < 64 ? c : 63], s ? s : "");
			}
			fputc('\n', f);
		}
	} else if (format == FMT_TSV) {
		for (int r = 0; r < t->nrow; r++)
			for (int c = 0; c < nc; c++) {
				const char *s = t->cell[r * nc + c];
				fprintf(f, "%s%c", s ? s : "", c == nc - 1 ? '\n' : '\t');
			}
	} else {
		fputs("[", f);
		for (int r = 1; r < t->nrow; r++) {
			fputs(r > 1 ? ",\n {" : "\n {", f);
			for (int c = 0; c < nc; c++) {
				if (c)
					fputs(", ", f);
				json_string(f, t->cell[c]);
				fputs(": ", f);
				json_value(f, t->cell[r * nc + c]);
			}
			fputc('}', f);
		}
		fputs(t->nrow > 1 ? "\n]\n" : "]\n", f);
	}
	int oom = t->oom;
	table_free(t);
	if (fflush(f) || ferror(f) || oom)
		return EXIT_FAIL;
	return EXIT_OK;
}

int out_format(const tk_ctx *ctx, const char *s)
{
	int fmt = format_parse(s);
	return fmt == FMT_AUTO ? (ctx->out_tty ? FMT_TABLE : FMT_TSV) : fmt;
}

void sig_default(sig_saved *s)
{
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGINT, &dfl, &s->old_int);
	sigaction(SIGTERM, &dfl, &s->old_term);
}

void sig_restore(const sig_saved *s)
{
	sigaction(SIGINT, &s->old_int, NULL);
	sigaction(SIGTERM, &s->old_term, NULL);
}

int layout_parse(const char *s)
{
	static const char *const names[] = { "nchw", "blocked", "auto" };
	for (int i = 0; i < 3; i++)
		if (!strcmp(s ? s : "nchw", names[i]))
			return i;
	return -1;
}

int net_load_layout(tk_ctx *ctx, const char *name, const char *layout, int *which,
                    tk_network **nets, int *nnet)
{
	int rc;
	*nnet = 0;
	if ((*which = layout_parse(layout)) < 0)
		return tk_fail(ctx, TK_EINVAL, "--layout '%s': expected nchw, blocked or auto", layout);
	if (*which != LAYOUT_BLOCKED && (rc = onnx_net_load(name, &nets[(*nnet)++])))
		goto fail;
	if (*which != LAYOUT_NCHW &&
	    (rc = onnx_net_load_layout(name, ONNX_LAYOUT_BLOCKED, &nets[(*nnet)++])))
		goto fail;
	return EXIT_OK;
fail:
	for (int i = 0; i < *nnet; i++)
		if (nets[i])
			net_free(nets[i]);
	*nnet = 0;
	return tk_fail(ctx, rc, NULL);
}

int layout_choose(tk_ctx *ctx, tk_store *st, int64_t hw, tk_network *const *nets, int *chosen)
{
	static const char *const names[] = { "nchw", "blocked" };
	rp_estimate e[2];
	int rc;
	*chosen = -1;
	for (int i = 0; i < 2; i++)
		if ((rc = rp_net_estimate(st, hw, nets[i], &e[i])))
			return tk_fail(ctx, rc, NULL);
	*chosen = rp_layout_choose(e, 2);
	if (ctx->common.quiet)
		return EXIT_OK;
	fprintf(stderr, "network %s on hardware %lld: estimated latency", nets[0]->name,
	        (long long)hw);
	for (int i = 0; i < 2; i++) {
		char lat[32];
		fmt_seconds(lat, e[i].latency);
		fprintf(stderr, "%s %s %s", i ? "," : "", names[i], e[i].ntuned ? lat : "-");
		if (e[i].ntuned < e[i].ntask)
			fprintf(stderr, " (%d of %d tasks tuned)", e[i].ntuned, e[i].ntask);
	}
	if (*chosen >= 0)
		fprintf(stderr, ": %s chosen\n", names[*chosen]);
	else
		fprintf(stderr, ": neither has every task tuned, none chosen\n");
	return EXIT_OK;
}

int format_parse(const char *s)
{
	if (!s)
		return FMT_AUTO;
	if (!strcmp(s, "table"))
		return FMT_TABLE;
	if (!strcmp(s, "tsv"))
		return FMT_TSV;
	if (!strcmp(s, "json"))
		return FMT_JSON;
	return -1;
}

const char *fmt_seconds(char *buf, double s)
{
	if (s < 0)
		snprintf(buf, 32, "-");
	else if (s < 1e-6)
		snprintf(buf, 32, "%.1f ns", s * 1e9);
	else if (s < 1e-3)
		snprintf(buf, 32, "%.2f us", s * 1e6);
	else if (s < 1)
		snprintf(buf, 32, "%.3f ms", s * 1e3);
	else
		snprintf(buf, 32, "%.3f s", s);
	return buf;
}

const char *fmt_num(char *buf, const char *fmt, double v)
{
	snprintf(buf, 32, fmt, v);
	return buf;
}

/* ---- measurement options ------------------------------------------------ */

void ms_cli_init(ms_cli *m)
{
	memset(m, 0, sizeof *m);
	m->number = m->repeat = m->warmup = m->microbatch = INT64_MIN;
	m->min_repeat_ms = m->timeout = m->build_timeout = m->build_adapt = m->cv = NAN;
}

/* Shows a wait for the measurement lock on a terminal; stops it when
 * interrupted. */
static int lock_wait(void *p, const char *path, double waited, long holder)
{
	tk_ctx *ctx = p;
	if (ctx->err_tty && !ctx->common.quiet) {
		char who[48] = "";
		if (holder > 0)
			snprintf(who, sizeof who, " (held by process %ld)", holder);
		fprintf(stderr, "\r\033[Kwaiting for the measurement lock %s%s: %.0f s", path, who,
		        waited);
		fflush(stderr);
		progress_shown = 1;
	}
	return tk_interrupted != 0;
}

int ms_lock_choice(tk_ctx *ctx, const char *opt_lock, const char **lock, int *nolock,
                   run_wait_fn *wait)
{
	const char *l = opt_lock, *e = getenv("TUNEKIT_MEASURE_LOCK");
	if (!l && e && *e)
		l = e;
	if (l && !*l)
		return tk_fail(ctx, TK_EINVAL, "--measure-lock needs a file or none");
	*nolock = l && !strcmp(l, "none");
	*lock = *nolock ? NULL : l;
	*wait = lock_wait;
	return 0;
}

int ms_cli_apply(tk_ctx *ctx, const ms_cli *m, ms_opts *mo)
{
	run_opts *r = &mo->run;
	const char *max = getenv("TUNEKIT_CACHE_MAX");
	int rc;
	if ((rc = ms_lock_choice(ctx, m->measure_lock, &mo->lock, &mo->nolock, &mo->wait)))
		return rc;
	mo->wait_ctx = ctx;
	const char *adapt = getenv("TUNEKIT_BUILD_ADAPT");
	if (adapt && *adapt && isnan(m->build_adapt)) {
		char *end;
		double v = strtod(adapt, &end);
		if (*end || !(v >= 0))
			return tk_fail(ctx, TK_EINVAL, "TUNEKIT_BUILD_ADAPT: a number >= 0, not '%s'",
			               adapt);
		mo->build_adapt = v;
	}
	if (max && *max) {
		int64_t v = 0;
		if (build_parse_size(max, &v))
			return tk_fail(ctx, TK_EINVAL, "TUNEKIT_CACHE_MAX: %s", tk_errmsg());
		if (v <= 0)
			return tk_fail(ctx, TK_EINVAL, "TUNEKIT_CACHE_MAX: the limit must be positive");
		mo->cache_max = v;
	}
	const char *ov = m->overlap ? m->overlap : getenv("TUNEKIT_OVERLAP");
	if (!ov || !*ov || !strcmp(ov, "auto"))
		mo->overlap = MS_OVERLAP_AUTO;
	else if (!strcmp(ov, "on") || !strcmp(ov, "off"))
		mo->overlap = ov[1] == 'n' ? MS_OVERLAP_ON : MS_OVERLAP_OFF;
	else
		return tk_fail(ctx, TK_EINVAL, "%s: auto, on or off, not '%s'",
		               m->overlap ? "--overlap" : "TUNEKIT_OVERLAP", ov);
	if (m->cache_dir) mo->cache_dir = m->cache_dir;
	if (m->evaluator && run_opts_evaluator(r, m->evaluator))
		return tk_fail(ctx, TK_EINVAL, NULL);
	if (m->clock && run_opts_clock(r, m->clock))
		return tk_fail(ctx, TK_EINVAL, NULL);
	if (m->flush) r->flush_cache = 1;
	/* out-of-range values become an impossible setting, caught below */
#define SET_INT(f, v) if ((v) != INT64_MIN) f = (v) < INT32_MIN || (v) > INT32_MAX ? -1 : (int)(v);
	SET_INT(r->number, m->number)
	SET_INT(r->repeat, m->repeat)
	SET_INT(r->warmup, m->warmup)
	SET_INT(r->microbatch, m->microbatch)
#undef SET_INT
	if (!isnan(m->min_repeat_ms)) r->min_repeat_ms = m->min_repeat_ms;
	if (!isnan(m->timeout)) r->timeout_s = m->timeout;
	if (!isnan(m->build_timeout)) mo->build_timeout = m->build_timeout;
	if (!isnan(m->build_adapt)) mo->build_adapt = m->build_adapt;
	if (!isnan(m->cv)) r->cv = m->cv;
	if (r->number < 0 || r->repeat < 1 || r->repeat > RUN_MAXREPEAT || r->warmup < 0 ||
	    r->microbatch < 1 || !(r->min_repeat_ms >= 0) || !(r->timeout_s > 0) ||
	    !(mo->build_timeout > 0) || !(mo->build_adapt >= 0) || !(r->cv >= 0))
		return tk_fail(ctx, TK_EINVAL, "measurement option out of range (see '%s --help')",
		               ctx->prog);
	return 0;
}

/* ---- record streams ---------------------------------------------------------- */

int read_stream_ids(tk_ctx *ctx, int64_t **ids, int *nid)
{
	rec_stream rs;
	const char *task, *config;
	int64_t id;
	int got, cap = 0;
	*ids = NULL;
	*nid = 0;
	rec_stream_init(&rs, stdin, "stdin");
	while ((got = rec_stream_next(&rs, &task, &config, &id)) > 0) {
		if (id < 0) {
			rec_stream_free(&rs);
			return tk_fail(ctx, TK_EINVAL, "stdin: the stream has no id column (give the"
			               " record stream of measure, extract-features or report best)");
		}
		if (*nid == cap) {
			int64_t *v = realloc(*ids, sizeof *v * (size_t)(cap = cap ? 2 * cap : 256));
			if (!v) {
				rec_stream_free(&rs);
				return tk_fail(ctx, TK_ENOMEM, "out of memory");
			}
			*ids = v;
		}
		(*ids)[(*nid)++] = id;
	}
	rec_stream_free(&rs);
	if (got < 0)
		return tk_fail(ctx, -got, NULL);
	if (*nid == 0)
		return tk_fail(ctx, TK_EINVAL, "stdin: no records");
	return 0;
}

/* ---- cost-model metrics --------------------------------------------------- */

static const char *const metric_header[] = {
	"set", "rows", "tasks", "rmse", "mse", "mse_d", "top1", "top5", "spearman",
};

static const char *const class_header[] = {
	"set", "rows", "valid", "accuracy", "precision", "recall", "auc",
};

table *class_table_new(void)
{
	return table_new(ArraySize(class_header), class_header);
}

void class_row(table *tb, int fmt, const char *set, const cm_class_metrics *m)
{
	char b[6][32];
	double v[] = { m->accuracy, m->precision, m->recall, m->auc };
	const char *cells[7] = { set, b[0], b[1] };
	snprintf(b[0], 32, "%d", m->n);
	snprintf(b[1], 32, "%d", m->valid);
	for (int i = 0; i < 4; i++) {
		snprintf(b[2 + i], 32, "%.4f", v[i]);
		cells[3 + i] = isnan(v[i]) ? (fmt == FMT_TABLE ? "-" : NULL) : b[2 + i];
	}
	table_row(tb, cells);
}

table *metrics_table_new(void)
{
	return table_new(ArraySize(metric_header), metric_header);
}

void metrics_row(table *tb, int fmt, const char *set, const cm_metrics *m)
{
	char b[8][32];
	double v[] = { m->rmse, m->mse, m->mse_d, m->top1, m->top5, m->spearman };
	const char *cells[9] = { set, b[0], b[1] };
	snprintf(b[0], 32, "%d", m->n);
	snprintf(b[1], 32, "%d", m->ntask);
	for (int i = 0; i < 6; i++) {
		snprintf(b[2 + i], 32, "%.4f", v[i]);
		cells[3 + i] = isnan(v[i]) ? (fmt == FMT_TABLE ? "-" : NULL) : b[2 + i];
	}
	table_row(tb, cells);
}
