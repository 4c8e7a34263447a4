#include "store.h"
#include "oobtest.h"

#include <dirent.h>
#include <sys/stat.h>

static char tmpdir[256];

/* SHA-256 by a different implementation: coreutils' sha256sum. */
static int sha256sum(const char *path, char out[65])
{
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "sha256sum '%s'", path);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	int ok = fscanf(p, "%64s", out) == 1;
	pclose(p);
	return ok ? 0 : -1;
}

static size_t count_files(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	struct dirent *e;
	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Feeds a file to a writer in uneven chunks, as HTTP bodies arrive. */
static int feed(struct store_writer *w, const char *path)
{
	FILE *f = fopen(path, "rb");
	static unsigned char buf[70000];
	size_t chunk = 1, k;
	if (!f)
		return -1;
	while ((k = fread(buf, 1, chunk, f)) > 0) {
		if (store_writer_write(w, buf, k, NULL) < 0)
			break;
		chunk = chunk * 7 % sizeof(buf) + 1;
	}
	fclose(f);
	return 0;
}

static void upload_is_hashed_and_deduplicated(void)
{
	const char *prog = oobtest_shared("fixtures/spike/prog");
	if (!prog)
		SKIP("fixtures/spike/prog not found");
	char want[65], abs[1400];
	CHECK_EQ(sha256sum(prog, want), 0);
	struct oob_err e = {0};
	struct store *s = store_open(tmpdir, &e);
	CHECK(s != NULL);
	struct store_writer *w = store_writer_new(s, &e);
	CHECK(w != NULL);
	CHECK_EQ(feed(w, prog), 0);
	struct stat st;
	CHECK_EQ(stat(prog, &st), 0);
	CHECK_EQ(store_writer_size(w), st.st_size);
	struct store_blob b;
	CHECK_EQ(store_writer_commit(w, &b, &e), 0);
	CHECK_STR(b.sha256, want);
	CHECK_EQ(b.existed, 0);
	CHECK_EQ(b.size, st.st_size);
	char rel[200];
	snprintf(rel, sizeof(rel), "blobs/sha256/%.2s/%s", want, want + 2);
	CHECK_STR(b.rel, rel);
	store_abspath(s, b.rel, abs, sizeof(abs));
	char got[65];
	CHECK_EQ(sha256sum(abs, got), 0);
	CHECK_STR(got, want);

	/* Same content again: stored once, the temporary file is gone. */
	w = store_writer_new(s, &e);
	CHECK_EQ(feed(w, prog), 0);
	struct store_blob b2;
	CHECK_EQ(store_writer_commit(w, &b2, &e), 0);
	CHECK_EQ(b2.existed, 1);
	CHECK_STR(b2.rel, b.rel);
	char dir[1400];
	snprintf(dir, sizeof(dir), "%s/blobs/sha256/%.2s", tmpdir, want);
	CHECK_EQ(count_files(dir), 1);
	snprintf(dir, sizeof(dir), "%s/tmp", tmpdir);
	CHECK_EQ(count_files(dir), 0);
	store_free(s);
}

static void unfinished_upload_vanishes_at_restart(void)
{
	struct oob_err e = {0};
	struct store *s = store_open(tmpdir, &e);
	CHECK(s != NULL);
	struct store_writer *w = store_writer_new(s, &e);
	CHECK_EQ(store_writer_write(w, "half a trace", 12, &e), 0);
	CHECK_EQ(store_writer_finish(w, &e), 0);
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/tmp", tmpdir);
	CHECK_EQ(count_files(dir), 1);
	/* The process "dies" here: the writer is never committed. */
	struct store *s2 = store_open(tmpdir, &e);
	CHECK(s2 != NULL);
	CHECK_EQ(count_files(dir), 0);
	store_writer_abort(w); /* the file is already gone: no error, no crash */
	store_free(s2);
	store_free(s);
}

static void stream_is_readable_while_growing(void)
{
	struct oob_err e = {0};
	struct store *s = store_open(tmpdir, &e);
	CHECK(s != NULL);
	struct store_writer *w = store_writer_new_stream(s, "trace-7", &e);
	CHECK(w != NULL);
	CHECK_STR(store_writer_rel(w), "streams/trace-7");
	CHECK_EQ(store_writer_write(w, "core   0: ", 10, &e), 0);
	char abs[1400];
	store_abspath(s, "streams/trace-7", abs, sizeof(abs));
	struct stat st;
	CHECK_EQ(stat(abs, &st), 0);
	CHECK_EQ(st.st_size, 10); /* written through: a reader sees it now */
	CHECK_EQ(store_writer_write(w, "3 0x1000\n", 9, &e), 0);
	struct store_blob b;
	CHECK_EQ(store_writer_commit(w, &b, &e), 0);
	CHECK_EQ(stat(abs, &st), 0); /* linked: the stream name still works */
	CHECK_EQ(st.st_nlink, 2);
	CHECK_EQ(store_remove(s, "streams/trace-7", &e), 0);
	CHECK_EQ(store_remove(s, "streams/trace-7", &e), 0);
	store_abspath(s, b.rel, abs, sizeof(abs));
	CHECK_EQ(stat(abs, &st), 0);
	CHECK_EQ(st.st_size, 19);
	CHECK(store_writer_new_stream(s, "../etc", &e) == NULL);
	CHECK_EQ(e.code, -EINVAL);
	CHECK(store_writer_new_stream(s, "", &e) == NULL);
	store_free(s);
}

static void put_file_is_atomic(void)
{
	struct oob_err e = {0};
	struct store *s = store_open(tmpdir, &e);
	CHECK(s != NULL);
	CHECK_EQ(store_put_file(s, "results/3/profile.json", "{}", 2, &e), 0);
	CHECK_EQ(store_put_file(s, "results/3/profile.json", "{\"a\":1}", 7, &e), 0);
	char dir[600], abs[1400];
	snprintf(dir, sizeof(dir), "%s/results/3", tmpdir);
	CHECK_EQ(count_files(dir), 1); /* no temporary file left over */
	store_abspath(s, "results/3/profile.json", abs, sizeof(abs));
	struct stat st;
	CHECK_EQ(stat(abs, &st), 0);
	CHECK_EQ(st.st_size, 7);
	CHECK_EQ(store_rmdir(s, "results/3", &e), 0);
	CHECK(stat(dir, &st) < 0);
	store_free(s);
}

/* A file written by other means (a job's event log) comes into place as
 * store_put_file's do; a crash before store_install leaves only a temporary
 * file, which the next store_open removes. */
static void installed_file_is_atomic(void)
{
	struct oob_err e = {0};
	struct store *s = store_open(tmpdir, &e);
	CHECK(s != NULL);
	char tmp[1400], abs[1400], dir[600];
	struct stat st;
	snprintf(dir, sizeof(dir), "%s/results/4", tmpdir);
	CHECK_EQ(store_temp_path(s, "results/4/events.evl", tmp, sizeof(tmp), &e), 0);
	FILE *f = fopen(tmp, "w");
	CHECK(f != NULL);
	fputs("12345", f);
	fclose(f);
	store_abspath(s, "results/4/events.evl", abs, sizeof(abs));
	CHECK(stat(abs, &st) < 0); /* not there before the install */
	CHECK_EQ(store_install(s, tmp, "results/4/events.evl", &e), 0);
	CHECK_EQ(stat(abs, &st), 0);
	CHECK_EQ(st.st_size, 5);
	CHECK_EQ(count_files(dir), 1);
	/* a crash between the two: the temporary file goes at the next start */
	CHECK_EQ(store_temp_path(s, "results/4/events.evl", tmp, sizeof(tmp), &e), 0);
	f = fopen(tmp, "w");
	CHECK(f != NULL);
	fclose(f);
	CHECK_EQ(count_files(dir), 2);
	store_free(s);
	s = store_open(tmpdir, &e);
	CHECK(s != NULL);
	CHECK_EQ(count_files(dir), 1);
	CHECK_EQ(stat(abs, &st), 0);
	CHECK_EQ(st.st_size, 5);
	/* a file that is not there is an error naming it, and nothing moves */
	CHECK(store_install(s, tmp, "results/4/events.evl", &e) < 0);
	CHECK(strstr(e.msg, tmp) != NULL);
	CHECK_EQ(stat(abs, &st), 0);
	CHECK_EQ(store_rmdir(s, "results/4", &e), 0);
	store_free(s);
}

static void unusable_folder_is_an_error(void)
{
	struct oob_err e = {0};
	CHECK(store_open("/proc/oobprof-cannot-exist", &e) == NULL);
	CHECK(e.code < 0);
	CHECK(strstr(e.msg, "/proc/oobprof-cannot-exist") != NULL);
	char file[600];
	snprintf(file, sizeof(file), "%s/plainfile", tmpdir);
	FILE *f = fopen(file, "w");
	fclose(f);
	CHECK(store_open(file, &e) == NULL);
	CHECK_EQ(e.code, -ENOTDIR);
}

int main(void)
{
	OOBTEST_BEGIN("test_store");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_store.XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	RUN(upload_is_hashed_and_deduplicated);
	RUN(unfinished_upload_vanishes_at_restart);
	RUN(stream_is_readable_while_growing);
	RUN(put_file_is_atomic);
	RUN(installed_file_is_atomic);
	RUN(unusable_folder_is_an_error);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		return 1;
	return OOBTEST_END();
}
