/*
 * gotrace_model_ranges: what the model keeps besides the scheduler's
 * entities: GC, STW, sweep and mark assist ranges, user tasks, regions and
 * logs, and the CPU samples.
 */
#include <stdlib.h>
#include <string.h>

#include "go/gotrace_model_impl.h"

#define NONE GOTRACE_NONE

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

void gotrace_model_regions_close_all(struct model *md, struct gm *g, uint64_t ts)
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
	size_t i = gotrace_model_entity(md, &md->tmap, &md->tasks, sizeof(struct gotrace_task), id,
					&fresh);
	struct gotrace_task *t = &((struct gotrace_task *)md->tasks.p)[i];
	if (fresh)
		t->id = id;
	return t;
}

void gotrace_model_on_range(struct model *md, const struct gotrace_event *e)
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
			range_open(md, GOTRACE_R_SWEEP, e, &gotrace_model_pget(md, e->p)->sweep);
		break;
	case GOTRACE_EV_SWEEP_DONE:
		if (e->p != NONE &&
		    (r = range_close(md, &gotrace_model_pget(md, e->p)->sweep, e->ticks))) {
			r->arg[0] = e->args[0];
			r->arg[1] = e->args[1];
		}
		break;
	case GOTRACE_EV_SWEEP_ACTIVE:
		range_active(md, GOTRACE_R_SWEEP, e, &gotrace_model_pget(md, e->args[0])->sweep);
		break;
	case GOTRACE_EV_ASSIST_START:
		if ((g = gotrace_model_cur(md, e)))
			range_open(md, GOTRACE_R_MARK_ASSIST, e, &g->assist);
		break;
	case GOTRACE_EV_ASSIST_DONE:
		if ((g = gotrace_model_cur(md, e)))
			range_close(md, &g->assist, e->ticks);
		break;
	case GOTRACE_EV_ASSIST_ACTIVE:
		g = gotrace_model_gget(md, e->args[0]);
		range_active(md, GOTRACE_R_MARK_ASSIST, e, &g->assist);
		((struct gotrace_range *)md->ranges.p)[g->assist].g = g->pub.id;
		break;
	}
}

void gotrace_model_on_annotation(struct model *md, const struct gotrace_event *e)
{
	struct gm *g = gotrace_model_cur(md, e);
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

void gotrace_model_close_ranges(struct model *md)
{
	uint64_t end = md->t->info.max_ticks;
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
