/*
 * measure: compile, check and time configurations of tasks on this CPU, and
 * record every outcome.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "codegen/kernel.h"
#include "import/onnx.h"
#include "measure/measure.h"
#include "record/record.h"
#include "search/search.h"
#include "store/store_tuning.h"
#include "task/network.h"

static const char *const usage[] = {
	"tunekit measure [--task TASK]... [--network NAME] [--sample N] [--naive]\n"
	"                [--config CONFIG]... [--config -] [OPTIONS]",
	"Compile configurations of each task into kernels, run each kernel in a child process on\n"
	"this CPU, check its output against the reference implementation and time it. Every\n"
	"outcome, valid or not, is recorded in the store under this target's hardware ID. With\n"
	"--config -, TASK<TAB>CONFIG lines (or a record stream with task and config columns) are\n"
	"read from standard input. Prints the records: a table on a terminal, TSV otherwise.\n"
	"With --emit-c, --emit-ir or --emit-sched, prints the kernel instead of measuring it.\n"
	"With --shard I/K, measures the I-th of K shares of the work: every K-th task when there\n"
	"are at least K tasks, else every K-th configuration (see tunekit merge).",
};

static struct {
	opt_list task, config;
	const char *network, *shard;
	int64_t sample, batch;
	ms_cli ms;
	int naive, emit_c, emit_ir, emit_sched;
} o;

static const opt options[] = {
	{ OPT_LIST, "task", 't', &o.task, "TASK", "task to measure, e.g. dense:m=512,n=512,k=512 (repeatable)" },
	{ OPT_STRING, "network", 0, &o.network, "NAME", "every task of a network (built-in name, TSV file or MODEL.onnx)" },
	{ OPT_INT, "sample", 'n', &o.sample, "N", "N distinct random configurations per task" },
	{ OPT_FLAG, "naive", 0, &o.naive, NULL, "also the naive configuration (the plain loop nest)" },
	{ OPT_LIST, "config", 'c', &o.config, "CONFIG", "a configuration, or - to read TASK<TAB>CONFIG lines" },
	{ OPT_FLAG, "emit-c", 0, &o.emit_c, NULL, "print the generated C instead of measuring" },
	{ OPT_FLAG, "emit-ir", 0, &o.emit_ir, NULL, "print the loop-nest IR instead of measuring" },
	{ OPT_FLAG, "emit-sched", 0, &o.emit_sched, NULL, "print the schedule primitives instead of measuring" },
	MS_CLI_OPTIONS(o.ms),
	{ OPT_INT, "batch", 0, &o.batch, "N", "configurations built and committed together (default 16)" },
	{ OPT_STRING, "shard", 0, &o.shard, "I/K", "only the I-th of K shares of the tasks (or of the configurations)" },
	OPT_END_
};

#define MEASURE_MAXSAMPLE 10000000 /* --sample: 1 GB of configurations */

/* One task and the configurations to measure on it. */
typedef struct job {
	char *task;
	ms_task *t;
	int n, cap;
	sp_config *cfg;
	sr_set seen;     /* the indices of cfg[0..n) */
} job;

typedef struct work {
	int n;
	job *job;
} work;

static job *job_for(work *w, const char *task)
{
	for (int i = 0; i < w->n; i++)
		if (!strcmp(w->job[i].task, task))
			return &w->job[i];
	job *j = realloc(w->job, sizeof *j * (size_t)(w->n + 1));
	if (!j)
		return NULL;
	w->job = j;
	j = &w->job[w->n++];
	memset(j, 0, sizeof *j);
	sr_set_init(&j->seen);
	j->task = strdup(task);
	return j->task ? j : NULL;
}

static int add_cfg(job *j, const sp_config *c)
{
	uint64_t idx = sp_index(j->t->space, c);
	if (sr_set_has(&j->seen, idx))
		return 0; /* measured once per call */
	if (j->n == j->cap) {
		int cap = j->cap ? 2 * j->cap : 16;
		sp_config *n = realloc(j->cfg, sizeof *n * (size_t)cap);
		if (!n)
			return -1;
		j->cfg = n;
		j->cap = cap;
	}
	if (sr_set_add(&j->seen, idx))
		return -1;
	j->cfg[j->n++] = *c;
	return 0;
}

/* Open job's task (canonical key) once, for target tg; add configuration
 * text. */
static int add_task(tk_ctx *ctx, work *w, const tk_target *tg, const char *task,
                    const char *config, job **out)
{
	ms_task *t;
	int rc = ms_task_open_target(task, tg, (uint64_t)ctx->common.seed, &t);
	if (rc)
		return tk_fail(ctx, rc, NULL);
	job *j = job_for(w, t->prog->key);
	if (!j) {
		ms_task_free(t);
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	}
	if (j->t)
		ms_task_free(t);
	else
		j->t = t;
	if (config) {
		sp_config c;
		if ((rc = sp_parse(j->t->space, config, &c)))
			return tk_fail(ctx, rc, NULL);
		if (add_cfg(j, &c))
			return tk_fail(ctx, TK_ENOMEM, "out of memory");
	}
	if (out)
		*out = j;
	return 0;
}

static int read_stdin(tk_ctx *ctx, work *w, const tk_target *tg)
{
	rec_stream rs;
	const char *task, *config;
	int64_t id;
	int rc, got;
	rec_stream_init(&rs, stdin, "stdin");
	while ((got = rec_stream_next(&rs, &task, &config, &id)) > 0) {
		if (!task || !config) {
			rec_stream_free(&rs);
			return tk_fail(ctx, TK_EINVAL, "stdin: the stream has no task and config columns");
		}
		if ((rc = add_task(ctx, w, tg, task, config, NULL))) {
			rec_stream_free(&rs);
			return rc;
		}
	}
	rec_stream_free(&rs);
	return got < 0 ? tk_fail(ctx, -got, NULL) : 0;
}

/* On vta-sim: the program of each configuration (--emit-sched); there is
 * no C nor loop nest. */
static int emit_vta(tk_ctx *ctx, job *j)
{
	const ms_vta *v = j->t->vta;
	if (o.emit_c || o.emit_ir)
		return tk_fail(ctx, TK_EINVAL, "--emit-c and --emit-ir need a CPU target: a vta-sim "
		               "configuration is a VTA program (see --emit-sched)");
	for (int i = 0; i < j->n; i++) {
		vta_sched sc;
		vta_prog *prog;
		vta_stats st;
		int status;
		char msg[256];
		tk_sb sb;
		vta_sched_from_config(j->t->space, &j->cfg[i], &sc);
		int rc = vta_lower(&v->hw, &v->shape, &sc, 0, &prog, &st, &status, msg, sizeof msg);
		if (rc)
			return tk_fail(ctx, rc, NULL);
		tk_sb_init(&sb);
		sp_format(&sb, j->t->space, &j->cfg[i]);
		printf("# %s\n# %s\n# threads %d, buffer entries used/size: inp %lld/%lld wgt %lld/%lld "
		       "acc %lld/%lld; %lld micro-ops\n", j->task, sb.s ? sb.s : "", st.threads,
		       (long long)st.used[VTA_BUF_INP], (long long)st.depth[VTA_BUF_INP],
		       (long long)st.used[VTA_BUF_WGT], (long long)st.depth[VTA_BUF_WGT],
		       (long long)st.used[VTA_BUF_ACC], (long long)st.depth[VTA_BUF_ACC],
		       (long long)st.uops);
		tk_sb_clear(&sb);
		if (status) {
			printf("# not compiled: %s\n", msg);
		} else {
			vta_prog_print(&sb, prog, 0);
			fputs(sb.s ? sb.s : "", stdout);
		}
		tk_sb_free(&sb);
		vta_prog_free(prog);
	}
	return 0;
}

static int emit(tk_ctx *ctx, job *j, const tk_target *tg)
{
	if (j->t->vta)
		return emit_vta(ctx, j);
	for (int i = 0; i < j->n; i++) {
		kn_kernel k;
		int rc = kn_build(j->t->space, &j->cfg[i], tg, o.emit_ir, &k);
		if (rc)
			return tk_fail(ctx, rc, NULL);
		if (o.emit_sched)
			printf("# %s\n# %s\n%s", j->task, k.config, k.sched);
		if (!k.src) {
			rc = tk_fail(ctx, TK_EINVAL, "%s [%s]: %s", j->task, k.config, k.why);
			kn_kernel_free(&k);
			return rc;
		}
		if (o.emit_ir) {
			tk_sb sb;
			tk_sb_init(&sb);
			ir_print(&sb, k.ir);
			printf("# %s\n# %s\n%s", j->task, k.config, sb.s ? sb.s : "");
			tk_sb_free(&sb);
		}
		if (o.emit_c)
			fputs(k.src, stdout);
		kn_kernel_free(&k);
	}
	return 0;
}

typedef struct prog_ctx {
	tk_ctx *ctx;
	const char *task;
	int base, total;
} prog_ctx;

static void on_progress(void *p, const char *phase, int done, int total)
{
	prog_ctx *pc = p;
	char label[80];
	snprintf(label, sizeof label, "%.40s %s", pc->task, phase);
	progress_draw(pc->ctx, label, pc->base + (strcmp(phase, "run") ? 0 : done), pc->total, NULL);
}

static const char *const stream_header[] = {
	"id", "run", "trial", "task", "config", "hw", "valid", "error", "latency_s", "gflops",
};

static void stream_row(table *tb, FILE *f, int64_t id, const rec_session *s, int trial,
                       const char *task, const ms_result *r, double flops)
{
	char sid[24], srun[24], strial[24], shw[24], lat[32] = "", gf[32] = "";
	snprintf(sid, sizeof sid, "%lld", (long long)id);
	snprintf(srun, sizeof srun, "%lld", (long long)s->run_id);
	snprintf(strial, sizeof strial, "%d", trial);
	snprintf(shw, sizeof shw, "%lld", (long long)s->hw_id);
	if (r->error == MEAS_OK) {
		if (tb)
			fmt_seconds(lat, r->run.median);
		else
			snprintf(lat, sizeof lat, "%.9g", r->run.median);
		snprintf(gf, sizeof gf, "%.3f", flops / r->run.median * 1e-9);
	}
	const char *cells[] = { sid, srun, strial, task, r->config, shw,
	                        r->error == MEAS_OK ? "1" : "0", meas_error_name(r->error), lat, gf };
	if (tb)
		table_row(tb, cells);
	else
		for (int c = 0; c < ArraySize(cells); c++)
			fprintf(f, "%s%c", cells[c], c == ArraySize(cells) - 1 ? '\n' : '\t');
}

/* Where the run's time went, in run_log as tune logs it (round: the
 * records stored), so that report runs splits a measure run too:
 * seconds:run includes seconds:reference, as ms_time's run_s does. */
static int log_time(rec_session *s, const work *w, double store_s)
{
	static const char *const key[] = { "seconds:codegen", "seconds:compile", "seconds:run",
	                                   "seconds:reference", "seconds:store", "kernels:compiled",
	                                   "kernels:cached" };
	double v[ArraySize(key)] = { 0, 0, 0, 0, store_s, 0, 0 };
	for (int i = 0; i < w->n; i++) {
		const ms_time *t = &w->job[i].t->time;
		v[0] += t->codegen_s;
		v[1] += t->compile_s;
		v[2] += t->run_s;
		v[3] += t->ref_s;
		v[5] += (double)t->compiled;
		v[6] += (double)t->cached;
	}
	for (int i = 0; i < ArraySize(key); i++) {
		int rc = store_run_log(s->store, s->run_id, s->trial, key[i], v[i]);
		if (rc)
			return rc;
	}
	return TK_OK;
}

static int measure_all(tk_ctx *ctx, work *w, const tk_target *tg)
{
	tk_store *st;
	rec_session s;
	int rc;
	if ((rc = tk_ctx_store(ctx, &st)))
		return rc;
	store_hw hw;
	rec_target_hw(tg, &hw);
	if ((rc = rec_begin(&s, st, &hw, ctx->cmdline, "measure", ctx->common.seed, NULL)))
		return tk_fail(ctx, rc, NULL);
	ms_opts mo;
	ms_opts_default(&mo);
	mo.jobs = (int)ctx->common.jobs;
	if ((rc = ms_cli_apply(ctx, &o.ms, &mo)))
		return rc;
	/* the clock, as tune keeps it: report check compares like with like */
	if ((rc = store_run_set_params(st, s.run_id, mo.run.cpu_clock ? "cpu_clock=1" : "cpu_clock=0")))
		return tk_fail(ctx, rc, NULL);
	prog_ctx pc = { .ctx = ctx };
	mo.progress = on_progress;
	mo.ctx = &pc;
	table *tb = ctx->out_tty ? table_new(ArraySize(stream_header), stream_header) : NULL;
	if (!ctx->out_tty) {
		for (int c = 0; c < ArraySize(stream_header); c++)
			printf("%s%c", stream_header[c], c == ArraySize(stream_header) - 1 ? '\n' : '\t');
		fflush(stdout);
	}
	int status = EXIT_OK;
	double store_s = 0;
	for (int ji = 0; ji < w->n && !status; ji++) {
		job *j = &w->job[ji];
		int64_t task_id;
		int nvalid = 0, best = -1;
		double best_lat = 0;
		char *best_cfg = NULL;
		if ((rc = rec_task(&s, j->t->prog, &task_id))) {
			status = tk_fail(ctx, rc, NULL);
			break;
		}
		pc.task = j->task;
		pc.total = j->n;
		for (int b = 0; b < j->n && !status; b += (int)o.batch) {
			int n = j->n - b < o.batch ? j->n - b : (int)o.batch;
			ms_result *r = calloc((size_t)n, sizeof *r);
			int64_t *ids = calloc((size_t)n, sizeof *ids);
			pc.base = b;
			if (!r || !ids)
				rc = tk_seterr(TK_ENOMEM, "out of memory");
			else if (!(rc = ms_measure(j->t, tg, &mo, &j->cfg[b], n, r))) {
				int trial0 = s.trial;
				double t0 = tk_now();
				rc = rec_batch(&s, task_id, r, n, ids);
				store_s += tk_now() - t0;
				for (int i = 0; !rc && i < n; i++) {
					stream_row(tb, stdout, ids[i], &s, trial0 + i, j->task, &r[i], j->t->prog->flops);
					if (r[i].error == MEAS_OK) {
						nvalid++;
						if (best < 0 || r[i].run.median < best_lat) {
							best = b + i;
							best_lat = r[i].run.median;
							free(best_cfg);
							best_cfg = strdup(r[i].config);
						}
					}
				}
				fflush(stdout);
				ms_results_free(r, n);
			}
			free(r);
			free(ids);
			if (rc)
				status = tk_fail(ctx, rc, NULL);
			else if (tk_interrupted)
				status = tk_fail(ctx, TK_EINTR, "interrupted; %d records of this run are stored",
				                 s.trial);
		}
		progress_end(ctx);
		if (!ctx->common.quiet && !status) {
			char lat[32];
			const char *sim = tg->flags & TK_TARGET_SIMULATED ? " (simulated)" : "";
			char gf[32] = "";
			if (best >= 0 && j->t->prog->flops > 0) /* a reorder has no FLOPs */
				snprintf(gf, sizeof gf, " (%.2f GFLOPS)",
				         j->t->prog->flops / best_lat * 1e-9);
			if (best >= 0)
				fprintf(stderr, "%s: %d measured, %d valid, best %s%s%s %s\n", j->task,
				        j->n, nvalid, fmt_seconds(lat, best_lat), sim, gf, best_cfg);
			else
				fprintf(stderr, "%s: %d measured, none valid%s\n", j->task, j->n, sim);
		}
		free(best_cfg);
	}
	/* after an interruption too: the split of what was stored */
	if ((rc = log_time(&s, w, store_s)) && !status)
		status = tk_fail(ctx, rc, NULL);
	if ((rc = rec_end(&s)) && !status)
		status = tk_fail(ctx, rc, NULL);
	if (tb) {
		int prc = table_print(tb, stdout, FMT_TABLE);
		if (!status)
			status = prc;
	}
	return status;
}

static void job_free(job *j)
{
	free(j->task);
	free(j->cfg);
	sr_set_free(&j->seen);
	ms_task_free(j->t);
}

static void work_free(work *w)
{
	for (int i = 0; i < w->n; i++)
		job_free(&w->job[i]);
	free(w->job);
}

/* Keep shard sh of the work: the tasks j with j mod K = I - 1 when there
 * are at least K, else the configurations n (counted over the tasks in
 * order) with n mod K = I - 1. Tasks left without configurations go. */
static void work_shard(work *w, const tk_shard *sh)
{
	int by_task = w->n >= sh->k, kept = 0;
	int64_t n = 0;
	for (int ji = 0; ji < w->n; ji++) {
		job *j = &w->job[ji];
		int nc = 0;
		for (int c = 0; c < j->n; c++, n++)
			if (by_task ? tk_shard_has(sh, ji) : tk_shard_has(sh, n))
				j->cfg[nc++] = j->cfg[c];
		j->n = nc;
		if (nc == 0)
			job_free(j);
		else
			w->job[kept++] = *j;
	}
	w->n = kept;
}

int cmd_measure(int argc, char **argv, tk_ctx *ctx)
{
	work w = { 0 };
	tk_target tg;
	int rc, from_stdin = 0;
	ms_cli_init(&o.ms);
	o.batch = 16;
	if ((rc = opt_parse(ctx, &argc, argv, options, usage)))
		return rc < 0 ? EXIT_OK : rc;
	if (argc > 0)
		return tk_fail(ctx, TK_EINVAL, "unexpected argument '%s'", argv[0]);
	if (o.sample < 0 || o.batch < 1)
		return tk_fail(ctx, TK_EINVAL, "option out of range (see '%s --help')", ctx->prog);
	if (o.sample > MEASURE_MAXSAMPLE)
		return tk_fail(ctx, TK_EINVAL, "--sample %lld: at most %d configurations per task",
		               (long long)o.sample, MEASURE_MAXSAMPLE);
	if ((rc = tk_target_parse(ctx->common.target, &tg)))
		return tk_fail(ctx, rc, NULL);
	tk_shard sh;
	if (o.shard && (rc = tk_shard_parse(o.shard, &sh)))
		return tk_fail(ctx, rc, "--shard: %s", tk_errmsg());

	/* the work list: tasks, then their configurations */
	tk_network *net = NULL;
	if (o.network && (rc = onnx_net_load(o.network, &net)))
		return tk_fail(ctx, rc, NULL);
	int ntask = o.task.n + (net ? net->n : 0);
	for (int i = 0; i < ntask && !rc; i++)
		rc = add_task(ctx, &w, &tg, i < o.task.n ? o.task.v[i] : net->task[i - o.task.n].task,
		              NULL, NULL);
	net_free(net);
	for (int i = 0; i < o.config.n && !rc; i++) {
		if (!strcmp(o.config.v[i], "-")) {
			from_stdin = 1;
			continue;
		}
		if (w.n != 1)
			rc = tk_fail(ctx, TK_EINVAL, "--config CONFIG needs exactly one task");
		else
			rc = add_task(ctx, &w, &tg, w.job[0].task, o.config.v[i], NULL);
	}
	if (!rc && from_stdin)
		rc = read_stdin(ctx, &w, &tg);
	if (!rc && w.n == 0)
		rc = tk_fail(ctx, TK_EINVAL, "nothing to measure: give --task, --network or --config -");
	for (int i = 0; i < w.n && !rc; i++) {
		job *j = &w.job[i];
		sp_config c;
		tk_rng rng;
		if (o.naive) {
			sp_naive(j->t->space, &c);
			if (add_cfg(j, &c))
				rc = tk_fail(ctx, TK_ENOMEM, "out of memory");
		}
		tk_rng_seed(&rng, (uint64_t)ctx->common.seed, tk_hash64(j->task, strlen(j->task), 0));
		uint64_t size = j->t->space->size;
		if (o.sample > 0 && (uint64_t)o.sample >= size) {
			/* the whole space, in index order */
			if (!ctx->common.quiet)
				fprintf(stderr, "%s: %s: --sample %lld is not less than the %llu "
				        "configurations of the space: measuring all of them\n", ctx->prog,
				        j->task, (long long)o.sample, (unsigned long long)size);
			for (uint64_t k = 0; !rc && k < size; k++) {
				sp_from_index(j->t->space, k, &c);
				if (add_cfg(j, &c))
					rc = tk_fail(ctx, TK_ENOMEM, "out of memory");
				else if (tk_interrupted)
					rc = tk_fail(ctx, TK_EINTR, "interrupted while listing configurations; "
					             "nothing measured");
			}
		}
		int64_t want = j->n + (o.sample < (int64_t)size ? o.sample : 0);
		for (int64_t tries = 0; !rc && j->n < want && tries < 100 * want; tries++) {
			sp_sample(j->t->space, &rng, &c);
			if (add_cfg(j, &c))
				rc = tk_fail(ctx, TK_ENOMEM, "out of memory");
			else if (tk_interrupted)
				rc = tk_fail(ctx, TK_EINTR, "interrupted while drawing configurations; "
				             "nothing measured");
		}
		if (!rc && j->n == 0)
			rc = tk_fail(ctx, TK_EINVAL, "%s: no configurations (give --sample, --naive or --config)",
			             j->task);
	}
	if (!rc && o.shard) {
		int ntask = w.n, ncfg = 0;
		tk_store *st;
		for (int i = 0; i < w.n; i++)
			ncfg += w.job[i].n;
		work_shard(&w, &sh);
		/* an empty store all the same, for the merge that follows */
		if (w.n == 0 && !(rc = tk_ctx_store(ctx, &st)) && !ctx->common.quiet)
			fprintf(stderr, "%s: shard %s of %d configurations of %d tasks has nothing to"
			        " measure\n", ctx->prog, o.shard, ncfg, ntask);
	}
	if (!rc && w.n > 0) {
		if (o.emit_c || o.emit_ir || o.emit_sched)
			for (int i = 0; i < w.n && !rc; i++)
				rc = emit(ctx, &w.job[i], &tg);
		else
			rc = measure_all(ctx, &w, &tg);
	}
	work_free(&w);
	free(o.task.v);
	free(o.config.v);
	return rc;
}
