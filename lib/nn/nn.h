/*
 * nn: a small float32 neural-network library for tunekit's neural cost
 * models (TLP, MTL-TLP, a MetaTune-style GCN), written in the manner of
 * llm.c: each layer is a forward/backward pair of plain functions over
 * caller-owned arrays, with arguments ordered outputs, inputs, weights,
 * sizes. Backward passes accumulate (+=) into gradients named d..., which
 * the caller zeroes explicitly (nn_zero) before a step. A model keeps all
 * its parameters in one contiguous block behind a struct of pointers
 * (nn_layout assigns them from a list of sizes), its gradients in a second
 * block of the same layout and its activations in a third, so a training
 * step allocates nothing and a checkpoint is one write and one read.
 * Matrix products go through OpenBLAS's cblas_sgemm (which uses the
 * machine's cores on large products; TLP, whose products are small, runs
 * two batches on two threads of one BLAS thread each instead, with a
 * second activation and gradient block). Nothing here prints, exits or draws
 * random numbers except from a caller's tk_rng, so a run is deterministic
 * given its seed (up to OpenBLAS's summation order across threads).
 *
 * Shape key, used in the comment on every tensor argument:
 *   B = batch (sequences or rows), L = sequence length, E = embedding
 *   (features per position, a layer's input width), F = a layer's output
 *   width, H = attention heads (E % H == 0, head size E/H), N = graph nodes
 *   or scores, V = vocabulary (rows of an embedding table), G = groups of a
 *   ranking (rows of one group contiguous), P = parameters of a block.
 * Tensors are row-major: (B, L, E) is x[(b*L + l)*E + e].
 *
 * Masks: a padded batch of sequences carries len[b] (0 <= len[b] <= L),
 * the number of valid leading positions of sequence b. Positions l >=
 * len[b] are padding: attention neither attends to them nor computes them
 * (their output is 0), pooling skips them, and no gradient reaches them.
 */
#ifndef TK_NN_H
#define TK_NN_H

#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

/* ---- parameter blocks ------------------------------------------------ */

/* Sum of sizes[0..n). */
size_t nn_count(const size_t *sizes, int n);
/* Point *ptrs[i] at consecutive runs of sizes[i] floats starting at base
 * (in order, no padding), so that one block holds the tensors of a model. */
void nn_layout(float *base, float **const ptrs[], const size_t *sizes, int n);
/* Allocate one zeroed, 64-byte aligned block of nn_count(sizes, n) floats
 * into *block (its length into *count) and lay ptrs out in it. TK_ENOMEM
 * with *block NULL on failure. The caller frees *block with free(). */
int nn_alloc(float **block, size_t *count, float **const ptrs[], const size_t *sizes, int n);
/* p[0..n) = 0. */
void nn_zero(float *p, size_t n);
/* p[i] uniform in [-bound, bound), drawn from r in order. */
void nn_init_uniform(float *p /* (P) */, size_t n, float bound, tk_rng *r);
/* p[i] = value. */
void nn_fill(float *p /* (P) */, size_t n, float value);

/* ---- the BLAS -------------------------------------------------------- */

/* OpenBLAS's core type, as it names it ("SkylakeX", "Haswell", "Zen", ...):
 * the kernels it chose when the program loaded, from the CPU or from
 * $OPENBLAS_CORETYPE. */
const char *nn_blas_core(void);
/* The core type this CPU should run instead, when OpenBLAS's own choice
 * has no AVX2 kernels on a CPU with AVX2 and FMA: a library older than
 * the CPU falls back to its generic x86-64 kernels (OpenBLAS 0.3.21 runs
 * a Xeon family 6 model 207 on "Prescott", SSE3, 2.6 times slower for
 * TLP's training). "SkylakeX" where the CPU has AVX-512 (F, VL, BW, DQ),
 * else "Haswell"; NULL when the choice is fine or the CPU has no AVX2.
 * It takes effect only through $OPENBLAS_CORETYPE in a new process. */
const char *nn_blas_core_want(void);
/* OpenBLAS's threads for one call, process-wide, and setting them: a
 * caller that runs BLAS from two threads of its own sets 1 around it
 * (each call then stays on its caller's thread). */
int nn_blas_threads(void);
void nn_set_blas_threads(int n);

/* ---- checkpoints ----------------------------------------------------- */
/* A checkpoint is a 40-byte header (magic "TKNN", version, the caller's
 * model tag, the parameter count, an FNV-1a hash of the parameters) and
 * the parameter block as native float32. The tag names the model and its
 * hyperparameters (a hash of kind and sizes), so a block is never read
 * into a model of another shape. */
#define NN_CKPT_MAGIC 0x4e4e4b54u /* "TKNN" in a little-endian file */
#define NN_CKPT_VERSION 1u
#define NN_CKPT_HEADER 40

/* The checkpoint of params[0..n) with tag as a malloc'd buffer (*buf,
 * *len; the caller frees *buf). TK_ENOMEM on failure, *buf NULL. */
int nn_ckpt_save(const float *params /* (P) */, size_t n, uint64_t tag, void **buf, size_t *len);
/* Read a checkpoint buffer into params[0..n). TK_ECORRUPT (params
 * unchanged) if the buffer is short, of another magic or version, of
 * another tag or parameter count, or its hash does not match. */
int nn_ckpt_load(float *params /* (P) */, size_t n, uint64_t tag, const void *buf, size_t len);
/* The same through a file: nn_ckpt_write writes path whole or not at all
 * (through path.tmp); nn_ckpt_read reads it with one read. TK_EIO if the
 * file cannot be written or read, else as nn_ckpt_save/nn_ckpt_load. */
int nn_ckpt_write(const char *path, const float *params /* (P) */, size_t n, uint64_t tag);
int nn_ckpt_read(const char *path, float *params /* (P) */, size_t n, uint64_t tag);

/* ---- layers ---------------------------------------------------------- */

/* Linear: y = x w^T + b over B rows (b may be NULL: no bias). */
void nn_linear_forward(float *y /* (B,F) */, const float *x /* (B,E) */,
                       const float *w /* (F,E) */, const float *b /* (F) or NULL */,
                       int B, int E, int F);
/* dx += dy w, dw += dy^T x, db += column sums of dy; dx and db may be NULL
 * (the input needs no gradient; the layer has no bias). */
void nn_linear_backward(float *dx /* (B,E) or NULL */, float *dw /* (F,E) */,
                        float *db /* (F) or NULL */, const float *dy /* (B,F) */,
                        const float *x /* (B,E) */, const float *w /* (F,E) */,
                        int B, int E, int F);

/* ReLU: y = max(x, 0); y may be x. */
void nn_relu_forward(float *y /* (N) */, const float *x /* (N) */, size_t n);
/* dx += dy where y > 0 (y is the forward output). */
void nn_relu_backward(float *dx /* (N) */, const float *dy /* (N) */, const float *y /* (N) */,
                      size_t n);

/* Layer norm of each of R rows over its E features: y = (x - mean) * rstd
 * * g + b, with rstd = 1/sqrt(var + 1e-5); mean and rstd are kept for the
 * backward pass. */
void nn_layernorm_forward(float *y /* (R,E) */, float *mean /* (R) */, float *rstd /* (R) */,
                          const float *x /* (R,E) */, const float *g /* (E) */,
                          const float *b /* (E) */, int R, int E);
void nn_layernorm_backward(float *dx /* (R,E) */, float *dg /* (E) */, float *db /* (E) */,
                           const float *dy /* (R,E) */, const float *x /* (R,E) */,
                           const float *mean /* (R) */, const float *rstd /* (R) */,
                           const float *g /* (E) */, int R, int E);

/* Residual: y = a + c; y may be a or c. */
void nn_residual_forward(float *y /* (N) */, const float *a /* (N) */, const float *c /* (N) */,
                         size_t n);
/* da += dy, dc += dy. */
void nn_residual_backward(float *da /* (N) */, float *dc /* (N) */, const float *dy /* (N) */,
                          size_t n);

/* Pooling over the valid positions of each sequence. */
enum { NN_POOL_SUM, NN_POOL_MEAN, NN_POOL_MAX };
/* y[b] = sum, mean or max over l < len[b] of x[b, l]. An empty sequence
 * (len[b] == 0) pools to 0. For NN_POOL_MAX, argmax[b, e] keeps the
 * position chosen (the first of equal maxima; -1 when empty); it may be
 * NULL for the other kinds. */
void nn_pool_forward(float *y /* (B,E) */, int *argmax /* (B,E) or NULL */,
                     const float *x /* (B,L,E) */, const int *len /* (B) */,
                     int B, int L, int E, int kind);
/* dx += the gradient of the pool; padding positions receive nothing. */
void nn_pool_backward(float *dx /* (B,L,E) */, const float *dy /* (B,E) */,
                      const int *argmax /* (B,E) or NULL */, const int *len /* (B) */,
                      int B, int L, int E, int kind);

/* Embedding lookup: y[i] = table[idx[i]] for idx[i] in [0, V); a negative
 * index is padding and looks up a row of zeros. */
void nn_embedding_forward(float *y /* (N,E) */, const int *idx /* (N) */,
                          const float *table /* (V,E) */, int N, int V, int E);
/* dtable[idx[i]] += dy[i] for the non-negative indices. */
void nn_embedding_backward(float *dtable /* (V,E) */, const float *dy /* (N,E) */,
                           const int *idx /* (N) */, int N, int V, int E);

/* Multi-head self-attention (not causal) over the valid positions of each
 * sequence, from packed projections qkv = [q | k | v] (the linear layer in
 * front of it is the caller's): for each head h and query i < len[b],
 * out[b,i,h] = sum over j < len[b] of softmax_j(q_i . k_j / sqrt(E/H)) v_j.
 * att keeps the weights for the backward pass (rows and columns of padding
 * are 0); out is 0 at padding positions. */
void nn_attention_forward(float *out /* (B,L,E) */, float *att /* (B,H,L,L) */,
                          const float *qkv /* (B,L,3E) */, const int *len /* (B) */,
                          int B, int L, int E, int H);
/* dqkv += the gradient; scratch is work space of L*L floats. */
void nn_attention_backward(float *dqkv /* (B,L,3E) */, float *scratch /* (L,L) */,
                           const float *dout /* (B,L,E) */, const float *qkv /* (B,L,3E) */,
                           const float *att /* (B,H,L,L) */, const int *len /* (B) */,
                           int B, int L, int E, int H);

/* A sparse matrix in CSR form: row i's entries are col[k], val[k] for k in
 * [rowptr[i], rowptr[i+1]). */
typedef struct nn_csr {
	int n, nnz;
	int *rowptr; /* (N+1) */
	int *col;    /* (nnz) */
	float *val;  /* (nnz) */
} nn_csr;

/* The normalised adjacency of a graph of n nodes as GCN uses it (Kipf and
 * Welling): A_hat = D^-1/2 (A + I) D^-1/2 where A is symmetric, with an
 * edge both ways for each (src[i], dst[i]) (duplicates count once) and D
 * its degrees with the self loops. Columns of each row ascend. TK_EINVAL if
 * a node is out of [0, n); TK_ENOMEM. The caller frees out with
 * nn_csr_free(). */
int nn_gcn_adjacency(nn_csr *out, const int *src /* (nedge) */, const int *dst /* (nedge) */,
                     int nedge, int n);
void nn_csr_free(nn_csr *a); /* frees the arrays; a zeroed or freed a is fine */

/* Graph convolution: y = A (x w^T) + b. xw keeps x w^T. */
void nn_gcn_forward(float *y /* (N,F) */, float *xw /* (N,F) */, const float *x /* (N,E) */,
                    const nn_csr *a /* (N,N) */, const float *w /* (F,E) */,
                    const float *b /* (F) or NULL */, int N, int E, int F);
/* dx += ..., dw += ..., db += ... (dx and db may be NULL); scratch is work
 * space of N*F floats. */
void nn_gcn_backward(float *dx /* (N,E) or NULL */, float *dw /* (F,E) */,
                     float *db /* (F) or NULL */, float *scratch /* (N,F) */,
                     const float *dy /* (N,F) */, const float *x /* (N,E) */,
                     const nn_csr *a /* (N,N) */, const float *w /* (F,E) */,
                     int N, int E, int F);

/* ---- losses ---------------------------------------------------------- */
/* Each loss returns its value and, when dpred is not NULL, adds its
 * gradient with respect to the predictions to dpred. */

/* Mean squared error over the rows with mask[i] != 0 (all rows when mask
 * is NULL): sum (pred - y)^2 / count; 0 with no gradient when no row
 * counts. The mask is how a multi-head model skips missing labels. */
float nn_mse_loss(float *dpred /* (N) or NULL */, const float *pred /* (N) */,
                  const float *y /* (N) */, const float *mask /* (N) or NULL */, int N);

/* Pairwise logistic rank loss (RankNet) within each group: the sum over
 * pairs with y[i] > y[j] of log(1 + exp(-(pred[i] - pred[j]))). */
float nn_rank_loss(float *dpred /* (N) or NULL */, const float *pred /* (N) */,
                   const float *y /* (N) */, const unsigned *group /* (G) */, int G);

/* LambdaRank as TLP trains with it (allRank's lambdaLoss with the
 * lambdaRank weighting scheme, sigma 1, all positions), per group and
 * summed: with the group sorted by prediction, descending (ties by index),
 * D_r = log2(1 + r) at rank r = 1.., G_i = (2^max(y_i,0) - 1) / maxDCG,
 * each pair with y_i > y_j costs
 *   -|1/D_ri - 1/D_rj| |G_i - G_j| log2(max(sigmoid(pred_i - pred_j), 1e-10)),
 * the NDCG change of swapping them times a logistic loss. The weights are
 * constants of the ranking (no gradient flows through the sort). One
 * group of all N rows treats the batch as one list, as TLP does. work
 * holds N ints of scratch. */
float nn_lambdarank_loss(float *dpred /* (N) or NULL */, int *work /* (N) */,
                         const float *pred /* (N) */, const float *y /* (N) */,
                         const unsigned *group /* (G) */, int G);

/* ---- optimisers ------------------------------------------------------ */

typedef struct nn_adam {
	float lr, beta1, beta2, eps;
	float weight_decay; /* decoupled (AdamW); 0 for plain Adam */
	int t;              /* steps taken; nn_adam_step increments it */
} nn_adam;

/* lr 1e-3, beta1 0.9, beta2 0.999, eps 1e-8, weight_decay 0, t 0. */
void nn_adam_default(nn_adam *o);
/* One Adam step over a parameter block: m and v are the moment blocks
 * (zeroed before the first step), grad the gradient block. */
void nn_adam_step(float *param /* (P) */, float *m /* (P) */, float *v /* (P) */,
                  const float *grad /* (P) */, size_t n, nn_adam *o);
/* One SGD step with L2 weight decay and momentum: g = grad + wd*param,
 * vel = momentum*vel + g, param -= lr*vel. vel may be NULL when momentum
 * is 0. */
void nn_sgd_step(float *param /* (P) */, float *vel /* (P) or NULL */,
                 const float *grad /* (P) */, size_t n, float lr, float momentum,
                 float weight_decay);
/* Scale grad so its L2 norm is at most max_norm; returns the norm before. */
float nn_clip_grad_norm(float *grad /* (P) */, size_t n, float max_norm);
/* ---- lottery tickets (Moses) ------------------------------------------ */
/* Moses (Zhang et al., IJCAI 2022, eq. 5 and 7) adapts a trained model to
 * new hardware by splitting its parameters by their saliency on the
 * target's data, xi_i = |w_i * dL/dw_i|: the most salient (transferable,
 * the "winning ticket") are trained by gradient descent, the others only
 * decay toward zero. */

/* xi[i] = |param[i] * grad[i]|. */
void nn_saliency(float *xi /* (P) */, const float *param /* (P) */, const float *grad /* (P) */,
                 size_t n);
/* Mark in mask[n] (1: transferable, 0: not) the parameters of the top
 * share ratio by saliency (0 <= ratio <= 1; exactly round(ratio * n) of
 * them, ties taken in index order), or, when threshold > 0, those with
 * xi[i] >= threshold * max(xi) (none if every xi is 0). work holds n
 * floats of scratch. Returns the number marked; cannot fail. */
size_t nn_ticket_mask(unsigned char *mask /* (P) */, const float *xi /* (P) */, size_t n,
                      double ratio, double threshold, float *work /* (P) */);
/* One step of o->t: an Adam(W) step as nn_adam_step on the parameters with
 * mask[i] != 0; the others are not trained but decay toward zero,
 * param -= lr * decay * param (Moses' eq. 7), and their moments are left
 * as they are. mask NULL: every parameter is trained. */
void nn_adam_step_masked(float *param /* (P) */, float *m /* (P) */, float *v /* (P) */,
                         const float *grad /* (P) */, const unsigned char *mask /* (P) or NULL */,
                         size_t n, nn_adam *o, float decay);
/* Learning rate at step (0-based) of total: linear warm-up from 0 over
 * warmup steps, then cosine decay from lr to lr*final_frac at total. */
float nn_lr_schedule(float lr, int step, int warmup, int total, float final_frac);

#endif
