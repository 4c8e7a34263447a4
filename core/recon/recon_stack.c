/*
 * Stack operations of the reconstruction (DESIGN.md 4.2): weights flushed to
 * the top of the shadow stack when that top changes, pushes and pops with
 * their stack events, and the services trackers call (tracker.h).
 */
#include "recon/recon_impl.h"

#include <stdlib.h>

#include "profile/frame.h"
#include "util/oob_mem.h"

/* 1 if frame f is code in no ELF in the lower half (firmware, the vDSO, the
 * kernel before its MMU is on, a program not given). */
static int no_elf(const struct recon *r, uint32_t f)
{
	const struct frame *fr = &r->run.frames.v[f];
	return fr->kind == PROFILE_FRAME_USER && !fr->name && fr->space < r->run.nspaces &&
	       !sym_space_find(r->run.syms[fr->space], fr->addr);
}

/* Privileged time for the task's user/kernel split: kernel code, and code in
 * no ELF that runs above kernel frames (the kernel trapped into M-mode
 * firmware: SBI calls). Code in no ELF above user frames (the vDSO) or with
 * nothing below (a program not given; boot firmware, which cannot be told
 * from it) is user time. */
static int privileged(const struct recon *r, const struct stack *s)
{
	const struct stack_entry *top = &s->v[s->n - 1];
	uint8_t kind = r->run.frames.v[top->frame].kind;
	if (kind == PROFILE_FRAME_KERNEL)
		return 1;
	if (kind != PROFILE_FRAME_MARKER && !no_elf(r, top->frame)) /* [unknown] code: look below */
		return 0;
	for (uint32_t d = s->n - 1; d-- > 0;) {
		const struct frame *fr = &r->run.frames.v[s->v[d].frame];
		if (fr->kind == PROFILE_FRAME_KERNEL)
			return 1;
		if (fr->kind == PROFILE_FRAME_USER && !no_elf(r, s->v[d].frame))
			return 0;
	}
	return 0;
}

/* Charges the span since the last event to the top of the stack and to the
 * task (user or kernel time, by the top frame). */
void recon_charge(struct recon *r, struct tracker_hart *h, uint64_t now, uint64_t cycle)
{
	/* A task's stack can be empty here only when another hart ran the same
	 * task and closed it (a migration the interleaving shows late): the
	 * span then goes to the root rather than nowhere. */
	const struct stack_entry *top = h->stk->n ? stack_top(h->stk) : NULL;
	struct cct_node *n = &r->cct.v[top ? top->node : CCT_ROOT];
	n->insns += now - h->last_seq;
	n->cycles += cycle - h->last_cycle;
	if (r->run.proc.enabled) {
		struct task *t = h->task;
		int k = top && privileged(r, h->stk);
		uint64_t when = h->cycles ? h->last_cycle : h->last_seq;
		t->insns[k] += now - h->last_seq;
		t->cycles[k] += cycle - h->last_cycle;
		if (!k)
			proc_note_user(&r->run.proc, t, h->id);
		if (t->start > when)
			t->start = when;
		t->end = h->cycles ? cycle : now;
	}
	h->last_seq = now;
	h->last_cycle = cycle;
}

void recon_flush(struct recon *r, struct tracker_hart *h, uint32_t i)
{
	if (r->run.proc.enabled)
		proc_apply(&r->run.proc, r->run.b, i);
	if (r->run.b->nx)
		recon_sp_sync(r, h, i);
	recon_charge(r, h, h->seq + i, r->run.b->cycle ? r->run.b->cycle[i] : h->last_cycle);
}

static void emit(struct recon *r, struct tracker_hart *h, uint8_t kind, uint32_t depth, int calls)
{
	struct recon_event ev = {.kind = kind,
				 .calls = (uint8_t)calls,
				 .hart = h->id,
				 .frame = r->cct.v[h->stk->v[depth - 1].node].frame,
				 .depth = depth,
				 .insn = h->last_seq,
				 .cycle = h->last_cycle,
				 .seq = r->run.gseq + (h->last_seq - h->seq)};
	r->opts->on_event(r->opts->event_ctx, &ev);
}

void recon_emit_all(struct recon *r, struct tracker_hart *h, uint8_t kind)
{
	if (!r->opts->on_event)
		return;
	for (uint32_t d = kind == RECON_EV_OPEN ? 1 : h->stk->n;
	     kind == RECON_EV_OPEN ? d <= h->stk->n : d > 0; kind == RECON_EV_OPEN ? d++ : d--)
		emit(r, h, kind, d, 0);
}

void recon_pop_to(struct recon *r, struct tracker_hart *h, uint32_t n)
{
	if (n < h->low)
		h->low = n;
	recon_touch(r, n);
	if (r->opts->on_event)
		for (uint32_t d = h->stk->n; d > n; d--)
			emit(r, h, RECON_EV_CLOSE, d, 0);
	stack_truncate(h->stk, n);
}

uint32_t recon_top_node(const struct tracker_hart *h)
{
	return h->stk->n ? stack_top(h->stk)->node : CCT_ROOT;
}

void recon_push(struct recon *r, struct tracker_hart *h, uint32_t frame, uint64_t ret,
		uint32_t marker, int calls)
{
	if (h->stk->n >= r->max_depth) {
		r->run.st.repairs_depth++;
		return;
	}
	uint32_t node = cct_child(&r->cct, recon_top_node(h), frame);
	r->cct.v[node].calls += (uint64_t)calls;
	stack_push(h->stk, frame, node, ret, marker);
	if (r->chk && h->stk->n > r->chk->maxn)
		r->chk->maxn = h->stk->n;
	/* The register regime: a call's entry keeps the sp the call left, a
	 * trap's marker the interrupted sp; the frame a trap enters, a rebased
	 * or a root frame runs on a stack whose sp no call left (0: unknown). */
	if (marker ? marker != IDS_MARK_ROOT : ret != STACK_RET_NONE)
		stack_top(h->stk)->sp = h->sp;
	if (r->opts->on_event)
		emit(r, h, RECON_EV_OPEN, h->stk->n, calls);
	uint8_t kind;
	if (calls && (kind = recon_fn_kind(r, frame)) != RECON_FN_PLAIN)
		recon_nonlocal_entered(r, h, kind);
	if (calls && r->pcs)
		recon_pcs_call(r, h, node);
}

void recon_push_inside(struct recon *r, struct tracker_hart *h, uint32_t shown)
{
	if (h->stk->n >= r->max_depth) {
		r->run.st.repairs_depth++;
		return;
	}
	const struct stack_entry *top = stack_top(h->stk);
	uint32_t node = cct_child(&r->cct, top->node, shown);
	r->cct.v[node].calls++;
	stack_push(h->stk, top->frame, node, STACK_RET_NONE, 0);
	if (r->opts->on_event)
		emit(r, h, RECON_EV_OPEN, h->stk->n, 1);
}

void recon_replace_top(struct recon *r, struct tracker_hart *h, uint32_t frame, int entered)
{
	uint64_t ret = stack_top(h->stk)->ret, sp = stack_top(h->stk)->sp;
	recon_pop_to(r, h, h->stk->n - 1);
	recon_push(r, h, frame, ret, 0, entered);
	if (h->stk->n)
		stack_top(h->stk)->sp = sp; /* a tail call leaves at its caller's sp */
	if (entered)
		r->run.st.tail_calls++;
}

void recon_push_root(struct recon *r, struct tracker_hart *h)
{
	if (h->task->root_frame != FRAME_NONE)
		recon_push(r, h, h->task->root_frame, STACK_RET_NONE, IDS_MARK_ROOT, 0);
}

void recon_push_base(struct recon *r, struct tracker_hart *h, struct code_block *b)
{
	uint32_t f = b->func != FRAME_NONE || b->map ? code_frame_at(b) : r->unknown_frame;
	recon_push(r, h, f, STACK_RET_NONE, 0, 0);
}

void recon_rebase(struct recon *r, struct tracker_hart *h, struct code_block *nb, int unknown)
{
	recon_pop_to(r, h, stack_segment_base(h->stk));
	if (unknown)
		recon_push(r, h, r->unknown_frame, STACK_RET_NONE, 0, 0);
	uint32_t f = nb->func != FRAME_NONE ? nb->func : code_frame_at(nb);
	recon_push(r, h, f, STACK_RET_NONE, 0, 0);
}

void recon_switch_task(struct recon *r, struct tracker_hart *h, uint64_t key, uint32_t i)
{
	recon_flush(r, h, i);
	r->run.st.events++;
	recon_emit_all(r, h, RECON_EV_CLOSE);
	struct task *t = proc_task_find(&r->run.proc, key);
	if (!t)
		t = proc_task_new(&r->run.proc, key, h->task->ucs);
	h->task = t;
	h->stk = &t->stk;
	if (t->stk.n == 0) {
		/* First run: it starts inside the switch code the old task was in. */
		recon_push_root(r, h);
		if (h->started)
			recon_push_base(r, h, h->blk);
		return;
	}
	recon_emit_all(r, h, RECON_EV_OPEN);
}

struct code_space *recon_space_new(struct recon *r, struct sym_space *syms)
{
	struct tracker_run *run = &r->run;
	size_t id = run->nspaces++;
	run->syms = oob_xrealloc(run->syms, run->nspaces * sizeof(*run->syms));
	run->spaces = oob_xrealloc(run->spaces, run->nspaces * sizeof(*run->spaces));
	run->syms[id] = syms;
	run->spaces[id] = oob_xcalloc(1, sizeof(struct code_space));
	code_space_init(run->spaces[id], (unsigned)id, syms, &run->frames, &r->chains);
	run->spaces[id]->inline_mode = r->opts->inline_frames;
	return run->spaces[id];
}

/* ---- the services trackers call: the run is the first member of recon ---- */

static struct recon *of(struct tracker_run *run)
{
	return (struct recon *)run;
}

static void svc_flush(struct tracker_run *run, struct tracker_hart *h, uint32_t i)
{
	recon_flush(of(run), h, i);
}

static void svc_push(struct tracker_run *run, struct tracker_hart *h, uint32_t frame, uint64_t ret,
		     uint32_t marker, int calls)
{
	recon_push(of(run), h, frame, ret, marker, calls);
}

static void svc_pop_to(struct tracker_run *run, struct tracker_hart *h, uint32_t n)
{
	recon_pop_to(of(run), h, n);
}

static void svc_push_root(struct tracker_run *run, struct tracker_hart *h)
{
	recon_push_root(of(run), h);
}

static void svc_push_base(struct tracker_run *run, struct tracker_hart *h, struct code_block *b)
{
	recon_push_base(of(run), h, b);
}

static void svc_jump(struct tracker_run *run, struct tracker_hart *h, const struct code_block *from,
		     struct code_block *nb, uint32_t i)
{
	recon_jump(of(run), h, from, nb, i);
}

static void svc_resume(struct tracker_run *run, struct tracker_hart *h, struct code_block *nb,
		       uint32_t i)
{
	recon_resume(of(run), h, nb, i);
}

static void svc_switch_task(struct tracker_run *run, struct tracker_hart *h, uint64_t key,
			    uint32_t i)
{
	recon_switch_task(of(run), h, key, i);
}

static void svc_close_all(struct tracker_run *run, struct tracker_hart *h)
{
	recon_emit_all(of(run), h, RECON_EV_CLOSE);
}

static void svc_open_all(struct tracker_run *run, struct tracker_hart *h)
{
	recon_emit_all(of(run), h, RECON_EV_OPEN);
}

static struct code_space *svc_space_new(struct tracker_run *run, struct sym_space *syms)
{
	return recon_space_new(of(run), syms);
}

const struct tracker_services recon_services = {
    .flush = svc_flush,
    .push = svc_push,
    .pop_to = svc_pop_to,
    .push_root = svc_push_root,
    .push_base = svc_push_base,
    .jump = svc_jump,
    .resume = svc_resume,
    .switch_task = svc_switch_task,
    .close_all = svc_close_all,
    .open_all = svc_open_all,
    .space_new = svc_space_new,
};
