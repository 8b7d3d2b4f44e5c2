#!/bin/sh
# MetaTune's output quality (make bench-meta META_TUNE=1; not a test;
# measures on this CPU): each network of META_TUNE_NETWORKS (resnet-18) is
# tuned for real at equal budgets, META_TUNE_BUDGETS trials per task (64),
# by four methods, and the network's estimated latency at the end is
# compared (the paper's Figure 6: meta-BO-T 8% faster than xgb):
#   xgb+sa     AutoTVM's tuner
#   xgb-xfer   the same with transfer learning from the meta-training set
#   meta+bo    the meta model (pretrain-meta), fine-tuned on every batch,
#              batch Bayesian optimisation on its heads' mean and spread
#   meta+sa    the meta model with simulated annealing
# The meta model tunes the operators it was meta-trained on (the paper's
# set: convolutions); tune gives the others (dense layers) to its
# --other-model, rfei with bo and xgb with sa.
# META_TUNE_TARGET (native) tunes on another target than the one the
# meta-training set was measured on (e.g. cpu:isa=avx2): the paper's
# cross-platform case, xgb-xfer then transferring across targets too.
# Each network and budget has its store, each method its run in it (a
# method does not read another's records; the compiled-kernel cache is
# shared); WORKDIR/runs.tsv names them, so a second invocation reports the
# runs it has and tunes only the missing ones.
#
#   tests/bench/meta-tune.sh TUNEKIT SOURCE.db META_MODEL WORKDIR
#
# One TSV on stdout: network, budget, method, latency_ms (the sum of weight
# x best latency over its tasks), vs_xgb (that latency over xgb+sa's), tune
# seconds, then conv_ms and other_ms: the part of latency_ms in convolution
# layers (what the meta-training set holds: the paper's scope) and in the
# rest. WORKDIR/tune-NETWORK-BUDGET-TARGET.svg plots the four runs'
# estimated network latency against trials and seconds.
set -eu
TK=$1 SRC=$2 MODEL=$3 OUT=$4
NETS=${META_TUNE_NETWORKS:-resnet-18}
BUDGETS=${META_TUNE_BUDGETS:-64}
SEED=${META_TUNE_SEED:-1}
TARGET=${META_TUNE_TARGET:-native}
die() { echo "meta-tune.sh: $*" >&2; exit 1; }
[ -r "$MODEL" ] || die "no meta model at $MODEL"
mkdir -p "$OUT"
echo "tuning on $("$TK" help targets "$TARGET")" >&2
printf 'network\tbudget\tmethod\tlatency_ms\tvs_xgb\ttune_s\tconv_ms\tother_ms\n'
for net in $NETS; do
	[ -r "data/networks/$net.tsv" ] || die "no network $net in data/networks"
	ntask=$(grep -v '^#' "data/networks/$net.tsv" | tail -n +2 | wc -l)
	for b in $BUDGETS; do
		db=$OUT/tune-$net-$b-$(echo "$TARGET" | tr -c 'a-z0-9\n' -).db
		xgb="" runs=""
		for m in xgb+sa xgb-xfer meta+bo meta+sa; do
			case $m in
			xgb+sa) set -- ;;
			xgb-xfer) set -- --transfer-from "$SRC" --transfer-hardware "$("$TK" help targets native)" ;;
			meta+bo) set -- --model meta --feature graph --meta "$MODEL" --search bo ;;
			meta+sa) set -- --model meta --feature graph --meta "$MODEL" --search sa ;;
			esac
			run=$(awk -F'\t' -v k="$net $b $TARGET $m" '$1 == k { r = $2 } END { print r }' \
				"$OUT/runs.tsv" 2>/dev/null || true)
			if [ -z "$run" ]; then
				"$TK" tune -q --db "$db" --network "$net" --trials $((b * ntask)) \
					--target "$TARGET" --seed "$SEED" "$@" >/dev/null || die "$net $m: tune failed"
				run=$("$TK" report --db "$db" --format tsv runs | awk -F'\t' '
					NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
					{ r = $c["run"] } END { print r }')
				printf '%s\t%s\n' "$net $b $TARGET $m" "$run" >>"$OUT/runs.tsv"
			fi
			lat=$("$TK" report --db "$db" --format tsv curve --run "$run" --network "$net" |
				awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
					{ l = $c["best_latency_s"] } END { printf "%.4f", l * 1000 }')
			secs=$("$TK" report --db "$db" --format tsv runs | awk -F'\t' -v r="$run" '
				NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
				$c["run"] == r { print $c["seconds"] }')
			[ -n "$xgb" ] || xgb=$lat
			runs="$runs --run $run"
			# weight x best latency per task, split into convolutions and the rest
			split=$("$TK" report --db "$db" --format tsv records --run "$run" | awk -F'\t' '
				FNR == NR { if (FNR > 1 && $0 !~ /^#/) w[$2] = $1; next }
				FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
				$c["valid"] == 1 { t = $c["task"]; l = $c["latency_s"]
					if (!(t in b) || l < b[t]) b[t] = l }
				END { for (t in b) { k = t in w ? w[t] : 1; if (t ~ /^conv/) cv += k * b[t]; else o += k * b[t] }
					printf "%.4f\t%.4f", cv * 1000, o * 1000 }' "data/networks/$net.tsv" -)
			printf '%s\t%s\t%s\t%s\t%.3f\t%s\t%s\n' "$net" "$b" "$m" "$lat" \
				"$(echo "$lat / $xgb" | bc -l)" "$secs" "$split"
		done
		# shellcheck disable=SC2086
		"$TK" report --db "$db" curve $runs --network "$net" --plot "${db%.db}.svg" ||
			echo "meta-tune.sh: no plot of $net at $b" >&2
	done
done
