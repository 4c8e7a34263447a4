#include "trace/trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"
#include "trace/trace_impl.h"

enum { DETECT_BYTES = 64 * 1024 };

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
				   r->fmt->name);
	size_t len = (size_t)(nl - p);
	if (len && p[len - 1] == '\r')
		len--;
	if (trace_clock_line_parse((const char *)p, len, &r->clk_num, &r->clk_den, NULL, 0)) {
		char ex[256];
		trace_excerpt((const char *)p, len, ex, sizeof(ex));
		return oob_err_set(err, -EINVAL,
				   "%s: line 1: expected \"# Clock Domain: NAME, Relative "
				   "Frequency: M/D of Base Clock\", got \"%s\"",
				   r->fmt->name, ex);
	}
	const char *line;
	long k = in_getline(r->in, &line, err);
	return k < -1 ? (int)k : 1;
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

/* FirePerf logs open (so that their format is known) but hold no
 * instructions. */
const struct trace_fmt_ops trace_fireperf_ops = {fireperf_open, fireperf_next, fireperf_close};

/* What an input that is no trace evidently is, and what to do instead. */
static const struct {
	const char *magic;
	size_t n;
	const char *what;
} not_traces[] = {
    {"\xfd"
     "7zXZ\0",
     6, "xz-compressed data: decompress it first (xz -dc FILE >TRACE)"},
    {"\x1f\x8b", 2, "gzip-compressed data: decompress it first (gzip -dc FILE >TRACE)"},
    {"\x28\xb5\x2f\xfd", 4, "zstd-compressed data: decompress it first (zstd -dc FILE >TRACE)"},
    {"BZh", 3, "bzip2-compressed data: decompress it first (bzip2 -dc FILE >TRACE)"},
    {"go 1.", 5,
     "a Go execution trace: read it with `oobprof gotrace`, or give it beside the "
     "instruction trace with --gotrace"},
    {"\x7f"
     "ELF",
     4, "an ELF binary: give it with --elf"},
};

static int detect(struct trace_reader *r, enum trace_format *f, struct oob_err *err)
{
	const uint8_t *p;
	long n = in_peek(r->in, &p, DETECT_BYTES, err);
	if (n < 0)
		return (int)n;
	*f = trace_detect(p, (size_t)n);
	if (*f != TRACE_FMT_AUTO)
		return 0;
	for (size_t i = 0; i < sizeof(not_traces) / sizeof(not_traces[0]); i++)
		if ((size_t)n >= not_traces[i].n &&
		    !memcmp(p, not_traces[i].magic, not_traces[i].n))
			return oob_err_set(err, -EINVAL, "not a trace: %s", not_traces[i].what);
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
	r->fmt = trace_format_row(f);
	if (!r->fmt || !r->fmt->ops) {
		oob_err_set(err, -EINVAL, "unknown trace format %d", (int)f);
		goto fail;
	}
	r->ops = r->fmt->ops;
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
					 r->fmt->name);
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
	return r->fmt->fmt;
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

unsigned trace_reader_cut_records(const struct trace_reader *r)
{
	return in_cut_tail(r->in) > 0;
}

const char *trace_reader_describe(const struct trace_reader *r)
{
	return r->desc;
}

int trace_line_cut(struct in_stream *in, const char *fmt, const char *line, long n, const char *why,
		   struct oob_err *err)
{
	if (in_drop_cut_tail(in))
		return 0;
	char ex[256];
	trace_excerpt(line, (size_t)n, ex, sizeof(ex));
	return oob_err_set(err, -EINVAL,
			   "%s: line %" PRIu64 " (byte %" PRIu64
			   "): the last record is cut short (%s): \"%s\"",
			   fmt, in_lineno(in), in_line_offset(in), why, ex);
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
