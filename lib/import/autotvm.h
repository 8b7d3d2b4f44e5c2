/*
 * autotvm: AutoTVM's JSON-lines log format (version 0.2), both ways.
 *
 * One line per measurement:
 *   {"input": [TARGET, TASK_NAME, ARGS, KWARGS],
 *    "config": {"index": N, "code_hash": null, "entity": [[KNOB, TYPE, VALUE], ...]},
 *    "result": [[COSTS...], ERROR_NO, ALL_COST, TIMESTAMP],
 *    "version": 0.2, "tvm_version": "..."}
 * tunekit writes its own templates as TASK_NAME "tunekit.OP" with ARGS the
 * task parameters, and knobs as entities ("sp" splits [-1, f1, f2], "ot"
 * others), so its exports import back exactly. Records of templates it does
 * not know are kept in foreign_record with the reason.
 */
#ifndef TK_AUTOTVM_H
#define TK_AUTOTVM_H

#include <stdint.h>
#include <stdio.h>

#include "store/store.h"

typedef struct autotvm_stats {
	int64_t lines, records, duplicates, foreign, malformed;
} autotvm_stats;

/* Import log file path ("-": standard input, named "stdin" in
 * messages) into the store (one run, method import/autotvm).
 * Malformed lines are counted and kept as foreign records with the reason;
 * the call fails (TK_EINVAL, "FILE:LINE: reason") only if the file is not
 * an AutoTVM log at all. Importing the same file twice adds nothing. */
int autotvm_import(tk_store *s, const char *path, const char *argv, autotvm_stats *st);

/* Write the records of hardware_id (0: all) for the tasks in task_keys
 * (NULL: all tasks with a template) to f as AutoTVM log lines; best_only
 * writes only the best valid record per task. *nout receives the count. */
int autotvm_export(tk_store *s, FILE *f, int64_t hardware_id, const char *const *task_keys,
                   int ntask, int best_only, int64_t *nout);

#endif
