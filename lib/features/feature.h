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
 *   graph    MetaTune's graph of the main loop nest (root, for-loop and
 *            iteration-variable nodes, their edges) placed in one
 *            super-graph shared by every operator: node features and an
 *            edge list, FEAT_GRAPH_LEN values. Needs a template task whose
 *            operator the super-graph covers. The layout is at the top of
 *            graph.c.
 *
 *   hidden   ML2Tuner's hidden features: what compiling the configuration
 *            decided. On the CPU, tile and tail sizes, padded extents and
 *            inner trip counts of the lowered nest, and the compiler's own
 *            facts (stack frame, code size, loops vectorised), layout at
 *            the top of hidden.c; on a simulated accelerator the device
 *            compiler's statistics (lib/vta). They need a compile, so
 *            feat_extract refuses them: lib/measure (ms_hidden) computes
 *            them, with feat_hidden_cpu below for the CPU.
 *
 * The length of a kind is fixed for a space (records of one task line up),
 * and every kind has a version stored beside the values so changing a
 * definition never mixes old and new vectors.
 */
#ifndef TK_FEATURE_H
#define TK_FEATURE_H

#include <stddef.h>
#include <stdint.h>

#include "space/space.h"

enum { FEAT_KNOB, FEAT_ITERVAR, FEAT_CURVE, FEAT_TLP, FEAT_GRAPH, FEAT_HIDDEN, FEAT_NKIND };

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

/* The shape of graph vectors, the same for every task: FEAT_GRAPH_N nodes
 * of FEAT_GRAPH_F features (node i at out[i*F .. i*F+F)), then
 * FEAT_GRAPH_EMAX edges as (source, destination) node numbers stored as
 * floats, unused pairs (0, 0). Models that read graph vectors
 * (lib/model/meta.c) rely on this contract; graph.c has the meaning of
 * every node and feature. */
#define FEAT_GRAPH_LOOPS 33   /* loop slots of the super-graph */
#define FEAT_GRAPH_N (1 + 2 * FEAT_GRAPH_LOOPS)
#define FEAT_GRAPH_F 30
#define FEAT_GRAPH_EMAX 100
#define FEAT_GRAPH_LEN (FEAT_GRAPH_N * FEAT_GRAPH_F + 2 * FEAT_GRAPH_EMAX)
/* An identifier of the super-graph template (its axes, slots, operator
 * mappings and shape): a model trained on graph vectors keeps it and
 * refuses vectors of another template. */
uint64_t feat_graph_template(void);

const char *feat_kind_name(int kind);   /* "knob", "itervar", "curve", "tlp", "graph", "hidden" */
int feat_kind_parse(const char *name);  /* -1 if unknown */
int feat_version(int kind);             /* bumped whenever a definition changes */
/* Floats per position of a kind whose vectors are sequences (tlp:
 * FEAT_TLP_E), 0 for kinds whose vector is one position. Sequence models
 * take it as cm_params.seq_e. */
int feat_seq_width(int kind);

/* Length of kind's vectors for space sp. TK_EUNSUPP (message set) when the
 * kind needs a program and sp has none (imported spaces); TK_EINVAL
 * (message set) for graph features of a space whose loop nests do not fit
 * the super-graph. */
int feat_length(int kind, const sp_space *sp, int *n);

/* Features of configuration c into out[0..feat_length). Returns TK_OK; a
 * configuration that cannot be lowered (an invalid configuration; for tlp,
 * which never lowers, one whose schedule cannot be built) gets all zeros
 * and *valid = 0 (valid may be NULL). TK_ENOMEM on allocation
 * failure, TK_EUNSUPP as for feat_length. */
int feat_extract(int kind, const sp_space *sp, const sp_config *c, float *out, int *valid);

/* ---- hidden features of the CPU (hidden.c) ---- */

#define FEAT_HIDDEN_TILE 5    /* values per split knob */
#define FEAT_HIDDEN_NEST 5    /* values of the lowered nest */
#define FEAT_HIDDEN_CC 6      /* compiler facts */

/* What compiling a kernel reported (lib/measure fills it). */
typedef struct feat_cc {
	double stack_bytes;   /* largest stack frame of a function (-fstack-usage) */
	int dynamic_stack;    /* functions whose frame is dynamic */
	double text_bytes;    /* executable sections of the shared object */
	double object_bytes;  /* the shared object, as measurement loads it */
	int vectorized;       /* loops the compiler vectorised (-fopt-info-vec) */
	int missed;           /* loops it reported it could not vectorise */
} feat_cc;

/* Length of hidden vectors of a template space sp (the same for every
 * configuration of it). */
int feat_hidden_length(const sp_space *sp);
/* Hidden features of configuration c of sp into out[feat_hidden_length],
 * the compiler facts from cc (NULL: left zero, for a kernel that was not
 * compiled). TK_OK, with *valid 0 and zeros when c cannot be lowered;
 * TK_EUNSUPP for a space without a program; TK_ENOMEM. */
int feat_hidden_cpu(const sp_space *sp, const sp_config *c, const feat_cc *cc, float *out,
                    int *valid);
/* The name of value i of sp's hidden vectors ("tile_i.tail",
 * "cc_stack_bytes") into buf (always terminated). */
void feat_hidden_name(const sp_space *sp, int i, char *buf, size_t size);

#endif
