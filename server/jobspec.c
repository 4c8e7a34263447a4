#include "jobspec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int bad(struct oob_err *err, const char *what)
{
	return oob_err_set(err, -EINVAL, "job: %s", what);
}

/* A positive integer id. */
static int get_id(const json_t *v, int64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) <= 0)
		return -EINVAL;
	*out = json_integer_value(v);
	return 0;
}

/* The id of a side upload (events, Go trace, code map); null is none. */
static int get_side(const json_t *v, int64_t *out, const char *what, struct oob_err *err)
{
	return json_is_null(v) || get_id(v, out) == 0 ? 0 : bad(err, what);
}

/* An address: a non-negative integer or a "0x..." / decimal string. */
static int get_addr(const json_t *v, uint64_t *out)
{
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v))
		return -EINVAL;
	const char *s = json_string_value(v);
	char *end;
	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return (errno || *end || *out == UINT64_MAX) ? -EINVAL : 0;
}

static int parse_binary(const json_t *v, struct catalog_job_binary *b, size_t i,
			struct oob_err *err)
{
	b->base = UINT64_MAX;
	if (get_id(v, &b->id) == 0)
		return 0;
	const char *key;
	json_t *x;
	if (!json_is_object(v))
		return oob_err_set(err, -EINVAL,
				   "job: binaries[%zu]: expected an id or {\"id\", \"base\"}", i);
	json_object_foreach((json_t *)v, key, x)
	{
		if (!strcmp(key, "id") && get_id(x, &b->id) == 0)
			continue;
		if (!strcmp(key, "base") && (json_is_null(x) || get_addr(x, &b->base) == 0))
			continue;
		return oob_err_set(err, -EINVAL, "job: binaries[%zu]: bad or unknown key \"%s\"", i,
				   key);
	}
	if (b->id <= 0)
		return oob_err_set(err, -EINVAL, "job: binaries[%zu]: \"id\" missing", i);
	return 0;
}

static int parse_traces(const json_t *v, struct jobspec *s, struct oob_err *err)
{
	if (!json_is_array(v) || !json_array_size(v))
		return bad(err, "\"traces\" must be an array of trace ids");
	if (json_array_size(v) > JOBSPEC_MAX_TRACES)
		return oob_err_set(err, -EINVAL, "job: more than %d traces", JOBSPEC_MAX_TRACES);
	s->ntraces = json_array_size(v);
	for (size_t i = 0; i < s->ntraces; i++) {
		if (get_id(json_array_get(v, i), &s->traces[i]) < 0)
			return oob_err_set(err, -EINVAL, "job: traces[%zu] must be a trace id", i);
		for (size_t k = 0; k < i; k++)
			if (s->traces[k] == s->traces[i])
				return oob_err_set(err, -EINVAL, "job: trace %lld given twice",
						   (long long)s->traces[i]);
	}
	return 0;
}

/* "trace": an id, or "traces": an array of ids; not both. */
static int parse_trace_key(const char *key, const json_t *x, struct jobspec *s, struct oob_err *err)
{
	if (s->ntraces)
		return bad(err, "\"trace\" and \"traces\": one of them");
	if (!strcmp(key, "traces"))
		return parse_traces(x, s, err);
	if (get_id(x, &s->traces[0]) < 0)
		return bad(err, "\"trace\" must be a trace id");
	s->ntraces = 1;
	return 0;
}

static int parse_binaries(const json_t *v, struct jobspec *s, struct oob_err *err)
{
	if (!json_is_array(v))
		return bad(err, "\"binaries\" must be an array");
	if (json_array_size(v) > JOBSPEC_MAX_BINARIES)
		return oob_err_set(err, -EINVAL, "job: more than %d binaries",
				   JOBSPEC_MAX_BINARIES);
	s->nbins = json_array_size(v);
	for (size_t i = 0; i < s->nbins; i++) {
		int rc = parse_binary(json_array_get(v, i), &s->bins[i], i, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int get_uint(const json_t *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -EINVAL;
	uint64_t x = (uint64_t)json_integer_value(v);
	if (x < lo || x > hi)
		return -EINVAL;
	*out = x;
	return 0;
}

static int parse_tracerv(const json_t *v, struct trace_tracerv_opts *t, struct oob_err *err)
{
	const char *key;
	json_t *x;
	uint64_t u;
	if (!json_is_object(v))
		return bad(err, "\"options.tracerv\" must be an object");
	json_object_foreach((json_t *)v, key, x)
	{
		if (!strcmp(key, "width") && get_uint(x, 0, 7, &u) == 0)
			t->width = (unsigned)u;
		else if (!strcmp(key, "words") && get_uint(x, 0, 8, &u) == 0 && u != 1)
			t->words = (unsigned)u;
		else if (!strcmp(key, "valid_bit") && get_uint(x, 0, 63, &u) == 0 &&
			 (u == 0 || u == 40 || u == 63))
			t->valid_bit = (unsigned)u;
		else
			return oob_err_set(
			    err, -EINVAL,
			    "job: options.tracerv.%s: bad value or unknown key (width "
			    "0..7, words 2..8, valid_bit 40 or 63; 0 = detect)",
			    key);
	}
	return 0;
}

/* {"hz": trace time units per second, "offset": trace time of Go tick 0} */
static int parse_go_clock(const json_t *v, struct jobspec *s, struct oob_err *err)
{
	json_t *hz = json_object_get(v, "hz"), *off = json_object_get(v, "offset");
	if (!json_is_object(v) || !json_is_number(hz) || !(json_number_value(hz) > 0) ||
	    (off && !json_is_number(off)) || json_object_size(v) != 1u + (off != NULL))
		return bad(err, "options.go_clock: expected {\"hz\": > 0, \"offset\": number}");
	s->have_go_clock = 1;
	s->go_hz = json_number_value(hz);
	s->go_offset = off ? json_number_value(off) : 0;
	return 0;
}

static int parse_option(const char *key, const json_t *x, struct jobspec *s, struct oob_err *err)
{
	uint64_t u;
	if (!strcmp(key, "format")) {
		if (json_is_string(x) &&
		    (!strcmp(json_string_value(x), "auto") ||
		     trace_format_parse(json_string_value(x), &s->format) == 0))
			return 0;
		return bad(err, "options.format: unknown trace format");
	}
	if (!strcmp(key, "metric")) {
		if (json_is_string(x) &&
		    profile_metric_parse(json_string_value(x), &s->metric) == 0)
			return 0;
		return bad(err, "options.metric: expected instructions, cycles or calls");
	}
	if (!strcmp(key, "inline")) {
		if (!json_is_boolean(x))
			return bad(err, "options.inline: expected true or false");
		s->inline_frames = json_is_true(x);
		return 0;
	}
	if (!strcmp(key, "pcs")) {
		if (!json_is_boolean(x))
			return bad(err, "options.pcs: expected true or false");
		s->pcs = json_is_true(x);
		return 0;
	}
	if (!strcmp(key, "tracerv"))
		return parse_tracerv(x, &s->tracerv, err);
	if (!strcmp(key, "hart") && get_uint(x, 0, 65535, &u) == 0) {
		s->hart = (unsigned)u;
		return 0;
	}
	if (!strcmp(key, "go_clock"))
		return parse_go_clock(x, s, err);
	if (!strcmp(key, "tasks")) {
		if (json_is_string(x) && recon_tasks_parse(json_string_value(x), &s->tasks) == 0)
			return 0;
		return bad(err, "options.tasks: expected auto or satp");
	}
	if (!strcmp(key, "max_insns") && get_uint(x, 0, INT64_MAX, &u) == 0) {
		s->max_insns = u;
		return 0;
	}
	if (!strcmp(key, "max_depth")) {
		if (get_uint(x, 1, UINT32_MAX, &u) < 0)
			return bad(err,
				   "options.max_depth: expected an integer from 1 to 4294967295");
		s->max_depth = (uint32_t)u;
		return 0;
	}
	return oob_err_set(err, -EINVAL, "job: options.%s: bad value or unknown option", key);
}

static int parse_options(const json_t *v, struct jobspec *s, struct oob_err *err)
{
	const char *key;
	json_t *x;
	if (!json_is_object(v))
		return bad(err, "\"options\" must be an object");
	json_object_foreach((json_t *)v, key, x)
	{
		int rc = parse_option(key, x, s, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int jobspec_parse(const json_t *j, struct jobspec *s, struct oob_err *err)
{
	const char *key;
	json_t *x;
	int rc = 0;
	memset(s, 0, sizeof(*s));
	if (!json_is_object(j))
		return bad(err, "the body must be a JSON object");
	json_object_foreach((json_t *)j, key, x)
	{
		if (!strcmp(key, "trace") || !strcmp(key, "traces"))
			rc = parse_trace_key(key, x, s, err);
		else if (!strcmp(key, "events"))
			rc = get_side(x, &s->events,
				      "\"events\" must be the id of an events upload", err);
		else if (!strcmp(key, "binaries"))
			rc = parse_binaries(x, s, err);
		else if (!strcmp(key, "options"))
			rc = parse_options(x, s, err);
		else if (!strcmp(key, "go_trace"))
			rc = get_side(x, &s->go_trace,
				      "\"go_trace\" must be the id of a Go trace upload", err);
		else if (!strcmp(key, "pycode"))
			rc = get_side(x, &s->pycode, "\"pycode\" must be the id of a pycode upload",
				      err);
		else
			rc = oob_err_set(err, -EINVAL, "job: unknown key \"%s\"", key);
		if (rc < 0)
			return rc;
	}
	if (!s->ntraces)
		return bad(err, "\"trace\" (a trace id) or \"traces\" is required");
	s->trace = s->traces[0];
	return 0;
}

int jobspec_parse_text(const char *text, size_t n, struct jobspec *out, struct oob_err *err)
{
	json_error_t je;
	json_t *j = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return oob_err_set(err, -EINVAL, "job: bad JSON at line %d column %d: %s", je.line,
				   je.column, je.text);
	int rc = jobspec_parse(j, out, err);
	json_decref(j);
	return rc;
}

void jobspec_recon_opts(const struct jobspec *s, struct recon_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->trace.format = s->format;
	o->trace.tracerv = s->tracerv;
	o->trace.hart = (uint16_t)s->hart;
	o->inline_frames = s->inline_frames;
	o->pcs = s->pcs;
	o->max_insns = s->max_insns;
	o->max_depth = s->max_depth;
	o->tasks = s->tasks;
}

json_t *jobspec_to_json(const struct jobspec *s)
{
	json_t *bins = json_array();
	for (size_t i = 0; i < s->nbins; i++) {
		json_t *base = json_null();
		if (s->bins[i].base != UINT64_MAX) {
			char hex[24];
			snprintf(hex, sizeof(hex), "0x%" PRIx64, s->bins[i].base);
			base = json_string(hex);
		}
		json_array_append_new(
		    bins, json_pack("{s:I, s:o}", "id", (json_int_t)s->bins[i].id, "base", base));
	}
	json_t *tv = json_pack("{s:i, s:i, s:i}", "width", (int)s->tracerv.width, "words",
			       (int)s->tracerv.words, "valid_bit", (int)s->tracerv.valid_bit);
	json_t *opts =
	    json_pack("{s:s, s:s, s:b, s:o, s:i, s:I, s:s}", "format", trace_format_name(s->format),
		      "metric", profile_metric_name(s->metric), "inline", s->inline_frames,
		      "tracerv", tv, "hart", (int)s->hart, "max_insns", (json_int_t)s->max_insns,
		      "tasks", recon_tasks_name(s->tasks));
	if (s->max_depth)
		json_object_set_new(opts, "max_depth", json_integer(s->max_depth));
	if (s->pcs)
		json_object_set_new(opts, "pcs", json_true());
	if (s->have_go_clock)
		json_object_set_new(
		    opts, "go_clock",
		    json_pack("{s:f, s:f}", "hz", s->go_hz, "offset", s->go_offset));
	json_t *ev = s->events ? json_integer(s->events) : json_null();
	json_t *go = s->go_trace ? json_integer(s->go_trace) : json_null();
	json_t *py = s->pycode ? json_integer(s->pycode) : json_null();
	json_t *j = json_pack("{s:o, s:o, s:o, s:o, s:o}", "binaries", bins, "events", ev,
			      "go_trace", go, "pycode", py, "options", opts);
	if (s->ntraces == 1) {
		json_object_set_new(j, "trace", json_integer(s->trace));
	} else {
		json_t *tr = json_array();
		for (size_t i = 0; i < s->ntraces; i++)
			json_array_append_new(tr, json_integer(s->traces[i]));
		json_object_set_new(j, "traces", tr);
	}
	return j;
}
