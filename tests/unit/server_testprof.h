/*
 * server_testprof: real profiles for the server's unit tests, made by
 * recon_run from real traces:
 *   - "mixed": tests/gen/progs/mixed.oobt (a real RISC-V program traced in
 *     QEMU by tests/tools/gen-programs.sh) with its ELF;
 *   - "spike": the first 250,000 lines of the Spike full-system fixture
 *     (kernel and user code, traps: /init starting up), with init and, when
 *     tests/gen/vmlinux exists, the kernel.
 * Each returns NULL (the test then skips) when its inputs are absent.
 */
#ifndef SERVER_TESTPROF_H
#define SERVER_TESTPROF_H

#include "oobtest.h"
#include "recon/recon.h"

static inline struct profile *testprof_mixed(const char **elf_out)
{
	const char *trace = oobtest_gen("progs/mixed.oobt"), *elf = oobtest_gen("progs/mixed");
	if (!trace || !elf)
		return NULL;
	static char elfbuf[4096];
	snprintf(elfbuf, sizeof(elfbuf), "%s", elf);
	struct recon_elf e = {elfbuf, RECON_BASE_LINK};
	struct recon_opts o = {.elfs = &e, .nelfs = 1};
	struct profile *p = NULL;
	struct oob_err err = {0};
	if (recon_run(&o, &trace, 1, &p, &err) < 0) {
		fprintf(stderr, "recon_run(mixed): %s\n", err.msg);
		return NULL;
	}
	if (elf_out)
		*elf_out = elfbuf;
	return p;
}

static inline struct profile *testprof_spike(const char *tmpdir)
{
	const char *log = oobtest_shared("fixtures/spike/linux-init.commits.log.xz");
	const char *init = oobtest_shared("fixtures/spike/init");
	const char *vmlinux = oobtest_gen("vmlinux");
	if (!log || !init)
		return NULL;
	static char trace[512], b0[4096], b1[4096];
	char cmd[5000];
	snprintf(trace, sizeof(trace), "%s/spike250k.log", tmpdir);
	snprintf(cmd, sizeof(cmd), "xz -dc '%s' | head -n 250000 > '%s'", log, trace);
	if (access(trace, R_OK) != 0 && system(cmd) != 0)
		return NULL;
	snprintf(b0, sizeof(b0), "%s", init);
	struct recon_elf e[2] = {{b0, RECON_BASE_LINK}, {b1, RECON_BASE_LINK}};
	size_t n = 1;
	if (vmlinux) {
		snprintf(b1, sizeof(b1), "%s", vmlinux);
		n = 2;
	}
	struct recon_opts o = {.elfs = e, .nelfs = n};
	struct profile *p = NULL;
	struct oob_err err = {0};
	const char *t = trace;
	if (recon_run(&o, &t, 1, &p, &err) < 0) {
		fprintf(stderr, "recon_run(spike): %s\n", err.msg);
		return NULL;
	}
	return p;
}

/* Folded stacks as text (malloc'd), by profile_write_folded. */
static inline char *testprof_folded(const struct profile *p, enum profile_metric m, int annotate)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	profile_write_folded(p, f, m, annotate);
	fclose(f);
	return buf;
}

#endif
