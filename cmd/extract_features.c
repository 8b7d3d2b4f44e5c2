/*
 * extract-features: compute the feature vectors cost models learn from
 * (lib/features) for stored configurations that lack them and store them,
 * a batch per transaction; with operand -, for the configurations of the
 * records of a record stream on standard input, which is passed through to
 * standard output batch by batch once the batch's features are committed,
 * so that the next stage of a pipeline finds them in the store.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "features/feature.h"
#include "measure/hidden.h"
#include "record/record.h"
#include "space/space.h"
#include "store/store_features.h"
#include "task/te.h"

static const char *const usage[] = {
	"tunekit extract-features [--kind knob|itervar|curve|tlp|graph|hidden] [--hardware ID] [--batch N] [-]",
	"Compute feature vectors of the configurations in the store that lack them (of this\n"
	"kind and version; default itervar) and store them, a batch per transaction. With\n"
	"--hardware, only configurations measured on that hardware ID. With -, read a record\n"
	"stream with an id column from standard input, extract features for the configurations\n"
	"of its records only, and write the stream unchanged to standard output, each batch\n"
	"once its features are stored. Imported tasks get knob features only; their\n"
	"configurations are skipped for the other kinds. Tasks are opened for --target: a\n"
	"vta-sim target's configurations are those of its (simulated) accelerator. Hidden\n"
	"features (ML2Tuner's) are what compiling a configuration for --target decided: on\n"
	"the CPU each kernel is compiled for the compiler's reports (cached), on vta-sim the\n"
	"device compiler's statistics. See tunekit-extract-features(1) for the exact\n"
	"definitions.",
};

static struct {
	const char *kind;
	int64_t hardware, batch;
} o;

static const opt options[] = {
	{ OPT_STRING, "kind", 'k', &o.kind, "KIND", "knob, itervar, curve, tlp, graph or hidden (default itervar)" },
	{ OPT_INT, "hardware", 0, &o.hardware, "ID", "only configurations measured on this hardware id" },
	{ OPT_INT, "batch", 0, &o.batch, "N", "configurations (or records) per transaction (default 256)" },
	OPT_END_
};

/* A task seen in the store, parsed once. */
typedef struct task_ent {
	char *key;
	te_prog *prog;
	sp_space *sp;
	ms_task *mt;         /* opened for the target (a vta-sim target, or hidden features) */
	int len;             /* feature length for this task */
	char *why;           /* set: the task's configurations are skipped for this reason */
	int64_t nskip;
} task_ent;

typedef struct xf {
	tk_ctx *ctx;
	tk_store *st;
	int kind, version;
	const char *kname;
	int ntask, last;
	task_ent *task;
	float *v;
	int vcap;
	int64_t scope, nnew, ninvalid, nskip_cfg;
	char *skip_cfg_why;  /* first configuration that did not parse */
	double busy;         /* seconds spent extracting and storing */
	tk_target tg;        /* --target */
	int on_target;       /* tasks are opened for tg (ms_task_open_target) */
	ms_opts mo;          /* hidden features: compilers, cache */
} xf;

static char *dup_msg(const char *prefix, const char *msg)
{
	size_t lp = strlen(prefix), lm = strlen(msg);
	char *s = malloc(lp + lm + 1);
	if (s) {
		memcpy(s, prefix, lp);
		memcpy(s + lp, msg, lm + 1);
	}
	return s;
}

/* Parse a task once: its space, or why its configurations are skipped. */
static int task_open(xf *x, task_ent *t, const char *space)
{
	int rc;
	if (space && x->kind != FEAT_KNOB) {
		t->why = dup_msg(x->kname, " features need a template task; imported tasks get knob"
		                           " features only");
		return t->why ? TK_OK : TK_ENOMEM;
	}
	if (space)
		rc = sp_space_from_json(space, &t->sp);
	else if (x->on_target)
		rc = ms_task_open_target(t->key, &x->tg, (uint64_t)x->ctx->common.seed, &t->mt);
	else if (!(rc = te_task_parse(t->key, &t->prog)))
		rc = sp_space_create(t->prog, &t->sp);
	if (!rc && t->mt && x->kind == FEAT_HIDDEN)
		rc = ms_hidden_length(t->mt, &t->len);
	else if (!rc)
		rc = feat_length(x->kind, t->mt ? t->mt->space : t->sp, &t->len);
	if (rc == TK_ENOMEM)
		return rc;
	if (rc) {
		t->why = dup_msg("", tk_errmsg());
		return t->why ? TK_OK : TK_ENOMEM;
	}
	if (t->len > x->vcap) {
		float *v = realloc(x->v, sizeof *v * (size_t)t->len);
		if (!v)
			return tk_seterr(TK_ENOMEM, "out of memory");
		x->v = v;
		x->vcap = t->len;
	}
	return TK_OK;
}

static int task_get(xf *x, const char *key, const char *space, task_ent **out)
{
	if (x->last < x->ntask && !strcmp(x->task[x->last].key, key)) {
		*out = &x->task[x->last];
		return TK_OK;
	}
	for (int i = 0; i < x->ntask; i++)
		if (!strcmp(x->task[i].key, key)) {
			x->last = i;
			*out = &x->task[i];
			return TK_OK;
		}
	task_ent *t = realloc(x->task, sizeof *t * (size_t)(x->ntask + 1));
	if (!t)
		return tk_seterr(TK_ENOMEM, "out of memory");
	x->task = t;
	t = &x->task[x->ntask];
	memset(t, 0, sizeof *t);
	if (!(t->key = strdup(key)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	x->last = x->ntask++;
	*out = t;
	int rc = task_open(x, t, space);
	return rc == TK_ENOMEM ? tk_seterr(rc, "out of memory") : rc;
}

/* Extract and store the features of one configuration (or skip it). */
static int process(xf *x, const store_fcfg *r)
{
	task_ent *t = NULL;
	sp_config c;
	int rc, valid;
	if ((rc = task_get(x, r->task, r->space, &t)))
		return rc;
	if (t->why) {
		t->nskip++;
		return TK_OK;
	}
	const sp_space *sp = t->mt ? t->mt->space : t->sp;
	if (sp_parse(sp, r->config, &c)) {
		if (!x->nskip_cfg++ && !(x->skip_cfg_why = dup_msg("", tk_errmsg())))
			return tk_seterr(TK_ENOMEM, "out of memory");
		return TK_OK;
	}
	if (x->kind == FEAT_HIDDEN)
		rc = ms_hidden(t->mt, &x->tg, &x->mo, &c, 1, x->v, &valid);
	else
		rc = feat_extract(x->kind, sp, &c, x->v, &valid);
	if (rc)
		return rc;
	if ((rc = store_feature_put(x->st, r->config_id, x->kname, x->version, x->v, t->len)))
		return rc;
	x->nnew++;
	x->ninvalid += !valid;
	return TK_OK;
}

/* Roll back after rc, keeping rc's message. */
static int rollback(xf *x, int rc)
{
	char why[512];
	snprintf(why, sizeof why, "%s", tk_errmsg());
	store_rollback(x->st);
	return tk_seterr(rc, "%s", why);
}

/* Every configuration of the todo list, batch by batch. *n receives the
 * number of configurations handled. */
static int run_todo(xf *x, store_ftodo *it, int64_t total, int64_t *n)
{
	const store_fcfg *r = NULL;
	int rc;
	*n = 0;
	do {
		double t0 = tk_now();
		int64_t nb = 0;
		if ((rc = store_begin(x->st)))
			return rc;
		while (nb < o.batch && !(rc = store_feature_todo_next(it, &r)) && r) {
			if ((rc = process(x, r)))
				break;
			nb++;
		}
		if (rc)
			return rollback(x, rc);
		if ((rc = store_commit(x->st)))
			return rollback(x, rc);
		x->busy += tk_now() - t0;
		*n += nb;
		if (total > 0)
			progress_draw(x->ctx, x->kname, (double)*n, (double)total, NULL);
		if (tk_interrupted)
			return tk_seterr(TK_EINTR, "interrupted; the features of %lld configurations are stored",
			                 (long long)x->nnew);
	} while (r);
	return TK_OK;
}

static int from_store(xf *x)
{
	store_ftodo *it;
	int64_t scope, missing, n;
	int rc = store_feature_todo_open(x->st, x->kname, x->version, o.hardware, NULL, 0, &it);
	if (rc)
		return rc;
	store_feature_todo_counts(it, &scope, &missing);
	x->scope += scope;
	rc = run_todo(x, it, missing, &n);
	store_feature_todo_free(it);
	return rc;
}

/* ---- record streams ----------------------------------------------------------------- */

/* Lines of standard input read with read(2), so that we know when the next
 * line would block and the batch so far can be finished first. */
typedef struct lines {
	char *b;
	size_t cap, beg, end, scan;
	int eof;
} lines;

/* A complete line (with its newline; the last line of the input may lack
 * one) into *line, *len: 1, or 0 if more input is needed. */
static int lines_next(lines *l, char **line, size_t *len)
{
	char *nl = l->scan < l->end ? memchr(l->b + l->scan, '\n', l->end - l->scan) : NULL;
	size_t e;
	if (nl) {
		e = (size_t)(nl - l->b) + 1;
	} else if (l->eof && l->end > l->beg) {
		e = l->end;
	} else {
		l->scan = l->end;
		return 0;
	}
	*line = l->b + l->beg;
	*len = e - l->beg;
	l->beg = l->scan = e;
	return 1;
}

static int lines_fill(lines *l)
{
	if (l->beg > 0) {
		memmove(l->b, l->b + l->beg, l->end - l->beg);
		l->end -= l->beg;
		l->scan -= l->beg;
		l->beg = 0;
	}
	if (l->cap - l->end < 4096) {
		size_t cap = l->cap ? 2 * l->cap : 65536;
		char *b = realloc(l->b, cap);
		if (!b)
			return tk_seterr(TK_ENOMEM, "out of memory");
		l->b = b;
		l->cap = cap;
	}
	ssize_t got;
	do
		got = read(0, l->b + l->end, l->cap - l->end);
	while (got < 0 && errno == EINTR && !tk_interrupted);
	if (got < 0)
		return tk_seterr(errno == EINTR ? TK_EINTR : TK_EIO, "stdin: %s", strerror(errno));
	if (got == 0)
		l->eof = 1;
	l->end += (size_t)got;
	return TK_OK;
}

typedef struct batch {
	tk_sb out;          /* the lines read since the last flush */
	int64_t *id;
	int n, cap;
	int64_t nrec, ndone;/* records read, records whose features are stored */
} batch;

/* Extract the batch's configurations, commit, then pass its lines on. */
static int batch_flush(xf *x, batch *b)
{
	int rc = TK_OK;
	if (b->n > 0) {
		store_ftodo *it;
		int64_t scope, missing, n;
		if ((rc = store_feature_todo_open(x->st, x->kname, x->version, o.hardware, b->id, b->n,
		                                  &it)))
			return rc;
		store_feature_todo_counts(it, &scope, &missing);
		x->scope += scope;
		rc = run_todo(x, it, 0, &n);
		store_feature_todo_free(it);
		if (rc)
			return rc;
		b->ndone += b->n;
		progress_draw(x->ctx, x->kname, (double)b->ndone, (double)b->nrec, "records");
		b->n = 0;
	}
	if (b->out.oom)
		return tk_seterr(TK_ENOMEM, "out of memory");
	if (b->out.n) {
		progress_end(x->ctx);
		if (fwrite(b->out.s, 1, b->out.n, stdout) != b->out.n || fflush(stdout))
			return tk_seterr(TK_EIO, "error writing standard output");
		tk_sb_clear(&b->out);
	}
	return rc;
}

/* One input line: keep it for output, parse it as a record. */
static int batch_line(xf *x, batch *b, rec_stream *rs, char *line, size_t len)
{
	const char *task, *config;
	int64_t id;
	tk_sb_putn(&b->out, line, len);
	/* rec_stream reads its FILE: give it exactly this line */
	FILE *m = fmemopen(line, len, "r");
	if (!m)
		return tk_seterr(TK_ENOMEM, "out of memory");
	rs->f = m;
	int got = rec_stream_next(rs, &task, &config, &id);
	fclose(m);
	rs->f = NULL;
	if (got < 0)
		return -got;
	if (rs->started && rs->c_id < 0)
		return tk_seterr(TK_EINVAL, "stdin: the record stream has no id column (records of"
		                            " measure, tune or report best have one)");
	if (got == 0)
		return TK_OK;
	if (b->n == b->cap) {
		int cap = b->cap ? 2 * b->cap : 256;
		int64_t *v = realloc(b->id, sizeof *v * (size_t)cap);
		if (!v)
			return tk_seterr(TK_ENOMEM, "out of memory");
		b->id = v;
		b->cap = cap;
	}
	b->id[b->n++] = id;
	b->nrec++;
	return b->n >= o.batch ? batch_flush(x, b) : TK_OK;
}

static int from_stream(xf *x)
{
	lines l = { 0 };
	batch b;
	rec_stream rs;
	char *line;
	size_t len;
	int rc = TK_OK;
	memset(&b, 0, sizeof b);
	tk_sb_init(&b.out);
	rec_stream_init(&rs, NULL, "stdin");
	while (!rc) {
		if (lines_next(&l, &line, &len)) {
			rc = batch_line(x, &b, &rs, line, len);
			continue;
		}
		if (l.eof)
			break;
		/* about to wait for input: finish what we have first */
		if (!(rc = batch_flush(x, &b)) && tk_interrupted)
			rc = tk_seterr(TK_EINTR, "interrupted; the features of %lld configurations are"
			               " stored", (long long)x->nnew);
		if (!rc)
			rc = lines_fill(&l);
	}
	if (!rc)
		rc = batch_flush(x, &b);
	rec_stream_free(&rs);
	tk_sb_free(&b.out);
	free(b.id);
	free(l.b);
	return rc;
}

/* ---- the command --------------------------------------------------------------------- */

static void summary(xf *x)
{
	progress_end(x->ctx);
	if (x->ctx->common.quiet)
		return;
	int64_t nskip = x->nskip_cfg;
	for (int i = 0; i < x->ntask; i++) {
		const task_ent *t = &x->task[i];
		nskip += t->nskip;
		if (t->nskip)
			fprintf(stderr, "%s: note: %lld configurations of %s skipped: %s\n", x->ctx->prog,
			        (long long)t->nskip, t->key, t->why);
	}
	if (x->nskip_cfg)
		fprintf(stderr, "%s: note: %lld configurations skipped, the first because: %s\n",
		        x->ctx->prog, (long long)x->nskip_cfg, x->skip_cfg_why);
	fprintf(stderr, "%s: %lld configurations, %lld new, %lld invalid", x->kname,
	        (long long)x->scope, (long long)x->nnew, (long long)x->ninvalid);
	if (nskip)
		fprintf(stderr, ", %lld skipped", (long long)nskip);
	fprintf(stderr, ", %.0f per second\n", x->busy > 0 ? x->nnew / x->busy : 0.0);
}

static void xf_free(xf *x)
{
	for (int i = 0; i < x->ntask; i++) {
		free(x->task[i].key);
		free(x->task[i].why);
		sp_space_free(x->task[i].sp);
		te_prog_free(x->task[i].prog);
		ms_task_free(x->task[i].mt);
	}
	free(x->task);
	free(x->v);
	free(x->skip_cfg_why);
}

int cmd_extract_features(int argc, char **argv, tk_ctx *ctx)
{
	xf x;
	int rc, stream = 0;
	o.batch = 256;
	if ((rc = opt_parse(ctx, &argc, argv, options, usage)))
		return rc < 0 ? EXIT_OK : rc;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "-") || stream)
			return tk_fail(ctx, TK_EINVAL, "unexpected argument '%s'", argv[i]);
		stream = 1;
	}
	memset(&x, 0, sizeof x);
	x.ctx = ctx;
	x.kind = feat_kind_parse(o.kind ? o.kind : "itervar");
	if (x.kind < 0)
		return tk_fail(ctx, TK_EINVAL, "unknown feature kind '%s' (knob, itervar, curve, tlp,"
		               " graph, hidden)", o.kind);
	if (o.batch < 1 || o.batch > 1000000 || o.hardware < 0)
		return tk_fail(ctx, TK_EINVAL, "option out of range (see '%s --help')", ctx->prog);
	if ((rc = tk_target_parse(ctx->common.target, &x.tg)))
		return tk_fail(ctx, rc, NULL);
	x.on_target = x.kind == FEAT_HIDDEN || x.tg.kind == TK_TARGET_VTA_SIM;
	ms_opts_default(&x.mo);
	x.mo.jobs = (int)ctx->common.jobs > 0 ? (int)ctx->common.jobs : 1;
	x.kname = feat_kind_name(x.kind);
	x.version = feat_version(x.kind);
	if ((rc = tk_ctx_store(ctx, &x.st)))
		return rc;
#ifdef M_TRIM_THRESHOLD
	/* Every stored vector allocates and frees zlib's deflate state (about
	 * 270 KB); by default glibc gives it back to the kernel each time and
	 * page-faults it in again, which doubled the cost of a vector. */
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
	rc = stream ? from_stream(&x) : from_store(&x);
	if (rc)
		rc = tk_fail(ctx, rc, NULL);
	else
		summary(&x);
	xf_free(&x);
	return rc;
}
