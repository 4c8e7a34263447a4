#include "api_inputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api_json.h"
#include "metrics.h"
#include "go/gotrace.h"
#include "py/pycode.h"
#include "util/in.h"
#include "util/oob_log.h"
#include "util/oob_mem.h"
#include "sym/sym.h"
#include "trace/fireperf.h"
#include "trace/trace.h"
#include "sample/sample.h"

enum { UP_BINARY, UP_TRACE };

struct upload {
	int kind;
	int slot; /* holds one of the --max-uploads slots */
	struct store_writer *w;
	int stream;
	int64_t trace_id;	  /* the row of a stream */
	enum trace_format format; /* AUTO, a trace format or an upload kind */
	char name[CATALOG_NAME_MAX];
	uint8_t head[4]; /* for the LZ4 magic and the gotrace probe */
	size_t nhead;
};

static int refuse(struct http_req *r, struct oob_err *e)
{
	http_respond_oob_err(r, e);
	return HTTP_BODY_NONE;
}

/* Checks what can be checked before the body: size, name, format, slots. */
static int up_check(struct api_ctx *c, struct http_req *r, struct upload *up, struct oob_err *e)
{
	int64_t len = http_req_content_length(r);
	const char *name = http_req_arg(r, "name");
	if (len >= 0 && (uint64_t)len > c->cfg->max_upload)
		return oob_err_set(e, -EFBIG, "body of %lld bytes is over the limit of %llu",
				   (long long)len, (unsigned long long)c->cfg->max_upload);
	if (name && api_name_check(name, e) < 0)
		return e->code;
	snprintf(up->name, sizeof(up->name), "%s", name ? name : "unnamed");
	if (up->kind == UP_TRACE) {
		const char *fmt = http_req_arg(r, "format"), *st = http_req_arg(r, "stream");
		const struct trace_format_row *row = trace_format_find(fmt);
		char names[512];
		if (fmt && strcmp(fmt, "auto") && !row)
			return oob_err_set(
			    e, -EINVAL, "format \"%.40s\": expected %s", fmt,
			    trace_format_list(names, sizeof(names), TRACE_FORMATS_ALL, " or "));
		up->format = row ? row->fmt : TRACE_FMT_AUTO;
		up->stream = st && (!strcmp(st, "1") || !strcmp(st, "true"));
		if (up->stream && row && !row->ops)
			return oob_err_set(e, -EINVAL, "%s files cannot be streamed", row->name);
	}
	return 0;
}

/* Registers a stream at once, so jobs can follow it before it ends. */
static int open_stream(struct api_ctx *c, struct upload *up, struct oob_err *e)
{
	struct catalog_trace t = {0};
	snprintf(t.name, sizeof(t.name), "%s", up->name);
	snprintf(t.format, sizeof(t.format), "%s", trace_format_name(up->format));
	t.state = CATALOG_TRACE_STREAMING;
	int rc = catalog_trace_add(c->cat, &t, e);
	if (rc < 0)
		return rc;
	char sname[64];
	snprintf(sname, sizeof(sname), "trace-%lld", (long long)t.id);
	up->trace_id = t.id;
	up->w = store_writer_new_stream(c->store, sname, e);
	if (up->w)
		snprintf(t.blob, sizeof(t.blob), "%s", store_writer_rel(up->w));
	else
		t.state = CATALOG_TRACE_INVALID;
	if ((rc = catalog_trace_update(c->cat, &t, up->w ? e : NULL)) < 0 || !up->w)
		return up->w ? rc : e->code;
	upload_stream_open(c->uploads, t.id);
	return 0;
}

static int up_begin(struct api_ctx *c, struct http_req *r, struct api_req *q, int kind)
{
	struct oob_err e = {0};
	struct upload *up = oob_xcalloc(1, sizeof(*up));
	q->state = up;
	up->kind = kind;
	if (up_check(c, r, up, &e) < 0)
		return refuse(r, &e);
	if (upload_begin(c->uploads) < 0) {
		http_add_header(r, "Retry-After", "5");
		http_respond_error(r, 503, "busy", "%u uploads are in progress; try again later",
				   c->cfg->max_uploads);
		return HTTP_BODY_NONE;
	}
	up->slot = 1;
	if (up->stream ? open_stream(c, up, &e) < 0 : !(up->w = store_writer_new(c->store, &e)))
		return refuse(r, &e);
	return HTTP_BODY_STREAM;
}

int api_inputs_binary_begin(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	return up_begin(c, r, q, UP_BINARY);
}

int api_inputs_trace_begin(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	return up_begin(c, r, q, UP_TRACE);
}

int api_inputs_upload_chunk(struct api_ctx *c, struct http_req *r, struct api_req *q, const void *p,
			    size_t n)
{
	struct upload *up = q->state;
	struct oob_err e = {0};
	if (store_writer_size(up->w) + n > c->cfg->max_upload) {
		oob_err_set(&e, -EFBIG, "body over the limit of %llu bytes",
			    (unsigned long long)c->cfg->max_upload);
		return refuse(r, &e), -EFBIG;
	}
	for (size_t i = 0; up->nhead < sizeof(up->head) && i < n; i++)
		up->head[up->nhead++] = ((const uint8_t *)p)[i];
	int rc = store_writer_write(up->w, p, n, &e);
	if (rc < 0)
		return refuse(r, &e), rc;
	if (up->stream)
		upload_stream_grew(c->uploads, up->trace_id);
	return 0;
}

static void writer_abs(struct api_ctx *c, struct upload *up, char *buf, size_t n)
{
	store_abspath(c->store, store_writer_rel(up->w), buf, n);
}

/* Readers name the file they read; the client knows it as "the body". */
static int scrub(struct oob_err *e, const char *abs, const char *label)
{
	char *at;
	size_t n = strlen(abs);
	while (e && n && (at = strstr(e->msg, abs))) {
		char rest[OOB_ERR_MSG_MAX];
		snprintf(rest, sizeof(rest), "%s", at + n);
		snprintf(at, sizeof(e->msg) - (size_t)(at - e->msg), "%s%s", label, rest);
	}
	return e ? e->code : -EINVAL;
}

/* ---- binaries ---- */

static int binary_inspect(struct api_ctx *c, struct upload *up, struct catalog_binary *b,
			  struct oob_err *e)
{
	char abs[1400];
	writer_abs(c, up, abs, sizeof(abs));
	struct sym_binary *sb = sym_binary_open(abs, e);
	if (!sb) {
		scrub(e, abs, "body");
		return oob_err_prefix(e, "binary \"%s\"", up->name);
	}
	memset(b, 0, sizeof(*b));
	snprintf(b->name, sizeof(b->name), "%s", up->name);
	snprintf(b->build_id, sizeof(b->build_id), "%s", sym_binary_build_id(sb));
	b->machine = sym_binary_machine(sb);
	b->nfuncs = sym_binary_nfuncs(sb);
	b->has_dwarf = sym_binary_has_dwarf(sb);
	b->pie = sym_binary_is_pie(sb);
	sym_binary_free(sb);
	return 0;
}

static void binary_end(struct api_ctx *c, struct http_req *r, struct upload *up)
{
	struct oob_err e = {0};
	struct catalog_binary b, old;
	struct store_blob blob;
	int rc = store_writer_finish(up->w, &e);
	if (rc == 0)
		rc = binary_inspect(c, up, &b, &e);
	if (rc < 0)
		goto fail;
	rc = store_writer_commit(up->w, &blob, &e);
	up->w = NULL;
	if (rc < 0)
		goto fail;
	if (catalog_binary_find(c->cat, blob.sha256, &old, NULL) == 0) {
		json_t *j = api_json_binary(&old);
		json_object_set_new(j, "duplicate", json_true());
		http_respond_json(r, 200, j);
		return;
	}
	snprintf(b.sha256, sizeof(b.sha256), "%s", blob.sha256);
	snprintf(b.blob, sizeof(b.blob), "%s", blob.rel);
	b.size = blob.size;
	if ((rc = catalog_binary_add(c->cat, &b, &e)) < 0)
		goto fail;
	OOB_INFO("binary %lld \"%s\": %llu bytes, %llu functions", (long long)b.id, b.name,
		 (unsigned long long)b.size, (unsigned long long)b.nfuncs);
	char url[64];
	snprintf(url, sizeof(url), "/api/v1/binaries/%lld", (long long)b.id);
	http_add_header(r, "Location", url);
	http_respond_json(r, 201, api_json_binary(&b));
	return;
fail:
	http_respond_oob_err(r, &e);
}

/* ---- traces ---- */

/* The first line of an events file must be a JSON object. */
static int events_inspect(const char *path, struct oob_err *e)
{
	FILE *f = fopen(path, "r");
	char line[65536];
	if (!f)
		return oob_err_set(e, -EIO, "cannot read the upload back");
	int ok = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	if (!ok)
		return oob_err_set(e, -EINVAL, "events: the file is empty");
	json_error_t je;
	json_t *j = json_loads(line, JSON_DISABLE_EOF_CHECK, &je);
	int rc = json_is_object(j)
		     ? 0
		     : oob_err_set(e, -EINVAL, "events: line 1 is not a JSON object (%s)",
				   j ? "other JSON value" : je.text);
	json_decref(j);
	return rc;
}

/* A Go execution trace is parsed whole (gotrace.h), so an accepted one can be
 * overlaid later. */
static int gotrace_inspect(const char *path, struct upload *up, struct catalog_trace *t,
			   struct oob_err *e)
{
	struct gotrace *g = gotrace_open(path, NULL, e);
	if (!g) {
		scrub(e, path, "body");
		return oob_err_prefix(e, "Go trace \"%s\"", up->name);
	}
	const struct gotrace_info *in = gotrace_info(g);
	size_t n;
	gotrace_events(g, &n);
	snprintf(t->format, sizeof(t->format), "%s", trace_format_name(TRACE_FMT_GOTRACE));
	snprintf(t->description, sizeof(t->description), "Go 1.%d execution trace: %zu events",
		 in->version - 1000, n);
	t->records = n;
	gotrace_free(g);
	return 0;
}

/* A code map is read whole by the core's own loader, so that a job given an
 * accepted one does not fail on it, and a bad one is refused with its line. */
static int pycode_inspect(const char *path, struct upload *up, struct catalog_trace *t,
			  struct oob_err *e)
{
	struct pycode *m;
	if (pycode_load(path, &m, e) < 0) {
		scrub(e, path, "body");
		return oob_err_prefix(e, "code map \"%s\"", up->name);
	}
	snprintf(t->format, sizeof(t->format), "%s", trace_format_name(TRACE_FMT_PYCODE));
	snprintf(t->description, sizeof(t->description), "CPython code map: %u code objects", m->n);
	t->records = m->n;
	pycode_free(m);
	return 0;
}

/* A FirePerf log holds stack events, not instructions: all of them are read,
 * as every record of a trace is, so that an accepted log can be replayed. */
static int fireperf_inspect(const char *path, struct catalog_trace *t, struct oob_err *e)
{
	struct in_stream *s = in_open(path, NULL, e);
	struct fireperf_reader *fr = s ? fireperf_open_stream(s, e) : NULL;
	const struct fireperf_event *ev;
	int rc = fr ? 0 : (e->code ? e->code : -EINVAL);
	while (fr && (rc = fireperf_next(fr, &ev, e)) > 0)
		t->records++;
	if (rc == 0 && t->records == 0)
		rc = oob_err_set(e, -EINVAL, "no FirePerf event in it");
	fireperf_close(fr);
	return rc;
}

/* Stack samples of another tool: read whole (unsymbolized: a job gives the
 * ELFs), their samples are the records. */
static int sampled_inspect(const char *path, enum trace_format f, struct upload *up,
			   struct catalog_trace *t, struct oob_err *e)
{
	struct sample_opts so = {.format = f};
	struct profile *p;
	if (sample_read(path, &so, &p, e) < 0) {
		scrub(e, path, "body");
		return e->code;
	}
	const struct profile_stats *st = profile_stats(p);
	t->records = st->samples ? st->samples : st->instructions;
	snprintf(t->format, sizeof(t->format), "%s", trace_format_name(f));
	snprintf(t->description, sizeof(t->description),
		 "%s: %llu samples, %llu failed and %llu truncated walks", trace_format_name(f),
		 (unsigned long long)st->samples, (unsigned long long)st->failed_walks,
		 (unsigned long long)st->truncated_walks);
	profile_free(p);
	(void)up;
	return 0;
}

static int trace_inspect(struct api_ctx *c, struct upload *up, struct catalog_trace *t,
			 struct oob_err *e)
{
	char abs[1400];
	writer_abs(c, up, abs, sizeof(abs));
	t->lz4 = up->nhead == IN_LZ4_MAGIC_LEN && !memcmp(up->head, IN_LZ4_MAGIC, IN_LZ4_MAGIC_LEN);
	if (up->format == TRACE_FMT_EVENTS) {
		snprintf(t->format, sizeof(t->format), "%s", trace_format_name(TRACE_FMT_EVENTS));
		snprintf(t->description, sizeof(t->description), "events: JSON Lines");
		return events_inspect(abs, e);
	}
	if (up->format == TRACE_FMT_PYCODE)
		return pycode_inspect(abs, up, t, e);
	/* Detected from the raw head: an LZ4-compressed Go trace is not one. */
	const struct trace_format_row *head =
	    up->format == TRACE_FMT_AUTO
		? trace_format_detect(up->head, up->nhead, TRACE_FORMATS_ALL)
		: NULL;
	if (up->format == TRACE_FMT_GOTRACE || (head && head->fmt == TRACE_FMT_GOTRACE))
		return gotrace_inspect(abs, up, t, e);
	enum trace_format sf = sample_format_is(up->format) ? up->format : sample_detect_file(abs);
	if (sf != TRACE_FMT_AUTO && !t->lz4)
		return sampled_inspect(abs, sf, up, t, e);
	struct trace_opts o = {.format = up->format};
	struct trace_reader *tr = trace_open(abs, &o, e);
	if (!tr) {
		scrub(e, abs, "body");
		return oob_err_prefix(e, "trace \"%s\"", up->name);
	}
	/* The whole trace, not just its header: a trace that is accepted can
	 * be read to its end (a log cut mid-line fails here, with its line). */
	const struct trace_batch *b;
	int rc = 0;
	if (trace_reader_format(tr) == TRACE_FMT_FIREPERF) {
		rc = fireperf_inspect(abs, t, e);
		if (rc < 0 && scrub(e, abs, "body") < 0)
			oob_err_prefix(e, "FirePerf log \"%s\"", up->name);
	} else {
		while ((rc = trace_next(tr, &b, e)) > 0)
			t->records += b->n;
		if (rc == 0 && t->records == 0)
			rc =
			    oob_err_set(e, -EINVAL, "trace \"%s\": no instruction in it", up->name);
		else if (rc < 0 && scrub(e, abs, "body") < 0)
			oob_err_prefix(e, "trace \"%s\"", up->name);
	}
	snprintf(t->format, sizeof(t->format), "%s", trace_format_name(trace_reader_format(tr)));
	snprintf(t->description, sizeof(t->description), "%s", trace_reader_describe(tr));
	trace_close(tr);
	return rc < 0 ? rc : 0;
}

static void respond_trace(struct http_req *r, unsigned status, const struct catalog_trace *t,
			  int duplicate)
{
	json_t *j = api_json_trace(t);
	if (duplicate)
		json_object_set_new(j, "duplicate", json_true());
	if (status == 201) {
		char url[64];
		snprintf(url, sizeof(url), "/api/v1/traces/%lld", (long long)t->id);
		http_add_header(r, "Location", url);
	}
	http_respond_json(r, status, j);
}

static void fill_blob(struct catalog_trace *t, const struct store_blob *b,
		      enum catalog_trace_state state)
{
	snprintf(t->sha256, sizeof(t->sha256), "%s", b->sha256);
	snprintf(t->blob, sizeof(t->blob), "%s", b->rel);
	t->state = state;
	t->size = b->size;
}

/* Ends a stream: its row becomes ready / invalid, then the stream closes
 * (in that order: a follower that sees the close finds the final state).
 * info holds what trace_inspect found. */
static void stream_end(struct api_ctx *c, struct http_req *r, struct upload *up,
		       const struct catalog_trace *info, int rc, struct oob_err *e)
{
	struct catalog_trace t;
	struct store_blob blob;
	char stream_rel[STORE_REL_MAX];
	snprintf(stream_rel, sizeof(stream_rel), "%s", store_writer_rel(up->w));
	if (catalog_trace_get(c->cat, up->trace_id, &t, e) < 0) {
		store_writer_abort(up->w);
		up->w = NULL;
		rc = e->code;
		goto out;
	}
	memcpy(t.format, info->format, sizeof(t.format));
	memcpy(t.description, info->description, sizeof(t.description));
	t.lz4 = info->lz4;
	t.records = info->records;
	if (rc == 0) {
		rc = store_writer_commit(up->w, &blob, e); /* frees the writer */
		up->w = NULL;
	}
	if (rc == 0) {
		fill_blob(&t, &blob, CATALOG_TRACE_READY);
	} else {
		t.state = CATALOG_TRACE_INVALID;
		snprintf(t.error, sizeof(t.error), "%s", e->msg);
		if (up->w) {
			t.size = store_writer_size(up->w);
			store_writer_abort(up->w);
		}
	}
	up->w = NULL;
	catalog_trace_update(c->cat, &t, NULL);
out:
	upload_stream_close(c->uploads, up->trace_id);
	store_remove(c->store, stream_rel, NULL);
	if (rc < 0)
		http_respond_oob_err(r, e);
	else
		respond_trace(r, 201, &t, 0);
}

static void trace_end(struct api_ctx *c, struct http_req *r, struct upload *up)
{
	struct oob_err e = {0};
	struct catalog_trace t = {0}, old;
	struct store_blob blob;
	int rc = store_writer_finish(up->w, &e);
	if (rc == 0)
		rc = trace_inspect(c, up, &t, &e);
	if (up->stream) {
		stream_end(c, r, up, &t, rc, &e);
		return;
	}
	if (rc < 0)
		goto fail;
	rc = store_writer_commit(up->w, &blob, &e); /* frees the writer */
	up->w = NULL;
	if (rc < 0)
		goto fail;
	if (catalog_trace_find(c->cat, blob.sha256, &old, NULL) == 0) {
		respond_trace(r, 200, &old, 1);
		return;
	}
	snprintf(t.name, sizeof(t.name), "%s", up->name);
	fill_blob(&t, &blob, CATALOG_TRACE_READY);
	if ((rc = catalog_trace_add(c->cat, &t, &e)) < 0)
		goto fail;
	OOB_INFO("trace %lld \"%s\": %llu bytes, %s", (long long)t.id, t.name,
		 (unsigned long long)t.size, t.description);
	respond_trace(r, 201, &t, 0);
	return;
fail:
	http_respond_oob_err(r, &e);
}

void api_inputs_upload_end(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct upload *up = q->state;
	uint64_t bytes = up->w ? store_writer_size(up->w) : 0;
	if (up->kind == UP_BINARY)
		binary_end(c, r, up);
	else
		trace_end(c, r, up);
	metrics_upload(bytes);
}

/* One stream the last stop cut: its bytes become its blob, with their size
 * and hash, as when a client goes away. */
static void stream_recover(struct api_ctx *c, struct catalog_trace *t)
{
	struct store_blob blob;
	struct oob_err e = {0};
	char stream_rel[STORE_REL_MAX];
	snprintf(stream_rel, sizeof(stream_rel), "%s", t->blob);
	struct store_writer *w = store_writer_adopt_stream(c->store, stream_rel, &e);
	if (!w || store_writer_commit(w, &blob, &e) < 0) {
		OOB_WARN("trace %lld: the cut stream's bytes are lost: %s", (long long)t->id,
			 e.msg);
		return; /* catalog_trace_close_streams marks it incomplete */
	}
	fill_blob(t, &blob, CATALOG_TRACE_INCOMPLETE);
	snprintf(t->error, sizeof(t->error),
		 "upload interrupted after %llu bytes: the server stopped while it streamed",
		 (unsigned long long)blob.size);
	if (catalog_trace_update(c->cat, t, &e) == 0)
		store_remove(c->store, stream_rel, NULL);
	else
		OOB_WARN("trace %lld: %s", (long long)t->id, e.msg);
}

int api_inputs_recover_streams(struct api_ctx *c, struct oob_err *err)
{
	struct catalog_trace *v;
	size_t n;
	int64_t after = 0;
	int total = 0;
	do {
		int rc = catalog_trace_list(c->cat, after, 64, NULL, CATALOG_TRACE_STREAMING, &v,
					    &n, err);
		if (rc < 0)
			return rc;
		/* Another node's stream is live on that node. */
		for (size_t i = 0; i < n; i++)
			if (!strcmp(v[i].node, catalog_node(c->cat)))
				stream_recover(c, &v[i]);
		after = n ? v[n - 1].id : after;
		total += (int)n;
		free(v);
	} while (n == 64);
	return total;
}

/* The client went away: a stream keeps what arrived, as "incomplete". */
static void stream_abandoned(struct api_ctx *c, struct upload *up)
{
	struct catalog_trace t;
	struct store_blob blob;
	char stream_rel[STORE_REL_MAX];
	snprintf(stream_rel, sizeof(stream_rel), "%s", store_writer_rel(up->w));
	uint64_t got = store_writer_size(up->w);
	int rc = store_writer_commit(up->w, &blob, NULL);
	up->w = NULL;
	if (catalog_trace_get(c->cat, up->trace_id, &t, NULL) == 0) {
		if (rc == 0)
			fill_blob(&t, &blob, CATALOG_TRACE_INCOMPLETE);
		else
			t.state = CATALOG_TRACE_INCOMPLETE;
		snprintf(t.error, sizeof(t.error),
			 "upload ended after %llu bytes: the client went away",
			 (unsigned long long)got);
		catalog_trace_update(c->cat, &t, NULL);
	}
	upload_stream_close(c->uploads, up->trace_id);
	if (rc == 0)
		store_remove(c->store, stream_rel, NULL);
	OOB_WARN("trace %lld: stream abandoned after %llu bytes", (long long)up->trace_id,
		 (unsigned long long)got);
}

void api_inputs_upload_done(struct api_ctx *c, struct api_req *q, int complete)
{
	struct upload *up = q->state;
	if (!up)
		return;
	if (up->w && up->stream)
		stream_abandoned(c, up);
	else if (up->stream && up->trace_id && !complete)
		upload_stream_close(c->uploads, up->trace_id);
	store_writer_abort(up->w);
	if (up->slot)
		upload_end(c->uploads);
	free(up);
	q->state = NULL;
}

/* ---- listings ---- */

static json_t *format_json(const struct trace_format_row *f)
{
	json_t *ext = json_array();
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", f->extensions);
	for (char *save, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save))
		json_array_append_new(ext, json_string(w));
	return json_pack("{s:s, s:s, s:o, s:b, s:b}", "name", f->name, "description",
			 f->description, "extensions", ext, "readable", f->ops != NULL, "detected",
			 f->probe != NULL);
}

int api_inputs_formats(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	size_t n;
	const struct trace_format_row *rows = trace_formats(&n);
	json_t *arr = json_array();
	(void)c;
	(void)q;
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, format_json(&rows[i]));
	http_respond_json(r, 200, json_pack("{s:s, s:o}", "default", "auto", "formats", arr));
	return HTTP_BODY_NONE;
}

/* A stream's row is written when it opens and when it ends; in between its
 * size is that of the growing file. */
static void live_size(struct api_ctx *c, struct catalog_trace *t)
{
	char abs[1400];
	struct stat st;
	if (t->state != CATALOG_TRACE_STREAMING || !t->blob[0])
		return;
	store_abspath(c->store, t->blob, abs, sizeof(abs));
	if (stat(abs, &st) == 0)
		t->size = (uint64_t)st.st_size;
}

static int list_args(struct http_req *r, int64_t *after, size_t *limit, struct oob_err *e)
{
	uint64_t a = 0, l = 100;
	if (api_arg_uint("after", http_req_arg(r, "after"), 0, INT64_MAX, &a, e) < 0 ||
	    api_arg_uint("limit", http_req_arg(r, "limit"), 1, 1000, &l, e) < 0)
		return e->code;
	*after = (int64_t)a;
	*limit = (size_t)l;
	return 0;
}

int api_inputs_list_binaries(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	struct catalog_binary *v;
	size_t n, limit;
	int64_t after;
	(void)q;
	if (list_args(r, &after, &limit, &e) < 0 ||
	    catalog_binary_list(c->cat, after, limit, &v, &n, &e) < 0)
		return refuse(r, &e);
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, api_json_binary(&v[i]));
	free(v);
	http_respond_json(r, 200, json_pack("{s:o}", "binaries", arr));
	return HTTP_BODY_NONE;
}

int api_inputs_get_binary(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	struct catalog_binary b;
	if (catalog_binary_get(c->cat, q->id, &b, &e) < 0)
		return refuse(r, &e);
	http_respond_json(r, 200, api_json_binary(&b));
	return HTTP_BODY_NONE;
}

/* ?state=: one of the trace states, or any when absent or empty. */
static int state_arg(struct http_req *r, enum catalog_trace_state *state, struct oob_err *e)
{
	const char *s = http_req_arg(r, "state");
	*state = CATALOG_TRACE_ANY;
	if (s && *s && catalog_trace_state_parse(s, state) < 0)
		return oob_err_set(e, -EINVAL,
				   "query argument state: expected ready, streaming, incomplete "
				   "or invalid");
	return 0;
}

int api_inputs_list_traces(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	struct catalog_trace *v;
	enum catalog_trace_state state;
	size_t n, limit;
	int64_t after;
	(void)q;
	if (list_args(r, &after, &limit, &e) < 0 || state_arg(r, &state, &e) < 0 ||
	    catalog_trace_list(c->cat, after, limit, http_req_arg(r, "name"), state, &v, &n, &e) <
		0)
		return refuse(r, &e);
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++) {
		live_size(c, &v[i]);
		json_array_append_new(arr, api_json_trace(&v[i]));
	}
	free(v);
	http_respond_json(r, 200, json_pack("{s:o}", "traces", arr));
	return HTTP_BODY_NONE;
}

int api_inputs_get_trace(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	struct catalog_trace t;
	if (catalog_trace_get(c->cat, q->id, &t, &e) < 0)
		return refuse(r, &e);
	live_size(c, &t);
	http_respond_json(r, 200, api_json_trace(&t));
	return HTTP_BODY_NONE;
}
