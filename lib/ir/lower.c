/*
 * lower: schedule + tensor expression -> loop-nest IR.
 *
 * Per stage, the primitives are replayed on a table of loops (itervars): the
 * stage's axes, the parts of split axes, fused loops; the leaves in nest
 * order become IR loops. The value of every axis is rebuilt from the loops
 * that enclose the point of use (split parts: sum of part * stride; fused
 * loops: div and mod), so the same leaves can be emitted several times
 * (accumulator init, update, write-back) each with its own IR loops.
 *
 * Splits that do not divide their axis give tails: part i of a split runs to
 * min(f_i, ceil((E - base_i) / S_i)), where base_i is the index already
 * covered by the outer parts and S_i the product of the inner extents; the
 * bound folds to f_i whenever the split divides.
 *
 * The generated structure of a stage is
 *
 *     [zero the output]           when the reduction is not all inside a tile
 *     [packed copies of inputs]   pack primitives: tiled dimensions split
 *                                 into outer and inner parts, laid out
 *                                 outer parts, other dims, inner parts
 *                                 (B[k,n] -> Bp[n/16][k][16]); padded
 *                                 dimensions made total (no guards)
 *     for leaves up to cache_write:
 *        [alloc panel; copy it]   a pack at this loop: the part of the input
 *                                 one iteration reads (see pack_layout)
 *        alloc acc[inner spatial leaves]
 *        acc = 0 (or the partial sums from the output)
 *        for remaining leaves: acc += product of reads
 *        output = epilogue(acc)
 *     [epilogue pass]             when the epilogue could not run on the tile
 */
#include "lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACC_MAX_FLOATS (1 << 18) /* 1 MiB accumulator tile */

enum { IV_AXIS, IV_PART, IV_FUSED };

typedef struct iv {
	const char *name;
	int kind;
	int axis;            /* IV_AXIS, IV_PART */
	int part, nparts;    /* IV_PART */
	int64_t extent;      /* constant iteration bound */
	int64_t stride;      /* IV_PART: product of the extents of the inner parts */
	int first;           /* IV_PART: loop number of part 0 */
	int fa, fb;          /* IV_FUSED: components */
	int parent;          /* loop that replaced this one (fused into), -1 */
	int split;           /* IV_AXIS: first part if split, -1 */
	int ann;
	ir_stmt *loop;       /* IR loop currently bound to this leaf */
} iv;

typedef struct stage_state {
	int niv;
	iv ivs[SC_MAXLOOP];
	int norder;
	int order[SC_MAXLOOP];
	int cache_at;
	int pack[TE_MAXREAD];
	int pack_at[TE_MAXREAD]; /* leaf the copy is made in, -1: before the nest */
	int64_t unroll_max;
	int explicit;
} stage_state;

typedef struct lw {
	ir_func *f;
	const te_prog *p;
	ir_buf *tbuf[TE_MAXTENSOR]; /* buffer of each tensor */
	jmp_buf fail;
} lw;

static void __attribute__((noreturn, format(printf, 2, 3))) fail(lw *L, const char *fmt, ...)
{
	char buf[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	tk_seterr(TK_EINVAL, "invalid schedule: %s", buf);
	longjmp(L->fail, 1);
}

static ir_buf *new_buf(lw *L, const char *name, int kind, int ndim, const int64_t *shape)
{
	ir_buf *b = ir_buf_new(L->f, name, kind, ndim, shape);
	if (!b)
		fail(L, "more than %d buffers", IR_MAXBUF);
	return b;
}

/* ---- replaying primitives ------------------------------------------ */

static int order_pos(const stage_state *ss, int l)
{
	return sc_nest_pos(ss->order, ss->norder, l);
}

static int is_leaf(const stage_state *ss, int l)
{
	return l >= 0 && l < ss->niv && order_pos(ss, l) >= 0;
}

/* Constant bound of a leaf: parts other than the outermost have one only
 * when the split divides what their outer parts leave. */
static int const_bound(const te_stage *st, const stage_state *ss, int l)
{
	const iv *v = &ss->ivs[l];
	if (v->kind != IV_PART || v->part == 0)
		return 1;
	return st->axis[v->axis].extent % (v->stride * v->extent) == 0;
}

static void apply(lw *L, const te_stage *st, stage_state *ss, const sc_prim *pr)
{
	switch (pr->kind) {
	case SC_SPLIT: {
		int a = pr->a;
		if (a < 0 || a >= st->naxis || ss->ivs[a].split >= 0 || !is_leaf(ss, a))
			fail(L, "split of a loop that is not an unsplit axis");
		int n = pr->n + 1, pos = order_pos(ss, a);
		if (ss->niv + n > SC_MAXLOOP || ss->norder + n - 1 > SC_MAXLOOP)
			fail(L, "too many loops");
		int64_t inner = 1;
		for (int i = 0; i < pr->n; i++)
			inner *= pr->f[i];
		int first = ss->niv;
		ss->ivs[a].split = first;
		int64_t stride = inner;
		for (int i = 0; i < n; i++) {
			iv *v = &ss->ivs[ss->niv++];
			memset(v, 0, sizeof *v);
			v->name = tk_arena_printf(&L->f->arena, "%s_%d", st->axis[a].name, i);
			v->kind = IV_PART;
			v->axis = a;
			v->part = i;
			v->nparts = n;
			v->first = first;
			v->parent = v->split = -1;
			v->extent = i == 0 ? (st->axis[a].extent + inner - 1) / inner : pr->f[i - 1];
			if (i > 0)
				stride /= pr->f[i - 1];
			v->stride = stride;
		}
		/* replace a by its parts in the order */
		sc_nest_split(ss->order, &ss->norder, pos, first, n);
		return;
	}
	case SC_FUSE: {
		int pa = order_pos(ss, pr->a), pb = order_pos(ss, pr->b);
		if (pa < 0 || pb != pa + 1)
			fail(L, "fuse of loops that are not adjacent");
		if (!const_bound(st, ss, pr->a) || !const_bound(st, ss, pr->b))
			fail(L, "fuse of a loop with a tail");
		if (ss->niv == SC_MAXLOOP)
			fail(L, "too many loops");
		int l = ss->niv++;
		iv *v = &ss->ivs[l];
		memset(v, 0, sizeof *v);
		v->name = tk_arena_printf(&L->f->arena, "%s_%s", ss->ivs[pr->a].name, ss->ivs[pr->b].name);
		v->kind = IV_FUSED;
		v->fa = pr->a;
		v->fb = pr->b;
		v->extent = ss->ivs[pr->a].extent * ss->ivs[pr->b].extent;
		v->parent = v->split = -1;
		ss->ivs[pr->a].parent = ss->ivs[pr->b].parent = l;
		sc_nest_fuse(ss->order, &ss->norder, pa, pb, l);
		return;
	}
	case SC_REORDER: {
		int pos[SC_MAXLOOP], rc = sc_nest_find(ss->order, ss->norder, pr->order, pr->n, pos);
		if (rc == -1)
			fail(L, "reorder of a loop that is not a leaf");
		if (rc == -2)
			fail(L, "reorder names a loop twice");
		sc_nest_reorder(ss->order, pos, pr->order, pr->n);
		return;
	}
	case SC_PARALLEL:
	case SC_VECTORIZE:
	case SC_UNROLL:
		if (!is_leaf(ss, pr->a))
			fail(L, "%s of a loop that is not a leaf", sc_kind_name(pr->kind));
		ss->ivs[pr->a].ann = pr->kind == SC_PARALLEL ? ANN_PARALLEL
		                   : pr->kind == SC_VECTORIZE ? ANN_VECTORIZE : ANN_UNROLL;
		return;
	case SC_CACHE_WRITE:
		if (!is_leaf(ss, pr->a))
			fail(L, "cache_write at a loop that is not a leaf");
		ss->cache_at = pr->a;
		return;
	case SC_PACK:
		if (pr->a < 0 || pr->a >= st->nread)
			fail(L, "pack of an unknown read");
		if (pr->n && !is_leaf(ss, pr->b))
			fail(L, "pack at a loop that is not a leaf");
		ss->pack[pr->a] = 1;
		ss->pack_at[pr->a] = pr->n ? pr->b : -1;
		return;
	case SC_PRAGMA:
		ss->unroll_max = pr->f[0];
		ss->explicit = pr->f[1] != 0;
		return;
	}
	fail(L, "unknown primitive");
}

/* ---- values of loops and axes --------------------------------------- */

static ir_expr *loop_value(lw *L, const stage_state *ss, int l)
{
	const iv *v = &ss->ivs[l];
	if (v->parent >= 0) {
		const iv *fz = &ss->ivs[v->parent];
		ir_expr *fv = loop_value(L, ss, v->parent);
		int64_t eb = ss->ivs[fz->fb].extent;
		if (fz->fa == l)
			return ir_bin(L->f, IR_DIV, fv, ir_int(L->f, eb));
		return ir_bin(L->f, IR_MOD, fv, ir_int(L->f, eb));
	}
	if (!v->loop)
		fail(L, "loop %s used outside its nest (check the order of split parts)", v->name);
	return ir_var(L->f, v->loop);
}

/* Order position of the loop that holds leaf l (l, or what it was fused into). */
static int leaf_pos(const stage_state *ss, int l)
{
	while (ss->ivs[l].parent >= 0)
		l = ss->ivs[l].parent;
	return order_pos(ss, l);
}

/* Value of axis a from its leaves outside order position pos, leaving out
 * leaf skip; NULL if a leaf with more than one iteration is at pos or inside
 * (one-iteration leaves there count 0). */
static ir_expr *outer_axis_value(lw *L, const stage_state *ss, int a, int pos, int skip)
{
	const iv *v = &ss->ivs[a];
	int first = v->split < 0 ? a : v->split;
	int n = v->split < 0 ? 1 : ss->ivs[v->split].nparts;
	ir_expr *e = ir_int(L->f, 0);
	for (int l = first; l < first + n; l++) {
		if (l == skip)
			continue;
		if (leaf_pos(ss, l) >= pos) {
			if (ss->ivs[l].extent > 1)
				return NULL;
			continue;
		}
		int64_t stride = v->split < 0 ? 1 : ss->ivs[l].stride;
		e = ir_bin(L->f, IR_ADD, e, ir_bin(L->f, IR_MUL, loop_value(L, ss, l), ir_int(L->f, stride)));
	}
	return e;
}

/* Value of axis a from the loops that hold it. */
static ir_expr *axis_value(lw *L, const stage_state *ss, int a)
{
	return outer_axis_value(L, ss, a, SC_MAXLOOP, -1);
}

/* Extent expression of leaf l given the loops currently bound. */
static ir_expr *leaf_extent(lw *L, const te_stage *st, const stage_state *ss, int l)
{
	const iv *v = &ss->ivs[l];
	if (const_bound(st, ss, l))
		return ir_int(L->f, v->extent);
	/* min(f, ceil((E - base) / S)) */
	ir_expr *base = ir_int(L->f, 0);
	for (int j = v->first; j < v->first + v->part; j++)
		base = ir_bin(L->f, IR_ADD, base,
		              ir_bin(L->f, IR_MUL, loop_value(L, ss, j), ir_int(L->f, ss->ivs[j].stride)));
	int64_t e = st->axis[v->axis].extent;
	ir_expr *rem = ir_bin(L->f, IR_SUB, ir_int(L->f, e + v->stride - 1), base);
	return ir_bin(L->f, IR_MIN, ir_int(L->f, v->extent),
	              ir_bin(L->f, IR_DIV, rem, ir_int(L->f, v->stride)));
}

static int leaf_is_reduce(const te_stage *st, const stage_state *ss, int l)
{
	const iv *v = &ss->ivs[l];
	if (v->kind == IV_FUSED)
		return leaf_is_reduce(st, ss, v->fa) || leaf_is_reduce(st, ss, v->fb);
	return st->axis[v->axis].reduce;
}

/* ---- expressions from the tensor expression ------------------------- */

/* Index expression e over the stage axes; EDIV guards are and-ed into *guard. */
static ir_expr *conv_index(lw *L, const stage_state *ss, const te_expr *e, ir_expr **guard)
{
	ir_func *f = L->f;
	switch (e->kind) {
	case TE_CONST: return ir_int(f, e->val);
	case TE_AXIS: return axis_value(L, ss, (int)e->val);
	}
	ir_expr *a = conv_index(L, ss, e->a, guard), *b = conv_index(L, ss, e->b, guard);
	switch (e->kind) {
	case TE_ADD: return ir_bin(f, IR_ADD, a, b);
	case TE_SUB: return ir_bin(f, IR_SUB, a, b);
	case TE_MUL: return ir_bin(f, IR_MUL, a, b);
	case TE_DIV: return ir_bin(f, IR_DIV, a, b);
	case TE_MOD: return ir_bin(f, IR_MOD, a, b);
	case TE_EDIV:
		*guard = ir_bin(f, IR_AND, *guard, ir_divides(f, a, e->b->val));
		return ir_bin(f, IR_DIV, a, b);
	}
	return NULL;
}

/* Pack layout of one dimension of a read. */
enum { PD_SPLIT, PD_PLAIN, PD_CONST, PD_CORE };
typedef struct pdim {
	int kind;
	int axis;            /* PD_SPLIT, PD_PLAIN */
	int64_t f;           /* PD_SPLIT: inner factor */
	int64_t lo, ext;     /* PD_CORE: range of the core expression */
	int64_t div;         /* PD_CORE: ediv divisor, 1 if none */
	const te_expr *core; /* PD_CORE */
	int outside;         /* PD_SPLIT, PD_PLAIN: the axis has parts outside the
	                        loop the panel is made in; they index the source */
} pdim;

typedef struct packinfo {
	ir_buf *buf;
	int at;                   /* order position of the loop it is made in, -1: before */
	int ndim;                 /* source dims */
	pdim dim[TE_MAXDIM];
	int outer_of[TE_MAXDIM];  /* packed dim holding the outer part of source dim d */
	int inner_of[TE_MAXDIM];  /* packed dim of the inner part (PD_SPLIT), else -1 */
} packinfo;

/* A panel packed inside a loop lives on the stack of the thread that runs
 * the iteration, at most SP_PANEL_MAX_FLOATS (a core's L2 cache); a larger
 * one is copied whole before the nest instead. */

/* Is split part l of a packed dimension outside the loop at order position
 * at (the panel is made inside it)? The innermost part never is: it is the
 * panel's last dimension. */
static int part_outside(const stage_state *ss, int l, int at)
{
	const iv *v = &ss->ivs[l];
	return at >= 0 && v->part < ss->ivs[v->first].nparts - 1 && leaf_pos(ss, l) <= at;
}

/* Parts of axis a the panel index of dimension pd runs over: all but the
 * outside ones, and for a tiled dimension all but the innermost. */
static int part_in_panel(const stage_state *ss, const pdim *pd, int l, int at)
{
	int n = ss->ivs[ss->ivs[pd->axis].split].nparts;
	if (pd->kind == PD_SPLIT && ss->ivs[l].part == n - 1)
		return 0;
	return !(pd->outside && part_outside(ss, l, at));
}

/* The panel index of dimension pd (in units of its tile for PD_SPLIT) from
 * the current loops (L == NULL: none), and in *top the largest one. */
static ir_expr *panel_index(lw *L, const stage_state *ss, const pdim *pd, int at, int64_t *top)
{
	const iv *v = &ss->ivs[pd->axis];
	int64_t unit = pd->kind == PD_SPLIT ? pd->f : 1;
	ir_expr *e = L ? ir_int(L->f, 0) : NULL;
	*top = 0;
	for (int l = v->split; l < v->split + ss->ivs[v->split].nparts; l++)
		if (part_in_panel(ss, pd, l, at)) {
			*top += (ss->ivs[l].extent - 1) * (ss->ivs[l].stride / unit);
			if (L)
				e = ir_bin(L->f, IR_ADD, e, ir_bin(L->f, IR_MUL, loop_value(L, ss, l),
				                                   ir_int(L->f, ss->ivs[l].stride / unit)));
		}
	return e;
}

/* The source index the parts outside the panel's loop add to dimension pd. */
static ir_expr *panel_base(lw *L, const stage_state *ss, const pdim *pd, int at)
{
	const iv *v = &ss->ivs[pd->axis];
	ir_expr *e = ir_int(L->f, 0);
	for (int l = v->split; l < v->split + ss->ivs[v->split].nparts; l++)
		if (part_outside(ss, l, at))
			e = ir_bin(L->f, IR_ADD, e, ir_bin(L->f, IR_MUL, loop_value(L, ss, l),
			                                   ir_int(L->f, ss->ivs[l].stride)));
	return e;
}

/* The layout of packed read rd: before the nest, the whole tensor, a split
 * spatial dimension tiled by its innermost part (padded to whole tiles);
 * made at the loop ss->pack_at[r], only the panel of one of its iterations:
 * a dimension whose axis has parts outside that loop spans the parts inside
 * (padded by the tails of non-dividing splits). A panel that restricts no
 * dimension, or is larger than SP_PANEL_MAX_FLOATS, is made before the
 * nest. */
static void pack_layout(lw *L, const te_stage *st, const stage_state *ss, const te_read *rd,
                        packinfo *pk, int si, int r)
{
	const te_tensor *t = &L->p->tensor[rd->tensor];
	int64_t ext[TE_MAXAXIS];
	int64_t shape[IR_MAXDIM], top;
	int nd = 0, restricted = 0;
	pk->at = ss->pack_at[r] >= 0 ? leaf_pos(ss, ss->pack_at[r]) : -1;
	/* a spatial axis whose innermost part does not divide it runs to a
	 * multiple of that part: a whole last tile (full_tile) reads the
	 * packed copy that far, and the packing fills what lies past the
	 * source with zeros (the outer parts' tails are cut by their bounds) */
	for (int a = 0; a < st->naxis; a++) {
		ext[a] = st->axis[a].extent;
		const iv *v = &ss->ivs[a];
		if (!st->axis[a].reduce && v->split >= 0) {
			int64_t t = ss->ivs[v->split + ss->ivs[v->split].nparts - 1].extent;
			ext[a] = (ext[a] + t - 1) / t * t;
		}
	}
	pk->ndim = t->ndim;
	for (int d = 0; d < t->ndim; d++) {
		const te_expr *e = rd->idx[d];
		pdim *pd = &pk->dim[d];
		memset(pd, 0, sizeof *pd);
		pd->div = 1;
		if (e->kind == TE_AXIS) {
			int a = (int)e->val;
			const iv *v = &ss->ivs[a];
			pd->axis = a;
			pd->kind = PD_PLAIN;
			if (v->split < 0)
				continue;
			const iv *last = &ss->ivs[v->split + ss->ivs[v->split].nparts - 1];
			if (!st->axis[a].reduce && st->axis[a].extent == t->shape[d] && last->extent > 1) {
				pd->kind = PD_SPLIT;
				pd->f = last->extent;
			}
			for (int l = v->split; l < v->split + ss->ivs[v->split].nparts; l++)
				if (part_outside(ss, l, pk->at) && ss->ivs[l].extent > 1)
					pd->outside = 1;
			restricted |= pd->outside;
		} else if (e->kind == TE_CONST) {
			pd->kind = PD_CONST;
		} else {
			pd->kind = PD_CORE;
			pd->core = e;
			if (e->kind == TE_EDIV) {
				pd->core = e->a;
				pd->div = e->b->val;
			}
			int64_t hi;
			te_expr_range(pd->core, ext, &pd->lo, &hi);
			pd->ext = hi - pd->lo + 1;
		}
	}
	/* layout: outer parts of tiled dims, the other dims, inner parts */
	for (int pass = 0; pass < 2; pass++)
		for (int d = 0; d < t->ndim; d++) {
			pdim *pd = &pk->dim[d];
			if ((pd->kind == PD_SPLIT) != (pass == 0))
				continue;
			pk->inner_of[d] = -1;
			pk->outer_of[d] = nd;
			if (pd->outside) {
				panel_index(NULL, ss, pd, pk->at, &top);
				shape[nd++] = top + 1;
			} else if (pd->kind == PD_SPLIT) {
				shape[nd++] = (t->shape[d] + pd->f - 1) / pd->f;
			} else {
				shape[nd++] = pd->kind == PD_PLAIN ? t->shape[d]
				              : pd->kind == PD_CONST ? 1 : pd->ext;
			}
		}
	for (int d = 0; d < t->ndim; d++)
		if (pk->dim[d].kind == PD_SPLIT) {
			pk->inner_of[d] = nd;
			shape[nd++] = pk->dim[d].f;
		}
	int64_t size = 1;
	for (int d = 0; d < nd; d++)
		size *= shape[d];
	if (pk->at >= 0 && (!restricted || size > SP_PANEL_MAX_FLOATS)) {
		stage_state whole = *ss;
		whole.pack_at[r] = -1;
		pack_layout(L, st, &whole, rd, pk, si, r);
		return;
	}
	char name[64];
	snprintf(name, sizeof name, "%s_p%d_%d", t->name, si, r);
	pk->buf = new_buf(L, name, pk->at >= 0 ? IRB_LOCAL : IRB_WORK, nd, shape);
}

/* The packed-buffer index of read rd at the current loops. */
static ir_expr *packed_load(lw *L, const stage_state *ss, const te_read *rd, const packinfo *pk)
{
	ir_func *f = L->f;
	ir_expr *idx[IR_MAXDIM];
	ir_expr *guard = NULL;
	int64_t top;
	for (int d = 0; d < pk->ndim; d++) {
		const pdim *pd = &pk->dim[d];
		switch (pd->kind) {
		case PD_SPLIT: {
			const iv *v = &ss->ivs[pd->axis];
			int n = ss->ivs[v->split].nparts;
			idx[pk->outer_of[d]] = panel_index(L, ss, pd, pk->at, &top);
			idx[pk->inner_of[d]] = loop_value(L, ss, v->split + n - 1);
			break;
		}
		case PD_PLAIN:
			idx[pk->outer_of[d]] = pd->outside ? panel_index(L, ss, pd, pk->at, &top)
			                                   : axis_value(L, ss, pd->axis);
			break;
		case PD_CONST: idx[pk->outer_of[d]] = ir_int(f, 0); break;
		case PD_CORE:
			idx[pk->outer_of[d]] = ir_bin(f, IR_SUB, conv_index(L, ss, pd->core, &guard),
			                              ir_int(f, pd->lo));
			break;
		}
	}
	return ir_load(f, pk->buf, idx);
}

/* The fill nest of a packed buffer (a panel: at the current loops). */
static ir_stmt *pack_nest(lw *L, const stage_state *ss, const te_read *rd, const packinfo *pk)
{
	ir_func *f = L->f;
	const te_tensor *t = &L->p->tensor[rd->tensor];
	ir_buf *pb = pk->buf;
	ir_stmt *loops[IR_MAXDIM];
	ir_stmt *outer = NULL, **link = &outer;
	for (int d = 0; d < pb->ndim; d++) {
		ir_stmt *s = ir_stmt_new(f, IR_FOR);
		s->var = tk_arena_printf(&f->arena, "%s_%d", pb->name, d);
		s->extent = ir_int(f, pb->shape[d]);
		s->max_extent = pb->shape[d];
		if (d == 0 && pk->at < 0)
			s->ann = ANN_PARALLEL;
		if (d == pb->ndim - 1 && pk->at >= 0)
			s->ann = ANN_VECTORIZE;
		loops[d] = s;
		*link = s;
		link = &s->body;
	}
	ir_expr *src[TE_MAXDIM], *guard = NULL;
	for (int d = 0; d < pk->ndim; d++) {
		const pdim *pd = &pk->dim[d];
		ir_expr *o = ir_var(f, loops[pk->outer_of[d]]);
		switch (pd->kind) {
		case PD_SPLIT:
			src[d] = ir_bin(f, IR_ADD, ir_bin(f, IR_MUL, o, ir_int(f, pd->f)),
			                ir_var(f, loops[pk->inner_of[d]]));
			break;
		case PD_PLAIN:
			src[d] = o;
			break;
		case PD_CONST:
			src[d] = ir_int(f, rd->idx[d]->val);
			break;
		case PD_CORE:
			src[d] = ir_bin(f, IR_ADD, o, ir_int(f, pd->lo));
			if (pd->div > 1) {
				guard = ir_bin(f, IR_AND, guard, ir_divides(f, src[d], pd->div));
				src[d] = ir_bin(f, IR_DIV, src[d], ir_int(f, pd->div));
			}
			break;
		}
		if (pd->outside)
			src[d] = ir_bin(f, IR_ADD, src[d], panel_base(L, ss, pd, pk->at));
		guard = ir_bin(f, IR_AND, guard, ir_inrange(f, src[d], 0, t->shape[d]));
	}
	ir_expr *val = ir_load(f, L->tbuf[rd->tensor], src);
	if (guard)
		val = ir_bin(f, IR_SELECT, guard, val);
	ir_expr *dst[IR_MAXDIM];
	for (int d = 0; d < pb->ndim; d++)
		dst[d] = ir_var(f, loops[d]);
	ir_stmt *st = ir_stmt_new(f, IR_STORE);
	st->buf = pb;
	st->idx = tk_arena_alloc(&f->arena, sizeof(ir_expr *) * (size_t)pb->ndim);
	memcpy(st->idx, dst, sizeof(ir_expr *) * (size_t)pb->ndim);
	st->value = val;
	*link = st;
	return outer;
}

/* Plain nest over every element of buffer b: b[i] = fn(b[i]) (relu) or 0. */
static ir_stmt *elementwise_nest(lw *L, ir_buf *b, int relu)
{
	ir_func *f = L->f;
	ir_stmt *loops[IR_MAXDIM], *outer = NULL, **link = &outer;
	for (int d = 0; d < b->ndim; d++) {
		ir_stmt *s = ir_stmt_new(f, IR_FOR);
		s->var = tk_arena_printf(&f->arena, "%s_e%d", b->name, d);
		s->extent = ir_int(f, b->shape[d]);
		s->max_extent = b->shape[d];
		s->ann = d == 0 ? ANN_PARALLEL : d == b->ndim - 1 ? ANN_VECTORIZE : ANN_NONE;
		loops[d] = s;
		*link = s;
		link = &s->body;
	}
	ir_expr *idx[IR_MAXDIM];
	for (int d = 0; d < b->ndim; d++)
		idx[d] = ir_var(f, loops[d]);
	ir_stmt *st = ir_stmt_new(f, IR_STORE);
	st->buf = b;
	st->idx = tk_arena_alloc(&f->arena, sizeof(ir_expr *) * (size_t)b->ndim);
	memcpy(st->idx, idx, sizeof(ir_expr *) * (size_t)b->ndim);
	if (relu) {
		ir_expr *v = ir_bin(f, IR_FRELU, ir_load(f, b, idx), NULL);
		st->value = v;
	} else {
		st->value = ir_fconst(f, 0);
	}
	*link = st;
	return outer;
}

/* ---- building a stage ----------------------------------------------- */

typedef struct stage_ctx {
	lw *L;
	const te_stage *st;
	stage_state *ss;
	int si;
	packinfo pk[TE_MAXREAD];
	ir_buf *out;
	ir_buf *acc;        /* NULL without cache_write */
	int acc_dims;       /* leaves that index acc, in order */
	int acc_leaf[SC_MAXLOOP];
	int partial;        /* reduction loops outside the accumulator */
	int in_tile;        /* building the nests below the cache_write loop */
	int padded[TE_MAXAXIS]; /* axes whose tile runs past the extent (see full_tile) */
	/* the tightened loop (and its leaf) that keeps index d of read r in
	 * range while it is the loop bound to that leaf: no guard needed */
	const ir_stmt *tight[TE_MAXREAD][TE_MAXDIM];
	int tight_leaf[TE_MAXREAD][TE_MAXDIM];
} stage_ctx;

/* ---- tightened reduction loops ---------------------------------------
 *
 * A read whose index leaves the tensor reads 0 (padding), and every read is
 * a factor of the product the stage sums, so those terms add nothing. A
 * reduction loop whose variable appears in such an index with coefficient 1
 * runs over only the values that keep the index in range, when that range
 * depends on loops outside it alone: for a 3x3 convolution with one output
 * row per accumulator tile, ry runs from max(0, pad - y) to min(3, H + pad
 * - y), and the rows of padding cost nothing (oneDNN skips them the same
 * way). */

/* Index e with axis a taken as 0 and the other axes from the loops outside
 * pos; *coef gets a's coefficient. NULL if e is not affine in a or needs a
 * loop at pos or inside. */
static ir_expr *outer_index(lw *L, const stage_state *ss, const te_expr *e, int a, int pos,
                            int64_t *coef)
{
	ir_func *f = L->f;
	int64_t ca, cb, k;
	*coef = 0;
	switch (e->kind) {
	case TE_CONST: return ir_int(f, e->val);
	case TE_AXIS:
		if (e->val == a) {
			*coef = 1;
			return ir_int(f, 0);
		}
		return outer_axis_value(L, ss, (int)e->val, pos, -1);
	}
	ir_expr *x = outer_index(L, ss, e->a, a, pos, &ca);
	ir_expr *y = x ? outer_index(L, ss, e->b, a, pos, &cb) : NULL;
	if (!y)
		return NULL;
	switch (e->kind) {
	case TE_ADD: *coef = ca + cb; return ir_bin(f, IR_ADD, x, y);
	case TE_SUB: *coef = ca - cb; return ir_bin(f, IR_SUB, x, y);
	case TE_MUL:
		if (ca && cb)
			return NULL;
		if ((ca && !ir_const(y, &k)) || (cb && !ir_const(x, &k)))
			return NULL;
		*coef = ca ? ca * k : cb ? cb * k : 0;
		return ir_bin(f, IR_MUL, x, y);
	}
	if (ca || cb)
		return NULL;
	return ir_bin(f, e->kind == TE_MOD ? IR_MOD : IR_DIV, x, y);
}

/* Tighten loop s of reduction leaf l at order position pos (see above),
 * unless its nest is small: a loop of at most TIGHT_MIN_STEPS steps with the
 * loops inside it (vector lanes counting once) is one the compiler unrolls
 * whole, and that constant trip count is worth more than the padding skipped
 * (measured on the depthwise convolutions' 3x3 taps over a 7-wide tile). */
#define TIGHT_MIN_STEPS 64
static void tighten(stage_ctx *c, int l, int pos, ir_stmt *s)
{
	lw *L = c->L;
	ir_func *f = L->f;
	const te_stage *st = c->st;
	iv *v = &c->ss->ivs[l];
	if (!st->accumulate || v->kind == IV_FUSED || (v->kind == IV_PART && v->stride != 1))
		return;
	int64_t steps = v->extent;
	for (int i = pos + 1; i < c->ss->norder && steps <= TIGHT_MIN_STEPS; i++)
		if (c->ss->ivs[c->ss->order[i]].ann != ANN_VECTORIZE)
			steps *= c->ss->ivs[c->ss->order[i]].extent;
	if (steps <= TIGHT_MIN_STEPS)
		return;
	int a = v->axis;
	ir_expr *base = outer_axis_value(L, c->ss, a, pos, l);
	if (!base)
		return;
	int64_t ext[TE_MAXAXIS];
	for (int i = 0; i < st->naxis; i++)
		ext[i] = st->axis[i].extent;
	ir_expr *low = NULL, *hi = NULL; /* the loop starts at max(0, -low) */
	for (int r = 0; r < st->nread; r++) {
		const te_read *rd = &st->read[r];
		const te_tensor *t = &L->p->tensor[rd->tensor];
		for (int d = 0; d < t->ndim; d++) {
			int64_t rlo, rhi, coef;
			te_expr_range(rd->idx[d], ext, &rlo, &rhi);
			if (rlo >= 0 && rhi < t->shape[d])
				continue;
			ir_expr *rest = outer_index(L, c->ss, rd->idx[d], a, pos, &coef);
			if (!rest || coef != 1)
				continue;
			/* 0 <= loop + rest < shape */
			rest = ir_bin(f, IR_ADD, rest, base);
			ir_expr *h1 = ir_bin(f, IR_SUB, ir_int(f, t->shape[d]), rest);
			low = ir_bin(f, IR_MIN, low ? low : ir_int(f, 0), rest);
			hi = hi ? ir_bin(f, IR_MIN, hi, h1) : h1;
			c->tight[r][d] = s;
			c->tight_leaf[r][d] = l;
		}
	}
	if (!low)
		return;
	s->begin = ir_bin(f, IR_SUB, ir_int(f, 0), low);
	s->extent = ir_bin(f, IR_MIN, s->extent, hi);
}

/* ---- whole accumulator tiles ------------------------------------------
 *
 * A register tile that does not divide its axis (6 rows of 1024) would end
 * in a shorter tile, and a loop whose trip count is min(6, 1024 - i) cannot
 * be unrolled into registers: the accumulator becomes a memory array on
 * every tile, not just the last. Instead the tile is always computed
 * whole, reading zeros past the edge, and only the write-back is guarded,
 * as BLAS micro-kernels do. That is safe where every read that depends on
 * the axis either checks its range (unpacked reads are guarded wherever
 * the range analysis cannot rule an overrun out), reads a packed panel
 * tiled by this very part, whose padding the packing filled with zeros, or
 * reads a packed copy along an expression of the axis (a convolution's
 * input window, x*stride + rx - pad), which pack_layout makes long enough
 * for the whole last tile and fills past the source with zeros. */

static int te_uses_axis(const te_expr *e, int a)
{
	if (!e || e->kind == TE_CONST)
		return 0;
	if (e->kind == TE_AXIS)
		return e->val == a;
	return te_uses_axis(e->a, a) || te_uses_axis(e->b, a);
}

/* May spatial leaf l below the cache_write run its whole extent? */
static int full_tile(const stage_ctx *c, int l)
{
	const iv *v = &c->ss->ivs[l];
	if (v->kind != IV_PART || v->part != c->ss->ivs[v->first].nparts - 1 ||
	    c->st->axis[v->axis].reduce || const_bound(c->st, c->ss, l))
		return 0;
	for (int r = 0; r < c->st->nread; r++) {
		if (!c->ss->pack[r])
			continue;
		const te_read *rd = &c->st->read[r];
		for (int d = 0; d < c->pk[r].ndim; d++) {
			const pdim *pd = &c->pk[r].dim[d];
			if (te_uses_axis(rd->idx[d], v->axis) && pd->kind != PD_CORE &&
			    (pd->kind != PD_SPLIT || pd->axis != v->axis))
				return 0;
		}
	}
	return 1;
}

/* Where the tile's element is inside the output: NULL if everywhere. */
static ir_expr *tile_guard(stage_ctx *c)
{
	ir_expr *g = NULL;
	for (int a = 0; a < c->st->nspatial; a++)
		if (c->padded[a])
			g = ir_bin(c->L->f, IR_AND, g,
			           ir_inrange(c->L->f, axis_value(c->L, c->ss, a), 0, c->st->axis[a].extent));
	return g;
}

/* A new IR loop for leaf l at order position pos, bound to it; a
 * reduction loop of a nest that sums products is tightened, and a spatial
 * tile loop below the cache_write may run whole (full_tile). */
static ir_stmt *leaf_loop(stage_ctx *c, int l, int pos, int sums)
{
	ir_func *f = c->L->f;
	iv *v = &c->ss->ivs[l];
	ir_stmt *s = ir_stmt_new(f, IR_FOR);
	s->var = v->name;
	s->extent = leaf_extent(c->L, c->st, c->ss, l);
	if (c->in_tile && full_tile(c, l)) {
		s->extent = ir_int(f, v->extent);
		c->padded[v->axis] = 1;
	}
	s->max_extent = v->extent;
	s->ann = v->ann;
	if (s->ann == ANN_UNROLL)
		s->explicit_unroll = c->ss->explicit;
	v->loop = s;
	if (sums && v->extent > 1 && leaf_is_reduce(c->st, c->ss, l))
		tighten(c, l, pos, s);
	return s;
}

static ir_expr **out_index(stage_ctx *c)
{
	ir_func *f = c->L->f;
	ir_expr **idx = tk_arena_alloc(&f->arena, sizeof(ir_expr *) * (size_t)c->st->nspatial);
	for (int a = 0; a < c->st->nspatial; a++)
		idx[a] = axis_value(c->L, c->ss, a);
	return idx;
}

static ir_expr **acc_index(stage_ctx *c)
{
	ir_func *f = c->L->f;
	ir_expr **idx = tk_arena_alloc(&f->arena, sizeof(ir_expr *) * (size_t)(c->acc_dims + 1));
	for (int d = 0; d < c->acc_dims; d++)
		idx[d] = loop_value(c->L, c->ss, c->acc_leaf[d]);
	if (c->acc_dims == 0)
		idx[0] = ir_int(f, 0);
	return idx;
}

static ir_expr *body_value(stage_ctx *c)
{
	lw *L = c->L;
	ir_func *f = L->f;
	ir_expr *prod = NULL;
	for (int r = 0; r < c->st->nread; r++) {
		const te_read *rd = &c->st->read[r];
		ir_expr *v;
		if (c->ss->pack[r]) {
			v = packed_load(L, c->ss, rd, &c->pk[r]);
		} else {
			const te_tensor *t = &L->p->tensor[rd->tensor];
			ir_expr *idx[TE_MAXDIM], *guard = NULL;
			for (int d = 0; d < t->ndim; d++) {
				idx[d] = conv_index(L, c->ss, rd->idx[d], &guard);
				if (!c->tight[r][d] || c->ss->ivs[c->tight_leaf[r][d]].loop != c->tight[r][d])
					guard = ir_bin(f, IR_AND, guard, ir_inrange(f, idx[d], 0, t->shape[d]));
			}
			v = ir_load(f, L->tbuf[rd->tensor], idx);
			if (guard)
				v = ir_bin(f, IR_SELECT, guard, v);
		}
		prod = prod ? ir_bin(f, IR_FMUL, prod, v) : v;
	}
	return prod;
}

static ir_stmt *store(ir_func *f, ir_buf *b, ir_expr **idx, ir_expr *value, int accum)
{
	ir_stmt *s = ir_stmt_new(f, IR_STORE);
	s->buf = b;
	s->idx = idx;
	s->value = value;
	s->accum = accum;
	return s;
}

/* Nest over leaves order[from..to) (only spatial ones if spatial_only),
 * with innermost statement made by mk(c, which). Returns the outermost
 * statement. */
enum { MK_INIT, MK_UPDATE, MK_WRITEBACK, MK_DIRECT };

static ir_stmt *make_inner(stage_ctx *c, int which)
{
	ir_func *f = c->L->f;
	const te_stage *st = c->st;
	switch (which) {
	case MK_INIT: {
		ir_expr *v = ir_fconst(f, 0);
		if (c->partial) {
			ir_expr *g = tile_guard(c);
			v = ir_load(f, c->out, out_index(c));
			if (g)
				v = ir_bin(f, IR_SELECT, g, v);
		}
		return store(f, c->acc, acc_index(c), v, 0);
	}
	case MK_UPDATE:
		return store(f, c->acc, acc_index(c), body_value(c), st->accumulate);
	case MK_WRITEBACK: {
		ir_expr *v = ir_load(f, c->acc, acc_index(c));
		if (st->epilogue == TE_EPI_RELU && !c->partial)
			v = ir_bin(f, IR_FRELU, v, NULL);
		ir_stmt *s = store(f, c->out, out_index(c), v, 0);
		s->cond = tile_guard(c);
		return s;
	}
	default: {
		ir_expr *v = body_value(c);
		if (!st->accumulate && st->epilogue == TE_EPI_RELU)
			v = ir_bin(f, IR_FRELU, v, NULL);
		return store(f, c->out, out_index(c), v, st->accumulate);
	}
	}
}

static ir_stmt *nest(stage_ctx *c, int from, int to, int spatial_only, int which);

/* The body below the cache_write loop. */
static ir_stmt *acc_scope(stage_ctx *c, int from)
{
	ir_func *f = c->L->f;
	int to = c->ss->norder;
	ir_stmt *al = ir_stmt_new(f, IR_ALLOC);
	al->buf = c->acc;
	c->in_tile = 1;
	ir_stmt *init = nest(c, from, to, 1, MK_INIT);
	ir_stmt *upd = nest(c, from, to, 0, MK_UPDATE);
	ir_stmt *wb = nest(c, from, to, 1, MK_WRITEBACK);
	c->in_tile = 0;
	init->next = upd;
	upd->next = wb;
	al->body = init;
	return al;
}

static ir_stmt *nest(stage_ctx *c, int from, int to, int spatial_only, int which)
{
	int pos = from;
	while (pos < to && spatial_only && leaf_is_reduce(c->st, c->ss, c->ss->order[pos]))
		pos++;
	if (pos == to)
		return make_inner(c, which);
	int l = c->ss->order[pos];
	ir_stmt *s = leaf_loop(c, l, pos, which == MK_UPDATE || which == MK_DIRECT);
	if (which == MK_DIRECT && c->acc && l == c->ss->cache_at)
		s->body = acc_scope(c, pos + 1);
	else
		s->body = nest(c, pos + 1, to, spatial_only, which);
	/* the panels packed in this loop's iterations, each in a local buffer */
	for (int r = 0; which == MK_DIRECT && r < c->st->nread; r++)
		if (c->ss->pack[r] && c->pk[r].at == pos) {
			ir_stmt *al = ir_stmt_new(c->L->f, IR_ALLOC);
			al->buf = c->pk[r].buf;
			al->body = pack_nest(c->L, c->ss, &c->st->read[r], &c->pk[r]);
			al->body->next = s->body;
			s->body = al;
		}
	return s;
}

/* Does index or value expression e read loop l's variable? */
static int expr_uses_loop(const ir_expr *e, const ir_stmt *l)
{
	if (!e)
		return 0;
	if (e->kind == IR_VAR)
		return e->loop == l;
	if (e->kind == IR_LOAD) {
		for (int d = 0; d < e->buf->ndim; d++)
			if (expr_uses_loop(e->idx[d], l))
				return 1;
		return 0;
	}
	return expr_uses_loop(e->a, l) || expr_uses_loop(e->b, l);
}

/* Does a guard in e (a select's condition) depend on loop l? */
static int guard_uses_loop(const ir_expr *e, const ir_stmt *l)
{
	if (!e || e->kind == IR_LOAD)
		return 0;
	if (e->kind == IR_SELECT && expr_uses_loop(e->a, l))
		return 1;
	return guard_uses_loop(e->a, l) || guard_uses_loop(e->b, l);
}

/* Does a guard of a statement in body s depend on loop l? */
static int body_guards_on(const ir_stmt *s, const ir_stmt *l)
{
	for (; s; s = s->next) {
		if (s->kind == IR_STORE ? expr_uses_loop(s->cond, l) || guard_uses_loop(s->value, l)
		                        : body_guards_on(s->body, l))
			return 1;
	}
	return 0;
}

/* TVM's auto_unroll_max_step: unroll loops whose whole iteration count
 * (with the loops inside) is at most max; max 1 keeps the others rolled
 * (the unroll knob's 1, space.c). Returns the count of s's nest.
 * With unroll_explicit, only the loops a padding guard depends on are
 * expanded in the C (the emitter then drops the reads of padding it can
 * tell apart, e.g. a depthwise kernel's edge taps); the others are left to
 * the compiler by a pragma. unroll_explicit still expands the register
 * tile's loops (leaf_loop), where expansion turns the accumulator into
 * named registers; expanding the loops around it as well only multiplied
 * the source the compiler has to read (BENCHMARKS.md, measurement
 * throughput). */
static int64_t auto_unroll(ir_stmt *s, int64_t max, int expl)
{
	int64_t worst = 1;
	for (; s; s = s->next) {
		if (s->kind == IR_STORE)
			continue;
		int64_t inner = auto_unroll(s->body, max, expl);
		int64_t n = s->kind == IR_FOR ? s->max_extent * inner : inner;
		int64_t e;
		if (s->kind == IR_FOR && s->ann == ANN_NONE && max > 0 && n <= max &&
		    ir_const(s->extent, &e)) {
			s->ann = ANN_UNROLL;
			s->explicit_unroll = expl && body_guards_on(s->body, s);
		} else if (s->kind == IR_FOR && s->ann == ANN_NONE && max == 1) {
			s->rolled = 1;
		}
		if (n > worst)
			worst = n;
	}
	return worst;
}

static ir_stmt **append(ir_stmt **link, ir_stmt *s)
{
	*link = s;
	while (s->next)
		s = s->next;
	return &s->next;
}

static ir_stmt **lower_stage(lw *L, int si, const sc_sched *sched, ir_stmt **link)
{
	ir_func *f = L->f;
	const te_stage *st = &L->p->stage[si];
	stage_state *ss = tk_arena_alloc(&f->arena, sizeof *ss);
	stage_ctx *c = tk_arena_alloc(&f->arena, sizeof *c);
	ss->niv = st->naxis;
	ss->norder = st->naxis;
	ss->cache_at = -1;
	for (int r = 0; r < TE_MAXREAD; r++)
		ss->pack_at[r] = -1;
	for (int a = 0; a < st->naxis; a++) {
		iv *v = &ss->ivs[a];
		v->name = st->axis[a].name;
		v->kind = IV_AXIS;
		v->axis = a;
		v->extent = st->axis[a].extent;
		v->parent = v->split = -1;
		ss->order[a] = a;
	}
	for (int i = 0; i < sched->nprim; i++)
		if (sched->prim[i].stage == si)
			apply(L, st, ss, &sched->prim[i]);

	/* split parts must nest outer to inner */
	for (int i = 0; i < ss->norder; i++) {
		const iv *v = &ss->ivs[ss->order[i]];
		if (v->kind == IV_PART && v->part > 0 && order_pos(ss, v->first + v->part - 1) > i)
			fail(L, "split part %s is outside %s", v->name, ss->ivs[v->first + v->part - 1].name);
	}

	c->L = L;
	c->st = st;
	c->ss = ss;
	c->si = si;
	c->out = L->tbuf[st->out];
	if (ss->cache_at >= 0) {
		int pos = order_pos(ss, ss->cache_at);
		int64_t shape[IR_MAXDIM], size = 1;
		for (int i = 0; i <= pos; i++)
			if (leaf_is_reduce(st, ss, ss->order[i]))
				c->partial = 1;
		for (int i = pos + 1; i < ss->norder; i++) {
			int l = ss->order[i];
			if (leaf_is_reduce(st, ss, l) || ss->ivs[l].extent == 1)
				continue;
			if (c->acc_dims == IR_MAXDIM)
				fail(L, "accumulator with more than %d dimensions", IR_MAXDIM);
			shape[c->acc_dims] = ss->ivs[l].extent;
			size *= ss->ivs[l].extent;
			c->acc_leaf[c->acc_dims++] = l;
		}
		if (size > ACC_MAX_FLOATS)
			fail(L, "accumulator tile of %lld floats is over 1 MiB", (long long)size);
		if (c->acc_dims == 0)
			shape[0] = 1;
		char name[48];
		snprintf(name, sizeof name, "%s_acc", L->p->tensor[st->out].name);
		c->acc = new_buf(L, name, IRB_LOCAL, c->acc_dims ? c->acc_dims : 1, shape);
	}
	int zero = st->accumulate && (!c->acc || c->partial);
	int late_epilogue = st->epilogue == TE_EPI_RELU && st->accumulate && (!c->acc || c->partial);

	if (zero)
		link = append(link, elementwise_nest(L, c->out, 0));
	for (int r = 0; r < st->nread; r++)
		if (ss->pack[r]) {
			pack_layout(L, st, ss, &st->read[r], &c->pk[r], si, r);
			if (c->pk[r].at < 0)
				link = append(link, pack_nest(L, ss, &st->read[r], &c->pk[r]));
		}
	ir_stmt *main = nest(c, 0, ss->norder, 0, MK_DIRECT);
	auto_unroll(main, ss->unroll_max, ss->explicit);
	link = append(link, main);
	if (late_epilogue)
		link = append(link, elementwise_nest(L, c->out, 1));
	return link;
}

int lower(const te_prog *p, const sc_sched *s, ir_func **out)
{
	*out = NULL;
	ir_func *f = calloc(1, sizeof *f);
	lw *L = calloc(1, sizeof *L);
	if (!f || !L) {
		free(f);
		free(L);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	tk_arena_init(&f->arena);
	f->prog = p;
	L->f = f;
	L->p = p;
	if (setjmp(f->arena.oom)) {
		ir_func_free(f);
		free(L);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	if (setjmp(L->fail)) {
		ir_func_free(f);
		free(L);
		return TK_EINVAL;
	}
	/* buffers: output first, then inputs in ABI order, constants, temps */
	const te_tensor *ot = &p->tensor[p->output];
	L->tbuf[p->output] = new_buf(L, ot->name, IRB_OUTPUT, ot->ndim, ot->shape);
	for (int i = 0; i < p->ninput; i++) {
		const te_tensor *t = &p->tensor[p->input[i]];
		ir_buf *b = new_buf(L, t->name, IRB_INPUT, t->ndim, t->shape);
		b->arg = i;
		L->tbuf[p->input[i]] = b;
	}
	for (int t = 0; t < p->ntensor; t++) {
		const te_tensor *tt = &p->tensor[t];
		if (tt->kind == TE_CONSTANT) {
			L->tbuf[t] = new_buf(L, tt->name, IRB_CONST, tt->ndim, tt->shape);
			L->tbuf[t]->values = tt->values;
		} else if (tt->kind == TE_TEMP) {
			L->tbuf[t] = new_buf(L, tt->name, IRB_WORK, tt->ndim, tt->shape);
		}
	}
	ir_stmt **link = &f->body;
	for (int si = 0; si < p->nstage; si++)
		link = lower_stage(L, si, s, link);
	free(L);
	*out = f;
	return TK_OK;
}
