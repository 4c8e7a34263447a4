/*
 * settings: oobprofd's settings. Embedded defaults need no configuration at
 * all (127.0.0.1:8080, ./oobprof-data, one worker per core). Settings come
 * from, in increasing precedence: the defaults, a config file (--config F,
 * "key = value" lines, '#' comments, keys named like the long flags without
 * the dashes: "listen = 0.0.0.0:9000"), then the command line.
 *
 * A struct settings is plain data, filled once at start-up and read-only
 * afterwards, so any thread may read it without locking.
 */
#ifndef OOB_SETTINGS_H
#define OOB_SETTINGS_H

#include <limits.h>
#include <stdint.h>

#include "util/oob_err.h"
#include "util/oob_log.h"

#define SETTINGS_PATH_MAX 1024

struct settings {
	char listen_host[64]; /* numeric IPv4/IPv6 address, brackets stripped */
	unsigned listen_port; /* 0 = let the kernel choose (see port_file) */
	char data_dir[SETTINGS_PATH_MAX];
	unsigned workers;		    /* job worker threads */
	uint64_t max_upload;		    /* bytes per uploaded body; over it -> 413 */
	char token_file[SETTINGS_PATH_MAX]; /* empty: no authentication */
	int auth_reads;			    /* with a token: GETs need it too */
	char static_dir[SETTINGS_PATH_MAX]; /* empty: the bundled folder, else built-in page */
	enum oob_log_level log_level;
	unsigned max_connections;	   /* simultaneous HTTP connections */
	unsigned max_uploads;		   /* simultaneous upload bodies; over it -> 503 */
	unsigned max_header_bytes;	   /* request line + headers; over it -> 431 by MHD */
	unsigned timeout_s;		   /* idle connection timeout */
	unsigned max_per_ip;		   /* connections per client address; 0: no limit */
	unsigned http_threads;		   /* event-loop threads */
	unsigned compute_threads;	   /* threads for responses that compute */
	unsigned upload_timeout_s;	   /* idle timeout within a streamed upload */
	uint64_t cache_bytes;		   /* loaded results and rendered views */
	uint64_t job_memory;		   /* resident bytes of one job's process; 0: no limit */
	unsigned max_events;		   /* stack events a job keeps (RESULT_MAX_EVENTS) */
	char port_file[SETTINGS_PATH_MAX]; /* written with the bound port once listening */
	/* Scale-out (DESIGN.md 6): "" = DATA/catalog.db (SQLite, one node);
	 * "postgresql://..." or "postgres:..." = a catalog and job queue that
	 * several nodes share, with DATA mounted by all of them. */
	char catalog[SETTINGS_PATH_MAX];
	char node_id[64]; /* this node's name in job leases; "" = host name + port */
	unsigned lease_s; /* a claimed job's lease, renewed every third of it */

	/* Actions rather than settings (command line only). */
	int print_routes, help, version;
};

/* Fills c with the embedded defaults (workers = online cores). */
void settings_defaults(struct settings *c);

/*
 * Sets one setting by its key (a long flag name without the dashes) from its
 * text value. Returns 0, or -EINVAL with a message naming the key and what a
 * valid value looks like. Sizes accept K/M/G/T suffixes (powers of 1024).
 */
int settings_set(struct settings *c, const char *key, const char *value, struct oob_err *err);

/* Reads a config file into c. -ENOENT if missing, -EINVAL naming the line. */
int settings_load_file(struct settings *c, const char *path, struct oob_err *err);

/*
 * Applies argv on top of c: "--config F" first (wherever it appears), then
 * every other flag in order, as "--key value" or "--key=value"; boolean flags
 * (--auth-reads, --print-routes, --help, --version) take no value.
 * Returns 0 or -EINVAL (unknown flag, missing value, bad value).
 */
int settings_parse_args(struct settings *c, int argc, char **argv, struct oob_err *err);

/* The flag summary printed by --help. */
const char *settings_usage(void);

/* Parses "123", "64K", "2G" into bytes; -EINVAL if malformed or overflowing. */
int settings_parse_size(const char *s, uint64_t *out);

#endif
