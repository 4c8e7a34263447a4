/*
 * stacks_at: the exact stack at given record indices of one hart, all of them
 * in one pass over the trace (what a sampler's "# instret N" is checked
 * against: docs/formats/SAMPLES.md). Cutting the trace once per index costs a
 * whole reconstruction each (~4 s on the test boot); this listens to the stack
 * events of one reconstruction (recon.h) and copies the hart's open stack as
 * each asked index goes by.
 *
 * The stack at index k is the stack record k runs on (RECONSTRUCTION.md: a
 * call's, return's or trap's target record already runs on the new stack):
 * the hart's stack after every event stamped k or earlier. Its innermost
 * frame is the function of record k's pc.
 *
 * Memory: the open stack of the hart plus, per index asked, a copy of its
 * stack; nothing grows with the trace.
 *
 * Not thread-safe: one object belongs to one reconstruction.
 */
#ifndef OOB_STACKS_AT_H
#define OOB_STACKS_AT_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "recon/recon.h"
#include "trace/trace.h"
#include "util/oob_err.h"

struct stacks_at_stack {
	uint64_t at;	  /* the hart's record index asked for */
	int found;	  /* 0: the hart has no record at (the trace ended before) */
	uint64_t pc;	  /* record at's pc */
	int priv;	  /* its privilege (0 U, 1 S, 3 M), -1 when the trace has none */
	uint32_t depth;	  /* frames in frames[] */
	uint32_t *frames; /* profile frame ids, innermost first (the outermost: the
			     task's root frame when tasks are told apart) */
};

struct stacks_at;

/*
 * A collector for record indices at[0..n) of hart (any order, repeats
 * allowed; the results keep the order given). NULL and -EINVAL in err for
 * n == 0.
 */
struct stacks_at *stacks_at_new(unsigned hart, const uint64_t *at, size_t n, struct oob_err *err);
void stacks_at_free(struct stacks_at *s);

/* recon_opts.on_event and .on_batch, ctx the collector: feed them both from
 * one reconstruction (recon_new/recon_feed, or recon_run). */
void stacks_at_event(void *ctx, const struct recon_event *ev);
void stacks_at_batch(void *ctx, const struct trace_batch *b, uint64_t gseq);

/* After the reconstruction finished: copies the stacks of the indices still
 * pending (the frames open at the trace's end). Call once. */
void stacks_at_finish(struct stacks_at *s);

/* The results, in the order asked (borrowed: valid until stacks_at_free). */
size_t stacks_at_count(const struct stacks_at *s);
const struct stacks_at_stack *stacks_at_get(const struct stacks_at *s, size_t i);
/* Records of the hart seen. */
uint64_t stacks_at_records(const struct stacks_at *s);

/*
 * The whole pass: reconstructs traces with opts (run sequentially: stack
 * events need it) feeding a collector for at[0..n) of hart. Returns 0 with
 * *out (free with stacks_at_free) and *prof (the profile, for the frame
 * names; profile_free), or the errors of recon_run; -EINVAL when the input is
 * a file of samples (it has no records to index).
 */
int stacks_at_run(const struct recon_opts *opts, const char *const *traces, size_t ntraces,
		  unsigned hart, const uint64_t *at, size_t n, struct stacks_at **out,
		  struct profile **prof, struct oob_err *err);

#endif
