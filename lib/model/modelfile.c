/*
 * modelfile: self-describing model files (format in modelfile.h): a magic
 * line, "key value" lines, "payload N", "payload_sha256 HEX", "end", then N
 * payload bytes, checked against HEX before they are returned. The
 * encoder and the strict parser work on memory buffers (the store keeps
 * whole files in its model table); mf_write() and mf_read() add the file:
 * writing goes to a temp file in the destination's directory, synced, then
 * renamed over the destination, so a reader sees the old file or the new
 * one and never half of one.
 */
#include "modelfile.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/sha256.h"
#include "../util/util.h"

#define MF_MAGIC "tunekit-model 1\n"
#define MF_KEYLEN 31
#define MF_VALLEN 639
#define MF_SUMKEY "payload_sha256"

static int key_ok(const char *k, size_t n)
{
	if (n < 1 || n > MF_KEYLEN)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = k[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return 0;
	}
	return 1;
}

static int value_ok(const char *key, const char *val);

static int find_key(const mf_meta *m, const char *key)
{
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->key[i], key))
			return i;
	return -1;
}

int mf_set(mf_meta *m, const char *key, const char *val)
{
	assert(m && key && val);
	if (!key_ok(key, strlen(key)) || !strcmp(key, "payload") || !strcmp(key, MF_SUMKEY) ||
	    !strcmp(key, "end"))
		return tk_seterr(TK_EINVAL, "model file: bad key '%s'", key);
	if (strlen(val) > MF_VALLEN || strchr(val, '\n') || !value_ok(key, val))
		return tk_seterr(TK_EINVAL, "model file: bad value of %s", key);
	int i = find_key(m, key);
	if (i < 0) {
		if (m->n >= MF_MAXKEY)
			return tk_seterr(TK_EINVAL, "model file: more than %d keys", MF_MAXKEY);
		i = m->n++;
		snprintf(m->key[i], sizeof m->key[i], "%s", key);
	}
	snprintf(m->val[i], sizeof m->val[i], "%s", val);
	return TK_OK;
}

const char *mf_get(const mf_meta *m, const char *key)
{
	assert(m && key);
	int i = find_key(m, key);
	return i < 0 ? NULL : m->val[i];
}

int mf_encode(const mf_meta *m, const void *payload, size_t len, void **buf, size_t *buflen)
{
	tk_sb sb;

	assert(m && buf && buflen && (payload || len == 0));
	*buf = NULL;
	*buflen = 0;
	tk_sb_init(&sb);
	tk_sb_puts(&sb, MF_MAGIC);
	for (int i = 0; i < m->n; i++)
		tk_sb_printf(&sb, "%s %s\n", m->key[i], m->val[i]);
	char sum[SHA256_HEX];
	sha256_hex(len ? payload : "", len, sum);
	tk_sb_printf(&sb, "payload %zu\n" MF_SUMKEY " %s\nend\n", len, sum);
	if (len)
		tk_sb_putn(&sb, payload, len);
	if (sb.oom) {
		tk_sb_free(&sb);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	*buflen = sb.n;
	*buf = tk_sb_take(&sb);
	return TK_OK;
}

/* Keys whose values must parse as integers; created, train_*, holdout_*
 * and valid_* must be numbers ("nan" for a metric that had nothing to
 * measure). */
static const char *const int_keys[] = {
	"feature_version", "feature_length", "hardware_id", "n_train", "n_holdout", "n_valid",
	"rounds", "seed",
};

static int value_ok(const char *key, const char *val)
{
	int64_t i;
	double d;
	for (int k = 0; k < ArraySize(int_keys); k++)
		if (!strcmp(key, int_keys[k]))
			return tk_parse_i64(val, &i) == TK_OK;
	if (!strcmp(key, "created") || !strncmp(key, "train_", 6) || !strncmp(key, "holdout_", 8) ||
	    !strncmp(key, "valid_", 6))
		return !strcmp(val, "nan") || tk_parse_f64(val, &d) == TK_OK;
	return 1;
}

/* A strict non-negative decimal size. */
static int parse_size(const char *s, size_t n, size_t *out)
{
	uint64_t v = 0;
	if (n < 1 || n > 19)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > SIZE_MAX)
		return -1;
	*out = (size_t)v;
	return 0;
}

int mf_decode(const void *buf, size_t buflen, mf_meta *m, void **payload, size_t *len)
{
	const char *p = buf, *end = p + buflen;
	size_t want = 0;
	int have_payload = 0, lineno = 1;
	char sum[SHA256_HEX] = "", got[SHA256_HEX];

	assert((buf || buflen == 0) && m && payload && len);
	memset(m, 0, sizeof *m);
	*payload = NULL;
	*len = 0;
	if (buflen < sizeof MF_MAGIC - 1 || memcmp(p, MF_MAGIC, sizeof MF_MAGIC - 1)) {
		if (buflen >= 14 && !memcmp(p, "tunekit-model ", 14))
			return tk_seterr(TK_ECORRUPT, "unsupported model file version");
		return tk_seterr(TK_ECORRUPT, "not a tunekit model file (no 'tunekit-model 1' line)");
	}
	p += sizeof MF_MAGIC - 1;
	for (;;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *sp;
		lineno++;
		if (!nl)
			return tk_seterr(TK_ECORRUPT, "model file: truncated header (no 'end' line)");
		size_t n = (size_t)(nl - p);
		if (n == 3 && !memcmp(p, "end", 3)) {
			p = nl + 1;
			break;
		}
		if (!(sp = memchr(p, ' ', n)) || !key_ok(p, (size_t)(sp - p)))
			return tk_seterr(TK_ECORRUPT, "model file: line %d is not 'key value'", lineno);
		size_t klen = (size_t)(sp - p), vlen = n - klen - 1;
		char key[MF_KEYLEN + 1], val[MF_VALLEN + 1];
		memcpy(key, p, klen);
		key[klen] = 0;
		if (vlen > MF_VALLEN || memchr(sp + 1, 0, vlen))
			return tk_seterr(TK_ECORRUPT, "model file: line %d: bad value of %s", lineno, key);
		memcpy(val, sp + 1, vlen);
		val[vlen] = 0;
		if (!strcmp(key, "payload")) {
			if (have_payload)
				return tk_seterr(TK_ECORRUPT, "model file: duplicate key payload");
			if (parse_size(val, vlen, &want))
				return tk_seterr(TK_ECORRUPT, "model file: bad payload length '%s'", val);
			have_payload = 1;
		} else if (!strcmp(key, MF_SUMKEY)) {
			if (sum[0])
				return tk_seterr(TK_ECORRUPT, "model file: duplicate key " MF_SUMKEY);
			if (vlen != SHA256_HEX - 1 || strspn(val, "0123456789abcdef") != vlen)
				return tk_seterr(TK_ECORRUPT, "model file: bad " MF_SUMKEY " '%.64s'", val);
			memcpy(sum, val, sizeof sum);
		} else {
			if (find_key(m, key) >= 0)
				return tk_seterr(TK_ECORRUPT, "model file: duplicate key %s", key);
			if (m->n >= MF_MAXKEY)
				return tk_seterr(TK_ECORRUPT, "model file: more than %d keys", MF_MAXKEY);
			if (!value_ok(key, val))
				return tk_seterr(TK_ECORRUPT, "model file: bad number '%s' for %s", val, key);
			memcpy(m->key[m->n], key, klen + 1);
			memcpy(m->val[m->n], val, vlen + 1);
			m->n++;
		}
		p = nl + 1;
	}
	if (!have_payload)
		return tk_seterr(TK_ECORRUPT, "model file: no payload key");
	if (!mf_get(m, "kind"))
		return tk_seterr(TK_ECORRUPT, "model file: no kind key");
	if (!sum[0])
		return tk_seterr(TK_ECORRUPT, "model file: no " MF_SUMKEY " key (written by a "
		                 "tunekit without checksums, or damaged): train the model again");
	if ((size_t)(end - p) < want)
		return tk_seterr(TK_ECORRUPT, "model file: truncated payload (%zu of %zu bytes)",
		                 (size_t)(end - p), want);
	if ((size_t)(end - p) > want)
		return tk_seterr(TK_ECORRUPT, "model file: %zu bytes after the payload",
		                 (size_t)(end - p) - want);
	sha256_hex(p, want, got);
	if (strcmp(got, sum))
		return tk_seterr(TK_ECORRUPT, "model file: the payload does not match its checksum "
		                 "(the file is damaged)");
	if (!(*payload = malloc(want ? want : 1)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	memcpy(*payload, p, want);
	*len = want;
	return TK_OK;
}

int mf_write(const char *path, const mf_meta *m, const void *payload, size_t len)
{
	void *buf;
	size_t n;
	int rc, fd;
	char *tmp;

	assert(path && m);
	if ((rc = mf_encode(m, payload, len, &buf, &n)))
		return rc;
	if (tk_is_special(path)) { /* /dev/null, a FIFO, a link: written into */
		rc = tk_write_into(path, buf, n);
		free(buf);
		return rc;
	}
	if (!(tmp = malloc(strlen(path) + 16))) {
		free(buf);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	sprintf(tmp, "%s.tmp.XXXXXX", path);
	if ((fd = mkstemp(tmp)) < 0) {
		rc = tk_seterr(TK_EIO, "%s: cannot create a temporary file: %s", path, strerror(errno));
		goto out;
	}
	if (tk_write_all(fd, buf, n) || fchmod(fd, 0644) || fsync(fd)) {
		rc = tk_seterr(TK_EIO, "%s: %s", tmp, strerror(errno ? errno : EIO));
		close(fd);
		unlink(tmp);
		goto out;
	}
	if (close(fd) || rename(tmp, path)) {
		rc = tk_seterr(TK_EIO, "%s: %s", path, strerror(errno));
		unlink(tmp);
	}
out:
	free(tmp);
	free(buf);
	return rc;
}

int mf_read(const char *path, mf_meta *m, void **payload, size_t *len)
{
	FILE *f;
	struct stat st;
	char *buf;
	int rc;

	assert(path && m && payload && len);
	*payload = NULL;
	*len = 0;
	if (!(f = fopen(path, "rb")))
		return tk_seterr(TK_EIO, "%s: %s", path, strerror(errno));
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		fclose(f);
		return tk_seterr(TK_EIO, "%s: not a regular file", path);
	}
	if (!(buf = malloc((size_t)st.st_size + 1))) {
		fclose(f);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	size_t got = fread(buf, 1, (size_t)st.st_size + 1, f);
	if (ferror(f)) {
		rc = tk_seterr(TK_EIO, "%s: read error", path);
	} else if (got != (size_t)st.st_size) {
		rc = tk_seterr(TK_EIO, "%s: changed while being read", path);
	} else if ((rc = mf_decode(buf, got, m, payload, len))) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", tk_errmsg());
		tk_seterr(rc, "%s: %s", path, msg);
	}
	fclose(f);
	free(buf);
	return rc;
}
