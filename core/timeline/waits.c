#include "timeline/waits.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_map.h"
#include "util/oob_mem.h"

/* What a kernel function means to the scheduler (RECONSTRUCTION.md 15). */
enum role {
	R_NONE = 0,
	R_SCHEDULE,   /* __schedule */
	R_DEACTIVATE, /* deactivate_task: the running task leaves its run queue */
	R_TTWU,	      /* try_to_wake_up */
	R_ACTIVATE,   /* ttwu_do_activate: the wakee is back on a run queue */
	R_ACT_TASK,   /* activate_task: the same where ttwu_do_activate is inlined */
	R_QUEUE,      /* ttwu_queue_wakelist: activated later by the target hart */
	R_PENDING,    /* sched_ttwu_pending: the target hart activating them */
	R_IRQ,	      /* an interrupt marker or the kernel's interrupt entry */
	R_NEWTASK,    /* wake_up_new_task: a forked task's first activation */
};

static const struct {
	const char *name;
	uint8_t role;
} roles[] = {
    {"__schedule", R_SCHEDULE},
    {"deactivate_task", R_DEACTIVATE},
    {"try_to_wake_up", R_TTWU},
    {"ttwu_do_activate", R_ACTIVATE},
    {"activate_task", R_ACT_TASK},
    {"ttwu_queue_wakelist", R_QUEUE},
    {"sched_ttwu_pending", R_PENDING},
    {"wake_up_new_task", R_NEWTASK},
    /* pc-only traces show a trap, not its cause: an interrupt is known by
     * the handler the trap entry goes to */
    {"generic_handle_arch_irq", R_IRQ},
    {"handle_riscv_irq", R_IRQ},
    {"handle_softirqs", R_IRQ},
    {"__do_softirq", R_IRQ},
};

/*
 * Who can wake a task blocked in a given function: a wait queue is woken by
 * its own wake-up path, or by a signal. A wait whose stack has `blocked`
 * takes only wakes whose stack has one of `wakers`; with `only`, a wake
 * whose stack has wakers[0] wakes only such waits (an hrtimer sleeper's
 * timer wakes nothing else). RECONSTRUCTION.md 15.
 */
#define WAKERS_MAX 4
static const struct {
	const char *blocked;
	int only;
	const char *wakers[WAKERS_MAX];
} pairs[] = {
    {"do_nanosleep", 1, {"hrtimer_wakeup", "signal_wake_up_state"}},
    {"schedule_hrtimeout_range_clock", 1, {"hrtimer_wakeup", "signal_wake_up_state"}},
    {"pipe_read", 0, {"pipe_write", "pipe_release", "signal_wake_up_state"}},
    {"do_wait", 0, {"do_notify_parent", "__wake_up_parent", "signal_wake_up_state"}},
};
#define NPAIRS (sizeof(pairs) / sizeof(pairs[0]))

/* Per hart: the running task's stack and where the scheduler is in it. */
struct hs {
	uint32_t *stk;
	size_t n, cap;
	uint32_t sched;	       /* depth of a __schedule entered, 0: none */
	uint64_t sched_closed; /* ... closed at this time + 1, 0: not */
	uint64_t deact;	       /* deactivate_task's entry inside it, 0: none */
	int deactivated;       /* ... seen */
	uint32_t ttwu;	       /* depth of a try_to_wake_up entered, 0: none */
	uint64_t ttwu_at;      /* ... when */
	uint32_t pending;      /* depth of a sched_ttwu_pending entered, 0: none */
	uint32_t act;	       /* depth of a ttwu_do_activate entered, 0: none */
	struct waits_stack ttwu_stack;
	int ttwu_queued;
	struct waits_stack sched_stack;
	size_t suspect;	    /* a run ended outside __schedule: its index + 1 */
	uint64_t suspect_t; /* ... when */
};

/* Per task (process frame): whether it is blocked, and since when. */
struct ts {
	uint32_t wait; /* its open wait, WAITS_NONE: not blocked */
	uint64_t last_out;
	int ran;
};

struct wb {
	const struct profile *p;
	int cycles;
	uint8_t *role;
	uint32_t *blocks_in, *wakes_for; /* per frame: bits of pairs[] */
	struct hs *hs;
	size_t nhs;
	struct oob_map task_ix; /* process frame -> index in ts */
	struct ts *ts;
	size_t nts, cap_ts;
	struct waits *w;
	size_t cap_waits, cap_wakes, cap_runs;
	size_t cap_spawns, spawns_taken; /* spawns before this one were given a task */
	struct waits_wake *queued;	 /* remote wakes not activated yet, in order */
	size_t nqueued, cap_queued;
	size_t *run_of; /* per hart: index of its open run + 1, 0: none */
};

static struct waits_stack stack_copy(const uint32_t *v, uint32_t n)
{
	struct waits_stack s = {.v = oob_xmalloc((n ? n : 1) * sizeof(*v)), .n = n};
	memcpy(s.v, v, n * sizeof(*v));
	return s;
}

static struct ts *task_get(struct wb *b, uint32_t frame)
{
	int ins;
	uint64_t *v = oob_map_put(&b->task_ix, frame, &ins);
	if (ins) {
		oob_xgrow((void **)&b->ts, &b->cap_ts, b->nts + 1, sizeof(*b->ts));
		b->ts[b->nts] = (struct ts){.wait = WAITS_NONE};
		*v = b->nts++;
	}
	return &b->ts[*v];
}

static struct hs *hart_get(struct wb *b, unsigned hart)
{
	if (hart >= b->nhs) {
		b->hs = oob_xrealloc(b->hs, (hart + 1) * sizeof(*b->hs));
		memset(b->hs + b->nhs, 0, (hart + 1 - b->nhs) * sizeof(*b->hs));
		b->run_of = oob_xrealloc(b->run_of, (hart + 1) * sizeof(*b->run_of));
		memset(b->run_of + b->nhs, 0, (hart + 1 - b->nhs) * sizeof(*b->run_of));
		b->nhs = hart + 1;
	}
	return &b->hs[hart];
}

static int in_irq(const struct wb *b, const uint32_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b->role[v[i]] == R_IRQ)
			return 1;
	return 0;
}

/* A wake-up activated at k.t on k.hart. */
static void add_wake(struct wb *b, struct waits_wake k)
{
	struct waits *w = b->w;
	oob_xgrow((void **)&w->wakes, &b->cap_wakes, w->nwakes + 1, sizeof(*w->wakes));
	k.wait = WAITS_NONE;
	w->wakes[w->nwakes] = k;
	w->nwakes++;
	w->counts.wakes++;
	w->counts.remote_wakes += k.remote;
}

static void on_activate(struct wb *b, struct hs *h, unsigned hart, uint64_t t)
{
	if (h->ttwu) { /* the waker is right here */
		h->ttwu_queued = 0;
		add_wake(b,
			 (struct waits_wake){.t = t,
					     .at = h->ttwu_at,
					     .hart = hart,
					     .waker = h->stk[0],
					     .stack = stack_copy(h->ttwu_stack.v, h->ttwu_stack.n),
					     .irq = (uint8_t)in_irq(b, h->stk, h->ttwu)});
		return;
	}
	if (!h->pending || !b->nqueued)
		return;
	/* The oldest wake queued for another hart: the list is handed over in
	 * the order it was filled (llist reversed by the flush). */
	struct waits_wake k = b->queued[0];
	memmove(b->queued, b->queued + 1, --b->nqueued * sizeof(*b->queued));
	k.t = t;
	k.hart = hart;
	k.remote = 1;
	add_wake(b, k);
}

/* Whether a wake can end a wait, by their stacks' bits of pairs[]: the
 * wait's (none: any wake), the wake's, and the wake's `only` ones above 16. */
static int fit(uint32_t wait, uint32_t wake)
{
	uint32_t only = wake >> 16;
	return (!wait || (wait & wake & 0xffff)) && (!only || (only & wait));
}

/* Wakes in the window of wait wi that fit it and are not taken yet: how many,
 * and the first (earliest set) or else the last of them in *pick. */
static size_t candidates(const struct waits *w, const uint32_t *by_t, const uint8_t *taken,
			 const uint32_t *fits, size_t wi, uint32_t *pick, int earliest)
{
	const struct waits_wait *wt = &w->waits[wi];
	size_t lo = 0, hi = w->nwakes, n = 0;
	while (lo < hi) { /* the first wake activated at or after deact */
		size_t mid = lo + (hi - lo) / 2;
		if (w->wakes[by_t[mid]].t < wt->deact)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < w->nwakes && w->wakes[by_t[i]].t <= wt->in; i++)
		if (!taken[by_t[i]] && fit(fits[wi], fits[w->nwaits + by_t[i]])) {
			if (!n++ || !earliest)
				*pick = by_t[i];
		}
	return n;
}

struct tkey {
	uint64_t t;
	uint32_t i;
};

static int cmp_tkey(const void *a, const void *b)
{
	const struct tkey *x = a, *y = b;
	return x->t != y->t ? (x->t > y->t) - (x->t < y->t) : (x->i > y->i) - (x->i < y->i);
}

/*
 * Wakers (RECONSTRUCTION.md 15): a task that blocked was activated exactly
 * once between its deactivation and its return, so a wait with one wake in
 * its window not taken by another wait has that one; taking it may leave
 * another wait with one, so this repeats until nothing changes. What is left
 * is counted ambiguous and served first come, first served: in the order the
 * waits ended, each the earliest wake left in its window. Candidates
 * fit: fits[wait] and fits[nwaits + wake] are bits of pairs[], from the
 * blocked and the waker's stacks; a wait without bits takes any wake.
 */
static void match_wakers(struct waits *w, const uint32_t *fits)
{
	uint32_t *by_t = oob_xmalloc((w->nwakes ? w->nwakes : 1) * sizeof(*by_t));
	uint8_t *taken = oob_xcalloc(w->nwakes ? w->nwakes : 1, 1);
	for (size_t i = 0; i < w->nwakes; i++)
		by_t[i] = (uint32_t)i;
	struct tkey *keys = oob_xmalloc((w->nwakes ? w->nwakes : 1) * sizeof(*keys));
	for (size_t i = 0; i < w->nwakes; i++)
		keys[i] = (struct tkey){w->wakes[i].t, (uint32_t)i};
	qsort(keys, w->nwakes, sizeof(*keys), cmp_tkey);
	for (size_t i = 0; i < w->nwakes; i++)
		by_t[i] = keys[i].i;
	free(keys);
	struct waits_counts *c = &w->counts;
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t i = 0; i < w->nwaits; i++) {
			struct waits_wait *wt = &w->waits[i];
			uint32_t k;
			if (wt->wake != WAITS_NONE || wt->in <= wt->out ||
			    candidates(w, by_t, taken, fits, i, &k, 0) != 1)
				continue;
			wt->wake = k;
			taken[k] = 1;
			w->wakes[k].wait = (uint32_t)i;
			c->woken_exact++;
			changed = 1;
		}
	}
	/* the rest first come, first served: in the order they ran again */
	struct tkey *left = oob_xmalloc((w->nwaits ? w->nwaits : 1) * sizeof(*left));
	size_t nleft = 0;
	for (size_t i = 0; i < w->nwaits; i++)
		if (w->waits[i].wake == WAITS_NONE && w->waits[i].in > w->waits[i].out)
			left[nleft++] = (struct tkey){w->waits[i].in, (uint32_t)i};
	qsort(left, nleft, sizeof(*left), cmp_tkey);
	for (size_t j = 0; j < nleft; j++) {
		struct waits_wait *wt = &w->waits[left[j].i];
		uint32_t k;
		if (!candidates(w, by_t, taken, fits, left[j].i, &k, 1)) {
			c->no_waker++;
			continue;
		}
		wt->wake = k;
		wt->ambiguous = 1;
		taken[k] = 1;
		w->wakes[k].wait = left[j].i;
		c->woken_ambiguous++;
	}
	free(left);
	for (size_t i = 0; i < w->nwakes; i++)
		c->wakes_unmatched += !taken[i];
	free(by_t);
	free(taken);
}

/*
 * A switch outside __schedule is the task tracker taking back a provisional
 * resume (RECONSTRUCTION.md 7.1: park_swap, park_user): the task it had
 * resumed did not run. Its run is dropped and its wait reopened; the task
 * switched in instead began running when the dropped run did.
 */
static uint64_t take_back(struct wb *b, struct hs *h, uint64_t t)
{
	if (!h->suspect || h->suspect_t != t)
		return t;
	struct waits_run *r = &b->w->runs[h->suspect - 1];
	h->suspect = 0;
	if (r->wait_before != WAITS_NONE) {
		struct waits_wait *wt = &b->w->waits[r->wait_before];
		wt->in = 0;
		task_get(b, r->task)->wait = r->wait_before;
	}
	r->task = WAITS_NONE;
	return r->in;
}

static void switch_in(struct wb *b, struct hs *h, unsigned hart, uint32_t task, uint64_t t)
{
	t = take_back(b, h, t);
	struct ts *s = task_get(b, task);
	struct waits *w = b->w;
	oob_xgrow((void **)&w->runs, &b->cap_runs, w->nruns + 1, sizeof(*w->runs));
	w->runs[w->nruns] = (struct waits_run){.task = task,
					       .hart = hart,
					       .in = t,
					       .out = t,
					       .wait_before = s->wait,
					       .spawn = WAITS_NONE};
	if (!s->ran && b->spawns_taken < w->nspawns) {
		/* a new task's first run: the oldest fork not yet run (RECONSTRUCTION.md 15) */
		w->runs[w->nruns].spawn = (uint32_t)b->spawns_taken;
		w->spawns[b->spawns_taken++].wait = (uint32_t)w->nruns;
	}
	b->run_of[hart] = ++w->nruns;
	s->ran = 1;
	if (s->wait == WAITS_NONE)
		return;
	struct waits_wait *wt = &w->waits[s->wait];
	wt->in = t;
	wt->hart_in = hart;
	s->wait = WAITS_NONE;
}

static void switch_out(struct wb *b, struct hs *h, unsigned hart, uint64_t t)
{
	uint32_t task = h->stk[0];
	struct ts *s = task_get(b, task);
	if (b->run_of[hart]) {
		b->w->runs[b->run_of[hart] - 1].out = t;
		if (!h->sched) {
			h->suspect = b->run_of[hart];
			h->suspect_t = t;
		}
		b->run_of[hart] = 0;
	}
	s->last_out = t;
	if (h->sched && h->deactivated) {
		struct waits *w = b->w;
		oob_xgrow((void **)&w->waits, &b->cap_waits, w->nwaits + 1, sizeof(*w->waits));
		w->waits[w->nwaits] = (struct waits_wait){.task = task,
							  .hart_out = hart,
							  .deact = h->deact,
							  .out = t,
							  .stack = h->sched_stack,
							  .wake = WAITS_NONE};
		h->sched_stack = (struct waits_stack){0};
		s->wait = (uint32_t)w->nwaits++;
		w->counts.waits++;
	}
	free(h->sched_stack.v);
	free(h->ttwu_stack.v);
	h->sched_stack = h->ttwu_stack = (struct waits_stack){0};
	h->sched = h->ttwu = h->pending = h->act = 0;
	h->sched_closed = 0;
	h->deactivated = h->ttwu_queued = 0;
}

static void on_open(struct wb *b, struct hs *h, const struct recon_event *ev, uint64_t t)
{
	uint8_t r = b->role[ev->frame];
	if (ev->depth == 1) {
		if (profile_frame(b->p, ev->frame)->kind == PROFILE_FRAME_PROCESS)
			switch_in(b, h, ev->hart, ev->frame, t);
		return;
	}
	if (!ev->calls)
		return;
	if (r == R_SCHEDULE && !h->sched) {
		h->sched = ev->depth;
		free(h->sched_stack.v);
		h->sched_stack = stack_copy(h->stk, (uint32_t)h->n);
	} else if (r == R_DEACTIVATE && h->sched && ev->depth > h->sched) {
		h->deactivated = 1;
		h->deact = t;
	} else if (r == R_TTWU && !h->ttwu) {
		h->ttwu = ev->depth;
		h->ttwu_at = t;
		h->ttwu_queued = 0;
		free(h->ttwu_stack.v);
		h->ttwu_stack = stack_copy(h->stk, (uint32_t)h->n);
	} else if (r == R_ACTIVATE || (r == R_ACT_TASK && !h->act)) {
		if (r == R_ACTIVATE)
			h->act = ev->depth;
		on_activate(b, h, ev->hart, t);
	} else if (r == R_QUEUE && h->ttwu) {
		h->ttwu_queued = 1;
	} else if (r == R_PENDING && !h->pending) {
		h->pending = ev->depth;
	} else if (r == R_NEWTASK) {
		struct waits *w = b->w;
		oob_xgrow((void **)&w->spawns, &b->cap_spawns, w->nspawns + 1, sizeof(*w->spawns));
		w->spawns[w->nspawns++] =
		    (struct waits_wake){.t = t,
					.at = t,
					.hart = ev->hart,
					.waker = h->stk[0],
					.stack = stack_copy(h->stk, (uint32_t)h->n),
					.wait = WAITS_NONE};
	}
}

/* A frame closes at depth d: the scheduler states it held end. */
static void on_close(struct wb *b, struct hs *h, const struct recon_event *ev, uint64_t t)
{
	uint32_t d = ev->depth;
	if (d == 1) {
		switch_out(b, h, ev->hart, t);
		return;
	}
	if (h->ttwu == d) {
		if (h->ttwu_queued) { /* activated on the other hart later */
			oob_xgrow((void **)&b->queued, &b->cap_queued, b->nqueued + 1,
				  sizeof(*b->queued));
			b->queued[b->nqueued++] =
			    (struct waits_wake){.at = h->ttwu_at,
						.waker = h->stk[0],
						.stack = h->ttwu_stack,
						.irq = (uint8_t)in_irq(b, h->stk, h->ttwu)};
			h->ttwu_stack = (struct waits_stack){0};
		}
		h->ttwu = 0;
	}
	if (h->pending == d)
		h->pending = 0;
	if (h->act == d)
		h->act = 0;
	if (h->sched == d) /* a return, or the task switched out: the next event says */
		h->sched_closed = t + 1;
}

/* A task switch closes the whole stack at one time; anything else after
 * __schedule closed means it returned without switching out. */
static void settle(struct hs *h, const struct recon_event *ev, uint64_t t)
{
	if (!h->sched_closed || (ev->kind == RECON_EV_CLOSE && h->sched_closed == t + 1))
		return;
	h->sched = h->sched_closed = 0;
	h->deactivated = 0;
}

static uint64_t when(int cycles, const struct recon_event *ev)
{
	return cycles ? ev->cycle : ev->seq;
}

static int on_event(void *ctx, const struct recon_event *ev)
{
	struct wb *b = ctx;
	struct hs *h = hart_get(b, ev->hart);
	uint64_t t = when(b->cycles, ev);
	settle(h, ev, t);
	if (ev->kind == RECON_EV_OPEN) {
		oob_xgrow((void **)&h->stk, &h->cap, h->n + 1, sizeof(*h->stk));
		h->stk[h->n++] = ev->frame;
		on_open(b, h, ev, t);
	} else {
		on_close(b, h, ev, t);
		if (h->n)
			h->n--;
	}
	return 0;
}

/* Role of every frame by name; 0 when the scheduler's functions are absent. */
static int roles_of(struct wb *b, const struct profile *p, uint8_t *role)
{
	int seen = 0;
	for (size_t i = 0; i < profile_nframes(p); i++) {
		const struct profile_frame *f = profile_frame(p, (uint32_t)i);
		if (f->kind == PROFILE_FRAME_MARKER && strncmp(f->name, "[irq", 4) == 0) {
			role[i] = R_IRQ;
			continue;
		}
		if (f->kind != PROFILE_FRAME_KERNEL)
			continue;
		for (size_t j = 0; j < NPAIRS; j++) {
			if (strcmp(f->name, pairs[j].blocked) == 0)
				b->blocks_in[i] |= 1u << j;
			for (size_t k = 0; k < WAKERS_MAX && pairs[j].wakers[k]; k++)
				if (strcmp(f->name, pairs[j].wakers[k]) == 0)
					b->wakes_for[i] |=
					    (1u << j) |
					    (k == 0 && pairs[j].only ? 1u << (16 + j) : 0);
		}
		for (size_t j = 0; j < sizeof(roles) / sizeof(roles[0]); j++)
			if (strcmp(f->name, roles[j].name) == 0) {
				role[i] = roles[j].role;
				seen |= 1 << roles[j].role;
			}
	}
	return (seen & (1 << R_SCHEDULE)) && (seen & (1 << R_DEACTIVATE));
}

static void wb_free(struct wb *b)
{
	for (size_t i = 0; i < b->nhs; i++) {
		free(b->hs[i].stk);
		free(b->hs[i].sched_stack.v);
		free(b->hs[i].ttwu_stack.v);
	}
	for (size_t i = 0; i < b->nqueued; i++)
		free(b->queued[i].stack.v);
	free(b->queued);
	free(b->hs);
	free(b->run_of);
	free(b->role);
	free(b->blocks_in);
	free(b->wakes_for);
	free(b->ts);
	oob_map_destroy(&b->task_ix);
}

int waits_build(struct evlog *log, const struct profile *p, struct waits **out, struct oob_err *err)
{
	if (evlog_capped(log))
		return oob_err_set(err, -EFBIG,
				   "the stack event log was capped: the waits need all of it");
	if (!profile_nprocesses(p))
		return oob_err_set(err, -ENOENT,
				   "no tasks in this run: waits need the kernel's task switches");
	struct wb b = {.p = p, .cycles = profile_has_cycles(p)};
	b.role = oob_xcalloc(profile_nframes(p) + 1, 1);
	b.blocks_in = oob_xcalloc(profile_nframes(p) + 1, sizeof(*b.blocks_in));
	b.wakes_for = oob_xcalloc(profile_nframes(p) + 1, sizeof(*b.wakes_for));
	if (!roles_of(&b, p, b.role)) {
		free(b.blocks_in);
		free(b.wakes_for);
		free(b.role);
		return oob_err_set(err, -ENOENT,
				   "no __schedule and deactivate_task in the stacks: waits need "
				   "a kernel trace with its vmlinux");
	}
	oob_map_init(&b.task_ix, 64);
	b.w = oob_xcalloc(1, sizeof(*b.w));
	b.w->cycles = b.cycles;
	int rc = evlog_replay(log, -1, (uint32_t)profile_nframes(p), on_event, &b, err);
	struct waits *w = b.w;
	for (size_t i = 0; i < b.nts; i++)
		if (b.ts[i].wait != WAITS_NONE)
			w->counts.unended++;
	if (rc == 0) {
		uint32_t *fits = oob_xcalloc(w->nwaits + w->nwakes + 1, sizeof(*fits));
		for (size_t i = 0; i < w->nwaits; i++)
			for (uint32_t d = 0; d < w->waits[i].stack.n; d++)
				fits[i] |= b.blocks_in[w->waits[i].stack.v[d]];
		for (size_t i = 0; i < w->nwakes; i++)
			for (uint32_t d = 0; d < w->wakes[i].stack.n; d++)
				fits[w->nwaits + i] |= b.wakes_for[w->wakes[i].stack.v[d]];
		match_wakers(w, fits);
		free(fits);
	}
	wb_free(&b);
	if (rc < 0) {
		waits_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

void waits_free(struct waits *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nwaits; i++)
		free(w->waits[i].stack.v);
	for (size_t i = 0; i < w->nwakes; i++)
		free(w->wakes[i].stack.v);
	for (size_t i = 0; i < w->nspawns; i++)
		free(w->spawns[i].stack.v);
	free(w->spawns);
	free(w->waits);
	free(w->wakes);
	free(w->runs);
	free(w);
}

uint32_t waits_task_of_pid(const struct profile *p, int64_t pid)
{
	for (size_t i = 0; i < profile_nprocesses(p); i++)
		if (profile_process(p, i)->pid == pid)
			return profile_process(p, i)->frame;
	return WAITS_NONE;
}

uint32_t waits_task_named(const struct profile *p, const char *s)
{
	char *end;
	long long pid = strtoll(s, &end, 10);
	uint32_t f = *s && !*end && pid >= 0 ? waits_task_of_pid(p, pid) : WAITS_NONE;
	for (size_t i = 0; i < profile_nprocesses(p) && f == WAITS_NONE; i++)
		if (!strcmp(profile_frame(p, profile_process(p, i)->frame)->name, s))
			f = profile_process(p, i)->frame;
	return f;
}

/* ---- the off-CPU profile ---- */

static uint32_t child_node(struct oob_map *child, struct profile_node **nodes, size_t *n,
			   size_t *cap, uint32_t parent, uint32_t frame)
{
	int ins;
	uint64_t *v = oob_map_put(child, (uint64_t)parent << 32 | frame, &ins);
	if (ins) {
		oob_xgrow((void **)nodes, cap, *n + 1, sizeof(**nodes));
		(*nodes)[*n] = (struct profile_node){.parent = parent, .frame = frame};
		*v = (*n)++;
	}
	return (uint32_t)*v;
}

struct profile *waits_offcpu_profile(const struct waits *w, const struct profile *p, uint32_t task,
				     struct oob_err *err)
{
	size_t n = 1, cap = 64, nf = profile_nframes(p);
	struct profile_node *nodes = oob_xcalloc(cap, sizeof(*nodes));
	nodes[0] = (struct profile_node){.parent = PROFILE_NONE, .frame = PROFILE_NONE};
	struct oob_map child;
	oob_map_init(&child, 256);
	struct profile_stats st = *profile_stats(p);
	st.instructions = st.cycles = 0;
	for (size_t i = 0; i < w->nwaits; i++) {
		const struct waits_wait *wt = &w->waits[i];
		if (wt->in <= wt->out || (task != WAITS_NONE && wt->task != task))
			continue;
		uint32_t node = 0;
		for (uint32_t d = 0; d < wt->stack.n; d++)
			node = child_node(&child, &nodes, &n, &cap, node, wt->stack.v[d]);
		uint64_t len = wt->in - wt->out;
		nodes[node].calls++;
		nodes[node].self_insns += len;
		st.instructions += len;
		if (w->cycles) {
			nodes[node].self_cycles += len;
			st.cycles += len;
		}
	}
	oob_map_destroy(&child);
	struct profile_frame *frames = oob_xmalloc((nf ? nf : 1) * sizeof(*frames));
	for (size_t i = 0; i < nf; i++)
		frames[i] = *profile_frame(p, (uint32_t)i);
	struct profile *o = profile_new(nodes, n, frames, nf, &st, err);
	free(frames);
	free(nodes);
	if (o)
		profile_copy_processes(o, p);
	return o;
}
