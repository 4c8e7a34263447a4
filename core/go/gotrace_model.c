/*
 * gotrace_model: goroutine, P and M state machines over the ordered events,
 * producing state intervals, syscalls, ranges, tasks, regions and logs.
 *
 * The decoders already checked what ordering needs (sequence numbers and
 * states); this pass is deliberately lenient: an event that does not fit the
 * tracked state (possible at the start of a trace, or in a damaged one)
 * still moves the entity to the state the event implies, so a model always
 * comes out and every interval is well-formed (start <= end).
 */
#include <stdlib.h>
#include <string.h>

#include "go/gotrace_impl.h"

#define NONE GOTRACE_NONE

struct gm { /* a goroutine being modelled */
	struct gotrace_goroutine pub;
	uint64_t since, p, m;
	const char *reason;
	uint32_t stack;
	uint8_t state;
	size_t sys;		    /* index of its last syscall, SIZE_MAX if none */
	size_t assist;		    /* open mark assist range, SIZE_MAX if none */
	struct gotrace_vec regions; /* size_t indexes of its open regions */
};

struct pm {
	struct gotrace_proc pub;
	uint64_t since, m;
	uint8_t state; /* 0 idle, RUNNING, SYSCALL */
	size_t sweep;  /* open sweep range, SIZE_MAX if none */
};

struct mm {
	struct gotrace_thread pub;
	uint64_t since, p, sysg;
	uint8_t state; /* 0 idle, RUNNING (holds a P), SYSCALL (blocked in one, no P) */
};

struct model {
	struct gotrace *t;
	struct oob_map gmap, pmap, mmap, tmap;
	struct gotrace_vec g, p, m; /* struct gm / pm / mm */
	struct gotrace_vec gspans, pspans, mspans, sys, ranges, tasks, regions, logs, samples;
	size_t gc, stw; /* open global ranges, SIZE_MAX if none */
	uint64_t now;
};

static size_t entity(struct model *md, struct oob_map *map, struct gotrace_vec *v, size_t elem,
		     uint64_t id, int *fresh)
{
	uint64_t *slot = oob_map_put(map, id, fresh);
	if (*fresh) {
		memset(gotrace_vec_push(v, elem), 0, elem);
		*slot = v->n - 1;
	}
	(void)md;
	return (size_t)*slot;
}

static struct gm *gget(struct model *md, uint64_t id)
{
	int fresh;
	size_t i = entity(md, &md->gmap, &md->g, sizeof(struct gm), id, &fresh);
	struct gm *g = &((struct gm *)md->g.p)[i];
	if (fresh) {
		g->pub.id = id;
		g->p = g->m = NONE;
		g->sys = g->assist = SIZE_MAX;
	}
	return g;
}

static struct pm *pget(struct model *md, uint64_t id)
{
	int fresh;
	size_t i = entity(md, &md->pmap, &md->p, sizeof(struct pm), id, &fresh);
	struct pm *p = &((struct pm *)md->p.p)[i];
	if (fresh) {
		p->pub.id = id;
		p->m = NONE;
		p->sweep = SIZE_MAX;
	}
	return p;
}

static struct mm *mget(struct model *md, uint64_t id)
{
	int fresh;
	size_t i = entity(md, &md->mmap, &md->m, sizeof(struct mm), id, &fresh);
	struct mm *m = &((struct mm *)md->m.p)[i];
	if (fresh) {
		m->pub.id = id;
		m->p = m->sysg = NONE;
	}
	return m;
}

static struct gotrace_span *span(struct gotrace_vec *v, uint64_t start, uint64_t end)
{
	struct gotrace_span *s = gotrace_vec_push(v, sizeof(*s));
	memset(s, 0, sizeof(*s));
	s->start = start;
	s->end = end < start ? start : end;
	s->g = s->p = s->m = NONE;
	return s;
}

/* Moves goroutine g to state at time ts, closing its current span. */
static void g_set(struct model *md, struct gm *g, uint8_t state, uint64_t ts,
		  const struct gotrace_event *e)
{
	if (g->state != GOTRACE_G_UNKNOWN && g->state != GOTRACE_G_DEAD) {
		struct gotrace_span *s = span(&md->gspans, g->since, ts);
		s->g = g->pub.id;
		s->state = g->state;
		s->reason = g->reason;
		s->stack = g->stack;
		if (g->state == GOTRACE_G_RUNNING || g->state == GOTRACE_G_SYSCALL) {
			s->p = g->p;
			s->m = g->m;
		}
		if (g->state == GOTRACE_G_RUNNING)
			g->pub.running_ticks += s->end - s->start;
	}
	g->state = state;
	g->since = ts < g->since ? g->since : ts;
	g->reason = e ? e->str : NULL;
	g->stack = e ? e->stack : 0;
	g->p = e ? e->p : NONE;
	g->m = e ? e->m : NONE;
}

static void p_set(struct model *md, struct pm *p, uint8_t state, uint64_t ts, uint64_t m)
{
	if (p->state) {
		struct gotrace_span *s = span(&md->pspans, p->since, ts);
		s->p = p->pub.id;
		s->m = p->m;
		s->state = p->state;
	}
	p->state = state;
	p->since = ts;
	p->m = m;
}

static void m_set(struct model *md, struct mm *m, uint8_t state, uint64_t ts, uint64_t p)
{
	if (m->state == state && m->p == p)
		return;
	if (m->state) {
		struct gotrace_span *s = span(&md->mspans, m->since, ts);
		s->m = m->pub.id;
		s->p = m->p;
		s->g = m->state == GOTRACE_G_SYSCALL ? m->sysg : NONE;
		s->state = m->state;
	}
	m->state = state;
	m->since = ts;
	m->p = p;
}

/* P p becomes bound to M m (running) or is released (m == NONE). */
static void bind(struct model *md, uint64_t pid, uint64_t mid, uint8_t pstate, uint64_t ts)
{
	struct pm *p = pget(md, pid);
	uint64_t old = p->m;
	p_set(md, p, pstate, ts, mid);
	if (old != NONE && old != mid) {
		struct mm *m = mget(md, old);
		if (m->p == pid)
			m_set(md, m, m->sysg != NONE ? GOTRACE_G_SYSCALL : 0, ts, NONE);
	}
	if (mid != NONE && pstate)
		m_set(md, mget(md, mid), GOTRACE_G_RUNNING, ts, pid);
}

static void release(struct model *md, uint64_t pid, uint64_t ts)
{
	if (pid == NONE)
		return;
	struct pm *p = pget(md, pid);
	uint64_t old = p->m;
	p_set(md, p, 0, ts, NONE);
	if (old != NONE) {
		struct mm *m = mget(md, old);
		if (m->p == pid)
			m_set(md, m, m->sysg != NONE ? GOTRACE_G_SYSCALL : 0, ts, NONE);
	}
}

static struct gotrace_range *range_open(struct model *md, uint8_t kind,
					const struct gotrace_event *e, size_t *slot)
{
	struct gotrace_range *r = gotrace_vec_push(&md->ranges, sizeof(*r));
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->start = r->end = e->ticks;
	r->g = e->g;
	r->p = e->p;
	r->m = e->m;
	r->name = e->str;
	r->open = 1;
	*slot = md->ranges.n - 1;
	return r;
}

static struct gotrace_range *range_close(struct model *md, size_t *slot, uint64_t ts)
{
	if (*slot == SIZE_MAX)
		return NULL;
	struct gotrace_range *r = &((struct gotrace_range *)md->ranges.p)[*slot];
	r->end = ts < r->start ? r->start : ts;
	r->open = 0;
	*slot = SIZE_MAX;
	return r;
}

/* A range already running at generation start (v2 *Active). */
static void range_active(struct model *md, uint8_t kind, const struct gotrace_event *e,
			 size_t *slot)
{
	if (*slot != SIZE_MAX)
		return;
	struct gotrace_range *r = range_open(md, kind, e, slot);
	r->start = md->t->info.min_ticks;
}

static struct gotrace_syscall *sys_at(struct model *md, size_t i)
{
	return i == SIZE_MAX ? NULL : &((struct gotrace_syscall *)md->sys.p)[i];
}

static void sys_begin(struct model *md, struct gm *g, const struct gotrace_event *e)
{
	struct gotrace_syscall *s = gotrace_vec_push(&md->sys, sizeof(*s));
	memset(s, 0, sizeof(*s));
	s->g = g->pub.id;
	s->p = e->p;
	s->m = e->m;
	s->start = s->end = e->ticks;
	s->stack = e->stack;
	s->open = 1;
	g->sys = md->sys.n - 1;
}

static void sys_end(struct model *md, struct gm *g, uint64_t ts, int blocked)
{
	struct gotrace_syscall *s = sys_at(md, g->sys);
	if (!s || !s->open)
		return;
	s->end = ts < s->start ? s->start : ts;
	s->open = 0;
	s->blocked |= (uint8_t)blocked;
}

/* v1: a syscall that did not block leaves no end event: it was an instant. */
static void sys_settle_fast(struct model *md, struct gm *g)
{
	struct gotrace_syscall *s = sys_at(md, g->sys);
	if (s && s->open && !s->blocked && md->t->info.format == 1 && g->state == GOTRACE_G_RUNNING)
		s->open = 0;
}

static void regions_close_all(struct model *md, struct gm *g, uint64_t ts)
{
	for (size_t i = 0; i < g->regions.n; i++) {
		struct gotrace_region *r =
		    &((struct gotrace_region *)md->regions.p)[((size_t *)g->regions.p)[i]];
		r->end = ts < r->start ? r->start : ts;
		r->open = 0;
	}
	g->regions.n = 0;
}

static void region_begin(struct model *md, struct gm *g, const struct gotrace_event *e)
{
	struct gotrace_region *r = gotrace_vec_push(&md->regions, sizeof(*r));
	memset(r, 0, sizeof(*r));
	r->g = g->pub.id;
	r->task = e->args[0];
	r->name = e->str;
	r->start = r->end = e->ticks;
	r->depth = (uint32_t)g->regions.n;
	r->stack = e->stack;
	r->open = 1;
	*(size_t *)gotrace_vec_push(&g->regions, sizeof(size_t)) = md->regions.n - 1;
}

static int same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void region_end(struct model *md, struct gm *g, const struct gotrace_event *e)
{
	size_t *open = g->regions.p;
	for (size_t k = g->regions.n; k-- > 0;) {
		struct gotrace_region *r = &((struct gotrace_region *)md->regions.p)[open[k]];
		if (!same(r->name, e->str))
			continue;
		for (size_t j = k; j < g->regions.n; j++) {
			struct gotrace_region *q =
			    &((struct gotrace_region *)md->regions.p)[open[j]];
			q->end = e->ticks < q->start ? q->start : e->ticks;
			q->open = 0;
		}
		g->regions.n = k;
		return;
	}
	/* Began before the trace did. */
	struct gotrace_region *r = gotrace_vec_push(&md->regions, sizeof(*r));
	memset(r, 0, sizeof(*r));
	r->g = g->pub.id;
	r->task = e->args[0];
	r->name = e->str;
	r->start = md->t->info.min_ticks;
	r->end = e->ticks;
	r->stack = e->stack;
}

static struct gotrace_task *task_get(struct model *md, uint64_t id)
{
	int fresh;
	size_t i = entity(md, &md->tmap, &md->tasks, sizeof(struct gotrace_task), id, &fresh);
	struct gotrace_task *t = &((struct gotrace_task *)md->tasks.p)[i];
	if (fresh)
		t->id = id;
	return t;
}

static const char *start_func(const struct gotrace *t, uint32_t stack)
{
	const struct gotrace_stack *s = gotrace_stack(t, stack);
	return s && s->n ? s->frames[0].func : NULL;
}

/* The goroutine an event acts on: its context G. */
static struct gm *cur(struct model *md, const struct gotrace_event *e)
{
	return e->g == NONE ? NULL : gget(md, e->g);
}

static void on_create(struct model *md, const struct gotrace_event *e)
{
	struct gm *g = gget(md, e->args[0]);
	uint8_t st = e->kind == GOTRACE_EV_GO_CREATE	       ? GOTRACE_G_RUNNABLE
		     : e->kind == GOTRACE_EV_GO_CREATE_BLOCKED ? GOTRACE_G_WAITING
							       : GOTRACE_G_SYSCALL;
	g->pub.created = e->ticks;
	g->pub.ended = 0;
	if (e->kind != GOTRACE_EV_GO_CREATE_SYSCALL) {
		g->pub.create_stack = e->stack;
		g->pub.start_stack = (uint32_t)e->args[1];
		g->pub.name = start_func(md->t, (uint32_t)e->args[1]);
	}
	g_set(md, g, st, e->ticks, e);
	if (st == GOTRACE_G_SYSCALL)
		sys_begin(md, g, e);
}

static void on_status(struct model *md, const struct gotrace_event *e)
{
	struct gm *g = gget(md, e->args[0]);
	uint8_t st = (uint8_t)e->args[2];
	if (st < GOTRACE_G_RUNNABLE || st > GOTRACE_G_WAITING || st == g->state)
		return;
	struct gotrace_event c = *e;
	if (e->args[1] != NONE)
		c.m = e->args[1];
	g_set(md, g, st, e->ticks, &c);
	if (st == GOTRACE_G_SYSCALL) {
		sys_begin(md, g, &c);
		if (c.m != NONE) {
			struct mm *m = mget(md, c.m);
			m->sysg = g->pub.id;
			if (m->p == NONE)
				m_set(md, m, GOTRACE_G_SYSCALL, e->ticks, NONE);
		}
	}
}

static void on_syscall(struct model *md, struct gm *g, const struct gotrace_event *e)
{
	if (md->t->info.format == 1) {
		sys_settle_fast(md, g);
		sys_begin(md, g, e);
		return;
	}
	sys_begin(md, g, e);
	g_set(md, g, GOTRACE_G_SYSCALL, e->ticks, e);
	mget(md, e->m)->sysg = g->pub.id;
	if (e->p != NONE) {
		struct pm *p = pget(md, e->p);
		p_set(md, p, GOTRACE_G_SYSCALL, e->ticks, p->m);
	}
}

static void on_syscall_end(struct model *md, struct gm *g, const struct gotrace_event *e)
{
	sys_end(md, g, e->ticks, 0);
	g_set(md, g, GOTRACE_G_RUNNING, e->ticks, e);
	mget(md, e->m)->sysg = NONE;
	if (e->p != NONE) {
		struct pm *p = pget(md, e->p);
		p_set(md, p, GOTRACE_G_RUNNING, e->ticks, p->m);
	}
}

static void on_sysexit(struct model *md, const struct gotrace_event *e)
{
	int v1 = md->t->info.format == 1;
	struct gm *g = v1 ? gget(md, e->args[0]) : cur(md, e);
	uint64_t ts = v1 && e->args[2] ? e->args[2] : e->ticks;
	if (!g)
		return;
	sys_end(md, g, ts, 1);
	g_set(md, g, GOTRACE_G_RUNNABLE, ts, e);
	if (e->m == NONE)
		return;
	struct mm *m = mget(md, e->m);
	if (m->sysg == g->pub.id) {
		if (m->state == GOTRACE_G_SYSCALL)
			m_set(md, m, 0, e->ticks, NONE);
		m->sysg = NONE;
	}
}

static void on_switch(struct model *md, const struct gotrace_event *e)
{
	struct gm *g = cur(md, e);
	if (g)
		g_set(md, g, e->kind == GOTRACE_EV_GO_SWITCH ? GOTRACE_G_WAITING : GOTRACE_G_DEAD,
		      e->ticks, e);
	if (g && e->kind == GOTRACE_EV_GO_SWITCH_DESTROY) {
		regions_close_all(md, g, e->ticks);
		g->pub.ended = e->ticks;
	}
	g_set(md, gget(md, e->args[0]), GOTRACE_G_RUNNING, e->ticks, e);
}

static void on_goroutine(struct model *md, const struct gotrace_event *e)
{
	struct gm *g = cur(md, e);
	switch (e->kind) {
	case GOTRACE_EV_GO_START:
		g = gget(md, e->args[0]);
		if (e->str)
			g->pub.label = e->str;
		g_set(md, g, GOTRACE_G_RUNNING, e->ticks, e);
		g->reason = NULL;
		return;
	case GOTRACE_EV_GO_UNBLOCK:
		g_set(md, gget(md, e->args[0]), GOTRACE_G_RUNNABLE, e->ticks, e);
		return;
	case GOTRACE_EV_GO_SYSCALL_EXIT:
		on_sysexit(md, e);
		return;
	}
	if (!g)
		return;
	switch (e->kind) {
	case GOTRACE_EV_GO_END:
	case GOTRACE_EV_GO_END_SYSCALL:
		sys_end(md, g, e->ticks, 0);
		regions_close_all(md, g, e->ticks);
		g_set(md, g, GOTRACE_G_DEAD, e->ticks, e);
		g->pub.ended = e->ticks;
		break;
	case GOTRACE_EV_GO_YIELD:
		g_set(md, g, GOTRACE_G_RUNNABLE, e->ticks, e);
		break;
	case GOTRACE_EV_GO_BLOCK:
		g_set(md, g, GOTRACE_G_WAITING, e->ticks, e);
		break;
	case GOTRACE_EV_GO_SYSCALL:
		on_syscall(md, g, e);
		break;
	case GOTRACE_EV_GO_SYSCALL_END:
		on_syscall_end(md, g, e);
		break;
	case GOTRACE_EV_GO_SYSCALL_BLOCK: {
		struct gotrace_syscall *s = sys_at(md, g->sys);
		if (s && s->open)
			s->blocked = 1;
		else
			sys_begin(md, g, e);
		g_set(md, g, GOTRACE_G_SYSCALL, e->ticks, e);
		if (e->m != NONE)
			mget(md, e->m)->sysg = g->pub.id;
		break;
	}
	case GOTRACE_EV_GO_LABEL:
		g->pub.label = e->str;
		break;
	}
}

static void on_proc(struct model *md, const struct gotrace_event *e)
{
	int v1 = md->t->info.format == 1;
	switch (e->kind) {
	case GOTRACE_EV_PROC_START:
		bind(md, v1 ? e->p : e->args[0], v1 ? e->args[0] : e->m, GOTRACE_G_RUNNING,
		     e->ticks);
		break;
	case GOTRACE_EV_PROC_STOP:
		release(md, e->p, e->ticks);
		break;
	case GOTRACE_EV_PROC_STEAL:
		release(md, e->args[0], e->ticks);
		break;
	case GOTRACE_EV_PROC_STATUS: {
		struct pm *p = pget(md, e->args[0]);
		uint8_t st = e->args[1] == 1   ? GOTRACE_G_RUNNING
			     : e->args[1] == 3 ? GOTRACE_G_SYSCALL
					       : 0;
		if (st && e->m != NONE && (p->state != st || p->m != e->m))
			bind(md, e->args[0], e->m, st, e->ticks);
		else if (!st && p->state)
			release(md, e->args[0], e->ticks);
		break;
	}
	}
}

static void on_range(struct model *md, const struct gotrace_event *e)
{
	struct gm *g;
	struct gotrace_range *r;
	switch (e->kind) {
	case GOTRACE_EV_GC_START:
		range_close(md, &md->gc, e->ticks);
		range_open(md, GOTRACE_R_GC, e, &md->gc);
		break;
	case GOTRACE_EV_GC_DONE:
		range_close(md, &md->gc, e->ticks);
		break;
	case GOTRACE_EV_GC_ACTIVE:
		range_active(md, GOTRACE_R_GC, e, &md->gc);
		break;
	case GOTRACE_EV_STW_START:
		range_close(md, &md->stw, e->ticks);
		range_open(md, GOTRACE_R_STW, e, &md->stw);
		break;
	case GOTRACE_EV_STW_DONE:
		range_close(md, &md->stw, e->ticks);
		break;
	case GOTRACE_EV_SWEEP_START:
		if (e->p != NONE)
			range_open(md, GOTRACE_R_SWEEP, e, &pget(md, e->p)->sweep);
		break;
	case GOTRACE_EV_SWEEP_DONE:
		if (e->p != NONE && (r = range_close(md, &pget(md, e->p)->sweep, e->ticks))) {
			r->arg[0] = e->args[0];
			r->arg[1] = e->args[1];
		}
		break;
	case GOTRACE_EV_SWEEP_ACTIVE:
		range_active(md, GOTRACE_R_SWEEP, e, &pget(md, e->args[0])->sweep);
		break;
	case GOTRACE_EV_ASSIST_START:
		if ((g = cur(md, e)))
			range_open(md, GOTRACE_R_MARK_ASSIST, e, &g->assist);
		break;
	case GOTRACE_EV_ASSIST_DONE:
		if ((g = cur(md, e)))
			range_close(md, &g->assist, e->ticks);
		break;
	case GOTRACE_EV_ASSIST_ACTIVE:
		g = gget(md, e->args[0]);
		range_active(md, GOTRACE_R_MARK_ASSIST, e, &g->assist);
		((struct gotrace_range *)md->ranges.p)[g->assist].g = g->pub.id;
		break;
	}
}

static void on_annotation(struct model *md, const struct gotrace_event *e)
{
	struct gm *g = cur(md, e);
	struct gotrace_task *t;
	switch (e->kind) {
	case GOTRACE_EV_TASK_BEGIN:
		t = task_get(md, e->args[0]);
		t->parent = e->args[1];
		t->name = e->str;
		t->start = e->ticks;
		break;
	case GOTRACE_EV_TASK_END:
		task_get(md, e->args[0])->end = e->ticks;
		break;
	case GOTRACE_EV_REGION_BEGIN:
		if (g)
			region_begin(md, g, e);
		break;
	case GOTRACE_EV_REGION_END:
		if (g)
			region_end(md, g, e);
		break;
	case GOTRACE_EV_LOG: {
		struct gotrace_log *l = gotrace_vec_push(&md->logs, sizeof(*l));
		l->ticks = e->ticks;
		l->g = e->g;
		l->task = e->args[0];
		l->key = e->str;
		l->value = e->str2;
		break;
	}
	case GOTRACE_EV_CPU_SAMPLE:
		*(const struct gotrace_event **)gotrace_vec_push(&md->samples, sizeof(e)) = e;
		break;
	}
}

static void dispatch(struct model *md, const struct gotrace_event *e)
{
	switch (e->kind) {
	case GOTRACE_EV_GO_CREATE:
	case GOTRACE_EV_GO_CREATE_BLOCKED:
	case GOTRACE_EV_GO_CREATE_SYSCALL:
		on_create(md, e);
		break;
	case GOTRACE_EV_GO_STATUS:
		on_status(md, e);
		break;
	case GOTRACE_EV_GO_SWITCH:
	case GOTRACE_EV_GO_SWITCH_DESTROY:
		on_switch(md, e);
		break;
	case GOTRACE_EV_PROC_START:
	case GOTRACE_EV_PROC_STOP:
	case GOTRACE_EV_PROC_STEAL:
	case GOTRACE_EV_PROC_STATUS:
		on_proc(md, e);
		break;
	case GOTRACE_EV_GC_START:
	case GOTRACE_EV_GC_DONE:
	case GOTRACE_EV_GC_ACTIVE:
	case GOTRACE_EV_STW_START:
	case GOTRACE_EV_STW_DONE:
	case GOTRACE_EV_SWEEP_START:
	case GOTRACE_EV_SWEEP_DONE:
	case GOTRACE_EV_SWEEP_ACTIVE:
	case GOTRACE_EV_ASSIST_START:
	case GOTRACE_EV_ASSIST_DONE:
	case GOTRACE_EV_ASSIST_ACTIVE:
		on_range(md, e);
		break;
	case GOTRACE_EV_TASK_BEGIN:
	case GOTRACE_EV_TASK_END:
	case GOTRACE_EV_REGION_BEGIN:
	case GOTRACE_EV_REGION_END:
	case GOTRACE_EV_LOG:
	case GOTRACE_EV_CPU_SAMPLE:
		on_annotation(md, e);
		break;
	default:
		on_goroutine(md, e);
		break;
	}
}

/* --- finishing: close what is open, sort, publish ------------------------ */

static void finish_open(struct model *md)
{
	uint64_t end = md->t->info.max_ticks;
	size_t n0 = md->gspans.n;
	for (size_t i = 0; i < md->g.n; i++) {
		struct gm *g = &((struct gm *)md->g.p)[i];
		sys_settle_fast(md, g);
		g_set(md, g, GOTRACE_G_DEAD, end, NULL);
	}
	for (size_t i = n0; i < md->gspans.n; i++)
		((struct gotrace_span *)md->gspans.p)[i].open = 1;
	n0 = md->pspans.n;
	for (size_t i = 0; i < md->p.n; i++)
		p_set(md, &((struct pm *)md->p.p)[i], 0, end, NONE);
	for (size_t i = n0; i < md->pspans.n; i++)
		((struct gotrace_span *)md->pspans.p)[i].open = 1;
	n0 = md->mspans.n;
	for (size_t i = 0; i < md->m.n; i++)
		m_set(md, &((struct mm *)md->m.p)[i], 0, end, NONE);
	for (size_t i = n0; i < md->mspans.n; i++)
		((struct gotrace_span *)md->mspans.p)[i].open = 1;
	for (size_t i = 0; i < md->sys.n; i++) {
		struct gotrace_syscall *s = sys_at(md, i);
		if (s->open)
			s->end = end < s->start ? s->start : end;
	}
	for (size_t i = 0; i < md->ranges.n; i++) {
		struct gotrace_range *r = &((struct gotrace_range *)md->ranges.p)[i];
		if (r->open)
			r->end = end < r->start ? r->start : end;
	}
	for (size_t i = 0; i < md->regions.n; i++) {
		struct gotrace_region *r = &((struct gotrace_region *)md->regions.p)[i];
		if (r->open)
			r->end = end;
	}
}

/* Stable sort of n elements of size elem by a 2-key comparison. */
struct sortctx {
	const char *base;
	size_t elem;
	uint64_t (*k1)(const void *), (*k2)(const void *);
};

static int cmp_idx(const void *pa, const void *pb, void *vctx)
{
	const struct sortctx *c = vctx;
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	const void *x = c->base + a * c->elem, *y = c->base + b * c->elem;
	uint64_t xa = c->k1(x), ya = c->k1(y);
	if (xa != ya)
		return xa < ya ? -1 : 1;
	if (c->k2 && (xa = c->k2(x)) != (ya = c->k2(y)))
		return xa < ya ? -1 : 1;
	return (a > b) - (a < b);
}

static void sort_vec(struct gotrace_vec *v, size_t elem, uint64_t (*k1)(const void *),
		     uint64_t (*k2)(const void *))
{
	if (v->n < 2)
		return;
	size_t *idx = oob_xmalloc(v->n * sizeof(*idx));
	char *out = oob_xmalloc(v->n * elem);
	struct sortctx c = {v->p, elem, k1, k2};
	for (size_t i = 0; i < v->n; i++)
		idx[i] = i;
	qsort_r(idx, v->n, sizeof(*idx), cmp_idx, &c);
	for (size_t i = 0; i < v->n; i++)
		memcpy(out + i * elem, (char *)v->p + idx[i] * elem, elem);
	free(v->p);
	free(idx);
	v->p = out;
	v->cap = v->n;
}

static uint64_t k_span_g(const void *s)
{
	return ((const struct gotrace_span *)s)->g;
}
static uint64_t k_span_p(const void *s)
{
	return ((const struct gotrace_span *)s)->p;
}
static uint64_t k_span_m(const void *s)
{
	return ((const struct gotrace_span *)s)->m;
}
static uint64_t k_span_start(const void *s)
{
	return ((const struct gotrace_span *)s)->start;
}
static uint64_t k_gm(const void *g)
{
	return ((const struct gm *)g)->pub.id;
}
static uint64_t k_pm(const void *p)
{
	return ((const struct pm *)p)->pub.id;
}
static uint64_t k_mm(const void *m)
{
	return ((const struct mm *)m)->pub.id;
}
static uint64_t k_sys(const void *s)
{
	return ((const struct gotrace_syscall *)s)->start;
}
static uint64_t k_range(const void *r)
{
	return ((const struct gotrace_range *)r)->start;
}
static uint64_t k_region(const void *r)
{
	return ((const struct gotrace_region *)r)->start;
}
static uint64_t k_task(const void *t)
{
	return ((const struct gotrace_task *)t)->id;
}

/* Fills span0/nspans of each entity (ids ascending) from spans sorted by id. */
static void group(const struct gotrace_vec *spans, uint64_t (*kf)(const void *), size_t n,
		  uint64_t (*id_of)(size_t, void *), void (*set)(size_t, void *, size_t, size_t),
		  void *ents)
{
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t id = id_of(i, ents);
		while (j < spans->n && kf((char *)spans->p + j * sizeof(struct gotrace_span)) < id)
			j++;
		size_t k = j;
		while (k < spans->n && kf((char *)spans->p + k * sizeof(struct gotrace_span)) == id)
			k++;
		set(i, ents, j, k - j);
		j = k;
	}
}

static uint64_t gid_of(size_t i, void *v)
{
	return ((struct gm *)v)[i].pub.id;
}
static void gset(size_t i, void *v, size_t s0, size_t n)
{
	((struct gm *)v)[i].pub.span0 = s0;
	((struct gm *)v)[i].pub.nspans = n;
}
static uint64_t pid_of(size_t i, void *v)
{
	return ((struct pm *)v)[i].pub.id;
}
static void pset(size_t i, void *v, size_t s0, size_t n)
{
	((struct pm *)v)[i].pub.span0 = s0;
	((struct pm *)v)[i].pub.nspans = n;
}
static uint64_t mid_of(size_t i, void *v)
{
	return ((struct mm *)v)[i].pub.id;
}
static void mset(size_t i, void *v, size_t s0, size_t n)
{
	((struct mm *)v)[i].pub.span0 = s0;
	((struct mm *)v)[i].pub.nspans = n;
}

static void publish(struct model *md)
{
	struct gotrace *t = md->t;
	struct gotrace_model *out = &t->model;
	t->gs = oob_xcalloc(md->g.n + 1, sizeof(*t->gs));
	for (size_t i = 0; i < md->g.n; i++) {
		struct gm *g = &((struct gm *)md->g.p)[i];
		free(g->regions.p);
		t->gs[i] = g->pub;
	}
	t->ps = oob_xcalloc(md->p.n + 1, sizeof(*t->ps));
	for (size_t i = 0; i < md->p.n; i++)
		t->ps[i] = ((struct pm *)md->p.p)[i].pub;
	t->ms = oob_xcalloc(md->m.n + 1, sizeof(*t->ms));
	for (size_t i = 0; i < md->m.n; i++)
		t->ms[i] = ((struct mm *)md->m.p)[i].pub;
	t->gspans = md->gspans.p;
	t->pspans = md->pspans.p;
	t->mspans = md->mspans.p;
	t->syscalls = md->sys.p;
	t->ranges = md->ranges.p;
	t->tasks = md->tasks.p;
	t->regions = md->regions.p;
	t->logs = md->logs.p;
	t->samples = md->samples.p;
	*out = (struct gotrace_model){.gs = t->gs,
				      .ngs = md->g.n,
				      .ps = t->ps,
				      .nps = md->p.n,
				      .ms = t->ms,
				      .nms = md->m.n,
				      .gspans = t->gspans,
				      .ngspans = md->gspans.n,
				      .pspans = t->pspans,
				      .npspans = md->pspans.n,
				      .mspans = t->mspans,
				      .nmspans = md->mspans.n,
				      .syscalls = t->syscalls,
				      .nsyscalls = md->sys.n,
				      .ranges = t->ranges,
				      .nranges = md->ranges.n,
				      .tasks = t->tasks,
				      .ntasks = md->tasks.n,
				      .regions = t->regions,
				      .nregions = md->regions.n,
				      .logs = t->logs,
				      .nlogs = md->logs.n,
				      .samples = t->samples,
				      .nsamples = md->samples.n};
}

int gotrace_model_build(struct gotrace *t, struct oob_err *err)
{
	struct model md = {.t = t, .gc = SIZE_MAX, .stw = SIZE_MAX};
	(void)err;
	oob_map_init(&md.gmap, 64);
	oob_map_init(&md.pmap, 16);
	oob_map_init(&md.mmap, 16);
	oob_map_init(&md.tmap, 16);
	for (size_t i = 0; i < t->nev; i++)
		dispatch(&md, &t->ev[i]);
	finish_open(&md);
	sort_vec(&md.g, sizeof(struct gm), k_gm, NULL);
	sort_vec(&md.p, sizeof(struct pm), k_pm, NULL);
	sort_vec(&md.m, sizeof(struct mm), k_mm, NULL);
	sort_vec(&md.gspans, sizeof(struct gotrace_span), k_span_g, k_span_start);
	sort_vec(&md.pspans, sizeof(struct gotrace_span), k_span_p, k_span_start);
	sort_vec(&md.mspans, sizeof(struct gotrace_span), k_span_m, k_span_start);
	sort_vec(&md.sys, sizeof(struct gotrace_syscall), k_sys, NULL);
	sort_vec(&md.ranges, sizeof(struct gotrace_range), k_range, NULL);
	sort_vec(&md.regions, sizeof(struct gotrace_region), k_region, NULL);
	sort_vec(&md.tasks, sizeof(struct gotrace_task), k_task, NULL);
	group(&md.gspans, k_span_g, md.g.n, gid_of, gset, md.g.p);
	group(&md.pspans, k_span_p, md.p.n, pid_of, pset, md.p.p);
	group(&md.mspans, k_span_m, md.m.n, mid_of, mset, md.m.p);
	publish(&md);
	free(md.g.p);
	free(md.p.p);
	free(md.m.p);
	oob_map_destroy(&md.gmap);
	oob_map_destroy(&md.pmap);
	oob_map_destroy(&md.mmap);
	oob_map_destroy(&md.tmap);
	return 0;
}

void gotrace_model_free(struct gotrace *t)
{
	free(t->gs);
	free(t->ps);
	free(t->ms);
	free(t->gspans);
	free(t->pspans);
	free(t->mspans);
	free(t->syscalls);
	free(t->ranges);
	free(t->tasks);
	free(t->regions);
	free(t->logs);
	free(t->samples);
	memset(&t->model, 0, sizeof(t->model));
}
