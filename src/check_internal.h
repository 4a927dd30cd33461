/* Internal: run one problem on the device with fresh random inputs and a poisoned output, and
 * judge it against the fp64 CPU reference. Shared by `fcjit run` and the GPU tests. */
#ifndef FC_CHECK_INTERNAL_H
#define FC_CHECK_INTERNAL_H

#include <stdint.h>

#include "context_internal.h"
#include "reference_cpu_internal.h"

/** How the device tensors are laid out. */
enum fc_check_layout {
    FC_LAYOUT_PACKED = 0,   /* [batch, seq, head, dim], strides passed as 0 */
    FC_LAYOUT_BHSD = 1,     /* [batch, head, seq, dim] with every row padded by 16 bytes (8 16-bit
                               elements, 16 e4m3 ones: strides stay multiples of 16 bytes) */
};

struct fc_check_case {
    struct fc_attention_params shape;   /* sizes, dtype and kv_dtype, mask (causal, window), scale;
                                           pointers (k_descale, v_descale too) and strides ignored */
    enum fc_check_layout layout;
    int want_lse;
    long long check_rows;               /* 0: every row */
    uint64_t seed;
    float sinks_magnitude;              /* 0: no sinks; else one per query head, N(0, 1) times this */
    /* Per-sequence lengths, host arrays of shape.batch entries (NULL: dense). lens_q set: a varlen
     * batch (packed layout only): shape.seqlen_q/_k and max_seqlen_q/_k are derived from the lengths
     * (lens_k NULL: the same as lens_q), and FC_CHECK_PAD_TOKENS tokens of no sequence follow the
     * last one, whose output must stay untouched. used_k: seqused_k (varlen or dense). */
    const int *lens_q, *lens_k, *used_k;
    /* A paged K/V cache, 0: none. Else k and v are [num_pages, page_size, heads_kv, head_dim] (in the
     * case's layout), shape.seqlen_k is every sequence's key capacity (lens_k must be NULL: with
     * lens_q, cu_seqlens_k is NULL and used_k gives the key counts), and the check draws a random
     * page table: each sequence's pages in a random order from a shuffled pool with
     * FC_CHECK_SPARE_PAGES more pages than needed; every slot no sequence's used key owns (unused
     * pages, a last page's tail, keys past used_k) holds NaN, and so do the table entries' targets
     * past a sequence's pages (a page of NaN). */
    int page_size;
    /* An FP8 KV cache (shape.kv_dtype FC_E4M3): K and V are drawn N(0, 1) as ever and stored as the
     * e4m3 codes of value / kv_descale (saturating; NaN where they are poisoned), and each (sequence,
     * K/V head) gets its own k and v descale, kv_descale times 2^U(-1, 1), drawn apart: the kernel's
     * dequantized K and V are N(0, 1) times a head's factor, so that a descale read for the wrong
     * sequence or head shows. kv_descale 0: codes of N(0, 1) itself (subnormals among them) and no
     * descale arrays (NULL: 1). Set only with FC_E4M3. FP8 attention (shape.dtype FC_E4M3): q's codes
     * and q descales the same way (shape.out_dtype the output's type). */
    float kv_descale;
};

/** Pages a paged check allocates beyond its sequences': unused, NaN. */
#define FC_CHECK_SPARE_PAGES 3

/** Tokens after a varlen batch's last sequence in the check's tensors: never written. */
#define FC_CHECK_PAD_TOKENS 5

struct fc_check_run {
    struct fc_check_case c;
    struct fc_attention_params params;  /* ready to pass to fc_attention_forward */
    const struct fc_cuda_api *cuda;
    struct fc_host_problem host;        /* packed host copies of q, k, v */
    uint16_t *host_q, *host_k, *host_v, *host_out, *staging;   /* FP8: host_k, host_v NULL */
    uint8_t *host_k8, *host_v8;         /* FP8 K/V: e4m3 codes, packed (else NULL) */
    uint8_t *host_q8;                   /* FP8 attention: q's e4m3 codes, packed (host_q NULL; else NULL) */
    float *host_k_descale, *host_v_descale, *host_q_descale;   /* FP8: [batch, heads_kv] (NULL: kv_descale 0) */
    CUdeviceptr k_descale, v_descale, q_descale;
    int kv_bytes;                       /* bytes of a K/V element: 1 (FP8) or 2 */
    int q_bytes;                        /* bytes of a q element: 1 (FP8 attention) or 2 */
    float *host_lse, *host_sinks;       /* host_sinks: NULL without sinks */
    CUdeviceptr q, k, v, out, lse, sinks;
    int32_t *host_cu_q, *host_cu_k, *host_used_k;   /* per-sequence inputs (NULL: none) */
    CUdeviceptr cu_q, cu_k, used_k;
    int32_t *host_page_table;           /* paged: [batch, page_table_stride] (NULL: not paged) */
    CUdeviceptr page_table;
    int kv_batch, kv_seqlen;            /* the K/V tensors' first two dimensions: paged, pages and page_size */
    int layout_batch;                   /* batches of the device tensors' layout: 1 for varlen */
    size_t q_elements, kv_elements, o_elements, lse_count;   /* device buffers, in elements (K/V's of
                                                                kv_bytes each) */
    /* the sampled rows' fp64 references, computed by the first fc_check_verify and kept for the
     * run's later ones (its inputs do not change: fcjit tune checks a bucket's every candidate on one
     * run); NULL: every verify computes them */
    struct fc_check_reference *reference;
};

/**
 * Draws random inputs, uploads them in the case's layout, poisons out and lse with NaN.
 * The context's CUDA context must be current. Release with fc_check_release in every case.
 */
enum fc_status fc_check_prepare(struct fc_context *ctx, const struct fc_check_case *c,
                                struct fc_check_run *run, char *msg, size_t msg_size);

/** Poisons out and lse again (before a repeated launch). */
enum fc_status fc_check_poison(struct fc_check_run *run, char *msg, size_t msg_size);

/** Downloads out and lse into host_out / host_lse (host_out packed). */
enum fc_status fc_check_download(struct fc_check_run *run, char *msg, size_t msg_size);

/**
 * Judges the downloaded output: every element finite (so written), sampled rows (always the first
 * and the last) against the CPU reference by BENCH.md's rule; varlen: the tokens of no sequence
 * still hold the poison. Returns 1 if it passes. The same rows each call (the case's seed); their
 * references are computed once a run where there are at most FC_CHECK_ROWS_KEPT of them.
 */
int fc_check_verify(const struct fc_check_run *run, struct fc_error_stats *stats);

void fc_check_release(struct fc_check_run *run);

#define FC_CHECK_ROWS_KEPT 4096   /* sampled rows whose references a run keeps (3 x head_dim doubles each) */

/** How many sampled rows' references the run keeps from its first fc_check_verify (0: none yet, or
 *  more rows than FC_CHECK_ROWS_KEPT: each verify computes them). */
long long fc_check_kept_rows(const struct fc_check_run *run);

#endif
