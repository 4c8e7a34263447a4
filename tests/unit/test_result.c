/* result: the profile document the server stores, checked against the core's
 * own views of the same profile (profile_write_folded, profile_functions),
 * and hostile documents. */
#include "result.h"
#include "server_testprof.h"

#include <stdint.h>

static char tmpdir[256];
static struct profile *mixed, *spike;

static char *result_folded(const struct result *r, enum profile_metric m, int annotate)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	result_write_folded(r, f, m, annotate);
	fclose(f);
	return buf;
}

/* The stored document gives back, byte for byte, the folded stacks and the
 * function table the core computes from the profile itself. */
static void check_round_trip(struct profile *p)
{
	size_t len;
	char *json = result_json_from_profile(p, 0, &len);
	CHECK(json != NULL && len == strlen(json));
	struct oob_err e = {0};
	struct result *r = result_parse(json, len, &e);
	free(json);
	CHECK(r != NULL);
	CHECK_EQ(result_nnodes(r), profile_nnodes(p));
	CHECK_EQ(result_nframes(r), profile_nframes(p));
	CHECK_EQ(result_has_cycles(r), profile_has_cycles(p));
	CHECK_EQ(result_stats(r)->instructions, profile_stats(p)->instructions);
	CHECK_EQ(result_stats(r)->repairs_unknown, profile_stats(p)->repairs_unknown);
	CHECK_STR(result_stats(r)->format, profile_stats(p)->format);
	for (int m = PROFILE_INSNS; m <= PROFILE_CALLS; m++) {
		for (int ann = 0; ann <= 1; ann++) {
			char *want = testprof_folded(p, (enum profile_metric)m, ann);
			char *got = result_folded(r, (enum profile_metric)m, ann);
			int same = strcmp(want, got) == 0;
			free(want);
			free(got);
			CHECK(same);
		}
		struct profile_func *fw, *fg;
		size_t nw = profile_functions(p, (enum profile_metric)m, &fw);
		size_t ng = result_functions(r, (enum profile_metric)m, &fg);
		int same = nw == ng;
		for (size_t i = 0; same && i < nw; i++)
			same = fw[i].frame == fg[i].frame && fw[i].calls == fg[i].calls &&
			       fw[i].self_insns == fg[i].self_insns &&
			       fw[i].total_insns == fg[i].total_insns &&
			       fw[i].self_cycles == fg[i].self_cycles &&
			       fw[i].total_cycles == fg[i].total_cycles;
		free(fw);
		free(fg);
		CHECK(same);
	}
	for (uint32_t i = 0; i < profile_nnodes(p); i++) {
		const struct profile_node *a = profile_node(p, i), *b = result_node(r, i);
		CHECK(a->total_insns == b->total_insns && a->total_cycles == b->total_cycles);
		CHECK(a->first_child == b->first_child && a->next_sibling == b->next_sibling);
	}
	for (uint32_t i = 0; i < profile_nframes(p); i++) {
		const struct profile_frame *a = profile_frame(p, i), *b = result_frame(r, i);
		CHECK_STR(b->name, a->name);
		CHECK(a->addr == b->addr && a->kind == b->kind && a->line == b->line);
		CHECK((a->file == NULL) == (b->file == NULL));
	}
	result_free(r);
}

static void round_trip_mixed(void)
{
	if (!mixed)
		SKIP("tests/gen/progs/mixed.oobt not generated");
	check_round_trip(mixed);
}

static void round_trip_spike(void)
{
	if (!spike)
		SKIP("Spike fixture not found");
	check_round_trip(spike);
}

static void partial_flag_and_file(void)
{
	if (!mixed)
		SKIP("tests/gen/progs/mixed.oobt not generated");
	size_t len;
	char *json = result_json_from_profile(mixed, 1, &len);
	char path[512];
	snprintf(path, sizeof(path), "%s/profile.json", tmpdir);
	FILE *f = fopen(path, "w");
	fwrite(json, 1, len, f);
	fclose(f);
	free(json);
	struct oob_err e = {0};
	struct result *r = result_load(path, &e);
	CHECK(r != NULL);
	CHECK_EQ(result_partial(r), 1);
	result_free(r);
	snprintf(path, sizeof(path), "%s/missing.json", tmpdir);
	CHECK(result_load(path, &e) == NULL);
	CHECK_EQ(e.code, -ENOENT);
}

static void expect_bad(const char *doc, int code, const char *needle)
{
	struct oob_err e = {0};
	struct result *r = result_parse(doc, strlen(doc), &e);
	if (r)
		result_free(r);
	if (r || e.code != code || !strstr(e.msg, needle))
		snprintf(oobtest_why, sizeof(oobtest_why), "document %.60s: got %d \"%s\"", doc,
			 e.code, e.msg);
}

#define HEAD  "{\"format\":\"oobprof-profile\",\"version\":1,\"partial\":false,\"has_cycles\":false,"
#define STATS "\"stats\":{\"format\":\"spike\"},"

static void hostile_documents(void)
{
	oobtest_why[0] = '\0';
	expect_bad("", -EINVAL, "profile");
	expect_bad("{\"format\":\"other\"}", -EINVAL, "not an oobprof profile");
	expect_bad(HEAD STATS "\"frames\":[],\"nodes\":[]}", -EINVAL, "0 nodes");
	expect_bad(HEAD STATS "\"frames\":[[\"f\",null,null,0,0,\"0x10\"]],"
			      "\"nodes\":[[-1,-1,0,0,0],[2,0,1,1,0],[1,0,1,1,0]]}",
		   -EINVAL, "node 1");
	expect_bad(HEAD STATS "\"frames\":[[\"f\",null,null,0,0,\"0x10\"]],"
			      "\"nodes\":[[-1,-1,0,0,0],[0,5,1,1,0]]}",
		   -EINVAL, "frame 5");
	expect_bad(HEAD STATS "\"frames\":[[\"f\",null,null,0,9,\"0x10\"]],"
			      "\"nodes\":[[-1,-1,0,0,0]]}",
		   -EINVAL, "frame 0");
	expect_bad(HEAD STATS "\"frames\":[],\"nodes\":[[-1,-1,0,-5,0]]}", -EINVAL, "node 0");
	expect_bad("{\"format\":\"oobprof-profile\",\"version\":7,\"partial\":false,"
		   "\"has_cycles\":false," STATS "\"frames\":[],\"nodes\":[]}",
		   -ENOTSUP, "version 7");
	CHECK(oobtest_why[0] == '\0');
}

/* Every prefix and many byte flips of a real document: an error or a
 * result, never a crash (ASan/UBSan watch). */
static void damaged_documents_never_crash(void)
{
	if (!mixed)
		SKIP("tests/gen/progs/mixed.oobt not generated");
	size_t len;
	char *json = result_json_from_profile(mixed, 0, &len);
	unsigned ok = 0, refused = 0, seed = 12345;
	for (size_t cut = 0; cut < len; cut += len / 97 + 1) {
		struct oob_err e = {0};
		struct result *r = result_parse(json, cut, &e);
		ok += r != NULL;
		refused += r == NULL && e.code < 0 && e.msg[0];
		result_free(r);
	}
	CHECK_EQ(ok, 0);
	for (int i = 0; i < 300; i++) {
		char *copy = malloc(len);
		memcpy(copy, json, len);
		for (int k = 0; k < 3; k++) {
			seed = seed * 1103515245 + 12345;
			copy[(seed >> 8) % len] = (char)(seed >> 3);
		}
		struct oob_err e = {0};
		struct result *r = result_parse(copy, len, &e);
		CHECK(r != NULL || (e.code < 0 && e.msg[0]));
		result_free(r);
		free(copy);
	}
	free(json);
	CHECK(refused > 90);
}

/* Every result file's path, as the data folder's layout (worker.h) says. */
static void paths_of_result_files(void)
{
	static const struct {
		enum result_file f;
		const char *want;
	} rows[] = {
	    {RESULT_DIR, "results/42"},
	    {RESULT_PROFILE, "results/42/profile.json"},
	    {RESULT_FOLDED, "results/42/folded.txt"},
	    {RESULT_EVENTS, "results/42/events.evl"},
	    {RESULT_GO, "results/42/go.json"},
	};
	char buf[64];
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		result_path(42, rows[i].f, buf, sizeof(buf));
		CHECK_STR(buf, rows[i].want);
	}
	result_path(9000000000ll, RESULT_EVENTS, buf, sizeof(buf));
	CHECK_STR(buf, "results/9000000000/events.evl");
}

int main(void)
{
	OOBTEST_BEGIN("test_result");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_result.XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	mixed = testprof_mixed(NULL);
	spike = testprof_spike(tmpdir);
	RUN(paths_of_result_files);
	RUN(round_trip_mixed);
	RUN(round_trip_spike);
	RUN(partial_flag_and_file);
	RUN(hostile_documents);
	RUN(damaged_documents_never_crash);
	profile_free(mixed);
	profile_free(spike);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		return 1;
	return OOBTEST_END();
}
