#!/bin/sh
# Search benchmark (make bench; not a test): trials each method needs to
# reach 95% of the best known throughput, replayed on the Kernel Tuner
# search spaces (real GPU measurements, every configuration of the
# constrained space measured). Median over seeds; "never" counts as more
# than the budget. Methods: random search, model-free simulated annealing
# (--model none --search sa) and AutoTVM's xgb+sa on knob features.
#
# usage: search.sh TUNEKIT WORKDIR [SEEDS [TRIALS]]
set -e
TK=$1 DIR=$2 SEEDS=${3:-10} TRIALS=${4:-2000}
KT=${TUNEKIT_KT_DATA:-../shared/data/kernel_tuner}
[ -r "$KT/gemm_RTX_3090.json.gz" ] || KT=/work/shared/data/kernel_tuner
mkdir -p "$DIR"
DB=$DIR/kt.db
# (importing twice adds nothing; the MI250X file has an empty device_name)
for f in "$KT"/*.json.gz; do
	case $f in
	*MI250X*) "$TK" import --db "$DB" kernel-tuner --hardware "AMD Instinct MI250X" "$f" ;;
	*) "$TK" import --db "$DB" kernel-tuner "$f" ;;
	esac >/dev/null
done

# trials to 95% of best ($1) in a record stream on stdin, or "never"
to95() {
	awk -F'\t' -v b="$1" 'NR > 1 && $10 >= 0.95 * b { print $3 + 1; f = 1; exit }
	                      END { if (!f) print "never" }'
}
# median of the numbers on stdin, "never" as infinity
median() {
	sed "s/never/$((TRIALS + 1))/" | sort -n |
	awk -v cap="$TRIALS" '{ a[NR] = $1 } END { m = a[int((NR + 1) / 2)]; print (m > cap ? ">" cap : m) }'
}

echo "trials to reach 95% of the best known, median of $SEEDS seeds, budget $TRIALS"
printf '%-52s %8s %8s %8s %8s\n' "dataset (task on hardware)" random sa xgb+sa "rnd/xgb"
"$TK" report --db "$DB" --format tsv best | awk -F'\t' 'NR > 1 { print $2 "\t" $4 "\t" $6 }' |
while IFS="$(printf '\t')" read -r task hw best; do
	hwkey=$(sqlite3 "$DB" "SELECT key FROM hardware WHERE id = $hw")
	line=
	for m in "--search random" "--model none --search sa" "--model xgb --search sa --feature knob"; do
		s=1
		while [ $s -le "$SEEDS" ]; do
			rm -f "$DIR/run.db" "$DIR/run.db-wal" "$DIR/run.db-shm"
			"$TK" tune -q --db "$DIR/run.db" --replay "$DB" --replay-hardware "$hw" \
				--task "$task" --trials "$TRIALS" --seed $s $m | to95 "$best"
			s=$((s + 1))
		done | median >"$DIR/med"
		line="$line $(cat "$DIR/med")"
	done
	set -- $line
	# a censored median bounds the ratio: ">" if random never got there
	ratio=$(awk -v r="$1" -v x="$3" 'BEGIN { p = sub(">", "", r) ? ">" : "";
		if (sub(">", "", x)) print "-"; else printf "%s%.2fx", p, r / x }')
	printf '%-52s %8s %8s %8s %8s\n' "${task#kt:} on ${hwkey#kt:}" "$1" "$2" "$3" "$ratio"
done
rm -f "$DIR/run.db" "$DIR/run.db-wal" "$DIR/run.db-shm" "$DIR/med"
