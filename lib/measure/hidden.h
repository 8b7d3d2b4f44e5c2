/*
 * hidden: ML2Tuner's hidden features of configurations, what compiling
 * them decided (features/feature.h, kind hidden). On the CPU each kernel
 * is generated and built as measurement builds it (build_run), with the
 * compiler's own reports besides (-fstack-usage, -fopt-info-vec-all:
 * side files only, the object is the same and cached under the same key,
 * so a kernel compiled for its hidden features is not compiled again when
 * measured); the reports' facts, with the tile sizes and trip counts of
 * the lowered nest, make the vector (feat_hidden_cpu). The facts are
 * cached by the SHA-256 of the compiler, its flags, the CPU and the
 * source, in the private subdirectory hidden/ of the build cache, so a
 * kernel is compiled for its facts once however often its features are
 * asked for. On a simulated accelerator (vta-sim)
 * the vector is the device compiler's statistics (vta_stats_vector:
 * buffer occupancy, instruction and micro-op counts, dependence tokens,
 * DMA bytes), which lowering computes without compiling anything.
 */
#ifndef TK_MS_HIDDEN_H
#define TK_MS_HIDDEN_H

#include <stddef.h>

#include "measure.h"

/* Length of t's hidden vectors on its target (t opened for it). */
int ms_hidden_length(const ms_task *t, int *d);
/* Hidden features of n configurations of t on target tg into out (n rows
 * of ms_hidden_length values), valid[i] 0 when configuration i cannot be
 * lowered or its kernel does not compile (its row then holds what is known
 * without the compiler's facts; on vta-sim, the statistics of a program
 * the device compiler rejects). o gives the parallel compilers (jobs),
 * the compile time limit and the cache directory. TK_OK, TK_ENOMEM, TK_EIO
 * (cache or processes unusable). */
int ms_hidden(ms_task *t, const tk_target *tg, const ms_opts *o, const sp_config *c, int n,
              float *out, int *valid);
/* Keep the compiler's facts of the kernels build_run compiled with their
 * reports in jobs[0..n) (build_opts.reports; jobs without reports are
 * skipped) for ms_hidden, which then need not compile them: so a kernel
 * measured first is compiled once too. Best effort, as any cache write:
 * nothing to report. */
void ms_hidden_keep(const tk_target *tg, const ms_opts *o, const build_job *jobs, int n);
/* The name of value i of t's hidden vectors into buf (always terminated). */
void ms_hidden_name(const ms_task *t, int i, char *buf, size_t size);

#endif
