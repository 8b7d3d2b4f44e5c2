#!/bin/sh
# Tuning speed (make bench-tune-speed; not a test). Two sides tune the same
# tasks with the same seeds, interleaved (side a first on odd seeds), each
# tune from an empty compile cache of its own and with --confirm 0, as
# issue 56 measured:
#   - by default, a = this binary with --bound 0, b = this binary as it is;
#   - with TUNE_SPEED_BASE=BIN, a = that binary (the merge-base's, say) as it
#     is, b = this binary as it is.
# With TUNE_SPEED_GUIDED=1 both tunes are guided by a tlp model file, each
# side's trained by its own binary on the shipped dataset's records of this
# CPU (else of the hardware with the most programs), same seed and rounds.
# Then the best configuration each side found (report best: never a bounded
# record) is timed again, each with a measure of long repeats, alternating
# for ROUNDS rounds, so that both bests are compared at the same moment
# rather than at the noisy moment each tune saw them. Prints per task, seed
# and side the wall seconds, seconds per trial, bounded trials and the time
# split of `report runs` (search, fit, compile, run), the re-timed best;
# then per task the medians over seeds of s/trial of each side and of the
# best latency ratio b / a (within 1.02: the same kernels within noise), and
# for how many seeds both found the very same best configuration (its ratio
# is then the re-timing's noise).
#
# usage: tune-speed.sh TUNEKIT WORKDIR [SEEDS [TRIALS]]
#   SEEDS a count (default 3), TRIALS a tune's budget (default 96)
# TUNE_SPEED_TASKS (one task a line) overrides the mix; TUNE_SPEED_ROUNDS
# the re-timing rounds (default 3); TUNE_SPEED_BOUND the bound of side b
# (default: the binary's own); TUNE_SPEED_DATASET the dataset (default
# data/dataset/dataset.db.gz of each binary's tree, else of this script's).
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
BFLAGS=${TUNE_SPEED_BOUND:+--bound $TUNE_SPEED_BOUND}
if [ -n "${TUNE_SPEED_BASE:-}" ]; then
	ABIN=$TUNE_SPEED_BASE AFLAGS= A=base B=new
else
	ABIN=$BIN AFLAGS="--bound 0" A=off B=on
fi
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
OUT=$DIR/tunes.tsv
: >"$OUT"
now() { date +%s.%N; }

# With TUNE_SPEED_GUIDED=1: each side's model file, trained by its binary.
AMODEL= BMODEL=
if [ "${TUNE_SPEED_GUIDED:-0}" = 1 ]; then
	# a side's dataset is its own tree's (a store schema newer than its
	# binary is refused); the records are the same
	here=$(cd "$(dirname "$0")/../.." && pwd)
	zcat "${TUNE_SPEED_DATASET:-$here/data/dataset/dataset.db.gz}" >"$DIR/dataset.db"
	f=$(grep -m1 '^cpu family' /proc/cpuinfo | sed 's/.*: //')
	m=$(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | sed 's/.*: //')
	hw=$(sqlite3 "$DIR/dataset.db" "SELECT id FROM hardware WHERE cpu LIKE '%(family $f model $m)'
		ORDER BY id LIMIT 1")
	[ -n "$hw" ] || hw=$(sqlite3 "$DIR/dataset.db" "SELECT hardware FROM measurement
		GROUP BY hardware ORDER BY count(DISTINCT config) DESC LIMIT 1")
	for side in a b; do
		if [ $side = a ]; then b=$ABIN; else b=$BIN; fi
		ds=$(dirname "$b")/data/dataset/dataset.db.gz
		if [ -z "${TUNE_SPEED_DATASET:-}" ] && [ -f "$ds" ]; then
			zcat "$ds" >"$DIR/train-$side.db"
		else
			cp "$DIR/dataset.db" "$DIR/train-$side.db"
		fi
		"$b" extract-features -q --db "$DIR/train-$side.db" --kind tlp --hardware "$hw" >/dev/null
		t0=$(now)
		"$b" train -q --db "$DIR/train-$side.db" --model tlp --feature tlp --hardware "$hw" \
			--seed 1 --out "$DIR/tlp-$side.model" >/dev/null
		echo "  tlp model of side $side on hardware $hw: $(echo "$(now) - $t0" | bc) s" >&2
		rm -f "$DIR/train-$side.db"*
	done
	AMODEL="--model-file $DIR/tlp-a.model" BMODEL="--model-file $DIR/tlp-b.model"
fi

# tune MODE TASK-NUMBER TASK SEED: one tune; appends its row to $OUT
tune() {
	db=$DIR/tune-$1-$2-$4.db cache=$DIR/cache-$1
	rm -rf "$cache" "$db" "$db-wal" "$db-shm"
	mkdir -m 700 "$cache"
	if [ "$1" = a ]; then b=$ABIN flags="$AFLAGS $AMODEL"; else b=$BIN flags="$BFLAGS $BMODEL"; fi
	t0=$(now)
	# shellcheck disable=SC2086
	"$b" tune -q --db "$db" --cache-dir "$cache" --task "$3" --trials "$TRIALS" \
		--seed "$4" --confirm 0 $flags >/dev/null
	t1=$(now)
	rm -rf "$cache"
	"$b" report --db "$db" --format tsv runs >"$DIR/runs.tsv"
	split=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		function col(k) { return (k in c) ? $c[k] : 0 } # a binary before --bound has no bounded
		{ print col("bounded") "\t" col("search_s") "\t" col("fit_s") "\t" col("compile_s") "\t" col("run_s") }' \
		"$DIR/runs.tsv")
	best=$("$b" report --db "$db" --format tsv best | awk -F'\t' 'NR == 2 { print $3 }')
	wall=$(echo "$t1 - $t0" | bc)
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$2" "$4" "$1" "$wall" "$split" "$best" >>"$OUT"
	echo "  $3 seed $4 $1: $wall s" >&2
}

# retime TASK CONFIG: one median latency of CONFIG (this binary's measure)
retime() {
	db=$DIR/retime.db
	rm -f "$db" "$db-wal" "$db-shm"
	"$BIN" measure -q --db "$db" --cache-dir "$DIR/rcache" --task "$1" --config "$2" \
		--repeat 10 --min-repeat-ms 50 >/dev/null
	sqlite3 "$db" "SELECT median FROM measurement WHERE valid"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "Tuning speed, side a ($A: $ABIN $AFLAGS) against b ($B: $BIN $BFLAGS)${AMODEL:+, guided by tlp}: $TRIALS trials a tune, $SEEDS seeds," \
	"$ROUNDS re-timing rounds, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')," \
	"$(nproc) CPUs" >&2
: >"$DIR/best.tsv"
i=0
echo "$TASKS" | sed '/^$/d' | while read -r task; do
	i=$((i + 1))
	s=1
	while [ "$s" -le "$SEEDS" ]; do
		if [ $((s % 2)) -eq 1 ]; then
			tune a "$i" "$task" "$s"
			tune b "$i" "$task" "$s"
		else
			tune b "$i" "$task" "$s"
			tune a "$i" "$task" "$s"
		fi
		coff=$(awk -F'\t' -v i="$i" -v s="$s" '$1 == i && $2 == s && $3 == "a" { print $10 }' "$OUT")
		con=$(awk -F'\t' -v i="$i" -v s="$s" '$1 == i && $2 == s && $3 == "b" { print $10 }' "$OUT")
		rm -rf "$DIR/rcache"
		mkdir -m 700 "$DIR/rcache"
		: >"$DIR/roff.txt"
		: >"$DIR/ron.txt"
		r=1
		while [ "$r" -le "$ROUNDS" ]; do
			if [ $((r % 2)) -eq 1 ]; then
				retime "$task" "$coff" >>"$DIR/roff.txt"
				retime "$task" "$con" >>"$DIR/ron.txt"
			else
				retime "$task" "$con" >>"$DIR/ron.txt"
				retime "$task" "$coff" >>"$DIR/roff.txt"
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

awk -F'\t' -v trials="$TRIALS" -v A="$A" -v B="$B" '
function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
FILENAME ~ /best.tsv$/ {
	task[$1] = $2
	best[$1, $3, "a"] = $4
	best[$1, $3, "b"] = $5
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
		printf "%-40s %4s %4s %8.1f %8.3f %7s %8s %7s %9s %8s %12.4g\n", task[f[1]], f[2],
			f[3] == "a" ? A : B,
			f[4], f[4] / trials, f[5], f[6], f[7], f[8], f[9], best[f[1], f[2], f[3]]
		m = f[3] == "a" ? 0 : 1
		c = ++cnt[f[1], m]
		spt[f[1], m, c] = f[4] / trials
	}
	printf "\n%-40s %12s %12s %12s %10s\n", "task (medians over seeds)", A "_s/trial",
		B "_s/trial", "best " B "/" A, "same_best"
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
