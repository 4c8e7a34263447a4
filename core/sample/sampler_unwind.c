/*
 * sampler_unwind: frame-pointer and CFI walks over a stopped target
 * (sampler_unwind.h).
 */
#include "sample/sampler_unwind.h"

#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample/sampler_prologue.h"
#include "sample/sampler_trap.h"
#include "sym/rv.h"
#include "util/oob_mem.h"

/* Cached memory: aligned blocks, dropped at every stop. A frame-pointer
 * walk of a few frames touches one or two blocks. */
#define BLOCK	512
#define NBLOCKS 64
/* How far above sp a frame pointer may point: the largest stack we expect. */
#define STACK_WINDOW (64u << 20)
/* Stack segments of one sample: traps nest (an interrupt in a syscall ...). */
#define MAX_SEGMENTS 8
/* Functions without CFI met by walks (fn_at): a hash set by entry; a clash
 * forgets the older one. */
#define NFNS 256

struct fn_code {
	uint64_t entry;	     /* 0: empty */
	const uint8_t *code; /* NULL: its code is not in the ELF */
	size_t size;
	int leaf; /* leaf_code's verdict */
};

/* The frame libdw walked last: where it stops for want of CFI. */
struct last_frame {
	uint64_t at, sp, s0; /* at: inside the instruction that made the frame */
	int live;	     /* the walk's first frame: every register its own */
};

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
	struct sampler_trap_layout trap; /* trap.regs_size 0: traps not joined */
	char trap_note[512];		 /* why not, when a kernel was given */
	/* this walk */
	const uint64_t *regs;
	uint64_t *pcs;
	size_t n;
	int stub_failed;
	struct oob_err *err;
	uint64_t trap_frame; /* != 0: the segment ended at this pt_regs */
	struct sampler_join joins[MAX_SEGMENTS];
	size_t njoins;
	int ret_first;	 /* the walk's first pc is a return address (leaf_step) */
	int read_failed; /* libdw asked for memory the stub could not read */
	struct last_frame last;
	size_t stepped_at; /* u->n at the last prologue_step */
	struct fn_code fns[NFNS];
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
	if ((addr & 7) || read_word(u, addr, &v) < 0) {
		u->read_failed = 1;
		return false;
	}
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

static int word_at(struct sampler_unwind *u, uint64_t addr, uint64_t *v)
{
	return (addr & 7) ? -1 : read_word(u, addr, v);
}

/* Whether the instruction before ret is a call (jal/jalr, c.jalr with ra
 * as the link): the syscall path calls its handler, the others jump to it
 * with ra set beforehand; the exact stack has the entry frame only for a
 * call. */
static int called_from(struct sampler_unwind *u, uint64_t ret)
{
	uint64_t base = (ret - 4) & ~(uint64_t)7, w[2];
	uint8_t b[16];
	if (word_at(u, base, &w[0]) < 0 || word_at(u, base + 8, &w[1]) < 0)
		return 0;
	memcpy(b, w, sizeof(b)); /* RISC-V and the stub's m packets: little-endian */
	size_t at = (size_t)(ret - 4 - base);
	uint32_t insn = (uint32_t)b[at] | (uint32_t)b[at + 1] << 8 | (uint32_t)b[at + 2] << 16 |
			(uint32_t)b[at + 3] << 24;
	uint16_t c = (uint16_t)(insn >> 16);
	unsigned op = insn & 0x7f, rd = (insn >> 7) & 0x1f;
	return ((op == 0x67 || op == 0x6f) && rd == 1) || ((c & 0xf07f) == 0x9002 && (c & 0xf80));
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct sampler_unwind *u = arg;
	Dwarf_Addr pc;
	Dwarf_Word sp;
	bool activation;
	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	/* at: inside the instruction that made the frame (a return address - 1;
	 * leaf_step's first pc is one already) */
	int ret = !activation || u->ret_first;
	uint64_t at = activation ? pc : pc - 1;
	u->ret_first = 0;
	/* A return into the exception entry code: the handler's caller is the
	 * trap, the pt_regs at this frame's sp (sampler_trap.h). The entry
	 * code is a frame of the exact stack only where it called the handler
	 * (syscalls); elsewhere it jumped to it. */
	if (ret && u->trap.regs_size && at >= u->trap.entry_lo && at < u->trap.entry_hi) {
		if (called_from(u, at + 1) && !push(u, at))
			return DWARF_CB_ABORT;
		if (dwfl_frame_reg(state, 2, &sp) == 0)
			u->trap_frame = sp;
		return DWARF_CB_ABORT;
	}
	Dwarf_Word s0;
	u->last = (struct last_frame){.at = at, .live = !ret};
	if (dwfl_frame_reg(state, 2, &sp) == 0)
		u->last.sp = sp;
	if (dwfl_frame_reg(state, 8, &s0) == 0)
		u->last.s0 = s0;
	return push(u, at) ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* Whether the function at [entry, entry + size) of module m never writes
 * ra or sp (rv_int_dest over its code in the ELF) and calls nothing, not
 * even through t0 (the kernel's __memmove calls its own byte-copy helpers
 * with jal t0, frames the trace shows): wherever it stopped, its caller is
 * at ra with the same sp. Any instruction rv_decode rejects, or code the
 * ELF does not hold, makes it not a leaf. */
static int leaf_code(const uint8_t *c, uint64_t size)
{
	for (uint64_t off = 0; off < size;) {
		struct rv_insn in;
		uint32_t bits = c[off] | (uint32_t)c[off + 1] << 8;
		if (off + 1 >= size)
			return 0;
		if (rv_insn_len(bits) == 4) {
			if (off + 3 >= size)
				return 0;
			bits |= (uint32_t)c[off + 2] << 16 | (uint32_t)c[off + 3] << 24;
		}
		unsigned rd = rv_int_dest(bits);
		if (!rv_decode(bits, &in) || rd == 1 || rd == 2 || in.kind == RV_CALL ||
		    in.kind == RV_CALL_IND || in.kind == RV_SWAP)
			return 0;
		off += in.len;
	}
	return 1;
}

/* The size of the code symbol at entry: libdw may name an alias without
 * one (the kernel's weak memcpy for __memcpy); assembly functions may have
 * no type (the kernel's SYM_FUNC_START). 0 when none. */
static uint64_t fn_size(Dwfl_Module *m, uint64_t entry)
{
	int n = dwfl_module_getsymtab(m);
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		if (dwfl_module_getsym_info(m, i, &sym, &addr, NULL, NULL, NULL) && addr == entry &&
		    sym.st_size &&
		    (GELF_ST_TYPE(sym.st_info) == STT_FUNC ||
		     GELF_ST_TYPE(sym.st_info) == STT_NOTYPE))
			return sym.st_size;
	}
	return 0;
}

/* The function around pc, its code from the ELF (cached by entry), or
 * NULL. The trap entry code is none: it is jumped to. */
static const struct fn_code *fn_at(struct sampler_unwind *u, uint64_t pc)
{
	Dwfl_Module *m = dwfl_addrmodule(u->dwfl, pc);
	GElf_Sym sym;
	GElf_Off off;
	if (!m || (u->trap.regs_size && pc >= u->trap.entry_lo && pc < u->trap.entry_hi) ||
	    !dwfl_module_addrinfo(m, pc, &off, &sym, NULL, NULL, NULL))
		return NULL;
	uint64_t entry = pc - off;
	struct fn_code *f = &u->fns[(entry >> 1) % NFNS];
	if (f->entry != entry) {
		uint64_t size = sym.st_size ? sym.st_size : fn_size(m, entry);
		Dwarf_Addr at = entry, bias;
		Elf_Scn *scn = dwfl_module_address_section(m, &at, &bias);
		Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
		*f = (struct fn_code){.entry = entry, .size = size};
		if (d && d->d_buf && at <= d->d_size && size <= d->d_size - at)
			f->code = (const uint8_t *)d->d_buf + at;
		f->leaf = f->code && leaf_code(f->code, size);
	}
	return f->code && pc - entry < f->size ? f : NULL;
}

/* Whether pc is in a function that leaf_code accepts. */
static int leaf_fn(struct sampler_unwind *u, uint64_t pc)
{
	const struct fn_code *f = fn_at(u, pc);
	return f && f->leaf;
}

/* Whether the segment that ends at the trap may be a task being switched
 * out: __schedule innermost, or the function it called (switch_mm,
 * __switch_to). Past switch_mm the stub reads user memory through the next
 * task's page table, so the user part of the old task cannot be read (its
 * saved ra came out 0, a walk taken as complete). The resumed task's
 * finish_task_switch is one of those too: its join is lost with them. */
static int switching(const struct sampler_unwind *u)
{
	const struct sampler_trap_layout *l = &u->trap;
	size_t first = u->njoins ? u->joins[u->njoins - 1].at : 0;
	for (size_t i = first; i < u->n && i < first + 2; i++)
		if (u->pcs[i] >= l->sched_lo && u->pcs[i] < l->sched_hi)
			return 1;
	return 0;
}

/* The registers the trap at u->trap_frame interrupted, into regs: 1 when
 * they are plausible, 2 when no trap saved them (the walk is complete), 0
 * when not plausible (the walk failed), < 0 the stub failed. */
static int join(struct sampler_unwind *u, uint64_t regs[SAMPLER_NREGS])
{
	const struct sampler_trap_layout *l = &u->trap;
	uint64_t pt = u->trap_frame, status, cause, epc, ra, sp, s0;
	uint64_t top = (pt | (l->thread_size - 1)) + 1;
	int rc;
	if (!pt || pt + l->regs_size > top)
		return 0;
	if ((rc = word_at(u, pt + l->off_status, &status)) < 0 ||
	    (rc = word_at(u, pt + l->off_cause, &cause)) < 0 ||
	    (rc = word_at(u, pt + l->off_epc, &epc)) < 0 ||
	    (rc = word_at(u, pt + l->off_ra, &ra)) < 0 ||
	    (rc = word_at(u, pt + l->off_sp, &sp)) < 0 ||
	    (rc = word_at(u, pt + l->off_s0, &s0)) < 0)
		return u->stub_failed ? rc : 0;
	int from_user = !(status & SAMPLER_SR_SPP);
	if (from_user && switching(u))
		return 0;
	/* A kernel thread's function returns to ret_from_exception too, over
	 * the pt_regs copy_thread made (epc 0), or that kernel_execve filled
	 * for the first user program: scause 0, instruction address
	 * misaligned, which no trap has with the C extension. Its start, the
	 * outermost frame. */
	if ((!from_user && !epc) || (from_user && !cause))
		return 2;
	/* From user mode: task_pt_regs(), the top of the kernel stack (pt_regs
	 * rounded up to the 16-byte stack alignment); from S-mode: pushed on
	 * the same stack, below the interrupted frames. */
	if (from_user ? pt + ((l->regs_size + 15) & ~(uint64_t)15) != top || (epc >> 63)
		      : sp <= pt || sp > top || !(epc >> 63))
		return 0;
	/* handle_syscall advances epc past the ecall before the syscall runs;
	 * the user frame is at the ecall. Signal delivery sets cause to -1 to
	 * keep a syscall from restarting twice: still the syscall's trap. */
	if (from_user && cause == SAMPLER_EXC_SYSCALL)
		epc -= 4;
	else if (from_user && cause == UINT64_MAX)
		cause = SAMPLER_EXC_SYSCALL;
	memset(regs, 0, SAMPLER_NREGS * sizeof(*regs));
	regs[SAMPLER_PC] = epc;
	regs[1] = ra;
	regs[2] = sp;
	regs[8] = s0;
	u->joins[u->njoins++] = (struct sampler_join){.at = u->n, .cause = cause};
	return 1;
}

/* A segment whose walk stopped at its first frame, in a function without
 * CFI (hand-written assembly: memset, memcpy, __asm_copy_to_user): when
 * that function never writes ra or sp, the walk goes on from ra, into
 * leaf_regs. 1 when it did, 0 when the segment stays as it is. */
static int leaf_step(struct sampler_unwind *u, size_t first, int rc, uint64_t *leaf_regs)
{
	if (rc == 0 || u->trap_frame || u->n != first + 1 || u->n >= u->max_depth ||
	    u->pcs[first] != u->regs[SAMPLER_PC] || !u->regs[1] || !leaf_fn(u, u->pcs[first]))
		return 0;
	/* ra - 1: libdw looks up the initial frame's CFI at its pc, and a
	 * call that ends a function (to a noreturn one) returns past it */
	memcpy(leaf_regs, u->regs, SAMPLER_NREGS * sizeof(*leaf_regs));
	leaf_regs[SAMPLER_PC] = u->regs[1] - 1;
	u->regs = leaf_regs;
	u->ret_first = 1;
	u->st.leaf_walks++;
	return 1;
}

/* A register the prologue saved at cfa + at into *v (left as it is when
 * not saved); -1 when unreadable. */
static int saved(struct sampler_unwind *u, uint64_t cfa, int32_t at, uint64_t *v)
{
	return at == SAMPLER_NOT_SAVED ? 0 : word_at(u, cfa + (uint64_t)(int64_t)at, v);
}

/*
 * A walk that libdw ended at a frame without CFI, not a leaf: its frame
 * from its prologue (sampler_prologue.h), and the walk goes on in its
 * caller, into regs. The return address read must follow a call
 * (called_from), else the walk stays failed. 1 when it went on.
 */
static int prologue_step(struct sampler_unwind *u, int rc, uint64_t *regs)
{
	const struct last_frame *l = &u->last;
	const struct fn_code *fn;
	struct sampler_frame f;
	uint64_t ra = u->regs[1], s0 = l->s0;
	if (rc != -1 || u->trap_frame || u->read_failed || u->n <= u->stepped_at ||
	    u->n >= u->max_depth || !(fn = fn_at(u, l->at)) ||
	    !sampler_prologue_scan(fn->code, fn->size, l->at - fn->entry, !l->live, &f))
		return 0;
	uint64_t cfa = l->sp + (uint64_t)(int64_t)f.cfa;
	if (saved(u, cfa, f.ra_at, &ra) < 0 || saved(u, cfa, f.s0_at, &s0) < 0 || !ra ||
	    !called_from(u, ra))
		return 0;
	uint64_t next[SAMPLER_NREGS];
	memcpy(next, u->regs, sizeof(next));
	next[SAMPLER_PC] = ra - 1; /* as leaf_step */
	next[2] = cfa;
	next[8] = s0;
	memcpy(regs, next, sizeof(next));
	u->regs = regs;
	u->ret_first = 1;
	u->stepped_at = u->n;
	u->st.prologue_steps++;
	return 1;
}

static int walk_cfi(struct sampler_unwind *u)
{
	uint64_t regs[MAX_SEGMENTS][SAMPLER_NREGS], step_regs[SAMPLER_NREGS];
	for (size_t seg = 0;; seg++) {
		u->trap_frame = 0;
		u->read_failed = 0;
		size_t first = u->n;
		u->stepped_at = first;
		int rc = dwfl_getthread_frames(u->dwfl, 1, frame_cb, u);
		if (!u->stub_failed && leaf_step(u, first, rc, step_regs))
			rc = dwfl_getthread_frames(u->dwfl, 1, frame_cb, u);
		while (!u->stub_failed && prologue_step(u, rc, step_regs))
			rc = dwfl_getthread_frames(u->dwfl, 1, frame_cb, u);
		u->ret_first = 0;
		if (u->stub_failed)
			return u->err ? u->err->code : -EIO;
		if (!u->trap_frame || u->n >= u->max_depth)
			/* 0: the outermost frame's CFI ends the chain (_start:
			 * ra undefined), or a saved ra libdw could not read
			 * (a stack being unmapped by exit_mmap): not complete */
			return rc == 0 && u->n < u->max_depth && !u->read_failed;
		if (seg + 1 == MAX_SEGMENTS || (rc = join(u, regs[seg])) <= 0)
			return rc;
		if (rc == 2)
			return 1;
		u->regs = regs[seg];
	}
}

static const Dwfl_Callbacks dwfl_cbs = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
};

/* The kernel (a module in the upper half): its trap layout, when it has
 * one; without, kernel stacks end at their trap as before. */
static int find_kernel(Dwfl_Module *m, void **userdata, const char *name, Dwarf_Addr start,
		       void *arg)
{
	(void)userdata;
	(void)name;
	struct sampler_unwind *u = arg;
	struct oob_err e = {0};
	if (!(start >> 63))
		return DWARF_CB_OK;
	if (sampler_trap_layout_read(m, &u->trap, &e) < 0) {
		memset(&u->trap, 0, sizeof(u->trap));
		snprintf(u->trap_note, sizeof(u->trap_note), "%s", e.msg);
	}
	return DWARF_CB_ABORT;
}

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
	dwfl_getmodules(u->dwfl, find_kernel, u, 0);
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
	u->njoins = 0;
	int rc = u->mode == SAMPLER_UNWIND_CFI ? walk_cfi(u) : walk_fp(u);
	*n = u->n;
	return rc;
}

void sampler_unwind_get_stats(const struct sampler_unwind *u, struct sampler_unwind_stats *st)
{
	*st = u->st;
}

size_t sampler_unwind_joins(const struct sampler_unwind *u, const struct sampler_join **joins)
{
	*joins = u->joins;
	return u->njoins;
}

const char *sampler_unwind_trap_note(const struct sampler_unwind *u)
{
	return u->trap_note[0] ? u->trap_note : NULL;
}
