#include "tasks/park.h"

#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"
#include "profile/profile.h"

static uint32_t kframe(struct frame_table *ft, const struct sym_binary *k, uint64_t bias,
		       unsigned kspace, const char *name, uint64_t *entry)
{
	uint64_t e = sym_binary_find_func(k, name);
	if (entry)
		*entry = e ? e + bias : 0;
	return e ? frame_func(ft, kspace, e + bias, PROFILE_FRAME_KERNEL) : FRAME_NONE;
}

void park_init(struct park *pk, struct frame_table *ft, const struct sym_binary *kernel,
	       uint64_t bias, unsigned kspace)
{
	memset(pk, 0, sizeof(*pk));
	if (!kernel)
		return;
	struct park_hooks *h = &pk->hk;
	h->switch_to = kframe(ft, kernel, bias, kspace, "__switch_to", NULL);
	h->alloc_pid = kframe(ft, kernel, bias, kspace, "alloc_pid", NULL);
	h->kernel_thread = kframe(ft, kernel, bias, kspace, "kernel_thread", NULL);
	h->user_mode_thread = kframe(ft, kernel, bias, kspace, "user_mode_thread", NULL);
	h->kthreadd = kframe(ft, kernel, bias, kspace, "kthreadd", NULL);
	h->kthread = kframe(ft, kernel, bias, kspace, "kthread", NULL);
	h->new_exec = kframe(ft, kernel, bias, kspace, "begin_new_exec", NULL);
	/* do_exit can still sleep (exit_mmap's cond_resched, locks) and be
	 * resumed; do_task_dead's __schedule is the one that never returns */
	h->dead = kframe(ft, kernel, bias, kspace, "do_task_dead", NULL);
	if (h->dead == FRAME_NONE)
		h->dead = kframe(ft, kernel, bias, kspace, "do_exit", NULL);
	h->schedule = kframe(ft, kernel, bias, kspace, "__schedule", NULL);
	h->pick_idle = kframe(ft, kernel, bias, kspace, "pick_next_task_idle", NULL);
	kframe(ft, kernel, bias, kspace, "ret_from_fork", &h->fork_entry);
	h->kthread_start =
	    kframe(ft, kernel, bias, kspace, "ret_from_kernel_thread", &h->kthread_entry);
	pk->enabled = h->switch_to != FRAME_NONE && h->fork_entry;
}

void park_destroy(struct park *pk)
{
	for (size_t k = 0; k < pk->nclones; k++)
		free(pk->clones[k].user);
	free(pk->clones);
	for (size_t k = 0; k < pk->nguesses; k++)
		free(pk->guesses[k].cl.user);
	free(pk->guesses);
	for (size_t k = 0; k < pk->nsibs; k++)
		free(pk->sibs[k].user);
	free(pk->sibs);
	free(pk->parked);
	memset(pk, 0, sizeof(*pk));
}

void park_resume_destroy(struct park_resume *rs)
{
	free(rs->cands);
	free(rs->ref);
	memset(rs, 0, sizeof(*rs));
}

void park_put(struct park *pk, struct task *t, uint16_t hart)
{
	t->hart = hart;
	if (t->dead)
		return; /* never resumed: not a candidate, and not scanned again */
	if (pk->nparked == PARK_MAX) {
		/* the oldest sleeper stops being a candidate: bounded work per
		 * switch, whatever the trace */
		memmove(pk->parked, pk->parked + 1, (pk->nparked - 1) * sizeof(*pk->parked));
		pk->nparked--;
		pk->evicted++;
	}
	oob_xgrow((void **)&pk->parked, &pk->cap_parked, pk->nparked + 1, sizeof(*pk->parked));
	pk->parked[pk->nparked++] = t;
}

void park_take(struct park *pk, const struct task *t)
{
	for (size_t k = 0; k < pk->nparked; k++) {
		if (pk->parked[k] == t) {
			memmove(pk->parked + k, pk->parked + k + 1,
				(pk->nparked - k - 1) * sizeof(*pk->parked));
			pk->nparked--;
			return;
		}
	}
}

/* Whether parked task t may be what __switch_to returns to at land. */
static int may_resume(const struct park *pk, struct task *t, uint64_t land)
{
	const struct stack_entry *top = t->stk.n ? stack_top(&t->stk) : NULL;
	return !t->dead && top && top->frame == pk->hk.switch_to && top->ret == land;
}

static int idle_known(const struct park *pk, uint16_t hart)
{
	for (size_t k = 0; k < pk->nparked; k++)
		if (pk->parked[k]->idle && pk->parked[k]->hart == hart)
			return 1;
	return 0;
}

size_t park_find(struct park *pk, uint64_t land, uint16_t hart, int idle, struct park_resume *rs)
{
	int only_idle = idle && idle_known(pk, hart);
	rs->ncands = 0;
	for (int here = 1; here >= 0; here--) {
		for (size_t k = 0; k < pk->nparked; k++) {
			struct task *t = pk->parked[k];
			if (!may_resume(pk, t, land) || (t->hart == hart) != here ||
			    (only_idle ? !t->idle || t->hart != hart
				       : t->idle && (!idle || t->hart != hart)))
				continue;
			oob_xgrow((void **)&rs->cands, &rs->cap_cands, rs->ncands + 1,
				  sizeof(*rs->cands));
			rs->cands[rs->ncands++] = t;
		}
	}
	return rs->ncands;
}

/* The return address at depth d below the top of t's top segment, or
 * STACK_RET_NONE past its base. */
static uint64_t ret_at(const struct task *t, uint32_t d)
{
	const struct stack *s = &t->stk;
	return s->n > d && s->n - 1 - d >= stack_segment_base(s) ? s->v[s->n - 1 - d].ret
								 : STACK_RET_NONE;
}

void park_guess(struct park_resume *rs, const uint64_t *pc, size_t n)
{
	size_t live = rs->ncands;
	uint32_t d = 1; /* depth 0 is __switch_to, whose return all share */
	for (size_t j = 0; j < n && live > 1; j++) {
		size_t keep = 0;
		for (size_t c = 0; c < live; c++) {
			if (ret_at(rs->cands[c], d) != pc[j])
				continue;
			struct task *t = rs->cands[keep];
			rs->cands[keep++] = rs->cands[c];
			rs->cands[c] = t;
		}
		if (keep) {
			live = keep;
			d++;
		}
	}
}

void park_begin(struct park_resume *rs, const struct stack *s, uint32_t popped)
{
	if (s->n > rs->cap_ref) {
		rs->cap_ref = s->n;
		rs->ref = oob_xrealloc(rs->ref, rs->cap_ref * sizeof(*rs->ref));
	}
	memcpy(rs->ref, s->v, s->n * sizeof(*s->v));
	rs->nref = s->n;
	rs->popped = popped;
	rs->active = 1;
}

void park_begin_sig(struct park_resume *rs, const struct task *t)
{
	rs->sig_frames = t->sig_frames;
	rs->sig_return = t->sig_return;
}

struct park_sig park_sig_if(const struct park_resume *rs, const struct task *run,
			    const struct task *c)
{
	if (c == run)
		return (struct park_sig){run->sig_frames, run->sig_return};
	/* one stay runs rt_sigreturn at most once: a flag run had when parked
	 * is its own */
	uint32_t since = run->sig_frames > rs->sig_frames ? run->sig_frames - rs->sig_frames : 0;
	return (struct park_sig){c->sig_frames + since,
				 c->sig_return || (run->sig_return && !rs->sig_return)};
}

void park_restore(const struct park_resume *rs, struct stack *s)
{
	while (s->cap < rs->nref)
		stack_grow(s);
	memcpy(s->v, rs->ref, rs->nref * sizeof(*s->v));
	s->n = rs->nref;
	stack_rescan_base(s);
}

int park_same_popped(const struct park_resume *rs, const struct task *t)
{
	const struct stack *s = &t->stk;
	if (s->n <= rs->popped)
		return 0;
	for (uint32_t k = 0; k < rs->popped; k++)
		if (s->v[s->n - 1 - k].frame != rs->ref[rs->nref - 1 - k].frame)
			return 0;
	return 1;
}

int park_returns_to(const struct park_resume *rs, const struct task *t, uint32_t slot,
		    uint64_t land)
{
	const struct stack *s = &t->stk;
	if (slot >= rs->nref || s->n < rs->nref - slot)
		return 0;
	/* ref slot k is t's entry s->n - (nref - k): the tops aligned */
	for (uint32_t k = slot; k < rs->nref; k++)
		if (s->v[s->n - (rs->nref - k)].frame != rs->ref[k].frame)
			return 0;
	return s->v[s->n - (rs->nref - slot)].ret == land;
}

void park_narrow(struct park_resume *rs, const struct task *t, uint32_t slot, uint64_t land)
{
	size_t keep = 0;
	for (size_t c = 0; c < rs->ncands; c++)
		if (rs->cands[c] == t || park_returns_to(rs, rs->cands[c], slot, land))
			rs->cands[keep++] = rs->cands[c];
	rs->ncands = keep;
}

static int on_stack(const struct stack *s, uint32_t frame)
{
	if (frame == FRAME_NONE)
		return 0;
	for (uint32_t k = 0; k < s->n; k++)
		if (s->v[k].frame == frame)
			return 1;
	return 0;
}

void park_clone_note(struct park *pk, struct task *parent, const struct stack *s)
{
	oob_xgrow((void **)&pk->clones, &pk->cap_clones, pk->nclones + 1, sizeof(*pk->clones));
	struct park_clone *c = &pk->clones[pk->nclones++];
	memset(c, 0, sizeof(*c));
	c->pid = c->born = pk->from_boot ? ++pk->last_pid : -1;
	c->parent = parent;
	c->kind = on_stack(s, pk->hk.kernel_thread)	 ? PARK_KTHREAD
		  : on_stack(s, pk->hk.user_mode_thread) ? PARK_USER_THREAD
							 : PARK_FORK;
	/* the frames between the root and the user trap marker, the marker
	 * included: what the child returns to in user space */
	int64_t m = proc_user_marker(s);
	if (c->kind == PARK_FORK && m > 0) {
		c->nuser = (uint32_t)m;
		c->user = oob_xmalloc(c->nuser * sizeof(*c->user));
		memcpy(c->user, s->v + 1, c->nuser * sizeof(*c->user));
	}
}

int park_clone_take(struct park *pk, enum park_kind kind, struct park_clone *out)
{
	size_t first = SIZE_MAX, n = 0;
	int same_parent = 1;
	for (size_t k = 0; k < pk->nclones; k++) {
		if (pk->clones[k].kind != kind)
			continue;
		if (first == SIZE_MAX)
			first = k;
		same_parent &= pk->clones[k].parent == pk->clones[first].parent;
		n++;
	}
	if (!n)
		return 0;
	*out = pk->clones[first];
	if (n > 1 || out->ambiguous) {
		out->pid = -1;
		for (size_t k = 0; k < pk->nclones; k++)
			pk->clones[k].ambiguous |= pk->clones[k].kind == kind;
	}
	if (!same_parent)
		out->parent = NULL;
	memmove(pk->clones + first, pk->clones + first + 1,
		(pk->nclones - first - 1) * sizeof(*pk->clones));
	pk->nclones--;
	return 1;
}

/* Most fork clones kept as siblings: a fork storm keeps only the latest. */
#define PARK_MAX_SIBS 4096

static struct stack_entry *user_dup(const struct park_clone *cl)
{
	struct stack_entry *u = oob_xmalloc(cl->nuser * sizeof(*u));
	memcpy(u, cl->user, cl->nuser * sizeof(*u));
	return u;
}

void park_guess_note(struct park *pk, struct task *t, struct park_clone *cl)
{
	if (pk->nsibs == PARK_MAX_SIBS) {
		free(pk->sibs[0].user);
		memmove(pk->sibs, pk->sibs + 1, (--pk->nsibs) * sizeof(*pk->sibs));
	}
	oob_xgrow((void **)&pk->sibs, &pk->cap_sibs, pk->nsibs + 1, sizeof(*pk->sibs));
	pk->sibs[pk->nsibs] = *cl;
	pk->sibs[pk->nsibs++].user = user_dup(cl);
	oob_xgrow((void **)&pk->guesses, &pk->cap_guesses, pk->nguesses + 1, sizeof(*pk->guesses));
	pk->guesses[pk->nguesses++] = (struct park_guess){t, *cl};
	cl->user = NULL; /* the guess owns the frames now */
}

/* A guess is over once its task is dead or its cloned frames are gone
 * (exec, or returned from). */
static int guess_open(const struct park_guess *g)
{
	const struct stack *s = &g->t->stk;
	return !g->t->dead && g->cl.nuser > 1 && s->n > 1 && s->v[1].frame == g->cl.user[0].frame;
}

static void guess_drop(struct park *pk, size_t k)
{
	free(pk->guesses[k].cl.user);
	pk->guesses[k] = pk->guesses[--pk->nguesses];
}

/* Whether clone c has g's user frames 0..top, frame top returning to land. */
static int clone_returns(const struct park_clone *c, const struct park_clone *g, uint32_t top,
			 uint64_t land)
{
	if (c->kind != g->kind || c->nuser != g->nuser || c->user[top].ret != land)
		return 0;
	for (uint32_t k = 0; k <= top; k++)
		if (c->user[k].frame != g->user[k].frame)
			return 0;
	return 1;
}

/* The clones a guessed child can be: fork clones taken while siblings were
 * pending, and those still pending. Sets *match to the first that returns to
 * land at depth top; returns how many distinct clones (by pid) do. */
static size_t sibs_returning(const struct park *pk, const struct park_clone *g, uint32_t top,
			     uint64_t land, const struct park_clone **match)
{
	size_t n = 0;
	*match = NULL;
	for (size_t k = 0; k < pk->nsibs + pk->nclones; k++) {
		const struct park_clone *c =
		    k < pk->nsibs ? &pk->sibs[k] : &pk->clones[k - pk->nsibs];
		if (!clone_returns(c, g, top, land) || (*match && (*match)->born == c->born))
			continue;
		if (!*match)
			*match = c;
		n++;
	}
	return n;
}

static size_t guess_of(struct park *pk, const struct task *t)
{
	size_t gi = SIZE_MAX;
	for (size_t k = pk->nguesses; k-- > 0;) {
		if (!guess_open(&pk->guesses[k]))
			guess_drop(pk, k);
		else if (pk->guesses[k].t == t)
			gi = k;
	}
	return gi;
}

int park_guess_fix(struct park *pk, struct task *t, uint64_t land)
{
	size_t gi = guess_of(pk, t);
	if (gi == SIZE_MAX)
		return 0;
	struct park_guess *g = &pk->guesses[gi];
	struct stack *s = &t->stk;
	/* stack entry 1 + k is the clone's user frame k; the top one returns */
	if (s->n < 2 || s->n - 2 >= g->cl.nuser - 1)
		return 0;
	uint32_t top = s->n - 2;
	for (uint32_t k = 0; k <= top; k++)
		if (s->v[1 + k].frame != g->cl.user[k].frame)
			return 0;
	const struct park_clone *c;
	size_t n = sibs_returning(pk, &g->cl, top, land, &c);
	if (!n)
		return 0;
	for (uint32_t k = 0; k <= top; k++)
		s->v[1 + k].ret = g->cl.user[k].ret = c->user[k].ret;
	if (n == 1 && c->born >= 0) {
		/* no other clone of them returns here: t is this one */
		t->pid = c->born;
		if (c->parent)
			t->parent = c->parent->key;
	}
	return 1;
}

/* 1 if a and b have the same stack above their process frames. */
static int lookalike(const struct task *a, const struct task *b)
{
	if (a->stk.n != b->stk.n || a->ucs != b->ucs || a->exec_pending != b->exec_pending)
		return 0;
	for (uint32_t k = 1; k < a->stk.n; k++) {
		const struct stack_entry *x = &a->stk.v[k], *y = &b->stk.v[k];
		if (x->frame != y->frame || x->ret != y->ret || x->marker != y->marker)
			return 0;
	}
	return 1;
}

int park_lookalikes_merge(const struct park_resume *rs, struct task *t)
{
	int pid = 0, parent = 0;
	for (size_t c = 0; c < rs->ncands; c++) {
		const struct task *o = rs->cands[c];
		if (o != t && lookalike(o, t)) {
			pid |= o->pid != t->pid;
			parent |= o->parent != t->parent;
		}
	}
	/* the whole group is one guess: all of it loses what is not shared */
	for (size_t c = 0; c <= rs->ncands && (pid || parent); c++) {
		struct task *o = c < rs->ncands ? rs->cands[c] : t;
		if (o != t && !lookalike(o, t))
			continue;
		if (pid)
			o->pid = -1;
		if (parent)
			o->parent = 0;
	}
	return pid || parent;
}
