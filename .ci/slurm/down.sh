#!/usr/bin/env bash
# Stop the CI SLURM cluster that .ci/slurm/up.sh started: cancel its jobs, then stop each daemon
# recorded in $STATE/pids (SIGTERM, a bounded wait, then SIGKILL). A PID is only signalled while it
# still runs the daemon it was recorded for. Succeeds when some or all are gone already; fails only
# when one survives SIGKILL.
# Keeps packages, configuration, the accounting database and logs (under $STATE/log).
set -uo pipefail
STATE=${BLURBFLOW_SLURM_STATE:-/tmp/blurbflow-slurm}
export SLURM_CONF=/etc/slurm/slurm.conf
PIDS=$STATE/pids
[[ -s $PIDS ]] || { echo "slurm-down: nothing recorded in $PIDS"; exit 0; }

# Jobs first, so that no slurmstepd outlives slurmd (only while slurmctld answers).
if timeout 5 scontrol ping 2>/dev/null | grep -q UP; then
    ids=$(timeout 5 squeue -h -o %i 2>/dev/null)
    if [[ -n $ids ]]; then
        echo "slurm-down: cancelling jobs $(echo $ids)"
        timeout 10 scancel $ids 2>/dev/null
        for _ in $(seq 50); do [[ -z $(timeout 5 squeue -h -o %i 2>/dev/null) ]] && break; sleep 0.2; done
    fi
fi

# alive NAME PID: the PID still runs NAME (comm is cut to 15 characters).
alive() { [[ $(cat "/proc/$2/comm" 2>/dev/null) == "${1:0:15}" ]]; }

# SIGTERM to all at once, last started first (one by one each takes 1-3 s); a job's accounting is
# in the database as soon as it ends, and anything slurmctld has not sent yet waits in its state dir.
declare -a names=() pids=()
while read -r name pid; do
    if alive "$name" "$pid"; then
        kill -TERM "$pid" 2>/dev/null; names+=("$name"); pids+=("$pid")
    else
        echo "slurm-down: $name ($pid) already gone"
    fi
done < <(tac "$PIDS")
left() { local i n=0; for i in "${!pids[@]}"; do alive "${names[i]}" "${pids[i]}" && n=$((n + 1)); done; ((n)); }
for _ in $(seq 150); do left || break; sleep 0.1; done   # 15 s
status=0
for i in "${!pids[@]}"; do
    name=${names[i]} pid=${pids[i]}
    if alive "$name" "$pid"; then
        echo "slurm-down: $name ($pid) ignored SIGTERM for 15s, sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null
        for _ in $(seq 30); do alive "$name" "$pid" || break; sleep 0.1; done
    fi
    if alive "$name" "$pid"; then
        echo "slurm-down: WARNING: $name ($pid) still running"; status=1
    else
        echo "slurm-down: $name ($pid) stopped"
    fi
done
((status)) || rm -f "$PIDS"
exit $status
