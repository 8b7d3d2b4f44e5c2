#!/bin/sh
# Measurement throughput (make bench-measure; not a test): configurations
# measured per minute of wall time by `tunekit measure` on a fixed mix of
# tasks (a GEMM, a BERT batch_matmul, ResNet-18's 3x3 and 1x1 convolutions,
# a MobileNet depthwise convolution), each run from an empty compile cache
# of its own, the new binary against a baseline binary. The two alternate,
# in turn first, for ROUNDS rounds; round r samples the same configurations
# (seed r) for both. Prints per round and binary the wall seconds and
# configurations per minute, then the medians over rounds, the median of
# the per-round ratios new / base, and where the new binary's time went
# (its run_log; a binary that logs no split shows "-").
#
# usage: measure.sh NEW BASE WORKDIR [ROUNDS [SAMPLE]]
#   NEW, BASE  tunekit binaries; SAMPLE configurations per task (default 8)
# MEASURE_TASKS (one task a line), MEASURE_FLAGS override the mix and the
# measurement flags (default: the issue's --repeat 2 --min-repeat-ms 5 --timeout 3).
set -e
NEW=$1 BASE=$2 DIR=$3 ROUNDS=${4:-3} SAMPLE=${5:-8}
[ -x "$NEW" ] && [ -x "$BASE" ] && [ -n "$DIR" ] || {
	echo "usage: measure.sh NEW BASE WORKDIR [ROUNDS [SAMPLE]]" >&2
	exit 2
}
TASKS=${MEASURE_TASKS:-$(cat "$(dirname "$0")/measure-tasks.txt")}
FLAGS=${MEASURE_FLAGS:-"--repeat 2 --min-repeat-ms 5 --timeout 3"}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
OUT=$DIR/rounds.tsv
: >"$OUT"

targs=$(echo "$TASKS" | sed '/^$/d; s/^/--task /' | tr '\n' ' ')
now() { date +%s.%N; }

# one measure run: binary name, binary, round
run() {
	db=$DIR/$1-$3.db cache=$DIR/cache-$1-$3
	rm -rf "$cache" "$db" "$db-wal" "$db-shm"
	mkdir -m 700 "$cache"
	t0=$(now)
	# shellcheck disable=SC2086
	"$2" measure -q --db "$db" --cache-dir "$cache" --seed "$3" --sample "$SAMPLE" \
		$targs $FLAGS >"$DIR/$1-$3.tsv"
	t1=$(now)
	rm -rf "$cache"
	n=$(sqlite3 "$db" "SELECT count(*) FROM measurement")
	valid=$(sqlite3 "$db" "SELECT count(*) FROM measurement WHERE valid")
	split=$(sqlite3 -separator ' ' "$db" "SELECT
		coalesce(sum(CASE WHEN key = 'seconds:codegen' THEN value END), '-'),
		coalesce(sum(CASE WHEN key = 'seconds:compile' THEN value END), '-'),
		coalesce(sum(CASE WHEN key = 'seconds:reference' THEN value END), '-'),
		coalesce(sum(CASE WHEN key = 'seconds:run' THEN value END)
		         - coalesce(sum(CASE WHEN key = 'seconds:reference' THEN value END), 0), '-'),
		coalesce(sum(CASE WHEN key = 'seconds:store' THEN value END), '-')
		FROM run_log")
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$3" "$1" "$(echo "$t1 - $t0" | bc)" "$n" "$valid" \
		"$split" >>"$OUT"
	echo "  round $3 $1: $n configurations ($valid valid) in $(echo "$t1 - $t0" | bc) s" >&2
}

echo "Measurement throughput: $(echo "$TASKS" | sed '/^$/d' | wc -l) tasks x $SAMPLE" \
	"configurations, $ROUNDS rounds, $(nproc) CPUs" >&2
r=1
while [ "$r" -le "$ROUNDS" ]; do
	if [ $((r % 2)) -eq 1 ]; then
		run base "$BASE" "$r"
		run new "$NEW" "$r"
	else
		run new "$NEW" "$r"
		run base "$BASE" "$r"
	fi
	r=$((r + 1))
done

awk -F'\t' -v cpu="$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')" \
	-v ncpu="$(nproc)" -v flags="$FLAGS" -v sample="$SAMPLE" '
function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	split($6, s, " ")
	wall[$2, $1] = $3; cfg[$2, $1] = $4; ok[$2, $1] = $5
	for (k = 1; k <= 5; k++)
		sp[$2, $1, k] = s[k]
	if ($1 > nr)
		nr = $1
}
END {
	printf "Measurement throughput: measure --sample %d per task, %s, empty compile cache\n", sample, flags
	printf "Machine: %s, %d CPUs\n\n", cpu, ncpu
	printf "%-5s %-4s %8s %7s %6s %8s %9s %9s %8s %8s %8s\n", "round", "bin", "wall_s", "configs",
		"valid", "cfg/min", "codegen_s", "compile_s", "ref_s", "run_s", "store_s"
	for (r = 1; r <= nr; r++)
		for (b = 0; b < 2; b++) {
			x = b ? "new" : "base"
			printf "%-5d %-4s %8.1f %7d %6d %8.1f", r, x, wall[x, r], cfg[x, r], ok[x, r],
				60 * cfg[x, r] / wall[x, r]
			for (k = 1; k <= 5; k++)
				printf " %*s", k == 1 || k == 2 ? 9 : 8, sp[x, r, k] == "-" ? "-" : sprintf("%.2f", sp[x, r, k])
			printf "\n"
			rate[x, r] = 60 * cfg[x, r] / wall[x, r]
		}
	printf "\nmedians over %d rounds   cfg/min   s/config  codegen_s compile_s    ref_s    run_s  store_s\n", nr
	for (b = 0; b < 2; b++) {
		x = b ? "new" : "base"
		for (r = 1; r <= nr; r++) { a[r] = rate[x, r]; w[r] = wall[x, r] / cfg[x, r] }
		printf "%-24s %8.1f %10.2f", x, median(a, nr), median(w, nr)
		for (k = 1; k <= 5; k++) {
			if (sp[x, 1, k] == "-") { printf " %*s", k < 3 ? 9 : 8, "-"; continue }
			for (r = 1; r <= nr; r++) a[r] = sp[x, r, k]
			printf " %*.2f", k < 3 ? 9 : 8, median(a, nr)
		}
		printf "\n"
	}
	for (r = 1; r <= nr; r++) a[r] = rate["new", r] / rate["base", r]
	printf "new / base, median of the per-round ratios: %.2fx configurations per minute\n", median(a, nr)
}' "$OUT"
