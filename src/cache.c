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

/* Why a connection could not be made, which decides what fc_cache_open_usable falls back to and
 * what its warning suggests. */
enum open_failure {
    FAILED_OTHER = 0,
    FAILED_NOT_WRITABLE,   /* permissions, a read-only file system: reading may still work */
    FAILED_DAMAGED,        /* not a database, or a malformed one: `fcjit cache repair` */
    FAILED_NEWER,          /* a newer FlashCore's schema: not touched */
    FAILED_UNTRUSTED,      /* fc_cache_file_trust refused it: not read at all */
    FAILED_NOT_A_FILE,     /* a folder or a device at the path */
};

#define REASON_MAX 1024

struct fc_cache {
    sqlite3 *db;
    pid_t pid;                   /* the process db was opened in */
    int read_only;               /* nothing is written: a system layer, or a file this user cannot write */
    int immutable;               /* read only, without a -shm file (a folder this user cannot write) */
    enum open_failure failure;   /* why the last connect failed */
    char reason[REASON_MAX];     /* and in what words (SQLite's or the system's) */
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

static enum fc_status db_fail(sqlite3 *db, const char *what, const char *path, char *msg, size_t size)
{
    snprintf(msg, size, "kernel cache %s: %s: %s", path, what, db ? sqlite3_errmsg(db) : "out of memory");
    return FC_ERR_CACHE;
}

/* Records why a connection failed, for the fallbacks and the warning, and words it in msg. */
static enum fc_status connect_fail(struct fc_cache *cache, const char *what, char *msg, size_t size)
{
    const int rc = cache->db ? sqlite3_extended_errcode(cache->db) : SQLITE_NOMEM;
    switch (rc & 0xff) {
    case SQLITE_READONLY: case SQLITE_CANTOPEN: case SQLITE_PERM: case SQLITE_AUTH:
        cache->failure = FAILED_NOT_WRITABLE;
        break;
    case SQLITE_NOTADB: case SQLITE_CORRUPT: case SQLITE_IOERR: case SQLITE_FORMAT:
        cache->failure = FAILED_DAMAGED;
        break;
    default:
        cache->failure = FAILED_OTHER;
    }
    snprintf(cache->reason, sizeof cache->reason, "%s", cache->db ? sqlite3_errmsg(cache->db) : "out of memory");
    return db_fail(cache->db, what, cache->path, msg, size);
}

/* The same for a failure of the system (errno) before SQLite was involved. */
static enum fc_status system_fail(struct fc_cache *cache, const char *what, char *msg, size_t size)
{
    const int error = errno;
    cache->failure = error == EACCES || error == EPERM || error == EROFS ? FAILED_NOT_WRITABLE : FAILED_OTHER;
    snprintf(cache->reason, sizeof cache->reason, "%s: %s", what, strerror(error));
    snprintf(msg, size, "kernel cache %s: %s", cache->path, cache->reason);
    return FC_ERR_CACHE;
}

static void drop_connection(struct fc_cache *cache)
{
    sqlite3_close(cache->db);   /* never leave a half-set-up connection behind */
    cache->db = NULL;
}

/* PRAGMA user_version: the file's schema version (0: none yet). Returns an SQLite code. */
static int read_schema_version(sqlite3 *db, int *version)
{
    sqlite3_stmt *stmt = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        *version = sqlite3_column_int(stmt, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(stmt);
    return rc;
}

static enum fc_status refuse_newer(struct fc_cache *cache, int version, char *msg, size_t size)
{
    cache->failure = FAILED_NEWER;
    snprintf(cache->reason, sizeof cache->reason, "schema version %d, newer than this FlashCore's %d", version,
             FC_CACHE_SCHEMA_VERSION);
    snprintf(msg, size, "kernel cache %s has %s: use a newer FlashCore or another cache file (FC_TUNING_DB)",
             cache->path, cache->reason);
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
        return connect_fail(cache, "could not lock for the schema", msg, size);
    int version = -1;
    enum fc_status status = FC_OK;
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", FC_CACHE_SCHEMA_VERSION);
    if (read_schema_version(cache->db, &version) != SQLITE_OK)
        status = connect_fail(cache, "cannot read its schema version", msg, size);
    else if (version > FC_CACHE_SCHEMA_VERSION)
        status = refuse_newer(cache, version, msg, size);
    else if (version != FC_CACHE_SCHEMA_VERSION &&
             (sqlite3_exec(cache->db, schema->text, NULL, NULL, NULL) != SQLITE_OK ||
              sqlite3_exec(cache->db, pragma, NULL, NULL, NULL) != SQLITE_OK))
        status = connect_fail(cache, "could not create the schema", msg, size);
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

static enum fc_status connect_read_write(struct fc_cache *cache, char *msg, size_t size)
{
    if (fc_cache_make_folder(cache->path))
        return system_fail(cache, "cannot create its folder", msg, size);
    if (fc_cache_create_file(cache->path))
        return system_fail(cache, "cannot create it", msg, size);
    enum fc_status status = FC_OK;
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
    if (sqlite3_open_v2(cache->path, &cache->db, flags, NULL) != SQLITE_OK) {
        status = connect_fail(cache, "cannot open", msg, size);
    } else if (sqlite3_db_readonly(cache->db, "main") == 1) {   /* SQLite's quiet fallback */
        errno = EACCES;
        status = system_fail(cache, "cannot write it", msg, size);
    } else {
        sqlite3_busy_timeout(cache->db, BUSY_TIMEOUT_MS);
        status = enable_wal(cache->db) != SQLITE_OK ? connect_fail(cache, "cannot set it up (WAL)", msg, size)
                                                    : apply_schema(cache, msg, size);
    }
    if (status != FC_OK)
        drop_connection(cache);
    return status;
}

/* "file:" URI of path with one query parameter, %, ? and # escaped; -1 if it does not fit. */
static int file_uri(const char *path, const char *parameter, char *out, size_t size)
{
    while (path[0] == '/' && path[1] == '/')   /* "file://x" would name a host */
        path++;
    size_t n = (size_t)snprintf(out, size, "file:");
    for (const char *p = path; *p && n + 4 < size; p++)
        n += (size_t)(strchr("%?#", *p) ? snprintf(out + n, size - n, "%%%02X", (unsigned char)*p)
                                         : snprintf(out + n, size - n, "%c", *p));
    return snprintf(out + n, size - n, "?%s", parameter) >= (int)(size - n) ? -1 : 0;
}

/* A connection that only reads. NOTE: reading a file in WAL mode takes its -shm file, which a
 * folder this user cannot write cannot give; then the file is opened immutable: read without
 * locks, on the promise that it does not change while open (an admin replaces a system layer,
 * rather than writing into it, while it is used; a torn read fails a checksum: a miss). */
static enum fc_status connect_read_only(struct fc_cache *cache, char *msg, size_t size)
{
    char uri[3 * PATH_MAX + 32];
    if (file_uri(cache->path, cache->immutable ? "immutable=1" : "mode=ro", uri, sizeof uri)) {
        errno = ENAMETOOLONG;
        return system_fail(cache, "cannot name it", msg, size);
    }
    enum fc_status status = FC_OK;
    int version = -1;
    if (sqlite3_open_v2(uri, &cache->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX, NULL) !=
        SQLITE_OK) {
        status = connect_fail(cache, "cannot open", msg, size);
    } else {
        sqlite3_busy_timeout(cache->db, BUSY_TIMEOUT_MS);
        if (read_schema_version(cache->db, &version) != SQLITE_OK)
            status = connect_fail(cache, "cannot read it", msg, size);
        else if (version > FC_CACHE_SCHEMA_VERSION)
            status = refuse_newer(cache, version, msg, size);
        else if (version < FC_CACHE_SCHEMA_VERSION) {
            errno = EACCES;
            status = system_fail(cache, "has no FlashCore tables yet and cannot be written to add them", msg, size);
        }
    }
    if (status != FC_OK)
        drop_connection(cache);
    if (status != FC_OK && !cache->immutable && cache->failure == FAILED_NOT_WRITABLE) {
        cache->immutable = 1;
        return connect_read_only(cache, msg, size);
    }
    return status;
}

static enum fc_status connect(struct fc_cache *cache, char *msg, size_t size)
{
    cache->failure = FAILED_OTHER;
    cache->reason[0] = 0;
    enum fc_status status = cache->read_only ? connect_read_only(cache, msg, size)
                                             : connect_read_write(cache, msg, size);
    if (status == FC_OK)
        cache->pid = getpid();
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

/* Names the handle's files and judges them before SQLite opens anything. */
static enum fc_status prepare(struct fc_cache *cache, const char *path, char *msg, size_t size)
{
    if (snprintf(cache->path, sizeof cache->path, "%s", path) >= (int)sizeof cache->path ||
        snprintf(cache->lock_dir, sizeof cache->lock_dir, "%s.locks", path) >= (int)sizeof cache->lock_dir) {
        errno = ENAMETOOLONG;
        return system_fail(cache, "its path is too long", msg, size);
    }
    fc_cache_make_folder(path);   /* a folder made now is private, and judged as such */
    switch (fc_cache_file_trust(path, cache->reason, sizeof cache->reason)) {
    case FC_TRUST_REFUSED:
        cache->failure = FAILED_UNTRUSTED;
        snprintf(msg, size, "kernel cache %s is not loaded from: %s", path, cache->reason);
        return FC_ERR_CACHE;
    case FC_TRUST_SYSTEM_LAYER:
        cache->read_only = 1;
        break;
    case FC_TRUST_OWN:
        break;
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        cache->failure = FAILED_NOT_A_FILE;
        snprintf(cache->reason, sizeof cache->reason, "%s", S_ISDIR(st.st_mode) ? "a folder" : "not a regular file");
        snprintf(msg, size, "kernel cache %s is %s, not a cache file", path, cache->reason);
        return FC_ERR_CACHE;
    }
    return FC_OK;
}

/* The one warning of a cache that is read only or not used: the file, what is wrong, the fix. */
static void degraded_warning(const struct fc_cache *cache, int reads, char *warning, size_t size)
{
    static const char *const LEAD = "kernel cache";
    static const char *const NOT_USED = "compiled kernels are kept in memory only";
    static const char *const MAKE_WRITABLE =
        "fix: make it and its folder writable by this user, or set FC_TUNING_DB to a file of your own";
    const char *path = cache->path, *reason = cache->reason;
    switch (reads ? FAILED_NOT_WRITABLE : cache->failure) {
    case FAILED_NOT_WRITABLE:
        if (reads)
            snprintf(warning, size, "%s %s cannot be written (%s): kernels are read from it, but new ones are kept in "
                     "memory only; %s", LEAD, path, reason, MAKE_WRITABLE);
        else
            snprintf(warning, size, "%s %s cannot be used (%s): %s; %s", LEAD, path, reason, NOT_USED, MAKE_WRITABLE);
        break;
    case FAILED_DAMAGED:
        snprintf(warning, size, "%s %s is damaged (%s): %s; fix: `fcjit cache repair` moves it aside and starts a "
                 "fresh one", LEAD, path, reason, NOT_USED);
        break;
    case FAILED_NEWER:
        snprintf(warning, size, "%s %s has %s: %s; fix: use a newer FlashCore, or set FC_TUNING_DB to another file",
                 LEAD, path, reason, NOT_USED);
        break;
    case FAILED_UNTRUSTED:   /* the reason ends with its fix */
        snprintf(warning, size, "%s %s is not loaded from (%s): %s", LEAD, path, NOT_USED, reason);
        break;
    case FAILED_NOT_A_FILE:
        snprintf(warning, size, "%s %s is %s: %s; fix: move it away, or set FC_TUNING_DB to a file", LEAD, path, reason,
                 NOT_USED);
        break;
    case FAILED_OTHER:
        snprintf(warning, size, "%s %s cannot be used (%s): %s; fix: set FC_TUNING_DB to a file this user can "
                 "create and write", LEAD, path, reason, NOT_USED);
        break;
    }
}

enum fc_status fc_cache_open_usable(const char *path, struct fc_cache **out, enum fc_cache_state *state,
                                    char *warning, size_t size)
{
    *out = NULL;
    warning[0] = 0;
    enum fc_cache_state ignored;
    state = state ? state : &ignored;
    *state = FC_CACHE_UNUSABLE;
    char default_path[PATH_MAX], msg[2 * PATH_MAX + REASON_MAX];
    if (!path || !*path) {
        if (fc_cache_default_path(default_path, sizeof default_path)) {
            snprintf(warning, size, "no kernel cache file: FC_TUNING_DB, XDG_CACHE_HOME and HOME are all unset, so "
                     "compiled kernels are kept in memory only; fix: set HOME, or FC_TUNING_DB to a file of your own");
            return FC_OK;
        }
        path = default_path;
    }
    struct fc_cache *cache = calloc(1, sizeof *cache);
    if (!cache)
        return FC_ERR_NOMEM;
    enum fc_status status = prepare(cache, path, msg, sizeof msg);
    if (status == FC_OK)
        status = connect(cache, msg, sizeof msg);
    int reads_only = 0;
    struct stat st;
    if (status != FC_OK && !cache->read_only && cache->failure == FAILED_NOT_WRITABLE && stat(path, &st) == 0) {
        char why_not_written[REASON_MAX];
        snprintf(why_not_written, sizeof why_not_written, "%s", cache->reason);
        cache->read_only = 1;
        if ((status = connect(cache, msg, sizeof msg)) == FC_OK) {
            reads_only = 1;
            snprintf(cache->reason, sizeof cache->reason, "%s", why_not_written);
        }
    }
    if (status == FC_ERR_NOMEM || status == FC_ERR_INTERNAL) {
        fc_cache_close(cache);
        snprintf(warning, size, "%s", msg);
        return status;
    }
    if (status != FC_OK || reads_only)
        degraded_warning(cache, reads_only, warning, size);
    if (status != FC_OK) {
        *state = cache->failure == FAILED_DAMAGED ? FC_CACHE_DAMAGED : FC_CACHE_UNUSABLE;
        fc_cache_close(cache);
        return FC_OK;
    }
    *state = cache->read_only ? FC_CACHE_READ_ONLY : FC_CACHE_READ_WRITE;
    *out = cache;
    return FC_OK;
}

enum fc_status fc_cache_open(const char *path, struct fc_cache **out, char *msg, size_t size)
{
    enum fc_status status = fc_cache_open_usable(path, out, NULL, msg, size);
    if (status == FC_OK && *out && !fc_cache_writable(*out)) {
        if (!*msg)
            snprintf(msg, size, "kernel cache %s is a read-only system layer (root's): kernels are read from it only",
                     fc_cache_path(*out));
        fc_cache_close(*out);
        *out = NULL;
    }
    return status == FC_OK && !*out ? FC_ERR_CACHE : status;
}

void fc_cache_close(struct fc_cache *cache)
{
    if (!cache)
        return;
    if (cache->db && cache->pid == getpid())
        sqlite3_close(cache->db);
    free(cache);
}

int fc_cache_writable(const struct fc_cache *cache)
{
    return cache && !cache->read_only;
}

/* Refuses a write to a read-only cache before SQLite is asked. */
static enum fc_status require_writable(const struct fc_cache *cache, char *msg, size_t size)
{
    if (!cache->read_only)
        return FC_OK;
    snprintf(msg, size, "kernel cache %s is read only: nothing is written to it", cache->path);
    return FC_ERR_CACHE;
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
    if (*corrupt) {   /* a bad row is a miss: dropped (if it can be) so that the recompile replaces it */
        char bad_key[FC_KEY_HEX], ignored[256];
        snprintf(bad_key, sizeof bad_key, "%s", out->key);
        memset(out, 0, sizeof *out);
        if (!cache->read_only)
            fc_cache_delete(cache, bad_key, ignored, sizeof ignored);
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
    enum fc_status status = require_writable(cache, msg, size);
    if (status == FC_OK)
        status = connection(cache, msg, size);
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
    enum fc_status status = require_writable(cache, msg, size);
    if (status == FC_OK)
        status = connection(cache, msg, size);
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
    DIR *dir = status == FC_OK ? opendir(cache->lock_dir) : NULL;
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
    if (cache->read_only || (mkdir(cache->lock_dir, 0700) && errno != EEXIST))
        return -1;
    snprintf(path, sizeof path, "%s/%s.lock", cache->lock_dir, key);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
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
    *status = for_writing ? require_writable(cache, msg, size) : FC_OK;
    if (*status == FC_OK)
        *status = connection(cache, msg, size);
    return *status == FC_OK ? cache->db : NULL;
}
