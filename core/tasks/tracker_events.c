/* The events tracker: sideband process events say who runs (events.h). */
#include "tasks/tracker.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/oob_mem.h"

struct evtracker {
	struct tracker base;
	struct events *events;
	uint32_t ev; /* the event next_stop found */
};

static struct task *event_task(struct tracker_run *r, int64_t pid, struct code_space *ucs)
{
	uint64_t key = ids_key(IDS_KEY_EVENT, (uint64_t)pid);
	struct task *t = proc_task_find(&r->proc, key);
	if (!t) {
		t = proc_task_new(&r->proc, key, ucs);
		t->pid = pid;
	}
	return t;
}

/* Index in b of the hart's next event at or after record s, or b->n. */
static uint32_t next_event(struct evtracker *e, struct tracker_hart *h, uint32_t s)
{
	const struct trace_batch *b = e->base.run->b;
	const struct events_ev *v = events_peek(e->events, b->hart);
	if (!v)
		return b->n;
	if (!v->by_cycle || !b->cycle)
		return v->at <= h->seq + s     ? s
		       : v->at < h->seq + b->n ? (uint32_t)(v->at - h->seq)
					       : b->n;
	uint32_t lo = s, hi = b->n; /* first record at or after the event's cycle */
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (b->cycle[mid] < v->at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The ELF given to the job that a map event names, or NULL. */
static const struct sym_binary *map_binary(const struct tracker_run *r, const struct events_ev *e)
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

/*
 * A map event: t's user code has the binary at base from now on. The task
 * gets an address space of its own, a copy of the one it had with the new
 * mapping over whatever it covers (so code decoded before stays valid where
 * it was, and its fork children share the copy until they map or exec).
 * Kernel-half maps (modules) and binaries not given are counted as skipped.
 */
static void apply_map(struct tracker_run *r, struct task *t, const struct events_ev *e)
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
	struct code_space *cs = r->svc->space_new(r, s);
	cs->main_binary = t->ucs->main_binary ? t->ucs->main_binary : b;
	t->ucs = cs;
	t->ucs_known = 1;
	r->st.maps++;
}

static void apply_event(struct tracker_run *r, struct tracker_hart *h, const struct events_ev *e,
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
			r->svc->switch_task(r, h, t->key, i);
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
			r->svc->flush(r, h, i);
			r->svc->pop_to(r, h, stack_segment_base(h->stk));
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

static uint32_t ev_next_stop(struct tracker *t, struct tracker_hart *h, uint32_t s)
{
	struct evtracker *e = (struct evtracker *)t;
	return e->ev = next_event(e, h, s);
}

/* Applies the hart's events due at record at (the one next_stop found first). */
static void ev_stop(struct tracker *t, struct tracker_hart *h, uint32_t at)
{
	struct evtracker *e = (struct evtracker *)t;
	unsigned hart = t->run->b->hart;
	for (uint32_t ev = e->ev; ev == at && ev < t->run->b->n; ev = next_event(e, h, at)) {
		apply_event(t->run, h, events_peek(e->events, hart), at);
		events_take(e->events, hart);
	}
}

/* With registers and a kernel, the kernel's functions still tell exec,
 * exit and clone (proc.h); without, proc has no hooks and these do nothing. */
static void ev_call(struct tracker *t, struct tracker_hart *h, uint32_t f, int indirect)
{
	struct tracker_run *r = t->run;
	proc_on_call(&r->proc, h->task, h->id, f, h->cycles ? h->last_cycle : h->last_seq,
		     (const struct code_space *const *)r->spaces + 1, r->nspaces - 1);
}

static void ev_exit_frame(struct tracker *t, struct tracker_hart *h, uint32_t f)
{
	proc_on_return(&t->run->proc, h->task, h->id, f);
}

static void ev_free(struct tracker *t)
{
	struct evtracker *e = (struct evtracker *)t;
	events_free(e->events);
	free(e);
}

static const struct tracker_ops events_ops = {
    .source = "events",
    .next_stop = ev_next_stop,
    .on_stop = ev_stop,
    .on_call = ev_call,
    .on_exit_frame = ev_exit_frame,
    .free = ev_free,
};

struct tracker *tracker_events_new(struct tracker_run *r, struct events *ev)
{
	struct evtracker *e = oob_xcalloc(1, sizeof(*e));
	e->base = (struct tracker){&events_ops, r};
	e->events = ev;
	return &e->base;
}
