/*
 * Control-flow classification (DESIGN.md 4.1, RECONSTRUCTION.md 3-6): what
 * the last instruction of a block, and the pc control went to, say happened
 * to the stack. Calls push, returns pop (matching return addresses), jumps
 * and fall-throughs into another function replace the top (a tail call when
 * they land on its entry), traps push a marker and the handler, trap
 * returns pop to the marker. The task tracker hears of the events it hooks.
 */
#include "recon/recon_impl.h"

#include <inttypes.h>

#include "profile/frame.h"
#include "sym/rv.h"
#include "util/oob_log.h"

/* 1 if the tracker may hand going from blk to nb (user code to user code)
 * to another binary (tracker_match.h). */
static int match_applies(const struct recon *r, const struct code_block *blk,
			 const struct code_block *nb)
{
	return r->trk && r->trk->ops->on_mismatch && !blk->kernel && !nb->kernel;
}

static struct code_block *mismatch(struct recon *r, struct tracker_hart *h, struct code_block *nb,
				   uint32_t i)
{
	return r->trk->ops->on_mismatch(r->trk, h, nb, i);
}

/* Control reached block nb by a jump or a fall-through from block from.
 * Landing in another function (by the symbols) or, where there are no
 * symbols, in another binary (a PLT trampoline jumping into ld.so) replaces
 * the top frame: a tail call when it lands on an entry. */
void recon_jump(struct recon *r, struct tracker_hart *h, const struct code_block *from,
		struct code_block *nb, uint32_t i)
{
	if (same_frame(from, nb, stack_top(h->stk)->frame))
		return;
	if (r->go && recon_fn_kind(r, stack_top(h->stk)->frame) == RECON_FN_GO_PREEMPT) {
		recon_flush(r, h, i);
		r->run.st.events++;
		if (nb->func != FRAME_NONE)
			recon_go_recheck(r, h, nb->start, nb->func);
		recon_go_jump(r, h, nb, i); /* asyncPreempt back where the signal came */
		return;
	}
	uint32_t f = nb->func != FRAME_NONE ? nb->func : code_frame_at(nb);
	recon_flush(r, h, i);
	r->run.st.events++;
	if (h->task->fn_named && r->trk && r->trk->ops->on_jump)
		r->trk->ops->on_jump(r->trk, h, f);
	if (stack_top(h->stk)->marker) /* a root or trap marker is never replaced */
		recon_push(r, h, f, STACK_RET_NONE, 0, 0);
	else
		recon_replace_top(r, h, f, nb->func == FRAME_NONE || nb->start == nb->entry);
}

/* A return to land that no frame returns to: the task tracker may know
 * better return addresses (a fork child's, tasks/park.h). */
static int ret_miss(struct recon *r, struct tracker_hart *h, uint64_t land)
{
	return r->trk && r->trk->ops->on_ret_miss && r->trk->ops->on_ret_miss(r->trk, h, land);
}

/* Function nb was entered by a call (returning to ret): push it and tell
 * the task tracker, which hooks kernel functions. */
static void enter(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint64_t ret,
		  int indirect)
{
	r->run.st.calls++;
	uint32_t f = code_frame_at(nb);
	recon_push(r, h, f, ret, 0, 1);
	if (nb->kernel && r->trk && r->trk->ops->on_call)
		r->trk->ops->on_call(r->trk, h, f, indirect);
}

static void call(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint64_t ret,
		 uint32_t i, int indirect)
{
	recon_flush(r, h, i);
	r->run.st.events++;
	enter(r, h, nb, ret, indirect);
}

/*
 * A return whose target matches no pending return address is a non-local
 * exit (longjmp, exception unwinding): unwind to the innermost frame of the
 * function that contains the target. Returning from the bottom frame goes
 * above where the trace started. Anything else is lost track of: start over
 * under [unknown]. Every repair is counted.
 */

static struct code_block *ret(struct recon *r, struct tracker_hart *h, struct code_block *nb,
			      uint32_t i)
{
	recon_flush(r, h, i);
	r->run.st.events++;
	r->run.st.returns++;
	if (r->py)
		recon_py_leave(r, h);
	if (r->trk && r->trk->ops->on_return)
		r->trk->ops->on_return(r->trk, h, nb->start, i);
	if (r->go) {
		/* Go's gogo switches goroutines by a jr t0 */
		if (recon_fn_kind(r, stack_top(h->stk)->frame) == RECON_FN_GO_GOGO &&
		    recon_go_land(r, h, nb, i))
			return nb;
		recon_go_recheck(r, h, nb->start, FRAME_NONE);
		recon_go_doubt(r, h, nb->start, 1);
	}
	uint32_t base = stack_segment_base(h->stk);
	recon_touch(r, h->stk->n - 1); /* the top's return address and walk count */
	/* The register regime first (3.6): where the top frame's return address
	 * does not explain the landing, or sp is not back at the top frame's
	 * entry sp (the unwinder "returns" to a pad that starts at the return
	 * site of its own call to _Unwind_Resume), the stack pointer decides. */
	const struct stack_entry *top = stack_top(h->stk);
	if (h->sp && (top->ret != nb->start || (top->sp && top->sp != h->sp)) &&
	    recon_sp_land(r, h, nb))
		return nb;
	/* The unwinder's return to a landing pad first: a pad can start at a
	 * return address (after a call to __cxa_throw, which never returns). */
	int64_t at = stack_top(h->stk)->walked && recon_pc_rules(r) && recon_eh_land(r, h, nb)
			 ? -2
			 : stack_find_ret(h->stk, nb->start);
	if (at == -1)
		recon_touch(r, 0); /* the rules below may look at the whole stack */
	if (at == -1 && ret_miss(r, h, nb->start))
		at = stack_find_ret(h->stk, nb->start);
	if (at == -2) {
		/* a C++ landing pad, in the frame the unwinder walked to */
	} else if (at >= 0) {
		if ((uint32_t)at != h->stk->n - 1)
			r->run.st.repairs_unwind++;
		else if (r->trk && r->trk->ops->on_exit_frame)
			r->trk->ops->on_exit_frame(r->trk, h, h->stk->v[at].frame);
		recon_pop_to(r, h, (uint32_t)at);
		if (h->stk->n > base)
			recon_jump(r, h, nb, nb,
				   i); /* returned into another function: resync the top */
		else
			recon_rebase(r, h, nb, 0);
	} else if (recon_pc_rules(r) && recon_longjmp_land(r, h, nb->start)) {
		if (nb->func != FRAME_NONE && nb->func != stack_top(h->stk)->frame)
			recon_jump(r, h, nb, nb, i);
	} else if (recon_pc_rules(r) && recon_sigreturn_enter(r, h, &nb)) {
		/* a signal handler returned into the sigreturn trampoline */
	} else if (recon_pc_rules(r) && nb->func != FRAME_NONE &&
		   (at = stack_find_frame(h->stk, nb->func)) >= 0 && (uint32_t)at < h->stk->n - 1) {
		r->run.st.repairs_unwind++;
		recon_pop_to(r, h, (uint32_t)at + 1);
	} else if (nb->func != FRAME_NONE && nb->start == nb->entry && !stack_top(h->stk)->marker) {
		/* Landing on an entry that no frame returns to: a jump through a
		 * register that the hint table reads as a return (Linux's
		 * exception dispatch, `jr t0`). A tail call. */
		r->run.st.returns--;
		recon_replace_top(r, h, nb->func, 1);
	} else if (h->stk->n - 1 == base && h->stk->v[base].ret == STACK_RET_NONE) {
		r->run.st.returns_above++;
		recon_rebase(r, h, nb, 0);
	} else {
		r->run.st.repairs_unknown++;
		recon_rebase(r, h, nb, 1);
	}
	return nb;
}

/* The trap cause recorded by the trace for record i (TRACE_X_TRAP), if any. */
static const char *trace_cause(struct recon *r, uint32_t i)
{
	const struct trace_batch *b = r->run.b;
	while (r->xi < b->nx && b->x[r->xi].idx < i)
		r->xi++;
	for (uint32_t k = r->xi; k < b->nx && b->x[k].idx == i; k++)
		if (b->x[k].kind == TRACE_X_TRAP)
			return rv_cause_name(b->x[k].val);
	return NULL;
}

/* Names the trap from the instruction that was due to run at pc. */
static const char *insn_cause(struct recon *r, struct tracker_hart *h, uint64_t pc)
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

static void trap(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i,
		 const char *name, uint32_t pending, uint64_t pending_ret)
{
	if (!r->vector && priv_rises(r, h, i))
		r->vector = nb->start;
	const char *traced = trace_cause(r, i);
	recon_flush(r, h, i);
	r->run.st.events++;
	r->run.st.traps++;
	recon_push(r, h, frame_named(&r->run.frames, PROFILE_FRAME_MARKER, traced ? traced : name),
		   pending_ret, pending, 1);
	recon_push(r, h, code_frame_at(nb), STACK_RET_NONE, 0, 1);
}

void recon_trap(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i,
		const char *name, uint32_t pending, uint64_t pending_ret)
{
	trap(r, h, nb, i, name, pending, pending_ret);
}

/* The hart returns to nb from a trap handler (or, in pc-only traces, turns
 * out to run another binary): unwind the top task's stack to where nb belongs. */
void recon_resume(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i)
{
	int64_t m = stack_last_marker(h->stk);
	recon_touch(r, m < 0 ? 0 : m);
	if (m < 0) {
		/* The trace started inside a handler: what it returns to is new. */
		r->run.st.returns_above++;
		recon_pop_to(r, h, 0);
		recon_rebase(r, h, nb, 0);
		return;
	}
	uint32_t pending = h->stk->v[m].marker;
	uint64_t pending_ret = h->stk->v[m].ret;
	if (nb->start == r->vector || (r->mvector && nb->start == r->mvector)) {
		/* The instruction returned to trapped at once (a page fault on the
		 * first fetch, an interrupt): it did not retire, a handler runs. */
		recon_pop_to(r, h,
			     pending == IDS_MARK_ROOT ? stack_segment_base(h->stk) : (uint32_t)m);
		trap(r, h, nb, i, "[trap]", IDS_MARK_TRAP,
		     pending == IDS_MARK_TRAP ? pending_ret : 0);
		return;
	}
	if (pending == IDS_MARK_ROOT || (h->task->exec_pending && !nb->kernel)) {
		/* No trap to return from (the trace began in a handler), or the
		 * task exec'd: what runs now starts a new stack under the root. */
		uint32_t keep = pending == IDS_MARK_ROOT ? stack_segment_base(h->stk)
							 : h->task->root_frame != FRAME_NONE;
		h->task->exec_pending = 0;
		recon_pop_to(r, h, keep);
		recon_push_base(r, h, nb);
		return;
	}
	recon_pop_to(r, h, (uint32_t)m);
	if (r->trk && r->trk->ops->on_trap_return)
		r->trk->ops->on_trap_return(r->trk, h, nb, i);
	if (r->go && recon_go_pending(r, h, nb, i))
		return; /* where gogo was going when the trap came (3.5) */
	if (h->stk->n == 0) {
		recon_rebase(r, h, nb, 0);
	} else if (pending == IDS_MARK_TRAP_CALL) {
		/* an interrupt came at the callee's first instruction */
		enter(r, h, nb, pending_ret, 0);
	} else if (nb->func != FRAME_NONE && nb->func != stack_top(h->stk)->frame) {
		if (r->go)
			recon_go_trap_return(r, h, nb->start);
		int64_t at = stack_find_ret(h->stk, nb->start);
		if (at < 0 && ret_miss(r, h, nb->start))
			at = stack_find_ret(h->stk, nb->start);
		if (at >= 0) /* the trap came right after a return */
			recon_pop_to(r, h, (uint32_t)at);
		recon_jump(r, h, nb, nb, i);
	}
}

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

static struct code_block *xret(struct recon *r, struct tracker_hart *h,
			       const struct code_block *from, struct code_block *nb, uint32_t i)
{
	recon_flush(r, h, i);
	r->run.st.events++;
	r->run.st.trap_returns++;
	if (r->mvector && nb->start == r->mvector) {
		if (!from->kernel || h->xret_deferred) {
			recon_resume(r, h, nb, i); /* straight back into the firmware's handler */
			return nb;
		}
		/* An interrupt into the firmware came before the first instruction
		 * the sret returns to: the return completes at the firmware's mret. */
		h->xret_deferred = 1;
		trap(r, h, nb, i, "[trap]", IDS_MARK_TRAP, 0);
		return nb;
	}
	if (h->xret_deferred) {
		int64_t m = stack_last_marker(h->stk); /* the firmware's trap */
		h->xret_deferred = 0;
		if (m >= 0)
			recon_pop_to(r, h, (uint32_t)m);
	}
	if (!nb->kernel && r->trk && r->trk->ops->on_user_entry)
		nb = r->trk->ops->on_user_entry(r->trk, h, nb, i);
	if (nb->kernel || !recon_pc_rules(r) || !recon_signal_xret(r, h, nb, i))
		recon_resume(r, h, nb, i);
	h->run_base = h->stk->n ? h->stk->n - 1 : 0; /* the frame the run resumed in */
	return nb;
}

/* ---- block ends and mismatches ---- */

/* Straight-line code was left before its end: the instruction at pos trapped
 * (or an interrupt arrived), record i is the handler. */
struct code_block *recon_deviation(struct recon *r, struct tracker_hart *h, struct code_block *blk,
				   uint32_t pos, uint32_t i)
{
	uint64_t npc = r->run.b->pc[i];
	struct code_block *nb = code_next(space_of(r, h, npc), blk, npc), *mb;
	if (match_applies(r, blk, nb) && (mb = mismatch(r, h, nb, i)))
		return mb;
	learn_mvector(r, blk, nb);
	trap(r, h, nb, i, insn_cause(r, h, blk->pcs[pos]), IDS_MARK_TRAP,
	     pos ? blk->pcs[pos - 1] : 0);
	return nb;
}

/* FirePerf's rule for code whose bits are unknown: entering a function at its
 * entry is a call, landing in a function on the stack is a return. */
static void heuristic(struct recon *r, struct tracker_hart *h, const struct code_block *blk,
		      struct code_block *nb, uint32_t i)
{
	/* user code never jumps into the kernel's trap vector (the vDSO's
	 * ecall: its bits are in no ELF); the firmware's mret may */
	if (!blk->kernel && r->vector && nb->start == r->vector &&
	    !recon_firmware_pc(r, blk->start, 1)) {
		trap(r, h, nb, i, "[trap]", IDS_MARK_TRAP, 0);
		return;
	}
	if (nb->func == FRAME_NONE || nb->func == stack_top(h->stk)->frame)
		return;
	if (nb->start == nb->entry) {
		call(r, h, nb, STACK_RET_NONE, i, 0);
		return;
	}
	for (int64_t k = (int64_t)h->stk->n - 2; k >= stack_segment_base(h->stk); k--) {
		if (h->stk->v[k].frame == nb->func) {
			recon_flush(r, h, i);
			r->run.st.events++;
			r->run.st.returns++;
			recon_pop_to(r, h, (uint32_t)k + 1);
			return;
		}
	}
	recon_touch(r, 0); /* no frame of nb's function in the whole segment */
	recon_jump(r, h, blk, nb, i);
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

static struct code_block *transfer(struct recon *r, struct tracker_hart *h,
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
	/* Go's signal handler is entered by signals only: a call, jump or
	 * return that "lands" on it was cut short by a signal */
	up |= r->go && nb->func != FRAME_NONE && npc == nb->entry &&
	      recon_fn_kind(r, nb->func) == RECON_FN_GO_SIGTRAMP;
	/* so is a transfer the trace marks as a trap (QEMU's "Stopped
	 * execution"), and a return onto a known handler's entry: its target
	 * did not run before a signal came there (3.5) */
	up |= trace_cause(r, i) != NULL || (in->kind == RV_RET && recon_sig_landing(r, h, nb));
	int off = off_target(in, npc, fall, target);
	struct code_block *mb;
	if (in->kind != RV_XRET)
		learn_mvector(r, blk, nb);

	if (off && !up && match_applies(r, blk, nb) && (mb = mismatch(r, h, nb, i)))
		return mb;
	switch (in->kind) {
	case RV_BRANCH:
	case RV_JUMP:
	case RV_JUMP_IND:
		if (up || off)
			trap(r, h, nb, i, "[trap]", IDS_MARK_TRAP, 0);
		else if (in->kind != RV_JUMP_IND || !recon_ctx_switch(r, h, nb, i))
			recon_jump(r, h, blk, nb, i);
		break;
	case RV_CALL:
	case RV_CALL_IND:
		if (up || off) {
			trap(r, h, nb, i, "[trap]", IDS_MARK_TRAP_CALL, fall);
			break;
		}
		if (nb->func == FRAME_NONE && !nb->kernel)
			recon_vdso_call(r, h, &nb);
		call(r, h, nb, fall, i, in->kind == RV_CALL_IND);
		break;
	case RV_RET:
		if (up && r->go && recon_fn_kind(r, stack_top(h->stk)->frame) == RECON_FN_GO_GOGO) {
			recon_flush(r, h, i);
			recon_go_cut(r, h); /* the signal came after gogo's jump */
		}
		if (up)
			trap(r, h, nb, i, "[trap]", IDS_MARK_TRAP, 0);
		else
			nb = ret(r, h, nb, i);
		break;
	case RV_SWAP:
		if (up) {
			trap(r, h, nb, i, "[trap]", IDS_MARK_TRAP_CALL, fall);
		} else if (recon_go_binary(r, blk->map)) {
			/* Go calls through t0 (jalr ra, t0): a call, not a swap */
			call(r, h, nb, fall, i, 1);
		} else {
			/* pop then push; the pop may empty the segment, so no call()
			 * (its flush needs a top) */
			r->run.st.swaps++;
			r->run.st.events++;
			recon_flush(r, h, i);
			uint32_t base = stack_segment_base(h->stk);
			recon_pop_to(r, h, h->stk->n - 1 > base ? h->stk->n - 1 : base);
			recon_push(r, h, code_frame_at(nb), fall, 0, 1);
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
			     IDS_MARK_TRAP, blk->last_pc);
		break;
	case RV_XRET:
		nb = xret(r, h, blk, nb, i);
		break;
	default:
		recon_jump(r, h, blk, nb, i);
	}
	return nb;
}

/* The block was executed to its end; record i says where control went. */
struct code_block *recon_transition(struct recon *r, struct tracker_hart *h, struct code_block *blk,
				    struct code_block *nb, uint32_t i)
{
	uint64_t npc = nb->start;
	if (h->sp && blk->end != CODE_END_NOCODE && blk->end != CODE_END_SEQ &&
	    blk->last.kind == RV_ECALL && npc != blk->last_pc + blk->last.len &&
	    recon_sp_sigreturn(r, h, blk, nb, i))
		return nb;
	if (r->sigret_pushed && recon_pc_rules(r) && recon_sigreturn_done(r, h, nb, i))
		return nb;
	switch (blk->end) {
	case CODE_END_NOCODE:
		r->run.st.unknown_pcs++;
		heuristic(r, h, blk, nb, i);
		break;
	case CODE_END_SEQ:
		if (npc == blk->last_pc + blk->last.len && !priv_rises(r, h, i)) {
			recon_jump(r, h, blk, nb, i);
		} else {
			struct code_block *mb;
			if (match_applies(r, blk, nb) && !priv_rises(r, h, i) &&
			    (mb = mismatch(r, h, nb, i)))
				return mb;
			trap(r, h, nb, i, insn_cause(r, h, blk->last_pc + blk->last.len),
			     IDS_MARK_TRAP, blk->last_pc);
		}
		break;
	default:
		nb = transfer(r, h, blk, nb, i);
	}
	return nb;
}
