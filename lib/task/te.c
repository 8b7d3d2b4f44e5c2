/*
 * te: parse task strings and instantiate operator declarations (ops.c) into
 * te_prog programs; evaluate, bound and print index expressions.
 *
 * Parsing runs on every te_task_parse() call: declarations are a few lines
 * and this keeps one source of truth. Errors anywhere inside the parser
 * longjmp to te_task_parse(), which frees the arena and returns TK_EINVAL
 * with the message already set.
 */
#include "te.h"

#include <ctype.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "winograd.h"

enum { NM_PARAM, NM_LET, NM_AXIS };

typedef struct name {
	const char *name;
	int kind;
	int64_t val; /* value, or axis number for NM_AXIS */
	int soft;    /* an optional parameter at its constant default (see mk) */
} name;

/* A parameter of the declaration being instantiated. */
typedef struct pdecl {
	int optional;      /* after '|': left out of the key at its default */
	int64_t def;       /* constant default, -1 if required or named */
	int from;          /* default is the value of parameter `from`, else -1 */
	int64_t min;       /* smallest value accepted */
	int given;
} pdecl;

typedef struct parser {
	te_prog *p;
	const char *s;       /* cursor in the current line */
	int nname;
	name names[96];
	te_stage *st;        /* stage whose axes may appear in expressions */
	int64_t flops;       /* from a `flops` line, or -1 */
	jmp_buf fail;
} parser;

static void __attribute__((noreturn, format(printf, 2, 3)))
fail(parser *ps, const char *fmt, ...)
{
	char buf[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	tk_seterr(TK_EINVAL, "%s: %s", ps->p->op, buf);
	longjmp(ps->fail, 1);
}

/* ---- expressions ---------------------------------------------------- */

static int64_t floordiv(int64_t a, int64_t b)
{
	int64_t q = a / b;
	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

static int64_t floormod(int64_t a, int64_t b)
{
	return a - floordiv(a, b) * b;
}

static te_expr *node(parser *ps, int kind, int64_t val, te_expr *a, te_expr *b, int soft)
{
	te_expr *e = tk_arena_alloc(&ps->p->arena, sizeof *e);
	e->kind = kind;
	e->val = val;
	e->a = a;
	e->b = b;
	e->soft = soft;
	return e;
}

static int is_const(const te_expr *e, int64_t v)
{
	return e->kind == TE_CONST && e->val == v;
}

/*
 * Build a node, folding constants. A "soft" constant comes from an optional
 * parameter at its constant default (dilation=1, groups=1): the terms it
 * neutralises fold away (x*1, x+0, x/1, and axis/C when the axis stays below
 * C), so a task that leaves the new parameters out instantiates exactly the
 * program it did before they existed. Ordinary constants never fold with an
 * axis: `y*stride` with stride=1 stays a product, as it always was.
 */
static te_expr *mk(parser *ps, int kind, int64_t val, te_expr *a, te_expr *b)
{
	if (a && b && a->kind == TE_CONST && b->kind == TE_CONST) {
		int64_t x = a->val, y = b->val;
		if ((kind == TE_DIV || kind == TE_MOD || kind == TE_EDIV) && y <= 0)
			fail(ps, "division by %lld in a size expression", (long long)y);
		switch (kind) {
		case TE_ADD: val = x + y; break;
		case TE_SUB: val = x - y; break;
		case TE_MUL: val = x * y; break;
		case TE_DIV: val = floordiv(x, y); break;
		case TE_MOD: val = floormod(x, y); break;
		default: goto keep; /* EDIV of constants keeps its validity check */
		}
		return node(ps, TE_CONST, val, NULL, NULL, a->soft || b->soft);
	}
	if (a && b && (a->soft || b->soft)) {
		te_expr *c = a->soft ? a : b, *o = a->soft ? b : a;
		if (kind == TE_MUL && is_const(c, 1))
			return o;
		if (kind == TE_MUL && is_const(c, 0))
			return c;
		if (kind == TE_ADD && is_const(c, 0))
			return o;
		if ((kind == TE_SUB && b->soft && is_const(b, 0)) ||
		    ((kind == TE_DIV || kind == TE_EDIV) && b->soft && is_const(b, 1)))
			return a;
		if ((kind == TE_DIV || kind == TE_MOD) && b->soft && ps->st) {
			/* an axis below the divisor: its quotient is 0, its remainder itself */
			int64_t ext[TE_MAXAXIS], lo, hi;
			for (int i = 0; i < ps->st->naxis; i++)
				ext[i] = ps->st->axis[i].extent;
			te_expr_range(a, ext, &lo, &hi);
			if (lo >= 0 && hi < b->val)
				return kind == TE_MOD ? a : node(ps, TE_CONST, 0, NULL, NULL, 1);
		}
	}
keep:
	return node(ps, kind, val, a, b, 0);
}

static void skipsp(parser *ps)
{
	while (*ps->s == ' ' || *ps->s == '\t')
		ps->s++;
}

static int accept(parser *ps, const char *tok)
{
	skipsp(ps);
	size_t n = strlen(tok);
	if (strncmp(ps->s, tok, n))
		return 0;
	/* keywords must not run into an identifier */
	if (isalpha((unsigned char)tok[0]) && (isalnum((unsigned char)ps->s[n]) || ps->s[n] == '_'))
		return 0;
	/* '+' must not match the start of '+=' */
	if (!strcmp(tok, "+") && ps->s[1] == '=')
		return 0;
	ps->s += n;
	return 1;
}

static void expect(parser *ps, const char *tok)
{
	if (!accept(ps, tok))
		fail(ps, "expected '%s' at '%.20s'", tok, ps->s);
}

static const char *ident(parser *ps)
{
	skipsp(ps);
	const char *b = ps->s;
	if (!isalpha((unsigned char)*b) && *b != '_')
		fail(ps, "expected a name at '%.20s'", b);
	while (isalnum((unsigned char)*ps->s) || *ps->s == '_')
		ps->s++;
	size_t n = (size_t)(ps->s - b);
	char *id = tk_arena_alloc(&ps->p->arena, n + 1);
	memcpy(id, b, n);
	return id;
}

static name *lookup(parser *ps, const char *id)
{
	for (int i = ps->nname - 1; i >= 0; i--)
		if (!strcmp(ps->names[i].name, id))
			return &ps->names[i];
	return NULL;
}

static void define(parser *ps, const char *id, int kind, int64_t val)
{
	if (ps->nname == ArraySize(ps->names))
		fail(ps, "too many names");
	ps->names[ps->nname++] = (name){ id, kind, val, 0 };
}

static te_expr *expr(parser *ps);

static te_expr *factor(parser *ps)
{
	skipsp(ps);
	if (accept(ps, "(")) {
		te_expr *e = expr(ps);
		expect(ps, ")");
		return e;
	}
	if (accept(ps, "-"))
		return mk(ps, TE_SUB, 0, mk(ps, TE_CONST, 0, NULL, NULL), factor(ps));
	if (isdigit((unsigned char)*ps->s)) {
		int64_t v = 0;
		while (isdigit((unsigned char)*ps->s))
			v = v * 10 + (*ps->s++ - '0');
		return mk(ps, TE_CONST, v, NULL, NULL);
	}
	if (accept(ps, "ediv")) {
		expect(ps, "(");
		te_expr *a = expr(ps);
		expect(ps, ",");
		te_expr *b = expr(ps);
		expect(ps, ")");
		if (b->kind != TE_CONST || b->val <= 0)
			fail(ps, "ediv needs a positive constant divisor");
		if (b->val == 1)
			return a;
		return mk(ps, TE_EDIV, 0, a, b);
	}
	const char *id = ident(ps);
	name *nm = lookup(ps, id);
	if (!nm)
		fail(ps, "unknown name '%s'", id);
	if (nm->kind == NM_AXIS)
		return mk(ps, TE_AXIS, nm->val, NULL, NULL);
	return node(ps, TE_CONST, nm->val, NULL, NULL, nm->soft);
}

static te_expr *term(parser *ps)
{
	te_expr *e = factor(ps);
	for (;;) {
		int kind;
		if (accept(ps, "*"))
			kind = TE_MUL;
		else if (accept(ps, "/"))
			kind = TE_DIV;
		else if (accept(ps, "%"))
			kind = TE_MOD;
		else
			return e;
		te_expr *f = factor(ps);
		if (kind != TE_MUL && (f->kind != TE_CONST || f->val <= 0))
			fail(ps, "'/' and '%%' need a positive constant divisor");
		if (kind == TE_MUL && e->kind != TE_CONST && f->kind != TE_CONST)
			fail(ps, "a product of two axes is not an index");
		e = mk(ps, kind, 0, e, f);
	}
}

static te_expr *expr(parser *ps)
{
	te_expr *e = term(ps);
	for (;;) {
		if (accept(ps, "+"))
			e = mk(ps, TE_ADD, 0, e, term(ps));
		else if (accept(ps, "-"))
			e = mk(ps, TE_SUB, 0, e, term(ps));
		else
			return e;
	}
}

/* A size expression: must fold to a constant. */
static int64_t cexpr(parser *ps)
{
	te_stage *st = ps->st;
	ps->st = NULL;
	te_expr *e = expr(ps);
	ps->st = st;
	if (e->kind != TE_CONST)
		fail(ps, "size expression uses an axis");
	return e->val;
}

int64_t te_expr_eval(const te_expr *e, const int64_t *ax, int *ok)
{
	int64_t a, b;
	switch (e->kind) {
	case TE_CONST: return e->val;
	case TE_AXIS: return ax[e->val];
	}
	a = te_expr_eval(e->a, ax, ok);
	b = te_expr_eval(e->b, ax, ok);
	switch (e->kind) {
	case TE_ADD: return a + b;
	case TE_SUB: return a - b;
	case TE_MUL: return a * b;
	case TE_DIV: return floordiv(a, b);
	case TE_MOD: return floormod(a, b);
	case TE_EDIV:
		if (floormod(a, b)) {
			*ok = 0;
			return 0;
		}
		return floordiv(a, b);
	}
	return 0;
}

void te_expr_range(const te_expr *e, const int64_t *extent, int64_t *lo, int64_t *hi)
{
	int64_t alo, ahi, blo, bhi;
	switch (e->kind) {
	case TE_CONST:
		*lo = *hi = e->val;
		return;
	case TE_AXIS:
		*lo = 0;
		*hi = extent[e->val] - 1;
		return;
	}
	te_expr_range(e->a, extent, &alo, &ahi);
	te_expr_range(e->b, extent, &blo, &bhi);
	switch (e->kind) {
	case TE_ADD: *lo = alo + blo; *hi = ahi + bhi; return;
	case TE_SUB: *lo = alo - bhi; *hi = ahi - blo; return;
	case TE_MUL: {
		/* one side is constant (the parser enforces it) */
		int64_t c[4] = { alo * blo, alo * bhi, ahi * blo, ahi * bhi };
		*lo = *hi = c[0];
		for (int i = 1; i < 4; i++) {
			if (c[i] < *lo) *lo = c[i];
			if (c[i] > *hi) *hi = c[i];
		}
		return;
	}
	case TE_DIV:
	case TE_EDIV:
		*lo = floordiv(alo, blo);
		*hi = floordiv(ahi, blo);
		return;
	case TE_MOD:
		if (alo >= 0 && ahi < blo) {
			*lo = alo;
			*hi = ahi;
		} else {
			*lo = 0;
			*hi = blo - 1;
		}
		return;
	}
}

int64_t te_expr_coeff(const te_expr *e, int ax, int *ok)
{
	*ok = 1;
	switch (e->kind) {
	case TE_CONST: return 0;
	case TE_AXIS: return e->val == ax;
	case TE_ADD:
	case TE_SUB: {
		int oka, okb;
		int64_t a = te_expr_coeff(e->a, ax, &oka), b = te_expr_coeff(e->b, ax, &okb);
		*ok = oka && okb;
		return e->kind == TE_ADD ? a + b : a - b;
	}
	case TE_MUL: {
		int oka, okb;
		int64_t a = te_expr_coeff(e->a, ax, &oka), b = te_expr_coeff(e->b, ax, &okb);
		*ok = oka && okb;
		if (e->a->kind == TE_CONST)
			return e->a->val * b;
		if (e->b->kind == TE_CONST)
			return a * e->b->val;
		*ok = 0;
		return 0;
	}
	default: {
		/* under DIV/MOD/EDIV: fine only if the axis does not occur */
		int oka, okb;
		int64_t a = te_expr_coeff(e->a, ax, &oka), b = te_expr_coeff(e->b, ax, &okb);
		if (!oka || !okb || a || b)
			*ok = 0;
		return 0;
	}
	}
}

static void print_rec(tk_sb *sb, const te_expr *e, const te_stage *st, int prec)
{
	static const char *ops[] = { [TE_ADD] = " + ", [TE_SUB] = " - ", [TE_MUL] = "*",
	                             [TE_DIV] = "/", [TE_MOD] = "%" };
	int myprec;
	switch (e->kind) {
	case TE_CONST:
		tk_sb_printf(sb, "%lld", (long long)e->val);
		return;
	case TE_AXIS:
		tk_sb_puts(sb, st ? st->axis[e->val].name : "?");
		return;
	case TE_EDIV:
		tk_sb_puts(sb, "ediv(");
		print_rec(sb, e->a, st, 0);
		tk_sb_puts(sb, ", ");
		print_rec(sb, e->b, st, 0);
		tk_sb_puts(sb, ")");
		return;
	}
	myprec = (e->kind == TE_ADD || e->kind == TE_SUB) ? 1 : 2;
	if (myprec < prec)
		tk_sb_putc(sb, '(');
	print_rec(sb, e->a, st, myprec);
	tk_sb_puts(sb, ops[e->kind]);
	print_rec(sb, e->b, st, myprec + 1);
	if (myprec < prec)
		tk_sb_putc(sb, ')');
}

void te_expr_print(tk_sb *sb, const te_expr *e, const te_stage *st)
{
	print_rec(sb, e, st, 0);
}

/* ---- declarations --------------------------------------------------- */

static int find_tensor(const te_prog *p, const char *nm)
{
	for (int i = 0; i < p->ntensor; i++)
		if (!strcmp(p->tensor[i].name, nm))
			return i;
	return -1;
}

static te_tensor *new_tensor(parser *ps, const char *nm, int kind)
{
	te_prog *p = ps->p;
	if (find_tensor(p, nm) >= 0)
		fail(ps, "tensor '%s' declared twice", nm);
	if (p->ntensor == TE_MAXTENSOR)
		fail(ps, "too many tensors");
	te_tensor *t = &p->tensor[p->ntensor++];
	t->name = nm;
	t->kind = kind;
	t->stage = -1;
	return t;
}

static void check_size(parser *ps, te_tensor *t)
{
	t->size = 1;
	for (int d = 0; d < t->ndim; d++) {
		if (t->shape[d] < 1)
			fail(ps, "tensor %s has empty dimension %d (size %lld): shapes too small",
			     t->name, d, (long long)t->shape[d]);
		t->size *= t->shape[d];
		if (t->size > (int64_t)1 << 31)
			fail(ps, "tensor %s has more than 2^31 elements", t->name);
	}
}

/* NAME[EXPR, ...] as a tensor declaration. */
static void tensor_decl(parser *ps, int kind)
{
	te_tensor *t = new_tensor(ps, ident(ps), kind);
	expect(ps, "[");
	do {
		if (t->ndim == TE_MAXDIM)
			fail(ps, "too many dimensions");
		t->shape[t->ndim++] = cexpr(ps);
	} while (accept(ps, ","));
	expect(ps, "]");
	check_size(ps, t);
	if (kind == TE_INPUT)
		ps->p->input[ps->p->ninput++] = (int)(t - ps->p->tensor);
}

static void const_decl(parser *ps)
{
	te_prog *p = ps->p;
	tensor_decl(ps, TE_CONSTANT);
	te_tensor *t = &p->tensor[p->ntensor - 1];
	expect(ps, "=");
	const char *gen = ident(ps);
	name *m = lookup(ps, "m");
	/* checked before the values are allocated: a task asking for m = 5e8
	 * asked for gigabytes */
	const char *why = winograd_fill(gen, m ? m->val : 0, t->ndim, t->shape, NULL);
	if (why) {
		fail(ps, "%s", why);
		return;
	}
	float *v = tk_arena_alloc(&p->arena, (size_t)t->size * sizeof *v);
	winograd_fill(gen, m->val, t->ndim, t->shape, v);
	t->values = v;
}

static void axis_decl(parser *ps, te_stage *st, int reduce)
{
	if (st->naxis == TE_MAXAXIS)
		fail(ps, "too many axes");
	te_axis *a = &st->axis[st->naxis];
	a->name = ident(ps);
	expect(ps, ":");
	a->extent = cexpr(ps);
	a->reduce = reduce;
	if (a->extent < 1)
		fail(ps, "axis %s has extent %lld: shapes too small", a->name, (long long)a->extent);
	for (int i = 0; i < st->naxis; i++)
		if (!strcmp(st->axis[i].name, a->name))
			fail(ps, "axis %s declared twice", a->name);
	define(ps, a->name, NM_AXIS, st->naxis);
	st->naxis++;
}

static void read_decl(parser *ps, te_stage *st)
{
	te_prog *p = ps->p;
	if (st->nread == TE_MAXREAD)
		fail(ps, "too many factors");
	te_read *r = &st->read[st->nread++];
	const char *nm = ident(ps);
	r->tensor = find_tensor(p, nm);
	if (r->tensor < 0)
		fail(ps, "unknown tensor '%s'", nm);
	te_tensor *t = &p->tensor[r->tensor];
	expect(ps, "[");
	int d = 0;
	do {
		if (d == t->ndim)
			fail(ps, "too many indices for %s", nm);
		r->idx[d++] = expr(ps);
	} while (accept(ps, ","));
	expect(ps, "]");
	if (d != t->ndim)
		fail(ps, "%s has %d dimensions, read with %d indices", nm, t->ndim, d);
}

static void stage_decl(parser *ps)
{
	te_prog *p = ps->p;
	if (p->nstage == TE_MAXSTAGE)
		fail(ps, "too many stages");
	te_stage *st = &p->stage[p->nstage];
	int mark = ps->nname; /* axis names are local to the stage */
	te_tensor *t = new_tensor(ps, ident(ps), TE_TEMP);
	t->stage = p->nstage;
	st->out = (int)(t - p->tensor);
	st->vector = -1;
	ps->st = st;
	expect(ps, "[");
	do
		axis_decl(ps, st, 0);
	while (accept(ps, ","));
	expect(ps, "]");
	st->nspatial = st->naxis;
	t->ndim = st->naxis;
	for (int i = 0; i < st->naxis; i++)
		t->shape[i] = st->axis[i].extent;
	check_size(ps, t);
	if (accept(ps, "+="))
		st->accumulate = 1;
	else
		expect(ps, "=");
	/* The body may name reduction axes declared after it: scan `over` first. */
	const char *body = ps->s;
	const char *over = strstr(body, " over ");
	if (over) {
		ps->s = over + 6;
		while (skipsp(ps), *ps->s && strncmp(ps->s, "relu", 4))
			axis_decl(ps, st, 1);
	}
	const char *tail = ps->s;
	ps->s = body;
	do
		read_decl(ps, st);
	while (accept(ps, "*"));
	if (over)
		ps->s = tail;
	if (accept(ps, "relu"))
		st->epilogue = TE_EPI_RELU;
	skipsp(ps);
	if (*ps->s)
		fail(ps, "unexpected '%.20s' in stage", ps->s);
	if (!st->accumulate && st->naxis != st->nspatial)
		fail(ps, "'=' stage with reduction axes");
	double pts = 1;
	for (int i = 0; i < st->naxis; i++)
		pts *= (double)st->axis[i].extent;
	st->flops = pts * ((st->nread - 1) + (st->accumulate ? 1 : 0));
	ps->st = NULL;
	ps->nname = mark;
	p->nstage++;
}

/* Parse the params line: NAME, NAME=NUMBER or NAME=OTHER (an earlier
 * parameter's value); the ones after '|' are optional: the task's key names
 * them only when they differ from their default. A parameter accepts 0 when
 * its default is 0 (or is another that accepts 0), else values >= 1. */
static void params_decl(parser *ps, pdecl *pd)
{
	te_prog *p = ps->p;
	int optional = 0;
	while (skipsp(ps), *ps->s) {
		if (accept(ps, "|")) {
			optional = 1;
			continue;
		}
		if (p->nparam == TE_MAXPARAM)
			fail(ps, "too many parameters");
		pdecl *d = &pd[p->nparam];
		*d = (pdecl){ optional, -1, -1, 1, 0 };
		const char *id = ident(ps);
		if (accept(ps, "=")) {
			skipsp(ps);
			if (isdigit((unsigned char)*ps->s)) {
				d->def = cexpr(ps);
				d->min = d->def == 0 ? 0 : 1;
			} else {
				const char *other = ident(ps);
				for (int i = 0; i < p->nparam; i++)
					if (!strcmp(p->param[i].name, other))
						d->from = i;
				if (d->from < 0)
					fail(ps, "default of '%s' names no earlier parameter", id);
				d->min = pd[d->from].min;
			}
		}
		if (optional && d->def < 0 && d->from < 0)
			fail(ps, "optional parameter '%s' has no default", id);
		p->param[p->nparam].name = id;
		p->param[p->nparam].val = -1;
		p->nparam++;
	}
}

static int cmp_param(const void *a, const void *b)
{
	return strcmp(((const te_param *)a)->name, ((const te_param *)b)->name);
}

/* Fill parameter values from "k=v,k=v" (args may be NULL), then the
 * defaults, in declaration order. */
static void apply_args(parser *ps, const char *args, pdecl *pd)
{
	te_prog *p = ps->p;
	const char *s = args;
	while (s && *s) {
		const char *eq = strchr(s, '='), *comma = strchr(s, ',');
		if (!comma)
			comma = s + strlen(s);
		if (!eq || eq > comma)
			fail(ps, "expected key=value at '%.*s'", (int)(comma - s), s);
		int i;
		for (i = 0; i < p->nparam; i++)
			if ((size_t)(eq - s) == strlen(p->param[i].name) &&
			    !strncmp(s, p->param[i].name, (size_t)(eq - s)))
				break;
		if (i == p->nparam)
			fail(ps, "unknown parameter '%.*s'", (int)(eq - s), s);
		if (pd[i].given++)
			fail(ps, "parameter '%s' given twice", p->param[i].name);
		char val[32];
		int64_t v;
		if (comma - eq - 1 <= 0 || comma - eq - 1 >= (int)sizeof val)
			fail(ps, "bad value for '%s'", p->param[i].name);
		memcpy(val, eq + 1, (size_t)(comma - eq - 1));
		val[comma - eq - 1] = 0;
		if (tk_parse_i64(val, &v) || v > 1000000000)
			fail(ps, "value of '%s' must be an integer, got '%s'", p->param[i].name, val);
		if (v < pd[i].min)
			fail(ps, "'%s' must be >= %lld, got %lld", p->param[i].name,
			     (long long)pd[i].min, (long long)v);
		p->param[i].val = v;
		s = *comma ? comma + 1 : comma;
		if (*comma && !*s)
			fail(ps, "trailing ',' in task");
	}
	for (int i = 0; i < p->nparam; i++) {
		if (!pd[i].given) {
			if (pd[i].from >= 0)
				p->param[i].val = p->param[pd[i].from].val;
			else if (pd[i].def >= 0)
				p->param[i].val = pd[i].def;
			else
				fail(ps, "missing parameter '%s'", p->param[i].name);
		}
		define(ps, p->param[i].name, NM_PARAM, p->param[i].val);
		/* an optional parameter at its numeric default (or at the value of
		 * another that is) folds away */
		int def = pd[i].from < 0 ? p->param[i].val == pd[i].def :
		          p->param[i].val == p->param[pd[i].from].val &&
		          lookup(ps, p->param[pd[i].from].name)->soft;
		ps->names[ps->nname - 1].soft = pd[i].optional && def;
	}
}

/* The canonical key: the operator, then its parameters sorted by name; an
 * optional one only where it differs from its default. */
static void build_key(parser *ps, const pdecl *pd)
{
	te_prog *p = ps->p;
	te_param sorted[TE_MAXPARAM];
	int n = 0;
	for (int i = 0; i < p->nparam; i++) {
		int64_t def = pd[i].from >= 0 ? p->param[pd[i].from].val : pd[i].def;
		p->param[i].in_key = !pd[i].optional || p->param[i].val != def;
		if (p->param[i].in_key)
			sorted[n++] = p->param[i];
	}
	qsort(sorted, (size_t)n, sizeof *sorted, cmp_param);
	tk_sb sb;
	tk_sb_init(&sb);
	tk_sb_printf(&sb, "%s", p->op);
	for (int i = 0; i < n; i++)
		tk_sb_printf(&sb, "%c%s=%lld", i ? ',' : ':', sorted[i].name,
		             (long long)sorted[i].val);
	if (sb.oom) {
		tk_sb_free(&sb);
		longjmp(p->arena.oom, 1);
	}
	p->key = tk_arena_strdup(&p->arena, sb.s);
	tk_sb_free(&sb);
}

static void instantiate(parser *ps, const te_opdecl *d, const char *args)
{
	te_prog *p = ps->p;
	pdecl pd[TE_MAXPARAM];
	char *text = tk_arena_strdup(&p->arena, d->text);
	char *save = NULL;
	int first = 1;
	ps->flops = -1;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		ps->s = line;
		if (first) {
			expect(ps, "params");
			params_decl(ps, pd);
			apply_args(ps, args, pd);
			build_key(ps, pd);
			first = 0;
			continue;
		}
		if (accept(ps, "let")) {
			const char *id = ident(ps);
			expect(ps, "=");
			define(ps, id, NM_LET, cexpr(ps));
		} else if (accept(ps, "input")) {
			tensor_decl(ps, TE_INPUT);
		} else if (accept(ps, "const")) {
			const_decl(ps);
		} else if (accept(ps, "stage")) {
			stage_decl(ps);
		} else if (accept(ps, "vector")) {
			const char *id = ident(ps);
			te_stage *st = p->nstage ? &p->stage[p->nstage - 1] : NULL;
			int a = -1;
			for (int i = 0; st && i < st->nspatial; i++)
				if (!strcmp(st->axis[i].name, id))
					a = i;
			if (a < 0)
				fail(ps, "vector: '%s' is not a spatial axis of the last stage", id);
			st->vector = st->axis[a].extent > 1 ? a : -1; /* a block of 1: no block */
		} else if (accept(ps, "divides")) {
			const char *a = ident(ps), *b = ident(ps);
			const name *na = lookup(ps, a), *nb = lookup(ps, b);
			if (!na || !nb)
				fail(ps, "divides: unknown name");
			if (na->val < 1 || nb->val % na->val)
				fail(ps, "%s=%lld must divide %s=%lld", a, (long long)na->val, b,
				     (long long)nb->val);
		} else if (accept(ps, "flops")) {
			ps->flops = cexpr(ps);
		} else {
			fail(ps, "bad declaration line '%.30s'", line);
		}
		skipsp(ps);
		if (*ps->s)
			fail(ps, "unexpected '%.20s'", ps->s);
	}
	if (p->nstage == 0)
		fail(ps, "no stages");
	p->output = p->stage[p->nstage - 1].out;
	p->tensor[p->output].kind = TE_OUTPUT;
	p->flops = 0;
	for (int i = 0; i < p->nstage; i++)
		p->flops += p->stage[i].flops;
	if (ps->flops >= 0)
		p->flops = (double)ps->flops;
}

int te_task_parse(const char *task, te_prog **out)
{
	*out = NULL;
	if (!task || !*task)
		return tk_seterr(TK_EINVAL, "empty task");
	for (const char *c = task; *c; c++)
		if (isspace((unsigned char)*c))
			return tk_seterr(TK_EINVAL, "task '%s' contains white space", task);
	const char *colon = strchr(task, ':');
	size_t n = colon ? (size_t)(colon - task) : strlen(task);
	char opname[64];
	if (n == 0 || n >= sizeof opname)
		return tk_seterr(TK_EINVAL, "task '%s': expected OP:key=value,...", task);
	memcpy(opname, task, n);
	opname[n] = 0;
	const te_opdecl *d = te_op_find(opname);
	if (!d)
		return tk_seterr(TK_EINVAL, "unknown operator '%s' (see 'tunekit help tasks')", opname);
	te_prog *p = calloc(1, sizeof *p);
	if (!p)
		return tk_seterr(TK_ENOMEM, "out of memory");
	tk_arena_init(&p->arena);
	parser *ps = calloc(1, sizeof *ps);
	if (!ps) {
		free(p);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	ps->p = p;
	p->op = d->name;
	if (setjmp(p->arena.oom)) {
		free(ps);
		te_prog_free(p);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	if (setjmp(ps->fail)) {
		free(ps);
		te_prog_free(p);
		return TK_EINVAL;
	}
	instantiate(ps, d, colon ? colon + 1 : NULL);
	free(ps);
	*out = p;
	return TK_OK;
}

void te_prog_free(te_prog *p)
{
	if (!p)
		return;
	tk_arena_free(&p->arena);
	free(p);
}

void te_tensor_print(tk_sb *sb, const te_tensor *t)
{
	tk_sb_printf(sb, "%s[", t->name);
	for (int d = 0; d < t->ndim; d++)
		tk_sb_printf(sb, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
	tk_sb_putc(sb, ']');
}

void te_stage_print(tk_sb *sb, const te_prog *p, const te_stage *st)
{
	tk_sb_printf(sb, "%s[", p->tensor[st->out].name);
	for (int i = 0; i < st->nspatial; i++)
		tk_sb_printf(sb, "%s%s:%lld", i ? ", " : "", st->axis[i].name,
		             (long long)st->axis[i].extent);
	tk_sb_printf(sb, "] %s ", st->accumulate ? "+=" : "=");
	for (int r = 0; r < st->nread; r++) {
		const te_read *rd = &st->read[r];
		tk_sb_printf(sb, "%s%s[", r ? " * " : "", p->tensor[rd->tensor].name);
		for (int d = 0; d < p->tensor[rd->tensor].ndim; d++) {
			if (d)
				tk_sb_puts(sb, ", ");
			te_expr_print(sb, rd->idx[d], st);
		}
		tk_sb_putc(sb, ']');
	}
	if (st->naxis > st->nspatial) {
		tk_sb_puts(sb, " over");
		for (int i = st->nspatial; i < st->naxis; i++)
			tk_sb_printf(sb, " %s:%lld", st->axis[i].name, (long long)st->axis[i].extent);
	}
	if (st->epilogue == TE_EPI_RELU)
		tk_sb_puts(sb, " relu");
}
