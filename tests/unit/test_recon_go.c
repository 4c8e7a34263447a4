/*
 * test_recon_go: the reconstruction's rules for Go: mcall, gogo,
 * goroutines parked at one pc, preemption, morestack, and the joint choice
 * across harts.
 * The rows and how they run: recon_rows.h.
 */
#include "recon_rows.h"

/* mcall parks the running goroutine (or drops a dead one), g0's park_m
 * runs the scheduler, and gogo jumps (its jr t0 is the next record's) */
// clang-format off
#define MCALL_GOGO \
	{"runtime.mcall", 0, 0}, {"runtime.mcall", 4, 0}, {"park_m", 0, 0}, {"gogo", 0, 0}, \
	{"gogo", 4, 0}

/* a signal under QEMU user mode: the handler, its return into the
 * trampoline (in no ELF), whose rt_sigreturn goes where the next record is */
#define SIGNAL \
	{"runtime.sigtramp", 0, 0}, {"runtime.sigtramp", 4, 0}, {NULL, TRAMP, LI_A7_139}, \
	{NULL, TRAMP + 4, ECALL}
// clang-format on

static const struct row rows[] = {
    {"Go: mcall parks, gogo starts a goroutine and resumes the one parked",
     {{"ga", 0, 0},
      {"gopark", 0, 0},
      MCALL_GOGO,
      {"gb", 0, 0},
      {"gb", 4, 0},
      {"gopark", 0, 0},
      MCALL_GOGO,
      {"gopark", 4, 0},
      {"ga", 4, 0},
      {"ga", 8, 0}},
     NULL,
     /* mcall parks ga's goroutine and runs park_m above a bottom mcall;
      * gogo landing on gb's entry starts [goexit][gb]; gb parks at the same
      * pc (gopark+4): the next pcs (ga+4) say it is ga's goroutine that
      * resumes, and its return there settles it */
     {"ga 3", "ga;gopark 2", "runtime.goexit.abi0;gb 2", "runtime.goexit.abi0;gb;gopark 1",
      "runtime.mcall 4", "runtime.mcall;park_m 2", "runtime.mcall;park_m;gogo 4"},
     .go = 1,
     .calls = 9,
     .returns = 3},
    {"Go: goroutines parked at one pc that nothing tells apart are counted",
     {{"gc", 0, 0},
      {"gowait", 0, 0},
      MCALL_GOGO,
      {"gd", 0, 0},
      {"gowait", 0, 0},
      MCALL_GOGO,
      {"gowait", 4, 0},
      {"runtime.mcall", 0, 0},
      {"runtime.mcall", 4, 0}},
     NULL,
     /* gc's and gd's goroutines both wait at gowait+4; the one resumed parks
      * again before any return: the first parked is taken, and counted */
     {"gc 1", "gc;gowait 2", "runtime.goexit.abi0;gd 1", "runtime.goexit.abi0;gd;gowait 1",
      "runtime.mcall 6", "runtime.mcall;park_m 2", "runtime.mcall;park_m;gogo 4"},
     .go = 1,
     .calls = 10,
     .returns = 2,
     .ambiguous = 1},
    {"Go: a signal right after gogo's jump preempts the goroutine it was starting",
     {{"gc", 0, 0},
      {"gowait", 0, 0},
      MCALL_GOGO,
      SIGNAL,
      {"runtime.asyncPreempt", 0, 0},
      {"runtime.asyncPreempt2", 0, 0},
      MCALL_GOGO,
      {"gowait", 4, 0},
      MCALL_GOGO,
      {"runtime.asyncPreempt2", 4, 0},
      {"runtime.asyncPreempt", 4, 0},
      {"gb", 0, 0},
      {"gb", 4, 0}},
     NULL,
     /* gogo's jr retired, its target (gb's entry) did not: the signal came
      * first, so g0's frames are gone and a lone gogo stands for the
      * goroutine under the handler and asyncPreempt; parked with it at
      * asyncPreempt2+4 and resumed after gc's goroutine ran and parked
      * again, asyncPreempt's jump back shows where gogo was going: gb's
      * entry, a new goroutine [goexit][gb], not code above park_m */
     {"gc 1", "gc;gowait 2", "gogo;[trap];[sigreturn] 2", "gogo;[trap];runtime.sigtramp 2",
      "gogo;runtime.asyncPreempt 2", "gogo;runtime.asyncPreempt;runtime.asyncPreempt2 2",
      "runtime.goexit.abi0;gb 2", "runtime.mcall 6", "runtime.mcall;park_m 3",
      "runtime.mcall;park_m;gogo 6"},
     .go = 1,
     .calls = 13,
     .returns = 5,
     .traps = 1,
     .trap_returns = 1},
    {"Go: asyncPreempt's jump back to a return address is the goroutine that returned",
     {{"gx", 0, 0},
      {"leaf", 0, 0},
      SIGNAL,
      {"runtime.asyncPreempt", 0, 0},
      {"runtime.asyncPreempt2", 0, 0},
      MCALL_GOGO,
      {"gx", 0, 0},
      {"leaf", 0, 0},
      {"gx", 4, 0},
      SIGNAL,
      {"runtime.asyncPreempt", 0, 0},
      {"runtime.asyncPreempt2", 0, 0},
      MCALL_GOGO,
      {"runtime.asyncPreempt2", 4, 0},
      {"runtime.asyncPreempt", 4, 0},
      {"gx", 4, 0},
      {"gx", 8, 0}},
     NULL,
     /* the first goroutine is preempted right after leaf's ret (leaf stays
      * under asyncPreempt), the second, started at gx's entry, inside gx
      * after leaf returned; both wait at asyncPreempt2+4. The jump back to
      * gx+4, leaf's return address, is the first one's: the second is in gx
      * too, but a signal right after a return never leaves gx on top */
     {"gx 3", "gx;leaf 1", "gx;leaf;[trap];[sigreturn] 2", "gx;leaf;[trap];runtime.sigtramp 2",
      "gx;leaf;runtime.asyncPreempt 2", "gx;leaf;runtime.asyncPreempt;runtime.asyncPreempt2 2",
      "runtime.goexit.abi0;gx 2", "runtime.goexit.abi0;gx;[trap];[sigreturn] 2",
      "runtime.goexit.abi0;gx;[trap];runtime.sigtramp 2", "runtime.goexit.abi0;gx;leaf 1",
      "runtime.goexit.abi0;gx;runtime.asyncPreempt 1",
      "runtime.goexit.abi0;gx;runtime.asyncPreempt;runtime.asyncPreempt2 1", "runtime.mcall 4",
      "runtime.mcall;park_m 2", "runtime.mcall;park_m;gogo 4"},
     .go = 1,
     .calls = 13,
     .returns = 7,
     .traps = 2,
     .trap_returns = 2},
    {"Go: a goroutine preempted in newstack resumes another one parked at its pc",
     {{"gh", 0, 0},
      {"gg", 0, 0},
      {"runtime.morestack", 0, 0},
      {"runtime.newstack", 0, 0},
      {"gopreempt_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
      {"gi", 0, 0},
      {"gg", 0, 0},
      {"runtime.morestack", 0, 0},
      {"runtime.newstack", 0, 0},
      {"gopreempt_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
      {"gg", 4, 0},
      {"gh", 4, 0}},
     NULL,
     /* gh's and gi's goroutines both wait at gg+4, morestack's return
      * address; gi's gogo comes after the scheduler (gopreempt_m), not
      * straight from newstack, so gi is parked too and the next pcs (gh+4)
      * say gh's goroutine resumes, not gi's */
     {"gh 2", "gh;gg 2", "gh;gg;runtime.morestack 1", "gh;gg;runtime.morestack;runtime.newstack 1",
      "gh;gg;runtime.morestack;runtime.newstack;gopreempt_m 1",
      "gh;gg;runtime.morestack;runtime.newstack;gopreempt_m;gogo 2", "runtime.goexit.abi0;gi 1",
      "runtime.goexit.abi0;gi;gg 1", "runtime.goexit.abi0;gi;gg;runtime.morestack 1",
      "runtime.goexit.abi0;gi;gg;runtime.morestack;runtime.newstack 1",
      "runtime.goexit.abi0;gi;gg;runtime.morestack;runtime.newstack;gopreempt_m 1",
      "runtime.goexit.abi0;gi;gg;runtime.morestack;runtime.newstack;gopreempt_m;gogo 2"},
     .go = 1,
     .calls = 11,
     .returns = 3},
    /* The joint choice across harts (RECONSTRUCTION.md 3.5): hart 0 parks
     * ga's and gb's goroutines at gopark+4; hart 1 resumes one of them at
     * the end of its batch (nothing to tell them apart: ga's, parked
     * first), then hart 0 resumes the other one. Truth: hart 1 runs gb's
     * (it returns to gb+8), hart 0 ga's (ga+4). */
    {"Go: two harts resume goroutines parked at one pc: the next pcs swap them",
     {{"ga", 0, 0},
      {"gopark", 0, 0},
      MCALL_GOGO,
      {"gb", 0, 0},
      {"gb", 4, 0},
      {"gopark", 0, 0},
      {"runtime.mcall", 0, 0},
      {"runtime.mcall", 4, 0},
      {"park_m", 0, 0},
      {"park_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
      {"gopark", 4, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
      {"gopark", 4, 0},
      {"ga", 4, 0},
      {"ga", 8, 0},
      {"gb", 8, 0}},
     NULL,
     /* hart 0's next pcs (ga+4) prefer ga's goroutine, which hart 1 holds
      * on a blind guess with gb's still open: they swap at once, so hart
      * 0's gopark+4 runs on ga's stack */
     {"ga 3", "ga;gopark 2", "park_m 1", "park_m;gogo 2", "runtime.goexit.abi0;gb 3",
      "runtime.goexit.abi0;gb;gopark 2", "runtime.mcall 4", "runtime.mcall;park_m 2",
      "runtime.mcall;park_m;gogo 4"},
     .go = 1,
     .hart = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1},
     .calls = 10,
     .returns = 5},
    {"Go: a goroutine morestack left on another hart's g0 is the one resumed",
     {{"gh", 0, 0},
      {"gg", 0, 0},
      {"runtime.morestack", 0, 0},
      {"runtime.newstack", 0, 0},
      {"gopreempt_m", 0, 0},
      {"gogo", 0, 0},
      {"park_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
      {"gg", 4, 0},
      {"gh", 4, 0}},
     NULL,
     /* hart 0's newstack is preempted and its scheduler finds nothing to
      * run (its M sleeps): hart 1's gogo lands at gg+4, where no goroutine
      * is parked: gh's waits on hart 0, under its g0 frames, which stay
      * there with morestack's at their bottom */
     {"gh 2", "gh;gg 2", "gh;gg;runtime.morestack 1", "gh;gg;runtime.morestack;runtime.newstack 1",
      "gh;gg;runtime.morestack;runtime.newstack;gopreempt_m 1", "park_m 1", "park_m;gogo 2",
      "runtime.morestack;runtime.newstack;gopreempt_m;gogo 1"},
     .go = 1,
     .hart = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1},
     .calls = 6,
     .returns = 2},
    {"Go: two harts resume goroutines parked at one pc: a return swaps them",
     {{"ga", 0, 0},
      {"gopark", 0, 0},
      MCALL_GOGO,
      {"gb", 0, 0},
      {"gb", 4, 0},
      {"gopark", 0, 0},
      {"runtime.mcall", 0, 0},
      {"runtime.mcall", 4, 0},
      {"park_m", 0, 0},
      {"park_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
      {"gopark", 4, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
      {"gopark", 4, 0},
      {"ga", 4, 0},
      {"ga", 8, 0},
      {"gb", 8, 0}},
     NULL,
     /* hart 0's batch ends at its landing too: it takes gb's, the one
      * left parked, provisionally (its gopark+4 runs there), with ga's,
      * held by hart 1, still open; its return to ga+4 fits only ga's, and
      * hart 1 takes gb's, which its return to gb+8 then fits. Before the
      * joint choice hart 0 settled gb's as its only candidate, and both
      * returns were lost (repairs_unknown) */
     {"ga 3", "ga;gopark 1", "park_m 1", "park_m;gogo 2", "runtime.goexit.abi0;gb 3",
      "runtime.goexit.abi0;gb;gopark 3", "runtime.mcall 4", "runtime.mcall;park_m 2",
      "runtime.mcall;park_m;gogo 4"},
     .go = 1,
     .hart = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1},
     .split = 20,
     .calls = 10,
     .returns = 5},
    /* A doubt that outlives a park (RECONSTRUCTION.md 3.5): gm's and gn's
     * goroutines wait at gopark+4, their stacks alike down to gj. The next
     * pcs say gn's resumes (its return to gn+8 comes first in the batch),
     * but that return is the other goroutine's, after a switch: the one
     * resumed returns into gj only, then a signal preempts it (it parks at
     * asyncPreempt2+4) before it returns out of gj. */
    {"Go: a doubt that outlives a park is settled by the next return into it",
     {{"gm", 0, 0},
      {"gj", 0, 0},
      {"gopark", 0, 0},
      MCALL_GOGO,
      {"gn", 0, 0},
      {"gn", 4, 0},
      {"gj", 0, 0},
      {"gopark", 0, 0},
      MCALL_GOGO,
      {"gopark", 4, 0},
      {"gj", 4, 0},
      SIGNAL,
      {"runtime.asyncPreempt", 0, 0},
      {"runtime.asyncPreempt2", 0, 0},
      MCALL_GOGO,
      {"gopark", 4, 0},
      {"gj", 4, 0},
      {"gj", 8, 0},
      {"gn", 8, 0}},
     NULL,
     /* the one resumed first parks with its bottom in doubt, linked to
      * the goroutine still at gopark+4; that one resumes alone, and its
      * return out of gj to gn+8 fits only the other bottom: the bottoms
      * swap, gn's goroutine runs on (gn+8) and gm's is the one parked in
      * asyncPreempt2. Before, that return was lost (repairs_unknown) */
     {"gm 1", "gm;gj 3", "gm;gj;gopark 2", "runtime.goexit.abi0;gn 3",
      "runtime.goexit.abi0;gn;gj 2", "runtime.goexit.abi0;gn;gj;[trap];[sigreturn] 2",
      "runtime.goexit.abi0;gn;gj;[trap];runtime.sigtramp 2", "runtime.goexit.abi0;gn;gj;gopark 2",
      "runtime.goexit.abi0;gn;gj;runtime.asyncPreempt 1",
      "runtime.goexit.abi0;gn;gj;runtime.asyncPreempt;runtime.asyncPreempt2 1", "runtime.mcall 6",
      "runtime.mcall;park_m 3", "runtime.mcall;park_m;gogo 6"},
     .go = 1,
     .calls = 16,
     .returns = 7,
     .traps = 1,
     .trap_returns = 1,
     .ambiguous = 1},
    {"Go: a signal right after a return out of a resumed goroutine's frames decides it",
     {{"ga", 0, 0},
      {"gopark", 0, 0},
      MCALL_GOGO,
      {"gb", 0, 0},
      {"gb", 4, 0},
      {"gopark", 0, 0},
      MCALL_GOGO,
      {"gopark", 4, 0},
      SIGNAL,
      {"gb", 8, 0}},
     NULL,
     /* the batch ends at the landing at gopark+4: ga's goroutine, parked
      * first, resumes on a blind guess; gopark's ret retires, a signal
      * comes before its target, and sigreturn resumes at gb+8: the return
      * the signal came after fits only gb's goroutine, which runs on.
      * Before, gb replaced gopark on ga's stack */
     {"ga 1", "ga;gopark 2", "ga;gopark;[trap];[sigreturn] 2",
      "ga;gopark;[trap];runtime.sigtramp 2", "runtime.goexit.abi0;gb 3",
      "runtime.goexit.abi0;gb;gopark 1", "runtime.mcall 4", "runtime.mcall;park_m 2",
      "runtime.mcall;park_m;gogo 4"},
     .go = 1,
     .split = 16,
     .calls = 9,
     .returns = 3,
     .traps = 1,
     .trap_returns = 1},
    {"Go: asyncPreempt's jump back to a pc it left is not where a cut gogo was going",
     {{"park_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
      SIGNAL,
      {"runtime.asyncPreempt", 0, 0},
      {"runtime.asyncPreempt2", 0, 0},
      MCALL_GOGO,
      {"gx", 0, 0},
      {"leaf", 0, 0},
      {"gx", 4, 0},
      SIGNAL,
      {"runtime.asyncPreempt", 0, 0},
      {"runtime.asyncPreempt2", 0, 0},
      MCALL_GOGO,
      {"runtime.asyncPreempt2", 4, 0},
      {"runtime.asyncPreempt", 4, 0},
      {"gx", 8, 0}},
     NULL,
     /* a signal cuts the first gogo (its goroutine: a lone gogo frame) and
      * preempts gx's goroutine after gx+4; both wait at asyncPreempt2+4 and
      * the lone gogo, parked first, is taken. asyncPreempt's jump back to
      * gx+8 is gx's: a cut gogo went to a goroutine's entry or resume pc,
      * never to a pc asyncPreempt left. Before, the lone gogo fitted any
      * landing and gx ran on with no goexit below it */
     {"gogo;[trap];[sigreturn] 2", "gogo;[trap];runtime.sigtramp 2", "gogo;runtime.asyncPreempt 2",
      "gogo;runtime.asyncPreempt;runtime.asyncPreempt2 2", "park_m 1", "park_m;gogo 2",
      "runtime.goexit.abi0;gx 3", "runtime.goexit.abi0;gx;[trap];[sigreturn] 2",
      "runtime.goexit.abi0;gx;[trap];runtime.sigtramp 2", "runtime.goexit.abi0;gx;leaf 1",
      "runtime.goexit.abi0;gx;runtime.asyncPreempt 1",
      "runtime.goexit.abi0;gx;runtime.asyncPreempt;runtime.asyncPreempt2 1", "runtime.mcall 4",
      "runtime.mcall;park_m 2", "runtime.mcall;park_m;gogo 4"},
     .go = 1,
     .calls = 13,
     .returns = 7,
     .traps = 2,
     .trap_returns = 2},
    {"Go: a goroutine another hart's newstack left is a candidate beside the hart's own",
     {{"gh", 0, 0},
      {"gg", 0, 0},
      {"runtime.morestack", 0, 0},
      {"runtime.newstack", 0, 0},
      {"gopreempt_m", 0, 0},
      {"gogo", 0, 0},
      {"gi", 0, 0},
      {"gg", 0, 0},
      {"runtime.morestack", 0, 0},
      {"runtime.newstack", 0, 0},
      {"gopreempt_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
      {"gg", 4, 0},
      {"gh", 4, 0}},
     NULL,
     /* both harts' newstack are preempted, hart 0's first: gh's goroutine
      * waits in the run queue under hart 0's scheduler. Hart 1's gogo lands
      * at gg+4, where its own gi's goroutine would resume too: both are
      * candidates and the next pcs (gh+4) take gh's (hart 0 keeps its g0
      * frames). Before, a goroutine parked at the landing pc hid the other
      * hart's, and the return to gh+4 was lost */
     {"gh 2", "gh;gg 2", "gh;gg;runtime.morestack 1", "gh;gg;runtime.morestack;runtime.newstack 1",
      "gh;gg;runtime.morestack;runtime.newstack;gopreempt_m 1", "gi 1", "gi;gg 1",
      "gi;gg;runtime.morestack 1", "gi;gg;runtime.morestack;runtime.newstack 1",
      "gi;gg;runtime.morestack;runtime.newstack;gopreempt_m 1",
      "gi;gg;runtime.morestack;runtime.newstack;gopreempt_m;gogo 2",
      "runtime.morestack;runtime.newstack;gopreempt_m;gogo 1"},
     .go = 1,
     .hart = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1},
     .calls = 10,
     .returns = 2},
};

int main(void)
{
	OOBTEST_BEGIN("test_recon_go");
	recon_rows_run("test_recon_go", rows, sizeof(rows) / sizeof(rows[0]));
	return OOBTEST_END();
}
