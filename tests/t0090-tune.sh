#!/bin/sh
# tune: the learned loop on the real CPU, replayed datasets, networks,
# interruption and --resume.
. "$(dirname "$0")/lib.sh"

TASK='dense:m=64,n=64,k=64'

test_expect_success 'tune finds a config at least 5x faster than the median random one' '
	tunekit measure -q --task $TASK --sample 16 --repeat 2 --seed 5 >random &&
	tunekit tune -q --task $TASK --trials 48 --plan-size 16 --batch 16 --repeat 2 --feature knob >tuned &&
	n=$(tsv_count tuned) && echo "$n records" &&
	test $n -ge 64 && test $(((n - 48) % 2)) -eq 0 &&
	med=$(awk -F"\t" "NR > 1 && \$7 == 1 { print \$9 }" random | sort -g | awk "{ a[NR] = \$1 } END { print a[int((NR + 1) / 2)] }") &&
	best=$(awk -F"\t" "NR > 1 && \$7 == 1 { print \$9 }" tuned | sort -g | head -1) &&
	echo "median random $med, best tuned $best" &&
	awk -v m="$med" -v b="$best" "BEGIN { exit !(m / b >= 5) }"
'

test_expect_success 'the run is recorded with its method and parameters' '
	test "$(sql "SELECT method FROM run WHERE id = 2")" = "tune/xgb+sa" &&
	sql "SELECT params FROM run WHERE id = 2" | grep -q "^trials=48$" &&
	sql "SELECT params FROM run WHERE id = 2" | grep -q "^confirm=8$" &&
	n=$(sql "SELECT COUNT(*) FROM measurement WHERE run_id = 2") &&
	test $n -ge 64 && test $(((n - 48) % 2)) -eq 0 &&
	test "$(sql "SELECT COUNT(DISTINCT config_id) FROM measurement WHERE run_id = 2")" -eq 48 &&
	test "$(sql "SELECT ended IS NOT NULL FROM run WHERE id = 2")" -eq 1
'

test_expect_success 'the 8 fastest are measured twice more, then any that beat the best median' '
	sql "SELECT config_id FROM measurement WHERE run_id = 2 AND trial < 48 AND valid
		AND NOT bounded ORDER BY median, id LIMIT 8" | sort >fastest &&
	sql "SELECT config_id FROM measurement WHERE run_id = 2 AND trial BETWEEN 48 AND 63" | sort -u >again &&
	test_cmp fastest again &&
	test "$(sql "SELECT COUNT(*) FROM (SELECT config_id FROM measurement WHERE run_id = 2
		GROUP BY config_id HAVING COUNT(*) NOT IN (1, 3))")" -eq 0 &&
	test "$(sql "SELECT COUNT(*) FROM (SELECT config_id FROM measurement WHERE run_id = 2 AND trial >= 48
		GROUP BY config_id HAVING COUNT(*) <> 2)")" -eq 0 &&
	bar=$(sql "SELECT MIN(m3) FROM (SELECT SUM(median) - MAX(median) - MIN(median) AS m3
		FROM measurement WHERE run_id = 2 AND valid GROUP BY config_id HAVING COUNT(*) = 3)") &&
	beat=$(sql "SELECT COUNT(*) FROM (SELECT MIN(median) AS m FROM measurement WHERE run_id = 2 AND valid
		AND NOT bounded GROUP BY config_id HAVING COUNT(*) = 1) WHERE m < $bar") &&
	n=$(sql "SELECT COUNT(*) FROM measurement WHERE run_id = 2 AND trial >= 48") &&
	echo "best median of three $bar s; $n confirming records; $beat unconfirmed beat it" &&
	{ test "$beat" -eq 0 || test $n -eq 128; } &&
	sql "SELECT c.text, m.median FROM measurement m JOIN config c ON c.id = m.config_id
		WHERE m.valid AND NOT m.bounded ORDER BY c.text, m.median" |
	awk -F"|" "\$1 != c { if (n) print c \"|\" v[int(n / 2) + 1]; c = \$1; n = 0 }
		{ v[++n] = \$2 } END { print c \"|\" v[int(n / 2) + 1] }" |
	sort -t"|" -k2,2g | head -1 | cut -d"|" -f1 >want &&
	tunekit report best | awk -F"\t" "NR > 1 { print \$3 }" >got &&
	test_cmp want got
'

test_expect_success 'random and grid search and model-free annealing run' '
	tunekit tune -q --task $TASK --trials 8 --search random --repeat 1 --confirm 0 >r &&
	test_rows r 8 &&
	tunekit tune -q --task $TASK --trials 8 --search grid --repeat 1 --confirm 0 >g &&
	test "$(tsv_col g trial 2)" -eq 0 && test_rows g 8 &&
	tunekit tune -q --task $TASK --trials 8 --model none --search sa --batch 4 --repeat 1 --confirm 0 >a &&
	test_rows a 8 &&
	test "$(sql "SELECT group_concat(method) FROM (SELECT method FROM run ORDER BY id)")" = \
		"measure,tune/xgb+sa,tune/random,tune/grid,tune/none+sa"
'

test_expect_success 'transfer learning plans the first batch on a base model of the history' '
	tunekit tune --db new.db --task dense:m=32,n=64,k=48 --trials 16 --plan-size 16 --repeat 1 \
		--confirm 0 --transfer-from "$TUNEKIT_DB" >out 2>err &&
	test_rows out 16 &&
	grep -q "base model from [0-9][0-9]* history records" err &&
	sqlite3 new.db "SELECT params FROM run" | grep -q "^transfer_from=$TUNEKIT_DB$" &&
	test_expect_code 2 tunekit tune --db new.db --task conv2d:c=8,h=8,w=8,k=8 --trials 4 \
		--transfer-from "$TUNEKIT_DB" 2>err &&
	grep -q "too little history for transfer" err &&
	test "$(sqlite3 new.db "SELECT COUNT(*) FROM run WHERE ended IS NULL")" -eq 0 &&
	test_expect_code 2 tunekit tune --db new.db --task dense:m=8,n=8,k=8 --trials 4 --search random \
		--transfer-from "$TUNEKIT_DB" 2>err &&
	grep -q "transfer learning needs a model that takes a base model (xgb) and a search that plans on it" err &&
	test_expect_code 2 tunekit tune --db new.db --task dense:m=8,n=8,k=8 --trials 4 --model rfei \
		--transfer-from "$TUNEKIT_DB" 2>err &&
	grep -q "needs a model that takes a base model (xgb)" err &&
	test_expect_code 3 tunekit tune --db new.db --task dense:m=8,n=8,k=8 --trials 4 \
		--transfer-from nosuch.db 2>err
'

test_expect_success 'transfer learning from another hardware of the history (another thread count)' '
	test_expect_code 2 tunekit tune --db thr.db --target cpu:threads=2 --task dense:m=32,n=64,k=48 \
		--trials 16 --plan-size 16 --repeat 1 --confirm 0 --transfer-from "$TUNEKIT_DB" 2>err &&
	grep -q "too little history" err &&
	hw=$(sql "SELECT hardware_id FROM run WHERE id = 2") &&
	tunekit tune --db thr.db --target cpu:threads=2 --task dense:m=32,n=64,k=48 --trials 16 \
		--plan-size 16 --repeat 1 --confirm 0 --transfer-from "$TUNEKIT_DB" \
		--transfer-hardware "$hw" >out 2>err &&
	grep -q "base model from [0-9][0-9]* history records" err &&
	sqlite3 thr.db "SELECT params FROM run" | grep -qx "transfer_hw=$hw" &&
	key=$(sql "SELECT key FROM hardware WHERE id = $hw") &&
	tunekit tune --db thr.db --target cpu:threads=2 --task dense:m=32,n=64,k=48 --trials 16 \
		--plan-size 16 --repeat 1 --confirm 0 --transfer-from "$TUNEKIT_DB" \
		--transfer-hardware "$key" >out 2>err &&
	grep -q "base model from [0-9][0-9]* history records" err &&
	test_expect_code 2 tunekit tune --db thr.db --task dense:m=8,n=8,k=8 --trials 4 \
		--transfer-hardware "$hw" 2>err &&
	grep -q "needs a history store" err
'

test_expect_success 'every loop order gets trials while it has fewer than --cover' '
	tunekit tune -q --db cov.db --task dense:m=32,n=64,k=48 --trials 32 --plan-size 16 --repeat 1 \
		--confirm 0 --epsilon 0 --cover 4 --transfer-from "$TUNEKIT_DB" >out &&
	test_rows out 32 &&
	sqlite3 cov.db "SELECT params FROM run" | grep -qx "cover=4" &&
	for v in 0 1 2; do
		first=$(sqlite3 cov.db "SELECT COUNT(*) FROM measurement m JOIN config c ON c.id = m.config_id
			WHERE m.trial < 16 AND c.text LIKE \"%;order=$v;%\"") &&
		all=$(sqlite3 cov.db "SELECT COUNT(*) FROM measurement m JOIN config c ON c.id = m.config_id
			WHERE c.text LIKE \"%;order=$v;%\"") &&
		echo "order=$v: $first of the first plan, $all in all" &&
		test "$first" -ge 2 && test "$all" -ge 4 || return 1
	done &&
	for seed in 1 2 3 4 5 6; do
		# the first plan of several seeds: one made only of order-2 entries
		# without panels once left order 0 and 1 out (the plan kept them all)
		rm -f cov$seed.db &&
		tunekit tune -q --db cov$seed.db --task dense:m=32,n=64,k=48 --trials 16 --plan-size 16 --repeat 1 \
			--confirm 0 --epsilon 0 --cover 4 --seed $seed --transfer-from "$TUNEKIT_DB" >/dev/null &&
		for v in 0 1 2; do
			n=$(sqlite3 cov$seed.db "SELECT COUNT(*) FROM config WHERE text LIKE \"%;order=$v;%\"") &&
			echo "seed $seed order=$v: $n" &&
			test "$n" -ge 2 || return 1
		done || return 1
	done &&
	test_expect_code 2 tunekit tune --db cov.db --task dense:m=8,n=8,k=8 --trials 4 --cover -2 2>err &&
	grep -q "out of range" err
'

test_expect_success 'transfer learning from the store being tuned, its own records kept' '
	n=$(sql "SELECT COUNT(*) FROM measurement") &&
	tunekit tune --task dense:m=32,n=64,k=48 --trials 8 --plan-size 8 --repeat 1 --confirm 0 \
		--transfer-from "$TUNEKIT_DB" >out 2>err &&
	grep -q "base model from [0-9][0-9]* history records" err &&
	test "$(sql "SELECT COUNT(*) FROM measurement")" -eq $((n + 8))
'

# Replay datasets: real GPU search spaces measured exhaustively by Kernel
# Tuner (when readable), and this CPU's own records of the tests above.
KT=${TUNEKIT_KT_DATA:-/work/shared/data/kernel_tuner}
KTASK=kt:convolution_kernel:4096x4096
if test -r "$KT/convolution_A100.json.gz"; then
test_expect_success 'replay with the same seed gives identical runs' '
	tunekit import --db data.db kernel-tuner "$KT/convolution_A100.json.gz" >/dev/null &&
	tunekit tune -q --db r1.db --replay data.db --task $KTASK --trials 60 --plan-size 16 --feature knob --seed 3 | cut -f 3-10 >c1 &&
	tunekit tune -q --db r2.db --replay data.db --task $KTASK --trials 60 --plan-size 16 --feature knob --seed 3 | cut -f 3-10 >c2 &&
	test_cmp c1 c2 &&
	test $(wc -l <c1) -eq 61 &&
	tunekit tune -q --db r3.db --replay data.db --task $KTASK --trials 60 --plan-size 16 --feature knob --seed 4 | cut -f 3-10 >c3 &&
	! cmp -s c1 c3 &&
	test "$(sqlite3 r1.db "SELECT kind FROM hardware")" = replay &&
	test "$(sqlite3 r1.db "SELECT replay FROM run")" = data.db &&
	dkey=$(sqlite3 data.db "SELECT key FROM hardware") &&
	test "$(sqlite3 r1.db "SELECT cpu FROM hardware")" = "$dkey" &&
	test "$(sqlite3 r1.db "SELECT key FROM hardware")" = "replay:$dkey"
'

test_expect_success 'configurations the dataset lacks are unmeasurable (invalid by constraint)' '
	tunekit tune -q --db r6.db --replay data.db --task $KTASK --trials 200 --search random --seed 1 >out &&
	test_rows out 200 &&
	bad=$(awk -F"\t" "NR > 1 && \$7 == 0" out | wc -l) &&
	echo "$bad of 200 invalid" &&
	test $bad -ge 100 && test $bad -lt 200
'

test_expect_success '--time-budget stops after the batch that spends it (simulated seconds in a replay)' '
	tunekit tune -q --db r7.db --replay data.db --task $KTASK --trials 2000 --feature knob \
		--time-budget 60 >out &&
	n=$(tsv_count out) && echo "$n trials" && test $n -lt 2000 && test $((n % 16)) -eq 0 &&
	sqlite3 r7.db "SELECT MAX(at) - MIN(at) FROM measurement" >span &&
	awk "{ exit !(\$1 >= 45 && \$1 < 90) }" span &&
	test_expect_code 2 tunekit tune --db r7.db --replay data.db --task $KTASK --time-budget -1
'
fi

test_expect_success 'replayed configurations absent from the dataset are unmeasurable' '
	tunekit measure -q --db small.db --task dense:m=8,n=8,k=4 --sample 5 --repeat 1 >/dev/null &&
	tunekit tune -q --db r4.db --replay small.db --task dense:m=8,n=8,k=4 --trials 30 --search random >out &&
	test_rows out 30 &&
	test "$(awk -F"\t" "NR > 1 && \$7 == 1" out | wc -l)" -le 5 &&
	test "$(sqlite3 r4.db "SELECT COUNT(*) FROM measurement WHERE error = 1 AND message LIKE '\''absent%'\''")" -ge 25
'

test_expect_success 'with --replay-pool, only the dataset'"'"'s configurations are tried, each once' '
	tunekit measure -q --db pool.db --task dense:m=8,n=8,k=4 --sample 12 --repeat 1 >/dev/null &&
	sqlite3 pool.db "SELECT text FROM config" | sort >want &&
	n=$(wc -l <want) && test "$n" -ge 8 &&
	tunekit tune -q --db rp1.db --replay pool.db --replay-pool 1 --task dense:m=8,n=8,k=4 \
		--trials 20 --plan-size 4 --confirm 0 --feature knob >out &&
	test_rows out "$n" &&
	awk -F"\t" "NR > 1 && \$7 != 1" out >bad && test ! -s bad &&
	awk -F"\t" "NR > 1 { print \$5 }" out | sort >got && cmp want got &&
	tunekit tune -q --db rp2.db --replay pool.db --replay-pool 1 --task dense:m=8,n=8,k=4 \
		--trials 8 --search random >out &&
	test_rows out 8 &&
	awk -F"\t" "NR > 1 { print \$5 }" out | sort -u >got && test "$(wc -l <got)" -eq 8 &&
	comm -13 want got >extra && test ! -s extra &&
	test_expect_code 2 tunekit tune -q --db rp3.db --replay-pool 1 --task dense:m=8,n=8,k=4 \
		--trials 4 2>err &&
	grep -q "give --replay" err
'

test_expect_success 'a network shares one budget and reports its estimated latency' '
	printf "# two tasks\nweight\ttask\n3\tdense:k=64,m=64,n=64\n1\tdense:k=8,m=4,n=4\n" >net.tsv &&
	tunekit measure -q --task dense:m=4,n=4,k=8 --sample 24 --repeat 1 --batch 24 >/dev/null &&
	tunekit tune --db r5.db --replay "$TUNEKIT_DB" --network net.tsv --trials 80 --round 16 --feature knob >out 2>err &&
	test_rows out 80 &&
	test "$(awk -F"\t" "NR > 1 { print \$4 }" out | sort -u | wc -l)" -eq 2 &&
	grep -q "estimated latency" err
'

test_expect_success 'an interrupted run keeps its records and --resume finishes it' '
	"$TUNEKIT_BIN" tune -q --db int.db --task $TASK --trials 64 --batch 8 --plan-size 16 --repeat 1 --feature knob >/dev/null 2>err &
	pid=$! &&
	n=0 &&
	while [ $n -lt 8 ]; do
		sleep 0.3
		n=$(sqlite3 int.db "SELECT COUNT(*) FROM measurement" 2>/dev/null || echo 0)
	done &&
	kill -INT $pid; wait $pid; rc=$?;
	test $rc -eq 130 && grep -q "tune --resume" err &&
	k=$(sqlite3 int.db "SELECT COUNT(*) FROM measurement") &&
	echo "$k records when interrupted" &&
	test $((k % 8)) -eq 0 && test $k -lt 64 &&
	test "$(sqlite3 int.db "SELECT ended IS NULL FROM run")" -eq 1 &&
	tunekit tune -q --db int.db --resume >rest &&
	# the 8 fastest measured twice more, and again any that beat them
	n=$(sqlite3 int.db "SELECT COUNT(*) FROM measurement") && echo "$n records in all" &&
	test $n -ge 80 && test $((n % 2)) -eq 0 &&
	test_rows rest $((n - k)) &&
	test "$(sqlite3 int.db "SELECT COUNT(DISTINCT config_id) FROM measurement")" -eq 64 &&
	test "$(sqlite3 int.db "SELECT ended IS NOT NULL FROM run")" -eq 1 &&
	test "$(sqlite3 int.db "SELECT MAX(trial) FROM measurement")" -eq $((n - 1))
'

# The register tile of a dense config: inner factor of the vectorised axis
# in 4-lane (SSE2) vectors times the other's; prints the largest of a stream.
max_regtile() {
	awk -F"\t" "NR > 1 { n = split(\$5, kv, \";\"); delete f; v = \"\"
		for (i = 1; i <= n; i++) { split(kv[i], p, \"=\"); f[p[1]] = p[2] }
		v = f[\"vec\"]; split(f[\"tile_i\"], a, \"x\"); split(f[\"tile_j\"], b, \"x\")
		ri = v == \"i\" ? int((a[3] + 3) / 4) : a[3]; rj = v == \"j\" ? int((b[3] + 3) / 4) : b[3]
		if (ri * rj > m) m = ri * rj } END { print m + 0 }" "$1"
}

test_expect_success 'draws keep the register tile within --regtile (the registers by default)' '
	tunekit tune -q --db rt.db --task dense:m=64,n=96,k=32 --target cpu:isa=sse2 --trials 24 \
		--search random --repeat 1 --number 1 --confirm 0 --regtile 2 >rt2 &&
	test_rows rt2 24 && test "$(max_regtile rt2)" -le 2 &&
	tunekit tune -q --db rt.db --task dense:m=64,n=96,k=32 --target cpu:isa=sse2 --trials 24 \
		--search random --repeat 1 --number 1 --confirm 0 --seed 2 >rtd &&
	test "$(max_regtile rtd)" -le 14 &&
	tunekit tune -q --db rt.db --task dense:m=64,n=96,k=32 --target cpu:isa=sse2 --trials 24 \
		--search random --repeat 1 --number 1 --confirm 0 --seed 3 --regtile 0 >rt0 &&
	test "$(max_regtile rt0)" -gt 14 &&
	sqlite3 rt.db "SELECT params FROM run" | grep -c "^regtile=" >n && test "$(cat n)" -eq 3
'

test_expect_success 'help models, searches and controllers print the tables' '
	tunekit help models >hm &&
	test "$(head -1 hm | tr -s " ")" = "model features uncertainty transfer adapts summary" &&
	grep -q "^xgb  *itervar,knob,curve,tlp,hidden  *no  *yes  *xgb-warm " hm &&
	grep -q "^rfei  *itervar,knob,curve  *yes  *no  *- " hm &&
	grep -q "^tlp  *tlp,knob,itervar,curve  *no  *no  *moses,finetune " hm &&
	grep -q "^mtl-tlp  *tlp,knob,itervar,curve  *no  *no  *moses,finetune " hm &&
	grep -q "^meta  *graph  *yes  *no  *- " hm &&
	grep -q "^ml2  *itervar,knob,curve,tlp  *no  *no  *- " hm &&
	grep -q "^none  *-  *no  *no  *- " hm &&
	test "$(sed -n 9p hm)" = "" && grep -q "^builtin  *model  *features  *isa  *rows  *cpu" hm &&
	test $(grep -c "^hw-[0-9]*  *xgb  *itervar " hm) -eq $(($(wc -l <hm) - 10)) &&
	tunekit help searches >hs &&
	grep -q "^sa  *model or none " hs && grep -q "^csa  *model+uncertainty " hs &&
	grep -q "^bo  *model+uncertainty " hs &&
	grep -q "^random  *- " hs && grep -q "^grid  *- " hs && test $(wc -l <hs) -eq 6 &&
	tunekit help controllers >hc &&
	grep -q "^none  *-  *every trial is measured$" hc && grep -q "^moses  *model  *Moses" hc &&
	test $(wc -l <hc) -eq 3 &&
	tunekit tune --help >h && grep -q "tunekit help models" h && grep -q "tunekit help searches" h
'

test_expect_success 'bad options exit 2' '
	test_expect_code 2 tunekit tune --task $TASK --trials 4 --model svm 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "unknown model .svm. (xgb, rfei, tlp, mtl-tlp, meta, ml2, none)$" err &&
	test_expect_code 2 tunekit tune --task $TASK --trials 4 --search bogus 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "unknown search .bogus. (sa, csa, bo, random, grid)$" err &&
	test_expect_code 2 tunekit tune --task $TASK --trials 4 --model none --search csa 2>err &&
	grep -q "csa needs a model with uncertainty: --model rfei, meta$" err &&
	test_expect_code 2 tunekit tune --trials 4 2>err && grep -q "nothing to tune" err &&
	test_expect_code 2 tunekit tune --db fresh.db --resume 2>err && grep -q "no unfinished" err &&
	test_expect_code 2 tunekit tune --task "dense:m=1" --trials 4 2>err &&
	test_expect_code 2 tunekit tune --task $TASK --trials 4 --regtile -2 2>err &&
	test_expect_code 2 tunekit tune --task $TASK --trials 4 --confirm -3 2>err &&
	test_expect_code 2 tunekit tune --task $TASK --trials 0 2>err &&
	grep -q "^tunekit tune: --trials: 0 is out of range" err &&
	test_expect_code 2 tunekit tune --task $TASK --plan-size 4x 2>err &&
	grep -q "plan-size: .4x. is not an integer" err
'

test_expect_success 'a trained model file scores the candidates, adapts, and must fit the task' '
	tunekit extract-features -q --kind knob &&
	tunekit train -q --feature knob --out knob.model >/dev/null &&
	tunekit tune -q --task $TASK --trials 16 --plan-size 8 --confirm 0 --model-file knob.model >mf &&
	test_rows mf 16 &&
	run=$(sql "SELECT MAX(id) FROM run") &&
	sql "SELECT params FROM run WHERE id = $run" | grep -q "^model_file=knob.model$" &&
	sql "SELECT params FROM run WHERE id = $run" | grep -q "^feature=knob$" &&
	test "$(sql "SELECT method FROM run WHERE id = $run")" = "tune/xgb+sa+xgb-warm" &&
	test_expect_code 2 tunekit tune --task $TASK --trials 4 --model-file knob.model --model rfei 2>err &&
	grep -q "knob.model is a xgb model on knob features" err &&
	test_expect_code 2 tunekit tune --task $TASK --trials 4 --model-file knob.model --feature itervar 2>err &&
	test_expect_code 2 tunekit tune --task dense:m=8,n=8,k=8,b=2 --trials 4 --model-file knob.model 2>err &&
	test_expect_code 2 tunekit tune --task conv2d:c=4,h=8,w=8,k=4 --trials 4 --model-file knob.model 2>err &&
	grep -q "knob features, the model file takes" err &&
	echo garbage >bad.model &&
	test_expect_code 2 tunekit tune --task $TASK --trials 4 --model-file bad.model 2>err &&
	test $(wc -l <err) -eq 1 &&
	test_expect_code 1 tunekit tune --task $TASK --trials 4 --model-file no-such.model 2>err &&
	test_expect_code 2 tunekit tune --task $TASK --trials 4 --model-file knob.model \
		--transfer-from "$TUNEKIT_DB" 2>err && grep -q "never refit" err
'

test_expect_success 'a small budget over a network reaches every task; its latency is report best'"'"'s' '
	printf "weight\ttask\n2\tdense:k=16,m=8,n=8\n1\tdense:k=8,m=8,n=16\n3\tdense:k=8,m=16,n=8\n" >small.tsv &&
	tunekit tune --db sm.db --network small.tsv --trials 6 --batch 2 --repeat 1 --confirm 0 --feature knob >out 2>err &&
	test "$(awk -F"\t" "NR > 1 { print \$4 }" out | sort -u | wc -l)" -eq 3 &&
	want=$(tunekit report --db sm.db best --format tsv | awk -F"\t" "
		NR == 1 { for (i = 1; i <= NF; i++) c[\$i] = i; next }
		{ w = \$c[\"task\"] == \"dense:k=16,m=8,n=8\" ? 2 : \$c[\"task\"] == \"dense:k=8,m=16,n=8\" ? 3 : 1;
		  s += w * \$c[\"latency_s\"] }
		END { if (s < 1e-6) printf \"%.1f ns\", s * 1e9; else if (s < 1e-3) printf \"%.2f us\", s * 1e6;
		      else printf \"%.3f ms\", s * 1e3 }") &&
	grep "estimated latency" err | grep -q "estimated latency $want" ||
	{ echo "want $want"; cat err; false; }
'

test_expect_success 'a run killed before its first batch resumes on its hardware' '
	"$TUNEKIT_BIN" tune -q --db k.db --task dense:m=96,n=96,k=96 --trials 8 --batch 8 --repeat 1 \
		--confirm 0 --feature knob >/dev/null 2>&1 &
	pid=$! &&
	n=0 && while [ "$n" -lt 1 ]; do
		sleep 0.05; n=$(sqlite3 k.db "SELECT count(*) FROM run" 2>/dev/null || echo 0)
	done &&
	kill -KILL $pid; wait $pid;
	test "$(sqlite3 k.db "SELECT count(*) FROM measurement")" -eq 0 &&
	tunekit tune -q --db k.db --resume >out &&
	test_rows out 8 &&
	test "$(sqlite3 k.db "SELECT count(DISTINCT hardware_id) FROM measurement WHERE hardware_id > 0")" -eq 1
'

test_expect_success 'a run keeps its --build-adapt for --resume' '
	"$TUNEKIT_BIN" tune -q --db ba.db --task dense:m=96,n=96,k=96 --trials 8 --batch 8 --repeat 1 \
		--confirm 0 --feature knob --build-adapt 2.5 >/dev/null 2>&1 &
	pid=$! &&
	n=0 && while [ "$n" -lt 1 ]; do
		sleep 0.05; n=$(sqlite3 ba.db "SELECT count(*) FROM run WHERE params IS NOT NULL" 2>/dev/null || echo 0)
	done &&
	kill -KILL $pid; wait $pid;
	sqlite3 ba.db "SELECT params FROM run" | grep -qx "build_adapt=2.5" &&
	tunekit tune -q --db ba.db --resume >out &&
	test_rows out 8
'

test_expect_success 'a run has one owner: a second --resume exits 3 and writes nothing' '
	"$TUNEKIT_BIN" tune -q --db own.db --task dense:m=64,n=64,k=64 --trials 400 --batch 4 --repeat 1 \
		--confirm 0 --feature knob >/dev/null 2>&1 &
	pid=$! &&
	n=0 && while [ "$n" -lt 4 ]; do
		sleep 0.1; n=$(sqlite3 own.db "SELECT count(*) FROM measurement" 2>/dev/null || echo 0)
	done &&
	test_expect_code 3 tunekit tune -q --db own.db --resume --run 1 >out 2>err;
	rc=$?; kill -KILL $pid; wait $pid;
	test $rc -eq 0 && grep -q "^tunekit tune: run 1 is being tuned by process $pid$" err &&
	test ! -s out &&
	tunekit tune -q --db own.db --resume --trials 24 >/dev/null &&
	test "$(sqlite3 own.db "SELECT count(*) - count(DISTINCT trial) FROM measurement")" -eq 0
'

test_expect_success 'the man page documents every option of --help' '
	tunekit tune --help >help &&
	sed "/^common options:/,\$d" help | grep -o -- "--[a-z][a-z-]*" | sort -u >opts &&
	test -s opts &&
	mandoc -Tascii "$TOP/man/tunekit-tune.1" | col -b >page &&
	for o in $(cat opts); do grep -q -- "$o" page || { echo "undocumented: $o"; exit 1; }; done
'

test_done
