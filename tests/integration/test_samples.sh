#!/bin/sh
# test_samples.sh: sampled stacks of other tools read into profiles, and
# `oobprof diff`, on real data with truths computed another way (issue 17):
# - perf: a native x86-64 program of known, very different CPU shares and a
#   recursion, recorded by `perf record -g`, printed by `perf script` in the
#   default layout and with -F ...,sym,dso: the sample count equals the
#   samples awk counts; the stacks symbolized from raw addresses (-F without
#   sym, --elf) equal perf's own names; the function shares equal those of
#   `perf report --stdio --no-children` to 0.1 %.
# - uniprof: a file written from `nm` of a RISC-V program (addresses inside
#   known functions, failed and cut walks): counts and names.
# - folded and pprof: a real trace's own fold / pprof export read back:
#   diff against the trace is all zeros; `go tool pprof -top` agrees.
# - diff: a RISC-V program's exact profile against samples drawn from it by
#   a seeded generator at several sizes: the error shrinks and every
#   function's difference stays within the binomial bound (3 sigma).
set -u
T=test_samples
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
CLI=$OOB_BUILDDIR/oobprof
G=$OOB_BUILDDIR/tests/gen/progs
W=$OOB_BUILDDIR/tests/out/samples
rm -rf "$W" && mkdir -p "$W"
pass() { echo "PASS: $T: $1"; }
fail() { echo "FAIL: $T: $1: $2"; }

# ---- perf ----
perf_case() {
	cat >"$W/t.c" <<'C'
#include <stdio.h>
static volatile unsigned long sink;
__attribute__((noinline)) void spin(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i; }
__attribute__((noinline)) void heavy(void) { spin(60000000); sink++; }
__attribute__((noinline)) void light(void) { spin(6000000); sink++; }
__attribute__((noinline)) void other(void) { for (unsigned long i = 0; i < 20000000; i++) sink ^= i; }
__attribute__((noinline)) unsigned long rec(int d) { if (!d) { spin(200000); return 1; } return rec(d - 1) + 1; }
int main(void) { for (int k = 0; k < 3; k++) { heavy(); light(); other(); for (int i = 0; i < 100; i++) rec(10); } printf("%lu\n", sink); return 0; }
C
	if ! command -v perf >/dev/null 2>&1 || ! command -v gcc >/dev/null 2>&1; then
		echo "SKIP: $T: perf: no perf or gcc"
		return
	fi
	gcc -O1 -fno-omit-frame-pointer -g -no-pie -o "$W/t" "$W/t.c" &&
		perf record -q -g -e cpu-clock -o "$W/p.data" "$W/t" >/dev/null 2>"$W/perf.err" || {
		echo "SKIP: $T: perf: perf record failed: $(head -c 200 "$W/perf.err")"
		return
	}
	perf script -i "$W/p.data" >"$W/d.txt" 2>/dev/null
	perf script -i "$W/p.data" -F comm,pid,tid,time,event,ip,sym,dso >"$W/f.txt" 2>/dev/null
	perf script -i "$W/p.data" -F comm,tid,time,event,ip,dso >"$W/raw.txt" 2>/dev/null
	perf report -i "$W/p.data" --stdio --no-children --sort sym 2>/dev/null |
		awk '/^ +[0-9.]+%/ { s = $1; sub(/%/, "", s); $1 = ""; $2 = ""; sub(/^ +/, ""); print $0 "\t" s }' >"$W/report"
	for f in d f raw; do
		want=$(awk '/^[^ \t#]/ && /:$|: *$/ { n++ } END { print n + 0 }' "$W/$f.txt")
		got=$("$CLI" stats "$W/$f.txt" 2>"$W/$f.err" | sed -n 's/^samples: //p')
		fmt=$("$CLI" stats "$W/$f.txt" 2>/dev/null | sed -n 's/^format: //p')
		if [ "$want" -gt 100 ] && [ "$got" = "$want" ] && [ "$fmt" = '"perf-script"' ]; then
			pass "perf $f: $got samples"
		else
			fail "perf $f" "samples $got ($fmt), perf script printed $want $(head -c 200 "$W/$f.err")"
		fi
	done
	# Raw addresses symbolized by the ELF give perf's names, frame by frame,
	# for the program's own functions (the others have no ELF here).
	"$CLI" fold --elf "$W/t" "$W/raw.txt" >"$W/raw.fold" 2>/dev/null
	"$CLI" fold "$W/f.txt" >"$W/f.fold" 2>/dev/null
	# ... except names another DSO also has (ld.so's _start): the raw fold
	# cannot name those frames, perf can.
	awk -v t="($W/t)" '/^\t/ && $NF != t { print $2 }' "$W/f.txt" | sort -u >"$W/others"
	nm "$W/t" | awk '$2 ~ /^[Tt]$/ { print $3 }' | sort -u | comm -23 - "$W/others" >"$W/names"
	for f in raw f; do
		awk -v names="$W/names" 'BEGIN { while ((getline l < names) > 0) keep[l] = 1 }
			{ w = $NF; $NF = ""; sub(/ $/, ""); n = split($0, a, ";"); s = ""
			  for (i = 1; i <= n; i++) if (a[i] in keep) s = s (s == "" ? "" : ";") a[i]
			  c[s] += w } END { for (s in c) print s, c[s] }' "$W/$f.fold" | sort >"$W/$f.own"
	done
	if [ -s "$W/f.own" ] && cmp -s "$W/raw.own" "$W/f.own" && grep -q '^main;rec;rec;rec' "$W/f.own"; then
		pass "perf symbolized from raw addresses = perf's names ($(wc -l <"$W/f.own") stacks)"
	else
		fail "perf symbolized" "$(diff "$W/raw.own" "$W/f.own" | head -5)"
	fi
	"$CLI" top --json "$W/d.txt" >"$W/top.json" 2>/dev/null
	python3 - "$W/top.json" "$W/report" <<'PY' && pass "perf shares = perf report --no-children (0.1 %)" || fail "perf shares" "see above"
import json, sys
top = json.load(open(sys.argv[1]))
rows = top["functions"]
total = sum(r["self_instructions"] for r in rows)
ours = {}
for r in rows:
    ours[r["name"]] = ours.get(r["name"], 0) + 100.0 * r["self_instructions"] / total
rep = {}
for line in open(sys.argv[2]):
    name, s = line.rstrip("\n").rsplit("\t", 1)
    name = name.split("] ", 1)[-1].strip()
    rep[name] = rep.get(name, 0) + float(s)
bad = [(n, rep[n], ours.get(n)) for n in rep if ours.get(n) is None or abs(rep[n] - ours[n]) > 0.1]
big = sorted(rep, key=lambda n: -rep[n])[:3]
if bad or rep.get("spin", 0) < 50:
    print("FAIL: test_samples: perf shares:", bad[:5], big)
    sys.exit(1)
PY
}
perf_case

if [ ! -e "$G/mutual.oobt" ]; then
	echo "SKIP: $T: riscv: no generated programs (tests/gen/progs)"
	exit 0
fi

# ---- uniprof: addresses of known functions, from nm ----
addr() { printf '0x%x\n' $((0x$(nm "$G/mutual" | awk -v f="$1" '$3 == f { print $1; exit }') + 4)); }
{
	echo "# uniprof samples, written from nm"
	for i in 1 2 3; do printf '%s\n%s\n%s\n1\n\n' "$(addr is_even)" "$(addr is_odd)" "$(addr main)"; done
	printf '%s\n%s\n1\n\n' "$(addr is_odd)" "$(addr main)"
	printf '%s\n0\n\n' "$(addr is_even)"
	printf '%s\n%s\n' "$(addr is_even)" "$(addr main)"
} >"$W/u.txt"
"$CLI" top --json --elf "$G/mutual" "$W/u.txt" >"$W/u.json" 2>"$W/u.err"
python3 - "$W/u.json" <<'PY' && grep -q "6 samples, of which 1 failed and 1 truncated" "$W/u.err" && pass "uniprof: counts, names, failed and cut walks" || fail uniprof "$(head -c 300 "$W/u.err")"
import json, sys
rows = {r["name"]: r for r in json.load(open(sys.argv[1]))["functions"]}
key = "self_instructions"
assert rows["is_even"][key] == 5, rows["is_even"]
assert rows["is_odd"][key] == 1
PY

# ---- folded and pprof round trips ----
"$CLI" fold --elf "$G/mutual" "$G/mutual.oobt" >"$W/m.folded" 2>/dev/null
"$CLI" export --to pprof --elf "$G/mutual" "$G/mutual.oobt" -o "$W/m.pb.gz" 2>/dev/null
for f in m.folded m.pb.gz; do
	"$CLI" diff --json --elf "$G/mutual" "$G/mutual.oobt" "$W/$f" >"$W/$f.diff" 2>"$W/$f.err"
	python3 - "$W/$f.diff" <<'PY' && pass "$f read back: diff against the trace is all zeros" || fail "$f" "$(head -c 300 "$W/$f.err")"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]
assert s["function_error"] == 0 and s["stack_error"] == 0, s
assert all(r["delta"] == 0 for r in d["functions"] + d["stacks"])
assert d["base"]["total"] == d["other"]["total"] > 1000
PY
done
if command -v go >/dev/null 2>&1 && go tool pprof -top "$W/m.pb.gz" >"$W/gotop" 2>/dev/null; then
	"$CLI" top --json "$W/m.pb.gz" >"$W/pb.json" 2>/dev/null
	python3 - "$W/gotop" "$W/pb.json" <<'PY' && pass "pprof: go tool pprof -top agrees" || fail "pprof" "go tool pprof disagrees"
import json, sys
ours = {}
for r in json.load(open(sys.argv[2]))["functions"]:
    ours[r["name"]] = ours.get(r["name"], 0) + r["self_instructions"]
n = 0
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 6 and f[0].isdigit():
        assert ours.get(f[5]) == int(f[0]), (f, ours.get(f[5]))
        n += 1
assert n >= 3
PY
fi

# ---- diff: exact vs seeded samples of it ----
prev=1
ok=1
for n in 200 2000 20000 200000; do
	awk -v n="$n" -v seed=17 '{ w = $NF; $NF = ""; sub(/ $/, ""); s[NR] = $0; c[NR] = t + w; t += w }
		END { srand(seed); for (k = 0; k < n; k++) { x = rand() * t; lo = 1; hi = NR
			while (lo < hi) { m = int((lo + hi) / 2); if (c[m] > x) hi = m; else lo = m + 1 }
			h[lo]++ } for (i in h) print s[i], h[i] }' "$W/m.folded" >"$W/s$n.folded"
	"$CLI" diff --json --elf "$G/mutual" "$G/mutual.oobt" "$W/s$n.folded" >"$W/s$n.diff" 2>/dev/null
	r=$(python3 -c "
import json,sys; d=json.load(open('$W/s$n.diff')); s=d['summary']
print('%.6f %d %d' % (s['function_error'], s['outside_bound'], d['other']['total']))")
	set -- $r
	echo "# diff: $n samples: function error $1, $2 functions outside 3 sigma, $3 samples"
	if [ "$3" != "$n" ] || [ "$2" != 0 ] || ! python3 -c "import sys; sys.exit(not ($1 < $prev))"; then
		ok=0
	fi
	prev=$1
done
[ $ok = 1 ] && pass "diff: sampled error shrinks with n, within the binomial bound" ||
	fail diff "error did not shrink or left the bound"
# The bound of a rare function (share p, np << 1) is the binomial tail, not
# 3 sigma: one sample of it in 200 is chance (P = 1 - (1-p)^200), three are not.
rare=$(sort -k2 -n "$W/m.folded" | awk 'NR == 1 { $NF = ""; sub(/ $/, ""); print }')
for k in 1 3; do
	{ cat "$W/s200.folded"; echo "$rare $k"; } >"$W/rare$k.folded"
	"$CLI" diff --json --elf "$G/mutual" "$G/mutual.oobt" "$W/rare$k.folded" >"$W/rare$k.diff" 2>/dev/null
done
leaf=${rare##*;}
if python3 - "$W/rare1.diff" "$W/rare3.diff" "$leaf" <<'PY'; then
import json, sys
def row(f):
    return [r for r in json.load(open(f))["functions"] if r["name"] == sys.argv[3]][0]
one, three = row(sys.argv[1]), row(sys.argv[2])
assert one["base"] * 203 < 0.01 and one["within_bound"], one
assert not three["within_bound"], three
PY
	pass "diff: a rare function: 1 sample within the binomial tail, 3 outside ($leaf)"
else
	fail "diff: rare function bound" "$leaf: see $W/rare1.diff"
fi
