#include "trace/trace_merge.h"

#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"

/* One file and how much of its current batch has been delivered. */
struct src {
	struct trace_reader *r;
	const struct trace_batch *b; /* NULL: read the next batch */
	uint32_t pos, xpos, npos;    /* records, extras, insn_new entries delivered */
	uint16_t hart;		     /* of several files, this one's (opts[k].hart) */
	int done;
};

struct trace_merge {
	struct src *s;
	size_t n, cur; /* cur: the file being read when the files go one after another */
	int by_cycle;
	unsigned fields;
	struct trace_batch view;
	struct trace_extra *x; /* the view's extras and insn_new, re-indexed */
	uint32_t *insn_new;
	uint64_t seq;
};

struct trace_merge *trace_merge_open(const char *const *paths, const struct trace_opts *opts,
				     size_t n, struct oob_err *err)
{
	struct trace_merge *m = oob_xcalloc(1, sizeof(*m));
	m->s = oob_xcalloc(n ? n : 1, sizeof(*m->s));
	m->x = oob_xmalloc(TRACE_X_MAX * sizeof(*m->x));
	m->insn_new = oob_xmalloc(TRACE_BATCH_MAX * sizeof(*m->insn_new));
	m->fields = ~0u;
	for (size_t k = 0; k < n; k++, m->n++) {
		if (!(m->s[k].r = trace_open(paths[k], &opts[k], err))) {
			trace_merge_close(m);
			return NULL;
		}
		m->fields &= trace_reader_fields(m->s[k].r);
		m->s[k].hart = opts[k].hart;
	}
	m->by_cycle = n > 1 && (m->fields & TRACE_F_CYCLE);
	return m;
}

uint16_t trace_merge_hart(const char *path, size_t k)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	const char *c = strstr(base, "-C");
	char *end;
	unsigned long n = c ? strtoul(c + 2, &end, 10) : 0;
	return c && end != c + 2 && n < 65536 ? (uint16_t)n : (uint16_t)k;
}

struct trace_merge *trace_merge_open_run(const char *const *paths, const struct trace_opts *base,
					 const uint16_t *harts, size_t n, struct oob_err *err)
{
	struct trace_opts *to = oob_xcalloc(n ? n : 1, sizeof(*to));
	for (size_t k = 0; k < n; k++) {
		to[k] = *base;
		if (n > 1) {
			to[k].hart = harts ? harts[k] : trace_merge_hart(paths[k], k);
			to[k].base_clock = 1;
		}
	}
	struct trace_merge *m = trace_merge_open(paths, to, n, err);
	free(to);
	return m;
}

void trace_merge_close(struct trace_merge *m)
{
	if (!m)
		return;
	for (size_t k = 0; k < m->n; k++)
		trace_close(m->s[k].r);
	free(m->s);
	free(m->x);
	free(m->insn_new);
	free(m);
}

/* Makes sure s has records left, reading its next batch if need be:
 * 1, 0 when the file has ended, or a negative errno. */
static int fill(struct src *s, struct oob_err *err)
{
	if (s->done)
		return 0;
	if (s->b && s->pos < s->b->n)
		return 1;
	int rc = trace_next(s->r, &s->b, err);
	s->pos = s->xpos = s->npos = 0;
	if (rc <= 0) {
		s->b = NULL;
		s->done = rc == 0;
	}
	return rc;
}

/* Records [s->pos, end) of s's batch as the view. */
static const struct trace_batch *cut(struct trace_merge *m, struct src *s, uint32_t end)
{
	const struct trace_batch *b = s->b;
	struct trace_batch *v = &m->view;
	uint32_t p = s->pos;
	if (m->n == 1) { /* one file: its batches as they are, nothing to re-index */
		s->pos = end;
		m->seq += b->n;
		return b;
	}
	*v = (struct trace_batch){.n = end - p,
				  .hart = m->n > 1 ? s->hart : b->hart,
				  .pc = b->pc + p,
				  .cycle = b->cycle ? b->cycle + p : NULL,
				  .insn = b->insn ? b->insn + p : NULL,
				  .priv = b->priv ? b->priv + p : NULL,
				  .x = m->x,
				  .seq = m->seq};
	for (; s->xpos < b->nx && b->x[s->xpos].idx < end; s->xpos++) {
		m->x[v->nx] = b->x[s->xpos];
		m->x[v->nx++].idx -= p;
	}
	if (b->insn_new) {
		v->insn_new = m->insn_new;
		for (; s->npos < b->ninsn_new && b->insn_new[s->npos] < end; s->npos++)
			m->insn_new[v->ninsn_new++] = b->insn_new[s->npos] - p;
	}
	s->pos = end;
	m->seq += v->n;
	return v;
}

/* The file whose next record comes first (equal cycles: the lower index),
 * and how far its batch may go before another file's record is due. */
static int by_cycle(struct trace_merge *m, const struct trace_batch **out, struct oob_err *err)
{
	size_t first = m->n;
	for (size_t k = 0; k < m->n; k++) {
		int rc = fill(&m->s[k], err);
		if (rc < 0)
			return rc;
		if (rc && (first == m->n ||
			   m->s[k].b->cycle[m->s[k].pos] < m->s[first].b->cycle[m->s[first].pos]))
			first = k;
	}
	if (first == m->n)
		return 0;
	/* Records of `first` go while they precede every other file's next
	 * one: strictly before the files given earlier, not after the later. */
	uint64_t before = UINT64_MAX, upto = UINT64_MAX;
	for (size_t k = 0; k < m->n; k++) {
		const struct src *s = &m->s[k];
		if (k == first || !s->b)
			continue;
		uint64_t c = s->b->cycle[s->pos];
		if (k < first && c < before)
			before = c;
		if (k > first && c < upto)
			upto = c;
	}
	struct src *s = &m->s[first];
	const uint64_t *cyc = s->b->cycle;
	uint32_t end = s->pos + 1;
	while (end < s->b->n && cyc[end] < before && cyc[end] <= upto)
		end++;
	*out = cut(m, s, end);
	return 1;
}

int trace_merge_next(struct trace_merge *m, const struct trace_batch **out, struct oob_err *err)
{
	if (m->by_cycle)
		return by_cycle(m, out, err);
	for (; m->cur < m->n; m->cur++) {
		struct src *s = &m->s[m->cur];
		int rc = fill(s, err);
		if (rc < 0)
			return rc;
		if (rc) {
			*out = cut(m, s, s->b->n);
			return 1;
		}
	}
	return 0;
}

int trace_merge_by_cycle(const struct trace_merge *m)
{
	return m->by_cycle;
}

unsigned trace_merge_fields(const struct trace_merge *m)
{
	return m->n ? m->fields : 0;
}

enum trace_format trace_merge_format(const struct trace_merge *m)
{
	return m->n ? trace_reader_format(m->s[0].r) : TRACE_FMT_AUTO;
}

uint64_t trace_merge_cut_records(const struct trace_merge *m)
{
	uint64_t n = 0;
	for (size_t k = 0; k < m->n; k++)
		n += trace_reader_cut_records(m->s[k].r);
	return n;
}

uint64_t trace_merge_raw_bytes(const struct trace_merge *m)
{
	uint64_t n = 0;
	for (size_t k = 0; k < m->n; k++)
		n += trace_reader_raw_bytes(m->s[k].r);
	return n;
}
