#include "config.h"

#include "export/export.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_impl.h"
#include "util/oob_mem.h"

static const struct {
	const char *name, *ctype, *suffix;
} formats[] = {
    [EXPORT_SPEEDSCOPE] = {"speedscope", "application/json", ".speedscope.json"},
    [EXPORT_PERFETTO] = {"perfetto", "application/json", ".trace.json"},
    [EXPORT_PPROF] = {"pprof", "application/octet-stream", ".pb.gz"},
    [EXPORT_FOLDED] = {"folded", "text/plain; charset=utf-8", ".folded.txt"},
    [EXPORT_SVG] = {"svg", "image/svg+xml", ".svg"},
    [EXPORT_PERFETTO_PB] = {"perfetto-pb", "application/gzip", ".pftrace.gz"},
};

#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

int export_format_parse(const char *s, enum export_format *out)
{
	for (size_t i = 0; i < NFORMATS; i++) {
		if (!strcmp(s, formats[i].name)) {
			*out = (enum export_format)i;
			return 0;
		}
	}
	if (!strcmp(s, "perfetto-json")) {
		*out = EXPORT_PERFETTO;
		return 0;
	}
	return -EINVAL;
}

const char *export_format_name(enum export_format f)
{
	return formats[f].name;
}

const char *export_content_type(enum export_format f)
{
	return formats[f].ctype;
}

const char *export_file_suffix(enum export_format f)
{
	return formats[f].suffix;
}

int export_is_perfetto(enum export_format f)
{
	return f == EXPORT_PERFETTO || f == EXPORT_PERFETTO_PB;
}

int export_wants_events(const struct export_opts *o)
{
	return export_is_perfetto(o->format) || (o->format == EXPORT_SPEEDSCOPE && !o->sampled);
}

const char *export_tool_name(void)
{
	return "oobprof " PACKAGE_VERSION;
}

/* ---- shared helpers ---- */

int export_clock_init(struct export_clock *c, const struct profile *p, const struct evlog *ev,
		      const struct export_opts *o, struct oob_err *err)
{
	(void)ev;
	memset(c, 0, sizeof(*c));
	/* One axis for every export that keeps time, the timeline's
	 * (timeline.h): the trace's cycles when it has them, else the global
	 * record index, absolute. So an event has the same time in each file
	 * and in the API's windows, whatever the metric. */
	c->cycles = profile_has_cycles(p);
	if (o->metric == PROFILE_CYCLES && !c->cycles)
		return oob_err_set(err, -EINVAL, "export: this trace has no cycle counts");
	if (o->clock_hz && !c->cycles)
		return oob_err_set(err, -EINVAL,
				   "export: a clock rate converts cycles, but the trace has no "
				   "cycle counts (its time is the trace's record index)");
	c->hz = o->clock_hz;
	c->seq = !c->cycles;
	return 0;
}

uint64_t export_clock_time(const struct export_clock *c, const struct recon_event *ev)
{
	return export_clock_axis(c, c->cycles ? ev->cycle : c->seq ? ev->seq : ev->insn);
}

uint64_t export_clock_axis(const struct export_clock *c, uint64_t t)
{
	if (!c->hz)
		return t;
	return (uint64_t)((unsigned __int128)t * 1000000000u / c->hz);
}

void export_json_str(FILE *f, const char *s)
{
	json_t *j = json_string(s);
	if (!j) { /* not UTF-8: keep ASCII, mark the rest */
		char *copy = oob_xstrdup(s);
		for (char *c = copy; *c; c++)
			if ((unsigned char)*c >= 0x80)
				*c = '?';
		j = json_string(copy);
		free(copy);
	}
	json_dumpf(j, f, JSON_ENCODE_ANY);
	json_decref(j);
}

/* ---- the entry point ---- */

int export_check(const struct profile *p, const struct evlog *ev, const struct export_opts *o,
		 struct oob_err *err)
{
	struct export_clock clk;
	int rc = 0;
	if ((unsigned)o->format >= NFORMATS)
		return oob_err_set(err, -EINVAL, "export: unknown format %d", (int)o->format);
	if (export_is_perfetto(o->format) && !ev)
		return oob_err_set(err, -EINVAL, "%s export: needs the stack events",
				   export_format_name(o->format));
	if (export_is_perfetto(o->format) ||
	    (o->format == EXPORT_SPEEDSCOPE && export_speedscope_evented(ev, o)))
		rc = export_clock_init(&clk, p, ev, o, err);
	return rc < 0 && o->format == EXPORT_SPEEDSCOPE ? oob_err_prefix(err, "speedscope export")
							: rc;
}

int export_write(const struct profile *p, struct evlog *ev, const struct export_opts *o, FILE *out,
		 struct oob_err *err)
{
	int rc;
	switch (o->format) {
	case EXPORT_SPEEDSCOPE:
		rc = export_speedscope(p, ev, o, out, err);
		break;
	case EXPORT_PERFETTO:
		rc = export_perfetto(p, ev, o, out, err);
		break;
	case EXPORT_PERFETTO_PB:
		rc = export_perfetto_pb(p, ev, o, out, err);
		break;
	case EXPORT_PPROF:
		rc = export_pprof(p, ev, o, out, err);
		break;
	case EXPORT_SVG:
		rc = export_svg(p, o, out, err);
		break;
	case EXPORT_FOLDED:
		rc = profile_write_folded(p, out, o->metric, o->annotate);
		if (rc < 0)
			oob_err_set(err, rc, "export: writing folded stacks failed");
		break;
	default:
		return oob_err_set(err, -EINVAL, "export: unknown format %d", (int)o->format);
	}
	if (rc == 0 && (fflush(out) != 0 || ferror(out)))
		rc =
		    oob_err_set(err, -EIO, "export %s: write error", export_format_name(o->format));
	return rc;
}
