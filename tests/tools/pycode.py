#!/usr/bin/env python3.11
"""The code map of Python frames (docs/RECONSTRUCTION.md 17; oobprof --pycode).

  pycode.py [--name SHOWN=PATH ...] FILE.py ... > MAP

Run by the same CPython (3.11.x) as the guest's interpreter: it compiles each
file as the guest does and writes, for every code object (nested ones too),
its executed-opcode structure, the only part of the bytecode a pc-only trace
shows. Text, one record a line:

  pycode 1
  op Q D K            quickened opcode Q (a label of opcode_targets) stands
                      for base opcode D; K: 0 one instruction, 1 may also
                      run the next one without a dispatch (superinstructions,
                      COMPARE_OP_*_JUMP, PRECALL_* that call,
                      BINARY_OP_INPLACE_ADD_UNICODE: it does the STORE_FAST),
                      2 may dispatch the same instruction again (the
                      *_ADAPTIVE forms), 3 may also run the next two
                      (PRECALL_NO_KW_LIST_APPEND: its CALL and POP_TOP)
  code QUALNAME FILE LINE N   a code object and its N instructions
  i OFF OP SUCC,...   one instruction: offset in code units, base opcode,
                      where control goes after it (code-unit offsets; "-"
                      none: it returns or raises)
  x START END TARGET  an exception table entry (code units, END exclusive)
  c OFF CODE          the CALL (or PRECALL) at OFF calls code object CODE
                      (its index in the map, from 0), known statically: the
                      callable is a module-level function loaded by name and
                      bound once (LOAD_GLOBAL/LOAD_NAME), or a function made
                      right there from a constant code object (MAKE_FUNCTION)

FILE is the path as given, or SHOWN for --name SHOWN=PATH (frozen modules:
the guest's co_filename). The guest must run this code unchanged: the same
source, compiled by the same CPython version.
"""
import dis
import opcode
import sys

# Jumps that always go to their target (no fall-through).
ALWAYS = {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"}
# No successor in the frame: it returns or raises.
END = {"RETURN_VALUE", "RAISE_VARARGS", "RERAISE"}


def kinds():
    out = []
    for base, fam in opcode._specializations.items():
        d = opcode.opmap[base]
        out.append((d, d, 0))
        for name in fam:
            q = opcode._specialized_instructions.index(name)
            q = dis._all_opmap[name]
            k = 2 if name.endswith("_ADAPTIVE") else 0
            if "__" in name or name.endswith("_JUMP") or (
                    name.startswith("PRECALL_") and name not in ("PRECALL_ADAPTIVE",
                                                                   "PRECALL_PYFUNC",
                                                                   "PRECALL_BOUND_METHOD")):
                k = 1
            if name == "BINARY_OP_INPLACE_ADD_UNICODE":
                k = 1
            if name == "PRECALL_NO_KW_LIST_APPEND":
                k = 3
            out.append((q, d, k))
    seen = {q for q, _, _ in out}
    for name, d in opcode.opmap.items():
        if d not in seen:
            out.append((d, d, 0))
    return sorted(out)


def code_objects(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            yield from code_objects(c)


def step(st, x, eff):
    """The producers after x (net effect eff): what x consumes is replaced by
    x itself (so a slot keeps a LOAD_GLOBAL only while nothing touched it)."""
    if x.opname == "SWAP":
        st = list(st)
        st[-1], st[-x.arg] = st[-x.arg], st[-1]
        return tuple(st)
    if x.opname == "COPY":
        return st + (st[-x.arg],)
    pure = x.opname.startswith("LOAD_") and x.opname not in ("LOAD_METHOD", "LOAD_ATTR")
    pure = pure or x.opname in ("PUSH_NULL", "BUILD_LIST", "BUILD_TUPLE", "BUILD_MAP") and \
        eff > 0 and x.opname.startswith(("PUSH", "LOAD"))
    if eff > 0 and pure:
        return st + (x,) * eff
    st = st[:len(st) + eff] if eff < 0 else st
    if st and eff <= 0 or not pure:
        st = st[:-1] + (x,) if st else st
    return st + (x,) * max(eff, 0)


def producers(co):
    """{PRECALL offset: the instruction that pushed its callable}: an abstract
    stack of producers along the code's control flow (first state wins)."""
    ins = list(dis.get_instructions(co))
    at = {x.offset: k for k, x in enumerate(ins)}
    out, seen, work = {}, set(), [(0, ())]
    while work:
        k, st = work.pop()
        while k < len(ins) and k not in seen:
            seen.add(k)
            x = ins[k]
            if x.opname == "PRECALL" and len(st) >= x.arg + 2:
                a, b = st[-(x.arg + 2)], st[-(x.arg + 1)]
                null = a.opname == "PUSH_NULL" or (a is b and a.opname == "LOAD_GLOBAL" and
                                                    a.arg & 1)
                out[x.offset] = b if null else a
            try:
                eff = dis.stack_effect(x.opcode, x.arg if x.opcode >= dis.HAVE_ARGUMENT else None,
                                       jump=False)
            except ValueError:
                break
            if x.opcode in dis.hasjrel or x.opcode in dis.hasjabs:
                j = dis.stack_effect(x.opcode, x.arg, jump=True)
                if x.argval in at:
                    work.append((at[x.argval], step(st, x, j)))
            st = step(st, x, eff)
            if x.opname in END or x.opname in ALWAYS:
                break
            k += 1
    return out


def callees(co, prev, defs):
    """{CALL offset: code object} for the calls known statically."""
    ins = list(dis.get_instructions(co))
    before = {b.offset: a for a, b in zip(ins, ins[1:])}
    out = {}
    for off, x in producers(co).items():
        tgt = None
        if x.opname in ("LOAD_GLOBAL", "LOAD_NAME") and x.argval in defs:
            tgt = defs[x.argval]
        elif x.opname == "MAKE_FUNCTION" and x.offset in before and \
                before[x.offset].opname == "LOAD_CONST" and hasattr(before[x.offset].argval,
                                                                    "co_code"):
            tgt = before[x.offset].argval
        if tgt is not None:
            out[off // 2] = tgt
            nxt = ins[[i.offset for i in ins].index(off) + 1]
            out[nxt.offset // 2] = tgt  # the CALL after it
    return out


def module_defs(top):
    """{name: code} of the module's functions bound once, by a def at its top level."""
    stores = {}
    for co in code_objects(top):
        for x in dis.get_instructions(co):
            if x.opname in ("STORE_NAME", "STORE_GLOBAL", "DELETE_NAME", "DELETE_GLOBAL"):
                stores.setdefault(x.argval, []).append((co, x))
    defs = {}
    ins = list(dis.get_instructions(top))
    for a, b, c in zip(ins, ins[1:], ins[2:]):
        if a.opname == "LOAD_CONST" and hasattr(a.argval, "co_code") and \
                b.opname == "MAKE_FUNCTION" and c.opname == "STORE_NAME" and \
                len(stores.get(c.argval, [])) == 1 and b.arg == 0:
            defs[c.argval] = a.argval
    return defs


def emit(co, shown, w, index, defs):
    ins = list(dis.get_instructions(co))
    nxt = {}
    for a, b in zip(ins, ins[1:]):
        nxt[a.offset] = b.offset
    w("code %s %s %d %d\n" % (co.co_qualname.replace(" ", "_"), shown, co.co_firstlineno,
                              len(ins)))
    for x in ins:
        succ = []
        if x.opname not in END and x.opname not in ALWAYS and x.offset in nxt:
            succ.append(nxt[x.offset])
        if x.opcode in dis.hasjrel or x.opcode in dis.hasjabs:
            succ.append(x.argval)
        w("i %d %d %s\n" % (x.offset // 2, x.opcode,
                            ",".join(str(s // 2) for s in succ) if succ else "-"))
    for e in dis._parse_exception_table(co):
        w("x %d %d %d\n" % (e.start // 2, e.end // 2, e.target // 2))
    for off, tgt in sorted(callees(co, None, defs).items()):
        if id(tgt) in index:
            w("c %d %d\n" % (off, index[id(tgt)]))


def main(argv):
    names, files = {}, []
    i = 0
    while i < len(argv):
        if argv[i] == "--name" and i + 1 < len(argv):
            shown, path = argv[i + 1].split("=", 1)
            names[path] = shown
            files.append(path)
            i += 2
        else:
            files.append(argv[i])
            i += 1
    if not files:
        sys.stderr.write("usage: pycode.py [--name SHOWN=PATH ...] FILE.py ...\n")
        return 2
    out = sys.stdout
    out.write("pycode 1\n")
    for q, d, k in kinds():
        out.write("op %d %d %d\n" % (q, d, k))
    tops = []
    for path in files:
        shown = names.get(path, path).replace(" ", "_")
        try:
            src = open(path, "rb").read()
            top = compile(src, names.get(path, path), "exec", dont_inherit=True)
        except (OSError, SyntaxError, ValueError) as e:
            sys.stderr.write("pycode.py: %s: %s\n" % (path, e))
            return 1
        tops.append((top, shown))
    index = {}
    for top, _ in tops:
        for co in code_objects(top):
            index[id(co)] = len(index)
    for top, shown in tops:
        defs = module_defs(top)
        for co in code_objects(top):
            emit(co, shown, out.write, index, defs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
