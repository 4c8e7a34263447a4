/*
 * recon_impl: the reconstruction's state and the functions its parts share
 * (private to core/recon/):
 *
 *   recon.c        the driver: setup, the batch loop and the hot loop, the
 *                  feed/finish seam, the profile and process list at the end
 *   recon_stack.c  stack operations: weights, push, pop, replace, rebase,
 *                  stack events; the services trackers call (tracker.h)
 *   recon_flow.c   control-flow classification at block ends and
 *                  mismatches: call, return, tail call, trap, xret, jump
 *
 * Invariant kept when symbols are known: the top frame is the function that
 * contains the current pc.
 */
#ifndef OOB_RECON_IMPL_H
#define OOB_RECON_IMPL_H

#include "flow/code.h"
#include "flow/stack.h"
#include "profile/cct.h"
#include "recon/recon.h"
#include "tasks/tracker.h"
#include "trace/trace_split.h"
#include "util/oob_map.h"

#define SEEN_BITS_LOG2 16

struct recon {
	struct tracker_run run; /* first: trackers get &r->run */
	const struct recon_opts *opts;
	struct cct cct;
	struct code_chains chains;
	struct tracker *trk;   /* how tasks are told apart, or NULL */
	struct events *events; /* loaded by recon_new, until the tracker takes them */
	uint64_t vector;       /* trap vector: learned from traps, or the kernel's entry symbol */
	uint64_t mvector;      /* the firmware's (M-mode) trap vector, learned from the kernel's
				  traps into code of no ELF; 0 until seen */
	struct tracker_hart *harts;
	size_t nharts;
	uint32_t max_depth;
	uint32_t unknown_frame;
	uint32_t xi;	 /* extras cursor in run.b */
	uint32_t spx;	 /* extras cursor of recon_sp_sync in run.b */
	int started;	 /* recon_start ran */
	unsigned fields; /* what the trace carries (recon_start) */
	uint64_t seen;	 /* records fed */
	double t0;	 /* when recon_new began (monotonic seconds) */
	/* run.bins are another run's (recon_new_lent) */
	int bins_borrowed;
	/* Direct-mapped filter in front of code_put: readers hand over the bits of
	 * every record, but they rarely change, and a compare is cheaper than a
	 * hash lookup per instruction. */
	struct {
		uint64_t pc;
		uint32_t bits;
		const struct code_space *cs;
	} * seen_bits;
	struct oob_map inl; /* --inline: (node << 32 | chain) -> instructions */
	/* recon_nonlocal.c: the kind of each frame (enum recon_fn_kind) by
	 * frame id, looked up when first entered; the entries of the functions
	 * it knows by name, per binary */
	uint8_t *fkind;
	size_t nfkind;
	struct recon_nlbin *nlbins;
	struct recon_go *go;	 /* recon_go.c: parked goroutines, when a binary is a Go program,
				    and parked contexts (ucontext), from the first switch */
	int ucontext;		 /* a binary calls swapcontext or setcontext */
	struct recon_look *look; /* recon_look.c: the batches read ahead, or NULL */
	uint32_t sigret_frame;	 /* [sigreturn] */
	int sigret_pushed;	 /* a trampoline frame was pushed: block ends check for it */
	/* [signal]: a delivery stacked under another (full-system traces) */
	uint32_t sigstack_frame;
	/* the kernel's vDSO (vdso_start..vdso_end in the kernel ELF), mapped
	 * into a task's user code space where a handler returns into its
	 * trampoline; NULL without */
	struct sym_binary *vdso;
	unsigned vdso_maps;			    /* bases it was mapped at */
	size_t nnlbins;				    /* nlbins: one per binary, and the vDSO's */
	uint64_t par_joined, par_rerun, par_direct; /* recon_par.c: chunks so handled */
	struct recon_chk *chk; /* recon_chunk.c: a chunk run (speculative or a join's
				  re-run), NULL in the sequential run */
	struct recon_pcs *pcs; /* recon_pcs.c: per-pc counts (opts->pcs), or NULL */
	/* recon_py.c: Python frames (opts->pycode): the plan, its next event and
	 * that event's record index on the plan's hart (UINT64_MAX: none, so
	 * the per-block test never holds without a plan) */
	struct pyplan *py;
	size_t py_i;
	uint64_t py_at;
	uint32_t *py_frames; /* frame of each plan name, FRAME_NONE until used */
};

/* recon_py.c: Python frames. load makes the plan (recon_run, before the
 * records); event applies the plan's event at record i (a dispatch: h's
 * record index is r->py_at); leave pops the Python frames on top of h's
 * stack before the eval function's C frame returns. */
int recon_py_load(struct recon *r, const char *const *traces, size_t ntraces, struct oob_err *err);
void recon_py_free(struct recon *r);
void recon_py_event(struct recon *r, struct tracker_hart *h, uint32_t i);
void recon_py_leave(struct recon *r, struct tracker_hart *h);
/* recon_stack.c: pushes an entry that shows as frame shown in the profile
 * and the stack events, inside the top's function (the control-flow rules
 * see the top's frame). */
void recon_push_inside(struct recon *r, struct tracker_hart *h, uint32_t shown);
/* 1 if the entry shows another frame than its own (recon_push_inside) */
static inline int recon_entry_inside(const struct recon *r, const struct stack_entry *e)
{
	return r->cct.v[e->node].frame != e->frame;
}

/* recon_pcs.c: per-pc counts. hit counts records [i, i + k) of the batch,
 * which matched blk from pos, under the hart's top node; sites symbolizes
 * every counted pc (and may intern frames: before profile_build); finish
 * gives the rows and sites to the profile (profile_set_pcs). */
void recon_pcs_init(struct recon *r);
void recon_pcs_free(struct recon *r);
void recon_pcs_hit(struct recon *r, struct tracker_hart *h, struct code_block *blk, uint32_t pos,
		   uint32_t k, uint32_t i);
void recon_pcs_sites(struct recon *r); /* before profile_build: interns frames */
/* Node was entered (a call the profile counts) on hart h. */
void recon_pcs_call(struct recon *r, const struct tracker_hart *h, uint32_t node);
void recon_pcs_finish(struct recon *r, struct profile *p);

/*
 * A chunk's run (recon_chunk.c, RECONSTRUCTION.md 16). A speculative run
 * starts on a stack whose entries up to floor stand for the unknown stack
 * below the chunk's start; every event that reads or changes an entry at or
 * below floor (other than the top's frame and node) "touches" it, and the
 * run then starts its counts over (a snapshot). A join's re-run stops right
 * after the block end at record stop.
 */
struct recon_chk {
	int spec;	/* 1: speculative */
	uint32_t floor; /* spec: the entry of the chunk's first frame */
	int touched;	/* spec: the floor was touched since the snapshot */
	int unsafe;	/* spec: learned code the ELFs do not have: no join */
	uint32_t maxn;	/* spec: deepest stack since the snapshot */
	uint64_t stop;	/* re-run: record to stop at (UINT64_MAX: none) */
	int stopped;	/* re-run: stopped there */
	void (*snapshot)(struct recon *r, struct tracker_hart *h, uint64_t at);
	void (*learned)(struct recon *r, struct code_space *cs, uint64_t pc, uint32_t bits);
};

/* An event reads or changes stack entry idx (and so may depend on the stack
 * below a chunk's start): only a speculative chunk run cares. */
static inline void recon_touch(struct recon *r, int64_t idx)
{
	if (r->chk && idx <= (int64_t)r->chk->floor)
		r->chk->touched = 1;
}

/* What entering a function says beyond a call (recon_nonlocal.c). */
enum recon_fn_kind {
	RECON_FN_PLAIN = 0,
	RECON_FN_SETJMP,	/* setjmp, _setjmp, sigsetjmp, __sigsetjmp */
	RECON_FN_SIGRETURN,	/* a sigreturn trampoline: __restore_rt, __vdso_rt_sigreturn,
				   and [sigreturn] (code of no ELF a handler returned to) */
	RECON_FN_CANCEL_DONE,	/* __pthread_unwind_next, __pthread_unregister_cancel: the
				   caller's cleanup buffer (its setjmp) is used up */
	RECON_FN_FORCED_UNWIND, /* _Unwind_ForcedUnwind: lands at the innermost cleanup */
	RECON_FN_RAISE,		/* _Unwind_RaiseException, _Unwind_Resume: a landing pad
				   follows their phase 2 */
	RECON_FN_FIND_FDE,	/* _Unwind_Find_FDE: one call per frame the unwinder walks */
	RECON_FN_SIG_SETUP,	/* the kernel's signal_setup_done: one signal frame set up */
	RECON_FN_SIG_RETURN,	/* the kernel's sys_rt_sigreturn */
	RECON_FN_SWAPCONTEXT,	/* swapcontext: saves the running context, jumps to another */
	RECON_FN_SETCONTEXT,	/* setcontext: jumps to another context */
	/* Go's runtime (recon_go.c) */
	RECON_FN_GO_MCALL,     /* runtime.mcall: parks the running goroutine */
	RECON_FN_GO_GOGO,      /* runtime.gogo, gogo: its jr t0 lands in another goroutine */
	RECON_FN_GO_MORESTACK, /* runtime.morestack: g0 frames above the goroutine's */
	RECON_FN_GO_PREEMPT,   /* runtime.asyncPreempt: "called" by sigreturn */
	RECON_FN_GO_EXIT,      /* runtime.goexit1: the goroutine is over */
	RECON_FN_GO_SIGTRAMP,  /* runtime.sigtramp: entered only by a signal */
	/* learned, not named: a function that returned into a sigreturn
	 * trampoline (recon_sigreturn_enter) is a signal handler */
	RECON_FN_SIG_HANDLER,
};

/* The code space of pc for the task running on h. */
static inline struct code_space *space_of(struct recon *r, struct tracker_hart *h, uint64_t pc)
{
	return pc >> 63 ? r->run.spaces[0] : h->task->ucs;
}

static inline int priv_rises(const struct recon *r, const struct tracker_hart *h, uint32_t i)
{
	const uint8_t *p = r->run.b->priv;
	if (!p)
		return 0;
	uint8_t before = i ? p[i - 1] : h->priv;
	return p[i] > before;
}

/* 1 if going from block from to nb keeps the top frame (see jump). */
static inline int same_frame(const struct code_block *from, const struct code_block *nb,
			     uint32_t top)
{
	if (nb->func == FRAME_NONE)
		return nb->map == from->map || !nb->map;
	return nb->func == top;
}

/* The firmware's image around its trap vector (OpenSBI: 2 MiB). */
#define RECON_FW_SPAN (2ull << 20)

/* 1 if addr, lower-half code of no ELF, is the firmware's: near the trap
 * vector the kernel's traps revealed, or, where none was seen, in the range
 * QEMU virt and FireSim load it to (when a kernel ran at all). */
static inline int recon_firmware_pc(const struct recon *r, uint64_t addr, int kernel_ran)
{
	if (r->mvector)
		return addr >= (r->mvector & ~(RECON_FW_SPAN - 1)) &&
		       addr < (r->mvector & ~(RECON_FW_SPAN - 1)) + RECON_FW_SPAN;
	return kernel_ran && addr >= 0x80000000ull && addr < 0x80000000ull + RECON_FW_SPAN;
}
/* recon.c, for chunk runs (no tracker, no extras): reconstructs records
 * [s, n) of b, or up to where a join's re-run stops; returns that index.
 * The bits of ahead (NULL: none), records of the same hart after b's in the
 * reader's batch, are learned after b's and before b's records run. */
uint32_t recon_feed_from(struct recon *r, const struct trace_batch *b, uint32_t s,
			 const struct trace_batch *ahead);
/* The hart's state, created if new. */
struct tracker_hart *recon_hart(struct recon *r, unsigned id);
/* recon_new with the error code; *out is set even on failure (free it). */
int recon_open(const struct recon_opts *opts, struct recon **out, struct oob_err *err);
/* recon_new with m's options on the binaries m opened, borrowed (m outlives
 * the run; a chunk's speculative run, on another thread: what runs read of
 * a binary, its function table and image, is read-only), NULL if m lacks
 * some. Opening CPython's ELF again took 50 ms a chunk. */
struct recon *recon_new_lent(const struct recon *m);

/* recon_chunk.c: one chunk of a parallel run (RECONSTRUCTION.md 16). */
struct recon_chunk_code {
	uint64_t pc;
	uint32_t space, bits;
};

struct recon_chunk {
	struct recon_chk chk;  /* first: the speculative run's r->chk */
	uint64_t start, n;     /* records [start, start + n) of one hart */
	struct trace_batch *b; /* copies, their records in the arrays below */
	size_t nb, cap;
	/* the records, kept from chunk to chunk (no page faults on reuse) */
	uint64_t *pcs, *cycles;
	uint32_t *insns;
	uint8_t *privs;
	size_t reccap;
	/* split runs (trace_split.h): the chunk is piece `piece` of sp, decoded
	 * a batch at a time by whoever runs it; start is then provisional */
	const struct trace_split *sp;
	size_t piece;
	struct trace_split_cur cur;
	struct trace_batch cb; /* the cursor's batch */
	int rc;		       /* a decoding error (err) */
	struct oob_err err;
	struct recon *spec; /* the speculative run, once done */
	/* The state at the last snapshot (record p, right after a block end),
	 * UINT64_MAX: none */
	uint64_t p;
	struct stack_entry *snap;
	uint32_t nsnap, snapcap;
	uint64_t blk_start, last_seq, last_cycle, vector, mvector;
	uint32_t nframes; /* frames the speculative run had then */
	uint8_t priv, xret_deferred;
	int sigret_pushed;
	/* code learned since the snapshot (all of it as the ELFs have it) */
	struct recon_chunk_code *code;
	size_t ncode, codecap;
	/* The records with bits that follow the chunk's end in the reader's
	 * batch it ends inside: the sequential run learns a batch's bits before
	 * it runs any of its records, so the chunk's last records run knowing
	 * them too (recon_feed_from) */
	struct trace_batch ahead;
	uint64_t *apcs;
	uint32_t *ainsns;
	size_t acap;
};

/* Copies records [s, e) of b to the chunk's end. */
void recon_chunk_add(struct recon_chunk *c, const struct trace_batch *b, uint32_t s, uint32_t e);
/* Makes the empty chunk c piece k of sp: its records are decoded where
 * the chunk runs; its start is trace_split_first's, which the join checks
 * against the master's count (a chunk numbered wrong is run, not joined).
 * A decoding error ends the chunk's records and sets c->rc and c->err. */
void recon_chunk_set_piece(struct recon_chunk *c, const struct trace_split *sp, size_t k);
/* The speculative run of chunk c with the options and trace of master m
 * (any thread; touches nothing of m but its options). */
void recon_chunk_spec(const struct recon *m, struct recon_chunk *c);
/* Joins chunk c to master m, whose stack is where the chunk starts: re-runs
 * up to the snapshot, and if m's state there is the speculative run's, adds
 * that run's counts and takes its final stack; else runs the chunk itself.
 * Returns 1 when joined, 0 when run sequentially. */
int recon_chunk_join(struct recon *m, struct recon_chunk *c);
/* recon_chunk_clear empties the chunk for the next one (keeping its record
 * arrays); recon_chunk_free frees everything. */
void recon_chunk_clear(struct recon_chunk *c);
void recon_chunk_free(struct recon_chunk *c);

/* recon_par.c: a parallel run of r (started, recon_par_reason NULL) on the
 * opened traces: 0 or a negative errno, like run_merged. */
struct trace_merge;
int recon_par_run(struct recon *r, struct trace_merge *m, unsigned threads, struct oob_err *err);
/* The same with every chunk read and decoded by the thread that runs it
 * (trace_split.h): 0 or a negative errno. */
int recon_par_run_split(struct recon *r, const struct trace_split *sp, unsigned threads,
			struct oob_err *err);
/* Records per chunk (RECON_CHUNK_RECORDS, or OOB_CHUNK_RECORDS for tests). */
unsigned recon_par_chunk_records(void);
/* Records per chunk (OOB_CHUNK_RECORDS overrides, for tests). */
#define RECON_CHUNK_RECORDS (2u << 20)

/* recon_look.c: a sequential run that reads batches ahead of the one it
 * feeds (parked stacks: Go, ucontext). next is trace_merge_next through
 * the ring; the batch it hands out stays valid until its next call. ahead
 * is the k-th batch after the one handed out (any hart), NULL past the
 * batches read (or with l NULL). */
struct recon_look;
struct trace_merge;
struct recon_look *recon_look_new(void);
void recon_look_free(struct recon_look *l);
int recon_look_next(struct recon_look *l, struct trace_merge *m, const struct trace_batch **out,
		    struct oob_err *err);
const struct trace_batch *recon_look_ahead(const struct recon_look *l, size_t k);

/* recon_warn.c: warnings and firmware frames on the finished profile. */
void recon_warn(const struct recon *r, struct profile *p);

/* recon_stack.c */
extern const struct tracker_services recon_services;
void recon_charge(struct recon *r, struct tracker_hart *h, uint64_t now, uint64_t cycle);
void recon_flush(struct recon *r, struct tracker_hart *h, uint32_t i);
/* Pops the stack down to n entries (telling who listens). */
void recon_pop_to(struct recon *r, struct tracker_hart *h, uint32_t n);
/* Pushes frame as a callee of the top; calls counts an observed entry. */
void recon_push(struct recon *r, struct tracker_hart *h, uint32_t frame, uint64_t ret,
		uint32_t marker, int calls);
/* Replaces the top frame (tail call when entered at its entry). */
void recon_replace_top(struct recon *r, struct tracker_hart *h, uint32_t frame, int entered);
void recon_push_root(struct recon *r, struct tracker_hart *h);
/* The bottom frame of a task first seen running the code of block b. */
void recon_push_base(struct recon *r, struct tracker_hart *h, struct code_block *b);
/* Makes the function at nb the new bottom of the top segment, with no entry
 * seen (the trace started inside it, or its caller is unknown). */
void recon_rebase(struct recon *r, struct tracker_hart *h, struct code_block *nb, int unknown);
/* Stack events for the whole stack: RECON_EV_OPEN or RECON_EV_CLOSE. */
void recon_emit_all(struct recon *r, struct tracker_hart *h, uint8_t kind);
/* The hart runs task key from record i on (a context switch). */
void recon_switch_task(struct recon *r, struct tracker_hart *h, uint64_t key, uint32_t i);
uint32_t recon_top_node(const struct tracker_hart *h);
struct code_space *recon_space_new(struct recon *r, struct sym_space *syms);

/* recon_nonlocal.c */
void recon_nonlocal_init(struct recon *r);
void recon_nonlocal_free(struct recon *r);
uint8_t recon_fn_kind_slow(struct recon *r, uint32_t f);
static inline uint8_t recon_fn_kind(struct recon *r, uint32_t f)
{
	return f < r->nfkind && r->fkind[f] != 0xff ? r->fkind[f] : recon_fn_kind_slow(r, f);
}
/* A function of that kind was entered: it is the top of h's stack. */
void recon_nonlocal_entered(struct recon *r, struct tracker_hart *h, uint8_t kind);
/* A return to t matched no return address: if t is the return site of a
 * live setjmp call, pop to the frame that made it (1), else 0. */
int recon_longjmp_land(struct recon *r, struct tracker_hart *h, uint64_t t);

/* A return to nb that no frame expects, from the unwinder: if its phase 2
 * walked to a frame of nb's function, pop to that frame (1), else 0. */
int recon_eh_land(struct recon *r, struct tracker_hart *h, struct code_block *nb);
/* A return to *nb that no frame expects, by a signal handler: if *nb is a
 * sigreturn trampoline, the handler's frame gives way to it (1), else 0.
 * Code of no ELF where the kernel's vDSO would have its trampoline maps the
 * vDSO there: *nb becomes the block of the task's new code space. */
int recon_sigreturn_enter(struct recon *r, struct tracker_hart *h, struct code_block **nb);
/* A return in user code lands on nb, the entry of a function seen handling
 * signals, that no frame returns to: a signal came right after the return,
 * before its target ran (1), else 0. */
int recon_sig_landing(struct recon *r, struct tracker_hart *h, const struct code_block *nb);
/* A call from user code into code of no ELF at *nb: where the entry of one
 * of the vDSO's functions has that page offset, the vDSO is mapped there
 * (as recon_sigreturn_enter does) and *nb becomes its block. */
void recon_vdso_call(struct recon *r, struct tracker_hart *h, struct code_block **nb);
/* Control leaves a sigreturn trampoline for nb: the signal returns (1), else 0. */
int recon_sigreturn_done(struct recon *r, struct tracker_hart *h, struct code_block *nb,
			 uint32_t i);

/* A full-system trace returns to user at nb, and the kernel delivered a
 * signal or ran rt_sigreturn since the task trapped: the handler's entry,
 * or the context the signal interrupted (1); else 0 (recon_resume decides). */
int recon_signal_xret(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i);
/* recon_sp.c: the register regime (RECONSTRUCTION.md 3.6) */
static inline int recon_pc_rules(const struct recon *r)
{
	return r->opts->nonlocal != RECON_NL_SP_ONLY;
}
/* Reads the writes of sp by the records before i into h->sp. */
void recon_sp_sync(struct recon *r, struct tracker_hart *h, uint32_t i);
/* A landing at nb that no return address explains, with h->sp known: pops
 * the frames dead by sp and returns 1 when the frame left on top is one of
 * nb's function, else changes nothing and returns 0. */
int recon_sp_land(struct recon *r, struct tracker_hart *h, const struct code_block *nb);
/* The block ends in an ecall that wrote sp and control went elsewhere
 * (rt_sigreturn): if sp decides where, the trap returns there (1), else 0. */
int recon_sp_sigreturn(struct recon *r, struct tracker_hart *h, const struct code_block *blk,
		       struct code_block *nb, uint32_t i);

/* 1 if the binary mapped at m is a Go program. */
int recon_go_binary(const struct recon *r, const struct sym_mapping *m);
/* The link-time entry of runtime.goexit in bin, 0 if none. */
uint64_t recon_go_goexit(const struct recon *r, const struct sym_binary *bin);

/* recon_go.c: Go's stack switches, and ucontext's */
void recon_go_init(struct recon *r);
void recon_go_free(struct recon *r);
/* runtime.mcall was entered (the top of h's stack): park the goroutine. */
void recon_go_mcall(struct recon *r, struct tracker_hart *h);
/* gogo's jump lands at nb: the goroutine it resumes or starts runs (1), or
 * 0 if that is a plain return (or nothing is known: the rules for returns
 * decide). */
int recon_go_land(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i);
/* A trap came right after gogo's jump (the top): the hart already runs the
 * goroutine gogo switched to, at a pc the trace has not shown yet. The g0
 * frames go (a goroutine that morestack left on g0 is parked first) and a
 * lone gogo frame waits for the landing (recon_go_pending). */
void recon_go_cut(struct recon *r, struct tracker_hart *h);
/* The top is a gogo frame that a cut left and control reached nb without
 * gogo's jump (a trap return, asyncPreempt's jump back): gogo's landing,
 * as recon_go_land; 0 if nothing is known. */
int recon_go_pending(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i);
/* A return to t (or, f not FRAME_NONE: asyncPreempt's jump back to t in
 * frame f) while a resumed goroutine is provisional on h. */
void recon_go_recheck(struct recon *r, struct tracker_hart *h, uint64_t t, uint32_t f);
/* A return to t from the top of h's stack, which may be in the bottom of
 * a goroutine resumed in doubt (recon_go.c): decides the doubt. Unless
 * sure, t may be no return: a t that fits neither bottom says nothing. */
void recon_go_doubt(struct recon *r, struct tracker_hart *h, uint64_t t, int sure);
/* A trap returned to t in another function than h's top: if the trap came
 * right after a return from the top (a signal on the return), that return
 * tells provisional resumes and doubts apart as a return does. */
void recon_go_trap_return(struct recon *r, struct tracker_hart *h, uint64_t t);
/* sigreturn lands on asyncPreempt's entry: the signal's trap marker at
 * marker goes, asyncPreempt runs as if called from where it came. */
void recon_go_asyncpreempt(struct recon *r, struct tracker_hart *h, struct code_block *nb,
			   uint32_t marker);
/* asyncPreempt (the top) jumps to nb: back where the signal came. */
void recon_go_jump(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i);
/* Parks entries [from, to) of h's stack, the goroutine or context h runs. */
void recon_go_park_running(struct recon *r, struct tracker_hart *h, uint32_t from, uint32_t to);
/* h stops running its goroutine or context (a provisional resume ends). */
void recon_go_leave(struct recon *r, struct tracker_hart *h);
/* Restores above base the stack parked at nb's pc that h's stack pointer
 * or next records point to, its top returning to nb (1); 0: none there. */
int recon_go_resume(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i,
		    uint32_t base);

/* recon_ctx.c: ucontext's switches. An indirect jump out of the top lands at nb: when the top is
 * swapcontext or setcontext, the context nb resumes runs (its parked stack, a fresh context's
 * function, or a frame of the running stack) and 1; else 0. */
int recon_ctx_switch(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i);

/* recon_flow.c */
/* Takes a trap at record i into nb: a marker named name (unless the trace
 * names the cause) that keeps pending and pending_ret, then nb's frame. */
void recon_trap(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i,
		const char *name, uint32_t pending, uint64_t pending_ret);
/* Control reached nb by a jump or a fall-through from block from. */
void recon_jump(struct recon *r, struct tracker_hart *h, const struct code_block *from,
		struct code_block *nb, uint32_t i);
/* The hart returns to nb from a trap handler: unwind to where nb belongs. */
void recon_resume(struct recon *r, struct tracker_hart *h, struct code_block *nb, uint32_t i);
/* Straight-line code was left before its end at pos; record i is where
 * control went. Returns the block control is in. */
struct code_block *recon_deviation(struct recon *r, struct tracker_hart *h, struct code_block *blk,
				   uint32_t pos, uint32_t i);
/* The block was executed to its end; record i (block nb) says where control
 * went. Returns the block control is in. */
struct code_block *recon_transition(struct recon *r, struct tracker_hart *h, struct code_block *blk,
				    struct code_block *nb, uint32_t i);

#endif
