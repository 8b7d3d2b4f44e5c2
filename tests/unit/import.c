/*
 * Unit tests for imported spaces and the importers: custom spaces (config
 * text and index round trip, JSON round trip, bad input), Kernel Tuner
 * cache files (a synthetic gzip file with valid, failed and foreign
 * entries; the real convolution_A100 file; idempotence), and AutoTVM logs
 * (template-task records exported and imported into a fresh store come
 * back exactly; foreign templates and malformed lines are kept as foreign
 * records; idempotence). Files live in a mkdtemp() directory removed at
 * exit.
 */
#include "unit.h"

#include <dirent.h>
#include <sqlite3.h>
#include <unistd.h>
#include <zlib.h>

#include "import/autotvm.h"
#include "import/kernel_tuner.h"
#include "space/space.h"
#include "store/store.h"
#include "store/store_import.h"
#include "store/store_int.h"
#include "task/te.h"
#include "util/util.h"

#define KT_DATA "/work/shared/data/kernel_tuner"

/* ---- helpers -------------------------------------------------------- */

static tk_store *open_store(const char *name)
{
	tk_store *s = NULL;
	int rc = store_open(tpath(name), 0, &s);
	if (rc) {
		fprintf(stderr, "store_open: %s\n", tk_errmsg());
		exit(2);
	}
	return s;
}

static void write_file(const char *path, const char *text, int gz)
{
	if (gz) {
		gzFile g = gzopen(path, "wb");
		CHECK(g && gzputs(g, text) == (int)strlen(text));
		if (g)
			gzclose(g);
	} else {
		FILE *f = fopen(path, "w");
		CHECK(f && fputs(text, f) >= 0);
		if (f)
			fclose(f);
	}
}

/* One integer from a query. */
static int64_t qint(tk_store *s, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -1;
	if (sqlite3_prepare_v2(store_db(s), sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(store_db(s)));
		return -2;
	}
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Every row of a query as text (reals with 17 digits, NULL as "-"), rows
 * on lines and columns separated by '|'. Caller frees. */
static char *qrows(tk_store *s, const char *sql)
{
	sqlite3_stmt *st;
	tk_sb sb;
	tk_sb_init(&sb);
	if (sqlite3_prepare_v2(store_db(s), sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(store_db(s)));
		return strdup("error");
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		for (int i = 0; i < sqlite3_column_count(st); i++) {
			if (i)
				tk_sb_putc(&sb, '|');
			switch (sqlite3_column_type(st, i)) {
			case SQLITE_NULL: tk_sb_puts(&sb, "-"); break;
			case SQLITE_FLOAT: tk_sb_printf(&sb, "%.17g", sqlite3_column_double(st, i)); break;
			default: tk_sb_puts(&sb, (const char *)sqlite3_column_text(st, i)); break;
			}
		}
		tk_sb_putc(&sb, '\n');
	}
	sqlite3_finalize(st);
	return sb.s ? tk_sb_take(&sb) : strdup("");
}

/* ---- custom spaces ------------------------------------------------------ */

static sp_space *small_space(void)
{
	static const char *const v0[] = { "16", "32", "48" };
	static const char *const v1[] = { "0", "1" };
	static const char *const v2[] = { "half", "float" };
	static const char *const names[] = { "block_size_x", "use_shmem", "prec" };
	static const char *const *const vals[] = { v0, v1, v2 };
	static const int nval[] = { 3, 2, 2 };
	sp_space *s = NULL;
	CHECK_EQ_INT(sp_space_custom(3, names, nval, vals, &s), TK_OK);
	return s;
}

TEST(test_custom_text_index)
{
	sp_space *s = small_space();
	sp_config c;
	tk_sb sb;
	if (!s)
		return;
	CHECK(s->prog == NULL);
	CHECK_EQ_INT(s->main_stage, -1);
	CHECK_EQ_INT(s->nknob, 3);
	CHECK_EQ_INT(s->size, 12);
	CHECK_EQ_INT(s->knob[0].role, KR_CUSTOM);
	CHECK_EQ_INT(s->knob[0].kind, KNOB_ENUM);
	CHECK_EQ_INT(s->knob[0].cand[2], 48);  /* integer values */
	CHECK_EQ_INT(s->knob[2].cand[1], 1);   /* positions */
	CHECK_EQ_INT(sp_parse(s, "block_size_x=32;use_shmem=1;prec=float", &c), TK_OK);
	CHECK_EQ_INT(sp_index(s, &c), 1 + 3 * 1 + 6 * 1);
	CHECK_EQ_INT(sp_parse(s, "prec=half;use_shmem=0;block_size_x=48", &c), TK_OK);
	CHECK_EQ_INT(sp_index(s, &c), 2);
	int ok = 1;
	for (uint64_t i = 0; i < s->size; i++) {
		sp_config d;
		tk_sb_init(&sb);
		sp_from_index(s, i, &c);
		sp_format(&sb, s, &c);
		ok &= sp_parse(s, sb.s, &d) == TK_OK && sp_index(s, &d) == i;
		if (i == 7)
			CHECK_EQ_STR(sb.s, "block_size_x=32;use_shmem=0;prec=float");
		tk_sb_free(&sb);
	}
	CHECK(ok);
	sp_space_free(s);
}

TEST(test_custom_bad)
{
	const char *const n2[] = { "a", "a" }, *const n1[] = { "a" }, *const nbad[] = { "a=b" };
	const char *const v[] = { "1", "2" }, *const vdup[] = { "1", "1" }, *const vsemi[] = { "1;2" };
	const char *const *const vv[] = { v, v }, *const *const vd[] = { vdup }, *const *const vs[] = { vsemi };
	int two[] = { 2, 2 }, zero[] = { 0 }, one[] = { 1 };
	sp_space *s = (sp_space *)1;
	CHECK_EQ_INT(sp_space_custom(2, n2, two, vv, &s), TK_EINVAL);
	CHECK(s == NULL);
	CHECK_EQ_INT(sp_space_custom(1, n1, two, vd, &s), TK_EINVAL);
	CHECK_EQ_INT(sp_space_custom(1, n1, zero, vv, &s), TK_EINVAL);
	CHECK_EQ_INT(sp_space_custom(1, n1, one, vs, &s), TK_EINVAL);
	CHECK_EQ_INT(sp_space_custom(1, nbad, one, vv, &s), TK_EINVAL);
	CHECK_EQ_INT(sp_space_custom(0, n1, one, vv, &s), TK_EINVAL);
	CHECK(s == NULL);
}

TEST(test_custom_json)
{
	sp_space *s = small_space(), *t = NULL;
	if (!s)
		return;
	char *j = sp_space_to_json(s);
	CHECK_EQ_STR(j, "{\"knobs\":[{\"name\":\"block_size_x\",\"values\":[16,32,48]},"
	                "{\"name\":\"use_shmem\",\"values\":[0,1]},"
	                "{\"name\":\"prec\",\"values\":[\"half\",\"float\"]}]}");
	CHECK_EQ_INT(sp_space_from_json(j, &t), TK_OK);
	if (t) {
		char *j2 = sp_space_to_json(t);
		CHECK_EQ_STR(j2, j);
		CHECK_EQ_INT(t->size, 12);
		CHECK_EQ_STR(t->knob[2].label[1], "float");
		free(j2);
		sp_space_free(t);
	}
	/* the space hash: the same knobs and values hash the same, through
	 * JSON or not; another value, name or order does not */
	uint64_t h = sp_space_hash(s);
	CHECK(h != 0);
	const char *other[] = {
		"{\"knobs\":[{\"name\":\"block_size_x\",\"values\":[16,32,64]},"
		"{\"name\":\"use_shmem\",\"values\":[0,1]},{\"name\":\"prec\",\"values\":[\"half\",\"float\"]}]}",
		"{\"knobs\":[{\"name\":\"block_size_y\",\"values\":[16,32,48]},"
		"{\"name\":\"use_shmem\",\"values\":[0,1]},{\"name\":\"prec\",\"values\":[\"half\",\"float\"]}]}",
		"{\"knobs\":[{\"name\":\"use_shmem\",\"values\":[0,1]},"
		"{\"name\":\"block_size_x\",\"values\":[16,32,48]},{\"name\":\"prec\",\"values\":[\"half\",\"float\"]}]}",
	};
	CHECK_EQ_INT(sp_space_from_json(j, &t), TK_OK);
	CHECK(t && sp_space_hash(t) == h);
	sp_space_free(t);
	for (int i = 0; i < 3; i++) {
		t = NULL;
		CHECK_EQ_INT(sp_space_from_json(other[i], &t), TK_OK);
		CHECK(t && sp_space_hash(t) != h);
		sp_space_free(t);
	}
	free(j);
	sp_space_free(s);

	/* Python's str() of each value: what Kernel Tuner's cache keys hold */
	CHECK_EQ_INT(sp_space_from_json("{\"knobs\": [{\"name\": \"f\", \"values\": [1.0, 0.5,"
	                                " 1e-05, 1e16, 0.0001, 123.25, true, false, \"007\", -3]}]}",
	                                &t), TK_OK);
	if (t) {
		const char *want[] = { "1.0", "0.5", "1e-05", "1e+16", "0.0001", "123.25", "True",
		                       "False", "007", "-3" };
		for (int i = 0; i < 10; i++)
			CHECK_EQ_STR(t->knob[0].label[i], want[i]);
		CHECK_EQ_INT(t->knob[0].cand[3], 3); /* not all integers: positions */
		j = sp_space_to_json(t);
		sp_space_free(t);
		t = NULL;
		CHECK(j && strstr(j, "\"007\"") && strstr(j, "\"True\""));
		CHECK_EQ_INT(sp_space_from_json(j, &t), TK_OK);
		for (int i = 0; t && i < 10; i++)
			CHECK_EQ_STR(t->knob[0].label[i], want[i]);
		free(j);
		sp_space_free(t);
	}

	static const char *const bad[] = {
		"{", "[]", "{\"knobs\": 3}", "{\"knobs\": []}",
		"{\"knobs\": [{\"name\": \"a\", \"values\": []}]}",
		"{\"knobs\": [{\"name\": \"a\", \"values\": [[1]]}]}",
		"{\"knobs\": [{\"values\": [1]}]}",
		"{\"knobs\": [{\"name\": \"a\", \"values\": [1, 1]}]}",
	};
	for (int i = 0; i < ArraySize(bad); i++) {
		t = (sp_space *)1;
		CHECK_EQ_INT(sp_space_from_json(bad[i], &t), TK_EINVAL);
		CHECK(t == NULL);
	}
}

/* ---- Kernel Tuner -------------------------------------------------------------- */

static const char kt_small[] =
	"{\"device_name\": \"Test GPU\", \"kernel_name\": \"Xgemm\", \"problem_size\": [64, 32, 16],\n"
	" \"tune_params_keys\": [\"bx\", \"by\"], \"tune_params\": {\"bx\": [16, 32], \"by\": [1, 2]},\n"
	" \"objective\": \"time\", \"cache\": {\n"
	"  \"16,1\": {\"bx\": 16, \"by\": 1, \"time\": 2.5, \"times\": [1.0, 2.0, 4.0],"
	" \"compile_time\": 500.0, \"timestamp\": \"2023-12-22 09:54:05.5+00:00\"},\n"
	"  \"16,2\": {\"bx\": 16, \"by\": 2, \"time\": \"CompilationFailedConfig\", \"compile_time\": 100.0},\n"
	"  \"32,1\": {\"bx\": 32, \"by\": 1, \"time\": \"RuntimeFailedConfig\"},\n"
	"  \"32,2\": {\"bx\": 32, \"by\": 2, \"time\": 3.0},\n"
	"  \"64,1\": {\"bx\": 64, \"by\": 1, \"time\": 1.0}\n"
	" }}\n";

TEST(test_kt_small)
{
	tk_store *s = open_store("kt.db");
	kt_stats st;
	char *rows;
	const char *path = tpath("small.json.gz");

	write_file(path, kt_small, 1);
	CHECK_EQ_INT(kt_import(s, path, NULL, "tunekit import kernel-tuner small", &st), TK_OK);
	CHECK_EQ_STR(st.task, "kt:Xgemm:64x32x16");
	CHECK_EQ_STR(st.hardware, "kt:Test GPU");
	CHECK_EQ_INT(st.entries, 5);
	CHECK_EQ_INT(st.records, 4);
	CHECK_EQ_INT(st.invalid, 2);
	CHECK_EQ_INT(st.foreign, 1);
	CHECK_EQ_INT(st.duplicates, 0);
	CHECK_EQ_INT(st.space_size, 4);
	CHECK_NEAR(st.flops, 2.0 * 64 * 32 * 16 + 2.0 * 64 * 16, 0); /* no GFLOP/s: Xgemm formula */

	rows = qrows(s, "SELECT c.text, c.idx, m.valid, m.error, m.message, m.median, m.mean,"
	                " m.nrepeat, m.number, m.compile_s FROM measurement m"
	                " JOIN config c ON c.id = m.config_id ORDER BY c.idx");
	CHECK_EQ_STR(rows, "bx=16;by=1|0|1|0|-|0.002|0.0023333333333333335|3|1|0.5\n"
	                   "bx=32;by=1|1|0|4|RuntimeFailedConfig|-|-|0|1|0\n"
	                   "bx=16;by=2|2|0|2|CompilationFailedConfig|-|-|0|1|0.10000000000000001\n"
	                   "bx=32;by=2|3|1|0|-|0.0030000000000000001|0.0030000000000000001|0|1|0\n");
	free(rows);
	CHECK_EQ_INT(qint(s, "SELECT at FROM measurement m JOIN config c ON c.id = m.config_id"
	                     " WHERE c.text = 'bx=16;by=1'"), 1703238845);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM measurement WHERE at > 1.7e9 AND at < 1.8e9"), 4);
	rows = qrows(s, "SELECT format, line, reason FROM foreign_record");
	CHECK_EQ_STR(rows, "kernel-tuner|5|configuration not in tune_params: bx=64\n");
	free(rows);
	rows = qrows(s, "SELECT t.key, t.op, t.space, h.key, h.kind, h.cpu, r.method, r.argv"
	                " FROM task t, hardware h, run r");
	CHECK_EQ_STR(rows, "kt:Xgemm:64x32x16|kernel-tuner|{\"knobs\":[{\"name\":\"bx\",\"values\":"
	                   "[16,32]},{\"name\":\"by\",\"values\":[1,2]}]}|kt:Test GPU|imported|"
	                   "Test GPU|import/kernel-tuner|tunekit import kernel-tuner small\n");
	free(rows);

	/* twice: nothing new, not even a run */
	CHECK_EQ_INT(kt_import(s, path, NULL, "again", &st), TK_OK);
	CHECK_EQ_INT(st.records, 0);
	CHECK_EQ_INT(st.duplicates, 5);
	CHECK_EQ_INT(st.foreign, 0);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM measurement"), 4);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM run"), 1);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM foreign_record"), 1);

	/* the same measurements on another device are new */
	CHECK_EQ_INT(kt_import(s, path, "Other GPU", "other", &st), TK_OK);
	CHECK_EQ_STR(st.hardware, "kt:Other GPU");
	CHECK_EQ_INT(st.records, 4);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM measurement"), 8);

	/* an empty device_name needs a name */
	char *text = strdup(kt_small), *p = strstr(text, "Test GPU");
	memmove(p, p + 8, strlen(p + 8) + 1);
	write_file(tpath("nodev.json"), text, 0);
	CHECK_EQ_INT(kt_import(s, tpath("nodev.json"), NULL, "x", &st), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "device_name is empty: give --hardware NAME") != NULL);
	CHECK_EQ_INT(kt_import(s, tpath("nodev.json"), "Named GPU", "x", &st), TK_OK);
	CHECK_EQ_STR(st.hardware, "kt:Named GPU");
	free(text);

	/* the same task with other tune_params is refused, and nothing is kept */
	text = strdup(kt_small);
	p = strstr(text, "[1, 2]}");
	p[4] = '3';
	write_file(tpath("other.json"), text, 0);
	int64_t nmeas = qint(s, "SELECT count(*) FROM measurement");
	CHECK_EQ_INT(kt_import(s, tpath("other.json"), "Third GPU", "x", &st), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "different tune_params") != NULL);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM measurement"), nmeas);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM hardware WHERE key = 'kt:Third GPU'"), 0);
	free(text);

	/* not there, not JSON, JSON but not a cache file */
	CHECK_EQ_INT(kt_import(s, tpath("absent.json"), NULL, "x", &st), TK_EIO);
	write_file(tpath("notjson.json"), "hello\n", 0);
	CHECK_EQ_INT(kt_import(s, tpath("notjson.json"), NULL, "x", &st), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "notjson.json:1:") != NULL);
	write_file(tpath("array.json"), "[1, 2]", 0);
	CHECK_EQ_INT(kt_import(s, tpath("array.json"), NULL, "x", &st), TK_EINVAL);
	write_file(tpath("trunc.json.gz"), "{\"device_name\": \"x\", \"cache\": {", 1);
	CHECK_EQ_INT(kt_import(s, tpath("trunc.json.gz"), NULL, "x", &st), TK_EINVAL);
	store_close(s);
}

TEST(test_kt_a100)
{
	const char *path = KT_DATA "/convolution_A100.json.gz";
	tk_store *s;
	kt_stats st;
	double t0;
	if (access(path, R_OK)) {
		fprintf(stderr, "%s: not readable, test skipped\n", path);
		return;
	}
	s = open_store("a100.db");
	t0 = tk_now();
	CHECK_EQ_INT(kt_import(s, path, NULL, "a100", &st), TK_OK);
	printf("convolution_A100: %lld records imported in %.2f s\n", (long long)st.records,
	       tk_now() - t0);
	CHECK_EQ_INT(st.records, 4362);
	CHECK_EQ_INT(st.invalid, 161);
	CHECK_EQ_INT(st.space_size, 10240);
	CHECK_EQ_STR(st.task, "kt:convolution_kernel:4096x4096");
	CHECK_EQ_STR(st.hardware, "kt:NVIDIA A100-PCIE-40GB");
	CHECK_NEAR(st.flops, 2.0 * 4096 * 4096 * 15 * 15, 1e3);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM measurement"), 4362);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM measurement WHERE NOT valid"), 161);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM measurement WHERE error = 2"), 6);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM measurement WHERE error = 4"), 155);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM measurement WHERE valid AND nrepeat = 32"
	                     " AND number = 1 AND compile_s > 0"), 4201);

	/* the stored space parses the stored configurations to their index */
	char *rows = qrows(s, "SELECT c.text, c.idx FROM config c ORDER BY c.id LIMIT 1");
	char *json = NULL;
	sp_space *sp = NULL;
	sp_config c;
	CHECK_EQ_STR(rows, "block_size_x=16;block_size_y=1;tile_size_x=1;tile_size_y=1;"
	                   "read_only=0;use_padding=0;use_shmem=0;use_cmem=1;filter_height=15;"
	                   "filter_width=15|0\n");
	CHECK_EQ_INT(store_task_space_get(s, 1, &json), TK_OK);
	CHECK(json && sp_space_from_json(json, &sp) == TK_OK);
	if (sp) {
		CHECK_EQ_INT(sp->size, 10240);
		CHECK_EQ_INT(sp_parse(sp, "block_size_x=256;block_size_y=16;tile_size_x=4;"
		                          "tile_size_y=4;read_only=1;use_padding=1;use_shmem=1;"
		                          "use_cmem=1;filter_height=15;filter_width=15", &c), TK_OK);
		CHECK_EQ_INT(sp_index(sp, &c), 10239);
	}
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM config WHERE idx IS NULL OR idx >= 10240"), 0);
	sp_space_free(sp);
	free(json);
	free(rows);

	CHECK_EQ_INT(kt_import(s, path, NULL, "a100 again", &st), TK_OK);
	CHECK_EQ_INT(st.records, 0);
	CHECK_EQ_INT(st.duplicates, 4362);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM measurement"), 4362);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM run"), 1);
	store_close(s);
}

/* ---- AutoTVM ---------------------------------------------------------------------- */

/* Records of template tasks, stored as measure would: n sampled configs of
 * task on hardware hw, every third invalid, every fourth valid one without
 * repeat times. */
static void fake_records(tk_store *s, const char *task, int64_t hw, int64_t run, int n,
                         uint64_t seed)
{
	te_prog *p = NULL;
	sp_space *sp = NULL;
	int64_t tid, cid, mid;
	tk_rng r;
	CHECK_EQ_INT(te_task_parse(task, &p), TK_OK);
	CHECK_EQ_INT(sp_space_create(p, &sp), TK_OK);
	if (!sp)
		return;
	CHECK_EQ_INT(store_task_get(s, p->key, p->op, p->flops, &tid), TK_OK);
	tk_rng_seed(&r, seed, 7);
	for (int i = 0; i < n; i++) {
		sp_config c;
		tk_sb sb;
		double t[3];
		tk_sb_init(&sb);
		sp_sample(sp, &r, &c);
		sp_format(&sb, sp, &c);
		CHECK_EQ_INT(store_config_get(s, tid, (int64_t)sp_index(sp, &c), sb.s, "", &cid), TK_OK);
		tk_sb_free(&sb);
		store_meas m = { .config_id = cid, .hardware_id = hw, .run_id = run, .trial = i,
		                 .number = 4, .compile_s = 0.25 + i * 0.001, .at = 1.7e9 + i / 3.0 };
		if (i % 3 == 2) {
			m.error = i % 2 ? MEAS_RUNTIME_CRASH : MEAS_COMPILE_ERROR;
			m.message = "failed";
		} else if (i % 4 == 3) {
			m.valid = 1;
			m.mean = m.median = 1e-4 * (1 + tk_rng_unif(&r));
		} else {
			double sum = 0, ss = 0;
			for (int k = 0; k < 3; k++)
				sum += t[k] = 1e-4 * (1 + tk_rng_unif(&r));
			m.valid = 1;
			m.mean = sum / 3;
			for (int k = 0; k < 3; k++)
				ss += (t[k] - m.mean) * (t[k] - m.mean);
			m.std = sqrt(ss / 2);
			m.median = t[0] < t[1] ? (t[1] < t[2] ? t[1] : t[0] < t[2] ? t[2] : t[0])
			                       : (t[0] < t[2] ? t[0] : t[1] < t[2] ? t[2] : t[1]);
			m.nrepeat = 3;
			m.times = t;
		}
		CHECK_EQ_INT(store_meas_add(s, &m, &mid), TK_OK);
	}
	sp_space_free(sp);
	te_prog_free(p);
}

static const char *const rec_query =
	"SELECT t.key, t.op, t.flops, c.text, c.idx, h.key, m.valid, m.error, m.median, m.mean,"
	" m.std, CASE WHEN m.nrepeat > 1 THEN m.nrepeat || quote(m.times) END, m.at"
	" FROM measurement m"
	" JOIN config c ON c.id = m.config_id JOIN task t ON t.id = c.task_id"
	" JOIN hardware h ON h.id = m.hardware_id WHERE t.op <> 'kernel-tuner'"
	" ORDER BY t.key, h.key, m.at";

TEST(test_autotvm_roundtrip)
{
	tk_store *a = open_store("tvm-a.db"), *b = open_store("tvm-b.db");
	const char *log = tpath("export.log"), *best = tpath("best.log");
	store_hw hw1 = { .key = "Test CPU @ 2.5GHz|avx2|gcc 12.2.0|-O2|threads=1", .kind = "cpu",
	                 .cpu = "Test CPU @ 2.5GHz", .isa = "avx2", .cc = "gcc 12.2.0",
	                 .threads = 1 };
	store_hw hw2 = { .key = "Other CPU|sse2|gcc 12.2.0|-O3|threads=2", .kind = "cpu" };
	int64_t h1, h2, run, n = 0, nbest = 0;
	autotvm_stats st;
	FILE *f;

	CHECK_EQ_INT(store_hardware_get(a, &hw1, &h1), TK_OK);
	CHECK_EQ_INT(store_hardware_get(a, &hw2, &h2), TK_OK);
	store_run r = { .argv = "test", .method = "measure", .hardware_id = h1 };
	CHECK_EQ_INT(store_run_begin(a, &r, &run), TK_OK);
	fake_records(a, "dense:m=24,n=40,k=16", h1, run, 12, 1);
	fake_records(a, "dense:m=24,n=40,k=16", h2, run, 5, 2);
	fake_records(a, "conv2d:c=4,h=10,w=10,k=8,pad=1", h1, run, 7, 3);
	/* an imported task has no template and is not exported */
	write_file(tpath("kt.json"), kt_small, 0);
	CHECK_EQ_INT(kt_import(a, tpath("kt.json"), NULL, "x", NULL), TK_OK);

	CHECK((f = fopen(log, "w")) != NULL);
	CHECK_EQ_INT(autotvm_export(a, f, 0, NULL, 0, 0, &n), TK_OK);
	fclose(f);
	CHECK_EQ_INT(n, 24);
	CHECK((f = fopen(best, "w")) != NULL);
	CHECK_EQ_INT(autotvm_export(a, f, 0, NULL, 0, 1, &nbest), TK_OK);
	fclose(f);
	CHECK_EQ_INT(nbest, 3); /* dense on two CPUs, conv2d on one */

	/* the format, on the first line: conv2d before dense, by task key */
	static const char want[] =
		"{\"input\": [\"llvm -keys=cpu -model=tunekit:Test%20CPU%20%40%202.5GHz%7Cavx2%7Cgcc"
		"%2012.2.0%7C-O2%7Cthreads%3D1\", \"tunekit.conv2d\", [[\"c\", 4], [\"h\", 10],"
		" [\"k\", 8], [\"n\", 1], [\"pad\", 1], [\"r\", 3], [\"s\", 3], [\"stride\", 1],"
		" [\"w\", 10]], {}], \"config\": {\"index\": 11578417, \"code_hash\": null,"
		" \"entity\": [[\"tile_f\", \"sp\", [-1, 4, 1]], [\"tile_y\", \"sp\", [-1, 1, 10]],"
		" [\"tile_x\", \"sp\", [-1, 2, 5]], [\"tile_rc\", \"sp\", [-1, 4]], [\"tile_ry\","
		" \"sp\", [-1, 3]], [\"tile_rx\", \"sp\", [-1, 2]], [\"order\", \"ot\", \"2\"],"
		" [\"vec\", \"ot\", \"x\"], [\"unroll\", \"ot\", 512], [\"unroll_explicit\", \"ot\", 0],"
		" [\"pack_I\", \"ot\", 1], [\"pack_W\", \"ot\", 0]]}, \"result\": [[";
	char line[4096] = "";
	f = fopen(log, "r");
	CHECK(f && fgets(line, sizeof line, f));
	if (f)
		fclose(f);
	if (strncmp(line, want, strlen(want)))
		fprintf(stderr, "first line: %s", line);
	CHECK(!strncmp(line, want, strlen(want)));
	CHECK(strstr(line, "], 0, 0.25") != NULL);
	CHECK(strstr(line, ", 1700000000.0], \"version\": 0.2, \"tvm_version\": \"0.9.0\"}\n"));
	CHECK(strchr(line, '\n') == line + strlen(line) - 1);

	/* into a fresh store: the same tasks, configurations, errors, latencies */
	CHECK_EQ_INT(autotvm_import(b, log, "import", &st), TK_OK);
	CHECK_EQ_INT(st.lines, 24);
	CHECK_EQ_INT(st.records, 24);
	CHECK_EQ_INT(st.foreign, 0);
	CHECK_EQ_INT(st.malformed, 0);
	CHECK_EQ_INT(st.duplicates, 0);
	char *ra = qrows(a, rec_query), *rb = qrows(b, rec_query);
	CHECK(strlen(ra) > 1000);
	CHECK_EQ_STR(rb, ra);
	free(ra);
	free(rb);
	/* compile time survives up to rounding */
	CHECK_EQ_INT(qint(b, "SELECT count(*) FROM measurement WHERE compile_s < 0.2499"
	                     " OR compile_s > 0.2751"), 0);
	ra = qrows(b, "SELECT h.kind, h.cpu, h.isa, h.cc, h.threads FROM hardware h ORDER BY 2");
	CHECK_EQ_STR(ra, "imported|Other CPU|sse2|gcc 12.2.0|2\n"
	                 "imported|Test CPU @ 2.5GHz|avx2|gcc 12.2.0|1\n");
	free(ra);
	CHECK_EQ_INT(qint(b, "SELECT count(*) FROM run WHERE method = 'import/autotvm'"), 1);

	/* a second time adds nothing; the exported best are already there too */
	CHECK_EQ_INT(autotvm_import(b, log, "again", &st), TK_OK);
	CHECK_EQ_INT(st.records, 0);
	CHECK_EQ_INT(st.duplicates, 24);
	CHECK_EQ_INT(autotvm_import(b, best, "best", &st), TK_OK);
	CHECK_EQ_INT(st.records, 0);
	CHECK_EQ_INT(st.duplicates, 3);
	CHECK_EQ_INT(qint(b, "SELECT count(*) FROM measurement"), 24);
	CHECK_EQ_INT(qint(b, "SELECT count(*) FROM run"), 1);

	/* export of chosen tasks (any spelling), of one hardware */
	const char *keys[] = { "dense:n=40,m=24,k=16" };
	f = fopen(tpath("dense.log"), "w");
	CHECK_EQ_INT(autotvm_export(a, f, h2, keys, 1, 0, &n), TK_OK);
	CHECK_EQ_INT(n, 5);
	const char *kt_keys[] = { "kt:Xgemm:64x32x16" };
	CHECK_EQ_INT(autotvm_export(a, f, 0, kt_keys, 1, 0, &n), TK_EINVAL);
	fclose(f);
	store_close(a);
	store_close(b);
}

/* A line of a public AutoTVM log (TVM 0.10, x86), and one of dense_nopack.x86
 * in the same format. */
static const char conv_line[] =
	"{\"input\": [\"llvm -keys=cpu \", \"conv2d_NCHWc.x86\", [[\"TENSOR\", [1, 3, 224, 224],"
	" \"float32\"], [\"TENSOR\", [64, 3, 7, 7], \"float32\"], [2, 2], [3, 3, 3, 3], [1, 1],"
	" \"NCHW\", \"NCHW\", \"float32\"], {}], \"config\": {\"index\": 172, \"code_hash\": null,"
	" \"entity\": [[\"tile_ic\", \"sp\", [-1, 1]], [\"tile_oc\", \"sp\", [-1, 4]], [\"tile_ow\","
	" \"sp\", [-1, 1]], [\"unroll_kw\", \"ot\", false]]}, \"result\": [[0.0045656413], 0,"
	" 0.5309267044067383, 1676344759.520081], \"version\": 0.2, \"tvm_version\": \"0.10.0\"}";
static const char dense_line[] =
	"{\"input\": [\"llvm -keys=cpu -mcpu=skylake-avx512\", \"dense_nopack.x86\", [[\"TENSOR\","
	" [1, 9216], \"float32\"], [\"TENSOR\", [4096, 9216], \"float32\"], null, \"float32\"], {}],"
	" \"config\": {\"index\": 41, \"code_hash\": null, \"entity\": [[\"tile_y\", \"sp\", [-1, 1]],"
	" [\"tile_x\", \"sp\", [-1, 64]], [\"tile_k\", \"sp\", [-1, 16]]]}, \"result\":"
	" [[0.0021833142], 0, 1.2075388431549072, 1653898629.7427933], \"version\": 0.2,"
	" \"tvm_version\": \"0.9.0\"}";

static int count_reason(void *ctx, const char *reason, int64_t n)
{
	tk_sb *sb = ctx;
	tk_sb_printf(sb, "%lld %s\n", (long long)n, reason);
	return 0;
}

TEST(test_autotvm_foreign)
{
	tk_store *s = open_store("foreign.db");
	const char *log = tpath("foreign.log");
	autotvm_stats st;
	tk_sb text, reasons;
	int64_t before;

	tk_sb_init(&text);
	tk_sb_printf(&text, "%s\n%s\n", conv_line, dense_line);
	tk_sb_puts(&text, "{\"input\": [\"llvm\", \"tunekit.dense\"\n"     /* 3: cut short */
	                  "\n# a comment\n"
	                  "{\"foo\": 1}\n"                                 /* 6: not a record */
	                  "{\"input\": [\"llvm\", \"tunekit.dense\", [[\"k\", 16], [\"m\", 24],"
	                  " [\"n\", 40]], {}], \"config\": {\"index\": 0, \"code_hash\": null,"
	                  " \"entity\": [[\"tile_q\", \"sp\", [-1, 2, 2]]]}, \"result\":"
	                  " [[0.001], 0, 0.5, 1653898629.5], \"version\": 0.2}\n" /* 7: bad knob */
	                  "{\"input\": [\"llvm -keys=cpu\", \"tunekit.dense\", [[\"k\", 16], [\"m\", 24],"
	                  " [\"n\", 40]], {}], \"config\": {\"index\": 0, \"code_hash\": null,"
	                  " \"entity\": [[\"tile_i\", \"sp\", [-1, 2, 3]], [\"tile_j\", \"sp\", [-1, 4, 5]],"
	                  " [\"tile_r\", \"sp\", [-1, 4]], [\"order\", \"ot\", \"1\"], [\"vec\", \"ot\", \"j\"],"
	                  " [\"unroll\", \"ot\", 16], [\"unroll_explicit\", \"ot\", 0],"
	                  " [\"pack_A\", \"ot\", 1], [\"pack_B\", \"ot\", 0]]}, \"result\":"
	                  " [[1e9], 4, 0.5, 1653898629.5], \"version\": 0.2}\n"); /* 8: valid, crash */
	write_file(log, text.s, 0);
	tk_sb_free(&text);

	CHECK_EQ_INT(store_foreign_max_id(s, &before), TK_OK);
	CHECK_EQ_INT(before, 0);
	CHECK_EQ_INT(autotvm_import(s, log, "import", &st), TK_OK);
	CHECK_EQ_INT(st.lines, 6);
	CHECK_EQ_INT(st.records, 1);
	CHECK_EQ_INT(st.foreign, 5);
	CHECK_EQ_INT(st.malformed, 2);
	CHECK_EQ_INT(st.duplicates, 0);
	char *rows = qrows(s, "SELECT format, line, reason FROM foreign_record ORDER BY line");
	CHECK(rows && !strncmp(rows, "autotvm|1|unknown template conv2d_NCHWc.x86\n"
	                             "autotvm|2|unknown template dense_nopack.x86\n"
	                             "autotvm|3|malformed: ", 100));
	CHECK(rows && strstr(rows, "autotvm|6|malformed: no \"input\" [target, task, args, kwargs]\n"));
	CHECK(rows && strstr(rows, "autotvm|7|dense:k=16,m=24,n=40: unknown knob 'tile_q'\n"));
	free(rows);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM foreign_record WHERE text = '" "{\"foo\": 1}'"), 1);
	rows = qrows(s, "SELECT c.text, m.valid, m.error, h.key FROM measurement m"
	                " JOIN config c ON c.id = m.config_id JOIN hardware h ON h.id = m.hardware_id");
	CHECK_EQ_STR(rows, "tile_i=4x2x3;tile_j=2x4x5;tile_r=4x4;order=1;vec=j;unroll=16;"
	                   "unroll_explicit=0;pack_A=1;pack_B=0|0|4|autotvm:llvm -keys=cpu\n");
	free(rows);
	tk_sb_init(&reasons);
	CHECK_EQ_INT(store_foreign_reasons(s, "autotvm", before, count_reason, &reasons), TK_OK);
	CHECK(reasons.s && strstr(reasons.s, "1 unknown template dense_nopack.x86\n"));
	CHECK(reasons.s && strstr(reasons.s, "1 malformed: no \"input\" [target, task, args,"
	                                     " kwargs]\n"));
	CHECK(reasons.s && strstr(reasons.s, "1 unknown template conv2d_NCHWc.x86\n"));
	tk_sb_free(&reasons);

	/* twice: nothing new */
	CHECK_EQ_INT(store_foreign_max_id(s, &before), TK_OK);
	CHECK_EQ_INT(autotvm_import(s, log, "again", &st), TK_OK);
	CHECK_EQ_INT(st.records, 0);
	CHECK_EQ_INT(st.foreign, 0);
	CHECK_EQ_INT(st.malformed, 2);
	CHECK_EQ_INT(st.duplicates, 6);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM foreign_record"), 5);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM run"), 1);
	tk_sb_init(&reasons);
	CHECK_EQ_INT(store_foreign_reasons(s, "autotvm", before, count_reason, &reasons), TK_OK);
	CHECK(reasons.s == NULL);
	tk_sb_free(&reasons);

	/* not a log at all: refused at its first record line, nothing kept */
	write_file(tpath("notlog.txt"), "\n# header\nhello world\n", 0);
	CHECK_EQ_INT(autotvm_import(s, tpath("notlog.txt"), "x", &st), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "notlog.txt:3: not an AutoTVM log") != NULL);
	write_file(tpath("gz.log"), conv_line, 1);
	CHECK_EQ_INT(autotvm_import(s, tpath("gz.log"), "x", &st), TK_EINVAL);
	CHECK_EQ_INT(autotvm_import(s, tpath("absent.log"), "x", &st), TK_EIO);
	CHECK_EQ_INT(qint(s, "SELECT count(*) FROM run"), 1);
	store_close(s);
}

UNIT_MAIN(test_custom_text_index, test_custom_bad, test_custom_json, test_kt_small, test_kt_a100,
          test_autotvm_roundtrip, test_autotvm_foreign)
