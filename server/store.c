#include "store.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/base16.h>
#include <nettle/sha2.h>

#include "util/oob_log.h"
#include "util/oob_mem.h"

#define WBUF_SIZE (1u << 20)

struct store {
	char root[1024];
	char tmp[96];		/* "tmp", or "tmp/node-<id>" on a folder nodes share */
	unsigned long long seq; /* temporary names; guarded by the atomic below */
};

struct store_writer {
	struct store *s;
	int fd;
	int stream; /* write-through, committed by link() */
	int finished;
	char rel[STORE_REL_MAX];
	char abs[1500];
	struct sha256_ctx sha;
	char hex[STORE_SHA256_HEX];
	uint64_t size;
	size_t nbuf;
	uint8_t *buf;
};

static int sys_err(struct oob_err *err, const char *what, const char *path)
{
	int e = errno ? errno : EIO;
	return oob_err_set(err, -e, "%s %s: %s", what, path, strerror(e));
}

int store_fsync_dir(const char *path, struct oob_err *err)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return sys_err(err, "open folder", path);
	int rc = 0;
	if (fsync(fd) < 0)
		rc = sys_err(err, "fsync folder", path);
	close(fd);
	return rc;
}

/* mkdir that tolerates an existing folder; fsyncs the parent when it created
 * one, so that the new entry survives a crash. */
static int mkdir_durable(const char *path, struct oob_err *err)
{
	if (mkdir(path, 0755) == 0) {
		char parent[1280];
		snprintf(parent, sizeof(parent), "%s", path);
		char *slash = strrchr(parent, '/');
		if (slash && slash != parent) {
			*slash = '\0';
			return store_fsync_dir(parent, err);
		}
		return 0;
	}
	if (errno == EEXIST) {
		struct stat st;
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
			return 0;
		errno = ENOTDIR;
	}
	return sys_err(err, "create folder", path);
}

int store_abspath(const struct store *s, const char *rel, char *buf, size_t n)
{
	int len = snprintf(buf, n, "%s/%s", s->root, rel);
	return (len < 0 || (size_t)len >= n) ? -ENAMETOOLONG : 0;
}

int store_mkdir(struct store *s, const char *rel, struct oob_err *err)
{
	char p[1280];
	if (store_abspath(s, rel, p, sizeof(p)) < 0)
		return oob_err_set(err, -ENAMETOOLONG, "path too long: %s", rel);
	return mkdir_durable(p, err);
}

static void empty_folder(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (e->d_type == DT_DIR) {
			char sub[1280];
			snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
			empty_folder(sub);
			unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
		} else if (unlinkat(dirfd(d), e->d_name, 0) == 0) {
			OOB_INFO("store: removed unfinished upload %s/%s", path, e->d_name);
		}
	}
	closedir(d);
}

/* store_put_file's temporary files left by a crash in results/<job>/. */
static void drop_stale_results(const char *results)
{
	DIR *d = opendir(results);
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d))) {
		char sub[1600];
		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", results, e->d_name);
		DIR *j = opendir(sub);
		struct dirent *f;
		while (j && (f = readdir(j)))
			if (strstr(f->d_name, ".tmp-") && unlinkat(dirfd(j), f->d_name, 0) == 0)
				OOB_INFO("store: removed unfinished result %s/%s", sub, f->d_name);
		if (j)
			closedir(j);
	}
	closedir(d);
}

/* The node's own temporary folder: its id with anything but
 * [A-Za-z0-9._-] as '_', so that it stays one path component. */
static void node_tmp(struct store *s, const char *node)
{
	if (!node) {
		snprintf(s->tmp, sizeof(s->tmp), "tmp");
		return;
	}
	int n = snprintf(s->tmp, sizeof(s->tmp), "tmp/node-%.64s", node);
	for (int i = 9; i < n; i++) {
		char ch = s->tmp[i];
		if (!isalnum((unsigned char)ch) && ch != '.' && ch != '_' && ch != '-')
			s->tmp[i] = '_';
	}
}

struct store *store_open(const char *dir, struct oob_err *err)
{
	return store_open_node(dir, NULL, err);
}

struct store *store_open_node(const char *dir, const char *node, struct oob_err *err)
{
	static const char *const sub[] = {"blobs", "blobs/sha256", "tmp", "streams", "results"};
	struct store *s = oob_xcalloc(1, sizeof(*s));
	node_tmp(s, node);
	if (strlen(dir) + 200 > sizeof(s->root)) {
		oob_err_set(err, -ENAMETOOLONG, "data folder path too long: %s", dir);
		goto fail;
	}
	snprintf(s->root, sizeof(s->root), "%s", dir);
	if (mkdir_durable(s->root, err) < 0)
		goto fail;
	/* Absolute from here on: paths handed out stay valid whatever the
	 * working folder, and symlinks to blobs resolve from anywhere. */
	char *abs = realpath(dir, NULL);
	if (!abs || strlen(abs) + 200 > sizeof(s->root)) {
		oob_err_set(err, -ENAMETOOLONG, "data folder %s: cannot resolve its path", dir);
		free(abs);
		goto fail;
	}
	snprintf(s->root, sizeof(s->root), "%s", abs);
	free(abs);
	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++)
		if (store_mkdir(s, sub[i], err) < 0)
			goto fail;
	if (node && store_mkdir(s, s->tmp, err) < 0)
		goto fail;
	/* What a crash left: in our own temporary folder only, since other
	 * nodes' uploads are live in theirs; the temporary result files of
	 * jobs (any node's) are only ours to drop when we are the only node. */
	char tmp[1280];
	store_abspath(s, s->tmp, tmp, sizeof(tmp));
	empty_folder(tmp);
	store_abspath(s, "results", tmp, sizeof(tmp));
	if (!node)
		drop_stale_results(tmp);
	return s;
fail:
	free(s);
	return NULL;
}

struct store *store_attach(const char *root, struct oob_err *err)
{
	struct store *s = oob_xcalloc(1, sizeof(*s));
	if (root[0] != '/' || strlen(root) + 200 > sizeof(s->root)) {
		oob_err_set(err, -EINVAL, "data folder %s: not an absolute path that fits", root);
		free(s);
		return NULL;
	}
	snprintf(s->root, sizeof(s->root), "%s", root);
	node_tmp(s, NULL);
	return s;
}

void store_free(struct store *s)
{
	free(s);
}

const char *store_root(const struct store *s)
{
	return s->root;
}

static struct store_writer *writer_open(struct store *s, const char *rel, int stream,
					struct oob_err *err)
{
	struct store_writer *w = oob_xcalloc(1, sizeof(*w));
	w->s = s;
	w->stream = stream;
	snprintf(w->rel, sizeof(w->rel), "%s", rel);
	store_abspath(s, rel, w->abs, sizeof(w->abs));
	w->fd = open(w->abs, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		sys_err(err, "create", w->abs);
		free(w);
		return NULL;
	}
	if (!stream)
		w->buf = oob_xmalloc(WBUF_SIZE);
	sha256_init(&w->sha);
	return w;
}

struct store_writer *store_writer_new(struct store *s, struct oob_err *err)
{
	char rel[STORE_REL_MAX];
	unsigned long long n = __atomic_add_fetch(&s->seq, 1, __ATOMIC_RELAXED);
	snprintf(rel, sizeof(rel), "%s/upload-%ld-%llu", s->tmp, (long)getpid(), n);
	return writer_open(s, rel, 0, err);
}

static int name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 64 || name[0] == '.')
		return 0;
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
	       n;
}

struct store_writer *store_writer_new_stream(struct store *s, const char *name, struct oob_err *err)
{
	char rel[STORE_REL_MAX];
	if (!name_ok(name)) {
		oob_err_set(err, -EINVAL, "bad stream name \"%s\"", name);
		return NULL;
	}
	snprintf(rel, sizeof(rel), "streams/%s", name);
	return writer_open(s, rel, 1, err);
}

static int write_all(struct store_writer *w, const uint8_t *p, size_t n, struct oob_err *err)
{
	while (n) {
		ssize_t k = write(w->fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return sys_err(err, "write", w->abs);
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int flush_buf(struct store_writer *w, struct oob_err *err)
{
	int rc = write_all(w, w->buf, w->nbuf, err);
	w->nbuf = 0;
	return rc;
}

int store_writer_write(struct store_writer *w, const void *p, size_t n, struct oob_err *err)
{
	if (w->finished)
		return oob_err_set(err, -EINVAL, "write after finish: %s", w->rel);
	sha256_update(&w->sha, n, p);
	w->size += n;
	if (w->stream)
		return write_all(w, p, n, err);
	if (w->nbuf + n > WBUF_SIZE) {
		int rc = flush_buf(w, err);
		if (rc < 0)
			return rc;
	}
	if (n >= WBUF_SIZE)
		return write_all(w, p, n, err);
	memcpy(w->buf + w->nbuf, p, n);
	w->nbuf += n;
	return 0;
}

uint64_t store_writer_size(const struct store_writer *w)
{
	return w->size;
}

const char *store_writer_rel(const struct store_writer *w)
{
	return w->rel;
}

int store_writer_finish(struct store_writer *w, struct oob_err *err)
{
	uint8_t d[SHA256_DIGEST_SIZE];
	if (w->finished)
		return 0;
	int rc = w->nbuf ? flush_buf(w, err) : 0;
	if (rc < 0)
		return rc;
	if (fsync(w->fd) < 0)
		return sys_err(err, "fsync", w->abs);
	sha256_digest(&w->sha, sizeof(d), d);
	base16_encode_update(w->hex, sizeof(d), d);
	w->hex[STORE_SHA256_HEX - 1] = '\0';
	w->finished = 1;
	return 0;
}

const char *store_writer_sha256(const struct store_writer *w)
{
	return w->finished ? w->hex : NULL;
}

static void writer_free(struct store_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	free(w->buf);
	free(w);
}

/* Hashes what the file holds, as store_writer_write would have. */
static int hash_file(struct store_writer *w, struct oob_err *err)
{
	uint8_t buf[1 << 16];
	for (;;) {
		ssize_t k = read(w->fd, buf, sizeof(buf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return sys_err(err, "read", w->abs);
		if (k == 0)
			return 0;
		sha256_update(&w->sha, (size_t)k, buf);
		w->size += (uint64_t)k;
	}
}

struct store_writer *store_writer_adopt_stream(struct store *s, const char *rel,
					       struct oob_err *err)
{
	struct store_writer *w = oob_xcalloc(1, sizeof(*w));
	w->s = s;
	w->fd = -1;
	w->stream = 1;
	snprintf(w->rel, sizeof(w->rel), "%s", rel);
	store_abspath(s, rel, w->abs, sizeof(w->abs));
	sha256_init(&w->sha);
	int rc = strncmp(rel, "streams/", 8)
		     ? oob_err_set(err, -EINVAL, "not a stream file: %s", rel)
		     : 0;
	if (rc == 0 && (w->fd = open(w->abs, O_RDONLY | O_CLOEXEC)) < 0)
		rc = sys_err(err, "open", w->abs);
	if (rc == 0 && (rc = hash_file(w, err)) == 0)
		rc = store_writer_finish(w, err);
	if (rc < 0) {
		writer_free(w);
		return NULL;
	}
	return w;
}

/* Moves (or links) the finished file to blobs/sha256/ab/cdef...; the blob
 * may already exist, in which case our copy is simply dropped. */
static int place_blob(struct store_writer *w, struct store_blob *out, struct oob_err *err)
{
	char dir[1280], dst[1280], rel_dir[STORE_REL_MAX];
	snprintf(rel_dir, sizeof(rel_dir), "blobs/sha256/%.2s", w->hex);
	store_abspath(w->s, rel_dir, dir, sizeof(dir));
	store_abspath(w->s, out->rel, dst, sizeof(dst));
	int rc = mkdir_durable(dir, err);
	if (rc < 0)
		return rc;
	if (w->stream ? link(w->abs, dst) == 0 : rename(w->abs, dst) == 0)
		return store_fsync_dir(dir, err);
	if (errno != EEXIST)
		return sys_err(err, "store blob", dst);
	out->existed = 1;
	return 0;
}

int store_writer_commit(struct store_writer *w, struct store_blob *out, struct oob_err *err)
{
	memset(out, 0, sizeof(*out));
	int rc = store_writer_finish(w, err);
	if (rc < 0) {
		store_writer_abort(w);
		return rc;
	}
	memcpy(out->sha256, w->hex, sizeof(out->sha256));
	out->size = w->size;
	/* rename() over an existing blob would also work, but keeping the old
	 * inode means a reader that holds it open never sees it replaced. */
	struct stat st;
	char dst[1280];
	snprintf(out->rel, sizeof(out->rel), "blobs/sha256/%.2s/%s", w->hex, w->hex + 2);
	store_abspath(w->s, out->rel, dst, sizeof(dst));
	if (stat(dst, &st) == 0) {
		out->existed = 1;
		if (!w->stream)
			unlink(w->abs);
	} else {
		rc = place_blob(w, out, err);
		if (rc < 0 && !w->stream)
			unlink(w->abs);
	}
	writer_free(w);
	return rc;
}

void store_writer_abort(struct store_writer *w)
{
	if (!w)
		return;
	unlink(w->abs);
	writer_free(w);
}

int store_remove(struct store *s, const char *rel, struct oob_err *err)
{
	char p[1280];
	if (store_abspath(s, rel, p, sizeof(p)) < 0)
		return oob_err_set(err, -ENAMETOOLONG, "path too long: %s", rel);
	if (unlink(p) < 0 && errno != ENOENT)
		return sys_err(err, "remove", p);
	return 0;
}

static int parent_of(const char *path, char *buf, size_t n)
{
	snprintf(buf, n, "%s", path);
	char *slash = strrchr(buf, '/');
	if (!slash)
		return -EINVAL;
	*slash = '\0';
	return 0;
}

/* The last step of an atomic write: our temporary tmp (written and fsynced
 * when rc is 0) replaces dst, and the rename is made durable; on any error
 * the temporary, and only it, is removed. */
static int rename_durable(int rc, const char *tmp, const char *dst, const char *dir,
			  struct oob_err *err)
{
	if (rc == 0 && rename(tmp, dst) < 0)
		rc = sys_err(err, "rename", dst);
	if (rc < 0) {
		unlink(tmp);
		return rc;
	}
	return store_fsync_dir(dir, err);
}

int store_put_file(struct store *s, const char *rel, const void *data, size_t n,
		   struct oob_err *err)
{
	char dst[1280], dir[1280], tmp[1400];
	if (store_abspath(s, rel, dst, sizeof(dst)) < 0 || parent_of(dst, dir, sizeof(dir)) < 0)
		return oob_err_set(err, -ENAMETOOLONG, "bad result path: %s", rel);
	int rc = mkdir_durable(dir, err);
	if (rc < 0)
		return rc;
	unsigned long long k = __atomic_add_fetch(&s->seq, 1, __ATOMIC_RELAXED);
	snprintf(tmp, sizeof(tmp), "%s.tmp-%ld-%llu", dst, (long)getpid(), k);
	struct store_writer w = {.s = s, .stream = 1};
	snprintf(w.abs, sizeof(w.abs), "%s", tmp);
	w.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644); /* ours alone to unlink */
	if (w.fd < 0)
		return sys_err(err, "create", tmp);
	rc = write_all(&w, data, n, err);
	if (rc == 0 && fsync(w.fd) < 0)
		rc = sys_err(err, "fsync", tmp);
	close(w.fd);
	return rename_durable(rc, tmp, dst, dir, err);
}

int store_temp_path(struct store *s, const char *rel, char *buf, size_t n, struct oob_err *err)
{
	char dst[1280], dir[1280];
	if (store_abspath(s, rel, dst, sizeof(dst)) < 0 || parent_of(dst, dir, sizeof(dir)) < 0)
		return oob_err_set(err, -ENAMETOOLONG, "bad result path: %s", rel);
	int rc = mkdir_durable(dir, err);
	if (rc < 0)
		return rc;
	unsigned long long k = __atomic_add_fetch(&s->seq, 1, __ATOMIC_RELAXED);
	if ((size_t)snprintf(buf, n, "%s.tmp-%ld-%llu", dst, (long)getpid(), k) >= n)
		return oob_err_set(err, -ENAMETOOLONG, "bad result path: %s", rel);
	return 0;
}

int store_install(struct store *s, const char *tmp, const char *rel, struct oob_err *err)
{
	char dst[1280], dir[1280];
	int rc = 0;
	if (store_abspath(s, rel, dst, sizeof(dst)) < 0 || parent_of(dst, dir, sizeof(dir)) < 0)
		rc = oob_err_set(err, -ENAMETOOLONG, "bad result path: %s", rel);
	int fd = rc == 0 ? open(tmp, O_RDONLY | O_CLOEXEC) : -1;
	if (rc == 0 && (fd < 0 || fsync(fd) < 0))
		rc = sys_err(err, "fsync", tmp);
	if (fd >= 0)
		close(fd);
	return rename_durable(rc, tmp, dst, dir, err);
}

int store_rmdir(struct store *s, const char *rel, struct oob_err *err)
{
	char p[1280];
	if (store_abspath(s, rel, p, sizeof(p)) < 0)
		return oob_err_set(err, -ENAMETOOLONG, "path too long: %s", rel);
	DIR *d = opendir(p);
	if (!d)
		return errno == ENOENT ? 0 : sys_err(err, "open folder", p);
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	if (rmdir(p) < 0 && errno != ENOENT)
		return sys_err(err, "remove folder", p);
	char parent[1280];
	if (parent_of(p, parent, sizeof(parent)) == 0)
		store_fsync_dir(parent, NULL);
	return 0;
}
