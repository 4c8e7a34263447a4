/*
 * waits_json: the documents of the off-CPU waits and of the critical path
 * (waits.h) that the CLI (oobprof offcpu --json, oobprof path) and the API
 * (/jobs/{id}/offcpu, /jobs/{id}/path) both print.
 */
#ifndef OOB_WAITS_JSON_H
#define OOB_WAITS_JSON_H

#include <jansson.h>

#include "profile/profile.h"
#include "recon/evlog.h"
#include "timeline/waits.h"
#include "util/oob_err.h"

/* The waits (of task, or all with WAITS_NONE), oldest first, with their
 * stacks, lengths and wakers, and the counts (new reference). */
json_t *waits_json(const struct waits *w, const struct profile *p, uint32_t task);

/*
 * The critical path of task over [from, to) (new reference in *out): the
 * steps latest first; each running step with the stacks it ran (replayed
 * from log: at most top of them, by weight) and, when it ended in a wake-up,
 * the waker's stack then. Errors of waits_critical_path and evlog_replay.
 */
int waits_path_json(struct evlog *log, const struct waits *w, const struct profile *p,
		    uint32_t task, uint64_t from, uint64_t to, unsigned top, json_t **out,
		    struct oob_err *err);

#endif
