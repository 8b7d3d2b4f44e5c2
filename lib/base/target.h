/*
 * target: the hardware a kernel is built for and measured on.
 *
 * It lives in lib/base, under both codegen (which builds for a target) and
 * measure (which builds and runs kernels through codegen), so that codegen
 * need not include measure for it.
 *
 * A target spec names a CPU configuration this machine can act as:
 *
 *     native                          best ISA of this CPU, 1 thread, cc
 *     cpu:isa=avx2,threads=1          AVX2 code only
 *     cpu:isa=sse2                    baseline x86-64 code
 *     cpu:threads=2                   native ISA, 2 OpenMP threads
 *     cpu:cc=clang                    built with clang instead of cc
 *
 * Keys: isa (native|avx512|avx2|sse2), threads (>=1), cc (compiler command),
 * opt (optimisation flag, default -O3). Each distinct combination is distinct
 * hardware: its key records CPU model, ISA, compiler and version, and threads,
 * so records from different targets never mix.
 *
 * Or a simulated accelerator (lib/vta), whose configurations are programs of
 * its instruction set rather than C, "measured" by a simulator:
 *
 *     vta-sim:preset=zcu102           ML2Tuner's VTA on a ZCU102
 *     vta-sim:preset=default,LOG_BLOCK=5
 *
 * (parameters in base/vta_hw.h). Its key starts "vta-sim|simulated|".
 *
 * The kinds of target are the rows of tk_target_kinds[]: a name (the spec's
 * prefix), flags saying what the measurements and the configurations are,
 * and the parser of the rest of the spec.
 */
#ifndef TK_TARGET_H
#define TK_TARGET_H

#include "vta_hw.h"

enum { TK_TARGET_CPU, TK_TARGET_VTA_SIM };

/* Flags of a kind of target. */
#define TK_TARGET_SIMULATED 1u /* latencies are modelled by a simulator, not timed */
#define TK_TARGET_EXPORTS 2u   /* its configurations export as C kernels */

typedef struct tk_target {
	int kind;            /* TK_TARGET_* */
	unsigned flags;      /* TK_TARGET_SIMULATED, TK_TARGET_EXPORTS */
	vta_hw vta;          /* kind TK_TARGET_VTA_SIM: the accelerator */
	char spec[160];      /* canonical spec: cpu:cc=gcc,isa=avx512,opt=-O3,threads=1 */
	char isa[16];        /* avx512 | avx2 | sse2 */
	int vlen;            /* float32 lanes of the ISA's vectors: 16, 8, 4 */
	int nvreg;           /* its vector registers: 32, 16, 16 */
	int threads;         /* >= 1 */
	char cc[64];         /* compiler command */
	char cc_version[160];/* first line of `cc --version` */
	char opt[16];        /* -O3, -O2, ... */
	char cflags[320];    /* full flags used to build a kernel (without -o/source) */
	char cpu[160];       /* model name from /proc/cpuinfo */
	char key[640];       /* hardware identity stored in the record store */
} tk_target;

/* A row of the table of target kinds. */
typedef struct tk_target_kind {
	const char *name;    /* the spec's prefix: "cpu", "vta-sim" */
	int kind;            /* TK_TARGET_* */
	unsigned flags;
	const char *syntax;  /* for help: "cpu:KEY=VALUE,..." */
	const char *summary;
	/* fill t from the spec's part after "NAME:" (args, maybe ""); spec is
	 * the whole spec, for messages. Errors as tk_target_parse. */
	int (*parse)(const char *spec, const char *args, tk_target *t);
} tk_target_kind;

extern const tk_target_kind tk_target_kinds[];
extern const int tk_target_nkinds;

/* Parse spec (NULL or "" means "native", which is "cpu:"), fill *t and, for
 * a CPU, probe the CPU and the compiler. Returns TK_EINVAL for a malformed
 * spec (unknown kind, key, preset or parameter, a bad value), TK_EUNSUPP
 * when the ISA is not available on this CPU or the compiler cannot be run. */
int tk_target_parse(const char *spec, tk_target *t);

#endif
