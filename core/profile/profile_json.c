#include "profile/profile_json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/oob_mem.h"

static json_t *process_json(const struct profile *p, const struct profile_process *pr)
{
	json_t *execs = json_array(), *children = json_array(), *spaces = json_array();
	for (size_t k = 0; k < pr->nsatps; k++)
		json_array_append_new(spaces, json_sprintf("0x%016" PRIx64, pr->satps[k]));
	for (size_t e = 0; e < pr->nexecs; e++)
		json_array_append_new(execs, json_pack("{s:s, s:I}", "path", pr->execs[e].path,
						       "cycle", (json_int_t)pr->execs[e].when));
	for (size_t k = 0; k < profile_nprocesses(p); k++) {
		const struct profile_process *c = profile_process(p, k);
		if (pr->pid >= 0 && c->ppid == pr->pid && c->pid >= 0) /* known pids only */
			json_array_append_new(children, json_integer(c->pid));
	}
	return json_pack("{s:I, s:I, s:s, s:o, s:I, s:I, s:{s:I, s:I}, s:{s:I, s:I}, s:o, s:o}",
			 "pid", (json_int_t)pr->pid, "ppid", (json_int_t)pr->ppid, "comm", pr->comm,
			 "exec", execs, "start_cycle", (json_int_t)pr->start, "end_cycle",
			 (json_int_t)pr->end, "instructions", "user", (json_int_t)pr->insns_user,
			 "kernel", (json_int_t)pr->insns_kernel, "cycles", "user",
			 (json_int_t)pr->cycles_user, "kernel", (json_int_t)pr->cycles_kernel,
			 "children", children, "address_spaces", spaces);
}

json_t *profile_stats_json(const struct profile_stats *s)
{
	json_t *o = json_object();
	json_object_set_new(o, "format", json_string(s->format ? s->format : "unknown"));
	json_object_set_new(o, "harts", json_integer(s->harts));
#define SET(f) json_object_set_new(o, #f, json_integer((json_int_t)s->f));
	PROFILE_STAT_FIELDS(SET)
#undef SET
	json_object_set_new(o, "seconds", json_real(s->seconds));
	json_object_set_new(o, "partial", json_boolean(s->partial));
	json_object_set_new(o, "sampled", json_boolean(s->sampled));
	return o;
}

json_t *profile_processes_json(const struct profile *p)
{
	json_t *arr = json_array();
	for (size_t k = 0; k < profile_nprocesses(p); k++)
		json_array_append_new(arr, process_json(p, profile_process(p, k)));
	return json_pack("{s:o, s:I, s:s?}", "processes", arr, "switches",
			 (json_int_t)profile_switches(p), "source", profile_process_source(p));
}

/* "address_spaces": satp values as hex strings (optional: older results). */
static int spaces_from_json(struct profile_process *pr, uint64_t **satps, json_t *v)
{
	json_t *arr = json_object_get(v, "address_spaces");
	if (arr && !json_is_array(arr))
		return -EINVAL;
	*satps = oob_xcalloc(json_array_size(arr) + 1, sizeof(**satps));
	for (size_t k = 0; k < json_array_size(arr); k++) {
		const char *s = json_string_value(json_array_get(arr, k));
		char *end;
		if (!s ||
		    (errno = 0, (*satps)[k] = strtoull(s, &end, 16), errno || *end || end == s))
			return -EINVAL;
	}
	pr->satps = *satps;
	pr->nsatps = json_array_size(arr);
	return 0;
}

static int process_from_json(struct profile_process *pr, struct profile_exec **execs,
			     uint64_t **satps, json_t *v)
{
	json_int_t pid, ppid, start, end, iu, ik, cu, ck;
	const char *comm;
	json_t *ex, *fr = json_object_get(v, "frame");
	if (json_unpack(v, "{s:I, s:I, s:s, s:o, s:I, s:I, s:{s:I, s:I}, s:{s:I, s:I}}", "pid",
			&pid, "ppid", &ppid, "comm", &comm, "exec", &ex, "start_cycle", &start,
			"end_cycle", &end, "instructions", "user", &iu, "kernel", &ik, "cycles",
			"user", &cu, "kernel", &ck) < 0 ||
	    !json_is_array(ex) || (fr && !json_is_integer(fr)))
		return -EINVAL;
	*pr =
	    (struct profile_process){.pid = pid,
				     .ppid = ppid,
				     .comm = comm,
				     .frame = fr ? (uint32_t)json_integer_value(fr) : PROFILE_NONE,
				     .start = (uint64_t)start,
				     .end = (uint64_t)end,
				     .insns_user = (uint64_t)iu,
				     .insns_kernel = (uint64_t)ik,
				     .cycles_user = (uint64_t)cu,
				     .cycles_kernel = (uint64_t)ck};
	*execs = oob_xcalloc(json_array_size(ex) + 1, sizeof(**execs));
	for (size_t e = 0; e < json_array_size(ex); e++) {
		const char *path;
		json_int_t when;
		if (json_unpack(json_array_get(ex, e), "{s:s, s:I}", "path", &path, "cycle",
				&when) < 0)
			return -EINVAL;
		(*execs)[e] = (struct profile_exec){path, (uint64_t)when};
	}
	pr->execs = *execs;
	pr->nexecs = json_array_size(ex);
	return spaces_from_json(pr, satps, v);
}

int profile_processes_from_json(struct profile *p, const json_t *doc, struct oob_err *err)
{
	if (!doc || json_is_null(doc))
		return 0;
	json_t *arr = json_object_get(doc, "processes");
	const char *source = json_string_value(json_object_get(doc, "source"));
	json_int_t switches = json_integer_value(json_object_get(doc, "switches"));
	size_t n = json_array_size(arr);
	struct profile_process *v = oob_xcalloc(n ? n : 1, sizeof(*v));
	struct profile_exec **ex = oob_xcalloc(n ? n : 1, sizeof(*ex));
	uint64_t **satps = oob_xcalloc(n ? n : 1, sizeof(*satps));
	int rc = 0;
	for (size_t k = 0; k < n && rc == 0; k++)
		if (process_from_json(&v[k], &ex[k], &satps[k], json_array_get(arr, k)) < 0)
			rc = oob_err_set(err, -EINVAL, "profile: process %zu is malformed", k);
	if (rc == 0)
		profile_set_processes(p, v, n, source, (uint64_t)switches);
	for (size_t k = 0; k < n; k++) {
		free(ex[k]);
		free(satps[k]);
	}
	free(ex);
	free(satps);
	free(v);
	return rc;
}

static double func_ipc(uint64_t insns, uint64_t cycles)
{
	return cycles ? (double)insns / (double)cycles : 0.0;
}

json_t *profile_func_json(const struct profile *p, const struct profile_func *f)
{
	const struct profile_frame *fr = profile_frame(p, f->frame);
	char addr[24];
	snprintf(addr, sizeof(addr), "0x%" PRIx64, fr->addr);
	return json_pack(
	    "{s:s, s:s?, s:s?, s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:f}", "name", fr->name,
	    "binary", fr->binary, "file", fr->file, "line", (json_int_t)fr->line, "addr", addr,
	    "kind", profile_frame_kind_name(fr->kind), "calls", (json_int_t)f->calls,
	    "self_instructions", (json_int_t)f->self_insns, "total_instructions",
	    (json_int_t)f->total_insns, "self_cycles", (json_int_t)f->self_cycles, "total_cycles",
	    (json_int_t)f->total_cycles, "ipc", func_ipc(f->total_insns, f->total_cycles));
}

json_t *profile_top_json(const struct profile *p, const struct profile_func *v, size_t n,
			 size_t limit, enum profile_metric m, int partial)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < n && i < limit; i++)
		json_array_append_new(arr, profile_func_json(p, &v[i]));
	return json_pack("{s:s, s:b, s:I, s:o, s:o, s:o}", "metric", profile_metric_name(m),
			 "partial", partial, "count", (json_int_t)n, "functions", arr, "stats",
			 profile_stats_json(profile_stats(p)), "warnings",
			 profile_warnings_json(p));
}

json_t *profile_warnings_json(const struct profile *p)
{
	json_t *a = json_array();
	for (size_t i = 0; i < profile_nwarnings(p); i++) {
		const struct profile_warning *w = profile_warning(p, i);
		json_array_append_new(
		    a, json_pack("{s:s, s:s}", "kind", w->kind, "message", w->message));
	}
	return a;
}

int profile_warnings_from_json(struct profile *p, const json_t *a, struct oob_err *err)
{
	size_t i;
	json_t *v;
	if (!a)
		return 0;
	if (!json_is_array(a))
		return oob_err_set(err, -EINVAL, "profile: \"warnings\" is not an array");
	json_array_foreach(a, i, v)
	{
		const char *kind, *msg;
		if (json_unpack((json_t *)v, "{s:s, s:s}", "kind", &kind, "message", &msg) < 0)
			return oob_err_set(err, -EINVAL, "profile: warning %zu is malformed", i);
		profile_add_warning(p, kind, "%s", msg);
	}
	return 0;
}
