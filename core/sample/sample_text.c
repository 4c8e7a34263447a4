/*
 * sample_text: the line-based sampled formats: uniprof address stacks,
 * `perf script` callchains, folded stacks. docs/formats/SAMPLES.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sample/sample_impl.h"

/* A line cursor over buf[0..n): *l, *len (without "\r\n"), 1-based *no. */
struct lines {
	const char *p, *end;
	uint64_t no;
};

static int next_line(struct lines *c, const char **l, size_t *len)
{
	if (c->p >= c->end)
		return 0;
	const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
	const char *e = nl ? nl : c->end;
	*l = c->p;
	*len = (size_t)(e - c->p);
	if (*len && (*l)[*len - 1] == '\r')
		(*len)--;
	c->p = nl ? nl + 1 : c->end;
	c->no++;
	return 1;
}

static size_t trim_end(const char *l, size_t len)
{
	while (len && (l[len - 1] == ' ' || l[len - 1] == '\t'))
		len--;
	return len;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 32;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Hex digits at l[*i..): value in *v; 0 if none or more than 16. */
static int parse_hex(const char *l, size_t len, size_t *i, uint64_t *v)
{
	size_t s = *i;
	uint64_t x = 0;
	while (*i < len && hexval(l[*i]) >= 0 && *i - s < 17)
		x = x << 4 | (uint64_t)hexval(l[(*i)++]);
	*v = x;
	return *i > s && *i - s <= 16;
}

/* A quoted excerpt of a bad line for messages. */
#define EXCERPT(l, len) (int)((len) > 60 ? 60 : (len)), (l)

/* ---- uniprof ---- */

int sample_read_uniprof(struct sample_builder *b, const char *buf, size_t n, struct oob_err *err)
{
	struct lines c = {buf, buf + n, 0};
	const char *l;
	size_t len, pending = 0;
	while (next_line(&c, &l, &len)) {
		len = trim_end(l, len);
		size_t i = 2;
		uint64_t a;
		/* oobprof sample's join of a kernel stack with the context its
		 * trap interrupted: a marker frame, as the exact profile has */
		if (pending && len > 9 && !memcmp(l, "# trap [", 8) && l[len - 1] == ']') {
			sample_push_name(b, l + 7, len - 7, PROFILE_FRAME_MARKER);
			continue;
		}
		if (!len || l[0] == '#')
			continue;
		if (len == 1 && (l[0] == '1' || l[0] == '0')) {
			sample_end(b, 1, l[0] == '1' ? SAMPLE_OK : SAMPLE_FAILED);
			pending = 0;
		} else if (len > 2 && l[0] == '0' && (l[1] | 32) == 'x' &&
			   parse_hex(l, len, &i, &a) && i == len) {
			sample_push_addr(b, a, NULL, 0, NULL, 0);
			pending++;
		} else {
			return oob_err_set(err, -EINVAL,
					   "line %" PRIu64
					   ": expected 0x<address>, 1 or 0, got \"%.*s\"",
					   c.no, EXCERPT(l, len));
		}
	}
	if (pending) /* a file cut inside its last sample */
		sample_end(b, 1, SAMPLE_TRUNCATED);
	return 0;
}

/* ---- perf script ---- */

/* One callchain line "\t<hex> [sym[+0xoff]] (dso)" into b. */
static int perf_frame(struct sample_builder *b, const char *l, size_t len, uint64_t no,
		      struct oob_err *err)
{
	size_t i = 0;
	uint64_t a;
	while (i < len && (l[i] == ' ' || l[i] == '\t'))
		i++;
	if (!parse_hex(l, len, &i, &a) || (i < len && l[i] != ' '))
		return oob_err_set(err, -EINVAL,
				   "line %" PRIu64 ": expected a callchain entry \"<hex address> "
				   "symbol (dso)\", got \"%.*s\"",
				   no, EXCERPT(l, len));
	while (i < len && l[i] == ' ')
		i++;
	const char *sym = l + i, *dso = NULL;
	size_t slen = len - i, dlen = 0;
	if (slen && sym[slen - 1] == ')') { /* the dso, in the last parentheses */
		size_t k = slen - 1;
		while (k > 0 && sym[k] != '(')
			k--;
		if (sym[k] == '(') {
			dso = sym + k + 1;
			dlen = slen - k - 2;
			slen = trim_end(sym, k);
		}
	}
	for (size_t k = slen; k > 0; k--) /* perf's "+0x1b" offset */
		if (sym[k - 1] == '+') {
			slen = k - 1;
			break;
		}
	if (slen == 9 && !memcmp(sym, "[unknown]", 9))
		slen = 0;
	sample_push_addr(b, a, sym, slen, dso, dlen);
	return 0;
}

int sample_read_perf(struct sample_builder *b, const char *buf, size_t n, struct oob_err *err)
{
	struct lines c = {buf, buf + n, 0};
	const char *l;
	size_t len, depth = 0;
	uint64_t head = 0; /* line of the current sample's header, 0 outside one */
	int rc;
	while (next_line(&c, &l, &len)) {
		len = trim_end(l, len);
		if (head && len && (l[0] == '\t' || l[0] == ' ')) {
			if ((rc = perf_frame(b, l, len, c.no, err)) < 0)
				return rc;
			depth++;
			continue;
		}
		if (head && !depth)
			return oob_err_set(err, -EINVAL,
					   "line %" PRIu64
					   ": sample without a callchain (record with "
					   "perf record -g)",
					   head);
		if (head)
			sample_end(b, 1,
				   depth >= SAMPLE_PERF_MAX_STACK ? SAMPLE_TRUNCATED : SAMPLE_OK);
		head = depth = 0;
		if (!len || l[0] == '#')
			continue;
		if (l[0] == ' ' || l[0] == '\t' || l[len - 1] != ':')
			return oob_err_set(err, -EINVAL,
					   "line %" PRIu64 ": expected a sample header \"comm pid "
					   "time: ... event:\", got \"%.*s\"",
					   c.no, EXCERPT(l, len));
		head = c.no;
	}
	if (head && !depth)
		return oob_err_set(err, -EINVAL,
				   "line %" PRIu64 ": sample without a callchain (record with perf "
				   "record -g)",
				   head);
	if (head)
		sample_end(b, 1, depth >= SAMPLE_PERF_MAX_STACK ? SAMPLE_TRUNCATED : SAMPLE_OK);
	return 0;
}

/* ---- folded ---- */

/* profile_write_folded's annotations: "_[k]" kernel, "_[i]" inlined. */
static unsigned folded_kind(const char *f, size_t *len)
{
	if (*len > 4 && f[*len - 4] == '_' && f[*len - 3] == '[' && f[*len - 1] == ']') {
		char k = f[*len - 2];
		if (k == 'k' || k == 'i' || k == 'j') {
			*len -= 4;
			return k == 'k'	  ? PROFILE_FRAME_KERNEL
			       : k == 'i' ? PROFILE_FRAME_INLINE
					  : PROFILE_FRAME_USER;
		}
	}
	return PROFILE_FRAME_USER;
}

int sample_read_folded(struct sample_builder *b, const char *buf, size_t n, struct oob_err *err)
{
	struct lines c = {buf, buf + n, 0};
	const char *l;
	size_t len;
	while (next_line(&c, &l, &len)) {
		len = trim_end(l, len);
		if (!len || l[0] == '#')
			continue;
		size_t d = len;
		uint64_t w = 0;
		while (d && l[d - 1] >= '0' && l[d - 1] <= '9')
			d--;
		if (d == len || len - d > 19 || !d || l[d - 1] != ' ')
			return oob_err_set(err, -EINVAL,
					   "line %" PRIu64
					   ": expected \"frame;frame;... COUNT\", got "
					   "\"%.*s\"",
					   c.no, EXCERPT(l, len));
		w = strtoull(l + d, NULL, 10);
		size_t stack = trim_end(l, d - 1);
		/* Frames are root first; the builder wants innermost first. */
		size_t e = stack;
		for (size_t k = stack + 1; k-- > 0;) {
			if (k == 0 || l[k - 1] == ';') {
				size_t flen = e - k;
				unsigned kind = folded_kind(l + k, &flen);
				if (flen)
					sample_push_name(b, l + k, flen, kind);
				e = k ? k - 1 : 0;
			}
		}
		sample_end(b, w, SAMPLE_OK);
	}
	return 0;
}
