/*
 * run: execute one compiled kernel in a child process, check its output
 * against the reference and time it.
 *
 * Kernel ABI (what lib/codegen emits and what hand-written test kernels
 * provide):
 *
 *     const int tk_abi = 1;
 *     const unsigned long tk_workspace_floats = W;   // scratch floats needed
 *     void tk_kernel(float *const *bufs, float *ws); // bufs[0] output,
 *                                                    // bufs[1..] inputs
 *
 * The child is forked per kernel, pinned to one CPU when the target has one
 * thread, limited in time (SIGKILL after timeout_s) and core dumps, fills the
 * output with NaN, calls the kernel once, compares, then times it:
 * `warmup` untimed calls, then `repeat` repeats of `number` calls each
 * (number chosen so a repeat lasts at least min_repeat_ms when number is 0),
 * optionally flushing the caches between repeats. With `adaptive` set (AdaTune's
 * adaptive evaluator) the same number x repeat calls are a cap instead: the
 * calls come in micro-batches of `microbatch`, and timing stops once there are
 * at least 3 and the coefficient of variation of the per-batch throughputs
 * (run_cv) is under `cv`; the result then has number = the batch size and
 * nrepeat = the batches run. With bound_s set (tune's bounded timing), a
 * kernel whose first timed repeat (or micro-batch) already takes more than
 * bound_s a call is not timed further: its result is that one repeat, marked
 * bounded; the output is checked after it all the same. A crash, a hang, a missing
 * symbol or a wrong answer is reported in the result, not as an error of the
 * call. Only one kernel runs at a time.
 *
 * The child loads the object only after checking, on the descriptor it loads
 * it from, that it is a regular file of the user's, writable by no one else,
 * whose content has the SHA-256 the build recorded. Before it loads the
 * object (so before any constructor of it runs) it confines itself (see
 * run.c): its data size may grow by 1 GiB at most and it may map no shared
 * memory (MEAS_MEMORY_LIMIT), a seccomp filter traps creating processes,
 * signalling others, writing files and other calls a kernel has no
 * business making (MEAS_FORBIDDEN), and where the kernel has Landlock the
 * child can change nothing in the filesystem, nor, once the object is
 * loaded, open any file; threads still start.
 *
 * The measurement lock (run_lock_*) keeps timings of several processes from
 * overlapping: a caller holds it while it times kernels, and compiles
 * without it. It is an flock(2) on a file, by default in a private per-user
 * runtime directory, so it serialises one user's tunekit processes; a path
 * every user can open extends it to the whole machine.
 */
#ifndef TK_RUN_H
#define TK_RUN_H

#include <stddef.h>

#include "base/meas.h"
#include "base/target.h"
#include "build.h"

#define RUN_MAXREPEAT 64

typedef struct run_opts {
	int number;           /* calls per repeat; 0 = from min_repeat_ms */
	int repeat;           /* 1..RUN_MAXREPEAT */
	double min_repeat_ms; /* used when number == 0 */
	int warmup;           /* untimed calls after the checked call */
	int flush_cache;      /* write a buffer larger than the LLC between repeats */
	double timeout_s;     /* wall time limit of the whole child */
	int adaptive;         /* stop early on a low coefficient of variation */
	int microbatch;       /* calls per micro-batch of the adaptive evaluator */
	double cv;            /* its stopping threshold */
	int cpu_clock;        /* time the process's CPU time (divided by the target's
	                         threads), not wall time: steadier on a busy machine */
	double bound_s;       /* bounded timing: when the first timed repeat takes
	                         more than this many seconds per call, stop there
	                         (run_result.bounded); 0: time every repeat */
} run_opts;

/* Defaults: number 0, repeat 5, min_repeat_ms 10, warmup 0, no flush,
 * timeout 10 s; fixed evaluator (adaptive: micro-batches of 50, CV 0.1). */
void run_opts_default(run_opts *o);

/* Set o->adaptive from an evaluator name, "fixed" or "adaptive". Returns
 * TK_EINVAL (with the message set) for any other name. */
int run_opts_evaluator(run_opts *o, const char *name);

/* Set o->cpu_clock from a clock name, "wall" or "cpu". Returns TK_EINVAL
 * (with the message set) for any other name. */
int run_opts_clock(run_opts *o, const char *name);

/* Coefficient of variation (population standard deviation over mean) of the
 * throughputs 1/times[i], i < n, with the smallest and largest dropped when
 * n > 4, as AdaTune's code does. 0 when n < 2. */
double run_cv(const double *times, int n);

/* What one task's kernels read and must produce; built once per task by the
 * caller and shared (read-only) by every run. */
typedef struct run_io {
	int nin;                     /* number of inputs */
	const float *const *in;      /* nin input arrays */
	const size_t *in_n;          /* their element counts */
	size_t out_n;                /* output element count */
	const double *ref;           /* out_n expected values */
	const double *refabs;        /* out_n sums of |terms|, the error scale */
	double rtol;                 /* pass iff |out-ref| <= rtol*refabs + atol */
	double atol;
} run_io;

typedef struct run_result {
	int error;                   /* MEAS_OK or MEAS_* failure */
	char msg[256];               /* reason when error != MEAS_OK */
	int number, nrepeat;
	double times[RUN_MAXREPEAT]; /* seconds per call, one per repeat */
	double mean, std, median;    /* over times[] */
	double max_err;              /* worst |out-ref|/(rtol*refabs+atol) seen */
	int bounded;                 /* 1: the first repeat was past run_opts.bound_s,
	                                so it is the one repeat (nrepeat 1) */
} run_result;

/* Run the kernel obj that build_run produced (status BUILD_OK: its path,
 * descriptor and SHA-256; with fd -1 the path is opened). An object that fails
 * its checks is not loaded: the result is a MEAS_RUNTIME_CRASH that says why.
 * Returns TK_OK when *r holds an outcome (valid or not), TK_EIO when no child
 * could be started. Signals do not interrupt it. */
/* The value of tk_workspace_floats in the shared object open on fd, read
 * from the file (its dynamic symbol table and the section the symbol lies
 * in), without loading it: the child allocates the workspace before it
 * loads the object. Returns TK_OK with *nfloat set, TK_EINVAL (with the
 * message set) for a file that is not a 64-bit little-endian ELF object
 * defining the symbol as an 8-byte datum, TK_ENOMEM. Every offset and size
 * read is checked against the file before use. */
int run_object_workspace(int fd, unsigned long *nfloat);

int run_kernel(const build_job *obj, const tk_target *t, const run_io *io,
               const run_opts *o, run_result *r);

/* A function run_call runs in the child: it leaves its result, size bytes,
 * in buf (zeroed before the call). */
typedef void (*run_child_fn)(void *ctx, void *buf, size_t size);

/* Call fn(ctx, buf, size) in a forked child process (its own process group,
 * killed with its caller, no core dumps, standard input and output on
 * /dev/null, CPU time limited to about timeout_s per thread) and copy back
 * the size bytes it leaves in buf. The child sees the caller's memory as it
 * was at the call (fork's copy) and never returns into the caller. Returns
 * TK_OK with *error MEAS_OK (buf holds the child's result), MEAS_RUN_TIMEOUT
 * (killed after timeout_s seconds), MEAS_FORBIDDEN (killed by SIGSYS) or
 * MEAS_RUNTIME_CRASH (it died otherwise; msg says how); TK_EIO when no child could be started. run_kernel is run_call with
 * a child that loads, checks and times a kernel. */
int run_call(run_child_fn fn, void *ctx, void *buf, size_t size, double timeout_s, int threads,
             int *error, char *msg, size_t nmsg);

/* ---- the measurement lock --------------------------------------------- */

typedef struct run_lock run_lock;

/* The default lock file, written to path[n]: $XDG_RUNTIME_DIR/tunekit/
 * measure.lock when XDG_RUNTIME_DIR is an absolute path, else
 * /tmp/tunekit-<uid>/measure.lock; the directory is created (0700) and must
 * be private (build_private_dir). TK_OK, or TK_EIO with the reason. */
int run_lock_default(char *path, size_t n);

/* Open (creating it if needed, never through a symbolic link) the lock file
 * path, or the default one when path is NULL. TK_OK with *out set (free with
 * run_lock_close), TK_EIO, TK_ENOMEM. */
int run_lock_open(const char *path, run_lock **out);

/* Called about four times a second while run_lock_acquire waits: waited_s
 * so far, holder the process that holds the lock (0 if unknown). A non-zero
 * return stops the wait. */
typedef int (*run_wait_fn)(void *ctx, const char *path, double waited_s, long holder);

/* Take the lock, waiting as long as another process holds it. wait may be
 * NULL. A lock whose holder (the pid in the file) is an ancestor of this
 * process counts as held at once: that is `tunekit lock -- CMD` holding it
 * for CMD, which waits for us (releasing it then does nothing). Returns
 * TK_OK (held: the caller's pid is in the file, or an ancestor's), TK_EINTR
 * when wait asked to stop, TK_EIO. */
int run_lock_acquire(run_lock *l, run_wait_fn wait, void *ctx);
/* Release a held lock; no-op if not held. */
void run_lock_release(run_lock *l);
/* Release and close; l may be NULL. */
void run_lock_close(run_lock *l);
/* The path of the lock file (owned by l). */
const char *run_lock_path(const run_lock *l);

/* Run argv[0] (searched in PATH) with arguments argv (NULL-terminated) in a
 * child process with this process's standard streams and environment, and
 * wait for it; its exit status into *status (128 + N if signal N killed it).
 * Returns TK_OK; TK_ENOTFOUND (*status 127) or TK_EIO (*status 126 when it
 * could not be executed, else 0) with the reason when it did not run. Holds
 * nothing across the call: a run_lock the caller holds stays held, and the
 * lock's descriptor is not passed on (close-on-exec). */
int run_command(char *const *argv, int *status);

#endif
