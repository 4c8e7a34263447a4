/*
 * profile_json: the JSON shapes of a profile that more than one program
 * prints or reads (the CLI and the server), so that they cannot drift apart.
 */
#ifndef OOB_PROFILE_JSON_H
#define OOB_PROFILE_JSON_H

#include <jansson.h>

#include "util/oob_err.h"
#include "profile/profile.h"

/* The reconstruction's counters (profile_stats) as a JSON object. */
json_t *profile_stats_json(const struct profile_stats *s);

/*
 * {"processes": [{"pid", "ppid", "comm", "exec": [{"path", "cycle"}],
 *  "start_cycle", "end_cycle", "instructions": {"user", "kernel"},
 *  "cycles": {"user", "kernel"}, "children": [pids]}], "switches": N,
 *  "source": "derived" | null}
 * Returns a new reference.
 */
json_t *profile_processes_json(const struct profile *p);

/*
 * One row of the per-function table (profile_functions):
 * {"name", "binary": s | null, "file": s | null, "line", "addr": "0x<hex>",
 *  "kind", "calls", "self_instructions", "total_instructions", "self_cycles",
 *  "total_cycles", "ipc"}. kind is profile_frame_kind_name; addr is a hex
 * string (a kernel address does not fit a JSON integer); ipc is
 * total_instructions / total_cycles, 0 without cycles. Returns a new reference.
 */
json_t *profile_func_json(const struct profile *p, const struct profile_func *f);

/*
 * The per-function table, as `oobprof top --json` prints it and
 * GET /api/v1/jobs/{id}/top answers: {"metric", "partial", "count",
 * "functions": [profile_func_json of the first limit of v[n]], "stats",
 * "warnings": profile_warnings_json}.
 * v is sorted by m (profile_functions); count is n, the functions in all.
 */
json_t *profile_top_json(const struct profile *p, const struct profile_func *v, size_t n,
			 size_t limit, enum profile_metric m, int partial);

/* Reads that shape back into p (profile_set_processes). An optional
 * "frame" per process (the server's stored results carry it) is its root
 * frame; without it the frame is PROFILE_NONE. -EINVAL naming the first
 * malformed entry; a NULL doc means no processes. */
int profile_processes_from_json(struct profile *p, const json_t *doc, struct oob_err *err);

/* [{"kind", "message"}] of profile_warning. Returns a new reference. */
json_t *profile_warnings_json(const struct profile *p);
/* Reads that shape back into p; NULL (a result stored before warnings
 * existed) means none. -EINVAL for a malformed entry. */
int profile_warnings_from_json(struct profile *p, const json_t *a, struct oob_err *err);

/* The per-pc counts (profile_pcs) as stored with a result, or NULL when p
 * has none:
 *   {"sites": [["0xpc", "0xlink", space, frame|-1, binary|null,
 *               build_id|null, file|null, line,
 *               [[inlined, call_file|null, call_line], ...]], ...],
 *    "rows": [[node, site, insns, cycles, calls], ...]}
 * Returns a new reference. */
json_t *profile_pcs_json(const struct profile *p);
/* Reads that shape back into p (NULL doc: none). -EINVAL naming the first
 * malformed or out-of-range entry. */
int profile_pcs_from_json(struct profile *p, const json_t *doc, struct oob_err *err);

#endif
