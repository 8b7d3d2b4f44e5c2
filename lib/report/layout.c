/*
 * layout: the choice between the layout variants of a network (tune,
 * report best and export with --layout auto): each variant's estimate on
 * one hardware, the sum over its tasks of weight x best median as
 * store_best ranks the records (what report best shows), and the variant
 * whose estimate is the smallest.
 */
#include "report.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

typedef struct est {
	const tk_network *net;
	int64_t hw;
	double *aLat;        /* [net->n] best median, 0 if none */
} est;

static int got_best(void *p, const store_rec *r)
{
	est *E = p;
	if (r->hardware_id != E->hw)
		return 0;
	for (int i = 0; i < E->net->n; i++)
		if (!strcmp(E->net->task[i].task, r->task))
			E->aLat[i] = r->median;
	return 0;
}

int rp_net_estimate(tk_store *st, int64_t hw, const tk_network *net, rp_estimate *out)
{
	assert(st && hw > 0 && net && out);
	est E = { net, hw, calloc((size_t)net->n + 1, sizeof(double)) };
	memset(out, 0, sizeof *out);
	out->ntask = net->n;
	if (!E.aLat)
		return tk_seterr(TK_ENOMEM, "out of memory");
	int rc = store_best(st, hw, got_best, &E);
	for (int i = 0; !rc && i < net->n; i++)
		if (E.aLat[i] > 0) {
			out->latency += net->task[i].weight * E.aLat[i];
			out->ntuned++;
		}
	free(E.aLat);
	return rc;
}

int rp_layout_choose(const rp_estimate *e, int n)
{
	assert(e && n >= 1);
	int best = -1;
	for (int i = 0; i < n; i++) {
		if (e[i].ntuned < e[i].ntask)
			continue;
		if (best < 0 || e[i].latency < e[best].latency)
			best = i;
	}
	return best;
}
