/*
 * pretrain-meta: MetaTune's meta-training of the "meta" cost model on a
 * dataset store's graph features: supervised pre-training, then
 * first-order MAML over few-shot tasks, a few-shot evaluation, the model
 * file and the loss curve in the store. The pipeline is lib/train
 * (tr_pretrain_meta); this file reads the options and prints.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "import/onnx.h"
#include "task/network.h"
#include "train/train.h"

static const char *const usage[] = {
	"tunekit pretrain-meta [--db DATASET] [-o FILE] [--hardware ID] [--alpha A] [--beta B]\n"
	"                      [--inner-steps S] [--tasks-per-batch T] [--ways N] [--shots K]\n"
	"                      [--queries Q] [--epochs E] [--pretrain-share F] [--meta-steps M]\n"
	"                      [--finetune-steps S] [--heads M]\n"
	"                      [--holdout-task TASK... | --holdout-network NAME...]",
	"Meta-train MetaTune's cost model (the model 'meta') on the records of one hardware ID\n"
	"of a dataset store (default: the one with the most records that have graph features;\n"
	"see 'tunekit extract-features --kind graph'). First supervised pre-training of the\n"
	"whole network on every record for E epochs; then first-order MAML of its head over\n"
	"few-shot tasks: each meta-step draws T tasks of N dataset tasks (of different\n"
	"operators where there are enough) with K support and Q query records each, adapts\n"
	"the head to the support records with S SGD steps of A, and moves it by the mean\n"
	"query-loss gradient at the adapted heads (Adam, B). Held-out tasks are left out of\n"
	"both and measured at the end: the MSE of each task's records after fine-tuning on K\n"
	"of them, as the tuner fine-tunes, against before (a table on a terminal, TSV\n"
	"otherwise). Writes the model file and adds the model and the run, whose log holds\n"
	"the loss of every epoch and meta-step ('tunekit report curve --run R'), to the store.",
};

static struct {
	const char *out, *format;
	int64_t hardware, inner_steps, tasks_per_batch, ways, shots, queries, epochs, meta_steps;
	int64_t finetune_steps, heads;
	double alpha, beta, pretrain_share;
	opt_list holdout_task, holdout_network;
} o;

static const opt options[] = {
	{ OPT_STRING, "out", 'o', &o.out, "FILE", "model file to write (default meta.model)" },
	{ OPT_INT, "hardware", 0, &o.hardware, "ID", "meta-train on the records of this hardware id" },
	{ OPT_DOUBLE, "alpha", 0, &o.alpha, "A", "inner-loop (task) learning rate (default 0.01)" },
	{ OPT_DOUBLE, "beta", 0, &o.beta, "B", "meta learning rate (default 0.001)" },
	{ OPT_INT, "inner-steps", 0, &o.inner_steps, "S", "SGD steps of the inner loop (default 5)" },
	{ OPT_INT, "tasks-per-batch", 0, &o.tasks_per_batch, "T", "few-shot tasks per meta-step (default 4)" },
	{ OPT_INT, "ways", 0, &o.ways, "N", "dataset tasks per few-shot task (default 3)" },
	{ OPT_INT, "shots", 0, &o.shots, "K", "support records per dataset task (default 4)" },
	{ OPT_INT, "queries", 0, &o.queries, "Q", "query records per dataset task (default 4)" },
	{ OPT_INT, "epochs", 0, &o.epochs, "E", "epochs of supervised pre-training (default 30, or 2000 steps)" },
	{ OPT_DOUBLE, "pretrain-share", 0, &o.pretrain_share, "F", "pre-train on this share of the tasks, MAML on the others (default 1: all)" },
	{ OPT_INT, "meta-steps", 0, &o.meta_steps, "M", "MAML meta-steps (default 300)" },
	{ OPT_INT, "finetune-steps", 0, &o.finetune_steps, "S", "the tuner's fine-tuning steps (default 200; 0: the inner steps)" },
	{ OPT_INT, "heads", 0, &o.heads, "M", "fine-tuned heads whose spread is the uncertainty (default 5)" },
	{ OPT_LIST, "holdout-task", 0, &o.holdout_task, "TASK", "leave this task out and measure on it (repeatable)" },
	{ OPT_LIST, "holdout-network", 0, &o.holdout_network, "NAME", "leave out the tasks of this network (repeatable)" },
	{ OPT_STRING, "format", 'f', &o.format, "FMT", "table, tsv or json (default: table on a terminal)" },
	OPT_END_
};

static void on_progress(void *p, const meta_progress *s)
{
	tk_ctx *ctx = p;
	char extra[96];
	if (s->phase == META_PRETRAIN)
		snprintf(extra, sizeof extra, "epoch %d/%d, loss %.4f", s->step, s->total, s->loss);
	else
		snprintf(extra, sizeof extra, "step %d/%d, query loss %.4f (before adapting %.4f)",
		         s->step, s->total, s->loss, s->before);
	progress_draw(ctx, s->phase == META_PRETRAIN ? "pretrain" : "maml", (double)s->step,
	              (double)s->total, extra);
}

static void row(table *t, const char *set, int ntask, int shots, double before, double after)
{
	char b[4][32];
	const char *cells[5] = { set, b[0], b[1], b[2], b[3] };
	snprintf(b[0], 32, "%d", ntask);
	snprintf(b[1], 32, "%d", shots);
	snprintf(b[2], 32, "%.6f", before);
	snprintf(b[3], 32, "%.6f", after);
	if (isnan(before))
		cells[3] = cells[4] = NULL;
	table_row(t, cells);
}

/* Every option in range; the exit status otherwise. */
static int check(tk_ctx *ctx, tr_meta_opts *mo)
{
	meta_opts *m = &mo->mo;
	int64_t v[] = { o.inner_steps, o.tasks_per_batch, o.ways, o.shots, o.queries, o.epochs,
	                o.meta_steps, o.finetune_steps, o.heads };
	for (int i = 0; i < ArraySize(v); i++)
		if (v[i] < 0 || v[i] > 10000000)
			return tk_fail(ctx, TK_EINVAL, "option out of range (see '%s --help')", ctx->prog);
	if (o.hardware < 0)
		return tk_fail(ctx, TK_EINVAL, "--hardware needs a hardware id");
	if (!(o.pretrain_share > 0 && o.pretrain_share <= 1))
		return tk_fail(ctx, TK_EINVAL, "--pretrain-share needs a share above 0, at most 1");
	mo->pretrain_share = o.pretrain_share;
	m->alpha = o.alpha;
	m->beta = o.beta;
	m->inner_steps = (int)o.inner_steps;
	m->tasks_per_batch = (int)o.tasks_per_batch;
	m->ways = (int)o.ways;
	m->shots = (int)o.shots;
	m->queries = (int)o.queries;
	m->epochs = (int)o.epochs;
	m->meta_steps = (int)o.meta_steps;
	m->finetune_steps = (int)o.finetune_steps;
	m->heads = (int)o.heads;
	m->seed = (uint64_t)ctx->common.seed;
	int rc = meta_opts_check(m);
	return rc ? tk_fail(ctx, rc, NULL) : EXIT_OK;
}

int cmd_pretrain_meta(int argc, char **argv, tk_ctx *ctx)
{
	tr_meta_opts mo;
	tr_meta_result r;
	tk_store *st;
	const char **net_tasks = NULL;
	int rc, status = EXIT_OK, nnet = 0;
	memset(&mo, 0, sizeof mo);
	meta_opts_default(&mo.mo);
	o.out = "meta.model";
	o.alpha = mo.mo.alpha;
	o.beta = mo.mo.beta;
	o.inner_steps = mo.mo.inner_steps;
	o.tasks_per_batch = mo.mo.tasks_per_batch;
	o.ways = mo.mo.ways;
	o.shots = mo.mo.shots;
	o.queries = mo.mo.queries;
	o.meta_steps = mo.mo.meta_steps;
	o.heads = mo.mo.heads;
	o.finetune_steps = mo.mo.finetune_steps;
	o.pretrain_share = 1;
	if ((rc = opt_parse(ctx, &argc, argv, options, usage)))
		return rc < 0 ? EXIT_OK : rc;
	if (argc > 0)
		return tk_fail(ctx, TK_EINVAL, "unexpected argument '%s'", argv[0]);
	if (format_parse(o.format) < 0)
		return tk_fail(ctx, TK_EINVAL, "unknown format '%s' (table, tsv or json)", o.format);
	if (!*o.out)
		return tk_fail(ctx, TK_EINVAL, "--out needs a file name");
	if (o.holdout_task.n && o.holdout_network.n)
		return tk_fail(ctx, TK_EINVAL, "give --holdout-task or --holdout-network, not both");
	if ((status = check(ctx, &mo)))
		goto out;
	/* the held-out networks' tasks */
	for (int i = 0; i < o.holdout_network.n && !status; i++) {
		tk_network *net;
		if ((rc = onnx_net_load(o.holdout_network.v[i], &net))) {
			status = tk_fail(ctx, rc == TK_ENOTFOUND ? TK_EINVAL : rc, NULL);
			break;
		}
		const char **v = realloc(net_tasks, sizeof *v * (size_t)(nnet + net->n));
		if (!v) {
			net_free(net);
			status = tk_fail(ctx, TK_ENOMEM, "out of memory");
			break;
		}
		net_tasks = v;
		/* the keys outlive the network: strdup'd */
		for (int j = 0; j < net->n && !status; j++)
			if (!(net_tasks[nnet++] = strdup(net->task[j].task)))
				status = tk_fail(ctx, TK_ENOMEM, "out of memory");
		net_free(net);
	}
	if (status || (status = tk_ctx_store(ctx, &st)))
		goto out;
	mo.hardware = o.hardware;
	mo.hold = o.holdout_task.v;
	mo.nhold = o.holdout_task.n;
	mo.hold_net = net_tasks;
	mo.nhold_net = nnet;
	mo.path = o.out;
	mo.argv = ctx->cmdline;
	tr_meta_hooks h = { ctx, on_progress, &tk_interrupted };
	rc = tr_pretrain_meta(st, &mo, &h, &r);
	progress_end(ctx);
	if (rc) {
		status = tk_fail(ctx, rc, NULL);
		goto out;
	}
	int fmt = out_format(ctx, o.format);
	static const char *const hdr[] = { "set", "tasks", "shots", "mse_before", "mse_after" };
	table *t = table_new(ArraySize(hdr), hdr);
	if (!t) {
		status = tk_fail(ctx, TK_ENOMEM, "out of memory");
		goto out;
	}
	row(t, "train", r.train_ntask, mo.mo.shots, r.train_before, r.train_after);
	if (r.nhold_task)
		row(t, "holdout", r.hold_ntask, mo.mo.shots, r.hold_before, r.hold_after);
	status = table_print(t, stdout, fmt);
	if (!ctx->common.quiet) {
		fprintf(stderr, "%s: hardware %lld (%s): %d records of %d tasks (%d with the %d records"
		        " a few-shot task takes)", ctx->prog, (long long)r.src.hw_id, r.src.hw_key,
		        r.nrow, r.ntask, r.nelig, mo.mo.shots + mo.mo.queries);
		if (r.nhold_task)
			fprintf(stderr, "; holding out %d records of %d tasks", r.nhold_row, r.nhold_task);
		fprintf(stderr, "\n%s: pre-training: %d epochs in %.1f s, loss %.4f; first-order MAML:"
		        " %d meta-steps in %.1f s, query loss after adapting %.4f -> %.4f\n", ctx->prog,
		        r.epochs, r.pretrain_s, r.pretrain_loss, mo.mo.meta_steps, r.maml_s, r.meta_first,
		        r.meta_last);
		fprintf(stderr, "%s: wrote %s (store model %lld); the loss curve is run %lld ('tunekit"
		        " report curve --run %lld')\n", ctx->prog, o.out, (long long)r.model_id,
		        (long long)r.run_id, (long long)r.run_id);
	}
out:
	for (int i = 0; i < nnet; i++)
		free((char *)net_tasks[i]);
	free(net_tasks);
	free(o.holdout_task.v);
	free(o.holdout_network.v);
	return status;
}
