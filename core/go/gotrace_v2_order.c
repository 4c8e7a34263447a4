/*
 * gotrace_v2_order: puts a generation's events in order with the scheduler
 * state machine Go's own reader uses: per-M cursors are tried earliest
 * first, and an event is taken only when its preconditions hold (the
 * goroutine's or P's sequence number is the next one, the state is right);
 * state that a generation's GoStatus/ProcStatus events establish carries over
 * to the next generation.
 */
#include <stdlib.h>
#include <string.h>

#include "go/gotrace_v2_impl.h"

#define NONE GOTRACE_NONE

struct seq {
	uint64_t gen, n;
};

struct gs {
	uint8_t status; /* v2 gstatus; 0 = does not exist */
	struct seq seq;
};

struct ps {
	uint8_t status; /* v2 pstatus; 0 = unknown */
	struct seq seq;
};

struct ms {
	uint64_t g, p;
};

/* --- ordering: the scheduler state machine ---------------------------------- */

enum { G_RUNNABLE = 1, G_RUNNING, G_SYSCALL, G_WAITING };
enum { P_RUNNING = 1, P_IDLE, P_SYSCALL, P_ABANDONED };
enum { WAIT = 0, GO = 1 };
enum { MUST = 1, MAY, MUSTNOT };

struct ctx {
	uint64_t g, p, m;
};

static void *state_get(struct oob_map *map, struct gotrace_vec *v, size_t elem, uint64_t id,
		       int create)
{
	uint64_t *slot = create ? NULL : oob_map_get(map, id);
	int fresh = 0;
	if (create)
		slot = oob_map_put(map, id, &fresh);
	if (!slot)
		return NULL;
	if (fresh) {
		memset(gotrace_vec_push(v, elem), 0, elem);
		*slot = v->n - 1;
	}
	return (char *)v->p + elem * *slot;
}

/* NULL if g does not exist (status 0 counts as absent). */
static struct gs *gfind(struct v2 *v, uint64_t g)
{
	struct gs *s = g == NONE ? NULL : state_get(&v->gmap, &v->gv, sizeof(struct gs), g, 0);
	return s && s->status ? s : NULL;
}

static struct gs *gmake(struct v2 *v, uint64_t g)
{
	return state_get(&v->gmap, &v->gv, sizeof(struct gs), g, 1);
}

static struct ps *pfind(struct v2 *v, uint64_t p)
{
	struct ps *s = p == NONE ? NULL : state_get(&v->pmap, &v->pv, sizeof(struct ps), p, 0);
	return s && s->status ? s : NULL;
}

static struct ps *pmake(struct v2 *v, uint64_t p)
{
	return state_get(&v->pmap, &v->pv, sizeof(struct ps), p, 1);
}

static struct ms *mfind(struct v2 *v, uint64_t m, int create)
{
	int existed = oob_map_get(&v->mmap, m) != NULL;
	struct ms *s = state_get(&v->mmap, &v->mv, sizeof(struct ms), m, create);
	if (s && !existed)
		s->g = s->p = NONE;
	return s;
}

static int succeeds(struct seq next, struct seq prev)
{
	return next.gen == prev.gen && next.n == prev.n + 1;
}

static int need(struct v2 *v, const struct gotrace_event *e, const struct ctx *c, int m, int p,
		int g, struct oob_err *err)
{
	const char *what = NULL;
	if (m == MUST && c->m == NONE)
		what = "a thread";
	else if (p == MUST && c->p == NONE)
		what = "a P";
	else if (p == MUSTNOT && c->p != NONE)
		what = "no P";
	else if (g == MUST && c->g == NONE)
		what = "a goroutine";
	else if (g == MUSTNOT && c->g != NONE)
		what = "no goroutine";
	if (!what)
		return 0;
	(void)v;
	return oob_err_set(err, -EINVAL, "%s at offset 0x%llx expected %s on M %lld",
			   gotrace_v2_type_name(e->type), (unsigned long long)e->off, what,
			   (long long)c->m);
}

static int broken(const struct gotrace_event *e, const char *why, uint64_t id, struct oob_err *err)
{
	return oob_err_set(err, -EINVAL, "%s at offset 0x%llx: %s %lld",
			   gotrace_v2_type_name(e->type), (unsigned long long)e->off, why,
			   (long long)id);
}

static int adv_proc_status(struct v2 *v, struct gotrace_event *e, struct ctx *c,
			   struct oob_err *err)
{
	uint64_t p = e->args[0], st = e->args[1];
	if (st < P_RUNNING || st > P_ABANDONED)
		return broken(e, "invalid status for P", p, err);
	struct ps *s = pfind(v, p);
	if (s && !(st == P_ABANDONED && (s->status == P_SYSCALL || s->status == P_ABANDONED)) &&
	    s->status != st)
		return broken(e, "status does not match the state of P", p, err);
	if (!s) {
		s = pmake(v, p);
		s->status = (uint8_t)st;
	}
	s->seq = (struct seq){v->gen, 0};
	if (st == P_RUNNING || st == P_SYSCALL)
		c->p = p;
	e->p = p;
	return GO;
}

static int adv_proc(struct v2 *v, struct gotrace_event *e, struct ctx *c, struct oob_err *err)
{
	struct ps *s;
	struct seq sq = {v->gen, e->args[1]};
	switch (e->type) {
	case V2_PROC_START:
		s = pfind(v, e->args[0]);
		if (!s || s->status != P_IDLE || !succeeds(sq, s->seq) || c->p != NONE)
			return WAIT;
		if (need(v, e, c, MUST, MUSTNOT, MAY, err))
			return -EINVAL;
		s->status = P_RUNNING;
		s->seq = sq;
		e->p = c->p = e->args[0];
		return GO;
	case V2_PROC_STOP:
		if (need(v, e, c, MUST, MUST, MAY, err))
			return -EINVAL;
		s = pfind(v, c->p);
		if (!s || (s->status != P_RUNNING && s->status != P_SYSCALL))
			return broken(e, "P is not running:", c->p, err);
		s->status = P_IDLE;
		c->p = NONE;
		return GO;
	case V2_PROC_STEAL: {
		s = pfind(v, e->args[0]);
		if (!s || (s->status != P_SYSCALL && s->status != P_ABANDONED) ||
		    !succeeds(sq, s->seq))
			return WAIT;
		if (need(v, e, c, MUST, MAY, MAY, err))
			return -EINVAL;
		uint8_t old = s->status;
		s->status = P_IDLE;
		s->seq = sq;
		if (old == P_ABANDONED)
			return GO;
		uint64_t from = e->args[2];
		if (from == c->m) {
			if (c->p != e->args[0])
				return broken(
				    e, "self-steal of a P this M does not hold:", e->args[0], err);
			c->p = NONE;
			return GO;
		}
		struct ms *m = mfind(v, from, 0);
		if (!m || m->p != e->args[0])
			return broken(e, "steal of a P from an M that does not hold it: M", from,
				      err);
		m->p = NONE;
		return GO;
	}
	}
	return adv_proc_status(v, e, c, err);
}

static int adv_go_status(struct v2 *v, struct gotrace_event *e, struct ctx *c, struct oob_err *err)
{
	uint64_t g = e->args[0], mid = e->args[1], st = e->args[2];
	if (st < G_RUNNABLE || st > G_WAITING)
		return broken(e, "invalid status for goroutine", g, err);
	struct gs *s = gfind(v, g);
	if (s && s->status != st)
		return broken(e, "status does not match the state of goroutine", g, err);
	if (!s && v->gen != v->initial_gen)
		return broken(e, "status of an unknown goroutine after the first generation:", g,
			      err);
	if (!s) {
		s = gmake(v, g);
		s->status = (uint8_t)st;
	}
	s->seq = (struct seq){v->gen, 0};
	e->g = g;
	if (st == G_RUNNING)
		c->g = g;
	if (st != G_SYSCALL)
		return GO;
	if (mid == OOB_MAP_EMPTY)
		return broken(e, "goroutine in a syscall without a thread:", g, err);
	if (mid == c->m) {
		c->g = g;
		return GO;
	}
	struct ms *m = mfind(v, mid, 0);
	if (m && m->g != g)
		return broken(e, "goroutine in a syscall on an M running another one:", g, err);
	if (!m)
		mfind(v, mid, 1)->g = g;
	e->m = mid;
	return GO;
}

/* The running goroutine of the context, which must exist and be in state st. */
static struct gs *current(struct v2 *v, struct gotrace_event *e, struct ctx *c, int p, uint8_t st,
			  struct oob_err *err)
{
	if (need(v, e, c, MUST, p, MUST, err))
		return NULL;
	struct gs *s = gfind(v, c->g);
	if (!s || s->status != st) {
		broken(e,
		       st == G_SYSCALL ? "goroutine is not in a syscall:"
				       : "goroutine is not running:",
		       c->g, err);
		return NULL;
	}
	return s;
}

static int adv_create(struct v2 *v, struct gotrace_event *e, struct ctx *c, struct oob_err *err)
{
	uint64_t g = e->args[0];
	int sys = e->type == V2_GO_CREATE_SYSCALL;
	if (need(v, e, c, MUST, sys ? MAY : MUST, sys ? MUSTNOT : MAY, err))
		return -EINVAL;
	struct gs *cur = gfind(v, c->g);
	if (!sys && cur && cur->status != G_RUNNING)
		return broken(e, "creating goroutine is not running:", c->g, err);
	if (gfind(v, g))
		return broken(e, "goroutine already exists:", g, err);
	struct gs *s = gmake(v, g);
	s->status = sys ? G_SYSCALL : e->type == V2_GO_CREATE_BLOCKED ? G_WAITING : G_RUNNABLE;
	s->seq = (struct seq){v->gen, 0};
	if (sys)
		c->g = g;
	return GO;
}

static int adv_go(struct v2 *v, struct gotrace_event *e, struct ctx *c, struct oob_err *err)
{
	struct gs *s, *next;
	struct seq sq = {v->gen, e->args[1]};
	switch (e->type) {
	case V2_GO_START:
		s = gfind(v, e->args[0]);
		if (!s || s->status != G_RUNNABLE || !succeeds(sq, s->seq))
			return WAIT;
		if (need(v, e, c, MUST, MUST, MUSTNOT, err))
			return -EINVAL;
		s->status = G_RUNNING;
		s->seq = sq;
		e->g = c->g = e->args[0];
		return GO;
	case V2_GO_UNBLOCK:
		s = gfind(v, e->args[0]);
		if (!s || s->status != G_WAITING || !succeeds(sq, s->seq))
			return WAIT;
		s->status = G_RUNNABLE;
		s->seq = sq;
		return GO;
	case V2_GO_SWITCH:
	case V2_GO_SWITCH_DESTROY:
		if (!(s = current(v, e, c, MUST, G_RUNNING, err)))
			return -EINVAL;
		next = gfind(v, e->args[0]);
		if (!next || next->status != G_WAITING || !succeeds(sq, next->seq))
			return WAIT;
		s = gfind(v, c->g); /* next's lookup may have moved it */
		s->status = e->type == V2_GO_SWITCH ? G_WAITING : 0;
		next = gfind(v, e->args[0]);
		next->status = G_RUNNING;
		next->seq = sq;
		c->g = e->args[0];
		return GO;
	}
	if (!(s = current(v, e, c, MUST, G_RUNNING, err)))
		return -EINVAL;
	s->status = e->type == V2_GO_DESTROY ? 0 : e->type == V2_GO_STOP ? G_RUNNABLE : G_WAITING;
	c->g = NONE;
	return GO;
}

static int adv_syscall(struct v2 *v, struct gotrace_event *e, struct ctx *c, struct oob_err *err)
{
	struct gs *s;
	struct ps *p;
	switch (e->type) {
	case V2_GO_SYSCALL_BEGIN:
		if (!(s = current(v, e, c, MUST, G_RUNNING, err)))
			return -EINVAL;
		if (!(p = pfind(v, c->p)))
			return broken(e, "unknown P", c->p, err);
		if (!succeeds((struct seq){v->gen, e->args[0]}, p->seq))
			return broken(e, "out-of-sequence P seq on P", c->p, err);
		s->status = G_SYSCALL;
		p->status = P_SYSCALL;
		p->seq = (struct seq){v->gen, e->args[0]};
		return GO;
	case V2_GO_SYSCALL_END:
		if (!(s = current(v, e, c, MUST, G_SYSCALL, err)))
			return -EINVAL;
		if (!(p = pfind(v, c->p)) || p->status != P_SYSCALL)
			return broken(e, "P is not in a syscall:", c->p, err);
		s->status = G_RUNNING;
		p->status = P_RUNNING;
		return GO;
	case V2_GO_SYSCALL_END_BLOCKED:
		if (c->p != NONE) {
			if (!(p = pfind(v, c->p)))
				return broken(e, "unknown P", c->p, err);
			if (p->status == P_SYSCALL)
				return WAIT;
		}
		if (!(s = current(v, e, c, MAY, G_SYSCALL, err)))
			return -EINVAL;
		s->status = G_RUNNABLE;
		c->g = NONE;
		return GO;
	}
	/* GoDestroySyscall */
	if (!(s = current(v, e, c, MAY, G_SYSCALL, err)))
		return -EINVAL;
	s->status = 0;
	c->g = NONE;
	if (c->p != NONE) {
		if (!(p = pfind(v, c->p)) || p->status != P_SYSCALL)
			return broken(e, "P is not in a syscall:", c->p, err);
		p->status = P_ABANDONED;
		c->p = NONE;
	}
	return GO;
}

static int adv_gc(struct v2 *v, struct gotrace_event *e, struct ctx *c, struct oob_err *err)
{
	uint64_t sq = e->args[0];
	if (e->type == V2_GC_ACTIVE && v->gen == v->initial_gen) {
		if (v->gc_state)
			return broken(e, "GCActive after other GC events, seq", sq, err);
		v->gc_seq = sq;
		v->gc_state = 2;
		return GO;
	}
	if (e->type == V2_GC_BEGIN && !v->gc_state) {
		v->gc_seq = sq;
		v->gc_state = 2;
		return GO;
	}
	if (sq != v->gc_seq + 1)
		return WAIT;
	if ((e->type == V2_GC_BEGIN && v->gc_state == 2) ||
	    (e->type != V2_GC_BEGIN && v->gc_state != 2))
		return broken(e, "GC state does not allow it, seq", sq, err);
	v->gc_seq = sq;
	v->gc_state = e->type == V2_GC_END ? 1 : 2;
	return need(v, e, c, MUST, MUST, MUST, err) ? -EINVAL : GO;
}

/* Events that only need a context (M, P, G: MUST/MAY). */
static int adv_simple(struct v2 *v, struct gotrace_event *e, struct ctx *c, struct oob_err *err)
{
	switch (e->type) {
	case V2_SWEEP_BEGIN:
	case V2_SWEEP_END:
	case V2_HEAP_ALLOC:
	case V2_HEAP_GOAL:
		return need(v, e, c, MUST, MUST, MAY, err) ? -EINVAL : GO;
	case V2_SWEEP_ACTIVE:
		return pfind(v, e->args[0]) ? GO : broken(e, "unknown P", e->args[0], err);
	case V2_ASSIST_ACTIVE:
		return gfind(v, e->args[0]) ? GO : broken(e, "unknown goroutine", e->args[0], err);
	}
	return need(v, e, c, MUST, MUST, MUST, err) ? -EINVAL : GO;
}

/* Tries to apply e (from thread e->m). GO, WAIT or a negative errno. */
static int advance(struct v2 *v, struct gotrace_event *e, struct oob_err *err)
{
	struct ms *m = e->m == NONE ? NULL : mfind(v, e->m, 1);
	struct ctx c = {m ? m->g : NONE, m ? m->p : NONE, e->m};
	struct ctx before = c;
	int rc;
	switch (e->type) {
	case V2_PROC_START:
	case V2_PROC_STOP:
	case V2_PROC_STEAL:
	case V2_PROC_STATUS:
		rc = adv_proc(v, e, &c, err);
		break;
	case V2_GO_STATUS:
	case V2_GO_STATUS_STACK:
		rc = adv_go_status(v, e, &c, err);
		break;
	case V2_GO_CREATE:
	case V2_GO_CREATE_BLOCKED:
	case V2_GO_CREATE_SYSCALL:
		rc = adv_create(v, e, &c, err);
		break;
	case V2_GO_START:
	case V2_GO_UNBLOCK:
	case V2_GO_SWITCH:
	case V2_GO_SWITCH_DESTROY:
	case V2_GO_DESTROY:
	case V2_GO_STOP:
	case V2_GO_BLOCK:
		rc = adv_go(v, e, &c, err);
		break;
	case V2_GO_SYSCALL_BEGIN:
	case V2_GO_SYSCALL_END:
	case V2_GO_SYSCALL_END_BLOCKED:
	case V2_GO_DESTROY_SYSCALL:
		rc = adv_syscall(v, e, &c, err);
		break;
	case V2_GC_ACTIVE:
	case V2_GC_BEGIN:
	case V2_GC_END:
		rc = adv_gc(v, e, &c, err);
		break;
	default:
		rc = adv_simple(v, e, &c, err);
		break;
	}
	if (rc != GO)
		return rc;
	if (e->g == NONE)
		e->g = before.g;
	if (e->p == NONE)
		e->p = before.p;
	if (m && e->m == before.m) {
		m = mfind(v, e->m, 0);
		m->g = c.g;
		m->p = c.p;
	}
	return GO;
}

/* --- one generation ----------------------------------------------------------- */

static struct cursor *cur_at(struct v2 *v, size_t i)
{
	return &((struct cursor *)v->cursors.p)[i];
}

static uint64_t head_ticks(struct v2 *v, size_t i)
{
	struct cursor *c = cur_at(v, i);
	return v->t->ev[((uint32_t *)c->idx.p)[c->pos]].ticks;
}

/* Min-heap of cursor indexes by the time of their next event. */
static void heap_push(struct v2 *v, size_t *h, size_t *n, size_t c)
{
	size_t i = (*n)++;
	h[i] = c;
	while (i && head_ticks(v, h[(i - 1) / 2]) > head_ticks(v, h[i])) {
		size_t p = (i - 1) / 2, x = h[p];
		h[p] = h[i];
		h[i] = x;
		i = p;
	}
}

static size_t heap_pop(struct v2 *v, size_t *h, size_t *n)
{
	size_t top = h[0];
	h[0] = h[--*n];
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < *n && head_ticks(v, h[l]) < head_ticks(v, h[m]))
			m = l;
		if (r < *n && head_ticks(v, h[r]) < head_ticks(v, h[m]))
			m = r;
		if (m == i)
			break;
		size_t x = h[m];
		h[m] = h[i];
		h[i] = x;
		i = m;
	}
	return top;
}

static int stuck(struct v2 *v, size_t c, struct oob_err *err)
{
	struct cursor *k = cur_at(v, c);
	const struct gotrace_event *e = &v->t->ev[((uint32_t *)k->idx.p)[k->pos]];
	return oob_err_set(err, -EINVAL,
			   "no consistent ordering of events possible in generation %llu: %s at "
			   "offset 0x%llx (M %lld) and every other thread's next event wait for "
			   "something that never happens",
			   (unsigned long long)v->gen, gotrace_v2_type_name(e->type),
			   (unsigned long long)e->off, (long long)k->m);
}

/* Orders the generation's events into out[] (event indexes). */
static int order_gen(struct v2 *v, uint32_t *out, struct oob_err *err)
{
	size_t nc = v->cursors.n, nh = 0, nt = 0, k = 0;
	size_t *heap = oob_xmalloc((nc + 1) * sizeof(size_t)),
	       *tried = oob_xmalloc((nc + 1) * sizeof(size_t));
	int rc = 0;
	for (size_t i = 0; i < nc; i++)
		if (cur_at(v, i)->idx.n)
			heap_push(v, heap, &nh, i);
	while (nh) {
		nt = 0;
		for (;;) {
			if (!nh) {
				rc = stuck(v, tried[0], err);
				goto out;
			}
			size_t c = heap_pop(v, heap, &nh);
			struct cursor *cu = cur_at(v, c);
			uint32_t i = ((uint32_t *)cu->idx.p)[cu->pos];
			if ((rc = advance(v, &v->t->ev[i], err)) < 0)
				goto out;
			if (rc == WAIT) {
				tried[nt++] = c;
				continue;
			}
			out[k++] = i;
			if (++cu->pos < cu->idx.n)
				heap_push(v, heap, &nh, c);
			break;
		}
		for (size_t j = 0; j < nt; j++)
			heap_push(v, heap, &nh, tried[j]);
	}
	rc = 0;
out:
	free(heap);
	free(tried);
	return rc;
}

static int cmp_ticks(const void *pa, const void *pb, void *ctx)
{
	const struct gotrace_event *ev = ctx;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	if (ev[a].ticks != ev[b].ticks)
		return ev[a].ticks < ev[b].ticks ? -1 : 1;
	return (a > b) - (a < b);
}

/* Puts the generation's events (from index first on) in order, CPU samples
 * merged in by time. */
int gotrace_v2_finish_gen(struct v2 *v, size_t first, struct oob_err *err)
{
	size_t n = v->t->nev - first, ns = v->samples.n, no = n - ns;
	uint32_t *ord = oob_xmalloc((no + 1) * sizeof(*ord)),
		 *all = oob_xmalloc((n + 1) * sizeof(*all));
	uint32_t *smp = v->samples.p;
	int rc = order_gen(v, ord, err);
	if (rc < 0)
		goto out;
	if (ns)
		qsort_r(smp, ns, sizeof(*smp), cmp_ticks, v->t->ev);
	size_t i = 0, j = 0, k = 0;
	while (i < no || j < ns)
		all[k++] = j >= ns || (i < no && v->t->ev[ord[i]].ticks <= v->t->ev[smp[j]].ticks)
			       ? ord[i++]
			       : smp[j++];
	/* gotrace_permute works on the whole array: make the prefix the identity. */
	uint32_t *perm = oob_xmalloc((v->t->nev + 1) * sizeof(*perm));
	for (size_t x = 0; x < first; x++)
		perm[x] = (uint32_t)x;
	memcpy(perm + first, all, n * sizeof(*perm));
	gotrace_permute(v->t, perm);
	free(perm);
out:
	free(ord);
	free(all);
	return rc;
}
