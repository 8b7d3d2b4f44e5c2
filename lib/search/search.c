/*
 * search: index sets, simulated annealing and diversity-aware selection
 * (see search.h). The annealing follows AutoTVM's
 * SimulatedAnnealingOptimizer.find_maximums step for step.
 */
#include "search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- sets ------------------------------------------------------------------ */

void sr_set_init(sr_set *s)
{
	memset(s, 0, sizeof *s);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static int64_t find_slot(const sr_set *s, uint64_t v)
{
	int64_t i = (int64_t)(mix(v) & (uint64_t)(s->cap - 1));
	while (s->slot[i] && s->slot[i] != v + 1)
		i = (i + 1) & (s->cap - 1);
	return i;
}

int sr_set_has(const sr_set *s, uint64_t v)
{
	if (!s || !s->cap)
		return 0;
	return s->slot[find_slot(s, v)] != 0;
}

int sr_set_add(sr_set *s, uint64_t v)
{
	if (2 * (s->n + 1) > s->cap) {
		int64_t cap = s->cap ? 2 * s->cap : 64;
		uint64_t *old = s->slot;
		int64_t oldcap = s->cap;
		s->slot = calloc((size_t)cap, sizeof *s->slot);
		if (!s->slot) {
			s->slot = old;
			return tk_seterr(TK_ENOMEM, "out of memory");
		}
		s->cap = cap;
		s->n = 0;
		for (int64_t i = 0; i < oldcap; i++)
			if (old[i]) {
				s->slot[find_slot(s, old[i] - 1)] = old[i];
				s->n++;
			}
		free(old);
	}
	int64_t i = find_slot(s, v);
	if (!s->slot[i]) {
		s->slot[i] = v + 1;
		s->n++;
	}
	return TK_OK;
}

void sr_set_free(sr_set *s)
{
	free(s->slot);
	sr_set_init(s);
}

/* ---- simulated annealing ---------------------------------------------------------- */

struct sr_sa {
	const sp_space *sp;
	sr_sa_opts o;
	int have_points;
	sp_config *points, *next;
	float *score, *next_score;
	int steps;
};

void sr_sa_opts_default(sr_sa_opts *o)
{
	o->chains = 128;
	o->iters = 500;
	o->early_stop = 50;
	o->t_hi = 1;
	o->t_lo = 0;
	o->persistent = 1;
	o->max_scores = 0;
	o->nfix = 0;
}

int sr_sa_new(const sp_space *sp, const sr_sa_opts *o, sr_sa **out)
{
	sr_sa *sa = calloc(1, sizeof *sa);
	*out = NULL;
	if (!sa)
		return tk_seterr(TK_ENOMEM, "out of memory");
	sa->sp = sp;
	sa->o = *o;
	if (sa->o.chains < 1)
		sa->o.chains = 1;
	if (sa->o.max_scores > 0 && sa->o.max_scores / sa->o.chains - 1 < sa->o.iters)
		sa->o.iters = sa->o.max_scores / sa->o.chains > 1 ? sa->o.max_scores / sa->o.chains - 1 : 1;
	size_t n = (size_t)sa->o.chains;
	sa->points = calloc(n, sizeof *sa->points);
	sa->next = calloc(n, sizeof *sa->next);
	sa->score = calloc(n, sizeof *sa->score);
	sa->next_score = calloc(n, sizeof *sa->next_score);
	if (!sa->points || !sa->next || !sa->score || !sa->next_score) {
		sr_sa_free(sa);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	*out = sa;
	return TK_OK;
}

void sr_sa_free(sr_sa *sa)
{
	if (!sa)
		return;
	free(sa->points);
	free(sa->next);
	free(sa->score);
	free(sa->next_score);
	free(sa);
}

int sr_sa_steps(const sr_sa *sa)
{
	return sa->steps;
}

/* The best-so-far list: a min-heap of `num` entries keyed by score, plus a
 * set of the indices it holds. */
typedef struct heap {
	int n, cap;
	float *score;
	uint64_t *idx;
	sp_config *cfg;
	sr_set in;
} heap;

static void heap_swap(heap *h, int a, int b)
{
	float s = h->score[a];
	uint64_t i = h->idx[a];
	sp_config c = h->cfg[a];
	h->score[a] = h->score[b];
	h->idx[a] = h->idx[b];
	h->cfg[a] = h->cfg[b];
	h->score[b] = s;
	h->idx[b] = i;
	h->cfg[b] = c;
}

static void heap_down(heap *h, int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < h->n && h->score[l] < h->score[m])
			m = l;
		if (r < h->n && h->score[r] < h->score[m])
			m = r;
		if (m == i)
			return;
		heap_swap(h, i, m);
		i = m;
	}
}

static void heap_up(heap *h, int i)
{
	while (i > 0 && h->score[(i - 1) / 2] > h->score[i]) {
		heap_swap(h, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

/* Offer a point; returns 1 if it entered the list. */
static int heap_offer(heap *h, const sp_space *sp, const sp_config *c, float s, int *err)
{
	uint64_t idx = sp_index(sp, c);
	if (sr_set_has(&h->in, idx))
		return 0;
	if (h->n == h->cap) {
		if (!(s > h->score[0]))
			return 0;
		/* the evicted index stays in `in`: it was seen, and AutoTVM's
		 * in_heap set keeps it too, so it cannot come back */
		h->score[0] = s;
		h->idx[0] = idx;
		h->cfg[0] = *c;
		heap_down(h, 0);
	} else {
		h->score[h->n] = s;
		h->idx[h->n] = idx;
		h->cfg[h->n] = *c;
		heap_up(h, h->n++);
	}
	if (sr_set_add(&h->in, idx))
		*err = TK_ENOMEM;
	return 1;
}

/* A step that moved a fixed knob stays where it was on that knob (it
 * changed nothing, and the chain loses the step). */
static void fix(const sr_sa *sa, sp_config *c)
{
	for (int i = 0; i < sa->o.nfix && i < SR_MAXFIX; i++)
		c->v[sa->o.fix_knob[i]] = sa->o.fix_value[i];
}

int sr_sa_find(sr_sa *sa, sr_score_fn score, void *ctx, const sr_set *exclude, tk_rng *rng,
               int num, sp_config *out, float *scores, int *nout)
{
	const sp_space *sp = sa->sp;
	int nc = sa->o.chains, rc = TK_OK, err = TK_OK;
	heap h = { 0 };
	*nout = 0;
	sa->steps = 0;
	if (num < 1)
		return TK_OK;
	h.cap = num;
	h.score = malloc(sizeof *h.score * (size_t)num);
	h.idx = malloc(sizeof *h.idx * (size_t)num);
	h.cfg = malloc(sizeof *h.cfg * (size_t)num);
	sr_set_init(&h.in);
	if (!h.score || !h.idx || !h.cfg) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	/* excluded points are never offered: mark them as already seen */
	if (!sa->have_points || !sa->o.persistent)
		for (int i = 0; i < nc; i++) {
			sp_sample(sp, rng, &sa->points[i]);
			fix(sa, &sa->points[i]);
		}
	sa->have_points = 1;
	if ((rc = score(ctx, sa->points, nc, sa->score)))
		goto done;
	for (int i = 0; i < nc; i++)
		if (!sr_set_has(exclude, sp_index(sp, &sa->points[i])))
			heap_offer(&h, sp, &sa->points[i], sa->score[i], &err);

	double t = sa->o.t_hi, cool = (sa->o.t_hi - sa->o.t_lo) / (sa->o.iters + 1);
	int k = 0, last = 0;
	while (k < sa->o.iters && k < last + sa->o.early_stop && !err) {
		for (int i = 0; i < nc; i++) {
			sp_neighbor(sp, rng, &sa->points[i], &sa->next[i]);
			fix(sa, &sa->next[i]);
		}
		if ((rc = score(ctx, sa->next, nc, sa->next_score)))
			goto done;
		for (int i = 0; i < nc; i++) {
			double d = (sa->next_score[i] - sa->score[i]) / (t + 1e-5);
			double p = exp(d < 1 ? d : 1);
			if (tk_rng_unif(rng) < p) {
				sa->points[i] = sa->next[i];
				sa->score[i] = sa->next_score[i];
			}
		}
		for (int i = 0; i < nc; i++) {
			if (h.n == h.cap && !(sa->next_score[i] > h.score[0]))
				continue;
			if (sr_set_has(exclude, sp_index(sp, &sa->next[i])))
				continue;
			if (heap_offer(&h, sp, &sa->next[i], sa->next_score[i], &err))
				last = k;
		}
		k++;
		t -= cool;
	}
	sa->steps = k;
	if (err) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	/* heap sort of the min-heap: the array ends in descending order */
	int total = h.n;
	while (h.n > 1) {
		heap_swap(&h, 0, h.n - 1);
		h.n--;
		heap_down(&h, 0);
	}
	for (int i = 0; i < total; i++) {
		out[i] = h.cfg[i];
		if (scores)
			scores[i] = h.score[i];
	}
	*nout = total;
done:
	free(h.score);
	free(h.idx);
	free(h.cfg);
	sr_set_free(&h.in);
	return rc;
}

/* ---- diversity ------------------------------------------------------------------------ */

int sr_diverse(const sp_space *sp, const sp_config *cand, const float *score, int n, int k,
               double knob_weight, int *pick)
{
	sr_set used; /* (knob << 32 | value) pairs covered so far */
	char *taken = calloc((size_t)n + 1, 1);
	int rc = TK_OK;
	if (!taken)
		return tk_seterr(TK_ENOMEM, "out of memory");
	sr_set_init(&used);
	if (k > n)
		k = n;
	for (int j = 0; j < k && !rc; j++) {
		int best = -1;
		double bv = -INFINITY;
		for (int i = 0; i < n; i++) {
			if (taken[i])
				continue;
			double v = score ? score[i] : 0;
			for (int q = 0; q < sp->nknob; q++)
				if (!sr_set_has(&used, (uint64_t)q << 32 | (uint32_t)cand[i].v[q]))
					v += knob_weight;
			if (v > bv) {
				bv = v;
				best = i;
			}
		}
		taken[best] = 1;
		pick[j] = best;
		for (int q = 0; q < sp->nknob && !rc; q++)
			rc = sr_set_add(&used, (uint64_t)q << 32 | (uint32_t)cand[best].v[q]);
	}
	sr_set_free(&used);
	free(taken);
	return rc;
}

double sr_ei(double mu, double sigma, double best)
{
	if (!(sigma > 0))
		return mu > best ? mu - best : 0;
	double z = (mu - best) / sigma;
	double pdf = exp(-0.5 * z * z) / sqrt(2 * M_PI), cdf = 0.5 * erfc(-z / sqrt(2));
	double ei = (mu - best) * cdf + sigma * pdf;
	return ei > 0 ? ei : 0;
}
