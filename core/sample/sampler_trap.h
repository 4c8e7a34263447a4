/*
 * sampler_trap: what the sampler needs to continue a kernel stack through
 * a trap into the context it interrupted (RISC-V Linux): the exception
 * entry code's addresses, THREAD_SIZE and struct pt_regs, all read from
 * the vmlinux's symbols and DWARF (libdw), not hard-coded, since they change
 * with the kernel's version and configuration.
 *
 * On a trap, handle_exception saves the interrupted registers in a struct
 * pt_regs it pushes on the task's kernel stack (at the top of the
 * THREAD_SIZE-aligned stack when the trap came from user mode,
 * task_pt_regs(), else below the interrupted kernel frames), then jumps to
 * the handler with ra in the entry code (ret_from_exception,
 * ret_from_syscall): a caller frame whose return address is in the entry
 * code is that pt_regs' frame, its sp the pt_regs' address.
 *
 * Thread-safe once read (a plain struct).
 */
#ifndef OOB_SAMPLER_TRAP_H
#define OOB_SAMPLER_TRAP_H

#include <elfutils/libdwfl.h>
#include <stdint.h>

#include "util/oob_err.h"

#define SAMPLER_SR_SPP	    0x100u /* sstatus.SPP: the trap came from S-mode */
#define SAMPLER_EXC_SYSCALL 8u	   /* scause of an ecall from U-mode */

struct sampler_trap_layout {
	uint64_t entry_lo, entry_hi; /* [handle_exception, ret_from_fork) */
	uint64_t sched_lo, sched_hi; /* __schedule (empty when not found) */
	uint64_t thread_size;	     /* THREAD_SIZE: sizeof(init_stack) */
	uint64_t regs_size;	     /* sizeof(struct pt_regs) */
	/* offsets in struct pt_regs */
	uint64_t off_epc, off_ra, off_sp, off_s0, off_status, off_cause;
};

/* The layout from the kernel module m (its symbol table and DWARF).
 * Returns 0, or -ENOENT with a message naming what the vmlinux lacks
 * (a symbol, DWARF, a type or member). */
int sampler_trap_layout_read(Dwfl_Module *m, struct sampler_trap_layout *l, struct oob_err *err);

#endif
