/*
 * export: a profile (and, for the formats that keep time, the stack events
 * of the same reconstruction, evlog.h) written in the formats other tools
 * read. Every export is exact: its totals equal the profile's (`oobprof top`
 * and `oobprof fold` print the same numbers).
 *
 * Time (speedscope with events, both Perfetto formats): the job's time
 * axis, the timeline's (timeline.h), whatever the metric: the trace's
 * cycles when it has them, else the trace's record index (struct
 * recon_event.seq: on one hart its instruction count; on several the
 * merged records, so a frame's duration counts the other harts' records
 * too), absolute, so an event has the same time in every export, in the
 * timeline and in the API's from/to windows.
 *
 * speedscope  speedscope's file format (https://www.speedscope.app/
 *             file-format-schema.json). With events: one evented profile per
 *             hart, every frame opened and closed where the trace did it,
 *             "at" on the job's time axis (unit "none", said in the
 *             profile's name) or in nanoseconds when clock_hz is given.
 *             Without events, or with more than max_events of them, or
 *             when sampled is set: the sampled form, one profile per metric
 *             (the chosen one first), each calling context a sample weighted
 *             by its self count.
 * perfetto    Chrome Trace Event JSON (Perfetto, chrome://tracing, speedscope):
 *             {"traceEvents": [...]}, pid 1, one tid per hart (tid = hart + 1)
 *             named by "M" metadata events, "B"/"E" pairs properly nested per
 *             tid, ts in microseconds printed from integer nanoseconds
 *             (one unit of the time axis = 1 ns without clock_hz).
 *             min_duration (in those ns) drops frames shorter
 *             than it, and so all their callees, keeping multi-GB traces'
 *             exports small. With a Go trace (go): pid 2 "Go runtime",
 *             one tid per P, M and goroutine and one for GC/STW, "X" events
 *             for their state intervals mapped by the clock model (it maps
 *             to the same axis). Needs events. The file name should not end in
 *             .chrome.json: speedscope reads that as a DevTools timeline.
 * perfetto-pb Perfetto's own format (ui.perfetto.dev, trace_processor): a
 *             gzipped protobuf Trace (perfetto/protos/perfetto/trace/), a
 *             stream of TracePackets on one sequence. The same slices as
 *             perfetto, with the same times (ns, same min_duration rule), as
 *             TrackEvent TYPE_SLICE_BEGIN/END. Tracks: each guest process of
 *             the profile (profile_process) is a Perfetto process (its pid,
 *             comm) with one thread (tid = pid), and a hart's frames go on
 *             the thread of the process whose root frame is at the bottom
 *             of the hart's stack; frames outside any process go on a
 *             thread per hart of a process named after the profile.
 *             Processes without a pid, or with one already taken, and the
 *             harts get pids and tids from 2^24 up. Names and categories are
 *             interned; a frame's source file:line is a "source" argument
 *             (debug annotation). Written as events are replayed: memory
 *             stays bounded whatever the trace's length. A thread track
 *             holds its time: a task moving to a hart whose clock is behind
 *             has its slices start no earlier than its last. With a Go
 *             trace: the Go runtime's tracks as a process "Go runtime".
 *             Needs events. Also "perfetto-json" for perfetto, so that the
 *             JSON can be named unambiguously.
 * pprof       gzipped profile.proto (github.com/google/pprof/proto): sample
 *             types instructions, cycles (when the trace has them) and calls,
 *             all "count"; one sample per calling context, locations leaf
 *             first, one location and function per frame; the default sample
 *             type is the chosen metric. Written by a small encoder here,
 *             compressed with zlib.
 * folded      Brendan Gregg's folded stacks, as profile_write_folded: ';' in
 *             names becomes ':', annotate adds _[k] to kernel frames.
 * svg         a flame graph as flamegraph.pl draws it (root at the bottom,
 *             children in name order, frames under 0.1 px and rows past 2048
 *             left out), each frame with its exact total and self weight
 *             (data-t, data-s) and a tooltip; click to zoom. width pixels.
 *
 * Functions are reentrant: different exports may run on different threads.
 */
#ifndef OOB_EXPORT_H
#define OOB_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "recon/evlog.h"
#include "util/oob_err.h"
#include "profile/profile.h"
#include "timeline/timeline_go.h"

enum export_format {
	EXPORT_SPEEDSCOPE = 0,
	EXPORT_PERFETTO,
	EXPORT_PPROF,
	EXPORT_FOLDED,
	EXPORT_SVG,
	EXPORT_PERFETTO_PB
};

struct export_opts {
	enum export_format format;
	/* Weight of folded and sampled exports and the pprof default sample
	 * type; not the time of evented ones (see above). */
	enum profile_metric metric;
	int annotate;	       /* folded: _[k] on kernel frames */
	uint64_t clock_hz;     /* cycles per second: times in ns (needs cycles); 0: none */
	uint64_t min_duration; /* perfetto: drop frames shorter than this (ns) */
	uint64_t max_events;   /* speedscope: sampled form above this; 0: no bound */
	int sampled;	       /* speedscope: the sampled form even with events */
	const char *name;      /* the profile's name (e.g. the trace's); NULL: "oobprof" */
	unsigned width;	       /* svg: pixels (0: 1200) */
	/* perfetto: a Go execution trace of the same run and its clock model,
	 * written as a second process (NULL: none). Without cycles its times
	 * are in records, so the harts' are too (see below). */
	const struct timeline_go *go;
};

/* Parses "speedscope", "perfetto" (or "perfetto-json"), "perfetto-pb", "pprof",
 * "folded", "svg"; -EINVAL otherwise. */
int export_format_parse(const char *s, enum export_format *out);
const char *export_format_name(enum export_format f);
/* MIME type of the output. */
const char *export_content_type(enum export_format f);
/* The file name suffix to use (".speedscope.json", ".trace.json",
 * ".pftrace.gz", ".pb.gz", ".folded.txt", ".svg"). */
const char *export_file_suffix(enum export_format f);
/* 1 if this export would read stack events (evented speedscope, perfetto). */
int export_wants_events(const struct export_opts *o);
/* 1 for both Perfetto formats (JSON and protobuf). */
int export_is_perfetto(enum export_format f);
/* 1 if speedscope would write the sampled form although it was not asked
 * for (more than o->max_events stack events, or a capped log): the caller
 * may say so. */
int export_speedscope_fell_back(const struct evlog *ev, const struct export_opts *o);

/* The checks export_write makes before it writes anything (the format,
 * perfetto without events, clock_hz without cycles): 0, or -EINVAL + err
 * as export_write would fail. Lets a caller refuse before opening its
 * output. */
int export_check(const struct profile *p, const struct evlog *ev, const struct export_opts *o,
		 struct oob_err *err);

/*
 * Writes p (and ev, which may be NULL where the format does not need it) to
 * out. ev must come from the same reconstruction as p: its frame ids are p's.
 * Returns 0; -EINVAL (perfetto without events, clock_hz without cycles, a
 * damaged event log), -EFBIG (perfetto from a capped log), -EIO (writing).
 */
int export_write(const struct profile *p, struct evlog *ev, const struct export_opts *o, FILE *out,
		 struct oob_err *err);

#endif
