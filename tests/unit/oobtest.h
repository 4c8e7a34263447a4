/*
 * oobtest: the few macros our C unit tests need. Each test case is a void
 * function; RUN() executes it and prints one line that `make check` counts
 * (tests/tools/summary.sh): "PASS: <file>: <case>", "FAIL: ...: <where>: <what>" or
 * "SKIP: ...: <reason>". A failed CHECK returns from the case.
 *
 * Fixtures: oobtest_shared("fixtures/spike/prog") gives a path under
 * ../shared (NULL when it is absent: skip); oobtest_gen("x.trace") gives a
 * path under the build's generated fixtures (tests/gen).
 */
#ifndef OOBTEST_H
#define OOBTEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *oobtest_file;
static int oobtest_failed_case, oobtest_skipped_case, oobtest_nfail;
static char oobtest_why[1024];

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			snprintf(oobtest_why, sizeof(oobtest_why), "%s:%d: %s", __FILE__,          \
				 __LINE__, #cond);                                                 \
			oobtest_failed_case = 1;                                                   \
			return;                                                                    \
		}                                                                                  \
	} while (0)

#define CHECK_EQ(a, b)                                                                             \
	do {                                                                                       \
		long long oobtest_a = (long long)(a), oobtest_b = (long long)(b);                  \
		if (oobtest_a != oobtest_b) {                                                      \
			snprintf(oobtest_why, sizeof(oobtest_why),                                 \
				 "%s:%d: %s == %s (%lld != %lld)", __FILE__, __LINE__, #a, #b,     \
				 oobtest_a, oobtest_b);                                            \
			oobtest_failed_case = 1;                                                   \
			return;                                                                    \
		}                                                                                  \
	} while (0)

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *oobtest_sa = (a), *oobtest_sb = (b);                                   \
		if (!oobtest_sa || !oobtest_sb || strcmp(oobtest_sa, oobtest_sb) != 0) {           \
			snprintf(oobtest_why, sizeof(oobtest_why),                                 \
				 "%s:%d: %s == \"%s\" (got \"%s\")", __FILE__, __LINE__, #a,       \
				 oobtest_sb ? oobtest_sb : "(null)",                               \
				 oobtest_sa ? oobtest_sa : "(null)");                              \
			oobtest_failed_case = 1;                                                   \
			return;                                                                    \
		}                                                                                  \
	} while (0)

#define SKIP(...)                                                                                  \
	do {                                                                                       \
		snprintf(oobtest_why, sizeof(oobtest_why), __VA_ARGS__);                           \
		oobtest_skipped_case = 1;                                                          \
		return;                                                                            \
	} while (0)

static inline void oobtest_run(const char *name, void (*fn)(void))
{
	oobtest_failed_case = oobtest_skipped_case = 0;
	oobtest_why[0] = '\0';
	fn();
	if (oobtest_failed_case) {
		printf("FAIL: %s: %s: %s\n", oobtest_file, name, oobtest_why);
		oobtest_nfail++;
	} else if (oobtest_skipped_case) {
		printf("SKIP: %s: %s: %s\n", oobtest_file, name, oobtest_why);
	} else {
		printf("PASS: %s: %s\n", oobtest_file, name);
	}
	fflush(stdout);
}

#define OOBTEST_BEGIN(file) (oobtest_file = (file))
#define RUN(fn)		    oobtest_run(#fn, fn)
#define OOBTEST_END()	    (oobtest_nfail ? 1 : 0)

/* Path of a file under ../shared, or NULL if it does not exist. */
static inline const char *oobtest_shared(const char *rel)
{
	static char buf[8][4096];
	static int slot;
	const char *src = getenv("OOB_SRCDIR");
	char *p = buf[slot++ % 8];
	snprintf(p, sizeof(buf[0]), "%s/../shared/%s", src ? src : ".", rel);
	return access(p, R_OK) == 0 ? p : NULL;
}

/* Path of a generated fixture under the build tree (tests/gen), or NULL. */
static inline const char *oobtest_gen(const char *rel)
{
	static char buf[8][4096];
	static int slot;
	const char *b = getenv("OOB_BUILDDIR");
	char *p = buf[slot++ % 8];
	snprintf(p, sizeof(buf[0]), "%s/tests/gen/%s", b ? b : ".", rel);
	return access(p, R_OK) == 0 ? p : NULL;
}

/* Path of a scratch file "tests/out/<prefix>-<name>" in the build tree (the
 * folder is made if need be). */
static inline const char *oobtest_out(const char *prefix, const char *name)
{
	static char buf[8][4096];
	static int slot;
	const char *b = getenv("OOB_BUILDDIR");
	char *p = buf[slot++ % 8];
	snprintf(p, sizeof(buf[0]), "%s/tests/out", b ? b : ".");
	mkdir(p, 0755);
	snprintf(p, sizeof(buf[0]), "%s/tests/out/%s-%s", b ? b : ".", prefix, name);
	return p;
}

/* Path of a checked-in file under the source tree. */
static inline const char *oobtest_src(const char *rel)
{
	static char buf[8][4096];
	static int slot;
	const char *s = getenv("OOB_SRCDIR");
	char *p = buf[slot++ % 8];
	snprintf(p, sizeof(buf[0]), "%s/%s", s ? s : ".", rel);
	return p;
}

/* A whole file in malloc'd memory with a NUL after its n bytes, or NULL. */
static inline void *oobtest_slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long len;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (p = malloc((size_t)len + 1)) != NULL) {
		*n = fread(p, 1, (size_t)len, f);
		p[*n] = '\0';
	}
	fclose(f);
	return p;
}

#endif
