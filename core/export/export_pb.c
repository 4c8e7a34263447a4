#include "export/export_pb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"

#define FLUSH_AT (256 * 1024)

void export_pb_raw(struct export_pb *b, const void *d, size_t n)
{
	oob_xgrow((void **)&b->p, &b->cap, b->n + n, 1);
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

void export_pb_varint(struct export_pb *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;
	while (v >= 0x80) {
		t[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	t[n++] = (uint8_t)v;
	export_pb_raw(b, t, n);
}

void export_pb_uint(struct export_pb *b, unsigned field, uint64_t v)
{
	if (v)
		export_pb_uint_set(b, field, v);
}

void export_pb_uint_set(struct export_pb *b, unsigned field, uint64_t v)
{
	export_pb_varint(b, (uint64_t)field << 3);
	export_pb_varint(b, v);
}

void export_pb_bytes(struct export_pb *b, unsigned field, const void *d, size_t n)
{
	export_pb_varint(b, (uint64_t)field << 3 | 2);
	export_pb_varint(b, n);
	export_pb_raw(b, d, n);
}

void export_pb_str(struct export_pb *b, unsigned field, const char *s)
{
	export_pb_bytes(b, field, s, strlen(s));
}

void export_pb_msg(struct export_pb *b, unsigned field, struct export_pb *m)
{
	export_pb_bytes(b, field, m->p, m->n);
	m->n = 0;
}

void export_pb_free(struct export_pb *b)
{
	free(b->p);
	*b = (struct export_pb){0};
}

/* ---- the gzip stream ---- */

int export_pb_gz_init(struct export_pb_gz *g, FILE *f)
{
	memset(g, 0, sizeof(*g));
	g->f = f;
	if (deflateInit2(&g->z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	return 0;
}

static void deflate_buf(struct export_pb_gz *g, int flush)
{
	uint8_t chunk[64 * 1024];
	g->z.next_in = g->buf.p;
	g->z.avail_in = (uInt)g->buf.n;
	do {
		g->z.next_out = chunk;
		g->z.avail_out = sizeof(chunk);
		if (deflate(&g->z, flush) == Z_STREAM_ERROR)
			g->zerr = 1;
		fwrite(chunk, 1, sizeof(chunk) - g->z.avail_out, g->f);
	} while (g->z.avail_out == 0 && !g->zerr);
	g->buf.n = 0;
}

void export_pb_gz_flush(struct export_pb_gz *g)
{
	if (g->buf.n >= FLUSH_AT)
		deflate_buf(g, Z_NO_FLUSH);
}

int export_pb_gz_finish(struct export_pb_gz *g)
{
	deflate_buf(g, Z_FINISH);
	deflateEnd(&g->z);
	export_pb_free(&g->buf);
	return g->zerr ? -EIO : 0;
}
