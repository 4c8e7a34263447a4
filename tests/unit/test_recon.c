/*
 * test_recon: the reconstruction's rules within one task: calls, returns
 * and tail calls, the register regime, longjmp, signals, thread exit, C++
 * exceptions, traps.
 * The rows and how they run: recon_rows.h.
 */
#include "recon_rows.h"

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
    {"sp: a landing in code of no symbol, sp alone",
     {{"stripped_caller", 0, 0},
      {"stripped_caller", 8, 0},
      {"deep", 0, 0},
      {"deeper", 0, 0},
      {"deeper", 4, 0},
      {"stripped_caller", 12, 0},
      {"stripped_caller", 16, 0},
      {"stripped_caller", 4, 0}},
     NULL,
     /* deeper's ret lands at +12, in the unnamed function, at the sp its
      * call to deep left: deep (a tie below the top) and deeper are dead,
      * and the live frame entered at +8, in the same binary below the
      * landing, is the landing's (named by its entry: 0x101cc) */
     {"stripped_caller 2", "stripped_caller;0x101cc 3", "stripped_caller;0x101cc;deep 1",
      "stripped_caller;0x101cc;deep;deeper 2"},
     .sp = {0x8000, 0x7ff0, 0x7fe0, [4] = 0x7ff0},
     .nl = RECON_NL_SP_ONLY,
     .calls = 3,
     .returns = 2,
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
    {"a signal right after a return, before its target ran: the handler seen before",
     {{"sigmain", 0, 0},
      {"sigmain", 4, 0},
      {"handler", 0, 0},
      {"handler", 4, 0},
      {NULL, TRAMP, LI_A7_139},
      {NULL, TRAMP + 4, ECALL},
      {"sigmain", 8, 0},
      {"sigmain", 12, 0},
      {"main", 8, 0},
      {"g", 0, 0},
      {"f", 0, 0},
      {"f", 4, 0},
      {"handler", 0, 0},
      {"handler", 4, 0},
      {NULL, TRAMP, LI_A7_139},
      {NULL, TRAMP + 4, ECALL},
      {"g", 4, 0},
      {"main", 12, 0}},
     NULL,
     /* f's ret "lands" on handler's entry, which no frame returns to: not
      * a tail call into it (rule 6 of 3.3, before: the handler's ret then
      * matched nothing and the stack was lost) but a signal that came at
      * g+4, as the handler's first delivery taught; rt_sigreturn lands
      * there and completes f's return */
     {"main 2", "main;g 2", "main;g;f 2", "main;g;f;[trap];[sigreturn] 2",
      "main;g;f;[trap];handler 2", "sigmain 4", "sigmain;[trap: ecall];[sigreturn] 2",
      "sigmain;[trap: ecall];handler 2"},
     .calls = 2,
     .returns = 4,
     .returns_above = 1,
     .traps = 2,
     .trap_returns = 2},
    {"a signal right after a return, before its target ran: the first delivery",
     {{"main", 8, 0},
      {"g", 0, 0},
      {"f", 0, 0},
      {"f", 4, 0},
      {"handler", 0, 0},
      {"handler", 4, 0},
      {NULL, TRAMP, LI_A7_139},
      {NULL, TRAMP + 4, ECALL},
      {"g", 4, 0},
      {"main", 12, 0}},
     NULL,
     /* no handler learned yet: f's ret "lands" on handler's entry, taken
      * for a tail call into it (3.3 rule 6); handler's ret into the
      * trampoline (li a7, 139) shows the signal, and its frame becomes a
      * trap's from there on: rt_sigreturn lands at g+4 as the trap's
      * return (3.5). The handler's own instructions stay under g. */
     {"main 2", "main;g 2", "main;g;[trap];[sigreturn] 2", "main;g;f 2", "main;g;handler 2"},
     .calls = 2,
     .returns = 2,
     .tail_calls = 1, /* counted when f's ret landed, before the trampoline told */
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
};

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
	recon_rows_run("test_recon", rows, sizeof(rows) / sizeof(rows[0]));
	if (elf) {
		RUN(test_seam_errors);
		RUN(test_pcs_per_hart);
	}
	return OOBTEST_END();
}
