/*
 * onednn: what oneDNN dispatches to on this machine, for the table of
 * `make bench-kernels`: its version and the instruction set its CPU engine
 * uses (dnnl_get_effective_cpu_isa: the best the CPU has, unless
 * ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA caps it). tests/bench/kernels.sh
 * compares that with the best the CPU's flags allow.
 *
 *   usage: onednn
 *
 * Prints one TSV line: "oneDNN", the version, the ISA in oneDNN's spelling
 * of ONEDNN_MAX_CPU_ISA (lower case: avx512_core_amx, avx2, ...). Exit
 * status 0.
 */
#include <stdio.h>

#include <oneapi/dnnl/dnnl.h>

int main(void)
{
	static const struct { dnnl_cpu_isa_t isa; const char *name; } aIsa[] = {
		{ dnnl_cpu_isa_sse41, "sse41" },
		{ dnnl_cpu_isa_avx, "avx" },
		{ dnnl_cpu_isa_avx2, "avx2" },
		{ dnnl_cpu_isa_avx2_vnni, "avx2_vnni" },
		{ dnnl_cpu_isa_avx512_mic, "avx512_mic" },
		{ dnnl_cpu_isa_avx512_mic_4ops, "avx512_mic_4ops" },
		{ dnnl_cpu_isa_avx512_core, "avx512_core" },
		{ dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni" },
		{ dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16" },
		{ dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx" },
	};
	const dnnl_version_t *v = dnnl_version();
	dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
	const char *name = "all";
	for (size_t i = 0; i < sizeof aIsa / sizeof aIsa[0]; i++)
		if (aIsa[i].isa == isa)
			name = aIsa[i].name;
	printf("oneDNN\t%d.%d.%d\t%s\n", v->major, v->minor, v->patch, name);
	return 0;
}
