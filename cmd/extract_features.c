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
#include "record/record.h"
#include "store/store_report.h"
#include "train/extract.h"

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

typedef struct xf {
	tk_ctx *ctx;
	tr_extract *ex;
	const char *kname;
} xf;

static void on_progress(void *p, int64_t done, int64_t total)
{
	xf *x = p;
	if (total > 0)
		progress_draw(x->ctx, x->kname, (double)done, (double)total, NULL);
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
		if ((rc = tr_extract_run(x->ex, o.hardware, b->id, b->n, &tk_interrupted, NULL, NULL)))
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
		if (!(rc = batch_flush(x, &b)) && tk_interrupted) {
			tr_extract_stats st;
			tr_extract_stats_get(x->ex, &st);
			rc = tk_seterr(TK_EINTR, "interrupted; the features of %lld configurations are"
			               " stored", (long long)st.nnew);
		}
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
	tr_extract_stats st;
	const char *task, *why;
	int64_t n;
	progress_end(x->ctx);
	if (x->ctx->common.quiet)
		return;
	tr_extract_stats_get(x->ex, &st);
	for (int i = 0; tr_extract_skips(x->ex, i, &task, &n, &why); i++)
		fprintf(stderr, "%s: note: %lld configurations of %s skipped: %s\n", x->ctx->prog,
		        (long long)n, task, why);
	if (st.nskip_cfg)
		fprintf(stderr, "%s: note: %lld configurations skipped, the first because: %s\n",
		        x->ctx->prog, (long long)st.nskip_cfg, tr_extract_cfg_why(x->ex));
	fprintf(stderr, "%s: %lld configurations, %lld new, %lld invalid", x->kname,
	        (long long)st.scope, (long long)st.nnew, (long long)st.ninvalid);
	if (st.nskip_cfg + st.nskip_task)
		fprintf(stderr, ", %lld skipped", (long long)(st.nskip_cfg + st.nskip_task));
	fprintf(stderr, ", %.0f per second\n", st.busy > 0 ? st.nnew / st.busy : 0.0);
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
	int kind = feat_kind_parse(o.kind ? o.kind : "itervar");
	if (kind < 0)
		return tk_fail(ctx, TK_EINVAL, "unknown feature kind '%s' (knob, itervar, curve, tlp,"
		               " graph, hidden)", o.kind);
	if (o.batch < 1 || o.batch > 1000000 || o.hardware < 0)
		return tk_fail(ctx, TK_EINVAL, "option out of range (see '%s --help')", ctx->prog);
	x.kname = feat_kind_name(kind);
	tk_store *st;
	if ((rc = tk_ctx_store(ctx, &st)))
		return rc;
	int64_t hw_id;
	if (o.hardware > 0 && (rc = store_hardware_find(st, o.hardware, NULL, &hw_id, NULL, NULL)))
		return tk_fail(ctx, rc, "--hardware: %s", tk_errmsg());
	tk_target tg;
	ms_opts mo;
	if ((rc = tk_target_parse(ctx->common.target, &tg)))
		return tk_fail(ctx, rc, NULL);
	ms_opts_default(&mo);
	mo.jobs = (int)ctx->common.jobs > 0 ? (int)ctx->common.jobs : 1;
	if ((rc = tr_extract_new(st, kind, (int)o.batch, &tg, &mo, (uint64_t)ctx->common.seed, &x.ex)))
		return tk_fail(ctx, rc, NULL);
#ifdef M_TRIM_THRESHOLD
	/* Every stored vector allocates and frees zlib's deflate state (about
	 * 270 KB); by default glibc gives it back to the kernel each time and
	 * page-faults it in again, which doubled the cost of a vector. */
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
	rc = stream ? from_stream(&x)
	            : tr_extract_run(x.ex, o.hardware, NULL, 0, &tk_interrupted, on_progress, &x);
	if (rc)
		rc = tk_fail(ctx, rc, NULL);
	else
		summary(&x);
	tr_extract_free(x.ex);
	return rc;
}
