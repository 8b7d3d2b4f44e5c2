#!/bin/sh
# MetaTune on a slice of the offline dataset (tests/data/dataset-slice.db.gz:
# five tasks, 16 random configurations each on three targets): graph
# features, train --model meta, pretrain-meta and its loss curve, a tune that
# fine-tunes the meta model on a small task, and bad input: too few
# configurations for the shots, a model of another feature version or
# super-graph, --meta with another kind of model.
. "$(dirname "$0")/lib.sh"

HOLD='dense:m=128,n=768,k=768'
SMALL='dense:m=16,n=16,k=16'
FAST='--epochs 3 --meta-steps 20'

test_expect_success 'setup: the slice and its graph features' '
	gunzip -c "$TEST_DIR/data/dataset-slice.db.gz" >"$TUNEKIT_DB" &&
	test "$(sql "SELECT COUNT(*) FROM measurement")" -eq 240 &&
	tunekit extract-features -q --kind graph &&
	test "$(sql "SELECT COUNT(*) FROM feature WHERE kind = '\''graph'\''")" -eq 80 &&
	test "$(sql "SELECT DISTINCT n FROM feature WHERE kind = '\''graph'\''")" -eq 2210
'

test_expect_success 'train --model meta fits the GCN on graph features' '
	tunekit train --model meta --feature graph --hardware 1 --holdout-task $HOLD --rounds 2 \
		--out t.model >out 2>err &&
	test "$(tsv_col out set 3)" = holdout && test "$(tsv_col out rows 3)" -eq 16 &&
	grep -q "2210 features" err &&
	grep -a -q "^kind meta$" t.model && grep -a -q "^maml none$" t.model &&
	grep -a -q "^supergraph [0-9a-f]\{16\}$" t.model &&
	test_expect_code 2 tunekit train --model meta --feature itervar 2>err &&
	grep -q "model meta does not take itervar features" err &&
	tunekit train -q --model meta --hardware 1 --rounds 2 --out d.model >/dev/null &&
	grep -a -q "^feature graph$" d.model
'

# Before, without --feature: "model meta does not take itervar features".
test_expect_success 'tune --model meta reads graph features without --feature' '
	tunekit tune -q --db def.db --replay "$TUNEKIT_DB" --replay-hardware 1 --task $HOLD \
		--model meta --trials 8 --batch 4 --plan-size 4 --sa-chains 8 --sa-iters 20 >recs &&
	test_rows recs 8 &&
	test_expect_code 2 tunekit tune --db def.db --replay "$TUNEKIT_DB" --replay-hardware 1 \
		--task $HOLD --model meta --feature itervar --trials 8 2>err &&
	grep -q "model meta does not take itervar features" err
'

test_expect_success 'pretrain-meta: pre-training, first-order MAML, the few-shot table' '
	tunekit pretrain-meta --hardware 1 --holdout-task $HOLD $FAST -o m.model >out 2>err &&
	test "$(tsv_col out set 2)" = train && test "$(tsv_col out tasks 2)" -eq 4 &&
	test "$(tsv_col out set 3)" = holdout && test "$(tsv_col out tasks 3)" -eq 1 &&
	test "$(tsv_col out shots 3)" -eq 4 && test -n "$(tsv_col out mse_after 3)" &&
	grep -q "64 records of 4 tasks (4 with the 8 records" err &&
	grep -q "3 epochs" err && grep -q "20 meta-steps" err &&
	grep -a -q "^kind meta$" m.model && grep -a -q "^maml first-order$" m.model &&
	grep -a -q "^feature graph$" m.model && grep -a -q "^ways 3$" m.model &&
	grep -a -q "^holdout_fewshot_mse_after " m.model &&
	test "$(sql "SELECT method FROM run ORDER BY id DESC LIMIT 1")" = pretrain-meta &&
	test "$(sql "SELECT kind FROM model ORDER BY id DESC LIMIT 1")" = meta &&
	tunekit pretrain-meta -q --hardware 1 --holdout-task $HOLD $FAST -o m2.model >out2 &&
	test_cmp out out2
'

test_expect_success 'the run log is the loss curve; report curve prints and plots it' '
	run=$(sql "SELECT id FROM run WHERE method = '\''pretrain-meta'\'' ORDER BY id LIMIT 1") &&
	test "$(sql "SELECT COUNT(*) FROM run_log WHERE run_id = $run AND key = '\''pretrain_loss'\''")" -eq 3 &&
	test "$(sql "SELECT COUNT(*) FROM run_log WHERE run_id = $run AND key LIKE '\''meta_loss%'\''")" -eq 40 &&
	tunekit report curve --run $run >curve &&
	test "$(head -1 curve)" = "$(printf "run\tphase\tstep\tloss\tloss_before")" &&
	test "$(grep -c "	pretrain	" curve)" -eq 3 && test "$(grep -c "	maml	" curve)" -eq 20 &&
	tunekit report curve --run $run --plot loss.svg && grep -q "first-order MAML" loss.svg &&
	test_expect_code 2 tunekit report curve --run $run --task $HOLD 2>err &&
	grep -q "loss curve" err
'

test_expect_success 'tune --meta fine-tunes a copy per task on every batch of a small task' '
	cp m.model before.model &&
	tunekit tune -q --db tune.db --task $SMALL --trials 8 --batch 4 --meta m.model \
		--other-model none --sa-chains 8 --sa-iters 20 --confirm 0 --repeat 1 --min-repeat-ms 1 >recs &&
	test_rows recs 8 &&
	test "$(sqlite3 tune.db "SELECT method FROM run")" = "tune/meta+sa" &&
	sqlite3 tune.db "SELECT params FROM run" | grep -q "^feature=graph$" &&
	test "$(sqlite3 tune.db "SELECT COUNT(*) FROM measurement WHERE valid")" -gt 0 &&
	test "$(sqlite3 tune.db "SELECT CAST(value AS INTEGER) FROM run_log WHERE key LIKE '\''fits:%'\''")" -eq 2 &&
	cmp m.model before.model
'

test_expect_success 'batch Bayesian optimisation (--search bo) with meta and with rfei' '
	tunekit tune -q --db bo.db --task $SMALL --trials 8 --batch 4 --meta m.model --search bo \
		--other-model none --sa-chains 8 --sa-iters 20 --confirm 0 --repeat 1 --min-repeat-ms 1 >recs &&
	test_rows recs 8 && test "$(cut -f5 recs | sort -u | wc -l)" -eq 9 &&
	tunekit tune -q --db bo.db --task $SMALL --trials 8 --batch 4 --plan-size 4 --model rfei \
		--search bo --bo-kappa 1 --sa-chains 8 --sa-iters 20 --confirm 0 --repeat 1 \
		--min-repeat-ms 1 >recs &&
	test_rows recs 8 &&
	test "$(sqlite3 bo.db "SELECT group_concat(method, '\'' '\'') FROM run")" = "tune/meta+bo tune/rfei+bo" &&
	test_expect_code 2 tunekit tune --db bo.db --task $SMALL --trials 4 --search bo 2>err &&
	grep -q "bo needs a model with uncertainty: --model rfei, meta" err
'

test_expect_success 'an operator the meta model was not meta-trained on is tuned by the other model' '
	grep -a -q "^operators batch_matmul,conv2d$" m.model &&
	tunekit tune --db other.db --task $SMALL --task conv2d:c=4,h=6,w=6,k=4,pad=1 --trials 8 \
		--batch 4 --plan-size 4 --meta m.model --sa-chains 8 --sa-iters 20 --confirm 0 \
		--repeat 1 --min-repeat-ms 1 >recs 2>err &&
	test_rows recs 8 &&
	grep -q "1 task of operators the model file was not trained on by xgb" err &&
	sqlite3 other.db "SELECT params FROM run" | grep -q "^other_model=auto$" &&
	test "$(sqlite3 other.db "SELECT COUNT(*) FROM run_log WHERE key LIKE '\''fits:dense%'\''")" -eq 1 &&
	test "$(sqlite3 other.db "SELECT CAST(value AS INTEGER) FROM run_log WHERE key LIKE '\''fits:conv2d%'\''")" -ge 1 &&
	tunekit tune --db other.db --task $SMALL --trials 4 --batch 4 --meta m.model --search bo \
		--sa-chains 8 --sa-iters 20 --confirm 0 --repeat 1 --min-repeat-ms 1 >/dev/null 2>err &&
	grep -q "1 task of operators the model file was not trained on by rfei" err &&
	nrun=$(sqlite3 other.db "SELECT COUNT(*) FROM run") &&
	test_expect_code 2 tunekit tune --db other.db --task $SMALL --trials 4 --meta m.model \
		--other-model bogus 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "bogus" err &&
	test_expect_code 2 tunekit tune --db other.db --task $SMALL --trials 4 --meta m.model \
		--other-model meta 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "not a model fitted from scratch" err &&
	test_expect_code 2 tunekit tune --db other.db --task $SMALL --trials 4 --meta m.model \
		--search bo --other-model xgb 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "other-model xgb has no deviation for bo" err &&
	test_expect_code 2 tunekit tune --db other.db --task $SMALL --trials 4 --other-model rfei 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "other-model applies with a meta model" err &&
	test "$(sqlite3 other.db "SELECT COUNT(*) FROM run")" -eq $nrun
'

test_expect_success 'bad input: too few configurations per task for the shots, one line, exit 2' '
	nmodel=$(sql "SELECT COUNT(*) FROM model") && nrun=$(sql "SELECT COUNT(*) FROM run") &&
	test_expect_code 2 tunekit pretrain-meta --hardware 1 --shots 13 $FAST -o no.model 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "too few configurations per task" err &&
	grep -q "the most any has is 16" err && test ! -e no.model &&
	test "$(sql "SELECT COUNT(*) FROM model")" -eq $nmodel &&
	test "$(sql "SELECT COUNT(*) FROM run")" -eq $nrun &&
	test_expect_code 2 tunekit pretrain-meta --hardware 1 --ways 6 $FAST 2>err &&
	grep -q "ways 6 needs 6" err &&
	test_expect_code 2 tunekit pretrain-meta --hardware 1 --holdout-task conv2d:c=3,h=9,w=9,k=4 2>err &&
	grep -q "no records" err &&
	test_expect_code 2 tunekit pretrain-meta --alpha 0 2>err && grep -q -- "--alpha" err &&
	test_expect_code 2 tunekit pretrain-meta --pretrain-share 0 2>err &&
	test_expect_code 2 tunekit pretrain-meta --heads 17 2>err &&
	test_expect_code 2 tunekit pretrain-meta --db empty.db 2>err && test $(wc -l <err) -eq 1
'

# The offset of the payload in a model file: after the "end" line.
payload() {
	echo $(( $(grep -a -b -m1 "^end$" "$1" | cut -d: -f1) + 4 ))
}

test_expect_success 'bad input: a meta model of another feature version or super-graph exits 2' '
	sed "s/^feature_version 1$/feature_version 7/" m.model >v7.model &&
	test_expect_code 2 tunekit tune --db bad.db --task $SMALL --trials 4 --meta v7.model 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "graph features version 7" err &&
	cp m.model sg.model && at=$(( $(payload sg.model) + 24 )) &&
	printf "\001" | dd of=sg.model bs=1 seek=$at conv=notrunc 2>/dev/null &&
	test_expect_code 2 tunekit tune --db bad.db --task $SMALL --trials 4 --meta sg.model 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "super-graph" err && grep -q "pretrain it again" err &&
	tunekit extract-features -q --kind itervar &&
	tunekit train -q --model xgb --hardware 1 --rounds 2 --out x.model >/dev/null &&
	test_expect_code 2 tunekit tune --db bad.db --task $SMALL --trials 4 --meta x.model 2>err &&
	grep -q "is a xgb model" err &&
	test_expect_code 2 tunekit tune --db bad.db --task $SMALL --trials 4 --meta m.model \
		--model-file t.model 2>err && grep -q "different files" err &&
	test ! -e bad.db || test "$(sqlite3 bad.db "SELECT COUNT(*) FROM run")" -eq 0
'

test_done
