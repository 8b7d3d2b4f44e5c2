/*
 * lower: the device compiler of vta-sim. From a conv2d or dense task it
 * derives the workload in VTA's packed layout and the search space of TVM's
 * VTA templates; from a configuration, the program: instructions and
 * micro-op kernels (vta.h describes the instruction set).
 *
 * The space: TVM's VTA knobs. Channel and batch tiles divide their block
 * counts (AutoTVM's "factors"); output tiles take every height and width
 * from 1 to the output's, as ML2Tuner's VTA backend does (its TW and TH),
 * the last tile of a row or column of tiles being smaller: a boundary tile.
 *
 * The program of a configuration (tiles tb x tco x th x tw of the output,
 * tci input channel blocks per step, T = h_threads x oc_threads virtual
 * threads) follows TVM's conv2d_packed schedule:
 *
 *   LOAD uop (every kernel, once, when they fit together)
 *   for each round (b0, h0 / h_threads, co0 / oc_threads, w0):
 *     for ci0 < Cb/tci:
 *       for each thread v:  LOAD inp (one per batch block and channel block),
 *                           LOAD wgt             first pops g2l, last pushes l2g
 *       for each thread v:  [ci0 = 0: GEMM reset, pops s2g] GEMM: pops l2g,
 *                           pushes g2l
 *     for each thread v:    ALU [max 0], shr, max lo, min hi: last pushes g2s
 *     for each thread v:    STORE (one per batch block and channel block):
 *                           first pops g2s, last pushes s2g
 *   FINISH
 *
 * Virtual threads are VTA's double buffering: each has its own input,
 * weight and accumulator regions (the footprint is T times a tile's), and
 * the load of one thread's next step overlaps the other's GEMM. A thread
 * pops before reusing its region what the last user of the region pushed:
 * the first step of the program pops nothing, the last pushes nothing.
 *
 * A short round (fewer row or channel tiles left than threads: the split is
 * uneven) has absent threads. The device compiler places the tokens as if
 * every round had all its threads and then drops the absent threads'
 * instructions with their dependence flags, so later tokens pair with the
 * wrong instructions: the simulator finds the race (a hazard) or the wait
 * that never ends (a deadlock). With VTA_LOWER_DUMMY_TILES the absent
 * threads compute a dummy tile instead (their loads and stores move
 * nothing), which keeps the tokens paired at the cost of the wasted work.
 *
 * A boundary tile keeps a whole tile's layout in the buffers: its LOADs
 * fill the rows and columns past the input with zeros (as padding, so at
 * most 15 of them: VTA's pad fields have 4 bits), its GEMMs compute every
 * row of the kernel (the rows past the output are dummy rows, computed and
 * never stored) but only its own columns (the inner loop's count), and it
 * stores its rows only, one STORE per row when it is narrower than a tile
 * (the buffer rows are a tile wide).
 *
 * Micro-op kernels, per thread (their indices name the thread's regions):
 * the GEMM kernel has one micro-op per (b, r, s, co, oh) of a tile, under
 * the instruction's loops over the step's channel blocks (iter_out) and the
 * tile's columns (iter_in), the two outermost loops TVM folds; the reset
 * kernel one per (b, co, oh); the ALU kernel one, looping over the tile.
 * When all kernels fit the micro-op buffer they are loaded once; otherwise
 * each is loaded when needed, the buffer refilled from its start when full
 * (VTA's runtime kernel cache); a kernel larger than the buffer is an error.
 *
 * The compiler's errors: a thread's regions x T larger than a buffer (the
 * output buffer has the accumulator's depth), a kernel larger than the
 * micro-op buffer, a field out of VTA's ranges (loop counts below 2^14,
 * sizes and strides below 2^16, padding below 16, immediates of 16 bits).
 */
#include "vta.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/meas.h"

#define VTA_MAXTHREAD 4
/* ISA field limits: VTA_LOOP_ITER_WIDTH 14, VTA_MEMOP_SIZE/STRIDE 16,
 * VTA_MEMOP_PAD 4, VTA_ALU_IMM 16 bits. */
#define ITER_MAX ((1 << 14) - 1)
#define SIZE_MAX_ ((1 << 16) - 1)
#define PAD_MAX 15

/* ---- outcomes ------------------------------------------------------------ */

static const char *const status_names[VTA_NSTATUS] = {
	"ok", "inp-overflow", "wgt-overflow", "acc-overflow", "uop-overflow", "isa-limit",
	"hazard", "deadlock", "timeout", "wrong-answer", "bounds",
};

const char *vta_status_name(int status)
{
	return status >= 0 && status < VTA_NSTATUS ? status_names[status] : "?";
}

int vta_status_meas(int status)
{
	switch (status) {
	case VTA_OK: return MEAS_OK;
	case VTA_INP_OVERFLOW: case VTA_WGT_OVERFLOW: case VTA_ACC_OVERFLOW:
	case VTA_UOP_OVERFLOW: case VTA_ISA_LIMIT: return MEAS_COMPILE_DEVICE;
	case VTA_HAZARD: case VTA_WRONG_ANSWER: return MEAS_WRONG_ANSWER;
	case VTA_DEADLOCK: case VTA_TIMEOUT: return MEAS_RUN_TIMEOUT;
	case VTA_BOUNDS: return MEAS_RUNTIME_CRASH;
	}
	return MEAS_UNKNOWN;
}

/* ---- the workload ------------------------------------------------------- */

static int64_t param(const te_prog *p, const char *name)
{
	for (int i = 0; i < p->nparam; i++)
		if (!strcmp(p->param[i].name, name))
			return p->param[i].val;
	assert(0);
	return 0;
}

static int64_t ceildiv(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

int vta_shape_from_prog(const te_prog *p, const vta_hw *hw, vta_shape *sh)
{
	memset(sh, 0, sizeof *sh);
	if (!strcmp(p->op, "conv2d")) {
		if (param(p, "groups") != 1 || param(p, "dilation") != 1 ||
		    param(p, "dilation_w") != 1 || param(p, "stride_w") != param(p, "stride") ||
		    param(p, "pad_l") != param(p, "pad") || param(p, "pad_b") != param(p, "pad") ||
		    param(p, "pad_r") != param(p, "pad"))
			return tk_seterr(TK_EUNSUPP, "%s: vta-sim lowers plain conv2d only (no groups,"
			                 " dilation, per-axis strides or per-side padding)", p->key);
		sh->op = VTA_CONV2D;
		sh->n = param(p, "n");
		sh->c = param(p, "c");
		sh->h = param(p, "h");
		sh->w = param(p, "w");
		sh->k = param(p, "k");
		sh->r = param(p, "r");
		sh->s = param(p, "s");
		sh->stride = param(p, "stride");
		sh->pad = param(p, "pad");
	} else if (!strcmp(p->op, "dense") || !strcmp(p->op, "dense_relu")) {
		sh->op = VTA_DENSE;
		sh->relu = !strcmp(p->op, "dense_relu");
		sh->n = param(p, "m");
		sh->c = param(p, "k");
		sh->k = param(p, "n");
		sh->h = sh->w = sh->r = sh->s = sh->stride = 1;
		sh->pad = 0;
	} else {
		return tk_seterr(TK_EUNSUPP, "%s: vta-sim lowers conv2d, dense and dense_relu only",
		                 p->key);
	}
	sh->oh = (sh->h + 2 * sh->pad - sh->r) / sh->stride + 1;
	sh->ow = (sh->w + 2 * sh->pad - sh->s) / sh->stride + 1;
	sh->nb = ceildiv(sh->n, hw->batch);
	sh->cb = ceildiv(sh->c, hw->block);
	sh->kb = ceildiv(sh->k, hw->block);
	/* uniform integers of b bits have a standard deviation of about
	 * 2^(b-1)/sqrt(3); a sum of C*R*S products, sqrt(C*R*S) times their product */
	double sd_in = ldexp(1, hw->inp_bits - 1) / sqrt(3.0);
	double sd_w = ldexp(1, hw->wgt_bits - 1) / sqrt(3.0);
	double sd = sqrt((double)(sh->c * sh->r * sh->s)) * sd_in * sd_w;
	double want = ldexp(1, hw->out_bits - 3 > 0 ? hw->out_bits - 3 : 0);
	long shift = lround(log2(sd / want));
	sh->shift = shift > 0 ? (int)shift : 0;
	sh->out_lo = -(1 << (hw->out_bits - 1));
	sh->out_hi = (1 << (hw->out_bits - 1)) - 1;
	return TK_OK;
}

/* ---- the space --------------------------------------------------------------- */

/* The split candidates of extent e: outer x inner, inner a divisor of e or
 * (every) any size, outer ceil(e / inner); ascending. Returns the count;
 * cand holds 2 * count values. */
static int splits(int64_t e, int every, int64_t *cand, int max)
{
	int n = 0;
	for (int64_t d = 1; d <= e && n < max; d++)
		if (every || e % d == 0) {
			cand[2 * n] = ceildiv(e, d);
			cand[2 * n + 1] = d;
			n++;
		}
	return n;
}

#define MAXDIV 1024

int vta_space_create(const vta_shape *sh, sp_space **out)
{
	static const int64_t threads[] = { 1, 2 };
	sp_knob k[8];
	int nk = 0, rc;
	/* conv_only: a knob of conv2d's template only; every: any size */
	struct { const char *name; int64_t extent; int conv_only, every; } split[] = {
		{ "tile_b", sh->nb, 0, 0 }, { "tile_h", sh->oh, 1, 1 }, { "tile_w", sh->ow, 1, 1 },
		{ "tile_ci", sh->cb, 0, 0 }, { "tile_co", sh->kb, 0, 0 },
	};
	int64_t *cand = malloc(sizeof(int64_t) * 2 * MAXDIV * ArraySize(split));
	if (!cand)
		return tk_seterr(TK_ENOMEM, "out of memory");
	memset(k, 0, sizeof k);
	for (int i = 0; i < ArraySize(split); i++) {
		if (split[i].conv_only && sh->op != VTA_CONV2D)
			continue;
		k[nk].name = split[i].name;
		k[nk].kind = KNOB_SPLIT;
		k[nk].nlevel = 2;
		k[nk].extent = split[i].extent;
		k[nk].cand = cand + 2 * MAXDIV * i;
		k[nk].n = splits(split[i].extent, split[i].every, k[nk].cand, MAXDIV);
		nk++;
	}
	const char *nthread[] = { "oc_nthread", "h_nthread" };
	for (int i = 0; i < (sh->op == VTA_CONV2D ? 2 : 1); i++) {
		k[nk].name = nthread[i];
		k[nk].kind = KNOB_ENUM;
		k[nk].n = 2;
		k[nk].cand = (int64_t *)threads;
		nk++;
	}
	rc = sp_space_knobs(nk, k, out);
	free(cand);
	return rc;
}

void vta_sched_from_config(const sp_space *s, const sp_config *c, vta_sched *out)
{
	out->tb = out->th = out->tw = out->tci = out->tco = 1;
	out->h_threads = out->oc_threads = 1;
	for (int k = 0; k < s->nknob; k++) {
		const sp_knob *kn = &s->knob[k];
		int64_t v = kn->kind == KNOB_SPLIT ? kn->cand[c->v[k] * 2 + 1] : kn->cand[c->v[k]];
		if (!strcmp(kn->name, "tile_b"))
			out->tb = v;
		else if (!strcmp(kn->name, "tile_h"))
			out->th = v;
		else if (!strcmp(kn->name, "tile_w"))
			out->tw = v;
		else if (!strcmp(kn->name, "tile_ci"))
			out->tci = v;
		else if (!strcmp(kn->name, "tile_co"))
			out->tco = v;
		else if (!strcmp(kn->name, "h_nthread"))
			out->h_threads = (int)v;
		else if (!strcmp(kn->name, "oc_nthread"))
			out->oc_threads = (int)v;
	}
}

void vta_sched_format(tk_sb *sb, const vta_sched *sc)
{
	tk_sb_printf(sb, "vta tile b=%lld h=%lld w=%lld ci=%lld co=%lld threads h=%d oc=%d\n",
	             (long long)sc->tb, (long long)sc->th, (long long)sc->tw, (long long)sc->tci,
	             (long long)sc->tco, sc->h_threads, sc->oc_threads);
}

/* ---- programs --------------------------------------------------------------- */

void vta_prog_free(vta_prog *p)
{
	if (!p)
		return;
	free(p->insn);
	free(p->uop);
	free(p);
}

int vta_insn_module(const vta_insn *in)
{
	switch (in->op) {
	case VTA_OP_LOAD:
		return in->buf == VTA_BUF_INP || in->buf == VTA_BUF_WGT ? VTA_MOD_LOAD : VTA_MOD_COMPUTE;
	case VTA_OP_STORE:
		return VTA_MOD_STORE;
	default:
		return VTA_MOD_COMPUTE;
	}
}

static const char *const buf_names[VTA_NBUF] = { "uop", "inp", "wgt", "acc", "out" };
static const char *const alu_names[] = { "min", "max", "add", "shr" };

void vta_prog_print(tk_sb *sb, const vta_prog *p, int64_t max)
{
	for (int64_t i = 0; i < p->n && (!max || i < max); i++) {
		const vta_insn *in = &p->insn[i];
		char dep[64] = "";
		if (in->dep)
			snprintf(dep, sizeof dep, " dep%s%s%s%s", in->dep & VTA_POP_PREV ? " pop-prev" : "",
			         in->dep & VTA_POP_NEXT ? " pop-next" : "",
			         in->dep & VTA_PUSH_PREV ? " push-prev" : "",
			         in->dep & VTA_PUSH_NEXT ? " push-next" : "");
		tk_sb_printf(sb, "%6lld t%d ", (long long)i, in->thread);
		switch (in->op) {
		case VTA_OP_LOAD:
		case VTA_OP_STORE:
			tk_sb_printf(sb, "%s %s sram=%d dram=%d y=%d x=%d stride=%d", in->op == VTA_OP_LOAD
			             ? "load" : "store", buf_names[in->buf], in->sram, in->dram, in->y_size,
			             in->x_size, in->x_stride);
			if (in->pad_top || in->pad_bottom || in->pad_left || in->pad_right)
				tk_sb_printf(sb, " pad=%d,%d,%d,%d", in->pad_top, in->pad_bottom, in->pad_left,
				             in->pad_right);
			break;
		case VTA_OP_GEMM:
			tk_sb_printf(sb, "gemm%s uop=%d..%d loop=%dx%d dst=%d,%d src=%d,%d wgt=%d,%d",
			             in->reset ? " reset" : "", in->uop_bgn, in->uop_end, in->iter_out,
			             in->iter_in, in->dst_out, in->dst_in, in->src_out, in->src_in,
			             in->wgt_out, in->wgt_in);
			break;
		case VTA_OP_ALU:
			tk_sb_printf(sb, "alu %s uop=%d..%d loop=%dx%d dst=%d,%d", alu_names[in->alu & 3],
			             in->uop_bgn, in->uop_end, in->iter_out, in->iter_in, in->dst_out,
			             in->dst_in);
			if (in->use_imm)
				tk_sb_printf(sb, " imm=%d", in->imm);
			else
				tk_sb_printf(sb, " src=%d,%d", in->src_out, in->src_in);
			break;
		case VTA_OP_FINISH:
			tk_sb_puts(sb, "finish");
			break;
		}
		tk_sb_printf(sb, "%s\n", dep);
	}
	if (max && p->n > max)
		tk_sb_printf(sb, "... %lld more\n", (long long)(p->n - max));
}

/* ---- lowering ------------------------------------------------------------------ */

enum { KERN_GEMM, KERN_RESET, KERN_ALU, NKERN };

typedef struct lower {
	const vta_hw *hw;
	const vta_shape *sh;
	const vta_sched *sc;
	unsigned flags;
	vta_prog *p;            /* NULL: stats only */
	vta_stats *st;
	int status;
	int oom;
	char *msg;
	size_t nmsg;
	int T;
	int64_t ih, iw;         /* input tile rows, columns */
	int64_t reg[VTA_NBUF];  /* a thread's region in each buffer */
	int64_t C0, H0, W0, K0, N0, HR, KR; /* steps, tiles, rounds */
	int64_t ksize[NKERN];
	int64_t kdram[VTA_MAXTHREAD][NKERN];
	int64_t resident[VTA_MAXTHREAD][NKERN]; /* uop buffer entry, -1: not loaded */
	int64_t uop_top;
	int all_resident;
} lower;

static void fail(lower *L, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void fail(lower *L, int status, const char *fmt, ...)
{
	if (L->status)
		return;
	L->status = status;
	if (L->msg && L->nmsg) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(L->msg, L->nmsg, fmt, ap);
		va_end(ap);
	}
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

/* Check an instruction's fields against VTA's ranges. */
static void check_fields(lower *L, const vta_insn *in)
{
	if (in->iter_out > ITER_MAX || in->iter_in > ITER_MAX)
		fail(L, VTA_ISA_LIMIT, "isa-limit: a loop of %d x %d iterations (at most %d)",
		     in->iter_out, in->iter_in, ITER_MAX);
	else if (in->y_size > SIZE_MAX_ || in->x_size > SIZE_MAX_ || in->x_stride > SIZE_MAX_)
		fail(L, VTA_ISA_LIMIT, "isa-limit: a DMA of %d x %d entries, stride %d (at most %d)",
		     in->y_size, in->x_size, in->x_stride, SIZE_MAX_);
	else if (in->pad_top > PAD_MAX || in->pad_bottom > PAD_MAX || in->pad_left > PAD_MAX ||
	         in->pad_right > PAD_MAX) {
		int rows = in->pad_top > in->pad_bottom ? in->pad_top : in->pad_bottom;
		int cols = in->pad_left > in->pad_right ? in->pad_left : in->pad_right;
		fail(L, VTA_ISA_LIMIT, "isa-limit: a LOAD with %d %s of padding (at most %d)",
		     rows > cols ? rows : cols, rows > cols ? "rows" : "columns", PAD_MAX);
	}
	else if (in->imm < -32768 || in->imm > 32767)
		fail(L, VTA_ISA_LIMIT, "isa-limit: ALU immediate %d (16 bits)", in->imm);
}

/* Append in to the program (when one is built) and count it. */
static void put(lower *L, const vta_insn *in)
{
	vta_stats *st = L->st;
	check_fields(L, in);
	st->insns[in->op]++;
	int mod = vta_insn_module(in);
	/* pushes: load push-next l2g; compute push-prev g2l, push-next g2s;
	 * store push-prev s2g */
	if (in->dep & VTA_PUSH_NEXT)
		st->tokens[mod == VTA_MOD_LOAD ? VTA_Q_L2G : VTA_Q_G2S]++;
	if (in->dep & VTA_PUSH_PREV)
		st->tokens[mod == VTA_MOD_STORE ? VTA_Q_S2G : VTA_Q_G2L]++;
	if (in->op == VTA_OP_LOAD || in->op == VTA_OP_STORE)
		st->dma_bytes[in->buf] += (int64_t)in->y_size * in->x_size * elem_bytes(L->hw, in->buf);
	else if (in->op == VTA_OP_GEMM)
		st->gemm_steps += (int64_t)in->iter_out * in->iter_in * (in->uop_end - in->uop_bgn);
	else if (in->op == VTA_OP_ALU)
		st->alu_steps += (int64_t)in->iter_out * in->iter_in * (in->uop_end - in->uop_bgn);
	if (!L->p || L->status || L->oom)
		return;
	vta_prog *p = L->p;
	if (p->n == p->cap) {
		int64_t cap = p->cap ? 2 * p->cap : 1024;
		vta_insn *n = realloc(p->insn, sizeof *n * (size_t)cap);
		if (!n) {
			L->oom = 1;
			return;
		}
		p->insn = n;
		p->cap = cap;
	}
	p->insn[p->n++] = *in;
}

/* The kernels: micro-ops of each thread's GEMM, reset and ALU kernels, in
 * DRAM one thread after the other. */
static void build_kernels(lower *L)
{
	const vta_shape *sh = L->sh;
	const vta_sched *sc = L->sc;
	L->ksize[KERN_GEMM] = sc->tb * sh->r * sh->s * sc->tco * sc->th;
	L->ksize[KERN_RESET] = sc->tb * sc->tco * sc->th;
	L->ksize[KERN_ALU] = 1;
	int64_t per = L->ksize[KERN_GEMM] + L->ksize[KERN_RESET] + L->ksize[KERN_ALU];
	L->st->uops = per * L->T;
	for (int v = 0; v < L->T; v++)
		for (int k = 0, off = 0; k < NKERN; off += (int)L->ksize[k], k++) {
			L->kdram[v][k] = v * per + off;
			L->resident[v][k] = -1;
		}
	if (!L->p || L->status)
		return;
	vta_prog *p = L->p;
	if (!(p->uop = malloc(sizeof *p->uop * (size_t)(per * L->T)))) {
		L->oom = 1;
		return;
	}
	p->nuop = per * L->T;
	for (int v = 0; v < L->T; v++) {
		int32_t ib = (int32_t)(v * L->reg[VTA_BUF_INP]), wb = (int32_t)(v * L->reg[VTA_BUF_WGT]);
		int32_t ab = (int32_t)(v * L->reg[VTA_BUF_ACC]);
		vta_uop *u = &p->uop[L->kdram[v][KERN_GEMM]];
		for (int64_t b = 0; b < sc->tb; b++)
			for (int64_t r = 0; r < sh->r; r++)
				for (int64_t s = 0; s < sh->s; s++)
					for (int64_t co = 0; co < sc->tco; co++)
						for (int64_t oh = 0; oh < sc->th; oh++) {
							u->dst = ab + (int32_t)(((b * sc->tco + co) * sc->th + oh) * sc->tw);
							u->src = ib + (int32_t)((b * sc->tci * L->ih + oh * sh->stride + r) *
							                        L->iw + s);
							u->wgt = wb + (int32_t)((co * sc->tci * sh->r + r) * sh->s + s);
							u++;
						}
		u = &p->uop[L->kdram[v][KERN_RESET]];
		for (int64_t b = 0; b < sc->tb; b++)
			for (int64_t co = 0; co < sc->tco; co++)
				for (int64_t oh = 0; oh < sc->th; oh++, u++) {
					u->dst = ab + (int32_t)(((b * sc->tco + co) * sc->th + oh) * sc->tw);
					u->src = u->wgt = 0;
				}
		u = &p->uop[L->kdram[v][KERN_ALU]];
		u->dst = u->src = ab;
		u->wgt = 0;
	}
}

static void load_uops(lower *L, int64_t sram, int64_t dram, int64_t n, int thread)
{
	vta_insn in;
	memset(&in, 0, sizeof in);
	in.op = VTA_OP_LOAD;
	in.buf = VTA_BUF_UOP;
	in.thread = (int16_t)thread;
	in.sram = (int32_t)sram;
	in.dram = (int32_t)dram;
	in.y_size = 1;
	in.x_size = (int32_t)n;
	in.x_stride = (int32_t)n;
	put(L, &in);
	L->st->uop_loads++;
}

/* The micro-op buffer entry of kernel k of thread v, loading it first when
 * it is not there. */
static int64_t kernel(lower *L, int v, int k)
{
	if (L->all_resident || L->resident[v][k] >= 0)
		return L->all_resident ? L->kdram[v][k] : L->resident[v][k];
	if (L->uop_top + L->ksize[k] > L->hw->uop_depth) {
		L->uop_top = 0;
		for (int a = 0; a < L->T; a++)
			for (int b = 0; b < NKERN; b++)
				L->resident[a][b] = -1;
	}
	load_uops(L, L->uop_top, L->kdram[v][k], L->ksize[k], v);
	L->resident[v][k] = L->uop_top;
	L->uop_top += L->ksize[k];
	return L->resident[v][k];
}

/* A thread's tile in a round: its row and channel tiles, and whether it is
 * present (inside the output) in this round. */
typedef struct tile {
	int v;
	int64_t b0, h0, k0, w0;
	int64_t rows, cols;     /* of the output: fewer than a tile's at the boundary */
	int present;
} tile;

static void emit_loads(lower *L, const tile *t, int64_t ci0, unsigned dep_first, unsigned dep_last)
{
	const vta_shape *sh = L->sh;
	const vta_sched *sc = L->sc;
	int dummy = !t->present;
	int nld = (int)(sc->tb * sc->tci) + 1, i = 0;
	int64_t y0 = t->h0 * sc->th * sh->stride - sh->pad, x0 = t->w0 * sc->tw * sh->stride - sh->pad;
	for (int64_t b = 0; b < sc->tb; b++)
		for (int64_t ci = 0; ci < sc->tci; ci++, i++) {
			vta_insn in;
			memset(&in, 0, sizeof in);
			in.op = VTA_OP_LOAD;
			in.buf = VTA_BUF_INP;
			in.thread = (int16_t)t->v;
			in.sram = (int32_t)(t->v * L->reg[VTA_BUF_INP] + (b * sc->tci + ci) * L->ih * L->iw);
			in.dep = (uint8_t)((i == 0 ? dep_first : 0) | (i == nld - 1 ? dep_last : 0));
			int64_t top = y0 < 0 ? -y0 : 0, left = x0 < 0 ? -x0 : 0;
			int64_t bottom = y0 + L->ih > sh->h ? y0 + L->ih - sh->h : 0;
			int64_t right = x0 + L->iw > sh->w ? x0 + L->iw - sh->w : 0;
			int64_t ys = L->ih - top - bottom, xs = L->iw - left - right;
			if (ys <= 0 || xs <= 0) { /* all padding */
				ys = xs = 0;
				top = L->ih;
				left = L->iw;
				bottom = right = 0;
			}
			if (!dummy) {
				int64_t nb = t->b0 * sc->tb + b, cb = ci0 * sc->tci + ci;
				in.dram = (int32_t)(((nb * sh->cb + cb) * sh->h + (y0 > 0 ? y0 : 0)) * sh->w +
				                    (x0 > 0 ? x0 : 0));
				in.y_size = (int32_t)ys;
				in.x_size = (int32_t)xs;
				in.x_stride = (int32_t)sh->w;
				in.pad_top = (uint8_t)(top < 255 ? top : 255);
				in.pad_bottom = (uint8_t)(bottom < 255 ? bottom : 255);
				in.pad_left = (uint8_t)(left < 255 ? left : 255);
				in.pad_right = (uint8_t)(right < 255 ? right : 255);
			}
			put(L, &in);
		}
	vta_insn in;
	memset(&in, 0, sizeof in);
	in.op = VTA_OP_LOAD;
	in.buf = VTA_BUF_WGT;
	in.thread = (int16_t)t->v;
	in.sram = (int32_t)(t->v * L->reg[VTA_BUF_WGT]);
	in.dep = (uint8_t)((nld == 1 ? dep_first : 0) | dep_last);
	if (!dummy) {
		in.dram = (int32_t)((t->k0 * sc->tco * sh->cb + ci0 * sc->tci) * sh->r * sh->s);
		in.y_size = (int32_t)sc->tco;
		in.x_size = (int32_t)(sc->tci * sh->r * sh->s);
		in.x_stride = (int32_t)(sh->cb * sh->r * sh->s);
	}
	put(L, &in);
}

static void emit_gemm(lower *L, const tile *t, int reset, unsigned dep)
{
	const vta_sched *sc = L->sc;
	vta_insn in;
	memset(&in, 0, sizeof in);
	in.op = VTA_OP_GEMM;
	in.thread = (int16_t)t->v;
	in.reset = (uint8_t)reset;
	in.dep = (uint8_t)dep;
	int k = reset ? KERN_RESET : KERN_GEMM;
	in.uop_bgn = (int32_t)kernel(L, t->v, k);
	in.uop_end = (int32_t)(in.uop_bgn + L->ksize[k]);
	in.iter_out = reset ? 1 : (int32_t)sc->tci;
	in.iter_in = (int32_t)t->cols;
	in.dst_in = 1;
	if (!reset) {
		in.src_out = (int32_t)(L->ih * L->iw);
		in.src_in = (int32_t)L->sh->stride;
		in.wgt_out = (int32_t)(L->sh->r * L->sh->s);
	}
	put(L, &in);
}

static void emit_alu(lower *L, const tile *t, int op, int imm, unsigned dep)
{
	const vta_sched *sc = L->sc;
	vta_insn in;
	memset(&in, 0, sizeof in);
	in.op = VTA_OP_ALU;
	in.alu = (uint8_t)op;
	in.thread = (int16_t)t->v;
	in.dep = (uint8_t)dep;
	in.use_imm = 1;
	in.imm = imm;
	in.uop_bgn = (int32_t)kernel(L, t->v, KERN_ALU);
	in.uop_end = in.uop_bgn + 1;
	in.iter_out = (int32_t)(sc->tb * sc->tco * sc->th);
	in.iter_in = (int32_t)t->cols;
	in.dst_out = in.src_out = (int32_t)sc->tw;
	in.dst_in = in.src_in = 1;
	put(L, &in);
}

static void emit_stores(lower *L, const tile *t, unsigned dep_first, unsigned dep_last)
{
	const vta_shape *sh = L->sh;
	const vta_sched *sc = L->sc;
	/* a tile narrower than the buffer rows is stored row by row */
	int64_t per = t->cols < sc->tw ? t->rows : 1;
	int64_t n = sc->tb * sc->tco * per, i = 0;
	for (int64_t b = 0; b < sc->tb; b++)
		for (int64_t co = 0; co < sc->tco; co++)
			for (int64_t y = 0; y < per; y++, i++) {
				vta_insn in;
				memset(&in, 0, sizeof in);
				in.op = VTA_OP_STORE;
				in.buf = VTA_BUF_OUT;
				in.thread = (int16_t)t->v;
				in.sram = (int32_t)(t->v * L->reg[VTA_BUF_ACC] +
				                    ((b * sc->tco + co) * sc->th + y) * sc->tw);
				in.dep = (uint8_t)((i == 0 ? dep_first : 0) | (i == n - 1 ? dep_last : 0));
				if (t->present) {
					int64_t nb = t->b0 * sc->tb + b, kb = t->k0 * sc->tco + co;
					in.dram = (int32_t)(((nb * sh->kb + kb) * sh->oh + t->h0 * sc->th + y) *
					                    sh->ow + t->w0 * sc->tw);
					in.y_size = (int32_t)(per > 1 ? 1 : t->rows);
					in.x_size = (int32_t)t->cols;
					in.x_stride = (int32_t)sh->ow;
				}
				put(L, &in);
			}
}

/* One round: the tiles of every thread, step by step. first and last say
 * whether this is the program's first or last round: there the first loads
 * and resets pop nothing, and the last GEMMs and stores push nothing. */
static void emit_round(lower *L, tile *t, int first, int last)
{
	int T = L->T, keep_absent = (L->flags & VTA_LOWER_DUMMY_TILES) != 0;
	for (int64_t ci0 = 0; ci0 < L->C0; ci0++) {
		for (int v = 0; v < T; v++)
			if (t[v].present || keep_absent)
				emit_loads(L, &t[v], ci0, first && ci0 == 0 ? 0 : VTA_POP_NEXT, VTA_PUSH_NEXT);
		for (int v = 0; v < T; v++) {
			if (!t[v].present && !keep_absent)
				continue;
			if (ci0 == 0)
				emit_gemm(L, &t[v], 1, first ? 0 : VTA_POP_NEXT);
			emit_gemm(L, &t[v], 0, VTA_POP_PREV | (last && ci0 == L->C0 - 1 ? 0 : VTA_PUSH_PREV));
		}
	}
	const vta_shape *sh = L->sh;
	for (int v = 0; v < T; v++) {
		if (!t[v].present && !keep_absent)
			continue;
		if (sh->relu)
			emit_alu(L, &t[v], VTA_ALU_MAX, 0, 0);
		emit_alu(L, &t[v], VTA_ALU_SHR, sh->shift, 0);
		emit_alu(L, &t[v], VTA_ALU_MAX, sh->out_lo, 0);
		emit_alu(L, &t[v], VTA_ALU_MIN, sh->out_hi, VTA_PUSH_NEXT);
	}
	for (int v = 0; v < T; v++)
		if (t[v].present || keep_absent)
			emit_stores(L, &t[v], VTA_POP_PREV, last ? 0 : VTA_PUSH_PREV);
}

static void emit_program(lower *L)
{
	const vta_shape *sh = L->sh;
	const vta_sched *sc = L->sc;
	vta_stats *st = L->st;
	int64_t total = L->st->uops;
	L->all_resident = total <= L->hw->uop_depth;
	if (L->all_resident)
		load_uops(L, 0, 0, total, 0);
	int64_t rounds = L->N0 * L->HR * L->KR * L->W0, rho = 0;
	tile t[VTA_MAXTHREAD];
	for (int64_t b0 = 0; b0 < L->N0; b0++)
		for (int64_t hr = 0; hr < L->HR; hr++)
			for (int64_t kr = 0; kr < L->KR; kr++)
				for (int64_t w0 = 0; w0 < L->W0; w0++, rho++) {
					for (int v = 0; v < L->T; v++) {
						int hv = v / sc->oc_threads, ov = v % sc->oc_threads;
						t[v].v = v;
						t[v].b0 = b0;
						t[v].h0 = hr * sc->h_threads + hv;
						t[v].k0 = kr * sc->oc_threads + ov;
						t[v].w0 = w0;
						t[v].present = t[v].h0 < L->H0 && t[v].k0 < L->K0;
						/* an absent thread's dummy tile is a whole one */
						t[v].rows = t[v].h0 >= L->H0 - 1 && t[v].present
						            ? sh->oh - (L->H0 - 1) * sc->th : sc->th;
						t[v].cols = w0 == L->W0 - 1 ? sh->ow - (L->W0 - 1) * sc->tw : sc->tw;
						st->tiles += t[v].present;
						if (t[v].present)
							st->dummy_rows += (sc->th - t[v].rows) * sc->tb * sc->tco;
					}
					emit_round(L, t, rho == 0, rho == rounds - 1);
					if (L->oom)
						return;
				}
	vta_insn fin;
	memset(&fin, 0, sizeof fin);
	fin.op = VTA_OP_FINISH;
	put(L, &fin);
}

int vta_lower(const vta_hw *hw, const vta_shape *sh, const vta_sched *sc, unsigned flags,
              vta_prog **out, vta_stats *stp, int *status, char *msg, size_t nmsg)
{
	vta_stats scratch;
	vta_stats *st = stp ? stp : &scratch;
	lower L;

	assert(hw && sh && sc && status);
	assert(sc->h_threads >= 1 && sc->oc_threads >= 1 &&
	       sc->h_threads * sc->oc_threads <= VTA_MAXTHREAD);
	assert(sh->nb % sc->tb == 0 && sc->th >= 1 && sc->th <= sh->oh && sc->tw >= 1 &&
	       sc->tw <= sh->ow && sh->cb % sc->tci == 0 && sh->kb % sc->tco == 0);
	if (out)
		*out = NULL;
	*status = VTA_OK;
	if (msg && nmsg)
		msg[0] = 0;
	memset(st, 0, sizeof *st);
	memset(&L, 0, sizeof L);
	L.hw = hw;
	L.sh = sh;
	L.sc = sc;
	L.flags = flags;
	L.st = st;
	L.msg = msg;
	L.nmsg = nmsg;
	L.T = sc->h_threads * sc->oc_threads;
	L.ih = (sc->th - 1) * sh->stride + sh->r;
	L.iw = (sc->tw - 1) * sh->stride + sh->s;
	L.reg[VTA_BUF_INP] = sc->tb * sc->tci * L.ih * L.iw;
	L.reg[VTA_BUF_WGT] = sc->tco * sc->tci * sh->r * sh->s;
	L.reg[VTA_BUF_ACC] = L.reg[VTA_BUF_OUT] = sc->tb * sc->tco * sc->th * sc->tw;
	L.N0 = sh->nb / sc->tb;
	L.H0 = ceildiv(sh->oh, sc->th);
	L.W0 = ceildiv(sh->ow, sc->tw);
	L.C0 = sh->cb / sc->tci;
	L.K0 = sh->kb / sc->tco;
	L.HR = ceildiv(L.H0, sc->h_threads);
	L.KR = ceildiv(L.K0, sc->oc_threads);

	st->threads = L.T;
	st->uneven = L.H0 % sc->h_threads != 0 || L.K0 % sc->oc_threads != 0;
	st->th_last = sh->oh - (L.H0 - 1) * sc->th;
	st->tw_last = sh->ow - (L.W0 - 1) * sc->tw;
	st->depth[VTA_BUF_UOP] = hw->uop_depth;
	st->depth[VTA_BUF_INP] = hw->inp_depth;
	st->depth[VTA_BUF_WGT] = hw->wgt_depth;
	st->depth[VTA_BUF_ACC] = hw->acc_depth;
	st->depth[VTA_BUF_OUT] = hw->out_depth;
	for (int b = VTA_BUF_INP; b < VTA_NBUF; b++)
		st->used[b] = L.T * L.reg[b];

	static const char *const what[VTA_NBUF] = { "", "input", "weight", "accumulator", "output" };
	static const int code[VTA_NBUF] = { 0, VTA_INP_OVERFLOW, VTA_WGT_OVERFLOW, VTA_ACC_OVERFLOW,
	                                    VTA_ACC_OVERFLOW };
	for (int b = VTA_BUF_INP; b < VTA_NBUF; b++)
		if (st->used[b] > st->depth[b])
			fail(&L, code[b], "%s: the %s tiles of %d thread%s need %lld entries; the %s "
			     "buffer has %lld", vta_status_name(code[b]), what[b], L.T, L.T > 1 ? "s" : "",
			     (long long)st->used[b], what[b], (long long)st->depth[b]);
	if (!(flags & VTA_LOWER_STATS_ONLY) && out && !L.status &&
	    !(L.p = calloc(1, sizeof *L.p)))
		return tk_seterr(TK_ENOMEM, "out of memory");
	build_kernels(&L);
	st->used[VTA_BUF_UOP] = st->uops <= hw->uop_depth ? st->uops : L.ksize[KERN_GEMM];
	int64_t big = L.ksize[KERN_GEMM];
	if (big > hw->uop_depth)
		fail(&L, VTA_UOP_OVERFLOW, "uop-overflow: a GEMM kernel of %lld micro-ops; the "
		     "micro-op buffer holds %lld", (long long)big, (long long)hw->uop_depth);
	/* emitted even when it fails: the counts are stats */
	if (!L.oom)
		emit_program(&L);
	for (int b = 0; b < VTA_NBUF; b++)
		st->occupancy[b] = st->depth[b] ? (double)st->used[b] / (double)st->depth[b] : 0;
	if (L.oom) {
		vta_prog_free(L.p);
		return tk_seterr(TK_ENOMEM, "out of memory");
	}
	*status = L.status;
	if (L.status)
		vta_prog_free(L.p);
	else if (out)
		*out = L.p;
	return TK_OK;
}

int vta_stats_of(const vta_hw *hw, const vta_shape *sh, const vta_sched *sc, vta_stats *st)
{
	int status;
	return vta_lower(hw, sh, sc, VTA_LOWER_STATS_ONLY, NULL, st, &status, NULL, 0);
}

const char *const vta_stat_names[VTA_NSTAT] = {
	"threads", "uneven",
	"used_uop", "used_inp", "used_wgt", "used_acc", "used_out",
	"occupancy_uop", "occupancy_inp", "occupancy_wgt", "occupancy_acc", "occupancy_out",
	"insns_load", "insns_store", "insns_gemm", "insns_alu", "insns_finish",
	"uops", "uop_loads",
	"tokens_l2g", "tokens_g2l", "tokens_g2s", "tokens_s2g",
	"dma_bytes_uop", "dma_bytes_inp", "dma_bytes_wgt", "dma_bytes_acc", "dma_bytes_out",
	"gemm_steps", "alu_steps", "tiles", "th_last", "tw_last", "dummy_rows",
};

void vta_stats_vector(const vta_stats *st, float *out)
{
	int n = 0;
	out[n++] = (float)st->threads;
	out[n++] = (float)st->uneven;
	for (int b = 0; b < VTA_NBUF; b++)
		out[n++] = (float)st->used[b];
	for (int b = 0; b < VTA_NBUF; b++)
		out[n++] = (float)st->occupancy[b];
	for (int op = 0; op < VTA_NOP; op++)
		out[n++] = (float)st->insns[op];
	out[n++] = (float)st->uops;
	out[n++] = (float)st->uop_loads;
	for (int q = 0; q < VTA_NQ; q++)
		out[n++] = (float)st->tokens[q];
	for (int b = 0; b < VTA_NBUF; b++)
		out[n++] = (float)st->dma_bytes[b];
	out[n++] = (float)st->gemm_steps;
	out[n++] = (float)st->alu_steps;
	out[n++] = (float)st->tiles;
	out[n++] = (float)st->th_last;
	out[n++] = (float)st->tw_last;
	out[n++] = (float)st->dummy_rows;
	assert(n == VTA_NSTAT);
}
