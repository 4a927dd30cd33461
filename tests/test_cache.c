/* Tests of the SQLite kernel store (src/cache.c) and of the JIT through it: round trips, misses,
 * corrupt rows, the schema version, unwritable paths, many processes starting at once, fork().
 *
 * Every database lives in a fresh mkdtemp() folder, removed after each case. Cases that compile
 * skip, with the reason, without NVRTC. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "cache_internal.h"
#include "context_internal.h"
#include "jit_internal.h"
#include "nvrtc_internal.h"

#define MSG_MAX 4096
#define TEMP_DIR_MAX 1024   /* leaves room in a PATH_MAX buffer for the names under it */
#define BLOB_SIZE 1000
#define RACERS 8

struct temp {
    char dir[TEMP_DIR_MAX];
    char db[TEMP_DIR_MAX + 16];   /* <dir>/cache.db, not created */
};

/* ---- helpers ---- */

static int temp_setup(void **state)
{
    struct temp *t = calloc(1, sizeof *t);
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if (!t || snprintf(t->dir, sizeof t->dir, "%s/fc_test_cache_XXXXXX", tmp) >= (int)sizeof t->dir ||
        !mkdtemp(t->dir)) {
        free(t);
        return -1;
    }
    snprintf(t->db, sizeof t->db, "%s/cache.db", t->dir);
    *state = t;
    return 0;
}

static int remove_entry(const char *path, const struct stat *info, int type, struct FTW *ftw)
{
    (void)info, (void)type, (void)ftw;
    return remove(path);
}

static int temp_teardown(void **state)
{
    struct temp *t = *state;
    nftw(t->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(t);
    return 0;
}

static struct fc_cache *open_cache(const char *path)
{
    char msg[MSG_MAX] = "";
    struct fc_cache *cache = NULL;
    enum fc_status status = fc_cache_open(path, &cache, msg, sizeof msg);
    if (status != FC_OK)
        fail_msg("fc_cache_open(%s): %d: %s", path, (int)status, msg);
    return cache;
}

/* A record with a blob whose bytes depend on seed; the caller frees record->cubin. */
static struct fc_cubin_record synthetic_record(const char *key, const char *source_key, int seed)
{
    struct fc_cubin_record r;
    memset(&r, 0, sizeof r);
    snprintf(r.key, sizeof r.key, "%s", key);
    snprintf(r.source_key, sizeof r.source_key, "%s", source_key);
    snprintf(r.name, sizeof r.name, "reference_f16_d64_m16n32s1w4_sm_80_%d", seed);
    snprintf(r.arch, sizeof r.arch, "sm_80");
    snprintf(r.nvrtc_version, sizeof r.nvrtc_version, "13.0");
    r.registers = 40 + seed, r.smem_static = 16, r.smem_dynamic = 12544, r.spill_stores = 0;
    r.spill_loads = 4, r.stack_bytes = 8, r.compile_ms = 123.5 + seed;
    r.cubin_size = BLOB_SIZE;
    r.cubin = malloc(BLOB_SIZE);
    assert_non_null(r.cubin);
    for (int i = 0; i < BLOB_SIZE; i++)
        ((unsigned char *)r.cubin)[i] = (unsigned char)(i * 7 + seed);
    return r;
}

static void put(struct fc_cache *cache, const struct fc_cubin_record *r)
{
    char msg[MSG_MAX] = "";
    enum fc_status status = fc_cache_put(cache, r, msg, sizeof msg);
    if (status != FC_OK)
        fail_msg("fc_cache_put: %d: %s", (int)status, msg);
}

/* fc_cache_get that must return FC_OK; *corrupt may be NULL when it must be 0. */
static int get(struct fc_cache *cache, const char *key, const char *source_key,
               struct fc_cubin_record *out, int *corrupt)
{
    char msg[MSG_MAX] = "";
    int found = -1, bad = -1;
    enum fc_status status = fc_cache_get(cache, key, source_key, out, &found, &bad, msg, sizeof msg);
    if (status != FC_OK)
        fail_msg("fc_cache_get: %d: %s", (int)status, msg);
    if (corrupt)
        *corrupt = bad;
    else
        assert_int_equal(bad, 0);
    return found;
}

static void assert_records_equal(const struct fc_cubin_record *a, const struct fc_cubin_record *b)
{
    assert_string_equal(a->key, b->key);
    assert_string_equal(a->source_key, b->source_key);
    assert_string_equal(a->name, b->name);
    assert_string_equal(a->arch, b->arch);
    assert_string_equal(a->nvrtc_version, b->nvrtc_version);
    assert_int_equal(a->registers, b->registers);
    assert_int_equal(a->smem_static, b->smem_static);
    assert_int_equal(a->smem_dynamic, b->smem_dynamic);
    assert_int_equal(a->spill_stores, b->spill_stores);
    assert_int_equal(a->spill_loads, b->spill_loads);
    assert_int_equal(a->stack_bytes, b->stack_bytes);
    assert_true(a->compile_ms == b->compile_ms);
    assert_int_equal(a->cubin_size, b->cubin_size);
    assert_memory_equal(a->cubin, b->cubin, a->cubin_size);
}

/* Runs SQL on the database through a connection of its own; returns the first column of the
 * first row as text (empty if none). */
static void sql(const char *path, const char *statement, char *result, size_t size)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    if (sqlite3_prepare_v2(db, statement, -1, &stmt, NULL) != SQLITE_OK)
        fail_msg("%s: %s", statement, sqlite3_errmsg(db));
    int rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        fail_msg("%s: %s", statement, sqlite3_errmsg(db));
    if (result)
        snprintf(result, size, "%s", rc == SQLITE_ROW && sqlite3_column_text(stmt, 0) ?
                 (const char *)sqlite3_column_text(stmt, 0) : "");
    sqlite3_finalize(stmt);
    sqlite3_close(db);
}

static int sql_int(const char *path, const char *statement)
{
    char text[64];
    sql(path, statement, text, sizeof text);
    return atoi(text);
}

/* Flips one byte of the stored cubin of key, leaving its checksum as it was. */
static void corrupt_blob(const char *path, const char *key)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *select = NULL, *update = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    const char *read_sql = "SELECT cubin FROM cubins WHERE key = ?1";
    const char *write_sql = "UPDATE cubins SET cubin = ?1 WHERE key = ?2";
    assert_int_equal(sqlite3_prepare_v2(db, read_sql, -1, &select, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, write_sql, -1, &update, NULL), SQLITE_OK);
    sqlite3_bind_text(select, 1, key, -1, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(select), SQLITE_ROW);
    int size = sqlite3_column_bytes(select, 0);
    assert_true(size > 0);
    unsigned char *bytes = malloc((size_t)size);
    assert_non_null(bytes);
    memcpy(bytes, sqlite3_column_blob(select, 0), (size_t)size);
    bytes[size / 2] ^= 0x5a;
    sqlite3_bind_blob(update, 1, bytes, size, SQLITE_STATIC);
    sqlite3_bind_text(update, 2, key, -1, SQLITE_STATIC);
    sqlite3_finalize(select);
    assert_int_equal(sqlite3_step(update), SQLITE_DONE);
    assert_int_equal(sqlite3_changes(db), 1);
    sqlite3_finalize(update);
    sqlite3_close(db);
    free(bytes);
}

static void require_nvrtc(void)
{
    char why[2048] = "";
    if (fc_nvrtc_load(why, sizeof why) != 0) {
        print_message("skipping: %s\n", why);
        skip();
    }
}

static struct fc_variant test_variant(void)
{
    struct fc_variant v;
    memset(&v, 0, sizeof v);
    v.family = FC_KERNEL_REFERENCE;
    v.dtype = FC_F16;
    v.head_dim = 64;
    v.arch = 80;
    fc_variant_defaults(&v);
    return v;
}

/* ---- the store ---- */

static void test_put_get_round_trip(void **state)
{
    const struct temp *t = *state;
    struct fc_cache *cache = open_cache(t->db);
    struct fc_cubin_record in = synthetic_record("k1", "s1", 1), out;
    memset(&out, 0, sizeof out);
    put(cache, &in);
    assert_int_equal(get(cache, "k1", NULL, &out, NULL), 1);
    assert_records_equal(&in, &out);
    assert_int_equal(strlen(out.created_at), strlen("2025-01-01T00:00:00Z"));
    fc_cubin_record_free(&out);
    assert_null(out.cubin);
    fc_cubin_record_free(&in);
    fc_cache_close(cache);
}

/* Rows sharing a source_key (one per NVRTC version): the newest wins, even within one second. */
static void test_get_by_source_key_returns_newest(void **state)
{
    const struct temp *t = *state;
    struct fc_cache *cache = open_cache(t->db);
    struct fc_cubin_record a = synthetic_record("ka", "shared", 1), b = synthetic_record("kb", "shared", 2);
    struct fc_cubin_record out;
    put(cache, &a);
    put(cache, &b);
    assert_int_equal(get(cache, NULL, "shared", &out, NULL), 1);
    assert_string_equal(out.key, "kb");
    assert_records_equal(&b, &out);
    fc_cubin_record_free(&out);
    put(cache, &a);   /* replaced: now the newest */
    assert_int_equal(get(cache, NULL, "shared", &out, NULL), 1);
    assert_string_equal(out.key, "ka");
    fc_cubin_record_free(&out);
    sql(t->db, "UPDATE cubins SET created_at = '2000-01-01T00:00:00Z' WHERE key = 'ka'", NULL, 0);
    assert_int_equal(get(cache, NULL, "shared", &out, NULL), 1);
    assert_string_equal(out.key, "kb");
    fc_cubin_record_free(&out);
    fc_cubin_record_free(&a);
    fc_cubin_record_free(&b);
    fc_cache_close(cache);
}

static void test_unknown_key_is_a_miss(void **state)
{
    const struct temp *t = *state;
    struct fc_cache *cache = open_cache(t->db);
    struct fc_cubin_record in = synthetic_record("k1", "s1", 1), out;
    memset(&out, 0, sizeof out);
    put(cache, &in);
    assert_int_equal(get(cache, "nope", NULL, &out, NULL), 0);
    assert_null(out.cubin);
    assert_int_equal(get(cache, NULL, "nope", &out, NULL), 0);
    fc_cubin_record_free(&in);
    fc_cache_close(cache);
}

static void test_corrupt_blob_is_dropped(void **state)
{
    const struct temp *t = *state;
    struct fc_cache *cache = open_cache(t->db);
    struct fc_cubin_record in = synthetic_record("k1", "s1", 1), keep = synthetic_record("k2", "s2", 2), out;
    memset(&out, 0, sizeof out);
    put(cache, &in);
    put(cache, &keep);
    corrupt_blob(t->db, "k1");
    int corrupt = -1;
    assert_int_equal(get(cache, "k1", NULL, &out, &corrupt), 0);
    assert_int_equal(corrupt, 1);
    assert_null(out.cubin);
    assert_int_equal(sql_int(t->db, "SELECT count(*) FROM cubins WHERE key = 'k1'"), 0);
    assert_int_equal(get(cache, "k1", NULL, &out, &corrupt), 0);
    assert_int_equal(corrupt, 0);
    assert_int_equal(get(cache, "k2", NULL, &out, NULL), 1);   /* the other row is untouched */
    fc_cubin_record_free(&out);
    fc_cubin_record_free(&in);
    fc_cubin_record_free(&keep);
    fc_cache_close(cache);
}

static void test_wrong_checksum_is_dropped(void **state)
{
    const struct temp *t = *state;
    struct fc_cache *cache = open_cache(t->db);
    struct fc_cubin_record in = synthetic_record("k1", "s1", 1), out;
    memset(&out, 0, sizeof out);
    put(cache, &in);
    sql(t->db, "UPDATE cubins SET checksum = '0000000000000000'", NULL, 0);
    int corrupt = -1;
    assert_int_equal(get(cache, NULL, "s1", &out, &corrupt), 0);   /* by source_key, too */
    assert_int_equal(corrupt, 1);
    assert_int_equal(sql_int(t->db, "SELECT count(*) FROM cubins"), 0);
    fc_cubin_record_free(&in);
    fc_cache_close(cache);
}

static void test_newer_schema_is_refused(void **state)
{
    const struct temp *t = *state;
    char pragma[64], msg[MSG_MAX] = "";
    snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", FC_CACHE_SCHEMA_VERSION + 1);
    sql(t->db, pragma, NULL, 0);
    struct fc_cache *cache = (struct fc_cache *)&msg;   /* must be reset to NULL */
    assert_int_equal(fc_cache_open(t->db, &cache, msg, sizeof msg), FC_ERR_CACHE);
    assert_null(cache);
    assert_non_null(strstr(msg, "newer"));
    assert_non_null(strstr(msg, t->db));
    assert_int_equal(sql_int(t->db, "PRAGMA user_version"), FC_CACHE_SCHEMA_VERSION + 1);
}

static void test_fresh_file_gets_schema_and_wal(void **state)
{
    const struct temp *t = *state;
    char mode[16];
    struct fc_cache *cache = open_cache(t->db);
    assert_string_equal(fc_cache_path(cache), t->db);
    assert_int_equal(sql_int(t->db, "PRAGMA user_version"), FC_CACHE_SCHEMA_VERSION);
    sql(t->db, "PRAGMA journal_mode", mode, sizeof mode);
    assert_string_equal(mode, "wal");
    assert_int_equal(sql_int(t->db, "SELECT count(*) FROM sqlite_master "
                                    "WHERE name IN ('cubins', 'tuning_results')"), 2);
    fc_cache_close(cache);
    cache = open_cache(t->db);   /* reopening an up-to-date file changes nothing */
    assert_int_equal(sql_int(t->db, "PRAGMA user_version"), FC_CACHE_SCHEMA_VERSION);
    fc_cache_close(cache);
}

static void test_unwritable_path_is_cache_error(void **state)
{
    const struct temp *t = *state;
    char file[PATH_MAX], path[PATH_MAX], msg[MSG_MAX] = "";
    snprintf(file, sizeof file, "%s/file", t->dir);
    snprintf(path, sizeof path, "%s/file/sub/x.db", t->dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    struct fc_cache *cache = (struct fc_cache *)&msg;
    assert_int_equal(fc_cache_open(path, &cache, msg, sizeof msg), FC_ERR_CACHE);
    assert_null(cache);
    assert_non_null(strstr(msg, path));
}

struct visit_count {
    int rows, ok;
};

static int count_rows(void *user, const struct fc_cubin_record *record, int checksum_ok)
{
    struct visit_count *count = user;
    count->rows++;
    count->ok += checksum_ok;
    assert_int_equal(record->cubin_size, BLOB_SIZE);
    return 0;
}

static struct visit_count visit_all(struct fc_cache *cache)
{
    struct visit_count count = {0, 0};
    char msg[MSG_MAX] = "";
    enum fc_status status = fc_cache_foreach(cache, count_rows, &count, msg, sizeof msg);
    if (status != FC_OK)
        fail_msg("fc_cache_foreach: %d: %s", (int)status, msg);
    return count;
}

static void test_foreach_and_clear(void **state)
{
    const struct temp *t = *state;
    struct fc_cache *cache = open_cache(t->db);
    char msg[MSG_MAX] = "", key[8], lock_file[PATH_MAX];
    for (int i = 0; i < 3; i++) {
        snprintf(key, sizeof key, "k%d", i);
        struct fc_cubin_record r = synthetic_record(key, "s", i);
        put(cache, &r);
        fc_cubin_record_free(&r);
    }
    struct visit_count count = visit_all(cache);
    assert_int_equal(count.rows, 3);
    assert_int_equal(count.ok, 3);
    corrupt_blob(t->db, "k1");
    count = visit_all(cache);
    assert_int_equal(count.rows, 3);
    assert_int_equal(count.ok, 2);
    int lock = fc_cache_lock(cache, "k0");
    assert_true(lock >= 0);
    fc_cache_unlock(lock);
    snprintf(lock_file, sizeof lock_file, "%s.locks/k0.lock", t->db);
    assert_int_equal(access(lock_file, F_OK), 0);
    int deleted = -1;
    assert_int_equal(fc_cache_clear(cache, &deleted, msg, sizeof msg), FC_OK);
    assert_int_equal(deleted, 3);
    assert_int_equal(visit_all(cache).rows, 0);
    assert_int_equal(access(lock_file, F_OK), -1);
    fc_cache_close(cache);
}

/* ---- the JIT through the store ---- */

struct jit_with_cache {
    struct fc_cache *cache;
    struct fc_jit *jit;
};

static struct jit_with_cache open_jit(const char *path)
{
    char msg[MSG_MAX] = "";
    struct jit_with_cache j = {open_cache(path), NULL};
    enum fc_status status = fc_jit_create(NULL, j.cache, &j.jit, msg, sizeof msg);
    if (status != FC_OK)
        fail_msg("fc_jit_create: %d: %s", (int)status, msg);
    return j;
}

static void close_jit(struct jit_with_cache *j)
{
    fc_jit_destroy(j->jit);
    fc_cache_close(j->cache);
}

static void get_cubin(struct fc_jit *jit, struct fc_cubin *out)
{
    char msg[MSG_MAX] = "";
    struct fc_variant v = test_variant();
    enum fc_status status = fc_jit_get_cubin(jit, &v, 0, out, msg, sizeof msg);
    if (status != FC_OK)
        fail_msg("fc_jit_get_cubin: %d: %s", (int)status, msg);
}

static void test_jit_compiles_caches_and_replaces_corrupt(void **state)
{
    const struct temp *t = *state;
    require_nvrtc();
    struct jit_with_cache j = open_jit(t->db);
    struct fc_cubin first, second, third, fourth;
    get_cubin(j.jit, &first);
    assert_int_equal(first.origin, FC_CUBIN_COMPILED);
    get_cubin(j.jit, &second);
    assert_int_equal(second.origin, FC_CUBIN_CACHED);
    assert_int_equal(second.replaced_corrupt, 0);
    assert_records_equal(&first.record, &second.record);
    corrupt_blob(t->db, first.record.key);
    get_cubin(j.jit, &third);
    assert_int_equal(third.origin, FC_CUBIN_COMPILED);
    assert_int_equal(third.replaced_corrupt, 1);
    assert_int_equal(third.record.cubin_size, first.record.cubin_size);
    get_cubin(j.jit, &fourth);
    assert_int_equal(fourth.origin, FC_CUBIN_CACHED);
    assert_int_equal(fourth.replaced_corrupt, 0);
    assert_records_equal(&third.record, &fourth.record);
    assert_int_equal(sql_int(t->db, "SELECT count(*) FROM cubins"), 1);
    struct fc_cubin *all[] = {&first, &second, &third, &fourth};
    for (int i = 0; i < 4; i++)
        fc_cubin_free(all[i]);
    close_jit(&j);
}

/* What a child process says on its result pipe: one byte on success, nothing on failure. The
 * exit status is 0 on success too, but a checker (valgrind --error-exitcode) may rewrite it. */
#define SAID_COMPILED 'c'
#define SAID_CACHED 'h'
#define SAID_OK 'o'

/* Waits for a child and reads what it said (0 if nothing); fails if it crashed. */
static char child_result(pid_t pid, int result_fd)
{
    int wstatus = 0;
    char said = 0;
    assert_int_equal(waitpid(pid, &wstatus, 0), pid);
    assert_true(WIFEXITED(wstatus));
    if (read(result_fd, &said, 1) != 1)
        said = 0;
    return said;
}

/* One racer: waits for the start signal (EOF on start_fd), then fetches the variant and says
 * whether it compiled. Opens everything after the fork. */
static void race(const char *path, int start_fd, int result_fd)
{
    char c, msg[MSG_MAX] = "";
    struct fc_cache *cache = NULL;
    struct fc_jit *jit = NULL;
    struct fc_cubin cubin;
    struct fc_variant v = test_variant();
    memset(&cubin, 0, sizeof cubin);
    while (read(start_fd, &c, 1) < 0 && errno == EINTR)
        continue;
    enum fc_status status = fc_cache_open(path, &cache, msg, sizeof msg);
    if (status == FC_OK)
        status = fc_jit_create(NULL, cache, &jit, msg, sizeof msg);
    if (status == FC_OK)
        status = fc_jit_get_cubin(jit, &v, 0, &cubin, msg, sizeof msg);
    char said = cubin.origin == FC_CUBIN_COMPILED ? SAID_COMPILED : SAID_CACHED;
    if (status == FC_OK && write(result_fd, &said, 1) != 1)
        status = FC_ERR_INTERNAL;
    if (status != FC_OK)
        fprintf(stderr, "racer %d: %d: %s\n", (int)getpid(), (int)status, msg);
    fc_cubin_free(&cubin);
    fc_jit_destroy(jit);
    fc_cache_close(cache);
    _exit(status == FC_OK ? 0 : 1);
}

static void test_racing_processes_compile_once(void **state)
{
    const struct temp *t = *state;
    require_nvrtc();
    int start[2], results[RACERS][2];
    pid_t pids[RACERS];
    assert_int_equal(pipe(start), 0);
    for (int i = 0; i < RACERS; i++) {
        assert_int_equal(pipe(results[i]), 0);
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            close(start[1]);
            race(t->db, start[0], results[i][1]);
        }
        close(results[i][1]);
    }
    close(start[0]);
    close(start[1]);   /* go: every racer's read returns at once */
    int succeeded = 0, compiled = 0;
    for (int i = 0; i < RACERS; i++) {
        char said = child_result(pids[i], results[i][0]);
        close(results[i][0]);
        succeeded += said == SAID_COMPILED || said == SAID_CACHED;
        compiled += said == SAID_COMPILED;
    }
    assert_int_equal(succeeded, RACERS);
    assert_int_equal(compiled, 1);
    char check[64];
    sql(t->db, "PRAGMA integrity_check", check, sizeof check);
    assert_string_equal(check, "ok");
    assert_int_equal(sql_int(t->db, "SELECT count(*) FROM cubins"), 1);
}

/* How many of this process's descriptors are open on path (Linux /proc), or -1 if unknown. */
static int open_descriptors_on(const char *path)
{
    char target[PATH_MAX], link[PATH_MAX + 32], entry_path[PATH_MAX];
    if (!realpath(path, target))
        return -1;
    DIR *dir = opendir("/proc/self/fd");
    if (!dir)
        return -1;
    int count = 0;
    for (struct dirent *entry; (entry = readdir(dir));) {
        snprintf(link, sizeof link, "/proc/self/fd/%s", entry->d_name);
        ssize_t n = readlink(link, entry_path, sizeof entry_path - 1);
        if (n > 0) {
            entry_path[n] = 0;
            count += strcmp(entry_path, target) == 0;
        }
    }
    closedir(dir);
    return count;
}

/* The child's side of test_handle_survives_fork: reads the parent's row and writes one through
 * the inherited handle, which must open a connection of its own. */
static void use_inherited_handle(struct fc_cache *cache, const struct fc_cubin_record *expected,
                                 int result_fd)
{
    char msg[MSG_MAX] = "";
    int found = 0, corrupt = 0;
    struct fc_cubin_record out, second = synthetic_record("k2", "s2", 2);
    memset(&out, 0, sizeof out);
    int inherited = open_descriptors_on(fc_cache_path(cache));
    enum fc_status status = fc_cache_get(cache, "k1", NULL, &out, &found, &corrupt, msg, sizeof msg);
    int ok = status == FC_OK && found && out.cubin_size == expected->cubin_size &&
             memcmp(out.cubin, expected->cubin, expected->cubin_size) == 0;
    if (ok && inherited >= 0 && open_descriptors_on(fc_cache_path(cache)) <= inherited) {
        fprintf(stderr, "child: read through the parent's connection (no new descriptor on the file)\n");
        ok = 0;
    }
    if (ok)
        ok = (status = fc_cache_put(cache, &second, msg, sizeof msg)) == FC_OK;
    if (!ok)
        fprintf(stderr, "child: status %d, found %d: %s\n", (int)status, found, msg);
    char said = SAID_OK;
    if (ok && write(result_fd, &said, 1) != 1)
        ok = 0;
    fc_cubin_record_free(&out);
    fc_cubin_record_free(&second);
    fc_cache_close(cache);
    _exit(ok ? 0 : 1);
}

static void test_handle_survives_fork(void **state)
{
    const struct temp *t = *state;
    struct fc_cache *cache = open_cache(t->db);
    struct fc_cubin_record in = synthetic_record("k1", "s1", 1), out;
    int result[2];
    put(cache, &in);
    assert_int_equal(pipe(result), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(result[0]);
        use_inherited_handle(cache, &in, result[1]);
    }
    close(result[1]);
    char said = child_result(pid, result[0]);
    close(result[0]);
    assert_int_equal(said, SAID_OK);
    assert_int_equal(get(cache, "k1", NULL, &out, NULL), 1);   /* the parent's handle still works */
    assert_records_equal(&in, &out);
    fc_cubin_record_free(&out);
    assert_int_equal(get(cache, "k2", NULL, &out, NULL), 1);   /* and sees the child's row */
    fc_cubin_record_free(&out);
    fc_cubin_record_free(&in);
    fc_cache_close(cache);
    char check[64];
    sql(t->db, "PRAGMA integrity_check", check, sizeof check);
    assert_string_equal(check, "ok");
}

/* ---- a cache file that cannot be used never stops a context (issue 18, finding 2) ---- */

#define NOBODY 65534   /* the uid and gid the permission cases drop to when run as root */

/* The warnings a context logs, counted and kept. */
struct captured_log {
    int warnings;
    char last[2048];
};

static void capture_log(void *user, enum fc_log_level level, const char *message)
{
    struct captured_log *log = user;
    if (level == FC_LOG_WARN) {
        log->warnings++;
        snprintf(log->last, sizeof log->last, "%s", message);
    }
}

/* A device-less context on path (NULL: the default), logging warnings into log if log_level. */
static struct fc_context *context_on(const char *path, enum fc_log_level log_level, struct captured_log *log)
{
    struct fc_options options;
    fc_options_init(&options);
    options.cache_path = path;
    options.log_level = log_level;
    options.log_fn = capture_log;
    options.log_user = log;
    struct fc_context *ctx = NULL;
    enum fc_status status = fc_context_create(FC_DEVICE_NONE, &options, &ctx);
    if (status != FC_OK)
        fail_msg("fc_context_create(%s): %s: %s", path ? path : "(default)", fc_status_name(status),
                 fc_context_errmsg(ctx));
    return ctx;
}

static void write_file(const char *path, const void *bytes, size_t size)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
}

/* A cache with one synthetic row under key "k1", closed (its WAL folded into the file). */
static void make_cache_with_a_row(const char *path)
{
    struct fc_cache *cache = open_cache(path);
    struct fc_cubin_record r = synthetic_record("k1", "s1", 1);
    put(cache, &r);
    fc_cubin_record_free(&r);
    fc_cache_close(cache);
}

/* The context comes up memory-only with exactly one warning naming the file and a fix, and
 * says nothing at all when no log level was asked for. */
static void assert_context_degrades(const char *path, const char *phrase)
{
    struct captured_log log = {0, ""};
    struct fc_context *ctx = context_on(path, FC_LOG_WARN, &log);
    assert_null(ctx->cache);
    assert_int_equal(log.warnings, 1);
    if (!strstr(log.last, path) || !strstr(log.last, phrase) || !strstr(log.last, "fix:"))
        fail_msg("warning for %s lacks the path, \"%s\" or a fix: %s", path, phrase, log.last);
    assert_string_equal(ctx->cache_warning, log.last);
    fc_context_destroy(ctx);
    struct captured_log quiet = {0, ""};
    ctx = context_on(path, FC_LOG_OFF, &quiet);
    assert_int_equal(quiet.warnings, 0);
    fc_context_destroy(ctx);
}

static void test_context_survives_unusable_cache_files(void **state)
{
    const struct temp *t = *state;
    char path[PATH_MAX], garbage[8192];
    unsetenv("FC_LOG");
    for (size_t i = 0; i < sizeof garbage; i++)
        garbage[i] = (char)(i * 131 + 7);
    snprintf(path, sizeof path, "%s/garbage.db", t->dir);
    write_file(path, garbage, sizeof garbage);
    assert_context_degrades(path, "damaged");

    snprintf(path, sizeof path, "%s/truncated.db", t->dir);   /* a real cache cut short */
    make_cache_with_a_row(path);
    assert_int_equal(truncate(path, 60), 0);
    assert_context_degrades(path, "damaged");

    snprintf(path, sizeof path, "%s/folder.db", t->dir);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_context_degrades(path, "folder");

    char file[PATH_MAX];   /* a folder cannot be made where a file is */
    snprintf(file, sizeof file, "%s/plain", t->dir);
    write_file(file, "x", 1);
    snprintf(path, sizeof path, "%s/plain/sub/x.db", t->dir);
    assert_context_degrades(path, "cannot");
}

/* env -i: no FC_TUNING_DB, XDG_CACHE_HOME or HOME. */
static void test_context_without_home(void **state)
{
    (void)state;
    const char *names[] = {"FC_TUNING_DB", "XDG_CACHE_HOME", "HOME"};
    char *saved[3];
    for (int i = 0; i < 3; i++) {
        saved[i] = getenv(names[i]) ? strdup(getenv(names[i])) : NULL;
        unsetenv(names[i]);
    }
    struct captured_log log = {0, ""};
    struct fc_context *ctx = context_on(NULL, FC_LOG_WARN, &log);
    assert_null(ctx->cache);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "HOME"));
    fc_context_destroy(ctx);
    for (int i = 0; i < 3; i++) {
        if (saved[i])
            setenv(names[i], saved[i], 1);
        free(saved[i]);
    }
}

/* Runs check as another user when root (who may write anything, so that permissions cannot be
 * exercised as root), else as this user; check returns "" or what went wrong. */
static void as_unprivileged(const char *dir, const char *(*check)(const char *dir))
{
    if (geteuid() != 0) {
        const char *problem = check(dir);
        if (*problem)
            fail_msg("%s", problem);
        return;
    }
    int result[2];
    assert_int_equal(pipe(result), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {   /* no cmocka here: a failing assert would go on to run the other tests */
        close(result[0]);
        const char *problem = setgid(NOBODY) || setuid(NOBODY) ? "cannot drop to nobody" : check(dir);
        ssize_t written = write(result[1], problem, strlen(problem) + 1);
        _exit(written > 0 ? 0 : 1);
    }
    close(result[1]);
    char problem[3 * PATH_MAX] = "";
    ssize_t n = read(result[0], problem, sizeof problem - 1);
    close(result[0]);
    int wstatus = 0;
    assert_int_equal(waitpid(pid, &wstatus, 0), pid);
    assert_true(n > 0 && WIFEXITED(wstatus));
    if (*problem)
        fail_msg("as uid %d: %s", NOBODY, problem);
}

/* Opens dir/name as the cache of this user: it must be read only, hold k1, and refuse a write. */
static const char *read_only_use(const char *dir, const char *name, int expect_warning)
{
    static char problem[3 * PATH_MAX];
    char path[PATH_MAX], warning[PATH_MAX], msg[MSG_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct fc_cache *cache = NULL;
    enum fc_cache_state state;
    if (fc_cache_open_usable(path, &cache, &state, warning, sizeof warning) != FC_OK || !cache)
        return snprintf(problem, sizeof problem, "%s not opened: %s", path, warning), problem;
    struct fc_cubin_record row, other = synthetic_record("k2", "s2", 2);
    int found = 0, corrupt = 0;
    enum fc_status got = fc_cache_get(cache, "k1", NULL, &row, &found, &corrupt, msg, sizeof msg);
    enum fc_status put_status = fc_cache_put(cache, &other, msg, sizeof msg);
    problem[0] = 0;
    if (state != FC_CACHE_READ_ONLY || fc_cache_writable(cache))
        snprintf(problem, sizeof problem, "%s: state %d, not read only", path, (int)state);
    else if (got != FC_OK || !found)
        snprintf(problem, sizeof problem, "%s: its row was not read (%d)", path, (int)got);
    else if (put_status != FC_ERR_CACHE)
        snprintf(problem, sizeof problem, "%s: a write to a read-only cache did not fail", path);
    else if (expect_warning != (warning[0] != 0) || (expect_warning && !strstr(warning, "fix:")))
        snprintf(problem, sizeof problem, "%s: warning %s: \"%s\"", path, expect_warning ? "missing" : "unexpected",
                 warning);
    if (found)
        fc_cubin_record_free(&row);
    fc_cubin_record_free(&other);
    fc_cache_close(cache);
    return problem;
}

static const char *read_only_file_and_folder(const char *dir)
{
    const char *problem = read_only_use(dir, "ro-file.db", 1);
    return *problem ? problem : read_only_use(dir, "ro-folder/c.db", 1);
}

/* A read-only database and a read-only folder: read, never written, one warning. As root the
 * check runs as uid 65534 over files it owns (root could write them anyway). */
static void test_read_only_cache_is_read(void **state)
{
    const struct temp *t = *state;
    char path[PATH_MAX], folder[PATH_MAX];
    snprintf(path, sizeof path, "%s/ro-file.db", t->dir);
    make_cache_with_a_row(path);
    snprintf(folder, sizeof folder, "%s/ro-folder", t->dir);
    snprintf(path, sizeof path, "%s/ro-folder/c.db", t->dir);
    make_cache_with_a_row(path);
    if (geteuid() == 0) {   /* the files become nobody's, in a folder nobody can enter */
        const char *owned[] = {t->dir, folder, path};
        char first[PATH_MAX];
        snprintf(first, sizeof first, "%s/ro-file.db", t->dir);
        assert_int_equal(chown(first, NOBODY, NOBODY), 0);
        for (int i = 0; i < 3; i++)
            assert_int_equal(chown(owned[i], NOBODY, NOBODY), 0);
    }
    snprintf(path, sizeof path, "%s/ro-file.db", t->dir);
    assert_int_equal(chmod(path, 0444), 0);
    assert_int_equal(chmod(folder, 0555), 0);
    as_unprivileged(t->dir, read_only_file_and_folder);
    assert_int_equal(chmod(folder, 0700), 0);   /* for the teardown */
}

static const char *system_layer_use(const char *dir)
{
    return read_only_use(dir, "layer/tuning.db", 0);
}

/* An admin's read-only system layer: root's file, others cannot write it: read quietly. */
static void test_system_layer_is_read_quietly(void **state)
{
    const struct temp *t = *state;
    if (geteuid() != 0) {
        print_message("skipping: only root can make a file root owns\n");
        skip();
    }
    char folder[PATH_MAX], path[PATH_MAX];
    snprintf(folder, sizeof folder, "%s/layer", t->dir);
    snprintf(path, sizeof path, "%s/layer/tuning.db", t->dir);
    make_cache_with_a_row(path);
    assert_int_equal(chmod(t->dir, 0755), 0);
    assert_int_equal(chmod(folder, 0755), 0);
    assert_int_equal(chmod(path, 0644), 0);
    as_unprivileged(t->dir, system_layer_use);
}

/* ---- trust (finding 8) ---- */

static int mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (int)(st.st_mode & 07777);
}

static void test_new_files_are_private(void **state)
{
    const struct temp *t = *state;
    char folder[PATH_MAX], path[PATH_MAX], side[PATH_MAX + 32];
    snprintf(folder, sizeof folder, "%s/new", t->dir);
    snprintf(path, sizeof path, "%s/new/tuning.db", t->dir);
    struct fc_cache *cache = open_cache(path);
    struct fc_cubin_record r = synthetic_record("k1", "s1", 1);
    put(cache, &r);
    fc_cubin_record_free(&r);
    assert_int_equal(mode_of(folder), 0700);
    assert_int_equal(mode_of(path), 0600);
    snprintf(side, sizeof side, "%s-wal", path);
    assert_int_equal(mode_of(side), 0600);
    snprintf(side, sizeof side, "%s-shm", path);
    assert_int_equal(mode_of(side), 0600);
    int lock = fc_cache_lock(cache, "k1");
    assert_true(lock >= 0);
    fc_cache_unlock(lock);
    snprintf(side, sizeof side, "%s.locks", path);
    assert_int_equal(mode_of(side), 0700);
    snprintf(side, sizeof side, "%s.locks/k1.lock", path);
    assert_int_equal(mode_of(side), 0600);
    fc_cache_close(cache);
}

/* The context does not load from path: memory only, one warning with the phrase. */
static void assert_not_loaded_from(const char *path, const char *phrase)
{
    struct captured_log log = {0, ""};
    struct fc_context *ctx = context_on(path, FC_LOG_WARN, &log);
    assert_null(ctx->cache);
    assert_int_equal(log.warnings, 1);
    if (!strstr(log.last, phrase) || !strstr(log.last, "fix:"))
        fail_msg("warning lacks \"%s\" or a fix: %s", phrase, log.last);
    fc_context_destroy(ctx);
}

static void test_untrusted_cache_is_not_loaded(void **state)
{
    const struct temp *t = *state;
    char folder[PATH_MAX], path[PATH_MAX];
    snprintf(folder, sizeof folder, "%s/shared", t->dir);
    snprintf(path, sizeof path, "%s/shared/tuning.db", t->dir);
    make_cache_with_a_row(path);
    struct fc_context *ctx = context_on(path, FC_LOG_OFF, NULL);
    assert_non_null(ctx->cache);   /* trusted as made */
    fc_context_destroy(ctx);
    assert_int_equal(chmod(path, 0664), 0);
    assert_not_loaded_from(path, "writable by its group");
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(chmod(folder, 0777), 0);
    assert_not_loaded_from(path, "writable by others");
    assert_int_equal(chmod(folder, 0700), 0);
    if (geteuid() != 0) {
        print_message("(a file of another user: skipped, only root can give one away)\n");
        return;
    }
    assert_int_equal(chown(path, NOBODY, NOBODY), 0);
    assert_not_loaded_from(path, "owned by uid 65534");
}

/* ---- a kernel that compiled is used, stored or not (finding 3) ---- */

static void test_compiled_kernel_survives_a_failed_store(void **state)
{
    const struct temp *t = *state;
    require_nvrtc();
    struct jit_with_cache j = open_jit(t->db);
    struct captured_log log = {0, ""};
    struct fc_logger logger = {FC_LOG_WARN, capture_log, &log};
    fc_jit_set_logger(j.jit, &logger);
    /* Every store fails, as on a full disk; root cannot be stopped by file permissions. */
    sql(t->db, "CREATE TRIGGER refuse_stores BEFORE INSERT ON cubins BEGIN SELECT RAISE(ABORT, 'disk full'); END",
        NULL, 0);
    struct fc_cubin cubin;
    get_cubin(j.jit, &cubin);
    assert_int_equal(cubin.origin, FC_CUBIN_COMPILED);
    assert_non_null(cubin.record.cubin);
    assert_true(cubin.record.cubin_size > 0);
    assert_int_equal(log.warnings, 1);
    assert_non_null(strstr(log.last, "not stored"));
    assert_non_null(strstr(log.last, "disk full"));
    assert_int_equal(sql_int(t->db, "SELECT count(*) FROM cubins"), 0);
    fc_cubin_free(&cubin);
    close_jit(&j);
}

/* ---- checking and repairing a damaged file (finding 4) ---- */

#define BIG_BLOB_SIZE 20000   /* several overflow pages per row */
#define DAMAGED_ROWS 4

/* A row whose cubin is BIG_BLOB_SIZE bytes of one repeated marker, so that its pages can be found
 * in the file; the caller frees record->cubin. */
static struct fc_cubin_record big_record(int index)
{
    char key[16];
    snprintf(key, sizeof key, "k%d", index);
    struct fc_cubin_record r = synthetic_record(key, key, index);
    free(r.cubin);
    r.cubin_size = BIG_BLOB_SIZE;
    r.cubin = malloc(BIG_BLOB_SIZE);
    assert_non_null(r.cubin);
    const char marker[4] = {'R', 'O', 'W', (char)('0' + index)};
    for (int i = 0; i < BIG_BLOB_SIZE; i++)
        ((char *)r.cubin)[i] = marker[i % 4];
    return r;
}

/* Overwrites, with 0xff, the page of path that holds the middle of blob (of size bytes). */
static void damage_page_holding(const char *path, const void *blob, size_t blob_size, int page_size)
{
    assert_true(blob_size >= 2 * (size_t)page_size);   /* so that the page holds nothing else of the row */
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long size = ftell(f);
    unsigned char *bytes = malloc((size_t)size);
    assert_non_null(bytes);
    rewind(f);
    assert_int_equal(fread(bytes, 1, (size_t)size, f), (size_t)size);
    const unsigned char *needle = (const unsigned char *)blob + blob_size / 2;
    long at = -1;
    for (long i = 0; at < 0 && i + 64 <= size; i++)
        if (memcmp(bytes + i, needle, 64) == 0)
            at = i;
    assert_true(at > 0);
    memset(bytes, 0xff, (size_t)page_size);
    assert_int_equal(fseek(f, at / page_size * page_size, SEEK_SET), 0);
    assert_int_equal(fwrite(bytes, 1, (size_t)page_size, f), (size_t)page_size);
    assert_int_equal(fclose(f), 0);
    free(bytes);
}

/* The same for the page with the middle of big_record(index)'s cubin. */
static void damage_page_of(const char *path, int index, int page_size)
{
    struct fc_cubin_record r = big_record(index);
    damage_page_holding(path, r.cubin, r.cubin_size, page_size);
    fc_cubin_record_free(&r);
}

/* DAMAGED_ROWS big rows and one tuning result, then the page of row 2 destroyed. */
static void make_damaged_cache(const char *path)
{
    struct fc_cache *cache = open_cache(path);
    for (int i = 0; i < DAMAGED_ROWS; i++) {
        struct fc_cubin_record r = big_record(i);
        put(cache, &r);
        fc_cubin_record_free(&r);
    }
    struct fc_tuning_row row;
    memset(&row, 0, sizeof row);
    snprintf(row.id.gpu_name, sizeof row.id.gpu_name, "GPU");
    snprintf(row.bucket, sizeof row.bucket, "f16_d128_gqa1_s1024");
    snprintf(row.variant, sizeof row.variant, "sm90_f16_d128_m128n64s2w8_sm_90a");
    row.median_ms = 1.0, row.passed_check = 1, row.winner = 1;
    char msg[MSG_MAX];
    assert_int_equal(fc_tuning_put(cache, &row, msg, sizeof msg), FC_OK);
    fc_cache_close(cache);   /* the last connection folds the WAL into the file */
    damage_page_of(path, 2, sql_int(path, "PRAGMA page_size"));
}

struct bad_row_seen {
    int count;
    char key[FC_KEY_HEX], problem[256];
};

static void remember_bad_row(void *user, const char *key, const char *name, const char *problem)
{
    (void)name;
    struct bad_row_seen *seen = user;
    seen->count++;
    snprintf(seen->key, sizeof seen->key, "%s", key);
    snprintf(seen->problem, sizeof seen->problem, "%s", problem);
}

static void test_check_names_the_rows_of_a_damaged_page(void **state)
{
    const struct temp *t = *state;
    make_damaged_cache(t->db);
    struct fc_cache *cache = open_cache(t->db);   /* the first page is whole: it opens */
    struct fc_cache_health health;
    struct bad_row_seen seen = {0, "", ""};
    char msg[MSG_MAX];
    assert_int_equal(fc_cache_check(cache, remember_bad_row, &seen, &health, msg, sizeof msg), FC_OK);
    assert_int_equal(health.kernels, DAMAGED_ROWS);
    assert_int_equal(health.unreadable, 1);
    assert_int_equal(health.bad_checksums, 0);
    assert_int_equal(seen.count, 1);
    assert_string_equal(seen.key, "k2");
    assert_non_null(strstr(seen.problem, "cannot be read"));
    struct fc_cubin_record out;
    assert_int_equal(get(cache, "k1", NULL, &out, NULL), 1);   /* the rest still serve */
    fc_cubin_record_free(&out);
    fc_cache_close(cache);
}

/* A kernel whose stored row SQLite can no longer read is compiled again, and the call succeeds. */
static void test_unreadable_row_is_compiled_again(void **state)
{
    const struct temp *t = *state;
    require_nvrtc();
    struct jit_with_cache j = open_jit(t->db);
    struct fc_cubin first, again;
    get_cubin(j.jit, &first);
    close_jit(&j);   /* the WAL folded into the file */
    damage_page_holding(t->db, first.record.cubin, first.record.cubin_size, sql_int(t->db, "PRAGMA page_size"));
    j = open_jit(t->db);
    struct captured_log log = {0, ""};
    struct fc_logger logger = {FC_LOG_WARN, capture_log, &log};
    fc_jit_set_logger(j.jit, &logger);
    get_cubin(j.jit, &again);
    assert_int_equal(again.origin, FC_CUBIN_COMPILED);
    assert_int_equal(again.record.cubin_size, first.record.cubin_size);
    assert_true(log.warnings >= 1);
    assert_non_null(strstr(log.last, t->db));
    fc_cubin_free(&first);
    fc_cubin_free(&again);
    close_jit(&j);
}

/* The file at path holds the same bytes as expected (of size bytes). */
static void assert_file_holds(const char *path, const void *expected, size_t size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char *bytes = malloc(size + 1);
    assert_non_null(bytes);
    assert_int_equal(fread(bytes, 1, size + 1, f), size);
    assert_memory_equal(bytes, expected, size);
    free(bytes);
    fclose(f);
}

static void test_repair_moves_a_damaged_file_aside(void **state)
{
    const struct temp *t = *state;
    char moved[PATH_MAX], msg[MSG_MAX], garbage[5000];
    long long recovered = -1;
    make_damaged_cache(t->db);
    assert_int_equal(fc_cache_repair(t->db, moved, sizeof moved, &recovered, msg, sizeof msg), FC_OK);
    assert_true(strncmp(moved, t->db, strlen(t->db)) == 0 && strstr(moved, ".damaged-"));
    assert_int_equal(access(moved, R_OK), 0);   /* moved, not deleted */
    assert_int_equal(recovered, 1);             /* the tuning result came along */
    struct fc_cache *cache = open_cache(t->db);
    assert_int_equal(visit_all(cache).rows, 0);
    fc_cache_close(cache);
    assert_int_equal(fc_cache_repair(t->db, moved, sizeof moved, &recovered, msg, sizeof msg), FC_OK);
    assert_string_equal(moved, "");   /* healthy now: left alone */

    for (size_t i = 0; i < sizeof garbage; i++)
        garbage[i] = (char)(i * 17 + 3);
    write_file(t->db, garbage, sizeof garbage);
    assert_int_equal(fc_cache_repair(t->db, moved, sizeof moved, &recovered, msg, sizeof msg), FC_OK);
    assert_file_holds(moved, garbage, sizeof garbage);
    assert_int_equal(recovered, 0);
    cache = open_cache(t->db);
    fc_cache_close(cache);
}

static void test_repair_refuses_what_is_not_damage(void **state)
{
    const struct temp *t = *state;
    char pragma[64], moved[PATH_MAX], msg[MSG_MAX] = "";
    long long recovered = 0;
    snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", FC_CACHE_SCHEMA_VERSION + 1);
    sql(t->db, pragma, NULL, 0);
    assert_int_equal(fc_cache_repair(t->db, moved, sizeof moved, &recovered, msg, sizeof msg), FC_ERR_CACHE);
    assert_non_null(strstr(msg, "newer"));
    assert_string_equal(moved, "");
    assert_int_equal(sql_int(t->db, "PRAGMA user_version"), FC_CACHE_SCHEMA_VERSION + 1);
}

#define IN_TEMP(test) cmocka_unit_test_setup_teardown(test, temp_setup, temp_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        IN_TEMP(test_put_get_round_trip),
        IN_TEMP(test_get_by_source_key_returns_newest),
        IN_TEMP(test_unknown_key_is_a_miss),
        IN_TEMP(test_corrupt_blob_is_dropped),
        IN_TEMP(test_wrong_checksum_is_dropped),
        IN_TEMP(test_newer_schema_is_refused),
        IN_TEMP(test_fresh_file_gets_schema_and_wal),
        IN_TEMP(test_unwritable_path_is_cache_error),
        IN_TEMP(test_foreach_and_clear),
        IN_TEMP(test_jit_compiles_caches_and_replaces_corrupt),
        IN_TEMP(test_racing_processes_compile_once),
        IN_TEMP(test_handle_survives_fork),
        IN_TEMP(test_context_survives_unusable_cache_files),
        IN_TEMP(test_context_without_home),
        IN_TEMP(test_read_only_cache_is_read),
        IN_TEMP(test_system_layer_is_read_quietly),
        IN_TEMP(test_new_files_are_private),
        IN_TEMP(test_untrusted_cache_is_not_loaded),
        IN_TEMP(test_compiled_kernel_survives_a_failed_store),
        IN_TEMP(test_check_names_the_rows_of_a_damaged_page),
        IN_TEMP(test_unreadable_row_is_compiled_again),
        IN_TEMP(test_repair_moves_a_damaged_file_aside),
        IN_TEMP(test_repair_refuses_what_is_not_damage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
