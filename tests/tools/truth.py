#!/usr/bin/env python3
"""Ground truth for the end-to-end tests, computed without any oobprof code.

Sources of truth: the instruction histogram that tests/tools/oobtrace.c counts
inside QEMU ("0x<pc> <count>" lines); the symbol tables as binutils prints
them (riscv64-linux-gnu-readelf -sW: function symbols, sizes, source files;
nm cannot tell a function from a code label, readelf can), objdump's
"<name@plt>" labels of PLT stubs; and the "calls <name> <n>" lines the test
programs print about themselves.

  truth.py self [--aliases] [--asm] [--addrs] HIST ELF[@BASE]...
      Self instructions per function: each executed pc counts for the function
      symbol (STT_FUNC, STT_GNU_IFUNC, a PLT stub "name@plt" or the PLT's
      lazy-binding trampoline ".plt", named as objdump labels them) whose
      [address, address + size) holds it (a size of 0 extends to the next
      function). With --asm, code that assembly declares without a type
      counts too (STT_NOTYPE symbols in an executable section, as the Linux
      kernel's ENTRY()/END() make them: __memcpy, handle_exception; crt1's
      load_gp): a sized one like a function, a size-0 one only for pcs that
      no function or sized symbol holds, up to the next symbol of its section.
      With --addrs, functions are named "<binary>:0x<address>" (run-time
      entry address) instead of by symbol names.
      One line "<name> <count>" per function that ran, then
      "[elf:<binary>] <count> symtab|dynsym" per ELF (the instructions inside
      its PT_LOAD segments, and whether it has a full symbol table or only the
      dynamic symbols of a stripped library, whose unnamed functions leave
      gaps), "[nosym] <count>" for pcs in no function, "[total] <count>".
      Names: "<name>@<file>" when several functions of one ELF share a name
      (file from the STT_FILE symbol that precedes a local symbol); prefixed
      "<binary>:" when more than one ELF is given. --aliases appends the other
      names of the same address to each line.
  truth.py calls OUT
      The "calls <name> <n>" lines of a program's output, as "<name> <n>".
  truth.py entries [--addrs] HIST ELF
      Calls per function of a static ELF, for programs that cannot count
      their own: the executions of the function's entry pc, for every
      function no branch or jump of its own body targets at its entry (a
      loop back to the entry would count there too; such functions, listed
      on stderr, are left out; so is the ELF's entry point, where the process
      starts). Every other arrival at an entry is an entry
      in oobprof's sense (RECONSTRUCTION.md 3.1-3.2: a call, a tail call, a
      jump or fall-through from another function). Branches come from
      objdump -d. One line "<name> <count>" per function that ran, names as
      `self` gives them (--addrs: "<binary>:0x<address>").
  truth.py maps --log LOG --sysroot DIR EXE
      Load bases of a dynamically linked program run under
      qemu-riscv64 -L DIR -strace -d page -D LOG (one log holds both):
      "<path> 0x<base>" per ELF (main program, ld.so, every library mmapped at
      file offset 0 with PROT_EXEC).

Exit status 2 with a message on stderr for unreadable or malformed input.
"""
import bisect
import os
import re
import subprocess
import sys

CROSS = os.environ.get("CROSS", "riscv64-linux-gnu-")


def die(msg):
    sys.stderr.write("truth.py: %s\n" % msg)
    sys.exit(2)


def run(argv):
    try:
        p = subprocess.run(argv, capture_output=True, text=True)
    except OSError as e:
        die("%s: %s" % (argv[0], e))
    if p.returncode != 0:
        die("%s failed: %s" % (" ".join(argv), p.stderr.strip()))
    return p.stdout


def code_sections(path):
    """{section index: (start, end)} of the ELF's executable sections."""
    secs = {}
    for line in run([CROSS + "readelf", "-SW", path]).splitlines():
        m = re.match(r"\s*\[\s*(\d+)\]\s+\S+\s+(\S+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)"
                     r"\s+[0-9a-f]+\s+(\S*)", line)
        if m and m.group(2) != "NOBITS" and "X" in m.group(5):
            start = int(m.group(3), 16)
            secs[int(m.group(1))] = (start, start + int(m.group(4), 16))
    return secs


def read_symbols(path, asm=False):
    """Function symbols of one ELF: ([(addr, size, name, is_global, file)], table, labels).

    table is "symtab" when the ELF has a .symtab, else "dynsym" (a stripped
    library). Only STT_FUNC and STT_GNU_IFUNC count: a code label (NOTYPE,
    e.g. crt1's load_gp) is not a function. file is the STT_FILE name that
    precedes a local symbol. With asm, NOTYPE symbols of executable sections
    count too: sized ones among the functions, size-0 ones as labels
    [(addr, end, name)], end being the next symbol's address in the section
    (or its end). Mapping symbols ($x) and assembler locals (.L) never count.
    """
    secs = code_sections(path) if asm else {}
    untyped = {}
    tables, cur, file = {}, None, None
    for line in run([CROSS + "readelf", "-sW", path]).splitlines():
        m = re.match(r"Symbol table '(\S+)'", line)
        if m:
            cur, file = tables.setdefault(m.group(1), []), None
            code = untyped.setdefault(m.group(1), [])
            continue
        f = line.split()
        if cur is None or len(f) < 8 or not f[0].endswith(":"):
            continue
        typ, bind, ndx, name = f[3], f[4], f[6], f[7]
        if typ == "FILE":
            file = name
        elif typ in ("FUNC", "IFUNC") and ndx not in ("UND", "ABS"):
            cur.append((int(f[1], 16), int(f[2], 0), name.split("@")[0], bind != "LOCAL",
                        file if bind == "LOCAL" else None))
        elif (typ == "NOTYPE" and ndx.isdigit() and int(ndx) in secs and
              not name.startswith("$") and ".L" not in name):
            code.append((int(f[1], 16), int(f[2], 0), name, bind != "LOCAL", int(ndx)))
    table = ".symtab" if tables.get(".symtab") else ".dynsym"
    syms = tables.get(table, [])
    labels = []
    if asm:
        code = untyped.get(table, [])
        syms += [(a, n, name, glob, None) for a, n, name, glob, _ in code if n]
        starts = {}
        for a, _, _, _, ndx in code:
            starts.setdefault(ndx, set()).add(a)
        for a, _, _, _, _ in syms:
            for ndx, (lo, hi) in secs.items():
                if lo <= a < hi:
                    starts.setdefault(ndx, set()).add(a)
        for a, n, name, _, ndx in code:
            if not n:
                nxt = [b for b in starts[ndx] if b > a]
                labels.append((a, min(nxt) if nxt else secs[ndx][1], name))
    return syms, table[1:], sorted(labels)


def plt_entries(path):
    """[(addr, size, name)] of the PLT, as objdump labels it: each stub
    "name@plt", and the lazy-binding trampoline at the start, ".plt"."""
    if ".plt " not in run([CROSS + "readelf", "-SW", path]):
        return []
    heads = []
    for line in run([CROSS + "objdump", "-d", "-j", ".plt", path]).splitlines():
        m = re.match(r"([0-9a-f]+) <([^>]+)>:", line)
        if m:
            heads.append((int(m.group(1), 16), m.group(2)))
    out = []
    for i, (addr, name) in enumerate(heads):
        if name.endswith("@plt") or name == ".plt":
            end = heads[i + 1][0] if i + 1 < len(heads) else addr + 16
            out.append((addr, end - addr, name))
    return out


class Elf:
    """Function ranges of one ELF at a load base, aliases merged."""

    def __init__(self, spec, asm=False):
        path, _, base = spec.partition("@")
        if not os.path.isfile(path):
            die("%s: no such file" % path)
        try:
            self.base = int(base, 16) if base else 0
        except ValueError:
            die("%s: bad load base" % spec)
        self.path, self.bin = path, os.path.basename(path)
        syms, self.table, self.labels = read_symbols(path, asm)
        self.label_addrs = [a for a, _, _ in self.labels]
        files = {(name, addr): f for addr, _, name, _, f in syms if f}
        syms += [(a, n, name, True, None) for a, n, name in plt_entries(path)]
        by_addr = {}
        for addr, size, name, glob, _ in syms:
            e = by_addr.setdefault(addr, {"size": size, "names": []})
            e["size"] = max(e["size"], size)
            e["names"].append((not glob, name))
        self.addrs = sorted(by_addr)
        self.entries = [by_addr[a] for a in self.addrs]
        for i, e in enumerate(self.entries):
            if e["size"] == 0:  # e.g. crtbegin's frame_dummy
                nxt = self.addrs[i + 1] if i + 1 < len(self.addrs) else self.addrs[i] + 4
                e["size"] = nxt - self.addrs[i]
            e["names"] = [n for _, n in sorted(set(e["names"]))]
        self.qualify_duplicates(files)
        self.segments = []
        for line in run([CROSS + "readelf", "-lW", path]).splitlines():
            f = line.split()
            if f and f[0] == "LOAD":
                vaddr, memsz = int(f[2], 16), int(f[5], 16)
                self.segments.append((vaddr, vaddr + memsz))

    def qualify_duplicates(self, files):
        seen = {}
        for a, e in zip(self.addrs, self.entries):
            for n in e["names"]:
                seen.setdefault(n, []).append(a)
        dups = {n for n, v in seen.items() if len(v) > 1}
        for a, e in zip(self.addrs, self.entries):
            e["names"] = [
                "%s@%s" % (n, files.get((n, a), "?")) if n in dups else n for n in e["names"]
            ]

    def holds(self, pc):
        """Whether pc lies in one of the ELF's PT_LOAD segments."""
        return any(lo <= pc - self.base < hi for lo, hi in self.segments)

    def lookup(self, pc):
        """Index of the function holding pc, or None."""
        off = pc - self.base
        i = bisect.bisect_right(self.addrs, off) - 1
        # A zero-size or short symbol may sit inside a larger one: walk back.
        while i >= 0:
            if off < self.addrs[i] + self.entries[i]["size"]:
                return i
            if self.addrs[i] + 0x100000 < off:
                break
            i -= 1
        return None

    def lookup_label(self, pc):
        """(address, name) of the size-0 code label holding pc (--asm), or None.
        Only meaningful where lookup() found no function."""
        off = pc - self.base
        i = bisect.bisect_right(self.label_addrs, off) - 1
        if i >= 0 and off < self.labels[i][1]:
            return self.labels[i][0], self.labels[i][2]
        return None


def read_hist(path):
    hist = []
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                m = re.fullmatch(r"0x([0-9a-f]+) (\d+)\n?", line)
                if not m:
                    die("%s:%d: expected '0x<pc> <count>', got %r" % (path, n, line[:60]))
                hist.append((int(m.group(1), 16), int(m.group(2))))
    except OSError as e:
        die("%s: %s" % (path, e))
    return hist


def cmd_self(argv):
    flags = {a for a in argv if a in ("--aliases", "--asm", "--addrs")}
    argv = [a for a in argv if a not in flags]
    aliases = "--aliases" in flags
    if len(argv) < 2:
        die("usage: truth.py self [--aliases] [--asm] [--addrs] HIST ELF[@BASE]...")
    elfs = [Elf(s, "--asm" in flags) for s in argv[1:]]
    counts, nosym, total, per_elf = {}, 0, 0, [0] * len(elfs)
    for pc, c in read_hist(argv[0]):
        total += c
        for k, elf in enumerate(elfs):
            if elf.holds(pc):
                per_elf[k] += c
                break
        for k, elf in enumerate(elfs):
            i = elf.lookup(pc)
            if i is not None:
                counts[(k, i)] = counts.get((k, i), 0) + c
                break
        else:
            # labels (--asm) only fill what no function of any ELF holds
            for k, elf in enumerate(elfs):
                lab = elf.lookup_label(pc)
                if lab:
                    counts[(k, lab)] = counts.get((k, lab), 0) + c
                    break
            else:
                nosym += c
    lines = []
    for (k, i), c in counts.items():
        if isinstance(i, tuple):  # a label: (address, name)
            addr, names = i[0], [i[1]]
        else:
            addr, names = elfs[k].addrs[i], elfs[k].entries[i]["names"]
        if "--addrs" in flags:
            names = ["0x%x" % (addr + elfs[k].base)]
        if len(elfs) > 1 or "--addrs" in flags:
            names = ["%s:%s" % (elfs[k].bin, n) for n in names]
        extra = " " + " ".join(names[1:]) if aliases and len(names) > 1 else ""
        lines.append("%s %d%s" % (names[0], c, extra))
    for line in sorted(lines):
        print(line)
    for k, elf in enumerate(elfs):
        print("[elf:%s] %d %s" % (elf.bin, per_elf[k], elf.table))
    print("[nosym] %d" % nosym)
    print("[total] %d" % total)


def cmd_calls(argv):
    if len(argv) != 1:
        die("usage: truth.py calls OUT")
    try:
        with open(argv[0]) as f:
            for line in f:
                m = re.fullmatch(r"calls (\S+) (\d+)\n?", line)
                if m:
                    print("%s %s" % (m.group(1), m.group(2)))
    except OSError as e:
        die("%s: %s" % (argv[0], e))


def self_looped(path):
    """Entry addresses that a branch or jump inside the same function targets."""
    out, func, start = set(), None, None
    head = re.compile(r"([0-9a-f]+) <([^>]+)>:")
    insn = re.compile(r"\s*([0-9a-f]+):\s+(\S+)\s+(?:\S+,)*([0-9a-f]+) <([^>+]+)>$")
    for line in run([CROSS + "objdump", "-d", "--no-show-raw-insn", path]).splitlines():
        m = head.match(line)
        if m:
            start, func = int(m.group(1), 16), m.group(2)
            continue
        m = insn.match(line.replace("\t", " ").rstrip())
        if not m or func is None:
            continue
        mnem = m.group(2)
        if (mnem == "j" or mnem.startswith("b")) and m.group(4) == func and \
                int(m.group(3), 16) == start:
            out.add(start)
    return out


def cmd_entries(argv):
    addrs = "--addrs" in argv
    argv = [a for a in argv if a != "--addrs"]
    if len(argv) != 2:
        die("usage: truth.py entries [--addrs] HIST ELF")
    elf = Elf(argv[1])
    looped = self_looped(elf.path)
    # where the process starts: no call enters it
    m = re.search(r"Entry point address:\s+0x([0-9a-f]+)", run([CROSS + "readelf", "-hW", elf.path]))
    if m:
        looped.add(int(m.group(1), 16))
    hist = dict(read_hist(argv[0]))
    for a, e in zip(elf.addrs, elf.entries):
        c = hist.get(a + elf.base, 0)
        if not c:
            continue
        if a in looped:
            sys.stderr.write("truth.py: entries: %s: loops back to its entry, or the"
                             " ELF's entry point: left out\n" % e["names"][0])
            continue
        name = "%s:0x%x" % (elf.bin, a + elf.base) if addrs else e["names"][0]
        print("%s %d" % (name, c))


def first_exec_region(log):
    """r-x regions of the 'following binary load' layout in a -d page log."""
    regions, on = [], False
    with open(log) as f:
        for line in f:
            if "following binary load" in line:
                on, regions = True, []
                continue
            if on:
                m = re.match(r"([0-9a-f]+)-([0-9a-f]+) [0-9a-f]+ (\S+)", line)
                if m:
                    if "x" in m.group(3):
                        regions.append(int(m.group(1), 16))
                elif not line.startswith("start"):
                    on = False
    return regions


def cmd_maps(argv):
    opts = {}
    while len(argv) > 1 and argv[0].startswith("--"):
        opts[argv[0]] = argv[1]
        argv = argv[2:]
    if len(argv) != 1 or set(opts) != {"--log", "--sysroot"}:
        die("usage: truth.py maps --log LOG --sysroot DIR EXE")
    exe, sysroot, log = argv[0], opts["--sysroot"], opts["--log"]
    regions = first_exec_region(log)
    if len(regions) < 2:
        die("%s: no main program and interpreter in the binary load layout" % log)
    interp = run([CROSS + "readelf", "-lW", exe])
    m = re.search(r"Requesting program interpreter: (\S+)\]", interp)
    if not m:
        die("%s: not dynamically linked" % exe)
    print("%s 0x%x" % (os.path.abspath(exe), regions[0]))
    print("%s 0x%x" % (sysroot + m.group(1), regions[1]))
    # With -d page, the layout dump can come between a syscall and its result.
    fds, pending = {}, None
    openat = re.compile(r'openat\([^,]+,"([^"]+)",[^)]*\) = (\d+)$')
    mmap = re.compile(r"mmap\(NULL,\d+,PROT_EXEC\|PROT_READ,[^,]+,(\d+),0\)")
    result = re.compile(r"= 0x([0-9a-f]+)$")
    with open(log) as f:
        for line in f:
            line = line.rstrip("\n")
            m = openat.search(line)
            if m:
                fds[m.group(2)] = m.group(1)
                continue
            m = mmap.search(line)
            if m:
                pending = fds.get(m.group(1))
            m = result.search(line)
            if m and pending:
                print("%s 0x%x" % (sysroot + pending, int(m.group(1), 16)))
                pending = None
            elif re.match(r"\d+ ", line):
                pending = pending if mmap.search(line) else None


def main():
    cmds = {"self": cmd_self, "calls": cmd_calls, "entries": cmd_entries, "maps": cmd_maps}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        die("usage: truth.py self|calls|entries|maps ... (see the top of this file)")
    cmds[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
