/*
 * ir: the loop-nest IR that lowering produces, the C emitter prints and
 * feature extraction walks.
 *
 * A function is a list of statements over buffers. Statements are loops
 * (with an extent expression, a constant upper bound, an optional first
 * value other than 0 and an annotation),
 * stores (buf[idx] = value or += value, optionally only where a guard
 * holds) and allocations of a local buffer
 * live in a body. Expressions are integer index arithmetic over loop
 * variables, boolean guards, and float arithmetic on loads. Buffers keep
 * their dimensions (indices are per dimension), so strides and reuse are
 * visible to feature extraction; the emitter flattens them.
 *
 * Everything is allocated in the function's arena and freed with it.
 */
#ifndef TK_IR_H
#define TK_IR_H

#include <stdint.h>

#include "task/te.h"
#include "util/util.h"

#define IR_MAXDIM 12
#define IR_MAXBUF 48

enum {
	IRB_OUTPUT, /* bufs[0] */
	IRB_INPUT,  /* bufs[1 + arg] */
	IRB_CONST,  /* static table in the generated code */
	IRB_WORK,   /* slice of the workspace: stage temporaries, packed inputs */
	IRB_LOCAL   /* accumulator tile: stack or registers */
};

typedef struct ir_buf {
	const char *name;
	int kind;
	int id;
	int arg;                   /* IRB_INPUT: input position */
	int ndim;
	int64_t shape[IR_MAXDIM];
	int64_t size;              /* elements */
	int64_t off;               /* IRB_WORK: offset in floats (multiple of 16) */
	const float *values;       /* IRB_CONST */
} ir_buf;

enum {
	/* integer */
	IR_INT, IR_VAR, IR_ADD, IR_SUB, IR_MUL, IR_DIV, IR_MOD, IR_MIN,
	/* boolean */
	IR_INRANGE,   /* i <= a < j */
	IR_DIVIDES,   /* a % i == 0 */
	IR_AND,
	/* float */
	IR_LOAD, IR_FCONST, IR_FADD, IR_FMUL, IR_FRELU,
	IR_SELECT     /* a ? b : 0 */
};

typedef struct ir_stmt ir_stmt;

typedef struct ir_expr {
	int kind;
	int64_t i, j;              /* IR_INT: i; IR_INRANGE: [i, j); IR_DIVIDES: i */
	float f;                   /* IR_FCONST */
	ir_stmt *loop;             /* IR_VAR: the loop whose variable this is */
	ir_buf *buf;               /* IR_LOAD */
	struct ir_expr **idx;      /* IR_LOAD: buf->ndim indices */
	struct ir_expr *a, *b;
} ir_expr;

enum { IR_FOR, IR_STORE, IR_ALLOC };
enum { ANN_NONE, ANN_PARALLEL, ANN_VECTORIZE, ANN_UNROLL };

struct ir_stmt {
	int kind;
	int id;                    /* unique within the function */
	ir_stmt *next;             /* next statement in the same block */
	/* IR_FOR: var runs begin .. extent-1 */
	const char *var;
	ir_expr *begin;            /* NULL for 0; never negative */
	ir_expr *extent;
	int64_t max_extent;        /* constant upper bound of extent */
	int ann;                   /* ANN_* */
	int explicit_unroll;       /* ANN_UNROLL: expand in the emitter (1) or pragma (0) */
	int rolled;                /* ANN_NONE: kept a loop ('#pragma GCC unroll 1') */
	ir_stmt *body;             /* IR_FOR and IR_ALLOC */
	/* IR_STORE */
	ir_buf *buf;               /* also IR_ALLOC: the local buffer */
	ir_expr **idx;
	ir_expr *value;
	ir_expr *cond;             /* store only where this holds; NULL: always */
	int accum;                 /* += instead of = */
};

typedef struct ir_func {
	tk_arena arena;
	const te_prog *prog;       /* borrowed */
	int nbuf;
	ir_buf *buf[IR_MAXBUF];
	ir_stmt *body;
	int64_t work_floats;       /* workspace size */
	int nstmt;
} ir_func;

/* Constructors. They allocate in f->arena (longjmp to f->arena.oom on
 * failure) and fold constants: ir_add(f, 2, 3) is the constant 5, x*1 is x,
 * x+0 is x, min(c1, c2) folds. */
ir_expr *ir_int(ir_func *f, int64_t v);
ir_expr *ir_var(ir_func *f, ir_stmt *loop);
ir_expr *ir_bin(ir_func *f, int kind, ir_expr *a, ir_expr *b);
ir_expr *ir_inrange(ir_func *f, ir_expr *a, int64_t lo, int64_t hi);
ir_expr *ir_divides(ir_func *f, ir_expr *a, int64_t d);
ir_expr *ir_fconst(ir_func *f, float v);
ir_expr *ir_load(ir_func *f, ir_buf *b, ir_expr **idx);
ir_buf *ir_buf_new(ir_func *f, const char *name, int kind, int ndim, const int64_t *shape);
ir_stmt *ir_stmt_new(ir_func *f, int kind);

/* Constant value of an integer expression: 1 and *v if it is one. */
int ir_const(const ir_expr *e, int64_t *v);
/* Range [lo, hi] of an integer expression given loop variables in
 * [0, max_extent-1]; conservative. */
void ir_range(const ir_expr *e, int64_t *lo, int64_t *hi);
/* Coefficient of loop l's variable in e if e is affine in it (*ok = 1). */
int64_t ir_coeff(const ir_expr *e, const ir_stmt *l, int *ok);

/* Print the IR in a readable pseudo-code into sb. */
void ir_print(tk_sb *sb, const ir_func *f);

void ir_func_free(ir_func *f);

#endif
