#!/bin/sh
# Install Debian's sshd and Slurm (with munge) for the fleet tests when they are missing and we
# can. Never fatal: without them the ssh and Slurm tests skip with a reason.
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }
if have sshd && have slurmctld && have munged; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing openssh-server and slurm-wlm for the fleet tests (apt-get)..."
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    openssh-server slurm-wlm munge) >/dev/null 2>&1 && exit 0
fi
echo "sshd or Slurm not installed: the fleet ssh and Slurm tests will be skipped"
exit 0
