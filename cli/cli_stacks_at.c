/*
 * cli_stacks_at: `oobprof stacks-at --at N,...|--at-file F TRACE...`, the
 * exact stack at each record index of one hart (recon/stacks_at.h), as JSON
 * Lines: what a sampler's "# instret N" stacks are checked against.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_go.h"
#include "cli_impl.h"
#include "recon/stacks_at.h"
#include "util/oob_mem.h"

struct at_list {
	uint64_t *v;
	size_t n, cap;
};

/* One index, decimal or 0x hex, the whole of s[0..len). */
static int at_one(struct at_list *l, const char *s, size_t len, const char *where)
{
	char buf[32], *end;
	if (len == 0 || len >= sizeof(buf))
		goto bad;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	unsigned long long v = strtoull(buf, &end, 0);
	if (errno || *end || buf[0] == '-')
		goto bad;
	oob_xgrow((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = v;
	return 0;
bad:
	fprintf(stderr, "oobprof stacks-at: %s: '%.*s' is not a record index\n", where,
		(int)(len > 40 ? 40 : len), s);
	return -EINVAL;
}

static int at_csv(struct at_list *l, const char *s)
{
	for (const char *p = s;; p++) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		if (at_one(l, p, len, "--at") < 0)
			return -EINVAL;
		if (!c)
			return 0;
		p = c;
	}
}

/* One index a line; blank lines and '#' comments are skipped. */
static int at_file(struct at_list *l, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "oobprof stacks-at: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	char line[256], where[64];
	int rc = 0;
	for (unsigned no = 1; rc == 0 && fgets(line, sizeof(line), f); no++) {
		size_t len = strcspn(line, "\r\n");
		while (len && (line[len - 1] == ' ' || line[len - 1] == '\t'))
			len--;
		if (len == 0 || line[0] == '#')
			continue;
		snprintf(where, sizeof(where), "--at-file line %u", no);
		rc = at_one(l, line, len, where);
	}
	fclose(f);
	return rc;
}

static json_t *stack_json(const struct stacks_at_stack *t, const struct profile *p, unsigned hart)
{
	char pc[24];
	snprintf(pc, sizeof(pc), "0x%" PRIx64, t->pc);
	json_t *o = json_pack("{sI sI sb}", "at", (json_int_t)t->at, "hart", (json_int_t)hart,
			      "found", t->found);
	if (!t->found)
		return o;
	json_object_set_new(o, "pc", json_string(pc));
	if (t->priv >= 0)
		json_object_set_new(o, "priv", json_integer(t->priv));
	json_t *fr = json_array();
	for (uint32_t d = 0; d < t->depth; d++) {
		const struct profile_frame *f = profile_frame(p, t->frames[d]);
		json_t *one =
		    json_pack("{ss ss}", "name", f->name, "kind", profile_frame_kind_name(f->kind));
		if (f->addr) {
			snprintf(pc, sizeof(pc), "0x%" PRIx64, f->addr);
			json_object_set_new(one, "addr", json_string(pc));
		}
		json_array_append_new(fr, one);
		if (d + 1 == t->depth && f->kind == PROFILE_FRAME_PROCESS)
			json_object_set_new(o, "task", json_string(f->name));
	}
	json_object_set_new(o, "frames", fr);
	return o;
}

int cli_cmd_stacks_at(struct cli *c, int argc, char **argv)
{
	struct at_list l = {0};
	if (!c->at_csv && !c->at_path) {
		fprintf(stderr, "oobprof stacks-at: give the record indices (--at or --at-file)\n");
		return 2;
	}
	if ((c->at_csv && at_csv(&l, c->at_csv) < 0) ||
	    (c->at_path && at_file(&l, c->at_path) < 0)) {
		free(l.v);
		return 2;
	}
	if (!l.n) {
		fprintf(stderr, "oobprof stacks-at: %s lists no record index\n", c->at_path);
		return 2;
	}
	struct stacks_at *s = NULL;
	struct profile *p = NULL;
	struct oob_err err = {0};
	unsigned hart = c->ro.trace.hart;
	int rc = stacks_at_run(&c->ro, (const char *const *)argv + optind, (size_t)(argc - optind),
			       hart, l.v, l.n, &s, &p, &err);
	free(l.v);
	if (rc < 0) {
		fprintf(stderr, "oobprof stacks-at: %s\n", err.msg);
		return 1;
	}
	size_t missing = 0;
	rc = cli_out_begin(c->out) < 0 ? -EIO : 0;
	for (size_t i = 0; rc == 0 && i < stacks_at_count(s); i++) {
		const struct stacks_at_stack *t = stacks_at_get(s, i);
		missing += !t->found;
		json_t *o = stack_json(t, p, hart);
		if (json_dumpf(o, stdout, JSON_COMPACT) < 0 || putchar('\n') == EOF)
			rc = -EIO;
		json_decref(o);
	}
	if (missing)
		fprintf(stderr,
			"oobprof stacks-at: %zu of %zu indices are past hart %u's last record "
			"(%" PRIu64 " records): \"found\": false\n",
			missing, stacks_at_count(s), hart, stacks_at_records(s));
	stacks_at_free(s);
	profile_free(p);
	return rc < 0 || fflush(stdout) ? 1 : 0;
}
