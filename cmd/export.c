/*
 * export: the best configuration of each task on one hardware as C files a
 * program builds without tunekit, with a reference, a test program and a
 * Makefile that check and time them (lib/export/export.h does the work;
 * this file picks the records and reports).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "export/export.h"
#include "import/autotvm.h"
#include "import/onnx.h"
#include "store/store_report.h"
#include "task/network.h"

static const char *const usage[] = {
	"tunekit export [--task TASK]... [--network NAME [--layout nchw|blocked|auto]]\n"
	"               [--hardware ID] [--out DIR] [--autotvm FILE] [OPTIONS]",
	"Write the best valid configuration of each task on one hardware as C into DIR: NAME.c\n"
	"and NAME.h per kernel, and ref_kernels.c, test_kernels.c, Makefile and README.\n"
	"'make -C DIR' builds the kernels with the target's compiler and flags, checks each one\n"
	"against a reference emitted from its tensor expression and times it. Without --task\n"
	"or --network, every task with a valid record on the hardware is exported; a task\n"
	"without one is skipped with a warning. The hardware is that of --target unless\n"
	"--hardware is given. --layout exports a model's blocked variant, reorders included,\n"
	"or (auto) the variant of the smaller estimate. Prints the exported records: a table on a terminal, TSV otherwise.\n"
	"Simulated hardware (vta-sim) has no C to export: refused with exit 1.",
};

static struct {
	opt_list task;
	const char *network, *layout, *out, *autotvm;
	int64_t hardware;
} o;

static const opt options[] = {
	{ OPT_LIST, "task", 't', &o.task, "TASK", "a task to export (repeatable; default: every task with a record)" },
	{ OPT_STRING, "network", 0, &o.network, "NAME", "every task of a network (built-in name, TSV file or MODEL.onnx)" },
	{ OPT_STRING, "layout", 0, &o.layout, "L", "with --network MODEL.onnx: nchw (default), blocked, or auto (the smaller estimate's)" },
	{ OPT_INT, "hardware", 0, &o.hardware, "ID", "records of this hardware id (default: that of --target)" },
	{ OPT_STRING, "out", 'o', &o.out, "DIR", "output directory, created if needed (default kernels)" },
	{ OPT_STRING, "autotvm", 0, &o.autotvm, "FILE", "also write the exported records as an AutoTVM log" },
	OPT_END_
};

/* The canonical keys of the tasks asked for, without repeats. */
typedef struct wanted {
	int n;
	char **key;
} wanted;

static int want_add(tk_ctx *ctx, wanted *w, const char *task)
{
	te_prog *p;
	int rc = te_task_parse(task, &p);
	if (rc)
		return tk_fail(ctx, rc, NULL);
	for (int i = 0; i < w->n; i++)
		if (!strcmp(w->key[i], p->key)) {
			te_prog_free(p);
			return 0;
		}
	char **k = realloc(w->key, sizeof *k * (size_t)(w->n + 1));
	if (k)
		w->key = k;
	if (!k || !(w->key[w->n] = strdup(p->key))) {
		te_prog_free(p);
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	}
	w->n++;
	te_prog_free(p);
	return 0;
}

/* Printed even with -q: a kernel the caller asked for is missing. */
static void warn(tk_ctx *ctx, const char *task, const char *why)
{
	fprintf(stderr, "%s: warning: %s: %s; skipped\n", ctx->prog, task, why);
}

/* The picks to export, in order: those of the wanted tasks, or every
 * template task's. sel[] receives indexes into p[]. */
static int select_picks(tk_ctx *ctx, const wanted *w, const ex_pick *p, int np, int64_t hw,
                        int *sel, int *nsel)
{
	char why[96];
	*nsel = 0;
	snprintf(why, sizeof why, "no valid record on hardware %lld", (long long)hw);
	if (w->n) {
		for (int i = 0; i < w->n; i++) {
			int j;
			for (j = 0; j < np && strcmp(p[j].task, w->key[i]); j++)
				;
			if (j < np)
				sel[(*nsel)++] = j;
			else
				warn(ctx, w->key[i], why);
		}
		return 0;
	}
	for (int j = 0; j < np; j++) {
		te_prog *q;
		if (te_task_parse(p[j].task, &q))
			continue; /* an imported task without a template: nothing to generate */
		te_prog_free(q);
		sel[(*nsel)++] = j;
	}
	return 0;
}

static int write_autotvm(tk_ctx *ctx, tk_store *st, int64_t hw, const ex_kernel *k, int n)
{
	const char **keys = calloc((size_t)n, sizeof *keys);
	int64_t nout = 0;
	if (!keys)
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		keys[i] = k[i].task;
	FILE *f = fopen(o.autotvm, "w");
	if (!f) {
		free(keys);
		return tk_fail(ctx, TK_EIO, "cannot create %s: %s", o.autotvm, strerror(errno));
	}
	int rc = autotvm_export(st, f, hw, keys, n, 1, &nout);
	free(keys);
	if (fclose(f) && !rc)
		return tk_fail(ctx, TK_EIO, "cannot write %s: %s", o.autotvm, strerror(errno));
	if (rc)
		return tk_fail(ctx, rc, NULL);
	return 0;
}

static void print_records(tk_ctx *ctx, const ex_kernel *k, const ex_pick *const *pk, int n,
                          int64_t hw, int *status)
{
	static const char *const hdr[] = {
		"id", "task", "config", "hw", "kernel", "latency_s", "gflops",
	};
	table *t = table_new(ArraySize(hdr), hdr);
	if (!t) {
		*status = tk_fail(ctx, TK_ENOMEM, "out of memory");
		return;
	}
	for (int i = 0; i < n; i++) {
		char id[24], shw[24], lat[32], gf[32];
		snprintf(id, sizeof id, "%lld", (long long)pk[i]->id);
		snprintf(shw, sizeof shw, "%lld", (long long)hw);
		if (ctx->out_tty)
			fmt_seconds(lat, pk[i]->median);
		else
			snprintf(lat, sizeof lat, "%.9g", pk[i]->median);
		snprintf(gf, sizeof gf, "%.3f", k[i].flops / pk[i]->median * 1e-9);
		const char *cells[] = { id, k[i].task, k[i].config, shw, k[i].name, lat, gf };
		table_row(t, cells);
	}
	int prc = table_print(t, stdout, ctx->out_tty ? FMT_TABLE : FMT_TSV);
	if (!*status)
		*status = prc;
}

static int export_all(tk_ctx *ctx, const wanted *w, const tk_target *tg)
{
	tk_store *st;
	int64_t hw = 0;
	char *hw_key = NULL, *spec = NULL;
	ex_pick *p = NULL;
	ex_kernel *k = NULL;
	const ex_pick **pk = NULL;
	int *sel = NULL, np = 0, nsel = 0, n = 0, cap, rc, status = 0;
	const char *dir = o.out ? o.out : "kernels";
	tk_target cg = *tg;

	if ((status = tk_ctx_store(ctx, &st)))
		return status;
	rc = store_hardware_find(st, o.hardware, tg->key, &hw, &hw_key, &spec);
	if (rc == TK_ENOTFOUND && !o.hardware) {
		tk_fail(ctx, rc, "nothing to export: no records of this target (%s) in the store; "
		        "measure first or give --hardware", tg->spec);
		return EXIT_FAIL;
	}
	if (rc)
		return tk_fail(ctx, rc, NULL);
	/* the code is generated for the target that was measured */
	if (o.hardware && spec && (rc = tk_target_parse(spec, &cg))) {
		status = tk_fail(ctx, rc, "hardware %lld (%s): %s", (long long)hw, spec, tk_errmsg());
		goto done;
	}
	if (!(cg.flags & TK_TARGET_EXPORTS)) {
		status = tk_fail(ctx, TK_EUNSUPP, "hardware %lld (%s) is simulated: its configurations "
		                 "are programs for the simulator, not C kernels; nothing to export "
		                 "('tunekit report best' lists them)", (long long)hw, cg.spec);
		goto done;
	}
	if ((rc = ex_best(st, hw, &p, &np))) {
		status = tk_fail(ctx, rc, NULL);
		goto done;
	}
	cap = (w->n > np ? w->n : np) + 1;
	sel = calloc((size_t)cap, sizeof *sel);
	k = calloc((size_t)cap, sizeof *k);
	pk = calloc((size_t)cap, sizeof *pk);
	if (!sel || !k || !pk) {
		status = tk_fail(ctx, TK_ENOMEM, "out of memory");
		goto done;
	}
	select_picks(ctx, w, p, np, hw, sel, &nsel);
	for (int i = 0; i < nsel && !status; i++) {
		const ex_pick *q = &p[sel[i]];
		ex_meta m = { hw_key, q->median, q->id };
		if (tk_interrupted) {
			status = tk_fail(ctx, TK_EINTR, "interrupted; nothing written");
			break;
		}
		rc = ex_kernel_create(q->task, q->config, &cg, &m, &k[n]);
		if (rc == TK_ENOMEM)
			status = tk_fail(ctx, rc, NULL);
		else if (rc)
			warn(ctx, q->task, tk_errmsg());
		else
			pk[n++] = q;
	}
	if (status)
		goto done;
	if (n == 0) {
		tk_fail(ctx, TK_ENOTFOUND, "nothing to export on hardware %lld", (long long)hw);
		status = EXIT_FAIL;
		goto done;
	}
	if ((rc = ex_write_dir(dir, k, n, &cg))) {
		status = tk_fail(ctx, rc, NULL);
		goto done;
	}
	if (o.autotvm && (status = write_autotvm(ctx, st, hw, k, n)))
		goto done;
	print_records(ctx, k, pk, n, hw, &status);
	if (!ctx->common.quiet && !status)
		fprintf(stderr, "%s: %d kernel%s written to %s; build and check with 'make -C %s'\n",
		        ctx->prog, n, n == 1 ? "" : "s", dir, dir);
done:
	for (int i = 0; i < n; i++)
		ex_kernel_free(&k[i]);
	free(k);
	free(pk);
	free(sel);
	ex_picks_free(p, np);
	free(hw_key);
	free(spec);
	return status;
}

int cmd_export(int argc, char **argv, tk_ctx *ctx)
{
	wanted w = { 0 };
	tk_target tg;
	tk_network *net = NULL;
	int rc;
	if ((rc = opt_parse(ctx, &argc, argv, options, usage)))
		return rc < 0 ? EXIT_OK : rc;
	if (argc > 0)
		return tk_fail(ctx, TK_EINVAL, "unexpected argument '%s'", argv[0]);
	if (o.hardware < 0)
		return tk_fail(ctx, TK_EINVAL, "--hardware needs a hardware id (see 'tunekit report runs')");
	if (o.out && !*o.out)
		return tk_fail(ctx, TK_EINVAL, "--out needs a directory");
	if ((rc = tk_target_parse(ctx->common.target, &tg)))
		return tk_fail(ctx, rc, NULL);
	if (!(tg.flags & TK_TARGET_EXPORTS))
		return tk_fail(ctx, TK_EUNSUPP, "%s is simulated: its configurations are programs for "
		               "the simulator, not C kernels; nothing to export ('tunekit report best' "
		               "lists them)", tg.spec);
	if (o.layout && !o.network)
		return tk_fail(ctx, TK_EINVAL, "--layout applies to --network");
	tk_network *nets[2] = { NULL, NULL };
	int nnet = 0, layout, chosen = -1;
	if (o.network && (rc = net_load_layout(ctx, o.network, o.layout, &layout, nets, &nnet)))
		return rc;
	net = nets[0];
	if (nnet == 2) {
		/* auto: the variant of the smaller estimate on the hardware exported */
		tk_store *st;
		int64_t hw = 0;
		if (!(rc = tk_ctx_store(ctx, &st))) {
			int e = store_hardware_find(st, o.hardware, tg.key, &hw, NULL, NULL);
			if (e == TK_ENOTFOUND && !o.hardware) /* as export_all() says it */
				rc = (tk_fail(ctx, e, "nothing to export: no records of this target (%s) in "
				              "the store; measure first or give --hardware", tg.spec), EXIT_FAIL);
			else
				rc = e ? tk_fail(ctx, e, NULL) : layout_choose(ctx, st, hw, nets, &chosen);
		}
		if (!rc && chosen < 0)
			rc = (tk_fail(ctx, TK_EINVAL, "--layout auto: neither variant of %s has every task"
			              " tuned on hardware %lld", o.network, (long long)hw), EXIT_FAIL);
		net = nets[chosen > 0];
		net_free(nets[chosen <= 0]);
		if (rc) {
			net_free(net);
			return rc;
		}
	}
	int ntask = o.task.n + (net ? net->n : 0);
	for (int i = 0; i < ntask && !rc; i++)
		rc = want_add(ctx, &w, i < o.task.n ? o.task.v[i] : net->task[i - o.task.n].task);
	net_free(net);
	if (!rc)
		rc = export_all(ctx, &w, &tg);
	for (int i = 0; i < w.n; i++)
		free(w.key[i]);
	free(w.key);
	free(o.task.v);
	return rc;
}
