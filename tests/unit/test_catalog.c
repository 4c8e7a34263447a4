#include "catalog.h"
#include "oobtest.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>

static int64_t catalog_now_test(void)
{
	return (int64_t)time(NULL);
}

/* Every case runs twice: on SQLite (dbpath a file) and on PostgreSQL
 * (dbpath a URI into a cluster the test starts, tests/tools/pg-cluster.sh). */
static char tmpdir[256], dbpath[600], pgsock[400];

static int on_pg(void)
{
	return pgsock[0] != '\0';
}

/* A fresh, empty catalog location named name: a file, or a database. */
static const char *fresh_db(const char *name)
{
	static char where[600];
	char cmd[1200];
	if (!on_pg()) {
		snprintf(where, sizeof(where), "%s/%s.db", tmpdir, name);
		return where;
	}
	snprintf(cmd, sizeof(cmd),
		 "psql -X -q 'postgresql:///postgres?host=%s&user=oob' -c 'CREATE DATABASE %s'",
		 pgsock, name);
	if (system(cmd) != 0)
		return NULL;
	snprintf(where, sizeof(where), "postgresql:///%s?host=%s&user=oob", name, pgsock);
	return where;
}

/* The database's own command line tool (sqlite3, psql), an independent
 * reader of what we wrote: 1 if it is there. */
static int have_cli(void)
{
	return system(on_pg() ? "command -v psql >/dev/null 2>&1"
			      : "command -v sqlite3 >/dev/null 2>&1") == 0;
}

/* Runs q (one line of SQL, no double quotes) on the catalog at where with
 * that tool; 0 or the tool's status. */
static int cli_on(const char *where, const char *q)
{
	char cmd[2048];
	if (on_pg())
		snprintf(cmd, sizeof(cmd),
			 "psql -X -q -v ON_ERROR_STOP=1 '%s' -c \"%s\" >/dev/null", where, q);
	else
		snprintf(cmd, sizeof(cmd), "sqlite3 '%s' \"%s\" 2>&1", where, q);
	return system(cmd);
}

/* Runs a query with that tool on dbpath. Returns its first output line. */
static const char *sql_cli(const char *q)
{
	static char line[512];
	char cmd[2048];
	if (on_pg())
		snprintf(cmd, sizeof(cmd), "psql -X -tA '%s' -c \"%s\" 2>&1", dbpath, q);
	else
		snprintf(cmd, sizeof(cmd), "sqlite3 '%s' \"%s\" 2>&1", dbpath, q);
	FILE *p = popen(cmd, "r");
	line[0] = '\0';
	if (p) {
		if (!fgets(line, sizeof(line), p))
			line[0] = '\0';
		pclose(p);
	}
	line[strcspn(line, "\n")] = '\0';
	return line;
}

static int64_t add_trace(struct catalog *c, const char *name, enum catalog_trace_state state)
{
	struct catalog_trace t = {0};
	snprintf(t.name, sizeof(t.name), "%s", name);
	snprintf(t.sha256, sizeof(t.sha256), "%064d", 7);
	snprintf(t.blob, sizeof(t.blob), "blobs/sha256/00/x");
	snprintf(t.format, sizeof(t.format), "spike");
	t.state = state;
	t.size = 123;
	return catalog_trace_add(c, &t, NULL) == 0 ? t.id : -1;
}

static void schema_and_pragmas(void)
{
	struct oob_err e = {0};
	struct catalog *c = catalog_open(dbpath, &e);
	CHECK(c != NULL);
	CHECK_EQ(catalog_schema_version(c), CATALOG_SCHEMA_VERSION);
	CHECK_EQ(catalog_is_shared(c), on_pg());
	char where[160];
	snprintf(where, sizeof(where), "%s", catalog_where(c));
	catalog_close(c);
	if (!have_cli())
		SKIP("the database's command line tool is not installed");
	char want[16];
	snprintf(want, sizeof(want), "%d", CATALOG_SCHEMA_VERSION);
	if (on_pg()) {
		CHECK_STR(sql_cli("SELECT version FROM oob_schema"), want);
		CHECK_STR(sql_cli("SELECT COUNT(*) FROM oob_schema"), "1");
		CHECK(strncmp(where, "postgresql:oob@", 15) == 0);
	} else {
		CHECK_STR(sql_cli("PRAGMA user_version"), want);
		CHECK_STR(sql_cli("PRAGMA journal_mode"), "wal");
	}
	/* Reopening an up-to-date catalog migrates nothing and keeps rows. */
	c = catalog_open(dbpath, &e);
	CHECK(c != NULL);
	catalog_close(c);
}

static void newer_schema_is_refused(void)
{
	const char *path = fresh_db("future");
	CHECK(path != NULL);
	if (!have_cli())
		SKIP("the database's command line tool is not installed");
	CHECK_EQ(cli_on(path, on_pg() ? "CREATE TABLE oob_schema (version INTEGER NOT NULL);"
					" INSERT INTO oob_schema VALUES (99)"
				      : "PRAGMA user_version = 99"),
		 0);
	struct oob_err e = {0};
	CHECK(catalog_open(path, &e) == NULL);
	CHECK_EQ(e.code, -ENOTSUP);
	CHECK(strstr(e.msg, "99") != NULL);
}

static void binaries_round_trip(void)
{
	struct oob_err e = {0};
	struct catalog *c = catalog_open(dbpath, &e);
	CHECK(c != NULL);
	struct catalog_binary b = {0}, got;
	snprintf(b.name, sizeof(b.name), "vmlinux");
	snprintf(b.sha256, sizeof(b.sha256), "%064d", 42);
	snprintf(b.blob, sizeof(b.blob), "blobs/sha256/00/42");
	snprintf(b.build_id, sizeof(b.build_id), "abcdef");
	b.machine = 243;
	b.nfuncs = 31337;
	b.has_dwarf = 1;
	b.size = 38000000;
	CHECK_EQ(catalog_binary_add(c, &b, &e), 0);
	CHECK(b.id > 0);
	CHECK_EQ(catalog_binary_get(c, b.id, &got, &e), 0);
	CHECK_STR(got.name, "vmlinux");
	CHECK_EQ(got.nfuncs, 31337);
	CHECK_EQ(got.machine, 243);
	CHECK_EQ(got.size, 38000000);
	CHECK_EQ(catalog_binary_find(c, b.sha256, &got, &e), 0);
	CHECK_EQ(got.id, b.id);
	CHECK_EQ(catalog_binary_find(c, "nope", &got, &e), -ENOENT);
	CHECK_EQ(catalog_binary_get(c, 999, &got, &e), -ENOENT);
	CHECK(strstr(e.msg, "999") != NULL);
	/* Quotes in names are data, not SQL. */
	struct catalog_binary evil = b;
	snprintf(evil.name, sizeof(evil.name), "x'); DROP TABLE binaries; --");
	CHECK_EQ(catalog_binary_add(c, &evil, &e), 0);
	struct catalog_binary *list;
	size_t n;
	CHECK_EQ(catalog_binary_list(c, 0, 100, &list, &n, &e), 0);
	CHECK_EQ(n, 2);
	CHECK_STR(list[1].name, "x'); DROP TABLE binaries; --");
	free(list);
	CHECK_EQ(catalog_binary_list(c, b.id, 100, &list, &n, &e), 0);
	CHECK_EQ(n, 1);
	free(list);
	catalog_close(c);
}

/* The names are the API's and the database's: each parses back to its
 * state, and nothing else parses. */
static void state_names(void)
{
	static const char *const jobs[] = {"queued", "running", "done", "failed", "cancelled"};
	static const char *const traces[] = {"ready", "streaming", "incomplete", "invalid"};
	enum catalog_job_state js;
	enum catalog_trace_state ts;
	for (int i = 0; i < 5; i++) {
		CHECK_STR(catalog_job_state_name((enum catalog_job_state)i), jobs[i]);
		CHECK_EQ(catalog_job_state_parse(jobs[i], &js), 0);
		CHECK_EQ(js, i);
	}
	for (int i = 0; i < 4; i++) {
		CHECK_STR(catalog_trace_state_name((enum catalog_trace_state)i), traces[i]);
		CHECK_EQ(catalog_trace_state_parse(traces[i], &ts), 0);
		CHECK_EQ(ts, i);
	}
	CHECK(catalog_job_state_name((enum catalog_job_state)5) == NULL);
	CHECK(catalog_trace_state_name(CATALOG_TRACE_ANY) == NULL);
	js = CATALOG_JOB_DONE;
	CHECK_EQ(catalog_job_state_parse("Done", &js), -EINVAL);
	CHECK_EQ(catalog_job_state_parse(NULL, &js), -EINVAL);
	CHECK_EQ(js, CATALOG_JOB_DONE);
	CHECK_EQ(catalog_trace_state_parse("", &ts), -EINVAL);
}

static void traces_and_streams(void)
{
	struct oob_err e = {0};
	struct catalog *c = catalog_open(dbpath, &e);
	CHECK(c != NULL);
	int64_t a = add_trace(c, "boot", CATALOG_TRACE_READY);
	int64_t s = add_trace(c, "live", CATALOG_TRACE_STREAMING);
	CHECK(a > 0 && s > a);
	struct catalog_trace *list;
	size_t n;
	CHECK_EQ(catalog_trace_list(c, 0, 10, "live", CATALOG_TRACE_ANY, &list, &n, &e), 0);
	CHECK_EQ(n, 1);
	CHECK_EQ(list[0].id, s);
	free(list);
	CHECK_EQ(catalog_trace_list(c, 0, 10, NULL, CATALOG_TRACE_READY, &list, &n, &e), 0);
	CHECK_EQ(n, 1);
	free(list);
	struct catalog_trace t;
	CHECK_EQ(catalog_trace_get(c, s, &t, &e), 0);
	t.size = 4096;
	snprintf(t.format, sizeof(t.format), "oobt");
	CHECK_EQ(catalog_trace_update(c, &t, &e), 0);
	/* The server died while it streamed: the row says so at restart. */
	CHECK_EQ(catalog_trace_close_streams(c, &e), 1);
	CHECK_EQ(catalog_trace_get(c, s, &t, &e), 0);
	CHECK_EQ(t.state, CATALOG_TRACE_INCOMPLETE);
	CHECK_EQ(t.size, 4096);
	CHECK_STR(t.format, "oobt");
	CHECK(strstr(t.error, "interrupted") != NULL);
	if (have_cli()) {
		char q[80];
		snprintf(q, sizeof(q), "SELECT state FROM traces WHERE id = %lld", (long long)s);
		CHECK_STR(sql_cli(q), "incomplete");
	}
	CHECK_EQ(catalog_trace_list(c, 0, 10, NULL, (enum catalog_trace_state)99, &list, &n, &e),
		 -EINVAL);
	struct catalog_trace bad = t;
	bad.state = (enum catalog_trace_state)99;
	CHECK(catalog_trace_update(c, &bad, &e) < 0); /* no name: NOT NULL */
	bad.id = 12345;
	bad.state = CATALOG_TRACE_READY;
	CHECK_EQ(catalog_trace_update(c, &bad, &e), -ENOENT);
	catalog_close(c);
}

static void jobs_lifecycle_and_recovery(void)
{
	struct oob_err e = {0};
	struct catalog *c = catalog_open(dbpath, &e);
	CHECK(c != NULL);
	int64_t tr = add_trace(c, "jobtrace", CATALOG_TRACE_READY);
	struct catalog_binary b = {0};
	snprintf(b.name, sizeof(b.name), "prog");
	CHECK_EQ(catalog_binary_add(c, &b, &e), 0);

	/* Foreign keys: an unknown trace or binary is refused. */
	struct catalog_job j = {0};
	j.trace_id = 9999;
	snprintf(j.spec, sizeof(j.spec), "{}");
	CHECK_EQ(catalog_job_add(c, &j, NULL, 0, &e), -ENOENT);
	j.trace_id = tr;
	struct catalog_job_binary bins[2] = {{b.id, UINT64_MAX}, {b.id + 100, 0}};
	CHECK_EQ(catalog_job_add(c, &j, bins, 2, &e), -ENOENT);
	CHECK_EQ(catalog_job_count(c, CATALOG_JOB_QUEUED), 0); /* rolled back as a whole */

	bins[1].id = b.id;
	bins[1].base = 0xffffffff80000000ull;
	CHECK_EQ(catalog_job_add(c, &j, bins, 2, &e), 0);
	struct catalog_job_binary *jb;
	size_t n;
	CHECK_EQ(catalog_job_binaries(c, j.id, &jb, &n, &e), 0);
	CHECK_EQ(n, 2);
	CHECK(jb[0].base == UINT64_MAX && jb[1].base == 0xffffffff80000000ull);
	free(jb);
	struct catalog_job k = j;
	CHECK_EQ(catalog_job_add(c, &k, NULL, 0, &e), 0);

	CHECK_EQ(catalog_job_transition(c, j.id, CATALOG_JOB_QUEUED, CATALOG_JOB_RUNNING, &e), 0);
	CHECK_EQ(catalog_job_transition(c, j.id, CATALOG_JOB_QUEUED, CATALOG_JOB_RUNNING, &e),
		 -EBUSY);
	CHECK_EQ(catalog_job_transition(c, 777, CATALOG_JOB_QUEUED, CATALOG_JOB_RUNNING, &e),
		 -ENOENT);
	CHECK_EQ(catalog_job_progress(c, j.id, 10, 100, 5000, &e), 0);
	CHECK_EQ(catalog_job_delete(c, j.id, &e), -EBUSY);

	/* Crash: j was running, k queued. Recovery queues both, oldest first. */
	catalog_close(c);
	c = catalog_open(dbpath, &e);
	CHECK(c != NULL);
	int64_t *ids;
	CHECK_EQ(catalog_job_recover(c, &ids, &n, &e), 0);
	CHECK_EQ(n, 2);
	CHECK(ids[0] == j.id && ids[1] == k.id);
	free(ids);

	CHECK_EQ(catalog_job_transition(c, j.id, CATALOG_JOB_QUEUED, CATALOG_JOB_RUNNING, &e), 0);
	struct catalog_result r = {.job_id = j.id, .partial = 0};
	snprintf(r.profile, sizeof(r.profile), "results/%lld/profile.json", (long long)j.id);
	snprintf(r.stats, sizeof(r.stats), "{\"instructions\": 5000}");
	snprintf(r.events, sizeof(r.events), "results/%lld/events.evl", (long long)j.id);
	r.events_bytes = 5000000000ull; /* over 32 bits */
	CHECK_EQ(catalog_job_finish(c, j.id, CATALOG_JOB_DONE, 0, NULL, &r, &e), 0);
	struct catalog_job got;
	CHECK_EQ(catalog_job_get(c, j.id, &got, &e), 0);
	CHECK_EQ(got.state, CATALOG_JOB_DONE);
	CHECK_EQ(got.runs, 2);
	CHECK_EQ(got.has_result, 1);
	CHECK_EQ(got.insns, 5000);
	CHECK(got.finished >= got.started && got.started > 0);
	struct catalog_result rr;
	CHECK_EQ(catalog_result_get(c, j.id, &rr, &e), 0);
	CHECK(strcmp(rr.stats, "{\"instructions\": 5000}") == 0);
	CHECK_STR(rr.events, r.events);
	CHECK(rr.events_bytes == 5000000000ull);
	CHECK_EQ(catalog_result_get(c, k.id, &rr, &e), -ENOENT);
	CHECK_EQ(catalog_job_finish(c, j.id, CATALOG_JOB_FAILED, -EIO, "x", NULL, &e), -EBUSY);

	CHECK_EQ(catalog_job_transition(c, k.id, CATALOG_JOB_QUEUED, CATALOG_JOB_CANCELLED, &e), 0);
	CHECK_EQ(catalog_job_delete(c, j.id, &e), 0);
	CHECK_EQ(catalog_job_get(c, j.id, &got, &e), -ENOENT);
	CHECK_EQ(catalog_result_get(c, j.id, &rr, &e), -ENOENT); /* cascaded */
	CHECK_EQ(catalog_job_delete(c, j.id, &e), -ENOENT);
	struct catalog_job *jl;
	CHECK_EQ(catalog_job_list(c, 0, 10, &jl, &n, &e), 0);
	CHECK_EQ(n, 1);
	CHECK_EQ(jl[0].state, CATALOG_JOB_CANCELLED);
	free(jl);
	catalog_close(c);
	if (have_cli()) {
		char q[200];
		snprintf(q, sizeof(q), "SELECT COUNT(*) FROM job_binaries WHERE job_id = %lld",
			 (long long)j.id);
		CHECK_STR(sql_cli(q), "0");
	}
}

/* A job whose process dies runs again once; the second death fails it, be
 * it its worker (catalog_job_crashed) or the server (catalog_job_recover). */
static void crashes_end_in_failure(void)
{
	struct oob_err e = {0};
	struct catalog *c = catalog_open(dbpath, &e);
	CHECK(c != NULL);
	struct catalog_job j = {.trace_id = add_trace(c, "crashy", CATALOG_TRACE_READY)}, got;
	snprintf(j.spec, sizeof(j.spec), "{}");
	CHECK_EQ(catalog_job_add(c, &j, NULL, 0, &e), 0);
	/* Its process died while starting, before it marked the job running. */
	CHECK_EQ(catalog_job_crashed(c, j.id, "signal 11, Segmentation fault", &e), 1);
	CHECK_EQ(catalog_job_get(c, j.id, &got, &e), 0);
	CHECK(got.state == CATALOG_JOB_QUEUED && got.crashes == 1);
	CHECK_EQ(catalog_job_transition(c, j.id, CATALOG_JOB_QUEUED, CATALOG_JOB_RUNNING, &e), 0);
	int64_t *ids;
	size_t n;
	CHECK_EQ(catalog_job_recover(c, &ids, &n, &e), 0); /* the server died */
	for (size_t i = 0; i < n; i++)
		CHECK(ids[i] != j.id);
	free(ids);
	CHECK_EQ(catalog_job_get(c, j.id, &got, &e), 0);
	CHECK_EQ(got.state, CATALOG_JOB_FAILED);
	CHECK_EQ(got.crashes, CATALOG_MAX_CRASHES);
	CHECK(strstr(got.error, "crashed its process 2 times (last: the server stopped") != NULL);
	CHECK(got.finished > 0);
	CHECK_EQ(catalog_job_crashed(c, j.id, "signal 9", &e), 0); /* ended: not counted */
	CHECK_EQ(catalog_job_get(c, j.id, &got, &e), 0);
	CHECK(got.state == CATALOG_JOB_FAILED && got.crashes == CATALOG_MAX_CRASHES);
	catalog_close(c);
}

/* A result of schema 2 (before jobs kept their stack events) reads back
 * with no event log, which the API answers with "run the job again". */
static void results_of_schema_2_have_no_events(void)
{
	char path[600], q[800];
	snprintf(path, sizeof(path), "%s", fresh_db("v2"));
	struct oob_err e = {0};
	struct catalog *c = catalog_open(path, &e);
	CHECK(c != NULL);
	struct catalog_job j = {.trace_id = add_trace(c, "old", CATALOG_TRACE_READY)};
	snprintf(j.spec, sizeof(j.spec), "{}");
	CHECK_EQ(catalog_job_add(c, &j, NULL, 0, &e), 0);
	catalog_close(c);
	if (!have_cli())
		SKIP("the database's command line tool is not installed");
	snprintf(q, sizeof(q),
		 "ALTER TABLE results DROP COLUMN events;"
		 " ALTER TABLE results DROP COLUMN events_bytes;"
		 " ALTER TABLE jobs DROP COLUMN lease_node;"
		 " ALTER TABLE jobs DROP COLUMN lease_expires;"
		 " ALTER TABLE jobs DROP COLUMN cancel;"
		 " ALTER TABLE traces DROP COLUMN node;"
		 " UPDATE jobs SET state = 'done' WHERE id = %lld;"
		 " INSERT INTO results VALUES (%lld, 'p', 'f', 0, '{}', 1); %s",
		 (long long)j.id, (long long)j.id,
		 on_pg() ? "UPDATE oob_schema SET version = 2" : "PRAGMA user_version = 2");
	CHECK_EQ(cli_on(path, q), 0);
	c = catalog_open(path, &e);
	CHECK(c != NULL);
	CHECK_EQ(catalog_schema_version(c), CATALOG_SCHEMA_VERSION);
	struct catalog_result r;
	CHECK_EQ(catalog_result_get(c, j.id, &r, &e), 0);
	CHECK_STR(r.profile, "p");
	CHECK_STR(r.events, "");
	CHECK(r.events_bytes == 0);
	catalog_close(c);
}

/* Traces a job names only in its spec (further "traces", "go_trace",
 * "pycode") are in use: each backend reads the spec with its own JSON
 * functions. */
static void spec_users_keep_traces(void)
{
	struct oob_err e = {0};
	struct catalog *c = catalog_open(dbpath, &e);
	CHECK(c != NULL);
	int64_t a = add_trace(c, "a", CATALOG_TRACE_READY),
		b = add_trace(c, "b", CATALOG_TRACE_READY);
	int64_t g = add_trace(c, "go", CATALOG_TRACE_READY),
		free_ = add_trace(c, "f", CATALOG_TRACE_READY),
		py = add_trace(c, "py", CATALOG_TRACE_READY);
	struct catalog_job j = {.trace_id = a};
	snprintf(j.spec, sizeof(j.spec),
		 "{\"traces\": [%lld, %lld], \"go_trace\": %lld, \"pycode\": %lld}", (long long)a,
		 (long long)b, (long long)g, (long long)py);
	CHECK_EQ(catalog_job_add(c, &j, NULL, 0, &e), 0);
	struct catalog_deleted d;
	CHECK_EQ(catalog_trace_delete(c, b, 0, &d, &e), -EBUSY);
	CHECK(strstr(e.msg, "(queued)") != NULL);
	CHECK_EQ(catalog_trace_delete(c, g, 0, &d, &e), -EBUSY);
	CHECK_EQ(catalog_trace_delete(c, py, 0, &d, &e), -EBUSY);
	CHECK_EQ(catalog_trace_delete(c, free_, 0, &d, &e), 0);
	CHECK_EQ(d.blob_unused, 0); /* the other traces name the same blob */
	catalog_deleted_clear(&d);
	CHECK_EQ(catalog_job_transition(c, j.id, CATALOG_JOB_QUEUED, CATALOG_JOB_CANCELLED, &e), 0);
	CHECK_EQ(catalog_trace_delete(c, b, 0, &d, &e), -EBUSY); /* finished job: ask */
	CHECK_EQ(catalog_trace_delete(c, b, 1, &d, &e), 0);
	CHECK(d.njobs == 1 && d.jobs[0] == j.id);
	catalog_deleted_clear(&d);
	catalog_close(c);
}

/* Two nodes on one catalog: each claims a different job; a node that dies
 * (its lease lapses) loses its running job to the reaper, another node
 * runs it, and the dead node's late end is refused (written once). */
static void leases_move_jobs_between_nodes(void)
{
	struct oob_err e = {0};
	struct catalog *a = catalog_open(dbpath, &e), *b = catalog_open(dbpath, &e);
	CHECK(a != NULL && b != NULL);
	CHECK_EQ(catalog_set_node(a, "node-a", &e), 0);
	CHECK_EQ(catalog_set_node(b, "node-b", &e), 0);
	int64_t tr = add_trace(a, "leased", CATALOG_TRACE_READY), ids[2], got_a, got_b;
	for (int i = 0; i < 2; i++) {
		struct catalog_job j = {.trace_id = tr};
		snprintf(j.spec, sizeof(j.spec), "{}");
		CHECK_EQ(catalog_job_add(a, &j, NULL, 0, &e), 0);
		ids[i] = j.id;
	}
	/* Jobs left queued by earlier cases are first: claim until ours. */
	do
		CHECK_EQ(catalog_job_claim(a, 60, &got_a, &e), 1);
	while (got_a != ids[0]);
	CHECK_EQ(catalog_job_claim(b, 60, &got_b, &e), 1);
	CHECK_EQ(got_b, ids[1]);
	CHECK_EQ(catalog_job_claim(b, 60, &got_b, &e), 0); /* none left unheld */
	char node[64];
	int64_t exp;
	CHECK_EQ(catalog_job_lease(a, ids[0], node, sizeof(node), &exp, &e), 0);
	CHECK_STR(node, "node-a");
	CHECK(exp >= catalog_now_test() + 59);
	CHECK_EQ(catalog_job_transition(a, ids[0], CATALOG_JOB_QUEUED, CATALOG_JOB_RUNNING, &e), 0);
	CHECK(catalog_job_renew(a, 60, &e) >= 1);
	CHECK_EQ(catalog_job_reap(b, &e), 0); /* a's lease is alive */
	/* node-a dies: its lease lapses (set in the past by the database's tool). */
	if (!have_cli())
		SKIP("the database's command line tool is not installed");
	char q[160];
	snprintf(q, sizeof(q), "UPDATE jobs SET lease_expires = 1 WHERE id = %lld",
		 (long long)ids[0]);
	CHECK_EQ(cli_on(dbpath, q), 0);
	CHECK_EQ(catalog_job_reap(b, &e), 1);
	struct catalog_job j;
	CHECK_EQ(catalog_job_get(b, ids[0], &j, &e), 0);
	CHECK(j.state == CATALOG_JOB_QUEUED && j.crashes == 1);
	CHECK_EQ(catalog_job_claim(b, 60, &got_b, &e), 1);
	CHECK_EQ(got_b, ids[0]);
	CHECK_EQ(catalog_job_transition(b, ids[0], CATALOG_JOB_QUEUED, CATALOG_JOB_RUNNING, &e), 0);
	struct catalog_result r = {.job_id = ids[0]};
	snprintf(r.profile, sizeof(r.profile), "by-b");
	CHECK_EQ(catalog_job_finish(b, ids[0], CATALOG_JOB_DONE, 0, NULL, &r, &e), 0);
	/* The first run (node-a's handle) ends late: refused, b's result kept. */
	snprintf(r.profile, sizeof(r.profile), "by-a");
	CHECK_EQ(catalog_job_finish(a, ids[0], CATALOG_JOB_DONE, 0, NULL, &r, &e), -EBUSY);
	struct catalog_result rr;
	CHECK_EQ(catalog_result_get(a, ids[0], &rr, &e), 0);
	CHECK_STR(rr.profile, "by-b");
	CHECK_EQ(catalog_job_get(a, ids[0], &j, &e), 0);
	CHECK(j.runs == 2 && j.state == CATALOG_JOB_DONE);
	/* A cancel asked at node-a for a job node-b holds: node-b sees it. */
	int64_t *fl;
	size_t nfl;
	CHECK_EQ(catalog_job_request_cancel(a, ids[0], &e), 0); /* done: nothing to cancel */
	CHECK_EQ(catalog_job_request_cancel(a, ids[1], &e), 1);
	CHECK_EQ(catalog_job_cancels(a, &fl, &nfl, &e), 0);
	CHECK_EQ(nfl, 0);
	free(fl);
	CHECK_EQ(catalog_job_cancels(b, &fl, &nfl, &e), 0);
	CHECK(nfl == 1 && fl[0] == ids[1]);
	free(fl);
	/* A clean stop gives back what it claimed and did not start. */
	CHECK_EQ(catalog_job_release(b, &e), 1);
	CHECK_EQ(catalog_job_lease(a, ids[1], node, sizeof(node), &exp, &e), 0);
	CHECK(node[0] == '\0' && exp == 0);
	catalog_close(a);
	catalog_close(b);
}

struct claimer {
	int64_t got[400];
	int n, rc;
	char node[16];
};

static void *claim_all(void *arg)
{
	struct claimer *cl = arg;
	struct catalog *c = catalog_open(dbpath, NULL);
	if (!c || catalog_set_node(c, cl->node, NULL) < 0) {
		cl->rc = -1;
		catalog_close(c);
		return NULL;
	}
	int64_t id;
	while (cl->n < 400 && (cl->rc = catalog_job_claim(c, 60, &id, NULL)) == 1)
		cl->got[cl->n++] = id;
	catalog_close(c);
	return NULL;
}

/* Four nodes claim 200 jobs at once: every job is claimed exactly once. */
static void concurrent_claims_take_each_job_once(void)
{
	struct oob_err e = {0};
	struct catalog *c = catalog_open(dbpath, &e);
	CHECK(c != NULL);
	int64_t tr = add_trace(c, "many", CATALOG_TRACE_READY), first = 0, last = 0;
	int64_t spare;
	while (catalog_job_claim(c, 600, &spare, &e) == 1) /* earlier cases' jobs */
		;
	for (int i = 0; i < 200; i++) {
		struct catalog_job j = {.trace_id = tr};
		snprintf(j.spec, sizeof(j.spec), "{}");
		CHECK_EQ(catalog_job_add(c, &j, NULL, 0, &e), 0);
		first = first ? first : j.id;
		last = j.id;
	}
	static struct claimer cl[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		memset(&cl[i], 0, sizeof(cl[i]));
		snprintf(cl[i].node, sizeof(cl[i].node), "n%d", i);
		CHECK_EQ(pthread_create(&th[i], NULL, claim_all, &cl[i]), 0);
	}
	static unsigned char seen[1 << 16];
	memset(seen, 0, sizeof(seen));
	int total = 0, busy = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(cl[i].rc, 0);
		busy += cl[i].n > 0;
		for (int k = 0; k < cl[i].n; k++) {
			int64_t id = cl[i].got[k];
			CHECK(id >= first && id <= last && id < (int64_t)sizeof(seen));
			CHECK_EQ(seen[id], 0);
			seen[id] = 1;
			total++;
		}
	}
	CHECK_EQ(total, 200);
	printf("# %d of 4 claimers got jobs\n", busy);
	catalog_close(c);
}

/* PostgreSQL only: the config file's short form (libpq key=value pairs
 * after "postgres:"), and an unreachable server: a clear error that names
 * no password. */
static void connection_strings(void)
{
	char where[600];
	struct oob_err e = {0};
	snprintf(where, sizeof(where), "postgres:host=%s user=oob dbname=cat", pgsock);
	struct catalog *c = catalog_open(where, &e);
	CHECK(c != NULL);
	CHECK_EQ(catalog_schema_version(c), CATALOG_SCHEMA_VERSION);
	catalog_close(c);
	CHECK(catalog_open("postgresql://oob:s3cret@127.0.0.1:1/x?connect_timeout=2", &e) == NULL);
	CHECK_EQ(e.code, -EIO);
	CHECK(strstr(e.msg, "cannot connect to PostgreSQL") != NULL);
	CHECK(strstr(e.msg, "s3cret") == NULL);
}

static void run_all(void)
{
	RUN(schema_and_pragmas);
	RUN(newer_schema_is_refused);
	RUN(binaries_round_trip);
	RUN(state_names);
	RUN(traces_and_streams);
	RUN(jobs_lifecycle_and_recovery);
	RUN(crashes_end_in_failure);
	RUN(results_of_schema_2_have_no_events);
	RUN(spec_users_keep_traces);
	RUN(leases_move_jobs_between_nodes);
	RUN(concurrent_claims_take_each_job_once);
}

/* Starts the test's PostgreSQL cluster in tmpdir/pg; 0, or why not. */
static const char *start_pg(void)
{
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "sh '%s' start '%s/pg' 2>&1",
		 oobtest_src("tests/tools/pg-cluster.sh"), tmpdir);
	FILE *p = popen(cmd, "r");
	static char out[400];
	out[0] = '\0';
	if (!p || !fgets(out, sizeof(out), p))
		out[0] = '\0';
	int st = p ? pclose(p) : -1;
	out[strcspn(out, "\n")] = '\0';
	if (st != 0)
		return out[0] ? out : "pg-cluster.sh failed";
	snprintf(pgsock, sizeof(pgsock), "%s", out);
	return NULL;
}

int main(void)
{
	OOBTEST_BEGIN("test_catalog");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_catalog.XXXXXX");
	/* 0711: the cluster's owner (not root) reaches its folder inside. */
	if (!mkdtemp(tmpdir) || chmod(tmpdir, 0711) != 0)
		return 1;
	snprintf(dbpath, sizeof(dbpath), "%s/catalog.db", tmpdir);
	run_all();
	const char *why = start_pg();
	if (why) {
		printf("SKIP: test_catalog: postgresql: %s\n", why);
	} else {
		OOBTEST_BEGIN("test_catalog[postgresql]");
		snprintf(dbpath, sizeof(dbpath), "%s", fresh_db("cat"));
		run_all();
		RUN(connection_strings);
	}
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "sh '%s' stop '%s/pg'; rm -rf '%s'",
		 oobtest_src("tests/tools/pg-cluster.sh"), tmpdir, tmpdir);
	if (system(cmd) != 0)
		return 1;
	return OOBTEST_END();
}
