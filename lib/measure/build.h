/*
 * build: compile generated kernels into shared objects, in parallel, with a
 * cache keyed by a hash of the source, the flags and the compiler version.
 *
 * The cache is private to the user and bounded. Its directory must be a real
 * directory (not a symbolic link) owned by the user and writable by no one
 * else; it is created with mode 0700 and a group- or world-readable one is
 * made private. Each object has a sidecar holding its SHA-256, written by
 * tunekit; an object is served from the cache only if it is a regular file
 * owned by the user, writable by no one else, and its content has the
 * sidecar's hash. Anything else in its place (a planted or modified file, a
 * link) is removed and the kernel compiled again. The least recently used
 * entries are removed when the cache grows past its size limit. The cache
 * can be deleted at any time.
 *
 * A build that fails or exceeds its time limit is reported in the job, not
 * as an error of the call.
 */
#ifndef TK_BUILD_H
#define TK_BUILD_H

#include <stdint.h>

#include "base/target.h"
#include "util/sha256.h"

enum {
	BUILD_OK = 0,
	BUILD_ERROR = 1,   /* the compiler exited non-zero */
	BUILD_TIMEOUT = 2  /* killed after the time limit (fixed or adaptive: see msg) */
};

#define BUILD_CACHE_MAX_DEFAULT (INT64_C(1) << 30) /* 1 GiB */

typedef struct build_job {
	const char *src;     /* in: C source (owned by the caller) */
	char so[4096];       /* out: path of the shared object when status == BUILD_OK */
	int fd;              /* out: when status == BUILD_OK, a read-only descriptor of
	                        the object checked against sha256, else -1; the caller
	                        closes it (build_jobs_close) */
	char sha256[SHA256_HEX]; /* out: the object's SHA-256 when status == BUILD_OK */
	int status;          /* out: BUILD_* */
	char msg[512];       /* out: first lines of compiler output on failure */
	double seconds;      /* out: compile wall time, 0 when cached */
	int cached;          /* out: 1 if served from the cache */
	int refused;         /* out: 1 if the cache held an object for this kernel that
	                        failed its checks (removed, and the kernel rebuilt) */
	char report[4096];   /* out: with build_opts.reports and status BUILD_OK, the
	                        stem of the compiler's reports, STEM.su (-fstack-usage)
	                        and STEM.vec (-fopt-info-vec-all), in-flight files of
	                        the cache that build_jobs_close removes; else "" */
} build_job;

typedef struct build_opts {
	const char *cache_dir; /* NULL: build_default_cache() */
	int64_t cache_max;     /* size limit in bytes; <= 0: BUILD_CACHE_MAX_DEFAULT */
	int njobs;             /* compilers running at once, >= 1 */
	double timeout_s;      /* limit of one compilation, > 0 */
	double adapt;          /* > 0: also stop a compilation that takes more than adapt
	                          times the median of the batch's finished compilations
	                          (once half of them, and at least 3, have finished), and
	                          at least adapt_floor_s; 0: only timeout_s */
	double adapt_floor_s;
	int reports;           /* BUILD_REPORTS_*: which compiles also write the
	                          compiler's reports (build_job.report) */
} build_opts;

/* build_opts.reports. The reports come from -fstack-usage, -dumpdir,
 * -dumpbase and -fopt-info-vec-all=FILE, flags that write side files and
 * leave the code alone: the object is the one the target's flags make
 * (byte for byte with gcc; tests/t0115 checks it), cached under the same
 * key, so a kernel compiled for its reports is not compiled again when
 * measured. */
enum {
	BUILD_REPORTS_NONE = 0, /* plain builds */
	BUILD_REPORTS_NEW = 1,  /* the kernels compiled write reports; those served
	                           from the cache have none */
	BUILD_REPORTS_ALL = 2   /* every kernel is compiled with its reports, also one
	                           the cache holds (a cached object has no reports):
	                           its object replaces the cached one, the same bytes */
};

/* The default cache directory: $TUNEKIT_CACHE, else $XDG_CACHE_HOME/tunekit,
 * else $HOME/.cache/tunekit, else .cache/tunekit in the home directory of
 * the user's password entry, else /tmp/tunekit-cache-<uid> (which is refused,
 * not used, if another user made it). Relative values of XDG_CACHE_HOME and
 * HOME are ignored. Returns a static string. */
const char *build_default_cache(void);

/* Create dir if needed (missing parents too, mode 0700) and check that it
 * is private to the user: a directory, not a symbolic link, owned by the
 * effective user, not writable by group or others, in a parent that others
 * cannot rename it in (not writable by others, or sticky). A private-enough
 * directory that others may read or search is made 0700. Returns TK_OK, or
 * TK_EIO with the reason, which names the directory as `what` ("cache
 * directory"). */
int build_private_dir(const char *dir, const char *what);

/* build_private_dir(dir, "cache directory"): check dir is fit to be the
 * cache. */
int build_cache_prepare(const char *dir);

/* Build n jobs with at most o->njobs compilers running at once. Prepares the
 * cache directory (build_cache_prepare) and afterwards keeps the cache under
 * its size limit. Returns TK_OK when every job has a status (even
 * BUILD_ERROR), TK_EIO if the cache directory cannot be used or processes
 * cannot be started (then no job holds a descriptor). Signals do not
 * interrupt it: the caller checks for them between batches. */
int build_run(const tk_target *t, const build_opts *o, build_job *jobs, int n);

/* Close the descriptors build_run left in jobs[0..n) (fd >= 0) and set them
 * to -1; remove the jobs' reports (build_opts.reports) and clear their
 * names. */
void build_jobs_close(build_job *jobs, int n);

/* Reference outputs, cached beside the kernels (in the private
 * subdirectory ref/ of the cache) so that no run computes a task's
 * reference twice for the same inputs. An entry is one file, checked by
 * the SHA-256 of its content when read. They are not kernels: the cache's
 * limit, trim and statistics leave them out (one per task and seed).
 *
 * build_ref_prepare: build_cache_prepare(dir), then the same checks of its
 * subdirectory ref/ (created if missing); TK_OK or TK_EIO. The other
 * functions need it done.
 * build_ref_key: the entry's key (BUILD_KEYLEN hex digits) of the task
 * with this canonical key and inputs in[0..nin), of in_n[i] floats each.
 * build_ref_load: fill ref[n] and refabs[n] from the entry; *found = 1 if
 * it was there and intact, else 0 (a damaged entry is removed). Returns
 * TK_OK: a missing or unreadable entry is only a miss.
 * build_ref_store: write the entry (atomically, by rename); TK_OK, TK_EIO,
 * TK_ENOMEM. */
int build_ref_prepare(const char *dir);
void build_ref_key(const char *task, int nin, const float *const *in, const size_t *in_n,
                   char key[SHA256_HEX]);
int build_ref_load(const char *dir, const char *key, size_t n, double *ref, double *refabs,
                   int *found);
int build_ref_store(const char *dir, const char *key, size_t n, const double *ref,
                    const double *refabs);

/* What the cache holds. An entry is one kernel: its object, sidecar and
 * source. */
typedef struct build_cache_info {
	int64_t entries;     /* kernels */
	int64_t files;       /* files of tunekit's in the directory */
	int64_t bytes;       /* their total size */
	int64_t stale;       /* files left behind by killed builds (older than 10 min) */
	double oldest, newest; /* last use of the least and most recently used entry,
	                          Unix seconds; 0 when there is none */
} build_cache_info;

/* Describe the cache in dir (which must exist and pass build_cache_prepare's
 * checks). TK_OK, TK_EIO (with the reason), TK_ENOMEM. */
int build_cache_stat(const char *dir, build_cache_info *out);

/* Remove the least recently used entries of the cache in dir until it holds
 * at most max_bytes (0: remove every entry), and the files of killed builds.
 * Files that are not tunekit's are left alone. *removed (may be NULL)
 * receives what was removed. TK_OK, TK_EIO, TK_ENOMEM. */
int build_cache_trim(const char *dir, int64_t max_bytes, build_cache_info *removed);

/* Parse a size: a non-negative integer with an optional suffix K, M, G or T
 * (powers of 1024, case ignored, an optional trailing "B" or "iB"). TK_OK, or
 * TK_EINVAL with the message set. */
int build_parse_size(const char *s, int64_t *out);

#endif
