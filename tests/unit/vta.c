/*
 * The simulated VTA accelerator (lib/vta) and its target: specs and keys,
 * the space, the compiler's overflow errors, the simulator's results
 * against the reference interpreter, hazards and deadlocks from token
 * mistakes, the cycle model's monotonicity, and the stats (hidden
 * features).
 */
#include <stdlib.h>
#include <string.h>

#include "base/meas.h"
#include "base/target.h"
#include "task/ref.h"
#include "vta/vta.h"
#include "unit.h"

/* A task on a vta-sim target with its inputs, packed inputs and expected
 * output. */
typedef struct fixture {
	tk_target tg;
	te_prog *p;
	vta_shape sh;
	sp_space *sp;
	float *in[2];
	int8_t *inp, *wgt, *expect, *out;
	size_t ninp, nwgt, nout;
} fixture;

static int fixture_open_data(fixture *f, const char *task, const char *target, int data)
{
	memset(f, 0, sizeof *f);
	if (tk_target_parse(target, &f->tg) || te_task_parse(task, &f->p) ||
	    vta_shape_from_prog(f->p, &f->tg.vta, &f->sh) || vta_space_create(&f->sh, &f->sp)) {
		fprintf(stderr, "%s on %s: %s\n", task, target, tk_errmsg());
		return -1;
	}
	if (!data)
		return 0;
	const te_tensor *o = &f->p->tensor[f->p->output];
	double *ref = malloc(sizeof *ref * (size_t)o->size);
	double *abs = malloc(sizeof *abs * (size_t)o->size);
	for (int i = 0; i < 2; i++)
		f->in[i] = malloc(sizeof(float) * (size_t)f->p->tensor[f->p->input[i]].size);
	vta_random_inputs(f->p, &f->tg.vta, 7, f->in);
	CHECK_EQ_INT(ref_compute(f->p, (const float *const *)f->in, ref, abs), TK_OK);
	f->expect = malloc((size_t)o->size);
	vta_expect(&f->sh, ref, f->expect);
	free(ref);
	free(abs);
	CHECK_EQ_INT(vta_pack(&f->tg.vta, &f->sh, (const float *const *)f->in, &f->inp, &f->ninp,
	                      &f->wgt, &f->nwgt), TK_OK);
	f->nout = vta_out_bytes(&f->tg.vta, &f->sh);
	f->out = malloc(f->nout);
	return 0;
}

/* With inputs, packed inputs and the expected output. */
static int fixture_open(fixture *f, const char *task, const char *target)
{
	return fixture_open_data(f, task, target, 1);
}

static void fixture_close(fixture *f)
{
	for (int i = 0; i < 2; i++)
		free(f->in[i]);
	free(f->inp);
	free(f->wgt);
	free(f->expect);
	free(f->out);
	sp_space_free(f->sp);
	te_prog_free(f->p);
}

/* Lower and run sc; returns the status (compiler's or simulator's) and, if
 * it ran, the number of wrong outputs in *nbad and the result in *r. */
static int run_sched(fixture *f, const vta_sched *sc, unsigned flags, int64_t *nbad, vta_result *r)
{
	vta_prog *prog;
	vta_result scratch;
	int status;
	char msg[256];
	if (!r)
		r = &scratch;
	memset(r, 0, sizeof *r);
	*nbad = -1;
	CHECK_EQ_INT(vta_lower(&f->tg.vta, &f->sh, sc, flags, &prog, NULL, &status, msg, sizeof msg),
	             TK_OK);
	if (status)
		return status;
	memset(f->out, 0x55, f->nout);
	CHECK_EQ_INT(vta_run(&f->tg.vta, &f->sh, prog, f->inp, f->wgt, f->out, r), TK_OK);
	*nbad = vta_check(&f->tg.vta, &f->sh, f->out, f->expect, msg, sizeof msg);
	vta_prog_free(prog);
	return r->status;
}

TEST(test_target_specs)
{
	tk_target t;
	CHECK_EQ_INT(tk_target_parse("vta-sim:preset=zcu102", &t), TK_OK);
	CHECK_EQ_INT(t.kind, TK_TARGET_VTA_SIM);
	CHECK(t.flags & TK_TARGET_SIMULATED);
	CHECK(!(t.flags & TK_TARGET_EXPORTS));
	CHECK(!strncmp(t.key, "vta-sim|simulated|zcu102 300MHz", 31));
	CHECK(strstr(t.key, "|LOG_UOP_BUFF_SIZE=16|LOG_INP_BUFF_SIZE=16|LOG_WGT_BUFF_SIZE=19|"
	                    "LOG_ACC_BUFF_SIZE=18|") != NULL);
	CHECK_EQ_STR(t.spec, "vta-sim:preset=zcu102");
	/* the paper's table: 4096 input, 2048 weight, 4096 accumulator entries */
	CHECK_EQ_INT(t.vta.inp_depth, 4096);
	CHECK_EQ_INT(t.vta.wgt_depth, 2048);
	CHECK_EQ_INT(t.vta.acc_depth, 4096);
	CHECK_EQ_INT(t.vta.uop_depth, 16384);
	char zkey[640];
	snprintf(zkey, sizeof zkey, "%s", t.key);

	/* TVM's defaults, and an override that makes it distinct hardware */
	CHECK_EQ_INT(tk_target_parse("vta-sim", &t), TK_OK);
	CHECK_EQ_STR(t.spec, "vta-sim:preset=default");
	CHECK_EQ_INT(t.vta.inp_depth, 2048);
	CHECK_EQ_INT(t.vta.wgt_depth, 1024);
	CHECK_EQ_INT(t.vta.acc_depth, 2048);
	CHECK_EQ_INT(tk_target_parse("vta-sim:LOG_BLOCK=3,preset=zcu102", &t), TK_OK);
	CHECK_EQ_STR(t.spec, "vta-sim:preset=zcu102,LOG_BLOCK=3");
	CHECK(strcmp(t.key, zkey) != 0);
	CHECK_EQ_INT(tk_target_parse("vta-sim:preset=zcu102,LOG_BLOCK=4", &t), TK_OK);
	CHECK_EQ_STR(t.key, zkey); /* the preset's own value: the same hardware */

	/* bad specs: one-line errors */
	CHECK_EQ_INT(tk_target_parse("vta-sim:preset=zcu104", &t), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "unknown preset 'zcu104'") != NULL);
	CHECK_EQ_INT(tk_target_parse("vta-sim:LOG_FOO=3", &t), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "unknown key 'LOG_FOO'") != NULL);
	CHECK_EQ_INT(tk_target_parse("vta-sim:LOG_BLOCK=9", &t), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "from 2 to 6") != NULL);
	CHECK_EQ_INT(tk_target_parse("vta-sim:LOG_ACC_WIDTH=4", &t), TK_EINVAL);
	CHECK_EQ_INT(tk_target_parse("vta-sim:LOG_WGT_BUFF_SIZE=22", &t), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "on-chip RAM") != NULL);
	CHECK_EQ_INT(tk_target_parse("vta-sim:LOG_BLOCK=6,LOG_WGT_BUFF_SIZE=11", &t), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "holds no weight entry") != NULL);
	CHECK_EQ_INT(tk_target_parse("vta-sim:preset=zcu102,preset=default", &t), TK_EINVAL);
	CHECK_EQ_INT(tk_target_parse("vta-sim:LOG_BLOCK", &t), TK_EINVAL);
	CHECK_EQ_INT(tk_target_parse("vta-simx", &t), TK_EINVAL);
	CHECK(strchr(tk_errmsg(), '\n') == NULL);
}

TEST(test_space)
{
	fixture f;
	if (fixture_open_data(&f, "conv2d:c=64,h=56,w=56,k=64,pad=1", "vta-sim:preset=zcu102", 0)) {
		CHECK(0);
		return;
	}
	/* TVM's knobs; every tile height and width (56), divisors of 4 blocks
	 * (3), threads (2) */
	CHECK_EQ_INT(f.sp->nknob, 7);
	CHECK_EQ_INT(f.sp->size, 1 * 56 * 56 * 3 * 3 * 2 * 2);
	CHECK(f.sp->prog == NULL);
	sp_config c;
	CHECK_EQ_INT(sp_parse(f.sp, "tile_b=1x1;tile_h=4x14;tile_w=2x28;tile_ci=2x2;tile_co=1x4;"
	                            "oc_nthread=2;h_nthread=1", &c), TK_OK);
	vta_sched sc;
	vta_sched_from_config(f.sp, &c, &sc);
	CHECK_EQ_INT(sc.th, 14);
	CHECK_EQ_INT(sc.tw, 28);
	CHECK_EQ_INT(sc.tci, 2);
	CHECK_EQ_INT(sc.tco, 4);
	CHECK_EQ_INT(sc.oc_threads, 2);
	CHECK_EQ_INT(sc.h_threads, 1);
	tk_sb sb;
	tk_sb_init(&sb);
	sp_format(&sb, f.sp, &c);
	CHECK_EQ_STR(sb.s, "tile_b=1x1;tile_h=4x14;tile_w=2x28;tile_ci=2x2;tile_co=1x4;"
	                   "oc_nthread=2;h_nthread=1");
	tk_sb_free(&sb);
	/* a space without a program names itself in errors (this crashed) */
	CHECK_EQ_INT(sp_parse(f.sp, "tile_x=1x56", &c), TK_EINVAL);
	CHECK(strstr(tk_errmsg(), "unknown knob 'tile_x' for this space") != NULL);
	CHECK_EQ_INT(sp_parse(f.sp, "tile_h=3x19", &c), TK_EINVAL);
	/* CPU configurations do not parse here, nor these in the CPU space */
	CHECK_EQ_INT(sp_parse(f.sp, "tile_f=1x4x16;order=0", &c), TK_EINVAL);
	fixture_close(&f);

	te_prog *p;
	vta_shape sh;
	tk_target t;
	CHECK_EQ_INT(tk_target_parse("vta-sim", &t), TK_OK);
	CHECK_EQ_INT(te_task_parse("depthwise_conv2d:c=16,h=8,w=8", &p), TK_OK);
	CHECK_EQ_INT(vta_shape_from_prog(p, &t.vta, &sh), TK_EUNSUPP);
	te_prog_free(p);
}

/* Every configuration of small tasks, with dummy tiles (tokens always
 * paired): each is either refused by the compiler for an overflow or runs
 * without a hazard and computes the reference's output exactly. */
static void check_all(const char *task, const char *target, int *nvalid)
{
	fixture f;
	*nvalid = 0;
	if (fixture_open(&f, task, target)) {
		CHECK(0);
		return;
	}
	for (uint64_t i = 0; i < f.sp->size; i++) {
		sp_config c;
		vta_sched sc;
		int64_t nbad;
		vta_result r;
		sp_from_index(f.sp, i, &c);
		vta_sched_from_config(f.sp, &c, &sc);
		int st = run_sched(&f, &sc, VTA_LOWER_DUMMY_TILES, &nbad, &r);
		if (st == VTA_INP_OVERFLOW || st == VTA_WGT_OVERFLOW || st == VTA_ACC_OVERFLOW)
			continue;
		if (st != VTA_OK || nbad != 0) {
			tk_sb sb;
			tk_sb_init(&sb);
			sp_format(&sb, f.sp, &c);
			fprintf(stderr, "%s [%s] on %s: %s, %lld wrong: %s\n", task, sb.s, target,
			        vta_status_name(st), (long long)nbad, r.msg);
			tk_sb_free(&sb);
		}
		CHECK_EQ_INT(st, VTA_OK);
		CHECK_EQ_INT(nbad, 0);
		CHECK(r.cycles > 0);
		*nvalid += st == VTA_OK;
	}
	fixture_close(&f);
}

TEST(test_computes_gemm_and_conv)
{
	int n;
	/* a small GEMM: batch 2 x 4 blocks of 4 (block 4 makes several) */
	check_all("dense:m=4,n=12,k=20", "vta-sim:preset=default,LOG_BATCH=1,LOG_BLOCK=2", &n);
	CHECK(n > 0);
	check_all("dense_relu:m=3,n=16,k=32", "vta-sim", &n);
	CHECK(n > 0);
	/* convolutions: padding, stride, channels padded to whole blocks */
	check_all("conv2d:c=8,h=6,w=6,k=8,pad=1", "vta-sim:LOG_BLOCK=2", &n);
	CHECK(n > 0);
	check_all("conv2d:c=6,h=7,w=9,k=5,r=3,s=1,stride=2,pad=1", "vta-sim:LOG_BLOCK=2", &n);
	CHECK(n > 0);
	check_all("conv2d:c=16,h=8,w=8,k=32,r=1,s=1", "vta-sim:preset=zcu102", &n);
	CHECK(n > 0);
}

TEST(test_overflow)
{
	fixture f;
	if (fixture_open_data(&f, "conv2d:c=64,h=56,w=56,k=64,pad=1", "vta-sim:preset=zcu102", 0)) {
		CHECK(0);
		return;
	}
	/* the whole 56 x 56 image of 4 channel blocks: 4 x 58 x 58 > 4096 */
	vta_sched sc = { 1, 56, 56, 4, 1, 1, 1 };
	vta_stats st;
	int status;
	char msg[256];
	vta_prog *prog;
	CHECK_EQ_INT(vta_lower(&f.tg.vta, &f.sh, &sc, 0, &prog, &st, &status, msg, sizeof msg), TK_OK);
	CHECK_EQ_INT(status, VTA_INP_OVERFLOW);
	CHECK(prog == NULL);
	CHECK(!strncmp(msg, "inp-overflow: ", 14));
	CHECK_EQ_INT(vta_status_meas(status), MEAS_COMPILE_DEVICE);
	CHECK_EQ_INT(st.used[VTA_BUF_INP], 4 * 58 * 58);
	CHECK(st.occupancy[VTA_BUF_INP] > 1);
	/* half the rows fit one thread, not two */
	vta_sched half = { 1, 28, 28, 4, 1, 1, 1 };
	CHECK_EQ_INT(vta_lower(&f.tg.vta, &f.sh, &half, VTA_LOWER_STATS_ONLY, NULL, &st, &status,
	                       NULL, 0), TK_OK);
	CHECK_EQ_INT(status, VTA_OK);
	half.h_threads = 2;
	CHECK_EQ_INT(vta_lower(&f.tg.vta, &f.sh, &half, VTA_LOWER_STATS_ONLY, NULL, &st, &status,
	                       NULL, 0), TK_OK);
	CHECK_EQ_INT(status, VTA_INP_OVERFLOW);
	/* boundary tiles: 56 rows in tiles of 40 leave 16 and 24 dummy rows,
	 * more padding than a LOAD's 4-bit field holds; tiles of 20 leave 4 */
	vta_sched tall = { 1, 40, 4, 1, 1, 1, 1 };
	CHECK_EQ_INT(vta_lower(&f.tg.vta, &f.sh, &tall, 0, &prog, &st, &status, msg, sizeof msg),
	             TK_OK);
	CHECK_EQ_INT(status, VTA_ISA_LIMIT);
	CHECK(!strncmp(msg, "isa-limit: ", 11));
	CHECK_EQ_INT(st.th_last, 16);
	tall.th = 20;
	CHECK_EQ_INT(vta_lower(&f.tg.vta, &f.sh, &tall, 0, &prog, &st, &status, msg, sizeof msg),
	             TK_OK);
	CHECK_EQ_INT(status, VTA_OK);
	CHECK_EQ_INT(st.th_last, 16);
	CHECK_EQ_INT(st.dummy_rows, 4 * 14 * 4); /* 4 rows, 14 column tiles, 4 channel blocks */
	vta_prog_free(prog);
	/* the accumulator: 4 blocks x 56 x 28 > 4096 */
	vta_sched acc = { 1, 56, 28, 1, 4, 1, 1 };
	CHECK_EQ_INT(vta_lower(&f.tg.vta, &f.sh, &acc, 0, &prog, &st, &status, msg, sizeof msg),
	             TK_OK);
	CHECK_EQ_INT(status, VTA_ACC_OVERFLOW);
	fixture_close(&f);

	/* a micro-op buffer of 128 micro-ops: a 3x3 kernel over 16 rows of 4
	 * channel blocks has 576 */
	if (fixture_open(&f, "conv2d:c=16,h=16,w=16,k=64,pad=1", "vta-sim:LOG_UOP_BUFF_SIZE=9")) {
		CHECK(0);
		return;
	}
	vta_sched big = { 1, 16, 1, 1, 4, 1, 1 };
	CHECK_EQ_INT(vta_lower(&f.tg.vta, &f.sh, &big, 0, &prog, &st, &status, msg, sizeof msg),
	             TK_OK);
	CHECK_EQ_INT(status, VTA_UOP_OVERFLOW);
	CHECK(!strncmp(msg, "uop-overflow: ", 14));
	/* kernels that fit one at a time are reloaded, and compute right */
	vta_sched reload = { 1, 4, 4, 1, 2, 2, 2 };
	int64_t nbad;
	CHECK_EQ_INT(vta_lower(&f.tg.vta, &f.sh, &reload, 0, &prog, &st, &status, msg, sizeof msg),
	             TK_OK);
	CHECK_EQ_INT(status, VTA_OK);
	CHECK(st.uops > f.tg.vta.uop_depth);
	CHECK(st.uop_loads > 1);
	vta_prog_free(prog);
	CHECK_EQ_INT(run_sched(&f, &reload, 0, &nbad, NULL), VTA_OK);
	CHECK_EQ_INT(nbad, 0);
	fixture_close(&f);
}

/* Remove flag bit from the first instruction of op that has it. */
static int drop_flag(vta_prog *p, int op, unsigned bit, int64_t skip)
{
	for (int64_t i = 0; i < p->n; i++)
		if (p->insn[i].op == op && (p->insn[i].dep & bit) && skip-- == 0) {
			p->insn[i].dep &= (uint8_t)~bit;
			return 1;
		}
	return 0;
}

TEST(test_hazards_and_deadlocks)
{
	fixture f;
	if (fixture_open(&f, "conv2d:c=32,h=12,w=12,k=48,pad=1", "vta-sim:LOG_BLOCK=3")) {
		CHECK(0);
		return;
	}
	/* 6 output channel blocks in tiles of 2: 3 tiles for 2 threads, the
	 * last round short. The compiler drops the absent thread's tokens: the
	 * simulator finds the race. Dummy tiles keep the tokens paired. */
	vta_sched sc = { 1, 4, 6, 2, 2, 1, 2 };
	vta_result r;
	vta_stats st;
	int64_t nbad;
	CHECK_EQ_INT(vta_stats_of(&f.tg.vta, &f.sh, &sc, &st), TK_OK);
	CHECK_EQ_INT(st.uneven, 1);
	CHECK_EQ_INT(run_sched(&f, &sc, 0, &nbad, &r), VTA_HAZARD);
	CHECK(!strncmp(r.msg, "hazard: ", 8));
	CHECK_EQ_INT(vta_status_meas(VTA_HAZARD), MEAS_WRONG_ANSWER);
	CHECK_EQ_INT(run_sched(&f, &sc, VTA_LOWER_DUMMY_TILES, &nbad, &r), VTA_OK);
	CHECK_EQ_INT(nbad, 0);
	/* an even split needs no dummy: valid as compiled */
	vta_sched even = { 1, 4, 6, 2, 3, 1, 2 };
	CHECK_EQ_INT(run_sched(&f, &even, 0, &nbad, &r), VTA_OK);
	CHECK_EQ_INT(nbad, 0);

	/* faults injected into a valid program of two threads */
	vta_prog *prog;
	int status;
	char msg[256];
	CHECK_EQ_INT(vta_lower(&f.tg.vta, &f.sh, &even, 0, &prog, NULL, &status, msg, sizeof msg),
	             TK_OK);
	CHECK_EQ_INT(status, VTA_OK);
	/* a GEMM that does not wait for its loads: it reads inputs being written */
	CHECK(drop_flag(prog, VTA_OP_GEMM, VTA_POP_PREV, 3));
	/* ... and the matching push, so that the queues stay balanced */
	CHECK(drop_flag(prog, VTA_OP_LOAD, VTA_PUSH_NEXT, 3));
	memset(f.out, 0, f.nout);
	CHECK_EQ_INT(vta_run(&f.tg.vta, &f.sh, prog, f.inp, f.wgt, f.out, &r), TK_OK);
	CHECK_EQ_INT(r.status, VTA_HAZARD);
	CHECK(r.races > 0);
	CHECK(strstr(r.msg, "no dependence token") != NULL);
	vta_prog_free(prog);

	/* a pop that nothing pushes: the compute module waits forever */
	CHECK_EQ_INT(vta_lower(&f.tg.vta, &f.sh, &even, 0, &prog, NULL, &status, msg, sizeof msg),
	             TK_OK);
	CHECK(drop_flag(prog, VTA_OP_LOAD, VTA_PUSH_NEXT, 5));
	CHECK_EQ_INT(vta_run(&f.tg.vta, &f.sh, prog, f.inp, f.wgt, NULL, &r), TK_OK);
	CHECK_EQ_INT(r.status, VTA_DEADLOCK);
	CHECK(strstr(r.msg, "compute module waits") != NULL);
	CHECK_EQ_INT(vta_status_meas(VTA_DEADLOCK), MEAS_RUN_TIMEOUT);
	vta_prog_free(prog);

	/* a push nothing pops: left for the next run */
	CHECK_EQ_INT(vta_lower(&f.tg.vta, &f.sh, &even, 0, &prog, NULL, &status, msg, sizeof msg),
	             TK_OK);
	CHECK(drop_flag(prog, VTA_OP_LOAD, VTA_POP_NEXT, 2));
	CHECK_EQ_INT(vta_run(&f.tg.vta, &f.sh, prog, f.inp, f.wgt, NULL, &r), TK_OK);
	CHECK_EQ_INT(r.status, VTA_HAZARD);
	CHECK(r.left[VTA_Q_G2L] == 1 || r.races > 0);
	vta_prog_free(prog);
	fixture_close(&f);
}

/* A program of one DMA (and FINISH) of y rows of x entries. */
static int64_t dma_cycles(const vta_hw *hw, const vta_shape *sh, int op, int buf, int y, int x)
{
	vta_prog p;
	vta_insn in[2];
	vta_result r;
	memset(&p, 0, sizeof p);
	memset(in, 0, sizeof in);
	in[0].op = (uint8_t)op;
	in[0].buf = (uint8_t)buf;
	in[0].y_size = y;
	in[0].x_size = x;
	in[0].x_stride = x;
	in[1].op = VTA_OP_FINISH;
	p.insn = in;
	p.n = 2;
	CHECK_EQ_INT(vta_run(hw, sh, &p, NULL, NULL, NULL, &r), TK_OK);
	CHECK_EQ_INT(r.status, VTA_OK);
	return r.cycles;
}

TEST(test_cycle_model)
{
	fixture f;
	if (fixture_open(&f, "conv2d:c=64,h=28,w=28,k=64,pad=1", "vta-sim:preset=zcu102")) {
		CHECK(0);
		return;
	}
	const vta_hw *hw = &f.tg.vta;
	/* more DMA bytes, more cycles; wider entries (weights), more cycles */
	int64_t a = dma_cycles(hw, &f.sh, VTA_OP_LOAD, VTA_BUF_INP, 4, 16);
	int64_t b = dma_cycles(hw, &f.sh, VTA_OP_LOAD, VTA_BUF_INP, 8, 16);
	int64_t c = dma_cycles(hw, &f.sh, VTA_OP_LOAD, VTA_BUF_INP, 8, 32);
	int64_t d = dma_cycles(hw, &f.sh, VTA_OP_LOAD, VTA_BUF_WGT, 8, 32);
	int64_t e = dma_cycles(hw, &f.sh, VTA_OP_STORE, VTA_BUF_OUT, 8, 64);
	CHECK(a < b && b < c && c < d);
	CHECK(e > c);
	/* a narrower port or a slower clock: more cycles or more seconds */
	tk_target narrow;
	CHECK_EQ_INT(tk_target_parse("vta-sim:preset=default", &narrow), TK_OK);
	CHECK(dma_cycles(&narrow.vta, &f.sh, VTA_OP_LOAD, VTA_BUF_INP, 8, 32) - narrow.vta.dma_latency >
	      c - hw->dma_latency);
	CHECK(vta_seconds(&narrow.vta, 1000) > vta_seconds(hw, 1000));

	/* larger tiles move fewer bytes (less halo, fewer weight reloads) and
	 * take fewer cycles; the GEMM work is the same */
	vta_sched small = { 1, 2, 2, 1, 1, 1, 1 }, large = { 1, 7, 14, 2, 2, 1, 1 };
	vta_stats s1, s2;
	vta_result r1, r2;
	int64_t nbad;
	CHECK_EQ_INT(vta_stats_of(hw, &f.sh, &small, &s1), TK_OK);
	CHECK_EQ_INT(vta_stats_of(hw, &f.sh, &large, &s2), TK_OK);
	CHECK(s1.dma_bytes[VTA_BUF_INP] > s2.dma_bytes[VTA_BUF_INP]);
	CHECK_EQ_INT(s1.gemm_steps, s2.gemm_steps);
	CHECK_EQ_INT(run_sched(&f, &small, 0, &nbad, &r1), VTA_OK);
	CHECK_EQ_INT(run_sched(&f, &large, 0, &nbad, &r2), VTA_OK);
	CHECK(r1.cycles > r2.cycles);
	/* the core is busy at least one cycle per micro-op step */
	CHECK(r2.busy[VTA_MOD_COMPUTE] >= s2.gemm_steps);
	CHECK(r2.cycles >= r2.busy[VTA_MOD_COMPUTE]);
	/* two virtual threads overlap loads with the other's GEMMs */
	vta_sched one = { 1, 7, 14, 2, 2, 1, 1 }, two = { 1, 7, 14, 2, 2, 2, 1 };
	CHECK_EQ_INT(run_sched(&f, &one, 0, &nbad, &r1), VTA_OK);
	CHECK_EQ_INT(run_sched(&f, &two, 0, &nbad, &r2), VTA_OK);
	CHECK_EQ_INT(nbad, 0);
	CHECK(r2.cycles < r1.cycles);
	fixture_close(&f);
}

TEST(test_stats)
{
	fixture f;
	if (fixture_open_data(&f, "conv2d:c=64,h=28,w=28,k=128,pad=1", "vta-sim:preset=zcu102", 0)) {
		CHECK(0);
		return;
	}
	vta_sched sc = { 1, 7, 14, 2, 4, 2, 2 };
	vta_stats st, st2;
	vta_prog *prog;
	int status;
	CHECK_EQ_INT(vta_lower(&f.tg.vta, &f.sh, &sc, 0, &prog, &st, &status, NULL, 0), TK_OK);
	CHECK_EQ_INT(status, VTA_OK);
	CHECK_EQ_INT(st.threads, 4);
	CHECK_EQ_INT(st.uneven, 0);
	/* a thread's input tile: 2 blocks x 9 x 16 entries */
	CHECK_EQ_INT(st.used[VTA_BUF_INP], 4 * 2 * 9 * 16);
	CHECK_EQ_INT(st.used[VTA_BUF_WGT], 4 * 4 * 2 * 9);
	CHECK_EQ_INT(st.used[VTA_BUF_ACC], 4 * 4 * 7 * 14);
	CHECK_NEAR(st.occupancy[VTA_BUF_INP], 4 * 2 * 9 * 16 / 4096.0, 1e-12);
	int64_t count[VTA_NOP] = { 0 }, bytes = 0;
	for (int64_t i = 0; i < prog->n; i++) {
		count[prog->insn[i].op]++;
		if (prog->insn[i].op == VTA_OP_LOAD && prog->insn[i].buf == VTA_BUF_WGT)
			bytes += (int64_t)prog->insn[i].y_size * prog->insn[i].x_size * f.tg.vta.wgt_elem;
	}
	for (int op = 0; op < VTA_NOP; op++)
		CHECK_EQ_INT(st.insns[op], count[op]);
	CHECK_EQ_INT(st.dma_bytes[VTA_BUF_WGT], bytes);
	/* every block product once (28 x 28 x 8 x 4 blocks x 9), and a reset
	 * of each output entry (28 x 28 x 8) */
	CHECK_EQ_INT(st.gemm_steps, 28 * 28 * 8 * 4 * 9 + 28 * 28 * 8);
	CHECK_EQ_INT(st.tokens[VTA_Q_L2G], st.tokens[VTA_Q_G2L] + 4);
	CHECK_EQ_INT(st.tiles, 4 * 2 * 2);
	/* the stats alone are the same, without a program */
	CHECK_EQ_INT(vta_stats_of(&f.tg.vta, &f.sh, &sc, &st2), TK_OK);
	CHECK(!memcmp(&st, &st2, sizeof st));
	/* ... and as a named vector */
	float x[VTA_NSTAT];
	vta_stats_vector(&st, x);
	for (int i = 0; i < VTA_NSTAT; i++) {
		if (!strcmp(vta_stat_names[i], "threads"))
			CHECK_NEAR(x[i], 4, 0);
		if (!strcmp(vta_stat_names[i], "used_inp"))
			CHECK_NEAR(x[i], 4 * 2 * 9 * 16, 0);
		if (!strcmp(vta_stat_names[i], "tokens_g2l"))
			CHECK_NEAR(x[i], (double)st.tokens[VTA_Q_G2L], 0);
		if (!strcmp(vta_stat_names[i], "dummy_rows"))
			CHECK_NEAR(x[i], 0, 0);
	}
	CHECK_EQ_STR(vta_stat_names[VTA_NSTAT - 1], "dummy_rows");
	vta_result r;
	CHECK_EQ_INT(vta_run(&f.tg.vta, &f.sh, prog, f.inp, f.wgt, NULL, &r), TK_OK);
	CHECK_EQ_INT(r.status, VTA_OK);
	tk_sb sb;
	tk_sb_init(&sb);
	vta_prog_print(&sb, prog, 3);
	CHECK(strstr(sb.s, "load uop") != NULL && strstr(sb.s, "more") != NULL);
	tk_sb_free(&sb);
	vta_prog_free(prog);
	fixture_close(&f);
}

UNIT_MAIN(test_target_specs, test_space, test_computes_gemm_and_conv, test_overflow,
          test_hazards_and_deadlocks, test_cycle_model, test_stats)
