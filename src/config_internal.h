/* Internal: YAML sweep specs, the lists of kernel variants that `fcjit precompile` compiles and
 * `fcjit --tune` measures. The format is described in tuning_db/precompile.yaml. */
#ifndef FC_CONFIG_INTERNAL_H
#define FC_CONFIG_INTERNAL_H

#include <stddef.h>

#include "flashcore.h"
#include "variant_internal.h"

/** The variants a spec expands to, each distinct and accepted by fc_variant_check, in the order
 *  the spec lists them. Release with fc_variant_list_free. */
struct fc_variant_list {
    struct fc_variant *items;
    size_t count;
    size_t pruned;   /**< candidates fc_variant_check rejected (not an error) */
};

/**
 * Parses a spec held in memory and expands every entry into the cartesian product of its values.
 *
 * @param text      the YAML text; need not be NUL-terminated
 * @param length    bytes of text
 * @param name      what messages call the spec: a file name, or NULL for "<embedded>"
 * @param out       receives the variants; left empty ({NULL, 0, 0}) on any failure
 * @param err       receives "name:LINE:COLUMN: what was wrong, what was expected" on failure
 *                  (1-based, at the offending node); may be NULL
 * @param err_size  bytes of err
 * @return FC_OK, FC_ERR_CONFIG (a malformed spec), FC_ERR_NOMEM, or FC_ERR_INVALID_ARG (out NULL)
 */
enum fc_status fc_config_parse_variants(const char *text, size_t length, const char *name,
                                        struct fc_variant_list *out, char *err, size_t err_size);

/**
 * Reads the spec at path and parses it with fc_config_parse_variants, which names it by path.
 *
 * @return as fc_config_parse_variants; a file that cannot be read gives FC_ERR_CONFIG and
 *         "path: reason" (strerror) in err
 */
enum fc_status fc_config_load_variants(const char *path, struct fc_variant_list *out, char *err,
                                       size_t err_size);

/** Frees the variants and empties the list. NULL is allowed. */
void fc_variant_list_free(struct fc_variant_list *list);

/** A tuning bucket: the problems of this dtype, head_dim, causality and GQA ratio whose sequence
 *  length is nearest seqlen (log scale) take its winner. Timed as batch = tokens / seqlen, heads_q
 *  = 2048 / head_dim (BENCH.md's sweep), heads_kv = heads_q / gqa. */
struct fc_tune_problem {
    enum fc_dtype dtype;
    int head_dim, causal, seqlen, gqa, tokens;
};

struct fc_tune_problem_list {
    struct fc_tune_problem *items;
    size_t count, capacity;
};

/**
 * Parses a tuning spec: `variants` (the candidates, as in a precompile spec) and `problems` (the
 * buckets: dtype, head_dim, causal, seqlen, and optionally gqa and tokens, each a value or a
 * list). Errors as fc_config_parse_variants; a spec without `problems` is one.
 */
enum fc_status fc_config_parse_tune(const char *text, size_t length, const char *name,
                                    struct fc_variant_list *variants, struct fc_tune_problem_list *problems,
                                    char *err, size_t err_size);
enum fc_status fc_config_load_tune(const char *path, struct fc_variant_list *variants,
                                   struct fc_tune_problem_list *problems, char *err, size_t err_size);
void fc_tune_problem_list_free(struct fc_tune_problem_list *list);

#endif
