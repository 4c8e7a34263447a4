#!/bin/sh
# test_cli_output.sh: what `oobprof ... -o OUT` does to OUT. A command that
# fails never truncates, renames over or removes OUT: a FIFO stays a FIFO
# (and is not even opened when the options are refused), a user's regular
# file keeps its bytes. A command that succeeds replaces a regular file
# whole (a new inode renamed into place, its mode kept, no temporary file
# left) and writes straight through a pipe. Every command's -o (fold, top,
# stats, processes, timeline, export, convert, gotrace) goes the same way,
# as does oobprofd's --port-file.
set -u
T=test_cli_output
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
CLI=$OOB_BUILDDIR/oobprof
G=$OOB_BUILDDIR/tests/gen
W=$OOB_BUILDDIR/tests/out/cli_output
rm -rf "$W"
mkdir -p "$W"
pass() { echo "PASS: $T: $1"; }
fail() { echo "FAIL: $T: $1: $2"; }
skip() { echo "SKIP: $T: $1: $2"; }

PROG=$G/progs/mixed
TRACE=$G/progs/mixed.oobt # QEMU: no cycle counts
if [ ! -x "$CLI" ] || [ ! -s "$TRACE" ]; then
	skip all "oobprof or the generated fixtures are missing"
	exit 0
fi

# is_fifo_kept CASE PATH: PATH must still be a FIFO.
is_fifo_kept() {
	if [ -p "$2" ]; then
		pass "$1: the FIFO is still there and still a FIFO"
	else
		fail "$1" "the FIFO is gone or replaced ($(ls -l "$2" 2>&1))"
	fi
}

# --- a refused export to a FIFO (the /dev/null case, without /dev/null) ---
mkfifo "$W/fifo"
timeout 20 "$CLI" export --to speedscope --clock-hz 1000 --elf "$PROG" -o "$W/fifo" "$TRACE" \
	>"$W/fifo.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "no cycle counts" "$W/fifo.out"; then
	pass "export --clock-hz without cycles to a FIFO: refused before opening it (exit 1)"
else
	fail "export --clock-hz without cycles to a FIFO" "exit $rc: $(head -c 300 "$W/fifo.out")"
fi
is_fifo_kept "refused export" "$W/fifo"

# --- a user's regular file, failing commands: same bytes afterwards ---
printf 'precious data\n' >"$W/keep.orig"
check_kept() { # CASE CMD...
	_c=$1
	shift
	cp "$W/keep.orig" "$W/keep"
	if timeout 60 "$@" >"$W/kept.out" 2>&1; then
		fail "$_c" "succeeded: $(head -c 200 "$W/kept.out")"
	elif cmp -s "$W/keep" "$W/keep.orig" && [ -f "$W/keep" ]; then
		pass "$_c: failed and left the existing file untouched"
	else
		fail "$_c" "the existing file changed: $(ls -l "$W/keep" 2>&1)"
	fi
}
check_kept "export refused" "$CLI" export --to speedscope --clock-hz 1000 --elf "$PROG" -o "$W/keep" "$TRACE"
check_kept "export of a missing trace" "$CLI" export --to pprof -o "$W/keep" "$W/nonexistent"
check_kept "fold of a missing trace" "$CLI" fold -o "$W/keep" "$W/nonexistent"
check_kept "top of a missing trace" "$CLI" top -o "$W/keep" "$W/nonexistent"
check_kept "timeline of a missing trace" "$CLI" timeline -o "$W/keep" "$W/nonexistent"
head -c 5000 "$TRACE" >"$W/cut.oobt"
check_kept "convert of a cut trace" "$CLI" convert --to tracerv-bin -o "$W/keep" "$W/cut.oobt"
check_kept "gotrace of a missing trace" "$CLI" gotrace -o "$W/keep" "$W/nonexistent"
left=$(find "$W" -name 'keep.tmp*' | wc -l)
if [ "$left" -eq 0 ]; then
	pass "failed commands left no temporary file"
else
	fail "failed commands left temporary files" "$(find "$W" -name 'keep.tmp*')"
fi

# --- success: -o is the command's stdout, a regular file replaced whole ---
same_as_stdout() { # CASE CMD... (with -o OUT appended, compared to CMD's stdout)
	_c=$1
	shift
	printf 'old contents\n' >"$W/out"
	chmod 600 "$W/out"
	_ino=$(stat -c %i "$W/out")
	if ! "$@" >"$W/stdout" 2>"$W/stdout.err"; then
		fail "$_c" "stdout run failed: $(head -c 200 "$W/stdout.err")"
		return
	fi
	if ! "$@" -o "$W/out" >"$W/o.out" 2>&1; then
		fail "$_c -o" "$(head -c 300 "$W/o.out")"
	elif ! cmp -s "$W/stdout" "$W/out" || [ -s "$W/o.out" ]; then
		fail "$_c -o" "the file differs from stdout, or stdout was written to"
	elif [ "$(stat -c %i "$W/out")" = "$_ino" ]; then
		fail "$_c -o" "the file was rewritten in place, not replaced"
	elif [ "$(stat -c %a "$W/out")" != 600 ]; then
		fail "$_c -o" "the replaced file lost its mode ($(stat -c %a "$W/out"))"
	elif [ -n "$(find "$W" -name 'out.tmp*')" ]; then
		fail "$_c -o" "a temporary file was left"
	else
		pass "$_c -o: the file is stdout's output, renamed into place, mode kept"
	fi
}
same_as_stdout "fold" "$CLI" fold --elf "$PROG" "$TRACE"
same_as_stdout "top" "$CLI" top --elf "$PROG" "$TRACE" # --json, stats: timings differ
same_as_stdout "processes" "$CLI" processes --elf "$PROG" "$TRACE"
same_as_stdout "timeline" "$CLI" timeline --elf "$PROG" "$TRACE"
same_as_stdout "export" "$CLI" export --to folded --elf "$PROG" "$TRACE" -o -
GO=$G/go/demo-sleep.trace
if [ -s "$GO" ]; then
	same_as_stdout "gotrace" "$CLI" gotrace --json "$GO"
else
	skip "gotrace -o" "no Go trace fixture"
fi
printf 'old\n' >"$W/conv"
_ino=$(stat -c %i "$W/conv")
if "$CLI" convert --to oobt -o "$W/conv" "$TRACE" >"$W/conv.out" 2>&1 &&
	[ "$(stat -c %i "$W/conv")" != "$_ino" ] &&
	"$CLI" stats "$W/conv" >/dev/null 2>&1; then
	pass "convert -o over a file: a new, readable file renamed into place"
else
	fail "convert -o over a file" "$(head -c 300 "$W/conv.out")"
fi

# --- a symbolic link to a file: the target is replaced, the link stays ---
printf 'old\n' >"$W/target"
ln -s target "$W/link"
if "$CLI" stats --elf "$PROG" -o "$W/link" "$TRACE" >"$W/link.out" 2>&1 && [ -L "$W/link" ] &&
	grep -q '^nodes: ' "$W/target"; then
	pass "stats -o a symbolic link: its target replaced, the link kept"
else
	fail "stats -o a symbolic link" "$(ls -l "$W/link" "$W/target" 2>&1)"
fi

# --- a FIFO with a reader: written straight through, still a FIFO ---
cat "$W/fifo" >"$W/fifo.read" &
reader=$!
if timeout 60 "$CLI" export --to folded --elf "$PROG" -o "$W/fifo" "$TRACE" >"$W/fifo2.out" 2>&1; then
	wait $reader
	if "$CLI" fold --elf "$PROG" "$TRACE" | cmp -s - "$W/fifo.read"; then
		pass "export -o a FIFO with a reader: the reader got the whole export"
	else
		fail "export -o a FIFO with a reader" "the reader got $(wc -c <"$W/fifo.read") bytes"
	fi
else
	kill $reader 2>/dev/null
	fail "export -o a FIFO with a reader" "$(head -c 300 "$W/fifo2.out")"
fi
is_fifo_kept "export to a FIFO" "$W/fifo"

# --- oobprofd --port-file: a FIFO is written to, not renamed over ---
OOBPROFD=$OOB_BUILDDIR/oobprofd
if [ -x "$OOBPROFD" ]; then
	mkfifo "$W/port"
	printf 'user file\n' >"$W/port.tmp"
	cat "$W/port" >"$W/port.read" &
	reader=$!
	"$OOBPROFD" --listen 127.0.0.1:0 --port-file "$W/port" --data "$W/data" \
		>"$W/srv.log" 2>&1 &
	srv=$!
	i=0
	while [ ! -s "$W/port.read" ] && [ $i -lt 100 ] && kill -0 $srv 2>/dev/null; do
		i=$((i + 1))
		sleep 0.1
	done
	kill -TERM $srv 2>/dev/null
	wait $srv
	kill $reader 2>/dev/null
	wait $reader 2>/dev/null
	if grep -qE '^[0-9]+$' "$W/port.read" && [ -p "$W/port" ] &&
		[ "$(cat "$W/port.tmp")" = "user file" ]; then
		pass "oobprofd --port-file a FIFO: the port written to it, FIFO and port.tmp kept"
	else
		fail "oobprofd --port-file a FIFO" "read '$(cat "$W/port.read")'; $(ls -l "$W/port" "$W/port.tmp" 2>&1)"
	fi
else
	skip "oobprofd --port-file" "oobprofd not built"
fi
