/* oobt, our own trace format (docs/OOBT.md): round trips of every reader
 * fixture, hand-made hostile bodies, sync points, the bits kept per pc. */
#include <errno.h>
#include <sys/stat.h>

#include "oobtest.h"
#include "trace/oobt.h"
#include "trace/trace.h"
#include "trace/trace_write.h"
#include "tracetest.h"
#include "util/oob_mem.h"

static void roundtrip_oobt_every_fixture(void)
{
	for (size_t i = 0; i < tracet_nfixtures; i++) {
		char rel[256];
		struct oob_err e = {0};
		struct tracet_truth t;
		snprintf(rel, sizeof(rel), "readers/%s", tracet_fixtures[i].file);
		const char *in = oobtest_gen(rel);
		if (!in || tracet_truth_load(tracet_fixtures[i].truth, &t))
			SKIP("fixture %s not generated", tracet_fixtures[i].file);
		const char *out = tracet_tmp("rt.oobt");
		struct trace_write_opts wo = {.format = TRACE_FMT_OOBT};
		if (tracet_convert(in, out, &wo, &e) != 0) {
			CHECK_STR(e.msg, "(no error converting)");
		}
		struct trace_reader *a = trace_open(in, NULL, &e), *o = trace_open(out, NULL, &e);
		CHECK(a && o);
		CHECK_EQ(trace_reader_format(o), TRACE_FMT_OOBT);
		CHECK_EQ(trace_reader_fields(o), trace_reader_fields(a));
		uint64_t n1, d1, n2, d2;
		trace_reader_clock_ratio(a, &n1, &d1);
		trace_reader_clock_ratio(o, &n2, &d2);
		CHECK(n1 == n2 && d1 == d2);
		const char *why = tracet_same_records(a, o);
		trace_close(a);
		trace_close(o);
		if (why)
			CHECK_STR(why, tracet_fixtures[i].file);
		/* and the truth, through the oobt reader alone */
		struct tracet_sums s;
		o = trace_open(out, NULL, &e);
		CHECK(o);
		CHECK_EQ(tracet_sum(o, t.fields, &s, &e), 0);
		trace_close(o);
		CHECK(!tracet_against(&s, &t));
		if (strcmp(tracet_fixtures[i].file, "spike.log") == 0) {
			struct stat st;
			CHECK(stat(out, &st) == 0);
			printf("# oobt of spike.log: %lld bytes, %.3f bytes per instruction\n",
			       (long long)st.st_size, (double)st.st_size / (double)s.n);
		}
		unlink(out);
	}
}

static void roundtrip_oobt_plain_body(void)
{
	const char *in = oobtest_gen("readers/rdprog.qemu.log");
	struct tracet_truth t;
	struct oob_err e = {0};
	struct tracet_sums s;
	if (!in || tracet_truth_load("rdprog", &t))
		SKIP("no fixture");
	const char *out = tracet_tmp("plain.oobt");
	struct trace_write_opts wo = {
	    .format = TRACE_FMT_OOBT, .oobt_plain = 1, .oobt_icache_log2 = 8};
	CHECK_EQ(tracet_convert(in, out, &wo, &e), 0);
	struct trace_reader *o = trace_open(out, NULL, &e);
	CHECK(o);
	CHECK(strstr(trace_reader_describe(o), "plain body"));
	CHECK(strstr(trace_reader_describe(o), "from qemu"));
	CHECK_EQ(tracet_sum(o, t.fields, &s, &e), 0);
	trace_close(o);
	CHECK(!tracet_against(&s, &t));
	unlink(out);
}

static void oobt_truncated_is_detected(void)
{
	const char *in = oobtest_gen("readers/spike-2core.log");
	struct tracet_truth t;
	struct oob_err e = {0};
	if (!in || tracet_truth_load("spike-2core", &t))
		SKIP("no fixture");
	for (int plain = 0; plain < 2; plain++) {
		const char *out = tracet_tmp("trunc.oobt");
		struct trace_write_opts wo = {.format = TRACE_FMT_OOBT, .oobt_plain = plain};
		CHECK_EQ(tracet_convert(in, out, &wo, &e), 0);
		size_t n;
		uint8_t *buf = oobtest_slurp(out, &n);
		CHECK(buf);
		size_t cuts[] = {OOBT_HEADER_SIZE + 3, OOBT_HEADER_SIZE + 100, n / 3, n / 2, n - 1};
		for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
			uint64_t got;
			struct trace_reader *r = tracet_open_bytes(buf, cuts[c], &e);
			CHECK(r);
			int rc = tracet_drain(r, &got, &e);
			trace_close(r);
			CHECK_EQ(rc, -EINVAL);
			if (!strstr(e.msg, "truncated") && !strstr(e.msg, "no end marker"))
				CHECK_STR(e.msg, "truncated ...");
			CHECK(got <= tracet_get(&t, "records"));
		}
		/* the whole file reads, and a byte more is refused */
		uint64_t got;
		struct trace_reader *r = tracet_open_bytes(buf, n, &e);
		CHECK(r && tracet_drain(r, &got, &e) == 0 && got == tracet_get(&t, "records"));
		trace_close(r);
		if (plain) {
			uint8_t *more = oob_xmalloc(n + 1);
			memcpy(more, buf, n);
			more[n] = 0x01;
			r = tracet_open_bytes(more, n + 1, &e);
			CHECK(r && tracet_drain(r, &got, &e) == -EINVAL);
			CHECK(strstr(e.msg, "after the end marker"));
			trace_close(r);
			free(more);
		}
		free(buf);
		unlink(out);
	}
}

/* A hand-made oobt file: header + plain body. */
static size_t mk_oobt(uint8_t *out, unsigned fields, const uint8_t *body, size_t n)
{
	struct oobt_header h = {.fields = fields,
				.clock_num = 1,
				.clock_den = 1,
				.compression = OOBT_COMP_NONE,
				.icache_log2 = 10};
	oobt_header_encode(&h, out);
	memcpy(out + OOBT_HEADER_SIZE, body, n);
	return OOBT_HEADER_SIZE + n;
}

static const char *oobt_error_of(unsigned fields, const uint8_t *body, size_t n, uint64_t *got)
{
	static struct oob_err e;
	uint8_t buf[512];
	size_t len = mk_oobt(buf, fields, body, n);
	struct trace_reader *r = tracet_open_bytes(buf, len, &e);
	if (!r)
		return e.msg;
	int rc = tracet_drain(r, got, &e);
	trace_close(r);
	return rc ? e.msg : "";
}

/* SYNC (version 2): the state it states is where decoding goes on, and
 * what it may not say is an error naming it. */
static void oobt_sync_bodies(void)
{
	uint64_t got;
	/* jump to 0x1000, SYNC (1 record; 1 hart at 0x2000, cycle 0, priv 3;
	 * hart 0), RUN of 1 (0x2002), END 2 */
	const uint8_t ok[] = {0xc0, 0x80, 0x40, 0xc8, 0x01, 0x01, 0x80,
			      0x40, 0x00, 0x03, 0x00, 0x02, 0xff, 0x02};
	CHECK_STR(oobt_error_of(TRACE_F_PRIV, ok, sizeof(ok), &got), "");
	CHECK_EQ(got, 2);
	uint8_t buf[64];
	struct oob_err e = {0};
	struct trace_reader *r =
	    tracet_open_bytes(buf, mk_oobt(buf, TRACE_F_PRIV, ok, sizeof(ok)), &e);
	const struct trace_batch *b;
	CHECK(r && trace_next(r, &b, &e) == 1 && b->n == 1 && b->pc[0] == 0x1000);
	CHECK(trace_next(r, &b, &e) == 1 && b->n == 1); /* a sync point starts a batch */
	CHECK(b->pc[0] == 0x2002 && b->priv[0] == 3);
	trace_close(r);
	const uint8_t count[] = {0xc8, 0x05, 0x01, 0x00, 0x00, 0x00, 0x00, 0xff, 0x00};
	CHECK(strstr(oobt_error_of(0, count, sizeof(count), &got), "SYNC record count"));
	const uint8_t noh[] = {0xc8, 0x00, 0x00, 0x00};
	CHECK(strstr(oobt_error_of(0, noh, sizeof(noh), &got), "no hart"));
	const uint8_t priv[] = {0xc8, 0x00, 0x01, 0x00, 0x00, 0x07, 0x00};
	CHECK(strstr(oobt_error_of(0, priv, sizeof(priv), &got), "bad varint, priv"));
	const uint8_t cur[] = {0xc8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01};
	CHECK(strstr(oobt_error_of(0, cur, sizeof(cur), &got), "current hart"));
	const uint8_t cut[] = {0xc8, 0x00, 0x01, 0x00};
	CHECK(strstr(oobt_error_of(0, cut, sizeof(cut), &got), "truncated"));
	const uint8_t pre[] = {0xc1, 0x13, 0x00, 0xc8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00};
	CHECK(strstr(oobt_error_of(TRACE_F_INSN, pre, sizeof(pre), &got), "after a prefix"));
	uint8_t v1[64];
	size_t n = mk_oobt(v1, 0, noh, 0);
	const uint8_t one[] = {0xc8, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0xff, 0x00};
	memcpy(v1 + n, one, sizeof(one));
	v1[8] = 1;
	CHECK((r = tracet_open_bytes(v1, n + sizeof(one), &e)) != NULL);
	CHECK(tracet_drain(r, &got, &e) < 0 && strstr(e.msg, "version 1"));
	trace_close(r);
}

/* Whether record k of the batch is listed as bringing new bits. */
static int listed(const struct trace_batch *b, uint32_t k)
{
	for (uint32_t i = 0; b->insn_new && i < b->ninsn_new; i++)
		if (b->insn_new[i] == k)
			return 1;
	return 0;
}

/* pc A (bits X), pc B in A's cache slot (bits Z), A again with bits Z: the
 * last record's bits are new for A though its slot holds them. insn_new
 * must list it (trace.h): version 1 readers find it by the slot's pc,
 * version 2 writers send INSN for it. */
static void oobt_insn_new_per_pc(void)
{
	/* icache 2^10 slots: B = A + 2^11 shares A's slot */
	const uint8_t body[] = {0xc2, 0x13, 0, 0,    0,	   0xc0, 0x80, 0x80, 0x08, 0xc2, 0x33,
				0,    0,    0, 0xc0, 0x80, 0x20, 0xc0, 0xff, 0x1f, 0xff, 0x03};
	uint8_t buf[128];
	struct oob_err e = {0};
	struct trace_opts o = {.insn_changes_only = 1};
	const struct trace_batch *b;
	size_t n = mk_oobt(buf, TRACE_F_INSN, body, sizeof(body));
	buf[8] = 1;
	struct trace_reader *r = trace_open_stream(in_open_mem(buf, n, "v1", &e), &o, &e);
	CHECK(r && trace_next(r, &b, &e) == 1 && b->n == 3);
	CHECK(b->pc[0] == 0x10000 && b->pc[1] == 0x10800 && b->pc[2] == 0x10000);
	CHECK(listed(b, 2) && b->insn[2] == 0x33);
	trace_close(r);

	const char *path = oobtest_out("trace", "alias.oobt");
	uint64_t pcs[3] = {0x10000, 0x10000 + (2u << 16), 0x10000};
	uint32_t ins[3] = {0x13, 0x33, 0x33};
	struct trace_write_opts wo = {.format = TRACE_FMT_OOBT, .fields = TRACE_F_INSN};
	struct trace_writer *w = trace_writer_open(path, &wo, &e);
	struct trace_batch in = {.n = 3, .pc = pcs, .insn = ins};
	CHECK(w && trace_writer_put(w, &in, &e) == 0 && trace_writer_close(w, &e) == 0);
	CHECK((r = trace_open(path, &o, &e)) != NULL);
	CHECK(trace_next(r, &b, &e) == 1 && b->n == 3 && listed(b, 2) && b->insn[2] == 0x33);
	trace_close(r);
}

static void oobt_hostile_bodies(void)
{
	uint64_t got;
	/* jump to 0x1000, RUN of 3 (2,4,2), END 4 */
	const uint8_t ok[] = {0xc0, 0x80, 0x40, 0x0a, 0xff, 0x04};
	CHECK_STR(oobt_error_of(0, ok, sizeof(ok), &got), "");
	CHECK_EQ(got, 4);
	const uint8_t badcount[] = {0xc0, 0x80, 0x40, 0xff, 0x07};
	CHECK(strstr(oobt_error_of(0, badcount, sizeof(badcount), &got), "END record count"));
	CHECK_EQ(got, 1);
	const uint8_t longv[] = {0xc0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				 0xff, 0xff, 0xff, 0xff, 0x01, 0xff, 0x01};
	CHECK(strstr(oobt_error_of(0, longv, sizeof(longv), &got), "varint longer"));
	const uint8_t unk[] = {0x02, 0xe0, 0xff, 0x01};
	const char *m = oobt_error_of(0, unk, sizeof(unk), &got);
	CHECK(strstr(m, "unknown operation at byte 49"));
	CHECK_EQ(got, 1); /* the record before the bad byte is delivered */
	const uint8_t zero[] = {0x00};
	CHECK(strstr(oobt_error_of(0, zero, 1, &got), "invalid operation 0x00"));
	const uint8_t bighart[] = {0xc3, 0x80, 0x80, 0x04, 0x02, 0xff, 0x01};
	CHECK(strstr(oobt_error_of(0, bighart, sizeof(bighart), &got), "hart number"));
	const uint8_t evlong[] = {0xd6, 0xff, 0xff, 0x7f, 0x02};
	CHECK(strstr(oobt_error_of(TRACE_F_EVENTS, evlong, sizeof(evlong), &got), "event text"));
	const uint8_t noend[] = {0x7f, 0x7f};
	CHECK(strstr(oobt_error_of(0, noend, sizeof(noend), &got), "no end marker after 12"));
	/* header fields */
	struct oob_err e = {0};
	uint8_t buf[64];
	mk_oobt(buf, 0, ok, 0);
	buf[8] = OOBT_VERSION + 1;
	CHECK(!tracet_open_bytes(buf, OOBT_HEADER_SIZE, &e) && e.code == -ENOTSUP);
	CHECK(strstr(e.msg, "version 3"));
	mk_oobt(buf, 0, ok, 0);
	buf[33] = 30;
	CHECK(!tracet_open_bytes(buf, OOBT_HEADER_SIZE, &e) && strstr(e.msg, "cache size"));
	CHECK(!tracet_open_bytes(buf, 20, &e) && strstr(e.msg, "header truncated"));
}

/* Every single-byte corruption of a small real oobt must end in a clear
 * result: the records, or an error; ASan/UBSan watch for the rest. */
static void oobt_every_byte_flipped(void)
{
	const char *in = oobtest_gen("readers/bare.qemu.log");
	struct oob_err e = {0};
	if (!in)
		SKIP("no fixture");
	for (int plain = 0; plain < 2; plain++) {
		const char *out = tracet_tmp("flip.oobt");
		struct trace_write_opts wo = {.format = TRACE_FMT_OOBT, .oobt_plain = plain};
		CHECK_EQ(tracet_convert(in, out, &wo, &e), 0);
		size_t n;
		uint8_t *buf = oobtest_slurp(out, &n);
		CHECK(buf);
		unsigned errors = 0;
		for (size_t i = 0; i < n; i++) {
			for (int bit = 0; bit < 8; bit += 3) {
				buf[i] ^= (uint8_t)(1 << bit);
				uint64_t got;
				struct trace_reader *r = tracet_open_bytes(buf, n, &e);
				if (!r || tracet_drain(r, &got, &e) < 0) {
					errors++;
					CHECK(e.msg[0]);
				}
				trace_close(r);
				buf[i] ^= (uint8_t)(1 << bit);
			}
		}
		CHECK(errors > n / 2); /* most flips are noticed (LZ4 checksum, END count) */
		free(buf);
		unlink(out);
	}
}

static void oobt_all_extra_kinds(void)
{
	struct oob_err e = {0};
	const char *out = tracet_tmp("extras.oobt");
	enum { N = 3000 };
	uint64_t *pc = oob_xcalloc(N, 8), *cyc = oob_xcalloc(N, 8);
	uint32_t *insn = oob_xcalloc(N, 4);
	uint8_t *priv = oob_xcalloc(N, 1);
	struct trace_extra *x = oob_xcalloc(4 * N, sizeof(*x));
	uint32_t nx = 0;
	char texts[N][48];
	for (uint32_t i = 0; i < N; i++) {
		pc[i] = 0xffffffff80000000ull + (i % 7 ? 4 * i : 0x100000 * (uint64_t)i);
		cyc[i] = 1000 + 3ull * i - (i % 5 == 0);
		insn[i] = i % 3 ? 0x00000013u + (i & 0xff) * 0x100000 : 0x4501 + (i & 7);
		priv[i] = (uint8_t)(i / 500 % 2 ? 3 : 1);
		uint32_t k = i % 8;
		snprintf(texts[i], sizeof(texts[i]), "{\"switch\":{\"pid\":%u}}", i);
		struct trace_extra v[] = {
		    {.kind = TRACE_X_REG, .num = (uint16_t)(i % 32), .val = ~(uint64_t)i},
		    {.kind = TRACE_X_FREG, .num = 3, .val = 0xffffffff3f800000ull},
		    {.kind = TRACE_X_CSR, .num = 0x180, .val = 0x8000000000080000ull + i},
		    {.kind = TRACE_X_LOAD, .size = 8, .addr = 0xffffffd800600000ull + 8 * i},
		    {.kind = TRACE_X_STORE, .size = 4, .addr = 0x3ffffff000ull - i, .val = i},
		    {.kind = TRACE_X_TRAP, .val = (1ull << 63) | 5, .addr = i},
		    {.kind = TRACE_X_EVENT, .text = texts[i]},
		    {.kind = TRACE_X_REG, .num = 300, .addr = 1, .size = 2, .val = 3}, /* ANY */
		};
		for (uint32_t j = 0; j <= k % 3; j++) {
			x[nx] = v[(k + j) % 8];
			x[nx++].idx = i;
		}
	}
	struct trace_batch b = {.pc = pc, .cycle = cyc, .insn = insn, .priv = priv, .x = x};
	struct trace_write_opts wo = {.format = TRACE_FMT_OOBT, .fields = 0x3f};
	struct trace_writer *w = trace_writer_open(out, &wo, &e);
	CHECK(w);
	/* several batches, two harts */
	uint32_t done = 0, xi = 0;
	for (uint16_t hart = 0; done < N; hart ^= 1) {
		uint32_t n = N - done < 700 ? N - done : 700;
		b.pc = pc + done;
		b.cycle = cyc + done;
		b.insn = insn + done;
		b.priv = priv + done;
		b.x = x + xi;
		b.hart = hart;
		b.n = n;
		b.nx = 0;
		while (xi + b.nx < nx && x[xi + b.nx].idx < done + n)
			b.nx++;
		for (uint32_t j = 0; j < b.nx; j++)
			b.x[j].idx -= done;
		CHECK_EQ(trace_writer_put(w, &b, &e), 0);
		for (uint32_t j = 0; j < b.nx; j++)
			b.x[j].idx += done;
		xi += b.nx;
		done += n;
	}
	CHECK_EQ(trace_writer_close(w, &e), 0);
	struct trace_reader *r = trace_open(out, NULL, &e);
	CHECK(r);
	const struct trace_batch *rb;
	uint32_t k = 0, kx = 0;
	int rc;
	while ((rc = trace_next(r, &rb, &e)) > 0) {
		CHECK_EQ(rb->hart, (k / 700) % 2);
		for (uint32_t i = 0; i < rb->n; i++, k++) {
			CHECK_EQ(rb->pc[i], pc[k]);
			CHECK_EQ(rb->cycle[i], cyc[k]);
			CHECK_EQ(rb->insn[i], insn[k]);
			CHECK_EQ(rb->priv[i], priv[k]);
		}
		for (uint32_t j = 0; j < rb->nx; j++, kx++) {
			const struct trace_extra *a = &rb->x[j], *o = &x[kx];
			CHECK_EQ(rb->seq + a->idx, o->idx);
			CHECK(a->kind == o->kind && a->num == o->num && a->addr == o->addr &&
			      a->val == o->val && a->size == o->size);
			if (o->kind == TRACE_X_EVENT)
				CHECK_STR(a->text, o->text);
		}
	}
	CHECK_EQ(rc, 0);
	CHECK_EQ(k, N);
	CHECK_EQ(kx, nx);
	trace_close(r);
	unlink(out);
	free(pc);
	free(cyc);
	free(insn);
	free(priv);
	free(x);
}

int main(void)
{
	OOBTEST_BEGIN("test_oobt");
	RUN(roundtrip_oobt_every_fixture);
	RUN(roundtrip_oobt_plain_body);
	RUN(oobt_truncated_is_detected);
	RUN(oobt_sync_bodies);
	RUN(oobt_insn_new_per_pc);
	RUN(oobt_hostile_bodies);
	RUN(oobt_every_byte_flipped);
	RUN(oobt_all_extra_kinds);
	return OOBTEST_END();
}
