/* Model files (train --out, tune --transfer-from ... and the store's model
 * table): the container's parser on any bytes, then, for a file whose
 * payload passed its checksum, the loader of its kind (xgb, rfei, tlp,
 * meta, ml2, ...). The corpus holds real model files; a damaged payload
 * never reaches a loader (libxgboost's reader would crash on one). */
#include "fuzz.h"
#include "model/cost.h"
#include "model/modelfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mf_meta m;
	void *payload = NULL, *again = NULL, *buf = NULL;
	size_t len = 0, len2 = 0, blen = 0;
	memset(&m, 0, sizeof m);
	int rc = mf_decode(data, size, &m, &payload, &len);
	fuzz_check_rc(rc);
	if (rc == TK_OK) {
		/* what parsed encodes back to something that parses the same */
		mf_meta m2;
		memset(&m2, 0, sizeof m2);
		if (mf_encode(&m, payload, len, &buf, &blen) || mf_decode(buf, blen, &m2, &again, &len2) ||
		    len2 != len || m2.n != m.n || (len && memcmp(payload, again, len)))
			abort();
		const cm_kind *k = cm_find(mf_get(&m, "kind"));
		cm_model *model = NULL;
		if (cm_is_model(k)) {
			fuzz_check_rc(cm_load(k, payload, len, &model));
			cm_free(model);
		}
	}
	free(payload);
	free(again);
	free(buf);
	return 0;
}
