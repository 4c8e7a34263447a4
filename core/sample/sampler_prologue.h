/*
 * sampler_prologue: a function's frame at a pc from its code alone, for
 * the functions without CFI that stop libdw's unwinder (glibc's static
 * startup code and many of its functions, assembly in the kernel), the way
 * GDB's riscv_scan_prologue does.
 *
 * The scan follows the code from the function's entry, straight on, up to
 * the pc or the first control transfer, with the two forms GCC's RISC-V
 * prologues use: `addi sp, sp, -N` and `sd REG, OFF(sp)` (and their
 * compressed forms). Anything else that writes sp, or writes ra before it
 * is saved, ends it as unknown. What it gives is exact where the code is
 * straight-line; past a control transfer it holds only for a caller frame
 * (its pc a call site: the prologue done) whose function writes sp nowhere
 * but by `addi sp, sp, ±N` of that one frame size, checked over its code.
 */
#ifndef OOB_SAMPLER_PROLOGUE_H
#define OOB_SAMPLER_PROLOGUE_H
#include <stddef.h>
#include <stdint.h>

/* A save slot that holds nothing: the register is live. */
#define SAMPLER_NOT_SAVED INT32_MIN

struct sampler_frame {
	int32_t cfa;	      /* the caller's sp (the CFA) is the sp at the pc + cfa */
	int32_t ra_at, s0_at; /* their save slots, CFA-relative, or SAMPLER_NOT_SAVED */
};

/* The frame at offset pc_off of the function whose code (size bytes, from
 * its entry) is code. caller: pc_off is inside a call instruction whose
 * callee was walked (ra is then saved, or the frame is unknown); else the
 * innermost frame, stopped at pc_off. 1 when the frame is known, 0 not. */
int sampler_prologue_scan(const uint8_t *code, size_t size, size_t pc_off, int caller,
			  struct sampler_frame *f);
#endif
