/*
 * speedscope's file format, evented (from stack events) or sampled (from the
 * calling-context tree). Events are streamed from the log; names are written
 * once, in shared.frames, after the profiles (JSON keys have no order).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_impl.h"
#include "util/oob_mem.h"

#define SCHEMA "https://www.speedscope.app/file-format-schema.json"

struct evented {
	FILE *f;
	const struct export_clock *clk;
	uint64_t first, last;
	uint64_t n;
};

/* speedscope refuses time going backwards; a cycle counter that does (a
 * damaged trace) is held at its last value. */
static int put_event(void *ctx, const struct recon_event *ev)
{
	struct evented *e = ctx;
	uint64_t t = export_clock_time(e->clk, ev);
	if (e->n && t < e->last)
		t = e->last;
	if (!e->n)
		e->first = t;
	e->last = t;
	fprintf(e->f, "%s{\"type\":\"%c\",\"frame\":%" PRIu32 ",\"at\":%" PRIu64 "}",
		e->n++ ? "," : "", ev->kind == RECON_EV_OPEN ? 'O' : 'C', ev->frame, t);
	return 0;
}

static int write_evented(const struct profile *p, struct evlog *ev, const struct export_opts *o,
			 FILE *f, struct oob_err *err)
{
	struct export_clock clk;
	int rc = export_clock_init(&clk, p, ev, o, err);
	unsigned written = 0;
	for (unsigned h = 0; rc == 0 && h < evlog_nharts(ev); h++) {
		if (!evlog_hart(ev, h).events)
			continue;
		struct evented e = {.f = f, .clk = &clk};
		fprintf(
		    f,
		    "%s{\"type\":\"evented\",\"name\":\"hart %u%s\",\"unit\":\"%s\",\"events\":[",
		    written++ ? "," : "", h,
		    clk.hz ? "" : (clk.cycles ? " (cycles)" : " (trace records)"),
		    clk.hz ? "nanoseconds" : "none");
		rc = evlog_replay(ev, (int)h, (uint32_t)profile_nframes(p), put_event, &e, err);
		fprintf(f, "],\"startValue\":%" PRIu64 ",\"endValue\":%" PRIu64 "}", e.first,
			e.last);
	}
	return rc;
}

/* The frame index that stands for the root's own weight (instructions that
 * ran before any frame was known): an existing "[unknown]" marker, else one
 * past the profile's frames. */
static uint32_t unknown_frame(const struct profile *p, int *extra)
{
	for (uint32_t i = 0; i < profile_nframes(p); i++) {
		const struct profile_frame *fr = profile_frame(p, i);
		if (fr->kind == PROFILE_FRAME_MARKER && !strcmp(fr->name, "[unknown]"))
			return i;
	}
	*extra = 1;
	return (uint32_t)profile_nframes(p);
}

static void write_sampled_one(const struct profile *p, enum profile_metric m, uint32_t unk,
			      uint32_t *path, FILE *f)
{
	uint64_t total = 0;
	size_t nn = profile_nnodes(p), k = 0;
	fprintf(f, "{\"type\":\"sampled\",\"name\":\"%s\",\"unit\":\"none\",\"samples\":[",
		profile_metric_name(m));
	for (uint32_t i = 0; i < nn; i++) {
		const struct profile_node *n = profile_node(p, i);
		if (!profile_node_self(n, m) || (i == 0 && m == PROFILE_CALLS))
			continue;
		size_t depth = 0;
		for (uint32_t x = i; x != 0; x = profile_node(p, x)->parent)
			path[depth++] = profile_node(p, x)->frame;
		if (i == 0)
			path[depth++] = unk;
		fputs(k++ ? ",[" : "[", f);
		while (depth--)
			fprintf(f, "%" PRIu32 "%s", path[depth], depth ? "," : "");
		fputc(']', f);
	}
	fputs("],\"weights\":[", f);
	k = 0;
	for (uint32_t i = 0; i < nn; i++) {
		uint64_t w = profile_node_self(profile_node(p, i), m);
		if (!w || (i == 0 && m == PROFILE_CALLS))
			continue;
		fprintf(f, "%s%" PRIu64, k++ ? "," : "", w);
		total += w;
	}
	fprintf(f, "],\"startValue\":0,\"endValue\":%" PRIu64 "}", total);
}

/* One sampled profile per metric the trace has, the chosen one first. */
static void write_sampled(const struct profile *p, const struct export_opts *o, uint32_t unk,
			  FILE *f)
{
	enum profile_metric order[3] = {o->metric};
	size_t n = 1;
	for (int m = PROFILE_INSNS; m <= PROFILE_CALLS; m++)
		if ((enum profile_metric)m != o->metric)
			order[n++] = (enum profile_metric)m;
	uint32_t *path = oob_xmalloc((profile_nnodes(p) + 2) * sizeof(*path));
	int written = 0;
	for (size_t i = 0; i < n; i++) {
		if (order[i] == PROFILE_CYCLES && !profile_has_cycles(p))
			continue;
		if (written++)
			fputc(',', f);
		write_sampled_one(p, order[i], unk, path, f);
	}
	free(path);
}

static void write_frames(const struct profile *p, int extra, FILE *f)
{
	size_t n = profile_nframes(p);
	fputs("\"shared\":{\"frames\":[", f);
	for (uint32_t i = 0; i < n; i++) {
		const struct profile_frame *fr = profile_frame(p, i);
		fputs(i ? ",{\"name\":" : "{\"name\":", f);
		export_json_str(f, fr->name);
		if (fr->file) {
			fputs(",\"file\":", f);
			export_json_str(f, fr->file);
		}
		if (fr->line)
			fprintf(f, ",\"line\":%" PRIu32, fr->line);
		fputc('}', f);
	}
	if (extra)
		fprintf(f, "%s{\"name\":\"[unknown]\"}", n ? "," : "");
	fputs("]}", f);
}

int export_speedscope_evented(const struct evlog *ev, const struct export_opts *o)
{
	return ev && !o->sampled && !evlog_capped(ev) && evlog_count(ev) > 0 &&
	       (!o->max_events || evlog_count(ev) <= o->max_events);
}

int export_speedscope_fell_back(const struct evlog *ev, const struct export_opts *o)
{
	return ev && !o->sampled &&
	       (evlog_capped(ev) || (o->max_events && evlog_count(ev) > o->max_events));
}

/* The profile's name, and why it is sampled when evented was asked for. */
static void write_name(const struct evlog *ev, const struct export_opts *o, FILE *f)
{
	const char *name = o->name ? o->name : "oobprof";
	char buf[1024];
	if (!export_speedscope_fell_back(ev, o)) {
		export_json_str(f, name);
		return;
	}
	if (o->max_events && evlog_seen(ev) > o->max_events)
		snprintf(buf, sizeof(buf),
			 "%.800s (sampled: %" PRIu64 " stack events > max %" PRIu64 ")", name,
			 evlog_seen(ev), o->max_events);
	else /* a log capped by whoever recorded it */
		snprintf(buf, sizeof(buf),
			 "%.800s (sampled: %" PRIu64 " stack events, more than the log kept)", name,
			 evlog_seen(ev));
	export_json_str(f, buf);
}

int export_speedscope(const struct profile *p, struct evlog *ev, const struct export_opts *o,
		      FILE *out, struct oob_err *err)
{
	int extra = 0, rc = 0;
	fputs("{\"$schema\":\"" SCHEMA "\",\"name\":", out);
	write_name(ev, o, out);
	fputs(",\"exporter\":", out);
	export_json_str(out, export_tool_name());
	fputs(",\"activeProfileIndex\":0,\"profiles\":[", out);
	if (export_speedscope_evented(ev, o)) {
		rc = write_evented(p, ev, o, out, err);
	} else {
		const struct profile_node *root = profile_node(p, 0);
		uint32_t unk = 0;
		if (root->self_insns || root->self_cycles)
			unk = unknown_frame(p, &extra);
		write_sampled(p, o, unk, out);
	}
	if (rc < 0)
		return oob_err_prefix(err, "speedscope export");
	fputs("],", out);
	write_frames(p, extra, out);
	fputs("}\n", out);
	return 0;
}
