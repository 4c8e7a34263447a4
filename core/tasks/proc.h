/*
 * proc: the tasks of a traced system, rebuilt out of band (DESIGN.md 3.3, 4.3).
 *
 * Each task owns a shadow stack whose bottom entry is the task's process frame,
 * so that stacks print as `process;user frames;[trap: ecall];kernel frames`
 * and a task's kernel stack survives while other tasks run.
 *
 * Where the trace carries register writebacks (Spike commit logs, oobt), tasks
 * are derived from the kernel itself, with nothing hard-coded for one build:
 *  - identity: RISC-V Linux keeps `current` in tp while in the kernel, so a
 *    kernel-pointer write to tp (x4) is the exact point of a context switch
 *    (`__switch_to`) and names the task by its task_struct address;
 *  - pids: copy_process returns the new task_struct, kernel_clone its pid;
 *  - exec: do_execveat_common's struct filename names the program; the task's
 *    user code is then the ELF of that name;
 *  - names and pids at the end: task_struct.pid/.comm/.real_parent read from a
 *    shadow memory built from the stores and loads the trace shows, at the
 *    offsets the kernel's DWARF gives (libdw).
 * Where the trace shows satp writes (Spike commit logs), tasks can instead be
 * address spaces (--tasks satp): each satp value is a task, a write of
 * another value is a switch, and its user binary is found by matching the
 * trace's instruction bits against the candidate ELFs. Cruder than derived
 * tasks (kernel threads run on a borrowed address space; no pids), but it
 * needs nothing from the kernel. Derived tasks record the satp values their
 * user code ran under, so the two sources can be checked against each other.
 * Without register writebacks there is one task per hart and no process frame.
 *
 * Not thread-safe: one per reconstruction.
 */
#ifndef OOB_PROC_H
#define OOB_PROC_H

#include <stdint.h>

#include "flow/code.h"
#include "profile/frame.h"
#include "util/oob_map.h"
#include "profile/profile.h"
#include "flow/stack.h"
#include "sym/sym.h"
#include "tasks/ids.h"
#include "trace/trace.h"

/* Index of the trap marker where a task's user frames end (the lowest one:
 * those above it are traps taken in the kernel), or -1 if the stack has
 * none (a kernel thread, a task in user space). */
static inline int64_t proc_user_marker(const struct stack *s)
{
	for (uint32_t k = 1; k < s->n; k++)
		if (s->v[k].marker && s->v[k].marker != IDS_MARK_ROOT)
			return k;
	return -1;
}

#define PROC_CSR_SATP 0x180

struct proc_exec {
	char *path;
	uint64_t when; /* cycle, or instruction index without cycles */
};

/*
 * A task's name: the kernel's comm (at most 15 bytes, TASK_COMM_LEN) where
 * the trace tells it, else what does tell it exactly, such as a kernel
 * thread's thread function: "[kthread: worker_thread]" (park.h).
 */
#define PROC_COMM_SIZE 48

struct task {
	uint32_t idx;	 /* index in the table, 0-based */
	uint64_t key;	 /* task_struct address, 0 while unknown */
	int64_t pid;	 /* -1 while unknown */
	uint64_t parent; /* key of the parent task, 0 if unknown */
	char comm[PROC_COMM_SIZE];
	struct stack stk;
	struct code_space *ucs; /* user code: a space per user binary */
	uint32_t root_frame;	/* PROFILE_FRAME_PROCESS frame, FRAME_NONE without processes */
	int exec_pending;	/* exec'd: the user stack goes at the next return to user */
	int ucs_known;		/* ucs was chosen (exec, or matched), not inherited */
	int dead;		/* entered do_task_dead: never resumed (park.h) */
	int fn_named;		/* a kernel thread named by its thread function (park.h) */
	uint64_t exec_at;	/* when begin_new_exec ran (park.h) */
	uint16_t hart;		/* the hart it was parked on last (park.h) */
	int idle;		/* the idle task of that hart (park.h) */
	uint64_t insns[2], cycles[2]; /* [0] user, [1] kernel */
	uint64_t start, end;	      /* first and last time seen (cycle or insn index) */
	struct proc_exec *execs;
	size_t nexecs, cap_execs;
	uint64_t *satps; /* address spaces its user code ran in, in order seen */
	size_t nsatps, cap_satps;
	/* signals in full-system traces (RECONSTRUCTION.md 3.5), since the last
	 * return to user: frames the kernel set up, rt_sigreturn ran */
	uint32_t sig_frames;
	int sig_return;
};

struct proc_hooks {
	uint32_t clone, copy_process, execve, exit;	   /* kernel frames, FRAME_NONE if absent */
	uint64_t off_pid, off_comm, off_parent, off_fname; /* DWARF; UINT64_MAX if unknown */
};

struct proc {
	int enabled; /* tasks are tracked (process frames) */
	int by_satp; /* tasks are address spaces: satp writes are the switches */
	struct task **tasks;
	size_t ntasks, cap_tasks;
	struct oob_map by_key; /* task_struct address -> index */
	struct frame_table *frames;
	struct proc_hooks hooks;
	/* shadow machine state, from the trace's writebacks */
	uint64_t (*regs)[33]; /* per hart: x0..x31, then satp (PROC_REG_SATP) */
	size_t nregs;
	struct oob_map mem;  /* 8-byte aligned address -> value */
	uint64_t mem_cap;    /* entries kept at most */
	uint32_t xi;	     /* extras cursor in the current batch */
	uint64_t last_clone; /* task_struct copy_process returned last */
	uint64_t switches;
};

#define PROC_REG_SATP 32

/* Sets up hooks from the kernel ELF (may be NULL) for a trace with these
 * fields (TRACE_F_*). Never fails: missing pieces disable what needs them. */
void proc_init(struct proc *p, struct frame_table *ft, const struct sym_binary *kernel,
	       uint64_t kernel_bias, unsigned kspace, unsigned trace_fields);
/* Tasks are address spaces instead (needs register writebacks); no hooks. */
void proc_init_satp(struct proc *p, struct frame_table *ft, unsigned trace_fields);

void proc_destroy(struct proc *p);

/* Notes that t runs user code on this hart now: keeps the satp in force. */
void proc_note_space(struct task *t, uint64_t satp);
static inline void proc_note_user(struct proc *p, struct task *t, unsigned hart)
{
	uint64_t s = hart < p->nregs ? p->regs[hart][PROC_REG_SATP] : 0;
	if (s && (!t->nsatps || t->satps[t->nsatps - 1] != s))
		proc_note_space(t, s);
}

/* A new task (process frame named later), with its stack ready. */
struct task *proc_task_new(struct proc *p, uint64_t key, struct code_space *ucs);
/* The task with this task_struct address, or NULL. */
struct task *proc_task_find(struct proc *p, uint64_t key);

/* Applies the register and memory writebacks of records [.., upto) of b. */
void proc_apply(struct proc *p, const struct trace_batch *b, uint32_t upto);
/* Begins a new batch (resets the extras cursor). */
void proc_batch(struct proc *p, const struct trace_batch *b);
uint64_t proc_reg(const struct proc *p, unsigned hart, unsigned n);

/*
 * From record `from` of b, finds the first kernel write to tp that names a
 * task other than cur (a context switch): returns the index of the record
 * after it and its task_struct address in *key; b->n if there is none. A
 * first kernel tp value for a task whose key is unknown just names it.
 * With by_satp, the same for satp writes and address spaces.
 */
uint32_t proc_next_switch(struct proc *p, const struct trace_batch *b, uint32_t from,
			  struct task *cur, uint64_t *key);

/* Called by the reconstruction when cur enters / leaves a hooked function. */
void proc_on_call(struct proc *p, struct task *cur, unsigned hart, uint32_t frame, uint64_t when,
		  const struct code_space *const *spaces, size_t nspaces);
void proc_on_return(struct proc *p, struct task *cur, unsigned hart, uint32_t frame);

/* The user space whose program has path's basename, or NULL. */
struct code_space *proc_space_named(const struct code_space *const *spaces, size_t n,
				    const char *path);
/* Records an exec of path by t: name, history, user code, stack reset pending. */
void proc_exec(struct task *t, const char *path, uint64_t when,
	       const struct code_space *const *spaces, size_t nspaces);

/* Fills pids, names and parents from the shadow memory (call once, at the end). */
void proc_finish(struct proc *p);

#endif
