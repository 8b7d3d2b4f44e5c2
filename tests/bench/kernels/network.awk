# The network rows of bench-kernels (tests/bench/kernels.sh): a network's
# convolutions end to end, the sum over its layers of weight x median time,
# tunekit's kernels in one layout against oneDNN per layer.
#
# awk -F'\t' -v net=NAME -v layout=LAYOUT -v thr=T -f network.awk NETFILE RESULTS
#
# NETFILE: the network's "WEIGHT<TAB>TASK" lines in that layout ('#' comments
# and the header skipped); RESULTS: kernels.sh's results.tsv (task, threads,
# status, tk_gflops, lib_gflops, lib_reorder_gflops, ..., flops in column
# 13), or for a reorder task a row with tunekit's time alone (status "ro",
# its seconds in column 13 and no library side). Only convolutions and
# reorders count (a dense classifier layer is BLAS's, not this comparison's).
#
# Prints one line: net, layout, threads, the layers found of the layers
# counted, tunekit's sum (ms, reorders included), the reorders' share of it,
# oneDNN's sum from NCHW to NCHW per layer with its reorders (lib+ro), the
# ratio (oneDNN / tunekit: above 1, tunekit is faster), oneDNN's kernels
# alone (lib, its formats kept between layers) and that ratio. A network with
# a layer not measured prints "-" for its sums: a partial sum is no result.
FNR == NR {
	if ($0 ~ /^#/ || $1 == "weight" || NF < 2) next
	if ($2 !~ /^(conv2d|conv2d_nchwc|depthwise_conv2d|depthwise_conv2d_nchwc|layout_transform):/) next
	want[$2] = $1; nwant++
	next
}
FNR == 1 { next }
$2 == thr && ($1 in want) && !($1 in got) {
	w = want[$1]
	if ($3 == "ro" && $13 != "-") {
		got[$1] = 1; tk += w * $13; ro += w * $13
	} else if ($3 == "ok" && $13 != "-" && $6 != "-") {
		got[$1] = 1
		tk += w * $13 / ($4 * 1e9)
		libro += w * $13 / ($6 * 1e9)
		lib += w * $13 / ($5 * 1e9)
		nconv++
	}
}
END {
	for (t in got) n++
	if (n < nwant || nconv == 0)
		printf "%-16s %-8s %3s %7s %10s %8s %10s %7s %10s %7s\n", net, layout, thr,
		       n + 0 "/" nwant, "-", "-", "-", "-", "-", "-"
	else
		printf "%-16s %-8s %3s %7s %10.3f %7.1f%% %10.3f %7.3f %10.3f %7.3f\n", net, layout, thr,
		       n "/" nwant, tk * 1e3, 100 * ro / tk, libro * 1e3, libro / tk, lib * 1e3, lib / tk
}
