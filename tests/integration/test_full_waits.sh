#!/bin/sh
# Off-CPU waits, wakers and the critical path (oobprof offcpu, oobprof path;
# RECONSTRUCTION.md 15) on the booted Linux of tests/tools/gen-linux.sh, whose
# /waits workload (tests/fixtures/linux/waits.c) makes waits known by
# construction: a consumer that blocks in pipe_read once per round until its
# producer (nice 19, so never preempting it) has run work() and written, then
# sleeps three times in nanosleep.
#
# Ground truth, none of it from oobprof:
#  - what the guest printed (console.log): the consumer's, producer's and
#    sleeper's pids, how many of the consumer's reads found the pipe empty
#    (FIONREAD before each read), and the hart's instret (rdinstret) right
#    before and right after each read: instret is the plugin's record index
#    on one hart, so each blocked interval must lie inside its read's
#    bracket, and the bracket minus the wait is the read's own kernel path;
#  - the plugin's pc histogram (boot.hist) with binutils' symbols: every
#    instruction work() ran, which the consumer's critical path must hold,
#    since the consumer waited for each datum the producer computed.
# The pc-only trace has no pids for tasks forked together (RECONSTRUCTION.md
# 7.1): the producer is then known by its stack (produce).
#
# Prints PASS/FAIL/SKIP: test_full_waits: <variant>: <case>[ (figures)].
set -u
T=test_full_waits
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
G=$OOB_BUILDDIR/tests/gen/linux
CLI=$OOB_BUILDDIR/oobprof
[ -x "$CLI" ] || {
	echo "SKIP: $T: all: $CLI not built"
	exit 0
}
[ -e "$G/waits" ] || {
	echo "SKIP: $T: all: no $G/waits (gen-linux did not run: see tests/out/gen-fixtures.log)"
	exit 0
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$CLI" "$G" "$tmp" <<'PY'
import json, os, re, subprocess, sys
cli, G, tmp = sys.argv[1:4]
T = "test_full_waits"
CROSS = os.environ.get("CROSS", "riscv64-linux-gnu-")

def line(status, variant, case, detail=""):
    print("%s: %s: %s: %s%s" % (status, T, variant, case, " (%s)" % detail if detail else ""))

def check(variant, case, ok, detail=""):
    line("PASS" if ok else "FAIL", variant, case, detail)
    return ok

def symbol(elf, name):
    out = subprocess.run([CROSS + "nm", "-S", elf], capture_output=True, text=True).stdout
    for l in out.splitlines():
        p = l.split()
        if len(p) == 4 and p[3] == name:
            return int(p[0], 16), int(p[1], 16)
    return None

def run(args):
    r = subprocess.run([cli] + args, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr

def variant(v):
    d = os.path.join(G, v)
    need = [os.path.join(d, f) for f in ("boot.oobt", "vmlinux", "console.log", "boot.hist")]
    if not all(os.path.exists(f) for f in need):
        line("SKIP", v, "all", "no boot")
        return
    con = open(os.path.join(d, "console.log"), errors="replace").read()
    m = re.search(r"waits: pid (\d+) producer (\d+) rounds (\d+) blocked (\d+)", con)
    s = re.search(r"waits: sleeper pid (\d+) naps (\d+)", con)
    if not m or not s:
        line("SKIP", v, "all", "the boot has no /waits output")
        return
    cpid, ppid, rounds, blocked = map(int, m.groups())
    spid, naps = map(int, s.groups())
    brackets = [tuple(map(int, b)) for b in re.findall(r"waits: read \d+ instret (\d+) (\d+)", con)]
    # every program the boot runs: a sibling whose ELF is not given runs code
    # of no ELF, which a pc-only trace cannot tell from any other task's
    # (7.1's fits), and the producer's stacks went to init's fork that ran
    # sort (sv57: 3 of its 4 wake-ups)
    elfs = ["--elf", os.path.join(d, "vmlinux")]
    for u in ("init", "calls", "sort", "syscalls", "signals", "waits"):
        elfs += ["--elf", os.path.join(G, u)]
    trace = os.path.join(d, "boot.oobt")
    rc, out, err = run(["offcpu", "--json"] + elfs + [trace])
    if not check(v, "offcpu runs", rc == 0, err.strip()[-300:] if rc else ""):
        return
    doc = json.loads(out)
    waits = doc["waits"]
    c = doc["counts"]
    check(v, "counts add up", c["waits"] == len(waits) and
          c["woken_exact"] + c["woken_ambiguous"] + c["no_waker"] + c["unended"] == c["waits"],
          json.dumps(c))
    if v == "smp2":
        # Two harts without -icount: instret is per hart (not the record
        # index), wakes go through the other hart's wake list, and the
        # tracker's task identities are weaker (test_full_qemu): the figures
        # above are what there is to report.
        line("SKIP", v, "waits against the guest", "two harts: instret brackets are per hart")
        return

    def has(stack, f):
        return any(x == f or x.startswith(f + " (") for x in stack)
    # the consumer: the task whose blocks are in consume()'s reads
    cons = [w for w in waits if has(w["stack"], "consume") and has(w["stack"], "pipe_read")]
    tasks = {w["task"] for w in cons}
    check(v, "the consumer blocks in pipe_read as often as its reads found the pipe empty",
          len(tasks) == 1 and len(cons) == blocked == rounds,
          "%d waits in %s, guest: %d of %d reads blocked" % (len(cons), sorted(tasks), blocked, rounds))
    pids = {w["pid"] for w in cons}
    check(v, "the consumer's pid is the guest's or unknown", pids <= {cpid, None},
          "%s, guest %d" % (pids, cpid))
    inside = [b[0] < w["from"] < w["to"] < b[1] for w, b in zip(cons, brackets)]
    slack = [(b[1] - b[0]) - w["length"] for w, b in zip(cons, brackets)]
    check(v, "each wait lies inside its read()'s instret bracket, in order",
          len(brackets) == len(cons) and all(inside) and
          all(cons[i]["to"] < cons[i + 1]["from"] for i in range(len(cons) - 1)),
          "waits %s, brackets %s" % ([(w["from"], w["to"]) for w in cons], brackets))
    check(v, "each wait is its read minus the read's own kernel path (< 20000)",
          slack and all(0 < x < 20000 for x in slack),
          "lengths %s, slack %s" % ([w["length"] for w in cons], slack))
    wk = [w["waker"] for w in cons]
    ok = all(k and has(k["stack"], "pipe_write") and has(k["stack"], "produce") and
             k["pid"] in (ppid, None) and not k["interrupt"] for k in wk)
    ptask = {k["task"] for k in wk if k}
    check(v, "each wait's waker is the producer, in pipe_write", ok and not ptask & tasks,
          "wakers %s, guest producer pid %d" % ([(k["pid"], k["task"], k["stack"][-4:]) if k else None
                                                 for k in wk], ppid))
    # Which task a stack belongs to is the pc-only task tracker's call
    # (RECONSTRUCTION.md 7.1); when it hands the producer's stack to another
    # task, the figures say so instead of failing the waits.
    check(v, "the producer's stacks stay one task", len(ptask) == 1,
          "the task tracker gave them to %s" % sorted(ptask))
    check(v, "the consumer's wakers are exact", all(w["exact"] for w in cons),
          str([w["exact"] for w in cons]))
    # the sleeper (the consumer, after the ping-pong): woken by the timer,
    # from an interrupt
    sl = [w for w in waits if has(w["stack"], "nap") and has(w["stack"], "do_nanosleep")]
    check(v, "the sleeper is the consumer", spid == cpid and {w["task"] for w in sl} <= tasks,
          "guest pids %d and %d, tasks %s" % (spid, cpid, sorted({w["task"] for w in sl})))
    check(v, "the sleeper blocks in nanosleep once per nap", len(sl) == naps,
          "%d waits, %d naps" % (len(sl), naps))
    check(v, "the sleeper's waker is the timer interrupt (hrtimer_wakeup)",
          sl and all(w["waker"] and w["waker"]["interrupt"] and
                     has(w["waker"]["stack"], "hrtimer_wakeup") for w in sl),
          str([(w["waker"]["task"], w["waker"]["stack"][-3:]) if w["waker"] else None for w in sl]))
    # the off-CPU flame graph: the consumer's stacks weigh its waits
    rc, out, err = run(["offcpu", "--pid", cons[0]["task"] if cons[0]["pid"] is None
                        else str(cpid)] + elfs + [trace])
    folded = {}
    for l in out.splitlines():
        st, wgt = l.rsplit(" ", 1)
        folded[st] = folded.get(st, 0) + int(wgt)
    in_read = sum(wgt for st, wgt in folded.items() if "pipe_read" in st.split(";"))
    check(v, "offcpu folded: the consumer's pipe_read stacks weigh its waits",
          rc == 0 and in_read == sum(w["length"] for w in cons),
          "%d in pipe_read stacks, %d in the waits" % (in_read, sum(w["length"] for w in cons)))
    # the critical path of the consumer over its reads
    if len(brackets) != rounds:
        line("SKIP", v, "critical path", "the guest printed no instret brackets")
        return
    win = "%d:%d" % (brackets[0][0], brackets[-1][1])
    task = cons[0]["task"] if cons[0]["pid"] is None else str(cpid)
    rc, out, err = run(["path", "--task", task, "--window", win] + elfs + [trace])
    if not check(v, "path runs", rc == 0, err.strip()[-300:] if rc else ""):
        return
    path = json.loads(out)
    steps = path["steps"]
    prod = [st for st in steps if st["kind"] == "running" and
            any(has(x["stack"], "produce") for x in st["stacks"])]
    wakes = [st for st in prod if "wakes" in st and has(st["wakes"]["stack"], "pipe_write")]
    check(v, "the consumer's critical path goes through the producer's running intervals",
          prod and wakes and steps[0]["task"] == cons[0]["task"],
          "%d steps, %d producer runs, %d ending in its pipe_write wake-up" % (len(steps), len(prod), len(wakes)))
    ordered = all(steps[i]["from"] >= steps[i + 1]["to"] - 0 or steps[i]["from"] >= steps[i + 1]["from"]
                  for i in range(len(steps) - 1))
    check(v, "the path's steps go back in time inside the window",
          ordered and steps[-1]["from"] >= brackets[0][0] and steps[0]["to"] <= brackets[-1][1],
          "%d..%d" % (steps[-1]["from"], steps[0]["to"]))
    a, n = symbol(os.path.join(G, "waits"), "work")
    truth = 0
    for l in open(os.path.join(d, "boot.hist")):
        pc, cnt = l.split()
        if a <= int(pc, 16) < a + n:
            truth += int(cnt)
    got = sum(x["weight"] for st in prod for x in st["stacks"] if x["stack"][-1] == "work")
    check(v, "the path's producer runs hold every instruction of work()", got == truth,
          "%d on the path, %d in the histogram" % (got, truth))

for v in ("sv57", "sv39", "smp2"):
    variant(v)
PY
