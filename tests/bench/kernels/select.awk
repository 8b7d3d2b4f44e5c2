# select.awk: the library baseline of one BLAS workload in `make bench-kernels`
# (tests/bench/kernels.sh): of several timed candidates (a library under one
# setting: OpenBLAS with a forced core type, as the environment runs it, or
# with its own detection; BLIS), the fastest correct one.
#
# Input, TSV, one line per timed run of a candidate (kernels.sh times every
# candidate in several interleaved sweeps, so a candidate has several lines):
#   id  dflt  library  version  kernel  check  seconds
# id names the candidate; dflt is 1 on the lines of the candidate that runs
# as the environment has it (what a user's program gets by itself), else 0;
# check is "ok" or "wrong" (the result checked against a float64 reference);
# seconds is the median seconds per call of that run ("-" when wrong).
#
# Output, TSV:
#   best     id  library  version  kernel  seconds  runs
#   default  id  library  version  kernel  seconds  runs
#   wrong    id  library  version  kernel  -        runs
# best: the candidate with the lowest median over its runs, among those
# whose every run checked ok (the first given wins a tie), or
# "best<TAB>none" when no candidate is correct. default: the dflt candidate
# with its median ("-" if it checked wrong), whether or not it is the best.
# wrong: each candidate with a run that checked wrong, skipped.
BEGIN { FS = OFS = "\t" }
NF < 7 || $1 ~ /^#/ { next }
{
	if (!($1 in seen)) {
		seen[$1] = 1
		order[++n] = $1
		lib[$1] = $3; ver[$1] = $4; ker[$1] = $5
	}
	if ($2 == 1) dflt = $1
	runs[$1]++
	if ($6 != "ok" || $7 == "-") bad[$1] = 1
	else t[$1, runs[$1]] = $7 + 0
}
function median(id,   a, m, i, j, x) {
	m = 0
	for (i = 1; i <= runs[id]; i++)
		if ((id, i) in t) a[++m] = t[id, i]
	for (i = 2; i <= m; i++) { # insertion sort
		x = a[i]
		for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]
		a[j + 1] = x
	}
	return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
function line(tag, id, sec) {
	print tag, id, lib[id], ver[id], ker[id], sec, runs[id]
}
END {
	best = ""
	for (i = 1; i <= n; i++) {
		id = order[i]
		if (id in bad) continue
		med[id] = median(id)
		if (best == "" || med[id] < med[best]) best = id
	}
	if (best == "") print "best", "none"
	else line("best", best, sprintf("%.6g", med[best]))
	if (dflt != "") line("default", dflt, (dflt in bad) ? "-" : sprintf("%.6g", med[dflt]))
	for (i = 1; i <= n; i++)
		if (order[i] in bad) line("wrong", order[i], "-")
}
