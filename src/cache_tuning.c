/* The tuning results `fcjit tune` measures, in the kernel cache's database (cache.c opens it):
 * one row per measurement, winners marked. */
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "cache_internal.h"

static enum fc_status db_fail(sqlite3 *db, const char *what, const char *path, char *msg, size_t size)
{
    snprintf(msg, size, "kernel cache %s: %s: %s", path, what, sqlite3_errmsg(db));
    return FC_ERR_CACHE;
}

static void copy_text(char *out, size_t size, sqlite3_stmt *stmt, int column)
{
    const unsigned char *text = sqlite3_column_text(stmt, column);
    snprintf(out, size, "%s", text ? (const char *)text : "");
}

static const char *const TUNING_COLUMNS =
    "gpu_name, sm_count, driver, kernel_set, bucket, variant, median_ms, tflops, passed_check, winner, "
    "measured_at";

/* Runs one write statement with its parameters bound by bind, in an IMMEDIATE transaction. */
static enum fc_status tuning_write(struct fc_cache *cache, const char *sql, void (*bind)(sqlite3_stmt *, const void *),
                                   const void *data, char *msg, size_t size)
{
    enum fc_status status;
    sqlite3 *db = fc_cache_sqlite(cache, 1, &status, msg, size);
    if (!db)
        return status;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(db, "cannot lock for writing", fc_cache_path(cache), msg, size);
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, NULL);
    if (rc == SQLITE_OK) {
        bind(stmt, data);
        rc = sqlite3_step(stmt) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    if (rc != SQLITE_OK)
        status = db_fail(db, "cannot store a tuning result", fc_cache_path(cache), msg, size);
    sqlite3_finalize(stmt);
    if (sqlite3_exec(db, status == FC_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK &&
        status == FC_OK)
        status = db_fail(db, "cannot commit", fc_cache_path(cache), msg, size);
    return status;
}

static void bind_identity(sqlite3_stmt *stmt, const struct fc_tuning_identity *id)
{
    sqlite3_bind_text(stmt, 1, id->gpu_name, -1, SQLITE_STATIC);
    sqlite3_bind_int(stmt, 2, id->sm_count);
    sqlite3_bind_text(stmt, 3, id->driver, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 4, id->kernel_set, -1, SQLITE_STATIC);
}

static void bind_row(sqlite3_stmt *stmt, const void *data)
{
    const struct fc_tuning_row *row = data;
    bind_identity(stmt, &row->id);
    sqlite3_bind_text(stmt, 5, row->bucket, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 6, row->variant, -1, SQLITE_STATIC);
    sqlite3_bind_double(stmt, 7, row->median_ms);
    sqlite3_bind_double(stmt, 8, row->tflops);
    sqlite3_bind_int(stmt, 9, row->passed_check);
    sqlite3_bind_int(stmt, 10, row->winner);
    if (row->measured_at[0])
        sqlite3_bind_text(stmt, 11, row->measured_at, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(stmt, 11);
}

enum fc_status fc_tuning_put(struct fc_cache *cache, const struct fc_tuning_row *row, char *msg, size_t size)
{
    return tuning_write(cache,
        "INSERT OR REPLACE INTO tuning_results (gpu_name, sm_count, driver, kernel_set, bucket, variant, "
        "median_ms, tflops, passed_check, winner, measured_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
        "coalesce(?11, strftime('%Y-%m-%dT%H:%M:%SZ', 'now')))", bind_row, row, msg, size);
}

/* The rows of one bucket on one identity, as bind_bucket binds them. */
#define BUCKET_ROWS "gpu_name = ?1 AND sm_count = ?2 AND driver = ?3 AND kernel_set = ?4 AND bucket = ?5"

struct bucket_of {
    const struct fc_tuning_identity *id;
    const char *bucket;
};

static void bind_bucket(sqlite3_stmt *stmt, const void *data)
{
    const struct bucket_of *b = data;
    bind_identity(stmt, b->id);
    sqlite3_bind_text(stmt, 5, b->bucket, -1, SQLITE_STATIC);
}

struct winner_rule {
    struct bucket_of bucket;
    const char *incumbent;
    double margin;
};

static void bind_winner_rule(sqlite3_stmt *stmt, const void *data)
{
    const struct winner_rule *w = data;
    bind_bucket(stmt, &w->bucket);
    sqlite3_bind_text(stmt, 6, w->incumbent ? w->incumbent : "", -1, SQLITE_STATIC);
    sqlite3_bind_double(stmt, 7, 1. + w->margin);
}

enum fc_status fc_tuning_mark_winner(struct fc_cache *cache, const struct fc_tuning_identity *id, const char *bucket,
                                     const char *incumbent, double margin, char *msg, size_t size)
{
    const struct winner_rule w = {{id, bucket}, incumbent, margin > 0. ? margin : 0.};
    return tuning_write(cache,
        "UPDATE tuning_results SET winner = (id = COALESCE("
        "(SELECT id FROM tuning_results WHERE " BUCKET_ROWS " AND passed_check = 1 AND variant = ?6 AND "
        "median_ms <= ?7 * (SELECT MIN(median_ms) FROM tuning_results WHERE " BUCKET_ROWS " AND passed_check = 1)), "
        "(SELECT id FROM tuning_results WHERE " BUCKET_ROWS " AND passed_check = 1 ORDER BY median_ms LIMIT 1))) "
        "WHERE " BUCKET_ROWS, bind_winner_rule, &w, msg, size);
}

enum fc_status fc_tuning_has(struct fc_cache *cache, const struct fc_tuning_identity *id, const char *bucket,
                             const char *variant, int *found, char *msg, size_t size)
{
    *found = 0;
    enum fc_status status;
    sqlite3 *db = fc_cache_sqlite(cache, 0, &status, msg, size);
    if (!db)
        return status;
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM tuning_results WHERE " BUCKET_ROWS " AND variant = ?6", -1, &stmt,
                           NULL) !=
        SQLITE_OK)
        return db_fail(db, "reading tuning results", fc_cache_path(cache), msg, size);
    const struct bucket_of b = {id, bucket};
    bind_bucket(stmt, &b);
    sqlite3_bind_text(stmt, 6, variant, -1, SQLITE_STATIC);
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        *found = 1;
    else if (rc != SQLITE_DONE)
        status = db_fail(db, "reading tuning results", fc_cache_path(cache), msg, size);
    sqlite3_finalize(stmt);
    return status;
}

enum fc_status fc_tuning_foreach(struct fc_cache *cache, int winners_only, fc_tuning_visit_fn visit, void *user,
                                 char *msg, size_t size)
{
    enum fc_status status;
    sqlite3 *db = fc_cache_sqlite(cache, 0, &status, msg, size);
    if (!db)
        return status;
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT %s FROM tuning_results %s ORDER BY gpu_name, bucket, median_ms", TUNING_COLUMNS,
             winners_only ? "WHERE winner = 1" : "");
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK)
        return db_fail(db, "reading tuning results", fc_cache_path(cache), msg, size);
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        struct fc_tuning_row row;
        memset(&row, 0, sizeof row);
        copy_text(row.id.gpu_name, sizeof row.id.gpu_name, stmt, 0);
        row.id.sm_count = sqlite3_column_int(stmt, 1);
        copy_text(row.id.driver, sizeof row.id.driver, stmt, 2);
        copy_text(row.id.kernel_set, sizeof row.id.kernel_set, stmt, 3);
        copy_text(row.bucket, sizeof row.bucket, stmt, 4);
        copy_text(row.variant, sizeof row.variant, stmt, 5);
        row.median_ms = sqlite3_column_double(stmt, 6);
        row.tflops = sqlite3_column_double(stmt, 7);
        row.passed_check = sqlite3_column_int(stmt, 8);
        row.winner = sqlite3_column_int(stmt, 9);
        copy_text(row.measured_at, sizeof row.measured_at, stmt, 10);
        if (visit(user, &row))
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        status = db_fail(db, "reading tuning results", fc_cache_path(cache), msg, size);
    sqlite3_finalize(stmt);
    return status;
}
