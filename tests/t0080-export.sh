#!/bin/sh
# export: the best kernels as a folder of C files whose Makefile builds them
# with the target's flags and checks each one against its reference.
. "$(dirname "$0")/lib.sh"

DENSE='dense:m=24,n=40,k=16'
CONV='conv2d:c=4,h=10,w=10,k=8,pad=1'
DW='depthwise_conv2d:c=3,h=7,w=5,pad=1'
WINO='conv2d_winograd:c=2,h=7,w=5,k=3'
NAMES='dense_m24_n40_k16 conv2d_n1_c4_h10_w10_k8_r3_s3_stride1_pad1
depthwise_conv2d_n1_c3_h7_w5_r3_s3_stride1_pad1 conv2d_winograd_n1_c2_h7_w5_k3_pad1_m2'

test_expect_success 'measure four small tasks' '
	tunekit measure -q --task $DENSE --task $CONV --task $DW --task $WINO --sample 4 >m &&
	test_rows m 16
'

test_expect_success 'export writes a kernel and a header per task, and the shared files' '
	tunekit export --out k >out 2>err &&
	test_rows out 4 &&
	head -1 out >hdr &&
	printf "id\ttask\tconfig\thw\tkernel\tlatency_s\tgflops\n" >want &&
	test_cmp want hdr &&
	grep -q "4 kernels written to k" err &&
	for n in $NAMES; do
		test -s k/$n.c && test -s k/$n.h &&
		grep -q "^void tk_$n(float \*const \*bufs, float \*ws)$" k/$n.c &&
		grep -q "^void tk_$n(float \*const \*bufs, float \*ws);$" k/$n.h &&
		grep -q "^int ref_$n(double \*out, double \*outabs, const float \*const \*in)$" k/ref_kernels.c &&
		grep -q "$n" k/test_kernels.c && grep -q "$n.o" k/Makefile || exit 1
	done &&
	! grep -q "tk_kernel\|tk_abi\b" k/*.c &&
	test -s k/README && grep -q "^CFLAGS = .*-O3" k/Makefile &&
	! grep -q -- "-shared\|-fPIC" k/Makefile
'

test_expect_success 'the header names the record: task, config, latency, hardware' '
	best=$(tunekit report best | awk -F"\t" "\$2 ~ /^dense:/") &&
	cfg=$(echo "$best" | cut -f3) &&
	grep -q "TK_DENSE_M24_N40_K16_TASK \"dense:k=16,m=24,n=40\"" k/dense_m24_n40_k16.h &&
	grep -q "TK_DENSE_M24_N40_K16_CONFIG \"$cfg\"" k/dense_m24_n40_k16.h &&
	grep -q "TK_DENSE_M24_N40_K16_OUTPUT_FLOATS 960UL" k/dense_m24_n40_k16.h &&
	grep -q "bufs\[1\]  input  A\[24, 16\]" k/dense_m24_n40_k16.h &&
	grep -q "tuned on  .*threads=1" k/dense_m24_n40_k16.h &&
	test "$(awk -F"\t" "\$2 ~ /^dense:/ { print \$1 }" out)" = "$(echo "$best" | cut -f1)"
'

test_expect_success 'make -C k builds every kernel, prints OK for each and exits 0' '
	make -C k >log 2>&1 &&
	test $(grep -c "^OK " log) -eq 4 &&
	! grep -q "^FAIL" log &&
	for n in $NAMES; do
		grep -q "^OK $n [0-9.e-]* [0-9.]*$" log || exit 1
	done &&
	k/test_kernels dense_m24_n40_k16 >one && test $(wc -l <one) -eq 1 &&
	make -C k clean >/dev/null && ! test -e k/test_kernels && ! test -e k/dense_m24_n40_k16.o
'

test_expect_success 'a kernel made wrong on purpose makes make fail' '
	cp -r k bad &&
	n=dense_m24_n40_k16 &&
	sed -i "s/^void tk_$n(float \*const \*bufs, float \*ws)\$/static void orig(float *const *bufs, float *ws)/" bad/$n.c &&
	printf "void tk_%s(float *const *bufs, float *ws)\n{\n\torig(bufs, ws);\n\tbufs[0][5] += 0.01f;\n}\n" $n >>bad/$n.c &&
	test_must_fail make -C bad >log 2>&1 &&
	grep -q "^FAIL $n wrong answer: out\[5\]" log &&
	test $(grep -c "^OK " log) -eq 3
'

test_expect_success 'a kernel that leaves part of its output unwritten fails' '
	rm -rf bad && cp -r k bad &&
	n=depthwise_conv2d_n1_c3_h7_w5_r3_s3_stride1_pad1 &&
	sed -i "s/^void tk_$n(float \*const \*bufs, float \*ws)\$/static void orig(float *const *bufs, float *ws)/" bad/$n.c &&
	printf "void tk_%s(float *const *bufs, float *ws)\n{\n\tfloat x = bufs[0][0];\n\torig(bufs, ws);\n\tbufs[0][0] = x;\n}\n" $n >>bad/$n.c &&
	test_must_fail make -C bad >log 2>&1 &&
	grep -q "^FAIL $n wrong answer: out\[0\] = nan" log
'

test_expect_success 'export again replaces the files it writes' '
	echo garbage >k/dense_m24_n40_k16.c &&
	echo keep >k/other.txt &&
	tunekit export -q --out k >/dev/null &&
	grep -q "^void tk_dense_m24_n40_k16(" k/dense_m24_n40_k16.c &&
	test "$(cat k/other.txt)" = keep &&
	! ls -a k | grep -q "\.tmp$"
'

test_expect_success '--task exports only that task, in any spelling, once' '
	tunekit export -q --task "dense:k=16,n=40,m=24" -t $DENSE --out k1 >out &&
	test_rows out 1 &&
	ls k1 | sort >files &&
	printf "Makefile\nREADME\ndense_m24_n40_k16.c\ndense_m24_n40_k16.h\nref_kernels.c\ntest_kernels.c\n" >want &&
	test_cmp want files &&
	make -C k1 >log 2>&1 && grep -q "^OK dense_m24_n40_k16 " log
'

test_expect_success '--network with a TSV file of small tasks; missing tasks warn' '
	printf "# small tasks\nweight\ttask\n2\t%s\n1\t%s\n1\tdense:m=3,n=3,k=3\n" $DW $WINO >small.tsv &&
	tunekit export -q --network ./small.tsv --out k2 >out 2>err &&
	test_rows out 2 &&
	grep -q "warning: dense:k=3,m=3,n=3: no valid record on hardware" err &&
	test $(grep -c "^[a-z0-9_]*\.o: [a-z0-9_]*\.c [a-z0-9_]*\.h$" k2/Makefile) -eq 2 &&
	make -C k2 >log 2>&1 && test $(grep -c "^OK " log) -eq 2
'

test_expect_success 'exported records are a record stream measure reads' '
	tunekit export -q --task $DENSE --task $DW --out k3 | tunekit measure -q --config - >again &&
	test_rows again 2 &&
	test "$(awk -F"\t" "NR > 1 && \$7 != 1" again | wc -l)" -eq 0
'

test_expect_success '--autotvm writes the exported records as an AutoTVM log' '
	tunekit export -q --out k4 --autotvm at.log >out &&
	test $(wc -l <at.log) -eq 4 &&
	grep -q "\"tunekit.dense\"" at.log &&
	grep -q "\"tunekit.conv2d_winograd\"" at.log
'

test_expect_success '--hardware picks the records (and the target) of another hardware' '
	tunekit measure -q --target cpu:isa=sse2 --task $DENSE --sample 2 >m2 &&
	hw=$(tsv_col m2 hw) &&
	tunekit export -q --hardware $hw --out k5 >out &&
	test_rows out 1 &&
	test "$(tsv_col out hw)" = "$hw" &&
	grep -q "^CFLAGS = .*-march=x86-64" k5/Makefile &&
	grep -q "isa=sse2" k5/dense_m24_n40_k16.h &&
	make -C k5 >log 2>&1 && grep -q "^OK dense_m24_n40_k16 " log
'

test_expect_success 'exit codes: unknown task 2, nothing to export 1, unknown hardware 2' '
	test_expect_code 2 tunekit export --task gemm:m=1 --out x 2>err && grep -q "unknown operator" err &&
	test_expect_code 2 tunekit export --task dense:m=1 --out x 2>err && grep -q "missing parameter" err &&
	test_expect_code 1 tunekit export --task dense:m=2,n=2,k=2 --out x 2>err &&
	grep -q "warning: dense:k=2,m=2,n=2" err && grep -q "nothing to export" err &&
	test_expect_code 1 tunekit export --target cpu:threads=2 --out x 2>err &&
	grep -q "nothing to export" err &&
	test_expect_code 2 tunekit export --hardware 999 --out x 2>err && grep -q "no hardware 999" err &&
	test_expect_code 2 tunekit export --frob 2>err &&
	test_expect_code 2 tunekit export stray 2>err &&
	test_expect_code 3 tunekit export --db missing.db --out x 2>err &&
	! test -e x
'

test_expect_success 'the man page documents every option and lints clean' '
	tunekit export --help >help &&
	sed "/^common options:/,\$d" help | grep -o -- "--[a-z][a-z-]*" | sort -u >opts &&
	test -s opts &&
	mandoc -Tascii "$TOP/man/tunekit-export.1" | col -b >page &&
	for o in $(cat opts); do grep -q -- "$o" page || { echo "undocumented: $o"; exit 1; }; done &&
	mandoc -Tlint -W warning "$TOP/man/tunekit-export.1"
'

test_done
