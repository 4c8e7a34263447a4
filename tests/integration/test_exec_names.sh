#!/bin/sh
# Tasks that start as kernel threads and become user processes by exec
# (issue 19): kernel_init, user_mode_thread()'s thread, execs /init and is
# pid 1; init's children exec the workloads. After the exec a task has the
# exec'd program's name in every view: the process list, the flame graph's
# process frames (fold), the timeline's processes and the Perfetto export's
# process slices; the kernel thread's function name ("kernel_init") names
# no process anywhere. In pc-only traces the exec'd path is in memory the
# trace does not show: the program is known by the binary that runs after
# the exec, so the user binaries must be given (without them pid 1 stays
# "kernel_init": there is nothing in the trace to name it by).
#
# Ground truth, not from oobprof: the guest's console (tests/gen/linux/sv39/
# console.log): "Run /init as init process", init's "pid 1", and each
# "child PID exec /PROG".
set -u
T=test_exec_names
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
CLI=$OOB_BUILDDIR/oobprof
G=$OOB_BUILDDIR/tests/gen/linux
d=$G/sv39
W=$OOB_BUILDDIR/tests/out/exec_names
rm -rf "$W" && mkdir -p "$W"
for f in "$d/boot.oobt" "$d/vmlinux" "$d/console.log" "$G/init" "$G/calls" "$G/sort" "$G/syscalls" "$G/signals" "$G/waits"; do
	[ -e "$f" ] || { echo "SKIP: $T: all: missing $f"; exit 0; }
done
set -- --elf "$d/vmlinux"
for b in init calls sort syscalls signals waits; do
	set -- "$@" --elf "$G/$b"
done
"$CLI" processes --json "$@" "$d/boot.oobt" >"$W/procs.json" 2>"$W/err" &&
	"$CLI" fold "$@" "$d/boot.oobt" >"$W/fold" 2>>"$W/err" &&
	"$CLI" timeline --tracks harts "$@" "$d/boot.oobt" >"$W/tl.json" 2>>"$W/err" &&
	"$CLI" export --to perfetto "$@" "$d/boot.oobt" -o "$W/pf.json" 2>>"$W/err" || {
	echo "FAIL: $T: all: oobprof failed: $(head -c 300 "$W/err")"
	exit 1
}
python3 - "$T" "$d/console.log" "$W" <<'PY'
import json, re, sys
T, console, W = sys.argv[1:]
fails = 0
def check(ok, case, figs):
    global fails
    print("%s: %s: %s (%s)" % ("PASS" if ok else "FAIL", T, case, figs))
    fails += not ok

con = open(console, errors="replace").read()
assert "Run /init as init process" in con and "init: pid 1 " in con, "console: no /init as pid 1"
kids = {m.group(2): int(m.group(1)) for m in re.finditer(r"init: child (\d+) exec /(\w+)", con)}
ps = json.load(open(W + "/procs.json"))["processes"]
p1 = [p for p in ps if p["pid"] == 1]
check(p1 and p1[0]["comm"] == "init" and [e["path"].split("/")[-1] for e in p1[0]["exec"]] == ["init"],
      "processes: pid 1 is init, exec'd from kernel_init",
      p1 and "%s, exec %s" % (p1[0]["comm"], [e["path"] for e in p1[0]["exec"]]))
named = {p["comm"]: p for p in ps if p["exec"]}
miss = sorted(k for k in kids if k not in named)
check(not miss, "processes: each exec'd child has its program's name",
      "missing %s of %s" % (miss, sorted(kids)) if miss else ", ".join(
          "%s %s" % (k, named[k]["pid"]) for k in sorted(kids)))
kinit = [p for p in ps if p["comm"] == "kernel_init"]
check(not kinit, "processes: no process is still named kernel_init", "%d are" % len(kinit))

roots = set(l.split(";", 1)[0] for l in open(W + "/fold"))
check("init 1" in roots and not any(r.startswith("kernel_init ") for r in roots),
      "flame graph: pid 1's process frame is 'init 1'",
      "roots with init: %s" % sorted(r for r in roots if "init" in r)[:6])
tl = json.load(open(W + "/tl.json"))
tp = {(p["pid"], p["comm"]) for p in tl["processes"]}
check((1, "init") in tp and not any(c == "kernel_init" for _, c in tp),
      "timeline: pid 1 is init", "processes with init: %s" % sorted(x for x in tp if "init" in x[1]))
ev = json.load(open(W + "/pf.json"))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
names = {e.get("name") for e in ev if e.get("ph") in ("X", "B")}
check("init 1" in names and not any(str(n).startswith("kernel_init ") for n in names),
      "perfetto: pid 1's process slice is 'init 1'",
      "slices named init N: %s" % sorted(n for n in names if re.match(r"^\w+ -?\d+$", str(n)) and "init" in n)[:6])
sys.exit(1 if fails else 0)
PY
