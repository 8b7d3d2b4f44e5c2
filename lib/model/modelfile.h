/*
 * modelfile: self-describing model files. A file is a text header of
 * "key value" lines, then "end", a newline, and the model's payload bytes:
 *
 *     tunekit-model 1
 *     kind xgb
 *     objective rank:pairwise
 *     feature itervar
 *     feature_version 1
 *     feature_length 266
 *     hardware Intel(R) Xeon(R) ...|avx512|...|threads=1
 *     n_train 1234
 *     created 1795000000
 *     payload 48213
 *     end
 *     <48213 bytes>
 *
 * Loading checks the magic line, that every required key is present and
 * the payload has its announced length; the caller checks that kind,
 * feature kind/version/length and hardware are what it needs.
 */
#ifndef TK_MODELFILE_H
#define TK_MODELFILE_H

#include <stddef.h>

#define MF_MAXKEY 32

typedef struct mf_meta {
	int n;
	char key[MF_MAXKEY][32];
	char val[MF_MAXKEY][640];
} mf_meta;

/* Set (add or replace) a key; values must not contain newlines. */
int mf_set(mf_meta *m, const char *key, const char *val);
/* Value of key or NULL. */
const char *mf_get(const mf_meta *m, const char *key);

/* Write meta and payload to path (atomically: temp file and rename). */
int mf_write(const char *path, const mf_meta *m, const void *payload, size_t len);
/* Read path. *payload is malloc'd (caller frees). TK_ECORRUPT with a
 * message naming the problem for anything not a tunekit model file. */
int mf_read(const char *path, mf_meta *m, void **payload, size_t *len);

#endif
