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

/* The innermost (reduction) axis's whole run from where the affine reads
 * are now, added to *sum and *sabs point by point in the order the
 * odometer takes, so the result is the same to the bit, when every read
 * stays inside its tensor along it: 1. Else 0, nothing added. About ten
 * times faster on a long run than a point at a time (a dense layer's k). */
static int run_inner(const te_stage *st, const rd *reads, double *sum, double *sabs)
{
	int a = st->naxis - 1, nr = st->nread;
	int64_t e = st->axis[a].extent, off[TE_MAXREAD], inc[TE_MAXREAD];
	for (int r = 0; r < nr; r++) {
		const rd *q = &reads[r];
		off[r] = inc[r] = 0;
		for (int d = 0; d < q->ndim; d++) {
			int64_t i0 = q->cur[d], i1 = i0 + (e - 1) * q->coef[d][a];
			if (i0 < 0 || i0 >= q->shape[d] || i1 < 0 || i1 >= q->shape[d])
				return 0;
			off[r] += i0 * q->stride[d];
			inc[r] += q->coef[d][a] * q->stride[d];
		}
	}
	double s = *sum, sa = *sabs;
	if (nr == 2) {
		const double *v0 = reads[0].val + off[0], *a0 = reads[0].abs + off[0];
		const double *v1 = reads[1].val + off[1], *a1 = reads[1].abs + off[1];
		for (int64_t k = 0; k < e; k++) {
			s += v0[k * inc[0]] * v1[k * inc[1]];
			sa += a0[k * inc[0]] * a1[k * inc[1]];
		}
	} else {
		for (int64_t k = 0; k < e; k++) {
			double p = 1, pa = 1;
			for (int r = 0; r < nr; r++) {
				p *= reads[r].val[off[r] + k * inc[r]];
				pa *= reads[r].abs[off[r] + k * inc[r]];
			}
			s += p;
			sa += pa;
		}
	}
	*sum = s;
	*sabs = sa;
	return 1;
}

static void run_stage(const te_stage *st, rd *reads, double *out, double *outabs)
{
	int64_t ax[TE_MAXAXIS] = { 0 };
	int n = st->naxis, ns = st->nspatial, fast = n > ns && st->nread > 0;
	for (int r = 0; r < st->nread; r++)
		fast &= reads[r].affine;
	/* affine reads start at the constant term (all axes 0) */
	for (int r = 0; r < st->nread; r++)
		if (reads[r].affine) {
			int ok = 1;
			for (int d = 0; d < reads[r].ndim; d++)
				reads[r].cur[d] = te_expr_eval(reads[r].idx[d], ax, &ok);
		}
	int64_t o = 0;
	for (;;) {
		/* one spatial point: sum over the reduction domain */
		double sum = 0, sabs = 0;
		for (;;) {
			if (fast && ax[n - 1] == 0 && run_inner(st, reads, &sum, &sabs)) {
				/* the whole innermost run is summed: on to its last point */
				int64_t e = st->axis[n - 1].extent - 1;
				ax[n - 1] = e;
				for (int r = 0; r < st->nread; r++)
					for (int d = 0; d < reads[r].ndim; d++)
						reads[r].cur[d] += e * reads[r].coef[d][n - 1];
			} else {
				double p = 1, pa = 1;
				for (int r = 0; r < st->nread; r++) {
					double v, a;
					fetch(&reads[r], ax, &v, &a);
					p *= v;
					pa *= a;
				}
				sum += p;
				sabs += pa;
			}
			/* step the reduction odometer */
			int a;
			for (a = n - 1; a >= ns; a--) {
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
			if (a < ns)
				break;
		}
		if (st->epilogue == TE_EPI_RELU && sum < 0)
			sum = 0;
		out[o] = sum;
		outabs[o] = sabs;
		o++;
		/* step the spatial odometer */
		int a;
		for (a = ns - 1; a >= 0; a--) {
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
		if (a < 0)
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
