/*
 * Stack switches (RECONSTRUCTION.md 3.5): Go's runtime's, and the store
 * of parked stacks that ucontext's (recon_ctx.c) share.
 *
 * Go's runtime stack switches in pc-only terms: a
 * hart runs one goroutine's stack at a time, and Go swaps them where no
 * call or return says so. g lives in x27, which a pc-only trace does not
 * show, so the goroutine a switch resumes is told by where it lands:
 *
 *   mcall(fn)      parks the running goroutine: its segment, up to and
 *                  including mcall's frame (whose return address is where
 *                  it resumes), goes to the parked store, and fn runs on
 *                  g0 above a fresh mcall frame. Entered from goexit1, the
 *                  goroutine is dead and is dropped.
 *   gogo(buf)      "returns" (jr t0) to buf.pc: a return address on the
 *                  running stack (newstack resuming after morestack) is an
 *                  ordinary return; else a parked goroutine whose resume
 *                  pc it is is restored (a goroutine that morestack left on
 *                  g0's newstack, preempted there, is parked first, from
 *                  another hart's g0 too: it is in the run queue); else
 *                  a function entry starts a goroutine: [goexit][fn], fn
 *                  returning to goexit+4 (newproc's gostartcall).
 *   systemstack, morestack   nested g0 frames that return (or gogo back)
 *                  into the goroutine's own frames: left as they are.
 *   asyncPreempt   entered from sigreturn as if called from the
 *                  interrupted pc, leaves by a jump back into it
 *                  (recon_sigreturn_done, recon_go_jump).
 *   a signal right after gogo's jump (the jump retired, its target not
 *                  yet): the goroutine runs already, so the g0 frames are
 *                  dead and a goroutine that morestack left on g0 must be
 *                  parked now (another hart may resume it before the
 *                  landing shows); a lone gogo frame stands for the
 *                  goroutine until the trap returns to the target or, when
 *                  the handler preempted it, until asyncPreempt jumps back
 *                  to it, maybe after that frame was parked and resumed.
 *
 * Several goroutines parked at one resume pc (every goroutine blocked in
 * gopark) are told apart as park tells tasks apart: the goroutines whose
 * return addresses, top down, the next pcs of the batch reach first are
 * preferred; the first is resumed provisionally, each return into the
 * restored frames rules out the candidates that would not return there
 * (swapping in another one when the chosen one is ruled out), and what is
 * still open when the goroutine parks again is counted in
 * repairs_ambiguous. Candidates whose stacks are the same are one.
 * A doubt between just two goroutines outlives the park (two goroutines
 * preempted at one pc, the one resumed parks again before any return
 * tells them apart): the goroutine parks with its bottom in doubt, linked
 * to the other one, and the first return into that bottom, whenever
 * either of them runs again, decides; when it fits only the other
 * goroutine's bottom, the two bottoms swap.
 * Goroutines migrate, so a goroutine another hart runs provisionally stays
 * a candidate (a joint choice): when one hart's next pcs or returns fit
 * only the goroutine another hart holds, and that hart could be running
 * this one's instead, the two harts swap goroutines.
 */
#include "recon/recon_impl.h"
#include "recon/recon_go_impl.h"

#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"

void recon_go_init(struct recon *r)
{
	r->go = oob_xcalloc(1, sizeof(*r->go));
}

void recon_go_free(struct recon *r)
{
	if (!r->go)
		return;
	for (uint32_t k = 0; k < r->go->n; k++)
		free(r->go->v[k].e);
	free(r->go->v);
	free(r->go->free);
	free(r->go->prov);
	free(r->go);
	r->go = NULL;
}

static struct go_prov *prov_of(struct recon_go *g, const struct tracker_hart *h)
{
	return tracker_per_hart((void **)&g->prov, &g->nprov, h->id, sizeof(*g->prov));
}

static void slot_release(struct recon_go *g, uint32_t k)
{
	free(g->v[k].e);
	g->v[k] = (struct go_parked){0};
	g->free[g->nfree++] = k;
}

#define GO_NONE UINT32_MAX

static struct go_ent ent_of(const struct stack_entry *e)
{
	return (struct go_ent){e->frame, e->ret, e->sp};
}

/* Parks entries [from, to) of h's stack: the slot, or GO_NONE. */
static uint32_t park(struct recon *r, struct tracker_hart *h, uint32_t from, uint32_t to)
{
	struct recon_go *g = r->go;
	if (to <= from || g->nlive >= GO_PARKED_MAX)
		return GO_NONE;
	uint32_t k;
	if (g->nfree) {
		k = g->free[--g->nfree];
	} else {
		if (g->n == g->cap) {
			g->cap = g->cap ? 2 * g->cap : 64;
			g->v = oob_xrealloc(g->v, g->cap * sizeof(*g->v));
			g->free = oob_xrealloc(g->free, g->cap * sizeof(*g->free));
		}
		k = g->n++;
	}
	struct go_parked *p = &g->v[k];
	*p = (struct go_parked){0};
	p->n = to - from;
	p->e = oob_xmalloc(p->n * sizeof(*p->e));
	for (uint32_t j = 0; j < p->n; j++)
		p->e[j] = ent_of(&h->stk->v[from + j]);
	p->live = 1;
	p->stamp = ++g->stamps;
	g->nlive++;
	return k;
}

/* Whether candidate c of hart self's resume p is still possible: parked,
 * or running provisionally on another hart (a joint choice: either may
 * turn out to be the other's goroutine). */
static int cand_ok(const struct recon_go *g, const struct go_prov *p, uint32_t c, uint16_t self)
{
	const struct go_parked *q = &g->v[p->cand[c]];
	return q->stamp == p->cstamp[c] && (q->live || (q->held && q->held != self + 1));
}

static void cand_add(struct go_prov *p, const struct recon_go *g, uint32_t k)
{
	p->cstamp[p->ncand] = g->v[k].stamp;
	p->cand[p->ncand++] = k;
}

static int same_stack(const struct go_parked *a, const struct go_parked *b)
{
	if (a->n != b->n)
		return 0;
	for (uint32_t j = 0; j < a->n; j++)
		if (a->e[j].frame != b->e[j].frame || a->e[j].ret != b->e[j].ret)
			return 0;
	return 1;
}

/* The provisional resume on h is over: its goroutine is settled. */
static void prov_end(struct recon *r, struct tracker_hart *h, int undecided)
{
	struct go_prov *p = prov_of(r->go, h);
	if (!p->active)
		return;
	if (undecided && p->ncand)
		r->run.st.repairs_ambiguous++;
	slot_release(r->go, p->chosen);
	p->active = 0;
	r->go->provs--;
}

/* Whether l names a goroutine still parked as it was. */
static int link_live(const struct recon_go *g, const struct go_link *l)
{
	return l->on && g->v[l->slot].stamp == l->stamp && g->v[l->slot].live;
}

/* The doubt about its bottom (from base) that the goroutine h runs takes
 * along when it parks: a provisional resume still open between it and one
 * parked goroutine, or the doubt it was resumed with. */
static struct go_link doubt_of(struct recon *r, struct tracker_hart *h, uint32_t base)
{
	struct recon_go *g = r->go;
	struct go_prov *p = prov_of(g, h);
	if (p->active && p->ncand == 1 && p->base == base && g->v[p->cand[0]].live &&
	    g->v[p->cand[0]].stamp == p->cstamp[0]) {
		uint32_t cut = p->low - p->base, returned = p->len - cut, n = g->v[p->cand[0]].n;
		if (cut && n > returned)
			return (struct go_link){p->cand[0], p->cstamp[0], cut, n - returned, 1};
	}
	if (p->link_base == base && link_live(g, &p->link))
		return p->link;
	return (struct go_link){0};
}

/* h stops running its goroutine: its provisional resume and doubt end. */
void recon_go_leave(struct recon *r, struct tracker_hart *h)
{
	prov_end(r, h, 1);
	prov_of(r->go, h)->link.on = 0;
}

/* Parks entries [from, to) of h's stack, the goroutine h runs, with its
 * doubt (linked both ways). */
void recon_go_park_running(struct recon *r, struct tracker_hart *h, uint32_t from, uint32_t to)
{
	struct recon_go *g = r->go;
	struct go_link l = doubt_of(r, h, from);
	l.on = l.on && to > from + l.cut;
	recon_go_leave(r, h); /* counted in repairs_ambiguous: stacks ran on a guess */
	uint32_t k = park(r, h, from, to);
	if (k == GO_NONE || !l.on)
		return;
	g->v[k].link = l;
	g->v[l.slot].link = (struct go_link){k, g->v[k].stamp, l.ocut, l.cut, 1};
}

/* h resumes slot k, its bottom from base: the doubt k parked with goes on. */
static void link_take(struct recon *r, struct tracker_hart *h, uint32_t k, uint32_t base)
{
	struct go_prov *p = prov_of(r->go, h);
	const struct go_link *l = &r->go->v[k].link;
	p->link = link_live(r->go, l) ? *l : (struct go_link){0};
	p->link_base = base;
}

/* Replaces the stack from base up by the bottom count entries of slot k. */
static void restore(struct recon *r, struct tracker_hart *h, uint32_t base, uint32_t k,
		    uint32_t count);

/* The running goroutine's bottom (h's stack from base) is parked slot k's
 * bottom b entries, and the other way round. */
static void swap_bottoms(struct recon *r, struct tracker_hart *h, uint32_t base, uint32_t k,
			 uint32_t b)
{
	struct go_parked *q = &r->go->v[k];
	struct stack *s = h->stk;
	uint32_t a = s->n - base, n = a + q->n - b;
	struct go_ent *e = oob_xmalloc(n * sizeof(*e));
	for (uint32_t j = 0; j < a; j++)
		e[j] = ent_of(&s->v[base + j]);
	memcpy(e + a, q->e + b, (q->n - b) * sizeof(*e));
	restore(r, h, base, k, b);
	free(q->e);
	q->e = e;
	q->n = n;
}

void recon_go_doubt(struct recon *r, struct tracker_hart *h, uint64_t t, int sure)
{
	struct recon_go *g = r->go;
	struct go_prov *p = prov_of(g, h);
	struct go_link *l = &p->link;
	struct stack *s = h->stk;
	if (!l->on)
		return;
	uint32_t top = p->link_base + l->cut; /* the doubt: [link_base, top) */
	if (s->n <= p->link_base || !link_live(g, l)) {
		l->on = 0;
		return;
	}
	if (s->n > top)
		return;
	uint32_t j = top - s->n; /* depth into the doubt of the returning entry */
	struct go_parked *q = &g->v[l->slot];
	int mine = stack_top(s)->ret == t;
	int other = j < l->ocut && q->e[l->ocut - 1 - j].ret == t;
	if ((mine && other) || (!sure && !mine && !other))
		return; /* the two bottoms are alike this far, or t says nothing */
	l->on = 0;
	if (other)
		swap_bottoms(r, h, p->link_base, l->slot, l->ocut - j);
}

/* Replaces the stack from base up by the bottom count entries of slot k. */
static void restore(struct recon *r, struct tracker_hart *h, uint32_t base, uint32_t k,
		    uint32_t count)
{
	const struct go_parked *p = &r->go->v[k];
	recon_pop_to(r, h, base);
	for (uint32_t j = 0; j < count; j++) {
		recon_push(r, h, p->e[j].frame, p->e[j].ret, 0, 0);
		if (h->stk->n > base + j)
			stack_top(h->stk)->sp = p->e[j].sp;
	}
}

void recon_go_mcall(struct recon *r, struct tracker_hart *h)
{
	struct stack *s = h->stk;
	uint32_t base = stack_segment_base(s);
	uint32_t mcall = stack_top(s)->frame;
	int dead = s->n >= 2 && s->n - 2 >= base &&
		   recon_fn_kind(r, s->v[s->n - 2].frame) == RECON_FN_GO_EXIT;
	if (dead)
		recon_go_leave(r, h);
	else
		recon_go_park_running(r, h, base, s->n);
	recon_pop_to(r, h, base);
	recon_push(r, h, mcall, STACK_RET_NONE, 0, 0); /* g0: fn runs above mcall */
}

/* Parks the goroutine that morestack took to g0 (preempted in newstack),
 * if the segment from base holds one: g0 leaves it for another. */
static void park_morestack(struct recon *r, struct tracker_hart *h, uint32_t base)
{
	struct stack *s = h->stk;
	for (uint32_t k = s->n; k-- > base;) {
		if (recon_fn_kind(r, s->v[k].frame) == RECON_FN_GO_MORESTACK) {
			recon_go_park_running(r, h, base, k + 1);
			return;
		}
	}
}

/* Whether g0 ran the scheduler above the morestack frame at: newstack's own
 * gogo (right above it) goes back into that goroutine, but one that was
 * preempted there (gopreempt_m, schedule, execute) is in the run queue and
 * any goroutine may follow, one parked at the same pc too. */
static int rescheduled(struct recon *r, const struct stack *s, uint32_t at)
{
	return recon_fn_kind(r, s->v[at].frame) == RECON_FN_GO_MORESTACK && s->n - 1 > at + 2;
}

/* Whether a goroutine is parked or held at resume pc t. */
static int parked_at(const struct recon_go *g, uint64_t t)
{
	for (uint32_t k = 0; k < g->n; k++)
		if ((g->v[k].live || g->v[k].held) && g->v[k].e[g->v[k].n - 1].ret == t)
			return 1;
	return 0;
}

/*
 * A goroutine that morestack left on another hart's g0, preempted in
 * newstack: once that hart's scheduler runs, the goroutine waits in the
 * run queue, and h's gogo may land at that morestack frame's return
 * address t, even where a goroutine of h's own waits too (then the next
 * pcs choose). The goroutine is parked from that hart, whose g0 frames
 * stay, morestack's at their bottom.
 */
static void park_other_morestack(struct recon *r, struct tracker_hart *h, uint64_t t)
{
	for (size_t o = 0; o < r->nharts; o++) {
		struct tracker_hart *oh = &r->harts[o];
		struct stack *s = oh->stk;
		if (oh == h || !s || s == h->stk)
			continue;
		uint32_t base = stack_segment_base(s);
		for (uint32_t k = s->n; k-- > base;) {
			if (!rescheduled(r, s, k) || s->v[k].ret != t)
				continue;
			recon_go_park_running(r, oh, base, k + 1);
			uint32_t nup = s->n - k;
			struct stack_entry *up = oob_xmalloc(nup * sizeof(*up));
			memcpy(up, s->v + k, nup * sizeof(*up));
			recon_pop_to(r, oh, base);
			for (uint32_t j = 0; j < nup; j++)
				recon_push(r, oh, up[j].frame, j ? up[j].ret : STACK_RET_NONE,
					   up[j].marker, 0);
			free(up);
			return;
		}
	}
}

static int swap_harts(struct recon *r, struct tracker_hart *h, struct go_prov *p, uint32_t now,
		      int blind);

/* The live candidates to resume at nb's pc on h into cand (GO_CAND_MAX);
 * returns how many are parked, *n how many in all. Where the stack pointer
 * tells (the register regime: the parked top entry's sp is the sp the
 * switch restored), the one it names is the only candidate. */
static uint32_t candidates(struct recon *r, struct tracker_hart *h, uint64_t t, uint32_t *cand,
			   uint32_t *n)
{
	struct recon_go *g = r->go;
	uint32_t more = 0, nlive = 0, by_sp = 0, hit = 0;
	*n = 0;
	for (uint32_t k = 0; k < g->n; k++) {
		const struct go_parked *q = &g->v[k];
		if (!(q->live || (q->held && q->held != h->id + 1)) || q->e[q->n - 1].ret != t)
			continue;
		nlive += q->live;
		if (h->sp && q->live && q->e[q->n - 1].sp == h->sp) {
			by_sp++;
			hit = k;
		}
		if (*n < GO_CAND_MAX)
			cand[(*n)++] = k;
		else
			more = 1;
	}
	if (by_sp == 1) {
		r->run.st.sp_landings++;
		cand[0] = hit;
		*n = 1;
		return 1;
	}
	if (more) /* the goroutine may be one not followed */
		r->run.st.repairs_ambiguous++;
	return nlive;
}

/* Resumes, above base, the stack parked at nb's pc that h's stack pointer
 * or next pcs point to (1), or 0 when none is parked there. */
int recon_go_resume(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i,
		    uint32_t base)
{
	struct recon_go *g = r->go;
	struct stack *s = h->stk;
	uint32_t cand[GO_CAND_MAX], n;
	if (!candidates(r, h, nb->start, cand, &n))
		return 0;
	recon_go_leave(r, h);
	uint32_t front = recon_go_guess(r, cand, recon_go_narrow(r, h, cand, n, i), i);
	struct go_prov *p = prov_of(g, h);
	/* the goroutine guessed first among those parked; the others, and
	 * those other harts resumed here provisionally, stay open */
	uint32_t first = 0;
	while (!g->v[cand[first]].live)
		first++;
	uint32_t k = cand[first];
	g->v[k].live = 0;
	g->nlive--;
	p->chosen = k;
	/* the next pcs prefer, to every parked one, a goroutine another hart
	 * resumed here on a blind guess: that hart takes k instead */
	if (first >= front && swap_harts(r, h, p, cand[0], 1)) {
		first = 0;
		k = cand[0];
	}
	p->ncand = p->nfront = 0;
	for (uint32_t c = 0; c < n; c++) {
		if (c != first && !same_stack(&g->v[cand[c]], &g->v[k])) {
			p->nfront += c < front;
			cand_add(p, g, cand[c]);
		}
	}
	g->v[k].held = h->id + 1;
	restore(r, h, base, k, g->v[k].n);
	p->active = 1;
	p->base = base;
	p->len = g->v[k].n;
	p->low = base + p->len - 1; /* mcall's frame returns at once */
	p->chosen = k;
	g->provs++;
	link_take(r, h, k, base);
	if (!p->ncand)
		prov_end(r, h, 0);
	recon_pop_to(r, h, s->n - 1); /* the return out of mcall (swapcontext) */
	if (s->n > base && nb->func != FRAME_NONE && nb->func != stack_top(s)->frame)
		recon_jump(r, h, nb, nb, i);
	return 1;
}

int recon_go_land(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i)
{
	struct stack *s = h->stk;
	uint64_t t = nb->start;
	uint32_t base = stack_segment_base(s);
	int64_t at = stack_find_ret(s, t);
	if (at >= 0 && !rescheduled(r, s, (uint32_t)at)) {
		/* back into the running goroutine: newstack after morestack */
		recon_pop_to(r, h, (uint32_t)at);
		if (s->n > base)
			recon_jump(r, h, nb, nb, i);
		else
			recon_rebase(r, h, nb, 0);
		return 1;
	}
	park_morestack(r, h, base);
	park_other_morestack(r, h, t);
	if (recon_go_resume(r, h, nb, i, base))
		return 1;
	const struct sym_mapping *m = nb->map;
	uint64_t gx = m ? recon_go_goexit(r, m->bin) : 0;
	if (nb->func == FRAME_NONE || nb->start != nb->entry || !gx)
		return 0;
	/* a new goroutine: newproc made it look called from goexit */
	recon_go_leave(r, h);
	struct code_block *xb = code_block_at(space_of(r, h, gx + m->bias), gx + m->bias);
	if (!xb || xb->func == FRAME_NONE)
		return 0;
	recon_pop_to(r, h, base);
	r->run.st.calls++;
	recon_push(r, h, xb->func, STACK_RET_NONE, 0, 0);
	recon_push(r, h, code_frame_at(nb), gx + m->bias + 4, 0, 1);
	return 1;
}

void recon_go_cut(struct recon *r, struct tracker_hart *h)
{
	struct stack *s = h->stk;
	uint32_t base = stack_segment_base(s);
	uint32_t gogo = stack_top(s)->frame;
	park_morestack(r, h, base);
	recon_go_leave(r, h);
	recon_pop_to(r, h, base);
	recon_push(r, h, gogo, STACK_RET_NONE, 0, 0);
}

int recon_go_pending(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i)
{
	struct stack *s = h->stk;
	if (s->n == 0 || s->n - 1 != stack_segment_base(s) ||
	    recon_fn_kind(r, stack_top(s)->frame) != RECON_FN_GO_GOGO ||
	    nb->func == stack_top(s)->frame)
		return 0;
	return recon_go_land(r, h, nb, i);
}

/* Whether slot q returns from its entry at depth d (from the top) to t, or,
 * f a frame, whether asyncPreempt (that entry) jumps back to t in f from q:
 * the frame below it returns to t (the signal came right after that return:
 * a trap on a return leaves the returning frame), or, unless by_ret, t is
 * the entry of f when asyncPreempt completes a call the signal cut short,
 * else that frame is f's or a cut's lone gogo frame: where gogo was going,
 * a new goroutine's entry or a parked goroutine's resume pc (never a pc
 * that asyncPreempt left, however alike the goroutines look). */
static int fits(struct recon *r, const struct go_parked *q, uint32_t d, uint64_t t, uint32_t f,
		int by_ret)
{
	if (f == FRAME_NONE)
		return q->n > d && q->e[q->n - 1 - d].ret == t;
	if (q->n < d + 2)
		return 0;
	const struct go_ent *below = &q->e[q->n - 2 - d];
	if (below->ret == t)
		return 1;
	if (by_ret)
		return 0;
	if (q->e[q->n - 1 - d].ret != STACK_RET_NONE) /* completes a call: on its callee's entry */
		return r->run.frames.v[f].addr == t;
	if (q->n == d + 2 && recon_fn_kind(r, below->frame) == RECON_FN_GO_GOGO)
		return r->run.frames.v[f].addr == t || parked_at(r->go, t);
	return below->frame == f;
}

/* A jump back to t that some goroutine's frame below asyncPreempt returns
 * to: only such goroutines fit (a signal right after a return never leaves
 * the caller's frame on top). */
static int jump_by_ret(const struct recon_go *g, const struct go_prov *p, uint32_t d, uint64_t t,
		       uint16_t self)
{
	const struct go_parked *c = &g->v[p->chosen];
	if (c->n >= d + 2 && c->e[c->n - 2 - d].ret == t)
		return 1;
	for (uint32_t k = 0; k < p->ncand; k++) {
		const struct go_parked *q = &g->v[p->cand[k]];
		if (cand_ok(g, p, k, self) && q->n >= d + 2 && q->e[q->n - 2 - d].ret == t)
			return 1;
	}
	return 0;
}

/* Index of slot k (as stamp) among p's candidates, or -1. */
static int64_t cand_find(const struct go_prov *p, uint32_t k, uint64_t stamp)
{
	for (uint32_t c = 0; c < p->ncand; c++)
		if (p->cand[c] == k && p->cstamp[c] == stamp)
			return c;
	return -1;
}

/* Runs slot k instead of p's chosen one on hart h, whose stack may hold
 * frames called since the resume: they stay, above k's restored frames
 * (the returns seen took both goroutines' top frames alike). 0 if k is
 * too shallow for those returns. */
static int rehome(struct recon *r, struct tracker_hart *h, struct go_prov *p, uint32_t k)
{
	const struct go_parked *q = &r->go->v[k];
	struct stack *s = h->stk;
	uint32_t kept = p->low - p->base, returned = p->len - kept;
	if (q->n <= returned || p->low > s->n)
		return 0;
	uint32_t nnew = s->n - p->low;
	struct stack_entry *above = oob_xmalloc((nnew ? nnew : 1) * sizeof(*above));
	memcpy(above, s->v + p->low, nnew * sizeof(*above));
	restore(r, h, p->base, k, q->n - returned);
	p->low = s->n;
	for (uint32_t j = 0; j < nnew; j++) {
		recon_push(r, h, above[j].frame, above[j].ret, above[j].marker, 0);
		struct stack_entry *e = stack_top(s);
		e->walked = above[j].walked;
		e->jmp = above[j].jmp;
		e->sp = above[j].sp;
	}
	free(above);
	p->len = q->n;
	return 1;
}

/*
 * The joint choice: slot now, which hart h's returns (or, blind, the next
 * pcs of h's batch) say it runs, is held provisionally by another hart
 * whose candidates still include h's chosen slot (blind: one its own next
 * pcs did not tell from now): the two harts swap goroutines. 0 if that
 * hart cannot take it.
 */
static int swap_harts(struct recon *r, struct tracker_hart *h, struct go_prov *p, uint32_t now,
		      int blind)
{
	struct recon_go *g = r->go;
	struct tracker_hart *o = recon_hart(r, g->v[now].held - 1u);
	struct go_prov *po = prov_of(g, o);
	uint32_t was = p->chosen;
	int64_t j = cand_find(po, was, g->v[was].stamp);
	if (!po->active || po->chosen != now || j < 0 || (blind && (uint32_t)j >= po->nfront))
		return 0;
	po->chosen = was;
	if (!rehome(r, o, po, was)) {
		po->chosen = now;
		return 0;
	}
	po->cand[j] = now; /* o may still turn out to run it after all */
	po->cstamp[j] = g->v[now].stamp;
	g->v[was].held = o->id + 1;
	link_take(r, o, was, po->base);
	return 1;
}

void recon_go_recheck(struct recon *r, struct tracker_hart *h, uint64_t t, uint32_t f)
{
	struct recon_go *g = r->go;
	if (!g->provs)
		return;
	struct go_prov *p = prov_of(g, h);
	struct stack *s = h->stk;
	if (!p->active || s->n == 0)
		return;
	uint32_t k = s->n - 1, top = p->base + p->len - 1;
	if (k >= p->low)
		return; /* returning from frames called since the resume */
	if (k < p->base) {
		prov_end(r, h, 1);
		return;
	}
	uint32_t d = top - k;
	int by_ret = f != FRAME_NONE && jump_by_ret(g, p, d, t, h->id);
	uint32_t keep = 0, nfront = 0;
	for (uint32_t c = 0; c < p->ncand; c++) {
		const struct go_parked *q = &g->v[p->cand[c]];
		if (cand_ok(g, p, c, h->id) && fits(r, q, d, t, f, by_ret)) {
			nfront += c < p->nfront;
			p->cstamp[keep] = p->cstamp[c];
			p->cand[keep++] = p->cand[c];
		}
	}
	p->ncand = keep;
	p->nfront = nfront;
	p->low = k;
	if (!fits(r, &g->v[p->chosen], d, t, f, by_ret)) {
		/* the chosen goroutine would not return here: another one does,
		 * a parked one, or one another hart runs provisionally */
		uint32_t was = p->chosen, c = 0;
		for (; c < keep; c++) {
			uint32_t q = p->cand[c];
			if (g->v[q].live || swap_harts(r, h, p, q, 0))
				break;
		}
		if (c < keep) {
			uint32_t now = p->cand[c];
			if (g->v[now].live) {
				g->v[was].live = 1;
				g->v[was].held = 0;
				g->v[now].live = 0;
			}
			g->v[now].held = h->id + 1;
			p->chosen = now;
			link_take(r, h, now, p->base);
			p->len = g->v[now].n;
			restore(r, h, p->base, now, g->v[now].n - d);
			p->low = s->n - 1;
			p->ncand = p->nfront = 0;
			for (uint32_t j = 0; j < keep; j++)
				if (j != c && !same_stack(&g->v[p->cand[j]], &g->v[now]))
					cand_add(p, g, p->cand[j]);
		}
	}
	if (!p->ncand)
		prov_end(r, h, 0);
}

void recon_go_asyncpreempt(struct recon *r, struct tracker_hart *h, struct code_block *nb,
			   uint32_t marker)
{
	/* a call the signal cut short: its return address, for the jump back */
	uint64_t pending =
	    h->stk->v[marker].marker == IDS_MARK_TRAP_CALL ? h->stk->v[marker].ret : STACK_RET_NONE;
	recon_pop_to(r, h, marker);
	r->run.st.calls++;
	recon_push(r, h, nb->func, pending, 0, 1);
}

/*
 * asyncPreempt jumps back to the pc the signal interrupted: in the frame
 * below it, or where the instruction the signal came after was going: the
 * callee of a call (asyncPreempt's ret holds the call's return address), the
 * return address of a return, the target of a tail call.
 */
void recon_go_jump(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i)
{
	struct stack *s = h->stk;
	uint64_t pending = stack_top(s)->ret;
	uint32_t base = stack_segment_base(s);
	r->run.st.returns++;
	recon_pop_to(r, h, s->n - 1);
	if (recon_go_pending(r, h, nb, i))
		return; /* back to where a cut gogo was going */
	if (s->n > base && nb->func != FRAME_NONE && stack_top(s)->frame == nb->func)
		return;
	if (pending != STACK_RET_NONE && nb->start == nb->entry) {
		r->run.st.calls++;
		recon_push(r, h, code_frame_at(nb), pending, 0, 1);
		return;
	}
	if (s->n > base && stack_top(s)->ret == nb->start)
		recon_pop_to(r, h, s->n - 1); /* the return it came after */
	if (s->n > base)
		recon_jump(r, h, nb, nb, i);
	else
		recon_rebase(r, h, nb, 0);
}

void recon_go_trap_return(struct recon *r, struct tracker_hart *h, uint64_t t)
{
	struct recon_go *g = r->go;
	struct go_prov *p = prov_of(g, h);
	const struct stack *s = h->stk;
	if (p->active && s->n && s->n - 1 >= p->base && s->n - 1 < p->low) {
		uint32_t d = p->base + p->len - s->n;
		int ret = fits(r, &g->v[p->chosen], d, t, FRAME_NONE, 0);
		for (uint32_t c = 0; c < p->ncand && !ret; c++)
			ret = cand_ok(g, p, c, h->id) &&
			      fits(r, &g->v[p->cand[c]], d, t, FRAME_NONE, 0);
		if (ret)
			recon_go_recheck(r, h, t, FRAME_NONE);
	}
	recon_go_doubt(r, h, t, 0);
}
