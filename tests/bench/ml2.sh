#!/bin/sh
# ML2Tuner against AutoTVM's xgb and its own ablations (make bench-ml2; not
# a test). For each task and seed, four tuning runs with the same budget,
# batch and refit every batch, one after the other:
#   xgb     P alone (TVM's way: invalid records are throughput 0 in P)
#   P+V     ml2 --ml2-stages V: V filters P's plan, nothing compiled
#   P+A     ml2 --ml2-stages A: A picks among (alpha+1) x batch of P's plan
#   P+V+A   ml2, the whole method
# Every model regresses (--objective reg: the paper's choice for P and A,
# and what makes A's and P's errors comparable).
# Tasks: ResNet-18's distinct conv2d layers but the first (3 input
# channels) on vta-sim:preset=zcu102 (SIMULATED: the cycle model of
# lib/vta), a few CPU tasks measured for real on this machine, and
# replayed (tune --replay: nothing compiled or run) Kernel Tuner's
# exhaustively measured GPU spaces with failed configurations: of those in
# $TUNEKIT_KT_DATA (default /work/shared/data/kernel_tuner), the two that
# have any, convolution_A100 and convolution_A4000 (161 of their 4362
# measured configurations failed, CompilationFailedConfig or
# RuntimeFailedConfig; the gemm and MI250X files have none). The imported
# space is the Cartesian one, 10240 configurations; the 5878 that break
# the kernel's restrictions were never run and replay as invalid ("absent
# from the replay dataset"). A replay has no hidden features, so A is P
# there: P+A is ML2Tuner's P alone (trained on valid records only) and
# P+V+A is P+V with P re-ranking (alpha+1) x batch candidates.
# ML2_PARTS chooses the parts to run (default "vta-sim cpu kt"); the rows
# of the parts not run are kept from the last runs.tsv.
# Prints, per target and method:
#   samples  mean over task x seed of the trials a run needed to reach the
#            best latency the xgb run found (within 0.5%), over the trials
#            xgb needed; runs that never reached it count as the budget
#            (and are counted in "reached")
#   invalid  invalid configurations measured, in all, and the change
#            against xgb
#   failed   those of them that failed otherwise than as an invalid
#            configuration: compile errors, crashes, wrong answers,
#            timeouts (on kt, Kernel Tuner's failed configurations; the
#            rest of kt's invalid ones break its restrictions)
#   best     geometric mean of xgb's best latency over the run's
#   rmse A/P the held-out RMSE of A over that of P (P+V+A runs: the valid
#            records of each batch, predicted before the refit that
#            learns them; tune's run log)
# usage: ml2.sh TUNEKIT WORKDIR [SEEDS [VTA_TRIALS [CPU_TRIALS [CPU_SEEDS
#        [KT_TRIALS [KT_SEEDS]]]]]]
set -e
TK=$1 DIR=$2 SEEDS=${3:-3} VT=${4:-60} CT=${5:-30} CSEEDS=${6:-2} KTT=${7:-300} KSEEDS=${8:-10}
PARTS=${ML2_PARTS:-vta-sim cpu kt}
KT=${TUNEKIT_KT_DATA:-/work/shared/data/kernel_tuner}
KTFILES="convolution_A100 convolution_A4000"
KTASK=kt:convolution_kernel:4096x4096
TOPDIR=$(cd "$(dirname "$0")/../.." && pwd)
VTA=vta-sim:preset=zcu102
VTASKS=${ML2_VTA_TASKS:-$(awk -F'\t' 'NR > 1 && $2 ~ /^conv2d/ && $2 !~ /c=3,/ { print $2 }' \
	"$TOPDIR/data/networks/resnet-18.tsv")}
CTASKS=${ML2_CPU_TASKS:-"dense:m=64,n=64,k=64
conv2d:c=32,h=14,w=14,k=32,pad=1"}
METHODS="xgb P+V P+A P+V+A"
COMMON="-q --batch 10 --plan-size 10 --objective reg --confirm 0"
mkdir -p "$DIR"
part() {
	case " $PARTS " in *" $1 "*) return 0 ;; esac
	return 1
}
if [ -z "${ML2_TABLE_ONLY:-}" ]; then # ML2_TABLE_ONLY=1: the table of the last runs.tsv
# the rows of the parts run again go; the others stay
touch "$DIR/runs.tsv"
for g in $PARTS; do
	case $g in
	vta-sim|cpu) rm -f "$DIR/$g.db" ;;
	kt) rm -f "$DIR"/kt-*.db "$DIR/kt-data.db" ;;
	*) echo "ml2.sh: unknown part '$g' (vta-sim, cpu, kt)" >&2; exit 2 ;;
	esac
	awk -F'\t' -v g="$g" '$1 != g && !(g == "kt" && $1 ~ /^kt-/)' "$DIR/runs.tsv" >"$DIR/runs.tmp"
	mv "$DIR/runs.tmp" "$DIR/runs.tsv"
done
export TUNEKIT_CACHE="$DIR/cache"

flags() {
	case $1 in
	xgb) echo "--model xgb" ;;
	P+V) echo "--model ml2 --ml2-stages V" ;;
	P+A) echo "--model ml2 --ml2-stages A --alpha 1" ;;
	P+V+A) echo "--model ml2 --ml2-stages VA --alpha 1" ;;
	esac
}

# run GROUP TARGET TRIALS TASK SEED METHOD: one tuning run (TARGET: a
# --target, or replay:HARDWARE to replay kt-data.db); appends to runs.tsv:
# group task seed method trials invalid best latencies sse_p sse_a n failed
run_one() {
	g=$1 tg=$2 n=$3 task=$4 seed=$5 m=$6
	db=$DIR/$g.db
	case $tg in
	replay:*) set -- --replay "$DIR/kt-data.db" --replay-hardware "${tg#replay:}" --feature knob ;;
	*) set -- --target "$tg" ;;
	esac
	# shellcheck disable=SC2046
	"$TK" tune --db "$db" "$@" --task "$task" --trials "$n" --seed "$seed" \
		$COMMON $(flags "$m") >"$DIR/out.tsv"
	run=$(sqlite3 "$db" "SELECT MAX(id) FROM run")
	sse=$(sqlite3 -separator ' ' "$db" "SELECT
		COALESCE(SUM(CASE WHEN key LIKE 'ml2_sse_p:%' THEN value END), 0),
		COALESCE(SUM(CASE WHEN key LIKE 'ml2_sse_a:%' THEN value END), 0),
		COALESCE(SUM(CASE WHEN key LIKE 'ml2_heldout:%' THEN value END), 0)
		FROM run_log WHERE run_id = $run")
	awk -F'\t' -v g="$g" -v task="$task" -v seed="$seed" -v m="$m" -v sse="$sse" '
		NR > 1 { n++; if ($7 != 1) inv++; else if (best == 0 || $9 < best) best = $9
			 if ($7 != 1 && $8 != "invalid config") failed++
			 lat[n] = ($7 == 1) ? $9 : -1 }
		END { printf "%s\t%s\t%s\t%s\t%d\t%d\t%.9g", g, task, seed, m, n, inv, best
		      for (i = 1; i <= n; i++) printf "%s%.9g", (i == 1 ? "\t" : ","), lat[i]
		      split(sse, s, " "); printf "\t%s\t%s\t%s\t%d\n", s[1], s[2], s[3], failed }' \
		"$DIR/out.tsv" >>"$DIR/runs.tsv"
}

echo "# ML2Tuner bench ($PARTS): seeds $SEEDS (vta-sim), $CSEEDS (cpu), $KSEEDS (kt);" \
	"trials $VT (vta-sim), $CT (cpu), $KTT (kt)" >&2
part vta-sim && for task in $VTASKS; do
	for s in $(seq 1 "$SEEDS"); do
		for m in $METHODS; do
			run_one vta-sim "$VTA" "$VT" "$task" "$s" "$m"
		done
	done
	echo "# done $task" >&2
done
part cpu && for task in $CTASKS; do
	for s in $(seq 1 "$CSEEDS"); do
		for m in $METHODS; do
			run_one cpu native "$CT" "$task" "$s" "$m"
		done
	done
	echo "# done $task" >&2
done
if part kt; then
	if ! [ -r "$KT/convolution_A100.json.gz" ]; then
		echo "ml2.sh: no Kernel Tuner data in $KT (set TUNEKIT_KT_DATA): kt skipped" >&2
	else
		for f in $KTFILES; do
			"$TK" import --db "$DIR/kt-data.db" kernel-tuner "$KT/$f.json.gz" >/dev/null
		done
		for f in $KTFILES; do
			case $f in
			*_A100) hw="kt:NVIDIA A100-PCIE-40GB" ;;
			*_A4000) hw="kt:NVIDIA RTX A4000" ;;
			esac
			for s in $(seq 1 "$KSEEDS"); do
				for m in $METHODS; do
					run_one "kt-${f#convolution_}" "replay:$hw" "$KTT" "$KTASK" "$s" "$m"
				done
			done
			echo "# done $f ($hw)" >&2
		done
	fi
fi
fi

# The table: per group and method. Columns of runs.tsv: 1 group, 2 task,
# 3 seed, 4 method, 5 trials, 6 invalid, 7 best, 8 latencies, 9 sse_p,
# 10 sse_a, 11 held-out rows, 12 failed (absent from runs made before it).
awk -F'\t' '
function reach(lats, target, n,    a, i, b, k) {
	k = split(lats, a, ",")
	b = 0
	for (i = 1; i <= k; i++) {
		if (a[i] > 0 && (b == 0 || a[i] < b)) b = a[i]
		if (b > 0 && b <= target * 1.005) return i
	}
	return -1
}
{ key = $1 SUBSEP $2 SUBSEP $3; row[key, $4] = $0; keys[key] = 1
  if (!($1 in grp)) { grp[$1] = 1; G[++ng] = $1 } }
END {
	nm = split("xgb P+V P+A P+V+A", M, " ")
	printf "%-8s %-6s %8s %8s %8s %9s %7s %8s %9s\n", "target", "method", "samples", "reached", \
		"invalid", "vs_xgb", "failed", "best", "rmse_A/P"
	for (gi = 1; gi <= ng; gi++) for (j = 1; j <= nm; j++) {
		g = G[gi]
		m = M[j]; sr = 0; nr = 0; nk = 0; inv = 0; invb = 0; lg = 0; sp = 0; sa = 0; nh = 0
		fl = 0; nf = 0
		for (key in keys) {
			split(key, kk, SUBSEP); if (kk[1] != g) continue
			if (!((key, "xgb") in row) || !((key, m) in row)) continue
			split(row[key, "xgb"], b, "\t"); split(row[key, m], r, "\t")
			tb = reach(b[8], b[7], 0); tm = reach(r[8], b[7], 0)
			nk++
			if (tm > 0) nr++; else tm = r[5]
			if (tb > 0) sr += tm / tb
			inv += r[6]; invb += b[6]
			if (r[7] > 0 && b[7] > 0) lg += log(b[7] / r[7])
			sp += r[9]; sa += r[10]; nh += r[11]
			if (r[12] != "") { fl += r[12]; nf++ }
		}
		if (nk == 0) continue
		rm = (m == "P+V+A" && sp > 0) ? sprintf("%.3f", sqrt(sa / sp)) : "-"
		printf "%-8s %-6s %7.1f%% %4d/%-3d %8d %+8.1f%% %7s %8.3f %9s\n", g, m, 100 * sr / nk, \
			nr, nk, inv, (invb > 0 ? 100 * (inv / invb - 1) : 0), \
			(nf == nk ? sprintf("%d", fl) : "-"), exp(lg / nk), rm
	}
	printf "paper    P+V+A     12.3%%        -        -    -60.8%%       -        -     0.919\n"
}' "$DIR/runs.tsv"
