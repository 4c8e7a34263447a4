/*
 * test_rv: rv_decode against GNU objdump, instruction by instruction.
 *
 * For every instruction objdump lists in a binary: the bits read through
 * sym_binary_read equal objdump's raw column, rv_decode's length equals
 * objdump's, the kind matches the mnemonic (and, for jal/jalr/jr, the
 * registers in objdump's operands through the RAS-hint table of the spec), the
 * direct target equals the address objdump prints, and CSR numbers match the
 * CSR names. Binaries: the Spike fixture's prog, init and vmlinux, our cti.S
 * (every control-transfer form and the immediate extremes) and a PIE, plus
 * every 16-bit encoding and a deterministic sample of 32-bit words, assembled
 * with .insn so objdump decodes them too.
 *
 * rv_int_dest against objdump -M no-aliases, whose first operand is the
 * destination of every instruction that has one: on the same binaries.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oobtest.h"
#include "sym/rv.h"
#include "sym/sym.h"

#define OBJDUMP "riscv64-linux-gnu-objdump"

struct tally {
	long insns, data, targets, csrs, bits_bad, mismatches;
	long kinds[RV_INVALID + 1];
	long relaxed; /* OTHER vs INVALID disagreements outside RV64GC (see below) */
};

static int reg_num(const char *s, size_t n)
{
	static const char *const abi[32] = {"zero", "ra", "sp",	 "gp",	"tp", "t0", "t1", "t2",
					    "s0",   "s1", "a0",	 "a1",	"a2", "a3", "a4", "a5",
					    "a6",   "a7", "s2",	 "s3",	"s4", "s5", "s6", "s7",
					    "s8",   "s9", "s10", "s11", "t3", "t4", "t5", "t6"};
	if (n == 2 && !strncmp(s, "fp", 2))
		return 8;
	for (int i = 0; i < 32; i++)
		if (strlen(abi[i]) == n && !strncmp(s, abi[i], n))
			return i;
	return -1;
}

static int is_link(int r)
{
	return r == 1 || r == 5;
}

/* The spec's RAS-hint table, written from the spec (not from rv.c). */
static unsigned ras_kind(int rd, int rs1)
{
	if (is_link(rd) && is_link(rs1))
		return rd == rs1 ? RV_CALL_IND : RV_SWAP;
	if (is_link(rd))
		return RV_CALL_IND;
	return is_link(rs1) ? RV_RET : RV_JUMP_IND;
}

/* "rs", "imm(rs)", "rd,rs" or "rd,imm(rs)" as objdump prints jalr/jr. */
static int parse_jalr(const char *ops, int rd_default, int *rd, int *rs1, long *imm)
{
	const char *comma = strchr(ops, ','), *arg = ops, *paren;
	size_t n;

	*rd = rd_default;
	if (comma) {
		*rd = reg_num(ops, (size_t)(comma - ops));
		arg = comma + 1;
	}
	*imm = 0;
	paren = strchr(arg, '(');
	if (paren) {
		*imm = strtol(arg, NULL, 10);
		arg = paren + 1;
	}
	n = strcspn(arg, ") #");
	*rs1 = reg_num(arg, n);
	return *rd < 0 || *rs1 < 0 ? -1 : 0;
}

/* Target of jal/j/branches: the hex number after the last comma (or first). */
static uint64_t parse_target(const char *ops)
{
	const char *c = strrchr(ops, ',');
	return strtoull(c ? c + 1 : ops, NULL, 16);
}

static const struct {
	const char *name;
	unsigned csr;
} csr_names[] = {
    {"fflags", 0x001},	 {"frm", 0x002},	{"fcsr", 0x003},     {"cycle", 0xc00},
    {"time", 0xc01},	 {"instret", 0xc02},	{"sstatus", 0x100},  {"sie", 0x104},
    {"stvec", 0x105},	 {"scounteren", 0x106}, {"sscratch", 0x140}, {"sepc", 0x141},
    {"scause", 0x142},	 {"stval", 0x143},	{"sip", 0x144},	     {"satp", 0x180},
    {"mstatus", 0x300},	 {"misa", 0x301},	{"mie", 0x304},	     {"mtvec", 0x305},
    {"mscratch", 0x340}, {"mepc", 0x341},	{"mcause", 0x342},   {"mhartid", 0xf14},
};

/* CSR number named by objdump's operands for mnemonic mn, or -1 if unknown. */
static long expected_csr(const char *mn, const char *ops)
{
	static const struct {
		const char *mn;
		unsigned csr;
	} implied[] = {{"rdcycle", 0xc00}, {"rdtime", 0xc01}, {"rdinstret", 0xc02}, {"frcsr", 3},
		       {"fscsr", 3},	   {"frrm", 2},	      {"fsrm", 2},	    {"fsrmi", 2},
		       {"frflags", 1},	   {"fsflags", 1},    {"fsflagsi", 1}};
	char buf[64];
	const char *p = ops;
	size_t n;

	for (size_t i = 0; i < sizeof(implied) / sizeof(implied[0]); i++)
		if (!strcmp(mn, implied[i].mn))
			return implied[i].csr;
	/* csrr rd,CSR and csrrX rd,CSR,x name it second; csrw/s/c(i) CSR,x first */
	if (!strcmp(mn, "csrr") || !strncmp(mn, "csrr", 4))
		p = strchr(ops, ',') ? strchr(ops, ',') + 1 : ops;
	n = strcspn(p, ",");
	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	if (!strncmp(buf, "0x", 2))
		return strtol(buf, NULL, 16);
	for (size_t i = 0; i < sizeof(csr_names) / sizeof(csr_names[0]); i++)
		if (!strcmp(buf, csr_names[i].name))
			return csr_names[i].csr;
	return -1;
}

static int in_list(const char *mn, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(mn, *list))
			return 1;
	return 0;
}

static const char *const branches[] = {"beq",  "bne",  "blt",  "bge",  "bltu", "bgeu",
				       "beqz", "bnez", "blez", "bgez", "bltz", "bgtz",
				       "bgt",  "ble",  "bgtu", "bleu", NULL};
static const char *const csr_ops[] = {
    "csrr",  "csrw",   "csrs",	 "csrc",    "csrrw",   "csrrs",	   "csrrc",	"csrwi", "csrsi",
    "csrci", "csrrwi", "csrrsi", "csrrci",  "rdcycle", "rdtime",   "rdinstret", "frcsr", "fscsr",
    "frrm",  "fsrm",   "fsrmi",	 "frflags", "fsflags", "fsflagsi", NULL};

/*
 * Encodings the spec reserves that objdump 2.40 still prints as instructions:
 * floating-point operations with rounding mode 5 or 6 ("unknown") and
 * c.addi16sp with a zero immediate ("add sp,sp,0" from 0x6101).
 */
static int reserved_but_listed(const char *mn, const char *ops, uint32_t bits)
{
	if (mn[0] == 'f' && strncmp(mn, "fence", 5) != 0 && strstr(ops, "unknown"))
		return 1;
	return bits == 0x6101;
}

/*
 * What objdump's line says: the kind, and the register/target/CSR facts to
 * check. Returns -1 for data (mapping-symbol regions), which is not decoded.
 */
struct expect {
	int kind;
	int rd, rs1; /* -1: not checked */
	long imm;
	int has_target;
	uint64_t target;
	long csr;
};

static int expect_of(const char *mn, const char *ops, uint32_t bits, unsigned len, struct expect *e)
{
	*e = (struct expect){.kind = RV_OTHER, .rd = -1, .rs1 = -1, .csr = -1};
	if (!strcmp(mn, ".word") || !strcmp(mn, ".short") || !strcmp(mn, ".byte") ||
	    !strcmp(mn, ".dword"))
		return -1;
	if (!strcmp(mn, ".2byte") || !strcmp(mn, ".4byte") || !strcmp(mn, ".insn") ||
	    (!strcmp(mn, "unimp") && len == 2) || reserved_but_listed(mn, ops, bits)) {
		e->kind = RV_INVALID;
	} else if (!strcmp(mn, "unimp")) { /* csrrw x0, cycle, x0 */
		e->kind = RV_CSR;
		e->csr = 0xc00;
	} else if (!strcmp(mn, "j") || !strcmp(mn, "jal")) {
		e->rd = !strcmp(mn, "j")   ? 0
			: strchr(ops, ',') ? reg_num(ops, strcspn(ops, ","))
					   : 1;
		e->kind = is_link(e->rd) ? RV_CALL : RV_JUMP;
		e->has_target = 1;
		e->target = parse_target(ops);
	} else if (!strcmp(mn, "jalr") || !strcmp(mn, "jr") || !strcmp(mn, "ret")) {
		if (!strcmp(mn, "ret")) {
			e->rd = 0;
			e->rs1 = 1;
		} else if (parse_jalr(ops, !strcmp(mn, "jr") ? 0 : 1, &e->rd, &e->rs1, &e->imm)) {
			return -2;
		}
		e->kind = (int)ras_kind(e->rd, e->rs1);
	} else if (in_list(mn, branches)) {
		e->kind = RV_BRANCH;
		e->has_target = 1;
		e->target = parse_target(ops);
	} else if (!strcmp(mn, "ecall")) {
		e->kind = RV_ECALL;
	} else if (!strcmp(mn, "ebreak") || !strcmp(mn, "c.ebreak")) {
		e->kind = RV_EBREAK;
	} else if (!strcmp(mn, "sret") || !strcmp(mn, "mret") || !strcmp(mn, "uret") ||
		   !strcmp(mn, "dret")) {
		e->kind = RV_XRET;
		e->csr = mn[0] == 's' ? 0x102 : mn[0] == 'm' ? 0x302 : mn[0] == 'u' ? 0x002 : 0x7b2;
	} else if (!strcmp(mn, "wfi")) {
		e->kind = RV_WFI;
	} else if (!strcmp(mn, "fence.i")) {
		e->kind = RV_FENCE_I;
	} else if (in_list(mn, csr_ops)) {
		e->kind = RV_CSR;
		e->csr = expected_csr(mn, ops);
	}
	return 0;
}

static int check_one(struct tally *t, const char *line, uint64_t pc, uint32_t bits, unsigned len,
		     const struct expect *e)
{
	struct rv_insn in;
	unsigned r = rv_decode(bits, &in);
	int bad = in.len != len || in.kind != e->kind || (r == 0) != (e->kind == RV_INVALID);

	if (e->rd >= 0 && in.rd != e->rd)
		bad = 1;
	if (e->rs1 >= 0 && (in.rs1 != e->rs1 || in.imm != e->imm))
		bad = 1;
	if (e->has_target && !bad) {
		t->targets++;
		bad = rv_direct_target(&in, pc) != e->target;
	}
	if (e->csr >= 0 && !bad) {
		t->csrs++;
		bad = in.csr != e->csr;
	}
	if (bad && t->mismatches++ < (getenv("RV_SHOW") ? 100000 : 20))
		printf("# mismatch: %s -> len %u kind %s rd %u rs1 %u imm %d csr %#x\n", line,
		       in.len, rv_kind_name(in.kind), in.rd, in.rs1, in.imm, in.csr);
	t->kinds[in.kind < RV_INVALID ? in.kind : RV_INVALID]++;
	return bad;
}

/* Splits "  addr:\tRAW   \tmnem\tops" in place; 0 if it is an instruction line. */
static int split_line(char *line, uint64_t *pc, char **raw, char **mn, char **ops)
{
	char *f[4] = {0};
	int n = 0;

	line[strcspn(line, "\n")] = '\0';
	for (char *p = line; n < 4; n++) {
		f[n] = p;
		p = strchr(p, '\t');
		if (!p)
			break;
		*p++ = '\0';
	}
	if (n < 2 || !strchr(f[0], ':') || !f[2])
		return -1;
	*pc = strtoull(f[0], NULL, 16);
	*raw = f[1];
	*mn = f[2];
	*ops = f[3] ? f[3] : "";
	return 0;
}

/* Runs objdump on path and checks every instruction; counts into t. */
static int check_binary(const char *path, struct tally *t)
{
	char cmd[4200], line[1024], copy[1024];
	struct oob_err err = {0};
	struct sym_binary *b = sym_binary_open(path, &err);
	FILE *p;

	if (!b) {
		printf("# %s: %s\n", path, err.msg);
		return -1;
	}
	snprintf(cmd, sizeof(cmd), OBJDUMP " -d '%s'", path);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		uint64_t pc;
		char *raw, *mn, *ops;
		struct expect e;
		uint8_t buf[4] = {0};
		uint32_t bits, objbits;
		unsigned len;
		snprintf(copy, sizeof(copy), "%s", line);
		copy[strcspn(copy, "\n")] = '\0';
		if (split_line(line, &pc, &raw, &mn, &ops))
			continue;
		objbits = (uint32_t)strtoul(raw, NULL, 16);
		len = (unsigned)strspn(raw, "0123456789abcdef") / 2;
		if (expect_of(mn, ops, objbits, len, &e) == -1) {
			t->data++;
			continue;
		}
		t->insns++;
		if (sym_binary_read(b, pc, buf, len) != len)
			memset(buf, 0xff, sizeof(buf));
		bits = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16 |
		       (uint32_t)buf[3] << 24;
		if (bits != objbits && t->bits_bad++ < 5)
			printf("# bits differ at %#llx: read %#x, objdump %#x\n",
			       (unsigned long long)pc, bits, objbits);
		check_one(t, copy, pc, objbits, len, &e);
	}
	if (p)
		pclose(p);
	sym_binary_free(b);
	return 0;
}

/* The integer register objdump -M no-aliases says mn writes: its first
 * operand, save for the forms whose first operand is a source. */
static int expected_dest(const char *mn, const char *ops)
{
	static const char *const sources[] = {
	    "sb",	  "sh",		 "sw",		"sd",	  "c.sw",   "c.sd",
	    "c.swsp",	  "c.sdsp",	 "c.jr",	"c.beqz", "c.bnez", "sfence.vma",
	    "sinval.vma", "hfence.vvma", "hfence.gvma", NULL};
	if (!strcmp(mn, "c.jalr"))
		return 1;
	if (in_list(mn, sources) || in_list(mn, branches))
		return 0;
	int r = reg_num(ops, strcspn(ops, ","));
	return r > 0 ? r : 0;
}

/* What objdump says of the two prologue forms (rv_sp_add, rv_sp_store):
 * "addi sp,sp,N", "c.addi16sp sp,N", "c.addi sp,N"; "sd REG,N(sp)",
 * "c.sdsp REG,N(sp)". 1 with *a (the immediate) and *r (the stored
 * register) when text is one of them for kind 0 (add) or 1 (store). */
static int sp_form(int kind, const char *mn, const char *text, int32_t *a, unsigned *r)
{
	char reg[16], ops[64];
	int n = -1;
	/* objdump may add " # address <symbol>" */
	snprintf(ops, sizeof(ops), "%.*s", (int)strcspn(text, " \t#"), text);
	if (kind == 0 && !strcmp(mn, "addi"))
		return sscanf(ops, "sp,sp,%d%n", a, &n) == 1 && n >= 0 && !ops[n];
	if (kind == 0 && (!strcmp(mn, "c.addi16sp") || !strcmp(mn, "c.addi")))
		return sscanf(ops, "sp,%d%n", a, &n) == 1 && n >= 0 && !ops[n];
	if (kind != 1 || (strcmp(mn, "sd") && strcmp(mn, "c.sdsp")) ||
	    sscanf(ops, "%15[^,],%d(sp)%n", reg, a, &n) != 2 || n < 0 || ops[n])
		return 0;
	*r = (unsigned)reg_num(reg, strlen(reg));
	return 1;
}

/* rv_sp_add and rv_sp_store on one objdump line: 1 when they disagree. */
static int sp_forms_differ(uint32_t bits, const char *mn, const char *ops, long *n)
{
	int32_t want = 0, got = 0;
	unsigned wr = 0, gr = 0;
	int w = sp_form(0, mn, ops, &want, &wr), g = rv_sp_add(bits, &got);
	*n += w;
	if (w != g || (w && want != got))
		return 1;
	w = sp_form(1, mn, ops, &want, &wr);
	g = rv_sp_store(bits, &gr, &got);
	*n += w;
	return w != g || (w && (want != got || wr != gr));
}

/* rv_int_dest on every instruction rv_decode accepts in path; counts the
 * lines compared and the mismatches. rv_sp_add and rv_sp_store on every
 * line; counts the prologue forms seen (*sp) and adds their mismatches. */
static void check_dest(const char *path, long *n, long *bad, long *sp)
{
	char cmd[4200], line[1024], copy[1024];
	snprintf(cmd, sizeof(cmd), OBJDUMP " -d -M no-aliases '%s'", path);
	FILE *p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		uint64_t pc;
		char *raw, *mn, *ops;
		struct rv_insn in;
		snprintf(copy, sizeof(copy), "%s", line);
		copy[strcspn(copy, "\n")] = '\0';
		if (split_line(line, &pc, &raw, &mn, &ops) || mn[0] == '.')
			continue;
		uint32_t bits = (uint32_t)strtoul(raw, NULL, 16);
		if (sp_forms_differ(bits, mn, ops, sp) && (*bad)++ < 20)
			printf("# sp form mismatch: %s\n", copy);
		if (!rv_decode(bits, &in))
			continue;
		(*n)++;
		unsigned got = rv_int_dest(bits);
		if ((int)got != expected_dest(mn, ops) && (*bad)++ < 20)
			printf("# dest mismatch: %s -> x%u\n", copy, got);
	}
	if (p)
		pclose(p);
}

static void report(const char *what, const struct tally *t)
{
	printf("# %s: %ld instructions (%ld data lines skipped): %ld calls (%ld direct, %ld "
	       "indirect), %ld returns, %ld swaps, %ld jumps, %ld indirect jumps, %ld branches, "
	       "%ld ecall, %ld ebreak, %ld xret, %ld wfi, %ld csr, %ld fence.i, %ld invalid; "
	       "%ld targets and %ld CSR numbers compared; %ld bit mismatches, %ld decode "
	       "mismatches\n",
	       what, t->insns, t->data, t->kinds[RV_CALL] + t->kinds[RV_CALL_IND],
	       t->kinds[RV_CALL], t->kinds[RV_CALL_IND], t->kinds[RV_RET], t->kinds[RV_SWAP],
	       t->kinds[RV_JUMP], t->kinds[RV_JUMP_IND], t->kinds[RV_BRANCH], t->kinds[RV_ECALL],
	       t->kinds[RV_EBREAK], t->kinds[RV_XRET], t->kinds[RV_WFI], t->kinds[RV_CSR],
	       t->kinds[RV_FENCE_I], t->kinds[RV_INVALID], t->targets, t->csrs, t->bits_bad,
	       t->mismatches);
}

static int have_objdump(void)
{
	return system(OBJDUMP " --version >/dev/null 2>&1") == 0;
}

#define CHECK_FILE(path, what, min_insns)                                                          \
	do {                                                                                       \
		struct tally t = {0};                                                              \
		if (!(path))                                                                       \
			SKIP("%s absent (run tests/tools/gen-sym.sh / need ../shared)", what);     \
		if (!have_objdump())                                                               \
			SKIP(OBJDUMP " not installed");                                            \
		CHECK_EQ(check_binary(path, &t), 0);                                               \
		report(what, &t);                                                                  \
		CHECK(t.insns >= (min_insns));                                                     \
		CHECK_EQ(t.bits_bad, 0);                                                           \
		CHECK_EQ(t.mismatches, 0);                                                         \
		long dn = 0, dbad = 0, dsp = 0;                                                    \
		check_dest(path, &dn, &dbad, &dsp);                                                \
		printf("# %s: %ld destinations and %ld sp adds and stores compared, %ld "          \
		       "mismatches\n",                                                             \
		       what, dn, dsp, dbad);                                                       \
		CHECK(dn > 0 && dsp > 0);                                                          \
		CHECK_EQ(dbad, 0);                                                                 \
	} while (0)

static void test_prog(void)
{
	CHECK_FILE(oobtest_shared("fixtures/spike/prog"), "prog", 50000);
}

static void test_init(void)
{
	CHECK_FILE(oobtest_shared("fixtures/spike/init"), "init", 50000);
}

static void test_vmlinux(void)
{
	CHECK_FILE(oobtest_gen("vmlinux"), "vmlinux", 400000);
}

static void test_pie(void)
{
	CHECK_FILE(oobtest_gen("sym/pie"), "pie", 50);
}

/* cti.S: objdump agrees, and each form is there exactly as many times as written. */
static void test_cti(void)
{
	struct tally t = {0};
	const char *path = oobtest_gen("sym/cti");

	if (!path)
		SKIP("sym/cti absent (tests/tools/gen-sym.sh)");
	if (!have_objdump())
		SKIP(OBJDUMP " not installed");
	CHECK_EQ(check_binary(path, &t), 0);
	report("cti", &t);
	CHECK_EQ(t.mismatches, 0);
	CHECK_EQ(t.bits_bad, 0);
	/* the counts of cti.S's source lines of each kind */
	CHECK_EQ(t.kinds[RV_CALL], 3);	   /* jal ra, jal t0, jal ra (extreme) */
	CHECK_EQ(t.kinds[RV_CALL_IND], 6); /* jalr ra/a5, ra/ra, t0/t0, ra/-2048; c.jalr a5, ra */
	CHECK_EQ(t.kinds[RV_SWAP], 3);	   /* jalr ra/t0, t0/ra; c.jalr t0 */
	CHECK_EQ(t.kinds[RV_RET], 7);	   /* jalr x0/ra, x0/t0, a0/ra; c.jr ra, t0; 2 x ret */
	CHECK_EQ(t.kinds[RV_JUMP], 6);	   /* jal x0, jal a0, c.j; 3 extremes */
	CHECK_EQ(t.kinds[RV_JUMP_IND], 4); /* jalr a0/a1, x0/16(a5), x0/2047(a5); c.jr a5 */
	CHECK_EQ(t.kinds[RV_BRANCH], 12);  /* 6 + c.beqz + c.bnez + 4 extremes */
	CHECK_EQ(t.kinds[RV_XRET], 4);
	CHECK_EQ(t.kinds[RV_EBREAK], 2);
	CHECK_EQ(t.kinds[RV_CSR], 12);
	CHECK_EQ(t.kinds[RV_INVALID], 6);   /* custom-0, SYSTEM f3=0 junk, 4 reserved RVC */
	CHECK_EQ(t.targets, 4 + 6 + 3 + 8); /* jal, branches, compressed, extremes */
}

/* Every 16-bit encoding: objdump and rv_decode agree on all 49152. */
static void test_rvc_all(void)
{
	CHECK_FILE(oobtest_gen("sym/rvc-all"), "rvc-all", 49152);
}

/* 100000 pseudo-random 32-bit encodings (most of them invalid). */
static void test_rv32_sample(void)
{
	CHECK_FILE(oobtest_gen("sym/rv32-sample"), "rv32-sample", 100000);
}

int main(void)
{
	OOBTEST_BEGIN("test_rv");
	RUN(test_cti);
	RUN(test_rvc_all);
	RUN(test_rv32_sample);
	RUN(test_prog);
	RUN(test_init);
	RUN(test_pie);
	RUN(test_vmlinux);
	return OOBTEST_END();
}
