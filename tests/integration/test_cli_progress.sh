#!/bin/sh
# test_cli_progress.sh: the CLI's progress line (issue 19) is for a person
# at a terminal. With stderr on a terminal (a pty of util-linux `script`)
# and work that takes over a second, `oobprof fold` draws on stderr a line
# "[####    ]  NN%  ETA N s  N.N M instructions, N.N s" (bar and ETA while
# a regular file of known size is still being read; a file read ahead
# whole, as these are, shows the counts alone), redrawn in place
# (\r ESC[K) with growing figures, and erases it at the end; its
# instruction count never passes the trace's. Its stdout is byte for byte a
# plain run's. With stderr on a file there is no progress line at all.
# Input: the Sv39 boot (87 M records), else pyprog's trace (33 M), read
# through a pipe that pauses 1.5 s after its first MB: nothing is drawn
# before a second, and a fold of either file alone now ends in about one
# (it made the terminal case a SKIP on fast machines). Were a run still
# under 1.5 s, that case would be a SKIP that says so.
set -u
T=test_cli_progress
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
CLI=$OOB_BUILDDIR/oobprof
G=$OOB_BUILDDIR/tests/gen
W=$OOB_BUILDDIR/tests/out/cli_progress
rm -rf "$W"
mkdir -p "$W"
pass() { echo "PASS: $T: $1"; }
fail() { echo "FAIL: $T: $1: $2"; }
skip() { echo "SKIP: $T: $1: $2"; }

if [ -s "$G/linux/sv39/boot.oobt" ]; then
	trace=$G/linux/sv39/boot.oobt
	set -- --elf "$G/linux/sv39/vmlinux" /dev/stdin
elif [ -s "$G/python/pyprog.oobt" ]; then
	trace=$G/python/pyprog.oobt
	set -- --elf "$G/python/bin/python3.11" /dev/stdin
else
	skip all "no python or Linux trace generated (see tests/out/gen-fixtures.log)"
	exit 0
fi
if ! command -v script >/dev/null; then
	skip all "no util-linux script (a pty for stderr)"
	exit 0
fi
# the trace, with a pause after its first MB (a command for sh -c)
feed="{ head -c 1048576; sleep 1.5; cat; } <\"$trace\""
# a plain run: stdout and stderr to files
p0=$(date +%s.%N)
sh -c "$feed" | "$CLI" fold "$@" >"$W/plain.folded" 2>"$W/plain.err" || {
	fail "plain run" "exit $?: $(head -c 300 "$W/plain.err")"
	exit 0
}
p1=$(date +%s.%N)
# (warnings may be there: the boot's user programs are not given)
if grep -q "$(printf '\r')\| M instructions, " "$W/plain.err"; then
	fail "no progress line when stderr is a file" "stderr: $(od -c "$W/plain.err" | head -n 3)"
else
	pass "no progress line when stderr is a file ($(grep -c '' "$W/plain.err") other lines)"
fi
# the same with stderr on a pty; stdout still to a file
cmd="$feed | \"$CLI\" fold"
for a in "$@"; do
	cmd="$cmd \"$a\""
done
script -q -e -c "$cmd >\"$W/tty.folded\"" "$W/tty.log" >/dev/null 2>&1 </dev/null
rc=$?
if [ $rc != 0 ]; then
	fail "run with stderr on a terminal" "exit $rc: $(tail -c 300 "$W/tty.log")"
	exit 0
fi
if cmp -s "$W/plain.folded" "$W/tty.folded"; then
	pass "stdout with stderr on a terminal = a plain run's ($(wc -l <"$W/plain.folded" | tr -d ' ') lines)"
else
	fail "stdout with stderr on a terminal" "differs from a plain run's"
fi
insns=$(awk '{ n += $NF } END { printf "%.0f", n }' "$W/plain.folded")
python3 - "$T" "$W/tty.log" "$insns" "$p0" "$p1" <<'EOF'
import re, sys
T, log, insns, t0, t1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
raw = open(log, "rb").read().decode("latin-1")
line = re.compile(r"\r\x1b\[K(?:\[(#*) *\] +(\d+)%  (?:ETA (\d+) s  )?)?(\d+\.\d) M instructions, (\d+\.\d) s")
draws = [m for m in line.finditer(raw)]
def say(word, case, why=""):
    print("%s: %s: %s%s" % (word, T, case, ": " + why if why else ""))
if t1 - t0 < 1.5:
    # drawn at the first progress report after a second (reports come many
    # times a second): a shorter run may end before one
    say("SKIP", "progress line on a terminal", "a plain run took %.1f s: too short to be sure of a draw" % (t1 - t0))
    sys.exit(0)
if not draws:
    say("FAIL", "progress line on a terminal", "none in %d bytes of the terminal's output (a plain run: %.1f s): %r" % (len(raw), t1 - t0, raw[-200:]))
    sys.exit(0)
ms = [float(m.group(4)) for m in draws]
secs = [float(m.group(5)) for m in draws]
bars = [m for m in draws if m.group(1) is not None]
ok = all(a <= b for a, b in zip(ms, ms[1:])) and all(a <= b for a, b in zip(secs, secs[1:]))
ok = ok and secs[0] >= 1.0 and ms[-1] <= insns / 1e6 + 0.05
ok = ok and all(abs(len(m.group(1)) - int(m.group(2)) * 30 / 100) <= 1 for m in bars)
last = raw.rstrip("\r\n")
erased = last.endswith("\r\x1b[K") or raw[draws[-1].end():].count("\r\x1b[K") >= 1
say("PASS" if ok else "FAIL", "progress line on a terminal: redrawn in place, figures growing, never past the trace",
    "%d draws, %d with a bar; first at %.1f s, last %.1f M of %.1f M instructions" % (
        len(draws), len(bars), secs[0], ms[-1], insns / 1e6))
say("PASS" if erased else "FAIL", "the progress line is erased at the end",
    "" if erased else "last bytes %r" % raw[-80:])
EOF
