/*
 * waits_path: the critical path of a task (waits.h), walked backwards from
 * the end of the window over the runs and waits waits_build found.
 */
#include <errno.h>
#include <stdlib.h>

#include "timeline/waits.h"
#include "util/oob_mem.h"

/* Runs sorted by (task, switch-in), to find a task's run before a time. */
struct key {
	uint32_t task;
	uint64_t in;
	size_t run;
};

struct byrun {
	const struct waits *w;
	struct key *k;
};

static int cmp_key(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	return x->in < y->in ? -1 : x->in > y->in;
}

/* Position (in k) of task's last run switched in before t, or SIZE_MAX. */
static size_t run_before(const struct byrun *r, uint32_t task, uint64_t t)
{
	size_t lo = 0, hi = r->w->nruns; /* first position with (task, in) >= (task, t) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct key *x = &r->k[mid];
		if (x->task < task || (x->task == task && x->in < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || r->k[lo - 1].task != task)
		return SIZE_MAX;
	return lo - 1;
}

static void step(struct waits_path *o, size_t *cap, struct waits_step s)
{
	if (s.to <= s.from && s.kind != WAITS_RUNNING)
		return;
	oob_xgrow((void **)&o->v, cap, o->n + 1, sizeof(*o->v));
	o->v[o->n++] = s;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* The steps before a run that began after a wait; sets where to go on. */
static void before_wait(const struct waits *w, const struct waits_run *r, uint64_t from,
			struct waits_path *o, size_t *cap, uint32_t *cur, uint64_t *t,
			uint32_t *pending)
{
	const struct waits_wait *wt = &w->waits[r->wait_before];
	struct waits_step s = {
	    .task = *cur, .hart = r->hart, .wait = r->wait_before, .wake = WAITS_NONE};
	if (wt->wake == WAITS_NONE) { /* no waker known: the task's own wait */
		s.kind = WAITS_BLOCKED;
		s.from = max64(wt->out, from);
		s.to = r->in;
		step(o, cap, s);
		*t = wt->out;
		return;
	}
	const struct waits_wake *k = &w->wakes[wt->wake];
	s.kind = WAITS_RUNNABLE;
	s.from = max64(k->t, from);
	s.to = r->in;
	step(o, cap, s);
	if (k->irq) { /* a device or a timer: nothing ran for it */
		s.kind = WAITS_INTERRUPT;
		s.hart = k->hart;
		s.from = max64(wt->out, from);
		s.to = k->t;
		step(o, cap, s);
		*t = wt->out;
		return;
	}
	*cur = k->waker;
	*t = k->at;
	*pending = wt->wake;
}

int waits_critical_path(const struct waits *w, uint32_t task, uint64_t from, uint64_t to,
			struct waits_path *out, struct oob_err *err)
{
	struct byrun r = {.w = w, .k = oob_xmalloc((w->nruns ? w->nruns : 1) * sizeof(*r.k))};
	for (size_t i = 0; i < w->nruns; i++)
		r.k[i] = (struct key){.task = w->runs[i].task, .in = w->runs[i].in, .run = i};
	qsort(r.k, w->nruns, sizeof(*r.k), cmp_key);
	*out = (struct waits_path){0};
	size_t cap = 0;
	uint64_t t = to ? to : UINT64_MAX;
	uint32_t cur = task, pending = WAITS_NONE;
	size_t at = run_before(&r, cur, t);
	if (at == SIZE_MAX || w->runs[r.k[at].run].out <= from) {
		free(r.k);
		return oob_err_set(err, -ENOENT, "the task did not run in the window");
	}
	/* Each turn moves t strictly back; the bound is for a broken input. */
	for (size_t guard = 0; guard < 4 * w->nruns + 4 && t > from; guard++) {
		at = run_before(&r, cur, t);
		if (at == SIZE_MAX)
			break;
		const struct waits_run *x = &w->runs[r.k[at].run];
		step(out, &cap,
		     (struct waits_step){.kind = WAITS_RUNNING,
					 .task = cur,
					 .hart = x->hart,
					 .from = max64(x->in, from),
					 .to = x->out < t ? x->out : t,
					 .wake = pending,
					 .wait = WAITS_NONE});
		pending = WAITS_NONE;
		t = x->in;
		if (t <= from)
			break;
		if (x->wait_before != WAITS_NONE) {
			before_wait(w, x, from, out, &cap, &cur, &t, &pending);
			continue;
		}
		if (!at || r.k[at - 1].task != cur) { /* its first run: on to its parent */
			if (x->spawn == WAITS_NONE)
				break;
			const struct waits_wake *k = &w->spawns[x->spawn];
			step(out, &cap,
			     (struct waits_step){.kind = WAITS_RUNNABLE,
						 .task = cur,
						 .hart = x->hart,
						 .from = max64(k->t, from),
						 .to = x->in,
						 .wake = WAITS_NONE,
						 .wait = WAITS_NONE});
			cur = k->waker;
			t = k->at;
			pending = WAITS_SPAWN | x->spawn;
			continue;
		}
		const struct waits_run *prev = &w->runs[r.k[at - 1].run];
		step(out, &cap,
		     (struct waits_step){.kind = WAITS_RUNNABLE,
					 .task = cur,
					 .hart = x->hart,
					 .from = max64(prev->out, from),
					 .to = x->in,
					 .wake = WAITS_NONE,
					 .wait = WAITS_NONE});
		t = prev->out;
	}
	free(r.k);
	return 0;
}

void waits_path_free(struct waits_path *pth)
{
	free(pth->v);
	pth->v = NULL;
	pth->n = 0;
}
