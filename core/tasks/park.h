/*
 * park: whose kernel stack resumes after a context switch, in traces that do
 * not say (pc and instruction bits only: QEMU's plugin, TracerV; no
 * registers, no satp, no sideband events). DESIGN.md 4.3.
 *
 * Linux switches tasks in __switch_to: it saves the old task's ra and sp and
 * returns on the next task's. So a task that enters __switch_to is "parked"
 * with its whole shadow stack (process, user frames, trap marker, kernel
 * frames down to __switch_to); the `ret` out of __switch_to lands either on
 * ret_from_fork / ret_from_kernel_thread (a new task's first run) or on the
 * return address of some parked task. Parked tasks that all slept in
 * schedule() share that return address, so the choice is provisional: the
 * resumed task's next returns must match its saved return addresses, and its
 * return to user space must land where it trapped (the instruction the trace
 * showed last, or the next one), or at a program's entry point after an
 * exec. When they do not and another candidate's stack does, the candidates
 * are swapped. Among equals, a task parked on this hart goes first.
 *
 * On several harts the records must come in the order they ran (one
 * interleaved trace, or files merged by cycle: trace_merge.h): a task parked
 * on one hart may resume on another.
 *
 * The scheduler says one thing more: __schedule calls pick_next_task_idle
 * exactly when the next task is the CPU's idle task, which never migrates.
 * So a switch after that call resumes this hart's idle task, and any other
 * switch resumes a task that is not idle (idle tasks and other sleepers can
 * wait on the same call chain).
 *
 * Pids: Linux hands them out in order, one per alloc_pid() call, so counting
 * those calls numbers the tasks exactly; a new task takes the oldest pending
 * clone of its kind (kernel thread or fork). A fork child starts with a copy
 * of its parent's user frames; an exec (begin_new_exec) replaces them at the
 * next return to user space, where the binary that runs names the task.
 * Kernel threads are named by their thread function, "[kthread: fn]": their
 * comm is formatted into memory a pc-only trace does not show.
 *
 * Nothing here is for one kernel build: the functions are found by name in
 * the vmlinux given to the job.
 */
#ifndef OOB_PARK_H
#define OOB_PARK_H

#include <stddef.h>
#include <stdint.h>

#include "profile/frame.h"
#include "tasks/proc.h"
#include "flow/stack.h"
#include "sym/sym.h"

/* Frames of the kernel functions that say what the scheduler did. */
struct park_hooks {
	uint32_t switch_to;			  /* __switch_to: the context switch */
	uint32_t alloc_pid;			  /* one call per new pid, in order */
	uint32_t kernel_thread, user_mode_thread; /* their clones start kernel threads */
	uint32_t kthreadd, kthread;		  /* the functions of kernel_thread()'s children */
	uint32_t kthread_start;			  /* ret_from_kernel_thread: jumps to it */
	uint32_t new_exec, dead;		  /* begin_new_exec, do_task_dead (else do_exit) */
	uint32_t schedule, pick_idle;		  /* __schedule, pick_next_task_idle */
	uint64_t fork_entry, kthread_entry;	  /* ret_from_fork, ret_from_kernel_thread */
};

/* How a task was cloned: its first run and thread function tell. */
enum park_kind {
	PARK_FORK,	  /* fork/clone from user space: first runs in ret_from_fork */
	PARK_KTHREAD,	  /* kernel_thread(): kthreadd, or kthread() for kthreadd's children */
	PARK_USER_THREAD, /* user_mode_thread(): kernel_init, usermode helpers (they exec) */
};

/* A clone whose child has not run yet. */
struct park_clone {
	int64_t pid; /* -1: several clones of its kind could be this one */
	struct task *parent;
	enum park_kind kind;
	int ambiguous;
	int64_t born;		  /* the pid alloc_pid gave it (counted), -1: not counted */
	struct stack_entry *user; /* the parent's user frames and trap marker */
	uint32_t nuser;
};

/* A fork child that took the first of several pending clones: its user
 * frames are a guess until a return tells (park_guess_fix). */
struct park_guess {
	struct task *t;
	struct park_clone cl; /* the clone it runs as, for now */
};

struct park {
	int enabled;
	struct park_hooks hk;
	struct task **parked; /* oldest first, at most PARK_MAX */
	size_t nparked, cap_parked;
	uint64_t evicted; /* parked tasks dropped to stay within PARK_MAX */
	uint64_t capped;  /* new tasks not made: PARK_MAX_TASKS reached */
	struct park_clone *clones;
	size_t nclones, cap_clones;
	struct park_guess *guesses;
	size_t nguesses, cap_guesses;
	struct park_clone *sibs; /* copies of the fork clones taken on a guess */
	size_t nsibs, cap_sibs;
	int64_t last_pid;
	int from_boot;	 /* the trace starts before the kernel: pids can be counted */
	uint64_t ntasks; /* tasks made here: their keys */
};

/* Per hart: the task resumed last and what it was when parked, until its
 * returns and its return to user space confirm the choice. */
struct park_resume {
	int active;
	struct task **cands; /* the other tasks parked with the same return address */
	size_t ncands, cap_cands;
	struct stack_entry *ref; /* the running task's stack when it was parked */
	uint32_t nref, cap_ref;
	uint32_t popped; /* entries of ref popped since the resume */
	/* the running task's signal work (struct task's sig_frames,
	 * sig_return) when parked: the kernel can set up a signal frame, or
	 * run rt_sigreturn, and then switch before the return to user */
	uint32_t sig_frames;
	int sig_return;
};

/* What the kernel did for signals in a task's kernel stay, up to now. */
struct park_sig {
	uint32_t frames; /* signal frames set up */
	int ret;	 /* rt_sigreturn ran */
};

/* Tasks parked at once, at most: a switch looks at each of them. */
#define PARK_MAX 4096

/* Tasks park makes, at most (each has a stack): past that, a switch to a
 * task never seen keeps the running one. */
#define PARK_MAX_TASKS 65536

/* Finds the hooks in the kernel ELF (bias: its load bias; kspace: the kernel
 * code space id). Enabled only if __switch_to and ret_from_fork exist. */
void park_init(struct park *pk, struct frame_table *ft, const struct sym_binary *kernel,
	       uint64_t bias, unsigned kspace);
void park_destroy(struct park *pk);
void park_resume_destroy(struct park_resume *rs);

/* Parks t, which ran on hart (not if it exited). */
void park_put(struct park *pk, struct task *t, uint16_t hart);
void park_take(struct park *pk, const struct task *t);

/* Fills rs->cands with the live parked tasks that __switch_to returns to at
 * land; returns how many. Those parked on hart come first: Linux keeps a
 * task on its CPU when it can, and per-CPU kernel threads always, while
 * their sleeping stacks can be the same to the last frame. With idle set
 * (the scheduler picked the idle task) only hart's idle task is a
 * candidate, if it is known; without, idle tasks are not. */
size_t park_find(struct park *pk, uint64_t land, uint16_t hart, int idle, struct park_resume *rs);

/* Puts the likeliest candidate first: the one whose return addresses, from
 * the top down, the next n pcs of the trace land on first. A pc equal to a
 * return address for another reason can mislead it; the resume stays
 * provisional either way. */
void park_guess(struct park_resume *rs, const uint64_t *pc, size_t n);

/* Starts a provisional resume of s (popped: entries already popped). */
void park_begin(struct park_resume *rs, const struct stack *s, uint32_t popped);
/* Marks what t had done for signals when parked (rs->sig_*): what it does
 * from now on is the resume's (park_sig_if). */
void park_begin_sig(struct park_resume *rs, const struct task *t);

/* The signal work of candidate c's stay if c is the one running instead
 * of run: c's own from before it parked, and run's since the resume. */
struct park_sig park_sig_if(const struct park_resume *rs, const struct task *run,
			    const struct task *c);

/* Puts the stack the running task had when parked back into s. */
void park_restore(const struct park_resume *rs, struct stack *s);

/* 1 if t's top rs->popped frames are those popped from the running task. */
int park_same_popped(const struct park_resume *rs, const struct task *t);

/* 1 if t may be the task whose frame at ref slot `slot` (rs->ref[slot], or
 * a function a tail call put in its place with its return address) just
 * returned to land: t's stack, aligned with rs->ref at the top, has ref's
 * frames from slot up, and its frame at slot returns to land. */
int park_returns_to(const struct park_resume *rs, const struct task *t, uint32_t slot,
		    uint64_t land);

/* The running task t's frame at ref slot `slot` returned where it should,
 * to land: the candidates that would not have gone there drop out (a swap
 * must fit every return seen since the resume). */
void park_narrow(struct park_resume *rs, const struct task *t, uint32_t slot, uint64_t land);

/* t resumes (or is swapped in) among rs's candidates. Those whose stacks
 * are the same as t's above the process frame (frames, return addresses,
 * markers; the same user code and exec state) are look-alikes: no pc the
 * trace shows from now on tells which of them runs, so what only tells them
 * apart becomes unknown on t and on each look-alike that differs from it:
 * pid -1, parent none. Returns 1 if anything became unknown. */
int park_lookalikes_merge(const struct park_resume *rs, struct task *t);

/* Records an alloc_pid() call by parent (its stack s): the next pid. */
void park_clone_note(struct park *pk, struct task *parent, const struct stack *s);
/* Takes the oldest pending clone of that kind; 0 if there is none. Siblings
 * pending together are interchangeable to a pc-only trace: then the pid is
 * -1 (and stays unknown for the rest of them), and the parent is kept only
 * if they all share it. */
int park_clone_take(struct park *pk, enum park_kind kind, struct park_clone *out);
/* t runs as clone cl, taken while others of its kind were pending: keeps
 * it (and its user frames) so that a return can correct the guess. */
void park_guess_note(struct park *pk, struct task *t, struct park_clone *cl);
/* t's top cloned frame returns to land, where its guessed clone's does not:
 * if a sibling clone (taken on a guess, or pending) with the same frames
 * returns there, t's cloned frames get its return addresses, and its pid
 * and parent when it is the only clone that returns there. Returns 1 if t's
 * stack changed. */
int park_guess_fix(struct park *pk, struct task *t, uint64_t land);

#endif
