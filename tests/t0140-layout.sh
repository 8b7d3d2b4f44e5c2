#!/bin/sh
# --layout: the reorder operator layout_transform measured and checked, the
# blocked variant of an ONNX model (import onnx), tuned (tune --network
# MODEL.onnx --layout blocked), both variants tuned and chosen between
# (auto, in tune, report best and export), and a network without its
# graph refused.
. "$(dirname "$0")/lib.sh"

D=$TOP/tests/data/onnx
M=$D/tiny-cnn-1.onnx
FAST="--repeat 1 --min-repeat-ms 1"
TUNE="--batch 4 --repeat 1 --min-repeat-ms 1 --confirm 0 --feature knob"

test_expect_success 'layout_transform measures valid, checked against the reference' '
	tunekit measure --task layout_transform:c=32,h=5,w=7,ib=1,ob=16 \
		--task layout_transform:c=24,h=3,w=4,ib=8,ob=1 --sample 4 $FAST >m.tsv 2>err &&
	test_rows m.tsv 8 &&
	test "$(awk -F"\t" "NR > 1 && \$7 == 1" m.tsv | wc -l)" -eq 8 &&
	# no FLOPs: its latency alone, no GFLOPS
	grep -q "^layout_transform:c=32,h=5,ib=1,n=1,ob=16,w=7: 4 measured, 4 valid, best" err &&
	! grep -q GFLOPS err &&
	tunekit help tasks | grep -q "^  layout_transform "
'

test_expect_success 'a block that does not divide the channels is refused with one line' '
	test_expect_code 2 tunekit measure --task layout_transform:c=6,h=2,w=2,ob=4 --sample 1 \
		>out 2>err &&
	test "$(wc -l <err)" -eq 1 &&
	grep -q "ob=4 must divide c=6" err
'

test_expect_success 'import onnx --layout blocked: blocked convolutions and the reorder' '
	tunekit import onnx --layout blocked "$M" | grep -v "^#" >got &&
	cat >want <<-EOF &&
	weight	task
	1	layout_transform:c=3,h=32,ib=1,n=1,ob=3,w=32
	1	conv2d_nchwc:c=3,cb=3,h=32,k=16,kb=16,n=1,pad=1,r=3,s=3,stride=2,w=32
	2	conv2d_nchwc:c=16,cb=16,h=8,k=16,kb=16,n=1,pad=1,r=3,s=3,stride=1,w=8
	1	dense_relu:k=16,m=1,n=32
	1	dense:k=32,m=1,n=10
	EOF
	test_cmp want got &&
	tunekit import onnx --layout nchw "$M" | grep -q "^2	conv2d:c=16,h=8,k=16" &&
	test_expect_code 2 tunekit import onnx --layout auto "$M" 2>err &&
	test "$(wc -l <err)" -eq 1
'

test_expect_success 'tune --layout blocked tunes the blocked tasks and the reorder' '
	tunekit tune --db b.db --network "$M" --layout blocked --trials 10 $TUNE >out 2>err &&
	cut -f4 out | sort -u | grep -v "^task$" >tasks &&
	cat >want <<-EOF &&
	conv2d_nchwc:c=16,cb=16,h=8,k=16,kb=16,n=1,pad=1,r=3,s=3,stride=1,w=8
	conv2d_nchwc:c=3,cb=3,h=32,k=16,kb=16,n=1,pad=1,r=3,s=3,stride=2,w=32
	dense:k=32,m=1,n=10
	dense_relu:k=16,m=1,n=32
	layout_transform:c=3,h=32,ib=1,n=1,ob=3,w=32
	EOF
	test_cmp want tasks &&
	grep -q "estimated latency" err
'

test_expect_success 'tune --layout auto: both variants, both sums and the choice' '
	tunekit tune --db a.db --network "$M" --layout auto --trials 21 $TUNE >out 2>err &&
	test "$(cut -f4 out | sort -u | grep -v "^task$" | wc -l)" -eq 7 &&
	grep "^network tiny-cnn-1.onnx on hardware 1: estimated latency nchw [0-9.]* [mun]*s, blocked [0-9.]* [mun]*s: [a-z]* chosen$" err >line &&
	test "$(wc -l <line)" -eq 1 &&
	# the choice is the smaller sum: what report best estimates for each variant
	tunekit report --db a.db best --network "$M" --layout nchw 2>nchw >/dev/null &&
	tunekit report --db a.db best --network "$M" --layout blocked 2>blocked >/dev/null &&
	n=$(sed -n "s/.*estimated latency \([0-9.]*\) \([mun]*s\).*/\1 \2/p" nchw) &&
	b=$(sed -n "s/.*estimated latency \([0-9.]*\) \([mun]*s\).*/\1 \2/p" blocked) &&
	grep -q "nchw $n, blocked $b:" line &&
	smaller=$(echo "$n $b" | awk "
		function sec(v, u) { return v * (u == \"ms\" ? 1e-3 : u == \"us\" ? 1e-6 : u == \"ns\" ? 1e-9 : 1) }
		{ print sec(\$1, \$2) <= sec(\$3, \$4) ? \"nchw\" : \"blocked\" }") &&
	grep -q ": $smaller chosen$" line &&
	tunekit report --db a.db best --network "$M" --layout auto >best 2>err2 &&
	grep -q "chosen$" err2 &&
	if grep -q "blocked chosen" line
	then grep -q conv2d_nchwc best && ! grep -q "	conv2d:" best
	else grep -q "	conv2d:" best && ! grep -q conv2d_nchwc best
	fi
'

test_expect_success 'report curve --layout blocked: the blocked network in GFLOPS, a reorder adding none' '
	tunekit report --db b.db curve --network "$M" --layout blocked >curve &&
	tail -1 curve | grep -q "	network:tiny-cnn-1.onnx	.*	GFLOPS$" &&
	test_expect_code 2 tunekit report --db b.db curve --network "$M" --layout auto 2>err &&
	test "$(wc -l <err)" -eq 1
'

test_expect_success 'export --layout blocked writes the reorder kernel too' '
	tunekit export --db b.db --network "$M" --layout blocked --out k >out 2>err &&
	ls k/layout_transform_n1_c3_h32_w32_ib1_ob3.c k/conv2d_nchwc_*.c >/dev/null
'

test_expect_success 'a built-in network with convolutions has its graph compiled in' '
	tunekit report --db a.db best --network resnet-18 --layout blocked >out 2>err &&
	grep -q "^network resnet-18: none of its 13 tasks has a valid record$" err &&
	tunekit report --db a.db best --network resnet-18 --layout auto >out 2>err &&
	grep -q "nchw - (0 of 12 tasks tuned), blocked - (0 of 13 tasks tuned): neither" err
'

test_expect_success 'a network without its graph gets no layout: one line, exit 2' '
	tunekit import onnx "$M" >net.tsv &&
	for cmd in "tune --trials 4" "report best" "export"; do
		test_expect_code 2 tunekit $cmd --network net.tsv --layout blocked >out 2>err &&
		test "$(wc -l <err)" -eq 1 &&
		grep -q "a layout needs the graph" err || return 1
	done &&
	test_expect_code 2 tunekit tune --network "$M" --layout sideways --trials 4 2>err &&
	test "$(wc -l <err)" -eq 1
'

test_done
