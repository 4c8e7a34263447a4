/*
 * sample: profiles from stack samples that other tools took, read into the
 * same model as an exact reconstruction (profile/profile.h), so the two
 * can be shown alike and compared (profile_diff.h). docs/formats/SAMPLES.md.
 *
 * Formats (rows of trace/trace_formats.h without a trace reader, detected
 * from content): uniprof's address stacks, `perf script` text with
 * callchains, Brendan Gregg's folded stacks, gzipped pprof profiles.
 *
 * The weight of a node is its number of samples (pprof: the value of the
 * chosen sample type), kept in the instruction fields; stats.sampled = 1
 * (pprof: only when that type counts samples), stats.samples counts them,
 * failed_walks and truncated_walks the stacks the tool could not walk
 * whole. Those keep their partial stacks under a marker frame ("[walk
 * failed]", "[walk truncated]") so that no sample is dropped and shares
 * stay shares of every sample.
 *
 * Addresses are symbolized with the given ELFs (at their run-time base) and
 * perf maps, kernel and user alike (an address in the upper half is a
 * kernel frame). A perf callchain address of a DSO named like a given ELF
 * is perf's DSO-relative one: the ELF's load base is added first (a PIE or
 * shared object given without a base is used that way only). Names the
 * tool gave (perf's sym, pprof's functions, folded frames) are kept when no
 * ELF resolves the address; unknown addresses become "0x..." frames.
 *
 * Thread-safe: no shared state.
 */
#ifndef OOB_SAMPLE_H
#define OOB_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "trace/trace_formats.h"
#include "util/oob_err.h"

#define SAMPLE_BASE_LINK UINT64_MAX

struct sample_elf {
	const char *path;
	uint64_t base; /* run-time address of the lowest PT_LOAD, or SAMPLE_BASE_LINK */
};

struct sample_opts {
	const struct sample_elf *elfs;
	size_t nelfs;
	const char *const *maps; /* perf-PID.map files */
	size_t nmaps;
	enum trace_format format; /* TRACE_FMT_AUTO: detect */
};

/* 1 if f is one of the sampled formats this module reads. */
int sample_format_is(enum trace_format f);

/* The sampled format of the file at path, from its first bytes, or
 * TRACE_FMT_AUTO when it is none, cannot be read, or is not a regular file
 * (a pipe is left to the trace readers: sampled files are read from files). */
enum trace_format sample_detect_file(const char *path);

/* Reads the sampled file at path (at most 1 GiB, decompressed) into *out
 * (caller frees with profile_free). Returns 0, or a negative errno with a
 * message naming the file and the line or byte where it went wrong:
 * -EINVAL bad input (or not a sampled format), -ENOENT, -EFBIG, -ENOMEM. */
int sample_read(const char *path, const struct sample_opts *o, struct profile **out,
		struct oob_err *err);
/* The same over buf[0..n) (borrowed); name is used in messages. */
int sample_read_mem(const void *buf, size_t n, const char *name, const struct sample_opts *o,
		    struct profile **out, struct oob_err *err);

#endif
