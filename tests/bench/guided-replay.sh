#!/bin/sh
# The guard of tune --model-file replayed (make bench-guided, second part;
# not a test): Kernel Tuner's convolution space measured on an A100 is
# tuned by replay (--replay-pool: its 4,201 valid configurations), guided
# by models of other hardware and a wrong one, with the guard and without
# (--guard off), against xgb+sa from scratch at equal trials. Replays are
# exact and fast: this isolates the guard from the noise of real timing.
#   A4000      xgb on the A4000's records: a near GPU, a good guide
#   MI250X     xgb on the MI250X's records: another vendor's GPU
#   inverted   xgb on the A100's own records with their latencies inverted
#
#   tests/bench/guided-replay.sh TUNEKIT KT_DIR WORKDIR SEEDS TRIALS
#
# One TSV on stdout per model and method: the mean best latency at TRIALS
# over the seeds (microseconds), its ratio to xgb+sa's mean (below 1:
# faster), the seeds that found the space's optimum, and the models the
# batches of seed 1 were planned on.
set -eu
TK=$1 KT=$2 OUT=$3 SEEDS=$4 TRIALS=$5
TASK=kt:convolution_kernel:4096x4096
die() { echo "guided-replay.sh: $*" >&2; exit 1; }
mkdir -p "$OUT"
for gpu in A100 A4000 MI250X; do
	db=$OUT/$gpu.db
	[ -s "$db" ] && continue
	f=$KT/convolution_$gpu.json.gz
	[ -r "$f" ] || die "no $f"
	"$TK" import -q --db "$db" --hardware "$gpu" kernel-tuner "$f" >/dev/null
done
[ -s "$OUT/inverted.db" ] || { cp "$OUT/A100.db" "$OUT/inverted.db" &&
	sqlite3 "$OUT/inverted.db" "UPDATE measurement SET median = 1.0 / median WHERE valid"; }
for m in A4000 MI250X inverted; do
	[ -s "$OUT/$m.model" ] && continue
	"$TK" extract-features -q --db "$OUT/$m.db" --kind knob >/dev/null
	"$TK" train -q --db "$OUT/$m.db" --feature knob --out "$OUT/$m.model" >/dev/null
done
opt=$(sqlite3 "$OUT/A100.db" "SELECT min(median) FROM measurement WHERE valid")

# the best latency at TRIALS and the planned_on of a run of seed $1 with the
# options after it, in a fresh store
run() {
	seed=$1 db=$OUT/run.db
	shift
	rm -f "$db" "$db-wal" "$db-shm"
	"$TK" tune -q --db "$db" --replay "$OUT/A100.db" --replay-pool 1 --task $TASK \
		--trials "$TRIALS" --seed "$seed" "$@" >/dev/null || die "tune $* failed"
	b=$("$TK" report --db "$db" --format tsv curve | awk -F'\t' -v n="$TRIALS" '
		NR > 1 && $3 <= n { b = $6 } END { print b }')
	p=$("$TK" report --db "$db" --format tsv runs | awk -F'\t' '
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { print $c["planned_on"] }')
	printf '%s\t%s\n' "$b" "$p"
}

printf 'model\tmethod\ttrials\tbest_us\tvs_xgb\toptimum_found\tplanned_on_seed1\n'
xgb=""
for m in none A4000 MI250X inverted; do
	for g in on off; do
		[ $m = none ] && [ $g = off ] && continue
		: >"$OUT/rows"
		for s in $(seq 1 "$SEEDS"); do
			if [ $m = none ]; then
				run "$s" >>"$OUT/rows"
			else
				run "$s" --model-file "$OUT/$m.model" --guard $g >>"$OUT/rows"
			fi
		done
		mean=$(awk -F'\t' '{ s += $1 } END { printf "%.1f", s / NR * 1e6 }' "$OUT/rows")
		[ -n "$xgb" ] || xgb=$mean
		hit=$(awk -F'\t' -v o="$opt" '$1 <= o * 1.0001 { n++ } END { printf "%d/%d", n, NR }' "$OUT/rows")
		p1=$(head -1 "$OUT/rows" | cut -f 2)
		method=$([ $m = none ] && echo xgb+sa || echo "guard $g")
		printf '%s\t%s\t%s\t%s\t%.3f\t%s\t%s\n' "$m" "$method" "$TRIALS" "$mean" \
			"$(awk -v a="$mean" -v b="$xgb" 'BEGIN { print a / b }')" "$hit" "$p1"
	done
done
