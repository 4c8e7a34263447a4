/*
 * fuzz_sym: the symbolizer on hostile files. The first byte picks the reader
 * (even: ELF, odd: perf map); the rest is written to a temporary file, opened,
 * and every query is exercised on what opened: the function table, lookups,
 * source lines, inline chains, code bytes, and an address space.
 * Seeds: an ELF with DWARF (tests/gen/sym/pie) prefixed by 0x00, a perf map
 * prefixed by 0x01.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/oob_log.h"
#include "sym/sym.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char tmp_path[64];

/* One file per process, rewritten for every input. */
static int write_input(const uint8_t *data, size_t size)
{
	FILE *f;

	if (!tmp_path[0]) {
		int fd;
		snprintf(tmp_path, sizeof(tmp_path), "/tmp/fuzz_sym_XXXXXX");
		fd = mkstemp(tmp_path);
		if (fd < 0)
			return -1;
		close(fd);
		oob_log_set_level(OOB_LOG_ERROR);
	}
	f = fopen(tmp_path, "wb");
	if (!f)
		return -1;
	if (size && fwrite(data, 1, size, f) != size) {
		fclose(f);
		return -1;
	}
	return fclose(f);
}

static void exercise(const struct sym_binary *b)
{
	struct sym_space *s = sym_space_new();
	struct sym_inline in[8];
	uint8_t code[16];
	uint64_t lo, hi;

	for (size_t i = 0; i < sym_binary_nfuncs(b) && i < 256; i++) {
		const struct sym_func *f = sym_binary_func(b, i);
		const char *file;
		unsigned line;
		if (sym_binary_lookup(b, f->lo) != f || sym_binary_lookup(b, f->hi - 1) != f)
			abort(); /* the table is not sorted and disjoint */
		sym_binary_srcline(b, f->lo + (f->hi - f->lo) / 2, &file, &line);
		sym_binary_inlines(b, f->lo, in, 8);
		sym_binary_read(b, f->lo, code, sizeof(code));
	}
	sym_binary_text_range(b, &lo, &hi);
	sym_binary_read(b, lo, code, sizeof(code));
	sym_binary_read(b, hi - 1, code, sizeof(code));
	sym_binary_lookup(b, 0);
	sym_binary_lookup(b, UINT64_MAX);
	if (sym_space_add(s, b, 0x4000000000, NULL) == 0) {
		const struct sym_mapping *m;
		sym_space_lookup(s, 0x4000000000 + (hi - lo) / 2, &m);
		sym_space_read(s, 0x4000000000, code, sizeof(code));
	}
	sym_space_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oob_err err = {0};
	struct sym_binary *b;

	if (size < 1 || write_input(data + 1, size - 1) < 0)
		return 0;
	b = data[0] & 1 ? sym_perfmap_open(tmp_path, &err) : sym_binary_open(tmp_path, &err);
	if (!b) {
		if (err.code >= 0 || !err.msg[0])
			abort(); /* a refusal must say why */
		return 0;
	}
	exercise(b);
	sym_binary_free(b);
	return 0;
}
