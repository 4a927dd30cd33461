/* The SQLite kernel store: WAL, busy timeout, IMMEDIATE writers, a checksum on every cubin.
 *
 * NOTE: a connection is never used across fork(): each operation checks the pid it was opened in
 * and, in a child, abandons the inherited handle (closing it could release the parent's locks)
 * and opens its own. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>
#include <sqlite3.h>
#include <xxhash.h>

#include "cache_internal.h"
#include "embedded_internal.h"

#define BUSY_TIMEOUT_MS 60000   /* a writer holds the lock for one row insert: far less */
#define WAL_RETRY_MS 5

struct fc_cache {
    sqlite3 *db;
    pid_t pid;                   /* the process db was opened in */
    char path[PATH_MAX];
    char lock_dir[PATH_MAX];
};

static const char *const RECORD_COLUMNS =
    "key, source_key, name, arch, nvrtc_version, registers, smem_static, smem_dynamic, "
    "spill_stores, spill_loads, stack_bytes, compile_ms, cubin, checksum, created_at";

int fc_cache_default_path(char *out, size_t out_size)
{
    const char *env = getenv("FC_TUNING_DB");
    if (env && *env)
        return snprintf(out, out_size, "%s", env) < (int)out_size ? 0 : -1;
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && *xdg)
        return snprintf(out, out_size, "%s/flashcore/tuning.db", xdg) < (int)out_size ? 0 : -1;
    const char *home = getenv("HOME");
    if (home && *home)
        return snprintf(out, out_size, "%s/.cache/flashcore/tuning.db", home) < (int)out_size ? 0 : -1;
    return -1;
}

void fc_checksum_hex(const void *data, size_t size, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)XXH3_64bits(data, size));
}

/* mkdir -p of path's parent folder. */
static int make_parent_dirs(const char *path)
{
    char buffer[PATH_MAX];
    snprintf(buffer, sizeof buffer, "%s", path);
    char *slash = strrchr(buffer, '/');
    if (!slash || slash == buffer)
        return 0;
    *slash = 0;
    for (char *p = buffer + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(buffer, 0755) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    return mkdir(buffer, 0755) && errno != EEXIST ? -1 : 0;
}

static enum fc_status db_fail(sqlite3 *db, const char *what, const char *path, char *msg, size_t size)
{
    snprintf(msg, size, "kernel cache %s: %s: %s", path, what, db ? sqlite3_errmsg(db) : "out of memory");
    return FC_ERR_CACHE;
}

/* Applies the embedded schema to a new file; refuses a file from a newer FlashCore. */
static enum fc_status apply_schema(struct fc_cache *cache, char *msg, size_t size)
{
    const struct fc_embedded_file *schema = fc_embedded_find(fc_embedded_data, "schema.sql");
    if (!schema) {
        snprintf(msg, size, "internal: schema.sql is not embedded");
        return FC_ERR_INTERNAL;
    }
    if (sqlite3_exec(cache->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(cache->db, "could not lock for the schema", cache->path, msg, size);
    sqlite3_stmt *stmt = NULL;
    int version = -1;
    if (sqlite3_prepare_v2(cache->db, "PRAGMA user_version", -1, &stmt, NULL) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW)
        version = sqlite3_column_int(stmt, 0);
    sqlite3_finalize(stmt);
    enum fc_status status = FC_OK;
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", FC_CACHE_SCHEMA_VERSION);
    if (version > FC_CACHE_SCHEMA_VERSION) {
        snprintf(msg, size, "kernel cache %s has schema version %d, newer than this FlashCore's %d: "
                 "use a newer FlashCore or another cache file (FC_TUNING_DB)",
                 cache->path, version, FC_CACHE_SCHEMA_VERSION);
        status = FC_ERR_CACHE;
    } else if (version != FC_CACHE_SCHEMA_VERSION &&
               (sqlite3_exec(cache->db, schema->text, NULL, NULL, NULL) != SQLITE_OK ||
                sqlite3_exec(cache->db, pragma, NULL, NULL, NULL) != SQLITE_OK)) {
        status = db_fail(cache->db, "could not create the schema", cache->path, msg, size);
    }
    sqlite3_exec(cache->db, status == FC_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
    return status;
}

/* Switches the file to WAL. NOTE: on a fresh file the switch must write the header, and SQLite
 * answers SQLITE_BUSY at once, without the busy handler, when another process is doing the
 * same (it holds SHARED and may not wait for EXCLUSIVE); so we wait and retry here. */
static int enable_wal(sqlite3 *db)
{
    int rc = SQLITE_BUSY;
    for (int waited_ms = 0; waited_ms <= BUSY_TIMEOUT_MS; waited_ms += WAL_RETRY_MS) {
        rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
            break;
        sqlite3_sleep(WAL_RETRY_MS);
    }
    return rc == SQLITE_OK ? sqlite3_exec(db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) : rc;
}

static enum fc_status connect(struct fc_cache *cache, char *msg, size_t size)
{
    if (make_parent_dirs(cache->path)) {
        snprintf(msg, size, "kernel cache %s: cannot create its folder: %s", cache->path, strerror(errno));
        return FC_ERR_CACHE;
    }
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
    if (sqlite3_open_v2(cache->path, &cache->db, flags, NULL) != SQLITE_OK) {
        enum fc_status status = db_fail(cache->db, "cannot open", cache->path, msg, size);
        sqlite3_close(cache->db);
        cache->db = NULL;
        return status;
    }
    cache->pid = getpid();
    sqlite3_busy_timeout(cache->db, BUSY_TIMEOUT_MS);
    enum fc_status status = enable_wal(cache->db) != SQLITE_OK
        ? db_fail(cache->db, "cannot enable WAL", cache->path, msg, size)
        : apply_schema(cache, msg, size);
    if (status != FC_OK) {   /* never leave a half-set-up connection behind */
        sqlite3_close(cache->db);
        cache->db = NULL;
    }
    return status;
}

/* The connection of this process, reopened after a fork(). */
static enum fc_status connection(struct fc_cache *cache, char *msg, size_t size)
{
    if (cache->db && cache->pid == getpid())
        return FC_OK;
    cache->db = NULL;   /* inherited from the parent: abandoned, never closed here */
    return connect(cache, msg, size);
}

enum fc_status fc_cache_open(const char *path, struct fc_cache **out, char *msg, size_t size)
{
    *out = NULL;
    struct fc_cache *cache = calloc(1, sizeof *cache);
    if (!cache)
        return FC_ERR_NOMEM;
    if (snprintf(cache->path, sizeof cache->path, "%s", path) >= (int)sizeof cache->path ||
        snprintf(cache->lock_dir, sizeof cache->lock_dir, "%s.locks", path) >= (int)sizeof cache->lock_dir) {
        snprintf(msg, size, "kernel cache path is too long: %s", path);
        free(cache);
        return FC_ERR_CACHE;
    }
    enum fc_status status = connect(cache, msg, size);
    if (status != FC_OK) {
        fc_cache_close(cache);
        return status;
    }
    *out = cache;
    return FC_OK;
}

void fc_cache_close(struct fc_cache *cache)
{
    if (!cache)
        return;
    if (cache->db && cache->pid == getpid())
        sqlite3_close(cache->db);
    free(cache);
}

const char *fc_cache_path(const struct fc_cache *cache)
{
    return cache->path;
}

static void copy_text(char *out, size_t size, sqlite3_stmt *stmt, int column)
{
    const unsigned char *text = sqlite3_column_text(stmt, column);
    snprintf(out, size, "%s", text ? (const char *)text : "");
}

/* Fills record from a row of RECORD_COLUMNS; the cubin is copied if with_blob. Returns whether
 * the stored checksum matches the blob. */
static int read_record(sqlite3_stmt *stmt, struct fc_cubin_record *r, int with_blob)
{
    memset(r, 0, sizeof *r);
    copy_text(r->key, sizeof r->key, stmt, 0);
    copy_text(r->source_key, sizeof r->source_key, stmt, 1);
    copy_text(r->name, sizeof r->name, stmt, 2);
    copy_text(r->arch, sizeof r->arch, stmt, 3);
    copy_text(r->nvrtc_version, sizeof r->nvrtc_version, stmt, 4);
    int *ints[] = {&r->registers, &r->smem_static, &r->smem_dynamic, &r->spill_stores,
                   &r->spill_loads, &r->stack_bytes};
    for (int i = 0; i < 6; i++)
        *ints[i] = sqlite3_column_int(stmt, 5 + i);
    r->compile_ms = sqlite3_column_double(stmt, 11);
    const void *blob = sqlite3_column_blob(stmt, 12);
    r->cubin_size = (size_t)sqlite3_column_bytes(stmt, 12);
    char stored[17], actual[17];
    copy_text(stored, sizeof stored, stmt, 13);
    copy_text(r->created_at, sizeof r->created_at, stmt, 14);
    fc_checksum_hex(blob, r->cubin_size, actual);
    int ok = blob && r->cubin_size > 0 && strcmp(stored, actual) == 0;
    if (with_blob && ok) {
        r->cubin = malloc(r->cubin_size);
        if (r->cubin)
            memcpy(r->cubin, blob, r->cubin_size);
    }
    return ok;
}

enum fc_status fc_cache_get(struct fc_cache *cache, const char *key, const char *source_key,
                            struct fc_cubin_record *out, int *found, int *corrupt, char *msg, size_t size)
{
    *found = 0;
    *corrupt = 0;
    enum fc_status status = connection(cache, msg, size);
    if (status != FC_OK)
        return status;
    char sql[512];
    /* created_at has whole seconds: rowid (new on every REPLACE) orders rows within one */
    snprintf(sql, sizeof sql, "SELECT %s FROM cubins WHERE %s ORDER BY created_at DESC, rowid DESC LIMIT 1",
             RECORD_COLUMNS, key ? "key = ?1" : "source_key = ?1");
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(cache->db, sql, -1, &stmt, NULL) != SQLITE_OK)
        return db_fail(cache->db, "lookup", cache->path, msg, size);
    sqlite3_bind_text(stmt, 1, key ? key : source_key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        if (read_record(stmt, out, 1)) {
            *found = 1;
            status = out->cubin ? FC_OK : FC_ERR_NOMEM;
        } else {
            *corrupt = 1;
        }
    } else if (rc != SQLITE_DONE) {
        status = db_fail(cache->db, "lookup", cache->path, msg, size);
    }
    sqlite3_finalize(stmt);
    if (*corrupt) {   /* a bad row is a miss: drop it so that the recompile replaces it */
        char bad_key[FC_KEY_HEX];
        snprintf(bad_key, sizeof bad_key, "%s", out->key);
        memset(out, 0, sizeof *out);
        status = fc_cache_delete(cache, bad_key, msg, size);
    }
    return status;
}

static void bind_record(sqlite3_stmt *stmt, const struct fc_cubin_record *r, const char *checksum)
{
    const char *texts[] = {r->key, r->source_key, r->name, r->arch, r->nvrtc_version};
    for (int i = 0; i < 5; i++)
        sqlite3_bind_text(stmt, 1 + i, texts[i], -1, SQLITE_STATIC);
    const int ints[] = {r->registers, r->smem_static, r->smem_dynamic, r->spill_stores,
                        r->spill_loads, r->stack_bytes};
    for (int i = 0; i < 6; i++)
        sqlite3_bind_int(stmt, 6 + i, ints[i]);
    sqlite3_bind_double(stmt, 12, r->compile_ms);
    sqlite3_bind_blob64(stmt, 13, r->cubin, r->cubin_size, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 14, checksum, -1, SQLITE_STATIC);
}

enum fc_status fc_cache_put(struct fc_cache *cache, const struct fc_cubin_record *record,
                            char *msg, size_t size)
{
    enum fc_status status = connection(cache, msg, size);
    if (status != FC_OK)
        return status;
    char checksum[17];
    fc_checksum_hex(record->cubin, record->cubin_size, checksum);
    if (sqlite3_exec(cache->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(cache->db, "cannot lock for writing", cache->path, msg, size);
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(cache->db,
        "INSERT OR REPLACE INTO cubins (key, source_key, name, arch, nvrtc_version, registers, "
        "smem_static, smem_dynamic, spill_stores, spill_loads, stack_bytes, compile_ms, cubin, "
        "checksum) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        -1, &stmt, NULL);
    if (rc == SQLITE_OK) {
        bind_record(stmt, record, checksum);
        rc = sqlite3_step(stmt) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    if (rc != SQLITE_OK)
        status = db_fail(cache->db, "cannot store a kernel", cache->path, msg, size);
    sqlite3_finalize(stmt);
    if (sqlite3_exec(cache->db, status == FC_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK &&
        status == FC_OK)
        status = db_fail(cache->db, "cannot commit", cache->path, msg, size);
    return status;
}

enum fc_status fc_cache_foreach(struct fc_cache *cache, fc_cache_visit_fn visit, void *user,
                                char *msg, size_t size)
{
    enum fc_status status = connection(cache, msg, size);
    if (status != FC_OK)
        return status;
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT %s FROM cubins ORDER BY created_at, name", RECORD_COLUMNS);
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(cache->db, sql, -1, &stmt, NULL) != SQLITE_OK)
        return db_fail(cache->db, "listing", cache->path, msg, size);
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        struct fc_cubin_record record;
        int ok = read_record(stmt, &record, 0);
        if (visit(user, &record, ok))
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        status = db_fail(cache->db, "listing", cache->path, msg, size);
    sqlite3_finalize(stmt);
    return status;
}

static enum fc_status exec_on_key(struct fc_cache *cache, const char *sql, const char *key,
                                  int *changes, char *msg, size_t size)
{
    enum fc_status status = connection(cache, msg, size);
    if (status != FC_OK)
        return status;
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(cache->db, sql, -1, &stmt, NULL) != SQLITE_OK)
        return db_fail(cache->db, "delete", cache->path, msg, size);
    if (key)
        sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(stmt) != SQLITE_DONE)
        status = db_fail(cache->db, "delete", cache->path, msg, size);
    sqlite3_finalize(stmt);
    if (changes)
        *changes = sqlite3_changes(cache->db);
    return status;
}

enum fc_status fc_cache_delete(struct fc_cache *cache, const char *key, char *msg, size_t size)
{
    return exec_on_key(cache, "DELETE FROM cubins WHERE key = ?1", key, NULL, msg, size);
}

enum fc_status fc_cache_clear(struct fc_cache *cache, int *deleted, char *msg, size_t size)
{
    enum fc_status status = exec_on_key(cache, "DELETE FROM cubins", NULL, deleted, msg, size);
    DIR *dir = opendir(cache->lock_dir);
    if (dir) {
        struct dirent *entry;
        char path[PATH_MAX + 256];
        while ((entry = readdir(dir)))
            if (strstr(entry->d_name, ".lock")) {
                snprintf(path, sizeof path, "%s/%s", cache->lock_dir, entry->d_name);
                unlink(path);
            }
        closedir(dir);
    }
    return status;
}

int fc_cache_lock(struct fc_cache *cache, const char *key)
{
    char path[PATH_MAX + 64];
    if (mkdir(cache->lock_dir, 0755) && errno != EEXIST)
        return -1;
    snprintf(path, sizeof path, "%s/%s.lock", cache->lock_dir, key);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

void fc_cache_unlock(int lock)
{
    if (lock >= 0)
        close(lock);   /* closing the only descriptor releases the flock */
}

void fc_cubin_record_free(struct fc_cubin_record *record)
{
    free(record->cubin);
    record->cubin = NULL;
    record->cubin_size = 0;
}

struct sqlite3 *fc_cache_sqlite(struct fc_cache *cache, int for_writing, enum fc_status *status, char *msg,
                                size_t size)
{
    (void)for_writing;   /* no cache is read only yet */
    *status = connection(cache, msg, size);
    return *status == FC_OK ? cache->db : NULL;
}
