/*
 * Unit tests for lib/search: index sets, simulated annealing (never an
 * out-of-space, excluded or repeated configuration; finds the maximum of a
 * known score), diversity-aware selection, the search table (names,
 * flags, what random, grid and model-free annealing propose), and batch
 * Bayesian optimisation (the UCB's maximum first, a diverse batch by local
 * penalisation).
 */
#include <stdlib.h>

#include "search/search.h"
#include "task/te.h"
#include "unit.h"

static te_prog *prog;
static sp_space *space;

TEST(test_setup)
{
	CHECK_EQ_INT(te_task_parse("conv2d:c=8,h=12,w=12,k=16,pad=1", &prog), TK_OK);
	CHECK_EQ_INT(sp_space_create(prog, &space), TK_OK);
}

TEST(test_set)
{
	sr_set s;
	sr_set_init(&s);
	for (uint64_t i = 0; i < 10000; i += 3)
		CHECK_EQ_INT(sr_set_add(&s, i * 7919), TK_OK);
	int bad = 0;
	for (uint64_t i = 0; i < 10000; i++)
		bad += sr_set_has(&s, i * 7919) != (i % 3 == 0);
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(s.n, 3334);
	CHECK_EQ_INT(sr_set_add(&s, 0), TK_OK); /* again */
	CHECK_EQ_INT(s.n, 3334);
	CHECK(!sr_set_has(&s, 1));
	sr_set_free(&s);
	CHECK(!sr_set_has(&s, 0));
}

/* A score with a known maximum: closeness of each knob to a target. */
static sp_config target;

static int score(void *ctx, const sp_config *c, int n, float *out)
{
	int *calls = ctx;
	(*calls)++;
	for (int i = 0; i < n; i++) {
		double s = 0;
		for (int k = 0; k < space->nknob; k++)
			s -= abs(c[i].v[k] - target.v[k]) / (double)space->knob[k].n;
		out[i] = (float)s;
	}
	return TK_OK;
}

TEST(test_sa_respects_space_and_exclusions)
{
	tk_rng rng;
	tk_rng_seed(&rng, 3, 0);
	sr_sa_opts o;
	sr_sa_opts_default(&o);
	o.chains = 32;
	o.iters = 100;
	sr_sa *sa;
	CHECK_EQ_INT(sr_sa_new(space, &o, &sa), TK_OK);
	sr_set excl;
	sr_set_init(&excl);
	sp_sample(space, &rng, &target);
	/* exclude the target and many random points */
	sr_set_add(&excl, sp_index(space, &target));
	for (int i = 0; i < 2000; i++) {
		sp_config c;
		sp_sample(space, &rng, &c);
		sr_set_add(&excl, sp_index(space, &c));
	}
	sp_config out[64];
	float sc[64];
	int n = 0, calls = 0;
	for (int round = 0; round < 5; round++) {
		CHECK_EQ_INT(sr_sa_find(sa, score, &calls, &excl, &rng, 64, out, sc, &n), TK_OK);
		CHECK_EQ_INT(n, 64);
		sr_set seen;
		sr_set_init(&seen);
		int bad = 0, dup = 0, unsorted = 0;
		for (int i = 0; i < n; i++) {
			uint64_t idx = sp_index(space, &out[i]);
			for (int k = 0; k < space->nknob; k++)
				bad += out[i].v[k] < 0 || out[i].v[k] >= space->knob[k].n;
			bad += idx >= space->size || sr_set_has(&excl, idx);
			dup += sr_set_has(&seen, idx);
			sr_set_add(&seen, idx);
			if (i)
				unsorted += sc[i] > sc[i - 1];
		}
		CHECK_EQ_INT(bad, 0);
		CHECK_EQ_INT(dup, 0);
		CHECK_EQ_INT(unsorted, 0);
		sr_set_free(&seen);
		/* measured configurations are excluded next time */
		for (int i = 0; i < n; i++)
			sr_set_add(&excl, sp_index(space, &out[i]));
	}
	CHECK(calls > 5);
	sr_set_free(&excl);
	sr_sa_free(sa);
}

TEST(test_sa_finds_the_maximum)
{
	tk_rng rng;
	tk_rng_seed(&rng, 11, 0);
	sr_sa_opts o;
	sr_sa_opts_default(&o);
	sr_sa *sa;
	CHECK_EQ_INT(sr_sa_new(space, &o, &sa), TK_OK);
	sp_sample(space, &rng, &target);
	sp_config out[8];
	float sc[8];
	int n = 0, calls = 0;
	CHECK_EQ_INT(sr_sa_find(sa, score, &calls, NULL, &rng, 8, out, sc, &n), TK_OK);
	CHECK_EQ_INT(n, 8);
	CHECK_EQ_INT((long long)sp_index(space, &out[0]), (long long)sp_index(space, &target));
	CHECK_NEAR(sc[0], 0, 1e-6);
	CHECK(sr_sa_steps(sa) <= o.iters);
	sr_sa_free(sa);
}

TEST(test_sa_keeps_to_its_score_budget)
{
	/* 8192 scores of 128 chains: the first points and 63 steps, where
	 * 500 would be allowed; the temperature falls over those 63 */
	tk_rng rng;
	tk_rng_seed(&rng, 11, 0);
	sr_sa_opts o;
	sr_sa_opts_default(&o);
	o.max_scores = 8192;
	o.early_stop = 1000;
	sr_sa *sa;
	CHECK_EQ_INT(sr_sa_new(space, &o, &sa), TK_OK);
	sp_sample(space, &rng, &target);
	sp_config out[8];
	float sc[8];
	int n = 0, calls = 0;
	CHECK_EQ_INT(sr_sa_find(sa, score, &calls, NULL, &rng, 8, out, sc, &n), TK_OK);
	CHECK_EQ_INT(n, 8);
	CHECK_EQ_INT(sr_sa_steps(sa), 63);
	CHECK_EQ_INT(calls * o.chains, 8192);
	/* within a knob value or two of the maximum (the first points score
	 * about -2.5), where the unlimited run reaches it */
	CHECK(sc[0] > -0.25);
	sr_sa_free(sa);
}

TEST(test_sa_holds_a_fixed_knob)
{
	/* the maximum has order 0; held at order 2, every point found has
	 * order 2 and the best is the maximum's other knobs with order 2 */
	int k = sp_knob_find(space, "order");
	CHECK(k >= 0 && space->knob[k].n == 3);
	tk_rng rng;
	tk_rng_seed(&rng, 5, 0);
	sr_sa_opts o;
	sr_sa_opts_default(&o);
	o.nfix = 1;
	o.fix_knob[0] = k;
	o.fix_value[0] = 2;
	sr_sa *sa;
	CHECK_EQ_INT(sr_sa_new(space, &o, &sa), TK_OK);
	sp_sample(space, &rng, &target);
	target.v[k] = 0;
	sp_config out[16], want = target;
	float sc[16];
	int n = 0, calls = 0, other = 0;
	CHECK_EQ_INT(sr_sa_find(sa, score, &calls, NULL, &rng, 16, out, sc, &n), TK_OK);
	CHECK_EQ_INT(n, 16);
	for (int i = 0; i < n; i++)
		other += out[i].v[k] != 2;
	CHECK_EQ_INT(other, 0);
	want.v[k] = 2;
	CHECK_EQ_INT((long long)sp_index(space, &out[0]), (long long)sp_index(space, &want));
	sr_sa_free(sa);
}

TEST(test_sa_small_space_is_exhausted_cleanly)
{
	te_prog *p;
	sp_space *s;
	CHECK_EQ_INT(te_task_parse("dense:m=1,n=2,k=1", &p), TK_OK);
	CHECK_EQ_INT(sp_space_create(p, &s), TK_OK);
	sr_sa_opts o;
	sr_sa_opts_default(&o);
	o.iters = 50;
	sr_sa *sa;
	CHECK_EQ_INT(sr_sa_new(s, &o, &sa), TK_OK);
	tk_rng rng;
	tk_rng_seed(&rng, 1, 0);
	sp_config out[1000];
	int n = 0, calls = 0;
	sp_space *saved = space;
	space = s; /* score() reads the global space */
	sp_naive(s, &target);
	CHECK_EQ_INT(sr_sa_find(sa, score, &calls, NULL, &rng, 1000, out, NULL, &n), TK_OK);
	space = saved;
	CHECK(n <= (int)s->size);
	CHECK(n > 0);
	sr_sa_free(sa);
	sp_space_free(s);
	te_prog_free(p);
}

TEST(test_diverse)
{
	/* 4 candidates on a space; the pick must cover new knob values first */
	te_prog *p;
	sp_space *s;
	CHECK_EQ_INT(te_task_parse("dense:m=16,n=16,k=16", &p), TK_OK);
	CHECK_EQ_INT(sp_space_create(p, &s), TK_OK);
	sp_config c[4];
	sp_naive(s, &c[0]);
	c[1] = c[0];              /* identical to 0: covers nothing new */
	c[2] = c[0];
	c[2].v[0] = 1;            /* one new value */
	c[3] = c[0];
	c[3].v[0] = 2;
	c[3].v[1] = 1;            /* two new values */
	int pick[3];
	CHECK_EQ_INT(sr_diverse(s, c, NULL, 4, 3, 1.0, pick), TK_OK);
	CHECK_EQ_INT(pick[0], 0); /* first: everything is new, ties go to the first */
	CHECK_EQ_INT(pick[1], 3);
	CHECK_EQ_INT(pick[2], 2);
	sp_space_free(s);
	te_prog_free(p);
}

TEST(test_teardown)
{
	sp_space_free(space);
	te_prog_free(prog);
}

/* Expected improvement against values computed by hand from the standard
 * normal's tables: Phi(0.4) = 0.6554217, phi(0.4) = 0.3682701. */
TEST(test_ei_closed_form)
{
	CHECK_NEAR(sr_ei(1.2, 0.5, 1.0), 0.2 * 0.6554217 + 0.5 * 0.3682701, 1e-6);
	CHECK_NEAR(sr_ei(0.8, 0.5, 1.0), -0.2 * (1 - 0.6554217) + 0.5 * 0.3682701, 1e-6);
	CHECK_NEAR(sr_ei(1.0, 1.0, 1.0), 0.3989423, 1e-6);   /* sigma phi(0) */
	CHECK_NEAR(sr_ei(1.3, 0.0, 1.0), 0.3, 1e-12);        /* sigma = 0: max(0, mu - best) */
	CHECK_NEAR(sr_ei(0.7, 0.0, 1.0), 0.0, 1e-12);
	CHECK(sr_ei(-5.0, 0.1, 1.0) >= 0);                    /* never negative */
	CHECK(sr_ei(0.9, 0.3, 1.0) > sr_ei(0.9, 0.1, 1.0));   /* uncertainty is worth something */
}

/* A declared vector axis (the block of conv2d_nchwc) leaves one candidate
 * for vec and for its tile, the whole block innermost; the plain conv2d
 * keeps every spatial axis as a vec candidate. */
TEST(test_vector_axis_fixes_the_block)
{
	te_prog *p;
	sp_space *s;
	char buf[96];
	sp_config c;
	CHECK_EQ_INT(te_task_parse("conv2d_nchwc:c=8,h=6,w=6,k=16,cb=4,kb=8,pad=1", &p), TK_OK);
	CHECK_EQ_INT(sp_space_create(p, &s), TK_OK);
	int kv = sp_knob_find(s, "vec"), kt = sp_knob_find(s, "tile_fi");
	CHECK(kv >= 0 && kt >= 0);
	if (kv >= 0 && kt >= 0) {
		CHECK_EQ_INT(s->knob[kv].n, 1);
		CHECK_EQ_INT(s->knob[kt].n, 1);
		c.v[kv] = c.v[kt] = 0;
		CHECK_EQ_STR(sp_value_text(s, kv, &c, buf, sizeof buf), "fi");
		CHECK_EQ_STR(sp_value_text(s, kt, &c, buf, sizeof buf), "1x1x8");
	}
	sp_space_free(s);
	te_prog_free(p);
	kv = sp_knob_find(space, "vec");
	CHECK(kv >= 0 && space->knob[kv].n == 3); /* conv2d: f, y, x (n = 1 is skipped) */
}

/* Whether knob k of the space of task has value text among its candidates. */
static int has_cand(const char *task, const char *knob, const char *text)
{
	te_prog *p;
	sp_space *s;
	char buf[96];
	sp_config c;
	int found = 0;
	if (te_task_parse(task, &p))
		return -1;
	if (sp_space_create(p, &s)) {
		te_prog_free(p);
		return -1;
	}
	int k = sp_knob_find(s, knob);
	memset(&c, 0, sizeof c);
	for (int64_t i = 0; k >= 0 && i < s->knob[k].n && !found; i++) {
		c.v[k] = (int)i;
		found = !strcmp(sp_value_text(s, k, &c, buf, sizeof buf), text);
	}
	sp_space_free(s);
	te_prog_free(p);
	return found;
}

/* Spatial extents without a factor 3 also offer tiles of 3 * 2^k (6 rows
 * of 1024), which divisors and powers of two lack: every one from an
 * extent of 64, below it those whose last tile pads the extent by at most
 * an eighth (56: 3, 6, 12, not 24; 14: 3, not 6); reductions do not. */
TEST(test_tiles_of_three)
{
	CHECK_EQ_INT(has_cand("dense:m=1024,n=1024,k=1024", "tile_i", "11x16x6"), 1);
	CHECK_EQ_INT(has_cand("dense:m=1024,n=1024,k=1024", "tile_j", "11x4x24"), 1);
	CHECK_EQ_INT(has_cand("dense:m=1024,n=1024,k=1024", "tile_j", "6x1x192"), 0);
	CHECK_EQ_INT(has_cand("dense:m=1024,n=1024,k=1024", "tile_r", "342x3"), 0);
	CHECK_EQ_INT(has_cand("dense:m=56,n=1024,k=1024", "tile_i", "10x1x6"), 1);
	CHECK_EQ_INT(has_cand("dense:m=56,n=1024,k=1024", "tile_i", "5x1x12"), 1);
	CHECK_EQ_INT(has_cand("dense:m=56,n=1024,k=1024", "tile_i", "3x1x24"), 0);
	CHECK_EQ_INT(has_cand("dense:m=14,n=1024,k=1024", "tile_i", "5x1x3"), 1);
	CHECK_EQ_INT(has_cand("dense:m=14,n=1024,k=1024", "tile_i", "3x1x6"), 0);
	CHECK_EQ_INT(has_cand("dense:m=768,n=1024,k=1024", "tile_i", "128x1x6"), 1);
}

/* The register tile: the vectorised axis's inner factor in whole vectors
 * times the others'. With a limit, sampling, neighbours and annealing draw
 * only tiles that fit (this space has plenty); an impossible limit still
 * yields configurations; lifting it restores the draws of the unlimited
 * space, so seeded runs without a limit repeat. */
TEST(test_regtile_limit)
{
	te_prog *p;
	sp_space *s;
	sp_config c, d, first[50];
	tk_rng rng;
	CHECK_EQ_INT(te_task_parse("dense:m=64,n=64,k=32", &p), TK_OK);
	CHECK_EQ_INT(sp_space_create(p, &s), TK_OK);
	CHECK_EQ_INT(sp_parse(s, "tile_i=4x2x8;tile_j=2x2x16;tile_r=2x16;order=0;vec=j;unroll=0;"
	                         "unroll_explicit=0;pack_A=0;pack_B=0", &c), TK_OK);
	CHECK_EQ_INT((int)sp_regtile(s, &c, 8), 16);  /* 8 rows x 2 vectors */
	CHECK_EQ_INT((int)sp_regtile(s, &c, 16), 8);
	CHECK_EQ_INT((int)sp_regtile(s, &c, 32), 8);  /* a part vector is a register */
	CHECK_EQ_INT(sp_parse(s, "tile_i=4x2x8;tile_j=2x2x16;tile_r=2x16;order=0;vec=i;unroll=0;"
	                         "unroll_explicit=0;pack_A=0;pack_B=0", &c), TK_OK);
	CHECK_EQ_INT((int)sp_regtile(s, &c, 8), 16);  /* 1 vector of i x 16 columns */

	tk_rng_seed(&rng, 5, 0);
	for (int i = 0; i < 50; i++)
		sp_sample(s, &rng, &first[i]);
	int over = 0, big = 0, moved = 0;
	for (int i = 0; i < 50; i++)
		big += sp_regtile(s, &first[i], 8) > 6;
	CHECK(big > 10); /* without the limit, many tiles are larger */

	sp_limit_regtile(s, 8, 6);
	for (int i = 0; i < 500; i++) {
		sp_sample(s, &rng, &c);
		over += sp_regtile(s, &c, 8) > 6;
		sp_neighbor(s, &rng, &c, &d);
		over += sp_regtile(s, &d, 8) > 6;
		moved += sp_index(s, &c) != sp_index(s, &d);
	}
	CHECK_EQ_INT(over, 0);
	CHECK(moved > 400);
	sr_sa_opts o;
	sr_sa_opts_default(&o);
	o.chains = 16;
	o.iters = 50;
	sr_sa *sa;
	sp_config out[32];
	float sc[32];
	int n = 0, calls = 0;
	sp_space *shared = space;
	space = s; /* score() reads the knobs of the shared space */
	sp_sample(s, &rng, &target);
	CHECK_EQ_INT(sr_sa_new(s, &o, &sa), TK_OK);
	CHECK_EQ_INT(sr_sa_find(sa, score, &calls, NULL, &rng, 32, out, sc, &n), TK_OK);
	space = shared;
	CHECK_EQ_INT(n, 32);
	for (int i = 0; i < n; i++)
		over += sp_regtile(s, &out[i], 8) > 6;
	CHECK_EQ_INT(over, 0);
	sr_sa_free(sa);

	sp_limit_regtile(s, 8, 1); /* fits nothing with more than one vector */
	sp_sample(s, &rng, &c);
	CHECK(sp_index(s, &c) < s->size);

	sp_limit_regtile(s, 0, 0);
	tk_rng_seed(&rng, 5, 0);
	int same = 0;
	for (int i = 0; i < 50; i++) {
		sp_sample(s, &rng, &c);
		same += sp_index(s, &c) == sp_index(s, &first[i]);
	}
	CHECK_EQ_INT(same, 50);
	sp_space_free(s);
	te_prog_free(p);
}


/* ---- the search table ------------------------------------------------------------- */

TEST(test_table_names_and_flags)
{
	const sr_kind *k = NULL;
	char names[64];
	CHECK_EQ_INT(sr_lookup("csa", &k), TK_OK);
	CHECK(k && (k->flags & SR_NEEDS_UNCERTAINTY) && (k->flags & SR_CONTEXT_EPSILON) && k->plan &&
	      !k->next);
	CHECK_EQ_INT(sr_lookup("sa", &k), TK_OK);
	CHECK(k && k->plan && k->next && k->learn && !(k->flags & SR_NEEDS_MODEL));
	CHECK_EQ_INT(sr_lookup("random", &k), TK_OK);
	CHECK(k && k->next && !k->plan);
	CHECK_EQ_INT(sr_lookup("bo", &k), TK_OK);
	CHECK(k && (k->flags & SR_NEEDS_UNCERTAINTY) && (k->flags & SR_NEEDS_MODEL) && k->plan &&
	      !k->next);
	CHECK_EQ_INT(sr_lookup("tpe", &k), TK_EINVAL);
	CHECK(k == NULL && strstr(tk_errmsg(), "unknown search 'tpe' (sa, csa, bo, random, grid)"));
	sr_names(names, sizeof names);
	CHECK_EQ_STR(names, "sa, csa, bo, random, grid");
	for (int i = 0; i < sr_nkinds; i++)
		CHECK(sr_find(sr_kinds[i]->name) == sr_kinds[i] && sr_kinds[i]->summary &&
		      (sr_kinds[i]->next || sr_kinds[i]->plan) && sr_kinds[i]->free_state);
}

/* Grid walks the space in index order past visited points; random never
 * repeats and stops when the space is exhausted; both mark what they
 * propose as visited. */
TEST(test_grid_and_random_propose)
{
	te_prog *p;
	sp_space *s;
	CHECK_EQ_INT(te_task_parse("dense:m=4,n=4,k=4", &p), TK_OK);
	CHECK_EQ_INT(sp_space_create(p, &s), TK_OK);
	sr_set seen;
	tk_rng rng;
	sr_set_init(&seen);
	tk_rng_seed(&rng, 3, 0);
	sr_env e = { s, &seen, &rng, 8, 1, 0, NULL, NULL, 0 };
	const sr_kind *grid = sr_find("grid"), *rnd = sr_find("random");
	void *st = NULL;
	sp_config out[8];
	int n = 0;
	CHECK_EQ_INT(sr_set_add(&seen, 1), TK_OK);
	CHECK_EQ_INT(grid->next(&st, &e, 3, out, &n), TK_OK);
	CHECK(n == 3 && sp_index(s, &out[0]) == 0 && sp_index(s, &out[1]) == 2 &&
	      sp_index(s, &out[2]) == 3);
	CHECK_EQ_INT(grid->next(&st, &e, 1, out, &n), TK_OK);
	CHECK(n == 1 && sp_index(s, &out[0]) == 4 && sr_set_has(&seen, 4));
	grid->free_state(st);

	int bad = 0;
	uint64_t total = 5;
	void *rs = NULL;
	do {
		CHECK_EQ_INT(rnd->next(&rs, &e, 8, out, &n), TK_OK);
		total += (uint64_t)n;
		for (int i = 0; i < n; i++)
			bad += !sr_set_has(&seen, sp_index(s, &out[i]));
	} while (n > 0 && total < s->size + 10);
	CHECK_EQ_INT(bad, 0);
	CHECK((uint64_t)seen.n == s->size && total == s->size);
	rnd->free_state(rs);
	sr_set_free(&seen);
	sp_space_free(s);
	te_prog_free(p);
}

/* Model-free annealing: one proposal per chain, neighbours of the chains'
 * points once they have one, the better step always taken. */
TEST(test_anneal_without_a_model)
{
	sr_set seen;
	tk_rng rng;
	sr_set_init(&seen);
	tk_rng_seed(&rng, 4, 0);
	sr_env e = { space, &seen, &rng, 4, 1, 0, NULL, NULL, 0 };
	const sr_kind *sa = sr_find("sa");
	void *st = NULL;
	sp_config a[8], b[8];
	int n = 0, m = 0;
	CHECK_EQ_INT(sa->next(&st, &e, 8, a, &n), TK_OK);
	CHECK_EQ_INT(n, 4);                  /* at most one per chain */
	double thr[4] = { 1, 2, 3, 4 };
	e.best = 4;
	sa->learn(st, &e, a, thr, n);
	CHECK_EQ_INT(sa->next(&st, &e, 4, b, &m), TK_OK);
	CHECK_EQ_INT(m, 4);
	int steps = 0;
	for (int i = 0; i < m; i++) {
		int diff = 0;
		for (int k = 0; k < space->nknob; k++)
			diff += a[i].v[k] != b[i].v[k];
		steps += diff == 1;                  /* a neighbour: one knob changed */
		CHECK(sr_set_has(&seen, sp_index(space, &b[i])));
	}
	CHECK_EQ_INT(steps, m);
	sa->free_state(st);
	sr_set_free(&seen);
}

/* Local penalisation: four near-duplicates of high acquisition (one knob
 * apart) and four distinct points of half of it; a batch of four takes the
 * best, then the distinct points over its neighbours (a neighbour's
 * acquisition is cut to 22% of itself). */
TEST(test_local_penalisation)
{
	sp_config cand[8];
	float acq[8];
	int pick[4];
	tk_rng rng;
	tk_rng_seed(&rng, 21, 0);
	sp_sample(space, &rng, &cand[0]);
	for (int i = 1; i < 4; i++) {
		cand[i] = cand[0];
		int k = i; /* knob i changed */
		cand[i].v[k] = (cand[0].v[k] + 1) % space->knob[k].n;
	}
	for (int i = 4; i < 8; i++) /* random points: several knobs from each other */
		sp_sample(space, &rng, &cand[i]);
	for (int i = 0; i < 8; i++)
		acq[i] = i < 4 ? 1.0f - 0.01f * i : 0.5f - 0.01f * (i - 4);
	CHECK_EQ_INT(sr_local_penalise(space, cand, acq, 8, 4, pick), TK_OK);
	CHECK_EQ_INT(pick[0], 0);
	int far = 0;
	for (int j = 1; j < 4; j++)
		far += pick[j] >= 4; /* not a neighbour of the first */
	CHECK(pick[1] >= 4);
	CHECK(far >= 2);
	/* with no penalty to pay (all far apart) the order is the acquisition's */
	CHECK_EQ_INT(sr_local_penalise(space, cand + 4, acq + 4, 4, 4, pick), TK_OK);
	CHECK(pick[0] == 0);
}

/* bo's plan on a known surrogate: the mean peaks at a target; the batch
 * starts at the UCB's maximum, is distinct and unvisited, and the deviation
 * moves the choice when kappa weighs it. */
static sp_config peak;

static int surrogate(void *ctx, const sp_config *c, int n, float *mu, float *sd)
{
	const int *far = ctx;
	for (int i = 0; i < n; i++) {
		int d = 0;
		for (int k = 0; k < space->nknob; k++)
			d += abs(c[i].v[k] - peak.v[k]);
		mu[i] = -(float)d;
		sd[i] = far && d >= *far ? 100.0f : 0.0f;
	}
	return TK_OK;
}

TEST(test_bo_plan)
{
	sr_set seen;
	tk_rng rng;
	sr_set_init(&seen);
	tk_rng_seed(&rng, 8, 0);
	sp_sample(space, &rng, &peak);
	sr_env e = { space, &seen, &rng, 8, 1, 0, surrogate, NULL, 2.0 };
	const sr_kind *bo = sr_find("bo");
	sr_sa_opts o;
	sr_sa_opts_default(&o);
	void *st = NULL;
	sp_config out[8];
	float sc[8];
	int n = 0;
	CHECK_EQ_INT(bo->plan(&st, &e, &o, NULL, NULL, 8, out, sc, &n), TK_OK);
	CHECK_EQ_INT(n, 8);
	CHECK_EQ_INT((long long)sp_index(space, &out[0]), (long long)sp_index(space, &peak));
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			CHECK(sp_index(space, &out[i]) != sp_index(space, &out[j]));
	/* visited points are not proposed again */
	sr_set_add(&seen, sp_index(space, &peak));
	CHECK_EQ_INT(bo->plan(&st, &e, &o, NULL, NULL, 8, out, sc, &n), TK_OK);
	for (int i = 0; i < n; i++)
		CHECK(sp_index(space, &out[i]) != sp_index(space, &peak));
	bo->free_state(st);
	/* a large deviation far from the peak: the UCB prefers exploring there */
	int far = 6;
	e.dist_ctx = &far;
	st = NULL;
	CHECK_EQ_INT(bo->plan(&st, &e, &o, NULL, NULL, 8, out, sc, &n), TK_OK);
	CHECK(n > 0 && sc[0] > 100);
	bo->free_state(st);
	/* without a deviation to read: refused */
	e.dist = NULL;
	st = NULL;
	CHECK_EQ_INT(bo->plan(&st, &e, &o, NULL, NULL, 8, out, sc, &n), TK_EINVAL);
	bo->free_state(st);
	sr_set_free(&seen);
}

UNIT_MAIN(test_setup, test_local_penalisation, test_bo_plan, test_table_names_and_flags, test_grid_and_random_propose,
          test_anneal_without_a_model, test_ei_closed_form, test_set, test_sa_respects_space_and_exclusions, test_sa_finds_the_maximum,
          test_sa_keeps_to_its_score_budget,
          test_sa_holds_a_fixed_knob,
          test_diverse, test_sa_small_space_is_exhausted_cleanly,
          test_vector_axis_fixes_the_block, test_tiles_of_three, test_regtile_limit, test_teardown)
