#!/bin/sh
# transfer: a trained model adapted to other hardware. On the dataset
# slice (tests/data/dataset-slice.db.gz: five tasks, 16 configurations each
# on three CPU targets): every method, the model file and the store's model
# table, determinism, record streams, bad input. On imported Kernel Tuner
# records (A100 -> A4000): Moses and the xgb warm start on knob features.
. "$(dirname "$0")/lib.sh"

AVX512='Intel(R) Xeon(R) Processor (family 6 model 167)|avx512|cc (Debian 12.2.0-14+deb12u1) 12.2.0|-O3|threads=1'

test_expect_success 'setup: the slice, its features and two source models of hardware 1' '
	gunzip -c "$TEST_DIR/data/dataset-slice.db.gz" >"$TUNEKIT_DB" &&
	test "$(sql "SELECT key FROM hardware WHERE id = 1")" = "$AVX512" &&
	tunekit extract-features -q --kind tlp &&
	tunekit extract-features -q --kind knob &&
	tunekit train -q --model tlp --feature tlp --hardware 1 --rounds 3 --out tlp.model >/dev/null &&
	tunekit train -q --model xgb --feature knob --hardware 1 --out xgb.model >/dev/null &&
	test "$(sql "SELECT count(*) FROM model")" -eq 2
'

test_expect_success 'moses adapts a tlp model to hardware 2 and measures it on the rest' '
	tunekit transfer --model tlp.model --to-hw 2 --target-fraction 0.5 --epochs 3 \
		--out moses.model >out 2>err &&
	test "$(tsv_col out set 2)" = source && test "$(tsv_col out rows 2)" -eq 40 &&
	test "$(tsv_col out set 3)" = train && test "$(tsv_col out rows 3)" -eq 40 &&
	test "$(tsv_col out set 4)" = holdout && test "$(tsv_col out rows 4)" -eq 40 &&
	test "$(tsv_col out tasks 4)" -eq 5 &&
	grep -q "to hardware 2 (.*avx2.*): 40 of its 80 records with tlp features to adapt on, 40 to measure" err &&
	grep -q "moses, 3 epochs, .* steps, 50% of the parameters trained" err &&
	grep -a -q "^kind tlp$" moses.model && grep -a -q "^transfer_method moses$" moses.model &&
	grep -a -q "^hardware_id 2$" moses.model && grep -a -q "^n_train 40$" moses.model &&
	grep -a -q "^n_holdout 40$" moses.model &&
	grep -a -q "^source_hardware $AVX512$" moses.model &&
	grep -a -q "^transfer_trained 0.5" moses.model &&
	test "$(sql "SELECT kind, hardware_id FROM model ORDER BY id DESC LIMIT 1")" = "tlp|2" &&
	sql "SELECT meta FROM model ORDER BY id DESC LIMIT 1" | grep -q "^transfer_method=moses$"
'

test_expect_success 'the same seed adapts the same; the source row is the model before' '
	tunekit transfer -q --model tlp.model --to-hw 2 --target-fraction 0.5 --epochs 3 \
		--out moses2.model >out2 &&
	test_cmp out out2 &&
	tunekit transfer -q --model tlp.model --to-hw 2 --target-fraction 0.5 --method none \
		--out none.model >none &&
	test "$(tsv_col none spearman 2)" = "$(tsv_col out spearman 2)" &&
	test "$(tsv_col none spearman 4)" = "$(tsv_col out spearman 2)" &&
	tunekit transfer -q --model tlp.model --to-hw 2 --target-fraction 0.5 --seed 2 --epochs 3 \
		--out moses3.model >out3 &&
	! test_cmp out out3 >/dev/null
'

test_expect_success 'finetune, a threshold ticket, scratch, xgb-warm, none, a key and a budget' '
	tunekit transfer --model tlp.model --to-hw 3 --method finetune --epochs 2 --budget 30 \
		--out ft.model >out 2>err &&
	test "$(tsv_col out rows 3)" -eq 30 && test "$(tsv_col out rows 4)" -eq 50 &&
	grep -q "100% of the parameters trained" err &&
	grep -a -q "^transfer_method finetune$" ft.model && ! grep -a -q "^transfer_trained" ft.model &&
	tunekit transfer --model tlp.model --to-hw 3 --threshold 0.01 --epochs 2 \
		--out th.model >out 2>err &&
	grep -q "moses, 2 epochs" err &&
	tunekit transfer -q --model tlp.model --to-hw 3 --method scratch --epochs 2 \
		--target-fraction 0.5 --out sc.model >out &&
	grep -a -q "^transfer_method scratch$" sc.model &&
	tunekit transfer --model xgb.model --to-hw "$(sql "SELECT key FROM hardware WHERE id = 2")" \
		--method xgb-warm --epochs 7 --target-fraction 0.5 --out warm.model >out 2>err &&
	grep -q "xgb-warm, 7 rounds added" err &&
	rounds=$(sed -n "s/^rounds //p" xgb.model) &&
	grep -a -q "^rounds $((rounds + 7))$" warm.model &&
	grep -a -q "^feature knob$" warm.model &&
	tunekit transfer -q --model xgb.model --to-hw 2 --method none --format json --out n.model >out &&
	grep -q "\"set\": \"source\"" out
'

test_expect_success 'a transferred model guides a replayed tune on the target' '
	tunekit tune -q --db runs.db --replay "$TUNEKIT_DB" --replay-hardware 2 \
		--task conv2d:c=64,h=56,w=56,k=64,pad=1 --trials 8 --plan-size 8 --sa-chains 8 \
		--sa-iters 20 --model-file moses.model >recs &&
	test_rows recs 8
'

test_expect_success 'tune --model-file --adapt: online transfer refits a copy of the model' '
	tunekit tune -q --db online.db --replay "$TUNEKIT_DB" --replay-hardware 2 \
		--task conv2d:c=64,h=56,w=56,k=64,pad=1 --trials 16 --plan-size 8 --sa-chains 8 \
		--sa-iters 20 --model-file tlp.model --adapt moses >recs &&
	test_rows recs 16 &&
	sqlite3 online.db "SELECT params FROM run" | grep -q "^adapt=moses$" &&
	test "$(sqlite3 online.db "SELECT method FROM run")" = tune/tlp+sa+moses &&
	tunekit tune -q --db online.db --replay "$TUNEKIT_DB" --replay-hardware 2 \
		--task conv2d:c=64,h=56,w=56,k=64,pad=1 --trials 16 --plan-size 8 --feature knob \
		--model-file xgb.model --adapt xgb-warm >recs &&
	test_rows recs 16 &&
	test_expect_code 2 tunekit tune --db online.db --replay "$TUNEKIT_DB" --replay-hardware 2 \
		--task conv2d:c=64,h=56,w=56,k=64,pad=1 --trials 16 --model-file xgb.model \
		--adapt moses 2>err &&
	grep -q "adapt moses does not adapt a model of kind xgb" err &&
	test_expect_code 2 tunekit tune --db online.db --replay "$TUNEKIT_DB" --replay-hardware 2 \
		--task conv2d:c=64,h=56,w=56,k=64,pad=1 --trials 16 --adapt moses 2>err &&
	grep -q "give --model-file" err &&
	test_expect_code 2 tunekit tune --db online.db --replay "$TUNEKIT_DB" --replay-hardware 2 \
		--task conv2d:c=64,h=56,w=56,k=64,pad=1 --trials 16 --model-file tlp.model \
		--adapt scratch 2>err &&
	grep -q "adapt scratch does not adapt" err
'

test_expect_success 'a model file adapts by default (tlp: finetune); --adapt none keeps it as it is' '
	tunekit tune -q --db auto.db --replay "$TUNEKIT_DB" --replay-hardware 2 \
		--task conv2d:c=64,h=56,w=56,k=64,pad=1 --trials 16 --plan-size 8 --sa-chains 8 \
		--sa-iters 20 --model-file tlp.model >recs &&
	test_rows recs 16 &&
	sqlite3 auto.db "SELECT params FROM run" | grep -q "^adapt=auto$" &&
	test "$(sqlite3 auto.db "SELECT method FROM run")" = tune/tlp+sa+finetune &&
	tunekit tune -q --db auto.db --replay "$TUNEKIT_DB" --replay-hardware 2 \
		--task conv2d:c=64,h=56,w=56,k=64,pad=1 --trials 16 --plan-size 8 --sa-chains 8 \
		--sa-iters 20 --model-file tlp.model --adapt none >recs &&
	test "$(sqlite3 auto.db "SELECT method FROM run WHERE id = 2")" = tune/tlp+sa
'

test_expect_success 'the adaptive controller: bad names and searches exit 2' '
	test_expect_code 2 tunekit tune --db runs.db --replay "$TUNEKIT_DB" --replay-hardware 2 \
		--task conv2d:c=64,h=56,w=56,k=64,pad=1 --trials 8 --controller frob 2>err &&
	grep -q "unknown controller .frob. (none, moses)" err &&
	test_expect_code 2 tunekit tune --db runs.db --replay "$TUNEKIT_DB" --replay-hardware 2 \
		--task conv2d:c=64,h=56,w=56,k=64,pad=1 --trials 8 --controller moses \
		--search random 2>err &&
	grep -q "needs a model" err
'

test_expect_success 'a record stream restricts the target records' '
	sqlite3 -header -separator "	" "$TUNEKIT_DB" \
		"SELECT m.id AS id, t.key AS task, c.text AS config FROM measurement m
		 JOIN config c ON c.id = m.config_id JOIN task t ON t.id = c.task_id
		 WHERE m.hardware_id IN (1, 2) AND t.op = '\''conv2d'\'' ORDER BY m.id" >stream &&
	test_rows stream 96 &&
	tunekit transfer -q --model xgb.model --to-hw 2 --method xgb-warm --target-fraction 0.5 \
		--out s.model - <stream >out &&
	test "$(tsv_col out rows 3)" -eq 24 && test "$(tsv_col out rows 4)" -eq 24 &&
	test "$(tsv_col out tasks 4)" -eq 3 &&
	sed -n 1p stream >only1 &&
	sqlite3 -separator "	" "$TUNEKIT_DB" "SELECT m.id, t.key, c.text FROM measurement m
		 JOIN config c ON c.id = m.config_id JOIN task t ON t.id = c.task_id
		 WHERE m.hardware_id = 1 LIMIT 5" >>only1 &&
	test_expect_code 2 tunekit transfer --model xgb.model --to-hw 2 --method xgb-warm \
		--out bad.model - <only1 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "none of the 5 records given is of hardware 2" err &&
	! test -e bad.model
'

test_expect_success 'bad input: one line, exit 2, no model written' '
	for args in "--to-hw 2 --method moses --model xgb.model" \
		"--to-hw 2 --method finetune --model xgb.model" \
		"--to-hw 2 --method xgb-warm --model tlp.model" \
		"--to-hw 9 --model tlp.model" \
		"--to-hw kt:nothing --model tlp.model" \
		"--to-hw 2 --model tlp.model --budget 1" \
		"--to-hw 2 --model tlp.model --method frob" \
		"--to-hw 2 --model tlp.model --ratio 0" \
		"--to-hw 2 --model tlp.model --ratio 0.3 --threshold 0.5" \
		"--to-hw 2 --model tlp.model --method finetune --ratio 0.3" \
		"--to-hw 2 --model tlp.model --target-fraction 0" \
		"--to-hw 2" "--model tlp.model" \
		"--to-hw 2 --model /etc/passwd" \
		"--model tlp.model --measure 4" \
		"--model tlp.model --task dense:m=8,n=8,k=8" \
		"--model tlp.model --measure 4 --task dense:m=8,n=8,k=8 --to-hw 2" \
		"--model tlp.model --measure -1 --task dense:m=8,n=8,k=8" \
		"--model tlp.model --measure 4 --task dense:m=0,n=8,k=8"; do
		test_expect_code 2 tunekit transfer $args --out bad.model 2>err &&
		test $(wc -l <err) -eq 1 && ! test -e bad.model || { echo "$args"; cat err; exit 1; }
	done &&
	tunekit transfer --to-hw 2 --method moses --model xgb.model --out bad.model 2>err;
	grep -q "is a model of kind xgb; moses transfers models of kind tlp, mtl-tlp" err &&
	tunekit transfer --to-hw 9 --model tlp.model --out bad.model 2>err;
	grep -q "no hardware .9. with records in the store (hardware with records: 1, 2, 3)" err &&
	test_expect_code 1 tunekit transfer --to-hw 2 --model absent.model --out bad.model 2>err &&
	! test -e bad.model &&
	sed "s/^feature_version .*/feature_version 99/" tlp.model >v99.model &&
	test_expect_code 2 tunekit transfer --to-hw 2 --model v99.model --out bad.model 2>err &&
	grep -q "version 99" err &&
	sqlite3 "$TUNEKIT_DB" "DELETE FROM feature WHERE kind = '\''knob'\'' AND config_id IN
		(SELECT config_id FROM measurement WHERE hardware_id = 3)" &&
	test_expect_code 2 tunekit transfer --to-hw 3 --method xgb-warm --model xgb.model \
		--out bad.model 2>err &&
	grep -q "has knob features" err && ! test -e bad.model
'

# A payload damaged after the header crashed libxgboost's reader (SIGSEGV)
# before model files carried a checksum; its error printed a stack trace.
test_expect_success 'a damaged model file: one line, exit 2, never a crash' '
	for m in xgb tlp; do
		size=$(wc -c <$m.model) &&
		head -c $((size - 884)) $m.model >dam-$m.model &&
		head -c 884 /dev/zero | tr "\0" A >>dam-$m.model &&
		test "$(wc -c <dam-$m.model)" -eq $size || exit 1
	done &&
	grep -a -v "^payload_sha256 " xgb.model >old.model &&
	for args in "--method xgb-warm --model dam-xgb.model" "--model dam-tlp.model" \
		"--method xgb-warm --model old.model"; do
		test_expect_code 2 tunekit transfer --to-hw 2 $args --out bad.model 2>err &&
		test $(wc -l <err) -eq 1 && ! test -e bad.model || { echo "$args"; cat err; exit 1; }
	done &&
	grep -q "no payload_sha256 key" err &&
	test_expect_code 2 tunekit transfer --to-hw 2 --model dam-tlp.model --out bad.model 2>err &&
	grep -q "^tunekit transfer: dam-tlp.model: model file: the payload does not match its checksum" err &&
	test_expect_code 2 tunekit tune --task dense:m=8,n=8,k=8 --trials 4 \
		--model-file dam-xgb.model 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "does not match its checksum" err
'

test_expect_success '--measure: measure what the model picks on this CPU, then adapt on it' '
	n=$(sql "SELECT COUNT(*) FROM measurement") &&
	tunekit transfer --model tlp.model --measure 8 --task dense:m=16,n=16,k=32 --epochs 1 \
		--repeat 1 --min-repeat-ms 1 --out measured.model >out 2>err &&
	test "$(sql "SELECT COUNT(*) FROM measurement")" -eq $((n + 8)) &&
	hw=$(sql "SELECT hardware_id FROM measurement ORDER BY id DESC LIMIT 1") &&
	test "$(sql "SELECT COUNT(*) FROM measurement m JOIN feature f ON f.config_id = m.config_id
		AND f.kind = '\''tlp'\'' WHERE m.id > (SELECT MAX(id) - 8 FROM measurement)")" -eq 8 &&
	grep -q "measured 8 configurations (0 invalid) on hardware $hw" err &&
	grep -q "to hardware $hw (.*): 8 of its 8 records with tlp features to adapt on" err &&
	test "$(tsv_col out rows 3)" -eq 8 &&
	grep -a -q "^hardware_id $hw$" measured.model &&
	test "$(sql "SELECT method FROM run ORDER BY id DESC LIMIT 1")" = tune/tlp+sa
'

test_expect_success 'measure | extract-features - | transfer -: adapt to what was just measured' '
	tunekit measure -q --db m.db --task dense:m=16,n=16,k=16 --sample 10 >/dev/null &&
	tunekit extract-features -q --db m.db --kind knob &&
	tunekit train -q --db m.db --feature knob --out one.model >/dev/null &&
	tunekit measure -q --db m.db --target cpu:threads=2 --task dense:m=16,n=16,k=16 --sample 10 |
		tunekit extract-features -q --db m.db --kind knob - |
		tunekit transfer --db m.db --model one.model --to-hw 2 --method xgb-warm \
			--out two.model - >out 2>err &&
	test "$(tsv_col out rows 3)" -eq 10 && grep -q "threads=2" err &&
	grep -a -q "^hardware_id 2$" two.model
'

KT=${TUNEKIT_KT_DATA:-/work/shared/data/kernel_tuner}
if test -r "$KT/convolution_A100.json.gz"; then
	test_expect_success 'imported Kernel Tuner records: A100 models to the A4000' '
		tunekit import -q --db kt.db kernel-tuner "$KT/convolution_A100.json.gz" \
			"$KT/convolution_A4000.json.gz" &&
		tunekit extract-features -q --db kt.db --kind knob &&
		tunekit train -q --db kt.db --model xgb --feature knob --hardware 1 --out kx.model >/dev/null &&
		tunekit transfer --db kt.db --model kx.model --to-hw "kt:NVIDIA RTX A4000" \
			--method xgb-warm --budget 200 --out kw.model >out 2>err &&
		test "$(tsv_col out rows 3)" -eq 200 && test "$(tsv_col out rows 4)" -eq 4162 &&
		grep -q "knob features" err &&
		tunekit train -q --db kt.db --model tlp --feature knob --hardware 1 --rounds 2 \
			--out kt.model >/dev/null &&
		tunekit transfer --db kt.db --model kt.model --to-hw 2 --budget 200 --epochs 2 \
			--out km.model >out 2>err &&
		test "$(tsv_col out rows 4)" -eq 4162 && grep -q "moses, 2 epochs" err &&
		test_expect_code 2 tunekit transfer --db kt.db --model tlp.model --to-hw 2 \
			--out bad.model 2>err &&
		grep -q "no tlp features\|none of the .* has tlp features" err && ! test -e bad.model &&
		test_expect_code 2 tunekit transfer --db kt.db --model xgb.model --to-hw 2 \
			--method xgb-warm --out bad.model 2>err &&
		grep -q "takes 25 knob features; kt:convolution_kernel:4096x4096 on hardware 2 has 10" err
	'

	# Before, history matched by CPU operator name: "too little history
	# for transfer: 0 usable records".
	test_expect_success 'tune --transfer-from matches imported tasks by task and knob space' '
		tunekit tune -q --db ktruns.db --replay kt.db --replay-hardware 2 \
			--task kt:convolution_kernel:4096x4096 --feature knob --trials 32 \
			--transfer-from kt.db --transfer-hardware "kt:NVIDIA A100-PCIE-40GB" >recs 2>err &&
		test_rows recs 32 &&
		tunekit tune --db ktruns.db --replay kt.db --replay-hardware 2 \
			--task kt:convolution_kernel:4096x4096 --feature knob --trials 16 \
			--transfer-from kt.db --transfer-hardware 1 >recs 2>err &&
		grep -q "base model from 4362 history records" err &&
		test_expect_code 2 tunekit tune --db ktruns.db --replay kt.db --replay-hardware 2 \
			--task kt:convolution_kernel:4096x4096 --feature knob --trials 16 \
			--transfer-from "$TUNEKIT_DB" --transfer-hardware 1 2>err &&
		grep -q "too little history for transfer: .* operator, task or knob space" err
	'

	# Before, without --feature: "only --feature knob applies to it", and
	# train looked for itervar features.
	test_expect_success 'without --feature an imported task takes knob features' '
		tunekit train -q --db kt.db --model xgb --hardware 1 --out kd.model >/dev/null &&
		grep -a -q "^feature knob$" kd.model &&
		tunekit tune -q --db ktdef.db --replay kt.db --replay-hardware 2 \
			--task kt:convolution_kernel:4096x4096 --trials 16 \
			--transfer-from kt.db --transfer-hardware 1 >recs &&
		test_rows recs 16 &&
		test_expect_code 2 tunekit tune --db ktdef.db --replay kt.db --replay-hardware 2 \
			--task kt:convolution_kernel:4096x4096 --trials 16 --feature itervar 2>err &&
		grep -q "has no program: only --feature knob applies to it" err
	'

	test_expect_success 'the adaptive controller measures a share and lets the model answer the rest' '
		tunekit tune --db ctl.db --replay kt.db --replay-hardware 2 \
			--task kt:convolution_kernel:4096x4096 --feature knob --trials 200 \
			--controller moses --controller-share 0.4 --controller-top 5 >recs 2>err &&
		tunekit report --db ctl.db runs >runs &&
		m=$(tsv_col runs measured) && p=$(tsv_col runs predicted) &&
		test "$m" -gt 5 && test "$p" -gt 0 && test $((m - 5 + p)) -eq 200 &&
		test $((m - 5)) -ge 80 && test $((m - 5)) -le 96 &&
		test "$(tsv_col runs trials)" -eq "$m" && test_rows recs "$m" &&
		grep -q "$m measured and $p answered by the model" err &&
		test "$(sqlite3 ctl.db "SELECT value FROM run_log WHERE key =
			'\''trials:predicted:kt:convolution_kernel:4096x4096'\''")" = "$p.0" &&
		sqlite3 ctl.db "UPDATE run SET ended = NULL" &&
		test_expect_code 2 tunekit tune --db ctl.db --resume 2>err &&
		grep -q "adaptive controller: its predicted trials are not records" err
	'
else
	echo "# $KT: Kernel Tuner data not readable, skipping its tests"
fi

test_done
