/*
 * help: help on commands, the operators tasks are made of, the targets,
 * the built-in networks, and the cost models, searches and controllers
 * (printed from their tables).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/target.h"
#include "cmd.h"
#include "features/feature.h"
#include "model/builtin.h"
#include "model/cost.h"
#include "search/search.h"
#include "task/network.h"
#include "task/te.h"
#include "train/train.h"
#include "tune/tune.h"

void main_list_commands(FILE *f);
const tk_cmd *main_find_cmd(const char *name);

static const char *const usage[] = {
	"tunekit help [COMMAND | tasks | targets [SPEC...] | networks | models | searches |\n"
	"             controllers]",
	"Without an argument lists the commands. 'help COMMAND' is 'tunekit COMMAND --help';\n"
	"'help tasks' lists the operators and their parameters, 'help targets' the target\n"
	"specs ('help targets SPEC...': the hardware key each spec has on this machine, a\n"
	"line each), 'help networks' the built-in networks, 'help models' the cost models\n"
	"(--model of tune and train), 'help searches' the searches (--search of tune) and\n"
	"'help controllers' the controllers of what tune measures (--controller).",
};

static const opt options[] = { OPT_END_ };

static void help_tasks(void)
{
	printf("A task is OP:key=value,... with integer values; NAME=VALUE below is a default\n"
	       "(NAME=OTHER: the value of OTHER). Parameters after '|' are optional: the\n"
	       "canonical task names them only where they differ from their default.\n\n");
	for (int i = 0; i < te_nops; i++) {
		const te_opdecl *d = &te_ops[i];
		const char *nl = strchr(d->text, '\n');
		int len = nl ? (int)(nl - d->text) - 7 : 0;
		printf("  %-22s %.*s\n  %-22s %s\n", d->name, len > 0 ? len : 0, d->text + 7, "",
		       d->summary);
	}
	printf("\nConvolutions: r x s is the kernel; stride and dilation are the height's,\n"
	       "stride_w and dilation_w the width's; pad is the top padding, pad_l the left,\n"
	       "pad_b the bottom, pad_r the right; groups split the channels.\n"
	       "Examples: conv2d:c=64,h=56,w=56,k=64,pad=1\n"
	       "          conv2d:c=128,h=28,w=28,k=128,pad=1,groups=32     (ResNeXt)\n"
	       "          conv2d:c=192,h=17,w=17,k=192,r=1,s=7,pad_l=3     (Inception-v3)\n");
}

static void help_targets(void)
{
	printf("Kinds of target (--target SPEC):\n");
	for (int i = 0; i < tk_target_nkinds; i++)
		printf("  %s\n      %s%s\n", tk_target_kinds[i].syntax, tk_target_kinds[i].summary,
		       tk_target_kinds[i].flags & TK_TARGET_SIMULATED ? " (simulated)" : "");
	printf("\nnative or cpu:key=value,... with keys\n"
	       "  isa      native, avx512, avx2 or sse2 (default native: the best this CPU has)\n"
	       "  threads  OpenMP threads of the kernels (default 1)\n"
	       "  cc       C compiler command (default cc)\n"
	       "  opt      optimisation flag (default -O3)\n"
	       "Targets that differ in CPU, ISA, compiler version, opt or threads are\n"
	       "distinct hardware in the store; 'native' and its explicit spelling are the same.\n"
	       "Example: cpu:isa=avx2,threads=2\n");
	printf("\nvta-sim:preset=NAME,PARAM=VALUE,... ('vta-sim' alone: preset=default) with\n");
	for (int i = 0; i < vta_npresets; i++)
		printf("  preset=%-8s %s\n", vta_presets_info[i].name, vta_presets_info[i].summary);
	printf("and the parameters (log2), each overriding the preset's value:\n"
	       "  %-18s %5s", "", "range");
	for (int i = 0; i < vta_npresets; i++)
		printf(" %8s", vta_presets_info[i].name);
	printf("\n");
	for (int p = 0; p < VTA_NPARAM; p++) {
		int lo, hi;
		char range[16];
		vta_param_range(p, &lo, &hi);
		snprintf(range, sizeof range, lo == hi ? "%d" : "%d-%d", lo, hi);
		printf("  %-18s %5s", vta_param_names[p], range);
		for (int i = 0; i < vta_npresets; i++)
			printf(" %8d", vta_preset_param(i, p));
		printf("\n");
	}
	printf("Buffers must hold an entry each and fit the board's on-chip RAM. Each\n"
	       "parameter set is distinct hardware, its key 'vta-sim|simulated|...'; latencies\n"
	       "are simulated cycles at the board's clock, and export refuses them.\n"
	       "Example: vta-sim:preset=zcu102,LOG_UOP_BUFF_SIZE=15\n");
}

static void help_networks(void)
{
	for (const char *const *n = net_builtin(); *n; n++) {
		tk_network *net;
		if (net_load(*n, &net))
			continue;
		double w = 0;
		for (int i = 0; i < net->n; i++)
			w += net->task[i].weight;
		printf("  %-20s %3d distinct tasks, %4.0f occurrences\n", *n, net->n, w);
		net_free(net);
	}
}

/* The model table: name, feature kinds (the one it reads by default
 * first), uncertainty, transfer (a base
 * model), the ways tunekit transfer adapts it, summary. */
static void help_models(void)
{
	printf("%-7s %-29s %-11s %-8s %-14s %s\n", "model", "features", "uncertainty", "transfer",
	       "adapts", "summary");
	for (int i = 0; i < cm_nkinds; i++) {
		const cm_kind *k = cm_kinds[i];
		char feats[64] = "";
		size_t len = 0;
		if (k->features) /* the kind it reads by default first */
			len = (size_t)snprintf(feats, sizeof feats, "%s", feat_kind_name(k->feature));
		for (int f = 0; f < FEAT_NKIND; f++)
			if (f != k->feature && (k->features & 1u << f))
				len += (size_t)snprintf(feats + len, sizeof feats - len, ",%s",
				                        feat_kind_name(f));
		char ways[64] = "";
		size_t wl = 0;
		for (int m = 0; m < tr_nmethods; m++)
			if (tr_methods[m].adapt && (k->adapts & (unsigned)tr_methods[m].adapt))
				wl += (size_t)snprintf(ways + wl, sizeof ways - wl, "%s%s", wl ? "," : "",
				                       tr_methods[m].name);
		printf("%-7s %-29s %-11s %-8s %-14s %s\n", k->name, len ? feats : "-",
		       k->flags & CM_UNCERTAINTY ? "yes" : "no", k->flags & CM_TRANSFER ? "yes" : "no",
		       wl ? ways : "-", k->summary);
	}
	if (cm_nbuiltins == 0)
		return;
	/* the built-in models that --model-file builtin chooses from */
	printf("\n%-8s %-6s %-8s %-7s %8s  %s\n", "builtin", "model", "features", "isa", "rows", "cpu");
	for (int i = 0; i < cm_nbuiltins; i++) {
		const cm_builtin *b = &cm_builtins[i];
		printf("%-8s %-6s %-8s %-7s %8d  %s\n", b->name, b->kind, b->feature, b->isa, b->rows,
		       b->cpu);
	}
}

/* The search table: name, what it needs of the model, summary. */
static void help_searches(void)
{
	printf("%-7s %-18s %s\n", "search", "needs", "summary");
	for (int i = 0; i < sr_nkinds; i++) {
		const sr_kind *k = sr_kinds[i];
		const char *needs = k->flags & SR_NEEDS_UNCERTAINTY ? "model+uncertainty"
		                  : k->flags & SR_NEEDS_MODEL ? "model"
		                  : k->plan ? "model or none" : "-";
		printf("%-7s %-18s %s\n", k->name, needs, k->summary);
	}
}

/* The hardware key of each spec on this machine: what records measured
 * with it are kept under (scripts pick their own records by it). */
static int target_keys(tk_ctx *ctx, int n, char **spec)
{
	for (int i = 0; i < n; i++) {
		tk_target t;
		int rc = tk_target_parse(spec[i], &t);
		if (rc)
			return tk_fail(ctx, rc, NULL);
		printf("%s\n", t.key);
	}
	return EXIT_OK;
}

/* The controller table: name, what it needs of the model, summary. */
static void help_controllers(void)
{
	printf("%-10s %-6s %s\n", "controller", "needs", "summary");
	for (int i = 0; i < tn_nctls; i++) {
		const tn_ctl *k = tn_ctls[i];
		printf("%-10s %-6s %s\n", k->name, k->flags & TN_CTL_MODEL ? "model" : "-", k->summary);
	}
}

int cmd_help(int argc, char **argv, tk_ctx *ctx)
{
	int rc;
	if ((rc = opt_parse(ctx, &argc, argv, options, usage)))
		return rc < 0 ? EXIT_OK : rc;
	if (argc > 1 && !strcmp(argv[0], "targets"))
		return target_keys(ctx, argc - 1, argv + 1);
	if (argc > 1)
		return tk_fail(ctx, TK_EINVAL, "expected one topic, got '%s %s'", argv[0], argv[1]);
	if (argc == 0) {
		printf("usage: tunekit COMMAND [OPTIONS] [ARGS]\n\nCommands:\n");
		main_list_commands(stdout);
		printf("\nSee also 'tunekit help tasks', 'tunekit help targets', 'tunekit help networks',\n"
		       "'tunekit help models', 'tunekit help searches', 'tunekit help controllers'\n"
		       "and the manual page tunekit(1).\n");
		return EXIT_OK;
	}
	if (!strcmp(argv[0], "tasks"))
		help_tasks();
	else if (!strcmp(argv[0], "targets"))
		help_targets();
	else if (!strcmp(argv[0], "networks"))
		help_networks();
	else if (!strcmp(argv[0], "models"))
		help_models();
	else if (!strcmp(argv[0], "searches"))
		help_searches();
	else if (!strcmp(argv[0], "controllers"))
		help_controllers();
	else if (!main_find_cmd(argv[0]))
		return tk_fail(ctx, TK_EINVAL, "no help on '%s' (see 'tunekit help')", argv[0]);
	else {
		char self[] = "/proc/self/exe";
		char *args[] = { "tunekit", argv[0], "--help", NULL };
		fflush(stdout);
		execv(self, args);
		return tk_fail(ctx, TK_EINVAL, "no help on '%s'", argv[0]);
	}
	return EXIT_OK;
}
