/*
 * run: the measuring harness. Each kernel runs in a forked child so that a
 * crash, a hang or a corrupted heap costs only that child. The child
 * confines itself, loads the shared object, checks one call against the
 * reference, times the kernel, checks the output again, and sends a run_result back through a
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
#include <elf.h>
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
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#define RUN_SECCOMP 1
#if defined(__x86_64__)
#define RUN_AUDIT_ARCH AUDIT_ARCH_X86_64
#else
#define RUN_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif
#endif

#if defined(__linux__) && defined(__has_include)
#if __has_include(<linux/landlock.h>) && defined(__NR_landlock_create_ruleset)
#include <linux/landlock.h>
#define RUN_LANDLOCK 1
#endif
#endif

/* Built with AddressSanitizer (check-asan), a measuring child runs no
 * leak check when a kernel calls exit(): it is a fork of a process with
 * other threads, whose stacks it lacks (what only they point to would be
 * reported as leaked), and the check stops the process from a clone with
 * ptrace, which the child's filter traps. LeakSanitizer asks this hook
 * at exit. */
#if defined(__SANITIZE_ADDRESS__)
#define RUN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RUN_ASAN 1
#endif
#endif
#ifdef RUN_ASAN
static int run_child_noleakcheck;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return run_child_noleakcheck;
}
#endif

#define RUN_ABI 1
#define RUN_MAXNUMBER 1000000
#define RUN_MAXWS_BYTES (8ULL << 30)  /* workspace limit: 8 GiB */
#define RUN_FLUSH_BYTES (64u << 20)   /* larger than the LLC (35.8 MiB here) */
#define RUN_CANARY 16                 /* floats after the output checked for overruns */
#define RUN_MEM_HEADROOM (1ULL << 30) /* memory a kernel may add to the harness's: 1 GiB */

typedef void (*kernel_fn)(float *const *bufs, float *ws);

void run_opts_default(run_opts *o)
{
	assert(o);
	o->number = 0;
	o->repeat = 5;
	o->min_repeat_ms = 10;
	/* The checked call warms what a warm-up call would: the call after it
	 * takes what a repeat does (median ratio 1.00 over 64 kernels of
	 * two tunes), so a warm-up call by default is time thrown away. */
	o->warmup = 0;
	o->flush_cache = 0;
	o->timeout_s = 10;
	o->adaptive = 0;
	o->microbatch = 50;
	o->cv = 0.1;
	o->cpu_clock = 0;
	o->bound_s = 0;
}

int run_opts_clock(run_opts *o, const char *name)
{
	if (!strcmp(name, "wall") || !strcmp(name, "cpu")) {
		o->cpu_clock = name[0] == 'c';
		return TK_OK;
	}
	return tk_seterr(TK_EINVAL, "unknown clock '%s' (wall or cpu)", name);
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

/* The clock of time_calls, and what its differences are divided by: wall
 * time, or the process's CPU time over the target's threads (set by
 * kernel_child in the measuring child). */
static clockid_t time_clock = CLOCK_MONOTONIC;
static double time_div = 1;

static double time_calls(kernel_fn f, float *const *bufs, float *ws, long n)
{
	struct timespec a, b;
	clock_gettime(time_clock, &a);
	for (long i = 0; i < n; i++)
		f(bufs, ws);
	clock_gettime(time_clock, &b);
	return ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9) / time_div;
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

/* ---- the kernel's workspace, read from its object ---------------------- */

/* Read n bytes at off of fd into buf; 0, or -1 if the file is shorter. */
static int pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	char *p = buf;
	while (n > 0) {
		ssize_t k = pread(fd, p, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

#define RUN_ELF_MAXTAB (64u << 20) /* largest symbol or string table read */

int run_object_workspace(int fd, unsigned long *nfloat)
{
	assert(fd >= 0 && nfloat);
	static const char want[] = "tk_workspace_floats";
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	Elf64_Sym *sym = NULL;
	char *str = NULL;
	struct stat st;
	int rc = TK_OK;
	*nfloat = 0;
	if (fstat(fd, &st) < 0 || pread_all(fd, &eh, sizeof eh, 0) < 0 ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof *sh ||
	    eh.e_shnum == 0 || eh.e_shoff > (uint64_t)st.st_size ||
	    (uint64_t)eh.e_shnum * sizeof *sh > (uint64_t)st.st_size - eh.e_shoff)
		return tk_seterr(TK_EINVAL, "not a 64-bit little-endian ELF object with sections");
	uint64_t size = (uint64_t)st.st_size;
	if (!(sh = malloc((size_t)eh.e_shnum * sizeof *sh)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	if (pread_all(fd, sh, (size_t)eh.e_shnum * sizeof *sh, eh.e_shoff) < 0) {
		rc = tk_seterr(TK_EINVAL, "its section headers cannot be read");
		goto out;
	}
	int isym = -1;
	for (int i = 0; i < eh.e_shnum && isym < 0; i++)
		if (sh[i].sh_type == SHT_DYNSYM)
			isym = i;
	if (isym < 0 || sh[isym].sh_link >= eh.e_shnum || sh[isym].sh_entsize != sizeof *sym ||
	    sh[sh[isym].sh_link].sh_type != SHT_STRTAB) {
		rc = tk_seterr(TK_EINVAL, "it has no dynamic symbol table");
		goto out;
	}
	const Elf64_Shdr *ss = &sh[isym], *sstr = &sh[ss->sh_link];
	if (ss->sh_size > RUN_ELF_MAXTAB || sstr->sh_size > RUN_ELF_MAXTAB ||
	    ss->sh_offset > size || ss->sh_size > size - ss->sh_offset ||
	    sstr->sh_offset > size || sstr->sh_size > size - sstr->sh_offset) {
		rc = tk_seterr(TK_EINVAL, "its dynamic symbol table lies outside the file");
		goto out;
	}
	size_t nsym = (size_t)(ss->sh_size / sizeof *sym), nstr = (size_t)sstr->sh_size;
	sym = malloc(nsym ? nsym * sizeof *sym : 1);
	str = malloc(nstr + 1);
	if (!sym || !str) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto out;
	}
	if (pread_all(fd, sym, nsym * sizeof *sym, ss->sh_offset) < 0 ||
	    pread_all(fd, str, nstr, sstr->sh_offset) < 0) {
		rc = tk_seterr(TK_EINVAL, "its dynamic symbol table cannot be read");
		goto out;
	}
	str[nstr] = 0;
	size_t k;
	for (k = 0; k < nsym; k++)
		if (sym[k].st_name < nstr && !strcmp(str + sym[k].st_name, want) &&
		    sym[k].st_shndx != SHN_UNDEF)
			break;
	if (k == nsym) {
		rc = tk_seterr(TK_EINVAL, "it defines no %s", want);
		goto out;
	}
	const Elf64_Sym *s = &sym[k];
	const Elf64_Shdr *sec = s->st_shndx < eh.e_shnum ? &sh[s->st_shndx] : NULL;
	unsigned long v = 0;
	if (!sec || s->st_size != sizeof v || s->st_value < sec->sh_addr ||
	    s->st_value - sec->sh_addr > sec->sh_size ||
	    sec->sh_size - (s->st_value - sec->sh_addr) < sizeof v) {
		rc = tk_seterr(TK_EINVAL, "its %s is not an unsigned long of a section", want);
		goto out;
	}
	if (sec->sh_type != SHT_NOBITS) {
		uint64_t off = sec->sh_offset + (s->st_value - sec->sh_addr);
		if (sec->sh_offset > size || off > size - sizeof v ||
		    pread_all(fd, &v, sizeof v, off) < 0) {
			rc = tk_seterr(TK_EINVAL, "its %s lies outside the file", want);
			goto out;
		}
	}
	*nfloat = v;
out:
	free(sh);
	free(sym);
	free(str);
	return rc;
}

/* ---- the child's confinement ------------------------------------------ */

/* The measuring child confines itself before it loads the kernel's library
 * (whose constructors, IFUNC resolvers and libraries run code as it is
 * loaded), so that a kernel that runs away harms nothing but the child and
 * is recorded with a reason of its own. It first allocates what the
 * kernel is given (the output, the workspace, whose size it reads from the
 * object file, not from the loaded library) and closes every descriptor
 * but the result pipe, stderr and the object's; then:
 *
 *  - Memory: RLIMIT_DATA is set to what the child has mapped (its copy of
 *    the inputs, the output, the workspace, the libraries) plus
 *    RUN_MEM_HEADROOM. AddressSanitizer's shadow counts as data, so the
 *    limit holds under it too (RLIMIT_AS would not: the shadow is terabytes
 *    of address space). One mapping larger than the headroom (malloc of 8
 *    GiB) is refused by the seccomp filter below and reported as
 *    MEAS_MEMORY_LIMIT; memory taken piece by piece (malloc, mmap, or
 *    mremap growing a mapping) ends with an allocation that fails, and a
 *    SIGSEGV or SIGBUS while the data size is within an eighth of the
 *    headroom of the limit is reported as MEAS_MEMORY_LIMIT too. Shared
 *    memory, which RLIMIT_DATA does not count (mmap with MAP_SHARED,
 *    memfd_create, System V shared memory), is refused by the filter, also
 *    MEAS_MEMORY_LIMIT. The limit cannot be raised: setrlimit and prlimit64
 *    with a new limit are trapped.
 *  - System calls: a seccomp-BPF filter traps the calls a compute kernel has
 *    no business making: creating a process (fork, vfork, clone without
 *    CLONE_THREAD, execve), signalling or tracing another process, sockets,
 *    mounts, modules, reboot, namespaces, session and group changes,
 *    io_uring (whose operations no filter sees), and changes to the
 *    filesystem: open and openat for writing, creat, and creating,
 *    removing, renaming, linking, truncating or changing the mode or owner
 *    of a file. Root ignores RLIMIT_NPROC; the filter holds for root too.
 *    A trapped call ends the child with MEAS_FORBIDDEN naming the call.
 *    clone3 and openat2 fail with ENOSYS (their flags are behind a pointer
 *    the filter cannot read), so pthread_create falls back to clone, where
 *    CLONE_THREAD is checked: OpenMP and pthread workers still start.
 *  - The filesystem: where the kernel has Landlock, the child also denies
 *    itself every change to the filesystem before it loads the library,
 *    and once the library is loaded, every access: from then on it can
 *    open no file at all, not even for reading.
 *
 * In a build with AddressSanitizer the filter is the same: the child
 * runs no leak check (see RUN_ASAN); the child may still read files once
 * the kernel is loaded (the sanitizer reads /proc/self/maps).
 *
 * A forbidden call is not trapped in the child but stops the thread that
 * made it and notifies the parent (SECCOMP_RET_USER_NOTIF; the child sends
 * the filter's listener over a socket run_call made, before it loads the
 * kernel), which reads the call and its arguments, names it and kills the
 * child: a signal in the child could be blocked (posix_spawn and system
 * block them all before they clone) or handled by the kernel itself.
 * Where that cannot be set up, and for the memory rules, the filter traps
 * instead: signal handlers write the result to the pipe themselves and
 * leave with _exit, and which rule trapped comes with the signal (the
 * filter's SECCOMP_RET_DATA, as si_errno). Where no filter can be
 * installed (no seccomp, another architecture), the child measures
 * unconfined. */

static int child_pipe = -1;          /* the result pipe, in a child of run_call */
static int child_notify = -1;        /* the socket to send the filter's listener on */
static int child_status = -1;        /* /proc/self/status, opened before Landlock */
static run_result *child_result;     /* the result a trap handler fills */
static unsigned long long child_data_limit; /* RLIMIT_DATA set, 0 if none */
static int child_trapped;            /* one handler reports, the others wait */
static char child_altstack[1 << 16]; /* handlers run here: the stack may be gone */

/* Append s to buf[*n..cap) (async-signal-safe). */
static void sig_puts(char *buf, size_t *n, size_t cap, const char *s)
{
	while (*s && *n + 1 < cap)
		buf[(*n)++] = *s++;
	buf[*n] = 0;
}

static void sig_putu(char *buf, size_t *n, size_t cap, unsigned long long v)
{
	char d[24];
	int k = 0;
	do
		d[k++] = (char)('0' + v % 10);
	while ((v /= 10) && k < (int)sizeof d);
	while (k > 0 && *n + 1 < cap)
		buf[(*n)++] = d[--k];
	buf[*n] = 0;
}

/* The start of the file at path (a /proc file) into buf[size], terminated:
 * its length, 0 if it cannot be read (async-signal-safe). */
static ssize_t read_head(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t k = read(fd, buf, size - 1);
	close(fd);
	if (k <= 0)
		return 0;
	buf[k] = 0;
	return k;
}

/* The data size of this process (VmData) in bytes, 0 if unknown
 * (async-signal-safe). A confined child reads the descriptor it opened
 * before (a read at offset 0 makes /proc's file anew). */
static unsigned long long vm_data_bytes(void)
{
	char buf[4096];
	ssize_t k;
	if (child_status >= 0) {
		if ((k = pread(child_status, buf, sizeof buf - 1, 0)) <= 0)
			return 0;
		buf[k] = 0;
	} else if (!read_head("/proc/self/status", buf, sizeof buf)) {
		return 0;
	}
	char *p = strstr(buf, "\nVmData:");
	if (!p)
		return 0;
	p += 8;
	while (*p == ' ' || *p == '\t')
		p++;
	unsigned long long kb = 0;
	while (*p >= '0' && *p <= '9')
		kb = kb * 10 + (unsigned)(*p++ - '0');
	return kb * 1024;
}

static void write_all(int fd, const void *p, size_t n); /* async-signal-safe */

/* Report child_result with error and msg, from a signal handler, and end
 * the child. A second thread trapping meanwhile waits for the end. */
static void child_report_trap(int error, const char *msg)
{
	if (__atomic_exchange_n(&child_trapped, 1, __ATOMIC_SEQ_CST))
		for (;;)
			pause();
	run_result *r = child_result;
	r->error = error;
	r->nrepeat = 0;
	memcpy(r->msg, msg, sizeof r->msg);
	r->msg[sizeof r->msg - 1] = 0;
	write_all(child_pipe, r, sizeof *r);
	_exit(0);
}

/* Close every descriptor from 3 up but keep[0..nkeep) (sorted, >= 3). */
static void close_fds_but(const int *keep, int nkeep)
{
	unsigned lo = 3;
	for (int i = 0; i <= nkeep; i++) {
		unsigned hi = i < nkeep ? (unsigned)keep[i] : ~0u;
		if (hi > lo) {
#ifdef __NR_close_range
			if (syscall(__NR_close_range, lo, hi - 1, 0) == 0) {
				lo = hi + 1;
				continue;
			}
#endif
			struct rlimit nf;
			unsigned top = getrlimit(RLIMIT_NOFILE, &nf) == 0 && nf.rlim_cur < 65536
			               ? (unsigned)nf.rlim_cur : 65536;
			for (unsigned fd = lo; fd < hi && fd < top; fd++)
				close((int)fd);
		}
		lo = hi + 1;
	}
}

#ifdef RUN_SECCOMP
/* What a filter rule checks, and the reason its trap gives (the trap's
 * SECCOMP_RET_DATA: si_errno in the handler). */
enum {
	SYS_ALWAYS,   /* trapped always */
	SYS_MEMORY,   /* trapped when the length (arg) exceeds the headroom */
	SYS_MMAP,     /* SYS_MEMORY, and trapped with MAP_SHARED in the flags (arg 3) */
	SYS_SHARED,   /* shared memory: trapped always */
	SYS_CLONE,    /* trapped without CLONE_THREAD */
	SYS_SIGNAL,   /* trapped unless aimed at this process */
	SYS_OPEN,     /* trapped when the flags (arg) ask to write */
	SYS_FILE,     /* a change to the filesystem: trapped always */
	SYS_RLIMIT,   /* trapped with a new limit (arg) */
	SYS_NOTRAP    /* the trap of an allowed call: never */
};
enum { TRAP_SHARED_MAP = SYS_NOTRAP + 1 }; /* mmap's MAP_SHARED */

#define RUN_OPEN_WRITE (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)

static const struct { int nr; const char *name; int kind; int arg; } sys_tab[] = {
#ifdef __NR_fork
	{ __NR_fork, "fork", SYS_ALWAYS, 0 },
#endif
#ifdef __NR_vfork
	{ __NR_vfork, "vfork", SYS_ALWAYS, 0 },
#endif
	{ __NR_clone, "clone", SYS_CLONE, 0 },
	{ __NR_execve, "execve", SYS_ALWAYS, 0 },
	{ __NR_execveat, "execveat", SYS_ALWAYS, 0 },
	{ __NR_kill, "kill", SYS_SIGNAL, 0 },
	{ __NR_tgkill, "tgkill", SYS_SIGNAL, 0 },
	{ __NR_tkill, "tkill", SYS_ALWAYS, 0 },
	{ __NR_rt_sigqueueinfo, "rt_sigqueueinfo", SYS_SIGNAL, 0 },
	{ __NR_rt_tgsigqueueinfo, "rt_tgsigqueueinfo", SYS_SIGNAL, 0 },
	{ __NR_pidfd_open, "pidfd_open", SYS_ALWAYS, 0 },
	{ __NR_pidfd_send_signal, "pidfd_send_signal", SYS_ALWAYS, 0 },
	{ __NR_ptrace, "ptrace", SYS_ALWAYS, 0 },
	{ __NR_process_vm_readv, "process_vm_readv", SYS_ALWAYS, 0 },
	{ __NR_process_vm_writev, "process_vm_writev", SYS_ALWAYS, 0 },
	{ __NR_setpgid, "setpgid", SYS_ALWAYS, 0 },
	{ __NR_setsid, "setsid", SYS_ALWAYS, 0 },
	{ __NR_socket, "socket", SYS_ALWAYS, 0 },
	{ __NR_socketpair, "socketpair", SYS_ALWAYS, 0 },
	{ __NR_connect, "connect", SYS_ALWAYS, 0 },
	{ __NR_bind, "bind", SYS_ALWAYS, 0 },
	{ __NR_mount, "mount", SYS_ALWAYS, 0 },
	{ __NR_umount2, "umount2", SYS_ALWAYS, 0 },
	{ __NR_unshare, "unshare", SYS_ALWAYS, 0 },
	{ __NR_setns, "setns", SYS_ALWAYS, 0 },
	{ __NR_reboot, "reboot", SYS_ALWAYS, 0 },
	{ __NR_kexec_load, "kexec_load", SYS_ALWAYS, 0 },
	{ __NR_init_module, "init_module", SYS_ALWAYS, 0 },
	{ __NR_finit_module, "finit_module", SYS_ALWAYS, 0 },
	{ __NR_delete_module, "delete_module", SYS_ALWAYS, 0 },
	{ __NR_swapon, "swapon", SYS_ALWAYS, 0 },
	{ __NR_swapoff, "swapoff", SYS_ALWAYS, 0 },
	{ __NR_bpf, "bpf", SYS_ALWAYS, 0 },
	{ __NR_io_uring_setup, "io_uring_setup", SYS_ALWAYS, 0 },
	{ __NR_io_uring_enter, "io_uring_enter", SYS_ALWAYS, 0 },
	{ __NR_io_uring_register, "io_uring_register", SYS_ALWAYS, 0 },
	{ __NR_mmap, "mmap", SYS_MMAP, 1 },
	{ __NR_mremap, "mremap", SYS_MEMORY, 2 },
	{ __NR_memfd_create, "memfd_create", SYS_SHARED, 0 },
	{ __NR_shmget, "shmget", SYS_SHARED, 0 },
	{ __NR_shmat, "shmat", SYS_SHARED, 0 },
	{ __NR_prlimit64, "prlimit64", SYS_RLIMIT, 2 },
#ifdef __NR_setrlimit
	{ __NR_setrlimit, "setrlimit", SYS_ALWAYS, 0 },
#endif
#ifdef __NR_open
	{ __NR_open, "open", SYS_OPEN, 1 },
#endif
	{ __NR_openat, "openat", SYS_OPEN, 2 },
#ifdef __NR_creat
	{ __NR_creat, "creat", SYS_FILE, 0 },
#endif
	{ __NR_open_by_handle_at, "open_by_handle_at", SYS_FILE, 0 },
#ifdef __NR_mkdir
	{ __NR_mkdir, "mkdir", SYS_FILE, 0 },
	{ __NR_rmdir, "rmdir", SYS_FILE, 0 },
	{ __NR_unlink, "unlink", SYS_FILE, 0 },
	{ __NR_rename, "rename", SYS_FILE, 0 },
	{ __NR_link, "link", SYS_FILE, 0 },
	{ __NR_symlink, "symlink", SYS_FILE, 0 },
	{ __NR_mknod, "mknod", SYS_FILE, 0 },
	{ __NR_chmod, "chmod", SYS_FILE, 0 },
	{ __NR_chown, "chown", SYS_FILE, 0 },
	{ __NR_lchown, "lchown", SYS_FILE, 0 },
#endif
#ifdef __NR_renameat
	{ __NR_renameat, "renameat", SYS_FILE, 0 },
#endif
	{ __NR_mkdirat, "mkdirat", SYS_FILE, 0 },
	{ __NR_unlinkat, "unlinkat", SYS_FILE, 0 },
	{ __NR_renameat2, "renameat2", SYS_FILE, 0 },
	{ __NR_linkat, "linkat", SYS_FILE, 0 },
	{ __NR_symlinkat, "symlinkat", SYS_FILE, 0 },
	{ __NR_mknodat, "mknodat", SYS_FILE, 0 },
	{ __NR_truncate, "truncate", SYS_FILE, 0 },
	{ __NR_fchmodat, "fchmodat", SYS_FILE, 0 },
	{ __NR_fchownat, "fchownat", SYS_FILE, 0 },
	{ __NR_setxattr, "setxattr", SYS_FILE, 0 },
	{ __NR_lsetxattr, "lsetxattr", SYS_FILE, 0 },
	{ __NR_removexattr, "removexattr", SYS_FILE, 0 },
	{ __NR_lremovexattr, "lremovexattr", SYS_FILE, 0 },
};

#define BPF_ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define BPF_ARG_HI(i) (BPF_ARG_LO(i) + 4) /* little-endian only (x86-64, arm64) */

/* "forbidden syscall: NAME (why)" for system call nr trapped by rule why
 * (SYS_*; -1: find it from nr) into msg[cap] (async-signal-safe). */
static void forbidden_msg(char *msg, size_t cap, long nr, int why)
{
	size_t n = 0;
	const char *name = NULL;
	for (int i = 0; i < ArraySize(sys_tab); i++)
		if (sys_tab[i].nr == nr) {
			name = sys_tab[i].name;
			if (why < 0)
				why = sys_tab[i].kind;
		}
	msg[0] = 0;
	sig_puts(msg, &n, cap, "forbidden syscall: ");
	if (name)
		sig_puts(msg, &n, cap, name);
	else
		sig_putu(msg, &n, cap, (unsigned long long)nr);
	sig_puts(msg, &n, cap, why == SYS_CLONE ? " (a new process)"
	                       : why == SYS_SIGNAL ? " (to another process)"
	                       : why == SYS_OPEN ? " (a file for writing)"
	                       : why == SYS_FILE ? " (a change to the filesystem)"
	                       : why == SYS_RLIMIT ? " (a new resource limit)" : "");
}

/* Install the filter (see above). With notify, the forbidden calls (and
 * those of another ABI) are not trapped but stop the calling thread and
 * notify a listener, whose descriptor goes to *listener: the parent reads
 * which call it was, which it can whatever the kernel did to its signals
 * (posix_spawn and system block SIGSYS, and a trap with SIGSYS blocked
 * kills without a word). Returns 0, or -1 when the kernel refuses it
 * (nothing installed). */
static int child_seccomp(pid_t self, int notify, int *listener)
{
	enum { NMAX = 16 + 10 * ArraySize(sys_tab) };
	struct sock_filter f[NMAX];
	int n = 0;
#define EMIT(insn) (assert(n < NMAX), f[n++] = (struct sock_filter)insn)
#define TRAP(why) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP | (uint32_t)(why))
#define FORBID(why) BPF_STMT(BPF_RET | BPF_K, notify ? SECCOMP_RET_USER_NOTIF \
                                                    : SECCOMP_RET_TRAP | (uint32_t)(why))
	const uint32_t allow = SECCOMP_RET_ALLOW;
	const uint32_t kill = notify ? SECCOMP_RET_USER_NOTIF : SECCOMP_RET_KILL_PROCESS;
	EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
	EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RUN_AUDIT_ARCH, 1, 0));
	EMIT(BPF_STMT(BPF_RET | BPF_K, kill));
	EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
#ifdef __x86_64__
	/* x32 system calls (the same numbers with bit 30 set) */
	EMIT(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
	EMIT(BPF_STMT(BPF_RET | BPF_K, kill));
#endif
	/* The calls a threaded kernel makes while it is timed, allowed first
	 * so that the filter costs them as little as it can. */
	EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_futex, 1, 0));
	EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sched_yield, 0, 1));
	EMIT(BPF_STMT(BPF_RET | BPF_K, allow));
	EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 1, 0));
	EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat2, 0, 1));
	EMIT(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS));
	for (int i = 0; i < ArraySize(sys_tab); i++) {
		uint32_t nr = (uint32_t)sys_tab[i].nr;
		int a = sys_tab[i].arg, kind = sys_tab[i].kind;
		switch (kind) {
		case SYS_ALWAYS:
		case SYS_SHARED:
		case SYS_FILE:
			EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1));
			if (kind == SYS_SHARED)
				EMIT(TRAP(kind));
			else
				EMIT(FORBID(kind));
			break;
		case SYS_CLONE: /* a thread of this process, or trap */
			EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 4));
			EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, BPF_ARG_LO(a)));
			EMIT(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
			EMIT(BPF_STMT(BPF_RET | BPF_K, allow));
			EMIT(FORBID(kind));
			break;
		case SYS_MMAP: /* not shared, then as SYS_MEMORY */
			EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 9));
			EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, BPF_ARG_LO(3)));
			EMIT(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MAP_SHARED, 0, 1));
			EMIT(TRAP(TRAP_SHARED_MAP));
			/* fall through */
		case SYS_MEMORY: /* a length up to the headroom, or trap */
			if (kind == SYS_MEMORY)
				EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 6));
			EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, BPF_ARG_HI(a)));
			EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3));
			EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, BPF_ARG_LO(a)));
			EMIT(BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, (uint32_t)RUN_MEM_HEADROOM, 1, 0));
			EMIT(BPF_STMT(BPF_RET | BPF_K, allow));
			EMIT(TRAP(SYS_MEMORY));
			break;
		case SYS_SIGNAL: /* pid 0 (its own group) or this process, or trap */
			EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 5));
			EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, BPF_ARG_LO(a)));
			EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)self, 2, 0));
			EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));
			EMIT(FORBID(kind));
			EMIT(BPF_STMT(BPF_RET | BPF_K, allow));
			break;
		case SYS_OPEN: /* read-only, or trap */
			EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 4));
			EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, BPF_ARG_LO(a)));
			EMIT(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, RUN_OPEN_WRITE, 1, 0));
			EMIT(BPF_STMT(BPF_RET | BPF_K, allow));
			EMIT(FORBID(kind));
			break;
		case SYS_RLIMIT: /* no new limit (a NULL pointer), or trap */
			EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 6));
			EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, BPF_ARG_LO(a)));
			EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2));
			EMIT(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, BPF_ARG_HI(a)));
			EMIT(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0));
			EMIT(FORBID(kind));
			EMIT(BPF_STMT(BPF_RET | BPF_K, allow));
			break;
		}
	}
	EMIT(BPF_STMT(BPF_RET | BPF_K, allow));
#undef FORBID
#undef TRAP
#undef EMIT
	struct sock_fprog prog = { (unsigned short)n, f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	if (!notify)
		return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0 ? -1 : 0;
	long fd = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
	                  &prog);
	if (fd < 0)
		return -1;
	*listener = (int)fd;
	return 0;
}

/* Hand the listener to the parent over the socket run_call made: 0, or
 * -1 if it could not be sent. */
static int send_fd(int sock, int fd)
{
	char byte = 'L';
	struct iovec iov = { &byte, 1 };
	union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } u;
	struct msghdr mh;
	memset(&mh, 0, sizeof mh);
	memset(&u, 0, sizeof u);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof u.buf;
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	ssize_t k;
	while ((k = sendmsg(sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	return k == 1 ? 0 : -1;
}

/* The descriptor the child sent with send_fd on sock, or -1. */
static int recv_fd(int sock)
{
	char byte;
	struct iovec iov = { &byte, 1 };
	union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } u;
	struct msghdr mh;
	memset(&mh, 0, sizeof mh);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof u.buf;
	ssize_t k;
	while ((k = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	struct cmsghdr *c = k == 1 ? CMSG_FIRSTHDR(&mh) : NULL;
	int fd = -1;
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd;
}

/* Read the pending notification of listener into msg[nmsg]: 1 if there
 * was one (the call it names is forbidden), 0 if not. */
static int read_notification(int listener, char *msg, size_t nmsg)
{
	struct seccomp_notif_sizes sz;
	if (syscall(__NR_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) < 0)
		return 0;
	size_t size = sz.seccomp_notif > sizeof(struct seccomp_notif) ? sz.seccomp_notif
	                                                             : sizeof(struct seccomp_notif);
	struct seccomp_notif *req = calloc(1, size);
	if (!req)
		return 0;
	int got = ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) == 0;
	if (got) {
		if (req->data.arch != RUN_AUDIT_ARCH || (unsigned)req->data.nr >= 0x40000000u) {
			snprintf(msg, nmsg, "forbidden syscall: %d of another ABI (%s)", req->data.nr,
			         req->data.arch != RUN_AUDIT_ARCH ? "not this architecture's" : "x32");
		} else {
			forbidden_msg(msg, nmsg, req->data.nr, -1);
		}
	}
	free(req);
	return got;
}

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	char msg[sizeof child_result->msg];
	size_t n = 0;
	const char *name = NULL;
	int why = si->si_errno;
	for (int i = 0; i < ArraySize(sys_tab); i++)
		if (sys_tab[i].nr == si->si_syscall)
			name = sys_tab[i].name;
	if (why == SYS_MEMORY || why == SYS_SHARED || why == TRAP_SHARED_MAP) {
		sig_puts(msg, &n, sizeof msg, "memory limit: ");
		sig_puts(msg, &n, sizeof msg, name ? name : "?");
		if (why == SYS_MEMORY) {
			sig_puts(msg, &n, sizeof msg, " of more than ");
			sig_putu(msg, &n, sizeof msg, RUN_MEM_HEADROOM >> 20);
			sig_puts(msg, &n, sizeof msg, " MiB at once refused");
		} else {
			sig_puts(msg, &n, sizeof msg, why == TRAP_SHARED_MAP ? " (MAP_SHARED)" : "");
			sig_puts(msg, &n, sizeof msg, " refused: shared memory is outside the limit");
		}
		child_report_trap(MEAS_MEMORY_LIMIT, msg);
	}
	forbidden_msg(msg, sizeof msg, si->si_syscall, why);
	child_report_trap(MEAS_FORBIDDEN, msg);
}
#endif

#ifdef RUN_LANDLOCK
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
/* Deny this process (and its threads to come) every change to the
 * filesystem and, with reads, every access. Returns 0, or -1 where the
 * kernel has no Landlock (nothing done). Needs no_new_privs. */
static int child_landlock(int reads)
{
	long abi = syscall(__NR_landlock_create_ruleset, NULL, 0,
	                   LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1)
		return -1;
	struct landlock_ruleset_attr attr;
	memset(&attr, 0, sizeof attr);
	attr.handled_access_fs = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
		LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
		LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
		LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
		LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
	if (abi >= 2)
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (reads)
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |
		                          LANDLOCK_ACCESS_FS_READ_DIR;
	int fd = (int)syscall(__NR_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (fd < 0)
		return -1;
	int rc = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	         syscall(__NR_landlock_restrict_self, fd, 0) < 0 ? -1 : 0;
	close(fd);
	return rc;
}
#endif

/* A SIGSEGV or SIGBUS: the memory limit if the data size is near it, else
 * the signal's default action (the parent reports a crash). */
static void on_fault(int sig, siginfo_t *si, void *uc)
{
	unsigned long long have = vm_data_bytes();
	if (child_data_limit && have + RUN_MEM_HEADROOM / 8 >= child_data_limit) {
		char msg[sizeof child_result->msg];
		size_t n = 0;
		sig_puts(msg, &n, sizeof msg, "memory limit: ");
		sig_puts(msg, &n, sizeof msg, sig == SIGBUS ? "SIGBUS" : "SIGSEGV");
		sig_puts(msg, &n, sizeof msg, " with the data size at ");
		sig_putu(msg, &n, sizeof msg, have >> 20);
		sig_puts(msg, &n, sizeof msg, " MiB of its ");
		sig_putu(msg, &n, sizeof msg, child_data_limit >> 20);
		sig_puts(msg, &n, sizeof msg, " MiB limit");
		child_report_trap(MEAS_MEMORY_LIMIT, msg);
	}
	/* SA_RESETHAND restored the default: a fault recurs when the handler
	 * returns, a sent signal is sent again. */
	if (si->si_code <= 0)
		raise(sig);
}

/* Confine the measuring child before it loads the kernel (see above); r is
 * where the trap handlers report, so_fd the object's descriptor, kept open
 * with the pipe and stderr. */
static void child_confine(run_result *r, int so_fd)
{
	child_result = r;
	child_status = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	const int want[4] = { child_pipe, so_fd, child_status, child_notify };
	int keep[4], nkeep = 0;
	for (int i = 0; i < 4; i++) /* sorted, from 3 up */
		if (want[i] >= 3) {
			int j = nkeep++;
			for (; j > 0 && keep[j - 1] > want[i]; j--)
				keep[j] = keep[j - 1];
			keep[j] = want[i];
		}
	close_fds_but(keep, nkeep);

	stack_t ss = { .ss_sp = child_altstack, .ss_size = sizeof child_altstack };
	sigaltstack(&ss, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);

	unsigned long long data = vm_data_bytes();
	struct rlimit lim;
	if (data > 0 && getrlimit(RLIMIT_DATA, &lim) == 0 &&
	    (lim.rlim_max == RLIM_INFINITY || data + RUN_MEM_HEADROOM <= lim.rlim_max)) {
		lim.rlim_cur = lim.rlim_max = data + RUN_MEM_HEADROOM;
		if (setrlimit(RLIMIT_DATA, &lim) == 0) {
			child_data_limit = lim.rlim_cur;
			sa.sa_sigaction = on_fault;
			sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND | SA_NODEFER;
			sigaction(SIGSEGV, &sa, NULL);
			sigaction(SIGBUS, &sa, NULL);
		}
	}
#ifdef RUN_SECCOMP
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigaddset(&sa.sa_mask, SIGSEGV);
	sigaddset(&sa.sa_mask, SIGBUS);
	int listener = -1, on = sigaction(SIGSYS, &sa, NULL) == 0;
	if (on && child_notify >= 0 && child_seccomp(getpid(), 1, &listener) == 0) {
		/* The parent listens; if it cannot be told, a trapping filter on top
		 * (TRAP wins over USER_NOTIF) does what it would have. */
		if (send_fd(child_notify, listener) < 0)
			child_seccomp(getpid(), 0, NULL);
		close(listener);
	} else if (on && child_seccomp(getpid(), 0, NULL) < 0) {
		sa.sa_handler = SIG_DFL;
		sa.sa_flags = 0;
		sigaction(SIGSYS, &sa, NULL);
	}
#endif
	if (child_notify >= 0)
		close(child_notify);
	child_notify = -1;
#ifdef RUN_LANDLOCK
	child_landlock(0);
#endif
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
	unsigned long nws = 0;

	r->error = MEAS_RUNTIME_CRASH;
	int fd = child_object(obj, r);
	if (fd < 0)
		goto out;
	if (run_object_workspace(fd, &nws)) {
		snprintf(r->msg, sizeof r->msg, "runtime crash: refused to load %.150s: %s",
		         so_path, tk_errmsg());
		goto out;
	}
	if (nws > RUN_MAXWS_BYTES / sizeof(float)) {
		snprintf(r->msg, sizeof r->msg, "runtime crash: workspace too large (%lu floats)",
		         nws);
		goto out;
	}
	out = aligned_floats(io->out_n + RUN_CANARY);
	ws = aligned_floats(nws);
	bufs = calloc((size_t)io->nin + 1, sizeof *bufs);
	if (o->flush_cache) {
		flush = mmap(NULL, RUN_FLUSH_BYTES, PROT_READ | PROT_WRITE,
		             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (flush == MAP_FAILED)
			flush = NULL;
	}
	if (!out || !ws || !bufs || (o->flush_cache && !flush)) {
		snprintf(r->msg, sizeof r->msg, "runtime crash: out of memory (output %zu floats, "
		         "workspace %lu floats)", io->out_n, nws);
		goto out;
	}
	for (size_t i = 0; i < io->out_n; i++)
		out[i] = NAN;
	for (size_t i = 0; i < RUN_CANARY; i++)
		memcpy(&out[io->out_n + i], &canary_bits, sizeof canary_bits);
	bufs[0] = out;
	for (int i = 0; i < io->nin; i++)
		bufs[i + 1] = (float *)io->in[i];

	/* Confined first, then loaded: the library's constructors run in the
	 * sandbox. Load the very file that was checked, not whatever the path
	 * names now. */
	child_confine(r, fd);
	snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
	dl = dlopen(fdpath, RTLD_NOW | RTLD_LOCAL);
	close(fd);
	if (!dl) {
		snprintf(r->msg, sizeof r->msg, "runtime crash: dlopen: %s", dlerror());
		goto out;
	}
#if defined(RUN_LANDLOCK) && !defined(RUN_ASAN)
	/* Loaded: from now on no file at all. Not with AddressSanitizer, whose
	 * reports (the memory limit's failed allocations among them) find the
	 * stack through /proc/self/maps. */
	child_landlock(1);
#endif
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
	if (*wsn != nws) {
		snprintf(r->msg, sizeof r->msg, "runtime crash: tk_workspace_floats is %lu once "
		         "loaded, %lu in the object file", *wsn, nws);
		goto out;
	}
	f(bufs, ws);
	r->error = MEAS_WRONG_ANSWER;
	if (!check_output(out, io, "", &r->max_err, r->msg, sizeof r->msg))
		goto out;

	for (int i = 0; i < o->warmup; i++)
		f(bufs, ws);
	long number = o->number;
	double last = -1; /* seconds per call of the calibration's last round */
	if (number <= 0) {
		for (number = 1;; number = number * 2 < RUN_MAXNUMBER ? number * 2 : RUN_MAXNUMBER) {
			last = time_calls(f, bufs, ws, number) / (double)number;
			if (number == RUN_MAXNUMBER || last * (double)number * 1e3 >= o->min_repeat_ms)
				break;
		}
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
			if (k == 1 && o->bound_s > 0 && r->times[0] > o->bound_s) {
				r->bounded = 1;
				break;
			}
			if (k >= 3 && run_cv(r->times, k) < o->cv)
				break;
		}
		r->number = (int)b;
		r->nrepeat = k;
	} else {
		r->number = (int)number;
		r->nrepeat = o->repeat;
		for (int k = 0; k < o->repeat; k++) {
			/* The calibration's last round was number calls made after
			 * warm calls, as a repeat is: it is the first repeat (unless
			 * repeats start from flushed caches), one repeat's calls
			 * fewer for every kernel. */
			if (k == 0 && last >= 0 && !flush) {
				r->times[k] = last;
			} else {
				if (flush)
					flush_caches(flush, k);
				r->times[k] = time_calls(f, bufs, ws, number) / (double)number;
			}
			if (k == 0 && o->bound_s > 0 && r->times[0] > o->bound_s) {
				r->bounded = 1; /* far slower than the best: one repeat is enough */
				r->nrepeat = 1;
				break;
			}
		}
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
#ifdef RUN_ASAN
	run_child_noleakcheck = 1;
#endif
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
	if (k->o->cpu_clock) {
		time_clock = CLOCK_PROCESS_CPUTIME_ID;
		time_div = k->t->threads;
	}
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
	int fd[2], ns[2] = { -1, -1 };
	if (pipe2(fd, O_CLOEXEC) < 0)
		return tk_seterr(TK_EIO, "cannot start a measurement: pipe: %s", strerror(errno));
#ifdef RUN_SECCOMP
	/* where a confining child sends its filter's listener (none if this
	 * fails: the child then traps as before) */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ns) < 0)
		ns[0] = ns[1] = -1;
#endif
	fflush(NULL); /* nothing buffered may be written twice */
	pid_t self = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(fd[0]);
		close(fd[1]);
		if (ns[0] >= 0) {
			close(ns[0]);
			close(ns[1]);
		}
		return tk_seterr(TK_EIO, "cannot start a measurement: fork: %s", strerror(e));
	}
	if (pid == 0) {
		close(fd[0]);
		if (ns[0] >= 0)
			close(ns[0]);
		child_pipe = fd[1];
		child_notify = ns[1];
		child_setup(self, timeout_s, threads);
		memset(buf, 0, size);
		fn(ctx, buf, size);
		write_all(fd[1], buf, size);
		_exit(0);
	}
	setpgid(pid, pid);
	close(fd[1]);
	if (ns[1] >= 0)
		close(ns[1]);

	/* Read the result until it is complete, the child closes the pipe (it
	 * died), the deadline passes, or the child's filter stops a forbidden
	 * call (its listener arrives on ns[0]; a notification on it names the
	 * call). */
	size_t nread = 0;
	int timed_out = 0, forbidden = 0, listener = -1;
	double deadline = tk_now() + timeout_s;
	while (nread < size) {
		double left = deadline - tk_now();
		if (left <= 0) {
			timed_out = 1;
			break;
		}
		struct pollfd p[3] = { { fd[0], POLLIN, 0 }, { ns[0], POLLIN, 0 },
		                       { listener, POLLIN, 0 } };
		int k = poll(p, 3, (int)ceil((left < 1000 ? left : 1000) * 1e3));
		if (k < 0 && errno != EINTR)
			break;
		if (k <= 0)
			continue;
#ifdef RUN_SECCOMP
		if ((p[2].revents & POLLIN) && read_notification(listener, msg, nmsg)) {
			forbidden = 1;
			break;
		}
		if (p[2].revents & (POLLHUP | POLLERR | POLLNVAL)) {
			close(listener); /* the child is gone: its filter with it */
			listener = -1;
		}
		if (p[1].revents) {
			if (listener < 0 && (p[1].revents & POLLIN))
				listener = recv_fd(ns[0]);
			close(ns[0]); /* one listener per child */
			ns[0] = -1;
		}
#endif
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		ssize_t m = read(fd[0], (char *)buf + nread, size - nread);
		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0)
			break;
		nread += (size_t)m;
	}
	close(fd[0]);
	if (ns[0] >= 0)
		close(ns[0]);
	if (timed_out || forbidden) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
	}
	if (listener >= 0)
		close(listener);
	int st = 0;
	pid_t w;
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;

	if (forbidden) {
		*error = MEAS_FORBIDDEN;
	} else if (timed_out) {
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
		} else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS) {
			/* the seccomp filter's trap, when its handler could not report */
			*error = MEAS_FORBIDDEN;
			snprintf(msg, nmsg, "forbidden syscall: killed by signal SIGSYS (%s)",
			         strsignal(SIGSYS));
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
	assert(o->timeout_s > 0 && o->warmup >= 0 && o->bound_s >= 0);
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
		r->bounded = r->error == MEAS_OK && got.bounded && r->nrepeat == 1;
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
	int inherited;     /* held by an ancestor (tunekit lock): nothing to release */
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

/* The parent of process pid from /proc, 0 if unknown. */
static long parent_of(long pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	if (!read_head(path, buf, sizeof buf))
		return 0;
	/* "pid (comm) state ppid ...": comm may hold spaces and parentheses */
	char *p = strrchr(buf, ')');
	long ppid = 0;
	if (!p || sscanf(p + 1, " %*c %ld", &ppid) != 1)
		return 0;
	return ppid;
}

/* 1 if pid is an ancestor of this process. */
static int is_ancestor(long pid)
{
	long p = getppid();
	for (int depth = 0; p > 1 && depth < 256; depth++) {
		if (p == pid)
			return 1;
		p = parent_of(p);
	}
	return 0;
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
		/* Held by a process that started us (tunekit lock -- CMD): its hold
		 * is ours, and waiting for it would never end. */
		long holder = lock_holder(l);
		if (holder > 0 && is_ancestor(holder)) {
			l->held = l->inherited = 1;
			return TK_OK;
		}
		double waited = tk_now() - t0;
		if (wait && waited >= next_call) {
			if (wait(ctx, l->path, waited, holder))
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
	if (l->inherited) {
		l->held = l->inherited = 0;
		return;
	}
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

int run_command(char *const *argv, int *status)
{
	assert(argv && argv[0] && status);
	*status = 0;
	int fd[2];
	if (pipe2(fd, O_CLOEXEC) < 0)
		return tk_seterr(TK_EIO, "cannot run %s: pipe: %s", argv[0], strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(fd[0]);
		close(fd[1]);
		return tk_seterr(TK_EIO, "cannot run %s: fork: %s", argv[0], strerror(e));
	}
	if (pid == 0) {
		close(fd[0]);
		execvp(argv[0], argv);
		int e = errno;
		write_all(fd[1], &e, sizeof e); /* the pipe closes on a successful exec */
		_exit(127);
	}
	close(fd[1]);
	int e = 0;
	ssize_t k;
	while ((k = read(fd[0], &e, sizeof e)) < 0 && errno == EINTR)
		;
	close(fd[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			return tk_seterr(TK_EIO, "cannot run %s: waitpid: %s", argv[0], strerror(errno));
	}
	if (k == (ssize_t)sizeof e) {
		*status = e == ENOENT ? 127 : 126;
		return tk_seterr(e == ENOENT ? TK_ENOTFOUND : TK_EIO, "cannot run %s: %s", argv[0],
		                 strerror(e));
	}
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
	return TK_OK;
}
