/*
 * autotvm: AutoTVM log files (JSON lines, log version 0.2) in and out of the
 * store (see autotvm.h for the format). tunekit's own template tasks travel
 * as task name "tunekit.OP" with the task parameters as ARGS
 * ([["k", 512], ["m", 512], ["n", 512]], in the canonical order of the task
 * key), split knobs as ["tile_i", "sp", [-1, MIDDLE, INNER]] (AutoTVM's
 * SplitEntity: -1 for the outer factor, which follows from the extent) and
 * the other knobs as [NAME, "ot", VALUE] (the label string, or the number
 * for unlabelled knobs). The hardware key rides in the target string as
 * "llvm -keys=cpu -model=tunekit:KEY" with KEY percent-encoded (every byte
 * outside [A-Za-z0-9._~:+-] as %XX), which TVM's target parser accepts
 * (model is a string attribute of every target kind). The result is
 * [[COSTS...], ERROR_NO, ALL_COST, TIMESTAMP]: the repeat times (or the
 * median when no times are kept) for valid records, [1e9] for invalid ones
 * as AutoTVM writes them, compile time plus the costs, and when. tunekit
 * writes "tvm_version": "0.9.0", the TVM release whose log format it
 * follows. Lines of other templates, other targets' records and malformed
 * lines become foreign records.
 */
#include "autotvm.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "schedule/sched.h"
#include "space/space.h"
#include "store/store_import.h"
#include "task/te.h"

#define AT_PREFIX "tunekit."
#define AT_LOG_VERSION 0.2 /* the "version" of the records read and written */
#define AT_MODEL "-model=tunekit:"
#define AT_TARGET "llvm -keys=cpu " AT_MODEL
#define AT_TVM_VERSION "0.9.0"

/* Set the error message to "PREFIX: <the current message>" and return rc
 * (tk_seterr cannot read the message it overwrites). */
static int err_prefix(int rc, const char *prefix)
{
	char msg[512];
	snprintf(msg, sizeof msg, "%s", tk_errmsg());
	return tk_seterr(rc, "%s: %s", prefix, msg);
}

/* ---- hardware keys in target strings ----------------------------------------- */

static int plain_byte(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       strchr("._~:+-", c) != NULL;
}

static void pct_encode(tk_sb *sb, const char *z)
{
	for (; *z; z++) {
		if (plain_byte((unsigned char)*z))
			tk_sb_putc(sb, *z);
		else
			tk_sb_printf(sb, "%%%02X", (unsigned char)*z);
	}
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
	     : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The hardware key of target string tgt: tunekit's own from its -model
 * attribute, else "autotvm:TARGET" (trailing blanks dropped). */
static void target_hw_key(tk_sb *sb, const char *tgt)
{
	const char *p = strstr(tgt, " " AT_MODEL);
	size_t n;
	if (p) {
		tk_sb sb2;
		int ok = 1;
		tk_sb_init(&sb2);
		for (p += strlen(" " AT_MODEL); *p && *p != ' ' && ok; p++) {
			if (*p != '%') {
				tk_sb_putc(&sb2, *p);
			} else if (hexval(p[1]) >= 0 && hexval(p[2]) >= 0 &&
			           (hexval(p[1]) || hexval(p[2]))) {
				tk_sb_putc(&sb2, (char)(hexval(p[1]) * 16 + hexval(p[2])));
				p += 2;
			} else {
				ok = 0;
			}
		}
		if (ok && sb2.s && *sb2.s) {
			tk_sb_puts(sb, sb2.s);
			tk_sb_free(&sb2);
			return;
		}
		tk_sb_free(&sb2);
	}
	n = strlen(tgt);
	while (n > 0 && (tgt[n - 1] == ' ' || tgt[n - 1] == '\t'))
		n--;
	tk_sb_puts(sb, "autotvm:");
	tk_sb_putn(sb, tgt, n);
}

/* ---- import ---------------------------------------------------------------------- */

typedef struct at_task {
	char *name;        /* "op:k=v,..." as built from the line */
	te_prog *prog;     /* canonical key in prog->key */
	sp_space *space;
	int64_t id;        /* store id, 0 until first stored */
} at_task;

typedef struct at_hw {
	char *key;
	int64_t id;
	int64_t *seen, nseen; /* configurations an earlier import measured here */
} at_hw;

typedef struct at_import {
	tk_store *s;
	const char *path;
	int64_t run_id;
	double now;
	autotvm_stats *st;
	at_task *task;
	int ntask;
	at_hw *hw;
	int nhw;
} at_import;

static void import_free(at_import *im)
{
	for (int i = 0; i < im->ntask; i++) {
		free(im->task[i].name);
		sp_space_free(im->task[i].space);
		te_prog_free(im->task[i].prog);
	}
	for (int i = 0; i < im->nhw; i++) {
		free(im->hw[i].key);
		free(im->hw[i].seen);
	}
	free(im->task);
	free(im->hw);
}

/* The task and space of "tunekit.OP" with args, parsed once per name. On a
 * task that does not parse, TK_EINVAL with the reason. */
static int get_task(at_import *im, const char *op, json_t *args, at_task **out)
{
	tk_sb sb;
	json_t *a;
	size_t i;
	int rc = TK_OK;

	if (!json_is_array(args))
		return tk_seterr(TK_EINVAL, "args is not a list of [name, value]");
	tk_sb_init(&sb);
	tk_sb_printf(&sb, "%s:", op);
	json_array_foreach(args, i, a) {
		const char *name = json_string_value(json_array_get(a, 0));
		json_t *v = json_array_get(a, 1);
		if (json_array_size(a) != 2 || !name || !json_is_integer(v)) {
			tk_sb_free(&sb);
			return tk_seterr(TK_EINVAL, "args[%zu] is not [name, integer]", i);
		}
		tk_sb_printf(&sb, "%s%s=%lld", i ? "," : "", name, (long long)json_integer_value(v));
	}
	if (sb.oom || !sb.s) {
		tk_sb_free(&sb);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	for (int t = 0; t < im->ntask; t++)
		if (!strcmp(im->task[t].name, sb.s)) {
			*out = &im->task[t];
			tk_sb_free(&sb);
			return TK_OK;
		}
	at_task *nt = realloc(im->task, sizeof *nt * (size_t)(im->ntask + 1)), *t;
	if (!nt) {
		tk_sb_free(&sb);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	im->task = nt;
	t = &im->task[im->ntask];
	memset(t, 0, sizeof *t);
	if ((rc = te_task_parse(sb.s, &t->prog)) || (rc = sp_space_create(t->prog, &t->space))) {
		te_prog_free(t->prog);
		tk_sb_free(&sb);
		return rc;
	}
	t->name = tk_sb_take(&sb);
	if (!t->name) {
		sp_space_free(t->space);
		te_prog_free(t->prog);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	im->ntask++;
	*out = t;
	return TK_OK;
}

/* The hardware of target string tgt, registered on first sight together
 * with the configurations earlier imports measured on it. */
static int get_hw(at_import *im, const char *tgt, at_hw **out)
{
	tk_sb key;
	int rc;

	tk_sb_init(&key);
	target_hw_key(&key, tgt);
	if (key.oom || !key.s) {
		tk_sb_free(&key);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	for (int i = 0; i < im->nhw; i++)
		if (!strcmp(im->hw[i].key, key.s)) {
			*out = &im->hw[i];
			tk_sb_free(&key);
			return TK_OK;
		}
	at_hw *nh = realloc(im->hw, sizeof *nh * (size_t)(im->nhw + 1)), *h;
	if (!nh) {
		tk_sb_free(&key);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	im->hw = nh;
	h = &im->hw[im->nhw];
	memset(h, 0, sizeof *h);
	h->key = tk_sb_take(&key);
	if (!h->key)
		return tk_seterr(TK_ENOMEM, "out of memory");

	/* tunekit's keys are cpu|isa|compiler|opt|threads=N: fill the row */
	char buf[700], *f[5] = { NULL };
	int nf = 0, threads = 0;
	store_hw hw = { .key = h->key, .kind = "imported" };
	snprintf(buf, sizeof buf, "%s", h->key);
	for (char *p = buf; p && nf < 5; nf++) {
		f[nf] = p;
		if ((p = strchr(p, '|')))
			*p++ = 0;
	}
	if (nf == 5 && !strchr(f[4], '|') && sscanf(f[4], "threads=%d", &threads) == 1 &&
	    strncmp(h->key, "autotvm:", 8)) {
		hw.cpu = f[0];
		hw.isa = f[1];
		hw.cc = f[2];
		hw.threads = threads;
	}
	if ((rc = store_hardware_get(im->s, &hw, &h->id)) ||
	    (rc = store_imported_configs(im->s, h->id, &h->seen, &h->nseen))) {
		free(h->key);
		return rc;
	}
	im->nhw++;
	*out = h;
	return TK_OK;
}

/* Configuration text of AutoTVM entities on space sp into sb (knob=value;
 * ..., to be checked by sp_parse). TK_EINVAL with the reason. */
static int entity_text(const sp_space *sp, json_t *entity, tk_sb *sb)
{
	json_t *e;
	size_t i;

	if (!json_is_array(entity))
		return tk_seterr(TK_EINVAL, "config has no entity list");
	json_array_foreach(entity, i, e) {
		const char *name = json_string_value(json_array_get(e, 0));
		const char *type = json_string_value(json_array_get(e, 1));
		json_t *v = json_array_get(e, 2);
		int k = name ? sp_knob_find(sp, name) : -1;
		if (json_array_size(e) != 3 || !name || !type)
			return tk_seterr(TK_EINVAL, "entity %zu is not [name, type, value]", i);
		if (k < 0)
			return tk_seterr(TK_EINVAL, "unknown knob '%s'", name);
		tk_sb_printf(sb, "%s%s=", i ? ";" : "", name);
		if (!strcmp(type, "sp")) {
			const sp_knob *kn = &sp->knob[k];
			int64_t f[SP_MAXLEVEL], prod = 1;
			if (kn->kind != KNOB_SPLIT || json_array_size(v) != (size_t)kn->nlevel)
				return tk_seterr(TK_EINVAL, "knob '%s' is not a %zu-way split", name,
				                 json_array_size(v));
			for (int l = 0; l < kn->nlevel; l++) {
				json_t *x = json_array_get(v, (size_t)l);
				f[l] = json_is_integer(x) ? json_integer_value(x) : 0;
				if (f[l] == 0 || f[l] < -1 || (l > 0 && f[l] < 1) || f[l] > kn->extent)
					return tk_seterr(TK_EINVAL, "bad split factors for '%s'", name);
				if (l > 0)
					prod *= f[l];
			}
			if (f[0] == -1)
				f[0] = (kn->extent + prod - 1) / prod;
			for (int l = 0; l < kn->nlevel; l++)
				tk_sb_printf(sb, "%s%lld", l ? "x" : "", (long long)f[l]);
		} else if (!strcmp(type, "ot")) {
			if (json_is_string(v))
				tk_sb_puts(sb, json_string_value(v));
			else if (json_is_integer(v))
				tk_sb_printf(sb, "%lld", (long long)json_integer_value(v));
			else if (json_is_boolean(v))
				tk_sb_puts(sb, json_is_true(v) ? "1" : "0");
			else
				return tk_seterr(TK_EINVAL, "value of '%s' is not a string or integer", name);
		} else {
			return tk_seterr(TK_EINVAL, "entity type '%s' of '%s' is not supported", type,
			                 name);
		}
	}
	return sb->oom ? tk_seterr(TK_ENOMEM, "out of memory") : TK_OK;
}

/* Keep a line as a foreign record. */
static int keep_foreign(at_import *im, const char *line, int64_t lineno, const char *reason)
{
	int added, rc = store_foreign_add(im->s, "autotvm", im->path, lineno, reason, line,
	                                  im->run_id, &added);
	if (rc == TK_OK) {
		if (added)
			im->st->foreign++;
		else
			im->st->duplicates++;
	}
	return rc;
}

/* The shape of an AutoTVM 0.2 record, or the reason it is not one. */
typedef struct at_rec {
	const char *target, *name;
	json_t *args, *entity, *costs;
	int64_t error_no;
	double all_cost, timestamp;
} at_rec;

static const char *rec_shape(json_t *root, at_rec *r)
{
	json_t *in = json_object_get(root, "input"), *cfg = json_object_get(root, "config");
	json_t *res = json_object_get(root, "result");
	if (!json_is_object(root))
		return "not a JSON object";
	if (!json_is_array(in) || json_array_size(in) < 3)
		return "no \"input\" [target, task, args, kwargs]";
	r->target = json_string_value(json_array_get(in, 0));
	r->name = json_string_value(json_array_get(in, 1));
	r->args = json_array_get(in, 2);
	if (!r->target || !r->name)
		return "\"input\" lacks the target or task name";
	r->entity = json_object_get(cfg, "entity");
	if (!json_is_object(cfg) || !json_is_array(r->entity))
		return "no \"config\" with an \"entity\" list";
	if (!json_is_array(res) || json_array_size(res) != 4 ||
	    !json_is_array(json_array_get(res, 0)) || !json_is_integer(json_array_get(res, 1)) ||
	    !json_is_number(json_array_get(res, 2)) || !json_is_number(json_array_get(res, 3)))
		return "no \"result\" [costs, error_no, all_cost, timestamp]";
	r->costs = json_array_get(res, 0);
	r->error_no = json_integer_value(json_array_get(res, 1));
	r->all_cost = json_number_value(json_array_get(res, 2));
	r->timestamp = json_number_value(json_array_get(res, 3));
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}


/* Store a record of a tunekit template. TK_EINVAL (the reason) when it
 * cannot be interpreted; the caller keeps the line as foreign then. */
static int import_own(at_import *im, const at_rec *r)
{
	at_task *t = NULL;
	at_hw *h = NULL;
	sp_config c;
	sc_sched sched;
	tk_sb text, sb;
	double *times = NULL, sum = 0;
	int n = 0, rc;
	int64_t cid, mid;

	if ((rc = get_task(im, r->name + strlen(AT_PREFIX), r->args, &t)))
		return err_prefix(rc == TK_ENOMEM ? rc : TK_EINVAL, r->name);
	if (r->error_no < 0 || r->error_no > MEAS_AUTOTVM_LAST)
		return tk_seterr(TK_EINVAL, "error_no %lld is not a MeasureErrorNo",
		                 (long long)r->error_no);
	if (r->error_no == MEAS_OK) {
		size_t i, nc = json_array_size(r->costs);
		json_t *x;
		if (nc < 1 || nc > 1000000)
			return tk_seterr(TK_EINVAL, "a valid record without costs");
		json_array_foreach(r->costs, i, x)
			if (!json_is_number(x) || !(json_number_value(x) > 0) ||
			    !isfinite(json_number_value(x)))
				return tk_seterr(TK_EINVAL, "cost %zu is not a positive number", i);
		n = (int)nc;
	}
	tk_sb_init(&text);
	tk_sb_init(&sb);
	if ((rc = entity_text(t->space, r->entity, &text)) ||
	    (rc = sp_parse(t->space, text.s ? text.s : "", &c))) {
		rc = err_prefix(rc, t->prog->key);
		goto done;
	}
	tk_sb_clear(&text);
	sp_format(&text, t->space, &c);
	if (sc_from_config(t->space, &c, &sched) || sc_print(&sb, t->prog, &sched))
		tk_sb_clear(&sb); /* no schedule: stored empty, as measure does */
	if (text.oom || sb.oom) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = get_hw(im, r->target, &h)))
		goto done;
	if (!t->id &&
	    (rc = store_task_get(im->s, t->prog->key, t->prog->op, t->prog->flops, &t->id)))
		goto done;
	if ((rc = store_config_get(im->s, t->id, (int64_t)sp_index(t->space, &c), text.s,
	                           sb.s ? sb.s : "", &cid)))
		goto done;
	if (tk_sorted_has(h->seen, h->nseen, cid)) {
		im->st->duplicates++;
		goto done;
	}

	store_meas m = { .config_id = cid, .hardware_id = h->id, .run_id = im->run_id,
	                 .trial = (int)im->st->records, .valid = r->error_no == MEAS_OK,
	                 .error = (int)r->error_no, .number = 1,
	                 .at = r->timestamp > 0 ? r->timestamp : im->now };
	if (m.valid) {
		double ss = 0, *sorted;
		if (!(times = malloc(sizeof *times * 2 * (size_t)n))) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			goto done;
		}
		sorted = times + n;
		for (int i = 0; i < n; i++)
			sum += times[i] = json_number_value(json_array_get(r->costs, (size_t)i));
		m.mean = sum / n;
		for (int i = 0; i < n; i++)
			ss += (times[i] - m.mean) * (times[i] - m.mean);
		m.std = n > 1 ? sqrt(ss / (n - 1)) : 0;
		memcpy(sorted, times, sizeof *times * (size_t)n);
		qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
		m.median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
		m.times = times;
		m.nrepeat = n;
	} else {
		const char *z = json_string_value(json_array_get(r->costs, 0));
		m.message = z ? z : meas_error_name(m.error);
	}
	m.compile_s = r->all_cost - sum > 0 && isfinite(r->all_cost) ? r->all_cost - sum : 0;
	if ((rc = store_meas_add(im->s, &m, &mid)))
		goto done;
	im->st->records++;
done:
	free(times);
	tk_sb_free(&text);
	tk_sb_free(&sb);
	return rc;
}

/* One line (without its newline). first: the first record line, which
 * decides whether the file is an AutoTVM log at all. */
static int import_line(at_import *im, const char *line, size_t len, int64_t lineno, int first)
{
	json_error_t err;
	json_t *root = json_loadb(line, len, 0, &err);
	at_rec r;
	const char *why = NULL;
	char reason[300];
	int rc;

	if (!root)
		why = err.text;
	else
		why = rec_shape(root, &r);
	/* A log of another version may mean other things by the same keys:
	 * refused whole, never read as 0.2. */
	json_t *ver = root ? json_object_get(root, "version") : NULL;
	if (ver && !(json_is_number(ver) && json_number_value(ver) == AT_LOG_VERSION)) {
		char v[40];
		if (json_is_number(ver))
			snprintf(v, sizeof v, "%g", json_number_value(ver));
		else
			snprintf(v, sizeof v, "that is not a number");
		rc = tk_seterr(TK_EINVAL, "%s:%lld: AutoTVM log version %s; tunekit reads version "
		               "%g", im->path, (long long)lineno, v, AT_LOG_VERSION);
		json_decref(root);
		return rc;
	}
	if (why && first) {
		rc = tk_seterr(TK_EINVAL, "%s:%lld: not an AutoTVM log: %s", im->path,
		               (long long)lineno, why);
		json_decref(root);
		return rc;
	}
	if (why) {
		im->st->malformed++;
		snprintf(reason, sizeof reason, "malformed: %s", why);
		rc = keep_foreign(im, line, lineno, reason);
	} else if (strncmp(r.name, AT_PREFIX, strlen(AT_PREFIX))) {
		snprintf(reason, sizeof reason, "unknown template %.200s", r.name);
		rc = keep_foreign(im, line, lineno, reason);
	} else if ((rc = import_own(im, &r)) == TK_EINVAL) {
		snprintf(reason, sizeof reason, "%s", tk_errmsg());
		rc = keep_foreign(im, line, lineno, reason);
	}
	json_decref(root);
	return rc;
}

int autotvm_import(tk_store *s, const char *path, const char *argv, autotvm_stats *out)
{
	autotvm_stats st;
	at_import im;
	FILE *f;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int64_t lineno = 0;
	int rc;

	assert(s && path && argv);
	memset(&st, 0, sizeof st);
	memset(&im, 0, sizeof im);
	if (out)
		memset(out, 0, sizeof *out);
	if (!strcmp(path, "-"))
		f = stdin, path = "stdin";
	else if (!(f = fopen(path, "r")))
		return tk_seterr(TK_EIO, "%s: %s", path, strerror(errno));
	im.s = s;
	im.path = path;
	im.st = &st;
	im.now = tk_walltime();
	if ((rc = store_begin(s))) {
		fclose(f);
		return rc;
	}
	store_run run = { .argv = argv, .method = "import/autotvm" };
	rc = store_run_begin(s, &run, &im.run_id);
	while (rc == TK_OK && (len = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		size_t skip = strspn(line, " \t");
		if (skip == (size_t)len || line[skip] == '#')
			continue;
		rc = import_line(&im, line, (size_t)len, lineno, st.lines++ == 0);
	}
	if (rc == TK_OK && ferror(f))
		rc = tk_seterr(TK_EIO, "%s: %s", path, strerror(errno));
	if (rc == TK_OK)
		rc = store_run_end(s, im.run_id);
	if (rc == TK_OK && (st.records > 0 || st.foreign > 0)) {
		rc = store_commit(s);
	} else {
		/* an error, or nothing new: leave the store as it was */
		char why[512];
		snprintf(why, sizeof why, "%s", tk_errmsg());
		store_rollback(s);
		if (rc)
			tk_seterr(rc, "%s", why);
	}
	free(line);
	if (f != stdin)
		fclose(f);
	import_free(&im);
	if (rc == TK_OK && out)
		*out = st;
	return rc;
}

/* ---- export ------------------------------------------------------------------------ */

typedef struct at_export {
	tk_store *s;
	FILE *f;
	char **keys;           /* canonical task keys wanted, NULL: all templates */
	int nkey;
	int rc;                /* error that stopped the walk */
	int64_t n;
	char *task;            /* the task of prog/space, cached across records */
	te_prog *prog;         /* NULL when task is not a template task */
	sp_space *space;
} at_export;

/* Parse the record's task once per run of records of the same task. */
static int export_task(at_export *x, const char *key)
{
	if (x->task && !strcmp(x->task, key))
		return TK_OK;
	free(x->task);
	sp_space_free(x->space);
	te_prog_free(x->prog);
	x->space = NULL;
	x->prog = NULL;
	if (!(x->task = strdup(key)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	if (te_task_parse(key, &x->prog))
		return TK_OK; /* not a template task: skipped */
	return sp_space_create(x->prog, &x->space);
}

/* The JSON line of record r (task x->prog, space x->space). */
static int export_line(at_export *x, const store_rec *r, json_t **out)
{
	sp_config c;
	json_t *args = json_array(), *entity = json_array(), *costs = json_array();
	double *times = NULL, sum = 0;
	char buf[96];
	int ntime = 0, rc, oom;
	tk_sb tgt;

	*out = NULL;
	tk_sb_init(&tgt);
	oom = !args || !entity || !costs;
	if ((rc = sp_parse(x->space, r->config, &c))) {
		char prefix[300];
		snprintf(prefix, sizeof prefix, "measurement %lld: configuration '%.80s' of %.120s",
		         (long long)r->id, r->config, r->task);
		rc = err_prefix(TK_ECORRUPT, prefix);
		goto done;
	}
	/* args: the parameters in the order of the canonical key */
	const char *p = strchr(x->prog->key, ':');
	while (p && *++p && !oom) {
		const char *eq = strchr(p, '='), *end = strchr(p, ',');
		int64_t v;
		if (!eq)
			break;
		snprintf(buf, sizeof buf, "%.*s", (int)((end ? end : p + strlen(p)) - eq - 1), eq + 1);
		if (tk_parse_i64(buf, &v))
			break;
		oom = json_array_append_new(args, json_pack("[s#I]", p, (int)(eq - p), (json_int_t)v));
		p = end;
	}
	for (int k = 0; k < x->space->nknob && !oom; k++) {
		const sp_knob *kn = &x->space->knob[k];
		json_t *v;
		if (kn->kind == KNOB_SPLIT) {
			v = json_array();
			oom = !v || json_array_append_new(v, json_integer(-1));
			for (int l = 1; l < kn->nlevel && !oom; l++)
				oom = json_array_append_new(v, json_integer(kn->cand[c.v[k] * kn->nlevel + l]));
			oom = oom || json_array_append_new(entity, json_pack("[ssO]", kn->name, "sp", v));
			json_decref(v);
		} else if (kn->label) {
			oom = json_array_append_new(entity, json_pack("[sss]", kn->name, "ot",
			                                              kn->label[c.v[k]]));
		} else {
			oom = json_array_append_new(entity, json_pack("[ssI]", kn->name, "ot",
			                                              (json_int_t)kn->cand[c.v[k]]));
		}
	}
	if (r->valid && r->nrepeat > 0 && (rc = store_meas_times(x->s, r->id, &times, &ntime)))
		goto done;
	if (!r->valid)
		oom = oom || json_array_append_new(costs, json_real(1e9));
	else if (ntime > 0)
		for (int i = 0; i < ntime && !oom; i++) {
			sum += times[i];
			oom = json_array_append_new(costs, json_real(times[i]));
		}
	else {
		sum = r->median;
		oom = oom || json_array_append_new(costs, json_real(r->median));
	}
	tk_sb_puts(&tgt, AT_TARGET);
	pct_encode(&tgt, r->hardware);
	if (oom || tgt.oom) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	snprintf(buf, sizeof buf, "%s%s", AT_PREFIX, x->prog->op);
	/* "version" and "tvm_version" are appended by export_rec */
	*out = json_pack("{s:[s,s,O,{}], s:{s:I, s:n, s:O}, s:[O, i, f, f]}",
	                 "input", tgt.s, buf, args,
	                 "config", "index", (json_int_t)sp_index(x->space, &c), "code_hash", "entity",
	                 entity,
	                 "result", costs, r->error, r->compile_s + sum, r->at);
	if (!*out)
		rc = tk_seterr(TK_ENOMEM, "out of memory");
done:
	free(times);
	tk_sb_free(&tgt);
	json_decref(args);
	json_decref(entity);
	json_decref(costs);
	return rc;
}

/* Digits that print every real of the record's result exactly with
 * "%.*g": jansson prints all reals of a dump with one precision, and the
 * smallest exact one keeps costs as short as AutoTVM's own ("0.0012", not
 * "0.0011999999999999999"). */
static int result_precision(json_t *line)
{
	json_t *res = json_object_get(line, "result"), *v;
	size_t i;
	int prec = 1;
	char buf[40];
	json_array_foreach(json_array_get(res, 0), i, v)
		for (; prec < 17; prec++) {
			snprintf(buf, sizeof buf, "%.*g", prec, json_real_value(v));
			if (strtod(buf, NULL) == json_real_value(v))
				break;
		}
	for (i = 2; i < 4; i++)
		for (; prec < 17; prec++) {
			snprintf(buf, sizeof buf, "%.*g", prec, json_real_value(json_array_get(res, i)));
			if (strtod(buf, NULL) == json_real_value(json_array_get(res, i)))
				break;
		}
	return prec;
}

static int export_rec(void *ctx, const store_rec *r)
{
	at_export *x = ctx;
	json_t *line;
	char *text;
	int want = !x->keys;

	for (int i = 0; i < x->nkey && !want; i++)
		want = !strcmp(x->keys[i], r->task);
	if (!want)
		return 0;
	if ((x->rc = export_task(x, r->task)))
		return 1;
	if (!x->prog)
		return 0;
	if ((x->rc = export_line(x, r, &line)))
		return 1;
	text = json_dumps(line, JSON_REAL_PRECISION(result_precision(line)));
	json_decref(line);
	if (!text) {
		x->rc = tk_seterr(TK_ENOMEM, "out of memory");
		return 1;
	}
	/* the object ends in '}': the version keys follow the result, as AutoTVM
	 * writes them, with the version as the literal 0.2 */
	text[strlen(text) - 1] = 0;
	if (fprintf(x->f, "%s, \"version\": 0.2, \"tvm_version\": \"%s\"}\n", text,
	            AT_TVM_VERSION) < 0) {
		free(text);
		x->rc = tk_seterr(TK_EIO, "write error: %s", strerror(errno));
		return 1;
	}
	free(text);
	x->n++;
	return 0;
}

int autotvm_export(tk_store *s, FILE *f, int64_t hardware_id, const char *const *task_keys,
                   int ntask, int best_only, int64_t *nout)
{
	at_export x;
	int rc = TK_OK;

	assert(s && f);
	memset(&x, 0, sizeof x);
	x.s = s;
	x.f = f;
	if (nout)
		*nout = 0;
	if (task_keys) {
		if (!(x.keys = calloc((size_t)ntask + 1, sizeof *x.keys)))
			return tk_seterr(TK_ENOMEM, "out of memory");
		for (x.nkey = 0; x.nkey < ntask && !rc; x.nkey++) {
			te_prog *p;
			if ((rc = te_task_parse(task_keys[x.nkey], &p))) {
				char prefix[300];
				snprintf(prefix, sizeof prefix, "task '%.200s' has no tunekit template to"
				         " export", task_keys[x.nkey]);
				rc = err_prefix(rc, prefix);
				break;
			}
			if (!(x.keys[x.nkey] = strdup(p->key)))
				rc = tk_seterr(TK_ENOMEM, "out of memory");
			te_prog_free(p);
		}
	}
	if (rc == TK_OK) {
		rc = best_only ? store_best(s, hardware_id, export_rec, &x)
		               : store_records_all(s, hardware_id, export_rec, &x);
		if (rc == 1)
			rc = x.rc;
	}
	if (rc == TK_OK && fflush(f))
		rc = tk_seterr(TK_EIO, "write error: %s", strerror(errno));
	if (nout)
		*nout = x.n;
	for (int i = 0; i < x.nkey; i++)
		free(x.keys[i]);
	free(x.keys);
	free(x.task);
	sp_space_free(x.space);
	te_prog_free(x.prog);
	return rc;
}
