/*
 * The Go runtime's tracks: one per P, per M (OS thread) and per goroutine,
 * and one for GC and stop-the-world phases, each interval a slice named by
 * its state. Times go through the job's Go clock model onto the trace's
 * axis, then through the export's clock, so they line up with the harts'
 * frames. export_go_tracks walks them for any writer; export_perfetto_go
 * writes them as Chrome Trace Event JSON (a second process, pid 2, with
 * "X" events).
 */
#include <inttypes.h>
#include <stdio.h>

#include "export/export_impl.h"

#define GO_PID 2

struct gw {
	const struct export_go_sink *s;
	const struct export_clock *c;
	const struct timeline_go *go;
	uint64_t min, written;
};

/* "P3", "M12", "G7 main.worker" */
static void entity(struct gw *w, char kind, uint64_t id, const char *name)
{
	char label[512];
	snprintf(label, sizeof(label), "%c%" PRIu64 "%s%s", kind, id, name ? " " : "",
		 name ? name : "");
	w->s->thread(w->s->ctx, label);
}

static void interval(struct gw *w, uint64_t start, uint64_t end, const char *name)
{
	uint64_t s = export_clock_axis(w->c, timeline_go_time(w->go, start));
	uint64_t e = export_clock_axis(w->c, timeline_go_time(w->go, end));
	if (e <= s || e - s < w->min)
		return;
	w->s->slice(w->s->ctx, s, e, name);
	w->written++;
}

static void spans(struct gw *w, const struct gotrace_span *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		interval(w, v[i].start, v[i].end, gotrace_gstate_name(v[i].state));
}

uint64_t export_go_tracks(const struct export_clock *c, const struct timeline_go *go,
			  uint64_t min_ns, const struct export_go_sink *s)
{
	struct gw w = {.s = s, .c = c, .go = go, .min = min_ns};
	const struct gotrace_model *m = gotrace_model(go->trace);
	s->thread(s->ctx, "GC");
	for (size_t i = 0; i < m->nranges; i++)
		if (m->ranges[i].kind == GOTRACE_R_GC || m->ranges[i].kind == GOTRACE_R_STW)
			interval(&w, m->ranges[i].start, m->ranges[i].end,
				 m->ranges[i].kind == GOTRACE_R_GC ? "GC" : "STW");
	for (size_t i = 0; i < m->nps; i++) {
		entity(&w, 'P', m->ps[i].id, NULL);
		spans(&w, m->pspans + m->ps[i].span0, m->ps[i].nspans);
	}
	for (size_t i = 0; i < m->nms; i++) {
		entity(&w, 'M', m->ms[i].id, NULL);
		spans(&w, m->mspans + m->ms[i].span0, m->ms[i].nspans);
	}
	for (size_t i = 0; i < m->ngs; i++) {
		entity(&w, 'G', m->gs[i].id, m->gs[i].name);
		spans(&w, m->gspans + m->gs[i].span0, m->gs[i].nspans);
	}
	return w.written;
}

/* ---- as Chrome Trace Event JSON ---- */

struct json_sink {
	FILE *f;
	unsigned tid;
};

static void json_thread(void *ctx, const char *label)
{
	struct json_sink *j = ctx;
	j->tid++;
	fprintf(j->f,
		",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"thread_sort_index\","
		"\"args\":{\"sort_index\":%u}}",
		GO_PID, j->tid, j->tid);
	fprintf(j->f,
		",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"thread_name\",\"args\":{"
		"\"name\":",
		GO_PID, j->tid);
	export_json_str(j->f, label);
	fputs("}}", j->f);
}

static void json_slice(void *ctx, uint64_t s, uint64_t e, const char *name)
{
	struct json_sink *j = ctx;
	fprintf(j->f,
		",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":%" PRIu64 ".%03" PRIu64
		",\"dur\":%" PRIu64 ".%03" PRIu64 ",\"name\":\"%s\",\"cat\":\"go\"}",
		GO_PID, j->tid, s / 1000, s % 1000, (e - s) / 1000, (e - s) % 1000, name);
}

uint64_t export_perfetto_go(FILE *f, const struct export_clock *c, const struct timeline_go *go,
			    uint64_t min_ns)
{
	struct json_sink j = {.f = f};
	struct export_go_sink s = {.ctx = &j, .thread = json_thread, .slice = json_slice};
	fprintf(f,
		",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\",\"args\":{"
		"\"name\":\"Go runtime\"}}",
		GO_PID);
	return export_go_tracks(c, go, min_ns, &s);
}
