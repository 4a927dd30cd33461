/* Checking a kernel cache file whole (`fcjit info`, `cache verify`) and repairing a damaged one
 * (`cache repair`). The store's connection comes from cache.c (fc_cache_sqlite). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "cache_internal.h"

static void copy_text(char *out, size_t size, sqlite3_stmt *stmt, int column)
{
    const unsigned char *text = sqlite3_column_text(stmt, column);
    snprintf(out, size, "%s", text ? (const char *)text : "");
}

/* One cubin row, found by a walk that reads no cubin. */
struct row_ref {
    sqlite3_int64 rowid;
    char key[FC_KEY_HEX];
};

struct row_list {
    struct row_ref *items;
    size_t count, capacity;
};

/* Adds the rows a walk reaches before it ends or fails; returns the SQLite code it stopped with. */
static int collect_rows(sqlite3 *db, const char *sql, struct row_list *rows)
{
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        if (rows->count == rows->capacity) {
            size_t capacity = rows->capacity ? 2 * rows->capacity : 256;
            struct row_ref *grown = realloc(rows->items, capacity * sizeof *grown);
            if (!grown) {
                rc = SQLITE_NOMEM;
                break;
            }
            rows->items = grown;
            rows->capacity = capacity;
        }
        struct row_ref *row = &rows->items[rows->count++];
        row->rowid = sqlite3_column_int64(stmt, 0);
        copy_text(row->key, sizeof row->key, stmt, 1);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(stmt);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int compare_rowids(const void *a, const void *b)
{
    const sqlite3_int64 x = ((const struct row_ref *)a)->rowid, y = ((const struct row_ref *)b)->rowid;
    return (x > y) - (x < y);
}

/* Every row's rowid and key: from the table; where its pages are damaged, also from the key's
 * index, which lives on other pages. Sorted by rowid, each once. */
static int find_rows(sqlite3 *db, struct row_list *rows, char *damage, size_t size)
{
    int rc = collect_rows(db, "SELECT rowid, key FROM cubins NOT INDEXED", rows);
    if (rc != SQLITE_OK && rc != SQLITE_NOMEM) {
        if (!damage[0])
            snprintf(damage, size, "%s", sqlite3_errmsg(db));
        rc = collect_rows(db, "SELECT rowid, key FROM cubins INDEXED BY sqlite_autoindex_cubins_1", rows);
    }
    if (rows->count)
        qsort(rows->items, rows->count, sizeof *rows->items, compare_rowids);
    size_t kept = 0;
    for (size_t i = 0; i < rows->count; i++)
        if (!kept || rows->items[kept - 1].rowid != rows->items[i].rowid)
            rows->items[kept++] = rows->items[i];
    rows->count = kept;
    return rc == SQLITE_NOMEM ? rc : SQLITE_OK;
}

/* Reads one row whole and checks its cubin; a row SQLite cannot read is named by its key and,
 * if its own page is whole, its name. */
static void check_row(sqlite3 *db, const struct row_ref *row, struct fc_cache_health *health,
                      fc_cache_bad_row_fn bad_row, void *user)
{
    static const char *const SQL[] = {"SELECT name, cubin, checksum FROM cubins WHERE rowid = ?1",
                                      "SELECT name FROM cubins WHERE rowid = ?1"};
    char name[FC_VARIANT_NAME_MAX] = "", problem[256] = "";
    for (int attempt = 0; attempt < 2 && (attempt == 0 || problem[0]); attempt++) {
        sqlite3_stmt *stmt = NULL;
        int rc = sqlite3_prepare_v2(db, SQL[attempt], -1, &stmt, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_bind_int64(stmt, 1, row->rowid);
            rc = sqlite3_step(stmt);
        }
        if (rc == SQLITE_ROW) {
            copy_text(name, sizeof name, stmt, 0);
        } else if (attempt == 0) {
            snprintf(problem, sizeof problem, "cannot be read: %s", sqlite3_errmsg(db));
        }
        if (rc == SQLITE_ROW && attempt == 0) {
            const void *blob = sqlite3_column_blob(stmt, 1);
            const size_t bytes = (size_t)sqlite3_column_bytes(stmt, 1);
            char stored[17], actual[17];
            copy_text(stored, sizeof stored, stmt, 2);
            fc_checksum_hex(blob, bytes, actual);
            health->bytes += (long long)bytes;
            if (!blob || strcmp(stored, actual)) {
                health->bad_checksums++;
                if (bad_row)
                    bad_row(user, row->key, name, "its cubin fails its checksum");
            }
        }
        sqlite3_finalize(stmt);
    }
    health->kernels++;
    if (problem[0]) {
        health->unreadable++;
        if (bad_row)
            bad_row(user, row->key, name, problem);
    }
}

/* The first thing PRAGMA quick_check finds wrong, or "", on one line. */
static void quick_check(sqlite3 *db, char *damage, size_t size)
{
    static const char DATABASE_HEADING[] = "*** in database main ***\n";
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &stmt, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        const char *text = (const char *)sqlite3_column_text(stmt, 0);
        if (text && !strncmp(text, DATABASE_HEADING, sizeof DATABASE_HEADING - 1))
            text += sizeof DATABASE_HEADING - 1;
        if (text && strcmp(text, "ok"))
            snprintf(damage, size, "%s", text);
        for (char *p = damage; *p; p++)
            *p = *p == '\n' ? ' ' : *p;
    } else {
        snprintf(damage, size, "%s", sqlite3_errmsg(db));
    }
    sqlite3_finalize(stmt);
}

static int count_rows(sqlite3 *db, const char *sql, long long *count)
{
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        *count = sqlite3_column_int64(stmt, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(stmt);
    return rc;
}

enum fc_status fc_cache_check(struct fc_cache *cache, fc_cache_bad_row_fn bad_row, void *user,
                              struct fc_cache_health *health, char *msg, size_t size)
{
    memset(health, 0, sizeof *health);
    enum fc_status status;
    sqlite3 *db = fc_cache_sqlite(cache, 0, &status, msg, size);
    if (!db)
        return status;
    quick_check(db, health->damage, sizeof health->damage);
    struct row_list rows = {NULL, 0, 0};
    if (find_rows(db, &rows, health->damage, sizeof health->damage) != SQLITE_OK)
        status = FC_ERR_NOMEM;
    for (size_t i = 0; status == FC_OK && i < rows.count; i++)
        check_row(db, &rows.items[i], health, bad_row, user);
    free(rows.items);
    long long tuning = -1;
    if (count_rows(db, "SELECT count(*) FROM tuning_results", &tuning) != SQLITE_OK && !health->damage[0])
        snprintf(health->damage, sizeof health->damage, "%s", sqlite3_errmsg(db));
    health->tuning_results = tuning;
    return status;
}

enum fc_status fc_cache_count(struct fc_cache *cache, long long *kernels, long long *bytes, long long *tuning_results,
                              char *msg, size_t size)
{
    enum fc_status status;
    sqlite3 *db = fc_cache_sqlite(cache, 0, &status, msg, size);
    if (db && (count_rows(db, "SELECT count(*) FROM cubins", kernels) != SQLITE_OK ||
               count_rows(db, "SELECT coalesce(sum(length(cubin)), 0) FROM cubins", bytes) != SQLITE_OK ||
               count_rows(db, "SELECT count(*) FROM tuning_results", tuning_results) != SQLITE_OK)) {
        snprintf(msg, size, "kernel cache %s: counting: %s", fc_cache_path(cache), sqlite3_errmsg(db));
        status = FC_ERR_CACHE;
    }
    return status;
}

/* Whether an open cache file has damage that moving it aside would cure. */
static int has_damage(struct fc_cache *cache, char *msg, size_t size)
{
    struct fc_cache_health health;
    if (fc_cache_check(cache, NULL, NULL, &health, msg, size) != FC_OK)
        return 0;
    if (health.damage[0] || health.unreadable)
        snprintf(msg, size, "%s", health.damage[0] ? health.damage : "rows cannot be read");
    return health.damage[0] || health.unreadable;
}

struct salvage {
    struct fc_cache *into;
    long long copied;
};

static int copy_tuning_row(void *user, const struct fc_tuning_row *row)
{
    struct salvage *s = user;
    char ignored[256];
    s->copied += fc_tuning_put(s->into, row, ignored, sizeof ignored) == FC_OK;
    return 0;
}

/* Copies the tuning results still readable from the damaged file into the fresh one: minutes of
 * GPU time each, where a cubin only costs a compile. Stops at the first unreadable row. */
static long long salvage_tuning_results(const char *damaged, struct fc_cache *fresh)
{
    struct fc_cache *old = NULL;
    char warning[2 * PATH_MAX], ignored[2 * PATH_MAX];
    struct salvage s = {fresh, 0};
    if (fc_cache_open_usable(damaged, &old, NULL, warning, sizeof warning) == FC_OK && old)
        fc_tuning_foreach(old, 0, copy_tuning_row, &s, ignored, sizeof ignored);
    fc_cache_close(old);
    return s.copied;
}

enum fc_status fc_cache_repair(const char *path, char *moved_to, size_t moved_size, long long *recovered,
                               char *msg, size_t size)
{
    moved_to[0] = 0;
    *recovered = 0;
    char default_path[PATH_MAX], why[2 * PATH_MAX];
    if ((!path || !*path) && fc_cache_default_path(default_path, sizeof default_path) == 0)
        path = default_path;
    struct fc_cache *cache = NULL;
    enum fc_cache_state state;
    enum fc_status status = fc_cache_open_usable(path, &cache, &state, msg, size);
    if (status != FC_OK)
        return status;
    int damaged = state == FC_CACHE_DAMAGED;
    if (state == FC_CACHE_READ_WRITE)
        damaged = has_damage(cache, why, sizeof why);
    fc_cache_close(cache);
    if (state == FC_CACHE_READ_ONLY || state == FC_CACHE_UNUSABLE) {
        if (state == FC_CACHE_READ_ONLY && !*msg)
            snprintf(msg, size, "kernel cache %s is a read-only system layer: its owner repairs it", path);
        return FC_ERR_CACHE;
    }
    if (!damaged)
        return FC_OK;
    if (fc_cache_move_aside(path, moved_to, moved_size) != 0) {
        snprintf(msg, size, "kernel cache %s is damaged but cannot be moved aside: %s", path, strerror(errno));
        return FC_ERR_CACHE;
    }
    status = fc_cache_open(path, &cache, msg, size);
    if (status == FC_OK)
        *recovered = salvage_tuning_results(moved_to, cache);
    fc_cache_close(cache);
    return status;
}
