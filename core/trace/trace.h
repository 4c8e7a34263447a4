/*
 * trace: reading retired-instruction traces of every supported format into
 * one record model, batch by batch.
 *
 * A batch holds up to TRACE_BATCH_MAX consecutive retired instructions of ONE
 * hart, as parallel arrays (structure of arrays, so the reconstruction loop
 * touches only the fields it needs). Optional arrays are NULL when the format
 * does not carry the field. Side information that only some instructions
 * have (register writebacks, CSR writes, memory accesses, sideband events)
 * comes as a list of extras, each naming the record index it belongs to.
 *
 * Formats: the rows of trace_formats.h with ops (tracerv-bin, tracerv-text,
 * fireperf, spike, qemu, oobt), detected from the first bytes when
 * opts->format is TRACE_FMT_AUTO; LZ4 frames are transparent. A FirePerf
 * log opens but holds stack events, no instructions: see fireperf.h.
 *
 * Thread-safety: a reader is used by one thread at a time.
 */
#ifndef OOB_TRACE_H
#define OOB_TRACE_H

#include <stdint.h>

#include "util/in.h"
#include "util/oob_err.h"
#include "trace/trace_formats.h"

#define TRACE_BATCH_MAX 4096
/* A batch never carries more extras than this (readers end a batch early). */
#define TRACE_X_MAX (4 * TRACE_BATCH_MAX)

/* Fields a reader fills (trace_reader_fields). */
enum {
	TRACE_F_CYCLE = 1 << 0, /* batch->cycle */
	TRACE_F_INSN = 1 << 1,	/* batch->insn (0 = not known for that record) */
	TRACE_F_PRIV = 1 << 2,	/* batch->priv */
	TRACE_F_REGS = 1 << 3,	/* extras of kind REG/FREG/CSR */
	TRACE_F_MEM = 1 << 4,	/* extras of kind LOAD/STORE */
	TRACE_F_EVENTS = 1 << 5 /* extras of kind EVENT */
};

enum trace_extra_kind {
	TRACE_X_REG = 1, /* num = x register, val = value written */
	TRACE_X_FREG,	 /* num = f register */
	TRACE_X_CSR,	 /* num = CSR number (0x180 = satp), val = value written */
	TRACE_X_LOAD,	 /* addr, val (0 if the log has no value), size if known else 0 */
	TRACE_X_STORE,	 /* addr, val, size if known else 0 */
	TRACE_X_EVENT,	 /* text = one sideband JSON object (DESIGN.md 3.3) */
	TRACE_X_TRAP,	 /* val = cause (bit 63 = interrupt), addr = tval; the record
			    at idx is the first instruction of the handler */
};

/* The cause of a TRACE_X_TRAP that the trace does not give, only that control
 * left before the instruction due (QEMU user mode delivering a signal). */
#define TRACE_CAUSE_UNSAID 0xffffu

struct trace_extra {
	uint32_t idx; /* record index within the batch */
	uint8_t kind; /* enum trace_extra_kind */
	uint8_t size; /* access size in bytes for LOAD/STORE, 0 if unknown */
	uint16_t num;
	uint64_t addr;
	uint64_t val;
	const char *text; /* EVENT only; valid until the next trace_next */
};

struct trace_batch {
	uint32_t n;	 /* records, 1..TRACE_BATCH_MAX */
	uint16_t hart;	 /* every record of the batch retired on this hart */
	uint64_t *pc;	 /* canonical (sign-extended) virtual addresses */
	uint64_t *cycle; /* NULL unless TRACE_F_CYCLE; the hart's own clock as the trace
			    counts it (TracerV: tile clock; base clock = cycle * num / den
			    of trace_reader_clock_ratio) */
	uint32_t *insn;	 /* NULL unless TRACE_F_INSN; 16-bit encodings zero-extended */
	/* When not NULL: the indices (ascending) of the only records whose bits
	 * may differ from the bits last delivered for the same pc (oobt knows:
	 * its INSN operations). A consumer that caches bits per pc need only
	 * look at these. NULL: any record may bring new bits. */
	const uint32_t *insn_new;
	uint32_t ninsn_new;
	uint8_t *priv;	       /* NULL unless TRACE_F_PRIV; 0 = U, 1 = S, 3 = M */
	struct trace_extra *x; /* sorted by idx */
	uint32_t nx;
	uint64_t seq; /* index of record 0 among all records of the trace */
};

/* Layout parameters of TracerV binary traces; 0 means detect. */
struct trace_tracerv_opts {
	unsigned width;	    /* retire width 1..7 (slots used per record) */
	unsigned words;	    /* words per record incl. the cycle word (2..8) */
	unsigned valid_bit; /* 40 or 63 */
};

struct trace_opts {
	enum trace_format format; /* TRACE_FMT_AUTO to detect */
	struct trace_tracerv_opts tracerv;
	uint16_t hart;	   /* hart of single-hart files (TRACEFILE-C<n>), default 0 */
	struct in_opts in; /* following a growing file, size cap */
	/* The consumer keeps bits per pc and reads insn only at the insn_new
	 * indices: a reader that lists them may leave the rest of insn unset
	 * (oobt then skips its per-record cache lookups). */
	int insn_changes_only;
	/* Cycles in the base clock: each cycle word times the header's clock
	 * ratio (trace_reader_clock_ratio), so that tiles in different clock
	 * domains share one time axis. 0: the tile's own cycles. */
	int base_clock;
	/* oobt: the body is one piece of a file cut at sync points
	 * (trace_split.h): it starts with SYNC, which must say `first` records
	 * came before it, and may end between operations without END; its
	 * bytes were at `offset` of the file's decompressed body (messages). */
	struct {
		int on;
		uint64_t first, offset;
	} oobt_piece;
};

struct trace_reader;

/* Opens path, detects the format if asked to, and checks the header. NULL + err
 * on failure (unreadable, unknown format: -EINVAL "unknown trace format (first
 * bytes: ...)", bad header). opts may be NULL. A FirePerf log opens (so that
 * its format can be detected and reported) but trace_next refuses it with
 * -ENOTSUP: read it with fireperf.h. */
struct trace_reader *trace_open(const char *path, const struct trace_opts *opts,
				struct oob_err *err);
/* Same over an already opened stream, which the reader takes over. */
struct trace_reader *trace_open_stream(struct in_stream *s, const struct trace_opts *opts,
				       struct oob_err *err);
void trace_close(struct trace_reader *r);

/*
 * Reads the next batch. Returns 1 and sets *out (borrowed: valid until the next
 * call or trace_close), 0 at the end of the trace, or a negative errno with err
 * naming the format, the byte offset or line, and what was expected.
 */
int trace_next(struct trace_reader *r, const struct trace_batch **out, struct oob_err *err);

enum trace_format trace_reader_format(const struct trace_reader *r);
/* TRACE_F_* bits this reader fills. */
unsigned trace_reader_fields(const struct trace_reader *r);
/* Tile-to-base clock ratio: base-clock cycles = cycle * *num / *den. From a
 * TracerV header "Relative Frequency: m/d of Base Clock" (the tile runs at m/d
 * of the base frequency) num = d and den = m; oobt stores it; 1/1 otherwise. */
void trace_reader_clock_ratio(const struct trace_reader *r, uint64_t *num, uint64_t *den);
/* Raw input bytes consumed so far (progress). */
uint64_t trace_reader_raw_bytes(const struct trace_reader *r);
/* 1 if the input ended inside a record that was dropped (only with
 * in_opts.tail_may_be_cut), else 0. */
unsigned trace_reader_cut_records(const struct trace_reader *r);
/* A one-line description of detected parameters, e.g. "tracerv-bin: 16-byte
 * records, width 1, valid bit 63, lz4". Valid while r lives. */
const char *trace_reader_describe(const struct trace_reader *r);

#endif
