#!/bin/sh
# Kernels that crash, hang, compute a wrong answer or fail to compile become
# invalid records with the right error code, and the run goes on.
. "$(dirname "$0")/lib.sh"

TASK='dense:m=16,n=16,k=8'
T=cpu:cc=faultcc

measure_with_fault() {
	# $1 fault; the naive config is faulty, the sampled ones are not
	TUNEKIT_CACHE=$TRASH/cache-$1 TK_FAULT=$1 TK_FAULT_MATCH="tile_i=16x1x1;tile_j=16x1x1;tile_r=8x1;order=0" \
		tunekit measure -q --target $T --task $TASK --naive --sample 3 --timeout 1 --build-timeout 5 --repeat 1
}

test_expect_success 'a crashing kernel is a runtime crash, the others are valid' '
	measure_with_fault crash >out &&
	test "$(tsv_col out error 2)" = "runtime crash" &&
	test "$(awk -F"\t" "NR > 2 && \$7 == 1" out | wc -l)" -eq 3 &&
	sql "SELECT message FROM measurement WHERE error = 4" | grep -q SIGSEGV
'

test_expect_success 'a hanging kernel is a run timeout' '
	measure_with_fault hang >out &&
	test "$(tsv_col out error 2)" = "run timeout" &&
	test "$(awk -F"\t" "NR > 2 && \$7 == 1" out | wc -l)" -eq 3
'

test_expect_success 'a kernel with a wrong answer is a wrong answer' '
	measure_with_fault wrong >out &&
	test "$(tsv_col out error 2)" = "wrong answer" &&
	test "$(awk -F"\t" "NR > 2 && \$7 == 1" out | wc -l)" -eq 3 &&
	sql "SELECT message FROM measurement WHERE error = 5" | grep -q "out\[0\]"
'

test_expect_success 'a kernel that does not compile is a compile error' '
	measure_with_fault syntax >out &&
	test "$(tsv_col out error 2)" = "compile error" &&
	sql "SELECT message FROM measurement WHERE error = 2" | grep -q "injected" &&
	test "$(awk -F"\t" "NR > 2 && \$7 == 1" out | wc -l)" -eq 3
'

test_expect_success 'error codes are stored as AutoTVM numbers' '
	test "$(sql "SELECT group_concat(DISTINCT error) FROM (SELECT error FROM measurement WHERE NOT valid ORDER BY error)")" = "2,4,5,7"
'

test_done
