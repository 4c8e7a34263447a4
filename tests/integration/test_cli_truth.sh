#!/bin/sh
# test_cli_truth.sh: checks the ground-truth machinery itself, the QEMU plugin
# (tests/tools/oobtrace.c) and tests/tools/truth.py, against tools that share
# no code with them: QEMU's own -singlestep -d nochain,exec,in_asm log,
# objdump's function boundaries, readelf's entry points. If these fail, the
# end-to-end tests in test_cli_programs.sh prove nothing.
# Prints PASS/FAIL/SKIP: test_cli_truth: <case>[: why].
set -u
T=test_cli_truth
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
gen=$OOB_BUILDDIR/tests/gen/progs
truth=$OOB_SRCDIR/tests/tools/truth.py
w=$OOB_BUILDDIR/tests/out/cli_truth
CROSS=${CROSS:-riscv64-linux-gnu-}

pass() { echo "PASS: $T: $1"; }
fail() { echo "FAIL: $T: $1: $2"; }

if [ ! -e "$gen/recursion.qemu.log" ] || [ ! -e "$gen/oobtrace.so" ]; then
	echo "SKIP: $T: all: programs not generated (see tests/out/gen-fixtures.log)"
	exit 0
fi
mkdir -p "$w" || exit 1

# 1. The plugin's per-instruction text and histogram against QEMU's own log of
# the same program: same pcs in the same order, same instruction bits, same
# counts.
python3 - "$gen/recursion.qemu.log" "$gen/recursion.txt" "$gen/recursion.hist" <<'EOF'
import re, sys
T = "test_cli_truth"
log, txt, hist = sys.argv[1:]
pcs, bits = [], {}
for line in open(log):
    if line.startswith("Trace "):
        pcs.append(int(re.search(r"\[[0-9a-f]+/([0-9a-f]+)/", line).group(1), 16))
    else:
        m = re.match(r"0x([0-9a-f]+):\s+([0-9a-f]+)\s", line)
        if m:
            bits[int(m.group(1), 16)] = int(m.group(2), 16)
plug = [tuple(int(x, 16) for x in l.split()) for l in open(txt)]
if not pcs:
    print("FAIL: %s: plugin text = qemu -d exec: no Trace lines in %s" % (T, log))
elif [p for p, _ in plug] != pcs:
    i = next((i for i, (a, b) in enumerate(zip(plug, pcs)) if a[0] != b), min(len(plug), len(pcs)))
    print("FAIL: %s: plugin text = qemu -d exec: %d vs %d instructions, first difference at #%d" % (T, len(plug), len(pcs), i))
elif any(bits.get(p) != b for p, b in plug):
    bad = next((p, b) for p, b in plug if bits.get(p) != b)
    print("FAIL: %s: plugin text = qemu -d exec: bits of 0x%x: plugin 0x%x, in_asm %s" % (T, bad[0], bad[1], bits.get(bad[0])))
else:
    print("PASS: %s: plugin text = qemu -d exec,in_asm (%d instructions, pcs and bits)" % (T, len(pcs)))
counts = {}
for p in pcs:
    counts[p] = counts.get(p, 0) + 1
h = {int(a, 16): int(b) for a, b in (l.split() for l in open(hist))}
if h == counts:
    print("PASS: %s: plugin histogram = counts of qemu -d exec (%d pcs)" % (T, len(h)))
else:
    d = [p for p in set(h) | set(counts) if h.get(p) != counts.get(p)]
    print("FAIL: %s: plugin histogram = counts of qemu -d exec: %d pcs differ, e.g. 0x%x: %s vs %s" % (T, len(d), d[0], h.get(d[0]), counts.get(d[0])))
EOF

# 2. The plugin is deterministic: a second run gives the same histogram and a
# byte-identical oobt trace.
rm -f "$w/again.oobt" "$w/again.hist"
env -i qemu-riscv64 -plugin "$gen/oobtrace.so,out=$w/again.oobt,hist=$w/again.hist" \
	"$gen/recursion" >"$w/again.out" 2>"$w/again.err"
if cmp -s "$w/again.hist" "$gen/recursion.hist" && cmp -s "$w/again.oobt" "$gen/recursion.oobt" &&
	cmp -s "$w/again.out" "$gen/recursion.out"; then
	pass "plugin output is deterministic (hist, oobt, stdout)"
else
	fail "plugin output is deterministic" "second run of recursion differs ($w/again.*)"
fi

# 3. The oobt traces (written by core/trace/trace_write.c inside the plugin) decode,
# with an independent Python decoder written from docs/formats/OOBT.md, to exactly
# the plugin's text output, and for every program to the plugin's histogram.
dec=$OOB_SRCDIR/tests/tools/oobt-decode.py
if python3 "$dec" "$gen/recursion.oobt" >"$w/recursion.dec" 2>"$w/dec.err" &&
	cmp -s "$w/recursion.dec" "$gen/recursion.txt"; then
	pass "recursion.oobt decodes (docs/formats/OOBT.md, independent decoder) to the plugin's text"
else
	fail "recursion.oobt decodes to the plugin's text" "$(head -c 200 "$w/dec.err") (diff $w/recursion.dec $gen/recursion.txt)"
fi
for n in recursion mutual fnptr fnptr-pie tailcall tailcall-pie longjmp statics inline mixed mixed-pie; do
	if ! python3 "$dec" "$gen/$n.oobt" >"$w/$n.dec" 2>"$w/dec.err"; then
		fail "$n.oobt decodes to the histogram" "$(head -c 200 "$w/dec.err")"
		continue
	fi
	awk '{ c[$1]++ } END { for (p in c) print p, c[p] }' "$w/$n.dec" | sort >"$w/$n.dec.hist"
	if sort "$gen/$n.hist" | cmp -s - "$w/$n.dec.hist"; then
		pass "$n.oobt decodes to the histogram ($(wc -l <"$w/$n.dec") instructions)"
	else
		fail "$n.oobt decodes to the histogram" "differs: $w/$n.dec.hist"
	fi
	rm -f "$w/$n.dec"
done

# 4. truth.py's attribution against objdump's function boundaries, counting
# the pcs of QEMU's log (not the plugin's histogram).
"${CROSS}objdump" -d "$gen/recursion" >"$w/recursion.dis" 2>/dev/null
python3 "$truth" self --aliases "$gen/recursion.hist" "$gen/recursion" >"$w/recursion.self"
python3 - "$w/recursion.dis" "$gen/recursion.qemu.log" "$w/recursion.self" <<'EOF'
import bisect, re, sys
T = "test_cli_truth"
dis, log, selfp = sys.argv[1:]
starts, names, ends = [], [], {}
last = None
for line in open(dis):
    m = re.match(r"([0-9a-f]+) <([^>]+)>:", line)
    if m:
        starts.append(int(m.group(1), 16))
        names.append(m.group(2))
        last = len(names) - 1
        continue
    m = re.match(r"\s+([0-9a-f]+):\s+((?:[0-9a-f]{2} ?)+|[0-9a-f]+)\s", line)
    if m and last is not None:
        raw = m.group(2).replace(" ", "")
        ends[last] = int(m.group(1), 16) + len(raw) // 2
counts = {}
for line in open(log):
    if line.startswith("Trace "):
        pc = int(re.search(r"\[[0-9a-f]+/([0-9a-f]+)/", line).group(1), 16)
        i = bisect.bisect_right(starts, pc) - 1
        k = names[i] if i >= 0 and pc < ends.get(i, 0) else "[nosym]"
        counts[k] = counts.get(k, 0) + 1
t, alias = {}, {}
for l in open(selfp):
    f = l.split()
    t[f[0]] = int(f[1])
    for a in f[2:]:
        alias[a] = f[0]
# objdump also labels code that is no function (crt1's load_gp, a NOTYPE
# symbol): what truth.py does not name must add up to its [nosym].
folded = {}
for k, c in counts.items():
    k = alias.get(k, k) if alias.get(k, k) in t else "[nosym]"
    folded[k] = folded.get(k, 0) + c
counts = folded
t = {k: v for k, v in t.items() if not k.startswith("[elf:") and k != "[total]"}
if t.get("[nosym]", 0) == 0:
    t.pop("[nosym]", None)
if counts == t:
    print("PASS: %s: truth.py self = objdump ranges over qemu -d exec (%d functions)" % (T, len(t)))
else:
    d = sorted(k for k in set(t) | set(counts) if t.get(k) != counts.get(k))
    print("FAIL: %s: truth.py self = objdump ranges over qemu -d exec: %s" % (T, ", ".join("%s %s/%s" % (k, t.get(k), counts.get(k)) for k in d[:6])))
EOF

# 5. The programs count their own calls right where the answer is known in
# closed form: fib(15) makes 2 * fib(16) - 1 = 1973 calls; depth(i) for
# i < 20 is entered sum(i + 1) = 210 times.
if grep -qx 'calls fib 1973' "$gen/recursion.out" && grep -qx 'calls depth 210' "$gen/recursion.out"; then
	pass "recursion counts its calls (fib 1973, depth 210)"
else
	fail "recursion counts its calls" "$(tr '\n' '|' <"$gen/recursion.out")"
fi

# 6. Each program's own counters agree with QEMU: a counted function's first
# instruction ran exactly as often as the function says it was entered (true
# while no loop branches back to a function's first instruction; gcc -O2 once
# turned a recursion into such a loop, and this caught it).
for n in recursion mutual fnptr fnptr-pie tailcall tailcall-pie longjmp statics inline mixed mixed-pie; do
	python3 - "$gen/$n" <<'EOF'
import os, subprocess, sys
T = "test_cli_truth"
p = sys.argv[1]
name = os.path.basename(p)
base = 0
if os.path.exists(p + ".maps"):
    base = int(open(p + ".maps").readline().split()[1], 16)
h = {int(a, 16): int(b) for a, b in (l.split() for l in open(p + ".hist"))}
syms, cur, file = {}, None, None
out = subprocess.run([os.environ.get("CROSS", "riscv64-linux-gnu-") + "readelf", "-sW", p],
                     capture_output=True, text=True).stdout
for l in out.splitlines():
    f = l.split()
    if l.startswith("Symbol table"):
        cur = ".symtab" in l
    elif cur and len(f) >= 8 and f[3] == "FILE":
        file = f[7]
    elif cur and len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND":
        syms.setdefault(f[7], []).append((int(f[1], 16), file if f[4] == "LOCAL" else None))
bad, n = [], 0
for l in open(p + ".out"):
    if not l.startswith("calls "):
        continue
    _, fn, cnt = l.split()
    fname, _, ffile = fn.partition("@")
    addrs = [a for a, f in syms.get(fname, []) if not ffile or f == ffile]
    if not addrs:
        continue  # inlined away
    n += 1
    got = h.get(base + addrs[0], 0)
    if len(addrs) != 1 or got != int(cnt):
        bad.append("%s: program %s, first instruction ran %d times" % (fn, cnt, got))
if bad or not n:
    print("FAIL: %s: %s: counters = entries seen by QEMU: %s" % (T, name, "; ".join(bad) or "nothing compared"))
else:
    print("PASS: %s: %s: counters = entries seen by QEMU (%d functions)" % (T, name, n))
EOF
done

# 7. The load bases of PIE programs: the entry points of the program and of
# ld.so, and libc's __libc_start_main, at base + address, ran.
for n in fnptr-pie tailcall-pie mixed-pie; do
	m=$gen/$n.maps
	if [ ! -e "$m" ]; then
		fail "$n: load bases" "$m missing"
		continue
	fi
	missing=
	while read -r path base; do
		case $path in
		*/libc.so.6)
			off=$("${CROSS}nm" -D --defined-only "$path" | awk '$3 ~ /^__libc_start_main@/ { print $1; exit }')
			off=0x${off:-0}
			;;
		*) off=$("${CROSS}readelf" -h "$path" | awk '/Entry point/ { print $4 }') ;;
		esac
		want=$(printf '0x%x' $((base + off)))
		grep -q "^$want " "$gen/$n.hist" || missing="$missing $path@$base:$want"
	done <"$m"
	if [ -z "$missing" ] && [ "$(wc -l <"$m")" -ge 3 ]; then
		pass "$n: load bases in $n.maps are where the code ran"
	else
		fail "$n: load bases" "not executed:$missing"
	fi
done

# 8. truth.py refuses bad input with a message and status 2.
printf '0x10000 12\nnot a line\n' >"$w/bad.hist"
for c in "self $w/bad.hist $gen/recursion" "self $gen/recursion.hist $w/no-such-elf" \
	"calls $w/no-such-file"; do
	# shellcheck disable=SC2086
	python3 "$truth" $c >/dev/null 2>"$w/truth.err"
	rc=$?
	if [ $rc -eq 2 ] && grep -q 'truth.py: ' "$w/truth.err"; then
		pass "truth.py refuses bad input: $(echo "$c" | cut -d' ' -f1) ($(head -c 80 "$w/truth.err"))"
	else
		fail "truth.py refuses bad input: $c" "status $rc, $(head -c 200 "$w/truth.err")"
	fi
done
exit 0
