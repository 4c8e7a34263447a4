#include "trace/fireperf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"
#include "trace/trace_impl.h"

struct fireperf_reader {
	struct in_stream *in;
	struct fireperf_event ev;
	char *label;
	size_t label_cap;
	int have_first;	     /* ev already holds the first event (read by open) */
	uint64_t last_cycle; /* of the last event read */
};

/* Parses a line into r->ev. 1 = event, 0 = line to skip, -1 = not FirePerf. */
static int parse(struct fireperf_reader *r, const char *s, const char *e)
{
	static const char at[] = ", At cycle: ", endc[] = ", End cycle: ";
	uint64_t indent, cyc;
	if (s == e)
		return 0;
	if (!TRACE_LIT(&s, e, "WARN: ")) {
		if (TRACE_LIT(&s, e, "STACK ZEROED"))
			return 0; /* the lines that explain the warning */
		r->ev.kind = FIREPERF_ZERO;
		r->ev.indent = 0;
		r->ev.label = "";
		r->ev.cycle = 0;
		return 1;
	}
	if (TRACE_LIT(&s, e, "Indent: ") || trace_dec(&s, e, &indent) || indent > 0xffffffffu)
		return -1;
	int start = !TRACE_LIT(&s, e, ", Start label: ");
	if (!start && TRACE_LIT(&s, e, ", End label: "))
		return -1;
	const char *sep = start ? at : endc;
	size_t seplen = start ? sizeof(at) - 1 : sizeof(endc) - 1;
	/* A label may hold ", " (C++ names): the cycle is after the last separator. */
	const char *q = NULL;
	for (const char *t = s; t + seplen <= e; t++)
		if (memcmp(t, sep, seplen) == 0)
			q = t;
	if (!q)
		return -1;
	const char *c = q + seplen;
	if (trace_dec(&c, e, &cyc) || c != e)
		return -1;
	size_t len = (size_t)(q - s);
	if (len + 1 > r->label_cap) {
		void *p = r->label;
		oob_xgrow(&p, &r->label_cap, len + 1, 1);
		r->label = p;
	}
	memcpy(r->label, s, len);
	r->label[len] = '\0';
	r->ev.kind = start ? FIREPERF_START : FIREPERF_END;
	r->ev.indent = (unsigned)indent;
	r->ev.label = r->label;
	r->ev.cycle = cyc;
	return 1;
}

static int read_event(struct fireperf_reader *r, struct oob_err *err)
{
	for (;;) {
		const char *line;
		long n = in_getline(r->in, &line, err);
		if (n == -1)
			return 0;
		if (n < 0)
			return (int)n;
		int k = parse(r, line, line + n);
		/* A last line without '\n' whose cycle went back was cut in it
		 * (events come in time order). */
		if (in_line_unterminated(r->in) &&
		    (k < 0 || (k && r->ev.kind != FIREPERF_ZERO && r->ev.cycle < r->last_cycle))) {
			char what[300];
			snprintf(what, sizeof(what), "fireperf: %s", in_name(r->in));
			return trace_line_cut(r->in, what, line, n,
					      k < 0 ? "a field is missing"
						    : "its cycle is below the last event's",
					      err);
		}
		if (k && r->ev.kind != FIREPERF_ZERO)
			r->last_cycle = r->ev.cycle;
		if (k < 0) {
			char ex[256];
			trace_excerpt(line, (size_t)n, ex, sizeof(ex));
			return oob_err_set(
			    err, -EINVAL,
			    "fireperf: %s: line %" PRIu64
			    ": expected \"Indent: N, Start label: NAME, At cycle: C\", "
			    "\"Indent: N, End label: NAME, End cycle: C\" or \"WARN: ...\", "
			    "got \"%s\"",
			    in_name(r->in), in_lineno(r->in), ex);
		}
		if (k) {
			r->ev.line = in_lineno(r->in);
			return 1;
		}
	}
}

struct fireperf_reader *fireperf_open_stream(struct in_stream *s, struct oob_err *err)
{
	struct fireperf_reader *r = oob_xcalloc(1, sizeof(*r));
	const uint8_t *p;
	r->in = s;
	long n = in_peek(s, &p, 4096, err);
	if (n < 0)
		goto fail;
	if (n >= 15 && memcmp(p, "# Clock Domain:", 15) == 0) {
		const char *line;
		uint64_t num, den;
		long k = in_getline(s, &line, err);
		if (k < -1)
			goto fail;
		if (k < 0 || trace_clock_line_parse(line, (size_t)k, &num, &den, NULL, 0)) {
			oob_err_set(err, -EINVAL,
				    "fireperf: %s: line 1: malformed clock header line",
				    in_name(s));
			goto fail;
		}
	}
	int rc = read_event(r, err);
	if (rc < 0)
		goto fail;
	r->have_first = rc;
	return r;
fail:
	fireperf_close(r);
	return NULL;
}

void fireperf_close(struct fireperf_reader *r)
{
	if (!r)
		return;
	in_close(r->in);
	free(r->label);
	free(r);
}

int fireperf_next(struct fireperf_reader *r, const struct fireperf_event **ev, struct oob_err *err)
{
	int rc;
	if (r->have_first) {
		r->have_first = 0;
		rc = 1;
	} else {
		rc = read_event(r, err);
	}
	if (rc == 1)
		*ev = &r->ev;
	return rc;
}
