/*
 * build: compile generated kernels into shared objects, in parallel, with a
 * cache keyed by a hash of the source, the flags and the compiler version.
 *
 * The cache directory holds <hash>.so files (and nothing else that matters);
 * it can be deleted at any time. A build that fails or exceeds its time limit
 * is reported in the job, not as an error of the call.
 */
#ifndef TK_BUILD_H
#define TK_BUILD_H

#include "target.h"

enum {
	BUILD_OK = 0,
	BUILD_ERROR = 1,   /* the compiler exited non-zero */
	BUILD_TIMEOUT = 2  /* killed after the time limit */
};

typedef struct build_job {
	const char *src;     /* in: C source (owned by the caller) */
	char so[4096];       /* out: path of the shared object when status == BUILD_OK */
	int status;          /* out: BUILD_* */
	char msg[512];       /* out: first lines of compiler output on failure */
	double seconds;      /* out: compile wall time, 0 when cached */
	int cached;          /* out: 1 if served from the cache */
} build_job;

/* The default cache directory: $TUNEKIT_CACHE, else $XDG_CACHE_HOME/tunekit,
 * else $HOME/.cache/tunekit, else /tmp/tunekit-cache-<uid>. Returns a static
 * string. */
const char *build_default_cache(void);

/* Build n jobs with at most njobs compilers running at once, each limited to
 * timeout_s seconds. Creates cache_dir if needed. Returns TK_OK when every job
 * has a status (even BUILD_ERROR), TK_EIO if the cache directory cannot be
 * created or processes cannot be started. Signals do not interrupt it: the
 * caller checks for them between batches. */
int build_run(const tk_target *t, const char *cache_dir, build_job *jobs, int n,
              int njobs, double timeout_s);

#endif
