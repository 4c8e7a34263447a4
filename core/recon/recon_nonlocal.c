/*
 * Non-local control flow in pc-only terms (RECONSTRUCTION.md 3.5): the
 * functions whose entry or return says more than a call or a return does,
 * found by name once per binary, and the rules they decide.
 *
 * A frame's kind is looked up the first time the frame is entered and kept
 * in an array indexed by frame id, so the hot path pays an index and a
 * compare per call, and nothing per instruction.
 */
#include "recon/recon_impl.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "profile/frame.h"
#include "util/oob_log.h"
#include "util/oob_mem.h"

#define KIND_UNSEEN 0xff

/* Every name a kind goes by (aliases share an address; one is enough). */
/* clang-format off */
static const struct {
	const char *name;
	uint8_t kind;
} names[] = {
	{"_setjmp", RECON_FN_SETJMP},
	{"setjmp", RECON_FN_SETJMP},
	{"__sigsetjmp", RECON_FN_SETJMP},
	{"sigsetjmp", RECON_FN_SETJMP},
	{"__restore_rt", RECON_FN_SIGRETURN},
	{"__vdso_rt_sigreturn", RECON_FN_SIGRETURN},
	/* static glibc names them with three underscores */
	{"__pthread_unwind_next", RECON_FN_CANCEL_DONE},
	{"___pthread_unwind_next", RECON_FN_CANCEL_DONE},
	{"__pthread_unregister_cancel", RECON_FN_CANCEL_DONE},
	{"___pthread_unregister_cancel", RECON_FN_CANCEL_DONE},
	{"_Unwind_ForcedUnwind", RECON_FN_FORCED_UNWIND},
	{"_Unwind_RaiseException", RECON_FN_RAISE},
	{"_Unwind_Resume", RECON_FN_RAISE},
	{"_Unwind_Find_FDE", RECON_FN_FIND_FDE},
	/* the kernel's signal path (full-system traces: setup_rt_frame and
	 * handle_signal are inlined, signal_setup_done follows each frame) */
	{"signal_setup_done", RECON_FN_SIG_SETUP},
	{"sys_rt_sigreturn", RECON_FN_SIG_RETURN},
	{"__riscv_sys_rt_sigreturn", RECON_FN_SIG_RETURN},
	/* ucontext (recon_go.c: contexts park as goroutines do) */
	{"__swapcontext", RECON_FN_SWAPCONTEXT},
	{"swapcontext", RECON_FN_SWAPCONTEXT},
	{"__setcontext", RECON_FN_SETCONTEXT},
	{"setcontext", RECON_FN_SETCONTEXT},
	/* Go (the assembly functions have an .abi0 suffix in the ELF) */
	{"runtime.mcall", RECON_FN_GO_MCALL},
	{"runtime.gogo.abi0", RECON_FN_GO_GOGO},
	{"runtime.gogo", RECON_FN_GO_GOGO},
	{"gogo", RECON_FN_GO_GOGO},
	{"runtime.morestack.abi0", RECON_FN_GO_MORESTACK},
	{"runtime.morestack", RECON_FN_GO_MORESTACK},
	{"runtime.asyncPreempt.abi0", RECON_FN_GO_PREEMPT},
	{"runtime.asyncPreempt", RECON_FN_GO_PREEMPT},
	{"runtime.goexit1", RECON_FN_GO_EXIT},
	{"runtime.sigtramp.abi0", RECON_FN_GO_SIGTRAMP},
	{"runtime.sigtramp", RECON_FN_GO_SIGTRAMP},
	{"runtime.goexit.abi0", RECON_FN_PLAIN},
	{"runtime.goexit", RECON_FN_PLAIN},
};
/* clang-format on */

#define NNAMES (sizeof(names) / sizeof(names[0]))

/* The link-time entries of a binary's special functions. */
struct recon_nlbin {
	const struct sym_binary *bin;
	uint64_t entry[NNAMES];
	int go; /* has Go's runtime */
};

/* The index of name in names[]. */
static size_t name_at(const char *name)
{
	size_t j = 0;
	while (j < NNAMES - 1 && strcmp(names[j].name, name))
		j++;
	return j;
}

/* Whether a binary calls swapcontext or setcontext: a dynamic program
 * through its PLT, a static one links them in (libc.so has them always). */
static int uses_ucontext(const struct recon *r)
{
	static const char *const calls[] = {"swapcontext@plt", "setcontext@plt"};
	static const char *const defs[] = {"__swapcontext", "__setcontext"};
	for (size_t k = 0; k < r->run.nbins; k++) {
		const struct sym_binary *b = r->run.bins[k];
		int prog = sym_binary_find_func(b, "main") != 0;
		for (size_t j = 0; j < 2; j++)
			if (sym_binary_find_func(b, calls[j]) ||
			    (prog && sym_binary_find_func(b, defs[j])))
				return 1;
	}
	return 0;
}

void recon_nonlocal_init(struct recon *r)
{
	r->nnlbins = r->run.nbins + (r->vdso != NULL);
	r->nlbins = oob_xcalloc(r->nnlbins ? r->nnlbins : 1, sizeof(*r->nlbins));
	size_t mcall = name_at("runtime.mcall"), gogo = name_at("gogo");
	for (size_t k = 0; k < r->nnlbins; k++) {
		struct recon_nlbin *b = &r->nlbins[k];
		b->bin = k < r->run.nbins ? r->run.bins[k] : r->vdso;
		for (size_t j = 0; j < NNAMES; j++)
			b->entry[j] = sym_binary_find_func(b->bin, names[j].name);
		/* Go's runtime: only in a binary that has it (a C program may
		 * have a function named gogo) */
		if (!b->entry[mcall] || !recon_go_goexit(r, b->bin)) {
			for (size_t j = mcall; j < NNAMES; j++)
				b->entry[j] = 0;
			b->entry[gogo] = 0;
		} else {
			b->go = 1;
			if (!r->go)
				recon_go_init(r);
		}
	}
	r->ucontext = uses_ucontext(r);
	/* interned when first needed: frame ids stay as they were */
	r->sigret_frame = r->sigstack_frame = FRAME_NONE;
}

int recon_go_binary(const struct recon *r, const struct sym_mapping *m)
{
	if (!r->go || !m)
		return 0;
	for (size_t k = 0; k < r->run.nbins; k++)
		if (r->nlbins[k].bin == m->bin)
			return r->nlbins[k].go;
	return 0;
}

uint64_t recon_go_goexit(const struct recon *r, const struct sym_binary *bin)
{
	for (size_t k = 0; k < r->run.nbins; k++) {
		if (r->nlbins[k].bin != bin)
			continue;
		uint64_t e = r->nlbins[k].entry[name_at("runtime.goexit.abi0")];
		return e ? e : r->nlbins[k].entry[name_at("runtime.goexit")];
	}
	return 0;
}

static uint32_t sigret_frame(struct recon *r)
{
	if (r->sigret_frame == FRAME_NONE) {
		r->sigret_frame = frame_named(&r->run.frames, PROFILE_FRAME_MARKER, "[sigreturn]");
		recon_fn_kind_slow(r, r->sigret_frame);
		r->fkind[r->sigret_frame] = RECON_FN_SIGRETURN;
	}
	return r->sigret_frame;
}

void recon_nonlocal_free(struct recon *r)
{
	recon_go_free(r);
	free(r->nlbins);
	free(r->fkind);
}

static uint8_t classify(const struct recon *r, uint32_t f)
{
	const struct frame *fr = &r->run.frames.v[f];
	if (fr->name || fr->space >= r->run.nspaces)
		return RECON_FN_PLAIN;
	const struct sym_mapping *m = sym_space_find(r->run.syms[fr->space], fr->addr);
	if (!m)
		return RECON_FN_PLAIN;
	uint64_t link = fr->addr - m->bias;
	for (size_t k = 0; k < r->nnlbins; k++) {
		if (r->nlbins[k].bin != m->bin)
			continue;
		for (size_t j = 0; j < NNAMES; j++)
			if (r->nlbins[k].entry[j] && r->nlbins[k].entry[j] == link)
				return names[j].kind;
	}
	return RECON_FN_PLAIN;
}

uint8_t recon_fn_kind_slow(struct recon *r, uint32_t f)
{
	if (f >= r->nfkind) {
		size_t n = r->nfkind ? r->nfkind : 256;
		while (n <= f)
			n *= 2;
		r->fkind = oob_xrealloc(r->fkind, n);
		memset(r->fkind + r->nfkind, KIND_UNSEEN, n - r->nfkind);
		r->nfkind = n;
	}
	if (r->fkind[f] == KIND_UNSEEN)
		r->fkind[f] = classify(r, f);
	return r->fkind[f];
}

/*
 * C++ exceptions: _Unwind_RaiseException (and _Unwind_Resume after a
 * cleanup) walks the frames from its caller down, once per phase, with
 * uw_frame_state_for, which calls _Unwind_Find_FDE once per frame. Phase 1
 * is inlined in _Unwind_RaiseException (Find_FDE two entries above it);
 * uw_init_context_1 (one frame: the unwinder's own) and phase 2
 * (_Unwind_RaiseException_Phase2) are calls of their own (Find_FDE three
 * entries above). Neither has a name in a stripped libgcc_s, so phase 2 is
 * the last callee of the unwinder to walk frames: the count restarts
 * whenever that callee changes. The unwinder's jmp keeps that callee's
 * frame id + 1 (the unwinder never calls setjmp).
 */
static void count_walk(struct recon *r, struct stack *s)
{
	recon_touch(r, s->n < 4 ? 0 : s->n - 4);
	if (s->n < 4)
		return;
	struct stack_entry *u = &s->v[s->n - 4];
	uint64_t callee = (uint64_t)s->v[s->n - 3].frame + 1;
	if (u->marker || recon_fn_kind(r, u->frame) != RECON_FN_RAISE)
		return;
	if (u->jmp != callee) {
		u->jmp = callee;
		u->walked = 0;
	}
	u->walked++;
}

void recon_nonlocal_entered(struct recon *r, struct tracker_hart *h, uint8_t kind)
{
	struct stack *s = h->stk;
	if (kind == RECON_FN_SIG_HANDLER)
		return;
	if (kind == RECON_FN_SIG_SETUP) {
		h->task->sig_frames++;
		return;
	}
	if (kind == RECON_FN_SIG_RETURN) {
		h->task->sig_return = 1;
		return;
	}
	if (kind == RECON_FN_GO_MCALL && r->go) {
		recon_go_mcall(r, h);
		return;
	}
	recon_touch(r, s->n < 2 ? 0 : s->n - 2);
	if (s->n < 2 || s->v[s->n - 2].marker)
		return;
	if (kind == RECON_FN_SETJMP && stack_top(s)->ret != STACK_RET_NONE)
		s->v[s->n - 2].jmp = stack_top(s)->ret; /* the caller's setjmp site */
	else if (kind == RECON_FN_CANCEL_DONE)
		s->v[s->n - 2].jmp = 0;
	else if (kind == RECON_FN_FIND_FDE)
		count_walk(r, s);
}

/*
 * The landing: phase 2 stops at the frame whose landing pad it installs,
 * and the unwinder's epilogue "returns" to that pad. The k-th frame walked
 * is the k-th entry below the unwinder's.
 */
int recon_eh_land(struct recon *r, struct tracker_hart *h, struct code_block *nb)
{
	struct stack *s = h->stk;
	const struct stack_entry *top = stack_top(s);
	if (!top->walked || recon_fn_kind(r, top->frame) != RECON_FN_RAISE ||
	    nb->func == FRAME_NONE)
		return 0;
	uint32_t f = s->n - 1;
	recon_touch(r, top->walked > f ? 0 : f - top->walked);
	if (top->walked > f || s->v[f - top->walked].frame != nb->func ||
	    stack_segment_base(s) > f - top->walked) {
		/* the count names no frame of the pad's function: the rules for
		 * returns decide, and the landing is counted */
		r->run.st.repairs_ambiguous++;
		return 0;
	}
	r->run.st.eh_landings++;
	recon_pop_to(r, h, f - top->walked + 1);
	return 1;
}

/* 1 if a forced unwind runs above entry at: pthread_exit's unwinder
 * longjmps to the cleanup buffer registered last (glibc keeps them LIFO,
 * and used or unregistered ones are dropped), the innermost live site. */
static int forced_unwind_above(struct recon *r, const struct stack *s, int64_t at)
{
	for (int64_t k = (int64_t)s->n - 1; k > at; k--)
		if (!s->v[k].marker && recon_fn_kind(r, s->v[k].frame) == RECON_FN_FORCED_UNWIND)
			return 1;
	return 0;
}

int recon_longjmp_land(struct recon *r, struct tracker_hart *h, uint64_t t)
{
	struct stack *s = h->stk;
	int64_t at = -1;
	unsigned found = 0;
	recon_touch(r, 0);
	for (int64_t k = (int64_t)s->n - 1; k >= 0; k--) {
		if (s->v[k].jmp == t && !found++)
			at = k;
	}
	if (!found)
		return 0;
	r->run.st.longjmps++;
	if (found > 1 && !forced_unwind_above(r, s, at)) /* several live frames at this site */
		r->run.st.repairs_ambiguous++;
	recon_pop_to(r, h, (uint32_t)at + 1);
	return 1;
}

/*
 * The kernel's vDSO is mapped at a base of its own in every process (ASLR),
 * which a trace does not show. A handler's return into code of no ELF at
 * the page offset of the vDSO's __vdso_rt_sigreturn is its trampoline: the
 * vDSO is mapped there in the task's user code space, whose blocks are
 * built again (a block of no ELF is cached there), and *nb becomes the
 * block in it. The space is shared by the processes whose programs it
 * holds: each base mapped stays, the vDSO's pages at one process's random
 * base are no other's code. Frames stay those of the space.
 */
#define VDSO_MAX_MAPS 4096

static void map_vdso_at(struct recon *r, struct tracker_hart *h, struct code_block **nb,
			uint64_t off)
{
	uint64_t base = (*nb)->start - off;
	if (!off || (*nb)->func != FRAME_NONE || (*nb)->map || (base & 0xfff) ||
	    recon_firmware_pc(r, (*nb)->start, 1) || r->vdso_maps >= VDSO_MAX_MAPS)
		return;
	struct code_space *cs = h->task->ucs;
	if (sym_space_add(r->run.syms[cs->id], r->vdso, base, NULL) < 0)
		return;
	r->vdso_maps++;
	code_space_flush(cs);
	*nb = code_block_at(cs, (*nb)->start);
}

static void map_vdso(struct recon *r, struct tracker_hart *h, struct code_block **nb)
{
	map_vdso_at(r, h, nb, r->vdso ? sym_binary_find_func(r->vdso, "__vdso_rt_sigreturn") : 0);
}

void recon_vdso_call(struct recon *r, struct tracker_hart *h, struct code_block **nb)
{
	if (!r->vdso || (*nb)->func != FRAME_NONE || (*nb)->map || (*nb)->kernel)
		return;
	/* the function whose entry has the target's page offset, if only one */
	uint64_t off = 0;
	for (size_t k = 0, n = sym_binary_nfuncs(r->vdso); k < n; k++) {
		const struct sym_func *f = sym_binary_func(r->vdso, k);
		if (f->entry != f->lo || f->entry == 0 || (((*nb)->start - f->entry) & 0xfff))
			continue;
		if (off && off != f->entry)
			return;
		off = f->entry;
	}
	if (off)
		map_vdso_at(r, h, nb, off);
}

/* rt_sigreturn's system call number on RV64, which every trampoline
 * (QEMU user mode's page, the vDSO's, libc's __restore_rt) loads first. */
#define LI_A7_RT_SIGRETURN 0x08b00893u /* li a7, 139 */

/*
 * A handler that returns into a trampoline from a segment that no trap
 * began: its delivery was not seen. The first signal that comes right
 * after a `ret` (its target not run yet) shows only the handler's entry
 * where the return lands, taken then for a tail call into it (3.3), before
 * any handler was learned (recon_sig_landing). The trampoline's code says
 * what it is (missed_delivery); the top frame then becomes a trap's
 * segment (as_delivered), from where the return went, so that
 * rt_sigreturn lands as a trap's return.
 */
static int missed_delivery(struct recon *r, struct tracker_hart *h, const struct code_block *nb)
{
	const struct stack *s = h->stk;
	uint32_t bits;
	return s->n >= 2 && s->n - 1 > stack_segment_base(s) && !s->v[s->n - 1].marker &&
	       code_fetch(space_of(r, h, nb->start), nb->start, &bits) &&
	       bits == LI_A7_RT_SIGRETURN;
}

static void as_delivered(struct recon *r, struct tracker_hart *h)
{
	uint32_t top = h->stk->n - 1, frame = h->stk->v[top].frame;
	OOB_DEBUG("recon: a signal delivery not seen until the trampoline: handler %#" PRIx64,
		  r->run.frames.v[frame].addr);
	r->run.st.events++;
	r->run.st.traps++;
	recon_pop_to(r, h, top);
	recon_push(r, h, frame_named(&r->run.frames, PROFILE_FRAME_MARKER, "[trap]"), 0,
		   IDS_MARK_TRAP, 1);
	recon_push(r, h, frame, STACK_RET_NONE, 0, 1);
}

/*
 * Signals in user-mode traces: the handler is entered by a trap (the ecall
 * that raised it, or whatever instruction the signal interrupted), so it
 * runs in a segment above a trap marker, at its bottom, with no return
 * address. It returns into the sigreturn trampoline (QEMU user mode's page
 * in no ELF, the vDSO's __vdso_rt_sigreturn, libc's __restore_rt), whose
 * ecall is rt_sigreturn: control goes back to where the signal came, which
 * is the trap return of that marker. Whatever the segment holds when the
 * trampoline is reached (frames not seen returning: Go's handler switches
 * stacks) is over. A segment that no trap began returns into a trampoline
 * only when the delivery went unseen (missed_delivery).
 */
int recon_sigreturn_enter(struct recon *r, struct tracker_hart *h, struct code_block **nbp)
{
	struct stack *s = h->stk;
	uint32_t base = stack_segment_base(s);
	recon_touch(r, base ? base - 1 : 0);
	/* An empty segment (a return right above its marker: only in corrupt
	 * input) has no handler frame to name. */
	if (base >= s->n || (*nbp)->kernel)
		return 0;
	int trapped = base > 0 && s->v[base - 1].marker != IDS_MARK_ROOT;
	if (!trapped && !missed_delivery(r, h, *nbp))
		return 0;
	map_vdso(r, h, nbp);
	struct code_block *nb = *nbp;
	int tramp =
	    nb->func == FRAME_NONE ? !nb->map : recon_fn_kind(r, nb->func) == RECON_FN_SIGRETURN;
	if (!tramp)
		return 0;
	if (!trapped) {
		as_delivered(r, h);
		base = stack_segment_base(s);
	}
	uint64_t handler = r->run.frames.v[s->v[base].frame].addr;
	if (recon_fn_kind(r, s->v[base].frame) == RECON_FN_PLAIN)
		r->fkind[s->v[base].frame] = RECON_FN_SIG_HANDLER;
	r->sigret_pushed = 1;
	recon_pop_to(r, h, base);
	recon_push(r, h, nb->func == FRAME_NONE ? sigret_frame(r) : nb->func, STACK_RET_NONE, 0, 1);
	stack_top(s)->jmp = handler; /* a trampoline's jmp: the entry of its handler */
	return 1;
}

int recon_sig_landing(struct recon *r, struct tracker_hart *h, const struct code_block *nb)
{
	/* QEMU user mode delivers a pending signal when a block ends; after a
	 * ret the next block (the return site) may not have started, and only
	 * the handler's entry shows. The -d exec log then has no "Stopped
	 * execution" line to say so (trace_qemu.c), nor has a plugin trace. */
	if (nb->kernel || nb->func == FRAME_NONE || nb->start != nb->entry ||
	    recon_fn_kind(r, nb->func) != RECON_FN_SIG_HANDLER)
		return 0;
	return stack_find_ret(h->stk, nb->start) < 0;
}

/* After rt_sigreturn, control lands where the signal came (the marker's
 * return point, or the instruction after it) unless another signal is
 * delivered at once: the handler's entry again, or another function's
 * entry away from that point. */
static int redelivered(const struct stack_entry *m, const struct code_block *nb, uint64_t handler)
{
	if (nb->func == FRAME_NONE || nb->start != nb->entry)
		return 0;
	if (m->marker == IDS_MARK_TRAP_CALL) /* the call it cut short lands on its callee */
		return nb->start == handler;
	if (m->marker != IDS_MARK_TRAP)
		return 0;
	return nb->start == handler || (m->ret && (nb->start <= m->ret || nb->start > m->ret + 4));
}

int recon_sigreturn_done(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i)
{
	const struct stack_entry *top = stack_top(h->stk);
	if (recon_fn_kind(r, top->frame) != RECON_FN_SIGRETURN || nb->kernel ||
	    nb->func == top->frame || (nb->func == FRAME_NONE && !nb->map) || priv_rises(r, h, i))
		return 0;
	int64_t m = stack_last_marker(h->stk);
	recon_touch(r, m < 0 ? 0 : m);
	recon_flush(r, h, i);
	r->run.st.events++;
	r->run.st.trap_returns++;
	if (m >= 0 && r->go && nb->func != FRAME_NONE && nb->start == nb->entry &&
	    h->stk->v[m].marker == IDS_MARK_TRAP &&
	    recon_fn_kind(r, nb->func) == RECON_FN_GO_PREEMPT) {
		recon_go_asyncpreempt(r, h, nb, (uint32_t)m);
		return 1;
	}
	if (m >= 0 && redelivered(&h->stk->v[m], nb, top->jmp)) {
		uint64_t rp = h->stk->v[m].ret;
		uint32_t kind = h->stk->v[m].marker;
		recon_pop_to(r, h, (uint32_t)m);
		recon_trap(r, h, nb, i, "[trap]", kind, rp);
		return 1;
	}
	recon_resume(r, h, nb, i);
	return 1;
}

/*
 * Signals in full-system traces: the kernel's path is in the trace. A
 * delivery rewrites sepc, so the sret lands on the handler's entry: the
 * trap's marker stays (the signal came there) and the handler is the bottom
 * of a segment above it, as a trap's handler is. Several signals set up in
 * one kernel stay run last first, each returning into the previous one's
 * entry: a [signal] marker each keeps their place. rt_sigreturn restores the
 * context saved at the delivery: its ecall's marker, the trampoline, and
 * whatever the handler's segment holds go, and the signal's trap returns
 * (recon_resume), or the stacked handler below runs.
 */
static uint32_t sigstack_frame(struct recon *r)
{
	if (r->sigstack_frame == FRAME_NONE)
		r->sigstack_frame = frame_named(&r->run.frames, PROFILE_FRAME_MARKER, "[signal]");
	return r->sigstack_frame;
}

/* The marker below the topmost one (at m), -1 if none. */
static int64_t marker_below(const struct stack *s, int64_t m)
{
	while (--m >= 0)
		if (s->v[m].marker)
			return m;
	return -1;
}

static void enter_handler(struct recon *r, struct tracker_hart *h, struct code_block *nb,
			  uint32_t frames)
{
	for (uint32_t k = 1; k < frames; k++)
		recon_push(r, h, sigstack_frame(r), 0, IDS_MARK_TRAP, 1);
	recon_push(r, h, code_frame_at(nb), STACK_RET_NONE, 0, 1);
}

int recon_signal_xret(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i)
{
	struct task *t = h->task;
	uint32_t frames = t->sig_frames;
	int back = t->sig_return;
	if (!frames && !back)
		return 0;
	t->sig_frames = 0;
	t->sig_return = 0;
	struct stack *s = h->stk;
	int64_t m = stack_last_marker(s);
	if (t->exec_pending || m < 0 || s->v[m].marker == IDS_MARK_ROOT)
		return 0;
	if (back) {
		int64_t m0 = marker_below(s, m);
		if (m0 < 0 || s->v[m0].marker == IDS_MARK_ROOT) {
			r->run.st
			    .repairs_unknown++; /* no delivery seen: the trace began in a handler */
			return 0;
		}
		recon_pop_to(r, h, (uint32_t)m0 + 1);
		m = m0;
		if (!frames && s->v[m].frame == r->sigstack_frame) {
			recon_pop_to(r, h, (uint32_t)m); /* the handler set up before runs */
			enter_handler(r, h, nb, 1);
			return 1;
		}
		if (!frames) {
			recon_resume(r, h, nb, i);
			return 1;
		}
	}
	recon_pop_to(r, h, (uint32_t)m + 1);
	enter_handler(r, h, nb, frames);
	return 1;
}
