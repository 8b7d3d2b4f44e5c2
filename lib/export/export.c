/*
 * export: tuned kernels as a folder of C files (see export.h). Four parts:
 * the reference emitter, which prints a te_prog as plain C loops the way
 * lib/task/ref.c interprets it (spatial axes outer, a double accumulator
 * over the reduction axes, every read guarded, intermediate stages in
 * malloc'd double buffers) and shares nothing with the schedule, IR and
 * code generator it checks; one kernel (kn_build's C with its symbols
 * renamed, its header); the files the kernels of an export share (test
 * program, Makefile, README) and the writer of the folder; the selection of
 * the best records from the store.
 */
#include "export.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/kernel.h"
#include "space/space.h"
#include "task/ref.h"

/* ---- reference emitter ------------------------------------------------------ */

const char ex_ref_prelude[] =
	"#include <math.h>\n"
	"#include <stdint.h>\n"
	"#include <stdlib.h>\n"
	"\n"
	"/* Index arithmetic of tensor expressions: floor division and modulo by a\n"
	" * positive constant, and exact division, which clears *ok (and gives 0)\n"
	" * when b does not divide a: the read it is part of is then 0. */\n"
	"static inline int64_t rk_fdiv(int64_t a, int64_t b)\n"
	"{\n"
	"\tint64_t q = a / b;\n"
	"\treturn (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;\n"
	"}\n"
	"\n"
	"static inline int64_t rk_fmod(int64_t a, int64_t b)\n"
	"{\n"
	"\treturn a - rk_fdiv(a, b) * b;\n"
	"}\n"
	"\n"
	"static inline int64_t rk_ediv(int64_t a, int64_t b, int *ok)\n"
	"{\n"
	"\tif (rk_fmod(a, b)) {\n"
	"\t\t*ok = 0;\n"
	"\t\treturn 0;\n"
	"\t}\n"
	"\treturn rk_fdiv(a, b);\n"
	"}\n";

/* Names an axis may not have in the emitted code: C keywords and what the
 * emitted function itself declares or calls. Tensors appear as t_NAME and
 * abs_NAME, locals end in '_'. */
static const char *const reserved[] = {
	"auto", "break", "case", "char", "const", "continue", "default", "do", "double",
	"else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
	"register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
	"switch", "typedef", "union", "unsigned", "void", "volatile", "while", "_Bool",
	"int64_t", "in", "out", "outabs", "fabs", "malloc", "free", "NULL",
};

static int is_ident(const char *s)
{
	if (!s || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
		return 0;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9')))
			return 0;
	return 1;
}

/* 1 if axis name s could clash with the emitted code's own names. */
static int bad_axis_name(const char *s)
{
	size_t n = strlen(s);
	if (!is_ident(s) || s[n - 1] == '_' || !strncmp(s, "t_", 2) || !strncmp(s, "abs_", 4) ||
	    !strncmp(s, "rk_", 3) || !strncmp(s, "ref_", 4))
		return 1;
	for (int i = 0; i < ArraySize(reserved); i++)
		if (!strcmp(s, reserved[i]))
			return 1;
	return 0;
}

static void indent(tk_sb *sb, int depth)
{
	for (int i = 0; i < depth; i++)
		tk_sb_putc(sb, '\t');
}

/* Index expression e of stage st as C; prec as in te.c's printer. */
static void emit_expr(tk_sb *sb, const te_expr *e, const te_stage *st, int prec)
{
	int myprec;
	switch (e->kind) {
	case TE_CONST:
		tk_sb_printf(sb, e->val < 0 ? "(%lld)" : "%lld", (long long)e->val);
		return;
	case TE_AXIS:
		tk_sb_puts(sb, st->axis[e->val].name);
		return;
	case TE_DIV:
	case TE_MOD:
	case TE_EDIV:
		tk_sb_puts(sb, e->kind == TE_DIV ? "rk_fdiv(" : e->kind == TE_MOD ? "rk_fmod(" : "rk_ediv(");
		emit_expr(sb, e->a, st, 0);
		tk_sb_puts(sb, ", ");
		emit_expr(sb, e->b, st, 0);
		tk_sb_puts(sb, e->kind == TE_EDIV ? ", &ok_)" : ")");
		return;
	}
	myprec = e->kind == TE_MUL ? 2 : 1;
	if (myprec < prec)
		tk_sb_putc(sb, '(');
	emit_expr(sb, e->a, st, myprec);
	tk_sb_puts(sb, e->kind == TE_ADD ? " + " : e->kind == TE_SUB ? " - " : " * ");
	emit_expr(sb, e->b, st, myprec + 1);
	if (myprec < prec)
		tk_sb_putc(sb, ')');
}

/* Row-major offset of indices var[0..ndim) (printf pattern with %d) in shape. */
static void emit_offset(tk_sb *sb, const char *const *var, int ndim, const int64_t *shape)
{
	for (int d = 0; d < ndim - 2; d++)
		tk_sb_putc(sb, '(');
	tk_sb_puts(sb, var[0]);
	for (int d = 1; d < ndim; d++)
		tk_sb_printf(sb, "%s * %lld + %s", d >= 2 ? ")" : "", (long long)shape[d], var[d]);
}

/* A comment: text with any comment terminator broken up. */
static void emit_comment_text(tk_sb *sb, const char *s)
{
	for (; *s; s++) {
		tk_sb_putc(sb, *s);
		if (s[0] == '*' && s[1] == '/')
			tk_sb_putc(sb, ' ');
	}
}

/* The reads of one point of stage st into v<r>_, a<r>_, at depth. */
static void emit_reads(tk_sb *sb, const te_prog *p, const te_stage *st, int depth)
{
	indent(sb, depth);
	tk_sb_puts(sb, "double");
	for (int r = 0; r < st->nread; r++)
		tk_sb_printf(sb, "%s v%d_ = 0, a%d_ = 0", r ? "," : "", r, r);
	tk_sb_puts(sb, ";\n");
	for (int r = 0; r < st->nread; r++) {
		const te_read *rd = &st->read[r];
		const te_tensor *t = &p->tensor[rd->tensor];
		char names[TE_MAXDIM][16]; /* "d%d_" of any int: no truncation warning */
		const char *var[TE_MAXDIM];
		indent(sb, depth);
		tk_sb_printf(sb, "{ /* %s[", t->name);
		for (int d = 0; d < t->ndim; d++) {
			tk_sb t1;
			tk_sb_init(&t1);
			te_expr_print(&t1, rd->idx[d], st);
			if (d)
				tk_sb_puts(sb, ", ");
			if (t1.s)
				emit_comment_text(sb, t1.s);
			tk_sb_free(&t1);
		}
		tk_sb_puts(sb, "] */\n");
		indent(sb, depth + 1);
		tk_sb_puts(sb, "int ok_ = 1;\n");
		for (int d = 0; d < t->ndim; d++) {
			snprintf(names[d], sizeof names[d], "d%d_", d);
			var[d] = names[d];
			indent(sb, depth + 1);
			tk_sb_printf(sb, "int64_t d%d_ = ", d);
			emit_expr(sb, rd->idx[d], st, 0);
			tk_sb_puts(sb, ";\n");
		}
		indent(sb, depth + 1);
		tk_sb_puts(sb, "if (ok_");
		for (int d = 0; d < t->ndim; d++)
			tk_sb_printf(sb, " && d%d_ >= 0 && d%d_ < %lld", d, d, (long long)t->shape[d]);
		tk_sb_puts(sb, ") {\n");
		indent(sb, depth + 2);
		tk_sb_printf(sb, "v%d_ = t_%s[", r, t->name);
		emit_offset(sb, var, t->ndim, t->shape);
		tk_sb_puts(sb, "];\n");
		indent(sb, depth + 2);
		if (t->kind == TE_INPUT || t->kind == TE_CONSTANT) {
			tk_sb_printf(sb, "a%d_ = fabs(v%d_);\n", r, r);
		} else {
			tk_sb_printf(sb, "a%d_ = abs_%s[", r, t->name);
			emit_offset(sb, var, t->ndim, t->shape);
			tk_sb_puts(sb, "];\n");
		}
		indent(sb, depth + 1);
		tk_sb_puts(sb, "}\n");
		indent(sb, depth);
		tk_sb_puts(sb, "}\n");
	}
}

static void emit_stage(tk_sb *sb, const te_prog *p, int s)
{
	const te_stage *st = &p->stage[s];
	const te_tensor *o = &p->tensor[st->out];
	const char *var[TE_MAXAXIS];
	tk_sb_puts(sb, "\n\t/* ");
	{
		tk_sb line;
		tk_sb_init(&line);
		te_stage_print(&line, p, st);
		if (line.s)
			emit_comment_text(sb, line.s);
		if (line.oom)
			sb->oom = 1;
		tk_sb_free(&line);
	}
	tk_sb_puts(sb, " */\n");
	for (int a = 0; a < st->nspatial; a++) {
		var[a] = st->axis[a].name;
		tk_sb_printf(sb, "\tfor (int64_t %s = 0; %s < %lld; %s++)%s\n", var[a], var[a],
		             (long long)st->axis[a].extent, var[a], a == st->nspatial - 1 ? " {" : "");
	}
	tk_sb_puts(sb, "\t\tdouble sum_ = 0, sabs_ = 0;\n");
	int depth = 2;
	if (st->naxis > st->nspatial) {
		for (int a = st->nspatial; a < st->naxis; a++) {
			const char *n = st->axis[a].name;
			tk_sb_printf(sb, "\t\tfor (int64_t %s = 0; %s < %lld; %s++)%s\n", n, n,
			             (long long)st->axis[a].extent, n, a == st->naxis - 1 ? " {" : "");
		}
		depth = 3;
	} else {
		tk_sb_puts(sb, "\t\t{\n");
		depth = 3;
	}
	emit_reads(sb, p, st, depth);
	indent(sb, depth);
	tk_sb_puts(sb, "sum_ +=");
	for (int r = 0; r < st->nread; r++)
		tk_sb_printf(sb, "%s v%d_", r ? " *" : "", r);
	tk_sb_puts(sb, ";\n");
	indent(sb, depth);
	tk_sb_puts(sb, "sabs_ +=");
	for (int r = 0; r < st->nread; r++)
		tk_sb_printf(sb, "%s a%d_", r ? " *" : "", r);
	tk_sb_puts(sb, ";\n\t\t}\n");
	if (st->epilogue == TE_EPI_RELU)
		tk_sb_puts(sb, "\t\tif (sum_ < 0) /* relu */\n\t\t\tsum_ = 0;\n");
	tk_sb_printf(sb, "\t\tt_%s[", o->name);
	emit_offset(sb, var, st->nspatial, o->shape);
	tk_sb_printf(sb, "] = sum_;\n\t\tabs_%s[", o->name);
	emit_offset(sb, var, st->nspatial, o->shape);
	tk_sb_puts(sb, "] = sabs_;\n\t}\n");
}

int ex_ref_function(tk_sb *sb, const te_prog *p, const char *name)
{
	int ntemp = 0;
	if (!is_ident(name))
		return tk_seterr(TK_EUNSUPP, "'%s' is not a C identifier", name);
	for (int s = 0; s < p->nstage; s++)
		for (int a = 0; a < p->stage[s].naxis; a++)
			if (bad_axis_name(p->stage[s].axis[a].name))
				return tk_seterr(TK_EUNSUPP, "%s: axis name '%s' clashes with the reference's "
				                 "C names", p->key, p->stage[s].axis[a].name);
	for (int t = 0; t < p->ntensor; t++)
		if (!is_ident(p->tensor[t].name))
			return tk_seterr(TK_EUNSUPP, "%s: tensor name '%s' is not a C identifier", p->key,
			                 p->tensor[t].name);

	tk_sb_printf(sb, "\n/* ref_%s: the reference of\n *   %s\n"
	             " * in double precision, as tunekit's interpreter (lib/task/ref.c) computes it.\n",
	             name, p->key);
	tk_sb_puts(sb, " * out: ");
	te_tensor_print(sb, &p->tensor[p->output]);
	for (int i = 0; i < p->ninput; i++) {
		tk_sb_printf(sb, "; in[%d]: ", i);
		te_tensor_print(sb, &p->tensor[p->input[i]]);
	}
	tk_sb_puts(sb, ".\n * outabs: per output element, the sum of |terms|. Returns 0, or -1 when\n"
	               " * out of memory. */\n");
	tk_sb_printf(sb, "int ref_%s(double *out, double *outabs, const float *const *in)\n{\n", name);
	for (int i = 0; i < p->ninput; i++) {
		const te_tensor *t = &p->tensor[p->input[i]];
		tk_sb_printf(sb, "\tconst float *t_%s = in[%d]; /* ", t->name, i);
		te_tensor_print(sb, t);
		tk_sb_puts(sb, " */\n");
	}
	for (int ti = 0; ti < p->ntensor; ti++) {
		const te_tensor *t = &p->tensor[ti];
		if (t->kind == TE_CONSTANT) {
			tk_sb_printf(sb, "\tstatic const double t_%s[%lld] = { /* ", t->name,
			             (long long)t->size);
			te_tensor_print(sb, t);
			tk_sb_puts(sb, " */");
			for (int64_t j = 0; j < t->size; j++)
				tk_sb_printf(sb, "%s%a", j % 8 ? ", " : (j ? ",\n\t\t" : "\n\t\t"),
				             (double)t->values[j]);
			tk_sb_puts(sb, "\n\t};\n");
		} else if (t->kind == TE_TEMP) {
			tk_sb_printf(sb, "\tdouble *t_%s = malloc(sizeof(double) * %lld); /* ", t->name,
			             (long long)t->size);
			te_tensor_print(sb, t);
			tk_sb_printf(sb, " */\n\tdouble *abs_%s = malloc(sizeof(double) * %lld);\n", t->name,
			             (long long)t->size);
			ntemp++;
		} else if (t->kind == TE_OUTPUT) {
			tk_sb_printf(sb, "\tdouble *t_%s = out, *abs_%s = outabs; /* ", t->name, t->name);
			te_tensor_print(sb, t);
			tk_sb_puts(sb, " */\n");
		}
	}
	if (ntemp) {
		tk_sb_puts(sb, "\tint rc_ = -1;\n\n\tif (");
		int k = 0;
		for (int ti = 0; ti < p->ntensor; ti++)
			if (p->tensor[ti].kind == TE_TEMP)
				tk_sb_printf(sb, "%s!t_%s || !abs_%s", k++ ? " || " : "", p->tensor[ti].name,
				             p->tensor[ti].name);
		tk_sb_puts(sb, ")\n\t\tgoto done_;\n");
	}
	for (int s = 0; s < p->nstage; s++)
		emit_stage(sb, p, s);
	if (ntemp) {
		tk_sb_puts(sb, "\trc_ = 0;\ndone_:\n");
		for (int ti = 0; ti < p->ntensor; ti++)
			if (p->tensor[ti].kind == TE_TEMP)
				tk_sb_printf(sb, "\tfree(t_%s);\n\tfree(abs_%s);\n", p->tensor[ti].name,
				             p->tensor[ti].name);
		tk_sb_puts(sb, "\treturn rc_;\n}\n");
	} else {
		tk_sb_puts(sb, "\treturn 0;\n}\n");
	}
	return TK_OK;
}

char *ex_kernel_name(const te_prog *p)
{
	tk_sb sb;
	tk_sb_init(&sb);
	tk_sb_puts(&sb, p->op);
	for (int i = 0; i < p->nparam; i++)
		if (p->param[i].in_key)
			tk_sb_printf(&sb, "_%s%lld", p->param[i].name, (long long)p->param[i].val);
	for (size_t i = 0; sb.s && i < sb.n; i++) {
		char c = sb.s[i];
		if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9')))
			sb.s[i] = '_';
	}
	return tk_sb_take(&sb);
}

/* ---- one kernel ---------------------------------------------------------------- */

static int is_alpha_(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_alnum_(char c)
{
	return is_alpha_(c) || (c >= '0' && c <= '9');
}

/* s as the body of a C string literal. */
static void c_string(tk_sb *sb, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			tk_sb_printf(sb, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			tk_sb_printf(sb, "\\%03o", c);
		else
			tk_sb_putc(sb, (char)c);
	}
}

/* The kernel source src with its external symbols tk_kernel,
 * tk_workspace_floats and tk_abi renamed to tk_NAME, tk_NAME_workspace_floats
 * and tk_NAME_abi, and #include "NAME.h" after its first comment. Comments,
 * string literals and numbers are copied as they are. NULL on oom. */
static char *rename_symbols(const char *src, const char *name)
{
	static const char *const from[] = { "tk_kernel", "tk_workspace_floats", "tk_abi" };
	static const char *const suffix[] = { "", "_workspace_floats", "_abi" };
	tk_sb sb;
	tk_sb_init(&sb);
	const char *s = src;
	if (s[0] == '/' && s[1] == '*') {
		const char *end = strstr(s, "*/");
		if (end) {
			end += 2;
			if (*end == '\n')
				end++;
			tk_sb_putn(&sb, s, (size_t)(end - s));
			s = end;
		}
	}
	tk_sb_printf(&sb, "#include \"%s.h\"\n", name);
	while (*s) {
		const char *b = s;
		if (is_alpha_(*s)) {
			while (is_alnum_(*s))
				s++;
			int i;
			for (i = 0; i < ArraySize(from); i++)
				if ((size_t)(s - b) == strlen(from[i]) && !strncmp(b, from[i], (size_t)(s - b)))
					break;
			if (i < ArraySize(from))
				tk_sb_printf(&sb, "tk_%s%s", name, suffix[i]);
			else
				tk_sb_putn(&sb, b, (size_t)(s - b));
		} else if (*s >= '0' && *s <= '9') {
			while (is_alnum_(*s) || *s == '.' ||
			       ((*s == '+' || *s == '-') && (s[-1] == 'p' || s[-1] == 'P' ||
			                                     s[-1] == 'e' || s[-1] == 'E')))
				s++;
			tk_sb_putn(&sb, b, (size_t)(s - b));
		} else if (s[0] == '/' && s[1] == '*') {
			const char *end = strstr(s + 2, "*/");
			s = end ? end + 2 : s + strlen(s);
			tk_sb_putn(&sb, b, (size_t)(s - b));
		} else if (s[0] == '/' && s[1] == '/') {
			s += strcspn(s, "\n");
			tk_sb_putn(&sb, b, (size_t)(s - b));
		} else if (*s == '"' || *s == '\'') {
			char q = *s++;
			while (*s && *s != q)
				s += (s[0] == '\\' && s[1]) ? 2 : 1;
			if (*s)
				s++;
			tk_sb_putn(&sb, b, (size_t)(s - b));
		} else {
			tk_sb_putc(&sb, *s++);
		}
	}
	return tk_sb_take(&sb);
}

/* NAME in upper case, for macros. */
static void upper(tk_sb *sb, const char *name)
{
	for (; *name; name++)
		tk_sb_putc(sb, (*name >= 'a' && *name <= 'z') ? (char)(*name - 'a' + 'A') : *name);
}

static void macro(tk_sb *sb, const char *name, const char *what)
{
	tk_sb_puts(sb, "#define TK_");
	upper(sb, name);
	tk_sb_printf(sb, "_%s ", what);
}

static char *header_text(const te_prog *p, const ex_kernel *k, const ex_meta *m,
                         const tk_target *t)
{
	tk_sb sb;
	tk_sb_init(&sb);
	tk_sb_printf(&sb, "/*\n * %s.h\n *\n * A kernel tuned by tunekit %s, exported by `tunekit export`.\n *\n",
	             k->name, TK_VERSION);
	tk_sb_puts(&sb, " * task      ");
	emit_comment_text(&sb, k->task);
	tk_sb_puts(&sb, "\n * config    ");
	emit_comment_text(&sb, k->config);
	tk_sb_puts(&sb, "\n * target    ");
	emit_comment_text(&sb, t->spec);
	tk_sb_puts(&sb, " (the code and its compiler flags)\n");
	if (m && m->hardware && *m->hardware) {
		tk_sb_puts(&sb, " * tuned on  ");
		emit_comment_text(&sb, m->hardware);
		tk_sb_putc(&sb, '\n');
	}
	if (m && m->latency_s > 0) {
		tk_sb_printf(&sb, " * latency   %.6g ms median there (%.2f GFLOPS)", m->latency_s * 1e3,
		             k->flops / m->latency_s * 1e-9);
		if (m->record_id > 0)
			tk_sb_printf(&sb, ", measurement %lld of the store", (long long)m->record_id);
		tk_sb_putc(&sb, '\n');
	}
	tk_sb_printf(&sb, " * FLOPs     %.0f per call\n *\n", k->flops);
	tk_sb_printf(&sb, " *     void tk_%s(float *const *bufs, float *ws);\n *\n", k->name);
	tk_sb_puts(&sb, " * Buffers are float32, row-major (C order), 64-byte aligned and do not\n"
	                " * overlap:\n");
	tk_sb_puts(&sb, " *   bufs[0]  output ");
	te_tensor_print(&sb, &p->tensor[p->output]);
	tk_sb_printf(&sb, ", %lld floats\n", (long long)k->out_n);
	for (int i = 0; i < p->ninput; i++) {
		tk_sb_printf(&sb, " *   bufs[%d]  input  ", i + 1);
		te_tensor_print(&sb, &p->tensor[p->input[i]]);
		tk_sb_printf(&sb, ", %lld floats\n", (long long)k->in_n[i]);
	}
	tk_sb_puts(&sb, " *   ws       scratch of at least TK_");
	upper(&sb, k->name);
	tk_sb_printf(&sb, "_WORKSPACE_FLOATS (%lld) floats;\n"
	                  " *            NULL is allowed when that is 0\n", (long long)k->workspace);
	tk_sb_puts(&sb, " * The kernel writes every element of bufs[0], reads the inputs, uses ws\n"
	                " * and keeps no state between calls: calls with separate output buffers\n"
	                " * and workspaces may run concurrently.");
	if (t->threads > 1)
		tk_sb_printf(&sb, " Each call runs %d OpenMP threads:\n"
		                  " * link with -fopenmp.", t->threads);
	tk_sb_puts(&sb, "\n *\n * It computes (reads outside a tensor, and exact divisions ediv() that\n"
	                " * leave a remainder, give 0):\n");
	for (int s = 0; s < p->nstage; s++) {
		tk_sb line;
		tk_sb_init(&line);
		te_stage_print(&line, p, &p->stage[s]);
		tk_sb_puts(&sb, " *   ");
		if (line.s)
			emit_comment_text(&sb, line.s);
		if (line.oom)
			sb.oom = 1;
		tk_sb_free(&line);
		tk_sb_putc(&sb, '\n');
	}
	tk_sb_puts(&sb, " */\n#ifndef TK_EXPORT_");
	upper(&sb, k->name);
	tk_sb_puts(&sb, "_H\n#define TK_EXPORT_");
	upper(&sb, k->name);
	tk_sb_puts(&sb, "_H\n\n");
	macro(&sb, k->name, "TASK");
	tk_sb_putc(&sb, '"');
	c_string(&sb, k->task);
	tk_sb_puts(&sb, "\"\n");
	macro(&sb, k->name, "CONFIG");
	tk_sb_putc(&sb, '"');
	c_string(&sb, k->config);
	tk_sb_puts(&sb, "\"\n");
	macro(&sb, k->name, "TARGET");
	tk_sb_putc(&sb, '"');
	c_string(&sb, t->spec);
	tk_sb_puts(&sb, "\"\n");
	macro(&sb, k->name, "HARDWARE");
	tk_sb_putc(&sb, '"');
	c_string(&sb, m && m->hardware ? m->hardware : "");
	tk_sb_puts(&sb, "\"\n");
	macro(&sb, k->name, "LATENCY_S");
	tk_sb_printf(&sb, "%.9g /* 0: unknown */\n", m ? m->latency_s : 0.0);
	macro(&sb, k->name, "FLOPS");
	tk_sb_printf(&sb, "%.1f\n", k->flops);
	macro(&sb, k->name, "WORKSPACE_FLOATS");
	tk_sb_printf(&sb, "%lldUL\n", (long long)k->workspace);
	macro(&sb, k->name, "OUTPUT_FLOATS");
	tk_sb_printf(&sb, "%lldUL\n", (long long)k->out_n);
	for (int i = 0; i < p->ninput; i++) {
		char what[32];
		snprintf(what, sizeof what, "INPUT%d_FLOATS", i + 1);
		macro(&sb, k->name, what);
		tk_sb_printf(&sb, "%lldUL\n", (long long)k->in_n[i]);
	}
	tk_sb_printf(&sb, "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
	                  "extern const int tk_%s_abi; /* 1 */\n"
	                  "extern const unsigned long tk_%s_workspace_floats;\n"
	                  "void tk_%s(float *const *bufs, float *ws);\n\n"
	                  "#ifdef __cplusplus\n}\n#endif\n\n#endif\n", k->name, k->name, k->name);
	return tk_sb_take(&sb);
}

void ex_kernel_free(ex_kernel *k)
{
	if (!k)
		return;
	free(k->name);
	free(k->task);
	free(k->config);
	free(k->kernel_c);
	free(k->header_h);
	free(k->ref_c);
	memset(k, 0, sizeof *k);
}

int ex_kernel_create(const char *task, const char *config, const tk_target *t,
                     const ex_meta *m, ex_kernel *k)
{
	te_prog *p = NULL;
	sp_space *sp = NULL;
	sp_config c;
	kn_kernel kn;
	tk_sb sb;
	int rc;

	memset(k, 0, sizeof *k);
	memset(&kn, 0, sizeof kn);
	tk_sb_init(&sb);
	if ((rc = te_task_parse(task, &p)) || (rc = sp_space_create(p, &sp)) ||
	    (rc = sp_parse(sp, config, &c)) || (rc = kn_build(sp, &c, t, 1, &kn)))
		goto done;
	if (!kn.src) {
		rc = tk_seterr(TK_EINVAL, "%s [%s]: %s", p->key, kn.config, kn.why ? kn.why : "");
		goto done;
	}
	k->flops = p->flops;
	k->rtol = ref_rtol(p);
	k->atol = 1e-30; /* as lib/measure/measure.c */
	k->workspace = kn.ir->work_floats;
	k->ninput = p->ninput;
	for (int i = 0; i < p->ninput; i++)
		k->in_n[i] = p->tensor[p->input[i]].size;
	k->out_n = p->tensor[p->output].size;
	if (!(k->name = ex_kernel_name(p)) || !(k->task = strdup(p->key)) ||
	    !(k->config = strdup(kn.config)) || !(k->kernel_c = rename_symbols(kn.src, k->name)) ||
	    !(k->header_h = header_text(p, k, m, t))) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = ex_ref_function(&sb, p, k->name)))
		goto done;
	if (!(k->ref_c = tk_sb_take(&sb)))
		rc = tk_seterr(TK_ENOMEM, "out of memory");
done:
	if (rc)
		ex_kernel_free(k);
	tk_sb_free(&sb);
	kn_kernel_free(&kn);
	sp_space_free(sp);
	te_prog_free(p);
	return rc;
}

/* ---- the files an export shares ------------------------------------------------ */

/* The fixed part of test_kernels.c, after the kernel table. */
static const char test_body[] =
	"/* ---- PCG32 (O'Neill, pcg-random.org, \"minimal C\") ---- */\n"
	"\n"
	"typedef struct pcg32 {\n"
	"\tuint64_t state, inc;\n"
	"} pcg32;\n"
	"\n"
	"static uint32_t pcg32_next(pcg32 *r)\n"
	"{\n"
	"\tuint64_t old = r->state;\n"
	"\tr->state = old * 6364136223846793005ULL + r->inc;\n"
	"\tuint32_t x = (uint32_t)(((old >> 18u) ^ old) >> 27u);\n"
	"\tuint32_t rot = (uint32_t)(old >> 59u);\n"
	"\treturn (x >> rot) | (x << ((-rot) & 31));\n"
	"}\n"
	"\n"
	"static void pcg32_seed(pcg32 *r, uint64_t seed, uint64_t stream)\n"
	"{\n"
	"\tr->state = 0;\n"
	"\tr->inc = (stream << 1u) | 1u;\n"
	"\tpcg32_next(r);\n"
	"\tr->state += seed;\n"
	"\tpcg32_next(r);\n"
	"}\n"
	"\n"
	"/* Uniform in [0, 1) with 53 random bits. */\n"
	"static double pcg32_unif(pcg32 *r)\n"
	"{\n"
	"\tuint64_t hi = pcg32_next(r);\n"
	"\tuint64_t lo = pcg32_next(r);\n"
	"\tuint64_t x = (hi << 21) ^ (lo >> 11);\n"
	"\treturn (double)(x & ((1ULL << 53) - 1)) / (double)(1ULL << 53);\n"
	"}\n"
	"\n"
	"/* ---- checking and timing ---- */\n"
	"\n"
	"#define CANARY 16 /* floats after the output that must stay untouched */\n"
	"static const uint32_t canary_bits = 0x7fc0dead;\n"
	"\n"
	"static void *alloc64(size_t bytes)\n"
	"{\n"
	"\tvoid *p = NULL;\n"
	"\tbytes = (bytes + 63) & ~(size_t)63;\n"
	"\tif (posix_memalign(&p, 64, bytes ? bytes : 64))\n"
	"\t\treturn NULL;\n"
	"\treturn p;\n"
	"}\n"
	"\n"
	"/* 1 if out[] matches the reference; otherwise prints the FAIL line. */\n"
	"static int check(const kernel *k, const float *out, const double *ref, const double *refabs,\n"
	"                 const char *when)\n"
	"{\n"
	"\tunsigned long nbad = 0, first = 0;\n"
	"\tfor (unsigned long i = 0; i < k->out_n; i++) {\n"
	"\t\tdouble o = out[i], d = fabs(o - ref[i]), tol = k->rtol * refabs[i] + k->atol;\n"
	"\t\tif (!isfinite(o) || !(d <= tol)) {\n"
	"\t\t\tif (nbad++ == 0)\n"
	"\t\t\t\tfirst = i;\n"
	"\t\t}\n"
	"\t}\n"
	"\tfor (unsigned long i = 0; i < CANARY; i++) {\n"
	"\t\tuint32_t b;\n"
	"\t\tmemcpy(&b, &out[k->out_n + i], sizeof b);\n"
	"\t\tif (b != canary_bits) {\n"
	"\t\t\tprintf(\"FAIL %s wrong answer%s: wrote past the end of the output (out[%lu])\\n\",\n"
	"\t\t\t       k->name, when, k->out_n + i);\n"
	"\t\t\treturn 0;\n"
	"\t\t}\n"
	"\t}\n"
	"\tif (!nbad)\n"
	"\t\treturn 1;\n"
	"\tprintf(\"FAIL %s wrong answer%s: out[%lu] = %.9g expected %.9g (tolerance %.3g); \"\n"
	"\t       \"%lu of %lu elements bad\\n\", k->name, when, first, (double)out[first], ref[first],\n"
	"\t       k->rtol * refabs[first] + k->atol, nbad, k->out_n);\n"
	"\treturn 0;\n"
	"}\n"
	"\n"
	"static double now(void)\n"
	"{\n"
	"\tstruct timespec t;\n"
	"\tclock_gettime(CLOCK_MONOTONIC, &t);\n"
	"\treturn (double)t.tv_sec + (double)t.tv_nsec * 1e-9;\n"
	"}\n"
	"\n"
	"/* Seconds per call over n calls. */\n"
	"static double time_calls(const kernel *k, float *const *bufs, float *ws, long n)\n"
	"{\n"
	"\tdouble t0 = now();\n"
	"\tfor (long i = 0; i < n; i++)\n"
	"\t\tk->fn(bufs, ws);\n"
	"\treturn (now() - t0) / (double)n;\n"
	"}\n"
	"\n"
	"static int cmp_double(const void *a, const void *b)\n"
	"{\n"
	"\tdouble x = *(const double *)a, y = *(const double *)b;\n"
	"\treturn x < y ? -1 : x > y;\n"
	"}\n"
	"\n"
	"/* Check and time kernel k; prints its line. Returns 1 if it passed. */\n"
	"static int run_one(const kernel *k)\n"
	"{\n"
	"\tfloat *in[MAXIN] = { 0 }, *bufs[MAXIN + 1] = { 0 }, *out = NULL, *ws = NULL;\n"
	"\tdouble *ref = NULL, *refabs = NULL, times[REPEAT];\n"
	"\tint ok = 0;\n"
	"\n"
	"\tout = alloc64((k->out_n + CANARY) * sizeof(float));\n"
	"\tref = malloc(k->out_n * sizeof(double));\n"
	"\trefabs = malloc(k->out_n * sizeof(double));\n"
	"\tif (k->workspace)\n"
	"\t\tws = alloc64(k->workspace * sizeof(float));\n"
	"\tif (!out || !ref || !refabs || (k->workspace && !ws)) {\n"
	"\t\tprintf(\"FAIL %s out of memory\\n\", k->name);\n"
	"\t\tgoto done;\n"
	"\t}\n"
	"\tfor (int i = 0; i < k->nin; i++) {\n"
	"\t\tpcg32 r;\n"
	"\t\tif (!(in[i] = alloc64(k->in_n[i] * sizeof(float)))) {\n"
	"\t\t\tprintf(\"FAIL %s out of memory\\n\", k->name);\n"
	"\t\t\tgoto done;\n"
	"\t\t}\n"
	"\t\tpcg32_seed(&r, SEED, (uint64_t)i + 1);\n"
	"\t\tfor (unsigned long j = 0; j < k->in_n[i]; j++)\n"
	"\t\t\tin[i][j] = (float)(pcg32_unif(&r) * 2.0 - 1.0);\n"
	"\t\tbufs[i + 1] = in[i];\n"
	"\t}\n"
	"\tif (k->ref(ref, refabs, (const float *const *)in)) {\n"
	"\t\tprintf(\"FAIL %s out of memory for the reference\\n\", k->name);\n"
	"\t\tgoto done;\n"
	"\t}\n"
	"\tfor (unsigned long i = 0; i < k->out_n; i++)\n"
	"\t\tout[i] = NAN;\n"
	"\tfor (unsigned long i = 0; i < CANARY; i++)\n"
	"\t\tmemcpy(&out[k->out_n + i], &canary_bits, sizeof canary_bits);\n"
	"\tbufs[0] = out;\n"
	"\n"
	"\tk->fn(bufs, ws);\n"
	"\tif (!check(k, out, ref, refabs, \"\"))\n"
	"\t\tgoto done;\n"
	"\t/* a warm-up call, then calls per repeat doubled until a repeat lasts\n"
	"\t * MIN_REPEAT_S, then the median of REPEAT repeats */\n"
	"\tlong n = 1;\n"
	"\tk->fn(bufs, ws);\n"
	"\twhile (n < (1L << 20) && time_calls(k, bufs, ws, n) * (double)n < MIN_REPEAT_S)\n"
	"\t\tn *= 2;\n"
	"\tfor (int r = 0; r < REPEAT; r++)\n"
	"\t\ttimes[r] = time_calls(k, bufs, ws, n);\n"
	"\tqsort(times, REPEAT, sizeof times[0], cmp_double);\n"
	"\tif (!check(k, out, ref, refabs, \" after timing\"))\n"
	"\t\tgoto done;\n"
	"\tprintf(\"OK %s %.4g %.2f\\n\", k->name, times[REPEAT / 2] * 1e3,\n"
	"\t       k->flops / times[REPEAT / 2] * 1e-9);\n"
	"\tok = 1;\n"
	"done:\n"
	"\tfflush(stdout);\n"
	"\tfor (int i = 0; i < k->nin; i++)\n"
	"\t\tfree(in[i]);\n"
	"\tfree(out);\n"
	"\tfree(ws);\n"
	"\tfree(ref);\n"
	"\tfree(refabs);\n"
	"\treturn ok;\n"
	"}\n"
	"\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tint nkernel = (int)(sizeof kernels / sizeof kernels[0]), failed = 0;\n"
	"\tfor (int a = 1; a < argc; a++) {\n"
	"\t\tint found = 0;\n"
	"\t\tfor (int i = 0; i < nkernel; i++)\n"
	"\t\t\tfound |= !strcmp(argv[a], kernels[i].name);\n"
	"\t\tif (!found) {\n"
	"\t\t\tprintf(\"FAIL %s no such kernel\\n\", argv[a]);\n"
	"\t\t\tfailed++;\n"
	"\t\t}\n"
	"\t}\n"
	"\tfor (int i = 0; i < nkernel; i++) {\n"
	"\t\tint want = argc == 1;\n"
	"\t\tfor (int a = 1; a < argc; a++)\n"
	"\t\t\twant |= !strcmp(argv[a], kernels[i].name);\n"
	"\t\tif (want && !run_one(&kernels[i]))\n"
	"\t\t\tfailed++;\n"
	"\t}\n"
	"\treturn failed ? 1 : 0;\n"
	"}\n";

char *ex_ref_file(const ex_kernel *k, int n)
{
	tk_sb sb;
	tk_sb_init(&sb);
	tk_sb_printf(&sb, "/*\n * ref_kernels.c: reference implementations of the kernels exported by\n"
	                  " * tunekit %s, emitted straight from their tensor expressions (plain\n"
	                  " * loops in double precision, no schedule): what test_kernels.c checks\n"
	                  " * the kernels against.\n */\n", TK_VERSION);
	tk_sb_puts(&sb, ex_ref_prelude);
	for (int i = 0; i < n; i++)
		tk_sb_puts(&sb, k[i].ref_c);
	return tk_sb_take(&sb);
}

char *ex_test_file(const ex_kernel *k, int n)
{
	tk_sb sb;
	tk_sb_init(&sb);
	tk_sb_printf(&sb,
		"/*\n"
		" * test_kernels.c: checks and times the kernels exported by tunekit %s.\n"
		" *\n"
		" *     ./test_kernels [NAME...]\n"
		" *\n"
		" * Each kernel (or each one named) runs on inputs uniform in [-1, 1) from\n"
		" * PCG32 (seed 1, stream = input number); its output must match its\n"
		" * reference from ref_kernels.c element by element, as in tunekit's own\n"
		" * measurements: |out - ref| <= rtol * outabs + atol, where outabs is the\n"
		" * sum of the absolute values of the element's terms and rtol grows with\n"
		" * the reduction lengths. Then it is timed: the median of 5 repeats.\n"
		" * Prints \"OK NAME MILLISECONDS GFLOPS\" or \"FAIL NAME REASON\" per kernel and\n"
		" * exits 1 if any failed.\n"
		" */\n"
		"#define _POSIX_C_SOURCE 200809L\n"
		"#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
		"#include <string.h>\n#include <time.h>\n\n", TK_VERSION);
	for (int i = 0; i < n; i++)
		tk_sb_printf(&sb, "#include \"%s.h\"\n", k[i].name);
	tk_sb_puts(&sb, "\n");
	for (int i = 0; i < n; i++)
		tk_sb_printf(&sb, "int ref_%s(double *out, double *outabs, const float *const *in);\n",
		             k[i].name);
	tk_sb_printf(&sb,
		"\n#define MAXIN %d\n#define SEED 1\n#define REPEAT 5\n#define MIN_REPEAT_S 2e-3\n\n"
		"typedef struct kernel {\n"
		"\tconst char *name;\n"
		"\tvoid (*fn)(float *const *bufs, float *ws);\n"
		"\tint (*ref)(double *out, double *outabs, const float *const *in);\n"
		"\tunsigned long workspace, out_n;\n"
		"\tint nin;\n"
		"\tunsigned long in_n[MAXIN];\n"
		"\tdouble rtol, atol, flops;\n"
		"} kernel;\n\n"
		"static const kernel kernels[] = {\n", TE_MAXTENSOR);
	for (int i = 0; i < n; i++) {
		tk_sb_printf(&sb, "\t{ \"%s\", tk_%s, ref_%s, ", k[i].name, k[i].name, k[i].name);
		tk_sb_puts(&sb, "TK_");
		upper(&sb, k[i].name);
		tk_sb_puts(&sb, "_WORKSPACE_FLOATS, ");
		tk_sb_printf(&sb, "%lldUL, %d, {", (long long)k[i].out_n, k[i].ninput);
		for (int j = 0; j < k[i].ninput; j++)
			tk_sb_printf(&sb, "%s%lldUL", j ? ", " : " ", (long long)k[i].in_n[j]);
		tk_sb_printf(&sb, " },\n\t  %.17g, %.17g, %.17g },\n", k[i].rtol, k[i].atol, k[i].flops);
	}
	tk_sb_puts(&sb, "};\n\n");
	tk_sb_puts(&sb, test_body);
	return tk_sb_take(&sb);
}

/* The target's flags for building objects and a program: cflags without
 * -shared and -fPIC, with -fopenmp when it runs threads. */
static void program_flags(tk_sb *sb, const tk_target *t)
{
	char buf[sizeof t->cflags];
	char *save = NULL;
	int first = 1, omp = 0;
	snprintf(buf, sizeof buf, "%s", t->cflags);
	for (char *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (!strcmp(w, "-shared") || !strcmp(w, "-fPIC") || !strcmp(w, "-fpic"))
			continue;
		omp |= !strcmp(w, "-fopenmp");
		tk_sb_printf(sb, "%s%s", first ? "" : " ", w);
		first = 0;
	}
	if (t->threads > 1 && !omp)
		tk_sb_printf(sb, "%s-fopenmp", first ? "" : " ");
}

char *ex_makefile(const ex_kernel *k, int n, const tk_target *t)
{
	tk_sb sb;
	tk_sb_init(&sb);
	tk_sb_printf(&sb,
		"# Build and check the kernels exported by tunekit %s (see README).\n"
		"#\n"
		"#   make               build test_kernels and run it: one line per kernel,\n"
		"#                      OK or FAIL; fails if any kernel is wrong\n"
		"#   make test_kernels  build only\n"
		"#   make clean         remove what make built\n"
		"#\n"
		"# The kernels are compiled with the compiler and flags of the target they\n"
		"# were generated for (%s); the references\n"
		"# with REF_CFLAGS. Override either on the command line: make CC=clang.\n\n",
		TK_VERSION, t->spec);
	tk_sb_printf(&sb, "CC = %s\nCFLAGS = ", t->cc);
	program_flags(&sb, t);
	tk_sb_puts(&sb, "\nREF_CFLAGS = -O2 -ffp-contract=off\nLDFLAGS =\nLDLIBS = -lm\n\n");
	tk_sb_puts(&sb, "KERNEL_OBJS =");
	for (int i = 0; i < n; i++)
		tk_sb_printf(&sb, " \\\n\t%s.o", k[i].name);
	tk_sb_puts(&sb, "\nHEADERS =");
	for (int i = 0; i < n; i++)
		tk_sb_printf(&sb, " \\\n\t%s.h", k[i].name);
	tk_sb_puts(&sb,
		"\nOBJS = $(KERNEL_OBJS) ref_kernels.o test_kernels.o\n\n"
		"all: test_kernels\n"
		"\t./test_kernels\n\n"
		"test_kernels: $(OBJS)\n"
		"\t$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(OBJS) $(LDLIBS)\n\n");
	for (int i = 0; i < n; i++)
		tk_sb_printf(&sb, "%s.o: %s.c %s.h\n\t$(CC) $(CFLAGS) -c -o $@ %s.c\n\n", k[i].name,
		             k[i].name, k[i].name, k[i].name);
	tk_sb_puts(&sb,
		"ref_kernels.o: ref_kernels.c\n"
		"\t$(CC) $(REF_CFLAGS) -c -o $@ ref_kernels.c\n\n"
		"test_kernels.o: test_kernels.c $(HEADERS)\n"
		"\t$(CC) $(CFLAGS) -c -o $@ test_kernels.c\n\n"
		"clean:\n"
		"\trm -f test_kernels $(OBJS)\n\n"
		".PHONY: all clean\n");
	return tk_sb_take(&sb);
}

char *ex_readme(const ex_kernel *k, int n, const tk_target *t)
{
	tk_sb sb, up;
	tk_sb_init(&sb);
	tk_sb_init(&up);
	upper(&up, k[0].name);
	const char *u = up.s ? up.s : "";
	tk_sb_printf(&sb,
		"Kernels tuned by tunekit %s and exported by `tunekit export`, for the\n"
		"target %s\n(compiler %s).\n\n", TK_VERSION, t->spec, t->cc);
	tk_sb_puts(&sb,
		"    make          build every kernel, its reference and test_kernels, and run\n"
		"                  test_kernels: one line per kernel, \"OK NAME MS GFLOPS\" or\n"
		"                  \"FAIL NAME REASON\"; make fails if any kernel is wrong\n"
		"    make clean    remove what make built\n\n"
		"Files\n\n"
		"    NAME.c          a tuned kernel: void tk_NAME(float *const *bufs, float *ws)\n"
		"    NAME.h          its prototype, buffer shapes, workspace size, task,\n"
		"                    configuration, FLOPs, and the hardware and latency it\n"
		"                    was tuned to\n"
		"    ref_kernels.c   ref_NAME(): the reference of each kernel, plain loops in\n"
		"                    double precision emitted from the tensor expression\n"
		"    test_kernels.c  checks every kernel against its reference on random\n"
		"                    inputs and times it\n"
		"    Makefile        builds with the target's compiler and flags\n\n"
		"Kernels\n\n");
	for (int i = 0; i < n; i++) {
		tk_sb_printf(&sb, "    tk_%s\n        %s\n        %s\n", k[i].name, k[i].task,
		             k[i].config);
	}
	tk_sb_printf(&sb,
		"\nUsing a kernel from C\n\n"
		"bufs[0] is the output, bufs[1..] the inputs in the order the header lists;\n"
		"every buffer is float32, row-major and 64-byte aligned; ws is scratch\n"
		"space of TK_NAME_WORKSPACE_FLOATS floats (NULL when that is 0). For the\n"
		"first kernel:\n\n"
		"    #include <stdlib.h>\n"
		"    #include \"%s.h\"\n\n"
		"    static float *floats(unsigned long n)\n"
		"    {\n"
		"        void *p = NULL;\n"
		"        return posix_memalign(&p, 64, (n ? n : 1) * sizeof(float)) ? NULL : p;\n"
		"    }\n\n"
		"    float *bufs[] = { floats(TK_%s_OUTPUT_FLOATS),\n",
		k[0].name, u);
	for (int j = 0; j < k[0].ninput; j++)
		tk_sb_printf(&sb, "                      floats(TK_%s_INPUT%d_FLOATS),\n", u, j + 1);
	tk_sb_printf(&sb,
		"    };\n"
		"    float *ws = floats(TK_%s_WORKSPACE_FLOATS);\n"
		"    /* ... check the allocations, fill the inputs ... */\n"
		"    tk_%s(bufs, ws);\n\n"
		"and compile the kernel with the flags it was tuned with (the Makefile's\n"
		"CFLAGS)%s:\n\n"
		"    %s ", u, k[0].name, t->threads > 1 ? "; link with -fopenmp" : "", t->cc);
	program_flags(&sb, t);
	tk_sb_printf(&sb, " -c %s.c\n", k[0].name);
	if (up.oom)
		sb.oom = 1;
	tk_sb_free(&up);
	return tk_sb_take(&sb);
}

/* mkdir -p. Returns TK_OK or TK_EIO. */
static int mkdir_p(const char *dir)
{
	char p[4096];
	struct stat st;
	if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
		return tk_seterr(TK_EIO, "%s: directory name too long", dir);
	for (char *s = p + 1;; s++) {
		if (*s == '/' || !*s) {
			char c = *s;
			*s = 0;
			if (mkdir(p, 0777) < 0 && errno != EEXIST)
				return tk_seterr(TK_EIO, "cannot create %s: %s", p, strerror(errno));
			*s = c;
			if (!c)
				break;
		}
	}
	if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
		return tk_seterr(TK_EIO, "%s is not a directory", p);
	return TK_OK;
}

/* Write s to dir/file through a temporary file renamed into place. */
static int write_file(const char *dir, const char *file, const char *s)
{
	char path[4096], tmp[4200];
	size_t n = strlen(s);
	if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path)
		return tk_seterr(TK_EIO, "%s/%s: path too long", dir, file);
	snprintf(tmp, sizeof tmp, "%s/.%s.%ld.tmp", dir, file, (long)getpid());
	unlink(tmp);
	return tk_write_renamed(tmp, path, s, n, 0666);
}

int ex_write_dir(const char *dir, const ex_kernel *k, int n, const tk_target *t)
{
	static const char *const shared[] = { "ref_kernels.c", "test_kernels.c", "Makefile",
	                                      "README" };
	char file[300];
	int rc;
	if ((rc = mkdir_p(dir)))
		return rc;
	for (int i = 0; i < n; i++) {
		snprintf(file, sizeof file, "%s.c", k[i].name);
		if ((rc = write_file(dir, file, k[i].kernel_c)))
			return rc;
		snprintf(file, sizeof file, "%s.h", k[i].name);
		if ((rc = write_file(dir, file, k[i].header_h)))
			return rc;
	}
	for (int f = 0; f < ArraySize(shared); f++) {
		char *s = f == 0 ? ex_ref_file(k, n) : f == 1 ? ex_test_file(k, n)
		        : f == 2 ? ex_makefile(k, n, t) : ex_readme(k, n, t);
		if (!s)
			return tk_seterr(TK_ENOMEM, "out of memory");
		rc = write_file(dir, shared[f], s);
		free(s);
		if (rc)
			return rc;
	}
	return TK_OK;
}

/* ---- selection from the store ------------------------------------------------------ */

typedef struct best_ctx {
	ex_pick *p;
	int n, cap;
} best_ctx;

static int best_cb(void *ctx, const store_rec *r)
{
	best_ctx *b = ctx;
	if (b->n == b->cap) {
		int cap = b->cap ? 2 * b->cap : 16;
		ex_pick *p = realloc(b->p, sizeof *p * (size_t)cap);
		if (!p)
			return TK_ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	ex_pick *p = &b->p[b->n];
	p->id = r->id;
	p->median = r->median;
	p->task = strdup(r->task);
	p->config = strdup(r->config);
	b->n++;
	return p->task && p->config ? 0 : TK_ENOMEM;
}

int ex_best(tk_store *s, int64_t hardware_id, ex_pick **out, int *n)
{
	best_ctx b = { 0 };
	assert(hardware_id > 0);
	*out = NULL;
	*n = 0;
	int rc = store_best(s, hardware_id, best_cb, &b);
	if (rc == TK_ENOMEM)
		tk_seterr(TK_ENOMEM, "out of memory");
	if (rc) {
		ex_picks_free(b.p, b.n);
		return rc;
	}
	*out = b.p;
	*n = b.n;
	return TK_OK;
}

void ex_picks_free(ex_pick *p, int n)
{
	for (int i = 0; p && i < n; i++) {
		free(p[i].task);
		free(p[i].config);
	}
	free(p);
}
