#include "api_static.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/oob_log.h"
#include "util/oob_mem.h"

#ifndef OOB_OPENAPI_PATHS
#define OOB_OPENAPI_PATHS ""
#endif

#define MAX_FILES 4096
#define MAX_DEPTH 4

struct api_static {
	char dir[1024];
	char **rel; /* sorted, for bsearch */
	size_t n, cap;
};

static const char builtin_page[] =
    "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>oobprof</title></head>\n"
    "<body><h1>oobprofd</h1>\n<p>No viewer is installed (no index.html in the static "
    "folder). The API is at <a href=\"/api/v1/health\">/api/v1/health</a>, "
    "<a href=\"/api/v1/jobs\">/api/v1/jobs</a>, <a href=\"/api/v1/traces\">/api/v1/traces</a>"
    " and <a href=\"/api/v1/binaries\">/api/v1/binaries</a>; see api/openapi.yaml.</p>\n"
    "</body></html>\n";

static const struct {
	const char *ext, *type;
} types[] = {
    {".html", "text/html; charset=utf-8"},
    {".htm", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".json", "application/json"},
    {".map", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".jpg", "image/jpeg"},
    {".ico", "image/x-icon"},
    {".txt", "text/plain; charset=utf-8"},
    {".yaml", "application/yaml; charset=utf-8"},
    {".wasm", "application/wasm"},
    {".woff2", "font/woff2"},
};

const char *api_static_content_type(const char *name)
{
	const char *dot = strrchr(name, '.');
	if (dot && !strchr(dot, '/'))
		for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			if (!strcasecmp(dot, types[i].ext))
				return types[i].type;
	return "application/octet-stream";
}

static void add(struct api_static *s, const char *rel)
{
	if (s->n >= MAX_FILES)
		return;
	oob_xgrow((void **)&s->rel, &s->cap, s->n + 1, sizeof(*s->rel));
	s->rel[s->n++] = oob_xstrdup(rel);
}

static void scan(struct api_static *s, const char *rel, int depth)
{
	char path[2048];
	snprintf(path, sizeof(path), "%s%s%s", s->dir, *rel ? "/" : "", rel);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && s->n < MAX_FILES) {
		char sub[1024];
		struct stat st;
		if (e->d_name[0] == '.')
			continue;
		int k = snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", e->d_name);
		if (k < 0 || (size_t)k >= sizeof(sub) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(st.st_mode))
			add(s, sub);
		else if (S_ISDIR(st.st_mode) && depth < MAX_DEPTH)
			scan(s, sub, depth + 1);
	}
	closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct api_static *api_static_open(const char *dir, struct oob_err *err)
{
	struct stat st;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		oob_err_set(err, -ENOENT, "static folder %s: not a folder", dir);
		return NULL;
	}
	struct api_static *s = oob_xcalloc(1, sizeof(*s));
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	scan(s, "", 0);
	if (s->n)
		qsort(s->rel, s->n, sizeof(*s->rel), cmp_str);
	return s;
}

void api_static_free(struct api_static *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->rel[i]);
	free(s->rel);
	free(s);
}

size_t api_static_count(const struct api_static *s)
{
	return s ? s->n : 0;
}

const char *api_static_dir(const struct api_static *s)
{
	return s ? s->dir : "";
}

static const char *lookup(const struct api_static *s, const char *rel)
{
	if (!s || !s->n)
		return NULL;
	char **hit = bsearch(&rel, s->rel, s->n, sizeof(*s->rel), cmp_str);
	return hit ? *hit : NULL;
}

/* Responds with the regular file at abs; -1 (nothing sent) if there is none. */
static int serve_file(struct http_req *r, const char *abs, const char *type)
{
	int fd = open(abs, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	http_add_header(r, "Cache-Control", "no-cache");
	http_respond_fd(r, 200, type, fd, (uint64_t)st.st_size);
	return 0;
}

void api_static_serve(const struct api_static *s, struct http_req *r, const char *path)
{
	const char *rel = path[0] == '/' ? path + 1 : path;
	if (!*rel)
		rel = "index.html";
	/* Browsers ask for /favicon.ico whatever the page links: the SVG one
	 * answers (every browser that asks reads SVG icons). */
	if (!strcmp(rel, "favicon.ico") && !lookup(s, rel) && lookup(s, "favicon.svg"))
		rel = "favicon.svg";
	const char *known = lookup(s, rel);
	if (!known && !strcmp(rel, "index.html")) {
		http_respond(r, 200, "text/html; charset=utf-8", builtin_page,
			     sizeof(builtin_page) - 1);
		return;
	}
	if (!known) {
		http_respond_error(r, 404, "not_found", "no such page or API route: %.200s", path);
		return;
	}
	char abs[2048];
	snprintf(abs, sizeof(abs), "%s/%s", s->dir, known);
	if (serve_file(r, abs, api_static_content_type(known)) < 0)
		http_respond_error(r, 404, "not_found", "%.200s is gone", path);
}

void api_static_openapi(struct http_req *r)
{
	char paths[4096];
	snprintf(paths, sizeof(paths), "%s", OOB_OPENAPI_PATHS);
	for (char *save, *p = strtok_r(paths, ":", &save); p; p = strtok_r(NULL, ":", &save))
		if (serve_file(r, p, "application/yaml; charset=utf-8") == 0)
			return;
	http_respond_error(r, 404, "not_found",
			   "the API reference (openapi.yaml) is not installed; it is "
			   "api/openapi.yaml of the source tree");
}
