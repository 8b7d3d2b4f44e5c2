/*
 * te: tensor expressions, the description every operator is built from.
 *
 * A task is an operator with its shapes ("conv2d:c=64,h=56,..."). Each
 * operator is declared once, in ops.c, as a short text in a small language
 * (see te_ops[] for the grammar): parameters with defaults, derived sizes,
 * input tensors, optional constant tensors, and one or more stages
 *
 *     stage O[b:n, f:k, y:oh, x:ow] += I[b, rc, y*stride+ry-pad, x*stride+rx-pad]
 *                                      * W[f, rc, ry, rx] over rc:c ry:r rx:s
 *
 * Each stage computes one tensor: its spatial axes are the output's
 * dimensions, its reduction axes follow `over`, its body is a product of
 * indexed reads, and an optional epilogue (relu) applies after the
 * reduction. A read whose index falls outside its tensor, or whose exact
 * division `ediv(a,b)` leaves a remainder, reads 0 (padding, strided
 * transposed convolution). Adding an operator is adding a declaration.
 *
 * te_task_parse() instantiates a declaration with concrete parameters into a
 * te_prog: tensors with shapes and stages with axes, reads and index
 * expressions over the stage's axes. Everything downstream (reference,
 * search space, schedules, lowering, features) reads the te_prog.
 */
#ifndef TK_TE_H
#define TK_TE_H

#include <stdint.h>

#include "util/util.h"

#define TE_MAXDIM 8     /* dimensions of a tensor */
#define TE_MAXAXIS 12   /* axes of a stage (spatial + reduction) */
#define TE_MAXREAD 4    /* factors in a stage body */
#define TE_MAXTENSOR 16
#define TE_MAXSTAGE 8
#define TE_MAXPARAM 24

/* Index expression over a stage's axes. Division and modulo are floor
 * operations by positive constants; EDIV is exact division, which makes the
 * enclosing read 0 when the dividend is not a multiple. */
enum {
	TE_CONST, /* val */
	TE_AXIS,  /* axis number val within the stage */
	TE_ADD, TE_SUB, TE_MUL, TE_DIV, TE_MOD, TE_EDIV
};

typedef struct te_expr {
	int kind;
	int64_t val;
	struct te_expr *a, *b;
	int soft;              /* parser only: a constant an optional parameter left
	                          at its default gave (see te.c, mk) */
} te_expr;

enum {
	TE_INPUT,    /* provided by the caller, in declaration order */
	TE_CONSTANT, /* fixed values known at declaration (e.g. Winograd matrices) */
	TE_TEMP,     /* produced by a stage and consumed by a later one */
	TE_OUTPUT    /* produced by the last stage */
};

typedef struct te_tensor {
	const char *name;
	int kind;
	int ndim;
	int64_t shape[TE_MAXDIM];
	int64_t size;          /* product of shape */
	const float *values;   /* TE_CONSTANT: size values, row-major */
	int stage;             /* producing stage, -1 for inputs and constants */
} te_tensor;

typedef struct te_axis {
	const char *name;
	int64_t extent;
	int reduce;            /* 0 spatial, 1 reduction */
} te_axis;

typedef struct te_read {
	int tensor;
	te_expr *idx[TE_MAXDIM]; /* one per dimension of the tensor */
} te_read;

enum { TE_EPI_NONE, TE_EPI_RELU };

typedef struct te_stage {
	int out;               /* tensor computed */
	int naxis, nspatial;   /* axes [0,nspatial) spatial = output dims, rest reduce */
	te_axis axis[TE_MAXAXIS];
	int accumulate;        /* 1 for "+=" (sum over reduction axes), 0 for "=" */
	int nread;
	te_read read[TE_MAXREAD];
	int epilogue;          /* TE_EPI_* */
	int vector;            /* spatial axis the schedule always vectorises whole
	                          (a blocked layout's block), -1 if free */
	double flops;          /* 2 * domain points for products of 2 and a sum; see te.c */
} te_stage;

typedef struct te_param {
	const char *name;
	int64_t val;
	int in_key;            /* named in the key: not an optional one at its default */
} te_param;

typedef struct te_prog {
	tk_arena arena;        /* owns every pointer below */
	const char *op;        /* operator name */
	const char *key;       /* canonical task string: op:k1=v1,k2=v2 sorted */
	int nparam;
	te_param param[TE_MAXPARAM];
	int ntensor;
	te_tensor tensor[TE_MAXTENSOR];
	int nstage;
	te_stage stage[TE_MAXSTAGE];
	int ninput;
	int input[TE_MAXTENSOR]; /* tensor ids of TE_INPUT tensors, ABI order */
	int output;            /* tensor id of the TE_OUTPUT tensor */
	double flops;          /* nominal FLOPs per call (GFLOPS = flops/latency/1e9) */
} te_prog;

/* An operator declaration (see ops.c). */
typedef struct te_opdecl {
	const char *name;
	const char *summary; /* one line for `tunekit help tasks` */
	const char *text;    /* declaration in the te language */
} te_opdecl;

extern const te_opdecl te_ops[];
extern const int te_nops;

/* Parse a task string "op:key=value,..." (values are integers; spaces are
 * not allowed), fill defaults, validate and instantiate. On success *out is
 * a new program the caller frees with te_prog_free(). Returns TK_EINVAL with
 * a one-line message for unknown operators, unknown/missing/duplicate
 * parameters, non-integer values and shapes that come out empty. */
int te_task_parse(const char *task, te_prog **out);
void te_prog_free(te_prog *p);

/* Look up an operator declaration by name; NULL if unknown. */
const te_opdecl *te_op_find(const char *name);

/* Evaluate an index expression at axis values ax[]. Sets *ok = 0 (and returns
 * 0) when an EDIV leaves a remainder; otherwise leaves *ok alone. */
int64_t te_expr_eval(const te_expr *e, const int64_t *ax, int *ok);

/* Interval [*lo, *hi] an expression takes when every axis i ranges over
 * [0, extent[i]-1]. Exact for the affine expressions the declarations use;
 * conservative otherwise. EDIV ranges are those of floor division. */
void te_expr_range(const te_expr *e, const int64_t *extent, int64_t *lo, int64_t *hi);

/* Coefficient of axis `ax` if e is affine in it, with *ok = 1; *ok = 0 when
 * the axis appears under DIV/MOD/EDIV or multiplied by another axis. */
int64_t te_expr_coeff(const te_expr *e, int ax, int *ok);

/* Print e in the declaration syntax using the stage's axis names into sb. */
void te_expr_print(tk_sb *sb, const te_expr *e, const te_stage *st);

/* Print a tensor's name and shape, without a newline: A[64, 32] */
void te_tensor_print(tk_sb *sb, const te_tensor *t);

/* Print stage st of p in the declaration syntax, without a newline:
 * C[i:4, j:8] += A[i, k] * B[k, j] over k:16 relu */
void te_stage_print(tk_sb *sb, const te_prog *p, const te_stage *st);

#endif
