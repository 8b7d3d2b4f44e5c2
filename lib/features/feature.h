/*
 * feature: fixed-length feature vectors of configurations, what cost models
 * learn from.
 *
 *   knob     the configuration itself: log2 of each split factor, one-hot
 *            of categorical knobs, 0/1 flags. Works for every space,
 *            including imported ones (numeric values as log2(1+|v|),
 *            non-numeric ones one-hot).
 *   itervar  AutoTVM's loop-context features from walking the loop-nest IR
 *            of the main computation: per loop, log-scaled length, nest
 *            level, top-down and bottom-up products, annotation one-hot,
 *            float add/mul counts, and per buffer touched inside it the
 *            stride, count and reuse (all log2(x+1)). Needs a template task.
 *   curve    AutoTVM's relation curves (touch count and reuse of each buffer
 *            against the loop level) sampled to a fixed length. Needs a
 *            template task.
 *   tlp      TLP's features of the schedule primitive sequence itself: one
 *            row of FEAT_TLP_E values per primitive (kind one-hot, the
 *            loops and stage it names as tokens, its numbers), FEAT_TLP_L
 *            rows. Never lowers the configuration. Needs a template task.
 *            The exact row layout is at the top of tlp.c.
 *
 * The length of a kind is fixed for a space (records of one task line up),
 * and every kind has a version stored beside the values so changing a
 * definition never mixes old and new vectors.
 */
#ifndef TK_FEATURE_H
#define TK_FEATURE_H

#include "space/space.h"

enum { FEAT_KNOB, FEAT_ITERVAR, FEAT_CURVE, FEAT_TLP, FEAT_NKIND };

/* The shape of tlp vectors, the same for every task: an L x E matrix
 * flattened row-major (row i at out[i*E .. i*E+E)), row i the i-th
 * primitive of the configuration's schedule. Rows past the sequence are all
 * zeros and every primitive's row is non-zero (its kind one-hot), so the
 * sequence length is the number of leading non-zero rows; an invalid
 * configuration is all zeros (length 0). No template makes more than L
 * primitives; a longer sequence would keep its last L (the main stage's
 * primitives come last). Models that read tlp vectors (lib/model/tlp.c)
 * rely on this contract. */
#define FEAT_TLP_L 32
#define FEAT_TLP_E 25

const char *feat_kind_name(int kind);   /* "knob", "itervar", "curve", "tlp" */
int feat_kind_parse(const char *name);  /* -1 if unknown */
int feat_version(int kind);             /* bumped whenever a definition changes */
/* Floats per position of a kind whose vectors are sequences (tlp:
 * FEAT_TLP_E), 0 for kinds whose vector is one position. Sequence models
 * take it as cm_params.seq_e. */
int feat_seq_width(int kind);

/* Length of kind's vectors for space sp. TK_EUNSUPP (message set) when the
 * kind needs a program and sp has none (imported spaces). */
int feat_length(int kind, const sp_space *sp, int *n);

/* Features of configuration c into out[0..feat_length). Returns TK_OK; a
 * configuration that cannot be lowered (an invalid configuration; for tlp,
 * which never lowers, one whose schedule cannot be built) gets all zeros
 * and *valid = 0 (valid may be NULL). TK_ENOMEM on allocation
 * failure, TK_EUNSUPP as for feat_length. */
int feat_extract(int kind, const sp_space *sp, const sp_config *c, float *out, int *valid);

#endif
