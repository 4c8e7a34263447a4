/*
 * api_jobs: the job routes. Creating (the request body is a jobspec, see
 * server/jobspec.h), listing, inspecting, cancelling and deleting jobs, and
 * the views of a job's result: flame graph (api_flame.h), folded stacks and
 * the per-function table. Results come from the result files through the
 * shared api_cache. A job without a result answers 409 saying why (queued,
 * running, failed with its message, cancelled). Windowed and per-hart
 * flame graphs are cut from the stack events (api_timeline.h).
 */
#ifndef OOB_API_JOBS_H
#define OOB_API_JOBS_H

#include "api_routes.h"

int api_jobs_create_begin(struct api_ctx *c, struct http_req *r, struct api_req *q);
void api_jobs_create_end(struct api_ctx *c, struct http_req *r, struct api_req *q);
int api_jobs_list(struct api_ctx *c, struct http_req *r, struct api_req *q);
int api_jobs_get(struct api_ctx *c, struct http_req *r, struct api_req *q);
int api_jobs_delete(struct api_ctx *c, struct http_req *r, struct api_req *q);
int api_jobs_flamegraph(struct api_ctx *c, struct http_req *r, struct api_req *q);
int api_jobs_folded(struct api_ctx *c, struct http_req *r, struct api_req *q);
int api_jobs_top(struct api_ctx *c, struct http_req *r, struct api_req *q);
/* GET /api/v1/jobs/{id}/annotate?fn=NAME&view=source|disasm */
int api_jobs_annotate(struct api_ctx *c, struct http_req *r, struct api_req *q);
int api_jobs_processes(struct api_ctx *c, struct http_req *r, struct api_req *q);

#endif
