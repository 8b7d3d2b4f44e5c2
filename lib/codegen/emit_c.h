/*
 * emit_c: print a loop-nest IR function as a C translation unit that
 * implements the kernel ABI of lib/measure/run.h.
 *
 * What makes the code fast is decided here, from the IR's annotations:
 *   - vectorize: the loop is cut into chunks of the target's vector width
 *     (and narrower ones for the rest) and written with GCC vector
 *     extensions: contiguous accesses become vector loads and stores,
 *     invariant ones broadcasts, anything else per-lane gathers;
 *   - unroll (explicit): the loop is expanded in the source; otherwise
 *     `#pragma GCC unroll N` (which clang honours too) asks the compiler.
 *     Both share one budget of operations per nest, and a pragma's N
 *     divides its loop's trip count: past the budget, a loop stays a loop
 *     (and a register tile an array), since compile time grows faster
 *     than the kernel gains;
 *   - accumulator tiles whose every access has a constant index after
 *     unrolling become named (vector) variables, i.e. registers; otherwise
 *     they are aligned arrays;
 *   - parallel: OpenMP, only when the target has more than one thread;
 *   - the rest: plain loops over `long` indices, `restrict` pointers.
 */
#ifndef TK_EMIT_C_H
#define TK_EMIT_C_H

#include "ir/ir.h"

typedef struct cg_opts {
	int vlen;            /* float lanes of the widest vector: 16, 8 or 4 */
	int threads;         /* > 1 emits OpenMP pragmas on parallel loops */
	const char *comment; /* first comment of the file (may be NULL) */
} cg_opts;

/* Emit f as C. On success *src is a malloc'd NUL-terminated string the
 * caller frees. TK_ENOMEM on allocation failure. */
int cg_emit_c(const ir_func *f, const cg_opts *o, char **src);

#endif
