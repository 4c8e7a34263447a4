/*
 * gotrace_model: goroutine, P and M state machines over the ordered events,
 * producing state intervals, syscalls, ranges, tasks, regions and logs.
 *
 * The decoders already checked what ordering needs (sequence numbers and
 * states); this pass is deliberately lenient: an event that does not fit the
 * tracked state (possible at the start of a trace, or in a damaged one)
 * still moves the entity to the state the event implies, so a model always
 * comes out and every interval is well-formed (start <= end).
 *
 * This file dispatches the events by kind and finishes the model (sorts,
 * groups and publishes it); the state machines are in gotrace_model_sched.c
 * (goroutines, Ps, Ms) and gotrace_model_ranges.c (ranges, tasks, regions,
 * logs).
 */
#include <stdlib.h>
#include <string.h>

#include "go/gotrace_model_impl.h"

static void dispatch(struct model *md, const struct gotrace_event *e)
{
	switch (e->kind) {
	case GOTRACE_EV_GO_CREATE:
	case GOTRACE_EV_GO_CREATE_BLOCKED:
	case GOTRACE_EV_GO_CREATE_SYSCALL:
		gotrace_model_on_create(md, e);
		break;
	case GOTRACE_EV_GO_STATUS:
		gotrace_model_on_status(md, e);
		break;
	case GOTRACE_EV_GO_SWITCH:
	case GOTRACE_EV_GO_SWITCH_DESTROY:
		gotrace_model_on_switch(md, e);
		break;
	case GOTRACE_EV_PROC_START:
	case GOTRACE_EV_PROC_STOP:
	case GOTRACE_EV_PROC_STEAL:
	case GOTRACE_EV_PROC_STATUS:
		gotrace_model_on_proc(md, e);
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
		gotrace_model_on_range(md, e);
		break;
	case GOTRACE_EV_TASK_BEGIN:
	case GOTRACE_EV_TASK_END:
	case GOTRACE_EV_REGION_BEGIN:
	case GOTRACE_EV_REGION_END:
	case GOTRACE_EV_LOG:
	case GOTRACE_EV_CPU_SAMPLE:
		gotrace_model_on_annotation(md, e);
		break;
	default:
		gotrace_model_on_goroutine(md, e);
		break;
	}
}

/* --- finishing: close what is open, sort, publish ------------------------ */

static void finish_open(struct model *md)
{
	gotrace_model_close_entities(md);
	gotrace_model_close_ranges(md);
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
