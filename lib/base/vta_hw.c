/*
 * vta_hw: the preset table, the parameter ranges, and the parsing, spec and
 * key of a VTA parameter set (see vta_hw.h).
 *
 * The presets:
 *   default  TVM's vta_config.json (inputs and weights int8, sums int32,
 *            batch 1, block 16; micro-op buffer 32 KiB, input 32 KiB, weight
 *            256 KiB, accumulator 128 KiB), timed as TVM's pynq board: 100
 *            MHz, a 64-bit AXI port, 560 KiB of block RAM (Zynq-7020).
 *   zcu102   ML2Tuner's Table 1: the same core with every buffer twice as
 *            large (64 KiB, 64 KiB, 512 KiB, 256 KiB), timed as a ZCU102
 *            (Zynq UltraScale+ ZU9EG): 300 MHz (the paper gives no clock;
 *            TVM's ultra96 preset of the same family runs at 333), a
 *            128-bit AXI port, 3648 KiB of block RAM.
 * DMA latency (cycles to the first beat of a request): 32 on the pynq, 64
 * on the zcu102, about 200 ns of DDR latency at each clock.
 */
#include "vta_hw.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

const char *const vta_param_names[VTA_NPARAM] = {
	"LOG_INP_WIDTH", "LOG_WGT_WIDTH", "LOG_ACC_WIDTH", "LOG_BATCH", "LOG_BLOCK",
	"LOG_UOP_BUFF_SIZE", "LOG_INP_BUFF_SIZE", "LOG_WGT_BUFF_SIZE", "LOG_ACC_BUFF_SIZE",
};

/* Each parameter's range. The lowering works on int8 (or narrower) inputs
 * and weights and int32 sums, so LOG_ACC_WIDTH is 5 only. */
static const struct { int lo, hi; } param_range[VTA_NPARAM] = {
	{ 1, 3 }, { 1, 3 }, { 5, 5 }, { 0, 4 }, { 2, 6 },
	{ 7, 20 }, { 7, 22 }, { 7, 22 }, { 7, 22 },
};

static const struct preset {
	const char *name, *board;
	int log[VTA_NPARAM];
	double mhz;
	int axi_bytes, dma_latency;
	int64_t onchip_bytes;
} presets[] = {
	{ "default", "pynq", { 3, 3, 5, 0, 4, 15, 15, 18, 17 }, 100, 8, 32, 560 << 10 },
	{ "zcu102", "zcu102", { 3, 3, 5, 0, 4, 16, 16, 19, 18 }, 300, 16, 64, 3648 << 10 },
};

const vta_preset_info vta_presets_info[] = {
	{ "default", "TVM's vta_config.json defaults, timed as a pynq (100 MHz, 64-bit AXI)" },
	{ "zcu102", "ML2Tuner's ZCU102 table (every buffer doubled), 300 MHz, 128-bit AXI" },
};
const int vta_npresets = ArraySize(vta_presets_info);

void vta_param_range(int p, int *lo, int *hi)
{
	assert(p >= 0 && p < VTA_NPARAM);
	*lo = param_range[p].lo;
	*hi = param_range[p].hi;
}

int vta_preset_param(int i, int p)
{
	assert(i >= 0 && i < ArraySize(presets) && p >= 0 && p < VTA_NPARAM);
	return presets[i].log[p];
}

static void derive(vta_hw *hw)
{
	const int *l = hw->log;
	hw->batch = 1 << l[VTA_P_BATCH];
	hw->block = 1 << l[VTA_P_BLOCK];
	hw->inp_bits = 1 << l[VTA_P_INP_WIDTH];
	hw->wgt_bits = 1 << l[VTA_P_WGT_WIDTH];
	hw->acc_bits = 1 << l[VTA_P_ACC_WIDTH];
	hw->out_bits = hw->inp_bits;
	hw->inp_elem = (int64_t)hw->batch * hw->block * hw->inp_bits / 8;
	hw->wgt_elem = (int64_t)hw->block * hw->block * hw->wgt_bits / 8;
	hw->acc_elem = (int64_t)hw->batch * hw->block * hw->acc_bits / 8;
	hw->out_elem = (int64_t)hw->batch * hw->block * hw->out_bits / 8;
	hw->inp_depth = (1LL << l[VTA_P_INP_BUFF]) / hw->inp_elem;
	hw->wgt_depth = (1LL << l[VTA_P_WGT_BUFF]) / hw->wgt_elem;
	hw->acc_depth = (1LL << l[VTA_P_ACC_BUFF]) / hw->acc_elem;
	hw->out_depth = hw->acc_depth;
	hw->uop_depth = (1LL << l[VTA_P_UOP_BUFF]) / 4; /* a micro-op is 32 bits */
}

/* Check what the ranges alone do not: each buffer holds an entry, and all
 * of them fit the board. */
static int check(const char *spec, const vta_hw *hw)
{
	static const struct { int param; const char *what; } need[] = {
		{ VTA_P_INP_BUFF, "input" }, { VTA_P_WGT_BUFF, "weight" },
		{ VTA_P_ACC_BUFF, "accumulator" },
	};
	const int64_t elem[] = { hw->inp_elem, hw->wgt_elem, hw->acc_elem };
	for (int i = 0; i < ArraySize(need); i++)
		if ((1LL << hw->log[need[i].param]) < elem[i])
			return tk_seterr(TK_EINVAL, "target '%s': %s=%d holds no %s entry (%lld bytes "
			                 "with LOG_BATCH=%d, LOG_BLOCK=%d)", spec,
			                 vta_param_names[need[i].param], hw->log[need[i].param],
			                 need[i].what, (long long)elem[i], hw->log[VTA_P_BATCH],
			                 hw->log[VTA_P_BLOCK]);
	int64_t total = (1LL << hw->log[VTA_P_UOP_BUFF]) + (1LL << hw->log[VTA_P_INP_BUFF]) +
	                (1LL << hw->log[VTA_P_WGT_BUFF]) + (1LL << hw->log[VTA_P_ACC_BUFF]) +
	                hw->out_depth * hw->out_elem;
	if (total > hw->onchip_bytes)
		return tk_seterr(TK_EINVAL, "target '%s': the buffers need %lld KiB of on-chip RAM; "
		                 "the %s board has %lld KiB", spec, (long long)(total >> 10), hw->board,
		                 (long long)(hw->onchip_bytes >> 10));
	return TK_OK;
}

int vta_hw_parse(const char *spec, const char *args, vta_hw *hw)
{
	char buf[512];
	int given[VTA_NPARAM], nval = 0;
	const struct preset *pr = &presets[0];
	int seen_preset = 0;
	struct { int param, value; } val[VTA_NPARAM];

	assert(spec && args && hw);
	memset(hw, 0, sizeof *hw);
	memset(given, 0, sizeof given);
	if (strlen(args) >= sizeof buf)
		return tk_seterr(TK_EINVAL, "target spec too long");
	snprintf(buf, sizeof buf, "%s", args);
	char *item = buf;
	for (int more = buf[0] != 0; more;) {
		char *comma = strchr(item, ',');
		if (comma)
			*comma = 0;
		char *eq = strchr(item, '=');
		if (!*item)
			return tk_seterr(TK_EINVAL, "target '%s': empty item", spec);
		if (!eq)
			return tk_seterr(TK_EINVAL, "target '%s': '%s' is not key=value", spec, item);
		*eq = 0;
		const char *key = item, *v = eq + 1;
		if (!strcmp(key, "preset")) {
			int i;
			if (seen_preset++)
				return tk_seterr(TK_EINVAL, "target '%s': duplicate key 'preset'", spec);
			for (i = 0; i < ArraySize(presets) && strcmp(presets[i].name, v); i++)
				;
			if (i == ArraySize(presets))
				return tk_seterr(TK_EINVAL, "target '%s': unknown preset '%s' (expected "
				                 "default or zcu102)", spec, v);
			pr = &presets[i];
		} else {
			int p;
			int64_t x;
			for (p = 0; p < VTA_NPARAM && strcmp(vta_param_names[p], key); p++)
				;
			if (p == VTA_NPARAM)
				return tk_seterr(TK_EINVAL, "target '%s': unknown key '%s' (expected preset "
				                 "or a VTA parameter, LOG_INP_WIDTH ... LOG_ACC_BUFF_SIZE; "
				                 "see 'tunekit help targets')", spec, key);
			if (given[p]++)
				return tk_seterr(TK_EINVAL, "target '%s': duplicate key '%s'", spec, key);
			if (tk_parse_i64(v, &x) || x < param_range[p].lo || x > param_range[p].hi)
				return tk_seterr(TK_EINVAL, "target '%s': bad value '%s' for %s (expected an "
				                 "integer from %d to %d)", spec, v, key, param_range[p].lo,
				                 param_range[p].hi);
			val[nval].param = p;
			val[nval++].value = (int)x;
		}
		more = comma != NULL;
		if (more)
			item = comma + 1;
	}
	hw->preset = pr->name;
	hw->board = pr->board;
	memcpy(hw->log, pr->log, sizeof hw->log);
	for (int i = 0; i < nval; i++)
		hw->log[val[i].param] = val[i].value;
	hw->mhz = pr->mhz;
	hw->axi_bytes = pr->axi_bytes;
	hw->dma_latency = pr->dma_latency;
	hw->onchip_bytes = pr->onchip_bytes;
	derive(hw);
	return check(spec, hw);
}

static const struct preset *preset_of(const vta_hw *hw)
{
	for (int i = 0; i < ArraySize(presets); i++)
		if (!strcmp(presets[i].name, hw->preset))
			return &presets[i];
	assert(0);
	return &presets[0];
}

void vta_hw_spec(const vta_hw *hw, char *buf, size_t n)
{
	const struct preset *pr = preset_of(hw);
	size_t len = (size_t)snprintf(buf, n, "vta-sim:preset=%s", hw->preset);
	for (int p = 0; p < VTA_NPARAM && len < n; p++)
		if (hw->log[p] != pr->log[p])
			len += (size_t)snprintf(buf + len, n - len, ",%s=%d", vta_param_names[p], hw->log[p]);
}

void vta_hw_key(const vta_hw *hw, char *buf, size_t n)
{
	size_t len = (size_t)snprintf(buf, n, "vta-sim|simulated|%s %gMHz axi%d dma%d", hw->board,
	                              hw->mhz, hw->axi_bytes * 8, hw->dma_latency);
	for (int p = 0; p < VTA_NPARAM && len < n; p++)
		len += (size_t)snprintf(buf + len, n - len, "|%s=%d", vta_param_names[p], hw->log[p]);
	if (len < n)
		snprintf(buf + len, n - len, "|sim=%d", VTA_SIM_VERSION);
}
