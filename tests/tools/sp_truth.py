#!/usr/bin/env python3
"""The QEMU plugin's inferred stack pointer (sp=on) against the real one.

  sp_truth.py --log LOG TRACE

LOG is QEMU's own -d cpu -singlestep -dfilter dump of the SAME run that wrote
TRACE (the plugin and -d cpu together): the real x2 before each filtered pc
ran. TRACE's REG x2 extras, decoded by oobt-decode.py --sp (which shares no
code with the plugin), give the plugin's sp before every record. For each
filtered pc, the k-th dump is the k-th record at that pc; every value the
trace knows must equal the dump's. Prints one PASS/FAIL line with the counts.
"""
import collections
import os
import re
import subprocess
import sys


def die(msg):
    sys.stderr.write("sp_truth.py: %s\n" % msg)
    sys.exit(2)


def real_sps(path):
    """{pc: [sp, ...]} in dump order."""
    got, pc = collections.defaultdict(list), None
    for line in open(path):
        m = re.match(r"\s*pc\s+([0-9a-f]+)", line)
        if m:
            pc = int(m.group(1), 16)
            continue
        m = re.search(r"x2/sp\s+([0-9a-f]+)", line)
        if m and pc is not None:
            got[pc].append(int(m.group(1), 16))
            pc = None
    return got


def main(argv):
    if len(argv) != 3 or argv[0] != "--log":
        die("usage: sp_truth.py --log LOG TRACE")
    real = real_sps(argv[1])
    if not real:
        die("%s: no -d cpu dumps" % argv[1])
    dec = os.path.join(os.path.dirname(os.path.abspath(__file__)), "oobt-decode.py")
    p = subprocess.run([sys.executable, dec, "--sp", argv[2]], capture_output=True, text=True)
    if p.returncode != 0:
        die("oobt-decode.py: %s" % p.stderr.strip())
    seen = collections.Counter()
    checked = unknown = 0
    bad = []
    for line in p.stdout.splitlines():
        pc_s, sp_s = line.split()
        pc = int(pc_s, 16)
        if pc not in real:
            continue
        k = seen[pc]
        seen[pc] += 1
        if k >= len(real[pc]):
            continue  # counted below
        if sp_s == "-":
            unknown += 1
            continue
        checked += 1
        if int(sp_s, 16) != real[pc][k]:
            bad.append("0x%x #%d: sp %s, real 0x%x" % (pc, k, sp_s, real[pc][k]))
    runs = sum(len(v) for v in real.values())
    counts = sum(1 for pc in real if seen[pc] != len(real[pc]))
    figs = "%d of %d dumps checked equal (%d before sp was first known)" % (
        checked - len(bad), runs, unknown)
    if bad or counts:
        print("FAIL: sp_truth: %s; %d wrong, %d pcs whose counts differ; e.g. %s" % (
            figs, len(bad), counts, "; ".join(bad[:3])))
    else:
        print("PASS: sp_truth: %s" % figs)


if __name__ == "__main__":
    main(sys.argv[1:])
