/*
 * Unit tests for lib/measure: target specs, the compile cache and the
 * measuring harness, with small hand-written kernels (N = 1000 floats:
 * out = in0 * in1 + 1) built into a private cache under /tmp.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/target.h"
#include "measure/build.h"
#include "measure/measure.h"
#include "measure/run.h"
#include "util/sha256.h"
#include "util/util.h"
#include "unit.h"

#define N 1000

static char cache[64];
static tk_target native;

/* ---- kernels -------------------------------------------------------- */

#define ABI "const int tk_abi = 1;\n"
#define NOWS "const unsigned long tk_workspace_floats = 0;\n"
#define KERNEL "void tk_kernel(float *const *b, float *ws)\n"

static const char k_good[] = ABI NOWS KERNEL
	"{ for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f; }\n";
static const char k_good2[] = ABI NOWS KERNEL
	"{ float *o = b[0]; const float *x = b[1], *y = b[2];\n"
	"  for (int i = 999; i >= 0; i--) o[i] = y[i] * x[i] + 1.0f; }\n";
static const char k_segv[] = ABI NOWS KERNEL
	"{ *(volatile int *)0 = 1; }\n";
static const char k_loop[] = ABI NOWS KERNEL
	"{ volatile int go = 1; while (go) ; }\n";
static const char k_wrong[] = ABI NOWS KERNEL
	"{ for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f;\n"
	"  b[0][123] = 42.0f; }\n";
static const char k_unwritten[] = ABI NOWS KERNEL
	"{ for (int i = 0; i < 1000; i++) if (i != 7) b[0][i] = b[1][i] * b[2][i] + 1.0f; }\n";
static const char k_nosym[] = ABI NOWS
	"void tk_kernel_misspelt(float *const *b, float *ws) { }\n";
static const char k_abort[] = "#include <stdlib.h>\n" ABI NOWS KERNEL
	"{ abort(); }\n";
static const char k_badabi[] = "const int tk_abi = 2;\n" NOWS KERNEL
	"{ for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f; }\n";
static const char k_exit[] = "#include <stdlib.h>\n" ABI NOWS KERNEL
	"{ exit(3); }\n";
/* Right the first time (output still NaN), wrong once it reads its own output. */
static const char k_stateful[] = ABI NOWS KERNEL
	"{ float d = b[0][0] == b[0][0] ? 1.0f : 0.0f;\n"
	"  for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f + d; }\n";
static const char k_overrun[] = ABI NOWS KERNEL
	"{ for (int i = 0; i <= 1000; i++) b[0][i] = b[1][i % 1000] * b[2][i % 1000] + 1.0f; }\n";
static const char k_hugews[] = ABI
	"const unsigned long tk_workspace_floats = 1UL << 40;\n" KERNEL "{ }\n";
/* Uses 4096 floats of workspace, and insists that it is 64-byte aligned. */
static const char k_ws[] = "#include <stdint.h>\n" ABI
	"const unsigned long tk_workspace_floats = 4096;\n" KERNEL
	"{ for (int i = 0; i < 4096; i++) ws[i] = (float)(i % 1000);\n"
	"  float bad = ((uintptr_t)ws % 64 || (uintptr_t)b[0] % 64) ? 5.0f : 0.0f;\n"
	"  for (int i = 0; i < 1000; i++)\n"
	"    b[0][i] = b[1][(int)ws[i + 3000]] * b[2][i] + 1.0f + bad; }\n";
/* Right only when the process may run on exactly one CPU. */
static const char k_pinned[] = "#define _GNU_SOURCE\n#include <sched.h>\n" ABI NOWS KERNEL
	"{ cpu_set_t s; sched_getaffinity(0, sizeof s, &s);\n"
	"  float bad = CPU_COUNT(&s) == 1 ? 0.0f : 9.0f;\n"
	"  for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f + bad; }\n";
/* About 100 us a call, every call alike. */
static const char k_steady[] = ABI NOWS KERNEL
	"{ for (int r = 0; r < 100; r++) {\n"
	"    for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f;\n"
	"    __asm__ volatile(\"\" ::: \"memory\"); } }\n";
/* The same, but every other run of 50 calls is four times slower: injected
 * jitter that no number of 50-call micro-batches averages away. */
static const char k_jitter[] = ABI NOWS KERNEL
	"{ static long c; int rep = (c++ / 50) % 2 ? 400 : 100;\n"
	"  for (int r = 0; r < rep; r++) {\n"
	"    for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f;\n"
	"    __asm__ volatile(\"\" ::: \"memory\"); } }\n";
/* OpenMP, right only with 2 threads. */
static const char k_omp[] = "#include <omp.h>\n" ABI NOWS KERNEL
	"{ float bad = omp_get_max_threads() == 2 ? 0.0f : 7.0f;\n"
	"  #pragma omp parallel for\n"
	"  for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f + bad; }\n";

/* Busy for 10 ms on its second call, 30 ms on every other: which call
 * became which sample shows in the times. */
static const char k_second[] = "#include <time.h>\n" ABI NOWS KERNEL
	"{ static int c; struct timespec a, t; double ms = c++ == 1 ? 10 : 30;\n"
	"  clock_gettime(CLOCK_MONOTONIC, &a);\n"
	"  do clock_gettime(CLOCK_MONOTONIC, &t);\n"
	"  while ((t.tv_sec - a.tv_sec) * 1e3 + (t.tv_nsec - a.tv_nsec) * 1e-6 < ms);\n"
	"  for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f; }\n";

/* Right on its first call, then it scribbles over its inputs (through
 * the const the ABI does not promise), so later calls are wrong. */
static const char k_scribble[] = ABI NOWS KERNEL
	"{ for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f;\n"
	"  for (int i = 0; i < 1000; i++) b[1][i] = b[2][i] = -7.0f; }\n";

/* Right only if it can open no file, not even for reading (Landlock); the
 * descriptor it gets otherwise is closed. */
static const char k_reads[] = "#include <fcntl.h>\n#include <unistd.h>\n" ABI NOWS KERNEL
	"{ int fd = open(\"/etc/passwd\", O_RDONLY); float bad = fd >= 0 ? 3.0f : 0.0f;\n"
	"  if (fd >= 0) close(fd);\n"
	"  for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f + bad; }\n";

/* ---- helpers -------------------------------------------------------- */

static float in0[N], in1[N];
static double ref[N], refabs[N];
static const float *ins[2] = { in0, in1 };
static const size_t in_n[2] = { N, N };

static run_io make_io(void)
{
	for (int i = 0; i < N; i++) {
		in0[i] = (float)i * 0.01f;
		in1[i] = 1.0f + (float)(i % 7) * 0.5f;
		ref[i] = (double)in0[i] * in1[i] + 1.0;
		refabs[i] = fabs((double)in0[i] * in1[i]) + 1.0;
	}
	run_io io = { 2, ins, in_n, N, ref, refabs, 1e-5, 1e-6 };
	return io;
}

static int file_exists(const char *path)
{
	return path[0] && access(path, F_OK) == 0;
}

/* Number of files in dir whose name contains s. */
static int count_files(const char *dir, const char *s)
{
	DIR *d = opendir(dir);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strstr(e->d_name, s) && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	if (d)
		closedir(d);
	return n;
}

/* Build n jobs for target t in the cache dir; returns build_run's code. */
static int build_in(const tk_target *t, const char *dir, build_job *jobs, int n, int njobs,
                    double timeout_s)
{
	build_opts o = { dir, 0, njobs, timeout_s, 0, 0, BUILD_REPORTS_NONE };
	return build_run(t, &o, jobs, n);
}

/* Build one source with the native target; returns the status. The job's
 * descriptor is closed. */
static int build1(const char *src, build_job *job, double timeout_s)
{
	memset(job, 0, sizeof *job);
	job->src = src;
	int rc = build_in(&native, cache, job, 1, 1, timeout_s);
	CHECK_EQ_INT(rc, TK_OK);
	CHECK(job->status == BUILD_OK ? job->fd >= 0 : job->fd == -1);
	build_jobs_close(job, 1);
	return job->status;
}

/* Write text to path, replacing what is there. */
static void put_file(const char *path, const char *text, mode_t mode)
{
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK_EQ_INT(write(fd, text, strlen(text)), (long long)strlen(text));
		fchmod(fd, mode);
		close(fd);
	}
}

/* Copy the file from to to (replacing it), with mode. */
static void copy_file(const char *from, const char *to, mode_t mode)
{
	static char buf[1 << 20];
	int in = open(from, O_RDONLY);
	ssize_t n = in >= 0 ? read(in, buf, sizeof buf - 1) : -1;
	CHECK(n > 0);
	if (in >= 0)
		close(in);
	buf[n > 0 ? n : 0] = 0;
	unlink(to);
	int fd = open(to, O_WRONLY | O_CREAT | O_EXCL, mode);
	CHECK(fd >= 0 && write(fd, buf, (size_t)(n > 0 ? n : 0)) == n);
	if (fd >= 0) {
		fchmod(fd, mode);
		close(fd);
	}
}

/* ---- target --------------------------------------------------------- */

TEST(test_target_native)
{
	tk_target t, t2, t3;
	CHECK_EQ_INT(tk_target_parse(NULL, &t), TK_OK);
	CHECK(!strcmp(t.isa, "avx512") || !strcmp(t.isa, "avx2") || !strcmp(t.isa, "sse2"));
	CHECK_EQ_INT(t.vlen, !strcmp(t.isa, "avx512") ? 16 : !strcmp(t.isa, "avx2") ? 8 : 4);
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
		CHECK_EQ_STR(t.isa, "avx512");
	CHECK_EQ_INT(t.threads, 1);
	CHECK_EQ_STR(t.cc, "cc");
	CHECK_EQ_STR(t.opt, "-O3");
	CHECK(t.cc_version[0] && !strchr(t.cc_version, '\n'));
	CHECK(t.cpu[0]);
	CHECK(!strncmp(t.cflags, "-O3 ", 4));
	CHECK(strstr(t.cflags, "-fPIC") && strstr(t.cflags, "-shared"));
	CHECK(!strstr(t.cflags, "-fopenmp") && !strstr(t.cflags, "fast-math"));
	char want[160];
	snprintf(want, sizeof want, "cpu:cc=cc,isa=%s,opt=-O3,threads=1", t.isa);
	CHECK_EQ_STR(t.spec, want);
	CHECK(strstr(t.key, t.cpu) && strstr(t.key, t.cc_version) && strstr(t.key, "threads=1"));

	CHECK_EQ_INT(tk_target_parse("native", &t2), TK_OK);
	CHECK_EQ_STR(t2.spec, t.spec);
	CHECK_EQ_INT(tk_target_parse("", &t3), TK_OK);
	CHECK_EQ_STR(t3.key, t.key);
	CHECK_EQ_INT(tk_target_parse("cpu:", &t3), TK_OK);
	CHECK_EQ_STR(t3.spec, t.spec);
	/* The canonical spec parses to itself. */
	CHECK_EQ_INT(tk_target_parse(t.spec, &t3), TK_OK);
	CHECK_EQ_STR(t3.spec, t.spec);
	CHECK_EQ_STR(t3.key, t.key);
}

TEST(test_target_keys)
{
	tk_target t, t2;
	CHECK_EQ_INT(tk_target_parse("cpu:isa=sse2,threads=2", &t), TK_OK);
	CHECK_EQ_STR(t.spec, "cpu:cc=cc,isa=sse2,opt=-O3,threads=2");
	CHECK_EQ_INT(t.vlen, 4);
	CHECK_EQ_INT(t.threads, 2);
	CHECK(strstr(t.cflags, "-fopenmp") != NULL);
	CHECK(strstr(t.cflags, "-march=x86-64") != NULL);
	CHECK(strstr(t.key, "|sse2|") != NULL);
	/* Keys sort, whatever the order given. */
	CHECK_EQ_INT(tk_target_parse("cpu:threads=2,isa=sse2", &t2), TK_OK);
	CHECK_EQ_STR(t2.spec, t.spec);

	CHECK_EQ_INT(tk_target_parse("cpu:isa=sse2,threads=1", &t2), TK_OK);
	CHECK(strcmp(t.key, t2.key) != 0);
	CHECK(!strstr(t2.cflags, "-fopenmp"));

	CHECK_EQ_INT(tk_target_parse("cpu:opt=-O2,cc=gcc", &t2), TK_OK);
	CHECK_EQ_STR(t2.cc, "gcc");
	CHECK(!strncmp(t2.cflags, "-O2 ", 4));
	CHECK(strstr(t2.spec, "cc=gcc,") && strstr(t2.spec, "opt=-O2,"));
	CHECK(strstr(t2.key, "|-O2|") != NULL);

	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
		CHECK_EQ_INT(tk_target_parse("cpu:isa=avx2", &t2), TK_OK);
		CHECK_EQ_INT(t2.vlen, 8);
		CHECK(strstr(t2.cflags, "-march=haswell") != NULL);
	}
}

TEST(test_target_errors)
{
	static const struct { const char *spec; const char *names; } bad[] = {
		{ "cpu:isa=", "isa" },
		{ "cpu:foo=1", "foo" },
		{ "gpu", "gpu" },
		{ "cpu:threads=0", "threads" },
		{ "cpu:threads=257", "257" },
		{ "cpu:threads=two", "two" },
		{ "cpu:threads=2,threads=3", "duplicate" },
		{ "cpu:isa=avx9", "avx9" },
		{ "cpu:opt=-Ofast", "-Ofast" },
		{ "cpu:isa", "isa" },
		{ "cpu:isa=sse2,", "empty" },
		{ "cpu:cc=", "cc" },
		{ "nativex", "nativex" },
	};
	for (int i = 0; i < ArraySize(bad); i++) {
		tk_target t;
		tk_seterr(TK_OK, "%s", "");
		int rc = tk_target_parse(bad[i].spec, &t);
		if (rc != TK_EINVAL || !strstr(tk_errmsg(), bad[i].names) || strchr(tk_errmsg(), '\n'))
			fprintf(stderr, "spec '%s': rc %d, message '%s'\n", bad[i].spec, rc, tk_errmsg());
		CHECK_EQ_INT(rc, TK_EINVAL);
		CHECK(strstr(tk_errmsg(), bad[i].names) != NULL);
	}
	tk_target t;
	CHECK_EQ_INT(tk_target_parse("cpu:cc=/nonexistent/tunekit-cc", &t), TK_EUNSUPP);
	CHECK(strstr(tk_errmsg(), "compiler not found") != NULL);
}

/* ---- build ---------------------------------------------------------- */

TEST(test_build_default_cache)
{
	char *old = getenv("TUNEKIT_CACHE") ? strdup(getenv("TUNEKIT_CACHE")) : NULL;
	setenv("TUNEKIT_CACHE", "/some/where", 1);
	CHECK_EQ_STR(build_default_cache(), "/some/where");
	unsetenv("TUNEKIT_CACHE");
	const char *d = build_default_cache();
	CHECK(d[0] == '/' && strstr(d, "tunekit") != NULL);
	if (old)
		setenv("TUNEKIT_CACHE", old, 1);
	free(old);
}

TEST(test_build_cache)
{
	build_job job, again;
	CHECK_EQ_INT(build1(k_good, &job, 30), BUILD_OK);
	CHECK_EQ_STR(job.msg, "");
	CHECK(file_exists(job.so));
	CHECK(!strncmp(job.so, cache, strlen(cache)));
	CHECK(strstr(job.so, ".so") != NULL);
	CHECK_EQ_INT(job.cached, 0);
	CHECK(job.seconds > 0);

	CHECK_EQ_INT(build1(k_good, &again, 30), BUILD_OK);
	CHECK_EQ_INT(again.cached, 1);
	CHECK_EQ_STR(again.msg, "");
	CHECK(again.seconds == 0);
	CHECK_EQ_STR(again.so, job.so);

	/* Other flags, other object. */
	tk_target o2;
	CHECK_EQ_INT(tk_target_parse("cpu:opt=-O2", &o2), TK_OK);
	memset(&again, 0, sizeof again);
	again.src = k_good;
	CHECK_EQ_INT(build_in(&o2, cache, &again, 1, 1, 30), TK_OK);
	CHECK_EQ_INT(again.status, BUILD_OK);
	CHECK_EQ_INT(again.cached, 0);
	CHECK(strcmp(again.so, job.so) != 0);
	build_jobs_close(&again, 1);
	CHECK_EQ_INT(again.fd, -1);

	/* A cache directory that cannot be created. */
	memset(&again, 0, sizeof again);
	again.src = k_good;
	CHECK_EQ_INT(build_in(&native, "/proc/tunekit-no/such", &again, 1, 1, 30), TK_EIO);
	CHECK(again.status != BUILD_OK);
	CHECK_EQ_INT(again.fd, -1);
}

TEST(test_sha256)
{
	/* FIPS 180-4 examples and the million a's, in one and in odd pieces. */
	char hex[SHA256_HEX];
	sha256_hex("abc", 3, hex);
	CHECK_EQ_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha256_hex("", 0, hex);
	CHECK_EQ_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	const char *s = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	sha256_hex(s, strlen(s), hex);
	CHECK_EQ_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	static char a[1000000];
	memset(a, 'a', sizeof a);
	sha256_ctx c;
	unsigned char d[32];
	sha256_init(&c);
	for (size_t off = 0, k = 1; off < sizeof a; off += k, k = k * 3 % 1000 + 1)
		sha256_update(&c, a + off, off + k <= sizeof a ? k : sizeof a - off);
	sha256_final(&c, d);
	sha256_tohex(d, hex);
	CHECK_EQ_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* The cache directory must be private: created 0700; a link, a directory of
 * someone else's or one others may write is refused; one others may only
 * read is made private. */
TEST(test_cache_dir)
{
	char dir[128], link[200], sub[200];
	struct stat st;
	build_job job;
	snprintf(dir, sizeof dir, "%s/dirs", cache);
	CHECK_EQ_INT(mkdir(dir, 0700), 0);

	snprintf(sub, sizeof sub, "%s/new/deeper", dir);
	CHECK_EQ_INT(build_cache_prepare(sub), TK_OK);
	CHECK(lstat(sub, &st) == 0 && (st.st_mode & 0777) == 0700);
	snprintf(sub, sizeof sub, "%s/new", dir);
	CHECK(lstat(sub, &st) == 0 && (st.st_mode & 0777) == 0700);

	/* A link to a private directory of ours: still refused. */
	snprintf(link, sizeof link, "%s/link", dir);
	CHECK_EQ_INT(symlink(sub, link), 0);
	CHECK_EQ_INT(build_cache_prepare(link), TK_EIO);
	CHECK(strstr(tk_errmsg(), "symbolic link") != NULL);
	char slash[256];
	snprintf(slash, sizeof slash, "%s//", link);
	CHECK_EQ_INT(build_cache_prepare(slash), TK_EIO);
	CHECK(strstr(tk_errmsg(), "symbolic link") != NULL);
	memset(&job, 0, sizeof job);
	job.src = k_good;
	CHECK_EQ_INT(build_in(&native, link, &job, 1, 1, 30), TK_EIO);
	CHECK(job.status != BUILD_OK && job.fd == -1);

	/* Writable by others: refused, left as it is. */
	snprintf(sub, sizeof sub, "%s/shared", dir);
	CHECK_EQ_INT(mkdir(sub, 0700), 0);
	CHECK_EQ_INT(chmod(sub, 0777), 0);
	CHECK_EQ_INT(build_cache_prepare(sub), TK_EIO);
	CHECK(strstr(tk_errmsg(), "writable by others") != NULL);
	CHECK(lstat(sub, &st) == 0 && (st.st_mode & 0777) == 0777);
	CHECK_EQ_INT(chmod(sub, 0770), 0);
	CHECK_EQ_INT(build_cache_prepare(sub), TK_EIO);

	/* Readable by others (an older tunekit's 0755): made private. */
	CHECK_EQ_INT(chmod(sub, 0755), 0);
	CHECK_EQ_INT(build_cache_prepare(sub), TK_OK);
	CHECK(lstat(sub, &st) == 0 && (st.st_mode & 0777) == 0700);

	/* Not a directory. */
	snprintf(sub, sizeof sub, "%s/file", dir);
	put_file(sub, "x", 0600);
	CHECK_EQ_INT(build_cache_prepare(sub), TK_EIO);
	CHECK(strstr(tk_errmsg(), "not a directory") != NULL);

	/* In a directory anyone may write to, without the sticky bit. */
	snprintf(sub, sizeof sub, "%s/open", dir);
	CHECK_EQ_INT(mkdir(sub, 0700), 0);
	CHECK_EQ_INT(chmod(sub, 0777), 0);
	snprintf(link, sizeof link, "%s/open/c", dir);
	CHECK_EQ_INT(build_cache_prepare(link), TK_EIO);
	CHECK(strstr(tk_errmsg(), "anyone may write") != NULL);
	CHECK_EQ_INT(chmod(sub, 01777), 0);
	CHECK_EQ_INT(build_cache_prepare(link), TK_OK);

	/* Someone else's directory (only root can make one to test with). */
	struct passwd *pw = getpwnam("nobody");
	if (geteuid() == 0 && pw) {
		snprintf(sub, sizeof sub, "%s/theirs", dir);
		CHECK_EQ_INT(mkdir(sub, 0700), 0);
		CHECK_EQ_INT(chown(sub, pw->pw_uid, pw->pw_gid), 0);
		CHECK_EQ_INT(build_cache_prepare(sub), TK_EIO);
		CHECK(strstr(tk_errmsg(), "not to you") != NULL);
	}
}

/* The default location never is a path another user could have made for
 * us: without HOME it is the password entry's home. */
TEST(test_cache_default_nohome)
{
	char *old[3];
	const char *names[3] = { "TUNEKIT_CACHE", "XDG_CACHE_HOME", "HOME" };
	for (int i = 0; i < 3; i++) {
		old[i] = getenv(names[i]) ? strdup(getenv(names[i])) : NULL;
		unsetenv(names[i]);
	}
	struct passwd *pw = getpwuid(geteuid());
	char want[4200];
	if (pw && pw->pw_dir[0] == '/' && pw->pw_dir[1] && access(pw->pw_dir, W_OK) == 0)
		snprintf(want, sizeof want, "%s/.cache/tunekit", pw->pw_dir);
	else
		snprintf(want, sizeof want, "/tmp/tunekit-cache-%u", (unsigned)geteuid());
	CHECK_EQ_STR(build_default_cache(), want);
	setenv("HOME", "relative/home", 1);
	CHECK_EQ_STR(build_default_cache(), want);
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	CHECK_EQ_STR(build_default_cache(), "/xdg/tunekit");
	for (int i = 0; i < 3; i++) {
		if (old[i])
			setenv(names[i], old[i], 1);
		else
			unsetenv(names[i]);
		free(old[i]);
	}
}

/* Replace the object of a cached kernel (the way another user would have
 * planted one): never served, removed and rebuilt. */
TEST(test_cache_planted)
{
	static const char evil[] = ABI NOWS KERNEL
		"{ for (int i = 0; i < 1000; i++) b[0][i] = 666.0f; }\n";
	static const char victim[] = ABI NOWS KERNEL
		"{ for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f; /* victim */ }\n";
	build_job bad, job, again;
	char side[4200], hex[SHA256_HEX], line[SHA256_HEX + 1];
	CHECK_EQ_INT(build1(evil, &bad, 30), BUILD_OK);
	CHECK_EQ_INT(build1(victim, &job, 30), BUILD_OK);
	snprintf(side, sizeof side, "%.4090s", job.so);
	snprintf(side + strlen(side) - 3, sizeof side - strlen(side) + 3, ".sha256");

	/* 1. A different object under the victim's name: its hash is wrong. */
	copy_file(bad.so, job.so, 0600);
	memset(&again, 0, sizeof again);
	again.src = victim;
	CHECK_EQ_INT(build_in(&native, cache, &again, 1, 1, 30), TK_OK);
	CHECK_EQ_INT(again.status, BUILD_OK);
	CHECK_EQ_INT(again.cached, 0);
	CHECK_EQ_INT(again.refused, 1);
	CHECK_EQ_STR(again.sha256, job.sha256);
	build_jobs_close(&again, 1);

	/* 2. ... with a sidecar that matches it: the object is writable by others. */
	copy_file(bad.so, job.so, 0666);
	chmod(job.so, 0666);
	snprintf(line, sizeof line, "%s\n", bad.sha256);
	put_file(side, line, 0600);
	memset(&again, 0, sizeof again);
	again.src = victim;
	CHECK_EQ_INT(build_in(&native, cache, &again, 1, 1, 30), TK_OK);
	CHECK_EQ_INT(again.refused, 1);
	CHECK_EQ_INT(again.cached, 0);
	CHECK_EQ_STR(again.sha256, job.sha256);
	build_jobs_close(&again, 1);

	/* 3. A link in place of the object, or of the sidecar. */
	unlink(job.so);
	CHECK_EQ_INT(symlink(bad.so, job.so), 0);
	memset(&again, 0, sizeof again);
	again.src = victim;
	CHECK_EQ_INT(build_in(&native, cache, &again, 1, 1, 30), TK_OK);
	CHECK_EQ_INT(again.refused, 1);
	CHECK_EQ_STR(again.sha256, job.sha256);
	build_jobs_close(&again, 1);
	unlink(side);
	CHECK_EQ_INT(symlink("/etc/passwd", side), 0);
	memset(&again, 0, sizeof again);
	again.src = victim;
	CHECK_EQ_INT(build_in(&native, cache, &again, 1, 1, 30), TK_OK);
	CHECK_EQ_INT(again.refused, 1);
	build_jobs_close(&again, 1);

	/* 4. A FIFO in place of the sidecar does not block the lookup. */
	unlink(side);
	CHECK_EQ_INT(mkfifo(side, 0600), 0);
	memset(&again, 0, sizeof again);
	again.src = victim;
	CHECK_EQ_INT(build_in(&native, cache, &again, 1, 1, 30), TK_OK);
	CHECK_EQ_INT(again.refused, 1);
	build_jobs_close(&again, 1);

	/* 5. An object and sidecar owned by someone else (root can make them). */
	struct passwd *pw = getpwnam("nobody");
	if (geteuid() == 0 && pw) {
		copy_file(bad.so, job.so, 0644);
		snprintf(line, sizeof line, "%s\n", bad.sha256);
		put_file(side, line, 0644);
		CHECK_EQ_INT(chown(job.so, pw->pw_uid, pw->pw_gid), 0);
		CHECK_EQ_INT(chown(side, pw->pw_uid, pw->pw_gid), 0);
		memset(&again, 0, sizeof again);
		again.src = victim;
		CHECK_EQ_INT(build_in(&native, cache, &again, 1, 1, 30), TK_OK);
		CHECK_EQ_INT(again.refused, 1);
		CHECK_EQ_STR(again.sha256, job.sha256);
		build_jobs_close(&again, 1);
	}

	/* After all that the entry is sound again: served from the cache. */
	memset(&again, 0, sizeof again);
	again.src = victim;
	CHECK_EQ_INT(build_in(&native, cache, &again, 1, 1, 30), TK_OK);
	CHECK_EQ_INT(again.cached, 1);
	CHECK_EQ_INT(again.refused, 0);
	CHECK(again.fd >= 0);
	int fd = open(again.so, O_RDONLY);
	struct stat st;
	CHECK(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 0777) == 0600);
	if (fd >= 0)
		close(fd);
	sha256_hex("", 0, hex);
	CHECK(strcmp(again.sha256, hex) != 0);
	build_jobs_close(&again, 1);
}

TEST(test_parse_size)
{
	int64_t v;
	CHECK_EQ_INT(build_parse_size("0", &v), TK_OK);
	CHECK_EQ_INT(v, 0);
	CHECK_EQ_INT(build_parse_size("1234", &v), TK_OK);
	CHECK_EQ_INT(v, 1234);
	CHECK_EQ_INT(build_parse_size("10k", &v), TK_OK);
	CHECK_EQ_INT(v, 10240);
	CHECK_EQ_INT(build_parse_size("3M", &v), TK_OK);
	CHECK_EQ_INT(v, 3 << 20);
	CHECK_EQ_INT(build_parse_size("1GiB", &v), TK_OK);
	CHECK_EQ_INT(v, 1 << 30);
	CHECK_EQ_INT(build_parse_size("2TB", &v), TK_OK);
	CHECK_EQ_INT(v, INT64_C(2) << 40);
	CHECK_EQ_INT(build_parse_size("512B", &v), TK_OK);
	CHECK_EQ_INT(v, 512);
	const char *bad[] = { "", "-1", "1.5G", "G", "1X", "1Gi", "99999999999T", " 1" };
	for (int i = 0; i < ArraySize(bad); i++) {
		CHECK_EQ_INT(build_parse_size(bad[i], &v), TK_EINVAL);
		CHECK(strstr(tk_errmsg(), "bad size") != NULL);
	}
}

/* Set the modification time of every file of the entry of so to t. */
static void age_entry(const char *so, double t)
{
	char path[4200];
	const char *ext[] = { ".so", ".c", ".sha256" };
	struct timespec ts[2] = { { (time_t)t, 0 }, { (time_t)t, 0 } };
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%.*s%s", (int)strlen(so) - 3, so, ext[i]);
		CHECK_EQ_INT(utimensat(AT_FDCWD, path, ts, 0), 0);
	}
}

/* The cache keeps under its limit by dropping the least recently used
 * kernels, and a hit counts as a use. */
TEST(test_cache_trim)
{
	char dir[128], junk[200], stale[200];
	enum { NK = 4 };
	char src[NK][256];
	build_job jobs[NK];
	build_cache_info info, gone;
	snprintf(dir, sizeof dir, "%s/lru", cache);
	memset(jobs, 0, sizeof jobs);
	for (int i = 0; i < NK; i++) {
		snprintf(src[i], sizeof src[i], ABI NOWS KERNEL
		         "{ for (int i = 0; i < 1000; i++) b[0][i] = %d.5f; }\n", i);
		jobs[i].src = src[i];
	}
	CHECK_EQ_INT(build_in(&native, dir, jobs, NK, 2, 30), TK_OK);
	build_jobs_close(jobs, NK);
	/* Not ours: never counted or removed. A stale in-flight file: removed. */
	snprintf(junk, sizeof junk, "%s/notes.txt", dir);
	put_file(junk, "keep me", 0600);
	snprintf(stale, sizeof stale, "%s/0123456789abcdef0123456789abcdef.so.tmp.1.1", dir);
	put_file(stale, "half an object", 0600);
	struct timespec old[2] = { { 1000, 0 }, { 1000, 0 } };
	CHECK_EQ_INT(utimensat(AT_FDCWD, stale, old, 0), 0);

	double now = tk_walltime();
	for (int i = 0; i < NK; i++)
		age_entry(jobs[i].so, now - 1000 + 100 * i); /* 0 oldest, 3 newest */
	CHECK_EQ_INT(build_cache_stat(dir, &info), TK_OK);
	CHECK_EQ_INT(info.entries, NK);
	CHECK_EQ_INT(info.files, 3 * NK + 1);
	CHECK_EQ_INT(info.stale, 1);
	CHECK(info.oldest < info.newest && info.newest < now);
	int64_t per = (info.bytes - (int64_t)strlen("half an object")) / NK;

	/* A hit on kernel 0 makes it the most recently used. */
	build_job hit;
	memset(&hit, 0, sizeof hit);
	hit.src = src[0];
	CHECK_EQ_INT(build_in(&native, dir, &hit, 1, 1, 30), TK_OK);
	CHECK_EQ_INT(hit.cached, 1);
	build_jobs_close(&hit, 1);

	/* Room for a little more than two: kernels 1 and 2 go. */
	CHECK_EQ_INT(build_cache_trim(dir, 2 * per + per / 2, &gone), TK_OK);
	CHECK_EQ_INT(gone.entries, 2);
	CHECK_EQ_INT(gone.stale, 1);
	CHECK(!file_exists(jobs[1].so) && !file_exists(jobs[2].so));
	CHECK(file_exists(jobs[0].so) && file_exists(jobs[3].so));
	CHECK(!file_exists(stale) && file_exists(junk));
	CHECK_EQ_INT(build_cache_stat(dir, &info), TK_OK);
	CHECK_EQ_INT(info.entries, 2);
	CHECK_EQ_INT(info.stale, 0);
	CHECK(info.bytes <= 2 * per + per / 2);

	/* Everything. */
	CHECK_EQ_INT(build_cache_trim(dir, 0, &gone), TK_OK);
	CHECK_EQ_INT(gone.entries, 2);
	CHECK_EQ_INT(build_cache_stat(dir, &info), TK_OK);
	CHECK_EQ_INT(info.entries, 0);
	CHECK_EQ_INT(info.bytes, 0);
	CHECK(file_exists(junk));

	/* A build keeps the cache under the limit it is given. */
	build_opts o = { dir, 2 * per + per / 2, 2, 30, 0, 0, BUILD_REPORTS_NONE };
	memset(jobs, 0, sizeof jobs);
	for (int i = 0; i < NK; i++)
		jobs[i].src = src[i];
	CHECK_EQ_INT(build_run(&native, &o, jobs, NK), TK_OK);
	build_jobs_close(jobs, NK);
	CHECK_EQ_INT(build_cache_stat(dir, &info), TK_OK);
	CHECK(info.entries <= 2 && info.bytes <= 2 * per + per / 2);
}

TEST(test_build_error)
{
	build_job job;
	static const char src[] = ABI NOWS KERNEL "{ this is not C; }\n";
	CHECK_EQ_INT(build1(src, &job, 30), BUILD_ERROR);
	CHECK(strstr(job.msg, "error") != NULL);
	CHECK(strstr(job.msg, "this") != NULL || strstr(job.msg, "unknown type") != NULL);
	CHECK(!strchr(job.msg, '\n'));
	CHECK(!strstr(job.msg, cache)); /* paths are relative to the cache */
	CHECK(strlen(job.msg) <= 420);
	CHECK(job.so[0] == 0);
	CHECK_EQ_INT(job.cached, 0);
	/* Failures are not cached. */
	CHECK_EQ_INT(build1(src, &job, 30), BUILD_ERROR);
	CHECK_EQ_INT(job.cached, 0);
}

/* Build n jobs of src[] with these reports; descriptors left open. */
static void build_reports(build_job *jobs, const char *const *src, int n, int reports)
{
	build_opts o = { cache, 0, 2, 30, 0, 0, reports };
	memset(jobs, 0, sizeof *jobs * (size_t)n);
	for (int i = 0; i < n; i++)
		jobs[i].src = src[i];
	CHECK_EQ_INT(build_run(&native, &o, jobs, n), TK_OK);
}

/* The compiler's reports come from the build the measurement uses: the
 * same object under the same key, with the .su and the vectoriser's
 * report beside it until build_jobs_close. */
TEST(test_build_reports)
{
	static const char src[] = ABI NOWS KERNEL
		"{ for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] + b[2][i] * 3.0f; }\n";
	static const char bad[] = ABI NOWS KERNEL "{ not C either; }\n";
	const char *one[1] = { src }, *two[2] = { src, src }, *fail[1] = { bad };
	build_job plain, j[2];
	char p[4400], sha[SHA256_HEX];

	build_reports(&plain, one, 1, BUILD_REPORTS_NONE);
	CHECK_EQ_INT(plain.status, BUILD_OK);
	CHECK_EQ_STR(plain.report, "");
	memcpy(sha, plain.sha256, sizeof sha);
	build_jobs_close(&plain, 1);

	/* NEW: a cached object is served, without reports */
	build_reports(j, one, 1, BUILD_REPORTS_NEW);
	CHECK_EQ_INT(j[0].cached, 1);
	CHECK_EQ_STR(j[0].report, "");
	build_jobs_close(j, 1);

	/* ALL: compiled again with its reports, the same object and key */
	build_reports(j, two, 2, BUILD_REPORTS_ALL);
	CHECK_EQ_INT(j[0].status, BUILD_OK);
	CHECK_EQ_INT(j[0].cached, 0);
	CHECK_EQ_STR(j[0].so, plain.so);
	CHECK_EQ_STR(j[0].sha256, sha);
	CHECK(j[0].report[0] != 0 && strstr(j[0].report, ".rep.tmp.") != NULL);
	CHECK_EQ_STR(j[1].report, j[0].report); /* the same kernel twice: built once */
	CHECK_EQ_INT(j[1].cached, 1);
	snprintf(p, sizeof p, "%s.su", j[0].report);
	CHECK(file_exists(p));
	char stem[4096];
	snprintf(stem, sizeof stem, "%s", j[0].report);
	snprintf(p, sizeof p, "%s.vec", stem);
	FILE *f = fopen(p, "r");
	char line[1024];
	int vectorized = 0;
	while (f && fgets(line, sizeof line, f))
		vectorized += strstr(line, "optimized: loop vectorized") != NULL;
	if (f)
		fclose(f);
	CHECK(vectorized >= 1);
	build_jobs_close(j, 2);
	CHECK_EQ_STR(j[0].report, "");
	CHECK(!file_exists(p));
	CHECK_EQ_INT(count_files(cache, ".rep.tmp."), 0);

	/* a failed build leaves no reports */
	build_reports(j, fail, 1, BUILD_REPORTS_ALL);
	CHECK_EQ_INT(j[0].status, BUILD_ERROR);
	CHECK_EQ_STR(j[0].report, "");
	CHECK_EQ_INT(count_files(cache, ".rep.tmp."), 0);
	build_jobs_close(j, 1);
}

/* After a build stopped on its time limit, as the children's subreaper:
 * cc1 was killed with the driver, so every child is reaped within half a
 * second (checked); a survivor blocked on the fifo is released and reaped
 * all the same. Ends the subreaper role and removes the fifo. */
static void reap_compilers(const char *fifo)
{
	pid_t w = 0;
	for (int i = 0; i < 100 && w >= 0; i++) {
		while ((w = waitpid(-1, NULL, WNOHANG)) > 0)
			;
		if (w == 0) {
			struct timespec ts = { 0, 5000000 };
			nanosleep(&ts, NULL);
		}
	}
	CHECK(w < 0 && errno == ECHILD);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	if (w == 0) { /* release the survivor */
		int fd = open(fifo, O_WRONLY | O_NONBLOCK);
		if (fd >= 0)
			close(fd);
		while (waitpid(-1, NULL, 0) > 0)
			;
	}
	unlink(fifo);
}

/* A compile that never finishes: the source includes a FIFO nobody writes,
 * so cc1 blocks opening it until it is killed. */
TEST(test_build_timeout)
{
	char fifo[128], src[256];
	snprintf(fifo, sizeof fifo, "%s/never.fifo", cache);
	CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
	snprintf(src, sizeof src, "#include \"%s\"\n" ABI NOWS KERNEL "{ }\n", fifo);
	/* Orphans of the killed compiler driver become our children. */
	CHECK_EQ_INT(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	build_job job;
	double t0 = tk_now();
	CHECK_EQ_INT(build1(src, &job, 1.0), BUILD_TIMEOUT);
	double dt = tk_now() - t0;
	CHECK(dt >= 1.0 && dt < 1.5);
	CHECK(job.seconds >= 1.0);
	CHECK(strstr(job.msg, "timeout") != NULL);
	CHECK(job.so[0] == 0);
	/* cc1 was killed with the driver: no child is left running. */
	reap_compilers(fifo);
}

/* The adaptive limit: a compile that never finishes is stopped at 5 times
 * the median of its batch's three quick ones (but not before the floor),
 * long before the fixed limit, and says so; with adapt 0 nothing changes
 * (test_build_timeout). */
TEST(test_build_adapt)
{
	enum { NJ = 4 };
	char fifo[128], src[NJ][256];
	build_job jobs[NJ];
	memset(jobs, 0, sizeof jobs);
	snprintf(fifo, sizeof fifo, "%s/adapt.fifo", cache);
	CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
	snprintf(src[0], sizeof src[0], "#include \"%s\"\n" ABI NOWS KERNEL "{ }\n", fifo);
	for (int i = 1; i < NJ; i++)
		snprintf(src[i], sizeof src[i], ABI NOWS KERNEL "{ b[0][0] = %d.5f; }\n", i);
	for (int i = 0; i < NJ; i++)
		jobs[i].src = src[i];
	CHECK_EQ_INT(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	build_opts o = { cache, 0, 2, 60, 5, 1.0, BUILD_REPORTS_NONE };
	double t0 = tk_now();
	CHECK_EQ_INT(build_run(&native, &o, jobs, NJ), TK_OK);
	double dt = tk_now() - t0, med = 0;
	for (int i = 1; i < NJ; i++) {
		CHECK_EQ_INT(jobs[i].status, BUILD_OK);
		med = jobs[i].seconds > med ? jobs[i].seconds : med; /* >= the median */
	}
	CHECK_EQ_INT(jobs[0].status, BUILD_TIMEOUT);
	CHECK(strstr(jobs[0].msg, "median compile of its batch") != NULL);
	CHECK(jobs[0].seconds >= 1.0 && jobs[0].seconds <= 5 * med + 1.0);
	CHECK(dt < 30);
	build_jobs_close(jobs, NJ);
	/* cc1 was killed with the driver: reap it (we are its subreaper). */
	reap_compilers(fifo);
}

/* Reference outputs: stored, read back exactly; a key of other inputs, a
 * wrong size or a damaged file is a miss, and the damaged file is gone. */
TEST(test_build_ref)
{
	enum { NR = 100 };
	double ref[NR], abs_[NR], got[NR], gotabs[NR];
	float a[3] = { 1, 2, 3 }, b[3] = { 1, 2, 4 };
	const float *ina[1] = { a }, *inb[1] = { b };
	size_t n3[1] = { 3 };
	char ka[SHA256_HEX], kb[SHA256_HEX], path[512];
	int found = 1;
	for (int i = 0; i < NR; i++)
		ref[i] = i * 0.25, abs_[i] = i + 1.0;
	build_ref_key("dense:k=1,m=1,n=3", 1, ina, n3, ka);
	build_ref_key("dense:k=1,m=1,n=3", 1, inb, n3, kb);
	CHECK(strcmp(ka, kb) != 0);
	CHECK_EQ_INT(build_ref_prepare(cache), TK_OK);
	CHECK_EQ_INT(build_ref_load(cache, ka, NR, got, gotabs, &found), TK_OK);
	CHECK_EQ_INT(found, 0);
	CHECK_EQ_INT(build_ref_store(cache, ka, NR, ref, abs_), TK_OK);
	CHECK_EQ_INT(build_ref_load(cache, ka, NR, got, gotabs, &found), TK_OK);
	CHECK_EQ_INT(found, 1);
	CHECK(!memcmp(got, ref, sizeof ref) && !memcmp(gotabs, abs_, sizeof abs_));
	CHECK_EQ_INT(build_ref_load(cache, kb, NR, got, gotabs, &found), TK_OK);
	CHECK_EQ_INT(found, 0);
	CHECK_EQ_INT(build_ref_load(cache, ka, NR - 1, got, gotabs, &found), TK_OK);
	CHECK_EQ_INT(found, 0);
	CHECK_EQ_INT(build_ref_store(cache, ka, NR, ref, abs_), TK_OK);
	snprintf(path, sizeof path, "%s/ref/%s.ref", cache, ka);
	int fd = open(path, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, "x", 1, 40) == 1);
	if (fd >= 0)
		close(fd);
	CHECK_EQ_INT(build_ref_load(cache, ka, NR, got, gotabs, &found), TK_OK);
	CHECK_EQ_INT(found, 0);
	CHECK(!file_exists(path));
}

TEST(test_build_parallel)
{
	enum { NJ = 5 };
	char src[NJ][256];
	build_job jobs[NJ];
	memset(jobs, 0, sizeof jobs);
	for (int i = 0; i < NJ; i++) {
		/* Job 4 repeats job 1: built once, both get it. */
		snprintf(src[i], sizeof src[i], ABI NOWS KERNEL
		         "{ for (int i = 0; i < 1000; i++) b[0][i] = %d.0f; }\n", i == 4 ? 1 : i);
		jobs[i].src = src[i];
	}
	double t0 = tk_now();
	CHECK_EQ_INT(build_in(&native, cache, jobs, NJ, 2, 30), TK_OK);
	double dt = tk_now() - t0, sum = 0;
	for (int i = 0; i < NJ; i++) {
		CHECK_EQ_INT(jobs[i].status, BUILD_OK);
		CHECK_EQ_STR(jobs[i].msg, "");
		CHECK(file_exists(jobs[i].so));
		sum += jobs[i].seconds;
		if (i < 4) {
			CHECK_EQ_INT(jobs[i].cached, 0);
			for (int j = 0; j < i; j++)
				CHECK(strcmp(jobs[i].so, jobs[j].so) != 0);
		}
	}
	CHECK_EQ_STR(jobs[4].so, jobs[1].so);
	CHECK_EQ_INT(jobs[4].cached, 1);
	CHECK_EQ_STR(jobs[4].sha256, jobs[1].sha256);
	CHECK(jobs[4].fd >= 0 && jobs[4].fd != jobs[1].fd);
	build_jobs_close(jobs, NJ);
	/* Two at a time: the wall time is well under the sum of compile times. */
	CHECK(dt < 0.85 * sum);
	/* Nothing in flight is left behind. */
	CHECK_EQ_INT(count_files(cache, ".tmp."), 0);
}

/* ---- run ------------------------------------------------------------ */

/* Build all the run tests' kernels at once, in this order. */
enum { K_GOOD, K_GOOD2, K_SEGV, K_LOOP, K_WRONG, K_UNWRITTEN, K_NOSYM, K_ABORT, K_BADABI,
       K_EXIT, K_STATEFUL, K_OVERRUN, K_HUGEWS, K_WS, K_PINNED, K_STEADY, K_JITTER,
       K_READS, K_SECOND, K_SCRIBBLE, NKERNEL };
static const char *const kernel_src[NKERNEL] = {
	k_good, k_good2, k_segv, k_loop, k_wrong, k_unwritten, k_nosym, k_abort, k_badabi,
	k_exit, k_stateful, k_overrun, k_hugews, k_ws, k_pinned, k_steady, k_jitter,
	k_reads, k_second, k_scribble,
};
static build_job kernels[NKERNEL];

static run_result res;

static int run1(int k, const run_opts *o)
{
	run_io io = make_io();
	int rc = run_kernel(&kernels[k], &native, &io, o, &res);
	CHECK_EQ_INT(rc, TK_OK);
	return res.error;
}

TEST(test_run_build_kernels)
{
	for (int i = 0; i < NKERNEL; i++)
		kernels[i].src = kernel_src[i];
	CHECK_EQ_INT(build_in(&native, cache, kernels, NKERNEL, 2, 60), TK_OK);
	for (int i = 0; i < NKERNEL; i++) {
		if (kernels[i].status != BUILD_OK)
			fprintf(stderr, "kernel %d: %s\n", i, kernels[i].msg);
		CHECK_EQ_INT(kernels[i].status, BUILD_OK);
	}
}

static void check_ok_result(const run_result *r, int repeat)
{
	CHECK_EQ_INT(r->error, MEAS_OK);
	CHECK_EQ_STR(r->msg, "");
	CHECK_EQ_INT(r->nrepeat, repeat);
	CHECK(r->number >= 1);
	double lo = 1e30, hi = 0;
	for (int i = 0; i < r->nrepeat; i++) {
		CHECK(r->times[i] > 0 && r->times[i] < 1e-2);
		lo = r->times[i] < lo ? r->times[i] : lo;
		hi = r->times[i] > hi ? r->times[i] : hi;
	}
	CHECK(r->median >= lo && r->median <= hi);
	CHECK(r->mean >= lo && r->mean <= hi);
	CHECK(r->std >= 0 && r->std <= hi - lo);
	CHECK(r->max_err >= 0 && r->max_err <= 1);
}

TEST(test_run_ok)
{
	run_opts o;
	run_opts_default(&o);
	CHECK_EQ_INT(o.repeat, 5);
	CHECK_EQ_INT(o.number, 0);
	CHECK_EQ_INT(run1(K_GOOD, &o), MEAS_OK);
	check_ok_result(&res, 5);
	/* 1000 multiply-adds take microseconds: many calls make 10 ms. */
	CHECK(res.number > 10);
	CHECK(res.number * res.median > 0.5e-3);
	if (res.error)
		fprintf(stderr, "good kernel: %s\n", res.msg);

	o.number = 7;
	o.repeat = 3;
	o.flush_cache = 1;
	CHECK_EQ_INT(run1(K_GOOD2, &o), MEAS_OK);
	check_ok_result(&res, 3);
	CHECK_EQ_INT(res.number, 7);

	o.repeat = 1;
	CHECK_EQ_INT(run1(K_WS, &o), MEAS_OK);
	check_ok_result(&res, 1);
	CHECK(res.std == 0);
	if (res.error)
		fprintf(stderr, "workspace kernel: %s\n", res.msg);

	CHECK_EQ_INT(run1(K_PINNED, &o), MEAS_OK);
	if (res.error)
		fprintf(stderr, "pinned kernel: %s\n", res.msg);
}

TEST(test_run_cv)
{
	double same[3] = { 2e-3, 2e-3, 2e-3 };
	CHECK(run_cv(same, 3) == 0);
	CHECK(run_cv(same, 1) == 0);
	/* Throughputs 1, 2: mean 1.5, population deviation 0.5. */
	double two[2] = { 1, 0.5 };
	CHECK(fabs(run_cv(two, 2) - 1.0 / 3) < 1e-12);
	/* With more than 4, the extremes (throughputs 100 and 0.01) are dropped. */
	double five[5] = { 0.01, 1, 0.5, 1, 100 };
	double m = (1 + 2 + 1) / 3.0, sd = sqrt((2 * (1 - m) * (1 - m) + (2 - m) * (2 - m)) / 3);
	CHECK(fabs(run_cv(five, 5) - sd / m) < 1e-12);
}

TEST(test_run_adaptive)
{
	run_opts o;
	run_opts_default(&o);
	CHECK_EQ_INT(o.adaptive, 0);
	CHECK_EQ_INT(o.microbatch, 50);
	CHECK(o.cv == 0.1);
	o.adaptive = 1;
	o.number = 100;
	o.repeat = 5; /* a cap of 500 calls: 10 micro-batches of 50 */
	/* A steady kernel stops well before the cap (3 batches unless the
	 * machine stutters: one of three tries must); each batch's time is kept. */
	for (int try = 0; try < 3; try++) {
		CHECK_EQ_INT(run1(K_STEADY, &o), MEAS_OK);
		if (res.nrepeat < 10)
			break;
	}
	CHECK_EQ_INT(res.number, 50);
	CHECK(res.nrepeat >= 3 && res.nrepeat < 10);
	CHECK(run_cv(res.times, res.nrepeat) < 0.1);
	/* A kernel with jitter at the scale of the batches runs to the cap. */
	CHECK_EQ_INT(run1(K_JITTER, &o), MEAS_OK);
	CHECK_EQ_INT(res.number, 50);
	CHECK_EQ_INT(res.nrepeat, 10);
	CHECK(run_cv(res.times, 10) > 0.1);
	/* The fixed evaluator on the same kernel makes number x repeat calls. */
	o.adaptive = 0;
	CHECK_EQ_INT(run1(K_STEADY, &o), MEAS_OK);
	CHECK_EQ_INT(res.number, 100);
	CHECK_EQ_INT(res.nrepeat, 5);
	/* A cap below one micro-batch is one short batch; a cap of more than
	 * RUN_MAXREPEAT batches makes the batches larger. */
	o.adaptive = 1;
	o.number = 10;
	o.repeat = 2;
	CHECK_EQ_INT(run1(K_STEADY, &o), MEAS_OK);
	CHECK_EQ_INT(res.number, 20);
	CHECK_EQ_INT(res.nrepeat, 1);
	o.number = 192;
	o.repeat = 1;
	o.microbatch = 2;
	o.cv = 0; /* never satisfied: runs to the cap */
	CHECK_EQ_INT(run1(K_STEADY, &o), MEAS_OK);
	CHECK_EQ_INT(res.number, 3);
	CHECK_EQ_INT(res.nrepeat, RUN_MAXREPEAT);
}

/* The calibration's last round is the first repeat: with no warm-up (the
 * default: the checked call warms), the call after the checked one (10 ms,
 * past min_repeat_ms) is both. Not when the caches are flushed before each
 * repeat: the round was not. */
TEST(test_run_calibration)
{
	run_opts o;
	run_opts_default(&o);
	CHECK_EQ_INT(o.warmup, 0);
	o.repeat = 2;
	o.min_repeat_ms = 5;
	CHECK_EQ_INT(run1(K_SECOND, &o), MEAS_OK);
	CHECK_EQ_INT(res.number, 1);
	CHECK_EQ_INT(res.nrepeat, 2);
	CHECK(res.times[0] >= 0.010 && res.times[0] < 0.020);
	CHECK(res.times[1] >= 0.030);
	o.flush_cache = 1;
	CHECK_EQ_INT(run1(K_SECOND, &o), MEAS_OK);
	CHECK(res.times[0] >= 0.030 && res.times[1] >= 0.030);
}

/* A kernel that writes over its inputs spoils its own answer only: the
 * next kernel reads the inputs as they were. */
TEST(test_run_scribble)
{
	run_opts o;
	run_opts_default(&o);
	o.number = 1;
	o.repeat = 1;
	run_io io = make_io();
	CHECK_EQ_INT(run_kernel(&kernels[K_SCRIBBLE], &native, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_WRONG_ANSWER);
	CHECK(strstr(res.msg, "after repeated calls") != NULL);
	CHECK_EQ_INT(run_kernel(&kernels[K_GOOD], &native, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_OK);
	CHECK(in0[5] == (float)5 * 0.01f && in1[5] == 3.5f);
}

TEST(test_run_bound)
{
	run_opts o;
	run_opts_default(&o);
	CHECK(o.bound_s == 0);
	o.number = 10;
	o.repeat = 5;
	/* A kernel of about 100 us a call past a bound of 1 ns: the first
	 * repeat is its one repeat, and the result says so. */
	o.bound_s = 1e-9;
	CHECK_EQ_INT(run1(K_STEADY, &o), MEAS_OK);
	CHECK_EQ_INT(res.bounded, 1);
	CHECK_EQ_INT(res.nrepeat, 1);
	CHECK_EQ_INT(res.number, 10);
	CHECK(res.median == res.times[0] && res.median > o.bound_s && res.std == 0);
	/* Under a bound of 10 s: every repeat, not bounded. */
	o.bound_s = 10;
	CHECK_EQ_INT(run1(K_STEADY, &o), MEAS_OK);
	CHECK_EQ_INT(res.bounded, 0);
	CHECK_EQ_INT(res.nrepeat, 5);
	/* The adaptive evaluator stops after its first micro-batch likewise. */
	o.adaptive = 1;
	o.bound_s = 1e-9;
	CHECK_EQ_INT(run1(K_STEADY, &o), MEAS_OK);
	CHECK_EQ_INT(res.bounded, 1);
	CHECK_EQ_INT(res.nrepeat, 1);
	o.adaptive = 0;
	/* A bounded kernel is still checked after its timed calls: one that
	 * goes wrong once it reads its own output is a wrong answer, not a
	 * bounded record. */
	CHECK_EQ_INT(run1(K_STATEFUL, &o), MEAS_WRONG_ANSWER);
	CHECK_EQ_INT(res.bounded, 0);
}

TEST(test_run_crashes)
{
	run_opts o;
	run_opts_default(&o);
	o.timeout_s = 5;
	CHECK_EQ_INT(run1(K_SEGV, &o), MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "SIGSEGV") != NULL);
	CHECK_EQ_INT(res.nrepeat, 0);

	CHECK_EQ_INT(run1(K_ABORT, &o), MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "SIGABRT") != NULL);

	CHECK_EQ_INT(run1(K_NOSYM, &o), MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "tk_kernel") != NULL);

	CHECK_EQ_INT(run1(K_BADABI, &o), MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "tk_abi") != NULL);

	CHECK_EQ_INT(run1(K_EXIT, &o), MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "status 3") != NULL);

	CHECK_EQ_INT(run1(K_HUGEWS, &o), MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "workspace too large") != NULL);

	run_io io = make_io();
	build_job missing = kernels[K_GOOD];
	missing.fd = -1;
	snprintf(missing.so, sizeof missing.so, "%s/missing.so", cache);
	CHECK_EQ_INT(run_kernel(&missing, &native, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "cannot open") != NULL && strstr(res.msg, "missing.so") != NULL);
}

/* The workspace is read from the object file, before it is loaded: the
 * value the kernel declares; a file damaged anywhere gives a value or an
 * error, never a crash. */
TEST(test_run_object_workspace)
{
	unsigned long nws = 99;
	int fd = open(kernels[K_WS].so, O_RDONLY);
	CHECK(fd >= 0);
	CHECK_EQ_INT(run_object_workspace(fd, &nws), TK_OK);
	CHECK_EQ_INT(nws, 4096);
	close(fd);
	fd = open(kernels[K_HUGEWS].so, O_RDONLY);
	CHECK_EQ_INT(run_object_workspace(fd, &nws), TK_OK);
	CHECK(nws == 1UL << 40);
	close(fd);
	fd = open(kernels[K_GOOD].so, O_RDONLY);
	CHECK_EQ_INT(run_object_workspace(fd, &nws), TK_OK);
	CHECK_EQ_INT(nws, 0);
	close(fd);

	/* Not an object, an object without the symbol. */
	char path[200];
	snprintf(path, sizeof path, "%s/text.so", cache);
	put_file(path, "just text, no ELF", 0600);
	fd = open(path, O_RDONLY);
	CHECK_EQ_INT(run_object_workspace(fd, &nws), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "ELF") != NULL);
	close(fd);
	build_job nows;
	static const char k_nows[] = ABI KERNEL "{ }\n";
	CHECK_EQ_INT(build1(k_nows, &nows, 30), BUILD_OK);
	fd = open(nows.so, O_RDONLY);
	CHECK_EQ_INT(run_object_workspace(fd, &nws), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "tk_workspace_floats") != NULL);
	close(fd);
	run_opts o;
	run_opts_default(&o);
	run_io io = make_io();
	CHECK_EQ_INT(run_kernel(&nows, &native, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "tk_workspace_floats") != NULL);

	/* Damaged copies of K_WS: every prefix of its first 8 KiB and its last
	 * 4 KiB, and bytes of it set to 0xff one at a time. */
	static unsigned char img[1 << 20];
	fd = open(kernels[K_WS].so, O_RDONLY);
	ssize_t n = read(fd, img, sizeof img);
	close(fd);
	CHECK(n > 0 && n < (ssize_t)sizeof img);
	snprintf(path, sizeof path, "%s/damaged.so", cache);
	int ok = 0, bad = 0;
	for (ssize_t cut = 0; cut < n; cut += cut < 8192 || cut > n - 4096 ? 7 : 997) {
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		CHECK(fd >= 0 && write(fd, img, (size_t)cut) == cut);
		int rc = run_object_workspace(fd, &nws);
		ok += rc == TK_OK;
		bad += rc == TK_EINVAL;
		close(fd);
	}
	CHECK(bad > 0);
	for (ssize_t at = 0; at < n; at += at < 4096 ? 1 : 61) {
		unsigned char was = img[at];
		img[at] = 0xff;
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		CHECK(fd >= 0 && write(fd, img, (size_t)n) == n);
		int rc = run_object_workspace(fd, &nws);
		ok += rc == TK_OK;
		bad += rc == TK_EINVAL;
		close(fd);
		img[at] = was;
	}
	CHECK(ok > 0);
	unlink(path);
}

/* Once the object is loaded, the child can open no file, not even to read
 * it, where the kernel has Landlock (but for AddressSanitizer, which reads
 * /proc/self/maps). */
TEST(test_run_no_files)
{
	run_opts o;
	run_opts_default(&o);
	o.repeat = 1;
	long landlock = syscall(__NR_landlock_create_ruleset, NULL, 0, 1U /* VERSION */);
	int asan = 0;
#if defined(__SANITIZE_ADDRESS__)
	asan = 1;
#endif
	CHECK_EQ_INT(run1(K_READS, &o), landlock >= 1 && !asan ? MEAS_OK : MEAS_WRONG_ANSWER);
	if (res.error)
		fprintf(stderr, "reading kernel (Landlock ABI %ld): %s\n", landlock, res.msg);
}

/* The child checks the object it loads: changed after the build (even in
 * place, through the same file), it is refused, not run. */
TEST(test_run_refuses)
{
	run_opts o;
	run_opts_default(&o);
	o.repeat = 1;
	run_io io = make_io();
	build_job job;
	memset(&job, 0, sizeof job);
	job.src = k_good2;
	static const char other[] = ABI NOWS KERNEL
		"{ for (int i = 0; i < 1000; i++) b[0][i] = b[1][i] * b[2][i] + 1.0f; /* other */ }\n";
	build_job ok;
	memset(&ok, 0, sizeof ok);
	ok.src = other;
	CHECK_EQ_INT(build_in(&native, cache, &job, 1, 1, 30), TK_OK);
	CHECK_EQ_INT(build_in(&native, cache, &ok, 1, 1, 30), TK_OK);
	CHECK_EQ_INT(run_kernel(&job, &native, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_OK);

	/* The recorded hash is another object's: refused. */
	build_job wrong = job;
	memcpy(wrong.sha256, ok.sha256, sizeof wrong.sha256);
	CHECK_EQ_INT(run_kernel(&wrong, &native, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "SHA-256 mismatch") != NULL);

	/* Through the path, without a descriptor: a link is not followed. */
	build_job bylink = ok;
	bylink.fd = -1;
	snprintf(bylink.so, sizeof bylink.so, "%s/link.so", cache);
	CHECK_EQ_INT(symlink(ok.so, bylink.so), 0);
	CHECK_EQ_INT(run_kernel(&bylink, &native, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "cannot open") != NULL);
	unlink(bylink.so);
	build_job bypath = ok;
	bypath.fd = -1;
	CHECK_EQ_INT(run_kernel(&bypath, &native, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_OK);

	/* Modified in place after the build: refused. */
	int fd = open(job.so, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, "\x7f" "ELF\2", 5, 200) == 5);
	if (fd >= 0)
		close(fd);
	CHECK_EQ_INT(run_kernel(&job, &native, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_RUNTIME_CRASH);
	CHECK(strstr(res.msg, "refused") != NULL);
	/* ... and by the next build, which compiles it again. */
	build_jobs_close(&job, 1);
	memset(&job, 0, sizeof job);
	job.src = k_good2;
	CHECK_EQ_INT(build_in(&native, cache, &job, 1, 1, 30), TK_OK);
	CHECK_EQ_INT(job.refused, 1);
	CHECK_EQ_INT(run_kernel(&job, &native, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_OK);
	build_jobs_close(&job, 1);
	build_jobs_close(&ok, 1);
}

/* The measurement lock: one holder at a time, the holder's pid in the file,
 * waiters told who holds it and able to give up. */
static int nwait;
static long seen_holder;

static int wait_counter(void *ctx, const char *path, double waited, long holder)
{
	nwait++;
	seen_holder = holder;
	return nwait >= *(int *)ctx;
}

TEST(test_run_lock)
{
	char path[256], log[128], rt[128], def[4200];
	run_lock *a, *b;
	snprintf(path, sizeof path, "%s/measure.lock", cache);
	snprintf(log, sizeof log, "%s/lock.log", cache);
	CHECK_EQ_INT(run_lock_open(path, &a), TK_OK);
	CHECK_EQ_INT(run_lock_open(path, &b), TK_OK);
	CHECK_EQ_STR(run_lock_path(a), path);
	setenv("TUNEKIT_MEASURE_LOG", log, 1);
	CHECK_EQ_INT(run_lock_acquire(a, NULL, NULL), TK_OK);
	int stop = 3;
	double t0 = tk_now();
	CHECK_EQ_INT(run_lock_acquire(b, wait_counter, &stop), TK_EINTR);
	CHECK(tk_now() - t0 >= 0.5);
	CHECK_EQ_INT(nwait, 3);
	CHECK_EQ_INT(seen_holder, getpid());
	CHECK(strstr(tk_errmsg(), "measurement lock") != NULL);
	/* Another process cannot take it either, until it is released. */
	int fd = open(path, O_RDONLY);
	pid_t pid = fork();
	if (pid == 0)
		_exit(flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : 1);
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	run_lock_release(a);
	CHECK_EQ_INT(run_lock_acquire(b, NULL, NULL), TK_OK);
	run_lock_close(b);
	CHECK_EQ_INT(flock(fd, LOCK_EX | LOCK_NB), 0);
	close(fd);
	run_lock_close(a);
	unsetenv("TUNEKIT_MEASURE_LOG");
	/* Two holds logged, one after the other. */
	FILE *f = fopen(log, "r");
	long p1 = 0, p2 = 0;
	double s1 = 0, e1 = 0, s2 = 0, e2 = 0;
	CHECK(f && fscanf(f, "%ld %lf %lf %ld %lf %lf", &p1, &s1, &e1, &p2, &s2, &e2) == 6);
	if (f)
		fclose(f);
	CHECK(p1 == getpid() && p2 == getpid());
	CHECK(s1 <= e1 && e1 <= s2 && s2 <= e2);

	/* Not through a link; not a directory. */
	char link[160];
	snprintf(link, sizeof link, "%s/lock.link", cache);
	CHECK_EQ_INT(symlink(path, link), 0);
	CHECK_EQ_INT(run_lock_open(link, &a), TK_EIO);
	CHECK_EQ_INT(run_lock_open(cache, &a), TK_EIO);

	/* The default: in a private directory under XDG_RUNTIME_DIR. */
	char *old = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
	snprintf(rt, sizeof rt, "%s/runtime", cache);
	CHECK_EQ_INT(mkdir(rt, 0700), 0);
	setenv("XDG_RUNTIME_DIR", rt, 1);
	CHECK_EQ_INT(run_lock_default(def, sizeof def), TK_OK);
	snprintf(path, sizeof path, "%s/tunekit/measure.lock", rt);
	CHECK_EQ_STR(def, path);
	struct stat sb;
	snprintf(path, sizeof path, "%s/tunekit", rt);
	CHECK(lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode) && (sb.st_mode & 0777) == 0700);
	CHECK_EQ_INT(chmod(path, 0777), 0);
	CHECK_EQ_INT(run_lock_default(def, sizeof def), TK_EIO);
	CHECK(strstr(tk_errmsg(), "measurement lock directory") != NULL);
	CHECK(strstr(tk_errmsg(), "writable by others") != NULL);
	CHECK_EQ_INT(chmod(path, 0700), 0);
	if (old)
		setenv("XDG_RUNTIME_DIR", old, 1);
	else
		unsetenv("XDG_RUNTIME_DIR");
	free(old);
}

/* The overlap verdict: judged on the median's slowdown and the spread,
 * kept beside the default lock, and anything else in its file is none. */
TEST(test_overlap_verdict)
{
	ms_overlap v = { 0, 1.0, 1.019, 0.05, 0.07 }, got;
	CHECK_EQ_INT(ms_overlap_judge(&v), 1);
	v.with_s = 1.03; /* 3% slower */
	CHECK_EQ_INT(ms_overlap_judge(&v), 0);
	v.with_s = 0.9;
	v.with_cv = 0.08; /* more than both 1.5 x 0.05 and 0.05 + 0.02 */
	CHECK_EQ_INT(ms_overlap_judge(&v), 0);
	v.alone_cv = 0.001;
	v.with_cv = 0.02; /* 20 times wider, but within 0.02 more */
	CHECK_EQ_INT(ms_overlap_judge(&v), 1);

	char rt[160], path[200];
	int found = 1;
	char *old = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
	snprintf(rt, sizeof rt, "%s/overlap-rt", cache);
	CHECK_EQ_INT(mkdir(rt, 0700), 0);
	setenv("XDG_RUNTIME_DIR", rt, 1);
	CHECK_EQ_INT(ms_overlap_load(&got, &found), TK_OK);
	CHECK_EQ_INT(found, 0);
	CHECK_EQ_INT(ms_overlap_store(&v), TK_OK);
	CHECK_EQ_INT(ms_overlap_load(&got, &found), TK_OK);
	CHECK_EQ_INT(found, 1);
	CHECK_EQ_INT(got.allowed, 1);
	CHECK(fabs(got.alone_s - v.alone_s) < 1e-9 && fabs(got.with_s - v.with_s) < 1e-9);
	CHECK(fabs(got.with_cv - v.with_cv) < 1e-6);
	snprintf(path, sizeof path, "%s/tunekit/overlap", rt);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("tunekit-overlap 1 allowed 2 alone 1 with 1 alone_cv 0 with_cv 0\n", f);
		fclose(f);
	}
	CHECK_EQ_INT(ms_overlap_load(&got, &found), TK_OK);
	CHECK_EQ_INT(found, 0);
	if (old)
		setenv("XDG_RUNTIME_DIR", old, 1);
	else
		unsetenv("XDG_RUNTIME_DIR");
	free(old);
}

TEST(test_run_timeout)
{
	run_opts o;
	run_opts_default(&o);
	o.timeout_s = 1;
	double t0 = tk_now();
	CHECK_EQ_INT(run1(K_LOOP, &o), MEAS_RUN_TIMEOUT);
	double dt = tk_now() - t0;
	CHECK(dt >= 1.0 && dt < 1.5);
	CHECK(strstr(res.msg, "run timeout after 1 s") != NULL);
}

TEST(test_run_wrong)
{
	run_opts o;
	run_opts_default(&o);
	o.timeout_s = 5;
	CHECK_EQ_INT(run1(K_WRONG, &o), MEAS_WRONG_ANSWER);
	CHECK(strstr(res.msg, "out[123] = 42 ") != NULL);
	CHECK(strstr(res.msg, "1 of 1000") != NULL);
	CHECK(res.max_err > 1);

	CHECK_EQ_INT(run1(K_UNWRITTEN, &o), MEAS_WRONG_ANSWER);
	CHECK(strstr(res.msg, "out[7] = nan") != NULL);

	CHECK_EQ_INT(run1(K_STATEFUL, &o), MEAS_WRONG_ANSWER);
	CHECK(strstr(res.msg, "after repeated calls") != NULL);

	CHECK_EQ_INT(run1(K_OVERRUN, &o), MEAS_WRONG_ANSWER);
	CHECK(strstr(res.msg, "past the end") != NULL);

	/* A tolerance wide enough to accept the wrong element. */
	run_io io = make_io();
	io.atol = 100;
	CHECK_EQ_INT(run_kernel(&kernels[K_WRONG], &native, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_OK);
	CHECK(res.max_err > 0.3 && res.max_err <= 1);
}

TEST(test_run_survives)
{
	run_opts o;
	run_opts_default(&o);
	o.repeat = 2;
	CHECK_EQ_INT(run1(K_GOOD, &o), MEAS_OK);
	check_ok_result(&res, 2);
	/* Every child was reaped. */
	errno = 0;
	CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
}

TEST(test_run_threads)
{
	tk_target t2;
	CHECK_EQ_INT(tk_target_parse("cpu:threads=2", &t2), TK_OK);
	build_job job;
	memset(&job, 0, sizeof job);
	job.src = k_omp;
	CHECK_EQ_INT(build_in(&t2, cache, &job, 1, 1, 30), TK_OK);
	CHECK_EQ_INT(job.status, BUILD_OK);
	if (job.status != BUILD_OK)
		fprintf(stderr, "omp kernel: %s\n", job.msg);
	run_opts o;
	run_opts_default(&o);
	o.repeat = 2;
	run_io io = make_io();
	/* The target's thread count wins over the caller's environment. */
	char *old = getenv("OMP_NUM_THREADS") ? strdup(getenv("OMP_NUM_THREADS")) : NULL;
	setenv("OMP_NUM_THREADS", "1", 1);
	CHECK_EQ_INT(run_kernel(&job, &t2, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_OK);
	if (res.error)
		fprintf(stderr, "omp kernel: %s\n", res.msg);
	if (old)
		setenv("OMP_NUM_THREADS", old, 1);
	else
		unsetenv("OMP_NUM_THREADS");
	free(old);
	/* The same kernel with one thread: wrong (it checks the thread count). */
	CHECK_EQ_INT(run_kernel(&job, &native, &io, &o, &res), TK_OK);
	CHECK_EQ_INT(res.error, MEAS_WRONG_ANSWER);
	build_jobs_close(&job, 1);
}

static void setup(void)
{
	snprintf(cache, sizeof cache, "/tmp/tunekit-measure-XXXXXX");
	if (!mkdtemp(cache)) {
		perror("mkdtemp");
		exit(1);
	}
	if (tk_target_parse(NULL, &native) != TK_OK) {
		fprintf(stderr, "native target: %s\n", tk_errmsg());
		exit(1);
	}
}

/* Remove dir and everything under it. */
static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[512];
	struct stat st;
	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			chmod(path, 0700);
			remove_tree(path);
		} else {
			unlink(path);
		}
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static void teardown(void)
{
	build_jobs_close(kernels, NKERNEL);
	remove_tree(cache);
}

UNIT_MAIN(setup, test_target_native, test_target_keys, test_target_errors,
          test_build_default_cache, test_build_cache, test_build_reports, test_build_error,
          test_build_timeout,
          test_build_adapt, test_build_ref,
          test_build_parallel, test_sha256, test_cache_dir, test_cache_default_nohome,
          test_cache_planted, test_parse_size, test_cache_trim,
          test_run_build_kernels, test_run_ok, test_run_cv, test_run_adaptive,
          test_run_calibration, test_run_scribble, test_run_bound,
          test_run_crashes, test_run_object_workspace, test_run_no_files, test_run_refuses, test_run_lock,
          test_overlap_verdict, test_run_timeout, test_run_wrong, test_run_survives, test_run_threads, teardown)
