#!/bin/sh
# AdaTune ablation (make bench-adatune; not a test): real measurements on
# this CPU. For each task and seed, four runs under the same wall-clock
# budget, one after the other (never two measurements at once):
#   xgb+sa+fixed       AutoTVM's tuner, the baseline
#   rfei+sa+fixed      + the uncertainty-aware surrogate with EI
#   rfei+csa+fixed     + contextual simulated annealing
#   rfei+csa+adaptive  + the adaptive evaluator
# Every run measures with n = number x repeat = 100 x 5 calls (the paper's
# n = 500; the adaptive evaluator's cap, in micro-batches of 50) and has its
# own compile cache, so no run compiles for a later one.
# Prints best GFLOPS at quarters of the budget, the time each run needs to
# come within 2% (the timing noise) of the best throughput of the baseline
# run of the same task and seed,
# and the time spent in timed kernel calls per trial; then the accuracy of
# the adaptive evaluator against a long fixed measurement (n = 100 x 20) on
# the fastest distinct configurations of each task the runs found, 100 in all.
# Medians over seeds; "never" counts as more than the budget.
#
# usage: adatune.sh TUNEKIT WORKDIR [SEEDS [BUDGET_S]]
set -e
TK=$1 DIR=$2 SEEDS=${3:-3} BUDGET=${4:-180}
TASKS=${ADATUNE_TASKS:-"conv2d:c=64,h=56,w=56,k=128,r=1,s=1,stride=2
batch_matmul:b=12,m=128,n=128,k=64
dense:m=256,n=256,k=256"}
METHODS="xgb+sa+fixed rfei+sa+fixed rfei+csa+fixed rfei+csa+adaptive"
MEAS="--number 100 --repeat 5 --timeout 30"
mkdir -p "$DIR"
DB=$DIR/adatune.db
rm -f "$DB" "$DB-wal" "$DB-shm" "$DIR/runs.tsv"

flags() {
	case $1 in
	xgb+sa+fixed) echo "--model xgb --search sa" ;;
	rfei+sa+fixed) echo "--model rfei --search sa" ;;
	rfei+csa+fixed) echo "--model rfei --search csa" ;;
	rfei+csa+adaptive) echo "--model rfei --search csa --evaluator adaptive" ;;
	esac
}

echo "AdaTune ablation: $SEEDS seeds, ${BUDGET} s per run, n = 100 x 5, $(nproc) CPUs" >&2
echo "$TASKS" | while read -r task; do
	s=1
	while [ "$s" -le "$SEEDS" ]; do
		for m in $METHODS; do
			rm -rf "$DIR/cache"
			# shellcheck disable=SC2046
			"$TK" tune -q --db "$DB" --task "$task" --trials 100000 --time-budget "$BUDGET" \
				--seed "$s" --cache-dir "$DIR/cache" $MEAS $(flags "$m") >/dev/null
			run=$(sqlite3 "$DB" "SELECT MAX(id) FROM run")
			printf '%s\t%s\t%s\t%s\n' "$task" "$s" "$m" "$run" >>"$DIR/runs.tsv"
			echo "  $task seed $s $m: run $run" >&2
		done
		s=$((s + 1))
	done
done
rm -rf "$DIR/cache"

# per run: the curve (seconds, best GFLOPS) and the timed-call seconds per trial
"$TK" report --db "$DB" --format tsv curve $(cut -f4 "$DIR/runs.tsv" | sed 's/^/--run /') \
	>"$DIR/curve.tsv"
sqlite3 -separator '	' "$DB" "SELECT run_id, COUNT(*), SUM(valid),
	AVG(CASE WHEN valid THEN median * number * nrepeat END), AVG(number * nrepeat)
	FROM measurement GROUP BY run_id" >"$DIR/meas.tsv"

awk -F'\t' -v B="$BUDGET" -v methods="$METHODS" '
FILENAME ~ /runs.tsv$/ { key[$4] = $1 SUBSEP $2; meth[$4] = $3; task[$1] = 1; next }
FILENAME ~ /meas.tsv$/ { trials[$1] = $2; runsec[$1] = $4; calls[$1] = $5; next }
FNR > 1 {  # curve: run task trial seconds best_gflops ...
	r = $1; n[r]++; t[r, n[r]] = $4; g[r, n[r]] = $5
}
function best_at(r, sec,   i, b) { b = 0
	for (i = 1; i <= n[r]; i++) if (t[r, i] <= sec) b = g[r, i]; else break
	return b }
function reach(r, target,   i) {
	for (i = 1; i <= n[r]; i++) if (g[r, i] >= target) return t[r, i]
	return -1 }
function median(a, k,   i, j, x) {   # a[1..k], -1 (never) as infinity
	for (i = 1; i <= k; i++) if (a[i] < 0) a[i] = 1e30
	for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
	x = k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	return x }
END {
	nm = split(methods, M, " ")
	for (r in meth) if (meth[r] == M[1]) base[key[r]] = r
	printf "%-38s %-18s %7s %7s %7s %7s %9s %7s %9s %7s\n", "task", "method", "25%", "50%", "75%",
		"final", "to-base", "speedup", "run-ms/tr", "ratio"
	for (tk in task) {
		for (mi = 1; mi <= nm; mi++) {
			k = 0
			for (r in meth) {
				if (meth[r] != M[mi]) continue
				split(key[r], kk, SUBSEP); if (kk[1] != tk) continue
				b = base[key[r]]; k++
				for (q = 1; q <= 3; q++) Q[q, k] = best_at(r, B * q / 4)
				Q[4, k] = g[r, n[r]]
				target = 0.98 * g[b, n[b]]
				tr[k] = reach(r, target); tb[k] = reach(b, target)
				sp[k] = tr[k] < 0 ? -1 : tb[k] / (tr[k] > 0 ? tr[k] : 1e-9)
				ms[k] = runsec[r] * 1e3; msb[k] = runsec[b] * 1e3
			}
			if (!k) continue
			for (q = 1; q <= 4; q++) { for (i = 1; i <= k; i++) a[i] = Q[q, i]; qq[q] = median(a, k) }
			for (i = 1; i <= k; i++) a[i] = tr[i]; ttr = median(a, k)
			# a run that never got there has speed-up 0, not infinity
			for (i = 1; i <= k; i++) a[i] = sp[i] < 0 ? 0 : sp[i]; spd = median(a, k)
			for (i = 1; i <= k; i++) a[i] = ms[i]; mm = median(a, k)
			for (i = 1; i <= k; i++) a[i] = msb[i]; mmb = median(a, k)
			printf "%-38s %-18s %7.1f %7.1f %7.1f %7.1f %9s %6.2fx %9.1f %6.2fx\n", tk, M[mi],
				qq[1], qq[2], qq[3], qq[4], (ttr >= 1e30 ? "never" : sprintf("%.0f s", ttr)),
				spd, mm, mmb / mm
		}
	}
	print ""
	print "25%..75%: best GFLOPS after that share of the budget; final: at the end of the run (the"
	print "budget is checked after each batch); to-base: seconds to come within 2% (the timing"
	print "noise) of the final best of the xgb+sa+fixed run of the same task and seed; speedup:"
	print "the baseline'"'"'s time to that over this (paper: 1.3-3.9x less time to the same quality);"
	print "run-ms/tr: milliseconds of timed kernel calls per valid trial; ratio: the baseline'"'"'s"
	print "over this (paper: 2.5x less measurement time with the adaptive evaluator)."
}' "$DIR/runs.tsv" "$DIR/meas.tsv" "$DIR/curve.tsv"

# One plot per task, seed 1: best GFLOPS against seconds.
echo "$TASKS" | while read -r task; do
	runs=$(awk -F'\t' -v t="$task" '$1 == t && $2 == 1 { printf " --run %s", $4 }' "$DIR/runs.tsv")
	name=$(echo "${task%%:*}" | tr -c 'a-z0-9_\n' _)
	# shellcheck disable=SC2086
	"$TK" report --db "$DB" curve $runs --plot "$DIR/adatune-$name.svg" --x seconds
done
echo "plots: $DIR/adatune-*.svg (runs in the order $METHODS)"

# Evaluator accuracy: the 100 fastest distinct configurations of the runs,
# adaptive against a long fixed measurement, interleaved in chunks of 10.
sqlite3 -separator '	' "$DB" "SELECT key, text FROM (SELECT t.key, c.text, ROW_NUMBER()
	OVER (PARTITION BY t.id ORDER BY MIN(m.median)) AS k FROM measurement m
	JOIN config c ON c.id = m.config_id JOIN task t ON t.id = c.task_id
	WHERE m.valid GROUP BY c.id) ORDER BY k LIMIT 100" >"$DIR/acc.cfg"
ACC=$DIR/acc.db
rm -f "$ACC" "$ACC-wal" "$ACC-shm"
split -l 10 "$DIR/acc.cfg" "$DIR/acc.part."
for p in "$DIR"/acc.part.*; do
	"$TK" measure -q --db "$ACC" --config - --number 100 --repeat 5 --evaluator adaptive \
		--timeout 60 <"$p" >>"$DIR/acc.adaptive"
	"$TK" measure -q --db "$ACC" --config - --number 100 --repeat 20 --evaluator fixed \
		--timeout 60 <"$p" >>"$DIR/acc.fixed"
done
rm -f "$DIR"/acc.part.*
sqlite3 -separator '	' "$ACC" "SELECT m.config_id, r.argv LIKE '%adaptive%', m.median,
	m.number * m.nrepeat * m.median FROM measurement m JOIN run r ON r.id = m.run_id
	WHERE m.valid" |
awk -F'\t' '
$2 == 1 { a[$1] = $3; at += $4 } $2 == 0 { f[$1] = $3; ft += $4 }
function rank(x, r, n,   i, j, c) {
	for (i = 1; i <= n; i++) { c = 0; for (j = 1; j <= n; j++) c += (x[j] < x[i]) + (x[j] == x[i]) / 2; r[i] = c + 0.5 } }
END {
	n = 0
	for (c in a) if (c in f) { n++; xa[n] = a[c]; xf[n] = f[c]; e[n] = (a[c] > f[c] ? a[c] - f[c] : f[c] - a[c]) / f[c] }
	for (i = 2; i <= n; i++) { x = e[i]; for (j = i - 1; j >= 1 && e[j] > x; j--) e[j + 1] = e[j]; e[j + 1] = x }
	med = n % 2 ? e[(n + 1) / 2] : (e[n / 2] + e[n / 2 + 1]) / 2
	rank(xa, ra, n); rank(xf, rf, n)
	for (i = 1; i <= n; i++) { ma += ra[i] / n; mf += rf[i] / n }
	for (i = 1; i <= n; i++) { sab += (ra[i] - ma) * (rf[i] - mf); saa += (ra[i] - ma) ^ 2; sff += (rf[i] - mf) ^ 2 }
	printf "\nadaptive evaluator vs fixed n = 100 x 20 on %d configurations:\n", n
	printf "  median relative error of the latency %.1f%%, Spearman rank correlation %.3f,\n",
		100 * med, sab / sqrt(saa * sff)
	printf "  timed-call seconds %.1f (adaptive) vs %.1f (fixed, 4x the adaptive cap)\n", at, ft
}'
