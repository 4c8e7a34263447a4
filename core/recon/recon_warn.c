/*
 * recon_warn: what a run saw that a user must know before trusting its
 * profile, added to it as warnings: instructions in code of no given ELF
 * (kernel code without a vmlinux, machine-mode firmware, user code of a
 * program not given), and binaries whose bits are not what the trace shows
 * ran at their addresses (another program linked at the same place, whose
 * functions would otherwise be shown under this one's names), and kernel
 * threads named by their function for want of their comm. Firmware
 * frames get their own kind here. Runs once on the finished profile;
 * nothing in the hot loop but code_put's counters.
 */
#include <inttypes.h>
#include <string.h>

#include "profile/profile_impl.h"
#include "recon/recon_impl.h"

/* Below this share of the instructions, code of no ELF is not worth a
 * warning (a few PLT-less stubs, a vDSO call). */
#define WARN_SHARE 0.01
/* Bits that differ at this share of the pcs checked (and at least this
 * many): not kernel code patching (alternatives, static keys) but another
 * program. */
#define DIFFER_SHARE 0.01
#define DIFFER_MIN   16
struct no_elf {
	uint64_t insns, lo, hi; /* instructions, and the lowest/highest entry */
};

static void add(struct no_elf *b, uint64_t insns, uint64_t addr)
{
	if (!b->insns || addr < b->lo)
		b->lo = addr;
	if (!b->insns || addr > b->hi)
		b->hi = addr;
	b->insns += insns;
}

static int is_firmware(const struct recon *r, uint64_t addr, int kernel_ran)
{
	return recon_firmware_pc(r, addr, kernel_ran);
}

static int kernel_given(const struct recon *r)
{
	for (size_t k = 0; k < r->run.nbins; k++) {
		uint64_t lo, hi;
		sym_binary_text_range(r->run.bins[k], &lo, &hi);
		if (lo >> 63)
			return 1;
	}
	return 0;
}

static void warn_no_elf(struct profile *p, const char *kind, const struct no_elf *b, uint64_t total,
			const char *where, const char *advice)
{
	if (!b->insns || (double)b->insns < WARN_SHARE * (double)total)
		return;
	profile_add_warning(p, kind,
			    "%.1f%% of the instructions (%" PRIu64 ") ran in %s of no given ELF "
			    "(0x%" PRIx64 "..0x%" PRIx64 "): %s",
			    100.0 * (double)b->insns / (double)total, b->insns, where, b->lo, b->hi,
			    advice);
}

static void warn_code_of_no_elf(const struct recon *r, struct profile *p)
{
	struct no_elf kernel = {0}, fw = {0}, user = {0};
	uint64_t total = p->nnodes ? p->nodes[0].total_insns : 0, kernel_insns = 0;
	for (size_t i = 1; i < p->nnodes; i++)
		if (p->frames[p->nodes[i].frame].kind == PROFILE_FRAME_KERNEL)
			kernel_insns += p->nodes[i].self_insns;
	for (size_t i = 1; i < p->nnodes; i++) {
		struct profile_frame *f = &p->frames[p->nodes[i].frame];
		uint64_t n = p->nodes[i].self_insns;
		if (f->binary || !f->addr)
			continue;
		if (f->kind == PROFILE_FRAME_KERNEL) {
			add(&kernel, n, f->addr);
		} else if (f->kind == PROFILE_FRAME_FIRMWARE ||
			   (f->kind == PROFILE_FRAME_USER &&
			    is_firmware(r, f->addr, kernel_insns > 0))) {
			f->kind = PROFILE_FRAME_FIRMWARE;
			add(&fw, n, f->addr);
		} else if (f->kind == PROFILE_FRAME_USER) {
			add(&user, n, f->addr);
		}
	}
	if (!total)
		return;
	if (kernel_given(r))
		warn_no_elf(p, "no_elf", &kernel, total, "kernel code",
			    "kernel modules, or another kernel than the vmlinux given?");
	else
		warn_no_elf(p, "no_vmlinux", &kernel, total, "kernel code",
			    "give the kernel's vmlinux (with its symbols) for its functions and "
			    "tasks");
	warn_no_elf(p, "firmware", &fw, total, "machine-mode firmware",
		    "give its ELF (e.g. OpenSBI's fw_jump.elf) to name its functions");
	warn_no_elf(p, "no_elf", &user, total, "user code",
		    "give that program or library (PATH@BASE for PIE code)");
}

/* The given binary, in another space than s, whose bits at pc are the ones
 * the trace showed there when they first differed from space s's, or NULL. */
static const char *other_owner(const struct recon *r, size_t s, uint64_t pc)
{
	uint32_t shown = r->run.spaces[s]->first_differ_bits;
	for (size_t k = 1; k < r->run.nspaces; k++) {
		uint32_t bits;
		const struct sym_mapping *map = NULL;
		if (k != s && code_elf_fetch(r->run.spaces[k], pc, &bits) && bits == shown &&
		    (sym_space_lookup(r->run.syms[k], pc, &map), map))
			return sym_binary_name(map->bin);
	}
	return NULL;
}

static void warn_bits(const struct recon *r, struct profile *p)
{
	for (size_t s = 0; s < r->run.nspaces; s++) {
		const struct code_space *cs = r->run.spaces[s];
		if (cs->elf_differ < DIFFER_MIN ||
		    (double)cs->elf_differ < DIFFER_SHARE * (double)cs->elf_checked)
			continue;
		const struct sym_mapping *map = NULL;
		sym_space_lookup(r->run.syms[s], cs->first_differ, &map);
		const char *name = map ? sym_binary_name(map->bin) : "the binary given";
		const char *other = s ? other_owner(r, s, cs->first_differ) : NULL;
		if (other) {
			profile_add_warning(
			    p, "bits_mismatch",
			    "the instructions the trace shows differ from %s's at %" PRIu64
			    " of the %" PRIu64 " addresses checked (first at 0x%" PRIx64 "), where "
			    "%s's match: the processes that ran them could not be told apart, so "
			    "their stacks mix; give the kernel's vmlinux or process events "
			    "(--events)",
			    name, cs->elf_differ, cs->elf_checked, cs->first_differ, other);
			continue;
		}
		profile_add_warning(
		    p, "bits_mismatch",
		    "the instructions the trace shows differ from %s's at %" PRIu64
		    " of the %" PRIu64 " addresses checked (first at 0x%" PRIx64
		    "): another program ran at its "
		    "addresses (linked at the same place?); its functions are shown under %s's "
		    "names: give that program too",
		    name, cs->elf_differ, cs->elf_checked, cs->first_differ, name);
	}
}

/* Kernel threads named by their thread function (tasks/tracker_park.c):
 * the kernel formats their comm into task_struct, which a trace without
 * store values does not show. Said once, with an example. */
static void warn_kthread_names(struct profile *p)
{
	size_t n = 0;
	const char *example = NULL;
	for (size_t i = 0; i < profile_nprocesses(p); i++) {
		const char *c = profile_process(p, i)->comm;
		if (c && !strncmp(c, "[kthread", 8) && (n++, !example))
			example = c;
	}
	if (n)
		profile_add_warning(
		    p, "kthread_names",
		    "%zu kernel threads are named by their thread function (%s), not by their "
		    "comm (kworker/0:0 ...): the kernel writes the comm into memory, and this "
		    "trace has no store values to read it from",
		    n, example);
}

void recon_warn(const struct recon *r, struct profile *p)
{
	warn_code_of_no_elf(r, p);
	warn_bits(r, p);
	warn_kthread_names(p);
}
