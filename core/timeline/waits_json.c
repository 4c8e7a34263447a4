#include "timeline/waits_json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_map.h"
#include "util/oob_mem.h"

static json_t *stack_json(const struct profile *p, const uint32_t *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(profile_frame(p, v[i])->name));
	return a;
}

/* pid and comm of the task whose process frame is f. */
static void task_json(json_t *j, const struct profile *p, uint32_t f)
{
	json_object_set_new(j, "task", json_string(profile_frame(p, f)->name));
	for (size_t i = 0; i < profile_nprocesses(p); i++) {
		const struct profile_process *q = profile_process(p, i);
		if (q->frame != f)
			continue;
		json_object_set_new(j, "pid", q->pid >= 0 ? json_integer(q->pid) : json_null());
		json_object_set_new(
		    j, "comm",
		    json_string(q->comm && *q->comm ? q->comm : profile_frame(p, f)->name));
		return;
	}
	json_object_set_new(j, "pid", json_null());
	json_object_set_new(j, "comm", json_string(profile_frame(p, f)->name));
}

static json_t *wake_json(const struct waits *w, const struct profile *p, uint32_t i)
{
	const struct waits_wake *k = i & WAITS_SPAWN ? &w->spawns[i & ~WAITS_SPAWN] : &w->wakes[i];
	json_t *j = json_object();
	task_json(j, p, k->waker);
	json_object_set_new(j, "hart", json_integer(k->hart));
	json_object_set_new(j, "at", json_integer((json_int_t)k->at));
	json_object_set_new(j, "activated", json_integer((json_int_t)k->t));
	json_object_set_new(j, "interrupt", json_boolean(k->irq));
	json_object_set_new(j, "remote", json_boolean(k->remote));
	json_object_set_new(j, "stack", stack_json(p, k->stack.v, k->stack.n));
	return j;
}

static json_t *counts_json(const struct waits_counts *c)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "waits", (json_int_t)c->waits,
			 "woken_exact", (json_int_t)c->woken_exact, "woken_ambiguous",
			 (json_int_t)c->woken_ambiguous, "no_waker", (json_int_t)c->no_waker,
			 "unended", (json_int_t)c->unended, "wakes", (json_int_t)c->wakes,
			 "wakes_unmatched", (json_int_t)c->wakes_unmatched, "remote_wakes",
			 (json_int_t)c->remote_wakes);
}

json_t *waits_json(const struct waits *w, const struct profile *p, uint32_t task)
{
	json_t *a = json_array();
	for (size_t i = 0; i < w->nwaits; i++) {
		const struct waits_wait *wt = &w->waits[i];
		if (task != WAITS_NONE && wt->task != task)
			continue;
		json_t *j = json_object();
		task_json(j, p, wt->task);
		int ended = wt->in > wt->out;
		json_object_set_new(j, "hart", json_integer(wt->hart_out));
		json_object_set_new(j, "from", json_integer((json_int_t)wt->out));
		json_object_set_new(j, "to",
				    ended ? json_integer((json_int_t)wt->in) : json_null());
		json_object_set_new(j, "length",
				    ended ? json_integer((json_int_t)(wt->in - wt->out))
					  : json_null());
		json_object_set_new(j, "hart_in", ended ? json_integer(wt->hart_in) : json_null());
		json_object_set_new(j, "stack", stack_json(p, wt->stack.v, wt->stack.n));
		json_object_set_new(
		    j, "waker", wt->wake == WAITS_NONE ? json_null() : wake_json(w, p, wt->wake));
		json_object_set_new(j, "exact",
				    json_boolean(wt->wake != WAITS_NONE && !wt->ambiguous));
		json_array_append_new(a, j);
	}
	return json_pack("{s:s, s:o, s:o}", "axis", w->cycles ? "cycles" : "records", "counts",
			 counts_json(&w->counts), "waits", a);
}

/* ---- the stacks of the path's running steps ---- */

/* A hart in the replay: its stack as profile nodes, its last event's time. */
struct shart {
	uint32_t *nodes;
	size_t n, cap;
	uint64_t t;
};

/* A running step of the path, in the order (task, hart, from): one task's
 * running intervals on one hart are disjoint, so `to` grows with `from`. */
struct runstep {
	uint32_t task, hart;
	uint64_t from, to;
	size_t i; /* in the path */
};

struct sreplay {
	const struct profile *p;
	int cycles;
	const struct waits_path *pth;
	uint64_t lo, hi;	 /* the path's extent: spans outside it are skipped */
	struct oob_map child;	 /* parent << 32 | frame -> node */
	struct oob_map *weights; /* per step: node -> weight */
	struct runstep *run;
	size_t nrun;
	struct shart *hs;
	size_t nhs;
};

static int runstep_cmp(const void *pa, const void *pb)
{
	const struct runstep *a = pa, *b = pb;
	if (a->task != b->task)
		return a->task < b->task ? -1 : 1;
	if (a->hart != b->hart)
		return a->hart < b->hart ? -1 : 1;
	return (a->from > b->from) - (a->from < b->from);
}

static void runsteps(struct sreplay *x)
{
	x->run = oob_xmalloc((x->pth->n ? x->pth->n : 1) * sizeof(*x->run));
	for (size_t i = 0; i < x->pth->n; i++) {
		const struct waits_step *s = &x->pth->v[i];
		if (s->kind == WAITS_RUNNING)
			x->run[x->nrun++] = (struct runstep){s->task, s->hart, s->from, s->to, i};
	}
	qsort(x->run, x->nrun, sizeof(*x->run), runstep_cmp);
}

/* The weight of the span [t0, t1) on hart, top node nd, to the running steps
 * of its task on that hart that overlap it: found by a binary search, as a
 * long path has thousands of steps and the replay millions of spans. */
static void credit(struct sreplay *x, unsigned hart, uint32_t task, uint32_t nd, uint64_t t0,
		   uint64_t t1)
{
	if (t1 <= x->lo || t0 >= x->hi)
		return;
	size_t lo = 0, hi = x->nrun;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct runstep *k = &x->run[mid];
		if (k->task < task ||
		    (k->task == task && (k->hart < hart || (k->hart == hart && k->to <= t0))))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < x->nrun; lo++) {
		const struct runstep *k = &x->run[lo];
		if (k->task != task || k->hart != hart || k->from >= t1)
			break;
		uint64_t a = t0 > k->from ? t0 : k->from, b = t1 < k->to ? t1 : k->to;
		if (b > a)
			*oob_map_put(&x->weights[k->i], nd, NULL) += b - a;
	}
}

static int on_stack_event(void *ctx, const struct recon_event *ev)
{
	struct sreplay *x = ctx;
	if (ev->hart >= x->nhs) {
		x->hs = oob_xrealloc(x->hs, (ev->hart + 1) * sizeof(*x->hs));
		memset(x->hs + x->nhs, 0, (ev->hart + 1 - x->nhs) * sizeof(*x->hs));
		x->nhs = ev->hart + 1;
	}
	struct shart *h = &x->hs[ev->hart];
	uint64_t t = x->cycles ? ev->cycle : ev->seq;
	if (h->n > 1)
		credit(x, ev->hart, profile_node(x->p, h->nodes[1])->frame, h->nodes[h->n - 1],
		       h->t, t);
	h->t = t;
	if (ev->kind == RECON_EV_CLOSE) {
		if (h->n > 1)
			h->n--;
		return 0;
	}
	if (!h->n) {
		oob_xgrow((void **)&h->nodes, &h->cap, 1, sizeof(*h->nodes));
		h->nodes[h->n++] = 0;
	}
	uint64_t *v = oob_map_get(&x->child, (uint64_t)h->nodes[h->n - 1] << 32 | ev->frame);
	oob_xgrow((void **)&h->nodes, &h->cap, h->n + 1, sizeof(*h->nodes));
	h->nodes[h->n++] = v ? (uint32_t)*v : 0;
	return 0;
}

static int cmp_weight(const void *a, const void *b)
{
	const struct oob_map_slot *x = a, *y = b;
	return x->val < y->val ? 1 : x->val > y->val ? -1 : (x->key > y->key) - (x->key < y->key);
}

static json_t *node_stack_json(const struct profile *p, uint32_t nd)
{
	json_t *a = json_array();
	for (; nd && nd != PROFILE_NONE; nd = profile_node(p, nd)->parent)
		json_array_insert_new(
		    a, 0, json_string(profile_frame(p, profile_node(p, nd)->frame)->name));
	return a;
}

static json_t *top_stacks(const struct profile *p, const struct oob_map *m, unsigned top)
{
	struct oob_map_slot *v = oob_xmalloc((m->count ? m->count : 1) * sizeof(*v));
	size_t n = 0, pos = 0;
	while (oob_map_next(m, &pos, &v[n].key, &v[n].val))
		n++;
	qsort(v, n, sizeof(*v), cmp_weight);
	json_t *a = json_array();
	for (size_t i = 0; i < n && i < top; i++)
		json_array_append_new(a, json_pack("{s:o, s:I}", "stack",
						   node_stack_json(p, (uint32_t)v[i].key), "weight",
						   (json_int_t)v[i].val));
	free(v);
	return a;
}

static const char *kind_name(uint8_t k)
{
	static const char *const names[] = {"running", "runnable", "blocked", "interrupt"};
	return k < 4 ? names[k] : "?";
}

static json_t *step_json(const struct waits *w, const struct profile *p, const struct waits_step *s,
			 const struct oob_map *weights, unsigned top)
{
	json_t *j = json_pack("{s:s}", "kind", kind_name(s->kind));
	task_json(j, p, s->task);
	json_object_set_new(j, "hart", json_integer(s->hart));
	json_object_set_new(j, "from", json_integer((json_int_t)s->from));
	json_object_set_new(j, "to", json_integer((json_int_t)s->to));
	if (s->kind == WAITS_RUNNING) {
		json_object_set_new(j, "stacks", top_stacks(p, weights, top));
		if (s->wake != WAITS_NONE)
			json_object_set_new(j, s->wake & WAITS_SPAWN ? "forks" : "wakes",
					    wake_json(w, p, s->wake));
	} else if (s->wait != WAITS_NONE) {
		const struct waits_wait *wt = &w->waits[s->wait];
		json_object_set_new(j, "blocked_at", stack_json(p, wt->stack.v, wt->stack.n));
		json_object_set_new(j, "blocked_from", json_integer((json_int_t)wt->out));
		if (s->kind == WAITS_INTERRUPT)
			json_object_set_new(j, "waker", wake_json(w, p, wt->wake));
	}
	return j;
}

int waits_path_json(struct evlog *log, const struct waits *w, const struct profile *p,
		    uint32_t task, uint64_t from, uint64_t to, unsigned top, json_t **out,
		    struct oob_err *err)
{
	struct waits_path pth;
	int rc = waits_critical_path(w, task, from, to, &pth, err);
	if (rc < 0)
		return rc;
	struct sreplay x = {.p = p, .cycles = w->cycles, .pth = &pth, .lo = UINT64_MAX};
	for (size_t i = 0; i < pth.n; i++) {
		x.lo = pth.v[i].from < x.lo ? pth.v[i].from : x.lo;
		x.hi = pth.v[i].to > x.hi ? pth.v[i].to : x.hi;
	}
	size_t nn = profile_nnodes(p);
	oob_map_init(&x.child, nn * 2);
	for (size_t i = 1; i < nn; i++) {
		const struct profile_node *nd = profile_node(p, (uint32_t)i);
		*oob_map_put(&x.child, (uint64_t)nd->parent << 32 | nd->frame, NULL) = i;
	}
	runsteps(&x);
	x.weights = oob_xcalloc(pth.n ? pth.n : 1, sizeof(*x.weights));
	for (size_t i = 0; i < pth.n; i++)
		oob_map_init(&x.weights[i], 16);
	rc = evlog_replay(log, -1, (uint32_t)profile_nframes(p), on_stack_event, &x, err);
	json_t *steps = json_array();
	uint64_t running = 0, span = pth.n ? pth.v[0].to - pth.v[pth.n - 1].from : 0;
	for (size_t i = 0; rc == 0 && i < pth.n; i++) {
		json_array_append_new(steps, step_json(w, p, &pth.v[i], &x.weights[i], top));
		if (pth.v[i].kind == WAITS_RUNNING)
			running += pth.v[i].to - pth.v[i].from;
	}
	json_t *j = json_pack("{s:s, s:I, s:I, s:I, s:I}", "axis", w->cycles ? "cycles" : "records",
			      "from", (json_int_t)from, "to", (json_int_t)to, "span",
			      (json_int_t)span, "running", (json_int_t)running);
	task_json(j, p, task);
	json_object_set_new(j, "steps", steps);
	for (size_t i = 0; i < pth.n; i++)
		oob_map_destroy(&x.weights[i]);
	for (size_t i = 0; i < x.nhs; i++)
		free(x.hs[i].nodes);
	free(x.hs);
	free(x.weights);
	free(x.run);
	oob_map_destroy(&x.child);
	waits_path_free(&pth);
	if (rc < 0) {
		json_decref(j);
		return rc;
	}
	*out = j;
	return 0;
}
