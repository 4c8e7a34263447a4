/*
 * api_compare: GET /api/v1/compare?base=JOB&other=JOB, two finished jobs
 * (exact or sampled, any kinds) compared by shares with profile_diff: the
 * summary, per function, per stack (stacks=1) and d3-flame-graph's tree
 * with "delta" on each node (the differential flame graph).
 */
#ifndef OOB_API_COMPARE_H
#define OOB_API_COMPARE_H

#include "api_routes.h"

int api_compare_get(struct api_ctx *c, struct http_req *r, struct api_req *q);

#endif
