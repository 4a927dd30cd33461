/* Internal: tuned winners, looked up by the forward call, written by `fcjit tune`.
 *
 * A bucket is (dtype, head_dim, causal, GQA ratio, sequence length), its dtype q's: f16, bf16, or
 * e4m3 for FP8 attention (q, K and V e4m3), whose output type is not in the key (measured with
 * FC_BUCKET_FP8_OUT, the same tiles serve an f16 out). A problem takes the winner
 * of the bucket with its dtype, head_dim, causality and GQA ratio whose sequence length is
 * nearest its own on a log scale. Winners come from the user's database, measured on this GPU
 * (name and SM count) with these kernel templates (the JIT's kernel-set hash), else from the shipped
 * layer (tuning_db/winners.tsv, embedded), measured on the same GPU model. */
#ifndef FC_TUNING_INTERNAL_H
#define FC_TUNING_INTERNAL_H

#include <stddef.h>

#include "cache_internal.h"
#include "config_internal.h"
#include "problem_internal.h"
#include "variant_internal.h"

#define FC_BUCKET_NAME_MAX 64

/** The output type an FP8-attention bucket is measured with: the library's default for dtype
 *  FC_E4M3 (out_dtype FC_DTYPE_SAME). */
#define FC_BUCKET_FP8_OUT FC_BF16

/** "f16_d128_causal_gqa1_s2048", "e4m3_d128_gqa1_s4096" (no "_causal" when it is not). */
void fc_bucket_name(const struct fc_tune_problem *bucket, char out[FC_BUCKET_NAME_MAX]);
/** The inverse of fc_bucket_name; 0 on success. */
int fc_bucket_parse(const char *name, struct fc_tune_problem *bucket);

/** The bucket key a problem is measured and looked up under (its own sequence length: the
 *  longer of seqlen_q and seqlen_k; FP8 attention's dtype FC_E4M3, not its output's). */
struct fc_tune_problem fc_bucket_of(const struct fc_problem *problem);

/** The bucket dtype a candidate is measured under: FC_E4M3 for FP8 attention (q_fp8), else its own. */
enum fc_dtype fc_bucket_dtype(const struct fc_variant *variant);

/** 1 if a bucket measures the candidate as it is named: buckets have no window, softcap,
 *  per-sequence lengths, page table or FP8 cache beside a 16-bit q, and FP8 attention's output is
 *  FC_BUCKET_FP8_OUT; for another candidate, another kernel would run under its name. */
int fc_bucket_measures(const struct fc_variant *variant);

struct fc_tuned {
    struct fc_tune_problem bucket;
    struct fc_variant variant;
    double median_ms;
    int shipped;           /* from the shipped layer rather than the user's database */
    int own_driver;        /* measured with this process's driver */
    double log2_seqlen;    /* of the bucket, for the nearest-bucket lookup on every call */
    char measured_at[32];
    char reason[200];      /* what fc_attention_plan says about it */
};

struct fc_tuned_table {
    struct fc_tuned *items;
    size_t count, capacity;
};

/**
 * Loads the winners that apply to this GPU: the database's (same GPU name, SM count and kernel
 * set; of several drivers, the one measured last), then the shipped layer's for buckets the
 * database has none for. Rows that name no variant this build knows are skipped.
 * @param shipped_text  the shipped layer's TSV (NULL: none)
 */
enum fc_status fc_tuned_load(struct fc_tuned_table *table, struct fc_cache *cache, const struct fc_tuning_identity *id,
                             int arch, int arch_specific, const char *shipped_text, char *msg, size_t msg_size);
void fc_tuned_free(struct fc_tuned_table *table);

/** The winner for a problem's nearest bucket, or NULL. */
const struct fc_tuned *fc_tuned_find(const struct fc_tuned_table *table, const struct fc_problem *problem);

/** One tuning row as a tab-separated line (the export and shipped-layer format), newline ended. */
void fc_tuning_row_format(const struct fc_tuning_row *row, char *out, size_t size);
/** Parses such a line; 0 on success. */
int fc_tuning_row_parse(const char *line, struct fc_tuning_row *row);

#endif
