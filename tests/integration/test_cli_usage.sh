#!/bin/sh
# test_cli_usage.sh: the command line as a daily tool (issue 19, CLI):
# --version, a help per command made from the same table as the parser
# (every option a help lists is accepted by that command, and no other
# command's option is), one-line errors with a hint, --window checked,
# `top -n N` with shares that add up, cycle columns only with cycles,
# `processes` readable by default and JSON with --json, and a hint for
# inputs that are not traces (a Go trace, compressed files).
set -u
T=test_cli_usage
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
CLI=$OOB_BUILDDIR/oobprof
G=$OOB_BUILDDIR/tests/gen
W=$OOB_BUILDDIR/tests/out/cli_usage
rm -rf "$W" && mkdir -p "$W"
pass() { echo "PASS: $T: $1"; }
fail() { echo "FAIL: $T: $1: $2"; }
skip() { echo "SKIP: $T: $1: $2"; }

want=$(sed -n 's/^AC_INIT(\[oobprof\], \[\([^]]*\)\].*/\1/p' "$OOB_SRCDIR/configure.ac")
got=$("$CLI" --version)
[ "$got" = "oobprof $want" ] && pass "--version: $got" || fail "--version" "'$got', want 'oobprof $want'"

"$CLI" --help >"$W/help.txt"
cmds=$(sed -n '/^commands:/,/^$/p' "$W/help.txt" | awk 'NF >= 2 && $1 != "commands:" { print $1 }')
case " $(echo $cmds) " in
*" gotrace "*" "* | *" gotrace ") pass "global help lists $(echo $cmds | wc -w) commands, gotrace among them" ;;
*) fail "global help" "no gotrace in: $cmds" ;;
esac

# Every option a command's help lists is one it takes: given with a value
# (where it has one) and a trace that does not exist, the error is about the
# trace, never the option. Values that parse for every option: 1 or a word.
value_for() {
	case $1 in
	--format) echo auto ;; --metric) echo instructions ;; --tasks | --nonlocal) echo auto ;;
	--window) echo 1:2 ;; --go-clock) echo 1 ;; --tracks) echo harts ;;
	--log-level) echo error ;; --to) echo "$2" ;; --width) echo 800 ;;
	--tracerv-valid-bit) echo 40 ;; --unwind) echo fp ;; *) echo 1 ;;
	esac
}
bad=""
nopts=0
for c in $cmds; do
	[ "$c" = gotrace ] && continue
	"$CLI" "$c" --help >"$W/$c.help" 2>&1 || bad="$bad $c:--help"
	head -n 1 "$W/$c.help" | grep -q "^usage: oobprof $c" || bad="$bad $c:usage-line"
	to=oobt
	[ "$c" = export ] && to=folded
	# "  --opt ARG  help" takes a value, "  --opt     help" none.
	for o in $(sed -n 's/^  \(-[-a-z]*\) [^ ].*/\1=/p; s/^  \(-[-a-z]*\)  .*/\1/p' "$W/$c.help"); do
		name=${o%=}
		[ "$name" = --help ] && continue
		nopts=$((nopts + 1))
		if [ "$name" != "$o" ]; then
			set -- "$name" "$(value_for "$name" "$to")"
		else
			set -- "$name"
		fi
		[ "$name" = -o ] && set -- -o "$W/out.$c"
		# annotate takes the function first
		[ "$c" = annotate ] && set -- main "$@"
		"$CLI" "$c" "$@" "$W/no-such-trace" >/dev/null 2>"$W/err" </dev/null
		! grep -q "unknown option\|no such option\|value is missing\|bad value\|no trace given" "$W/err" ||
			bad="$bad $c:$name($(head -c 80 "$W/err"))"
	done
done
[ -z "$bad" ] && pass "every option of every command's help is accepted by it ($nopts)" || fail "help vs parser" "$bad"

# One line and a hint; exit status 2.
check_usage_error() {
	label=$1
	shift
	"$CLI" "$@" >"$W/out" 2>"$W/err"
	rc=$?
	lines=$(wc -l <"$W/err" | tr -d ' ')
	if [ $rc = 2 ] && [ "$lines" = 1 ] && grep -q "$EXPECT" "$W/err"; then
		pass "$label: exit 2, one line: $(cat "$W/err")"
	else
		fail "$label" "exit $rc, $lines lines: $(head -c 300 "$W/err")"
	fi
}
EXPECT="oobprof top --help" check_usage_error "unknown option" top --bogus x
EXPECT="no such option for this command: '--to'" check_usage_error "another command's option" top --to oobt x
EXPECT="a value is missing after '--elf'" check_usage_error "missing value" top --elf
EXPECT="TO must be above FROM" check_usage_error "--window 5:3" fold --window 5:3 x
EXPECT="unknown command 'bogus'" check_usage_error "unknown command" bogus

P=$G/progs/fnptr
if [ -e "$P.oobt" ]; then
	"$CLI" top --json --elf "$P" "$P.oobt" >"$W/top.json" && "$CLI" top -n 5 --elf "$P" "$P.oobt" >"$W/top5.txt" &&
		python3 - "$W/top.json" "$W/top5.txt" <<'PY' && pass "top -n 5: the first 5 rows of top --json, shares = self/total of all instructions, no cycle columns without cycles" || fail "top -n 5" "$(cat "$W/top5.txt" | head -c 600)"
import json, sys
j = json.load(open(sys.argv[1]))
rows = [l.split() for l in open(sys.argv[2])]
head, rows = rows[0], rows[1:]
assert "self_cycles" not in head and head[:5] == ["calls", "self_insns", "self%", "total_insns", "total%"], head
assert len(rows) == 5, rows
total = j["stats"]["instructions"]
for r, f in zip(rows, j["functions"][:5]):
    assert int(r[0]) == f["calls"] and int(r[1]) == f["self_instructions"], (r, f)
    assert int(r[3]) == f["total_instructions"], (r, f)
    assert abs(float(r[2].rstrip("%")) - 100.0 * f["self_instructions"] / total) < 0.006, (r, total)
    assert abs(float(r[4].rstrip("%")) - 100.0 * f["total_instructions"] / total) < 0.006, (r, total)
    assert " ".join(r[5:]).startswith(f["name"]), (r, f["name"])
PY
	"$CLI" processes --elf "$P" "$P.oobt" >"$W/ps.txt" && "$CLI" processes --json --elf "$P" "$P.oobt" >"$W/ps.json" &&
		grep -q '^no processes:' "$W/ps.txt" && python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["processes"] == []' "$W/ps.json" &&
		pass "processes: readable by default ($(head -c 60 "$W/ps.txt")...), JSON with --json" ||
		fail "processes" "$(head -c 300 "$W/ps.txt")"
else
	skip "top, processes" "no tests/gen/progs"
fi
TV=$G/readers/tv-c-v40-w1.bin
if [ -e "$TV" ]; then
	"$CLI" top -n 3 "$TV" >"$W/tv.txt" 2>"$W/tv.err" && head -n 1 "$W/tv.txt" | grep -q 'self_cycles.*total_cycles.*ipc' &&
		pass "top with cycles: cycle columns and IPC" || fail "top with cycles" "$(head -c 300 "$W/tv.txt" "$W/tv.err")"
fi

# Inputs that are not traces say what they are.
GO=${OOB_SHARED:-$OOB_SRCDIR/../shared}/fixtures/go-traces/demo-go1.19.8-linux-riscv64-qemu.trace
if [ -e "$GO" ]; then
	"$CLI" fold "$GO" >/dev/null 2>"$W/go.err"
	grep -q 'Go execution trace.*oobprof gotrace.*--gotrace' "$W/go.err" && pass "a Go trace given to fold: $(cat "$W/go.err")" ||
		fail "Go trace to fold" "$(cat "$W/go.err")"
fi
printf 'core   0: 3 0x0000000080000000 (0x00000013)\n' | xz -c >"$W/t.xz" 2>/dev/null &&
	{ "$CLI" fold "$W/t.xz" >/dev/null 2>"$W/xz.err"; grep -q 'xz-compressed.*xz -dc' "$W/xz.err"; } &&
	pass "an xz file: $(cat "$W/xz.err")" || fail "xz input" "$(cat "$W/xz.err" 2>/dev/null)"
