/*
 * test_evidx: the event index's record times (evidx.h) on cycle patterns
 * that exercise its bit-packed blocks (docs/formats/EVIDX.md): runs of
 * equal cycles, steps of one, stalls that go to the exception list, deltas
 * wider than 56 bits, a clock that steps back (zigzagged deltas), several
 * harts interleaved, checkpoints. For every
 * time around every record, evidx_pos must give what a plain scan of the
 * hart's cycles gives: the first record whose cycle is at or after t.
 * Also: the index is smaller than the varint deltas it replaced, and a
 * damaged one is refused or read without harm.
 */
#include "recon/evidx.h"
#include "recon/evlog.h"
#include "oobtest.h"

#define HARTS	4
#define BATCHES 40

struct hart_truth {
	uint64_t *cyc;
	size_t n;
};

/* Deterministic noise (xorshift). */
static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The next delta of hart h's pattern. */
static uint64_t delta(unsigned h, uint64_t *s, size_t i)
{
	uint64_t r = rng(s);
	switch (h) {
	case 0: /* a superscalar core: 0 or 1, a rare stall */
		return r % 97 == 0 ? 200 + r % 5000 : r & 1;
	case 1: /* one cycle a record, long runs of equal deltas */
		return i % 1000 < 990 ? 1 : 1ull << 33;
	case 2: /* wide deltas: the 64-bit path */
		return (1ull << 57) + (r & 0xffff);
	default: /* a clock that steps back once: zigzagged deltas */
		return i == 30 ? (uint64_t)-40 : 1 + (r & 3);
	}
}

static uint64_t brute_pos(const struct hart_truth *h, uint64_t t, uint64_t *cyc)
{
	for (size_t i = 0; i < h->n; i++)
		if (h->cyc[i] >= t) {
			*cyc = h->cyc[i];
			return i;
		}
	*cyc = h->n ? h->cyc[h->n - 1] : 0;
	return h->n;
}

/* Every byte of the index changed in turn (a sample of them): opening it
 * and asking times either works or says what is wrong; never a crash, a
 * read out of bounds or a hang (ASan and UBSan watch). */
static void damage(const char *path, size_t size)
{
	uint8_t *good = malloc(size), *bad = malloc(size);
	FILE *f = fopen(path, "rb");
	if (!f || fread(good, 1, size, f) != size)
		abort();
	fclose(f);
	uint64_t s = 42;
	for (int round = 0; round < 300; round++) {
		memcpy(bad, good, size);
		size_t at = (size_t)(rng(&s) % size);
		bad[at] ^= (uint8_t)(1 + rng(&s) % 255);
		f = fopen(path, "wb");
		fwrite(bad, 1, size, f);
		fclose(f);
		struct oob_err err = {0};
		struct evidx *ix = evidx_open(path, &err);
		for (unsigned h = 0; ix && h < HARTS + 1; h++)
			for (uint64_t t = 0; t < 64; t++) {
				uint64_t pos, cyc, when = t * (rng(&s) >> 8);
				evidx_pos(ix, h, when, &pos, &cyc, &err);
			}
		evidx_free(ix);
	}
	f = fopen(path, "wb"); /* the good index again: the test reads on */
	fwrite(good, 1, size, f);
	fclose(f);
	free(good);
	free(bad);
}

static void packed_times_are_exact(void)
{
	struct oob_err err = {0};
	struct evlog *log = evlog_new(NULL, 0, &err);
	CHECK(log);
	char path[] = "/tmp/test_evidx.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	struct evidx_writer *w = evidx_writer_new(path, log, 5000, &err);
	CHECK(w);
	struct hart_truth t[HARTS] = {0};
	uint64_t seed = 0x9e3779b97f4a7c15ull, gseq = 0, varint_bytes = 0;
	uint64_t last[HARTS] = {0};
	static uint64_t cyc[TRACE_BATCH_MAX], pc[TRACE_BATCH_MAX];
	for (unsigned k = 0; k < BATCHES * HARTS; k++) {
		unsigned h = k % HARTS;
		/* hart 2's wide deltas would wrap 64 bits: a few short batches;
		 * hart 3, one batch after every checkpoint (whose search takes
		 * each hart's time to grow) */
		uint32_t n = h == 2   ? (k < 3 * HARTS ? 5 : 0)
			     : h == 3 ? (k == BATCHES * HARTS - 1 ? 60 : 0)
				      : 1 + (uint32_t)(rng(&seed) % 4096);
		if (!n)
			continue;
		for (uint32_t i = 0; i < n; i++) {
			uint64_t d = t[h].n + i ? delta(h, &seed, t[h].n + i) : 1000;
			cyc[i] = last[h] += d;
			varint_bytes += (64 - (unsigned)__builtin_clzll(2 * d | 1) + 6) / 7;
		}
		t[h].cyc = realloc(t[h].cyc, (t[h].n + n) * sizeof(uint64_t));
		memcpy(t[h].cyc + t[h].n, cyc, n * sizeof(uint64_t));
		t[h].n += n;
		struct trace_batch b = {.n = n, .hart = (uint16_t)h, .pc = pc, .cycle = cyc};
		evidx_batch(w, &b, gseq);
		gseq += n;
	}
	CHECK_EQ(evidx_writer_finish(w, &err), 0);
	struct evidx *ix = evidx_writer_open(w, &err);
	CHECK(ix);
	CHECK_EQ(evidx_cycles(ix), 1);
	struct stat st;
	CHECK_EQ(stat(path, &st), 0);
	damage(path, (size_t)st.st_size);
	unlink(path);
	/* mostly 0/1 deltas pack at a bit or two a record, plus the exceptions */
	fprintf(stderr, "index %lld bytes, varint deltas alone %llu bytes\n", (long long)st.st_size,
		(unsigned long long)varint_bytes);
	CHECK((uint64_t)st.st_size * 3 < varint_bytes);
	for (unsigned h = 0; h < HARTS; h++) {
		for (size_t i = 0; i < t[h].n; i += 1 + i % 7) {
			uint64_t c = t[h].cyc[i];
			uint64_t probes[3] = {c - 1, c, c + 1};
			for (int j = 0; j < 3; j++) {
				uint64_t pos, got, want_c,
				    want = brute_pos(&t[h], probes[j], &want_c);
				CHECK_EQ(evidx_pos(ix, h, probes[j], &pos, &got, &err), 0);
				if (pos != want || got != want_c)
					fprintf(
					    stderr,
					    "hart %u t %llu: pos %llu cycle %llu, want %llu %llu\n",
					    h, (unsigned long long)probes[j],
					    (unsigned long long)pos, (unsigned long long)got,
					    (unsigned long long)want, (unsigned long long)want_c);
				CHECK_EQ(pos, want);
				CHECK(got == want_c);
			}
		}
		uint64_t pos, got;
		CHECK_EQ(evidx_pos(ix, h, UINT64_MAX, &pos, &got, &err), 0);
		CHECK_EQ(pos, t[h].n);
	}
	evidx_free(ix);
	evidx_writer_free(w);
	evlog_free(log);
	for (unsigned h = 0; h < HARTS; h++)
		free(t[h].cyc);
}

int main(void)
{
	OOBTEST_BEGIN("test_evidx");
	RUN(packed_times_are_exact);
	return OOBTEST_END();
}
