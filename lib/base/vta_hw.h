/*
 * vta_hw: the parameters of a VTA-like accelerator and the boards it is
 * timed as. VTA (Moreau et al., TVM's "versatile tensor accelerator") is a
 * GEMM core fed by load and store modules through on-chip scratchpads; its
 * size is set by the log2 parameters of TVM's vta_config.json:
 *
 *     LOG_INP_WIDTH  LOG_WGT_WIDTH  LOG_ACC_WIDTH   bits of inputs, weights, sums
 *     LOG_BATCH      LOG_BLOCK                      the GEMM core: BATCH x BLOCK
 *                                                   by BLOCK x BLOCK per cycle
 *     LOG_UOP_BUFF_SIZE  LOG_INP_BUFF_SIZE          bytes of the micro-op, input,
 *     LOG_WGT_BUFF_SIZE  LOG_ACC_BUFF_SIZE          weight, accumulator buffers
 *
 * A preset is a row of a table: its parameters and its board (clock, DMA
 * width and latency, on-chip RAM). Each resolved parameter set is distinct
 * hardware; its key names the board and every parameter. It lives in
 * lib/base, under target (which parses `vta-sim:` specs into it) and under
 * lib/vta (which simulates it), so neither includes the other for it.
 */
#ifndef TK_VTA_HW_H
#define TK_VTA_HW_H

#include <stddef.h>
#include <stdint.h>

/* The parameters, in vta_config.json's order (and the key's). */
enum {
	VTA_P_INP_WIDTH, VTA_P_WGT_WIDTH, VTA_P_ACC_WIDTH, VTA_P_BATCH, VTA_P_BLOCK,
	VTA_P_UOP_BUFF, VTA_P_INP_BUFF, VTA_P_WGT_BUFF, VTA_P_ACC_BUFF, VTA_NPARAM
};

/* Version of the simulator's cycle model and lowering, in the hardware key:
 * records of a changed model are new hardware and never mix with old ones. */
#define VTA_SIM_VERSION 1

typedef struct vta_hw {
	const char *preset;     /* row of the preset table: "default", "zcu102" */
	const char *board;      /* the board it is timed as: "pynq", "zcu102" */
	int log[VTA_NPARAM];    /* the LOG_ parameters */
	double mhz;             /* clock */
	int axi_bytes;          /* DMA bytes per cycle */
	int dma_latency;        /* cycles from a DMA request to its first beat */
	int64_t onchip_bytes;   /* the board's on-chip RAM, the buffers' limit */
	/* derived by vta_hw_parse */
	int batch, block;       /* 1 << LOG_BATCH, 1 << LOG_BLOCK */
	int inp_bits, wgt_bits, acc_bits, out_bits; /* out: as wide as the inputs */
	int64_t inp_elem, wgt_elem, acc_elem, out_elem; /* bytes of one buffer entry:
	                           BATCH x BLOCK inputs, BLOCK x BLOCK weights,
	                           BATCH x BLOCK sums, BATCH x BLOCK outputs */
	int64_t inp_depth, wgt_depth, acc_depth, out_depth, uop_depth; /* entries */
} vta_hw;

/* Parameter names as in vta_config.json: "LOG_INP_WIDTH", ... */
extern const char *const vta_param_names[VTA_NPARAM];
/* The range of parameter p (VTA_P_*), inclusive. */
void vta_param_range(int p, int *lo, int *hi);
/* Parameter p's value in preset number i (< vta_npresets). */
int vta_preset_param(int i, int p);

/* The presets, for help: name and a one-line description. */
typedef struct vta_preset_info {
	const char *name, *summary;
} vta_preset_info;
extern const vta_preset_info vta_presets_info[];
extern const int vta_npresets;

/* Parse the part of a target spec after "vta-sim:" (args; "" means
 * preset=default), items "preset=NAME" and "PARAM=VALUE" in any order, each
 * at most once, and fill *hw with the preset's values overridden by the
 * parameters. spec is the whole spec, for messages. Returns TK_EINVAL with
 * a one-line message for an unknown preset or parameter, a value outside a
 * parameter's range, a buffer that holds no entry, or buffers larger than
 * the board's on-chip RAM. */
int vta_hw_parse(const char *spec, const char *args, vta_hw *hw);

/* The canonical spec, "vta-sim:preset=NAME" followed by the parameters that
 * differ from the preset, in table order. */
void vta_hw_spec(const vta_hw *hw, char *buf, size_t n);

/* The hardware key, "vta-sim|simulated|BOARD CLOCK AXI DMA|LOG_...=V|...|sim=N". */
void vta_hw_key(const vta_hw *hw, char *buf, size_t n);

#endif
