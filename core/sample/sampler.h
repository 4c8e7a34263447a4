/*
 * sampler: an out-of-band sampler of a running emulator through its GDB
 * stub, uniprof's way: at a rate in host time it stops the target, reads
 * its registers and the stack memory the unwinder needs (sampler_unwind.h),
 * resumes it, and writes the stack. Nothing runs inside the target. The
 * intervals are jittered (uniform in [0.5, 1.5) periods) so that they do
 * not lock onto a periodic program; a sample that overruns skips ticks.
 *
 * Stopping: QEMU system mode (-gdb tcp::PORT -S) reads its socket while the
 * guest runs and stops on the interrupt byte; QEMU user mode (-g PORT) does
 * not, so there the sampler sends SIGINT to the emulator's process (pid),
 * which QEMU turns into a stop reported to the stub before the guest sees
 * it, and which the sampler then discards by resuming without a signal. A
 * stop for any other signal is the guest's own: it is resumed with it.
 *
 * Threads: at each stop every thread the stub lists (qfThreadInfo: QEMU
 * system mode's vCPUs, all stopped) is sampled, through Hg, each sample
 * after a "# thread ID" line when there are several. With one_thread, and
 * in QEMU user mode (pid), only the thread the stop selected: user mode's
 * stub stops only the thread the signal went to, and gives stale registers
 * for the others, which run on.
 *
 * Output: uniprof's address stacks (docs/formats/SAMPLES.md), innermost
 * first, caller frames as return address - 1; each sample ended by 1
 * (complete walk) or 0 (failed); "# instret N" before a sample when the
 * instret CSR is read (the target's description names it; QEMU counts
 * guest instructions in it only under -icount, host ticks otherwise).
 *
 * Not thread-safe.
 */
#ifndef OOB_SAMPLER_H
#define OOB_SAMPLER_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "sample/sample.h"
#include "sample/sampler_unwind.h"
#include "util/oob_err.h"

struct sampler_opts {
	const char *target;   /* HOST:PORT of the stub */
	double hz;	      /* samples per second of host time */
	uint64_t duration_ms; /* 0: until the target exits */
	uint64_t max_samples; /* 0: no bound */
	pid_t pid;	      /* > 0: stop by SIGINT to this process (QEMU user mode) */
	enum sampler_unwind_mode unwind;
	const struct sample_elf *elfs; /* CFI: the ELFs at their run-time bases */
	size_t nelfs;
	unsigned max_depth; /* frames per stack (0: 1024) */
	int instret;	    /* read the instret CSR at each sample */
	int one_thread;	    /* only the thread the stop selected, not all */
	int timeout_ms;	    /* every wait for the stub (0: 5000) */
};

struct sampler_stats {
	uint64_t samples, failed; /* failed: walks ended by a bad frame or memory */
	uint64_t late;		  /* ticks skipped because a sample overran its period */
	uint64_t mem_reads, mem_bytes;
	uint64_t leaf_walks;	 /* walk segments continued past a function without CFI */
	uint64_t prologue_steps; /* frames without CFI stepped by their prologue */
	uint64_t multi_stops;	 /* stops that sampled several threads */
	double wall_s;		 /* from the first resume to the end */
	double stopped_s;	 /* time the target spent stopped by us */
	int exited;		 /* the target exited (W/X, or closed the connection) */
	int exit_status;	 /* W: status, X: 128 + signal, closed: -1 */
};

/* Samples the target at o->target until it exits, o->duration_ms passes or
 * o->max_samples are taken, writing samples to out; then detaches (the
 * target runs on) unless it exited. Returns 0 or a negative errno with a
 * message (-EINVAL bad options, the stub's failure from rsp.h, -EIO writing
 * out); *st is filled either way. */
int sampler_run(const struct sampler_opts *o, FILE *out, struct sampler_stats *st,
		struct oob_err *err);

#endif
