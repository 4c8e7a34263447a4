/*
 * api_slices: the stack over time of a finished job, as slices (a flame
 * chart under each hart and process lane of the timeline).
 *
 * GET /api/v1/jobs/{id}/slices?from=&to=&min_duration=&hart=&by=hart|process
 *   The slices of core/export/export_slices.h (the rule of the Perfetto
 *   exports) in the window [from, to) of the timeline's axis, each cut to
 *   the window; those shorter than min_duration there are left out and
 *   counted ("hidden": a viewer passes its pixel). by=hart (the default):
 *   one track per hart; by=process: one per (process, hart), the process
 *   being the slice's bottom frame (the timeline's rule). Each slice is
 *   [start, end, depth, frame] with frame an index into "frames".
 *   A window whose replay would go through more than API_SLICES_MAX_EVENTS
 *   stack events (the index's estimate; the whole log without one), or
 *   that holds more than API_SLICES_MAX slices, is 413 saying so: zoom in
 *   or raise min_duration.
 *
 * Thread-safety: any request thread.
 */
#ifndef OOB_API_SLICES_H
#define OOB_API_SLICES_H

#include "api_routes.h"

#define API_SLICES_MAX	      500000
#define API_SLICES_MAX_EVENTS (1u << 24)

int api_jobs_slices(struct api_ctx *c, struct http_req *r, struct api_req *q);

#endif
