/*
 * gotrace-plugin: a QEMU TCG plugin (API v1, QEMU 7.2) that records every
 * executed guest instruction of a MULTI-THREADED guest, for Go programs: the
 * Go runtime always runs several threads (sysmon, Ms for Ps), and
 * tests/tools/oobtrace.c keeps one stream and gives up on a second vCPU.
 *
 *   qemu-riscv64 -plugin ./gotrace-plugin.so,out=F.oobt,hist=F.hist prog
 *
 *   out=FILE   oobt trace (pc + instruction bits); each guest thread (QEMU
 *              vCPU index) is one hart. Records are written in ONE global
 *              order: every instruction callback takes a process-wide lock,
 *              so the record index of the oobt file is a common time axis
 *              for all threads (the one an alignment with the Go trace needs).
 *   hist=FILE  "0x<pc> <count>" per executed pc (all threads), counted here
 *              with plain libc: the ground truth the tests compare against.
 *
 * Serializing every instruction costs speed (the guest runs at one core) but
 * not correctness: QEMU user mode runs each guest thread on its own host
 * thread, and the callback runs before the instruction executes.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oob_err.h"
#include "oob_log.h"
#include "trace.h"
#include "trace_write.h"

/* ---- QEMU plugin API v1 (QEMU 7.2), as Debian ships no qemu-plugin.h ---- */
typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

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

#define EXPORT __attribute__((visibility("default")))

EXPORT int qemu_plugin_version = 1;

/* One (pc, bits) site, made at translation time; QEMU keeps a pointer to it
 * in the translated code, so sites never move (chunked allocation). */
struct site {
	uint64_t pc, count;
	uint32_t insn;
};

#define CHUNK 4096
struct chunk {
	struct chunk *next;
	size_t used;
	struct site s[CHUNK];
};

static struct {
	pthread_mutex_t lock; /* everything below */
	struct chunk *chunks;
	struct site **tab; /* open addressing on (pc, insn) */
	size_t cap, nsites;
	struct trace_writer *w;
	uint64_t pc[TRACE_BATCH_MAX];
	uint32_t insn[TRACE_BATCH_MAX];
	struct trace_batch batch;
	int failed;
	FILE *hist;
	uint64_t total;
	unsigned max_vcpu;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (!p) {
		fprintf(stderr, "gotrace-plugin: out of memory\n");
		abort();
	}
	return p;
}

static size_t slot(uint64_t pc, uint32_t insn)
{
	return (size_t)(((pc ^ ((uint64_t)insn << 32)) * 0x9e3779b97f4a7c15ull) >> 20) &
	       (g.cap - 1);
}

static void grow(void)
{
	struct site **old = g.tab;
	size_t n = g.cap;
	g.cap = n ? 2 * n : 1u << 14;
	g.tab = xcalloc(g.cap, sizeof(*g.tab));
	for (size_t i = 0; i < n; i++) {
		if (!old[i])
			continue;
		size_t j = slot(old[i]->pc, old[i]->insn);
		while (g.tab[j])
			j = (j + 1) & (g.cap - 1);
		g.tab[j] = old[i];
	}
	free(old);
}

static struct site *site_get(uint64_t pc, uint32_t insn)
{
	if (2 * (g.nsites + 1) > g.cap)
		grow();
	size_t j = slot(pc, insn);
	for (; g.tab[j]; j = (j + 1) & (g.cap - 1))
		if (g.tab[j]->pc == pc && g.tab[j]->insn == insn)
			return g.tab[j];
	if (!g.chunks || g.chunks->used == CHUNK) {
		struct chunk *c = xcalloc(1, sizeof(*c));
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

static void flush(void)
{
	struct oob_err err;
	if (!g.batch.n)
		return;
	if (g.w && !g.failed && trace_writer_put(g.w, &g.batch, &err) < 0) {
		OOB_ERROR("gotrace-plugin: %s", err.msg);
		g.failed = 1;
	}
	g.batch.seq += g.batch.n;
	g.batch.n = 0;
}

static void on_exec(unsigned int vcpu, void *userdata)
{
	struct site *s = userdata;
	pthread_mutex_lock(&g.lock);
	s->count++;
	g.total++;
	if (vcpu > g.max_vcpu)
		g.max_vcpu = vcpu;
	if (g.w) {
		if (g.batch.n && (g.batch.hart != vcpu || g.batch.n == TRACE_BATCH_MAX))
			flush();
		g.batch.hart = (uint16_t)vcpu;
		g.pc[g.batch.n] = s->pc;
		g.insn[g.batch.n] = s->insn;
		g.batch.n++;
	}
	pthread_mutex_unlock(&g.lock);
}

static uint32_t bits(const struct qemu_plugin_insn *insn)
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
	pthread_mutex_lock(&g.lock);
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		struct site *s = site_get(qemu_plugin_insn_vaddr(insn), bits(insn));
		qemu_plugin_register_vcpu_insn_exec_cb(insn, on_exec, QEMU_PLUGIN_CB_NO_REGS, s);
	}
	pthread_mutex_unlock(&g.lock);
}

static int site_cmp(const void *pa, const void *pb)
{
	const struct site *a = *(struct site *const *)pa, *b = *(struct site *const *)pb;
	return (a->pc > b->pc) - (a->pc < b->pc);
}

static void hist_write(FILE *f)
{
	struct site **v = xcalloc(g.nsites + 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < g.cap; i++)
		if (g.tab[i] && g.tab[i]->count)
			v[n++] = g.tab[i];
	qsort(v, n, sizeof(*v), site_cmp);
	for (size_t i = 0; i < n;) {
		uint64_t pc = v[i]->pc, c = 0;
		for (; i < n && v[i]->pc == pc; i++)
			c += v[i]->count;
		fprintf(f, "0x%" PRIx64 " %" PRIu64 "\n", pc, c);
	}
	if (fclose(f) != 0)
		OOB_ERROR("gotrace-plugin: hist output: write failed");
	free(v);
}

static void on_exit_cb(qemu_plugin_id_t id, void *userdata)
{
	struct oob_err err;
	(void)id;
	(void)userdata;
	pthread_mutex_lock(&g.lock);
	if (g.w) {
		flush();
		if (g.failed)
			trace_writer_abort(g.w);
		else if (trace_writer_close(g.w, &err) < 0)
			OOB_ERROR("gotrace-plugin: %s", err.msg);
		g.w = NULL;
	}
	if (g.hist)
		hist_write(g.hist);
	g.hist = NULL;
	OOB_INFO("gotrace-plugin: %" PRIu64 " instructions, %u vCPUs, %zu sites", g.total,
		 g.max_vcpu + 1, g.nsites);
	pthread_mutex_unlock(&g.lock);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const void *info, int argc, char **argv)
{
	struct oob_err err;
	(void)info;
	for (int i = 0; i < argc; i++) {
		if (strncmp(argv[i], "out=", 4) == 0) {
			struct trace_write_opts o = {.format = TRACE_FMT_OOBT,
						     .fields = TRACE_F_INSN};
			if (!(g.w = trace_writer_open(argv[i] + 4, &o, &err))) {
				OOB_ERROR("gotrace-plugin: %s", err.msg);
				return -1;
			}
		} else if (strncmp(argv[i], "hist=", 5) == 0) {
			if (!(g.hist = fopen(argv[i] + 5, "w"))) {
				OOB_ERROR("gotrace-plugin: cannot open %s", argv[i] + 5);
				return -1;
			}
		} else {
			OOB_ERROR("gotrace-plugin: unknown argument '%s' (out=, hist=)", argv[i]);
			return -1;
		}
	}
	g.batch.pc = g.pc;
	g.batch.insn = g.insn;
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
	qemu_plugin_register_atexit_cb(id, on_exit_cb, NULL);
	return 0;
}
