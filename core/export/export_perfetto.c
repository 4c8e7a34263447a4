/*
 * Chrome Trace Event JSON from stack events, in one pass over the log:
 * "B" and "E" events of the slices export_slices() keeps, then the Go
 * runtime's tracks.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "export/export_impl.h"
#include "util/oob_mem.h"

#define PID 1

struct pf {
	FILE *f;
	const struct profile *p;
	struct export_clock clk;
	uint64_t min;
	char **names; /* per frame: its name as a JSON string, and ,"cat":... */
	uint64_t kept, dropped;
	uint64_t go_slices; /* Go runtime intervals written */
};

static const char *category(unsigned kind)
{
	return profile_frame_kind_name(kind);
}

/* "name":"...","cat":"..." of every frame, escaped once. */
static char **frame_names(const struct profile *p)
{
	size_t n = profile_nframes(p);
	char **v = oob_xcalloc(n ? n : 1, sizeof(*v));
	for (uint32_t i = 0; i < n; i++) {
		const struct profile_frame *fr = profile_frame(p, i);
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);
		if (!m)
			oob_xmalloc(SIZE_MAX); /* the OOM policy */
		fputs("\"name\":", m);
		export_json_str(m, fr->name);
		fprintf(m, ",\"cat\":\"%s\"", category(fr->kind));
		fclose(m);
		v[i] = buf;
	}
	return v;
}

/* Integer nanoseconds printed as microseconds: exact, no floating point. */
static void put_event(struct pf *x, char ph, unsigned hart, uint32_t frame, uint64_t ns)
{
	fprintf(x->f,
		",\n{\"ph\":\"%c\",\"pid\":%d,\"tid\":%u,\"ts\":%" PRIu64 ".%03" PRIu64 ",%s}", ph,
		PID, hart + 1, ns / 1000, ns % 1000, x->names[frame]);
}

static void put_begin(void *ctx, unsigned hart, uint32_t depth, uint32_t frame, uint64_t ns)
{
	(void)depth;
	put_event(ctx, 'B', hart, frame, ns);
}

static void put_end(void *ctx, unsigned hart, uint32_t frame, uint64_t ns)
{
	put_event(ctx, 'E', hart, frame, ns);
}

static void write_metadata(struct pf *x, struct evlog *ev, const struct export_opts *o)
{
	fprintf(x->f,
		"{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\",\"args\":{"
		"\"name\":",
		PID);
	export_json_str(x->f, o->name ? o->name : "oobprof");
	fputs("}}", x->f);
	for (unsigned h = 0; h < evlog_nharts(ev); h++) {
		if (!evlog_hart(ev, h).events)
			continue;
		fprintf(x->f,
			",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"thread_name\","
			"\"args\":{\"name\":\"hart %u\"}}",
			PID, h + 1, h);
		fprintf(x->f,
			",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"thread_sort_index\","
			"\"args\":{\"sort_index\":%u}}",
			PID, h + 1, h);
	}
}

static void write_other(struct pf *x)
{
	fputs("],\n\"otherData\":{\"exporter\":", x->f);
	export_json_str(x->f, export_tool_name());
	fprintf(x->f,
		",\"time\":\"%s\",\"min_duration_ns\":%" PRIu64 ",\"slices\":%" PRIu64
		",\"dropped_slices\":%" PRIu64 ",\"go_slices\":%" PRIu64 "}}\n",
		x->clk.hz	? "nanoseconds (from cycles and the clock rate)"
		: x->clk.cycles ? "1 ns = 1 cycle"
		: x->clk.seq	? "1 ns = 1 trace record (all harts)"
				: "1 ns = 1 instruction",
		x->min, x->kept, x->dropped, x->go_slices);
}

int export_perfetto(const struct profile *p, struct evlog *ev, const struct export_opts *o,
		    FILE *out, struct oob_err *err)
{
	struct pf x = {.f = out, .p = p, .min = o->min_duration};
	if (!ev)
		return oob_err_set(err, -EINVAL, "perfetto export: needs the stack events");
	int rc = export_clock_init(&x.clk, p, ev, o, err);
	if (rc < 0)
		return rc;
	struct export_slice_sink sink = {.ctx = &x, .begin = put_begin, .end = put_end};
	x.names = frame_names(p);
	fputs("{\"traceEvents\":[\n", out);
	write_metadata(&x, ev, o);
	rc = export_slices(ev, (uint32_t)profile_nframes(p), &x.clk, x.min, &sink, &x.kept,
			   &x.dropped, err);
	if (rc == 0 && o->go)
		x.go_slices = export_perfetto_go(out, &x.clk, o->go, x.min);
	if (rc == 0)
		write_other(&x);
	else
		oob_err_prefix(err, "perfetto export");
	for (size_t i = 0; i < profile_nframes(p); i++)
		free(x.names[i]);
	free(x.names);
	return rc;
}
