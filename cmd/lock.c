/*
 * lock: run a command holding tunekit's measurement lock, so that programs
 * that time code and are not tunekit (benchmark drivers, a BLAS timing)
 * never overlap tunekit's timings, nor each other's. A tunekit the command
 * starts runs under the same hold instead of waiting for it
 * (run_lock_acquire).
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "measure/run.h"

static const char *const usage[] = {
	"tunekit lock [--measure-lock PATH|none] [-q] -- COMMAND [ARG]...",
	"Take the measurement lock that tunekit measure and tune take to time kernels (waiting\n"
	"for it as they do), run COMMAND with it held, release it, and exit with COMMAND's\n"
	"status. A tunekit that COMMAND starts runs under this hold instead of waiting for it.\n"
	"Use it for programs that time code and are not tunekit, so that their timings and\n"
	"tunekit's never overlap.",
};

static struct {
	const char *measure_lock;
} o;

static const opt options[] = {
	{ OPT_STRING, "measure-lock", 0, &o.measure_lock, "PATH", "the lock file, or none (default: tunekit's, one per user)" },
	OPT_END_
};

int cmd_lock(int argc, char **argv, tk_ctx *ctx)
{
	const char *path;
	int rc, nolock, status = 0;
	run_wait_fn wait;
	run_lock *l = NULL;
	if ((rc = opt_parse(ctx, &argc, argv, options, usage)))
		return rc < 0 ? EXIT_OK : rc;
	if (argc < 1)
		return tk_fail(ctx, TK_EINVAL, "no command to run (tunekit lock -- COMMAND [ARG]...)");
	if ((rc = ms_lock_choice(ctx, o.measure_lock, &path, &nolock, &wait)))
		return rc;
	if (!nolock) {
		if ((rc = run_lock_open(path, &l)))
			return tk_fail(ctx, rc, NULL);
		rc = run_lock_acquire(l, wait, ctx);
		progress_end(ctx);
		if (rc) {
			run_lock_close(l);
			return tk_fail(ctx, rc, NULL);
		}
	}
	/* argv was compacted to the operands; run_command needs the NULL */
	argv[argc] = NULL;
	rc = run_command(argv, &status);
	run_lock_close(l);
	if (rc) {
		tk_fail(ctx, rc, NULL);
		return status;
	}
	return status;
}
