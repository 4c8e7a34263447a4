/*
 * test_recon: the reconstruction's rules, fed records directly through
 * recon_new/start/feed/finish. Each case is a row of pcs (function + offset
 * in tests/fixtures/sym/recon.S, or recon-go.S for the Go rows; instruction
 * bits where the code is in no
 * ELF) and the folded stacks they must give, worked out by hand from the
 * rules (docs/RECONSTRUCTION.md): each record counts one instruction for
 * the stack it runs on, and a call's, return's or trap's target record
 * already runs on the new stack.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oobtest.h"
#include "profile/profile.h"
#include "recon/recon.h"
#include "sym/sym.h"

#define KVEC	  0xffffffff80000000ull /* a trap handler in no ELF */
#define NOP	  0x00000013u
#define SRET	  0x10200073u
#define TRAMP	  0x4000801000ull /* QEMU user mode's sigreturn trampoline: in no ELF */
#define LI_A7_139 0x08b00893u	  /* li a7, 139 (rt_sigreturn) */
#define ECALL	  0x00000073u

#define MAXRECS 32 /* records of a row */

/* One record: function and offset, or an absolute pc (fn NULL) with bits. */
struct rec {
	const char *fn;
	uint64_t off;
	uint32_t bits;
};

struct row {
	const char *name;
	struct rec recs[MAXRECS];
	const char *events;   /* sideband events (JSON Lines), or NULL */
	const char *want[24]; /* folded stacks, sorted */
	int kernel;	      /* give recon-kernel.S's ELF too */
	int go;		      /* recon-go.S's ELF instead of recon.S's */
	int pconly;	      /* the trace has pcs only (no instruction bits) */
	uint64_t tp[MAXRECS]; /* registers: a write of tp (x4) by the record, 0: none */
	uint64_t sp[MAXRECS]; /* a write of sp (x2) by the record, 0: none (3.6) */
	enum recon_nonlocal nl;
	uint64_t calls, returns, tail_calls, repairs_unwind, returns_above, swaps, traps,
	    trap_returns, switch_new_tasks, switch_resumes, longjmps, ambiguous, eh_landings,
	    sp_landings;
	uint64_t switches;	      /* the profile's count of context switches */
	uint64_t undos;		      /* switch_undos */
	uint64_t user_fixes, misfits; /* switch_user_fixes, switch_misfits */
	uint32_t split;		      /* a second batch begins at this record, 0: one batch */
	uint8_t hart[MAXRECS];	      /* the hart each record retired on (a batch per run) */
};

static const struct row rows[] = {
    /* The register regime (RECONSTRUCTION.md 3.6): sp is written where the
     * records say; the stack grows down from 0x8000. */
    {"sp: a longjmp over frames, sp alone",
     {{"jr", 0, 0},
      {"jr", 4, 0},
      {"_setjmp", 0, 0},
      {"_setjmp", 4, 0},
      {"jr", 8, 0},
      {"jr", 12, 0},
      {"jr", 16, 0},
      {"jr", 0, 0},
      {"jr", 12, 0},
      {"jr", 16, 0},
      {"jr", 0, 0},
      {"jr", 12, 0},
      {"jr", 20, 0},
      {"__longjmp", 0, 0},
      {"__longjmp", 4, 0},
      {"jr", 8, 0},
      {"jr", 24, 0}},
     NULL,
     /* __longjmp restores the outer jr's sp (0x8000): the frames entered
      * below it are dead, the tie (the middle jr, entered at 0x8000) too:
      * it is not the top of its segment */
     {"jr 7", "jr;_setjmp 2", "jr;jr 3", "jr;jr;jr 3", "jr;jr;jr;__longjmp 2"},
     .sp = {0x8000, [7] = 0x7fe0, [10] = 0x7fc0, [13] = 0x8000},
     .nl = RECON_NL_SP_ONLY,
     .calls = 4,
     .returns = 2,
     .sp_landings = 1},
    {"sp: a longjmp to a site two live frames took setjmp at",
     {{"jr", 0, 0},
      {"jr", 4, 0},
      {"_setjmp", 0, 0},
      {"_setjmp", 4, 0},
      {"jr", 8, 0},
      {"jr", 12, 0},
      {"jr", 16, 0},
      {"jr", 0, 0},
      {"jr", 4, 0},
      {"_setjmp", 0, 0},
      {"_setjmp", 4, 0},
      {"jr", 8, 0},
      {"jr", 12, 0},
      {"jr", 20, 0},
      {"__longjmp", 0, 0},
      {"__longjmp", 4, 0},
      {"jr", 8, 0},
      {"jr", 24, 0}},
     NULL,
     /* what pc-only traces cannot tell (the row without sp: the innermost
      * is taken, counted ambiguous), sp does, before the setjmp registry:
      * the outer jr's buffer was used */
     {"jr 7", "jr;_setjmp 2", "jr;jr 5", "jr;jr;__longjmp 2", "jr;jr;_setjmp 2"},
     .sp = {0x8000, [7] = 0x7fe0, [14] = 0x8000},
     .calls = 4,
     .returns = 3,
     .sp_landings = 1},
    {"sp: a return past frames (an unwinder's landing), sp alone",
     {{"k", 0, 0}, {"deep", 0, 0}, {"deeper", 0, 0}, {"deeper", 4, 0}, {"k", 4, 0}},
     NULL,
     /* deeper's ret lands in k at k's sp: deep and deeper are dead (no
      * return-address repair) */
     {"k 2", "k;deep 1", "k;deep;deeper 2"},
     .sp = {0x8000, 0x7fe0, [3] = 0x8000},
     .nl = RECON_NL_SP_ONLY,
     .calls = 2,
     .returns = 1,
     .sp_landings = 1},
    {"sp: rt_sigreturn into a frameless leaf (a tie)",
     {{"main", 0, 0},
      {"main", 4, 0},
      {"f", 0, 0},
      {"handler", 0, 0},
      {"handler", 4, 0},
      {NULL, TRAMP, LI_A7_139},
      {NULL, TRAMP + 4, ECALL},
      {"f", 4, 0},
      {"main", 8, 0}},
     NULL,
     /* f never moves sp: its entry sp (0x8000) is the sp rt_sigreturn
      * restores. The ecall that writes sp and lands elsewhere returns from
      * the trap; f, the top of its segment and the landing's function, is
      * live, and its ret is an ordinary return */
     {"main 3", "main;f 2", "main;f;[trap];[sigreturn] 2", "main;f;[trap];handler 2"},
     .sp = {0x8000, [2] = 0x7000, [6] = 0x8000},
     .calls = 1,
     .returns = 2,
     .traps = 1,
     .trap_returns = 1,
     .sp_landings = 1},
    {"sp: siglongjmp out of a handler on an alternate stack, sp alone",
     {{"sigmain", 0, 0},
      {"sigmain", 4, 0},
      {"handler", 0, 0},
      {"handler", 4, 0},
      {"sigmain", 8, 0},
      {"sigmain", 12, 0}},
     NULL,
     /* the handler runs at 0x9000, above the interrupted sp; its ret lands
      * in sigmain at sigmain's sp: the handler's segment has no frame of
      * sigmain, the landing is below its marker */
     {"sigmain 4", "sigmain;[trap: ecall];handler 2"},
     .sp = {0x8000, 0x9000, 0x8000},
     .nl = RECON_NL_SP_ONLY,
     .returns = 1,
     .traps = 1,
     .sp_landings = 1},
    {"calls, returns and a tail call",
     {{"main", 0, 0},
      {"main", 4, 0},
      {"f", 0, 0},
      {"f", 4, 0},
      {"main", 8, 0},
      {"g", 0, 0},
      {"f", 0, 0},
      {"f", 4, 0},
      {"g", 4, 0},
      {"main", 12, 0},
      {"h", 0, 0},
      {"h", 4, 0}},
     NULL,
     /* main's tail call to h replaces main: h keeps main's place */
     {"h 2", "main 4", "main;f 2", "main;g 2", "main;g;f 2"},
     .calls = 3,
     .returns = 3,
     .tail_calls = 1},
    {"a return to a frame deeper in the stack (longjmp)",
     {{"k", 0, 0}, {"deep", 0, 0}, {"deeper", 0, 0}, {"deeper", 4, 0}, {"k", 4, 0}},
     NULL,
     /* deeper's ret lands on k+4, deep's return address: deep and deeper go */
     {"k 2", "k;deep 1", "k;deep;deeper 2"},
     .calls = 2,
     .returns = 1,
     .repairs_unwind = 1},
    {"longjmp to a setjmp frame that is not the innermost of its function",
     {{"jr", 0, 0},
      {"jr", 4, 0},
      {"_setjmp", 0, 0},
      {"_setjmp", 4, 0},
      {"jr", 8, 0},
      {"jr", 12, 0},
      {"jr", 16, 0},
      {"jr", 0, 0},
      {"jr", 12, 0},
      {"jr", 16, 0},
      {"jr", 0, 0},
      {"jr", 12, 0},
      {"jr", 20, 0},
      {"__longjmp", 0, 0},
      {"__longjmp", 4, 0},
      {"jr", 8, 0},
      {"jr", 24, 0}},
     NULL,
     /* only the outermost jr called setjmp: __longjmp's ret to its return
      * site pops the two jr frames above it, not to the innermost jr */
     {"jr 7", "jr;_setjmp 2", "jr;jr 3", "jr;jr;jr 3", "jr;jr;jr;__longjmp 2"},
     .calls = 4,
     .returns = 2,
     .longjmps = 1},
    {"longjmp to a site two live frames took setjmp at",
     {{"jr", 0, 0},
      {"jr", 4, 0},
      {"_setjmp", 0, 0},
      {"_setjmp", 4, 0},
      {"jr", 8, 0},
      {"jr", 12, 0},
      {"jr", 16, 0},
      {"jr", 0, 0},
      {"jr", 4, 0},
      {"_setjmp", 0, 0},
      {"_setjmp", 4, 0},
      {"jr", 8, 0},
      {"jr", 12, 0},
      {"jr", 20, 0},
      {"__longjmp", 0, 0},
      {"__longjmp", 4, 0},
      {"jr", 8, 0},
      {"jr", 24, 0}},
     NULL,
     /* both jr frames called setjmp at jr+4: a pc-only trace cannot tell
      * whose jmp_buf __longjmp used; the innermost is taken and counted */
     {"jr 5", "jr;_setjmp 2", "jr;jr 7", "jr;jr;__longjmp 2", "jr;jr;_setjmp 2"},
     .calls = 4,
     .returns = 3,
     .longjmps = 1,
     .ambiguous = 1},
    {"a setjmp site dies with the frame that called setjmp",
     {{"jr", 0, 0},
      {"jr", 12, 0},
      {"jr", 16, 0},
      {"jr", 0, 0},
      {"jr", 4, 0},
      {"_setjmp", 0, 0},
      {"_setjmp", 4, 0},
      {"jr", 8, 0},
      {"jr", 24, 0},
      {"jr", 20, 0},
      {"__longjmp", 0, 0},
      {"__longjmp", 4, 0},
      {"jr", 8, 0}},
     NULL,
     /* the inner jr took setjmp and returned; __longjmp, pushed where that
      * jr was, inherits nothing: its ret to the dead site is the old
      * repair (the innermost frame of jr) */
     {"jr 5", "jr;__longjmp 2", "jr;jr 4", "jr;jr;_setjmp 2"},
     .calls = 3,
     .returns = 3,
     .repairs_unwind = 1},
    {"a signal handler returns through the sigreturn trampoline",
     {{"sigmain", 0, 0},
      {"sigmain", 4, 0},
      {"handler", 0, 0},
      {"handler", 4, 0},
      {NULL, TRAMP, LI_A7_139},
      {NULL, TRAMP + 4, ECALL},
      {"sigmain", 8, 0},
      {"sigmain", 12, 0}},
     NULL,
     /* the handler's ret into code of no ELF gives way to [sigreturn]; its
      * ecall (rt_sigreturn) returns from the trap: nothing nests */
     {"sigmain 4", "sigmain;[trap: ecall];[sigreturn] 2", "sigmain;[trap: ecall];handler 2"},
     .returns = 1,
     .traps = 1,
     .trap_returns = 1},
    {"the sigreturn trampoline, pcs only",
     {{"sigmain", 0, 0},
      {"sigmain", 4, 0},
      {"handler", 0, 0},
      {"handler", 4, 0},
      {NULL, TRAMP, 0},
      {NULL, TRAMP + 4, 0},
      {"sigmain", 8, 0},
      {"sigmain", 12, 0}},
     NULL,
     /* the same without bits for the trampoline (TracerV, -d exec logs) */
     {"sigmain 4", "sigmain;[trap: ecall];[sigreturn] 2", "sigmain;[trap: ecall];handler 2"},
     .pconly = 1,
     .returns = 1,
     .traps = 1,
     .trap_returns = 1},
    {"a signal in a full-system trace: delivered at a system call's return, restarted",
     {{"sigmain", 0, 0},	   {"sigmain", 4, 0},		{"handle_exception", 0, 0},
      {"handle_exception", 20, 0}, {"signal_setup_done", 0, 0}, {"handle_exception", 24, 0},
      {"handler", 0, 0},	   {"handler", 4, 0},		{NULL, TRAMP, LI_A7_139},
      {NULL, TRAMP + 4, ECALL},	   {"handle_exception", 0, 0},	{"handle_exception", 4, 0},
      {"handle_exception", 8, 0},  {"sys_rt_sigreturn", 0, 0},	{"handle_exception", 12, 0},
      {"handle_exception", 16, 0}, {"sigmain", 4, 0},		{"handle_exception", 0, 0},
      {"handle_exception", 4, 0},  {"handle_exception", 28, 0}, {"sigmain", 8, 0},
      {"sigmain", 12, 0}},
     NULL,
     /* the kernel set a signal frame up (signal_setup_done): its sret lands
      * on the handler, above the ecall's marker, not in sigmain's place;
      * rt_sigreturn's sret pops the trampoline's trap and the signal's, and
      * lands on the ecall again (the system call restarts): a plain one */
     {"? [task 0];sigmain 5", "? [task 0];sigmain;[trap: ecall];[sigreturn] 2",
      "? [task 0];sigmain;[trap: ecall];[sigreturn];[trap: ecall];handle_exception 5",
      "? [task 0];sigmain;[trap: ecall];[sigreturn];[trap: ecall];handle_exception;"
      "sys_rt_sigreturn 1",
      "? [task 0];sigmain;[trap: ecall];handle_exception 6",
      "? [task 0];sigmain;[trap: ecall];handle_exception;signal_setup_done 1",
      "? [task 0];sigmain;[trap: ecall];handler 2"},
     .kernel = 1,
     .calls = 2,
     .returns = 3,
     .traps = 3,
     .trap_returns = 3},
    {"a signal in a full-system trace delivered as rt_sigreturn returns",
     {{"sigmain", 0, 0},	   {"sigmain", 4, 0},		{"handle_exception", 0, 0},
      {"handle_exception", 20, 0}, {"signal_setup_done", 0, 0}, {"handle_exception", 24, 0},
      {"handler", 0, 0},	   {"handler", 4, 0},		{NULL, TRAMP, LI_A7_139},
      {NULL, TRAMP + 4, ECALL},	   {"handle_exception", 0, 0},	{"handle_exception", 4, 0},
      {"handle_exception", 8, 0},  {"sys_rt_sigreturn", 0, 0},	{"handle_exception", 12, 0},
      {"handle_exception", 20, 0}, {"signal_setup_done", 0, 0}, {"handle_exception", 24, 0},
      {"handler", 0, 0},	   {"handler", 4, 0},		{NULL, TRAMP, LI_A7_139},
      {NULL, TRAMP + 4, ECALL},	   {"handle_exception", 0, 0},	{"handle_exception", 4, 0},
      {"handle_exception", 8, 0},  {"sys_rt_sigreturn", 0, 0},	{"handle_exception", 12, 0},
      {"handle_exception", 16, 0}, {"sigmain", 8, 0},		{"sigmain", 12, 0}},
     NULL,
     /* the context rt_sigreturn restored is where the first signal came:
      * the second handler runs above the same marker, never nested on the
      * first's trampoline, and its rt_sigreturn returns there */
     {"? [task 0];sigmain 4", "? [task 0];sigmain;[trap: ecall];[sigreturn] 4",
      "? [task 0];sigmain;[trap: ecall];[sigreturn];[trap: ecall];handle_exception 11",
      "? [task 0];sigmain;[trap: ecall];[sigreturn];[trap: ecall];handle_exception;"
      "signal_setup_done 1",
      "? [task 0];sigmain;[trap: ecall];[sigreturn];[trap: ecall];handle_exception;"
      "sys_rt_sigreturn 2",
      "? [task 0];sigmain;[trap: ecall];handle_exception 3",
      "? [task 0];sigmain;[trap: ecall];handle_exception;signal_setup_done 1",
      "? [task 0];sigmain;[trap: ecall];handler 4"},
     .kernel = 1,
     .calls = 4,
     .returns = 6,
     .traps = 3,
     .trap_returns = 3},
    {"a handler's callee returns into the sigreturn trampoline",
     {{"sigmain", 0, 0},
      {"sigmain", 4, 0},
      {"g", 0, 0},
      {"f", 0, 0},
      {"f", 4, 0},
      {NULL, TRAMP, LI_A7_139},
      {NULL, TRAMP + 4, ECALL},
      {"sigmain", 8, 0},
      {"sigmain", 12, 0}},
     NULL,
     /* f's ret is not to g: whatever runs above the marker when the
      * trampoline is reached gives way to it (Go's handler switches stacks,
      * and not all its frames are seen returning) */
     {"sigmain 4", "sigmain;[trap: ecall];[sigreturn] 2", "sigmain;[trap: ecall];g 1",
      "sigmain;[trap: ecall];g;f 2"},
     .calls = 1,
     .returns = 1,
     .traps = 1,
     .trap_returns = 1},
    {"a signal delivered again as the handler returns",
     {{"sigmain", 0, 0},
      {"sigmain", 4, 0},
      {"handler", 0, 0},
      {"handler", 4, 0},
      {NULL, TRAMP, LI_A7_139},
      {NULL, TRAMP + 4, ECALL},
      {"handler", 0, 0},
      {"handler", 4, 0},
      {NULL, TRAMP, LI_A7_139},
      {NULL, TRAMP + 4, ECALL},
      {"sigmain", 8, 0},
      {"sigmain", 12, 0}},
     NULL,
     /* rt_sigreturn lands on the handler's entry, not after the ecall: the
      * first delivery ends and a second one starts where it came from */
     {"sigmain 4", "sigmain;[trap: ecall];[sigreturn] 2", "sigmain;[trap: ecall];handler 2",
      "sigmain;[trap];[sigreturn] 2", "sigmain;[trap];handler 2"},
     .returns = 2,
     .traps = 2,
     .trap_returns = 2},
    {"pthread_exit runs each cleanup in the frame that registered it",
     {{"cu", 0, 0},
      {"cu", 4, 0},
      {"_setjmp", 0, 0},
      {"_setjmp", 4, 0},
      {"cu", 8, 0},
      {"cu", 12, 0},
      {"cu", 16, 0},
      {"cu", 0, 0},
      {"cu", 4, 0},
      {"_setjmp", 0, 0},
      {"_setjmp", 4, 0},
      {"cu", 8, 0},
      {"cu", 12, 0},
      {"cu", 20, 0},
      {"_Unwind_ForcedUnwind", 0, 0},
      {"__longjmp", 0, 0},
      {"__longjmp", 4, 0},
      {"cu", 8, 0},
      {"cu", 24, 0},
      {"__pthread_unwind_next", 0, 0},
      {"_Unwind_ForcedUnwind", 0, 0},
      {"__longjmp", 0, 0},
      {"__longjmp", 4, 0},
      {"cu", 8, 0}},
     NULL,
     /* both cu frames registered at cu+4: a forced unwind lands at the
      * innermost (glibc's buffers are LIFO: not ambiguous); calling
      * __pthread_unwind_next uses that buffer up, so the next landing is
      * the outer cu */
     {"cu 6", "cu;_setjmp 2", "cu;cu 7", "cu;cu;_Unwind_ForcedUnwind 2",
      "cu;cu;_Unwind_ForcedUnwind;__longjmp 4", "cu;cu;__pthread_unwind_next 1", "cu;cu;_setjmp 2"},
     .calls = 7,
     .returns = 4,
     .tail_calls = 1,
     .longjmps = 2},
    {"a C++ exception lands in the frame phase 2 walked to",
     {{"ex", 0, 0},
      {"ex", 4, 0},
      {"ex", 0, 0},
      {"ex", 4, 0},
      {"ex", 0, 0},
      {"ex", 8, 0},
      {"_Unwind_RaiseException", 0, 0},
      {"p2", 0, 0},
      {"uwfs", 0, 0},
      {"_Unwind_Find_FDE", 0, 0},
      {"_Unwind_Find_FDE", 4, 0},
      {"uwfs", 4, 0},
      {"p2", 4, 0},
      {"uwfs", 0, 0},
      {"_Unwind_Find_FDE", 0, 0},
      {"_Unwind_Find_FDE", 4, 0},
      {"uwfs", 4, 0},
      {"p2", 8, 0},
      {"_Unwind_RaiseException", 4, 0},
      {"ex", 12, 0},
      {"ex", 16, 0}},
     NULL,
     /* phase 2 walked two frames (the throwing ex, then its caller): the
      * pad at ex+12 is the middle ex's, although the innermost frame's
      * call to the unwinder returns there too */
     {"ex 2", "ex;ex 4", "ex;ex;ex 2", "ex;ex;ex;_Unwind_RaiseException 2",
      "ex;ex;ex;_Unwind_RaiseException;p2 3", "ex;ex;ex;_Unwind_RaiseException;p2;uwfs 4",
      "ex;ex;ex;_Unwind_RaiseException;p2;uwfs;_Unwind_Find_FDE 4"},
     .calls = 8,
     .returns = 6,
     .eh_landings = 1},
    {"a return above where the trace started",
     {{"f", 0, 0}, {"f", 4, 0}, {"main", 8, 0}},
     NULL,
     /* f was never seen called: main becomes the bottom */
     {"f 2", "main 1"},
     .returns = 1,
     .returns_above = 1},
    {"a swap (coroutine switch) and the return through it",
     {{"sw", 0, 0}, {"co", 0, 0}, {"co", 4, 0}, {"sw", 4, 0}, {"sw", 8, 0}},
     NULL,
     /* the swap pops sw and pushes co returning to sw+4; co's ret pops it,
      * and sw, whose entry is gone, becomes the bottom again */
     {"co 2", "sw 3"},
     .swaps = 1,
     .returns = 1},
    {"ecall, a handler in no ELF, sret back",
     {{"u", 0, 0},
      {"u", 4, 0},
      {NULL, KVEC, NOP},
      {NULL, KVEC + 4, SRET},
      {"u", 8, 0},
      {"u", 12, 0}},
     NULL,
     {"u 4", "u;[trap: ecall];0xffffffff80000000 2"},
     .traps = 1,
     .trap_returns = 1},
    {"an interrupt before a callee's first instruction",
     {{"main", 0, 0},
      {"main", 4, 0},
      {NULL, KVEC, NOP},
      {NULL, KVEC + 4, SRET},
      {"f", 0, 0},
      {"f", 4, 0},
      {"main", 8, 0}},
     NULL,
     /* the call did not complete: its marker keeps the return address,
      * and the trap return to f's entry completes it */
     {"main 3", "main;[trap];0xffffffff80000000 2", "main;f 2"},
     .calls = 1,
     .returns = 1,
     .traps = 1,
     .trap_returns = 1},
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
    {"Go: mcall parks, gogo starts a goroutine and resumes the one parked",
     {{"ga", 0, 0},
      {"gopark", 0, 0},
      {"runtime.mcall", 0, 0},
      {"runtime.mcall", 4, 0},
      {"park_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
      {"gb", 0, 0},
      {"gb", 4, 0},
      {"gopark", 0, 0},
      {"runtime.mcall", 0, 0},
      {"runtime.mcall", 4, 0},
      {"park_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
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
      {"runtime.mcall", 0, 0},
      {"runtime.mcall", 4, 0},
      {"park_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
      {"gd", 0, 0},
      {"gowait", 0, 0},
      {"runtime.mcall", 0, 0},
      {"runtime.mcall", 4, 0},
      {"park_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
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
      {"runtime.mcall", 0, 0},
      {"runtime.mcall", 4, 0},
      {"park_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
      {"runtime.sigtramp", 0, 0},
      {"runtime.sigtramp", 4, 0},
      {NULL, TRAMP, LI_A7_139},
      {NULL, TRAMP + 4, ECALL},
      {"runtime.asyncPreempt", 0, 0},
      {"runtime.asyncPreempt2", 0, 0},
      {"runtime.mcall", 0, 0},
      {"runtime.mcall", 4, 0},
      {"park_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
      {"gowait", 4, 0},
      {"runtime.mcall", 0, 0},
      {"runtime.mcall", 4, 0},
      {"park_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
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
      {"runtime.sigtramp", 0, 0},
      {"runtime.sigtramp", 4, 0},
      {NULL, TRAMP, LI_A7_139},
      {NULL, TRAMP + 4, ECALL},
      {"runtime.asyncPreempt", 0, 0},
      {"runtime.asyncPreempt2", 0, 0},
      {"runtime.mcall", 0, 0},
      {"runtime.mcall", 4, 0},
      {"park_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
      {"gx", 0, 0},
      {"leaf", 0, 0},
      {"gx", 4, 0},
      {"runtime.sigtramp", 0, 0},
      {"runtime.sigtramp", 4, 0},
      {NULL, TRAMP, LI_A7_139},
      {NULL, TRAMP + 4, ECALL},
      {"runtime.asyncPreempt", 0, 0},
      {"runtime.asyncPreempt2", 0, 0},
      {"runtime.mcall", 0, 0},
      {"runtime.mcall", 4, 0},
      {"park_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
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
      {"runtime.mcall", 0, 0},
      {"runtime.mcall", 4, 0},
      {"park_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
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
      {"runtime.mcall", 0, 0},
      {"runtime.mcall", 4, 0},
      {"park_m", 0, 0},
      {"gogo", 0, 0},
      {"gogo", 4, 0},
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
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The profile's folded stacks, sorted, in lines[] (n of them); 0 or -1. */
static int folded(const struct profile *p, char **buf, char *lines[], size_t cap, size_t *n)
{
	size_t len;
	FILE *f = open_memstream(buf, &len);
	if (!f || profile_write_folded(p, f, PROFILE_INSNS, 0) < 0)
		return -1;
	fclose(f);
	*n = 0;
	for (char *save = NULL, *l = strtok_r(*buf, "\n", &save); l && *n < cap;
	     l = strtok_r(NULL, "\n", &save))
		lines[(*n)++] = l;
	qsort(lines, *n, sizeof(*lines), cmp_str);
	return 0;
}

static const char *elf, *kelf, *gelf;
static const struct row *cur;

/* The address of function fn in the ELFs of the row, or 0. */
static uint64_t func_at(struct sym_binary *const *bins, size_t n, const char *fn)
{
	for (size_t k = 0; k < n; k++) {
		uint64_t a = sym_binary_find_func(bins[k], fn);
		if (a)
			return a;
	}
	return 0;
}

static void run_row(void)
{
	const struct row *w = cur;
	struct oob_err err = {0};
	struct recon_elf e[2] = {{w->go ? gelf : elf, RECON_BASE_LINK}, {kelf, RECON_BASE_LINK}};
	size_t ne = w->kernel ? 2 : 1;
	struct sym_binary *bins[2] = {NULL, NULL};
	for (size_t k = 0; k < ne; k++)
		bins[k] = e[k].path ? sym_binary_open(e[k].path, &err) : NULL;
	uint64_t pc[MAXRECS];
	uint32_t insn[MAXRECS];
	uint32_t n = 0;
	for (; n < MAXRECS && (w->recs[n].fn || w->recs[n].off); n++) {
		const struct rec *c = &w->recs[n];
		uint64_t at = c->fn ? func_at(bins, ne, c->fn) : 0;
		pc[n] = at + c->off;
		insn[n] = c->bits; /* 0: from the ELF */
		if (c->fn && !at)
			n = 99; /* a function the fixture lacks */
	}
	for (size_t k = 0; k < ne; k++)
		sym_binary_free(bins[k]);
	CHECK(n <= MAXRECS);
	const char *evp = NULL;
	if (w->events) {
		evp = oobtest_out("recon", "events.jsonl");
		FILE *f = fopen(evp, "w");
		CHECK(f);
		fputs(w->events, f);
		fclose(f);
	}
	struct recon_opts o = {.elfs = e, .nelfs = ne, .events_path = evp, .nonlocal = w->nl};
	struct recon *r = recon_new(&o, &err);
	CHECK(r);
	struct trace_extra x[2 * MAXRECS];
	uint32_t nx = 0;
	for (uint32_t k = 0; k < n; k++) { /* sorted by record */
		if (w->sp[k])
			x[nx++] = (struct trace_extra){
			    .idx = k, .kind = TRACE_X_REG, .num = 2, .val = w->sp[k]};
		if (w->tp[k])
			x[nx++] = (struct trace_extra){
			    .idx = k, .kind = TRACE_X_REG, .num = 4, .val = w->tp[k]};
	}
	unsigned fields = (w->pconly ? 0 : TRACE_F_INSN) | (nx ? TRACE_F_REGS : 0);
	CHECK_EQ(recon_start(r, fields, "test", &err), 0);
	/* a batch per run of records of one hart; the records from w->split
	 * on begin another batch */
	for (uint32_t at = 0, xa = 0; at < n;) {
		uint32_t end = at + 1, xe = xa;
		while (end < n && end != w->split && w->hart[end] == w->hart[at])
			end++;
		while (xe < nx && x[xe].idx < end)
			x[xe++].idx -= at;
		struct trace_batch b = {.n = end - at,
					.hart = w->hart[at],
					.pc = pc + at,
					.insn = w->pconly ? NULL : insn + at,
					.x = x + xa,
					.nx = xe - xa};
		CHECK_EQ(recon_feed(r, &b), 0);
		at = end;
		xa = xe;
	}
	struct profile *p = NULL;
	CHECK_EQ(recon_finish(r, &p), 0);
	recon_free(r);
	char *buf = NULL, *lines[32];
	size_t nl = 0;
	int rc = folded(p, &buf, lines, 32, &nl);
	const struct profile_stats *st = profile_stats(p);
	struct profile_stats s = *st;
	uint64_t switches = profile_switches(p);
	profile_free(p);
	if (rc < 0) {
		free(buf);
		CHECK(rc == 0);
	}
	size_t nw = 0;
	while (nw < sizeof(w->want) / sizeof(w->want[0]) && w->want[nw])
		nw++;
	char got[1024] = "";
	for (size_t k = 0; k < nl; k++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", k ? " | " : "",
			 lines[k]);
	int same = nl == nw;
	for (size_t k = 0; same && k < nw; k++)
		same = strcmp(lines[k], w->want[k]) == 0;
	free(buf);
	if (!same)
		CHECK_STR(got, "the stacks of the row");
	CHECK_EQ(s.instructions, n);
	CHECK_EQ(s.calls, w->calls);
	CHECK_EQ(s.returns, w->returns);
	CHECK_EQ(s.tail_calls, w->tail_calls);
	CHECK_EQ(s.repairs_unwind, w->repairs_unwind);
	CHECK_EQ(s.repairs_unknown, 0);
	CHECK_EQ(s.returns_above, w->returns_above);
	CHECK_EQ(s.swaps, w->swaps);
	CHECK_EQ(s.traps, w->traps);
	CHECK_EQ(s.trap_returns, w->trap_returns);
	CHECK_EQ(s.switch_new_tasks, w->switch_new_tasks);
	CHECK_EQ(s.switch_resumes, w->switch_resumes);
	CHECK_EQ(s.longjmps, w->longjmps);
	CHECK_EQ(s.repairs_ambiguous, w->ambiguous);
	CHECK_EQ(s.eh_landings, w->eh_landings);
	CHECK_EQ(s.sp_landings, w->sp_landings);
	CHECK_EQ(switches, w->switches);
	CHECK_EQ(s.switch_undos, w->undos);
	CHECK_EQ(s.switch_user_fixes, w->user_fixes);
	CHECK_EQ(s.switch_misfits, w->misfits);
}

/* The seam refuses what it cannot do, with a message. */
static void test_seam_errors(void)
{
	struct recon_elf e = {elf, RECON_BASE_LINK};
	struct recon_opts o = {.elfs = &e, .nelfs = 1, .tasks = RECON_TASKS_SATP};
	struct oob_err err = {0};
	struct recon *r = recon_new(&o, &err);
	CHECK(r);
	uint64_t pc = 0x10000;
	struct trace_batch b = {.n = 1, .pc = &pc};
	CHECK_EQ(recon_feed(r, &b), -EINVAL); /* not started */
	CHECK_EQ(recon_start(r, TRACE_F_INSN, "test", &err), -EINVAL);
	CHECK(strstr(err.msg, "satp") != NULL);
	recon_free(r);
	struct recon_elf bad = {"/nonexistent/elf", RECON_BASE_LINK};
	o.elfs = &bad;
	CHECK(recon_new(&o, &err) == NULL);
	CHECK(err.code < 0);
}

/* Per-pc counts keep the hart: main calls f and f returns, on hart 0, then
 * on hart 1 the same, and main goes on to call g, which calls f. Every
 * (context, pc) that ran on both harts is a row per hart whose counts are
 * that hart's; main;f was entered once on each hart (2 calls), main;g;f
 * once on hart 1. */
static void test_pcs_per_hart(void)
{
	struct recon_elf e = {elf, RECON_BASE_LINK};
	struct recon_opts o = {.elfs = &e, .nelfs = 1, .pcs = 1};
	struct oob_err err = {0};
	struct sym_binary *bin = sym_binary_open(elf, &err);
	CHECK(bin);
	uint64_t m = sym_binary_find_func(bin, "main"), f = sym_binary_find_func(bin, "f");
	uint64_t g = sym_binary_find_func(bin, "g");
	sym_binary_free(bin);
	CHECK(m && f && g);
	uint64_t pc0[] = {m, m + 4, f, f + 4, m + 8};
	uint64_t pc1[] = {m, m + 4, f, f + 4, m + 8, g, f, f + 4};
	struct recon *r = recon_new(&o, &err);
	CHECK(r);
	CHECK_EQ(recon_start(r, TRACE_F_INSN, "test", &err), 0);
	uint32_t bits[8] = {0}; /* 0: the ELF's */
	struct trace_batch b0 = {.n = 5, .pc = pc0, .insn = bits, .hart = 0};
	struct trace_batch b1 = {.n = 8, .pc = pc1, .insn = bits, .hart = 1};
	CHECK_EQ(recon_feed(r, &b0), 0);
	CHECK_EQ(recon_feed(r, &b1), 0);
	struct profile *p = NULL;
	CHECK_EQ(recon_finish(r, &p), 0);
	recon_free(r);
	/* instructions per hart, and of main;f and main;g;f per hart */
	uint64_t per_hart[2] = {0, 0}, mf[2] = {0, 0}, mgf[2] = {0, 0};
	uint32_t mf_node = 0;
	for (size_t i = 0; i < profile_npcs(p); i++) {
		const struct profile_pc *row = profile_pc(p, i);
		CHECK(row->hart < 2);
		per_hart[row->hart] += row->insns;
		const struct profile_node *n = profile_node(p, row->node);
		if (n->frame == PROFILE_NONE || strcmp(profile_frame(p, n->frame)->name, "f"))
			continue;
		const char *up = profile_frame(p, profile_node(p, n->parent)->frame)->name;
		if (!strcmp(up, "main")) {
			mf[row->hart] += row->insns;
			mf_node = row->node;
		} else if (!strcmp(up, "g")) {
			mgf[row->hart] += row->insns;
		}
		CHECK_EQ(row->insns, 1); /* each pc once per entry */
		if (i)			 /* sorted by (node, site, hart), one row each */
			CHECK(row->node != profile_pc(p, i - 1)->node ||
			      row->site != profile_pc(p, i - 1)->site ||
			      row->hart > profile_pc(p, i - 1)->hart);
	}
	CHECK_EQ(per_hart[0], 5);
	CHECK_EQ(per_hart[1], 8);
	CHECK_EQ(mf[0], 2);
	CHECK_EQ(mf[1], 2);
	CHECK_EQ(mgf[0], 0);
	CHECK_EQ(mgf[1], 2);
	CHECK(mf_node != 0);
	CHECK_EQ(profile_node(p, mf_node)->calls, 2);
	uint64_t hc[2] = {0, 0}, all = 0, nodes = 0;
	for (size_t i = 0; i < profile_nhart_calls(p); i++) {
		const struct profile_hart_calls *c = profile_hart_calls(p, i);
		CHECK(c->hart < 2);
		all += c->calls;
		if (c->node == mf_node)
			hc[c->hart] += c->calls;
	}
	for (uint32_t i = 0; i < profile_nnodes(p); i++)
		nodes += profile_node(p, i)->calls;
	CHECK_EQ(hc[0], 1);
	CHECK_EQ(hc[1], 1);
	CHECK_EQ(all, nodes); /* f twice under main, once under g, g once */
	CHECK_EQ(all, 4);
	profile_free(p);
}

int main(void)
{
	OOBTEST_BEGIN("test_recon");
	elf = oobtest_gen("sym/recon");
	kelf = oobtest_gen("sym/recon-kernel");
	gelf = oobtest_gen("sym/recon-go");
	for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
		cur = &rows[k];
		if (!elf || (rows[k].kernel && !kelf) || (rows[k].go && !gelf)) {
			printf("SKIP: test_recon: %s: no tests/gen/sym/recon%s (gen-sym.sh)\n",
			       rows[k].name,
			       !elf	    ? ""
			       : rows[k].go ? "-go"
					    : "-kernel");
			continue;
		}
		oobtest_run(rows[k].name, run_row);
	}
	if (elf) {
		RUN(test_seam_errors);
		RUN(test_pcs_per_hart);
	}
	return OOBTEST_END();
}
