/*
 * itervar: the loop-context features of AutoTVM (itervar and curve kinds),
 * computed by lowering a configuration and walking the loop nest around its
 * main statement.
 *
 * The main statement is the compute store of the main stage: the IR_STORE
 * into the stage's accumulator (the IRB_LOCAL buffer "<out>_acc" of a
 * cache_write) or, without one, into the stage's output, whose value reads
 * all nread inputs of the stage (packed copies included): `acc += A*B` for
 * "+=" stages, `out = ...` for "=" stages. Its enclosing IR_FOR loops, from
 * outermost to innermost, are the nest. For the generic template their
 * number is fixed per task: the leaves of the main stage's schedule, i.e.
 * for every axis of the main stage the number of levels of its tile knob
 * (1 for an axis without one), minus nspatial - 1 for the fused outer loop.
 *
 * Shape key:
 *   L  loops of the nest (dense: 7; conv2d with n=1: 13)
 *   K  buffer slots = 1 + nread: slot 0 the written buffer (accumulator or
 *      output; a "+=" store reads it too, still one slot), slots 1..nread
 *      the reads of the main stage in body order (a packed read is its
 *      slot, indexed in the packed layout)
 *   P  values per loop = 10 + 3K
 *   S  curve samples = 20
 *
 * For loop l (0 = outermost) with extent e_l (the constant upper bound of
 * its trip count, max_extent) and a buffer slot s, the slot's index depends
 * on loop l when l's variable occurs in any of its (per-dimension) indices.
 * Every value below is lg(x) = log2(1 + x) unless said otherwise.
 *
 * itervar (version 2), length L * P; loop l occupies out[l*P .. l*P+P):
 *   +0   lg(e_l)
 *   +1   nest level l + 1 (outermost 1), not logged
 *   +2   lg(top-down product e_0 * ... * e_l)
 *   +3   lg(bottom-up product e_l * ... * e_{L-1})
 *   +4   annotation one-hot: none, parallel, vectorize, unroll (+4..+7)
 *   +8   lg(float additions executed in one iteration of loop l)
 *   +9   lg(float multiplications executed in one iteration of loop l)
 *        (per execution of the statement: the FADD/FMUL nodes of its value,
 *        plus one addition for "+="; times e_{l+1} * ... * e_{L-1})
 *   +10+3s  lg(|stride|): change of the row-major flat index of slot s when
 *           loop l's variable goes from 0 to 1 with every other loop at 0;
 *           for an index affine in the variable this is its coefficient
 *   +11+3s  lg(count): distinct elements of slot s touched in one iteration
 *           of loop l = product of e_m over inner loops m > l the index
 *           depends on
 *   +12+3s  lg(reuse): product of e_m over inner loops m > l the index does
 *           not depend on
 * L is the longest nest the template makes for the space (order 2 leaves
 * some outer loops unfused); the features are aligned at the innermost
 * loop: a shorter nest has zeros for its missing outer loops (and a longer
 * one, which the template never makes, would lose its extra outer loops).
 *
 * curve (version 1), length K * 2 * S; slot s occupies out[s*2S .. s*2S+2S):
 * the count and reuse of slot s over the j innermost loops (j = 1..L, the
 * loop levels from innermost to outermost: count_j = product of e_m over
 * m >= L-j that the index depends on, reuse_j the product over the others),
 * as y_j = lg(count_j) and lg(reuse_j), each sampled at S points
 * x_t = 1 + t*(L-1)/(S-1), t = 0..S-1, by linear interpolation between the
 * neighbouring levels: out[s*2S + t] = count curve, out[s*2S + S + t] =
 * reuse curve.
 *
 * A configuration that cannot be lowered (or whose main statement cannot be
 * found) gives all zeros and *valid = 0. The walk allocates nothing beyond
 * the lowered function; one conv2d configuration takes a few tens of
 * microseconds, most of it lowering.
 */
#include "feat_int.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/lower.h"
#include "schedule/sched.h"

#define NEST_MAX FEAT_NEST_MAX /* loops tracked (bits of a uint64_t mask) */
#define SLOT_MAX (1 + TE_MAXREAD)

typedef struct slot {
	const ir_buf *buf;
	ir_expr *const *idx;      /* buf->ndim indices */
} slot;

typedef struct nest {
	const ir_buf *out, *acc;  /* main stage output and accumulator (or NULL) */
	int nread;
	int nloop;
	const ir_stmt *loop[NEST_MAX];
	int nslot;
	slot slot[SLOT_MAX];
	int nadd, nmul;
	uint64_t dep[SLOT_MAX];            /* bit l: index depends on loop l */
	double stride[SLOT_MAX][NEST_MAX];
} nest;

void feat_nest_shape(const sp_space *sp, int *nloop, int *nslot)
{
	assert(sp->prog);
	const te_stage *st = &sp->prog->stage[sp->main_stage];
	int n = 0;
	for (int a = 0; a < st->naxis; a++) {
		int lv = 1;
		for (int k = 0; k < sp->nknob; k++)
			if (sp->knob[k].role == KR_TILE && sp->knob[k].axis == a)
				lv = sp->knob[k].nlevel;
		n += lv;
	}
	/* the outer parts of the spatial axes are fused into one loop; order 2
	 * fuses only those of the axes the panel read depends on (template.c),
	 * the longest nest */
	int fused = st->nspatial;
	if (sp->panel_read >= 0)
		fused = __builtin_popcount(sp->panel_axes & ((1u << st->nspatial) - 1));
	if (fused > 1)
		n -= fused - 1;
	*nloop = n;
	*nslot = 1 + st->nread;
}

/* ---- finding the main statement ----------------------------------------------- */

/* Loads of a store value in evaluation order into slots 1.., and its float
 * arithmetic. Loads of the output and accumulator (write-back, partial
 * sums) are not reads of the stage. */
static void collect(nest *n, const ir_expr *e)
{
	switch (e->kind) {
	case IR_LOAD:
		if (e->buf != n->out && e->buf != n->acc) {
			if (n->nslot < SLOT_MAX)
				n->slot[n->nslot] = (slot){ e->buf, e->idx };
			n->nslot++;
		}
		return;
	case IR_FADD:
		n->nadd++;
		collect(n, e->a);
		collect(n, e->b);
		return;
	case IR_FMUL:
		n->nmul++;
		collect(n, e->a);
		collect(n, e->b);
		return;
	case IR_FRELU:
		collect(n, e->a);
		return;
	case IR_SELECT:
		collect(n, e->b); /* a is the boolean guard */
		return;
	}
	/* integer and boolean expressions and constants hold no loads */
}

static int is_main(nest *n, const ir_stmt *s)
{
	if (s->buf != n->out && (!n->acc || s->buf != n->acc))
		return 0;
	n->nslot = 1;
	n->nadd = n->nmul = 0;
	collect(n, s->value);
	if (n->nslot != 1 + n->nread)
		return 0;
	n->slot[0] = (slot){ s->buf, s->idx };
	n->nadd += s->accum != 0;
	return 1;
}

static int find_main(nest *n, const ir_stmt *s, int depth)
{
	for (; s; s = s->next) {
		switch (s->kind) {
		case IR_FOR:
			if (depth == NEST_MAX)
				break; /* deeper than any main nest */
			n->loop[depth] = s;
			if (find_main(n, s->body, depth + 1))
				return 1;
			break;
		case IR_ALLOC:
			if (find_main(n, s->body, depth))
				return 1;
			break;
		case IR_STORE:
			if (is_main(n, s)) {
				n->nloop = depth;
				return 1;
			}
			break;
		}
	}
	return 0;
}

/* ---- index analysis ------------------------------------------------------------- */

static int loop_pos(const nest *n, const ir_stmt *l)
{
	for (int i = n->nloop - 1; i >= 0; i--)
		if (n->loop[i] == l)
			return i;
	return -1;
}

/* Loops of the nest whose variables occur in integer expression e. */
static uint64_t deps(const nest *n, const ir_expr *e)
{
	switch (e->kind) {
	case IR_INT:
		return 0;
	case IR_VAR: {
		int p = loop_pos(n, e->loop);
		return p < 0 ? 0 : (uint64_t)1 << p;
	}
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_MOD: case IR_MIN:
		return deps(n, e->a) | deps(n, e->b);
	}
	return 0;
}

static int64_t floordiv(int64_t a, int64_t b)
{
	int64_t q = a / b;
	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

/* Value of e with loop l's variable at v and every other variable at 0. */
static int64_t eval(const ir_expr *e, const ir_stmt *l, int64_t v)
{
	int64_t a, b;
	switch (e->kind) {
	case IR_INT:
		return e->i;
	case IR_VAR:
		return e->loop == l ? v : 0;
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_MOD: case IR_MIN:
		break;
	default:
		return 0;
	}
	a = eval(e->a, l, v);
	b = eval(e->b, l, v);
	switch (e->kind) {
	case IR_ADD: return a + b;
	case IR_SUB: return a - b;
	case IR_MUL: return a * b;
	case IR_DIV: return b ? floordiv(a, b) : 0;
	case IR_MOD: return b ? a - floordiv(a, b) * b : 0;
	default: return a < b ? a : b;
	}
}

/* Dependence masks and flat-index strides of every slot. */
static void analyse_slots(nest *n)
{
	for (int s = 0; s < n->nslot; s++) {
		const ir_buf *b = n->slot[s].buf;
		int64_t rs = 1;
		n->dep[s] = 0;
		for (int l = 0; l < n->nloop; l++)
			n->stride[s][l] = 0;
		for (int d = b->ndim - 1; d >= 0; d--) {
			const ir_expr *e = n->slot[s].idx[d];
			uint64_t m = deps(n, e);
			n->dep[s] |= m;
			if (m) {
				int64_t base = eval(e, NULL, 0);
				for (int l = 0; l < n->nloop; l++)
					if (m >> l & 1)
						n->stride[s][l] += (double)rs * (double)(eval(e, n->loop[l], 1) - base);
			}
			rs *= b->shape[d];
		}
	}
}

/* Lower c and find its main statement. *f is the lowered function (free it
 * with ir_func_free) or NULL; *ok is 0 for an invalid configuration. */
static int lower_nest(const sp_space *sp, const sp_config *c, nest *n, ir_func **f, int *ok)
{
	const te_prog *p = sp->prog;
	const te_stage *st = &p->stage[sp->main_stage];
	sc_sched sched;
	*f = NULL;
	*ok = 0;
	if (sc_from_config(sp, c, &sched))
		return TK_OK; /* schedule over the limits: invalid */
	int rc = lower(p, &sched, f);
	if (rc == TK_EINVAL)
		return TK_OK;
	if (rc)
		return rc;
	const char *oname = p->tensor[st->out].name;
	size_t olen = strlen(oname);
	n->out = n->acc = NULL;
	n->nread = st->nread;
	for (int i = 0; i < (*f)->nbuf; i++) {
		const ir_buf *b = (*f)->buf[i];
		if (strncmp(b->name, oname, olen))
			continue;
		if (b->kind == IRB_LOCAL && !strcmp(b->name + olen, "_acc"))
			n->acc = b;
		else if (b->kind != IRB_LOCAL && !b->name[olen])
			n->out = b;
	}
	if (!n->out || !find_main(n, (*f)->body, 0))
		return TK_OK;
	analyse_slots(n);
	*ok = 1;
	return TK_OK;
}

static float lg(double x)
{
	return (float)log2(1.0 + x);
}

/* ---- the loop context ------------------------------------------------------------ */

int feat_nest_context(const sp_space *sp, const sp_config *c, feat_nestctx *out, int *valid)
{
	nest n;
	ir_func *f;
	int ok;
	out->nloop = out->nslot = 0;
	int rc = lower_nest(sp, c, &n, &f, &ok);
	*valid = ok;
	if (rc || !ok) {
		ir_func_free(f);
		return rc;
	}
	const int L = n.nloop, nslot = n.nslot < SLOT_MAX ? n.nslot : SLOT_MAX;
	double ext[NEST_MAX], top[NEST_MAX], bot[NEST_MAX + 1], cnt[SLOT_MAX][NEST_MAX],
	       reu[SLOT_MAX][NEST_MAX];
	for (int l = 0; l < L; l++) {
		ext[l] = (double)n.loop[l]->max_extent;
		top[l] = ext[l] * (l ? top[l - 1] : 1.0);
	}
	bot[L] = 1.0;
	for (int l = L - 1; l >= 0; l--)
		bot[l] = ext[l] * bot[l + 1];
	for (int s = 0; s < nslot; s++) {
		double cs = 1.0, rs = 1.0;
		for (int l = L - 1; l >= 0; l--) {
			cnt[s][l] = cs;
			reu[s][l] = rs;
			if (n.dep[s] >> l & 1)
				cs *= ext[l];
			else
				rs *= ext[l];
		}
	}
	out->nloop = L;
	out->nslot = nslot;
	for (int l = 0; l < L; l++) {
		float *o = out->v[l];
		int ann = n.loop[l]->ann;
		memset(o, 0, sizeof out->v[l]);
		snprintf(out->var[l], sizeof out->var[l], "%s", n.loop[l]->var ? n.loop[l]->var : "");
		o[0] = lg(ext[l]);
		o[1] = (float)(l + 1);
		o[2] = lg(top[l]);
		o[3] = lg(bot[l]);
		if (ann >= ANN_NONE && ann <= ANN_UNROLL)
			o[4 + ann] = 1.0f;
		o[8] = lg(n.nadd * bot[l + 1]);
		o[9] = lg(n.nmul * bot[l + 1]);
		for (int s = 0; s < nslot; s++) {
			o[10 + 3 * s] = lg(fabs(n.stride[s][l]));
			o[11 + 3 * s] = lg(cnt[s][l]);
			o[12 + 3 * s] = lg(reu[s][l]);
		}
	}
	ir_func_free(f);
	return TK_OK;
}

/* ---- the two kinds ---------------------------------------------------------------- */

int feat_itervar(const sp_space *sp, const sp_config *c, float *out, int *valid)
{
	feat_nestctx *x = malloc(sizeof *x);
	int nloop, nslot, ok;
	feat_nest_shape(sp, &nloop, &nslot);
	const int P = FEAT_LOOP_FIXED + FEAT_SLOT_VALUES * nslot;
	memset(out, 0, sizeof(float) * (size_t)(nloop * P));
	*valid = 0;
	if (!x)
		return tk_seterr(TK_ENOMEM, "out of memory");
	int rc = feat_nest_context(sp, c, x, &ok);
	*valid = ok;
	if (rc || !ok) {
		free(x);
		return rc;
	}
	assert(x->nslot == nslot);
	for (int i = 0; i < nloop; i++) {
		int l = i + (x->nloop - nloop); /* aligned at the innermost loop */
		if (l >= 0)
			memcpy(out + i * P, x->v[l], sizeof(float) * (size_t)P);
	}
	free(x);
	return TK_OK;
}

/* Sample y[0..m) (m >= 1) at S points by linear interpolation. */
static void sample_curve(const double *y, int m, float *out)
{
	const int S = FEAT_CURVE_SAMPLES;
	for (int t = 0; t < S; t++) {
		double x = m > 1 ? (double)t * (m - 1) / (S - 1) : 0.0;
		int lo = (int)x;
		if (lo > m - 1)
			lo = m - 1;
		int hi = lo + 1 < m ? lo + 1 : lo;
		double w = x - lo;
		out[t] = (float)(y[lo] * (1.0 - w) + y[hi] * w);
	}
}

int feat_curve(const sp_space *sp, const sp_config *c, float *out, int *valid)
{
	nest n;
	ir_func *f;
	int nloop, nslot, ok;
	const int S = FEAT_CURVE_SAMPLES;
	feat_nest_shape(sp, &nloop, &nslot);
	memset(out, 0, sizeof(float) * (size_t)(nslot * 2 * S));
	int rc = lower_nest(sp, c, &n, &f, &ok);
	*valid = ok;
	if (rc || !ok) {
		ir_func_free(f);
		return rc;
	}
	assert(n.nslot == nslot);
	const int L = n.nloop;
	for (int s = 0; s < nslot; s++) {
		double yc[NEST_MAX], yr[NEST_MAX], cs = 1.0, rs = 1.0;
		for (int j = 1; j <= L; j++) {
			int l = L - j;
			double e = (double)n.loop[l]->max_extent;
			if (n.dep[s] >> l & 1)
				cs *= e;
			else
				rs *= e;
			yc[j - 1] = log2(1.0 + cs);
			yr[j - 1] = log2(1.0 + rs);
		}
		if (L == 0)
			yc[0] = yr[0] = 1.0; /* lg(1): no loop, one element, no reuse */
		sample_curve(yc, L ? L : 1, out + s * 2 * S);
		sample_curve(yr, L ? L : 1, out + s * 2 * S + S);
	}
	ir_func_free(f);
	return TK_OK;
}
