/*
 * hidden: ML2Tuner's hidden features of a configuration on the CPU, what
 * compiling it decided, as opposed to the visible features of the
 * configuration itself. Two parts, in this order:
 *
 *   schedule  per split knob of the space, in knob order, FEAT_HIDDEN_TILE
 *             values derived from its factors and extent E (outer factor o,
 *             innermost factor f, tile T = product of the inner factors):
 *               +0 lg(f)  +1 lg(T)  +2 lg(o)
 *               +3 lg(tail): E mod T, the boundary tile's size (0 if T divides E)
 *               +4 lg(padded - E): padded extent ceil(E / T) * T minus E
 *             then FEAT_HIDDEN_NEST values of the lowered main loop nest:
 *               +0 loops of the nest  +1 lg(trip count of the innermost loop)
 *               +2 lg(trip count of the two innermost loops together)
 *               +3 innermost loop vectorised (0/1)  +4 innermost loop unrolled (0/1)
 *   compiler  FEAT_HIDDEN_CC facts of compiling the kernel (feat_cc, filled
 *             by lib/measure from the compiler's own reports):
 *               +0 lg(stack frame bytes, the largest function's)
 *               +1 functions with a dynamic stack (0 or more)
 *               +2 lg(bytes of executable code)  +3 lg(shared object bytes)
 *               +4 loops the compiler vectorised  +5 loops it could not
 * lg(x) = log2(1 + x). A configuration that cannot be lowered is all zeros
 * with *valid 0. Length: FEAT_HIDDEN_TILE x split knobs + FEAT_HIDDEN_NEST
 * + FEAT_HIDDEN_CC.
 */
#include "feat_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float lg(double x)
{
	return (float)log2(1 + (x > 0 ? x : 0));
}

static int nsplit(const sp_space *sp)
{
	int n = 0;
	for (int k = 0; k < sp->nknob; k++)
		n += sp->knob[k].kind == KNOB_SPLIT;
	return n;
}

int feat_hidden_length(const sp_space *sp)
{
	return FEAT_HIDDEN_TILE * nsplit(sp) + FEAT_HIDDEN_NEST + FEAT_HIDDEN_CC;
}

int feat_hidden_cpu(const sp_space *sp, const sp_config *c, const feat_cc *cc, float *out,
                    int *valid)
{
	feat_nestctx *nc = NULL;
	int n = feat_hidden_length(sp), ok = 0, rc, at = 0;
	memset(out, 0, sizeof *out * (size_t)n);
	*valid = 0;
	if (!sp->prog)
		return tk_seterr(TK_EUNSUPP, "hidden features of the CPU need a template task");
	if (!(nc = malloc(sizeof *nc)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	if ((rc = feat_nest_context(sp, c, nc, &ok)) || !ok) {
		free(nc);
		return rc;
	}
	for (int k = 0; k < sp->nknob; k++) {
		const sp_knob *kn = &sp->knob[k];
		if (kn->kind != KNOB_SPLIT)
			continue;
		const int64_t *fac = &kn->cand[(size_t)c->v[k] * (size_t)kn->nlevel];
		int64_t tile = 1, e = kn->extent;
		for (int l = 1; l < kn->nlevel; l++)
			tile *= fac[l];
		int64_t padded = (e + tile - 1) / tile * tile;
		out[at++] = lg((double)fac[kn->nlevel - 1]);
		out[at++] = lg((double)tile);
		out[at++] = lg((double)fac[0]);
		out[at++] = lg((double)(e % tile));
		out[at++] = lg((double)(padded - e));
	}
	/* the nest: values of the itervar layout (itervar.c): +0 lg(extent),
	 * +4.. the annotation one-hot (none, parallel, vectorize, unroll) */
	int L = nc->nloop;
	out[at++] = (float)L;
	if (L > 0) {
		const float *in = nc->v[L - 1];
		double e1 = exp2(in[0]) - 1, e2 = L > 1 ? exp2(nc->v[L - 2][0]) - 1 : 1;
		out[at++] = in[0];
		out[at++] = lg(e1 * e2);
		out[at++] = in[6];
		out[at++] = in[7];
	} else {
		at += FEAT_HIDDEN_NEST - 1;
	}
	free(nc);
	if (cc) {
		out[at + 0] = lg(cc->stack_bytes);
		out[at + 1] = (float)cc->dynamic_stack;
		out[at + 2] = lg(cc->text_bytes);
		out[at + 3] = lg(cc->object_bytes);
		out[at + 4] = (float)cc->vectorized;
		out[at + 5] = (float)cc->missed;
	}
	*valid = 1;
	return TK_OK;
}

void feat_hidden_name(const sp_space *sp, int i, char *buf, size_t size)
{
	static const char *const tile[FEAT_HIDDEN_TILE] = { "inner", "tile", "outer", "tail", "pad" };
	static const char *const nest[FEAT_HIDDEN_NEST] = {
		"nest_loops", "inner_trip", "inner2_trip", "inner_vectorized", "inner_unrolled",
	};
	static const char *const cc[FEAT_HIDDEN_CC] = {
		"cc_stack_bytes", "cc_dynamic_stack", "cc_text_bytes", "cc_object_bytes",
		"cc_loops_vectorized", "cc_loops_missed",
	};
	int ns = nsplit(sp);
	if (i < FEAT_HIDDEN_TILE * ns) {
		int s = i / FEAT_HIDDEN_TILE, k = 0;
		for (int seen = -1; k < sp->nknob; k++)
			if (sp->knob[k].kind == KNOB_SPLIT && ++seen == s)
				break;
		snprintf(buf, size, "%s.%s", k < sp->nknob ? sp->knob[k].name : "?",
		         tile[i % FEAT_HIDDEN_TILE]);
	} else if ((i -= FEAT_HIDDEN_TILE * ns) < FEAT_HIDDEN_NEST) {
		snprintf(buf, size, "%s", nest[i]);
	} else if ((i -= FEAT_HIDDEN_NEST) < FEAT_HIDDEN_CC) {
		snprintf(buf, size, "%s", cc[i]);
	} else {
		snprintf(buf, size, "f%d", i);
	}
}
