/*
 * waits: off-CPU time, wake-ups and the critical path (RECONSTRUCTION.md 15),
 * rebuilt from a reconstruction's stack events (evlog.h) and its profile,
 * from the kernel's scheduler functions as they appear in the stacks.
 *
 * A task blocks when its __schedule calls deactivate_task and the task is
 * then switched out (its process frame closes on the hart); the wait ends
 * when it is switched in again. A wake-up is a try_to_wake_up that calls
 * ttwu_do_activate or, inlined, activate_task (or a sched_ttwu_pending that
 * does, for a wake queued by ttwu_queue_wakelist on another hart). Which
 * task a wake-up woke is not in a pc-only trace: a blocked task's waker is
 * the one activation made between its deactivation and its return that no
 * other wait took; when there are several, see match_wakers. A task's first
 * run comes from the oldest wake_up_new_task not yet followed by one.
 *
 * Times are on the timeline's axis (timeline.h): cycles when the profile has
 * them, else the global record index. Tasks are named by their process frame
 * (profile_process). Plain functions over caller-owned data.
 */
#ifndef OOB_WAITS_H
#define OOB_WAITS_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "recon/evlog.h"
#include "util/oob_err.h"

#define WAITS_NONE  UINT32_MAX
#define WAITS_SPAWN 0x80000000u

/* A stack: frame ids, bottom (the process frame) first. */
struct waits_stack {
	uint32_t *v;
	uint32_t n;
};

/* A wake-up: a task put back on a run queue. */
struct waits_wake {
	uint64_t t;		  /* ttwu_do_activate's entry */
	uint64_t at;		  /* try_to_wake_up's entry: the waker ran then */
	unsigned hart;		  /* where it was activated */
	uint32_t waker;		  /* process frame of the waking task */
	struct waits_stack stack; /* the waker's stack at try_to_wake_up's entry */
	uint8_t irq;		  /* that stack is in an interrupt handler */
	uint8_t remote;		  /* queued on another hart, activated on this one */
	uint32_t wait;		  /* the wait it ended, WAITS_NONE: none known */
};

/* A blocked interval of one task. */
struct waits_wait {
	uint32_t task; /* process frame */
	unsigned hart_out, hart_in;
	uint64_t deact;		  /* deactivate_task's entry */
	uint64_t out, in;	  /* switched out; switched in again */
	struct waits_stack stack; /* the task's stack at __schedule's entry */
	uint32_t wake;		  /* index in waits.wakes, WAITS_NONE: unknown */
	uint8_t ambiguous;	  /* several activations could have been its waker */
};

/* A running interval of one task on one hart. */
struct waits_run {
	uint32_t task;
	unsigned hart;
	uint64_t in, out;
	uint32_t wait_before; /* the wait it ended, WAITS_NONE: a preemption or the start */
	uint32_t spawn;	      /* a first run: the fork (index in waits.spawns) it began from */
};

struct waits_counts {
	uint64_t waits, woken_exact, woken_ambiguous, no_waker;
	uint64_t unended; /* blocks with no return before the trace's end (exits) */
	uint64_t wakes, wakes_unmatched, remote_wakes;
};

struct waits {
	int cycles; /* the axis: 1 cycles, 0 the record index */
	struct waits_wait *waits;
	size_t nwaits;
	struct waits_wake *wakes;
	size_t nwakes;
	struct waits_wake *spawns; /* wake_up_new_task calls: the forking task and its stack;
				      .wait is the first run it began (WAITS_NONE: none) */
	size_t nspawns;
	struct waits_run *runs; /* per task in time order; tasks in first-run order */
	size_t nruns;
	struct waits_counts counts;
};

/* The waits of the run that made log and p. -ENOENT when the profile has no
 * tasks or no scheduler functions (no vmlinux, a user-only trace); -EFBIG for
 * a capped log; errors of evlog_replay. *out freed with waits_free. */
int waits_build(struct evlog *log, const struct profile *p, struct waits **out,
		struct oob_err *err);
void waits_free(struct waits *w);

/* The process frame of pid in p, or WAITS_NONE. */
uint32_t waits_task_of_pid(const struct profile *p, int64_t pid);
/* The process frame named by s: a pid ("23"), or the name of a task's root
 * frame for a task without one ("waits [task 21]"); WAITS_NONE if none. */
uint32_t waits_task_named(const struct profile *p, const char *s);

/*
 * The off-CPU profile: the stacks at the blocks (those of task, or all with
 * task WAITS_NONE), weighted by the time blocked (instructions and, with
 * cycles, cycles: the axis), calls = the number of blocks. p's frames and
 * processes. NULL and err on failure.
 */
struct profile *waits_offcpu_profile(const struct waits *w, const struct profile *p, uint32_t task,
				     struct oob_err *err);

/* One step of a critical path, latest first. */
enum waits_step_kind {
	WAITS_RUNNING = 0, /* the task ran on hart */
	WAITS_RUNNABLE,	   /* woken or preempted, waiting for a hart */
	WAITS_BLOCKED,	   /* blocked with no waker known: the path stays on the task */
	WAITS_INTERRUPT,   /* woken from an interrupt: the path ends there */
};

struct waits_step {
	uint8_t kind;
	uint32_t task;
	unsigned hart;
	uint64_t from, to;
	uint32_t wake; /* RUNNING ended by waking the next step's task: that wake, or
			  WAITS_SPAWN | the fork that made it (waits.spawns) */
	uint32_t wait; /* RUNNABLE / BLOCKED / INTERRUPT: the wait */
};

struct waits_path {
	struct waits_step *v;
	size_t n;
};

/*
 * The critical path of task over [from, to) (to == 0: the end): from the
 * task's last running moment in the window backwards, its running
 * intervals, and at each wait the waker's running up to the wake-up, and so
 * on across tasks and harts until from or a task's first run. Steps latest
 * first. -ENOENT for a task that never ran in the window.
 */
int waits_critical_path(const struct waits *w, uint32_t task, uint64_t from, uint64_t to,
			struct waits_path *out, struct oob_err *err);
void waits_path_free(struct waits_path *pth);

#endif
