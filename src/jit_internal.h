/* Internal: variant -> generated source -> cubin, through the SQLite cache or NVRTC. */
#ifndef FC_JIT_INTERNAL_H
#define FC_JIT_INTERNAL_H

#include <stddef.h>

#include "cache_internal.h"
#include "log_internal.h"
#include "variant_internal.h"

/* Every generated translation unit defines this kernel (and its family's second entry, if any). */
#define FC_KERNEL_ENTRY "fc_attention_kernel"
#define FC_SOURCE_MAX 2048

struct fc_jit;

/** Where a cubin came from. */
enum fc_cubin_origin {
    FC_CUBIN_CACHED = 0,      /* read from SQLite, checksum verified */
    FC_CUBIN_COMPILED = 1,    /* compiled now by NVRTC and stored */
};

struct fc_cubin {
    struct fc_cubin_record record;   /* owns the cubin bytes */
    enum fc_cubin_origin origin;
    int replaced_corrupt;            /* a stored row failed its checksum and was recompiled */
};

/**
 * @param template_dir  NULL: the embedded templates; else read every file under this folder
 * @param cache         NULL: compile every time (nothing persisted); not owned
 */
enum fc_status fc_jit_create(const char *template_dir, struct fc_cache *cache, struct fc_jit **out,
                             char *msg, size_t msg_size);
void fc_jit_destroy(struct fc_jit *jit);

/** Where compile and cache events go (not owned; NULL: nowhere). */
void fc_jit_set_logger(struct fc_jit *jit, const struct fc_logger *logger);

/** Writes the translation unit for a variant; returns its length or -1 if it did not fit. */
int fc_jit_generate_source(const struct fc_variant *variant, char *out, size_t out_size);

/**
 * The variant's cache keys. key covers everything that changes the binary, source_key the same
 * less the NVRTC version. nvrtc_version NULL: the loaded NVRTC's (key is then "" without one).
 */
enum fc_status fc_jit_keys(struct fc_jit *jit, const struct fc_variant *variant,
                           const char *nvrtc_version, char key[FC_KEY_HEX],
                           char source_key[FC_KEY_HEX], char *msg, size_t msg_size);

/**
 * The cubin of a variant: from the cache, else compiled (once across processes) and stored.
 * Thread-safe. force_compile skips the cache read (the result still replaces the stored row).
 */
enum fc_status fc_jit_get_cubin(struct fc_jit *jit, const struct fc_variant *variant,
                                int force_compile, struct fc_cubin *out, char *msg, size_t msg_size);

/** The cubin of a variant if the cache holds it (*found 1), never compiling. Thread-safe. */
enum fc_status fc_jit_find_cubin(struct fc_jit *jit, const struct fc_variant *variant, struct fc_cubin *out,
                                 int *found, char *msg, size_t msg_size);

/**
 * Compiles a variant without the cache, the log or the JIT's lock, for a worker thread (the quick
 * first call's, src/compile_worker.c): the record carries its keys for fc_jit_store, which the
 * caller's thread runs. Thread-safe (NVRTC's programs are per call; the templates are read only).
 */
enum fc_status fc_jit_compile_detached(struct fc_jit *jit, const struct fc_variant *variant, struct fc_cubin *out,
                                       char *msg, size_t msg_size);

/** Logs a detached compile as fc_jit_get_cubin logs its own, and stores the cubin (a cache that cannot
 *  be written keeps nothing; a failed write is a warning: the kernel is used all the same). */
void fc_jit_store(struct fc_jit *jit, const struct fc_cubin *cubin);

void fc_cubin_free(struct fc_cubin *cubin);

/** Hash of every template file the JIT compiles from (embedded, or FC_TEMPLATE_DIR's): identifies
 *  the kernel set; tuning results are keyed by it. */
void fc_jit_kernel_set_hash(const struct fc_jit *jit, char out[FC_KEY_HEX]);

/** The compile options used for an arch, NULL-terminated, e.g. for display. */
int fc_jit_compile_options(const struct fc_variant *variant, const char *options[], int max);

#endif
