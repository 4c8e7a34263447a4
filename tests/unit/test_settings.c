#include "settings.h"
#include "oobtest.h"
#include "result.h"

#include <stdint.h>

static char tmpdir[256];

static const char *write_tmp(const char *name, const char *text)
{
	static char path[512];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

static void defaults_need_nothing(void)
{
	struct settings c;
	settings_defaults(&c);
	CHECK_STR(c.listen_host, "127.0.0.1");
	CHECK_EQ(c.listen_port, 8080);
	CHECK(strcmp(c.data_dir, "./oobprof-data") == 0);
	CHECK_EQ(c.workers, sysconf(_SC_NPROCESSORS_ONLN));
	CHECK_EQ(c.auth_reads, 0);
	CHECK_EQ(c.token_file[0], '\0');
	char *argv[] = {"oobprofd", NULL};
	CHECK_EQ(settings_parse_args(&c, 1, argv, NULL), 0);
}

static void sizes_and_listen(void)
{
	uint64_t v;
	CHECK_EQ(settings_parse_size("512M", &v), 0);
	CHECK_EQ(v, 512ull << 20);
	CHECK_EQ(settings_parse_size("2GiB", &v), 0);
	CHECK_EQ(v, 2ull << 30);
	CHECK_EQ(settings_parse_size("123", &v), 0);
	CHECK_EQ(v, 123);
	CHECK_EQ(settings_parse_size("-1", &v), -EINVAL);
	CHECK_EQ(settings_parse_size("1X", &v), -EINVAL);
	CHECK_EQ(settings_parse_size("99999999999T", &v), -EINVAL);

	struct settings c;
	struct oob_err e = {0};
	settings_defaults(&c);
	CHECK_EQ(settings_set(&c, "listen", "[::1]:9000", &e), 0);
	CHECK_STR(c.listen_host, "::1");
	CHECK_EQ(c.listen_port, 9000);
	CHECK_EQ(settings_set(&c, "listen", "localhost:0", &e), 0);
	CHECK_STR(c.listen_host, "127.0.0.1");
	CHECK_EQ(c.listen_port, 0);
	CHECK_EQ(settings_set(&c, "listen", "example.com:80", &e), -EINVAL);
	CHECK(strstr(e.msg, "numeric") != NULL);
	CHECK_EQ(settings_set(&c, "listen", "127.0.0.1:70000", &e), -EINVAL);
	CHECK_EQ(settings_set(&c, "listen", "8080", &e), -EINVAL);
	CHECK_EQ(settings_set(&c, "workers", "0", &e), -EINVAL);
	CHECK_EQ(settings_set(&c, "log-level", "loud", &e), -EINVAL);
	CHECK_EQ(settings_set(&c, "colour", "blue", &e), -EINVAL);
	CHECK(strstr(e.msg, "colour") != NULL);
}

static void file_then_flags(void)
{
	const char *cfg = write_tmp("a.conf", "# comment\n"
					      "listen = 0.0.0.0:9100\n"
					      "  data=/srv/oob  \n"
					      "\n"
					      "workers = 3\n"
					      "max-upload = 1G\n"
					      "auth-reads = yes\n");
	struct settings c;
	struct oob_err e = {0};
	settings_defaults(&c);
	/* --config comes last but is applied first: flags win. */
	char *argv[] = {"oobprofd", "--workers", "5", "--log-level=debug",
			"--config", (char *)cfg, NULL};
	CHECK_EQ(settings_parse_args(&c, 6, argv, &e), 0);
	CHECK_STR(c.listen_host, "0.0.0.0");
	CHECK_EQ(c.listen_port, 9100);
	CHECK(strcmp(c.data_dir, "/srv/oob") == 0);
	CHECK_EQ(c.workers, 5);
	CHECK_EQ(c.max_upload, 1ull << 30);
	CHECK_EQ(c.auth_reads, 1);
	CHECK_EQ(c.log_level, OOB_LOG_DEBUG);
}

static void bad_file_names_line(void)
{
	const char *cfg = write_tmp("b.conf", "listen = 127.0.0.1:1\nworkers three\n");
	struct settings c;
	struct oob_err e = {0};
	settings_defaults(&c);
	CHECK_EQ(settings_load_file(&c, cfg, &e), -EINVAL);
	CHECK(strstr(e.msg, "line 2") != NULL);
	cfg = write_tmp("c.conf", "workers = 999999\n");
	CHECK_EQ(settings_load_file(&c, cfg, &e), -EINVAL);
	CHECK(strstr(e.msg, "line 1") != NULL && strstr(e.msg, "workers") != NULL);
	char missing[512];
	snprintf(missing, sizeof(missing), "%s/none.conf", tmpdir);
	CHECK_EQ(settings_load_file(&c, missing, &e), -ENOENT);
}

static void bad_flags(void)
{
	struct settings c;
	struct oob_err e = {0};
	settings_defaults(&c);
	char *a1[] = {"oobprofd", "--listen", NULL};
	CHECK_EQ(settings_parse_args(&c, 2, a1, &e), -EINVAL);
	CHECK(strstr(e.msg, "needs a value") != NULL);
	char *a2[] = {"oobprofd", "stray", NULL};
	CHECK_EQ(settings_parse_args(&c, 2, a2, &e), -EINVAL);
	char *a3[] = {"oobprofd", "--print-routes", "--help", NULL};
	CHECK_EQ(settings_parse_args(&c, 3, a3, &e), 0);
	CHECK_EQ(c.print_routes, 1);
	CHECK_EQ(c.help, 1);
	char *a4[] = {"oobprofd", "--help=yes", NULL};
	CHECK_EQ(settings_parse_args(&c, 2, a4, &e), -EINVAL);
	char *a5[] = {"oobprofd", "--max-upload", "lots", NULL};
	CHECK_EQ(settings_parse_args(&c, 3, a5, &e), -EINVAL);
}

/* The keys of several nodes: a catalog URI from the config file, a node
 * id that stays one word, a lease within bounds. */
static void scale_out_keys(void)
{
	struct settings c;
	struct oob_err e = {0};
	settings_defaults(&c);
	CHECK_EQ(c.catalog[0], '\0'); /* SQLite in the data folder */
	CHECK_EQ(c.node_id[0], '\0');
	CHECK_EQ(c.lease_s, 30);
	const char *f = write_tmp("node.conf", "catalog = postgresql:///oob?host=/run/pg\n"
					       "node-id = rack2-7\nlease = 12\n");
	CHECK_EQ(settings_load_file(&c, f, &e), 0);
	CHECK(strcmp(c.catalog, "postgresql:///oob?host=/run/pg") == 0);
	CHECK_STR(c.node_id, "rack2-7");
	CHECK_EQ(c.lease_s, 12);
	CHECK_EQ(settings_set(&c, "node-id", "two words", &e), -EINVAL);
	CHECK(strstr(e.msg, "node-id") != NULL);
	CHECK_EQ(settings_set(&c, "node-id", "", &e), -EINVAL);
	CHECK_STR(c.node_id, "rack2-7"); /* unchanged by a refused value */
	CHECK_EQ(settings_set(&c, "lease", "2", &e), -EINVAL);
	CHECK_EQ(settings_set(&c, "lease", "86400", &e), 0);
}

/* The stack events a job keeps: the result's bound unless told, and at
 * most what a 32-bit setting holds (4 × 10^9; a 10 G-instruction run of
 * mixed.c needs 5.8 × 10^8). */
static void max_events_key(void)
{
	struct settings c;
	struct oob_err e = {0};
	settings_defaults(&c);
	CHECK_EQ(c.max_events, RESULT_MAX_EVENTS);
	CHECK_EQ(settings_set(&c, "max-events", "4000000000", &e), 0);
	CHECK_EQ(c.max_events, 4000000000u);
	CHECK_EQ(settings_set(&c, "max-events", "999", &e), -EINVAL);
	CHECK(strstr(e.msg, "max-events") != NULL);
	CHECK_EQ(settings_set(&c, "max-events", "4000000001", &e), -EINVAL);
	char *a[] = {"oobprofd", "--max-events", "1000", NULL};
	CHECK_EQ(settings_parse_args(&c, 3, a, &e), 0);
	CHECK_EQ(c.max_events, 1000);
}

int main(void)
{
	OOBTEST_BEGIN("test_settings");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_settings.XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	RUN(defaults_need_nothing);
	RUN(sizes_and_listen);
	RUN(file_then_flags);
	RUN(bad_file_names_line);
	RUN(bad_flags);
	RUN(scale_out_keys);
	RUN(max_events_key);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		return 1;
	return OOBTEST_END();
}
