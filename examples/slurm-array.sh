#!/bin/sh
#SBATCH --job-name=tunekit
# slurm-array.sh: tune a network on a Slurm cluster as a job array, one
# shard per array task, then merge the shards' stores in a job that runs
# after the array has succeeded.
#
# usage: slurm-array.sh NETWORK OUT.db [SHARDS]
#
#   NETWORK   a network file (TSV of weight and task; see data/networks) or
#             a built-in network name
#   OUT.db    the merged store, on a file system the nodes share; the
#             shards' stores go beside it in OUT.shards/, and the best
#             configurations (`tunekit report best`) in OUT.shards/best.tsv
#   SHARDS    array tasks, one shard each (default 4)
#
# Run it on a login node: it submits `sbatch --array=1-SHARDS` of itself
# and a merge job with --dependency=afterok on the array, prints both job
# ids and returns (with WAIT=1 it waits for the merge job: sbatch --wait).
# Slurm then runs this same script:
#
#   - in array task I (SLURM_ARRAY_TASK_ID set): `tunekit tune --shard
#     I/SHARDS` into a store on the node's local disk ($TMPDIR, else /tmp),
#     copied into OUT.shards/shard-I.db when the tuning has ended. SQLite's
#     write-ahead log needs a local file system: never let several nodes
#     write one store on NFS or Lustre, and merge instead;
#   - in the merge job (TUNEKIT_SLURM_MERGE=1): `tunekit merge OUT.db` of
#     the shards' stores, then `tunekit report best`.
#
# A failed array task can be submitted again alone (sbatch --array=I
# slurm-array.sh ...) and the merge run again by hand or with
# TUNEKIT_SLURM_MERGE=1; merging a store twice adds nothing.
#
# The array tasks' options (partition, time limit, CPUs) are sbatch's: put
# them in SBATCH_* environment variables (SBATCH_PARTITION,
# SBATCH_TIMELIMIT) or #SBATCH lines above. Give a task the CPUs of a whole
# node (or --exclusive) for the timings to be the node's: tunekit compiles
# on every CPU it has and times one kernel at a time.
#
# Without a cluster, the array can be emulated by setting the variables
# Slurm sets (tests/t0121-recipes.sh does this when no Slurm daemons can be
# started):
#   for i in 1 2 3 4; do
#       SLURM_ARRAY_JOB_ID=0 SLURM_ARRAY_TASK_ID=$i sh slurm-array.sh NET OUT.db 4
#   done
#   TUNEKIT_SLURM_MERGE=1 sh slurm-array.sh NET OUT.db 4
#
# environment:
#   TUNEKIT   the tunekit command, here and on the nodes (default tunekit)
#   TRIALS    the budget over the whole network (default 200)
#   TUNE      more options of tunekit tune (default empty)
#   WAIT      1: wait for the merge job to end, and exit with its status
#
# Exit status: sbatch's when submitting; tunekit's in a job.
set -u
[ $# -ge 2 ] && [ $# -le 3 ] || { echo "usage: slurm-array.sh NETWORK OUT.db [SHARDS]" >&2; exit 2; }
net=$1
out=$2
shards=${3:-4}
tk=${TUNEKIT:-tunekit}
trials=${TRIALS:-200}
tune=${TUNE:-}
dir=${out%.db}.shards

if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
	# one array task: shard I of SHARDS, tuned on the local disk
	i=$SLURM_ARRAY_TASK_ID
	local=${TMPDIR:-/tmp}/tunekit-${SLURM_ARRAY_JOB_ID:-0}-$i.db
	rm -f "$local" "$local-wal" "$local-shm" "$local-lock"
	# shellcheck disable=SC2086 # $tune is a list of words
	"$tk" tune -q --db "$local" --network "$net" --trials "$trials" --shard "$i/$shards" \
		$tune >/dev/null || exit $?
	# the process has ended: the store is whole in its one file
	mkdir -p "$dir" && cp "$local" "$dir/shard-$i.db.part" && mv "$dir/shard-$i.db.part" "$dir/shard-$i.db" || exit 1
	rm -f "$local" "$local-wal" "$local-shm" "$local-lock"
	exit 0
fi

if [ -n "${TUNEKIT_SLURM_MERGE:-}" ]; then
	# the merge job, after every array task succeeded
	i=1
	set --
	while [ $i -le "$shards" ]; do
		set -- "$@" "$dir/shard-$i.db"
		i=$((i + 1))
	done
	"$tk" merge "$out" "$@" || exit $?
	"$tk" report --db "$out" best >"$dir/best.tsv" || exit $?
	exit 0
fi

# on the login node: submit the array and the merge
case $out in /*) ;; *) out=$PWD/$out dir=$PWD/$dir ;; esac
if [ -f "$net" ]; then
	case $net in /*) ;; *) net=$PWD/$net ;; esac
fi
mkdir -p "$dir" || exit 1
array=$(sbatch --parsable --array="1-$shards" --output="$dir/slurm-%A_%a.out" \
	--export=ALL "$0" "$net" "$out" "$shards") || exit $?
array=${array%%;*}
wait=
[ "${WAIT:-}" = 1 ] && wait=--wait
merge=$(TUNEKIT_SLURM_MERGE=1 sbatch --parsable $wait --dependency="afterok:$array" \
	--kill-on-invalid-dep=yes --output="$dir/slurm-%j-merge.out" --export=ALL \
	"$0" "$net" "$out" "$shards")
status=$?
echo "array job ${array}, merge job ${merge%%;*}: $out, $dir/best.tsv"
exit $status
