/* The derived and satp trackers: the trace's register writebacks say when
 * the task changes (a kernel tp write, a satp write: proc_next_switch). */
#include "tasks/tracker_match.h"

#include <stdlib.h>

#include "util/oob_mem.h"

struct proc_tracker {
	struct tracker base;
	uint64_t key;	   /* the switch next_stop found, 0 if none */
	uint64_t *pending; /* per hart: switch to this task at the next batch, or 0 */
	size_t npending;
};

static uint64_t *pending_of(struct proc_tracker *p, const struct tracker_hart *h)
{
	return tracker_per_hart((void **)&p->pending, &p->npending, h->id, sizeof(*p->pending));
}

/* A switch found at the end of the last batch takes effect at this one's start. */
static void proc_batch_begins(struct tracker *t, struct tracker_hart *h)
{
	uint64_t *key = pending_of((struct proc_tracker *)t, h);
	if (*key) {
		t->run->svc->switch_task(t->run, h, *key, 0);
		*key = 0;
	}
}

static uint32_t proc_next_stop(struct tracker *t, struct tracker_hart *h, uint32_t s)
{
	struct proc_tracker *p = (struct proc_tracker *)t;
	p->key = 0;
	return proc_next_switch(&t->run->proc, t->run->b, s, h->task, &p->key);
}

static void proc_stop(struct tracker *t, struct tracker_hart *h, uint32_t e)
{
	struct proc_tracker *p = (struct proc_tracker *)t;
	if (p->key && e < t->run->b->n)
		t->run->svc->switch_task(t->run, h, p->key, e);
	else if (p->key)
		*pending_of(p, h) = p->key; /* the switch is at the batch's end */
}

/* The kernel's functions that tell: exec, exit, clone (proc.h). */
static void derived_call(struct tracker *t, struct tracker_hart *h, uint32_t f, int indirect)
{
	struct tracker_run *r = t->run;
	proc_on_call(&r->proc, h->task, h->id, f, h->cycles ? h->last_cycle : h->last_seq,
		     (const struct code_space *const *)r->spaces + 1, r->nspaces - 1);
}

static void derived_exit_frame(struct tracker *t, struct tracker_hart *h, uint32_t f)
{
	proc_on_return(&t->run->proc, h->task, h->id, f);
}

/* The first return to user space of an address space: which binary runs. */
static struct code_block *satp_user_entry(struct tracker *t, struct tracker_hart *h,
					  struct code_block *nb, uint32_t i)
{
	return h->task->ucs_known ? nb : tracker_space_enter(t->run, h, nb, i);
}

static void proc_tracker_free(struct tracker *t)
{
	free(((struct proc_tracker *)t)->pending);
	free(t);
}

static const struct tracker_ops derived_ops = {
    .source = "derived",
    .on_batch = proc_batch_begins,
    .next_stop = proc_next_stop,
    .on_stop = proc_stop,
    .on_call = derived_call,
    .on_exit_frame = derived_exit_frame,
    .free = proc_tracker_free,
};

static const struct tracker_ops satp_ops = {
    .source = "satp",
    .on_batch = proc_batch_begins,
    .next_stop = proc_next_stop,
    .on_stop = proc_stop,
    .on_user_entry = satp_user_entry,
    .free = proc_tracker_free,
};

static struct tracker *proc_tracker_new(struct tracker_run *r, const struct tracker_ops *ops)
{
	struct proc_tracker *p = oob_xcalloc(1, sizeof(*p));
	p->base = (struct tracker){ops, r};
	return &p->base;
}

struct tracker *tracker_derived_new(struct tracker_run *r)
{
	return r->proc.enabled && !r->proc.by_satp ? proc_tracker_new(r, &derived_ops) : NULL;
}

struct tracker *tracker_satp_new(struct tracker_run *r)
{
	return r->proc.by_satp ? proc_tracker_new(r, &satp_ops) : NULL;
}
