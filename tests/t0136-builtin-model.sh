#!/bin/sh
# tune --model-file builtin: the built-in cost model nearest the target
# (same CPU, else vendor and ISA, else ISA) guides the tune, and says which
# and why; help models lists them; a replay (no target CPU) is refused.
. "$(dirname "$0")/lib.sh"

T='dense:m=32,n=32,k=32'

test_expect_success 'help models lists the built-in models' '
	tunekit help models >out &&
	grep "^builtin" out &&
	grep "^hw-[0-9]* *xgb *itervar" out
'

# the models are trained on all the dataset's tasks: their itervar rows are
# the widest task's (a convolution's), and a dense layer's are padded
test_expect_success 'a tune guided by the built-in model says which and why' '
	tunekit tune --task $T --model-file builtin --trials 6 --confirm 0 >out 2>err &&
	grep "guided by the built-in xgb model hw-[0-9]* of .*: the same" err &&
	test "$(tail -n +2 out | wc -l)" = 6 &&
	sqlite3 test.db "SELECT method FROM run" | grep "xgb"
'

test_expect_success 'its isa is the target'"'"'s: an sse2 target takes an sse2 model' '
	tunekit tune --target cpu:isa=sse2 --task $T --model-file builtin --trials 2 --confirm 0 \
		>out 2>err &&
	grep "guided by the built-in xgb model hw-[0-9]* of .*, sse2: the same" err
'

test_expect_success 'a replay has no CPU to pick by: exit 2, one line' '
	tunekit tune -q --task $T --trials 2 --db r.db >/dev/null &&
	test_expect_code 2 tunekit tune --db s.db --replay r.db --task $T --model-file builtin \
		--trials 2 2>err &&
	test "$(wc -l <err)" = 1 &&
	grep "a replay has none" err
'

test_expect_success 'a file named builtin is given as a path' '
	echo not a model >builtin &&
	test_expect_code 2 tunekit tune --task $T --model-file ./builtin --trials 1 2>err &&
	test "$(wc -l <err)" = 1 &&
	grep "[.]/builtin: not a tunekit model file" err
'

test_done
