/* Fuzz target: every trace reader. The bytes are read with format
 * auto-detection, then once more forced to one format (chosen by the input's
 * length) so that each parser also sees inputs it would not detect, and
 * as an oobt piece that starts at a sync point (trace_split). LZ4
 * input is also decompressed on 2 threads (lz4par), which must give the
 * sequential bytes whenever both succeed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/in.h"
#include "util/lz4par.h"
#include "util/oob_mem.h"
#include "trace/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_all(const uint8_t *data, size_t size, enum trace_format f, int piece)
{
	struct oob_err e;
	struct trace_opts o = {.format = f, .oobt_piece = {piece, 7, piece}};
	struct in_stream *s = in_open_mem(data, size, "fuzz", &e);
	struct trace_reader *r = s ? trace_open_stream(s, &o, &e) : NULL;
	const struct trace_batch *b;
	if (!r)
		return;
	(void)trace_reader_describe(r);
	while (trace_next(r, &b, &e) > 0) {
		/* touch what the contract promises */
		volatile uint64_t sink = b->pc[b->n - 1] + b->seq;
		for (uint32_t i = 0; i < b->nx; i++)
			sink += b->x[i].idx < b->n ? b->x[i].val : 0;
		if (b->x && b->nx && b->x[b->nx - 1].text)
			sink += (uint8_t)b->x[b->nx - 1].text[0];
		(void)sink;
	}
	trace_close(r);
}

struct src {
	const uint8_t *p;
	size_t n, pos;
};

static long src_read(void *ctx, uint8_t *dst, size_t n, struct oob_err *err)
{
	struct src *m = ctx;
	size_t k = m->n - m->pos < n ? m->n - m->pos : n;
	memcpy(dst, m->p + m->pos, k);
	m->pos += k;
	return (long)k;
}

enum { CMP_MAX = 16u << 20 };

/* The sequential bytes (NULL if in fails), at most CMP_MAX. */
static uint8_t *sequential(const uint8_t *data, size_t size, size_t *n)
{
	struct oob_err e;
	struct in_stream *s = in_open_mem(data, size, "fuzz", &e);
	uint8_t *out = NULL;
	size_t cap = 0;
	const uint8_t *p;
	long k = s ? 0 : -1;
	*n = 0;
	while (s && (k = in_peek(s, &p, IN_WINDOW, &e)) > 0 && *n + (size_t)k <= CMP_MAX) {
		oob_xgrow((void **)&out, &cap, *n + (size_t)k, 1);
		memcpy(out + *n, p, (size_t)k);
		*n += (size_t)k;
		in_consume(s, (size_t)k);
	}
	in_close(s);
	if (k != 0) {
		free(out);
		return NULL;
	}
	return out ? out : oob_xmalloc(1);
}

static void parallel_lz4(const uint8_t *data, size_t size)
{
	size_t n, got = 0;
	uint8_t *want = sequential(data, size, &n);
	struct src m = {data, size, 0};
	struct oob_err e;
	struct lz4par *p = lz4par_new(2, src_read, &m, NULL, 0, "fuzz", &e);
	const uint8_t *o;
	long k = -1;
	int same = 1;
	while (p && (k = lz4par_next(p, &o, &e)) > 0 && got + (size_t)k <= CMP_MAX) {
		same &= want && got + (size_t)k <= n && memcmp(want + got, o, (size_t)k) == 0;
		got += (size_t)k;
	}
	lz4par_free(p);
	if (want && k == 0 && (!same || got != n))
		abort(); /* both read the whole input, not the same bytes */
	free(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= IN_LZ4_MAGIC_LEN && memcmp(data, IN_LZ4_MAGIC, IN_LZ4_MAGIC_LEN) == 0)
		parallel_lz4(data, size);
	read_all(data, size, TRACE_FMT_AUTO, 0);
	read_all(data, size, (enum trace_format)(1 + size % TRACE_FMT_OOBT), 0);
	/* oobt as a piece after a sync point (trace_split): SYNC first, no END */
	if (size >= 8 && !memcmp(data, "\x89OOBT", 5))
		read_all(data, size, TRACE_FMT_OOBT, 1);
	return 0;
}
