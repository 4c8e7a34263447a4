#!/bin/sh
# pymap.sh GENDIR PYTHON [PROG]: prints the code map (tests/tools/pycode.py,
# run by PYTHON, the host's python3.11: the guest's bytecode is its own) of
# GENDIR/PROG.py (default pyprog) and of the stdlib code the guest's
# start-up runs (-S: no site): the frozen modules, by the names CPython gives
# their code, and the encodings package. GENDIR is gen-python.sh's
# OUTDIR/python. Shared by test_python.sh, test_python_stacks.sh and
# test_server_pycode.sh, which must give oobprof the same map. Exit status: pycode.py's (its messages on stderr).
set -u
[ $# -eq 2 ] || [ $# -eq 3 ] || {
	echo "usage: $0 GENDIR PYTHON [PROG]" >&2
	exit 2
}
gen=$1
lib=$gen/lib/python3.11
frozen="importlib/_bootstrap importlib/_bootstrap_external zipimport abc codecs io
 _collections_abc _sitebuiltins genericpath posixpath os site stat"
tool=$(cd "$(dirname "$0")" && pwd)/pycode.py
set -- "$2" "$tool" "${3:-pyprog}.py"
for m in $frozen; do
	set -- "$@" --name "<frozen_$(echo "$m" | tr / .)>=$lib/$m.py"
done
for m in encodings/__init__ encodings/aliases encodings/utf_8; do
	set -- "$@" "$lib/$m.py"
done
cd "$gen" && exec "$@"
