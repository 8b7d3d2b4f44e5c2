/*
 * export: tuned kernels as C files a program can use without tunekit, each
 * with a reference implementation and a test program that checks and times
 * them on the machine that builds them.
 *
 * An export folder holds, for every kernel NAME (a C identifier derived from
 * the task, e.g. conv2d_n1_c64_h56_w56_k64_r3_s3_stride1_pad1):
 *
 *     NAME.c          the tuned kernel (kn_build's C) with public names:
 *                     void tk_NAME(float *const *bufs, float *ws) and
 *                     const unsigned long tk_NAME_workspace_floats
 *     NAME.h          its prototype, buffer shapes, workspace size, task,
 *                     configuration, FLOPs, and the hardware and latency it
 *                     was tuned to
 * and, shared by the kernels of one export:
 *     ref_kernels.c   int ref_NAME(double *out, double *outabs, const float *const *in)
 *                     per kernel: the reference, emitted straight from the
 *                     tensor expression (not through schedule, IR or codegen)
 *     test_kernels.c  runs every kernel on PCG32-random inputs, compares it
 *                     with its reference (|out-ref| <= rtol*outabs + atol,
 *                     the rule of lib/measure/run.c), times it and prints
 *                     "OK NAME MS GFLOPS" or "FAIL NAME REASON"
 *     Makefile        `make` builds with the target's compiler and flags and
 *                     runs the test; `make clean`
 *     README          what the files are and how to call a kernel
 *
 * The generators return malloc'd strings (lib/ never writes on its own);
 * ex_write_dir() writes a whole folder into a directory the caller names.
 * ex_best() selects what to export from the store (store_hardware_find() of
 * store/store_report.h finds the hardware). The module sits above both
 * codegen, which it calls to build each kernel, and the store, which it
 * reads; neither of them includes it.
 */
#ifndef TK_EXPORT_H
#define TK_EXPORT_H

#include <stdint.h>

#include "base/target.h"
#include "store/store.h"
#include "task/te.h"
#include "util/util.h"

/* ---- reference emitter ------------------------------------------------------ */

/* Helpers every emitted reference function uses (floor division, modulo and
 * exact division of int64_t), with the #includes they need: put it once at
 * the top of a translation unit, before any ex_ref_function() text. */
extern const char ex_ref_prelude[];

/* Append to sb the C of
 *
 *     int ref_NAME(double *out, double *outabs, const float *const *in)
 *
 * computing p in double precision exactly as lib/task/ref.c does: in[i] is
 * input i of p (p->input order), out the output tensor (row-major) and
 * outabs, for every output element, the sum over its terms of the product
 * of the terms' absolute values (propagated through intermediate stages),
 * the scale the float32 tolerance applies to. The function returns 0, or -1
 * when it cannot allocate its intermediate buffers. name must be a C
 * identifier. Returns TK_OK, or TK_EUNSUPP when a name in p would collide
 * with the emitted code's own names (C keywords, its locals); sb->oom is the
 * caller's to check. */
int ex_ref_function(tk_sb *sb, const te_prog *p, const char *name);

/* The C identifier naming the kernel of p: the operator and each parameter
 * with its value, in declaration order ("dense_m24_n40_k16"). Malloc'd;
 * NULL when out of memory. */
char *ex_kernel_name(const te_prog *p);

/* ---- one exported kernel ----------------------------------------------------- */

/* Where the configuration comes from, for the header; every field may be
 * empty (NULL / 0). */
typedef struct ex_meta {
	const char *hardware;   /* key of the hardware it was tuned on */
	double latency_s;       /* median latency measured there */
	int64_t record_id;      /* the measurement in the store */
} ex_meta;

typedef struct ex_kernel {
	char *name;             /* C identifier (ex_kernel_name) */
	char *task;             /* canonical task key */
	char *config;           /* canonical configuration text */
	char *kernel_c;         /* contents of NAME.c */
	char *header_h;         /* contents of NAME.h */
	char *ref_c;            /* ref_NAME, a part of ref_kernels.c (without the prelude) */
	double flops;           /* nominal FLOPs per call */
	double rtol, atol;      /* tolerance of the check (ref_rtol, as measure uses) */
	int64_t workspace;      /* floats of scratch the kernel needs */
	int ninput;
	int64_t in_n[TE_MAXTENSOR]; /* element counts of the inputs */
	int64_t out_n;          /* element count of the output */
} ex_kernel;

/* Build the export of configuration text config of task for target t:
 * parse, lower (kn_build), rename the kernel's symbols, write its header and
 * emit its reference. On TK_OK *k is filled; free with ex_kernel_free().
 * TK_EINVAL (message set) for a malformed task or configuration or one that
 * cannot be lowered; TK_EUNSUPP from ex_ref_function; TK_ENOMEM. On error *k
 * is left empty. */
int ex_kernel_create(const char *task, const char *config, const tk_target *t,
                     const ex_meta *m, ex_kernel *k);
void ex_kernel_free(ex_kernel *k); /* an empty or zeroed *k is allowed */

/* ---- the files shared by the kernels of an export ----------------------------- */

/* Contents of ref_kernels.c, test_kernels.c, Makefile and README for the n
 * kernels k[] (n >= 1) built for target t. Each returns a malloc'd string,
 * or NULL when out of memory. */
char *ex_ref_file(const ex_kernel *k, int n);
char *ex_test_file(const ex_kernel *k, int n);
char *ex_makefile(const ex_kernel *k, int n, const tk_target *t);
char *ex_readme(const ex_kernel *k, int n, const tk_target *t);

/* Write the whole folder into dir (created with its parents if needed;
 * existing files of the same names are replaced, each by an atomic rename,
 * others left alone). Returns TK_OK, TK_EIO with "PATH: reason", or
 * TK_ENOMEM. */
int ex_write_dir(const char *dir, const ex_kernel *k, int n, const tk_target *t);

/* ---- what to export: selection from the store ---------------------------------- */

/* The best valid record of a task on a hardware (store_best). */
typedef struct ex_pick {
	int64_t id;             /* measurement id */
	char *task, *config;    /* task key and configuration text */
	double median;          /* seconds */
} ex_pick;

/* Every task's best valid record on hardware_id (> 0), in task key order, as
 * a malloc'd array of *n picks the caller frees with ex_picks_free(). Store
 * errors as store_best. */
int ex_best(tk_store *s, int64_t hardware_id, ex_pick **out, int *n);
void ex_picks_free(ex_pick *p, int n);

#endif
