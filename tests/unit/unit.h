/*
 * unit: a minimal unit-test harness. Each tests/unit/<module>.c file defines
 * its tests with TEST(name) { ... } and ends with UNIT_MAIN(test1, test2, ...).
 * CHECK() records a failure with file and line and keeps going; the program
 * exits 1 if any check failed.
 */
#ifndef TK_UNIT_H
#define TK_UNIT_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int unit_failures;
static const char *unit_current;

#define TEST(name) static void name(void)

#define CHECK(cond) do { \
	if (!(cond)) { \
		unit_failures++; \
		fprintf(stderr, "%s:%d: %s: check failed: %s\n", __FILE__, __LINE__, \
		        unit_current, #cond); \
	} \
} while (0)

#define CHECK_EQ_INT(a, b) do { \
	long long va_ = (long long)(a), vb_ = (long long)(b); \
	if (va_ != vb_) { \
		unit_failures++; \
		fprintf(stderr, "%s:%d: %s: %s == %lld, expected %s == %lld\n", __FILE__, \
		        __LINE__, unit_current, #a, va_, #b, vb_); \
	} \
} while (0)

#define CHECK_EQ_STR(a, b) do { \
	const char *sa_ = (a), *sb_ = (b); \
	if (!sa_ || !sb_ || strcmp(sa_, sb_)) { \
		unit_failures++; \
		fprintf(stderr, "%s:%d: %s: %s is \"%s\", expected \"%s\"\n", __FILE__, \
		        __LINE__, unit_current, #a, sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)"); \
	} \
} while (0)

#define CHECK_NEAR(a, b, tol) do { \
	double va_ = (a), vb_ = (b); \
	if (!(fabs(va_ - vb_) <= (tol))) { \
		unit_failures++; \
		fprintf(stderr, "%s:%d: %s: %s == %.9g, expected %.9g (tol %g)\n", __FILE__, \
		        __LINE__, unit_current, #a, va_, vb_, (double)(tol)); \
	} \
} while (0)

typedef void (*unit_fn)(void);

static inline int unit_run(const char *file, const char *names, unit_fn *fns, int n)
{
	char buf[4096];
	snprintf(buf, sizeof buf, "%s", names);
	char *save = NULL, *tok = strtok_r(buf, ", ", &save);
	for (int i = 0; i < n; i++) {
		unit_current = tok ? tok : "?";
		fns[i]();
		tok = strtok_r(NULL, ", ", &save);
	}
	printf("%s: %d tests, %d failures\n", file, n, unit_failures);
	return unit_failures ? 1 : 0;
}

/* ---- a temporary directory, removed at exit --------------------------- */

#include <dirent.h>
#include <unistd.h>

static char unit_tmpdir[256];

static void unit_tmpdir_remove(void)
{
	DIR *d = opendir(unit_tmpdir);
	struct dirent *e;
	char path[512];
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", unit_tmpdir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(unit_tmpdir);
}

/* A path named name in this test program's temporary directory (created on
 * first use under $TMPDIR or /tmp). Eight results stay valid at a time. */
static inline const char *tpath(const char *name)
{
	static char buf[8][512];
	static int next;
	char *p = buf[next++ % 8];
	if (!unit_tmpdir[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(unit_tmpdir, sizeof unit_tmpdir, "%s/tk-unit-XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(unit_tmpdir)) {
			perror("mkdtemp");
			exit(2);
		}
		atexit(unit_tmpdir_remove);
	}
	snprintf(p, 512, "%s/%s", unit_tmpdir, name);
	return p;
}

#define UNIT_MAIN(...) \
	int main(void) { \
		unit_fn fns_[] = { __VA_ARGS__ }; \
		return unit_run(__FILE__, #__VA_ARGS__, fns_, (int)(sizeof fns_ / sizeof fns_[0])); \
	}

#endif
