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
 */
#ifndef TK_SEARCH_H
#define TK_SEARCH_H

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

#endif
