/*
 * sampler_unwind: frame-pointer and CFI walks over a stopped target
 * (sampler_unwind.h).
 */
#include "sample/sampler_unwind.h"

#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"

/* Cached memory: aligned blocks, dropped at every stop. A frame-pointer
 * walk of a few frames touches one or two blocks. */
#define BLOCK	512
#define NBLOCKS 64
/* How far above sp a frame pointer may point: the largest stack we expect. */
#define STACK_WINDOW (64u << 20)

struct block {
	uint64_t addr;
	uint8_t data[BLOCK];
};

struct sampler_unwind {
	struct rsp *r;
	enum sampler_unwind_mode mode;
	unsigned max_depth;
	struct block blocks[NBLOCKS];
	size_t nblocks;
	struct sampler_unwind_stats st;
	Dwfl *dwfl;
	/* this walk */
	const uint64_t *regs;
	uint64_t *pcs;
	size_t n;
	int stub_failed;
	struct oob_err *err;
};

/* The 8-byte word at addr (aligned by the caller); -1 when unreadable, a
 * negative errno with u->stub_failed when the connection failed. */
static int read_word(struct sampler_unwind *u, uint64_t addr, uint64_t *v)
{
	uint64_t base = addr & ~(uint64_t)(BLOCK - 1);
	struct block *b = NULL;
	for (size_t i = 0; i < u->nblocks && !b; i++)
		if (u->blocks[i].addr == base)
			b = &u->blocks[i];
	if (!b) {
		if (u->nblocks == NBLOCKS)
			u->nblocks = 0; /* a deep walk: start over rather than grow */
		b = &u->blocks[u->nblocks];
		struct oob_err e = {0};
		int rc = rsp_read_mem(u->r, base, b->data, BLOCK, &e);
		u->st.mem_reads++;
		if (rc == -EIO) /* "Exx": not mapped, a walk gone astray */
			return -1;
		if (rc < 0) {
			u->stub_failed = 1;
			if (u->err)
				*u->err = e;
			return rc;
		}
		u->st.mem_bytes += BLOCK;
		b->addr = base;
		u->nblocks++;
	}
	memcpy(v, b->data + (addr - base), sizeof(*v));
	return 0;
}

static int push(struct sampler_unwind *u, uint64_t pc)
{
	if (u->n >= u->max_depth)
		return 0;
	u->pcs[u->n++] = pc;
	return 1;
}

static int plausible_fp(uint64_t fp, uint64_t above)
{
	return fp && !(fp & 7) && fp > above && fp - above < STACK_WINDOW;
}

/* 1 complete, 0 failed or cut, < 0 the stub failed. */
static int walk_fp(struct sampler_unwind *u)
{
	uint64_t sp = u->regs[2], fp = u->regs[8], ra, next;
	if (!push(u, u->regs[SAMPLER_PC]))
		return 0;
	if (!fp)
		return 1;
	if (!plausible_fp(fp, sp - 1))
		return 0;
	/* A leaf saved only s0 (a stack address) at fp-8; others ra there. */
	int rc = read_word(u, fp - 8, &next);
	if (rc < 0)
		return u->stub_failed ? rc : 0;
	if (plausible_fp(next, fp - 1) || !next) {
		if (!push(u, u->regs[1] - 1))
			return 0;
		fp = next;
	}
	while (fp) {
		uint64_t prev = fp;
		if ((rc = read_word(u, fp - 8, &ra)) < 0 || (rc = read_word(u, fp - 16, &next)) < 0)
			return u->stub_failed ? rc : 0;
		if (!ra)
			return 1;
		if (!push(u, ra - 1))
			return 0;
		fp = next;
		if (fp && !plausible_fp(fp, prev))
			return 0;
	}
	return 1;
}

/* ---- CFI: libdw's unwinder over the stub ---- */

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = arg;
	return 1;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	*thread_argp = arg;
	return tid == 1;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	(void)dwfl;
	struct sampler_unwind *u = arg;
	uint64_t v;
	if ((addr & 7) || read_word(u, addr, &v) < 0)
		return false;
	*result = v;
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct sampler_unwind *u = arg;
	Dwarf_Word regs[32];
	for (int i = 0; i < 32; i++)
		regs[i] = u->regs[i];
	regs[0] = 0;
	return dwfl_thread_state_registers(thread, 0, 32, regs) &&
	       (dwfl_thread_state_register_pc(thread, u->regs[SAMPLER_PC]), true);
}

static const Dwfl_Thread_Callbacks thread_cbs = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
};

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct sampler_unwind *u = arg;
	Dwarf_Addr pc;
	bool activation;
	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	return push(u, activation ? pc : pc - 1) ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static int walk_cfi(struct sampler_unwind *u)
{
	int rc = dwfl_getthread_frames(u->dwfl, 1, frame_cb, u);
	if (u->stub_failed)
		return u->err ? u->err->code : -EIO;
	/* 0: the outermost frame's CFI ends the chain (_start: ra undefined). */
	return rc == 0 && u->n < u->max_depth;
}

static const Dwfl_Callbacks dwfl_cbs = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
};

static int cfi_init(struct sampler_unwind *u, const struct sample_elf *elfs, size_t nelfs,
		    struct oob_err *err)
{
	if (!nelfs)
		return oob_err_set(err, -EINVAL,
				   "unwinding by CFI needs the program's ELF (--elf)");
	u->dwfl = dwfl_begin(&dwfl_cbs);
	if (!u->dwfl)
		return oob_err_set(err, -ENOMEM, "libdw: %s", dwfl_errmsg(-1));
	dwfl_report_begin(u->dwfl);
	for (size_t i = 0; i < nelfs; i++) {
		uint64_t base = elfs[i].base == SAMPLE_BASE_LINK ? 0 : elfs[i].base;
		if (!dwfl_report_elf(u->dwfl, elfs[i].path, elfs[i].path, -1, base, false))
			return oob_err_set(err, -EINVAL, "%s: %s", elfs[i].path, dwfl_errmsg(-1));
	}
	dwfl_report_end(u->dwfl, NULL, NULL);
	if (!dwfl_attach_state(u->dwfl, NULL, 1, &thread_cbs, u))
		return oob_err_set(err, -ENOTSUP, "libdw cannot unwind this target: %s",
				   dwfl_errmsg(-1));
	return 0;
}

int sampler_unwind_new(struct rsp *r, enum sampler_unwind_mode mode, const struct sample_elf *elfs,
		       size_t nelfs, unsigned max_depth, struct sampler_unwind **out,
		       struct oob_err *err)
{
	struct sampler_unwind *u = oob_xcalloc(1, sizeof(*u));
	u->r = r;
	u->mode = mode;
	u->max_depth = max_depth ? max_depth : 1;
	int rc = mode == SAMPLER_UNWIND_CFI ? cfi_init(u, elfs, nelfs, err) : 0;
	if (rc < 0) {
		sampler_unwind_free(u);
		return rc;
	}
	*out = u;
	return 0;
}

void sampler_unwind_free(struct sampler_unwind *u)
{
	if (!u)
		return;
	if (u->dwfl)
		dwfl_end(u->dwfl);
	free(u);
}

int sampler_unwind_stack(struct sampler_unwind *u, const uint64_t regs[SAMPLER_NREGS],
			 uint64_t *pcs, size_t *n, struct oob_err *err)
{
	u->nblocks = 0; /* memory may have changed since the last stop */
	u->regs = regs;
	u->pcs = pcs;
	u->n = 0;
	u->stub_failed = 0;
	u->err = err;
	int rc = u->mode == SAMPLER_UNWIND_CFI ? walk_cfi(u) : walk_fp(u);
	*n = u->n;
	return rc;
}

void sampler_unwind_get_stats(const struct sampler_unwind *u, struct sampler_unwind_stats *st)
{
	*st = u->st;
}
