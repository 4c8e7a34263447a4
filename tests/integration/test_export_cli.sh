#!/bin/sh
# test_export_cli.sh: `oobprof export` on real traces (RISC-V programs traced
# in QEMU, a TracerV trace with cycles, the Spike full-system boot with
# kernel and user frames, a QEMU Linux boot with its processes), each export read back by tools that are not
# oobprof: tests/tools/export-check.py (a standalone reader: per-function
# self and total, nesting per hart/thread), speedscope's own JSON schema
# (from its npm package), and `go tool pprof -top`. Every total must equal
# `oobprof top` for the same trace. Bad arguments and inputs must fail
# with a message, never a crash.
set -u
T=test_export_cli
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
CLI=$OOB_BUILDDIR/oobprof
G=$OOB_BUILDDIR/tests/gen
S=${OOB_SHARED:-$OOB_SRCDIR/../shared}/fixtures/spike
CHECK="python3 $OOB_SRCDIR/tests/tools/export-check.py"
SCHEMA=$OOB_SRCDIR/node_modules/speedscope/dist/release/file-format-schema.json
W=$OOB_BUILDDIR/tests/out/export_cli
rm -rf "$W"
mkdir -p "$W"
pass() { echo "PASS: $T: $1"; }
fail() { echo "FAIL: $T: $1: $2"; }
skip() { echo "SKIP: $T: $1: $2"; }
# go tool pprof keeps nothing we need; give it a home of its own.
export HOME="$W/home" GOCACHE="$W/gocache" PPROF_TMPDIR="$W/pprof"
mkdir -p "$HOME"

if [ ! -x "$CLI" ]; then
	skip all "oobprof not built"
	exit 0
fi

# run NAME CMD...: runs CMD with its output in $W/NAME.out; 0 if it succeeded.
run() {
	_n=$1
	shift
	"$@" >"$W/$_n.out" 2>&1
}

# exports LABEL METRIC ELF-ARGS... -- TRACE: all four exports of one trace,
# each checked against `oobprof top` with the same metric (the evented ones
# with the time axis's); multi=1: several harts without cycles.
multi=0
exports() {
	label=$1 metric=$2
	shift 2
	args=
	while [ "$1" != -- ]; do
		args="$args $1"
		shift
	done
	trace=$2
	# shellcheck disable=SC2086
	if ! $CLI top --json --metric "$metric" $args "$trace" >"$W/$label.top.json" 2>"$W/$label.top.err"; then
		fail "$label: oobprof top" "$(head -c 300 "$W/$label.top.err")"
		return
	fi
	# shellcheck disable=SC2086
	$CLI top --json --metric calls $args "$trace" >"$W/$label.top-calls.json" 2>/dev/null
	# The formats that keep time have the job's time axis whatever the
	# metric: cycles when the trace has them, else the trace's record index
	# (one hart: its instructions; several: the merged records, which no
	# per-function count equals: those are checked against each other).
	# shellcheck disable=SC2086
	if $CLI top --json --metric cycles $args "$trace" >"$W/$label.top-axis.json" 2>/dev/null &&
		python3 -c 'import json, sys; sys.exit(not any(f["self_cycles"] for f in json.load(open(sys.argv[1]))["functions"]))' \
			"$W/$label.top-axis.json"; then
		axis=cycles
	else
		axis=instructions
		# shellcheck disable=SC2086
		$CLI top --json --metric instructions $args "$trace" >"$W/$label.top-axis.json" 2>/dev/null
	fi
	for fmt in speedscope perfetto perfetto-pb pprof folded; do
		out=$W/$label.$fmt
		# perfetto-pb: also the same per-function totals as the JSON export
		extra=
		[ $fmt = perfetto-pb ] && extra="--json $W/$label.perfetto"
		top=$W/$label.top.json m=$metric
		case $fmt in speedscope | perfetto | perfetto-pb)
			top=$W/$label.top-axis.json m=$axis
			if [ "$multi" = 1 ]; then
				top=- m=records
				[ $fmt = speedscope ] || extra="$extra --same-as speedscope:$W/$label.speedscope"
			fi
			;;
		esac
		# shellcheck disable=SC2086
		if ! run "$label.$fmt.export" $CLI export --to $fmt --metric "$metric" $args "$trace" -o "$out"; then
			fail "$label: export $fmt" "$(head -c 300 "$W/$label.$fmt.export.out")"
			continue
		fi
		# shellcheck disable=SC2086
		what="totals equal oobprof top"
		[ "$top" = - ] && what="totals on the merged record axis, the same in each time-keeping export"
		if run "$label.$fmt.check" $CHECK $fmt "$out" "$top" "$m" $extra; then
			pass "$label: $fmt $what ($(cat "$W/$label.$fmt.check.out"))"
		else
			fail "$label: $fmt totals" "$(head -c 600 "$W/$label.$fmt.check.out")"
		fi
	done
	schema_check "$label" "$W/$label.speedscope"
	pprof_check "$label" "$metric" "$W/$label.pprof"
}

schema_check() { # LABEL FILE
	if [ ! -s "$SCHEMA" ]; then
		skip "$1: speedscope schema" "node_modules/speedscope is not installed (npm ci)"
		return
	fi
	run "$1.schema" $CHECK schema "$2" "$SCHEMA"
	case $? in
	0) pass "$1: speedscope file valid against speedscope's own schema" ;;
	77) skip "$1: speedscope schema" "$(cat "$W/$1.schema.out")" ;;
	*) fail "$1: speedscope schema" "$(tail -c 400 "$W/$1.schema.out")" ;;
	esac
}

pprof_check() { # LABEL METRIC FILE
	if ! command -v go >/dev/null 2>&1; then
		skip "$1: go tool pprof" "go is not installed (golang-go)"
		return
	fi
	for m in "$2" calls; do
		if ! go tool pprof -top -nodecount=10000000 -nodefraction=0 -edgefraction=0 \
			-sample_index="$m" "$3" >"$W/$1.pprof-top-$m.txt" 2>&1; then
			fail "$1: go tool pprof -top -sample_index=$m" "$(head -c 300 "$W/$1.pprof-top-$m.txt")"
			continue
		fi
		top=$W/$1.top.json
		[ "$m" = calls ] && top=$W/$1.top-calls.json
		if run "$1.pprof-top-$m" $CHECK pprof-top "$W/$1.pprof-top-$m.txt" "$top" "$m"; then
			pass "$1: go tool pprof -top -sample_index=$m lists oobprof top's numbers ($(cat "$W/$1.pprof-top-$m.out"))"
		else
			fail "$1: go tool pprof -top -sample_index=$m" "$(head -c 600 "$W/$1.pprof-top-$m.out")"
		fi
		[ "$m" = "$2" ] && [ "$m" = calls ] && break
	done
}

# ---- real programs traced in QEMU (instructions) ----
ran=0
for p in recursion mutual mixed longjmp tailcall statics; do
	[ -s "$G/progs/$p.oobt" ] && [ -s "$G/progs/$p" ] || continue
	exports "$p" instructions --elf "$G/progs/$p" -- "$G/progs/$p.oobt"
	ran=$((ran + 1))
done
[ $ran -eq 0 ] && skip programs "tests/gen/progs not generated"

# A PIE with its shared libraries at their load bases (from QEMU's own log).
if [ -s "$G/progs/fnptr-pie.maps" ]; then
	pie_args=$(awk '{ printf " --elf %s@%s", $1, $2 }' "$G/progs/fnptr-pie.maps")
	# shellcheck disable=SC2086
	exports fnptr-pie instructions $pie_args -- "$G/progs/fnptr-pie.oobt"
fi

# ---- TracerV: cycles, and nanoseconds from a clock rate ----
TV=$G/readers/tv-c-v63-w1.bin
if [ -s "$TV" ] && [ -s "$G/readers/rdprog" ]; then
	exports tracerv-cycles cycles --elf "$G/readers/rdprog" -- "$TV"
	exports tracerv-insns instructions --elf "$G/readers/rdprog" -- "$TV"
	# 1 GHz: one cycle is one ns, so the ns export equals the cycles one.
	if run tv-ghz $CLI export --to perfetto --clock-hz 1000000000 --elf "$G/readers/rdprog" "$TV" -o "$W/tv-ghz.json" &&
		run tv-ghz-check $CHECK perfetto "$W/tv-ghz.json" "$W/tracerv-cycles.top.json" cycles &&
		grep -q '"time":"nanoseconds (from cycles and the clock rate)"' "$W/tv-ghz.json"; then
		pass "tracerv: --clock-hz 1e9 gives the cycle totals in ns"
	else
		fail "tracerv: --clock-hz" "$(cat "$W/tv-ghz.out" "$W/tv-ghz-check.out" 2>/dev/null | head -c 400)"
	fi
else
	skip tracerv "tests/gen/readers TracerV trace not generated"
fi

# ---- Spike: Linux boot, kernel and user frames ----
if [ -s "$G/readers/spike.log" ] && [ -s "$G/vmlinux" ] && [ -s "$S/init" ]; then
	exports spike instructions --elf "$G/vmlinux" --elf "$S/init" --elf "$S/prog" -- "$G/readers/spike.log"
	# min-duration: nesting kept, nothing shorter left, a much smaller file.
	if run spike-min $CLI export --to perfetto --min-duration 2000 --elf "$G/vmlinux" --elf "$S/init" \
		--elf "$S/prog" "$G/readers/spike.log" -o "$W/spike-min.json" &&
		run spike-min-check $CHECK perfetto "$W/spike-min.json" "$W/spike.top.json" instructions --min-ns 2000; then
		pass "spike: perfetto --min-duration 2000: $(wc -c <"$W/spike-min.json") bytes instead of $(wc -c <"$W/spike.perfetto"), $(cat "$W/spike-min-check.out")"
	else
		fail "spike: perfetto --min-duration" "$(cat "$W/spike-min.out" "$W/spike-min-check.out" 2>/dev/null | head -c 400)"
	fi
	if run spike-minpb $CLI export --to perfetto-pb --min-duration 2000 --elf "$G/vmlinux" --elf "$S/init" \
		--elf "$S/prog" "$G/readers/spike.log" -o "$W/spike-min.pftrace.gz" &&
		run spike-minpb-check $CHECK perfetto-pb "$W/spike-min.pftrace.gz" "$W/spike.top.json" instructions \
			--min-ns 2000 --json "$W/spike-min.json"; then
		pass "spike: perfetto-pb --min-duration 2000: the JSON's slices, $(cat "$W/spike-minpb-check.out")"
	else
		fail "spike: perfetto-pb --min-duration" "$(cat "$W/spike-minpb.out" "$W/spike-minpb-check.out" 2>/dev/null | head -c 400)"
	fi
	# _[k] on exactly the kernel frames (those `oobprof top` calls kernel).
	$CLI export --to folded --annotate --elf "$G/vmlinux" --elf "$S/init" --elf "$S/prog" \
		"$G/readers/spike.log" -o "$W/spike-ann.txt" 2>/dev/null
	if python3 - "$W/spike-ann.txt" "$W/spike.top.json" >"$W/spike-ann.out" 2>&1 <<'EOF'; then
import json, sys
kinds = {}
for f in json.load(open(sys.argv[2]))["functions"]:
    kinds.setdefault(f["name"], set()).add(f["kind"])
bad = nk = 0
for line in open(sys.argv[1]):
    for fr in line.rsplit(" ", 1)[0].split(";"):
        k = fr.endswith("_[k]")
        nk += k
        name = fr[:-4] if k else fr
        if name in kinds and len(kinds[name]) == 1 and k != ("kernel" in kinds[name]):
            bad += 1
print(nk, "kernel frames annotated,", bad, "wrong")
sys.exit(1 if bad or nk == 0 else 0)
EOF
		pass "spike: folded --annotate: $(cat "$W/spike-ann.out")"
	else
		fail "spike: folded --annotate" "$(cat "$W/spike-ann.out")"
	fi
else
	skip spike "Spike fixture or tests/gen/vmlinux missing"
fi

# ---- two harts interleaved in one Spike log: one profile / thread per hart ----
# (without vmlinux: frames are addresses; the point is the per-hart nesting)
S2=$G/readers/spike-2core.log
if [ -s "$S2" ]; then
	multi=1
	exports spike-2core instructions -- "$S2"
	multi=0
	nprof=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["profiles"]))' "$W/spike-2core.speedscope" 2>/dev/null)
	if [ "$nprof" = 2 ] && grep -q '^ok: 2 threads' "$W/spike-2core.perfetto.check.out" &&
		grep -q '^ok: .* 2 tracks with slices' "$W/spike-2core.perfetto-pb.check.out"; then
		pass "spike-2core: two evented profiles, two Perfetto threads (JSON and protobuf), each properly nested"
	else
		fail "spike-2core: per hart" "$nprof speedscope profiles; perfetto: $(cat "$W/spike-2core.perfetto.check.out" "$W/spike-2core.perfetto-pb.check.out")"
	fi
fi

# ---- the sampled fallback ----
if [ -s "$G/progs/mixed.oobt" ]; then
	if run fallback $CLI export --to speedscope --max-events 100 --elf "$G/progs/mixed" "$G/progs/mixed.oobt" \
		-o "$W/fallback.json" && grep -q '"type":"sampled"' "$W/fallback.json" &&
		! grep -q '"type":"evented"' "$W/fallback.json" &&
		grep -q '^{[^[]*"name":"mixed.oobt (sampled: [0-9]* stack events > max 100)"' "$W/fallback.json" &&
		grep -q 'note: more than 100 stack events: speedscope gets the sampled form' "$W/fallback.out" &&
		run fallback-check $CHECK speedscope "$W/fallback.json" "$W/mixed.top.json" instructions; then
		pass "speedscope over --max-events falls back to samples, says so (name, stderr), totals exact"
	else
		fail "sampled fallback" "$(cat "$W/fallback.out" "$W/fallback-check.out" 2>/dev/null | head -c 400)"
	fi
fi

# ---- a Linux boot: guest processes as Perfetto processes and threads ----
L=$G/linux/sv39
if [ -s "$L/boot.oobt" ] && [ -s "$L/vmlinux" ]; then
	# 1 us and longer: the JSON stays small enough to read back here
	for f in perfetto perfetto-pb; do
		run "boot.$f" $CLI export --to $f --min-duration 1000 --elf "$L/vmlinux" "$L/boot.oobt" -o "$W/boot.$f" ||
			fail "boot: export $f" "$(head -c 300 "$W/boot.$f.out")"
	done
	$CLI processes --json --elf "$L/vmlinux" "$L/boot.oobt" >"$W/boot.processes.json" 2>/dev/null
	$CLI top --json --elf "$L/vmlinux" "$L/boot.oobt" >"$W/boot.top.json" 2>/dev/null
	if run boot-check $CHECK perfetto-pb "$W/boot.perfetto-pb" "$W/boot.top.json" instructions --min-ns 1000 \
		--json "$W/boot.perfetto" --processes "$W/boot.processes.json"; then
		pass "boot: perfetto-pb $(wc -c <"$W/boot.perfetto-pb") bytes (JSON $(wc -c <"$W/boot.perfetto")): $(cat "$W/boot-check.out")"
	else
		fail "boot: perfetto-pb" "$(head -c 600 "$W/boot-check.out")"
	fi
else
	skip boot "tests/gen/linux/sv39 not generated"
fi

# ---- refusals: a message and a non-zero status, never a crash ----
# expect LABEL STATUS PATTERN CMD...
expect() {
	_l=$1 _st=$2 _pat=$3
	shift 3
	"$@" >"$W/bad.out" 2>&1
	_rc=$?
	if [ $_rc -eq "$_st" ] && grep -q -- "$_pat" "$W/bad.out" && ! grep -q Sanitizer "$W/bad.out"; then
		pass "refused: $_l (status $_rc)"
	else
		fail "refused: $_l" "status $_rc (want $_st), output: $(head -c 300 "$W/bad.out")"
	fi
}
P=$G/progs/mixed
if [ -s "$P.oobt" ]; then
	expect "unknown format" 2 "needs --to" $CLI export --to chrome --elf "$P" "$P.oobt" -o "$W/x"
	expect "no -o" 2 "needs --to" $CLI export --to pprof --elf "$P" "$P.oobt"
	expect "no trace" 2 "no trace given" $CLI export --to pprof -o "$W/x"
	expect "--clock-hz without cycles" 1 "clock rate" $CLI export --to perfetto --clock-hz 1000 --elf "$P" "$P.oobt" -o "$W/x"
	expect "--clock-hz 0" 2 "bad value" $CLI export --to perfetto --clock-hz 0 --elf "$P" "$P.oobt" -o "$W/x"
	expect "cycles of a trace without" 1 "no cycle counts" $CLI export --to speedscope --metric cycles --elf "$P" "$P.oobt" -o "$W/x"
	expect "missing trace" 1 "no-such" $CLI export --to folded "$W/no-such.oobt" -o "$W/x"
	expect "unwritable output" 1 "x/y" $CLI export --to folded --elf "$P" "$P.oobt" -o "$W/no-dir/x/y"
	[ -e "$W/x" ] && fail "no output left behind" "$W/x exists after failures" || pass "no output file left behind by a failed export"
	# a trace cut in the middle: an error or a shorter profile, never a crash
	head -c 20000 "$P.oobt" >"$W/cut.oobt"
	$CLI export --to perfetto --elf "$P" "$W/cut.oobt" -o "$W/cut.json" >"$W/cut.out" 2>&1
	rc=$?
	ok=0
	[ $rc -eq 0 ] && python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$W/cut.json" && ok=1
	[ $rc -eq 1 ] && [ -s "$W/cut.out" ] && ok=1
	grep -q Sanitizer "$W/cut.out" && ok=0
	if [ $ok -eq 1 ]; then
		pass "a trace cut short: status $rc, $(head -c 120 "$W/cut.out" | tr '\n' ' ')"
	else
		fail "a trace cut short" "status $rc: $(head -c 300 "$W/cut.out")"
	fi
	$CLI export --to perfetto-pb --elf "$P" "$W/cut.oobt" -o "$W/cut.pb" >"$W/cutpb.out" 2>&1
	rc=$?
	ok=0
	[ $rc -eq 0 ] && $CHECK perfetto-pb "$W/cut.pb" /dev/null instructions --min-ns 1 >>"$W/cutpb.out" 2>&1 && ok=1
	[ $rc -eq 1 ] && [ -s "$W/cutpb.out" ] && ok=1
	grep -q Sanitizer "$W/cutpb.out" && ok=0
	if [ $ok -eq 1 ]; then
		pass "a trace cut short, perfetto-pb: status $rc, $(tail -c 120 "$W/cutpb.out" | tr '\n' ' ')"
	else
		fail "a trace cut short, perfetto-pb" "status $rc: $(head -c 300 "$W/cutpb.out")"
	fi
fi
exit 0
