/*
 * api_static: the viewer's files, served at / from the --static folder.
 *
 * The folder is scanned ONCE at start-up (regular files only, no symlinks,
 * no dot-files, at most 4 levels and 4096 files) into a table of relative
 * paths. A request is answered only if its path equals an entry of that
 * table, so no client-supplied path ever reaches the filesystem and
 * "../" cannot escape. Files are opened when requested (edits show up
 * without a restart; new files need one). "/" is index.html; without one,
 * a small built-in page lists the API.
 *
 * Thread-safety: immutable after api_static_open.
 */
#ifndef OOB_API_STATIC_H
#define OOB_API_STATIC_H

#include "http.h"
#include "util/oob_err.h"

struct api_static;

/* Scans dir. NULL + err if it cannot be read (the caller may go on without:
 * api_static_serve accepts NULL). */
struct api_static *api_static_open(const char *dir, struct oob_err *err);
void api_static_free(struct api_static *s);
/* Files found. */
size_t api_static_count(const struct api_static *s);
const char *api_static_dir(const struct api_static *s);

/* Content-Type of a file name, from its extension. */
const char *api_static_content_type(const char *name);

/* Responds to GET path: the file, the built-in page for "/", or 404.
 * s may be NULL. */
void api_static_serve(const struct api_static *s, struct http_req *r, const char *path);
/* Responds with the API reference: the first of OOB_OPENAPI_PATHS (the
 * installed copy, then the source tree's api/openapi.yaml) that exists. */
void api_static_openapi(struct http_req *r);

#endif
