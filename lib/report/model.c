/*
 * model: the cost models of the store's model table for `tunekit report
 * model`: each model's kind, hardware and creation time, and the holdout
 * and validation metrics and rounds `tunekit train` writes into its meta
 * text as "key value" lines
 * (the schema's "key=value" spelling is accepted too). Contracts are in
 * report.h.
 */
#include "report.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_models.h"

const char *const rp_model_keys[RP_MODEL_NKEY] = {
	"n_train", "feature", "objective", "holdout_rmse", "holdout_mse", "holdout_mse_d",
	"holdout_top1", "holdout_top5", "holdout_spearman", "rounds", "n_valid",
	"valid_top1", "valid_top5",
};

void rp_model_meta_parse(char *buf, const char **aVal)
{
	for (int k = 0; k < RP_MODEL_NKEY; k++)
		aVal[k] = NULL;
	char *line = buf;
	while (line && *line) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		while (*line == ' ' || *line == '\t')
			line++;
		size_t klen = strcspn(line, " \t=");
		char *val = line + klen;
		if (*val) {
			*val++ = 0;
			val += strspn(val, " \t=");
			size_t vlen = strlen(val);
			while (vlen && (val[vlen - 1] == ' ' || val[vlen - 1] == '\t' ||
			                val[vlen - 1] == '\r'))
				val[--vlen] = 0;
			for (int k = 0; k < RP_MODEL_NKEY; k++)
				if (!strcmp(line, rp_model_keys[k]) && *val)
					aVal[k] = val;
		}
		line = next;
	}
}

/* rp_models' callback state: the caller's callback, and whether copying a
 * meta text ran out of memory. */
typedef struct models_ctx {
	rp_model_cb cb;
	void *ctx;
	int oom;
} models_ctx;

static int models_row(void *p, const store_model *sm)
{
	models_ctx *x = p;
	rp_model m;
	char *buf = strdup(sm->meta);
	int stop;
	if (!buf) {
		x->oom = 1;
		return TK_ENOMEM;
	}
	m.id = sm->id;
	m.kind = sm->kind;
	m.hardware_id = sm->hardware_id;
	m.created = sm->created;
	rp_model_meta_parse(buf, m.val);
	stop = x->cb(x->ctx, &m);
	free(buf);
	return stop;
}

int rp_models(tk_store *s, rp_model_cb cb, void *ctx)
{
	models_ctx x = { cb, ctx, 0 };
	int rc;

	assert(s && cb);
	rc = store_models(s, models_row, &x);
	if (x.oom)
		rc = tk_seterr(TK_ENOMEM, "out of memory");
	return rc;
}
