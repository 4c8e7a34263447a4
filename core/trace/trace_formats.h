/*
 * trace_formats: the one table of the file formats oobprof takes as a
 * "trace" (docs/formats/). Everything that names, lists or detects a format
 * reads it: trace_open's detection and readers, the CLI's --format and its
 * usage text, the server's upload check and its error message, the
 * GET /api/v1/formats route and, through it, the viewer's list.
 *
 * A row is a name, a line of description, the usual file name endings, a
 * probe and the reader's ops. Rows without ops are upload kinds that the
 * server stores beside instruction traces (events, gotrace, pycode): they
 * have a name, maybe a probe, but trace_open refuses them; the sampled-stack
 * rows (uniprof, perf-script, folded, pprof) are read by sample/sample.h
 * into a profile, and recon_run takes them in place of a trace.
 *
 * Detection: each probe looks at the first bytes of the (decompressed)
 * input and returns a confidence, TRACE_PROBE_NO (0: not this format) to
 * TRACE_PROBE_MAGIC (100: a magic number). The highest confidence wins; of
 * equal ones the earlier row (table order = enum order). An input that
 * still starts with an LZ4 magic (compressed twice) matches nothing.
 *
 * To add a format: a value at the end of enum trace_format (oobt files
 * store the values), a row in trace_formats.c, its page in docs/formats/
 * and its name in the format enums of api/openapi.yaml (a test compares
 * them with GET /api/v1/formats).
 *
 * Thread-safety: the table is constant; every function is thread-safe.
 */
#ifndef OOB_TRACE_FORMATS_H
#define OOB_TRACE_FORMATS_H

#include <stddef.h>
#include <stdint.h>

/* Values are stored in oobt headers (source format): append only. */
enum trace_format {
	TRACE_FMT_AUTO = 0, /* detect: not a row of the table */
	TRACE_FMT_TRACERV_BIN,
	TRACE_FMT_TRACERV_TEXT,
	TRACE_FMT_FIREPERF,
	TRACE_FMT_SPIKE,
	TRACE_FMT_QEMU,
	TRACE_FMT_OOBT,
	/* Upload kinds, not read by trace_open: */
	TRACE_FMT_EVENTS,  /* sideband process events, JSON Lines */
	TRACE_FMT_GOTRACE, /* Go execution trace (go/gotrace.h) */
	/* Sampled stacks of other tools (sample/sample.h): */
	TRACE_FMT_UNIPROF,
	TRACE_FMT_PERF_SCRIPT,
	TRACE_FMT_FOLDED,
	TRACE_FMT_PPROF,
	TRACE_FMT_PYCODE, /* upload kind: a CPython code map (py/pycode.h) */
	TRACE_FMT_END	  /* one past the last row */
};

/* Probe confidences (see the top of the file and trace_formats.c). */
enum {
	TRACE_PROBE_NO = 0,
	TRACE_PROBE_LAYOUT = 30,	/* binary records of a clear layout, no header */
	TRACE_PROBE_FOLDED = 40,	/* text lines ending in a count, nothing more telling */
	TRACE_PROBE_HEADER_ONLY = 50,	/* a TracerV clock header and nothing after it */
	TRACE_PROBE_HEADER_LAYOUT = 60, /* a clock header then binary records */
	TRACE_PROBE_LINE = 80,		/* the first significant text line has the shape */
	TRACE_PROBE_GZIP = 90,		/* a gzip stream (no other format is gzipped) */
	TRACE_PROBE_MAGIC = 100
};

struct trace_fmt_ops; /* trace_impl.h */

struct trace_format_row {
	enum trace_format fmt;
	const char *name;	 /* "tracerv-bin": --format, ?format=, catalog */
	const char *description; /* one line for people */
	const char *extensions;	 /* usual endings, space separated ("" if none) */
	/* Confidence that p[0..n) starts a file of this format, TRACE_PROBE_*.
	 * NULL: the format is only ever named, never detected. */
	unsigned (*probe)(const uint8_t *p, size_t n);
	const struct trace_fmt_ops *ops; /* NULL: trace_open refuses it */
};

/* The rows, in table order; *n gets their number. */
const struct trace_format_row *trace_formats(size_t *n);
/* The row of f; NULL for TRACE_FMT_AUTO and values out of the table. */
const struct trace_format_row *trace_format_row(enum trace_format f);
/* The row named name; NULL if none ("auto" is none). */
const struct trace_format_row *trace_format_find(const char *name);

/* "tracerv-bin", ...; "auto" for TRACE_FMT_AUTO, "unknown" out of the table. */
const char *trace_format_name(enum trace_format f);
/* Parses "auto" or the name of a format trace_open reads (a row with ops);
 * -EINVAL for any other name, the upload kinds included. */
int trace_format_parse(const char *name, enum trace_format *out);

/* Which rows trace_format_list and trace_format_detect consider. */
enum trace_format_set {
	TRACE_FORMATS_READ, /* rows with ops: what trace_open reads */
	TRACE_FORMATS_ALL
};

/* Writes "auto, " then the names of the set's rows, separated by ", " and
 * the last by last_sep (e.g. " or "), into buf (truncated to size, always
 * terminated). Returns buf. */
char *trace_format_list(char *buf, size_t size, enum trace_format_set set, const char *last_sep);

/* The row of the set whose probe is most confident about p[0..n), NULL if
 * every probe says TRACE_PROBE_NO. */
const struct trace_format_row *trace_format_detect(const uint8_t *p, size_t n,
						   enum trace_format_set set);

/* Detects the format trace_open should read from the first bytes of a
 * (decompressed) stream (a few KB are enough: trace_open looks at up to
 * 64 KiB): trace_format_detect over TRACE_FORMATS_READ. Returns the format
 * or TRACE_FMT_AUTO if none matches. */
enum trace_format trace_detect(const uint8_t *p, size_t n);

#endif
