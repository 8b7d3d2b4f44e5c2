/*
 * tlp: the features of TLP (Zhai et al., "TLP: a deep learning-based cost
 * model for tensor program tuning", section 4.1), taken from the schedule
 * primitive sequence of a configuration (sched.h) and never from the
 * program it lowers to. Each primitive becomes one row: a one-hot of its
 * kind, tokens for the names it takes (stage, loops, tensor) and its
 * numbers. Unlike TLP's tokens, which number the names a dataset happens to
 * contain, a loop's token says what the loop is (which axis, which part of
 * a split, reduction or not, how long), so that rows of different tasks
 * and operators mean the same and one model can learn across them.
 *
 * Shape key:
 *   L  rows = FEAT_TLP_L = 32: the longest sequence any operator's template
 *      makes (conv2d_winograd with n > 1: 8 primitives of its fixed stages,
 *      24 of its main stage; the one-stage operators make at most 24,
 *      conv2d_nchwc with n > 1). TLP crops to 25 rows; we pad instead, so
 *      that no template loses a primitive.
 *   E  values per row = FEAT_TLP_E = 25, below.
 * The vector is the L x E matrix row-major: row i (out[i*E .. i*E+E)) is
 * primitive i, rows past the sequence are zeros. Every primitive's row has
 * a 1 in its kind one-hot, so the sequence length is the number of leading
 * non-zero rows. A sequence longer than L (no template makes one) would
 * keep its last L primitives: sc_from_config puts the fixed schedules of
 * the other stages first and the configuration's main stage last.
 *
 * Every value written lg(x) is log2(1 + x). A loop token (5 values)
 * describes a loop of a stage as it is before the primitive applies:
 *   +0  axis: 1 + the rank of the loop's axis among the stage's axes of the
 *       same class (spatial or reduction), counted from the last declared:
 *       1 is the last spatial axis (the output's contiguous dimension: j of
 *       dense, x of conv2d) or the last reduction axis (r, rx)
 *   +1  level: 0 for a whole axis, 1 + the part's index for a part of a
 *       split (1 outer, 2 middle, 3 the inner part of a 3-way split)
 *   +2  1 if the axis is a reduction axis, else 0
 *   +3  lg(extent): for the outer part of a split, ceil(extent / product of
 *       the inner factors)
 *   +4  the number of loops fused into the loop, 1 for a loop no fuse made
 * A fused loop's +0..+2 are those of its innermost part (the fuse's second
 * loop, recursively): j.0 for i.0+j.0, the same axis token for dense's and
 * conv2d's fused outer loops.
 *
 * Row layout (columns):
 *   0..8    kind one-hot in sched.h's order: split, reorder, fuse, parallel,
 *           vectorize, unroll, cache_write, pack, pragma
 *   9       1 if the primitive's stage is the main stage (the one the
 *           configuration's knobs schedule), else 0
 *   10      the stage relative to the main stage: stage - main_stage
 *           (0 on the main stage, negative for the stages before it)
 *   11..15  loop token A: the loop the primitive names (split,
 *           parallel, vectorize, unroll, cache_write), fuse's first (outer)
 *           loop, or the loop a pack is at (zeros for a pack before the
 *           nest)
 *   16..20  loop token B: fuse's second (inner) loop; zeros otherwise
 *   21..24  numbers:
 *             split   lg(outer extent), lg(f0), lg(f1), lg(f2): the derived
 *                     outer part and the inner extents, outermost first
 *                     (zeros past the split's factors)
 *             pack    read + 1 (the read of the stage it copies: 1 the
 *                     first factor of the body), lg(elements of that
 *                     tensor), 0, 0
 *             pragma  lg(unroll_max), explicit (0 or 1), 0, 0
 *             cache_write  the tile it accumulates in, from the loops
 *                     nested below the loop it is at (since version 2):
 *                     lg(product of the spatial ones' extents: the tile's
 *                     elements), lg(product of the reduction ones'), their
 *                     number, 0
 *           and zeros for the other kinds
 *   reorder replaces 11..24: the order of n loops summarised per class of
 *   loop, so that reorders of stages with different numbers of axes line
 *   up. Class c = 3*reduction + part, part = 0 for the outer part of a
 *   split or a whole axis (a whole axis is a split with inner factors 1),
 *   1 for the second part, 2 for the third and later ones: S0 S1 S2 R0 R1
 *   R2 (dense's r.1, its inner reduction part, is R1). For class c:
 *           11+2c   lg(number of loops of the class)
 *           12+2c   their mean position / (n - 1), 0 outermost, 1 innermost
 *                   (0 when the class is empty or n = 1)
 *           23, 24  0
 *
 * Example: dense:m=4,n=8,k=2 (axes i j spatial, r reduction), the
 * configuration tile_i=1x4x1;tile_j=1x2x4;tile_r=1x2;order=0;vec=j;
 * unroll=0;unroll_explicit=0;pack_A=0;pack_B=1 is 11 primitives (tunekit
 * measure --emit-sched), rows 11..31 zeros:
 *   0  split C i 4 1             col 0 = 1, 9 = 1, A = (2, 0, 0, lg 4, 1),
 *                                numbers lg 1, lg 4, lg 1, 0
 *   3  reorder C i.0 j.0 i.1 j.1 r.0 r.1 i.2 j.2   col 1 = 1, 9 = 1,
 *                                S0 (lg 2, 0.5/7) S1 (lg 2, 2.5/7)
 *                                S2 (lg 2, 6.5/7) R0 (lg 1, 4/7)
 *                                R1 (lg 1, 5/7) R2 (0, 0)
 *   4  fuse C i.0 j.0            col 2 = 1, A = (2, 1, 0, lg 1, 1),
 *                                B = (1, 1, 0, lg 1, 1)
 *   5  parallel C i.0+j.0        col 3 = 1, A = (1, 1, 0, lg 1, 2)
 *   8  cache_write C j.1        col 6 = 1, A = (1, 2, 0, lg 2, 1), numbers
 *                                lg 4 (i.2 j.2), lg 2 (r.0 r.1), 4, 0
 *   9  pack C B                  col 7 = 1, A = 0, numbers 2, lg 16
 *   10 pragma C unroll_max 0 explicit 0   col 8 = 1, col 9 = 1, the rest 0
 *
 * A configuration whose sequence cannot be built (sc_from_config fails:
 * too many primitives) or names a loop that does not exist gets all zeros
 * and *valid = 0. One that lowering would reject (an accumulator tile over
 * its limit) still has a sequence and features: tlp never lowers. The walk
 * keeps the loops of each stage, and their nest order as split, reorder
 * (TVM's: the loops named take the places they held) and fuse leave it, in
 * tables on the stack (no allocation, no names); building the sequence
 * (sc_from_config) takes a quarter to a half of the time of a tlp vector
 * (tests/bench/features.c times both).
 */
#include "feat_int.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "schedule/sched.h"

#define TOKEN 5

enum {
	COL_KIND = 0,                 /* SC_NKIND one-hot */
	COL_MAIN = SC_NKIND,
	COL_STAGE,
	COL_A,                        /* loop token A */
	COL_B = COL_A + TOKEN,        /* loop token B */
	COL_NUM = COL_B + TOKEN,      /* 4 numbers */
	COL_END = COL_NUM + 4,
	COL_ORDER = COL_A,            /* reorder: 2 values per class */
	NCLASS = 6
};

_Static_assert(COL_END == FEAT_TLP_E, "the row layout is FEAT_TLP_E values");
_Static_assert(COL_ORDER + 2 * NCLASS <= COL_END, "the reorder summary fits a row");
_Static_assert(SC_MAXFACTOR == 4, "a split has at most 3 factors and its outer part");

/* A loop of a stage, as the token describes it. */
typedef struct tloop {
	int64_t extent;
	unsigned char axis;           /* +0: 1 + rank of its axis in its class */
	unsigned char level;          /* +1: 0 whole axis, 1 + part index */
	unsigned char reduce;         /* +2 */
	unsigned char nfused;         /* +4 */
} tloop;

/* The loops of every stage so far; a stage's axes are set up the first
 * time a primitive names it. */
typedef struct walk {
	unsigned ready;               /* bit s: stage s is set up */
	int nloop[TE_MAXSTAGE];
	tloop loop[TE_MAXSTAGE][SC_MAXLOOP];
	int nord[TE_MAXSTAGE];        /* the nest of stage s, outermost first: */
	int ord[TE_MAXSTAGE][SC_MAXLOOP]; /* loop numbers */
} walk;

static float lg(double x)
{
	return log2f((float)(1.0 + x));
}

static void stage_setup(walk *w, const te_stage *st, int s)
{
	for (int a = 0; a < st->naxis; a++) {
		int red = st->axis[a].reduce;
		w->loop[s][a] = (tloop){
			.extent = st->axis[a].extent,
			.axis = (unsigned char)(1 + (red ? st->naxis : st->nspatial) - 1 - a),
			.reduce = (unsigned char)red,
			.nfused = 1,
		};
	}
	w->nloop[s] = st->naxis;
	for (int a = 0; a < st->naxis; a++)
		w->ord[s][a] = a;
	w->nord[s] = st->naxis;
	w->ready |= 1u << s;
}

static void put_loop(float *o, const tloop *l)
{
	o[0] = l->axis;
	o[1] = l->level;
	o[2] = l->reduce;
	o[3] = lg((double)l->extent);
	o[4] = l->nfused;
}

static void put_order(float *o, const tloop *loop, const sc_prim *pr)
{
	int cnt[NCLASS] = { 0 };
	double pos[NCLASS] = { 0 };
	for (int i = 0; i < pr->n; i++) {
		const tloop *l = &loop[pr->order[i]];
		int part = l->level > 1 ? l->level - 1 : 0;
		int c = 3 * l->reduce + (part < 2 ? part : 2);
		cnt[c]++;
		pos[c] += i;
	}
	for (int c = 0; c < NCLASS; c++) {
		o[2 * c] = lg(cnt[c]);
		o[2 * c + 1] = cnt[c] && pr->n > 1 ? (float)(pos[c] / cnt[c] / (pr->n - 1)) : 0.0f;
	}
}

/* Position of loop l in stage s's nest, -1 if it is not there. */
static int nest_pos(const walk *w, int s, int l)
{
	return sc_nest_pos(w->ord[s], w->nord[s], l);
}

static int known(const walk *w, int s, int l)
{
	return l >= 0 && l < w->nloop[s];
}

/* Row o of primitive pr (NULL: do not write, only follow its effect on the
 * loops). 0 if pr names a stage, loop or read that does not exist. */
static int step(walk *w, const sp_space *sp, const sc_prim *pr, float *o)
{
	const te_prog *p = sp->prog;
	const int s = pr->stage;
	if (s < 0 || s >= p->nstage || pr->kind < 0 || pr->kind >= SC_NKIND)
		return 0;
	const te_stage *st = &p->stage[s];
	if (!(w->ready >> s & 1))
		stage_setup(w, st, s);
	tloop *loop = w->loop[s];
	int n = w->nloop[s];

	switch (pr->kind) {
	case SC_SPLIT: {
		if (!known(w, s, pr->a) || pr->a >= st->naxis || pr->n < 1 || pr->n >= SC_MAXFACTOR ||
		    n + pr->n + 1 > SC_MAXLOOP)
			return 0;
		int64_t prod = 1;
		for (int i = 0; i < pr->n; i++) {
			if (pr->f[i] < 1)
				return 0;
			prod *= pr->f[i];
		}
		const tloop whole = loop[pr->a];
		if (o)
			put_loop(o + COL_A, &whole);
		for (int i = 0; i <= pr->n; i++) {
			tloop *l = &loop[n + i];
			*l = whole;
			l->level = (unsigned char)(1 + i);
			l->extent = i ? pr->f[i - 1] : (whole.extent + prod - 1) / prod;
			if (o)
				o[COL_NUM + i] = lg((double)l->extent);
		}
		w->nloop[s] = n + pr->n + 1;
		int at = nest_pos(w, s, pr->a);
		if (at >= 0)
			sc_nest_split(w->ord[s], &w->nord[s], at, n, pr->n + 1);
		break;
	}
	case SC_REORDER:
		if (pr->n < 1 || pr->n > SC_MAXLOOP)
			return 0;
		for (int i = 0; i < pr->n; i++)
			if (!known(w, s, pr->order[i]))
				return 0;
		if (o)
			put_order(o + COL_ORDER, loop, pr);
		{
			/* a loop not in the nest, or named twice: the nest
			 * stays as it was */
			int pos[SC_MAXLOOP];
			if (!sc_nest_find(w->ord[s], w->nord[s], pr->order, pr->n, pos))
				sc_nest_reorder(w->ord[s], pos, pr->order, pr->n);
		}
		break;
	case SC_FUSE: {
		if (!known(w, s, pr->a) || !known(w, s, pr->b) || pr->a == pr->b || n == SC_MAXLOOP)
			return 0;
		if (o) {
			put_loop(o + COL_A, &loop[pr->a]);
			put_loop(o + COL_B, &loop[pr->b]);
		}
		int nfused = loop[pr->a].nfused + loop[pr->b].nfused;
		loop[n] = loop[pr->b];
		loop[n].extent = loop[pr->a].extent * loop[pr->b].extent;
		loop[n].nfused = (unsigned char)(nfused < 255 ? nfused : 255);
		w->nloop[s] = n + 1;
		int pa = nest_pos(w, s, pr->a), pb = nest_pos(w, s, pr->b);
		if (pa >= 0 && pb >= 0)
			sc_nest_fuse(w->ord[s], &w->nord[s], pa, pb, n);
		break;
	}
	case SC_PACK:
		if (pr->a < 0 || pr->a >= st->nread || (pr->n && !known(w, s, pr->b)))
			return 0;
		if (o) {
			if (pr->n)
				put_loop(o + COL_A, &loop[pr->b]);
			o[COL_NUM] = (float)(pr->a + 1);
			o[COL_NUM + 1] = lg((double)p->tensor[st->read[pr->a].tensor].size);
		}
		break;
	case SC_PRAGMA:
		if (o) {
			o[COL_NUM] = lg((double)pr->f[0]);
			o[COL_NUM + 1] = (float)pr->f[1];
		}
		break;
	default: /* parallel, vectorize, unroll, cache_write */
		if (!known(w, s, pr->a))
			return 0;
		if (o)
			put_loop(o + COL_A, &loop[pr->a]);
		if (o && pr->kind == SC_CACHE_WRITE) {
			/* the tile: the loops below the one it is at */
			double sp_el = 1, red_el = 1;
			int nin = 0, at = nest_pos(w, s, pr->a);
			for (int i = at < 0 ? w->nord[s] : at + 1; i < w->nord[s]; i++, nin++) {
				const tloop *l = &loop[w->ord[s][i]];
				if (l->reduce)
					red_el *= (double)l->extent;
				else
					sp_el *= (double)l->extent;
			}
			o[COL_NUM] = lg(sp_el);
			o[COL_NUM + 1] = lg(red_el);
			o[COL_NUM + 2] = (float)nin;
		}
	}
	if (o) {
		o[COL_KIND + pr->kind] = 1.0f;
		o[COL_MAIN] = s == sp->main_stage;
		o[COL_STAGE] = (float)(s - sp->main_stage);
	}
	return 1;
}

int feat_tlp(const sp_space *sp, const sp_config *c, float *out, int *valid)
{
	const int E = FEAT_TLP_E;
	sc_sched sched;
	walk w;
	assert(sp->prog);
	memset(out, 0, sizeof(float) * FEAT_TLP_L * FEAT_TLP_E);
	*valid = 0;
	if (sc_from_config(sp, c, &sched))
		return TK_OK; /* over the limits: invalid */
	w.ready = 0;
	/* a longer sequence than L keeps its last L primitives */
	const int skip = sched.nprim > FEAT_TLP_L ? sched.nprim - FEAT_TLP_L : 0;
	for (int i = 0; i < sched.nprim; i++) {
		if (!step(&w, sp, &sched.prim[i], i < skip ? NULL : out + (i - skip) * E)) {
			memset(out, 0, sizeof(float) * FEAT_TLP_L * FEAT_TLP_E);
			return TK_OK;
		}
	}
	*valid = 1;
	return TK_OK;
}
