/*
 * sampler_unwind: the stack of a stopped RV64 target, from its registers
 * and memory read through a GDB stub (rsp.h), by frame pointers or by DWARF
 * CFI (libdw's unwinder, dwfl_getthread_frames, fed with the stub's
 * registers and memory; elfutils' riscv backend unwinds since 0.178).
 *
 * Frame pointers (GCC's RISC-V layout, -fno-omit-frame-pointer): s0 is the
 * frame's CFA; the return address is at s0-8 and the caller's s0 at s0-16.
 * A leaf function saves only s0, at s0-8: when that word points into the
 * stack above the current s0, the innermost frame is taken as a leaf and
 * its caller is ra (Linux's riscv walk_stackframe does the same). The walk
 * ends at a zero s0 or return address (complete), or at a frame pointer
 * that is misaligned, not above the previous one or out of the stack
 * window, or memory the stub cannot read (failed).
 *
 * CFI walks continue through traps (sampler_trap.h) when a vmlinux with
 * DWARF is among the ELFs: a kernel stack that returns into the exception
 * entry code goes on with the registers its pt_regs saved, the interrupted
 * kernel code's or the user program's (one stack: kernel frames, the trap,
 * then the interrupted frames). Frame-pointer walks end at the trap.
 *
 * A function without CFI (hand-written assembly: the kernel's memcpy and
 * memset, glibc's _exit) stops libdw at the innermost frame. When none of
 * its instructions writes ra or sp (rv_int_dest over its code in the ELF),
 * ra and sp are still its caller's wherever it stopped, and the walk goes on
 * from ra. Other frames without CFI that stop libdw (glibc's static startup
 * code and many of its functions) are stepped by their prologue
 * (sampler_prologue.h): the caller's sp, ra and s0 from the frame size and
 * save slots, the walk going on when the ra read follows a call. A saved
 * ra that libdw could not read (a user stack exit_mmap is
 * unmapping) ends the chain as libdw sees it, but the walk is failed, not
 * complete.
 *
 * Memory is read in aligned blocks, cached until the next stop.
 *
 * Not thread-safe; one per sampled target.
 */
#ifndef OOB_SAMPLER_UNWIND_H
#define OOB_SAMPLER_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "sample/rsp.h"
#include "sample/sample.h"
#include "util/oob_err.h"

enum sampler_unwind_mode { SAMPLER_UNWIND_FP, SAMPLER_UNWIND_CFI };

/* RV64 registers of a stop, in "g" order: x0..x31, then pc. */
#define SAMPLER_NREGS 33
#define SAMPLER_PC    32

struct sampler_unwind;

struct sampler_unwind_stats {
	uint64_t mem_reads; /* m packets */
	uint64_t mem_bytes;
	uint64_t leaf_walks;	 /* segments continued from ra past a function without CFI */
	uint64_t prologue_steps; /* frames without CFI stepped by their prologue */
};

/* A new unwinder over r (borrowed, must outlive it). CFI needs the ELFs
 * (borrowed paths, at their run-time bases) and fails with -EINVAL without
 * them, -ENOTSUP when libdw cannot unwind RISC-V. */
int sampler_unwind_new(struct rsp *r, enum sampler_unwind_mode mode, const struct sample_elf *elfs,
		       size_t nelfs, unsigned max_depth, struct sampler_unwind **out,
		       struct oob_err *err);
void sampler_unwind_free(struct sampler_unwind *u);

/* The stack of the current stop: up to the max depth, innermost first, into
 * pcs (which has room for max_depth); caller frames are return address - 1,
 * inside their call instruction, so that lookups name the caller. *n the
 * count. Returns 1 for a complete walk, 0 for a failed or cut one (the
 * frames found so far are kept), a negative errno when the stub failed
 * (the connection is then unusable). */
int sampler_unwind_stack(struct sampler_unwind *u, const uint64_t regs[SAMPLER_NREGS],
			 uint64_t *pcs, size_t *n, struct oob_err *err);

/* A trap between two segments of the last stack: the frames from pcs[at]
 * on are those it interrupted; cause its scause. */
struct sampler_join {
	size_t at;
	uint64_t cause;
};

/* The joins of the last sampler_unwind_stack, outermost last; borrowed
 * until the next call. Returns their count. */
size_t sampler_unwind_joins(const struct sampler_unwind *u, const struct sampler_join **joins);

/* Why traps are not joined although a kernel was given (its symbols or
 * DWARF lack what sampler_trap.h needs), else NULL. Borrowed. */
const char *sampler_unwind_trap_note(const struct sampler_unwind *u);

void sampler_unwind_get_stats(const struct sampler_unwind *u, struct sampler_unwind_stats *st);

#endif
