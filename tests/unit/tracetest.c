/*
 * tracetest: shared by the trace reader and writer tests (test_trace.c,
 * test_oobt.c). Ground truth (counts and hashes in
 * tests/gen/readers/NAME.truth) comes from tests/tools/gen-readers.py, which
 * parses the logs and writes the TracerV layouts on its own.
 */
#include <errno.h>

#include "oobtest.h"
#include "tracetest.h"
#include "util/oob_mem.h"

#define FNVP 0x100000001b3ull

uint64_t tracet_fnv(uint64_t h, uint64_t v)
{
	return (h ^ v) * FNVP;
}

const struct tracet_fixture tracet_fixtures[] = {
    {"spike.log", "spike"},
    {"spike-2core.log", "spike-2core"},
    {"spike-l.log", "spike-l"},
    {"rdprog.qemu.log", "rdprog"},
    {"bare.qemu.log", "bare"},
    {"tv-old8-v40.bin", "tv-old8-v40"},
    {"tv-c-v40-w2.bin", "tv-c-v40-w2"},
    {"tv-c-v63-w3.bin", "tv-c-v63-w3"},
    {"tv-wide12-v63.bin", "tv-wide12-v63"},
    {"tv-text.txt", "tv-text"},
};
const size_t tracet_nfixtures = sizeof(tracet_fixtures) / sizeof(tracet_fixtures[0]);

int tracet_truth_load(const char *name, struct tracet_truth *t)
{
	char rel[256], k[64], v[64];
	snprintf(rel, sizeof(rel), "readers/%s.truth", name);
	const char *path = oobtest_gen(rel);
	FILE *f = path ? fopen(path, "r") : NULL;
	if (!f)
		return -1;
	memset(t, 0, sizeof(*t));
	while (t->n < 64 && fscanf(f, "%63s %63s", k, v) == 2) {
		if (strcmp(k, "hash_fields") == 0) {
			snprintf(t->fields, sizeof(t->fields), "%s", v);
			continue;
		}
		snprintf(t->key[t->n], sizeof(t->key[0]), "%s", k);
		t->val[t->n++] = strtoull(v, NULL, 10);
	}
	fclose(f);
	return 0;
}

uint64_t tracet_get(const struct tracet_truth *t, const char *k)
{
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->key[i], k) == 0)
			return t->val[i];
	return 0;
}

/* Reads r to the end, hashing the fields named like gen-readers.py does. */
int tracet_sum(struct trace_reader *r, const char *fields, struct tracet_sums *s, struct oob_err *e)
{
	const struct trace_batch *b;
	int rc;
	memset(s, 0, sizeof(*s));
	s->h = s->xh = TRACET_FNV0;
	int fpc = !!strstr(fields, "pc"), fin = !!strstr(fields, "insn"),
	    fpr = !!strstr(fields, "priv"), fcy = !!strstr(fields, "cycle"),
	    fha = !!strstr(fields, "hart");
	while ((rc = trace_next(r, &b, e)) > 0) {
		if (b->n < 1 || b->n > TRACE_BATCH_MAX || b->nx > TRACE_X_MAX || b->seq != s->n ||
		    (fin && !b->insn) || (fpr && !b->priv) || (fcy && !b->cycle))
			s->bad = 1;
		s->batches++;
		uint32_t xi = 0;
		for (uint32_t i = 0; i < b->n; i++) {
			if (fpc)
				s->h = tracet_fnv(s->h, b->pc[i]);
			if (fin)
				s->h = tracet_fnv(s->h, b->insn[i]);
			if (fpr) {
				s->h = tracet_fnv(s->h, b->priv[i]);
				s->priv[b->priv[i] & 3]++;
			}
			if (fcy)
				s->h = tracet_fnv(s->h, b->cycle[i]);
			if (fha)
				s->h = tracet_fnv(s->h, b->hart);
			s->harts[b->hart & 3]++;
			for (; xi < b->nx && b->x[xi].idx == i; xi++) {
				const struct trace_extra *x = &b->x[xi];
				uint64_t v[6] = {s->n, x->kind, x->num, x->addr, x->val, x->size};
				for (int j = 0; j < 6; j++)
					s->xh = tracet_fnv(s->xh, v[j]);
				s->kinds[x->kind & 7]++;
				s->csr_satp += x->kind == TRACE_X_CSR && x->num == 0x180;
				s->nx++;
			}
			s->n++;
		}
		if (xi != b->nx)
			s->bad = 1; /* extras not sorted or past n */
	}
	return rc;
}

/* Compares a reader's sums with a truth file; returns a message or NULL. */
const char *tracet_against(const struct tracet_sums *s, const struct tracet_truth *t)
{
	static char why[256];
	if (s->bad)
		return "a batch broke the contract (n, nx, seq, sorted extras)";
	if (s->n != tracet_get(t, "records") || s->h != tracet_get(t, "hash")) {
		snprintf(why, sizeof(why), "records %llu hash %llu, truth %llu %llu",
			 (unsigned long long)s->n, (unsigned long long)s->h,
			 (unsigned long long)tracet_get(t, "records"),
			 (unsigned long long)tracet_get(t, "hash"));
		return why;
	}
	if (s->nx != tracet_get(t, "extras") || s->xh != tracet_get(t, "xhash")) {
		snprintf(why, sizeof(why), "extras %llu xhash %llu, truth %llu %llu",
			 (unsigned long long)s->nx, (unsigned long long)s->xh,
			 (unsigned long long)tracet_get(t, "extras"),
			 (unsigned long long)tracet_get(t, "xhash"));
		return why;
	}
	for (int h = 0; h < 4; h++) {
		char k[32];
		snprintf(k, sizeof(k), "records_h%d", h);
		if (s->harts[h] != tracet_get(t, k))
			return "per-hart record counts differ";
	}
	return NULL;
}

/* Compares two readers record by record (pc, insn, priv, cycle, hart, extras). */
const char *tracet_same_records(struct trace_reader *a, struct trace_reader *o)
{
	static char why[600];
	const struct trace_batch *ba = NULL, *bo = NULL;
	struct oob_err e = {0};
	uint32_t ia = 0, io = 0, xa = 0, xo = 0;
	uint64_t k = 0;
	int ra = trace_next(a, &ba, &e), ro = trace_next(o, &bo, &e);
	while (ra > 0 && ro > 0) {
		if (ba->pc[ia] != bo->pc[io] || ba->hart != bo->hart ||
		    (ba->insn && (!bo->insn || ba->insn[ia] != bo->insn[io])) ||
		    (ba->priv && (!bo->priv || ba->priv[ia] != bo->priv[io])) ||
		    (ba->cycle && (!bo->cycle || ba->cycle[ia] != bo->cycle[io]))) {
			snprintf(why, sizeof(why), "record %llu differs (pc %llx vs %llx)",
				 (unsigned long long)k, (unsigned long long)ba->pc[ia],
				 (unsigned long long)bo->pc[io]);
			return why;
		}
		for (; xa < ba->nx && ba->x[xa].idx == ia; xa++, xo++) {
			const struct trace_extra *x = &ba->x[xa], *y = &bo->x[xo];
			if (xo >= bo->nx || y->idx != io || x->kind != y->kind ||
			    x->num != y->num || x->addr != y->addr || x->val != y->val ||
			    x->size != y->size ||
			    (x->text && (!y->text || strcmp(x->text, y->text))))
				return "extras differ";
		}
		if (xo < bo->nx && bo->x[xo].idx == io)
			return "extra surplus";
		k++;
		if (++ia == ba->n) {
			ra = trace_next(a, &ba, &e);
			ia = xa = 0;
		}
		if (++io == bo->n) {
			ro = trace_next(o, &bo, &e);
			io = xo = 0;
		}
	}
	if (ra != 0 || ro != 0) {
		snprintf(why, sizeof(why), "after %llu records: ends differ (%d, %d): %s",
			 (unsigned long long)k, ra, ro, e.msg);
		return why;
	}
	return NULL;
}

/* Converts a reader's trace with trace_writer; returns 0 or the error. */
int tracet_convert(const char *in, const char *out, const struct trace_write_opts *wo0,
		   struct oob_err *e)
{
	struct trace_reader *r = trace_open(in, NULL, e);
	if (!r)
		return -1;
	struct trace_write_opts wo = *wo0;
	wo.fields = trace_reader_fields(r);
	wo.source = trace_reader_format(r);
	trace_reader_clock_ratio(r, &wo.clock_num, &wo.clock_den);
	struct trace_writer *w = trace_writer_open(out, &wo, e);
	const struct trace_batch *b;
	int rc = w ? 0 : -1;
	while (!rc && (rc = trace_next(r, &b, e)) > 0)
		rc = trace_writer_put(w, b, e);
	trace_close(r);
	if (rc < 0) {
		trace_writer_abort(w);
		return rc;
	}
	return trace_writer_close(w, e);
}

const char *tracet_tmp(const char *name)
{
	return oobtest_out("readers", name);
}

struct trace_reader *tracet_open_bytes(const void *p, size_t n, struct oob_err *e)
{
	struct in_stream *s = in_open_mem(p, n, "mem", e);
	return s ? trace_open_stream(s, NULL, e) : NULL;
}

/* Reads everything; returns the final status (0 or negative) and the count. */
int tracet_drain(struct trace_reader *r, uint64_t *n, struct oob_err *e)
{
	const struct trace_batch *b;
	int rc;
	*n = 0;
	while ((rc = trace_next(r, &b, e)) > 0)
		*n += b->n;
	return rc;
}
