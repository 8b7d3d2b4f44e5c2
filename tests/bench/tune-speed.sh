#!/bin/sh
# Tuning speed with and without bounded timing (make bench-tune-speed; not a
# test). For each task and seed, one binary tunes TRIALS trials twice, with
# `--bound 0` (off) and with its default bound (on), the two in turn first
# (off first on odd seeds), each from an empty compile cache of its own and
# with --confirm 0, as issue 56 measured. Then the best configuration each
# found (report best: never a bounded record) is timed again, each with a
# measure of long repeats, alternating for ROUNDS rounds, so that both bests
# are compared at the same moment rather than at the noisy moment each tune
# saw them. Prints per task, seed and mode the wall seconds, seconds per
# trial, bounded trials and the time split of `report runs` (search, fit,
# compile, run), the re-timed best; then per task the medians over seeds of
# s/trial off and on and of the best latency ratio on / off (within 1.02: the
# same kernels within noise), and for how many seeds both tunes found the
# very same best configuration (its ratio is then the re-timing's noise).
#
# usage: tune-speed.sh TUNEKIT WORKDIR [SEEDS [TRIALS]]
#   SEEDS a count (default 3), TRIALS a tune's budget (default 96)
# TUNE_SPEED_TASKS (one task a line) overrides the mix; TUNE_SPEED_ROUNDS
# the re-timing rounds (default 3); TUNE_SPEED_BOUND the bound of "on"
# (default: the binary's own).
set -e
BIN=$1 DIR=$2 SEEDS=${3:-3} TRIALS=${4:-96}
[ -x "$BIN" ] && [ -n "$DIR" ] || {
	echo "usage: tune-speed.sh TUNEKIT WORKDIR [SEEDS [TRIALS]]" >&2
	exit 2
}
# GEMM 1024^3, a ViT-B transformer dense layer, a ResNet 3x3 convolution, a
# BERT-base attention batch_matmul, a MobileNet-v2 depthwise convolution
TASKS=${TUNE_SPEED_TASKS:-"dense:m=1024,n=1024,k=1024
dense:m=197,n=3072,k=768
conv2d:c=128,h=28,w=28,k=128,pad=1
batch_matmul:b=12,m=128,n=64,k=128
depthwise_conv2d:c=144,h=56,w=56,pad=1"}
ROUNDS=${TUNE_SPEED_ROUNDS:-3}
ON=${TUNE_SPEED_BOUND:+--bound $TUNE_SPEED_BOUND}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
OUT=$DIR/tunes.tsv
: >"$OUT"
now() { date +%s.%N; }

# tune MODE TASK-NUMBER TASK SEED: one tune; appends its row to $OUT
tune() {
	db=$DIR/tune-$1-$2-$4.db cache=$DIR/cache-$1
	rm -rf "$cache" "$db" "$db-wal" "$db-shm"
	mkdir -m 700 "$cache"
	if [ "$1" = off ]; then flags="--bound 0"; else flags=$ON; fi
	t0=$(now)
	# shellcheck disable=SC2086
	"$BIN" tune -q --db "$db" --cache-dir "$cache" --task "$3" --trials "$TRIALS" \
		--seed "$4" --confirm 0 $flags >/dev/null
	t1=$(now)
	rm -rf "$cache"
	"$BIN" report --db "$db" --format tsv runs >"$DIR/runs.tsv"
	split=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		{ print $c["bounded"] "\t" $c["search_s"] "\t" $c["fit_s"] "\t" $c["compile_s"] "\t" $c["run_s"] }' \
		"$DIR/runs.tsv")
	best=$("$BIN" report --db "$db" --format tsv best | awk -F'\t' 'NR == 2 { print $3 }')
	wall=$(echo "$t1 - $t0" | bc)
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$2" "$4" "$1" "$wall" "$split" "$best" >>"$OUT"
	echo "  $3 seed $4 $1: $wall s" >&2
}

# retime MODE TASK CONFIG: one median latency of CONFIG
retime() {
	db=$DIR/retime.db
	rm -f "$db" "$db-wal" "$db-shm"
	"$BIN" measure -q --db "$db" --cache-dir "$DIR/rcache" --task "$2" --config "$3" \
		--repeat 10 --min-repeat-ms 50 >/dev/null
	sqlite3 "$db" "SELECT median FROM measurement WHERE valid"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "Tuning speed, --bound 0 against the default: $TRIALS trials a tune, $SEEDS seeds," \
	"$ROUNDS re-timing rounds, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')," \
	"$(nproc) CPUs" >&2
: >"$DIR/best.tsv"
i=0
echo "$TASKS" | sed '/^$/d' | while read -r task; do
	i=$((i + 1))
	s=1
	while [ "$s" -le "$SEEDS" ]; do
		if [ $((s % 2)) -eq 1 ]; then
			tune off "$i" "$task" "$s"
			tune on "$i" "$task" "$s"
		else
			tune on "$i" "$task" "$s"
			tune off "$i" "$task" "$s"
		fi
		coff=$(awk -F'\t' -v i="$i" -v s="$s" '$1 == i && $2 == s && $3 == "off" { print $10 }' "$OUT")
		con=$(awk -F'\t' -v i="$i" -v s="$s" '$1 == i && $2 == s && $3 == "on" { print $10 }' "$OUT")
		rm -rf "$DIR/rcache"
		mkdir -m 700 "$DIR/rcache"
		: >"$DIR/roff.txt"
		: >"$DIR/ron.txt"
		r=1
		while [ "$r" -le "$ROUNDS" ]; do
			if [ $((r % 2)) -eq 1 ]; then
				retime off "$task" "$coff" >>"$DIR/roff.txt"
				retime on "$task" "$con" >>"$DIR/ron.txt"
			else
				retime on "$task" "$con" >>"$DIR/ron.txt"
				retime off "$task" "$coff" >>"$DIR/roff.txt"
			fi
			r=$((r + 1))
		done
		rm -rf "$DIR/rcache"
		same=0
		[ "$coff" != "$con" ] || same=1
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "$task" "$s" "$(median <"$DIR/roff.txt")" \
			"$(median <"$DIR/ron.txt")" "$same" >>"$DIR/best.tsv"
		s=$((s + 1))
	done
done

awk -F'\t' -v trials="$TRIALS" '
function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
FILENAME ~ /best.tsv$/ {
	task[$1] = $2
	best[$1, $3, "off"] = $4
	best[$1, $3, "on"] = $5
	nr[$1]++
	ratio[$1, nr[$1]] = $4 > 0 ? $5 / $4 : 0
	same[$1] += $6
	next
}
{ row[++n] = $0 }
END {
	printf "%-40s %4s %4s %8s %8s %7s %8s %7s %9s %8s %12s\n", "task", "seed", "mode", "wall_s",
		"s/trial", "bounded", "search_s", "fit_s", "compile_s", "run_s", "best_s"
	for (k = 1; k <= n; k++) {
		split(row[k], f, "\t")
		printf "%-40s %4s %4s %8.1f %8.3f %7s %8s %7s %9s %8s %12.4g\n", task[f[1]], f[2], f[3],
			f[4], f[4] / trials, f[5], f[6], f[7], f[8], f[9], best[f[1], f[2], f[3]]
		m = f[3] == "off" ? 0 : 1
		c = ++cnt[f[1], m]
		spt[f[1], m, c] = f[4] / trials
	}
	printf "\n%-40s %12s %12s %12s %10s\n", "task (medians over seeds)", "off_s/trial",
		"on_s/trial", "best on/off", "same_best"
	for (t = 1; t in task; t++) {
		for (m = 0; m <= 1; m++) {
			delete v
			for (c = 1; c <= cnt[t, m]; c++)
				v[c] = spt[t, m, c]
			med[m] = median(v, cnt[t, m])
		}
		delete v
		for (c = 1; c <= nr[t]; c++)
			v[c] = ratio[t, c]
		printf "%-40s %12.3f %12.3f %12.3f %6d of %d\n", task[t], med[0], med[1], median(v, nr[t]),
			same[t], nr[t]
	}
}' "$DIR/best.tsv" "$OUT"
