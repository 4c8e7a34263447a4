/*
 * bench_sym [ELF]: how fast the symbolizer indexes a binary and answers.
 * Default ELF: $OOB_BUILDDIR/tests/gen/vmlinux (tests/tools/gen-sym.sh makes
 * it). Prints one line per figure; never fails on timing.
 *   open      sym_binary_open (ELF, DWARF subprograms, symbols, table), best of 3
 *   lookup    sym_binary_lookup at pseudo-random text addresses, one thread
 *   srcline   sym_binary_srcline at instruction addresses of DWARF functions
 *   inlines   sym_binary_inlines at the same addresses (tables already built)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sym/sym.h"

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Addresses inside DWARF functions, spread over the table. */
static size_t sample(const struct sym_binary *b, uint64_t *out, size_t max)
{
	size_t n = 0, nf = sym_binary_nfuncs(b);
	uint64_t s = 42;

	for (size_t i = 0; i < nf && n < max; i++) {
		const struct sym_func *f = sym_binary_func(b, (size_t)(xorshift(&s) % nf));
		if (f->flags & SYM_F_DWARF)
			out[n++] = (f->lo + xorshift(&s) % (f->hi - f->lo)) & ~(uint64_t)1;
	}
	return n;
}

int main(int argc, char **argv)
{
	char def[4096];
	const char *path = argc > 1 ? argv[1] : def;
	struct oob_err err = {0};
	struct sym_binary *b = NULL;
	double best = 1e9, t0, t;
	uint64_t lo, hi, s = 1, hits = 0, *addrs;
	size_t n, lookups = 20000000;
	struct sym_inline in[16];

	snprintf(def, sizeof(def), "%s/tests/gen/vmlinux",
		 getenv("OOB_BUILDDIR") ? getenv("OOB_BUILDDIR") : ".");
	for (int i = 0; i < 3; i++) {
		sym_binary_free(b);
		t0 = now();
		b = sym_binary_open(path, &err);
		t = now() - t0;
		if (!b) {
			fprintf(stderr, "bench_sym: %s\n", err.msg);
			return 1;
		}
		best = t < best ? t : best;
	}
	printf("bench_sym: %s: open %.3f s (%zu ranges, build-id %s)\n", sym_binary_name(b), best,
	       sym_binary_nfuncs(b), sym_binary_build_id(b));

	sym_binary_text_range(b, &lo, &hi);
	t0 = now();
	for (size_t i = 0; i < lookups; i++)
		hits += sym_binary_lookup(b, lo + xorshift(&s) % (hi - lo)) != NULL;
	t = now() - t0;
	printf("bench_sym: lookup %.1f M/s (%zu random text addresses, %.1f%% in a function)\n",
	       (double)lookups / t / 1e6, lookups, 100.0 * (double)hits / (double)lookups);

	addrs = malloc(200000 * sizeof(*addrs));
	n = sample(b, addrs, 200000);
	if (!n || !sym_binary_has_dwarf(b)) {
		printf("bench_sym: no DWARF functions: srcline and inlines not measured\n");
		goto out;
	}
	t0 = now();
	for (size_t i = 0; i < n; i++)
		sym_binary_inlines(b, addrs[i], in, 16);
	t = now() - t0;
	printf("bench_sym: inlines, first pass (builds per-CU tables) %.2f M/s\n",
	       (double)n / t / 1e6);
	t0 = now();
	for (int r = 0; r < 5; r++)
		for (size_t i = 0; i < n; i++)
			sym_binary_inlines(b, addrs[i], in, 16);
	t = now() - t0;
	printf("bench_sym: inlines %.2f M/s\n", 5.0 * (double)n / t / 1e6);
	t0 = now();
	for (int r = 0; r < 5; r++) {
		for (size_t i = 0; i < n; i++) {
			const char *file;
			unsigned line;
			sym_binary_srcline(b, addrs[i], &file, &line);
		}
	}
	t = now() - t0;
	printf("bench_sym: srcline %.2f M/s (%zu addresses x 5)\n", 5.0 * (double)n / t / 1e6, n);
out:
	free(addrs);
	sym_binary_free(b);
	return 0;
}
