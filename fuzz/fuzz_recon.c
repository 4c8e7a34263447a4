/*
 * fuzz_recon: the reconstruction on hostile traces. The first byte of an
 * input picks how the rest is read (format, TracerV layout, whether the tiny
 * ELF of fuzz/elf is given, inline frames, tasks, a small depth bound); the
 * rest is the trace, handed to recon_run through a memfd path
 * (/proc/self/fd/N), so that every reader feeds the shadow stacks.
 * A refusal must say why; anything else (a crash, a sanitizer report, a
 * profile that is not well-formed) is a finding.
 *
 * decode() is the only place that knows the input layout, so the target can
 * move to a streaming recon API without changing the corpus.
 * Seeds (fuzz/corpus/recon): traces of fuzz/elf/bare.elf cut short, in oobt,
 * TracerV binary, QEMU and Spike form, and the item-1 trace of issue 21
 * (a pc of 0xffffffffffffffff after a normal one).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/oob_log.h"
#include "recon/recon.h"

#ifndef FUZZ_ELF_DIR
#define FUZZ_ELF_DIR "fuzz/elf"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A run costs milliseconds (a reconstruction's set-up): fewer mutations per
 * seed in `make check` (fuzz/standalone.c). */
extern const unsigned fuzz_standalone_mutations;
const unsigned fuzz_standalone_mutations = 40;

/* How an input is run: everything the first byte decides, and the trace. */
struct fuzz_recon_input {
	struct recon_opts opts;
	struct recon_elf elf;
	const uint8_t *trace;
	size_t ntrace;
};

static const enum trace_format formats[8] = {
    TRACE_FMT_OOBT, TRACE_FMT_TRACERV_BIN, TRACE_FMT_QEMU,	   TRACE_FMT_SPIKE,
    TRACE_FMT_AUTO, TRACE_FMT_TRACERV_BIN, TRACE_FMT_TRACERV_TEXT, TRACE_FMT_OOBT,
};

/* Byte 0: bits 0-2 format, bit 3 the ELF, bit 4 TracerV valid bit 40 (else
 * 63) and two slots, bit 5 inline frames, bit 6 tasks by satp, bit 7 a depth
 * bound of 16 (the repair path). 0 if the input is too short. */
static int decode(const uint8_t *data, size_t size, struct fuzz_recon_input *in)
{
	if (size < 1)
		return 0;
	uint8_t b = data[0];
	*in = (struct fuzz_recon_input){0};
	in->opts.trace.format = formats[b & 7];
	in->opts.trace.tracerv = (struct trace_tracerv_opts){
	    .width = b & 0x10 ? 2 : 1, .words = b & 0x10 ? 3 : 2, .valid_bit = b & 0x10 ? 40 : 63};
	in->elf = (struct recon_elf){FUZZ_ELF_DIR "/bare.elf", RECON_BASE_LINK};
	in->opts.elfs = b & 0x08 ? &in->elf : NULL;
	in->opts.nelfs = b & 0x08 ? 1 : 0;
	in->opts.inline_frames = !!(b & 0x20);
	in->opts.tasks = b & 0x40 ? RECON_TASKS_SATP : RECON_TASKS_AUTO;
	in->opts.max_depth = b & 0x80 ? 16 : 0;
	in->opts.max_insns = 1u << 20; /* bounds the time of one input */
	in->trace = data + 1;
	in->ntrace = size - 1;
	return 1;
}

/* The tree is well-formed (node 0 the root, parents before children,
 * frames that exist) and every instruction (or sample) read is counted
 * once. */
static void check_profile(const struct profile *p)
{
	const struct profile_stats *st = profile_stats(p);
	size_t n = profile_nnodes(p), nf = profile_nframes(p);
	uint64_t self = 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct profile_node *node = profile_node(p, i);
		if (i && (node->parent >= i || node->frame >= nf ||
			  !profile_frame(p, node->frame)->name))
			abort();
		self += node->self_insns;
	}
	/* A sampled file's weights are its samples, kept in the instruction
	 * fields (docs/formats/SAMPLES.md). */
	if (n && self != (st->sampled ? st->samples : st->instructions))
		abort();
}

static int memfd = -1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_recon_input in;
	struct oob_err err = {0};
	struct profile *prof = NULL;
	char path[64];

	if (!decode(data, size, &in))
		return 0;
	if (memfd < 0) {
		oob_log_set_level(OOB_LOG_ERROR);
		if ((memfd = memfd_create("fuzz_recon", MFD_CLOEXEC)) < 0)
			abort();
	}
	if (ftruncate(memfd, 0) < 0 || pwrite(memfd, in.trace, in.ntrace, 0) != (ssize_t)in.ntrace)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	const char *traces[] = {path};
	int rc = recon_run(&in.opts, traces, 1, &prof, &err);
	if (rc < 0) {
		if (prof || !err.msg[0])
			abort(); /* a refusal must say why, and leave nothing */
		return 0;
	}
	if (!prof)
		abort();
	check_profile(prof);
	profile_free(prof);
	return 0;
}
