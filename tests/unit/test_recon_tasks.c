/*
 * test_recon_tasks: the reconstruction's rules across tasks: context
 * switches by sideband events, through __switch_to in pc-only traces
 * (guessed resumes, undos, signal work), from tp writes.
 * The rows and how they run: recon_rows.h.
 */
#include "recon_rows.h"

static const struct row rows[] = {
    {"context switches by sideband events",
     {{"main", 0, 0}, {"main", 4, 0}, {"f", 0, 0}, {"f", 4, 0}, {"main", 8, 0}},
     "{\"event\": \"switch\", \"hart\": 0, \"seq\": 0, \"pid\": 1}\n"
     "{\"event\": \"switch\", \"hart\": 0, \"seq\": 3, \"pid\": 2}\n"
     "{\"event\": \"switch\", \"hart\": 0, \"seq\": 4, \"pid\": 1}\n",
     /* pid 2 first runs inside f (its stack starts there); pid 1 resumes
      * with f on its stack, and the ret to main+8 pops it */
     {"? 1;main 3", "? 1;main;f 1", "? 2;f 1"},
     .calls = 1,
     .returns = 1,
     .switches = 2},
    {"context switches through __switch_to, pcs only",
     {{"kmain", 0, 0},
      {"__switch_to", 0, 0},
      {"__switch_to", 4, 0},
      {"ret_from_fork", 0, 0},
      {"ret_from_fork", 4, 0},
      {"__switch_to", 0, 0},
      {"__switch_to", 4, 0},
      {"kmain", 4, 0}},
     NULL,
     /* the first ret out of __switch_to lands on ret_from_fork: task 0 is
      * parked and a new task 1 runs; the second lands where task 0's
      * __switch_to returns: task 0 resumes, task 1 is parked */
     {"? [task 0];kmain 2", "? [task 0];kmain;__switch_to 2", "? [task 1];ret_from_fork 2",
      "? [task 1];ret_from_fork;__switch_to 2"},
     .kernel = 1,
     .pconly = 1,
     .calls = 2,
     .returns = 2,
     .switch_new_tasks = 1,
     .switch_resumes = 1,
     .switches = 2},
    {
	"a guessed resume, pcs only: the next pcs pick the task",
	{{"kthreadd", 0, 0},
	 {"schedule", 0, 0},
	 {"__switch_to", 0, 0},
	 {"__switch_to", 4, 0},
	 {"ret_from_kernel_thread", 0, 0},
	 {"worker_thread", 0, 0},
	 {"schedule", 0, 0},
	 {"__switch_to", 0, 0},
	 {"__switch_to", 4, 0},
	 {"ret_from_fork", 0, 0},
	 {"ret_from_fork", 4, 0},
	 {"__switch_to", 0, 0},
	 {"__switch_to", 4, 0},
	 {"schedule", 4, 0},
	 {"wq_worker_running", 0, 0},
	 {"worker_thread", 4, 0},
	 {"worker_thread", 8, 0}},
	NULL,
	/* kthreadd (task 0) and worker_thread (task 1) both sleep in schedule
	 * at __switch_to+4; task 2 switches back: the pcs after the switch
	 * (worker_thread+4) say task 1 resumes */
	{"? [task 0];kthreadd 1", "? [task 0];kthreadd;schedule 1",
	 "? [task 0];kthreadd;schedule;__switch_to 2", "? [task 2];ret_from_fork 2",
	 "? [task 2];ret_from_fork;__switch_to 2",
	 "worker_thread [task 1];ret_from_kernel_thread 1",
	 "worker_thread [task 1];worker_thread 3",
	 "worker_thread [task 1];worker_thread;schedule 2",
	 "worker_thread [task 1];worker_thread;schedule;__switch_to 2",
	 "worker_thread [task 1];worker_thread;wq_worker_running 1"},
	.kernel = 1,
	.pconly = 1,
	.calls = 5,
	.returns = 4,
	.tail_calls = 2,
	.switch_new_tasks = 2,
	.switch_resumes = 1,
	.switches = 3,
    },
    {"a guessed resume at a batch end, undone by a tail call's return",
     {{"kthreadd", 0, 0},
      {"schedule", 0, 0},
      {"__switch_to", 0, 0},
      {"__switch_to", 4, 0},
      {"ret_from_kernel_thread", 0, 0},
      {"worker_thread", 0, 0},
      {"schedule", 0, 0},
      {"__switch_to", 0, 0},
      {"__switch_to", 4, 0},
      {"ret_from_fork", 0, 0},
      {"ret_from_fork", 4, 0},
      {"__switch_to", 0, 0},
      {"__switch_to", 4, 0},
      {"schedule", 4, 0},
      {"wq_worker_running", 0, 0},
      {"worker_thread", 4, 0},
      {"worker_thread", 8, 0}},
     NULL,
     /* the same records, the switch the last record of its batch: the guess
      * sees no pc and takes task 0; schedule's tail call to
      * wq_worker_running inherits the return address of schedule's parked
      * frame, and its return to worker_thread+4 swaps task 1 in (the
      * carried wq_worker_running frame returns at once). The two records
      * run before the swap (schedule+4, wq_worker_running) stay with task
      * 0, where they were charged */
     {"? [task 0];kthreadd 1", "? [task 0];kthreadd;schedule 2",
      "? [task 0];kthreadd;schedule;__switch_to 2", "? [task 0];kthreadd;wq_worker_running 1",
      "? [task 2];ret_from_fork 2", "? [task 2];ret_from_fork;__switch_to 2",
      "worker_thread [task 1];ret_from_kernel_thread 1", "worker_thread [task 1];worker_thread 3",
      "worker_thread [task 1];worker_thread;schedule 1",
      "worker_thread [task 1];worker_thread;schedule;__switch_to 2"},
     .kernel = 1,
     .pconly = 1,
     .calls = 5,
     .returns = 4,
     .tail_calls = 2,
     .switch_new_tasks = 2,
     .switch_resumes = 1,
     .switches = 3,
     .undos = 1,
     .split = 14},
    {"a guessed resume into a signal handler set up before the task parked",
     {{"sigmain", 0, 0},	   {"sigmain", 4, 0},	    {"work_pending", 0, 0},
      {"work_pending", 8, 0},	   {"schedule", 0, 0},	    {"__switch_to", 0, 0},
      {"__switch_to", 4, 0},	   {"work_pending", 12, 0}, {"sigmain", 0, 0},
      {"sigmain", 4, 0},	   {"work_pending", 0, 0},  {"work_pending", 4, 0},
      {"signal_setup_done", 0, 0}, {"work_pending", 8, 0},  {"schedule", 0, 0},
      {"__switch_to", 0, 0},	   {"__switch_to", 4, 0},   {"kmain", 0, 0},
      {"__switch_to", 0, 0},	   {"__switch_to", 4, 0},   {"schedule", 4, 0},
      {"wq_worker_running", 0, 0}, {"work_pending", 12, 0}, {"handler", 0, 0}},
     NULL,
     /* task 0 traps and switches; task 1 (new, landing on work_pending's
      * sret) traps too, its signal frame set up before it switches to
      * task 2 (kmain). Both sleep at schedule+4 on the same kernel frames:
      * the guess takes task 0, parked first; the sret lands on handler's
      * entry, which only task 1's stay (its delivery) fits: swapped in,
      * not counted a misfit. The three records run before the swap stay
      * with task 0 */
     {"? [task 0];sigmain 2", "? [task 0];sigmain;[trap: ecall];work_pending 3",
      "? [task 0];sigmain;[trap: ecall];work_pending;schedule 2",
      "? [task 0];sigmain;[trap: ecall];work_pending;schedule;__switch_to 2",
      "? [task 0];sigmain;[trap: ecall];work_pending;wq_worker_running 1", "? [task 1];sigmain 2",
      "? [task 1];sigmain;[trap: ecall];handler 1",
      "? [task 1];sigmain;[trap: ecall];work_pending 3",
      "? [task 1];sigmain;[trap: ecall];work_pending;schedule 1",
      "? [task 1];sigmain;[trap: ecall];work_pending;schedule;__switch_to 2",
      "? [task 1];sigmain;[trap: ecall];work_pending;signal_setup_done 1",
      "? [task 1];work_pending 1", "? [task 2];kmain 1", "? [task 2];kmain;__switch_to 2"},
     .kernel = 1,
     .pconly = 1,
     .calls = 6,
     .returns = 5,
     .tail_calls = 1,
     .traps = 2,
     .trap_returns = 2,
     .switch_new_tasks = 2,
     .switch_resumes = 1,
     .switches = 3,
     .user_fixes = 1},
    {"a guessed resume undone keeps the signal work the task parked with",
     {{"sigmain", 4, 0},
      {"work_pending", 0, 0},
      {"work_pending", 4, 0},
      {"signal_setup_done", 0, 0},
      {"work_pending", 8, 0},
      {"schedule", 0, 0},
      {"__switch_to", 0, 0},
      {"__switch_to", 4, 0},
      {"work_pending", 12, 0},
      {"sigmain", 4, 0},
      {"work_pending", 0, 0},
      {"work_pending", 8, 0},
      {"schedule", 0, 0},
      {"__switch_to", 0, 0},
      {"__switch_to", 4, 0},
      {"kmain", 0, 0},
      {"__switch_to", 0, 0},
      {"__switch_to", 4, 0},
      {"schedule", 4, 0},
      {"wq_worker_running", 0, 0},
      {"work_pending", 12, 0},
      {"sigmain", 8, 0},
      {"work_pending", 0, 0},
      {"work_pending", 8, 0},
      {"schedule", 0, 0},
      {"__switch_to", 0, 0},
      {"__switch_to", 4, 0},
      {"schedule", 4, 0},
      {"wq_worker_running", 0, 0},
      {"work_pending", 12, 0},
      {"handler", 0, 0}},
     NULL,
     /* task 0 parks with its signal frame set up, task 1 without; task 2
      * switches back and the guess takes task 0, parked first; the sret
      * lands after task 1's ecall: swapped in, and task 0 parks again with
      * its delivery, so when it resumes for real (task 1 preempted at
      * sigmain+8) its sret enters the handler above its own ecall */
     {"? [task 0];sigmain 1", "? [task 0];sigmain;[trap: ecall];handler 1",
      "? [task 0];sigmain;[trap: ecall];work_pending 5",
      "? [task 0];sigmain;[trap: ecall];work_pending;schedule 3",
      "? [task 0];sigmain;[trap: ecall];work_pending;schedule;__switch_to 2",
      "? [task 0];sigmain;[trap: ecall];work_pending;signal_setup_done 1",
      "? [task 0];sigmain;[trap: ecall];work_pending;wq_worker_running 2", "? [task 1];sigmain 2",
      "? [task 1];sigmain;[trap: ecall];work_pending 2",
      "? [task 1];sigmain;[trap: ecall];work_pending;schedule 1",
      "? [task 1];sigmain;[trap: ecall];work_pending;schedule;__switch_to 2",
      "? [task 1];sigmain;[trap];work_pending 2",
      "? [task 1];sigmain;[trap];work_pending;schedule 1",
      "? [task 1];sigmain;[trap];work_pending;schedule;__switch_to 2", "? [task 1];work_pending 1",
      "? [task 2];kmain 1", "? [task 2];kmain;__switch_to 2"},
     .kernel = 1,
     .pconly = 1,
     .calls = 8,
     .returns = 7,
     .tail_calls = 2,
     .traps = 3,
     .trap_returns = 3,
     .switch_new_tasks = 2,
     .switch_resumes = 2,
     .switches = 4,
     .user_fixes = 1},
    {"context switches derived from tp writes",
     {{"kmain", 0, 0}, {"__switch_to", 0, 0}, {"__switch_to", 4, 0}, {"kmain", 4, 0}},
     NULL,
     /* Linux keeps current in tp: the first kernel pointer written names the
      * task the trace starts in, the second switches after its record; the
      * new task starts in the code the old one was in, and its ret lands
      * above where it started */
     {"? [task 0];kmain 1", "? [task 0];kmain;__switch_to 1", "? [task 1];__switch_to 1",
      "? [task 1];kmain 1"},
     .kernel = 1,
     .tp = {0xffffffff81000000ull, 0xffffffff81002000ull},
     .calls = 1,
     .returns = 1,
     .returns_above = 1,
     .switches = 1},
};

int main(void)
{
	OOBTEST_BEGIN("test_recon_tasks");
	recon_rows_run("test_recon_tasks", rows, sizeof(rows) / sizeof(rows[0]));
	return OOBTEST_END();
}
