/*
 * oobtrace: a QEMU TCG plugin (API v1, QEMU 7.2 as Debian ships it) that
 * records every executed guest instruction, of single- and multi-threaded
 * guests (Go programs always run several threads).
 *
 *   qemu-riscv64 -plugin ./oobtrace.so,out=F.oobt,hist=F.hist,text=F.txt prog
 *
 *   out=FILE   oobprof's native trace (pc + instruction bits), written through
 *              core/trace/trace_write.h. Each guest thread (QEMU vCPU index) is one
 *              hart; records are in ONE global order, so the record index is a
 *              common time axis for all threads (what an alignment with a Go
 *              execution trace needs).
 *   hist=FILE  "0x<pc> <count>" per executed pc (all threads), sorted by pc.
 *              Counted here, straight from QEMU's callbacks, with no oobprof
 *              code involved: it is the ground truth the tests compare against.
 *   text=FILE  "0x<pc> 0x<insn>" per executed instruction, in the global order
 *              (small programs only)
 *   sp=on      also record the stack pointer as REG x2 extras (TRACE_F_REGS)
 *              at the instructions that write it, as Spike logs them, for
 *              oobprof's register regime (docs/RECONSTRUCTION.md 3.6). The
 *              7.2 API cannot read registers: sp is inferred from the
 *              address of every sp-relative load and store (a memory
 *              callback on those instructions only), followed through addi
 *              sp / c.addi16sp, and a write of unknown value (ld sp, mv sp,
 *              rt_sigreturn, a signal's delivery) gets its value when the
 *              next sp-relative access anchors it (oobtrace_sp.c). Cost on
 *              the nonlocal programs: docs/formats/OOBT.md.
 *
 * Debian ships no qemu-plugin.h, so the few API v1 declarations we use are
 * repeated below; their layout is QEMU 7.2's include/qemu/qemu-plugin.h.
 *
 * Instructions are recorded by a per-instruction execution callback, not per
 * translation block: a block that stops early (a fault) would otherwise
 * report instructions that never ran. The callback gets a pointer to a site
 * (pc, bits, count) made once at translation time, so the per-instruction
 * work is a counter increment and two stores into the current batch.
 *
 * The histogram path (sites, counts, hist=) uses plain libc and no oobprof
 * code, so that the ground truth cannot inherit an oobprof bug; only out=
 * goes through core/trace/trace_write.c.
 *
 * Threads: QEMU user mode runs each guest thread on its own host thread, and
 * the callback runs before its instruction executes. Once the guest has more
 * than one thread, every callback takes one process-wide lock, which gives the
 * global order (the guest then runs at one core's speed). Until then there is
 * one thread and the callback skips the lock: the switch is made by the
 * thread that calls clone, before clone runs, so no second thread can exist
 * while a callback runs unlocked.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_err.h"
#include "util/oob_log.h"
#include "trace/trace.h"
#include "trace/trace_write.h"

#include "oobtrace_sp.h"

/* ---- QEMU plugin API v1 (QEMU 7.2) ---- */
typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_simple_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_index);
typedef void (*qemu_plugin_vcpu_syscall_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_index,
					      int64_t num, uint64_t a1, uint64_t a2, uint64_t a3,
					      uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7,
					      uint64_t a8);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
void qemu_plugin_register_vcpu_init_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_simple_cb_t cb);
void qemu_plugin_register_vcpu_syscall_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_syscall_cb_t cb);
typedef uint32_t qemu_plugin_meminfo_t;
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
					  uint64_t vaddr, void *userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
				      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
				      void *userdata);

#define OOBTRACE_EXPORT __attribute__((visibility("default")))

OOBTRACE_EXPORT int qemu_plugin_version = 1;

/* One executed instruction site. The same pc may be translated again (after a
 * TB flush) and may hold different bits over time (code loaded over unmapped
 * code): a site is one (pc, bits) pair. Sites live in chunks that never move:
 * QEMU keeps a pointer to each in the translated code. */
struct site {
	uint64_t pc;
	uint32_t insn;
	uint64_t count;
	struct sp_site sp; /* sp=on */
};

#define SITE_CHUNK 4096
struct site_chunk {
	struct site_chunk *next;
	size_t used;
	struct site s[SITE_CHUNK];
};

/* Linux syscall numbers of clone and clone3 on riscv64 (asm-generic). */
#define OOBTRACE_NR_CLONE  220
#define OOBTRACE_NR_CLONE3 435

static struct {
	/* Set once, before a second guest thread can exist; never cleared. While
	 * it is 0 there is one thread and nothing below needs the lock. */
	atomic_int threaded;
	pthread_mutex_t lock; /* everything below, once threaded */
	struct site_chunk *chunks;
	struct site **tab; /* open addressing on (pc, insn), power-of-two size */
	size_t tab_cap, nsites;

	struct trace_writer *w;
	uint64_t pc[TRACE_BATCH_MAX];
	uint32_t insn[TRACE_BATCH_MAX];
	struct trace_extra x[TRACE_X_MAX];
	struct trace_batch batch;
	int sp;	    /* sp=on */
	int failed; /* the oobt output is abandoned */

	FILE *text;
	FILE *hist; /* opened at start so that a bad path fails before the run */
	uint64_t total;
	unsigned max_vcpu;
	int stray_vcpu; /* a vCPU other than 0 ran before threaded was set */
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Out of memory inside QEMU's callbacks: nothing sensible is left to do. */
static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (!p) {
		fprintf(stderr, "oobtrace: out of memory\n");
		abort();
	}
	return p;
}

static size_t site_slot(uint64_t pc, uint32_t insn)
{
	uint64_t h = (pc ^ ((uint64_t)insn << 32)) * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 20) & (g.tab_cap - 1);
}

static void sites_grow(void)
{
	struct site **old = g.tab;
	size_t old_cap = g.tab_cap;

	g.tab_cap = old_cap ? old_cap * 2 : 1u << 14;
	g.tab = xcalloc(g.tab_cap, sizeof(*g.tab));
	for (size_t i = 0; i < old_cap; i++) {
		if (!old[i])
			continue;
		size_t j = site_slot(old[i]->pc, old[i]->insn);
		while (g.tab[j])
			j = (j + 1) & (g.tab_cap - 1);
		g.tab[j] = old[i];
	}
	free(old);
}

static struct site *site_get(uint64_t pc, uint32_t insn)
{
	if (2 * (g.nsites + 1) > g.tab_cap)
		sites_grow();
	size_t j = site_slot(pc, insn);
	for (; g.tab[j]; j = (j + 1) & (g.tab_cap - 1))
		if (g.tab[j]->pc == pc && g.tab[j]->insn == insn)
			return g.tab[j];
	if (!g.chunks || g.chunks->used == SITE_CHUNK) {
		struct site_chunk *c = xcalloc(1, sizeof(*c));
		c->next = g.chunks;
		g.chunks = c;
	}
	struct site *s = &g.chunks->s[g.chunks->used++];
	s->pc = pc;
	s->insn = insn;
	g.tab[j] = s;
	g.nsites++;
	return s;
}

/* Writes the batch's first n records. */
static void batch_put(uint32_t n)
{
	struct oob_err err;
	struct trace_batch b = g.batch;

	b.n = n;
	b.nx = 0;
	while (b.nx < g.batch.nx && g.batch.x[b.nx].idx < n)
		b.nx++;
	if (!g.failed && trace_writer_put(g.w, &b, &err) < 0) {
		OOB_ERROR("oobtrace: %s", err.msg);
		g.failed = 1;
	}
	g.batch.seq += n;
	if (g.sp)
		sp_shift(n);
	memmove(g.pc, g.pc + n, (g.batch.n - n) * sizeof(*g.pc));
	memmove(g.insn, g.insn + n, (g.batch.n - n) * sizeof(*g.insn));
	g.batch.n -= n;
}

/* Writes the whole batch (a change of hart, the end). */
static void batch_flush(void)
{
	if (g.batch.n == 0)
		return;
	if (g.sp)
		sp_settle();
	batch_put(g.batch.n);
}

/* The batch is full: with sp=on, the records from the first whose sp value
 * is still to come (and the current one, whose write is applied at the next
 * record) stay; a batch of nothing else gives those values up. */
static void batch_full(void)
{
	uint32_t k = g.sp ? sp_keep_from() : g.batch.n;
	if (g.sp && k > g.batch.n - 1)
		k = g.batch.n - 1;
	if (k == 0)
		batch_flush();
	else
		batch_put(k);
}

/* One executed instruction on the hart of the current batch: the caller holds
 * the lock, or the guest has one thread. */
static inline void record(unsigned vcpu, struct site *s)
{
	s->count++;
	g.total++;
	if (g.text)
		fprintf(g.text,
			(s->insn & 3) == 3 ? "0x%" PRIx64 " 0x%08" PRIx32 "\n"
					   : "0x%" PRIx64 " 0x%04" PRIx32 "\n",
			s->pc, s->insn);
	if (g.w) {
		g.pc[g.batch.n] = s->pc;
		g.insn[g.batch.n] = s->insn;
		if (g.sp)
			sp_exec(vcpu, s->pc, &s->sp, g.batch.n);
		if (++g.batch.n == TRACE_BATCH_MAX)
			batch_full();
	}
}

/* Any vCPU, once the guest may have several threads. A batch holds records of
 * one hart (core/trace/trace.h), so a change of vCPU ends it. */
static __attribute__((noinline)) void on_exec_threaded(unsigned int vcpu, struct site *s)
{
	int locked = atomic_load_explicit(&g.threaded, memory_order_relaxed);

	if (locked)
		pthread_mutex_lock(&g.lock);
	else
		g.stray_vcpu = 1; /* a missed thread start: races on everything */
	if (vcpu > g.max_vcpu)
		g.max_vcpu = vcpu;
	if (vcpu != g.batch.hart) {
		batch_flush();
		g.batch.hart = (uint16_t)vcpu;
	}
	record(vcpu, s);
	if (locked)
		pthread_mutex_unlock(&g.lock);
}

/* With one thread, every record is vCPU 0's (threaded is never cleared): the
 * fast path needs neither the lock nor a check of the batch's hart. */
static void on_exec(unsigned int vcpu, void *userdata)
{
	if (__builtin_expect(!atomic_load_explicit(&g.threaded, memory_order_relaxed) && vcpu == 0,
			     1))
		record(0, userdata);
	else
		on_exec_threaded(vcpu, userdata);
}

/* Runs in the calling thread before the syscall: a new thread cannot start
 * before the flag is set, and this thread sees it at its next instruction. A
 * fork (clone without CLONE_VM) sets it too, which costs speed only. */
static void on_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1,
		       uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7,
		       uint64_t a8)
{
	(void)id;
	(void)a1; /* any clone: see above */
	(void)a2;
	(void)a3;
	(void)a4;
	(void)a5;
	(void)a6;
	(void)a7;
	(void)a8;
	if (g.sp) {
		int locked = atomic_load_explicit(&g.threaded, memory_order_relaxed);
		if (locked)
			pthread_mutex_lock(&g.lock);
		sp_syscall(vcpu, num);
		if (locked)
			pthread_mutex_unlock(&g.lock);
	}
	if (num == OOBTRACE_NR_CLONE || num == OOBTRACE_NR_CLONE3)
		atomic_store(&g.threaded, 1);
}

/* QEMU 7.2 creates a thread's vCPU in the cloning thread, before the thread
 * starts: the same guarantee as on_syscall, for targets with other syscall
 * numbers. */
static void on_vcpu_init(qemu_plugin_id_t id, unsigned int vcpu)
{
	(void)id;
	if (vcpu != 0)
		atomic_store(&g.threaded, 1);
}

/* sp=on: an sp-relative access (registered on those instructions only). */
static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *userdata)
{
	int locked = atomic_load_explicit(&g.threaded, memory_order_relaxed);
	struct site *s = userdata;

	(void)info;
	if (locked)
		pthread_mutex_lock(&g.lock);
	sp_mem(vcpu, &s->sp, vaddr);
	if (locked)
		pthread_mutex_unlock(&g.lock);
}

static uint32_t insn_bits(const struct qemu_plugin_insn *insn)
{
	const uint8_t *p = qemu_plugin_insn_data(insn);
	size_t n = qemu_plugin_insn_size(insn);
	uint32_t v = 0;

	for (size_t i = 0; i < n && i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static void on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	/* Translation is rare: always locking keeps it simple. */
	pthread_mutex_lock(&g.lock);
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		struct site *s = site_get(qemu_plugin_insn_vaddr(insn), insn_bits(insn));
		qemu_plugin_register_vcpu_insn_exec_cb(insn, on_exec, QEMU_PLUGIN_CB_NO_REGS, s);
		if (g.sp) {
			sp_decode(s->pc, s->insn, (unsigned)qemu_plugin_insn_size(insn), &s->sp);
			if (s->sp.kind & SP_ANCHOR)
				qemu_plugin_register_vcpu_mem_cb(
				    insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, s);
		}
	}
	pthread_mutex_unlock(&g.lock);
}

static int site_cmp(const void *pa, const void *pb)
{
	const struct site *a = *(struct site *const *)pa, *b = *(struct site *const *)pb;
	return (a->pc > b->pc) - (a->pc < b->pc);
}

/* Sites of one pc are adjacent after sorting; their counts add up. */
static int hist_write(FILE *f)
{
	struct site **v = xcalloc(g.nsites + 1, sizeof(*v));
	size_t n = 0;
	int rc;

	for (size_t i = 0; i < g.tab_cap; i++)
		if (g.tab[i] && g.tab[i]->count)
			v[n++] = g.tab[i];
	qsort(v, n, sizeof(*v), site_cmp);
	for (size_t i = 0; i < n;) {
		uint64_t pc = v[i]->pc, c = 0;
		for (; i < n && v[i]->pc == pc; i++)
			c += v[i]->count;
		fprintf(f, "0x%" PRIx64 " %" PRIu64 "\n", pc, c);
	}
	rc = fclose(f) == 0 ? 0 : -1;
	if (rc < 0)
		OOB_ERROR("oobtrace: hist output: %s", strerror(errno));
	free(v);
	return rc;
}

static void on_exit_cb(qemu_plugin_id_t id, void *userdata)
{
	struct oob_err err;
	int threaded;

	(void)id;
	(void)userdata;
	pthread_mutex_lock(&g.lock);
	if (g.stray_vcpu)
		OOB_ERROR("oobtrace: a second vCPU ran before the plugin saw its thread start; "
			  "the outputs may be corrupt and the oobt trace is discarded");
	if (g.w) {
		batch_flush();
		if (g.failed || g.stray_vcpu)
			trace_writer_abort(g.w);
		else if (trace_writer_close(g.w, &err) < 0)
			OOB_ERROR("oobtrace: %s", err.msg);
		g.w = NULL;
	}
	if (g.text && fclose(g.text) != 0)
		OOB_ERROR("oobtrace: text output: %s", strerror(errno));
	g.text = NULL;
	if (g.hist)
		hist_write(g.hist);
	g.hist = NULL;
	OOB_INFO("oobtrace: %" PRIu64 " instructions, %u vCPUs, %zu sites", g.total, g.max_vcpu + 1,
		 g.nsites);
	if (g.sp) {
		uint64_t writes, late, lost, fixes, strays;
		sp_counts(&writes, &late, &lost, &fixes, &strays);
		OOB_INFO("oobtrace: sp: %" PRIu64 " writes of x2, %" PRIu64
			 " signal deliveries placed, %" PRIu64 " changes put late, %" PRIu64
			 " values given up, %" PRIu64 " stray memory callbacks ignored",
			 writes, fixes, late, lost, strays);
	}
	threaded = atomic_load(&g.threaded);
	pthread_mutex_unlock(&g.lock);
	/* Other threads may still run translated code that points at the sites
	 * until the process is gone: keep them. */
	if (threaded)
		return;
	free(g.tab);
	while (g.chunks) {
		struct site_chunk *c = g.chunks;
		g.chunks = c->next;
		free(c);
	}
	g.tab = NULL;
	g.tab_cap = g.nsites = 0;
}

static FILE *open_text(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		OOB_ERROR("oobtrace: %s: %s", path, strerror(errno));
	else
		setvbuf(f, NULL, _IOFBF, 1 << 20);
	return f;
}

static int open_outputs(const char *out, const char *text, const char *hist)
{
	struct oob_err err;

	if (out) {
		struct trace_write_opts o = {.format = TRACE_FMT_OOBT,
					     .fields = TRACE_F_INSN | (g.sp ? TRACE_F_REGS : 0)};
		g.w = trace_writer_open(out, &o, &err);
		if (!g.w) {
			OOB_ERROR("oobtrace: %s", err.msg);
			return -1;
		}
		g.batch.pc = g.pc;
		g.batch.insn = g.insn;
		g.batch.x = g.x;
		sp_init(&g.batch);
	}
	if (text && !(g.text = open_text(text)))
		return -1;
	if (hist && !(g.hist = open_text(hist)))
		return -1;
	return 0;
}

OOBTRACE_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const void *info, int argc,
					char **argv)
{
	const char *out = NULL, *text = NULL, *hist = NULL;

	(void)info;
	for (int i = 0; i < argc; i++) {
		if (strncmp(argv[i], "out=", 4) == 0) {
			out = argv[i] + 4;
		} else if (strncmp(argv[i], "hist=", 5) == 0) {
			hist = argv[i] + 5;
		} else if (strncmp(argv[i], "text=", 5) == 0) {
			text = argv[i] + 5;
		} else if (strcmp(argv[i], "sp=on") == 0 || strcmp(argv[i], "sp=off") == 0) {
			g.sp = strcmp(argv[i], "sp=on") == 0;
		} else {
			OOB_ERROR(
			    "oobtrace: unknown argument '%s' (expected out=, hist=, text=, sp=on)",
			    argv[i]);
			return -1;
		}
	}
	if (!out)
		g.sp = 0; /* sp values go to the oobt output only */
	if (open_outputs(out, text, hist) < 0) {
		if (g.w)
			trace_writer_abort(g.w);
		if (g.text)
			fclose(g.text);
		if (g.hist)
			fclose(g.hist);
		g.w = NULL;
		g.text = g.hist = NULL;
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
	qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
	qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
	qemu_plugin_register_atexit_cb(id, on_exit_cb, NULL);
	return 0;
}
