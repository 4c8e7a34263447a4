#include "api_remove.h"

#include <stdint.h>

#include "api_cache.h"
#include "api_json.h"
#include "result.h"
#include "util/oob_log.h"

typedef int (*delete_fn)(struct catalog *, int64_t, int, struct catalog_deleted *,
			 struct oob_err *);

/* The files of what the catalog no longer names: the jobs' result folders
 * and the input's blob. A failure leaves a file behind, never a row without
 * its file, so it is logged and the request still succeeds. */
static void remove_files(struct api_ctx *c, const struct catalog_deleted *d)
{
	struct oob_err e = {0};
	for (size_t i = 0; i < d->njobs; i++) {
		char rel[64];
		result_path(d->jobs[i], RESULT_DIR, rel, sizeof(rel));
		if (store_rmdir(c->store, rel, &e) < 0)
			OOB_WARN("job %lld: result folder left: %s", (long long)d->jobs[i], e.msg);
		api_cache_forget(c->cache, d->jobs[i]);
	}
	if (d->blob_unused && d->blob[0] && store_remove(c->store, d->blob, &e) < 0)
		OOB_WARN("blob %s left: %s", d->blob, e.msg);
}

static int remove_input(struct api_ctx *c, struct http_req *r, struct api_req *q, delete_fn fn,
			const char *what)
{
	struct oob_err e = {0};
	struct catalog_deleted d;
	uint64_t with_jobs = 0;
	if (api_arg_uint("with_jobs", http_req_arg(r, "with_jobs"), 0, 1, &with_jobs, &e) < 0 ||
	    fn(c->cat, q->id, (int)with_jobs, &d, &e) < 0) {
		http_respond_oob_err(r, &e);
		return HTTP_BODY_NONE;
	}
	remove_files(c, &d);
	OOB_INFO("%s %lld deleted (%zu jobs with it; file %s)", what, (long long)q->id, d.njobs,
		 d.blob_unused ? "removed" : "kept: shared");
	json_t *jobs = json_array();
	for (size_t i = 0; i < d.njobs; i++)
		json_array_append_new(jobs, json_integer((json_int_t)d.jobs[i]));
	http_respond_json(r, 200,
			  json_pack("{s:I, s:b, s:o, s:b}", "id", (json_int_t)q->id, "deleted", 1,
				    "jobs_deleted", jobs, "file_removed", d.blob_unused));
	catalog_deleted_clear(&d);
	return HTTP_BODY_NONE;
}

int api_remove_trace(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	return remove_input(c, r, q, catalog_trace_delete, "trace");
}

int api_remove_binary(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	return remove_input(c, r, q, catalog_binary_delete, "binary");
}
