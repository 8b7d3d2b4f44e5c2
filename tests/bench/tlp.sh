#!/bin/sh
# TLP and MTL-TLP on the offline dataset (make bench-tlp; not a test).
#
# 1. Cost models: train on the target hardware's records of every network
#    but the held-out ones (resnet-18 and bert-base), and score the held-out
#    tasks with TLP's top-1 and top-5 (per task, weighted by occurrences)
#    and MSE(D):
#      xgb-knob, xgb-itervar  AutoTVM's model on two feature kinds
#      tlp                    TLP on the schedule-primitive sequences
#      mtl-tlp-near           MTL-TLP: all of the target's training records
#                             plus the nearest auxiliary hardware's
#                             (TLP_AUX_NEAR, below), a share
#                             TLP_AUX_FRACTION of them each epoch
#      mtl-tlp@F              MTL-TLP: a share F of the target's training
#                             records plus every record of the other hardware
#      mtl-tlp@F-near         the same with one auxiliary hardware, the
#                             nearest (TLP_AUX_NEAR: the same CPU's next
#                             narrower ISA, else the same ISA on another CPU)
#      mtl-tlp@F-near2        the same with the two nearest, both of those
#                             (TLP_AUX_NEAR2), when both were measured
#      tlp@F                  TLP on that share alone
#      one-record             no model: one more timing of each held-out
#                             program, the ceiling label noise leaves
#      near-record            no model: the held-out programs ranked by
#                             their latency on the nearest auxiliary
#                             hardware (TLP_AUX_NEAR), no target record
#    Every row stops early on validation networks, training networks the
#    holdout resembles (TLP_VALID), then is fit again with them at the
#    rounds (epochs) they chose (train --valid-network): nothing is chosen
#    by the held-out networks themselves.
# 2. Search on the measured pools (replay): for each held-out task, tune
#    over the configurations the dataset holds (--replay-pool), xgb (refit
#    online) against the TLP model (scoring from the first plan, never
#    refit); trials and seconds to reach 95% of the pool's best.
# 3. Real tuning (TLP_REAL=1): below.
#
# usage: tlp.sh TUNEKIT DATASET.db WORKDIR
# Environment: TLP_EPOCHS (30), TLP_FRACTION (0.07), TLP_AUX_FRACTION (0.25;
# mtl-tlp-near's --aux-fraction), TLP_TARGET (hardware id; default: the one
# with the most records), TLP_HOLDOUT ("resnet-18 bert-base"),
# TLP_VALID ("bert-large resnet-50"; "": xgb stops early on the holdout, the
# neural rows train TLP_EPOCHS epochs),
# TLP_AUX (the mtl-tlp row's auxiliary hardware ids, comma-separated;
# default: every other hardware with records), TLP_AUX_NEAR (hardware id
# of the -near rows' auxiliary), TLP_AUX_NEAR2 (the -near2 row's, comma-
# separated; "" and no two found: no row), TLP_SEEDS (3:
# each model is trained with seeds 1..N, the table gives means and
# ranges), TLP_SEARCH_SEEDS (3), TLP_MODELS (1; 0: keep the models WORKDIR
# has and run the search only), TLP_REAL, TLP_REAL_TRIALS, TLP_REAL_TASKS,
# TLP_REAL_SEEDS, TLP_REAL_MODEL (part 3).
set -eu
TK=$1 SRC=$2 DIR=$3
EPOCHS=${TLP_EPOCHS:-30}
FRAC=${TLP_FRACTION:-0.07}
AUXFRAC=${TLP_AUX_FRACTION:-0.25}
HOLDOUT=${TLP_HOLDOUT:-resnet-18 bert-base}
VALID=${TLP_VALID-bert-large resnet-50}
SEEDS=${TLP_SEARCH_SEEDS:-3}
NSEED=${TLP_SEEDS:-3}
mkdir -p "$DIR"
DB=$DIR/tlp.db
rm -f "$DB" "$DB-wal" "$DB-shm"
[ -e "$SRC" ] || { echo "tlp.sh: no dataset at $SRC (make dataset)" >&2; exit 1; }
sqlite3 "$SRC" ".backup '$DB'"
q() { sqlite3 "$DB" "$1"; }

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs;" \
	"$("$TK" --version | sed -n '/^OpenBLAS core/p')" >&2
for k in knob itervar tlp; do
	t0=$(date +%s.%N)
	"$TK" extract-features -q --db "$DB" --kind "$k"
	echo "extract-features --kind $k: $(echo "$(date +%s.%N) - $t0" | bc) s" >&2
done
TARGET=${TLP_TARGET:-$(q "SELECT hardware_id FROM measurement GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1")}
AUX=${TLP_AUX:-$(q "SELECT hardware_id FROM measurement WHERE hardware_id != $TARGET GROUP BY 1
	HAVING COUNT(*) > 0 ORDER BY 1" | paste -sd, -)}
# The nearest auxiliary: the same CPU and compiler, the next narrower ISA
# (avx512 -> avx2 -> sse2), else the same ISA and compiler on the other CPU
# with the most records; chosen before any record is seen. The two nearest
# (TLP_AUX_NEAR2): both of these, when both were measured.
key=$(q "SELECT key FROM hardware WHERE id = $TARGET")
case $key in
*'|avx512|'*) near=$(echo "$key" | sed 's/|avx512|/|avx2|/') ;;
*'|avx2|'*) near=$(echo "$key" | sed 's/|avx2|/|sse2|/') ;;
*) near= ;;
esac
same_cpu=$(q "SELECT h.id FROM hardware h JOIN measurement m ON m.hardware_id = h.id
	WHERE h.key = '$near' LIMIT 1")
rest=${key#*|}
other_cpu=$(q "SELECT h.id FROM hardware h JOIN measurement m ON m.hardware_id = h.id
	WHERE h.id != $TARGET AND substr(h.key, instr(h.key, '|') + 1) = '$rest'
	GROUP BY h.id ORDER BY COUNT(*) DESC LIMIT 1")
TLP_AUX_NEAR=${TLP_AUX_NEAR:-${same_cpu:-$other_cpu}}
if [ -z "${TLP_AUX_NEAR2:-}" ] && [ -n "$same_cpu" ] && [ -n "$other_cpu" ]; then
	TLP_AUX_NEAR2=$same_cpu,$other_cpu
fi
TLP_AUX_NEAR2=${TLP_AUX_NEAR2:-}
hold=""
for n in $HOLDOUT; do hold="$hold --holdout-network $n"; done
for n in $VALID; do hold="$hold --valid-network $n"; done
# network<TAB>task, a line per occurrence of a task in a held-out network
for n in $HOLDOUT; do
	grep -v '^#' "data/networks/$n.tsv" | tail -n +2 | cut -f2 | sed "s/^/$n	/"
done >"$DIR/holdout-tasks.tsv"
echo "target hardware $TARGET: $(q "SELECT key FROM hardware WHERE id = $TARGET")" >&2
echo "auxiliary hardware: $AUX; the nearest: ${TLP_AUX_NEAR:-none}; the two nearest: ${TLP_AUX_NEAR2:-none}" >&2
echo "validation networks: ${VALID:-none (early stopping on the holdout)}" >&2

# model NAME TRAIN-ARGS...: train with seeds 1..TLP_SEEDS, print one row of
# the table: the means over the seeds, top-1 and top-5 with their range,
# then each held-out network's (train's rows holdout:NAME).
# Seed 1's model is NAME.model (the search's), the others NAME.sS.model.
model() {
	name=$1
	shift
	s=1
	while [ "$s" -le "$NSEED" ]; do
		out=$DIR/$name.model
		[ "$s" = 1 ] || out=$DIR/$name.s$s.model
		t0=$(date +%s.%N)
		# shellcheck disable=SC2086
		"$TK" train -q --db "$DB" --hardware "$TARGET" $hold --out "$out" --seed "$s" "$@" \
			>"$DIR/$name.s$s.tsv"
		secs=$(echo "$(date +%s.%N) - $t0" | bc)
		awk -F'\t' -v secs="$secs" '
			NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
			$c["set"] == "train" { ntrain = $c["rows"] }
			$c["set"] == "holdout" { all = ntrain " " $c["rows"] " " $c["tasks"] " " $c["top1"] " " \
				$c["top5"] " " $c["mse_d"] " " secs }
			$c["set"] ~ /^holdout:/ { nets = nets " " $c["top1"] " " $c["top5"] }
			END { print all nets }' "$DIR/$name.s$s.tsv"
		s=$((s + 1))
	done | awk -v name="$name" '
		{ k++; for (i = 4; i <= NF; i++) { m[i] += $i; if (k == 1 || $i < lo[i]) lo[i] = $i
			if (k == 1 || $i > hi[i]) hi[i] = $i } ; tr = $1; ho = $2; ta = $3; nf = NF }
		END { if (!k) exit
			printf "%-18s %7d %7d %6d %7.4f %-15s %7.4f %-15s %8.4f %8.1f", name, tr, ho, ta,
				m[4] / k, sprintf("(%.2f-%.2f)", lo[4], hi[4]), m[5] / k,
				sprintf("(%.2f-%.2f)", lo[5], hi[5]), m[6] / k, m[7] / k
			for (i = 8; i < nf; i += 2) printf " %5.3f/%5.3f", m[i] / k, m[i + 1] / k
			printf "\n" }'
}

# score NAME: a row of the table for a "model" that is no model, from
# lines task|config|pred|truth of held-out tasks (held_records') on stdin
# (latencies: the lower pred, the higher ranked): per held-out task top-1
# and top-5 of the programs ranked by pred, scored by truth, weighted by
# occurrences as train's.
score() {
	awk -F'|' -v name="$1" -v nets="$HOLDOUT" '
		FILENAME ~ /holdout-tasks/ { split($0, f, "\t"); w[f[1], f[2]]++; next }
		{ pred[$2] = $3; truth[$2] = $4; prog[$1] = prog[$1] " " $2; rows++ }
		# top-k of the programs P[1..np] of one task, sorted by pred, scored by truth
		function topk(k,   i, b, bk) {
			for (i = 1; i <= np; i++) if (i == 1 || truth[P[i]] < b) b = truth[P[i]]
			for (i = 1; i <= k && i <= np; i++) if (i == 1 || truth[P[i]] < bk) bk = truth[P[i]]
			return b / bk
		}
		END {
			nn = split(nets, net, " ")
			for (t in prog) {
				np = split(prog[t], P, " ")
				for (i = 1; i <= np; i++) for (j = i + 1; j <= np; j++)
					if (pred[P[j]] < pred[P[i]]) { x = P[i]; P[i] = P[j]; P[j] = x }
				t1 = topk(1); t5 = topk(5); ntask++
				for (i = 1; i <= nn; i++) { x = w[net[i], t]; W += x; A1 += x * t1; A5 += x * t5
					nw[i] += x; n1[i] += x * t1; n5[i] += x * t5 }
			}
			if (!ntask) exit
			printf "%-18s %7s %7d %6d %7.4f %-15s %7.4f %-15s %8s %8s", name, "-", rows,
				ntask, A1 / W, "", A5 / W, "", "-", "-"
			for (i = 1; i <= nn; i++) printf " %5.3f/%5.3f", nw[i] ? n1[i] / nw[i] : 0, nw[i] ? n5[i] / nw[i] : 0
			printf "\n"
		}' "$DIR/holdout-tasks.tsv" -
}

# The valid records of the held-out tasks on hardware $1, in the order
# they were taken: task|config|latency.
held_records() {
	q "SELECT t.key, m.config_id, m.median FROM measurement m JOIN config c ON c.id = m.config_id
		JOIN task t ON t.id = c.task_id WHERE m.hardware_id = $1 AND m.valid = 1
		ORDER BY m.id" | awk -F'|' 'FILENAME ~ /holdout-tasks/ { split($0, f, "\t"); held[f[2]] = 1; next }
		held[$1]' "$DIR/holdout-tasks.tsv" -
}

# The median of the latencies v[1..k] (sorts v).
MEDIAN='function median(v, k,   i, j, x) {
	for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
	return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
}'

# The noise ceiling: how a model would score that knew one more timing of
# every held-out program. Over the programs with 3+ valid records on the
# target, the first record's latency ranks, the median of the others is the
# label. Two timings of one kernel differ (other load on the host), so even
# this oracle is under 1.
one_record() {
	held_records "$TARGET" | awk -F'|' "$MEDIAN"'
		{ c = $2; task[c] = $1; lat[c, ++n[c]] = $3 }
		END { for (c in n) if (n[c] >= 3) { delete v
			for (i = 2; i <= n[c]; i++) v[i - 1] = lat[c, i]
			print task[c] "|" c "|" lat[c, 1] "|" median(v, n[c] - 1) } }' | score one-record
}

# Another machine's measurements instead of a model: the held-out programs
# ranked by their median latency on the nearest auxiliary hardware, scored
# by the target's (the programs valid on both): what the auxiliary's own
# data, with no model and no record of the target, would choose.
near_record() {
	{ held_records "$TLP_AUX_NEAR" | sed 's/^/a|/'; held_records "$TARGET" | sed 's/^/t|/'; } |
		awk -F'|' "$MEDIAN"'
		{ c = $3; task[c] = $2; k = ++n[$1, c]; lat[$1, c, k] = $4 }
		function med(h, c,   i) { delete v; for (i = 1; i <= n[h, c]; i++) v[i] = lat[h, c, i]
			return median(v, n[h, c]) }
		END { for (c in task) if (n["a", c] && n["t", c])
			print task[c] "|" c "|" med("a", c) "|" med("t", c) }' | score near-record
}

if [ "${TLP_MODELS:-1}" = 1 ] || [ ! -e "$DIR/tlp.model" ]; then
printf '\nmeans over %s seeds (range); then top-1/top-5 of each held-out network alone\n' "$NSEED"
printf '%-18s %7s %7s %6s %7s %-15s %7s %-15s %8s %8s' model train held tasks top1 '' top5 '' mse_d train_s
for n in $HOLDOUT; do printf ' %11.11s' "$n"; done
echo
model xgb-knob --model xgb --feature knob
model xgb-itervar --model xgb --feature itervar
model tlp --model tlp --feature tlp --rounds "$EPOCHS"
if [ -n "$TLP_AUX_NEAR" ]; then
	model mtl-tlp-near --model mtl-tlp --feature tlp --rounds "$EPOCHS" --aux-hw "$TLP_AUX_NEAR" \
		--aux-fraction "$AUXFRAC"
fi
if [ -n "$AUX" ]; then
	model "mtl-tlp@$FRAC" --model mtl-tlp --feature tlp --rounds "$EPOCHS" --aux-hw "$AUX" \
		--target-fraction "$FRAC"
fi
if [ -n "$TLP_AUX_NEAR" ]; then
	model "mtl-tlp@$FRAC-near" --model mtl-tlp --feature tlp --rounds "$EPOCHS" \
		--aux-hw "$TLP_AUX_NEAR" --target-fraction "$FRAC"
fi
if [ -n "$TLP_AUX_NEAR2" ]; then
	model "mtl-tlp@$FRAC-near2" --model mtl-tlp --feature tlp --rounds "$EPOCHS" \
		--aux-hw "$TLP_AUX_NEAR2" --target-fraction "$FRAC"
fi
model "tlp@$FRAC" --model tlp --feature tlp --rounds "$EPOCHS" --target-fraction "$FRAC"
one_record
[ -z "$TLP_AUX_NEAR" ] || near_record
fi

# 2. Search on the held-out tasks' pools (of at least TLP_POOL_MIN records),
#    replayed, each search in the task's pool only (--replay-pool: the
#    model ranks the pool's untried configurations, no annealing).
printf '\nreplayed search on the held-out pools (target hardware %s), %s seeds\n' "$TARGET" "$SEEDS"
printf '%-48s %5s %-8s %9s %9s\n' task pool method trials95 seconds95
RDB=$DIR/replay-runs.db
rm -f "$RDB" "$RDB-wal" "$RDB-shm"
cut -f2 "$DIR/holdout-tasks.tsv" | awk '!seen[$0]++' | while read -r task; do
	pool=$(q "SELECT COUNT(DISTINCT m.config_id) FROM measurement m JOIN config c ON c.id = m.config_id
		JOIN task t ON t.id = c.task_id WHERE m.hardware_id = $TARGET AND t.key = '$task'")
	[ "$pool" -ge "${TLP_POOL_MIN:-48}" ] || continue
	s=1
	while [ "$s" -le "$SEEDS" ]; do
		for m in xgb tlp; do
			if [ $m = xgb ]; then
				set -- --feature itervar
			else
				set -- --model-file "$DIR/tlp.model"
			fi
			"$TK" tune -q --db "$RDB" --replay "$DB" --replay-hardware "$TARGET" --replay-pool 1 \
				--task "$task" --trials "$pool" --plan-size 8 --confirm 0 --seed "$s" "$@" \
				>/dev/null
			echo "$task	$pool	$m	$s	$(sqlite3 "$RDB" "SELECT MAX(id) FROM run")"
		done
		s=$((s + 1))
	done
done >"$DIR/replay.tsv"
# Per task and method, medians over seeds of the trials and seconds each
# run needed to come within 95% of the pool's best throughput ("never":
# counted as the pool size and the run's length).
if [ "$SEEDS" = 0 ]; then
	echo "(not run: TLP_SEARCH_SEEDS=0)"
elif [ ! -s "$DIR/replay.tsv" ]; then
	echo "(no held-out task has a pool of ${TLP_POOL_MIN:-48} records on hardware $TARGET yet)"
else
"$TK" report --db "$DB" --hardware "$TARGET" --format tsv best >"$DIR/pool-best.tsv"
cut -f5 "$DIR/replay.tsv" | sed 's/^/--run /' | xargs "$TK" report --db "$RDB" --format tsv curve \
	>"$DIR/curves.tsv"
awk -F'\t' '
	FILENAME ~ /pool-best/ { if (FNR == 1) { for (i = 1; i <= NF; i++) b[$i] = i; next }
		best[$b["task"]] = $b["latency_s"]; next }
	FILENAME ~ /replay/ { run[$5] = $1 "\t" $2 "\t" $3; next }
	FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	{ r = $c["run"]; task = $c["task"]; last[r] = $c["seconds"] }
	!(r in hit) && best[task] > 0 && $c["best_latency_s"] != "" && $c["best_latency_s"] <= best[task] / 0.95 {
		hit[r] = 1; t95[r] = $c["trial"]; s95[r] = $c["seconds"] }
	function med(v, k,   i, j, x) {
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
		return v[int((k + 1) / 2)]
	}
	END {
		for (r in run) { key = run[r]; k = ++n[key]; split(key, f, "\t")
			T[key, k] = (r in hit) ? t95[r] : f[2]; S[key, k] = (r in hit) ? s95[r] : last[r] }
		for (key in n) { split(key, f, "\t"); delete tv; delete sv
			for (k = 1; k <= n[key]; k++) { tv[k] = T[key, k]; sv[k] = S[key, k] }
			printf "%-48s %5s %-8s %9d %9.3g\n", f[1], f[2], f[3], med(tv, n[key]), med(sv, n[key]) }
	}
' "$DIR/pool-best.tsv" "$DIR/replay.tsv" "$DIR/curves.tsv" | sort
fi

# 3. Real tuning (TLP_REAL=1; measures on this CPU, about 10 minutes a task
#    and seed): for each task and seed 1..TLP_REAL_SEEDS (1), xgb+sa tunes
#    for TLP_REAL_TRIALS trials; a tune guided by part 1's model file
#    WORKDIR/TLP_REAL_MODEL.model (tlp; or another row's, mtl-tlp-near) does
#    the same, never refit (tlp), then again fine-tuning a copy of the model
#    on the run's own records at every refit (tlp+ft: --adapt finetune); for
#    each, the best throughput and the trials it needs to reach 95% of the
#    xgb+sa run's best, and that best itself; the three curves of task i
#    (of TLP_REAL_TASKS) and seed s in WORKDIR/real-i-ss.svg.
[ "${TLP_REAL:-0}" = 1 ] || exit 0
TRIALS=${TLP_REAL_TRIALS:-300}
REAL=${TLP_REAL_TASKS:-"dense:m=1024,n=1024,k=1024
conv2d:c=64,h=56,w=56,k=64,pad=1"}
TDB=$DIR/real.db
RMODEL=$DIR/${TLP_REAL_MODEL:-tlp}.model
[ -e "$RMODEL" ] || { echo "tlp.sh: no model $RMODEL (part 1 makes it)" >&2; exit 1; }
echo "real tuning guided by $RMODEL" >&2
rm -f "$TDB" "$TDB-wal" "$TDB-shm"
printf '\nreal tuning on this CPU, %s trials each; GFLOPS, then trials to 95%% / 100%% of xgb+sa\n' \
	"$TRIALS"
printf '%-36s %4s %7s %7s %11s %7s %11s\n' task seed xgb tlp to_95/xgb tlp+ft to_95/xgb
i=0
echo "$REAL" | while read -r task; do
	i=$((i + 1))
	s=1
	while [ "$s" -le "${TLP_REAL_SEEDS:-1}" ]; do
		runs=
		for m in xgb tlp ft; do
			case $m in
			xgb) set -- ;;
			tlp) set -- --model-file "$RMODEL" ;;
			ft) set -- --model-file "$RMODEL" --adapt finetune ;;
			esac
			"$TK" tune -q --db "$TDB" --task "$task" --trials "$TRIALS" --confirm 0 --seed "$s" \
				"$@" >/dev/null
			runs="$runs --run $(sqlite3 "$TDB" "SELECT MAX(id) FROM run")"
		done
		# shellcheck disable=SC2086
		"$TK" report --db "$TDB" curve $runs --plot "$DIR/real-$i-s$s.svg" >/dev/null
		# shellcheck disable=SC2086
		"$TK" report --db "$TDB" --format tsv curve $runs | awk -F'\t' -v task="$task" -v s="$s" '
			NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
			{ r = $c["run"]; if (!(r in k)) k[r] = ++nr
			  g[k[r], $c["trial"]] = $c["best_gflops"]; n[k[r]] = $c["trial"] }
			function to(j, x,   t) { for (t = 1; t <= n[j]; t++) if (g[j, t] >= x) return t
				return "never" }
			END {
				xb = g[1, n[1]]
				printf "%-36s %4d %7.1f", task, s, xb
				for (j = 2; j <= 3; j++)
					printf " %7.1f %11s", g[j, n[j]], to(j, 0.95 * xb) "/" to(j, xb)
				printf "\n"
			}'
		s=$((s + 1))
	done
done
