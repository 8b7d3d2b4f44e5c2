#!/bin/sh
# train: an XGBoost cost model on real records with knob features, its
# metrics, the model file and the model table, holdouts, the measure |
# extract-features | train pipeline, choosing the hardware, bad input.
. "$(dirname "$0")/lib.sh"

T1='dense:m=16,n=16,k=16'
T2='dense:m=24,n=8,k=32'
T3='dense:m=8,n=32,k=24'

test_expect_success 'setup: three small dense tasks with knob features' '
	tunekit measure -q --task $T1 --task $T2 --task $T3 --sample 12 --repeat 1 >m.tsv &&
	test_rows m.tsv 36 &&
	tunekit extract-features -q --kind knob &&
	test "$(sql "SELECT COUNT(*) FROM feature WHERE kind = '\''knob'\''")" -eq 36
'

test_expect_success 'train holds out a third of the tasks and prints the metrics' '
	tunekit train --feature knob --holdout 0.34 --out m.model >out 2>err &&
	printf "set\trows\ttasks\trmse\tmse\tmse_d\ttop1\ttop5\tspearman\n" >want &&
	head -1 out >hdr && test_cmp want hdr &&
	test_rows out 2 &&
	test "$(tsv_col out set 2)" = train && test "$(tsv_col out set 3)" = holdout &&
	test "$(tsv_col out tasks 2)" -eq 2 && test "$(tsv_col out tasks 3)" -eq 1 &&
	test $(( $(tsv_col out rows 2) + $(tsv_col out rows 3) )) -eq 36 &&
	test "$(tsv_col out rows 3)" -eq 12 &&
	awk -F"\t" "NR > 1 { for (i = 4; i <= 9; i++) if (\$i !~ /^-?[0-9]+\\.[0-9]+\$/) exit 1 }" out &&
	awk -F"\t" "NR > 1 && (\$7 <= 0 || \$7 > 1 || \$8 < \$7 || \$8 > 1) { exit 1 }" out &&
	grep -q "held out: dense:" err && grep -q "wrote m.model" err
'

test_expect_success 'the model file has the magic line and the meta keys' '
	test "$(head -1 m.model)" = "tunekit-model 1" &&
	for k in kind objective feature feature_version feature_length hardware hardware_id \
		n_train n_holdout rounds seed created holdout_rmse holdout_mse holdout_mse_d \
		holdout_top1 holdout_top5 holdout_spearman train_rmse train_mse train_mse_d \
		train_top1 train_top5 train_spearman payload; do
		grep -a -q "^$k " m.model || { echo "no $k"; exit 1; }
	done &&
	grep -a -q "^kind xgb$" m.model && grep -a -q "^objective rank:pairwise$" m.model &&
	grep -a -q "^feature knob$" m.model && grep -a -q "^feature_length 17$" m.model &&
	grep -a -q "^n_train 24$" m.model && grep -a -q "^n_holdout 12$" m.model &&
	grep -a -q "^end$" m.model &&
	hw=$(tsv_col m.tsv hw) && grep -a -q "^hardware_id $hw$" m.model &&
	grep -a -q -F -x "hardware $(sql "SELECT key FROM hardware WHERE id = $hw")" m.model &&
	awk -v a="$(grep -a "^holdout_top1 " m.model | cut -d" " -f2)" \
		-v b="$(tsv_col out top1 3)" "BEGIN { d = a - b; exit !(d * d < 1e-8) }"
'

test_expect_success 'the store keeps the model with the same meta and the file contents' '
	test "$(sql "SELECT COUNT(*) FROM model")" -eq 1 &&
	test "$(sql "SELECT kind FROM model")" = xgb &&
	test "$(sql "SELECT hardware_id FROM model")" = "$(tsv_col m.tsv hw)" &&
	sql "SELECT meta FROM model" >meta &&
	grep -q "^holdout_spearman=" meta && grep -q "^feature=knob$" meta &&
	grep -q "^n_train=24$" meta &&
	test "$(sql "SELECT hex(data) FROM model")" = "$(od -An -v -tx1 m.model | tr -d " \n" | tr a-f A-F)" &&
	tunekit report model >models &&
	test "$(tsv_col models n_train)" = 24 && test "$(tsv_col models feature)" = knob &&
	test -n "$(tsv_col models holdout_top5)"
'

test_expect_success 'the same seed holds out the same task and gives the same metrics' '
	tunekit train -q --feature knob --holdout 0.34 --out m1.model >again &&
	test_cmp out again &&
	tunekit train --feature knob --holdout 0.34 --seed 7 --out m1.model >/dev/null 2>err7 &&
	grep -q "held out: dense:" err7
'

test_expect_success '--holdout-task holds out the named task, in any spelling' '
	tunekit train --feature knob --holdout-task "dense:k=32,n=8,m=24" --out m3.model >out3 2>err3 &&
	test "$(tsv_col out3 rows 3)" -eq 12 && test "$(tsv_col out3 tasks 3)" -eq 1 &&
	grep -q "holding out 12 records of 1 task$" err3 &&
	tunekit train -q --feature knob --holdout-task $T1 --holdout-task $T3 --out m3.model >out3 &&
	test "$(tsv_col out3 rows 3)" -eq 24 && test "$(tsv_col out3 tasks 3)" -eq 2 &&
	grep -a -q "^n_holdout 24$" m3.model
'

test_expect_success 'reg objective; no holdout trains --rounds rounds (200 by default)' '
	tunekit train -q --feature knob --objective reg --rounds 7 --out r.model >outr &&
	test_rows outr 1 && test "$(tsv_col outr set)" = train &&
	grep -a -q "^objective reg:squarederror$" r.model && grep -a -q "^rounds 7$" r.model &&
	grep -a -q "^n_holdout 0$" r.model && ! grep -a -q "^holdout_" r.model &&
	tunekit train -q --feature knob --tree-method hist --out r.model >/dev/null &&
	grep -a -q "^rounds 200$" r.model && grep -a -q "^tree_method hist$" r.model &&
	tunekit train -q --feature knob --format json --out r.model >j &&
	grep -q "\"set\": \"train\", \"rows\": 36" j
'

test_expect_success 'rfei trains through the same pipeline; its file names it and reloads' '
	tunekit train -q --model rfei --feature knob --holdout 0.34 --out rf.model >outrf &&
	test "$(tsv_col outrf set 3)" = holdout && test "$(tsv_col outrf rows 3)" -eq 12 &&
	grep -a -q "^kind rfei$" rf.model && grep -a -q "^members 10$" rf.model &&
	grep -a -q "^objective reg:squarederror$" rf.model &&
	grep -a -q "^tunekit-rfei 1 10$" rf.model &&
	test "$(sql "SELECT kind FROM model ORDER BY id DESC LIMIT 1")" = rfei &&
	tunekit train -q --model rfei --feature knob --holdout 0.34 --out rf2.model >outrf2 &&
	test_cmp outrf outrf2
'

test_expect_success '--predictions writes what the metrics were computed from' '
	tunekit train --feature knob --holdout 0.34 --out p.model --predictions p.tsv >pout 2>err &&
	printf "id\ttask\tset\tlatency_s\tlabel\tprediction\tweight\n" >want &&
	head -1 p.tsv >hdr && test_cmp want hdr &&
	test_rows p.tsv 36 &&
	test "$(awk -F"\t" "\$3 == \"holdout\"" p.tsv | wc -l)" -eq 12 &&
	test "$(cut -f1 p.tsv | sort -u | wc -l)" -eq 37 &&
	# RMSE and top-1 of each set again from the file; top-1: the best
	# latency of a task over that of its highest-scored record, averaged
	awk -F"\t" "NR > 1 { k = \$3 SUBSEP \$2; se[\$3] += (\$6 - \$5) ^ 2; nr[\$3]++
		if (!(k in bp) || \$6 > bp[k]) { bp[k] = \$6; pl[k] = \$4 }
		if (\$4 > 0 && (!(k in best) || \$4 < best[k])) best[k] = \$4 }
		END { for (k in bp) { split(k, a, SUBSEP); s[a[1]] += pl[k] > 0 ? best[k] / pl[k] : 0; n[a[1]]++ }
		      printf \"%.4f %.4f %.4f %.4f\\n\", sqrt(se[\"train\"] / nr[\"train\"]),
		             sqrt(se[\"holdout\"] / nr[\"holdout\"]), s[\"train\"] / n[\"train\"],
		             s[\"holdout\"] / n[\"holdout\"] }" p.tsv >got &&
	echo "$(tsv_col pout rmse 2) $(tsv_col pout rmse 3) $(tsv_col pout top1 2) $(tsv_col pout top1 3)" >want &&
	test_cmp want got
'

test_expect_success 'several held-out networks: a row of each alone, weighted by its occurrences' '
	printf "weight\ttask\n3\t%s\n" "$T1" >neta.tsv &&
	printf "weight\ttask\n1\t%s\n1\t%s\n" "$T2" "$T1" >netb.tsv &&
	tunekit train --feature knob --holdout-network ./neta.tsv --holdout-network ./netb.tsv \
		--out n.model --predictions n.tsv >nout 2>err &&
	test_rows nout 4 &&
	test "$(tsv_col nout set 3)" = holdout && test "$(tsv_col nout tasks 3)" -eq 2 &&
	test "$(tsv_col nout set 4)" = "holdout:neta.tsv" && test "$(tsv_col nout tasks 4)" -eq 1 &&
	test "$(tsv_col nout rows 4)" -eq 12 &&
	test "$(tsv_col nout set 5)" = "holdout:netb.tsv" && test "$(tsv_col nout tasks 5)" -eq 2 &&
	test "$(tsv_col nout rows 5)" -eq 24 &&
	# netb weighs T1 1 (the whole holdout 4): its top-1 from the predictions
	awk -F"\t" -v t1="dense:k=16,m=16,n=16" "NR > 1 && \$3 == \"holdout\" { k = \$2
		if (!(k in bp) || \$6 > bp[k]) { bp[k] = \$6; pl[k] = \$4 }
		if (\$4 > 0 && (!(k in best) || \$4 < best[k])) best[k] = \$4 }
		END { for (k in bp) { x = pl[k] > 0 ? best[k] / pl[k] : 0; s += x; if (k == t1) a = x }
		      printf \"%.4f %.4f\\n\", a, s / 2 }" n.tsv >got &&
	echo "$(tsv_col nout top1 4) $(tsv_col nout top1 5)" >want &&
	test_cmp want got &&
	tunekit train -q --feature knob --holdout-network ./neta.tsv --out n1.model >nout1 &&
	test_rows nout1 2
'

test_expect_success '--per-op: a holdout row per operator, weighted as the holdout' '
	B=batch_matmul:b=2,m=8,n=8,k=8 &&
	tunekit measure -q --db ops.db --task $T1 --task $T2 --task $B --sample 8 --repeat 1 >/dev/null &&
	tunekit extract-features -q --db ops.db --kind knob &&
	tunekit train -q --db ops.db --feature knob --holdout-task $T1 --holdout-task $B --per-op \
		--out o.model >oout &&
	test_rows oout 4 &&
	test "$(tsv_col oout set 4)" = holdout-op:dense && test "$(tsv_col oout tasks 4)" -eq 1 &&
	test "$(tsv_col oout set 5)" = holdout-op:batch_matmul &&
	test "$(tsv_col oout tasks 5)" -eq 1 && test "$(tsv_col oout rows 5)" -eq 8 &&
	# the holdout is the two operators at weight 1 each
	awk -v h="$(tsv_col oout top1 3)" -v a="$(tsv_col oout top1 4)" -v b="$(tsv_col oout top1 5)" \
		"BEGIN { d = (a + b) / 2 - h; exit !(d < 0.0002 && d > -0.0002) }" &&
	tunekit train -q --db ops.db --feature knob --holdout-task $T1 --holdout-task $B \
		--out o.model >oout2 &&
	test_rows oout2 2
'

test_expect_success '--select active:F trains on that share, the same for a seed; bad specs are exit 2' '
	tunekit train --feature knob --holdout-task $T3 --select active:0.25 --seed 3 \
		--out s.model --predictions s1.tsv >sout 2>err &&
	grep -q "training on 6 of the target.s records (--select active:0.25)" err &&
	test "$(tsv_col sout rows 2)" -eq 6 && test "$(tsv_col sout rows 3)" -eq 12 &&
	tunekit train -q --feature knob --holdout-task $T3 --select active:0.25 --seed 3 \
		--out s.model --predictions s2.tsv >/dev/null &&
	cut -f1,3 s1.tsv >a && cut -f1,3 s2.tsv >b && test_cmp a b &&
	test_expect_code 2 tunekit train --feature knob --select active:0 --out s.model 2>err &&
	grep -q "active:F" err &&
	test_expect_code 2 tunekit train --feature knob --select random:0.5 --out s.model &&
	test_expect_code 2 tunekit train --feature knob --select active:0.5 --target-fraction 0.5 \
		--out s.model 2>err &&
	grep -q "one of --select and --target-fraction" err
'

test_expect_success '--valid-task stops early on a task, then trains on it with the rounds it chose' '
	tunekit train --feature knob --holdout-task $T3 --valid-task $T2 --out v.model \
		--predictions v.tsv >vout 2>err &&
	test_rows vout 3 &&
	test "$(tsv_col vout set 2)" = train && test "$(tsv_col vout rows 2)" -eq 24 &&
	test "$(tsv_col vout set 3)" = valid && test "$(tsv_col vout rows 3)" -eq 12 &&
	test "$(tsv_col vout tasks 3)" -eq 1 &&
	test "$(tsv_col vout set 4)" = holdout && test "$(tsv_col vout rows 4)" -eq 12 &&
	grep -q "stopping early on 12 records of 1 validation task" err &&
	grep -q "(chosen on the validation tasks)" err &&
	grep -a -q "^n_valid 12$" v.model && grep -a -q "^n_train 24$" v.model &&
	grep -a -q "^valid_top1 " v.model &&
	r=$(grep -a "^rounds " v.model | cut -d" " -f2) && test "$r" -ge 1 &&
	tunekit report model >vmodels && last=$(wc -l <vmodels) &&
	test "$(tsv_col vmodels rounds $last)" = "$r" &&
	test "$(tsv_col vmodels n_valid $last)" = 12 &&
	test "$(tsv_col vmodels valid_top1 $last)" = "$(grep -a "^valid_top1 " v.model | cut -d" " -f2)" &&
	# the model is the fit of the training and validation tasks at r rounds
	awk -F"\t" -v a=dense:k=16,m=16,n=16 -v b=dense:k=32,m=24,n=8 "NR == 1 || \$4 == a || \$4 == b" m.tsv |
		tunekit train -q --feature knob --rounds "$r" --out w.model --predictions w.tsv - >/dev/null &&
	awk -F"\t" "\$3 == \"train\" { print \$1, \$6 }" v.tsv | sort >vp &&
	awk -F"\t" "\$3 == \"train\" { print \$1, \$6 }" w.tsv | sort >wp &&
	test "$(wc -l <vp)" -eq 24 && test_cmp vp wp &&
	tunekit train -q --model tlp --feature knob --rounds 4 --holdout-task $T3 --valid-task $T2 \
		--out tv.model >tvout &&
	test "$(tsv_col tvout set 3)" = valid &&
	r=$(grep -a "^rounds " tv.model | cut -d" " -f2) && test "$r" -ge 1 && test "$r" -le 4 &&
	test_expect_code 2 tunekit train --feature knob --valid-task dense:m=1,n=1,k=1 2>err &&
	grep -q "validation task dense:m=1,n=1,k=1: no records" err &&
	test_expect_code 2 tunekit train --feature knob --valid-task $T1 --valid-network ./neta.tsv 2>err &&
	grep -q "give one of --valid-task and --valid-network" err &&
	test_expect_code 2 tunekit train --feature knob --holdout-task $T1 --valid-task $T2 \
		--valid-task $T3 2>err &&
	grep -q "every task is held out or validates" err
'

test_expect_success '--predictions to a file that cannot be written: exit 1, no model saved' '
	n=$(sql "SELECT COUNT(*) FROM model") &&
	test_expect_code 1 tunekit train -q --feature knob --holdout 0.34 --out p2.model \
		--predictions no-such-dir/p.tsv >pout 2>err &&
	grep -q "cannot write no-such-dir/p.tsv" err && test "$(wc -l <err)" -eq 1 &&
	test ! -e p2.model && test "$(sql "SELECT COUNT(*) FROM model")" -eq "$n"
'

test_expect_success 'measure | extract-features | train trains on the records of the stream' '
	before=$(sql "SELECT COUNT(*) FROM model") &&
	tunekit measure -q --task dense:m=8,n=8,k=8 --sample 6 --repeat 1 |
		tunekit extract-features -q --kind knob - |
		tunekit train -q --feature knob --out m2.model - >outp &&
	test "$(tsv_col outp rows)" -eq 6 && test "$(tsv_col outp tasks)" -eq 1 &&
	grep -a -q "^n_train 6$" m2.model &&
	test "$(sql "SELECT COUNT(*) FROM model")" -eq $((before + 1))
'

test_expect_success 'one task: --holdout holds out records at random instead' '
	tail -n +2 m.tsv | awk -F"\t" -v t="dense:k=16,m=16,n=16" "\$4 == t" >one.tsv &&
	{ head -1 m.tsv; cat one.tsv; } | tunekit train --feature knob --holdout 0.25 --out o.model - >outo 2>erro &&
	grep -q "one task: holding out 3 of its 12 records at random instead" erro &&
	test "$(tsv_col outo rows 3)" -eq 3
'

test_expect_success 'records without features: exit 2 with a hint to run extract-features' '
	tunekit measure -q --task dense:m=8,n=16,k=8 --sample 3 --repeat 1 >nf.tsv &&
	test_expect_code 2 tunekit train --feature knob --out x.model - <nf.tsv 2>err &&
	grep -q "3 of 3 records have no knob features" err && grep -q "extract-features --kind knob" err &&
	test_expect_code 2 tunekit train --feature curve --out x.model 2>err &&
	grep -q "extract-features --kind curve" err &&
	test_expect_code 2 tunekit train --db empty.db --out x.model 2>err &&
	grep -q "no records" err &&
	test ! -e x.model
'

test_expect_success 'the hardware with the most records is chosen, and said so' '
	sql "INSERT INTO hardware(key, kind) VALUES ('\''other|cpu'\'', '\''cpu'\'')" &&
	other=$(sql "SELECT id FROM hardware WHERE key = '\''other|cpu'\''") &&
	sql "INSERT INTO measurement(config_id, hardware_id, valid, error, median, at)
	     SELECT config_id, $other, valid, error, median * 2, at FROM measurement
	     WHERE id IN (SELECT id FROM measurement ORDER BY id LIMIT 5)" &&
	tunekit train --feature knob --out h.model >/dev/null 2>errh &&
	grep -q "2 hardware targets have records with knob features; training on hardware $(tsv_col m.tsv hw)" errh &&
	tunekit train -q --feature knob --hardware $other --out h.model >outh 2>errh &&
	test ! -s errh && test "$(tsv_col outh rows)" -eq 5 &&
	grep -a -q "^hardware other|cpu$" h.model &&
	test_expect_code 2 tunekit train --feature knob --hardware 999 --out h.model 2>err &&
	grep -q "hardware 999 has no records" err
'

test_expect_success 'bad options exit 2 and add no model' '
	before=$(sql "SELECT COUNT(*) FROM model") &&
	test_expect_code 2 tunekit train --model gbdt 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "unknown model .gbdt. (xgb, rfei, tlp, mtl-tlp, meta, ml2, none)$" err &&
	test_expect_code 2 tunekit train --model none 2>err &&
	grep -q "model none has nothing to train (xgb, rfei, tlp, mtl-tlp, meta, ml2)" err &&
	test_expect_code 2 tunekit train --objective lambdarank 2>err && grep -q "unknown objective" err &&
	test_expect_code 2 tunekit train --feature pixels 2>err && grep -q "unknown feature kind" err &&
	test_expect_code 2 tunekit train --feature knob --holdout 1.5 2>err &&
	test_expect_code 2 tunekit train --feature knob --holdout x 2>err &&
	test_expect_code 2 tunekit train --feature knob --holdout 0.3 --holdout-task $T1 2>err &&
	grep -q "give one of" err &&
	test_expect_code 2 tunekit train --feature knob --holdout-network no-such-net 2>err &&
	test_expect_code 2 tunekit train --feature knob --aux-hw 2 2>err && grep -q "has one head" err &&
	test_expect_code 2 tunekit train --model mtl-tlp --feature knob --aux-hw x 2>err &&
	grep -q "not a hardware id" err &&
	test_expect_code 2 tunekit train --model mtl-tlp --feature knob --aux-hw 1 2>err &&
	grep -q "is the target" err &&
	test_expect_code 2 tunekit train --model mtl-tlp --feature knob --aux-hw 99 2>err &&
	grep -q "auxiliary hardware 99" err &&
	test_expect_code 2 tunekit train --model mtl-tlp --feature knob --target-fraction 1.5 2>err &&
	test_expect_code 2 tunekit train --feature knob --holdout-task dense:m=1,n=1,k=1 2>err &&
	grep -q "no records of that task" err &&
	test_expect_code 2 tunekit train --feature knob --holdout-task $T1 --holdout-task $T2 \
		--holdout-task $T3 --holdout-task dense:m=8,n=8,k=8 2>err &&
	grep -q "nothing left to train on" err &&
	test_expect_code 2 tunekit train --feature knob --rounds -1 2>err &&
	test_expect_code 2 tunekit train --feature knob --tree-method gpu_hist 2>err &&
	test_expect_code 2 tunekit train --feature knob --format yaml 2>err &&
	test_expect_code 2 tunekit train --feature knob extra 2>err && grep -q "unexpected argument" err &&
	printf "dense:m=8,n=8,k=8\ttile_i=1x1x8\n" | test_expect_code 2 tunekit train --feature knob - 2>err &&
	grep -q "no id column" err &&
	: | test_expect_code 2 tunekit train --feature knob - 2>err && grep -q "no records" err &&
	printf "id\ttask\n999999\tx\n" | test_expect_code 2 tunekit train --feature knob - 2>err &&
	grep -q "not in the store" err &&
	test "$(sql "SELECT COUNT(*) FROM model")" -eq "$before"
'

test_expect_success 'tlp trains on knob features as one position; mtl-tlp adds a head per auxiliary hardware' '
	tunekit train -q --model tlp --feature knob --rounds 3 --holdout-task $T2 --out tlp.model >out &&
	test "$(tsv_col out set 3)" = holdout &&
	grep -a -q "^kind tlp$" tlp.model && grep -a -q "^heads 1$" tlp.model &&
	grep -a -q "^rounds 3$" tlp.model && # never stopped on the holdout
	tunekit measure -q --target cpu:isa=sse2 --task $T1 --task $T2 --sample 8 --repeat 1 >/dev/null &&
	tunekit extract-features -q --kind knob &&
	hw2=$(sql "SELECT MAX(id) FROM hardware") && test "$hw2" -gt 1 &&
	tunekit train -q --model mtl-tlp --feature knob --rounds 3 --hardware 1 --aux-hw $hw2 \
		--holdout-task $T2 --out mtl.model >full &&
	tunekit train --model mtl-tlp --feature knob --rounds 3 --hardware 1 --aux-hw $hw2 \
		--holdout-task $T2 --target-fraction 0.5 --out mtl.model >out 2>err &&
	grep -q "; 8 records of auxiliary hardware" err &&
	half=$(( ($(tsv_col full rows 2) + 1) / 2 )) &&
	grep -q "training on $half of the target" err &&
	test "$(tsv_col out rows 2)" -eq $half &&
	test "$(tsv_col out rows 3)" -eq "$(tsv_col full rows 3)" &&
	grep -a -q "^kind mtl-tlp$" mtl.model && grep -a -q "^heads 2$" mtl.model
'

test_expect_success 'a model file that cannot be written exits 1 and adds no model' '
	before=$(sql "SELECT COUNT(*) FROM model") &&
	test_expect_code 1 tunekit train -q --feature knob --out no/such/dir/m.model 2>err &&
	grep -q "no/such/dir" err &&
	test "$(sql "SELECT COUNT(*) FROM model")" -eq "$before"
'

# --out /dev/null once replaced the device with a regular file (the model
# was written to a temporary file and renamed over it).
test_expect_success '--out to a FIFO or a link writes into it and leaves it as it was' '
	mkfifo fifo.model && { timeout 60 cat fifo.model >got.model & } &&
	tunekit train -q --feature knob --rounds 2 --out fifo.model >/dev/null && wait &&
	test -p fifo.model && head -n 1 got.model | grep -qx "tunekit-model 1" &&
	: >real.model && ln -s real.model link.model &&
	tunekit train -q --feature knob --rounds 2 --out link.model >/dev/null &&
	test -L link.model && head -n 1 real.model | grep -qx "tunekit-model 1" &&
	mkdir dir.model &&
	test_expect_code 1 tunekit train -q --feature knob --rounds 2 --out dir.model 2>err &&
	test $(wc -l <err) -eq 1 && grep -q "dir.model" err && test -d dir.model
'

test_expect_success 'man page of train documents its options and lints clean' '
	tunekit train --help >help &&
	sed "/^common options:/,\$d" help | grep -o -- "--[a-z][a-z-]*" | sort -u >opts &&
	test -s opts &&
	mandoc -Tascii "$TOP/man/tunekit-train.1" | col -b >page &&
	for o in $(cat opts); do grep -q -- "$o" page || { echo "undocumented: $o"; exit 1; }; done &&
	mandoc -Tlint -W warning "$TOP/man/tunekit-train.1"
'

# --rounds 0 trained the default 200 rounds.
test_expect_success '--rounds 0 is exit 2, not the default' '
	test_expect_code 2 tunekit train --feature knob --rounds 0 --out zero.model 2>err &&
	test $(wc -l <err) -eq 1 && grep -q -- "--rounds needs at least 1" err && ! test -e zero.model &&
	test_expect_code 2 tunekit train --feature knob --rounds -3 --out zero.model 2>err &&
	! test -e zero.model
'

test_done
