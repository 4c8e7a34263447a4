#!/usr/bin/env python3
"""Fixtures and ground truth for the trace reader tests (tests/unit/test_trace.c).

Written independently of core/: it parses the text logs itself and writes the
binary TracerV layouts itself, so that the C readers are checked against
another implementation. Called by tests/tools/gen-readers.sh:

  gen-readers.py spike LOG OUTDIR        truth of the Spike log + variants
  gen-readers.py qemu LOG NAME OUTDIR    truth of a QEMU -d exec,in_asm log
  gen-readers.py tracerv OUTDIR LOG...   TracerV files from QEMU/Spike logs
  gen-readers.py fireperf LOG NM OUTDIR  a FirePerf log from a QEMU log

A truth file NAME.truth holds "key value" lines: records, records_h<N>, and
hash = FNV-1a (64-bit, one step per 64-bit value) over each record's fields in
the order the "hash_fields" line names (pc, insn, priv, cycle, hart); xhash the
same over each extra (record index, kind, num, addr, val, size).
"""
import os
import re
import sys

M = (1 << 64) - 1
FNV0, FNVP = 0xCBF29CE484222325, 0x100000001B3
X_REG, X_FREG, X_CSR, X_LOAD, X_STORE, X_EVENT, X_TRAP = 1, 2, 3, 4, 5, 6, 7


def fnv(h, v):
    return ((h ^ (v & M)) * FNVP) & M


class Truth:
    def __init__(self, fields):
        self.fields = fields
        self.n, self.h, self.xh, self.nx = 0, FNV0, FNV0, 0
        self.harts, self.kinds, self.priv = {}, {}, {}
        self.extra_lines = {}

    def rec(self, **f):
        for k in self.fields:
            self.h = fnv(self.h, f[k])
        hart = f.get("hart", 0)
        self.harts[hart] = self.harts.get(hart, 0) + 1
        if "priv" in f:
            self.priv[f["priv"]] = self.priv.get(f["priv"], 0) + 1
        self.n += 1

    def extra(self, kind, num=0, addr=0, val=0, size=0):
        for v in (self.n - 1, kind, num, addr, val, size):
            self.xh = fnv(self.xh, v)
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        self.nx += 1

    def write(self, path, **more):
        with open(path + ".tmp", "w") as f:
            f.write("hash_fields %s\n" % ",".join(self.fields))
            f.write("records %d\nhash %d\nextras %d\nxhash %d\n" % (self.n, self.h, self.nx, self.xh))
            for h, c in sorted(self.harts.items()):
                f.write("records_h%d %d\n" % (h, c))
            for p, c in sorted(self.priv.items()):
                f.write("priv%d %d\n" % (p, c))
            for k, c in sorted(self.kinds.items()):
                f.write("kind%d %d\n" % (k, c))
            for k, v in more.items():
                f.write("%s %s\n" % (k, v))
        os.replace(path + ".tmp", path)


SPIKE = re.compile(r"core\s+(\d+): (\d) 0x([0-9a-f]+) \(0x([0-9a-f]+)\)(.*)$")


def spike_fields(t, rest):
    toks = rest.split()
    i = 0
    while i < len(toks):
        tok = toks[i]
        if tok == "mem":
            addr = int(toks[i + 1], 16)
            if i + 2 < len(toks) and toks[i + 2].startswith("0x"):
                v = toks[i + 2]
                t.extra(X_STORE, 0, addr, int(v, 16), (len(v) - 2 + 1) // 2)
                i += 3
            else:
                t.extra(X_LOAD, 0, addr, 0, 0)
                i += 2
            continue
        m = re.match(r"([xfc])(\d+)(_\w+)?$", tok)
        if not m:
            raise SystemExit("spike: unexpected field %r" % tok)
        kind = {"x": X_REG, "f": X_FREG, "c": X_CSR}[m.group(1)]
        t.extra(kind, int(m.group(2)), 0, int(toks[i + 1], 16) & M, 0)
        i += 2


def spike(log, out):
    t = Truth(["pc", "insn", "priv", "hart"])
    satp = 0
    lines = []
    with open(log) as f:
        for line in f:
            m = SPIKE.match(line)
            if not m:
                raise SystemExit("spike: unexpected line %r" % line)
            hart, priv, pc, insn = int(m.group(1)), int(m.group(2)), int(m.group(3), 16), int(m.group(4), 16)
            t.rec(pc=pc, insn=insn, priv=priv, hart=hart)
            spike_fields(t, m.group(5))
            satp += "c384_satp" in line
            if len(lines) < 200000:
                lines.append(line)
    t.write(os.path.join(out, "spike.truth"), satp_writes=satp)
    # Two harts: blocks of 1000 lines alternate between core 0 and core 1.
    t2 = Truth(["pc", "insn", "priv", "hart"])
    with open(os.path.join(out, "spike-2core.log.tmp"), "w") as f:
        for i, line in enumerate(lines):
            if (i // 1000) % 2:
                line = line.replace("core   0:", "core   1:", 1)
            m = SPIKE.match(line)
            t2.rec(pc=int(m.group(3), 16), insn=int(m.group(4), 16), priv=int(m.group(2)), hart=int(m.group(1)))
            spike_fields(t2, m.group(5))
            f.write(line)
    os.replace(os.path.join(out, "spike-2core.log.tmp"), os.path.join(out, "spike-2core.log"))
    t2.write(os.path.join(out, "spike-2core.truth"))
    # The -l format (no commit lines): every 97th instruction "traps" first:
    # its line is followed by an exception line and a tval line, and it is
    # not a record; the next record carries the trap.
    t3 = Truth(["pc", "insn", "hart"])
    with open(os.path.join(out, "spike-l.log.tmp"), "w") as f:
        for i, line in enumerate(lines[:50000]):
            m = SPIKE.match(line)
            pc, insn = int(m.group(3), 16), int(m.group(4), 16)
            digits = 8 if insn & 3 == 3 else 4
            if i % 97 == 5:
                f.write("core   0: 0x%016x (0x%0*x) ecall\n" % (pc + 0x1000, 8, 0x73))
                f.write("core   0: exception trap_user_ecall, epc 0x%016x\n" % (pc + 0x1000))
                f.write("core   0:           tval 0x%016x\n" % (i,))
            f.write("core   0: 0x%016x (0x%0*x) disasm %d\n" % (pc, digits, insn, i))
            t3.rec(pc=pc, insn=insn, hart=0)
            if i % 97 == 5:
                t3.extra(X_TRAP, 0, i, 8, 0)
    os.replace(os.path.join(out, "spike-l.log.tmp"), os.path.join(out, "spike-l.log"))
    t3.write(os.path.join(out, "spike-l.truth"))


TRACE = re.compile(r"Trace (\d+): 0x([0-9a-f]+) \[([0-9a-f]+)/([0-9a-f]+)/([0-9a-f]+)/([0-9a-f]+)\]")
ASM = re.compile(r"0x([0-9a-f]+):\s+([0-9a-f]+)\s")
INT = re.compile(r"riscv_cpu_do_interrupt: hart:(\d+), async:(\d+), cause:([0-9a-f]+), epc:0x[0-9a-f]+, tval:0x([0-9a-f]+)")


def qemu_records(log):
    """Yields (hart, pc, insn, priv, trap) for the instructions that ran."""
    tb, block, pend, trap = {}, {}, None, None
    with open(log) as f:
        for line in f:
            m = TRACE.match(line)
            if m:
                if pend:
                    yield pend
                hart, host, pc, flags = int(m.group(1)), int(m.group(2), 16), int(m.group(4), 16), int(m.group(5), 16)
                if block:
                    insn = block.get(pc, 0)
                    tb[host] = (pc, insn)
                    block = {}
                else:
                    e = tb.get(host)
                    insn = e[1] if e and e[0] == pc else 0
                priv = flags & 3
                mytrap = None
                if trap and trap[0] == hart:
                    mytrap, trap = trap, None
                pend = (hart, pc, insn, 1 if priv == 2 else priv, mytrap)
                continue
            if line.startswith("IN:"):
                block = {}
                continue
            m = ASM.match(line)
            if m:
                block[int(m.group(1), 16)] = int(m.group(2), 16)
                continue
            if line.startswith("Stopped execution") or line.startswith("cpu_io_recompile"):
                if pend and pend[4]:
                    trap = pend[4]
                pend = None
                continue
            m = INT.match(line)
            if m:
                cause = int(m.group(3), 16) | ((1 << 63) if int(m.group(2)) else 0)
                trap = (int(m.group(1)), cause, int(m.group(4), 16))
    if pend:
        yield pend


def qemu(log, name, out):
    t = Truth(["pc", "insn", "priv", "hart"])
    for hart, pc, insn, priv, trap in qemu_records(log):
        t.rec(pc=pc, insn=insn, priv=priv, hart=hart)
        if trap:
            t.extra(X_TRAP, 0, trap[2], trap[1], 0)
    t.write(os.path.join(out, name + ".truth"))


def pcs_of(log, limit):
    if "spike" in os.path.basename(log):
        with open(log) as f:
            for i, line in enumerate(f):
                if i >= limit:
                    return
                yield int(SPIKE.match(line).group(3), 16)
    else:
        for hart, pc, insn, priv, trap in qemu_records(log):
            if hart == 0:
                yield pc


class Lcg:
    def __init__(self, seed):
        self.s = seed

    def next(self, n):
        self.s = (self.s * 6364136223846793005 + 1442695040888963407) & M
        return (self.s >> 33) % n


def tracerv(out, logs):
    """TracerV files in every layout: (name, words, width, valid bit, header, wide)."""
    layouts = [
        ("tv-old8-v40", 8, 7, 40, "1/1", 0),
        ("tv-c-v40-w1", 2, 1, 40, "1/1", 0),
        ("tv-c-v40-w2", 3, 2, 40, "2/3", 0),
        ("tv-c-v63-w1", 2, 1, 63, "1/2", 0),
        ("tv-c-v63-w2", 3, 2, 63, "1/1", 0),
        ("tv-c-v63-w3", 4, 3, 63, "3/1", 0),
        ("tv-c-v63-w7", 8, 7, 63, "1/1", 0),
        ("tv-wide12-v63", 8, 7, 63, "1/1", 12),
        ("tv-nohdr-v63-w1", 2, 1, 63, None, 0),
    ]
    pcs = []
    for log in logs:
        pcs.extend(pcs_of(log, 150000))
    for name, words, width, vbit, ratio, wide in layouts:
        rng = Lcg(words * 100 + vbit)
        t = Truth(["pc", "cycle"])
        cyc = 1000
        recs = bytearray()
        i = 0
        while i < len(pcs):
            cyc += 1 + pcs[i] % 3
            per_cycle = (1 + rng.next(wide)) if wide else (1 + rng.next(width))
            group = pcs[i:i + per_cycle]
            i += len(group)
            while group:  # a wide core: several records with the same cycle
                chunk, group = group[:width], group[width:]
                order = list(range(width))
                for j in range(width - 1, 0, -1):  # Fisher-Yates: which slots are valid
                    r = rng.next(j + 1)
                    order[j], order[r] = order[r], order[j]
                pos = sorted(order[:len(chunk)])
                words_v = [cyc] + [0] * (words - 1)
                for pc, p in zip(chunk, pos):
                    words_v[1 + p] = (pc & ((1 << 40) - 1)) | (1 << vbit)
                    t.rec(pc=pc, cycle=cyc)
                for w in words_v:
                    recs += (w & M).to_bytes(8, "little")
        path = os.path.join(out, name + ".bin")
        with open(path + ".tmp", "wb") as f:
            if ratio:
                f.write(b"# Clock Domain: tile0, Relative Frequency: %s of Base Clock\n" % ratio.encode())
            f.write(recs)
        os.replace(path + ".tmp", path)
        m, d = (ratio or "1/1").split("/")
        t.write(os.path.join(out, name + ".truth"), clock_num=d, clock_den=m, words=words,
                width=width, valid_bit=vbit)
    # Format 0 (text) of the compact width-2 layout's records
    t = Truth(["pc", "cycle"])
    rng = Lcg(7)
    cyc = 1000
    with open(os.path.join(out, "tv-text.txt.tmp"), "w") as f:
        f.write("# Clock Domain: tile0, Relative Frequency: 1/1 of Base Clock\n")
        i = 0
        while i < len(pcs):
            cyc += 1 + pcs[i] % 3
            k = 1 + rng.next(2)
            for q, pc in enumerate(pcs[i:i + k]):
                f.write("Cycle: %016d I%d: %016x\n" % (cyc, q, pc & ((1 << 40) - 1)))
                t.rec(pc=pc, cycle=cyc)
            i += k
    os.replace(os.path.join(out, "tv-text.txt.tmp"), os.path.join(out, "tv-text.txt"))
    t.write(os.path.join(out, "tv-text.truth"), clock_num=1, clock_den=1)


def fireperf(log, nm, out):
    """FirePerf's algorithm (TRACERV.md), simplified: by function name."""
    syms = []
    with open(nm) as f:
        for line in f:
            p = line.split()
            if len(p) == 3 and p[1] in "tTwW":
                syms.append((int(p[0], 16), p[2]))
    syms.sort()
    starts = [s[0] for s in syms]
    import bisect
    stack, lines, cyc = [], [], 0
    nstart = nend = nzero = 0
    for hart, pc, insn, priv, trap in qemu_records(log):
        if hart:
            continue
        cyc += 2
        k = bisect.bisect_right(starts, pc) - 1
        name = syms[k][1] if k >= 0 else "USERSPACE_ALL"
        entry = k >= 0 and syms[k][0] == pc
        if stack and stack[-1] == name:
            continue
        if entry or not stack:
            stack.append(name)
            lines.append("Indent: %d, Start label: %s, At cycle: %d" % (len(stack), name, cyc))
            nstart += 1
            continue
        while stack and stack[-1] != name:
            lines.append("Indent: %d, End label: %s, End cycle: %d" % (len(stack), stack[-1], cyc))
            stack.pop()
            nend += 1
        if not stack:
            lines.append("WARN: STACK ZEROED WHEN WE WERE LOOKING FOR LABEL: %s, iaddr 0x%x" % (name, pc))
            lines.append("WARN: is_callsite was: 0, is_fn_entry was: 0")
            nzero += 1
            stack.append(name)
            lines.append("Indent: %d, Start label: %s, At cycle: %d" % (len(stack), name, cyc))
            nstart += 1
    h = FNV0
    for line in lines:
        if line.startswith("Indent"):
            h = fnv(h, int(line.rsplit(" ", 1)[1]))
    with open(os.path.join(out, "fireperf.txt.tmp"), "w") as f:
        f.write("# Clock Domain: tile0, Relative Frequency: 1/1 of Base Clock\n")
        f.write("\n".join(lines) + "\n")
    os.replace(os.path.join(out, "fireperf.txt.tmp"), os.path.join(out, "fireperf.txt"))
    with open(os.path.join(out, "fireperf.truth"), "w") as f:
        f.write("starts %d\nends %d\nzeroed %d\ncycle_hash %d\n" % (nstart, nend, nzero, h))


def main():
    a = sys.argv[1:]
    if a[:1] == ["spike"]:
        spike(a[1], a[2])
    elif a[:1] == ["qemu"]:
        qemu(a[1], a[2], a[3])
    elif a[:1] == ["tracerv"]:
        tracerv(a[1], a[2:])
    elif a[:1] == ["fireperf"]:
        fireperf(a[1], a[2], a[3])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
