#!/bin/sh
# Kernels that crash, hang, compute a wrong answer, fail to compile, ask for
# too much memory (private, shared or grown by mremap), try to start
# processes or write files, also from the library's constructor, become
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

test_expect_success 'a kernel that mallocs 8 GiB is a memory limit' '
	measure_with_fault bigalloc >out &&
	test "$(tsv_col out error 2)" = "memory limit" &&
	test "$(awk -F"\t" "NR > 2 && \$7 == 1" out | wc -l)" -eq 3 &&
	sql "SELECT message FROM measurement WHERE error = 9" | grep -q "mmap of more than 1024 MiB"
'

test_expect_success 'a kernel that takes memory piece by piece is a memory limit' '
	measure_with_fault memgrow >out &&
	test "$(tsv_col out error 2)" = "memory limit" &&
	test "$(awk -F"\t" "NR > 2 && \$7 == 1" out | wc -l)" -eq 3 &&
	sql "SELECT message FROM measurement WHERE error = 9" | grep -q "SIGSEGV with the data size"
'

test_expect_success 'a kernel that forks is a forbidden syscall, and no child of it runs' '
	measure_with_fault forkbomb >out &&
	test "$(tsv_col out error 2)" = "forbidden syscall" &&
	test "$(awk -F"\t" "NR > 2 && \$7 == 1" out | wc -l)" -eq 3 &&
	sql "SELECT message FROM measurement WHERE error = 10" | grep -q "clone (a new process)"
'

test_expect_success 'a kernel that maps shared memory is a memory limit' '
	measure_with_fault shmgrow >out &&
	test "$(tsv_col out error 2)" = "memory limit" &&
	test "$(awk -F"\t" "NR > 2 && \$7 == 1" out | wc -l)" -eq 3 &&
	sql "SELECT message FROM measurement WHERE error = 9" | grep -q "shared memory"
'

test_expect_success 'a kernel that grows a mapping by mremap is a memory limit' '
	measure_with_fault mremapgrow >out &&
	test "$(tsv_col out error 2)" = "memory limit" &&
	test "$(awk -F"\t" "NR > 2 && \$7 == 1" out | wc -l)" -eq 3
'

# A constructor runs when the kernel's library is loaded: the child is
# confined by then. The forked child of ctorfork would write its pid.
test_expect_success 'a kernel whose constructor forks is a forbidden syscall, and no child of it runs' '
	TK_FAULT_FILE=$TRASH/ctorfork.pid && export TK_FAULT_FILE &&
	measure_with_fault ctorfork >out &&
	sleep 1 &&
	{ test ! -e ctorfork.pid || { kill "$(cat ctorfork.pid)"; false; }; } &&
	test "$(tsv_col out error 2)" = "forbidden syscall" &&
	test "$(awk -F"\t" "NR > 2 && \$7 == 1" out | wc -l)" -eq 3 &&
	sql "SELECT message FROM measurement WHERE error = 10" | grep -q "clone (a new process)"
'

test_expect_success 'a kernel whose constructor execs is a forbidden syscall' '
	measure_with_fault ctorexec >out &&
	test "$(tsv_col out error 2)" = "forbidden syscall" &&
	test "$(awk -F"\t" "NR > 2 && \$7 == 1" out | wc -l)" -eq 3 &&
	sql "SELECT message FROM measurement WHERE error = 10" | grep -q "execve"
'

test_expect_success 'a kernel whose constructor writes a file is a forbidden syscall, and writes nothing' '
	TK_FAULT_FILE=$TRASH/ctorwrite.out && export TK_FAULT_FILE &&
	measure_with_fault ctorwrite >out &&
	test ! -e ctorwrite.out &&
	test "$(tsv_col out error 2)" = "forbidden syscall" &&
	test "$(awk -F"\t" "NR > 2 && \$7 == 1" out | wc -l)" -eq 3 &&
	sql "SELECT message FROM measurement WHERE error = 10" | grep -q "openat (a file for writing)"
'

test_expect_success 'a kernel that writes a file is a forbidden syscall, and writes nothing' '
	TK_FAULT_FILE=$TRASH/filewrite.out && export TK_FAULT_FILE &&
	measure_with_fault filewrite >out &&
	test ! -e filewrite.out &&
	test "$(tsv_col out error 2)" = "forbidden syscall" &&
	test "$(awk -F"\t" "NR > 2 && \$7 == 1" out | wc -l)" -eq 3
'

# posix_spawn and system block every signal before they clone: the trap's
# SIGSYS killed the child unheard ("killed by signal SIGSYS").
test_expect_success 'a kernel that calls system() or posix_spawn() is a forbidden syscall, named' '
	for f in system spawn; do
		measure_with_fault $f >out &&
		test "$(tsv_col out error 2)" = "forbidden syscall" &&
		test "$(awk -F"\t" "NR > 2 && \$7 == 1" out | wc -l)" -eq 3 || exit 1
	done &&
	test "$(sql "SELECT count(*) FROM measurement WHERE error = 10 AND message = '\''forbidden syscall: clone (a new process)'\''")" -ge 4 &&
	! sql "SELECT message FROM measurement WHERE error = 10" | grep -q "SIGSYS"
'

test_expect_success 'threaded kernels still start their threads under the filter' '
	TUNEKIT_CACHE=$TRASH/cache-threads tunekit measure -q --target cpu:threads=2 \
		--task $TASK --naive --sample 2 --repeat 1 >out &&
	test "$(awk -F"\t" "NR > 1 && \$7 == 1" out | wc -l)" -eq 3
'

test_expect_success 'error codes are stored as AutoTVM numbers, then tunekit numbers' '
	test "$(sql "SELECT group_concat(DISTINCT error) FROM (SELECT error FROM measurement WHERE NOT valid ORDER BY error)")" = "2,4,5,7,9,10"
'

test_done
