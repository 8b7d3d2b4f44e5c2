#!/bin/sh
# MTL-TLP on a second, real multi-hardware testbed (part of make bench-tlp;
# not a test): Kernel Tuner's exhaustively measured GPU spaces
# (../shared/data/kernel_tuner), knob features, one task per GPU. Half of
# the target GPU's configurations are held out at random (--holdout 0.5,
# the seed varies); the models learn from the other half:
#   xgb, tlp           all of the target's training half
#   xgb@F, tlp@F       a share F of it
#   mtl-tlp@F          that share plus every record of the other GPUs of the
#                      same kernel (their heads)
# and are scored on the held-out half: Spearman's rank correlation, top-1
# and top-5. Medians over seeds.
#
# usage: kt-mtl.sh TUNEKIT WORKDIR [SEEDS]
# Environment: TLP_EPOCHS (20), TLP_FRACTION (0.07), KT_DIR.
set -eu
TK=$1 DIR=$2 SEEDS=${3:-3}
EPOCHS=${TLP_EPOCHS:-20}
FRAC=${TLP_FRACTION:-0.07}
KT=${KT_DIR:-../shared/data/kernel_tuner}
mkdir -p "$DIR"
DB=$DIR/kt.db
rm -f "$DB" "$DB-wal" "$DB-shm" "$DIR/kt-rows.tsv"
"$TK" import -q --db "$DB" kernel-tuner "$KT/convolution_A100.json.gz" \
	"$KT/convolution_A4000.json.gz" "$KT/gemm_RTX_2080_Ti.json.gz" "$KT/gemm_RTX_3090.json.gz"
"$TK" import -q --db "$DB" kernel-tuner --hardware "AMD Instinct MI250X" "$KT/convolution_MI250X.json.gz"
"$TK" extract-features -q --db "$DB" --kind knob
hw() { sqlite3 "$DB" "SELECT id FROM hardware WHERE key = 'kt:$1'"; }

# case NAME TARGET AUX...
run_case() {
	name=$1 target=$(hw "$2")
	shift 2
	aux=$(for a in "$@"; do hw "$a"; done | paste -sd, -)
	s=1
	while [ "$s" -le "$SEEDS" ]; do
		for m in xgb tlp "xgb@$FRAC" "tlp@$FRAC" "mtl-tlp@$FRAC"; do
			case $m in
			xgb) set -- --model xgb ;;
			xgb@*) set -- --model xgb --target-fraction "$FRAC" ;;
			tlp) set -- --model tlp --rounds "$EPOCHS" ;;
			tlp@*) set -- --model tlp --rounds "$EPOCHS" --target-fraction "$FRAC" ;;
			mtl-tlp@*) set -- --model mtl-tlp --rounds "$EPOCHS" --target-fraction "$FRAC" --aux-hw "$aux" ;;
			esac
			t0=$(date +%s.%N)
			"$TK" train -q --db "$DB" --feature knob --hardware "$target" --holdout 0.5 --seed "$s" \
				--out "$DIR/kt.model" "$@" >"$DIR/kt-out.tsv"
			secs=$(echo "$(date +%s.%N) - $t0" | bc)
			awk -F'\t' -v k="$name" -v m="$m" -v s="$secs" '
				NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
				$c["set"] == "train" { ntrain = $c["rows"] }
				$c["set"] == "holdout" { print k "\t" m "\t" ntrain "\t" $c["spearman"] "\t" $c["top1"] "\t" $c["top5"] "\t" s }
			' "$DIR/kt-out.tsv" >>"$DIR/kt-rows.tsv"
		done
		s=$((s + 1))
	done
}

run_case "convolution on A4000 (aux A100, MI250X)" "NVIDIA RTX A4000" "NVIDIA A100-PCIE-40GB" "AMD Instinct MI250X"
run_case "gemm on RTX 3090 (aux RTX 2080 Ti)" "NVIDIA GeForce RTX 3090" "NVIDIA GeForce RTX 2080 Ti"

printf '\nKernel Tuner GPUs, knob features, half of the target held out, medians of %s seeds\n' "$SEEDS"
printf '%-42s %-14s %6s %8s %6s %6s %7s\n' case model train spearman top1 top5 train_s
awk -F'\t' '
	{ key = $1 "\t" $2; if (!(key in n)) order[++nk] = key; k = ++n[key]
	  tr[key] = $3; for (j = 4; j <= 7; j++) v[key, j, k] = $j }
	function med(key, j,   i, a, b, x, m) {
		m = n[key]; for (i = 1; i <= m; i++) a[i] = v[key, j, i]
		for (i = 1; i <= m; i++) for (b = i + 1; b <= m; b++) if (a[b] < a[i]) { x = a[i]; a[i] = a[b]; a[b] = x }
		return a[int((m + 1) / 2)]
	}
	END { for (i = 1; i <= nk; i++) { key = order[i]; split(key, f, "\t")
		printf "%-42s %-14s %6d %8.4f %6.4f %6.4f %7.1f\n", f[1], f[2], tr[key], med(key, 4),
			med(key, 5), med(key, 6), med(key, 7) } }
' "$DIR/kt-rows.tsv"
