/*
 * cache: show and clean the compiled-kernel cache (lib/measure/build.h):
 * where it is, how many kernels it holds, their size against the limit,
 * and removal of the least recently used kernels.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"
#include "measure/build.h"

static const char *const usage[] = {
	"tunekit cache [info] [--cache-dir DIR] [--format table|tsv|json]\n"
	"   or: tunekit cache clean [--all | --max-size SIZE] [--cache-dir DIR]",
	"Show or clean the compiled-kernel cache. 'info' (the default) prints its directory,\n"
	"the kernels it holds, their size, the size limit ($TUNEKIT_CACHE_MAX, default 1G) and\n"
	"the files left behind by killed compiles. 'clean' removes the least recently used\n"
	"kernels until the cache is within its limit (within SIZE with --max-size, empty with\n"
	"--all), and the files of killed compiles; it says what it removed on stderr.",
};

static struct {
	const char *cache_dir, *format, *max_size;
	int all;
} o;

static const opt options[] = {
	{ OPT_STRING, "cache-dir", 0, &o.cache_dir, "DIR", "the cache (default $TUNEKIT_CACHE or ~/.cache/tunekit)" },
	{ OPT_STRING, "format", 'f', &o.format, "FMT", "info: table, tsv or json (default: table on a terminal)" },
	{ OPT_FLAG, "all", 0, &o.all, NULL, "clean: remove every kernel" },
	{ OPT_STRING, "max-size", 0, &o.max_size, "SIZE", "clean: down to SIZE bytes (suffix K, M, G, T)" },
	OPT_END_
};

/* "12.3 MiB" into buf[32]. */
static const char *fmt_bytes(char *buf, int64_t n)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)n;
	int u = 0;
	while (v >= 1024 && u < ArraySize(unit) - 1)
		v /= 1024, u++;
	snprintf(buf, 32, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
	return buf;
}

/* The size limit: $TUNEKIT_CACHE_MAX or the default. */
static int cache_limit(tk_ctx *ctx, int64_t *max)
{
	const char *e = getenv("TUNEKIT_CACHE_MAX");
	*max = BUILD_CACHE_MAX_DEFAULT;
	if (!e || !*e)
		return 0;
	if (build_parse_size(e, max))
		return tk_fail(ctx, TK_EINVAL, "TUNEKIT_CACHE_MAX: %s", tk_errmsg());
	if (*max <= 0)
		return tk_fail(ctx, TK_EINVAL, "TUNEKIT_CACHE_MAX: the limit must be positive");
	return 0;
}

/* Check the directory; *exists = 0 when there is none (nothing to show or
 * clean, and nothing is created). */
static int cache_open(tk_ctx *ctx, const char *dir, int *exists)
{
	struct stat st;
	*exists = 0;
	if (lstat(dir, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return tk_fail(ctx, TK_EIO, "cannot use cache directory %s: %s", dir, strerror(errno));
	}
	int rc = build_cache_prepare(dir);
	if (rc)
		return tk_fail(ctx, rc, NULL);
	*exists = 1;
	return 0;
}

static int cache_info(tk_ctx *ctx, const char *dir, int64_t max, int fmt)
{
	static const char *const header[] = { "directory", "entries", "size", "limit", "stale" };
	build_cache_info info;
	int exists, rc;
	memset(&info, 0, sizeof info);
	if ((rc = cache_open(ctx, dir, &exists)))
		return rc;
	if (exists && (rc = build_cache_stat(dir, &info)))
		return tk_fail(ctx, rc, NULL);
	char ent[24], size[32], limit[32], stale[24];
	snprintf(ent, sizeof ent, "%lld", (long long)info.entries);
	snprintf(stale, sizeof stale, "%lld", (long long)info.stale);
	if (fmt == FMT_TABLE) {
		fmt_bytes(size, info.bytes);
		fmt_bytes(limit, max);
	} else {
		snprintf(size, sizeof size, "%lld", (long long)info.bytes);
		snprintf(limit, sizeof limit, "%lld", (long long)max);
	}
	table *t = table_new(ArraySize(header), header);
	if (!t)
		return tk_fail(ctx, TK_ENOMEM, "out of memory");
	const char *row[] = { dir, ent, size, limit, stale };
	table_row(t, row);
	return table_print(t, stdout, fmt);
}

static int cache_clean(tk_ctx *ctx, const char *dir, int64_t max)
{
	build_cache_info gone, left;
	int exists, rc;
	if (o.all && o.max_size)
		return tk_fail(ctx, TK_EINVAL, "--all and --max-size exclude each other");
	if (o.max_size && build_parse_size(o.max_size, &max))
		return tk_fail(ctx, TK_EINVAL, "--max-size: %s", tk_errmsg());
	if (o.all)
		max = 0;
	if ((rc = cache_open(ctx, dir, &exists)))
		return rc;
	if (!exists) {
		if (!ctx->common.quiet)
			fprintf(stderr, "%s: no cache at %s: nothing to remove\n", ctx->prog, dir);
		return EXIT_OK;
	}
	if ((rc = build_cache_trim(dir, max, &gone)) || (rc = build_cache_stat(dir, &left)))
		return tk_fail(ctx, rc, NULL);
	if (!ctx->common.quiet) {
		char b1[32], b2[32];
		fprintf(stderr, "%s: removed %lld kernels and %lld stale files (%s); %s holds %lld "
		        "kernels (%s)\n", ctx->prog, (long long)gone.entries, (long long)gone.stale,
		        fmt_bytes(b1, gone.bytes), dir, (long long)left.entries,
		        fmt_bytes(b2, left.bytes));
	}
	return EXIT_OK;
}

int cmd_cache(int argc, char **argv, tk_ctx *ctx)
{
	int rc;
	int64_t max;
	if ((rc = opt_parse(ctx, &argc, argv, options, usage)))
		return rc < 0 ? EXIT_OK : rc;
	const char *what = argc > 0 ? argv[0] : "info";
	if (argc > 1)
		return tk_fail(ctx, TK_EINVAL, "unexpected argument '%s'", argv[1]);
	int fmt = out_format(ctx, o.format);
	if (fmt < 0)
		return tk_fail(ctx, TK_EINVAL, "unknown format '%s' (table, tsv, json)", o.format);
	if ((rc = cache_limit(ctx, &max)))
		return rc;
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", o.cache_dir && *o.cache_dir ? o.cache_dir
	                                                            : build_default_cache());
	for (size_t l = strlen(dir); l > 1 && dir[l - 1] == '/';)
		dir[--l] = 0;
	if (!strcmp(what, "info")) {
		if (o.all || o.max_size)
			return tk_fail(ctx, TK_EINVAL, "--all and --max-size are options of clean");
		return cache_info(ctx, dir, max, fmt);
	}
	if (!strcmp(what, "clean")) {
		if (o.format)
			return tk_fail(ctx, TK_EINVAL, "--format is an option of info");
		return cache_clean(ctx, dir, max);
	}
	return tk_fail(ctx, TK_EINVAL, "unknown cache command '%s' (info or clean)", what);
}
