/*
 * The reconstruction driver (DESIGN.md 4): setup, the batch loop and the hot
 * loop, and the seam (recon_new, recon_start, recon_feed, recon_finish).
 *
 * Per hart, the state is: the current code block and how many of its
 * instructions the trace has matched so far, and the shadow stack. The hot
 * loop compares trace pcs against the block's offsets; everything else
 * happens at block ends (recon_transition: the block's last instruction
 * decides what kind of control transfer happened, recon_flow.c) and at
 * mismatches in the middle of a block (recon_deviation: the only way
 * straight-line code is left early is a trap). Weights are flushed to the
 * calling-context node on top of the shadow stack only when that top changes
 * (recon_stack.c), so the per-instruction cost is the compare. How tasks are
 * told apart is the task tracker's (tasks/tracker.h), chosen at recon_start.
 */
#include "recon/recon_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile/frame.h"
#include "profile/profile_impl.h"
#include "sym/sym.h"
#include "tasks/events.h"
#include "util/oob_log.h"
#include "util/oob_mem.h"

/* ---- the loop ---- */

/* How many of the m trace pcs at t equal the block's pcs at b: the only
 * per-instruction work. Four at a time while they all match. */
static inline uint32_t match_pcs(const uint64_t *t, const uint64_t *b, uint32_t m)
{
	uint32_t k = 0;
	for (; k + 4 <= m; k += 4)
		if ((t[k] ^ b[k]) | (t[k + 1] ^ b[k + 1]) | (t[k + 2] ^ b[k + 2]) |
		    (t[k + 3] ^ b[k + 3]))
			break;
	while (k < m && t[k] == b[k])
		k++;
	return k;
}

static void hart_start(struct recon *r, struct tracker_hart *h, const struct trace_batch *b,
		       uint32_t i)
{
	if (r->trk && r->trk->ops->on_start)
		r->trk->ops->on_start(r->trk, h, b, i);
	h->started = 1;
	h->blk = code_block_at(space_of(r, h, b->pc[i]), b->pc[i]);
	h->pos = 0;
	h->last_seq = h->seq + i;
	if (b->cycle)
		h->first_cycle = h->last_cycle = h->end_cycle = b->cycle[i];
	if (b->priv)
		h->priv = b->priv[i];
	recon_push_root(r, h);
	recon_push_base(r, h, h->blk);
	h->run_base = h->stk->n - 1;
}

/* Whether a chunk run has something to do after the block end at record i
 * (chunk_event): rarely, so the check is inlined and the call is not. */
static inline int chunk_due(const struct recon *r, const struct tracker_hart *h, uint32_t i)
{
	const struct recon_chk *c = r->chk;
	return c && (c->spec ? c->touched : h->seq + i >= c->stop);
}

/* A chunk run after a block end at record i (recon_chunk.c), when due: a
 * speculative run takes its snapshot, the floor having been touched; a
 * join's re-run stops at its record (1), or is past it and never will. */
static int chunk_event(struct recon *r, struct tracker_hart *h, struct code_block *blk, uint32_t i)
{
	struct recon_chk *c = r->chk;
	uint64_t at = h->seq + i;
	h->blk = blk;
	h->pos = 0;
	if (c->spec) {
		c->snapshot(r, h, at);
		return 0;
	}
	c->stopped = at == c->stop;
	c->stop = UINT64_MAX;
	return c->stopped;
}

/* Reconstructs records [i, e) of the batch; returns e, or where a join's
 * re-run stopped (chunk_event). */
static uint32_t hart_run(struct recon *r, struct tracker_hart *h, const struct trace_batch *b,
			 uint32_t i, uint32_t e)
{
	const uint64_t *pc = b->pc;
	if (!h->started)
		hart_start(r, h, b, i);
	struct code_block *blk = h->blk;
	uint32_t pos = h->pos;
	while (i < e) {
		if (pos == blk->n) {
			struct code_block *nb = code_next(space_of(r, h, pc[i]), blk, pc[i]);
			/* Most block ends are branches inside one function: no event. */
			if (blk->local && (pc[i] == blk->fall || pc[i] == blk->target) &&
			    same_frame(blk, nb, stack_top(h->stk)->frame) && !priv_rises(r, h, i))
				blk = nb;
			else
				blk = recon_transition(r, h, blk, nb, i);
			pos = 0;
			if (h->seq + i == r->py_at)
				recon_py_event(r, h, i);
			if (chunk_due(r, h, i) && chunk_event(r, h, blk, i))
				break;
		}
		uint32_t m = blk->n - pos < e - i ? blk->n - pos : e - i, k;
		k = match_pcs(pc + i, blk->pcs + pos, m);
		if (r->pcs && k)
			recon_pcs_hit(r, h, blk, pos, k, i);
		if (blk->inl && k)
			*oob_map_put(&r->inl, (uint64_t)stack_top(h->stk)->node << 32 | blk->inl,
				     NULL) += k;
		i += k;
		pos += k;
		if (k < m) {
			blk = recon_deviation(r, h, blk, pos, i);
			pos = 0;
			if (h->seq + i == r->py_at)
				recon_py_event(r, h, i);
			if (chunk_due(r, h, i) && chunk_event(r, h, blk, i))
				break;
		}
	}
	h->blk = blk;
	h->pos = pos;
	return i;
}

/* Feeds the instruction bits of record i to its code space. */
static void learn_one(struct recon *r, struct tracker_hart *h, const struct trace_batch *b,
		      uint32_t i)
{
	const uint32_t mask = (1u << SEEN_BITS_LOG2) - 1;
	uint64_t pc = b->pc[i];
	uint32_t bits = b->insn[i];
	uint32_t slot = (uint32_t)(pc >> 1) & mask;
	struct code_space *cs = space_of(r, h, pc);
	if (!bits || (r->seen_bits[slot].pc == pc && r->seen_bits[slot].bits == bits &&
		      r->seen_bits[slot].cs == cs))
		return;
	r->seen_bits[slot].pc = pc;
	r->seen_bits[slot].bits = bits;
	r->seen_bits[slot].cs = cs;
	if (r->chk)
		r->chk->learned(r, cs, pc, bits);
	else
		code_put(cs, pc, bits);
}

/* Feeds the instruction bits of records [s, e) to their code spaces: only
 * those the reader says are new, when it knows. */
static void learn_bits(struct recon *r, struct tracker_hart *h, const struct trace_batch *b,
		       uint32_t s, uint32_t e)
{
	if (!b->insn_new) {
		for (uint32_t i = s; i < e; i++)
			learn_one(r, h, b, i);
		return;
	}
	for (uint32_t k = 0; k < b->ninsn_new; k++)
		if (b->insn_new[k] >= s && b->insn_new[k] < e)
			learn_one(r, h, b, b->insn_new[k]);
}

static struct tracker_hart *hart_get(struct recon *r, unsigned id)
{
	if (id >= r->nharts) {
		r->harts = oob_xrealloc(r->harts, (id + 1) * sizeof(*r->harts));
		memset(r->harts + r->nharts, 0, (id + 1 - r->nharts) * sizeof(*r->harts));
		for (size_t k = r->nharts; k <= id; k++) {
			struct tracker_hart *h = &r->harts[k];
			uint64_t key =
			    r->trk && r->trk->ops->hart_key ? r->trk->ops->hart_key(r->trk) : 0;
			h->id = (uint16_t)k;
			h->low = UINT32_MAX;
			h->task = proc_task_new(&r->run.proc, key, r->run.spaces[1]);
			h->stk = &h->task->stk;
		}
		r->nharts = id + 1;
	}
	return &r->harts[id];
}

/* Runs the batch's records, stopping where the tracker acts (a context
 * switch, a sideband event). */
static void batch(struct recon *r, const struct trace_batch *b)
{
	struct tracker_hart *h = hart_get(r, b->hart);
	const struct tracker_ops *ops = r->trk ? r->trk->ops : NULL;
	uint32_t s = 0;
	h->cycles = b->cycle != NULL;
	r->run.b = b;
	if (r->opts->on_batch)
		r->opts->on_batch(r->opts->batch_ctx, b, r->run.gseq);
	r->xi = 0;
	r->spx = 0;
	proc_batch(&r->run.proc, b);
	if (ops && ops->on_batch)
		ops->on_batch(r->trk, h);
	while (s < b->n) {
		uint32_t e = ops && ops->next_stop ? ops->next_stop(r->trk, h, s) : b->n;
		if (e > s) {
			if (b->insn)
				learn_bits(r, h, b, s, e);
			hart_run(r, h, b, s, e);
			if (r->run.proc.enabled)
				proc_apply(&r->run.proc, b, e);
		}
		if (ops && ops->on_stop)
			ops->on_stop(r->trk, h, e);
		s = e;
	}
	if (b->nx) /* the batch's last writes of sp: the next batch starts after them */
		recon_sp_sync(r, h, b->n);
	h->seq += b->n;
	r->run.gseq += b->n;
	if (b->cycle)
		h->end_cycle = b->cycle[b->n - 1];
	if (b->priv)
		h->priv = b->priv[b->n - 1];
}

/* Flushes each hart's last span and sums what the harts saw. */
static void finish(struct recon *r)
{
	if (r->trk && r->trk->ops->finish)
		r->trk->ops->finish(r->trk);
	for (size_t k = 0; k < r->nharts; k++) {
		struct tracker_hart *h = &r->harts[k];
		if (!h->started)
			continue;
		recon_charge(r, h, h->seq, h->end_cycle);
		recon_pop_to(r, h, 0);
		r->run.st.harts++;
		r->run.st.instructions += h->seq;
		if (h->end_cycle - h->first_cycle > r->run.st.cycles)
			r->run.st.cycles = h->end_cycle - h->first_cycle;
	}
}

/* Moves the instructions that ran in inlined code from each node to child
 * nodes for the inline chain (outermost first). Cycles follow in proportion:
 * the trace times control-flow events, not single instructions. */
static void split_inlines(struct recon *r)
{
	size_t n0 = r->cct.n;
	uint64_t *insns = oob_xmalloc(n0 * sizeof(*insns)),
		 *cycles = oob_xmalloc(n0 * sizeof(*cycles));
	for (size_t k = 0; k < n0; k++) {
		insns[k] = r->cct.v[k].insns;
		cycles[k] = r->cct.v[k].cycles;
	}
	size_t pos = 0;
	uint64_t key, n;
	while (oob_map_next(&r->inl, &pos, &key, &n)) {
		uint32_t node = (uint32_t)(key >> 32), leaf = node;
		const struct code_chain *c = code_chain_get(&r->chains, (uint32_t)key);
		for (uint32_t k = 0; k < c->n; k++)
			leaf = cct_child(&r->cct, leaf, c->frames[k]);
		uint64_t cyc =
		    insns[node] ? (uint64_t)((unsigned __int128)cycles[node] * n / insns[node]) : 0;
		r->cct.v[leaf].insns += n;
		r->cct.v[leaf].cycles += cyc;
		r->cct.v[node].insns -= n;
		r->cct.v[node].cycles -= cyc;
	}
	free(insns);
	free(cycles);
}

/* ---- processes ---- */

static const char *arena_fmt_name(struct oob_arena *a, const struct proc *pr, const struct task *t)
{
	char buf[PROC_COMM_SIZE + 40]; /* comm, then " [satp 0x...]" at most */
	if (pr->by_satp && t->key)
		snprintf(buf, sizeof(buf), "%s [satp %#" PRIx64 "]", t->comm[0] ? t->comm : "?",
			 (uint64_t)ids_satp_key(t->key));
	else if (t->pid >= 0)
		snprintf(buf, sizeof(buf), "%s %lld", t->comm[0] ? t->comm : "?",
			 (long long)t->pid);
	else
		snprintf(buf, sizeof(buf), "%s [task %u]", t->comm[0] ? t->comm : "?", t->idx);
	return oob_arena_strdup(a, buf);
}

/* The task table as the profile's process list; root frames get their names. */
static void add_processes(struct recon *r, struct profile *p)
{
	struct proc *pr = &r->run.proc;
	if (!pr->enabled)
		return;
	proc_finish(pr);
	p->proc_source = r->trk ? r->trk->ops->source : "derived";
	p->switches = pr->switches;
	p->procs = oob_xcalloc(pr->ntasks ? pr->ntasks : 1, sizeof(*p->procs));
	for (size_t k = 0; k < pr->ntasks; k++) {
		const struct task *t = pr->tasks[k];
		if (t->root_frame == FRAME_NONE || t->start == UINT64_MAX)
			continue;
		const struct task *parent = t->parent ? proc_task_find(pr, t->parent) : NULL;
		struct profile_process *pp = &p->procs[p->nprocs++];
		struct profile_exec *ex = oob_arena_zalloc(p->arena, (t->nexecs + 1) * sizeof(*ex));
		for (size_t e = 0; e < t->nexecs; e++)
			ex[e] = (struct profile_exec){oob_arena_strdup(p->arena, t->execs[e].path),
						      t->execs[e].when};
		uint64_t *satps = oob_arena_zalloc(p->arena, (t->nsatps + 1) * sizeof(*satps));
		if (t->nsatps)
			memcpy(satps, t->satps, t->nsatps * sizeof(*satps));
		*pp = (struct profile_process){.pid = t->pid,
					       .ppid = parent ? parent->pid : -1,
					       .comm = oob_arena_strdup(p->arena, t->comm),
					       .frame = t->root_frame,
					       .start = t->start,
					       .end = t->end,
					       .insns_user = t->insns[0],
					       .insns_kernel = t->insns[1],
					       .cycles_user = t->cycles[0],
					       .cycles_kernel = t->cycles[1],
					       .execs = ex,
					       .nexecs = t->nexecs,
					       .satps = satps,
					       .nsatps = t->nsatps};
		p->frames[t->root_frame].name = arena_fmt_name(p->arena, pr, t);
	}
}

/* ---- setup ---- */

/* Puts b into the kernel space if it lives in the upper half, else into the
 * first user space where it overlaps nothing (programs linked at the same
 * address are different processes' code), else into a new user space. */
static int place_binary(struct recon *r, const struct sym_binary *b, uint64_t base,
			struct oob_err *err)
{
	uint64_t lo, hi;
	sym_binary_text_range(b, &lo, &hi);
	uint64_t at = base == RECON_BASE_LINK ? lo : base;
	if (at >> 63)
		return sym_space_add(r->run.syms[0], b, base, err);
	for (size_t k = 1; k < r->run.nspaces; k++) {
		if (sym_space_add(r->run.syms[k], b, base, NULL) == 0) {
			if (!r->run.spaces[k]->main_binary)
				r->run.spaces[k]->main_binary = b;
			return 0;
		}
	}
	struct code_space *cs = recon_space_new(r, sym_space_new());
	cs->main_binary = b;
	return sym_space_add(r->run.syms[cs->id], b, base, err);
}

/* Opens the ELFs and perf maps of the options, or borrows those lender
 * opened from the same options. */
static int load_binaries(struct recon *r, const struct recon *lender, struct oob_err *err)
{
	const struct recon_opts *o = r->opts;
	recon_space_new(r, sym_space_new()); /* kernel */
	recon_space_new(r, sym_space_new()); /* the first user space, even if empty */
	r->run.bins = oob_xcalloc(o->nelfs + o->nperfmaps + 1, sizeof(*r->run.bins));
	r->bins_borrowed = lender != NULL;
	for (size_t k = 0; k < o->nelfs + o->nperfmaps; k++) {
		int is_elf = k < o->nelfs;
		const char *path = is_elf ? o->elfs[k].path : o->perfmaps[k - o->nelfs];
		struct sym_binary *b = lender	? lender->run.bins[k]
				       : is_elf ? sym_binary_open(path, err)
						: sym_perfmap_open(path, err);
		if (!b)
			return err ? err->code : -EINVAL;
		r->run.bins[r->run.nbins++] = b;
		if (place_binary(r, b, is_elf ? o->elfs[k].base : RECON_BASE_LINK, err) < 0)
			return oob_err_prefix(err, "%s", path);
		/* a kernel's vDSO: placed per task, where a signal handler
		 * returns into it (RECONSTRUCTION.md 3.5) */
		uint64_t lo, hi;
		sym_binary_text_range(b, &lo, &hi);
		if (is_elf && lo >> 63 && !r->vdso)
			r->vdso = sym_binary_open_embedded(b, "vdso_start", "vdso_end", NULL);
	}
	return 0;
}

static size_t user_binaries(const struct recon *r)
{
	size_t n = 0;
	for (size_t k = 0; k < r->run.nbins; k++) {
		uint64_t lo, hi;
		sym_binary_text_range(r->run.bins[k], &lo, &hi);
		n += !(lo >> 63);
	}
	return n;
}

/* Process tracking hooks the kernel's functions: find the kernel ELF. */
/* The kernel ELF given (in the kernel space), or NULL; its load bias in *bias. */
static const struct sym_binary *find_kernel(const struct recon *r, uint64_t *bias)
{
	for (size_t k = 0; k < r->run.nbins; k++) {
		uint64_t lo, hi;
		sym_binary_text_range(r->run.bins[k], &lo, &hi);
		const struct sym_mapping *m = sym_space_find(r->run.syms[0], lo);
		if (m && m->bin == r->run.bins[k]) {
			*bias = m->bias;
			return r->run.bins[k];
		}
	}
	return NULL;
}

/*
 * How tasks are told apart (DESIGN.md 3.3): sideband events when given;
 * address spaces with --tasks satp; else, without registers, through the
 * context switches if the kernel has __switch_to (park), by matching the
 * control flow when several user binaries are candidates and the trace has
 * no instruction bits, by address with the bits and a kernel; else derived
 * from the kernel's functions (with registers and a kernel), else not at all.
 */
static int choose_tracker(struct recon *r, unsigned fields, struct oob_err *err)
{
	struct tracker_run *run = &r->run;
	uint64_t bias = 0;
	const struct sym_binary *kernel = find_kernel(r, &bias);
	int regs = (fields & TRACE_F_REGS) != 0;
	proc_destroy(&run->proc);
	if (r->opts->tasks == RECON_TASKS_SATP) {
		if (!regs || r->events)
			return oob_err_set(err, -EINVAL,
					   r->events
					       ? "tasks by satp: not with sideband events"
					       : "tasks by satp: this trace has no CSR writes "
						 "(a Spike commit log or oobt with registers has)");
		proc_init_satp(&run->proc, &run->frames, fields);
	} else {
		proc_init(&run->proc, &run->frames, kernel, bias, 0, fields);
	}
	int matching = !(fields & (TRACE_F_INSN | TRACE_F_REGS)) && run->nspaces > 2 && !r->events;
	if (r->events) {
		r->trk = tracker_events_new(run, r->events);
		r->events = NULL;
	} else if (r->opts->tasks == RECON_TASKS_SATP) {
		r->trk = tracker_satp_new(run);
	} else if (kernel && !regs && (r->trk = tracker_park_new(run, kernel, bias, 0, matching))) {
		/* tasks through the context switches */
	} else if (matching) {
		r->trk = tracker_match_new(run);
	} else if (kernel && !regs && user_binaries(r) > 1) {
		r->trk = tracker_bin_new(run);
	} else {
		r->trk = tracker_derived_new(run);
	}
	if (r->trk)
		run->proc.enabled = 1; /* tasks with root frames */
	/* Linux's trap entry; traps seen in the trace teach it otherwise. */
	uint64_t v = kernel ? sym_binary_find_func(kernel, "handle_exception") : 0;
	if (v)
		r->vector = v + bias;
	return 0;
}

static double now_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int open_run(const struct recon_opts *opts, const struct recon *lender, struct recon **out,
		    struct oob_err *err)
{
	struct recon *r = oob_xcalloc(1, sizeof(*r));
	int rc;
	*out = r;
	r->t0 = now_seconds();
	r->opts = opts;
	r->run.svc = &recon_services;
	r->max_depth = opts->max_depth ? opts->max_depth : RECON_MAX_DEPTH_DEFAULT;
	r->py_at = UINT64_MAX;
	frame_table_init(&r->run.frames);
	cct_init(&r->cct);
	code_chains_init(&r->chains);
	r->unknown_frame = frame_named(&r->run.frames, PROFILE_FRAME_MARKER, "[unknown]");
	r->seen_bits = oob_xcalloc((size_t)1 << SEEN_BITS_LOG2, sizeof(*r->seen_bits));
	r->seen_bits[0].pc = UINT64_MAX; /* slot 0's zero tag must not match pc 0 */
	oob_map_init(&r->inl, 64);
	if (opts->pcs)
		recon_pcs_init(r);
	proc_init(&r->run.proc, &r->run.frames, NULL, 0, 0, 0);
	if ((rc = load_binaries(r, lender, err)) < 0)
		return rc;
	if (opts->events_path && !(r->events = events_load(opts->events_path, err)))
		return err ? err->code : -EINVAL;
	return 0;
}

/* recon_new with the error code (recon_impl.h). */
int recon_open(const struct recon_opts *opts, struct recon **out, struct oob_err *err)
{
	return open_run(opts, NULL, out, err);
}

struct recon *recon_new_lent(const struct recon *m)
{
	struct recon *r = NULL;
	if (m->run.nbins != m->opts->nelfs + m->opts->nperfmaps ||
	    open_run(m->opts, m, &r, NULL) < 0) {
		recon_free(r);
		return NULL;
	}
	return r;
}

struct recon *recon_new(const struct recon_opts *opts, struct oob_err *err)
{
	struct recon *r;
	if (recon_open(opts, &r, err) < 0) {
		recon_free(r);
		return NULL;
	}
	return r;
}

void recon_free(struct recon *r)
{
	if (!r)
		return;
	free(r->harts);
	if (r->trk)
		r->trk->ops->free(r->trk);
	events_free(r->events);
	free(r->seen_bits);
	oob_map_destroy(&r->inl);
	recon_pcs_free(r);
	recon_py_free(r);
	recon_nonlocal_free(r);
	proc_destroy(&r->run.proc);
	for (size_t k = 0; k < r->run.nspaces; k++) {
		code_space_destroy(r->run.spaces[k]);
		free(r->run.spaces[k]);
		sym_space_free(r->run.syms[k]);
	}
	free(r->run.spaces);
	free(r->run.syms);
	code_chains_destroy(&r->chains);
	cct_destroy(&r->cct);
	frame_table_destroy(&r->run.frames);
	for (size_t k = 0; k < r->run.nbins && !r->bins_borrowed; k++)
		sym_binary_free(r->run.bins[k]);
	free(r->run.bins);
	sym_binary_free(r->vdso);
	free(r);
}

int recon_start(struct recon *r, unsigned fields, const char *format, struct oob_err *err)
{
	if (r->started)
		return oob_err_set(err, -EINVAL, "reconstruction already started");
	r->run.st.format = format;
	r->fields = fields;
	recon_nonlocal_init(r);
	int rc = choose_tracker(r, fields, err);
	r->started = rc == 0;
	return rc;
}

int recon_feed(struct recon *r, const struct trace_batch *b)
{
	if (!r->started || b->n == 0)
		return -EINVAL;
	batch(r, b);
	r->seen += b->n;
	return 0;
}

uint32_t recon_feed_from(struct recon *r, const struct trace_batch *b, uint32_t s,
			 const struct trace_batch *ahead)
{
	struct tracker_hart *h = hart_get(r, b->hart);
	h->cycles = b->cycle != NULL;
	r->run.b = b;
	if (s == 0)
		r->xi = r->spx = 0;
	if (b->insn)
		learn_bits(r, h, b, s, b->n);
	if (ahead)
		learn_bits(r, h, ahead, 0, ahead->n);
	uint32_t e = hart_run(r, h, b, s, b->n);
	if (e < b->n)
		return e;
	if (b->nx)
		recon_sp_sync(r, h, b->n);
	h->seq += b->n;
	r->run.gseq += b->n;
	if (b->cycle)
		h->end_cycle = b->cycle[b->n - 1];
	if (b->priv)
		h->priv = b->priv[b->n - 1];
	r->seen += b->n;
	return e;
}

struct tracker_hart *recon_hart(struct recon *r, unsigned id)
{
	return hart_get(r, id);
}

int recon_finish(struct recon *r, struct profile **out)
{
	finish(r);
	split_inlines(r);
	if (r->pcs)
		recon_pcs_sites(r);
	r->run.st.seconds = now_seconds() - r->t0;
	*out = profile_build(&r->cct, &r->run.frames, (const struct sym_space *const *)r->run.syms,
			     r->run.nspaces, &r->run.st);
	add_processes(r, *out);
	recon_warn(r, *out);
	if (r->pcs)
		recon_pcs_finish(r, *out);
	return 0;
}

int recon_tasks_parse(const char *s, enum recon_tasks *out)
{
	if (strcmp(s, "auto") && strcmp(s, "satp"))
		return -EINVAL;
	*out = strcmp(s, "auto") ? RECON_TASKS_SATP : RECON_TASKS_AUTO;
	return 0;
}

const char *recon_tasks_name(enum recon_tasks t)
{
	return t == RECON_TASKS_SATP ? "satp" : "auto";
}

int recon_nonlocal_parse(const char *s, enum recon_nonlocal *out)
{
	static const char *const names[] = {"auto", "pc", "sp-only"};
	for (int k = 0; k < 3; k++)
		if (strcmp(s, names[k]) == 0) {
			*out = (enum recon_nonlocal)k;
			return 0;
		}
	return -EINVAL;
}
