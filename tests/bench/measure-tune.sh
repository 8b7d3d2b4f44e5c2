#!/bin/sh
# Kernel quality at equal trials (make bench-measure MEASURE_TUNE=1; not a
# test): does the faster measurement still find kernels as fast as the
# baseline's? For each task and seed, the new and the baseline binary each
# tune TRIALS trials (the baseline first on odd seeds), from an empty compile
# cache of their own. Then the best configuration each found is timed again,
# each with the binary that generated it, alternating for ROUNDS rounds
# (`measure --config`, long repeats), so both bests are compared at the
# same moment rather than at the noisy moment each tune saw them. Prints
# per task and seed the wall time of both tunes, both re-timed medians and
# their ratio new / base (below 1.02: within 2% of the baseline).
#
# usage: measure-tune.sh NEW BASE WORKDIR
# MEASURE_TUNE_TASKS (one a line; GEMM 1024^3 and a ResNet-18 3x3 conv),
# MEASURE_TUNE_TRIALS (200), MEASURE_TUNE_SEEDS ("1"), MEASURE_TUNE_ROUNDS (5).
set -e
NEW=$1 BASE=$2 DIR=$3
[ -x "$NEW" ] && [ -x "$BASE" ] && [ -n "$DIR" ] || {
	echo "usage: measure-tune.sh NEW BASE WORKDIR" >&2
	exit 2
}
TASKS=${MEASURE_TUNE_TASKS:-"dense:m=1024,n=1024,k=1024
conv2d:c=64,h=56,w=56,k=64,pad=1"}
TRIALS=${MEASURE_TUNE_TRIALS:-200}
SEEDS=${MEASURE_TUNE_SEEDS:-1}
ROUNDS=${MEASURE_TUNE_ROUNDS:-5}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
now() { date +%s.%N; }

# tune BIN-NAME BIN TASK-NUMBER TASK SEED: tune, print wall seconds and the
# best configuration (tab-separated) to stdout
tune() {
	db=$DIR/tune-$1-$3-$5.db cache=$DIR/tcache-$1
	rm -rf "$cache" "$db" "$db-wal" "$db-shm"
	mkdir -m 700 "$cache"
	t0=$(now)
	"$2" tune -q --db "$db" --cache-dir "$cache" --task "$4" --trials "$TRIALS" --seed "$5" \
		--confirm 0 >/dev/null
	t1=$(now)
	rm -rf "$cache"
	best=$(sqlite3 "$db" "SELECT c.text FROM measurement m JOIN config c ON c.id = m.config_id
		WHERE m.valid ORDER BY m.median LIMIT 1")
	printf '%s\t%s\n' "$(echo "$t1 - $t0" | bc)" "$best"
}

# retime BIN-NAME BIN TASK CONFIG: one median latency of CONFIG, built by BIN
retime() {
	db=$DIR/retime.db
	rm -f "$db" "$db-wal" "$db-shm"
	"$2" measure -q --db "$db" --cache-dir "$DIR/rcache-$1" --task "$3" --config "$4" \
		--repeat 10 --min-repeat-ms 50 >/dev/null
	sqlite3 "$db" "SELECT median FROM measurement WHERE valid"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "Kernel quality: $TRIALS trials a tune, seeds $SEEDS, $ROUNDS re-timing rounds," \
	"$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs" >&2
printf '%-36s %4s %8s %8s %12s %12s %9s\n' task seed base_s new_s base_best_s new_best_s new/base
i=0
echo "$TASKS" | sed '/^$/d' | while read -r task; do
	i=$((i + 1))
	for s in $SEEDS; do
		if [ $((s % 2)) -eq 1 ]; then
			b=$(tune base "$BASE" "$i" "$task" "$s")
			n=$(tune new "$NEW" "$i" "$task" "$s")
		else
			n=$(tune new "$NEW" "$i" "$task" "$s")
			b=$(tune base "$BASE" "$i" "$task" "$s")
		fi
		bc_=$(echo "$b" | cut -f2) nc_=$(echo "$n" | cut -f2)
		echo "  $task seed $s: base $(echo "$b" | cut -f1) s, new $(echo "$n" | cut -f1) s" >&2
		rm -rf "$DIR/rcache-base" "$DIR/rcache-new"
		mkdir -m 700 "$DIR/rcache-base" "$DIR/rcache-new"
		: >"$DIR/rb.txt"
		: >"$DIR/rn.txt"
		r=1
		while [ "$r" -le "$ROUNDS" ]; do
			if [ $((r % 2)) -eq 1 ]; then
				retime base "$BASE" "$task" "$bc_" >>"$DIR/rb.txt"
				retime new "$NEW" "$task" "$nc_" >>"$DIR/rn.txt"
			else
				retime new "$NEW" "$task" "$nc_" >>"$DIR/rn.txt"
				retime base "$BASE" "$task" "$bc_" >>"$DIR/rb.txt"
			fi
			r=$((r + 1))
		done
		rm -rf "$DIR/rcache-base" "$DIR/rcache-new"
		mb=$(median <"$DIR/rb.txt") mn=$(median <"$DIR/rn.txt")
		printf '%-36s %4s %8.1f %8.1f %12.4g %12.4g %9.3f\n' "$task" "$s" "$(echo "$b" | cut -f1)" \
			"$(echo "$n" | cut -f1)" "$mb" "$mn" "$(awk -v a="$mn" -v b="$mb" 'BEGIN { print a / b }')"
		printf '  base best: %s\n  new best:  %s\n' "$bc_" "$nc_"
	done
done
