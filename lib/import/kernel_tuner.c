/*
 * kernel_tuner: import of Kernel Tuner cache files (see kernel_tuner.h for
 * what becomes what). The file is read through zlib (gzip or plain) into
 * jansson in one piece, checked, turned into a custom space, and its cache
 * entries are stored in one transaction with the store's prepared
 * statements, so the 17956 entries of a GEMM file take well under a second.
 */
#include "kernel_tuner.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <zlib.h>

#include "space/space.h"
#include "store/store_import.h"

/* ---- errors ------------------------------------------------------------- */

/* Set the error message to "PREFIX: <the current message>" and return rc
 * (tk_seterr cannot read the message it overwrites). */
static int err_prefix(int rc, const char *prefix)
{
	char msg[512];
	snprintf(msg, sizeof msg, "%s", tk_errmsg());
	return tk_seterr(rc, "%s: %s", prefix, msg);
}

/* ---- reading ------------------------------------------------------------- */

typedef struct gz_src {
	gzFile gz;
	int failed;
} gz_src;

static size_t gz_read_cb(void *buf, size_t n, void *data)
{
	gz_src *g = data;
	int got = gzread(g->gz, buf, (unsigned)(n > INT_MAX ? INT_MAX : n));
	if (got < 0) {
		g->failed = 1;
		return (size_t)-1;
	}
	return (size_t)got;
}

/* Parse the (possibly gzip-compressed) JSON file at path into *out.
 * TK_EIO when it cannot be opened or read, TK_EINVAL when it is not JSON
 * (message with line and column) or a damaged gzip stream. */
static int load_json(const char *path, json_t **out)
{
	json_error_t err;
	gz_src g = { NULL, 0 };
	int fd, errnum, rc = TK_OK;

	*out = NULL;
	if (!strcmp(path, "-")) {
		if ((fd = dup(STDIN_FILENO)) < 0)
			return tk_seterr(TK_EIO, "stdin: %s", strerror(errno));
	} else if ((fd = open(path, O_RDONLY)) < 0)
		return tk_seterr(TK_EIO, "%s: %s", path, strerror(errno));
	if (!(g.gz = gzdopen(fd, "rb"))) {
		close(fd);
		return tk_seterr(TK_ENOMEM, "%s: out of memory", path);
	}
	gzbuffer(g.gz, 1 << 17);
	*out = json_load_callback(gz_read_cb, &g, 0, &err);
	if (g.failed) {
		const char *msg = gzerror(g.gz, &errnum);
		rc = errnum == Z_ERRNO ? tk_seterr(TK_EIO, "%s: %s", path, strerror(errno))
		                       : tk_seterr(TK_EINVAL, "%s: damaged gzip data: %s", path, msg);
	} else if (!*out) {
		rc = tk_seterr(TK_EINVAL, "%s:%d:%d: not a Kernel Tuner cache file: %s", path,
		               err.line, err.column, err.text);
	}
	gzclose(g.gz);
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

/* ---- the file's header ---------------------------------------------------- */

/* What the import needs from the top level of a cache file. */
typedef struct kt_file {
	const char *path;
	json_t *root, *cache;
	const char *kernel, *device;
	int nknob;
	const char *name[SP_MAXKNOB];
	json_t *values[SP_MAXKNOB];  /* tune_params[name[k]] */
	sp_space *space;
	char *space_json;            /* sp_space_to_json(space) */
} kt_file;

/* Python's str() of an integer-valued size, else the JSON text. */
static void size_text(tk_sb *sb, const json_t *v)
{
	if (json_is_integer(v)) {
		tk_sb_printf(sb, "%lld", (long long)json_integer_value(v));
	} else if (json_is_string(v)) {
		tk_sb_puts(sb, json_string_value(v));
	} else {
		char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		tk_sb_puts(sb, t ? t : "?");
		free(t);
	}
}

/* Check the header of kf->root, fill kf and build the space. */
static int read_header(kt_file *kf)
{
	json_t *root = kf->root, *keys, *params, *v, *knobs = NULL, *spec = NULL;
	char *text = NULL;
	size_t i;
	int rc;

	if (!json_is_object(root))
		return tk_seterr(TK_EINVAL, "%s: not a Kernel Tuner cache file (not a JSON object)",
		                 kf->path);
	kf->kernel = json_string_value(json_object_get(root, "kernel_name"));
	kf->device = json_string_value(json_object_get(root, "device_name"));
	keys = json_object_get(root, "tune_params_keys");
	params = json_object_get(root, "tune_params");
	kf->cache = json_object_get(root, "cache");
	if (!kf->kernel || !*kf->kernel || !json_is_array(keys) || !json_is_object(params) ||
	    !json_is_object(kf->cache))
		return tk_seterr(TK_EINVAL, "%s: not a Kernel Tuner cache file (needs kernel_name,"
		                 " tune_params_keys, tune_params and cache)", kf->path);
	if (json_array_size(keys) < 1 || json_array_size(keys) > SP_MAXKNOB)
		return tk_seterr(TK_EINVAL, "%s: %zu tunable parameters (1 to %d supported)",
		                 kf->path, json_array_size(keys), SP_MAXKNOB);
	kf->nknob = (int)json_array_size(keys);
	spec = json_object();
	knobs = json_array();
	if (!spec || !knobs || json_object_set(spec, "knobs", knobs)) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	json_array_foreach(keys, i, v) {
		json_t *vals, *k;
		kf->name[i] = json_string_value(v);
		vals = kf->name[i] ? json_object_get(params, kf->name[i]) : NULL;
		if (!json_is_array(vals)) {
			rc = tk_seterr(TK_EINVAL, "%s: tune_params_keys[%zu] is not a parameter with"
			               " a list of values in tune_params", kf->path, i);
			goto done;
		}
		kf->values[i] = vals;
		k = json_pack("{s:s, s:O}", "name", kf->name[i], "values", vals);
		if (!k || json_array_append_new(knobs, k)) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			goto done;
		}
	}
	if (!(text = json_dumps(spec, JSON_COMPACT))) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = sp_space_from_json(text, &kf->space))) {
		char prefix[300];
		snprintf(prefix, sizeof prefix, "%.250s: tune_params", kf->path);
		rc = err_prefix(rc, prefix);
		goto done;
	}
	if (!(kf->space_json = sp_space_to_json(kf->space)))
		rc = tk_seterr(TK_ENOMEM, "out of memory");
done:
	free(text);
	json_decref(knobs);
	json_decref(spec);
	return rc;
}

/* ---- entries ----------------------------------------------------------------- */

/* The configuration of cache entry (key, e): the key's comma-separated
 * labels when it splits into one per parameter, else the entry's own
 * parameter values compared with tune_params. On failure *why says what did
 * not match and -1 is returned. */
static int entry_config(const kt_file *kf, const char *key, json_t *e, sp_config *c,
                        char *why, size_t nwhy)
{
	const sp_space *sp = kf->space;
	char buf[1024];
	int k = 0;

	memset(c, 0, sizeof *c);
	if (strlen(key) < sizeof buf) {
		char *p = strcpy(buf, key), *part;
		for (k = 0; k < sp->nknob && p; k++) {
			const sp_knob *kn = &sp->knob[k];
			int v;
			part = p;
			if ((p = strchr(p, ',')))
				*p++ = 0;
			for (v = 0; v < kn->n && strcmp(kn->label[v], part); v++)
				;
			if (v == kn->n)
				break;
			c->v[k] = v;
		}
		if (k == sp->nknob && !p)
			return 0;
	}
	for (k = 0; k < sp->nknob; k++) {
		json_t *val = json_object_get(e, kf->name[k]);
		size_t v, n = json_array_size(kf->values[k]);
		for (v = 0; val && v < n && !json_equal(val, json_array_get(kf->values[k], v)); v++)
			;
		if (!val || v == n) {
			char *t = val ? json_dumps(val, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
			snprintf(why, nwhy, "configuration not in tune_params: %s=%.60s", kf->name[k],
			         val ? (t ? t : "?") : "(absent)");
			free(t);
			return -1;
		}
		c->v[k] = (int)v;
	}
	return 0;
}

/* Seconds since the epoch of a timestamp "2023-12-22 09:54:05.502007+00:00"
 * (or with 'T', 'Z', no fraction, no zone = UTC); 0 if it does not parse. */
static double parse_timestamp(const char *z)
{
	struct tm tm;
	int y, mo, d, h, mi, n = 0, zh, zm;
	double sec, off = 0;
	char sign;

	if (!z || sscanf(z, "%4d-%2d-%2d%*1[ T]%2d:%2d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &n) < 6 ||
	    n == 0)
		return 0;
	z += n;
	if (*z == 'Z')
		z++;
	else if ((*z == '+' || *z == '-') && sscanf(z, "%c%2d:%2d%n", &sign, &zh, &zm, &n) == 3) {
		off = (sign == '-' ? -1 : 1) * (zh * 3600.0 + zm * 60.0);
		z += n;
	}
	if (*z || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || !(sec < 61))
		return 0;
	memset(&tm, 0, sizeof tm);
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	return (double)timegm(&tm) + sec - off;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Mean, sample standard deviation and median of t[0..n), as the harness
 * computes them (lib/measure/run.c). sorted has room for n values. */
static void stats(const double *t, int n, double *sorted, double *mean, double *std,
                  double *median)
{
	double s = 0, ss = 0;
	for (int i = 0; i < n; i++)
		s += t[i];
	*mean = s / n;
	for (int i = 0; i < n; i++)
		ss += (t[i] - *mean) * (t[i] - *mean);
	*std = n > 1 ? sqrt(ss / (n - 1)) : 0;
	memcpy(sorted, t, sizeof *t * (size_t)n);
	qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
	*median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

/* The measurement of entry e into *m (times into the growable *buf, twice
 * the repeats long). TK_ENOMEM only. */
static int entry_meas(json_t *e, double now, store_meas *m, double **buf, size_t *cap)
{
	json_t *t = json_object_get(e, "time"), *times = json_object_get(e, "times");
	json_t *ct = json_object_get(e, "compile_time");
	double at = parse_timestamp(json_string_value(json_object_get(e, "timestamp")));

	m->number = 1;
	m->nrepeat = 0;
	m->times = NULL;
	m->compile_s = json_is_number(ct) && json_number_value(ct) >= 0
	                       ? json_number_value(ct) / 1e3 : 0;
	m->at = at > 0 ? at : now;
	if (json_is_string(t)) {
		const char *z = json_string_value(t);
		m->valid = 0;
		m->error = !strcmp(z, "CompilationFailedConfig") ? MEAS_COMPILE_ERROR
		         : !strcmp(z, "RuntimeFailedConfig") ? MEAS_RUNTIME_CRASH : MEAS_UNKNOWN;
		m->message = z;
		return TK_OK;
	}
	if (!json_is_number(t) || !(json_number_value(t) > 0) || !isfinite(json_number_value(t))) {
		m->valid = 0;
		m->error = MEAS_UNKNOWN;
		m->message = t ? "time is not a positive number" : "entry has no time";
		return TK_OK;
	}
	m->valid = 1;
	m->error = MEAS_OK;
	m->message = NULL;
	m->mean = m->median = json_number_value(t) / 1e3;
	m->std = 0;
	size_t n = json_array_size(times), i;
	json_t *x;
	if (n < 1 || n > 1000000)
		return TK_OK;
	json_array_foreach(times, i, x)
		if (!json_is_number(x) || !(json_number_value(x) > 0))
			return TK_OK; /* keep the mean alone */
	if (2 * n > *cap) {
		double *b = realloc(*buf, sizeof *b * 2 * n);
		if (!b)
			return tk_seterr(TK_ENOMEM, "out of memory");
		*buf = b;
		*cap = 2 * n;
	}
	json_array_foreach(times, i, x)
		(*buf)[i] = json_number_value(x) / 1e3;
	m->times = *buf;
	m->nrepeat = (int)n;
	stats(*buf, (int)n, *buf + n, &m->mean, &m->std, &m->median);
	return TK_OK;
}

/* ---- FLOPs ----------------------------------------------------------------- */

/* The task's FLOPs. With GFLOP/s in the entries: GFLOP/s * 1e9 * time, the
 * median over the valid entries (Kernel Tuner computes GFLOP/s from the
 * same time, so every entry gives nearly the same count). Without, from the
 * problem size for the kernels of benchmark_hub:
 *   Xgemm (CLBlast), problem_size [M, N] or [M, N, K]: 2*M*N*K + 2*M*K,
 *     the count of benchmark_hub's GEMM script (the multiply-adds plus the
 *     alpha/beta scaling) which its GFLOP/s values reproduce exactly; with
 *     two sizes K = M (its matrices are square);
 *   convolution_kernel, problem_size [W, H]: 2*W*H*FH*FW with the filter
 *     size from the single-valued parameters filter_height and filter_width.
 * Anything else: 0 (reports then show latency only). */
static int task_flops(const kt_file *kf, double *out)
{
	json_t *ps = json_object_get(kf->root, "problem_size"), *e;
	const char *key;
	double *f = malloc(sizeof *f * (json_object_size(kf->cache) + 1));
	size_t n = 0;

	*out = 0;
	if (!f)
		return tk_seterr(TK_ENOMEM, "out of memory");
	json_object_foreach(kf->cache, key, e) {
		json_t *t = json_object_get(e, "time"), *g = json_object_get(e, "GFLOP/s");
		if (json_is_number(t) && json_is_number(g) && json_number_value(t) > 0 &&
		    json_number_value(g) > 0)
			f[n++] = json_number_value(g) * 1e9 * json_number_value(t) / 1e3;
	}
	if (n > 0) {
		qsort(f, n, sizeof *f, cmp_double);
		*out = n % 2 ? f[n / 2] : (f[n / 2 - 1] + f[n / 2]) / 2;
		free(f);
		return TK_OK;
	}
	free(f);

	double d[3] = { 0, 0, 0 };
	size_t nd = json_array_size(ps), i;
	json_t *x;
	if (nd < 2 || nd > 3)
		return TK_OK;
	json_array_foreach(ps, i, x) {
		if (!json_is_integer(x) || json_integer_value(x) <= 0)
			return TK_OK;
		d[i] = (double)json_integer_value(x);
	}
	if (!strcmp(kf->kernel, "Xgemm")) {
		double k = nd == 3 ? d[2] : d[0];
		*out = 2 * d[0] * d[1] * k + 2 * d[0] * k;
	} else if (!strcmp(kf->kernel, "convolution_kernel") && nd == 2) {
		double fs[2] = { 0, 0 };
		const char *fname[2] = { "filter_height", "filter_width" };
		for (int k = 0; k < kf->nknob; k++)
			for (int j = 0; j < 2; j++)
				if (!strcmp(kf->name[k], fname[j]) && json_array_size(kf->values[k]) == 1 &&
				    json_is_integer(json_array_get(kf->values[k], 0)))
					fs[j] = (double)json_integer_value(json_array_get(kf->values[k], 0));
		*out = 2 * d[0] * d[1] * fs[0] * fs[1];
	}
	return TK_OK;
}

/* ---- the import -------------------------------------------------------------- */


/* Keep entry (key, e), number line, as a foreign record. */
static int add_foreign(tk_store *s, const kt_file *kf, const char *key, json_t *e, int64_t line,
                       const char *why, int64_t run_id, kt_stats *st)
{
	json_t *o = json_object();
	char *text = NULL;
	int added, rc;
	if (!o || json_object_set(o, key, e) || !(text = json_dumps(o, JSON_COMPACT))) {
		json_decref(o);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	json_decref(o);
	rc = store_foreign_add(s, "kernel-tuner", kf->path, line, why, text, run_id, &added);
	free(text);
	if (rc == TK_OK) {
		if (added)
			st->foreign++;
		else
			st->duplicates++;
	}
	return rc;
}

/* Store every entry (inside the caller's transaction). */
static int import_entries(tk_store *s, const kt_file *kf, const char *hw_name,
                          const char *argv, kt_stats *st)
{
	int64_t hw_id, task_id, run_id, *seen = NULL, nseen = 0, line = 0;
	double *buf = NULL, now = tk_walltime(), flops;
	size_t cap = 0;
	char *old = NULL, why[200];
	const char *key;
	json_t *e;
	tk_sb text;
	int rc;

	tk_sb_init(&text);
	store_hw hw = { .key = st->hardware, .kind = "imported", .cpu = hw_name };
	if ((rc = task_flops(kf, &flops)) || (rc = store_hardware_get(s, &hw, &hw_id)) ||
	    (rc = store_task_get(s, st->task, "kernel-tuner", flops, &task_id)) ||
	    (rc = store_task_space_get(s, task_id, &old)))
		goto done;
	st->flops = flops;
	if (!old)
		rc = store_task_space_set(s, task_id, kf->space_json);
	else if (strcmp(old, kf->space_json))
		rc = tk_seterr(TK_EINVAL, "%s: task %s is in the store with different tune_params",
		               kf->path, st->task);
	if (rc || (rc = store_imported_configs(s, hw_id, &seen, &nseen)))
		goto done;
	store_run run = { .argv = argv, .method = "import/kernel-tuner", .hardware_id = hw_id };
	if ((rc = store_run_begin(s, &run, &run_id)))
		goto done;

	json_object_foreach(kf->cache, key, e) {
		sp_config c;
		int64_t cid, mid;
		line++;
		if (!json_is_object(e)) {
			rc = add_foreign(s, kf, key, e, line, "cache entry is not an object", run_id, st);
		} else if (entry_config(kf, key, e, &c, why, sizeof why)) {
			rc = add_foreign(s, kf, key, e, line, why, run_id, st);
		} else {
			tk_sb_clear(&text);
			sp_format(&text, kf->space, &c);
			if (text.oom) {
				rc = tk_seterr(TK_ENOMEM, "out of memory");
				break;
			}
			if ((rc = store_config_get(s, task_id, (int64_t)sp_index(kf->space, &c), text.s,
			                           "", &cid)))
				break;
			if (tk_sorted_has(seen, nseen, cid)) {
				st->duplicates++;
				continue;
			}
			store_meas m = { .config_id = cid, .hardware_id = hw_id, .run_id = run_id,
			                 .trial = (int)st->records };
			if ((rc = entry_meas(e, now, &m, &buf, &cap)) || (rc = store_meas_add(s, &m, &mid)))
				break;
			st->records++;
			st->invalid += !m.valid;
		}
		if (rc)
			break;
	}
	st->entries = line;
	if (!rc)
		rc = store_run_end(s, run_id);
done:
	tk_sb_free(&text);
	free(seen);
	free(buf);
	free(old);
	return rc;
}

int kt_import(tk_store *s, const char *path, const char *hardware, const char *argv,
              kt_stats *out)
{
	kt_file kf;
	kt_stats st;
	tk_sb sb;
	int rc;

	assert(s && path && argv);
	memset(&kf, 0, sizeof kf);
	memset(&st, 0, sizeof st);
	if (out)
		memset(out, 0, sizeof *out);
	kf.path = path;
	tk_sb_init(&sb);
	if ((rc = load_json(path, &kf.root)) || (rc = read_header(&kf)))
		goto done;
	if (hardware && !*hardware) {
		rc = tk_seterr(TK_EINVAL, "the hardware name is empty");
		goto done;
	}
	if (!hardware) {
		if (!kf.device || !*kf.device) {
			rc = tk_seterr(TK_EINVAL, "%s: device_name is empty: give --hardware NAME", path);
			goto done;
		}
		hardware = kf.device;
	}
	tk_sb_printf(&sb, "kt:%s:", kf.kernel);
	json_t *ps = json_object_get(kf.root, "problem_size"), *x;
	size_t i;
	if (json_is_array(ps))
		json_array_foreach(ps, i, x) {
			if (i)
				tk_sb_putc(&sb, 'x');
			size_text(&sb, x);
		}
	else if (ps)
		size_text(&sb, ps);
	if (sb.oom || !sb.s) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	if (strlen(sb.s) >= sizeof st.task || strlen(hardware) + 3 >= sizeof st.hardware) {
		rc = tk_seterr(TK_EINVAL, "%s: kernel name, problem size or device name too long",
		               path);
		goto done;
	}
	snprintf(st.task, sizeof st.task, "%s", sb.s);
	snprintf(st.hardware, sizeof st.hardware, "kt:%s", hardware);
	st.space_size = kf.space->size;

	if ((rc = store_begin(s)))
		goto done;
	rc = import_entries(s, &kf, hardware, argv, &st);
	if (rc == TK_OK && (st.records > 0 || st.foreign > 0))
		rc = store_commit(s);
	else {
		/* an error, or nothing new: leave the store as it was */
		char why[512];
		snprintf(why, sizeof why, "%s", tk_errmsg());
		store_rollback(s);
		if (rc)
			tk_seterr(rc, "%s", why);
	}
done:
	if (rc == TK_OK && out)
		*out = st;
	tk_sb_free(&sb);
	free(kf.space_json);
	sp_space_free(kf.space);
	json_decref(kf.root);
	return rc;
}
