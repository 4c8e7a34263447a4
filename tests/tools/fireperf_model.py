#!/usr/bin/env python3
"""FirePerf's stack reconstruction, reimplemented for comparison with oobprof.

An independent model of the baseline that ../shared/TRACERV.md describes in
"How FirePerf rebuilds stacks (the baseline)", run on the pc stream of a Spike
--log-commits log (TracerV exports only pcs, so privilege, instruction bits and
CSR writes in the log are ignored). Details TRACERV.md summarizes are taken
from the code it was written from, Chipyard's TracerV bridge driver
(generators/firechip/bridgestubs/src/main/cc/bridges/tracerv/: tracerv_elf.cc,
tracerv_dwarf.cc, tracerv_processing.cc, trace_tracker.cc) and FireSim's fold
script utils/fireperf/stackcollapse-tracerv.py; each rule names its source.

  fireperf_model.py [--module ELF[@BASE]]... [--per-insn] [--mapping-symbols]
                    [--events OUT] VMLINUX LOG

Prints folded stacks ("frame;frame;... count"), weighted by instructions:
cycle = instruction index, since a Spike log has no cycles. Instructions that
FirePerf's fold drops (stack empty) are printed under the frame "[none]" so
that totals match the trace.

  --module ELF[@BASE]  also look pcs up in this ELF when the kernel's image
                       does not hold them, as FireSim's older TraceTracker did
                       for kernel modules (first ELF whose image holds the pc
                       wins; no notion of address spaces). Without it, the
                       faithful baseline: one ELF, user space = USERSPACE_ALL.
  --per-insn           charge each instruction to the stack open after it
                       (instead of FirePerf's event timestamps, see fold_events)
  --mapping-symbols    keep RISC-V mapping symbols ($x, $d) as labels, as the
                       real driver does with binutils >= 2.40 (default: drop)
  --symtab-table       not FirePerf: take function ranges from the symbol
                       table's sizes instead of DWARF (same algorithm)
  --events OUT         also write FirePerf's event log (TRACERV.md "Format 2")
"""
import bisect
import os
import re
import subprocess
import sys

CROSS = os.environ.get("CROSS", "riscv64-linux-gnu-")
USER = "USERSPACE_ALL"
LINE = re.compile(rb"core\s+\d+: \d (0x[0-9a-f]+) \((0x[0-9a-f]+)\)")


def run(argv):
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def dwarf_subprograms(elf):
    """TRACERV.md: "top-level DWARF subprograms with ranges" (tracerv_dwarf.cc
    die_subprogram): DW_TAG_subprogram children of a CU that have a name (own
    or via DW_AT_abstract_origin) and DW_AT_low_pc/high_pc; DW_AT_ranges-only
    functions are skipped. The first one at a low_pc wins. -> {lowpc: (end, name)}"""
    names, subs, die = {}, [], None
    for line in run([CROSS + "readelf", "--debug-dump=info", "--dwarf-depth=2", elf]).splitlines():
        if line.startswith(" <"):
            m = re.match(r" <(\d+)><([0-9a-f]+)>: Abbrev Number: \d+ \((\w+)\)", line)
            die = None
            if m and m.group(1) == "1":
                die = {"off": int(m.group(2), 16), "tag": m.group(3)}
                subs.append(die)
            continue
        if die is None:
            continue
        f = line.split(None, 1)
        if len(f) < 2 or not f[1].startswith("DW_AT_"):
            continue
        attr, _, val = f[1].partition(":")
        attr, val = attr.strip(), val.strip()
        if attr == "DW_AT_name":
            die["name"] = val.rsplit("): ", 1)[-1] if val.startswith("(") else val
            names[die["off"]] = die["name"]
        elif attr in ("DW_AT_low_pc", "DW_AT_high_pc"):
            v = val.split()[-1]  # hex for data8/addr, decimal for udata
            die[attr] = int(v, 16) if v.startswith("0x") else int(v)
        elif attr == "DW_AT_abstract_origin":
            die["origin"] = int(val.strip("<>"), 16)
    table = {}
    for d in subs:
        name = d.get("name") or names.get(d.get("origin"))
        lo, hi = d.get("DW_AT_low_pc"), d.get("DW_AT_high_pc")
        if d["tag"] != "DW_TAG_subprogram" or not name or lo is None or hi is None:
            continue
        if hi < lo:  # DWARF 4+: high_pc as an offset from low_pc
            hi += lo
        table.setdefault(lo, (hi, name))
    return table


class Image:
    """ObjdumpedBinary (tracerv_processing.cc): FirePerf's dense per-byte table,
    kept here as sorted entries (start, end or 0 = unbounded, name, asm)."""

    def __init__(self, elf, base=0, mapping_symbols=False, symtab_table=False):
        secs = {}  # executable sections: index -> (addr, size)
        for m in re.finditer(r"\[\s*(\d+)\]\s+\S+\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)"
                             r"\s+[0-9a-f]+\s+(\S*)", run([CROSS + "readelf", "-SW", elf])):
            if "X" in m.group(4):
                secs[int(m.group(1))] = (int(m.group(2), 16), int(m.group(3), 16))
        lowpc = min(a for a, s in secs.values())
        highpc = max(a + s for a, s in secs.values())
        symtab = [line.split() for line in run([CROSS + "readelf", "-sW", elf]).splitlines()]
        symtab = [f for f in symtab if len(f) >= 8 and f[0].endswith(":") and f[6].isdigit()]
        if symtab_table:
            # Not FirePerf: --symtab-table puts the symbol table's sized
            # symbols where FirePerf puts DWARF subprograms.
            dwarf = {}
            for f in symtab:
                if int(f[6]) in secs and int(f[2], 0) and f[3] in ("FUNC", "NOTYPE"):
                    a = int(f[1], 16)
                    dwarf.setdefault(a, (a + int(f[2], 0), f[7].split("@")[0], f[3] != "FUNC"))
        else:
            dwarf = {lo: (hi, name, False) for lo, (hi, name) in dwarf_subprograms(elf).items()}
        los = sorted(dwarf)
        # TRACERV.md: "gaps filled from the ELF symbol table" (tracerv_elf.cc
        # subroutines): every named .symtab symbol of an executable section, in
        # symbol-table order, unless a subroutine already starts at its address
        # or a DWARF range holds it. It has no end; function = STT_FUNC.
        syms = {}
        for f in symtab:
            addr, typ, ndx, name = int(f[1], 16), f[3], int(f[6]), f[7]
            if ndx not in secs or typ == "SECTION" or addr in dwarf or addr in syms:
                continue
            if name.startswith("$") and not mapping_symbols:
                continue  # $x/$d: the driver predates them; see --mapping-symbols
            i = bisect.bisect_right(los, addr) - 1
            if i >= 0 and addr < dwarf[los[i]][0]:
                continue
            syms[addr] = (0, name.split("@")[0], typ != "FUNC")
        table = dict(dwarf)
        table.update(syms)
        # Filling the per-byte table: a subroutine whose first byte is already
        # taken by an earlier body is skipped ("subroutine overlap").
        self.entries, covered = [], 0
        for start in sorted(table):
            end, name, asm = table[start]
            if start < covered:
                continue
            covered = max(covered, end)
            self.entries.append((start + base, end + base if end else 0, name, asm))
        self.starts = [e[0] for e in self.entries]
        self.lo = min(self.starts[0], lowpc + base) if self.starts else lowpc + base
        self.hi = max([highpc + base] + [e[1] for e in self.entries])

    def lookup(self, pc):
        """getInstrFromAddr: None outside the image and in gaps after a bounded
        subroutine; else (name, first byte?, asm sequence?)."""
        if not self.lo <= pc < self.hi:
            return None
        i = bisect.bisect_right(self.starts, pc) - 1
        if i < 0:
            return None
        start, end, name, asm = self.entries[i]
        if end and pc >= end:
            return None
        return (name, pc == start, asm)


def read_pcs(path):
    """pcs (and instruction bits, for callers that want them) of a Spike
    --log-commits log; lines without a privilege digit (spike -l) are skipped."""
    pcs, insns = [], []
    with open(path, "rb") as f:
        for line in f:
            m = LINE.match(line)
            if m:
                pcs.append(int(m.group(1), 16))
                insns.append(m.group(2))
    return pcs, insns


class Tracker:
    """TraceTracker::addInstruction (trace_tracker.cc), one call per pc.
    Labels are [name, start_cycle, end_cycle, asm]; events are
    (cycle, "Start"/"End", name, indent, bottom) as FirePerf prints them (and
    (cycle, "WARN", label, pc, None) for STACK ZEROED), plus
    bookkeeping that does not change the algorithm: bottom = (cycle, why) of
    the last push onto an empty stack, why = "start" (trace start), "user"
    (after USERSPACE_ALL) or "zeroed" (after STACK ZEROED)."""

    def __init__(self, images):
        self.images, self.cache = images, {}
        self.stack, self.events = [], []
        self.counts = dict(push=0, pop=0, asm_replace=0, zeroed=0, user_enter=0)
        self.zeroed_at = []  # (cycle, label looked for)
        self.bottom, self.why = (0, "start"), "start"

    def lookup(self, pc):
        r = self.cache.get(pc, 0)
        if r == 0:
            r = None
            for img in self.images:  # kernel first, then --module ELFs
                r = img.lookup(pc)
                if r:
                    break
            self.cache[pc] = r
        return r

    def push(self, name, cycle, asm, replace=False):
        if not self.stack and not replace:
            self.bottom = (cycle, self.why)
        self.stack.append([name, cycle, cycle, asm])
        self.events.append((cycle, "Start", name, len(self.stack), self.bottom))
        self.counts["push"] += 1

    def pop(self, cycle, touch=True):
        lab = self.stack.pop()
        self.events.append((lab[2], "End", lab[0], len(self.stack) + 1, None))
        self.counts["pop"] += 1
        if touch and self.stack:  # "last_label->end_cycle = cycle"
            self.stack[-1][2] = cycle

    def add(self, pc, cycle):
        st, r = self.stack, self.lookup(pc)
        if r is None:
            # TRACERV.md: "outside the kernel image -> everything collapses into
            # one frame, USERSPACE_ALL": empty the stack, push USERSPACE_ALL.
            if len(st) == 1 and st[0][0] == USER:
                st[0][2] = cycle
                return
            while st:
                self.pop(cycle)
            self.push(USER, cycle, False)
            self.counts["user_enter"] += 1
            return
        name, entry, asm = r
        if st and st[-1][0] == USER:  # leaving user space: close USERSPACE_ALL
            self.pop(cycle, touch=False)
            self.why = "user"
        if st and st[-1][0] == name:
            # TRACERV.md: "Same function as the top frame -> continuation (so
            # recursion is invisible)".
            st[-1][2] = cycle
        elif st and asm and st[-1][3]:
            # trace_tracker.cc (not in TRACERV.md): between two "asm sequence"
            # labels (symbol-table symbols that are not STT_FUNC, e.g. entry.S's
            # handle_exception, ret_from_exception) the top is replaced.
            self.pop(cycle, touch=False)
            self.push(name, cycle, asm, replace=True)
            self.counts["asm_replace"] += 1
        elif st and not entry:
            # TRACERV.md: "Any other byte of a different function -> return: pop
            # until a frame with that name; if none, empty the stack and warn."
            while st and st[-1][0] != name:
                self.pop(cycle)
            if not st:  # "WARN: STACK ZEROED WHEN WE WERE LOOKING FOR LABEL"
                self.counts["zeroed"] += 1
                self.zeroed_at.append((cycle, name))
                self.events.append((cycle, "WARN", name, pc, None))
                self.why = "zeroed"
        else:
            # TRACERV.md: "First byte of a different function -> call" (also:
            # anything on an empty stack).
            self.push(name, cycle, asm)


def track(pcs, images, per_insn=False):
    """Runs the tracker over the pcs. Returns (tracker, stacks, sid, bottom):
    stacks is a list of tuples of frame names, sid[i] the index in stacks of
    the stack instruction i is charged to, bottom[i] the Tracker.bottom of that
    stack."""
    t = Tracker(images)
    stacks, ids, sid, bottom = [], {}, [], []

    def intern(frames):
        k = tuple(frames)
        if k not in ids:
            ids[k] = len(stacks)
            stacks.append(k)
        return ids[k]

    if per_insn:
        for i, pc in enumerate(pcs):
            t.add(pc, i)
            sid.append(intern(l[0] for l in t.stack))
            bottom.append(t.bottom)
        return t, stacks, sid, bottom
    for i, pc in enumerate(pcs):
        t.add(pc, i)
    # Close what is still open when the trace ends (FirePerf never does: the
    # tail after the last event would be lost), so that totals match.
    if t.stack:
        t.stack[-1][2] = len(pcs)
    while t.stack:
        t.pop(len(pcs))
    sid, bottom = fold_events(t.events, len(pcs), intern)
    assert len(sid) == len(pcs), "non-monotonic event cycles"
    return t, stacks, sid, bottom


def fold_events(events, n, intern):
    """stackcollapse-tracerv.py; TRACERV.md: "Cycles between two events go to
    the stack open before the event." An End event carries the label's
    end_cycle, the last cycle seen in it, so the cycle of a callee's last
    instruction (its ret) goes to the caller, and the cycle before a push of
    USERSPACE_ALL or after STACK ZEROED to the empty stack (dropped by the
    script; "[none]" here)."""
    sid, bottom, stack, last, key, bot = [], [], [], 0, intern(()), (0, "start")
    for cycle, kind, name, _, b in events:
        if kind == "WARN":
            continue
        cycle = min(cycle, n)
        sid.extend([key] * (cycle - last))
        bottom.extend([bot] * (cycle - last))
        last = cycle
        if kind == "Start":
            stack.append(name)
            bot = b
        else:
            stack.pop()
        key = intern(stack)
    sid.extend([key] * (n - last))
    bottom.extend([bot] * (n - last))
    return sid, bottom


def parse_elf_arg(arg):
    path, _, base = arg.partition("@")
    return path, int(base, 0) if base else 0


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--module", action="append", default=[])
    ap.add_argument("--per-insn", action="store_true")
    ap.add_argument("--mapping-symbols", action="store_true")
    ap.add_argument("--symtab-table", action="store_true")
    ap.add_argument("--events")
    ap.add_argument("vmlinux")
    ap.add_argument("log")
    a = ap.parse_args(argv)
    images = [Image(p, b, a.mapping_symbols, a.symtab_table)
              for p, b in [(a.vmlinux, 0)] + [parse_elf_arg(m) for m in a.module]]
    pcs, _ = read_pcs(a.log)
    t, stacks, sid, _ = track(pcs, images, a.per_insn)
    if a.events:
        with open(a.events, "w") as f:
            for cycle, kind, name, indent, _ in t.events:
                if kind == "WARN":
                    f.write("WARN: STACK ZEROED WHEN WE WERE LOOKING FOR LABEL: %s, "
                            "iaddr 0x%x\n" % (name, indent))
                    continue
                at = "At cycle" if kind == "Start" else "End cycle"
                f.write("Indent: %d, %s label: %s, %s: %d\n" % (indent, kind, name, at, cycle))
    counts = [0] * len(stacks)
    for s in sid:
        counts[s] += 1
    out = sys.stdout
    for s, c in zip(stacks, counts):
        if c:
            out.write("%s %d\n" % (";".join(s) or "[none]", c))
    sys.stderr.write("fireperf_model: %d instructions, %s\n" % (
        len(pcs), ", ".join("%s=%d" % kv for kv in t.counts.items())))


if __name__ == "__main__":
    main(sys.argv[1:])
