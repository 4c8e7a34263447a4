#!/bin/sh
# test_gotrace_cli.sh: `oobprof gotrace` end to end.
#  - summaries of real Go traces: event counts equal Go's own parser's
#    (`go tool trace -d`, v1) or the events of the .test text files (v2);
#  - --align on a real run (tests/tools/gen-go.sh: Go 1.19 riscv64 program under
#    qemu-riscv64 with the tracing plugin): the number of Go timed events equals
#    the plugin's own count of executions of runtime.traceEventLocked (address
#    from `go tool nm`), and every anchor is within the stated tolerance;
#    a run with a 5 s sleep is refused; a given --go-clock is checked; the
#    run split into one file per hart aligns as the interleaved file does;
#  - bad input and bad usage give clear errors and exit codes 1 and 2.
# Prints PASS/FAIL/SKIP: test_gotrace_cli: <case>[: why].
set -u
T=test_gotrace_cli
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
shared=${OOB_SHARED:-$OOB_SRCDIR/../shared}
fix=$shared/fixtures/go-traces
gen=$OOB_BUILDDIR/tests/gen/go
w=$OOB_BUILDDIR/tests/out/gotrace_cli

pass() { echo "PASS: $T: $1"; }
fail() { echo "FAIL: $T: $1: $2"; }

set -- "$OOB_BUILDDIR/oobprof" gotrace
if [ ! -x "$1" ]; then
	echo "SKIP: $T: all: oobprof is not built"
	exit 0
fi
if [ ! -d "$fix" ]; then
	echo "SKIP: $T: all: no fixtures at $fix"
	exit 0
fi
mkdir -p "$w" || exit 1

# 1. v1 summaries against go tool trace -d (counts per event name).
for f in user_task_region_1_19_good http_1_19_good stress_start_stop_1_20_good; do
	if [ ! -e "$gen/$f.d.txt" ]; then
		echo "SKIP: $T: counts $f: no go tool trace -d output (gen-go.sh needs go)"
		continue
	fi
	if ! "$@" --json "$fix/$f" >"$w/$f.json" 2>"$w/$f.err"; then
		fail "counts $f" "exit status $? ($(cat "$w/$f.err"))"
		continue
	fi
	python3 - "$w/$f.json" "$gen/$f.d.txt" "$f" <<'EOF'
import json, sys, collections
j = json.load(open(sys.argv[1]))
want = collections.Counter(l.split()[1] for l in open(sys.argv[2]) if l.strip())
got = collections.Counter()
for k, v in j["counts"].items():
    if k in ("Batch", "Frequency", "Stack", "String", "TimerGoroutine"):
        continue
    got[k[:-5] if k.endswith("Local") else k] += v
name = "counts " + sys.argv[3]
if got != want:
    print("FAIL: test_gotrace_cli: %s: %s" % (name, dict(got - want) or dict(want - got)))
elif j["events"] != sum(want.values()):
    print("FAIL: test_gotrace_cli: %s: events %d != %d" % (name, j["events"], sum(want.values())))
else:
    gs = {e["id"] for e in j["goroutines"]}
    print("PASS: test_gotrace_cli: %s = go tool trace -d (%d events, %d goroutines)" % (name, j["events"], len(gs)))
EOF
done

# 2. v2 summaries against the .test text files.
for f in go122-annotations go122-gc-stress go125-sync; do
	if ! "$@" --json "$fix/$f.converted.bin" >"$w/$f.json" 2>"$w/$f.err"; then
		fail "counts $f" "exit status $? ($(cat "$w/$f.err"))"
		continue
	fi
	python3 - "$w/$f.json" "$fix/$f.test" "$f" <<'EOF'
import json, sys, collections
j = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read().split("-- trace --\n", 1)[1].splitlines()[1:]
skip = {"EventBatch", "Stacks", "Stack", "Strings", "String", "Frequency", "Sync", "ClockSnapshot", "CPUSamples"}
want = collections.Counter(l.split()[0] for l in text if l and not l[0].isspace() and l.split()[0] not in skip)
got = collections.Counter({k: v for k, v in j["counts"].items() if k not in skip})
name = "counts " + sys.argv[3]
if got != want:
    print("FAIL: test_gotrace_cli: %s: ours %s, text %s" % (name, dict(got - want), dict(want - got)))
else:
    print("PASS: test_gotrace_cli: %s = the .test events (%d events)" % (name, sum(want.values())))
EOF
done

# 3. The text summary.
if "$@" "$fix/user_task_region_1_19_good" >"$w/text.out" 2>&1 &&
	grep -q '^format: v1 (go 1.19 trace)$' "$w/text.out" &&
	grep -q '^events: 36 (timed 36)' "$w/text.out" &&
	grep -q 'tasks: 1, regions: 3, logs: 1' "$w/text.out"; then
	pass "text summary"
else
	fail "text summary" "$(head -c 300 "$w/text.out")"
fi

# 4. Alignment with the instruction trace of the same run.
if [ ! -e "$gen/demo.truth" ] || [ ! -e "$gen/demo.oobt" ]; then
	echo "SKIP: $T: align: no traced Go run (gen-go.sh needs go and qemu-riscv64)"
else
	"$@" --json --align "$gen/demo.oobt" --elf "$gen/gotrace-demo" "$gen/demo.trace" \
		>"$w/align.json" 2>"$w/align.err"
	rc=$?
	python3 - "$w/align.json" "$gen/demo.truth" "$rc" "$w/clock" <<'EOF'
import json, sys
T = "test_gotrace_cli"
try:
    j = json.load(open(sys.argv[1]))["alignment"]
except Exception as e:
    print("FAIL: %s: align: no JSON (%s)" % (T, e)); sys.exit(0)
truth = dict(l.split() for l in open(sys.argv[2]))
m = j["model"]
emit = [a for a in j["anchors"] if a["kind"] == "emit"]
worst = max(abs(a["residual"]) for a in emit)
if int(truth["go_events"]) != j["go_events"] or int(truth["entries"]) != j["entries"]:
    print("FAIL: %s: align counts: %d Go events, %d entries; truth %s / %s" % (T, j["go_events"], j["entries"], truth["go_events"], truth["entries"]))
else:
    print("PASS: %s: align counts: %d Go timed events = %d entries into %s (go tool trace -d, plugin histogram)" % (T, j["go_events"], j["entries"], j["func"]))
if int(truth["func_addr"], 16) != j["func_addr"]:
    print("FAIL: %s: align func_addr: 0x%x vs go tool nm %s" % (T, j["func_addr"], truth["func_addr"]))
else:
    print("PASS: %s: align func_addr = go tool nm" % T)
ok = sys.argv[3] == "0" and j["ok"] and worst <= m["tolerance"] and len(emit) == j["go_events"]
tol = "%.1f %% of the span" % (100 * m["tolerance"] / m["span"])
if ok:
    print("PASS: %s: align fit holds: all %d anchors within %.0f insns (%s); max %.0f, rms %.0f" % (T, len(emit), m["tolerance"], tol, worst, m["rms"]))
else:
    print("FAIL: %s: align fit: exit %s, ok %s, max %.0f, tolerance %.0f" % (T, sys.argv[3], j["ok"], worst, m["tolerance"]))
# The fitted line as a given clock: trace = a * ticks + b0, hz = a * freq.
b0 = m["b"] - m["a"] * m["x0"]
open(sys.argv[4], "w").write("%r:%r %r:%r\n" % (m["a"] * json.load(open(sys.argv[1]))["frequency"], b0,
                                                1.5 * m["a"] * json.load(open(sys.argv[1]))["frequency"], b0))
EOF
	good=$(cut -d' ' -f1 "$w/clock" 2>/dev/null)
	bad=$(cut -d' ' -f2 "$w/clock" 2>/dev/null)
	if [ -n "$good" ] && "$@" --align "$gen/demo.oobt" --elf "$gen/gotrace-demo" \
		--go-clock "$good" "$gen/demo.trace" >"$w/given.out" 2>&1; then
		pass "align --go-clock with the fitted rate holds"
	else
		fail "align --go-clock fitted" "$(tail -n 2 "$w/given.out")"
	fi
	if [ -n "$bad" ] && ! "$@" --align "$gen/demo.oobt" --elf "$gen/gotrace-demo" \
		--go-clock "$bad" "$gen/demo.trace" >"$w/given-bad.out" 2>&1 &&
		grep -q 'does not hold' "$w/given-bad.out"; then
		pass "align --go-clock 1.5x too fast is refused"
	else
		fail "align --go-clock wrong" "$(tail -n 2 "$w/given-bad.out")"
	fi
	"$@" --align "$gen/demo-sleep.oobt" --elf "$gen/gotrace-demo" "$gen/demo-sleep.trace" \
		>"$w/sleep.out" 2>&1
	rc=$?
	if [ $rc -eq 1 ] && grep -q 'Go clock model does not hold' "$w/sleep.out"; then
		pass "align refuses the run with a 5 s pause: $(grep -o 'is [0-9]* trace units off.*' "$w/sleep.out" | head -c 120)"
	else
		fail "align sleep run" "exit $rc: $(tail -n 2 "$w/sleep.out")"
	fi
	"$@" --align "$gen/demo-sleep.oobt" --elf "$gen/gotrace-demo" "$gen/demo.trace" \
		>"$w/mix.out" 2>&1
	rc=$?
	if [ $rc -eq 1 ] && grep -q 'not the same run' "$w/mix.out"; then
		pass "align refuses traces of two different runs"
	else
		fail "align mixed runs" "exit $rc: $(tail -n 2 "$w/mix.out")"
	fi
	# One file per hart (FireSim's TRACEFILE-C<n>): convert --per-hart makes a
	# record's index in the whole run its cycle, so the files read in time
	# order must give the very anchors of the interleaved file.
	rm -f "$w/split"-C*
	aligns=
	if "$OOB_BUILDDIR/oobprof" convert --to oobt --per-hart -o "$w/split" "$gen/demo.oobt" \
		>"$w/split.out" 2>&1; then
		for f in "$w/split"-C*; do aligns="$aligns --align $f"; done
	fi
	# shellcheck disable=SC2086 # one word per file: the build path has no spaces
	"$@" --json $aligns --elf "$gen/gotrace-demo" --tolerance-rel 0.1 "$gen/demo.trace" \
		>"$w/split.json" 2>"$w/split.err"
	python3 - "$w/align.json" "$w/split.json" "$(ls "$w/split"-C* 2>/dev/null | wc -l)" <<'EOF'
import json, sys
T = "test_gotrace_cli"
try:
    one = json.load(open(sys.argv[1]))["alignment"]
    per = json.load(open(sys.argv[2]))["alignment"]
except Exception as e:
    print("FAIL: %s: align per-hart files: no JSON (%s)" % (T, e)); sys.exit(0)
key = lambda j: [(a["kind"], a["go"], a["trace"], a["hart"]) for a in j["anchors"]]
if int(sys.argv[3]) < 2:
    print("FAIL: %s: align per-hart files: %s files (the run has %d harts)" % (T, sys.argv[3], one["harts"]))
elif key(one) != key(per) or one["entries"] != per["entries"] or not per["ok"]:
    diff = sum(x != y for x, y in zip(key(one), key(per)))
    print("FAIL: %s: align per-hart files: ok %s, %d entries vs %d, %d of %d anchors differ" % (T, per["ok"], per["entries"], one["entries"], diff, len(key(one))))
else:
    print("PASS: %s: align on %s per-hart files (time axis: %s) = the interleaved trace: all %d anchors (%d entries, %d syscalls) on the same hart and time" % (T, sys.argv[3], per["time_axis"], len(key(one)), per["entries"], per["syscall_anchors"]))
EOF
	"$@" --align "$gen/demo.oobt" --align "$gen/demo.oobt" --elf "$gen/gotrace-demo" \
		"$gen/demo.trace" >"$w/nocycles.out" 2>&1
	rc=$?
	if [ $rc -eq 1 ] && grep -q 'without cycles have no common time' "$w/nocycles.out"; then
		pass "align refuses several files without cycles: $(cat "$w/nocycles.out")"
	else
		fail "align several files without cycles" "exit $rc: $(tail -n 2 "$w/nocycles.out")"
	fi
fi

# 5. Bad input, bad usage.
printf 'not a trace at all\n' >"$w/garbage"
"$@" "$w/garbage" >"$w/bad.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q 'not a Go execution trace' "$w/bad.out"; then
	pass "garbage input: exit 1, says why"
else
	fail "garbage input" "exit $rc: $(cat "$w/bad.out")"
fi
head -c 1000 "$fix/http_1_19_good" >"$w/cut.trace"
"$@" "$w/cut.trace" >"$w/cut.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -Eq 'offset 0x[0-9a-f]+|Frequency' "$w/cut.out"; then
	pass "truncated trace: exit 1, $(head -c 120 "$w/cut.out")"
else
	fail "truncated trace" "exit $rc: $(cat "$w/cut.out")"
fi
"$@" --align x.oobt "$fix/http_1_19_good" >"$w/usage.out" 2>&1
rc1=$?
"$@" --bogus "$fix/http_1_19_good" >>"$w/usage.out" 2>&1
rc2=$?
if [ $rc1 -eq 2 ] && [ $rc2 -eq 2 ]; then
	pass "usage errors: exit 2"
else
	fail "usage errors" "exit $rc1 / $rc2"
fi
exit 0
