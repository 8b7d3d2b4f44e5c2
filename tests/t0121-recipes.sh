#!/bin/sh
# The recipes of examples/ for many machines, run here: parallel.sh with
# GNU parallel on local workers and on two "hosts" reached through a fake
# ssh (so --transferfile, --return and --cleanup really copy), and
# slurm-array.sh on a one-node Slurm cluster (slurmctld and slurmd started
# by this test, auth/none, no munge) when Slurm is installed and its
# daemons start, else with Slurm's array variables set by a loop. Each ends
# in a merged store holding what one process tunes, and report best.
. "$(dirname "$0")/lib.sh"

cp "$TEST_DIR/data/tiny-network.tsv" tiny.tsv
TUNEKIT=$TUNEKIT_BIN
TRIALS=16
TUNE='--repeat 1 --min-repeat-ms 1 --confirm 0'
export TUNEKIT TRIALS TUNE

pairs() {
	sqlite3 "$1" "SELECT t.key || ' ' || c.text FROM measurement m
		JOIN config c ON c.id = m.config_id JOIN task t ON t.id = c.task_id" | sort
}

test_expect_success 'one process: the records the recipes must reproduce' '
	tunekit tune -q --db one.db --network tiny.tsv --trials 16 $TUNE >/dev/null &&
	pairs one.db >want && test $(wc -l <want) -eq 16
'

# ---- GNU parallel ------------------------------------------------------------

if command -v parallel >/dev/null 2>&1; then
	test_expect_success 'parallel.sh on local workers (--sshlogin 2/:)' '
		WORKDIR=local sh "$TOP/examples/parallel.sh" tiny.tsv par.db 2/: >best 2>err &&
		pairs par.db >got && test_cmp want got &&
		test_rows best 4 &&
		test "$(tsv_col best task 2)" != "" &&
		test $(wc -l <local/joblog) -eq 5
	'

	test_expect_success 'parallel.sh again: the joblog says done, the merge adds nothing' '
		sqlite3 par.db "SELECT count(*) FROM measurement" >before &&
		WORKDIR=local sh "$TOP/examples/parallel.sh" tiny.tsv par.db 2/: >best 2>err &&
		sqlite3 par.db "SELECT count(*) FROM measurement" >after &&
		test_cmp before after && test_rows best 4
	'

	if command -v rsync >/dev/null 2>&1; then
		test_expect_success 'parallel.sh on two hosts through ssh: files go, stores return, hosts are cleaned' '
			mkdir -p hosts/h1 hosts/h2 &&
			PARALLEL_SSH=fakessh FAKESSH_HOSTS=$TRASH/hosts FAKESSH_LOG=$TRASH/ssh.log \
				WORKDIR=remote sh "$TOP/examples/parallel.sh" tiny.tsv ssh.db 2/h1 2/h2 >best 2>err &&
			pairs ssh.db >got && test_cmp want got &&
			test_rows best 4 &&
			grep -q "^fakessh h1 .*rsync --server" ssh.log &&
			grep -q "^fakessh h2 .*rsync --server" ssh.log &&
			grep -q "rsync --server --sender .*shard-[1-4].db" ssh.log &&
			test "$(find hosts -type f | grep -v -e "-lock\$" -e "-shm\$" -e "-wal\$")" = "" &&
			test $(cut -f2 remote/joblog | sort -u | grep -c "^h[12]\$") -eq 2
		'
	else
		echo "# skipping the ssh hosts of parallel.sh: rsync is not installed"
	fi
else
	echo "# skipping parallel.sh: GNU parallel is not installed (Debian: parallel)"
fi

# ---- Slurm -----------------------------------------------------------------------

SLURM=$TRASH/slurm
stop_slurm() {
	for p in "$SLURM/slurmd.pid" "$SLURM/slurmctld.pid"; do
		[ -s "$p" ] && kill "$(cat "$p")" 2>/dev/null
	done
	return 0
}
trap 'stop_slurm; cd / && rm -rf "$TRASH"' EXIT

# A one-node cluster on this machine, its state in the trash directory.
start_slurm() {
	for c in slurmctld slurmd sbatch sinfo; do
		command -v $c >/dev/null 2>&1 || PATH=$PATH:/usr/sbin
		command -v $c >/dev/null 2>&1 || { echo "no $c"; return 1; }
	done
	node=$(hostname -s) user=$(id -un) port=$((20000 + $$ % 20000))
	mkdir -p "$SLURM/state" "$SLURM/spool" "$SLURM/log" || return 1
	cat >"$SLURM/slurm.conf" <<-EOF
	ClusterName=tunekit-test
	SlurmctldHost=$node(127.0.0.1)
	SlurmctldPort=$port
	SlurmdPort=$((port + 1))
	AuthType=auth/none
	CredType=cred/none
	SlurmUser=$user
	SlurmdUser=$user
	StateSaveLocation=$SLURM/state
	SlurmdSpoolDir=$SLURM/spool
	SlurmctldPidFile=$SLURM/slurmctld.pid
	SlurmdPidFile=$SLURM/slurmd.pid
	SlurmctldLogFile=$SLURM/log/slurmctld.log
	SlurmdLogFile=$SLURM/log/slurmd.log
	ProctrackType=proctrack/linuxproc
	TaskPlugin=task/none
	SelectType=select/cons_tres
	SelectTypeParameters=CR_Core
	SchedulerParameters=sched_interval=2
	MpiDefault=none
	ReturnToService=2
	JobCompType=jobcomp/none
	AccountingStorageType=accounting_storage/none
	NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
	PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
	EOF
	SLURM_CONF=$SLURM/slurm.conf
	export SLURM_CONF
	slurmctld -c -f "$SLURM_CONF" || return 1
	slurmd -f "$SLURM_CONF" || return 1
	i=0
	while [ "$(sinfo -h -o %t 2>/dev/null)" != idle ]; do
		i=$((i + 1))
		[ $i -lt 30 ] || { echo "the node did not come up"; tail -3 "$SLURM"/log/*; return 1; }
		sleep 1
	done
}

if start_slurm >slurm-start.log 2>&1; then
	test_expect_success 'slurm-array.sh on a one-node Slurm cluster: array, then merge after it' '
		WAIT=1 timeout 600 sh "$TOP/examples/slurm-array.sh" tiny.tsv slurm.db 4 >submit &&
		grep -q "^array job [0-9][0-9]*, merge job [0-9][0-9]*:" submit &&
		pairs slurm.db >got && test_cmp want got &&
		test_rows slurm.shards/best.tsv 4 &&
		ls slurm.shards/slurm-*_[1-4].out >/dev/null &&
		test $(ls slurm.shards/shard-*.db | wc -l) -eq 4 &&
		test "$(ls "${TMPDIR:-/tmp}" | grep -c "^tunekit-[0-9]*-[1-4].db")" -eq 0
	'
	stop_slurm
else
	echo "# Slurm daemons did not start here ($(tail -1 slurm-start.log)):" \
		"slurm-array.sh is tested with an emulated array only"
fi

test_expect_success 'slurm-array.sh with the array emulated (Slurm variables set by a loop)' '
	mkdir -p emu.shards &&
	for i in 1 2 3 4; do
		SLURM_ARRAY_JOB_ID=$$ SLURM_ARRAY_TASK_ID=$i sh "$TOP/examples/slurm-array.sh" \
			tiny.tsv "$TRASH/emu.db" 4 || return 1
	done &&
	TUNEKIT_SLURM_MERGE=1 sh "$TOP/examples/slurm-array.sh" tiny.tsv "$TRASH/emu.db" 4 >sum &&
	pairs emu.db >got && test_cmp want got &&
	test_rows sum 4 &&
	test_rows emu.shards/best.tsv 4
'

test_done
