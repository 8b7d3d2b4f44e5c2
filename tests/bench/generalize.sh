#!/bin/sh
# Leave-one-family-out on the offline dataset (make bench-generalize; not a
# test): how well do cost models rank the programs of a kind of network
# they never saw?
#
# The families are data/dataset/families.tsv (network<TAB>family). A
# network is in the benchmark when the target hardware has records of at
# least three quarters of its distinct tasks. For each family with such a network,
# every model is trained on the
# target's records of the other families' networks and scored on the
# family's (`tunekit train --holdout-network` for each of its networks, so
# a task the family shares with another is held out all the same, weighted
# by its occurrences in the family), with TLP's top-1 and top-5 and
# Spearman's rank correlation. Models:
#   xgb      AutoTVM's XGBoost on itervar features
#   tlp      TLP on the schedule-primitive sequences
#   mtl-tlp  MTL-TLP: the target's records plus the nearest auxiliary
#            hardware's (the same CPU's next narrower ISA, else the same ISA
#            on the CPU with the most records)
#   meta     MetaTune's GCN on graph features, its supervised pre-training
# Every fit stops early on validation networks, one of each other family
# (its first in families.tsv with records on the target), then is fit again
# with them at the rounds (epochs) they chose (train --valid-network):
# nothing is chosen by the held-out family.
#
# usage: generalize.sh TUNEKIT DATASET.db WORKDIR
# Environment: GEN_HARDWARE (the target hardware id; default: the one with
# the most records), GEN_MODELS ("xgb tlp mtl-tlp meta"), GEN_AUX (mtl-tlp's
# auxiliary hardware ids, comma-separated; default: the nearest), GEN_EPOCHS
# (--rounds of the neural models; default: train's), GEN_FAMILIES (only
# these families), GEN_TRAIN (extra train options, e.g. "--select active:0.1").
#
# Output: a table per family and model, the summary over families (mean,
# worst family) per model, then the per-operator rows. WORKDIR keeps each
# fit's TSV (FAMILY.MODEL.tsv).
set -eu
TK=$1 SRC=$2 DIR=$3
MODELS=${GEN_MODELS:-xgb tlp mtl-tlp meta}
FAMFILE=${GEN_FAMILY_FILE:-data/dataset/families.tsv}
mkdir -p "$DIR"
DB=$DIR/generalize.db
[ -e "$SRC" ] || { echo "generalize.sh: no dataset at $SRC (gunzip data/dataset/dataset.db.gz)" >&2; exit 1; }
rm -f "$DB" "$DB-wal" "$DB-shm"
sqlite3 "$SRC" ".backup '$DB'"
q() { sqlite3 "$DB" "$1"; }
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs;" \
	"$("$TK" --version | sed -n '/^OpenBLAS core/p')" >&2
for k in itervar tlp graph; do
	"$TK" extract-features -q --db "$DB" --kind "$k"
done
TARGET=${GEN_HARDWARE:-$(q "SELECT hardware_id FROM measurement GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1")}
# The nearest auxiliary, as tests/bench/tlp.sh chooses it.
key=$(q "SELECT key FROM hardware WHERE id = $TARGET")
case $key in
*'|avx512|'*) near=$(echo "$key" | sed 's/|avx512|/|avx2|/') ;;
*'|avx2|'*) near=$(echo "$key" | sed 's/|avx2|/|sse2|/') ;;
*) near= ;;
esac
rest=${key#*|}
AUX=${GEN_AUX:-$(q "SELECT h.id FROM hardware h JOIN measurement m ON m.hardware_id = h.id
	WHERE h.key = '$near' OR (h.id != $TARGET AND substr(h.key, instr(h.key, '|') + 1) = '$rest')
	GROUP BY h.id ORDER BY h.key = '$near' DESC, COUNT(*) DESC LIMIT 1")}
echo "target hardware $TARGET: $key; mtl-tlp's auxiliary: ${AUX:-none}" >&2

# network<TAB>family of the networks the dataset covers on the target: at
# least three quarters of their distinct tasks have records (a zoo network
# that shares its ordinary layers with them is not one: ResNeXt-50 shares
# 18 of its 25 with ResNet-50 and Wide ResNet-50-2 on hardware 7, none of
# them grouped, and its family would be scored on those alone)
"$TK" help networks | awk '{ print $1 "\t" $2 }' >"$DIR/distinct.tsv"
grep -v '^#' "$FAMFILE" | tail -n +2 | while IFS='	' read -r net fam; do
	n=$("$TK" report --db "$DB" --hardware "$TARGET" --format tsv --network "$net" best 2>/dev/null |
		tail -n +2 | wc -l)
	all=$(awk -F'\t' -v n="$net" '$1 == n { print $2 }' "$DIR/distinct.tsv")
	[ "$((4 * n))" -ge "$((3 * ${all:-1}))" ] && [ "$n" -gt 0 ] && printf '%s\t%s\n' "$net" "$fam"
done >"$DIR/networks.tsv"
FAMS=${GEN_FAMILIES:-$(cut -f2 "$DIR/networks.tsv" | awk '!seen[$0]++')}
absent=$(grep -v '^#' "$FAMFILE" | tail -n +2 | cut -f2 | awk '!seen[$0]++' |
	grep -vxF "$(cut -f2 "$DIR/networks.tsv")" | paste -sd' ' -)
[ -z "$absent" ] || echo "families the dataset does not cover on hardware $TARGET: $absent" >&2

# fit FAMILY MODEL: train on the other families, score the family; print
# family, model, train rows, held rows, tasks, top1, top5, spearman, seconds
fit() {
	fam=$1 model=$2
	args=$(awk -F'\t' -v f="$fam" '$2 == f { printf " --holdout-network %s", $1 }
		$2 != f && !seen[$2]++ { printf " --valid-network %s", $1 }' "$DIR/networks.tsv")
	case $model in
	xgb) args="$args --model xgb --feature itervar" ;;
	tlp) args="$args --model tlp --feature tlp ${GEN_EPOCHS:+--rounds $GEN_EPOCHS}" ;;
	mtl-tlp) args="$args --model mtl-tlp --feature tlp --aux-hw $AUX ${GEN_EPOCHS:+--rounds $GEN_EPOCHS}" ;;
	meta) args="$args --model meta --feature graph ${GEN_EPOCHS:+--rounds $GEN_EPOCHS}" ;;
	*) echo "generalize.sh: unknown model $model" >&2; return 1 ;;
	esac
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086
	"$TK" train -q --db "$DB" --hardware "$TARGET" --per-op --format tsv --seed 1 \
		--out "$DIR/$fam.$model.model" $args ${GEN_TRAIN:-} >"$DIR/$fam.$model.tsv"
	secs=$(echo "$(date +%s.%N) - $t0" | bc)
	awk -F'\t' -v fam="$fam" -v model="$model" -v secs="$secs" '
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["set"] == "train" { tr = $c["rows"] }
		$c["set"] == "holdout" { printf "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%.0f\n", fam, model, tr,
			$c["rows"], $c["tasks"], $c["top1"], $c["top5"], $c["spearman"], secs }' \
		"$DIR/$fam.$model.tsv"
}

for fam in $FAMS; do
	for m in $MODELS; do
		fit "$fam" "$m"
	done
done >"$DIR/folds.tsv"

printf '\nleave-one-family-out, target hardware %s\n' "$TARGET"
printf '%-12s %-8s %7s %6s %5s %7s %7s %8s %7s\n' family model train held tasks top1 top5 spearman train_s
awk -F'\t' '{ printf "%-12s %-8s %7d %6d %5d %7.4f %7.4f %8.4f %7d\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }' \
	"$DIR/folds.tsv"
printf '\nover the families: mean (each family weight 1) and the worst family by top-1\n'
printf '%-8s %8s %8s %8s  %-24s\n' model top1 top5 spearman worst
awk -F'\t' '{ k = $2; if (!(k in n)) o[++no] = k; n[k]++; t1[k] += $6; t5[k] += $7; sp[k] += $8
		if (!(k in w) || $6 < w[k]) { w[k] = $6; wf[k] = $1 } }
	END { for (i = 1; i <= no; i++) { k = o[i]
		printf "%-8s %8.4f %8.4f %8.4f  %s %.4f\n", k, t1[k] / n[k], t5[k] / n[k], sp[k] / n[k], wf[k], w[k] } }' \
	"$DIR/folds.tsv"
printf '\nper operator of each held-out family: top-1/top-5/spearman\n'
printf '%-12s %-24s %5s' family operator tasks
for m in $MODELS; do printf ' %-20s' "$m"; done
echo
for fam in $FAMS; do
	for m in $MODELS; do
		awk -F'\t' -v m="$m" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
			$c["set"] ~ /^holdout-op:/ { sub(/^holdout-op:/, "", $c["set"])
				print $c["set"] "\t" m "\t" $c["tasks"] "\t" $c["top1"] "\t" $c["top5"] "\t" $c["spearman"] }' \
			"$DIR/$fam.$m.tsv"
	done | awk -F'\t' -v fam="$fam" -v models="$MODELS" '
		{ if (!($1 in nt)) o[++no] = $1; nt[$1] = $3; v[$1, $2] = sprintf("%.2f/%.2f/%.2f", $4, $5, $6) }
		END { nm = split(models, M, " ")
			for (i = 1; i <= no; i++) { printf "%-12s %-24s %5d", fam, o[i], nt[o[i]]
				for (j = 1; j <= nm; j++) printf " %-20s", ((o[i], M[j]) in v) ? v[o[i], M[j]] : "-"
				printf "\n" } }'
done
