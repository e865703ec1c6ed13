#!/usr/bin/env bash
# Stop the daemons that start.sh started, and only those: each is found by its pid file under
# the state directory and checked by name before it is signalled (a daemon that was already
# running before start.sh, e.g. a system munged, has no pid file there and is left alone).
#   --purge   also delete the state directory (job history, database, logs)
set -euo pipefail

DIR=${DPBENCH_SLURM_DIR:-/tmp/dpbench-slurm}
purge=0
for a in "$@"; do
    case "$a" in
    --purge) purge=1 ;;
    *)
        echo "stop.sh: unknown argument '$a' (valid: --purge)" >&2
        exit 2
        ;;
    esac
done
[ -d "$DIR" ] || {
    echo "slurm-local: nothing to stop ($DIR does not exist)"
    exit 0
}
exec 9>"$DIR/.lock"
flock -w 300 9 || {
    echo "slurm-local: another start/stop holds $DIR/.lock" >&2
    exit 1
}

# stop PIDFILE NAME: TERM, wait up to 20 s, then KILL
stop() {
    local pid t
    [ -s "$1" ] || return 0
    pid=$(tr -dc 0-9 <"$1")
    if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ]; then
        kill -TERM "$pid" 2>/dev/null || true
        for t in $(seq 80); do
            [ -d "/proc/$pid" ] || break
            sleep 0.25
        done
        if [ -d "/proc/$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
        echo "slurm-local: stopped $2 ($pid)"
    fi
    rm -f "$1"
}

# jobs of this cluster go with it (their slurmstepd would outlive slurmd)
if [ -s "$DIR/run/slurmctld.pid" ] && [ -f "$DIR/etc/slurm.conf" ]; then
    export SLURM_CONF=$DIR/etc/slurm.conf
    jobs=$(timeout 10 squeue -h -o %A 2>/dev/null || true)
    if [ -n "$jobs" ]; then
        # shellcheck disable=SC2086
        timeout 10 scancel $jobs 2>/dev/null || true
        for t in $(seq 40); do
            pgrep -x slurmstepd >/dev/null || break
            sleep 0.25
        done
    fi
fi
stop "$DIR/run/slurmd.pid" slurmd
stop "$DIR/run/slurmctld.pid" slurmctld
stop "$DIR/run/slurmdbd.pid" slurmdbd
stop "$DIR/mysql/run/mariadb.pid" mariadbd
stop "$DIR/munge/munged.pid" munged

# drop the client symlink if it points at this cluster
if [ "$(readlink /etc/slurm/slurm.conf 2>/dev/null)" = "$DIR/etc/slurm.conf" ]; then
    rm -f /etc/slurm/slurm.conf
fi
if [ "$purge" -eq 1 ]; then
    rm -rf "$DIR"
    echo "slurm-local: removed $DIR"
fi
