#include "trace/trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"
#include "trace/oobt.h"
#include "trace/trace_impl.h"

static const char *const fmt_names[] = {
    [TRACE_FMT_AUTO] = "auto",
    [TRACE_FMT_TRACERV_BIN] = "tracerv-bin",
    [TRACE_FMT_TRACERV_TEXT] = "tracerv-text",
    [TRACE_FMT_FIREPERF] = "fireperf",
    [TRACE_FMT_SPIKE] = "spike",
    [TRACE_FMT_QEMU] = "qemu",
    [TRACE_FMT_OOBT] = "oobt",
};

enum { NFMT = sizeof(fmt_names) / sizeof(fmt_names[0]), DETECT_BYTES = 64 * 1024 };

const char *trace_format_name(enum trace_format f)
{
	return (unsigned)f < NFMT ? fmt_names[f] : "unknown";
}

int trace_format_parse(const char *name, enum trace_format *out)
{
	for (unsigned i = 0; i < NFMT; i++) {
		if (name && strcmp(name, fmt_names[i]) == 0) {
			*out = (enum trace_format)i;
			return 0;
		}
	}
	return -EINVAL;
}

void trace_excerpt(const char *line, size_t n, char *buf, size_t size)
{
	size_t j = 0;
	for (size_t i = 0; i < n && i < 60 && j + 5 < size; i++) {
		unsigned char c = (unsigned char)line[i];
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			buf[j++] = (char)c;
		else
			j += (size_t)snprintf(buf + j, size - j, "\\x%02x", c);
	}
	if (n > 60 && j + 4 < size) {
		memcpy(buf + j, "...", 3);
		j += 3;
	}
	buf[j < size ? j : size - 1] = '\0';
}

int trace_clock_line_parse(const char *line, size_t n, uint64_t *num, uint64_t *den, char *name,
			   size_t size)
{
	static const char rel[] = ", Relative Frequency: ";
	const char *p = line, *end = line + n;
	uint64_t m, d;
	if (TRACE_LIT(&p, end, "# Clock Domain: "))
		return -EINVAL;
	const char *q = p;
	while (q + sizeof(rel) - 1 <= end && memcmp(q, rel, sizeof(rel) - 1) != 0)
		q++;
	if (q + sizeof(rel) - 1 > end)
		return -EINVAL;
	if (name && size) {
		size_t k = (size_t)(q - p) < size - 1 ? (size_t)(q - p) : size - 1;
		memcpy(name, p, k);
		name[k] = '\0';
	}
	p = q + sizeof(rel) - 1;
	if (trace_dec(&p, end, &m) || TRACE_LIT(&p, end, "/") || trace_dec(&p, end, &d) ||
	    TRACE_LIT(&p, end, " of Base Clock"))
		return -EINVAL;
	trace_skip_spaces(&p, end);
	if (p != end || !m || !d)
		return -EINVAL;
	*num = d;
	*den = m;
	return 0;
}

int trace_clock_header(struct trace_reader *r, struct oob_err *err)
{
	static const char pre[] = "# Clock Domain:";
	const uint8_t *p;
	long n = in_peek(r->in, &p, 4096, err);
	if (n < 0)
		return (int)n;
	if ((size_t)n < sizeof(pre) - 1 || memcmp(p, pre, sizeof(pre) - 1) != 0)
		return 0;
	const uint8_t *nl = memchr(p, '\n', (size_t)n);
	if (!nl)
		return oob_err_set(err, -EINVAL,
				   "%s: line 1: clock header line not ended within 4096 bytes",
				   trace_format_name(r->ops->fmt));
	size_t len = (size_t)(nl - p);
	if (len && p[len - 1] == '\r')
		len--;
	if (trace_clock_line_parse((const char *)p, len, &r->clk_num, &r->clk_den, NULL, 0)) {
		char ex[256];
		trace_excerpt((const char *)p, len, ex, sizeof(ex));
		return oob_err_set(err, -EINVAL,
				   "%s: line 1: expected \"# Clock Domain: NAME, Relative "
				   "Frequency: M/D of Base Clock\", got \"%s\"",
				   trace_format_name(r->ops->fmt), ex);
	}
	const char *line;
	long k = in_getline(r->in, &line, err);
	return k < -1 ? (int)k : 1;
}

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

/* The first text lines decide; qemu logs may open with in_asm blocks. */
static enum trace_format detect_text(const uint8_t *p, size_t n)
{
	size_t i = 0;
	for (int lines = 0; i < n && lines < 400; lines++) {
		size_t e = line_end(p, i, n), len = e - i;
		const uint8_t *l = p + i;
		i = e + 1;
		if (len && l[len - 1] == '\r')
			len--;
		if (!len)
			continue;
		if (word_num_colon(l, len, "core"))
			return TRACE_FMT_SPIKE;
		if (word_num_colon(l, len, "Trace"))
			return TRACE_FMT_QEMU;
		if (starts(l, len, "Cycle: "))
			return TRACE_FMT_TRACERV_TEXT;
		if (starts(l, len, "Indent: ") || starts(l, len, "WARN: STACK ZEROED"))
			return TRACE_FMT_FIREPERF;
		/* in_asm and other QEMU -d lines before the first Trace line */
		if (starts(l, len, "----------------") || starts(l, len, "IN:") ||
		    starts(l, len, "Priv:") || starts(l, len, "0x") ||
		    starts(l, len, "Stopped execution") ||
		    starts(l, len, "riscv_cpu_do_interrupt") || starts(l, len, "cpu_io_recompile"))
			continue;
		return TRACE_FMT_AUTO;
	}
	return TRACE_FMT_AUTO;
}

enum trace_format trace_detect(const uint8_t *p, size_t n)
{
	struct trace_tracerv_opts lay;
	if (n >= OOBT_MAGIC_LEN && memcmp(p, OOBT_MAGIC, OOBT_MAGIC_LEN) == 0)
		return TRACE_FMT_OOBT;
	if (n >= IN_LZ4_MAGIC_LEN && memcmp(p, IN_LZ4_MAGIC, IN_LZ4_MAGIC_LEN) == 0)
		return TRACE_FMT_AUTO;
	if (starts(p, n, "# Clock Domain:")) {
		size_t e = line_end(p, 0, n);
		if (e == n)
			return TRACE_FMT_AUTO;
		const uint8_t *rest = p + e + 1;
		size_t rn = n - e - 1;
		if (!rn)
			return TRACE_FMT_TRACERV_BIN; /* a header and no record yet */
		enum trace_format f = detect_text(rest, rn);
		if (f == TRACE_FMT_TRACERV_TEXT || f == TRACE_FMT_FIREPERF)
			return f;
		return trace_tracerv_guess(rest, rn, &lay) ? TRACE_FMT_TRACERV_BIN : TRACE_FMT_AUTO;
	}
	enum trace_format f = detect_text(p, n);
	if (f != TRACE_FMT_AUTO)
		return f;
	/* No header line: accept binary TracerV only when the layout is clear. */
	return trace_tracerv_guess(p, n, &lay) >= 16 ? TRACE_FMT_TRACERV_BIN : TRACE_FMT_AUTO;
}

static int fireperf_open(struct trace_reader *r, struct oob_err *err)
{
	int rc = trace_clock_header(r, err);
	r->fields = 0;
	snprintf(r->desc, sizeof(r->desc), "fireperf: stack events (no instructions)");
	return rc < 0 ? rc : 0;
}

static int fireperf_next(struct trace_reader *r, struct oob_err *err)
{
	return oob_err_set(err, -ENOTSUP,
			   "fireperf: the file holds FirePerf stack events, not instructions "
			   "(read it with fireperf_open_stream)");
}

static void fireperf_close(struct trace_reader *r)
{
}

static const struct trace_fmt_ops fireperf_ops = {TRACE_FMT_FIREPERF, fireperf_open, fireperf_next,
						  fireperf_close};

static const struct trace_fmt_ops *ops_of(enum trace_format f)
{
	switch (f) {
	case TRACE_FMT_TRACERV_BIN:
		return &trace_tracerv_bin_ops;
	case TRACE_FMT_TRACERV_TEXT:
		return &trace_tracerv_text_ops;
	case TRACE_FMT_FIREPERF:
		return &fireperf_ops;
	case TRACE_FMT_SPIKE:
		return &trace_spike_ops;
	case TRACE_FMT_QEMU:
		return &trace_qemu_ops;
	case TRACE_FMT_OOBT:
		return &trace_oobt_ops;
	default:
		return NULL;
	}
}

static int detect(struct trace_reader *r, enum trace_format *f, struct oob_err *err)
{
	const uint8_t *p;
	long n = in_peek(r->in, &p, DETECT_BYTES, err);
	if (n < 0)
		return (int)n;
	*f = trace_detect(p, (size_t)n);
	if (*f != TRACE_FMT_AUTO)
		return 0;
	char hex[3 * 16 + 1] = "", txt[128];
	for (long i = 0; i < n && i < 16; i++)
		snprintf(hex + 3 * i, 4, "%02x ", p[i]);
	if (n)
		hex[3 * (n < 16 ? n : 16) - 1] = '\0';
	trace_excerpt((const char *)p, (size_t)(n < 32 ? n : 32), txt, sizeof(txt));
	return oob_err_set(err, -EINVAL, "unknown trace format (first bytes: %s%s \"%s\")",
			   n ? hex : "none: empty input", n ? "," : "", txt);
}

static void alloc_batch(struct trace_reader *r)
{
	size_t n = TRACE_BATCH_MAX + TRACE_BATCH_SLACK;
	r->pc = oob_xmalloc(n * sizeof(*r->pc));
	r->cycle = oob_xmalloc(n * sizeof(*r->cycle));
	r->insn = oob_xmalloc(n * sizeof(*r->insn));
	r->insn_new = oob_xmalloc(n * sizeof(*r->insn_new));
	r->priv = oob_xmalloc(n * sizeof(*r->priv));
	r->x = oob_xmalloc((TRACE_X_MAX + TRACE_BATCH_SLACK) * sizeof(*r->x));
}

struct trace_reader *trace_open_stream(struct in_stream *s, const struct trace_opts *opts,
				       struct oob_err *err)
{
	struct trace_reader *r = oob_xcalloc(1, sizeof(*r));
	enum trace_format f;
	r->in = s;
	if (opts)
		r->opts = *opts;
	r->clk_num = r->clk_den = 1;
	f = r->opts.format;
	if (f == TRACE_FMT_AUTO && detect(r, &f, err) < 0)
		goto fail;
	r->ops = ops_of(f);
	if (!r->ops) {
		oob_err_set(err, -EINVAL, "unknown trace format %d", (int)f);
		goto fail;
	}
	alloc_batch(r);
	if (r->ops->open(r, err) < 0)
		goto fail;
	if (in_is_lz4(s)) {
		size_t k = strlen(r->desc);
		snprintf(r->desc + k, sizeof(r->desc) - k, ", lz4");
	}
	return r;
fail:
	oob_err_prefix(err, "%s", in_name(s));
	trace_close(r);
	return NULL;
}

struct trace_reader *trace_open(const char *path, const struct trace_opts *opts,
				struct oob_err *err)
{
	struct in_stream *s = in_open(path, opts ? &opts->in : NULL, err);
	return s ? trace_open_stream(s, opts, err) : NULL;
}

void trace_close(struct trace_reader *r)
{
	if (!r)
		return;
	if (r->ops)
		r->ops->close(r);
	in_close(r->in);
	free(r->pc);
	free(r->cycle);
	free(r->insn);
	free(r->insn_new);
	free(r->priv);
	free(r->x);
	free(r);
}

int trace_next(struct trace_reader *r, const struct trace_batch **out, struct oob_err *err)
{
	if (r->sticky.code) {
		if (err)
			*err = r->sticky;
		return r->sticky.code;
	}
	if (r->done)
		return 0;
	struct oob_err e;
	oob_err_clear(&e);
	r->b.n = r->b.nx = 0;
	r->ninsn_new = 0;
	int rc = r->ops->next(r, &e);
	if (rc < 0 || (rc > 0 && !r->b.n)) {
		if (rc >= 0)
			rc = oob_err_set(&e, -EIO, "%s: reader returned an empty batch",
					 trace_format_name(r->ops->fmt));
		/* Name the file, unless the message already starts with it. */
		if (strncmp(e.msg, in_name(r->in), strlen(in_name(r->in))) != 0)
			oob_err_prefix(&e, "%s", in_name(r->in));
		r->sticky = e;
		/* The records decoded before the failure are good: deliver them,
		 * the error comes with the next call. */
		if (!r->b.n) {
			if (err)
				*err = e;
			return rc;
		}
		rc = 1;
	}
	if (rc == 0) {
		r->done = 1;
		return 0;
	}
	struct trace_batch *b = &r->b;
	b->pc = r->pc;
	b->cycle = (r->fields & TRACE_F_CYCLE) ? r->cycle : NULL;
	if (b->cycle && r->opts.base_clock && r->clk_den && r->clk_num != r->clk_den)
		for (uint32_t i = 0; i < b->n; i++)
			r->cycle[i] =
			    (uint64_t)((unsigned __int128)r->cycle[i] * r->clk_num / r->clk_den);
	b->insn = (r->fields & TRACE_F_INSN) ? r->insn : NULL;
	b->insn_new = b->insn && r->has_insn_new ? r->insn_new : NULL;
	b->ninsn_new = r->ninsn_new;
	b->priv = (r->fields & TRACE_F_PRIV) ? r->priv : NULL;
	b->x = r->x;
	b->seq = r->seq;
	r->seq += b->n;
	*out = b;
	return 1;
}

enum trace_format trace_reader_format(const struct trace_reader *r)
{
	return r->ops->fmt;
}

unsigned trace_reader_fields(const struct trace_reader *r)
{
	return r->fields;
}

void trace_reader_clock_ratio(const struct trace_reader *r, uint64_t *num, uint64_t *den)
{
	*num = r->clk_num;
	*den = r->clk_den;
}

uint64_t trace_reader_raw_bytes(const struct trace_reader *r)
{
	return in_raw_bytes(r->in);
}

const char *trace_reader_describe(const struct trace_reader *r)
{
	return r->desc;
}

void trace_lines_init(struct trace_lines *l, const char *fmt, long max)
{
	memset(l, 0, sizeof(*l));
	l->fmt = fmt;
	l->max = max;
	l->carry = oob_xmalloc((size_t)max + 1);
}

void trace_lines_free(struct trace_lines *l)
{
	free(l->carry);
	l->carry = NULL;
}

long trace_lines_next(struct trace_lines *l, struct in_stream *in, const char **line,
		      uint64_t *lineno, struct oob_err *err)
{
	if (l->carry_lineno) {
		*line = l->carry;
		*lineno = l->carry_lineno;
		l->carry_lineno = 0;
		return l->carry_len;
	}
	long n = in_getline(in, line, err);
	*lineno = in_lineno(in);
	if (n > l->max)
		return oob_err_set(err, -EINVAL, "%s: line %" PRIu64 " is longer than %ld bytes",
				   l->fmt, *lineno, l->max);
	return n;
}

int trace_lines_carry(struct trace_lines *l, const char *line, long n, uint64_t lineno)
{
	memmove(l->carry, line, (size_t)n);
	l->carry[n] = '\0';
	l->carry_len = n;
	l->carry_lineno = lineno;
	return 1;
}
