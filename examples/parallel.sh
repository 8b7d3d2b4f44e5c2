#!/bin/sh
# parallel.sh: tune a network on many machines with GNU parallel, one shard
# per job, and merge the shards' stores into one.
#
# usage: parallel.sh NETWORK OUT.db [SSHLOGIN...]
#
#   NETWORK   a network file (TSV of weight and task; see data/networks) or
#             a built-in network name
#   OUT.db    the merged store (created, or added to)
#   SSHLOGIN  GNU parallel's --sshlogin entries: "host", "user@host",
#             "4/host" (4 jobs at a time there), or ":" for this machine
#             (the default). Each machine needs tunekit on its PATH (or
#             TUNEKIT) and a C compiler, as tunekit does anywhere.
#
# Each of the SHARDS jobs runs `tunekit tune --shard I/SHARDS` on a machine
# GNU parallel picks, into a store of its own there (shard-I.db, in the
# login's home directory): the network file is copied there first
# (--transferfile), the store copied back when the job ends (--return) and
# both removed there (--cleanup). For ":" (this machine) GNU parallel
# copies nothing and says so: the job runs in WORKDIR. A store is only ever written by one
# process on a local disk, which is what SQLite's write-ahead log needs.
# The shards' stores are then merged into OUT.db (`tunekit merge`), and the
# best configurations printed (`tunekit report best`; the merge's table goes
# to stderr). A job that fails is
# retried once (--retries 2); then the script stops before merging, and
# running it again reruns the jobs GNU parallel's joblog does not mark done
# (--resume-failed), keeping the stores already returned.
#
# The kernels a job measures are compiled and timed on the machine that
# runs it; its records carry that machine's hardware key, so a fleet of
# different machines gives one store with each machine's records apart,
# and `tunekit report best --hardware` picks one.
#
# environment:
#   TUNEKIT   the tunekit command on the workers and here (default tunekit)
#   SHARDS    how many shards (default 4)
#   TRIALS    the budget over the whole network (default 200)
#   TUNE      more options of tunekit tune (default empty), e.g.
#             "--model xgb --repeat 3"
#   WORKDIR   where the returned stores and the joblog are kept (default
#             ./parallel-work)
#
# Exit status: 0 when every shard was tuned and merged; GNU parallel's
# status (the number of failed jobs) when some failed; 1 when a shard's
# store did not come back; merge's or report's status when those fail.
set -u
[ $# -ge 2 ] || { echo "usage: parallel.sh NETWORK OUT.db [SSHLOGIN...]" >&2; exit 2; }
net=$1
out=$2
shift 2
tk=${TUNEKIT:-tunekit}
shards=${SHARDS:-4}
trials=${TRIALS:-200}
tune=${TUNE:-}
work=${WORKDIR:-parallel-work}
command -v parallel >/dev/null 2>&1 || { echo "parallel.sh: GNU parallel is not installed" >&2; exit 1; }

# The logins as --sshlogin options; this machine alone by default.
logins=
[ $# -gt 0 ] || set -- :
for l in "$@"; do
	logins="$logins --sshlogin $l"
done

case $out in /*) ;; *) out=$PWD/$out ;; esac
mkdir -p "$work" || exit 1
# A network file travels with each job, as a copy of its own (net-I.tsv:
# one job's --cleanup cannot remove another's on the same machine); a
# built-in name is known to every tunekit.
netarg=$net
transfer=
if [ -f "$net" ]; then
	i=1
	while [ $i -le "$shards" ]; do
		cp "$net" "$work/net-$i.tsv" || exit 1
		i=$((i + 1))
	done
	netarg='net-{}.tsv'
	transfer="--transferfile $netarg"
fi
cd "$work" || exit 1

# One job per shard: {} is the shard number.
# shellcheck disable=SC2086 # $logins, $transfer and $tune are lists of words
seq 1 "$shards" | parallel --will-cite $logins --joblog joblog --resume-failed --retries 2 \
	$transfer --return 'shard-{}.db' --cleanup \
	"$tk tune -q --db shard-{}.db --network $netarg --trials $trials --shard {}/$shards $tune >/dev/null"
status=$?
if [ $status -ne 0 ]; then
	echo "parallel.sh: $status shard(s) failed (see $work/joblog); run again to retry them" >&2
	exit $status
fi
# GNU parallel counts a job whose command never ran remotely (no login
# shell there, say) as done: a store that did not come back is an error.
i=1
dbs=
while [ $i -le "$shards" ]; do
	[ -s "shard-$i.db" ] || { echo "parallel.sh: shard $i's store did not come back ($work/shard-$i.db)" >&2; exit 1; }
	dbs="$dbs shard-$i.db"
	i=$((i + 1))
done
# shellcheck disable=SC2086
"$tk" merge "$out" $dbs >&2 || exit $?
"$tk" report --db "$out" best
