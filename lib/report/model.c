/*
 * model: the cost models of the store's model table for `tunekit report
 * model`: each model's kind, hardware and creation time, and the holdout
 * metrics `tunekit train` writes into its meta text as "key value" lines
 * (the schema's "key=value" spelling is accepted too). Contracts are in
 * report.h.
 */
#include "report.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

const char *const rp_model_keys[RP_MODEL_NKEY] = {
	"n_train", "feature", "objective", "holdout_rmse", "holdout_mse", "holdout_mse_d",
	"holdout_top1", "holdout_top5", "holdout_spearman",
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

int rp_models(tk_store *s, rp_model_cb cb, void *ctx)
{
	sqlite3 *db = store_db(s);
	sqlite3_stmt *st;
	int rc, stop = 0;

	assert(s && cb);
	if (sqlite3_prepare_v2(db, "SELECT id, kind, hardware_id, created, meta FROM model"
	                           " ORDER BY id", -1, &st, NULL))
		return tk_seterr(TK_ESTORE, "record store: %s", sqlite3_errmsg(db));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		rp_model m;
		const char *meta = (const char *)sqlite3_column_text(st, 4);
		char *buf = strdup(meta ? meta : "");
		if (!buf) {
			sqlite3_finalize(st);
			return tk_seterr(TK_ENOMEM, "out of memory");
		}
		m.id = sqlite3_column_int64(st, 0);
		m.kind = (const char *)sqlite3_column_text(st, 1);
		m.hardware_id = sqlite3_column_type(st, 2) == SQLITE_NULL ? 0
		              : sqlite3_column_int64(st, 2);
		m.created = sqlite3_column_double(st, 3);
		rp_model_meta_parse(buf, m.val);
		stop = cb(ctx, &m);
		free(buf);
		if (stop)
			break;
	}
	if (stop)
		rc = stop;
	else if (rc == SQLITE_DONE)
		rc = TK_OK;
	else
		rc = tk_seterr(TK_ESTORE, "record store: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return rc;
}
