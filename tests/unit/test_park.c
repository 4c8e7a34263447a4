/* park: which parked task resumes, pids from alloc_pid() calls. Stacks are
 * built by hand the way recon.c leaves them (root, user frames, a trap
 * marker, kernel frames, __switch_to on top); the hooks come from a real
 * vmlinux. */
#include <stdlib.h>
#include <string.h>

#include "profile/frame.h"
#include "oobtest.h"
#include "tasks/park.h"

enum { F_USER = 100, F_MARK, F_SCHEDULE, F_SCHED, F_WAIT, F_READ, F_IDLE };
#define SWITCH 7u /* stands for the __switch_to frame */
#define LAND   0x8000100ull

/* A task parked in schedule() called from `caller`, returning to ret there. */
static struct task *parked_task(uint32_t caller, uint64_t ret)
{
	struct task *t = calloc(1, sizeof(*t));
	stack_init(&t->stk);
	stack_push(&t->stk, 1, 0, STACK_RET_NONE, IDS_MARK_ROOT);
	stack_push(&t->stk, F_USER, 0, STACK_RET_NONE, 0);
	stack_push(&t->stk, F_MARK, 0, 0, 1);
	stack_push(&t->stk, caller, 0, STACK_RET_NONE, 0);
	stack_push(&t->stk, F_SCHEDULE, 0, ret, 0);
	stack_push(&t->stk, F_SCHED, 0, 0x8000500, 0);
	stack_push(&t->stk, SWITCH, 0, LAND, 0);
	return t;
}

static void task_free(struct task *t)
{
	stack_destroy(&t->stk);
	free(t);
}

static void init_park(struct park *pk)
{
	memset(pk, 0, sizeof(*pk));
	pk->enabled = 1;
	pk->hk.switch_to = SWITCH;
	pk->hk.kernel_thread = 50;
	pk->hk.user_mode_thread = 51;
}

/* Candidates: every live task parked with that return address, and the
 * pcs that follow the switch pick the one whose returns they land on. */
static void find_and_guess(void)
{
	struct park pk;
	struct park_resume rs = {0};
	init_park(&pk);
	struct task *wait = parked_task(F_WAIT, 0x8000900), *rd = parked_task(F_READ, 0x8000a00),
		    *dead = parked_task(F_READ, 0x8000a00);
	dead->dead = 1;
	park_put(&pk, wait, 0);
	park_put(&pk, rd, 0);
	park_put(&pk, dead, 0);
	CHECK_EQ(park_find(&pk, LAND, 0, 0, &rs), 2);
	CHECK_EQ(park_find(&pk, LAND + 4, 0, 0, &rs), 0);
	CHECK_EQ(park_find(&pk, LAND, 0, 0, &rs), 2);
	CHECK(rs.cands[0] == wait);
	/* __schedule returns (shared), then into pipe_read's caller: rd */
	const uint64_t pcs[] = {0x8000104, 0x8000500, 0x8000504, 0x8000a00, 0x8000900};
	park_guess(&rs, pcs, 5);
	CHECK(rs.cands[0] == rd);
	/* a pc stream that never returns says nothing: the order stays */
	park_guess(&rs, pcs, 2);
	CHECK(rs.cands[0] == rd);
	park_take(&pk, rd);
	CHECK_EQ(pk.nparked, 1); /* the dead task was never parked */
	park_resume_destroy(&rs);
	park_destroy(&pk);
	task_free(wait);
	task_free(rd);
	task_free(dead);
}

/* Two idle tasks sleep on the same stack: each hart resumes its own first,
 * whatever order they were parked in, and the pcs still decide otherwise. */
static void same_hart_first(void)
{
	struct park pk;
	struct park_resume rs = {0};
	init_park(&pk);
	struct task *idle0 = parked_task(F_WAIT, 0x8000900),
		    *idle1 = parked_task(F_WAIT, 0x8000900), *rd = parked_task(F_READ, 0x8000a00);
	park_put(&pk, idle0, 0);
	park_put(&pk, idle1, 1);
	park_put(&pk, rd, 0);
	CHECK_EQ(park_find(&pk, LAND, 1, 0, &rs), 3);
	CHECK(rs.cands[0] == idle1);
	CHECK_EQ(park_find(&pk, LAND, 0, 0, &rs), 3);
	CHECK(rs.cands[0] == idle0 && rs.cands[1] == rd && rs.cands[2] == idle1);
	const uint64_t pcs[] = {0x8000104, 0x8000500, 0x8000504, 0x8000900};
	CHECK_EQ(park_find(&pk, LAND, 1, 0, &rs), 3);
	park_guess(&rs, pcs, 4);
	CHECK(rs.cands[0] == idle1); /* both idles fit the pcs: hart 1's own */
	const uint64_t rpcs[] = {0x8000104, 0x8000500, 0x8000504, 0x8000a00};
	CHECK_EQ(park_find(&pk, LAND, 1, 0, &rs), 3);
	park_guess(&rs, rpcs, 4);
	CHECK(rs.cands[0] == rd); /* the pcs say rd, parked on hart 0 */
	park_resume_destroy(&rs);
	park_destroy(&pk);
	task_free(idle0);
	task_free(idle1);
	task_free(rd);
}

/* However many tasks sleep, a switch looks at PARK_MAX of them: the
 * oldest sleepers stop being candidates. */
static void parked_is_bounded(void)
{
	struct park pk;
	struct park_resume rs = {0};
	init_park(&pk);
	struct task *first = parked_task(F_WAIT, 0x8000900), *t = parked_task(F_READ, 0x8000a00);
	park_put(&pk, first, 0);
	for (int k = 0; k < PARK_MAX; k++)
		park_put(&pk, t, 0);
	CHECK_EQ(pk.nparked, PARK_MAX);
	CHECK_EQ(pk.evicted, 1);
	CHECK(pk.parked[0] == t);
	CHECK_EQ(park_find(&pk, LAND, 0, 0, &rs), PARK_MAX);
	park_resume_destroy(&rs);
	park_destroy(&pk);
	task_free(first);
	task_free(t);
}

/* A provisional resume remembers the stack; a swap puts it back exactly. */
static void restore_and_compare(void)
{
	struct park_resume rs = {0};
	struct task *a = parked_task(F_WAIT, 0x8000900), *b = parked_task(F_READ, 0x8000a00),
		    *c = parked_task(F_IDLE, 0x8000a00);
	c->stk.v[c->stk.n - 2].frame = F_IDLE; /* a different __schedule caller */
	park_begin(&rs, &a->stk, 0);
	stack_truncate(&a->stk, a->stk.n - 2); /* __switch_to and __schedule returned */
	rs.popped = 2;
	stack_push(&a->stk, 999, 0, 0, 0); /* and something was called since */
	CHECK(park_same_popped(&rs, b));
	CHECK(!park_same_popped(&rs, c));
	park_restore(&rs, &a->stk);
	CHECK_EQ(a->stk.n, 7);
	CHECK_EQ(stack_top(&a->stk)->frame, SWITCH);
	CHECK_EQ(stack_segment_base(&a->stk), 3);
	park_resume_destroy(&rs);
	task_free(a);
	task_free(b);
	task_free(c);
}

/* Pids in alloc_pid() order; siblings pending together get -1, for good. */
static void pids_from_clones(void)
{
	struct park pk;
	struct park_clone cl;
	init_park(&pk);
	pk.from_boot = 1;
	struct task *boot = parked_task(F_IDLE, 0), *init = parked_task(F_WAIT, 0);
	struct stack kt;
	stack_init(&kt);
	stack_push(&kt, 1, 0, STACK_RET_NONE, IDS_MARK_ROOT);
	stack_push(&kt, 51, 0, 0, 0); /* user_mode_thread: pid 1 */
	park_clone_note(&pk, boot, &kt);
	kt.v[1].frame = 50; /* kernel_thread: pid 2 */
	park_clone_note(&pk, boot, &kt);
	CHECK(park_clone_take(&pk, PARK_KTHREAD, &cl));
	CHECK_EQ(cl.pid, 2);
	CHECK(cl.parent == boot);
	CHECK(park_clone_take(&pk, PARK_USER_THREAD, &cl));
	CHECK_EQ(cl.pid, 1);
	CHECK(!park_clone_take(&pk, PARK_FORK, &cl));

	park_clone_note(&pk, init, &init->stk); /* fork: pid 3, with init's user frames */
	CHECK(park_clone_take(&pk, PARK_FORK, &cl));
	CHECK_EQ(cl.pid, 3);
	CHECK_EQ(cl.nuser, 2); /* the user frame and the trap marker */
	CHECK_EQ(cl.user[0].frame, F_USER);
	CHECK_EQ(cl.user[1].marker, 1);
	free(cl.user);

	park_clone_note(&pk, init, &init->stk); /* 4 and 5 forked before either runs */
	park_clone_note(&pk, init, &init->stk);
	CHECK(park_clone_take(&pk, PARK_FORK, &cl));
	CHECK_EQ(cl.pid, -1);
	CHECK(cl.parent == init);
	free(cl.user);
	CHECK(park_clone_take(&pk, PARK_FORK, &cl));
	CHECK_EQ(cl.pid, -1); /* alone now, but which of the two is unknown */
	free(cl.user);
	park_clone_note(&pk, init, &init->stk);
	CHECK(park_clone_take(&pk, PARK_FORK, &cl));
	CHECK_EQ(cl.pid, 6);
	free(cl.user);
	stack_destroy(&kt);
	park_destroy(&pk);
	task_free(boot);
	task_free(init);
}

static void hooks_from_vmlinux(void)
{
	const char *path = oobtest_gen("vmlinux");
	struct sym_binary *k = path ? sym_binary_open(path, NULL) : NULL;
	if (!k)
		SKIP("no vmlinux in tests/gen");
	struct frame_table ft;
	struct park pk;
	frame_table_init(&ft);
	park_init(&pk, &ft, k, 0, 0);
	CHECK(pk.enabled);
	CHECK(pk.hk.fork_entry && pk.hk.kthread_entry && pk.hk.fork_entry != pk.hk.kthread_entry);
	CHECK(pk.hk.alloc_pid != FRAME_NONE && pk.hk.new_exec != FRAME_NONE);
	CHECK(pk.hk.kthreadd != FRAME_NONE && pk.hk.kthread != FRAME_NONE);
	park_destroy(&pk);
	park_init(&pk, &ft, NULL, 0, 0);
	CHECK(!pk.enabled);
	frame_table_destroy(&ft);
	sym_binary_free(k);
}

/* Look-alikes: three children of one parent asleep on the same stack, and
 * one asleep elsewhere. Whichever of the three resumes, their pids become
 * unknown (and so does a parent they do not share); the fourth keeps its
 * own, and a resume among tasks that already agree changes nothing. */
static void lookalikes_lose_pids(void)
{
	struct park pk;
	struct park_resume rs = {0};
	init_park(&pk);
	struct task *a = parked_task(F_WAIT, 0x8000900), *b = parked_task(F_WAIT, 0x8000900),
		    *c = parked_task(F_WAIT, 0x8000900), *d = parked_task(F_READ, 0x8000a00);
	a->pid = 26, b->pid = 27, c->pid = 28, d->pid = 29;
	a->parent = b->parent = d->parent = 0x100;
	c->parent = 0x200;
	park_put(&pk, a, 0);
	park_put(&pk, b, 1);
	park_put(&pk, c, 0);
	park_put(&pk, d, 0);
	CHECK_EQ(park_find(&pk, LAND, 0, 0, &rs), 4);
	CHECK_EQ(park_lookalikes_merge(&rs, b), 1);
	CHECK(a->pid == -1 && b->pid == -1 && c->pid == -1 && d->pid == 29);
	CHECK(a->parent == 0 && b->parent == 0 && c->parent == 0 && d->parent == 0x100);
	CHECK_EQ(park_lookalikes_merge(&rs, a), 0);
	/* a different return address in any frame is told apart by a return */
	c->stk.v[4].ret = 0x8000904;
	c->pid = 30;
	CHECK_EQ(park_lookalikes_merge(&rs, a), 0);
	CHECK_EQ(c->pid, 30);
	/* another user binary, or an exec pending, is told apart at the
	 * return to user space */
	d->pid = 29;
	d->stk.v[3].frame = F_WAIT;
	d->stk.v[4].ret = 0x8000900;
	d->exec_pending = 1;
	CHECK_EQ(park_lookalikes_merge(&rs, a), 0);
	CHECK_EQ(d->pid, 29);
	park_resume_destroy(&rs);
	park_destroy(&pk);
	task_free(a);
	task_free(b);
	task_free(c);
	task_free(d);
}

int main(void)
{
	OOBTEST_BEGIN("test_park");
	RUN(find_and_guess);
	RUN(same_hart_first);
	RUN(parked_is_bounded);
	RUN(restore_and_compare);
	RUN(pids_from_clones);
	RUN(lookalikes_lose_pids);
	RUN(hooks_from_vmlinux);
	return OOBTEST_END();
}
