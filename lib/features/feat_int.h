/*
 * feat_int: what the files of lib/features share and nothing outside it may
 * use: the shape of a template space's main loop nest (loops and buffer
 * slots, fixed per task) and its per-loop context values, the kinds
 * computed from the lowered IR (itervar.c; graph.c builds its graph on the
 * same loop context) and the kind computed from the schedule sequence
 * (tlp.c). feature.c holds the public entry points, the table of kinds and
 * the knob kind.
 */
#ifndef TK_FEAT_INT_H
#define TK_FEAT_INT_H

#include "feature.h"

#define FEAT_CURVE_SAMPLES 20 /* S: points per curve */
#define FEAT_LOOP_FIXED 10    /* per-loop values before the buffer slots */
#define FEAT_SLOT_VALUES 3    /* stride, count, reuse */

/* Loops enclosing the main statement of sp's template (L) and buffer slots
 * (K = 1 + reads of the main stage). sp must have a program. */
void feat_nest_shape(const sp_space *sp, int *nloop, int *nslot);

/* The loop context of c's main nest, as itervar computes it, loop by loop
 * and not aligned: loop l (0 = outermost) of nloop has the IR name var[l]
 * ("y_0", or "b_f_0_y_0_x_0" for a fused loop) and the itervar values
 * v[l][0 .. FEAT_LOOP_FIXED + FEAT_SLOT_VALUES * nslot) in itervar's
 * per-loop layout (itervar.c), the rest of v[l] zero. *valid 0 (nloop 0)
 * for a configuration that cannot be lowered. TK_OK, or TK_ENOMEM. */
#define FEAT_NEST_MAX 64
#define FEAT_LOOP_VALUES (FEAT_LOOP_FIXED + FEAT_SLOT_VALUES * (1 + TE_MAXREAD))
typedef struct feat_nestctx {
	int nloop, nslot;
	char var[FEAT_NEST_MAX][64];
	float v[FEAT_NEST_MAX][FEAT_LOOP_VALUES];
} feat_nestctx;
int feat_nest_context(const sp_space *sp, const sp_config *c, feat_nestctx *out, int *valid);

/* itervar / curve features of c into out[0..feat_length); see itervar.c for
 * the layout. TK_OK (with *valid 0 and zeros for unlowerable
 * configurations) or TK_ENOMEM. sp must have a program. */
int feat_itervar(const sp_space *sp, const sp_config *c, float *out, int *valid);
int feat_curve(const sp_space *sp, const sp_config *c, float *out, int *valid);

/* tlp features of c into out[0..FEAT_TLP_L * FEAT_TLP_E); see tlp.c for the
 * layout. Always TK_OK (with *valid 0 and zeros when c's schedule cannot
 * be built); allocates nothing. sp must have a program. */
int feat_tlp(const sp_space *sp, const sp_config *c, float *out, int *valid);

/* graph features of c into out[0..FEAT_GRAPH_LEN); see graph.c for the
 * layout. feat_graph_check says whether sp's loop nests fit the
 * super-graph: TK_OK, or TK_EINVAL naming what does not fit. feat_graph
 * returns TK_OK (with *valid 0 and zeros for unlowerable configurations),
 * TK_EINVAL when the configuration's nest does not fit, or TK_ENOMEM. sp
 * must have a program. */
int feat_graph_check(const sp_space *sp);
int feat_graph(const sp_space *sp, const sp_config *c, float *out, int *valid);

#endif
