/*
 * ir: constructors with constant folding, range and affinity analysis, and
 * a printer for the loop-nest IR (see ir.h).
 */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

static int64_t fdiv(int64_t a, int64_t b)
{
	int64_t q = a / b;
	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

static ir_expr *new_expr(ir_func *f, int kind)
{
	ir_expr *e = tk_arena_alloc(&f->arena, sizeof *e);
	e->kind = kind;
	return e;
}

ir_expr *ir_int(ir_func *f, int64_t v)
{
	ir_expr *e = new_expr(f, IR_INT);
	e->i = v;
	return e;
}

ir_expr *ir_var(ir_func *f, ir_stmt *loop)
{
	if (loop->max_extent == 1)
		return ir_int(f, 0);
	ir_expr *e = new_expr(f, IR_VAR);
	e->loop = loop;
	return e;
}

int ir_const(const ir_expr *e, int64_t *v)
{
	if (e->kind != IR_INT)
		return 0;
	*v = e->i;
	return 1;
}

void ir_range(const ir_expr *e, int64_t *lo, int64_t *hi)
{
	int64_t alo, ahi, blo, bhi;
	switch (e->kind) {
	case IR_INT:
		*lo = *hi = e->i;
		return;
	case IR_VAR:
		*lo = 0;
		*hi = e->loop->max_extent - 1;
		return;
	case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_MOD: case IR_MIN:
		break;
	default:
		*lo = 0;
		*hi = 1;
		return;
	}
	ir_range(e->a, &alo, &ahi);
	ir_range(e->b, &blo, &bhi);
	switch (e->kind) {
	case IR_ADD: *lo = alo + blo; *hi = ahi + bhi; return;
	case IR_SUB: *lo = alo - bhi; *hi = ahi - blo; return;
	case IR_MUL: {
		int64_t c[4] = { alo * blo, alo * bhi, ahi * blo, ahi * bhi };
		*lo = *hi = c[0];
		for (int i = 1; i < 4; i++) {
			if (c[i] < *lo) *lo = c[i];
			if (c[i] > *hi) *hi = c[i];
		}
		return;
	}
	case IR_DIV:
		/* divisors are positive constants (lowering never makes others) */
		*lo = fdiv(alo, blo);
		*hi = fdiv(ahi, blo);
		return;
	case IR_MOD:
		if (alo >= 0 && ahi < blo) {
			*lo = alo;
			*hi = ahi;
		} else {
			*lo = 0;
			*hi = bhi - 1;
		}
		return;
	case IR_MIN:
		*lo = alo < blo ? alo : blo;
		*hi = ahi < bhi ? ahi : bhi;
		return;
	}
}

ir_expr *ir_bin(ir_func *f, int kind, ir_expr *a, ir_expr *b)
{
	int64_t x = 0, y = 0, alo, ahi, blo, bhi;
	if (kind == IR_AND && (!a || !b))
		return a ? a : b; /* NULL stands for "true" */
	int ca = a && ir_const(a, &x), cb = b && ir_const(b, &y);
	switch (kind) {
	case IR_ADD:
		if (ca && cb) return ir_int(f, x + y);
		if (ca && x == 0) return b;
		if (cb && y == 0) return a;
		if (cb && a->kind == IR_ADD && a->b->kind == IR_INT)
			return ir_bin(f, IR_ADD, a->a, ir_int(f, a->b->i + y));
		if (ca)
			return ir_bin(f, IR_ADD, b, a); /* constants to the right */
		break;
	case IR_SUB:
		if (ca && cb) return ir_int(f, x - y);
		if (cb && y == 0) return a;
		if (cb) return ir_bin(f, IR_ADD, a, ir_int(f, -y));
		break;
	case IR_MUL:
		if (ca && cb) return ir_int(f, x * y);
		if ((ca && x == 0) || (cb && y == 0)) return ir_int(f, 0);
		if (ca && x == 1) return b;
		if (cb && y == 1) return a;
		if (ca) return ir_bin(f, IR_MUL, b, a);
		break;
	case IR_DIV:
		if (ca && cb) return ir_int(f, fdiv(x, y));
		if (cb && y == 1) return a;
		if (cb) {
			ir_range(a, &alo, &ahi);
			if (alo >= 0 && ahi < y)
				return ir_int(f, 0);
		}
		break;
	case IR_MOD:
		if (ca && cb) return ir_int(f, x - fdiv(x, y) * y);
		if (cb && y == 1) return ir_int(f, 0);
		if (cb) {
			ir_range(a, &alo, &ahi);
			if (alo >= 0 && ahi < y)
				return a;
		}
		break;
	case IR_MIN:
		if (ca && cb) return ir_int(f, x < y ? x : y);
		ir_range(a, &alo, &ahi);
		ir_range(b, &blo, &bhi);
		if (ahi <= blo) return a;
		if (bhi <= alo) return b;
		break;
	case IR_FMUL:
		if (a->kind == IR_FCONST && a->f == 1.0f) return b;
		if (b->kind == IR_FCONST && b->f == 1.0f) return a;
		break;
	}
	ir_expr *e = new_expr(f, kind);
	e->a = a;
	e->b = b;
	return e;
}

ir_expr *ir_inrange(ir_func *f, ir_expr *a, int64_t lo, int64_t hi)
{
	int64_t alo, ahi;
	ir_range(a, &alo, &ahi);
	if (alo >= lo && ahi < hi)
		return NULL; /* always true */
	ir_expr *e = new_expr(f, IR_INRANGE);
	e->a = a;
	e->i = lo;
	e->j = hi;
	return e;
}

ir_expr *ir_divides(ir_func *f, ir_expr *a, int64_t d)
{
	if (d == 1)
		return NULL;
	ir_expr *e = new_expr(f, IR_DIVIDES);
	e->a = a;
	e->i = d;
	return e;
}

ir_expr *ir_fconst(ir_func *f, float v)
{
	ir_expr *e = new_expr(f, IR_FCONST);
	e->f = v;
	return e;
}

ir_expr *ir_load(ir_func *f, ir_buf *b, ir_expr **idx)
{
	ir_expr *e = new_expr(f, IR_LOAD);
	e->buf = b;
	e->idx = tk_arena_alloc(&f->arena, sizeof(ir_expr *) * (size_t)b->ndim);
	memcpy(e->idx, idx, sizeof(ir_expr *) * (size_t)b->ndim);
	return e;
}

ir_buf *ir_buf_new(ir_func *f, const char *name, int kind, int ndim, const int64_t *shape)
{
	if (f->nbuf == IR_MAXBUF)
		return NULL;
	ir_buf *b = tk_arena_alloc(&f->arena, sizeof *b);
	b->name = tk_arena_strdup(&f->arena, name);
	b->kind = kind;
	b->id = f->nbuf;
	b->ndim = ndim;
	b->size = 1;
	for (int d = 0; d < ndim; d++) {
		b->shape[d] = shape[d];
		b->size *= shape[d];
	}
	if (kind == IRB_WORK) {
		b->off = f->work_floats;
		f->work_floats += (b->size + 15) & ~(int64_t)15;
	}
	f->buf[f->nbuf++] = b;
	return b;
}

ir_stmt *ir_stmt_new(ir_func *f, int kind)
{
	ir_stmt *s = tk_arena_alloc(&f->arena, sizeof *s);
	s->kind = kind;
	s->id = f->nstmt++;
	return s;
}

int64_t ir_coeff(const ir_expr *e, const ir_stmt *l, int *ok)
{
	int oka = 1, okb = 1;
	int64_t a, b;
	*ok = 1;
	switch (e->kind) {
	case IR_INT:
		return 0;
	case IR_VAR:
		return e->loop == l;
	case IR_ADD:
	case IR_SUB:
		a = ir_coeff(e->a, l, &oka);
		b = ir_coeff(e->b, l, &okb);
		*ok = oka && okb;
		return e->kind == IR_ADD ? a + b : a - b;
	case IR_MUL:
		a = ir_coeff(e->a, l, &oka);
		b = ir_coeff(e->b, l, &okb);
		*ok = oka && okb;
		if (e->b->kind == IR_INT)
			return a * e->b->i;
		if (e->a->kind == IR_INT)
			return b * e->a->i;
		if (a || b)
			*ok = 0;
		return 0;
	default:
		/* DIV, MOD, MIN: affine only if l does not occur */
		a = ir_coeff(e->a, l, &oka);
		b = ir_coeff(e->b, l, &okb);
		if (!oka || !okb || a || b)
			*ok = 0;
		return 0;
	}
}

/* ---- printing ------------------------------------------------------- */

static void print_expr(tk_sb *sb, const ir_expr *e)
{
	static const char *const ops[] = {
		[IR_ADD] = " + ", [IR_SUB] = " - ", [IR_MUL] = "*", [IR_DIV] = "/",
		[IR_MOD] = "%", [IR_FADD] = " + ", [IR_FMUL] = "*", [IR_AND] = " && ",
	};
	switch (e->kind) {
	case IR_INT:
		tk_sb_printf(sb, "%lld", (long long)e->i);
		return;
	case IR_VAR:
		tk_sb_puts(sb, e->loop->var);
		return;
	case IR_FCONST:
		tk_sb_printf(sb, "%gf", (double)e->f);
		return;
	case IR_LOAD:
		tk_sb_puts(sb, e->buf->name);
		tk_sb_putc(sb, '[');
		for (int d = 0; d < e->buf->ndim; d++) {
			if (d)
				tk_sb_puts(sb, ", ");
			print_expr(sb, e->idx[d]);
		}
		tk_sb_putc(sb, ']');
		return;
	case IR_MIN:
		tk_sb_puts(sb, "min(");
		print_expr(sb, e->a);
		tk_sb_puts(sb, ", ");
		print_expr(sb, e->b);
		tk_sb_putc(sb, ')');
		return;
	case IR_FRELU:
		tk_sb_puts(sb, "relu(");
		print_expr(sb, e->a);
		tk_sb_putc(sb, ')');
		return;
	case IR_INRANGE:
		tk_sb_printf(sb, "(%lld <= ", (long long)e->i);
		print_expr(sb, e->a);
		tk_sb_printf(sb, " < %lld)", (long long)e->j);
		return;
	case IR_DIVIDES:
		tk_sb_putc(sb, '(');
		print_expr(sb, e->a);
		tk_sb_printf(sb, " %% %lld == 0)", (long long)e->i);
		return;
	case IR_SELECT:
		tk_sb_putc(sb, '(');
		print_expr(sb, e->a);
		tk_sb_puts(sb, " ? ");
		print_expr(sb, e->b);
		tk_sb_puts(sb, " : 0)");
		return;
	}
	tk_sb_putc(sb, '(');
	print_expr(sb, e->a);
	tk_sb_puts(sb, ops[e->kind]);
	print_expr(sb, e->b);
	tk_sb_putc(sb, ')');
}

static void print_stmts(tk_sb *sb, const ir_stmt *s, int depth)
{
	static const char *const ann[] = { "", " parallel", " vectorize", " unroll" };
	for (; s; s = s->next) {
		tk_sb_indent(sb, depth);
		switch (s->kind) {
		case IR_FOR:
			tk_sb_printf(sb, "for %s in ", s->var);
			if (s->begin)
				print_expr(sb, s->begin);
			else
				tk_sb_puts(sb, "0");
			tk_sb_puts(sb, "..");
			print_expr(sb, s->extent);
			tk_sb_printf(sb, "%s", ann[s->ann]);
			if (s->ann == ANN_UNROLL && s->explicit_unroll)
				tk_sb_puts(sb, " explicit");
			tk_sb_puts(sb, ":\n");
			print_stmts(sb, s->body, depth + 1);
			break;
		case IR_ALLOC:
			tk_sb_printf(sb, "alloc %s[", s->buf->name);
			for (int d = 0; d < s->buf->ndim; d++)
				tk_sb_printf(sb, "%s%lld", d ? ", " : "", (long long)s->buf->shape[d]);
			tk_sb_puts(sb, "]:\n");
			print_stmts(sb, s->body, depth + 1);
			break;
		case IR_STORE:
			if (s->cond) {
				tk_sb_puts(sb, "if ");
				print_expr(sb, s->cond);
				tk_sb_puts(sb, ": ");
			}
			tk_sb_printf(sb, "%s[", s->buf->name);
			for (int d = 0; d < s->buf->ndim; d++) {
				if (d)
					tk_sb_puts(sb, ", ");
				print_expr(sb, s->idx[d]);
			}
			tk_sb_printf(sb, "] %s ", s->accum ? "+=" : "=");
			print_expr(sb, s->value);
			tk_sb_putc(sb, '\n');
			break;
		}
	}
}

void ir_print(tk_sb *sb, const ir_func *f)
{
	static const char *const kinds[] = { "output", "input", "const", "work", "local" };
	for (int i = 0; i < f->nbuf; i++) {
		const ir_buf *b = f->buf[i];
		tk_sb_printf(sb, "buffer %s %s[", kinds[b->kind], b->name);
		for (int d = 0; d < b->ndim; d++)
			tk_sb_printf(sb, "%s%lld", d ? ", " : "", (long long)b->shape[d]);
		tk_sb_putc(sb, ']');
		if (b->kind == IRB_WORK)
			tk_sb_printf(sb, " at %lld", (long long)b->off);
		tk_sb_putc(sb, '\n');
	}
	print_stmts(sb, f->body, 0);
}

void ir_func_free(ir_func *f)
{
	if (!f)
		return;
	tk_arena_free(&f->arena);
	free(f);
}
