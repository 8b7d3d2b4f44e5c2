/*
 * xgb: gradient-boosted trees through the libxgboost C API, with AutoTVM's
 * defaults. Rows are feature vectors; labels are normalised throughputs
 * (0 for invalid configurations); for ranking objectives rows of the same
 * group (task) must be contiguous and group[] gives each group's size.
 */
#ifndef TK_XGB_H
#define TK_XGB_H

#include <stddef.h>
#include <stdint.h>

typedef struct xgb_params {
	const char *objective; /* "rank:pairwise" (AutoTVM) or "reg:squarederror" */
	int max_depth;         /* 3 */
	double eta;            /* 0.3 */
	double gamma;          /* 1e-4 */
	double min_child_weight; /* 1 */
	double subsample;      /* 1 */
	double lambda;         /* 1 */
	double alpha;          /* 0 */
	int rounds;            /* boosting rounds, 8000 with early stopping in AutoTVM */
	int early_stop;        /* stop after this many rounds without improvement on
	                          the validation set (0: never); needs a validation set */
	int nthread;           /* 0: xgboost's default */
	uint64_t seed;
	int num_parallel_tree; /* > 1 with subsample < 1: random-forest mode */
	const char *tree_method; /* NULL: xgboost's "auto" (exact greedy on small
	                            data, as AutoTVM); "hist" is ~5x faster */
} xgb_params;

/* AutoTVM's defaults for objective ("rank:pairwise" if NULL). */
void xgb_params_default(xgb_params *p, const char *objective);
/* The defaults with a cost model's settings (model/cost.h): rounds 0 means
 * 8000 cut by early stopping, or XGB_ROUNDS_NOVALID without it. */
void xgb_params_set(xgb_params *p, const char *objective, uint64_t seed, int nthread,
                    const char *tree_method, int rounds, int early_stop);

typedef struct xgb_data {
	int n, d;              /* rows, features per row */
	const float *x;        /* n*d, row-major */
	const float *y;        /* n labels */
	int ngroup;            /* 0 if no groups */
	const unsigned *group; /* ngroup sizes summing to n */
	const float *margin;   /* n base margins the trees add to, or NULL
	                          (a base model's output: transfer learning) */
} xgb_data;

typedef struct xgb_model xgb_model;

/* Rounds trained when early_stop > 0 but there is no validation set to
 * stop on: min(rounds, XGB_ROUNDS_NOVALID). */
#define XGB_ROUNDS_NOVALID 200

/* Train on train (valid may be NULL). With valid and early_stop > 0, the
 * validation set is scored after every round (NDCG with linear gains, the
 * labels, for "rank:" objectives; RMSE otherwise) and only the rounds up to
 * the best score are kept. *out is freed with xgb_free().
 * TK_EINVAL for inconsistent data, TK_EIO with XGBGetLastError() text when
 * libxgboost fails. */
int xgb_train(const xgb_params *p, const xgb_data *train, const xgb_data *valid,
              xgb_model **out);
/* Add rounds boosting rounds to m trained on train (rows of m's feature
 * length) with p's parameters (p->rounds and early_stop are not used): the
 * new trees fit what m's predictions so far leave, XGBoost's training
 * continuation, so m becomes a warm-started model of train. TK_EINVAL for
 * inconsistent data, TK_EIO when libxgboost fails; on error m may hold
 * some of the new rounds. */
int xgb_continue(xgb_model *m, const xgb_params *p, const xgb_data *train, int rounds);
/* Predict n rows of d features (d must be the training set's) into out[n],
 * using every kept round. */
int xgb_predict(xgb_model *m, const float *x, int n, int d, float *out);
/* The same on top of n base margins (NULL: none), as the model was trained
 * with xgb_data.margin. */
int xgb_predict_margin(xgb_model *m, const float *x, int n, int d, const float *margin,
                       float *out);
/* The same for nm models of one feature length at once, model k's
 * predictions into out[k*n .. k*n+n). */
int xgb_predict_many(xgb_model *const *m, int nm, const float *x, int n, int d,
                     const float *margin, float *out);
/* Serialise (xgboost's own format, UBJSON) into a malloc'd buffer. */
int xgb_save(xgb_model *m, void **buf, size_t *len);
/* Load what xgb_save() wrote; TK_ECORRUPT if libxgboost rejects it. */
int xgb_load(const void *buf, size_t len, xgb_model **out);
/* XGBoost's total gain of each feature (the gain of every split on it,
 * summed over the trees): *gain a malloc'd array of *d values (the
 * booster's feature length; 0 for a feature never split on). TK_ENOMEM,
 * TK_EIO when libxgboost fails. */
int xgb_importance(xgb_model *m, int *d, double **gain);
/* Boosting rounds kept (after early stopping). */
int xgb_rounds(const xgb_model *m);
void xgb_free(xgb_model *m);

#endif
