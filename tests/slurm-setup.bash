# A private single-node Slurm cluster for tests/slurm.bats: munged with a
# key of its own, slurmctld and slurmd with a slurm.conf of their own, all
# under one directory, on ports of their own, so that it touches nothing
# of the machine's and can run beside another copy of itself.  No systemd,
# no cgroups, no accounting: proctrack/linuxproc and task/none.
# shellcheck shell=bash

# slurm_why_not: print why a cluster cannot be started here; status 1 if
# it can.
slurm_why_not() {
	local c
	if [ "$(id -u)" -ne 0 ]; then
		echo "needs root to run slurmd"
		return 0
	fi
	for c in munged munge slurmctld slurmd sbatch squeue sinfo scontrol \
	    scancel flock; do
		if ! command -v "$c" >/dev/null; then
			echo "'$c' is not installed: run make deps (slurmctld, slurmd, slurm-client, munge)"
			return 0
		fi
	done
	return 1
}

# slurm_port: a TCP port that nothing listens on, picked at random.
slurm_port() {
	local p i
	for ((i = 0; i < 50; i++)); do
		p=$((20000 + RANDOM % 20000))
		grep -qi "^ *[0-9]*: [0-9A-F]*:$(printf '%04X' "$p") " \
		    /proc/net/tcp /proc/net/tcp6 2>/dev/null || {
			echo "$p"
			return 0
		}
	done
	return 1
}

# slurm_start DIR: start the cluster with its files under DIR (a short
# path: sockets live there), wait until its node is idle, and export
# SLURM_CONF for the clients.  On failure, print the logs and return 1.
slurm_start() {
	local d="$1" host node name ctld_port slurmd_port i state
	mkdir -p "$d/munge" "$d/state" "$d/spool" "$d/log"
	chmod 700 "$d/munge"
	head -c 1024 /dev/urandom > "$d/munge/key"
	chmod 400 "$d/munge/key"
	# -f: the socket's directory is not world-searchable, which munged
	# would otherwise refuse; no one but root uses this cluster.
	munged -f --key-file="$d/munge/key" --socket="$d/munge/sock" \
	    --pid-file="$d/munge/pid" --log-file="$d/log/munged.log" \
	    --seed-file="$d/munge/seed" < /dev/null > /dev/null 2>&1 3>&- ||
	    { slurm_logs "$d"; return 1; }

	host="$(hostname -s)"
	node="$(slurmd -C | sed -n 's/^\(NodeName=.*RealMemory=[0-9]*\).*/\1/p')"
	[ -n "$node" ] || { echo "slurmd -C: no NodeName line" >&2; return 1; }
	name="${node%% *}"
	name="${name#NodeName=}"
	ctld_port="$(slurm_port)" && slurmd_port="$(slurm_port)" || return 1
	[ "$ctld_port" != "$slurmd_port" ] || slurmd_port=$((ctld_port + 1))
	cat > "$d/slurm.conf" <<-EOF
	ClusterName=rvtest
	SlurmctldHost=$host(127.0.0.1)
	SlurmctldPort=$ctld_port
	SlurmdPort=$slurmd_port
	SlurmUser=root
	SlurmdUser=root
	AuthType=auth/munge
	CredType=cred/munge
	AuthInfo=socket=$d/munge/sock
	StateSaveLocation=$d/state
	SlurmdSpoolDir=$d/spool
	SlurmctldPidFile=$d/slurmctld.pid
	SlurmdPidFile=$d/slurmd.pid
	SlurmctldLogFile=$d/log/slurmctld.log
	SlurmdLogFile=$d/log/slurmd.log
	ProctrackType=proctrack/linuxproc
	TaskPlugin=task/none
	JobAcctGatherType=jobacct_gather/none
	AccountingStorageType=accounting_storage/none
	JobCompType=jobcomp/none
	SelectType=select/cons_tres
	SelectTypeParameters=CR_Core
	SchedulerType=sched/builtin
	MpiDefault=none
	ReturnToService=2
	MailProg=/bin/true
	$node NodeAddr=127.0.0.1 State=UNKNOWN
	PartitionName=rv Nodes=$name Default=YES MaxTime=INFINITE State=UP
	EOF
	export SLURM_CONF="$d/slurm.conf"
	# Both daemonise; fd 3 is bats' own and must not stay open in them.
	slurmctld -c -f "$SLURM_CONF" < /dev/null > "$d/log/slurmctld.out" \
	    2>&1 3>&- || { slurm_logs "$d"; return 1; }
	slurmd -f "$SLURM_CONF" < /dev/null > "$d/log/slurmd.out" 2>&1 3>&- ||
	    { slurm_logs "$d"; return 1; }
	for ((i = 0; i < 300; i++)); do
		state="$(sinfo -h -N -o %T 2>/dev/null)" || state=
		[ "$state" = idle ] && return 0
		sleep 0.1
	done
	echo "slurm: the node is '$state', not idle, after 30 s" >&2
	slurm_logs "$d"
	return 1
}

# slurm_logs DIR: the daemons' logs, on stderr.
slurm_logs() {
	local f
	for f in "$1"/log/*; do
		[ -f "$f" ] || continue
		echo "--- $f" >&2
		tail -n 30 "$f" >&2
	done
}

# slurm_wait TIMEOUT: wait until the cluster has no job left; status 1
# after TIMEOUT seconds.
slurm_wait() {
	local i
	for ((i = 0; i < $1 * 5; i++)); do
		[ -z "$(squeue -h -o %i 2>/dev/null)" ] && return 0
		sleep 0.2
	done
	echo "slurm: jobs still there after $1 s:" >&2
	squeue >&2
	return 1
}

# slurm_state JOB: the state of a job, or of each task of an array job,
# one per line, as "id state exitcode".
slurm_state() {
	scontrol -o show job "$1" |
	    sed -n 's/^JobId=\([0-9]*\) .*JobState=\([A-Z_]*\) .*ExitCode=\([0-9:]*\) .*/\1 \2 \3/p'
}

# slurm_stop DIR: cancel every job, stop the daemons and wait for them to
# go; whatever is still running after that is killed.  Never fails.
slurm_stop() {
	local d="$1" f pid i p
	[ -n "$d" ] && [ -d "$d" ] || return 0
	if [ -f "$d/slurm.conf" ]; then
		export SLURM_CONF="$d/slurm.conf"
		scancel --user=root 2>/dev/null
		slurm_wait 10 2>/dev/null
		scontrol shutdown 2>/dev/null
	fi
	for f in "$d/slurmd.pid" "$d/slurmctld.pid" "$d/munge/pid"; do
		[ -s "$f" ] || continue
		pid="$(cat "$f")"
		case $pid in ''|*[!0-9]*) continue ;; esac
		kill -0 "$pid" 2>/dev/null || continue
		# scontrol shutdown stops slurmctld and slurmd, TERM munged;
		# whichever is still there after 2 s gets TERM, after 5 s KILL.
		[ "$f" = "$d/munge/pid" ] && kill "$pid" 2>/dev/null
		for ((i = 0; i < 50; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			[ "$i" -eq 20 ] && kill "$pid" 2>/dev/null
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null
	done
	# Job steps outlive slurmd; theirs name a file under DIR.
	for p in /proc/[0-9]*; do
		pid="${p#/proc/}"
		case $pid in "$$"|"$BASHPID") continue ;; esac
		tr '\0' ' ' 2>/dev/null < "$p/cmdline" | grep -qF "$d/" &&
		    kill -9 "$pid" 2>/dev/null
	done
	return 0
}
