/*
 * api_remove: DELETE /api/v1/traces/{id} and /api/v1/binaries/{id}. An
 * input a queued or running job uses is refused (409, naming the job); one
 * that finished jobs use is refused too unless ?with_jobs=1, which deletes
 * those jobs and their results with it. The input's file is removed once no
 * other row names it (uploads of equal content share it).
 */
#ifndef OOB_API_REMOVE_H
#define OOB_API_REMOVE_H

#include "api_routes.h"

int api_remove_trace(struct api_ctx *c, struct http_req *r, struct api_req *q);
int api_remove_binary(struct api_ctx *c, struct http_req *r, struct api_req *q);

#endif
