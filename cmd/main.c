/*
 * main: the tunekit binary. One sorted command table; the dispatcher finds
 * the command (from argv[1], or from argv[0] when invoked through a link
 * named tunekit-CMD), sets up what every command shares (defaults of the
 * common options, signals, terminal detection, the command line for the
 * run table) and calls it. The store is opened lazily by tk_ctx_store()
 * with the access the table entry asks for.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "nn/nn.h"

int cmd_cache(int argc, char **argv, tk_ctx *ctx);
int cmd_export(int argc, char **argv, tk_ctx *ctx);
int cmd_extract_features(int argc, char **argv, tk_ctx *ctx);
int cmd_help(int argc, char **argv, tk_ctx *ctx);
int cmd_import(int argc, char **argv, tk_ctx *ctx);
int cmd_lock(int argc, char **argv, tk_ctx *ctx);
int cmd_measure(int argc, char **argv, tk_ctx *ctx);
int cmd_merge(int argc, char **argv, tk_ctx *ctx);
int cmd_pretrain_meta(int argc, char **argv, tk_ctx *ctx);
int cmd_report(int argc, char **argv, tk_ctx *ctx);
int cmd_train(int argc, char **argv, tk_ctx *ctx);
int cmd_transfer(int argc, char **argv, tk_ctx *ctx);
int cmd_tune(int argc, char **argv, tk_ctx *ctx);

/* Sorted by name. */
static const tk_cmd commands[] = {
	{ "cache", cmd_cache, 0, "show and clean the compiled-kernel cache" },
	{ "export", cmd_export, NEEDS_STORE, "the best kernels as C files with a reference, test program and Makefile" },
	{ "extract-features", cmd_extract_features, NEEDS_STORE | STORE_WRITE, "feature vectors of stored configurations for cost models" },
	{ "help", cmd_help, 0, "help on commands, operators, targets and networks" },
	{ "import", cmd_import, NEEDS_STORE | STORE_WRITE, "records of other tuners (Kernel Tuner, AutoTVM); the tasks of ONNX models" },
	{ "lock", cmd_lock, 0, "run a command holding the measurement lock" },
	{ "measure", cmd_measure, NEEDS_STORE | STORE_WRITE,
	  "compile, check and time configurations on this CPU" },
	{ "merge", cmd_merge, 0, "merge the record stores of many machines or shards into one" },
	{ "pretrain-meta", cmd_pretrain_meta, NEEDS_STORE | STORE_WRITE | USES_BLAS,
	  "meta-train MetaTune's cost model (MAML) on a dataset store" },
	{ "report", cmd_report, NEEDS_STORE, "best configurations and runs in the store" },
	{ "train", cmd_train, NEEDS_STORE | STORE_WRITE | USES_BLAS, "train a cost model on stored records and measure it on held-out tasks" },
	{ "transfer", cmd_transfer, NEEDS_STORE | STORE_WRITE | USES_BLAS, "adapt a trained cost model to other hardware: Moses, fine-tuning, xgb warm start" },
	{ "tune", cmd_tune, NEEDS_STORE | STORE_WRITE | USES_BLAS, "tune tasks or a network with a learned cost model" },
};

const tk_cmd *main_find_cmd(const char *name);

const tk_cmd *main_find_cmd(const char *name)
{
	int lo = 0, hi = ArraySize(commands) - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2, c = strcmp(name, commands[mid].name);
		if (!c)
			return &commands[mid];
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return NULL;
}

void main_list_commands(FILE *f)
{
	for (int i = 0; i < ArraySize(commands); i++)
		fprintf(f, "  %-18s %s\n", commands[i].name, commands[i].summary);
}

static void on_signal(int sig)
{
	if (tk_interrupted) {
		/* second signal: give up at once, with the status the manual gives
		 * for an interruption (what was committed is kept, as after the
		 * first) */
		_exit(EXIT_INTR);
	}
	tk_interrupted = 1;
}

static char *join_argv(int argc, char **argv)
{
	tk_sb sb;
	tk_sb_init(&sb);
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		int quote = !*a || strpbrk(a, " \t\n'\"$;|&<>*?()") != NULL;
		if (i)
			tk_sb_putc(&sb, ' ');
		if (!quote) {
			tk_sb_puts(&sb, a);
			continue;
		}
		tk_sb_putc(&sb, '\'');
		for (; *a; a++) {
			if (*a == '\'')
				tk_sb_puts(&sb, "'\\''");
			else
				tk_sb_putc(&sb, *a);
		}
		tk_sb_putc(&sb, '\'');
	}
	return tk_sb_take(&sb);
}

/* OpenBLAS chose its kernels when the binary loaded. Where it fell back to
 * kernels without AVX2 on a CPU newer than the library, start again with
 * $OPENBLAS_CORETYPE naming the core this CPU has (never over a value the
 * user set); if the exec fails, go on with the kernels there are. */
static void blas_core_fix(char **argv)
{
	const char *core;
	if (getenv("OPENBLAS_CORETYPE") || !(core = nn_blas_core_want()))
		return;
	if (setenv("OPENBLAS_CORETYPE", core, 1) == 0)
		execv("/proc/self/exe", argv);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: tunekit COMMAND [OPTIONS] [ARGS]\n"
	           "       tunekit --version\n\n"
	           "Auto-tuning of tensor programs on this machine. Commands:\n\n");
	main_list_commands(f);
	fprintf(f, "\n'tunekit help COMMAND' or 'tunekit COMMAND --help' for details;\n"
	           "'tunekit help tasks' lists the operators, 'tunekit help targets' the targets.\n");
}

int main(int argc, char **argv)
{
	const char *base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	const tk_cmd *cmd = NULL;
	int shift = 1;

	if (!strncmp(base, "tunekit-", 8) && (cmd = main_find_cmd(base + 8)))
		shift = 0;
	else if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	} else if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		blas_core_fix(argv);
		printf("tunekit %s\nOpenBLAS core %s\n", TK_VERSION, nn_blas_core());
		return EXIT_OK;
	} else if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return EXIT_OK;
	} else if (!(cmd = main_find_cmd(argv[1]))) {
		fprintf(stderr, "tunekit: '%s' is not a tunekit command (see 'tunekit help')\n", argv[1]);
		return EXIT_USAGE;
	}

	if (cmd->flags & USES_BLAS)
		blas_core_fix(argv);
	tk_ctx ctx;
	char prog[64];
	memset(&ctx, 0, sizeof ctx);
	snprintf(prog, sizeof prog, "tunekit %s", cmd->name);
	ctx.cmd = cmd;
	ctx.prog = prog;
	ctx.common.db = getenv("TUNEKIT_DB") && *getenv("TUNEKIT_DB") ? getenv("TUNEKIT_DB")
	                                                              : "tunekit.db";
	ctx.common.seed = 1;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	ctx.common.jobs = ncpu < 1 ? 1 : ncpu > 256 ? 256 : ncpu;
	ctx.out_tty = isatty(1);
	ctx.err_tty = isatty(2);
	ctx.cmdline = join_argv(argc, argv);

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	int rc = cmd->fn(argc - shift, argv + shift, &ctx);
	store_close(ctx.store);
	free(ctx.cmdline);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: error writing standard output\n", prog);
		if (!rc)
			rc = EXIT_FAIL;
	}
	return rc;
}
