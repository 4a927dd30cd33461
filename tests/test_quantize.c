/* fc_quantize without a GPU: every rule's status and message, the public call's order (rules
 * before the device), and the fp64 rotation the GPU check judges by (orthogonal, score-preserving,
 * the same signs for q and k). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "quantize_internal.h"
#include "reference_cpu_internal.h"

#define ALIGNED ((void *)(uintptr_t)0x10000)   /* never dereferenced: the rules only look at it */
#define ALIGNED_OUT ((void *)(uintptr_t)0x20000)
#define DESCALES ((float *)(uintptr_t)0x30000)

static struct fc_quantize_params valid(void)
{
    struct fc_quantize_params p;
    fc_quantize_params_init(&p);
    p.dtype = FC_BF16;
    p.batch = 2;
    p.seqlen = 100;
    p.heads = 8;
    p.descale_heads = 2;
    p.head_dim = 128;
    p.in = ALIGNED;
    p.out = ALIGNED_OUT;
    p.descale = DESCALES;
    return p;
}

static void expect(struct fc_quantize_params p, enum fc_status status, const char *phrase)
{
    char msg[FC_MESSAGE_MAX] = "";
    assert_int_equal(fc_quantize_validate(&p, msg), status);
    if (phrase && !strstr(msg, phrase))
        fail_msg("message \"%s\" lacks \"%s\"", msg, phrase);
}

static void test_defaults_and_a_valid_problem(void **state)
{
    (void)state;
    struct fc_quantize_params p;
    fc_quantize_params_init(&p);
    assert_int_equal(p.struct_size, sizeof p);
    assert_int_equal(p.out_dtype, FC_E4M3);
    assert_int_equal(p.scaling, FC_SCALE_PER_HEAD);
    assert_int_equal(p.rotate, 0);
    p = valid();
    char msg[FC_MESSAGE_MAX];
    assert_int_equal(fc_quantize_validate(&p, msg), FC_OK);
    assert_int_equal(p.in_stride[2], 128);            /* packed, resolved */
    assert_int_equal(p.out_stride[0], 100 * 8 * 128);
    p = valid();
    p.descale_heads = 0;                               /* 0: one per head */
    assert_int_equal(fc_quantize_validate(&p, msg), FC_OK);
    assert_int_equal(p.descale_heads, 8);
    p = valid();
    p.out_dtype = FC_DTYPE_SAME;                       /* rotation only */
    p.rotate = 1;
    p.descale = NULL;
    assert_int_equal(fc_quantize_validate(&p, msg), FC_OK);
    assert_int_equal(p.out_dtype, FC_BF16);
    p = valid();                                       /* varlen */
    p.cu_seqlens = (const int32_t *)ALIGNED;
    p.max_seqlen = 60;
    assert_int_equal(fc_quantize_validate(&p, msg), FC_OK);
    assert_int_equal(p.out_stride[0], 0);
    assert_int_equal(p.out_stride[1], 8 * 128);
}

static void test_each_rule_has_its_message(void **state)
{
    (void)state;
    struct fc_quantize_params p = valid();
    p.dtype = FC_E4M3;
    expect(p, FC_ERR_UNSUPPORTED, "FC_F16 or FC_BF16");
    p = valid();
    p.dtype = (enum fc_dtype)7;
    expect(p, FC_ERR_INVALID_ARG, "fc_quantize reads");
    p = valid();
    p.out_dtype = FC_F16;
    expect(p, FC_ERR_INVALID_ARG, "to rotate only");
    p = valid();
    p.seqlen = 0;
    expect(p, FC_ERR_INVALID_ARG, "seqlen must be positive");
    p = valid();
    p.head_dim = 120;
    expect(p, FC_ERR_UNSUPPORTED, "multiple of 16 up to 256");
    p = valid();
    p.head_dim = 272;
    expect(p, FC_ERR_UNSUPPORTED, "multiple of 16 up to 256");
    p = valid();
    p.descale_heads = 3;
    expect(p, FC_ERR_INVALID_ARG, "must divide heads");
    p = valid();
    p.descale_heads = -1;
    expect(p, FC_ERR_INVALID_ARG, "must divide heads");
    p = valid();
    p.scaling = (enum fc_quantize_scaling)5;
    expect(p, FC_ERR_INVALID_ARG, "FC_SCALE_PER_HEAD, FC_SCALE_PER_TENSOR or FC_SCALE_GIVEN");
    p = valid();
    p.out_dtype = FC_BF16;
    p.rotate = 1;
    p.descale = NULL;
    p.scaling = FC_SCALE_PER_TENSOR;
    expect(p, FC_ERR_INVALID_ARG, "scaling is FP8's");
    p = valid();
    p.out_dtype = FC_BF16;
    p.descale = NULL;
    expect(p, FC_ERR_INVALID_ARG, "only rotates");
    p = valid();
    p.out_dtype = FC_BF16;
    p.rotate = 1;
    expect(p, FC_ERR_INVALID_ARG, "descale is FP8's");
    p = valid();
    p.rotate = 2;
    expect(p, FC_ERR_INVALID_ARG, "rotate must be 0 or 1");
    p = valid();
    p.max_seqlen = 10;
    expect(p, FC_ERR_INVALID_ARG, "varlen takes both");
    p = valid();
    p.cu_seqlens = (const int32_t *)ALIGNED;
    expect(p, FC_ERR_INVALID_ARG, "varlen takes both");
    p = valid();
    p.cu_seqlens = (const int32_t *)ALIGNED;
    p.max_seqlen = 101;
    expect(p, FC_ERR_INVALID_ARG, "more than seqlen");
    p = valid();
    p.in = NULL;
    expect(p, FC_ERR_INVALID_ARG, "in");
    p = valid();
    p.out = (void *)((uintptr_t)ALIGNED_OUT + 8);
    expect(p, FC_ERR_INVALID_ARG, "out");
    p = valid();
    p.descale = NULL;
    expect(p, FC_ERR_INVALID_ARG, "descale");
    p = valid();
    p.out = (void *)p.in;
    expect(p, FC_ERR_INVALID_ARG, "must not overlap");
    p = valid();
    p.out_stride[0] = 100 * 8 * 128;
    p.out_stride[1] = 8 * 128;
    p.out_stride[2] = 136;                     /* e4m3: 136 bytes is not a multiple of 16 */
    expect(p, FC_ERR_INVALID_ARG, "multiple of 16 elements");
    p = valid();
    p.in_stride[2] = 4;
    expect(p, FC_ERR_INVALID_ARG, "in_stride");
    p = valid();
    p.cu_seqlens = (const int32_t *)ALIGNED;
    p.max_seqlen = 60;
    p.in_stride[0] = 1024;
    expect(p, FC_ERR_INVALID_ARG, "must be 0");
    p = valid();
    p.batch = 1 << 20;
    p.heads = p.descale_heads = 1 << 12;
    expect(p, FC_ERR_UNSUPPORTED, "more than one launch takes");
}

/* The public call: the struct's rules, then the rules, then the device. */
static void test_public_call_validates_before_the_device(void **state)
{
    (void)state;
    struct fc_context *ctx = NULL;
    struct fc_options options;
    fc_options_init(&options);
    options.no_disk_cache = 1;
    assert_int_equal(fc_context_create(FC_DEVICE_NONE, &options, &ctx), FC_OK);
    assert_int_equal(fc_quantize(NULL, NULL, NULL), FC_ERR_INVALID_ARG);
    assert_int_equal(fc_quantize(ctx, NULL, NULL), FC_ERR_INVALID_ARG);
    struct fc_quantize_params p = valid();
    p.struct_size = 8;
    assert_int_equal(fc_quantize(ctx, &p, NULL), FC_ERR_INVALID_ARG);
    assert_non_null(strstr(fc_context_errmsg(ctx), "fc_quantize_params_init"));
    p = valid();
    p.head_dim = 8;
    assert_int_equal(fc_quantize(ctx, &p, NULL), FC_ERR_UNSUPPORTED);
    p = valid();
    assert_int_equal(fc_quantize(ctx, &p, NULL), FC_ERR_NO_DEVICE);
    assert_non_null(strstr(fc_context_errmsg(ctx), "FC_DEVICE_NONE"));
    fc_context_destroy(ctx);
}

static void test_rotation_is_orthogonal_and_keeps_scores(void **state)
{
    (void)state;
    const int dims[] = {16, 64, 96, 128, 192, 256};
    struct fc_random random;
    fc_random_seed(&random, 11);
    for (size_t t = 0; t < sizeof dims / sizeof dims[0]; t++) {
        const int d = dims[t];
        double q[256], k[256], q_norm = 0.0, dot = 0.0, rotated_norm = 0.0, rotated_dot = 0.0;
        for (int i = 0; i < d; i++) {
            q[i] = i == 5 ? 30.0 : fc_random_normal(&random);   /* one outlier dimension */
            k[i] = fc_random_normal(&random);
            q_norm += q[i] * q[i];
            dot += q[i] * k[i];
        }
        double q_amax = 0.0;
        for (int i = 0; i < d; i++)
            q_amax = fmax(q_amax, fabs(q[i]));
        fc_rotate_reference(q, d, 1234);
        fc_rotate_reference(k, d, 1234);
        double rotated_amax = 0.0;
        for (int i = 0; i < d; i++) {
            rotated_norm += q[i] * q[i];
            rotated_dot += q[i] * k[i];
            rotated_amax = fmax(rotated_amax, fabs(q[i]));
        }
        assert_true(fabs(rotated_norm - q_norm) <= 1e-12 * q_norm);
        assert_true(fabs(rotated_dot - dot) <= 1e-12 * q_norm);
        /* the outlier (30) spreads over the Hadamard's order n (d's largest power-of-two divisor, >= 16):
         * 30 / sqrt(n) <= 7.5 on each of n dimensions, beside the rest's N(0, 1) */
        assert_true(rotated_amax < 0.5 * q_amax);
    }
    assert_int_equal(fc_rotation_order(192), 64);
    assert_int_equal(fc_rotation_order(96), 32);
    assert_int_equal(fc_rotation_order(256), 256);
}

/* One dimension alone: R e_j has |entries| 1/sqrt(n) on j's block, the signs of H's row times s_j. */
static void test_rotation_of_a_unit_vector(void **state)
{
    (void)state;
    double x[128] = {0};
    x[37] = 1.0;
    fc_rotate_reference(x, 128, 99);
    for (int i = 0; i < 128; i++) {
        assert_true(fabs(fabs(x[i]) - 1.0 / sqrt(128.0)) < 1e-15);
        const int h = __builtin_parity((unsigned)(i & 37)) ? -1 : 1;   /* Sylvester: (-1)^popcount(i & j) */
        assert_int_equal(x[i] > 0 ? 1 : -1, h * fc_rotation_sign(99, 37));
    }
    int positive = 0;   /* the signs are balanced enough to be a rotation worth the name */
    for (int d = 0; d < 4096; d++)
        positive += fc_rotation_sign(5, d) > 0;
    assert_in_range(positive, 1848, 2248);
    int differ = 0;   /* another seed, other signs */
    for (int d = 0; d < 64; d++)
        differ += fc_rotation_sign(5, d) != fc_rotation_sign(6, d);
    assert_in_range(differ, 16, 48);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_a_valid_problem),
        cmocka_unit_test(test_each_rule_has_its_message),
        cmocka_unit_test(test_public_call_validates_before_the_device),
        cmocka_unit_test(test_rotation_is_orthogonal_and_keeps_scores),
        cmocka_unit_test(test_rotation_of_a_unit_vector),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
