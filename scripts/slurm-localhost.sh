#!/bin/sh
# Start a one-node Slurm cluster on this machine for the fleet tests: munged, slurmctld and
# slurmd, configured in DIR (default /tmp/kbgen-slurm). Prints `export SLURM_CONF=...` on success.
# `scripts/slurm-localhost.sh stop DIR` stops it. Needs root and Debian's slurm-wlm and munge.
set -eu
if [ "${1:-}" = "stop" ]; then
  dir=${2:-/tmp/kbgen-slurm}
  for pid in "$dir"/slurmd.pid "$dir"/slurmctld.pid "$dir"/munged.pid; do
    [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null || true
  done
  exit 0
fi
dir=${1:-/tmp/kbgen-slurm}
for tool in munged slurmctld slurmd srun; do
  command -v "$tool" >/dev/null 2>&1 || { echo "missing: $tool (apt-get install slurm-wlm munge)" >&2; exit 2; }
done
[ "$(id -u)" = "0" ] || { echo "needs root" >&2; exit 2; }
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
node=$(hostname -s)
cpus=$(nproc)
cat >"$dir/slurm.conf" <<CONF
ClusterName=kbgen
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
ReturnToService=2
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
key=$dir/munge/munge.key
[ -f "$key" ] || { dd if=/dev/urandom of="$key" bs=1024 count=1 2>/dev/null; chmod 0400 "$key"; }
munged --force --key-file="$key" --socket="$dir/munge/munge.socket" --pid-file="$dir/munged.pid" \
  --log-file="$dir/munged.log" --seed-file="$dir/munge/seed"
export SLURM_CONF="$dir/slurm.conf"
# Clients and daemons find munge's socket through the auth plugin's option.
printf 'AuthInfo=socket=%s\n' "$dir/munge/munge.socket" >>"$dir/slurm.conf"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
i=0
while [ $i -lt 50 ]; do
  if sinfo -h -o %T 2>/dev/null | grep -q idle; then
    echo "export SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  i=$((i + 1))
  sleep 0.2
done
echo "slurm did not come up; see $dir/*.log" >&2
exit 1
