/*
 * Chrome Trace Event JSON from stack events, in one pass over the log.
 *
 * Dropping short frames without lookahead: a frame is written only once it
 * is known to last at least min_duration, i.e. at its close, or at the close
 * of a callee that qualifies (a callee never outlasts its callers). At that
 * moment the "B" events of every not yet written frame below it are written,
 * outermost first. Nothing else has been written for that thread since the
 * outermost of those opened (its callees were all too short so far), so each
 * thread's events stay in time order and properly nested.
 *
 * Zero-length frames (opened and closed at the same stamp) are never
 * written: they carry no time, and their ties are ordered differently by
 * different viewers.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "export/export_impl.h"
#include "util/oob_mem.h"

#define PID 1

struct open_frame {
	uint32_t frame;
	uint64_t t;
};

struct thread {
	struct open_frame *stk;
	size_t n, cap;
	size_t nwritten; /* frames stk[0 .. nwritten) have their "B" out */
	uint64_t last;
};

struct pf {
	FILE *f;
	const struct profile *p;
	struct export_clock clk;
	uint64_t min;
	char **names; /* per frame: its name as a JSON string, and ,"cat":... */
	struct thread *th;
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

static void open_frame(struct thread *t, uint32_t frame, uint64_t ns)
{
	oob_xgrow((void **)&t->stk, &t->cap, t->n + 1, sizeof(*t->stk));
	t->stk[t->n++] = (struct open_frame){frame, ns};
}

static void close_frame(struct pf *x, struct thread *t, unsigned hart, uint64_t ns)
{
	struct open_frame *top = &t->stk[t->n - 1];
	if (t->nwritten < t->n && ns - top->t >= x->min && ns > top->t) {
		for (size_t i = t->nwritten; i < t->n; i++)
			put_event(x, 'B', hart, t->stk[i].frame, t->stk[i].t);
		t->nwritten = t->n;
	}
	if (t->nwritten == t->n) {
		put_event(x, 'E', hart, top->frame, ns);
		t->nwritten--;
		x->kept++;
	} else {
		x->dropped++;
	}
	t->n--;
}

static int on_event(void *ctx, const struct recon_event *ev)
{
	struct pf *x = ctx;
	struct thread *t = &x->th[ev->hart];
	uint64_t ns = export_clock_time(&x->clk, ev);
	if (ns < t->last)
		ns = t->last; /* a cycle counter going back (damaged trace) */
	t->last = ns;
	if (ev->kind == RECON_EV_OPEN)
		open_frame(t, ev->frame, ns);
	else
		close_frame(x, t, ev->hart, ns);
	return 0;
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
	size_t nth = evlog_nharts(ev);
	x.th = oob_xcalloc(nth ? nth : 1, sizeof(*x.th));
	x.names = frame_names(p);
	fputs("{\"traceEvents\":[\n", out);
	write_metadata(&x, ev, o);
	rc = evlog_replay(ev, -1, (uint32_t)profile_nframes(p), on_event, &x, err);
	if (rc == 0 && o->go)
		x.go_slices = export_perfetto_go(out, &x.clk, o->go, x.min);
	if (rc == 0)
		write_other(&x);
	else
		oob_err_prefix(err, "perfetto export");
	for (size_t i = 0; i < nth; i++)
		free(x.th[i].stk);
	for (size_t i = 0; i < profile_nframes(p); i++)
		free(x.names[i]);
	free(x.names);
	free(x.th);
	return rc;
}
