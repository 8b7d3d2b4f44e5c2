/*
 * sim: the simulator of vta-sim: the load, compute and store modules run
 * their instructions concurrently, each in program order, synchronised only
 * by the dependence tokens (vta.h). Three passes over a program:
 *
 *   schedule  each module starts an instruction when it has finished the
 *             previous one and every token the instruction pops has been
 *             pushed (tokens pair first-in first-out per queue); it ends
 *             `cycles` later (below) and then pushes. No module can start
 *             its next instruction while some are left: a deadlock. The
 *             program takes as long as its last module; beyond
 *             VTA_WAIT_CYCLES the runtime gives up (a timeout). Tokens left
 *             in a queue at the end would be popped by the next run: a
 *             hazard.
 *   races     vector clocks over the three modules, carried by the tokens,
 *             give the happens-before order; two accesses to one buffer
 *             entry from different modules, one a write, that it does not
 *             order are a race (a hazard), whatever the timing made of it.
 *   function  the instructions execute, whole, in the order the schedule
 *             finishes them, on int8 buffers and int32 accumulators, so a
 *             race corrupts the output as it would on the board. Every
 *             buffer and DRAM index is checked.
 *
 * The cycle model, per instruction:
 *   LOAD, STORE  dma_latency + rows x ceil(row bytes / AXI bytes per cycle)
 *                + one cycle per padding entry written
 *   GEMM         GEMM_PIPE + iter_out x iter_in x micro-ops: one
 *                BATCH x BLOCK by BLOCK x BLOCK product per cycle
 *   ALU          ALU_PIPE + iter_out x iter_in x micro-ops (x 2 without an
 *                immediate: two accumulator reads)
 *   FINISH       1
 * Modules overlap freely; their DMAs do not contend for the port.
 */
#include "vta.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GEMM_PIPE 4
#define ALU_PIPE 4

static const char *const mod_names[VTA_NMOD] = { "load", "compute", "store" };
static const char *const q_names[VTA_NQ] = {
	"load->compute", "compute->load", "compute->store", "store->compute",
};
static const char *const op_names[VTA_NOP] = { "LOAD", "STORE", "GEMM", "ALU", "FINISH" };
static const char *const buf_names[VTA_NBUF] = { "uop", "inp", "wgt", "acc", "out" };

double vta_seconds(const vta_hw *hw, int64_t cycles)
{
	return (double)cycles / (hw->mhz * 1e6);
}

static int64_t elem_bytes(const vta_hw *hw, int buf)
{
	switch (buf) {
	case VTA_BUF_UOP: return 4;
	case VTA_BUF_INP: return hw->inp_elem;
	case VTA_BUF_WGT: return hw->wgt_elem;
	case VTA_BUF_ACC: return hw->acc_elem;
	default: return hw->out_elem;
	}
}

static int64_t insn_cycles(const vta_hw *hw, const vta_insn *in)
{
	int64_t nuop = in->uop_end - in->uop_bgn;
	switch (in->op) {
	case VTA_OP_LOAD:
	case VTA_OP_STORE: {
		int64_t row = (int64_t)in->x_size * elem_bytes(hw, in->buf);
		int64_t rows = (int64_t)in->pad_top + in->y_size + in->pad_bottom;
		int64_t cols = (int64_t)in->pad_left + in->x_size + in->pad_right;
		int64_t pad = rows * cols - (int64_t)in->y_size * in->x_size;
		return hw->dma_latency + in->y_size * ((row + hw->axi_bytes - 1) / hw->axi_bytes) + pad;
	}
	case VTA_OP_GEMM:
		return GEMM_PIPE + (int64_t)in->iter_out * in->iter_in * nuop;
	case VTA_OP_ALU:
		return ALU_PIPE + (int64_t)in->iter_out * in->iter_in * nuop * (in->use_imm ? 1 : 2);
	default:
		return 1;
	}
}

/* The queues an instruction of module mod pops and pushes (-1: none). */
static void insn_queues(const vta_insn *in, int mod, int pop[2], int push[2])
{
	pop[0] = pop[1] = push[0] = push[1] = -1;
	switch (mod) {
	case VTA_MOD_LOAD:
		if (in->dep & VTA_POP_NEXT) pop[0] = VTA_Q_G2L;
		if (in->dep & VTA_PUSH_NEXT) push[0] = VTA_Q_L2G;
		break;
	case VTA_MOD_COMPUTE:
		if (in->dep & VTA_POP_PREV) pop[0] = VTA_Q_L2G;
		if (in->dep & VTA_POP_NEXT) pop[1] = VTA_Q_S2G;
		if (in->dep & VTA_PUSH_PREV) push[0] = VTA_Q_G2L;
		if (in->dep & VTA_PUSH_NEXT) push[1] = VTA_Q_G2S;
		break;
	case VTA_MOD_STORE:
		if (in->dep & VTA_POP_PREV) pop[0] = VTA_Q_G2S;
		if (in->dep & VTA_PUSH_PREV) push[0] = VTA_Q_S2G;
		break;
	}
}

/* ---- state --------------------------------------------------------------- */

typedef struct token {
	int64_t time;
	int64_t insn;
} token;

/* The last accesses to one buffer entry: the writing module (-1: none) and
 * its clock, and each module's clock at its last read since. */
typedef struct shadow {
	int32_t wclk;
	int8_t wmod;
	int32_t rclk[VTA_NMOD];
} shadow;

typedef struct sim {
	const vta_hw *hw;
	const vta_shape *sh;
	const vta_prog *p;
	vta_result *r;
	int64_t *end;               /* per instruction */
	int32_t (*vc)[VTA_NMOD];    /* per instruction: its vector clock */
	shadow *shadow[VTA_NBUF];
	int64_t depth[VTA_NBUF];
	/* the buffers (function) */
	int8_t *inp, *wgt, *out;
	int32_t *acc;
	vta_uop *uop;
	const int8_t *dinp, *dwgt;  /* DRAM */
	int8_t *dout;
	int64_t ninp, nwgt, nout;   /* DRAM entries */
	int first_race;
} sim;

/* ---- schedule ------------------------------------------------------------ */

static int schedule(sim *S)
{
	const vta_prog *p = S->p;
	vta_result *r = S->r;
	int64_t *list[VTA_NMOD], len[VTA_NMOD] = { 0 }, at[VTA_NMOD] = { 0 }, npush[VTA_NQ] = { 0 };
	int64_t free_at[VTA_NMOD] = { 0 }, npop[VTA_NQ] = { 0 }, cap[VTA_NQ] = { 0 };
	int32_t clock[VTA_NMOD][VTA_NMOD];
	token *q[VTA_NQ] = { NULL };
	int rc = TK_OK;

	memset(clock, 0, sizeof clock);
	for (int m = 0; m < VTA_NMOD; m++)
		list[m] = malloc(sizeof(int64_t) * (size_t)(p->n ? p->n : 1));
	for (int64_t i = 0; i < p->n; i++) {
		int m = vta_insn_module(&p->insn[i]), pop[2], push[2];
		list[m][len[m]++] = i;
		insn_queues(&p->insn[i], m, pop, push);
		for (int k = 0; k < 2; k++)
			if (push[k] >= 0)
				cap[push[k]]++;
	}
	for (int k = 0; k < VTA_NQ; k++)
		q[k] = malloc(sizeof(token) * (size_t)(cap[k] ? cap[k] : 1));
	for (int m = 0; m < VTA_NMOD; m++)
		if (!list[m])
			rc = TK_ENOMEM;
	for (int k = 0; k < VTA_NQ; k++)
		if (!q[k])
			rc = TK_ENOMEM;
	if (rc)
		goto done;

	for (int progress = 1; progress;) {
		progress = 0;
		for (int m = 0; m < VTA_NMOD; m++)
			while (at[m] < len[m]) {
				int64_t i = list[m][at[m]];
				const vta_insn *in = &p->insn[i];
				int pop[2], push[2], ready = 1;
				insn_queues(in, m, pop, push);
				for (int k = 0; k < 2; k++)
					if (pop[k] >= 0 && npop[pop[k]] >= npush[pop[k]])
						ready = 0;
				if (!ready)
					break;
				int64_t start = free_at[m];
				for (int k = 0; k < 2; k++) {
					if (pop[k] < 0)
						continue;
					const token *t = &q[pop[k]][npop[pop[k]]++];
					if (t->time > start)
						start = t->time;
					for (int a = 0; a < VTA_NMOD; a++)
						if (S->vc[t->insn][a] > clock[m][a])
							clock[m][a] = S->vc[t->insn][a];
				}
				int64_t c = insn_cycles(S->hw, in);
				S->end[i] = start + c;
				free_at[m] = S->end[i];
				r->busy[m] += c;
				clock[m][m]++;
				memcpy(S->vc[i], clock[m], sizeof clock[m]);
				for (int k = 0; k < 2; k++)
					if (push[k] >= 0)
						q[push[k]][npush[push[k]]++] = (token){ S->end[i], i };
				at[m]++;
				progress = 1;
			}
	}
	for (int m = 0; m < VTA_NMOD && !r->status; m++) {
		if (at[m] == len[m])
			continue;
		int64_t i = list[m][at[m]];
		int pop[2], push[2], k = 0;
		insn_queues(&p->insn[i], m, pop, push);
		if (pop[0] < 0 || npop[pop[0]] < npush[pop[0]])
			k = 1;
		r->status = VTA_DEADLOCK;
		snprintf(r->msg, sizeof r->msg, "deadlock: the %s module waits at instruction %lld "
		         "(%s, thread %d) for a token on the %s queue that no module will push",
		         mod_names[m], (long long)i, op_names[p->insn[i].op], p->insn[i].thread,
		         q_names[pop[k] >= 0 ? pop[k] : 0]);
	}
	for (int m = 0; m < VTA_NMOD; m++)
		if (free_at[m] > r->cycles)
			r->cycles = free_at[m];
	for (int k = 0; k < VTA_NQ; k++)
		r->left[k] = npush[k] - npop[k];
	if (r->status)
		r->cycles = 0;
	else if (r->cycles > VTA_WAIT_CYCLES) {
		r->status = VTA_TIMEOUT;
		snprintf(r->msg, sizeof r->msg, "timeout: %lld cycles; the runtime waits %lld",
		         (long long)r->cycles, (long long)VTA_WAIT_CYCLES);
	} else {
		for (int k = 0; k < VTA_NQ && !r->status; k++)
			if (r->left[k] > 0) {
				r->status = VTA_HAZARD;
				snprintf(r->msg, sizeof r->msg, "hazard: %lld token%s left on the %s queue at "
				         "the end; the next run would pop %s early", (long long)r->left[k],
				         r->left[k] > 1 ? "s" : "", q_names[k], r->left[k] > 1 ? "them" : "it");
			}
	}
done:
	for (int m = 0; m < VTA_NMOD; m++)
		free(list[m]);
	for (int k = 0; k < VTA_NQ; k++)
		free(q[k]);
	return rc ? tk_seterr(rc, "out of memory") : TK_OK;
}

/* ---- races ----------------------------------------------------------------- */

static void race(sim *S, int64_t i, int buf, int64_t e, int other, int writes, int other_wrote)
{
	vta_result *r = S->r;
	const vta_insn *in = &S->p->insn[i];
	r->races++;
	if (S->first_race)
		return;
	S->first_race = 1;
	r->status = VTA_HAZARD;
	snprintf(r->msg, sizeof r->msg, "hazard: %s (%s module, instruction %lld, thread %d) %s "
	         "%s entry %lld, which the %s module %s, with no dependence token between them",
	         op_names[in->op], mod_names[vta_insn_module(in)], (long long)i, in->thread,
	         writes ? "writes" : "reads", buf_names[buf], (long long)e, mod_names[other],
	         other_wrote ? "wrote" : "reads");
}

/* Record an access of instruction i (module m) to entries [lo, hi] of
 * buffer buf; write: 1. */
static void access(sim *S, int64_t i, int m, int buf, int64_t lo, int64_t hi, int write)
{
	const int32_t *vc = S->vc[i];
	if (lo < 0)
		lo = 0;
	if (hi >= S->depth[buf])
		hi = S->depth[buf] - 1;
	for (int64_t e = lo; e <= hi; e++) {
		shadow *sw = &S->shadow[buf][e];
		if (sw->wmod >= 0 && sw->wmod != m && sw->wclk > vc[sw->wmod])
			race(S, i, buf, e, sw->wmod, write, 1);
		if (!write) {
			sw->rclk[m] = vc[m];
			continue;
		}
		for (int a = 0; a < VTA_NMOD; a++)
			if (a != m && sw->rclk[a] > vc[a])
				race(S, i, buf, e, a, 1, 0);
		sw->wmod = (int8_t)m;
		sw->wclk = vc[m];
		memset(sw->rclk, 0, sizeof sw->rclk);
	}
}

/* Lowest and highest entry a loop instruction touches through one of its
 * micro-op fields (f: 0 dst, 1 src, 2 wgt) with factors fo, fi. */
static void span(const sim *S, const vta_insn *in, int f, int64_t fo, int64_t fi, int64_t *lo,
                 int64_t *hi)
{
	int64_t a = INT64_MAX, b = INT64_MIN;
	for (int64_t u = in->uop_bgn; u < in->uop_end; u++) {
		const vta_uop *op = &S->uop[u];
		int64_t x = f == 0 ? op->dst : f == 1 ? op->src : op->wgt;
		if (x < a) a = x;
		if (x > b) b = x;
	}
	if (a > b)
		a = b = 0;
	*lo = a;
	*hi = b + (in->iter_out - 1) * fo + (in->iter_in - 1) * fi;
}

static void check_races(sim *S, int64_t i)
{
	const vta_insn *in = &S->p->insn[i];
	int m = vta_insn_module(in);
	int64_t lo, hi;
	switch (in->op) {
	case VTA_OP_LOAD: {
		int64_t n = in->buf == VTA_BUF_INP
		            ? ((int64_t)in->pad_top + in->y_size + in->pad_bottom) *
		              ((int64_t)in->pad_left + in->x_size + in->pad_right)
		            : (int64_t)in->y_size * in->x_size;
		if (n > 0)
			access(S, i, m, in->buf, in->sram, in->sram + n - 1, 1);
		break;
	}
	case VTA_OP_STORE:
		if ((int64_t)in->y_size * in->x_size > 0)
			access(S, i, m, VTA_BUF_OUT, in->sram,
			       in->sram + (int64_t)in->y_size * in->x_size - 1, 0);
		break;
	case VTA_OP_GEMM:
	case VTA_OP_ALU:
		if (in->uop_end <= in->uop_bgn)
			break;
		access(S, i, m, VTA_BUF_UOP, in->uop_bgn, in->uop_end - 1, 0);
		span(S, in, 0, in->dst_out, in->dst_in, &lo, &hi);
		if (!(in->op == VTA_OP_GEMM && in->reset))
			access(S, i, m, VTA_BUF_ACC, lo, hi, 0);
		access(S, i, m, VTA_BUF_ACC, lo, hi, 1);
		access(S, i, m, VTA_BUF_OUT, lo, hi, 1);
		if (in->op == VTA_OP_GEMM && !in->reset) {
			span(S, in, 1, in->src_out, in->src_in, &lo, &hi);
			access(S, i, m, VTA_BUF_INP, lo, hi, 0);
			span(S, in, 2, in->wgt_out, in->wgt_in, &lo, &hi);
			access(S, i, m, VTA_BUF_WGT, lo, hi, 0);
		} else if (in->op == VTA_OP_ALU && !in->use_imm) {
			span(S, in, 1, in->src_out, in->src_in, &lo, &hi);
			access(S, i, m, VTA_BUF_ACC, lo, hi, 0);
		}
		break;
	}
}

/* ---- function ------------------------------------------------------------ */

static int bounds(sim *S, int64_t i, const char *what, int64_t x, int64_t n)
{
	if (x >= 0 && x < n)
		return 0;
	vta_result *r = S->r;
	r->status = VTA_BOUNDS;
	snprintf(r->msg, sizeof r->msg, "bounds: %s (instruction %lld) accesses %s entry %lld of %lld",
	         op_names[S->p->insn[i].op], (long long)i, what, (long long)x, (long long)n);
	return 1;
}

/* x narrowed to the low `bits` bits, sign-extended. */
static int8_t narrow(int32_t x, int bits)
{
	uint32_t u = (uint32_t)x << (32 - bits);
	return (int8_t)((int32_t)u >> (32 - bits));
}

static int exec_load(sim *S, int64_t i, const vta_insn *in)
{
	const vta_hw *hw = S->hw;
	int64_t rows = (int64_t)in->pad_top + in->y_size + in->pad_bottom;
	int64_t cols = (int64_t)in->pad_left + in->x_size + in->pad_right;
	if (in->buf != VTA_BUF_INP)
		rows = in->y_size, cols = in->x_size;
	for (int64_t y = 0; y < rows; y++)
		for (int64_t x = 0; x < cols; x++) {
			int64_t e = in->sram + y * cols + x;
			int64_t yy = y - (in->buf == VTA_BUF_INP ? in->pad_top : 0);
			int64_t xx = x - (in->buf == VTA_BUF_INP ? in->pad_left : 0);
			int pad = yy < 0 || yy >= in->y_size || xx < 0 || xx >= in->x_size;
			int64_t d = in->dram + yy * in->x_stride + xx;
			switch (in->buf) {
			case VTA_BUF_UOP:
				if (bounds(S, i, "uop", e, S->depth[VTA_BUF_UOP]) ||
				    bounds(S, i, "DRAM micro-op", d, S->p->nuop))
					return 1;
				S->uop[e] = S->p->uop[d];
				break;
			case VTA_BUF_INP: {
				int64_t n = (int64_t)hw->batch * hw->block;
				if (bounds(S, i, "inp", e, S->depth[VTA_BUF_INP]))
					return 1;
				if (pad) {
					memset(&S->inp[e * n], 0, (size_t)n);
					break;
				}
				if (bounds(S, i, "DRAM input", d, S->ninp))
					return 1;
				memcpy(&S->inp[e * n], &S->dinp[d * n], (size_t)n);
				break;
			}
			case VTA_BUF_WGT: {
				int64_t n = (int64_t)hw->block * hw->block;
				if (bounds(S, i, "wgt", e, S->depth[VTA_BUF_WGT]) ||
				    bounds(S, i, "DRAM weight", d, S->nwgt))
					return 1;
				memcpy(&S->wgt[e * n], &S->dwgt[d * n], (size_t)n);
				break;
			}
			default: /* the lowering never loads the accumulator: zeros */
				if (bounds(S, i, "acc", e, S->depth[VTA_BUF_ACC]))
					return 1;
				memset(&S->acc[e * hw->batch * hw->block], 0,
				       sizeof(int32_t) * (size_t)(hw->batch * hw->block));
				break;
			}
		}
	return 0;
}

static int exec_store(sim *S, int64_t i, const vta_insn *in)
{
	int64_t n = (int64_t)S->hw->batch * S->hw->block;
	for (int64_t y = 0; y < in->y_size; y++)
		for (int64_t x = 0; x < in->x_size; x++) {
			int64_t e = in->sram + y * in->x_size + x, d = in->dram + y * in->x_stride + x;
			if (bounds(S, i, "out", e, S->depth[VTA_BUF_OUT]) ||
			    bounds(S, i, "DRAM output", d, S->nout))
				return 1;
			memcpy(&S->dout[d * n], &S->out[e * n], (size_t)n);
		}
	return 0;
}

static int exec_gemm(sim *S, int64_t i, const vta_insn *in)
{
	const int B = S->hw->batch, K = S->hw->block, ob = S->hw->out_bits;
	for (int64_t u = in->uop_bgn; u < in->uop_end; u++)
		if (bounds(S, i, "uop", u, S->depth[VTA_BUF_UOP]))
			return 1;
	for (int64_t a = 0; a < in->iter_out; a++)
		for (int64_t b = 0; b < in->iter_in; b++)
			for (int64_t u = in->uop_bgn; u < in->uop_end; u++) {
				const vta_uop *op = &S->uop[u];
				int64_t dst = op->dst + a * in->dst_out + b * in->dst_in;
				if (bounds(S, i, "acc", dst, S->depth[VTA_BUF_ACC]))
					return 1;
				int32_t *acc = &S->acc[dst * B * K];
				int8_t *out = &S->out[dst * B * K];
				if (in->reset) {
					memset(acc, 0, sizeof(int32_t) * (size_t)(B * K));
					memset(out, 0, (size_t)(B * K));
					continue;
				}
				int64_t src = op->src + a * in->src_out + b * in->src_in;
				int64_t w = op->wgt + a * in->wgt_out + b * in->wgt_in;
				if (bounds(S, i, "inp", src, S->depth[VTA_BUF_INP]) ||
				    bounds(S, i, "wgt", w, S->depth[VTA_BUF_WGT]))
					return 1;
				const int8_t *x = &S->inp[src * B * K], *wt = &S->wgt[w * K * K];
				for (int bi = 0; bi < B; bi++)
					for (int o = 0; o < K; o++) {
						int32_t s = 0;
						const int8_t *xr = &x[bi * K], *wr = &wt[o * K];
						for (int k = 0; k < K; k++)
							s += (int32_t)xr[k] * (int32_t)wr[k];
						/* the accumulator wraps like the hardware's adder */
						acc[bi * K + o] = (int32_t)((uint32_t)acc[bi * K + o] + (uint32_t)s);
						out[bi * K + o] = narrow(acc[bi * K + o], ob);
					}
			}
	return 0;
}

static int exec_alu(sim *S, int64_t i, const vta_insn *in)
{
	const int n = S->hw->batch * S->hw->block, ob = S->hw->out_bits;
	for (int64_t u = in->uop_bgn; u < in->uop_end; u++)
		if (bounds(S, i, "uop", u, S->depth[VTA_BUF_UOP]))
			return 1;
	for (int64_t a = 0; a < in->iter_out; a++)
		for (int64_t b = 0; b < in->iter_in; b++)
			for (int64_t u = in->uop_bgn; u < in->uop_end; u++) {
				const vta_uop *op = &S->uop[u];
				int64_t dst = op->dst + a * in->dst_out + b * in->dst_in;
				int64_t src = op->src + a * in->src_out + b * in->src_in;
				if (bounds(S, i, "acc", dst, S->depth[VTA_BUF_ACC]) ||
				    (!in->use_imm && bounds(S, i, "acc", src, S->depth[VTA_BUF_ACC])))
					return 1;
				int32_t *d = &S->acc[dst * n];
				const int32_t *s = &S->acc[src * n];
				for (int e = 0; e < n; e++) {
					int32_t x = d[e], y = in->use_imm ? in->imm : s[e], v;
					switch (in->alu) {
					case VTA_ALU_MIN: v = x < y ? x : y; break;
					case VTA_ALU_MAX: v = x > y ? x : y; break;
					case VTA_ALU_ADD: v = (int32_t)((uint32_t)x + (uint32_t)y); break;
					default:
						v = y >= 0 ? x >> (y < 31 ? y : 31)
						           : (int32_t)((uint32_t)x << (-y < 31 ? -y : 31));
						break;
					}
					d[e] = v;
					S->out[dst * n + e] = narrow(v, ob);
				}
			}
	return 0;
}

static int exec_insn(sim *S, int64_t i)
{
	const vta_insn *in = &S->p->insn[i];
	switch (in->op) {
	case VTA_OP_LOAD: return exec_load(S, i, in);
	case VTA_OP_STORE: return exec_store(S, i, in);
	case VTA_OP_GEMM: return exec_gemm(S, i, in);
	case VTA_OP_ALU: return exec_alu(S, i, in);
	default: return 0;
	}
}

/* ---- the run ----------------------------------------------------------- */

static const int64_t *sort_end;

static int by_end(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	if (sort_end[x] != sort_end[y])
		return sort_end[x] < sort_end[y] ? -1 : 1;
	return (x > y) - (x < y);
}

int vta_run(const vta_hw *hw, const vta_shape *sh, const vta_prog *p, const int8_t *inp,
            const int8_t *wgt, int8_t *out, vta_result *r)
{
	sim S;
	int64_t *order = NULL;
	int rc = TK_OK;

	assert(hw && sh && p && r);
	memset(r, 0, sizeof *r);
	memset(&S, 0, sizeof S);
	S.hw = hw;
	S.sh = sh;
	S.p = p;
	S.r = r;
	S.depth[VTA_BUF_UOP] = hw->uop_depth;
	S.depth[VTA_BUF_INP] = hw->inp_depth;
	S.depth[VTA_BUF_WGT] = hw->wgt_depth;
	S.depth[VTA_BUF_ACC] = hw->acc_depth;
	S.depth[VTA_BUF_OUT] = hw->out_depth;
	S.end = calloc((size_t)(p->n ? p->n : 1), sizeof *S.end);
	S.vc = calloc((size_t)(p->n ? p->n : 1), sizeof *S.vc);
	order = malloc(sizeof *order * (size_t)(p->n ? p->n : 1));
	for (int b = 0; b < VTA_NBUF; b++)
		S.shadow[b] = malloc(sizeof(shadow) * (size_t)S.depth[b]);
	S.uop = calloc((size_t)hw->uop_depth, sizeof *S.uop);
	if (!S.end || !S.vc || !order || !S.uop) {
		rc = tk_seterr(TK_ENOMEM, "out of memory");
		goto done;
	}
	for (int b = 0; b < VTA_NBUF; b++) {
		if (!S.shadow[b]) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			goto done;
		}
		for (int64_t e = 0; e < S.depth[b]; e++) {
			memset(&S.shadow[b][e], 0, sizeof(shadow));
			S.shadow[b][e].wmod = -1;
		}
	}
	if ((rc = schedule(&S)) || r->status == VTA_DEADLOCK || r->status == VTA_TIMEOUT)
		goto done;

	if (out) {
		int64_t n = (int64_t)hw->batch * hw->block;
		S.inp = calloc((size_t)(hw->inp_depth * n), 1);
		S.wgt = calloc((size_t)(hw->wgt_depth * hw->block * hw->block), 1);
		S.acc = calloc((size_t)(hw->acc_depth * n), sizeof *S.acc);
		S.out = calloc((size_t)(hw->out_depth * n), 1);
		if (!S.inp || !S.wgt || !S.acc || !S.out) {
			rc = tk_seterr(TK_ENOMEM, "out of memory");
			goto done;
		}
		S.dinp = inp;
		S.dwgt = wgt;
		S.dout = out;
		S.ninp = sh->nb * sh->cb * sh->h * sh->w;
		S.nwgt = sh->kb * sh->cb * sh->r * sh->s;
		S.nout = sh->nb * sh->kb * sh->oh * sh->ow;
	}
	for (int64_t i = 0; i < p->n; i++)
		order[i] = i;
	sort_end = S.end;
	qsort(order, (size_t)p->n, sizeof *order, by_end);
	/* The micro-ops the race check reads are those loaded so far: it runs
	 * beside the function, keeping the micro-op buffer itself up to date
	 * when no data is computed. */
	for (int64_t k = 0; k < p->n; k++) {
		int64_t i = order[k];
		const vta_insn *in = &p->insn[i];
		if (!out && in->op == VTA_OP_LOAD && in->buf == VTA_BUF_UOP) {
			for (int64_t x = 0; x < in->x_size; x++)
				if (!bounds(&S, i, "uop", in->sram + x, S.depth[VTA_BUF_UOP]) &&
				    !bounds(&S, i, "DRAM micro-op", in->dram + x, p->nuop))
					S.uop[in->sram + x] = p->uop[in->dram + x];
			if (r->status == VTA_BOUNDS)
				break;
		}
		if ((in->op == VTA_OP_GEMM || in->op == VTA_OP_ALU))
			for (int64_t u = in->uop_bgn; u < in->uop_end; u++)
				if (bounds(&S, i, "uop", u, S.depth[VTA_BUF_UOP]))
					goto done;
		check_races(&S, i);
		if (out && exec_insn(&S, i))
			break;
	}
done:
	for (int b = 0; b < VTA_NBUF; b++)
		free(S.shadow[b]);
	free(S.end);
	free(S.vc);
	free(order);
	free(S.uop);
	free(S.inp);
	free(S.wgt);
	free(S.acc);
	free(S.out);
	return rc;
}
