/*
 * trace_impl: what trace.c shares with the per-format readers
 * (trace_<format>.c) and fireperf.c. Not a public header.
 *
 * trace.c detects the format (trace_formats.c), allocates the batch arrays (with
 * TRACE_BATCH_SLACK spare records so that decoders may write a few records
 * past n unconditionally and extras arrays of TRACE_X_MAX), and calls the
 * format's ops. A format's next() fills r->pc/cycle/insn/priv/x from index 0
 * and sets r->b.n, r->b.nx and r->b.hart; trace.c does the rest (seq, NULLing
 * the fields the format does not carry, sticky errors).
 */
#ifndef OOB_TRACE_IMPL_H
#define OOB_TRACE_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/in.h"
#include "util/oob_err.h"
#include "trace/trace.h"

#define TRACE_BATCH_SLACK 64

struct trace_reader;

/* A format's reader (the ops of its row in trace_formats.c). */
struct trace_fmt_ops {
	/* Reads and checks the header if any; sets r->fields, r->desc, clock
	 * ratio and allocates r->st. 0 or negative errno + err. */
	int (*open)(struct trace_reader *r, struct oob_err *err);
	/* 1 batch, 0 end, negative errno + err. */
	int (*next)(struct trace_reader *r, struct oob_err *err);
	void (*close)(struct trace_reader *r);
};

struct trace_reader {
	const struct trace_format_row *fmt;
	const struct trace_fmt_ops *ops; /* fmt->ops */
	struct in_stream *in;
	struct trace_opts opts;
	unsigned fields;
	uint64_t clk_num, clk_den;
	char desc[256];
	struct trace_batch b;
	uint64_t *pc, *cycle;
	uint32_t *insn;
	uint32_t *insn_new; /* readers that know when bits change list those records */
	uint32_t ninsn_new;
	int has_insn_new;
	uint8_t *priv;
	struct trace_extra *x;
	uint64_t seq;
	int done;
	struct oob_err sticky;
	void *st; /* the format's state */
};

extern const struct trace_fmt_ops trace_tracerv_bin_ops;
extern const struct trace_fmt_ops trace_tracerv_text_ops;
extern const struct trace_fmt_ops trace_spike_ops;
extern const struct trace_fmt_ops trace_qemu_ops;
extern const struct trace_fmt_ops trace_oobt_ops;
extern const struct trace_fmt_ops trace_fireperf_ops;

/* Parses "# Clock Domain: NAME, Relative Frequency: M/D of Base Clock".
 * Returns 0 and the tile-to-base ratio (num = D, den = M), -EINVAL if the line
 * is not one (or M or D is 0). name (size bytes, may be NULL) gets NAME. */
int trace_clock_line_parse(const char *line, size_t n, uint64_t *num, uint64_t *den, char *name,
			   size_t size);
/* If the stream starts with a clock header line, consumes it and sets the
 * reader's ratio. 1 if there was one, 0 if not, negative errno. */
int trace_clock_header(struct trace_reader *r, struct oob_err *err);

/* Guesses a TracerV binary layout from records (header line already skipped).
 * Returns a confidence (records checked, all consistent) > 0 and fills *out,
 * or 0 when no layout fits. Thread-safe. */
unsigned trace_tracerv_guess(const uint8_t *p, size_t n, struct trace_tracerv_opts *out);

/* A TracerV binary record layout, as an opened reader found it. */
struct trace_tracerv_layout {
	unsigned slots;	  /* instruction slots per record (retire width) */
	size_t rec_bytes; /* bytes per record, the cycle word included */
	unsigned vbit;	  /* the valid bit of a slot: 40 or 63 */
};
/* The layout of r, a tracerv-bin reader past its open. */
void trace_tracerv_layout_of(const struct trace_reader *r, struct trace_tracerv_layout *out);
/* Decodes nrec whole records at p into pc and cyc (room for nrec * slots
 * each): returns the number of valid slots written. Thread-safe. */
uint32_t trace_tracerv_decode(const uint8_t *p, size_t nrec, uint64_t *pc, uint64_t *cyc,
			      const struct trace_tracerv_layout *lay);

/* Small parsing helpers for the text formats: each advances *p past what it
 * read and returns 0, or -1 (nothing matched / overflow). They never read at
 * or past end. */
static inline int trace_hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int nd = 0;
	for (; s < end; s++, nd++) {
		unsigned c = (unsigned char)*s, d;
		if (c - '0' < 10)
			d = c - '0';
		else if ((c | 0x20) - 'a' < 6)
			d = (c | 0x20) - 'a' + 10;
		else
			break;
		if (x >> 60)
			return -1;
		x = x << 4 | d;
	}
	if (!nd)
		return -1;
	*p = s;
	*v = x;
	return 0;
}

/* "0x" then hex digits. */
static inline int trace_0x(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	if (end - s < 3 || s[0] != '0' || (s[1] | 0x20) != 'x')
		return -1;
	s += 2;
	if (trace_hex(&s, end, v))
		return -1;
	*p = s;
	return 0;
}

static inline int trace_dec(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int nd = 0;
	for (; s < end && (unsigned)(*s - '0') < 10; s++, nd++) {
		unsigned d = (unsigned)(*s - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	if (!nd)
		return -1;
	*p = s;
	*v = x;
	return 0;
}

static inline void trace_skip_spaces(const char **p, const char *end)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
}

/* Matches a literal prefix. */
static inline int trace_lit(const char **p, const char *end, const char *lit, size_t n)
{
	if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0)
		return -1;
	*p += n;
	return 0;
}

#define TRACE_LIT(p, end, s) trace_lit(p, end, s, sizeof(s) - 1)

/* The error for a last line without '\n' that is provably not a whole record
 * (why: what is missing): -EINVAL naming the line and its byte offset; or 0
 * when the source may end cut (in_opts.tail_may_be_cut): the line is dropped
 * and counted, and the reader ends there. */
int trace_line_cut(struct in_stream *in, const char *fmt, const char *line, long n, const char *why,
		   struct oob_err *err);
/* The number of hex digits at s (up to e). */
static inline size_t trace_hex_digits(const char *s, const char *e)
{
	size_t k = 0;
	while (s + k < e &&
	       ((s[k] >= '0' && s[k] <= '9') || ((s[k] | 0x20) >= 'a' && (s[k] | 0x20) <= 'f')))
		k++;
	return k;
}

/* Writes a printable excerpt of a line (at most 60 chars) into buf. */
void trace_excerpt(const char *line, size_t n, char *buf, size_t size);

/*
 * Lines of a text format, with one line of look-back: a reader that reads a
 * line it cannot use yet (its batch is full, or an error must wait until the
 * good records are delivered) carries it over to the next call.
 */
struct trace_lines {
	const char *fmt; /* format name for messages */
	long max;	 /* longest line accepted */
	char *carry;	 /* max + 1 bytes */
	long carry_len;
	uint64_t carry_lineno; /* 0: nothing carried */
};

void trace_lines_init(struct trace_lines *l, const char *fmt, long max);
void trace_lines_free(struct trace_lines *l);
/* The next line and its number: the carried one first. Returns its length,
 * -1 at the end of the input, or a negative errno < -1 (err filled). */
long trace_lines_next(struct trace_lines *l, struct in_stream *in, const char **line,
		      uint64_t *lineno, struct oob_err *err);
/* Keeps line for the next call. Returns 1 (the batch at hand is complete). */
int trace_lines_carry(struct trace_lines *l, const char *line, long n, uint64_t lineno);

#endif
