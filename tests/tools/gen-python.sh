#!/bin/sh
# gen-python.sh OUTDIR: CPython for RISC-V, and a Python program traced under
# qemu-riscv64. Builds Debian 12's python3.11 (3.11.2 + Debian's patches,
# 3.11.2-6+deb12u8) with the cross compiler: static, -g -O3 (CPython's
# flags), computed gotos in the eval loop, the modules of Debian's
# Modules/Setup built in. The host's /usr/bin/python3.11 is the same 3.11.2:
# it is the build Python, it compiles the installed stdlib's .pyc files, and
# the bytecode it compiles equals the guest's.
#
# OUTDIR/python/ gets:
#   bin/python3.11      the static interpreter (ELF, DWARF)
#   lib/python3.11/     the installed stdlib with its .pyc, less its tests:
#                       the interpreter finds it from bin/ (no PYTHONHOME)
#   build.info          "seconds N" of the cold build, the configure line
#   pyprog.py           tests/fixtures/python/pyprog.py, run from here
#   pyprog.oobt         its trace (pc + instruction bits) by the plugin
#                       (OUTDIR/progs/oobtrace.so, gen-programs.sh --plugin)
#   pyprog.hist         "0x<pc> <count>", counted inside QEMU: ground truth
#   pyprog.out          its stdout: "pycalls <function> <n>" lines
#   pychain.*           the same for tests/fixtures/python/pychain.py, whose
#                       stdout is the interpreter's own frame chain at each
#                       probe ("chain ..." lines)
#
# The build takes minutes, so it is cached outside OUTDIR, as the kernel is
# (gen-linux.sh), in ${OOB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/oobprof}/
# python-KEY/, KEY a hash of the source tarballs, the cross compiler, the
# configure line and RECIPE. Inside: dl/ is shared (the tarballs, fetched
# once from Debian's mirror unless PY_ORIG and PY_DEBIAN name local copies,
# and checked against their sha256), src/ (patched source), build/, out/
# (the install) and out/stamp. A run whose key matches only copies out/
# (0.4 s). A cold build took 432 s on 2 busy cores (load ~10; 2 min 2 s user,
# 23 s system): configure ~3 min of it, which runs one test at a time.
#
# Environment: OOB_PYTHON=0 skips everything; JOBS (default: nproc); CROSS,
# QEMU, BUILD_PYTHON, PY_ORIG, PY_DEBIAN, DEBIAN_MIRROR, OOB_CACHE override
# the tools and paths. Idempotent. Prints "SKIP: gen-python: <reason>" when a
# tool is missing, "FAIL: gen-python: <what>" when a step fails.
set -u
[ $# -eq 1 ] || {
	echo "usage: $0 OUTDIR" >&2
	exit 2
}
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$1/python
CROSS=${CROSS:-riscv64-linux-gnu-}
CC=${CROSS}gcc
QEMU=${QEMU:-qemu-riscv64}
BUILD_PYTHON=${BUILD_PYTHON:-/usr/bin/python3.11}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
PYVER=3.11.2
DEBVER=3.11.2-6+deb12u8
ORIG=python3.11_$PYVER.orig.tar.gz
DEBTAR=python3.11_$DEBVER.debian.tar.xz
ORIG_SHA=2411c74bda5bbcfcddaf4531f66d1adc73f247f529aee981b029513aefdbf849
DEBTAR_SHA=ece2d63c70ac0b7a401fbe6b51b0103be997c294a01a3865549be1862794ba97
# Bump when the build steps below change in a way the hashed inputs do not show.
RECIPE=2
# The extension modules setup.py would build as shared objects, which a
# static interpreter cannot load (and a -static link refuses): disabled
# (Modules/Setup.local). The interpreter keeps the 27 modules Debian's
# Modules/Setup builds in (sys, posix, _io, _sre, itertools, time, ...): the
# pure-Python stdlib runs; these C modules are not there.
DISABLED="_asyncio _bisect _blake2 _codecs_cn _codecs_hk _codecs_iso2022 _codecs_jp
 _codecs_kr _codecs_tw _contextvars _csv _ctypes _ctypes_test _datetime _decimal
 _elementtree _heapq _json _lsprof _md5 _multibytecodec _multiprocessing _opcode
 _pickle _posixshmem _posixsubprocess _queue _random _sha1 _sha256 _sha3 _sha512
 _socket _statistics _struct _typing _xxsubinterpreters _xxtestfuzz _zoneinfo array
 audioop binascii cmath fcntl grp math mmap ossaudiodev pyexpat resource select spwd
 syslog termios unicodedata xxlimited xxlimited_35 _testcapi _testbuffer
 _testimportmultiple _testmultiphase _testinternalcapi _uuid _curses _curses_panel
 _dbm _gdbm _lzma _bz2 _sqlite3 _ssl _hashlib _tkinter readline nis zlib _crypt"
# Cross-compiling: configure cannot test the target's /dev, nor whether the
# compiler has computed gotos (it then dispatches bytecode through a switch;
# Debian's native build has them: each handler jumps to the next one through
# the eval loop's opcode_targets table); static: no
# libpython.so, no dlopen, no -export-dynamic; pkg-config must not find the
# build machine's x86 libraries (the modules that need them stay out).
CONFIGURE="--host=riscv64-linux-gnu --build=x86_64-linux-gnu --prefix=/usr
 --with-computed-gotos --disable-shared --without-ensurepip --disable-test-modules
 --with-build-python=$BUILD_PYTHON"
CONFIGURE_ENV="ac_cv_file__dev_ptmx=yes ac_cv_file__dev_ptc=no
 ac_cv_buggy_getaddrinfo=no LDFLAGS=-static
 LINKFORSHARED= PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH="
GEN=gen-python
. "$src/tests/tools/gen-lib.sh"

[ "${OOB_PYTHON:-1}" = 0 ] && skip "OOB_PYTHON=0"
for tool in "$CC" gcc make autoconf tar xz patch sha256sum "$QEMU"; do
	have "$tool" || skip "$tool not installed (sh deploy/install-deps.sh)"
done
[ -x "$BUILD_PYTHON" ] || skip "$BUILD_PYTHON absent (Debian package python3.11)"
v=$("$BUILD_PYTHON" -c 'import platform; print(platform.python_version())')
[ "$v" = "$PYVER" ] || skip "$BUILD_PYTHON is $v, not $PYVER (its bytecode must be the guest's)"

gen_cache "$1/python-cache" || exit 1
mkdir -p "$cache/dl" "$out" || exit 1

# fetch NAME SHA256 OVERRIDE: sets $fetched to the tarball: OVERRIDE, or in
# dl/, fetched when absent; checked every time (a truncated download must
# not become a cached build).
fetch() {
	fetched=$cache/dl/$1
	if [ -n "$3" ]; then
		fetched=$3
	elif [ ! -e "$fetched" ]; then
		url=$DEBIAN_MIRROR/pool/main/p/python3.11/$1
		if have curl; then
			curl -fsS -o "$fetched.tmp" "$url"
		elif have wget; then
			wget -q -O "$fetched.tmp" "$url"
		else
			false
		fi && mv "$fetched.tmp" "$fetched" || {
			rm -f "$fetched.tmp"
			skip "cannot fetch $url"
		}
	fi
	echo "$2  $fetched" | sha256sum -c --status || {
		fail "$fetched: sha256 is not $2"
		exit 1
	}
}
fetch "$ORIG" "$ORIG_SHA" "${PY_ORIG:-}"
orig=$fetched
fetch "$DEBTAR" "$DEBTAR_SHA" "${PY_DEBIAN:-}"
debtar=$fetched

key=$({
	echo "recipe $RECIPE"
	echo "$ORIG_SHA $DEBTAR_SHA"
	"$CC" --version | head -n 1
	echo "$CONFIGURE $CONFIGURE_ENV $DISABLED"
	autoconf --version | head -n 1
} | sha256sum | cut -c1-16)
dir=$cache/python-$key
mkdir -p "$dir" || exit 1

# The source, extracted once per key, with Debian's patch series applied in
# order (debian/patches/series, as quilt would), and configure made again
# from the patched configure.ac, as Debian's build does (sysconfigdata-name.diff
# renames _sysconfigdata in configure.ac and Makefile.pre.in: the tarball's
# configure would not match).
extract() {
	[ -e "$dir/src/.oob-ready" ] && return 0
	echo "gen-python: extracting $orig into $dir/src"
	rm -rf "$dir/src" "$dir/src.tmp" && mkdir -p "$dir/src.tmp" &&
		tar -xzf "$orig" -C "$dir/src.tmp" --strip-components=1 &&
		tar -xJf "$debtar" -C "$dir/src.tmp" || {
		fail "extracting $orig and $debtar"
		return 1
	}
	for p in $(grep -v '^#' "$dir/src.tmp/debian/patches/series"); do
		(cd "$dir/src.tmp" && patch -s -p1 <"debian/patches/$p") >>"$dir/patch.log" 2>&1 || {
			fail "applying debian/patches/$p (see $dir/patch.log)"
			return 1
		}
	done
	(cd "$dir/src.tmp" && autoconf) >>"$dir/patch.log" 2>&1 || {
		fail "autoconf (see $dir/patch.log)"
		return 1
	}
	mv "$dir/src.tmp" "$dir/src" && touch "$dir/src/.oob-ready"
}

build() {
	t0=$(now)
	extract || return 1
	rm -rf "$dir/build" "$dir/out" "$dir/out.tmp" && mkdir -p "$dir/build/Modules" || return 1
	{
		echo "*disabled*"
		echo "$DISABLED" | tr ' ' '\n' | grep .
	} >"$dir/build/Modules/Setup.local" || return 1
	echo "gen-python: configuring and building in $dir/build (-j$JOBS)"
	# shellcheck disable=SC2086
	(cd "$dir/build" && env $CONFIGURE_ENV "$dir/src/configure" $CONFIGURE) \
		>"$dir/build.log" 2>&1 || {
		tail -n 20 "$dir/build.log" | sed 's/^/gen-python: | /'
		fail "configure (see $dir/build.log)"
		return 1
	}
	make -C "$dir/build" -j"$JOBS" >>"$dir/build.log" 2>&1 &&
		make -C "$dir/build" install DESTDIR="$dir/out.tmp" >>"$dir/build.log" 2>&1 || {
		tail -n 20 "$dir/build.log" | sed 's/^/gen-python: | /'
		fail "make (see $dir/build.log)"
		return 1
	}
	t1=$(now)
	{
		echo "seconds $((t1 - t0))"
		echo "jobs $JOBS"
		echo "configure $CONFIGURE_ENV $CONFIGURE"
	} >"$dir/out.tmp/build.info" &&
		echo "$key" >"$dir/out.tmp/stamp" && mv "$dir/out.tmp" "$dir/out" &&
		echo "gen-python: built in $((t1 - t0)) s"
}

gen_lock "$dir"
if [ "$(cat "$dir/out/stamp" 2>/dev/null)" != "$key" ]; then
	build || exit 1
else
	echo "gen-python: python cached in $dir/out"
fi
exec 9>&-

# ---- the interpreter and its stdlib, copied (only what changed) ----

mkdir -p "$out/bin" "$out/lib" || exit 1
copy "$dir/out/usr/bin/python3.11" "$out/bin/python3.11" && chmod +x "$out/bin/python3.11" &&
	copy "$dir/out/build.info" "$out/build.info" || fail "copying python3.11"
# The stdlib without its tests and the static libpython (the interpreter
# finds its prefix by lib/python3.11/os.py beside ../bin; lib-dynload is the
# exec-prefix landmark, empty in a static build).
if [ "$(cat "$out/lib/stamp" 2>/dev/null)" != "$key" ]; then
	rm -rf "${out:?}/lib" && mkdir -p "$out/lib" &&
		(cd "$dir/out/usr/lib" && tar -cf - --exclude=python3.11/test \
			--exclude='python3.11/config-*' --exclude=python3.11/idlelib \
			--exclude=python3.11/tkinter --exclude=python3.11/lib2to3 \
			--exclude=python3.11/ensurepip --exclude='*.opt-?.pyc' python3.11) |
		(cd "$out/lib" && tar -xf -) && mkdir -p "$out/lib/python3.11/lib-dynload" &&
		echo "$key" >"$out/lib/stamp" || fail "copying the stdlib"
fi

# ---- the program, traced ----

sh "$src/tests/tools/gen-programs.sh" --plugin "$1" || status=1
PLUGIN=$1/progs/oobtrace.so
[ -e "$PLUGIN" ] || {
	echo "SKIP: gen-python: no tracing plugin $PLUGIN (see gen-programs)"
	exit "$status"
}
. "$src/tests/tools/newer.sh"

# trace NAME: runs tests/fixtures/python/NAME.py under the plugin: NAME.oobt,
# NAME.hist, NAME.out as gen-programs.sh makes them. The script is copied
# beside the interpreter and run by its relative name, so that its code
# objects' co_filename is "NAME.py" whatever the checkout. A clean
# environment but a fixed hash seed (string hashes, hence dict layouts and
# the instruction counts, are the same every run); -S -s: no site, so the
# start-up imports only frozen modules and encodings; -B: no .pyc written.
trace() {
	p=$out/$1
	copy "$fixpy/$1.py" "$p.py" || {
		fail "copying $1.py"
		return
	}
	newer "$p.hist" "$p.py" "$out/bin/python3.11" "$PLUGIN" || return 0
	rm -f "$p.oobt" "$p.hist" "$p.out"
	t0=$(now)
	(cd "$out" && env -i PYTHONHASHSEED=0 "$QEMU" \
		-plugin "$PLUGIN,out=$p.oobt,hist=$p.tmp.hist" bin/python3.11 -S -s -B "$1.py") \
		>"$p.tmp.out" 2>"$p.err" || {
		fail "running $1.py under qemu: $(tail -n 3 "$p.err" | tr '\n' ' ')"
		return
	}
	t1=$(now)
	mv "$p.tmp.out" "$p.out" && mv "$p.tmp.hist" "$p.hist" &&
		echo "gen-python: $1: $(awk '{ n += $2 } END { printf "%.0f", n }' "$p.hist")" \
			"instructions in $((t1 - t0)) s, $(wc -c <"$p.oobt") bytes of oobt"
}
fixpy=$src/tests/fixtures/python
trace pyprog
trace pychain
exit "$status"
