/*
 * Generated code against the reference: random configurations of every
 * operator, on awkward shapes (primes, ones, tiles that do not divide), are
 * built with the system compiler, run and checked by the measurement
 * harness. Any wrong answer, crash or build failure fails the test.
 */
#include <stdlib.h>
#include <unistd.h>

#include "codegen/kernel.h"
#include "measure/measure.h"
#include "unit.h"

static char cache[64];

/* The naive configuration (or `config` when not NULL) and nrandom random
 * ones of task, built for target and checked against the reference. */
static void check_configs(const char *task, const char *config, int nrandom, const char *target)
{
	ms_task *t;
	tk_target tg;
	ms_opts o;
	int rc = ms_task_open(task, 1, &t);
	if (rc) {
		fprintf(stderr, "%s: %s\n", task, tk_errmsg());
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(tk_target_parse(target, &tg), TK_OK);
	ms_opts_default(&o);
	o.build_adapt = 0; /* every configuration must build, however slowly */
	o.cache_dir = cache;
	o.run.number = 1;
	o.run.repeat = 1;
	o.run.warmup = 0;
	int n = nrandom + 1;
	sp_config *c = calloc((size_t)n, sizeof *c);
	ms_result *r = calloc((size_t)n, sizeof *r);
	tk_rng rng;
	tk_rng_seed(&rng, 42, tk_hash64(task, strlen(task), 0));
	sp_naive(t->space, &c[0]);
	if (config && sp_parse(t->space, config, &c[0])) {
		fprintf(stderr, "%s: %s\n", config, tk_errmsg());
		CHECK(0);
	}
	for (int i = 1; i < n; i++)
		sp_sample(t->space, &rng, &c[i]);
	rc = ms_measure(t, &tg, &o, c, n, r);
	CHECK_EQ_INT(rc, TK_OK);
	for (int i = 0; rc == TK_OK && i < n; i++) {
		if (r[i].error != MEAS_OK)
			fprintf(stderr, "%s [%s] on %s: %s: %s\n", task, r[i].config, target,
			        meas_error_name(r[i].error), r[i].msg);
		CHECK_EQ_INT(r[i].error, MEAS_OK);
	}
	ms_results_free(r, n);
	free(r);
	free(c);
	ms_task_free(t);
}

static void check_task(const char *task, int nrandom, const char *target)
{
	check_configs(task, NULL, nrandom, target);
}

TEST(test_dense)
{
	check_task("dense:m=13,n=37,k=11", 10, "native");
	check_task("dense:m=1,n=1,k=1", 2, "native");
	check_task("dense:m=64,n=48,k=32", 8, "native");
}

TEST(test_dense_relu)
{
	check_task("dense_relu:m=7,n=40,k=9", 6, "native");
}

TEST(test_batch_matmul)
{
	check_task("batch_matmul:b=3,m=5,n=17,k=8", 6, "native");
}

TEST(test_conv1d)
{
	check_task("conv1d:c=3,w=23,k=5,r=3,stride=2,pad=1", 6, "native");
	check_task("conv1d_transpose:c=3,w=11,k=4,r=4,stride=3,pad=1", 6, "native");
}

TEST(test_conv2d)
{
	check_task("conv2d:n=2,c=3,h=11,w=7,k=5,r=3,s=2,stride=2,pad=1", 8, "native");
	check_task("conv2d:c=8,h=9,w=9,k=16,r=1,s=1", 4, "native");
}

TEST(test_conv2d_transpose)
{
	check_task("conv2d_transpose:c=3,h=5,w=4,k=2,r=3,s=3,stride=2,pad=1", 6, "native");
}

TEST(test_depthwise)
{
	check_task("depthwise_conv2d:c=5,h=13,w=9,r=3,s=3,stride=2,pad=1", 6, "native");
}

TEST(test_blocked)
{
	check_task("conv2d_nchwc:c=6,h=7,w=5,k=8,cb=3,kb=4,stride=2,pad=1", 8, "native");
	check_task("depthwise_conv2d_nchwc:c=8,h=9,w=7,cb=4,pad=1", 8, "native");
	/* the vectorised block axis is innermost in a padded read: a guarded
	 * vector load */
	check_configs("depthwise_conv2d_nchwc:c=32,h=6,w=6,pad=1",
	              "tile_fo=2x1x1;tile_y=6x1x1;tile_x=2x1x3;tile_fi=1x1x16;tile_ry=1x3;"
	              "tile_rx=1x3;order=0;vec=fi;unroll=0;unroll_explicit=0;pack_I=0;pack_W=0", 0,
	              "native");
}

/* The loop-nest IR (ir = 1) or the C source of task under config for
 * 16-lane (AVX-512) vectors, for the caller to free; NULL if it cannot be
 * built. The text is only read, never compiled, so the target is this CPU's
 * with its vector width set: "cpu:isa=avx512" would be refused on a CPU
 * without AVX-512, and code generation reads no more of the target. */
static char *kernel_text(const char *task, const char *config, int ir)
{
	ms_task *t;
	sp_config c;
	tk_target tg;
	kn_kernel k;
	char *text = NULL;
	if (ms_task_open(task, 1, &t))
		return NULL;
	if (!tk_target_parse("native", &tg))
		tg.vlen = 16;
	if (tg.vlen == 16 && !sp_parse(t->space, config, &c) &&
	    !kn_build(t->space, &c, &tg, ir, &k)) {
		if (ir && k.ir) {
			tk_sb sb;
			tk_sb_init(&sb);
			ir_print(&sb, k.ir);
			text = tk_sb_take(&sb);
		} else if (!ir && k.src) {
			text = k.src;
			k.src = NULL;
		}
		kn_kernel_free(&k);
	}
	ms_task_free(t);
	return text;
}

/* Whether the IR of task under config has a loop "for VAR in " that does not
 * start at 0: a reduction loop tightened to skip the padding. */
static int tightened(const char *task, const char *config, const char *var)
{
	char *ir = kernel_text(task, config, 1), want[64];
	int found = 0;
	if (!ir)
		return -1;
	snprintf(want, sizeof want, "for %s in ", var);
	for (const char *p = ir; (p = strstr(p, want)); p++)
		found |= strncmp(p + strlen(want), "0..", 3) != 0;
	free(ir);
	return found;
}

/* Lines of the IR (ir = 1) or C of task under config that contain needle,
 * -1 if it cannot be built. */
static int count_lines(const char *task, const char *config, int ir, const char *needle)
{
	char *src = kernel_text(task, config, ir), *save;
	int n = 0;
	if (!src)
		return -1;
	for (char *line = strtok_r(src, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		n += strstr(line, needle) != NULL;
	free(src);
	return n;
}

/* Padding rows and columns cost nothing when the accumulator tile has one
 * output row (column): ry (rx) runs over the input's rows only. Checked in
 * the IR and against the reference, packed or not, stride 1 and 2, with
 * explicit unrolling around a loop that starts late. Products with a read
 * of padding known at generation time are not emitted. */
TEST(test_tightened)
{
	const char *t1 = "conv2d_nchwc:c=8,h=7,w=6,k=16,cb=4,kb=8,pad=1";
	const char *t2 = "conv2d_nchwc:c=8,h=8,w=8,k=16,cb=4,kb=8,stride=2,pad=1";
	const char *rows = "tile_fo=2x1x1;tile_y=1x7x1;tile_x=1x2x3;tile_fi=1x1x8;tile_rco=2x1;"
	                   "tile_ry=1x3;tile_rx=1x3;tile_rci=1x4;order=0;vec=fi;unroll=0;"
	                   "unroll_explicit=0;pack_I=0;pack_W=0";
	const char *rows_packed = "tile_fo=2x1x1;tile_y=1x7x1;tile_x=1x2x3;tile_fi=1x1x8;"
	                          "tile_rco=2x1;tile_ry=1x3;tile_rx=1x3;tile_rci=1x4;order=0;"
	                          "vec=fi;unroll=512;unroll_explicit=1;pack_I=1;pack_W=1";
	const char *cols = "tile_fo=2x1x1;tile_y=1x1x7;tile_x=1x6x1;tile_fi=1x1x8;tile_rco=2x1;"
	                   "tile_ry=1x3;tile_rx=1x3;tile_rci=1x4;order=0;vec=fi;unroll=0;"
	                   "unroll_explicit=0;pack_I=1;pack_W=0";
	const char *stride2 = "tile_fo=2x1x1;tile_y=1x4x1;tile_x=1x2x2;tile_fi=1x1x8;"
	                      "tile_rco=2x1;tile_ry=3x1;tile_rx=1x3;tile_rci=1x4;order=0;vec=fi;"
	                      "unroll=512;unroll_explicit=1;pack_I=1;pack_W=0";
	CHECK_EQ_INT(tightened(t1, rows, "ry_1"), 1);
	CHECK_EQ_INT(tightened(t1, rows, "rx_1"), 0);
	CHECK_EQ_INT(tightened(t1, rows_packed, "ry_1"), 1);
	CHECK_EQ_INT(tightened(t1, cols, "rx_1"), 1);
	CHECK_EQ_INT(tightened(t1, cols, "ry_1"), 0);
	CHECK_EQ_INT(tightened(t2, stride2, "ry_0"), 1);
	/* a tile of 4 rows: the bounds would differ between its rows */
	CHECK_EQ_INT(tightened(t2, "tile_fo=2x1x1;tile_y=1x1x4;tile_x=1x2x2;tile_fi=1x1x8;"
	                           "tile_rco=2x1;tile_ry=1x3;tile_rx=1x3;tile_rci=1x4;order=0;"
	                           "vec=fi;unroll=0;unroll_explicit=0;pack_I=0;pack_W=0", "ry_1"), 0);
	/* no padding, nothing to skip */
	CHECK_EQ_INT(tightened("conv2d_nchwc:c=8,h=7,w=6,k=16,cb=4,kb=8",
	                       "tile_fo=2x1x1;tile_y=1x5x1;tile_x=1x2x2;tile_fi=1x1x8;tile_rco=2x1;"
	                       "tile_ry=1x3;tile_rx=1x3;tile_rci=1x4;order=0;vec=fi;unroll=0;"
	                       "unroll_explicit=0;pack_I=0;pack_W=0", "ry_1"), 0);
	check_configs(t1, rows, 0, "native");
	check_configs(t1, rows_packed, 0, "native");
	check_configs(t1, cols, 0, "native");
	check_configs(t2, stride2, 0, "native");

	/* A whole row per tile with its 3 column taps unrolled: 21 products, of
	 * which the first column's left tap and the last one's right tap read
	 * padding and are not emitted. (The 3-step ry loop over that small body
	 * is left whole for the compiler to unroll.) */
	const char *dw = "depthwise_conv2d_nchwc:c=16,h=7,w=7,cb=16,pad=1";
	const char *dwc = "tile_y=1x7x1;tile_x=1x1x7;tile_fi=1x1x16;tile_ry=3x1;tile_rx=1x3;order=0;"
	                  "vec=fi;unroll=512;unroll_explicit=1;pack_I=0;pack_W=0";
	CHECK_EQ_INT(count_lines(dw, dwc, 0, "_16 += "), 19);
	CHECK_EQ_INT(tightened(dw, dwc, "ry_0"), 0);
	check_configs(dw, dwc, 0, "native");
}

/* A register tile that does not divide its axis (6 rows of 70) is computed
 * whole, reading the zeros of a packed panel's padding, and only its
 * write-back is guarded, so the accumulators stay registers. Checked with
 * a partial sum reloaded from the output (order 1), with the padded axis
 * vectorised (lane-by-lane guarded stores) and unpacked (guarded loads).
 * A convolution's input packed as a window along the tiled axis is made
 * long enough for the whole last tile; unpacked, its reads are guarded. */
TEST(test_whole_tiles)
{
	const char *t = "dense_relu:m=70,n=44,k=9";
	const char *rows = "tile_i=3x4x6;tile_j=1x11x4;tile_r=1x9;order=0;vec=j;unroll=512;"
	                   "unroll_explicit=1;pack_A=1;pack_B=1";
	const char *partial = "tile_i=3x4x6;tile_j=1x11x4;tile_r=3x3;order=1;vec=j;unroll=512;"
	                      "unroll_explicit=1;pack_A=1;pack_B=1";
	const char *lanes = "tile_i=3x4x6;tile_j=1x11x4;tile_r=1x9;order=0;vec=i;unroll=512;"
	                    "unroll_explicit=1;pack_A=1;pack_B=0";
	const char *cols = "tile_i=1x1x70;tile_j=2x2x16;tile_r=1x9;order=0;vec=i;unroll=0;"
	                   "unroll_explicit=0;pack_A=0;pack_B=0";
	CHECK_EQ_INT(count_lines(t, rows, 1, "for i_2 in 0..6 unroll"), 3);
	CHECK_EQ_INT(count_lines(t, rows, 1, "if (0 <= "), 1);
	CHECK_EQ_INT(count_lines(t, partial, 1, "? C["), 1);
	char *src = kernel_text(t, rows, 0);
	CHECK(src && !strstr(src, "C_acc"));
	free(src);
	for (const char *const *c = (const char *const[]){ rows, partial, lanes, cols, NULL }; *c; c++)
		check_configs(t, *c, 0, "native");
	/* the input's columns are packed as a window, not tiled by x: the
	 * window runs to the whole last tile (8 columns of 7, 10 with the
	 * halo), and no tile is cut short */
	const char *conv = "conv2d_nchwc:c=8,h=5,w=7,k=16,cb=4,kb=8,pad=1";
	const char *xtile = "tile_fo=2x1x1;tile_y=5x1x1;tile_x=2x1x4;tile_fi=1x1x8;tile_rco=2x1;"
	                    "tile_ry=1x3;tile_rx=1x3;tile_rci=1x4;order=0;vec=fi;unroll=0;"
	                    "unroll_explicit=0;pack_I=1;pack_W=0";
	CHECK_EQ_INT(count_lines(conv, xtile, 1, "for x_2 in 0..min("), 0);
	src = kernel_text(conv, xtile, 0);
	CHECK(src && strstr(src, "< 10; "));
	free(src);
	check_configs(conv, xtile, 0, "native");
	check_configs(conv, "tile_fo=2x1x1;tile_y=5x1x1;tile_x=2x1x4;tile_fi=1x1x8;tile_rco=2x1;"
	                    "tile_ry=1x3;tile_rx=1x3;tile_rci=1x4;order=0;vec=fi;unroll=0;"
	                    "unroll_explicit=0;pack_I=0;pack_W=0", 0, "native");
}

/* The unroll knob's 1 keeps the loops around a register tile's FMAs
 * rolled, where GCC would unroll the kernel row's taps and spill the
 * accumulators of a tile that fills the register file; 0 leaves them to
 * GCC. A tile of 6 of 56 columns pads the last tile by 4 (allowed: at most
 * an eighth), one of 24 by 16 (not a candidate). */
TEST(test_rolled_tiles)
{
	const char *t = "conv2d:c=8,h=5,w=7,k=64,pad=1";
	const char *rolled = "tile_f=1x1x64;tile_y=5x1x1;tile_x=1x1x7;tile_rc=1x8;tile_ry=1x3;"
	                     "tile_rx=1x3;order=0;vec=f;unroll=1;unroll_explicit=1;pack_I=1;pack_W=1";
	const char *left = "tile_f=1x1x64;tile_y=5x1x1;tile_x=1x1x7;tile_rc=1x8;tile_ry=1x3;"
	                   "tile_rx=1x3;order=0;vec=f;unroll=0;unroll_explicit=1;pack_I=1;pack_W=1";
	CHECK(count_lines(t, rolled, 0, "#pragma GCC unroll 1") >= 3);
	CHECK_EQ_INT(count_lines(t, left, 0, "#pragma GCC unroll 1"), 0);
	check_configs(t, rolled, 0, "native");

	ms_task *w;
	sp_config c;
	CHECK(!ms_task_open("conv2d:c=8,h=56,w=56,k=16,pad=1", 1, &w));
	CHECK(!sp_parse(w->space, "tile_f=1x1x16;tile_y=56x1x1;tile_x=10x1x6;tile_rc=1x8;"
	                          "tile_ry=1x3;tile_rx=1x3;order=0;vec=f;unroll=0;"
	                          "unroll_explicit=1;pack_I=1;pack_W=1", &c));
	CHECK(sp_parse(w->space, "tile_f=1x1x16;tile_y=56x1x1;tile_x=3x1x24;tile_rc=1x8;"
	                         "tile_ry=1x3;tile_rx=1x3;order=0;vec=f;unroll=0;"
	                         "unroll_explicit=1;pack_I=1;pack_W=1", &c));
	ms_task_free(w);
	check_configs("conv2d:c=8,h=56,w=56,k=16,pad=1",
	              "tile_f=1x1x16;tile_y=56x1x1;tile_x=10x1x6;tile_rc=1x8;tile_ry=1x3;"
	              "tile_rx=1x3;order=0;vec=f;unroll=0;unroll_explicit=1;pack_I=1;pack_W=1", 0,
	              "native");
}

/* Order 2 puts the outer blocks of the axes the weight depends on
 * outermost, then the reduction blocks, and packs the weight inside them:
 * the panel one iteration reads, in a local buffer (a split dimension spans
 * its parts inside the loop, the outer parts index the source). Checked
 * against the reference with tiles that do not divide, on 2 threads (one
 * buffer per thread), with fused outer loops (batch_matmul's b and j), and
 * where the panel would be too large for the stack, the copy is made whole
 * before the nest. */
/* sp_panel of config c of task t, -1 if either does not parse */
static int64_t panel_of(const char *t, const char *c)
{
	te_prog *p;
	sp_space *s;
	sp_config cfg;
	int64_t n = -1;
	if (te_task_parse(t, &p))
		return -1;
	if (!sp_space_create(p, &s)) {
		if (!sp_parse(s, c, &cfg))
			n = sp_panel(s, &cfg);
		sp_space_free(s);
	}
	te_prog_free(p);
	return n;
}

TEST(test_panels)
{
	const char *t = "dense:m=70,n=44,k=9";
	const char *kc = "tile_i=3x4x6;tile_j=3x2x8;tile_r=3x3;order=2;vec=j;unroll=512;"
	                 "unroll_explicit=1;pack_A=1;pack_B=1";
	const char *all_k = "tile_i=3x4x6;tile_j=3x2x8;tile_r=1x9;order=2;vec=j;unroll=0;"
	                    "unroll_explicit=0;pack_A=0;pack_B=1";
	const char *lanes = "tile_i=3x4x6;tile_j=3x2x8;tile_r=3x3;order=2;vec=i;unroll=0;"
	                    "unroll_explicit=0;pack_A=1;pack_B=1";
	CHECK_EQ_INT(count_lines(t, kc, 1, "alloc B_p0_1[2, 3, 8]"), 1);
	CHECK_EQ_INT(count_lines(t, kc, 1, "buffer work A_p0_0"), 1);
	CHECK_EQ_INT(count_lines(t, kc, 1, "buffer work B"), 0);
	CHECK_EQ_INT(count_lines(t, all_k, 1, "alloc B_p0_1[2, 9, 8]"), 1);
	CHECK_EQ_INT(count_lines(t, lanes, 1, "alloc B_p0_1[2, 3, 8]"), 1);
	/* the space knows the panel lowering makes */
	CHECK_EQ_INT(panel_of(t, kc), 2 * 3 * 8);
	CHECK_EQ_INT(panel_of(t, all_k), 2 * 9 * 8);
	CHECK_EQ_INT(panel_of(t, "tile_i=3x4x6;tile_j=3x2x8;tile_r=3x3;order=0;vec=j;unroll=0;"
	                         "unroll_explicit=0;pack_A=1;pack_B=1"), 0);
	CHECK_EQ_INT(panel_of(t, "tile_i=3x4x6;tile_j=3x2x8;tile_r=3x3;order=2;vec=j;unroll=0;"
	                         "unroll_explicit=0;pack_A=1;pack_B=0"), 0);
	CHECK_EQ_INT(panel_of(t, "tile_i=3x4x6;tile_j=1x11x4;tile_r=1x9;order=2;vec=j;unroll=0;"
	                         "unroll_explicit=0;pack_A=1;pack_B=1"), 0); /* restricts nothing */
	for (const char *const *c = (const char *const[]){ kc, all_k, lanes, NULL }; *c; c++) {
		check_configs(t, *c, 0, "native");
		check_configs(t, *c, 0, "cpu:threads=2");
	}
	const char *bmm = "batch_matmul:b=3,m=5,n=17,k=8";
	const char *bj = "tile_z=3x1x1;tile_i=1x5x1;tile_j=3x1x8;tile_r=2x4;order=2;vec=j;"
	                 "unroll=0;unroll_explicit=0;pack_A=0;pack_B=1";
	CHECK_EQ_INT(count_lines(bmm, bj, 1, "alloc B_p0_1[1, 1, 4, 8]"), 1);
	check_configs(bmm, bj, 0, "native");
	check_configs(bmm, bj, 0, "cpu:threads=2");
	const char *conv = "conv2d_nchwc:c=8,h=5,w=7,k=16,cb=4,kb=8,pad=1";
	const char *c2 = "tile_fo=2x1x1;tile_y=5x1x1;tile_x=2x1x4;tile_fi=1x1x8;tile_rco=2x1;"
	                 "tile_ry=1x3;tile_rx=1x3;tile_rci=1x4;order=2;vec=fi;unroll=0;"
	                 "unroll_explicit=0;pack_I=1;pack_W=1";
	CHECK_EQ_INT(count_lines(conv, c2, 1, "buffer work I_p0_0"), 1);
	CHECK_EQ_INT(count_lines(conv, c2, 1, "alloc W_p0_1"), 1);
	check_configs(conv, c2, 0, "native");
	CHECK_EQ_INT(panel_of(conv, c2), 1 * 1 * 3 * 3 * 4 * 8); /* fo, rco outside */
	/* 1024 x 512 floats: too large for a stack panel */
	CHECK_EQ_INT(count_lines("dense:m=64,n=1024,k=1024", "tile_i=2x1x32;tile_j=2x32x16;"
	                         "tile_r=1x1024;order=2;vec=j;unroll=0;unroll_explicit=0;"
	                         "pack_A=0;pack_B=1", 1, "buffer work B_p0_1"), 1);
	CHECK_EQ_INT(panel_of("dense:m=64,n=1024,k=1024", "tile_i=2x1x32;tile_j=2x32x16;"
	                      "tile_r=1x1024;order=2;vec=j;unroll=0;unroll_explicit=0;"
	                      "pack_A=0;pack_B=1"), 0);
}

/* Whether every "#pragma GCC unroll N" of the C of task under config is
 * followed by a loop of a constant trip count that N divides (no remainder
 * loop for the compiler to build); -1 if it cannot be built, else the
 * number of pragmas, or 0 with *bad set. */
static int pragmas_divide(const char *task, const char *config, int *bad)
{
	char *src = kernel_text(task, config, 0);
	int n = 0;
	*bad = 0;
	if (!src)
		return -1;
	for (const char *p = src; (p = strstr(p, "#pragma GCC unroll ")); p++) {
		long u = strtol(p + 19, NULL, 10), e = 0;
		const char *f = strstr(p, "for (long "), *lt = f ? strstr(f, " < ") : NULL;
		if (lt)
			e = strtol(lt + 3, NULL, 10);
		if (u < 2 || e <= 0 || e % u)
			*bad = 1;
		n++;
	}
	free(src);
	return n;
}

/* Unrolling costs compile time, so the emitter spends it where it makes
 * the kernel faster: with unroll_explicit, the register tile is expanded
 * (its accumulators become named registers) but the loops around it that
 * auto-unroll picks are left to the compiler by a pragma, unless a padding
 * guard depends on them (test_tightened); a pragma's count divides its
 * loop; a tile too large for the expansion budget stays an array. */
TEST(test_unroll_budget)
{
	/* GEMM: a 4 x 16 register tile, its 4-step reduction loop auto-unrolled */
	const char *gemm = "dense:m=64,n=48,k=32";
	const char *gc = "tile_i=4x4x4;tile_j=3x1x16;tile_r=8x4;order=0;vec=j;unroll=512;"
	                 "unroll_explicit=1;pack_A=1;pack_B=1";
	CHECK_EQ_INT(count_lines(gemm, gc, 0, "_acc["), 0);
	CHECK_EQ_INT(count_lines(gemm, gc, 0, "for (long r_1"), 1);
	CHECK(count_lines(gemm, gc, 0, "#pragma GCC unroll 4") >= 1);
	check_configs(gemm, gc, 0, "native");

	/* a 1x1 convolution's 448-float scalar tile with a 4-step reduction:
	 * 966 lines when the reduction was expanded as well */
	const char *c1 = "conv2d:c=64,h=56,w=56,k=128,r=1,s=1,stride=2";
	const char *c1c = "tile_f=4x1x32;tile_y=1x2x14;tile_x=14x2x1;tile_rc=16x4;order=0;vec=x;"
	                  "unroll=64;unroll_explicit=1;pack_I=0;pack_W=0";
	int lines = count_lines(c1, c1c, 0, "");
	CHECK(lines > 0 && lines < 700);

	/* nested pragmas over a gathered 8 x 8 tile: within budget, divisors */
	int bad;
	const char *dw = "depthwise_conv2d:c=144,h=56,w=56,pad=1";
	const char *dwc = "tile_f=18x1x8;tile_y=7x1x8;tile_x=1x7x8;tile_ry=1x3;tile_rx=2x2;"
	                  "order=2;vec=f;unroll=64;unroll_explicit=0;pack_I=0;pack_W=0";
	CHECK(pragmas_divide(dw, dwc, &bad) > 0);
	CHECK_EQ_INT(bad, 0);
	CHECK(count_lines(dw, dwc, 0, "#pragma GCC unroll 8") < 6);
	check_configs("depthwise_conv2d:c=16,h=12,w=9,pad=1", "tile_f=2x1x8;tile_y=2x1x8;"
	              "tile_x=2x1x8;tile_ry=1x3;tile_rx=2x2;order=2;vec=f;unroll=64;"
	              "unroll_explicit=0;pack_I=0;pack_W=0", 0, "native");

	/* 112 accumulators of 6 floats: past the budget, an array */
	const char *c3 = "conv2d:c=64,h=56,w=56,k=64,pad=1";
	const char *c3c = "tile_f=2x6x6;tile_y=4x2x8;tile_x=2x2x14;tile_rc=64x1;tile_ry=1x3;"
	                  "tile_rx=3x1;order=0;vec=f;unroll=0;unroll_explicit=1;pack_I=0;pack_W=1";
	CHECK(count_lines(c3, c3c, 0, "_acc[") > 0);
	CHECK(pragmas_divide(c3, c3c, &bad) >= 0);
	CHECK_EQ_INT(bad, 0);
}

TEST(test_winograd)
{
	check_task("conv2d_winograd:c=3,h=7,w=9,k=4,m=2", 4, "native");
	check_task("conv2d_winograd:c=2,h=10,w=6,k=3,m=4,pad=2", 4, "native");
}

TEST(test_other_targets)
{
	check_task("dense:m=19,n=21,k=5", 4, "cpu:isa=sse2");
	check_task("conv2d:c=3,h=6,w=6,k=4,pad=1", 4, "cpu:threads=2");
}

TEST(test_setup)
{
	snprintf(cache, sizeof cache, "/tmp/tunekit-unit-codegen-XXXXXX");
	CHECK(mkdtemp(cache) != NULL);
}

TEST(test_teardown)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
	CHECK_EQ_INT(system(cmd), 0);
}

UNIT_MAIN(test_setup, test_dense, test_dense_relu, test_batch_matmul, test_conv1d, test_conv2d,
          test_conv2d_transpose, test_depthwise, test_blocked, test_tightened, test_whole_tiles,
          test_rolled_tiles, test_panels, test_unroll_budget, test_winograd, test_other_targets,
          test_teardown)
