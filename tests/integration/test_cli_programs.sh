#!/bin/sh
# test_cli_programs.sh: the oobprof command line tool on real traces of real
# RISC-V programs (tests/fixtures/progs, traced by tests/tools/gen-programs.sh),
# checked exactly against ground truth that owes nothing to oobprof:
#   calls               each program counts its own function entries and prints
#                       "calls <name> <n>" (functions inlined away have no
#                       symbol and are not compared)
#   self instructions   per function symbol, from the histogram the QEMU plugin
#                       counts, attributed by tests/tools/truth.py with nm
#   total               the histogram's sum
#   repairs             0; one longjmp landing (stat longjmps: the frame that
#                       called setjmp, RECONSTRUCTION.md 3.5) per longjmp the
#                       program counts
#   fold                weights sum to the total; a tracerv-bin copy of the trace
#                       (pc only: instruction bits then come from the ELF) folds
#                       to the same output
# plus bad input (truncated, corrupt, empty traces; missing, non-ELF binaries):
# a clear error and a non-zero status, never a crash or a hang.
# Prints PASS/FAIL/SKIP: test_cli_programs: <case>[: why].
set -u
T=test_cli_programs
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
gen=$OOB_BUILDDIR/tests/gen/progs
cli=$OOB_BUILDDIR/oobprof
truth=$OOB_SRCDIR/tests/tools/truth.py
w=$OOB_BUILDDIR/tests/out/cli_programs
CROSS=${CROSS:-riscv64-linux-gnu-}
TIMEOUT=${CLI_TIMEOUT:-120}

pass() { echo "PASS: $T: $1"; }
fail() { echo "FAIL: $T: $1: $2"; }
skip() { echo "SKIP: $T: $1: $2"; }

# Same list as tests/tools/gen-programs.sh.
PROGRAMS="recursion mutual fnptr fnptr-pie tailcall tailcall-pie longjmp statics inline mixed mixed-pie"

if [ ! -e "$gen/recursion.hist" ]; then
	skip all "programs not generated (see tests/out/gen-fixtures.log)"
	exit 0
fi
if [ ! -x "$cli" ]; then
	skip all "oobprof CLI not built"
	exit 0
fi
mkdir -p "$w" || exit 1

# elf_args NAME: the --elf options for a program, one per line.
elf_args() {
	if [ -e "$gen/$1.maps" ]; then
		awk '{ printf "--elf\n%s@%s\n", $1, $2 }' "$gen/$1.maps"
	else
		printf -- '--elf\n%s\n' "$gen/$1"
	fi
}

# elf_specs NAME: ELF[@BASE] for truth.py.
elf_specs() {
	if [ -e "$gen/$1.maps" ]; then
		awk '{ printf "%s@%s\n", $1, $2 }' "$gen/$1.maps"
	else
		echo "$gen/$1"
	fi
}

# cli_run OUT ERR ARG...: oobprof with a time limit; returns its status.
cli_run() {
	o=$1 e=$2
	shift 2
	timeout "$TIMEOUT" "$cli" "$@" >"$o" 2>"$e"
}

# The comparison of `oobprof top --json` with the truth, one PASS/FAIL per check.
compare_top() { # NAME JSON SELF CALLS OUT NELFS
	python3 - "$@" <<'EOF'
import json, os, re, sys
name, jpath, selfp, callsp, outp, nelfs = sys.argv[1:]
T = "test_cli_programs"
multi = int(nelfs) > 1

def report(case, bad, extra=""):
    if bad:
        print("FAIL: %s: %s: %s: %s" % (T, name, case, "; ".join(bad[:6]) + (" (+%d more)" % (len(bad) - 6) if len(bad) > 6 else "")))
    else:
        print("PASS: %s: %s: %s%s" % (T, name, case, extra))

try:
    doc = json.load(open(jpath))
    funcs, stats = doc["functions"], doc["stats"]
except Exception as e:
    print("FAIL: %s: %s: top --json: unreadable JSON: %s" % (T, name, e))
    sys.exit(0)

truth, alias, nosym, total, elfs = {}, {}, 0, 0, {}
for line in open(selfp):
    f = line.split()
    if f[0] == "[nosym]":
        nosym = int(f[1])
    elif f[0] == "[total]":
        total = int(f[1])
    elif f[0].startswith("[elf:"):
        elfs[f[0][5:-1]] = (int(f[1]), f[2])
    else:
        truth[f[0]] = int(f[1])
        for a in [f[0]] + f[2:]:
            alias[a] = f[0]
# A stripped library (dynsym only) has unnamed functions: its code jumps into
# them, so address attribution and frame attribution part ways there. Such
# binaries are compared as a whole; every binary with a full symbol table,
# function by function.
stripped = {b for b, (_, t) in elfs.items() if t != "symtab"}
def binary_of(key):
    return key.split(":", 1)[0] if multi else next(iter(elfs))

# oobprof's key for a function: name, "@file" when the binary has several
# functions of that name, "binary:" when there are several binaries. Where the
# file cannot tell them apart (no DWARF: glibc's two static read_int), the
# namesakes are compared as one group, "name@*", on both sides.
# oobprof may tell namesakes apart in the name itself: "helper (statics_a.c)".
for fn in funcs:
    m = re.fullmatch(r"(.+) \((.+)\)", fn["name"])
    if m:
        fn["name"], fn["file"] = m.group(1), m.group(2)
seen = {}
for fn in funcs:
    k = (os.path.basename(fn.get("binary") or ""), fn["name"])
    seen[k] = seen.get(k, 0) + 1
keys, groups = [], set()
for fn in funcs:
    b = os.path.basename(fn.get("binary") or "")
    pre = b + ":" if multi else ""
    key = pre + fn["name"]
    if seen[(b, fn["name"])] > 1:
        key = "%s%s@%s" % (pre, fn["name"], os.path.basename(fn.get("file") or "?"))
        if key not in alias:
            key = "%s%s@*" % (pre, fn["name"])
            groups.add(key)
    keys.append(key)

def canon(t):
    g = t.split("@")[0] + "@*"
    return g if "@" in t and g in groups else t

merged = {}
for t, c in truth.items():
    merged[canon(t)] = merged.get(canon(t), 0) + c
truth = merged
alias = {a: canon(t) for a, t in alias.items()}
for g in groups:
    alias[g] = g
# A name qualified in truth ("read_int@vfprintf-internal.o": the ELF has two)
# of which only one ran and so appears once in oobprof's list.
by_base = {}
for t in truth:
    by_base.setdefault(t.split("@")[0], []).append(t)
got = {}
for fn, key in zip(funcs, keys):
    if key not in alias and len(by_base.get(key, [])) == 1:
        key = by_base[key][0]
    t = alias.get(key, "?" + key)
    g = got.setdefault(t, {"self": 0, "calls": 0, "names": []})
    g["self"] += int(fn.get("self_instructions", 0))
    g["calls"] += int(fn.get("calls", 0))
    g["names"].append(key)

bad = ["%s: oobprof %d, truth %d" % (t, got.get(t, {"self": 0})["self"], c)
       for t, c in sorted(truth.items())
       if binary_of(t) not in stripped and got.get(t, {"self": 0})["self"] != c]
extra = [k for k in got if k.startswith("?") and got[k]["self"] and binary_of(k[1:]) not in stripped]
if bad and extra:
    bad.append("oobprof functions with no symbol in truth: " +
               ", ".join("%s=%d" % (k[1:], got[k]["self"]) for k in extra[:8]))
report("self instructions per function", bad, " (%d functions%s)" % (
    sum(1 for t in truth if binary_of(t) not in stripped),
    ", whole binary only: " + " ".join(sorted(stripped)) if stripped else ""))

per_bin = {}
for fn in funcs:
    b = os.path.basename(fn.get("binary") or "")
    per_bin[b] = per_bin.get(b, 0) + int(fn.get("self_instructions", 0))
bad = ["%s: oobprof %d, truth %d" % (b, per_bin.get(b, 0), c)
       for b, (c, _) in sorted(elfs.items()) if per_bin.get(b, 0) != c]
report("self instructions per binary", bad, " (%s)" % ", ".join("%s %d" % (b, c) for b, (c, _) in sorted(elfs.items())))

bad = []
if stats.get("instructions") != total:
    bad.append("stats.instructions %s, histogram total %d" % (stats.get("instructions"), total))
s = sum(int(fn.get("self_instructions", 0)) for fn in funcs)
if s != total:
    bad.append("sum of self_instructions %d, histogram total %d" % (s, total))
report("total instructions", bad, " (%d)" % total)

bad, n, skipped = [], 0, []
prog = os.path.basename(name)
for line in open(callsp):
    fname, cnt = line.split()
    key = ("%s:%s" % (prog, fname)) if multi else fname
    if key not in alias:
        skipped.append(fname)  # inlined away: no symbol, never entered
        continue
    t = alias[key]
    n += 1
    c = got.get(t, {"calls": 0})["calls"]
    if c != int(cnt):
        bad.append("%s: oobprof %d, program %s" % (fname, c, cnt))
if n == 0:
    bad.append("no counted function found among the symbols")
report("calls per function", bad, " (%d functions%s)" % (n, ", not symbols: " + " ".join(skipped) if skipped else ""))

m = re.search(r"^longjmps (\d+)$", open(outp).read(), re.M)
want = int(m.group(1)) if m else 0
bad = []
for k in ("repairs_unknown", "repairs_unwind", "repairs_ambiguous"):
    if stats.get(k) != 0:
        bad.append("%s %s, expected 0" % (k, stats.get(k)))
if stats.get("longjmps") != want:
    bad.append("longjmps %s, expected %d" % (stats.get("longjmps"), want))
report("repairs", bad, " (longjmps %d)" % want)
EOF
}

# check_program NAME: every end-to-end check of one program.
check_program() {
	n=$1
	p=$gen/$n
	if [ ! -e "$p.oobt" ] || [ ! -e "$p.hist" ] || [ ! -e "$p.out" ]; then
		fail "$n" "trace missing in $gen (see tests/out/gen-fixtures.log)"
		return
	fi
	# One option or value per line, no spaces in paths: word splitting is safe.
	elfs=$(elf_args "$n")
	nelfs=$(elf_specs "$n" | wc -l)
	# shellcheck disable=SC2046
	python3 "$truth" self --aliases "$p.hist" $(elf_specs "$n") >"$w/$n.self" &&
		python3 "$truth" calls "$p.out" >"$w/$n.calls" || {
		fail "$n" "truth.py failed"
		return
	}
	# shellcheck disable=SC2086
	if ! cli_run "$w/$n.json" "$w/$n.top.err" top --json $elfs "$p.oobt"; then
		fail "$n: top --json" "exit status $? ($(head -c 300 "$w/$n.top.err"))"
	else
		compare_top "$n" "$w/$n.json" "$w/$n.self" "$w/$n.calls" "$p.out" "$nelfs"
	fi

	total=$(awk '$1 == "[total]" { print $2 }' "$w/$n.self")
	# shellcheck disable=SC2086
	if ! cli_run "$w/$n.fold" "$w/$n.fold.err" fold $elfs "$p.oobt"; then
		fail "$n: fold" "exit status $? ($(head -c 300 "$w/$n.fold.err"))"
		return
	fi
	sum=$(awk '{ s += $NF } END { printf "%d", s }' "$w/$n.fold")
	if [ "$sum" = "$total" ]; then
		pass "$n: fold weights sum to the instruction total ($total)"
	else
		fail "$n: fold weights sum to the instruction total" "sum $sum, histogram $total"
	fi

	rm -f "$w/$n.trv"
	if ! cli_run "$w/$n.conv.out" "$w/$n.conv.err" convert --to tracerv-bin "$p.oobt" -o "$w/$n.trv"; then
		fail "$n: convert --to tracerv-bin" "exit status $? ($(head -c 300 "$w/$n.conv.err"))"
		return
	fi
	# shellcheck disable=SC2086
	if ! cli_run "$w/$n.trv.fold" "$w/$n.trv.fold.err" fold $elfs "$w/$n.trv"; then
		fail "$n: fold tracerv-bin" "exit status $? ($(head -c 300 "$w/$n.trv.fold.err"))"
	elif cmp -s "$w/$n.fold" "$w/$n.trv.fold"; then
		pass "$n: fold of the tracerv-bin copy (pc only) is identical"
	else
		fail "$n: fold of the tracerv-bin copy (pc only) is identical" \
			"diff $w/$n.fold $w/$n.trv.fold: $(diff "$w/$n.fold" "$w/$n.trv.fold" | head -4 | tr '\n' ' ')"
	fi
	rm -f "$w/$n.trv"
}

for n in $PROGRAMS; do
	check_program "$n"
done

# stats: key: value lines; the instruction count must be the histogram's.
n=recursion
total=$(awk '$1 == "[total]" { print $2 }' "$w/$n.self" 2>/dev/null)
if ! cli_run "$w/$n.stats" "$w/$n.stats.err" stats "$gen/$n.oobt"; then
	fail "$n: stats" "exit status $? ($(head -c 300 "$w/$n.stats.err"))"
elif grep -Eq "^instructions: *$total\$" "$w/$n.stats"; then
	pass "$n: stats prints instructions: $total"
else
	fail "$n: stats prints instructions: $total" "got: $(head -c 300 "$w/$n.stats" | tr '\n' '|')"
fi

# The truth assumes gcc really emitted tail jumps where tailcall.c says so.
dis=$w/tailcall.dis
"${CROSS}objdump" -d --no-show-raw-insn "$gen/tailcall" >"$dis" 2>/dev/null
tj=$(awk '/^[0-9a-f]+ <(tail_a|tail_b|dispatch|ping|pong|tail_lib)>:/ { f = $2 }
	/^$/ { f = "" }
	f != "" && ($2 == "j" || $2 == "jr" || $2 == "tail") { n++ }
	END { print n + 0 }' "$dis")
if [ "$tj" -ge 6 ]; then
	pass "tailcall: gcc emitted tail jumps ($tj)"
else
	fail "tailcall: gcc emitted tail jumps" "$tj jumps in $dis, expected >= 6"
fi

# Bad input: a clear error, non-zero status, no crash (signal or sanitizer
# report), no hang (timeout gives 124).
bad_case() { # CASE ARG...
	c=$1
	shift
	cli_run "$w/bad.out" "$w/bad.err" "$@"
	rc=$?
	if [ $rc -eq 0 ] || [ $rc -ge 124 ]; then
		fail "bad input: $c" "exit status $rc"
	elif grep -q -e 'Sanitizer' -e 'runtime error' "$w/bad.err"; then
		fail "bad input: $c" "$(grep -m1 -e Sanitizer -e 'runtime error' "$w/bad.err")"
	elif [ ! -s "$w/bad.err" ]; then
		fail "bad input: $c" "no error message"
	else
		pass "bad input: $c ($(head -n 1 "$w/bad.err" | cut -c1-100))"
	fi
}
src=$gen/mixed.oobt
size=$(wc -c <"$src")
head -c $((size / 2)) "$src" >"$w/truncated.oobt"
head -c 40 "$src" >"$w/header-only.oobt"
: >"$w/empty.oobt"
# Flip bytes in the middle of the body (the file is LZ4-framed: the frame
# checksum or the decoder must notice).
python3 -c "
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
for i in range(len(b) // 2, len(b) // 2 + 64):
    b[i] ^= 0x5a
open(sys.argv[2], 'wb').write(b)" "$src" "$w/corrupt.oobt"
head -c 4096 /dev/urandom >"$w/random.bin"
bad_case "truncated oobt" top --json --elf "$gen/mixed" "$w/truncated.oobt"
bad_case "oobt cut inside the header" fold --elf "$gen/mixed" "$w/header-only.oobt"
bad_case "empty trace" fold --elf "$gen/mixed" "$w/empty.oobt"
bad_case "corrupt oobt body" fold --elf "$gen/mixed" "$w/corrupt.oobt"
bad_case "random bytes as trace" stats "$w/random.bin"
bad_case "missing trace file" stats "$w/does-not-exist.oobt"
bad_case "missing ELF" fold --elf "$w/does-not-exist" "$src"
bad_case "random bytes as ELF" fold --elf "$w/random.bin" "$src"
bad_case "bad load base" fold --elf "$gen/mixed@0xzz" "$src"
exit 0
