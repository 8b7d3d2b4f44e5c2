/*
 * metrics: how good a cost model's predictions are, in the measures the
 * seed papers use. Rows belong to tasks; y are measured normalised
 * throughputs (1 = the best of the task, 0 = invalid), lat the measured
 * latencies (<= 0 for invalid rows), p the predictions.
 */
#ifndef TK_METRICS_H
#define TK_METRICS_H

#include <stddef.h>
#include <stdint.h>

typedef struct cm_metrics {
	int n, ntask;
	double rmse, mse;
	double mse_d;     /* MetaTune MSE(D): MSE on the rows whose measured
	                     throughput is in the top 25% of their task */
	double top1, top5;/* TLP top-k score: per task, best measured latency over
	                     the best latency among the model's k highest-scored
	                     rows; averaged over tasks with task weights */
	double spearman;  /* rank correlation of p and y, averaged over tasks
	                     with at least 3 rows */
} cm_metrics;

/* Compute metrics over n rows. task[] gives each row's task (any integer
 * ids, rows in any order); weight (may be NULL: all 1) is indexed like rows
 * and taken from the first row of each task. TK_ENOMEM or TK_OK. */
int cm_metrics_compute(int n, const int64_t *task, const float *y, const double *lat,
                       const float *p, const double *weight, cm_metrics *out);

/* Mean NDCG with linear gains (the label) over the groups of n rows
 * (sizes group[ngroup]; ngroup 0: one group) that have a positive label,
 * rows ranked by p descending (equal p: the lowest label first); 0 when no
 * group has one. Larger is better: early stopping's validation score.
 * work: cm_ndcg_work(n) bytes. */
size_t cm_ndcg_work(int n);
double cm_ndcg(int n, const float *y, const float *p, int ngroup, const unsigned *group,
               void *work);

/* How good a validity classifier (ML2Tuner's model V) is: rows with
 * y > 0 are valid (positive), p is the predicted probability of valid,
 * a row predicted valid when p >= 0.5. A measure with nothing to count
 * is NaN (precision with no row predicted valid, recall with no valid
 * row, auc without both classes). */
typedef struct cm_class_metrics {
	int n, valid;     /* rows, valid rows */
	double accuracy;  /* share of rows classified right */
	double precision; /* of the rows predicted valid, the share valid */
	double recall;    /* of the valid rows, the share predicted valid */
	double auc;       /* area under the ROC curve: the chance that a valid
	                     row scores above an invalid one (ties count 1/2) */
} cm_class_metrics;

/* Compute them over n rows. TK_ENOMEM or TK_OK. */
int cm_metrics_classify(int n, const float *y, const float *p, cm_class_metrics *out);

#endif
