#!/bin/sh
# oobprof annotate FUNC: exact counts per instruction and per source line.
# Ground truth computed without oobprof: the QEMU plugin's per-pc histogram
# (NAME.hist, counted inside QEMU), each function's range from
# `riscv64-linux-gnu-nm -S`, each pc's line from `riscv64-linux-gnu-addr2line`
# (binutils' own DWARF reader, not libdw), calls from objdump's text (jal/jalr
# that link ra). Totals must equal `oobprof top --json`'s self instructions.
# Cases: recursive (fib), inlined code (hash_block with mix and rotl inlined),
# mutual recursion, tail calls.
set -u
T=test_cli_annotate
G=$OOB_BUILDDIR/tests/gen/progs
CLI=$OOB_BUILDDIR/oobprof
for t in nm addr2line objdump; do
	command -v riscv64-linux-gnu-$t >/dev/null || { echo "SKIP: $T: all: no riscv64-linux-gnu-$t"; exit 0; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

check() { # PROG FUNC
	p=$1 fn=$2 case=$1:$2
	for f in "$G/$p" "$G/$p.oobt" "$G/$p.hist"; do
		[ -e "$f" ] || { echo "SKIP: $T: $case: missing $f"; return; }
	done
	"$CLI" annotate "$fn" --disasm --json --elf "$G/$p" "$G/$p.oobt" >"$tmp/d.json" 2>"$tmp/err" &&
		"$CLI" annotate "$fn" --source --json --elf "$G/$p" "$G/$p.oobt" >"$tmp/s.json" 2>>"$tmp/err" &&
		"$CLI" top --json --elf "$G/$p" "$G/$p.oobt" >"$tmp/top.json" 2>>"$tmp/err" ||
		{ echo "FAIL: $T: $case: oobprof failed: $(head -c 300 "$tmp/err")"; fails=$((fails + 1)); return; }
	if python3 - "$G/$p" "$G/$p.hist" "$fn" "$tmp" <<'PY'; then echo "PASS: $T: $case"; else echo "FAIL: $T: $case: see above"; fails=$((fails + 1)); fi
import json, os, re, subprocess, sys
binp, hist, fn, tmp = sys.argv[1:5]
lo = hi = None
for l in subprocess.run(["riscv64-linux-gnu-nm", "-S", "--defined-only", binp],
                        capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if len(f) == 4 and f[3] == fn and f[2] in "tT":
        lo = int(f[0], 16); hi = lo + int(f[1], 16)
assert lo is not None, "no symbol " + fn
truth = {}
for l in open(hist):
    pc, n = l.split()
    pc = int(pc, 16)
    if lo <= pc < hi:
        truth[pc] = truth.get(pc, 0) + int(n)
pcs = sorted(truth)
a2l = subprocess.run(["riscv64-linux-gnu-addr2line", "-e", binp] + ["%x" % pc for pc in pcs],
                     capture_output=True, text=True).stdout.splitlines()
lines = {}
for pc, where in zip(pcs, a2l):
    where = re.sub(r" \(discriminator \d+\)$", "", where)
    f, ln = where.rsplit(":", 1)
    key = (os.path.basename(f), int(ln))
    lines[key] = lines.get(key, 0) + truth[pc]
# calls made: jal/jalr writing ra, from objdump's text
calls = {}
dump = subprocess.run(["riscv64-linux-gnu-objdump", "-d", "--start-address=%#x" % lo,
                       "--stop-address=%#x" % hi, binp], capture_output=True, text=True).stdout
for l in dump.splitlines():
    m = re.match(r"\s*([0-9a-f]+):\s+[0-9a-f]+\s+(\S+)\s*(\S*)", l)
    if m and (m.group(2) in ("jal", "jalr") and (m.group(3) == "" or m.group(3).startswith("ra") or
                                                 re.match(r"^[0-9a-f]+$", m.group(3)))):
        pc = int(m.group(1), 16)
        calls[pc] = truth.get(pc, 0)
bad = 0
d = json.load(open(tmp + "/d.json"))
s = json.load(open(tmp + "/s.json"))
fd, fs = d["functions"], s["functions"]
if len(fd) != 1 or len(fs) != 1:
    print("  %d/%d functions named %s, expected 1" % (len(fd), len(fs), fn)); sys.exit(1)
got = {int(r["addr"], 16): r for r in fd[0]["insns"]}
for pc in sorted(set(truth) | set(k for k, r in got.items() if r["instructions"])):
    g = got.get(pc, {}).get("instructions", 0)
    if g != truth.get(pc, 0):
        print("  %#x: %d instructions, QEMU counted %d" % (pc, g, truth.get(pc, 0))); bad += 1
    gc = got.get(pc, {}).get("calls", 0)
    if gc != calls.get(pc, 0):
        print("  %#x: %d calls, objdump+QEMU say %d" % (pc, gc, calls.get(pc, 0))); bad += 1
gl = {(os.path.basename(r["file"] or "?"), r["line"]): r["instructions"] for r in fs[0]["lines"]}
if gl != lines:
    print("  lines: got %s\n  addr2line+QEMU: %s" % (sorted(gl.items()), sorted(lines.items()))); bad += 1
top = [f for f in json.load(open(tmp + "/top.json"))["functions"] if f["name"] == fn]
tot = sum(truth.values())
if fs[0]["instructions"] != tot or fd[0]["instructions"] != tot or not top or top[0]["self_instructions"] != tot:
    print("  totals: source %d, disasm %d, top %s, QEMU %d" % (fs[0]["instructions"], fd[0]["instructions"],
          top[0]["self_instructions"] if top else None, tot)); bad += 1
if sum(calls.values()) != fs[0]["calls"]:
    print("  calls: %d, expected %d" % (fs[0]["calls"], sum(calls.values()))); bad += 1
sys.exit(1 if bad else 0)
PY
}

check recursion fib
check recursion depth
check inline hash_block
check inline hash_all
check mutual hof_f
check tailcall ping
check mixed main

# Bad input: an unknown function is a clear error, not a crash.
if "$CLI" annotate no_such_fn --elf "$G/recursion" "$G/recursion.oobt" >/dev/null 2>"$tmp/err"; then
	echo "FAIL: $T: unknown function: exit 0"; fails=$((fails + 1))
elif grep -q "no instructions ran in a function named 'no_such_fn'" "$tmp/err"; then
	echo "PASS: $T: unknown function"
else
	echo "FAIL: $T: unknown function: $(cat "$tmp/err")"; fails=$((fails + 1))
fi
# Without objdump: the counts stay, the text is missing, and it says why.
if OOB_OBJDUMP=/nonexistent/objdump "$CLI" annotate fib --disasm --json --elf "$G/recursion" \
	"$G/recursion.oobt" >"$tmp/no.json" 2>"$tmp/err" &&
	grep -q "cannot run /nonexistent/objdump" "$tmp/err" &&
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); f=d["functions"][0]; sys.exit(not (f["instructions"] > 0 and all("asm" not in r for r in f["insns"]) and d["disassembler"] is None))' "$tmp/no.json"; then
	echo "PASS: $T: no objdump"
else
	echo "FAIL: $T: no objdump: $(head -c 300 "$tmp/err")"; fails=$((fails + 1))
fi
[ "$fails" -eq 0 ]
