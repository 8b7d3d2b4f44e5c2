#!/bin/sh
# make bench-transfer (issue 23): a cost model trained on one hardware
# target, adapted to another from a few of its records by each method of
# `tunekit transfer`, scored on the target's other records. Not a test.
#
# Pairs:
#   Kernel Tuner convolution (../shared/data/kernel_tuner), knob features:
#     A100 -> A4000 (close), A100 -> MI250X (far); one task of 4362 records
#   the offline dataset (a copy of DATASET, tlp features), if given:
#     avx512 -> avx2, avx512 -> sse2 (hardware 1 -> 2 and 1 -> 3)
# Source models: tlp and xgb on every record of the source hardware.
# For each target share F (TRANSFER_FRACTIONS) and seed, `transfer
# --target-fraction F --seed S` draws the target records adapted on; the
# rest scores:
#   none              the tlp source as it is (the same rows: 0 target records)
#   moses, finetune   the tlp source adapted
#   tlp scratch       a tlp fit on the share alone (--epochs SCRATCH_EPOCHS)
#   xgb none, xgb-warm, xgb scratch   the same for the xgb source
#   mtl-tlp           (Kernel Tuner only) `train --model mtl-tlp` on the
#                     share with every source record as an auxiliary head,
#                     another random share of the same size
# Spearman, top-1 and top-5 on the held-out records: medians over seeds.
#
# usage: transfer.sh TUNEKIT WORKDIR [SEEDS] [DATASET]
# Environment: TRANSFER_FRACTIONS ("0.05 0.1"), SOURCE_EPOCHS (tlp source
# epochs, default train's), SCRATCH_EPOCHS (200), MTL_EPOCHS (30), KT_DIR.
set -eu
TK=$1 DIR=$2 SEEDS=${3:-3} DATASET=${4:-}
FRACTIONS=${TRANSFER_FRACTIONS:-0.05 0.1}
SRC_EPOCHS=${SOURCE_EPOCHS:-}
SCRATCH=${SCRATCH_EPOCHS:-200}
MTL=${MTL_EPOCHS:-30}
KT=${KT_DIR:-../shared/data/kernel_tuner}
mkdir -p "$DIR"
ROWS=$DIR/transfer-rows.tsv
: >"$ROWS"
now() { date +%s.%N; }

# score PAIR METHOD F SEED SECS OUTFILE: the holdout row (or, with
# "source", the source row) of a transfer or train output
score() {
	awk -F'\t' -v p="$1" -v m="$2" -v f="$3" -v s="$4" -v t="$5" -v want="${7:-holdout}" '
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["set"] == "train" { n = $c["rows"] }
		$c["set"] == want { r = $c["spearman"] "\t" $c["top1"] "\t" $c["top5"] }
		END { print p "\t" m "\t" f "\t" s "\t" n "\t" r "\t" t }
	' "$6" >>"$ROWS"
}

# pair NAME DB FEATURE SOURCE_HW TARGET_HW TLP_SRC XGB_SRC MTL(0|1)
pair() {
	name=$1 db=$2 feat=$3 src=$4 dst=$5 tlp=$6 xgb=$7 mtl=$8
	for f in $FRACTIONS; do
		s=1
		while [ "$s" -le "$SEEDS" ]; do
			for m in none moses finetune scratch; do
				set -- --method "$m"
				[ "$m" = scratch ] && set -- --method scratch --epochs "$SCRATCH"
				t0=$(now)
				"$TK" transfer -q --db "$db" --model "$tlp" --to-hw "$dst" --target-fraction "$f" \
					--seed "$s" --out "$DIR/t.model" "$@" >"$DIR/out.tsv"
				label=$m
				[ "$m" = scratch ] && label="tlp scratch"
				score "$name" "$label" "$f" "$s" "$(echo "$(now) - $t0" | bc)" "$DIR/out.tsv"
			done
			for m in none xgb-warm scratch; do
				t0=$(now)
				"$TK" transfer -q --db "$db" --model "$xgb" --to-hw "$dst" --method "$m" \
					--target-fraction "$f" --seed "$s" --out "$DIR/t.model" >"$DIR/out.tsv"
				label="xgb $m"
				[ "$m" = xgb-warm ] && label=xgb-warm
				score "$name" "$label" "$f" "$s" "$(echo "$(now) - $t0" | bc)" "$DIR/out.tsv"
			done
			if [ "$mtl" = 1 ]; then
				t0=$(now)
				"$TK" train -q --db "$db" --model mtl-tlp --feature "$feat" --hardware "$dst" \
					--aux-hw "$src" --holdout "$(echo "1 - $f" | bc)" --rounds "$MTL" \
					--seed "$s" --out "$DIR/t.model" >"$DIR/out.tsv"
				score "$name" "mtl-tlp" "$f" "$s" "$(echo "$(now) - $t0" | bc)" "$DIR/out.tsv"
			fi
			s=$((s + 1))
		done
	done
}

# ---- Kernel Tuner: convolution, A100 -> A4000 and MI250X --------------------------
KDB=$DIR/kt.db
rm -f "$KDB" "$KDB-wal" "$KDB-shm"
"$TK" import -q --db "$KDB" kernel-tuner "$KT/convolution_A100.json.gz" "$KT/convolution_A4000.json.gz"
"$TK" import -q --db "$KDB" kernel-tuner --hardware "AMD Instinct MI250X" "$KT/convolution_MI250X.json.gz"
"$TK" extract-features -q --db "$KDB" --kind knob
khw() { sqlite3 "$KDB" "SELECT id FROM hardware WHERE key = 'kt:$1'"; }
A100=$(khw "NVIDIA A100-PCIE-40GB")
"$TK" train -q --db "$KDB" --model tlp --feature knob --hardware "$A100" \
	${SRC_EPOCHS:+--rounds "$SRC_EPOCHS"} --out "$DIR/kt-tlp.model" >/dev/null
"$TK" train -q --db "$KDB" --model xgb --feature knob --hardware "$A100" --out "$DIR/kt-xgb.model" >/dev/null
pair "conv A100 -> A4000 (close)" "$KDB" knob "$A100" "$(khw "NVIDIA RTX A4000")" \
	"$DIR/kt-tlp.model" "$DIR/kt-xgb.model" 1
pair "conv A100 -> MI250X (far)" "$KDB" knob "$A100" "$(khw "AMD Instinct MI250X")" \
	"$DIR/kt-tlp.model" "$DIR/kt-xgb.model" 1

# ---- the offline dataset: avx512 -> avx2, sse2 ----------------------------------------
if [ -n "$DATASET" ] && [ -r "$DATASET" ]; then
	DDB=$DIR/dataset.db
	rm -f "$DDB" "$DDB-wal" "$DDB-shm"
	sqlite3 "$DATASET" ".backup '$DDB'"
	"$TK" extract-features -q --db "$DDB" --kind tlp
	isa() { sqlite3 "$DDB" "SELECT id FROM hardware WHERE key LIKE '%|$1|%|threads=1' ORDER BY id LIMIT 1"; }
	X512=$(isa avx512)
	"$TK" train -q --db "$DDB" --model tlp --feature tlp --hardware "$X512" \
		${SRC_EPOCHS:+--rounds "$SRC_EPOCHS"} --out "$DIR/ds-tlp.model" >/dev/null
	"$TK" train -q --db "$DDB" --model xgb --feature tlp --hardware "$X512" --out "$DIR/ds-xgb.model" >/dev/null
	n=$(sqlite3 "$DDB" "SELECT count(*) FROM measurement WHERE hardware_id = $X512")
	pair "CPU avx512 -> avx2 ($n records)" "$DDB" tlp "$X512" "$(isa avx2)" \
		"$DIR/ds-tlp.model" "$DIR/ds-xgb.model" 0
	pair "CPU avx512 -> sse2 ($n records)" "$DDB" tlp "$X512" "$(isa sse2)" \
		"$DIR/ds-tlp.model" "$DIR/ds-xgb.model" 0
fi

printf '\nTransfer to a target from a share F of its records, scored on the rest; medians of %s seeds\n' "$SEEDS"
printf '%-34s %-12s %5s %6s %8s %6s %6s %7s\n' pair method F adapt spearman top1 top5 secs
awk -F'\t' '
	{ key = $1 "\t" $2 "\t" $3; if (!(key in n)) order[++nk] = key; k = ++n[key]
	  for (j = 5; j <= 9; j++) v[key, j, k] = $j }
	function med(key, j,   i, a, b, x, m) {
		m = n[key]; for (i = 1; i <= m; i++) a[i] = v[key, j, i]
		for (i = 1; i <= m; i++) for (b = i + 1; b <= m; b++) if (a[b] < a[i]) { x = a[i]; a[i] = a[b]; a[b] = x }
		return a[int((m + 1) / 2)]
	}
	END { for (i = 1; i <= nk; i++) { key = order[i]; split(key, f, "\t")
		printf "%-34s %-12s %5.2f %6d %8.4f %6.4f %6.4f %7.1f\n", f[1], f[2], f[3], med(key, 5),
			med(key, 6), med(key, 7), med(key, 8), med(key, 9) } }
' "$ROWS"
