#include "api_json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *api_arch_name(unsigned machine)
{
	static __thread char buf[24];
	switch (machine) {
	case 243:
		return "riscv";
	case 62:
		return "x86_64";
	case 183:
		return "aarch64";
	case 3:
		return "i386";
	case 40:
		return "arm";
	case 0:
		return "none";
	default:
		snprintf(buf, sizeof(buf), "em_%u", machine);
		return buf;
	}
}

json_t *api_json_binary(const struct catalog_binary *b)
{
	char url[64];
	snprintf(url, sizeof(url), "/api/v1/binaries/%lld", (long long)b->id);
	return json_pack("{s:I, s:s, s:s, s:I, s:s, s:s, s:i, s:I, s:b, s:b, s:I, s:s}", "id",
			 (json_int_t)b->id, "name", b->name, "sha256", b->sha256, "size",
			 (json_int_t)b->size, "build_id", b->build_id, "arch",
			 api_arch_name(b->machine), "machine", (int)b->machine, "functions",
			 (json_int_t)b->nfuncs, "has_dwarf", b->has_dwarf, "pie", b->pie, "created",
			 (json_int_t)b->created, "url", url);
}

json_t *api_json_trace(const struct catalog_trace *t)
{
	char url[64];
	snprintf(url, sizeof(url), "/api/v1/traces/%lld", (long long)t->id);
	const char *state = catalog_trace_state_name(t->state);
	json_t *j = json_pack("{s:I, s:s, s:s?, s:I, s:s, s:s, s:b, s:s, s:I, s:s}", "id",
			      (json_int_t)t->id, "name", t->name, "sha256",
			      t->sha256[0] ? t->sha256 : NULL, "size", (json_int_t)t->size,
			      "format", t->format, "description", t->description, "lz4", t->lz4,
			      "state", state, "created", (json_int_t)t->created, "url", url);
	json_object_set_new(j, "records", json_integer((json_int_t)t->records));
	if (t->error[0])
		json_object_set_new(j, "error", json_string(t->error));
	return j;
}

static json_t *progress_json(const struct catalog_job *j, const struct job_progress *p)
{
	uint64_t bytes = p && p->running ? p->bytes : j->bytes;
	uint64_t total = p && p->running ? p->total : j->total_bytes;
	uint64_t insns = p && p->running ? p->insns : j->insns;
	if (j->state == CATALOG_JOB_DONE)
		bytes = total > bytes ? total : bytes;
	json_t *o = json_pack("{s:I, s:I, s:I}", "bytes", (json_int_t)bytes, "total_bytes",
			      (json_int_t)total, "instructions", (json_int_t)insns);
	if (total)
		json_object_set_new(
		    o, "fraction", json_real(bytes >= total ? 1.0 : (double)bytes / (double)total));
	if (p && !p->running)
		json_object_set_new(o, "queue_position", json_integer((json_int_t)p->position));
	return o;
}

static void add_links(json_t *o, int64_t id)
{
	static const char *const kinds[] = {"flamegraph", "folded", "top"};
	json_t *l = json_object();
	for (size_t i = 0; i < 3; i++) {
		char url[96];
		snprintf(url, sizeof(url), "/api/v1/jobs/%lld/%s", (long long)id, kinds[i]);
		json_object_set_new(l, kinds[i], json_string(url));
	}
	json_object_set_new(o, "links", l);
}

json_t *api_json_job(const struct catalog_job *j, const struct job_progress *p,
		     const struct catalog_result *r)
{
	char url[64];
	snprintf(url, sizeof(url), "/api/v1/jobs/%lld", (long long)j->id);
	const char *state = catalog_job_state_name(j->state);
	json_t *spec = json_loads(j->spec, 0, NULL);
	json_t *o =
	    json_pack("{s:I, s:s, s:I, s:o, s:o, s:I, s:I, s:I, s:i, s:s}", "id", (json_int_t)j->id,
		      "state", state, "trace", (json_int_t)j->trace_id, "spec",
		      spec ? spec : json_null(), "progress", progress_json(j, p), "created",
		      (json_int_t)j->created, "started", (json_int_t)j->started, "finished",
		      (json_int_t)j->finished, "runs", (int)j->runs, "url", url);
	if (j->crashes)
		json_object_set_new(o, "crashes", json_integer(j->crashes));
	if (j->error[0])
		json_object_set_new(
		    o, "error",
		    json_pack("{s:s, s:s}", "code",
			      oob_err_code_name(j->error_code ? j->error_code : -EIO), "message",
			      j->error));
	if (r) {
		json_t *stats = json_loads(r->stats, 0, NULL);
		json_object_set_new(o, "summary", stats ? stats : json_null());
		json_object_set_new(o, "partial", json_boolean(r->partial));
		json_object_set_new(o, "stack_events_bytes",
				    r->events[0] ? json_integer((json_int_t)r->events_bytes)
						 : json_null());
		add_links(o, j->id);
	} else {
		json_object_set_new(o, "summary", json_null());
	}
	return o;
}

int api_arg_uint(const char *key, const char *s, uint64_t lo, uint64_t hi, uint64_t *out,
		 struct oob_err *err)
{
	if (!s)
		return 0;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *s == '-' || *end || errno || v < lo || v > hi)
		return oob_err_set(err, -EINVAL,
				   "query argument %s=\"%.40s\": expected an integer in "
				   "%llu..%llu",
				   key, s, (unsigned long long)lo, (unsigned long long)hi);
	*out = v;
	return 0;
}

int api_name_check(const char *name, struct oob_err *err)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
				 "._-+@,:= ";
	size_t n = strlen(name);
	if (n == 0 || n >= CATALOG_NAME_MAX)
		return oob_err_set(err, -EINVAL, "name must have 1 to %d characters",
				   CATALOG_NAME_MAX - 1);
	if (strspn(name, ok) != n || name[0] == '.' || name[0] == ' ' || strstr(name, ".."))
		return oob_err_set(
		    err, -EINVAL,
		    "name \"%.64s\" refused: use letters, digits, spaces and . _ - + "
		    "@ , : = (no paths)",
		    name);
	return 0;
}

char *api_json_body(json_t *j, size_t *len)
{
	char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	*len = body ? strlen(body) : 0;
	return body;
}
