#!/bin/sh
# The binary: help, version, dispatch, links, options and their man pages.
. "$(dirname "$0")/lib.sh"

test_expect_success 'version and help' '
	tunekit --version | grep -q "^tunekit [0-9]" &&
	tunekit help >out && grep -q measure out && grep -q report out &&
	tunekit --help >out && grep -q "usage: tunekit" out
'

# OpenBLAS 0.3.21 runs a CPU newer than itself on its SSE3 kernels; the
# commands that run neural models start again with the core the CPU has.
test_expect_success 'OpenBLAS runs kernels with AVX2 where the CPU has it, unless told' '
	(unset OPENBLAS_CORETYPE; tunekit --version) >out &&
	core=$(sed -n "s/^OpenBLAS core //p" out) && test -n "$core" &&
	if grep -q "^flags.* avx2 .*fma\\|^flags.* fma .*avx2" /proc/cpuinfo; then
		case $core in Haswell|Zen|SkylakeX|Cooperlake|SapphireRapids) ;; *) false ;; esac
	fi &&
	OPENBLAS_CORETYPE=Prescott tunekit --version | grep -qx "OpenBLAS core Prescott" &&
	ln -s "$TUNEKIT_BIN" tunekit-train &&
	(unset OPENBLAS_CORETYPE; ./tunekit-train --help) >out && grep -q "usage: tunekit train" out
'

test_expect_success 'unknown command and option exit 2' '
	test_expect_code 2 tunekit frobnicate 2>err && grep -q "not a tunekit command" err &&
	test_expect_code 2 tunekit measure --frob 2>err && grep -q "unknown option" err &&
	test_expect_code 2 tunekit report --jobs x best 2>err && grep -q "integer" err &&
	test_expect_code 2 tunekit 2>/dev/null
'

test_expect_success 'a link named tunekit-measure runs measure' '
	ln -s "$TUNEKIT_BIN" tunekit-measure &&
	./tunekit-measure --help >out && grep -q "usage: tunekit measure" out
'

test_expect_success 'help on tasks, targets and networks' '
	tunekit help tasks >out && grep -q "conv2d_winograd" out && grep -q depthwise_conv2d out &&
	tunekit help targets >out && grep -q "isa" out &&
	tunekit help targets cpu:isa=sse2 native >keys && test $(wc -l <keys) -eq 2 &&
	grep -q "|sse2|.*|threads=1\$" keys && test "$(sed -n 2p keys)" = "$(tunekit help targets cpu:)" &&
	test_expect_code 2 tunekit help targets cpu:isa=foo 2>err && test $(wc -l <err) -eq 1 &&
	tunekit help networks >out && grep -q resnet-18 out && grep -q bert-base out &&
	tunekit help measure >out && grep -q -- "--sample" out
'

test_expect_success 'network files with CRLF line ends, the last without a newline' '
	printf "weight\ttask\r\n2\tdense:m=8,n=8,k=8\r\n1\tdense:m=8,n=16,k=8\r" >crlf.tsv &&
	timeout 10 "$TUNEKIT_BIN" measure --network ./crlf.tsv --naive --emit-c >k &&
	test $(grep -c "^/\* tunekit kernel: dense:" k) -eq 2 ||
	{ head -3 k; false; }
'

test_expect_success 'every built-in network generates a kernel for each of its tasks' '
	tunekit help networks >nets &&
	grep -q "^  resnet-18-nchwc  *12 distinct" nets &&
	grep -q "^  mobilenet-v2-nchwc  *31 distinct" nets &&
	while read -r net n rest; do
		tunekit measure --network "$net" --naive --emit-c >k &&
		test "$(grep -c "^void tk_" k)" -eq "$n" || return 1
	done <nets
'

# Every option a command lists in --help is documented in its man page; the
# common options in tunekit(1).
for cmd in $(tunekit help | awk "/^  [a-z]/ { print \$1 }"); do
	test_expect_success "man page of $cmd documents its options" "
		tunekit $cmd --help >help &&
		sed '/^common options:/,\$d' help | grep -o -- '--[a-z][a-z-]*' | sort -u >opts &&
		sed -n '/^common options:/,\$p' help | grep -o -- '--[a-z][a-z-]*' | sort -u >common &&
		test -s common &&
		mandoc -Tascii '$TOP/man/tunekit.1' | col -b >page &&
		for o in \$(cat common); do grep -q -- \"\$o\" page || { echo \"tunekit.1 lacks \$o\"; exit 1; }; done &&
		mandoc -Tascii '$TOP/man/tunekit-$cmd.1' | col -b >page &&
		missing= &&
		for o in \$(cat opts); do grep -q -- \"\$o\" page || missing=\"\$missing \$o\"; done &&
		test -z \"\$missing\" || { echo \"undocumented:\$missing\"; false; }
	"
done

test_expect_success 'every command in the table has a man page and lints clean' '
	for m in "$TOP"/man/*.1; do mandoc -Tlint -W warning "$m" || exit 1; done &&
	tunekit help | awk "/^  [a-z]/ { print \$1 }" >cmds && test -s cmds &&
	for c in $(cat cmds); do test -f "$TOP/man/tunekit-$c.1" || { echo "no page for $c"; exit 1; }; done
'

test_done
