/*
 * emit_c: loop-nest IR -> C source (see emit_c.h).
 *
 * Loop variables are bound while emitting: to a C variable (a real loop),
 * to a constant (an explicitly unrolled iteration, a loop of extent 1) or
 * to a vector chunk (base + lane) inside a vectorised loop. Index
 * expressions are flattened into linear forms over the bound variables, so
 * unrolled code reads `b_B[k*512 + 48]` rather than a tree of products.
 *
 * An accumulator tile first tries register mode: every access must resolve
 * to a constant element and every element must always be accessed with the
 * same vector chunk; if that fails the block is emitted again with an array.
 */
#include "emit_c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIN_MAX 32
#define EXPAND_MAX 512      /* operations that unrolling (explicit or by
                               pragma, nested) may ask of the compiler: a
                               register tile of 32 vectors takes about 200;
                               past it, compile time grows faster than the
                               kernels gain (BENCHMARKS.md, measurement
                               throughput) */
#define REG_MAX_FLOATS 1024 /* tiles larger than this stay arrays */
#define EXPAND_MAX_BYTES (64 << 10) /* source one explicit expansion may produce */

enum { BD_NONE, BD_CONST, BD_CVAR, BD_VEC };

typedef struct bind {
	int kind;
	int64_t c;          /* BD_CONST value; BD_VEC constant part of the base */
	const char *name;   /* BD_CVAR variable; BD_VEC variable part (or NULL) */
} bind;

enum { LM_ARRAY, LM_REG };

typedef struct local {
	int mode;
	int failed;
	int64_t *owner;     /* LM_REG: per element 0, or chunk start*64 + width + 1 */
	int depth;          /* indentation of the declarations */
	tk_sb decl;
} local;

typedef struct cg {
	const ir_func *f;
	const cg_opts *o;
	tk_sb *sb;
	bind *bind;         /* per statement id */
	local *loc;         /* per buffer id */
	int depth;
	int par_depth;
	const ir_stmt *vloop;
	int vw;             /* chunk width inside vloop; 1 = scalar */
	int64_t mult;       /* product of the unroll pragmas around the point */
	int ntmp;
} cg;

typedef struct lin {
	int64_t c;
	int n;
	const ir_expr *atom[LIN_MAX];
	int64_t k[LIN_MAX];
	int bad;            /* too many terms */
} lin;

static void print_int(cg *g, const ir_expr *e, int lane);
static void print_float(cg *g, const ir_expr *e, int lane);

/* ---- integer expressions -------------------------------------------- */

static void lin_atom(lin *l, const ir_expr *a, int64_t k)
{
	for (int i = 0; i < l->n; i++)
		if (l->atom[i] == a || (a->kind == IR_VAR && l->atom[i]->kind == IR_VAR &&
		                        l->atom[i]->loop == a->loop)) {
			l->k[i] += k;
			return;
		}
	if (l->n == LIN_MAX) {
		l->bad = 1;
		return;
	}
	l->atom[l->n] = a;
	l->k[l->n++] = k;
}

static int lin_const(const lin *l, int64_t *v)
{
	for (int i = 0; i < l->n; i++)
		if (l->k[i])
			return 0;
	*v = l->c;
	return !l->bad;
}

static int64_t fdiv(int64_t a, int64_t b)
{
	int64_t q = a / b;
	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

static void lin_acc(cg *g, const ir_expr *e, int lane, int64_t k, lin *l)
{
	switch (e->kind) {
	case IR_INT:
		l->c += k * e->i;
		return;
	case IR_VAR: {
		const bind *b = &g->bind[e->loop->id];
		if (b->kind == BD_CONST) {
			l->c += k * b->c;
		} else if (b->kind == BD_VEC) {
			l->c += k * (b->c + lane);
			if (b->name)
				lin_atom(l, e, k);
		} else {
			lin_atom(l, e, k);
		}
		return;
	}
	case IR_ADD:
		lin_acc(g, e->a, lane, k, l);
		lin_acc(g, e->b, lane, k, l);
		return;
	case IR_SUB:
		lin_acc(g, e->a, lane, k, l);
		lin_acc(g, e->b, lane, -k, l);
		return;
	case IR_MUL:
		if (e->b->kind == IR_INT) {
			lin_acc(g, e->a, lane, k * e->b->i, l);
			return;
		}
		if (e->a->kind == IR_INT) {
			lin_acc(g, e->b, lane, k * e->a->i, l);
			return;
		}
		break;
	case IR_DIV:
	case IR_MOD:
	case IR_MIN: {
		lin la = { 0 }, lb = { 0 };
		int64_t x, y;
		lin_acc(g, e->a, lane, 1, &la);
		lin_acc(g, e->b, lane, 1, &lb);
		if (lin_const(&la, &x) && lin_const(&lb, &y)) {
			int64_t v = e->kind == IR_DIV ? fdiv(x, y)
			          : e->kind == IR_MOD ? x - fdiv(x, y) * y : (x < y ? x : y);
			l->c += k * v;
			return;
		}
		break;
	}
	}
	lin_atom(l, e, k);
}

static void print_atom(cg *g, const ir_expr *e, int lane)
{
	tk_sb *sb = g->sb;
	int64_t lo, hi;
	switch (e->kind) {
	case IR_VAR: {
		const bind *b = &g->bind[e->loop->id];
		tk_sb_puts(sb, b->name ? b->name : "?");
		return;
	}
	case IR_DIV:
	case IR_MOD:
		ir_range(e->a, &lo, &hi);
		tk_sb_puts(sb, lo >= 0 ? "((" : e->kind == IR_DIV ? "tk_fdiv(" : "tk_fmod(");
		print_int(g, e->a, lane);
		tk_sb_puts(sb, lo >= 0 ? (e->kind == IR_DIV ? ")/" : ")%") : ", ");
		print_int(g, e->b, lane);
		tk_sb_putc(sb, ')');
		return;
	case IR_MIN:
		tk_sb_puts(sb, "tk_min(");
		print_int(g, e->a, lane);
		tk_sb_puts(sb, ", ");
		print_int(g, e->b, lane);
		tk_sb_putc(sb, ')');
		return;
	default:
		tk_sb_putc(sb, '(');
		print_int(g, e->a, lane);
		tk_sb_puts(sb, ")*(");
		print_int(g, e->b, lane);
		tk_sb_putc(sb, ')');
	}
}

static void print_lin(cg *g, const lin *l, int lane)
{
	tk_sb *sb = g->sb;
	int first = 1;
	for (int i = 0; i < l->n; i++) {
		int64_t k = l->k[i];
		if (!k)
			continue;
		if (!first)
			tk_sb_puts(sb, k < 0 ? " - " : " + ");
		else if (k < 0)
			tk_sb_putc(sb, '-');
		print_atom(g, l->atom[i], lane);
		if (k != 1 && k != -1)
			tk_sb_printf(sb, "*%lld", (long long)(k < 0 ? -k : k));
		first = 0;
	}
	if (first)
		tk_sb_printf(sb, "%lld", (long long)l->c);
	else if (l->c)
		tk_sb_printf(sb, " %c %lld", l->c < 0 ? '-' : '+', (long long)(l->c < 0 ? -l->c : l->c));
}

static void print_int(cg *g, const ir_expr *e, int lane)
{
	lin l = { 0 };
	lin_acc(g, e, lane, 1, &l);
	if (l.bad) {
		print_atom(g, e, lane);
		return;
	}
	print_lin(g, &l, lane);
}

/* Flat (row-major) index of an access as a linear form. */
static void flat_index(cg *g, const ir_buf *b, ir_expr *const *idx, int lane, lin *l)
{
	int64_t stride = 1;
	memset(l, 0, sizeof *l);
	for (int d = b->ndim - 1; d >= 0; d--) {
		lin_acc(g, idx[d], lane, stride, l);
		stride *= b->shape[d];
	}
}

/* Stride of the flat index along loop v: *ok = 0 if not affine. */
static int64_t flat_stride(const ir_buf *b, ir_expr *const *idx, const ir_stmt *v, int *ok)
{
	int64_t stride = 1, s = 0;
	*ok = 1;
	for (int d = b->ndim - 1; d >= 0; d--) {
		int okd;
		s += stride * ir_coeff(idx[d], v, &okd);
		if (!okd)
			*ok = 0;
		stride *= b->shape[d];
	}
	return s;
}

static int uses_loop(const ir_expr *e, const ir_stmt *v)
{
	if (!e)
		return 0;
	if (e->kind == IR_VAR)
		return e->loop == v;
	if (e->kind == IR_LOAD) {
		for (int d = 0; d < e->buf->ndim; d++)
			if (uses_loop(e->idx[d], v))
				return 1;
		return 0;
	}
	return uses_loop(e->a, v) || uses_loop(e->b, v);
}

/* ---- buffer accesses ------------------------------------------------- */

static const char *bname(const ir_buf *b)
{
	return b->name;
}

/* Register variable for elements [off, off+w) of local b; sets failed. */
static void reg_name(cg *g, const ir_buf *b, int64_t off, int w)
{
	local *L = &g->loc[b->id];
	if (off < 0 || off + w > b->size) {
		L->failed = 1;
		tk_sb_puts(g->sb, "0");
		return;
	}
	int64_t code = off * 64 + w + 1;
	for (int i = 0; i < w; i++) {
		if (L->owner[off + i] == 0) {
			L->owner[off + i] = code;
			if (i == 0) {
				tk_sb_indent(&L->decl, L->depth);
				if (w == 1)
					tk_sb_printf(&L->decl, "float r%d_%lld;\n", b->id, (long long)off);
				else
					tk_sb_printf(&L->decl, "tkv%d r%d_%lld_%d;\n", w, b->id, (long long)off, w);
			}
		} else if (L->owner[off + i] != code) {
			L->failed = 1;
		}
	}
	if (w == 1)
		tk_sb_printf(g->sb, "r%d_%lld", b->id, (long long)off);
	else
		tk_sb_printf(g->sb, "r%d_%lld_%d", b->id, (long long)off, w);
}

/* Print an access of width w (1 = scalar) at the lane-0 index. */
static void print_access(cg *g, const ir_buf *b, ir_expr *const *idx, int lane, int w, int store)
{
	lin l;
	flat_index(g, b, idx, lane, &l);
	if (b->kind == IRB_LOCAL && g->loc[b->id].mode == LM_REG) {
		int64_t off;
		if (!lin_const(&l, &off)) {
			g->loc[b->id].failed = 1;
			tk_sb_puts(g->sb, "0");
			return;
		}
		reg_name(g, b, off, w);
		return;
	}
	if (w == 1) {
		tk_sb_printf(g->sb, "%s[", bname(b));
		print_lin(g, &l, lane);
		tk_sb_putc(g->sb, ']');
		return;
	}
	tk_sb_printf(g->sb, "(*(%stkv%du *)&%s[", store ? "" : "const ", w, bname(b));
	print_lin(g, &l, lane);
	tk_sb_puts(g->sb, "])");
}

/* ---- float expressions ------------------------------------------------ */

static void print_bool(cg *g, const ir_expr *e, int lane)
{
	tk_sb *sb = g->sb;
	switch (e->kind) {
	case IR_AND:
		tk_sb_putc(sb, '(');
		print_bool(g, e->a, lane);
		tk_sb_puts(sb, " && ");
		print_bool(g, e->b, lane);
		tk_sb_putc(sb, ')');
		return;
	case IR_INRANGE:
		tk_sb_puts(sb, "((unsigned long)(");
		print_int(g, e->a, lane);
		if (e->i)
			tk_sb_printf(sb, " - %lld", (long long)e->i);
		tk_sb_printf(sb, ") < %lldUL)", (long long)(e->j - e->i));
		return;
	case IR_DIVIDES:
		tk_sb_puts(sb, "((");
		print_int(g, e->a, lane);
		tk_sb_printf(sb, ") %% %lld == 0)", (long long)e->i);
		return;
	}
	tk_sb_puts(sb, "1");
}

static void print_fconst(tk_sb *sb, float v)
{
	if (v == 0)
		tk_sb_puts(sb, "0.0f");
	else
		tk_sb_printf(sb, "%af", (double)v);
}

static void print_float(cg *g, const ir_expr *e, int lane)
{
	tk_sb *sb = g->sb;
	switch (e->kind) {
	case IR_LOAD:
		print_access(g, e->buf, e->idx, lane, 1, 0);
		return;
	case IR_FCONST:
		print_fconst(sb, e->f);
		return;
	case IR_FADD:
	case IR_FMUL:
		tk_sb_putc(sb, '(');
		print_float(g, e->a, lane);
		tk_sb_puts(sb, e->kind == IR_FADD ? " + " : " * ");
		print_float(g, e->b, lane);
		tk_sb_putc(sb, ')');
		return;
	case IR_FRELU:
		tk_sb_puts(sb, "tk_relu(");
		print_float(g, e->a, lane);
		tk_sb_putc(sb, ')');
		return;
	case IR_SELECT:
		tk_sb_putc(sb, '(');
		print_bool(g, e->a, lane);
		tk_sb_puts(sb, " ? ");
		print_float(g, e->b, lane);
		tk_sb_puts(sb, " : 0.0f)");
		return;
	}
	tk_sb_puts(sb, "0.0f");
}

/* In vector mode: does e produce a vector (1) or a scalar (0)? */
static int is_vec(cg *g, const ir_expr *e)
{
	switch (e->kind) {
	case IR_LOAD:
		return uses_loop(e, g->vloop);
	case IR_FADD:
	case IR_FMUL:
		return is_vec(g, e->a) || is_vec(g, e->b);
	case IR_FRELU:
		return is_vec(g, e->a);
	case IR_SELECT:
		return uses_loop(e->a, g->vloop) || is_vec(g, e->b);
	}
	return 0;
}

static void print_gather(cg *g, const ir_expr *e)
{
	tk_sb_printf(g->sb, "((tkv%d){ ", g->vw);
	for (int l = 0; l < g->vw; l++) {
		if (l)
			tk_sb_puts(g->sb, ", ");
		print_float(g, e, l);
	}
	tk_sb_puts(g->sb, " })");
}

static void print_vfloat(cg *g, const ir_expr *e)
{
	tk_sb *sb = g->sb;
	if (!is_vec(g, e)) {
		print_float(g, e, 0);
		return;
	}
	switch (e->kind) {
	case IR_LOAD: {
		int ok;
		int64_t s = flat_stride(e->buf, e->idx, g->vloop, &ok);
		if (ok && s == 1) {
			print_access(g, e->buf, e->idx, 0, g->vw, 0);
		} else if (ok && !(e->buf->kind == IRB_LOCAL && g->loc[e->buf->id].mode == LM_REG)) {
			/* strided: a small inline loop keeps the source short */
			lin l;
			flat_index(g, e->buf, e->idx, 0, &l);
			tk_sb_printf(sb, "tk_gather%d(&%s[", g->vw, bname(e->buf));
			print_lin(g, &l, 0);
			tk_sb_printf(sb, "], %lld)", (long long)s);
		} else {
			print_gather(g, e);
		}
		return;
	}
	case IR_FADD:
	case IR_FMUL:
		tk_sb_putc(sb, '(');
		print_vfloat(g, e->a);
		tk_sb_puts(sb, e->kind == IR_FADD ? " + " : " * ");
		print_vfloat(g, e->b);
		tk_sb_putc(sb, ')');
		return;
	case IR_FRELU:
		tk_sb_printf(sb, "tk_relu%d(", g->vw);
		print_vfloat(g, e->a);
		tk_sb_putc(sb, ')');
		return;
	case IR_SELECT:
		if (uses_loop(e->a, g->vloop)) {
			print_gather(g, e);
			return;
		}
		tk_sb_putc(sb, '(');
		print_bool(g, e->a, 0);
		/* the cast: an unaligned load's type differs from tkvN's */
		tk_sb_printf(sb, " ? (tkv%d)", g->vw);
		print_vfloat(g, e->b);
		tk_sb_printf(sb, " : (tkv%d){0})", g->vw);
		return;
	}
	print_float(g, e, 0);
}

/* ---- statements ------------------------------------------------------- */

static void emit_stmts(cg *g, const ir_stmt *s);

static void line(cg *g)
{
	tk_sb_indent(g->sb, g->depth);
}

static int reads_buf(const ir_expr *e, const ir_buf *b)
{
	if (!e)
		return 0;
	if (e->kind == IR_LOAD && e->buf == b)
		return 1;
	return reads_buf(e->a, b) || reads_buf(e->b, b);
}

/* Value of guard e here whatever the runtime loops hold (the loops it uses
 * are explicitly unrolled or of one iteration): 0 or 1, or -1 if it
 * depends on them. */
static int guard_value(cg *g, const ir_expr *e)
{
	lin l = { 0 };
	int64_t v;
	if (e->kind == IR_AND) {
		int a = guard_value(g, e->a), b = guard_value(g, e->b);
		return !a || !b ? 0 : a == 1 && b == 1 ? 1 : -1;
	}
	if ((e->kind != IR_INRANGE && e->kind != IR_DIVIDES) || (g->vloop && uses_loop(e, g->vloop)))
		return -1;
	lin_acc(g, e->a, 0, 1, &l);
	if (!lin_const(&l, &v))
		return -1;
	return e->kind == IR_INRANGE ? v >= e->i && v < e->j : v % e->i == 0;
}

static int guard_false(cg *g, const ir_expr *e)
{
	return guard_value(g, e) == 0;
}

/* Is e a product with a factor that is 0 here (a read of padding)? */
static int zero_term(cg *g, const ir_expr *e)
{
	switch (e->kind) {
	case IR_FMUL: return zero_term(g, e->a) || zero_term(g, e->b);
	case IR_SELECT: return guard_false(g, e->a);
	case IR_FCONST: return e->f == 0;
	}
	return 0;
}

static void emit_store_at(cg *g, const ir_stmt *s, int lanewise);

/* A store with a guard: left out where the guard is false, made
 * conditional where it depends on runtime loops, lane by lane where it
 * depends on the vector lane. */
static void emit_store(cg *g, const ir_stmt *s)
{
	int v = s->cond ? guard_value(g, s->cond) : 1;
	if (v == 0)
		return;
	if (v == 1) {
		emit_store_at(g, s, 0);
		return;
	}
	if (g->vloop && g->vw > 1 && uses_loop(s->cond, g->vloop)) {
		emit_store_at(g, s, 1);
		return;
	}
	line(g);
	tk_sb_puts(g->sb, "if (");
	print_bool(g, s->cond, 0);
	tk_sb_puts(g->sb, ") {\n");
	g->depth++;
	emit_store_at(g, s, 0);
	g->depth--;
	line(g);
	tk_sb_puts(g->sb, "}\n");
}

static void emit_store_at(cg *g, const ir_stmt *s, int lanewise)
{
	const char *op = s->accum ? "+=" : "=";
	/* adding a product with a read of padding adds nothing (as in the
	 * tightened loops of lower.c) */
	if (s->accum && zero_term(g, s->value))
		return;
	if (!g->vloop || g->vw == 1) {
		line(g);
		print_access(g, s->buf, s->idx, 0, 1, 1);
		tk_sb_printf(g->sb, " %s ", op);
		if (g->vloop)
			print_float(g, s->value, 0);
		else
			print_float(g, s->value, 0);
		tk_sb_puts(g->sb, ";\n");
		return;
	}
	int ok;
	int64_t st = flat_stride(s->buf, s->idx, g->vloop, &ok);
	int vec = is_vec(g, s->value);
	if (lanewise)
		ok = 0;
	if (ok && st == 1) {
		line(g);
		print_access(g, s->buf, s->idx, 0, g->vw, 1);
		tk_sb_printf(g->sb, " %s ", op);
		if (!vec)
			tk_sb_printf(g->sb, "(tkv%d){0} + ", g->vw);
		print_vfloat(g, s->value);
		tk_sb_puts(g->sb, ";\n");
		return;
	}
	if (ok && !(s->buf->kind == IRB_LOCAL && g->loc[s->buf->id].mode == LM_REG)) {
		lin l;
		flat_index(g, s->buf, s->idx, 0, &l);
		line(g);
		tk_sb_printf(g->sb, "tk_scatter%s%d(&%s[", s->accum ? "_add" : "", g->vw, bname(s->buf));
		print_lin(g, &l, 0);
		tk_sb_printf(g->sb, "], %lld, ", (long long)st);
		if (!vec)
			tk_sb_printf(g->sb, "(tkv%d){0} + ", g->vw);
		print_vfloat(g, s->value);
		tk_sb_puts(g->sb, ");\n");
		return;
	}
	/* scatter lane by lane */
	int t = g->ntmp++;
	line(g);
	tk_sb_printf(g->sb, "{\n");
	g->depth++;
	line(g);
	tk_sb_printf(g->sb, "tkv%d t%d = ", g->vw, t);
	if (!vec)
		tk_sb_printf(g->sb, "(tkv%d){0} + ", g->vw);
	print_vfloat(g, s->value);
	tk_sb_puts(g->sb, ";\n");
	for (int l = 0; l < g->vw; l++) {
		line(g);
		if (lanewise) {
			tk_sb_puts(g->sb, "if (");
			print_bool(g, s->cond, l);
			tk_sb_puts(g->sb, ") ");
		}
		print_access(g, s->buf, s->idx, l, 1, 1);
		tk_sb_printf(g->sb, " %s t%d[%d];\n", op, t, l);
	}
	g->depth--;
	line(g);
	tk_sb_puts(g->sb, "}\n");
}

/* Can loop v be emitted with vector chunks? Its body must be stores only,
 * each writing a different element per lane. */
static int can_vectorize(const ir_stmt *v)
{
	for (const ir_stmt *s = v->body; s; s = s->next) {
		if (s->kind != IR_STORE)
			return 0;
		int ok;
		int64_t st = flat_stride(s->buf, s->idx, v, &ok);
		if (ok && st == 0)
			return 0;
		if (!ok && reads_buf(s->value, s->buf))
			return 0;
	}
	return 1;
}

/* Operations an emission of s produces (explicit expansions multiplied
 * out, per-lane gathers counted per lane), to bound what unrolling asks of
 * the compiler. */
static int64_t expand_count(const cg *g, const ir_stmt *s);

/* Operations of one value inside a loop vectorised along v (NULL: scalar). */
static int64_t value_ops(const ir_expr *e, const ir_stmt *v, int w)
{
	int ok;
	switch (e->kind) {
	case IR_LOAD:
		if (!v || !uses_loop(e, v))
			return 1;
		/* a vector load; a strided gather helper, whose loop the compiler
		 * unrolls, costs a load per lane like a gather lane by lane */
		return flat_stride(e->buf, e->idx, v, &ok) == 1 && ok ? 2 : w;
	case IR_SELECT:
		/* a guarded lane is a branch: weigh it like several operations */
		if (v && uses_loop(e->a, v))
			return w * (4 + value_ops(e->b, NULL, 1));
		return 4 + value_ops(e->b, v, w);
	case IR_FADD:
	case IR_FMUL:
		return 1 + value_ops(e->a, v, w) + value_ops(e->b, v, w);
	case IR_FRELU:
		return 1 + value_ops(e->a, v, w);
	}
	return 0;
}

static int64_t stores_ops(const ir_stmt *s, const ir_stmt *v, int w)
{
	int64_t n = 0;
	for (; s; s = s->next)
		if (s->kind == IR_STORE)
			n += 1 + value_ops(s->value, v, w);
	return n;
}

static int expands(const cg *g, const ir_stmt *s, int64_t *e)
{
	if (s->ann != ANN_UNROLL || !s->explicit_unroll || s->begin || !ir_const(s->extent, e))
		return 0;
	return g->mult * *e * expand_count(g, s->body) <= EXPAND_MAX;
}

/* Copies of its body a vectorised loop emits (emit_vector_loop): a runtime
 * loop of full vectors and a tail, or one per chunk of a constant extent,
 * narrower vectors and scalars at the end. */
static int64_t vector_chunks(const cg *g, const ir_stmt *s)
{
	int64_t e, n = 0, W = g->o->vlen;
	if (!ir_const(s->extent, &e))
		return 2;
	if (e > 8 * W) {
		n = 1;
		e %= W;
	}
	for (int64_t w = W; w >= 4; w /= 2) {
		n += e / w;
		e %= w;
	}
	return n + e;
}

static int64_t expand_count(const cg *g, const ir_stmt *s)
{
	int64_t n = 0, e;
	for (; s; s = s->next) {
		if (s->kind == IR_STORE) {
			n += 1 + value_ops(s->value, NULL, 1);
		} else if (s->kind == IR_ALLOC) {
			n += expand_count(g, s->body);
		} else if (s->ann == ANN_VECTORIZE && !s->begin && can_vectorize(s)) {
			n += vector_chunks(g, s) * stores_ops(s->body, s, g->o->vlen);
		} else if (expands(g, s, &e)) {
			n += e * expand_count(g, s->body);
		} else if (s->ann == ANN_UNROLL && ir_const(s->extent, &e)) {
			n += e * expand_count(g, s->body); /* at most this many copies by pragma */
		} else {
			n += expand_count(g, s->body);
		}
	}
	return n;
}

static const char *var_name(cg *g, const ir_stmt *s)
{
	bind *b = &g->bind[s->id];
	if (!b->name) {
		char buf[96];
		snprintf(buf, sizeof buf, "%s_%d", s->var, s->id);
		b->name = tk_arena_strdup((tk_arena *)&g->f->arena, buf);
	}
	return b->name;
}

static void emit_vector_loop(cg *g, const ir_stmt *s)
{
	bind *b = &g->bind[s->id];
	const char *name = var_name(g, s);
	int64_t e;
	int W = g->o->vlen;
	const ir_stmt *saved = g->vloop;
	int saved_w = g->vw;
	g->vloop = s;
	if (ir_const(s->extent, &e)) {
		int64_t off = 0;
		if (e > 8 * W) {
			/* runtime loop over full chunks, then constant chunks */
			int64_t full = e / W * W;
			line(g);
			tk_sb_printf(g->sb, "for (long %s = 0; %s < %lld; %s += %d) {\n", name, name,
			             (long long)full, name, W);
			b->kind = BD_VEC;
			b->c = 0;
			g->vw = W;
			g->depth++;
			emit_stmts(g, s->body);
			g->depth--;
			line(g);
			tk_sb_puts(g->sb, "}\n");
			off = full;
		}
		for (int w = W; w >= 4; w /= 2)
			while (e - off >= w) {
				b->kind = BD_VEC;
				b->c = off;
				b->name = NULL;
				g->vw = w;
				emit_stmts(g, s->body);
				off += w;
			}
		for (; off < e; off++) {
			b->kind = BD_CONST;
			b->c = off;
			g->vw = 1;
			emit_stmts(g, s->body);
		}
	} else {
		line(g);
		tk_sb_printf(g->sb, "{\n");
		g->depth++;
		line(g);
		tk_sb_printf(g->sb, "long %s = 0;\n", name);
		line(g);
		tk_sb_printf(g->sb, "for (; %s + %d <= ", name, W);
		print_int(g, s->extent, 0);
		tk_sb_printf(g->sb, "; %s += %d) {\n", name, W);
		b->kind = BD_VEC;
		b->c = 0;
		b->name = name;
		g->vw = W;
		g->depth++;
		emit_stmts(g, s->body);
		g->depth--;
		line(g);
		tk_sb_printf(g->sb, "}\n");
		line(g);
		tk_sb_printf(g->sb, "for (; %s < ", name);
		print_int(g, s->extent, 0);
		tk_sb_printf(g->sb, "; %s++) {\n", name);
		b->kind = BD_CVAR;
		g->vw = 1;
		g->depth++;
		emit_stmts(g, s->body);
		g->depth--;
		line(g);
		tk_sb_puts(g->sb, "}\n");
		g->depth--;
		line(g);
		tk_sb_puts(g->sb, "}\n");
	}
	b->name = name;
	g->vloop = saved;
	g->vw = saved_w;
}

static void emit_for(cg *g, const ir_stmt *s)
{
	bind *b = &g->bind[s->id];
	int64_t e;
	if (s->max_extent == 1) {
		b->kind = BD_CONST;
		b->c = 0;
		emit_stmts(g, s->body);
		return;
	}
	if (s->ann == ANN_VECTORIZE && !g->vloop && !s->begin && can_vectorize(s)) {
		emit_vector_loop(g, s);
		return;
	}
	if (expands(g, s, &e)) {
		size_t mark = g->sb->n;
		for (int64_t i = 0; i < e && g->sb->n - mark <= EXPAND_MAX_BYTES; i++) {
			b->kind = BD_CONST;
			b->c = i;
			emit_stmts(g, s->body);
		}
		if (g->sb->n - mark <= EXPAND_MAX_BYTES)
			return;
		/* too much source for the compiler: a loop after all */
		g->sb->n = mark;
		if (g->sb->s)
			g->sb->s[mark] = 0;
	}
	const char *name = var_name(g, s);
	b->kind = BD_CVAR;
	int par = s->ann == ANN_PARALLEL && g->o->threads > 1 && g->par_depth == 0;
	if (par) {
		line(g);
		tk_sb_printf(g->sb, "#pragma omp parallel for num_threads(%d) schedule(static)\n",
		             g->o->threads);
	}
	int64_t n = 1;
	/* Only constant trip counts: GCC unrolling loops with tails by pragma,
	 * nested, takes minutes for little gain. */
	if (!par && s->ann == ANN_UNROLL && !s->begin && ir_const(s->extent, &e)) {
		/* the compiler's copies count against the same budget */
		int64_t body = expand_count(g, s->body);
		n = e;
		/* within budget, and a divisor of the trip count: a partly
		 * unrolled loop with a remainder costs the compiler more than
		 * the remainder is worth */
		while (n > 1 && (g->mult * n * (body ? body : 1) > EXPAND_MAX || e % n))
			n--;
		if (n >= 2) {
			line(g);
			tk_sb_printf(g->sb, "#pragma GCC unroll %lld\n", (long long)n);
		} else {
			n = 1;
		}
	} else if (!par && s->rolled) {
		/* the unroll knob's 1: GCC would unroll a kernel row's 3 taps,
		 * interleave the copies to share their loads and spill the
		 * accumulators of a tile that fills the register file, a store
		 * and a load on every dependency chain (2 vectors x 6 pixels on
		 * AVX2 ran 2.3x slower so) */
		line(g);
		tk_sb_puts(g->sb, "#pragma GCC unroll 1\n");
	}
	line(g);
	tk_sb_printf(g->sb, "for (long %s = ", name);
	if (s->begin)
		print_int(g, s->begin, 0);
	else
		tk_sb_puts(g->sb, "0");
	tk_sb_printf(g->sb, "; %s < ", name);
	print_int(g, s->extent, 0);
	tk_sb_printf(g->sb, "; %s++) {\n", name);
	g->depth++;
	g->par_depth += par;
	g->mult *= n;
	emit_stmts(g, s->body);
	g->mult /= n;
	g->par_depth -= par;
	g->depth--;
	line(g);
	tk_sb_puts(g->sb, "}\n");
}

static void emit_alloc(cg *g, const ir_stmt *s)
{
	const ir_buf *b = s->buf;
	local *L = &g->loc[b->id];
	if (b->size <= REG_MAX_FLOATS) {
		tk_sb body;
		tk_sb *saved = g->sb;
		tk_sb_init(&body);
		tk_sb_init(&L->decl);
		L->mode = LM_REG;
		L->failed = 0;
		L->owner = calloc((size_t)b->size, sizeof *L->owner);
		L->depth = g->depth + 1;
		if (L->owner) {
			g->sb = &body;
			g->depth++;
			emit_stmts(g, s->body);
			g->depth--;
			g->sb = saved;
		} else {
			L->failed = 1;
		}
		free(L->owner);
		L->owner = NULL;
		if (!L->failed && !body.oom && !L->decl.oom) {
			line(g);
			tk_sb_puts(g->sb, "{\n");
			if (L->decl.s)
				tk_sb_puts(g->sb, L->decl.s);
			if (body.s)
				tk_sb_puts(g->sb, body.s);
			line(g);
			tk_sb_puts(g->sb, "}\n");
			tk_sb_free(&body);
			tk_sb_free(&L->decl);
			return;
		}
		if (body.oom || L->decl.oom)
			g->sb->oom = 1;
		tk_sb_free(&body);
		tk_sb_free(&L->decl);
	}
	L->mode = LM_ARRAY;
	line(g);
	tk_sb_printf(g->sb, "{\n");
	g->depth++;
	line(g);
	tk_sb_printf(g->sb, "float %s[%lld] __attribute__((aligned(64)));\n", bname(b),
	             (long long)b->size);
	emit_stmts(g, s->body);
	g->depth--;
	line(g);
	tk_sb_puts(g->sb, "}\n");
}

static void emit_stmts(cg *g, const ir_stmt *s)
{
	for (; s; s = s->next) {
		switch (s->kind) {
		case IR_FOR: emit_for(g, s); break;
		case IR_STORE: emit_store(g, s); break;
		case IR_ALLOC: emit_alloc(g, s); break;
		}
	}
}

/* ---- the translation unit -------------------------------------------- */

static void prelude(cg *g)
{
	tk_sb *sb = g->sb;
	tk_sb_puts(sb, "#include <stddef.h>\n\n");
	for (int w = g->o->vlen; w >= 4; w /= 2) {
		tk_sb_printf(sb, "typedef float tkv%d __attribute__((vector_size(%d)));\n", w, 4 * w);
		tk_sb_printf(sb, "typedef float tkv%du __attribute__((vector_size(%d), aligned(4), "
		             "may_alias));\n", w, 4 * w);
		tk_sb_printf(sb, "typedef int tki%d __attribute__((vector_size(%d)));\n", w, 4 * w);
		tk_sb_printf(sb, "static inline tkv%d tk_relu%d(tkv%d x) "
		             "{ return (tkv%d)((tki%d)x & (x > (tkv%d){0})); }\n", w, w, w, w, w, w);
		tk_sb_printf(sb, "static inline tkv%d tk_gather%d(const float *p, long s) "
		             "{ tkv%d v; for (int l = 0; l < %d; l++) v[l] = p[l * s]; return v; }\n",
		             w, w, w, w);
		tk_sb_printf(sb, "static inline void tk_scatter%d(float *p, long s, tkv%d v) "
		             "{ for (int l = 0; l < %d; l++) p[l * s] = v[l]; }\n", w, w, w);
		tk_sb_printf(sb, "static inline void tk_scatter_add%d(float *p, long s, tkv%d v) "
		             "{ for (int l = 0; l < %d; l++) p[l * s] += v[l]; }\n", w, w, w);
	}
	tk_sb_puts(sb,
	           "static inline float tk_relu(float x) { return x > 0 ? x : 0.0f; }\n"
	           "static inline long tk_min(long a, long b) { return a < b ? a : b; }\n"
	           "static inline long tk_fdiv(long a, long b) "
	           "{ long q = a / b; return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q; }\n"
	           "static inline long tk_fmod(long a, long b) { return a - tk_fdiv(a, b) * b; }\n\n");
	tk_sb_printf(sb, "const int tk_abi = 1;\n");
	tk_sb_printf(sb, "const unsigned long tk_workspace_floats = %lldUL;\n\n",
	             (long long)g->f->work_floats);
	for (int i = 0; i < g->f->nbuf; i++) {
		const ir_buf *b = g->f->buf[i];
		if (b->kind != IRB_CONST)
			continue;
		tk_sb_printf(sb, "static const float %s[%lld] = {", bname(b), (long long)b->size);
		for (int64_t j = 0; j < b->size; j++) {
			tk_sb_puts(sb, j ? ", " : " ");
			print_fconst(sb, b->values[j]);
		}
		tk_sb_puts(sb, " };\n");
	}
}

int cg_emit_c(const ir_func *f, const cg_opts *o, char **src)
{
	tk_sb sb;
	cg g;
	*src = NULL;
	memset(&g, 0, sizeof g);
	tk_sb_init(&sb);
	g.f = f;
	g.o = o;
	g.sb = &sb;
	g.mult = 1;
	g.bind = calloc((size_t)f->nstmt + 1, sizeof *g.bind);
	g.loc = calloc((size_t)f->nbuf + 1, sizeof *g.loc);
	if (!g.bind || !g.loc) {
		free(g.bind);
		free(g.loc);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	/* var_name() copies names into the function's arena */
	if (setjmp(((ir_func *)f)->arena.oom)) {
		free(g.bind);
		free(g.loc);
		tk_sb_free(&sb);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	if (o->comment)
		tk_sb_printf(&sb, "/* %s */\n", o->comment);
	prelude(&g);
	tk_sb_puts(&sb, "\nvoid tk_kernel(float *const *bufs, float *ws)\n{\n");
	for (int i = 0; i < f->nbuf; i++) {
		const ir_buf *b = f->buf[i];
		switch (b->kind) {
		case IRB_OUTPUT:
			tk_sb_printf(&sb, "  float *restrict %s = __builtin_assume_aligned(bufs[0], 64);\n",
			             bname(b));
			break;
		case IRB_INPUT:
			tk_sb_printf(&sb, "  const float *restrict %s = __builtin_assume_aligned(bufs[%d], 64);\n",
			             bname(b), b->arg + 1);
			break;
		case IRB_WORK:
			tk_sb_printf(&sb, "  float *restrict %s = __builtin_assume_aligned(ws + %lld, 64);\n",
			             bname(b), (long long)b->off);
			break;
		}
	}
	tk_sb_puts(&sb, "  (void)ws;\n");
	g.depth = 1;
	emit_stmts(&g, f->body);
	tk_sb_puts(&sb, "}\n");
	free(g.bind);
	free(g.loc);
	if (sb.oom) {
		tk_sb_free(&sb);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	*src = tk_sb_take(&sb);
	return TK_OK;
}
