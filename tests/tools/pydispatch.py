#!/usr/bin/env python3
"""Bytecode dispatches of CPython 3.11 in a pc histogram (issue 18, step 3's premise).

With computed gotos, every bytecode dispatch in _PyEval_EvalFrameDefault is
`goto *opcode_targets[opcode]`: the executed handler labels are the executed
(quickened) opcodes. opcode_targets is a static local of the eval function:
no symbol; it is found as the one run of 256 aligned pointers into the eval
function in the ELF's data. _PyOpcode_Deopt (a symbol) maps a quickened
opcode to the instruction the host's dis shows.

  pydispatch.py check ELF
      The premise itself, on this ELF: the table exists (computed gotos
      are on) and objdump -d of the eval function shows no branch or jump
      to a label and no label that code falls through into. Prints
      "[labels] <n>", "[direct] <n>", "[fallthrough] <n>" (the last two
      must be 0), exit status 1 when they are not.
  pydispatch.py frames ELF HIST
      Frame starts: every Python frame the eval loop starts (a call into
      _PyEval_EvalFrameDefault, a Python-to-Python call inlined in it, a
      generator resumed) passes the C label start_frame (its pc from
      DWARF's DW_TAG_label), then dispatches RESUME (after COPY_FREE_VARS
      or MAKE_CELL, or after the POP_TOP of a generator's first resumption)
      or RETURN_GENERATOR (a generator function's call). Prints
      "[start_frame] <n>", "[resume] <n>" (RESUME and RESUME_QUICK
      dispatches), "[return_generator] <n>"; exit status 1 unless
      start_frame = resume + return_generator.
  pydispatch.py ELF HIST [BASE]
      ELF: a static CPython 3.11 (tests/tools/gen-python.sh); HIST:
      "0x<pc> <count>" (the plugin's). Prints the table's address, then
      "<opcode names> <executions>" per handler label that ran, quickened
      names as dis._all_opname gives them, labels shared by several opcodes
      joined with ","; "[total] <n>". With BASE (the histogram of another
      run of the same ELF), the counts are HIST minus BASE.

A label's count is every execution of its first instruction. Each dispatch
executes one, and only an indirect jump reaches a label: in the build of
gen-python.sh (3.11.2, gcc 12, -O3) objdump shows no branch or jump to one
of the 183 labels and none that code falls through into
(JUMP_TO_INSTRUCTION enters a handler after its label, at PREDICT_ID).
A dispatch is not one instruction: superinstructions (LOAD_FAST__LOAD_CONST,
...) run two, COMPARE_OP_*_JUMP runs the jump after it, the PRECALL
specializations that call (PRECALL_NO_KW_*, ...) skip their CALL.
Needs binutils for riscv64 (readelf) and the host's python3.11 (for dis).
"""
import collections
import dis
import os
import re
import struct
import subprocess
import sys

CROSS = os.environ.get("CROSS", "riscv64-linux-gnu-")


def die(msg):
    sys.stderr.write("pydispatch.py: %s\n" % msg)
    sys.exit(2)


def run(*argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        die("%s: %s" % (argv[0], e))


def symbols(elf):
    out = {}
    for line in run(CROSS + "readelf", "-sW", elf).splitlines():
        f = line.split()
        if len(f) >= 8 and f[0][:-1].isdigit():
            out.setdefault(f[7], (int(f[1], 16), int(f[2], 0)))
    return out


def sections(elf):
    out = []
    for line in run(CROSS + "readelf", "-SW", elf).splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+\S+\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m and m.group(1) != "NOBITS" and int(m.group(2), 16):
            out.append(tuple(int(m.group(i), 16) for i in (2, 3, 4)))
    return out


def dispatch_table(elf):
    """(address, [256 label addresses], deopt bytes)."""
    syms, data = symbols(elf), open(elf, "rb").read()
    if "_PyEval_EvalFrameDefault" not in syms or "_PyOpcode_Deopt" not in syms:
        die("%s: not a CPython 3.11 with symbols" % elf)
    lo, n = syms["_PyEval_EvalFrameDefault"]
    secs = sections(elf)
    found = []
    for va, off, size in secs:
        if va % 8:
            continue
        words = struct.unpack_from("<%dQ" % (size // 8), data, off)
        run_ = 0
        for i, w in enumerate(words):
            run_ = run_ + 1 if lo <= w < lo + n else 0
            if run_ == 256:
                found.append((va + (i - 255) * 8, words[i - 255:i + 1]))
    if len(found) != 1:
        die("%s: %d candidate opcode_targets tables (computed gotos off?)" % (elf, len(found)))
    da = syms["_PyOpcode_Deopt"][0]
    for va, off, size in secs:
        if va <= da < va + size:
            return found[0][0], found[0][1], data[off + da - va:off + da - va + 256]
    die("%s: _PyOpcode_Deopt in no section" % elf)


def read_hist(path):
    h = {}
    try:
        for line in open(path):
            a, c = line.split()
            h[int(a, 16)] = int(c)
    except (OSError, ValueError) as e:
        die("%s: %s" % (path, e))
    return h


def check(elf):
    _, targets, _ = dispatch_table(elf)
    labels = set(targets)
    lo, n = symbols(elf)["_PyEval_EvalFrameDefault"]
    dis_ = run(CROSS + "objdump", "-d", "--no-show-raw-insn", "--start-address=%#x" % lo,
               "--stop-address=%#x" % (lo + n), elf)
    insns = []
    for line in dis_.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(\S+)\s*(\S*)", line)
        if m:
            insns.append((int(m.group(1), 16), m.group(2), m.group(3)))
    direct = fall = 0
    for i, (a, mnem, ops) in enumerate(insns):
        tgt = ops.split(",")[-1]
        if (mnem == "j" or mnem.startswith("b")) and re.fullmatch(r"[0-9a-f]+", tgt) and \
                int(tgt, 16) in labels:
            direct += 1
        if a in labels and i and insns[i - 1][1] not in ("j", "jr", "ret", "tail"):
            fall += 1
    print("[labels] %d" % len(labels))
    print("[direct] %d" % direct)
    print("[fallthrough] %d" % fall)
    sys.exit(1 if direct or fall else 0)


def label_pc(elf, name):
    """DW_AT_low_pc of the DW_TAG_label NAME (the first one)."""
    cur = None
    for line in run(CROSS + "objdump", "--dwarf=info", elf).splitlines():
        if "DW_TAG_" in line:
            cur = "label" if "DW_TAG_label" in line else None
        elif cur == "label" and "DW_AT_name" in line:
            cur = "want" if line.rstrip().endswith(": " + name) else None
        elif cur == "want" and "DW_AT_low_pc" in line:
            return int(line.split()[-1], 16)
    die("%s: no DW_TAG_label %s" % (elf, name))


def frames(elf, hist):
    _, targets, _ = dispatch_table(elf)
    h = read_hist(hist)
    start = h.get(label_pc(elf, "start_frame"), 0)
    by = collections.Counter()
    for t in set(targets):
        for op in {o for o, u in enumerate(targets) if u == t}:
            by[dis._all_opname[op]] += h.get(t, 0)
    resume = by["RESUME"] + by["RESUME_QUICK"]
    print("[start_frame] %d" % start)
    print("[resume] %d" % resume)
    print("[return_generator] %d" % by["RETURN_GENERATOR"])
    sys.exit(0 if start == resume + by["RETURN_GENERATOR"] else 1)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "check":
        check(sys.argv[2])
    if len(sys.argv) == 4 and sys.argv[1] == "frames":
        frames(sys.argv[2], sys.argv[3])
    if len(sys.argv) not in (3, 4):
        die("usage: pydispatch.py check ELF | frames ELF HIST | ELF HIST [BASE]")
    addr, targets, _ = dispatch_table(sys.argv[1])
    h = read_hist(sys.argv[2])
    base = read_hist(sys.argv[3]) if len(sys.argv) == 4 else {}
    labels = collections.defaultdict(list)
    for op, t in enumerate(targets):
        labels[t].append(op)
    print("[table] 0x%x %d labels" % (addr, len(labels)))
    counts, total = [], 0
    for t, ops in labels.items():
        c = h.get(t, 0) - base.get(t, 0)
        if c:
            name = ",".join(dis._all_opname[o] for o in ops) if len(ops) < 8 else "[unknown opcode]"
            counts.append((name, c))
            total += c
    for name, c in sorted(counts, key=lambda x: (-x[1], x[0])):
        print("%s %d" % (name, c))
    print("[total] %d" % total)


if __name__ == "__main__":
    main()
