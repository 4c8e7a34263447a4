/* catalog_binaries: the binaries table (ELF files uploaded for symbols). */
#include "catalog_impl.h"

#include <string.h>

#define BIN_COLS "id, name, sha256, blob, size, build_id, machine, nfuncs, has_dwarf, pie, created"

static void read_binary(struct catalog_stmt *st, struct catalog_binary *b)
{
	memset(b, 0, sizeof(*b));
	b->id = catalog_col_i64(st, 0);
	catalog_col_text(st, 1, b->name, sizeof(b->name));
	catalog_col_text(st, 2, b->sha256, sizeof(b->sha256));
	catalog_col_text(st, 3, b->blob, sizeof(b->blob));
	b->size = (uint64_t)catalog_col_i64(st, 4);
	catalog_col_text(st, 5, b->build_id, sizeof(b->build_id));
	b->machine = (unsigned)catalog_col_int(st, 6);
	b->nfuncs = (uint64_t)catalog_col_i64(st, 7);
	b->has_dwarf = catalog_col_int(st, 8);
	b->pie = catalog_col_int(st, 9);
	b->created = catalog_col_i64(st, 10);
}

int catalog_binary_add(struct catalog *c, struct catalog_binary *b, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	b->created = catalog_now_s();
	struct catalog_stmt *st = catalog_prep(
	    c, err,
	    "INSERT INTO binaries (name, sha256, blob, size, build_id, machine,"
	    " nfuncs, has_dwarf, pie, created) VALUES (?,?,?,?,?,?,?,?,?,?)",
	    "sssusiiiii", b->name, b->sha256, b->blob, b->size, b->build_id, (int64_t)b->machine,
	    (int64_t)b->nfuncs, (int64_t)b->has_dwarf, (int64_t)b->pie, b->created);
	int rc = catalog_run(c, st, err);
	if (rc == 0)
		b->id = catalog_last_id(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static void read_binary_v(struct catalog_stmt *st, void *out)
{
	read_binary(st, out);
}

int catalog_binary_get(struct catalog *c, int64_t id, struct catalog_binary *out,
		       struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	struct catalog_stmt *st =
	    catalog_prep(c, err, "SELECT " BIN_COLS " FROM binaries WHERE id = ?", "i", id);
	int rc = catalog_get_one(c, st, read_binary_v, out, "binary", id, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_binary_find(struct catalog *c, const char *sha256, struct catalog_binary *out,
			struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	struct catalog_stmt *st = catalog_prep(c, err,
					       "SELECT " BIN_COLS " FROM binaries WHERE sha256 = ?"
					       " ORDER BY id LIMIT 1",
					       "s", sha256);
	int rc = catalog_get_one(c, st, read_binary_v, out, "binary", 0, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_binary_list(struct catalog *c, int64_t after, size_t limit, struct catalog_binary **out,
			size_t *n, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	struct catalog_stmt *st = catalog_prep(
	    c, err, "SELECT " BIN_COLS " FROM binaries WHERE id > ? ORDER BY id LIMIT ?", "ii",
	    after, (int64_t)limit);
	int rc = catalog_list_rows(c, st, sizeof(**out), read_binary_v, (void **)out, n, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}
