/*
 * target: parse a target spec, probe what this CPU and compiler can do, and
 * derive everything the build and the record store need from it: the ISA and
 * its vector length, the compiler flags, the compiler's version line, the CPU
 * model, and the hardware key under which measurements are stored. The probes
 * (`cc --version`, /proc/cpuinfo) run once per process and are cached.
 */
#define _GNU_SOURCE
#include "target.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/util.h"

#define TARGET_MAXTHREADS 256

/* Spec keys, in canonical (sorted) order. */
enum { KEY_CC, KEY_ISA, KEY_OPT, KEY_THREADS, NKEY };
static const char *const key_names[NKEY] = { "cc", "isa", "opt", "threads" };

static const char *const opt_values[] = { "-O0", "-O1", "-O2", "-O3", "-Os" };

/* ISA table: name, float32 lanes, vector registers, flags, CPU features it
 * needs. */
static const struct isa_info {
	const char *name;
	int vlen, nvreg;
	const char *flags;
	const char *needs; /* for the error message */
} isa_table[] = {
	{ "avx512", 16, 32, "-march=native -mprefer-vector-width=512",
	  "avx512f, avx512vl, avx512bw, avx512dq, fma" },
	{ "avx2", 8, 16, "-march=haswell -mtune=native", "avx2, fma" },
	{ "sse2", 4, 16, "-march=x86-64 -mtune=generic", "sse2" },
};

static const char base_flags[] =
	"-fPIC -shared -fno-math-errno -fno-trapping-math -ffp-contract=fast";

/* 1 if this CPU (and OS) can run code for isa_table[i]. */
static int isa_supported(int i)
{
	__builtin_cpu_init();
	switch (i) {
	case 0:
		return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
		       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
		       __builtin_cpu_supports("fma");
	case 1:
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	case 2:
		return __builtin_cpu_supports("sse2");
	}
	return 0;
}

/* ---- probes --------------------------------------------------------- */

static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;

/* Versions of the compilers asked about so far in this process. */
static struct {
	char cc[64];
	char version[160];
} cc_cache[8];
static int cc_ncache;

/* Run `cc --version` (no shell) and put its first output line in ver.
 * Returns TK_OK, or TK_EUNSUPP if it cannot be run or fails. */
static int cc_probe(const char *cc, char *ver, size_t nver)
{
	int fd[2];
	if (pipe2(fd, O_CLOEXEC) < 0)
		return tk_seterr(TK_EUNSUPP, "cc: cannot run %s: %s", cc, strerror(errno));
	char *argv[] = { (char *)cc, "--version", NULL };
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return tk_seterr(TK_EUNSUPP, "cc: cannot run %s: %s", cc, strerror(errno));
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 2);
		}
		dup2(fd[1], 1);
		execvp(cc, argv);
		_exit(127);
	}
	close(fd[1]);
	char buf[4096];
	size_t n = 0;
	for (;;) {
		ssize_t k = read(fd[0], buf + n, sizeof buf - 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
		if (n == sizeof buf - 1) /* enough; the rest does not matter */
			break;
	}
	buf[n] = 0;
	close(fd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	buf[strcspn(buf, "\r\n")] = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !buf[0])
		return tk_seterr(TK_EUNSUPP, "cc: compiler not found: '%s' cannot be run", cc);
	size_t l = strlen(buf) < nver ? strlen(buf) : nver - 1;
	memcpy(ver, buf, l);
	ver[l] = 0;
	return TK_OK;
}

static int cc_version(const char *cc, char *ver, size_t nver)
{
	int rc = TK_OK;
	pthread_mutex_lock(&probe_lock);
	for (int i = 0; i < cc_ncache; i++) {
		if (!strcmp(cc_cache[i].cc, cc)) {
			snprintf(ver, nver, "%s", cc_cache[i].version);
			goto out;
		}
	}
	rc = cc_probe(cc, ver, nver);
	if (rc == TK_OK) {
		int i = cc_ncache < ArraySize(cc_cache) ? cc_ncache++ : ArraySize(cc_cache) - 1;
		snprintf(cc_cache[i].cc, sizeof cc_cache[i].cc, "%s", cc);
		snprintf(cc_cache[i].version, sizeof cc_cache[i].version, "%s", ver);
	}
out:
	pthread_mutex_unlock(&probe_lock);
	return rc;
}

/* The "model name" of the first CPU in /proc/cpuinfo with its family and
 * model numbers, "NAME (family F model M)", or "unknown-cpu". The numbers
 * tell apart CPUs that share a marketing name (a virtual machine's "Intel(R)
 * Xeon(R) Processor" is any Xeon generation), so their records stay apart. */
static void cpu_model(char *out, size_t nout)
{
	static char model[160];
	pthread_mutex_lock(&probe_lock);
	if (!model[0]) {
		char name[128] = "", family[16] = "", num[16] = "";
		FILE *f = fopen("/proc/cpuinfo", "r");
		char line[512];
		while (f && fgets(line, sizeof line, f)) {
			char *p = strchr(line, ':'), *dst;
			size_t size;
			if (!strncmp(line, "model name", 10))
				dst = name, size = sizeof name;
			else if (!strncmp(line, "cpu family", 10))
				dst = family, size = sizeof family;
			else if (!strncmp(line, "model", 5) && isspace((unsigned char)line[5]))
				dst = num, size = sizeof num;
			else if (line[0] == '\n' && name[0])
				break; /* the end of the first CPU */
			else
				continue;
			if (!p || dst[0])
				continue;
			p++;
			while (isspace((unsigned char)*p))
				p++;
			size_t n = strlen(p);
			while (n > 0 && isspace((unsigned char)p[n - 1]))
				p[--n] = 0;
			snprintf(dst, size, "%s", p);
		}
		if (f)
			fclose(f);
		if (!name[0])
			snprintf(model, sizeof model, "unknown-cpu");
		else if (family[0] && num[0])
			snprintf(model, sizeof model, "%s (family %s model %s)", name, family, num);
		else
			snprintf(model, sizeof model, "%s", name);
	}
	snprintf(out, nout, "%s", model);
	pthread_mutex_unlock(&probe_lock);
}

/* ---- parsing -------------------------------------------------------- */

static int bad_value(const char *spec, const char *key, const char *val, const char *expected)
{
	return tk_seterr(TK_EINVAL, "target '%s': bad value '%s' for %s (expected %s)", spec,
	                 val, key, expected);
}

/* Parse one key=value item into t (isa goes to *isa_out). */
static int parse_item(const char *spec, char *item, int *seen, tk_target *t, const char **isa_out)
{
	char *eq = strchr(item, '=');
	if (!eq)
		return tk_seterr(TK_EINVAL, "target '%s': '%s' is not key=value", spec, item);
	*eq = 0;
	const char *key = item, *val = eq + 1;
	int k;
	for (k = 0; k < NKEY; k++)
		if (!strcmp(key, key_names[k]))
			break;
	if (k == NKEY)
		return tk_seterr(TK_EINVAL,
		                 "target '%s': unknown key '%s' (expected cc, isa, opt, threads)",
		                 spec, key);
	if (seen[k])
		return tk_seterr(TK_EINVAL, "target '%s': duplicate key '%s'", spec, key);
	seen[k] = 1;

	switch (k) {
	case KEY_CC:
		if (!*val || strlen(val) >= sizeof t->cc)
			return bad_value(spec, key, val, "a compiler command of 1 to 63 characters");
		for (const char *p = val; *p; p++)
			if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p))
				return bad_value(spec, key, val, "a compiler command without spaces");
		snprintf(t->cc, sizeof t->cc, "%s", val);
		return TK_OK;
	case KEY_ISA:
		if (!strcmp(val, "native")) {
			*isa_out = NULL;
			return TK_OK;
		}
		for (int i = 0; i < ArraySize(isa_table); i++) {
			if (!strcmp(val, isa_table[i].name)) {
				*isa_out = isa_table[i].name;
				return TK_OK;
			}
		}
		return bad_value(spec, key, val, "native, avx512, avx2 or sse2");
	case KEY_OPT:
		for (int i = 0; i < ArraySize(opt_values); i++) {
			if (!strcmp(val, opt_values[i])) {
				snprintf(t->opt, sizeof t->opt, "%s", val);
				return TK_OK;
			}
		}
		return bad_value(spec, key, val, "-O0, -O1, -O2, -O3 or -Os");
	case KEY_THREADS: {
		int64_t v;
		if (tk_parse_i64(val, &v) != TK_OK || v < 1 || v > TARGET_MAXTHREADS)
			return bad_value(spec, key, val, "an integer from 1 to 256");
		t->threads = (int)v;
		return TK_OK;
	}
	}
	assert(0);
	return TK_EINVAL;
}

/* The rest of a cpu: spec (args: "key=value,...", "" for every default). */
static int parse_cpu(const char *spec, const char *args, tk_target *t)
{
	const char *isa = NULL; /* NULL: native */
	char buf[512];
	int seen[NKEY] = { 0 };

	snprintf(t->cc, sizeof t->cc, "cc");
	snprintf(t->opt, sizeof t->opt, "-O3");
	t->threads = 1;
	snprintf(buf, sizeof buf, "%s", args);
	char *item = buf;
	/* "cpu:" alone means all defaults; otherwise no empty items. */
	for (int more = buf[0] != 0; more;) {
		char *comma = strchr(item, ',');
		if (comma)
			*comma = 0;
		if (!*item)
			return tk_seterr(TK_EINVAL, "target '%s': empty item", spec);
		int rc = parse_item(spec, item, seen, t, &isa);
		if (rc)
			return rc;
		more = comma != NULL;
		if (more)
			item = comma + 1;
	}

	/* Resolve the ISA against this CPU. */
	int ii = -1;
	if (!isa) {
		for (int i = 0; i < ArraySize(isa_table) && ii < 0; i++)
			if (isa_supported(i))
				ii = i;
		if (ii < 0)
			return tk_seterr(TK_EUNSUPP, "target: this CPU has none of avx512, avx2, sse2");
	} else {
		for (int i = 0; i < ArraySize(isa_table); i++)
			if (!strcmp(isa, isa_table[i].name))
				ii = i;
		assert(ii >= 0);
		if (!isa_supported(ii))
			return tk_seterr(TK_EUNSUPP, "target: isa %s is not supported by this CPU "
			                 "(needs %s)", isa, isa_table[ii].needs);
	}
	snprintf(t->isa, sizeof t->isa, "%s", isa_table[ii].name);
	t->vlen = isa_table[ii].vlen;
	t->nvreg = isa_table[ii].nvreg;

	int rc = cc_version(t->cc, t->cc_version, sizeof t->cc_version);
	if (rc)
		return rc;
	cpu_model(t->cpu, sizeof t->cpu);

	snprintf(t->cflags, sizeof t->cflags, "%s %s %s%s", t->opt, base_flags,
	         isa_table[ii].flags, t->threads > 1 ? " -fopenmp" : "");
	snprintf(t->spec, sizeof t->spec, "cpu:cc=%s,isa=%s,opt=%s,threads=%d", t->cc, t->isa,
	         t->opt, t->threads);
	snprintf(t->key, sizeof t->key, "%s|%s|%s|%s|threads=%d", t->cpu, t->isa,
	         t->cc_version, t->opt, t->threads);
	return TK_OK;
}

/* The rest of a vta-sim: spec. Nothing is probed: the accelerator is a
 * simulation, the same on every machine. The CPU fields say what it is;
 * no compiler, one "thread", vectors of one block. */
static int parse_vta(const char *spec, const char *args, tk_target *t)
{
	int rc = vta_hw_parse(spec, args, &t->vta);
	if (rc)
		return rc;
	snprintf(t->isa, sizeof t->isa, "vta");
	snprintf(t->cpu, sizeof t->cpu, "VTA (simulated), %s preset, %s board at %g MHz",
	         t->vta.preset, t->vta.board, t->vta.mhz);
	t->threads = 1;
	t->vlen = t->vta.block;
	t->nvreg = 0;
	vta_hw_spec(&t->vta, t->spec, sizeof t->spec);
	vta_hw_key(&t->vta, t->key, sizeof t->key);
	return TK_OK;
}

const tk_target_kind tk_target_kinds[] = {
	{ "cpu", TK_TARGET_CPU, TK_TARGET_EXPORTS, "native | cpu:KEY=VALUE,...",
	  "this CPU: kernels compiled to C, run, checked and timed here", parse_cpu },
	{ "vta-sim", TK_TARGET_VTA_SIM, TK_TARGET_SIMULATED,
	  "vta-sim:preset=NAME[,PARAM=VALUE,...]",
	  "a VTA accelerator: conv2d and dense lowered to its instructions, run by a "
	  "cycle and functional simulator", parse_vta },
};
const int tk_target_nkinds = ArraySize(tk_target_kinds);

int tk_target_parse(const char *spec, tk_target *t)
{
	assert(t);
	memset(t, 0, sizeof *t);
	if (!spec || !*spec || !strcmp(spec, "native"))
		spec = "cpu:";
	if (strlen(spec) >= 512)
		return tk_seterr(TK_EINVAL, "target spec too long (%zu characters)", strlen(spec));
	for (int i = 0; i < tk_target_nkinds; i++) {
		const tk_target_kind *k = &tk_target_kinds[i];
		size_t n = strlen(k->name);
		if (strncmp(spec, k->name, n) || (spec[n] && spec[n] != ':'))
			continue;
		t->kind = k->kind;
		t->flags = k->flags;
		return k->parse(spec, spec[n] ? spec + n + 1 : "", t);
	}
	return tk_seterr(TK_EINVAL, "target '%s': unknown target (expected native, "
	                 "cpu:key=value,... or vta-sim:preset=NAME,...)", spec);
}
