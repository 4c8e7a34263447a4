/*
 * sample internals: the profile builder the readers feed, one sample at a
 * time (sample.c), and the readers (sample_text.c, sample_pprof.c).
 */
#ifndef OOB_SAMPLE_IMPL_H
#define OOB_SAMPLE_IMPL_H

#include "profile/cct.h"
#include "profile/frame.h"
#include "sample/sample.h"
#include "sym/sym.h"

enum sample_status { SAMPLE_OK = 0, SAMPLE_FAILED, SAMPLE_TRUNCATED };

/* perf's default callchain depth (kernel.perf_event_max_stack): a chain
 * this long was most likely cut. */
#define SAMPLE_PERF_MAX_STACK 127

struct sample_builder {
	struct frame_table ft;
	struct cct cct;
	const char **fbin;  /* per frame: binary basename or NULL (borrowed) */
	uint64_t *faddr;    /* per frame: entry address or 0 */
	const char **ffile; /* per frame: declaring source file or NULL (borrowed) */
	size_t fcap;
	struct sym_space *space;
	struct sym_binary **bins;
	size_t nbins;
	uint32_t *stk; /* this sample's frames, innermost first */
	size_t n, cap;
	struct profile_stats st;
};

int sample_builder_init(struct sample_builder *b, const struct sample_opts *o, struct oob_err *err);
void sample_builder_destroy(struct sample_builder *b);

/* Frames of the current sample, innermost first. addr: a run-time address
 * (or DSO-relative when dso names a given ELF); name/dso: what the tool said,
 * NULL if nothing (name without perf's "+0x.." offset). */
void sample_push_addr(struct sample_builder *b, uint64_t addr, const char *name, size_t nlen,
		      const char *dso, size_t dlen);
void sample_push_name(struct sample_builder *b, const char *name, size_t len, unsigned kind);
/* Ends the current sample, adding weight to its stack. */
void sample_end(struct sample_builder *b, uint64_t weight, enum sample_status s);
/* The profile (format name fmt). */
struct profile *sample_builder_finish(struct sample_builder *b, const char *fmt,
				      struct oob_err *err);

/* The readers: buf[0..n) into b. Errors name the line (text) or byte. */
int sample_read_uniprof(struct sample_builder *b, const char *buf, size_t n, struct oob_err *err);
int sample_read_perf(struct sample_builder *b, const char *buf, size_t n, struct oob_err *err);
int sample_read_folded(struct sample_builder *b, const char *buf, size_t n, struct oob_err *err);
/* A profile.proto message (already decompressed). */
int sample_read_pprof(struct sample_builder *b, const uint8_t *buf, size_t n, struct oob_err *err);

#endif
