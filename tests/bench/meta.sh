#!/bin/sh
# MetaTune against xgb and xgb with transfer learning (make bench-meta; not a
# test): the paper's Table 4, MSE and MSE(D) (the top 25%) of each model's
# predictions after n measurements of a task it has not seen.
#
# The meta model is meta-trained (`tunekit pretrain-meta`) on MetaTune's
# meta-training set (data/metatune, 47 convolution kernels x 200 random
# configurations on this CPU's native target); xgb-xfer's base model is xgb
# on the same records. Then tests/bench/meta_eval.c scores them, META_REPEATS
# draws of the n records each:
#   kernels   the last two kernels of each operator in data/metatune/tasks.tsv
#             (of those measured, where three are), left out of the
#             meta-training of a second model: n of
#             META_KERNEL_SHOTS (0 16 64 128) of their 200 records
#   networks  the convolutions of resnet-18, vgg-16, alexnet and
#             squeezenet-1.0 in the offline dataset (none is in the
#             meta-training set), on the same target: n of META_SHOTS (0 16
#             32), on tasks with at least n + 16 records
#   cross     the same convolutions on another ISA of the same CPU (avx2, or
#             sse2 where native is avx2), with the models of the native
#             target: the paper's cross-platform case at this machine's scale
#   resnet-random  resnet-18's 11 convolutions with 272 random records each
#             (data/metaeval, make metaeval-dataset), when META_EVAL_SET
#             (data/metaeval/build/metaeval.db) exists: n of META_EVAL_SHOTS
#             (0 16 64 256), the paper's Table 4 columns
# A task's score needs 16 records besides its n (meta_eval's MINTEST).
#
#   tests/bench/meta.sh TUNEKIT METATUNE.db DATASET.db WORKDIR [META_EVAL]
#
# One TSV on stdout: setting, group, method, n, tasks, mse, mse_d. The work
# directory keeps the store copies and the models: a second run only scores.
set -eu
TK=$1 SRC=$2 DATA=$3 OUT=$4
EVAL=${5:-build/bench/meta_eval}
REPEATS=${META_REPEATS:-3}
SHOTS=${META_SHOTS:-0 16 32}
KSHOTS=${META_KERNEL_SHOTS:-0 16 64 128}
EVALSET=${META_EVAL_SET:-data/metaeval/build/metaeval.db}
ESHOTS=${META_EVAL_SHOTS:-0 16 64 256}
NETS="resnet-18 vgg-16 alexnet squeezenet-1.0"
die() { echo "meta.sh: $*" >&2; exit 1; }
[ -r "$SRC" ] || die "no meta-training set at $SRC (make metatune-dataset)"
[ -r "$DATA" ] || die "no dataset at $DATA (make dataset, or META_DATASET=...)"
mkdir -p "$OUT"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs" >&2
sets="source:$SRC dataset:$DATA"
[ -r "$EVALSET" ] && sets="$sets metaeval:$EVALSET"
for s in $sets; do
	db=$OUT/${s%%:*}.db
	[ -e "$db" ] || sqlite3 "${s#*:}" ".backup '$db'"
	"$TK" extract-features -q --db "$db" --kind graph
	"$TK" extract-features -q --db "$db" --kind itervar
done

# hardware ids of the target keys in each store
key=$("$TK" help targets native)
case $key in
*'|avx2|'*) other=sse2 ;;
*) other=avx2 ;;
esac
okey=$("$TK" help targets "cpu:isa=$other")
hw() { "$TK" report --db "$1" --format tsv hardware | awk -F'\t' -v k="$2" 'NR > 1 && $7 == k { print $1 }'; }
src_hw=$(hw "$OUT/source.db" "$key")
same_hw=$(hw "$OUT/dataset.db" "$key")
cross_hw=$(hw "$OUT/dataset.db" "$okey")
[ -n "$src_hw" ] || die "the meta-training set has no records of $key"
echo "meta-training set: $(sqlite3 "$OUT/source.db" "SELECT COUNT(DISTINCT c.task_id), COUNT(*),
	SUM(m.valid) FROM measurement m JOIN config c ON c.id = m.config_id
	WHERE m.hardware_id = $src_hw" | tr '|' ' ') (kernels, records, valid) on $key" >&2

# The held-out kernels: the last two of each operator (in the build's
# order, tasks.tsv's), of the operators with at least three kernels measured.
held=$(sqlite3 "$OUT/source.db" "SELECT t.key FROM task t WHERE t.id IN (SELECT c.task_id
	FROM measurement m JOIN config c ON c.id = m.config_id WHERE m.hardware_id = $src_hw)
	ORDER BY t.id" |
	awk -F: '{ k[$1, ++n[$1]] = $0 } END { for (o in n) if (n[o] >= 3) { print k[o, n[o] - 1]; print k[o, n[o]] } }' |
	sort)

# pretrain NAME ARGS...: meta-train once into WORKDIR/NAME.model
pretrain() {
	name=$1
	shift
	[ -e "$OUT/$name.model" ] && return 0
	t0=$(date +%s.%N)
	"$TK" pretrain-meta -q --db "$OUT/source.db" --hardware "$src_hw" -o "$OUT/$name.model" "$@" \
		>"$OUT/$name.tsv"
	echo "pretrain-meta $name: $(echo "$(date +%s.%N) - $t0" | bc) s; few-shot MSE:" >&2
	cat "$OUT/$name.tsv" >&2
}
hargs="" targs=""
for t in $held; do
	hargs="$hargs --holdout-task $t"
	targs="$targs -t $t"
done
# shellcheck disable=SC2086
[ -z "$held" ] || pretrain kernels $hargs
pretrain all

printf 'setting\tgroup\tmethod\tn\ttasks\tmse\tmse_d\n'
if [ -z "$held" ]; then
	echo "meta.sh: no operator has three kernels measured: no held-out kernels" >&2
else
	# shellcheck disable=SC2086
	"$EVAL" -r "$REPEATS" $targs "$OUT/kernels.model" "$OUT/source.db" "$src_hw" \
		"$OUT/source.db" "$src_hw" $KSHOTS | tail -n +2 | sed "s/^/kernels\t/"
fi
nargs=""
for n in $NETS; do nargs="$nargs -n $n"; done
for s in "networks:$same_hw" "cross-$other:$cross_hw"; do
	[ -n "${s#*:}" ] || { echo "meta.sh: the dataset has no records of ${s%%:*}'s target" >&2; continue; }
	# shellcheck disable=SC2086
	"$EVAL" -r "$REPEATS" $nargs "$OUT/all.model" "$OUT/source.db" "$src_hw" \
		"$OUT/dataset.db" "${s#*:}" $SHOTS | tail -n +2 | sed "s/^/${s%%:*}\t/"
done
[ -r "$EVALSET" ] || exit 0
eval_hw=$(hw "$OUT/metaeval.db" "$key")
[ -n "$eval_hw" ] || { echo "meta.sh: $EVALSET has no records of $key" >&2; exit 0; }
# shellcheck disable=SC2086
"$EVAL" -r "$REPEATS" -n resnet-18 "$OUT/all.model" "$OUT/source.db" "$src_hw" \
	"$OUT/metaeval.db" "$eval_hw" $ESHOTS | tail -n +2 | sed "s/^/resnet-random\t/"
