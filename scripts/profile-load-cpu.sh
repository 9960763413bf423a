#!/bin/bash
# CPU per run of the profiling load (internal/e2e TestProfileLoad), measured two ways over a 20 s window:
# machine-wide from /proc/stat (includes kernel threads and anything else running on the box) and for the
# load's own process tree (the test process plus the server with every descendant, live or reaped: launchers,
# bwrap, helpers, fork-servers and their children, interpreters), which other load on a shared machine does not
# disturb; and the server's own CPU (its threads only, not its children). Prints one line. Server settings:
# CODEXEC_PROFILE_ENV.
#
# usage: scripts/profile-load-cpu.sh TREE LABEL BARE   (run from anywhere; TREE is a codexec checkout,
#        BARE=1 measures the bare python spawns instead). Interleave trees and the bare baseline:
#   for r in 1 2 3; do scripts/profile-load-cpu.sh /tmp/base base 0; scripts/profile-load-cpu.sh . new 0
#                      scripts/profile-load-cpu.sh . bare 1; done
TREE=$1 L=$2 BARE=$3
D=${TMPDIR:-/tmp}/codexec-profile; mkdir -p $D
R=$D/$L.ready; rm -f $R $R.n
cd $TREE
CODEXEC_PROFILE_SECONDS=34 CODEXEC_PROFILE_BARE=$BARE CODEXEC_PROFILE_READY=$R \
  go test ./internal/e2e/ -run '^TestProfileLoad$' -count=1 -v -timeout 300s > $D/$L.log 2>&1 &
TP=$!
while [ ! -e $R ]; do sleep 0.2; done; sleep 1
desc() { for c in $(pgrep -P $1); do echo $c; desc $c; done; }
bycomm() { for p in $(desc $TP); do [ "$(cat /proc/$p/comm 2>/dev/null)" = "$1" ] && echo $p; done | head -1; }
T=$(bycomm e2e.test); P=$(bycomm codexec)
# ticks of a process and every live descendant: utime+stime plus cutime+cstime (what each has reaped), so
# processes reaped by a live one (a fork-server's children) count too; the second figure is sys
cpu() { # PID [tree]
  [ -n "$1" ] || { echo "0 0"; return; }
  for p in $1 $([ -n "$2" ] && desc $1); do sed 's/.*) //' /proc/$p/stat 2>/dev/null; done |
    awk '{t += $12+$13+$14+$15; s += $13+$15} END {print t+0, s+0}'
}
# ticks of the process alone (utime+stime, then stime)
own() { if [ -n "$1" ]; then sed 's/.*) //' /proc/$1/stat | awk '{print $12+$13, $13}'; else echo "0 0"; fi; }
# the count file is rewritten every 100 ms: read until it is not caught empty
count() { local n; while n=$(cat $R.n 2>/dev/null); [ -z "$n" ]; do sleep 0.01; done; echo $n; }
load=$(cut -d' ' -f1 /proc/loadavg)
s0=$(head -1 /proc/stat); n0=$(count); t0=$(cpu $T); p0=$(cpu $P tree); o0=$(own $P)
sleep 20
s1=$(head -1 /proc/stat); n1=$(count); t1=$(cpu $T); p1=$(cpu $P tree); o1=$(own $P)
wait $TP
python3 - "$s0" "$s1" "$n0" "$n1" "$L" "$load" "$t0" "$t1" "$p0" "$p1" "$o0" "$o1" <<'PY'
import sys
A = sys.argv
a = list(map(int, A[1].split()[1:])); b = list(map(int, A[2].split()[1:]))
d = [y - x for x, y in zip(a, b)]
runs = int(A[4]) - int(A[3])
user = (d[0] + d[1]) * 10; sys_ = (d[2] + d[5] + d[6]) * 10; busy = user + sys_ + d[7] * 10
t0, ts0 = map(int, A[7].split()); t1, ts1 = map(int, A[8].split())
p0, ps0 = map(int, A[9].split()); p1, ps1 = map(int, A[10].split())
o0, os0 = map(int, A[11].split()); o1, os1 = map(int, A[12].split())
tree = ((t1 - t0) + (p1 - p0)) * 10; tsys = ((ts1 - ts0) + (ps1 - ps0)) * 10
own, osys = (o1 - o0) * 10, (os1 - os0) * 10
print(f"{A[5]}: load1 {A[6]} runs {runs} in 20 s = {runs/20:.1f}/s; machine per run: busy {busy/runs:.1f} ms "
      f"(user {user/runs:.1f}, sys {sys_/runs:.1f}); own process tree per run: {tree/runs:.1f} ms (sys {tsys/runs:.1f}); "
      f"server alone: {own/runs:.2f} ms (sys {osys/runs:.2f})")
PY
