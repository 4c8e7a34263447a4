/*
 * cli_go: the `oobprof gotrace` command (Go execution traces).
 *
 *   oobprof gotrace [--json] GOTRACE
 *   oobprof gotrace [--json] --align INSN_TRACE --elf PROG [--func NAME]
 *                   [--tolerance N | --tolerance-rel F] [--go-clock HZ[:OFFSET]]
 *                   [--format F] GOTRACE
 *
 * Without --align: a summary of the trace (version, frequency, event counts,
 * goroutines, Ps, Ms; with --json every state interval, syscall, range, task,
 * region and log). With --align: the clock model fitted (or, with --go-clock,
 * checked) against the instruction trace of the same run, its anchors and
 * residuals. Exit status: 0 success, 1 the input is bad or the fit is refused
 * (stderr says why; with --json the alignment is still printed), 2 usage.
 */
#ifndef OOB_CLI_GO_H
#define OOB_CLI_GO_H

/* argv[0] is the command name ("gotrace"); options follow. Writes to stdout
 * and stderr. Not thread-safe (getopt). */
int cli_gotrace(int argc, char **argv);

/* -o OUT of every command (cli.c): what the command prints on stdout goes to
 * OUT through an out_file (trace_write.h). A command calls cli_out_begin once
 * its inputs are checked, so that a refused command leaves OUT as it was (a
 * pipe is not even opened), and cli_out_end with its exit status: a regular
 * file is replaced only on success, never removed. path NULL: stdout stays. */
int cli_out_begin(const char *path);
int cli_out_end(int rc);

#endif
