#!/bin/sh
# measure and report on real kernels: records, streams, emitted code.
. "$(dirname "$0")/lib.sh"

DENSE='dense:m=24,n=40,k=16'
CONV='conv2d:c=4,h=10,w=10,k=8,pad=1'

test_expect_success 'measure records reference-checked latencies for dense and conv2d' '
	tunekit measure -q --task $DENSE --task $CONV --sample 4 --naive >out &&
	test_rows out 10 &&
	test "$(awk -F"\t" "NR > 1 && \$7 != 1" out | wc -l)" -eq 0 &&
	test "$(sql "SELECT COUNT(*) FROM measurement WHERE valid AND median > 0 AND nrepeat = 5")" -eq 10 &&
	test "$(sql "SELECT COUNT(DISTINCT task_id) FROM config")" -eq 2 &&
	test "$(sql "SELECT COUNT(*) FROM run WHERE ended IS NOT NULL AND method = '\''measure'\''")" -eq 1
'

test_expect_success 'the stream header names the documented columns' '
	tunekit measure -q --task $DENSE --naive >out &&
	head -1 out >hdr &&
	printf "id\trun\ttrial\ttask\tconfig\thw\tvalid\terror\tlatency_s\tgflops\n" >want &&
	test_cmp want hdr
'

test_expect_success 'canonical task keys: order of keys and defaults do not matter' '
	tunekit measure -q --task "dense:k=16,n=40,m=24" --naive >out &&
	test "$(tsv_col out task)" = "dense:k=16,m=24,n=40" &&
	tunekit measure -q --task "conv2d:k=8,pad=1,w=10,h=10,c=4,n=1,r=3" --naive >out2 &&
	test "$(tsv_col out2 task)" = "conv2d:c=4,h=10,k=8,n=1,pad=1,r=3,s=3,stride=1,w=10"
'

# The naive configurations are measured more than once above: a
# configuration counts with its median record (the (n/2+1)-th fastest).
test_expect_success 'report best picks the configuration with the fastest median record per task' '
	tunekit report best >best &&
	test_rows best 2 &&
	for t in $(awk -F"\t" "NR > 1 { print \$2 }" best); do
		min=$(sql "SELECT c.id, m.median FROM measurement m JOIN config c ON c.id = m.config_id JOIN task t ON t.id = c.task_id WHERE m.valid AND t.key = '\''$t'\'' ORDER BY c.id, m.median" |
			awk -F"|" "\$1 != c { if (n) print v[int(n / 2) + 1]; c = \$1; n = 0 } { v[++n] = \$2 }
				END { print v[int(n / 2) + 1] }" | sort -g | head -1) &&
		got=$(awk -F"\t" -v t="$t" "\$2 == t { print \$5 }" best) &&
		awk -v a="$min" -v b="$got" "BEGIN { d = (a - b) / a; exit !(d * d < 1e-14) }" || exit 1
	done &&
	awk -F"\t" "NR > 1 && \$7 == \"\" { exit 1 }" best
'

test_expect_success 'measure --config - reads TASK<TAB>CONFIG lines and record streams' '
	tunekit report best | cut -f2,3 | tail -n +2 >pairs &&
	tunekit measure -q --config - <pairs >out &&
	test_rows out 2 &&
	tunekit report best | tunekit measure -q --config - >out2 &&
	test_rows out2 2
'

test_expect_success 'measure output feeds cut in a pipeline' '
	tunekit measure -q --task $DENSE --sample 2 | cut -f 4,7 | tail -n +2 >col &&
	test $(wc -l <col) -eq 2 && grep -q "^dense:k=16,m=24,n=40	1$" col
'

test_expect_success 'the emitted C of a configuration compiles and has the kernel ABI' '
	cfg=$(tunekit report best | awk -F"\t" "\$2 ~ /^dense/ { print \$3 }") &&
	tunekit measure --task $DENSE --config "$cfg" --emit-c >k.c &&
	grep -q "void tk_kernel(float \*const \*bufs, float \*ws)" k.c &&
	cc -O2 -march=native -c -o k.o k.c &&
	tunekit measure --task $DENSE --config "$cfg" --emit-sched >s && grep -q "^split C i" s &&
	tunekit measure --task $DENSE --config "$cfg" --emit-ir >ir && grep -q "^for " ir
'

test_expect_success 'the primitive sequence is stored with each configuration' '
	test "$(sql "SELECT COUNT(*) FROM config WHERE sched LIKE '\''split %'\''")" -eq "$(sql "SELECT COUNT(*) FROM config")"
'

test_expect_success 'malformed tasks and configurations exit 2 and record nothing' '
	before=$(sql "SELECT COUNT(*) FROM measurement") &&
	test_expect_code 2 tunekit measure --task "dense:m=1,n=2" --naive 2>err && grep -q "missing parameter" err &&
	test_expect_code 2 tunekit measure --task "gemm:m=1" --naive 2>err && grep -q "unknown operator" err &&
	test_expect_code 2 tunekit measure --task "dense:m=0,n=2,k=2" --naive 2>err &&
	test_expect_code 2 tunekit measure --task $DENSE --config "tile_i=3x3x3" 2>err &&
	test_expect_code 2 tunekit measure --task $DENSE --config "nonsense" 2>err && grep -q "knob=value" err &&
	printf "%s\tbogus=1\n" $DENSE | test_expect_code 2 tunekit measure --config - 2>err &&
	tunekit report best >best &&
	head -n 2 best | awk -F"\t" -v OFS="\t" "NR == 1 { print } NR == 2 { NF = NF - 1; print }" >short &&
	test_expect_code 2 tunekit measure --config - <short 2>err &&
	grep -q "^tunekit measure: stdin:2: [0-9]* columns, fewer than the header.s [0-9]*$" err &&
	test_expect_code 2 tunekit measure --task $DENSE 2>err && grep -q "no configurations" err &&
	test $(wc -l <err) -eq 1 &&
	test "$(sql "SELECT COUNT(*) FROM measurement")" -eq "$before"
'

test_expect_success 'every operator measures valid on an awkward shape' '
	for t in "batch_matmul:b=2,m=5,n=7,k=3" "conv1d:c=3,w=13,k=2,stride=2,pad=1" \
		"conv1d_transpose:c=2,w=7,k=3,stride=2" "conv2d_transpose:c=2,h=5,w=3,k=3,stride=2,pad=1" \
		"depthwise_conv2d:c=3,h=7,w=5,pad=1" "conv2d_winograd:c=2,h=7,w=5,k=3" \
		"dense_relu:m=5,n=3,k=7"; do
		tunekit measure -q --task "$t" --sample 2 --naive --repeat 1 >o || exit 1
		test "$(awk -F"\t" "NR > 1 && \$7 != 1" o | wc -l)" -eq 0 || { cat o; exit 1; }
	done
'

test_expect_success 'report runs lists every run with its trials' '
	tunekit report runs >runs &&
	test $(tsv_count runs) -ge 5 &&
	test "$(tsv_col runs trials)" -eq 10 &&
	tunekit report --format json runs | grep -q "\"method\": \"measure\"" &&
	test -z "$(tsv_col runs search_s)"
'

test_expect_success 'report runs splits the time of a measure run' '
	tunekit measure -q --task $DENSE --task $CONV --sample 3 --repeat 1 >/dev/null &&
	tunekit report runs >runs &&
	n=$(tsv_count runs) && n=$((n + 1)) &&
	for col in compile_s run_s codegen_s ref_s store_s cache_hits; do
		test -n "$(tsv_col runs $col $n)" || exit 1
	done &&
	test -z "$(tsv_col runs search_s $n)" &&
	awk -v c="$(tsv_col runs compile_s $n)" -v r="$(tsv_col runs run_s $n)" \
		-v g="$(tsv_col runs codegen_s $n)" -v f="$(tsv_col runs ref_s $n)" \
		-v s="$(tsv_col runs store_s $n)" -v w="$(tsv_col runs seconds $n)" \
		"BEGIN { exit !(c > 0 && r > 0 && f >= 0 && f <= r && g > 0 && s > 0 &&
		                c + r + g + s <= w + 0.1) }" &&
	test "$(sql "SELECT sum(value) FROM run_log WHERE key LIKE '\''kernels:%'\''
	             AND run_id = (SELECT max(id) FROM run)")" = 6.0
'

test_expect_success 'the reference is cached per task and inputs, checked when read' '
	mkdir -m 700 rc &&
	tunekit measure -q --cache-dir rc --task $CONV --sample 2 --repeat 1 >o1 &&
	ls rc/ref/*.ref >refs && test $(wc -l <refs) -eq 1 &&
	cp "$(cat refs)" ref.1 &&
	tunekit measure -q --cache-dir rc --task $CONV --sample 2 --repeat 1 --seed 7 >o2 &&
	test $(ls rc/ref/*.ref | wc -l) -eq 2 &&
	tunekit measure -q --cache-dir rc --task $CONV --sample 2 --repeat 1 >o3 &&
	test $(ls rc/ref/*.ref | wc -l) -eq 2 &&
	cmp "$(cat refs)" ref.1 &&
	test "$(awk -F"\t" "FNR > 1 && \$7 != 1" o1 o2 o3 | wc -l)" -eq 0 &&
	# a damaged entry is not believed: it is computed and written again
	printf "\377" | dd of="$(cat refs)" bs=1 seek=100 conv=notrunc 2>/dev/null &&
	! cmp -s "$(cat refs)" ref.1 &&
	tunekit measure -q --cache-dir rc --task $CONV --sample 2 --repeat 1 >o4 &&
	test "$(awk -F"\t" "NR > 1 && \$7 != 1" o4 | wc -l)" -eq 0 &&
	cmp "$(cat refs)" ref.1 &&
	test "$(stat -c %a rc/ref)" = 700 &&
	tunekit cache --cache-dir rc >info && test "$(tsv_col info entries)" -eq "$(ls rc/*.so | wc -l)"
'

test_expect_success 'the adaptive compile limit: --build-adapt, TUNEKIT_BUILD_ADAPT' '
	test_must_fail tunekit measure -q --task $DENSE --naive --build-adapt -1 2>err &&
	grep -q "out of range" err &&
	(TUNEKIT_BUILD_ADAPT=x && export TUNEKIT_BUILD_ADAPT &&
	 test_must_fail tunekit measure -q --task $DENSE --naive 2>err &&
	 grep -q TUNEKIT_BUILD_ADAPT err &&
	 tunekit measure -q --task $DENSE --naive --build-adapt 3 >/dev/null) &&
	tunekit measure --help >help &&
	grep -q -- --build-adapt help
'

test_expect_success 'report runs splits the time of a tune run' '
	tunekit tune -q --task dense:m=16,n=16,k=16 --trials 24 --plan-size 8 --repeat 1 >/dev/null &&
	tunekit tune -q --task dense:m=16,n=16,k=16 --trials 8 --model none --search random \
		--seed 5 --repeat 1 >/dev/null &&
	tunekit tune -q --task dense:m=16,n=16,k=16 --trials 8 --model none --search random \
		--seed 5 --repeat 1 >/dev/null &&
	tunekit report runs >runs &&
	tail -n 3 runs >last3 &&
	for col in 5 6 7 8 9; do
		awk -F"\t" -v c=$col "\$c == \"\" { exit 1 }" last3 || exit 1
	done &&
	awk -F"\t" "\$5 + \$6 + \$7 + \$8 > \$4 + 0.1 || \$8 <= 0 { exit 1 }" last3 &&
	awk -F"\t" "NR < 3 && \$7 <= 0 { exit 1 }" last3 &&
	awk -F"\t" "NR == 1 && \$6 <= 0 { exit 1 } NR > 1 && \$6 != 0 { exit 1 }" last3 &&
	sed -n 3p last3 | awk -F"\t" "\$9 != 1 { exit 1 }"
'

# --clock cpu times the process's CPU time: a kernel that sleeps 20 ms a
# call takes 20 ms of wall time and next to no CPU time.
test_expect_success '--clock cpu counts CPU time, not time spent waiting' '
	fault="TK_FAULT=sleep TK_FAULT_MATCH=tile_i=8x1x1;tile_j=8x1x1" &&
	env $fault "$TUNEKIT_BIN" measure -q --db clock.db --target cpu:cc=faultcc \
		--task dense:m=8,n=8,k=4 --naive --number 2 --repeat 2 >wall &&
	env $fault "$TUNEKIT_BIN" measure -q --db clock.db --target cpu:cc=faultcc --clock cpu \
		--task dense:m=8,n=8,k=4 --naive --number 2 --repeat 2 >cpu &&
	test "$(tsv_col wall valid)" = 1 && test "$(tsv_col cpu valid)" = 1 &&
	awk -v w="$(tsv_col wall latency_s)" -v c="$(tsv_col cpu latency_s)" \
		"BEGIN { exit !(w >= 0.02 && c < 0.005) }" &&
	test_expect_code 2 tunekit measure -q --clock sundial --task dense:m=8,n=8,k=4 --naive 2>err &&
	grep -q "unknown clock" err
'

# Drawing was quadratic (a million samples took hours) and deaf to SIGTERM
# until it ended; a second SIGTERM exited 143. The shard keeps one of the
# configurations, so what follows the drawing is one measurement.
BIG=conv2d:c=64,h=56,w=56,k=64,pad=1
test_expect_success '--sample draws a million distinct configurations in seconds' '
	timeout -s KILL 120 "$TUNEKIT_BIN" measure -q --db big.db --task $BIG \
		--sample 1000000 --shard 1/1000000 --emit-sched >one &&
	test "$(grep -c "^# tile" one)" -eq 1
'

# Signalled once it is drawing (its memory has grown past 64 MB), not while it
# loads: a sanitized binary on a loaded machine may take more than a second to
# start. 10,000,000 draws take 5 s here (15-28 s under ASan), so the signal
# comes well before the drawing ends; a watchdog kills a command that ignores it.
test_expect_success 'SIGTERM while drawing: exit 130 at once' '
	"$TUNEKIT_BIN" measure -q --db big.db --task $BIG \
		--sample 10000000 --shard 1/1000000 --repeat 1 >/dev/null 2>err &
	pid=$!
	(sleep 60; kill -KILL $pid) >/dev/null 2>&1 &
	dog=$!
	for i in $(seq 200); do
		rss=$(awk "/^VmRSS/ { print \$2 }" /proc/$pid/status 2>/dev/null)
		test "${rss:-0}" -gt 65536 && break; sleep 0.1
	done
	kill -TERM $pid; wait $pid; rc=$?; kill $dog 2>/dev/null;
	test $rc -eq 130 && grep -q "interrupted while drawing" err ||
	{ echo "exit $rc, rss ${rss:-?} kB:"; cat err; false; }
'

test_expect_success 'a second SIGTERM exits 130 too' '
	fault="TK_FAULT=sleep TK_FAULT_MATCH=order=" &&
	env $fault "$TUNEKIT_BIN" measure -q --db term.db --target cpu:cc=faultcc \
		--task dense:m=8,n=8,k=4 --sample 50 --number 20 --repeat 5 >/dev/null 2>err &
	pid=$! && sleep 2 && kill -TERM $pid && sleep 0.2 && kill -TERM $pid; wait $pid; rc=$?;
	test $rc -eq 130
'

test_expect_success '--sample beyond the space: says so and measures the whole space' '
	tunekit measure --task dense:m=2,n=2,k=2 --sample 100000 --emit-sched >all 2>err &&
	grep -q "is not less than the 4320 configurations of the space: measuring all of them" err &&
	test "$(grep -c "^# tile" all)" -eq 4320 &&
	test_expect_code 2 tunekit measure --task dense:m=2,n=2,k=2 --sample 10000001 2>err &&
	grep -q "at most 10000000" err
'

test_done
