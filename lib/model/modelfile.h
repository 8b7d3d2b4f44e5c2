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
 *     payload_sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
 *     end
 *     <48213 bytes>
 *
 * Keys are 1 to 31 characters of [A-Za-z0-9_.-]; a value is the rest of
 * the line after one space (at most 639 bytes, no newline, may be empty).
 * "payload" and "payload_sha256" (the SHA-256 of the payload bytes, 64
 * lowercase hex digits) are the framing, written by mf_encode() and never
 * part of an mf_meta. Loading checks the magic line, that "kind", "payload"
 * and "payload_sha256" are present, no key repeats, at most MF_MAXKEY keys besides "payload", that
 * the numeric keys tunekit writes parse (integers: payload, feature_version,
 * feature_length, hardware_id, n_train, n_holdout, rounds, seed; numbers:
 * created and every train_* and holdout_* key), and that exactly the
 * announced payload follows "end", with the announced checksum, before
 * any model library sees a byte of it (a damaged payload could crash one:
 * libxgboost's reader trusts what it reads). A file without a checksum,
 * written by a tunekit before it had them, is refused like a damaged one:
 * it cannot be told from one, and a model is trained again from the store
 * that keeps its records. The caller checks that kind, feature
 * kind/version/length and hardware are what it needs.
 */
#ifndef TK_MODELFILE_H
#define TK_MODELFILE_H

#include <stddef.h>

#define MF_MAXKEY 48

typedef struct mf_meta {
	int n;
	char key[MF_MAXKEY][32];
	char val[MF_MAXKEY][640];
} mf_meta;

/* An mf_meta starts zeroed (memset or = { 0 }). */

/* Set (add or replace) a key. TK_EINVAL for a malformed or reserved key
 * ("payload", "payload_sha256"), a value with a newline or too long, or a full meta. */
int mf_set(mf_meta *m, const char *key, const char *val);
/* Value of key or NULL. */
const char *mf_get(const mf_meta *m, const char *key);

/* Write meta and payload to path atomically (a temp file in the same
 * directory, renamed over path). TK_EIO (path unchanged) on failure. A path
 * that is a device, FIFO or link (/dev/null, /dev/stdout) is written
 * into instead, never replaced. */
int mf_write(const char *path, const mf_meta *m, const void *payload, size_t len);
/* Read path. *payload is malloc'd (caller frees). TK_EIO if path cannot be
 * read; TK_ECORRUPT with a message naming the problem for anything not a
 * tunekit model file. On failure *payload is NULL. */
int mf_read(const char *path, mf_meta *m, void **payload, size_t *len);

/* The file contents mf_write() writes, in a malloc'd *buf of *buflen bytes
 * (caller frees), and its parser (as mf_read(), on a buffer: what the
 * store's model table keeps). */
int mf_encode(const mf_meta *m, const void *payload, size_t len, void **buf, size_t *buflen);
int mf_decode(const void *buf, size_t buflen, mf_meta *m, void **payload, size_t *len);

#endif
