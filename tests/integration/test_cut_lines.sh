#!/bin/sh
# test_cut_lines.sh: a complete text trace whose last line is cut short
# (no '\n') must be refused with an error naming that line and its byte
# offset, unless what is left is a whole record. Real fixtures (the
# generator's TracerV text, Spike commit logs, QEMU -d logs, FirePerf)
# are cut at every byte of a line near the start, in the middle and at the
# end: each cut is a file of the lines before plus a prefix of that line.
# A cut is "whole" when the reader cannot tell it from a file whose writer
# left out the last '\n': the whole line; for Spike, a cut at a field
# boundary after a value or the ")" of the instruction; for a QEMU Trace
# line, a cut after its "]" (the symbol is a label). Whole cuts must read
# as many records as they have; every other cut must fail that way.
set -u
T=test_cut_lines
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
CLI=$OOB_BUILDDIR/oobprof
R=$OOB_BUILDDIR/tests/gen/readers
W=$OOB_BUILDDIR/tests/out/cut_lines
rm -rf "$W"
mkdir -p "$W"
if [ ! -x "$CLI" ] || [ ! -s "$R/tv-text.txt" ]; then
	echo "SKIP: $T: all: oobprof or the generated reader fixtures are missing"
	exit 0
fi
python3 - "$CLI" "$R" "$W" "$T" <<'PY'
import os, re, subprocess, sys
cli, R, W, T = sys.argv[1:5]

def whole(fmt, line, p):
    """Is prefix p of line a record the reader must accept?"""
    if p == line:
        return True
    if fmt == "spike":  # trailing blanks are no field: a cut there is whole too
        ps = p.rstrip(" \t")
        boundary = line[len(ps)] in " \t"
        toks = ps.split()
        return boundary and ")" in ps and (toks[-1].endswith(")") or toks[-1].startswith("0x"))
    if fmt == "qemu":
        return "]" in p
    return False

def instructions(fmt, path):
    r = subprocess.run([cli, "stats", "--format", fmt, path], capture_output=True, text=True)
    m = re.search(r"^instructions: (\d+)", r.stdout, re.M)
    return int(m.group(1)) if r.returncode == 0 and m else None

def is_record(fmt, l):
    if fmt == "spike":
        return re.match(r"core +\d+: \d 0x", l)
    if fmt == "tracerv-text":
        return l.startswith("Cycle:")
    if fmt == "qemu":
        return l.startswith("Trace ")
    return l.startswith("Indent:")

def pick(lines, fmt):
    """Line indexes to cut: near the start, the middle, the last record line."""
    rec = [i for i, l in enumerate(lines) if is_record(fmt, l)]
    return sorted({rec[min(5, len(rec) - 1)], rec[len(rec) // 2], rec[-1]})

cases = [("tracerv-text", "tv-text.txt"), ("spike", "spike.log"), ("spike", "spike-2core.log"),
         ("qemu", "rdprog.qemu.log"), ("fireperf", "fireperf.txt")]
nfail = 0
for fmt, name in cases:
    path = os.path.join(R, name)
    if not os.path.exists(path):
        print(f"SKIP: {T}: {name}: fixture missing")
        continue
    with open(path, "rb") as f:
        data = f.read(4 << 20)  # the first lines are enough for the big logs
    lines = data.decode("latin-1").split("\n")[:-1]
    if len(lines) > 20000:
        lines = lines[:20000]
    for i in pick(lines, fmt):
        line = lines[i]
        head = "".join(l + "\n" for l in lines[:i])
        full = os.path.join(W, f"{name}.{i}.full")
        with open(full, "wb") as f:  # the same lines, the last one with its '\n'
            f.write((head + line + "\n").encode("latin-1"))
        n = instructions(fmt, full)
        bad = 0
        ok_whole = ok_cut = 0
        for k in range(1, len(line) + 1):
            p = line[:k]
            cut = os.path.join(W, f"{name}.{i}.{k}")
            with open(cut, "wb") as f:
                f.write((head + p).encode("latin-1"))
            r = subprocess.run([cli, "stats", "--format", fmt, cut], capture_output=True, text=True)
            want_whole = whole(fmt, line, p)
            m = re.search(r"line (\d+) \(byte (\d+)\): the last record is cut short", r.stderr)
            if r.returncode != 0 and m and int(m.group(1)) == i + 1 and int(m.group(2)) == len(head.encode("latin-1")):
                if want_whole:
                    why = "a whole record refused: " + r.stderr.strip()[:200]
                else:
                    ok_cut += 1
                    why = None
            elif r.returncode == 0 and want_whole:
                got = re.search(r"^instructions: (\d+)", r.stdout, re.M)
                if not got or int(got.group(1)) != n:
                    why = f"read {got and got.group(1)} instructions, want {n} (as with the '\\n')"
                else:
                    ok_whole += 1
                    why = None
            else:
                why = (f"exit {r.returncode}, want {'success' if want_whole else 'an error naming line %d byte %d' % (i + 1, len(head))}: "
                       + (r.stderr.strip() or r.stdout.strip()[:100])[:200])
            if why:
                bad += 1
                if bad <= 3:
                    print(f"FAIL: {T}: {name}: line {i + 1} cut after {k} of {len(line)} bytes ({p[-30:]!r}): {why}")
            os.unlink(cut)
        if bad:
            nfail += 1
            if bad > 3:
                print(f"FAIL: {T}: {name}: line {i + 1}: {bad} bad cuts in all")
        else:
            print(f"PASS: {T}: {name}: line {i + 1} cut at each of {len(line)} bytes: "
                  f"{ok_cut} refused naming the line and byte, {ok_whole} whole records read")
sys.exit(0)
PY
