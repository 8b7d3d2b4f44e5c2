/*
 * invalid: the share of invalid configurations in each batch of a run
 * (ML2Tuner's measure of how much measuring the validity model spares),
 * from the run's measurements in trial order, as rows and as an SVG chart.
 */
#include <stdio.h>
#include <stdlib.h>

#include "report.h"

int rp_invalid_batches(const rp_run *r, int size, rp_batch **out, int *n)
{
	*out = NULL;
	*n = 0;
	if (size < 1)
		return tk_seterr(TK_EINVAL, "a batch needs at least one trial");
	int nb = (r->nstep + size - 1) / size;
	rp_batch *b = calloc((size_t)(nb > 0 ? nb : 1), sizeof *b);
	if (!b)
		return tk_seterr(TK_ENOMEM, "out of memory");
	for (int i = 0; i < r->nstep; i++) {
		rp_batch *x = &b[i / size];
		x->batch = i / size + 1;
		x->first = x->trials ? x->first : i + 1;
		x->trials++;
		x->invalid += !(r->step[i].latency > 0);
	}
	for (int k = 0; k < nb; k++)
		b[k].share = b[k].trials ? (double)b[k].invalid / b[k].trials : 0;
	*out = b;
	*n = nb;
	return TK_OK;
}

int rp_invalid_svg(tk_sb *sb, const int64_t *aRun, const rp_batch *const *aBatch, const int *aN,
                   int nrun)
{
	rp_series *s = calloc((size_t)(nrun > 0 ? nrun : 1), sizeof *s);
	double **xy = calloc((size_t)(2 * (nrun > 0 ? nrun : 1)), sizeof *xy);
	char (*label)[32] = calloc((size_t)(nrun > 0 ? nrun : 1), sizeof *label);
	int rc = TK_OK;
	if (!s || !xy || !label) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	for (int i = 0; i < nrun && !rc; i++) {
		int n = aN[i];
		xy[2 * i] = malloc(sizeof **xy * (size_t)(n > 0 ? n : 1));
		xy[2 * i + 1] = malloc(sizeof **xy * (size_t)(n > 0 ? n : 1));
		if (!xy[2 * i] || !xy[2 * i + 1]) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			break;
		}
		for (int k = 0; k < n; k++) {
			xy[2 * i][k] = aBatch[i][k].batch;
			xy[2 * i + 1][k] = aBatch[i][k].share;
		}
		snprintf(label[i], sizeof label[i], "run %lld", (long long)aRun[i]);
		s[i] = (rp_series){ label[i], n, xy[2 * i], xy[2 * i + 1], 0, 0 };
	}
	if (!rc) {
		rp_chart c = { "Invalid configurations per batch", "batch", "invalid share", 0, nrun, s };
		rc = rp_svg(sb, &c, 1, RP_SVG_W, RP_SVG_H);
	}
done:
	for (int i = 0; xy && i < 2 * nrun; i++)
		free(xy[i]);
	free(xy);
	free(s);
	free(label);
	return rc;
}
