/* Internal: host-side tools for checking kernels: 16-bit and e4m3 conversions, random inputs, and
 * an fp64 CPU attention with the error a plain dtype-native computation would make beside it.
 * Used by `fcjit run` and the GPU tests; not part of the public API. */
#ifndef FC_REFERENCE_CPU_INTERNAL_H
#define FC_REFERENCE_CPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "flashcore.h"
#include "mask_internal.h"

float fc_half_to_float(uint16_t bits);
uint16_t fc_float_to_half(float value);             /* round to nearest even */
float fc_bf16_to_float(uint16_t bits);
uint16_t fc_float_to_bf16(float value);             /* round to nearest even */
float fc_storage_to_float(enum fc_dtype dtype, uint16_t bits);
uint16_t fc_float_to_storage(enum fc_dtype dtype, float value);
/** Rounds through the dtype: what storing value and reading it back gives. */
float fc_round_to(enum fc_dtype dtype, float value);

/** FP8 e4m3 (OCP "e4m3fn": bias 7, 3 mantissa bits, no infinities, 0x7f and 0xff NaN, largest
 *  448, subnormals m * 2^-9): the exact value of a code. */
float fc_e4m3_to_float(uint8_t bits);
/** The nearest e4m3 code, ties to even; NaN gives 0x7f, and a magnitude past 448 (infinities too)
 *  saturates to +-448, as cvt.rn.satfinite does. NOTE: torch's float8_e4m3fn cast agrees up to 464,
 *  the rounding boundary, and gives NaN past it. */
uint8_t fc_float_to_e4m3(float value);

/** xoshiro-style generator state; fc_random_normal draws N(0, 1). */
struct fc_random {
    uint64_t s[4];
    double spare;    /* the second value of the last Box-Muller pair */
    int has_spare;
};
void fc_random_seed(struct fc_random *random, uint64_t seed);
/** splitmix64's finalizer: a bijection of 64-bit words whose outputs for neighbouring inputs look
 *  unrelated (seeds of independent streams, a rotation's signs). */
uint64_t fc_mix64(uint64_t z);
double fc_random_normal(struct fc_random *random);
uint64_t fc_random_below(struct fc_random *random, uint64_t bound);

/** A problem on the host: packed [batch, seq, head, head_dim] tensors, q and out 16-bit, k and v
 *  16-bit or (an FP8 KV cache) e4m3. */
struct fc_host_problem {
    enum fc_dtype dtype;
    int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;
    struct fc_mask mask;          /* as src/problem.c resolves it: which keys a row sees (src/mask.c) */
    float softmax_scale;          /* resolved, never 0 */
    const uint16_t *q, *k, *v;
    const float *sinks;           /* [heads_q] logits joining each row's denominator, or NULL */
    float softcap;                /* 0: none; else scores s -> softcap * tanh(s / softcap) */
    /* Per-sequence lengths, host copies of src/flashcore.h's (NULL: dense). Varlen (cu_seqlens_q
     * set): q/out are packed [seqlen_q tokens, heads_q, head_dim], k/v [seqlen_k tokens, ...], and
     * batch is the sequence count; seqused_k replaces a sequence's key count. */
    const int32_t *cu_seqlens_q, *cu_seqlens_k, *seqused_k;
    /* A paged K/V cache (page_size > 0): k and v are packed [num_pages, page_size, heads_kv,
     * head_dim], and key j of sequence b is slot j % page_size of page page_table[b *
     * page_table_stride + j / page_size]; cu_seqlens_k is NULL, and a sequence has seqused_k[b] keys,
     * or seqlen_k. page_size 0: not paged. */
    int page_size, page_table_stride;
    const int32_t *page_table;
    /* An FP8 KV cache (kv_fp8 1): k and v are NULL and k8 and v8 hold e4m3 codes in their layout;
     * element (b, j, h, d) of K stands for k_descale[b * heads_kv + h] * e4m3(k8[...]) (b the sequence;
     * k_descale NULL: 1), and V's likewise. The fp64 answer takes those values exactly; the native
     * one what PyTorch computing in the dtype takes, (k8.float() * k_descale).to(dtype). */
    int kv_fp8;
    const uint8_t *k8, *v8;
    const float *k_descale, *v_descale;   /* [batch, heads_kv] fp32, or NULL */
    /* FP8 attention (q_fp8 1, kv_fp8 too): q is NULL and q8 holds e4m3 codes, element (b, i, h, d)
     * standing for q_descale[b * heads_kv + h / (heads_q / heads_kv)] * e4m3(q8[...]); dtype is out's.
     * The kernels round P to e4m3 for P V: each row's answer carries the bound of that rounding. */
    int q_fp8;
    const uint8_t *q8;
    const float *q_descale;
};

/** One sequence of a host problem: its first query and key tokens and its lengths. */
struct fc_host_sequence {
    int q_row0, k_row0, len_q, len_k;
};

/** Sequence b of the problem (dense: row 0 of batch b, the problem's lengths, seqused_k's keys). */
struct fc_host_sequence fc_host_sequence_of(const struct fc_host_problem *problem, int b);

/** One query row's answers. */
struct fc_row_reference {
    int visible_keys;             /* 0: out must be 0, and lse -inf or the row's sink */
    double lse;                   /* natural log, the sink included; -inf when no key is visible and no sink */
    double *out;                  /* [head_dim], fp64 from the same inputs (FP8: dequantized exactly) */
    double *native;               /* [head_dim], emulating PyTorch's math path in the dtype */
    /* [head_dim] or NULL. FP8 attention: how far rounding P to e4m3 (round to nearest; P of a row at
     * most 2^8 below its running max, fwd_sm90.cuh) can move each output, P_ROUNDING_BOUND below. */
    double *p_bound;
    double native_lse;            /* the math path's LSE (fp32 logsumexp of its scores) */
    /* FP8 attention: how far FP8 WGMMA's accumulation of the scores can move the LSE, at most
     * (FC_FP8_ACCUMULATION_ROUNDING below); else 0 */
    double lse_bound;
};

/** The error rounding each P_j to e4m3 can bring to output column d of a row, at most: a normal
 *  e4m3 rounds within 2^-4 of its value, a subnormal (below 2^-6, i.e. weights under 2^-14 of the
 *  row's largest once P is 2^8 at its max) within 2^-10 absolute; the row sum stays unrounded, so
 *  |O~_d - O_d| <= 2^-4 sum_j w_j |v_jd| + 2^-18 sum_j |v_jd| (w_j the exact softmax weights). */
#define FC_P_RELATIVE_ROUNDING 0.0625
#define FC_P_ABSOLUTE_ROUNDING 3.814697265625e-06   /* 2^-18 */

/** FP8 WGMMA adds each k-step of 32 e4m3 products into an accumulator that keeps about 14 bits
 *  (DeepSeek-V3's measurement on Hopper), so each step can lose 2^-14 of what has accumulated, at
 *  most sum_d |q_d k_d|: a score is off by at most ceil(head_dim / 32) 2^-14 scale sum_d |q_d k_d|
 *  (a softcap's tanh only shrinks that), and the LSE, a smooth maximum of the scores, by at most
 *  the largest of those over the row's keys. */
#define FC_FP8_ACCUMULATION_ROUNDING 6.103515625e-05   /* 2^-14 a k-step */

/** Computes row (batch b, query head h, query row i of sequence b: i < its len_q). scratch: 2 *
 *  seqlen_k doubles. */
void fc_reference_row(const struct fc_host_problem *p, int b, int h, int i,
                      struct fc_row_reference *row, double *scratch);

/** Error judgement of BENCH.md over a set of rows. */
struct fc_error_stats {
    double max_error;             /* max |out - ref| */
    double native_error;          /* max |native - ref|: what the dtype itself costs */
    double max_lse_error;
    double native_lse_error;      /* max |native lse - lse| over rows with a finite lse */
    /* FP8 attention (rows with p_bound): max |out - ref| - p_bound, judged in max_error's place */
    int p_bounded;
    double max_excess;
    /* FP8 attention: max |lse - ref| - lse_bound, judged in max_lse_error's place */
    double max_lse_excess;
    long long rows;
    long long bad_rows;           /* rows (or elements) that broke a rule: NaN/Inf, unwritten,
                                     written outside the tensor, a keyless row not 0 */
};

/** Folds one row's kernel output (16-bit) and lse (may be NULL) into stats. */
void fc_error_accumulate(struct fc_error_stats *stats, const struct fc_host_problem *p,
                         const struct fc_row_reference *row, const uint16_t *out_row, const float *lse);

/** max_error (FP8 attention: max_excess) <= 2 * native_error + 1e-5, lse error <= 1e-3 (FP8
 *  attention: or twice the native LSE error, if more), no bad rows. */
int fc_error_passes(const struct fc_error_stats *stats);

#endif
