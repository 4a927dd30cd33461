/* Tests of the YAML sweep-spec reader (src/config.c): the shipped precompile spec, expansion,
 * pruning and de-duplication, and one case per kind of mistake, each checked for its status,
 * its "name:line:column:" and a phrase of its message, and for leaving the output empty.
 *
 * Usage: test_config [path/to/tuning_db/precompile.yaml]
 * Without the argument the shipped spec is looked for under $FC_SOURCE_ROOT, then under the
 * FC_SOURCE_ROOT the test was compiled with. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "config_internal.h"

#define ERR_MAX 512
#define SPEC_NAME "spec.yaml"
#define PRECOMPILE_SPEC "tuning_db/precompile.yaml"
/* reference: 2 arch x 2 dtype x 5 head_dim x 2 causal; sm80: the same over 4 arch; sm90: sm_90a x
 * 2 dtype x 4 head_dim x 2 causal */
#define PRECOMPILE_REFERENCE 40
#define PRECOMPILE_SM80 80
/* + causal short-sequence tiles at 128, at 64 (with and without a window), 192-key tiles at 96 and
 * 128, long at 64 (with and without turns), GQA-packed rows (one consumer, 64- and 128-key tiles at
 * 64, 96 and 128, the default tiles at 192 and 256; two consumers, the default tiles at five head
 * dims, of 192 keys at 128) */
#define PRECOMPILE_SM90 (20 + 2 + 4 + 8 + 8 + 24 + 8 + 20 + 4)
/* the 32- and 64-row tiles (two archs, two dtypes, three head dims), then the 128-row one (head_dim 128) */
#define PRECOMPILE_DECODE_ROWS (48 + 8)
#define PRECOMPILE_DECODE (80 + PRECOMPILE_DECODE_ROWS)   /* as sm80, then those */
#define PRECOMPILE_MERGE 40    /* fc_attention_merge's kernel: four archs, two dtypes, five head dims */
/* sliding windows, causal, three head dims, two dtypes: sm90 on sm_90a, sm80 on sm_80, decode on both */
#define PRECOMPILE_WINDOW (6 + 6 + 12)
/* softcaps: causal, two head dims, two dtypes, with and without a window, as the windows' */
#define PRECOMPILE_SOFTCAP (8 + 8 + 16)
/* per-sequence lengths (varlen): sm90 on sm_90a, two dtypes, three head dims, causal or not, plus
 * causal 128's short-sequence tiles; then sm80 and decode, two archs, two dtypes, three head dims,
 * causal or not */
#define PRECOMPILE_VARLEN_SM90 (2 * 3 * 2 + 2)
#define PRECOMPILE_VARLEN (PRECOMPILE_VARLEN_SM90 + 2 * 2 * 2 * 3 * 2)
/* a paged cache: sm90 on sm_90a as its varlen entries; then sm80 and decode, two archs, two dtypes,
 * three head dims, causal or not */
#define PRECOMPILE_PAGED_SM90 PRECOMPILE_VARLEN_SM90
#define PRECOMPILE_PAGED (PRECOMPILE_PAGED_SM90 + 2 * 2 * 2 * 3 * 2)
/* an FP8 KV cache: decode and sm80 on sm_90a, two dtypes, three head dims, causal or not; dense, then paged */
#define PRECOMPILE_FP8_KV (2 * 2 * 2 * 3 * 2)
/* FP8 attention: sm90 on sm_90a, two dtypes, three head dims (not 256), causal or not; then causal 64's
 * two-consumer tiles; then head_dim 192 and 256 with V transposed ahead, two dtypes, causal or not */
#define PRECOMPILE_FP8 (2 * 3 * 2 + 2 + 2 * 2 * 2)
/* fc_quantize's kernels: two archs, two dtypes, four head dims */
#define PRECOMPILE_QUANTIZE (2 * 2 * 4)
#define PRECOMPILE_VARIANTS                                                                                   \
    (PRECOMPILE_REFERENCE + PRECOMPILE_SM80 + PRECOMPILE_DECODE + PRECOMPILE_SM90 + PRECOMPILE_MERGE +          \
     PRECOMPILE_WINDOW + PRECOMPILE_SOFTCAP + PRECOMPILE_VARLEN + PRECOMPILE_PAGED + PRECOMPILE_FP8_KV +        \
     PRECOMPILE_FP8 + PRECOMPILE_QUANTIZE)

static const char *precompile_path;

/* A valid entry, one key per line, so that a case can replace one line and know its position:
 * line 1 version, 2 variants, 3 kernel (its mapping starts at 3:5), 4 arch, 5 dtype,
 * 6 head_dim, 7 causal. */
#define HEAD "version: 1\nvariants:\n"
#define KERNEL "  - kernel: reference\n"
#define ARCH "    arch: sm_80\n"
#define DTYPE "    dtype: f16\n"
#define HEAD_DIM "    head_dim: 64\n"
#define CAUSAL "    causal: false\n"
#define ENTRY KERNEL ARCH DTYPE HEAD_DIM CAUSAL

static enum fc_status parse(const char *spec, struct fc_variant_list *list, char *err)
{
    return fc_config_parse_variants(spec, strlen(spec), SPEC_NAME, list, err, ERR_MAX);
}

/* Parses a spec that must be good, failing the test with the reader's message if it is not. */
static void parse_good(const char *spec, struct fc_variant_list *list)
{
    char err[ERR_MAX] = "";
    enum fc_status status = parse(spec, list, err);
    if (status != FC_OK)
        fail_msg("expected FC_OK, got %d: %s", (int)status, err);
}

static void assert_list_empty(const struct fc_variant_list *list)
{
    assert_null(list->items);
    assert_int_equal(list->count, 0);
    assert_int_equal(list->pruned, 0);
}

/* The variant a spec entry with these values and no tile keys must produce. */
static struct fc_variant expected_family_variant(enum fc_kernel_family family, enum fc_dtype dtype,
                                                 int head_dim, int causal, int arch, int arch_specific)
{
    struct fc_variant v;
    memset(&v, 0, sizeof v);
    v.family = family;
    v.dtype = dtype;
    v.head_dim = head_dim;
    v.causal = causal;
    v.arch = arch;
    v.arch_specific = arch_specific;
    fc_variant_defaults(&v);
    return v;
}

static struct fc_variant expected_variant(enum fc_dtype dtype, int head_dim, int causal, int arch,
                                          int arch_specific)
{
    return expected_family_variant(FC_KERNEL_REFERENCE, dtype, head_dim, causal, arch, arch_specific);
}

static void assert_variant_equal(const struct fc_variant *actual, const struct fc_variant *expected)
{
    char actual_name[FC_VARIANT_NAME_MAX], expected_name[FC_VARIANT_NAME_MAX];
    fc_variant_name(actual, actual_name);
    fc_variant_name(expected, expected_name);
    assert_string_equal(actual_name, expected_name);
    assert_int_equal(actual->family, expected->family);
    assert_int_equal(actual->dtype, expected->dtype);
    assert_int_equal(actual->head_dim, expected->head_dim);
    assert_int_equal(actual->causal, expected->causal);
    assert_int_equal(actual->window, expected->window);
    assert_int_equal(actual->softcap, expected->softcap);
    assert_int_equal(actual->block_m, expected->block_m);
    assert_int_equal(actual->block_n, expected->block_n);
    assert_int_equal(actual->stages, expected->stages);
    assert_int_equal(actual->warps, expected->warps);
    assert_int_equal(actual->arch, expected->arch);
    assert_int_equal(actual->arch_specific, expected->arch_specific);
}

static void test_precompile_spec(void **state)
{
    (void)state;
    if (!precompile_path)
        fail_msg("no path to " PRECOMPILE_SPEC ": pass it as the first argument or set "
                 "FC_SOURCE_ROOT");
    struct fc_variant_list list;
    char err[ERR_MAX] = "";
    enum fc_status status = fc_config_load_variants(precompile_path, &list, err, sizeof err);
    if (status != FC_OK)
        fail_msg("%s", err);
    assert_int_equal(list.count, PRECOMPILE_VARIANTS);
    assert_int_equal(list.pruned, 0);
    /* The product nests in key order, the last key (causal) fastest. */
    struct fc_variant first = expected_variant(FC_F16, 64, 0, 90, 1);
    struct fc_variant second = expected_variant(FC_F16, 64, 1, 90, 1);
    struct fc_variant last_reference = expected_variant(FC_BF16, 256, 1, 80, 0);
    struct fc_variant last_sm80 = expected_family_variant(FC_KERNEL_SM80, FC_BF16, 256, 1, 89, 0);
    struct fc_variant last_sm90 = expected_family_variant(FC_KERNEL_SM90, FC_BF16, 128, 1, 90, 1);
    last_sm90.pack_gqa = 1;
    last_sm90.block_n = 192;
    struct fc_variant last_merge = expected_family_variant(FC_KERNEL_MERGE, FC_BF16, 256, 0, 89, 0);
    struct fc_variant first_window = expected_family_variant(FC_KERNEL_SM90, FC_F16, 64, 1, 90, 1);
    first_window.window = 1;
    struct fc_variant last_window = expected_family_variant(FC_KERNEL_DECODE, FC_BF16, 256, 1, 80, 0);
    last_window.window = 1;
    struct fc_variant last = last_window;
    last.softcap = 1;
    const size_t fp8_end = list.count - PRECOMPILE_QUANTIZE;
    const size_t fp8_kv_end = fp8_end - PRECOMPILE_FP8;
    const size_t paged_end = fp8_kv_end - PRECOMPILE_FP8_KV;
    const size_t varlen_end = paged_end - PRECOMPILE_PAGED;
    const size_t merge_end = varlen_end - PRECOMPILE_WINDOW - PRECOMPILE_SOFTCAP - PRECOMPILE_VARLEN;
    struct fc_variant last_varlen = expected_family_variant(FC_KERNEL_DECODE, FC_BF16, 256, 1, 80, 0);
    last_varlen.varlen = 1;
    assert_variant_equal(&list.items[0], &first);
    assert_variant_equal(&list.items[1], &second);
    assert_variant_equal(&list.items[PRECOMPILE_REFERENCE - 1], &last_reference);
    assert_variant_equal(&list.items[PRECOMPILE_REFERENCE + PRECOMPILE_SM80 - 1], &last_sm80);
    assert_variant_equal(&list.items[merge_end - PRECOMPILE_MERGE - 1], &last_sm90);
    assert_variant_equal(&list.items[merge_end - 1], &last_merge);
    assert_variant_equal(&list.items[merge_end], &first_window);
    assert_variant_equal(&list.items[merge_end + PRECOMPILE_WINDOW - 1], &last_window);
    assert_variant_equal(&list.items[varlen_end - PRECOMPILE_VARLEN - 1], &last);
    assert_variant_equal(&list.items[varlen_end - 1], &last_varlen);
    struct fc_variant first_paged = expected_family_variant(FC_KERNEL_SM90, FC_F16, 128, 0, 90, 1);
    first_paged.varlen = first_paged.paged = 1;   /* paged implies the per-sequence form */
    struct fc_variant first_paged_gather = expected_family_variant(FC_KERNEL_SM80, FC_F16, 64, 0, 90, 1);
    first_paged_gather.varlen = first_paged_gather.paged = 1;
    struct fc_variant last_paged = last_varlen;
    last_paged.paged = 1;
    assert_variant_equal(&list.items[varlen_end], &first_paged);
    assert_variant_equal(&list.items[varlen_end + PRECOMPILE_PAGED_SM90], &first_paged_gather);
    assert_variant_equal(&list.items[paged_end - 1], &last_paged);
    struct fc_variant first_fp8 = expected_family_variant(FC_KERNEL_DECODE, FC_F16, 64, 0, 90, 1);
    first_fp8.kv_fp8 = 1;
    fc_variant_defaults(&first_fp8);   /* FP8 and paging choose their own tiles */
    struct fc_variant last_fp8 = expected_family_variant(FC_KERNEL_SM80, FC_BF16, 256, 1, 90, 1);
    last_fp8.kv_fp8 = last_fp8.varlen = last_fp8.paged = 1;
    fc_variant_defaults(&last_fp8);
    assert_variant_equal(&list.items[paged_end], &first_fp8);
    assert_variant_equal(&list.items[fp8_kv_end - 1], &last_fp8);
    struct fc_variant first_q8 = expected_family_variant(FC_KERNEL_SM90, FC_F16, 64, 0, 90, 1);
    first_q8.kv_fp8 = first_q8.q_fp8 = 1;
    fc_variant_defaults(&first_q8);   /* FP8 attention chooses its own tiles */
    struct fc_variant last_q8 = expected_family_variant(FC_KERNEL_SM90, FC_BF16, 64, 1, 90, 1);
    last_q8.kv_fp8 = last_q8.q_fp8 = 1;
    fc_variant_defaults(&last_q8);
    last_q8.block_m = 128;
    last_q8.warps = 12;
    last_q8.pingpong = 1;
    struct fc_variant last_vt = expected_family_variant(FC_KERNEL_SM90, FC_BF16, 256, 1, 90, 1);
    last_vt.kv_fp8 = last_vt.q_fp8 = 1;
    fc_variant_defaults(&last_vt);
    last_vt.v_transposed = 1;
    assert_variant_equal(&list.items[fp8_kv_end], &first_q8);
    assert_variant_equal(&list.items[fp8_end - 9], &last_q8);
    assert_int_equal(list.items[fp8_end - 9].block_n, 128);
    assert_variant_equal(&list.items[fp8_end - 1], &last_vt);
    struct fc_variant first_quantize = expected_family_variant(FC_KERNEL_QUANTIZE, FC_F16, 64, 0, 90, 1);
    struct fc_variant last_quantize = expected_family_variant(FC_KERNEL_QUANTIZE, FC_BF16, 256, 0, 89, 0);
    assert_variant_equal(&list.items[fp8_end], &first_quantize);
    assert_variant_equal(&list.items[list.count - 1], &last_quantize);
    assert_int_equal(last_quantize.block_m, 8);   /* 256 threads, 32 to a row of 256 */
    struct fc_variant first_varlen = expected_family_variant(FC_KERNEL_SM90, FC_F16, 64, 0, 90, 1);
    first_varlen.varlen = 1;
    struct fc_variant last_sm90_varlen = expected_family_variant(FC_KERNEL_SM90, FC_BF16, 128, 1, 90, 1);
    last_sm90_varlen.varlen = 1;
    last_sm90_varlen.block_m = 64;
    last_sm90_varlen.block_n = 64;
    last_sm90_varlen.warps = 8;
    last_sm90_varlen.pingpong = 0;
    assert_variant_equal(&list.items[varlen_end - PRECOMPILE_VARLEN], &first_varlen);
    assert_variant_equal(&list.items[varlen_end - PRECOMPILE_VARLEN + PRECOMPILE_VARLEN_SM90 - 1], &last_sm90_varlen);
    size_t hopper = 0;
    for (size_t i = 0; i < list.count; i++) {
        char why[256];
        if (fc_variant_check(&list.items[i], why, sizeof why) != 0)
            fail_msg("variant %zu fails fc_variant_check: %s", i, why);
        hopper += list.items[i].arch == 90 && list.items[i].arch_specific;
    }
    assert_int_equal(hopper, PRECOMPILE_REFERENCE / 2 + PRECOMPILE_SM80 / 4 + (PRECOMPILE_DECODE - PRECOMPILE_DECODE_ROWS) / 4 +
                                 PRECOMPILE_DECODE_ROWS / 2 + PRECOMPILE_SM90 +
                                 PRECOMPILE_MERGE / 4 + 6 + 6 + 8 + 8 + PRECOMPILE_VARLEN_SM90 +
                                 (PRECOMPILE_VARLEN - PRECOMPILE_VARLEN_SM90) / 2 + PRECOMPILE_PAGED_SM90 +
                                 (PRECOMPILE_PAGED - PRECOMPILE_PAGED_SM90) / 2 + PRECOMPILE_FP8_KV + PRECOMPILE_FP8 +
                                 PRECOMPILE_QUANTIZE / 2);
    fc_variant_list_free(&list);
    assert_list_empty(&list);
}

static void test_scalar_instead_of_list(void **state)
{
    (void)state;
    struct fc_variant_list list;
    parse_good(HEAD "  - kernel: reference\n    arch: sm_90a\n    dtype: bf16\n"
               "    head_dim: 128\n    causal: true\n    block_m: 8\n    block_n: 32\n"
               "    stages: 1\n    warps: 2\n", &list);
    assert_int_equal(list.count, 1);
    assert_int_equal(list.pruned, 0);
    struct fc_variant expected = expected_variant(FC_BF16, 128, 1, 90, 1);
    expected.block_m = 8;
    expected.warps = 2;
    assert_variant_equal(&list.items[0], &expected);
    fc_variant_list_free(&list);
}

/* Block lists, quoted names, other spellings of the same value, comments and explicit document
 * markers are all ordinary YAML and read the same. */
static void test_yaml_styles(void **state)
{
    (void)state;
    struct fc_variant_list list;
    parse_good("# leading comment\n---\nversion: 1   # trailing comment\nvariants:\n"
               "- kernel: 'reference'\n  arch:\n    - sm_80\n    - \"8.6\"\n"
               "  dtype: [\"fp16\"]\n  head_dim:\n  - 64\n  causal: [False, TRUE]\n...\n",
               &list);
    assert_int_equal(list.count, 4);
    struct fc_variant expected = expected_variant(FC_F16, 64, 1, 86, 0);
    assert_variant_equal(&list.items[3], &expected);
    fc_variant_list_free(&list);
}

static void test_optional_keys_override_defaults(void **state)
{
    (void)state;
    struct fc_variant_list list;
    parse_good(HEAD ENTRY "    block_m: [16, 32]\n    warps: [4, 8]\n", &list);
    assert_int_equal(list.count, 4);
    assert_int_equal(list.pruned, 0);
    const int block_m[] = {16, 16, 32, 32}, warps[] = {4, 8, 4, 8};
    for (size_t i = 0; i < list.count; i++) {
        struct fc_variant expected = expected_variant(FC_F16, 64, 0, 80, 0);
        expected.block_m = block_m[i];
        expected.warps = warps[i];
        assert_variant_equal(&list.items[i], &expected);
    }
    fc_variant_list_free(&list);
}

static void test_pingpong_is_an_sm90_schedule_choice(void **state)
{
    (void)state;
    struct fc_variant_list list;
    parse_good(HEAD "  - kernel: sm90\n    arch: sm_90a\n    dtype: f16\n    head_dim: 128\n    causal: false\n"
               "    block_m: [64, 128]\n    warps: [8, 12]\n    pingpong: [false, true]\n", &list);
    /* m64: w8 is specialized with one consumer (ping-pong refused), w12 fits nothing; m128: w8 is
     * plain (ping-pong refused), w12 is specialized with two consumers, either way */
    assert_int_equal(list.count, 4);
    assert_int_equal(list.pruned, 4);
    char name[FC_VARIANT_NAME_MAX];
    fc_variant_name(&list.items[3], name);
    assert_string_equal(name, "sm90_f16_d128_m128n128s2w12p_sm_90a");
    fc_variant_list_free(&list);
}

/* `pack_gqa` is the sm90 kernel's switch (GQA-packed rows): its warp-specialized schedule at every
 * head_dim (64: one consumer, not the plain default), a "_gqa" name; other families prune it. */
static void test_pack_gqa_is_an_sm90_switch(void **state)
{
    (void)state;
    struct fc_variant_list list;
    parse_good(HEAD "  - kernel: [sm90, sm80]\n    arch: sm_90a\n    dtype: bf16\n    head_dim: [64, 128]\n"
               "    causal: true\n    pack_gqa: true\n", &list);
    assert_int_equal(list.count, 2);
    assert_int_equal(list.pruned, 2);
    char name[FC_VARIANT_NAME_MAX];
    fc_variant_name(&list.items[0], name);
    assert_string_equal(name, "sm90_bf16_d64_causal_gqa_m64n128s2w8_sm_90a");
    fc_variant_name(&list.items[1], name);
    assert_string_equal(name, "sm90_bf16_d128_causal_gqa_m128n128s2w12p_sm_90a");
    fc_variant_list_free(&list);
}

/* `v_transposed` is the sm90 kernel's FP8 switch (V^T written ahead by the module's second kernel): a
 * "_vt" name where q_fp8 is on; 16-bit variants and other families prune it. */
static void test_v_transposed_is_an_sm90_fp8_switch(void **state)
{
    (void)state;
    struct fc_variant_list list;
    parse_good(HEAD "  - kernel: [sm90, sm80]\n    arch: sm_90a\n    dtype: bf16\n    head_dim: 256\n"
               "    causal: true\n    q_fp8: [false, true]\n    v_transposed: true\n", &list);
    assert_int_equal(list.count, 1);
    assert_int_equal(list.pruned, 3);
    char name[FC_VARIANT_NAME_MAX];
    fc_variant_name(&list.items[0], name);
    assert_string_equal(name, "sm90_bf16_d256_causal_kv8_q8_vt_m128n128s2w12p_sm_90a");
    fc_variant_list_free(&list);
}

/* `quick` is the sm90 kernel's quick first-call form: a "_quick" name on the plain schedule, 32-key
 * tiles its own; other families prune it (the warp-specialized schedule refuses it, and the plain one
 * 32-key tiles without it: test_problem's test_quick_first_call_plan). */
static void test_quick_is_the_sm90_plain_schedule_s_switch(void **state)
{
    (void)state;
    struct fc_variant_list list;
    parse_good(HEAD "  - kernel: [sm90, sm80]\n    arch: sm_90a\n    dtype: bf16\n    head_dim: 128\n"
               "    causal: true\n    block_m: 64\n    block_n: 32\n    warps: 4\n    pingpong: false\n    quick: true\n", &list);
    assert_int_equal(list.count, 1);
    assert_int_equal(list.pruned, 1);
    char name[FC_VARIANT_NAME_MAX];
    fc_variant_name(&list.items[0], name);
    assert_string_equal(name, "sm90_bf16_d128_causal_quick_m64n32s2w4_sm_90a");
    fc_variant_list_free(&list);
}

/* `window` is the mask's compile-time switch: the same default tiles, a "_win" name; merge has no
 * mask, so its window variants are pruned. */
static void test_window_is_a_switch_on_the_default_tiles(void **state)
{
    (void)state;
    struct fc_variant_list list;
    parse_good(HEAD "  - kernel: [sm80, merge]\n    arch: sm_80\n    dtype: f16\n    head_dim: 128\n"
               "    causal: false\n    window: [false, true]\n", &list);
    assert_int_equal(list.count, 3);
    assert_int_equal(list.pruned, 1);
    struct fc_variant expected = expected_family_variant(FC_KERNEL_SM80, FC_F16, 128, 0, 80, 0);
    assert_variant_equal(&list.items[0], &expected);
    expected.window = 1;
    assert_variant_equal(&list.items[1], &expected);
    char name[FC_VARIANT_NAME_MAX];
    fc_variant_name(&list.items[1], name);
    assert_string_equal(name, "sm80_f16_d128_win_m128n64s2w4_sm_80");
    fc_variant_list_free(&list);
}

/* `softcap` is the other compile-time switch ("_cap"); with it the sm80 family at head_dim 64
 * takes 64-key tiles (128 spill with the tanh pass). */
static void test_softcap_is_a_switch_and_may_change_tiles(void **state)
{
    (void)state;
    struct fc_variant_list list;
    parse_good(HEAD "  - kernel: sm80\n    arch: sm_90a\n    dtype: f16\n    head_dim: 64\n"
               "    causal: false\n    softcap: [false, true]\n", &list);
    assert_int_equal(list.count, 2);
    char name[FC_VARIANT_NAME_MAX];
    fc_variant_name(&list.items[0], name);
    assert_string_equal(name, "sm80_f16_d64_m128n128s2w4_sm_90a");
    fc_variant_name(&list.items[1], name);
    assert_string_equal(name, "sm80_f16_d64_cap_m128n64s2w4_sm_90a");
    fc_variant_list_free(&list);
}

static void test_duplicates_collapse(void **state)
{
    (void)state;
    struct fc_variant_list list;
    /* Repeats within a list, between spellings (1 and true, fp16 and f16) and between entries,
     * and an explicit value equal to the default, all name the same variants. */
    parse_good(HEAD KERNEL ARCH DTYPE "    head_dim: [128, 64, 128]\n    causal: [1, true]\n"
               "  - kernel: reference\n    arch: [sm_80]\n    dtype: fp16\n"
               "    head_dim: [64, 96]\n    causal: 1\n    block_m: 16\n", &list);
    assert_int_equal(list.count, 3);
    assert_int_equal(list.pruned, 0);
    const int head_dims[] = {128, 64, 96};   /* first appearance order */
    for (size_t i = 0; i < list.count; i++) {
        struct fc_variant expected = expected_variant(FC_F16, head_dims[i], 1, 80, 0);
        assert_variant_equal(&list.items[i], &expected);
    }
    fc_variant_list_free(&list);
}

static void test_pruned_candidates_are_counted(void **state)
{
    (void)state;
    struct fc_variant_list list;
    /* 2 dtypes x 3 head_dims x 2 block_n = 12 candidates; only f16, head_dim 64 and 128,
     * block_n 32 compile: e4m3 has no kernel, 300 is no head_dim, the reference kernel takes
     * block_n 32 only. */
    parse_good(HEAD KERNEL ARCH "    dtype: [f16, e4m3]\n    head_dim: [64, 300, 128]\n"
               CAUSAL "    block_n: [32, 64]\n", &list);
    assert_int_equal(list.count, 2);
    assert_int_equal(list.pruned, 10);
    struct fc_variant d64 = expected_variant(FC_F16, 64, 0, 80, 0);
    struct fc_variant d128 = expected_variant(FC_F16, 128, 0, 80, 0);
    assert_variant_equal(&list.items[0], &d64);
    assert_variant_equal(&list.items[1], &d128);
    fc_variant_list_free(&list);
}

static void test_integer_range_edges(void **state)
{
    (void)state;
    struct fc_variant_list list;
    parse_good(HEAD KERNEL ARCH DTYPE "    head_dim: [1, 8, 65535]\n" CAUSAL, &list);
    assert_int_equal(list.count, 1);
    assert_int_equal(list.pruned, 2);
    assert_int_equal(list.items[0].head_dim, 8);
    fc_variant_list_free(&list);
}

static void test_unnamed_spec_is_embedded(void **state)
{
    (void)state;
    const char *spec = "version: 2\n";
    struct fc_variant_list list;
    char err[ERR_MAX];
    assert_int_equal(fc_config_parse_variants(spec, strlen(spec), NULL, &list, err, sizeof err),
                     FC_ERR_CONFIG);
    assert_string_equal(err, "<embedded>:1:10: unsupported `version`: \"2\"; expected "
                        "`version: 1`, the only spec version this FlashCore reads");
    /* No message buffer at all is allowed too. */
    assert_int_equal(fc_config_parse_variants(spec, strlen(spec), NULL, &list, NULL, 0),
                     FC_ERR_CONFIG);
    assert_list_empty(&list);
}

/* Only the given length is read: the text need not end in a NUL. */
static void test_length_bounds_the_text(void **state)
{
    (void)state;
    const char spec[] = HEAD ENTRY "this is not YAML: [";
    struct fc_variant_list list;
    char err[ERR_MAX] = "";
    enum fc_status status = fc_config_parse_variants(spec, strlen(HEAD ENTRY), SPEC_NAME, &list,
                                                     err, sizeof err);
    if (status != FC_OK)
        fail_msg("%s", err);
    assert_int_equal(list.count, 1);
    fc_variant_list_free(&list);
    fc_variant_list_free(NULL);
}

static void test_missing_file(void **state)
{
    (void)state;
    const char *path = "/nonexistent/flashcore/precompile.yaml";
    struct fc_variant_list list = {(struct fc_variant *)&list, 7, 3};   /* must be overwritten */
    char err[ERR_MAX];
    assert_int_equal(fc_config_load_variants(path, &list, err, sizeof err), FC_ERR_CONFIG);
    assert_string_equal(err, "/nonexistent/flashcore/precompile.yaml: No such file or directory");
    assert_list_empty(&list);
}

static void test_directory_is_not_a_spec(void **state)
{
    (void)state;
    struct fc_variant_list list;
    char err[ERR_MAX];
    assert_int_equal(fc_config_load_variants("/", &list, err, sizeof err), FC_ERR_CONFIG);
    assert_string_equal(err, "/: Is a directory");
    assert_list_empty(&list);
}

/* A spec read from a file names the file in its messages. */
static void test_file_errors_name_the_file(void **state)
{
    (void)state;
    char path[] = "/tmp/test_config_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char spec[] = HEAD KERNEL ARCH DTYPE "    head_dim: 300\n" CAUSAL;
    assert_int_equal(write(fd, spec, sizeof spec - 1), (ssize_t)(sizeof spec - 1));
    close(fd);
    struct fc_variant_list list;
    char err[ERR_MAX], prefix[64];
    enum fc_status status = fc_config_load_variants(path, &list, err, sizeof err);
    unlink(path);
    assert_int_equal(status, FC_ERR_CONFIG);
    snprintf(prefix, sizeof prefix, "%s:3:5: ", path);
    assert_memory_equal(err, prefix, strlen(prefix));
    assert_non_null(strstr(err, "this entry yields no valid variant"));
    assert_non_null(strstr(err, "head_dim 300 is not a multiple of 8"));
    assert_list_empty(&list);
}

/* A spec that must be refused: where ("line:column") and a phrase of the message. */
struct bad_spec {
    const char *name;
    const char *spec;
    size_t length;   /* 0: strlen(spec); set for specs that hold a NUL byte */
    const char *where;
    const char *phrase;
};

#define WITH_LENGTH(literal) literal, sizeof(literal) - 1
#define TEN(x) x ", " x ", " x ", " x ", " x ", " x ", " x ", " x ", " x ", " x

static const struct bad_spec BAD_SPECS[] = {
    /* The document */
    {"empty_text", "", 0, "1:1", "the spec is empty"},
    {"only_a_comment", "# nothing here\n", 0, "2:1", "the spec is empty"},
    {"top_is_a_list", "- version: 1\n", 0, "1:1", "a spec must be a mapping with `version: 1` "
     "and `variants`, not a list"},
    {"top_is_a_scalar", "hello\n", 0, "1:1", "must be a mapping with `version: 1` and "
     "`variants`, not \"hello\""},
    {"second_document", HEAD ENTRY "---\n" HEAD ENTRY, 0, "8:1", "a second YAML document"},
    /* version */
    {"missing_version", "variants:\n" ENTRY, 0, "1:1", "missing required key `version` at the "
     "top of the spec"},
    {"unsupported_version", "version: 2\nvariants:\n" ENTRY, 0, "1:10", "unsupported `version`: "
     "\"2\"; expected `version: 1`"},
    {"version_is_quoted", "version: \"1\"\nvariants:\n" ENTRY, 0, "1:10",
     "`version` must be 1, but \"1\" is quoted, which makes it a string"},
    {"version_is_a_list", "variants:\n" ENTRY "version: [1]\n", 0, "7:10", "unsupported "
     "`version`: a list"},
    /* variants */
    {"missing_variants", "version: 1\n", 0, "1:1", "missing required key `variants`"},
    {"variants_is_a_mapping", HEAD "  kernel: reference\n", 0, "3:3", "`variants` must be a "
     "list of entries"},
    {"variants_is_empty", "version: 1\nvariants: []\n", 0, "2:11", "`variants` is an empty list"},
    {"variants_has_no_value", "version: 1\nvariants:\n", 0, "2:10", "`variants` must be a list "
     "of entries (- kernel: ...), not an empty value"},
    {"entry_is_a_scalar", HEAD "  - reference\n", 0, "3:5", "each entry of `variants` must be "
     "a mapping"},
    {"entry_is_a_list", HEAD "  - [reference, sm_80]\n", 0, "3:5", "must be a mapping "
     "(kernel: ..., arch: ...), not a list"},
    /* Keys */
    {"unknown_top_key", HEAD ENTRY "name: default\n", 0, "8:1", "unknown key \"name\" at the top "
     "of the spec; allowed: version, variants"},
    {"unknown_entry_key", HEAD ENTRY "    heads: 8\n", 0, "8:5", "unknown key \"heads\" in this "
     "variants entry; allowed: kernel, arch, dtype, head_dim, causal, block_m, block_n, stages, "
     "warps"},
    {"misspelled_key", HEAD KERNEL ARCH "    dtypes: f16\n" HEAD_DIM CAUSAL, 0, "5:5",
     "unknown key \"dtypes\""},
    {"key_is_a_list", HEAD KERNEL "    [arch]: sm_80\n", 0, "4:5", "keys must be names"},
    {"duplicate_entry_key", HEAD ENTRY "    arch: sm_90a\n", 0, "8:5", "duplicate key `arch` in "
     "this variants entry (first given at 4:5)"},
    {"duplicate_top_key", HEAD ENTRY "version: 1\n", 0, "8:1", "duplicate key `version` at the "
     "top of the spec (first given at 1:1)"},
    {"missing_kernel", HEAD "  - arch: sm_80\n" DTYPE HEAD_DIM CAUSAL, 0, "3:5",
     "missing required key `kernel` in this variants entry"},
    {"missing_arch", HEAD KERNEL DTYPE HEAD_DIM CAUSAL, 0, "3:5", "missing required key `arch`"},
    {"missing_dtype", HEAD KERNEL ARCH HEAD_DIM CAUSAL, 0, "3:5", "missing required key `dtype`"},
    {"missing_head_dim", HEAD KERNEL ARCH DTYPE CAUSAL, 0, "3:5",
     "missing required key `head_dim`"},
    {"missing_causal", HEAD KERNEL ARCH DTYPE HEAD_DIM, 0, "3:5", "missing required key `causal`"},
    {"missing_in_second_entry", HEAD ENTRY KERNEL ARCH DTYPE HEAD_DIM, 0, "8:5",
     "missing required key `causal`"},
    /* Names */
    {"unknown_kernel", HEAD "  - kernel: flash\n" ARCH DTYPE HEAD_DIM CAUSAL, 0, "3:13",
     "unknown kernel \"flash\"; accepted: reference"},
    {"unknown_dtype", HEAD KERNEL ARCH "    dtype: [f16, fp32]\n" HEAD_DIM CAUSAL, 0, "5:18",
     "unknown dtype \"fp32\"; accepted: f16, bf16, e4m3"},
    {"unknown_arch", HEAD KERNEL "    arch: [sm_80, ampere]\n" DTYPE HEAD_DIM CAUSAL, 0, "4:19",
     "unknown arch \"ampere\"; accepted: sm_XY or sm_XYa"},
    {"arch_suffix", HEAD KERNEL "    arch: sm_90x\n" DTYPE HEAD_DIM CAUSAL, 0, "4:11",
     "unknown arch \"sm_90x\""},
    /* Integers */
    {"word_for_integer", HEAD KERNEL ARCH DTYPE "    head_dim: abc\n" CAUSAL, 0, "6:15",
     "`head_dim` must be a positive integer (1 to 65535), not \"abc\""},
    {"trailing_garbage", HEAD KERNEL ARCH DTYPE "    head_dim: [64, 128k]\n" CAUSAL, 0, "6:20",
     "not \"128k\""},
    {"fraction", HEAD KERNEL ARCH DTYPE "    head_dim: 64.0\n" CAUSAL, 0, "6:15", "not \"64.0\""},
    {"hexadecimal", HEAD KERNEL ARCH DTYPE "    head_dim: 0x40\n" CAUSAL, 0, "6:15",
     "not \"0x40\""},
    {"plus_sign", HEAD KERNEL ARCH DTYPE "    head_dim: +64\n" CAUSAL, 0, "6:15", "not \"+64\""},
    {"zero", HEAD ENTRY "    warps: 0\n", 0, "8:12", "`warps` must be a positive integer"},
    {"negative", HEAD ENTRY "    stages: -1\n", 0, "8:13", "`stages` must be a positive integer "
     "(1 to 65535), not \"-1\""},
    {"too_large", HEAD ENTRY "    block_m: 65536\n", 0, "8:14", "not \"65536\""},
    {"overflows_long", HEAD ENTRY "    block_n: 99999999999999999999999\n", 0, "8:14",
     "`block_n` must be a positive integer"},
    {"quoted_integer", HEAD KERNEL ARCH DTYPE "    head_dim: \"64\"\n" CAUSAL, 0, "6:15",
     "`head_dim` must be a positive integer (1 to 65535), but \"64\" is quoted"},
    {"integer_has_no_value", HEAD KERNEL ARCH DTYPE "    head_dim:\n" CAUSAL, 0, "6:14",
     "`head_dim` must be a positive integer (1 to 65535), not an empty value"},
    /* Booleans */
    {"yes_for_boolean", HEAD KERNEL ARCH DTYPE HEAD_DIM "    causal: yes\n", 0, "7:13",
     "`causal` must be true or false (or 1 or 0), not \"yes\""},
    {"pingpong_word", HEAD KERNEL ARCH DTYPE HEAD_DIM CAUSAL "    pingpong: sometimes\n", 0, "8:15",
     "`pingpong` must be true or false"},
    {"two_for_boolean", HEAD KERNEL ARCH DTYPE HEAD_DIM "    causal: [0, 2]\n", 0, "7:17",
     "`causal` must be true or false"},
    {"quoted_boolean", HEAD KERNEL ARCH DTYPE HEAD_DIM "    causal: 'true'\n", 0, "7:13",
     "but \"true\" is quoted"},
    /* Lists */
    {"empty_list", HEAD KERNEL ARCH "    dtype: []\n" HEAD_DIM CAUSAL, 0, "5:12",
     "`dtype` is an empty list; give at least one value"},
    {"nested_list", HEAD KERNEL ARCH DTYPE "    head_dim: [[64]]\n" CAUSAL, 0, "6:16",
     "the items of `head_dim` must be single values, not a list"},
    {"mapping_for_value", HEAD KERNEL ARCH DTYPE "    head_dim: {min: 64}\n" CAUSAL, 0, "6:15",
     "`head_dim` must be a value or a list of values, not a mapping"},
    /* Expansion */
    {"entry_yields_nothing", HEAD ENTRY KERNEL ARCH DTYPE "    head_dim: [300, 512]\n" CAUSAL, 0,
     "8:5", "this entry yields no valid variant (2 rejected), e.g. "
     "reference_f16_d300_m16n32s1w4_sm_80: head_dim 300 is not a multiple of 8"},
    {"unsupported_dtype_only", HEAD KERNEL ARCH "    dtype: e4m3\n" HEAD_DIM CAUSAL, 0, "3:5",
     "this entry yields no valid variant"},
    {"too_many_candidates", HEAD KERNEL "    arch: [" TEN("sm_80") "]\n    dtype: [" TEN("f16")
     "]\n    head_dim: [" TEN("64") "]\n    causal: [" TEN("0") "]\n    block_m: [" TEN("16")
     "]\n    warps: [4, 4]\n", 0, "3:5", "this entry brings the spec past 100000 candidates"},
    /* YAML itself */
    {"unclosed_list", HEAD KERNEL "    arch: [sm_80, sm_90a\n" DTYPE HEAD_DIM CAUSAL, 0, "5:10",
     "YAML syntax error: did not find expected ',' or ']' (while parsing a flow sequence that "
     "starts at 4:11)"},
    {"bad_indentation", HEAD KERNEL "   arch: sm_80\n" DTYPE HEAD_DIM CAUSAL, 0, "4:4",
     "YAML syntax error: did not find expected '-' indicator"},
    {"missing_colon", HEAD KERNEL "    arch sm_80\n" DTYPE HEAD_DIM CAUSAL, 0, "5:5",
     "YAML syntax error: could not find expected ':' (while scanning a simple key that starts "
     "at 4:5)"},
    {"tab_indentation", HEAD KERNEL "\tarch: sm_80\n" DTYPE HEAD_DIM CAUSAL, 0, "4:1",
     "found a tab character"},
    /* Syntax is checked first: here the unknown key comes before the unclosed list. */
    {"syntax_before_meaning", "name: x\n" HEAD "  - kernel: [reference\n", 0, "5:1",
     "YAML syntax error"},
    {"alias", HEAD "  - kernel: reference\n    arch: &hopper sm_90a\n" DTYPE HEAD_DIM CAUSAL
     "  - kernel: reference\n    arch: *hopper\n" DTYPE HEAD_DIM CAUSAL, 0, "4:11",
     "anchors (&hopper) are not supported in a spec"},
    {"alias_only", HEAD ENTRY "    warps: *four\n", 0, "8:12",
     "aliases (*four) are not supported in a spec"},
    {"tag", HEAD KERNEL ARCH DTYPE "    head_dim: !!int 64\n" CAUSAL, 0, "6:15",
     "tags (tag:yaml.org,2002:int) are not supported"},
    {"nul_escape", HEAD "  - kernel: \"reference\\0\"\n" ARCH DTYPE HEAD_DIM CAUSAL, 0, "3:13",
     "a value holds a NUL character"},
    {"nul_byte", WITH_LENGTH(HEAD KERNEL "    arch: sm\0_80\n"), "4:13",
     "unreadable text: control characters are not allowed"},
    {"invalid_utf8", HEAD KERNEL "    arch: sm_\xff" "80\n" DTYPE HEAD_DIM CAUSAL, 0, "4:14",
     "unreadable text: invalid leading UTF-8 octet"},
};

#define BAD_SPEC_COUNT (sizeof BAD_SPECS / sizeof BAD_SPECS[0])

static void test_bad_spec(void **state)
{
    const struct bad_spec *bad = *state;
    size_t length = bad->length ? bad->length : strlen(bad->spec);
    struct fc_variant_list list = {(struct fc_variant *)&list, 7, 3};   /* must be overwritten */
    char err[ERR_MAX] = "", prefix[64];
    enum fc_status status = fc_config_parse_variants(bad->spec, length, SPEC_NAME, &list, err,
                                                     sizeof err);
    snprintf(prefix, sizeof prefix, SPEC_NAME ":%s: ", bad->where);
    if (status != FC_ERR_CONFIG || strncmp(err, prefix, strlen(prefix)) != 0 ||
        !strstr(err, bad->phrase))
        fail_msg("got status %d and\n  \"%s\"\nexpected FC_ERR_CONFIG and\n  \"%s...%s...\"",
                 (int)status, err, prefix, bad->phrase);
    assert_list_empty(&list);
}

/* ---- hostile specs: bounded work, no case over 2 s (issue 18, finding 6) ---- */

#define SPEC_SECONDS_MAX 2.0
#define HOSTILE_DEPTH 100000   /* took 47 s before the nesting cap */

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* prefix, then open repeated depth times, then close repeated depth times, then suffix. */
static char *nested_spec(const char *prefix, const char *open, const char *middle, const char *close, int depth)
{
    size_t size = strlen(prefix) + (strlen(open) + strlen(close)) * (size_t)depth + strlen(middle) + 2;
    char *text = malloc(size), *p = text;
    assert_non_null(text);
    p += sprintf(p, "%s", prefix);
    for (int i = 0; i < depth; i++)
        p += sprintf(p, "%s", open);
    p += sprintf(p, "%s", middle);
    for (int i = 0; i < depth; i++)
        p += sprintf(p, "%s", close);
    sprintf(p, "\n");
    return text;
}

/* The spec must be refused as FC_ERR_CONFIG with the phrase, in under SPEC_SECONDS_MAX. */
static void assert_refused_quickly(const char *spec, const char *phrase)
{
    struct fc_variant_list variants;
    struct fc_tune_problem_list problems;
    char err[ERR_MAX] = "";
    const double start = seconds_now();
    enum fc_status status = fc_config_parse_tune(spec, strlen(spec), SPEC_NAME, &variants, &problems, err,
                                                 sizeof err);
    const double elapsed = seconds_now() - start;
    if (status != FC_ERR_CONFIG || !strstr(err, phrase) || elapsed > SPEC_SECONDS_MAX)
        fail_msg("status %d after %.2f s: \"%s\" (expected FC_ERR_CONFIG, \"%s\", under %.0f s)", (int)status,
                 elapsed, err, phrase, SPEC_SECONDS_MAX);
    assert_list_empty(&variants);
    assert_null(problems.items);
}

static void test_deep_nesting_is_refused_quickly(void **state)
{
    (void)state;
    char *flow_lists = nested_spec("version: 1\nvariants: ", "[", "", "]", HOSTILE_DEPTH);
    assert_refused_quickly(flow_lists, "nested more than");
    free(flow_lists);
    char *flow_maps = nested_spec("version: 1\nproblems: ", "{a: ", "1", "}", HOSTILE_DEPTH);
    assert_refused_quickly(flow_maps, "nested more than");
    free(flow_maps);
    char *block = nested_spec("version: 1\nvariants:\n", "- ", "x", "", 5000);
    assert_refused_quickly(block, "nested more than");
    free(block);
}

#define PROBLEMS_HEAD "version: 1\nproblems:\n  - dtype: [f16, bf16]\n    head_dim: 128\n    causal: [false, true]\n"
#define ONE_VARIANT "variants:\n" ENTRY

/* "seqlen: [first, first + 1, ...]" with count values. */
static char *seqlen_list(int first, int count)
{
    char *text = malloc((size_t)count * 8 + 32), *p = text;
    assert_non_null(text);
    p += sprintf(p, "    seqlen: [");
    for (int i = 0; i < count; i++)
        p += sprintf(p, "%s%d", i ? ", " : "", first + i);
    sprintf(p, "]\n");
    return text;
}

static void test_problem_buckets_are_capped(void **state)
{
    (void)state;
    char *seqlens = seqlen_list(1, 2501), spec[40000];   /* 2 x 2 x 2501 = 10004 buckets */
    snprintf(spec, sizeof spec, PROBLEMS_HEAD "%s" ONE_VARIANT, seqlens);
    assert_refused_quickly(spec, "past 10000 problem buckets");
    free(seqlens);
}

/* Buckets repeated within and across entries are kept once, in first-appearance order, and many
 * distinct ones take well under a second (they were compared pairwise). */
static void test_duplicate_problems_collapse_in_order(void **state)
{
    (void)state;
    char *seqlens = seqlen_list(1, 2499), *spec = malloc(100000);   /* with the 4 below: 10000, the cap */
    assert_non_null(spec);
    snprintf(spec, 100000, PROBLEMS_HEAD "%s  - dtype: f16\n    head_dim: 128\n    causal: false\n"
             "    seqlen: [7, 7, 3, 2501]\n" ONE_VARIANT, seqlens);
    struct fc_variant_list variants;
    struct fc_tune_problem_list problems;
    char err[ERR_MAX] = "";
    const double start = seconds_now();
    enum fc_status status = fc_config_parse_tune(spec, strlen(spec), SPEC_NAME, &variants, &problems, err,
                                                 sizeof err);
    if (status != FC_OK)
        fail_msg("%d: %s", (int)status, err);
    assert_true(seconds_now() - start < SPEC_SECONDS_MAX);
    assert_int_equal(problems.count, 2 * 2 * 2499 + 1);   /* only seqlen 2501 is new */
    assert_int_equal(problems.items[0].seqlen, 1);
    assert_int_equal(problems.items[1].seqlen, 2);
    assert_int_equal(problems.items[problems.count - 1].seqlen, 2501);
    assert_int_equal(problems.items[problems.count - 1].dtype, FC_F16);
    fc_variant_list_free(&variants);
    fc_tune_problem_list_free(&problems);
    free(spec);
    free(seqlens);
}

static const char *find_precompile_spec(int argc, char **argv)
{
    static char path[4096];
    if (argc > 1)
        return argv[1];
    const char *root = getenv("FC_SOURCE_ROOT");
#ifdef FC_SOURCE_ROOT
    if (!root)
        root = FC_SOURCE_ROOT;
#endif
    if (!root)
        return NULL;
    snprintf(path, sizeof path, "%s/" PRECOMPILE_SPEC, root);
    return path;
}

static const struct CMUnitTest GOOD_TESTS[] = {
    cmocka_unit_test(test_precompile_spec),
    cmocka_unit_test(test_scalar_instead_of_list),
    cmocka_unit_test(test_yaml_styles),
    cmocka_unit_test(test_optional_keys_override_defaults),
    cmocka_unit_test(test_pingpong_is_an_sm90_schedule_choice),
    cmocka_unit_test(test_pack_gqa_is_an_sm90_switch),
    cmocka_unit_test(test_v_transposed_is_an_sm90_fp8_switch),
    cmocka_unit_test(test_quick_is_the_sm90_plain_schedule_s_switch),
    cmocka_unit_test(test_window_is_a_switch_on_the_default_tiles),
    cmocka_unit_test(test_softcap_is_a_switch_and_may_change_tiles),
    cmocka_unit_test(test_duplicates_collapse),
    cmocka_unit_test(test_pruned_candidates_are_counted),
    cmocka_unit_test(test_integer_range_edges),
    cmocka_unit_test(test_unnamed_spec_is_embedded),
    cmocka_unit_test(test_length_bounds_the_text),
    cmocka_unit_test(test_missing_file),
    cmocka_unit_test(test_directory_is_not_a_spec),
    cmocka_unit_test(test_file_errors_name_the_file),
    cmocka_unit_test(test_deep_nesting_is_refused_quickly),
    cmocka_unit_test(test_problem_buckets_are_capped),
    cmocka_unit_test(test_duplicate_problems_collapse_in_order),
};

#define GOOD_TEST_COUNT (sizeof GOOD_TESTS / sizeof GOOD_TESTS[0])

int main(int argc, char **argv)
{
    precompile_path = find_precompile_spec(argc, argv);
    static struct CMUnitTest tests[GOOD_TEST_COUNT + BAD_SPEC_COUNT];
    memcpy(tests, GOOD_TESTS, sizeof GOOD_TESTS);
    /* One named test per bad spec, so that a failure says which. */
    for (size_t i = 0; i < BAD_SPEC_COUNT; i++) {
        tests[GOOD_TEST_COUNT + i] = (struct CMUnitTest){
            BAD_SPECS[i].name, test_bad_spec, NULL, NULL, (void *)&BAD_SPECS[i],
        };
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
