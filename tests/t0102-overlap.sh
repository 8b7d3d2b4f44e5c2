#!/bin/sh
# Overlap: with --overlap on, half of a batch is compiled while the other
# half is timed; off, every compile ends before the batch's timing starts;
# auto follows this machine's verdict beside the default measurement lock,
# and asks the machine (times a kernel alone and beside a compile) when
# there is none. The compiles are logged by a compiler wrapper, the holds
# of the measurement lock by TUNEKIT_MEASURE_LOG.
. "$(dirname "$0")/lib.sh"

TASK='dense:m=32,n=32,k=32'
mkdir -m 700 run bin
XDG_RUNTIME_DIR=$TRASH/run
export XDG_RUNTIME_DIR
cat >bin/logcc <<'CC'
#!/bin/sh
s=$(date +%s.%N)
cc "$@"; rc=$?
echo "$s $(date +%s.%N)" >>"$TK_CC_LOG"
exit $rc
CC
chmod +x bin/logcc

# measure_logged MODE NAME: 8 new kernels in one batch, compiles logged in
# NAME.cc and holds of the lock in NAME.holds
measure_logged() {
	TK_CC_LOG=$TRASH/$2.cc TUNEKIT_MEASURE_LOG=$TRASH/$2.holds \
		tunekit measure -q --target "cpu:cc=$TRASH/bin/logcc" --cache-dir "$TRASH/cache-$2" \
		--task $TASK --sample 8 --repeat 1 ${1:+--overlap $1} >$2.out
}

# overlapped NAME: some compile ran while the lock was held
overlapped() {
	awk 'NR == FNR { s[NR] = $2; e[NR] = $3; n = NR; next }
		{ for (i = 1; i <= n; i++) if ($1 < e[i] && $2 > s[i]) hit = 1 }
		END { exit !hit }' $1.holds $1.cc
}

test_expect_success 'on: the second half compiles while the first is timed, all valid' '
	measure_logged on on &&
	test_rows on.out 8 &&
	test "$(awk -F"\t" "NR > 1 && \$7 == 1" on.out | wc -l)" -eq 8 &&
	test $(wc -l <on.cc) -ge 8 &&
	overlapped on
'

test_expect_success 'off: every compile ends before the timing starts' '
	measure_logged off off &&
	test "$(awk -F"\t" "NR > 1 && \$7 == 1" off.out | wc -l)" -eq 8 &&
	! overlapped off
'

test_expect_success 'auto follows the verdict beside the lock' '
	echo "tunekit-overlap 1 allowed 1 alone 0.001 with 0.001 alone_cv 0.01 with_cv 0.01" >run/tunekit/overlap &&
	measure_logged "" allowed &&
	overlapped allowed &&
	echo "tunekit-overlap 1 allowed 0 alone 0.001 with 0.0015 alone_cv 0.01 with_cv 0.01" >run/tunekit/overlap &&
	TUNEKIT_OVERLAP=auto measure_logged "" denied &&
	! overlapped denied
'

test_expect_success 'TUNEKIT_OVERLAP applies when --overlap is not given' '
	TUNEKIT_OVERLAP=on measure_logged "" env &&
	overlapped env &&
	TUNEKIT_OVERLAP=on measure_logged off envoff &&
	! overlapped envoff
'

test_expect_success 'auto without a verdict asks the machine and keeps the answer' '
	rm run/tunekit/overlap &&
	measure_logged "" asked &&
	test "$(awk -F"\t" "NR > 1 && \$7 == 1" asked.out | wc -l)" -eq 8 &&
	grep -Eq "^tunekit-overlap 1 allowed [01] alone [0-9.e+-]+ with [0-9.e+-]+ " run/tunekit/overlap &&
	test -z "$(find "$TRASH/cache-asked" -name "overlap-probe-*")"
'

test_expect_success 'a bad --overlap or TUNEKIT_OVERLAP exits 2' '
	test_expect_code 2 tunekit measure -q --task $TASK --naive --overlap sometimes 2>err &&
	grep -q "auto, on or off" err &&
	TUNEKIT_OVERLAP=1 test_expect_code 2 tunekit measure -q --task $TASK --naive 2>err &&
	grep -q "TUNEKIT_OVERLAP" err
'

test_done
