/*
 * tune: the learned tuning loop on a task or a whole network, measured on
 * this CPU or replayed from a dataset; every trial is recorded.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "features/feature.h"
#include "import/onnx.h"
#include "model/builtin.h"
#include "store/store_report.h"
#include "store/store_tuning.h"
#include "task/network.h"
#include "train/train.h"
#include "tune/tune.h"

static const char *const usage[] = {
	"tunekit tune (--task TASK... | --network NAME [--layout nchw|blocked|auto]) --trials N\n"
	"             [--model NAME] [--search NAME] [--feature itervar|knob|curve|tlp|graph]\n"
	"             [OPTIONS]\n"
	"       tunekit tune --resume [--run ID]",
	"Tune tasks with AutoTVM's model-based tuner: batches of configurations chosen by a\n"
	"search (simulated annealing) on a cost model fit to the measurements so far (the\n"
	"last epsilon share of each plan random), or by a search without a model; the\n"
	"models and searches are listed by 'tunekit help models' and 'tunekit help\n"
	"searches'. A network's tasks share one budget (round robin, then the Ansor task\n"
	"scheduler's gradient rule) and the estimated network latency is the sum of weight x\n"
	"best latency. --layout blocked tunes a model's blocked variant (convolutions in\n"
	"NCHW[x]c, reorders as layout_transform tasks); auto tunes the tasks of both variants\n"
	"with one budget and prints both estimates and the smaller one's layout.\n"
	"Measurements are real (compiled, run and checked on this CPU) or,\n"
	"with --replay, looked up in another store. Shows progress on a terminal; on a pipe\n"
	"prints the record stream.\n"
	"Interrupted runs keep their records and continue with --resume.",
};

/* tune's own options come from the table of tuning options (lib/tune
 * options.c): each is read as text into given[] and set through the table,
 * which also gives its help line and its range. */
#define MAXDESC 64

static struct {
	opt_list task;
	const char *network, *layout, *meta, *given[MAXDESC];
	int64_t run, until;
	ms_cli ms;
	int resume;
} o;

static opt options[MAXDESC + 8];

static const opt fixed_head[] = {
	{ OPT_LIST, "task", 't', &o.task, "TASK", "task to tune (repeatable)" },
	{ OPT_STRING, "network", 0, &o.network, "NAME", "every task of a network (built-in name, TSV file or MODEL.onnx)" },
	{ OPT_STRING, "layout", 0, &o.layout, "L", "with --network MODEL.onnx: nchw (default), blocked, or auto (both, the smaller estimate chosen)" },
	{ OPT_STRING, "meta", 0, &o.meta, "FILE", "a meta-trained model (pretrain-meta) each task fine-tunes: --model-file for meta" },
};
static const opt fixed_tail[] = {
	{ OPT_FLAG, "resume", 0, &o.resume, NULL, "continue the last unfinished tuning run" },
	{ OPT_INT, "run", 0, &o.run, "ID", "with --resume: the run to continue" },
	{ OPT_INT, "until", 0, &o.until, "N", "in place of --trials: tune the tasks with fewer than N trials on the target in the store, with the sum of what they lack as the budget" },
	MS_CLI_OPTIONS(o.ms),
	OPT_END_
};

static void options_build(void)
{
	int n = 0;
	assert(tn_noptdesc <= MAXDESC);
	for (int i = 0; i < ArraySize(fixed_head); i++)
		options[n++] = fixed_head[i];
	for (int i = 0; i < tn_noptdesc; i++) {
		const tn_optdesc *d = &tn_optdescs[i];
		if (!d->flag)
			continue;
		options[n++] = (opt){ OPT_STRING, d->flag, !strcmp(d->flag, "trials") ? 'n' : 0,
		                      &o.given[i], d->argh, d->help };
	}
	for (int i = 0; i < ArraySize(fixed_tail); i++) {
		assert(n < ArraySize(options));
		options[n++] = fixed_tail[i];
	}
}

typedef struct tune_ui {
	tk_ctx *ctx;
	int header;
} tune_ui;

static void on_progress(void *p, const tn_status *s)
{
	tune_ui *u = p;
	char extra[200], eta[32], net[40] = "";
	if (s->net_latency > 0)
		snprintf(net, sizeof net, " net %s", fmt_seconds(eta, s->net_latency));
	snprintf(extra, sizeof extra, "%.30s %.2f %s, %.0f%% invalid%s, ETA %.0fs", s->task,
	         s->best_gflops, s->per_second ? "1/s" : "GFLOPS", 100 * s->invalid, net, s->eta);
	progress_draw(u->ctx, "tune", (double)s->done, (double)s->total, extra);
}

static int on_records(void *p, const char *task, double flops, int64_t hw, int64_t run, int trial0,
                      const ms_result *r, const int64_t *ids, int n)
{
	tune_ui *u = p;
	if (u->ctx->out_tty)
		return 0;
	if (!u->header) {
		printf("id\trun\ttrial\ttask\tconfig\thw\tvalid\terror\tlatency_s\tgflops\n");
		u->header = 1;
	}
	for (int i = 0; i < n; i++) {
		char lat[32] = "", gf[32] = "";
		if (r[i].error == MEAS_OK) {
			snprintf(lat, sizeof lat, "%.9g", r[i].run.median);
			if (flops > 0)
				snprintf(gf, sizeof gf, "%.3f", flops / r[i].run.median * 1e-9);
		}
		printf("%lld\t%lld\t%d\t%s\t%s\t%lld\t%d\t%s\t%s\t%s\n", (long long)ids[i], (long long)run,
		       trial0 + i, task, r[i].config, (long long)hw, r[i].error == MEAS_OK,
		       meas_error_name(r[i].error), lat, gf);
	}
	return fflush(stdout) ? tk_seterr(TK_EIO, "cannot write the record stream") : TK_OK;
}

/* Options given on the command line override the defaults, or the
 * resumed run's parameters except those a run keeps (its search). */
static int apply(tk_ctx *ctx, tn_opts *t, int resuming)
{
	for (int i = 0; i < tn_noptdesc; i++) {
		const tn_optdesc *d = &tn_optdescs[i];
		int rc;
		if (!o.given[i] || (resuming && (d->flags & TN_KEEP)))
			continue;
		if ((rc = tn_opt_set(t, d, o.given[i])))
			return tk_fail(ctx, rc, "--%s: %s", d->flag, tk_errmsg());
	}
	if (o.network && !resuming)
		snprintf(t->network, sizeof t->network, "%s", o.network);
	if (o.meta) {
		const tn_optdesc *d = tn_optdesc_find("model_file");
		int rc;
		if (t->model_file[0] && strcmp(t->model_file, o.meta))
			return tk_fail(ctx, TK_EINVAL, "--meta and --model-file name different files");
		if ((rc = tn_opt_set(t, d, o.meta)))
			return tk_fail(ctx, rc, "--meta: %s", tk_errmsg());
	}
	t->seed = (uint64_t)ctx->common.seed;
	t->ms.jobs = (int)ctx->common.jobs;
	return ms_cli_apply(ctx, &o.ms, &t->ms);
}

/* --model-file builtin: the built-in model nearest the target tg (NULL on
 * a replay), decoded into in->model and meta; *name is what messages call it. */
static int read_builtin(tk_ctx *ctx, const tk_target *tg, tn_stores *in, mf_meta *meta,
                        char *name, size_t size)
{
	int near, rc;
	const cm_builtin *b = tg ? cm_builtin_nearest(tg->cpu, tg->isa, &near) : NULL;
	if (!tg)
		return tk_fail(ctx, TK_EINVAL, "--model-file builtin picks the model of the target's"
		               " CPU and ISA: a replay has none (give the model's file)");
	if (!b)
		return tk_fail(ctx, TK_EINVAL, "no built-in model has %s code (tunekit help models)",
		               tg->isa);
	snprintf(name, size, "built-in model %s", b->name);
	if ((rc = cm_decode(name, b->data, b->len, meta, &in->model)))
		return tk_fail(ctx, rc, NULL);
	if (!ctx->common.quiet)
		fprintf(stderr, "%s: guided by the built-in %s model %s of %s, %s: %s\n", ctx->prog,
		        b->kind, b->name, b->cpu, b->isa, cm_near_name(near));
	return EXIT_OK;
}

/* The model of --model-file into in: its kind and feature kind become
 * the run's --model and --feature, which must agree if they are given. */
static int read_model(tk_ctx *ctx, const tk_target *tg, tn_opts *t, tn_stores *in)
{
	mf_meta meta;
	char name[64];
	const char *path = t->model_file;
	int rc, feat, len;
	if (!strcmp(path, "builtin")) {
		if ((rc = read_builtin(ctx, tg, in, &meta, name, sizeof name)))
			return rc;
		path = name;
	} else if ((rc = cm_read(path, &meta, &in->model))) {
		/* a file that is not a model is bad input, not a corrupt store */
		return tk_fail(ctx, rc == TK_ECORRUPT ? TK_EINVAL : rc, NULL);
	}
	const char *kind = mf_get(&meta, "kind"), *fname = mf_get(&meta, "feature");
	if ((rc = tr_model_features(path, &meta, &feat, &len)))
		return tk_fail(ctx, rc, NULL);
	for (int i = 0; i < tn_noptdesc; i++) {
		const char *key = tn_optdescs[i].key, *want = !strcmp(key, "model") ? kind
		                                             : !strcmp(key, "feature") ? fname : NULL;
		if (want && o.given[i] && strcmp(o.given[i], want))
			return tk_fail(ctx, TK_EINVAL, "--%s %s, but %s is a %s model on %s features",
			               tn_optdescs[i].flag, o.given[i], path, kind, fname);
	}
	if (o.meta && strcmp(kind, "meta"))
		return tk_fail(ctx, TK_EINVAL, "--meta takes a meta model (tunekit pretrain-meta); %s is"
		               " a %s model (give it with --model-file)", path, kind);
	snprintf(t->model, sizeof t->model, "%s", kind);
	snprintf(t->feature, sizeof t->feature, "%s", fname);
	in->model_d = len;
	const char *ops = mf_get(&meta, "operators");
	snprintf(in->model_ops, sizeof in->model_ops, "%s", ops ? ops : "");
	return EXIT_OK;
}

/* --until N: keep the tasks with fewer than N trials on the target in the
 * store; the budget is the sum of what they lack. */
static int top_up(tk_ctx *ctx, tk_store *st, const tk_target *tg, tn_opts *t, int *ntask,
                  char **task, double *weight)
{
	const tn_optdesc *td = tn_optdesc_find("trials");
	if (o.resume || o.until < 1 || t->replay[0] || (td && o.given[td - tn_optdescs]))
		return tk_fail(ctx, TK_EINVAL, "--until N (N >= 1) takes the place of --trials, and"
		               " applies to a new run on a real target (no --resume, no --replay)");
	int64_t lack = 0;
	int k = 0;
	for (int i = 0; i < *ntask; i++) {
		int64_t have;
		int rc = tn_trials_stored(st, tg->key, task[i], &have);
		if (rc)
			return tk_fail(ctx, rc, NULL);
		if (have >= o.until) {
			free(task[i]);
			continue;
		}
		lack += o.until - have;
		task[k] = task[i];
		weight[k++] = weight[i];
	}
	*ntask = k;
	t->trials = lack;
	t->prior = 1;
	return EXIT_OK;
}

static void summary(tk_ctx *ctx, const tn_result *r)
{
	char lat[32];
	if (ctx->common.quiet)
		return;
	fprintf(stderr, "run %lld: %lld trials (%lld invalid)", (long long)r->run_id,
	        (long long)r->trials, (long long)r->invalid);
	if (r->predicted > 0 || r->measured > 0)
		fprintf(stderr, ", %lld measured and %lld answered by the model (adaptive controller)",
		        (long long)r->measured, (long long)r->predicted);
	if (r->bounded > 0)
		fprintf(stderr, ", %lld bounded", (long long)r->bounded);
	if (r->confirmed > 0)
		fprintf(stderr, " and %lld to confirm the fastest", (long long)r->confirmed);
	fprintf(stderr, " in %.1f s", r->seconds);
	if (r->history > 0)
		fprintf(stderr, ", base model from %lld history records", (long long)r->history);
	if (r->other > 0)
		fprintf(stderr, ", %d task%s of operators the model file was not trained on by %s",
		        r->other, r->other == 1 ? "" : "s", r->other_model);
	if (r->guard_batches > 0 && r->guard_scratch == 0)
		fprintf(stderr, ", all %lld batches planned on the model file (%s from scratch never"
		        " ranked the new ones better)", (long long)r->guard_batches, r->guard_model);
	else if (r->guard_batches > 0)
		fprintf(stderr, ", %lld of %lld batches planned on %s from scratch, which ranked the"
		        " new ones better than the model file (the last batch of %d task%s)",
		        (long long)r->guard_scratch, (long long)r->guard_batches, r->guard_model,
		        r->guard_fell, r->guard_fell == 1 ? "" : "s");
	if (r->net_latency > 0)
		fprintf(stderr, ", estimated latency %s", fmt_seconds(lat, r->net_latency));
	fprintf(stderr, "; see 'tunekit report best' and 'tunekit report curve --run %lld'\n",
	        (long long)r->run_id);
}

int cmd_tune(int argc, char **argv, tk_ctx *ctx)
{
	tk_store *st;
	tk_target tg;
	tn_opts t;
	tk_network *nets[2] = { NULL, NULL };
	int rc, ntask = 0, nnet = 0, layout = LAYOUT_NCHW, status = 0;
	char **task = NULL, *run_spec = NULL;
	double *weight = NULL;
	int64_t resume = 0;
	ms_cli_init(&o.ms);
	o.until = INT64_MIN; /* not given */
	options_build();
	if ((rc = opt_parse(ctx, &argc, argv, options, usage)))
		return rc < 0 ? EXIT_OK : rc;
	if (argc > 0)
		return tk_fail(ctx, TK_EINVAL, "unexpected argument '%s'", argv[0]);
	if ((rc = tk_ctx_store(ctx, &st)))
		return rc;
	tn_opts_default(&t);
	t.ms.build_timeout = 30;

	if (o.resume) {
		if (o.task.n || o.network || o.layout)
			return tk_fail(ctx, TK_EINVAL, "--resume continues a run: no --task, --network or --layout");
		if (o.run)
			resume = o.run;
		else if ((rc = store_run_unfinished(st, "tune/", &resume)))
			return tk_fail(ctx, rc, NULL);
		char *params = NULL;
		if ((rc = store_run_params(st, resume, &params)))
			return tk_fail(ctx, rc, NULL);
		if (!params)
			return tk_fail(ctx, TK_EINVAL, "run %lld has no parameters to resume from",
			               (long long)resume);
		rc = tn_opts_parse(params, &t, &ntask, &task, &weight);
		free(params);
		if (rc)
			return tk_fail(ctx, rc, NULL);
		ctx->common.seed = (int64_t)t.seed;
		/* without --target, the target the run was begun on */
		int64_t hw = 0, id;
		if (!ctx->common.target && !t.replay[0] && !store_run_hardware(st, resume, &hw) &&
		    hw > 0 && !store_hardware_find(st, hw, NULL, &id, NULL, &run_spec))
			ctx->common.target = run_spec;
	} else {
		if (o.layout && !o.network)
			return tk_fail(ctx, TK_EINVAL, "--layout applies to --network");
		if (o.network && (rc = net_load_layout(ctx, o.network, o.layout, &layout, nets, &nnet)))
			return rc;
		/* auto: the union of both variants' tasks, each at its larger weight */
		tk_network *net = NULL;
		if (nnet && (rc = net_union((const tk_network *const *)nets, nnet, &net))) {
			status = tk_fail(ctx, rc, NULL);
			goto out;
		}
		ntask = o.task.n + (net ? net->n : 0);
		if (ntask == 0)
			status = tk_fail(ctx, TK_EINVAL, "nothing to tune: give --task or --network");
		else if (!(task = calloc((size_t)ntask, sizeof *task)) ||
		         !(weight = calloc((size_t)ntask, sizeof *weight)))
			status = tk_fail(ctx, TK_ENOMEM, "out of memory");
		for (int i = 0; !status && i < ntask; i++) {
			task[i] = strdup(i < o.task.n ? o.task.v[i] : net->task[i - o.task.n].task);
			weight[i] = i < o.task.n ? 1 : net->task[i - o.task.n].weight;
			if (!task[i])
				status = tk_fail(ctx, TK_ENOMEM, "out of memory");
		}
		net_free(net);
		if (status)
			goto out;
	}
	tn_stores in = { 0 };
	status = apply(ctx, &t, o.resume);
	if (!status && !t.replay[0] && (rc = tk_target_parse(ctx->common.target, &tg)))
		status = tk_fail(ctx, rc, NULL);
	if (!status && o.until != INT64_MIN)
		status = top_up(ctx, st, &tg, &t, &ntask, task, weight);
	if (!status && ntask == 0) {
		if (!ctx->common.quiet)
			fprintf(stderr, "%s: every task has %lld trials on %s in %s: nothing to tune\n",
			        ctx->prog, (long long)o.until, tg.spec, ctx->common.db);
		status = -1; /* done */
	}
	/* the dataset of a replay and the history of transfer learning */
	if (!status && t.model_file[0])
		status = read_model(ctx, t.replay[0] ? NULL : &tg, &t, &in);
	/* --other-model picks a model for what a meta model does not cover */
	const tn_optdesc *od = tn_optdesc_find("other_model");
	if (!status && od && o.given[od - tn_optdescs] && !in.model_ops[0])
		status = tk_fail(ctx, TK_EINVAL, "--other-model applies with a meta model that names"
		                 " its operators (--meta FILE of tunekit pretrain-meta)");
	if (!status && t.replay[0] && (rc = store_open(t.replay, STORE_READONLY, &in.replay)))
		status = tk_fail(ctx, rc, NULL);
	if (!status && t.transfer_from[0] &&
	    (rc = store_open(t.transfer_from, STORE_READONLY, &in.history)))
		status = tk_fail(ctx, rc, NULL);
	const cm_kind *mk = cm_find(t.model);
	if (!status && t.replay[0] && mk && (mk->flags & CM_HIDDEN) && !ctx->common.quiet)
		fprintf(stderr, "%s: replayed measurements have no hidden features: model A is P\n",
		        ctx->prog);
	if (!status) {
		tune_ui ui = { ctx, 0 };
		tn_hooks h = { &ui, on_progress, on_records, &tk_interrupted };
		tn_result res;
		rc = tn_tune(st, &in, t.replay[0] ? NULL : &tg, ntask, task, weight, &t, ctx->cmdline,
		             resume, &h, &res);
		progress_end(ctx);
		if (rc == TK_EINTR) {
			status = tk_fail(ctx, rc, "interrupted: %lld trials of run %lld are stored; continue "
			                 "with 'tunekit tune --resume'", (long long)res.trials,
			                 (long long)res.run_id);
		} else if (rc) {
			status = tk_fail(ctx, rc, NULL);
		} else if (res.run_id == 0) {
			if (!ctx->common.quiet)
				fprintf(stderr, "%s: shard %s of %d tasks and %lld trials has nothing to"
				        " tune\n", ctx->prog, t.shard, ntask, (long long)t.trials);
		} else {
			if (layout == LAYOUT_AUTO)
				res.net_latency = -1; /* the union's sum is no network's */
			summary(ctx, &res);
			int chosen;
			if (layout == LAYOUT_AUTO && !t.shard[0])
				status = layout_choose(ctx, st, res.hw_id, nets, &chosen);
		}
	}
	store_close(in.replay);
	store_close(in.history);
	free(run_spec);
	cm_free(in.model);
out:
	for (int v = 0; v < nnet; v++)
		net_free(nets[v]);
	for (int i = 0; task && i < ntask; i++)
		free(task[i]);
	free(task);
	free(weight);
	free(o.task.v);
	return status < 0 ? EXIT_OK : status;
}
