/*
 * rfei: the "rfei" row of the cost-model table, AdaTune's surrogate:
 * RFEI_MEMBERS XGBoost regressors (squared error, so that predictions are
 * normalised throughputs), each fit on a bootstrap resample of the rows
 * drawn from the caller's generator, member k seeded with seed + k. The
 * prediction is the members' mean; predict_dist gives the mean and the
 * standard deviation across members, the uncertainty that expected
 * improvement and contextual annealing need.
 *
 * Payload: a line "tunekit-rfei VERSION MEMBERS", then per member a line
 * with its length in bytes and that many bytes of xgboost's serialisation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "features/feature.h"
#include "xgb.h"

#define RFEI_MEMBERS 10
#define RFEI_MAGIC "tunekit-rfei"
#define RFEI_VERSION 1

typedef struct rfei {
	int n;
	xgb_model *m[RFEI_MEMBERS];
} rfei;

static void rfree(void *s)
{
	rfei *r = s;
	if (!r)
		return;
	for (int i = 0; i < r->n; i++)
		xgb_free(r->m[i]);
	free(r);
}

static int rfit(const cm_params *p, const cm_data *tr, const cm_data *va, void **state)
{
	int n = tr->n, d = tr->d, rc = TK_OK;
	tk_rng own, *rng = p->rng;
	rfei *r = calloc(1, sizeof *r);
	float *bx = malloc(sizeof *bx * (size_t)(n > 0 ? n : 1) * (size_t)(d > 0 ? d : 1));
	float *by = malloc(sizeof *by * (size_t)(n > 0 ? n : 1));
	*state = NULL;
	if (!r || !bx || !by) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	if (n < 1) {
		rc = tk_seterr(TK_EINVAL, "rfei: no rows to fit");
		goto done;
	}
	if (!rng) {
		tk_rng_seed(&own, p->seed, 0x72666569 /* "rfei" */);
		rng = &own;
	}
	for (int k = 0; k < RFEI_MEMBERS && !rc; k++) {
		for (int i = 0; i < n; i++) {
			uint32_t j = tk_rng_below(rng, (uint32_t)n);
			memcpy(&bx[(size_t)i * (size_t)d], &tr->x[(size_t)j * (size_t)d], sizeof *bx * (size_t)d);
			by[i] = tr->y[j];
		}
		xgb_params xp;
		xgb_params_set(&xp, "reg:squarederror", p->seed + (uint64_t)k, p->nthread,
		               p->tree_method, p->rounds, p->early_stop);
		xgb_data t = { .n = n, .d = d, .x = bx, .y = by }, v = t;
		if (va)
			v = (xgb_data){ .n = va->n, .d = va->d, .x = va->x, .y = va->y };
		if (!(rc = xgb_train(&xp, &t, xp.early_stop ? &v : NULL, &r->m[r->n])))
			r->n++;
	}
done:
	free(bx);
	free(by);
	if (rc)
		rfree(r);
	else
		*state = r;
	return rc;
}

static int rdist(void *s, const float *x, int n, int d, float *mu, float *sd)
{
	rfei *r = s;
	float *p = malloc(sizeof *p * (size_t)(n > 0 ? n : 1) * (size_t)r->n); /* member k's at p[k*n] */
	int rc;
	if (!p)
		return tk_seterr(TK_ENOMEM, "out of memory");
	rc = xgb_predict_many(r->m, r->n, x, n, d, NULL, p);
	for (int i = 0; !rc && i < n; i++) {
		double s1 = 0, s2 = 0;
		for (int k = 0; k < r->n; k++) {
			double v = p[(size_t)k * (size_t)n + i];
			s1 += v;
			s2 += v * v;
		}
		double mean = s1 / r->n, var = s2 / r->n - mean * mean;
		mu[i] = (float)mean;
		if (sd)
			sd[i] = (float)(var > 0 ? sqrt(var) : 0);
	}
	free(p);
	return rc;
}

static int rpredict(void *s, const float *x, int n, int d, const float *margin, float *out)
{
	if (margin)
		return tk_seterr(TK_EINVAL, "rfei takes no base model");
	return rdist(s, x, n, d, out, NULL);
}

static int rsave(void *s, void **buf, size_t *len)
{
	rfei *r = s;
	void *part[RFEI_MEMBERS] = { 0 };
	size_t plen[RFEI_MEMBERS] = { 0 };
	int rc = TK_OK;
	*buf = NULL;
	*len = 0;
	for (int k = 0; k < r->n && !rc; k++)
		rc = xgb_save(r->m[k], &part[k], &plen[k]);
	size_t total = 64;
	for (int k = 0; k < r->n; k++)
		total += plen[k] + 24;
	char *out = rc ? NULL : malloc(total);
	if (!rc && !out)
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	if (!rc) {
		size_t at = (size_t)snprintf(out, total, "%s %d %d\n", RFEI_MAGIC, RFEI_VERSION, r->n);
		for (int k = 0; k < r->n; k++) {
			at += (size_t)snprintf(out + at, total - at, "%zu\n", plen[k]);
			memcpy(out + at, part[k], plen[k]);
			at += plen[k];
		}
		*buf = out;
		*len = at;
	}
	for (int k = 0; k < r->n; k++)
		free(part[k]);
	return rc;
}

/* A decimal number ending in '\n' at buf[*at..len); -1 if malformed. */
static long long number_line(const char *buf, size_t len, size_t *at)
{
	long long v = 0;
	size_t i = *at;
	if (i >= len || buf[i] < '0' || buf[i] > '9')
		return -1;
	for (; i < len && buf[i] >= '0' && buf[i] <= '9' && v < (1LL << 40); i++)
		v = v * 10 + (buf[i] - '0');
	if (i >= len || buf[i] != '\n')
		return -1;
	*at = i + 1;
	return v;
}

static int rload(const void *data, size_t len, void **state)
{
	const char *buf = data;
	size_t m = strlen(RFEI_MAGIC), at = m + 1;
	rfei *r = calloc(1, sizeof *r);
	long long ver, n;
	int rc = TK_OK;
	*state = NULL;
	if (!r)
		return tk_seterr(TK_ENOMEM, "out of memory");
	if (len < at || memcmp(buf, RFEI_MAGIC " ", at)) {
		rc = tk_seterr(TK_ECORRUPT, "not an rfei payload (no %s line)", RFEI_MAGIC);
		goto done;
	}
	/* "VERSION MEMBERS\n": the version ends in a space */
	ver = 0;
	while (at < len && buf[at] >= '0' && buf[at] <= '9' && ver < 1000)
		ver = ver * 10 + (buf[at++] - '0');
	if (at >= len || buf[at] != ' ' || ver != RFEI_VERSION) {
		rc = tk_seterr(TK_ECORRUPT, "rfei payload: version %lld, this build reads %d", ver,
		               RFEI_VERSION);
		goto done;
	}
	at++;
	n = number_line(buf, len, &at);
	if (n < 1 || n > RFEI_MEMBERS) {
		rc = tk_seterr(TK_ECORRUPT, "rfei payload: bad member count");
		goto done;
	}
	for (int k = 0; k < n && !rc; k++) {
		long long plen = number_line(buf, len, &at);
		if (plen < 0 || (size_t)plen > len - at) {
			rc = tk_seterr(TK_ECORRUPT, "rfei payload: member %d is cut short", k);
			break;
		}
		if (!(rc = xgb_load(buf + at, (size_t)plen, &r->m[r->n])))
			r->n++;
		at += (size_t)plen;
	}
	if (!rc && at != len)
		rc = tk_seterr(TK_ECORRUPT, "rfei payload: %zu bytes after the last member", len - at);
done:
	if (rc)
		rfree(r);
	else
		*state = r;
	return rc;
}

static int rdescribe(void *s, mf_meta *m)
{
	char v[24];
	snprintf(v, sizeof v, "%d", ((rfei *)s)->n);
	int rc = mf_set(m, "objective", "reg:squarederror");
	return rc ? rc : mf_set(m, "members", v);
}

const cm_kind cm_rfei = {
	.name = "rfei",
	.summary = "AdaTune: 10 bagged XGBoost regressors, mean and deviation",
	.features = 1u << FEAT_KNOB | 1u << FEAT_ITERVAR | 1u << FEAT_CURVE,
	.feature = FEAT_ITERVAR,
	.flags = CM_UNCERTAINTY | CM_EI,
	.fit = rfit,
	.predict = rpredict,
	.predict_dist = rdist,
	.save = rsave,
	.load = rload,
	.describe = rdescribe,
	.free = rfree,
};
