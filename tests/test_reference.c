/* The CPU reference every GPU check is judged against (src/reference_cpu.c): its fp64 answer per
 * row against attention written out here from the public semantics (flashcore.h) for small random
 * problems with windows, sinks, softcaps and FP8 K/V, and the rules of fc_error_accumulate for the
 * rows that see no key; the e4m3 conversions, every code. No GPU. */
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
    uint8_t k8[2 * MAX_KEYS * 2 * MAX_DIM], v8[2 * MAX_KEYS * 2 * MAX_DIM];   /* make_fp8: e4m3 K/V */
    float k_descale[2 * 2], v_descale[2 * 2];                                 /* [batch, heads_kv] */
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
    s->host = (struct fc_host_problem){.dtype = p->dtype, .batch = p->batch, .seqlen_q = seqlen_q,
                                       .seqlen_k = seqlen_k, .heads_q = p->heads_q, .heads_kv = p->heads_kv,
                                       .head_dim = p->head_dim, .mask = problem.mask,
                                       .softmax_scale = problem.softmax_scale, .q = s->q, .k = s->k, .v = s->v,
                                       .sinks = sink_scale != 0.f ? s->sinks : NULL, .softcap = p->softcap};
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

/* Element (b, key j, K/V head h, d) of K (values 0) or V (1); FP8 K/V: flashcore.h's words, the
 * descale of (b, h) times the e4m3 value. */
static double kv_at(const struct setup *s, int values, int b, int j, int h, int d)
{
    const struct fc_attention_params *p = &s->params;
    if (!s->host.kv_fp8)
        return at(s, values ? s->v : s->k, p->heads_kv, p->seqlen_k, b, j, h, d);
    const size_t index = (((size_t)b * p->seqlen_k + j) * p->heads_kv + h) * p->head_dim + d;
    const float *descale = s->host.k_descale ? (values ? s->v_descale : s->k_descale) : NULL;
    return (descale ? descale[b * p->heads_kv + h] : 1.0) * fc_e4m3_to_float((values ? s->v8 : s->k8)[index]);
}

/* Turns a made problem's K and V into an FP8 cache: the e4m3 codes of value / descale, with the
 * descales of each (batch, K/V head) given (NULL: none, 1). */
static void make_fp8(struct setup *s, const float *k_descale, const float *v_descale)
{
    const struct fc_attention_params *p = &s->params;
    const size_t row = (size_t)p->heads_kv * p->head_dim, keys = (size_t)p->batch * p->seqlen_k * row;
    for (size_t i = 0; i < keys; i++) {
        const size_t head = (i / row) / p->seqlen_k * p->heads_kv + i % row / p->head_dim;   /* b * heads_kv + h */
        s->k8[i] = fc_float_to_e4m3(fc_bf16_to_float(s->k[i]) / (k_descale ? k_descale[head] : 1.f));
        s->v8[i] = fc_float_to_e4m3(fc_bf16_to_float(s->v[i]) / (v_descale ? v_descale[head] : 1.f));
    }
    for (int i = 0; k_descale && i < p->batch * p->heads_kv; i++) {
        s->k_descale[i] = k_descale[i];
        s->v_descale[i] = v_descale[i];
    }
    s->host.k = s->host.v = NULL;   /* read no 16-bit K/V */
    s->host.kv_fp8 = 1;
    s->host.k8 = s->k8;
    s->host.v8 = s->v8;
    s->host.k_descale = k_descale ? s->k_descale : NULL;
    s->host.v_descale = v_descale ? s->v_descale : NULL;
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
            dot += at(s, s->q, p->heads_q, p->seqlen_q, b, i, h, d) * kv_at(s, 0, b, j, kv, d);
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
            out[d] += exp(score[j] - top) / sum * kv_at(s, 1, b, j, kv, d);
    }
}

/* Every row of one problem against the written-out attention. */
static void check_problem(const struct setup *s)
{
    const struct fc_attention_params *p = &s->params;
    double scratch[2 * MAX_KEYS], values[2 * MAX_DIM], expected[MAX_DIM];
    struct fc_row_reference row = {.out = values, .native = values + MAX_DIM};
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
    struct fc_row_reference row = {.out = values, .native = values + MAX_DIM};
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
 * lengths (causal bottom-right aligned on them, a window too); seqused_k keys as a shorter one.
 * FP8 K/V: each sequence's descales are its own ([sequences, heads_kv]), the alone problem's first. */
#define VARLEN_SEQUENCES 5
static void check_varlen(int causal, int left, int fp8)
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
    static uint8_t k8[sizeof k / 2], v8[sizeof v / 2];
    float k_descale[VARLEN_SEQUENCES * HKV], v_descale[VARLEN_SEQUENCES * HKV];
    for (int n = 0; n < VARLEN_SEQUENCES * HKV; n++) {   /* every (sequence, head) its own */
        k_descale[n] = 0.25f + 0.3f * (float)n;
        v_descale[n] = 2.f - 0.15f * (float)n;
    }
    for (int b = 0; b < VARLEN_SEQUENCES; b++)
        for (size_t i = (size_t)cu_k[b] * HKV * D; i < (size_t)cu_k[b + 1] * HKV * D; i++) {
            const int head = b * HKV + (int)(i / D % HKV);
            k8[i] = fc_float_to_e4m3(fc_bf16_to_float(k[i]) / k_descale[head]);
            v8[i] = fc_float_to_e4m3(fc_bf16_to_float(v[i]) / v_descale[head]);
        }
    struct fc_attention_params p;
    fc_attention_params_init(&p);
    p.dtype = FC_BF16;
    p.kv_dtype = fp8 ? FC_E4M3 : FC_DTYPE_SAME;
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
        const struct fc_host_problem varlen = {
            .dtype = FC_BF16, .batch = p.batch, .seqlen_q = p.seqlen_q, .seqlen_k = p.seqlen_k, .heads_q = HQ,
            .heads_kv = HKV, .head_dim = D, .mask = problem.mask, .softmax_scale = problem.softmax_scale, .q = q,
            .k = fp8 ? NULL : k, .v = fp8 ? NULL : v, .cu_seqlens_q = cu_q, .cu_seqlens_k = cu_k,
            .seqused_k = used ? used_k : NULL, .kv_fp8 = problem.kv_fp8, .k8 = fp8 ? k8 : NULL,
            .v8 = fp8 ? v8 : NULL, .k_descale = fp8 ? k_descale : NULL, .v_descale = fp8 ? v_descale : NULL,
        };
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
            const struct fc_host_problem dense = {
                .dtype = FC_BF16, .batch = 1, .seqlen_q = one.seqlen_q, .seqlen_k = one.seqlen_k, .heads_q = HQ,
                .heads_kv = HKV, .head_dim = D, .mask = alone.mask, .softmax_scale = alone.softmax_scale,
                .q = q + (size_t)cu_q[b] * HQ * D, .k = fp8 ? NULL : k + (size_t)cu_k[b] * HKV * D,
                .v = fp8 ? NULL : v + (size_t)cu_k[b] * HKV * D, .kv_fp8 = alone.kv_fp8,
                .k8 = fp8 ? k8 + (size_t)cu_k[b] * HKV * D : NULL, .v8 = fp8 ? v8 + (size_t)cu_k[b] * HKV * D : NULL,
                .k_descale = fp8 ? k_descale + b * HKV : NULL, .v_descale = fp8 ? v_descale + b * HKV : NULL,
            };
            for (int h = 0; h < HQ; h++)
                for (int i = 0; i < lens_q[b]; i++) {
                    double scratch[2 * 128], values[4 * D];
                    struct fc_row_reference got = {.out = values, .native = values + D},
                                            want = {.out = values + 2 * D, .native = values + 3 * D};
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
    for (int fp8 = 0; fp8 < 2; fp8++) {
        check_varlen(0, -1, fp8);
        check_varlen(1, -1, fp8);
        check_varlen(1, 4, fp8);
        check_varlen(0, 2, fp8);
    }
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
    const struct fc_host_problem paged = {
        .dtype = FC_BF16, .batch = p.batch, .seqlen_q = p.seqlen_q, .seqlen_k = p.seqlen_k, .heads_q = HQ,
        .heads_kv = HKV, .head_dim = D, .mask = problem.mask, .softmax_scale = problem.softmax_scale, .q = q,
        .k = paged_k, .v = paged_v, .cu_seqlens_q = varlen ? cu_q : NULL, .seqused_k = used ? used_k : NULL,
        .page_size = page_size, .page_table_stride = stride, .page_table = table,
    };
    /* the same keys contiguous: dense [batch, keys, ...], or varlen with cu_seqlens_k */
    const struct fc_host_problem contiguous = {
        .dtype = FC_BF16, .batch = p.batch, .seqlen_q = p.seqlen_q,
        .seqlen_k = varlen ? cu_k[PAGED_SEQUENCES] : p.seqlen_k, .heads_q = HQ, .heads_kv = HKV, .head_dim = D,
        .mask = problem.mask, .softmax_scale = problem.softmax_scale, .q = q, .k = k, .v = v,
        .cu_seqlens_q = varlen ? cu_q : NULL, .cu_seqlens_k = varlen ? cu_k : NULL,
        .seqused_k = used ? used_k : NULL,
    };
    for (int b = 0; b < PAGED_SEQUENCES; b++) {
        assert_int_equal(fc_host_sequence_of(&paged, b).len_k, used ? used_k[b] : PAGED_KEYS);
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < (varlen ? lens_q[b] : SQ); i++) {
                double scratch[2 * 128], values[4 * D];
                struct fc_row_reference got = {.out = values, .native = values + D},
                                        want = {.out = values + 2 * D, .native = values + 3 * D};
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

/* Every e4m3 code: its value, and back to the same code (NaN, 0x7f and 0xff, aside); the positive
 * codes in increasing order; the values flashcore.h's e4m3 names. */
static void test_e4m3_every_code_round_trips(void **state)
{
    (void)state;
    for (int code = 0; code < 256; code++) {
        const float value = fc_e4m3_to_float((uint8_t)code);
        if ((code & 0x7f) == 0x7f) {
            assert_true(isnan(value));
            continue;
        }
        if (!isfinite(value) || fc_float_to_e4m3(value) != code || !signbit(value) != !(code & 0x80))
            fail_msg("code 0x%02x: %g, back to 0x%02x", code, (double)value, fc_float_to_e4m3(value));
        if (code < 0x7e && !(fc_e4m3_to_float((uint8_t)(code + 1)) > value))
            fail_msg("code 0x%02x (%g) is not below the next", code, (double)value);
    }
    static const struct { uint8_t code; float value; } KNOWN[] = {
        {0x00, 0.f}, {0x01, 0x1p-9f}, {0x07, 7 * 0x1p-9f}, {0x08, 0x1p-6f}, {0x38, 1.f}, {0x39, 1.125f},
        {0x3f, 1.875f}, {0x40, 2.f}, {0x7e, 448.f}, {0x77, 240.f}, {0xb8, -1.f}, {0xfe, -448.f}, {0x81, -0x1p-9f},
    };
    for (size_t i = 0; i < sizeof KNOWN / sizeof KNOWN[0]; i++) {
        assert_true(fc_e4m3_to_float(KNOWN[i].code) == KNOWN[i].value);
        assert_int_equal(fc_float_to_e4m3(KNOWN[i].value), KNOWN[i].code);
    }
    assert_true(signbit(fc_e4m3_to_float(0x80)));   /* -0 */
}

/* Rounding: every midpoint between neighbouring codes goes to the even mantissa (across binades and
 * from the subnormals into the normals too), a hair either side to the nearer code; past 448
 * saturates, infinities too; NaN is 0x7f; below 2^-10 is 0. */
static void test_e4m3_rounds_to_nearest_even_and_saturates(void **state)
{
    (void)state;
    for (int code = 0; code < 0x7e; code++) {
        const float low = fc_e4m3_to_float((uint8_t)code), high = fc_e4m3_to_float((uint8_t)(code + 1));
        const float mid = (low + high) / 2;   /* exact: 5 significant bits at most */
        const int even = code % 2 ? code + 1 : code;   /* the last mantissa bit is the code's */
        if (fc_float_to_e4m3(mid) != even || fc_float_to_e4m3(-mid) != (0x80 | even))
            fail_msg("midpoint %g of 0x%02x and 0x%02x: 0x%02x", (double)mid, code, code + 1, fc_float_to_e4m3(mid));
        assert_int_equal(fc_float_to_e4m3(nextafterf(mid, 0.f)), code);
        assert_int_equal(fc_float_to_e4m3(nextafterf(mid, INFINITY)), code + 1);
    }
    static const float SATURATING[] = {448.f, 448.5f, 464.f, 464.5f, 480.f, 512.f, 1e6f, 3.4e38f, INFINITY};
    for (size_t i = 0; i < sizeof SATURATING / sizeof SATURATING[0]; i++) {
        assert_int_equal(fc_float_to_e4m3(SATURATING[i]), 0x7e);
        assert_int_equal(fc_float_to_e4m3(-SATURATING[i]), 0xfe);
    }
    assert_int_equal(fc_float_to_e4m3(NAN), 0x7f);
    assert_int_equal(fc_float_to_e4m3(0x1p-10f), 0x00);   /* the tie between 0 and 2^-9 */
    assert_int_equal(fc_float_to_e4m3(-0x1p-11f), 0x80);
    assert_int_equal(fc_float_to_e4m3(1e-30f), 0x00);
    assert_int_equal(fc_float_to_e4m3(0.1f), 0x1d);   /* 0.1015625 = 1.625 * 2^-4 */
    assert_int_equal(fc_float_to_e4m3(-3.3f), 0xc5);  /* -3.25 = -1.625 * 2^1 */
}

/* The 16-bit problem PyTorch's math path computes on for an FP8 one: K and V dequantized in fp32,
 * (k8.float() * k_descale).to(bf16). */
static void dequantized_copy(const struct setup *s, struct setup *plain)
{
    *plain = *s;
    const struct fc_attention_params *p = &s->params;
    for (int b = 0; b < p->batch; b++)
        for (int j = 0; j < p->seqlen_k; j++)
            for (int h = 0; h < p->heads_kv; h++)
                for (int d = 0; d < p->head_dim; d++) {
                    const size_t index = (((size_t)b * p->seqlen_k + j) * p->heads_kv + h) * p->head_dim + d;
                    const float k_descale = s->host.k_descale ? s->k_descale[b * p->heads_kv + h] : 1.f;
                    const float v_descale = s->host.v_descale ? s->v_descale[b * p->heads_kv + h] : 1.f;
                    plain->k[index] = fc_float_to_bf16(fc_e4m3_to_float(s->k8[index]) * k_descale);
                    plain->v[index] = fc_float_to_bf16(fc_e4m3_to_float(s->v8[index]) * v_descale);
                }
    plain->host.kv_fp8 = 0;
    plain->host.k8 = plain->host.v8 = NULL;
    plain->host.k_descale = plain->host.v_descale = NULL;
    plain->host.q = plain->q;
    plain->host.k = plain->k;
    plain->host.v = plain->v;
    plain->host.sinks = s->host.sinks ? plain->sinks : NULL;
}

/* Every row of an FP8 problem against the 16-bit one of its dequantized values: the native emulation
 * the same to the bit; the fp64 answer too where those values are exact (exact), else close. */
static void compare_with_dequantized(const struct setup *s, const struct setup *plain, int exact)
{
    const struct fc_attention_params *p = &s->params;
    for (int b = 0; b < p->batch; b++)
        for (int h = 0; h < p->heads_q; h++)
            for (int i = 0; i < p->seqlen_q; i++) {
                double scratch[2 * MAX_KEYS], values[4 * MAX_DIM];
                struct fc_row_reference fp8 = {.out = values, .native = values + MAX_DIM};
                struct fc_row_reference bf16 = {.out = values + 2 * MAX_DIM, .native = values + 3 * MAX_DIM};
                fc_reference_row(&s->host, b, h, i, &fp8, scratch);
                fc_reference_row(&plain->host, b, h, i, &bf16, scratch);
                assert_int_equal(fp8.visible_keys, bf16.visible_keys);
                assert_true(fp8.lse == bf16.lse || (isinf(fp8.lse) && isinf(bf16.lse)) ||
                            (!exact && fabs(fp8.lse - bf16.lse) < 0.05));
                for (int d = 0; d < p->head_dim; d++) {
                    assert_true(fp8.native[d] == bf16.native[d]);
                    if (fp8.out[d] != bf16.out[d] && (exact || fabs(fp8.out[d] - bf16.out[d]) > 0.05))
                        fail_msg("b %d h %d row %d dim %d: %g, the dequantized bf16 problem %g", b, h, i, d,
                                 fp8.out[d], bf16.out[d]);
                }
            }
}

/* FP8 attention's LSE rule: its error past the accumulation bound (lse_bound), within 1e-3 or twice
 * PyTorch's own; a 16-bit problem's error itself within 1e-3, whatever the bound. */
static void test_fp8_lse_is_judged_past_its_accumulation_bound(void **state)
{
    (void)state;
    struct fc_error_stats e;
    memset(&e, 0, sizeof e);
    e.p_bounded = 1;
    e.native_lse_error = 1e-4;
    e.max_lse_error = 5e-3;          /* more than 1e-3 ... */
    e.max_lse_excess = -1e-3;        /* ... but within the bound */
    assert_true(fc_error_passes(&e));
    e.max_lse_excess = 2e-3;         /* past the bound by more than 1e-3 */
    assert_false(fc_error_passes(&e));
    e.native_lse_error = 2e-3;       /* PyTorch's own error twice over covers it */
    assert_true(fc_error_passes(&e));
    e.p_bounded = 0;                 /* 16 bits: no bound */
    e.max_lse_excess = -1.0;
    assert_false(fc_error_passes(&e));
    e.max_lse_error = 5e-4;
    assert_true(fc_error_passes(&e));
}

/* FP8 K/V: the fp64 answer is attention on descale x e4m3 (flashcore.h's words, written out here),
 * per (batch, K/V head) descales and none (1), with windows, sinks and softcaps; the native emulation
 * is PyTorch's on K and V dequantized into bf16; with descales that are powers of two every
 * dequantized value is a bf16, and the FP8 problem's rows are those of the bf16 problem holding them,
 * to the bit. */
static void test_fp8_kv_is_attention_on_the_dequantized_values(void **state)
{
    (void)state;
    static const float K_DESCALE[4] = {0.3f, 1.7f, 0.55f, 1.1f}, V_DESCALE[4] = {1.3f, 0.45f, 2.f, 0.8f};
    static const struct { int sq, sk, causal, left, right; float sinks, softcap; } CASES[] = {
        {7, 7, 0, -1, -1, 0.f, 0.f}, {5, 17, 1, -1, -1, 1.f, 0.f}, {17, 5, 1, -1, -1, 0.f, 0.5f},
        {33, 64, 0, 3, 2, 20.f, 20.f}, {1, 64, 0, -1, -1, 1.f, 0.f},
    };
    uint64_t seed = 100;
    struct setup *s = malloc(sizeof *s), *plain = malloc(sizeof *plain);
    assert_non_null(s);
    assert_non_null(plain);
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++)
        for (int scaled = 0; scaled < 2; scaled++) {
            make(s, CASES[c].sq, CASES[c].sk, CASES[c].causal, CASES[c].left, CASES[c].right, CASES[c].sinks,
                 CASES[c].softcap, seed++);
            make_fp8(s, scaled ? K_DESCALE : NULL, scaled ? V_DESCALE : NULL);
            check_problem(s);
            dequantized_copy(s, plain);
            compare_with_dequantized(s, plain, !scaled);   /* no descales: e4m3 values are bf16s */
        }
    static const float K_POW2[4] = {0.25f, 2.f, 1.f, 0.5f}, V_POW2[4] = {4.f, 0.125f, 1.f, 2.f};
    make(s, 17, 33, 1, 9, -1, 1.f, 10.f, seed++);
    make_fp8(s, K_POW2, V_POW2);
    dequantized_copy(s, plain);
    compare_with_dequantized(s, plain, 1);
    free(s);
    free(plain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_follows_the_public_semantics),
        cmocka_unit_test(test_rows_without_keys_and_large_sinks),
        cmocka_unit_test(test_varlen_is_each_sequence_alone),
        cmocka_unit_test(test_paged_is_the_same_keys_contiguous),
        cmocka_unit_test(test_e4m3_every_code_round_trips),
        cmocka_unit_test(test_e4m3_rounds_to_nearest_even_and_saturates),
        cmocka_unit_test(test_fp8_kv_is_attention_on_the_dequantized_values),
        cmocka_unit_test(test_fp8_lse_is_judged_past_its_accumulation_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
