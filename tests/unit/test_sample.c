/* test_sample: the sampled-stack readers on small inputs whose counts are
 * known by construction, their detection, and their errors; the trap frame
 * layout the sampler reads from a vmlinux's DWARF against gdb's and nm's;
 * the prologue scan against the CFI GCC wrote for the same code. */
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oobtest.h"
#include "profile/profile.h"
#include "sample/sample.h"
#include "sample/sampler_prologue.h"
#include "sample/sampler_trap.h"
#include "sym/rv.h"
#include "trace/trace_formats.h"

static struct profile *read_str(const char *s, struct oob_err *e)
{
	struct profile *p = NULL;
	sample_read_mem(s, strlen(s), "t", NULL, &p, e);
	return p;
}

/* Self weight of the function named name (summed over its frames). */
static uint64_t self_of(const struct profile *p, const char *name)
{
	uint64_t w = 0;
	for (size_t i = 1; i < profile_nnodes(p); i++) {
		const struct profile_node *n = profile_node(p, (uint32_t)i);
		if (!strcmp(profile_frame(p, n->frame)->name, name))
			w += n->self_insns;
	}
	return w;
}

static void detect(void)
{
	static const struct {
		const char *text;
		enum trace_format f;
	} v[] = {
	    {"# uniprof\n0x1000\n0x2000\n1\n\n", TRACE_FMT_UNIPROF},
	    {"0x80000000\n1\n", TRACE_FMT_UNIPROF},
	    {"t  5039 13852.188092:     250000 cpu-clock: \n\t    1141 spin+0x1b (/t)\n",
	     TRACE_FMT_PERF_SCRIPT},
	    {"t  5039/5039  13852.188092: cpu-clock: \n\t    1141 spin (/t)\n",
	     TRACE_FMT_PERF_SCRIPT},
	    {"main;foo;bar 12\nmain 3\n", TRACE_FMT_FOLDED},
	    {"\x1f\x8b\x08\x00", TRACE_FMT_PPROF},
	    {"core   0: 0x0000000080000000 (0x00000297) auipc t0, 0x0\n", TRACE_FMT_SPIKE},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		const struct trace_format_row *r = trace_format_detect(
		    (const uint8_t *)v[i].text, strlen(v[i].text), TRACE_FORMATS_ALL);
		CHECK(r != NULL);
		CHECK_STR(r->name, trace_format_name(v[i].f));
	}
}

/* 3 complete walks, 1 failed, 1 cut by the end of the file. */
static void uniprof_counts(void)
{
	struct oob_err e = {0};
	struct profile *p = read_str("# comment\n0x10\n0x20\n1\n\n0x10\n0x20\n1\n\n0x30\n1\n\n"
				     "0x40\n0\n\n0x10\n0x20\n",
				     &e);
	CHECK(p != NULL);
	const struct profile_stats *s = profile_stats(p);
	CHECK_EQ(s->samples, 5);
	CHECK_EQ(s->failed_walks, 1);
	CHECK_EQ(s->truncated_walks, 1);
	CHECK_EQ(s->sampled, 1);
	CHECK_EQ(profile_node(p, 0)->total_insns, 5);
	CHECK_EQ(self_of(p, "0x10"), 3);
	CHECK_EQ(self_of(p, "0x30"), 1);
	CHECK_EQ(self_of(p, "0x40"), 1);
	CHECK_EQ(self_of(p, "[walk failed]"), 0);
	profile_free(p);
}

static void folded_weights(void)
{
	struct oob_err e = {0};
	struct profile *p =
	    read_str("main;a;b 10\nmain;a 5\nmain;sys_read_[k] 2\n\nmain;a;b 1\n", &e);
	CHECK(p != NULL);
	CHECK_EQ(profile_node(p, 0)->total_insns, 18);
	CHECK_EQ(self_of(p, "b"), 11);
	CHECK_EQ(self_of(p, "a"), 5);
	CHECK_EQ(self_of(p, "sys_read"), 2);
	CHECK_EQ(profile_stats(p)->samples, 18);
	profile_free(p);
}

static void perf_names(void)
{
	struct oob_err e = {0};
	struct profile *p =
	    read_str("t 1 1.0: 1 cpu-clock: \n\t 1141 spin+0x1b (/t)\n\t 11a4 "
		     "main+0x12 (/t)\n\nt 1 2.0: 1 cpu-clock: \n\t ffffffff81000e06 "
		     "asm_irq+0x6 ([kernel.kallsyms])\n\t 1141 spin+0x1b (/t)\n\t "
		     "11a4 main+0x12 (/t)\n\t 0 [unknown] ([unknown])\n",
		     &e);
	CHECK(p != NULL);
	CHECK_EQ(profile_stats(p)->samples, 2);
	CHECK_EQ(self_of(p, "spin"), 1);
	CHECK_EQ(self_of(p, "asm_irq"), 1);
	int kernel = 0;
	for (size_t i = 0; i < profile_nframes(p); i++)
		if (!strcmp(profile_frame(p, (uint32_t)i)->name, "asm_irq"))
			kernel = profile_frame(p, (uint32_t)i)->kind == PROFILE_FRAME_KERNEL;
	CHECK(kernel);
	profile_free(p);
}

/* The path of frame names from the root to the node of the innermost
 * frame named leaf, outermost first, ';'-separated. */
static void path_of(const struct profile *p, const char *leaf, char *out, size_t cap)
{
	out[0] = 0;
	for (uint32_t i = 1; i < profile_nnodes(p); i++) {
		if (strcmp(profile_frame(p, profile_node(p, i)->frame)->name, leaf))
			continue;
		const char *names[16];
		size_t n = 0;
		for (uint32_t k = i; k && n < 16; k = profile_node(p, k)->parent)
			names[n++] = profile_frame(p, profile_node(p, k)->frame)->name;
		while (n--) {
			strncat(out, names[n], cap - strlen(out) - 1);
			if (n)
				strncat(out, ";", cap - strlen(out) - 1);
		}
		return;
	}
}

/* oobprof sample's "# trap [...]" line joins a kernel stack to the user one
 * below it: a marker frame between them; before any address, a comment. */
static void uniprof_trap(void)
{
	struct oob_err e = {0};
	struct profile *p = read_str("# trap [irq: timer]\n0xffffffff80001000\n0xffffffff80002000\n"
				     "# trap [trap: ecall]\n0x1000\n0x2000\n1\n\n",
				     &e);
	char path[256];
	CHECK(p != NULL);
	path_of(p, "0xffffffff80001000", path, sizeof(path));
	CHECK_STR(path, "0x2000;0x1000;[trap: ecall];0xffffffff80002000;0xffffffff80001000");
	for (size_t i = 0; i < profile_nframes(p); i++)
		if (!strcmp(profile_frame(p, (uint32_t)i)->name, "[trap: ecall]"))
			CHECK_EQ(profile_frame(p, (uint32_t)i)->kind, PROFILE_FRAME_MARKER);
	CHECK_EQ(self_of(p, "[irq: timer]"), 0);
	CHECK_EQ(profile_stats(p)->samples, 1);
	profile_free(p);
}

static void errors(void)
{
	static const struct {
		const char *text, *msg;
	} v[] = {
	    {"0x10\n0x20\nbogus\n", "line 3: expected 0x<address>"},
	    {"t 1 1.0: cpu-clock:\n\t 1141 spin (/t)\n\nt 1 2.0: cpu-clock:\n\nx",
	     "line 4: sample "
	     "without a callchain"},
	    {"a;b 1\na;b\n", "line 2: expected \"frame;frame;... COUNT\""},
	    {"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", "gzip: cut short"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct oob_err e = {0};
		struct profile *p = read_str(v[i].text, &e);
		if (i == 3) { /* binary: strlen stops early, give the length */
			sample_read_mem(v[i].text, 10, "t", NULL, &p, &e);
		}
		CHECK(p == NULL);
		CHECK(strstr(e.msg, v[i].msg) != NULL);
	}
}

/* The number gdb prints after "$k = ", -1 when absent. */
static long gdb_value(const char *out, int k)
{
	char tag[16];
	snprintf(tag, sizeof(tag), "$%d = ", k);
	const char *p = strstr(out, tag);
	return p ? strtol(p + strlen(tag), NULL, 0) : -1;
}

/* The offset of member m in gdb's "ptype /o" lines (a comment with the
 * offset and size, then "unsigned long m;"), -1 when absent. */
static long gdb_offset(const char *out, const char *m)
{
	char tail[64];
	snprintf(tail, sizeof(tail), " %s;", m);
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *end = strchr(l, '\n') ? strchr(l, '\n') : l + strlen(l);
		const char *hit = strstr(l, tail);
		if (!strncmp(l, "/*", 2) && hit && hit < end)
			return strtol(l + 2, NULL, 10);
	}
	return -1;
}

/* The output of cmd (at most n - 1 bytes), "" when it failed. */
static void run(const char *cmd, char *buf, size_t n)
{
	FILE *p = popen(cmd, "r");
	size_t got = p ? fread(buf, 1, n - 1, p) : 0;
	buf[got] = '\0';
	if (p)
		pclose(p);
}

/* nm's address (and size) of a symbol. */
static uint64_t nm_addr(const char *vmlinux, const char *name, uint64_t *size)
{
	char cmd[4200], out[256];
	snprintf(
	    cmd, sizeof(cmd),
	    "riscv64-linux-gnu-nm -S '%s' | awk '$NF == \"%s\" { print $1, (NF == 4 ? $2 : 0); "
	    "exit }'",
	    vmlinux, name);
	run(cmd, out, sizeof(out));
	char *sz = strchr(out, ' ');
	if (size)
		*size = sz ? strtoull(sz + 1, NULL, 16) : 0;
	return strtoull(out, NULL, 16);
}

/* sampler_trap_layout_read on the booted kernel: every offset and size
 * gdb's "ptype /o struct pt_regs" and "sizeof(init_stack)" give, and the
 * entry code's and __schedule's addresses nm gives. */
static void trap_layout(void)
{
	static const Dwfl_Callbacks cbs = {.find_elf = dwfl_build_id_find_elf,
					   .find_debuginfo = dwfl_standard_find_debuginfo};
	const char *v = oobtest_gen("linux/sv39/vmlinux");
	if (!v)
		SKIP("linux/sv39/vmlinux absent (tests/tools/gen-linux.sh)");
	if (system("gdb --version >/dev/null 2>&1 && riscv64-linux-gnu-nm --version >/dev/null "
		   "2>&1") != 0)
		SKIP("gdb or riscv64-linux-gnu-nm not installed");
	static char out[16384];
	char cmd[4300];
	snprintf(cmd, sizeof(cmd),
		 "gdb -batch -ex 'ptype /o struct pt_regs' -ex 'print sizeof(struct pt_regs)' -ex "
		 "'print sizeof(init_stack)' '%s' 2>/dev/null",
		 v);
	run(cmd, out, sizeof(out));
	Dwfl *d = dwfl_begin(&cbs);
	dwfl_report_begin(d);
	Dwfl_Module *m = dwfl_report_elf(d, "vmlinux", v, -1, 0, false);
	dwfl_report_end(d, NULL, NULL);
	struct sampler_trap_layout l;
	struct oob_err e = {0};
	CHECK(m != NULL);
	CHECK_EQ(sampler_trap_layout_read(m, &l, &e), 0);
	CHECK_EQ((long)l.regs_size, gdb_value(out, 1));
	CHECK_EQ((long)l.thread_size, gdb_value(out, 2));
	CHECK_EQ((long)l.off_epc, gdb_offset(out, "epc"));
	CHECK_EQ((long)l.off_ra, gdb_offset(out, "ra"));
	CHECK_EQ((long)l.off_sp, gdb_offset(out, "sp"));
	CHECK_EQ((long)l.off_s0, gdb_offset(out, "s0"));
	CHECK_EQ((long)l.off_status, gdb_offset(out, "status"));
	CHECK_EQ((long)l.off_cause, gdb_offset(out, "cause"));
	uint64_t size;
	CHECK_EQ(l.entry_lo, nm_addr(v, "handle_exception", NULL));
	CHECK_EQ(l.entry_hi, nm_addr(v, "ret_from_fork", NULL));
	CHECK_EQ(l.sched_lo, nm_addr(v, "__schedule", &size));
	CHECK_EQ(l.sched_hi - l.sched_lo, size);
	printf("# pt_regs: %llu bytes, epc %llu ra %llu sp %llu s0 %llu status %llu cause %llu; "
	       "THREAD_SIZE %llu\n",
	       (unsigned long long)l.regs_size, (unsigned long long)l.off_epc,
	       (unsigned long long)l.off_ra, (unsigned long long)l.off_sp,
	       (unsigned long long)l.off_s0, (unsigned long long)l.off_status,
	       (unsigned long long)l.off_cause, (unsigned long long)l.thread_size);
	dwfl_end(d);
}

/* What the CFI says of the frame at addr, in sampler_frame's terms: 1, or
 * 0 when it has no row there, a CFA not on sp (a frame pointer), ra
 * undefined (the outermost frame) or a rule other than a CFA offset. */
static int cfi_frame(Dwarf_CFI *cfi, uint64_t addr, struct sampler_frame *f)
{
	Dwarf_Frame *fr;
	Dwarf_Op *ops, mem[3];
	size_t n;
	if (dwarf_cfi_addrframe(cfi, addr, &fr) != 0)
		return 0;
	int ok = dwarf_frame_cfa(fr, &ops, &n) == 0 && n == 1 && ops[0].atom == DW_OP_bregx &&
		 ops[0].number == 2;
	if (ok)
		f->cfa = (int32_t)ops[0].number2;
	for (int reg = 1; ok && reg <= 8; reg += 7) {
		int32_t *slot = reg == 1 ? &f->ra_at : &f->s0_at;
		ok = dwarf_frame_register(fr, reg, mem, &ops, &n) == 0 && (n || !ops);
		if (ok && n == 0)
			*slot = SAMPLER_NOT_SAVED; /* same value */
		else if (ok && n == 1 && ops[0].atom == DW_OP_call_frame_cfa)
			*slot = 0;
		else if (ok && n == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
			 ops[1].atom == DW_OP_plus_uconst)
			*slot = (int32_t)ops[1].number;
		else
			ok = 0;
	}
	free(fr);
	return ok;
}

struct scan_tally {
	long insns, known, compared, wrong;		      /* innermost frames */
	long calls, calls_known, calls_compared, calls_wrong; /* caller frames */
	long early;	  /* a save the CFI notes later (the register holds it too) */
	long placeholder; /* assembly whose CFI keeps the CFA at sp + 0 */
};

/* A save slot of the scan against the CFI's. GCC may schedule a save
 * before the CFI row that notes it: in an innermost frame the register
 * still holds the value the slot does (the scan refuses a write to it
 * before its save), so either is right. */
static int same_slot(int32_t scan, int32_t cfi, int caller, long *early)
{
	if (scan == cfi)
		return 1;
	if (caller || cfi != SAMPLER_NOT_SAVED)
		return 0;
	(*early)++;
	return 1;
}

static void scan_compare(Dwarf_CFI *cfi, uint64_t addr, const uint8_t *code, size_t size,
			 size_t off, int caller, struct scan_tally *t)
{
	struct sampler_frame a, b;
	long *known = caller ? &t->calls_known : &t->known,
	     *compared = caller ? &t->calls_compared : &t->compared,
	     *wrong = caller ? &t->calls_wrong : &t->wrong;
	if (!sampler_prologue_scan(code, size, off, caller, &a))
		return;
	(*known)++;
	if (!cfi_frame(cfi, addr, &b))
		return;
	/* hand-written assembly with an FDE that says nothing of its frame
	 * (glibc's _dl_runtime_resolve): the CFI is the one that is wrong */
	if (b.cfa == 0 && a.cfa != 0 && b.ra_at == SAMPLER_NOT_SAVED) {
		if (t->placeholder++ < 3)
			printf("# 0x%llx: CFI of a frame of %d bytes says sp + 0\n",
			       (unsigned long long)addr, a.cfa);
		return;
	}
	(*compared)++;
	if (a.cfa != b.cfa || !same_slot(a.ra_at, b.ra_at, caller, &t->early) ||
	    !same_slot(a.s0_at, b.s0_at, caller, &t->early)) {
		if ((*wrong)++ < 5)
			printf("# 0x%llx (%s): scan cfa %d ra %d s0 %d, CFI cfa %d ra %d s0 %d\n",
			       (unsigned long long)addr, caller ? "call" : "pc", a.cfa, a.ra_at,
			       a.s0_at, b.cfa, b.ra_at, b.s0_at);
	}
}

/* Every instruction of one function: as the innermost frame's pc, and each
 * call as a caller frame's. */
static void scan_function(Dwarf_CFI *cfi, uint64_t entry, const uint8_t *code, size_t size,
			  struct scan_tally *t)
{
	for (size_t off = 0; off + 2 <= size;) {
		uint32_t bits = code[off] | (uint32_t)code[off + 1] << 8;
		struct rv_insn in;
		if (rv_insn_len(bits) == 4 && off + 4 <= size)
			bits |= (uint32_t)code[off + 2] << 16 | (uint32_t)code[off + 3] << 24;
		if (!rv_decode(bits, &in))
			return;
		t->insns++;
		scan_compare(cfi, entry + off, code, size, off, 0, t);
		if ((in.kind == RV_CALL || in.kind == RV_CALL_IND) && in.rd == 1) {
			t->calls++;
			scan_compare(cfi, entry + off, code, size, off + in.len - 1, 1, t);
		}
		off += in.len;
	}
}

/* sampler_prologue_scan at every instruction and call site of a binary's
 * functions against its CFI (.eh_frame, else .debug_frame): where the scan
 * says it knows the frame and the CFI describes it on sp, they agree. */
static void prologue_binary(const char *path, const char *what, long min_compared)
{
	static const Dwfl_Callbacks cbs = {.find_elf = dwfl_build_id_find_elf,
					   .find_debuginfo = dwfl_standard_find_debuginfo};
	Dwfl *d = dwfl_begin(&cbs);
	dwfl_report_begin(d);
	Dwfl_Module *m = dwfl_report_elf(d, what, path, -1, 0, false);
	dwfl_report_end(d, NULL, NULL);
	Dwarf_Addr bias;
	Dwarf_CFI *cfi = m ? dwfl_module_eh_cfi(m, &bias) : NULL;
	if (m && !cfi)
		cfi = dwfl_module_dwarf_cfi(m, &bias);
	CHECK(cfi != NULL);
	struct scan_tally t = {0};
	int nsyms = cfi ? dwfl_module_getsymtab(m) : 0;
	for (int i = 1; i < nsyms; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		if (!dwfl_module_getsym_info(m, i, &sym, &addr, NULL, NULL, NULL) ||
		    GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_size)
			continue;
		Dwarf_Addr at = addr;
		Elf_Scn *scn = dwfl_module_address_section(m, &at, &bias);
		Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
		if (data && data->d_buf && at <= data->d_size && sym.st_size <= data->d_size - at)
			scan_function(cfi, addr, (const uint8_t *)data->d_buf + at, sym.st_size,
				      &t);
	}
	printf("# %s: %ld instructions, %ld frames known by the scan, %ld compared with the "
	       "CFI, %ld differ; %ld calls, %ld known, %ld compared, %ld differ; %ld saves "
	       "before their CFI row, %ld frames of CFI placeholders\n",
	       what, t.insns, t.known, t.compared, t.wrong, t.calls, t.calls_known,
	       t.calls_compared, t.calls_wrong, t.early, t.placeholder);
	CHECK(t.compared >= min_compared && t.calls_compared >= min_compared / 10);
	CHECK_EQ(t.wrong, 0);
	CHECK_EQ(t.calls_wrong, 0);
	dwfl_end(d);
}

static void prologue_vs_cfi(void)
{
	const char *init = oobtest_shared("fixtures/spike/init");
	const char *v = oobtest_gen("linux/sv39/vmlinux");
	if (!init)
		SKIP("../shared/fixtures/spike/init absent");
	prologue_binary(init, "init (static glibc)", 1000);
	if (v)
		prologue_binary(v, "vmlinux", 10000);
	else
		printf("# linux/sv39/vmlinux absent (tests/tools/gen-linux.sh): init only\n");
}

int main(void)
{
	OOBTEST_BEGIN("test_sample");
	RUN(detect);
	RUN(uniprof_counts);
	RUN(folded_weights);
	RUN(perf_names);
	RUN(uniprof_trap);
	RUN(trap_layout);
	RUN(prologue_vs_cfi);
	RUN(errors);
	return OOBTEST_END();
}
