/*
 * util: error messages, arena, string buffer, PCG32, hashing, clocks.
 * See util.h for the contracts.
 */
#include "util.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- errors --------------------------------------------------------- */

static _Thread_local char errbuf[512];

int tk_seterr(int rc, const char *fmt, ...)
{
	/* Formatted apart, then copied: an argument may be tk_errmsg() itself
	 * (a caller adding context to the message it got), which vsnprintf
	 * into errbuf would overwrite while reading it. */
	char msg[sizeof errbuf];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	memcpy(errbuf, msg, sizeof errbuf);
	return rc;
}

const char *tk_errmsg(void)
{
	return errbuf;
}

const char *tk_strerror(int rc)
{
	switch (rc) {
	case TK_OK: return "success";
	case TK_ENOMEM: return "out of memory";
	case TK_EINVAL: return "malformed input";
	case TK_EIO: return "input/output error";
	case TK_ESTORE: return "record store error";
	case TK_ECORRUPT: return "corrupt data";
	case TK_ENOTFOUND: return "not found";
	case TK_EINTR: return "interrupted";
	case TK_EUNSUPP: return "not supported";
	}
	return "unknown error";
}

/* ---- arena ---------------------------------------------------------- */

struct tk_arena_block {
	tk_arena_block *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

void tk_arena_init(tk_arena *a)
{
	a->head = NULL;
}

void *tk_arena_alloc(tk_arena *a, size_t n)
{
	tk_arena_block *b = a->head;
	n = (n + 15) & ~(size_t)15;
	if (!b || b->used + n > b->cap) {
		size_t cap = n > 65536 ? n : 65536;
		b = malloc(sizeof *b + cap);
		if (!b)
			longjmp(a->oom, 1);
		b->next = a->head;
		b->used = 0;
		b->cap = cap;
		a->head = b;
	}
	void *p = b->data + b->used;
	b->used += n;
	memset(p, 0, n);
	return p;
}

char *tk_arena_strdup(tk_arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = tk_arena_alloc(a, n);
	memcpy(p, s, n);
	return p;
}

char *tk_arena_printf(tk_arena *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *p = tk_arena_alloc(a, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void tk_arena_free(tk_arena *a)
{
	tk_arena_block *b = a->head;
	while (b) {
		tk_arena_block *next = b->next;
		free(b);
		b = next;
	}
	a->head = NULL;
}

/* ---- string buffer -------------------------------------------------- */

void tk_sb_init(tk_sb *b)
{
	b->s = NULL;
	b->n = b->cap = 0;
	b->oom = 0;
}

static int sb_grow(tk_sb *b, size_t extra)
{
	if (b->oom)
		return 0;
	if (b->n + extra + 1 <= b->cap)
		return 1;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->n + extra + 1)
		cap *= 2;
	char *s = realloc(b->s, cap);
	if (!s) {
		b->oom = 1;
		return 0;
	}
	b->s = s;
	b->cap = cap;
	return 1;
}

void tk_sb_putn(tk_sb *b, const char *s, size_t n)
{
	if (!sb_grow(b, n))
		return;
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = 0;
}

void tk_sb_putc(tk_sb *b, char c)
{
	tk_sb_putn(b, &c, 1);
}

void tk_sb_puts(tk_sb *b, const char *s)
{
	tk_sb_putn(b, s, strlen(s));
}

void tk_sb_vprintf(tk_sb *b, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0 || !sb_grow(b, (size_t)n))
		return;
	vsnprintf(b->s + b->n, (size_t)n + 1, fmt, ap);
	b->n += (size_t)n;
}

void tk_sb_printf(tk_sb *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tk_sb_vprintf(b, fmt, ap);
	va_end(ap);
}

void tk_sb_indent(tk_sb *b, int depth)
{
	for (int i = 0; i < depth; i++)
		tk_sb_puts(b, "  ");
}

void tk_sb_clear(tk_sb *b)
{
	b->n = 0;
	if (b->s)
		b->s[0] = 0;
}

char *tk_sb_take(tk_sb *b)
{
	char *s = b->s;
	if (b->oom) {
		free(s);
		s = NULL;
	} else if (!s) {
		s = calloc(1, 1);
	}
	tk_sb_init(b);
	return s;
}

void tk_sb_free(tk_sb *b)
{
	free(b->s);
	tk_sb_init(b);
}

/* ---- PCG32 (pcg32_random_r from the minimal C implementation) ------- */

uint32_t tk_rng_u32(tk_rng *r)
{
	uint64_t old = r->state;
	r->state = old * 6364136223846793005ULL + r->inc;
	uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
	uint32_t rot = (uint32_t)(old >> 59u);
	return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
}

void tk_rng_seed(tk_rng *r, uint64_t seed, uint64_t stream)
{
	r->state = 0U;
	r->inc = (stream << 1u) | 1u;
	tk_rng_u32(r);
	r->state += seed;
	tk_rng_u32(r);
}

uint32_t tk_rng_below(tk_rng *r, uint32_t bound)
{
	uint32_t threshold = -bound % bound;
	for (;;) {
		uint32_t x = tk_rng_u32(r);
		if (x >= threshold)
			return x % bound;
	}
}

uint64_t tk_rng_below64(tk_rng *r, uint64_t bound)
{
	if (bound <= UINT32_MAX)
		return tk_rng_below(r, (uint32_t)bound);
	uint64_t threshold = -bound % bound;
	for (;;) {
		uint64_t x = ((uint64_t)tk_rng_u32(r) << 32) | tk_rng_u32(r);
		if (x >= threshold)
			return x % bound;
	}
}

double tk_rng_unif(tk_rng *r)
{
	uint64_t x = ((uint64_t)tk_rng_u32(r) << 21) ^ (tk_rng_u32(r) >> 11);
	return (double)(x & ((1ULL << 53) - 1)) / (double)(1ULL << 53);
}

double tk_rng_normal(tk_rng *r)
{
	double u1 = tk_rng_unif(r), u2 = tk_rng_unif(r);
	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* ---- hashing and time ---------------------------------------------- */

uint64_t tk_hash64(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;
	if (h == 0)
		h = 14695981039346656037ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

double tk_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

double tk_walltime(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int tk_list_has(const char *list, const char *s, size_t n)
{
	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ",");
		if (k == n && !strncmp(p, s, n))
			return 1;
		p += k + (p[k] == ',');
	}
	return 0;
}

int tk_parse_i64(const char *s, int64_t *out)
{
	char *end;
	if (!s || !*s)
		return TK_EINVAL;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end)
		return TK_EINVAL;
	*out = v;
	return TK_OK;
}

/* A run of decimal digits at *pz (at most 9), advancing *pz; -1 if none. */
static int64_t shard_num(const char **pz)
{
	int64_t v = 0;
	int n = 0;
	for (; **pz >= '0' && **pz <= '9'; ++*pz)
		if (++n <= 9)
			v = v * 10 + (**pz - '0');
	return n == 0 || n > 9 ? -1 : v;
}

int tk_shard_parse(const char *s, tk_shard *out)
{
	const char *p = s;
	int64_t i = shard_num(&p), k = -1;
	if (*p == '/') {
		p++;
		k = shard_num(&p);
	}
	if (*p || i < 1 || k < i || k > TK_SHARD_MAX)
		return tk_seterr(TK_EINVAL, "'%s' is not a shard I/K (1 <= I <= K <= %d)", s,
		                 TK_SHARD_MAX);
	out->i = i;
	out->k = k;
	return TK_OK;
}

int tk_shard_has(const tk_shard *sh, int64_t n)
{
	assert(sh->k >= 1 && sh->i >= 1 && sh->i <= sh->k && n >= 0);
	return n % sh->k == sh->i - 1;
}

int tk_parse_f64(const char *s, double *out)
{
	char *end;
	if (!s || !*s)
		return TK_EINVAL;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		return TK_EINVAL;
	*out = v;
	return TK_OK;
}

int tk_write_all(int fd, const void *data, size_t n)
{
	const char *s = data;
	while (n > 0) {
		ssize_t k = write(fd, s, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		s += k;
		n -= (size_t)k;
	}
	return 0;
}

void tk_dirname(char *out, size_t n, const char *path)
{
	snprintf(out, n, "%s", path);
	char *slash = strrchr(out, '/');
	if (!slash)
		snprintf(out, n, ".");
	else
		slash[slash == out] = 0;
}

int tk_is_special(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && !S_ISREG(st.st_mode);
}

int tk_write_into(const char *path, const void *data, size_t n)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return tk_seterr(TK_EIO, "cannot open %s: %s", path, strerror(errno));
	if (tk_write_all(fd, data, n) < 0) {
		int e = errno ? errno : EIO;
		close(fd);
		return tk_seterr(TK_EIO, "cannot write %s: %s", path, strerror(e));
	}
	if (close(fd) < 0)
		return tk_seterr(TK_EIO, "cannot write %s: %s", path, strerror(errno));
	return TK_OK;
}

int tk_write_renamed(const char *tmp, const char *path, const void *data, size_t n, int mode)
{
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
	if (fd < 0)
		return tk_seterr(TK_EIO, "cannot create %s: %s", tmp, strerror(errno));
	if (tk_write_all(fd, data, n) < 0) {
		int e = errno ? errno : EIO;
		close(fd);
		unlink(tmp);
		return tk_seterr(TK_EIO, "cannot write %s: %s", tmp, strerror(e));
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return tk_seterr(TK_EIO, "cannot write %s: %s", path, strerror(e));
	}
	return TK_OK;
}

int tk_sorted_has(const int64_t *a, int64_t n, int64_t x)
{
	int64_t lo = 0, hi = n - 1;
	while (lo <= hi) {
		int64_t mid = lo + (hi - lo) / 2;
		if (a[mid] == x)
			return 1;
		if (a[mid] < x)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return 0;
}

void tk_put_le32(unsigned char *p, uint32_t x)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(x >> (8 * i));
}

uint32_t tk_get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}
