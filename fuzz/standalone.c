/* A main() for fuzz targets built without libFuzzer: runs the target over
 * every file of a seed folder and over deterministic mutations of each (bit
 * flips, byte sets, truncations, insertions, duplicated chunks), so that
 * `make check` exercises the parsers under ASan/UBSan. A crash is a failure
 * (the sanitizer aborts); the rest prints oobtest lines.
 *
 *   fuzz_NAME [SEED_DIR [MUTATIONS]]
 * SEED_DIR defaults to $OOB_SRCDIR/fuzz/corpus/NAME, MUTATIONS to 300, or to
 * the target's fuzz_standalone_mutations when it defines one (a slow target
 * keeps `make check` within a few seconds that way). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern const unsigned fuzz_standalone_mutations __attribute__((weak));

static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return rng_state >> 33;
}

/* One mutation of src into dst (capacity n + 64); returns the new size. */
static size_t mutate(const uint8_t *src, size_t n, uint8_t *dst)
{
	memcpy(dst, src, n);
	size_t at = n ? rng() % n : 0;
	switch (rng() % 6) {
	case 0: /* bit flips */
		for (int k = 1 + (int)(rng() % 4); k > 0 && n; k--)
			dst[rng() % n] ^= (uint8_t)(1u << (rng() % 8));
		return n;
	case 1: { /* interesting byte values */
		static const uint8_t v[] = {0,	 0xff, 0x7f, 0x80, '\n', ' ',
					    '0', 'x',  ':',  0xc0, 0xd6};
		if (n)
			dst[at] = v[rng() % sizeof(v)];
		return n;
	}
	case 2: /* truncation */
		return at;
	case 3: { /* insertion of random bytes */
		size_t k = 1 + rng() % 16;
		memmove(dst + at + k, dst + at, n - at);
		for (size_t i = 0; i < k; i++)
			dst[at + i] = (uint8_t)rng();
		return n + k;
	}
	case 4: { /* duplicate a chunk */
		size_t k = 1 + rng() % 48;
		if (at + k > n)
			k = n - at;
		memmove(dst + at + k, dst + at, n - at);
		return n + k;
	}
	default: /* cut a piece out */
		if (n - at > 8)
			memmove(dst + at, dst + at + 8, n - at - 8);
		return n - at > 8 ? n - 8 : at;
	}
}

static int run_file(const char *dir, const char *name, unsigned mutations, const char *prog)
{
	char path[4096 + 512];
	snprintf(path, sizeof(path), "%.4000s/%.500s", dir, name);
	FILE *f = fopen(path, "rb");
	if (!f) {
		printf("FAIL: %s: %s: cannot open\n", prog, name);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	size_t n = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *src = malloc(n + 1), *dst = malloc(n + 64);
	if (!src || !dst || fread(src, 1, n, f) != n) {
		fclose(f);
		printf("FAIL: %s: %s: cannot read\n", prog, name);
		return 1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(src, n);
	rng_state = 0x9e3779b97f4a7c15ull ^ n;
	for (unsigned i = 0; i < mutations; i++) {
		size_t m = mutate(src, n, dst);
		LLVMFuzzerTestOneInput(dst, m);
	}
	printf("PASS: %s: %s (+%u mutations)\n", prog, name, mutations);
	fflush(stdout);
	free(src);
	free(dst);
	return 0;
}

int main(int argc, char **argv)
{
	const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	const char *target = strncmp(prog, "fuzz_", 5) == 0 ? prog + 5 : prog;
	char dir[4096];
	if (argc > 1)
		snprintf(dir, sizeof(dir), "%s", argv[1]);
	else
		snprintf(dir, sizeof(dir), "%s/fuzz/corpus/%s",
			 getenv("OOB_SRCDIR") ? getenv("OOB_SRCDIR") : ".", target);
	unsigned mutations = argc > 2			  ? (unsigned)atoi(argv[2])
			     : &fuzz_standalone_mutations ? fuzz_standalone_mutations
							  : 300;
	struct dirent **ents;
	int k = scandir(dir, &ents, NULL, alphasort), fails = 0, files = 0;
	if (k < 0) {
		printf("SKIP: %s: no seed corpus at %s\n", prog, dir);
		return 77;
	}
	for (int i = 0; i < k; i++) {
		if (ents[i]->d_name[0] != '.') {
			fails += run_file(dir, ents[i]->d_name, mutations, prog);
			files++;
		}
		free(ents[i]);
	}
	free(ents);
	if (!files) {
		printf("SKIP: %s: empty seed corpus %s\n", prog, dir);
		return 77;
	}
	return fails ? 1 : 0;
}
