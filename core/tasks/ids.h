/*
 * ids: the values that tell stack entries and tasks apart, in one place.
 *
 * Marker values go in struct stack_entry.marker (0: a frame). A trap marker
 * remembers what the trap interrupted so the trap return can complete it:
 * IDS_MARK_TRAP's ret is the pc of the last instruction the trace shows before
 * the trap when the trap returns to it or to the next one (a fault, an
 * interrupt, ecall; 0: not known); IDS_MARK_TRAP_CALL's is the return address
 * of the call the trap came right after. IDS_MARK_ROOT is a task's process
 * frame, the bottom of its stack.
 *
 * Task keys (struct task.key) name a task in the task table. The kernel's
 * own keys are task_struct addresses (bit 63 set); each tracker that makes
 * tasks of its own keeps them in a space of its own, a bit below 63, so no
 * key of one tracker is ever a kernel pointer or another tracker's key.
 * Matched tasks (a task per candidate binary) use small keys: space id + 1.
 */
#ifndef OOB_IDS_H
#define OOB_IDS_H

#include <stdint.h>

enum ids_mark {
	IDS_MARK_TRAP = 1,	/* a trap; ret: the last pc before it, or 0 */
	IDS_MARK_TRAP_CALL = 2, /* a trap right after a call; ret: the call's return address */
	IDS_MARK_ROOT = 3,	/* the task's process frame */
};

/* The bit that marks a tracker's key space. Events and satp share one: the
 * two never run together (setup refuses sideband events with --tasks satp). */
enum ids_key_bit {
	IDS_KEY_PARK = 60,  /* tasks followed through __switch_to (park.h): a count */
	IDS_KEY_BIN = 61,   /* a task per user binary: the binary's index */
	IDS_KEY_EVENT = 62, /* pids named by sideband events */
	IDS_KEY_SATP = 62,  /* address spaces: the satp value, that bit flipped */
};

/* The key of task n in space bit. */
static inline uint64_t ids_key(enum ids_key_bit bit, uint64_t n)
{
	return 1ull << bit | n;
}

/* The key of address space satp, and back: never 0 and never a kernel
 * pointer (satp's mode field is 0, 8, 9 or 10). */
static inline uint64_t ids_satp_key(uint64_t satp)
{
	return satp ^ 1ull << IDS_KEY_SATP;
}

#endif
