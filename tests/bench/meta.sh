#!/bin/sh
# MetaTune against xgb on the offline dataset (make bench-meta; not a test).
#
# 1. Meta-train: graph features of the dataset, then `tunekit pretrain-meta`
#    on the training hardware's records of every network but the held-out
#    one (META_NETWORK, resnet-18).
# 2. Table 4 of the paper at this dataset's size (tests/bench/meta_eval.c):
#    MSE and MSE(D) of xgb, xgb with transfer learning (xgb-xfer) and the
#    meta model on the held-out network's convolutions after n of each
#    task's records (META_SHOTS), META_REPEATS draws each; on the training
#    hardware, then across targets (models learnt on META_TRAIN_HW, the
#    network's records of META_EVAL_HW: another ISA of the same CPU).
# One table: target, method, n, tasks, mse, mse_d. The work directory keeps
# the dataset copy and the model, so a second run only evaluates.
#
#   tests/bench/meta.sh TUNEKIT DATASET WORKDIR [META_EVAL]
set -eu
TK=$1 DATA=$2 OUT=$3
EVAL=${4:-build/bench/meta_eval}
NET=${META_NETWORK:-resnet-18}
REPEATS=${META_REPEATS:-3}
SHOTS=${META_SHOTS:-0 2 4 8}
TRAIN_HW=${META_TRAIN_HW:-1}
EVAL_HW=${META_EVAL_HW:-2}
die() { echo "meta.sh: $*" >&2; exit 1; }
[ -r "$DATA" ] || die "no dataset at $DATA (make dataset, or META_DATASET=...)"
mkdir -p "$OUT"
DB=$OUT/dataset.db
[ -e "$DB" ] || sqlite3 "$DATA" ".backup '$DB'"
"$TK" extract-features -q --db "$DB" --kind graph
"$TK" extract-features -q --db "$DB" --kind itervar
if [ ! -e "$OUT/meta.model" ]; then
	"$TK" pretrain-meta -q --db "$DB" --hardware "$TRAIN_HW" --holdout-network "$NET" \
		-o "$OUT/meta.model" >"$OUT/pretrain.tsv"
fi
echo "pretrain-meta on hardware $TRAIN_HW, $NET held out (few-shot MSE, $(grep -a '^shots ' "$OUT/meta.model" | cut -d' ' -f2) shots):" >&2
cat "$OUT/pretrain.tsv" >&2
printf 'target\tmethod\tn\ttasks\tmse\tmse_d\n'
for hw in "$TRAIN_HW" "$EVAL_HW"; do
	[ "$hw" = "$TRAIN_HW" ] && what=same || what="cross($TRAIN_HW->$hw)"
	# shellcheck disable=SC2086
	"$EVAL" "$DB" "$OUT/meta.model" "$TRAIN_HW" "$hw" "$NET" "$REPEATS" $SHOTS |
		tail -n +2 | sed "s/^/$what\t/"
done
