#include "api_compare.h"

#include <string.h>

#include "api_cache.h"
#include "api_events.h"
#include "api_json.h"
#include "profile/profile_diff.h"

/* The job named by query argument key, loaded (release with api_cache_put). */
static struct api_cache_ref *side(struct api_ctx *c, struct http_req *r, const char *key,
				  const struct result **res, struct oob_err *e)
{
	uint64_t id;
	const char *s = http_req_arg(r, key);
	if (!s) {
		oob_err_set(e, -EINVAL, "%s: the id of a finished job is needed", key);
		return NULL;
	}
	if (api_arg_uint(key, s, 1, INT64_MAX, &id, e) < 0)
		return NULL;
	struct catalog_result row;
	return api_job_result(c, (int64_t)id, &row, res, e);
}

static int metric_of(struct http_req *r, enum profile_metric *m, struct oob_err *e)
{
	const char *s = http_req_arg(r, "metric");
	*m = PROFILE_INSNS;
	if (s && profile_metric_parse(s, m) < 0)
		return oob_err_set(e, -EINVAL,
				   "metric \"%.40s\": expected instructions, cycles or calls", s);
	return 0;
}

int api_compare_get(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	(void)q;
	struct oob_err e = {0};
	const struct result *a = NULL, *b = NULL;
	struct profile_diff_opts o = {.with_flame = 1};
	const char *stacks = http_req_arg(r, "stacks");
	o.with_stacks = stacks && strcmp(stacks, "0") != 0;
	struct api_cache_ref *ra = side(c, r, "base", &a, &e);
	struct api_cache_ref *rb = ra ? side(c, r, "other", &b, &e) : NULL;
	uint64_t top = 10;
	if (rb && metric_of(r, &o.metric_base, &e) == 0 &&
	    api_arg_uint("top", http_req_arg(r, "top") ? http_req_arg(r, "top") : "10", 1, 10000,
			 &top, &e) == 0) {
		o.metric_other = o.metric_base;
		o.top = (size_t)top;
		http_respond_json(r, 200,
				  profile_diff_json(result_profile(a), result_profile(b), &o));
	} else {
		http_respond_oob_err(r, &e);
	}
	if (rb)
		api_cache_put(c->cache, rb);
	if (ra)
		api_cache_put(c->cache, ra);
	return HTTP_BODY_NONE;
}
