/*
 * lower: apply a schedule (a primitive sequence) to a tensor-expression
 * program and produce the loop-nest IR.
 */
#ifndef TK_LOWER_H
#define TK_LOWER_H

#include "ir.h"
#include "schedule/sched.h"
#include "task/te.h"

/* Lower p under schedule s. On success *out is a new function the caller
 * frees with ir_func_free(); p must outlive it. TK_EINVAL (message set) when
 * the schedule cannot be realised: loops out of order, fusing loops with
 * tails, an accumulator tile over 1 MiB, too many buffers. */
int lower(const te_prog *p, const sc_sched *s, ir_func **out);

#endif
