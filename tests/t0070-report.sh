#!/bin/sh
# report curve, compare and model: tuning curves as tables and SVG charts,
# comparisons of runs, the model table.
. "$(dirname "$0")/lib.sh"

DENSE='dense:m=24,n=40,k=16'
CONV='conv2d:c=4,h=10,w=10,k=8,pad=1'
DENSE_KEY='dense:k=16,m=24,n=40'

test_expect_success 'two measure runs on the same tasks' '
	tunekit measure -q --task $DENSE --task $CONV --sample 6 --seed 1 >/dev/null &&
	tunekit measure -q --task $DENSE --task $CONV --sample 6 --seed 2 >/dev/null &&
	test "$(sql "SELECT COUNT(*) FROM run")" -eq 2
'

test_expect_success 'curve prints one row per measurement, best so far never falls' '
	tunekit report curve --run 1 >curve &&
	printf "run\ttask\ttrial\tseconds\tbest_gflops\tbest_latency_s\tunit\n" >want &&
	head -1 curve >hdr && test_cmp want hdr &&
	test_rows curve 12 &&
	test "$(awk -F"\t" "NR > 1 && \$1 != 1" curve | wc -l)" -eq 0 &&
	awk -F"\t" "NR > 1 { if (\$2 != t) { t = \$2; n = 0; b = 0 } n++; if (\$3 != n) bad = 1;
		if (\$5 != \"\") { if (\$5 + 0 < b) bad = 1; b = \$5 + 0 }
		if (\$6 != \"\" && \$6 <= 0) bad = 1 }
		END { exit bad }" curve
'

test_expect_success 'the final best of a curve is the run best of its task' '
	tunekit report curve --run 2 --task $DENSE >curve2 &&
	test_rows curve2 6 &&
	test "$(awk -F"\t" "NR > 1 { print \$2 }" curve2 | sort -u)" = "$DENSE_KEY" &&
	min=$(sql "SELECT MIN(m.median) FROM measurement m JOIN config c ON c.id = m.config_id JOIN task t ON t.id = c.task_id WHERE m.valid AND m.run_id = 2 AND t.key = '\''$DENSE_KEY'\''") &&
	got=$(tail -1 curve2 | cut -f6) &&
	awk -v a="$min" -v b="$got" "BEGIN { d = (a - b) / a; exit !(d * d < 1e-14) }"
'

test_expect_success 'curve without --run reports the most recent run' '
	tunekit report curve >latest &&
	test "$(awk -F"\t" "NR > 1 { print \$1 }" latest | sort -u)" = 2
'

test_expect_success 'curve --plot writes an SVG chart with both axis titles' '
	tunekit report curve --run 1 --plot c.svg >out &&
	test -s c.svg && ! test -s out &&
	head -c 64 c.svg | grep -q -e "^<?xml" -e "^<svg" &&
	grep -q "Trials" c.svg &&
	grep -q "Seconds since the run started" c.svg &&
	grep -q "Best GFLOPS so far" c.svg &&
	grep -q "</svg>" c.svg &&
	test "$(grep -c "<path" c.svg)" -eq 4 &&
	if command -v xmllint >/dev/null; then xmllint --noout c.svg; fi
'

test_expect_success 'curve --plot --x seconds --log draws one chart; --plot - writes stdout' '
	tunekit report curve --run 1 --run 2 --plot - --x seconds --log >d.svg &&
	grep -q "log scale" d.svg &&
	! grep -q "Trials" d.svg &&
	test "$(grep -c "<path" d.svg)" -eq 4 &&
	grep -q "width=\"800\" height=\"500\"" d.svg &&
	grep -q ">run 2 measure: $DENSE_KEY<" d.svg
'

test_expect_success 'compare has one row per task and a summary row' '
	tunekit report compare --run 1 --run 2 >cmp &&
	printf "task\tcovered\tr1_trials_to_95\tr1_seconds_to_95\tr1_final_gflops\tr1_ratio\tr2_trials_to_95\tr2_seconds_to_95\tr2_final_gflops\tr2_ratio\tbest_known_gflops\tunit\n" >want &&
	head -1 cmp >hdr && test_cmp want hdr &&
	test_rows cmp 3 &&
	test "$(tail -1 cmp | cut -f1)" = all &&
	test "$(awk -F"\t" "NR > 1 && \$2 != \"2/2\"" cmp | wc -l)" -eq 0 &&
	test "$(awk -F"\t" "NR > 1 && \$1 != \"all\" && \$6 != \"1.000\"" cmp | wc -l)" -eq 0 &&
	awk -F"\t" "NR > 1 && \$1 != \"all\" { r = \$9 / \$5; d = r - \$10; if (d > 0.001 || d < -0.001) exit 1 }" cmp &&
	awk -F"\t" "NR > 1 && \$1 != \"all\" { b = \$11; m = \$5 > \$9 ? \$5 : \$9; d = (b - m) / b; if (d > 0.001 || d < -0.001) exit 1 }" cmp &&
	awk -F"\t" "NR > 1 && (\$3 != \"never\" || \$7 != \"never\") { ok = 1 } END { exit !ok }" cmp
'

test_expect_success 'compare marks tasks only some runs covered' '
	tunekit measure -q --task $DENSE --sample 2 --seed 3 >/dev/null &&
	tunekit report compare --run 3 --run 1 >cmp3 &&
	test_rows cmp3 3 &&
	test "$(awk -F"\t" "NR > 1 && \$2 == \"1/2\"" cmp3 | wc -l)" -eq 1 &&
	awk -F"\t" "\$2 == \"1/2\" { exit !(\$3 == \"\" && \$5 == \"\" && \$7 != \"\") }" cmp3
'

test_expect_success 'compare --network sums the network tasks with their weights' '
	printf "weight\ttask\n2\t%s\n1\t%s\n" $DENSE $CONV >net.tsv &&
	tunekit report compare --run 1 --run 2 --network ./net.tsv >cmpn &&
	test "$(tail -1 cmpn | cut -f1)" = network:net.tsv &&
	tunekit report curve --run 1 --network ./net.tsv >curven &&
	test_rows curven 12 &&
	test "$(awk -F"\t" "NR > 1 { print \$2 }" curven | sort -u)" = network:net.tsv &&
	test "$(tail -1 curven | cut -f3)" -eq 12 &&
	want=$(sql "SELECT SUM(CASE WHEN t.key = '\''$DENSE_KEY'\'' THEN 2 ELSE 1 END * b) FROM (SELECT c.task_id, MIN(m.median) AS b FROM measurement m JOIN config c ON c.id = m.config_id WHERE m.valid AND m.run_id = 1 GROUP BY c.task_id) JOIN task t ON t.id = task_id") &&
	got=$(tail -1 curven | cut -f6) &&
	awk -v a="$want" -v b="$got" "BEGIN { d = (a - b) / a; exit !(d * d < 1e-14) }"
'

test_expect_success 'model on an empty model table prints the header only' '
	tunekit report model >models &&
	test $(wc -l <models) -eq 1 &&
	grep -q "holdout_spearman" models &&
	tunekit report --format json model >mj &&
	python3 -c "import json,sys; assert json.load(sys.stdin) == []" <mj
'

test_expect_success 'model shows the metrics of the meta text' '
	sql "INSERT INTO model(kind, hardware_id, created, meta) VALUES ('\''xgb'\'', 1, 1795000000, '\''holdout_rmse 0.125
holdout_top1 0.9
n_train 321
rounds 17
valid_top1 0.75
feature itervar'\'')" &&
	tunekit report model >models &&
	test_rows models 1 &&
	test "$(tsv_col models holdout_rmse)" = 0.125 &&
	test "$(tsv_col models n_train)" = 321 &&
	test "$(tsv_col models feature)" = itervar &&
	test "$(tsv_col models rounds)" = 17 &&
	test "$(tsv_col models valid_top1)" = 0.75 &&
	test -z "$(tsv_col models holdout_mse)" &&
	test -z "$(tsv_col models n_valid)"
'

test_expect_success 'json output of curve, compare and model parses' '
	for r in "curve --run 1" "compare --run 1 --run 2" "model"; do
		tunekit report --format json $r >j &&
		python3 -c "import json,sys; v = json.load(sys.stdin); assert isinstance(v, list) and v" <j || exit 1
	done
'

test_expect_success 'bad run ids and misused options exit 2' '
	test_expect_code 2 tunekit report curve --run 99 2>err && grep -q "no run 99" err &&
	test_expect_code 2 tunekit report compare --run 1 --run 99 2>err &&
	test_expect_code 2 tunekit report compare --run x 2>err &&
	test_expect_code 2 tunekit report compare --run 1 --run 1 2>err &&
	test_expect_code 2 tunekit report compare 2>err &&
	test_expect_code 2 tunekit report curve --task "dense:m=1,n=1,k=1" 2>err &&
	test_expect_code 2 tunekit report curve --x seconds 2>err &&
	test_expect_code 2 tunekit report curve --plot p.svg --x time 2>err &&
	test_expect_code 2 tunekit report curve --plot p.svg --x trials --log 2>err &&
	test_expect_code 2 tunekit report best --run 1 2>err &&
	test_expect_code 2 tunekit report curve --network nonesuch 2>err &&
	test_expect_code 2 tunekit report graph 2>err &&
	! test -e p.svg
'

test_expect_success 'hardware lists each hardware with its records, its id found by key' '
	tunekit report --format tsv hardware >hw &&
	head -1 hw | grep -q "^hw	kind	target	records	valid	tasks	key$" &&
	test "$(sql "SELECT COUNT(*) FROM hardware")" = "$(tail -n +2 hw | wc -l)" &&
	key=$(tunekit help targets native) &&
	id=$(awk -F"	" -v k="$key" "\$7 == k { print \$1 }" hw) &&
	test "$id" = "$(sql "SELECT id FROM hardware WHERE key = '"'"'$key'"'"'")" &&
	n=$(awk -F"	" -v k="$key" "\$7 == k { print \$4 }" hw) &&
	test "$n" = "$(sql "SELECT COUNT(*) FROM measurement WHERE hardware_id = $id")" &&
	test "$n" -gt 0 &&
	tunekit report --format tsv --hardware "$id" hardware >hw1 &&
	test "$(tail -n +2 hw1 | cut -f1)" = "$id" &&
	tunekit report --format json hardware >hj &&
	python3 -c "import json,sys; v = json.load(sys.stdin); assert v and v[0][\"records\"] >= 0" <hj &&
	test_expect_code 2 tunekit report --run 1 hardware 2>err
'

test_expect_success 'records lists every measurement, by hardware, run and task' '
	tunekit report --format tsv records >rec &&
	head -1 rec | grep -q "^id	task	config	hw	valid	error	latency_s	gflops	run	load	hw_kind	bounded$" &&
	test "$(tail -n +2 rec | wc -l)" = "$(sql "SELECT COUNT(*) FROM measurement")" &&
	tunekit report --format tsv records --run 2 --task $DENSE >r2 &&
	test_rows r2 6 &&
	test "$(tail -n +2 r2 | cut -f2,9 | sort -u)" = "$DENSE_KEY	2" &&
	test "$(tail -n +2 r2 | cut -f1 | sort -n | tr "\n" " ")" = "$(sql "SELECT m.id FROM measurement m JOIN config c ON c.id = m.config_id JOIN task t ON t.id = c.task_id WHERE m.run_id = 2 AND t.key = '\''$DENSE_KEY'\'' ORDER BY m.id" | tr "\n" " ")" &&
	awk -F"	" "NR > 1 && \$5 == 1 && !(\$7 > 0 && \$8 > 0) { bad = 1 } END { exit bad }" rec &&
	test_expect_code 2 tunekit report records --run 99 2>err && grep -q "no run 99" err &&
	test_expect_code 2 tunekit report records --run 1 --hardware 1 2>err &&
	test_expect_code 2 tunekit report records --run x 2>err
'

test_expect_success 'records piped to measure --config - measure the same configurations on another target' '
	tunekit report --format tsv records --run 1 --task $DENSE >r1 &&
	tunekit measure -q --target cpu:isa=sse2 --config - <r1 >m2 &&
	test "$(tail -n +2 m2 | wc -l)" -eq 6 &&
	hw=$(sql "SELECT hardware_id FROM measurement ORDER BY id DESC LIMIT 1") &&
	test "$hw" != "$(tail -n +2 r1 | cut -f4 | sort -u)" &&
	tunekit report --format tsv --hardware "$hw" records >r3 &&
	test "$(tail -n +2 r3 | cut -f2,3 | sort)" = "$(tail -n +2 r1 | cut -f2,3 | sort)"
'

test_expect_success 'curve on a store without runs exits 2' '
	tunekit measure --db e.db --task $DENSE --naive -q >/dev/null &&
	sqlite3 e.db "DELETE FROM measurement; DELETE FROM run" &&
	test_expect_code 2 tunekit report --db e.db curve 2>err && grep -q "no runs" err
'

test_done
