/*
 * ref: the plain reference implementation of every operator, interpreted
 * directly from its tensor expression (no schedule, no code generation), in
 * double precision. Generated kernels are checked against it.
 */
#ifndef TK_REF_H
#define TK_REF_H

#include <stddef.h>
#include <stdint.h>

#include "te.h"

/* Fill each input of p with uniform values in [-1, 1) from PCG32 seeded with
 * seed (stream = input position). in[i] must hold p->tensor[p->input[i]].size
 * floats. */
void ref_random_inputs(const te_prog *p, uint64_t seed, float *const *in);

/* Compute the output of p for inputs in[] into out (output size doubles)
 * and, into outabs, the sum of absolute values of the terms that make each
 * output element (propagated through intermediate stages): the scale of the
 * rounding error a float32 kernel may make. Returns TK_OK or TK_ENOMEM. */
int ref_compute(const te_prog *p, const float *const *in, double *out, double *outabs);

/* Relative tolerance (to outabs) for comparing a float32 kernel of p with
 * the reference: a few units of float32 rounding per stage, growing with the
 * square root of each stage's reduction length. */
double ref_rtol(const te_prog *p);

#endif
