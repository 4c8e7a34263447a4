/*
 * api_inputs: the routes of the inputs, binaries and traces: uploads,
 * listings, lookups.
 *
 * Uploads (POST or PUT, raw body, Content-Length or chunked):
 *   /api/v1/binaries?name=N
 *   /api/v1/traces?name=N&format=auto|<a name of the format table>[&stream=1]
 * The body streams into the blob store (hashed on the way, never whole in
 * memory), is fsync'd and validated, and only then renamed into its content
 * address and registered in the catalog. A binary must be an ELF file
 * (sym_binary_open: arch, build-id, functions, DWARF, PIE are reported); a
 * trace must open with trace_open and yield its first batch (its detected
 * format and parameters are reported); format=events takes a JSON Lines
 * sideband file (first line must be a JSON object). Invalid content is
 * refused with the reader's message (400/415) and nothing is registered.
 * Content already stored is stored once: the existing row comes back with
 * status 200 and "duplicate": true instead of 201.
 *
 * With stream=1 a trace is registered at once in state "streaming", so a job
 * can follow it while it arrives (see worker.h); it becomes "ready" when the
 * body ends and validates, "invalid" when it does not, "incomplete" when the
 * client goes away first (the bytes received are kept). Clients find the id
 * of a stream they are still sending with GET /api/v1/traces?name=N.
 *
 * Limits: --max-upload (413, at once when Content-Length says so, else when
 * the body passes it), --max-uploads simultaneous bodies (503 + Retry-After).
 */
#ifndef OOB_API_INPUTS_H
#define OOB_API_INPUTS_H

#include "api_routes.h"

int api_inputs_binary_begin(struct api_ctx *c, struct http_req *r, struct api_req *q);
int api_inputs_trace_begin(struct api_ctx *c, struct http_req *r, struct api_req *q);
int api_inputs_upload_chunk(struct api_ctx *c, struct http_req *r, struct api_req *q, const void *p,
			    size_t n);
void api_inputs_upload_end(struct api_ctx *c, struct http_req *r, struct api_req *q);

/* Start-up, before any request: each stream the last stop cut short keeps
 * its bytes as an "incomplete" trace with their size and sha256. Returns
 * how many, or a negative errno; a stream whose file cannot be read stays
 * for catalog_trace_close_streams. */
int api_inputs_recover_streams(struct api_ctx *c, struct oob_err *err);
void api_inputs_upload_done(struct api_ctx *c, struct api_req *q, int complete);

int api_inputs_list_binaries(struct api_ctx *c, struct http_req *r, struct api_req *q);
int api_inputs_get_binary(struct api_ctx *c, struct http_req *r, struct api_req *q);
int api_inputs_list_traces(struct api_ctx *c, struct http_req *r, struct api_req *q);
int api_inputs_get_trace(struct api_ctx *c, struct http_req *r, struct api_req *q);
/* GET /api/v1/formats: the rows of the format table (trace_formats.h), in
 * table order: name, description, extensions, readable (trace_open reads
 * it: a job may name it in options.format), detected (format=auto finds
 * it from the content). */
int api_inputs_formats(struct api_ctx *c, struct http_req *r, struct api_req *q);

#endif
