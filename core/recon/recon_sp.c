/*
 * The register regime (RECONSTRUCTION.md 3.6): when the trace carries the
 * hart's writes of sp (x2: Spike's writebacks, the QEMU plugin's sp=on),
 * the stack pointer decides where a non-local landing goes. Each entry
 * pushed by a call keeps the sp the call left (the callee's entry sp), each
 * trap marker the interrupted sp. A frame is live only while sp is at or
 * below its entry sp: a landing pops exactly the frames whose entry sp lies
 * below the new sp. The cost is reading the x2 writes at events (a cursor
 * over the batch's extras), nothing per instruction.
 */
#include "recon/recon_impl.h"

#include "profile/frame.h"

void recon_sp_sync(struct recon *r, struct tracker_hart *h, uint32_t i)
{
	const struct trace_batch *b = r->run.b;
	uint32_t k = r->spx;
	if (r->opts->nonlocal == RECON_NL_PC)
		return;
	for (; k < b->nx && b->x[k].idx < i; k++)
		if (b->x[k].kind == TRACE_X_REG && b->x[k].num == 2) {
			h->sp = b->x[k].val;
			h->sp_seq = h->seq + b->x[k].idx + 1;
		}
	r->spx = k;
}

/* 1 if a landing in block nb can be in e's function: nb's own, or, where
 * nb's code has no symbol (a stripped library's local function: glibc's
 * start_thread, whose setjmp pthread_exit's unwinding lands at), a
 * function of the same binary entered at or below the landing. */
static int lands_in(const struct recon *r, const struct stack_entry *e, const struct code_block *nb)
{
	if (nb->func != FRAME_NONE)
		return e->frame == nb->func;
	const struct frame *f = &r->run.frames.v[e->frame];
	return nb->map && (f->kind == PROFILE_FRAME_USER || f->kind == PROFILE_FRAME_KERNEL) &&
	       f->space == nb->owner->id && f->addr >= nb->map->lo && f->addr <= nb->start;
}

/* Entry e is dead at a landing of sp s (in e's function: in). A tie (e's
 * entry sp is s) is a frame that returned, or a frameless leaf whose sp
 * never moved: the leaf is live only if the landing is in it and nothing
 * above it in its segment was ever pushed (a leaf calls nothing). */
static int dead(const struct stack_entry *e, uint64_t s, int in, int topmost)
{
	return e->sp < s || (e->sp == s && !(topmost && in));
}

/* A trap marker a landing of sp s in user code may leave behind, when the
 * segment above it (a signal handler, on the interrupted stack or on an
 * alternate one) has no live frame of the landing's function: rt_sigreturn
 * and siglongjmp land below it. The walk below must then find the frame,
 * else nothing changes. Kernel segments run on other stacks: never. */
static int marker_left(const struct stack_entry *m, uint64_t s, const struct code_block *nb)
{
	return (m->marker == IDS_MARK_TRAP || m->marker == IDS_MARK_TRAP_CALL) && !nb->kernel &&
	       !(s >> 63);
}

int recon_sp_land(struct recon *r, struct tracker_hart *h, const struct code_block *nb)
{
	struct stack *s = h->stk;
	uint64_t sp = h->sp;
	if (!sp || !s->n || (nb->func == FRAME_NONE && !nb->map))
		return 0;
	int64_t k = (int64_t)s->n - 1;
	int topmost = 1;
	for (;;) {
		while (k >= 0 && !s->v[k].marker && s->v[k].sp &&
		       dead(&s->v[k], sp, lands_in(r, &s->v[k], nb), topmost)) {
			k--;
			topmost = 0;
		}
		if (k >= 0 && !s->v[k].marker && lands_in(r, &s->v[k], nb))
			break; /* the frame the landing is in */
		/* Stopped at a frame of another function (an alternate stack's
		 * handler, a frame of unknown sp) or at a marker: the landing can
		 * only be below the segment's marker. */
		while (k >= 0 && !s->v[k].marker)
			k--;
		if (k < 0 || !marker_left(&s->v[k], sp, nb))
			return 0;
		k--;
		topmost = 1;
	}
	recon_pop_to(r, h, (uint32_t)k + 1);
	r->run.st.sp_landings++;
	return 1;
}

int recon_sp_sigreturn(struct recon *r, struct tracker_hart *h, const struct code_block *blk,
		       struct code_block *nb, uint32_t i)
{
	if (blk->kernel || nb->kernel || priv_rises(r, h, i) || stack_last_marker(h->stk) < 0)
		return 0;
	recon_sp_sync(r, h, i);
	if (h->sp_seq != h->seq + i) /* the ecall did not write sp */
		return 0;
	recon_flush(r, h, i);
	if (!recon_sp_land(r, h, nb))
		return 0;
	r->run.st.events++;
	r->run.st.trap_returns++;
	return 1;
}
