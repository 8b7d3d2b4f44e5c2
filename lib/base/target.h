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
 */
#ifndef TK_TARGET_H
#define TK_TARGET_H

typedef struct tk_target {
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

/* Parse spec (NULL or "" means "native"), probe the CPU and the compiler, and
 * fill *t. Returns TK_EINVAL for a malformed spec (unknown key, bad value),
 * TK_EUNSUPP when the ISA is not available on this CPU or the compiler cannot
 * be run. */
int tk_target_parse(const char *spec, tk_target *t);

#endif
