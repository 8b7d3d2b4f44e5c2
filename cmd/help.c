/*
 * help: help on commands, the operators tasks are made of, the targets
 * and the built-in networks.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "task/network.h"
#include "task/te.h"

void main_list_commands(FILE *f);
const tk_cmd *main_find_cmd(const char *name);

static const char *const usage[] = {
	"tunekit help [COMMAND | tasks | targets | networks]",
	"Without an argument lists the commands. 'help COMMAND' is 'tunekit COMMAND --help';\n"
	"'help tasks' lists the operators and their parameters, 'help targets' the target\n"
	"specs, 'help networks' the built-in networks.",
};

static const opt options[] = { OPT_END_ };

static void help_tasks(void)
{
	printf("A task is OP:key=value,... with integer values; NAME=VALUE below is a default.\n\n");
	for (int i = 0; i < te_nops; i++) {
		const te_opdecl *d = &te_ops[i];
		const char *nl = strchr(d->text, '\n');
		int len = nl ? (int)(nl - d->text) - 7 : 0;
		printf("  %-22s %.*s\n  %-22s %s\n", d->name, len > 0 ? len : 0, d->text + 7, "",
		       d->summary);
	}
	printf("\nExample: conv2d:c=64,h=56,w=56,k=64,pad=1\n");
}

static void help_targets(void)
{
	printf("A target is 'native' or cpu:key=value,... with keys\n"
	       "  isa      native, avx512, avx2 or sse2 (default native: the best this CPU has)\n"
	       "  threads  OpenMP threads of the kernels (default 1)\n"
	       "  cc       C compiler command (default cc)\n"
	       "  opt      optimisation flag (default -O3)\n"
	       "Targets that differ in CPU, ISA, compiler version, opt or threads are\n"
	       "distinct hardware in the store; 'native' and its explicit spelling are the same.\n"
	       "Example: cpu:isa=avx2,threads=2\n");
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

int cmd_help(int argc, char **argv, tk_ctx *ctx)
{
	int rc;
	if ((rc = opt_parse(ctx, &argc, argv, options, usage)))
		return rc < 0 ? EXIT_OK : rc;
	if (argc > 1)
		return tk_fail(ctx, TK_EINVAL, "expected one topic, got '%s %s'", argv[0], argv[1]);
	if (argc == 0) {
		printf("usage: tunekit COMMAND [OPTIONS] [ARGS]\n\nCommands:\n");
		main_list_commands(stdout);
		printf("\nSee also 'tunekit help tasks', 'tunekit help targets', 'tunekit help networks'\n"
		       "and the manual page tunekit(1).\n");
		return EXIT_OK;
	}
	if (!strcmp(argv[0], "tasks"))
		help_tasks();
	else if (!strcmp(argv[0], "targets"))
		help_targets();
	else if (!strcmp(argv[0], "networks"))
		help_networks();
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
