/*
 * The reconstruction loop (DESIGN.md 4).
 *
 * Per hart, the state is: the current code block and how many of its
 * instructions the trace has matched so far, and the shadow stack. The hot
 * loop compares trace pcs against the block's offsets; everything else
 * happens at block ends ("transition": the block's last instruction decides
 * what kind of control transfer happened) and at mismatches in the middle of
 * a block ("deviation": the only way straight-line code is left early is a
 * trap). Weights are flushed to the calling-context node on top of the
 * shadow stack only when that top changes, so the per-instruction cost is the
 * compare.
 *
 * Invariant kept when symbols are known: the top frame is the function that
 * contains the current pc. Calls push, returns pop (matching return
 * addresses), jumps and fall-throughs into another function replace the top
 * (a tail call when they land on its entry), traps push a marker and the
 * handler, trap returns pop to the marker.
 */
#include "recon/recon.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "profile/cct.h"
#include "tasks/events.h"
#include "flow/code.h"
#include "trace/fireperf.h"
#include "profile/frame.h"
#include "util/oob_log.h"
#include "util/oob_mem.h"
#include "tasks/park.h"
#include "tasks/proc.h"
#include "profile/profile_impl.h"
#include "flow/stack.h"
#include "sym/sym.h"
#include "trace/trace_merge.h"

/* What a trap interrupted right after a control transfer (stored in the
 * marker entry, completed by the trap return). A PENDING_NONE marker's ret
 * is the pc of the last instruction the trace shows before the trap, when
 * the trap returns to it or to the next one (a fault, an interrupt, ecall;
 * 0: not known); a PENDING_CALL marker's is the call's return address. */
enum { PENDING_NONE = 1, PENDING_CALL = 2 };

struct recon_hart {
	uint16_t id;
	int started;
	struct code_block *blk;
	uint32_t pos;
	uint64_t seq;	   /* records of this hart before the current batch */
	uint64_t last_seq; /* first record of the span not yet flushed */
	uint64_t first_cycle, last_cycle, end_cycle;
	uint8_t priv;		/* privilege of the last record seen */
	uint64_t pending_key;	/* switch to this task at the next batch */
	uint64_t match_excl;	/* user spaces ruled out for the current user run */
	uint32_t run_base;	/* park + matching: stack height when the user run began */
	int idle_pick;		/* park: this __schedule picked the idle task */
	int xret_deferred;	/* an sret was cut short by a trap into the firmware */
	int run_exec;		/* ... and the run is a program's first (named by the match) */
	int cycles;		/* the trace counts cycles */
	struct task *task;	/* running on this hart */
	struct stack *stk;	/* the task's stack */
	struct park_resume res; /* a provisional resume of a parked task */
};

struct recon {
	const struct recon_opts *opts;
	struct frame_table frames;
	struct cct cct;
	struct sym_binary **bins;
	size_t nbins;
	/* Address spaces: kernel code (the upper half; vmlinux) is one, user code
	 * one per group of user binaries that do not overlap. */
	struct sym_space **syms; /* [0] kernel, [1..] user */
	struct code_space **spaces;
	size_t nspaces;
	struct code_chains chains;
	struct proc proc;
	uint64_t vector;  /* trap vector: learned from traps, or the kernel's entry symbol */
	uint64_t mvector; /* the firmware's (M-mode) trap vector, learned from the kernel's
			     traps into code of no ELF; 0 until seen */
	/* pc-only traces with several candidate user binaries: which one runs is
	 * found by matching (see match_enter); a task per binary. */
	int matching;
	/* Traces with instruction bits but nothing to tell processes by (no
	 * registers, no events) and several user binaries: user code runs on a
	 * task per binary, chosen by address at each return to user space, so
	 * that one stack never holds two programs' frames (bin_enter). */
	int bintasks;
	/* The same traces with a kernel that has __switch_to: tasks are
	 * followed through the context switches (park.h). */
	struct park park;
	struct events *events; /* sideband process events, or NULL */
	struct task **mtasks;  /* per space id, NULL until used */
	struct recon_hart *harts;
	size_t nharts;
	uint32_t max_depth;
	uint64_t gseq; /* records of all harts before the current batch */
	struct profile_stats st;
	uint32_t unknown_frame;
	const struct trace_batch *b; /* batch being processed */
	uint32_t xi;		     /* extras cursor in b */
	/* Direct-mapped filter in front of code_put: readers hand over the bits of
	 * every record, but they rarely change, and a compare is cheaper than a
	 * hash lookup per instruction. */
	struct {
		uint64_t pc;
		uint32_t bits;
		const struct code_space *cs;
	} * seen_bits;
	struct oob_map inl; /* --inline: (node << 32 | chain) -> instructions */
};

#define SEEN_BITS_LOG2 16

/* ---- weights and stack operations ---- */

/* The code space of pc for the task running on h. */
static inline struct code_space *space_of(struct recon *r, struct recon_hart *h, uint64_t pc)
{
	return pc >> 63 ? r->spaces[0] : h->task->ucs;
}

/* 1 if frame f is code in no ELF in the lower half (firmware, the vDSO, the
 * kernel before its MMU is on, a program not given). */
static int no_elf(const struct recon *r, uint32_t f)
{
	const struct frame *fr = &r->frames.v[f];
	return fr->kind == PROFILE_FRAME_USER && !fr->name && fr->space < r->nspaces &&
	       !sym_space_find(r->syms[fr->space], fr->addr);
}

/* Privileged time for the task's user/kernel split: kernel code, and code in
 * no ELF that runs above kernel frames (the kernel trapped into M-mode
 * firmware: SBI calls). Code in no ELF above user frames (the vDSO) or with
 * nothing below (a program not given; boot firmware, which cannot be told
 * from it) is user time. */
static int privileged(const struct recon *r, const struct stack *s)
{
	const struct stack_entry *top = &s->v[s->n - 1];
	uint8_t kind = r->frames.v[top->frame].kind;
	if (kind == PROFILE_FRAME_KERNEL)
		return 1;
	if (kind != PROFILE_FRAME_MARKER && !no_elf(r, top->frame)) /* [unknown] code: look below */
		return 0;
	for (uint32_t d = s->n - 1; d-- > 0;) {
		const struct frame *fr = &r->frames.v[s->v[d].frame];
		if (fr->kind == PROFILE_FRAME_KERNEL)
			return 1;
		if (fr->kind == PROFILE_FRAME_USER && !no_elf(r, s->v[d].frame))
			return 0;
	}
	return 0;
}

/* Charges the span since the last event to the top of the stack and to the
 * task (user or kernel time, by the top frame). */
static void charge(struct recon *r, struct recon_hart *h, uint64_t now, uint64_t cycle)
{
	/* A task's stack can be empty here only when another hart ran the same
	 * task and closed it (a migration the interleaving shows late): the
	 * span then goes to the root rather than nowhere. */
	const struct stack_entry *top = h->stk->n ? stack_top(h->stk) : NULL;
	struct cct_node *n = &r->cct.v[top ? top->node : CCT_ROOT];
	n->insns += now - h->last_seq;
	n->cycles += cycle - h->last_cycle;
	if (r->proc.enabled) {
		struct task *t = h->task;
		int k = top && privileged(r, h->stk);
		uint64_t when = h->cycles ? h->last_cycle : h->last_seq;
		t->insns[k] += now - h->last_seq;
		t->cycles[k] += cycle - h->last_cycle;
		if (!k)
			proc_note_user(&r->proc, t, h->id);
		if (t->start > when)
			t->start = when;
		t->end = h->cycles ? cycle : now;
	}
	h->last_seq = now;
	h->last_cycle = cycle;
}

static void flush(struct recon *r, struct recon_hart *h, uint32_t i)
{
	if (r->proc.enabled)
		proc_apply(&r->proc, r->b, i);
	charge(r, h, h->seq + i, r->b->cycle ? r->b->cycle[i] : h->last_cycle);
}

static void emit(struct recon *r, struct recon_hart *h, uint8_t kind, uint32_t depth, int calls)
{
	struct recon_event ev = {.kind = kind,
				 .calls = (uint8_t)calls,
				 .hart = h->id,
				 .frame = h->stk->v[depth - 1].frame,
				 .depth = depth,
				 .insn = h->last_seq,
				 .cycle = h->last_cycle,
				 .seq = r->gseq + (h->last_seq - h->seq)};
	r->opts->on_event(r->opts->event_ctx, &ev);
}

/* Pops the stack down to n entries (telling who listens). */
static void pop_to(struct recon *r, struct recon_hart *h, uint32_t n)
{
	struct park_resume *rs = &h->res;
	if (rs->active && n < rs->nref - rs->popped)
		rs->popped = rs->nref - n;
	if (r->opts->on_event)
		for (uint32_t d = h->stk->n; d > n; d--)
			emit(r, h, RECON_EV_CLOSE, d, 0);
	stack_truncate(h->stk, n);
}

static uint32_t top_node(struct recon_hart *h)
{
	return h->stk->n ? stack_top(h->stk)->node : CCT_ROOT;
}

/* Pushes frame as a callee of the top; calls counts an observed entry. */
static void push(struct recon *r, struct recon_hart *h, uint32_t frame, uint64_t ret,
		 uint32_t marker, int calls)
{
	if (h->stk->n >= r->max_depth) {
		r->st.repairs_depth++;
		return;
	}
	uint32_t node = cct_child(&r->cct, top_node(h), frame);
	r->cct.v[node].calls += (uint64_t)calls;
	stack_push(h->stk, frame, node, ret, marker);
	if (r->opts->on_event)
		emit(r, h, RECON_EV_OPEN, h->stk->n, calls);
}

/* Replaces the top frame (tail call when entered at its entry). */
static void replace_top(struct recon *r, struct recon_hart *h, uint32_t frame, int entered)
{
	uint64_t ret = stack_top(h->stk)->ret;
	pop_to(r, h, h->stk->n - 1);
	push(r, h, frame, ret, 0, entered);
	if (entered)
		r->st.tail_calls++;
}

static void push_root(struct recon *r, struct recon_hart *h)
{
	if (h->task->root_frame != FRAME_NONE)
		push(r, h, h->task->root_frame, STACK_RET_NONE, PROC_MARK_ROOT, 0);
}

/* The bottom frame of a task first seen running the code of block b. */
static void push_base(struct recon *r, struct recon_hart *h, struct code_block *b)
{
	uint32_t f = b->func != FRAME_NONE || b->map ? code_frame_at(b) : r->unknown_frame;
	push(r, h, f, STACK_RET_NONE, 0, 0);
}

static void park_kthread(struct recon *r, struct recon_hart *h, uint32_t f);

/* 1 if going from block from to nb keeps the top frame (see jump). */
static inline int same_frame(const struct code_block *from, const struct code_block *nb,
			     uint32_t top)
{
	if (nb->func == FRAME_NONE)
		return nb->map == from->map || !nb->map;
	return nb->func == top;
}

/* Control reached block nb by a jump or a fall-through from block from.
 * Landing in another function (by the symbols) or, where there are no
 * symbols, in another binary (a PLT trampoline jumping into ld.so) replaces
 * the top frame: a tail call when it lands on an entry. */
static void jump(struct recon *r, struct recon_hart *h, const struct code_block *from,
		 struct code_block *nb, uint32_t i)
{
	if (same_frame(from, nb, stack_top(h->stk)->frame))
		return;
	uint32_t f = nb->func != FRAME_NONE ? nb->func : code_frame_at(nb);
	flush(r, h, i);
	r->st.events++;
	if (h->task->fn_named && stack_top(h->stk)->frame == r->park.hk.kthread_start)
		park_kthread(r, h, f);
	if (stack_top(h->stk)->marker) /* a root or trap marker is never replaced */
		push(r, h, f, STACK_RET_NONE, 0, 0);
	else
		replace_top(r, h, f, nb->func == FRAME_NONE || nb->start == nb->entry);
}

static void park_on_call(struct recon *r, struct recon_hart *h, uint32_t f, int indirect);

/* Function nb was entered by a call (returning to ret): push it and tell
 * the task trackers, which hook kernel functions. */
static void enter(struct recon *r, struct recon_hart *h, struct code_block *nb, uint64_t ret,
		  int indirect)
{
	r->st.calls++;
	uint32_t f = code_frame_at(nb);
	push(r, h, f, ret, 0, 1);
	if (r->proc.enabled && nb->kernel)
		proc_on_call(&r->proc, h->task, h->id, f, h->cycles ? h->last_cycle : h->last_seq,
			     (const struct code_space *const *)r->spaces + 1, r->nspaces - 1);
	if (r->park.enabled && nb->kernel)
		park_on_call(r, h, f, indirect);
}

static void call(struct recon *r, struct recon_hart *h, struct code_block *nb, uint64_t ret,
		 uint32_t i, int indirect)
{
	flush(r, h, i);
	r->st.events++;
	enter(r, h, nb, ret, indirect);
}

/* Makes the function at nb the new bottom of the top segment, with no entry
 * seen (the trace started inside it, or its caller is unknown). */
static void rebase(struct recon *r, struct recon_hart *h, struct code_block *nb, int unknown)
{
	pop_to(r, h, stack_segment_base(h->stk));
	if (unknown)
		push(r, h, r->unknown_frame, STACK_RET_NONE, 0, 0);
	uint32_t f = nb->func != FRAME_NONE ? nb->func : code_frame_at(nb);
	push(r, h, f, STACK_RET_NONE, 0, 0);
}

/*
 * A return whose target matches no pending return address is a non-local
 * exit (longjmp, exception unwinding): unwind to the innermost frame of the
 * function that contains the target. Returning from the bottom frame goes
 * above where the trace started. Anything else is lost track of: start over
 * under [unknown]. Every repair is counted.
 */
static void park_switch(struct recon *r, struct recon_hart *h, uint64_t land, uint32_t i);
static void park_recheck(struct recon *r, struct recon_hart *h, uint64_t land);

static void ret(struct recon *r, struct recon_hart *h, struct code_block *nb, uint32_t i)
{
	flush(r, h, i);
	r->st.events++;
	r->st.returns++;
	if (r->park.enabled) {
		const struct stack_entry *top = stack_top(h->stk);
		if (top->frame == r->park.hk.switch_to && !top->marker)
			park_switch(r, h, nb->start, i);
		else if (h->res.active)
			park_recheck(r, h, nb->start);
	}
	uint32_t base = stack_segment_base(h->stk);
	int64_t at = stack_find_ret(h->stk, nb->start);
	if (at >= 0) {
		if ((uint32_t)at != h->stk->n - 1)
			r->st.repairs_unwind++;
		else if (r->proc.enabled)
			proc_on_return(&r->proc, h->task, h->id, h->stk->v[at].frame);
		pop_to(r, h, (uint32_t)at);
		if (h->stk->n > base)
			jump(r, h, nb, nb, i); /* returned into another function: resync the top */
		else
			rebase(r, h, nb, 0);
	} else if (nb->func != FRAME_NONE && (at = stack_find_frame(h->stk, nb->func)) >= 0 &&
		   (uint32_t)at < h->stk->n - 1) {
		r->st.repairs_unwind++;
		pop_to(r, h, (uint32_t)at + 1);
	} else if (nb->func != FRAME_NONE && nb->start == nb->entry && !stack_top(h->stk)->marker) {
		/* Landing on an entry that no frame returns to: a jump through a
		 * register that the hint table reads as a return (Linux's
		 * exception dispatch, `jr t0`). A tail call. */
		r->st.returns--;
		replace_top(r, h, nb->func, 1);
	} else if (h->stk->n - 1 == base && h->stk->v[base].ret == STACK_RET_NONE) {
		r->st.returns_above++;
		rebase(r, h, nb, 0);
	} else {
		r->st.repairs_unknown++;
		rebase(r, h, nb, 1);
	}
}

/* ---- traps ---- */

static int priv_rises(struct recon *r, struct recon_hart *h, uint32_t i)
{
	const uint8_t *p = r->b->priv;
	if (!p)
		return 0;
	uint8_t before = i ? p[i - 1] : h->priv;
	return p[i] > before;
}

static const char *cause_name(uint64_t cause)
{
	static const char *const exc[16] = {"[trap: insn_misaligned]",
					    "[trap: insn_access_fault]",
					    "[trap: illegal_insn]",
					    "[trap: ebreak]",
					    "[trap: load_misaligned]",
					    "[trap: load_access_fault]",
					    "[trap: store_misaligned]",
					    "[trap: store_access_fault]",
					    "[trap: ecall]",
					    "[trap: ecall]",
					    "[trap: hypervisor_ecall]",
					    "[trap: ecall]",
					    "[trap: insn_page_fault]",
					    "[trap: load_page_fault]",
					    "[trap]",
					    "[trap: store_page_fault]"};
	static const char *const irq[12] = {
	    "[irq: software]", "[irq: software]", "[irq]", "[irq: software]",
	    "[irq: timer]",    "[irq: timer]",	  "[irq]", "[irq: timer]",
	    "[irq: external]", "[irq: external]", "[irq]", "[irq: external]"};
	if (cause >> 63)
		return (cause & 0xff) < 12 ? irq[cause & 0xff] : "[irq]";
	return cause < 16 ? exc[cause] : "[trap]";
}

/* The trap cause recorded by the trace for record i (TRACE_X_TRAP), if any. */
static const char *trace_cause(struct recon *r, uint32_t i)
{
	const struct trace_batch *b = r->b;
	while (r->xi < b->nx && b->x[r->xi].idx < i)
		r->xi++;
	for (uint32_t k = r->xi; k < b->nx && b->x[k].idx == i; k++)
		if (b->x[k].kind == TRACE_X_TRAP)
			return cause_name(b->x[k].val);
	return NULL;
}

/* Names the trap from the instruction that was due to run at pc. */
static const char *insn_cause(struct recon *r, struct recon_hart *h, uint64_t pc)
{
	uint32_t bits;
	struct rv_insn in;
	if (!code_fetch(space_of(r, h, pc), pc, &bits))
		return "[trap]";
	rv_decode(bits, &in);
	if (in.kind == RV_ECALL)
		return "[trap: ecall]";
	if (in.kind == RV_EBREAK)
		return "[trap: ebreak]";
	return "[trap]";
}

static void trap(struct recon *r, struct recon_hart *h, struct code_block *nb, uint32_t i,
		 const char *name, uint32_t pending, uint64_t pending_ret)
{
	if (!r->vector && priv_rises(r, h, i))
		r->vector = nb->start;
	const char *traced = trace_cause(r, i);
	flush(r, h, i);
	r->st.events++;
	r->st.traps++;
	push(r, h, frame_named(&r->frames, PROFILE_FRAME_MARKER, traced ? traced : name),
	     pending_ret, pending, 1);
	push(r, h, code_frame_at(nb), STACK_RET_NONE, 0, 1);
}

/* The hart returns to nb from a trap handler (or, in pc-only traces, turns
 * out to run another binary): unwind the top task's stack to where nb belongs. */
static void resume(struct recon *r, struct recon_hart *h, struct code_block *nb, uint32_t i)
{
	int64_t m = stack_last_marker(h->stk);
	if (m < 0) {
		/* The trace started inside a handler: what it returns to is new. */
		r->st.returns_above++;
		pop_to(r, h, 0);
		rebase(r, h, nb, 0);
		return;
	}
	uint32_t pending = h->stk->v[m].marker;
	uint64_t pending_ret = h->stk->v[m].ret;
	if (nb->start == r->vector || (r->mvector && nb->start == r->mvector)) {
		/* The instruction returned to trapped at once (a page fault on the
		 * first fetch, an interrupt): it did not retire, a handler runs. */
		pop_to(r, h, pending == PROC_MARK_ROOT ? stack_segment_base(h->stk) : (uint32_t)m);
		trap(r, h, nb, i, "[trap]", PENDING_NONE,
		     pending == PENDING_NONE ? pending_ret : 0);
		return;
	}
	if (pending == PROC_MARK_ROOT || (h->task->exec_pending && !nb->kernel)) {
		/* No trap to return from (the trace began in a handler), or the
		 * task exec'd: what runs now starts a new stack under the root. */
		uint32_t keep = pending == PROC_MARK_ROOT ? stack_segment_base(h->stk)
							  : h->task->root_frame != FRAME_NONE;
		h->task->exec_pending = 0;
		pop_to(r, h, keep);
		push_base(r, h, nb);
		return;
	}
	pop_to(r, h, (uint32_t)m);
	if (r->park.enabled && h->stk->n && stack_top(h->stk)->frame == r->park.hk.switch_to &&
	    nb->func != r->park.hk.switch_to)
		park_switch(r, h, nb->start, i); /* the interrupt came as __switch_to returned */
	if (h->stk->n == 0) {
		rebase(r, h, nb, 0);
	} else if (pending == PENDING_CALL) {
		/* an interrupt came at the callee's first instruction */
		enter(r, h, nb, pending_ret, 0);
	} else if (nb->func != FRAME_NONE && nb->func != stack_top(h->stk)->frame) {
		int64_t at = stack_find_ret(h->stk, nb->start);
		if (at >= 0) /* the trap came right after a return */
			pop_to(r, h, (uint32_t)at);
		jump(r, h, nb, nb, i);
	}
}

static struct code_block *match_enter(struct recon *r, struct recon_hart *h, struct code_block *nb,
				      uint32_t i);
static struct code_block *space_enter(struct recon *r, struct recon_hart *h, struct code_block *nb,
				      uint32_t i);
static void bin_enter(struct recon *r, struct recon_hart *h, uint64_t pc, uint32_t i);
static struct code_block *park_user(struct recon *r, struct recon_hart *h, struct code_block *nb,
				    uint32_t i);

/* A trap from the kernel lands at pc of no ELF in the lower half: that is
 * the firmware's trap vector. */
static void learn_mvector(struct recon *r, const struct code_block *from,
			  const struct code_block *nb)
{
	if (!r->mvector && from->kernel && !nb->kernel && nb->func == FRAME_NONE && !nb->map) {
		r->mvector = nb->start;
		OOB_DEBUG("firmware trap vector %#" PRIx64, r->mvector);
	}
}

static struct code_block *xret(struct recon *r, struct recon_hart *h, const struct code_block *from,
			       struct code_block *nb, uint32_t i)
{
	flush(r, h, i);
	r->st.events++;
	r->st.trap_returns++;
	if (r->mvector && nb->start == r->mvector) {
		if (!from->kernel || h->xret_deferred) {
			resume(r, h, nb, i); /* straight back into the firmware's handler */
			return nb;
		}
		/* An interrupt into the firmware came before the first instruction
		 * the sret returns to: the return completes at the firmware's mret. */
		h->xret_deferred = 1;
		trap(r, h, nb, i, "[trap]", PENDING_NONE, 0);
		return nb;
	}
	if (h->xret_deferred) {
		int64_t m = stack_last_marker(h->stk); /* the firmware's trap */
		h->xret_deferred = 0;
		if (m >= 0)
			pop_to(r, h, (uint32_t)m);
	}
	if (r->park.enabled && !nb->kernel)
		nb = park_user(r, h, nb, i);
	else if (r->matching && !nb->kernel)
		nb = match_enter(r, h, nb, i);
	else if (r->bintasks && !nb->kernel)
		bin_enter(r, h, nb->start, i);
	else if (r->proc.by_satp && !nb->kernel && !h->task->ucs_known)
		nb = space_enter(r, h, nb, i);
	resume(r, h, nb, i);
	h->run_base = h->stk->n ? h->stk->n - 1 : 0; /* the frame the run resumed in */
	return nb;
}

/* ---- which binary runs (pc-only traces; DESIGN.md 4.3) ----
 *
 * Without instruction bits or registers, a user pc does not say which of the
 * candidate binaries mapped there is running. Each return to user space
 * starts a run; the run is given to the binary chosen last on this hart if it
 * has code there, else to the first that has. While the run goes on, any
 * control flow that the chosen binary's code cannot produce (a straight-line
 * run leaving early, a direct branch or call landing off its target) rules
 * that binary out for the run, and the next candidate takes over from there.
 * Each binary has a task of its own (its root frame is the binary's name).
 */

static void switch_task(struct recon *r, struct recon_hart *h, uint64_t key, uint32_t i);

static struct task *match_task(struct recon *r, unsigned k)
{
	if (!r->mtasks[k]) {
		struct task *t = proc_task_new(&r->proc, (uint64_t)k + 1, r->spaces[k]);
		snprintf(t->comm, sizeof(t->comm), "%.16s",
			 sym_binary_name(r->spaces[k]->main_binary));
		r->mtasks[k] = t;
	}
	return r->mtasks[k];
}

/* The candidate binary for a user run at pc, or 0 if none is left. */
static unsigned match_pick(struct recon *r, struct recon_hart *h, uint64_t pc)
{
	unsigned last = h->task->ucs ? h->task->ucs->id : 0;
	if (last && !(h->match_excl >> last & 1) && sym_space_find(r->syms[last], pc))
		return last;
	for (unsigned k = 1; k < r->nspaces && k < 64; k++)
		if (!(h->match_excl >> k & 1) && r->spaces[k]->main_binary &&
		    sym_space_find(r->syms[k], pc))
			return k;
	return 0;
}

static void park_name_exec(struct recon *r, struct recon_hart *h, uint64_t pc);

/* The run goes to binary k: its task's stack (a task per binary), or with
 * tasks followed through context switches, the running task's user code. */
static void match_switch(struct recon *r, struct recon_hart *h, unsigned k, uint32_t i)
{
	if (r->park.enabled) {
		h->task->ucs = r->spaces[k];
		return;
	}
	struct task *t = match_task(r, k);
	if (t != h->task)
		switch_task(r, h, t->key, i);
}

/* A user run starts at nb: returns the block of the binary chosen for it. */
static struct code_block *match_enter(struct recon *r, struct recon_hart *h, struct code_block *nb,
				      uint32_t i)
{
	h->match_excl = 0;
	r->st.match_runs++;
	unsigned k = match_pick(r, h, nb->start);
	if (!k)
		return nb;
	match_switch(r, h, k, i);
	return code_block_at(r->spaces[k], nb->start);
}

/* The running binary's code cannot have led to nb: hand the run to the next
 * candidate. Returns its block, or NULL if there is none (then it is a trap). */
static struct code_block *match_mismatch(struct recon *r, struct recon_hart *h,
					 struct code_block *nb, uint32_t i)
{
	h->match_excl |= 1ull << h->task->ucs->id;
	unsigned k = match_pick(r, h, nb->start);
	if (!k) {
		r->st.match_failed++;
		return NULL;
	}
	r->st.match_switches++;
	flush(r, h, i);
	match_switch(r, h, k, i);
	nb = code_block_at(r->spaces[k], nb->start);
	if (!r->park.enabled) {
		resume(r, h, nb, i);
		return nb;
	}
	/* the same task: what the run pushed was read in the wrong binary */
	pop_to(r, h, h->run_base);
	if (h->run_exec)
		park_name_exec(r, h, nb->start);
	if (h->stk->n > stack_segment_base(h->stk))
		jump(r, h, nb, nb, i);
	else
		push_base(r, h, nb);
	return nb;
}

#define BIN_KEY (1ull << 61) /* task keys of the per-binary tasks */

/* The task of the user binary that holds pc (see struct recon.bintasks), or
 * NULL when no binary does (code of no ELF stays on the current task). */
static struct task *bin_task(struct recon *r, uint64_t pc)
{
	for (size_t k = 1; k < r->nspaces; k++) {
		const struct sym_mapping *m = sym_space_find(r->syms[k], pc);
		if (!m)
			continue;
		size_t b = 0;
		while (b < r->nbins && r->bins[b] != m->bin)
			b++;
		struct task *t = proc_task_find(&r->proc, BIN_KEY | b);
		if (!t) {
			t = proc_task_new(&r->proc, BIN_KEY | b, r->spaces[k]);
			snprintf(t->comm, sizeof(t->comm), "%.16s", sym_binary_name(m->bin));
		}
		return t;
	}
	return NULL;
}

/* A return to user space at pc: the stack of the binary that runs there. */
static void bin_enter(struct recon *r, struct recon_hart *h, uint64_t pc, uint32_t i)
{
	struct task *t = bin_task(r, pc);
	if (t && t != h->task)
		switch_task(r, h, t->key, i);
}

/* The user binaries that may hold pc (bit k: user space k). */
static uint64_t space_candidates(const struct recon *r, uint64_t pc)
{
	uint64_t cand = 0;
	for (unsigned k = 1; k < r->nspaces && k < 64; k++)
		if (r->spaces[k]->main_binary && sym_space_find(r->syms[k], pc))
			cand |= 1ull << k;
	return cand;
}

/*
 * The first return to user space in an address space (tasks by satp): which
 * user binary runs there, by the instruction bits the trace shows from record
 * i on, compared with each candidate ELF's bytes at the same addresses (the
 * binaries may be linked at the same address; DESIGN.md 4.3). Looks ahead in
 * the batch while the hart stays in user space; records no candidate holds
 * (the vDSO) say nothing. An exec makes a new address space, so the choice
 * holds for the task's life. Returns the block of the chosen binary.
 */
static struct code_block *space_enter(struct recon *r, struct recon_hart *h, struct code_block *nb,
				      uint32_t i)
{
	const struct trace_batch *b = r->b;
	uint64_t cand = space_candidates(r, nb->start);
	for (uint32_t j = i; b->insn && j < b->n && (cand & (cand - 1)) && !(b->pc[j] >> 63); j++) {
		uint64_t agree = 0;
		for (unsigned k = 1; k < 64; k++) {
			uint32_t bits;
			if (cand >> k & 1 && code_elf_fetch(r->spaces[k], b->pc[j], &bits) &&
			    bits == b->insn[j])
				agree |= 1ull << k;
		}
		if (agree)
			cand = agree;
	}
	if (!cand)
		return nb;
	unsigned k = (unsigned)__builtin_ctzll(cand);
	struct task *t = h->task;
	t->ucs = r->spaces[k];
	t->ucs_known = 1;
	snprintf(t->comm, sizeof(t->comm), "%.16s", sym_binary_name(r->spaces[k]->main_binary));
	return code_block_at(t->ucs, nb->start);
}

/* 1 if matching applies to going from blk to nb (user code to user code). */
static int match_applies(const struct recon *r, const struct code_block *blk,
			 const struct code_block *nb)
{
	return r->matching && !blk->kernel && !nb->kernel;
}

/* ---- context switches in pc-only traces (park.h) ---- */

/* A task for the debug log: "comm pid [task idx]". */
#define TASK_FMT     "%s %lld [task %u]"
#define TASK_ARGS(t) (t)->comm, (long long)(t)->pid, (t)->idx

static void emit_all(struct recon *r, struct recon_hart *h, uint8_t kind);

static uint64_t now_of(const struct recon_hart *h)
{
	return h->cycles ? h->last_cycle : h->last_seq;
}

/* The symbol name of kernel function frame f. */
static const char *kernel_func_name(const struct recon *r, uint32_t f)
{
	uint64_t a = r->frames.v[f].addr;
	const struct sym_mapping *m = sym_space_find(r->syms[0], a);
	const struct sym_func *fn = m ? sym_binary_lookup(m->bin, a - m->bias) : NULL;
	return fn ? fn->name : "?";
}

static void park_on_call(struct recon *r, struct recon_hart *h, uint32_t f, int indirect)
{
	const struct park_hooks *k = &r->park.hk;
	struct task *t = h->task;
	uint32_t caller = h->stk->n >= 2 ? h->stk->v[h->stk->n - 2].frame : FRAME_NONE;
	if (f == k->switch_to) {
		h->res.active = 0; /* the resumed task ran to its next switch: it was the one */
	} else if (f == k->schedule || f == k->pick_idle) {
		h->idle_pick = f == k->pick_idle;
	} else if (f == k->alloc_pid) {
		park_clone_note(&r->park, t, h->stk);
		OOB_DEBUG("park: hart %u: " TASK_FMT " clones pid %lld (kind %d)", h->id,
			  TASK_ARGS(t), (long long)r->park.clones[r->park.nclones - 1].pid,
			  (int)r->park.clones[r->park.nclones - 1].kind);
	} else if (f == k->new_exec) {
		t->exec_pending = 1;
		t->exec_at = now_of(h);
	} else if (f == k->do_exit) {
		t->dead = 1;
	} else if (t->fn_named && indirect && caller == k->kthread) {
		/* kthread() calls the thread function it was made for */
		snprintf(t->comm, sizeof(t->comm), "%.16s", kernel_func_name(r, f));
	}
}

/* Gives t what its clone says: pid, parent, the parent's name. */
static void park_adopt(struct task *t, const struct park_clone *cl)
{
	t->pid = cl->pid;
	if (cl->parent) {
		t->parent = cl->parent->key;
		memcpy(t->comm, cl->parent->comm, sizeof(t->comm));
	}
}

/* ret_from_kernel_thread jumps to the new kernel thread's function f: it
 * names the thread and says which clone made it (kernel_thread() is how
 * kthreadd and its children start; anything else is user_mode_thread()'s). */
static void park_kthread(struct recon *r, struct recon_hart *h, uint32_t f)
{
	struct park *pk = &r->park;
	struct task *t = h->task;
	struct park_clone cl = {.pid = -1};
	int k = f == pk->hk.kthreadd || f == pk->hk.kthread;
	if (park_clone_take(pk, k ? PARK_KTHREAD : PARK_USER_THREAD, &cl))
		park_adopt(t, &cl);
	snprintf(t->comm, sizeof(t->comm), "%.16s", kernel_func_name(r, f));
}

/* Makes a task for a first run at land (ret_from_fork, ret_from_kernel_thread,
 * or a task the trace never saw switch out), with __switch_to on top for the
 * return in progress to pop. */
static void park_new_task(struct recon *r, struct recon_hart *h, uint64_t land)
{
	struct park *pk = &r->park;
	struct park_clone cl = {.pid = -1};
	if (land == pk->hk.fork_entry)
		park_clone_take(pk, PARK_FORK, &cl);
	struct task *t = proc_task_new(&r->proc, PARK_KEY | ++pk->ntasks,
				       cl.parent ? cl.parent->ucs : h->task->ucs);
	park_adopt(t, &cl);
	/* a kernel thread's clone is known by the function it runs (park_kthread) */
	t->fn_named = land == pk->hk.kthread_entry;
	h->task = t;
	h->stk = &t->stk;
	push_root(r, h);
	for (uint32_t k = 0; k < cl.nuser; k++)
		push(r, h, cl.user[k].frame, cl.user[k].ret, cl.user[k].marker, 0);
	free(cl.user);
	push(r, h, pk->hk.switch_to, land, 0, 0);
	r->st.switch_new_tasks++;
	OOB_DEBUG("park: hart %u record %" PRIu64 ": new task " TASK_FMT " at %#" PRIx64, h->id,
		  r->gseq + (h->last_seq - h->seq), TASK_ARGS(t), land);
}

#define PARK_LOOKAHEAD 65536 /* records looked at to guess who resumes */

/* The running task entered __switch_to and its `ret` lands at land: park it
 * and run the task that returns there. */
static void park_switch(struct recon *r, struct recon_hart *h, uint64_t land, uint32_t i)
{
	struct park *pk = &r->park;
	struct task *old = h->task;
	struct park_resume *rs = &h->res;
	emit_all(r, h, RECON_EV_CLOSE);
	rs->active = 0;
	r->proc.switches++;
	int idle = h->idle_pick;
	h->idle_pick = 0;
	size_t n = land == pk->hk.fork_entry || land == pk->hk.kthread_entry
		       ? 0
		       : park_find(pk, land, h->id, idle, rs);
	if (!n && pk->ntasks >= PARK_MAX_TASKS) {
		/* no more tasks (a hostile trace could ask for one per switch):
		 * the old one runs on */
		pk->capped++;
		emit_all(r, h, RECON_EV_OPEN);
		return;
	}
	park_put(pk, old, h->id);
	if (!n) {
		OOB_DEBUG("park: hart %u: " TASK_FMT " parked", h->id, TASK_ARGS(old));
		park_new_task(r, h, land);
		return;
	}
	if (n > 1) {
		size_t from = (size_t)i + 1, left = r->b->n - from;
		park_guess(rs, r->b->pc + from, left < PARK_LOOKAHEAD ? left : PARK_LOOKAHEAD);
	}
	struct task *t = rs->cands[0];
	if (idle) { /* the hart's idle task, now known if it was not */
		t->idle = 1;
		t->hart = h->id;
	}
	OOB_DEBUG("park: hart %u record %" PRIu64 ": " TASK_FMT " parked, " TASK_FMT
		  " resumed at %#" PRIx64 " (%zu candidates)",
		  h->id, r->gseq + (h->last_seq - h->seq), TASK_ARGS(old), TASK_ARGS(t), land, n);
	park_take(pk, t);
	h->task = t;
	h->stk = &t->stk;
	if (n > 1)
		park_begin(rs, h->stk, 0);
	r->st.switch_resumes++;
	emit_all(r, h, RECON_EV_OPEN);
}

static int parked(const struct park *pk, const struct task *t)
{
	for (size_t k = 0; k < pk->nparked; k++)
		if (pk->parked[k] == t)
			return 1;
	return 0;
}

/* The provisional resume was wrong: the hart runs candidate c instead; the
 * task it ran goes back to where it was parked. */
static void park_swap(struct recon *r, struct recon_hart *h, size_t c)
{
	struct park_resume *rs = &h->res;
	struct task *t = h->task, *n = rs->cands[c];
	OOB_DEBUG("park: hart %u: not " TASK_FMT " but " TASK_FMT " resumed", h->id, TASK_ARGS(t),
		  TASK_ARGS(n));
	emit_all(r, h, RECON_EV_CLOSE);
	park_restore(rs, &t->stk);
	park_put(&r->park, t, h->id);
	park_take(&r->park, n);
	rs->cands[c] = t;
	park_begin(rs, &n->stk, rs->popped);
	stack_truncate(&n->stk, n->stk.n - rs->popped);
	h->task = n;
	h->stk = &n->stk;
	emit_all(r, h, RECON_EV_OPEN);
}

/* A return pops a frame the resumed task had when parked: if it does not
 * return where that frame would, and another candidate's would, swap. */
static void park_recheck(struct recon *r, struct recon_hart *h, uint64_t land)
{
	struct park_resume *rs = &h->res;
	if (h->stk->n != rs->nref - rs->popped || stack_top(h->stk)->ret == land)
		return;
	for (size_t c = 0; c < rs->ncands; c++) {
		const struct task *t = rs->cands[c];
		if (parked(&r->park, t) && park_same_popped(rs, t) &&
		    t->stk.v[t->stk.n - 1 - rs->popped].ret == land) {
			park_swap(r, h, c);
			r->st.switch_undos++;
			return;
		}
	}
}

/* 1 if pc is where a program starts after execve: the entry point of a user
 * binary mapped there (the program's, or its interpreter's). */
static int exec_entry(const struct recon *r, uint64_t pc)
{
	for (size_t k = 1; k < r->nspaces; k++) {
		const struct sym_mapping *m = sym_space_find(r->syms[k], pc);
		if (m && sym_binary_entry(m->bin) + m->bias == pc)
			return 1;
	}
	return 0;
}

/* The target of the direct call whose return address is ret, or 0 (an
 * indirect call, or no code known there). */
static uint64_t call_target(struct recon *r, const struct task *t, uint64_t ret)
{
	for (unsigned len = 4; len >= 2; len -= 2) {
		uint32_t bits;
		struct rv_insn in;
		if (!code_fetch(t->ucs, ret - len, &bits))
			continue;
		rv_decode(bits, &in);
		if (in.len == len && in.kind == RV_CALL)
			return rv_direct_target(&in, ret - len);
	}
	return 0;
}

enum { FIT_NO, FIT_LIKELY, FIT_EXACT };

/* How well t's return to user space at pc fits what the trace showed:
 * exactly (where it trapped, the target of the call it was making, a
 * program's entry after its exec), likely (into the function it trapped
 * from, or a function entry, when the trap came after a jump), or not. */
static int user_fits(struct recon *r, const struct task *t, uint64_t pc)
{
	struct code_block *nb = code_block_at(t->ucs, pc);
	int64_t m = proc_user_marker(&t->stk);
	if (t->exec_pending) /* a program whose ELF is not given starts anywhere */
		return exec_entry(r, pc)			  ? FIT_EXACT
		       : !sym_space_find(r->syms[t->ucs->id], pc) ? FIT_LIKELY
								  : FIT_NO;
	if (m < 1)
		return FIT_NO; /* a kernel thread */
	int entry = nb->func == FRAME_NONE || nb->start == nb->entry;
	if (t->stk.v[m].marker == PENDING_CALL) { /* into the callee, at its entry */
		uint64_t to = call_target(r, t, t->stk.v[m].ret);
		return to ? (to == pc ? FIT_EXACT : FIT_NO) : entry ? FIT_LIKELY : FIT_NO;
	}
	uint64_t last = t->stk.v[m].ret;
	if (last) /* back to the instruction that trapped, or to the next */
		return pc == last || pc == last + 2 || pc == last + 4 ? FIT_EXACT : FIT_NO;
	/* the trap came after a jump: into the function it trapped from, or
	 * just after that function returned, or just after a tail call */
	const struct stack_entry *below = &t->stk.v[m - 1];
	return below->frame == (nb->func != FRAME_NONE ? nb->func : code_frame_at(nb)) ||
		       below->ret == pc || (nb->func != FRAME_NONE && nb->start == nb->entry)
		   ? FIT_LIKELY
		   : FIT_NO;
}

static struct code_block *park_user(struct recon *r, struct recon_hart *h, struct code_block *nb,
				    uint32_t i)
{
	struct park_resume *rs = &h->res;
	int fit = rs->active ? user_fits(r, h->task, nb->start) : FIT_EXACT;
	size_t best = SIZE_MAX;
	for (size_t c = 0; c < rs->ncands && fit < FIT_EXACT; c++) {
		int f;
		if (parked(&r->park, rs->cands[c]) && park_same_popped(rs, rs->cands[c]) &&
		    (f = user_fits(r, rs->cands[c], nb->start)) > fit) {
			fit = f;
			best = c;
		}
	}
	if (best != SIZE_MAX) { /* the one the landing fits best */
		park_swap(r, h, best);
		r->st.switch_user_fixes++;
	}
	rs->active = 0;
	struct task *t = h->task;
	h->run_exec = t->exec_pending;
	if (r->matching)
		nb = match_enter(r, h, nb, i);
	else if (t->exec_pending)
		nb = space_enter(r, h, nb, i);
	else
		nb = code_block_at(t->ucs, nb->start);
	if (t->exec_pending) {
		park_name_exec(r, h, nb->start);
		t->fn_named = 0;
	}
	return nb;
}

/* The task's first run of a program at pc: the binary there (the user code
 * chosen for it) names it. Named again if matching changes its mind. */
static void park_name_exec(struct recon *r, struct recon_hart *h, uint64_t pc)
{
	struct task *t = h->task;
	const struct sym_mapping *m = sym_space_find(r->syms[t->ucs->id], pc);
	if (!m)
		return;
	int pending = t->exec_pending;
	if (t->nexecs && t->execs[t->nexecs - 1].when == t->exec_at) /* the same exec */
		free(t->execs[--t->nexecs].path);
	proc_exec(t, sym_binary_name(m->bin), t->exec_at,
		  (const struct code_space *const *)r->spaces + 1, r->nspaces - 1);
	t->exec_pending = pending;
}

/* ---- block ends and mismatches ---- */

/* Straight-line code was left before its end: the instruction at pos trapped
 * (or an interrupt arrived), record i is the handler. */
static struct code_block *deviation(struct recon *r, struct recon_hart *h, struct code_block *blk,
				    uint32_t pos, uint32_t i)
{
	uint64_t npc = r->b->pc[i];
	struct code_block *nb = code_next(space_of(r, h, npc), blk, npc), *mb;
	if (match_applies(r, blk, nb) && (mb = match_mismatch(r, h, nb, i)))
		return mb;
	learn_mvector(r, blk, nb);
	trap(r, h, nb, i, insn_cause(r, h, blk->pcs[pos]), PENDING_NONE,
	     pos ? blk->pcs[pos - 1] : 0);
	return nb;
}

/* FirePerf's rule for code whose bits are unknown: entering a function at its
 * entry is a call, landing in a function on the stack is a return. */
static void heuristic(struct recon *r, struct recon_hart *h, const struct code_block *blk,
		      struct code_block *nb, uint32_t i)
{
	if (nb->func == FRAME_NONE || nb->func == stack_top(h->stk)->frame)
		return;
	if (nb->start == nb->entry) {
		call(r, h, nb, STACK_RET_NONE, i, 0);
		return;
	}
	for (int64_t k = (int64_t)h->stk->n - 2; k >= stack_segment_base(h->stk); k--) {
		if (h->stk->v[k].frame == nb->func) {
			flush(r, h, i);
			r->st.events++;
			r->st.returns++;
			pop_to(r, h, (uint32_t)k + 1);
			return;
		}
	}
	jump(r, h, blk, nb, i);
}

/* Where the block's direct control transfer cannot have gone to npc. */
static int off_target(const struct rv_insn *in, uint64_t npc, uint64_t fall, uint64_t target)
{
	switch (in->kind) {
	case RV_BRANCH:
		return npc != fall && npc != target;
	case RV_JUMP:
	case RV_CALL:
		return npc != target;
	default:
		return 0;
	}
}

static struct code_block *transfer(struct recon *r, struct recon_hart *h,
				   const struct code_block *blk, struct code_block *nb, uint32_t i)
{
	const struct rv_insn *in = &blk->last;
	uint64_t npc = nb->start, fall = blk->last_pc + in->len;
	uint64_t target = rv_direct_target(in, blk->last_pc);
	/* User code never jumps into the kernel, and the kernel leaves for the
	 * lower half (user code, M-mode firmware) only by sret: whatever the
	 * instruction, anything else is a trap (the privilege is not always in
	 * the trace). Nor does software jump to a trap vector (the kernel's,
	 * the firmware's): an interrupt can come right after any instruction,
	 * a `ret` or a `jr` too. */
	int up = priv_rises(r, h, i) || blk->kernel != nb->kernel ||
		 (r->vector && npc == r->vector) || (r->mvector && npc == r->mvector);
	int off = off_target(in, npc, fall, target);
	struct code_block *mb;
	if (in->kind != RV_XRET)
		learn_mvector(r, blk, nb);

	if (off && !up && match_applies(r, blk, nb) && (mb = match_mismatch(r, h, nb, i)))
		return mb;
	switch (in->kind) {
	case RV_BRANCH:
	case RV_JUMP:
	case RV_JUMP_IND:
		if (up || off)
			trap(r, h, nb, i, "[trap]", PENDING_NONE, 0);
		else
			jump(r, h, blk, nb, i);
		break;
	case RV_CALL:
	case RV_CALL_IND:
		if (up || off)
			trap(r, h, nb, i, "[trap]", PENDING_CALL, fall);
		else
			call(r, h, nb, fall, i, in->kind == RV_CALL_IND);
		break;
	case RV_RET:
		if (up)
			trap(r, h, nb, i, "[trap]", PENDING_NONE, 0);
		else
			ret(r, h, nb, i);
		break;
	case RV_SWAP:
		if (up) {
			trap(r, h, nb, i, "[trap]", PENDING_CALL, fall);
		} else {
			/* pop then push; the pop may empty the segment, so no call()
			 * (its flush needs a top) */
			r->st.swaps++;
			r->st.events++;
			flush(r, h, i);
			uint32_t base = stack_segment_base(h->stk);
			pop_to(r, h, h->stk->n - 1 > base ? h->stk->n - 1 : base);
			push(r, h, code_frame_at(nb), fall, 0, 1);
		}
		break;
	case RV_ECALL:
	case RV_EBREAK:
	case RV_WFI:
		if (npc != fall || up)
			trap(r, h, nb, i,
			     in->kind == RV_ECALL    ? "[trap: ecall]"
			     : in->kind == RV_EBREAK ? "[trap: ebreak]"
						     : "[irq]",
			     PENDING_NONE, blk->last_pc);
		break;
	case RV_XRET:
		nb = xret(r, h, blk, nb, i);
		break;
	default:
		jump(r, h, blk, nb, i);
	}
	return nb;
}

/* The block was executed to its end; record i says where control went. */
static struct code_block *transition(struct recon *r, struct recon_hart *h, struct code_block *blk,
				     struct code_block *nb, uint32_t i)
{
	uint64_t npc = nb->start;
	switch (blk->end) {
	case CODE_END_NOCODE:
		r->st.unknown_pcs++;
		heuristic(r, h, blk, nb, i);
		break;
	case CODE_END_SEQ:
		if (npc == blk->last_pc + blk->last.len && !priv_rises(r, h, i)) {
			jump(r, h, blk, nb, i);
		} else {
			struct code_block *mb;
			if (match_applies(r, blk, nb) && !priv_rises(r, h, i) &&
			    (mb = match_mismatch(r, h, nb, i)))
				return mb;
			trap(r, h, nb, i, insn_cause(r, h, blk->last_pc + blk->last.len),
			     PENDING_NONE, blk->last_pc);
		}
		break;
	default:
		nb = transfer(r, h, blk, nb, i);
	}
	return nb;
}

/* ---- the loop ---- */

static struct recon_hart *hart_get(struct recon *r, unsigned id);

/* How many of the m trace pcs at t equal the block's pcs at b: the only
 * per-instruction work. Four at a time while they all match. */
static inline uint32_t match_pcs(const uint64_t *t, const uint64_t *b, uint32_t m)
{
	uint32_t k = 0;
	for (; k + 4 <= m; k += 4)
		if ((t[k] ^ b[k]) | (t[k + 1] ^ b[k + 1]) | (t[k + 2] ^ b[k + 2]) |
		    (t[k + 3] ^ b[k + 3]))
			break;
	while (k < m && t[k] == b[k])
		k++;
	return k;
}

static void hart_start(struct recon *r, struct recon_hart *h, const struct trace_batch *b,
		       uint32_t i)
{
	unsigned k = r->matching && !(b->pc[i] >> 63) ? match_pick(r, h, b->pc[i]) : 0;
	if (k && r->park.enabled) {
		h->task->ucs = r->spaces[k];
		k = 0;
	}
	struct task *t = k				    ? match_task(r, k)
			 : r->bintasks && !(b->pc[i] >> 63) ? bin_task(r, b->pc[i])
							    : NULL;
	if (t) {
		h->task = t;
		h->stk = &t->stk;
	}
	h->started = 1;
	h->blk = code_block_at(space_of(r, h, b->pc[i]), b->pc[i]);
	if (r->park.enabled && !r->park.nclones && h->blk->func == FRAME_NONE) {
		/* starts in firmware: the task is the hart's idle task (Linux's
		 * pid 0), the boot hart's the boot task, and the pids the kernel
		 * hands out can be counted */
		r->park.from_boot |= h->id == 0;
		h->task->pid = 0;
		h->task->idle = 1;
		h->task->hart = h->id;
		snprintf(h->task->comm, sizeof(h->task->comm), "swapper/%u", (unsigned)h->id);
	}
	h->pos = 0;
	h->last_seq = h->seq + i;
	if (b->cycle)
		h->first_cycle = h->last_cycle = h->end_cycle = b->cycle[i];
	if (b->priv)
		h->priv = b->priv[i];
	push_root(r, h);
	push_base(r, h, h->blk);
	h->run_base = h->stk->n - 1;
}

/* Reconstructs records [i, e) of the batch. */
static void hart_run(struct recon *r, struct recon_hart *h, const struct trace_batch *b, uint32_t i,
		     uint32_t e)
{
	const uint64_t *pc = b->pc;
	if (!h->started)
		hart_start(r, h, b, i);
	struct code_block *blk = h->blk;
	uint32_t pos = h->pos;
	while (i < e) {
		if (pos == blk->n) {
			struct code_block *nb = code_next(space_of(r, h, pc[i]), blk, pc[i]);
			/* Most block ends are branches inside one function: no event. */
			if (blk->local && (pc[i] == blk->fall || pc[i] == blk->target) &&
			    same_frame(blk, nb, stack_top(h->stk)->frame) && !priv_rises(r, h, i))
				blk = nb;
			else
				blk = transition(r, h, blk, nb, i);
			pos = 0;
		}
		uint32_t m = blk->n - pos < e - i ? blk->n - pos : e - i, k;
		k = match_pcs(pc + i, blk->pcs + pos, m);
		if (blk->inl && k)
			*oob_map_put(&r->inl, (uint64_t)stack_top(h->stk)->node << 32 | blk->inl,
				     NULL) += k;
		i += k;
		pos += k;
		if (k < m) {
			blk = deviation(r, h, blk, pos, i);
			pos = 0;
		}
	}
	h->blk = blk;
	h->pos = pos;
}

/* Feeds the instruction bits of record i to its code space. */
static void learn_one(struct recon *r, struct recon_hart *h, const struct trace_batch *b,
		      uint32_t i)
{
	const uint32_t mask = (1u << SEEN_BITS_LOG2) - 1;
	uint64_t pc = b->pc[i];
	uint32_t bits = b->insn[i];
	uint32_t slot = (uint32_t)(pc >> 1) & mask;
	struct code_space *cs = space_of(r, h, pc);
	if (!bits || (r->seen_bits[slot].pc == pc && r->seen_bits[slot].bits == bits &&
		      r->seen_bits[slot].cs == cs))
		return;
	r->seen_bits[slot].pc = pc;
	r->seen_bits[slot].bits = bits;
	r->seen_bits[slot].cs = cs;
	code_put(cs, pc, bits);
}

/* Feeds the instruction bits of records [s, e) to their code spaces: only
 * those the reader says are new, when it knows. */
static void learn_bits(struct recon *r, struct recon_hart *h, const struct trace_batch *b,
		       uint32_t s, uint32_t e)
{
	if (!b->insn_new) {
		for (uint32_t i = s; i < e; i++)
			learn_one(r, h, b, i);
		return;
	}
	for (uint32_t k = 0; k < b->ninsn_new; k++)
		if (b->insn_new[k] >= s && b->insn_new[k] < e)
			learn_one(r, h, b, b->insn_new[k]);
}

static void emit_all(struct recon *r, struct recon_hart *h, uint8_t kind)
{
	if (!r->opts->on_event)
		return;
	for (uint32_t d = kind == RECON_EV_OPEN ? 1 : h->stk->n;
	     kind == RECON_EV_OPEN ? d <= h->stk->n : d > 0; kind == RECON_EV_OPEN ? d++ : d--)
		emit(r, h, kind, d, 0);
}

/* The hart runs task key from record i on (a context switch: tp changed). */
static void switch_task(struct recon *r, struct recon_hart *h, uint64_t key, uint32_t i)
{
	flush(r, h, i);
	r->st.events++;
	emit_all(r, h, RECON_EV_CLOSE);
	struct task *t = proc_task_find(&r->proc, key);
	if (!t)
		t = proc_task_new(&r->proc, key, h->task->ucs);
	h->task = t;
	h->stk = &t->stk;
	if (t->stk.n == 0) {
		/* First run: it starts inside the switch code the old task was in. */
		push_root(r, h);
		if (h->started)
			push_base(r, h, h->blk);
		return;
	}
	emit_all(r, h, RECON_EV_OPEN);
}

/* ---- sideband events ---- */

#define EVENT_KEY (1ull << 62) /* task keys of pids named by events */

static struct task *event_task(struct recon *r, int64_t pid, struct code_space *ucs)
{
	uint64_t key = EVENT_KEY | (uint64_t)pid;
	struct task *t = proc_task_find(&r->proc, key);
	if (!t) {
		t = proc_task_new(&r->proc, key, ucs);
		t->pid = pid;
	}
	return t;
}

/* Index in b of the hart's next event at or after record s, or b->n. */
static uint32_t next_event(struct recon *r, struct recon_hart *h, const struct trace_batch *b,
			   uint32_t s)
{
	const struct events_ev *e = r->events ? events_peek(r->events, b->hart) : NULL;
	if (!e)
		return b->n;
	if (!e->by_cycle || !b->cycle)
		return e->at <= h->seq + s     ? s
		       : e->at < h->seq + b->n ? (uint32_t)(e->at - h->seq)
					       : b->n;
	uint32_t lo = s, hi = b->n; /* first record at or after the event's cycle */
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (b->cycle[mid] < e->at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The ELF given to the job that a map event names, or NULL. */
static const struct sym_binary *map_binary(const struct recon *r, const struct events_ev *e)
{
	const char *slash = e->path ? strrchr(e->path, '/') : NULL;
	const char *name = slash ? slash + 1 : e->path;
	for (size_t k = 0; k < r->nbins; k++) {
		const char *id = sym_binary_build_id(r->bins[k]);
		if (e->build_id ? id && strcasecmp(id, e->build_id) == 0
				: strcmp(sym_binary_name(r->bins[k]), name) == 0)
			return r->bins[k];
	}
	return NULL;
}

static struct code_space *space_new(struct recon *r, struct sym_space *syms);

/*
 * A map event: t's user code has the binary at base from now on. The task
 * gets an address space of its own, a copy of the one it had with the new
 * mapping over whatever it covers (so code decoded before stays valid where
 * it was, and its fork children share the copy until they map or exec).
 * Kernel-half maps (modules) and binaries not given are counted as skipped.
 */
static void apply_map(struct recon *r, struct task *t, const struct events_ev *e)
{
	const struct sym_binary *b = map_binary(r, e);
	uint64_t lo, hi;
	if (!b || e->base >> 63) {
		r->st.maps_skipped++;
		return;
	}
	sym_binary_text_range(b, &lo, &hi);
	uint64_t bias = e->base - sym_binary_load_base(b);
	struct sym_space *s = sym_space_copy(r->syms[t->ucs->id]);
	sym_space_unmap(s, lo + bias, hi + bias);
	if (sym_space_add(s, b, e->base, NULL) < 0) {
		sym_space_free(s);
		r->st.maps_skipped++;
		return;
	}
	struct code_space *cs = space_new(r, s);
	cs->main_binary = t->ucs->main_binary ? t->ucs->main_binary : b;
	t->ucs = cs;
	t->ucs_known = 1;
	r->st.maps++;
}

static void apply_event(struct recon *r, struct recon_hart *h, const struct events_ev *e,
			uint32_t i)
{
	const struct code_space *const *users = (const struct code_space *const *)r->spaces + 1;
	uint64_t when = h->cycles && r->b->cycle ? r->b->cycle[i] : h->seq + i;
	struct task *t = event_task(r, e->pid, h->task->ucs);
	switch (e->kind) {
	case EVENTS_SWITCH:
		if (!h->started) { /* the task the trace starts in */
			h->task = t;
			h->stk = &t->stk;
		} else if (t != h->task) {
			r->proc.switches++;
			switch_task(r, h, t->key, i);
		}
		break;
	case EVENTS_FORK: {
		struct task *c = event_task(r, e->child, t->ucs);
		c->parent = t->key;
		memcpy(c->comm, t->comm, sizeof(c->comm));
		break;
	}
	case EVENTS_EXEC:
		proc_exec(t, e->path, when, users, r->nspaces - 1);
		if (t == h->task && h->started && stack_segment_base(h->stk) <= 1) {
			/* no kernel in the trace to return through: the old program's
			 * frames end here */
			flush(r, h, i);
			pop_to(r, h, stack_segment_base(h->stk));
			t->exec_pending = 0;
		}
		break;
	case EVENTS_EXIT:
		t->end = when;
		break;
	case EVENTS_MAP:
		apply_map(r, t, e);
		break;
	}
}

static void batch(struct recon *r, const struct trace_batch *b)
{
	struct recon_hart *h = hart_get(r, b->hart);
	uint32_t s = 0;
	h->cycles = b->cycle != NULL;
	r->b = b;
	r->xi = 0;
	proc_batch(&r->proc, b);
	if (h->pending_key) {
		switch_task(r, h, h->pending_key, 0);
		h->pending_key = 0;
	}
	while (s < b->n) {
		uint64_t key = 0;
		uint32_t e = proc_next_switch(&r->proc, b, s, h->task, &key);
		uint32_t ev = next_event(r, h, b, s);
		if (ev < e) {
			e = ev;
			key = 0;
		}
		if (e > s) {
			if (b->insn)
				learn_bits(r, h, b, s, e);
			hart_run(r, h, b, s, e);
			if (r->proc.enabled)
				proc_apply(&r->proc, b, e);
		}
		for (; ev == e && ev < b->n; ev = next_event(r, h, b, e)) {
			apply_event(r, h, events_peek(r->events, b->hart), e);
			events_take(r->events, b->hart);
		}
		if (key && e < b->n)
			switch_task(r, h, key, e);
		else if (key)
			h->pending_key = key; /* the switch is at the batch's end */
		s = e;
	}
	h->seq += b->n;
	r->gseq += b->n;
	if (b->cycle)
		h->end_cycle = b->cycle[b->n - 1];
	if (b->priv)
		h->priv = b->priv[b->n - 1];
}

static struct recon_hart *hart_get(struct recon *r, unsigned id)
{
	if (id >= r->nharts) {
		r->harts = oob_xrealloc(r->harts, (id + 1) * sizeof(*r->harts));
		memset(r->harts + r->nharts, 0, (id + 1 - r->nharts) * sizeof(*r->harts));
		for (size_t k = r->nharts; k <= id; k++) {
			struct recon_hart *h = &r->harts[k];
			h->id = (uint16_t)k;
			h->task = proc_task_new(&r->proc,
						r->park.enabled ? PARK_KEY | ++r->park.ntasks : 0,
						r->spaces[1]);
			h->stk = &h->task->stk;
		}
		r->nharts = id + 1;
	}
	return &r->harts[id];
}

/* Flushes each hart's last span and sums what the harts saw. */
static void finish(struct recon *r)
{
	if (r->park.evicted || r->park.capped)
		OOB_WARN("context switches: %" PRIu64 " sleeping tasks dropped (more than %d "
			 "parked), %" PRIu64 " switches to unseen tasks kept the running one (%d "
			 "tasks made)",
			 r->park.evicted, PARK_MAX, r->park.capped, PARK_MAX_TASKS);
	for (size_t k = 0; k < r->nharts; k++) {
		struct recon_hart *h = &r->harts[k];
		if (!h->started)
			continue;
		charge(r, h, h->seq, h->end_cycle);
		pop_to(r, h, 0);
		r->st.harts++;
		r->st.instructions += h->seq;
		if (h->end_cycle - h->first_cycle > r->st.cycles)
			r->st.cycles = h->end_cycle - h->first_cycle;
	}
}

/* Moves the instructions that ran in inlined code from each node to child
 * nodes for the inline chain (outermost first). Cycles follow in proportion:
 * the trace times control-flow events, not single instructions. */
static void split_inlines(struct recon *r)
{
	size_t n0 = r->cct.n;
	uint64_t *insns = oob_xmalloc(n0 * sizeof(*insns)),
		 *cycles = oob_xmalloc(n0 * sizeof(*cycles));
	for (size_t k = 0; k < n0; k++) {
		insns[k] = r->cct.v[k].insns;
		cycles[k] = r->cct.v[k].cycles;
	}
	size_t pos = 0;
	uint64_t key, n;
	while (oob_map_next(&r->inl, &pos, &key, &n)) {
		uint32_t node = (uint32_t)(key >> 32), leaf = node;
		const struct code_chain *c = code_chain_get(&r->chains, (uint32_t)key);
		for (uint32_t k = 0; k < c->n; k++)
			leaf = cct_child(&r->cct, leaf, c->frames[k]);
		uint64_t cyc =
		    insns[node] ? (uint64_t)((unsigned __int128)cycles[node] * n / insns[node]) : 0;
		r->cct.v[leaf].insns += n;
		r->cct.v[leaf].cycles += cyc;
		r->cct.v[node].insns -= n;
		r->cct.v[node].cycles -= cyc;
	}
	free(insns);
	free(cycles);
}

/* ---- processes ---- */

static const char *arena_fmt_name(struct oob_arena *a, const struct proc *pr, const struct task *t)
{
	char buf[64];
	if (pr->by_satp && t->key)
		snprintf(buf, sizeof(buf), "%s [satp %#" PRIx64 "]", t->comm[0] ? t->comm : "?",
			 (uint64_t)PROC_SATP_KEY(t->key));
	else if (t->pid >= 0)
		snprintf(buf, sizeof(buf), "%s %lld", t->comm[0] ? t->comm : "?",
			 (long long)t->pid);
	else
		snprintf(buf, sizeof(buf), "%s [task %u]", t->comm[0] ? t->comm : "?", t->idx);
	return oob_arena_strdup(a, buf);
}

/* The task table as the profile's process list; root frames get their names. */
static void add_processes(struct recon *r, struct profile *p)
{
	struct proc *pr = &r->proc;
	if (!pr->enabled)
		return;
	proc_finish(pr);
	p->proc_source = r->events					 ? "events"
			 : pr->by_satp					 ? "satp"
			 : r->matching || r->bintasks || r->park.enabled ? "matched"
									 : "derived";
	p->switches = pr->switches;
	p->procs = oob_xcalloc(pr->ntasks ? pr->ntasks : 1, sizeof(*p->procs));
	for (size_t k = 0; k < pr->ntasks; k++) {
		const struct task *t = pr->tasks[k];
		if (t->root_frame == FRAME_NONE || t->start == UINT64_MAX)
			continue;
		const struct task *parent = t->parent ? proc_task_find(pr, t->parent) : NULL;
		struct profile_process *pp = &p->procs[p->nprocs++];
		struct profile_exec *ex = oob_arena_zalloc(p->arena, (t->nexecs + 1) * sizeof(*ex));
		for (size_t e = 0; e < t->nexecs; e++)
			ex[e] = (struct profile_exec){oob_arena_strdup(p->arena, t->execs[e].path),
						      t->execs[e].when};
		uint64_t *satps = oob_arena_zalloc(p->arena, (t->nsatps + 1) * sizeof(*satps));
		if (t->nsatps)
			memcpy(satps, t->satps, t->nsatps * sizeof(*satps));
		*pp = (struct profile_process){.pid = t->pid,
					       .ppid = parent ? parent->pid : -1,
					       .comm = oob_arena_strdup(p->arena, t->comm),
					       .frame = t->root_frame,
					       .start = t->start,
					       .end = t->end,
					       .insns_user = t->insns[0],
					       .insns_kernel = t->insns[1],
					       .cycles_user = t->cycles[0],
					       .cycles_kernel = t->cycles[1],
					       .execs = ex,
					       .nexecs = t->nexecs,
					       .satps = satps,
					       .nsatps = t->nsatps};
		p->frames[t->root_frame].name = arena_fmt_name(p->arena, pr, t);
	}
}

/* ---- setup ---- */

static struct code_space *space_new(struct recon *r, struct sym_space *syms)
{
	size_t id = r->nspaces++;
	r->syms = oob_xrealloc(r->syms, r->nspaces * sizeof(*r->syms));
	r->spaces = oob_xrealloc(r->spaces, r->nspaces * sizeof(*r->spaces));
	r->syms[id] = syms;
	r->spaces[id] = oob_xcalloc(1, sizeof(struct code_space));
	code_space_init(r->spaces[id], (unsigned)id, syms, &r->frames, &r->chains);
	r->spaces[id]->inline_mode = r->opts->inline_frames;
	return r->spaces[id];
}

/* Puts b into the kernel space if it lives in the upper half, else into the
 * first user space where it overlaps nothing (programs linked at the same
 * address are different processes' code), else into a new user space. */
static int place_binary(struct recon *r, const struct sym_binary *b, uint64_t base,
			struct oob_err *err)
{
	uint64_t lo, hi;
	sym_binary_text_range(b, &lo, &hi);
	uint64_t at = base == RECON_BASE_LINK ? lo : base;
	if (at >> 63)
		return sym_space_add(r->syms[0], b, base, err);
	for (size_t k = 1; k < r->nspaces; k++) {
		if (sym_space_add(r->syms[k], b, base, NULL) == 0) {
			if (!r->spaces[k]->main_binary)
				r->spaces[k]->main_binary = b;
			return 0;
		}
	}
	struct code_space *cs = space_new(r, sym_space_new());
	cs->main_binary = b;
	return sym_space_add(r->syms[cs->id], b, base, err);
}

static int load_binaries(struct recon *r, struct oob_err *err)
{
	const struct recon_opts *o = r->opts;
	space_new(r, sym_space_new()); /* kernel */
	space_new(r, sym_space_new()); /* the first user space, even if empty */
	r->bins = oob_xcalloc(o->nelfs + o->nperfmaps + 1, sizeof(*r->bins));
	for (size_t k = 0; k < o->nelfs + o->nperfmaps; k++) {
		int is_elf = k < o->nelfs;
		const char *path = is_elf ? o->elfs[k].path : o->perfmaps[k - o->nelfs];
		struct sym_binary *b =
		    is_elf ? sym_binary_open(path, err) : sym_perfmap_open(path, err);
		if (!b)
			return err ? err->code : -EINVAL;
		r->bins[r->nbins++] = b;
		if (place_binary(r, b, is_elf ? o->elfs[k].base : RECON_BASE_LINK, err) < 0)
			return oob_err_prefix(err, "%s", path);
	}
	return 0;
}

static size_t user_binaries(const struct recon *r)
{
	size_t n = 0;
	for (size_t k = 0; k < r->nbins; k++) {
		uint64_t lo, hi;
		sym_binary_text_range(r->bins[k], &lo, &hi);
		n += !(lo >> 63);
	}
	return n;
}

/* Process tracking hooks the kernel's functions: find the kernel ELF. */
static int setup_proc(struct recon *r, unsigned fields, struct oob_err *err)
{
	const struct sym_binary *kernel = NULL;
	uint64_t bias = 0;
	for (size_t k = 0; k < r->nbins && !kernel; k++) {
		uint64_t lo, hi;
		sym_binary_text_range(r->bins[k], &lo, &hi);
		const struct sym_mapping *m = sym_space_find(r->syms[0], lo);
		if (m && m->bin == r->bins[k]) {
			kernel = r->bins[k];
			bias = m->bias;
		}
	}
	proc_destroy(&r->proc);
	if (r->opts->tasks == RECON_TASKS_SATP) {
		if (!(fields & TRACE_F_REGS) || r->events)
			return oob_err_set(err, -EINVAL,
					   r->events
					       ? "tasks by satp: not with sideband events"
					       : "tasks by satp: this trace has no CSR writes "
						 "(a Spike commit log or oobt with registers has)");
		proc_init_satp(&r->proc, &r->frames, fields);
	} else {
		proc_init(&r->proc, &r->frames, kernel, bias, 0, fields);
	}
	if (r->events) {
		r->proc.enabled = 1;
		r->proc.from_events = 1;
	}
	if (kernel && !(fields & TRACE_F_REGS) && !r->events) {
		park_init(&r->park, &r->frames, kernel, bias, 0);
		r->proc.enabled |= r->park.enabled;
	}
	if (!(fields & (TRACE_F_INSN | TRACE_F_REGS)) && r->nspaces > 2 && !r->events) {
		r->matching = 1;
		r->proc.enabled = 1; /* tasks with root frames; no hooks fire without registers */
		r->mtasks = oob_xcalloc(r->nspaces, sizeof(*r->mtasks));
	} else if (r->park.enabled) {
		/* tasks through the context switches */
	} else if (kernel && !(fields & TRACE_F_REGS) && !r->events && user_binaries(r) > 1) {
		r->bintasks = 1;
		r->proc.enabled = 1;
	}
	/* Linux's trap entry; traps seen in the trace teach it otherwise. */
	uint64_t v = kernel ? sym_binary_find_func(kernel, "handle_exception") : 0;
	if (v)
		r->vector = v + bias;
	return 0;
}

static void recon_init(struct recon *r, const struct recon_opts *opts)
{
	memset(r, 0, sizeof(*r));
	r->opts = opts;
	r->max_depth = opts->max_depth ? opts->max_depth : RECON_MAX_DEPTH_DEFAULT;
	frame_table_init(&r->frames);
	cct_init(&r->cct);
	code_chains_init(&r->chains);
	r->unknown_frame = frame_named(&r->frames, PROFILE_FRAME_MARKER, "[unknown]");
	r->seen_bits = oob_xcalloc((size_t)1 << SEEN_BITS_LOG2, sizeof(*r->seen_bits));
	r->seen_bits[0].pc = UINT64_MAX; /* slot 0's zero tag must not match pc 0 */
	oob_map_init(&r->inl, 64);
	proc_init(&r->proc, &r->frames, NULL, 0, 0, 0);
}

static void recon_destroy(struct recon *r)
{
	for (size_t k = 0; k < r->nharts; k++)
		park_resume_destroy(&r->harts[k].res);
	free(r->harts);
	park_destroy(&r->park);
	free(r->mtasks);
	events_free(r->events);
	free(r->seen_bits);
	oob_map_destroy(&r->inl);
	proc_destroy(&r->proc);
	for (size_t k = 0; k < r->nspaces; k++) {
		code_space_destroy(r->spaces[k]);
		free(r->spaces[k]);
		sym_space_free(r->syms[k]);
	}
	free(r->spaces);
	free(r->syms);
	code_chains_destroy(&r->chains);
	cct_destroy(&r->cct);
	frame_table_destroy(&r->frames);
	for (size_t k = 0; k < r->nbins; k++)
		sym_binary_free(r->bins[k]);
	free(r->bins);
}

static int poll_progress(struct recon *r, struct trace_merge *m, uint64_t insns)
{
	const struct recon_opts *o = r->opts;
	if (o->progress)
		o->progress(o->progress_ctx, trace_merge_raw_bytes(m), insns);
	if (o->cancel && atomic_load_explicit(o->cancel, memory_order_relaxed))
		return -ECANCELED;
	return 0;
}

static int run_merged(struct recon *r, struct trace_merge *m, uint64_t *seen, struct oob_err *err)
{
	const struct trace_batch *b;
	uint64_t next_poll = *seen + (1u << 24);
	int rc;
	while ((rc = trace_merge_next(m, &b, err)) > 0) {
		batch(r, b);
		*seen += b->n;
		if (*seen >= next_poll) {
			next_poll = *seen + (1u << 24);
			if ((rc = poll_progress(r, m, *seen)) < 0)
				return oob_err_set(err, rc, "cancelled after %llu instructions",
						   (unsigned long long)*seen);
		}
		if (r->opts->max_insns && *seen >= r->opts->max_insns)
			return 0;
	}
	return rc;
}

/* FirePerf logs carry stack events by name, not instructions: replay them. */
static int run_fireperf(struct recon *r, struct in_stream *s, struct oob_err *err);

static int run_fireperf_files(struct recon *r, const char *const *paths, size_t n,
			      struct oob_err *err)
{
	int rc = 0;
	for (size_t k = 0; k < n && rc >= 0; k++) {
		struct in_stream *s = in_open(paths[k], &r->opts->trace.in, err);
		rc = s ? run_fireperf(r, s, err) : (err ? err->code : -EIO);
	}
	return rc;
}

/* Several single-hart files are one tile each, read in time order on the
 * base clock (trace_merge.h). */
static struct trace_merge *open_traces(struct recon *r, const char *const *paths, size_t n,
				       struct oob_err *err)
{
	struct trace_opts to = r->opts->trace;
	to.insn_changes_only = 1; /* code_put keeps bits per pc */
	return trace_merge_open_run(paths, &to, r->opts->harts, n, err);
}

static int run_traces(struct recon *r, const char *const *paths, size_t n, uint64_t *seen,
		      struct oob_err *err)
{
	struct trace_merge *m = open_traces(r, paths, n, err);
	if (!m)
		return err ? err->code : -EINVAL;
	enum trace_format f = trace_merge_format(m);
	r->st.format = trace_format_name(f);
	int rc = setup_proc(r, trace_merge_fields(m), err);
	if (rc == 0 && f == TRACE_FMT_FIREPERF) {
		trace_merge_close(m);
		return run_fireperf_files(r, paths, n, err);
	}
	if (rc == 0)
		rc = run_merged(r, m, seen, err);
	r->st.raw_bytes = trace_merge_raw_bytes(m);
	trace_merge_close(m);
	return rc;
}

int recon_tasks_parse(const char *s, enum recon_tasks *out)
{
	if (strcmp(s, "auto") && strcmp(s, "satp"))
		return -EINVAL;
	*out = strcmp(s, "auto") ? RECON_TASKS_SATP : RECON_TASKS_AUTO;
	return 0;
}

const char *recon_tasks_name(enum recon_tasks t)
{
	return t == RECON_TASKS_SATP ? "satp" : "auto";
}

int recon_run(const struct recon_opts *opts, const char *const *traces, size_t ntraces,
	      struct profile **out, struct oob_err *err)
{
	struct recon r;
	struct timespec t0, t1;
	uint64_t seen = 0;
	int rc;
	*out = NULL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	recon_init(&r, opts);
	if ((rc = load_binaries(&r, err)) < 0)
		goto out;
	if (opts->events_path && !(r.events = events_load(opts->events_path, err))) {
		rc = err ? err->code : -EINVAL;
		goto out;
	}
	/* Readers name the file in their messages. */
	if ((rc = run_traces(&r, traces, ntraces, &seen, err)) < 0)
		goto out;
	finish(&r);
	split_inlines(&r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r.st.seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	*out = profile_build(&r.cct, &r.frames, (const struct sym_space *const *)r.syms, r.nspaces,
			     &r.st);
	add_processes(&r, *out);
	rc = 0;
out:
	recon_destroy(&r);
	return rc;
}

/* ---- FirePerf replay ---- */

static void fireperf_enter(struct recon *r, struct recon_hart *h, const char *label)
{
	push(r, h, frame_named(&r->frames, PROFILE_FRAME_KERNEL, label), STACK_RET_NONE, 0, 1);
	r->st.calls++;
}

static void fireperf_leave(struct recon *r, struct recon_hart *h, const char *label)
{
	for (int64_t k = (int64_t)h->stk->n - 1; k >= 0; k--) {
		if (strcmp(r->frames.v[h->stk->v[k].frame].name, label) == 0) {
			pop_to(r, h, (uint32_t)k);
			r->st.returns++;
			return;
		}
	}
	r->st.repairs_unknown++;
}

static void fireperf_cycles(struct recon *r, struct recon_hart *h, uint64_t cycle)
{
	if (!h->started) {
		h->started = 1;
		h->first_cycle = h->last_cycle = cycle;
	}
	if (cycle > h->last_cycle)
		r->cct.v[top_node(h)].cycles += cycle - h->last_cycle;
	if (cycle > h->last_cycle)
		h->last_cycle = cycle;
	h->end_cycle = h->last_cycle;
}

static int run_fireperf(struct recon *r, struct in_stream *s, struct oob_err *err)
{
	struct fireperf_reader *fr = fireperf_open_stream(s, err);
	if (!fr)
		return err ? err->code : -EINVAL;
	struct recon_hart *h = hart_get(r, 0);
	const struct fireperf_event *ev;
	int rc;
	while ((rc = fireperf_next(fr, &ev, err)) > 0) {
		r->st.events++;
		if (ev->kind == FIREPERF_ZERO) {
			pop_to(r, h, 0);
			continue;
		}
		fireperf_cycles(r, h, ev->cycle);
		if (ev->kind == FIREPERF_START)
			fireperf_enter(r, h, ev->label);
		else
			fireperf_leave(r, h, ev->label);
	}
	fireperf_close(fr);
	/* FirePerf stops with the frames the program was in still open (the
	 * fold simply leaves them): close them at the last cycle, so that the
	 * stack events nest like a trace's (evlog.h). */
	pop_to(r, h, 0);
	r->st.harts = 1;
	r->st.cycles = h->end_cycle - h->first_cycle;
	h->started = 0; /* finish() must not add instruction spans */
	return rc;
}
