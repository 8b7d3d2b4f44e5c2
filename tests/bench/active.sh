#!/bin/sh
# Active selection against a uniform draw (make bench-active; not a test):
# does a model trained on a share F of the records, chosen by `train
# --select active:F` (representativeness, diversity, uncertainty, as TCL's
# RDU sampler), rank held-out networks as well as one trained on all of
# them, and better than one trained on a uniform draw of the same share
# (`--target-fraction F`)?
#
# The split is bench-tlp's: train on the target hardware's records of every
# network but resnet-18 and bert-base, stop early on bert-large and
# resnet-50 (then fit again with them), score the held-out networks' tasks
# weighted by their occurrences. Rows per model: all (the target's training
# records), uniform@F and active@F, each with seeds 1..ACTIVE_SEEDS (the
# draw, the choice and the model's seed); means, ranges and the gap in
# top-1 to all.
#
# usage: active.sh TUNEKIT DATASET.db WORKDIR
# Environment: ACTIVE_HARDWARE (default: the hardware with the most
# records), ACTIVE_FRACTION (0.1), ACTIVE_SEEDS (3), ACTIVE_MODELS ("xgb";
# also "tlp"), ACTIVE_HOLDOUT ("resnet-18 bert-base"), ACTIVE_VALID
# ("bert-large resnet-50").
set -eu
TK=$1 SRC=$2 DIR=$3
FRAC=${ACTIVE_FRACTION:-0.1}
NSEED=${ACTIVE_SEEDS:-3}
MODELS=${ACTIVE_MODELS:-xgb}
HOLDOUT=${ACTIVE_HOLDOUT:-resnet-18 bert-base}
VALID=${ACTIVE_VALID-bert-large resnet-50}
mkdir -p "$DIR"
DB=$DIR/active.db
[ -e "$SRC" ] || { echo "active.sh: no dataset at $SRC (gunzip data/dataset/dataset.db.gz)" >&2; exit 1; }
rm -f "$DB" "$DB-wal" "$DB-shm"
sqlite3 "$SRC" ".backup '$DB'"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs;" \
	"$("$TK" --version | sed -n '/^OpenBLAS core/p')" >&2
for k in itervar tlp; do
	"$TK" extract-features -q --db "$DB" --kind "$k"
done
TARGET=${ACTIVE_HARDWARE:-$(sqlite3 "$DB" "SELECT hardware_id FROM measurement GROUP BY 1
	ORDER BY COUNT(*) DESC LIMIT 1")}
split=""
for n in $HOLDOUT; do split="$split --holdout-network $n"; done
for n in $VALID; do split="$split --valid-network $n"; done
echo "target hardware $TARGET: $(sqlite3 "$DB" "SELECT key FROM hardware WHERE id = $TARGET")" >&2

# row NAME ARGS...: train with seeds 1..NSEED; print the name, the target
# rows trained on, the means and ranges of top-1, top-5 and Spearman, the
# mean seconds
row() {
	name=$1
	shift
	s=1
	while [ "$s" -le "$NSEED" ]; do
		t0=$(date +%s.%N)
		# shellcheck disable=SC2086
		"$TK" train -q --db "$DB" --hardware "$TARGET" $split --format tsv --seed "$s" \
			--out "$DIR/$name.s$s.model" "$@" >"$DIR/$name.s$s.tsv"
		secs=$(echo "$(date +%s.%N) - $t0" | bc)
		awk -F'\t' -v secs="$secs" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
			$c["set"] == "train" { tr = $c["rows"] }
			$c["set"] == "holdout" { print tr, $c["top1"], $c["top5"], $c["spearman"], secs }' \
			"$DIR/$name.s$s.tsv"
		s=$((s + 1))
	done | awk -v name="$name" '
		{ k++; tr = $1; for (i = 2; i <= 5; i++) { m[i] += $i
			if (k == 1 || $i < lo[i]) lo[i] = $i; if (k == 1 || $i > hi[i]) hi[i] = $i } }
		END { printf "%-16s %6d", name, tr
			for (i = 2; i <= 4; i++) printf " %7.4f %-11s", m[i] / k, sprintf("(%.2f-%.2f)", lo[i], hi[i])
			printf " %7.1f\n", m[5] / k }'
}

printf '\nmeans over %s seeds (range); held out: %s; validation: %s\n' "$NSEED" "$HOLDOUT" "${VALID:-none}"
printf '%-16s %6s %7s %-11s %7s %-11s %8s %-10s %7s\n' model train top1 '' top5 '' spearman '' train_s
for m in $MODELS; do
	case $m in
	xgb) set -- --model xgb --feature itervar ;;
	tlp) set -- --model tlp --feature tlp ;;
	*) echo "active.sh: unknown model $m" >&2; exit 1 ;;
	esac
	row "$m-all" "$@"
	row "$m-uniform@$FRAC" "$@" --target-fraction "$FRAC"
	row "$m-active@$FRAC" "$@" --select "active:$FRAC"
done | tee "$DIR/table.txt"
printf '\ntop-1 of each share against all of the records (the goal: active within 0.01)\n'
awk '{ split($1, a, "-"); if ($1 ~ /-all$/) all[a[1]] = $3
	else printf "%-16s %+8.4f\n", $1, $3 - all[a[1]] }' "$DIR/table.txt"
