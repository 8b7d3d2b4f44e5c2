/*
 * build: compile kernels into shared objects with the target's compiler, a
 * few at a time, each in its own process group so that a compile past its
 * time limit can be killed together with cc1 and as. Results are cached by a
 * SHA-256 of everything that determines the object code: the source, the
 * flags, the compiler command and version, and the CPU model (the flags may
 * say -march=native). Files in the cache directory, KEY being the first 32
 * hex digits of that hash:
 *
 *     KEY.so                    the kernel, renamed into place when complete
 *     KEY.sha256                the SHA-256 of KEY.so's content, written before it
 *     KEY.c                     its source (kept: handy when a kernel misbehaves)
 *     ref/KEY.ref               a task's reference outputs (build_ref_store), KEY
 *                               hashing the task and its inputs; not kernels:
 *                               neither counted nor trimmed
 *     KEY.{c,so,sha256,log}.tmp.<pid>.<n>  in-flight files, removed when done
 *     KEY.rep.tmp.<pid>.<n>.{su,vec}  the compiler's reports of a build that
 *                               asked for them (build_opts.reports), in flight
 *                               until the caller has read them (build_jobs_close)
 *
 * Every file appears by rename(), so several tunekit processes can share one
 * cache directory. Files are opened with O_NOFOLLOW (a link is never
 * followed) and O_NONBLOCK (a planted FIFO cannot block us). An entry's last
 * use is the modification time of its newest file: a cache hit touches the
 * sidecar. Who may write in the directory is checked once per call
 * (build_cache_prepare); each object is checked again when served, and the
 * measuring child checks it once more before it loads it (run.c).
 */
#define _GNU_SOURCE
#include "build.h"

#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pwd.h>
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
#define BUILD_JOBARGS 9   /* and per job: the reports' 6, -o, output, source */
#define BUILD_POLL_NS 2000000L
#define BUILD_HASH_VERSION "tunekit-build-2"
#define BUILD_REF_VERSION "tunekit-ref-1" /* change when the reference computation does */
#define BUILD_KEYLEN 32   /* hex digits of the key: 128 bits */
#define BUILD_STALE_S 600 /* in-flight files older than this are left from killed builds */

const char *build_default_cache(void)
{
	static char dir[4096];
	const char *e;
	struct passwd *pw;
	if ((e = getenv("TUNEKIT_CACHE")) && *e)
		snprintf(dir, sizeof dir, "%s", e);
	else if ((e = getenv("XDG_CACHE_HOME")) && *e == '/')
		snprintf(dir, sizeof dir, "%s/tunekit", e);
	else if ((e = getenv("HOME")) && *e == '/')
		snprintf(dir, sizeof dir, "%s/.cache/tunekit", e);
	else if ((pw = getpwuid(geteuid())) && pw->pw_dir && pw->pw_dir[0] == '/' &&
	         pw->pw_dir[1] && access(pw->pw_dir, W_OK) == 0)
		snprintf(dir, sizeof dir, "%s/.cache/tunekit", pw->pw_dir);
	else
		snprintf(dir, sizeof dir, "/tmp/tunekit-cache-%u", (unsigned)geteuid());
	return dir;
}

/* mkdir -p, creating what is missing with mode 0700. Returns TK_OK or TK_EIO. */
static int mkdir_p(const char *dir, const char *what)
{
	char p[4096];
	if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
		return tk_seterr(TK_EIO, "%s name too long", what);
	for (char *s = p + 1;; s++) {
		if (*s == '/' || !*s) {
			char c = *s;
			*s = 0;
			if (mkdir(p, 0700) < 0 && errno != EEXIST)
				return tk_seterr(TK_EIO, "cannot create %s: %s", p, strerror(errno));
			*s = c;
			if (!c)
				break;
		}
	}
	return TK_OK;
}

int build_private_dir(const char *path, const char *what)
{
	assert(path && what);
	struct stat st, st2;
	char dir[4096];
	/* Without its trailing slashes: lstat("link/") would follow the link. */
	if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
		return tk_seterr(TK_EIO, "%s name too long", what);
	for (size_t l = strlen(dir); l > 1 && dir[l - 1] == '/';)
		dir[--l] = 0;
	int rc = mkdir_p(dir, what);
	if (rc)
		return rc;
	if (lstat(dir, &st) < 0)
		return tk_seterr(TK_EIO, "cannot use %s %s: %s", what, dir, strerror(errno));
	if (S_ISLNK(st.st_mode))
		return tk_seterr(TK_EIO, "%s %s is a symbolic link: refusing it "
		                 "(give the real directory)", what, dir);
	if (!S_ISDIR(st.st_mode))
		return tk_seterr(TK_EIO, "%s %s is not a directory", what, dir);
	if (st.st_uid != geteuid())
		return tk_seterr(TK_EIO, "%s %s belongs to uid %u, not to you (uid %u): "
		                 "refusing it", what, dir, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & 022)
		return tk_seterr(TK_EIO, "%s %s is writable by others (mode %03o): "
		                 "refusing it; remove it or make it private (chmod 700)", what, dir,
		                 (unsigned)(st.st_mode & 0777));
	/* The parent: others who may write there could rename the cache away and
	 * put theirs in its place, unless the sticky bit stops them. */
	char parent[4096];
	tk_dirname(parent, sizeof parent, dir);
	if (stat(parent, &st2) == 0 && (st2.st_mode & 002) && !(st2.st_mode & S_ISVTX))
		return tk_seterr(TK_EIO, "%s %s is in %s, which anyone may write to: "
		                 "refusing it", what, dir, parent);
	if (st.st_mode & 077) {
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st2) < 0 || st2.st_ino != st.st_ino ||
		    st2.st_dev != st.st_dev || fchmod(fd, 0700) < 0) {
			int e = errno;
			if (fd >= 0)
				close(fd);
			return tk_seterr(TK_EIO, "cannot make %s %s private: %s", what, dir,
			                 strerror(e));
		}
		close(fd);
	}
	return TK_OK;
}

int build_cache_prepare(const char *dir)
{
	return build_private_dir(dir, "cache directory");
}

/* The cache key of src built for t: BUILD_KEYLEN hex digits. */
static void build_key(const tk_target *t, const char *src, char key[SHA256_HEX])
{
	const char *parts[] = { BUILD_HASH_VERSION, t->cc, t->cc_version, t->cflags, t->cpu, src };
	sha256_ctx c;
	unsigned char d[32];
	sha256_init(&c);
	for (int i = 0; i < ArraySize(parts); i++)
		sha256_update(&c, parts[i], strlen(parts[i]) + 1); /* with the NUL: a separator */
	sha256_final(&c, d);
	sha256_tohex(d, key);
	key[BUILD_KEYLEN] = 0;
}

/* A file we may trust: a regular file, ours, writable by no one else. */
static int file_trusted(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_uid == geteuid() && !(st->st_mode & 022);
}

/* Open path for reading without following a link or blocking on a FIFO;
 * *st receives its status. Returns the descriptor or -1 (errno set). */
static int open_nofollow(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, st) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Serve job from the cache entry KEY in dir, whose object path is already
 * in job->so. Returns 1 if served (job->fd, job->sha256 set, the entry's use
 * recorded), 0 if the entry is absent or incomplete, -1 if it was there but
 * failed a check: then its object and sidecar are removed. */
static int cache_lookup(const char *dir, const char *key, build_job *job)
{
	char side[4200], want[80], got[SHA256_HEX];
	struct stat st;
	int sfd, fd = -1, ok = 0;
	snprintf(side, sizeof side, "%s/%s.sha256", dir, key);
	if ((sfd = open_nofollow(side, &st)) < 0) {
		if (errno == ENOENT)
			return 0;
		goto refuse;
	}
	ssize_t k = file_trusted(&st) ? pread(sfd, want, sizeof want - 1, 0) : -1;
	if (k != SHA256_HEX || want[SHA256_HEX - 1] != '\n')
		goto refuse;
	want[SHA256_HEX - 1] = 0;
	if ((fd = open_nofollow(job->so, &st)) < 0) {
		if (errno == ENOENT) {
			close(sfd);
			return 0;
		}
		goto refuse;
	}
	if (!file_trusted(&st) || sha256_fd(fd, got) < 0 || strcmp(got, want))
		goto refuse;
	futimens(sfd, NULL); /* last use: now */
	ok = 1;
refuse:
	if (sfd >= 0)
		close(sfd);
	if (ok) {
		job->fd = fd;
		memcpy(job->sha256, got, sizeof got);
		return 1;
	}
	if (fd >= 0)
		close(fd);
	unlink(side);
	unlink(job->so);
	return -1;
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
	int dup;       /* J_WAITING: the job with the same key that builds it */
	char key[SHA256_HEX];
} job_state;

typedef struct slot {
	pid_t pid;     /* 0: free */
	int job;
	int logfd;     /* compiler stdout+stderr, already unlinked */
	double t0;
	unsigned cnt;  /* tmp-name counter of this compile */
	char tmp[4200];/* KEY.so.tmp.<pid>.<n> */
	char rep[4096];/* with reports: their stem, KEY.rep.tmp.<pid>.<n> */
	char dumpdir[4200], vecarg[4300]; /* the reports' arguments */
} slot;

/* Remove the reports of stem (STEM.su, STEM.vec). */
static void reports_remove(const char *stem)
{
	char p[4400];
	if (!stem[0])
		return;
	snprintf(p, sizeof p, "%s.su", stem);
	unlink(p);
	snprintf(p, sizeof p, "%s.vec", stem);
	unlink(p);
}

static unsigned tmp_counter;

/* Write the source and start the compiler for job j in slot s. argv holds
 * the compiler and the target's flags, nargv of them, with room for
 * BUILD_JOBARGS more and the NULL. */
static int start_job(const char *dir, build_job *job, job_state *js, slot *s, int j,
                     char **argv, int nargv, int reports, double timeout_s)
{
	char src[4100], srctmp[4200];
	unsigned cnt = __atomic_fetch_add(&tmp_counter, 1, __ATOMIC_RELAXED);
	pid_t self = getpid();
	snprintf(src, sizeof src, "%s/%s.c", dir, js->key);
	snprintf(srctmp, sizeof srctmp, "%s.tmp.%d.%u", src, (int)self, cnt);
	snprintf(s->tmp, sizeof s->tmp, "%s/%s.so.tmp.%d.%u", dir, js->key, (int)self, cnt);
	s->cnt = cnt;
	int rc = tk_write_renamed(srctmp, src, job->src, strlen(job->src), 0600);
	if (rc)
		return rc;

	char logname[4200];
	snprintf(logname, sizeof logname, "%s/%s.log.tmp.%d.%u", dir, js->key, (int)self, cnt);
	s->logfd = open(logname, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (s->logfd < 0)
		return tk_seterr(TK_EIO, "cannot create %s: %s", logname, strerror(errno));
	unlink(logname);

	s->rep[0] = 0;
	if (reports) {
		/* gcc names the .su after -dumpdir and -dumpbase (else after the
		 * output's name); the flags write files, not code */
		snprintf(s->rep, sizeof s->rep, "%.4000s/%s.rep.tmp.%d.%u", dir, js->key, (int)self, cnt);
		snprintf(s->dumpdir, sizeof s->dumpdir, "%s/", dir);
		snprintf(s->vecarg, sizeof s->vecarg, "-fopt-info-vec-all=%s.vec", s->rep);
		argv[nargv++] = "-fstack-usage";
		argv[nargv++] = "-dumpdir";
		argv[nargv++] = s->dumpdir;
		argv[nargv++] = "-dumpbase";
		argv[nargv++] = strrchr(s->rep, '/') + 1;
		argv[nargv++] = s->vecarg;
	}
	argv[nargv++] = "-o";
	argv[nargv++] = s->tmp;
	argv[nargv++] = src;
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

/* Put the object the compiler left in s->tmp into the cache: make it
 * private, hash it, write its sidecar, rename it into place, and keep a
 * descriptor of it in the job. Returns 0, or -1 with job->msg set. */
static int install_object(const char *dir, build_job *job, const job_state *js, const slot *s)
{
	struct stat st;
	char side[4200], sidetmp[4300], line[SHA256_HEX + 1];
	int fd = open_nofollow(s->tmp, &st);
	if (fd < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || fchmod(fd, 0600) < 0 ||
	    sha256_fd(fd, job->sha256) < 0) {
		snprintf(job->msg, sizeof job->msg, "cannot read the compiled object %.400s: %s",
		         s->tmp, fd < 0 || errno ? strerror(errno) : "not a regular file of yours");
		goto fail;
	}
	snprintf(side, sizeof side, "%s/%s.sha256", dir, js->key);
	snprintf(sidetmp, sizeof sidetmp, "%s.tmp.%d.%u", side, (int)getpid(), s->cnt);
	snprintf(line, sizeof line, "%s\n", job->sha256);
	if (tk_write_renamed(sidetmp, side, line, SHA256_HEX, 0600) != TK_OK) {
		snprintf(job->msg, sizeof job->msg, "%.500s", tk_errmsg());
		goto fail;
	}
	if (rename(s->tmp, job->so) < 0) {
		snprintf(job->msg, sizeof job->msg, "cannot create %.400s: %s", job->so,
		         strerror(errno));
		goto fail;
	}
	job->fd = fd;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	job->sha256[0] = 0;
	return -1;
}

/* Record the outcome of the compile in slot s, whose wait status is st, and
 * free the slot. timed_out: we killed it. Adds the bytes put in the cache
 * to *added. */
static void finish_job(const char *dir, build_job *jobs, job_state *states, slot *s, int st,
                       int timed_out, double timeout_s, int64_t *added)
{
	build_job *job = &jobs[s->job];
	job->seconds = tk_now() - s->t0;
	job->status = BUILD_ERROR;
	if (timed_out) {
		job->status = BUILD_TIMEOUT;
		if (!job->msg[0] || !strcmp(job->msg, "not built"))
			snprintf(job->msg, sizeof job->msg, "compile timeout after %g s", timeout_s);
	} else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		struct stat so;
		int64_t size = lstat(s->tmp, &so) == 0 ? (int64_t)so.st_size : 0;
		if (install_object(dir, job, &states[s->job], s) == 0) {
			job->status = BUILD_OK;
			job->msg[0] = 0;
			snprintf(job->report, sizeof job->report, "%s", s->rep);
			*added += size + (int64_t)strlen(job->src) + SHA256_HEX;
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
	if (job->status != BUILD_OK) {
		job->so[0] = 0;
		reports_remove(s->rep);
	}
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

void build_jobs_close(build_job *jobs, int n)
{
	for (int i = 0; i < n; i++) {
		if (jobs[i].fd >= 0)
			close(jobs[i].fd);
		jobs[i].fd = -1;
		reports_remove(jobs[i].report);
		jobs[i].report[0] = 0;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The limit of a compilation once nDone of the batch's nCompile have
 * finished in aDone[] seconds: o->adapt times their median (at least
 * o->adapt_floor_s) once half of them and at least 3 have, never above
 * o->timeout_s. *pMedian receives the median. Sorts aDone. */
static double adapt_limit(const build_opts *o, double *aDone, int nDone, int nCompile,
                          double *pMedian)
{
	assert(o->adapt > 0 && nDone >= 1 && nDone <= nCompile);
	if (nDone < 3 || 2 * nDone < nCompile)
		return o->timeout_s;
	qsort(aDone, (size_t)nDone, sizeof *aDone, cmp_double);
	*pMedian = nDone % 2 ? aDone[nDone / 2] : (aDone[nDone / 2 - 1] + aDone[nDone / 2]) / 2;
	double limit = o->adapt * *pMedian;
	if (limit < o->adapt_floor_s)
		limit = o->adapt_floor_s;
	return limit < o->timeout_s ? limit : o->timeout_s;
}

/* Bytes this process put in the cache since it last trimmed it; -1 before
 * the first trim. The cache is trimmed on a process's first build and then
 * whenever it has added a 64th of the limit, so that a full directory scan
 * is rare and the limit is overshot by at most that much per process. */
static int64_t trim_debt = -1;

int build_run(const tk_target *t, const build_opts *o, build_job *jobs, int n)
{
	assert(t && o && (jobs || n == 0) && n >= 0 && o->timeout_s > 0);
	int njobs = o->njobs;
	double timeout_s = o->timeout_s;
	int64_t cache_max = o->cache_max > 0 ? o->cache_max : BUILD_CACHE_MAX_DEFAULT;
	if (njobs < 1)
		njobs = 1;
	if (njobs > n)
		njobs = n > 0 ? n : 1;

	char dir[4096];
	snprintf(dir, sizeof dir, "%s", o->cache_dir ? o->cache_dir : build_default_cache());
	for (size_t l = strlen(dir); l > 1 && dir[l - 1] == '/';)
		dir[--l] = 0;
	for (int i = 0; i < n; i++) {
		jobs[i].so[0] = 0;
		jobs[i].fd = -1;
		jobs[i].sha256[0] = 0;
		jobs[i].status = BUILD_ERROR;
		snprintf(jobs[i].msg, sizeof jobs[i].msg, "not built");
		jobs[i].seconds = 0;
		jobs[i].cached = 0;
		jobs[i].refused = 0;
		jobs[i].report[0] = 0;
	}
	if (strlen(dir) > 4000)
		return tk_seterr(TK_EIO, "cache directory name too long");
	int rc = build_cache_prepare(dir);
	if (rc)
		return rc;

	/* cc, the flags, then per job (start_job) up to BUILD_JOBARGS, NULL */
	char flags[sizeof t->cflags];
	char *argv[1 + BUILD_MAXARGS + BUILD_JOBARGS + 1];
	assert(o->reports >= BUILD_REPORTS_NONE && o->reports <= BUILD_REPORTS_ALL);
	int nargv = 0;
	argv[nargv++] = (char *)t->cc;
	snprintf(flags, sizeof flags, "%s", t->cflags);
	char *save = NULL;
	for (char *tok = strtok_r(flags, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (nargv > BUILD_MAXARGS)
			return tk_seterr(TK_EINVAL, "too many compiler flags");
		argv[nargv++] = tok;
	}

	job_state *states = calloc(n > 0 ? n : 1, sizeof *states);
	slot *slots = calloc(njobs, sizeof *slots);
	if (!states || !slots) {
		free(states);
		free(slots);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}

	for (int i = 0; i < n; i++) {
		assert(jobs[i].src);
		build_key(t, jobs[i].src, states[i].key);
		snprintf(jobs[i].so, sizeof jobs[i].so, "%s/%s.so", dir, states[i].key);
		states[i].state = J_PENDING;
		for (int j = 0; j < i; j++) {
			if (states[j].state != J_WAITING && !strcmp(states[j].key, states[i].key)) {
				states[i].state = J_WAITING;
				states[i].dup = j;
				break;
			}
		}
		if (states[i].state == J_WAITING || o->reports == BUILD_REPORTS_ALL)
			continue; /* a cached object has no reports: compiled */
		int got = cache_lookup(dir, states[i].key, &jobs[i]);
		jobs[i].refused = got < 0;
		if (got > 0) {
			jobs[i].status = BUILD_OK;
			jobs[i].cached = 1;
			jobs[i].msg[0] = 0;
			states[i].state = J_DONE;
		}
	}

	/* The adaptive limit: the median of the compilations finished so far */
	int ncompile = 0, ndone = 0;
	double *aDone = NULL, limit = timeout_s, median = 0;
	for (int i = 0; i < n; i++)
		ncompile += states[i].state == J_PENDING;
	if (o->adapt > 0 && ncompile >= 3 && !(aDone = malloc(sizeof *aDone * (size_t)ncompile))) {
		free(states);
		free(slots);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}

	int next = 0, nrunning = 0;
	int64_t added = 0;
	for (;;) {
		for (int k = 0; k < njobs && next < n; k++) {
			if (slots[k].pid)
				continue;
			while (next < n && states[next].state != J_PENDING)
				next++;
			if (next == n)
				break;
			rc = start_job(dir, &jobs[next], &states[next], &slots[k], next, argv, nargv,
			               o->reports, timeout_s);
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
				finish_job(dir, jobs, states, s, st, 0, timeout_s, &added);
				if (aDone) {
					aDone[ndone++] = jobs[s->job].seconds;
					limit = adapt_limit(o, aDone, ndone, ncompile, &median);
				}
			} else if (now - s->t0 > limit) {
				build_job *job = &jobs[s->job];
				if (limit < timeout_s)
					snprintf(job->msg, sizeof job->msg,
					         "compile timeout after %.3g s: over %g times the median "
					         "compile of its batch (%.3g s over %d of %d)", limit,
					         o->adapt, median, ndone, ncompile);
				kill_group(s->pid);
				wait_blocking(s->pid, &st);
				finish_job(dir, jobs, states, s, st, 1, timeout_s, &added);
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
		memcpy(jobs[i].sha256, d->sha256, sizeof jobs[i].sha256);
		jobs[i].cached = d->status == BUILD_OK;
		memcpy(jobs[i].report, d->report, sizeof jobs[i].report); /* shared: removed once */
		if (d->status == BUILD_OK && (jobs[i].fd = fcntl(d->fd, F_DUPFD_CLOEXEC, 0)) < 0) {
			rc = tk_seterr(TK_EIO, "cannot keep the compiled kernels open: %s",
			               strerror(errno));
			goto fail;
		}
	}
	if (trim_debt < 0 || trim_debt + added >= cache_max / 64) {
		if ((rc = build_cache_trim(dir, cache_max, NULL)))
			goto fail;
		trim_debt = 0;
	} else {
		trim_debt += added;
	}
	free(states);
	free(slots);
	free(aDone);
	return TK_OK;

fail:
	for (int k = 0; k < njobs; k++) {
		slot *s = &slots[k];
		if (!s->pid)
			continue;
		int st;
		kill_group(s->pid);
		wait_blocking(s->pid, &st);
		finish_job(dir, jobs, states, s, st, 1, timeout_s, &added);
		snprintf(jobs[s->job].msg, sizeof jobs[s->job].msg, "not built");
		jobs[s->job].status = BUILD_ERROR;
	}
	build_jobs_close(jobs, n);
	for (int i = 0; i < n; i++)
		if (states[i].state != J_DONE || jobs[i].status != BUILD_OK)
			jobs[i].so[0] = 0;
	free(states);
	free(slots);
	free(aDone);
	return rc;
}

/* ---- reference outputs ---------------------------------------------- */

#define REF_MAGIC "TKREF01\n"  /* 8 bytes */

/* KEY.ref: REF_MAGIC, n as a uint64_t, ref[n], refabs[n] (doubles, this
 * machine's byte order), then the SHA-256 of all of that (32 bytes). KEY
 * hashes the inputs' description (build_ref_key). */
static void ref_path(const char *dir, const char *key, char *path, size_t npath)
{
	snprintf(path, npath, "%s/ref/%s.ref", dir, key);
}

int build_ref_prepare(const char *dir)
{
	char sub[4200];
	snprintf(sub, sizeof sub, "%s/ref", dir);
	int rc = build_cache_prepare(dir);
	return rc ? rc : build_private_dir(sub, "reference cache directory");
}

void build_ref_key(const char *task, int nin, const float *const *in, const size_t *in_n,
                   char key[SHA256_HEX])
{
	sha256_ctx c;
	unsigned char d[32];
	assert(task && nin >= 0 && (in || nin == 0));
	sha256_init(&c);
	sha256_update(&c, BUILD_REF_VERSION, strlen(BUILD_REF_VERSION) + 1);
	sha256_update(&c, task, strlen(task) + 1);
	for (int i = 0; i < nin; i++) {
		uint64_t n64 = in_n[i];
		sha256_update(&c, &n64, sizeof n64);
		sha256_update(&c, in[i], in_n[i] * sizeof(float));
	}
	sha256_final(&c, d);
	sha256_tohex(d, key);
	key[BUILD_KEYLEN] = 0;
}

int build_ref_load(const char *dir, const char *key, size_t n, double *ref, double *refabs,
                   int *found)
{
	char path[4400];
	struct stat st;
	assert(dir && key && ref && refabs && found);
	*found = 0;
	ref_path(dir, key, path, sizeof path);
	int fd = open_nofollow(path, &st);
	if (fd < 0)
		return TK_OK; /* absent */
	size_t nbyte = 8 + 8 + 2 * n * sizeof(double), want = nbyte + 32;
	unsigned char *buf = NULL;
	int ok = file_trusted(&st) && st.st_size == (off_t)want && (buf = malloc(want)) != NULL;
	size_t got = 0;
	while (ok && got < want) {
		ssize_t k = pread(fd, buf + got, want - got, (off_t)got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			ok = 0;
		else
			got += (size_t)k;
	}
	uint64_t n64 = 0;
	unsigned char d[32];
	if (ok) {
		memcpy(&n64, buf + 8, 8);
		sha256_ctx c;
		sha256_init(&c);
		sha256_update(&c, buf, nbyte);
		sha256_final(&c, d);
		ok = !memcmp(buf, REF_MAGIC, 8) && n64 == (uint64_t)n && !memcmp(d, buf + nbyte, 32);
	}
	if (ok) {
		memcpy(ref, buf + 16, n * sizeof(double));
		memcpy(refabs, buf + 16 + n * sizeof(double), n * sizeof(double));
		futimens(fd, NULL); /* its last use, for the cache's trim */
		*found = 1;
	} else if (S_ISREG(st.st_mode) && st.st_uid == geteuid()) {
		unlink(path); /* damaged or foreign: computed and written again */
	}
	close(fd);
	free(buf);
	return TK_OK;
}

int build_ref_store(const char *dir, const char *key, size_t n, const double *ref,
                    const double *refabs)
{
	char path[4400], tmp[4500];
	assert(dir && key && ref && refabs);
	size_t nbyte = 8 + 8 + 2 * n * sizeof(double);
	unsigned char *buf = malloc(nbyte + 32);
	if (!buf)
		return tk_seterr(TK_ENOMEM, "out of memory");
	uint64_t n64 = n;
	memcpy(buf, REF_MAGIC, 8);
	memcpy(buf + 8, &n64, 8);
	memcpy(buf + 16, ref, n * sizeof(double));
	memcpy(buf + 16 + n * sizeof(double), refabs, n * sizeof(double));
	sha256_ctx c;
	sha256_init(&c);
	sha256_update(&c, buf, nbyte);
	sha256_final(&c, buf + nbyte);
	ref_path(dir, key, path, sizeof path);
	unsigned cnt = __atomic_fetch_add(&tmp_counter, 1, __ATOMIC_RELAXED);
	snprintf(tmp, sizeof tmp, "%s.tmp.%d.%u", path, (int)getpid(), cnt);
	int rc = tk_write_renamed(tmp, path, buf, nbyte + 32, 0600);
	free(buf);
	return rc;
}

/* ---- the cache as a whole ------------------------------------------- */

/* One file of tunekit's in the cache directory. */
typedef struct cache_file {
	char name[256];
	int keylen;        /* the entry is name[0..keylen) */
	int tmp;           /* an in-flight file */
	int64_t size;
	double mtime;
} cache_file;

typedef struct cache_entry {
	int first, n;      /* its files: files[first..first+n) */
	int64_t size;
	double used;       /* newest mtime of its files */
} cache_entry;

/* Length of the key a cache file name starts with: at least 16 hex digits
 * (16: entries of tunekit-build-1) followed by a dot; 0 if the name is not
 * one of ours. *tmp: it is an in-flight file. */
static int cache_name(const char *name, int *tmp)
{
	int k = 0;
	while (isxdigit((unsigned char)name[k]) && !isupper((unsigned char)name[k]))
		k++;
	if (k < 16 || k > 64 || name[k] != '.')
		return 0;
	const char *ext = name + k + 1;
	*tmp = strstr(ext, ".tmp.") != NULL;
	if (*tmp || !strcmp(ext, "so") || !strcmp(ext, "c") || !strcmp(ext, "sha256"))
		return k;
	return 0;
}

static int cmp_file(const void *a, const void *b)
{
	const cache_file *x = a, *y = b;
	int c = strncmp(x->name, y->name, (size_t)(x->keylen < y->keylen ? x->keylen : y->keylen));
	return c ? c : x->keylen - y->keylen;
}

static int cmp_entry_use(const void *a, const void *b)
{
	const cache_entry *x = a, *y = b;
	return (x->used > y->used) - (x->used < y->used);
}

/* List tunekit's files in the cache directory dir, sorted by entry. TK_OK,
 * TK_EIO, TK_ENOMEM; the caller frees *out. */
static int cache_scan(const char *dir, cache_file **out, int *nout)
{
	*out = NULL;
	*nout = 0;
	DIR *d = opendir(dir);
	if (!d)
		return tk_seterr(TK_EIO, "cannot read cache directory %s: %s", dir, strerror(errno));
	cache_file *f = NULL;
	int n = 0, cap = 0, rc = TK_OK;
	struct dirent *e;
	while ((e = readdir(d))) {
		int tmp = 0, k = cache_name(e->d_name, &tmp);
		struct stat st;
		if (!k || strlen(e->d_name) >= sizeof f->name ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			cache_file *g = realloc(f, sizeof *g * (size_t)cap);
			if (!g) {
				rc = tk_seterr(TK_ENOMEM, "out of memory");
				break;
			}
			f = g;
		}
		snprintf(f[n].name, sizeof f[n].name, "%s", e->d_name);
		f[n].keylen = k;
		f[n].tmp = tmp;
		f[n].size = (int64_t)st.st_size;
		f[n].mtime = (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec * 1e-9;
		n++;
	}
	closedir(d);
	if (rc) {
		free(f);
		return rc;
	}
	if (n)
		qsort(f, (size_t)n, sizeof *f, cmp_file);
	*out = f;
	*nout = n;
	return TK_OK;
}

/* Scan dir and, when trim is set, remove stale in-flight files and then
 * the least recently used entries until at most max_bytes remain. *info
 * receives what the cache holds (trim == 0) or what was removed (trim). */
static int cache_walk(const char *dir, int trim, int64_t max_bytes, build_cache_info *info)
{
	cache_file *f;
	cache_entry *ent = NULL;
	int nf, ne = 0, rc;
	memset(info, 0, sizeof *info);
	if ((rc = cache_scan(dir, &f, &nf)))
		return rc;
	if (nf && !(ent = calloc((size_t)nf, sizeof *ent))) {
		free(f);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	double stale_before = tk_walltime() - BUILD_STALE_S;
	int64_t total = 0;
	char path[4400];
	for (int i = 0; i < nf; i++) {
		if (f[i].tmp) {
			if (f[i].mtime >= stale_before) {
				total += f[i].size; /* in flight: counted, not removed */
				if (!trim)
					info->files++, info->bytes += f[i].size;
				continue;
			}
			if (!trim) {
				info->stale++, info->files++, info->bytes += f[i].size;
				continue;
			}
			snprintf(path, sizeof path, "%s/%s", dir, f[i].name);
			if (unlink(path) == 0)
				info->stale++, info->files++, info->bytes += f[i].size;
			continue;
		}
		if (!ne || cmp_file(&f[ent[ne - 1].first], &f[i]))
			ent[ne++] = (cache_entry){ i, 0, 0, 0 };
		cache_entry *c = &ent[ne - 1];
		c->n = i - c->first + 1;
		c->size += f[i].size;
		if (f[i].mtime > c->used)
			c->used = f[i].mtime;
		total += f[i].size;
	}
	if (ne)
		qsort(ent, (size_t)ne, sizeof *ent, cmp_entry_use);
	for (int j = 0; j < ne; j++) {
		cache_entry *c = &ent[j];
		if (trim && total > max_bytes) {
			/* The sidecar first: a reader that finds it gone rebuilds. */
			for (int pass = 0; pass < 2; pass++)
				for (int i = c->first; i < c->first + c->n; i++) {
					if (f[i].tmp || (!pass) != !!strstr(f[i].name, ".sha256"))
						continue;
					snprintf(path, sizeof path, "%s/%s", dir, f[i].name);
					if (unlink(path) == 0 || errno == ENOENT)
						info->files++, info->bytes += f[i].size;
				}
			info->entries++;
			total -= c->size;
		} else if (trim) {
			continue;
		} else {
			info->entries++;
			info->files += c->n;
			info->bytes += c->size;
		}
		if (!info->oldest || c->used < info->oldest)
			info->oldest = c->used;
		if (c->used > info->newest)
			info->newest = c->used;
	}
	free(ent);
	free(f);
	return TK_OK;
}

int build_cache_stat(const char *dir, build_cache_info *out)
{
	assert(dir && out);
	return cache_walk(dir, 0, 0, out);
}

int build_cache_trim(const char *dir, int64_t max_bytes, build_cache_info *removed)
{
	build_cache_info dummy;
	assert(dir && max_bytes >= 0);
	return cache_walk(dir, 1, max_bytes, removed ? removed : &dummy);
}

int build_parse_size(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	if (!s || !isdigit((unsigned char)*s))
		return tk_seterr(TK_EINVAL, "bad size '%s' (a number of bytes, with K, M, G or T)",
		                 s ? s : "");
	unsigned long long v = strtoull(s, &end, 10);
	int shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (shift && (!strcmp(end, "iB") || !strcmp(end, "B")))
		end += strlen(end);
	else if (!shift && !strcmp(end, "B"))
		end++;
	if (errno || *end || v > (unsigned long long)(INT64_MAX >> shift))
		return tk_seterr(TK_EINVAL, "bad size '%s' (a number of bytes, with K, M, G or T)", s);
	*out = (int64_t)(v << shift);
	return TK_OK;
}
