#!/bin/sh
# gen-linux.sh OUTDIR: a real full-system RISC-V trace, kernel and user space,
# made on this machine. Builds a small Linux 6.1 from Debian's linux-source-6.1
# (tinyconfig + tests/fixtures/linux/kernel.config) twice: as it is (on QEMU
# 7.2 it picks Sv57 paging) and forced to Sv39 (linux-force-sv39.patch +
# sv39.config: the addresses FireSim's cores give). Its built-in initramfs
# holds a static /init that forks and execs the static workloads, each
# linked at its own text address, and powers off (tests/fixtures/linux/*.c).
# Each kernel is booted once under qemu-system-riscv64 -M virt with OpenSBI,
# deterministically (-icount), with the tracing plugin tests/tools/oobtrace.c;
# the Sv39 kernel boots once more on two harts (smp2). QEMU 7.2 does not get
# past /init with -icount and two harts, so that boot runs without it: both
# vCPUs in turn on one host thread (-accel tcg,thread=single), every record
# in the order it ran, but not the same run twice.
#
# OUTDIR/linux/ gets:
#   init calls sort syscalls    the user binaries (static, -g; text at 0x10000,
#                               0x1000000, 0x2000000, 0x3000000)
#   signals                     a user binary too, text at 0x4000000 (signals.c)
#   waits                       the same, text at 0x5000000
#   VARIANT/vmlinux             the kernel ELF, with DWARF (VARIANT: sv57, sv39; smp2
#                               is the Sv39 kernel on two harts)
#   VARIANT/Image               what QEMU boots
#   VARIANT/kernel.config       its full .config
#   VARIANT/boot.oobt           the whole boot: pc + instruction bits of every
#                               executed instruction (firmware, kernel, user)
#   VARIANT/boot.hist           "0x<pc> <count>", counted inside QEMU without
#                               oobprof code: the ground truth
#   VARIANT/console.log         what the machine printed (OpenSBI, Linux, init)
#   VARIANT/boot.info           "instructions N", "seconds S", the QEMU command
#   VARIANT/qemu.err            what QEMU and the plugin said on stderr
#
# The kernels take minutes to build, so the build is cached outside OUTDIR, in
# ${OOB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/oobprof}/linux-KEY/, KEY being a
# hash of what the kernel is made of (linux-source version, cross compiler,
# config fragments, patch). Inside it, src/ (the patched source), sv57/ and
# sv39/ (build trees), user/ (the user binaries and initramfs list), out/
# (finished kernels) and out/stamp, a hash of all inputs, user sources
# included. A run whose inputs match the stamp only copies out/ (0.2 s); a
# change of the user programs rebuilds incrementally (the initramfs and a
# relink: 10-50 s); a change of the kernel's inputs makes a new linux-KEY, a
# cold build (2-3 min on 2 cores; 2.3 GB: delete old linux-KEY by hand).
#
# Environment: OOB_LINUX=0 skips everything; JOBS (default: nproc); CROSS,
# QEMU_SYSTEM, LINUX_TAR, OPENSBI_FW, OOB_CACHE override the tools and paths.
# Idempotent. Prints "SKIP: gen-linux: <reason>" when a tool is missing and
# "FAIL: gen-linux: <what>" when a step fails; progress and timings go to the
# log (gen-fixtures.log) as plain lines.
set -u
[ $# -eq 1 ] || {
	echo "usage: $0 OUTDIR" >&2
	exit 2
}
src=$(cd "$(dirname "$0")/../.." && pwd)
fix=$src/tests/fixtures/linux
out=$1/linux
CROSS=${CROSS:-riscv64-linux-gnu-}
CC=${CROSS}gcc
QEMU_SYSTEM=${QEMU_SYSTEM:-qemu-system-riscv64}
LINUX_TAR=${LINUX_TAR:-/usr/src/linux-source-6.1.tar.xz}
OPENSBI_FW=${OPENSBI_FW:-/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.bin}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
PLUGIN=$1/progs/oobtrace.so
# Bump when the build steps below change in a way the hashed inputs do not show.
RECIPE=1
# name:text address. Distinct addresses: a pc alone tells which binary ran it.
USER_PROGS="init:0x10000 calls:0x1000000 sort:0x2000000 syscalls:0x3000000"
# signals.c keeps its ground truth with the non-local programs' headers
USER_PROGS="$USER_PROGS signals:0x4000000"
USER_PROGS="$USER_PROGS waits:0x5000000"
USER_CFLAGS="-g -O2 -Wall -Wextra -Werror -static"
# Fixed build identity: the kernel's banner and initramfs do not depend on
# when or where it was built.
KBUILD_ENV="KBUILD_BUILD_TIMESTAMP=2024-01-01 KBUILD_BUILD_USER=oobprof KBUILD_BUILD_HOST=oobprof KBUILD_BUILD_VERSION=1"
GEN=gen-linux
. "$src/tests/tools/gen-lib.sh"

[ "${OOB_LINUX:-1}" = 0 ] && skip "OOB_LINUX=0"
for tool in "$CC" gcc make flex bison bc patch tar xz sha256sum "$QEMU_SYSTEM"; do
	have "$tool" || skip "$tool not installed (sh deploy/install-deps.sh)"
done
[ -r "$LINUX_TAR" ] || skip "$LINUX_TAR absent (Debian package linux-source-6.1)"
[ -r "$OPENSBI_FW" ] || skip "$OPENSBI_FW absent (Debian package opensbi)"

# ---- cache keys ----

linux_version() {
	# not a Debian system: the tarball's checksum (reads 140 MB, ~1 s)
	v=$(dpkg-query -W -f '${Version}' linux-source-6.1 2>/dev/null) || v=$(cksum <"$LINUX_TAR")
	echo "linux-source $v"
}
kkey=$({
	echo "recipe $RECIPE"
	linux_version
	"$CC" --version | head -n 1
	cat "$fix/kernel.config" "$fix/sv39.config" "$fix/linux-force-sv39.patch"
} | sha256sum | cut -c1-16)
ukey=$({
	echo "$kkey $USER_PROGS $USER_CFLAGS -ffile-prefix-map"
	for p in $USER_PROGS; do
		cat "$fix/${p%%:*}.c"
	done
	cat "$fix/initramfs.list"
	cat "$fix/../progs/calls.h" "$fix/../progs/nonlocal/nl.h"
} | sha256sum | cut -c1-16)

gen_cache "$1/linux-cache" || exit 1
dir=$cache/linux-$kkey
mkdir -p "$dir" "$out" || exit 1

# ---- the kernels (cached) ----

# kmake TREE TARGET...: make in the source tree with the build tree TREE;
# output to TREE.log, which is shown when it fails.
kmake() {
	tree=$1
	shift
	# shellcheck disable=SC2086
	env $KBUILD_ENV make -C "$dir/src" O="$tree" ARCH=riscv CROSS_COMPILE="$CROSS" \
		-j"$JOBS" "$@" >>"$tree.log" 2>&1 && return 0
	tail -n 30 "$tree.log" | sed 's/^/gen-linux: | /'
	return 1
}

build_user() {
	mkdir -p "$dir/user" || return 1
	for p in $USER_PROGS; do
		name=${p%%:*}
		# -ffile-prefix-map: DWARF names the sources "calls.c", whatever the
		# checkout (the cache is shared by all of them)
		# shellcheck disable=SC2086
		if ! "$CC" $USER_CFLAGS -ffile-prefix-map="$fix/=" -Wl,-Ttext-segment="${p#*:}" \
			-o "$dir/user/$name.tmp" "$fix/$name.c"; then
			fail "building $name"
			return 1
		fi
		# The initramfs records each file's mtime (whatever
		# INITRAMFS_PRESERVE_MTIME says: that is for unpacking), and
		# the kernel image changes with it; a fixed one keeps the image,
		# hence the whole trace, the same from one build to the next.
		# Kbuild then cannot see the change: kbuild_image removes the cpio.
		mv "$dir/user/$name.tmp" "$dir/user/$name" &&
			touch -t 202401010000 "$dir/user/$name" || return 1
	done
	sed "s#@USER@#$dir/user#" "$fix/initramfs.list" >"$dir/user/initramfs.list.tmp" &&
		mv "$dir/user/initramfs.list.tmp" "$dir/user/initramfs.list"
}

# The source, extracted once per key and patched. The patch only adds a
# switch (off by default): both kernels build from the same tree.
extract() {
	[ -e "$dir/src/.oob-ready" ] && return 0
	echo "gen-linux: extracting $LINUX_TAR into $dir/src"
	rm -rf "$dir/src" "$dir/src.tmp" && mkdir -p "$dir/src.tmp" &&
		tar -xJf "$LINUX_TAR" -C "$dir/src.tmp" --strip-components=1 &&
		(cd "$dir/src.tmp" && patch -s -p1 <"$fix/linux-force-sv39.patch") &&
		mv "$dir/src.tmp" "$dir/src" && touch "$dir/src/.oob-ready" ||
		{
			fail "extracting and patching $LINUX_TAR"
			return 1
		}
}

# check_config TREE FRAGMENT...: every setting of the fragments made it into
# the final .config (Kconfig silently drops what a dependency forbids).
check_config() {
	tree=$1
	shift
	missing=$(grep -hE '^(CONFIG_|# CONFIG_.* is not set)' "$@" | while IFS= read -r l; do
		grep -qxF "$l" "$tree/.config" || echo "$l"
	done)
	[ -z "$missing" ] && return 0
	fail "$(basename "$tree"): not in .config: $(echo "$missing" | tr '\n' ' ')"
	return 1
}

# kbuild_image TREE: the Image, with the initramfs made again from the user
# binaries of this run (see build_user).
kbuild_image() {
	rm -f "$1/usr/initramfs_data.cpio"
	kmake "$1" Image
}

# configure TREE FRAGMENT...: tinyconfig + the fragments, once per tree.
configure() {
	tree=$1
	shift
	[ -e "$tree/.oob-configured" ] && return 0
	"$dir/src/scripts/kconfig/merge_config.sh" -m -O "$tree" "$tree/.config" "$@" \
		>>"$tree.log" 2>&1 && kmake "$tree" olddefconfig && check_config "$tree" "$@" &&
		touch "$tree/.oob-configured" || {
		fail "configuring $(basename "$tree") (see $tree.log)"
		return 1
	}
}

build_kernels() {
	t0=$(now)
	build_user && extract || return 1
	# The initramfs list lives in the cache: its path is the same for both trees.
	printf 'CONFIG_INITRAMFS_SOURCE="%s"\n' "$dir/user/initramfs.list" >"$dir/initramfs.config"
	frags="$fix/kernel.config $dir/initramfs.config"
	if [ ! -e "$dir/sv57/.oob-configured" ]; then
		rm -rf "$dir/sv57" "$dir/sv57.log" "$dir/sv39" "$dir/sv39.log"
		mkdir -p "$dir/sv57" && kmake "$dir/sv57" tinyconfig || {
			fail "make tinyconfig (see $dir/sv57.log)"
			return 1
		}
	fi
	# shellcheck disable=SC2086
	configure "$dir/sv57" $frags || return 1
	echo "gen-linux: building the Sv57 kernel in $dir/sv57 (-j$JOBS)"
	kbuild_image "$dir/sv57" || {
		fail "building the Sv57 kernel (see $dir/sv57.log)"
		return 1
	}
	t1=$(now)
	# The Sv39 tree starts as a copy of the built Sv57 tree: Kbuild tracks
	# which files use which CONFIG_ symbol, so turning one switch on
	# recompiles arch/riscv/mm/init.c and relinks, instead of a second
	# full build.
	if [ ! -e "$dir/sv39/.oob-configured" ]; then
		rm -rf "$dir/sv39" "$dir/sv39.tmp" && cp -a "$dir/sv57" "$dir/sv39.tmp" &&
			rm -f "$dir/sv39.tmp/.oob-configured" && mv "$dir/sv39.tmp" "$dir/sv39" || {
			fail "copying the Sv57 build tree"
			return 1
		}
	fi
	# shellcheck disable=SC2086
	configure "$dir/sv39" $frags "$fix/sv39.config" || return 1
	echo "gen-linux: building the Sv39 kernel in $dir/sv39"
	kbuild_image "$dir/sv39" || {
		fail "building the Sv39 kernel (see $dir/sv39.log)"
		return 1
	}
	t2=$(now)
	rm -rf "$dir/out" && mkdir -p "$dir/out" || return 1
	for v in sv57 sv39; do
		mkdir -p "$dir/out/$v" &&
			cp "$dir/$v/vmlinux" "$dir/$v/arch/riscv/boot/Image" "$dir/out/$v/" &&
			cp "$dir/$v/.config" "$dir/out/$v/kernel.config" || return 1
	done
	for p in $USER_PROGS; do
		cp "$dir/user/${p%%:*}" "$dir/out/" || return 1
	done
	echo "$ukey" >"$dir/out/stamp"
	echo "gen-linux: built in $((t2 - t0)) s (Sv57 $((t1 - t0)) s, Sv39 $((t2 - t1)) s)"
}

gen_lock "$dir"
if [ "$(cat "$dir/out/stamp" 2>/dev/null)" != "$ukey" ]; then
	build_kernels || {
		[ "$status" -ne 0 ] || fail "building the kernels"
		exit 1
	}
else
	echo "gen-linux: kernels cached in $dir/out"
fi

for p in $USER_PROGS; do
	copy "$dir/out/${p%%:*}" "$out/${p%%:*}" || fail "copying ${p%%:*}"
done
for v in sv57 sv39; do
	mkdir -p "$out/$v" || exit 1
	for f in vmlinux Image kernel.config; do
		copy "$dir/out/$v/$f" "$out/$v/$f" || fail "copying $v/$f"
	done
done
exec 9>&-

# ---- the boots, traced ----

sh "$src/tests/tools/gen-programs.sh" --plugin "$1" || status=1
[ -e "$PLUGIN" ] || {
	echo "SKIP: gen-linux: no tracing plugin $PLUGIN (see gen-programs)"
	exit "$status"
}

. "$src/tests/tools/newer.sh"

# boot VARIANT HARTS: on one hart, one deterministic run: -icount shift=0: one
# instruction is one ns of guest time and the guest clock follows
# instructions, not the host; sleep=off: idle time is skipped, not waited
# for; -seed: QEMU's random numbers (the device tree's rng-seed, which Linux
# uses) are the same every run. On more harts, see the header.
boot() {
	v=$out/$1 harts=$2
	if ! newer "$v/boot.hist" "$v/Image" "$PLUGIN" "$0" && [ -e "$v/boot.oobt" ] &&
		[ -e "$v/console.log" ]; then
		return 0
	fi
	rm -f "$v/boot.oobt" "$v/boot.hist" "$v/console.log" "$v/boot.info"
	clock="-icount shift=0,sleep=off,align=off"
	[ "$2" -gt 1 ] && clock="-accel tcg,thread=single"
	# shellcheck disable=SC2086
	set -- "$QEMU_SYSTEM" -M virt -m 256M -smp "$2" -nographic -no-reboot \
		-bios "$OPENSBI_FW" -kernel "$v/Image" $clock -seed 1 \
		-plugin "$PLUGIN,out=$v/boot.oobt.tmp,hist=$v/boot.hist.tmp"
	tries=1
	while :; do
		t0=$(now)
		timeout 600 "$@" </dev/null >"$v/console.tmp" 2>"$v/qemu.err" || {
			fail "$(basename "$v"): booting under QEMU: $(tail -n 3 "$v/qemu.err" | tr '\n' ' ')"
			return 1
		}
		t1=$(now)
		# Without -icount the guest's clock is the host's: Linux waits a
		# second for each secondary hart, and on a loaded host one may not
		# come up in time ("CPU1: failed to come online", one CI run):
		# that boot ran on one hart only. Boot again.
		{ [ "$harts" -eq 1 ] || grep -q "smp: Brought up 1 node, $harts CPUs" "$v/console.tmp"; } && break
		if [ $tries -ge 3 ]; then
			fail "$(basename "$v"): not all $harts harts came online in $tries boots (see $v/console.tmp)"
			return 1
		fi
		echo "gen-linux: $(basename "$v"): $(grep -m 1 'failed to come online' "$v/console.tmp" ||
			echo 'a hart did not come online'); booting again"
		tries=$((tries + 1))
	done
	grep -q 'init: done, powering off' "$v/console.tmp" || {
		fail "$(basename "$v"): the boot did not reach the end of /init (see $v/console.tmp)"
		return 1
	}
	n=$(awk '{ n += $2 } END { printf "%.0f\n", n }' "$v/boot.hist.tmp")
	{
		echo "instructions $n"
		echo "seconds $((t1 - t0))"
		echo "command $*"
	} >"$v/boot.info.tmp" &&
		mv "$v/boot.oobt.tmp" "$v/boot.oobt" && mv "$v/console.tmp" "$v/console.log" &&
		mv "$v/boot.info.tmp" "$v/boot.info" && mv "$v/boot.hist.tmp" "$v/boot.hist" &&
		echo "gen-linux: $(basename "$v") boot: $n instructions in $((t1 - t0)) s," \
			"$(wc -c <"$v/boot.oobt") bytes of oobt"
}
boot sv57 1 || status=1
boot sv39 1 || status=1
mkdir -p "$out/smp2" || exit 1
for f in vmlinux Image kernel.config; do
	copy "$out/sv39/$f" "$out/smp2/$f" || fail "copying smp2/$f"
done
boot smp2 2 || status=1
exit "$status"
