#!/usr/bin/env bash
# Bring up a real single-node SLURM cluster with accounting on this machine (CI; Debian 12, root,
# no systemd): munged, MariaDB, slurmdbd, slurmctld and `slurmd -N localhost`, each started by hand.
# Node `localhost` (all CPUs, most of the memory, fake GPUs of type `fake`, feature `fakegpu`),
# partition `debug` (default), account `blurbflow` with user root allowed QOS `normal` (its default),
# `ci-cpu` and `ci-gpu`, so `sbatch -A blurbflow -p debug --qos ci-gpu -C fakegpu --gres=gpu:fake:1`
# and `sacct` work.
# PIDs go to $STATE/pids for .ci/slurm/down.sh; logs to $STATE/log. Re-running with the cluster up
# does nothing; with it half up it tears down and starts again; when a step fails it shows the
# daemon's log tail and stops what it started.
#   .ci/slurm/up.sh           (BLURBFLOW_SLURM_STATE overrides the state dir, default /tmp/blurbflow-slurm)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
STATE=${BLURBFLOW_SLURM_STATE:-/tmp/blurbflow-slurm}
CLUSTER=blurbflow ACCOUNT=blurbflow PARTITION=debug
QOSES=(ci-cpu ci-gpu) FEATURE=fakegpu GPU_TYPE=fake   # what tests/test_slurm.py asks for
GPUS=2   # fake GPUs backed by /dev/null and /dev/zero: two cells at a time on the 2-core CI machine
DB_NAME=slurm_acct_db DB_USER=slurm DB_PASS=blurbflow-ci   # MariaDB listens on 127.0.0.1 only
export SLURM_CONF=/etc/slurm/slurm.conf   # the fixed path: the plugin's job step drops SLURM_CONF
T0=${EPOCHREALTIME/./}   # microseconds

say() { local ds=$(((${EPOCHREALTIME/./} - T0) / 100000)); echo "[slurm-up $((ds / 10)).$((ds % 10))s] $*"; }

# wait_for SECONDS WHAT LOG CMD...: poll CMD until it succeeds; on timeout show LOG's tail and fail.
wait_for() {
    local secs=$1 what=$2 log=$3; shift 3
    local end=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= end)); then
            echo "slurm-up: ERROR: $what did not answer within ${secs}s (check: $*). Tail of $log:" >&2
            tail -n 30 "$log" >&2 2>/dev/null || echo "  (no log at $log)" >&2
            exit 1
        fi
        sleep 0.3
    done
}

# record NAME PIDFILE LOG: copy a daemon's PID into $STATE/pids (the list down.sh stops).
record() {
    local pid
    for _ in $(seq 100); do [[ -s $2 ]] && break; sleep 0.1; done
    if ! pid=$(cat "$2" 2>/dev/null); then
        echo "slurm-up: ERROR: $1 wrote no PID file $2 within 10s. Tail of $3:" >&2
        tail -n 30 "$3" >&2 2>/dev/null || echo "  (no log at $3)" >&2
        exit 1
    fi
    echo "$1 $pid" >>"$STATE/pids"
}

node_state() { timeout 5 sinfo -h -n localhost -o %t 2>/dev/null; }

# --- already up? --------------------------------------------------------------------------------
if [[ -s $STATE/pids ]]; then
    up=1
    while read -r name pid; do   # alive, and still the daemon recorded (comm is cut to 15 characters)
        [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "${name:0:15}" ]] || up=0
    done <"$STATE/pids"
    (($(wc -l <"$STATE/pids") == 5)) || up=0
    # sinfo hangs for seconds when no slurmctld answers, so it is asked last and briefly
    if ((up)) && [[ $(node_state) == @(idle|mix|alloc)* ]]; then
        # a cluster an older up.sh configured (no feature, untyped GPUs) is configured again
        [[ $(timeout 5 sinfo -h -n localhost -o %f 2>/dev/null) == "$FEATURE" ]] \
            && { say "already up (PIDs in $STATE/pids)"; exit 0; }
        say "up with an older configuration: tearing down first"
    else
        say "half up: tearing down first"
    fi
    "$HERE/down.sh"
fi

# On any failure from here on, stop whatever did start (logs stay in $STATE).
trap 'echo "slurm-up: ERROR: line $LINENO: \"$BASH_COMMAND\" failed" >&2' ERR
trap 'rc=$?; if ((rc)); then echo "slurm-up: failed, stopping what started" >&2; "$HERE/down.sh" >&2; fi' EXIT

# --- packages -----------------------------------------------------------------------------------
PKGS=(slurm-wlm munge slurmdbd mariadb-server)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive   # Debian's policy-rc.d keeps postinst from starting them
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
        || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
    say "packages installed"
fi

# --- directories, munge key ---------------------------------------------------------------------
mkdir -p "$STATE"/{log,run,mariadb,spool/slurmctld,spool/slurmd} /etc/slurm /run/munge /run/mysqld
chmod 755 "$STATE"
chown slurm:slurm "$STATE"/{log,run,spool/slurmctld}
chown munge:munge /run/munge /var/lib/munge /var/log/munge
chown mysql:mysql /run/mysqld "$STATE/mariadb"   # mariadbd runs as mysql: its PID file and log
: >"$STATE/pids"
rm -f /run/munge/munged.pid "$STATE"/run/*.pid "$STATE/mariadb/mariadbd.pid"   # no stale PID is recorded
if [[ ! -s /etc/munge/munge.key ]]; then
    mungekey --create --force --keyfile=/etc/munge/munge.key
fi
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key

# --- configuration ------------------------------------------------------------------------------
CPUS=$(nproc)
MEM_MB=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))
REAL_MB=$((MEM_MB - (MEM_MB / 20 > 512 ? MEM_MB / 20 : 512)))   # 5 % (at least 512 MB) left free
DEF_MB=$((REAL_MB / CPUS))   # without a memory request a 1-CPU job gets its share, not the node

cat >/etc/slurm/slurm.conf <<EOF
# Written by .ci/slurm/up.sh: one node, one partition, accounting through slurmdbd.
ClusterName=$CLUSTER
SlurmctldHost=localhost
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=$DEF_MB
GresTypes=gpu
ReturnToService=2
MinJobAge=300
KillWait=5
InactiveLimit=0
StateSaveLocation=$STATE/spool/slurmctld
SlurmdSpoolDir=$STATE/spool/slurmd
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStorageEnforce=associations,qos
AccountingStorageTRES=gres/gpu
AccountingStoreFlags=job_comment
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
JobCompType=jobcomp/none
NodeName=localhost CPUs=$CPUS RealMemory=$REAL_MB Gres=gpu:$GPU_TYPE:$GPUS Features=$FEATURE State=UNKNOWN
PartitionName=$PARTITION Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
# Fake GPUs: any existing file will do with TaskPlugin=task/none (without File= the node is INVALID).
printf "NodeName=localhost Name=gpu Type=$GPU_TYPE File=%s\n" /dev/null /dev/zero | head -n "$GPUS" >/etc/slurm/gres.conf

install -m 600 -o slurm -g slurm /dev/null /etc/slurm/slurmdbd.conf
cat >/etc/slurm/slurmdbd.conf <<EOF
# Written by .ci/slurm/up.sh (mode 600, owner slurm: slurmdbd refuses anything looser).
AuthType=auth/munge
DbdHost=localhost
SlurmUser=slurm
LogFile=$STATE/log/slurmdbd.log
PidFile=$STATE/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3306
StorageUser=$DB_USER
StoragePass=$DB_PASS
StorageLoc=$DB_NAME
EOF
say "configuration written (CPUs=$CPUS RealMemory=${REAL_MB}MB DefMemPerCPU=${DEF_MB}MB)"

# --- munged -------------------------------------------------------------------------------------
runuser -u munge -- /usr/sbin/munged --force
record munged /run/munge/munged.pid /var/log/munge/munged.log
wait_for 15 munged /var/log/munge/munged.log bash -c 'munge -n | unmunge'
say "munged up"

# --- MariaDB ------------------------------------------------------------------------------------
if [[ ! -d /var/lib/mysql/mysql ]]; then
    mariadb-install-db --user=mysql --datadir=/var/lib/mysql >"$STATE/log/mariadb-install.log" 2>&1 \
        || { echo "slurm-up: ERROR: mariadb-install-db failed:" >&2; tail -n 30 "$STATE/log/mariadb-install.log" >&2; exit 1; }
fi
setsid -f /usr/sbin/mariadbd --user=mysql --datadir=/var/lib/mysql --bind-address=127.0.0.1 \
    --port=3306 --socket=/run/mysqld/mysqld.sock --pid-file="$STATE/mariadb/mariadbd.pid" \
    --log-error="$STATE/mariadb/mariadb.log" </dev/null >/dev/null 2>&1
record mariadbd "$STATE/mariadb/mariadbd.pid" "$STATE/mariadb/mariadb.log"
wait_for 60 mariadbd "$STATE/mariadb/mariadb.log" mariadb-admin --socket=/run/mysqld/mysqld.sock ping
mariadb --socket=/run/mysqld/mysqld.sock <<EOF
CREATE DATABASE IF NOT EXISTS $DB_NAME;
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
CREATE USER IF NOT EXISTS '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'localhost';
GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'127.0.0.1';
EOF
say "mariadbd up"

# --- slurmdbd, then the accounting records, then slurmctld and slurmd ---------------------------
slurmdbd
record slurmdbd "$STATE/run/slurmdbd.pid" "$STATE/log/slurmdbd.log"
wait_for 60 slurmdbd "$STATE/log/slurmdbd.log" sacctmgr -n list cluster
say "slurmdbd up"

sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER" \
    || sacctmgr -i add cluster "$CLUSTER" >/dev/null
sacctmgr -n -P list account format=account | grep -qx "$ACCOUNT" \
    || sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER" Description=CI Organization=CI >/dev/null
sacctmgr -n -P list assoc user=root account="$ACCOUNT" format=user | grep -qx root \
    || sacctmgr -i add user root Account="$ACCOUNT" DefaultAccount="$ACCOUNT" >/dev/null
for qos in "${QOSES[@]}"; do   # with AccountingStorageEnforce=qos an unknown QOS is refused
    sacctmgr -n -P list qos format=name | grep -qx "$qos" || sacctmgr -i add qos "$qos" >/dev/null
    sacctmgr -n -P list assoc user=root account="$ACCOUNT" format=qos | tr , '\n' | grep -qx "$qos" \
        || sacctmgr -i modify user root where account="$ACCOUNT" set qos+="$qos" >/dev/null
done
say "accounting: cluster $CLUSTER, account $ACCOUNT, user root, QOS normal ${QOSES[*]}"

slurmctld
record slurmctld "$STATE/run/slurmctld.pid" "$STATE/log/slurmctld.log"
wait_for 60 slurmctld "$STATE/log/slurmctld.log" bash -c 'scontrol ping | grep -q UP'
say "slurmctld up"

slurmd -N localhost
record slurmd "$STATE/run/slurmd.pid" "$STATE/log/slurmd.log"
end=$((SECONDS + 60))
until [[ $(node_state) == idle* ]]; do
    case $(node_state) in   # a node left down/drained by an earlier run comes back by hand
        down* | drain* | drng*) scontrol update NodeName=localhost State=RESUME >/dev/null 2>&1 || true ;;
    esac
    if ((SECONDS >= end)); then
        echo "slurm-up: ERROR: node localhost not idle within 60s:" >&2
        scontrol show node localhost >&2 || true
        tail -n 30 "$STATE/log/slurmd.log" "$STATE/log/slurmctld.log" >&2
        exit 1
    fi
    sleep 0.3
done
say "slurmd up, node localhost idle; cluster ready (PIDs: $(tr '\n' ' ' <"$STATE/pids"))"
