#!/bin/sh
# Full-stack reconstruction of the real Spike run (../shared/fixtures/spike):
# processes told apart out of band, from the kernel's own functions and the
# register writebacks in the log. Ground truth, none of it from oobprof:
#  - what the guest printed (console.log): pid 1, its workers' pids;
#  - init.c: pid 1 forks three workers and one child that execs /prog;
#  - the log itself, read by a small independent script: user instructions per
#    address space (the satp value in force), which ELF's code each address
#    space ran (its instruction bits compared with init's and prog's bytes),
#    and a pc histogram per address space mapped to functions with readelf.
set -u
T=test_full_spike
G=$OOB_BUILDDIR/tests/gen
CLI=$OOB_BUILDDIR/oobprof
S=$OOB_SHARED/fixtures/spike
LOG=$G/readers/spike.log
for f in "$CLI" "$LOG" "$G/vmlinux" "$S/init" "$S/prog" "$S/console.log"; do
	[ -e "$f" ] || { echo "SKIP: $T: all: missing $f"; exit 0; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ELFS="--elf $G/vmlinux --elf $S/init --elf $S/prog"

"$CLI" processes --json $ELFS "$LOG" >"$tmp/procs.json" || { echo "FAIL: $T: processes: oobprof failed"; exit 1; }
"$CLI" fold --annotate $ELFS "$LOG" >"$tmp/fold" || { echo "FAIL: $T: fold: oobprof failed"; exit 1; }
"$CLI" stats $ELFS "$LOG" >"$tmp/stats" || { echo "FAIL: $T: stats: oobprof failed"; exit 1; }
# Tasks as address spaces instead: the satp writes in the log, nothing from
# the kernel's functions.
"$CLI" processes --json --tasks satp $ELFS "$LOG" >"$tmp/satp.json" &&
	"$CLI" fold --annotate --tasks satp $ELFS "$LOG" >"$tmp/satp.fold" ||
	{ echo "FAIL: $T: satp: oobprof failed"; exit 1; }
# The same run as FireSim's TracerV would give it: pc only (no bits, no
# registers, no privilege): user binaries can only be told apart by matching.
"$CLI" convert --to tracerv-bin "$LOG" -o "$tmp/pc.trv" &&
	"$CLI" processes --json $ELFS "$tmp/pc.trv" >"$tmp/matched.json" &&
	"$CLI" top --json $ELFS "$tmp/pc.trv" >"$tmp/matched-top.json" ||
	{ echo "FAIL: $T: matched: oobprof failed"; exit 1; }
# Address spaces need satp writes: a pc-only trace is refused, with the reason.
if "$CLI" processes --json --tasks satp $ELFS "$tmp/pc.trv" >/dev/null 2>"$tmp/satp.err"; then
	echo "FAIL: $T: tasks by satp refused without registers: accepted"
else
	grep -q "no CSR writes" "$tmp/satp.err" &&
		echo "PASS: $T: tasks by satp refused without registers ($(head -c 120 "$tmp/satp.err"))" ||
		echo "FAIL: $T: tasks by satp refused without registers: $(cat "$tmp/satp.err")"
fi

python3 - "$tmp" "$LOG" "$S" <<'PY'
import collections, json, re, subprocess, sys
tmp, log, S = sys.argv[1:4]
T = "test_full_spike"
def check(name, ok, detail=""):
    print(("PASS" if ok else "FAIL") + ": %s: %s%s" % (T, name, (" (" + detail + ")") if detail else ""))

procs = json.load(open(tmp + "/procs.json"))["processes"]
bypid = {p["pid"]: p for p in procs}

# --- the guest's own words
console = open(S + "/console.log", errors="replace").read()
workers = sorted(int(m) for m in re.findall(r"worker \d+ pid (\d+)", console))
init_pid = int(re.search(r"hello from pid (\d+)", console).group(1))
check("pid 1 is init", init_pid in bypid and bypid[init_pid]["comm"] == "init",
      "console says pid %d" % init_pid)
kids = sorted(bypid.get(init_pid, {}).get("children", []))
check("workers are init's children", all(w in kids for w in workers) and len(workers) == 3,
      "console %s, children %s" % (workers, kids))
execd = [p for p in procs if p["exec"]]
check("one child exec'd /prog", len(execd) == 1 and execd[0]["exec"][0]["path"] == "/prog"
      and execd[0]["comm"] == "prog" and execd[0]["ppid"] == init_pid
      and execd[0]["pid"] not in workers and execd[0]["pid"] in kids,
      json.dumps([(p["pid"], p["exec"]) for p in execd]))
check("exactly four children", len(kids) == 4, str(kids))

# --- independent reading of the log: address spaces, their code, their pcs
def elf_bytes(path):
    out = tmp + "/text.bin"
    subprocess.run(["riscv64-linux-gnu-objcopy", "-O", "binary", "--only-section=.text",
                    path, out], check=True)
    addr = int(subprocess.run(["riscv64-linux-gnu-readelf", "-SW", path], capture_output=True,
               text=True).stdout.split(" .text")[1].split()[1], 16)
    return addr, open(out, "rb").read()
canon = {}  # every name of a function -> one name for all its aliases
def funcs(path):
    byaddr, labels = {}, []
    for l in subprocess.run(["riscv64-linux-gnu-readelf", "-sW", path], capture_output=True,
                            text=True).stdout.splitlines():
        w = l.split()
        if len(w) < 8 or w[6] == "UND":
            continue
        if w[3] in ("FUNC", "IFUNC"):
            e = byaddr.setdefault(int(w[1], 16), [0, []])
            e[0] = max(e[0], int(w[2], 0))
            e[1].append(w[7])
        elif w[3] == "NOTYPE" and w[2] == "0" and not w[7].startswith(("$", ".L")):
            labels.append((int(w[1], 16), w[7]))
    f = []
    for a, (size, names) in byaddr.items():
        c = min(names)
        for n in names:
            canon[n] = c
        f.append([a, size, c])
    # zero-size code labels (crt1's load_gp) name what no function covers
    for a, n in labels:
        canon.setdefault(n, n)
    f.sort()
    # a function of size 0 (crtstuff's) runs to the next symbol, as binutils reads it
    starts = sorted(set([x[0] for x in f] + [a for a, _ in labels]))
    for x in f:
        if x[1] == 0:
            nxt = [a for a in starts if a > x[0]]
            x[1] = (nxt[0] - x[0]) if nxt else 1
    return f, sorted(labels)
elfs = {n: (elf_bytes(S + "/" + n), funcs(S + "/" + n)) for n in ("init", "prog")}

satp, spaces = None, collections.OrderedDict()
line_re = re.compile(r"core\s+\d+: (\d) 0x([0-9a-f]+) \(0x([0-9a-f]+)\)")
for line in open(log):
    m = line_re.match(line)
    if m and m.group(1) == "0":
        sp = spaces.setdefault(satp, {"n": 0, "pcs": collections.Counter(), "bits": {}})
        pc = int(m.group(2), 16)
        sp["n"] += 1
        sp["pcs"][pc] += 1
        sp["bits"][pc] = int(m.group(3), 16)
    s = re.search(r"c384_satp (0x[0-9a-f]+)", line)
    if s:
        satp = s.group(1)

def which_elf(sp):
    # The ELF whose .text holds exactly the bits executed at every pc inside it.
    for name, ((addr, text), _) in elfs.items():
        inside = [(pc, b) for pc, b in sp["bits"].items() if 0 <= pc - addr < len(text) - 4]
        if inside and all(int.from_bytes(text[pc - addr:pc - addr + (2 if (b & 3) != 3 else 4)],
                                         "little") == b for pc, b in inside):
            return name
    return None
for sp in spaces.values():
    sp["elf"] = which_elf(sp)
check("every address space ran init or prog", all(sp["elf"] for sp in spaces.values()),
      str([(k, sp["elf"]) for k, sp in spaces.items()]))

# user instructions: each process's address spaces (one, two for the one that
# exec'd) are the log's, and their instructions add up to the process's
ours = {p["pid"]: p["instructions"]["user"] for p in procs if p["instructions"]["user"]}
space_pid = {int(a, 16): p["pid"] for p in procs for a in p["address_spaces"]}
log_spaces = {int(k, 16): sp for k, sp in spaces.items() if k}
per_pid = collections.Counter()
for a, sp in log_spaces.items():
    per_pid[space_pid.get(a)] += sp["n"]
check("user instructions per process = per address space",
      set(space_pid) == set(log_spaces) and dict(per_pid) == ours
      and len(bypid[execd[0]["pid"]]["address_spaces"]) == 2,
      "ours %s, log %s" % (sorted(ours.items()), sorted(per_pid.items(), key=str)))

# tasks by satp: one per address space, named by the ELF it ran, with exactly
# the log's user instructions
sj = json.load(open(tmp + "/satp.json"))
by_space = {int(p["address_spaces"][0], 16): p for p in sj["processes"] if p["address_spaces"]}
bad = [(hex(a), sp["n"], sp["elf"], by_space.get(a, {}).get("instructions"), by_space.get(a, {}).get("comm"))
       for a, sp in log_spaces.items()
       if by_space.get(a, {}).get("instructions", {}).get("user") != sp["n"]
       or by_space[a]["comm"] != sp["elf"]]
check("tasks by satp: user instructions and binary per address space",
      sj["source"] == "satp" and not bad and len(by_space) == len(log_spaces)
      and all(len(p["address_spaces"]) <= 1 for p in sj["processes"]),
      "%d spaces; %s" % (len(log_spaces), bad[:3]))

# pc only: user instructions per binary, by matching, against the bits-based truth
m = json.load(open(tmp + "/matched.json"))
per_bin = collections.Counter()
for sp in spaces.values():
    per_bin[sp["elf"]] += sp["n"]
got_bin = collections.Counter()  # by the binary each function was read in
for f in json.load(open(tmp + "/matched-top.json"))["functions"]:
    if f["binary"] and f["kind"] != "kernel":
        got_bin[f["binary"].rsplit("/", 1)[-1]] += f["self_instructions"]
total = sum(per_bin.values())
wrong = sum(abs(per_bin[b] - got_bin.get(b, 0)) for b in per_bin) // 2
check("pc-only binary identification", m["source"] == "matched" and wrong * 1000 <= total,
      "truth %s, matched %s: %d of %d user instructions misattributed (%.4f%% right)" %
      (dict(per_bin), {k: v for k, v in got_bin.items() if v}, wrong, total,
       100.0 * (total - wrong) / total))

# pc only, with tasks followed through __switch_to (core/tasks/park.h): each
# process's user instructions, named by the program it ran last, as the log's
# address spaces give them (the process that exec'd ran two). The trace starts
# after boot, so pids and parents cannot be counted: only the split is checked.
truth_pc = collections.defaultdict(lambda: ["", 0])
for a, sp in log_spaces.items():
    t = truth_pc[space_pid.get(a)]
    t[0], t[1] = sp["elf"], t[1] + sp["n"]
got_pc = sorted((p["comm"], p["instructions"]["user"]) for p in m["processes"]
                if p["instructions"]["user"])
check("pc only: user instructions per process = per address space in the log",
      got_pc == sorted(tuple(v) for v in truth_pc.values()) and m["switches"] > 0,
      "log %s, ours %s; %d switches" % (sorted(tuple(v) for v in truth_pc.values()), got_pc,
                                        m["switches"]))

# user self instructions per (process, function): histogram vs folded leaves
def fname(tables, pc):
    fs, labels = tables
    lo, hi = 0, len(fs)
    while lo < hi:
        mid = (lo + hi) // 2
        if fs[mid][0] <= pc:
            lo = mid + 1
        else:
            hi = mid
    if lo and fs[lo - 1][0] <= pc < fs[lo - 1][0] + max(fs[lo - 1][1], 1):
        return fs[lo - 1][2]
    # a label covers up to the next function or label
    nxt_f = min([a for a, _, _ in fs if a > pc], default=1 << 64)
    before = [(a, n) for a, n in labels if a <= pc]
    if before and (not lo or fs[lo - 1][0] < before[-1][0]) and pc < nxt_f:
        return before[-1][1]
    return "?"
def self_truth(key):
    truth = collections.Counter()
    for a, sp in log_spaces.items():
        for pc, c in sp["pcs"].items():
            truth[(key(a), fname(elfs[sp["elf"]][1], pc))] += c
    return truth
def self_got(path, root_key):
    got = collections.Counter()
    for l in open(path):
        stack, w = l.rsplit(" ", 1)
        fr = stack.split(";")
        leaf = fr[-1]
        if leaf.endswith("_[k]") or leaf.startswith("["):
            continue
        name = re.sub(r" \(.*\)$", "", leaf)
        got[(root_key(fr[0]), canon.get(name, name))] += int(w)
    return got
truth = self_truth(lambda a: space_pid.get(a))
got = self_got(tmp + "/fold", lambda r: int(r.split()[-1]) if r.split()[-1].isdigit() else None)
bad = [(k, v, got.get(k)) for k, v in truth.items() if got.get(k) != v]
extra = [(k, v) for k, v in got.items() if k not in truth]
check("user self instructions per process and function", not bad and not extra,
      "%d pairs; %s %s" % (len(truth), bad[:4], extra[:4]))
truth = self_truth(lambda a: a)
got = self_got(tmp + "/satp.fold", lambda r: int(r.rsplit(" ", 1)[-1].rstrip("]"), 16)
               if "[satp " in r else None)
bad = [(k, v, got.get(k)) for k, v in truth.items() if got.get(k) != v]
extra = [(k, v) for k, v in got.items() if k not in truth]
check("tasks by satp: user self instructions per address space and function",
      not bad and not extra, "%d pairs; %s %s" % (len(truth), bad[:4], extra[:4]))

# kernel frames only above a trap marker, user frames only below one
mixed = 0
for l in open(tmp + "/fold"):
    fr = l.rsplit(" ", 1)[0].split(";")[1:]
    seen_trap = False
    for f in fr:
        if f.startswith("[trap") or f.startswith("[irq"):
            seen_trap = True
        elif f.endswith("_[k]") != seen_trap and not f.startswith("["):
            # kernel threads have no user part: a kernel frame first is fine
            if not (f.endswith("_[k]") and fr[0].endswith("_[k]")):
                mixed += 1
                break
check("kernel and user frames never mix", mixed == 0, "%d stacks mix them" % mixed)

st = dict(l.split(": ", 1) for l in open(tmp + "/stats").read().splitlines())
rep = int(st["repairs_unknown"]) + int(st["repairs_unwind"])
check("repairs near zero", rep <= 10, "unwind %s unknown %s" % (st["repairs_unwind"].strip(), st["repairs_unknown"].strip()))
PY

# Exact call counts of kernel functions that Linux enters in several ways
# (do_page_fault by the exception dispatch's `jr t0`, ret_from_exception by a
# handler's return and by falling through): the entries the log shows, i.e.
# records at the function's entry address coming from outside the function
# (none of these recurses), with addresses and sizes from readelf.
"$CLI" top --json $ELFS "$LOG" >"$tmp/top.json" || { echo "FAIL: $T: top: oobprof failed"; exit 1; }
python3 - "$tmp/top.json" "$LOG" "$G/vmlinux" <<'PY'
import json, subprocess, sys
T = "test_full_spike"
top, log, vmlinux = sys.argv[1:4]
FUNCS = ["do_page_fault", "ret_from_exception", "handle_mm_fault", "kernel_clone",
         "copy_process", "do_execveat_common", "schedule_tail"]
syms = {}
for l in subprocess.run(["riscv64-linux-gnu-readelf", "-sW", vmlinux], capture_output=True,
                        text=True).stdout.splitlines():
    w = l.split()
    if len(w) >= 8 and w[7] in FUNCS and w[6] != "UND":
        syms[w[7]] = (int(w[1], 16), int(w[2], 0))
entries = {f: 0 for f in FUNCS}
prev = None
for line in open(log):
    pc = int(line.split()[3], 16)
    for f, (a, size) in syms.items():
        if pc == a and not (prev is not None and a <= prev < a + max(size, 1)):
            entries[f] += 1
    prev = pc
got = {f["name"]: f["calls"] for f in json.load(open(top))["functions"] if f["name"] in FUNCS}
bad = ["%s %s != %d" % (f, got.get(f), n) for f, n in entries.items() if got.get(f) != n]
ok = not bad and len(syms) == len(FUNCS) and all(entries.values())
print(("PASS" if ok else "FAIL") + ": %s: kernel call counts equal the entries in the log (%s)"
      % (T, bad or ", ".join("%s %d" % kv for kv in entries.items())))
PY
