#include "cli_opts.h"

#include <ctype.h>
#include <string.h>

#include "trace/trace_formats.h"

struct cmd_row {
	const char *name;
	unsigned bit; /* 0: a command with a parser of its own */
	const char *synopsis;
	const char *brief; /* the global help's line */
	const char *more;  /* the command's help adds this */
};

static const struct cmd_row cmds[] = {
    {"fold", CLI_FOLD, "oobprof fold [options] TRACE...", "folded stacks",
     "Each calling context on a line with its weight, as flamegraph.pl, speedscope and "
     "inferno read them."},
    {"top", CLI_TOP, "oobprof top [options] [-n N] TRACE...", "functions by self weight",
     "Calls, self and total instructions with their shares of the whole, and cycles and "
     "IPC when the trace has them."},
    {"annotate", CLI_ANNOTATE, "oobprof annotate FUNC [--source|--disasm] [options] TRACE...",
     "exact counts per source line or instruction of a function",
     "perf annotate with exact numbers: instructions, cycles (when the trace has them) and "
     "calls made, per source line of FUNC (the innermost line of each pc, as addr2line says) "
     "or per instruction; totals are top's self counts. FUNC names every function of that "
     "name (static functions of several binaries: one section each)."},
    {"stats", CLI_STATS, "oobprof stats [options] TRACE...", "what the reconstruction saw",
     "Instructions, calls, returns, traps, repairs, and how fast it ran."},
    {"processes", CLI_PROCESSES, "oobprof processes [options] [--json] TRACE...",
     "the process tree",
     "Pid, name, and instructions in user and kernel mode, children "
     "indented under their parent."},
    {"timeline", CLI_TIMELINE,
     "oobprof timeline [options] [--gotrace F [--go-clock HZ[:OFF]]] TRACE...",
     "stacks over time (JSON)", "Per-hart intervals, processes and Go tracks."},
    {"convert", CLI_CONVERT, "oobprof convert --to oobt|tracerv-bin [--per-hart] TRACE -o OUT",
     "the trace in another format", "oobt keeps every field a record has, compactly."},
    {"export", CLI_EXPORT,
     "oobprof export --to speedscope|perfetto-pb|perfetto|pprof|folded|svg [options] TRACE... "
     "-o OUT",
     "the profile for speedscope, Perfetto, pprof", NULL},
    {"flamegraph", CLI_FLAMEGRAPH, "oobprof flamegraph [options] TRACE... [-o OUT.svg]",
     "an SVG flame graph",
     "flamegraph.pl's look: hover a frame for its counts, click to "
     "zoom."},
    {"diff", CLI_DIFF, "oobprof diff [options] [--json] BASE OTHER",
     "two profiles compared by shares",
     "BASE and OTHER are traces or sampled files (uniprof, perf script, folded, pprof), read "
     "with the same options. Per function and per stack: each side's share of its total, the "
     "difference; the total absolute share error (sum |a-b|/2); with one side sampled, whether "
     "each difference is within 3 sigma of the binomial error of its sample count."},
    {"sample", CLI_SAMPLE,
     "oobprof sample [--hz N] [--pid PID] [--unwind fp|cfi --elf PATH] HOST:PORT -o OUT",
     "sample a running emulator's stacks through its GDB stub",
     "From outside, uniprof's way: at a rate of host time, stops the target (QEMU system: "
     "-gdb tcp::PORT -S; QEMU user: -g PORT, with --pid), reads its registers and stack "
     "through the stub, unwinds by frame pointers or by DWARF CFI, resumes it; until it exits "
     "or --duration. Writes uniprof address stacks that every command reads (symbolize "
     "with --elf); the cost per sample on stderr."},
    {"offcpu", CLI_OFFCPU, "oobprof offcpu [options] [--pid PID] [--json] TRACE...",
     "off-CPU stacks: where tasks blocked, for how long, who woke them",
     "Folded stacks at each block weighted by the time blocked (the axis: cycles, else "
     "instructions of all harts), rooted at their process; --json: every wait with its "
     "stack, length and waker (pid and stack at the wake-up). Needs a kernel trace and its "
     "vmlinux (RECONSTRUCTION.md 15)."},
    {"path", CLI_PATH, "oobprof path [options] --task PID [--window FROM:TO] TRACE...",
     "the critical path of a task (JSON)",
     "From the task's last moment in the window backwards: its running intervals, and at each "
     "wait the task that woke it up to the wake-up, across tasks and harts; each running "
     "interval with the stacks it ran."},
    {"stacks-at", CLI_STACKS_AT,
     "oobprof stacks-at [options] --at N,...|--at-file F TRACE... [-o OUT]",
     "the exact stack at given record indices (JSON Lines)",
     "One pass over the trace, one line per index in the order given: the hart's (--hart) "
     "record index \"at\", its \"pc\" and \"priv\", its \"frames\" innermost first "
     "(\"name\", \"kind\": user, kernel, marker, process...; \"addr\": the function's entry), the "
     "\"task\" they run in; "
     "\"found\": false for an index past the hart's last record. What record N runs on is "
     "what a sampler sees after N instructions retired (docs/formats/SAMPLES.md)."},
    {"gotrace", 0, "oobprof gotrace [options] GO-TRACE", "a Go execution trace",
     "Summary, events, goroutines, alignment with an instruction trace."},
};

struct opt_row {
	const char *name; /* long name, or a one-character short one */
	const char *arg;  /* metavariable; NULL: no argument */
	int id;
	unsigned cmds;
	const char *help; /* NULL: made at run time (--format) */
};

#define ONE_OUT                                                                                    \
	(CLI_FOLD | CLI_TOP | CLI_STATS | CLI_PROCESSES | CLI_TIMELINE | CLI_FLAMEGRAPH |          \
	 CLI_DIFF | CLI_OFFCPU | CLI_PATH | CLI_STACKS_AT | CLI_ANNOTATE)

/* In the order the help lists them. An option may have several rows when
 * what it does differs between commands. */
static const struct opt_row opts[] = {
    {"format", "F", OPT_FORMAT, CLI_ALL, NULL},
    {"elf", "PATH[@BASE]", OPT_ELF, CLI_RECON,
     "an ELF (program, library, vmlinux); BASE = run-time address of its lowest segment "
     "(PIE, shared libraries)"},
    {"map", "perf-PID.map", OPT_MAP, CLI_RECON, "JIT symbol map"},
    {"metric", "M", OPT_METRIC, CLI_FOLD | CLI_TOP | CLI_TIMELINE | CLI_FLAMEGRAPH | CLI_DIFF,
     "the weight: instructions (default), cycles or calls"},
    {"metric", "M", OPT_METRIC, CLI_EXPORT,
     "speedscope, perfetto: time in cycles (default when the trace has them) or "
     "instructions; folded: the weight; pprof: the default sample type"},
    {"annotate", NULL, OPT_ANNOTATE, CLI_FOLD | CLI_EXPORT | CLI_FLAMEGRAPH,
     "add _[k] to kernel frames"},
    {"inline", NULL, OPT_INLINE, CLI_RECON, "add inlined functions as frames"},
    {"pycode", "MAP", OPT_PYCODE, CLI_RECON,
     "add the frames of a CPython 3.11 program (code map of tests/tools/pycode.py) inside "
     "the interpreter's"},
    {"pcs", NULL, OPT_PCS, CLI_EXPORT,
     "pprof: count per pc, so that locations are exact pcs with their lines (pprof -list "
     "shows per-line counts), one mapping per binary with its build-id, and processes are "
     "pid/comm labels"},
    {"source", NULL, OPT_SOURCE, CLI_ANNOTATE,
     "counts per source line (the default), with the line's text where the file exists"},
    {"disasm", NULL, OPT_DISASM, CLI_ANNOTATE,
     "counts per instruction, with objdump's text (riscv64-linux-gnu-objdump, or "
     "$OOB_OBJDUMP; counts alone without it)"},
    {"json", NULL, OPT_JSON, CLI_TOP | CLI_PROCESSES | CLI_DIFF | CLI_OFFCPU | CLI_ANNOTATE,
     "JSON output (the API's shape)"},
    {"pid", "PID", OPT_PID, CLI_OFFCPU,
     "only the waits of this process (a task without a pid: its name, as \"waits [task 21]\")"},
    {"task", "PID", OPT_TASK, CLI_PATH,
     "the task whose completion the path explains (a task without a pid: its name, as "
     "\"waits [task 21]\")"},
    {"n", "N", 'n', CLI_TOP | CLI_DIFF, "only the first N functions"},
    {"at", "N,...", OPT_AT, CLI_STACKS_AT,
     "record indices of the hart (decimal or 0x hex), comma-separated"},
    {"at-file", "F", OPT_AT_FILE, CLI_STACKS_AT,
     "record indices, one a line ('#' lines skipped); with --at, both"},
    {"events", "F", OPT_EVENTS, CLI_RECON, "sideband process events (JSON Lines)"},
    {"tasks", "auto|satp", OPT_TASKS, CLI_RECON,
     "tell processes apart by sideband events, else the kernel's own functions (auto), or "
     "by address space (satp writes in the trace)"},
    {"nonlocal", "auto|pc|sp-only", OPT_NONLOCAL, CLI_RECON,
     "what decides non-local landings (longjmp, exceptions, signals): the stack pointer where "
     "the trace has its writes, then pc-only rules (auto); pc-only rules alone (pc); the "
     "stack pointer alone (sp-only)"},
    {"hart", "N", OPT_HART, CLI_ALL, "hart of a single-hart trace file (default 0)"},
    {"tracerv-width", "N", OPT_TV_WIDTH, CLI_ALL, "TracerV binary: retire width (default: detect)"},
    {"tracerv-words", "N", OPT_TV_WORDS, CLI_ALL, "TracerV binary: 64-bit words per record"},
    {"tracerv-valid-bit", "N", OPT_TV_VALID, CLI_ALL, "TracerV binary: valid bit, 40 or 63"},
    {"max-insns", "N", OPT_MAX, CLI_RECON, "stop after N instructions"},
    {"lz4-threads", "N", OPT_LZ4_THREADS, CLI_ALL,
     "LZ4 input: decompress on N threads (frames that declare their size, as oobprof convert "
     "writes)"},
    {"threads", "N|auto", OPT_THREADS, CLI_RECON,
     "reconstruct one trace on N threads (default auto: every core for a TracerV binary "
     "file, raw or LZ4 as oobprof convert writes it, else 1). Same result; user-mode "
     "single-hart traces only, others run sequentially (RECONSTRUCTION.md 16)"},
    {"max-depth", "N", OPT_MAX_DEPTH, CLI_RECON,
     "keep at most N frames per stack (default 1048576; deeper pushes are dropped, counted "
     "as repairs_depth)"},
    {"window", "FROM:TO", OPT_WINDOW, CLI_FOLD | CLI_TOP | CLI_TIMELINE | CLI_FLAMEGRAPH | CLI_PATH,
     "only [FROM, TO) of the trace's time axis (cycles, else the record index; TO empty: "
     "the end)"},
    {"index-every", "N", OPT_INDEX_EVERY, CLI_FOLD | CLI_TOP | CLI_TIMELINE | CLI_FLAMEGRAPH,
     "--window: records between the event index's checkpoints (tests)"},
    {"no-seek", NULL, OPT_NO_SEEK, CLI_FOLD | CLI_TOP | CLI_TIMELINE | CLI_FLAMEGRAPH,
     "--window: replay every stack event, not only the window's (tests)"},
    {"min-duration", "D", OPT_MIN_DUR, CLI_TIMELINE, "merge intervals shorter than D (axis units)"},
    {"min-duration", "NS", OPT_MIN_DUR, CLI_EXPORT,
     "perfetto, perfetto-pb: leave out frames shorter than NS ns (without --clock-hz, 1 ns stands "
     "for "
     "one cycle or instruction)"},
    {"tracks", "LIST", OPT_TRACKS, CLI_TIMELINE,
     "harts,goroutines,procs,threads,gc (default: all)"},
    {"gotrace", "F", OPT_GOTRACE, CLI_TIMELINE, "a Go execution trace of the same run"},
    {"gotrace", "F", OPT_GOTRACE, CLI_EXPORT,
     "perfetto, perfetto-pb: add a Go execution trace of the run (its clock: --go-clock, or fitted "
     "as for "
     "`oobprof timeline`)"},
    {"go-clock", "HZ[:OFF]", OPT_GOCLOCK, CLI_TIMELINE | CLI_EXPORT,
     "the Go trace's clock: time units per second and the trace time of Go tick 0 (default: "
     "fitted, see oobprof gotrace --align)"},
    {"to", "FORMAT", OPT_TO, CLI_CONVERT, "oobt or tracerv-bin"},
    {"to", "FORMAT", OPT_TO, CLI_EXPORT,
     "speedscope, perfetto-pb (Perfetto's protobuf, gzipped: large traces), perfetto (Chrome "
     "trace JSON; also perfetto-json), pprof, folded or svg"},
    {"lz4", NULL, OPT_LZ4, CLI_CONVERT,
     "--to tracerv-bin: write LZ4 frames that readers decompress in parallel"},
    {"sync-every", "N", OPT_SYNC_EVERY, CLI_CONVERT,
     "--to oobt: a sync point at least every N records, where threads start reading "
     "(default 8388608; one hart's streams only)"},
    {"per-hart", NULL, OPT_PER_HART, CLI_CONVERT,
     "one file per hart, OUT-C0, OUT-C1 ... (as FireSim names them); without cycles in "
     "TRACE, a record's index in the whole trace is its cycle"},
    {"clock-hz", "HZ", OPT_CLOCK, CLI_EXPORT,
     "speedscope, perfetto: cycles per second; times in ns"},
    {"max-events", "N", OPT_MAX_EVENTS, CLI_EXPORT,
     "speedscope: sampled form above N stack events (default 5000000; 0: no bound)"},
    {"sampled", NULL, OPT_SAMPLED, CLI_EXPORT, "speedscope: sampled form (weights per stack)"},
    {"name", "NAME", OPT_NAME, CLI_EXPORT | CLI_FLAMEGRAPH,
     "the profile's name, the flame graph's title (default: the trace's file name)"},
    {"width", "PX", OPT_WIDTH, CLI_FLAMEGRAPH, "the image's width in pixels (default 1200)"},
    {"hz", "N", OPT_HZ, CLI_SAMPLE, "samples per second of host time (default 100)"},
    {"duration", "S", OPT_DURATION, CLI_SAMPLE,
     "stop sampling after S seconds and detach (default: until the target exits)"},
    {"max-samples", "N", OPT_MAX_SAMPLES, CLI_SAMPLE, "stop after N samples and detach"},
    {"pid", "PID", OPT_PID, CLI_SAMPLE,
     "the emulator's process: stop it by SIGINT (QEMU user mode, whose stub does not read "
     "the interrupt byte while the guest runs); without it, the interrupt byte"},
    {"unwind", "fp|cfi", OPT_UNWIND, CLI_SAMPLE,
     "by frame pointers (-fno-omit-frame-pointer builds) or by DWARF CFI through libdw (needs "
     "--elf); default: cfi when --elf is given, else fp"},
    {"elf", "PATH[@BASE]", OPT_ELF, CLI_SAMPLE,
     "--unwind cfi: an ELF with its CFI (.eh_frame, .debug_frame), at its run-time base"},
    {"max-depth", "N", OPT_MAX_DEPTH, CLI_SAMPLE, "frames per stack (default 1024)"},
    {"instret", NULL, OPT_INSTRET, CLI_SAMPLE,
     "read the instret CSR at each sample (\"# instret N\" lines; guest instructions under "
     "QEMU -icount)"},
    {"one-thread", NULL, OPT_ONE_THREAD, CLI_SAMPLE,
     "sample only the hart the stop selected; default: every hart the stub lists (QEMU "
     "system mode), each sample after a \"# thread ID\" line when there are several. With "
     "--pid (user mode) always one: QEMU stops only the signalled thread"},
    {"timeout", "MS", OPT_TIMEOUT, CLI_SAMPLE,
     "the longest wait for the stub's answer (default 5000)"},
    {"log-level", "L", OPT_LOG, CLI_ALL | CLI_SAMPLE, "error, warn (default), info, debug"},
    {"o", "OUT", 'o', ONE_OUT,
     "write to OUT instead of stdout. Every OUT that is a file is replaced whole on success "
     "and left as it was on failure; -, a pipe or a device is written through"},
    {"o", "OUT", 'o', CLI_SAMPLE, "the samples (default stdout), replaced whole on success"},
    {"o", "OUT", 'o', CLI_CONVERT | CLI_EXPORT,
     "the output (- for stdout), replaced whole on success"},
    {"help", NULL, 'h', CLI_ALL | CLI_SAMPLE, "this help"},
};

#define NROWS (sizeof(opts) / sizeof(opts[0]))

unsigned cli_cmd_bit(const char *name)
{
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(cmds[i].name, name))
			return cmds[i].bit;
	return 0;
}

const struct option *cli_long_opts(void)
{
	static struct option table[NROWS + 1];
	if (table[0].name)
		return table;
	size_t n = 0;
	for (size_t i = 0; i < NROWS; i++) {
		int seen = strlen(opts[i].name) == 1;
		for (size_t k = 0; k < n && !seen; k++)
			seen = !strcmp(table[k].name, opts[i].name);
		if (!seen)
			table[n++] = (struct option){opts[i].name,
						     opts[i].arg ? required_argument : no_argument,
						     NULL, opts[i].id};
	}
	return table;
}

int cli_opt_takes(unsigned cmd, int id)
{
	for (size_t i = 0; i < NROWS; i++)
		if (opts[i].id == id && (opts[i].cmds & cmd))
			return 1;
	return 0;
}

const char *cli_opt_spelling(int id)
{
	static char buf[64];
	for (size_t i = 0; i < NROWS; i++)
		if (opts[i].id == id) {
			snprintf(buf, sizeof(buf), "%s%s", strlen(opts[i].name) == 1 ? "-" : "--",
				 opts[i].name);
			return buf;
		}
	return "?";
}

/* Prints text word by word from column col, wrapped at 80 columns under
 * column indent. */
static void wrap(FILE *f, int col, int indent, const char *text)
{
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s", text);
	if (col < indent)
		col += fprintf(f, "%*s", indent - col, "");
	else if (col < indent + 2)
		col += fprintf(f, " "); /* a long option: its help one space after it */
	else
		col = fprintf(f, "\n%*s", indent, "");
	int first = 1;
	for (char *save, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		if (!first && col + 1 + (int)strlen(w) > 80)
			col = fprintf(f, "\n%*s", indent, "");
		else if (!first)
			col += fprintf(f, " ");
		col += fprintf(f, "%s", w);
		first = 0;
	}
	fputc('\n', f);
}

static void print_row(FILE *f, const struct opt_row *o)
{
	char names[512], help[640];
	const char *text = o->help;
	if (!text) { /* --format: the names come from the format table */
		trace_format_list(names, sizeof(names), TRACE_FORMATS_READ, ", ");
		snprintf(help, sizeof(help), "trace format (%s); default: detect from content",
			 names);
		text = help;
	}
	int col = fprintf(f, "  %s%s%s%s", strlen(o->name) == 1 ? "-" : "--", o->name,
			  o->arg ? " " : "", o->arg ? o->arg : "");
	wrap(f, col, 24, text);
}

static void usage_global(FILE *f)
{
	fputs("usage: oobprof COMMAND [options] TRACE...\n\ncommands:\n", f);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		wrap(f, fprintf(f, "  %s", cmds[i].name), 14, cmds[i].brief);
	fputs("\noptions of every command that reads traces:\n", f);
	for (size_t i = 0; i < NROWS; i++)
		if ((opts[i].cmds & CLI_RECON) == CLI_RECON && opts[i].id != 'h')
			print_row(f, &opts[i]);
	fputs("\n'oobprof COMMAND --help' lists a command's own options; 'oobprof --version' "
	      "prints the version.\n",
	      f);
}

void cli_usage(FILE *f, const char *name)
{
	const struct cmd_row *c = NULL;
	for (size_t i = 0; name && i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(cmds[i].name, name))
			c = &cmds[i];
	if (!c || !c->bit) {
		usage_global(f);
		return;
	}
	fprintf(f, "usage: %s\n\n", c->synopsis);
	char line[512];
	snprintf(line, sizeof(line), "%c%s.%s%s", toupper((unsigned char)c->brief[0]), c->brief + 1,
		 c->more ? " " : "", c->more ? c->more : "");
	wrap(f, 0, 2, line);
	fputs("\noptions:\n", f);
	for (size_t i = 0; i < NROWS; i++)
		if (opts[i].cmds & c->bit)
			print_row(f, &opts[i]);
}
