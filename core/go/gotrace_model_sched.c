/*
 * gotrace_model_sched: the goroutine, P and M state machines of the model
 * (state intervals and syscalls), leniently following the ordered events
 * (see gotrace_model.c).
 */
#include <stdlib.h>
#include <string.h>

#include "go/gotrace_model_impl.h"

#define NONE GOTRACE_NONE

size_t gotrace_model_entity(struct model *md, struct oob_map *map, struct gotrace_vec *v,
			    size_t elem, uint64_t id, int *fresh)
{
	uint64_t *slot = oob_map_put(map, id, fresh);
	if (*fresh) {
		memset(gotrace_vec_push(v, elem), 0, elem);
		*slot = v->n - 1;
	}
	(void)md;
	return (size_t)*slot;
}

struct gm *gotrace_model_gget(struct model *md, uint64_t id)
{
	int fresh;
	size_t i = gotrace_model_entity(md, &md->gmap, &md->g, sizeof(struct gm), id, &fresh);
	struct gm *g = &((struct gm *)md->g.p)[i];
	if (fresh) {
		g->pub.id = id;
		g->p = g->m = NONE;
		g->sys = g->assist = SIZE_MAX;
	}
	return g;
}

struct pm *gotrace_model_pget(struct model *md, uint64_t id)
{
	int fresh;
	size_t i = gotrace_model_entity(md, &md->pmap, &md->p, sizeof(struct pm), id, &fresh);
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
	size_t i = gotrace_model_entity(md, &md->mmap, &md->m, sizeof(struct mm), id, &fresh);
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
	struct pm *p = gotrace_model_pget(md, pid);
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
	struct pm *p = gotrace_model_pget(md, pid);
	uint64_t old = p->m;
	p_set(md, p, 0, ts, NONE);
	if (old != NONE) {
		struct mm *m = mget(md, old);
		if (m->p == pid)
			m_set(md, m, m->sysg != NONE ? GOTRACE_G_SYSCALL : 0, ts, NONE);
	}
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

static const char *start_func(const struct gotrace *t, uint32_t stack)
{
	const struct gotrace_stack *s = gotrace_stack(t, stack);
	return s && s->n ? s->frames[0].func : NULL;
}

/* The goroutine an event acts on: its context G. */
struct gm *gotrace_model_cur(struct model *md, const struct gotrace_event *e)
{
	return e->g == NONE ? NULL : gotrace_model_gget(md, e->g);
}

void gotrace_model_on_create(struct model *md, const struct gotrace_event *e)
{
	struct gm *g = gotrace_model_gget(md, e->args[0]);
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

void gotrace_model_on_status(struct model *md, const struct gotrace_event *e)
{
	struct gm *g = gotrace_model_gget(md, e->args[0]);
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
		struct pm *p = gotrace_model_pget(md, e->p);
		p_set(md, p, GOTRACE_G_SYSCALL, e->ticks, p->m);
	}
}

static void on_syscall_end(struct model *md, struct gm *g, const struct gotrace_event *e)
{
	sys_end(md, g, e->ticks, 0);
	g_set(md, g, GOTRACE_G_RUNNING, e->ticks, e);
	mget(md, e->m)->sysg = NONE;
	if (e->p != NONE) {
		struct pm *p = gotrace_model_pget(md, e->p);
		p_set(md, p, GOTRACE_G_RUNNING, e->ticks, p->m);
	}
}

static void on_sysexit(struct model *md, const struct gotrace_event *e)
{
	int v1 = md->t->info.format == 1;
	struct gm *g = v1 ? gotrace_model_gget(md, e->args[0]) : gotrace_model_cur(md, e);
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

void gotrace_model_on_switch(struct model *md, const struct gotrace_event *e)
{
	struct gm *g = gotrace_model_cur(md, e);
	if (g)
		g_set(md, g, e->kind == GOTRACE_EV_GO_SWITCH ? GOTRACE_G_WAITING : GOTRACE_G_DEAD,
		      e->ticks, e);
	if (g && e->kind == GOTRACE_EV_GO_SWITCH_DESTROY) {
		gotrace_model_regions_close_all(md, g, e->ticks);
		g->pub.ended = e->ticks;
	}
	g_set(md, gotrace_model_gget(md, e->args[0]), GOTRACE_G_RUNNING, e->ticks, e);
}

void gotrace_model_on_goroutine(struct model *md, const struct gotrace_event *e)
{
	struct gm *g = gotrace_model_cur(md, e);
	switch (e->kind) {
	case GOTRACE_EV_GO_START:
		g = gotrace_model_gget(md, e->args[0]);
		if (e->str)
			g->pub.label = e->str;
		g_set(md, g, GOTRACE_G_RUNNING, e->ticks, e);
		g->reason = NULL;
		return;
	case GOTRACE_EV_GO_UNBLOCK:
		g_set(md, gotrace_model_gget(md, e->args[0]), GOTRACE_G_RUNNABLE, e->ticks, e);
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
		gotrace_model_regions_close_all(md, g, e->ticks);
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

void gotrace_model_on_proc(struct model *md, const struct gotrace_event *e)
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
		struct pm *p = gotrace_model_pget(md, e->args[0]);
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

void gotrace_model_close_entities(struct model *md)
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
}
