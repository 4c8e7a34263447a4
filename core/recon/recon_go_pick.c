/*
 * Choosing among the stacks parked at one pc (RECONSTRUCTION.md 3.5): the
 * returns the hart's next blocks make, followed past its batch into the
 * batches read ahead, and, where they do not decide, which return address
 * the batch's next pcs reach first.
 */
#include "recon/recon_go_impl.h"

#include "sym/rv.h"

/* Moves the slots of cand (n) whose entry d from the top returns to t to
 * the front; returns how many. */
static uint32_t to_front(const struct go_parked *v, uint32_t *cand, uint32_t n, uint32_t d,
			 uint64_t t)
{
	uint32_t keep = 0;
	for (uint32_t c = 0; c < n; c++) {
		const struct go_parked *p = &v[cand[c]];
		if (p->n > d && p->e[p->n - 1 - d].ret == t) {
			uint32_t x = cand[keep];
			cand[keep++] = cand[c];
			cand[c] = x;
		}
	}
	return keep;
}

/* The records of a hart from record i of its batch on, through the
 * batches read ahead (recon_look.c), up to GO_LOOKAHEAD: pcs by index. */
struct go_ahead {
	const uint64_t *pc[GO_SEGS];
	uint32_t n[GO_SEGS], nseg, total;
};

static void ahead_init(struct go_ahead *a, const struct recon *r, uint32_t i)
{
	const struct trace_batch *b = r->run.b, *x;
	a->pc[0] = b->pc + i;
	a->n[0] = a->total = b->n - i;
	a->nseg = 1;
	for (size_t k = 0;
	     a->nseg < GO_SEGS && a->total < GO_LOOKAHEAD && (x = recon_look_ahead(r->look, k));
	     k++) {
		if (x->hart != b->hart)
			continue;
		a->pc[a->nseg] = x->pc;
		a->n[a->nseg++] = x->n;
		a->total += x->n;
	}
	if (a->total > GO_LOOKAHEAD)
		a->total = GO_LOOKAHEAD;
}

static uint64_t ahead_pc(const struct go_ahead *a, uint32_t j)
{
	uint32_t s = 0;
	while (j >= a->n[s])
		j -= a->n[s++];
	return a->pc[s][j];
}

/* Whether control goes from block blk to pc as blk's code can: a trap or
 * a signal cannot be followed. */
static int follows(const struct code_block *blk, uint64_t pc)
{
	if (blk->local)
		return pc == blk->fall || pc == blk->target;
	if (blk->last.kind == RV_CALL)
		return pc == rv_direct_target(&blk->last, blk->last_pc);
	return blk->last.kind == RV_CALL_IND || blk->last.kind == RV_RET ||
	       blk->last.kind == RV_JUMP_IND;
}

/* Orders cand (n slots, all resuming at record i's pc) so that those whose
 * restored return addresses the hart's next returns take, in order, come
 * first; returns how many. The hart's blocks are followed, past its batch
 * into the batches read ahead: a call opens a frame of its own, a return
 * with none open goes into the restored frames (the top one, the
 * switch's, returned at the landing). Stops at what it cannot follow: a
 * trap, a signal, code without bits, the runtime's own switches, a return
 * no candidate expects. */
uint32_t recon_go_narrow(struct recon *r, struct tracker_hart *h, uint32_t *cand, uint32_t n,
			 uint32_t i)
{
	const struct go_parked *v = r->go->v;
	struct go_ahead a;
	ahead_init(&a, r, i);
	uint32_t open = 0, d = 1;
	for (uint32_t j = 0; n > 1 && j < a.total;) {
		uint64_t pc = ahead_pc(&a, j);
		struct code_block *blk = code_block_at(space_of(r, h, pc), pc);
		if (blk->end == CODE_END_NOCODE || blk->kernel || j + blk->n >= a.total ||
		    ahead_pc(&a, j + blk->n - 1) != blk->last_pc ||
		    (blk->func != FRAME_NONE && recon_fn_kind(r, blk->func) != RECON_FN_PLAIN))
			break;
		j += blk->n;
		uint64_t to = ahead_pc(&a, j);
		if (!follows(blk, to))
			break;
		uint8_t k = blk->end == CODE_END_CTI ? blk->last.kind : RV_OTHER;
		if (k == RV_CALL || k == RV_CALL_IND) {
			open++;
		} else if (k == RV_RET && open) {
			open--;
		} else if (k == RV_RET) {
			uint32_t keep = to_front(v, cand, n, d, to);
			if (!keep)
				break;
			n = keep;
			d++;
		} else if (k != RV_OTHER && k != RV_BRANCH && k != RV_JUMP && k != RV_JUMP_IND) {
			break;
		}
	}
	return n;
}

/* Orders cand (n slots, all resuming at the same pc) by which one's return
 * addresses the next pcs of the batch reach, from the top down: of the
 * slots still in the running, those whose return address at the first
 * depth where they differ comes first. Returns how many stay in front. */
uint32_t recon_go_guess(struct recon *r, uint32_t *cand, uint32_t n, uint32_t i)
{
	const struct go_parked *v = r->go->v;
	const struct trace_batch *b = r->run.b;
	uint32_t end = b->n - i > GO_LOOKAHEAD ? i + GO_LOOKAHEAD : b->n;
	uint32_t at = i;
	for (uint32_t d = 1; n > 1; d++) {
		/* the return addresses at depth d (from the top) */
		uint32_t have = 0;
		for (uint32_t c = 0; c < n; c++)
			have += v[cand[c]].n > d;
		if (!have)
			break;
		int differ = 0;
		uint64_t r0 = 0;
		for (uint32_t c = 0; c < n; c++) {
			const struct go_parked *p = &v[cand[c]];
			uint64_t rt = p->n > d ? p->e[p->n - 1 - d].ret : STACK_RET_NONE;
			if (c == 0)
				r0 = rt;
			else if (rt != r0)
				differ = 1;
		}
		if (!differ)
			continue;
		for (; at < end; at++) {
			uint64_t pc = b->pc[at];
			uint32_t keep = to_front(v, cand, n, d, pc);
			if (keep) {
				n = keep;
				break;
			}
		}
		if (at == end)
			break;
	}
	return n;
}
