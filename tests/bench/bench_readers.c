/* bench_readers: decode throughput of the trace readers (not a test: it
 * prints figures). Builds its inputs from the Spike fixture decompressed by
 * tests/tools/gen-readers.sh (tests/gen/readers/spike.log), repeated to a few
 * hundred MB, in the build tree's tests/out/bench-readers/:
 *   tracerv-bin (16-byte records) plain and LZ4, oobt of the Spike log (pc,
 *   insn, priv, registers, memory) and of its pc + insn only (what the QEMU
 *   plugin writes).
 * Usage: bench_readers [REPEAT]   (default 10: 19 M records per file) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/oob_mem.h"
#include "trace/trace.h"
#include "trace/trace_write.h"

static int wall; /* measure wall time (threads), else CPU time */

static double now(void)
{
	struct timespec t;
	/* CPU time, the machine being shared; wall time for threaded reading */
	clock_gettime(wall ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const char *path_of(const char *dir, const char *name)
{
	static char buf[8][1024];
	static int slot;
	char *p = buf[slot++ % 8];
	snprintf(p, sizeof(buf[0]), "%s/%s", dir, name);
	return p;
}

/* Rewrites src `repeat` times into dst with the given options; cycles keep
 * growing across repeats so that TracerV records stay ordered. */
static int make(const char *src, const char *dst, struct trace_write_opts wo, unsigned fields,
		int repeat)
{
	struct oob_err e = {0};
	struct stat st, self;
	/* kept from an earlier run unless this program is newer (the writers
	 * may have changed, e.g. their LZ4 frames) */
	if (stat(dst, &st) == 0 && stat("/proc/self/exe", &self) == 0 &&
	    st.st_mtime >= self.st_mtime)
		return 0;
	wo.fields = fields;
	struct trace_writer *w = trace_writer_open(dst, &wo, &e);
	if (!w)
		goto fail;
	uint64_t *cyc = oob_xmalloc(TRACE_BATCH_MAX * sizeof(*cyc)), base = 0;
	for (int k = 0; k < repeat; k++) {
		struct trace_reader *r = trace_open(src, NULL, &e);
		const struct trace_batch *b;
		int rc;
		if (!r)
			goto fail;
		while ((rc = trace_next(r, &b, &e)) > 0) {
			struct trace_batch c = *b;
			for (uint32_t i = 0; i < b->n; i++)
				cyc[i] = base + (b->seq + i) * 2 + (b->pc[i] >> 2) % 3;
			c.cycle = cyc;
			if (!(fields & TRACE_F_INSN))
				c.insn = NULL;
			if (!(fields & TRACE_F_PRIV))
				c.priv = NULL;
			if (!(fields & (TRACE_F_REGS | TRACE_F_MEM)))
				c.nx = 0;
			if (trace_writer_put(w, &c, &e) < 0)
				goto fail;
		}
		base += 10 * 1000 * 1000;
		trace_close(r);
		if (rc < 0)
			goto fail;
	}
	free(cyc);
	return trace_writer_close(w, &e);
fail:
	fprintf(stderr, "bench_readers: %s\n", e.msg);
	return -1;
}

static void measure_threads(const char *what, const char *path, unsigned threads)
{
	struct trace_opts o = {.in = {.threads = threads}};
	struct oob_err e = {0};
	struct stat st;
	double best = 1e9;
	uint64_t n = 0, sum = 0;
	for (int pass = 0; pass < 6; pass++) { /* the first pass warms the page cache */
		double t0 = now();
		struct trace_reader *r = trace_open(path, &o, &e);
		const struct trace_batch *b;
		int rc;
		n = 0;
		if (!r) {
			printf("%s: %s\n", what, e.msg);
			return;
		}
		while ((rc = trace_next(r, &b, &e)) > 0) {
			n += b->n;
			sum += b->pc[b->n - 1];
		}
		trace_close(r);
		double t = now() - t0;
		if (rc < 0)
			printf("%s: %s\n", what, e.msg);
		if (pass && t < best)
			best = t;
	}
	stat(path, &st);
	printf("%-34s %6.0f M records/s  %7.0f MB/s of file  %.3f bytes/record  (%" PRIu64
	       " records, %.3f s)\n",
	       what, (double)n / best / 1e6, (double)st.st_size / best / 1e6,
	       (double)st.st_size / (double)n, n, best);
	(void)sum;
}

static void measure(const char *what, const char *path)
{
	measure_threads(what, path, 0);
}

static void measure_mem(const char *what, const char *path)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	if (!f || stat(path, &st) != 0)
		return;
	uint8_t *buf = oob_xmalloc((size_t)st.st_size);
	if (fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
		return;
	fclose(f);
	double best = 1e9;
	uint64_t n = 0;
	for (int pass = 0; pass < 6; pass++) {
		struct oob_err e = {0};
		double t0 = now();
		struct trace_reader *r =
		    trace_open_stream(in_open_mem(buf, (size_t)st.st_size, path, &e), NULL, &e);
		const struct trace_batch *b;
		n = 0;
		while (r && trace_next(r, &b, &e) > 0)
			n += b->n;
		trace_close(r);
		double t = now() - t0;
		if (t < best)
			best = t;
	}
	printf("%-34s %6.0f M records/s  (from memory)\n", what, (double)n / best / 1e6);
	free(buf);
}

int main(int argc, char **argv)
{
	const char *b = getenv("OOB_BUILDDIR") ? getenv("OOB_BUILDDIR") : ".";
	int repeat = argc > 1 ? atoi(argv[1]) : 10;
	char src[1024], dir[1024];
	snprintf(src, sizeof(src), "%s/tests/gen/readers/spike.log", b);
	snprintf(dir, sizeof(dir), "%s/tests/out", b);
	mkdir(dir, 0755); /* made by make check, maybe not yet */
	snprintf(dir, sizeof(dir), "%s/tests/out/bench-readers", b);
	if (access(src, R_OK) != 0) {
		printf("SKIP: bench_readers: %s missing (run make check once)\n", src);
		return 77;
	}
	mkdir(dir, 0755);
	struct trace_write_opts tv = {.format = TRACE_FMT_TRACERV_BIN};
	struct trace_write_opts tvz = {.format = TRACE_FMT_TRACERV_BIN, .lz4 = 1};
	struct trace_write_opts ob = {.format = TRACE_FMT_OOBT};
	struct trace_write_opts obp = {.format = TRACE_FMT_OOBT, .oobt_plain = 1};
	unsigned spike_fields = TRACE_F_INSN | TRACE_F_PRIV | TRACE_F_REGS | TRACE_F_MEM;
	if (make(src, path_of(dir, "tv.bin"), tv, TRACE_F_CYCLE, repeat) ||
	    make(src, path_of(dir, "tv.bin.lz4"), tvz, TRACE_F_CYCLE, repeat) ||
	    make(src, path_of(dir, "full.oobt"), ob, spike_fields, repeat) ||
	    make(src, path_of(dir, "pcinsn.oobt"), ob, TRACE_F_INSN, repeat) ||
	    make(src, path_of(dir, "pcinsn-plain.oobt"), obp, TRACE_F_INSN, repeat) ||
	    make(src, path_of(dir, "pc.oobt"), ob, 0, repeat) ||
	    make(src, path_of(dir, "pccycle.oobt"), ob, TRACE_F_CYCLE, repeat))
		return 1;
	measure("tracerv-bin, warm file", path_of(dir, "tv.bin"));
	measure_mem("tracerv-bin", path_of(dir, "tv.bin"));
	measure("tracerv-bin, lz4", path_of(dir, "tv.bin.lz4"));
	wall = 1;
	measure_threads("tracerv-bin, lz4, 1 thread (wall)", path_of(dir, "tv.bin.lz4"), 1);
	measure_threads("tracerv-bin, lz4, 2 threads (wall)", path_of(dir, "tv.bin.lz4"), 2);
	wall = 0;
	measure("oobt pc only", path_of(dir, "pc.oobt"));
	measure("oobt pc+insn (plugin)", path_of(dir, "pcinsn.oobt"));
	measure("oobt pc+insn, plain body", path_of(dir, "pcinsn-plain.oobt"));
	measure("oobt pc+cycle", path_of(dir, "pccycle.oobt"));
	measure("oobt spike, all fields", path_of(dir, "full.oobt"));
	measure("spike text (for scale)", src);
	return 0;
}
