/*
 * extract: the feature vectors of stored configurations, computed and
 * stored a batch per transaction. The worker behind `tunekit
 * extract-features` and behind `tunekit transfer --measure`, which must
 * give the configurations it has just measured features before it can
 * adapt a model on them.
 *
 * Each task is parsed once (its template space, or the knob space of an
 * imported task); a task whose configurations cannot have this kind of
 * feature (an imported task and a kind other than knob, a task this
 * tunekit cannot parse) is skipped with its reason, as is a configuration
 * that does not parse. Nothing is skipped in silence: tr_extract_skips
 * tells what and why.
 */
#ifndef TK_TRAIN_EXTRACT_H
#define TK_TRAIN_EXTRACT_H

#include <signal.h>
#include <stdint.h>

#include "measure/measure.h"
#include "store/store.h"

typedef struct tr_extract tr_extract;

/* What an extractor has done so far. */
typedef struct tr_extract_stats {
	int64_t scope;       /* configurations selected (with features or not) */
	int64_t nnew;        /* feature vectors computed and stored */
	int64_t ninvalid;    /* ... of configurations the space marks invalid */
	int64_t nskip_cfg;   /* configurations that did not parse */
	int64_t nskip_task;  /* configurations of skipped tasks */
	double busy;         /* seconds spent extracting and storing */
} tr_extract_stats;

/* Called after each committed batch with the configurations handled so
 * far and the number to handle (0 if unknown). */
typedef void tr_extract_progress(void *ctx, int64_t done, int64_t total);

/* A new extractor of feature kind (FEAT_*) into st, batch configurations
 * per transaction. Tasks are opened for target tg (NULL: this CPU's
 * template spaces): on a vta-sim target a task's configurations are those
 * of the accelerator. Hidden features (FEAT_HIDDEN) compile each kernel
 * for tg with mo's compilers, limits and cache (ms_hidden); seed is that
 * of the tasks' inputs. tg and mo must outlive x. TK_EINVAL for an
 * unknown kind, a batch below 1 or hidden features without tg and mo,
 * TK_ENOMEM. */
int tr_extract_new(tk_store *st, int kind, int batch, const tk_target *tg, const ms_opts *mo,
                   uint64_t seed, tr_extract **out);
void tr_extract_free(tr_extract *x); /* NULL is allowed */

/* Extract the features of the configurations that lack them: with nid > 0
 * those of the measurements ids[0..nid), else every configuration in the
 * store (with hardware != 0, those measured on that hardware). Stops after
 * the batch in which *stop became non-zero (stop may be NULL) with
 * TK_EINTR; every committed batch stays. On another error the current
 * batch is rolled back and the message kept. */
int tr_extract_run(tr_extract *x, int64_t hardware, const int64_t *ids, int nid,
                   volatile sig_atomic_t *stop, tr_extract_progress *progress, void *pctx);

/* Counts so far. */
void tr_extract_stats_get(const tr_extract *x, tr_extract_stats *s);

/* The i-th skipped task (0-based, among those with configurations
 * skipped) with its key, configurations skipped and reason: 1, or 0 when
 * there is no i-th. The strings live as long as x. */
int tr_extract_skips(const tr_extract *x, int i, const char **task, int64_t *n, const char **why);
/* Why the first configuration that did not parse did not, or NULL. */
const char *tr_extract_cfg_why(const tr_extract *x);

#endif
