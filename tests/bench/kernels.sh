#!/bin/sh
# Kernel benchmark (make bench-kernels; not a test, not in CI; issue 4): are
# the kernels tunekit finds as fast as the libraries a CPU user would call?
# For each workload and thread count: tune it (xgb+sa, a fixed budget), export
# the best kernel, build tests/bench/kernels/driver.c against it, and time it
# against OpenBLAS (dense, batch_matmul) or oneDNN (conv2d, depthwise_conv2d)
# in one process, interleaved, median of rounds, after checking its output
# against the library's. The FP32 peak: the FMA loop of tests/bench/kernels/
# fma.h, timed on its own by peak.c for the header and as one more side of
# each driver run's interleaved rounds for the table, the best round (no
# kernel can beat it; on a machine other jobs share, the rounds' peak is
# slowed as the kernels are). Prints one table, the geometric means per group and
# issue 4's targets.
#
# The library baseline is the strongest this machine has (issue 28). For each
# BLAS workload and thread count, tests/bench/kernels/blas.c times sgemm under
# every candidate: OpenBLAS as the environment runs it, with its own core
# detection (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset) and with each
# core type the CPU's flags allow forced (SkylakeX, Cooperlake,
# SapphireRapids with AVX-512, bf16, AMX; Haswell and Zen with AVX2 and FMA;
# Sandybridge with AVX), and BLIS by itself and with each configuration the
# flags allow forced (skx, haswell, zen3 on AMD); each result is checked
# against a float64 reference; BENCH_SWEEPS interleaved sweeps over the
# candidates, each candidate's median. select.awk keeps the fastest correct
# one, and the driver is built against that library and run with that
# setting. The variables are set or unset in the commands' own environment
# only (env(1)); the caller's is left as it is. The table names the kernel
# that won and, when it differs, the one OpenBLAS runs as the environment has
# it. For oneDNN the driver runs with ONEDNN_MAX_CPU_ISA and DNNL_MAX_CPU_ISA
# unset, and the ISA oneDNN dispatches (tests/bench/kernels/onednn.c) is
# checked against the best the CPU's flags allow.
#
# Sanity guards, printed under the table: a library baseline below 60% of
# the FP32 peak on GEMM 1024^3 at one thread ("check its configuration"), and
# any ratio to the peak above 1.0 (a peak-measurement problem).
#
# The store keeps everything across workloads and runs: a workload with at
# least BENCH_TRIALS configurations measured for its target is not tuned
# again, one with fewer gets the rest of the budget in a new run seeded with
# that number plus one (seed 1 at first; a top-up explores afresh rather than
# repeating the first run's random plans). The trials and tuning seconds
# shown are the configurations of the workload measured and the durations
# of the runs that measured them, from the store. The kernel timed is the one
# `tunekit export` takes: the configuration with the fastest median record,
# among those tune confirmed with two more measurements.
#
# usage: kernels.sh TUNEKIT WORKDIR
# environment:
#   BENCH_TRIALS   tuning budget per workload and thread count (default 300)
#   BENCH_THREADS  thread counts, kernels tuned for --target cpu:threads=N (default "1 2")
#   WORKLOADS      tasks separated by blanks (default: GEMM 256^3..2048^3, the
#                  BERT-base shapes at sequence length 128, the distinct
#                  convolutions of ResNet-18 and depthwise ones of MobileNet-V2,
#                  these in blocked layouts, from data/networks/resnet-18-nchwc.tsv
#                  and mobilenet-v2-nchwc.tsv); none: only BENCH_NETWORKS'
#   BENCH_DB       the record store (default WORKDIR/kernels.db)
#   BENCH_ROUNDS   interleaved rounds of the driver (default 7)
#   BENCH_SWEEPS   interleaved sweeps over the library candidates (default 3)
#   BENCH_TRANSFER 1 (default): tune with --transfer-from the store, a base
#                  model from the records of workloads of the same operator
#                  tuned before on the same target, and at later thread counts
#                  from the first thread count's records (--transfer-hardware);
#                  0: each from scratch
#   BENCH_LOCK     the measurement lock: tunekit tune takes it while it times
#                  kernels, and every other program that times (peak, the
#                  libraries, the driver) runs under `tunekit lock`, so that
#                  no timing here overlaps another, nor a tunekit's elsewhere
#                  on the machine (default: tunekit's own lock, see
#                  tunekit-lock(1); none: no lock)
#   CC             compiler of peak and the driver (default cc)
#   BENCH_NETWORKS models of data/models whose convolutions are timed end to
#                  end (default "resnet-18 mobilenet-v2"; empty: none): every
#                  convolution of the model in NCHW and in the blocked variant
#                  tune --layout blocked tunes (tunekit import onnx --layout),
#                  the blocked variant's reorders (layout_transform, tuned
#                  at most 64 trials, timed by tunekit alone) joining the
#                  workloads; after the table, each network's sum of weight x
#                  median time per layout against oneDNN's per layer
#                  (tests/bench/kernels/network.awk), and ResNet-18's faster
#                  layout against oneDNN's sum from NCHW to NCHW
#   BENCH_NOISE    tasks whose noise floor is measured at the first thread count
#                  by tests/bench/noise.sh (default: GEMM 1024^3 and ResNet-18's
#                  3x3 64@56; empty: none)
# Groups for the means, by operator: dense with m = n = k is GEMM, other
# dense and batch_matmul BERT, conv2d ResNet-18, depthwise_conv2d MobileNet-V2
# (plain or _nchwc).
set -e
[ $# -eq 2 ] || { echo "usage: kernels.sh TUNEKIT WORKDIR" >&2; exit 2; }
TK=$1 DIR=$2
HERE=$(cd "$(dirname "$0")" && pwd)
NETS=$HERE/../../data/networks
TRIALS=${BENCH_TRIALS:-300}
THREADS=${BENCH_THREADS:-1 2}
DB=${BENCH_DB:-$DIR/kernels.db}
ROUNDS=${BENCH_ROUNDS:-7}
SWEEPS=${BENCH_SWEEPS:-3}
TRANSFER=${BENCH_TRANSFER:-1}
LOCK=${BENCH_LOCK:-}
if [ -n "$LOCK" ]; then
	TUNEKIT_MEASURE_LOCK=$LOCK
	export TUNEKIT_MEASURE_LOCK
fi
CC=${CC:-cc}
NOISE=${BENCH_NOISE-dense:m=1024,n=1024,k=1024 conv2d_nchwc:c=64,h=56,k=64,n=1,pad=1,r=3,s=3,stride=1,w=56,cb=16,kb=16}
mkdir -p "$DIR"

if [ "$WORKLOADS" = none ]; then
	WORKLOADS=
elif [ -z "$WORKLOADS" ]; then
	WORKLOADS="dense:m=256,n=256,k=256 dense:m=512,n=512,k=512
dense:m=1024,n=1024,k=1024 dense:m=2048,n=2048,k=2048
dense:m=128,n=768,k=768 dense:m=128,n=3072,k=768 dense:m=128,n=768,k=3072
batch_matmul:b=12,m=128,n=128,k=64
$(awk -F'\t' '$2 ~ /^conv2d_nchwc:/ { print $2 }' "$NETS/resnet-18-nchwc.tsv")
$(awk -F'\t' '$2 ~ /^depthwise_conv2d_nchwc:/ { print $2 }' "$NETS/mobilenet-v2-nchwc.tsv")"
fi

say() { echo "kernels.sh: $*" >&2; }

# The networks of the end-to-end rows: each model's tasks in NCHW and in
# the blocked variant tune --layout blocked tunes (tunekit import onnx
# --layout), their convolutions and reorders added to the workloads.
NETWORKS=${BENCH_NETWORKS-resnet-18 mobilenet-v2}
MODELS=$HERE/../../data/models
for N in $NETWORKS; do
	for L in nchw blocked; do
		"$TK" import onnx --layout "$L" "$MODELS/$N.onnx" >"$DIR/net-$N-$L.tsv" ||
			{ say "$N: no ONNX model in data/models"; exit 1; }
	done
	WORKLOADS="$WORKLOADS
$(awk -F'\t' '$2 ~ /^(conv2d|conv2d_nchwc|depthwise_conv2d|depthwise_conv2d_nchwc|layout_transform):/ { print $2 }' \
	"$DIR/net-$N-nchw.tsv" "$DIR/net-$N-blocked.tsv")"
done
# each workload once, in the order first given
WORKLOADS=$(for W in $WORKLOADS; do echo "$W"; done | awk '!seen[$0]++')

# Run a program that times kernels and is not tunekit under the measurement
# lock tunekit measure and tune take (tunekit itself takes it).
locked() {
	"$TK" lock -- "$@"
}

# ---- build peak and check the libraries -----------------------------------
BLAS_CFLAGS=$(pkg-config --cflags openblas 2>/dev/null || true)
BLAS_LIBS=$(pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
DRV_CFLAGS="-O2 -march=native -fopenmp -Wall"
DRV_LIBS="-ldnnl -lm"
$CC -O2 -march=native -pthread -o "$DIR/peak" "$HERE/kernels/peak.c"
# shellcheck disable=SC2086
$CC -O2 -march=native -Wall -DBLAS_OPENBLAS $BLAS_CFLAGS -o "$DIR/blas-openblas" \
	"$HERE/kernels/blas.c" $BLAS_LIBS -lm
# blis.h defines many static inline functions it does not use
if ! $CC -O2 -march=native -Wall -Wno-unused-function -DBLAS_BLIS -o "$DIR/blas-blis" \
	"$HERE/kernels/blas.c" -lblis -lm 2>"$DIR/blis.log"; then
	say "no BLIS (libblis-dev): OpenBLAS is the only BLAS baseline. Run 'make bench-deps' as root."
	rm -f "$DIR/blas-blis"
fi
$CC -O2 -Wall -o "$DIR/onednn" "$HERE/kernels/onednn.c" -ldnnl
# shellcheck disable=SC2086 # the flags are word-split on purpose
if ! $CC $DRV_CFLAGS $BLAS_CFLAGS -DKERNEL=none -c -o "$DIR/driver-check.o" "$HERE/kernels/driver.c"; then
	say "cannot compile the driver: OpenBLAS and oneDNN headers missing? Run 'make bench-deps' as root."
	exit 1
fi
rm -f "$DIR/driver-check.o"
command -v sqlite3 >/dev/null || say "no sqlite3: every workload is tuned from scratch (make deps installs it)"

say "peak: FMA throughput, threads $THREADS"
# shellcheck disable=SC2086
locked "$DIR/peak" $THREADS >"$DIR/peak.tsv"

# ---- the library candidates -------------------------------------------------
cpuinfo() { sed -n "s/^$1[[:space:]]*: //p" /proc/cpuinfo 2>/dev/null | head -1; }
FLAGS=" $(cpuinfo flags) "
has() {
	for f in "$@"; do
		case $FLAGS in *" $f "*) ;; *) return 1 ;; esac
	done
}
# What the flags allow: OpenBLAS core types, BLIS configurations, and the
# best ISA oneDNN can use (its ONEDNN_MAX_CPU_ISA names).
CORETYPES= BLISCONF= BEST_ISA=sse41
has avx && CORETYPES="Sandybridge" BEST_ISA=avx
if has avx2 fma; then
	CORETYPES="$CORETYPES Haswell Zen" BLISCONF="haswell" BEST_ISA=avx2
	[ "$(cpuinfo vendor_id)" = AuthenticAMD ] && BLISCONF="$BLISCONF zen3"
fi
if has avx512f avx512bw avx512vl avx512dq; then
	CORETYPES="$CORETYPES SkylakeX" BLISCONF="$BLISCONF skx" BEST_ISA=avx512_core
	has avx512_vnni && BEST_ISA=avx512_core_vnni
	has avx512_bf16 && CORETYPES="$CORETYPES Cooperlake" BEST_ISA=avx512_core_bf16
	has amx_tile amx_bf16 amx_int8 && CORETYPES="$CORETYPES SapphireRapids" BEST_ISA=avx512_core_amx
fi
# One candidate a line: id, program (openblas or blis), dflt (1: runs as
# the environment has it), and the env(1) arguments of its command.
UNSET="-u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE"
CANDS=$DIR/candidates.tsv
{
	printf 'env\topenblas\t1\t\n'
	# with neither variable set, "auto" would be "env" again
	[ -n "${OPENBLAS_CORETYPE+x}${OPENBLAS_L2_SIZE+x}" ] &&
		printf 'auto\topenblas\t0\t%s\n' "$UNSET"
	for c in $CORETYPES; do
		printf '%s\topenblas\t0\t%s OPENBLAS_CORETYPE=%s\n' "$c" "$UNSET" "$c"
	done
	if [ -x "$DIR/blas-blis" ]; then
		printf 'blis\tblis\t0\t\n'
		for c in $BLISCONF; do
			id=$("$DIR/blas-blis" -l | awk -F'\t' -v c="$c" '$2 == c { print $1 }')
			[ -n "$id" ] && printf 'blis-%s\tblis\t0\tBLIS_ARCH_TYPE=%s\n' "$c" "$id"
		done
	fi
} >"$CANDS"
say "library candidates: $(cut -f1 "$CANDS" | tr '\n' ' ')"

# Time every candidate on BLAS workload $1 at $2 threads, SWEEPS sweeps in
# alternating order, into $3 (select.awk's input), and select into $4.
time_candidates() {
	: >"$3"

	sweep=1
	while [ $sweep -le "$SWEEPS" ]; do
		if [ $((sweep % 2)) -eq 1 ]; then cat "$CANDS"; else sed -n '1!G;h;$p' "$CANDS"; fi |
		while IFS='	' read -r id prog dflt envargs; do
			# shellcheck disable=SC2086 # envargs are words for env(1)
			out=$(locked env $envargs "$DIR/blas-$prog" -r 3 "$1" "$2" 2>>"$DIR/blas.err") ||
				[ $? -eq 1 ] || out="$prog	?	?	wrong	-	-"
			printf '%s\t%s\t%s\n' "$id" "$dflt" "$out"
		done >>"$3"
		sweep=$((sweep + 1))
	done
	awk -f "$HERE/kernels/select.awk" "$3" >"$4"
}

# oneDNN: the ISA it dispatches with the caps unset, against the flags
ONEDNN_UNSET="-u ONEDNN_MAX_CPU_ISA -u DNNL_MAX_CPU_ISA"
# shellcheck disable=SC2086
ONEDNN=$(env $ONEDNN_UNSET "$DIR/onednn")
ONEDNN_ISA=$(echo "$ONEDNN" | cut -f3)
ONEDNN_NOTE=
[ "$ONEDNN_ISA" = "$BEST_ISA" ] ||
	ONEDNN_NOTE="oneDNN dispatches $ONEDNN_ISA, below the CPU's best $BEST_ISA"
ONEDNN_ENV=$(env | sed -n 's/^\(ONEDNN_MAX_CPU_ISA\|DNNL_MAX_CPU_ISA\)=/&/p' | tr '\n' ' ')

# ---- tune, export, build, time --------------------------------------------
RES=$DIR/results.tsv
printf 'task\tthreads\tstatus\ttk_gflops\tlib_gflops\tlib_reorder_gflops\tpeak_gflops\ttune_s\tlibrary\ttk_reorder_gflops\ttrials\tbaseline\tflops\n' >"$RES"

# The best exported kernel of task $1 for target $2 into $3: prints
# "TASKKEY<tab>HW<tab>NAME", or nothing when the store has no valid record.
export_best() {
	"$TK" export -q --db "$DB" --target "$2" --task "$1" --out "$3" 2>/dev/null |
		awk -F'\t' 'NR == 2 { print $2 "\t" $4 "\t" $5 }' || true
}

# sqlite3 on the store, or nothing without it
sq() {
	if command -v sqlite3 >/dev/null && [ -f "$DB" ]; then
		sqlite3 "$DB" "$1"
	fi
}

# Configurations of task $1 measured on hardware $2 (tune's confirmation
# measures some again; those count once), and the seconds of the runs that
# measured them.
meas_of() {
	echo "FROM measurement m JOIN config c ON c.id = m.config_id
	      JOIN task t ON t.id = c.task_id WHERE t.key = '$1' AND m.hardware_id = $2"
}
records() { sq "SELECT count(DISTINCT m.config_id) $(meas_of "$1" "$2")"; }
tune_seconds() {
	sq "SELECT printf('%.0f', coalesce(sum(ended - started), 0)) FROM run WHERE id IN
	    (SELECT DISTINCT m.run_id $(meas_of "$1" "$2"))"
}

# Tune task $1 for target $2: $3 trials, seed $4. With BENCH_TRANSFER=1 the
# xgb model starts from a base model trained on the store's records of the
# same operator on the same target (AutoTVM's transfer learning, as its
# tune_relay tutorials tune a network's tasks one after another), or, with
# $5, on that hardware ID: the first thread count's, whose records of the
# same workloads tell the later thread counts where the good tiles are. A
# workload without such history (the first of its operator, or a loop nest
# whose features differ in length, as 1x1 against 3x3) is tuned without it.
tune_one() {
	from=${5:+--transfer-hardware $5}
	set -- -q --db "$DB" --target "$2" --task "$1" --trials "$3" --seed "$4"
	if [ "$TRANSFER" = 1 ] && [ -f "$DB" ]; then
		# shellcheck disable=SC2086 # $from is two words or none
		"$TK" tune "$@" --transfer-from "$DB" $from >/dev/null 2>"$DIR/tune.err" &&
			return 0
		grep -q 'too little history' "$DIR/tune.err" || return 1
	fi
	"$TK" tune "$@" >/dev/null 2>"$DIR/tune.err"
}

# Tune workload $1 for target $2 to $3 configurations measured (seed: the
# count so far plus one; $4: tune_one's hardware to learn from): sets best
# (export_best's line for it, empty without a valid record; the kernel in
# $DIR/export.tmp) and n (the configurations measured before).
top_up() {
	rm -rf "$DIR/export.tmp"
	best=$(export_best "$1" "$2" "$DIR/export.tmp")
	n=0
	[ -n "$best" ] && n=$(records "$(echo "$best" | cut -f1)" "$(echo "$best" | cut -f2)")
	n=${n:-0}
	if [ "$n" -lt "$3" ]; then
		say "$1, $T thread(s): tuning $(($3 - n)) trials ($n in the store)"
		tune_one "$1" "$2" $(($3 - n)) $((n + 1)) "$4" ||
			say "$1, $T thread(s): tune failed: $(cat "$DIR/tune.err")"
		rm -rf "$DIR/export.tmp"
		best=$(export_best "$1" "$2" "$DIR/export.tmp")
	else
		say "$1, $T thread(s): $n configurations in the store, not tuned again"
	fi
}

# A results row for a workload without timings: task $1, threads $2, status
# $3, tuning seconds $4, trials $5 (peak from the loop).
fail_row() {
	printf '%s\t%s\t%s\t-\t-\t-\t%s\t%s\t-\t-\t%s\t-\t-\n' "$1" "$2" "$3" "$peak" "$4" "$5" >>"$RES"
}

first_t=${THREADS%% *} first_hw=
for T in $THREADS; do
	target=cpu:threads=$T
	# the best of the peak's rounds: a kernel cannot beat it
	peak=$(awk -F'\t' -v t="$T" '$1 == t { print $5 }' "$DIR/peak.tsv")
	for W in $WORKLOADS; do
		tmp=$DIR/export.tmp
		case $W in layout_transform:*)
			# a reorder has no library side: tuned (at most 64 trials),
			# and its best median from the store, as the network
			# estimate takes it
			top_up "$W" "$target" $((TRIALS < 64 ? TRIALS : 64)) ""
			rm -rf "$tmp"
			if [ -z "$best" ]; then
				fail_row "$W" "$T" "no kernel" - "$n"
				continue
			fi
			key=$(echo "$best" | cut -f1) hw=$(echo "$best" | cut -f2)
			"$TK" report -q --db "$DB" --hardware "$hw" best --format tsv 2>/dev/null |
				awk -F'\t' -v k="$key" -v t="$T" -v p="$peak" -v n="$(records "$key" "$hw")" '
					$2 == k { printf "%s\t%s\tro\t-\t-\t-\t%s\t-\t-\t-\t%s\t-\t%s\n", k, t, p, n, $5 }' >>"$RES"
			continue ;;
		esac
		top_up "$W" "$target" "$TRIALS" "$first_hw"
		if [ -z "$best" ]; then
			fail_row "$W" "$T" "no kernel" - "$n"
			continue
		fi
		key=$(echo "$best" | cut -f1) hw=$(echo "$best" | cut -f2) name=$(echo "$best" | cut -f3)
		[ "$T" = "$first_t" ] && first_hw=$hw
		secs=$(tune_seconds "$key" "$hw" || true)
		n=$(records "$key" "$hw" || true)
		n=${n:--}
		kdir=$DIR/t$T/$name
		rm -rf "$kdir"
		mkdir -p "$DIR/t$T"
		mv "$tmp" "$kdir"
		# the library and its setting: the fastest correct candidate for
		# BLAS workloads; OpenBLAS is linked for the others, unused
		lib_cflags="$BLAS_CFLAGS" lib_libs="$BLAS_LIBS" runenv=$ONEDNN_UNSET note=
		case $key in
		dense:* | batch_matmul:*)
			say "$key, $T thread(s): timing the library candidates"
			time_candidates "$key" "$T" "$kdir/candidates.tsv" "$kdir/select.tsv"
			best_id=$(awk -F'\t' '$1 == "best" { print $2 }' "$kdir/select.tsv")
			if [ "$best_id" = none ] || [ -z "$best_id" ]; then
				say "$key, $T thread(s): no library candidate computed it correctly"
				fail_row "$key" "$T" "no correct library" "${secs:--}" "$n"
				continue
			fi
			prog=$(awk -F'\t' -v id="$best_id" '$1 == id { print $2 }' "$CANDS")
			runenv=$(awk -F'\t' -v id="$best_id" '$1 == id { print $4 }' "$CANDS")
			[ "$prog" = blis ] && lib_cflags="-DBLAS_BLIS -Wno-unused-function" lib_libs=-lblis
			note=$(awk -F'\t' -v ncand="$(wc -l <"$CANDS")" '
				$1 == "best" { b = $3 " " $5; bs = $6; bid = $2 }
				$1 == "default" { d = $3 " " $5; ds = $6; did = $2 }
				$1 == "wrong" { w = w (w ? ", " : "") $2 }
				END {
					s = sprintf("fastest of %d candidates (%s)", ncand, bid)
					if (did != "" && did != bid && d != b)
						s = s sprintf("; as the environment runs it: %s, %s", d,
						              ds == "-" ? "wrong" : sprintf("%.2fx slower", ds / bs))
					if (w != "") s = s "; wrong, skipped: " w
					print s
				}' "$kdir/select.tsv")
			;;
		*) [ -n "$ONEDNN_NOTE" ] && note=$ONEDNN_NOTE ;;
		esac
		# shellcheck disable=SC2086
		if ! make -s -C "$kdir" "$name.o" >"$kdir/build.log" 2>&1 ||
		   ! $CC $DRV_CFLAGS $lib_cflags -DKERNEL="$name" -o "$kdir/driver" "$HERE/kernels/driver.c" \
			"$kdir/$name.o" $lib_libs $DRV_LIBS >>"$kdir/build.log" 2>&1; then
			say "$key, $T thread(s): build failed, see $kdir/build.log"
			fail_row "$key" "$T" "build failed" "${secs:--}" "$n"
			continue
		fi
		say "$key, $T thread(s): timing $name against the library"
		st=0
		# shellcheck disable=SC2086 # runenv are words for env(1)
		locked env $runenv "$kdir/driver" -r "$ROUNDS" "$key" "$T" >"$kdir/driver.out" || st=$?
		if [ $st -eq 0 ]; then
			grep -v '^#' "$kdir/driver.out" | awk -F'\t' -v p="$peak" -v s="${secs:--}" -v n="$n" \
				-v note="${note:--}" \
				'NR == 2 { print $1 "\t" $2 "\tok\t" $7 "\t" $8 "\t" \
				           ($6 == "-" ? "-" : sprintf("%.2f", $3 / $6 * 1e-9)) "\t" \
				           ($12 > 0 ? $12 : p) "\t" s "\t" $10 "\t" \
				           ($11 == "-" ? "-" : sprintf("%.2f", $3 / $11 * 1e-9)) "\t" n "\t" note "\t" $3 }' >>"$RES"
		else
			sed -n 's/^# check: //p' "$kdir/driver.out" >&2
			fail_row "$key" "$T" "$([ $st -eq 1 ] && echo wrong || echo 'driver failed')" \
				"${secs:--}" "$n"
		fi
	done
done

# ---- the table ------------------------------------------------------------
# The machine, for the table: the figures hold for this CPU only.
machine="$(cpuinfo 'model name'), family $(cpuinfo 'cpu family') model $(cpuinfo model),\
 $(getconf _NPROCESSORS_ONLN) CPUs, $($CC --version 2>/dev/null | head -1)"
# The libraries' versions, from their own calls
libver() { env -u OPENBLAS_CORETYPE "$DIR/blas-$1" -r 1 -m 0 dense:m=8,n=8,k=8 1 2>/dev/null | cut -f2; }
versions="OpenBLAS $(libver openblas)"
[ -x "$DIR/blas-blis" ] && versions="$versions, BLIS $(libver blis)"
versions="$versions, oneDNN $(echo "$ONEDNN" | cut -f2) (dispatching $ONEDNN_ISA;\
 the CPU's best: $BEST_ISA)"
envnote="$(env | grep -E '^(OPENBLAS_CORETYPE|OPENBLAS_L2_SIZE|BLIS_ARCH_TYPE)=' | tr '\n' ' ')$ONEDNN_ENV"
awk -F'\t' -v trials="$TRIALS" -v rounds="$ROUNDS" -v peakfile="$DIR/peak.tsv" \
	-v machine="$machine" -v versions="$versions" -v envnote="$envnote" -v sweeps="$SWEEPS" '
function group(task,   a, m, n, k) {
	if (task ~ /^depthwise_conv2d(_nchwc)?:/) return "MobileNet-V2 depthwise"
	if (task ~ /^conv2d(_nchwc)?:/) return "ResNet-18 conv"
	if (task ~ /^batch_matmul:/) return "BERT"
	if (task ~ /^dense:/) {
		m = task; sub(/.*[:,]m=/, "", m); sub(/,.*/, "", m)
		n = task; sub(/.*[:,]n=/, "", n); sub(/,.*/, "", n)
		k = task; sub(/.*[:,]k=/, "", k); sub(/,.*/, "", k)
		return (m == n && n == k) ? "GEMM" : "BERT"
	}
	return "other"
}
NR == 1 { next }
{
	row++
	task[row] = $1; thr[row] = $2; st[row] = $3; tk[row] = $4; lib[row] = $5
	ro[row] = $6; pk[row] = $7; ts[row] = $8; libname[row] = $9; tro[row] = $10; ntr[row] = $11
	base[row] = $12; flops[row] = $13
	g = group($1)
	if ($3 == "ok") {
		key = g SUBSEP $2
		if (!(key in n)) { gorder[++ng] = key }
		n[key]++
		lr[key] += log($4 / $5); lt[key] += log($4); ll[key] += log($5)
		lp[key] += log($4 / $7)
		if (g == "GEMM" && $1 ~ /(^|[:,])m=1024(,|$)/ && $1 ~ /[:,]n=1024(,|$)/ &&
		    $1 ~ /[:,]k=1024(,|$)/) {
			gemm1024[$2] = $4 / $5
			if ($2 == 1 && $5 / $7 < 0.6)
				flag[++nflag] = sprintf("%s, 1 thread: baseline below 60%% of peak " \
				    "(%.3f): check its configuration", $1, $5 / $7)
		}
		if ($5 / $7 > 1 || $4 / $7 > 1)
			flag[++nflag] = sprintf("%s, %s thread(s): ratio to peak above 1.0 " \
			    "(tunekit %.3f, library %.3f): a peak-measurement problem", $1, $2,
			    $4 / $7, $5 / $7)
	}
	if (!($2 in seenthr)) { seenthr[$2] = 1; thrs[++nthr] = $2 }
	if ($8 != "-") tunetot += $8
}
END {
	while ((getline line < peakfile) > 0) {
		split(line, f, "\t")
		if (line ~ /^# FP32 peak: /) peakdesc = substr(line, 14)
		else if (f[1] ~ /^[0-9]+$/) peaks = peaks sprintf(", %s thread%s %s GFLOPS", f[1],
		                                                   f[1] > 1 ? "s" : "", f[5])
	}
	sub(/, median$/, "", peakdesc)
	printf "Kernels against the libraries: tunekit (xgb+sa, at least %d trials per workload and\n", trials
	printf "thread count: the configurations measured, column trials)\n"
	printf "vs cblas_sgemm of the BLAS baseline below (dense; batch_matmul as a loop of sgemm) and\n"
	printf "oneDNN (convolutions,\n"
	printf "formats chosen by oneDNN, reorders outside the timed region; lib+ro: src/dst reorders timed\n"
	printf "too; tk+ro: the same for the _nchwc kernels, src blocked and dst unblocked in the\n"
	printf "timed region, weights blocked beforehand). Median of %d interleaved rounds;\n", rounds
	printf "GFLOPS = nominal FLOPs / median time.\n"
	printf "BLAS baseline: the fastest correct of the OpenBLAS core types and BLIS configurations\n"
	printf "this CPU runs (median of %d interleaved sweeps, each checked against a float64\n", sweeps
	printf "reference); the variables set only in the benchmark commands.\n"
	printf "Machine: %s\n", machine
	printf "Libraries: %s\n", versions
	if (envnote != "") printf "Environment (left as it is): %s\n", envnote
	printf "FP32 peak, the best of its rounds: %s (%s; peak.c on its own). The peak column\n", substr(peaks, 3), peakdesc
	printf "is the same FMA loop timed in each driver run as one more interleaved side, so that\n"
	printf "a busy machine slows it as it slows the kernels; its best round.\n\n"
	printf "%-72s %3s %8s %8s %8s %8s %7s %7s %7s %8s %6s %7s  %s\n", "workload", "thr", "tunekit",
	       "lib", "tk+ro", "lib+ro", "peak", "tk/lib", "tk/peak", "lib/peak", "trials", "tune s",
	       "library implementation"
	for (i = 1; i <= row; i++) {
		if (st[i] == "ok")
			printf "%-72s %3s %8.1f %8.1f %8s %8s %7.1f %7.2f %7.3f %8.3f %6s %7s  %s%s\n", task[i],
			       thr[i], tk[i], lib[i], tro[i] == "-" ? "-" : sprintf("%.1f", tro[i]),
			       ro[i] == "-" ? "-" : sprintf("%.1f", ro[i]), pk[i],
			       tk[i] / lib[i], tk[i] / pk[i], lib[i] / pk[i], ntr[i], ts[i], libname[i],
			       base[i] == "-" || base[i] == "" ? "" : " [" base[i] "]"
		else if (st[i] == "ro")
			printf "%-72s %3s %8s %8s %8s %8s %7.1f %7s %7s %8s %6s %7s  %s\n", task[i], thr[i],
			       "-", "-", "-", "-", pk[i], "-", "-", "-", ntr[i], ts[i],
			       sprintf("tunekit reorder, %.3f ms (no library side)", flops[i] * 1e3)
		else
			printf "%-72s %3s %8s %8s %8s %8s %7.1f %7s %7s %8s %6s %7s  %s\n", task[i], thr[i],
			       "-", "-", "-", "-", pk[i], "-", "-", "-", ntr[i], ts[i], toupper(st[i])
	}
	if (nflag) {
		printf "\nsanity guards:\n"
		for (i = 1; i <= nflag; i++) printf "  FLAG: %s\n", flag[i]
	}
	printf "\ntuning wall time, all rows: %d s\n", tunetot
	printf "\n%-28s %3s %3s %8s %8s %7s %7s\n", "geometric means", "thr", "n", "tunekit",
	       "lib", "tk/lib", "tk/peak"
	for (i = 1; i <= ng; i++) {
		key = gorder[i]; split(key, kk, SUBSEP)
		printf "%-28s %3s %3d %8.1f %8.1f %7.2f %7.3f\n", kk[1], kk[2], n[key],
		       exp(lt[key] / n[key]), exp(ll[key] / n[key]), exp(lr[key] / n[key]),
		       exp(lp[key] / n[key])
	}
	full["GEMM"] = 4; full["BERT"] = 4; full["ResNet-18 conv"] = 11
	full["MobileNet-V2 depthwise"] = 10
	printf "\n%-44s %3s %8s %7s  %s\n", "target (issue 4)", "thr", "measured", "needed", "result"
	for (t = 1; t <= nthr; t++) {
		th = thrs[t]
		target("GEMM 1024^3 vs OpenBLAS", th, (th in gemm1024) ? gemm1024[th] : "", 0.85, "")
		tgt("BERT shapes, geomean vs OpenBLAS", "BERT", th, 1.0)
		tgt("ResNet-18 convolutions, geomean vs oneDNN", "ResNet-18 conv", th, 1.0)
		tgt("MobileNet-V2 depthwise, geomean vs oneDNN", "MobileNet-V2 depthwise", th, 1.0)
	}
}
function tgt(what, g, th, need,   key) {
	key = g SUBSEP th
	if (!(key in n))
		target(what, th, "", need, "")
	else
		target(what, th, exp(lr[key] / n[key]), need,
		       n[key] < full[g] ? sprintf(" [%d of %d workloads]", n[key], full[g]) : "")
}
function target(what, th, got, need, note,   verdict) {
	if (got == "") {
		printf "%-44s %3s %8s %7.2f  %s\n", what, th, "-", need, "not run"
		return
	}
	# three decimals: two can print a miss as "1.00 ... short by 0.00"
	verdict = got >= need ? "pass" : \
		sprintf("FAIL, short by %.3f (needs %.3fx faster)", need - got, need / got)
	printf "%-44s %3s %8.3f %7.2f  %s%s\n", what, th, got, need, verdict, note
}
' "$RES" | tee "$DIR/table.txt"

# ---- networks end to end ------------------------------------------------------
# Each network's convolutions (and a blocked variant's reorders), the sum of
# weight x median time, in each layout, against oneDNN per layer from NCHW
# to NCHW with its reorders (lib+ro) and its kernels alone (lib)
# (tests/bench/kernels/network.awk); the target compares the faster layout,
# the one tune --layout auto would choose.
if [ -n "$NETWORKS" ]; then
	{
		printf '\n%-16s %-8s %3s %7s %10s %8s %10s %7s %10s %7s\n' "network" "layout" "thr" \
			"layers" "tunekit ms" "reorders" "lib+ro ms" "ratio" "lib ms" "ratio"
		for T in $THREADS; do
			for N in $NETWORKS; do
				for L in nchw blocked; do
					awk -F'\t' -v net="$N" -v layout="$L" -v thr="$T" \
						-f "$HERE/kernels/network.awk" "$DIR/net-$N-$L.tsv" "$RES"
				done
			done
		done
		echo "(convolutions and reorders only; ratio: oneDNN's sum over tunekit's, above 1 tunekit is faster)"
	} | tee "$DIR/networks.txt" | tee -a "$DIR/table.txt"
	awk '$1 == "resnet-18" && $5 != "-" {
		k = $3; if (!(k in best) || $5 < best[k]) { best[k] = $5; r[k] = $8; lay[k] = $2 } }
	     END { for (k in best) printf "%-44s %3s %8.3f %7.2f  %s [%s]\n",
	           "ResNet-18 end to end vs oneDNN per layer", k, r[k], 1.0,
	           (r[k] >= 1 ? "pass" : sprintf("FAIL, short by %.3f", 1 - r[k])), lay[k] }' \
		"$DIR/networks.txt" | tee -a "$DIR/table.txt"
fi

# ---- where the tuning time went ---------------------------------------------
# tune logs its split per run (see tunekit-report(1), report runs); summed
# over the runs that made this table's records
split=$(sq "SELECT count(DISTINCT run_id),
	printf('%.0f', sum(CASE WHEN key = 'seconds:search' THEN value END)),
	printf('%.0f', sum(CASE WHEN key = 'seconds:fit' THEN value END)),
	printf('%.0f', sum(CASE WHEN key IN ('seconds:codegen', 'seconds:compile') THEN value END)),
	printf('%.0f', sum(CASE WHEN key = 'seconds:run' THEN value END)),
	printf('%.0f', sum(CASE WHEN key = 'kernels:compiled' THEN value END)),
	printf('%.0f', sum(CASE WHEN key = 'kernels:cached' THEN value END))
	FROM run_log WHERE key LIKE 'seconds:%' OR key LIKE 'kernels:%'" | tr '|' ' ')
if [ -n "$split" ]; then
	echo "$split" | awk '$1 > 0 {
		tot = $2 + $3 + $4 + $5
		printf "\ntuning time split over the %d tune runs in the store that logged it: %d s;\n", $1, tot
		printf "search %.0f%%, model fits %.0f%%, code generation and compilation %.0f%%, running %.0f%%;\n",
		       100 * $2 / tot, 100 * $3 / tot, 100 * $4 / tot, 100 * $5 / tot
		printf "%d kernels compiled, %d found in the build cache (hit rate %.1f%%)\n", $6, $7,
		       100 * $7 / ($6 + $7)
	}' | tee -a "$DIR/table.txt"
fi

# ---- the noise floor ----------------------------------------------------------
if [ -n "$NOISE" ] && command -v sqlite3 >/dev/null; then
	set -- $THREADS
	printf '\nnoise floor: the same configurations measured twice (tests/bench/noise.sh)\n' |
		tee -a "$DIR/table.txt"
	# shellcheck disable=SC2086 # the task list is word-split on purpose
	BENCH_LOCK=$LOCK sh "$HERE/noise.sh" "$TK" "$DB" "cpu:threads=$1" "$DIR" $NOISE |
		tee -a "$DIR/table.txt"
fi
