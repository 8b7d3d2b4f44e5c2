/*
 * check: the regression gate (see check.h): the best configuration of each
 * task in two stores on the same hardware, the ratio of their latencies with
 * a bootstrap interval from the repeats, and a verdict.
 */
#include "check.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_check.h"
#include "util/util.h"

const char *rp_check_verdict_name(int verdict)
{
	assert(verdict >= RP_UNCHANGED && verdict <= RP_SLOWER);
	return verdict == RP_SLOWER ? "slower" : verdict == RP_IMPROVED ? "improved" : "unchanged";
}

int rp_check_verdict(double lo, double hi, double t)
{
	assert(t >= 0 && lo <= hi);
	if (lo > 1 + t)
		return RP_SLOWER;
	if (hi < 1 / (1 + t))
		return RP_IMPROVED;
	return RP_UNCHANGED;
}

/* ---- the bootstrap --------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median of a[0..n), n >= 1; sorts a. */
static double median_sort(double *a, int n)
{
	qsort(a, (size_t)n, sizeof *a, cmp_double);
	return n % 2 ? a[n / 2] : 0.5 * (a[n / 2 - 1] + a[n / 2]);
}

/* Median of a resample of aX[0..n) with replacement, using aTmp[n]. */
static double resample_median(const double *aX, int n, double *aTmp, tk_rng *rng)
{
	for (int i = 0; i < n; i++)
		aTmp[i] = aX[tk_rng_below(rng, (uint32_t)n)];
	return median_sort(aTmp, n);
}

int rp_check_ratio(const double *aCur, int nCur, const double *aBase, int nBase, int nBoot,
                   uint64_t seed, double *ratio, double *lo, double *hi)
{
	int nMax = nCur > nBase ? nCur : nBase;
	double *aTmp, *aRatio;
	tk_rng rng;

	assert(aCur && aBase && nCur >= 1 && nBase >= 1 && nBoot >= 1);
	aTmp = malloc((size_t)nMax * sizeof *aTmp);
	aRatio = malloc((size_t)nBoot * sizeof *aRatio);
	if (!aTmp || !aRatio) {
		free(aTmp);
		free(aRatio);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	memcpy(aTmp, aCur, (size_t)nCur * sizeof *aTmp);
	double cur = median_sort(aTmp, nCur);
	memcpy(aTmp, aBase, (size_t)nBase * sizeof *aTmp);
	*ratio = cur / median_sort(aTmp, nBase);
	tk_rng_seed(&rng, seed, 28);
	for (int b = 0; b < nBoot; b++) {
		double c = resample_median(aCur, nCur, aTmp, &rng);
		aRatio[b] = c / resample_median(aBase, nBase, aTmp, &rng);
	}
	qsort(aRatio, (size_t)nBoot, sizeof *aRatio, cmp_double);
	*lo = aRatio[(int)floor(0.025 * (nBoot - 1))];
	*hi = aRatio[(int)ceil(0.975 * (nBoot - 1))];
	free(aTmp);
	free(aRatio);
	return TK_OK;
}

int rp_check_ratio_paired(const double *aCur, const double *aBase, int n, int nBoot,
                          uint64_t seed, double *ratio, double *lo, double *hi)
{
	double *aR, *aTmp, *aBoot;
	tk_rng rng;

	assert(aCur && aBase && n >= 1 && nBoot >= 1);
	aR = malloc((size_t)n * sizeof *aR);
	aTmp = malloc((size_t)n * sizeof *aTmp);
	aBoot = malloc((size_t)nBoot * sizeof *aBoot);
	if (!aR || !aTmp || !aBoot) {
		free(aR);
		free(aTmp);
		free(aBoot);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++)
		aR[i] = aCur[i] / aBase[i];
	memcpy(aTmp, aR, (size_t)n * sizeof *aTmp);
	*ratio = median_sort(aTmp, n);
	tk_rng_seed(&rng, seed, 28);
	for (int b = 0; b < nBoot; b++)
		aBoot[b] = resample_median(aR, n, aTmp, &rng);
	qsort(aBoot, (size_t)nBoot, sizeof *aBoot, cmp_double);
	*lo = aBoot[(int)floor(0.025 * (nBoot - 1))];
	*hi = aBoot[(int)ceil(0.975 * (nBoot - 1))];
	free(aR);
	free(aTmp);
	free(aBoot);
	return TK_OK;
}

int rp_check_pairs(const double *aCurAt, int nCur, const double *aBaseAt, int nBase,
                   int *aPairCur, int *aPairBase)
{
	if (nCur != nBase || nCur < RP_CHECK_MINPAIRS)
		return 0;
	/* Merge the two time orders (each side's is its index order only if its
	 * times increase: check); positions 2k and 2k+1 must hold one of each. */
	for (int i = 1; i < nCur; i++)
		if (aCurAt[i] < aCurAt[i - 1] || aBaseAt[i] < aBaseAt[i - 1])
			return 0;
	int i = 0, j = 0;
	for (int k = 0; k < nCur; k++) {
		int firstCur = aCurAt[i] <= aBaseAt[j];
		/* the next two in time order */
		int c1 = firstCur, c2;
		if (c1) {
			c2 = i + 1 < nCur && aCurAt[i + 1] <= aBaseAt[j];
		} else {
			c2 = !(j + 1 < nBase && aBaseAt[j + 1] < aCurAt[i]);
		}
		if (c1 == c2)
			return 0;
		aPairCur[k] = i++;
		aPairBase[k] = j++;
	}
	return 1;
}

/* ---- samples from the stores --------------------------------------------- */

typedef struct sample {
	int n, cap;
	double *a;
	int nMeas, capMeas;
	double *aMed, *aAt;     /* [nMeas] each measurement's median and time */
	int oom;
} sample;

static int sample_meas(sample *s, double med, double at)
{
	if (s->nMeas == s->capMeas) {
		int cap = s->capMeas ? 2 * s->capMeas : 16;
		double *a = realloc(s->aMed, (size_t)cap * sizeof *a);
		if (!a)
			return s->oom = 1;
		s->aMed = a;
		if (!(a = realloc(s->aAt, (size_t)cap * sizeof *a)))
			return s->oom = 1;
		s->aAt = a;
		s->capMeas = cap;
	}
	s->aMed[s->nMeas] = med;
	s->aAt[s->nMeas++] = at;
	return 0;
}

static void sample_free(sample *s)
{
	free(s->a);
	free(s->aMed);
	free(s->aAt);
}

static int sample_push(sample *s, double x)
{
	if (s->n == s->cap) {
		int cap = s->cap ? 2 * s->cap : 16;
		double *a = realloc(s->a, (size_t)cap * sizeof *a);
		if (!a)
			return s->oom = 1;
		s->a = a;
		s->cap = cap;
	}
	s->a[s->n++] = x;
	return 0;
}

/* One measurement into the sample of its clock (p is a sample[2], wall
 * then CPU time): its repeats scaled to its median. */
static int sample_add(void *p, const store_sample *m)
{
	sample *s = (sample *)p + (m->cpu_clock != 0);
	double *aTmp, med;
	if (sample_meas(s, m->median, m->at))
		return 1;
	if (m->ntimes <= 0)
		return sample_push(s, m->median);
	if (!(aTmp = malloc((size_t)m->ntimes * sizeof *aTmp)))
		return s->oom = 1;
	memcpy(aTmp, m->times, (size_t)m->ntimes * sizeof *aTmp);
	med = median_sort(aTmp, m->ntimes);
	free(aTmp);
	for (int i = 0; i < m->ntimes; i++)
		if (sample_push(s, med > 0 ? m->times[i] * (m->median / med) : m->median))
			return 1;
	return 0;
}

/* The measurements of a configuration, apart by clock: s[0] wall-clock,
 * s[1] CPU time (measure --clock cpu). */
static int sample_load(tk_store *st, int64_t config_id, int64_t hw_id, sample s[2])
{
	memset(s, 0, 2 * sizeof *s);
	int rc = store_check_samples(st, config_id, hw_id, sample_add, s);
	if (s[0].oom || s[1].oom)
		return tk_seterr(TK_ENOMEM, "out of memory");
	return rc;
}

static const char *const clock_name[2] = { "wall-clock", "CPU" };

/* ---- best configurations per task ---------------------------------------- */

typedef struct best {
	char *task, *config;
	int64_t config_id;
} best;

typedef struct best_list {
	int n, cap, oom;
	best *a;
} best_list;

static int best_add(void *p, const store_rec *r)
{
	best_list *l = p;
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 16;
		best *a = realloc(l->a, (size_t)cap * sizeof *a);
		if (!a)
			return l->oom = 1;
		l->a = a;
		l->cap = cap;
	}
	best *b = &l->a[l->n];
	b->task = strdup(r->task);
	b->config = strdup(r->config);
	b->config_id = r->config_id;
	if (!b->task || !b->config) {
		free(b->task);
		free(b->config);
		return l->oom = 1;
	}
	l->n++;
	return 0;
}

static void best_clear(best_list *l)
{
	for (int i = 0; i < l->n; i++) {
		free(l->a[i].task);
		free(l->a[i].config);
	}
	free(l->a);
	memset(l, 0, sizeof *l);
}

static int best_load(tk_store *s, int64_t hw_id, best_list *l)
{
	memset(l, 0, sizeof *l);
	int rc = store_best(s, hw_id, best_add, l);
	if (l->oom)
		return tk_seterr(TK_ENOMEM, "out of memory");
	return rc;
}

/* ---- hardware --------------------------------------------------------------- */

typedef struct hw_list {
	int n, cap, oom;
	int64_t *aId;
	char **aKey;
} hw_list;

static int hw_add(void *p, const store_hwinfo *h)
{
	hw_list *l = p;
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 8;
		int64_t *aId = realloc(l->aId, (size_t)cap * sizeof *aId);
		if (aId)
			l->aId = aId;
		char **aKey = realloc(l->aKey, (size_t)cap * sizeof *aKey);
		if (aKey)
			l->aKey = aKey;
		if (!aId || !aKey)
			return l->oom = 1;
		l->cap = cap;
	}
	if (!(l->aKey[l->n] = strdup(h->key)))
		return l->oom = 1;
	l->aId[l->n++] = h->id;
	return 0;
}

static void hw_clear(hw_list *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->aKey[i]);
	free(l->aId);
	free(l->aKey);
	memset(l, 0, sizeof *l);
}

static int hw_load(tk_store *s, hw_list *l)
{
	memset(l, 0, sizeof *l);
	int rc = store_check_hardware(s, hw_add, l);
	if (l->oom)
		return tk_seterr(TK_ENOMEM, "out of memory");
	return rc;
}

/* The index of key in l, or -1. */
static int hw_find(const hw_list *l, const char *key)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->aKey[i], key))
			return i;
	return -1;
}

/* The index of hardware id in l, or -1. */
static int hw_index(const hw_list *l, int64_t id)
{
	for (int i = 0; i < l->n; i++)
		if (l->aId[i] == id)
			return i;
	return -1;
}

/* "key; key" of every hardware in l (or "none") into sb. */
/* Field f (0-based) of a hardware key "cpu|isa|compiler|opt|threads=N":
 * its start into *p and length into *n; 0 if the key has no such field. */
static int key_field(const char *key, int f, const char **p, size_t *n)
{
	for (int i = 0; i < f; i++) {
		key = strchr(key, '|');
		if (!key)
			return 0;
		key++;
	}
	const char *e = strchr(key, '|');
	*p = key;
	*n = e ? (size_t)(e - key) : strlen(key);
	return 1;
}

/* 1 if keys a and b differ in their compiler field (the third of five)
 * and nowhere else. */
static int key_differs_in_compiler(const char *a, const char *b)
{
	const char *pa, *pb;
	size_t na, nb;
	if (key_field(a, 5, &pa, &na) || key_field(b, 5, &pb, &nb) ||
	    !key_field(a, 4, &pa, &na) || !key_field(b, 4, &pb, &nb))
		return 0; /* not five fields */
	for (int f = 0; f < 5; f++) {
		key_field(a, f, &pa, &na);
		key_field(b, f, &pb, &nb);
		int same = na == nb && !memcmp(pa, pb, na);
		if (same != (f != 2))
			return 0;
	}
	return 1;
}

/* The one hardware of l whose key differs from key only in the compiler,
 * -1 if none or several. */
static int hw_find_compiler_change(const hw_list *l, const char *key)
{
	int k = -1;
	for (int i = 0; i < l->n; i++) {
		if (!key_differs_in_compiler(l->aKey[i], key))
			continue;
		if (k >= 0)
			return -1;
		k = i;
	}
	return k;
}

static void hw_names(tk_sb *sb, const hw_list *l)
{
	if (!l->n)
		tk_sb_puts(sb, "none");
	for (int i = 0; i < l->n; i++)
		tk_sb_printf(sb, "%s%s", i ? "; " : "", l->aKey[i]);
}

/* ---- the comparison ----------------------------------------------------------- */

static int row_add(rp_check *c, int *cap, const best *bc, const best *bb, int64_t hw_id)
{
	if (c->nrow == *cap) {
		int n = *cap ? 2 * *cap : 16;
		rp_check_row *a = realloc(c->row, (size_t)n * sizeof *a);
		if (!a)
			return tk_seterr(TK_ENOMEM, "out of memory");
		c->row = a;
		*cap = n;
	}
	rp_check_row *r = &c->row[c->nrow];
	memset(r, 0, sizeof *r);
	r->task = strdup(bc->task);
	r->config = strdup(bc->config);
	r->base_config = strdup(bb->config);
	r->hardware_id = hw_id;
	c->nrow++; /* owned by c from here: rp_check_free frees the strings */
	if (!r->task || !r->config || !r->base_config)
		return tk_seterr(TK_ENOMEM, "out of memory");
	return TK_OK;
}

/* Compare the tasks of hardware cur_hw in cur and base_hw in base. */
/* The ratio of a row and its interval: paired when the two sides were
 * measured in turn, else from the pooled samples. */
static int ratio_of(const sample *sc, const sample *sb, uint64_t seed, rp_check_row *r)
{
	int n = sc->nMeas, rc;
	int *aPc = malloc((size_t)(n ? n : 1) * sizeof *aPc);
	int *aPb = malloc((size_t)(n ? n : 1) * sizeof *aPb);
	double *aC = malloc((size_t)(n ? n : 1) * sizeof *aC);
	double *aB = malloc((size_t)(n ? n : 1) * sizeof *aB);
	if (!aPc || !aPb || !aC || !aB) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	} else if (rp_check_pairs(sc->aAt, n, sb->aAt, sb->nMeas, aPc, aPb)) {
		for (int k = 0; k < n; k++) {
			aC[k] = sc->aMed[aPc[k]];
			aB[k] = sb->aMed[aPb[k]];
		}
		r->npair = n;
		rc = rp_check_ratio_paired(aC, aB, n, RP_CHECK_NBOOT, seed, &r->ratio, &r->lo, &r->hi);
	} else {
		r->npair = 0;
		rc = rp_check_ratio(sc->a, sc->n, sb->a, sb->n, RP_CHECK_NBOOT, seed, &r->ratio,
		                    &r->lo, &r->hi);
	}
	free(aPc);
	free(aPb);
	free(aC);
	free(aB);
	return rc;
}

static int compare_hw(rp_check *c, int *cap, tk_store *cur, int64_t cur_hw, tk_store *base,
                      int64_t base_hw, uint64_t seed)
{
	best_list lc, lb;
	int rc;
	memset(&lb, 0, sizeof lb);
	if ((rc = best_load(cur, cur_hw, &lc)) || (rc = best_load(base, base_hw, &lb))) {
		best_clear(&lc);
		best_clear(&lb);
		return rc;
	}
	/* both lists are sorted by task key (store_best's order): merge them */
	int i = 0, j = 0;
	while (!rc && (i < lc.n || j < lb.n)) {
		int d = i == lc.n ? 1 : j == lb.n ? -1 : strcmp(lc.a[i].task, lb.a[j].task);
		if (d < 0) {
			c->nonly_cur++;
			i++;
			continue;
		}
		if (d > 0) {
			c->nonly_base++;
			j++;
			continue;
		}
		sample aC[2], aB[2];
		if ((rc = row_add(c, cap, &lc.a[i], &lb.a[j], cur_hw)))
			break;
		rp_check_row *r = &c->row[c->nrow - 1];
		memset(aB, 0, sizeof aB);
		rc = sample_load(cur, lc.a[i].config_id, cur_hw, aC);
		if (!rc && !(rc = sample_load(base, lb.a[j].config_id, base_hw, aB))) {
			/* like with like: CPU times where both sides have them, else
			 * wall-clock times; a CPU time is no wall-clock time */
			int k = aC[1].n && aB[1].n ? 1 : 0;
			sample *sc = &aC[k], *sb = &aB[k];
			if (sc->n && sb->n) {
				r->ncur = sc->n;
				r->nbase = sb->n;
				rc = ratio_of(sc, sb, seed + (uint64_t)c->nrow, r);
				if (!rc) {
					r->cur = median_sort(sc->a, sc->n);
					r->base = median_sort(sb->a, sb->n);
					r->verdict = rp_check_verdict(r->lo, r->hi, c->threshold);
					c->count[r->verdict]++;
				}
			} else {
				int kc = aC[1].n > 0, kb = aB[1].n > 0;
				rc = tk_seterr(TK_EINVAL, "%s: the current store timed it in %s time, the"
				               " baseline in %s time, which never compare: measure"
				               " both with the same --clock", r->task, clock_name[kc],
				               clock_name[kb]);
			}
		}
		for (int k = 0; k < 2; k++) {
			sample_free(&aB[k]);
			sample_free(&aC[k]);
		}
		i++;
		j++;
	}
	best_clear(&lc);
	best_clear(&lb);
	return rc;
}

int rp_check_build(tk_store *cur, tk_store *base, int64_t hardware_id, double t,
                   uint64_t seed, rp_check **out)
{
	hw_list hc, hb;
	rp_check *c;
	tk_sb sb, cc;
	int rc, cap = 0;

	assert(cur && base && out && t >= 0);
	*out = NULL;
	memset(&hb, 0, sizeof hb);
	tk_sb_init(&sb);
	tk_sb_init(&cc);
	if (!(c = calloc(1, sizeof *c)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	c->threshold = t;
	if ((rc = hw_load(cur, &hc)) || (rc = hw_load(base, &hb)))
		goto done;
	if (hardware_id && hw_index(&hc, hardware_id) < 0) {
		rc = tk_seterr(TK_ENOTFOUND, "the current store has no valid measurement on"
		               " hardware %lld", (long long)hardware_id);
		goto done;
	}
	for (int i = 0; i < hc.n && !rc; i++) {
		if (hardware_id && hc.aId[i] != hardware_id)
			continue;
		int k = hw_find(&hb, hc.aKey[i]);
		if (k < 0 && (k = hw_find_compiler_change(&hb, hc.aKey[i])) >= 0) {
			const char *pb = "", *pc = "";
			size_t nb = 0, nc = 0;
			key_field(hb.aKey[k], 2, &pb, &nb);
			key_field(hc.aKey[i], 2, &pc, &nc);
			tk_sb_printf(&cc, "%.*s -> %.*s\n", (int)nb, pb, (int)nc, pc);
		}
		if (k < 0)
			continue;
		c->nhw++;
		tk_sb_printf(&sb, "%s\n", hc.aKey[i]);
		rc = compare_hw(c, &cap, cur, hc.aId[i], base, hb.aId[k], seed);
	}
	if (rc)
		goto done;
	if (!c->nhw) {
		tk_sb msg;
		tk_sb_init(&msg);
		tk_sb_puts(&msg, "the stores measured on different hardware, which never compares: ");
		tk_sb_puts(&msg, "current: ");
		if (hardware_id) /* only the hardware asked for */
			tk_sb_printf(&msg, "%s (hardware %lld)",
			             hc.aKey[hw_index(&hc, hardware_id)], (long long)hardware_id);
		else
			hw_names(&msg, &hc);
		tk_sb_puts(&msg, "; baseline: ");
		hw_names(&msg, &hb);
		rc = tk_seterr(TK_EINVAL, "%s", msg.s ? msg.s : "out of memory");
		tk_sb_free(&msg);
		goto done;
	}
	if (!c->nrow) {
		rc = tk_seterr(TK_EINVAL, "no task has a best configuration in both stores on the"
		               " same hardware: nothing to check");
		goto done;
	}
	if (sb.oom || cc.oom) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	c->hw_keys = sb.s;
	sb.s = NULL;
	c->compiler_changes = cc.s;
	cc.s = NULL;
done:
	tk_sb_free(&cc);
	hw_clear(&hc);
	hw_clear(&hb);
	tk_sb_free(&sb);
	if (rc)
		rp_check_free(c);
	else
		*out = c;
	return rc;
}

void rp_check_free(rp_check *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->nrow; i++) {
		free(c->row[i].task);
		free(c->row[i].config);
		free(c->row[i].base_config);
	}
	free(c->row);
	free(c->hw_keys);
	free(c->compiler_changes);
	free(c);
}
