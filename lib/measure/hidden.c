/*
 * hidden: hidden features of configurations on their target (hidden.h):
 * on the CPU the compiler's facts of the build the measurement uses
 * (build_run with the compiler's reports; the facts cached), on vta-sim
 * the device compiler's statistics.
 */
#include "hidden.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build.h"
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

/* Bytes of the executable sections of the ELF file open as fd; -1 if it is
 * not a readable 64-bit ELF file. */
static double text_bytes(int fd)
{
	Elf64_Ehdr eh;
	double text = 0;
	if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr))
		return -1;
	for (int i = 0; i < eh.e_shnum; i++) {
		Elf64_Shdr sh;
		off_t at = (off_t)eh.e_shoff + (off_t)i * (off_t)sizeof sh;
		if (pread(fd, &sh, sizeof sh, at) != (ssize_t)sizeof sh)
			return -1;
		if (sh.sh_flags & SHF_EXECINSTR)
			text += (double)sh.sh_size;
	}
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

/* The facts of the kernel build_run compiled with its reports in j. */
static int facts_of(const build_job *j, feat_cc *cc)
{
	char p[4200];
	struct stat st;
	memset(cc, 0, sizeof *cc);
	if (j->status != BUILD_OK || j->fd < 0 || fstat(j->fd, &st))
		return 0;
	cc->object_bytes = (double)st.st_size;
	if ((cc->text_bytes = text_bytes(j->fd)) < 0)
		return 0;
	snprintf(p, sizeof p, "%s.su", j->report);
	read_stack(p, cc);
	snprintf(p, sizeof p, "%s.vec", j->report);
	read_vec(p, cc);
	return 1;
}

/* The cache entry: one line of the facts. */
static int cache_read(const char *path, feat_cc *cc)
{
	FILE *f = fopen(path, "r");
	int ok = 0;
	if (f) {
		ok = fscanf(f, "tunekit-hidden 2 %lf %d %lf %lf %d %d", &cc->stack_bytes,
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
	int bad = fprintf(f, "tunekit-hidden 2 %.17g %d %.17g %.17g %d %d\n", cc->stack_bytes,
	                  cc->dynamic_stack, cc->text_bytes, cc->object_bytes, cc->vectorized,
	                  cc->missed) < 0;
	if (fclose(f) || bad || rename(tmp, path))
		unlink(tmp);
}

/* The facts' cache key of src: what the object depends on, as the build
 * cache's key. */
static void facts_key(const tk_target *tg, const char *src, char key[SHA256_HEX])
{
	const char *parts[] = { "hidden 2", tg->cc, tg->cc_version, tg->cflags, tg->cpu, src };
	sha256_ctx h;
	unsigned char dg[32];
	sha256_init(&h);
	for (int p = 0; p < 6; p++)
		sha256_update(&h, parts[p], strlen(parts[p]) + 1);
	sha256_final(&h, dg);
	sha256_tohex(dg, key);
}

void ms_hidden_keep(const tk_target *tg, const ms_opts *o, const build_job *jobs, int n)
{
	char dir[4096], key[SHA256_HEX], path[4200];
	snprintf(dir, sizeof dir, "%s/hidden", o->cache_dir ? o->cache_dir : build_default_cache());
	if (build_private_dir(dir, "hidden-feature cache"))
		return;
	for (int i = 0; i < n; i++) {
		feat_cc cc;
		if (!jobs[i].report[0] || !facts_of(&jobs[i], &cc))
			continue;
		facts_key(tg, jobs[i].src, key);
		snprintf(path, sizeof path, "%s/%s", dir, key);
		cache_write(dir, path, &cc);
	}
}

/* The facts come from the build the measurement uses: the kernels not in
 * the facts' cache are built by build_run with their reports, which puts
 * each object in the build cache under the measurement's key, so a
 * candidate picked is not compiled again when measured. */
static int hidden_cpu(ms_task *t, const tk_target *tg, const ms_opts *o, const sp_config *c,
                      int n, float *out, int *valid)
{
	int d = feat_hidden_length(t->space), rc = TK_OK, nj = 0;
	kn_kernel *k = calloc((size_t)(n > 0 ? n : 1), sizeof *k);
	build_job *jobs = calloc((size_t)(n > 0 ? n : 1), sizeof *jobs);
	int *slot = calloc((size_t)(n > 0 ? n : 1), sizeof *slot);
	feat_cc *cc = calloc((size_t)(n > 0 ? n : 1), sizeof *cc);
	char (*key)[SHA256_HEX] = calloc((size_t)(n > 0 ? n : 1), sizeof *key);
	const char *cache = o->cache_dir ? o->cache_dir : build_default_cache();
	char dir[4096];
	for (int i = 0; jobs && i < n; i++)
		jobs[i].fd = -1;
	if (!k || !jobs || !slot || !cc || !key) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	snprintf(dir, sizeof dir, "%s/hidden", cache);
	if ((rc = build_cache_prepare(cache)) || (rc = build_private_dir(dir, "hidden-feature cache")))
		goto done;
	double t0 = tk_now();
	for (int i = 0; i < n && !rc; i++) {
		char path[4200];
		slot[i] = -1; /* not lowered, or its facts cached */
		if ((rc = kn_build(t->space, &c[i], tg, 0, &k[i])))
			break;
		if (!k[i].src)
			continue; /* cannot be lowered: nothing to compile */
		facts_key(tg, k[i].src, key[i]);
		snprintf(path, sizeof path, "%s/%s", dir, key[i]);
		if (cache_read(path, &cc[i]))
			continue;
		jobs[nj].src = k[i].src;
		slot[i] = nj++;
	}
	double t1 = tk_now();
	t->time.codegen_s += t1 - t0;
	t->time.hidden_s += t1 - t0;
	if (rc || nj == 0)
		goto facts;
	build_opts bo = { o->cache_dir, o->cache_max, o->jobs > 0 ? o->jobs : 1,
	                  o->build_timeout > 0 ? o->build_timeout : 60, o->build_adapt,
	                  o->build_adapt_floor, BUILD_REPORTS_ALL };
	if ((rc = build_run(tg, &bo, jobs, nj)))
		goto done;
	t0 = tk_now();
	t->time.compile_s += t0 - t1;
	t->time.hidden_s += t0 - t1;
	for (int i = 0; i < nj; i++) {
		t->time.cached += jobs[i].cached;
		t->time.compiled += !jobs[i].cached;
	}
facts:
	for (int i = 0; i < n && !rc; i++) {
		int ok = 0, compiled = k[i].src != NULL;
		if (slot[i] >= 0) {
			char path[4200];
			compiled = facts_of(&jobs[slot[i]], &cc[i]);
			snprintf(path, sizeof path, "%s/%s", dir, key[i]);
			if (compiled)
				cache_write(dir, path, &cc[i]);
		}
		float *row = &out[(size_t)i * (size_t)d];
		if ((rc = feat_hidden_cpu(t->space, &c[i], compiled ? &cc[i] : NULL, row, &ok)))
			break;
		valid[i] = ok && compiled;
	}
done:
	if (jobs)
		build_jobs_close(jobs, nj);
	for (int i = 0; k && i < n; i++)
		kn_kernel_free(&k[i]);
	free(k);
	free(jobs);
	free(slot);
	free(cc);
	free(key);
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
