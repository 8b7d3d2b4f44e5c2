/*
 * kernel: one configuration of a task as C source, end to end:
 * config -> schedule primitives -> loop-nest IR -> C.
 */
#ifndef TK_KERNEL_H
#define TK_KERNEL_H

#include "emit_c.h"
#include "ir/ir.h"
#include "base/target.h"
#include "schedule/sched.h"
#include "space/space.h"

typedef struct kn_kernel {
	char *config;  /* canonical configuration text */
	char *sched;   /* primitive sequence, one per line */
	char *src;     /* C source (NULL if the schedule could not be lowered) */
	char *why;     /* reason when src is NULL */
	ir_func *ir;   /* kept only when kn_build is asked to (keep_ir) */
} kn_kernel;

/* Build kernel k for configuration c of sp on target t. Returns TK_OK when
 * k is filled: k->src may still be NULL with k->why set if the configuration
 * cannot be lowered (an invalid configuration, not an error of the call).
 * TK_ENOMEM otherwise. Free with kn_kernel_free(). */
int kn_build(const sp_space *sp, const sp_config *c, const tk_target *t, int keep_ir,
             kn_kernel *k);
void kn_kernel_free(kn_kernel *k);

#endif
