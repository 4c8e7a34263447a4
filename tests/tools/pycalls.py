#!/usr/bin/env python3.11
"""Python-level call counts of a program, by CPython's own profiling hook.

  pycalls.py FILE.py

Runs FILE.py (compiled with its name as given, run as __main__, its output
discarded) under sys.setprofile in this interpreter, and prints, for the code
objects of FILE.py only:

  calls QUALNAME LINE N     'call' events of the code object: CPython 3.11
                            raises one at each RESUME, i.e. at every frame
                            start and every generator resumption, not for
                            the frame that only creates a generator
  gens QUALNAME LINE N      generator code: generator objects that ran
                            (distinct frames), each created once by a frame
                            of its own that the events do not show
  path Q:L;Q:L;... N        'call' events per stack of FILE.py's frames,
                            outermost first (other files' frames left out)

The ground truth of test_python.sh's Python-frame checks: it owes nothing
to oobprof or to the trace. Needs the guest's CPython version (3.11.2): the
same bytecode, the same frames.
"""
import collections
import io
import sys

CO_GENERATOR = 0x20


def main(path):
    src = open(path, "rb").read()
    code = compile(src, path, "exec", dont_inherit=True)
    calls = collections.Counter()
    paths = collections.Counter()
    frames = collections.defaultdict(list)  # generator code -> its frames (kept alive)

    def key(co):
        return "%s %d" % (co.co_qualname.replace(" ", "_"), co.co_firstlineno)

    def hook(frame, event, arg):
        if event != "call" or frame.f_code.co_filename != path:
            return
        co = frame.f_code
        calls[key(co)] += 1
        if co.co_flags & CO_GENERATOR and not any(f is frame for f in frames[key(co)]):
            frames[key(co)].append(frame)
        stack, f = [], frame
        while f is not None:
            if f.f_code.co_filename == path:
                stack.append(key(f.f_code).replace(" ", ":"))
            f = f.f_back
        paths[";".join(reversed(stack))] += 1

    out, sys.stdout = sys.stdout, io.StringIO()
    sys.setprofile(hook)
    try:
        exec(code, {"__name__": "__main__", "__file__": path})
    finally:
        sys.setprofile(None)
        sys.stdout = out
    for k, n in sorted(calls.items()):
        print("calls %s %d" % (k, n))
    for k, v in sorted(frames.items()):
        print("gens %s %d" % (k, len(v)))
    for k, n in sorted(paths.items()):
        print("path %s %d" % (k, n))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: pycalls.py FILE.py\n")
        sys.exit(2)
    main(sys.argv[1])
