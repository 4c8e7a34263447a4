#include "trace/trace_formats.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/in.h"
#include "trace/oobt.h"
#include "trace/trace_impl.h"

/* ---- what the probes share ---- */

/* Index of the end of the line starting at i (the '\n' or n). */
static size_t line_end(const uint8_t *p, size_t i, size_t n)
{
	const uint8_t *nl = memchr(p + i, '\n', n - i);
	return nl ? (size_t)(nl - p) : n;
}

static int starts(const uint8_t *p, size_t n, const char *lit)
{
	size_t k = strlen(lit);
	return n >= k && memcmp(p, lit, k) == 0;
}

/* "<word> <spaces> <digits>:" as in "core   0:" and "Trace 0:". */
static int word_num_colon(const uint8_t *p, size_t n, const char *word)
{
	size_t k = strlen(word), i = k, d = 0;
	if (n <= k || memcmp(p, word, k) != 0 || p[k] != ' ')
		return 0;
	while (i < n && p[i] == ' ')
		i++;
	while (i < n && p[i] >= '0' && p[i] <= '9')
		i++, d++;
	return d > 0 && i < n && p[i] == ':';
}

/* Lines QEMU's -d prints before its first "Trace" line (in_asm blocks and
 * the like). They look like no other format, so every text probe skips
 * them: a log is told by the first line that is not one of them. */
static int qemu_preamble(const uint8_t *l, size_t len)
{
	return starts(l, len, "----------------") || starts(l, len, "IN:") ||
	       starts(l, len, "Priv:") || starts(l, len, "0x") ||
	       starts(l, len, "Stopped execution") || starts(l, len, "riscv_cpu_do_interrupt") ||
	       starts(l, len, "cpu_io_recompile");
}

/* The first line of the first 400 that is neither blank nor QEMU preamble
 * (its length without "\r\n" in *len), NULL if none. */
static const uint8_t *first_line(const uint8_t *p, size_t n, size_t *len)
{
	size_t i = 0;
	for (int lines = 0; i < n && lines < 400; lines++) {
		size_t e = line_end(p, i, n), k = e - i;
		const uint8_t *l = p + i;
		i = e + 1;
		if (k && l[k - 1] == '\r')
			k--;
		if (k && !qemu_preamble(l, k)) {
			*len = k;
			return l;
		}
	}
	return NULL;
}

/* FireSim's files may open with a clock header line. 0: none (p, n as they
 * were); 1: one, *p and *n now cover what follows it; -1: a header that
 * does not end within n bytes (nothing can be told yet). */
static int after_clock_header(const uint8_t **p, size_t *n)
{
	if (!starts(*p, *n, "# Clock Domain:"))
		return 0;
	size_t e = line_end(*p, 0, *n);
	if (e == *n)
		return -1;
	*p += e + 1;
	*n -= e + 1;
	return 1;
}

/* ---- the probes ---- */

static unsigned probe_tracerv_bin(const uint8_t *p, size_t n)
{
	struct trace_tracerv_opts lay;
	int h = after_clock_header(&p, &n);
	if (h < 0)
		return TRACE_PROBE_NO;
	if (h > 0 && !n)
		return TRACE_PROBE_HEADER_ONLY; /* a simulation that retired nothing yet */
	if (h > 0)
		return trace_tracerv_guess(p, n, &lay) ? TRACE_PROBE_HEADER_LAYOUT : TRACE_PROBE_NO;
	/* No header: binary records only when the layout is clear. */
	return trace_tracerv_guess(p, n, &lay) >= 16 ? TRACE_PROBE_LAYOUT : TRACE_PROBE_NO;
}

/* The text formats FireSim writes: after the clock header if any. */
static unsigned probe_tracerv_text(const uint8_t *p, size_t n)
{
	size_t len;
	const uint8_t *l = after_clock_header(&p, &n) < 0 ? NULL : first_line(p, n, &len);
	return l && starts(l, len, "Cycle: ") ? TRACE_PROBE_LINE : TRACE_PROBE_NO;
}

static unsigned probe_fireperf(const uint8_t *p, size_t n)
{
	size_t len;
	const uint8_t *l = after_clock_header(&p, &n) < 0 ? NULL : first_line(p, n, &len);
	return l && (starts(l, len, "Indent: ") || starts(l, len, "WARN: STACK ZEROED"))
		   ? TRACE_PROBE_LINE
		   : TRACE_PROBE_NO;
}

/* Spike and QEMU logs never carry FireSim's clock header. */
static unsigned probe_spike(const uint8_t *p, size_t n)
{
	size_t len;
	const uint8_t *l = after_clock_header(&p, &n) ? NULL : first_line(p, n, &len);
	return l && word_num_colon(l, len, "core") ? TRACE_PROBE_LINE : TRACE_PROBE_NO;
}

static unsigned probe_qemu(const uint8_t *p, size_t n)
{
	size_t len;
	const uint8_t *l = after_clock_header(&p, &n) ? NULL : first_line(p, n, &len);
	return l && word_num_colon(l, len, "Trace") ? TRACE_PROBE_LINE : TRACE_PROBE_NO;
}

static unsigned probe_oobt(const uint8_t *p, size_t n)
{
	return n >= OOBT_MAGIC_LEN && !memcmp(p, OOBT_MAGIC, OOBT_MAGIC_LEN) ? TRACE_PROBE_MAGIC
									     : TRACE_PROBE_NO;
}

/* "go 1.N trace": four bytes are enough (the server keeps only the first
 * four of an upload). */
static unsigned probe_gotrace(const uint8_t *p, size_t n)
{
	return starts(p, n, "go 1") ? TRACE_PROBE_MAGIC : TRACE_PROBE_NO;
}

/* ---- sampled stacks (sample/sample.h) ---- */

/* The first line of the first 400 that is neither blank nor a '#' comment. */
static const uint8_t *first_sig_line(const uint8_t *p, size_t n, size_t *len, size_t *next)
{
	size_t i = 0;
	for (int lines = 0; i < n && lines < 400; lines++) {
		size_t e = line_end(p, i, n), k = e - i;
		const uint8_t *l = p + i;
		i = e + 1;
		while (k && (l[k - 1] == '\r' || l[k - 1] == ' '))
			k--;
		if (k && l[0] != '#') {
			*len = k;
			*next = i;
			return l;
		}
	}
	return NULL;
}

static int all_hex(const uint8_t *l, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!((l[i] >= '0' && l[i] <= '9') || ((l[i] | 32) >= 'a' && (l[i] | 32) <= 'f')))
			return 0;
	return len > 0;
}

/* uniprof: comments, then a first sample's "0x<hex>" line. */
static unsigned probe_uniprof(const uint8_t *p, size_t n)
{
	size_t len, next;
	if (starts(p, n, "# Clock Domain:"))
		return TRACE_PROBE_NO;
	const uint8_t *l = first_sig_line(p, n, &len, &next);
	return l && len > 2 && l[0] == '0' && l[1] == 'x' && all_hex(l + 2, len - 2)
		   ? TRACE_PROBE_LINE
		   : TRACE_PROBE_NO;
}

/* perf script with callchains: a sample's header line ending in "EVENT:",
 * then a tab-indented "<hex> ..." callchain line. */
static unsigned probe_perf_script(const uint8_t *p, size_t n)
{
	size_t len, next;
	const uint8_t *l = first_sig_line(p, n, &len, &next);
	if (!l || l[0] == ' ' || l[0] == '\t' || l[len - 1] != ':' || next >= n)
		return TRACE_PROBE_NO;
	size_t i = next;
	while (i < n && (p[i] == ' ' || p[i] == '\t'))
		i++;
	size_t h = i;
	while (i < n && all_hex(p + i, 1))
		i++;
	return i > h && i < n && p[i] == ' ' && (p[next] == '\t' || p[next] == ' ')
		   ? TRACE_PROBE_LINE
		   : TRACE_PROBE_NO;
}

/* Folded stacks: "frame;frame;... COUNT" (at least one such line). */
static unsigned probe_folded(const uint8_t *p, size_t n)
{
	size_t len, next;
	const uint8_t *l = first_sig_line(p, n, &len, &next);
	if (!l || l[0] == ' ' || l[0] == '\t')
		return TRACE_PROBE_NO;
	size_t d = len;
	while (d && l[d - 1] >= '0' && l[d - 1] <= '9')
		d--;
	if (d == len || d < 2 || l[d - 1] != ' ' || l[d - 2] == ' ' || memchr(l, '\t', len))
		return TRACE_PROBE_NO;
	return TRACE_PROBE_FOLDED;
}

/* pprof writes its profiles gzipped. */
static unsigned probe_pprof(const uint8_t *p, size_t n)
{
	return n >= 3 && p[0] == 0x1f && p[1] == 0x8b && p[2] == 8 ? TRACE_PROBE_GZIP
								   : TRACE_PROBE_NO;
}

/* ---- the table ---- */

/* Indexed by enum trace_format - 1. Events are JSON Lines like many other
 * files, and a code map is plain text: they are named (?format=events,
 * ?format=pycode), never detected. */
static const struct trace_format_row rows[] = {
    {TRACE_FMT_TRACERV_BIN, "tracerv-bin", "FireSim TracerV output_format 1 (binary records)", "",
     probe_tracerv_bin, &trace_tracerv_bin_ops},
    {TRACE_FMT_TRACERV_TEXT, "tracerv-text", "FireSim TracerV output_format 0 (text)", "",
     probe_tracerv_text, &trace_tracerv_text_ops},
    {TRACE_FMT_FIREPERF, "fireperf", "FirePerf stack events (TracerV output_format 2)", "",
     probe_fireperf, &trace_fireperf_ops},
    {TRACE_FMT_SPIKE, "spike", "Spike commit log (spike -l --log-commits)", ".log", probe_spike,
     &trace_spike_ops},
    {TRACE_FMT_QEMU, "qemu", "QEMU execution log (-singlestep -d nochain,exec[,in_asm])", ".log",
     probe_qemu, &trace_qemu_ops},
    {TRACE_FMT_OOBT, "oobt", "oobprof's native trace format", ".oobt", probe_oobt, &trace_oobt_ops},
    {TRACE_FMT_EVENTS, "events", "sideband process events (JSON Lines), not instructions", ".jsonl",
     NULL, NULL},
    {TRACE_FMT_GOTRACE, "gotrace", "Go execution trace (go 1.7 to 1.26), not instructions",
     ".trace", probe_gotrace, NULL},
    {TRACE_FMT_UNIPROF, "uniprof", "uniprof stack samples (addresses), not instructions", ".txt",
     probe_uniprof, NULL},
    {TRACE_FMT_PERF_SCRIPT, "perf-script", "perf script text with callchains (perf record -g)",
     ".perf .txt", probe_perf_script, NULL},
    {TRACE_FMT_FOLDED, "folded", "folded stacks (\"a;b;c 12\", flamegraph.pl's input)",
     ".folded .txt", probe_folded, NULL},
    {TRACE_FMT_PPROF, "pprof", "pprof profile (gzipped profile.proto)", ".pb.gz", probe_pprof,
     NULL},
    {TRACE_FMT_PYCODE, "pycode", "CPython code map (tests/tools/pycode.py), not instructions",
     ".pymap", NULL, NULL},
};

enum { NROWS = sizeof(rows) / sizeof(rows[0]) };

_Static_assert(NROWS == TRACE_FMT_END - 1, "one row per enum trace_format value");

const struct trace_format_row *trace_formats(size_t *n)
{
	*n = NROWS;
	return rows;
}

const struct trace_format_row *trace_format_row(enum trace_format f)
{
	return f > TRACE_FMT_AUTO && f < TRACE_FMT_END ? &rows[f - 1] : NULL;
}

const struct trace_format_row *trace_format_find(const char *name)
{
	for (size_t i = 0; name && i < NROWS; i++)
		if (!strcmp(name, rows[i].name))
			return &rows[i];
	return NULL;
}

const char *trace_format_name(enum trace_format f)
{
	const struct trace_format_row *r = trace_format_row(f);
	return r ? r->name : f == TRACE_FMT_AUTO ? "auto" : "unknown";
}

int trace_format_parse(const char *name, enum trace_format *out)
{
	const struct trace_format_row *r = trace_format_find(name);
	if (name && !strcmp(name, "auto")) {
		*out = TRACE_FMT_AUTO;
		return 0;
	}
	if (!r || !r->ops)
		return -EINVAL;
	*out = r->fmt;
	return 0;
}

static int in_set(const struct trace_format_row *r, enum trace_format_set set)
{
	return set == TRACE_FORMATS_ALL || r->ops;
}

char *trace_format_list(char *buf, size_t size, enum trace_format_set set, const char *last_sep)
{
	size_t k = 0, left = 0;
	for (size_t i = 0; i < NROWS; i++)
		left += in_set(&rows[i], set);
	if (!size)
		return buf;
	k = (size_t)snprintf(buf, size, "auto");
	for (size_t i = 0; i < NROWS && k < size; i++) {
		if (!in_set(&rows[i], set))
			continue;
		left--;
		k += (size_t)snprintf(buf + k, size - k, "%s%s", left ? ", " : last_sep,
				      rows[i].name);
	}
	return buf;
}

const struct trace_format_row *trace_format_detect(const uint8_t *p, size_t n,
						   enum trace_format_set set)
{
	const struct trace_format_row *best = NULL;
	unsigned conf = TRACE_PROBE_NO;
	if (n >= IN_LZ4_MAGIC_LEN && !memcmp(p, IN_LZ4_MAGIC, IN_LZ4_MAGIC_LEN))
		return NULL; /* in.h decompresses one frame, not a frame in a frame */
	for (size_t i = 0; i < NROWS; i++) {
		if (!rows[i].probe || !in_set(&rows[i], set))
			continue;
		unsigned c = rows[i].probe(p, n);
		if (c > conf) { /* strictly: the earlier row keeps a tie */
			conf = c;
			best = &rows[i];
		}
	}
	return best;
}

enum trace_format trace_detect(const uint8_t *p, size_t n)
{
	const struct trace_format_row *r = trace_format_detect(p, n, TRACE_FORMATS_READ);
	return r ? r->fmt : TRACE_FMT_AUTO;
}
