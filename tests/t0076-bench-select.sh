#!/bin/sh
# make bench-kernels' choice of the library baseline (tests/bench/kernels/
# select.awk), on canned timings: no BLAS and no particular CPU needed.
. "$(dirname "$0")/lib.sh"

SELECT=$TOP/tests/bench/kernels/select.awk
T='	'

# candidates as kernels.sh names them: env (the environment as it is, here
# pinned to Haswell), auto (OpenBLAS's own detection), forced core types, BLIS
cat >runs.tsv <<END
env${T}1${T}OpenBLAS${T}0.3.21${T}Haswell${T}ok${T}0.0160
auto${T}0${T}OpenBLAS${T}0.3.21${T}SkylakeX${T}ok${T}0.0091
SkylakeX${T}0${T}OpenBLAS${T}0.3.21${T}SkylakeX${T}ok${T}0.0090
SapphireRapids${T}0${T}OpenBLAS${T}0.3.21${T}SapphireRapids${T}wrong${T}-
blis${T}0${T}BLIS${T}0.9.0${T}skx${T}ok${T}0.0100
env${T}1${T}OpenBLAS${T}0.3.21${T}Haswell${T}ok${T}0.0150
auto${T}0${T}OpenBLAS${T}0.3.21${T}SkylakeX${T}ok${T}0.0089
SkylakeX${T}0${T}OpenBLAS${T}0.3.21${T}SkylakeX${T}ok${T}0.0200
SapphireRapids${T}0${T}OpenBLAS${T}0.3.21${T}SapphireRapids${T}ok${T}0.0050
blis${T}0${T}BLIS${T}0.9.0${T}skx${T}ok${T}0.0098
env${T}1${T}OpenBLAS${T}0.3.21${T}Haswell${T}ok${T}0.0155
auto${T}0${T}OpenBLAS${T}0.3.21${T}SkylakeX${T}ok${T}0.0092
SkylakeX${T}0${T}OpenBLAS${T}0.3.21${T}SkylakeX${T}ok${T}0.0093
SapphireRapids${T}0${T}OpenBLAS${T}0.3.21${T}SapphireRapids${T}ok${T}0.0049
blis${T}0${T}BLIS${T}0.9.0${T}skx${T}ok${T}0.0099
END

test_expect_success 'the fastest correct candidate wins, by its median over the sweeps' '
	awk -f "$SELECT" runs.tsv >out &&
	grep "^best" out >best &&
	printf "best\tauto\tOpenBLAS\t0.3.21\tSkylakeX\t0.0091\t3\n" >expect &&
	test_cmp expect best
'

test_expect_success 'a candidate with one wrong result is skipped however fast' '
	printf "wrong\tSapphireRapids\tOpenBLAS\t0.3.21\tSapphireRapids\t-\t3\n" >expect &&
	grep "^wrong" out >wrong &&
	test_cmp expect wrong
'

test_expect_success 'the kernel OpenBLAS runs by itself is reported with its median' '
	printf "default\tenv\tOpenBLAS\t0.3.21\tHaswell\t0.0155\t3\n" >expect &&
	grep "^default" out >dflt &&
	test_cmp expect dflt
'

test_expect_success 'the other library wins when it is faster' '
	awk -F"$T" -v OFS="$T" "\$1 == \"blis\" { \$7 = \$7 * 0.8 } 1" runs.tsv >blis.tsv &&
	awk -f "$SELECT" blis.tsv | grep "^best" | cut -f2-5 >best &&
	printf "blis\tBLIS\t0.9.0\tskx\n" >expect &&
	test_cmp expect best
'

test_expect_success 'the default is the best when nothing beats it, and a tie keeps the first' '
	printf "env\t1\tOpenBLAS\t0.3.21\tSkylakeX\tok\t0.01\nauto\t0\tOpenBLAS\t0.3.21\tSkylakeX\tok\t0.01\n" |
		awk -f "$SELECT" >out &&
	printf "best\tenv\tOpenBLAS\t0.3.21\tSkylakeX\t0.01\t1\ndefault\tenv\tOpenBLAS\t0.3.21\tSkylakeX\t0.01\t1\n" >expect &&
	test_cmp expect out
'

test_expect_success 'no correct candidate: best is none, the wrong ones are listed' '
	printf "env\t1\tOpenBLAS\t0.3.21\tHaswell\twrong\t-\n" | awk -f "$SELECT" >out &&
	printf "best\tnone\ndefault\tenv\tOpenBLAS\t0.3.21\tHaswell\t-\t1\nwrong\tenv\tOpenBLAS\t0.3.21\tHaswell\t-\t1\n" >expect &&
	test_cmp expect out
'

test_done
