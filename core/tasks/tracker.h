/*
 * tracker: how the reconstruction tells tasks apart (DESIGN.md 3.3, 4.3),
 * one interface implemented once per way of telling them apart:
 *
 *   events   sideband process events say who runs (events.h)
 *   derived  the kernel's own functions and registers say it (proc.h)
 *   satp     each address space is a task (proc.h, --tasks satp)
 *   park     pc-only traces followed through __switch_to (park.h), with
 *            matching when several user binaries are candidates
 *   match    pc-only traces without a kernel to follow: a task per
 *            candidate binary, chosen by the control flow it can produce
 *   bin      traces with instruction bits but nothing else to tell
 *            processes by: a task per user binary, chosen by address
 *
 * The driver (recon/) calls a tracker only at control-flow events that need
 * it (calls into the kernel, returns, traps returning to user space,
 * mismatches in user code, batch ends), never per instruction; an operation
 * left NULL is not called. Trackers in turn change the stack only through
 * the driver's services (struct tracker_services), and read the run's
 * shared state in struct tracker_run. Without any tracker (no way of telling
 * tasks apart) each hart runs one task with no process frame.
 *
 * Not thread-safe: one tracker per reconstruction.
 */
#ifndef OOB_TRACKER_H
#define OOB_TRACKER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "flow/code.h"
#include "flow/stack.h"
#include "profile/frame.h"
#include "profile/profile.h"
#include "sym/sym.h"
#include "tasks/events.h"
#include "tasks/ids.h"
#include "tasks/proc.h"
#include "trace/trace.h"
#include "util/oob_mem.h"

/* One hart as the reconstruction runs it. The driver owns it; trackers
 * read it, and may change task and stk (the running task), low (to start
 * watching pops) and, through the services, the stack. What a tracker keeps
 * per hart it keeps itself (tracker_per_hart). */
struct tracker_hart {
	uint16_t id;
	int started;
	struct code_block *blk;
	uint32_t pos;
	uint64_t seq;	   /* records of this hart before the current batch */
	uint64_t last_seq; /* first record of the span not yet flushed */
	uint64_t first_cycle, last_cycle, end_cycle;
	uint8_t priv;	   /* privilege of the last record seen */
	int xret_deferred; /* an sret was cut short by a trap into the firmware */
	int cycles;	   /* the trace counts cycles */
	uint32_t low;	   /* lowest stack height popped to since a tracker set it */
	uint32_t run_base; /* stack height when the current user run began */
	struct task *task; /* running on this hart */
	struct stack *stk; /* the task's stack */
	uint64_t sp;	   /* register regime: the hart's sp before the current record, 0:
			      unknown (recon_sp.c) */
	uint64_t sp_seq;   /* 1 + the hart's record index of the last write of sp, 0: none */
};

/* Element id of a tracker's per-hart array *v (n elements of size elem),
 * grown with zeroed elements as needed. */
static inline void *tracker_per_hart(void **v, size_t *n, unsigned id, size_t elem)
{
	if (id >= *n) {
		*v = oob_xrealloc(*v, (id + 1) * elem);
		memset((char *)*v + *n * elem, 0, (id + 1 - *n) * elem);
		*n = id + 1;
	}
	return (char *)*v + id * elem;
}

struct tracker_run;

/* What the driver does for trackers: the stack operations of recon/. */
struct tracker_services {
	/* Charges the span up to record i to the top of the stack. */
	void (*flush)(struct tracker_run *r, struct tracker_hart *h, uint32_t i);
	void (*push)(struct tracker_run *r, struct tracker_hart *h, uint32_t frame, uint64_t ret,
		     uint32_t marker, int calls);
	void (*pop_to)(struct tracker_run *r, struct tracker_hart *h, uint32_t n);
	/* Pushes the task's process frame (if it has one). */
	void (*push_root)(struct tracker_run *r, struct tracker_hart *h);
	/* Pushes the bottom frame of code first seen running at b. */
	void (*push_base)(struct tracker_run *r, struct tracker_hart *h, struct code_block *b);
	/* Control reached nb from `from` without a call or a return. */
	void (*jump)(struct tracker_run *r, struct tracker_hart *h, const struct code_block *from,
		     struct code_block *nb, uint32_t i);
	/* The hart returns to nb from a trap: unwind to where nb belongs. */
	void (*resume)(struct tracker_run *r, struct tracker_hart *h, struct code_block *nb,
		       uint32_t i);
	/* The hart runs task key (made if new) from record i on. */
	void (*switch_task)(struct tracker_run *r, struct tracker_hart *h, uint64_t key,
			    uint32_t i);
	/* Stack events: every frame of the stack closes, or opens again (the
	 * running task's stack is put aside or taken up). */
	void (*close_all)(struct tracker_run *r, struct tracker_hart *h);
	void (*open_all)(struct tracker_run *r, struct tracker_hart *h);
	/* A new user code space over syms (taken). */
	struct code_space *(*space_new)(struct tracker_run *r, struct sym_space *syms);
};

/* The state of one reconstruction that trackers read and change. */
struct tracker_run {
	const struct tracker_services *svc;
	struct frame_table frames;
	struct proc proc; /* the task table */
	struct profile_stats st;
	struct sym_binary **bins;
	size_t nbins;
	/* Address spaces: kernel code (the upper half; vmlinux) is one, user code
	 * one per group of user binaries that do not overlap. */
	struct sym_space **syms; /* [0] kernel, [1..] user */
	struct code_space **spaces;
	size_t nspaces;
	const struct trace_batch *b; /* the batch being processed */
	uint64_t gseq;		     /* records of all harts before it */
};

struct tracker;

/* One way of telling tasks apart. `h` is the hart the event is on; `i`
 * the index of the record in r->b where it happens. */
struct tracker_ops {
	const char *source; /* the profile's proc_source */
	/* The key of the task a new hart starts in. */
	uint64_t (*hart_key)(struct tracker *t);
	/* The hart's first record, b->pc[i]: may pick the task it runs. */
	void (*on_start)(struct tracker *t, struct tracker_hart *h, const struct trace_batch *b,
			 uint32_t i);
	/* A batch begins (r->b is set). */
	void (*on_batch)(struct tracker *t, struct tracker_hart *h);
	/* The first record at or after s before which the tracker acts (a
	 * switch, a sideband event), or r->b->n; then on_stop at that record. */
	uint32_t (*next_stop)(struct tracker *t, struct tracker_hart *h, uint32_t s);
	void (*on_stop)(struct tracker *t, struct tracker_hart *h, uint32_t e);
	/* Kernel function frame was entered by a call (indirect: through a register). */
	void (*on_call)(struct tracker *t, struct tracker_hart *h, uint32_t frame, int indirect);
	/* A ret lands at land, before the stack unwinds. */
	void (*on_return)(struct tracker *t, struct tracker_hart *h, uint64_t land, uint32_t i);
	/* A ret lands at land, which no frame of the top segment returns to:
	 * the tracker may correct return addresses it only guessed (returns 1:
	 * the stack changed), before the flow rules repair anything. */
	int (*on_ret_miss)(struct tracker *t, struct tracker_hart *h, uint64_t land);
	/* frame returned to exactly the address its caller expected. */
	void (*on_exit_frame)(struct tracker *t, struct tracker_hart *h, uint32_t frame);
	/* A task named by its thread function (task.fn_named) jumps to frame. */
	void (*on_jump)(struct tracker *t, struct tracker_hart *h, uint32_t frame);
	/* A trap return landed at nb, the stack popped to the trap's marker. */
	void (*on_trap_return)(struct tracker *t, struct tracker_hart *h, struct code_block *nb,
			       uint32_t i);
	/* A trap return to user code at nb: returns the block of the code that
	 * runs there (another space's, when the tracker tells). */
	struct code_block *(*on_user_entry)(struct tracker *t, struct tracker_hart *h,
					    struct code_block *nb, uint32_t i);
	/* User code led to user code nb that the running binary cannot have
	 * produced: the block of the binary that takes over, or NULL (a trap). */
	struct code_block *(*on_mismatch)(struct tracker *t, struct tracker_hart *h,
					  struct code_block *nb, uint32_t i);
	/* The trace ended (before the harts' last spans are flushed). */
	void (*finish)(struct tracker *t);
	void (*free)(struct tracker *t);
};

struct tracker {
	const struct tracker_ops *ops;
	struct tracker_run *run;
};

/*
 * Constructors; each returns NULL when its way does not apply (said below),
 * and the caller frees with t->ops->free. kernel: the vmlinux (or NULL),
 * bias its load bias, kspace the kernel code space id.
 */
/* Sideband events, taken (the tracker frees them). Never NULL. */
struct tracker *tracker_events_new(struct tracker_run *r, struct events *ev);
/* Tasks derived from the kernel: needs r->proc enabled (kernel + registers). */
struct tracker *tracker_derived_new(struct tracker_run *r);
/* Address spaces: needs r->proc set up by proc_init_satp. */
struct tracker *tracker_satp_new(struct tracker_run *r);
/* pc-only traces with a kernel that has __switch_to; matching: several
 * candidate user binaries and no instruction bits. */
struct tracker *tracker_park_new(struct tracker_run *r, const struct sym_binary *kernel,
				 uint64_t bias, unsigned kspace, int matching);
/* A task per candidate binary, matched by control flow. Never NULL. */
struct tracker *tracker_match_new(struct tracker_run *r);
/* A task per user binary, by address. Never NULL. */
struct tracker *tracker_bin_new(struct tracker_run *r);

#endif
