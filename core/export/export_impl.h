/*
 * What the export writers (export_*.c) share. Not a public header.
 */
#ifndef OOB_EXPORT_IMPL_H
#define OOB_EXPORT_IMPL_H

#include <stdint.h>
#include <stdio.h>

#include "recon/evlog.h"
#include "export/export.h"
#include "export/export_slices.h"
#include "profile/profile.h"

/* How an event's stamp becomes an output time: which stamp, the origin, and
 * the conversion to nanoseconds (hz = 0: none). */
struct export_clock {
	int cycles;
	int seq; /* no cycles: the global record index instead of the hart's count */
	uint64_t hz;
};

/* The time axis of p (cycles, else the global record index; absolute, as
 * the timeline's). -EINVAL when clock_hz is given, or o's metric is cycles,
 * but the trace has no cycles. */
int export_clock_init(struct export_clock *c, const struct profile *p, const struct evlog *ev,
		      const struct export_opts *o, struct oob_err *err);
/* The event's time on that axis, in ns when clock_hz is given. */
uint64_t export_clock_time(const struct export_clock *c, const struct recon_event *ev);
/* The same for a time on the trace's axis (cycles, or records when seq). */
uint64_t export_clock_axis(const struct export_clock *c, uint64_t t);

/* Writes s as a JSON string (escaped by jansson; bytes that are not UTF-8
 * become '?'). */
void export_json_str(FILE *f, const char *s);
/* The exporter's name for the file's "exporter" fields. */
const char *export_tool_name(void);

/* 1 if speedscope writes the evented form (events, not sampled, within
 * max_events). */
int export_speedscope_evented(const struct evlog *ev, const struct export_opts *o);
int export_speedscope(const struct profile *p, struct evlog *ev, const struct export_opts *o,
		      FILE *out, struct oob_err *err);
/* The stack slices of ev that last min_ns or more, per hart, in time order
 * and nested (export_slices.c: the rule): begin() of a frame at its depth
 * on the hart's stack (0: the bottom), end() of the innermost open one;
 * times in the export's ns. Returns evlog_replay's result; *kept and
 * *dropped count the frames written and left out. */
int export_slices(struct evlog *ev, uint32_t nframes, const struct export_clock *c, uint64_t min_ns,
		  const struct export_slice_sink *s, uint64_t *kept, uint64_t *dropped,
		  struct oob_err *err);
int export_perfetto(const struct profile *p, struct evlog *ev, const struct export_opts *o,
		    FILE *out, struct oob_err *err);
/* The Go runtime's tracks of go (export_perfetto_go.c), for any writer:
 * thread() starts a track (GC first, then every P, M and goroutine), the
 * slice()s that follow go on it, times in the export's ns, intervals
 * shorter than min_ns left out. Returns the slices. */
struct export_go_sink {
	void *ctx;
	void (*thread)(void *ctx, const char *label);
	void (*slice)(void *ctx, uint64_t start_ns, uint64_t end_ns, const char *name);
};
uint64_t export_go_tracks(const struct export_clock *c, const struct timeline_go *go,
			  uint64_t min_ns, const struct export_go_sink *s);
/* Perfetto JSON: the Go runtime's tracks (pid 2) of go, as ",\n{...}" events;
 * intervals shorter than min_ns are left out. Returns the events written. */
uint64_t export_perfetto_go(FILE *f, const struct export_clock *c, const struct timeline_go *go,
			    uint64_t min_ns);
/* Perfetto's protobuf Trace, gzipped (export_perfetto_pb.c). */
int export_perfetto_pb(const struct profile *p, struct evlog *ev, const struct export_opts *o,
		       FILE *out, struct oob_err *err);
/* pprof; ev (may be NULL) splits the per-context form's samples per hart. */
int export_pprof(const struct profile *p, struct evlog *ev, const struct export_opts *o, FILE *out,
		 struct oob_err *err);
int export_svg(const struct profile *p, const struct export_opts *o, FILE *out,
	       struct oob_err *err);

#endif
