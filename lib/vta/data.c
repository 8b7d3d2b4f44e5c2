/*
 * data: the numbers vta-sim computes on. Inputs are random integers of the
 * accelerator's input and weight types, kept in the operator's layout as
 * floats so that task/ref.c's interpreter of the operator's definition
 * computes the exact sums (every value is an integer far below 2^53); the
 * expected output is those sums shifted right and clipped to the output
 * type, as the ALU does. Packing copies the inputs into VTA's blocked
 * layouts (vta.h), padding channels and batch with zeros.
 */
#include "vta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vta_random_inputs(const te_prog *p, const vta_hw *hw, uint64_t seed, float *const *in)
{
	for (int i = 0; i < p->ninput && i < 2; i++) {
		int bits = i == 0 ? hw->inp_bits : hw->wgt_bits;
		uint32_t span = 1u << bits;
		int32_t lo = -(int32_t)(span / 2);
		tk_rng r;
		tk_rng_seed(&r, seed, (uint64_t)i + 1);
		const te_tensor *t = &p->tensor[p->input[i]];
		for (int64_t j = 0; j < t->size; j++)
			in[i][j] = (float)(lo + (int32_t)tk_rng_below(&r, span));
	}
}

/* The operator-layout index of input element (n, c, y, x) and of weight
 * element (k, c, r, s); -1 outside the tensor (padding). */
static int64_t in_index(const vta_shape *sh, int64_t n, int64_t c, int64_t y, int64_t x)
{
	if (n >= sh->n || c >= sh->c)
		return -1;
	return sh->op == VTA_DENSE ? n * sh->c + c : ((n * sh->c + c) * sh->h + y) * sh->w + x;
}

static int64_t w_index(const vta_shape *sh, int64_t k, int64_t c, int64_t r, int64_t s)
{
	if (k >= sh->k || c >= sh->c)
		return -1;
	/* dense's B is [k, n]: the reduction first */
	return sh->op == VTA_DENSE ? c * sh->k + k : ((k * sh->c + c) * sh->r + r) * sh->s + s;
}

int vta_pack(const vta_hw *hw, const vta_shape *sh, const float *const *in, int8_t **inp,
             size_t *ninp, int8_t **wgt, size_t *nwgt)
{
	const int B = hw->batch, K = hw->block;
	*ninp = (size_t)(sh->nb * sh->cb * sh->h * sh->w * B * K);
	*nwgt = (size_t)(sh->kb * sh->cb * sh->r * sh->s * K * K);
	*inp = malloc(*ninp ? *ninp : 1);
	*wgt = malloc(*nwgt ? *nwgt : 1);
	if (!*inp || !*wgt) {
		free(*inp);
		free(*wgt);
		*inp = *wgt = NULL;
		return tk_seterr(TK_ENOMEM, "out of memory for the packed inputs");
	}
	int8_t *d = *inp;
	for (int64_t nb = 0; nb < sh->nb; nb++)
		for (int64_t cb = 0; cb < sh->cb; cb++)
			for (int64_t y = 0; y < sh->h; y++)
				for (int64_t x = 0; x < sh->w; x++)
					for (int bi = 0; bi < B; bi++)
						for (int ci = 0; ci < K; ci++) {
							int64_t j = in_index(sh, nb * B + bi, cb * K + ci, y, x);
							*d++ = (int8_t)(j < 0 ? 0 : (int)in[0][j]);
						}
	d = *wgt;
	for (int64_t kb = 0; kb < sh->kb; kb++)
		for (int64_t cb = 0; cb < sh->cb; cb++)
			for (int64_t r = 0; r < sh->r; r++)
				for (int64_t s = 0; s < sh->s; s++)
					for (int o = 0; o < K; o++)
						for (int i = 0; i < K; i++) {
							int64_t j = w_index(sh, kb * K + o, cb * K + i, r, s);
							*d++ = (int8_t)(j < 0 ? 0 : (int)in[1][j]);
						}
	return TK_OK;
}

size_t vta_out_bytes(const vta_hw *hw, const vta_shape *sh)
{
	return (size_t)(sh->nb * sh->kb * sh->oh * sh->ow * hw->batch * hw->block);
}

void vta_expect(const vta_shape *sh, const double *ref, int8_t *expect)
{
	int64_t n = sh->n * sh->k * sh->oh * sh->ow;
	for (int64_t i = 0; i < n; i++) {
		int64_t v = (int64_t)ref[i] >> sh->shift;
		expect[i] = (int8_t)(v < sh->out_lo ? sh->out_lo : v > sh->out_hi ? sh->out_hi : v);
	}
}

int64_t vta_check(const vta_hw *hw, const vta_shape *sh, const int8_t *out,
                  const int8_t *expect, char *msg, size_t nmsg)
{
	const int B = hw->batch, K = hw->block;
	int64_t nbad = 0, i = 0;
	for (int64_t n = 0; n < sh->n; n++)
		for (int64_t k = 0; k < sh->k; k++)
			for (int64_t y = 0; y < sh->oh; y++)
				for (int64_t x = 0; x < sh->ow; x++, i++) {
					int64_t e = ((n / B * sh->kb + k / K) * sh->oh + y) * sh->ow + x;
					int8_t got = out[(e * B + n % B) * K + k % K];
					if (got == expect[i])
						continue;
					if (nbad++ == 0 && msg && nmsg)
						snprintf(msg, nmsg, "out[%lld] (n=%lld k=%lld y=%lld x=%lld) = %d, "
						         "expected %d", (long long)i, (long long)n, (long long)k,
						         (long long)y, (long long)x, got, expect[i]);
				}
	return nbad;
}
