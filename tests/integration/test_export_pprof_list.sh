#!/bin/sh
# pprof at the exact pc: `go tool pprof -list FUNC` on oobprof's pprof export
# shows per-line flat counts equal to the ground truth computed without
# oobprof: the QEMU plugin's per-pc histogram, each pc's innermost function and
# line from `riscv64-linux-gnu-addr2line -i -f` (binutils), summed per
# (function, line). Inlined functions (mix, rotl) are routines of their own,
# as pprof shows inline chains. Also: one mapping per binary with its
# build-id, and no process pseudo-frames.
set -u
T=test_export_pprof_list
G=$OOB_BUILDDIR/tests/gen/progs
CLI=$OOB_BUILDDIR/oobprof
GO=${GO:-go}
command -v "$GO" >/dev/null || { echo "SKIP: $T: all: no go (go tool pprof)"; exit 0; }
command -v riscv64-linux-gnu-addr2line >/dev/null || { echo "SKIP: $T: all: no addr2line"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

check() { # PROG FUNC...
	p=$1
	shift
	for f in "$G/$p" "$G/$p.oobt" "$G/$p.hist"; do
		[ -e "$f" ] || { echo "SKIP: $T: $p: missing $f"; return; }
	done
	"$CLI" export --to pprof --pcs --elf "$G/$p" "$G/$p.oobt" -o "$tmp/$p.pb.gz" 2>"$tmp/err" ||
		{ echo "FAIL: $T: $p: export failed: $(head -c 300 "$tmp/err")"; fails=$((fails + 1)); return; }
	for fn in "$@"; do
		# the sources are the fixtures; DWARF names them where they were built
		"$GO" tool pprof -source_path="$OOB_SRCDIR/tests/fixtures/progs" \
			-trim_path="$(dirname "$(riscv64-linux-gnu-addr2line -e "$G/$p" "$(riscv64-linux-gnu-nm "$G/$p" | awk '$3 == "main" { print $1 }')")")" \
			-list "^$fn\$" "$tmp/$p.pb.gz" >"$tmp/list" 2>"$tmp/err" ||
			{ echo "FAIL: $T: $p:$fn: go tool pprof failed: $(head -c 300 "$tmp/err")"; fails=$((fails + 1)); continue; }
		if python3 - "$G/$p" "$G/$p.hist" "$fn" "$tmp/list" <<'PY'; then echo "PASS: $T: $p:$fn"; else echo "FAIL: $T: $p:$fn: see above"; fails=$((fails + 1)); fi
import re, subprocess, sys
binp, hist, fn, listing = sys.argv[1:5]
h = [(l.split()[0], int(l.split()[1])) for l in open(hist)]
# -a: each address's line, then (function, file:line) per inline level,
# innermost first
out = subprocess.run(["riscv64-linux-gnu-addr2line", "-a", "-i", "-f", "-e", binp] +
                     [pc for pc, _ in h], capture_output=True, text=True).stdout.splitlines()
truth, counts, k = {}, dict((int(pc, 16), n) for pc, n in h), 0
while k < len(out):
    pc = int(out[k], 16)
    name, where = out[k + 1], re.sub(r" \(discriminator \d+\)$", "", out[k + 2])
    k += 3
    while k < len(out) and not out[k].startswith("0x"):
        k += 2
    if name == fn:
        ln = int(where.rsplit(":", 1)[1])
        truth[ln] = truth.get(ln, 0) + counts[pc]
got, inside = {}, False
for l in open(listing):
    if l.startswith("ROUTINE"):
        inside = l.split()[2] == fn
        continue
    m = re.match(r"\s*(\S+)\s+(\S+)\s+(\d+):", l)
    if inside and m and m.group(1) != ".":
        got[int(m.group(3))] = got.get(int(m.group(3)), 0) + int(m.group(1))
if got != truth or not truth:
    print("  pprof -list: %s\n  addr2line -i + QEMU: %s" % (sorted(got.items()), sorted(truth.items())))
    sys.exit(1)
PY
	done
}

check recursion fib depth leaf
check inline hash_block mix rotl
check mutual hof_f hof_m

# Per-pc samples add up to top's numbers per function, self and total, for
# every sample type (cycles included: a TracerV trace; code without symbols,
# named per entry point, included).
TV=$OOB_BUILDDIR/tests/gen/readers/tv-c-v63-w1.bin
RD=$OOB_BUILDDIR/tests/gen/readers/rdprog
if [ -s "$TV" ] && [ -s "$RD" ]; then
	"$CLI" export --to pprof --pcs --elf "$RD" "$TV" -o "$tmp/tv.pb.gz" 2>/dev/null &&
		"$CLI" top --json --elf "$RD" "$TV" >"$tmp/tv.top.json" 2>/dev/null
	for m in instructions cycles calls; do
		if python3 "$OOB_SRCDIR/tests/tools/export-check.py" pprof "$tmp/tv.pb.gz" "$tmp/tv.top.json" $m >"$tmp/out" 2>&1; then
			echo "PASS: $T: tracerv totals: $m"
		else
			echo "FAIL: $T: tracerv totals: $m: $(tail -3 "$tmp/out")"; fails=$((fails + 1))
		fi
	done
else
	echo "SKIP: $T: tracerv totals: no $TV"
fi

# The mapping has the binary's build-id; pids are labels, not frames.
if [ -e "$tmp/recursion.pb.gz" ]; then
	id=$(riscv64-linux-gnu-readelf -n "$G/recursion" 2>/dev/null | awk '/Build ID/ { print $3 }')
	"$GO" tool pprof -raw "$tmp/recursion.pb.gz" >"$tmp/raw" 2>"$tmp/err"
	if [ -n "$id" ] && grep -q "$id" "$tmp/raw"; then
		echo "PASS: $T: build-id"
	else
		echo "FAIL: $T: build-id: '$id' not in pprof -raw's mappings"; fails=$((fails + 1))
	fi
fi
[ "$fails" -eq 0 ]
