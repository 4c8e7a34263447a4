/* tracetest: shared by the trace reader and writer tests (test_trace.c,
 * test_oobt.c). */
#ifndef OOB_TRACETEST_H
#define OOB_TRACETEST_H

#include <stddef.h>
#include <stdint.h>

#include "trace/trace.h"
#include "trace/trace_write.h"

/* FNV-1a over 64-bit values, as gen-readers.py hashes: start from
 * TRACET_FNV0. */
#define TRACET_FNV0 0xcbf29ce484222325ull
uint64_t tracet_fnv(uint64_t h, uint64_t v);

/* A fixture's ground truth, tests/gen/readers/NAME.truth. */
struct tracet_truth {
	int n;
	char key[64][64];
	uint64_t val[64];
	char fields[64]; /* which fields its hash covers */
};

/* What a reader gave: counts and hashes in gen-readers.py's way. */
struct tracet_sums {
	uint64_t n, h, nx, xh, harts[4], priv[4], kinds[8], csr_satp;
	uint64_t batches;
	int bad; /* a batch broke the contract */
};

/* A generated reader fixture (under tests/gen/readers) and its truth's name. */
struct tracet_fixture {
	const char *file, *truth;
};
extern const struct tracet_fixture tracet_fixtures[];
extern const size_t tracet_nfixtures;

int tracet_truth_load(const char *name, struct tracet_truth *t);
/* The value of key k, 0 when absent. */
uint64_t tracet_get(const struct tracet_truth *t, const char *k);
/* Reads r to the end, hashing the fields named like gen-readers.py does. */
int tracet_sum(struct trace_reader *r, const char *fields, struct tracet_sums *s,
	       struct oob_err *e);
/* NULL when s matches t, else what differs. */
const char *tracet_against(const struct tracet_sums *s, const struct tracet_truth *t);
/* Reads reader a and o record by record; NULL when they agree, else where
 * they first differ. */
const char *tracet_same_records(struct trace_reader *a, struct trace_reader *o);
/* Converts in to out with trace_writer; 0 or the error. */
int tracet_convert(const char *in, const char *out, const struct trace_write_opts *wo0,
		   struct oob_err *e);
/* Reads to the end; the final status (0 or negative) and the record count. */
int tracet_drain(struct trace_reader *r, uint64_t *n, struct oob_err *e);
struct trace_reader *tracet_open_bytes(const void *p, size_t n, struct oob_err *e);
/* A scratch path under tests/out. */
const char *tracet_tmp(const char *name);

#endif
