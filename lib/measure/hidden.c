/*
 * hidden: hidden features of configurations on their target (hidden.h):
 * compile for the compiler's facts on the CPU (cached), the device
 * compiler's statistics on vta-sim.
 */
#include "hidden.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codegen/kernel.h"
#include "features/feature.h"

int ms_hidden_length(const ms_task *t, int *d)
{
	*d = t->vta ? VTA_NSTAT : feat_hidden_length(t->space);
	return TK_OK;
}

void ms_hidden_name(const ms_task *t, int i, char *buf, size_t size)
{
	if (t->vta)
		snprintf(buf, size, "%s", i >= 0 && i < VTA_NSTAT ? vta_stat_names[i] : "?");
	else
		feat_hidden_name(t->space, i, buf, size);
}

/* ---- the compiler's facts ------------------------------------------------- */

/* Bytes of the executable sections of the ELF object at path; -1 if it is
 * not a readable 64-bit ELF file. */
static double text_bytes(const char *path)
{
	FILE *f = fopen(path, "rb");
	Elf64_Ehdr eh;
	double text = -1;
	if (!f)
		return -1;
	if (fread(&eh, sizeof eh, 1, f) == 1 && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_shentsize == sizeof(Elf64_Shdr) &&
	    !fseek(f, (long)eh.e_shoff, SEEK_SET)) {
		text = 0;
		for (int i = 0; i < eh.e_shnum; i++) {
			Elf64_Shdr sh;
			if (fread(&sh, sizeof sh, 1, f) != 1) {
				text = -1;
				break;
			}
			if (sh.sh_flags & SHF_EXECINSTR)
				text += (double)sh.sh_size;
		}
	}
	fclose(f);
	return text;
}

/* -fstack-usage's file: "file:line:col:function<TAB>bytes<TAB>static|dynamic[,bounded]". */
static void read_stack(const char *path, feat_cc *cc)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		char *tab = strchr(line, '\t');
		if (!tab)
			continue;
		double b = strtod(tab + 1, NULL);
		cc->stack_bytes = b > cc->stack_bytes ? b : cc->stack_bytes;
		cc->dynamic_stack += strstr(tab, "dynamic") != NULL;
	}
	fclose(f);
}

/* -fopt-info-vec-all's file: "optimized: loop vectorized ..." per loop
 * vectorised, "missed: couldn't vectorize loop" per loop it gave up on. */
static void read_vec(const char *path, feat_cc *cc)
{
	FILE *f = fopen(path, "r");
	char line[2048];
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		cc->vectorized += strstr(line, "optimized: loop vectorized") != NULL;
		cc->missed += strstr(line, "missed: couldn't vectorize loop") != NULL;
	}
	fclose(f);
}

/* The cache entry: one line of the facts. */
static int cache_read(const char *path, feat_cc *cc)
{
	FILE *f = fopen(path, "r");
	int ok = 0;
	if (f) {
		ok = fscanf(f, "tunekit-hidden 1 %lf %d %lf %lf %d %d", &cc->stack_bytes,
		            &cc->dynamic_stack, &cc->text_bytes, &cc->object_bytes, &cc->vectorized,
		            &cc->missed) == 6;
		fclose(f);
	}
	return ok;
}

static void cache_write(const char *dir, const char *path, const feat_cc *cc)
{
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s/.tmp-%ld", dir, (long)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	int bad = fprintf(f, "tunekit-hidden 1 %.17g %d %.17g %.17g %d %d\n", cc->stack_bytes,
	                  cc->dynamic_stack, cc->text_bytes, cc->object_bytes, cc->vectorized,
	                  cc->missed) < 0;
	if (fclose(f) || bad || rename(tmp, path))
		unlink(tmp);
}

typedef struct cjob {
	const char *src;
	char key[SHA256_HEX];
	char dir[4096];      /* its own temporary directory */
	pid_t pid;
	double start;
	int done, ok;
	feat_cc cc;
} cjob;

static void rm_dir(const char *dir)
{
	static const char *const files[] = { "k.c", "k.o", "k.su", "vec.txt" };
	char p[4200];
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, files[i]);
		unlink(p);
	}
	rmdir(dir);
}

/* Start the compiler on j's source in its directory. */
static int cjob_start(const tk_target *tg, cjob *j, const char *base)
{
	char path[4200], flags[sizeof tg->cflags], vec[4200], obj[4200];
	char *argv[80];
	int na = 0;
	snprintf(j->dir, sizeof j->dir, "%.4000s/hidden-XXXXXX", base);
	if (!mkdtemp(j->dir))
		return tk_seterr(TK_EIO, "cannot make a directory in %s: %s", base, strerror(errno));
	snprintf(path, sizeof path, "%s/k.c", j->dir);
	FILE *f = fopen(path, "w");
	if (!f || fputs(j->src, f) < 0 || fclose(f)) {
		if (f)
			fclose(f);
		return tk_seterr(TK_EIO, "cannot write %s", path);
	}
	snprintf(flags, sizeof flags, "%s", tg->cflags);
	snprintf(vec, sizeof vec, "-fopt-info-vec-all=%s/vec.txt", j->dir);
	snprintf(obj, sizeof obj, "%s/k.o", j->dir);
	argv[na++] = (char *)tg->cc;
	for (char *s = NULL, *tok = strtok_r(flags, " ", &s); tok && na < 70;
	     tok = strtok_r(NULL, " ", &s))
		if (strcmp(tok, "-shared")) /* an object, not a library */
			argv[na++] = tok;
	argv[na++] = "-c";
	argv[na++] = "-fstack-usage";
	argv[na++] = vec;
	argv[na++] = "-o";
	argv[na++] = obj;
	argv[na++] = path;
	argv[na] = NULL;
	j->start = tk_now();
	if ((j->pid = fork()) < 0)
		return tk_seterr(TK_EIO, "cannot start the compiler: fork: %s", strerror(errno));
	if (j->pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		if (chdir(j->dir) == 0) /* the .su file lands beside the object */
			execvp(argv[0], argv);
		_exit(127);
	}
	return TK_OK;
}

static void cjob_finish(cjob *j, int status)
{
	char p[4200];
	struct stat st;
	j->done = 1;
	snprintf(p, sizeof p, "%s/k.o", j->dir);
	if (!WIFEXITED(status) || WEXITSTATUS(status) || stat(p, &st)) {
		rm_dir(j->dir);
		return;
	}
	j->cc.object_bytes = (double)st.st_size;
	j->cc.text_bytes = text_bytes(p);
	snprintf(p, sizeof p, "%s/k.su", j->dir);
	read_stack(p, &j->cc);
	snprintf(p, sizeof p, "%s/vec.txt", j->dir);
	read_vec(p, &j->cc);
	j->ok = j->cc.text_bytes >= 0;
	rm_dir(j->dir);
}

/* Compile the jobs not found in the cache, o->jobs at a time, each
 * stopped after o->build_timeout seconds. */
static int compile_all(const tk_target *tg, const ms_opts *o, const char *dir, cjob *jobs, int n)
{
	int next = 0, running = 0, rc = TK_OK, par = o->jobs > 0 ? o->jobs : 1;
	double limit = o->build_timeout > 0 ? o->build_timeout : 60;
	while ((next < n || running > 0)) {
		while (!rc && running < par && next < n) {
			cjob *j = &jobs[next++];
			if (j->done)
				continue;
			if ((rc = cjob_start(tg, j, dir)))
				break;
			running++;
		}
		if (running == 0)
			break;
		int status;
		pid_t p = waitpid(-1, &status, WNOHANG);
		if (p <= 0) {
			struct timespec ts = { 0, 5000000 };
			nanosleep(&ts, NULL);
			for (int i = 0; i < next; i++)
				if (!jobs[i].done && jobs[i].pid > 0 && tk_now() - jobs[i].start > limit)
					kill(jobs[i].pid, SIGKILL);
			continue;
		}
		for (int i = 0; i < next; i++)
			if (!jobs[i].done && jobs[i].pid == p) {
				cjob_finish(&jobs[i], status);
				running--;
			}
	}
	return rc;
}

static int hidden_cpu(ms_task *t, const tk_target *tg, const ms_opts *o, const sp_config *c,
                      int n, float *out, int *valid)
{
	int d = feat_hidden_length(t->space), rc = TK_OK;
	kn_kernel *k = calloc((size_t)(n > 0 ? n : 1), sizeof *k);
	cjob *jobs = calloc((size_t)(n > 0 ? n : 1), sizeof *jobs);
	char dir[4096];
	if (!k || !jobs) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	snprintf(dir, sizeof dir, "%s/hidden", o->cache_dir ? o->cache_dir : build_default_cache());
	if ((rc = build_cache_prepare(o->cache_dir ? o->cache_dir : build_default_cache())) ||
	    (rc = build_private_dir(dir, "hidden-feature cache")))
		goto done;
	for (int i = 0; i < n && !rc; i++) {
		if ((rc = kn_build(t->space, &c[i], tg, 0, &k[i])))
			break;
		jobs[i].src = k[i].src;
		if (!k[i].src) {
			jobs[i].done = 1; /* cannot be lowered: nothing to compile */
			continue;
		}
		sha256_ctx h;
		unsigned char dg[32];
		char path[4200];
		sha256_init(&h);
		const char *parts[] = { "hidden 1", tg->cc, tg->cc_version, tg->cflags, k[i].src };
		for (int p = 0; p < 5; p++)
			sha256_update(&h, parts[p], strlen(parts[p]) + 1);
		sha256_final(&h, dg);
		sha256_tohex(dg, jobs[i].key);
		snprintf(path, sizeof path, "%s/%s", dir, jobs[i].key);
		if (cache_read(path, &jobs[i].cc))
			jobs[i].done = jobs[i].ok = 1;
	}
	if (!rc)
		rc = compile_all(tg, o, dir, jobs, n);
	for (int i = 0; i < n && !rc; i++) {
		char path[4200];
		int ok = 0;
		if (jobs[i].ok && jobs[i].pid > 0) {
			snprintf(path, sizeof path, "%s/%s", dir, jobs[i].key);
			cache_write(dir, path, &jobs[i].cc);
		}
		float *row = &out[(size_t)i * (size_t)d];
		if ((rc = feat_hidden_cpu(t->space, &c[i], jobs[i].ok ? &jobs[i].cc : NULL, row, &ok)))
			break;
		valid[i] = ok && jobs[i].ok;
	}
done:
	for (int i = 0; k && i < n; i++)
		kn_kernel_free(&k[i]);
	free(k);
	free(jobs);
	return rc;
}

/* ---- entry ------------------------------------------------------------------ */

int ms_hidden(ms_task *t, const tk_target *tg, const ms_opts *o, const sp_config *c, int n,
              float *out, int *valid)
{
	if (!t->vta)
		return hidden_cpu(t, tg, o, c, n, out, valid);
	for (int i = 0; i < n; i++) {
		vta_sched sc;
		vta_stats st;
		int rc;
		int status;
		vta_sched_from_config(t->space, &c[i], &sc);
		if ((rc = vta_lower(&t->vta->hw, &t->vta->shape, &sc, VTA_LOWER_STATS_ONLY, NULL, &st,
		                    &status, NULL, 0)))
			return rc;
		/* the statistics of every configuration; valid if the device
		 * compiler accepts it */
		vta_stats_vector(&st, &out[(size_t)i * VTA_NSTAT]);
		valid[i] = status == VTA_OK;
	}
	return TK_OK;
}
