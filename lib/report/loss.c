/*
 * loss: the loss curve of a training run (`tunekit pretrain-meta`): the
 * values its run log holds per epoch of the supervised pre-training and per
 * meta-step of MAML (see train.h, tr_pretrain_meta), for `report curve`.
 */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_tuning.h"

typedef struct loss_fill {
	rp_loss *l;
	int cap, rc;
} loss_fill;

/* Find or append the point (phase, step). */
static rp_loss_pt *point(loss_fill *f, int phase, int step)
{
	rp_loss *l = f->l;
	for (int i = l->n - 1; i >= 0 && l->pt[i].phase == phase; i--)
		if (l->pt[i].step == step)
			return &l->pt[i];
	if (l->n == f->cap) {
		int cap = f->cap ? 2 * f->cap : 256;
		rp_loss_pt *v = realloc(l->pt, sizeof *v * (size_t)cap);
		if (!v)
			return NULL;
		l->pt = v;
		f->cap = cap;
	}
	rp_loss_pt *p = &l->pt[l->n++];
	p->phase = phase;
	p->step = step;
	p->loss = p->before = NAN;
	return p;
}

static int got(void *ctx, int round, const char *key, double value)
{
	loss_fill *f = ctx;
	int phase = !strcmp(key, "pretrain_loss") ? RP_LOSS_PRETRAIN
	          : !strncmp(key, "meta_loss", 9) ? RP_LOSS_MAML : -1;
	if (phase < 0)
		return 0;
	rp_loss_pt *p = point(f, phase, round);
	if (!p)
		return f->rc = tk_seterr(TK_ENOMEM, "out of memory"), 1;
	if (!strcmp(key, "meta_loss_before"))
		p->before = value;
	else
		p->loss = value;
	return 0;
}

static int cmp_pt(const void *a, const void *b)
{
	const rp_loss_pt *x = a, *y = b;
	if (x->phase != y->phase)
		return x->phase - y->phase;
	return (x->step > y->step) - (x->step < y->step);
}

int rp_loss_load(tk_store *s, int64_t run, rp_loss *out)
{
	loss_fill f = { out, 0, TK_OK };
	memset(out, 0, sizeof *out);
	int rc = store_run_log_read(s, run, "", got, &f);
	if (rc == 1)
		rc = f.rc;
	if (rc) {
		rp_loss_free(out);
		return rc;
	}
	qsort(out->pt, (size_t)out->n, sizeof *out->pt, cmp_pt);
	return TK_OK;
}

void rp_loss_free(rp_loss *l)
{
	free(l->pt);
	memset(l, 0, sizeof *l);
}
