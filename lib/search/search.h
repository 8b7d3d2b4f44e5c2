/*
 * search: exploring a configuration space with a score (usually a cost
 * model's prediction).
 *
 *   sr_set      a set of configuration indices (what has been measured);
 *   sr_sa       AutoTVM's simulated-annealing optimizer: parallel chains of
 *               random walks (one knob changed per step), Metropolis
 *               acceptance under a temperature falling from t_hi to t_lo,
 *               keeping the best `num` distinct unvisited points seen, early
 *               stop when the best set has not changed for early_stop steps,
 *               chains persisting between calls; optionally up to
 *               SR_MAXFIX knobs held at one value each (the tuner covering
 *               each loop order);
 *   sr_diverse  AutoTVM's submodular pick: from ranked candidates choose k
 *               that cover the most distinct knob values (diversity-aware
 *               selection).
 * Random and grid search need nothing but sr_set and the space.
 *
 * The searches the tuner offers are rows of sr_kinds[] (strategy.c): a
 * name, a summary, what they need (a model, a model with uncertainty) and
 * the operations the tuner calls: next (propose configurations without a
 * model), learn (from their measurements) and plan (the best-scored
 * configurations on a model). The tuner never names a search.
 */
#ifndef TK_SEARCH_H
#define TK_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "space/space.h"
#include "util/util.h"

/* ---- index sets ------------------------------------------------------------ */

typedef struct sr_set {
	uint64_t *slot;   /* open addressing; value+1 stored, 0 = empty */
	int64_t cap, n;
} sr_set;

void sr_set_init(sr_set *s);
int sr_set_add(sr_set *s, uint64_t v);         /* TK_OK or TK_ENOMEM */
int sr_set_has(const sr_set *s, uint64_t v);
void sr_set_free(sr_set *s);

/* ---- scores ------------------------------------------------------------------ */

/* Score n configurations (higher is better) into scores[]. Returns TK_OK or
 * an error, which aborts the search. */
typedef int (*sr_score_fn)(void *ctx, const sp_config *c, int n, float *scores);

/* Expected positive improvement E[max(f - best, 0)] of f ~ N(mu, sigma^2)
 * (AdaTune, eq. 1): (mu - best) Phi(z) + sigma phi(z), z = (mu - best) /
 * sigma; max(0, mu - best) when sigma is 0. */
double sr_ei(double mu, double sigma, double best);

/* ---- simulated annealing ------------------------------------------------------- */

#define SR_MAXFIX 4

typedef struct sr_sa_opts {
	int chains;       /* parallel_size: 128 */
	int iters;        /* n_iter: 500 */
	int early_stop;   /* 50 */
	double t_hi, t_lo;/* temperature from 1 to 0 */
	int persistent;   /* keep the chains between calls: 1 */
	int max_scores;   /* 0: no limit; else the steps of one call are cut
	                     to max_scores / chains - 1, and the temperature
	                     falls over those steps */
	int nfix;         /* 0 (default); else every point visited has */
	int fix_knob[SR_MAXFIX];  /* candidate fix_value[i] of knob fix_knob[i] */
	int fix_value[SR_MAXFIX];
} sr_sa_opts;

void sr_sa_opts_default(sr_sa_opts *o);

typedef struct sr_sa sr_sa;

/* sp must outlive the optimizer. */
int sr_sa_new(const sp_space *sp, const sr_sa_opts *o, sr_sa **out);
void sr_sa_free(sr_sa *sa);

/* The num highest-scored distinct configurations found, excluding those in
 * exclude (may be NULL), best first, into out[0..*nout) with their scores
 * (scores may be NULL). *nout < num only when the space is nearly
 * exhausted. */
int sr_sa_find(sr_sa *sa, sr_score_fn score, void *ctx, const sr_set *exclude, tk_rng *rng,
               int num, sp_config *out, float *scores, int *nout);

/* Steps the last sr_sa_find took (for tests and logs). */
int sr_sa_steps(const sr_sa *sa);

/* ---- diversity ------------------------------------------------------------------- */

/* Pick k of n candidates greedily maximising score + knob_weight * (number
 * of knob values not yet covered by the picked ones). pick[] receives k
 * indices into cand (k <= n). */
int sr_diverse(const sp_space *sp, const sp_config *cand, const float *score, int n, int k,
               double knob_weight, int *pick);

/* Batch selection by local penalisation (bo.c): pick k of the n
 * candidates greedily, each time the one whose acquisition acq[] (shifted
 * so that the worst weighs half the best) times 1 - exp(-(h/2)^2) for every
 * one picked before, h
 * the knobs on which the two differ, is highest. pick[] receives k indices
 * into cand (k <= n). TK_ENOMEM or TK_OK. */
int sr_local_penalise(const sp_space *sp, const sp_config *cand, const float *acq, int n, int k,
                      int *pick);

/* ---- the searches ---------------------------------------------------------- */

/* A uniformly random configuration not in visited into *c; 0 if none was
 * found (the space is exhausted). */
int sr_random_unvisited(const sp_space *sp, const sr_set *visited, tk_rng *rng, sp_config *c);

enum {
	SR_NEEDS_MODEL = 1 << 0,       /* refuses the model-free "none" */
	SR_NEEDS_UNCERTAINTY = 1 << 1, /* needs a model with a deviation */
	SR_CONTEXT_EPSILON = 1 << 2,   /* AdaTune: the random share of each plan is
	                                  the model's mean deviation after each fit */
};

/* The mean and deviation of the model's prediction for n configurations
 * (a model with uncertainty), into mu[n] and sd[n]. */
typedef int (*sr_dist_fn)(void *ctx, const sp_config *c, int n, float *mu, float *sd);

/* What a search sees of the task it proposes for. */
typedef struct sr_env {
	const sp_space *space;
	sr_set *visited;       /* measured or proposed; proposals are added */
	tk_rng *rng;
	int chains;            /* model-free annealing: chains (the batch size) */
	double temp;           /* model-free annealing: temperature in (0, 1] */
	double best;           /* best throughput measured so far (0: none) */
	sr_dist_fn dist;       /* the model's mean and deviation, NULL for a
	                          model without uncertainty */
	void *dist_ctx;
	double kappa;          /* bo: the deviation's weight in the UCB */
} sr_env;

typedef struct sr_kind {
	const char *name;
	const char *summary;
	unsigned flags;        /* SR_* */
	/* Without a model: up to want configurations into out[0..*n), each
	 * added to e->visited; *n == 0 when the space is exhausted. *state
	 * (NULL at first) is the search's own, freed with free_state. NULL
	 * for searches that need a model. */
	int (*next)(void **state, const sr_env *e, int want, sp_config *out, int *n);
	/* Learn the throughputs thr[n] (0: invalid) of the last proposals
	 * c[n]; may be NULL. */
	void (*learn)(void *state, const sr_env *e, const sp_config *c, const double *thr, int n);
	/* On a model: the num best-scored configurations not in e->visited,
	 * best first, as sr_sa_find. NULL: the search never uses a model. */
	int (*plan)(void **state, const sr_env *e, const sr_sa_opts *o, sr_score_fn score, void *ctx,
	            int num, sp_config *out, float *scores, int *nout);
	void (*free_state)(void *state);
} sr_kind;

extern const sr_kind *const sr_kinds[];
extern const int sr_nkinds;

/* The search named name, or NULL. */
const sr_kind *sr_find(const char *name);
/* The same; TK_EINVAL with "unknown search 'x' (a, b)" if there is none. */
int sr_lookup(const char *name, const sr_kind **out);
/* Names of the searches as "a, b, c" into buf (always terminated). */
void sr_names(char *buf, size_t size);

#endif
