/*
 * test_sym_bad: corrupt and hostile ELF input to the symbolizer: random bytes and
 * real binaries with corrupted headers give clean errors, never a crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/oob_log.h"
#include "oobtest.h"
#include "symtest.h"
#include "sym/rv.h"
#include "sym/sym.h"

/* ---- bad input ---- */

static unsigned long long rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)rng_state;
}

/* Opens bytes as an ELF: NULL with a message, or a binary that survives use. */
static int try_elf(const uint8_t *bytes, size_t n, int *opened)
{
	struct oob_err err = {0};
	char *path = symt_write_tmp((const char *)bytes, n);
	struct sym_binary *b = path ? sym_binary_open(path, &err) : NULL;

	if (path)
		unlink(path);
	*opened = b != NULL;
	if (!b)
		return err.code < 0 && err.msg[0] ? 0 : -1;
	for (size_t i = 0; i < sym_binary_nfuncs(b) && i < 64; i++) {
		const struct sym_func *f = sym_binary_func(b, i);
		struct sym_inline in[8];
		const char *file;
		unsigned line;
		uint8_t buf[8];
		if (sym_binary_lookup(b, f->lo) != f)
			return -1;
		sym_binary_srcline(b, f->lo, &file, &line);
		sym_binary_inlines(b, f->lo, in, 8);
		sym_binary_read(b, f->lo, buf, sizeof(buf));
	}
	sym_binary_free(b);
	return 0;
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8); /* the fixtures are little-endian, like this host */
}

static void test_corrupt(void)
{
	const char *path = oobtest_gen("sym/pie");
	size_t n = 0, cuts[] = {0, 1, 4, 16, 52, 63, 64, 65, 100, 0x100, 0x1000, 0, 0, 0};
	uint8_t *orig = path ? oobtest_slurp(path, &n) : NULL, *buf;
	struct oob_err err = {0};
	int opened, nopened = 0, ntried = 0;
	uint64_t phoff;

	if (!orig)
		SKIP("sym/pie absent");
	oob_log_set_level(OOB_LOG_ERROR); /* corrupt DWARF warns once per variant */
	buf = malloc(n + 4096);
	/* truncated */
	cuts[11] = n / 4;
	cuts[12] = n / 2;
	cuts[13] = n - 1;
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		CHECK_EQ(try_elf(orig, cuts[i], &opened), 0);
		nopened += opened;
		ntried++;
	}
	/* garbage, magic followed by garbage, a text file */
	for (size_t i = 0; i < 4096; i++)
		buf[i] = (uint8_t)rng();
	CHECK_EQ(try_elf(buf, 4096, &opened), 0);
	CHECK(!opened);
	memcpy(buf, "\177ELF\2\1\1", 7);
	CHECK_EQ(try_elf(buf, 4096, &opened), 0);
	CHECK_EQ(try_elf((const uint8_t *)"hello\n", 6, &opened), 0);
	CHECK(!opened);
	/* hostile header fields: offsets and counts out of range */
	static const struct {
		size_t off, width;
		uint64_t value;
	} pokes[] = {
	    {0x04, 1, 3},	   /* EI_CLASS */
	    {0x05, 1, 2},	   /* EI_DATA: big-endian */
	    {0x20, 8, ~0ull >> 4}, /* e_phoff */
	    {0x28, 8, ~0ull >> 4}, /* e_shoff */
	    {0x38, 2, 0xffff},	   /* e_phnum */
	    {0x3c, 2, 0xffff},	   /* e_shnum */
	    {0x3e, 2, 0xfffe},	   /* e_shstrndx */
	    {0x36, 2, 1},	   /* e_phentsize */
	    {0x3a, 2, 7},	   /* e_shentsize */
	};
	for (size_t i = 0; i < sizeof(pokes) / sizeof(pokes[0]); i++) {
		memcpy(buf, orig, n);
		if (pokes[i].width == 8)
			put64(buf + pokes[i].off, pokes[i].value);
		else
			memcpy(buf + pokes[i].off, &pokes[i].value, pokes[i].width);
		CHECK_EQ(try_elf(buf, n, &opened), 0);
		nopened += opened;
		ntried++;
	}
	/* every program header's offset and size, then every section's, made huge */
	memcpy(&phoff, orig + 0x20, 8);
	for (int field = 0; field < 2; field++) {
		for (size_t ph = 0; ph < 16 && phoff + (ph + 1) * 56 <= n; ph++) {
			memcpy(buf, orig, n);
			put64(buf + phoff + ph * 56 + (field ? 0x20 : 0x08), ~0ull >> 8);
			CHECK_EQ(try_elf(buf, n, &opened), 0);
			nopened += opened;
			ntried++;
		}
	}
	/* random byte flips */
	for (int round = 0; round < 1500; round++) {
		memcpy(buf, orig, n);
		for (int k = 1 + (int)(rng() % 8); k > 0; k--)
			buf[rng() % n] = (uint8_t)rng();
		CHECK_EQ(try_elf(buf, n, &opened), 0);
		nopened += opened;
		ntried++;
	}
	CHECK(!sym_binary_open("/nonexistent/elf", &err));
	CHECK_EQ(err.code, -ENOENT);
	CHECK(!sym_binary_open("/tmp", &err));
	CHECK_EQ(err.code, -EINVAL);
	oob_log_set_level(OOB_LOG_WARN);
	printf("# %d corrupt variants: %d opened and used, %d refused with a message\n", ntried,
	       nopened, ntried - nopened);
	free(buf);
	free(orig);
}

/* Messages of the refusals say what is wrong. */
static void test_corrupt_messages(void)
{
	const char *path = oobtest_gen("sym/pie");
	size_t n = 0;
	uint8_t *orig = path ? oobtest_slurp(path, &n) : NULL;
	struct oob_err err = {0};
	char *tmp;
	uint64_t phoff;

	if (!orig)
		SKIP("sym/pie absent");
	tmp = symt_write_tmp("not an elf", 10);
	CHECK(tmp);
	CHECK(!sym_binary_open(tmp, &err));
	unlink(tmp);
	CHECK_EQ(err.code, -EINVAL);
	CHECK(strstr(err.msg, "not an ELF file"));
	/* a PT_LOAD whose file bytes lie past the end */
	memcpy(&phoff, orig + 0x20, 8);
	for (size_t ph = 0; phoff + (ph + 1) * 56 <= n; ph++) {
		uint32_t type;
		memcpy(&type, orig + phoff + ph * 56, 4);
		if (type != 1 /* PT_LOAD */)
			continue;
		put64(orig + phoff + ph * 56 + 0x08, n * 2); /* p_offset */
		break;
	}
	tmp = symt_write_tmp((const char *)orig, n);
	CHECK(tmp);
	CHECK(!sym_binary_open(tmp, &err));
	unlink(tmp);
	CHECK_EQ(err.code, -EINVAL);
	CHECK(strstr(err.msg, "beyond the end of the file"));
	free(orig);
}

int main(void)
{
	OOBTEST_BEGIN("test_sym_bad");
	RUN(test_corrupt);
	RUN(test_corrupt_messages);
	return OOBTEST_END();
}
