/* Validation: every broken rule gets its status and a message naming the field; the public API
 * answers misuse without a GPU and without crashing. */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "context_internal.h"
#include "family_internal.h"
#include "plan_internal.h"
#include "problem_internal.h"

static _Alignas(16) char device_memory[64];   /* stands in for device pointers: never read */
static const struct fc_target H100 = {90, 1, 132};

static struct fc_attention_params valid_params(void)
{
    struct fc_attention_params p;
    fc_attention_params_init(&p);
    p.dtype = FC_F16;
    p.batch = 2;
    p.seqlen_q = 100;
    p.seqlen_k = 300;
    p.heads_q = 8;
    p.heads_kv = 2;
    p.head_dim = 64;
    p.q = p.k = p.v = p.out = device_memory;
    return p;
}

static void test_valid_problem_resolves_packed_strides_and_scale(void **state)
{
    (void)state;
    struct fc_attention_params p = valid_params();
    struct fc_problem problem;
    char msg[512] = "";
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(problem.q_stride[2], 64);
    assert_int_equal(problem.q_stride[1], 8 * 64);
    assert_int_equal(problem.q_stride[0], 100 * 8 * 64);
    assert_int_equal(problem.k_stride[1], 2 * 64);
    assert_int_equal(problem.k_stride[0], 300 * 2 * 64);
    assert_true(fabsf(problem.softmax_scale - 0.125f) < 1e-7f);
}

/* One broken rule: a mutation of valid params, the status it must give, a phrase of the message. */
struct rule {
    const char *what;
    void (*mutate)(struct fc_attention_params *p);
    enum fc_status status;
    const char *phrase;
};

#define MUTATION(name, body) static void name(struct fc_attention_params *p) { body; }
MUTATION(bad_dtype, p->dtype = (enum fc_dtype)7)
MUTATION(fp8_out_f16_with_bf16, p->dtype = FC_BF16; p->out_dtype = FC_F16)
MUTATION(fp8_out_e4m3, p->dtype = FC_E4M3; p->out_dtype = FC_E4M3)
MUTATION(fp8_kv_bf16, p->dtype = FC_E4M3; p->kv_dtype = FC_BF16)
MUTATION(fp8_head_dim_40, p->dtype = FC_E4M3; p->head_dim = 40)
MUTATION(q_descale_without_fp8, p->kv_dtype = FC_E4M3; p->q_descale = (const float *)device_memory)
MUTATION(misaligned_q_descale, p->dtype = FC_E4M3; p->q_descale = (const float *)(device_memory + 1))
MUTATION(fp8_q_stride_of_8, p->dtype = FC_E4M3; p->q_stride[0] = 38400; p->q_stride[1] = 136; p->q_stride[2] = 64)
MUTATION(zero_batch, p->batch = 0)
MUTATION(negative_seqlen_q, p->seqlen_q = -1)
MUTATION(zero_seqlen_k, p->seqlen_k = 0)
MUTATION(zero_heads_q, p->heads_q = 0)
MUTATION(zero_heads_kv, p->heads_kv = 0)
MUTATION(zero_head_dim, p->head_dim = 0)
MUTATION(gqa_mismatch, p->heads_q = 8; p->heads_kv = 3)
MUTATION(head_dim_100, p->head_dim = 100)
MUTATION(head_dim_264, p->head_dim = 264)
MUTATION(null_q, p->q = NULL)
MUTATION(null_k, p->k = NULL)
MUTATION(null_v, p->v = NULL)
MUTATION(null_out, p->out = NULL)
MUTATION(misaligned_q, p->q = device_memory + 2)
MUTATION(misaligned_out, p->out = device_memory + 8)
MUTATION(misaligned_lse, p->lse = (float *)(device_memory + 2))
MUTATION(misaligned_sinks, p->sinks = (const float *)(device_memory + 6))
MUTATION(negative_softcap, p->softcap = -1.f)
MUTATION(nan_softcap, p->softcap = NAN)
MUTATION(infinite_softcap, p->softcap = INFINITY)
MUTATION(tiny_softcap, p->softcap = 1e-45f)
MUTATION(mixed_zero_strides, p->q_stride[0] = 0; p->q_stride[1] = 512; p->q_stride[2] = 64)
MUTATION(unaligned_stride, p->k_stride[0] = 38400; p->k_stride[1] = 130; p->k_stride[2] = 64)
MUTATION(negative_stride, p->v_stride[0] = -38400; p->v_stride[1] = 128; p->v_stride[2] = 64)
MUTATION(overflowing_stride, p->o_stride[0] = INT64_MAX / 16 * 8; p->o_stride[1] = 512; p->o_stride[2] = 64)
MUTATION(causal_two, p->causal = 2)
MUTATION(nan_scale, p->softmax_scale = NAN)
MUTATION(infinite_scale, p->softmax_scale = INFINITY)
MUTATION(window_left_minus_two, p->window_left = -2)
MUTATION(window_right_minus_five, p->window_right = -5)
MUTATION(causal_window_right, p->causal = 1; p->window_right = 3)
MUTATION(window_past_int, p->seqlen_q = INT_MAX / 2 + 1; p->seqlen_k = INT_MAX / 2 + 1; p->window_left = 10)
MUTATION(fp8_kv_head_dim_24, p->kv_dtype = FC_E4M3; p->head_dim = 24)
MUTATION(kv_dtype_bf16_with_f16, p->kv_dtype = FC_BF16)
MUTATION(kv_dtype_out_of_the_enum, p->kv_dtype = (enum fc_dtype)7)
MUTATION(k_descale_without_fp8, p->k_descale = (const float *)device_memory)
MUTATION(v_descale_without_fp8, p->kv_dtype = FC_F16; p->v_descale = (const float *)device_memory)
MUTATION(misaligned_v_descale, p->kv_dtype = FC_E4M3; p->v_descale = (const float *)(device_memory + 2))
MUTATION(fp8_k_stride_of_8, p->kv_dtype = FC_E4M3; p->k_stride[0] = 38400; p->k_stride[1] = 136; p->k_stride[2] = 64)
MUTATION(fp8_v_stride_of_8, p->kv_dtype = FC_E4M3; p->v_stride[0] = 38408; p->v_stride[1] = 128; p->v_stride[2] = 64)

static const struct rule RULES[] = {
    {"dtype out of the enum", bad_dtype, FC_ERR_INVALID_ARG, "dtype 7 is not"},
    {"out f16 with bf16", fp8_out_f16_with_bf16, FC_ERR_INVALID_ARG, "out_dtype 0 (f16) with dtype bf16"},
    {"FP8 out e4m3", fp8_out_e4m3, FC_ERR_INVALID_ARG, "FP8 attention writes FC_BF16"},
    {"FP8 q, bf16 K/V", fp8_kv_bf16, FC_ERR_INVALID_ARG, "FP8 attention takes k and v in e4m3 too"},
    {"FP8 head_dim 40", fp8_head_dim_40, FC_ERR_UNSUPPORTED, "head_dim 40 with FP8 attention"},
    {"q_descale, 16-bit q", q_descale_without_fp8, FC_ERR_INVALID_ARG, "q_descale is set but q is not FP8"},
    {"q_descale misaligned", misaligned_q_descale, FC_ERR_INVALID_ARG, "q_descale ("},
    {"FP8 q_stride of 8", fp8_q_stride_of_8, FC_ERR_INVALID_ARG, "q_stride[1] (seq) is 136"},
    {"batch 0", zero_batch, FC_ERR_INVALID_ARG, "batch must be positive (got 0)"},
    {"seqlen_q -1", negative_seqlen_q, FC_ERR_INVALID_ARG, "seqlen_q must be positive (got -1)"},
    {"seqlen_k 0", zero_seqlen_k, FC_ERR_INVALID_ARG, "seqlen_k must be positive"},
    {"heads_q 0", zero_heads_q, FC_ERR_INVALID_ARG, "heads_q must be positive"},
    {"heads_kv 0", zero_heads_kv, FC_ERR_INVALID_ARG, "heads_kv must be positive"},
    {"head_dim 0", zero_head_dim, FC_ERR_INVALID_ARG, "head_dim must be positive"},
    {"GQA ratio", gqa_mismatch, FC_ERR_INVALID_ARG, "heads_q (8) must be a multiple of heads_kv (3)"},
    {"head_dim 100", head_dim_100, FC_ERR_UNSUPPORTED, "head_dim 100 is not supported"},
    {"head_dim 264", head_dim_264, FC_ERR_UNSUPPORTED, "head_dim 264 is not supported"},
    {"q NULL", null_q, FC_ERR_INVALID_ARG, "q is NULL"},
    {"k NULL", null_k, FC_ERR_INVALID_ARG, "k is NULL"},
    {"v NULL", null_v, FC_ERR_INVALID_ARG, "v is NULL"},
    {"out NULL", null_out, FC_ERR_INVALID_ARG, "out is NULL"},
    {"q misaligned", misaligned_q, FC_ERR_INVALID_ARG, "must be 16-byte aligned"},
    {"out misaligned", misaligned_out, FC_ERR_INVALID_ARG, "must be 16-byte aligned"},
    {"lse misaligned", misaligned_lse, FC_ERR_INVALID_ARG, "must be 4-byte aligned"},
    {"sinks misaligned", misaligned_sinks, FC_ERR_INVALID_ARG, "sinks ("},
    {"softcap -1", negative_softcap, FC_ERR_INVALID_ARG, "softcap must be 0 (none) or finite and positive (got -1)"},
    {"softcap NaN", nan_softcap, FC_ERR_INVALID_ARG, "softcap must be 0 (none) or finite and positive"},
    {"softcap inf", infinite_softcap, FC_ERR_INVALID_ARG, "softcap must be 0 (none) or finite and positive"},
    {"softcap tiny", tiny_softcap, FC_ERR_INVALID_ARG, "scale / softcap overflows"},
    {"mixed zero strides", mixed_zero_strides, FC_ERR_INVALID_ARG, "q_stride[0] (batch) is 0"},
    {"stride not 16 bytes", unaligned_stride, FC_ERR_INVALID_ARG, "k_stride[1] (seq) is 130: it must be a multiple of 8"},
    {"negative stride", negative_stride, FC_ERR_INVALID_ARG, "v_stride[0] (batch) is -38400"},
    {"offset overflow", overflowing_stride, FC_ERR_INVALID_ARG, "out: its strides and sizes overflow"},
    {"causal 2", causal_two, FC_ERR_INVALID_ARG, "causal must be 0 or 1 (got 2)"},
    {"scale NaN", nan_scale, FC_ERR_INVALID_ARG, "softmax_scale must be finite"},
    {"scale inf", infinite_scale, FC_ERR_INVALID_ARG, "softmax_scale must be finite"},
    {"window_left -2", window_left_minus_two, FC_ERR_INVALID_ARG, "window_left must be -1 (unbounded) or"},
    {"window_right -5", window_right_minus_five, FC_ERR_INVALID_ARG, "window_right must be -1 (unbounded) or"},
    {"causal, window_right 3", causal_window_right, FC_ERR_INVALID_ARG, "causal = 1 cannot take window_right 3"},
    {"window past 32-bit keys", window_past_int, FC_ERR_UNSUPPORTED, "a sliding window needs seqlen_q + seqlen_k"},
    {"FP8 K/V at head_dim 24", fp8_kv_head_dim_24, FC_ERR_UNSUPPORTED, "head_dim 24 with FP8 K/V"},
    {"kv_dtype bf16, dtype f16", kv_dtype_bf16_with_f16, FC_ERR_INVALID_ARG, "kv_dtype 1 (bf16) with dtype f16"},
    {"kv_dtype 7", kv_dtype_out_of_the_enum, FC_ERR_INVALID_ARG, "kv_dtype 7 (unknown)"},
    {"k_descale, 16-bit K/V", k_descale_without_fp8, FC_ERR_INVALID_ARG, "k_descale is set but K and V are not FP8"},
    {"v_descale, kv_dtype f16", v_descale_without_fp8, FC_ERR_INVALID_ARG, "v_descale is set but"},
    {"v_descale misaligned", misaligned_v_descale, FC_ERR_INVALID_ARG, "v_descale ("},
    {"FP8 k_stride of 8", fp8_k_stride_of_8, FC_ERR_INVALID_ARG, "k_stride[1] (seq) is 136: it must be a multiple of 16"},
    {"FP8 v_stride of 8", fp8_v_stride_of_8, FC_ERR_INVALID_ARG, "v_stride[0] (batch) is 38408: it must be a multiple of 16"},
};

static void test_each_rule_has_its_status_and_message(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof RULES / sizeof RULES[0]; i++) {
        struct fc_attention_params p = valid_params();
        RULES[i].mutate(&p);
        struct fc_problem problem;
        char msg[512] = "";
        enum fc_status status = fc_problem_from_params(&p, &problem, msg, sizeof msg);
        if (status != RULES[i].status || !strstr(msg, RULES[i].phrase))
            fail_msg("%s: got %s \"%s\", wanted %s with \"%s\"", RULES[i].what, fc_status_name(status), msg,
                     fc_status_name(RULES[i].status), RULES[i].phrase);
    }
}

/* The mask the kernels get: causal is window_right 0; a side wider than the sequence bounds
 * nothing, and an unbounded side becomes a bound past it; no bounded side is no window. */
static void test_window_resolves_into_the_mask(void **state)
{
    (void)state;
    static const struct {
        int causal, left, right;                       /* given, Sq 100, Sk 300 */
        int m_causal, m_window, m_left, m_right;       /* resolved */
    } CASES[] = {
        {0, -1, -1, 0, 0, 300, 100},    /* the defaults: nothing */
        {1, -1, -1, 1, 0, 300, 0},      /* causal */
        {1, -1, 0, 1, 0, 300, 0},       /* causal with its own right bound */
        {0, -1, 0, 1, 0, 300, 0},       /* window_right 0 is causal */
        {1, 50, -1, 1, 1, 50, 0},       /* causal sliding window */
        {0, 50, 0, 1, 1, 50, 0},        /* the same, spelled as a window */
        {0, 50, 7, 0, 1, 50, 7},        /* both sides */
        {0, -1, 7, 0, 1, 300, 7},       /* right only */
        {0, 0, 0, 1, 1, 0, 0},          /* the diagonal alone */
        {0, 299, 5, 0, 1, 300, 5},      /* left as wide as the keys: unbounded */
        {0, 298, 5, 0, 1, 298, 5},      /* one key short of it: bounded */
        {0, 299, 99, 0, 0, 300, 100},   /* both sides wider than the sequence: no window */
        {0, 1 << 30, 98, 0, 1, 300, 98},
        {1, 1 << 30, -1, 1, 0, 300, 0},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        struct fc_attention_params p = valid_params();
        p.causal = CASES[i].causal;
        p.window_left = CASES[i].left;
        p.window_right = CASES[i].right;
        struct fc_problem problem;
        char msg[512] = "";
        assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
        const struct fc_mask *m = &problem.mask;
        if (m->causal != CASES[i].m_causal || m->window != CASES[i].m_window || m->window_left != CASES[i].m_left ||
            m->window_right != CASES[i].m_right)
            fail_msg("case %zu: causal %d window %d left %d right %d", i, m->causal, m->window, m->window_left,
                     m->window_right);
    }
}

static void test_null_params(void **state)
{
    (void)state;
    struct fc_problem problem;
    char msg[128] = "";
    assert_int_equal(fc_problem_from_params(NULL, &problem, msg, sizeof msg), FC_ERR_INVALID_ARG);
    assert_non_null(strstr(msg, "params is NULL"));
}

static struct fc_context *compile_only_context(void)
{
    struct fc_options options;
    fc_options_init(&options);
    options.no_disk_cache = 1;
    struct fc_context *ctx = NULL;
    assert_int_equal(fc_context_create(FC_DEVICE_NONE, &options, &ctx), FC_OK);
    assert_string_equal(fc_context_errmsg(ctx), "");
    return ctx;
}

static void test_api_misuse_without_gpu(void **state)
{
    (void)state;
    struct fc_attention_params p = valid_params();
    assert_int_equal(fc_attention_forward(NULL, &p, NULL), FC_ERR_INVALID_ARG);
    assert_int_equal(fc_attention_plan(NULL, &p, NULL), FC_ERR_INVALID_ARG);
    struct fc_context *ctx = compile_only_context();
    assert_int_equal(fc_attention_forward(ctx, NULL, NULL), FC_ERR_INVALID_ARG);
    assert_non_null(strstr(fc_context_errmsg(ctx), "params is NULL"));
    p.heads_kv = 3;
    assert_int_equal(fc_attention_forward(ctx, &p, NULL), FC_ERR_INVALID_ARG);
    assert_non_null(strstr(fc_context_errmsg(ctx), "heads_kv (3)"));
    p = valid_params();
    assert_int_equal(fc_attention_forward(ctx, &p, NULL), FC_ERR_NO_DEVICE);
    assert_non_null(strstr(fc_context_errmsg(ctx), "FC_DEVICE_NONE"));
    fc_context_destroy(ctx);
    fc_context_destroy(NULL);
}

static void test_plan_names_the_kernel_and_why(void **state)
{
    (void)state;
    struct fc_context *ctx = compile_only_context();
    struct fc_attention_params p = valid_params();
    p.causal = 1;
    p.dtype = FC_BF16;
    struct fc_plan_info info;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);   /* few causal keys: 64-key tiles */
    assert_string_equal(info.kernel, "sm90_bf16_d64_causal_m64n64s2w4_sm_90a");
    assert_non_null(strstr(info.reason, "WGMMA"));
    p.head_dim = 128;   /* 300 keys, causal: two consumer warpgroups on a persistent grid */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d128_causal_m128n128s2w12p_sm_90a");
    p.seqused_k = (const int32_t *)device_memory;   /* per-sequence lengths: one consumer, short tiles */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d128_causal_var_m64n64s2w8_sm_90a");
    p.seqused_k = NULL;
    p.seqlen_k = 2048;   /* two consumer warpgroups and a producer */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d128_causal_m128n128s2w12p_sm_90a");
    p.seqlen_k = 4096;   /* causal up to 4k keys, still 128-key tiles (their lazy rescale) ... */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d128_causal_m128n128s2w12p_sm_90a");
    p.seqlen_k = 8192;   /* ... and at 8k causal keys (the split loop's, PERF_NOTES v29.4) */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d128_causal_m128n128s2w12p_sm_90a");
    p.seqused_k = (const int32_t *)device_memory;   /* per-sequence lengths: 192-key tiles from 8k causal keys */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d128_causal_var_m128n192s2w12p_sm_90a");
    p.seqused_k = NULL;
    p.window_left = 512;   /* ... not with a window (its span, not the sequence, sets the tiles it crosses) */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d128_causal_win_m128n128s2w12p_sm_90a");
    p.window_left = -1;
    p.softcap = 30.f;   /* ... nor a softcap (its tanh needs the registers) */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d128_causal_cap_m128n128s2w12p_sm_90a");
    p.softcap = 0.f;
    p.head_dim = 256;   /* 80-key tiles at head_dim 256, 112 at 192, whatever the keys */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d256_causal_m128n80s2w12p_sm_90a");
    p.head_dim = 192;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d192_causal_m128n112s2w12p_sm_90a");
    p.head_dim = 128;
    p.head_dim = 64;   /* long sequences: three consumer warpgroups, taking turns */
    p.seqlen_q = p.seqlen_k = 8192;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d64_causal_m192n128s2w16p_sm_90a");
    p.seqlen_q = p.seqlen_k = 2048;   /* ... from 4k causal keys; below, the plain warpgroup */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d64_causal_m64n128s2w4_sm_90a");
    p.causal = 0;   /* ... from 2k keys without a mask */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d64_m192n128s2w16p_sm_90a");
    p.causal = 1;
    p.seqlen_q = p.seqlen_k = 8192;
    p.seqlen_q = 4;   /* 4 query heads per K/V head x 4 rows: the Hopper kernel packs them (and splits the keys) */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d64_causal_gqa_m64n128s2w8_sm_90a");
    assert_non_null(strstr(info.reason, "packed into each CTA's rows"));
    assert_non_null(strstr(info.reason, "leaves GQA-packed rows to the Hopper kernel"));
    const int heads_q = p.heads_q;
    p.heads_q = p.heads_kv;   /* no GQA: nothing to pack; 4 rows fit one 16-row tile: split-KV decode */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "decode_bf16_d64_causal_m16n128s2w8_sm_90a");
    assert_non_null(strstr(info.reason, "query heads per K/V head x query rows, at most 128"));
    p.seqlen_q = 20;   /* 20 rows: at head_dim 64 the Hopper kernel, and why */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d64_causal_m64n128s2w4_sm_90a");
    assert_non_null(strstr(info.reason, "more than 16 packed rows"));
    p.head_dim = 128;   /* ... at 128 a 32-row tile, four warps of 32 keys per 16 rows */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "decode_bf16_d128_causal_m32n128s2w8_sm_90a");
    p.seqlen_q = 64;   /* 64 rows: a 64-row tile, two warps of 64 keys per 16 rows */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "decode_bf16_d128_causal_m64n128s2w8_sm_90a");
    p.head_dim = 256;   /* ... 16 keys per warp beside head_dim 256's accumulators, four stages */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "decode_bf16_d256_causal_m64n32s4w8_sm_90a");
    p.head_dim = 128;
    p.seqlen_q = 16;   /* 16 rows: one 16-row tile */
    p.kv_dtype = FC_E4M3;   /* an FP8 cache with GQA (no Hopper kernel reads one): the decode kernel's 128-row tile */
    p.heads_q = 8 * p.heads_kv;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "decode_bf16_d128_causal_kv8_m128n64s4w8_sm_90a");
    p.kv_dtype = p.dtype;
    p.head_dim = 128;
    p.heads_q = heads_q;
    p.seqlen_q = 256;   /* whole 128-row tiles of one head: nothing to pack */
    p.seqlen_k = 300;
    p.head_dim = 96;   /* the Hopper kernel, its last 128-byte column block half zeros */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d96_causal_m128n128s2w12p_sm_90a");
    p.head_dim = 80;   /* not a multiple of 32: the mma.sync kernel, and why */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm80_bf16_d80_causal_m128n64s2w8_sm_90a");
    assert_non_null(strstr(info.reason, "a multiple of 32"));
    assert_string_equal(fc_context_errmsg(ctx), "");
    p.head_dim = 40;   /* no tensor-core kernel: the selector says why */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "reference_bf16_d40_causal_m16n32s1w4_sm_90a");
    assert_non_null(strstr(info.reason, "not a multiple of 16"));
    p.head_dim = 100;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_ERR_UNSUPPORTED);
    assert_non_null(strstr(fc_context_errmsg(ctx), "head_dim 100"));
    p.head_dim = 128;   /* a window: the same kernel and tiles with the switch ("_win") */
    p.window_left = 256;
    p.seqlen_k = 8192;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d128_causal_win_m128n128s2w12p_sm_90a");
    p.window_left = 8191;   /* wider than the keys: no window */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d128_causal_m128n128s2w12p_sm_90a");
    p.causal = 0;
    p.window_left = -1;
    p.window_right = 0;   /* causal */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d128_causal_m128n128s2w12p_sm_90a");
    p.window_right = 3;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d128_win_m128n128s2w12p_sm_90a");
    p.softcap = 30.f;   /* a softcap: its switch too */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d128_win_cap_m128n128s2w12p_sm_90a");
    p.window_right = -1;
    p.seqlen_q = 1;   /* GQA decode: packed rows, the softcap's switch too */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d128_cap_gqa_m64n128s2w8_sm_90a");
    p.heads_q = p.heads_kv;   /* no GQA: the decode kernel */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "decode_bf16_d128_cap_m16n128s2w8_sm_90a");
    fc_context_destroy(ctx);
}

/* The name of the kernel FC_FORCE_VARIANT=text gives a problem on sm_90a, or "" if it fails. */
static const char *forced_kernel(const char *text, int head_dim, char name[FC_VARIANT_NAME_MAX])
{
    struct fc_attention_params p = valid_params();
    p.head_dim = head_dim;
    struct fc_problem problem;
    struct fc_plan_override override;
    struct fc_plan plan;
    char msg[512];
    name[0] = 0;
    if (fc_problem_from_params(&p, &problem, msg, sizeof msg) == FC_OK &&
        fc_plan_override_parse(text, &override) == 0 &&
        fc_plan_make(&problem, &H100, &override, NULL, &plan, msg, sizeof msg) == FC_OK)
        fc_variant_name(&plan.variant, name);
    return name;
}

static void test_forced_variants_keep_the_defaults_they_do_not_name(void **state)
{
    (void)state;
    char name[FC_VARIANT_NAME_MAX];
    assert_string_equal(forced_kernel("sm90", 128, name), "sm90_f16_d128_m128n128s2w12p_sm_90a");
    assert_string_equal(forced_kernel("sm90:p0", 128, name), "sm90_f16_d128_m128n128s2w12_sm_90a");
    /* one consumer: the default ping-pong no longer applies, and asking for it is refused */
    assert_string_equal(forced_kernel("sm90:m64n64w8", 128, name), "sm90_f16_d128_m64n64s2w8_sm_90a");
    assert_string_equal(forced_kernel("sm90:m64n64w8p1", 128, name), "");
    assert_string_equal(forced_kernel("sm90:m192w16s3p1", 64, name), "sm90_f16_d64_m192n128s3w16p_sm_90a");
    assert_string_equal(forced_kernel("sm90:m128w8", 128, name), "sm90_f16_d128_m128n128s2w8_sm_90a");
    assert_string_equal(forced_kernel("sm80:p1", 128, name), "");   /* a choice of the sm90 kernel */
    struct fc_plan_override override;
    assert_int_equal(fc_plan_override_parse("sm90:p2", &override), -1);
    assert_int_equal(fc_plan_override_parse("sm90:m0", &override), -1);
    assert_int_equal(fc_plan_override_parse("sm90:x1", &override), -1);
    assert_int_equal(fc_plan_override_parse("sm90:m", &override), -1);
    assert_int_equal(fc_plan_override_parse("nope", &override), -1);
}

/* The decode family's splits on an H100/H200 (132 SMs, one 132 KB CTA per SM at head_dim 128), one
 * query head per K/V head (with GQA, the Hopper kernel's packed rows take these shapes:
 * test_hopper_packs_few_query_rows). */
static void test_decode_splits_fill_the_gpu(void **state)
{
    (void)state;
    struct fc_attention_params p = valid_params();
    p.seqlen_q = 1;
    p.heads_q = 8;
    p.heads_kv = 8;
    p.head_dim = 128;
    const struct { int batch, seqlen_k, sm_count, splits, split_keys; } CASES[] = {
        {64, 8192, 132, 1, 8192},    /* 512 CTAs: 97% of four waves already */
        {8, 32768, 132, 2, 16384},   /* 64 CTAs: two splits make 128 of 132 slots */
        {8, 32768, 0, 2, 16384},     /* SM count unknown: planned as 132 */
        {1, 100, 132, 1, 128},       /* too few keys to split */
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        p.batch = CASES[i].batch;
        p.seqlen_k = CASES[i].seqlen_k;
        struct fc_problem problem;
        struct fc_plan plan;
        char msg[512];
        assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
        assert_int_equal(fc_plan_make(&problem, &(struct fc_target){90, 1, CASES[i].sm_count}, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
        assert_int_equal(plan.variant.family, FC_KERNEL_DECODE);
        assert_int_equal(plan.splits, CASES[i].splits);
        assert_int_equal(plan.split_keys, CASES[i].split_keys);
        assert_int_equal(plan.grid, CASES[i].splits * 8 * CASES[i].batch);
        assert_true((long long)plan.splits * plan.split_keys >= CASES[i].seqlen_k);
    }
}

/* The plan of p on target (FC_OK expected), forced by `forced` if not NULL. */
static struct fc_plan plan_of(const struct fc_attention_params *p, struct fc_target target, const char *forced)
{
    struct fc_problem problem;
    struct fc_plan_override override;
    struct fc_plan plan;
    char msg[512] = "";
    assert_int_equal(fc_problem_from_params(p, &problem, msg, sizeof msg), FC_OK);
    if (forced)
        assert_int_equal(fc_plan_override_parse(forced, &override), 0);
    assert_int_equal(fc_plan_make(&problem, &target, forced ? &override : NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    return plan;
}

/* p's plan forced by `forced` on target is refused (FC_ERR_UNSUPPORTED), its message naming `why`. */
static void assert_forced_refused(const struct fc_attention_params *p, struct fc_target target, const char *forced,
                                  const char *why)
{
    struct fc_problem problem;
    struct fc_plan_override override;
    struct fc_plan plan;
    char msg[512] = "";
    assert_int_equal(fc_problem_from_params(p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_override_parse(forced, &override), 0);
    assert_int_equal(fc_plan_make(&problem, &target, &override, NULL, &plan, msg, sizeof msg), FC_ERR_UNSUPPORTED);
    if (!strstr(msg, why))
        fail_msg("%s: \"%s\" does not say \"%s\"", forced, msg, why);
}

/* The quick first call's plan (fc_plan_quick): a warp-specialized Hopper plan has one, the plain
 * schedule of one warpgroup in its quick form (32-key tiles, "_quick"), planned for the same problem
 * with its own grid; a plain plan, FP8 attention, other families have none. The quick form is the
 * plain schedule's only: 32-key tiles are its alone, and no other family takes it. */
static void test_quick_first_call_plan(void **state)
{
    (void)state;
    struct fc_attention_params p = valid_params();
    p.batch = 4;
    p.seqlen_q = p.seqlen_k = 4096;
    p.heads_q = p.heads_kv = 16;
    p.head_dim = 128;
    p.causal = 1;
    struct fc_problem problem;
    char msg[512] = "", name[FC_VARIANT_NAME_MAX];
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    struct fc_plan plan = plan_of(&p, H100, NULL), quick;
    assert_int_equal(plan.variant.warps, plan.variant.block_m / 16 + 4);   /* warp-specialized */
    assert_int_equal(fc_plan_quick(&problem, &H100, &plan, &quick), 1);
    fc_variant_name(&quick.variant, name);
    assert_string_equal(name, "sm90_f16_d128_causal_quick_m64n32s2w4_sm_90a");
    struct fc_variant parsed;   /* the name reads back */
    assert_int_equal(fc_variant_parse_name(name, &parsed), 0);
    assert_int_equal(fc_variant_compare(&parsed, &quick.variant), 0);
    assert_int_equal(quick.threads, 128);
    assert_int_equal(quick.units, 0);                    /* not persistent: a CTA per row block */
    assert_int_equal(quick.grid, 4 * 16 * 4096 / 64);
    assert_non_null(strstr(quick.reason, "quick first call"));

    char why[256];
    struct fc_variant v = quick.variant;
    v.quick = 0;   /* 32-key tiles: the quick form's only */
    assert_int_not_equal(fc_variant_check(&v, why, sizeof why), 0);
    assert_non_null(strstr(why, "block_n"));
    v = plan.variant;   /* the quick form: the plain schedule's only */
    v.quick = 1;
    assert_int_not_equal(fc_variant_check(&v, why, sizeof why), 0);
    assert_non_null(strstr(why, "plain schedule"));
    v = quick.variant;
    v.family = FC_KERNEL_SM80;   /* and the sm90 kernel's */
    v.block_m = 128;
    v.block_n = 64;
    assert_int_not_equal(fc_variant_check(&v, why, sizeof why), 0);
    assert_non_null(strstr(why, "quick"));

    p.head_dim = 256;   /* 32-key tiles at every head_dim (the planned 80 here) */
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    plan = plan_of(&p, H100, NULL);
    assert_int_equal(plan.variant.block_n, 80);
    assert_int_equal(fc_plan_quick(&problem, &H100, &plan, &quick), 1);
    assert_int_equal(quick.variant.block_n, 32);
    assert_int_equal(quick.variant.block_m, 64);
    assert_int_equal(quick.variant.quick, 1);

    p.head_dim = 64;   /* head_dim 64 at 512 keys: the plain schedule already */
    p.seqlen_q = p.seqlen_k = 512;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    plan = plan_of(&p, H100, NULL);
    assert_int_equal(plan.variant.warps, 4);
    assert_int_equal(fc_plan_quick(&problem, &H100, &plan, &quick), 0);

    p.head_dim = 128;   /* the sm80 kernel has none */
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    plan = plan_of(&p, (struct fc_target){80, 0, 108}, NULL);
    assert_int_equal(plan.variant.family, FC_KERNEL_SM80);
    assert_int_equal(fc_plan_quick(&problem, &(struct fc_target){80, 0, 108}, &plan, &quick), 0);

    p.dtype = p.kv_dtype = FC_E4M3;   /* FP8 attention: warp-specialized only */
    p.out_dtype = FC_BF16;
    p.seqlen_q = p.seqlen_k = 4096;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    plan = plan_of(&p, H100, NULL);
    assert_int_equal(plan.variant.q_fp8, 1);
    assert_int_equal(fc_plan_quick(&problem, &H100, &plan, &quick), 0);
}

/* Few query rows with GQA on Hopper: the sm90 kernel packs a K/V head's query heads into each CTA's
 * rows (FlashAttention-3's fill rule), 64 a CTA up to 128 rows of a K/V head, splitting the keys
 * across CTAs where the row blocks leave SMs idle (src/split.c's wave rule); the decode kernel leaves
 * them all to it. */
static void test_hopper_packs_few_query_rows(void **state)
{
    (void)state;
    struct fc_attention_params p = valid_params();
    p.dtype = FC_BF16;
    p.causal = 1;
    p.batch = 8;
    p.heads_q = 32;
    p.heads_kv = 8;
    p.seqlen_q = 16;
    p.seqlen_k = 16000;
    p.head_dim = 128;
    char name[FC_VARIANT_NAME_MAX];
    struct fc_plan plan = plan_of(&p, H100, NULL);   /* 64 rows a K/V head: 64 row blocks, two splits each */
    fc_variant_name(&plan.variant, name);
    assert_string_equal(name, "sm90_bf16_d128_causal_gqa_m64n128s2w8_sm_90a");
    assert_int_equal(plan.splits, 2);
    assert_int_equal(plan.split_keys, 63 * 128);   /* 125 tiles of 128 keys: 63 and 62 */
    assert_int_equal(plan.grid, 128);
    assert_int_equal(plan.m_blocks, 1);
    assert_int_equal(plan.units, 0);   /* a CTA a row block, not the persistent grid */
    assert_non_null(strstr(plan.declined, "leaves GQA-packed rows"));
    p.heads_q = 64;   /* 128 rows: two CTAs of 8 query rows x 8 heads, 128 of 132 SMs: no split */
    plan = plan_of(&p, H100, NULL);
    fc_variant_name(&plan.variant, name);
    assert_string_equal(name, "sm90_bf16_d128_causal_gqa_m64n128s2w8_sm_90a");
    assert_int_equal(plan.grid, 128);
    assert_int_equal(plan.splits, 1);
    assert_int_equal(plan.m_blocks, 2);
    p.heads_q = 32;
    p.seqlen_q = 1;   /* large-batch decode: 512 CTAs, 64-key tiles so that two share an SM */
    p.batch = 64;
    p.seqlen_k = 8192;
    plan = plan_of(&p, H100, NULL);
    fc_variant_name(&plan.variant, name);
    assert_string_equal(name, "sm90_bf16_d128_causal_gqa_m64n64s2w8_sm_90a");
    assert_int_equal(plan.grid, 512);
    assert_int_equal(plan.splits, 1);
    p.batch = 8;   /* 64 CTAs of 128-key tiles, one an SM: two splits, 128 CTAs */
    p.seqlen_k = 32768;
    plan = plan_of(&p, H100, NULL);
    fc_variant_name(&plan.variant, name);
    assert_string_equal(name, "sm90_bf16_d128_causal_gqa_m64n128s2w8_sm_90a");
    assert_int_equal(plan.splits, 2);
    assert_int_equal(plan.split_keys, 16384);
    assert_int_equal(plan.grid, 128);
    plan = plan_of(&p, H100, "sm90:m64n64w8g1");   /* two an SM: four splits */
    assert_int_equal(plan.splits, 4);
    assert_int_equal(plan.grid, 256);
    plan = plan_of(&p, H100, "sm90:m64n64w8g1k3");   /* forced */
    assert_int_equal(plan.splits, 3);
    assert_int_equal(plan.split_keys, 171 * 64);
    plan = plan_of(&p, H100, "sm90:m64n64w8g1k1");
    assert_int_equal(plan.splits, 1);
    assert_int_equal(plan.grid, 64);
    p.batch = 8;
    p.seqlen_k = 16000;
    p.seqlen_q = 64;   /* 256 rows: two consumers, 32 query rows a CTA, wider key tiles from 4k keys */
    plan = plan_of(&p, H100, NULL);
    fc_variant_name(&plan.variant, name);
    assert_string_equal(name, "sm90_bf16_d128_causal_gqa_m128n192s2w12p_sm_90a");
    assert_int_equal(plan.grid, 128);
    p.heads_q = 12;   /* 3 heads a K/V head: 21 query rows a 64-row tile (one row unused), 2 blocks */
    p.heads_kv = 4;
    p.seqlen_q = 30;
    plan = plan_of(&p, H100, NULL);
    fc_variant_name(&plan.variant, name);
    assert_string_equal(name, "sm90_bf16_d128_causal_gqa_m64n128s2w8_sm_90a");
    assert_int_equal(plan.m_blocks, 2);
    assert_int_equal(plan.grid, 8 * 4 * 2 * 2);   /* two splits */
    p.heads_q = 32;
    p.heads_kv = 8;
    p.seqlen_q = 16;
    p.seqlen_q = 1;   /* a window: the splits share the tiles it spans, 4096 keys of 32768 */
    p.seqlen_k = 32768;
    p.causal = 0;
    p.window_left = 4095;
    plan = plan_of(&p, H100, NULL);
    assert_int_equal(plan.variant.pack_gqa, 1);
    assert_int_equal(plan.splits, 2);
    assert_int_equal(plan.split_keys, 16 * 128);
    p.window_left = -1;
    p.causal = 1;
    p.seqlen_q = 16;
    p.seqlen_k = 16000;
    p.batch = 4;   /* 32 row blocks: four splits */
    plan = plan_of(&p, H100, NULL);
    assert_int_equal(plan.variant.pack_gqa, 1);
    assert_int_equal(plan.splits, 4);
    assert_non_null(strstr(plan.declined, "leaves GQA-packed rows to the Hopper kernel"));
    plan = plan_of(&p, (struct fc_target){90, 1, 64}, NULL);   /* ... two on a GPU of 64 SMs */
    assert_int_equal(plan.variant.pack_gqa, 1);
    assert_int_equal(plan.splits, 2);
    p.batch = 8;
    plan = plan_of(&p, (struct fc_target){80, 0, 108}, NULL);   /* no Hopper kernel: decode */
    assert_int_equal(plan.variant.family, FC_KERNEL_DECODE);
    p.kv_dtype = FC_E4M3;   /* an FP8 cache: decode (the Hopper kernel reads 16-bit K/V) */
    plan = plan_of(&p, H100, NULL);
    assert_int_equal(plan.variant.family, FC_KERNEL_DECODE);
    p.kv_dtype = p.dtype;
    p.heads_q = p.heads_kv = 8;   /* no GQA: nothing to pack */
    p.seqlen_q = 64;
    plan = plan_of(&p, H100, NULL);
    assert_int_equal(plan.variant.pack_gqa, 0);
    /* forced: g1 packs (head_dim 64: the warp-specialized schedule, one consumer), g0 does not */
    p.heads_q = 32;
    p.head_dim = 64;
    plan = plan_of(&p, H100, "sm90:g1");
    fc_variant_name(&plan.variant, name);
    assert_string_equal(name, "sm90_bf16_d64_causal_gqa_m64n128s2w8_sm_90a");
    plan = plan_of(&p, H100, "sm90:m128w12g0");
    assert_int_equal(plan.variant.pack_gqa, 0);
    struct fc_plan_override override;
    assert_int_equal(fc_plan_override_parse("sm80:g1", &override), -1);   /* a choice of the sm90 kernel */
    assert_int_equal(fc_plan_override_parse("sm90:g2", &override), -1);
    struct fc_variant parsed;   /* the name's "_gqa" reads back */
    assert_int_equal(fc_variant_parse_name("sm90_bf16_d64_causal_win_gqa_m64n128s2w8_sm_90a", &parsed), 0);
    assert_int_equal(parsed.pack_gqa, 1);
    assert_int_equal(parsed.window, 1);
    parsed.family = FC_KERNEL_SM80;   /* only the sm90 kernel packs */
    char why[256];
    assert_int_equal(fc_variant_check(&parsed, why, sizeof why), -1);
    assert_non_null(strstr(why, "pack_gqa"));
    /* a forced packing the kernel cannot take: a plain-schedule tile, more than 64 heads a K/V head */
    assert_forced_refused(&p, H100, "sm90:m64w4g1", "warp-specialized");
    p.heads_q = 128;
    p.heads_kv = 1;
    assert_forced_refused(&p, H100, "sm90:g1", "up to 64 query heads per K/V head");
}

/* Each family's split-KV combine (src/split.c) takes the argument the launch passes both of its
 * kernels and reads its fc_kernel_args: the sm90 kernel's is fc_sm90_args (TMA maps first), whose
 * base the combine must take, not the argument itself. */
static void test_split_combine_takes_the_family_argument(void **state)
{
    (void)state;
    char source[4096];
    struct fc_variant v;
    assert_int_equal(fc_variant_parse_name("sm90_bf16_d128_gqa_m64n128s2w8_sm_90a", &v), 0);
    assert_true(fc_family_of(FC_KERNEL_SM90)->second_source(&v, source, sizeof source) > 0);
    assert_non_null(strstr(source, "fc_second_kernel(const __grid_constant__ fc_sm90_args args)"));
    assert_non_null(strstr(source, "fc::combine_splits<fc::bfloat16_t, 128>(args.base);"));
    assert_int_equal(fc_variant_parse_name("decode_bf16_d128_m16n128s2w8_sm_90a", &v), 0);
    assert_true(fc_family_of(FC_KERNEL_DECODE)->second_source(&v, source, sizeof source) > 0);
    assert_non_null(strstr(source, "fc_combine_kernel(const __grid_constant__ fc_kernel_args args)"));
    assert_non_null(strstr(source, "fc::combine_splits<fc::bfloat16_t, 128>(args);"));
    v.varlen = 1;
    assert_true(fc_family_of(FC_KERNEL_DECODE)->second_source(&v, source, sizeof source) > 0);
    assert_non_null(strstr(source, "fc_combine_kernel(const __grid_constant__ fc_varlen_args args)"));
    assert_non_null(strstr(source, "fc::combine_splits<fc::bfloat16_t, 128, true>(args.base);"));
    v.paged = 1;
    assert_true(fc_family_of(FC_KERNEL_DECODE)->second_source(&v, source, sizeof source) > 0);
    assert_non_null(strstr(source, "fc_combine_kernel(const __grid_constant__ fc_paged_args args)"));
}

/* With a window, the decode family splits only the keys its rows see (src/mask.c): the tiles of
 * [first key of row 0, seqlen_k) (forced: with GQA on Hopper the packed rows take these problems). */
static void test_decode_splits_only_the_window(void **state)
{
    (void)state;
    struct fc_attention_params p = valid_params();
    p.seqlen_q = 1;
    p.heads_q = 32;
    p.heads_kv = 8;
    p.head_dim = 128;
    p.batch = 8;
    p.seqlen_k = 32768;
    const struct { int seqlen_q, left, right, causal, splits, split_keys; } CASES[] = {
        {1, 4095, -1, 0, 7, 640},      /* 4096 keys, 32 tiles; 16 CTAs a split: 7 fill 112 of 132 SMs */
        {1, 100, -1, 1, 1, 128},       /* 101 keys: one tile, no split */
        {4, 100, -1, 1, 1, 128},       /* rows 0-3: keys 32664 (row 0's first) to 32767: 104 keys */
        {4, 0, 0, 0, 1, 128},          /* the diagonals alone: 4 keys */
        {1, -1, -1, 1, 8, 4096},       /* no window: the whole sequence, 256 tiles */
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        p.seqlen_q = CASES[i].seqlen_q;
        p.heads_q = 16 / CASES[i].seqlen_q * 2;   /* 16 packed rows at most: 2 K/V heads' worth */
        p.heads_kv = 2;
        p.window_left = CASES[i].left;
        p.window_right = CASES[i].right;
        p.causal = CASES[i].causal;
        struct fc_problem problem;
        struct fc_plan plan;
        char msg[512];
        struct fc_plan_override decode;
        assert_int_equal(fc_plan_override_parse("decode", &decode), 0);
        assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
        assert_int_equal(fc_plan_make(&problem, &H100, &decode, NULL, &plan, msg, sizeof msg), FC_OK);
        assert_int_equal(plan.variant.family, FC_KERNEL_DECODE);
        const struct fc_key_range keys = fc_mask_keys(&problem.mask, p.seqlen_q, p.seqlen_k, 0, p.seqlen_q);
        if (plan.splits != CASES[i].splits || plan.split_keys != CASES[i].split_keys)
            fail_msg("case %zu: %d splits of %d keys for keys [%d, %d)", i, plan.splits, plan.split_keys, keys.begin,
                     keys.end);
        assert_int_equal(keys.end, p.seqlen_k);   /* the last query row's diagonal is the last key */
        assert_true((long long)plan.splits * plan.split_keys >= keys.end - keys.begin);
        assert_true((long long)(plan.splits - 1) * plan.split_keys < keys.end - keys.begin);   /* none empty */
    }
}

/* FC_FORCE_VARIANT=decode:k8 asks for 8 splits: granted where there are tiles enough, else one per
 * tile; `k` is refused as 0 and for the families that do not split (the sm90 kernel splits its
 * GQA-packed rows only: test_hopper_packs_few_query_rows). */
static void test_decode_splits_can_be_forced(void **state)
{
    (void)state;
    struct fc_attention_params p = valid_params();
    p.seqlen_q = 1;
    p.heads_q = 32;
    p.heads_kv = 8;
    p.head_dim = 128;
    p.batch = 64;
    const struct { int seqlen_k; const char *forced; int splits, split_keys; } CASES[] = {
        {8192, "decode:k8", 8, 1024},
        {8192, "decode:n128k3", 3, 2816},     /* 64 tiles of 128: 22 each, the last one 20 */
        {8192, "decode", 1, 8192},            /* not named: chosen */
        {100, "decode:n64w4k8", 2, 64},       /* 2 tiles of 64 keys: one split each */
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        p.seqlen_k = CASES[i].seqlen_k;
        struct fc_problem problem;
        struct fc_plan_override override;
        struct fc_plan plan;
        char msg[512];
        assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
        assert_int_equal(fc_plan_override_parse(CASES[i].forced, &override), 0);
        assert_int_equal(fc_plan_make(&problem, &H100, &override, NULL, &plan, msg, sizeof msg), FC_OK);
        assert_int_equal(plan.splits, CASES[i].splits);
        assert_int_equal(plan.split_keys, CASES[i].split_keys);
        assert_int_equal(plan.grid, CASES[i].splits * 8 * 64);
    }
    struct fc_plan_override override;
    assert_int_equal(fc_plan_override_parse("sm80:k4", &override), -1);
    assert_int_equal(fc_plan_override_parse("reference:k4", &override), -1);
    assert_int_equal(fc_plan_override_parse("decode:k0", &override), -1);
    p.seqlen_q = 256;   /* the sm90 kernel's unpacked rows take no split, and say so */
    p.seqlen_k = 8192;
    assert_forced_refused(&p, H100, "sm90:g0k4", "GQA-packed rows (g1) only");
}

/* A tuned winner for the problem's nearest bucket replaces the heuristic's choice in the plan the
 * forward call uses, with its reason and its own launch shape; a forced variant, a decode-shaped
 * problem keep theirs; paged problems run its tiles (pages of any size: it is warp-specialized). (The table is filled by hand: a device context loads it.) */
static void test_tuned_winner_replaces_the_heuristic(void **state)
{
    (void)state;
    struct fc_context *ctx = compile_only_context();
    static struct fc_tuned winner;
    memset(&winner, 0, sizeof winner);
    assert_int_equal(fc_bucket_parse("f16_d128_causal_gqa4_s2048", &winner.bucket), 0);
    assert_int_equal(fc_variant_parse_name("sm90_f16_d128_causal_m64n64s2w8_sm_90a", &winner.variant), 0);
    winner.log2_seqlen = 11.;
    snprintf(winner.reason, sizeof winner.reason, "tuned: test winner");
    ctx->tuned.items = &winner;
    ctx->tuned.count = 1;
    struct fc_attention_params p = valid_params();   /* Hq 8, Hkv 2: GQA 4 */
    p.head_dim = 128;
    p.causal = 1;
    p.seqlen_q = p.seqlen_k = 4096;   /* nearest bucket: s2048 */
    struct fc_plan_info info;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_f16_d128_causal_m64n64s2w8_sm_90a");
    assert_string_equal(info.reason, "tuned: test winner");
    p.causal = 0;   /* no bucket for it: the heuristic */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_f16_d128_m128n128s2w12p_sm_90a");
    p.causal = 1;
    p.window_left = 512;   /* a window: the winner's tiles with the switch, and the reason says so */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_f16_d128_causal_win_m64n64s2w8_sm_90a");
    assert_non_null(strstr(info.reason, "tuned: test winner; measured without a window"));
    p.softcap = 50.f;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_f16_d128_causal_win_cap_m64n64s2w8_sm_90a");
    p.window_left = -1;
    p.softcap = 0.f;
    p.seqlen_q = 1;   /* decode-shaped: GQA-packed rows, not tuned */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_f16_d128_causal_gqa_m64n128s2w8_sm_90a");
    assert_null(strstr(info.reason, "tuned"));
    p.seqlen_q = 4096;   /* paged, pages of 16: the bucket's sm90 winner with the switch */
    p.page_size = 16;
    p.page_table_stride = 4096 / 16;
    p.num_pages = p.batch * p.page_table_stride;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_f16_d128_causal_var_pg_m64n64s2w8_sm_90a");
    assert_non_null(strstr(info.reason, "tuned: test winner; measured without a window, softcap or page table"));
    p.page_size = 12;   /* the winner warp-specialized: any page size (gathered rows) */
    p.page_table_stride = 4096 / 12 + 1;
    p.num_pages = p.batch * p.page_table_stride;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_f16_d128_causal_var_pg_m64n64s2w8_sm_90a");
    p.head_dim = 64;   /* no bucket for head_dim 64: paged, the warp-specialized schedule gathers them */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_f16_d64_causal_var_pg_m64n128s2w8_sm_90a");
    assert_null(strstr(info.reason, "tuned"));
    /* a plain-schedule winner (head_dim 64's) serves the dense problem, not the paged one */
    assert_int_equal(fc_bucket_parse("f16_d64_causal_gqa4_s2048", &winner.bucket), 0);
    assert_int_equal(fc_variant_parse_name("sm90_f16_d64_causal_m128n64s2w8_sm_90a", &winner.variant), 0);
    p.page_size = 16;
    p.page_table_stride = 4096 / 16;
    p.num_pages = p.batch * p.page_table_stride;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_f16_d64_causal_var_pg_m64n128s2w8_sm_90a");
    assert_null(strstr(info.reason, "tuned"));
    p.page_size = 0;
    p.page_table_stride = p.num_pages = 0;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_f16_d64_causal_m128n64s2w8_sm_90a");
    assert_string_equal(info.reason, "tuned: test winner");
    /* a 192-key winner serves neither a window nor a softcap (the selector keeps them off those tiles) */
    assert_int_equal(fc_bucket_parse("f16_d128_causal_gqa4_s2048", &winner.bucket), 0);
    assert_int_equal(fc_variant_parse_name("sm90_f16_d128_causal_m128n192s2w12p_sm_90a", &winner.variant), 0);
    p.head_dim = 128;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_f16_d128_causal_m128n192s2w12p_sm_90a");
    assert_string_equal(info.reason, "tuned: test winner");
    p.window_left = 512;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_f16_d128_causal_win_m128n128s2w12p_sm_90a");
    assert_null(strstr(info.reason, "tuned"));
    p.window_left = -1;
    p.softcap = 30.f;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_f16_d128_causal_cap_m128n128s2w12p_sm_90a");
    assert_null(strstr(info.reason, "tuned"));
    ctx->tuned.items = NULL;   /* not the context's to free */
    ctx->tuned.count = 0;
    fc_context_destroy(ctx);
}

/* FP8 attention's buckets (dtype e4m3): an FP8 problem takes an FP8-attention winner with its own
 * output type (the bucket's is bf16), and never a 16-bit winner; a 16-bit problem never takes an
 * FP8-attention winner, even one filed under its bucket (the tuner's rows from before FP8 buckets).
 * (The table is filled by hand: a device context loads it.) */
static void test_tuned_fp8_attention_winner(void **state)
{
    (void)state;
    struct fc_context *ctx = compile_only_context();
    static struct fc_tuned winners[2];
    memset(winners, 0, sizeof winners);
    static const char *const BUCKETS[2] = {"e4m3_d128_causal_gqa4_s2048", "bf16_d128_causal_gqa4_s2048"};
    static const char *const VARIANTS[2] = {"sm90_bf16_d128_causal_kv8_q8_m128n64s2w12_sm_90a",
                                            "sm90_bf16_d128_causal_kv8_q8_m192n128s2w16_sm_90a"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(fc_bucket_parse(BUCKETS[i], &winners[i].bucket), 0);
        assert_int_equal(fc_variant_parse_name(VARIANTS[i], &winners[i].variant), 0);
        winners[i].log2_seqlen = 11.;
        snprintf(winners[i].reason, sizeof winners[i].reason, "tuned: test winner %d", i);
    }
    ctx->tuned.items = winners;
    ctx->tuned.count = 2;
    struct fc_attention_params p = valid_params();   /* Hq 8, Hkv 2: GQA 4 */
    p.dtype = FC_E4M3;
    p.head_dim = 128;
    p.causal = 1;
    p.seqlen_q = p.seqlen_k = 4096;   /* nearest bucket: s2048 */
    struct fc_plan_info info;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);   /* out bf16, the bucket's own */
    assert_string_equal(info.kernel, "sm90_bf16_d128_causal_kv8_q8_m128n64s2w12_sm_90a");
    assert_string_equal(info.reason, "tuned: test winner 0");
    p.out_dtype = FC_F16;   /* the winner's tiles with the problem's out type, and the reason says so */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_f16_d128_causal_kv8_q8_m128n64s2w12_sm_90a");
    assert_string_equal(info.reason, "tuned: test winner 0; measured with a bf16 out, its tiles run this f16 one");
    p.dtype = FC_BF16;   /* 16-bit: its bucket's FP8-attention winner is not its kernel */
    p.out_dtype = FC_DTYPE_SAME;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d128_causal_m128n128s2w12p_sm_90a");
    assert_null(strstr(info.reason, "tuned"));
    p.kv_dtype = FC_E4M3;   /* an FP8 cache beside a 16-bit q: a 16-bit bucket's, never FP8 attention's */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_null(strstr(info.kernel, "_q8"));
    assert_null(strstr(info.reason, "tuned"));
    p.kv_dtype = FC_DTYPE_SAME;
    assert_int_equal(fc_variant_parse_name("sm90_bf16_d128_causal_m64n64s2w8_sm_90a", &winners[0].variant), 0);
    p.dtype = FC_E4M3;   /* a 16-bit winner in FP8 attention's bucket: the heuristic */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_bf16_d128_causal_kv8_q8_m128n128s2w12p_sm_90a");
    assert_null(strstr(info.reason, "tuned"));
    ctx->tuned.items = NULL;   /* not the context's to free */
    ctx->tuned.count = 0;
    fc_context_destroy(ctx);
}

/* Planning reads no tensor: fc_attention_plan answers without pointers; the forward call still
 * checks them (before it looks for a GPU). */
static void test_plan_needs_no_tensors(void **state)
{
    (void)state;
    struct fc_context *ctx = compile_only_context();
    struct fc_attention_params p = valid_params();
    p.q = p.k = p.v = p.out = NULL;
    struct fc_plan_info info;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    assert_string_equal(info.kernel, "sm90_f16_d64_m64n128s2w4_sm_90a");
    assert_int_equal(fc_attention_forward(ctx, &p, NULL), FC_ERR_INVALID_ARG);
    assert_non_null(strstr(fc_context_errmsg(ctx), "q is NULL"));
    fc_context_destroy(ctx);
}

/* Sizes at the int limits: every product is checked in 64 bits (no undefined behaviour), and what
 * does not fit one launch is refused with the reason. */
static void test_sizes_at_the_int_limits(void **state)
{
    (void)state;
    struct fc_problem problem;
    struct fc_plan plan;
    char msg[512];
    struct fc_attention_params p = valid_params();
    p.batch = p.seqlen_q = p.seqlen_k = p.heads_q = p.heads_kv = INT_MAX;
    p.head_dim = 256;   /* 2^31 x 2^31 x 2^31 x 256 elements: past 64-bit offsets */
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_ERR_INVALID_ARG);
    assert_non_null(strstr(msg, "overflow 64-bit offsets"));
    p = valid_params();
    p.seqlen_q = p.seqlen_k = INT_MAX;   /* 2^24 row blocks of 128 x 8 heads x 2: one launch takes it */
    p.head_dim = 128;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.m_blocks, (INT_MAX + 127LL) / 128);
    p.batch = 1 << 20;   /* 2^24 x 8 x 2^20 CTAs: more than a grid */
    p.seqlen_q = p.seqlen_k = 1 << 20;
    p.heads_q = p.heads_kv = 1 << 10;
    p.head_dim = 64;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_ERR_UNSUPPORTED);
    assert_non_null(strstr(msg, "more than one launch takes"));
    p.batch = 1;   /* 2^31 - 2 row blocks (6487866 of 128 x 331 heads): a launch takes them, but a persistent
                    * grid's unit counter (an int, stepping by gridDim.x) would pass INT_MAX */
    p.seqlen_q = p.seqlen_k = 6487866 * 128;
    p.heads_q = p.heads_kv = 331;
    p.head_dim = 128;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_ERR_UNSUPPORTED);
    assert_non_null(strstr(msg, "more than a persistent grid"));
    p.causal = 1;   /* causal: half as many units, in pairs */
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.grid, 132);
    p.causal = 0;
    p.head_dim = 64;
    p.seqlen_q = 1;   /* decode-shaped: its own grid, batch x heads_kv x splits */
    p.seqlen_k = 64;
    p.heads_q = 1 << 12;
    p.heads_kv = 1 << 10;
    p.batch = INT_MAX;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_ERR_UNSUPPORTED);
    assert_non_null(strstr(msg, "more than one launch takes"));
    p.lse = (float *)device_memory;   /* LSE rows: batch x heads_q x seqlen_q x 4 bytes */
    p.seqlen_q = INT_MAX;
    p.heads_q = p.heads_kv = INT_MAX;
    p.head_dim = 8;
    p.q_stride[0] = p.o_stride[0] = 8;   /* strides that keep q and out addressable on their own */
    p.q_stride[1] = p.o_stride[1] = 8;
    p.q_stride[2] = p.o_stride[2] = 8;
    p.k_stride[0] = p.v_stride[0] = p.k_stride[1] = p.v_stride[1] = p.k_stride[2] = p.v_stride[2] = 8;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_ERR_INVALID_ARG);
    assert_non_null(strstr(msg, "lse"));
}

static struct fc_merge_params valid_merge(void)
{
    struct fc_merge_params m;
    fc_merge_params_init(&m);
    m.dtype = FC_BF16;
    m.batch = 2;
    m.seqlen = 100;
    m.heads = 8;
    m.head_dim = 128;
    m.out_a = m.out_b = m.out = device_memory;
    m.lse_a = m.lse_b = m.lse = (float *)device_memory;
    return m;
}

/* fc_attention_params grows through struct_size: an uninitialized one is refused, a newer
 * caller's longer struct is read up to what this library knows, if the rest is 0. */
static void test_params_struct_size(void **state)
{
    (void)state;
    struct fc_context *ctx = compile_only_context();
    struct fc_attention_params p = valid_params();
    assert_int_equal(p.struct_size, sizeof p);
    struct fc_plan_info info;
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_OK);
    p.struct_size = 0;   /* never initialized: memset, or {0} */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_ERR_INVALID_ARG);
    assert_non_null(strstr(fc_context_errmsg(ctx), "fc_attention_params_init"));
    assert_int_equal(fc_attention_forward(ctx, &p, NULL), FC_ERR_INVALID_ARG);
    p.struct_size = (size_t)-1;   /* garbage */
    assert_int_equal(fc_attention_plan(ctx, &p, &info), FC_ERR_INVALID_ARG);
    struct { struct fc_attention_params known; int32_t newer[2]; } grown = {valid_params(), {0, 0}};
    grown.known.struct_size = sizeof grown;
    assert_int_equal(fc_attention_plan(ctx, &grown.known, &info), FC_OK);
    grown.newer[1] = 5;   /* a field this library does not know, set */
    assert_int_equal(fc_attention_plan(ctx, &grown.known, &info), FC_ERR_UNSUPPORTED);
    assert_non_null(strstr(fc_context_errmsg(ctx), "does not know"));
    fc_context_destroy(ctx);
}

/* A caller compiled before the window fields existed (struct_size ends at causal) gets their
 * defaults, -1: no window, whatever its memory holds past its struct; one compiled with them
 * gets what it set. */
static void test_old_callers_get_the_defaults_of_newer_fields(void **state)
{
    (void)state;
    struct fc_attention_params p = valid_params();
    p.causal = 1;
    p.window_left = 0;   /* past an old caller's struct: garbage to it, never read */
    p.window_right = 0;
    p.struct_size = offsetof(struct fc_attention_params, causal) + sizeof p.causal;
    struct fc_problem problem;
    char msg[512] = "";
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(problem.mask.causal, 1);
    assert_int_equal(problem.mask.window, 0);   /* 0 would have been a one-key window */
    p.struct_size = sizeof p;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(problem.mask.window, 1);
    assert_int_equal(problem.mask.window_left, 0);
    struct fc_attention_params fresh;
    memset(&fresh, 0x5a, sizeof fresh);
    fc_attention_params_init(&fresh);
    assert_int_equal(fresh.window_left, -1);
    assert_int_equal(fresh.window_right, -1);
    assert_int_equal(fresh.causal, 0);
    assert_int_equal(fresh.struct_size, sizeof fresh);
}

/* The initializer writes the caller's size, never the library's: a binary compiled against 0.2.0
 * calls the old symbol with a struct that ends at causal; a newer caller's longer struct gets 0 in
 * the fields this library does not know, which it then takes. */
static void test_initializers_write_only_the_callers_struct(void **state)
{
    (void)state;
    const size_t old = FC_PARAMS_SIZE_0_2;
    _Alignas(8) unsigned char buffer[sizeof(struct fc_attention_params) + 64];
    memset(buffer, 0x5a, sizeof buffer);
    (fc_attention_params_init)((struct fc_attention_params *)buffer);   /* the symbol, not the macro */
    size_t struct_size;
    memcpy(&struct_size, buffer, sizeof struct_size);
    assert_int_equal(struct_size, old);
    for (size_t i = old; i < sizeof buffer; i++)
        assert_int_equal(buffer[i], 0x5a);
    memset(buffer, 0x5a, sizeof buffer);
    fc_attention_params_init_sized((struct fc_attention_params *)buffer, sizeof buffer - 8);
    memcpy(&struct_size, buffer, sizeof struct_size);
    assert_int_equal(struct_size, sizeof buffer - 8);
    for (size_t i = sizeof(struct fc_attention_params); i < sizeof buffer - 8; i++)
        assert_int_equal(buffer[i], 0);
    for (size_t i = sizeof buffer - 8; i < sizeof buffer; i++)
        assert_int_equal(buffer[i], 0x5a);
    struct fc_attention_params *p = (struct fc_attention_params *)buffer;
    assert_int_equal(p->window_left, -1);
    memset(buffer, 0x5a, sizeof buffer);
    fc_attention_params_init_sized((struct fc_attention_params *)buffer, old - 8);   /* no version's: untouched */
    for (size_t i = 0; i < sizeof buffer; i++)
        assert_int_equal(buffer[i], 0x5a);
}

/* fc_attention_merge checks every field before it looks for a GPU, reads a struct as long as its
 * caller's struct_size says, and refuses fields it does not know. */
static void test_merge_rules(void **state)
{
    (void)state;
    struct fc_context *ctx = compile_only_context();
    struct fc_merge_params m = valid_merge();
    assert_int_equal(m.struct_size, sizeof m);
    assert_int_equal(fc_attention_merge(ctx, &m, NULL), FC_ERR_NO_DEVICE);   /* valid: then the GPU */
    assert_int_equal(fc_attention_merge(ctx, NULL, NULL), FC_ERR_INVALID_ARG);
    assert_non_null(strstr(fc_context_errmsg(ctx), "params is NULL"));
    m.struct_size = 0;   /* never initialized */
    assert_int_equal(fc_attention_merge(ctx, &m, NULL), FC_ERR_INVALID_ARG);
    assert_non_null(strstr(fc_context_errmsg(ctx), "fc_merge_params_init"));
    m.struct_size = offsetof(struct fc_merge_params, o_stride);   /* shorter than the first version */
    assert_int_equal(fc_attention_merge(ctx, &m, NULL), FC_ERR_INVALID_ARG);
    /* a newer caller's longer struct: zeros beyond what this library knows are fine, a value is not */
    struct { struct fc_merge_params known; int64_t newer; } grown = {valid_merge(), 0};
    grown.known.struct_size = sizeof grown;
    assert_int_equal(fc_attention_merge(ctx, &grown.known, NULL), FC_ERR_NO_DEVICE);
    grown.newer = 1;
    assert_int_equal(fc_attention_merge(ctx, &grown.known, NULL), FC_ERR_UNSUPPORTED);
    assert_non_null(strstr(fc_context_errmsg(ctx), "does not know"));
    m = valid_merge();
    m.heads = 0;
    assert_int_equal(fc_attention_merge(ctx, &m, NULL), FC_ERR_INVALID_ARG);
    assert_non_null(strstr(fc_context_errmsg(ctx), "heads must be positive"));
    m = valid_merge();
    m.head_dim = 264;
    assert_int_equal(fc_attention_merge(ctx, &m, NULL), FC_ERR_UNSUPPORTED);
    m = valid_merge();
    m.dtype = FC_E4M3;
    assert_int_equal(fc_attention_merge(ctx, &m, NULL), FC_ERR_UNSUPPORTED);
    m = valid_merge();
    m.out_b = device_memory + 8;
    assert_int_equal(fc_attention_merge(ctx, &m, NULL), FC_ERR_INVALID_ARG);
    assert_non_null(strstr(fc_context_errmsg(ctx), "out_b"));
    m = valid_merge();
    m.lse_b = NULL;
    assert_int_equal(fc_attention_merge(ctx, &m, NULL), FC_ERR_INVALID_ARG);
    assert_non_null(strstr(fc_context_errmsg(ctx), "lse_b is NULL"));
    m = valid_merge();
    m.lse = NULL;   /* the merged LSE is optional */
    assert_int_equal(fc_attention_merge(ctx, &m, NULL), FC_ERR_NO_DEVICE);
    m.a_stride[0] = 100 * 8 * 128;
    m.a_stride[1] = 8 * 128 + 4;   /* not 16 bytes */
    m.a_stride[2] = 128;
    assert_int_equal(fc_attention_merge(ctx, &m, NULL), FC_ERR_INVALID_ARG);
    assert_non_null(strstr(fc_context_errmsg(ctx), "out_a_stride[1]"));
    m = valid_merge();
    m.batch = m.heads = m.seqlen = INT_MAX;   /* rows past one launch, checked in 64 bits */
    assert_int_equal(fc_attention_merge(ctx, &m, NULL), FC_ERR_UNSUPPORTED);
    assert_int_equal(fc_attention_merge(NULL, &m, NULL), FC_ERR_INVALID_ARG);
    fc_context_destroy(ctx);
}

static void test_context_create_failures_keep_a_message(void **state)
{
    (void)state;
    struct fc_context *ctx = NULL;
    assert_int_equal(fc_context_create(-5, NULL, &ctx), FC_ERR_INVALID_ARG);
    assert_non_null(ctx);
    assert_non_null(strstr(fc_context_errmsg(ctx), "device -5"));
    fc_context_destroy(ctx);

    struct fc_options options;   /* a cache file that cannot be made costs the cache, not the context */
    fc_options_init(&options);
    options.cache_path = "/proc/flashcore-cannot-exist/tuning.db";
    assert_int_equal(fc_context_create(FC_DEVICE_NONE, &options, &ctx), FC_OK);
    assert_null(ctx->cache);
    assert_non_null(strstr(ctx->cache_warning, "/proc/flashcore-cannot-exist"));
    fc_context_destroy(ctx);

    assert_int_equal(fc_context_create(0, NULL, NULL), FC_ERR_INVALID_ARG);
    char why[512];
    if (!fc_cuda_load(why, sizeof why)) {   /* no driver here: the device-0 context says so */
        options.cache_path = NULL;
        options.no_disk_cache = 1;
        assert_int_equal(fc_context_create(0, &options, &ctx), FC_ERR_NO_DEVICE);
        assert_non_null(strstr(fc_context_errmsg(ctx), "driver"));
        fc_context_destroy(ctx);
    }
}

static void test_status_names(void **state)
{
    (void)state;
    assert_string_equal(fc_status_name(FC_OK), "FC_OK");
    assert_string_equal(fc_status_name(FC_ERR_NO_COMPILER), "FC_ERR_NO_COMPILER");
    assert_string_equal(fc_status_name(FC_ERR_INTERNAL), "FC_ERR_INTERNAL");
    assert_string_equal(fc_status_name((enum fc_status)99), "FC_ERR_UNKNOWN");
    assert_string_equal(fc_version(), "0.3.0");
}


/* Varlen and seqused_k: the shape rules (max_seqlen pair, totals, strides), the tensor rules
 * (cu_seqlens exactly in varlen mode, int32 alignment), and what the problem and plan become. */
static struct fc_attention_params varlen_params(void)
{
    struct fc_attention_params p = valid_params();
    p.batch = 3;   /* sequences */
    p.seqlen_q = 500;   /* total tokens */
    p.seqlen_k = 900;
    p.max_seqlen_q = 300;
    p.max_seqlen_k = 400;
    p.cu_seqlens_q = (const int32_t *)device_memory;
    p.cu_seqlens_k = (const int32_t *)(device_memory + 16);
    return p;
}

static void expect_status(const struct fc_attention_params *p, enum fc_status status, const char *phrase)
{
    struct fc_problem problem;
    char msg[512] = "";
    assert_int_equal(fc_problem_from_params(p, &problem, msg, sizeof msg), status);
    if (phrase && !strstr(msg, phrase))
        fail_msg("message '%s' lacks '%s'", msg, phrase);
}

static void test_varlen_rules(void **state)
{
    (void)state;
    struct fc_attention_params p = varlen_params();
    struct fc_problem problem;
    char msg[512] = "";
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_true(problem.varlen && !problem.seqused && fc_problem_per_sequence(&problem));
    assert_int_equal(problem.q_stride[0], 0);   /* sequences start at cu_seqlens */
    assert_int_equal(problem.q_stride[1], 8 * 64);
    assert_int_equal(problem.k_stride[2], 64);
    assert_int_equal(problem.max_seqlen_q, 300);
    assert_ptr_equal(problem.cu_seqlens_k, p.cu_seqlens_k);

    p = varlen_params(); p.max_seqlen_k = 0;
    expect_status(&p, FC_ERR_INVALID_ARG, "both max_seqlen_q and max_seqlen_k");
    p = varlen_params(); p.max_seqlen_q = -1;
    expect_status(&p, FC_ERR_INVALID_ARG, ">= 0");
    p = varlen_params(); p.max_seqlen_q = 501;
    expect_status(&p, FC_ERR_INVALID_ARG, "total token counts");
    p = varlen_params(); p.q_stride[0] = 64; p.q_stride[1] = 512; p.q_stride[2] = 64;
    expect_status(&p, FC_ERR_INVALID_ARG, "q_stride[0] (batch) is 64");
    p = varlen_params(); p.k_stride[1] = 256; p.k_stride[2] = 64;   /* token and head strides: fine */
    expect_status(&p, FC_OK, NULL);
    p = varlen_params(); p.k_stride[1] = 4; p.k_stride[2] = 64;
    expect_status(&p, FC_ERR_INVALID_ARG, "k_stride");
    p = varlen_params(); p.cu_seqlens_q = NULL;
    expect_status(&p, FC_ERR_INVALID_ARG, "cu_seqlens_q");
    p = varlen_params(); p.cu_seqlens_k = (const int32_t *)(device_memory + 2);
    expect_status(&p, FC_ERR_INVALID_ARG, "4-byte aligned");
    p = varlen_params(); p.max_seqlen_q = p.max_seqlen_k = 0;   /* cu_seqlens without varlen */
    expect_status(&p, FC_ERR_INVALID_ARG, "max_seqlen_q is 0");
    p = varlen_params(); p.seqused_k = (const int32_t *)(device_memory + 1);
    expect_status(&p, FC_ERR_INVALID_ARG, "seqused_k");
    p = varlen_params(); p.seqused_k = (const int32_t *)(device_memory + 32);
    expect_status(&p, FC_OK, NULL);
    p = varlen_params(); p.lse = (float *)device_memory;   /* [heads_q, tokens] */
    expect_status(&p, FC_OK, NULL);

    /* dense with seqused_k: strides as ever, lengths the tensors' */
    p = valid_params();
    p.seqused_k = (const int32_t *)device_memory;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_true(!problem.varlen && problem.seqused && problem.q_stride[0] == 100 * 8 * 64);
    assert_int_equal(problem.max_seqlen_k, 300);
}

/* The window resolves against the longest sequence; the grid follows max_seqlen_q; the variant
 * carries the switch; sm90 takes it on sm_90a (sm80 elsewhere), decode only up to its 16-row tile. */
static void test_varlen_plans(void **state)
{
    (void)state;
    struct fc_attention_params p = varlen_params();
    p.window_left = 350;   /* below max_seqlen_k - 1: a window, though < seqlen_k (900) */
    struct fc_problem problem;
    struct fc_plan plan;
    char msg[512] = "";
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_true(problem.mask.window);
    p.window_left = 399;   /* max_seqlen_k - 1: no window for any sequence */
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_false(problem.mask.window);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_true(plan.variant.varlen);
    assert_int_equal(plan.variant.family, FC_KERNEL_SM90);   /* prefill on sm_90a: the Hopper kernel */
    assert_non_null(strstr(plan.reason, "per-sequence lengths"));
    assert_int_equal(plan.m_blocks, (300 + plan.variant.block_m - 1) / plan.variant.block_m);
    assert_int_equal(plan.grid, (unsigned)(plan.m_blocks * 3 * 8));
    char name[FC_VARIANT_NAME_MAX];
    struct fc_variant parsed;
    fc_variant_name(&plan.variant, name);
    assert_non_null(strstr(name, "_var_"));
    assert_int_equal(fc_variant_parse_name(name, &parsed), 0);
    assert_int_equal(fc_variant_compare(&parsed, &plan.variant), 0);
    /* without sm_90a: the sm80 kernel, with the same per-sequence grid */
    const struct fc_target a100 = {80, 0, 108};
    assert_int_equal(fc_plan_make(&problem, &a100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_SM80);
    assert_true(plan.variant.varlen);
    assert_int_equal(plan.m_blocks, (300 + plan.variant.block_m - 1) / plan.variant.block_m);
    /* forced: every sm90 schedule takes it */
    static const char *const SM90_FORCED[] = {"sm90", "sm90:m128n64w8", "sm90:m64n64w8", "sm90:m192n128w16p1"};
    for (size_t i = 0; i < sizeof SM90_FORCED / sizeof SM90_FORCED[0]; i++) {
        struct fc_plan_override forced;
        assert_int_equal(fc_plan_override_parse(SM90_FORCED[i], &forced), 0);
        assert_int_equal(fc_plan_make(&problem, &H100, &forced, NULL, &plan, msg, sizeof msg), FC_OK);
        assert_int_equal(plan.variant.family, FC_KERNEL_SM90);
        assert_true(plan.variant.varlen);
        assert_int_equal(plan.grid, (unsigned)(plan.m_blocks * 3 * 8));
    }
    /* decode: max_seqlen_q x (heads_q / heads_kv) <= 64 */
    p.max_seqlen_q = 4;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_DECODE);
    assert_true(plan.variant.varlen);
    p.max_seqlen_q = 16;   /* 64 packed rows: the widest tile (at head_dim 128; at 64 the Hopper kernel) */
    p.head_dim = 128;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_DECODE);
    assert_int_equal(plan.variant.block_m, 64);
    p.head_dim = 64;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_SM90);
    /* forced without an m, decode takes the tile the rows need: 5 x 4 = 20 rows, 32 */
    p.max_seqlen_q = 5;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    struct fc_plan_override decode;
    assert_int_equal(fc_plan_override_parse("decode", &decode), 0);
    assert_int_equal(fc_plan_make(&problem, &H100, &decode, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.block_m, 32);
    /* ... but no more packed rows than its tile: a forced m16, or 33 x 4 = 132 rows */
    assert_int_equal(fc_plan_override_parse("decode:m16n128s2w8", &decode), 0);
    assert_int_equal(fc_plan_make(&problem, &H100, &decode, NULL, &plan, msg, sizeof msg), FC_ERR_UNSUPPORTED);
    assert_non_null(strstr(msg, "16-row tile (block_m; at most 128): this problem has 20"));
    p.max_seqlen_q = 33;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_override_parse("decode", &decode), 0);
    assert_int_equal(fc_plan_make(&problem, &H100, &decode, NULL, &plan, msg, sizeof msg), FC_ERR_UNSUPPORTED);
    assert_non_null(strstr(msg, "this problem has 132"));
}

/* Dense problems on the warp-specialized sm90 schedule run a persistent grid: as many CTAs as the SMs
 * hold (one or two each), never more than the problem's row blocks; the plain schedule, and varlen
 * problems (test_varlen_plans), keep one CTA per row block. */
static void test_persistent_grid(void **state)
{
    (void)state;
    struct fc_attention_params p = valid_params();
    p.head_dim = 128;
    p.seqlen_q = p.seqlen_k = 16384;
    p.heads_q = p.heads_kv = 16;
    p.batch = 1;
    struct fc_problem problem;
    struct fc_plan plan;
    char msg[512] = "";
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    static const struct {
        const char *forced;
        unsigned grid;   /* on 132 SMs */
    } CASES[] = {
        {"sm90:m128n128w12", 132},   /* 165 KB: one a SM */
        {"sm90:m64n64w8", 264},      /* 82 KB, one consumer: two a SM */
        {"sm90:m64n128w8", 132},     /* 148 KB: two would not fit */
        {"sm90:m128n128w8", 2048},   /* plain: a CTA per row block */
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        struct fc_plan_override forced;
        assert_int_equal(fc_plan_override_parse(CASES[i].forced, &forced), 0);
        assert_int_equal(fc_plan_make(&problem, &H100, &forced, NULL, &plan, msg, sizeof msg), FC_OK);
        assert_int_equal(plan.m_blocks * 16, 16384 / plan.variant.block_m * 16);
        assert_int_equal(plan.grid, CASES[i].grid);
        assert_int_equal(plan.units, CASES[i].grid == 2048 ? 0u : (unsigned)plan.m_blocks * 16);   /* explain's */
    }
    /* fewer row blocks than the GPU holds: one CTA each */
    p.seqlen_q = 512;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    struct fc_plan_override forced;
    assert_int_equal(fc_plan_override_parse("sm90:m128n128w12", &forced), 0);
    assert_int_equal(fc_plan_make(&problem, &H100, &forced, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.grid, 4 * 16);
    /* causal: units of two row blocks (5 of each head's 9 at 1100 rows, the middle one alone) */
    p.seqlen_q = 1100;
    p.batch = 2;
    p.causal = 1;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, &forced, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.m_blocks, 9);
    assert_int_equal(plan.grid, 5 * 16 * 2 < 132 ? 5 * 16 * 2 : 132);
    p.seqlen_q = 16 * 128;   /* 16 blocks, 8 units a head */
    p.batch = 1;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, &forced, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.grid, 8 * 16);
    /* FP8 causal up to head_dim 128: every row block in one list, taken from a counter (the grid's
     * last heads' blocks heaviest first, for four rounds of the grid); not at 256, nor 16-bit */
    p.seqlen_q = p.seqlen_k = 8192;
    p.dtype = FC_E4M3;
    p.out_dtype = FC_BF16;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.units, (unsigned)plan.m_blocks * 16);
    assert_int_equal(plan.grid, 132);
    assert_int_equal(plan.tail_heads, (4 * 132 + plan.m_blocks - 1) / plan.m_blocks);
    assert_true(plan.scheduled);
    /* FP8 at 256: the static pairs throughout */
    p.head_dim = 256;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_false(plan.scheduled);
    assert_int_equal(plan.tail_heads, 0);
    assert_int_equal(plan.units, (unsigned)(plan.m_blocks + 1) / 2 * 16);
    /* 16-bit head_dim 128: the static pairs, and their last heads' blocks one a unit (the static
     * tail): of none and about two or four rounds' worth of heads, the count that leaves the busiest
     * CTA's sum least (src/family_sm90.c's static_tail; the same sums in Python give these counts) */
    p.head_dim = 128;
    p.dtype = p.out_dtype = FC_F16;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_false(plan.scheduled);
    assert_int_equal(plan.m_blocks, 64);
    assert_int_equal(plan.tail_heads, 4);
    assert_int_equal(plan.units, 32 * 12 + 64 * 4);
    assert_int_equal(plan.grid, 132);
    p.seqlen_q = p.seqlen_k = 4096;   /* the GQA prefill row: B4 Hq32 Hkv8 */
    p.batch = 4;
    p.heads_q = 32;
    p.heads_kv = 8;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.tail_heads, 8);
    assert_int_equal(plan.units, 16 * (128 - 8) + 32 * 8);
    struct fc_problem gqa = problem;   /* the count is kept per thread for the last shape: switch back and forth */
    p.seqlen_q = p.seqlen_k = 8192;
    p.batch = 1;
    p.heads_q = p.heads_kv = 16;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.tail_heads, 4);
    assert_int_equal(fc_plan_make(&gqa, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.tail_heads, 8);
    p.causal = 0;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.tail_heads, 0);   /* not causal: every block weighs the same */
    p.causal = 1;
    p.head_dim = 256;   /* 16-bit head_dim 256: the pairs throughout */
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.tail_heads, 0);
    assert_int_equal(plan.units, (unsigned)(plan.m_blocks + 1) / 2 * 16);
    p.causal = 0;
    p.head_dim = 128;
    /* an unknown SM count plans for an H100's 132 */
    const struct fc_target unknown = {90, 1, 0};
    p.seqlen_q = 16384;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &unknown, &forced, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.grid, 132);
}

/* A paged cache: the shape rules (page_size, num_pages, the table's stride, the cache's strides and
 * sizes, varlen's max_seqlen_k), the tensor rules (page_table iff paged, aligned; cu_seqlens_k NULL
 * with varlen queries), and what the problem and plan become. */
static struct fc_attention_params paged_params(void)
{
    struct fc_attention_params p = valid_params();   /* batch 2, seqlen_q 100, seqlen_k 300, heads 8/2 x 64 */
    p.page_size = 16;
    p.num_pages = 40;
    p.page_table_stride = 19;   /* ceil(300 / 16) */
    p.page_table = (const int32_t *)(device_memory + 64);
    return p;
}

static void test_paged_rules(void **state)
{
    (void)state;
    struct fc_attention_params p = paged_params();
    struct fc_problem problem;
    char msg[512] = "";
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_true(problem.paged && fc_problem_per_sequence(&problem));
    assert_int_equal(problem.page_size, 16);
    assert_int_equal(problem.page_table_stride, 19);
    assert_int_equal(problem.num_pages, 40);
    assert_ptr_equal(problem.page_table, p.page_table);
    assert_int_equal(problem.k_stride[0], 16 * 2 * 64);   /* {page, token, head} */
    assert_int_equal(problem.k_stride[1], 2 * 64);
    assert_int_equal(problem.q_stride[0], 100 * 8 * 64);   /* queries stay dense */

    p = paged_params(); p.page_size = -1;
    expect_status(&p, FC_ERR_INVALID_ARG, "page_size must be >= 1");
    p = paged_params(); p.num_pages = 0;
    expect_status(&p, FC_ERR_INVALID_ARG, "num_pages must be >= 1");
    p = paged_params(); p.page_table_stride = 18;
    expect_status(&p, FC_ERR_INVALID_ARG, "ceil(300 / 16) = 19");
    p = paged_params(); p.page_size = 1; p.page_table_stride = 300;   /* page size 1: a page per key */
    expect_status(&p, FC_OK, NULL);
    p = paged_params(); p.page_size = 1; p.page_table_stride = 299;
    expect_status(&p, FC_ERR_INVALID_ARG, "page_table_stride (299)");
    p = paged_params(); p.page_size = 0;   /* not paged, yet the other fields are set */
    expect_status(&p, FC_ERR_INVALID_ARG, "page_size is 0");
    p = paged_params(); p.page_size = 0; p.num_pages = p.page_table_stride = 0;
    expect_status(&p, FC_ERR_INVALID_ARG, "page_table is set but page_size is 0");
    p = paged_params(); p.page_table = NULL;
    expect_status(&p, FC_ERR_INVALID_ARG, "page_table");
    p = paged_params(); p.page_table = (const int32_t *)(device_memory + 2);
    expect_status(&p, FC_ERR_INVALID_ARG, "4-byte aligned");
    p = paged_params(); p.k_stride[0] = 16 * 2 * 64 + 8; p.k_stride[1] = 2 * 64; p.k_stride[2] = 64;
    expect_status(&p, FC_OK, NULL);   /* padded pages */
    p = paged_params(); p.v_stride[0] = 16 * 2 * 64; p.v_stride[1] = 4; p.v_stride[2] = 64;
    expect_status(&p, FC_ERR_INVALID_ARG, "v_stride[1]");
    p = paged_params(); p.num_pages = INT_MAX; p.page_size = INT_MAX / 2; p.page_table_stride = 1;
    p.k_stride[0] = (int64_t)1 << 40; p.k_stride[1] = (int64_t)1 << 20; p.k_stride[2] = 64;   /* past 64-bit offsets */
    expect_status(&p, FC_ERR_INVALID_ARG, "overflow");
    p = paged_params(); p.batch = INT_MAX; p.page_table_stride = INT_MAX;
    expect_status(&p, FC_ERR_INVALID_ARG, "overflow");

    /* varlen queries against the cache: cu_seqlens_k NULL, max_seqlen_k = seqlen_k */
    p = paged_params();
    p.seqlen_q = 150;   /* total query tokens */
    p.max_seqlen_q = 100;
    p.max_seqlen_k = 300;
    p.cu_seqlens_q = (const int32_t *)device_memory;
    p.seqused_k = (const int32_t *)(device_memory + 32);
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_true(problem.paged && problem.varlen && problem.q_stride[0] == 0);
    assert_int_equal(problem.k_stride[0], 16 * 2 * 64);
    struct fc_attention_params v = p;
    v.cu_seqlens_k = (const int32_t *)(device_memory + 16);
    expect_status(&v, FC_ERR_INVALID_ARG, "cu_seqlens_k must be NULL");
    v = p; v.max_seqlen_k = 200;
    expect_status(&v, FC_ERR_INVALID_ARG, "max_seqlen_k (200) must equal seqlen_k");
    v = p; v.cu_seqlens_q = NULL;
    expect_status(&v, FC_ERR_INVALID_ARG, "cu_seqlens_q");
}

/* The variant carries the switch (with the per-sequence form) and its name `_var_pg`; the sm90
 * kernel takes paged prefill on its warp-specialized schedule: pages of whole key tiles by one TMA
 * box a tile, pages of a multiple of 8 by several, other pages gathered by its producer warpgroup,
 * and so pages whose heads are not side by side from head_dim 128; forced sm90 plans its page path. */
static void test_paged_plans(void **state)
{
    (void)state;
    struct fc_attention_params p = paged_params();
    struct fc_problem problem;
    struct fc_plan plan;
    char msg[512] = "";
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_SM90);   /* 16 keys: boxes of 16 */
    assert_true(plan.variant.paged && plan.variant.varlen);
    assert_non_null(strstr(plan.reason, "several TMA boxes"));
    char name[FC_VARIANT_NAME_MAX];
    struct fc_variant parsed;
    fc_variant_name(&plan.variant, name);
    assert_non_null(strstr(name, "_var_pg_"));
    assert_int_equal(fc_variant_parse_name(name, &parsed), 0);
    assert_int_equal(fc_variant_compare(&parsed, &plan.variant), 0);
    /* pages of whole sm90 key tiles: one box per tile */
    p.page_size = 128;
    p.page_table_stride = 3;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_SM90);
    assert_non_null(strstr(plan.reason, "one TMA box inside one page"));
    /* pages of 12: no box of a multiple of 8 fits; the producer warpgroup gathers them, at head_dim
     * 64 too (paged, it takes the warp-specialized schedule, not its plain one) */
    p.page_size = 12;
    p.page_table_stride = 25;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_SM90);
    assert_int_equal(plan.variant.warps, 8);
    assert_non_null(strstr(plan.reason, "gathered by the producer warpgroup"));
    p.head_dim = 128;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_SM90);
    assert_non_null(strstr(plan.reason, "gathered by the producer warpgroup"));
    /* pages of 8 at head_dim 128: 16 boxes a tile for K, V gathered; pages of 16 in a cache whose
     * heads are not side by side ([pages, heads, page_size, head_dim]): no grouped box, gathered */
    p.page_size = 8;
    p.page_table_stride = 38;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_non_null(strstr(plan.reason, "K by TMA boxes"));
    p.page_size = 16;
    p.page_table_stride = 19;
    const int64_t heads_apart[3] = {2 * 16 * 128, 128, 16 * 128};   /* {page, token, head} */
    memcpy(p.k_stride, heads_apart, sizeof heads_apart);
    memcpy(p.v_stride, heads_apart, sizeof heads_apart);
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_SM90);
    assert_non_null(strstr(plan.reason, "head stride = head_dim"));
    memset(p.k_stride, 0, sizeof p.k_stride);
    memset(p.v_stride, 0, sizeof p.v_stride);
    /* head_dim 96, which the Hopper kernel takes dense, paged: not in whole lines, so sm80, and why */
    p.head_dim = 96;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_SM80);
    assert_non_null(strstr(plan.declined, "paged cache at head_dim 64, 128, 192 or 256"));
    /* forced sm90 at head_dim 64 is its plain schedule: pages of 12 refused by the plan, with why;
     * pages of 16 planned */
    p.page_size = 12;
    p.page_table_stride = 25;
    p.head_dim = 64;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    struct fc_plan_override forced;
    assert_int_equal(fc_plan_override_parse("sm90", &forced), 0);
    assert_int_equal(fc_plan_make(&problem, &H100, &forced, NULL, &plan, msg, sizeof msg), FC_ERR_UNSUPPORTED);
    assert_non_null(strstr(msg, "multiple of 8"));
    p.page_size = 16;
    p.page_table_stride = 19;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, &forced, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_SM90);
    assert_int_equal(plan.variant.warps, 4);
    assert_true(plan.variant.paged && plan.variant.varlen);
    fc_variant_name(&plan.variant, name);
    assert_non_null(strstr(name, "_var_pg_"));
    p = paged_params();
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_override_parse("reference", &forced), 0);
    assert_int_equal(fc_plan_make(&problem, &H100, &forced, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_true(plan.variant.paged);
    /* decode: one query row x GQA 4 against the cache */
    p.seqlen_q = 1;
    p.heads_kv = 2;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_DECODE);
    assert_true(plan.variant.paged);
    /* a variant that is paged without the per-sequence form is not one */
    struct fc_variant v = plan.variant;
    v.varlen = 0;
    assert_int_not_equal(fc_variant_check(&v, msg, sizeof msg), 0);
    /* without paging, nothing changes: no switch in the name */
    p = valid_params();
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    fc_variant_name(&plan.variant, name);
    assert_null(strstr(name, "_pg"));
}

/* An FP8 KV cache: kv_dtype FC_E4M3 with q and out f16 or bf16, head_dim a multiple of 16; K/V
 * strides stay in elements, of one byte, so multiples of 16; the descales are FP8's alone, 4-byte
 * aligned, NULL for 1; a caller compiled before kv_dtype gets K and V of dtype. */
static void test_fp8_kv_rules(void **state)
{
    (void)state;
    static const int HEAD_DIMS[] = {16, 48, 64, 128, 256};
    for (int dtype = FC_F16; dtype <= FC_BF16; dtype++)
        for (size_t d = 0; d < sizeof HEAD_DIMS / sizeof HEAD_DIMS[0]; d++) {
            struct fc_attention_params p = valid_params();
            p.dtype = (enum fc_dtype)dtype;
            p.kv_dtype = FC_E4M3;
            p.head_dim = HEAD_DIMS[d];
            struct fc_problem problem;
            char msg[512] = "";
            if (fc_problem_from_params(&p, &problem, msg, sizeof msg) != FC_OK)
                fail_msg("%s at head_dim %d: %s", dtype == FC_F16 ? "f16" : "bf16", HEAD_DIMS[d], msg);
            assert_true(problem.kv_fp8);
            assert_int_equal(fc_problem_kv_bytes(&problem), 1);
            assert_int_equal(problem.dtype, dtype);   /* q and out */
            assert_int_equal(problem.k_stride[1], 2 * HEAD_DIMS[d]);   /* packed, in elements */
            assert_int_equal(problem.v_stride[0], 300 * 2 * HEAD_DIMS[d]);
            assert_null(problem.k_descale);   /* NULL: 1 */
        }
    struct fc_attention_params p = valid_params();
    struct fc_problem problem;
    char msg[512] = "";
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);   /* FC_DTYPE_SAME */
    assert_false(problem.kv_fp8);
    assert_int_equal(fc_problem_kv_bytes(&problem), 2);
    p.kv_dtype = FC_F16;   /* dtype itself: the same */
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_false(problem.kv_fp8);
    p.kv_dtype = FC_E4M3;   /* descales, 4-byte aligned, carried to the problem */
    p.k_descale = (const float *)(device_memory + 4);
    p.v_descale = (const float *)(device_memory + 8);
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_ptr_equal(problem.k_descale, p.k_descale);
    assert_ptr_equal(problem.v_descale, p.v_descale);
    p.k_descale = (const float *)(device_memory + 6);
    expect_status(&p, FC_ERR_INVALID_ARG, "k_descale (");
    p = valid_params();   /* strides of a multiple of 16 bytes that are not of 16 e4m3 elements */
    p.kv_dtype = FC_E4M3;
    const int64_t padded[3] = {300 * (2 * 64 + 16), 2 * 64 + 16, 64};   /* rows padded by 16 bytes */
    memcpy(p.k_stride, padded, sizeof padded);
    memcpy(p.v_stride, padded, sizeof padded);
    expect_status(&p, FC_OK, NULL);
    p.v_stride[2] = 72;
    expect_status(&p, FC_ERR_INVALID_ARG, "v_stride[2] (head) is 72");
    p.dtype = FC_E4M3;   /* FP8 attention: q e4m3 too, its strides in elements (bytes) */
    memcpy(p.q_stride, padded, sizeof padded);
    p.v_stride[2] = 64;
    expect_status(&p, FC_OK, NULL);
    /* varlen and paged: e4m3 strides in elements too */
    p = varlen_params();
    p.kv_dtype = FC_E4M3;
    p.k_stride[1] = 2 * 64 + 8;
    p.k_stride[2] = 64;
    expect_status(&p, FC_ERR_INVALID_ARG, "k_stride[1] (token) is 136");
    p = paged_params();
    p.kv_dtype = FC_E4M3;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_true(problem.kv_fp8 && problem.paged);
    assert_int_equal(problem.k_stride[0], 16 * 2 * 64);
    /* a caller compiled before kv_dtype: whatever its memory holds past its struct (0, FC_F16, with a
     * bf16 dtype would be refused), K and V are dtype */
    p = valid_params();
    p.dtype = FC_BF16;
    p.kv_dtype = FC_F16;
    p.struct_size = offsetof(struct fc_attention_params, kv_dtype);
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_false(problem.kv_fp8);
    struct fc_attention_params fresh;
    memset(&fresh, 0x5a, sizeof fresh);
    fc_attention_params_init(&fresh);
    assert_int_equal(fresh.kv_dtype, FC_DTYPE_SAME);
    assert_null(fresh.k_descale);
    assert_null(fresh.v_descale);
    assert_int_equal(fresh.out_dtype, FC_DTYPE_SAME);
    assert_null(fresh.q_descale);
}

/* The heuristic's FP8 tile (a GPU without winners): FlashAttention-3's wider key tiles from 4k keys (8k
 * causal; family_sm90.c's widen_fp8_key_tiles), 192 at head_dim 128 (224 causal), 160 on head_dim 64's
 * three consumers taking turns; 128 below those lengths, at 256, and with a window or a softcap. */
static const char *fp8_tile(struct fc_attention_params *p, int head_dim, int keys, int causal, char *name)
{
    struct fc_problem problem;
    struct fc_plan plan;
    char msg[512] = "";
    p->head_dim = head_dim;
    p->seqlen_q = p->seqlen_k = keys;
    p->causal = causal;
    assert_int_equal(fc_problem_from_params(p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_variant_check(&plan.variant, msg, sizeof msg), 0);
    fc_variant_name(&plan.variant, name);
    return name;
}

static void test_fp8_attention_wide_key_tiles(void **state)
{
    (void)state;
    struct fc_attention_params p = valid_params();
    p.dtype = FC_E4M3;
    p.out_dtype = FC_BF16;
    p.batch = 1;
    p.heads_q = p.heads_kv = 16;
    char name[FC_VARIANT_NAME_MAX];
    assert_string_equal(fp8_tile(&p, 128, 16384, 0, name), "sm90_bf16_d128_kv8_q8_m128n192s2w12p_sm_90a");
    assert_string_equal(fp8_tile(&p, 128, 4096, 0, name), "sm90_bf16_d128_kv8_q8_m128n192s2w12p_sm_90a");
    assert_string_equal(fp8_tile(&p, 128, 2048, 0, name), "sm90_bf16_d128_kv8_q8_m128n128s2w12p_sm_90a");
    assert_string_equal(fp8_tile(&p, 128, 8192, 1, name), "sm90_bf16_d128_causal_kv8_q8_m128n224s2w12p_sm_90a");
    assert_string_equal(fp8_tile(&p, 128, 4096, 1, name), "sm90_bf16_d128_causal_kv8_q8_m128n128s2w12p_sm_90a");
    assert_string_equal(fp8_tile(&p, 64, 4096, 0, name), "sm90_bf16_d64_kv8_q8_m192n160s2w16p_sm_90a");
    assert_string_equal(fp8_tile(&p, 64, 8192, 1, name), "sm90_bf16_d64_causal_kv8_q8_m192n160s2w16p_sm_90a");
    assert_string_equal(fp8_tile(&p, 64, 4096, 1, name), "sm90_bf16_d64_causal_kv8_q8_m192n128s2w16_sm_90a");
    assert_string_equal(fp8_tile(&p, 64, 2048, 0, name), "sm90_bf16_d64_kv8_q8_m192n128s2w16_sm_90a");
    /* (from 4k keys at head_dim 256, V transposed ahead: test_fp8_v_transposed_ahead) */
    assert_string_equal(fp8_tile(&p, 256, 16384, 0, name), "sm90_bf16_d256_kv8_q8_vt_m128n128s2w12p_sm_90a");
    p.window_left = 1000;   /* a window's span, not the sequence, sets the tiles it crosses */
    assert_string_equal(fp8_tile(&p, 128, 16384, 1, name), "sm90_bf16_d128_causal_win_kv8_q8_m128n128s2w12p_sm_90a");
    p.window_left = -1;
    p.softcap = 30.f;   /* the tanh needs the registers */
    assert_string_equal(fp8_tile(&p, 128, 16384, 0, name), "sm90_bf16_d128_cap_kv8_q8_m128n128s2w12p_sm_90a");
    assert_string_equal(fp8_tile(&p, 256, 16384, 0, name), "sm90_bf16_d256_cap_kv8_q8_vt_m128n128s2w12p_sm_90a");
}

/* FP8 attention transposes V ahead (a kernel of its own writes V^T, the attention kernel loads it by
 * TMA: the variant's `_vt`) from 4k keys at head_dim 256 and 192 (192 causal: from 8k) on dense
 * batches; not below, not at head_dim 64 or 128, not with per-sequence lengths; the name parses back,
 * the module gets its second kernel, and the rule's limits hold in the variant check and
 * FC_FORCE_VARIANT's v0 / v1. */
static void test_fp8_v_transposed_ahead(void **state)
{
    (void)state;
    struct fc_attention_params p = valid_params();
    p.dtype = FC_E4M3;
    p.out_dtype = FC_BF16;
    p.batch = 2;
    p.heads_q = p.heads_kv = 8;
    char name[FC_VARIANT_NAME_MAX], why[256] = "";
    assert_string_equal(fp8_tile(&p, 256, 4095, 0, name), "sm90_bf16_d256_kv8_q8_m128n128s2w12p_sm_90a");
    assert_string_equal(fp8_tile(&p, 256, 4096, 1, name), "sm90_bf16_d256_causal_kv8_q8_vt_m128n128s2w12p_sm_90a");
    assert_string_equal(fp8_tile(&p, 192, 4095, 0, name), "sm90_bf16_d192_kv8_q8_m128n128s2w12p_sm_90a");
    assert_string_equal(fp8_tile(&p, 192, 4096, 0, name), "sm90_bf16_d192_kv8_q8_vt_m128n128s2w12p_sm_90a");
    assert_string_equal(fp8_tile(&p, 192, 8191, 1, name), "sm90_bf16_d192_causal_kv8_q8_m128n128s2w12p_sm_90a");
    assert_string_equal(fp8_tile(&p, 192, 8192, 1, name), "sm90_bf16_d192_causal_kv8_q8_vt_m128n128s2w12p_sm_90a");
    assert_string_equal(fp8_tile(&p, 128, 16384, 0, name), "sm90_bf16_d128_kv8_q8_m128n192s2w12p_sm_90a");
    assert_string_equal(fp8_tile(&p, 64, 16384, 0, name), "sm90_bf16_d64_kv8_q8_m192n160s2w16p_sm_90a");
    struct fc_variant v;
    assert_int_equal(fc_variant_parse_name("sm90_bf16_d256_causal_kv8_q8_vt_m128n128s2w12p_sm_90a", &v), 0);
    assert_int_equal(v.v_transposed, 1);
    assert_int_equal(fc_variant_check(&v, why, sizeof why), 0);
    char source[65536];
    assert_true(fc_family_of(FC_KERNEL_SM90)->second_source(&v, source, sizeof source) > 0);
    assert_non_null(strstr(source, "fc_second_kernel(const __grid_constant__ fc_sm90_vt_args"));
    const int smem = fc_variant_smem_bytes(&v);
    v.v_transposed = 0;   /* no staging ring: two V tiles less shared memory */
    assert_int_equal(fc_variant_smem_bytes(&v) - smem, 2 * 128 * 256);
    assert_int_equal(fc_family_of(FC_KERNEL_SM90)->second_source(&v, source, sizeof source), 0);
    v.v_transposed = 1;
    v.q_fp8 = v.kv_fp8 = 0;   /* 16-bit: none */
    assert_int_equal(fc_variant_check(&v, why, sizeof why), -1);
    assert_non_null(strstr(why, "v_transposed"));
    v.q_fp8 = v.kv_fp8 = 1;
    v.block_n = 64;   /* lines of 128 keys */
    assert_int_equal(fc_variant_check(&v, why, sizeof why), -1);
    v.family = FC_KERNEL_SM80;   /* the sm90 kernel's choice only */
    v.q_fp8 = v.kv_fp8 = 0;
    assert_int_equal(fc_variant_check(&v, why, sizeof why), -1);
    assert_non_null(strstr(why, "sm90 kernel only"));

    struct fc_problem problem;
    struct fc_plan plan;
    char msg[512] = "";
    p.head_dim = 256;
    p.seqlen_q = p.seqlen_k = 4096;
    p.cu_seqlens_q = p.cu_seqlens_k = (const int32_t *)device_memory;   /* per-sequence lengths: in the kernel */
    p.max_seqlen_q = p.max_seqlen_k = 4096;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.v_transposed, 0);
    assert_int_equal(plan.variant.varlen, 1);
    p.cu_seqlens_q = p.cu_seqlens_k = NULL;
    p.max_seqlen_q = p.max_seqlen_k = 0;
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.v_transposed, 1);   /* the selector's, and its reason says so */
    assert_non_null(strstr(plan.reason, "V transposed ahead"));
    struct fc_plan_override forced;   /* FC_FORCE_VARIANT: v0 turns it off, v1 on */
    assert_int_equal(fc_plan_override_parse("sm90:v0", &forced), 0);
    assert_int_equal(fc_plan_make(&problem, &H100, &forced, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.v_transposed, 0);
    assert_int_equal(fc_plan_override_parse("sm90:m128n128w12v1", &forced), 0);
    assert_int_equal(fc_plan_make(&problem, &H100, &forced, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.v_transposed, 1);
    assert_int_equal(fc_plan_override_parse("sm80:v1", &forced), -1);
}

/* FP8 attention (dtype FC_E4M3): q, k and v e4m3, out bf16 (the default) or f16, each rule with its
 * message; the Hopper kernel at head_dim 64-256 in steps of 64 on a dense batch, the reference kernel
 * elsewhere (and the plan says why); the variant's `_q8`, which parses back; tuned winners never
 * replace it (they are measured in 16 bits). */
static void test_fp8_attention(void **state)
{
    (void)state;
    struct fc_attention_params p = valid_params();   /* heads 8/2: GQA 4 */
    p.dtype = FC_E4M3;
    struct fc_problem problem;
    char msg[512] = "", name[FC_VARIANT_NAME_MAX], explained[1024];
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_true(problem.q_fp8 && problem.kv_fp8);
    assert_int_equal(problem.dtype, FC_BF16);   /* out: the default */
    assert_int_equal(fc_problem_q_bytes(&problem), 1);
    assert_int_equal(problem.q_stride[1], 8 * 64);   /* packed, in (one-byte) elements */
    assert_int_equal(problem.o_stride[1], 8 * 64);
    p.out_dtype = FC_F16;
    p.kv_dtype = FC_E4M3;
    p.q_descale = (const float *)(device_memory + 4);
    p.k_descale = (const float *)(device_memory + 8);
    assert_int_equal(fc_problem_from_params(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(problem.dtype, FC_F16);
    assert_ptr_equal(problem.q_descale, p.q_descale);
    /* the plan: sm90 on sm_90a, its switch in the name */
    struct fc_plan plan;
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_SM90);
    assert_true(plan.variant.q_fp8 && plan.variant.kv_fp8);
    assert_non_null(strstr(plan.reason, "FP8 attention"));
    fc_variant_name(&plan.variant, name);
    assert_true(strncmp(name, "sm90_f16_d64_kv8_q8_m192n128", 28) == 0);   /* three consumers at 64 */
    struct fc_variant parsed;
    assert_int_equal(fc_variant_parse_name(name, &parsed), 0);
    assert_int_equal(fc_variant_compare(&parsed, &plan.variant), 0);
    assert_int_equal(fc_variant_check(&plan.variant, msg, sizeof msg), 0);
    /* sm_89, head_dim 96, a varlen batch: the reference kernel, with the sm90 kernel's reason */
    static const struct fc_target ADA = {89, 0, 128};
    assert_int_equal(fc_plan_make(&problem, &ADA, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_REFERENCE);
    assert_non_null(strstr(plan.reason, "FP8 q, K and V"));
    p.head_dim = 96;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_REFERENCE);
    fc_plan_explain(&plan, explained, sizeof explained);
    assert_non_null(strstr(explained, "head_dim 64, 128, 192 or 256"));
    p = varlen_params();   /* a varlen batch: the sm90 kernel's per-sequence form */
    p.dtype = FC_E4M3;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_SM90);
    assert_true(plan.variant.varlen && plan.variant.q_fp8);
    assert_non_null(strstr(plan.reason, "per-sequence lengths"));
    assert_int_equal(fc_variant_check(&plan.variant, msg, sizeof msg), 0);
    struct fc_variant varlen_fp8 = plan.variant;
    p = paged_params();   /* a paged cache: the reference kernel, with the sm90 kernel's reason */
    p.dtype = FC_E4M3;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_REFERENCE);
    fc_plan_explain(&plan, explained, sizeof explained);
    assert_non_null(strstr(explained, "no paged cache"));
    varlen_fp8.paged = 1;
    assert_int_equal(fc_variant_check(&varlen_fp8, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "no paged cache"));
    /* the variant rules: sm80 and decode refuse an FP8 q, sm90 its other tiles */
    struct fc_variant v = plan.variant;
    v.family = FC_KERNEL_SM80;
    fc_variant_defaults(&v);
    assert_int_equal(fc_variant_check(&v, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "reads a 16-bit q only"));
    v = parsed;
    v.block_n = 64;   /* 64-key tiles: a variant, not the default */
    assert_int_equal(fc_variant_check(&v, msg, sizeof msg), 0);
    v.block_m = 128;
    v.warps = 8;   /* the plain schedule: no producer warpgroup to transpose V */
    v.pingpong = 0;
    assert_int_equal(fc_variant_check(&v, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "FP8 attention takes"));
    v = parsed;
    v.kv_fp8 = 0;
    assert_int_equal(fc_variant_check(&v, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "FP8 K/V too"));
}

/* FP8 K/V go to the kernels that read them: decode (few query rows per K/V head, sm_89 and later,
 * head_dim a multiple of 32) and the reference kernel (any other problem, with the reason); the
 * variant carries the switch and its name `_kv8`, which parses back; sm90 and sm80 refuse it forced. */
static void test_fp8_kv_plans(void **state)
{
    (void)state;
    struct fc_attention_params p = valid_params();   /* heads 8/2: GQA 4 */
    p.kv_dtype = FC_E4M3;
    p.dtype = FC_BF16;
    p.seqlen_q = 1;
    p.seqlen_k = 4096;
    struct fc_problem problem;
    struct fc_plan plan;
    char msg[512] = "", name[FC_VARIANT_NAME_MAX], explained[1024];
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_DECODE);
    assert_true(plan.variant.kv_fp8);
    assert_non_null(strstr(plan.reason, "FP8 K/V"));
    fc_variant_name(&plan.variant, name);
    assert_non_null(strstr(name, "_kv8_"));
    assert_true(strncmp(name, "decode_bf16_d64_kv8_", 20) == 0);
    struct fc_variant parsed;
    assert_int_equal(fc_variant_parse_name(name, &parsed), 0);
    assert_true(parsed.kv_fp8);
    assert_int_equal(fc_variant_compare(&parsed, &plan.variant), 0);
    /* the same without FP8: another variant, no switch in the name */
    struct fc_variant plain = plan.variant;
    plain.kv_fp8 = 0;
    assert_int_not_equal(fc_variant_compare(&plain, &plan.variant), 0);
    fc_variant_name(&plain, name);
    assert_null(strstr(name, "_kv8"));
    /* every switch with it: the order of the name's parts */
    struct fc_variant all = plan.variant;
    all.causal = all.window = all.softcap = all.varlen = all.paged = 1;
    fc_variant_name(&all, name);
    assert_non_null(strstr(name, "_causal_win_cap_var_pg_kv8_m16"));
    assert_int_equal(fc_variant_parse_name(name, &parsed), 0);
    assert_int_equal(fc_variant_compare(&parsed, &all), 0);
    /* paged decode: gathered through the table */
    p.page_size = 16;
    p.num_pages = 600;
    p.page_table_stride = 256;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_DECODE);
    fc_variant_name(&plan.variant, name);
    assert_non_null(strstr(name, "_var_pg_kv8_"));
    assert_non_null(strstr(plan.reason, "page table"));
    p.page_size = p.num_pages = p.page_table_stride = 0;
    /* prefill-shaped: the sm80 kernel, and the reason says why not the Hopper one */
    p.seqlen_q = 100;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_SM80);
    assert_true(plan.variant.kv_fp8);
    assert_non_null(strstr(plan.reason, "FP8 K/V"));
    assert_non_null(plan.declined);
    fc_plan_explain(&plan, explained, sizeof explained);
    assert_non_null(strstr(explained, "16-bit"));
    fc_variant_name(&plan.variant, name);
    assert_true(strncmp(name, "sm80_bf16_d64_kv8_", 18) == 0);
    /* decode-shaped on sm_80: no e4m3 conversion there, the reference kernel; sm_89 has it */
    p.seqlen_q = 1;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    const struct fc_target a100 = {80, 0, 108}, l40 = {89, 0, 142};
    assert_int_equal(fc_plan_make(&problem, &a100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_REFERENCE);
    assert_true(plan.variant.kv_fp8);
    assert_int_equal(fc_plan_make(&problem, &l40, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_DECODE);
    /* head_dim 48: decode and sm80 read 32-dim groups, so the reference kernel */
    p.head_dim = 48;
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_plan_make(&problem, &H100, NULL, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_int_equal(plan.variant.family, FC_KERNEL_REFERENCE);
    p.head_dim = 64;
    /* forced: decode on sm_80 and the 16-bit kernels refuse, saying why */
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    struct fc_plan_override forced;
    assert_int_equal(fc_plan_override_parse("decode", &forced), 0);
    assert_int_equal(fc_plan_make(&problem, &a100, &forced, NULL, &plan, msg, sizeof msg), FC_ERR_UNSUPPORTED);
    assert_non_null(strstr(msg, "sm_89"));
    assert_int_equal(fc_plan_override_parse("sm80", &forced), 0);
    assert_int_equal(fc_plan_make(&problem, &a100, &forced, NULL, &plan, msg, sizeof msg), FC_ERR_UNSUPPORTED);
    assert_non_null(strstr(msg, "sm_89"));
    static const char *const REFUSING[] = {"sm90"};
    for (size_t i = 0; i < sizeof REFUSING / sizeof REFUSING[0]; i++) {
        assert_int_equal(fc_plan_override_parse(REFUSING[i], &forced), 0);
        assert_int_equal(fc_plan_make(&problem, &H100, &forced, NULL, &plan, msg, sizeof msg), FC_ERR_UNSUPPORTED);
        assert_non_null(strstr(msg, "16-bit K/V"));
    }
    assert_int_equal(fc_plan_override_parse("reference", &forced), 0);
    assert_int_equal(fc_plan_make(&problem, &a100, &forced, NULL, &plan, msg, sizeof msg), FC_OK);
    assert_true(plan.variant.kv_fp8);
    /* a variant of FP8 K/V at a head_dim of no 16-byte rows is none */
    struct fc_variant v = plan.variant;
    v.head_dim = 24;
    assert_int_not_equal(fc_variant_check(&v, msg, sizeof msg), 0);
    assert_non_null(strstr(msg, "multiples of 16"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_problem_resolves_packed_strides_and_scale),
        cmocka_unit_test(test_each_rule_has_its_status_and_message),
        cmocka_unit_test(test_null_params),
        cmocka_unit_test(test_api_misuse_without_gpu),
        cmocka_unit_test(test_plan_names_the_kernel_and_why),
        cmocka_unit_test(test_forced_variants_keep_the_defaults_they_do_not_name),
        cmocka_unit_test(test_decode_splits_fill_the_gpu),
        cmocka_unit_test(test_hopper_packs_few_query_rows),
        cmocka_unit_test(test_split_combine_takes_the_family_argument),
        cmocka_unit_test(test_decode_splits_can_be_forced),
        cmocka_unit_test(test_decode_splits_only_the_window),
        cmocka_unit_test(test_tuned_winner_replaces_the_heuristic),
        cmocka_unit_test(test_tuned_fp8_attention_winner),
        cmocka_unit_test(test_plan_needs_no_tensors),
        cmocka_unit_test(test_sizes_at_the_int_limits),
        cmocka_unit_test(test_merge_rules),
        cmocka_unit_test(test_params_struct_size),
        cmocka_unit_test(test_old_callers_get_the_defaults_of_newer_fields),
        cmocka_unit_test(test_initializers_write_only_the_callers_struct),
        cmocka_unit_test(test_window_resolves_into_the_mask),
        cmocka_unit_test(test_varlen_rules),
        cmocka_unit_test(test_varlen_plans),
        cmocka_unit_test(test_persistent_grid),
        cmocka_unit_test(test_paged_rules),
        cmocka_unit_test(test_paged_plans),
        cmocka_unit_test(test_fp8_kv_rules),
        cmocka_unit_test(test_fp8_kv_plans),
        cmocka_unit_test(test_fp8_attention),
        cmocka_unit_test(test_fp8_attention_wide_key_tiles),
        cmocka_unit_test(test_fp8_v_transposed_ahead),
        cmocka_unit_test(test_quick_first_call_plan),
        cmocka_unit_test(test_context_create_failures_keep_a_message),
        cmocka_unit_test(test_status_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
