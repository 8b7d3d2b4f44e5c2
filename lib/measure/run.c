/*
 * run: the measuring harness. Each kernel runs in a forked child so that a
 * crash, a hang or a corrupted heap costs only that child. The child loads
 * the shared object, checks one call against the reference, times the
 * kernel, checks the output again, and sends a run_result back through a
 * pipe; the parent enforces the time limit, turns a death into a
 * MEAS_RUNTIME_CRASH and computes the statistics. The inputs reach the child
 * through fork's copy of the parent's memory; the child never returns into
 * the caller (it leaves with _exit, so no atexit handler or stdio buffer of
 * the parent runs twice).
 */
#define _GNU_SOURCE
#include "run.h"

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

#define RUN_ABI 1
#define RUN_MAXNUMBER 1000000
#define RUN_MAXWS_BYTES (8ULL << 30)  /* workspace limit: 8 GiB */
#define RUN_FLUSH_BYTES (64u << 20)   /* larger than the LLC (35.8 MiB here) */
#define RUN_CANARY 16                 /* floats after the output checked for overruns */

typedef void (*kernel_fn)(float *const *bufs, float *ws);

void run_opts_default(run_opts *o)
{
	assert(o);
	o->number = 0;
	o->repeat = 5;
	o->min_repeat_ms = 10;
	o->warmup = 1;
	o->flush_cache = 0;
	o->timeout_s = 10;
	o->adaptive = 0;
	o->microbatch = 50;
	o->cv = 0.1;
}

int run_opts_evaluator(run_opts *o, const char *name)
{
	if (!strcmp(name, "fixed") || !strcmp(name, "adaptive")) {
		o->adaptive = name[0] == 'a';
		return TK_OK;
	}
	return tk_seterr(TK_EINVAL, "unknown evaluator '%s' (fixed or adaptive)", name);
}

double run_cv(const double *times, int n)
{
	double thr[RUN_MAXREPEAT], s = 0, ss = 0;
	if (n < 2)
		return 0;
	if (n > RUN_MAXREPEAT)
		n = RUN_MAXREPEAT;
	int lo = 0, hi = 0;
	for (int i = 0; i < n; i++) {
		thr[i] = 1 / times[i];
		if (thr[i] < thr[lo]) lo = i;
		if (thr[i] > thr[hi]) hi = i;
	}
	int m = 0;
	for (int i = 0; i < n; i++)
		if (n <= 4 || (i != lo && i != hi))
			s += thr[i], m++;
	double mean = s / m;
	for (int i = 0; i < n; i++)
		if (n <= 4 || (i != lo && i != hi))
			ss += (thr[i] - mean) * (thr[i] - mean);
	return sqrt(ss / m) / mean;
}

/* ---- child ---------------------------------------------------------- */

static const uint32_t canary_bits = 0x7fc0dead; /* a NaN no kernel computes */

/* Check out[] against the reference. Returns 1 if it passes; otherwise puts
 * the first bad element in msg (prefixed with `when`). Raises *max_err. */
static int check_output(const float *out, const run_io *io, const char *when, double *max_err,
                        char *msg, size_t nmsg)
{
	size_t nbad = 0, first = 0;
	double worst = *max_err;
	for (size_t i = 0; i < io->out_n; i++) {
		double o = out[i], d = fabs(o - io->ref[i]);
		double tol = io->rtol * io->refabs[i] + io->atol;
		double e = !isfinite(o) ? INFINITY : tol > 0 ? d / tol : d > 0 ? INFINITY : 0;
		if (e > worst)
			worst = e;
		if (!isfinite(o) || !(d <= tol)) {
			if (nbad++ == 0)
				first = i;
		}
	}
	*max_err = worst;
	for (size_t i = 0; i < RUN_CANARY; i++) {
		uint32_t b;
		memcpy(&b, &out[io->out_n + i], sizeof b);
		if (b != canary_bits) {
			snprintf(msg, nmsg, "wrong answer%s: wrote past the end of the output (out[%zu])",
			         when, io->out_n + i);
			return 0;
		}
	}
	if (!nbad)
		return 1;
	snprintf(msg, nmsg, "wrong answer%s: out[%zu] = %.9g expected %.9g (tolerance %.3g); "
	         "%zu of %zu elements bad", when, first, (double)out[first], io->ref[first],
	         io->rtol * io->refabs[first] + io->atol, nbad, io->out_n);
	return 0;
}

static double time_calls(kernel_fn f, float *const *bufs, float *ws, long n)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		f(bufs, ws);
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
}

/* Evict the caches: write then read a buffer larger than the LLC. */
static volatile unsigned flush_sink;

static void flush_caches(unsigned char *buf, int round)
{
	unsigned s = 0;
	memset(buf, round, RUN_FLUSH_BYTES);
	for (size_t i = 0; i < RUN_FLUSH_BYTES; i += 64)
		s += buf[i];
	flush_sink = s;
}

/* Pin the calling process to the last CPU it may run on. */
static void pin_last_cpu(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) < 0)
		return;
	for (int c = CPU_SETSIZE - 1; c >= 0; c--) {
		if (CPU_ISSET(c, &set)) {
			CPU_ZERO(&set);
			CPU_SET(c, &set);
			sched_setaffinity(0, sizeof set, &set);
			return;
		}
	}
}

static void *aligned_floats(size_t n)
{
	void *p = NULL;
	size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
	if (posix_memalign(&p, 64, bytes ? bytes : 64))
		return NULL;
	return p;
}

/* Check the object before it is loaded: a regular file of ours that no one
 * else may write, with the content the build recorded. Returns a descriptor
 * of it, or -1 with the reason in r->msg. */
static int child_object(const build_job *obj, run_result *r)
{
	struct stat st;
	char got[SHA256_HEX];
	int fd = obj->fd;
	if (fd < 0 && (fd = open(obj->so, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) < 0) {
		snprintf(r->msg, sizeof r->msg, "runtime crash: cannot open %.150s: %s", obj->so,
		         strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		snprintf(r->msg, sizeof r->msg, "runtime crash: refused to load %.150s: not a file "
		         "of yours that only you may write", obj->so);
		return -1;
	}
	if (sha256_fd(fd, got) < 0) {
		snprintf(r->msg, sizeof r->msg, "runtime crash: cannot read %.150s: %s", obj->so,
		         strerror(errno));
		return -1;
	}
	if (strcmp(got, obj->sha256)) {
		snprintf(r->msg, sizeof r->msg, "runtime crash: refused to load %.150s: its content "
		         "is not what was compiled (SHA-256 mismatch)", obj->so);
		return -1;
	}
	return fd;
}

/* Everything the child does before reporting; fills *r (error set on failure). */
static void child_measure(const build_job *obj, const run_io *io,
                          const run_opts *o, run_result *r)
{
	void *dl = NULL;
	float *out = NULL, *ws = NULL;
	float **bufs = NULL;
	unsigned char *flush = NULL;
	const char *so_path = obj->so;
	char fdpath[64];

	r->error = MEAS_RUNTIME_CRASH;
	int fd = child_object(obj, r);
	if (fd < 0)
		goto out;
	/* Load the very file that was checked, not whatever the path names now. */
	snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
	dl = dlopen(fdpath, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		snprintf(r->msg, sizeof r->msg, "runtime crash: dlopen: %s", dlerror());
		goto out;
	}
	const int *abi = dlsym(dl, "tk_abi");
	const unsigned long *wsn = dlsym(dl, "tk_workspace_floats");
	kernel_fn f;
	*(void **)&f = dlsym(dl, "tk_kernel");
	if (!abi || !wsn || !f) {
		snprintf(r->msg, sizeof r->msg, "runtime crash: missing symbol %s in %.150s",
		         !abi ? "tk_abi" : !wsn ? "tk_workspace_floats" : "tk_kernel", so_path);
		goto out;
	}
	if (*abi != RUN_ABI) {
		snprintf(r->msg, sizeof r->msg, "runtime crash: tk_abi is %d, expected %d", *abi,
		         RUN_ABI);
		goto out;
	}
	if (*wsn > RUN_MAXWS_BYTES / sizeof(float)) {
		snprintf(r->msg, sizeof r->msg, "runtime crash: workspace too large (%lu floats)",
		         *wsn);
		goto out;
	}
	out = aligned_floats(io->out_n + RUN_CANARY);
	ws = aligned_floats(*wsn);
	bufs = calloc((size_t)io->nin + 1, sizeof *bufs);
	if (o->flush_cache) {
		flush = mmap(NULL, RUN_FLUSH_BYTES, PROT_READ | PROT_WRITE,
		             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (flush == MAP_FAILED)
			flush = NULL;
	}
	if (!out || !ws || !bufs || (o->flush_cache && !flush)) {
		snprintf(r->msg, sizeof r->msg, "runtime crash: out of memory (output %zu floats, "
		         "workspace %lu floats)", io->out_n, *wsn);
		goto out;
	}
	for (size_t i = 0; i < io->out_n; i++)
		out[i] = NAN;
	for (size_t i = 0; i < RUN_CANARY; i++)
		memcpy(&out[io->out_n + i], &canary_bits, sizeof canary_bits);
	bufs[0] = out;
	for (int i = 0; i < io->nin; i++)
		bufs[i + 1] = (float *)io->in[i];

	f(bufs, ws);
	r->error = MEAS_WRONG_ANSWER;
	if (!check_output(out, io, "", &r->max_err, r->msg, sizeof r->msg))
		goto out;

	for (int i = 0; i < o->warmup; i++)
		f(bufs, ws);
	long number = o->number;
	if (number <= 0) {
		for (number = 1;; number = number * 2 < RUN_MAXNUMBER ? number * 2 : RUN_MAXNUMBER)
			if (number == RUN_MAXNUMBER ||
			    time_calls(f, bufs, ws, number) * 1e3 >= o->min_repeat_ms)
				break;
	}
	if (o->adaptive) {
		/* The cap of number x repeat calls, in at most RUN_MAXREPEAT batches. */
		long cap = number * o->repeat, b = o->microbatch;
		if (b > cap)
			b = cap;
		if (b * RUN_MAXREPEAT < cap)
			b = (cap + RUN_MAXREPEAT - 1) / RUN_MAXREPEAT;
		int k = 0;
		while (k < RUN_MAXREPEAT && (k + 1) * b <= cap) {
			if (flush)
				flush_caches(flush, k);
			r->times[k] = time_calls(f, bufs, ws, b) / (double)b;
			k++;
			if (k >= 3 && run_cv(r->times, k) < o->cv)
				break;
		}
		r->number = (int)b;
		r->nrepeat = k;
	} else {
		r->number = (int)number;
		for (int k = 0; k < o->repeat; k++) {
			if (flush)
				flush_caches(flush, k);
			r->times[k] = time_calls(f, bufs, ws, number) / (double)number;
		}
		r->nrepeat = o->repeat;
	}

	if (!check_output(out, io, " after repeated calls", &r->max_err, r->msg, sizeof r->msg))
		goto out;
	r->error = MEAS_OK;
out:
	/* Freed so that leak checkers see a clean child. The library stays
	 * loaded: dlclose could unload libgomp under its idle worker threads. */
	if (flush)
		munmap(flush, RUN_FLUSH_BYTES);
	free(bufs);
	free(ws);
	free(out);
}

static void write_all(int fd, const void *p, size_t n)
{
	const char *s = p;
	while (n > 0) {
		ssize_t k = write(fd, s, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		s += k;
		n -= (size_t)k;
	}
}

/* The setup of every measuring child: its own process group (so a timeout
 * kills what it started), killed with its parent, no core dumps, a CPU time
 * limit as a backstop, and stdin and stdout on /dev/null so that nothing it
 * prints garbles the caller's output. */
static void child_setup(pid_t parent, double timeout_s, int threads)
{
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	struct rlimit lim = { 0, 0 };
	setrlimit(RLIMIT_CORE, &lim);
	/* Backstop if the parent is gone without killing us: CPU time. */
	getrlimit(RLIMIT_CPU, &lim);
	rlim_t cpu = (rlim_t)ceil(timeout_s * (threads > 1 ? threads : 1)) + 5;
	if (lim.rlim_max == RLIM_INFINITY || cpu < lim.rlim_max) {
		lim.rlim_cur = lim.rlim_max = cpu;
		setrlimit(RLIMIT_CPU, &lim);
	}
	int null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		close(null);
	}
}

/* What run_kernel's child does: pin, set the OpenMP threads, measure. */
typedef struct kernel_job {
	const build_job *obj;
	const tk_target *t;
	const run_io *io;
	const run_opts *o;
} kernel_job;

static void kernel_child(void *ctx, void *buf, size_t size)
{
	const kernel_job *k = ctx;
	assert(size == sizeof(run_result));
	if (k->t->threads == 1)
		pin_last_cpu();
	char n[16];
	snprintf(n, sizeof n, "%d", k->t->threads);
	setenv("OMP_NUM_THREADS", n, 1);
	/* libgomp reads OMP_NUM_THREADS once, when it is loaded: where this
	 * process has it already (libxgboost links it), set the count itself. */
	void (*omp_set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
	if (omp_set)
		omp_set(k->t->threads);
	child_measure(k->obj, k->io, k->o, buf);
}

/* ---- parent --------------------------------------------------------- */

static const char *signal_name(int sig)
{
	static const struct { int sig; const char *name; } tab[] = {
		{ SIGSEGV, "SIGSEGV" }, { SIGBUS, "SIGBUS" }, { SIGFPE, "SIGFPE" },
		{ SIGILL, "SIGILL" }, { SIGABRT, "SIGABRT" }, { SIGKILL, "SIGKILL" },
		{ SIGTERM, "SIGTERM" }, { SIGINT, "SIGINT" }, { SIGXCPU, "SIGXCPU" },
		{ SIGPIPE, "SIGPIPE" }, { SIGTRAP, "SIGTRAP" }, { SIGSYS, "SIGSYS" },
		{ SIGHUP, "SIGHUP" }, { SIGQUIT, "SIGQUIT" }, { SIGALRM, "SIGALRM" },
		{ SIGUSR1, "SIGUSR1" }, { SIGUSR2, "SIGUSR2" }, { SIGXFSZ, "SIGXFSZ" },
	};
	for (int i = 0; i < ArraySize(tab); i++)
		if (tab[i].sig == sig)
			return tab[i].name;
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* mean, sample standard deviation (n-1 in the denominator; 0 when n == 1) and
 * median of r->times[0..nrepeat). */
static void compute_stats(run_result *r)
{
	int n = r->nrepeat;
	r->mean = r->std = r->median = 0;
	if (n <= 0)
		return;
	double s = 0, ss = 0, sorted[RUN_MAXREPEAT];
	for (int i = 0; i < n; i++)
		s += r->times[i];
	r->mean = s / n;
	for (int i = 0; i < n; i++)
		ss += (r->times[i] - r->mean) * (r->times[i] - r->mean);
	r->std = n > 1 ? sqrt(ss / (n - 1)) : 0;
	memcpy(sorted, r->times, n * sizeof *sorted);
	qsort(sorted, n, sizeof *sorted, cmp_double);
	r->median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

int run_call(run_child_fn fn, void *ctx, void *buf, size_t size, double timeout_s,
             int threads, int *error, char *msg, size_t nmsg)
{
	assert(fn && buf && size > 0 && timeout_s > 0 && error && msg && nmsg > 0);
	*error = MEAS_UNKNOWN;
	msg[0] = 0;
	int fd[2];
	if (pipe2(fd, O_CLOEXEC) < 0)
		return tk_seterr(TK_EIO, "cannot start a measurement: pipe: %s", strerror(errno));
	fflush(NULL); /* nothing buffered may be written twice */
	pid_t self = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(fd[0]);
		close(fd[1]);
		return tk_seterr(TK_EIO, "cannot start a measurement: fork: %s", strerror(e));
	}
	if (pid == 0) {
		close(fd[0]);
		child_setup(self, timeout_s, threads);
		memset(buf, 0, size);
		fn(ctx, buf, size);
		write_all(fd[1], buf, size);
		_exit(0);
	}
	setpgid(pid, pid);
	close(fd[1]);

	/* Read the result until it is complete, the child closes the pipe (it
	 * died), or the deadline passes. */
	size_t nread = 0;
	int timed_out = 0;
	double deadline = tk_now() + timeout_s;
	while (nread < size) {
		double left = deadline - tk_now();
		if (left <= 0) {
			timed_out = 1;
			break;
		}
		struct pollfd p = { fd[0], POLLIN, 0 };
		int k = poll(&p, 1, (int)ceil((left < 1000 ? left : 1000) * 1e3));
		if (k < 0 && errno != EINTR)
			break;
		if (k <= 0)
			continue;
		ssize_t m = read(fd[0], (char *)buf + nread, size - nread);
		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0)
			break;
		nread += (size_t)m;
	}
	close(fd[0]);
	if (timed_out) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
	}
	int st = 0;
	pid_t w;
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;

	if (timed_out) {
		*error = MEAS_RUN_TIMEOUT;
		snprintf(msg, nmsg, "run timeout after %g s", timeout_s);
	} else if (nread == size) {
		/* The child reported; its exit status adds nothing (under valgrind it
		 * may be the leak checker's). */
		*error = MEAS_OK;
	} else {
		*error = MEAS_RUNTIME_CRASH;
		if (w != pid) {
			snprintf(msg, nmsg, "runtime crash: child status lost (%s)", strerror(errno));
		} else if (WIFSIGNALED(st)) {
			const char *name = signal_name(WTERMSIG(st));
			if (name)
				snprintf(msg, nmsg, "runtime crash: killed by signal %s (%s)", name,
				         strsignal(WTERMSIG(st)));
			else
				snprintf(msg, nmsg, "runtime crash: killed by signal %d", WTERMSIG(st));
		} else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
			snprintf(msg, nmsg, "runtime crash: exited with status %d", WEXITSTATUS(st));
		} else {
			snprintf(msg, nmsg, "runtime crash: exited without a result (%zu of %zu bytes)",
			         nread, size);
		}
	}
	return TK_OK;
}

int run_kernel(const build_job *obj, const tk_target *t, const run_io *io,
               const run_opts *o, run_result *r)
{
	assert(obj && t && io && o && r);
	assert(o->repeat >= 1 && o->repeat <= RUN_MAXREPEAT && o->number >= 0);
	assert(!o->adaptive || (o->microbatch >= 1 && o->cv >= 0));
	assert(o->timeout_s > 0 && o->warmup >= 0);
	assert(io->out_n > 0 && io->ref && io->refabs && io->nin >= 0);
	assert(t->threads >= 1);

	kernel_job k = { obj, t, io, o };
	run_result got;
	char msg[sizeof r->msg];
	int error, rc;
	memset(r, 0, sizeof *r);
	if ((rc = run_call(kernel_child, &k, &got, sizeof got, o->timeout_s, t->threads, &error,
	                   msg, sizeof msg)))
		return rc;
	if (error == MEAS_OK) {
		*r = got;
		r->msg[sizeof r->msg - 1] = 0;
		if (r->nrepeat < 0 || r->nrepeat > RUN_MAXREPEAT)
			r->nrepeat = 0;
	} else {
		r->error = error;
		snprintf(r->msg, sizeof r->msg, "%s", msg);
	}
	compute_stats(r);
	return TK_OK;
}

/* ---- the measurement lock --------------------------------------------- */

struct run_lock {
	int fd;
	int held;
	double since;      /* wall-clock time it was taken */
	char path[4096];
};

int run_lock_default(char *path, size_t n)
{
	char dir[4000];
	const char *e = getenv("XDG_RUNTIME_DIR");
	if (e && e[0] == '/')
		snprintf(dir, sizeof dir, "%s/tunekit", e);
	else
		snprintf(dir, sizeof dir, "/tmp/tunekit-%u", (unsigned)geteuid());
	int rc = build_private_dir(dir, "measurement lock directory");
	if (rc)
		return rc;
	if ((size_t)snprintf(path, n, "%s/measure.lock", dir) >= n)
		return tk_seterr(TK_EIO, "measurement lock: path too long");
	return TK_OK;
}

int run_lock_open(const char *path, run_lock **out)
{
	*out = NULL;
	run_lock *l = calloc(1, sizeof *l);
	if (!l)
		return tk_seterr(TK_ENOMEM, "out of memory");
	l->fd = -1;
	int rc = TK_OK;
	if (path)
		snprintf(l->path, sizeof l->path, "%s", path);
	else
		rc = run_lock_default(l->path, sizeof l->path);
	if (!rc && strlen(l->path) >= sizeof l->path - 1)
		rc = tk_seterr(TK_EIO, "measurement lock: path too long");
	if (!rc) {
		/* A lock file others may open too (0644), never through a link; one we
		 * can only read still locks. */
		l->fd = open(l->path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
		if (l->fd < 0 && errno == EACCES)
			l->fd = open(l->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat st;
		if (l->fd < 0)
			rc = tk_seterr(TK_EIO, "cannot open the measurement lock %s: %s", l->path,
			               strerror(errno));
		else if (fstat(l->fd, &st) < 0 || !S_ISREG(st.st_mode))
			rc = tk_seterr(TK_EIO, "measurement lock %s is not a regular file", l->path);
	}
	if (rc) {
		run_lock_close(l);
		return rc;
	}
	*out = l;
	return TK_OK;
}

/* The pid written in the lock file by its holder, 0 if none. */
static long lock_holder(const run_lock *l)
{
	char buf[32];
	ssize_t k = pread(l->fd, buf, sizeof buf - 1, 0);
	if (k <= 0)
		return 0;
	buf[k] = 0;
	return strtol(buf, NULL, 10);
}

int run_lock_acquire(run_lock *l, run_wait_fn wait, void *ctx)
{
	assert(l && l->fd >= 0);
	if (l->held)
		return TK_OK;
	double t0 = tk_now(), next_call = 0;
	while (flock(l->fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK)
			return tk_seterr(TK_EIO, "cannot lock %s: %s", l->path, strerror(errno));
		double waited = tk_now() - t0;
		if (wait && waited >= next_call) {
			if (wait(ctx, l->path, waited, lock_holder(l)))
				return tk_seterr(TK_EINTR, "interrupted while waiting for the measurement "
				                 "lock %s", l->path);
			next_call = waited + 0.25;
		}
		struct timespec ts = { 0, 10000000L }; /* 10 ms */
		nanosleep(&ts, NULL);
	}
	l->held = 1;
	l->since = tk_walltime();
	char pid[32];
	int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	if (ftruncate(l->fd, 0) == 0 && pwrite(l->fd, pid, (size_t)n, 0) < 0) {
		/* a read-only lock file: the lock holds, only the holder is unknown */
	}
	return TK_OK;
}

void run_lock_release(run_lock *l)
{
	if (!l || !l->held)
		return;
	const char *log = getenv("TUNEKIT_MEASURE_LOG");
	if (ftruncate(l->fd, 0) < 0) {
		/* read-only lock file: nothing was written */
	}
	if (log && *log) {
		char line[96];
		int n = snprintf(line, sizeof line, "%ld %.6f %.6f\n", (long)getpid(), l->since,
		                 tk_walltime());
		int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			if (write(fd, line, (size_t)n) < 0) {
				/* a diagnostic only */
			}
			close(fd);
		}
	}
	flock(l->fd, LOCK_UN);
	l->held = 0;
}

void run_lock_close(run_lock *l)
{
	if (!l)
		return;
	run_lock_release(l);
	if (l->fd >= 0)
		close(l->fd);
	free(l);
}

const char *run_lock_path(const run_lock *l)
{
	return l->path;
}
