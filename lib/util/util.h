/*
 * util: the small pieces every tunekit module leans on.
 *
 *   - error codes and a per-thread "last error" message (lib/ never prints:
 *     a failing function sets the message with tk_seterr() and returns a code,
 *     cmd/ prints tk_errmsg() and chooses the exit status);
 *   - an arena allocator for short-lived graphs (loop-nest IR, parsed
 *     expressions) whose out-of-memory path unwinds with longjmp to the
 *     function that owns the arena;
 *   - a growable string buffer that remembers allocation failure;
 *   - the PCG32 random generator (O'Neill, pcg-random.org, "minimal C");
 *   - a 64-bit FNV-1a hash for cache keys;
 *   - wall-clock time.
 */
#ifndef TK_UTIL_H
#define TK_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define ArraySize(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Error codes returned by lib/ functions. 0 is success. */
enum {
	TK_OK = 0,
	TK_ENOMEM,   /* out of memory */
	TK_EINVAL,   /* malformed input: task, config, file contents, option */
	TK_EIO,      /* a file or process could not be read, written or run */
	TK_ESTORE,   /* the record store failed (SQLite error, locked, full) */
	TK_ECORRUPT, /* the record store or a model file is not what it claims */
	TK_ENOTFOUND,/* a named thing (task, run, record, hardware) is absent */
	TK_EINTR,    /* interrupted by a signal; committed work is kept */
	TK_EUNSUPP   /* valid request this build or target cannot serve */
};

/* Set the calling thread's last error message (printf-style) and return rc,
 * so that `return tk_seterr(TK_EINVAL, "...")` reads naturally. An argument
 * may be tk_errmsg() itself: `tk_seterr(rc, "%s: %s", path, tk_errmsg())`. */
int tk_seterr(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The last message set on this thread, or "" if none. Never NULL. */
const char *tk_errmsg(void);
/* A short name for an error code ("malformed input", ...). */
const char *tk_strerror(int rc);

/* ---- arena ---------------------------------------------------------- */
/* Memory handed out by an arena lives until tk_arena_free(). If malloc fails
 * inside tk_arena_alloc(), control longjmps to arena->oom, which the owner
 * must have set with setjmp() before the first allocation:
 *
 *     tk_arena a; tk_arena_init(&a);
 *     if (setjmp(a.oom)) { tk_arena_free(&a); return TK_ENOMEM; }
 */
typedef struct tk_arena_block tk_arena_block;
typedef struct tk_arena {
	tk_arena_block *head;
	jmp_buf oom;
} tk_arena;

void tk_arena_init(tk_arena *a);
void *tk_arena_alloc(tk_arena *a, size_t n);      /* zeroed, 16-byte aligned */
char *tk_arena_strdup(tk_arena *a, const char *s);
char *tk_arena_printf(tk_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tk_arena_free(tk_arena *a);

/* ---- string buffer -------------------------------------------------- */
/* A NUL-terminated growable string. On allocation failure the buffer stops
 * growing and sets `oom`; check it once at the end. The caller owns `s` and
 * frees it with tk_sb_free() (or takes it with tk_sb_take()). */
typedef struct tk_sb {
	char *s;
	size_t n, cap;
	int oom;
} tk_sb;

void tk_sb_init(tk_sb *b);
void tk_sb_putc(tk_sb *b, char c);
void tk_sb_puts(tk_sb *b, const char *s);
void tk_sb_putn(tk_sb *b, const char *s, size_t n);
void tk_sb_printf(tk_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tk_sb_vprintf(tk_sb *b, const char *fmt, va_list ap);
void tk_sb_indent(tk_sb *b, int depth);           /* 2 spaces per level */
void tk_sb_clear(tk_sb *b);
/* Returns the string (caller frees with free()) and resets b; NULL on oom. */
char *tk_sb_take(tk_sb *b);
void tk_sb_free(tk_sb *b);

/* ---- PCG32 ---------------------------------------------------------- */
typedef struct tk_rng {
	uint64_t state, inc;
} tk_rng;

void tk_rng_seed(tk_rng *r, uint64_t seed, uint64_t stream);
uint32_t tk_rng_u32(tk_rng *r);
/* Uniform integer in [0, bound), bound > 0, without modulo bias. */
uint32_t tk_rng_below(tk_rng *r, uint32_t bound);
/* Uniform 64-bit integer in [0, bound), bound > 0. */
uint64_t tk_rng_below64(tk_rng *r, uint64_t bound);
/* Uniform double in [0, 1) with 53 random bits. */
double tk_rng_unif(tk_rng *r);
/* Standard normal deviate (Box-Muller). */
double tk_rng_normal(tk_rng *r);

/* ---- hashing and time ---------------------------------------------- */
uint64_t tk_hash64(const void *p, size_t n, uint64_t h); /* FNV-1a; h=0 starts */
/* x as 4 little-endian bytes at p, and back (file and blob headers). */
void tk_put_le32(unsigned char *p, uint32_t x);
uint32_t tk_get_le32(const unsigned char *p);
double tk_now(void);      /* seconds, CLOCK_MONOTONIC */
double tk_walltime(void); /* seconds since the epoch, CLOCK_REALTIME */

/* ---- small parsing helpers (strict: whole string must parse) -------- */
/* 1 if x is in the ascending array a[0..n), by binary search. */
int tk_sorted_has(const int64_t *a, int64_t n, int64_t x);
/* 1 if the comma-separated list has the item s[0..n) ("a,b" has "b"). */
int tk_list_has(const char *list, const char *s, size_t n);
int tk_parse_i64(const char *s, int64_t *out);  /* TK_OK or TK_EINVAL */
int tk_parse_f64(const char *s, double *out);   /* TK_OK or TK_EINVAL */

/* ---- shards of a job ------------------------------------------------ */
/* Share i (1-based) of k of a job's items: item n (0-based, in the job's
 * own order) belongs to it when n mod k = i - 1, so k processes given 1/k
 * to k/k cover every item exactly once. */
typedef struct tk_shard {
	int64_t i, k;
} tk_shard;
#define TK_SHARD_MAX 1000000
/* Parse "I/K", decimal digits only, 1 <= I <= K <= TK_SHARD_MAX. TK_OK, or
 * TK_EINVAL with the message "'TEXT' is not a shard I/K (1 <= I <= K)";
 * *out is set only on success. */
int tk_shard_parse(const char *s, tk_shard *out);
/* 1 if item n (0-based) belongs to shard sh, else 0. */
int tk_shard_has(const tk_shard *sh, int64_t n);

/* Write n bytes to a fresh file at tmp (which must not exist, and is not
 * followed if it is a link) with permissions mode (less the umask) and
 * rename it to path, so readers see the whole file or none of it. TK_EIO
 * with the reason; tmp is removed on failure. */
int tk_write_renamed(const char *tmp, const char *path, const void *data, size_t n, int mode);
/* Write n bytes of data to fd, retrying short writes and EINTR: 0, or -1
 * with errno. */
int tk_write_all(int fd, const void *data, size_t n);
/* The directory of path into out (n bytes): "." for a bare name, "/" for
 * a name at the root. */
void tk_dirname(char *out, size_t n, const char *path);
/* 1 if path exists and is not a regular file: a device, FIFO, directory
 * or symbolic link (/dev/null, /dev/stdout), which an output is written
 * into (tk_write_into), never renamed over. */
int tk_is_special(const char *path);
/* Write data into the existing file path (links followed, truncated if a
 * regular file): TK_EIO with the reason. */
int tk_write_into(const char *path, const void *data, size_t n);

#endif
