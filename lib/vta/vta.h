/*
 * vta: a simulated VTA-like accelerator, the target `vta-sim` (base/vta_hw.h
 * holds its parameters). Four parts, one file each:
 *
 *   lower.c  the workload of a conv2d or dense task in VTA's packed layout,
 *            its search space (TVM's VTA templates: tile_b, tile_h, tile_w,
 *            tile_ci, tile_co, oc_nthread, h_nthread), and the lowering of a
 *            configuration to VTA instructions and micro-op kernels: the
 *            device compiler, which rejects what does not fit the hardware
 *   sim.c    the simulator: load, compute and store modules running their
 *            instruction streams concurrently, synchronised by dependence
 *            tokens; a cycle model; a functional model (int8 x int8 -> int32,
 *            shift, clip) executed in the order the cycle model finishes the
 *            instructions; a happens-before race detector; deadlock and
 *            timeout detection
 *   data.c   random integer inputs, packing into VTA's layouts, the expected
 *            output from a reference computed from the operator's definition
 *   stats    (lower.c) what the compiler decided for a configuration, the
 *            accelerator's "hidden features": buffer occupancy, instruction
 *            and micro-op counts, dependence tokens, DMA bytes
 *
 * Shape key used below: N batch, C input channels, H W input rows and
 * columns, K output channels, R S kernel rows and columns, OH OW output rows
 * and columns; in hardware blocks Nb = ceil(N/BATCH), Cb = ceil(C/BLOCK),
 * Kb = ceil(K/BLOCK) (channels are padded with zeros to whole blocks).
 * Packed layouts (DRAM), each element one buffer entry:
 *     inputs  [Nb][Cb][H][W]   of BATCH x BLOCK      (int8)
 *     weights [Kb][Cb][R][S]   of BLOCK(out) x BLOCK(in)
 *     outputs [Nb][Kb][OH][OW] of BATCH x BLOCK
 * A dense task C[m,n] = A[m,k] * B[k,n] is the conv2d N=m, C=k, K=n,
 * H=W=R=S=1.
 *
 * Nothing here prints or exits; nothing here forks: lib/measure runs the
 * simulator in a child process.
 */
#ifndef TK_VTA_H
#define TK_VTA_H

#include <stddef.h>
#include <stdint.h>

#include "base/vta_hw.h"
#include "space/space.h"
#include "task/te.h"
#include "util/util.h"

/* ---- outcomes ---------------------------------------------------------- */

/* Why a configuration fails on the accelerator. The first five are the
 * device compiler's (nothing runs), the rest the simulator's. */
enum {
	VTA_OK = 0,
	VTA_INP_OVERFLOW,  /* the input tiles of all threads exceed the input buffer */
	VTA_WGT_OVERFLOW,  /* ... the weight tiles, the weight buffer */
	VTA_ACC_OVERFLOW,  /* ... the output tiles, the accumulator (and output) buffer */
	VTA_UOP_OVERFLOW,  /* a micro-op kernel larger than the micro-op buffer */
	VTA_ISA_LIMIT,     /* a field of an instruction out of its range */
	VTA_HAZARD,        /* two modules touch a buffer entry unordered by tokens */
	VTA_DEADLOCK,      /* a module waits for a token nothing will push */
	VTA_TIMEOUT,       /* longer than the runtime waits (VTA_WAIT_CYCLES) */
	VTA_WRONG_ANSWER,  /* the output differs from the reference */
	VTA_BOUNDS,        /* an access outside a buffer or a tensor */
	VTA_NSTATUS
};

/* "ok", "inp-overflow", "wgt-overflow", "acc-overflow", "uop-overflow",
 * "isa-limit", "hazard", "deadlock", "timeout", "wrong-answer", "bounds":
 * the tag a record's message starts with. */
const char *vta_status_name(int status);
/* The measurement outcome (base/meas.h) of a status: the compiler's are
 * MEAS_COMPILE_DEVICE, a hazard or wrong answer MEAS_WRONG_ANSWER, a
 * deadlock or timeout MEAS_RUN_TIMEOUT (the board hangs), an access out of
 * bounds MEAS_RUNTIME_CRASH. */
int vta_status_meas(int status);

/* The runtime's wait for the accelerator, in cycles (TVM waits 2^31). */
#define VTA_WAIT_CYCLES (1LL << 31)

/* ---- the workload -------------------------------------------------------- */

enum { VTA_CONV2D, VTA_DENSE };

typedef struct vta_shape {
	int op;                /* VTA_CONV2D or VTA_DENSE */
	int relu;              /* dense_relu: max(x, 0) before the shift */
	int64_t n, c, h, w, k, r, s, stride, pad;
	int64_t oh, ow;
	int64_t nb, cb, kb;    /* in blocks */
	int shift;             /* arithmetic right shift of the sums before the clip */
	int out_lo, out_hi;    /* the clip: the output type's range */
} vta_shape;

/* The workload of task p on hw. TK_EUNSUPP (message set) for an operator
 * vta-sim cannot run (only conv2d, dense and dense_relu lower). The shift
 * brings a sum of C*R*S random products to about 2^(out bits - 3). */
int vta_shape_from_prog(const te_prog *p, const vta_hw *hw, vta_shape *sh);

/* ---- the space and the schedule ----------------------------------------- */

typedef struct vta_sched {
	int64_t tb, th, tw, tci, tco; /* tile: batch blocks, output rows, output columns,
	                                 input channel blocks, output channel blocks */
	int h_threads, oc_threads;    /* virtual threads over row tiles, channel tiles */
} vta_sched;

/* The space of sh, knobs in TVM's order: conv2d tile_b, tile_h, tile_w,
 * tile_ci, tile_co, oc_nthread, h_nthread; dense tile_b, tile_ci, tile_co,
 * oc_nthread. Tiles split an extent in blocks (b, ci, co) into outer x
 * inner, inner a divisor (AutoTVM's "factors"), or rows and columns (h, w)
 * into ceil(extent / inner) x inner for every inner size from 1 to the
 * extent (the last tile smaller); the nthread knobs are 1 or 2. The space has no program (prog NULL): only
 * knob features apply. Free with sp_space_free(). TK_ENOMEM. */
int vta_space_create(const vta_shape *sh, sp_space **out);

/* The schedule of configuration c of a space from vta_space_create. */
void vta_sched_from_config(const sp_space *s, const sp_config *c, vta_sched *out);

/* One line describing sc, stored as the configuration's schedule text. */
void vta_sched_format(tk_sb *sb, const vta_sched *sc);

/* ---- the instruction set -------------------------------------------------
 * VTA's, with wider fields. A LOAD or STORE moves a 2-D block: y_size rows
 * of x_size entries, x_stride entries apart in DRAM, contiguous in the
 * buffer from entry sram; a LOAD to the input buffer adds rows and columns
 * of zeros around it (pad_*). A GEMM runs its micro-ops [uop_bgn, uop_end)
 * inside two loops:
 *     for i < iter_out, j < iter_in, u in uops:
 *         acc[u.dst + i*dst_out + j*dst_in] +=
 *             inp[u.src + i*src_out + j*src_in] . wgt[u.wgt + i*wgt_out + j*wgt_in]
 * (reset: acc = 0 instead); every write to acc also writes out, narrowed.
 * An ALU op does acc[dst..] = op(acc[dst..], imm or acc[src..]) the same
 * way (src_* the second operand's factors).
 * The load module runs LOADs to the input and weight buffers; the compute
 * module LOADs to the micro-op buffer, GEMM, ALU and FINISH; the store
 * module STOREs. Dependence flags pop a token before the instruction starts
 * and push one when it ends, on the queue to the module before (prev) or
 * after (next) in load -> compute -> store. */
enum { VTA_OP_LOAD, VTA_OP_STORE, VTA_OP_GEMM, VTA_OP_ALU, VTA_OP_FINISH, VTA_NOP };
enum { VTA_BUF_UOP, VTA_BUF_INP, VTA_BUF_WGT, VTA_BUF_ACC, VTA_BUF_OUT, VTA_NBUF };
enum { VTA_MOD_LOAD, VTA_MOD_COMPUTE, VTA_MOD_STORE, VTA_NMOD };
enum { VTA_ALU_MIN, VTA_ALU_MAX, VTA_ALU_ADD, VTA_ALU_SHR };
/* The four token queues. */
enum { VTA_Q_L2G, VTA_Q_G2L, VTA_Q_G2S, VTA_Q_S2G, VTA_NQ };

#define VTA_POP_PREV 1u
#define VTA_POP_NEXT 2u
#define VTA_PUSH_PREV 4u
#define VTA_PUSH_NEXT 8u

typedef struct vta_insn {
	uint8_t op, buf, dep, alu;   /* VTA_OP_*, VTA_BUF_* (LOAD, STORE), VTA_POP/PUSH_*, VTA_ALU_* */
	uint8_t reset, use_imm;
	uint8_t pad_top, pad_bottom, pad_left, pad_right;
	int16_t thread;              /* virtual thread, for messages */
	int32_t imm;
	int32_t sram, dram;          /* LOAD, STORE: first entry in the buffer and in DRAM */
	int32_t y_size, x_size, x_stride;
	int32_t uop_bgn, uop_end, iter_out, iter_in;
	int32_t dst_out, dst_in, src_out, src_in, wgt_out, wgt_in;
} vta_insn;

/* A micro-op: entries of the accumulator, input and weight buffers. */
typedef struct vta_uop {
	int32_t dst, src, wgt;
} vta_uop;

/* A program: its instructions and the micro-ops its LOADs to the micro-op
 * buffer read from DRAM. Owned; vta_prog_free(). */
typedef struct vta_prog {
	int64_t n, cap;
	vta_insn *insn;
	int64_t nuop;
	vta_uop *uop;
} vta_prog;

void vta_prog_free(vta_prog *p);
/* The module that runs insn. */
int vta_insn_module(const vta_insn *in);
/* Print the program, one instruction a line (at most max lines; 0: all). */
void vta_prog_print(tk_sb *sb, const vta_prog *p, int64_t max);

/* ---- the compiler ------------------------------------------------------ */

/* What the compiler decided for a configuration: the accelerator's hidden
 * features. Filled for every configuration, including those the compiler
 * rejects (then occupancy > 1 says which buffer overflows). */
typedef struct vta_stats {
	int threads;               /* virtual threads: h_threads x oc_threads */
	int uneven;                /* 1: some round of threads is short (fewer tiles
	                              than threads along h or co) */
	int64_t used[VTA_NBUF];    /* entries needed in each buffer, all threads */
	int64_t depth[VTA_NBUF];   /* entries each buffer has */
	double occupancy[VTA_NBUF];/* used / depth; above 1 does not fit */
	int64_t insns[VTA_NOP];    /* instructions per opcode */
	int64_t uops;              /* micro-ops of the kernels, all threads */
	int64_t uop_loads;         /* LOADs to the micro-op buffer (reloads when the
	                              kernels do not fit together) */
	int64_t tokens[VTA_NQ];    /* pushes per queue */
	int64_t dma_bytes[VTA_NBUF]; /* bytes loaded into (stored from, out) each buffer */
	int64_t gemm_steps;        /* micro-op executions of GEMMs: core cycles */
	int64_t alu_steps;         /* ... of ALU ops */
	int64_t tiles;             /* output tiles */
	int64_t th_last, tw_last;  /* rows and columns of the boundary tiles (th, tw
	                              when the tiles divide the output) */
	int64_t dummy_rows;        /* rows computed past the output (x channel blocks) */
} vta_stats;

/* Compiler options. */
#define VTA_LOWER_DUMMY_TILES 1u  /* absent threads of a short round compute a
                                     dummy tile, which keeps the tokens paired; by
                                     default their instructions are dropped with
                                     their tokens (lower.c) */
#define VTA_LOWER_STATS_ONLY 2u   /* fill the stats, build no program */

/* Lower configuration sc of sh for hw. Returns TK_OK with *status VTA_OK
 * and *out a new program (unless VTA_LOWER_STATS_ONLY), or with *status
 * one of the compiler's failures and msg saying why (*out NULL); TK_ENOMEM.
 * st (may be NULL) receives the stats either way. */
int vta_lower(const vta_hw *hw, const vta_shape *sh, const vta_sched *sc, unsigned flags,
              vta_prog **out, vta_stats *st, int *status, char *msg, size_t nmsg);

/* The stats of a configuration alone (vta_lower with VTA_LOWER_STATS_ONLY):
 * the function the hidden-feature extractor calls. */
int vta_stats_of(const vta_hw *hw, const vta_shape *sh, const vta_sched *sc, vta_stats *st);

/* The stats as a fixed-length vector of VTA_NSTAT values, named by
 * vta_stat_names[] (e.g. "occupancy_inp", "insns_gemm", "tokens_g2l",
 * "dma_bytes_wgt"); raw values, counts not log-scaled. */
#define VTA_NSTAT 34
extern const char *const vta_stat_names[VTA_NSTAT];
void vta_stats_vector(const vta_stats *st, float *out);

/* ---- the simulator ------------------------------------------------------- */

typedef struct vta_result {
	int status;                /* VTA_OK, VTA_HAZARD, VTA_DEADLOCK, VTA_TIMEOUT, VTA_BOUNDS */
	char msg[224];
	int64_t cycles;            /* until the last module is done (0 on deadlock) */
	int64_t busy[VTA_NMOD];    /* cycles each module spent running instructions */
	int64_t races;             /* unordered conflicting accesses found */
	int64_t left[VTA_NQ];      /* tokens left in each queue at the end */
} vta_result;

/* Run p on hw. inp and wgt are the packed inputs (data.c) and out the packed
 * output, written by STOREs; with out NULL only the cycle model and the race
 * and deadlock checks run (no data is computed). Returns TK_OK with the
 * outcome in *r, TK_ENOMEM. */
int vta_run(const vta_hw *hw, const vta_shape *sh, const vta_prog *p, const int8_t *inp,
            const int8_t *wgt, int8_t *out, vta_result *r);

/* Seconds of cycles at hw's clock. */
double vta_seconds(const vta_hw *hw, int64_t cycles);

/* ---- data ---------------------------------------------------------------- */

/* Fill p's two inputs (operator layout, as floats) with random integers of
 * the input and weight types (inputs in[0], weights in[1]), from PCG32
 * seeded with seed. */
void vta_random_inputs(const te_prog *p, const vta_hw *hw, uint64_t seed, float *const *in);

/* Packed copies of the inputs; the caller frees *inp and *wgt. Sizes in
 * bytes in *ninp, *nwgt. TK_ENOMEM. */
int vta_pack(const vta_hw *hw, const vta_shape *sh, const float *const *in, int8_t **inp,
             size_t *ninp, int8_t **wgt, size_t *nwgt);
/* Bytes of the packed output. */
size_t vta_out_bytes(const vta_hw *hw, const vta_shape *sh);

/* The expected output, in the operator's layout (N*K*OH*OW values), from
 * the reference sums ref (exact integers, e.g. from task/ref.c's
 * interpreter of the operator's definition): shift, then clip. */
void vta_expect(const vta_shape *sh, const double *ref, int8_t *expect);

/* Compare the packed output with expect. Returns the number of wrong
 * elements; the first one is described in msg. */
int64_t vta_check(const vta_hw *hw, const vta_shape *sh, const int8_t *out,
                  const int8_t *expect, char *msg, size_t nmsg);

#endif
