/*
 * api_export: GET /api/v1/jobs/{id}/export/{speedscope,perfetto,pprof,folded},
 * a finished job's profile in other tools' formats (core/export/export.h says what
 * each one holds). Query arguments, all optional:
 *
 *   metric        instructions | cycles | calls. Folded: the weight; pprof:
 *                 the default sample type; speedscope samples: the first
 *                 profile; evented exports: the time base (calls means the
 *                 default). Default: cycles for evented exports when the
 *                 trace has them; else instructions (cycles for a trace
 *                 with cycles only), as the folded view.
 *   clock_hz      speedscope, perfetto: cycles per second; times in ns.
 *   min_duration  perfetto: leave out frames shorter than this many ns.
 *   sampled=1     speedscope: the sampled form (no stack events needed).
 *   max_events    speedscope: sampled form above this many stack events
 *                 (default API_EXPORT_SPEEDSCOPE_EVENTS).
 *   annotate=1    folded: _[k] on kernel frames.
 *   download=1    adds Content-Disposition: attachment with a file name.
 *
 * For a job with a Go trace whose clock holds, the perfetto export also
 * carries the Go runtime's tracks (core/export/export.h), on the harts' axis.
 *
 * Where the data comes from. folded, pprof and sampled speedscope are made
 * from the stored result (result.h). The time-keeping exports (evented
 * speedscope, perfetto) replay the stack events the job kept (api_events.h;
 * 409 for a result without them); past RESULT_MAX_EVENTS of them,
 * speedscope falls back to samples and perfetto answers 413.
 *
 * Responses are written to an unlinked temporary file under DATA/tmp and
 * sent from it, so a multi-GB export never sits in memory.
 *
 * Thread-safety: handlers run on any request thread.
 */
#ifndef OOB_API_EXPORT_H
#define OOB_API_EXPORT_H

#include "api_events.h"
#include "api_routes.h"

#define API_EXPORT_SPEEDSCOPE_EVENTS 5000000ull

/* The handler of all four routes; the format is the path's last segment. */
int api_export_get(struct api_ctx *c, struct http_req *r, struct api_req *q);

#endif
