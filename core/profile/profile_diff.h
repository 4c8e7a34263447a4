/*
 * profile_diff: two profiles compared by normalized shares (docs/DESIGN.md
 * 3.4): an exact profile against a sampled one, or before against after a
 * change. Shared by `oobprof diff` and GET /api/v1/compare.
 *
 * Each side's weight (metric m of that side; sampled profiles keep samples
 * in the instruction fields) is divided by that side's total, so shares sum
 * to 1 on both sides. Functions are matched by name (self and total
 * shares), stacks by their folded path. The summary's error is the total
 * variation distance, sum |a - b| / 2, over function self shares and over
 * stacks. When exactly one side is sampled, each function's difference is
 * checked against the binomial error its n samples allow:
 * |p_s - p_e| <= 3 sqrt(p_e (1 - p_e) / n); when both are, against the
 * difference of two such estimates (pooled p, 1/n_a + 1/n_b).
 *
 * Thread-safe (the profiles are only read).
 */
#ifndef OOB_PROFILE_DIFF_H
#define OOB_PROFILE_DIFF_H

#include <jansson.h>

#include "profile/profile.h"

struct profile_diff_opts {
	enum profile_metric metric_base, metric_other;
	size_t top;	 /* functions in the summary's over/under lists (0: 10) */
	int with_flame;	 /* add "flame": d3-flame-graph's tree with "delta" */
	int with_stacks; /* add "stacks": every stack's shares */
};

/*
 * {"base": {...}, "other": {...}, "summary": {...}, "functions": [...],
 *  "stacks": [...], "flame": {...}}; docs/formats/SAMPLES.md shows the
 * shape. New reference (caller json_decref's it).
 */
json_t *profile_diff_json(const struct profile *base, const struct profile *other,
			  const struct profile_diff_opts *o);

#endif
