/*
 * record: measurements become records. A session is one run on one
 * hardware target: it registers the hardware and the run, stores each batch
 * of results (configs, measurements, repeat times) in one transaction, and
 * closes the run. The record-stream reader parses what one tunekit stage
 * writes on stdout for the next: TSV with a header line whose columns are
 * found by name (id, task, config, ...), or bare TASK<TAB>CONFIG lines.
 */
#ifndef TK_RECORD_H
#define TK_RECORD_H

#include <stdint.h>
#include <stdio.h>

#include "measure/measure.h"
#include "store/store.h"

typedef struct rec_session {
	tk_store *store;   /* borrowed */
	int64_t run_id, hw_id;
	int trial;         /* trial number of the next record */
} rec_session;

/* The hardware row of a target (strings point into t): kind "cpu", or
 * "simulated" for a simulated accelerator (no compiler, no threads). */
void rec_target_hw(const tk_target *t, store_hw *hw);
/* Register hardware hw and begin a run. replay is the dataset path of a
 * replayed run, or NULL. */
int rec_begin(rec_session *s, tk_store *st, const store_hw *hw, const char *argv,
              const char *method, int64_t seed, const char *replay);
/* Continue run run_id (reopened): trial numbers go on after its records. */
int rec_resume(rec_session *s, tk_store *st, int64_t run_id);
/* The store id of task p (created if new). */
int rec_task(rec_session *s, const te_prog *p, int64_t *task_id);
/* Store n results of task_id in one transaction; ids (may be NULL) receive
 * the measurement ids. On failure nothing of the batch is stored. */
int rec_batch(rec_session *s, int64_t task_id, const ms_result *r, int n, int64_t *ids);
/* Mark the run as ended. */
int rec_end(rec_session *s);

/* ---- record streams ------------------------------------------------------ */

#define REC_MAXCOL 64

typedef struct rec_stream {
	FILE *f;
	const char *name;   /* for messages ("stdin") */
	int lineno;
	char *line;
	size_t cap;
	int started;
	int header;         /* the first line was a header */
	int ncol;           /* its columns: no row may have fewer */
	int c_id, c_task, c_config; /* column numbers, -1 if absent */
	int nfield;
	char *field[REC_MAXCOL];
} rec_stream;

void rec_stream_init(rec_stream *r, FILE *f, const char *name);
/* Next record: 1 with task and config (NULL if the stream has no such
 * column) and *id (-1 if absent) valid until the next call; 0 at the end;
 * TK_EINVAL (negative) with "NAME:LINE: reason" on a malformed line: a row
 * with fewer columns than the header is one. Lines without a header must
 * be TASK<TAB>CONFIG; blank and '#' lines are skipped. */
int rec_stream_next(rec_stream *r, const char **task, const char **config, int64_t *id);
void rec_stream_free(rec_stream *r);

#endif
