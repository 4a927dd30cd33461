/* Validation: fc_attention_params -> fc_problem, one rule and one message per field. The shape
 * rules first (no pointer is read), then the tensor rules. Size arithmetic is 64-bit and checked. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "dtype_internal.h"
#include "problem_internal.h"

#define POINTER_ALIGN_BYTES 16   /* 16-byte vector loads, TMA */
#define STRIDE_ALIGN_BYTES 16    /* every row starts on a 16-byte boundary */
#define HEAD_DIM_MIN 8
#define HEAD_DIM_MAX 256
#define STRUCT_SIZE_MAX 4096   /* a struct_size past this is an uninitialized struct */
#define WINDOW_INDEX_SLACK 1024   /* above the sequences' keys: the padding rows of a block, and a tile */

enum fc_status fc_problem_fail(enum fc_status status, char *msg, size_t size, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(msg, size, format, args);
    va_end(args);
    return status;
}

#define fail fc_problem_fail   /* this file's rules' short name for it */

enum fc_status fc_problem_positive(const struct fc_named_size *sizes, size_t count, char *msg, size_t size)
{
    for (size_t i = 0; i < count; i++)
        if (sizes[i].value <= 0)
            return fail(FC_ERR_INVALID_ARG, msg, size, "%s must be positive (got %d)", sizes[i].name,
                        sizes[i].value);
    return FC_OK;
}

static enum fc_status check_sizes(const struct fc_attention_params *p, char *msg, size_t size)
{
    const struct fc_named_size sizes[] = {
        {"batch", p->batch}, {"seqlen_q", p->seqlen_q}, {"seqlen_k", p->seqlen_k},
        {"heads_q", p->heads_q}, {"heads_kv", p->heads_kv}, {"head_dim", p->head_dim},
    };
    const enum fc_status status = fc_problem_positive(sizes, sizeof sizes / sizeof sizes[0], msg, size);
    if (status != FC_OK)
        return status;
    if (p->heads_q % p->heads_kv)
        return fail(FC_ERR_INVALID_ARG, msg, size,
                    "heads_q (%d) must be a multiple of heads_kv (%d) for grouped-query attention",
                    p->heads_q, p->heads_kv);
    if (p->head_dim % 8 || p->head_dim < HEAD_DIM_MIN || p->head_dim > HEAD_DIM_MAX)
        return fail(FC_ERR_UNSUPPORTED, msg, size,
                    "head_dim %d is not supported: it must be a multiple of 8 from %d to %d",
                    p->head_dim, HEAD_DIM_MIN, HEAD_DIM_MAX);
    return FC_OK;
}

/* What a tensor's strides are called in messages: each one's name and its index in the caller's
 * array (a varlen tensor is checked as one batch of its tokens: its first two are the token stride). */
struct stride_names {
    const char *dim[3];
    int index[3];
};
static const struct stride_names DENSE_STRIDES = {{"batch", "seq", "head"}, {0, 1, 2}};
static const struct stride_names VARLEN_STRIDES = {{"token", "token", "head"}, {1, 1, 2}};
static const struct stride_names PAGED_STRIDES = {{"page", "token", "head"}, {0, 1, 2}};

static enum fc_status named_strides(const char *name, const struct stride_names *names, const int64_t given[3],
                                    int batch, int seqlen, int heads, int head_dim, int element_bytes, int64_t out[3],
                                    char *msg, size_t size)
{
    const int64_t align = STRIDE_ALIGN_BYTES / element_bytes;
    if (given[0] == 0 && given[1] == 0 && given[2] == 0) {
        out[2] = head_dim;
        out[1] = (int64_t)heads * head_dim;   /* below 2^39: sizes are positive ints */
        if (__builtin_mul_overflow((int64_t)seqlen, out[1], &out[0]))
            return fail(FC_ERR_INVALID_ARG, msg, size, "%s: its strides and sizes overflow 64-bit offsets", name);
    } else {
        for (int i = 0; i < 3; i++) {
            if (given[i] <= 0)
                return fail(FC_ERR_INVALID_ARG, msg, size,
                            "%s_stride[%d] (%s) is %lld: strides are all positive, or all 0 for packed",
                            name, names->index[i], names->dim[i], (long long)given[i]);
            if (given[i] % align)
                return fail(FC_ERR_INVALID_ARG, msg, size,
                            "%s_stride[%d] (%s) is %lld: it must be a multiple of %lld elements (16 bytes)",
                            name, names->index[i], names->dim[i], (long long)given[i], (long long)align);
            out[i] = given[i];
        }
    }
    const int64_t counts[3] = {batch, seqlen, heads};
    int64_t last = head_dim, term;
    for (int i = 0; i < 3; i++)
        if (__builtin_mul_overflow(counts[i] - 1, out[i], &term) || __builtin_add_overflow(last, term, &last))
            return fail(FC_ERR_INVALID_ARG, msg, size, "%s: its strides and sizes overflow 64-bit offsets", name);
    if (__builtin_mul_overflow(last, (int64_t)element_bytes, &term))
        return fail(FC_ERR_INVALID_ARG, msg, size, "%s: its strides and sizes overflow 64-bit offsets", name);
    return FC_OK;
}

enum fc_status fc_problem_strides(const char *name, const int64_t given[3], int batch, int seqlen, int heads,
                                    int head_dim, int element_bytes, int64_t out[3], char *msg, size_t size)
{
    return named_strides(name, &DENSE_STRIDES, given, batch, seqlen, heads, head_dim, element_bytes, out, msg, size);
}

enum fc_status fc_read_struct(const void *given, const void *defaults, size_t size_known, size_t size_min, void *out,
                              const char *what, const char *init, char *msg, size_t size)
{
    if (!given)
        return fail(FC_ERR_INVALID_ARG, msg, size, "%s is NULL", what);
    size_t struct_size;
    memcpy(&struct_size, given, sizeof struct_size);   /* every versioned struct starts with it */
    if (struct_size < size_min || struct_size > STRUCT_SIZE_MAX)
        return fail(FC_ERR_INVALID_ARG, msg, size, "%s->struct_size is %zu: start from %s", what, struct_size, init);
    memcpy(out, defaults, size_known);   /* fields the caller's struct predates keep their defaults */
    memcpy(out, given, struct_size < size_known ? struct_size : size_known);
    for (size_t i = size_known; i < struct_size; i++)
        if (((const unsigned char *)given)[i])
            return fail(FC_ERR_UNSUPPORTED, msg, size, "%s sets fields this library (FlashCore %s) does not know: "
                        "byte %zu of %zu", what, fc_version(), i, struct_size);
    return FC_OK;
}

/* The caller's struct as this library knows it: fields its struct_size does not cover take
 * fc_attention_params_init's defaults. */
static enum fc_status read_params(const struct fc_attention_params *given, struct fc_attention_params *out,
                                  char *msg, size_t size)
{
    struct fc_attention_params defaults;
    fc_attention_params_init(&defaults);
    return fc_read_struct(given, &defaults, sizeof defaults, FC_PARAMS_SIZE_0_2, out, "params",
                          "fc_attention_params_init", msg, size);
}

/* The window's rules, before any size is known to be valid. */
static enum fc_status check_window(const struct fc_attention_params *p, char *msg, size_t size)
{
    if (p->window_left < -1)
        return fail(FC_ERR_INVALID_ARG, msg, size, "window_left must be -1 (unbounded) or a key count >= 0 (got %d)",
                    p->window_left);
    if (p->window_right < -1)
        return fail(FC_ERR_INVALID_ARG, msg, size,
                    "window_right must be -1 (unbounded) or a key count >= 0 (got %d)", p->window_right);
    if (p->causal && p->window_right > 0)
        return fail(FC_ERR_INVALID_ARG, msg, size,
                    "causal is window_right 0, so causal = 1 cannot take window_right %d: set causal = 0 to see "
                    "keys past the diagonal", p->window_right);
    return FC_OK;
}

/* The mask the kernels get (struct fc_mask): causal is window_right 0; a side wider than the
 * sequence bounds nothing (window_left >= seqlen_k - 1: every row's window starts at or before key
 * 0; window_right >= seqlen_q - 1: every row's reaches seqlen_k - 1), and an unbounded side becomes
 * a bound past the sequence, so that the kernels never test for -1. No bounded side: no window. */
static enum fc_status resolve_mask(const struct fc_attention_params *p, int seqlen_q, int seqlen_k,
                                   struct fc_mask *m, char *msg, size_t size)
{
    m->causal = p->causal || p->window_right == 0;
    const int left = p->window_left >= 0 && (int64_t)p->window_left < (int64_t)seqlen_k - 1;
    const int right = !m->causal && p->window_right >= 0 && (int64_t)p->window_right < (int64_t)seqlen_q - 1;
    m->window = left || right;
    m->window_left = left ? p->window_left : seqlen_k;
    m->window_right = m->causal ? 0 : right ? p->window_right : seqlen_q;
    /* NOTE: a row's last key plus one, row + seqlen_k - seqlen_q + window_right + 1, runs up to
     * seqlen_q + seqlen_k + block_m for the padding rows of a last block: 32-bit in the kernels. */
    if (m->window && (int64_t)seqlen_q + seqlen_k > INT_MAX - WINDOW_INDEX_SLACK)
        return fail(FC_ERR_UNSUPPORTED, msg, size,
                    "a sliding window needs seqlen_q + seqlen_k (%lld) of at most %d: the kernels index keys in "
                    "32 bits", (long long)seqlen_q + seqlen_k, INT_MAX - WINDOW_INDEX_SLACK);
    return FC_OK;
}

/* FP8 attention (dtype FC_E4M3): q, k and v e4m3, out FC_BF16 (out_dtype FC_DTYPE_SAME) or FC_F16;
 * else out is dtype. Sets *out_dtype, the problem's dtype (what the kernels compute and write). */
static enum fc_status resolve_out_dtype(const struct fc_attention_params *p, enum fc_dtype *out_dtype, char *msg,
                                        size_t size)
{
    if (p->dtype != FC_E4M3) {
        if (p->out_dtype != FC_DTYPE_SAME && p->out_dtype != p->dtype)
            return fail(FC_ERR_INVALID_ARG, msg, size, "out_dtype %d (%s) with dtype %s: out is dtype (FC_DTYPE_SAME, "
                        "the default); another output type is FP8 attention's (dtype FC_E4M3)", (int)p->out_dtype,
                        fc_dtype_name(p->out_dtype), fc_dtype_name(p->dtype));
        *out_dtype = p->dtype;
        return FC_OK;
    }
    *out_dtype = p->out_dtype == FC_DTYPE_SAME ? FC_BF16 : p->out_dtype;
    if (*out_dtype != FC_BF16 && *out_dtype != FC_F16)
        return fail(FC_ERR_INVALID_ARG, msg, size, "out_dtype %d (%s) with dtype FC_E4M3: FP8 attention writes "
                    "FC_BF16 (FC_DTYPE_SAME, the default) or FC_F16", (int)p->out_dtype, fc_dtype_name(p->out_dtype));
    if (p->kv_dtype != FC_DTYPE_SAME && p->kv_dtype != FC_E4M3)
        return fail(FC_ERR_INVALID_ARG, msg, size, "kv_dtype %d (%s) with dtype FC_E4M3: FP8 attention takes k and v "
                    "in e4m3 too (kv_dtype FC_DTYPE_SAME or FC_E4M3)", (int)p->kv_dtype, fc_dtype_name(p->kv_dtype));
    if (p->head_dim % 16)
        return fail(FC_ERR_UNSUPPORTED, msg, size, "head_dim %d with FP8 attention (dtype FC_E4M3): it must be a "
                    "multiple of 16, so that each row of head_dim bytes starts on 16 bytes", p->head_dim);
    return FC_OK;
}

/* The K/V element type: dtype's (kv_dtype FC_DTYPE_SAME or dtype), or FC_E4M3 for an FP8 KV cache,
 * whose rows of head_dim bytes must each start on 16 bytes. FP8 attention: e4m3 (resolve_out_dtype). */
static enum fc_status resolve_kv_dtype(const struct fc_attention_params *p, int *kv_fp8, char *msg, size_t size)
{
    *kv_fp8 = p->kv_dtype == FC_E4M3 || p->dtype == FC_E4M3;
    if (p->dtype == FC_E4M3)
        return FC_OK;
    if (p->kv_dtype != FC_DTYPE_SAME && p->kv_dtype != p->dtype && !*kv_fp8)
        return fail(FC_ERR_INVALID_ARG, msg, size, "kv_dtype %d (%s) with dtype %s: K and V are either dtype "
                    "(FC_DTYPE_SAME, the default) or FC_E4M3 (an FP8 KV cache)", (int)p->kv_dtype,
                    fc_dtype_name(p->kv_dtype), fc_dtype_name(p->dtype));
    if (*kv_fp8 && p->head_dim % 16)
        return fail(FC_ERR_UNSUPPORTED, msg, size, "head_dim %d with FP8 K/V (kv_dtype FC_E4M3): it must be a "
                    "multiple of 16, so that each row of head_dim bytes starts on 16 bytes", p->head_dim);
    return FC_OK;
}

/* Varlen's size rules (max_seqlen_q > 0 turns it on): both maxima positive, each at most its
 * tensor's token count. The sequences' own lengths are on the device: the caller's contract. */
static enum fc_status check_varlen(const struct fc_attention_params *p, char *msg, size_t size)
{
    if (p->max_seqlen_q < 0 || p->max_seqlen_k < 0)
        return fail(FC_ERR_INVALID_ARG, msg, size, "max_seqlen_q and max_seqlen_k must be >= 0 (got %d, %d)",
                    p->max_seqlen_q, p->max_seqlen_k);
    if (!p->max_seqlen_q && !p->max_seqlen_k)
        return FC_OK;
    if (p->max_seqlen_q <= 0 || p->max_seqlen_k <= 0)
        return fail(FC_ERR_INVALID_ARG, msg, size, "varlen needs both max_seqlen_q and max_seqlen_k positive "
                    "(got %d, %d); both 0 is a dense batch", p->max_seqlen_q, p->max_seqlen_k);
    if (p->max_seqlen_q > p->seqlen_q || p->max_seqlen_k > p->seqlen_k)
        return fail(FC_ERR_INVALID_ARG, msg, size, "varlen: max_seqlen_q (%d) and max_seqlen_k (%d) cannot exceed "
                    "seqlen_q (%d) and seqlen_k (%d), the total token counts of q and k", p->max_seqlen_q,
                    p->max_seqlen_k, p->seqlen_q, p->seqlen_k);
    return FC_OK;
}

/* A paged cache's size rules (page_size > 0 turns it on): the page count and the table's row stride
 * (every sequence's seqlen_k keys have a table entry; the table's size fits 64 bits), and the
 * varlen+paged form's (max_seqlen_k is the cache's seqlen_k). The page ids are on the device: the
 * caller's contract. Without paging the other fields must stay 0. */
static enum fc_status check_paged(const struct fc_attention_params *p, char *msg, size_t size)
{
    if (p->page_size < 0)
        return fail(FC_ERR_INVALID_ARG, msg, size, "page_size must be >= 1 (tokens per page), or 0 for K/V that are "
                    "not paged (got %d)", p->page_size);
    if (p->page_size == 0) {
        if (p->num_pages || p->page_table_stride)
            return fail(FC_ERR_INVALID_ARG, msg, size, "num_pages (%d) and page_table_stride (%d) are set but "
                        "page_size is 0: a paged K/V cache needs page_size > 0", p->num_pages, p->page_table_stride);
        return FC_OK;
    }
    if (p->num_pages < 1)
        return fail(FC_ERR_INVALID_ARG, msg, size, "paged: num_pages must be >= 1, the pages in k and v (got %d)",
                    p->num_pages);
    const int64_t pages_needed = ((int64_t)p->seqlen_k + p->page_size - 1) / p->page_size;
    if (p->page_table_stride < pages_needed)
        return fail(FC_ERR_INVALID_ARG, msg, size, "paged: page_table_stride (%d) must be at least ceil(seqlen_k / "
                    "page_size) = ceil(%d / %d) = %lld, the pages of a sequence of seqlen_k keys",
                    p->page_table_stride, p->seqlen_k, p->page_size, (long long)pages_needed);
    int64_t table;
    if (__builtin_mul_overflow((int64_t)p->batch, (int64_t)p->page_table_stride, &table) ||
        __builtin_mul_overflow(table, (int64_t)sizeof(int32_t), &table))
        return fail(FC_ERR_INVALID_ARG, msg, size, "paged: batch * page_table_stride overflows 64-bit offsets");
    if (p->max_seqlen_q > 0 && p->max_seqlen_k != p->seqlen_k)
        return fail(FC_ERR_INVALID_ARG, msg, size, "varlen with a paged cache: max_seqlen_k (%d) must equal seqlen_k "
                    "(%d), the most keys a sequence may have (keys come from the page table, not cu_seqlens_k)",
                    p->max_seqlen_k, p->seqlen_k);
    return FC_OK;
}

/* A varlen tensor's strides: stride[0] 0 (sequences are found through cu_seqlens), stride[1] (token)
 * and stride[2] (head) both 0 (packed) or both valid; checked as one batch of `tokens` rows. */
enum fc_status fc_problem_varlen_strides(const char *name, const int64_t given[3], int tokens, int heads,
                                         int head_dim, int element_bytes, int64_t out[3], char *msg, size_t size)
{
    if (given[0] != 0)
        return fail(FC_ERR_INVALID_ARG, msg, size, "%s_stride[0] (batch) is %lld: varlen tensors are [tokens, head, "
                    "head_dim], so it must be 0 (sequences start at cu_seqlens)", name, (long long)given[0]);
    int64_t as_dense[3] = {given[1], given[1], given[2]};   /* one batch: its stride is never multiplied */
    if (given[1] == 0 && given[2] == 0)
        as_dense[0] = 0;
    enum fc_status status = named_strides(name, &VARLEN_STRIDES, as_dense, 1, tokens, heads, head_dim, element_bytes,
                                          out, msg, size);
    out[0] = 0;
    return status;
}

enum fc_status fc_problem_shape(const struct fc_attention_params *given, struct fc_problem *out, char *msg,
                                size_t size)
{
    struct fc_attention_params local;
    enum fc_status status = read_params(given, &local, msg, size);
    if (status != FC_OK)
        return status;
    const struct fc_attention_params *p = &local;
    memset(out, 0, sizeof *out);
    const struct fc_dtype_traits *dtype = fc_dtype_traits(p->dtype);
    if (!dtype)
        return fail(FC_ERR_INVALID_ARG, msg, size, "dtype %d is not an enum fc_dtype value", (int)p->dtype);
    enum fc_dtype out_dtype = FC_DTYPE_SAME;   /* set by resolve_out_dtype */
    if ((status = resolve_out_dtype(p, &out_dtype, msg, size)) != FC_OK)
        return status;
    out->q_fp8 = p->dtype == FC_E4M3;
    if (p->causal != 0 && p->causal != 1)
        return fail(FC_ERR_INVALID_ARG, msg, size, "causal must be 0 or 1 (got %d)", p->causal);
    if ((status = check_window(p, msg, size)) != FC_OK)
        return status;
    if (!isfinite(p->softmax_scale))
        return fail(FC_ERR_INVALID_ARG, msg, size, "softmax_scale must be finite (0 selects 1/sqrt(head_dim))");
    if (!(p->softcap >= 0.f) || !isfinite(p->softcap))
        return fail(FC_ERR_INVALID_ARG, msg, size, "softcap must be 0 (none) or finite and positive (got %g)",
                    (double)p->softcap);
    if ((status = check_sizes(p, msg, size)) != FC_OK ||
        (status = resolve_kv_dtype(p, &out->kv_fp8, msg, size)) != FC_OK ||
        (status = check_varlen(p, msg, size)) != FC_OK || (status = check_paged(p, msg, size)) != FC_OK)
        return status;
    out->paged = p->page_size > 0;
    out->page_size = p->page_size;
    out->page_table_stride = p->page_table_stride;
    out->num_pages = p->num_pages;
    out->varlen = p->max_seqlen_q > 0;
    out->seqused = p->seqused_k != NULL;   /* its NULL-ness only: the variant's switch */
    out->max_seqlen_q = out->varlen ? p->max_seqlen_q : p->seqlen_q;
    out->max_seqlen_k = out->varlen ? p->max_seqlen_k : p->seqlen_k;
    if ((status = resolve_mask(p, out->max_seqlen_q, out->max_seqlen_k, &out->mask, msg, size)) != FC_OK)
        return status;
    const int bytes = fc_dtype_bytes(out_dtype), kv_bytes = out->kv_fp8 ? 1 : bytes, d = p->head_dim;
    const int q_bytes = out->q_fp8 ? 1 : bytes;
    if (out->paged) {   /* [num_pages, page_size, heads_kv, head_dim]: strides {page, token, head} */
        if ((status = named_strides("k", &PAGED_STRIDES, p->k_stride, p->num_pages, p->page_size, p->heads_kv, d,
                                    kv_bytes, out->k_stride, msg, size)) ||
            (status = named_strides("v", &PAGED_STRIDES, p->v_stride, p->num_pages, p->page_size, p->heads_kv, d,
                                    kv_bytes, out->v_stride, msg, size)))
            return status;
        if (out->varlen) {
            if ((status = fc_problem_varlen_strides("q", p->q_stride, p->seqlen_q, p->heads_q, d, q_bytes, out->q_stride, msg, size)) ||
                (status = fc_problem_varlen_strides("out", p->o_stride, p->seqlen_q, p->heads_q, d, bytes, out->o_stride, msg, size)))
                return status;
        } else if ((status = fc_problem_strides("q", p->q_stride, p->batch, p->seqlen_q, p->heads_q, d, q_bytes, out->q_stride, msg, size)) ||
                   (status = fc_problem_strides("out", p->o_stride, p->batch, p->seqlen_q, p->heads_q, d, bytes, out->o_stride, msg, size))) {
            return status;
        }
    } else if (out->varlen) {
        if ((status = fc_problem_varlen_strides("q", p->q_stride, p->seqlen_q, p->heads_q, d, q_bytes, out->q_stride, msg, size)) ||
            (status = fc_problem_varlen_strides("k", p->k_stride, p->seqlen_k, p->heads_kv, d, kv_bytes, out->k_stride, msg, size)) ||
            (status = fc_problem_varlen_strides("v", p->v_stride, p->seqlen_k, p->heads_kv, d, kv_bytes, out->v_stride, msg, size)) ||
            (status = fc_problem_varlen_strides("out", p->o_stride, p->seqlen_q, p->heads_q, d, bytes, out->o_stride, msg, size)))
            return status;
    } else if ((status = fc_problem_strides("q", p->q_stride, p->batch, p->seqlen_q, p->heads_q, d, q_bytes, out->q_stride, msg, size)) ||
               (status = fc_problem_strides("k", p->k_stride, p->batch, p->seqlen_k, p->heads_kv, d, kv_bytes, out->k_stride, msg, size)) ||
               (status = fc_problem_strides("v", p->v_stride, p->batch, p->seqlen_k, p->heads_kv, d, kv_bytes, out->v_stride, msg, size)) ||
               (status = fc_problem_strides("out", p->o_stride, p->batch, p->seqlen_q, p->heads_q, d, bytes, out->o_stride, msg, size))) {
        return status;
    }
    out->dtype = out_dtype;
    out->batch = p->batch;
    out->seqlen_q = p->seqlen_q;
    out->seqlen_k = p->seqlen_k;
    out->heads_q = p->heads_q;
    out->heads_kv = p->heads_kv;
    out->head_dim = p->head_dim;
    out->softmax_scale = p->softmax_scale != 0.f ? p->softmax_scale : 1.f / sqrtf((float)p->head_dim);
    out->softcap = p->softcap;
    if (p->softcap > 0.f && !isfinite(out->softmax_scale / p->softcap))   /* the kernels' factor inside the tanh */
        return fail(FC_ERR_INVALID_ARG, msg, size, "softcap %g is too small for softmax_scale %g: scale / softcap "
                    "overflows fp32", (double)p->softcap, (double)out->softmax_scale);
    return FC_OK;
}

enum fc_status fc_problem_pointer(const char *name, const void *pointer, unsigned align, char *msg, size_t size)
{
    if (!pointer)
        return fail(FC_ERR_INVALID_ARG, msg, size, "%s is NULL", name);
    if ((uintptr_t)pointer % align)
        return fail(FC_ERR_INVALID_ARG, msg, size, "%s (%p) must be %u-byte aligned", name, pointer, align);
    return FC_OK;
}

/* cu_seqlens_q and cu_seqlens_k present exactly in varlen mode (max_seqlen_q > 0); the int32 arrays
 * 4-byte aligned. Their contents are on the device: the caller's contract. */
static enum fc_status check_sequence_pointers(const struct fc_attention_params *p, char *msg, size_t size)
{
    enum fc_status status;
    if (p->max_seqlen_q > 0 && p->page_size > 0) {   /* varlen queries against a paged cache */
        if ((status = fc_problem_pointer("cu_seqlens_q (varlen: max_seqlen_q > 0)", p->cu_seqlens_q,
                                         sizeof(int32_t), msg, size)))
            return status;
        if (p->cu_seqlens_k)
            return fail(FC_ERR_INVALID_ARG, msg, size, "cu_seqlens_k must be NULL with a paged cache (page_size > 0): "
                        "each sequence's keys come from its page table row, and its key count from seqused_k (or "
                        "seqlen_k)");
    } else if (p->max_seqlen_q > 0) {
        if ((status = fc_problem_pointer("cu_seqlens_q (varlen: max_seqlen_q > 0)", p->cu_seqlens_q,
                                         sizeof(int32_t), msg, size)) ||
            (status = fc_problem_pointer("cu_seqlens_k (varlen: max_seqlen_q > 0)", p->cu_seqlens_k,
                                         sizeof(int32_t), msg, size)))
            return status;
    } else if (p->cu_seqlens_q || p->cu_seqlens_k) {
        return fail(FC_ERR_INVALID_ARG, msg, size, "cu_seqlens_q/cu_seqlens_k are set but max_seqlen_q is 0: a "
                    "varlen batch needs max_seqlen_q and max_seqlen_k (the longest sequence's lengths)");
    }
    if (p->seqused_k && (status = fc_problem_pointer("seqused_k", p->seqused_k, sizeof(int32_t), msg, size)))
        return status;
    if (p->page_size > 0)
        return fc_problem_pointer("page_table (paged: page_size > 0)", p->page_table, sizeof(int32_t), msg, size);
    if (p->page_table)
        return fail(FC_ERR_INVALID_ARG, msg, size, "page_table is set but page_size is 0: a paged K/V cache needs "
                    "page_size (tokens per page), num_pages and page_table_stride");
    return FC_OK;
}

enum fc_status fc_problem_tensors(const struct fc_attention_params *given, struct fc_problem *out, char *msg,
                                  size_t size)
{
    struct fc_attention_params local;
    enum fc_status status = read_params(given, &local, msg, size);
    if (status != FC_OK)
        return status;
    const struct fc_attention_params *p = &local;
    if ((status = fc_problem_pointer("q", p->q, POINTER_ALIGN_BYTES, msg, size)) ||
        (status = fc_problem_pointer("k", p->k, POINTER_ALIGN_BYTES, msg, size)) ||
        (status = fc_problem_pointer("v", p->v, POINTER_ALIGN_BYTES, msg, size)) ||
        (status = fc_problem_pointer("out", p->out, POINTER_ALIGN_BYTES, msg, size)))
        return status;
    if (p->lse && (status = fc_problem_pointer("lse", p->lse, sizeof(float), msg, size)))
        return status;
    if (p->sinks && (status = fc_problem_pointer("sinks", p->sinks, sizeof(float), msg, size)))
        return status;
    if ((status = check_sequence_pointers(p, msg, size)) != FC_OK)
        return status;
    const int q_fp8 = p->dtype == FC_E4M3, kv_fp8 = p->kv_dtype == FC_E4M3 || q_fp8;   /* the shape rules checked the rest */
    const struct { const char *name; const float *pointer; int fp8; } descales[] = {
        {"k_descale", p->k_descale, kv_fp8}, {"v_descale", p->v_descale, kv_fp8}, {"q_descale", p->q_descale, q_fp8},
    };
    for (size_t i = 0; i < sizeof descales / sizeof descales[0]; i++) {
        if (descales[i].pointer && !descales[i].fp8)
            return fail(FC_ERR_INVALID_ARG, msg, size, i < 2 ? "%s is set but K and V are not FP8 (kv_dtype FC_E4M3 "
                        "or dtype FC_E4M3): 16-bit K/V take no scale" : "%s is set but q is not FP8 (dtype FC_E4M3): "
                        "a 16-bit q takes no scale", descales[i].name);
        if (descales[i].pointer &&
            (status = fc_problem_pointer(descales[i].name, descales[i].pointer, sizeof(float), msg, size)))
            return status;
    }
    const int lse_batch = p->max_seqlen_q > 0 ? 1 : p->batch;   /* varlen: [heads_q, tokens] */
    int64_t rows;
    if (p->lse && (__builtin_mul_overflow((int64_t)lse_batch, (int64_t)p->heads_q, &rows) ||
                   __builtin_mul_overflow(rows, (int64_t)p->seqlen_q, &rows) ||
                   __builtin_mul_overflow(rows, (int64_t)sizeof(float), &rows)))
        return fail(FC_ERR_INVALID_ARG, msg, size, "lse: batch * heads_q * seqlen_q overflows 64-bit offsets");
    out->q = p->q;
    out->k = p->k;
    out->v = p->v;
    out->out = p->out;
    out->lse = p->lse;
    out->sinks = p->sinks;
    out->cu_seqlens_q = p->cu_seqlens_q;
    out->cu_seqlens_k = p->cu_seqlens_k;
    out->seqused_k = p->seqused_k;
    out->page_table = p->page_table;
    out->k_descale = p->k_descale;
    out->v_descale = p->v_descale;
    out->q_descale = p->q_descale;
    return FC_OK;
}

enum fc_status fc_problem_from_params(const struct fc_attention_params *p, struct fc_problem *out, char *msg,
                                      size_t size)
{
    enum fc_status status = fc_problem_shape(p, out, msg, size);
    return status == FC_OK ? fc_problem_tensors(p, out, msg, size) : status;
}
