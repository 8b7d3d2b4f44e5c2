#!/bin/sh
# the simulated VTA accelerator (--target vta-sim): measure, tune, report,
# export, specs; records say simulated and carry their failure's reason.
. "$(dirname "$0")/lib.sh"

VTA=vta-sim:preset=zcu102
CONV=conv2d:c=64,h=28,w=28,k=48,pad=1
# a short round of two oc threads (3 channel tiles): a hazard; the whole
# image at once: valid; the whole image of 2 threads: the input overflows
HAZARD='tile_b=1x1;tile_h=4x7;tile_w=2x14;tile_ci=2x2;tile_co=3x1;oc_nthread=2;h_nthread=1'
WHOLE='tile_b=1x1;tile_h=1x28;tile_w=1x28;tile_ci=1x4;tile_co=1x3;oc_nthread=1;h_nthread=1'
OVER='tile_b=1x1;tile_h=1x28;tile_w=1x28;tile_ci=1x4;tile_co=1x3;oc_nthread=1;h_nthread=2'

test_expect_success 'measure on vta-sim records valid and invalid configurations with reasons' '
	tunekit measure -q --target $VTA --task $CONV --sample 24 >out 2>err &&
	test_rows out 24 &&
	test "$(awk -F"\t" "NR > 1 && \$7 == 1" out | wc -l)" -ge 1 &&
	test "$(awk -F"\t" "NR > 1 && \$7 == 0" out | wc -l)" -ge 1 &&
	test "$(sql "SELECT COUNT(*) FROM measurement WHERE valid AND nrepeat = 1 AND median > 0")" \
		-eq "$(awk -F"\t" "NR > 1 && \$7 == 1" out | wc -l)" &&
	sql "SELECT message FROM measurement WHERE NOT valid" >msgs &&
	test "$(grep -cvE "^(inp-overflow|wgt-overflow|acc-overflow|uop-overflow|isa-limit|hazard|deadlock|timeout|wrong-answer|bounds): " msgs)" -eq 0
'

test_expect_success 'the hardware key and kind say simulated, and name the parameters' '
	test "$(sql "SELECT kind FROM hardware")" = simulated &&
	sql "SELECT key FROM hardware" >key &&
	grep -q "^vta-sim|simulated|zcu102 300MHz" key &&
	grep -q "|LOG_INP_BUFF_SIZE=16|LOG_WGT_BUFF_SIZE=19|LOG_ACC_BUFF_SIZE=18|" key &&
	test "$(sql "SELECT spec FROM hardware")" = "$VTA"
'

test_expect_success 'a hazard, a valid program and an overflow, each with its code' '
	tunekit measure -q --target $VTA --task $CONV --config "$HAZARD" --config "$WHOLE" \
		--config "$OVER" >out &&
	test "$(tsv_col out error 2)" = "wrong answer" &&
	test "$(tsv_col out valid 3)" = 1 &&
	test "$(tsv_col out error 4)" = "device compile error" &&
	sql "SELECT m.error || \" \" || substr(m.message, 1, 13) FROM measurement m JOIN config c
		ON c.id = m.config_id WHERE c.text IN (\"$HAZARD\", \"$OVER\") ORDER BY m.id DESC LIMIT 2" >codes &&
	printf "3 inp-overflow:\n5 hazard: GEMM \n" >want &&
	test_cmp want codes
'

test_expect_success 'the simulation is exact: the same configuration, the same latency' '
	tunekit measure -q --target $VTA --task $CONV --config "$WHOLE" >again &&
	test "$(tsv_col again latency_s)" = "$(tsv_col out latency_s 3)"
'

test_expect_success 'report best labels simulated records; export refuses them' '
	tunekit report best >best &&
	test "$(tsv_col best hw_kind)" = simulated &&
	test_expect_code 1 tunekit export --target $VTA --out k 2>err &&
	grep -q "simulated" err && test ! -e k &&
	test_expect_code 1 tunekit export --hardware 1 --out k 2>err &&
	grep -q "not C kernels" err && test ! -e k
'

# Without --feature the run keeps none: the kind follows the model and the
# target, knob on a simulated one (cm_feature, tests/unit/model.c).
test_expect_success 'tune on vta-sim: knob features, no confirmation, records stored' '
	tunekit tune -q --db t.db --target $VTA --task $CONV --trials 24 --plan-size 8 >out &&
	test_rows out 24 &&
	test "$(sqlite3 t.db "SELECT COUNT(*) FROM measurement")" -eq 24 &&
	sqlite3 t.db "SELECT params FROM run" | grep -qx "feature=" &&
	test "$(sqlite3 t.db "SELECT method FROM run")" = "tune/xgb+sa" &&
	test "$(sqlite3 t.db "SELECT kind FROM hardware")" = simulated
'

test_expect_success 'a resumed run keeps its target; another target is refused' '
	sqlite3 t.db "UPDATE run SET ended = NULL" &&
	test_expect_code 2 tunekit tune -q --db t.db --resume --target native 2>err &&
	grep -q "measured on other hardware" err && grep -q -- "--target $VTA" err &&
	tunekit tune -q --db t.db --resume >out &&
	test "$(sqlite3 t.db "SELECT COUNT(*) FROM run WHERE ended IS NOT NULL")" -eq 1 &&
	test "$(sqlite3 t.db "SELECT COUNT(DISTINCT hardware_id) FROM measurement")" -eq 1
'

test_expect_success 'dense and dense_relu run; another parameter set is other hardware' '
	tunekit measure -q --target vta-sim --task dense:m=4,n=64,k=128 --task dense_relu:m=4,n=64,k=128 \
		--sample 6 >out &&
	test "$(awk -F"\t" "NR > 1 && \$7 == 1" out | wc -l)" -ge 2 &&
	tunekit measure -q --target $VTA,LOG_UOP_BUFF_SIZE=15 --task dense:m=4,n=64,k=128 --sample 2 >out2 &&
	test "$(sql "SELECT COUNT(*) FROM hardware WHERE kind = \"simulated\"")" -eq 3
'

test_expect_success '--emit-sched prints the VTA program; --emit-c is refused' '
	tunekit measure --target $VTA --task $CONV --config "$WHOLE" --emit-sched >prog &&
	grep -q "^# threads 1, buffer entries used/size: inp 3600/4096" prog &&
	grep -q " load uop " prog && grep -q " gemm " prog && grep -q " store out " prog &&
	grep -q "finish" prog &&
	tunekit measure --target $VTA --task $CONV --config "$OVER" --emit-sched >prog2 &&
	grep -q "^# not compiled: inp-overflow" prog2 &&
	test_expect_code 2 tunekit measure --target $VTA --task $CONV --config "$WHOLE" --emit-c 2>err &&
	grep -q "emit-sched" err
'

test_expect_success 'bad vta-sim specs exit 2 with one line; unsupported operators exit 1' '
	before=$(sql "SELECT COUNT(*) FROM measurement") &&
	test_expect_code 2 tunekit measure --target vta-sim:preset=zcu104 --task $CONV --sample 1 2>err &&
	grep -q "unknown preset .zcu104." err && test $(wc -l <err) -eq 1 &&
	test_expect_code 2 tunekit measure --target vta-sim:LOG_FOO=1 --task $CONV --sample 1 2>err &&
	grep -q "unknown key .LOG_FOO." err && test $(wc -l <err) -eq 1 &&
	test_expect_code 2 tunekit measure --target vta-sim:LOG_BLOCK=7 --task $CONV --sample 1 2>err &&
	grep -q "from 2 to 6" err && test $(wc -l <err) -eq 1 &&
	test_expect_code 2 tunekit measure --target vta-sim:LOG_ACC_BUFF_SIZE=22 --task $CONV --sample 1 2>err &&
	grep -q "on-chip RAM" err &&
	test_expect_code 2 tunekit tune --target vta-sim:preset= --task $CONV --trials 1 2>err &&
	test_expect_code 2 tunekit measure --target $VTA --task $CONV --config "tile_f=1x4x16" 2>err &&
	test_expect_code 1 tunekit measure --target $VTA --task depthwise_conv2d:c=16,h=8,w=8 --sample 1 2>err &&
	grep -q "conv2d, dense and dense_relu" err &&
	test "$(sql "SELECT COUNT(*) FROM measurement")" -eq $before
'

test_expect_success 'help targets lists the kinds, presets and parameters' '
	tunekit help targets >out &&
	grep -q "^  vta-sim:preset=NAME" out &&
	grep -q "preset=zcu102" out &&
	grep -q "LOG_UOP_BUFF_SIZE" out
'

test_done
