/*
 * recon: rebuilds exact call stacks from one or more instruction traces and
 * aggregates them into a profile (DESIGN.md 4). Streams the traces: memory
 * grows with the number of distinct stacks and code sites, never with trace
 * length. Thread-safe in the sense that independent runs may proceed in
 * parallel on different threads (the job pool does this).
 */
#ifndef OOB_RECON_H
#define OOB_RECON_H

#include <stddef.h>
#include <stdint.h>

#include "util/oob_err.h"
#include "profile/profile.h"
#include "trace/trace.h"

#define RECON_BASE_LINK UINT64_MAX

struct recon_elf {
	const char *path;
	uint64_t base; /* run-time address of the lowest PT_LOAD, or RECON_BASE_LINK */
};

/*
 * Stack events, for exports that keep time (speedscope evented profiles,
 * Perfetto): every frame opened and closed on a hart's shadow stack, in order,
 * stamped with the hart's instruction index and cycle at that moment. Frames
 * still open at the end of the trace are closed at its last instruction.
 */
enum recon_event_kind { RECON_EV_OPEN = 1, RECON_EV_CLOSE };

struct recon_event {
	uint8_t kind;  /* enum recon_event_kind */
	uint8_t calls; /* an open that the profile counts as a call (an observed entry,
			  not a stack restored at a context switch) */
	uint16_t hart;
	uint32_t frame; /* frame id, the same as in the resulting profile */
	uint32_t depth; /* stack depth of this frame, 1 = bottom */
	uint64_t insn;	/* instructions retired on this hart before the event */
	uint64_t cycle; /* the hart's cycle count then (0 without cycles) */
	uint64_t seq;	/* records read before the event, all harts: the time axis of
			   traces without cycles (the same index goclock aligns to) */
};

typedef void (*recon_event_fn)(void *ctx, const struct recon_event *ev);

/* How tasks are told apart (DESIGN.md 3.3). AUTO: sideband events if given,
 * else derived from the kernel's functions when the trace has registers and
 * a vmlinux is given, else a task per user binary. SATP: each address space
 * (satp value) is a task; needs a trace with register writebacks. */
enum recon_tasks { RECON_TASKS_AUTO = 0, RECON_TASKS_SATP };

/* "auto" or "satp": 0, or -EINVAL. */
int recon_tasks_parse(const char *s, enum recon_tasks *out);
const char *recon_tasks_name(enum recon_tasks t);

/* Which rules decide non-local landings (RECONSTRUCTION.md 3.6). AUTO: the
 * stack pointer where the trace carries its writes, then the pc-only rules
 * (3.5); PC: the pc-only rules alone, sp writes ignored; SP_ONLY: the stack
 * pointer alone (the pc-only rules off: to prove the sp rule decides). */
enum recon_nonlocal { RECON_NL_AUTO = 0, RECON_NL_PC, RECON_NL_SP_ONLY };

/* "auto", "pc" or "sp-only": 0, or -EINVAL. */
int recon_nonlocal_parse(const char *s, enum recon_nonlocal *out);

/* A million frames: deeper than any real stack (8 MiB of 8-byte frames),
 * and a bound on a hostile trace's memory (a pc repeated is a trap each time:
 * 134 M records of one pc nested 6 GB of frames before this limit). */
#define RECON_MAX_DEPTH_DEFAULT (1u << 20)

#define RECON_THREADS_AUTO 0xffffffffu

struct recon_opts {
	struct trace_opts trace; /* format, TracerV layout, growing-file follow */
	const struct recon_elf *elfs;
	size_t nelfs;
	const char *const *perfmaps; /* perf-PID.map files */
	size_t nperfmaps;
	const char *events_path; /* sideband JSON Lines (process events), or NULL */
	enum recon_tasks tasks;
	enum recon_nonlocal nonlocal;
	int inline_frames; /* add DWARF inline frames under their functions */
	/* Python frames (RECONSTRUCTION.md 17): the code map (tests/tools/pycode.py)
	 * of the CPython program the trace ran, or NULL. One hart, sequential. */
	const char *pycode;
	/* Count instructions, cycles and calls per (calling context, pc), with
	 * each pc's source line and inline chain (profile_pcs): for annotated
	 * views and pc-exact exports. Off by default: the counts cost a compare
	 * per code block, and when on a store per instruction. Runs the trace
	 * sequentially (threads ignored). */
	int pcs;
	uint64_t max_insns; /* stop after this many instructions, 0 = all */
	/* Deepest stack kept per task (entries, trap markers included); a push
	 * beyond it is dropped and counted (repairs_depth). 0 = the default. */
	uint32_t max_depth;
	/* Of several traces, the hart of each (NULL: trace_merge_hart of their
	 * paths), for callers whose paths do not carry the names. */
	const uint16_t *harts;

	/* Threads for one trace (RECONSTRUCTION.md 16): 0 or 1 runs it
	 * sequentially; more cut a single-hart, user-mode trace into chunks
	 * reconstructed in parallel with the same result, and run anything else
	 * sequentially (saying why at the info log level). RECON_THREADS_AUTO:
	 * every online core when the workers read their chunks themselves (a
	 * TracerV binary file, trace_split.h), else sequentially (the chunks
	 * one thread copies gain nothing). */
	unsigned threads;

	/* Stack events (NULL: none, and no cost). Called from the running thread. */
	recon_event_fn on_event;
	void *event_ctx;
	/* Each batch before it is reconstructed, with the records read before it
	 * (all harts): the event index (evidx.h) keeps when each record retired. */
	void (*on_batch)(void *ctx, const struct trace_batch *b, uint64_t gseq);
	void *batch_ctx;

	/* Called every few million instructions from the running thread. */
	void (*progress)(void *ctx, uint64_t raw_bytes, uint64_t insns);
	void *progress_ctx;
	/* Polled with the progress calls (a relaxed atomic load, so any thread or
	 * process may set it); non-zero stops the run with -ECANCELED. */
	const _Atomic int *cancel;
};

/*
 * The same, fed batch by batch (tests feed records they made; recon_run is
 * built on these). Not thread-safe; one reconstruction per object.
 *
 * recon_new loads the ELFs and perf maps (and the sideband events) of opts,
 * which must outlive the object; NULL on error (those of sym_binary_open,
 * events_load). recon_start says what the trace carries (TRACE_F_* fields)
 * and its format name (for the stats), and chooses how tasks are told apart:
 * 0, or -EINVAL (--tasks satp without registers, or with events; started
 * twice). recon_feed reconstructs one batch (records in the order they ran,
 * the batches of each hart in order; b is borrowed for the call): 0, or
 * -EINVAL before recon_start or for an empty batch. recon_finish closes
 * every stack and returns the profile in *out (caller frees with
 * profile_free): 0; call it once. recon_free frees (NULL is fine).
 */
struct recon;
struct recon *recon_new(const struct recon_opts *opts, struct oob_err *err);
int recon_start(struct recon *r, unsigned fields, const char *format, struct oob_err *err);
int recon_feed(struct recon *r, const struct trace_batch *b);
int recon_finish(struct recon *r, struct profile **out);
void recon_free(struct recon *r);

/*
 * Reconstructs the traces (one per hart, read in time order, or one
 * interleaved multi-hart trace) and returns the profile in *out (caller
 * frees with profile_free). A single file of stack samples (format
 * detected: uniprof, perf-script, folded, pprof) is read by sample_read
 * instead, with the same ELFs and perf maps (stats.sampled = 1).
 * Errors: those of trace_open/trace_next and sym_binary_open, -ECANCELED.
 */
int recon_run(const struct recon_opts *opts, const char *const *traces, size_t ntraces,
	      struct profile **out, struct oob_err *err);

#endif
