/*
 * ucontext's stack switches (RECONSTRUCTION.md 3.5): swapcontext parks the
 * running context in recon_go.c's store, as mcall parks a goroutine, and
 * the jump out of it lands as gogo's does: on the context parked at the
 * landing pc, on a fresh makecontext context, or back in a live frame.
 */
#include "recon/recon_impl.h"

#include "sym/rv.h"

/* Whether pc follows a call (a context swapcontext or getcontext saved
 * resumes at its caller's return address; makecontext's at a function). */
static int return_site(struct recon *r, struct tracker_hart *h, uint64_t pc)
{
	const struct code_space *cs = space_of(r, h, pc);
	for (unsigned len = 2; len <= 4; len += 2) {
		uint32_t bits;
		struct rv_insn in;
		if (code_fetch(cs, pc - len, &bits) && rv_decode(bits, &in) == len &&
		    (in.kind == RV_CALL || in.kind == RV_CALL_IND || in.kind == RV_SWAP))
			return 1;
	}
	return 0;
}

int recon_ctx_switch(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i)
{
	struct stack *s = h->stk;
	uint32_t base = stack_segment_base(s);
	if (s->n <= base || nb->kernel)
		return 0;
	uint8_t kind = recon_fn_kind(r, stack_top(s)->frame);
	if (kind != RECON_FN_SWAPCONTEXT && kind != RECON_FN_SETCONTEXT)
		return 0;
	if (r->chk && r->chk->spec) {
		r->chk->unsafe = 1; /* the parked contexts are the master's */
		return 0;
	}
	if (!r->go)
		recon_go_init(r);
	recon_flush(r, h, i);
	recon_touch(r, 0);
	r->run.st.events++;
	r->run.st.context_switches++;
	/* a context getcontext saved in a frame still live on this stack: a
	 * return into that frame (the switching function's own entry aside:
	 * every context a swapcontext saved resumes at the same pc) */
	for (uint32_t k = s->n - 1; k-- > base;) {
		if (s->v[k].ret == nb->start) {
			recon_pop_to(r, h, k);
			recon_jump(r, h, nb, nb, i);
			return 1;
		}
	}
	if (kind == RECON_FN_SWAPCONTEXT)
		recon_go_park_running(r, h, base, s->n);
	else
		recon_go_leave(r, h); /* setcontext: the running context is abandoned */
	if (recon_go_resume(r, h, nb, i, base))
		return 1;
	/* A fresh context: makecontext's function (glibc's __start_context,
	 * which calls it; unnamed in a stripped libc) at the bottom of its
	 * stack. Else a context saved before the trace began. */
	int saved = return_site(r, h, nb->start) && nb->start != nb->entry;
	r->run.st.repairs_unknown += (uint64_t)saved;
	recon_rebase(r, h, nb, saved);
	return 1;
}
