/*
 * build: compile kernels into shared objects with the target's compiler, a
 * few at a time, each in its own process group so that a compile past its
 * time limit can be killed together with cc1 and as. Results are cached by a
 * hash of everything that determines the object code: the source, the flags,
 * the compiler command and version, and the CPU model (the flags may say
 * -march=native). Files in the cache directory:
 *
 *     <hash>.so                 the kernel, renamed into place when complete
 *     <hash>.c                  its source (kept: handy when a kernel misbehaves)
 *     <hash>.{c,so}.tmp.<pid>.<n>  in-flight files, removed when done
 *
 * Every file appears by rename(), so several tunekit processes can share one
 * cache directory.
 */
#define _GNU_SOURCE
#include "build.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

#define BUILD_MSGMAX 400  /* bytes of compiler output kept in build_job.msg */
#define BUILD_MAXARGS 64  /* compiler arguments from the target's cflags */
#define BUILD_POLL_NS 2000000L
#define BUILD_HASH_VERSION "tunekit-build-1"

const char *build_default_cache(void)
{
	static char dir[4096];
	const char *e;
	if ((e = getenv("TUNEKIT_CACHE")) && *e)
		snprintf(dir, sizeof dir, "%s", e);
	else if ((e = getenv("XDG_CACHE_HOME")) && *e)
		snprintf(dir, sizeof dir, "%s/tunekit", e);
	else if ((e = getenv("HOME")) && *e)
		snprintf(dir, sizeof dir, "%s/.cache/tunekit", e);
	else
		snprintf(dir, sizeof dir, "/tmp/tunekit-cache-%u", (unsigned)getuid());
	return dir;
}

/* mkdir -p. Returns TK_OK or TK_EIO. */
static int mkdir_p(const char *dir)
{
	char p[4096];
	if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
		return tk_seterr(TK_EIO, "cache directory name too long");
	for (char *s = p + 1;; s++) {
		if (*s == '/' || !*s) {
			char c = *s;
			*s = 0;
			if (mkdir(p, 0777) < 0 && errno != EEXIST)
				return tk_seterr(TK_EIO, "cannot create %s: %s", p, strerror(errno));
			*s = c;
			if (!c)
				break;
		}
	}
	struct stat st;
	if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
		return tk_seterr(TK_EIO, "cache directory %s is not a directory", p);
	return TK_OK;
}

static uint64_t build_hash(const tk_target *t, const char *src)
{
	const char *parts[] = { BUILD_HASH_VERSION, t->cc, t->cc_version, t->cflags, t->cpu, src };
	uint64_t h = 0;
	for (int i = 0; i < ArraySize(parts); i++)
		h = tk_hash64(parts[i], strlen(parts[i]) + 1, h); /* with the NUL: a separator */
	return h;
}

/* Drop the lines of out that start with a blank: the source excerpts and
 * carets under each diagnostic (gcc "    2 | ...", "      |   ^~~", clang's
 * caret lines), unless that would leave nothing. */
static void drop_excerpts(char *out)
{
	char *w = out;
	for (const char *r = out; *r;) {
		const char *eol = strchr(r, '\n');
		size_t len = eol ? (size_t)(eol - r) + 1 : strlen(r);
		if (*r != ' ' && *r != '\t') {
			memmove(w, r, len);
			w += len;
		}
		r += len;
	}
	if (w > out)
		*w = 0;
}

/* Turn compiler output into one line in msg: drop source excerpts, start at
 * the first line that says "error" if there is one, drop the "<dir>/" prefix
 * of paths, join lines with " | ", keep at most BUILD_MSGMAX bytes. */
static void format_output(char *msg, size_t nmsg, const char *prefix, char *out,
                          const char *dir)
{
	drop_excerpts(out);
	const char *p = out, *e = strstr(out, "error");
	if (e) {
		while (e > out && e[-1] != '\n')
			e--;
		p = e;
	}
	size_t ndir = strlen(dir), n = (size_t)snprintf(msg, nmsg, "%s", prefix);
	size_t lim = n + BUILD_MSGMAX < nmsg - 4 ? n + BUILD_MSGMAX : nmsg - 4;
	int truncated = 0;
	while (*p) {
		if (!strncmp(p, dir, ndir) && p[ndir] == '/') {
			p += ndir + 1;
			continue;
		}
		const char *add = p;
		size_t len = 1;
		if (*p == '\n') {
			while (p[1] == '\n' || p[1] == '\r')
				p++;
			if (!p[1])
				break;
			add = " | ";
			len = 3;
		} else if (*p == '\r' || *p == '\t') {
			add = " ";
		}
		if (n + len > lim) {
			truncated = 1;
			break;
		}
		memcpy(msg + n, add, len);
		n += len;
		p++;
	}
	/* Don't leave half a UTF-8 character (gcc quotes with ‘’ in UTF-8 locales). */
	if (truncated)
		while (n > 0 && ((unsigned char)msg[n - 1] & 0xC0) == 0x80)
			n--;
	if (truncated && n > 0 && ((unsigned char)msg[n - 1] & 0xC0) == 0xC0)
		n--;
	memcpy(msg + n, truncated ? "..." : "", truncated ? 4 : 1);
}

enum { J_PENDING, J_WAITING, J_RUNNING, J_DONE };

typedef struct job_state {
	int state;
	int dup;       /* J_WAITING: the job with the same hash that builds it */
	char hex[17];
} job_state;

typedef struct slot {
	pid_t pid;     /* 0: free */
	int job;
	int logfd;     /* compiler stdout+stderr, already unlinked */
	double t0;
	char tmp[4200];/* <hash>.so.tmp.<pid>.<n> */
} slot;

static unsigned tmp_counter;

/* Write the source and start the compiler for job j in slot s. */
static int start_job(const char *dir, build_job *job, job_state *js,
                     slot *s, int j, char **argv, int nargv, double timeout_s)
{
	char src[4100], srctmp[4200];
	unsigned cnt = __atomic_fetch_add(&tmp_counter, 1, __ATOMIC_RELAXED);
	pid_t self = getpid();
	snprintf(src, sizeof src, "%s/%s.c", dir, js->hex);
	snprintf(srctmp, sizeof srctmp, "%s.tmp.%d.%u", src, (int)self, cnt);
	snprintf(s->tmp, sizeof s->tmp, "%s/%s.so.tmp.%d.%u", dir, js->hex, (int)self, cnt);
	int rc = tk_write_renamed(srctmp, src, job->src, strlen(job->src));
	if (rc)
		return rc;

	char logname[4200];
	snprintf(logname, sizeof logname, "%s/%s.log.tmp.%d.%u", dir, js->hex, (int)self, cnt);
	s->logfd = open(logname, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (s->logfd < 0)
		return tk_seterr(TK_EIO, "cannot create %s: %s", logname, strerror(errno));
	unlink(logname);

	argv[nargv - 2] = s->tmp;
	argv[nargv - 1] = src;
	argv[nargv] = NULL;
	/* A backstop in case we die without killing it: CPU time <= wall time. */
	struct rlimit cpu;
	getrlimit(RLIMIT_CPU, &cpu);
	rlim_t lim = (rlim_t)ceil(timeout_s) + 5;
	if (cpu.rlim_max == RLIM_INFINITY || lim < cpu.rlim_max)
		cpu.rlim_cur = cpu.rlim_max = lim;

	pid_t pid = fork();
	if (pid < 0) {
		close(s->logfd);
		return tk_seterr(TK_EIO, "cannot start the compiler: fork: %s", strerror(errno));
	}
	if (pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != self)
			_exit(127);
		setrlimit(RLIMIT_CPU, &cpu);
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0)
			dup2(null, 0);
		dup2(s->logfd, 1);
		dup2(s->logfd, 2);
		execvp(argv[0], argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid); /* also here, so a kill right after fork hits the group */
	s->pid = pid;
	s->job = j;
	s->t0 = tk_now();
	js->state = J_RUNNING;
	return TK_OK;
}

/* Record the outcome of the compile in slot s, whose wait status is st, and
 * free the slot. timed_out: we killed it. */
static void finish_job(const char *dir, build_job *jobs, job_state *states, slot *s, int st,
                       int timed_out, double timeout_s)
{
	build_job *job = &jobs[s->job];
	job->seconds = tk_now() - s->t0;
	job->status = BUILD_ERROR;
	if (timed_out) {
		job->status = BUILD_TIMEOUT;
		snprintf(job->msg, sizeof job->msg, "compile timeout after %g s", timeout_s);
	} else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		if (rename(s->tmp, job->so) == 0) {
			job->status = BUILD_OK;
			job->msg[0] = 0;
		} else {
			snprintf(job->msg, sizeof job->msg, "cannot create %.400s: %s", job->so,
			         strerror(errno));
		}
	} else {
		char out[4096], prefix[64] = "";
		ssize_t k = pread(s->logfd, out, sizeof out - 1, 0);
		out[k > 0 ? k : 0] = 0;
		if (WIFSIGNALED(st))
			snprintf(prefix, sizeof prefix, "compiler killed by signal %d: ",
			         WTERMSIG(st));
		else if (!out[0])
			snprintf(prefix, sizeof prefix, "compiler exited with status %d",
			         WEXITSTATUS(st));
		format_output(job->msg, sizeof job->msg, prefix, out, dir);
	}
	if (job->status != BUILD_OK)
		job->so[0] = 0;
	unlink(s->tmp);
	close(s->logfd);
	states[s->job].state = J_DONE;
	s->pid = 0;
}

static void kill_group(pid_t pid)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
}

static int wait_blocking(pid_t pid, int *st)
{
	pid_t r;
	while ((r = waitpid(pid, st, 0)) < 0 && errno == EINTR)
		;
	return r == pid;
}

int build_run(const tk_target *t, const char *cache_dir, build_job *jobs, int n,
              int njobs, double timeout_s)
{
	assert(t && cache_dir && (jobs || n == 0) && n >= 0 && timeout_s > 0);
	if (njobs < 1)
		njobs = 1;
	if (njobs > n)
		njobs = n > 0 ? n : 1;

	char dir[4096];
	snprintf(dir, sizeof dir, "%s", cache_dir);
	for (size_t l = strlen(dir); l > 1 && dir[l - 1] == '/';)
		dir[--l] = 0;
	if (strlen(dir) > 4000)
		return tk_seterr(TK_EIO, "cache directory name too long");

	for (int i = 0; i < n; i++) {
		jobs[i].so[0] = 0;
		jobs[i].status = BUILD_ERROR;
		snprintf(jobs[i].msg, sizeof jobs[i].msg, "not built");
		jobs[i].seconds = 0;
		jobs[i].cached = 0;
	}
	int rc = mkdir_p(dir);
	if (rc)
		return rc;

	/* cc, the flags, -o, output, source, NULL */
	char flags[sizeof t->cflags];
	char *argv[BUILD_MAXARGS + 5];
	int nargv = 0;
	argv[nargv++] = (char *)t->cc;
	snprintf(flags, sizeof flags, "%s", t->cflags);
	char *save = NULL;
	for (char *tok = strtok_r(flags, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (nargv > BUILD_MAXARGS)
			return tk_seterr(TK_EINVAL, "too many compiler flags");
		argv[nargv++] = tok;
	}
	argv[nargv++] = "-o";
	nargv += 2; /* output and source: filled per job */

	job_state *states = calloc(n > 0 ? n : 1, sizeof *states);
	slot *slots = calloc(njobs, sizeof *slots);
	if (!states || !slots) {
		free(states);
		free(slots);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}

	for (int i = 0; i < n; i++) {
		assert(jobs[i].src);
		snprintf(states[i].hex, sizeof states[i].hex, "%016llx",
		         (unsigned long long)build_hash(t, jobs[i].src));
		snprintf(jobs[i].so, sizeof jobs[i].so, "%s/%s.so", dir, states[i].hex);
		if (access(jobs[i].so, F_OK) == 0) {
			jobs[i].status = BUILD_OK;
			jobs[i].cached = 1;
			jobs[i].msg[0] = 0;
			states[i].state = J_DONE;
			continue;
		}
		states[i].state = J_PENDING;
		for (int j = 0; j < i; j++) {
			if (states[j].state == J_PENDING && !strcmp(states[j].hex, states[i].hex)) {
				states[i].state = J_WAITING;
				states[i].dup = j;
				break;
			}
		}
	}

	int next = 0, nrunning = 0;
	for (;;) {
		for (int k = 0; k < njobs && next < n; k++) {
			if (slots[k].pid)
				continue;
			while (next < n && states[next].state != J_PENDING)
				next++;
			if (next == n)
				break;
			rc = start_job(dir, &jobs[next], &states[next], &slots[k], next, argv, nargv,
			               timeout_s);
			if (rc)
				goto fail;
			next++;
			nrunning++;
		}
		if (nrunning == 0)
			break;

		int nfinished = 0;
		double now = tk_now();
		for (int k = 0; k < njobs; k++) {
			slot *s = &slots[k];
			if (!s->pid)
				continue;
			int st = 0;
			pid_t r = waitpid(s->pid, &st, WNOHANG);
			if (r < 0 && errno == EINTR)
				continue;
			if (r == s->pid || r < 0) {
				if (r < 0) /* reaped by someone else: status unknown */
					st = 0x7f00; /* "exited 127" */
				finish_job(dir, jobs, states, s, st, 0, timeout_s);
			} else if (now - s->t0 > timeout_s) {
				kill_group(s->pid);
				wait_blocking(s->pid, &st);
				finish_job(dir, jobs, states, s, st, 1, timeout_s);
			} else {
				continue;
			}
			nfinished++;
			nrunning--;
		}
		if (!nfinished) {
			struct timespec ts = { 0, BUILD_POLL_NS };
			nanosleep(&ts, NULL);
		}
	}

	for (int i = 0; i < n; i++) {
		if (states[i].state != J_WAITING)
			continue;
		const build_job *d = &jobs[states[i].dup];
		jobs[i].status = d->status;
		memcpy(jobs[i].msg, d->msg, sizeof jobs[i].msg);
		memcpy(jobs[i].so, d->so, sizeof jobs[i].so);
		jobs[i].cached = d->status == BUILD_OK;
	}
	free(states);
	free(slots);
	return TK_OK;

fail:
	for (int k = 0; k < njobs; k++) {
		slot *s = &slots[k];
		if (!s->pid)
			continue;
		int st;
		kill_group(s->pid);
		wait_blocking(s->pid, &st);
		finish_job(dir, jobs, states, s, st, 1, timeout_s);
		snprintf(jobs[s->job].msg, sizeof jobs[s->job].msg, "not built");
		jobs[s->job].status = BUILD_ERROR;
	}
	for (int i = 0; i < n; i++)
		if (states[i].state != J_DONE)
			jobs[i].so[0] = 0;
	free(states);
	free(slots);
	return rc;
}
