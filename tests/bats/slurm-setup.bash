# A private single-node Slurm cluster for tests/bats/slurm.bats, started and
# stopped by scripts/slurm-local.sh (munged, slurmctld and slurmd with
# files, key and ports of their own under one directory; see the script),
# plus what the tests ask of it.
# shellcheck shell=bash

SLURM_LOCAL="$REPO/scripts/slurm-local.sh"

# slurm_why_not: print why a cluster cannot be started here; status 1 if
# it can.
slurm_why_not() {
	! "$SLURM_LOCAL" check
}

# slurm_start DIR [OPTION...]: start the cluster with its files under DIR
# (a short path: sockets live there) and OPTIONs of slurm-local.sh start
# (-c CPUS, -m MB), wait until its node is idle, and export SLURM_CONF
# for the clients.  On failure, print the logs and return 1.
slurm_start() {
	local d="$1"
	shift
	# The daemons must not keep bats' fd 3 open.
	"$SLURM_LOCAL" start "$@" "$d" > /dev/null 3>&- || return 1
	export SLURM_CONF="$d/slurm.conf"
}

# slurm_logs DIR: the daemons' logs, on stderr.
slurm_logs() {
	"$SLURM_LOCAL" logs "$1"
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
	[ -n "$1" ] && [ -d "$1" ] || return 0
	"$SLURM_LOCAL" stop "$1" 3>&- || true
}
