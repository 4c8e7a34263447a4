#include "tasks/proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"
#include "sym/rv.h"

#define OFF_NONE UINT64_MAX
#define TP	 4

static uint32_t hook_frame(struct frame_table *ft, const struct sym_binary *k, uint64_t bias,
			   unsigned kspace, const char *name)
{
	uint64_t e = sym_binary_find_func(k, name);
	return e ? frame_func(ft, kspace, e + bias, PROFILE_FRAME_KERNEL) : FRAME_NONE;
}

static uint64_t member(const struct sym_binary *k, const char *type, const char *name)
{
	uint64_t off, size;
	return sym_binary_member(k, type, name, &off, &size) == 0 ? off : OFF_NONE;
}

void proc_init(struct proc *p, struct frame_table *ft, const struct sym_binary *kernel,
	       uint64_t kernel_bias, unsigned kspace, unsigned trace_fields)
{
	memset(p, 0, sizeof(*p));
	p->frames = ft;
	oob_map_init(&p->by_key, 64);
	oob_map_init(&p->mem, 1024);
	p->mem_cap = 16u << 20;
	struct proc_hooks *h = &p->hooks;
	h->clone = h->copy_process = h->execve = h->exit = FRAME_NONE;
	h->off_pid = h->off_comm = h->off_parent = h->off_fname = OFF_NONE;
	if (!kernel || !(trace_fields & TRACE_F_REGS))
		return;
	p->enabled = 1;
	h->clone = hook_frame(ft, kernel, kernel_bias, kspace, "kernel_clone");
	h->copy_process = hook_frame(ft, kernel, kernel_bias, kspace, "copy_process");
	h->execve = hook_frame(ft, kernel, kernel_bias, kspace, "do_execveat_common");
	h->exit = hook_frame(ft, kernel, kernel_bias, kspace, "do_exit");
	h->off_pid = member(kernel, "task_struct", "pid");
	h->off_comm = member(kernel, "task_struct", "comm");
	h->off_parent = member(kernel, "task_struct", "real_parent");
	h->off_fname = member(kernel, "filename", "name");
}

void proc_init_satp(struct proc *p, struct frame_table *ft, unsigned trace_fields)
{
	proc_init(p, ft, NULL, 0, 0, trace_fields);
	p->enabled = p->by_satp = (trace_fields & TRACE_F_REGS) != 0;
}

void proc_note_space(struct task *t, uint64_t satp)
{
	for (size_t k = 0; k < t->nsatps; k++)
		if (t->satps[k] == satp)
			return;
	oob_xgrow((void **)&t->satps, &t->cap_satps, t->nsatps + 1, sizeof(*t->satps));
	t->satps[t->nsatps++] = satp;
}

void proc_destroy(struct proc *p)
{
	for (size_t i = 0; i < p->ntasks; i++) {
		struct task *t = p->tasks[i];
		stack_destroy(&t->stk);
		for (size_t k = 0; k < t->nexecs; k++)
			free(t->execs[k].path);
		free(t->execs);
		free(t->satps);
		free(t);
	}
	free(p->tasks);
	free(p->regs);
	oob_map_destroy(&p->by_key);
	oob_map_destroy(&p->mem);
	memset(p, 0, sizeof(*p));
}

struct task *proc_task_new(struct proc *p, uint64_t key, struct code_space *ucs)
{
	struct task *t = oob_xcalloc(1, sizeof(*t));
	t->idx = (uint32_t)p->ntasks;
	t->key = key;
	t->pid = -1;
	t->ucs = ucs;
	t->start = UINT64_MAX;
	stack_init(&t->stk);
	t->root_frame = FRAME_NONE;
	if (p->enabled) {
		char name[32];
		snprintf(name, sizeof(name), "[task %u]", t->idx);
		t->root_frame = frame_named(p->frames, PROFILE_FRAME_PROCESS, name);
	}
	oob_xgrow((void **)&p->tasks, &p->cap_tasks, p->ntasks + 1, sizeof(*p->tasks));
	p->tasks[p->ntasks++] = t;
	if (key)
		*oob_map_put(&p->by_key, key, NULL) = t->idx;
	return t;
}

struct task *proc_task_find(struct proc *p, uint64_t key)
{
	const uint64_t *v = oob_map_get(&p->by_key, key);
	return v ? p->tasks[*v] : NULL;
}

/* ---- shadow registers and memory ---- */

static uint64_t *hart_regs(struct proc *p, unsigned hart)
{
	if (hart >= p->nregs) {
		p->regs = oob_xrealloc(p->regs, (hart + 1) * sizeof(*p->regs));
		memset(p->regs + p->nregs, 0, (hart + 1 - p->nregs) * sizeof(*p->regs));
		p->nregs = hart + 1;
	}
	return p->regs[hart];
}

uint64_t proc_reg(const struct proc *p, unsigned hart, unsigned n)
{
	return hart < p->nregs ? p->regs[hart][n] : 0;
}

/* Width in bytes of the load or store encoded in bits (0 if not one). */
static unsigned mem_width(uint32_t bits)
{
	if ((bits & 3) != 3) {
		unsigned op = (bits & 3) << 3 | bits >> 13; /* quadrant and funct3 */
		switch (op) {
		case 0x01: /* c.fld */
		case 0x03: /* c.ld */
		case 0x05: /* c.fsd */
		case 0x07: /* c.sd */
		case 0x11: /* c.fldsp */
		case 0x13: /* c.ldsp */
		case 0x15: /* c.fsdsp */
		case 0x17: /* c.sdsp */
			return 8;
		case 0x02: /* c.lw */
		case 0x06: /* c.sw */
		case 0x12: /* c.lwsp */
		case 0x16: /* c.swsp */
			return 4;
		default:
			return 0;
		}
	}
	unsigned opc = bits & 0x7f, f3 = (bits >> 12) & 7;
	if (opc == 0x03 || opc == 0x23)
		return 1u << (f3 & 3);
	if (opc == 0x07 || opc == 0x27)
		return f3 == 2 ? 4 : f3 == 3 ? 8 : 0;
	return 0;
}

static void mem_write(struct proc *p, uint64_t addr, uint64_t val, unsigned size)
{
	if (!(addr >> 63) || size == 0 || size > 8)
		return; /* kernel objects only: user memory is not needed and unbounded */
	for (unsigned k = 0; k < size; k++) {
		uint64_t a = addr + k, shift = (a & 7) * 8;
		if (p->mem.count >= p->mem_cap && !oob_map_get(&p->mem, a & ~7ull))
			return;
		uint64_t *w = oob_map_put(&p->mem, a & ~7ull, NULL);
		*w = (*w & ~(0xffull << shift)) | ((val >> (8 * k)) & 0xff) << shift;
	}
}

static uint64_t mem_read64(const struct proc *p, uint64_t addr)
{
	const uint64_t *w = oob_map_get(&p->mem, addr & ~7ull);
	return w ? *w : 0;
}

/* Copies a NUL-terminated string of at most n-1 bytes from shadow memory. */
static void mem_string(const struct proc *p, uint64_t addr, char *out, size_t n)
{
	size_t k = 0;
	for (; k + 1 < n; k++) {
		uint64_t a = addr + k;
		char c = (char)(mem_read64(p, a) >> ((a & 7) * 8));
		if (!c)
			break;
		out[k] = c;
	}
	out[k] = '\0';
}

void proc_batch(struct proc *p, const struct trace_batch *b)
{
	(void)b;
	p->xi = 0;
}

void proc_apply(struct proc *p, const struct trace_batch *b, uint32_t upto)
{
	uint64_t *regs = hart_regs(p, b->hart);
	for (; p->xi < b->nx && b->x[p->xi].idx < upto; p->xi++) {
		const struct trace_extra *x = &b->x[p->xi];
		unsigned w = x->size;
		if (!w && b->insn)
			w = mem_width(b->insn[x->idx]);
		switch (x->kind) {
		case TRACE_X_REG:
			if (x->num && x->num < 32)
				regs[x->num] = x->val;
			break;
		case TRACE_X_CSR:
			if (x->num == PROC_CSR_SATP)
				regs[PROC_REG_SATP] = x->val;
			break;
		case TRACE_X_STORE:
			mem_write(p, x->addr, x->val, w);
			break;
		case TRACE_X_LOAD:
			/* The loaded value is the record's register writeback, logged before. */
			if (p->xi && b->x[p->xi - 1].idx == x->idx &&
			    b->x[p->xi - 1].kind == TRACE_X_REG)
				mem_write(p, x->addr, b->x[p->xi - 1].val, w ? w : 8);
			break;
		default:
			break;
		}
	}
}

/* ---- tasks ---- */

static int kernel_mode(const struct trace_batch *b, uint32_t i)
{
	return b->priv ? b->priv[i] >= 1 : (int)(b->pc[i] >> 63);
}

/* 1 if x says which task runs (a kernel tp write, or a satp write), with
 * that task's key in *key. */
static int switch_key(const struct proc *p, const struct trace_batch *b,
		      const struct trace_extra *x, uint64_t *key)
{
	if (p->by_satp) {
		*key = ids_satp_key(x->val);
		return x->kind == TRACE_X_CSR && x->num == PROC_CSR_SATP;
	}
	*key = x->val;
	return x->kind == TRACE_X_REG && x->num == TP && x->val >> 63 && kernel_mode(b, x->idx);
}

uint32_t proc_next_switch(struct proc *p, const struct trace_batch *b, uint32_t from,
			  struct task *cur, uint64_t *key)
{
	if (!p->enabled)
		return b->n;
	uint32_t lo = 0, hi = b->nx;
	while (lo < hi) { /* first extra at or after from */
		uint32_t mid = (lo + hi) / 2;
		if (b->x[mid].idx < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (uint32_t k = lo; k < b->nx; k++) {
		uint64_t next;
		if (!switch_key(p, b, &b->x[k], &next) || next == cur->key)
			continue;
		if (!cur->key && !p->by_satp && !proc_task_find(p, next)) {
			cur->key = next; /* the task we started in, named at last */
			*oob_map_put(&p->by_key, next, NULL) = cur->idx;
			continue;
		}
		*key = next;
		p->switches++;
		return b->x[k].idx + 1;
	}
	return b->n;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

struct code_space *proc_space_named(const struct code_space *const *spaces, size_t n,
				    const char *path)
{
	for (size_t k = 0; k < n; k++) {
		const struct sym_binary *bin = spaces[k]->main_binary;
		if (bin && strcmp(sym_binary_name(bin), base_name(path)) == 0)
			return (struct code_space *)spaces[k];
	}
	return NULL;
}

void proc_exec(struct task *t, const char *path, uint64_t when,
	       const struct code_space *const *spaces, size_t nspaces)
{
	oob_xgrow((void **)&t->execs, &t->cap_execs, t->nexecs + 1, sizeof(*t->execs));
	t->execs[t->nexecs++] = (struct proc_exec){oob_xstrdup(path), when};
	snprintf(t->comm, sizeof(t->comm), "%.16s", base_name(path));
	t->exec_pending = 1;
	struct code_space *cs = proc_space_named(spaces, nspaces, path);
	if (cs) {
		t->ucs = cs;
		t->ucs_known = 1;
	}
}

static void on_exec(struct proc *p, struct task *cur, unsigned hart, uint64_t when,
		    const struct code_space *const *spaces, size_t nspaces)
{
	char path[256];
	if (p->hooks.off_fname == OFF_NONE)
		return;
	uint64_t fname = proc_reg(p, hart, 11); /* a1: struct filename * */
	mem_string(p, mem_read64(p, fname + p->hooks.off_fname), path, sizeof(path));
	if (path[0])
		proc_exec(cur, path, when, spaces, nspaces);
}

void proc_on_call(struct proc *p, struct task *cur, unsigned hart, uint32_t frame, uint64_t when,
		  const struct code_space *const *spaces, size_t nspaces)
{
	if (frame == p->hooks.execve)
		on_exec(p, cur, hart, when, spaces, nspaces);
	else if (frame == p->hooks.exit)
		cur->end = when;
}

void proc_on_return(struct proc *p, struct task *cur, unsigned hart, uint32_t frame)
{
	uint64_t a0 = proc_reg(p, hart, 10);
	if (frame == p->hooks.copy_process) {
		p->last_clone = a0 >= (uint64_t)-4095 ? 0 : a0; /* IS_ERR pointers are not tasks */
	} else if (frame == p->hooks.clone && p->last_clone && (int64_t)a0 > 0) {
		struct task *child = proc_task_find(p, p->last_clone);
		if (!child)
			child = proc_task_new(p, p->last_clone, cur->ucs);
		child->pid = (int64_t)a0;
		child->parent = cur->key;
		memcpy(child->comm, cur->comm, sizeof(child->comm));
		p->last_clone = 0;
	}
}

void proc_finish(struct proc *p)
{
	const struct proc_hooks *h = &p->hooks;
	for (size_t i = 0; i < p->ntasks; i++) {
		struct task *t = p->tasks[i];
		if (!t->key)
			continue;
		if (t->pid < 0 && h->off_pid != OFF_NONE) {
			uint64_t a = t->key + h->off_pid;
			if (oob_map_get(&p->mem, a & ~7ull))
				t->pid = (int32_t)(mem_read64(p, a) >> ((a & 7) * 8));
		}
		if (h->off_comm != OFF_NONE) {
			char comm[17];
			mem_string(p, t->key + h->off_comm, comm, sizeof(comm));
			if (comm[0])
				memcpy(t->comm, comm, sizeof(comm));
		}
		if (!t->parent && h->off_parent != OFF_NONE)
			t->parent = mem_read64(p, t->key + h->off_parent);
	}
}
