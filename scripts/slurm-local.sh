#!/usr/bin/env bash
# slurm-local.sh: a private single-node Slurm cluster on this machine, to
# try pipelines/slurm-offline-refurbish.sbatch without a cluster; the one
# tests/bats/slurm.bats starts.  munged with a key of its own, slurmctld and
# slurmd with a slurm.conf of their own, all under one directory DIR, on
# ports of their own, so that it touches nothing of the machine's (no
# systemd unit, no /etc/slurm, no cgroups, no accounting:
# proctrack/linuxproc and task/none) and can run beside another copy of
# itself.  The node has the machine's CPUs (nproc) and memory (MemTotal,
# or the cgroup's limit if lower), or fewer with -c and -m.  Run as root:
# slurmd must be, and only root can use this munged's socket.
#
#   eval "$(scripts/slurm-local.sh start)"     # prints the SLURM_CONF export
#   OUT=/tmp/run sbatch pipelines/slurm-offline-refurbish.sbatch
#   squeue; scripts/slurm-local.sh status
#   scripts/slurm-local.sh stop
set -euo pipefail

prog=slurm-local.sh
usage="usage: $prog start [-c CPUS] [-m MB] [DIR]
       $prog stop | status | logs | check [DIR]
  start    start munged, slurmctld and slurmd with their files under DIR
           (default /tmp/rv-slurm; a short path: sockets live there),
           wait until the node is idle, print 'export SLURM_CONF=...'
  -c CPUS  the node's CPUs (default: nproc)
  -m MB    the node's memory in MB (default: the machine's)
  stop     cancel every job, stop the daemons, kill what is left of jobs
  status   the daemons and the node's state; exit 1 unless all are up
  logs     the end of each daemon's log, on stderr
  check    exit 1, saying why, if a cluster cannot be started here
"

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

usage_die() {
	printf '%s: %s\n%s' "$prog" "$*" "$usage" >&2
	exit 2
}

# why_not: print why a cluster cannot be started here; status 1 if it can.
why_not() {
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

# free_port: a TCP port that nothing listens on, picked at random.
free_port() {
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

# machine_mb: the memory of the machine in MB, or of the cgroup if less.
machine_mb() {
	local mb lim
	mb=$(awk '$1 == "MemTotal:" { print int($2 / 1024) }' /proc/meminfo)
	lim=$(cat /sys/fs/cgroup/memory.max 2>/dev/null) || lim=max
	case $lim in
	'' | *[!0-9]*) ;;
	*) [ $((lim / 1048576)) -ge "$mb" ] || mb=$((lim / 1048576)) ;;
	esac
	echo "$mb"
}

# alive PIDFILE: the daemon whose pid PIDFILE holds is running.
alive() {
	local pid
	[ -s "$1" ] || return 1
	pid=$(cat "$1")
	case $pid in '' | *[!0-9]*) return 1 ;; esac
	kill -0 "$pid" 2>/dev/null
}

logs() {
	local f
	for f in "$1"/log/*; do
		[ -f "$f" ] || continue
		echo "--- $f" >&2
		tail -n 30 "$f" >&2
	done
}

start() {
	local d=$1 cpus=$2 mb=$3 host ctld_port slurmd_port i state why
	if why=$(why_not); then
		die "$why"
	fi
	if alive "$d/slurmctld.pid" || alive "$d/slurmd.pid" ||
	    alive "$d/munge/pid"; then
		die "'$d': a cluster runs there: '$prog stop $d' first"
	fi
	mkdir -p "$d/munge" "$d/state" "$d/spool" "$d/log" ||
	    die "'$d': cannot create it"
	chmod 700 "$d/munge"
	rm -f "$d/munge/key"
	head -c 1024 /dev/urandom >"$d/munge/key"
	chmod 400 "$d/munge/key"
	# -f: the socket's directory is not world-searchable, which munged
	# would otherwise refuse; no one but root uses this cluster.
	munged -f --key-file="$d/munge/key" --socket="$d/munge/sock" \
	    --pid-file="$d/munge/pid" --log-file="$d/log/munged.log" \
	    --seed-file="$d/munge/seed" </dev/null >/dev/null 2>&1 ||
	    { logs "$d"; die "munged did not start"; }

	host=$(hostname -s)
	ctld_port=$(free_port) || die "no free TCP port found"
	slurmd_port=$(free_port) || die "no free TCP port found"
	[ "$ctld_port" != "$slurmd_port" ] || slurmd_port=$((ctld_port + 1))
	cat >"$d/slurm.conf" <<-EOF
	ClusterName=rvlocal
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
	NodeName=$host CPUs=$cpus RealMemory=$mb NodeAddr=127.0.0.1 State=UNKNOWN
	PartitionName=rv Nodes=$host Default=YES MaxTime=INFINITE State=UP
	EOF
	export SLURM_CONF="$d/slurm.conf"
	# Both daemonise.
	slurmctld -c -f "$SLURM_CONF" </dev/null >"$d/log/slurmctld.out" 2>&1 ||
	    { logs "$d"; die "slurmctld did not start"; }
	slurmd -f "$SLURM_CONF" </dev/null >"$d/log/slurmd.out" 2>&1 ||
	    { logs "$d"; die "slurmd did not start"; }
	for ((i = 0; i < 300; i++)); do
		state=$(sinfo -h -N -o %T 2>/dev/null) || state=
		if [ "$state" = idle ]; then
			printf '%s: node %s, %s CPUs, %s MB: idle\n' "$prog" \
			    "$host" "$cpus" "$mb" >&2
			printf 'export SLURM_CONF=%q\n' "$SLURM_CONF"
			return 0
		fi
		sleep 0.1
	done
	logs "$d"
	die "the node is '$state', not idle, after 30 s"
}

# wait_jobs TIMEOUT: wait until the cluster has no job left; status 1
# after TIMEOUT seconds.
wait_jobs() {
	local i
	for ((i = 0; i < $1 * 5; i++)); do
		[ -z "$(squeue -h -o %i 2>/dev/null)" ] && return 0
		sleep 0.2
	done
	return 1
}

# stop: cancel every job, stop the daemons and wait for them to go;
# whatever is still running after that is killed.  Never fails.
stop() {
	local d=$1 f pid i p
	set +e
	[ -d "$d" ] || return 0
	if [ -f "$d/slurm.conf" ]; then
		export SLURM_CONF="$d/slurm.conf"
		if alive "$d/slurmctld.pid"; then
			scancel --user=root 2>/dev/null
			wait_jobs 10
			scontrol shutdown 2>/dev/null
		fi
	fi
	for f in "$d/slurmd.pid" "$d/slurmctld.pid" "$d/munge/pid"; do
		alive "$f" || continue
		pid=$(cat "$f")
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
		pid=${p#/proc/}
		case $pid in "$$" | "$BASHPID" | "$PPID") continue ;; esac
		tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -qF "$d/" &&
		    kill -9 "$pid" 2>/dev/null
	done
	return 0
}

status() {
	local d=$1 f up=0 state
	for f in munge/pid slurmctld.pid slurmd.pid; do
		if alive "$d/$f"; then
			printf '%-10s running, pid %s\n' "${f%.pid}" \
			    "$(cat "$d/$f")"
		else
			printf '%-10s not running\n' "${f%.pid}"
			up=1
		fi
	done
	[ "$up" -eq 0 ] || return 1
	export SLURM_CONF="$d/slurm.conf"
	state=$(sinfo -h -N -o '%N %c CPUs, %m MB: %T' 2>/dev/null) ||
	    state='no answer from slurmctld'
	printf 'node       %s\nconf       %s\n' "$state" "$SLURM_CONF"
	[ "$state" != 'no answer from slurmctld' ]
}

# --- options ------------------------------------------------------------------
[ $# -gt 0 ] || usage_die "no command given"
cmd=$1
shift
case $cmd in
-h | --help)
	printf '%s' "$usage"
	exit 0
	;;
start | stop | status | logs | check) ;;
*) usage_die "unknown command '$cmd'" ;;
esac
cpus=
mb=
while [ $# -gt 0 ]; do
	case $1 in
	-c | -m)
		[ "$cmd" = start ] || usage_die "option '$1' is for start"
		[ $# -ge 2 ] || usage_die "option '$1' needs an argument"
		case $2 in
		'' | *[!0-9]* | 0) usage_die "$1: '$2': not a positive integer" ;;
		esac
		if [ "$1" = -c ]; then cpus=$2; else mb=$2; fi
		shift 2
		continue
		;;
	--) shift; break ;;
	-?*) usage_die "unknown option '$1'" ;;
	*) break ;;
	esac
done
[ $# -le 1 ] || usage_die "too many arguments"
dir=${1:-/tmp/rv-slurm}
[ -n "$dir" ] || usage_die "empty directory name"
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
while [ "$dir" != / ] && [ "${dir%/}" != "$dir" ]; do dir=${dir%/}; done

case $cmd in
check)
	if why=$(why_not); then
		echo "$why"
		exit 1
	fi
	;;
start)
	[ -n "$cpus" ] || cpus=$(nproc)
	[ -n "$mb" ] || mb=$(machine_mb)
	[ "$cpus" -le "$(nproc)" ] ||
	    usage_die "-c: '$cpus': more than the $(nproc) CPUs here"
	[ "$mb" -le "$(machine_mb)" ] ||
	    usage_die "-m: '$mb': more than the $(machine_mb) MB here"
	start "$dir" "$cpus" "$mb"
	;;
stop) stop "$dir" ;;
status) status "$dir" ;;
logs) logs "$dir" ;;
esac
