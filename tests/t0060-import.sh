#!/bin/sh
# import: Kernel Tuner cache files and AutoTVM logs; counts, idempotence,
# exit statuses, reports on imported tasks.
. "$(dirname "$0")/lib.sh"

KT=${TUNEKIT_KT_DATA:-/work/shared/data/kernel_tuner}
if ! test -r "$KT/convolution_A100.json.gz"; then
	echo "# $KT: Kernel Tuner data not readable, skipping $test_name"
	exit 0
fi

# records and invalid records per hardware, as in $KT/README.md
counts() {
	sql "SELECT h.key, count(*), sum(NOT m.valid) FROM measurement m
	     JOIN hardware h ON h.id = m.hardware_id GROUP BY h.key ORDER BY h.key"
}
cat >want-counts <<EOF
kt:AMD Instinct MI250X|4362|0
kt:NVIDIA A100-PCIE-40GB|4362|161
kt:NVIDIA GeForce RTX 2080 Ti|17956|0
kt:NVIDIA GeForce RTX 3090|17956|0
kt:NVIDIA RTX A4000|4362|161
EOF

test_expect_success 'a file with an empty device_name needs --hardware' '
	test_expect_code 2 tunekit import kernel-tuner "$KT/convolution_MI250X.json.gz" 2>err &&
	grep -q "device_name is empty: give --hardware NAME" err &&
	test "$(sql "SELECT count(*) FROM measurement")" -eq 0
'

test_expect_success 'import the five Kernel Tuner files' '
	tunekit import kernel-tuner "$KT/gemm_RTX_2080_Ti.json.gz" >out &&
	echo "$KT/gemm_RTX_2080_Ti.json.gz: task kt:Xgemm:4096x4096 on kt:NVIDIA GeForce RTX 2080 Ti: 17956 records (0 invalid), space 82944 configurations, 0 duplicates" >want &&
	test_cmp want out &&
	tunekit import kernel-tuner "$KT/convolution_A100.json.gz" "$KT/convolution_A4000.json.gz" \
		"$KT/gemm_RTX_3090.json.gz" >out &&
	test $(wc -l <out) -eq 3 &&
	grep -q "convolution_A100.json.gz: task kt:convolution_kernel:4096x4096 on kt:NVIDIA A100-PCIE-40GB: 4362 records (161 invalid), space 10240 configurations, 0 duplicates" out &&
	tunekit import kernel-tuner --hardware "AMD Instinct MI250X" "$KT/convolution_MI250X.json.gz" >out &&
	grep -q "on kt:AMD Instinct MI250X: 4362 records (0 invalid)" out &&
	counts >got && test_cmp want-counts got
'

test_expect_success 'the store holds tasks with their spaces, hardware and runs' '
	sql "SELECT key, op, json_array_length(space, '\''$.knobs'\'') FROM task ORDER BY key" >got &&
	printf "%s\n" "kt:Xgemm:4096x4096|kernel-tuner|15" "kt:convolution_kernel:4096x4096|kernel-tuner|10" >want &&
	test_cmp want got &&
	test "$(sql "SELECT count(*) FROM hardware WHERE kind = '\''imported'\''")" -eq 5 &&
	test "$(sql "SELECT count(*) FROM run WHERE method = '\''import/kernel-tuner'\'' AND ended IS NOT NULL")" -eq 5 &&
	test "$(sql "SELECT count(*) FROM config")" -eq $((4362 + 17956)) &&
	test "$(sql "SELECT count(*) FROM measurement WHERE valid AND nrepeat = 32 AND median > 0")" -eq $((4201 * 2 + 4362 + 17956 * 2)) &&
	test "$(sql "SELECT count(*) FROM measurement WHERE error = 2")" -eq 12 &&
	test "$(sql "SELECT count(*) FROM measurement WHERE error = 4 AND message = '\''RuntimeFailedConfig'\''")" -eq 310
'

test_expect_success 'importing the files again adds nothing' '
	sql "SELECT count(*) FROM run" >runs-before &&
	for f in convolution_A100 convolution_A4000 gemm_RTX_2080_Ti gemm_RTX_3090; do
		tunekit import kernel-tuner "$KT/$f.json.gz" || exit 1
	done >out &&
	tunekit import kernel-tuner --hardware "AMD Instinct MI250X" "$KT/convolution_MI250X.json.gz" >>out &&
	test $(grep -c ": 0 new records (0 invalid)" out) -eq 5 &&
	grep -q "RTX 3090: 0 new records (0 invalid), space 82944 configurations, 17956 duplicates" out &&
	counts >got && test_cmp want-counts got &&
	sql "SELECT count(*) FROM run" >runs-after && test_cmp runs-before runs-after
'

test_expect_success 'report best lists the imported tasks' '
	tunekit report best >best &&
	test_rows best 5 &&
	test $(grep -c "	kt:convolution_kernel:4096x4096	" best) -eq 3 &&
	test $(grep -c "	kt:Xgemm:4096x4096	" best) -eq 2 &&
	grep "	kt:Xgemm:4096x4096	" best | cut -f3 | grep -q "^MWG=[0-9]*;NWG=[0-9]*;KWG=32;" &&
	awk -F"\t" "NR > 1 && (\$6 < 1000 || \$6 > 100000) { exit 1 }" best
'

test_expect_success 'a missing file exits 1, a file not in the format exits 2' '
	test_expect_code 1 tunekit import kernel-tuner absent.json.gz 2>err &&
	grep -q "absent.json.gz: No such file or directory" err &&
	echo "not json" >notjson.json &&
	test_expect_code 2 tunekit import kernel-tuner notjson.json 2>err &&
	grep -q "notjson.json:1:[0-9]*: not a Kernel Tuner cache file" err &&
	echo "[1, 2]" >array.json &&
	test_expect_code 2 tunekit import kernel-tuner array.json 2>err &&
	test_expect_code 1 tunekit import autotvm absent.log 2>err &&
	printf "# comment\nnot json\n" >not.log &&
	test_expect_code 2 tunekit import autotvm not.log 2>err &&
	grep -q "not.log:2: not an AutoTVM log" err &&
	test_expect_code 2 tunekit import autotvm "$KT/convolution_A100.json.gz" 2>err
'

test_expect_success 'one failing file does not stop the others; the status is its own' '
	rm -f "$TUNEKIT_DB" "$TUNEKIT_DB-wal" "$TUNEKIT_DB-shm" &&
	test_expect_code 1 tunekit import kernel-tuner absent.json "$KT/convolution_A100.json.gz" >out 2>err &&
	grep -q "4362 records (161 invalid)" out &&
	test "$(sql "SELECT count(*) FROM measurement")" -eq 4362
'

test_expect_success 'bad command lines exit 2' '
	test_expect_code 2 tunekit import 2>err &&
	test_expect_code 2 tunekit import frob x 2>err && grep -q "unknown format" err &&
	test_expect_code 2 tunekit import autotvm 2>err &&
	test_expect_code 2 tunekit import autotvm --hardware x a.log 2>err
'

test_expect_success 'AutoTVM logs: foreign templates and malformed lines are kept and counted' '
	cat >foreign.log <<-\EOF &&
	{"input": ["llvm -keys=cpu ", "conv2d_NCHWc.x86", [["TENSOR", [1, 3, 224, 224], "float32"], ["TENSOR", [64, 3, 7, 7], "float32"], [2, 2], [3, 3, 3, 3], [1, 1], "NCHW", "NCHW", "float32"], {}], "config": {"index": 172, "code_hash": null, "entity": [["tile_ic", "sp", [-1, 1]], ["tile_oc", "sp", [-1, 4]], ["tile_ow", "sp", [-1, 1]], ["unroll_kw", "ot", false]]}, "result": [[0.0045656413], 0, 0.5309267044067383, 1676344759.520081], "version": 0.2, "tvm_version": "0.10.0"}
	{"input": ["llvm -keys=cpu ", "conv2d_NCHWc.x86", [["TENSOR", [1, 3, 224, 224], "float32"], ["TENSOR", [64, 3, 7, 7], "float32"], [2, 2], [3, 3, 3, 3], [1, 1], "NCHW", "NCHW", "float32"], {}], "config": {"index": 47, "code_hash": null, "entity": [["tile_ic", "sp", [-1, 3]], ["tile_oc", "sp", [-1, 4]], ["tile_ow", "sp", [-1, 64]], ["unroll_kw", "ot", true]]}, "result": [[0.0035256785999999997], 0, 1.644679069519043, 1676344759.90915], "version": 0.2, "tvm_version": "0.10.0"}
	{"input": ["llvm -keys=cpu", "tunekit.dense", [["k", 16], ["m", 24], ["n", 40]], {}], "config": {"index": 0, "code_hash": null, "entity": [["tile_i", "sp", [-1, 2, 3]], ["tile_j", "sp", [-1, 4, 5]], ["tile_r", "sp", [-1, 4]], ["order", "ot", "1"], ["vec", "ot", "j"], ["unroll", "ot", 16], ["unroll_explicit", "ot", 0], ["pack_A", "ot", 1], ["pack_B", "ot", 0]]}, "result": [[0.00012, 0.00011, 0.00013], 0, 0.6, 1676344760.0], "version": 0.2, "tvm_version": "0.9.0"}
	{"input": [
	EOF
	tunekit import autotvm foreign.log >out &&
	grep -q "^foreign.log: 1 records, 0 duplicates, 3 foreign: 2 unknown template conv2d_NCHWc.x86, 1 malformed: " out &&
	test "$(sql "SELECT count(*) FROM foreign_record WHERE format = '\''autotvm'\''")" -eq 3 &&
	test "$(sql "SELECT h.key || '\'' '\'' || m.median FROM measurement m JOIN hardware h ON h.id = m.hardware_id JOIN config c ON c.id = m.config_id JOIN task t ON t.id = c.task_id WHERE t.key = '\''dense:k=16,m=24,n=40'\''")" = "autotvm:llvm -keys=cpu 0.00012" &&
	tunekit import autotvm foreign.log >out &&
	grep -q "^foreign.log: 0 new records, 4 duplicates, 0 foreign$" out &&
	test "$(sql "SELECT count(*) FROM foreign_record")" -eq 3
'

# A log line of an unknown version was imported as if it were 0.2.
test_expect_success 'an AutoTVM log of another version is refused with its line number' '
	sed -n 3p foreign.log >v99.log &&
	sed -n 3p foreign.log | sed "s/\"version\": 0\.2/\"version\": 9.9/" >>v99.log &&
	grep -q "\"version\": 9.9" v99.log &&
	before=$(sql "SELECT count(*) FROM measurement") &&
	test_expect_code 2 tunekit import autotvm v99.log 2>err &&
	test $(wc -l <err) -eq 1 &&
	grep -q "v99.log:2: AutoTVM log version 9.9; tunekit reads version 0.2" err &&
	test "$(sql "SELECT count(*) FROM measurement")" -eq "$before"
'

test_expect_success 'import reads - as standard input, once per command' '
	tunekit import autotvm - <foreign.log >out &&
	grep -q "^-: 0 new records, 4 duplicates, 0 foreign$" out &&
	rm -f "$TUNEKIT_DB" "$TUNEKIT_DB-wal" "$TUNEKIT_DB-shm" &&
	tunekit import kernel-tuner - <"$KT/convolution_A100.json.gz" >out &&
	grep -q "^-: task kt:convolution_kernel:4096x4096 on kt:NVIDIA A100-PCIE-40GB: 4362 records (161 invalid)" out &&
	gzip -dc "$KT/convolution_A100.json.gz" | tunekit import kernel-tuner - >out &&
	grep -q ": 0 new records (0 invalid), space 10240 configurations, 4362 duplicates" out &&
	test_expect_code 2 tunekit import autotvm - - <foreign.log 2>err &&
	grep -q "once per command" err
'

test_expect_success 'the man page documents the options of --help' '
	tunekit import --help >help &&
	sed "/^common options:/,\$d" help | grep -o -- "--[a-z][a-z-]*" | sort -u >opts &&
	test -s opts &&
	mandoc -Tascii "$TOP/man/tunekit-import.1" | col -b >page &&
	for o in $(cat opts); do grep -q -- "$o" page || { echo "undocumented: $o"; exit 1; }; done &&
	mandoc -Tlint -W warning "$TOP/man/tunekit-import.1"
'

test_done
