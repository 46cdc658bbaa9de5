#!/usr/bin/env python3
"""libkjit's functions in the order a traced call first runs them (tools/first-call-order.sh).

  first_call_order.py TRACE LIBRARY

TRACE is valgrind --tool=lackey --trace-superblocks=yes output from the line where the probe
names the address of kjit::cache_stats (which gives libkjit's load address) to the call's end;
prints one symbol per line. Placed in this order, the call runs mostly forward through the
library, which the processor's prefetchers follow."""
import bisect, subprocess, sys
trace, lib = sys.argv[1], sys.argv[2]
syms = []
for line in subprocess.run(["nm", "-S", "--defined-only", lib], capture_output=True, text=True).stdout.splitlines():
    p = line.split()
    if len(p) == 4 and p[2] in "tTwW":
        syms.append((int(p[0], 16), int(p[1], 16), p[3]))
syms.sort()
starts = [s[0] for s in syms]
anchor = dict((n, a) for a, _, n in syms)["_ZN4kjit11cache_statsEv"]
order, seen, base = [], set(), None
for line in open(trace):
    if base is None:
        if "kjit::cache_stats at" in line:
            base = int(line.rsplit(" ", 1)[1], 16) - anchor
        continue
    if not line.startswith("SB "):
        continue
    a = int(line[3:], 16) - base
    k = bisect.bisect_right(starts, a) - 1
    if k < 0 or a >= syms[k][0] + max(syms[k][1], 1):
        continue
    name = syms[k][2]
    if name not in seen:
        seen.add(name)
        order.append(name)
print("\n".join(order))
