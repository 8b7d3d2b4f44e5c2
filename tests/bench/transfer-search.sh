#!/bin/sh
# make bench-transfer, second table: search efficiency of transfer on
# replayed Kernel Tuner spaces (issue 23). Tuning the convolution on the
# A4000 (close to the A100) and the MI250X (far) by replaying their
# records, budget BUDGET trials: the trial at which a run first reaches 95%
# of the target's best recorded throughput, and the configurations it
# measured. Not a test.
#   scratch         xgb + sa learning from nothing (AutoTVM)
#   transfer        --transfer-from the A100's records: an xgb base model
#                   under the online model (AutoTVM's transfer learning)
#   transfer+ctl    the same with Moses' adaptive controller
#                   (--controller moses: the model answers the trials left
#                   once it is certain, or past half the budget)
#   tlp moses online     --model-file the A100's tlp --adapt moses: a copy
#                        adapted by Moses' ticket to the run's records at
#                        every refit (Moses' online transfer)
#   tlp finetune online  the same, fine-tuning every weight
#   xgb-warm online      the A100's xgb, more boosting rounds at every refit
#   tlp moses file       --model-file: the A100's tlp adapted by Moses from
#                        5% of the target's records (218, not counted),
#                        scoring every plan, never refit
# Medians over seeds; ">B" when a run never gets there. CMAT, Moses'
# comprehensive score against TenSet's fine-tuning ("tlp finetune online"):
# (search-efficiency gain x tuned-latency reduction - 1) x 100%, the gain
# the ratio of the medians of trials to 95% (B where a median run never got
# there), the reduction that of the median best latencies at the budget.
#
# usage: transfer-search.sh TUNEKIT WORKDIR [SEEDS] [BUDGET]
# Environment: KT_DIR.
set -eu
TK=$1 DIR=$2 SEEDS=${3:-5} BUDGET=${4:-300}
KT=${KT_DIR:-../shared/data/kernel_tuner}
mkdir -p "$DIR"
DB=$DIR/kt-search.db
ROWS=$DIR/search-rows.tsv
rm -f "$DB" "$DB-wal" "$DB-shm"
: >"$ROWS"
"$TK" import -q --db "$DB" kernel-tuner "$KT/convolution_A100.json.gz" "$KT/convolution_A4000.json.gz" >/dev/null
"$TK" import -q --db "$DB" kernel-tuner --hardware "AMD Instinct MI250X" "$KT/convolution_MI250X.json.gz" >/dev/null
"$TK" extract-features -q --db "$DB" --kind knob
hw() { sqlite3 "$DB" "SELECT id FROM hardware WHERE key = 'kt:$1'"; }
A100=$(hw "NVIDIA A100-PCIE-40GB")
TASK=kt:convolution_kernel:4096x4096
"$TK" train -q --db "$DB" --model tlp --feature knob --hardware "$A100" --out "$DIR/s-tlp.model" >/dev/null
"$TK" train -q --db "$DB" --model xgb --feature knob --hardware "$A100" --out "$DIR/s-xgb.model" >/dev/null

for target in "NVIDIA RTX A4000" "AMD Instinct MI250X"; do
	t=$(hw "$target")
	best=$(sqlite3 "$DB" "SELECT min(median) FROM measurement WHERE valid AND hardware_id = $t")
	"$TK" transfer -q --db "$DB" --model "$DIR/s-tlp.model" --to-hw "$t" --method moses \
		--target-fraction 0.05 --out "$DIR/tm.model" >/dev/null
	for m in scratch transfer transfer+ctl "tlp moses online" "tlp finetune online" \
		"xgb-warm online" "tlp moses file"; do
		case $m in
		scratch) set -- ;;
		transfer) set -- --transfer-from "$DB" --transfer-hardware "$A100" ;;
		transfer+ctl) set -- --transfer-from "$DB" --transfer-hardware "$A100" --controller moses ;;
		"tlp moses online") set -- --model-file "$DIR/s-tlp.model" --adapt moses ;;
		"tlp finetune online") set -- --model-file "$DIR/s-tlp.model" --adapt finetune ;;
		"xgb-warm online") set -- --model-file "$DIR/s-xgb.model" --adapt xgb-warm ;;
		"tlp moses file") set -- --model-file "$DIR/tm.model" ;;
		esac
		s=1
		while [ "$s" -le "$SEEDS" ]; do
			rm -f "$DIR/r.db" "$DIR/r.db-wal" "$DIR/r.db-shm"
			"$TK" tune -q --db "$DIR/r.db" --replay "$DB" --replay-hardware "$t" --task "$TASK" \
				--feature knob --trials "$BUDGET" --seed "$s" "$@" >/dev/null
			n=$(sqlite3 "$DIR/r.db" "SELECT min(trial) + 1 FROM measurement
				WHERE valid AND median <= $best / 0.95")
			meas=$(sqlite3 "$DIR/r.db" "SELECT count(*) FROM measurement")
			lat=$(sqlite3 "$DIR/r.db" "SELECT min(median) FROM measurement WHERE valid")
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$m" "$s" "${n:-999999}" "$meas" \
				"${lat:-1e30}" >>"$ROWS"
			s=$((s + 1))
		done
	done
done

printf '\nReplayed search on the target, budget %s: trials to 95%% of its best (median of %s seeds)\n' \
	"$BUDGET" "$SEEDS"
printf '%-22s %-20s %10s %9s %9s %12s %7s\n' target method to_95% reached measured best_s CMAT%
awk -F'\t' -v B="$BUDGET" '
	{ key = $1 "\t" $2; if (!(key in n)) order[++nk] = key; k = ++n[key]
	  v[key, k] = $4 < 999999 ? $4 : B; m[key, k] = $5; l[key, k] = $6; ok[key] += $4 < 999999 }
	function med(a, key,   i, b, x, c, t) {
		c = n[key]; for (i = 1; i <= c; i++) t[i] = (a == "v") ? v[key, i] : (a == "m") ? m[key, i] : l[key, i]
		for (i = 1; i <= c; i++) for (b = i + 1; b <= c; b++) if (t[b] < t[i]) { x = t[i]; t[i] = t[b]; t[b] = x }
		return t[int((c + 1) / 2)]
	}
	END { for (i = 1; i <= nk; i++) { key = order[i]; split(key, f, "\t"); x = med("v", key)
		base = f[1] "\ttlp finetune online"; cmat = "-"
		if (base in n) cmat = sprintf("%.1f", (med("v", base) / x * med("l", base) / med("l", key) - 1) * 100)
		printf "%-22s %-20s %10s %6d/%-2d %9d %12.6g %7s\n", f[1], f[2],
			(x < B || ok[key] * 2 > n[key]) ? x : (">" B), ok[key], n[key], med("m", key), med("l", key), cmat } }
' "$ROWS"
