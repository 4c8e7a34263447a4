/*
 * gotrace_v2: the Go 1.22+ wire format (GOTRACE.md 2): its batches and
 * generations.
 *
 * The file is a sequence of length-prefixed batches grouped in generations
 * (a change of the generation number before 1.26, an EndOfGeneration byte
 * from 1.26). String and stack ids are per generation, so each generation is
 * decoded on its own: tables first (their batches may come after the events
 * that use them), then the per-M event batches (gotrace_v2_events.c), then
 * its events are put in order (gotrace_v2_order.c).
 */
#include <stdlib.h>
#include <string.h>

#include "go/gotrace_v2_impl.h"

/* --- batches -------------------------------------------------------------- */

static int read_batch(struct v2 *v, size_t *pos, int experimental, struct oob_err *err)
{
	size_t off = *pos - 1;
	uint64_t x[4];
	int rc;
	if (experimental && (*pos)++ >= v->n)
		return gotrace_v2_uv_err(GOTRACE_UV_SHORT, off, "ExperimentalBatch header", err);
	for (int i = 0; i < 4; i++)
		if ((rc = gotrace_uv(v->p, v->n, pos, &x[i])) < 0)
			return gotrace_v2_uv_err(rc, off, "batch header", err);
	if (x[3] > v->n - *pos)
		return oob_err_set(
		    err, -EINVAL,
		    "batch at offset 0x%zx: length %llu runs past the end of the trace "
		    "(truncated?)",
		    off, (unsigned long long)x[3]);
	if (x[0] == 0)
		return oob_err_set(err, -EINVAL, "batch at offset 0x%zx has generation 0", off);
	struct batch *b = gotrace_vec_push(&v->batches, sizeof(*b));
	*b = (struct batch){
	    .gen = x[0], .m = x[1], .time = x[2], .hdr = off, .pay = *pos, .len = (size_t)x[3]};
	if (experimental)
		b->len = SIZE_MAX; /* marks it skipped */
	*pos += (size_t)x[3];
	v->t->info.batches++;
	return 0;
}

/* Reads every batch header. End-of-generation markers become batches with
 * gen 0. */
static int read_batches(struct v2 *v, struct oob_err *err)
{
	size_t pos = 16;
	while (pos < v->n) {
		uint8_t b = v->p[pos++];
		int rc = 0;
		if (b == V2_EVENT_BATCH)
			rc = read_batch(v, &pos, 0, err);
		else if (b == V2_EXPERIMENTAL_BATCH && v->ver >= 1023)
			rc = read_batch(v, &pos, 1, err);
		else if (b == V2_END_OF_GENERATION && v->ver >= 1026)
			memset(gotrace_vec_push(&v->batches, sizeof(struct batch)), 0,
			       sizeof(struct batch));
		else
			rc = oob_err_set(err, -EINVAL,
					 "expected a batch at offset 0x%zx, found byte 0x%02x",
					 pos - 1, b);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static void gen_reset(struct v2 *v, uint64_t gen)
{
	for (size_t i = 0; i < v->cursors.n; i++)
		free(((struct cursor *)v->cursors.p)[i].idx.p);
	v->cursors.n = v->strv.n = v->samples.n = 0;
	oob_map_clear(&v->strs);
	oob_map_clear(&v->stks);
	oob_map_clear(&v->curmap);
	v->gen = gen;
	v->freq = 0;
}

/* Kind of a non-experimental batch: by its first payload byte. */
static int batch_kind(const struct v2 *v, const struct batch *b)
{
	if (b->len == SIZE_MAX || b->len == 0)
		return b->len ? -1 : V2_EVENT_BATCH;
	uint8_t k = v->p[b->pay];
	if (k == V2_STRINGS || k == V2_STACKS || k == V2_CPU_SAMPLES)
		return k;
	if ((k == V2_FREQUENCY && v->ver < 1025) || (k == V2_SYNC && v->ver >= 1025))
		return V2_SYNC;
	return V2_EVENT_BATCH;
}

static int gen_tables(struct v2 *v, const struct batch *b, size_t nb, struct oob_err *err)
{
	int rc = 0;
	for (int pass = 0; pass < 3 && rc >= 0; pass++)
		for (size_t i = 0; i < nb && rc >= 0; i++) {
			int k = batch_kind(v, &b[i]);
			if (pass == 0 && k == V2_STRINGS)
				rc = gotrace_v2_strings_batch(v, &b[i], err);
			else if (pass == 1 && k == V2_STACKS)
				rc = gotrace_v2_stacks_batch(v, &b[i], err);
			else if (pass == 2 && k == V2_SYNC)
				rc = gotrace_v2_sync_batch(v, &b[i], err);
		}
	return rc;
}

static int do_gen(struct v2 *v, const struct batch *b, size_t nb, struct oob_err *err)
{
	size_t first = v->t->nev;
	int rc;
	if (!v->initial_gen)
		v->initial_gen = b[0].gen;
	gen_reset(v, b[0].gen);
	v->t->info.generations++;
	if ((rc = gen_tables(v, b, nb, err)) < 0)
		return rc;
	if (!v->freq && !v->t->info.freq)
		return oob_err_set(err, -EINVAL, "generation %llu has no Frequency event",
				   (unsigned long long)v->gen);
	if (!v->t->info.freq)
		v->t->info.freq = v->freq;
	for (size_t i = 0; i < nb && rc >= 0; i++) {
		int k = batch_kind(v, &b[i]);
		if (k == V2_EVENT_BATCH)
			rc = gotrace_v2_event_batch(v, &b[i], err);
		else if (k == V2_CPU_SAMPLES)
			rc = gotrace_v2_samples_batch(v, &b[i], err);
	}
	return rc < 0 ? rc : gotrace_v2_finish_gen(v, first, err);
}

/* Splits the batch list into generations and decodes each. */
static int generations(struct v2 *v, struct oob_err *err)
{
	const struct batch *b = v->batches.p;
	size_t nb = v->batches.n, i = 0;
	uint64_t last = 0;
	while (i < nb) {
		if (b[i].gen == 0) { /* EndOfGeneration with nothing before it */
			i++;
			continue;
		}
		size_t j = i;
		while (j < nb && b[j].gen != 0 && (v->ver >= 1026 || b[j].gen == b[i].gen))
			j++;
		if (b[i].gen <= last)
			return oob_err_set(
			    err, -EINVAL,
			    "batch at offset 0x%zx goes back to generation %llu after "
			    "%llu",
			    b[i].hdr, (unsigned long long)b[i].gen, (unsigned long long)last);
		last = b[i].gen;
		int rc = do_gen(v, b + i, j - i, err);
		if (rc < 0)
			return rc;
		i = j;
	}
	return 0;
}

static void summarize(struct v2 *v)
{
	struct gotrace_info *in = &v->t->info;
	in->min_ticks = v->t->nev ? UINT64_MAX : 0;
	for (size_t i = 0; i < v->t->nev; i++) {
		const struct gotrace_event *e = &v->t->ev[i];
		in->min_ticks = e->ticks < in->min_ticks ? e->ticks : in->min_ticks;
		in->max_ticks = e->ticks > in->max_ticks ? e->ticks : in->max_ticks;
		in->timed_events += e->kind != GOTRACE_EV_CPU_SAMPLE;
	}
}

int gotrace_v2_parse(struct gotrace *t, const uint8_t *p, size_t n, int ver, struct oob_err *err)
{
	struct v2 v = {.t = t, .p = p, .n = n, .ver = ver};
	oob_map_init(&v.strs, 256);
	oob_map_init(&v.stks, 256);
	oob_map_init(&v.curmap, 16);
	oob_map_init(&v.gmap, 64);
	oob_map_init(&v.pmap, 16);
	oob_map_init(&v.mmap, 16);
	int rc = read_batches(&v, err);
	if (rc >= 0)
		rc = generations(&v, err);
	if (rc >= 0 && !t->info.generations)
		rc = oob_err_set(err, -EINVAL, "the trace has no batches");
	if (rc >= 0)
		summarize(&v);
	gen_reset(&v, 0);
	free(v.cursors.p);
	free(v.strv.p);
	free(v.samples.p);
	free(v.batches.p);
	free(v.gv.p);
	free(v.pv.p);
	free(v.mv.p);
	oob_map_destroy(&v.strs);
	oob_map_destroy(&v.stks);
	oob_map_destroy(&v.curmap);
	oob_map_destroy(&v.gmap);
	oob_map_destroy(&v.pmap);
	oob_map_destroy(&v.mmap);
	return rc < 0 ? rc : 0;
}
