/* Internal: the SQLite store of compiled kernels (schema in tuning_db/schema.sql). */
#ifndef FC_CACHE_INTERNAL_H
#define FC_CACHE_INTERNAL_H

#include <stddef.h>

#include "flashcore.h"
#include "variant_internal.h"

/* Bump when the schema or the meaning of a key changes; part of every cache key. */
#define FC_CACHE_SCHEMA_VERSION 1
#define FC_KEY_HEX 33   /* 128-bit key as 32 hex digits + NUL */

struct fc_cache;

struct fc_cubin_record {
    char key[FC_KEY_HEX];
    char source_key[FC_KEY_HEX];
    char name[FC_VARIANT_NAME_MAX];
    char arch[FC_ARCH_NAME_MAX];
    char nvrtc_version[16];
    int registers, smem_static, smem_dynamic, spill_stores, spill_loads, stack_bytes;
    double compile_ms;
    int wgmma_serialized; /* compiled now, and ptxas serialized its WGMMAs (for the log; not stored) */
    void *cubin;          /* owned by the record when it came from fc_cache_get */
    size_t cubin_size;
    char created_at[24];
};

/** Where the cache lives by default: $FC_TUNING_DB, $XDG_CACHE_HOME/flashcore/tuning.db, or
 *  $HOME/.cache/flashcore/tuning.db. Returns -1 if none can be formed. */
int fc_cache_default_path(char *out, size_t out_size);

/**
 * Opens the cache at path for reading and writing, creating folder (0700), file (0600) and schema
 * as needed. Fails (FC_ERR_CACHE, *out NULL, the reason and the fix in msg) where
 * fc_cache_open_usable would fall back to reading only or to memory.
 */
enum fc_status fc_cache_open(const char *path, struct fc_cache **out, char *msg, size_t msg_size);

/** What fc_cache_open_usable made of a cache file. */
enum fc_cache_state {
    FC_CACHE_READ_WRITE = 0,
    FC_CACHE_READ_ONLY,      /* read, never written: a system layer, or a file this user cannot write */
    FC_CACHE_DAMAGED,        /* not used: not a database, or a malformed one (fc_cache_repair) */
    FC_CACHE_UNUSABLE,       /* not used: no path, not trusted, a newer schema, not a file, ... */
};

/**
 * Opens the cache for a context, which a cache file never stops: the file at path (NULL or "":
 * fc_cache_default_path) read-write if it can be, else read-only (a system layer, or a file or
 * folder this user cannot write), else not at all (*out NULL: kernels are kept in memory).
 * Not loaded from at all: a file that is damaged, from a newer FlashCore, not a regular file, or
 * not trusted (fc_cache_file_trust).
 * @param state    may be NULL
 * @param warning  "" when all is as it should be (a system layer included); else one sentence
 *                 naming the file, what is wrong and the fix, for the caller to log
 * @return FC_OK, or FC_ERR_NOMEM
 */
enum fc_status fc_cache_open_usable(const char *path, struct fc_cache **out, enum fc_cache_state *state,
                                    char *warning, size_t warning_size);
void fc_cache_close(struct fc_cache *cache);
const char *fc_cache_path(const struct fc_cache *cache);
/** 0 when the cache is read only (nothing is stored: fc_cache_put and the deletes fail). */
int fc_cache_writable(const struct fc_cache *cache);

/* ---- the file and folder (cache_file.c) ---- */

/** Who the cache file may be trusted as. */
enum fc_cache_trust {
    FC_TRUST_OWN = 0,          /* this user's (or not there yet): read and write */
    FC_TRUST_SYSTEM_LAYER,     /* root's and not writable by others, this user not root: read only */
    FC_TRUST_REFUSED,          /* owned by another user, or writable by group or others: not read */
};

/** Judges the file at path (if there) and its folder, following links; why gets the reason when
 *  refused. A folder or file owned by another user than this one or root, or writable by group or
 *  others, is refused. */
enum fc_cache_trust fc_cache_file_trust(const char *path, char *why, size_t why_size);
/** mkdir -p of path's folder, new folders 0700. 0, or -1 with errno. */
int fc_cache_make_folder(const char *path);
/** Creates path empty and 0600 unless it exists. 0, or -1 with errno. */
int fc_cache_create_file(const char *path);
/** Renames path, and its -wal and -shm files, to <path>.damaged-<UTC time>; moved_to gets the new
 *  name. 0, or -1 with errno. */
int fc_cache_move_aside(const char *path, char *moved_to, size_t moved_size);

/**
 * Looks a cubin up by key or, when key is NULL, the newest by source_key.
 * A row whose checksum fails is deleted and reported as a miss with *corrupt set.
 * @param found  1 on a hit (out then owns its cubin: fc_cubin_record_free)
 */
enum fc_status fc_cache_get(struct fc_cache *cache, const char *key, const char *source_key,
                            struct fc_cubin_record *out, int *found, int *corrupt,
                            char *msg, size_t msg_size);

/** Inserts or replaces a row (checksum computed here), in one IMMEDIATE transaction. */
enum fc_status fc_cache_put(struct fc_cache *cache, const struct fc_cubin_record *record,
                            char *msg, size_t msg_size);

/** Calls visit for every row, oldest first; a nonzero return stops the walk. */
typedef int (*fc_cache_visit_fn)(void *user, const struct fc_cubin_record *record, int checksum_ok);
enum fc_status fc_cache_foreach(struct fc_cache *cache, fc_cache_visit_fn visit, void *user,
                                char *msg, size_t msg_size);

enum fc_status fc_cache_delete(struct fc_cache *cache, const char *key, char *msg, size_t msg_size);
/** Deletes every cubin row and the lock files; *deleted gets the row count. */
enum fc_status fc_cache_clear(struct fc_cache *cache, int *deleted, char *msg, size_t msg_size);

/**
 * Takes a cross-process lock on one key (flock on a file beside the database), so that many
 * processes starting at once compile each kernel once. Blocks; released by fc_cache_unlock or
 * by the process ending. Returns the lock handle, or -1 (then proceed unlocked).
 */
int fc_cache_lock(struct fc_cache *cache, const char *key);
void fc_cache_unlock(int lock);

void fc_cubin_record_free(struct fc_cubin_record *record);

/* ---- checking and repairing the file (cache_check.c: `fcjit info`, `cache verify`, `cache repair`) ---- */

/** What fc_cache_check found. */
struct fc_cache_health {
    int kernels;             /* cubin rows found, whether readable or not */
    int bad_checksums;       /* rows whose cubin fails its checksum (recompiled at next use) */
    int unreadable;          /* rows SQLite cannot read: the file is damaged */
    long long bytes;         /* of the cubins read */
    long long tuning_results;   /* -1 when they cannot be counted */
    char damage[512];        /* "" or the first damage found (PRAGMA quick_check, or a walk) */
};

/** Is told each bad row: its key, its name ("" when unreadable too) and what is wrong. */
typedef void (*fc_cache_bad_row_fn)(void *user, const char *key, const char *name, const char *problem);

/**
 * Checks the whole file: PRAGMA quick_check, then each cubin row by itself, so that a damaged
 * page names its rows instead of ending the walk. bad_row may be NULL.
 * @return FC_OK when the check ran (health says what it found)
 */
enum fc_status fc_cache_check(struct fc_cache *cache, fc_cache_bad_row_fn bad_row, void *user,
                              struct fc_cache_health *health, char *msg, size_t msg_size);

/** Counts rows without reading cubins: what `cache clear` would delete, and what it keeps. */
enum fc_status fc_cache_count(struct fc_cache *cache, long long *kernels, long long *bytes,
                              long long *tuning_results, char *msg, size_t msg_size);

/**
 * Recovers a damaged cache file (SQLite cannot read it as a database, or fc_cache_check finds
 * damage): moves it aside (fc_cache_move_aside; nothing is deleted), creates a fresh one at path
 * (NULL or "": fc_cache_default_path) and copies into it the tuning results still readable.
 * A healthy file is left alone (moved_to "").
 * @return FC_OK; FC_ERR_CACHE with the reason in msg when the file is not a damaged cache this
 *         user may repair (not trusted, a newer schema, a folder, read only, ...)
 */
enum fc_status fc_cache_repair(const char *path, char *moved_to, size_t moved_size, long long *recovered,
                               char *msg, size_t msg_size);

/* ---- tuning results (`fcjit tune`) ---- */

/** What a measurement is valid for: the GPU, its driver and the kernel templates. */
struct fc_tuning_identity {
    char gpu_name[128];
    int sm_count;
    char driver[32];       /* "13.0" */
    char kernel_set[FC_KEY_HEX];   /* fc_jit_kernel_set_hash: every template the JIT compiles from */
};

struct fc_tuning_row {
    struct fc_tuning_identity id;
    char bucket[64];
    char variant[96];
    double median_ms, tflops;
    int passed_check, winner;
    char measured_at[32];
};

/** Stores one measurement (replacing an earlier one of the same identity, bucket and variant),
 *  in its own IMMEDIATE transaction, so an interrupted sweep keeps every finished one. */
enum fc_status fc_tuning_put(struct fc_cache *cache, const struct fc_tuning_row *row, char *msg, size_t msg_size);

/** *found = 1 if the identity already has a measurement of variant in bucket. */
enum fc_status fc_tuning_has(struct fc_cache *cache, const struct fc_tuning_identity *id, const char *bucket,
                             const char *variant, int *found, char *msg, size_t msg_size);

/**
 * Marks the bucket's winner (and no other): the fastest measurement that passed its check, unless
 * the incumbent (the heuristic's choice; NULL or "" for none) passed and is within `margin` (a
 * fraction, e.g. 0.02) of it: a win smaller than the timing noise does not replace the incumbent.
 */
enum fc_status fc_tuning_mark_winner(struct fc_cache *cache, const struct fc_tuning_identity *id,
                                     const char *bucket, const char *incumbent, double margin, char *msg,
                                     size_t msg_size);

/** Calls visit for every measurement (winners_only: the winners), by GPU, bucket, time. */
typedef int (*fc_tuning_visit_fn)(void *user, const struct fc_tuning_row *row);
enum fc_status fc_tuning_foreach(struct fc_cache *cache, int winners_only, fc_tuning_visit_fn visit, void *user,
                                 char *msg, size_t msg_size);

/* ---- for the cache's own files (cache_check.c, cache_tuning.c) ---- */

/** This process's connection (opened again after a fork()), or NULL with *status and msg saying
 *  why (for_writing: also when the cache is read only). */
struct sqlite3 *fc_cache_sqlite(struct fc_cache *cache, int for_writing, enum fc_status *status, char *msg,
                                size_t msg_size);

/** XXH3-64 of data as 16 hex digits. */
void fc_checksum_hex(const void *data, size_t size, char out[17]);

#endif
