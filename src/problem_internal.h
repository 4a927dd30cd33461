/* Internal: a validated attention problem. Validation is in two halves: the shape rules (sizes,
 * dtype, strides, scale: enough to plan, so fc_attention_plan, fcjit and the tuner need no
 * tensors) and the tensor rules (pointers and their alignment: what a launch adds). */
#ifndef FC_PROBLEM_INTERNAL_H
#define FC_PROBLEM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "dtype_internal.h"
#include "flashcore.h"
#include "mask_internal.h"

/** sizeof(struct fc_attention_params) in 0.2.0, its first versioned form: every caller's struct has
 *  at least its fields (0.2.0 ended with causal, with no tail padding). */
#define FC_PARAMS_SIZE_0_2 (offsetof(struct fc_attention_params, causal) + sizeof(int))

/** fc_attention_params after every rule is checked: strides resolved, scale resolved. */
struct fc_problem {
    enum fc_dtype dtype;
    int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;
    struct fc_mask mask;     /* which keys each query row sees (src/mask.c) */
    const void *q, *k, *v;   /* NULL until the tensor rules are checked */
    void *out;
    float *lse;
    const float *sinks;      /* NULL: none (a tensor rule: a pointer) */
    int64_t q_stride[3], k_stride[3], v_stride[3], o_stride[3];
    float softmax_scale;
    float softcap;           /* 0: none */
    /* Per-sequence lengths (the kernels' VARLEN switch): varlen (cu_seqlens, packed tokens) and/or
     * seqused_k. Dense problems have all of these 0/NULL. */
    int varlen;              /* max_seqlen_q > 0: q/k/v/out are [tokens, head, dim], strides[0] 0 */
    int seqused;             /* seqused_k given (non-NULL): keys per sequence */
    int max_seqlen_q, max_seqlen_k;   /* the longest sequence's lengths: varlen's, else seqlen_q/_k */
    const int32_t *cu_seqlens_q, *cu_seqlens_k, *seqused_k;   /* NULL until the tensor rules */
    /* A paged K/V cache (the kernels' PAGED switch, which takes the per-sequence form too): k and v
     * are [num_pages, page_size, heads_kv, head_dim], k_stride / v_stride {page, token, head}. */
    int paged;               /* page_size > 0 */
    int page_size, page_table_stride, num_pages;
    const int32_t *page_table;   /* NULL until the tensor rules */
    /* An FP8 KV cache (the kernels' KV_FP8 switch): k and v are e4m3, one byte an element (k_stride /
     * v_stride stay in elements), q and out dtype; each (sequence, K/V head) has a K and a V scale. */
    int kv_fp8;              /* kv_dtype FC_E4M3, or FP8 attention */
    const float *k_descale, *v_descale;   /* [batch, heads_kv] fp32, NULL = 1 (a tensor rule) */
    /* FP8 attention (the kernels' Q_FP8 switch; kv_fp8 too): q is e4m3 as well, and dtype above is
     * out's (the caller's out_dtype), the type the kernels compute P V's output in. */
    int q_fp8;               /* the caller's dtype FC_E4M3 */
    const float *q_descale;  /* [batch, heads_kv] fp32, NULL = 1 (a tensor rule) */
};

/** Storage bytes of one q element: 1 for FP8 attention, else dtype's. */
static inline int fc_problem_q_bytes(const struct fc_problem *p)
{
    return p->q_fp8 ? 1 : fc_dtype_bytes(p->dtype);
}

/** Storage bytes of one K or V element: 1 for an FP8 cache, else dtype's. */
static inline int fc_problem_kv_bytes(const struct fc_problem *p)
{
    return p->kv_fp8 ? 1 : fc_dtype_bytes(p->dtype);
}

/** Whether the problem takes the kernels' per-sequence form (varlen, seqused_k, or a paged cache,
 *  whose kernels find each sequence's keys through its row of the page table). */
static inline int fc_problem_per_sequence(const struct fc_problem *p)
{
    return p->varlen || p->seqused || p->paged;
}

/**
 * The shape rules: every size, the dtype, the mask (causality and window, resolved into
 * problem->mask: src/mask.c), the scale and the softcap, and the strides (resolved; every element's byte offset
 * fits in 64 bits). Reads no pointer. Needs no GPU.
 * @return FC_OK, FC_ERR_INVALID_ARG (a rule is broken) or FC_ERR_UNSUPPORTED (valid, no kernel)
 */
enum fc_status fc_problem_shape(const struct fc_attention_params *params, struct fc_problem *out, char *msg,
                                size_t msg_size);

/**
 * The tensor rules, after fc_problem_shape: q, k, v and out present and 16-byte aligned, lse and
 * sinks (optional) 4-byte aligned, lse's rows addressable; copies the pointers into *problem.
 * @return FC_OK or FC_ERR_INVALID_ARG
 */
enum fc_status fc_problem_tensors(const struct fc_attention_params *params, struct fc_problem *problem, char *msg,
                                  size_t msg_size);

/** One tensor's strides {batch, seq, head} in elements: all 0 resolves to packed; else each positive
 *  and a multiple of 16 bytes, and the furthest element's byte offset fits in 64 bits (kernels
 *  index in 64 bits). The message names the tensor. Shared with fc_attention_merge. */
enum fc_status fc_problem_strides(const char *name, const int64_t given[3], int batch, int seqlen, int heads,
                                  int head_dim, int element_bytes, int64_t out[3], char *msg, size_t msg_size);

/** A varlen tensor's strides ([tokens, head, head_dim]): stride[0] must be 0, stride[1] (token) and
 *  stride[2] (head) both 0 (packed) or both valid, as fc_problem_strides'. Shared with fc_quantize. */
enum fc_status fc_problem_varlen_strides(const char *name, const int64_t given[3], int tokens, int heads,
                                         int head_dim, int element_bytes, int64_t out[3], char *msg, size_t msg_size);

/** Writes the printf-style message into msg (size bytes) and returns status: every rule's failure.
 *  Shared with the public calls that validate their own structs (fc_quantize). */
enum fc_status fc_problem_fail(enum fc_status status, char *msg, size_t msg_size, const char *format, ...)
    __attribute__((format(printf, 4, 5)));

/** A size of a public struct, by its field's name. */
struct fc_named_size {
    const char *name;
    int value;
};

/** Each size positive; the message names the first that is not. Shared by every public call's rules
 *  (attention, fc_attention_merge, fc_quantize). */
enum fc_status fc_problem_positive(const struct fc_named_size *sizes, size_t count, char *msg, size_t msg_size);

/** A device pointer present and `align`-byte aligned; the message names it. */
enum fc_status fc_problem_pointer(const char *name, const void *pointer, unsigned align, char *msg, size_t msg_size);

/**
 * A public struct that grows through a leading struct_size field (fc_attention_params,
 * fc_merge_params), as this library knows it: copies the fields the caller's struct_size covers
 * into *out (size_known bytes), the rest from `defaults` (what its init function sets: a caller
 * compiled before a field existed gets that field's default). FC_ERR_INVALID_ARG for NULL or a
 * struct_size below size_min (the first versioned struct) or absurdly large (never initialized:
 * use `init`); FC_ERR_UNSUPPORTED when the caller sets fields past what this library knows.
 */
enum fc_status fc_read_struct(const void *given, const void *defaults, size_t size_known, size_t size_min, void *out,
                              const char *what, const char *init, char *msg, size_t msg_size);

/** Both halves: everything is checked before anything is compiled or launched. */
enum fc_status fc_problem_from_params(const struct fc_attention_params *params, struct fc_problem *out,
                                      char *msg, size_t msg_size);

#endif
