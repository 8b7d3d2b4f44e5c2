/*
 * nn: parameter blocks, checkpoints and optimisers: what a model does with
 * its whole parameter block at once. Contracts in nn.h.
 */
#include "nn.h"

#include <assert.h>
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- parameter blocks ------------------------------------------------ */

size_t nn_count(const size_t *sizes, int n)
{
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += sizes[i];
	return total;
}

void nn_layout(float *base, float **const ptrs[], const size_t *sizes, int n)
{
	float *p = base;
	for (int i = 0; i < n; i++) {
		*ptrs[i] = p;
		p += sizes[i];
	}
}

int nn_alloc(float **block, size_t *count, float **const ptrs[], const size_t *sizes, int n)
{
	size_t total = nn_count(sizes, n);
	size_t bytes = (total ? total : 1) * sizeof(float);
	void *p = NULL;
	*block = NULL;
	if (total > SIZE_MAX / sizeof(float) || posix_memalign(&p, 64, (bytes + 63) / 64 * 64))
		return tk_seterr(TK_ENOMEM, "cannot allocate %zu parameters", total);
	memset(p, 0, bytes);
	*block = p;
	if (count)
		*count = total;
	nn_layout(p, ptrs, sizes, n);
	return TK_OK;
}

void nn_zero(float *p, size_t n)
{
	memset(p, 0, n * sizeof *p);
}

void nn_fill(float *p, size_t n, float value)
{
	for (size_t i = 0; i < n; i++)
		p[i] = value;
}

void nn_init_uniform(float *p, size_t n, float bound, tk_rng *r)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (float)((2 * tk_rng_unif(r) - 1) * bound);
}

/* ---- the BLAS -------------------------------------------------------- */

const char *nn_blas_core(void)
{
	const char *c = openblas_get_corename();
	return c ? c : "unknown";
}

int nn_blas_threads(void)
{
	return openblas_get_num_threads();
}

void nn_set_blas_threads(int n)
{
	openblas_set_num_threads(n > 0 ? n : 1);
}

const char *nn_blas_core_want(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	/* Core types with AVX2 kernels, as OpenBLAS's DYNAMIC_ARCH names them:
	 * a choice among these (a pin to Haswell on an AVX-512 CPU too) stays. */
	static const char *const avx2[] = { "Haswell", "Zen", "SkylakeX", "Cooperlake",
		                            "SapphireRapids" };
	const char *core = nn_blas_core();
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
		return NULL;
	for (size_t i = 0; i < sizeof avx2 / sizeof *avx2; i++)
		if (!strcasecmp(core, avx2[i]))
			return NULL;
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
		return "SkylakeX";
	return "Haswell";
#else
	return NULL;
#endif
}

/* ---- checkpoints ----------------------------------------------------- */

/* Header fields at their byte offsets, native byte order. */
enum { H_MAGIC = 0, H_VERSION = 4, H_TAG = 8, H_COUNT = 16, H_HASH = 24, H_RESERVED = 32 };

int nn_ckpt_save(const float *params, size_t n, uint64_t tag, void **buf, size_t *len)
{
	uint32_t magic = NN_CKPT_MAGIC, version = NN_CKPT_VERSION;
	uint64_t count = n, hash = tk_hash64(params, n * sizeof *params, 0), zero = 0;
	size_t total = NN_CKPT_HEADER + n * sizeof *params;
	unsigned char *b = malloc(total);
	*buf = NULL;
	*len = 0;
	if (!b)
		return tk_seterr(TK_ENOMEM, "cannot allocate a checkpoint of %zu bytes", total);
	memcpy(b + H_MAGIC, &magic, 4);
	memcpy(b + H_VERSION, &version, 4);
	memcpy(b + H_TAG, &tag, 8);
	memcpy(b + H_COUNT, &count, 8);
	memcpy(b + H_HASH, &hash, 8);
	memcpy(b + H_RESERVED, &zero, 8);
	memcpy(b + NN_CKPT_HEADER, params, n * sizeof *params);
	*buf = b;
	*len = total;
	return TK_OK;
}

int nn_ckpt_load(float *params, size_t n, uint64_t tag, const void *buf, size_t len)
{
	const unsigned char *b = buf;
	uint32_t magic, version;
	uint64_t ftag, count, hash;
	if (len < NN_CKPT_HEADER)
		return tk_seterr(TK_ECORRUPT, "checkpoint: %zu bytes, shorter than its header", len);
	memcpy(&magic, b + H_MAGIC, 4);
	memcpy(&version, b + H_VERSION, 4);
	memcpy(&ftag, b + H_TAG, 8);
	memcpy(&count, b + H_COUNT, 8);
	memcpy(&hash, b + H_HASH, 8);
	if (magic != NN_CKPT_MAGIC)
		return tk_seterr(TK_ECORRUPT, "checkpoint: not a tunekit checkpoint (bad magic)");
	if (version != NN_CKPT_VERSION)
		return tk_seterr(TK_ECORRUPT, "checkpoint: version %u, this build reads version %u",
		                 version, NN_CKPT_VERSION);
	if (ftag != tag)
		return tk_seterr(TK_ECORRUPT, "checkpoint: of another model (tag %016llx, expected %016llx)",
		                 (unsigned long long)ftag, (unsigned long long)tag);
	if (count != n || len - NN_CKPT_HEADER != n * sizeof *params)
		return tk_seterr(TK_ECORRUPT, "checkpoint: %llu parameters in %zu bytes, expected %zu",
		                 (unsigned long long)count, len, n);
	if (tk_hash64(b + NN_CKPT_HEADER, n * sizeof *params, 0) != hash)
		return tk_seterr(TK_ECORRUPT, "checkpoint: parameters do not match their hash");
	memcpy(params, b + NN_CKPT_HEADER, n * sizeof *params);
	return TK_OK;
}

int nn_ckpt_write(const char *path, const float *params, size_t n, uint64_t tag)
{
	void *buf;
	size_t len;
	char *tmp;
	int rc = nn_ckpt_save(params, n, tag, &buf, &len);
	if (rc)
		return rc;
	tmp = malloc(strlen(path) + 5);
	if (!tmp) {
		free(buf);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	sprintf(tmp, "%s.tmp", path);
	rc = tk_write_renamed(tmp, path, buf, len, 0666);
	free(tmp);
	free(buf);
	return rc;
}

int nn_ckpt_read(const char *path, float *params, size_t n, uint64_t tag)
{
	/* One read of the expected size plus one byte, so that a longer file is
	 * seen as such without reading it all. */
	size_t want = NN_CKPT_HEADER + n * sizeof *params + 1, got;
	unsigned char *buf;
	int rc;
	FILE *f = fopen(path, "rb");
	if (!f)
		return tk_seterr(TK_EIO, "cannot open %s: %s", path, strerror(errno));
	buf = malloc(want);
	if (!buf) {
		fclose(f);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	got = fread(buf, 1, want, f);
	if (ferror(f)) {
		rc = tk_seterr(TK_EIO, "cannot read %s", path);
	} else {
		rc = nn_ckpt_load(params, n, tag, buf, got);
		if (rc == TK_ECORRUPT) {
			char why[256]; /* tk_errmsg() is the buffer tk_seterr writes */
			snprintf(why, sizeof why, "%s", tk_errmsg());
			tk_seterr(rc, "%s: %s", path, why);
		}
	}
	fclose(f);
	free(buf);
	return rc;
}

/* ---- optimisers ------------------------------------------------------ */

void nn_adam_default(nn_adam *o)
{
	o->lr = 1e-3f;
	o->beta1 = 0.9f;
	o->beta2 = 0.999f;
	o->eps = 1e-8f;
	o->weight_decay = 0;
	o->t = 0;
}

void nn_adam_step(float *param, float *m, float *v, const float *grad, size_t n, nn_adam *o)
{
	o->t++;
	float c1 = 1.0f - powf(o->beta1, (float)o->t), c2 = 1.0f - powf(o->beta2, (float)o->t);
	for (size_t i = 0; i < n; i++) {
		float g = grad[i];
		m[i] = o->beta1 * m[i] + (1 - o->beta1) * g;
		v[i] = o->beta2 * v[i] + (1 - o->beta2) * g * g;
		float mh = m[i] / c1, vh = v[i] / c2;
		param[i] -= o->lr * (mh / (sqrtf(vh) + o->eps) + o->weight_decay * param[i]);
	}
}

void nn_adam_step_masked(float *param, float *m, float *v, const float *grad,
                         const unsigned char *mask, size_t n, nn_adam *o, float decay)
{
	o->t++;
	float c1 = 1.0f - powf(o->beta1, (float)o->t), c2 = 1.0f - powf(o->beta2, (float)o->t);
	for (size_t i = 0; i < n; i++) {
		if (mask && !mask[i]) {
			param[i] -= o->lr * decay * param[i];
			continue;
		}
		float g = grad[i];
		m[i] = o->beta1 * m[i] + (1 - o->beta1) * g;
		v[i] = o->beta2 * v[i] + (1 - o->beta2) * g * g;
		float mh = m[i] / c1, vh = v[i] / c2;
		param[i] -= o->lr * (mh / (sqrtf(vh) + o->eps) + o->weight_decay * param[i]);
	}
}

void nn_sgd_step(float *param, float *vel, const float *grad, size_t n, float lr,
                 float momentum, float weight_decay)
{
	assert(vel || momentum == 0);
	for (size_t i = 0; i < n; i++) {
		float g = grad[i] + weight_decay * param[i];
		if (vel)
			g = vel[i] = momentum * vel[i] + g;
		param[i] -= lr * g;
	}
}

float nn_clip_grad_norm(float *grad, size_t n, float max_norm)
{
	double ss = 0;
	for (size_t i = 0; i < n; i++)
		ss += (double)grad[i] * grad[i];
	float norm = (float)sqrt(ss);
	if (norm > max_norm && norm > 0) {
		float s = max_norm / norm;
		for (size_t i = 0; i < n; i++)
			grad[i] *= s;
	}
	return norm;
}

float nn_lr_schedule(float lr, int step, int warmup, int total, float final_frac)
{
	if (step < warmup)
		return lr * (float)(step + 1) / (float)warmup;
	if (total <= warmup || step >= total)
		return step >= total ? lr * final_frac : lr;
	double p = (double)(step - warmup) / (double)(total - warmup);
	double c = 0.5 * (1 + cos(M_PI * p));
	return (float)(lr * (final_frac + (1 - final_frac) * c));
}

/* ---- lottery tickets ----------------------------------------------------- */

void nn_saliency(float *xi, const float *param, const float *grad, size_t n)
{
	for (size_t i = 0; i < n; i++)
		xi[i] = fabsf(param[i] * grad[i]);
}

/* The k-th largest (0-based) of a[0..n), which it reorders: selection by
 * three-way partitions (ties fall in the middle part at once) around a
 * median-of-three pivot. */
static float kth_largest(float *a, size_t n, size_t k)
{
	size_t lo = 0, hi = n; /* the answer is in a[lo..hi) */
	while (hi - lo > 1) {
		float x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1];
		float pivot = x > y ? (y > z ? y : x > z ? z : x) : (x > z ? x : y > z ? z : y);
		/* [lo, gt) > pivot, [gt, i) == pivot, [lt, hi) < pivot */
		size_t gt = lo, i = lo, lt = hi;
		while (i < lt) {
			float t = a[i];
			if (t > pivot) {
				a[i++] = a[gt];
				a[gt++] = t;
			} else if (t < pivot) {
				a[i] = a[--lt];
				a[lt] = t;
			} else {
				i++;
			}
		}
		if (k < gt)
			hi = gt;
		else if (k >= lt)
			lo = lt;
		else
			return pivot;
	}
	return a[lo];
}

size_t nn_ticket_mask(unsigned char *mask, const float *xi, size_t n, double ratio,
                      double threshold, float *work)
{
	size_t kept = 0;
	if (n == 0)
		return 0;
	if (threshold > 0) {
		float top = 0;
		for (size_t i = 0; i < n; i++)
			top = xi[i] > top ? xi[i] : top;
		for (size_t i = 0; i < n; i++) {
			mask[i] = top > 0 && xi[i] >= (float)threshold * top;
			kept += mask[i];
		}
		return kept;
	}
	size_t k = (size_t)floor((ratio < 0 ? 0 : ratio > 1 ? 1 : ratio) * (double)n + 0.5);
	if (k == 0 || k == n) {
		memset(mask, k == n, n);
		return k;
	}
	memcpy(work, xi, sizeof *work * n);
	float bar = kth_largest(work, n, k - 1);
	size_t above = 0;
	for (size_t i = 0; i < n; i++)
		above += xi[i] > bar;
	size_t ties = k - above; /* of those equal to bar, the first in index order */
	for (size_t i = 0; i < n; i++) {
		mask[i] = xi[i] > bar || (xi[i] == bar && ties > 0 && ties--);
		kept += mask[i];
	}
	return kept;
}
