/*
 * check: store queries of the regression gate (see store_check.h): which
 * hardware a store holds measurements of, and the repeats of every valid
 * measurement of a configuration, which the gate resamples.
 */
#include "store_check.h"

#include <assert.h>
#include <stdlib.h>

#include "store_int.h"
#include "util/util.h"

int store_check_hardware(tk_store *s, store_hwinfo_cb cb, void *ctx)
{
	sqlite3_stmt *st;
	int rc, src;

	assert(s && cb);
	rc = store_prepare(s,
		"SELECT h.id, h.key, count(*) FROM hardware h"
		" JOIN measurement m ON m.hardware_id = h.id"
		" WHERE m.valid AND m.median IS NOT NULL"
		" GROUP BY h.id ORDER BY h.id", &st);
	if (rc)
		return rc;
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		store_hwinfo h;
		h.id = sqlite3_column_int64(st, 0);
		h.key = (const char *)sqlite3_column_text(st, 1);
		h.nvalid = sqlite3_column_int64(st, 2);
		if ((rc = cb(ctx, &h)))
			break;
	}
	return store_finalize(s, st, src, rc);
}

int store_check_samples(tk_store *s, int64_t config_id, int64_t hardware_id,
                        store_sample_cb cb, void *ctx)
{
	sqlite3_stmt *st;
	int rc, src;

	assert(s && cb && config_id > 0 && hardware_id > 0);
	rc = store_prepare(s,
		"SELECT m.id, m.median, m.at, instr(char(10) || coalesce(r.params, '') || char(10),"
		" char(10) || 'cpu_clock=1' || char(10)) > 0"
		" FROM measurement m LEFT JOIN run r ON r.id = m.run_id"
		" WHERE m.config_id = ?1 AND m.hardware_id = ?2 AND m.valid AND m.median IS NOT NULL"
		" ORDER BY m.id", &st);
	if (rc)
		return rc;
	sqlite3_bind_int64(st, 1, config_id);
	sqlite3_bind_int64(st, 2, hardware_id);
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		store_sample m;
		double *aTime = NULL;
		m.id = sqlite3_column_int64(st, 0);
		m.median = sqlite3_column_double(st, 1);
		m.at = sqlite3_column_double(st, 2);
		m.cpu_clock = sqlite3_column_int(st, 3);
		if ((rc = store_meas_times(s, m.id, &aTime, &m.ntimes)))
			break;
		m.times = aTime;
		rc = cb(ctx, &m);
		free(aTime);
		if (rc)
			break;
	}
	return store_finalize(s, st, src, rc);
}
