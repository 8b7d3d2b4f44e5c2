/*
 * transfer: adapt a trained cost model (a model file of `tunekit train`)
 * to another hardware target from that target's records in the store, by
 * Moses' lottery ticket, fine-tuning, an xgb warm start, as it is, or a
 * model of the same kind from scratch; measure it on the target's records
 * it did not adapt on, and write it as a model file and into the store's
 * model table. The pipeline is lib/train (tr_transfer_run); this file
 * reads the options and the record stream and prints.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "features/feature.h"
#include "model/cost.h"
#include "train/extract.h"
#include "train/train.h"
#include "tune/tune.h"

static const char *const usage[] = {
	"tunekit transfer --model FILE (--to-hw ID|KEY | --measure N --task TASK ...)\n"
	"                 [--method moses|finetune|xgb-warm|none|scratch]\n"
	"                 [--target-fraction F] [--budget N] [--ratio R | --threshold T] [--decay X]\n"
	"                 [--epochs N] [--lr X] [--out FILE] [OPTIONS] [-]",
	"Adapt the cost model in FILE (written by 'tunekit train') to the hardware --to-hw\n"
	"from that hardware's records in the store that have features of the model's kind.\n"
	"A random share of them (--target-fraction, at most --budget) is adapted on, the\n"
	"rest measures the result. moses trains the parameters most salient on the target\n"
	"(|w * dL/dw|, the top --ratio or those over --threshold of the largest, re-drawn\n"
	"every epoch) and decays the others toward zero; finetune trains every parameter;\n"
	"xgb-warm adds boosting rounds to an xgb model; none keeps the model as it is;\n"
	"scratch fits a new model of the same kind on the target's share alone. With -,\n"
	"only the records of the record stream on standard input. With --measure N, first\n"
	"measure N configurations of the --task tasks on --target (this CPU by default),\n"
	"chosen by the source model, and adapt on those. Prints RMSE, MSE, MSE(D),\n"
	"top-1, top-5 and Spearman of the source model and of the adapted one, writes the\n"
	"adapted model file and adds it to the store.",
};

static struct {
	const char *model, *to_hw, *method, *out, *format;
	int64_t budget, epochs, measure;
	double fraction, ratio, threshold, decay, lr;
	opt_list task;
	ms_cli ms;
} o;

static const opt options[] = {
	{ OPT_STRING, "model", 0, &o.model, "FILE", "the source model file (required)" },
	{ OPT_STRING, "to-hw", 0, &o.to_hw, "HW", "the target hardware: an id or key with records (required)" },
	{ OPT_STRING, "method", 'm', &o.method, "NAME", "moses (default), finetune, xgb-warm, none or scratch" },
	{ OPT_DOUBLE, "target-fraction", 0, &o.fraction, "F", "adapt on this share of the target's records (default 1)" },
	{ OPT_INT, "budget", 0, &o.budget, "N", "adapt on at most N of the target's records" },
	{ OPT_DOUBLE, "ratio", 0, &o.ratio, "R", "moses: share of the parameters trained (default 0.5)" },
	{ OPT_DOUBLE, "threshold", 0, &o.threshold, "T", "moses: train those with saliency over T x the largest instead" },
	{ OPT_DOUBLE, "decay", 0, &o.decay, "X", "moses: the others shrink by lr x X x w a step (default 1)" },
	{ OPT_INT, "epochs", 0, &o.epochs, "N", "epochs of networks (default 30) or boosting rounds added (20)" },
	{ OPT_DOUBLE, "lr", 0, &o.lr, "X", "networks: peak learning rate (default 0.0001)" },
	{ OPT_STRING, "out", 'o', &o.out, "FILE", "model file to write (default tunekit.model)" },
	{ OPT_STRING, "format", 'f', &o.format, "FMT", "table, tsv or json (default: table on a terminal)" },
	{ OPT_INT, "measure", 0, &o.measure, "N", "first measure N configurations the model picks on --target" },
	{ OPT_LIST, "task", 't', &o.task, "TASK", "with --measure: a task to measure (repeatable)" },
	MS_CLI_OPTIONS(o.ms),
	OPT_END_
};

/* ---- output ------------------------------------------------------------------ */


static void tell(tk_ctx *ctx, const tr_transfer *t, const tr_transfer_opts *to)
{
	const tr_fit *f = &t->f;
	const char *sh = mf_get(&t->src_meta, "hardware"), *kind = mf_get(&t->src_meta, "kind");
	if (ctx->common.quiet)
		return;
	fprintf(stderr, "%s: %s model of %s to hardware %lld (%s): %d of its %d records with %s"
	        " features to adapt on, %d to measure\n", ctx->prog, kind, sh ? sh : "unknown hardware",
	        (long long)t->src.hw_id, t->src.hw_key, f->train.n, t->ts.n, feat_kind_name(t->feat),
	        f->hold.n);
}

/* ---- --measure: records on the target first ------------------------------------- */

typedef struct measured {
	tk_ctx *ctx;
	int64_t *id;         /* (n) the measurements stored */
	int n, cap;
} measured;

static void on_progress(void *p, const tn_status *s)
{
	measured *m = p;
	char extra[96];
	snprintf(extra, sizeof extra, "%.40s %.0f%% invalid", s->task, 100 * s->invalid);
	progress_draw(m->ctx, "measure", (double)s->done, (double)s->total, extra);
}

static int on_records(void *p, const char *task, double flops, int64_t hw, int64_t run, int trial0,
                      const ms_result *r, const int64_t *ids, int n)
{
	measured *m = p;
	(void)task, (void)flops, (void)hw, (void)run, (void)trial0, (void)r;
	if (m->n + n > m->cap) {
		int cap = m->cap ? 2 * m->cap : 256;
		while (cap < m->n + n)
			cap *= 2;
		int64_t *v = realloc(m->id, sizeof *v * (size_t)cap);
		if (!v)
			return tk_seterr(TK_ENOMEM, "out of memory");
		m->id = v;
		m->cap = cap;
	}
	memcpy(m->id + m->n, ids, sizeof *ids * (size_t)n);
	m->n += n;
	return TK_OK;
}

/* Tune the --task tasks for o.measure trials on --target with the source
 * model scoring the candidates (never refit), give what was measured the
 * model's features, and return the measurements' ids and their hardware.
 * Returns 0 or the exit status after a one-line error. */
static int measure_target(tk_ctx *ctx, tk_store *st, measured *m, int64_t *hw)
{
	tn_opts t;
	tn_stores in = { 0 };
	tk_target tg;
	mf_meta meta;
	tn_result res;
	tr_extract *ex = NULL;
	int rc, feat, d, status;
	tn_opts_default(&t);
	t.ms.build_timeout = 30;
	t.ms.jobs = (int)ctx->common.jobs;
	if ((status = ms_cli_apply(ctx, &o.ms, &t.ms)))
		return status;
	if ((rc = tk_target_parse(ctx->common.target, &tg)))
		return tk_fail(ctx, rc, NULL);
	if ((rc = cm_read(o.model, &meta, &in.model)))
		return tk_fail(ctx, rc == TK_ECORRUPT ? TK_EINVAL : rc, NULL);
	if ((rc = tr_model_features(o.model, &meta, &feat, &d))) {
		status = tk_fail(ctx, rc, NULL);
		goto out;
	}
	in.model_d = d;
	snprintf(t.model, sizeof t.model, "%s", mf_get(&meta, "kind"));
	snprintf(t.feature, sizeof t.feature, "%s", feat_kind_name(feat));
	snprintf(t.model_file, sizeof t.model_file, "%s", o.model);
	t.trials = o.measure;
	t.confirm = 0;
	t.adapt = 0; /* what the source model picks as it is: transfer adapts it after */
	t.guard = 0;
	t.seed = (uint64_t)ctx->common.seed;
	tn_hooks h = { m, on_progress, on_records, &tk_interrupted };
	rc = tn_tune(st, &in, &tg, o.task.n, (char *const *)o.task.v, NULL, &t, ctx->cmdline, 0, &h, &res);
	progress_end(ctx);
	if (!rc && !(rc = tr_extract_new(st, feat, 256, &tg, &t.ms, t.seed, &ex)))
		rc = tr_extract_run(ex, 0, m->id, m->n, &tk_interrupted, NULL, NULL);
	if (rc) {
		status = tk_fail(ctx, rc, NULL);
		goto out;
	}
	*hw = res.hw_id;
	status = EXIT_OK;
	if (!ctx->common.quiet)
		fprintf(stderr, "%s: measured %lld configurations (%lld invalid) on hardware %lld in"
		        " %.1f s (run %lld)\n", ctx->prog, (long long)res.trials, (long long)res.invalid,
		        (long long)res.hw_id, res.seconds, (long long)res.run_id);
out:
	tr_extract_free(ex);
	cm_free(in.model);
	return status;
}

/* ---- entry ---------------------------------------------------------------------- */

int cmd_transfer(int argc, char **argv, tk_ctx *ctx)
{
	tr_transfer t;
	tr_transfer_opts to;
	tk_store *st;
	int64_t *ids = NULL, model_id = 0;
	int nid = 0, rc, from_stdin = 0, status = EXIT_OK;

	measured mt = { ctx, NULL, 0, 0 };
	memset(&t, 0, sizeof t);
	memset(&o, 0, sizeof o);
	ms_cli_init(&o.ms);
	o.method = "moses";
	o.out = "tunekit.model";
	o.fraction = 1;
	o.ratio = NAN;
	o.decay = 1;
	if ((rc = opt_parse(ctx, &argc, argv, options, usage)))
		return rc < 0 ? EXIT_OK : rc;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "-") || from_stdin)
			return tk_fail(ctx, TK_EINVAL, "unexpected argument '%s'", argv[i]);
		from_stdin = 1;
	}
	memset(&to, 0, sizeof to);
	cm_adapt_default(&to.adapt);
	if (!o.model || !*o.model)
		return tk_fail(ctx, TK_EINVAL, "--model names the source model file (see '%s --help')",
		               ctx->prog);
	if (o.measure < 0 || o.measure > 1000000)
		return tk_fail(ctx, TK_EINVAL, "--measure needs a number of configurations, 1 to 1000000");
	if (o.measure && (o.to_hw || from_stdin))
		return tk_fail(ctx, TK_EINVAL, "--measure adapts on what it measures on --target: no"
		               " --to-hw and no record stream");
	if (o.measure && !o.task.n)
		return tk_fail(ctx, TK_EINVAL, "--measure needs the tasks to measure (--task)");
	if (!o.measure && o.task.n)
		return tk_fail(ctx, TK_EINVAL, "--task goes with --measure");
	if (!o.measure && (!o.to_hw || !*o.to_hw))
		return tk_fail(ctx, TK_EINVAL, "--to-hw names the target hardware, or --measure measures"
		               " on this one (see '%s --help')", ctx->prog);
	if ((rc = tr_method_lookup(o.method, &to.method)))
		return tk_fail(ctx, rc, NULL);
	if (format_parse(o.format) < 0)
		return tk_fail(ctx, TK_EINVAL, "unknown format '%s' (table, tsv or json)", o.format);
	if (!(o.fraction > 0 && o.fraction <= 1))
		return tk_fail(ctx, TK_EINVAL, "--target-fraction needs a share above 0, at most 1");
	if (o.budget < 0 || o.epochs < 0 || o.epochs > 1000000 || !(o.lr >= 0 && o.lr < 1) ||
	    !(o.decay >= 0 && o.decay <= 1000))
		return tk_fail(ctx, TK_EINVAL, "option out of range (see '%s --help')", ctx->prog);
	if (!isnan(o.ratio) && !(o.ratio > 0 && o.ratio <= 1))
		return tk_fail(ctx, TK_EINVAL, "--ratio needs a share above 0, at most 1");
	if (!(o.threshold >= 0 && o.threshold <= 1))
		return tk_fail(ctx, TK_EINVAL, "--threshold needs a share of the largest saliency,"
		               " 0 to 1");
	if (o.threshold > 0 && !isnan(o.ratio))
		return tk_fail(ctx, TK_EINVAL, "give --ratio or --threshold, not both");
	if (to.method->adapt != CM_ADAPT_TICKET && (o.threshold > 0 || !isnan(o.ratio)))
		return tk_fail(ctx, TK_EINVAL, "--ratio and --threshold choose moses' ticket; the"
		               " method is %s", to.method->name);
	if (!*o.out)
		return tk_fail(ctx, TK_EINVAL, "--out needs a file name");
	to.hardware = o.to_hw;
	to.fraction = o.fraction;
	to.budget = o.budget;
	to.seed = (uint64_t)ctx->common.seed;
	to.rounds = (int)o.epochs;
	to.adapt.epochs = (int)o.epochs;
	to.adapt.lr = o.lr;
	to.adapt.ratio = isnan(o.ratio) ? 0.5 : o.ratio;
	to.adapt.threshold = o.threshold;
	to.adapt.decay = o.decay;

	if (from_stdin && (status = read_stream_ids(ctx, &ids, &nid)))
		goto out;
	to.ids = ids;
	to.nid = nid;
	if ((status = tk_ctx_store(ctx, &st)))
		goto out;
	char hw[24];
	if (o.measure) {
		int64_t hw_id = 0;
		if ((status = measure_target(ctx, st, &mt, &hw_id)))
			goto out;
		snprintf(hw, sizeof hw, "%lld", (long long)hw_id);
		to.hardware = hw;
		to.ids = mt.id;
		to.nid = mt.n;
	}
	/* Nothing is written while the model adapts: let a signal end the
	 * process at once rather than after the last epoch. */
	sig_saved sig;
	sig_default(&sig);
	to.progress = progress_epochs;
	to.progress_ctx = ctx;
	rc = tr_transfer_run(st, o.model, &to, &t);
	sig_restore(&sig);
	progress_end(ctx);
	if (!rc && tk_interrupted)
		rc = tk_seterr(TK_EINTR, "interrupted; nothing written");
	if (!rc) {
		tell(ctx, &t, &to);
		rc = tr_transfer_save(st, o.out, &t, &to, &model_id);
	}
	if (rc) {
		status = tk_fail(ctx, rc, NULL);
		goto out;
	}

	int fmt = out_format(ctx, o.format);
	table *tb = metrics_table_new();
	if (!tb) {
		status = tk_fail(ctx, TK_ENOMEM, "out of memory");
		goto out;
	}
	metrics_row(tb, fmt, "source", &t.msource);
	metrics_row(tb, fmt, "train", &t.f.mtrain);
	if (t.f.hold.n > 0)
		metrics_row(tb, fmt, "holdout", &t.f.mhold);
	status = table_print(tb, stdout, fmt);
	if (!ctx->common.quiet) {
		char how[128] = "";
		if (to.method->adapt == CM_ADAPT_BOOST)
			snprintf(how, sizeof how, ", %d rounds added (%d in all)", t.info.epochs, t.info.steps);
		else if (to.method->adapt)
			snprintf(how, sizeof how, ", %d epochs, %d steps, %.0f%% of the parameters trained",
			         t.info.epochs, t.info.steps, 100 * t.info.trained);
		fprintf(stderr, "%s: %s%s in %.1f s; wrote %s (store model %lld)\n", ctx->prog,
		        to.method->name, how, t.f.seconds, o.out, (long long)model_id);
	}
out:
	tr_transfer_free(&t);
	free(ids);
	free(mt.id);
	free(o.task.v);
	return status;
}
