#!/usr/bin/env python3
"""Sums a Go CPU profile by concern: reads `go tool pprof -traces PROFILE` on stdin and puts each sample in
the group of the innermost frame of its stack that a rule of RULES matches (the first such rule). Argument: the number of runs in the profile's
window (prints ms per run) — e.g. the server profile of TestProfileLoad and the run count it logged.

usage: go tool pprof -traces cpu.pprof | scripts/pprof-groups.py RUNS
"""
import re
import sys

RULES = [  # (group, frame regexp)
    ("cgroup (create, limits, kill, drain, remove)", r"internal/cgroup\."),
    ("bounded disk (reset, bind, image)", r"internal/diskbound\."),
    ("execution log + index", r"internal/(execlog|logindex)\."),
    ("workspace dir, files, artifacts", r"engine\.\(\*Workspace\)|engine\.\(\*Engine\)\.(newDir|removeDir)|internal/(files|artifacts|confine)\."),
    ("sandbox start/fork (namespace, warm, proc)", r"internal/sandbox/|internal/proc\."),
    ("engine, result, other codexec", r"codexec/codexec/internal/"),
    ("MCP transport + JSON", r"modelcontextprotocol|jsonrpc|encoding/json|jsonschema"),
    ("GC", r"runtime\.(gcBgMarkWorker|gcAssist|bgsweep|bgscavenge|markroot)"),
    ("scheduler, netpoll, timers", r"runtime\.(mcall|schedule|findRunnable|netpoll|mstart|sysmon)"),
]


def main():
    runs = float(sys.argv[1])
    total, sums, stack, val = 0.0, {}, [], None
    for line in sys.stdin.read().split("\n") + ["-----------+-"]:
        if line.startswith("-----------+-"):
            if val is not None:
                group = next((g for f in stack for g, rx in RULES if re.search(rx, f)), "other")
                sums[group] = sums.get(group, 0) + val
                total += val
            stack, val = [], None
            continue
        m = re.match(r"\s+(\d+(?:\.\d+)?)(ms|s|us)\s+(\S.*)", line)
        if m:
            val = float(m.group(1)) * {"s": 1000, "ms": 1, "us": 0.001}[m.group(2)]
            stack = [m.group(3)]
        elif val is not None and line.strip():
            stack.append(line.strip())
    for g, v in sorted(sums.items(), key=lambda kv: -kv[1]):
        print(f"{g:48s} {v / runs:6.3f} ms/run  {100 * v / total:5.1f}%")
    print(f"{'total':48s} {total / runs:6.3f} ms/run")


main()
