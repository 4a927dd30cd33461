/* The CPU reference every GPU check is judged against (src/reference_cpu.c): its fp64 answer per
 * row against attention written out here from the public semantics (flashcore.h) for small random
 * problems with windows, sinks and softcaps, and the rules of fc_error_accumulate for the rows that see no
 * key. No GPU. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "problem_internal.h"
#include "reference_cpu_internal.h"

#define MAX_KEYS 64
#define MAX_DIM 32

/* One problem with its inputs, as check.c builds it: the library's own shape rules resolve the mask. */
struct setup {
    struct fc_attention_params params;
    struct fc_host_problem host;
    uint16_t q[2 * MAX_KEYS * 4 * MAX_DIM], k[2 * MAX_KEYS * 2 * MAX_DIM], v[2 * MAX_KEYS * 2 * MAX_DIM];
    float sinks[4];
};

static void make(struct setup *s, int seqlen_q, int seqlen_k, int causal, int left, int right, float sink_scale,
                 float softcap, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    struct fc_attention_params *p = &s->params;
    fc_attention_params_init(p);
    p->dtype = FC_BF16;
    p->batch = 2;
    p->heads_q = 4;
    p->heads_kv = 2;
    p->head_dim = 16;
    p->seqlen_q = seqlen_q;
    p->seqlen_k = seqlen_k;
    p->causal = causal;
    p->window_left = left;
    p->window_right = right;
    p->softcap = softcap;
    struct fc_problem problem;
    char msg[512];
    assert_int_equal(fc_problem_shape(p, &problem, msg, sizeof msg), FC_OK);
    struct fc_random random;
    fc_random_seed(&random, seed);
    const size_t nq = (size_t)p->batch * seqlen_q * p->heads_q * p->head_dim;
    const size_t nk = (size_t)p->batch * seqlen_k * p->heads_kv * p->head_dim;
    for (size_t i = 0; i < nq; i++)
        s->q[i] = fc_float_to_bf16((float)fc_random_normal(&random));
    for (size_t i = 0; i < nk; i++) {
        s->k[i] = fc_float_to_bf16((float)fc_random_normal(&random));
        s->v[i] = fc_float_to_bf16((float)fc_random_normal(&random));
    }
    for (int h = 0; h < p->heads_q; h++)
        s->sinks[h] = (float)fc_random_normal(&random) * sink_scale;
    s->host = (struct fc_host_problem){p->dtype, p->batch, seqlen_q, seqlen_k, p->heads_q, p->heads_kv,
                                       p->head_dim, problem.mask, problem.softmax_scale, s->q, s->k, s->v,
                                       sink_scale != 0.f ? s->sinks : NULL, p->softcap, NULL, NULL, NULL, 0, 0, NULL};
}

/* Whether row i sees key j, from flashcore.h's words: around the diagonal d = i + Sk - Sq. */
static int sees(const struct fc_attention_params *p, int i, int j)
{
    const long d = (long)i + p->seqlen_k - p->seqlen_q;
    const int right = p->causal ? 0 : p->window_right;
    return j >= 0 && j < p->seqlen_k && (p->window_left < 0 || j >= d - p->window_left) &&
           (right < 0 || j <= d + right);
}

static double at(const struct setup *s, const uint16_t *t, int heads, int seqlen, int b, int row, int h, int d)
{
    return fc_bf16_to_float(t[(((size_t)b * seqlen + row) * heads + h) * s->params.head_dim + d]);
}

/* Softmax over the (capped) scores of the keys row i sees and the head's sink, written out directly. */
static void expected_row(const struct setup *s, int b, int h, int i, double *out, double *lse, int *keys)
{
    const struct fc_attention_params *p = &s->params;
    const int kv = h / (p->heads_q / p->heads_kv);
    double score[MAX_KEYS], top = s->host.sinks ? s->host.sinks[h] : -INFINITY;
    *keys = 0;
    for (int j = 0; j < p->seqlen_k; j++) {
        score[j] = -INFINITY;
        if (!sees(p, i, j))
            continue;
        double dot = 0;
        for (int d = 0; d < p->head_dim; d++)
            dot += at(s, s->q, p->heads_q, p->seqlen_q, b, i, h, d) * at(s, s->k, p->heads_kv, p->seqlen_k, b, j, kv, d);
        score[j] = dot * s->host.softmax_scale;
        if (p->softcap > 0.f)
            score[j] = p->softcap * tanh(score[j] / p->softcap);
        top = fmax(top, score[j]);
        ++*keys;
    }
    double sum = s->host.sinks ? exp(s->host.sinks[h] - top) : 0;
    for (int j = 0; j < p->seqlen_k; j++)
        sum += exp(score[j] - top);
    *lse = isinf(top) ? top : top + log(sum);
    for (int d = 0; d < p->head_dim; d++) {
        out[d] = 0;
        for (int j = 0; j < p->seqlen_k && *keys; j++)
            out[d] += exp(score[j] - top) / sum * at(s, s->v, p->heads_kv, p->seqlen_k, b, j, kv, d);
    }
}

/* Every row of one problem against the written-out attention. */
static void check_problem(const struct setup *s)
{
    const struct fc_attention_params *p = &s->params;
    double scratch[2 * MAX_KEYS], values[2 * MAX_DIM], expected[MAX_DIM];
    struct fc_row_reference row = {0, 0, values, values + MAX_DIM};
    for (int b = 0; b < p->batch; b++)
        for (int h = 0; h < p->heads_q; h++)
            for (int i = 0; i < p->seqlen_q; i++) {
                double lse;
                int keys;
                fc_reference_row(&s->host, b, h, i, &row, scratch);
                expected_row(s, b, h, i, expected, &lse, &keys);
                if (row.visible_keys != keys || !(row.lse == lse || fabs(row.lse - lse) < 1e-9))
                    fail_msg("Sq %d Sk %d causal %d window (%d, %d) row %d: %d keys lse %g, expected %d and %g",
                             p->seqlen_q, p->seqlen_k, p->causal, p->window_left, p->window_right, i,
                             row.visible_keys, row.lse, keys, lse);
                for (int d = 0; d < p->head_dim; d++) {
                    if (fabs(row.out[d] - expected[d]) > 1e-9)
                        fail_msg("row %d dim %d: %g, expected %g", i, d, row.out[d], expected[d]);
                    if (fabs(row.native[d] - expected[d]) > 0.1)   /* bf16 all the way: within its error */
                        fail_msg("row %d dim %d: native %g, expected %g", i, d, row.native[d], expected[d]);
                }
            }
}

static void test_reference_follows_the_public_semantics(void **state)
{
    (void)state;
    static const int SEQLENS[][2] = {{1, 1}, {7, 7}, {5, 17}, {17, 5}, {33, 64}};
    static const int WINDOWS[][3] = {   /* causal, left, right */
        {0, -1, -1}, {1, -1, -1}, {1, 3, -1}, {0, 3, 2}, {0, -1, 0}, {0, 0, 0}, {0, 2, 40}, {0, 40, 1}, {1, 0, 0},
    };
    static const float SINKS[] = {0.f, 1.f, 20.f};   /* none, N(0, 1), large (+20-ish and -20-ish) */
    static const float SOFTCAPS[] = {0.f, 0.5f, 20.f};   /* none, one that bites, a loose one */
    uint64_t seed = 1;
    for (size_t n = 0; n < sizeof SEQLENS / sizeof SEQLENS[0]; n++)
        for (size_t w = 0; w < sizeof WINDOWS / sizeof WINDOWS[0]; w++)
            for (size_t k = 0; k < sizeof SINKS / sizeof SINKS[0]; k++)
                for (size_t c = 0; c < sizeof SOFTCAPS / sizeof SOFTCAPS[0]; c++) {
                    struct setup *s = malloc(sizeof *s);
                    assert_non_null(s);
                    make(s, SEQLENS[n][0], SEQLENS[n][1], WINDOWS[w][0], WINDOWS[w][1], WINDOWS[w][2], SINKS[k],
                         SOFTCAPS[c], seed++);
                    check_problem(s);
                    free(s);
                }
}

/* A row that sees no key: out 0, and lse -inf, or its sink when there are sinks; the error rule
 * takes exactly that, and a large positive sink leaves a finite LSE and a small out. */
static void test_rows_without_keys_and_large_sinks(void **state)
{
    (void)state;
    struct setup *s = malloc(sizeof *s);
    assert_non_null(s);
    make(s, 17, 5, 1, -1, -1, 1.f, 0.f, 7);   /* causal, Sq > Sk: rows 0-11 see no key */
    s->sinks[0] = 30.f;
    double scratch[2 * MAX_KEYS], values[2 * MAX_DIM];
    struct fc_row_reference row = {0, 0, values, values + MAX_DIM};
    fc_reference_row(&s->host, 0, 0, 3, &row, scratch);
    assert_int_equal(row.visible_keys, 0);
    assert_true(row.lse == 30.0);
    uint16_t zeros[MAX_DIM] = {0}, ones[MAX_DIM];
    for (int d = 0; d < MAX_DIM; d++)
        ones[d] = fc_float_to_bf16(1.f);
    struct fc_error_stats stats;
    memset(&stats, 0, sizeof stats);
    float lse = 30.f;
    fc_error_accumulate(&stats, &s->host, &row, zeros, &lse);
    assert_int_equal(stats.bad_rows, 0);
    lse = 29.f;
    fc_error_accumulate(&stats, &s->host, &row, zeros, &lse);
    assert_int_equal(stats.bad_rows, 0);
    assert_true(stats.max_lse_error > 0.9);
    lse = -INFINITY;   /* the sink forgotten */
    fc_error_accumulate(&stats, &s->host, &row, zeros, &lse);
    assert_int_equal(stats.bad_rows, 1);
    fc_error_accumulate(&stats, &s->host, &row, ones, NULL);   /* a value where there is none */
    assert_int_equal(stats.bad_rows, 2);
    fc_reference_row(&s->host, 0, 0, 16, &row, scratch);   /* the last row: every key, and a sink of 30 */
    assert_int_equal(row.visible_keys, 5);
    assert_true(row.lse > 30.0 && row.lse < 30.1);
    for (int d = 0; d < s->params.head_dim; d++)
        assert_true(fabs(row.out[d]) < 1e-6);
    s->host.sinks = NULL;   /* without sinks: -inf */
    fc_reference_row(&s->host, 0, 0, 3, &row, scratch);
    assert_true(isinf(row.lse) && row.lse < 0);
    free(s);
}


/* A ragged batch (lengths 0 included) and seqused_k: each sequence's rows as the varlen host
 * problem computes them equal the rows of that sequence alone as a dense problem of its own
 * lengths (causal bottom-right aligned on them, a window too); seqused_k keys as a shorter one. */
#define VARLEN_SEQUENCES 5
static void check_varlen(int causal, int left)
{
    static const int lens_q[VARLEN_SEQUENCES] = {7, 0, 1, 20, 13}, lens_k[VARLEN_SEQUENCES] = {9, 5, 0, 20, 30};
    static const int used_k[VARLEN_SEQUENCES] = {9, 3, 0, 17, 1};
    enum { HQ = 4, HKV = 2, D = 16 };
    static uint16_t q[64 * HQ * D], k[90 * HKV * D], v[90 * HKV * D];
    int32_t cu_q[VARLEN_SEQUENCES + 1] = {0}, cu_k[VARLEN_SEQUENCES + 1] = {0};
    for (int b = 0; b < VARLEN_SEQUENCES; b++) {
        cu_q[b + 1] = cu_q[b] + lens_q[b];
        cu_k[b + 1] = cu_k[b] + lens_k[b];
    }
    struct fc_random random;
    fc_random_seed(&random, 77);
    for (size_t i = 0; i < sizeof q / 2; i++)
        q[i] = fc_float_to_bf16((float)fc_random_normal(&random));
    for (size_t i = 0; i < sizeof k / 2; i++) {
        k[i] = fc_float_to_bf16((float)fc_random_normal(&random));
        v[i] = fc_float_to_bf16((float)fc_random_normal(&random));
    }
    struct fc_attention_params p;
    fc_attention_params_init(&p);
    p.dtype = FC_BF16;
    p.batch = VARLEN_SEQUENCES;
    p.seqlen_q = cu_q[VARLEN_SEQUENCES] + 3;   /* three tokens of no sequence */
    p.seqlen_k = cu_k[VARLEN_SEQUENCES];
    p.max_seqlen_q = 20;
    p.max_seqlen_k = 30;
    p.heads_q = HQ;
    p.heads_kv = HKV;
    p.head_dim = D;
    p.causal = causal;
    p.window_left = left;
    struct fc_problem problem;
    char msg[512];
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    for (int used = 0; used < 2; used++) {
        const struct fc_host_problem varlen = {FC_BF16, p.batch, p.seqlen_q, p.seqlen_k, HQ, HKV, D, problem.mask,
                                               problem.softmax_scale, q, k, v, NULL, 0.f, cu_q, cu_k,
                                               used ? used_k : NULL, 0, 0, NULL};
        for (int b = 0; b < VARLEN_SEQUENCES; b++) {
            const struct fc_host_sequence seq = fc_host_sequence_of(&varlen, b);
            assert_int_equal(seq.len_k, used ? used_k[b] : lens_k[b]);
            /* the sequence alone: dense, batch 1, its own lengths (keys: the used ones) */
            struct fc_attention_params one = p;
            one.batch = 1;
            one.seqlen_q = lens_q[b] > 0 ? lens_q[b] : 1;
            one.seqlen_k = seq.len_k > 0 ? seq.len_k : 1;
            one.max_seqlen_q = one.max_seqlen_k = 0;
            struct fc_problem alone;
            assert_int_equal(fc_problem_shape(&one, &alone, msg, sizeof msg), FC_OK);
            const struct fc_host_problem dense = {FC_BF16, 1, one.seqlen_q, one.seqlen_k, HQ, HKV, D, alone.mask,
                                                  alone.softmax_scale, q + (size_t)cu_q[b] * HQ * D,
                                                  k + (size_t)cu_k[b] * HKV * D, v + (size_t)cu_k[b] * HKV * D,
                                                  NULL, 0.f, NULL, NULL, NULL, 0, 0, NULL};
            for (int h = 0; h < HQ; h++)
                for (int i = 0; i < lens_q[b]; i++) {
                    double scratch[2 * 128], values[4 * D];
                    struct fc_row_reference got = {0, 0, values, values + D}, want = {0, 0, values + 2 * D, values + 3 * D};
                    fc_reference_row(&varlen, b, h, i, &got, scratch);
                    if (seq.len_k == 0) {   /* no key: out 0, lse -inf */
                        assert_int_equal(got.visible_keys, 0);
                        assert_true(isinf(got.lse) && got.lse < 0);
                        continue;
                    }
                    fc_reference_row(&dense, 0, h, i, &want, scratch);
                    assert_int_equal(got.visible_keys, want.visible_keys);
                    assert_true(got.lse == want.lse || (isinf(got.lse) && isinf(want.lse)));
                    for (int d = 0; d < D; d++) {
                        assert_true(got.out[d] == want.out[d]);
                        assert_true(got.native[d] == want.native[d]);
                    }
                }
        }
    }
}

static void test_varlen_is_each_sequence_alone(void **state)
{
    (void)state;
    check_varlen(0, -1);
    check_varlen(1, -1);
    check_varlen(1, 4);
    check_varlen(0, 2);
}

/* A paged cache: the rows the host problem computes through a page table (pages in a shuffled
 * order, unused slots NaN) equal those of the same keys laid out contiguously, for page sizes
 * that do and do not divide the keys, dense and varlen queries, with and without seqused_k. */
#define PAGED_SEQUENCES 3
#define PAGED_KEYS 37
static void check_paged(int page_size, int causal, int varlen, int used)
{
    enum { HQ = 4, HKV = 2, D = 16, SQ = 5 };
    static const int used_k[PAGED_SEQUENCES] = {37, 0, 20}, lens_q[PAGED_SEQUENCES] = {5, 1, 3};
    const int per_sequence = (PAGED_KEYS + page_size - 1) / page_size, stride = per_sequence + 2;
    const int pages = PAGED_SEQUENCES * per_sequence + 2;
    const size_t row = (size_t)HKV * D;
    static uint16_t q[PAGED_SEQUENCES * SQ * HQ * D], k[PAGED_SEQUENCES * PAGED_KEYS * HKV * D],
        v[PAGED_SEQUENCES * PAGED_KEYS * HKV * D];
    uint16_t *paged_k = malloc((size_t)pages * page_size * row * 2), *paged_v = malloc((size_t)pages * page_size * row * 2);
    int32_t *table = malloc((size_t)PAGED_SEQUENCES * stride * sizeof(int32_t)), *pool = malloc((size_t)pages * sizeof(int32_t));
    assert_non_null(paged_k);
    assert_non_null(paged_v);
    assert_non_null(table);
    assert_non_null(pool);
    struct fc_random random;
    fc_random_seed(&random, 1234u + (unsigned)page_size);
    for (size_t i = 0; i < sizeof q / 2; i++)
        q[i] = fc_float_to_bf16((float)fc_random_normal(&random));
    for (size_t i = 0; i < sizeof k / 2; i++) {
        k[i] = fc_float_to_bf16((float)fc_random_normal(&random));
        v[i] = fc_float_to_bf16((float)fc_random_normal(&random));
    }
    for (size_t i = 0; i < (size_t)pages * page_size * row; i++)
        paged_k[i] = paged_v[i] = 0x7fff;   /* NaN: a slot no key owns */
    for (int i = 0; i < pages; i++)
        pool[i] = i;
    for (int i = pages - 1; i > 0; i--) {
        const int j = (int)fc_random_below(&random, (uint64_t)i + 1), t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
    }
    for (int b = 0, next = 0; b < PAGED_SEQUENCES; b++)
        for (int e = 0; e < stride; e++) {
            table[b * stride + e] = e < per_sequence ? pool[next++] : -1;   /* past its pages: never read */
            for (int slot = 0; e < per_sequence && slot < page_size; slot++) {
                const int key = e * page_size + slot;
                if (key >= PAGED_KEYS)
                    break;
                const size_t from = ((size_t)b * PAGED_KEYS + key) * row;
                const size_t to = ((size_t)table[b * stride + e] * page_size + slot) * row;
                memcpy(paged_k + to, k + from, row * 2);
                memcpy(paged_v + to, v + from, row * 2);
            }
        }
    int32_t cu_q[PAGED_SEQUENCES + 1] = {0}, cu_k[PAGED_SEQUENCES + 1] = {0};
    for (int b = 0; b < PAGED_SEQUENCES; b++) {
        cu_q[b + 1] = cu_q[b] + lens_q[b];
        cu_k[b + 1] = cu_k[b] + PAGED_KEYS;
    }
    struct fc_attention_params p;
    fc_attention_params_init(&p);
    p.dtype = FC_BF16;
    p.batch = PAGED_SEQUENCES;
    p.seqlen_q = varlen ? cu_q[PAGED_SEQUENCES] : SQ;
    p.seqlen_k = PAGED_KEYS;
    p.max_seqlen_q = varlen ? SQ : 0;
    p.max_seqlen_k = varlen ? PAGED_KEYS : 0;
    p.heads_q = HQ;
    p.heads_kv = HKV;
    p.head_dim = D;
    p.causal = causal;
    p.page_size = page_size;
    p.page_table_stride = stride;
    p.num_pages = pages;
    struct fc_problem problem;
    char msg[512];
    assert_int_equal(fc_problem_shape(&p, &problem, msg, sizeof msg), FC_OK);
    const struct fc_host_problem paged = {FC_BF16, p.batch, p.seqlen_q, p.seqlen_k, HQ, HKV, D, problem.mask,
                                          problem.softmax_scale, q, paged_k, paged_v, NULL, 0.f,
                                          varlen ? cu_q : NULL, NULL, used ? used_k : NULL, page_size, stride, table};
    /* the same keys contiguous: dense [batch, keys, ...], or varlen with cu_seqlens_k */
    const struct fc_host_problem contiguous = {FC_BF16, p.batch, p.seqlen_q, varlen ? cu_k[PAGED_SEQUENCES] : p.seqlen_k,
                                               HQ, HKV, D, problem.mask, problem.softmax_scale, q, k, v, NULL, 0.f,
                                               varlen ? cu_q : NULL, varlen ? cu_k : NULL, used ? used_k : NULL,
                                               0, 0, NULL};
    for (int b = 0; b < PAGED_SEQUENCES; b++) {
        assert_int_equal(fc_host_sequence_of(&paged, b).len_k, used ? used_k[b] : PAGED_KEYS);
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < (varlen ? lens_q[b] : SQ); i++) {
                double scratch[2 * 128], values[4 * D];
                struct fc_row_reference got = {0, 0, values, values + D}, want = {0, 0, values + 2 * D, values + 3 * D};
                fc_reference_row(&paged, b, h, i, &got, scratch);
                fc_reference_row(&contiguous, b, h, i, &want, scratch);
                assert_int_equal(got.visible_keys, want.visible_keys);
                assert_true(got.lse == want.lse || (isinf(got.lse) && isinf(want.lse)));
                for (int d = 0; d < D; d++) {
                    assert_false(isnan(got.out[d]));
                    assert_true(got.out[d] == want.out[d]);
                    assert_true(got.native[d] == want.native[d]);
                }
            }
    }
    free(paged_k);
    free(paged_v);
    free(table);
    free(pool);
}

static void test_paged_is_the_same_keys_contiguous(void **state)
{
    (void)state;
    static const int page_sizes[] = {1, 7, 16, 64};
    for (size_t n = 0; n < sizeof page_sizes / sizeof page_sizes[0]; n++)
        for (int causal = 0; causal < 2; causal++)
            for (int varlen = 0; varlen < 2; varlen++)
                for (int used = 0; used < 2; used++)
                    check_paged(page_sizes[n], causal, varlen, used);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_follows_the_public_semantics),
        cmocka_unit_test(test_rows_without_keys_and_large_sinks),
        cmocka_unit_test(test_varlen_is_each_sequence_alone),
        cmocka_unit_test(test_paged_is_the_same_keys_contiguous),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
