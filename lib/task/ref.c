/*
 * ref: reference interpreter (see ref.h).
 *
 * Each stage walks its whole iteration domain (spatial axes outer, reduction
 * axes inner) with an odometer. Index expressions that are affine in the
 * axes are updated incrementally when an axis steps; others (Winograd's
 * tile arithmetic, ediv) are evaluated at every point.
 */
#include "ref.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct rd {
	const double *val, *abs;   /* tensor data */
	int ndim;
	int64_t shape[TE_MAXDIM], stride[TE_MAXDIM];
	int affine;                /* all dims affine: incremental update */
	int64_t coef[TE_MAXDIM][TE_MAXAXIS];
	int64_t cur[TE_MAXDIM];    /* current index per dim (affine reads) */
	const te_expr *const *idx;
} rd;

void ref_random_inputs(const te_prog *p, uint64_t seed, float *const *in)
{
	for (int i = 0; i < p->ninput; i++) {
		tk_rng r;
		tk_rng_seed(&r, seed, (uint64_t)i + 1);
		const te_tensor *t = &p->tensor[p->input[i]];
		for (int64_t j = 0; j < t->size; j++)
			in[i][j] = (float)(tk_rng_unif(&r) * 2.0 - 1.0);
	}
}

static void setup_read(rd *r, const te_stage *st, const te_read *tr, const te_tensor *t)
{
	r->ndim = t->ndim;
	r->idx = (const te_expr *const *)tr->idx;
	r->affine = 1;
	int64_t s = 1;
	for (int d = t->ndim - 1; d >= 0; d--) {
		r->shape[d] = t->shape[d];
		r->stride[d] = s;
		s *= t->shape[d];
	}
	for (int d = 0; d < t->ndim; d++)
		for (int a = 0; a < st->naxis; a++) {
			int ok;
			r->coef[d][a] = te_expr_coeff(tr->idx[d], a, &ok);
			if (!ok)
				r->affine = 0;
		}
}

/* Value and abs of read r at axis values ax; returns 0 outside the tensor. */
static inline void fetch(const rd *r, const int64_t *ax, double *v, double *a)
{
	int64_t off = 0;
	if (r->affine) {
		for (int d = 0; d < r->ndim; d++) {
			int64_t i = r->cur[d];
			if (i < 0 || i >= r->shape[d]) {
				*v = *a = 0;
				return;
			}
			off += i * r->stride[d];
		}
	} else {
		int ok = 1;
		for (int d = 0; d < r->ndim; d++) {
			int64_t i = te_expr_eval(r->idx[d], ax, &ok);
			if (!ok || i < 0 || i >= r->shape[d]) {
				*v = *a = 0;
				return;
			}
			off += i * r->stride[d];
		}
	}
	*v = r->val[off];
	*a = r->abs[off];
}

/* Spatial points summed together: the innermost spatial axis's next
 * REF_BLOCK points share every pass over the reduction domain, so that a
 * read that strides along the reduction (a dense layer's B[k,n] down k)
 * is read a cache line at a time across them. */
#define REF_BLOCK 64

/* The coefficient of axis a in dimension d of read q, 0 for no axis. */
static inline int64_t coef_of(const rd *q, int d, int a)
{
	return a >= 0 ? q->coef[d][a] : 0;
}

/* floor(x / y) and ceil(x / y) for y > 0. */
static inline int64_t div_floor(int64_t x, int64_t y)
{
	return x >= 0 ? x / y : -((-x + y - 1) / y);
}

static inline int64_t div_ceil(int64_t x, int64_t y)
{
	return -div_floor(-x, y);
}

/* The innermost reduction axis's whole run from where the (affine) reads
 * are now, for the J spatial points along axis sa from here, added to
 * sum[j] and sabs[j]. The points whose reads all stay inside their tensors
 * over the whole run (an interval of j: the indices are affine) are summed
 * in a plain strided loop; the others (a convolution's padding) a term at
 * a time, a read outside its tensor being 0. Each point's terms are added
 * in the odometer's order, so its sum is the same to the bit as a point
 * at a time. */
static void block_run(const te_stage *st, const rd *reads, int sa, int64_t J, double *sum,
                      double *sabs)
{
	int a = st->naxis - 1, nr = st->nread;
	int64_t e = st->axis[a].extent, off[TE_MAXREAD], kin[TE_MAXREAD], jin[TE_MAXREAD];
	int64_t jlo = 0, jhi = J - 1;
	for (int r = 0; r < nr; r++) {
		const rd *q = &reads[r];
		off[r] = kin[r] = jin[r] = 0;
		for (int d = 0; d < q->ndim; d++) {
			int64_t c = q->cur[d], ck = q->coef[d][a] * (e - 1), cj = coef_of(q, d, sa);
			int64_t lo = c + (ck < 0 ? ck : 0), hi = c + (ck > 0 ? ck : 0);
			int64_t top = q->shape[d] - 1;
			/* inside for every k: lo + cj*j >= 0 and hi + cj*j <= top */
			if (cj == 0) {
				if (lo < 0 || hi > top)
					jhi = -1;
			} else if (cj > 0) {
				int64_t l = div_ceil(-lo, cj), h = div_floor(top - hi, cj);
				jlo = l > jlo ? l : jlo;
				jhi = h < jhi ? h : jhi;
			} else {
				int64_t l = div_ceil(hi - top, -cj), h = div_floor(lo, -cj);
				jlo = l > jlo ? l : jlo;
				jhi = h < jhi ? h : jhi;
			}
			off[r] += c * q->stride[d];
			kin[r] += q->coef[d][a] * q->stride[d];
			jin[r] += coef_of(q, d, sa) * q->stride[d];
		}
	}
	if (jlo > jhi)
		jlo = J, jhi = J - 1;
	if (nr == 2 && jlo <= jhi) {
		const double *v0 = reads[0].val, *a0 = reads[0].abs;
		const double *v1 = reads[1].val, *a1 = reads[1].abs;
		for (int64_t k = 0; k < e; k++)
			for (int64_t j = jlo; j <= jhi; j++) {
				int64_t o0 = off[0] + k * kin[0] + j * jin[0];
				int64_t o1 = off[1] + k * kin[1] + j * jin[1];
				sum[j] += v0[o0] * v1[o1];
				sabs[j] += a0[o0] * a1[o1];
			}
	} else if (jlo <= jhi) {
		for (int64_t k = 0; k < e; k++)
			for (int64_t j = jlo; j <= jhi; j++) {
				double p = 1, pa = 1;
				for (int r = 0; r < nr; r++) {
					int64_t o = off[r] + k * kin[r] + j * jin[r];
					p *= reads[r].val[o];
					pa *= reads[r].abs[o];
				}
				sum[j] += p;
				sabs[j] += pa;
			}
	}
	/* the points outside [jlo, jhi], a term at a time */
	for (int64_t j = 0; j < J; j++) {
		if (j == jlo && jlo <= jhi)
			j = jhi + 1;
		if (j >= J)
			break;
		for (int64_t k = 0; k < e; k++) {
			double p = 1, pa = 1;
			for (int r = 0; r < nr; r++) {
				const rd *q = &reads[r];
				int64_t o = 0;
				int in = 1;
				for (int d = 0; d < q->ndim && in; d++) {
					int64_t i = q->cur[d] + k * q->coef[d][a] + j * coef_of(q, d, sa);
					in = i >= 0 && i < q->shape[d];
					o += i * q->stride[d];
				}
				p *= in ? q->val[o] : 0;
				pa *= in ? q->abs[o] : 0;
			}
			sum[j] += p;
			sabs[j] += pa;
		}
	}
}

/* Step the odometer of axes [lo, hi) at ax, and the affine reads' indices
 * with it: the first axis that did not wrap, or lo - 1 when all did. */
static int step_axes(const te_stage *st, rd *reads, int64_t *ax, int lo, int hi)
{
	int a;
	for (a = hi - 1; a >= lo; a--) {
		int64_t step = 1;
		if (++ax[a] == st->axis[a].extent) {
			step = 1 - st->axis[a].extent;
			ax[a] = 0;
		}
		for (int r = 0; r < st->nread; r++)
			if (reads[r].affine)
				for (int d = 0; d < reads[r].ndim; d++)
					reads[r].cur[d] += step * reads[r].coef[d][a];
		if (ax[a])
			break;
	}
	return a;
}

static void run_stage(const te_stage *st, rd *reads, double *out, double *outabs)
{
	int64_t ax[TE_MAXAXIS] = { 0 };
	int n = st->naxis, ns = st->nspatial, sa = ns - 1;
	/* affine reads start at the constant term (all axes 0) */
	int fast = n > ns && st->nread > 0;
	for (int r = 0; r < st->nread; r++) {
		fast &= reads[r].affine;
		if (reads[r].affine) {
			int ok = 1;
			for (int d = 0; d < reads[r].ndim; d++)
				reads[r].cur[d] = te_expr_eval(reads[r].idx[d], ax, &ok);
		}
	}
	int64_t o = 0;
	for (;;) {
		/* J spatial points along axis sa (one unless every read is affine):
		 * sums over the reduction domain, in its odometer's order */
		int64_t J = 1;
		if (fast && sa >= 0) {
			J = st->axis[sa].extent - ax[sa];
			if (J > REF_BLOCK)
				J = REF_BLOCK;
		}
		double sum[REF_BLOCK] = { 0 }, sabs[REF_BLOCK] = { 0 };
		for (;;) {
			if (fast && ax[n - 1] == 0) {
				block_run(st, reads, sa, J, sum, sabs);
				/* the whole innermost run is summed: on to its last point */
				int64_t e = st->axis[n - 1].extent - 1;
				ax[n - 1] = e;
				for (int r = 0; r < st->nread; r++)
					for (int d = 0; d < reads[r].ndim; d++)
						reads[r].cur[d] += e * reads[r].coef[d][n - 1];
			} else {
				for (int64_t j = 0; j < J; j++) {
					double p = 1, pa = 1;
					for (int r = 0; r < st->nread; r++) {
						double v, a;
						rd *q = &reads[r];
						if (j > 0) /* the j-th point along sa (affine reads only) */
							for (int d = 0; d < q->ndim; d++)
								q->cur[d] += coef_of(q, d, sa);
						fetch(q, ax, &v, &a);
						p *= v;
						pa *= a;
					}
					sum[j] += p;
					sabs[j] += pa;
				}
				if (J > 1) /* back to the first point */
					for (int r = 0; r < st->nread; r++)
						for (int d = 0; d < reads[r].ndim; d++)
							reads[r].cur[d] -= (J - 1) * coef_of(&reads[r], d, sa);
			}
			if (step_axes(st, reads, ax, ns, n) < ns)
				break;
		}
		for (int64_t j = 0; j < J; j++, o++) {
			if (st->epilogue == TE_EPI_RELU && sum[j] < 0)
				sum[j] = 0;
			out[o] = sum[j];
			outabs[o] = sabs[j];
		}
		/* on to the last of the J points, then step the spatial odometer */
		if (J > 1) {
			ax[sa] += J - 1;
			for (int r = 0; r < st->nread; r++)
				for (int d = 0; d < reads[r].ndim; d++)
					reads[r].cur[d] += (J - 1) * reads[r].coef[d][sa];
		}
		if (step_axes(st, reads, ax, 0, ns) < 0)
			return;
	}
}

int ref_compute(const te_prog *p, const float *const *in, double *out, double *outabs)
{
	double *val[TE_MAXTENSOR] = { 0 }, *abs_[TE_MAXTENSOR] = { 0 };
	int rc = TK_OK;
	for (int t = 0; t < p->ntensor; t++) {
		const te_tensor *tt = &p->tensor[t];
		if (tt->kind == TE_OUTPUT) {
			val[t] = out;
			abs_[t] = outabs;
			continue;
		}
		val[t] = malloc((size_t)tt->size * sizeof(double));
		abs_[t] = malloc((size_t)tt->size * sizeof(double));
		if (!val[t] || !abs_[t]) {
			rc = tk_seterr(TK_ENOMEM, "out of memory for the reference of %s", p->key);
			goto done;
		}
		const float *src = NULL;
		if (tt->kind == TE_CONSTANT)
			src = tt->values;
		for (int i = 0; i < p->ninput; i++)
			if (p->input[i] == t)
				src = in[i];
		if (src)
			for (int64_t j = 0; j < tt->size; j++) {
				val[t][j] = src[j];
				abs_[t][j] = fabs((double)src[j]);
			}
	}
	for (int s = 0; s < p->nstage; s++) {
		const te_stage *st = &p->stage[s];
		rd reads[TE_MAXREAD];
		memset(reads, 0, sizeof reads);
		for (int r = 0; r < st->nread; r++) {
			int t = st->read[r].tensor;
			setup_read(&reads[r], st, &st->read[r], &p->tensor[t]);
			reads[r].val = val[t];
			reads[r].abs = abs_[t];
		}
		run_stage(st, reads, val[st->out], abs_[st->out]);
	}
done:
	for (int t = 0; t < p->ntensor; t++)
		if (p->tensor[t].kind != TE_OUTPUT) {
			free(val[t]);
			free(abs_[t]);
		}
	return rc;
}

double ref_rtol(const te_prog *p)
{
	double k = 0;
	for (int s = 0; s < p->nstage; s++) {
		const te_stage *st = &p->stage[s];
		double red = 1;
		for (int a = st->nspatial; a < st->naxis; a++)
			red *= (double)st->axis[a].extent;
		k += 1 + sqrt(red);
	}
	return 16 * FLT_EPSILON * k;
}
