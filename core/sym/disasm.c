/*
 * disasm: objdump run as a child process, its output parsed line by line.
 * posix_spawnp with an argument vector: the path never meets a shell.
 */
#include "sym/disasm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/oob_mem.h"

extern char **environ;

const char *disasm_tool(void)
{
	const char *t = getenv("OOB_OBJDUMP");
	return t && *t ? t : "riscv64-linux-gnu-objdump";
}

/* "   105a8:\tjal\tra,105ca <f>": the address and the text after the tab. */
static int parse_line(char *s, struct disasm *d, size_t *cap)
{
	char *end;
	while (*s == ' ')
		s++;
	uint64_t a = strtoull(s, &end, 16);
	if (end == s || *end != ':' || end[1] != '\t')
		return 0;
	char *text = end + 2;
	text[strcspn(text, "\n")] = 0;
	if (strstr(text, "out of bounds")) /* an instruction across the stop address */
		return 0;
	if (d->n == *cap) {
		*cap = *cap ? 2 * *cap : 64;
		d->v = oob_xrealloc(d->v, *cap * sizeof(*d->v));
	}
	d->v[d->n++] = (struct disasm_line){a, oob_xstrdup(text)};
	return 1;
}

static int spawn(const char *path, uint64_t lo, uint64_t hi, const int p[2], pid_t *pid)
{
	char start[40], stop[40];
	snprintf(start, sizeof(start), "--start-address=0x%" PRIx64, lo);
	snprintf(stop, sizeof(stop), "--stop-address=0x%" PRIx64, hi);
	char *argv[] = {(char *)disasm_tool(), "-d", "--no-show-raw-insn", start, stop,
			(char *)path,	       NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, p[0]);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	int rc = posix_spawnp(pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

int disasm_range(const char *path, uint64_t lo, uint64_t hi, struct disasm *out,
		 struct oob_err *err)
{
	int p[2];
	pid_t pid;
	memset(out, 0, sizeof(*out));
	if (pipe(p) < 0)
		return oob_err_set(err, -errno, "disasm: pipe: %s", strerror(errno));
	int rc = spawn(path, lo, hi, p, &pid);
	close(p[1]);
	if (rc) {
		close(p[0]);
		return oob_err_set(err, -ENOENT, "disasm: cannot run %s: %s", disasm_tool(),
				   strerror(rc));
	}
	FILE *f = fdopen(p[0], "r");
	char *line = NULL;
	size_t len = 0, cap = 0;
	while (f && getline(&line, &len, f) > 0)
		parse_line(line, out, &cap);
	free(line);
	if (f)
		fclose(f);
	else
		close(p[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		disasm_free(out);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
			return oob_err_set(err, -ENOENT, "disasm: cannot run %s", disasm_tool());
		return oob_err_set(err, -EIO, "disasm: %s failed on %s", disasm_tool(), path);
	}
	return 0;
}

const char *disasm_at(const struct disasm *d, uint64_t addr)
{
	size_t lo = 0, hi = d->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->n && d->v[lo].addr == addr ? d->v[lo].text : NULL;
}

void disasm_free(struct disasm *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->v[i].text);
	free(d->v);
	memset(d, 0, sizeof(*d));
}
