/*
 * feat_int: what the files of lib/features share and nothing outside it may
 * use: the shape of a template space's main loop nest (loops and buffer
 * slots, fixed per task), the two kinds computed from the lowered IR
 * (itervar.c) and the kind computed from the schedule sequence (tlp.c).
 * feature.c holds the public entry points, the table of kinds and the knob
 * kind.
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

/* itervar / curve features of c into out[0..feat_length); see itervar.c for
 * the layout. TK_OK (with *valid 0 and zeros for unlowerable
 * configurations) or TK_ENOMEM. sp must have a program. */
int feat_itervar(const sp_space *sp, const sp_config *c, float *out, int *valid);
int feat_curve(const sp_space *sp, const sp_config *c, float *out, int *valid);

/* tlp features of c into out[0..FEAT_TLP_L * FEAT_TLP_E); see tlp.c for the
 * layout. Always TK_OK (with *valid 0 and zeros when c's schedule cannot
 * be built); allocates nothing. sp must have a program. */
int feat_tlp(const sp_space *sp, const sp_config *c, float *out, int *valid);

#endif
