/* waits: the rules of RECONSTRUCTION.md 15 on stack events made by hand, each
 * case with the times its blocks, wake-ups and switches were placed at, so
 * every expected number is known before waits_build runs. */
#include <stdlib.h>
#include <string.h>

#include "oobtest.h"
#include "profile/profile.h"
#include "recon/evlog.h"
#include "timeline/waits.h"

enum {
	F_A, /* process frames */
	F_B,
	F_C,
	F_SCHED_CALLER, /* schedule */
	F_SCHED,	/* __schedule */
	F_DEACT,
	F_TTWU,
	F_ACT,
	F_PIPE_READ,
	F_PIPE_WRITE,
	F_NANOSLEEP,
	F_HRTIMER,
	F_TRAP,
	F_IRQ,
	F_WORK,
	NF
};

static struct profile *profile_of(void)
{
	static const char *const names[NF] = {"a 1",
					      "b 2",
					      "c 3",
					      "schedule",
					      "__schedule",
					      "deactivate_task",
					      "try_to_wake_up",
					      "ttwu_do_activate",
					      "pipe_read",
					      "pipe_write",
					      "do_nanosleep",
					      "hrtimer_wakeup",
					      "[trap]",
					      "generic_handle_arch_irq",
					      "work"};
	struct profile_frame fr[NF];
	for (int i = 0; i < NF; i++)
		fr[i] = (struct profile_frame){.name = names[i], .kind = PROFILE_FRAME_KERNEL};
	fr[F_A].kind = fr[F_B].kind = fr[F_C].kind = PROFILE_FRAME_PROCESS;
	fr[F_TRAP].kind = PROFILE_FRAME_MARKER;
	fr[F_WORK].kind = PROFILE_FRAME_USER;
	struct profile_node root = {.parent = PROFILE_NONE,
				    .frame = PROFILE_NONE,
				    .first_child = PROFILE_NONE,
				    .next_sibling = PROFILE_NONE};
	struct profile_stats st = {.format = "oobt", .harts = 1};
	struct profile *p = profile_new(&root, 1, fr, NF, &st, NULL);
	struct profile_process pr[3] = {
	    {.pid = 1, .ppid = -1, .comm = "a", .frame = F_A},
	    {.pid = 2, .ppid = -1, .comm = "b", .frame = F_B},
	    {.pid = -1, .ppid = -1, .comm = "c", .frame = F_C},
	};
	profile_set_processes(p, pr, 3, "derived", 0);
	return p;
}

/* A hand-made log of one hart: the stack as frame ids, events at times. */
struct mk {
	struct evlog *log;
	uint32_t stk[64];
	uint32_t n;
};

static void ev(struct mk *m, int kind, uint32_t frame, int calls, uint64_t t)
{
	struct recon_event e = {.kind = (uint8_t)kind,
				.calls = (uint8_t)calls,
				.frame = frame,
				.depth = kind == RECON_EV_OPEN ? m->n + 1 : m->n,
				.insn = t,
				.seq = t};
	evlog_record(m->log, &e);
}

static void call(struct mk *m, uint32_t f, uint64_t t)
{
	ev(m, RECON_EV_OPEN, f, 1, t);
	m->stk[m->n++] = f;
}

static void ret(struct mk *m, uint64_t t)
{
	ev(m, RECON_EV_CLOSE, m->stk[m->n - 1], 0, t);
	m->n--;
}

/* A task switch: the whole stack closes and the other one opens (12). */
static void out(struct mk *m, uint64_t t, uint32_t *saved, uint32_t *nsaved)
{
	memcpy(saved, m->stk, m->n * sizeof(*saved));
	*nsaved = m->n;
	while (m->n)
		ret(m, t);
}

static void in(struct mk *m, const uint32_t *stk, uint32_t n, uint64_t t)
{
	for (uint32_t i = 0; i < n; i++) {
		ev(m, RECON_EV_OPEN, stk[i], 0, t);
		m->stk[m->n++] = stk[i];
	}
}

/* A blocks in pipe_read at 20 (deactivated at 12); B runs, wakes it from
 * pipe_write at 52 (activation at 54), and is switched out at 70 without
 * blocking; A runs from 70 to 80. */
static struct evlog *pipe_log(void)
{
	struct mk m = {.log = evlog_new(NULL, 0, NULL)};
	uint32_t sa[64], sb[64], na, nb;
	call(&m, F_A, 0);
	call(&m, F_PIPE_READ, 2);
	call(&m, F_SCHED_CALLER, 4);
	call(&m, F_SCHED, 10);
	call(&m, F_DEACT, 12);
	ret(&m, 14);
	out(&m, 20, sa, &na);
	call(&m, F_B, 20);
	call(&m, F_WORK, 21);
	call(&m, F_PIPE_WRITE, 50);
	call(&m, F_TTWU, 52);
	call(&m, F_ACT, 54);
	ret(&m, 55);
	ret(&m, 56);
	ret(&m, 58);
	call(&m, F_SCHED, 60);
	out(&m, 70, sb, &nb);
	in(&m, sa, na, 70);
	ret(&m, 75); /* __schedule returns */
	while (m.n)
		ret(&m, 80);
	return m.log;
}

static void pipe_wait_woken_by_writer(void)
{
	struct profile *p = profile_of();
	struct evlog *log = pipe_log();
	struct waits *w = NULL;
	struct oob_err e = {0};
	CHECK_EQ(evlog_finish(log, &e), 0);
	CHECK_EQ(waits_build(log, p, &w, &e), 0);
	CHECK_EQ(w->nwaits, 1);
	const struct waits_wait *wt = &w->waits[0];
	CHECK_EQ(wt->task, F_A);
	CHECK_EQ(wt->deact, 12);
	CHECK_EQ(wt->out, 20);
	CHECK_EQ(wt->in, 70);
	CHECK_EQ(wt->stack.n, 4); /* a, pipe_read, schedule, __schedule */
	CHECK_EQ(wt->stack.v[3], F_SCHED);
	CHECK(wt->wake != WAITS_NONE && !wt->ambiguous);
	const struct waits_wake *k = &w->wakes[wt->wake];
	CHECK_EQ(k->waker, F_B);
	CHECK_EQ(k->at, 52);
	CHECK_EQ(k->t, 54);
	CHECK_EQ(k->irq, 0);
	CHECK_EQ(k->stack.n, 4); /* b, work, pipe_write, try_to_wake_up */
	CHECK_EQ(w->counts.woken_exact, 1);
	CHECK_EQ(w->counts.unended, 0);
	/* the off-CPU profile: one stack weighing the wait */
	struct profile *o = waits_offcpu_profile(w, p, WAITS_NONE, &e);
	CHECK(o != NULL);
	CHECK_EQ(profile_nnodes(o), 5);
	CHECK_EQ(profile_node(o, 4)->frame, F_SCHED);
	CHECK_EQ(profile_node(o, 4)->self_insns, 50);
	CHECK_EQ(profile_node(o, 4)->calls, 1);
	CHECK_EQ(profile_node(o, 0)->total_insns, 50);
	profile_free(o);
	o = waits_offcpu_profile(w, p, F_B, &e);
	CHECK_EQ(profile_node(o, 0)->total_insns, 0);
	profile_free(o);
	/* the path of a: its run, the wait until switched in, b up to the wake */
	struct waits_path pth;
	CHECK_EQ(waits_critical_path(w, F_A, 0, 0, &pth, &e), 0);
	CHECK_EQ(pth.n, 3);
	CHECK_EQ(pth.v[0].kind, WAITS_RUNNING);
	CHECK_EQ(pth.v[0].from, 70);
	CHECK_EQ(pth.v[0].to, 80);
	CHECK_EQ(pth.v[1].kind, WAITS_RUNNABLE);
	CHECK_EQ(pth.v[1].from, 54);
	CHECK_EQ(pth.v[1].to, 70);
	CHECK_EQ(pth.v[2].kind, WAITS_RUNNING);
	CHECK_EQ(pth.v[2].task, F_B);
	CHECK_EQ(pth.v[2].from, 20);
	CHECK_EQ(pth.v[2].to, 52);
	CHECK_EQ(pth.v[2].wake, wt->wake);
	waits_path_free(&pth);
	/* a window that starts inside b's run cuts it */
	CHECK_EQ(waits_critical_path(w, F_A, 30, 0, &pth, &e), 0);
	CHECK_EQ(pth.n, 3);
	CHECK_EQ(pth.v[2].from, 30);
	waits_path_free(&pth);
	CHECK_EQ(waits_critical_path(w, F_C, 0, 0, &pth, &e), -ENOENT);
	waits_free(w);
	evlog_free(log);
	profile_free(p);
}

/*
 * Two waits whose windows both hold both wake-ups: c sleeps in
 * do_nanosleep (deactivated 95, out 100), a reads a pipe (105, 110); b's
 * timer interrupt wakes one (hrtimer_wakeup, activation 122), b's
 * pipe_write the other (132). Only the kernel functions tell which. At 140
 * the tracker resumes c provisionally and takes it back at 145 (a switch
 * outside __schedule): a ran from 140; c runs at 150.
 */
static struct evlog *pair_log(void)
{
	struct mk m = {.log = evlog_new(NULL, 0, NULL)};
	uint32_t sa[64], sb[64], sc[64], na, nb, nc;
	call(&m, F_C, 90);
	call(&m, F_NANOSLEEP, 91);
	call(&m, F_SCHED_CALLER, 92);
	call(&m, F_SCHED, 94);
	call(&m, F_DEACT, 95);
	ret(&m, 96);
	out(&m, 100, sc, &nc);
	call(&m, F_A, 100);
	call(&m, F_PIPE_READ, 101);
	call(&m, F_SCHED_CALLER, 102);
	call(&m, F_SCHED, 104);
	call(&m, F_DEACT, 105);
	ret(&m, 106);
	out(&m, 110, sa, &na);
	call(&m, F_B, 110);
	call(&m, F_TRAP, 118);
	call(&m, F_IRQ, 119);
	call(&m, F_HRTIMER, 120);
	call(&m, F_TTWU, 121);
	call(&m, F_ACT, 122);
	ret(&m, 123);
	ret(&m, 124);
	ret(&m, 125);
	ret(&m, 126);
	ret(&m, 127);
	call(&m, F_PIPE_WRITE, 130);
	call(&m, F_TTWU, 131);
	call(&m, F_ACT, 132);
	ret(&m, 133);
	ret(&m, 134);
	ret(&m, 135);
	call(&m, F_SCHED, 136);
	out(&m, 140, sb, &nb);
	in(&m, sc, nc, 140);   /* provisional, wrong */
	ret(&m, 143);	       /* __schedule returns... */
	out(&m, 145, sc, &nc); /* ...and the tracker takes it back */
	in(&m, sa, na, 145);
	ret(&m, 146);
	call(&m, F_SCHED, 147);
	out(&m, 150, sa, &na);
	in(&m, sc, nc, 150);
	while (m.n)
		ret(&m, 160);
	return m.log;
}

static void kernel_functions_decide_and_take_backs_undo(void)
{
	struct profile *p = profile_of();
	struct evlog *log = pair_log();
	struct waits *w = NULL;
	struct oob_err e = {0};
	CHECK_EQ(evlog_finish(log, &e), 0);
	CHECK_EQ(waits_build(log, p, &w, &e), 0);
	CHECK_EQ(w->nwaits, 2);
	const struct waits_wait *c = &w->waits[0], *a = &w->waits[1];
	CHECK_EQ(c->task, F_C);
	CHECK_EQ(a->task, F_A);
	CHECK_EQ(a->in, 140); /* when the taken-back run began */
	CHECK_EQ(c->in, 150);
	CHECK(a->wake != WAITS_NONE && c->wake != WAITS_NONE);
	CHECK_EQ(w->wakes[a->wake].t, 132);
	CHECK_EQ(w->wakes[c->wake].t, 122);
	CHECK_EQ(w->wakes[c->wake].irq, 1);
	CHECK_EQ(w->wakes[a->wake].irq, 0);
	CHECK_EQ(w->counts.woken_exact, 2);
	CHECK_EQ(w->counts.woken_ambiguous, 0);
	/* c's path: an interrupt ended its wait; the path stays on c before it */
	struct waits_path pth;
	CHECK_EQ(waits_critical_path(w, F_C, 0, 0, &pth, &e), 0);
	CHECK(pth.n >= 3);
	CHECK_EQ(pth.v[0].kind, WAITS_RUNNING);
	CHECK_EQ(pth.v[0].from, 150);
	CHECK_EQ(pth.v[1].kind, WAITS_RUNNABLE);
	CHECK_EQ(pth.v[1].from, 122);
	CHECK_EQ(pth.v[2].kind, WAITS_INTERRUPT);
	CHECK_EQ(pth.v[2].from, 100);
	CHECK_EQ(pth.v[2].to, 122);
	CHECK_EQ(pth.v[3].kind, WAITS_RUNNING);
	CHECK_EQ(pth.v[3].to, 100);
	waits_path_free(&pth);
	waits_free(w);
	evlog_free(log);
	profile_free(p);
}

/* Without the scheduler's functions there are no waits to speak of. */
static void no_scheduler_is_refused(void)
{
	struct profile_frame f = {.name = "main", .kind = PROFILE_FRAME_USER};
	struct profile_node root = {.parent = PROFILE_NONE,
				    .frame = PROFILE_NONE,
				    .first_child = PROFILE_NONE,
				    .next_sibling = PROFILE_NONE};
	struct profile_stats st = {.format = "oobt"};
	struct profile *p = profile_new(&root, 1, &f, 1, &st, NULL);
	struct evlog *log = evlog_new(NULL, 0, NULL);
	struct waits *w = NULL;
	struct oob_err e = {0};
	CHECK_EQ(evlog_finish(log, &e), 0);
	CHECK_EQ(waits_build(log, p, &w, &e), -ENOENT);
	CHECK(strstr(e.msg, "tasks") != NULL);
	struct profile_process pr = {.pid = 1, .ppid = -1, .comm = "x", .frame = 0};
	profile_set_processes(p, &pr, 1, "derived", 0);
	CHECK_EQ(waits_build(log, p, &w, &e), -ENOENT);
	CHECK(strstr(e.msg, "__schedule") != NULL);
	evlog_free(log);
	profile_free(p);
}

int main(void)
{
	OOBTEST_BEGIN("test_waits");
	RUN(pipe_wait_woken_by_writer);
	RUN(kernel_functions_decide_and_take_backs_undo);
	RUN(no_scheduler_is_refused);
	return OOBTEST_END();
}
