/*
 * export_slices: the stack slices of a run, per hart, in time order and
 * nested: the rule both Perfetto writers follow (export_slices.c), and the
 * same slices for one window of the run (the API's /slices, the viewer's
 * flame chart under the timeline), so the three agree.
 *
 * A slice is one contiguous run of a frame at a depth of a hart's stack,
 * from the stack event that opened it to the one that closed it. A slice is
 * kept when it lasts min_ns or more and more than 0; a callee never outlasts
 * its callers, so the kept slices stay nested. Frames still open when the
 * log ends are not written.
 *
 * Not thread-safe: an evlog is replayed.
 */
#ifndef OOB_EXPORT_SLICES_H
#define OOB_EXPORT_SLICES_H

#include <stdint.h>

#include "recon/evidx.h"
#include "recon/evlog.h"
#include "util/oob_err.h"

/* begin() of a frame at its depth on the hart's stack (0: the bottom), end()
 * of the innermost open one. */
struct export_slice_sink {
	void *ctx;
	void (*begin)(void *ctx, unsigned hart, uint32_t depth, uint32_t frame, uint64_t ns);
	void (*end)(void *ctx, unsigned hart, uint32_t frame, uint64_t ns);
};

/*
 * The slices of one window [from, to) of the trace's axis (cycles when
 * cycles is 1, else the global record index; to == 0: the end), each cut to
 * the window: a frame open at from begins there, one open at to ends there.
 * min applies to the part in the window. Only hart's (hart >= 0). With ix
 * (the log's index, on the same axis) the replay starts at the checkpoint
 * before the window and stops at the first event past it; without, the
 * whole log is replayed. *kept counts the slices written, *hidden those
 * that met the window but were shorter than min there.
 */
struct export_slices_window {
	uint64_t from, to, min;
	int hart;
	int cycles;
};
int export_slices_window(struct evlog *ev, struct evidx *ix, uint32_t nframes,
			 const struct export_slices_window *w, const struct export_slice_sink *s,
			 uint64_t *kept, uint64_t *hidden, struct oob_err *err);

#endif
