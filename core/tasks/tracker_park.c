/*
 * The park tracker: tasks followed through the context switches of pc-only
 * traces (park.h says how; park.c keeps the parked tasks and clones). This
 * file is the policy: what each kernel function the trace enters says, which
 * parked task a `ret` out of __switch_to resumes, and when a provisional
 * resume turns out wrong.
 */
#include "tasks/tracker_match.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/park.h"
#include "util/oob_log.h"
#include "util/oob_mem.h"

/* Per hart. */
struct pkhart {
	struct park_resume res; /* a provisional resume of a parked task */
	int idle_pick;		/* this __schedule picked the idle task */
	int run_exec;		/* the user run is a program's first (named by the match) */
	uint64_t excl;		/* matching: user spaces ruled out for the run */
};

struct pktracker {
	struct tracker base;
	struct park park;
	int matching; /* several candidate user binaries, no instruction bits */
	struct pkhart *harts;
	size_t nharts;
};

static struct pkhart *ph(struct pktracker *p, const struct tracker_hart *h)
{
	return tracker_per_hart((void **)&p->harts, &p->nharts, h->id, sizeof(*p->harts));
}

/* A task for the debug log: "comm pid [task idx]". */
#define TASK_FMT     "%s %lld [task %u]"
#define TASK_ARGS(t) (t)->comm, (long long)(t)->pid, (t)->idx

#define PARK_LOOKAHEAD 65536 /* records looked at to guess who resumes */

static uint64_t now_of(const struct tracker_hart *h)
{
	return h->cycles ? h->last_cycle : h->last_seq;
}

/* The record index of the debug log (all harts). */
static uint64_t record_of(const struct tracker_run *r, const struct tracker_hart *h)
{
	return r->gseq + (h->last_seq - h->seq);
}

/* The symbol name of kernel function frame f. */
static const char *kernel_func_name(const struct tracker_run *r, uint32_t f)
{
	uint64_t a = r->frames.v[f].addr;
	const struct sym_mapping *m = sym_space_find(r->syms[0], a);
	const struct sym_func *fn = m ? sym_binary_lookup(m->bin, a - m->bias) : NULL;
	return fn ? fn->name : "?";
}

/* Brings rs->popped up to date with the pops since the resume began: the
 * driver keeps the lowest height popped to in h->low. */
static void sync_popped(struct pkhart *x, const struct tracker_hart *h)
{
	struct park_resume *rs = &x->res;
	if (rs->active && h->low < rs->nref - rs->popped)
		rs->popped = rs->nref - h->low;
}

/* t starts running provisionally, popped entries of its stack already gone. */
static void begin(struct pkhart *x, struct tracker_hart *h, const struct task *t, uint32_t popped)
{
	park_begin(&x->res, &t->stk, popped);
	park_begin_sig(&x->res, t);
	h->low = UINT32_MAX;
}

/* A kernel thread made by kthread_create() and friends: its comm is the
 * name they format, in memory a pc-only trace does not show; its thread
 * function is exact, and the brackets say it is not the comm (as ps does
 * for kernel threads). fn NULL: kthread() has not called it yet. */
static void name_kthread(struct task *t, const char *fn)
{
	if (!fn)
		snprintf(t->comm, sizeof(t->comm), "[kthread]");
	else
		snprintf(t->comm, sizeof(t->comm), "[kthread: %.*s]",
			 (int)sizeof(t->comm) - (int)sizeof("[kthread: ]"), fn);
}

static void park_on_call(struct tracker *tr, struct tracker_hart *h, uint32_t f, int indirect)
{
	struct pktracker *p = (struct pktracker *)tr;
	const struct park_hooks *k = &p->park.hk;
	struct task *t = h->task;
	uint32_t caller = h->stk->n >= 2 ? h->stk->v[h->stk->n - 2].frame : FRAME_NONE;
	if (f == k->switch_to) {
		ph(p, h)->res.active =
		    0; /* the resumed task ran to its next switch: it was the one */
	} else if (f == k->schedule || f == k->pick_idle) {
		ph(p, h)->idle_pick = f == k->pick_idle;
	} else if (f == k->alloc_pid) {
		park_clone_note(&p->park, t, h->stk);
		OOB_DEBUG("park: hart %u: " TASK_FMT " clones pid %lld (kind %d)", h->id,
			  TASK_ARGS(t), (long long)p->park.clones[p->park.nclones - 1].pid,
			  (int)p->park.clones[p->park.nclones - 1].kind);
	} else if (f == k->new_exec) {
		t->exec_pending = 1;
		t->exec_at = now_of(h);
	} else if (f == k->dead) {
		t->dead = 1;
	} else if (t->fn_named && indirect && caller == k->kthread) {
		/* kthread() calls the thread function it was made for */
		name_kthread(t, kernel_func_name(tr->run, f));
	}
}

/* Gives t what its clone says: pid, parent, the parent's name. */
static void park_adopt(struct task *t, const struct park_clone *cl)
{
	t->pid = cl->pid;
	if (cl->parent) {
		t->parent = cl->parent->key;
		memcpy(t->comm, cl->parent->comm, sizeof(t->comm));
	}
}

/* ret_from_kernel_thread jumps to the new kernel thread's function f: it
 * names the thread and says which clone made it (kernel_thread() is how
 * kthreadd and its children start; anything else is user_mode_thread()'s). */
static void park_kthread(struct tracker *tr, struct tracker_hart *h, uint32_t f)
{
	struct park *pk = &((struct pktracker *)tr)->park;
	struct task *t = h->task;
	if (stack_top(h->stk)->frame != pk->hk.kthread_start)
		return;
	struct park_clone cl = {.pid = -1};
	int k = f == pk->hk.kthreadd || f == pk->hk.kthread;
	if (park_clone_take(pk, k ? PARK_KTHREAD : PARK_USER_THREAD, &cl))
		park_adopt(t, &cl);
	if (f == pk->hk.kthread)
		name_kthread(t, NULL);
	else /* kthreadd names itself "kthreadd"; user_mode_thread()'s exec */
		snprintf(t->comm, sizeof(t->comm), "%.16s", kernel_func_name(tr->run, f));
}

/* Makes a task for a first run at land (ret_from_fork, ret_from_kernel_thread,
 * or a task the trace never saw switch out), with __switch_to on top for the
 * return in progress to pop. */
static void park_new_task(struct pktracker *p, struct tracker_hart *h, uint64_t land)
{
	struct tracker_run *r = p->base.run;
	struct park *pk = &p->park;
	struct park_clone cl = {.pid = -1};
	if (land == pk->hk.fork_entry)
		park_clone_take(pk, PARK_FORK, &cl);
	struct task *t = proc_task_new(&r->proc, ids_key(IDS_KEY_PARK, ++pk->ntasks),
				       cl.parent ? cl.parent->ucs : h->task->ucs);
	park_adopt(t, &cl);
	/* a kernel thread's clone is known by the function it runs (park_kthread) */
	t->fn_named = land == pk->hk.kthread_entry;
	h->task = t;
	h->stk = &t->stk;
	r->svc->push_root(r, h);
	for (uint32_t k = 0; k < cl.nuser; k++)
		r->svc->push(r, h, cl.user[k].frame, cl.user[k].ret, cl.user[k].marker, 0);
	if (cl.user && cl.pid < 0)
		park_guess_note(pk, t, &cl); /* siblings pending: its frames are a guess */
	free(cl.user);
	r->svc->push(r, h, pk->hk.switch_to, land, 0, 0);
	r->st.switch_new_tasks++;
	OOB_DEBUG("park: hart %u record %" PRIu64 ": new task " TASK_FMT " at %#" PRIx64, h->id,
		  record_of(r, h), TASK_ARGS(t), land);
}

/* t resumes among the candidates of rs: look-alikes lose what told them
 * apart (park.h). */
static void park_lookalikes(struct pktracker *p, const struct park_resume *rs, struct task *t)
{
	if (!park_lookalikes_merge(rs, t))
		return;
	p->base.run->st.switch_lookalikes++;
	OOB_DEBUG("park: " TASK_FMT " resumed among look-alikes: pids unknown", TASK_ARGS(t));
}

/* The running task entered __switch_to and its `ret` lands at land: park it
 * and run the task that returns there. */
static void park_switch(struct pktracker *p, struct tracker_hart *h, uint64_t land, uint32_t i)
{
	struct tracker_run *r = p->base.run;
	struct park *pk = &p->park;
	struct task *old = h->task;
	struct pkhart *x = ph(p, h);
	struct park_resume *rs = &x->res;
	r->svc->close_all(r, h);
	rs->active = 0;
	r->proc.switches++;
	int idle = x->idle_pick;
	x->idle_pick = 0;
	size_t n = land == pk->hk.fork_entry || land == pk->hk.kthread_entry
		       ? 0
		       : park_find(pk, land, h->id, idle, rs);
	if (!n && pk->ntasks >= PARK_MAX_TASKS) {
		/* no more tasks (a hostile trace could ask for one per switch):
		 * the old one runs on */
		pk->capped++;
		r->svc->open_all(r, h);
		return;
	}
	park_put(pk, old, h->id);
	if (!n) {
		OOB_DEBUG("park: hart %u: " TASK_FMT " parked", h->id, TASK_ARGS(old));
		park_new_task(p, h, land);
		return;
	}
	if (n > 1) {
		size_t from = (size_t)i + 1, left = r->b->n - from;
		park_guess(rs, r->b->pc + from, left < PARK_LOOKAHEAD ? left : PARK_LOOKAHEAD);
	}
	struct task *t = rs->cands[0];
	if (n > 1)
		park_lookalikes(p, rs, t);
	if (idle) { /* the hart's idle task, now known if it was not */
		t->idle = 1;
		t->hart = h->id;
	}
	OOB_DEBUG("park: hart %u record %" PRIu64 ": " TASK_FMT " parked, " TASK_FMT
		  " resumed at %#" PRIx64 " (%zu candidates)",
		  h->id, record_of(r, h), TASK_ARGS(old), TASK_ARGS(t), land, n);
	park_take(pk, t);
	h->task = t;
	h->stk = &t->stk;
	if (n > 1)
		begin(x, h, t, 0);
	r->st.switch_resumes++;
	r->svc->open_all(r, h);
}

static int parked(const struct park *pk, const struct task *t)
{
	for (size_t k = 0; k < pk->nparked; k++)
		if (pk->parked[k] == t)
			return 1;
	return 0;
}

/* The provisional resume was wrong: the hart runs candidate c instead; the
 * task it ran goes back to where it was parked. carry: 1 when the running
 * task's top frame is one a tail call put in place of a parked frame (it
 * moves over, returning where c's frame there does), else 0. */
static void park_swap(struct pktracker *p, struct tracker_hart *h, size_t c, uint32_t carry)
{
	struct tracker_run *r = p->base.run;
	struct pkhart *x = ph(p, h);
	struct park_resume *rs = &x->res;
	struct task *t = h->task, *n = rs->cands[c];
	OOB_DEBUG("park: hart %u: not " TASK_FMT " but " TASK_FMT " resumed", h->id, TASK_ARGS(t),
		  TASK_ARGS(n));
	struct stack_entry top = *stack_top(&t->stk);
	r->svc->close_all(r, h);
	/* what the kernel did for signals since the resume, it did for the
	 * task that runs (recon_signal_xret reads it at the return to user);
	 * t gets back what it had done when parked */
	struct park_sig sig = park_sig_if(rs, t, n);
	t->sig_frames = rs->sig_frames;
	t->sig_return = rs->sig_return;
	park_lookalikes(p, rs, n);
	park_restore(rs, &t->stk);
	park_put(&p->park, t, h->id);
	park_take(&p->park, n);
	rs->cands[c] = t;
	begin(x, h, n, rs->popped);
	n->sig_frames = sig.frames;
	n->sig_return = sig.ret;
	/* c's frame at the carried one's height: popped >= 1 (the ret out of
	 * __switch_to) */
	uint64_t ret = carry ? n->stk.v[n->stk.n - rs->popped].ret : STACK_RET_NONE;
	stack_truncate(&n->stk, n->stk.n - rs->popped);
	h->task = n;
	h->stk = &n->stk;
	r->svc->open_all(r, h);
	if (carry) /* its call was counted when the wrong task made it */
		r->svc->push(r, h, top.frame, ret, top.marker, 0);
}

/* A return pops a frame the resumed task had when parked: if it does not
 * return where that frame would, and another candidate's would, swap; if it
 * does, the candidates whose frame would not drop out. A tail call out of a
 * parked frame (schedule() ends in one to wq_worker_running on a workqueue
 * worker) leaves its return address to the function it jumps to: that
 * function's return is the parked frame's (recon_replace_top pops the frame
 * and pushes the new one at the same height, with the same address). */
static void park_recheck(struct pktracker *p, struct tracker_hart *h, uint64_t land)
{
	struct pkhart *x = ph(p, h);
	struct park_resume *rs = &x->res;
	sync_popped(x, h);
	const struct stack_entry *top = stack_top(h->stk);
	uint32_t n = h->stk->n, low = rs->nref - rs->popped;
	int tail = n == low + 1 && n <= rs->nref && top->ret == rs->ref[n - 1].ret;
	if (n != low && !tail)
		return;
	if (top->ret == land) {
		park_narrow(rs, h->task, n - 1, land);
		return;
	}
	for (size_t c = 0; c < rs->ncands; c++) {
		const struct task *t = rs->cands[c];
		if (parked(&p->park, t) && park_returns_to(rs, t, n - 1, land)) {
			park_swap(p, h, c, (uint32_t)tail);
			p->base.run->st.switch_undos++;
			return;
		}
	}
}

/* A ret out of __switch_to is a context switch; another return may show
 * that a provisional resume was wrong. */
static void park_on_return(struct tracker *tr, struct tracker_hart *h, uint64_t land, uint32_t i)
{
	struct pktracker *p = (struct pktracker *)tr;
	const struct stack_entry *top = stack_top(h->stk);
	if (top->frame == p->park.hk.switch_to && !top->marker)
		park_switch(p, h, land, i);
	else if (ph(p, h)->res.active)
		park_recheck(p, h, land);
}

/* An interrupt came as __switch_to returned: its return is the switch. */
static void park_on_trap_return(struct tracker *tr, struct tracker_hart *h, struct code_block *nb,
				uint32_t i)
{
	struct pktracker *p = (struct pktracker *)tr;
	if (h->stk->n && stack_top(h->stk)->frame == p->park.hk.switch_to &&
	    nb->func != p->park.hk.switch_to)
		park_switch(p, h, nb->start, i);
}

/* 1 if pc is where a program starts after execve: the entry point of a user
 * binary mapped there (the program's, or its interpreter's). */
static int exec_entry(const struct tracker_run *r, uint64_t pc)
{
	for (size_t k = 1; k < r->nspaces; k++) {
		const struct sym_mapping *m = sym_space_find(r->syms[k], pc);
		if (m && sym_binary_entry(m->bin) + m->bias == pc)
			return 1;
	}
	return 0;
}

/* The target of the direct call whose return address is ret, or 0 (an
 * indirect call, or no code known there). */
static uint64_t call_target(const struct task *t, uint64_t ret)
{
	for (unsigned len = 4; len >= 2; len -= 2) {
		uint32_t bits;
		struct rv_insn in;
		if (!code_fetch(t->ucs, ret - len, &bits))
			continue;
		rv_decode(bits, &in);
		if (in.len == len && in.kind == RV_CALL)
			return rv_direct_target(&in, ret - len);
	}
	return 0;
}

enum { FIT_NO, FIT_LIKELY, FIT_EXACT };

/* 1 if frame f is code of the lower half (a user function, or a named
 * frame that is no marker: [sigreturn]). */
static int user_frame(const struct tracker_run *r, const struct stack_entry *e)
{
	const struct frame *f = &r->frames.v[e->frame];
	return !e->marker && (f->name || f->space != 0);
}

/* The marker of t's last entry into the kernel from user code: the topmost
 * one right above a user frame (a signal handler runs in a segment above
 * its signal's marker); with sigret (rt_sigreturn ran in this kernel stay),
 * the one below it: the context the signal interrupted comes back. */
static int64_t entry_marker(const struct tracker_run *r, const struct task *t, int sigret)
{
	int64_t last = -1, prev = -1;
	for (uint32_t k = 1; k < t->stk.n; k++)
		if (t->stk.v[k].marker && t->stk.v[k].marker != IDS_MARK_ROOT &&
		    user_frame(r, &t->stk.v[k - 1])) {
			prev = last;
			last = k;
		}
	if (last < 0)
		return sigret ? -1 : proc_user_marker(&t->stk);
	return sigret ? prev : last;
}

/* 1 if pc is a function entry in the binary of the frame below marker m:
 * the handler of a signal delivered to t. */
static int handler_fits(const struct tracker_run *r, const struct task *t, int64_t m, uint64_t pc)
{
	const struct code_block *nb = code_block_at(t->ucs, pc);
	if (m < 1 || nb->func == FRAME_NONE || nb->start != nb->entry)
		return 0;
	const struct sym_mapping *a = sym_space_find(r->syms[t->ucs->id], pc);
	const struct sym_mapping *b =
	    sym_space_find(r->syms[t->ucs->id], r->frames.v[t->stk.v[m - 1].frame].addr);
	return a && b && a->bin == b->bin;
}

/* How well t's return to user space at pc fits what the trace showed:
 * exactly (where it trapped, the target of the call it was making, a
 * program's entry after its exec), likely (into the function it trapped
 * from, or a function entry, when the trap came after a jump), or not.
 * sig: what the kernel did for signals in t's stay, if t is the one that
 * runs (park_sig_if). */
static int user_fits(const struct tracker_run *r, const struct task *t, uint64_t pc,
		     struct park_sig sig)
{
	struct code_block *nb = code_block_at(t->ucs, pc);
	int64_t m = entry_marker(r, t, sig.ret);
	if (sig.frames && !t->exec_pending) /* a signal delivered: its handler's entry */
		return handler_fits(r, t, m, pc) ? FIT_EXACT : FIT_NO;
	if (t->exec_pending) /* a program whose ELF is not given starts anywhere */
		return exec_entry(r, pc)			  ? FIT_EXACT
		       : !sym_space_find(r->syms[t->ucs->id], pc) ? FIT_LIKELY
								  : FIT_NO;
	if (m < 1)
		return FIT_NO; /* a kernel thread */
	int entry = nb->func == FRAME_NONE || nb->start == nb->entry;
	if (t->stk.v[m].marker == IDS_MARK_TRAP_CALL) { /* into the callee, at its entry */
		uint64_t to = call_target(t, t->stk.v[m].ret);
		return to ? (to == pc ? FIT_EXACT : FIT_NO) : entry ? FIT_LIKELY : FIT_NO;
	}
	uint64_t last = t->stk.v[m].ret;
	if (last) /* back to the instruction that trapped, or to the next */
		return pc == last || pc == last + 2 || pc == last + 4 ? FIT_EXACT : FIT_NO;
	/* the trap came after a jump: into the function it trapped from, or
	 * just after that function returned, or just after a tail call */
	const struct stack_entry *below = &t->stk.v[m - 1];
	return below->frame == (nb->func != FRAME_NONE ? nb->func : code_frame_at(nb)) ||
		       below->ret == pc || (nb->func != FRAME_NONE && nb->start == nb->entry)
		   ? FIT_LIKELY
		   : FIT_NO;
}

/* The task's first run of a program at pc: the binary there (the user code
 * chosen for it) names it. Named again if matching changes its mind. */
static void park_name_exec(struct tracker_run *r, struct tracker_hart *h, uint64_t pc)
{
	struct task *t = h->task;
	const struct sym_mapping *m = sym_space_find(r->syms[t->ucs->id], pc);
	if (!m)
		return;
	int pending = t->exec_pending;
	if (t->nexecs && t->execs[t->nexecs - 1].when == t->exec_at) /* the same exec */
		free(t->execs[--t->nexecs].path);
	proc_exec(t, sym_binary_name(m->bin), t->exec_at,
		  (const struct code_space *const *)r->spaces + 1, r->nspaces - 1);
	t->exec_pending = pending;
}

/* A user run starts at nb (matching): the running task's user code is the
 * binary chosen for it. */
static struct code_block *park_match_enter(struct tracker_run *r, struct tracker_hart *h,
					   uint64_t *excl, struct code_block *nb)
{
	unsigned k = tracker_match_begin(r, h, excl, nb->start);
	if (!k)
		return nb;
	h->task->ucs = r->spaces[k];
	return code_block_at(r->spaces[k], nb->start);
}

/* The return to user space confirms the resume, or shows which candidate
 * it was; then the user code that runs is chosen. */
static struct code_block *park_user(struct tracker *tr, struct tracker_hart *h,
				    struct code_block *nb, uint32_t i)
{
	struct pktracker *p = (struct pktracker *)tr;
	struct tracker_run *r = tr->run;
	struct pkhart *x = ph(p, h);
	struct park_resume *rs = &x->res;
	sync_popped(x, h);
	int fit = rs->active ? user_fits(r, h->task, nb->start, park_sig_if(rs, h->task, h->task))
			     : FIT_EXACT;
	size_t best = SIZE_MAX;
	for (size_t c = 0; c < rs->ncands && fit < FIT_EXACT; c++) {
		int f;
		if (parked(&p->park, rs->cands[c]) && park_same_popped(rs, rs->cands[c]) &&
		    (f = user_fits(r, rs->cands[c], nb->start,
				   park_sig_if(rs, h->task, rs->cands[c]))) > fit) {
			fit = f;
			best = c;
		}
	}
	if (best != SIZE_MAX) { /* the one the landing fits best */
		park_swap(p, h, best, 0);
		r->st.switch_user_fixes++;
	} else if (rs->active && fit == FIT_NO) {
		/* no task parked here fits: the guess stands, and says so */
		r->st.switch_misfits++;
		OOB_DEBUG("park: hart %u record %" PRIu64 ": " TASK_FMT
			  " returns to user at %#" PRIx64 ", where no candidate fits",
			  h->id, record_of(r, h), TASK_ARGS(h->task), nb->start);
	}
	rs->active = 0;
	struct task *t = h->task;
	x->run_exec = t->exec_pending;
	if (p->matching)
		nb = park_match_enter(r, h, &x->excl, nb);
	else if (t->exec_pending)
		nb = tracker_space_enter(r, h, nb, i);
	else
		nb = code_block_at(t->ucs, nb->start);
	if (t->exec_pending) {
		park_name_exec(r, h, nb->start);
		t->fn_named = 0;
	}
	return nb;
}

/* Matching changed its mind: the same task, but what the run pushed was
 * read in the wrong binary. */
static struct code_block *park_mismatch(struct tracker *tr, struct tracker_hart *h,
					struct code_block *nb, uint32_t i)
{
	struct tracker_run *r = tr->run;
	struct pktracker *p = (struct pktracker *)tr;
	if (!p->matching)
		return NULL;
	struct pkhart *x = ph(p, h);
	unsigned k = tracker_match_next(r, h, &x->excl, nb, i);
	if (!k)
		return NULL;
	h->task->ucs = r->spaces[k];
	nb = code_block_at(r->spaces[k], nb->start);
	r->svc->pop_to(r, h, h->run_base);
	if (x->run_exec)
		park_name_exec(r, h, nb->start);
	if (h->stk->n > stack_segment_base(h->stk))
		r->svc->jump(r, h, nb, nb, i);
	else
		r->svc->push_base(r, h, nb);
	return nb;
}

static uint64_t park_hart_key(struct tracker *tr)
{
	return ids_key(IDS_KEY_PARK, ++((struct pktracker *)tr)->park.ntasks);
}

static void park_start(struct tracker *tr, struct tracker_hart *h, const struct trace_batch *b,
		       uint32_t i)
{
	struct pktracker *p = (struct pktracker *)tr;
	uint64_t pc = b->pc[i];
	unsigned k =
	    p->matching && !(pc >> 63) ? tracker_match_pick(tr->run, h, ph(p, h)->excl, pc) : 0;
	if (k)
		h->task->ucs = tr->run->spaces[k];
	struct code_block *blk = code_block_at(pc >> 63 ? tr->run->spaces[0] : h->task->ucs, pc);
	if (!p->park.nclones && blk->func == FRAME_NONE) {
		/* starts in firmware: the task is the hart's idle task (Linux's
		 * pid 0), the boot hart's the boot task, and the pids the kernel
		 * hands out can be counted */
		p->park.from_boot |= h->id == 0;
		h->task->pid = 0;
		h->task->idle = 1;
		h->task->hart = h->id;
		snprintf(h->task->comm, sizeof(h->task->comm), "swapper/%u", (unsigned)h->id);
	}
}

static void park_finish(struct tracker *tr)
{
	const struct park *pk = &((struct pktracker *)tr)->park;
	if (pk->evicted || pk->capped)
		OOB_WARN("context switches: %" PRIu64 " sleeping tasks dropped (more than %d "
			 "parked), %" PRIu64 " switches to unseen tasks kept the running one (%d "
			 "tasks made)",
			 pk->evicted, PARK_MAX, pk->capped, PARK_MAX_TASKS);
}

static void park_tracker_free(struct tracker *tr)
{
	struct pktracker *p = (struct pktracker *)tr;
	for (size_t k = 0; k < p->nharts; k++)
		park_resume_destroy(&p->harts[k].res);
	free(p->harts);
	park_destroy(&p->park);
	free(p);
}

/* A fork child's return that its guessed clone does not explain (park.h). */
static int park_ret_miss(struct tracker *t, struct tracker_hart *h, uint64_t land)
{
	struct pktracker *p = (struct pktracker *)t;
	if (!park_guess_fix(&p->park, h->task, land))
		return 0;
	p->base.run->st.switch_clone_fixes++;
	return 1;
}

static const struct tracker_ops park_ops = {
    .source = "matched",
    .hart_key = park_hart_key,
    .on_start = park_start,
    .on_call = park_on_call,
    .on_return = park_on_return,
    .on_ret_miss = park_ret_miss,
    .on_jump = park_kthread,
    .on_trap_return = park_on_trap_return,
    .on_user_entry = park_user,
    .on_mismatch = park_mismatch,
    .finish = park_finish,
    .free = park_tracker_free,
};

struct tracker *tracker_park_new(struct tracker_run *r, const struct sym_binary *kernel,
				 uint64_t bias, unsigned kspace, int matching)
{
	struct pktracker *p = oob_xcalloc(1, sizeof(*p));
	park_init(&p->park, &r->frames, kernel, bias, kspace);
	if (!p->park.enabled) {
		park_destroy(&p->park);
		free(p);
		return NULL;
	}
	p->base = (struct tracker){&park_ops, r};
	p->matching = matching;
	return &p->base;
}
