#!/bin/sh
# import onnx: the tasks of ONNX models (tests/data/onnx, made by its
# make-fixtures.py), --input, and --network MODEL.onnx; broken models of
# every kind get one line on stderr and exit 2.
. "$(dirname "$0")/lib.sh"

D=$TOP/tests/data/onnx
NODE=/usr/share/libonnx-testdata/data/node

# one_line_exit2 FILE...: tunekit import onnx FILE exits 2 with a single
# line on stderr and nothing on stdout.
one_line_exit2() {
	for f in "$@"; do
		test_expect_code 2 tunekit import onnx "$f" >out 2>err || return 1
		test "$(wc -l <err)" -eq 1 || { echo "$f: $(cat err)"; return 1; }
		test ! -s out || return 1
	done
}

test_expect_success 'a CNN: its convolutions, dense and dense_relu with weights and nodes' '
	tunekit import onnx --input x=4x3x32x32 "$D/tiny-cnn.onnx" >out &&
	cat >want <<-EOF &&
	# $D/tiny-cnn.onnx: the tasks of an ONNX model (opset 13), by tunekit import onnx
	# input x=4x3x32x32
	weight	task
	# node conv1 (Conv)
	1	conv2d:c=3,h=32,k=16,n=4,pad=1,r=3,s=3,stride=2,w=32
	# node conv2 (Conv)
	2	conv2d:c=16,h=8,k=16,n=4,pad=1,r=3,s=3,stride=1,w=8
	# node fc1 (Gemm)
	1	dense_relu:k=16,m=4,n=32
	# node fc2 (Gemm)
	1	dense:k=32,m=4,n=10
	EOF
	test_cmp want out
'

test_expect_success 'the output is a network file: measure --network takes it' '
	tunekit import onnx --input x=1x3x32x32 "$D/tiny-cnn.onnx" >net.tsv &&
	tunekit measure --network net.tsv --naive --repeat 1 --min-repeat-ms 1 >m.tsv &&
	test "$(tsv_count m.tsv)" -eq 4
'

test_expect_success 'shape arithmetic (Shape, Gather, Unsqueeze, Concat, Reshape) at opset 11 and 13' '
	tunekit import onnx "$D/shape-chain-11.onnx" | grep -v "^#" >t11 &&
	tunekit import onnx "$D/shape-chain-13.onnx" | grep -v "^#" >t13 &&
	printf "weight\ttask\n1\tdense:k=64,m=32,n=32\n1\tbatch_matmul:b=2,k=32,m=16,n=16\n" >want &&
	test_cmp want t11 &&
	test_cmp want t13
'

test_expect_success '--network MODEL.onnx in measure, tune and report' '
	tunekit measure --network "$D/shape-chain-13.onnx" --naive --repeat 1 --min-repeat-ms 1 >m.tsv &&
	test "$(tsv_count m.tsv)" -eq 2 &&
	tunekit tune --db tune.db --network "$D/shape-chain-13.onnx" --trials 4 --batch 2 --repeat 1 \
		--confirm 0 --feature knob >out 2>err &&
	grep -q "batch_matmul:b=2,k=32,m=16,n=16" out &&
	grep -q "dense:k=64,m=32,n=32" out &&
	tunekit report --db tune.db curve --network "$D/shape-chain-13.onnx" >curve &&
	grep -q "network:shape-chain-13.onnx" curve
'

test_expect_success 'examples/tune.mk tunes an ONNX model, --input passed through INPUT' '
	make -f "$TOP/examples/tune.mk" MODEL="$D/tiny-cnn.onnx" INPUT="--input x=1x3x16x16" \
		DB=mk.db TRIALS=2 TUNEKIT="$TUNEKIT_BIN" TUNEFLAGS="--confirm 0" >out 2>&1 &&
	test "$(sqlite3 mk.db "SELECT count(DISTINCT task_id) FROM config")" = 4 &&
	make -f "$TOP/examples/tune.mk" MODEL="$D/tiny-cnn.onnx" INPUT="--input x=1x3x16x16" \
		DB=mk.db TUNEKIT="$TUNEKIT_BIN" report >out 2>&1 &&
	grep "(4 of 4 tasks tuned)" out
'

test_expect_success '--network MODEL.onnx with a symbolic input exits 2 naming it' '
	test_expect_code 2 tunekit measure --network "$D/tiny-cnn.onnx" --naive 2>err &&
	grep -q "symbolic (.N.)" err
'

test_expect_success 'a constant whose values are not packed still gives them (Reshape)' '
	tunekit import onnx "$D/unpacked.onnx" >out &&
	grep -q "^1	dense:k=4,m=4,n=4\$" out
'

test_expect_success 'nodes out of order are imported in dependency order' '
	tunekit import onnx "$D/unsorted.onnx" | grep -v "^# [^n]" >out &&
	printf "weight\ttask\n# node first (MatMul)\n1\tdense_relu:k=8,m=2,n=16\n# node second (MatMul)\n1\tdense:k=16,m=2,n=4\n" >want &&
	test_cmp want out
'

test_expect_success 'every model of data/models: the tasks ONNX'"'"'s own inference gives, in order' '
	for f in "$TOP"/data/models/*.onnx; do
		tunekit import onnx "$f" | grep -v "^# [^n]" | sed "s/^# node /# /" >got &&
		grep -v "^# [^/]" "${f%.onnx}.tasks.tsv" >want &&
		test_cmp want got || return 1
	done &&
	test "$(ls "$TOP"/data/models/*.onnx | wc -l)" -ge 32
'

# The hand-derived task lists of data/networks against the import of the
# same model: the same tasks with the same weights (order and comments aside).
test_expect_success 'every hand-written network with a model: the same tasks and weights' '
	n=0 &&
	for f in "$TOP"/data/networks/*.tsv; do
		m=$TOP/data/models/$(basename "$f" .tsv).onnx
		[ -e "$m" ] || continue
		tunekit import onnx "$m" | grep -v "^#" | tail -n +2 | sort >got &&
		grep -v "^#" "$f" | tail -n +2 | sort >want &&
		test_cmp want got || { echo "differs: $f"; return 1; }
		n=$((n + 1))
	done &&
	test $n -ge 21
'

test_expect_success 'a symbolic dimension without --input exits 2 and names it' '
	test_expect_code 2 tunekit import onnx "$D/symbolic.onnx" 2>err &&
	grep -q "graph input .x.: dimension 0 is symbolic (.batch.): give the shape with --input x=" err &&
	tunekit import onnx --input x=5x8 "$D/symbolic.onnx" >out &&
	grep -q "^1	dense:k=8,m=5,n=4\$" out
'

test_expect_success '--input malformed, unknown or of the wrong rank, or not one model: exit 2' '
	test_expect_code 2 tunekit import onnx --input x=5by8 "$D/symbolic.onnx" 2>err &&
	grep -q "expected NAME=D1xD2" err &&
	test_expect_code 2 tunekit import onnx --input x=0x8 "$D/symbolic.onnx" 2>err &&
	test_expect_code 2 tunekit import onnx --input nosuch=1x8 "$D/symbolic.onnx" 2>err &&
	grep -q "no input of that name" err &&
	test_expect_code 2 tunekit import onnx --input x=1x8x2 "$D/symbolic.onnx" 2>err &&
	grep -q "3 dimensions, the model.s input has 2" err &&
	test_expect_code 2 tunekit import autotvm --input x=1 some.log 2>err &&
	grep -q "onnx models only" err &&
	test_expect_code 2 tunekit import onnx 2>err &&
	grep -q "expected one MODEL.onnx" err &&
	test_expect_code 2 tunekit import onnx "$D/symbolic.onnx" "$D/symbolic.onnx" 2>err &&
	grep -q "expected one MODEL.onnx" err
'

test_expect_success 'an operator it cannot follow exits 2 naming the node and the operator' '
	test_expect_code 2 tunekit import onnx "$D/unknown-op.onnx" 2>err &&
	grep -q "node .mystery. (FrobnicateTensor): tunekit cannot follow this operator" err
'

test_expect_success 'a cyclic graph exits 2 with one line' '
	one_line_exit2 "$D/cyclic.onnx" &&
	grep -q "cycle" err
'

test_expect_success 'absurd dimensions (an input, an initializer) exit 2 with one line' '
	one_line_exit2 "$D/absurd.onnx" &&
	grep -q "absurd" err &&
	one_line_exit2 "$D/absurd-init.onnx" &&
	grep -q "absurd" err
'

test_expect_success 'int64 constants at their ends wrap, and a Range of 2^64 elements exits 2' '
	one_line_exit2 "$D/overflow.onnx" &&
	grep -q "node .range. (Range): an absurd length" err
'

test_expect_success 'malformed and truncated models exit 2 with one line' '
	: >empty.onnx &&
	printf "weight\ttask\n1\tdense:m=1,n=1,k=1\n" >text.onnx &&
	head -c 4096 /dev/urandom >random.onnx &&
	printf "\377\377\377\377\377\377\377\377\377\377\377" >varint.onnx &&
	size=$(wc -c <"$D/tiny-cnn.onnx") &&
	for n in 1 2 5 17 100 1000 5000 20000 $((size - 1)); do
		head -c $n "$D/tiny-cnn.onnx" >trunc-$n.onnx || return 1
	done &&
	one_line_exit2 empty.onnx text.onnx random.onnx varint.onnx trunc-*.onnx
'

test_expect_success 'a missing file exits 1' '
	test_expect_code 1 tunekit import onnx nosuch.onnx 2>err &&
	grep -q "nosuch.onnx" err
'

# The peak RSS of a 3 GiB model's import against that of a model of a few
# bytes, by the same binary (a sanitizer build has a larger base).
test_expect_success 'a model of 3 GiB of weights imports in a few MB more than a tiny one' '
	cp "$D/huge-head.bin" huge.onnx &&
	truncate -s "$(cat "$D/huge-size.txt")" huge.onnx &&
	test "$(wc -c <huge.onnx)" -gt 3221225472 &&
	/usr/bin/time -f "%M" -o rss "$TUNEKIT_BIN" import onnx huge.onnx >out &&
	grep -q "^1	dense:k=786432,m=1,n=1024\$" out &&
	/usr/bin/time -f "%M" -o rss0 "$TUNEKIT_BIN" import onnx "$D/symbolic.onnx" --input x=1x8 >out0 &&
	echo "peak RSS: $(cat rss) KB, a tiny model: $(cat rss0) KB" &&
	test "$(cat rss)" -lt "$(($(cat rss0) + 16384))"
'

if ! [ -d "$NODE" ]; then
	echo "# skipped: ONNX's node tests: libonnx-testdata is not installed ($NODE)"
else
	test_expect_success 'node tests tunekit cannot express are refused with exit 2' '
		for t in test_convtranspose_3d test_basic_convinteger test_convinteger_with_padding \
			test_convinteger_without_padding test_matmulinteger; do
			test_expect_code 2 tunekit import onnx "$NODE/$t/model.onnx" 2>err || return 1
			test "$(wc -l <err)" -eq 1 || return 1
		done
	'
fi

test_done
