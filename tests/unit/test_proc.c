/* proc: tasks derived from the kernel. Struct layouts against gdb's reading
 * of the same vmlinux DWARF; context-switch detection and the shadow memory
 * on batches shaped like a Spike log's. */
#include <stdlib.h>

#include "profile/frame.h"
#include "oobtest.h"
#include "tasks/proc.h"

static struct sym_binary *vmlinux(void)
{
	const char *path = oobtest_gen("vmlinux");
	return path ? sym_binary_open(path, NULL) : NULL;
}

/* gdb prints "$1 = 696" for print (long)&((struct T *)0)->m. */
static long gdb_offset(const char *type, const char *member)
{
	char cmd[1024], line[256];
	snprintf(cmd, sizeof(cmd),
		 "gdb -batch -ex 'print (long)&((struct %s *)0)->%s' %s 2>/dev/null | tail -1",
		 type, member, oobtest_gen("vmlinux"));
	FILE *f = popen(cmd, "r");
	long v = -1;
	if (f && fgets(line, sizeof(line), f))
		sscanf(line, "$1 = %ld", &v);
	if (f)
		pclose(f);
	return v;
}

static void layouts_match_gdb(void)
{
	struct sym_binary *k = vmlinux();
	if (!k)
		SKIP("no vmlinux in tests/gen");
	if (system("command -v gdb >/dev/null 2>&1") != 0) {
		sym_binary_free(k);
		SKIP("gdb not installed");
	}
	struct frame_table ft;
	struct proc p;
	frame_table_init(&ft);
	proc_init(&p, &ft, k, 0, 0, TRACE_F_REGS);
	CHECK(p.enabled);
	CHECK(p.hooks.clone != FRAME_NONE && p.hooks.copy_process != FRAME_NONE);
	CHECK(p.hooks.execve != FRAME_NONE && p.hooks.exit != FRAME_NONE);
	CHECK_EQ(p.hooks.off_pid, gdb_offset("task_struct", "pid"));
	CHECK_EQ(p.hooks.off_comm, gdb_offset("task_struct", "comm"));
	CHECK_EQ(p.hooks.off_parent, gdb_offset("task_struct", "real_parent"));
	CHECK_EQ(p.hooks.off_fname, gdb_offset("filename", "name"));
	proc_destroy(&p);
	frame_table_destroy(&ft);
	sym_binary_free(k);
}

/* A batch of n records in S-mode with the given extras. */
static void batch_of(struct trace_batch *b, uint64_t *pc, uint8_t *priv, uint32_t *insn,
		     struct trace_extra *x, uint32_t nx, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		pc[i] = 0xffffffff80001000ull + 4 * i;
		priv[i] = 1;
		insn[i] = 0x00000013; /* nop */
	}
	*b = (struct trace_batch){.n = n, .pc = pc, .priv = priv, .insn = insn, .x = x, .nx = nx};
}

static void tp_writes_name_and_switch_tasks(void)
{
	struct sym_binary *k = vmlinux();
	if (!k)
		SKIP("no vmlinux in tests/gen");
	struct frame_table ft;
	struct proc p;
	frame_table_init(&ft);
	proc_init(&p, &ft, k, 0, 0, TRACE_F_REGS);
	uint64_t pc[8], key = 0, a = 0xffffffd800001000ull, b2 = 0xffffffd800002000ull;
	uint8_t priv[8];
	uint32_t insn[8];
	struct trace_extra x[] = {
	    {.idx = 1, .kind = TRACE_X_REG, .num = 4, .val = 0x3fffff8000}, /* user tls: no */
	    {.idx = 2, .kind = TRACE_X_REG, .num = 4, .val = a},	    /* names cur */
	    {.idx = 3,
	     .kind = TRACE_X_STORE,
	     .size = 8,
	     .addr = a + p.hooks.off_comm,
	     .val = 0x74696e69},				  /* "init" */
	    {.idx = 5, .kind = TRACE_X_REG, .num = 4, .val = b2}, /* a switch */
	};
	struct trace_batch b;
	batch_of(&b, pc, priv, insn, x, 4, 8);
	priv[1] = 0; /* the tls write happens in user mode */
	struct task *cur = proc_task_new(&p, 0, NULL);
	proc_batch(&p, &b);
	uint32_t at = proc_next_switch(&p, &b, 0, cur, &key);
	CHECK_EQ(at, 6);
	CHECK_EQ(key, b2);
	CHECK_EQ(cur->key, a);
	CHECK(proc_task_find(&p, a) == cur);
	proc_apply(&p, &b, 8);
	CHECK_EQ(proc_reg(&p, 0, 4), b2);
	proc_finish(&p);
	CHECK_STR(cur->comm, "init");
	CHECK_EQ(p.switches, 1);
	proc_destroy(&p);
	frame_table_destroy(&ft);
	sym_binary_free(k);
}

static void without_registers_nothing_is_derived(void)
{
	struct frame_table ft;
	struct proc p;
	frame_table_init(&ft);
	proc_init(&p, &ft, NULL, 0, 0, TRACE_F_INSN);
	CHECK(!p.enabled);
	struct task *t = proc_task_new(&p, 0, NULL);
	CHECK_EQ(t->root_frame, FRAME_NONE);
	proc_destroy(&p);
	frame_table_destroy(&ft);
}

int main(void)
{
	OOBTEST_BEGIN("test_proc");
	RUN(layouts_match_gdb);
	RUN(tp_writes_name_and_switch_tasks);
	RUN(without_registers_nothing_is_derived);
	return OOBTEST_END();
}
