#!/bin/sh
# TLP and MTL-TLP on a slice of the offline dataset (tests/data/
# dataset-slice.db.gz: five tasks of resnet-18 and bert-base, 16 random
# configurations each measured on three targets): tlp features, training,
# the auxiliary heads, a TLP model file guiding a replayed tune, bad input.
. "$(dirname "$0")/lib.sh"

HOLD='dense:m=128,n=768,k=768'
CONV='conv2d:c=64,h=56,w=56,k=64,pad=1'

test_expect_success 'setup: the slice and its tlp features' '
	gunzip -c "$TEST_DIR/data/dataset-slice.db.gz" >"$TUNEKIT_DB" &&
	test "$(sql "SELECT COUNT(*) FROM measurement")" -eq 240 &&
	test "$(sql "SELECT COUNT(*) FROM hardware")" -eq 3 &&
	tunekit extract-features -q --kind tlp &&
	test "$(sql "SELECT COUNT(*) FROM feature WHERE kind = '\''tlp'\''")" -eq 80
'

test_expect_success 'tlp trains on the sequences; the same seed gives the same model' '
	tunekit train --model tlp --feature tlp --hardware 1 --holdout-task $HOLD --rounds 4 \
		--out t1.model >out 2>err &&
	test "$(tsv_col out set 3)" = holdout && test "$(tsv_col out rows 3)" -eq 16 &&
	grep -q "800 features" err &&
	grep -a -q "^kind tlp$" t1.model && grep -a -q "^sequence 32x25$" t1.model &&
	grep -a -q "^objective lambdarank$" t1.model && grep -a -q "^heads 1$" t1.model &&
	tunekit train -q --model tlp --feature tlp --hardware 1 --holdout-task $HOLD --rounds 4 \
		--out t2.model >out2 &&
	test_cmp out out2 &&
	tunekit train -q --model tlp --objective reg --feature tlp --hardware 1 --rounds 2 \
		--out reg.model >/dev/null && grep -a -q "^objective mse$" reg.model
'

# Before, the default was itervar: "none of the records has itervar features".
test_expect_success 'without --feature tlp trains on the tlp features it reads' '
	tunekit train -q --model tlp --hardware 1 --rounds 2 --out d.model >/dev/null &&
	grep -a -q "^feature tlp$" d.model &&
	test_expect_code 2 tunekit train --model tlp --feature itervar --hardware 1 2>err &&
	grep -q "none of the .* has itervar features" err
'

test_expect_success 'training shows its epochs on a terminal, nothing on a pipe' '
	script -qec "$TUNEKIT_BIN train --db $TUNEKIT_DB --model tlp --feature tlp --hardware 1 \
		--rounds 3 --out tty.model" /dev/null >tty.out &&
	grep -q "training \[#*\.*\] 3/3 epochs" tty.out &&
	tunekit train --model tlp --feature tlp --hardware 1 --rounds 3 --out pipe.model \
		>/dev/null 2>err && ! grep -q epochs err
'

test_expect_success 'mtl-tlp learns a head per hardware from a share of the target' '
	tunekit train --model mtl-tlp --feature tlp --hardware 1 --aux-hw 2,3 --target-fraction 0.5 \
		--holdout-task $HOLD --rounds 3 --out mtl.model >out 2>err &&
	grep -q "; 128 records of auxiliary hardware" err &&
	grep -q "training on 32 of the target" err &&
	test "$(tsv_col out rows 2)" -eq 32 && test "$(tsv_col out rows 3)" -eq 16 &&
	grep -a -q "^heads 3$" mtl.model &&
	tunekit train -q --model mtl-tlp --feature tlp --hardware 1 --aux-hw 2,3 \
		--holdout-network bert-base --rounds 2 --out mtlnet.model >out &&
	test "$(tsv_col out tasks 3)" -eq 2 && test "$(tsv_col out rows 3)" -eq 32 &&
	test_expect_code 2 tunekit train --model mtl-tlp --feature tlp --hardware 1 --aux-hw 2,2 2>err &&
	grep -q "given twice" err
'

test_expect_success 'mtl-tlp trains each epoch on a share of the auxiliary records' '
	tunekit train -q --model mtl-tlp --feature tlp --hardware 1 --aux-hw 2,3 \
		--holdout-task $HOLD --rounds 3 --out all.model >all.out &&
	tunekit train -q --model mtl-tlp --feature tlp --hardware 1 --aux-hw 2,3 --aux-fraction 0.25 \
		--holdout-task $HOLD --rounds 3 --out part.model >part.out &&
	grep -a -q "^aux_fraction 0.25$" part.model && ! grep -a -q "^aux_fraction" all.model &&
	! test_cmp all.out part.out >/dev/null &&
	tunekit train -q --model mtl-tlp --feature tlp --hardware 1 --aux-hw 2,3 --aux-fraction 1 \
		--holdout-task $HOLD --rounds 3 --out one.model >one.out &&
	test_cmp all.out one.out &&
	test_expect_code 2 tunekit train --model mtl-tlp --feature tlp --hardware 1 \
		--aux-fraction 0.5 2>err && test $(wc -l <err) -eq 1 && grep -q "needs --aux-hw" err &&
	for f in 0 -0.5 1.5 nan; do
		test_expect_code 2 tunekit train --model mtl-tlp --feature tlp --hardware 1 --aux-hw 2 \
			--aux-fraction $f 2>err && test $(wc -l <err) -eq 1 &&
		grep -q -e "--aux-fraction needs" err || return 1
	done
'

test_expect_success 'a TLP model file guides a replayed tune from the first plan' '
	tunekit tune -q --db runs.db --replay "$TUNEKIT_DB" --replay-hardware 1 --task $CONV \
		--trials 12 --plan-size 8 --sa-chains 16 --sa-iters 40 --model-file t1.model >recs &&
	test_rows recs 12 &&
	test "$(sqlite3 runs.db "SELECT method FROM run")" = "tune/tlp+sa+finetune" &&
	sqlite3 runs.db "SELECT params FROM run" | grep -q "^feature=tlp$"
'

test_expect_success 'bad model files and mismatched features exit 2 with one line' '
	test_expect_code 2 tunekit tune --db runs.db --replay "$TUNEKIT_DB" --task $CONV --trials 4 \
		--model-file t1.model --feature knob 2>err && test $(wc -l <err) -eq 1 &&
	size=$(wc -c <t1.model) &&
	head -c $((size - 100)) t1.model >short.model &&
	test_expect_code 2 tunekit tune --db runs.db --replay "$TUNEKIT_DB" --task $CONV --trials 4 \
		--model-file short.model 2>err && test $(wc -l <err) -eq 1 &&
	cp t1.model flip.model &&
	printf "\377\377\377\377" | dd of=flip.model bs=1 seek=$((size - 8)) conv=notrunc 2>/dev/null &&
	test_expect_code 2 tunekit tune --db runs.db --replay "$TUNEKIT_DB" --task $CONV --trials 4 \
		--model-file flip.model 2>err && test $(wc -l <err) -eq 1 && grep -q "flip.model" err &&
	sed "s/^kind tlp$/kind svm/" t1.model >svm.model &&
	test_expect_code 2 tunekit tune --db runs.db --replay "$TUNEKIT_DB" --task $CONV --trials 4 \
		--model-file svm.model 2>err && grep -q "does not have" err &&
	test_expect_code 2 tunekit train --model tlp --feature tlp --hardware 1 --holdout-task $HOLD \
		--aux-hw 2 2>err && grep -q "has one head" err
'

test_done
