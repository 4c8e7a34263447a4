# boot-lib.sh: sourced by the tests that sample our Linux boot through QEMU
# system mode's GDB stub (test_sample_exact, test_sample_job,
# test_sample_smp). Needs CLI (oobprof) and L (tests/gen/linux).
#
#   boot_elfs           sets ELFS: the --elf options of the Sv39 vmlinux and
#                       the user programs of /init
#   boot_sample CONSOLE SMP CLOCK OUT [OPTIONS...]
#                       boots sv39/Image on SMP harts with the QEMU clock
#                       options CLOCK (one word list), stopped under -gdb,
#                       and runs `oobprof sample --unwind cfi $ELFS OPTIONS`
#                       into OUT (its stderr in OUT.err) until the guest
#                       powers off; sets rc to the sampler's exit status.
#                       The emulator's pid is in QPID while it runs (for the
#                       caller's EXIT trap).
FW=${OPENSBI_FW:-/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.bin}
PROGS="init calls sort syscalls signals waits"

boot_ready() {
	command -v qemu-system-riscv64 >/dev/null 2>&1 && [ -e "$L/sv39/boot.oobt" ] && [ -e "$FW" ]
}

boot_elfs() {
	ELFS="--elf $L/sv39/vmlinux"
	for p in $PROGS; do
		ELFS="$ELFS --elf $L/$p"
	done
}

boot_sample() {
	console=$1 smp=$2 clock=$3 out=$4
	shift 4
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	# shellcheck disable=SC2086
	qemu-system-riscv64 -M virt -m 256M -smp "$smp" -nographic -no-reboot -bios "$FW" \
		-kernel "$L/sv39/Image" $clock -seed 1 \
		-gdb "tcp:127.0.0.1:$port" -S >"$console" 2>&1 &
	QPID=$!
	# the stub listens once QEMU is up: wait for it for 10 s
	i=0
	while ! grep -qi ":$(printf '%04X' "$port") 00000000:0000 0A" /proc/net/tcp 2>/dev/null &&
		[ $i -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	# shellcheck disable=SC2086
	timeout 300 "$CLI" sample --unwind cfi $ELFS "$@" "127.0.0.1:$port" -o "$out" 2>"$out.err"
	rc=$?
	wait "$QPID"
	QPID=
}
