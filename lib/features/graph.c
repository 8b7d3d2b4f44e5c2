/*
 * graph: MetaTune's graph features (Ryu and Sung, 2021): the main loop nest
 * of a configuration as a graph of a root node, for-loop nodes and
 * iteration-variable (iterval) nodes, placed in one shared super-graph so
 * that every operator's graph has the same nodes, in the same places, and
 * every vector has the same length. One model then reads every operator.
 *
 * The graph of a nest (the loops enclosing the main statement, as itervar
 * walks them; itervar.c): a root node; per loop a for node and an iterval
 * node; directed edges root -> for (every loop: control flow), for -> its
 * iterval (the loop's metadata), and for -> for from each loop to the loop
 * directly inside it (nesting: the loop order). The root and for nodes
 * carry only their type flag; an iterval node carries its loop's context
 * vector (itervar's values: extent, nest level, products, annotation, float
 * operations, and per buffer stride, access count and reuse).
 *
 * The super-graph. The generic template splits each axis of the main stage
 * into levels (spatial axes 3: outer, middle, register tile; reduction
 * axes 2) and fuses the outer spatial levels into one loop. The template's
 * axes, over every operator and every stage that can be an operator's
 * main stage (the one with the most work: Winograd's is its batched
 * product M for most shapes, its transforms U, V or inverse transform Y
 * for small ones), are matched to 12 canonical axes; each (canonical axis,
 * level) pair is a loop slot, and one more slot holds the fused loop (a
 * loop made of two or more axis parts):
 *
 *   axis  meaning                                kind    levels  loop slots
 *   n     batch                                  spatial 3       0-2
 *   k     output channel (GEMM columns)          spatial 3       3-5
 *   oh    output row (Winograd tile row)         spatial 3       6-8
 *   ow    output column (GEMM rows)              spatial 3       9-11
 *   kb    output-channel block (NCHWc)           spatial 3       12-14
 *   e     Winograd transform row                 spatial 3       15-17
 *   u     Winograd transform column              spatial 3       18-20
 *   cs    input channel kept (Winograd U, V)     spatial 3       21-23
 *   c     input channel (GEMM reduction)         reduce  2       24-25
 *   r     kernel row (transform row reduction)   reduce  2       26-27
 *   s     kernel column (transform column red.)  reduce  2       28-29
 *   cb    input-channel block (NCHWc)            reduce  2       30-31
 *   (fused outer spatial loop)                                   32
 *
 * Loop slot j (of J = 33) has for node 1 + j and iterval node 1 + J + j;
 * node 0 is the root: N = 67 nodes. An unsplit axis (an extent-1 batch)
 * is its level 0. Each operator's (and main stage's) mapping of its axes,
 * and of its reads into the buffer slots (data, weight, left and right
 * transform matrices), is a row of ops[] below:
 *
 *   operator (stage)        n k  oh ow kb e  u  cs c   r  s  cb  data wt left right
 *   dense, dense_relu         j     i              r             A    B
 *   batch_matmul            z j     i              r             A    B
 *   conv1d, _transpose      b f     x              rc    rx      I    W
 *   conv2d, _transpose      b f  y  x              rc ry rx      I    W
 *   depthwise_conv2d        b f  y  x                 ry rx      I    W
 *   conv2d_nchwc            b fo y  x  fi          rco ry rx rci I    W
 *   depthwise_conv2d_nchwc  b fo y  x  fi             ry rx      I    W
 *   conv2d_winograd (M)     b f  ty tx    e  u     q             V    U
 *   conv2d_winograd (U)       f           e  u  q     ry rx           W  G    G
 *   conv2d_winograd (V)     b    ty tx    e  u  q     ra rb      I       Bt   Bt
 *   conv2d_winograd (Y)     b f  ty tx    vy vx       ra rb      M       At   At
 *   layout_transform        b fo y  x  fi                        I
 *
 * Slots an operator or a configuration does not use are placeholders: all
 * zero, with no edges. An operator or main stage without a row, an axis
 * without a slot, more levels than its slot has, or a read without a
 * buffer slot make a graph larger than the super-graph: feat_length
 * refuses the space (TK_EINVAL).
 *
 * Vector layout (version 1), length N*F + 2*EMAX = 67*30 + 2*100 = 2210:
 *   out[i*F + f]  feature f of node i, F = 30:
 *     0  root flag           1 on node 0
 *     1  for flag            1 on the for node of a loop
 *     2  iterval flag        1 on the iterval node of a loop
 *     iterval nodes only, lg(x) = log2(1 + x) as in itervar:
 *     3  lg(extent)          4  nest level (1 = outermost), not logged
 *     5  lg(top-down product of extents)   6  lg(bottom-up product)
 *     7-10  annotation one-hot: none, parallel, vectorize, unroll
 *     11 lg(float additions per iteration)  12 lg(multiplications)
 *     13-15 written buffer (accumulator or output): lg(|stride|), lg(count),
 *           lg(reuse)
 *     16-18 the data read    19-21 the weight read
 *     22-24 the left transform read    25-27 the right transform read
 *     28 axis parts in the loop (1; 2 or more for the fused loop)
 *     29 reduction flag (1: a loop of a reduction axis)
 *   out[N*F + 2*e], out[N*F + 2*e + 1]  edge e: source and destination node
 *     (as floats), e < EMAX = 100; in the order, for each loop from the
 *     outermost: root -> its for, its for -> its iterval, and from the
 *     second loop on the enclosing loop's for -> its for. Unused pairs are
 *     (0, 0): no edge is a self loop, so a reader skips pairs with source
 *     == destination. A nest of L loops has 3L - 1 edges (at most 98).
 * A configuration that cannot be lowered is all zeros (*valid = 0).
 */
#include "feat_int.h"

#include <assert.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

enum { AX_N, AX_K, AX_OH, AX_OW, AX_KB, AX_E, AX_U, AX_CS, AX_C, AX_R, AX_S, AX_CB, AX_COUNT };
/* buffer slots of the reads (slot 0 is the written buffer) */
enum { BUF_DATA = 1, BUF_WEIGHT, BUF_LEFT, BUF_RIGHT, BUF_COUNT };

#define LOOP_SLOTS FEAT_GRAPH_LOOPS
#define FUSED_SLOT (LOOP_SLOTS - 1)
#define F FEAT_GRAPH_F
#define N FEAT_GRAPH_N
#define COL_CTX 3                /* the loop context: 10 values */
#define COL_BUF 13               /* buffer slot b: 3 values at 13 + 3b */
#define COL_PARTS (COL_BUF + FEAT_SLOT_VALUES * BUF_COUNT)
#define COL_REDUCE (COL_PARTS + 1)
_Static_assert(COL_REDUCE + 1 == F, "the node features fill FEAT_GRAPH_F");
_Static_assert(3 * LOOP_SLOTS - 1 <= FEAT_GRAPH_EMAX, "every nest's edges fit");

/* The canonical axes of the super-graph, in slot order. */
static const struct sg_axis {
	const char *name;
	int reduce, nlevel;
} axes[AX_COUNT] = {
	{ "n", 0, 3 }, { "k", 0, 3 }, { "oh", 0, 3 }, { "ow", 0, 3 }, { "kb", 0, 3 },
	{ "e", 0, 3 }, { "u", 0, 3 }, { "cs", 0, 3 }, { "c", 1, 2 }, { "r", 1, 2 },
	{ "s", 1, 2 }, { "cb", 1, 2 },
};

/* Each operator's mapping into the template: main-stage axis names to
 * canonical axes, and the buffer slot of each read of the main stage. */
typedef struct sg_map {
	const char *axis;
	int to;
} sg_map;

static const struct sg_op {
	const char *op, *stage;   /* the operator and its main stage's output */
	int buf[TE_MAXREAD];      /* BUF_* of each read, in body order */
	sg_map map[10];           /* ends at a NULL axis */
} ops[] = {
	{ "batch_matmul", "C", { BUF_DATA, BUF_WEIGHT },
	  { { "z", AX_N }, { "i", AX_OW }, { "j", AX_K }, { "r", AX_C } } },
	{ "conv1d", "O", { BUF_DATA, BUF_WEIGHT },
	  { { "b", AX_N }, { "f", AX_K }, { "x", AX_OW }, { "rc", AX_C }, { "rx", AX_S } } },
	{ "conv1d_transpose", "O", { BUF_DATA, BUF_WEIGHT },
	  { { "b", AX_N }, { "f", AX_K }, { "x", AX_OW }, { "rc", AX_C }, { "rx", AX_S } } },
	{ "conv2d", "O", { BUF_DATA, BUF_WEIGHT },
	  { { "b", AX_N }, { "f", AX_K }, { "y", AX_OH }, { "x", AX_OW }, { "rc", AX_C },
	    { "ry", AX_R }, { "rx", AX_S } } },
	{ "conv2d_nchwc", "O", { BUF_DATA, BUF_WEIGHT },
	  { { "b", AX_N }, { "fo", AX_K }, { "y", AX_OH }, { "x", AX_OW }, { "fi", AX_KB },
	    { "rco", AX_C }, { "ry", AX_R }, { "rx", AX_S }, { "rci", AX_CB } } },
	{ "conv2d_transpose", "O", { BUF_DATA, BUF_WEIGHT },
	  { { "b", AX_N }, { "f", AX_K }, { "y", AX_OH }, { "x", AX_OW }, { "rc", AX_C },
	    { "ry", AX_R }, { "rx", AX_S } } },
	{ "conv2d_winograd", "M", { BUF_WEIGHT, BUF_DATA },
	  { { "e", AX_E }, { "u", AX_U }, { "f", AX_K }, { "b", AX_N }, { "ty", AX_OH },
	    { "tx", AX_OW }, { "q", AX_C } } },
	{ "conv2d_winograd", "U", { BUF_LEFT, BUF_WEIGHT, BUF_RIGHT },
	  { { "e", AX_E }, { "u", AX_U }, { "f", AX_K }, { "q", AX_CS }, { "ry", AX_R },
	    { "rx", AX_S } } },
	{ "conv2d_winograd", "V", { BUF_LEFT, BUF_DATA, BUF_RIGHT },
	  { { "e", AX_E }, { "u", AX_U }, { "q", AX_CS }, { "b", AX_N }, { "ty", AX_OH },
	    { "tx", AX_OW }, { "ra", AX_R }, { "rb", AX_S } } },
	{ "conv2d_winograd", "Y", { BUF_LEFT, BUF_DATA, BUF_RIGHT },
	  { { "f", AX_K }, { "b", AX_N }, { "ty", AX_OH }, { "tx", AX_OW }, { "vy", AX_E },
	    { "vx", AX_U }, { "ra", AX_R }, { "rb", AX_S } } },
	{ "dense", "C", { BUF_DATA, BUF_WEIGHT },
	  { { "i", AX_OW }, { "j", AX_K }, { "r", AX_C } } },
	{ "dense_relu", "C", { BUF_DATA, BUF_WEIGHT },
	  { { "i", AX_OW }, { "j", AX_K }, { "r", AX_C } } },
	{ "depthwise_conv2d", "O", { BUF_DATA, BUF_WEIGHT },
	  { { "b", AX_N }, { "f", AX_K }, { "y", AX_OH }, { "x", AX_OW }, { "ry", AX_R },
	    { "rx", AX_S } } },
	{ "depthwise_conv2d_nchwc", "O", { BUF_DATA, BUF_WEIGHT },
	  { { "b", AX_N }, { "fo", AX_K }, { "y", AX_OH }, { "x", AX_OW }, { "fi", AX_KB },
	    { "ry", AX_R }, { "rx", AX_S } } },
	{ "layout_transform", "O", { BUF_DATA },
	  { { "b", AX_N }, { "fo", AX_K }, { "y", AX_OH }, { "x", AX_OW }, { "fi", AX_KB } } },
};

/* First loop slot of each canonical axis. */
static int slot_base(int ax)
{
	int j = 0;
	for (int a = 0; a < ax; a++)
		j += axes[a].nlevel;
	return j;
}

/* The row of sp's operator and main stage, or NULL. */
static const struct sg_op *find_op(const sp_space *sp)
{
	const te_prog *p = sp->prog;
	const char *stage = p->tensor[p->stage[sp->main_stage].out].name;
	for (int i = 0; i < (int)ArraySize(ops); i++)
		if (!strcmp(ops[i].op, p->op) && !strcmp(ops[i].stage, stage))
			return &ops[i];
	return NULL;
}

/* The canonical axis of main-stage axis name (len chars), -1 if none. */
static int map_axis(const struct sg_op *o, const char *name, size_t len)
{
	for (int i = 0; i < (int)ArraySize(o->map) && o->map[i].axis; i++)
		if (strlen(o->map[i].axis) == len && !strncmp(o->map[i].axis, name, len))
			return o->map[i].to;
	return -1;
}

uint64_t feat_graph_template(void)
{
	/* FNV-1a over the template: the axes, the mappings and the shape */
	uint64_t h = 0xcbf29ce484222325ULL;
#define MIX(v) (h = (h ^ (uint64_t)(v)) * 0x100000001b3ULL)
#define MIXS(s) do { for (const char *p_ = (s); *p_; p_++) MIX((unsigned char)*p_); MIX(0); } while (0)
	MIX(N), MIX(F), MIX(FEAT_GRAPH_EMAX), MIX(LOOP_SLOTS);
	for (int a = 0; a < AX_COUNT; a++) {
		MIXS(axes[a].name);
		MIX(axes[a].reduce), MIX(axes[a].nlevel);
	}
	for (int i = 0; i < (int)ArraySize(ops); i++) {
		MIXS(ops[i].op);
		MIXS(ops[i].stage);
		for (int r = 0; r < TE_MAXREAD; r++)
			MIX(ops[i].buf[r]);
		for (int k = 0; k < (int)ArraySize(ops[i].map) && ops[i].map[k].axis; k++) {
			MIXS(ops[i].map[k].axis);
			MIX(ops[i].map[k].to);
		}
	}
#undef MIX
#undef MIXS
	return h;
}

int feat_graph_check(const sp_space *sp)
{
	assert(sp->prog);
	const te_prog *p = sp->prog;
	const te_stage *st = &p->stage[sp->main_stage];
	const struct sg_op *o = find_op(sp);
	if (!o)
		return tk_seterr(TK_EINVAL, "graph features: %s (main stage %s) has no template in"
		                 " the super-graph: its graph is larger than the super-graph", p->op,
		                 p->tensor[st->out].name);
	for (int r = 0; r < st->nread; r++)
		if (!o->buf[r])
			return tk_seterr(TK_EINVAL, "graph features: read %d of %s has no buffer slot in"
			                 " the super-graph", r, p->op);
	for (int a = 0; a < st->naxis; a++) {
		int to = map_axis(o, st->axis[a].name, strlen(st->axis[a].name)), lv = 1;
		if (to < 0)
			return tk_seterr(TK_EINVAL, "graph features: axis %s of %s has no node in the"
			                 " super-graph", st->axis[a].name, p->op);
		for (int k = 0; k < sp->nknob; k++)
			if (sp->knob[k].role == KR_TILE && sp->knob[k].axis == a)
				lv = sp->knob[k].nlevel;
		if (lv > axes[to].nlevel || axes[to].reduce != st->axis[a].reduce)
			return tk_seterr(TK_EINVAL, "graph features: axis %s of %s has %d %s levels, the"
			                 " super-graph's %s axis %d %s", st->axis[a].name, p->op, lv,
			                 st->axis[a].reduce ? "reduction" : "spatial", axes[to].name,
			                 axes[to].nlevel, axes[to].reduce ? "reduction" : "spatial");
	}
	return TK_OK;
}

/* The loop slot of IR loop name var ("y_1", "ry", "b_f_0_y_0_x_0": axis
 * names, each followed by _LEVEL when the axis is split, joined by '_'),
 * its number of axis parts and whether it is a reduction loop. -1 if the
 * name does not map. */
static int loop_slot(const struct sg_op *o, const char *var, int *parts, int *reduce)
{
	int slot = -1;
	*parts = 0;
	*reduce = 0;
	for (const char *q = var; *q;) {
		const char *b = q;
		while (isalpha((unsigned char)*q))
			q++;
		int to = map_axis(o, b, (size_t)(q - b)), level = 0;
		if (q == b || to < 0)
			return -1;
		if (*q == '_' && isdigit((unsigned char)q[1])) {
			level = (int)strtol(q + 1, (char **)&q, 10);
			if (level >= axes[to].nlevel)
				return -1;
		}
		if (*q == '_')
			q++;
		else if (*q)
			return -1;
		slot = slot_base(to) + level;
		*reduce = axes[to].reduce;
		++*parts;
	}
	if (*parts > 1) {
		slot = FUSED_SLOT;
		*reduce = 0;
	}
	return slot;
}

int feat_graph(const sp_space *sp, const sp_config *c, float *out, int *valid)
{
	const struct sg_op *o = find_op(sp);
	feat_nestctx *x = malloc(sizeof *x);
	int ok, rc;
	memset(out, 0, sizeof(float) * FEAT_GRAPH_LEN);
	*valid = 0;
	if (!o)
		return feat_graph_check(sp);
	if (!x)
		return tk_seterr(TK_ENOMEM, "out of memory");
	if ((rc = feat_nest_context(sp, c, x, &ok)) || !ok) {
		free(x);
		return rc;
	}
	int used[LOOP_SLOTS] = { 0 }, ne = 0, prev = -1;
	float *edge = out + N * F;
	out[0] = 1.0f; /* the root */
	for (int l = 0; l < x->nloop; l++) {
		int parts, reduce, j = loop_slot(o, x->var[l], &parts, &reduce);
		if (j < 0 || used[j]) {
			rc = tk_seterr(TK_EINVAL, "graph features: loop %s of %s %s the super-graph",
			               x->var[l], sp->prog->op, j < 0 ? "has no node in" : "is a second loop of a node of");
			memset(out, 0, sizeof(float) * FEAT_GRAPH_LEN);
			free(x);
			return rc;
		}
		used[j] = 1;
		int fo = 1 + j, iv = 1 + LOOP_SLOTS + j;
		const float *v = x->v[l];
		float *a = out + fo * F, *b = out + iv * F;
		a[1] = 1.0f;
		b[2] = 1.0f;
		memcpy(b + COL_CTX, v, sizeof(float) * FEAT_LOOP_FIXED);
		for (int s = 0; s < x->nslot; s++) /* slot 0 written, 1.. the reads */
			memcpy(b + COL_BUF + FEAT_SLOT_VALUES * (s ? o->buf[s - 1] : 0),
			       v + FEAT_LOOP_FIXED + FEAT_SLOT_VALUES * s, sizeof(float) * FEAT_SLOT_VALUES);
		b[COL_PARTS] = (float)parts;
		b[COL_REDUCE] = (float)reduce;
		assert(ne + 3 <= FEAT_GRAPH_EMAX);
		edge[2 * ne] = 0.0f, edge[2 * ne + 1] = (float)fo, ne++;
		edge[2 * ne] = (float)fo, edge[2 * ne + 1] = (float)iv, ne++;
		if (prev >= 0)
			edge[2 * ne] = (float)prev, edge[2 * ne + 1] = (float)fo, ne++;
		prev = fo;
	}
	*valid = 1;
	free(x);
	return TK_OK;
}
