/* The GPU checks' own machinery (src/check.c) without a GPU: its CUDA calls land in host memory,
 * and a forward pass written out here from flashcore.h reads the tensors as a kernel does, through
 * the params check.c hands over (strides, cu_seqlens, seqused_k, the page table, the descales).
 * What it computes must pass fc_check_verify in every layout, 16-bit and FP8 K/V; what a kernel
 * gets wrong (a descale of the wrong sequence, a poisoned row read) must fail it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check_internal.h"

/* ---- device memory that is host memory ---- */

static int live_allocations;

static CUresult host_alloc(CUdeviceptr *pointer, size_t bytes)
{
    void *memory = malloc(bytes ? bytes : 1);
    *pointer = (CUdeviceptr)(uintptr_t)memory;
    live_allocations += memory != NULL;
    return memory ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult host_free(CUdeviceptr pointer)
{
    free((void *)(uintptr_t)pointer);
    live_allocations--;
    return CUDA_SUCCESS;
}

static CUresult host_to_device(CUdeviceptr to, const void *from, size_t bytes)
{
    memcpy((void *)(uintptr_t)to, from, bytes);
    return CUDA_SUCCESS;
}

static CUresult device_to_host(void *to, CUdeviceptr from, size_t bytes)
{
    memcpy(to, (const void *)(uintptr_t)from, bytes);
    return CUDA_SUCCESS;
}

static CUresult set_16(CUdeviceptr to, unsigned short value, size_t count)
{
    for (size_t i = 0; i < count; i++)
        ((unsigned short *)(uintptr_t)to)[i] = value;
    return CUDA_SUCCESS;
}

static CUresult set_32(CUdeviceptr to, unsigned int value, size_t count)
{
    for (size_t i = 0; i < count; i++)
        ((unsigned int *)(uintptr_t)to)[i] = value;
    return CUDA_SUCCESS;
}

static struct fc_cuda_api host_api;
static struct fc_context host_context;   /* only its cuda table is read */

static int setup(void **state)
{
    (void)state;
    host_api.cuMemAlloc = host_alloc;
    host_api.cuMemFree = host_free;
    host_api.cuMemcpyHtoD = host_to_device;
    host_api.cuMemcpyDtoH = device_to_host;
    host_api.cuMemsetD16 = set_16;
    host_api.cuMemsetD32 = set_32;
    host_context.cuda = &host_api;
    return 0;
}

/* ---- the forward pass, as a kernel reads its arguments ---- */

/* What a kernel may get wrong, to see the check notice. */
enum fault { NO_FAULT, FIRST_SEQUENCE_DESCALE, LAST_KEY_PAST_USED };

struct tensor_view {
    const void *base;
    const int64_t *stride;   /* the problem's resolved strides, in elements */
    int element_bytes;
};

static float read_16(const struct fc_problem *pr, const struct tensor_view *t, int64_t offset)
{
    uint16_t bits;
    memcpy(&bits, (const char *)t->base + offset * 2, 2);
    return fc_storage_to_float(pr->dtype, bits);
}

/* Key j of sequence b, K/V head h, column d of k or v, dequantized: the page table, cu_seqlens_k or
 * the batch stride finds its row. */
static double kv_value(const struct fc_problem *pr, const struct tensor_view *t, const float *descales, int b,
                       int k_row0, int j, int h, int d, enum fault fault)
{
    int64_t row;
    if (pr->paged) {
        const int page = pr->page_table[(int64_t)b * pr->page_table_stride + j / pr->page_size];
        row = page * t->stride[0] + (j % pr->page_size) * t->stride[1];
    } else if (pr->varlen) {
        row = (int64_t)(k_row0 + j) * t->stride[1];
    } else {
        row = b * t->stride[0] + j * t->stride[1];
    }
    const int64_t offset = row + h * t->stride[2] + d;
    if (t->element_bytes == 2)
        return read_16(pr, t, offset);
    const int sequence = fault == FIRST_SEQUENCE_DESCALE ? 0 : b;
    const double descale = descales ? descales[sequence * pr->heads_kv + h] : 1.0;
    return descale * fc_e4m3_to_float(((const uint8_t *)t->base)[offset]);
}

/* Every query row of the problem in fp64, out rounded to the dtype, lse in fp32. */
static void host_forward(const struct fc_attention_params *params, enum fault fault)
{
    struct fc_problem pr;
    char msg[FC_MESSAGE_MAX];
    assert_int_equal(fc_problem_from_params(params, &pr, msg, sizeof msg), FC_OK);
    const int kv_bytes = fc_problem_kv_bytes(&pr), D = pr.head_dim;
    const struct tensor_view q = {pr.q, pr.q_stride, 2}, k = {pr.k, pr.k_stride, kv_bytes},
                             v = {pr.v, pr.v_stride, kv_bytes};
    double *scores = malloc(sizeof(double) * (size_t)(pr.max_seqlen_k + 1));
    assert_non_null(scores);
    for (int b = 0; b < pr.batch; b++) {
        const int q_row0 = pr.varlen ? pr.cu_seqlens_q[b] : 0;
        const int len_q = pr.varlen ? pr.cu_seqlens_q[b + 1] - q_row0 : pr.seqlen_q;
        const int k_row0 = pr.varlen && !pr.paged ? pr.cu_seqlens_k[b] : 0;
        int len_k = pr.varlen && !pr.paged ? pr.cu_seqlens_k[b + 1] - k_row0 : pr.max_seqlen_k;
        len_k = pr.seqused_k ? pr.seqused_k[b] : len_k;
        for (int h = 0; h < pr.heads_q; h++)
            for (int i = 0; i < len_q; i++) {
                const int kv = h / (pr.heads_q / pr.heads_kv);
                const int64_t q_row = pr.varlen ? (int64_t)(q_row0 + i) * pr.q_stride[1]
                                                : b * pr.q_stride[0] + i * pr.q_stride[1];
                struct fc_key_range keys = fc_mask_keys(&pr.mask, len_q, len_k, i, i + 1);
                if (fault == LAST_KEY_PAST_USED && keys.end > keys.begin)
                    keys.end++;   /* one key too many: a poisoned one, past seqused_k or the sequence */
                double top = pr.sinks ? pr.sinks[h] : -INFINITY;
                for (int j = keys.begin; j < keys.end; j++) {
                    double dot = 0;
                    for (int d = 0; d < D; d++)
                        dot += read_16(&pr, &q, q_row + h * pr.q_stride[2] + d) *
                               kv_value(&pr, &k, pr.k_descale, b, k_row0, j, kv, d, fault);
                    scores[j] = dot * pr.softmax_scale;
                    if (pr.softcap > 0.f)
                        scores[j] = pr.softcap * tanh(scores[j] / pr.softcap);
                    top = fmax(top, scores[j]);
                }
                double sum = pr.sinks ? exp(pr.sinks[h] - top) : 0.0;
                for (int j = keys.begin; j < keys.end; j++)
                    sum += exp(scores[j] - top);
                const int64_t o_row = pr.varlen ? (int64_t)(q_row0 + i) * pr.o_stride[1]
                                                : b * pr.o_stride[0] + i * pr.o_stride[1];
                for (int d = 0; d < D; d++) {
                    double o = 0;
                    for (int j = keys.begin; j < keys.end; j++)
                        o += exp(scores[j] - top) / sum * kv_value(&pr, &v, pr.v_descale, b, k_row0, j, kv, d, fault);
                    const uint16_t bits = fc_float_to_storage(pr.dtype, (float)o);
                    memcpy((char *)pr.out + (o_row + h * pr.o_stride[2] + d) * 2, &bits, 2);
                }
                if (pr.lse) {   /* dense [batch, heads_q, seqlen_q]; varlen [heads_q, tokens] */
                    const int64_t at = pr.varlen ? (int64_t)h * pr.seqlen_q + q_row0 + i
                                                 : ((int64_t)b * pr.heads_q + h) * pr.seqlen_q + i;
                    pr.lse[at] = isinf(top) ? (float)top : (float)(top + log(sum));
                }
            }
    }
    free(scores);
}

/* ---- the cases ---- */

static const int LENS_Q[] = {5, 0, 1, 9}, LENS_K[] = {40, 7, 0, 33}, USED_K[] = {30, 7, 0, 1};
static const int DENSE_USED[] = {37, 0, 12};

static struct fc_check_case base_case(enum fc_dtype dtype, int fp8, int head_dim)
{
    struct fc_check_case c;
    memset(&c, 0, sizeof c);
    fc_attention_params_init(&c.shape);
    c.shape.dtype = dtype;
    c.shape.kv_dtype = fp8 ? FC_E4M3 : FC_DTYPE_SAME;
    c.shape.batch = 3;
    c.shape.seqlen_q = 6;
    c.shape.seqlen_k = 41;
    c.shape.heads_q = 4;
    c.shape.heads_kv = 2;
    c.shape.head_dim = head_dim;
    c.want_lse = 1;
    c.seed = 11;
    c.kv_descale = fp8 ? 1.f / 64 : 0.f;
    return c;
}

/* Each form of a check: dense packed and BHSD, seqused_k, varlen, paged (packed and BHSD pages, dense
 * and varlen queries), with masks, sinks and a softcap among them. */
#define FORMS 7
static struct fc_check_case form_case(int form, enum fc_dtype dtype, int fp8)
{
    struct fc_check_case c = base_case(dtype, fp8, form % 2 ? 32 : 64);
    switch (form) {
    case 0: break;
    case 1: c.layout = FC_LAYOUT_BHSD; c.shape.causal = 1; c.sinks_magnitude = 1.f; break;
    case 2: c.used_k = DENSE_USED; c.shape.window_left = 5; c.shape.softcap = 3.f; break;
    case 3: c.shape.batch = 4; c.lens_q = LENS_Q; c.lens_k = LENS_K; c.used_k = USED_K; c.shape.causal = 1; break;
    case 4: c.page_size = 8; break;
    case 5: c.page_size = 7; c.layout = FC_LAYOUT_BHSD; c.used_k = DENSE_USED; break;
    default: c.shape.batch = 4; c.lens_q = LENS_Q; c.used_k = USED_K; c.page_size = 16; c.shape.seqlen_k = 40; break;
    }
    return c;
}

/* Prepares the case, runs the host forward pass with the fault, downloads and verifies. */
static int check_passes(const struct fc_check_case *c, enum fault fault, struct fc_error_stats *stats)
{
    struct fc_check_run run;
    char msg[FC_MESSAGE_MAX] = "";
    const int before = live_allocations;
    enum fc_status status = fc_check_prepare(&host_context, c, &run, msg, sizeof msg);
    if (status != FC_OK)
        fail_msg("fc_check_prepare: %s: %s", fc_status_name(status), msg);
    host_forward(&run.params, fault);
    assert_int_equal(fc_check_download(&run, msg, sizeof msg), FC_OK);
    const int passed = fc_check_verify(&run, stats);
    fc_check_release(&run);
    assert_int_equal(live_allocations, before);   /* every device buffer freed */
    return passed;
}

/* The attention flashcore.h describes passes the check in every form, 16-bit and FP8 K/V (with and
 * without descales), f16 and bf16: the check's uploads are what its params say. */
static void test_correct_forward_passes_in_every_form(void **state)
{
    (void)state;
    for (int form = 0; form < FORMS; form++)
        for (int fp8 = 0; fp8 <= 2; fp8++)
            for (int dtype = FC_F16; dtype <= FC_BF16; dtype++) {
                struct fc_check_case c = form_case(form, (enum fc_dtype)dtype, fp8 > 0);
                c.kv_descale = fp8 == 2 ? 0.f : c.kv_descale;   /* FP8 without descale arrays */
                struct fc_error_stats e;
                if (!check_passes(&c, NO_FAULT, &e))
                    fail_msg("form %d fp8 %d dtype %d: err %g native %g lse %g bad %lld", form, fp8, dtype,
                             e.max_error, e.native_error, e.max_lse_error, e.bad_rows);
                assert_true(e.rows > 0);
            }
}

/* FP8 inputs as the case asks: K/V one byte an element (BHSD rows padded by 16 of them), NaN (0x7f)
 * in the padding and the poisoned rows, descales per (sequence, K/V head), not all alike, positive,
 * within a factor 2 of kv_descale, on the device beside the params. */
static void test_fp8_inputs_are_e4m3_with_descales(void **state)
{
    (void)state;
    struct fc_check_case c = form_case(5, FC_BF16, 1);   /* paged BHSD pages of 7, seqused_k */
    struct fc_check_run run;
    char msg[FC_MESSAGE_MAX] = "";
    assert_int_equal(fc_check_prepare(&host_context, &c, &run, msg, sizeof msg), FC_OK);
    const struct fc_attention_params *p = &run.params;
    assert_int_equal(p->kv_dtype, FC_E4M3);
    assert_int_equal(run.kv_bytes, 1);
    assert_int_equal(p->k_stride[1], 32 + 16);   /* head_dim 32 + 16 e4m3 of padding */
    assert_int_equal(p->q_stride[1], 32 + 8);    /* q stays 16-bit: 8 of them */
    assert_null(run.host_k);
    const uint8_t *k = (const uint8_t *)p->k;
    size_t nan = 0, padding_nan = 0;
    for (size_t i = 0; i < run.kv_elements; i++) {
        nan += (k[i] & 0x7f) == 0x7f;
        padding_nan += (size_t)(i % (size_t)p->k_stride[1]) >= 32 && k[i] == 0x7f;
    }
    assert_int_equal(padding_nan, run.kv_elements / (size_t)p->k_stride[1] * 16);
    assert_true(nan > padding_nan);   /* and the slots no used key owns */
    const size_t count = (size_t)p->batch * p->heads_kv;
    int differ = 0;
    for (size_t i = 0; i < count; i++) {
        const float scales[2] = {p->k_descale[i], p->v_descale[i]};
        for (int t = 0; t < 2; t++)
            assert_true(scales[t] >= c.kv_descale / 2 && scales[t] <= c.kv_descale * 2);
        assert_true(scales[0] == run.host_k_descale[i] && scales[1] == run.host_v_descale[i]);
        differ += scales[0] != p->k_descale[0] || scales[1] != p->v_descale[0];
    }
    assert_true(differ > 0);
    fc_check_release(&run);
    /* no descales: NULL pointers; a descale magnitude with 16-bit K/V is no case */
    c.kv_descale = 0.f;
    assert_int_equal(fc_check_prepare(&host_context, &c, &run, msg, sizeof msg), FC_OK);
    assert_null(run.params.k_descale);
    assert_null(run.params.v_descale);
    fc_check_release(&run);
    c = form_case(0, FC_F16, 0);
    c.kv_descale = 0.5f;
    assert_int_equal(fc_check_prepare(&host_context, &c, &run, msg, sizeof msg), FC_ERR_INVALID_ARG);
    assert_non_null(strstr(msg, "kv_descale"));
    fc_check_release(&run);
}

/* What a kernel gets wrong fails the check: one sequence's descales used for every sequence (FP8),
 * a key past seqused_k or the sequence read (its NaN shows). */
static void test_faults_fail_the_check(void **state)
{
    (void)state;
    struct fc_error_stats e;
    static const int FP8_FORMS[] = {0, 3, 6};   /* dense, varlen, varlen paged */
    for (size_t f = 0; f < sizeof FP8_FORMS / sizeof FP8_FORMS[0]; f++) {
        struct fc_check_case c = form_case(FP8_FORMS[f], FC_F16, 1);
        if (check_passes(&c, FIRST_SEQUENCE_DESCALE, &e))
            fail_msg("form %d: the first sequence's descales everywhere passed (err %g native %g)", FP8_FORMS[f],
                     e.max_error, e.native_error);
    }
    static const int POISONED_FORMS[] = {2, 3, 5, 6};   /* seqused_k, varlen, paged */
    for (size_t f = 0; f < sizeof POISONED_FORMS / sizeof POISONED_FORMS[0]; f++)
        for (int fp8 = 0; fp8 <= 1; fp8++) {
            struct fc_check_case c = form_case(POISONED_FORMS[f], FC_BF16, fp8);
            c.shape.window_left = -1;   /* every row's last key the sequence's: the next is poisoned */
            c.shape.causal = 0;
            c.check_rows = 0;           /* every row */
            assert_false(check_passes(&c, LAST_KEY_PAST_USED, &e));
            assert_true(e.bad_rows > 0);
        }
}

/* A run checked again (fcjit tune's next candidate) judges the same sampled rows by the references
 * its first check computed and kept: the same verdict and figures on the same output, and a fault in
 * a later output still fails; with more sampled rows than a run keeps, each check computes them. */
static void test_later_checks_reuse_the_references(void **state)
{
    (void)state;
    for (int many = 0; many <= 1; many++) {
        struct fc_check_case c = form_case(many ? 0 : 3, FC_BF16, 0);   /* varlen, or dense with every row */
        c.check_rows = many ? 0 : 7;
        if (many) {   /* every row: more than a run keeps */
            c.shape.seqlen_q = 2 * FC_CHECK_ROWS_KEPT / (c.shape.batch * c.shape.heads_q) + 1;
            c.shape.seqlen_k = 9;
        }
        struct fc_check_run run;
        char msg[FC_MESSAGE_MAX] = "";
        assert_int_equal(fc_check_prepare(&host_context, &c, &run, msg, sizeof msg), FC_OK);
        host_forward(&run.params, NO_FAULT);
        assert_int_equal(fc_check_download(&run, msg, sizeof msg), FC_OK);
        struct fc_error_stats first, again;
        assert_true(fc_check_verify(&run, &first));
        assert_int_equal(fc_check_kept_rows(&run), many ? 0 : 7);   /* kept, or not */
        assert_true(fc_check_verify(&run, &again));
        assert_memory_equal(&first, &again, sizeof first);
        /* a later candidate's output with one element off in the first row (always sampled) */
        const uint16_t bits = fc_float_to_storage(FC_BF16, fc_storage_to_float(FC_BF16, run.host_out[0]) + 0.5f);
        run.host_out[0] = bits;
        assert_false(fc_check_verify(&run, &again));
        assert_true(again.max_error > first.max_error);
        fc_check_release(&run);
    }
}

/* Inputs over many of the generator's blocks (drawn on threads): the same seed gives the same bits,
 * another seed others, the blocks are not copies of one another, and the values are N(0, 1). */
static void test_inputs_are_the_seeds_on_any_thread(void **state)
{
    (void)state;
    struct fc_check_case c;
    memset(&c, 0, sizeof c);
    fc_attention_params_init(&c.shape);
    c.shape.dtype = FC_BF16;
    c.shape.batch = 1;
    c.shape.seqlen_q = c.shape.seqlen_k = 4096;
    c.shape.heads_q = c.shape.heads_kv = 8;
    c.shape.head_dim = 64;   /* 2M elements a tensor: several blocks */
    c.layout = FC_LAYOUT_PACKED;
    c.check_rows = 8;
    c.seed = 11;
    struct fc_check_run a, b;
    char msg[FC_MESSAGE_MAX] = "";
    assert_int_equal(fc_check_prepare(&host_context, &c, &a, msg, sizeof msg), FC_OK);
    assert_int_equal(fc_check_prepare(&host_context, &c, &b, msg, sizeof msg), FC_OK);
    const size_t n = (size_t)4096 * 8 * 64, block = (size_t)1 << 18;
    assert_memory_equal(a.host_q, b.host_q, n * 2);
    assert_memory_equal(a.host_k, b.host_k, n * 2);
    assert_memory_equal(a.host_v, b.host_v, n * 2);
    assert_memory_not_equal(a.host_q, a.host_k, 64);
    assert_memory_not_equal(a.host_q, a.host_q + block, 64);
    assert_memory_not_equal(a.host_k + block, a.host_k + 2 * block, 64);
    double sum = 0, squares = 0;
    for (size_t i = 0; i < n; i++) {
        const double x = fc_storage_to_float(FC_BF16, a.host_v[i]);
        sum += x;
        squares += x * x;
    }
    assert_true(fabs(sum / n) < 0.01 && fabs(squares / n - 1.0) < 0.01);
    fc_check_release(&b);
    c.seed = 12;
    assert_int_equal(fc_check_prepare(&host_context, &c, &b, msg, sizeof msg), FC_OK);
    assert_memory_not_equal(a.host_q, b.host_q, 64);
    fc_check_release(&a);
    fc_check_release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_correct_forward_passes_in_every_form),
        cmocka_unit_test(test_fp8_inputs_are_e4m3_with_descales),
        cmocka_unit_test(test_faults_fail_the_check),
        cmocka_unit_test(test_later_checks_reuse_the_references),
        cmocka_unit_test(test_inputs_are_the_seeds_on_any_thread),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
