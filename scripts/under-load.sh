#!/bin/sh
# Run a command while two busy loops keep both cores of a 2-core machine busy (a load of about
# 8 with the command's own processes), as on a shared CI runner. The loops stop when the
# command ends, however it ends.
set -u
HOGS=${HOGS:-2}
pids=""
stop() { [ -n "$pids" ] && kill $pids 2>/dev/null; wait 2>/dev/null; }
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
i=0
while [ "$i" -lt "$HOGS" ]; do
  python3 -c "while True: pass" &
  pids="$pids $!"
  i=$((i + 1))
done
echo "under-load: $HOGS busy loops running (pids$pids)"
"$@"
status=$?
echo "under-load: load average at the end (1, 5, 15 min): $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
exit $status
