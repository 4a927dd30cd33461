/* Host-side checking tools: conversions, random inputs, fp64 attention, the error rule. */
#include <math.h>
#include <string.h>

#include "mask_internal.h"
#include "reference_cpu_internal.h"

#define ERROR_FACTOR 2.0       /* BENCH.md: within twice PyTorch's own error ... */
#define ERROR_SLACK 1e-5       /* ... plus this */
#define LSE_TOLERANCE 1e-3

static uint32_t float_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float fc_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    if (exponent == 0x1f)
        return bits_float(sign | 0x7f800000u | (mantissa << 13));
    if (exponent == 0) {   /* zero or subnormal: mantissa * 2^-24 */
        float f = (float)mantissa * 5.9604644775390625e-08f;
        return sign ? -f : f;
    }
    return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t fc_float_to_half(float value)
{
    uint32_t u = float_bits(value), sign = (u >> 16) & 0x8000;
    float a = fabsf(value);
    if (isnan(value))
        return (uint16_t)(sign | 0x7e00);
    if (a >= 65520.f)   /* rounds to infinity */
        return (uint16_t)(sign | 0x7c00);
    if (a < 6.103515625e-05f) {   /* subnormal half: round a * 2^24 to an integer, ties to even */
        float scaled = a * 16777216.f;
        return (uint16_t)(sign | (uint16_t)nearbyintf(scaled));
    }
    uint32_t m = float_bits(a);
    uint32_t rounded = m + 0xfff + ((m >> 13) & 1);   /* round to nearest even at bit 13 */
    return (uint16_t)(sign | (((rounded >> 23) - 112) << 10) | ((rounded >> 13) & 0x3ff));
}

float fc_bf16_to_float(uint16_t bits) { return bits_float((uint32_t)bits << 16); }

uint16_t fc_float_to_bf16(float value)
{
    uint32_t u = float_bits(value);
    if (isnan(value))
        return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

float fc_storage_to_float(enum fc_dtype dtype, uint16_t bits)
{
    return dtype == FC_BF16 ? fc_bf16_to_float(bits) : fc_half_to_float(bits);
}

uint16_t fc_float_to_storage(enum fc_dtype dtype, float value)
{
    return dtype == FC_BF16 ? fc_float_to_bf16(value) : fc_float_to_half(value);
}

float fc_round_to(enum fc_dtype dtype, float value)
{
    return fc_storage_to_float(dtype, fc_float_to_storage(dtype, value));
}

#define E4M3_NAN 0x7f             /* 0xff too: e4m3fn spends its top code on NaN, none on infinity */
#define E4M3_MAX_CODE 0x7e        /* 448 = 1.75 * 2^8 */
#define E4M3_MAX 448.0
#define E4M3_BIAS 7
#define E4M3_MIN_NORMAL 0x1.0p-6  /* exponent field 1 */
#define E4M3_SUBNORMAL_UNIT 0x1.0p-9   /* exponent field 0: mantissa * 2^-9 */

float fc_e4m3_to_float(uint8_t bits)
{
    const int exponent = (bits >> 3) & 0xf, mantissa = bits & 7;
    if ((bits & 0x7f) == E4M3_NAN)
        return NAN;
    const double magnitude = exponent ? ldexp(1.0 + mantissa / 8.0, exponent - E4M3_BIAS)
                                      : mantissa * E4M3_SUBNORMAL_UNIT;
    return (float)(bits & 0x80 ? -magnitude : magnitude);   /* exact: at most 4 significant bits */
}

uint8_t fc_float_to_e4m3(float value)
{
    if (isnan(value))
        return E4M3_NAN;
    const uint8_t sign = signbit(value) ? 0x80 : 0;
    const double a = fabs((double)value);
    if (a > E4M3_MAX)   /* saturating: e4m3fn has no infinity */
        return sign | E4M3_MAX_CODE;
    if (a < E4M3_MIN_NORMAL)   /* a subnormal, or 8 * 2^-9 = code 0x08, the smallest normal */
        return sign | (uint8_t)nearbyint(a / E4M3_SUBNORMAL_UNIT);
    int exponent;
    const double fraction = frexp(a, &exponent);   /* a = fraction * 2^exponent, fraction in [0.5, 1) */
    int mantissa = (int)nearbyint((2.0 * fraction - 1.0) * 8.0);   /* exact in double; ties to even */
    int biased = exponent - 1 + E4M3_BIAS;
    if (mantissa == 8) {   /* rounded up to the next power of two */
        mantissa = 0;
        biased++;
    }
    /* a <= 448 rounds to at most 448 (its tie with 480, 464, goes to 448's even mantissa) */
    return sign | (uint8_t)(biased << 3 | mantissa);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next(struct fc_random *r)   /* xoshiro256** */
{
    uint64_t result = rotl(r->s[1] * 5, 7) * 9, t = r->s[1] << 17;
    r->s[2] ^= r->s[0];
    r->s[3] ^= r->s[1];
    r->s[1] ^= r->s[2];
    r->s[0] ^= r->s[3];
    r->s[2] ^= t;
    r->s[3] = rotl(r->s[3], 45);
    return result;
}

uint64_t fc_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void fc_random_seed(struct fc_random *r, uint64_t seed)
{
    r->has_spare = 0;
    for (int i = 0; i < 4; i++)   /* splitmix64 */
        r->s[i] = fc_mix64(seed += 0x9e3779b97f4a7c15ull);
}

double fc_random_normal(struct fc_random *r)   /* Box-Muller; both values of a pair are used */
{
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    float u1 = (float)((next(r) >> 40) + 1) * 0x1.0p-24f, u2 = (float)(next(r) >> 40) * 0x1.0p-24f;
    float radius = sqrtf(-2.f * logf(u1)), angle = 6.2831853f * u2;
    r->spare = radius * sinf(angle);
    r->has_spare = 1;
    return radius * cosf(angle);
}

uint64_t fc_random_below(struct fc_random *r, uint64_t bound)
{
    return bound ? next(r) % bound : 0;
}

/* Index of (batch b, token s, head h, column d) in a packed [batch, seqlen, heads, head_dim] tensor. */
static size_t packed_index(const struct fc_host_problem *p, int heads, int seqlen, int b, int s, int h, int d)
{
    return (((size_t)b * seqlen + s) * heads + h) * p->head_dim + d;
}

struct fc_host_sequence fc_host_sequence_of(const struct fc_host_problem *p, int b)
{
    struct fc_host_sequence seq = {0, 0, p->seqlen_q, p->seqlen_k};
    if (p->cu_seqlens_q) {
        seq.q_row0 = p->cu_seqlens_q[b];
        seq.len_q = p->cu_seqlens_q[b + 1] - seq.q_row0;
    }
    if (p->cu_seqlens_k) {   /* NULL with a paged cache: keys come from the page table */
        seq.k_row0 = p->cu_seqlens_k[b];
        seq.len_k = p->cu_seqlens_k[b + 1] - seq.k_row0;
    }
    if (p->seqused_k)
        seq.len_k = p->seqused_k[b];
    return seq;
}

/* Element (sequence b's token s, head h, column d) of q. */
/* Element (sequence b's query s, head h, column d) of q: its exact value, and in *native what
 * PyTorch's math path in the dtype reads (FP8 attention: the dequantized value rounded to the dtype,
 * as kv_element's). */
static double q_element(const struct fc_host_problem *p, const struct fc_host_sequence *seq, int b, int s, int h,
                        int d, float *native)
{
    const size_t index = p->cu_seqlens_q ? packed_index(p, p->heads_q, p->seqlen_q, 0, seq->q_row0 + s, h, d)
                                         : packed_index(p, p->heads_q, p->seqlen_q, b, s, h, d);
    if (!p->q_fp8) {
        *native = fc_storage_to_float(p->dtype, p->q[index]);
        return *native;
    }
    const int kv = h / (p->heads_q / p->heads_kv);
    const float descale = p->q_descale ? p->q_descale[(size_t)b * p->heads_kv + kv] : 1.f;
    const float value = fc_e4m3_to_float(p->q8[index]);
    *native = fc_round_to(p->dtype, value * descale);
    return (double)value * descale;
}

enum kv_tensor { KEYS, VALUES };

/* Element (sequence b's key s, K/V head h, column d) of k or v: its exact value, and in *native
 * what PyTorch's math path in the dtype reads. 16-bit K/V: both the stored value. FP8: the descale
 * times the e4m3 value, exact in double, and natively that product in fp32 rounded to the dtype,
 * the dequantized tensor (k8.float() * k_descale).to(dtype). */
static double kv_element(const struct fc_host_problem *p, enum kv_tensor tensor, const struct fc_host_sequence *seq,
                         int b, int s, int h, int d, float *native)
{
    size_t index;
    if (p->page_size > 0) {   /* [num_pages, page_size, heads_kv, head_dim] through the table */
        const int page = p->page_table[(size_t)b * (size_t)p->page_table_stride + (size_t)(s / p->page_size)];
        index = packed_index(p, p->heads_kv, p->page_size, page, s % p->page_size, h, d);
    } else {
        index = p->cu_seqlens_q ? packed_index(p, p->heads_kv, p->seqlen_k, 0, seq->k_row0 + s, h, d)
                                : packed_index(p, p->heads_kv, p->seqlen_k, b, s, h, d);
    }
    if (!p->kv_fp8) {
        *native = fc_storage_to_float(p->dtype, (tensor == KEYS ? p->k : p->v)[index]);
        return *native;
    }
    const float *descales = tensor == KEYS ? p->k_descale : p->v_descale;
    const float descale = descales ? descales[(size_t)b * p->heads_kv + h] : 1.f;
    const float value = fc_e4m3_to_float((tensor == KEYS ? p->k8 : p->v8)[index]);
    *native = fc_round_to(p->dtype, value * descale);
    return (double)value * descale;
}

/* A scaled score as PyTorch computes it in the dtype: times the scale (rounded), then soft-capped
 * the standard way, softcap * torch.tanh(S / softcap), each op in fp32 and rounded. */
static float native_score(const struct fc_host_problem *p, float dot, float scale)
{
    const float s = fc_round_to(p->dtype, fc_round_to(p->dtype, dot) * scale);
    if (p->softcap == 0.f)
        return s;
    const float t = fc_round_to(p->dtype, tanhf(fc_round_to(p->dtype, s / p->softcap)));
    return fc_round_to(p->dtype, p->softcap * t);
}

/* PyTorch's math path in the dtype, emulated: S = q @ k^T (fp32 accumulate, rounded), scaled and
 * capped (native_score), softmax computed in fp32 and rounded, P @ V (fp32 accumulate, rounded). A
 * sink (in the dtype) joins the softmax as one more column, gpt-oss's torch.cat([S, sinks]). */
static void native_row(const struct fc_host_problem *p, const struct fc_host_sequence *seq, int b, int h, int kv,
                       struct fc_key_range keys, const float *dots, float *weights, double *out, double *lse)
{
    const float scale = fc_round_to(p->dtype, p->softmax_scale);
    const float sink = p->sinks ? fc_round_to(p->dtype, p->sinks[h]) : -INFINITY;
    float max_score = sink, sum = 0.f;
    for (int j = keys.begin; j < keys.end; j++) {
        weights[j] = native_score(p, dots[j], scale);
        max_score = fmaxf(max_score, weights[j]);
    }
    for (int j = keys.begin; j < keys.end; j++) {
        weights[j] = expf(weights[j] - max_score);
        sum += weights[j];
    }
    sum += p->sinks ? expf(sink - max_score) : 0.f;
    *lse = (double)max_score + log((double)sum);   /* torch.logsumexp over the same scores, in fp32 */
    for (int j = keys.begin; j < keys.end; j++)
        weights[j] = fc_round_to(p->dtype, weights[j] / sum);
    for (int d = 0; d < p->head_dim; d++) {
        float acc = 0.f;
        for (int j = keys.begin; j < keys.end; j++) {
            float value;
            kv_element(p, VALUES, seq, b, j, kv, d, &value);
            acc += weights[j] * value;
        }
        out[d] = fc_round_to(p->dtype, acc);
    }
}

void fc_reference_row(const struct fc_host_problem *p, int b, int h, int i,
                      struct fc_row_reference *row, double *scratch)
{
    const int kv = h / (p->heads_q / p->heads_kv), D = p->head_dim;
    const struct fc_host_sequence seq = fc_host_sequence_of(p, b);   /* the mask is per sequence */
    const struct fc_key_range keys = fc_mask_keys(&p->mask, seq.len_q, seq.len_k, i, i + 1);
    const double sink = p->sinks ? p->sinks[h] : -INFINITY;   /* joins the denominator, brings no value */
    row->visible_keys = keys.end - keys.begin;
    for (int d = 0; d < D; d++)
        row->out[d] = row->native[d] = 0.0;
    row->lse = sink;
    row->lse_bound = 0.0;
    if (!row->visible_keys)
        return;
    double *scores = scratch;                                  /* [seqlen_k] fp64 */
    float *dots = (float *)(scratch + p->seqlen_k);            /* [seqlen_k] fp32 */
    float *weights = dots + p->seqlen_k;                       /* [seqlen_k] fp32 */
    double max_score = sink, sum = 0.0, max_magnitude = 0.0;
    for (int j = keys.begin; j < keys.end; j++) {
        double dot = 0.0, magnitude = 0.0;
        float dot32 = 0.f;
        for (int d = 0; d < D; d++) {
            float qd_native, kd_native;
            const double qd = q_element(p, &seq, b, i, h, d, &qd_native);
            const double kd = kv_element(p, KEYS, &seq, b, j, kv, d, &kd_native);
            dot += qd * kd;
            if (p->q_fp8)   /* only FP8 attention's LSE bound reads it */
                magnitude += fabs(qd * kd);
            dot32 += qd_native * kd_native;
        }
        max_magnitude = fmax(max_magnitude, magnitude);
        scores[j] = dot * p->softmax_scale;
        if (p->softcap != 0.f)
            scores[j] = p->softcap * tanh(scores[j] / p->softcap);
        dots[j] = dot32;
        max_score = fmax(max_score, scores[j]);
    }
    for (int j = keys.begin; j < keys.end; j++)
        sum += exp(scores[j] - max_score);
    sum += exp(sink - max_score);   /* 0 without one */
    row->lse = max_score + log(sum);
    row->lse_bound = p->q_fp8 ? FC_FP8_ACCUMULATION_ROUNDING * ((D + 31) / 32) * fabs(p->softmax_scale) * max_magnitude
                              : 0.0;
    const int bounded = p->q_fp8 && row->p_bound;
    for (int d = 0; bounded && d < D; d++)
        row->p_bound[d] = 0.0;
    for (int j = keys.begin; j < keys.end; j++) {
        double weight = exp(scores[j] - max_score) / sum;
        for (int d = 0; d < D; d++) {
            float native;
            const double value = kv_element(p, VALUES, &seq, b, j, kv, d, &native);
            row->out[d] += weight * value;
            if (bounded)
                row->p_bound[d] += (FC_P_RELATIVE_ROUNDING * weight + FC_P_ABSOLUTE_ROUNDING) * fabs(value);
        }
    }
    native_row(p, &seq, b, h, kv, keys, dots, weights, row->native, &row->native_lse);
}

void fc_error_accumulate(struct fc_error_stats *stats, const struct fc_host_problem *p,
                         const struct fc_row_reference *row, const uint16_t *out_row, const float *lse)
{
    int bad = 0;
    stats->rows++;
    for (int d = 0; d < p->head_dim; d++) {
        float got = fc_storage_to_float(p->dtype, out_row[d]);
        if (!isfinite(got)) {   /* NaN: the poison was never overwritten, or the kernel made one */
            bad = 1;
            continue;
        }
        if (!row->visible_keys) {
            bad |= got != 0.f;
            continue;
        }
        stats->max_error = fmax(stats->max_error, fabs(got - row->out[d]));
        if (p->q_fp8 && row->p_bound) {
            stats->p_bounded = 1;
            stats->max_excess = fmax(stats->max_excess, fabs(got - row->out[d]) - row->p_bound[d]);
        }
        stats->native_error = fmax(stats->native_error, fabs(row->native[d] - row->out[d]));
    }
    if (lse) {
        if (isinf(row->lse))   /* no key and no sink: exactly -inf */
            bad |= !(isinf(*lse) && *lse < 0);
        else if (!isfinite(*lse))
            bad = 1;
        else {
            stats->max_lse_error = fmax(stats->max_lse_error, fabs(*lse - row->lse));
            stats->max_lse_excess = fmax(stats->max_lse_excess, fabs(*lse - row->lse) - row->lse_bound);
        }
        if (!isinf(row->lse))
            stats->native_lse_error = fmax(stats->native_lse_error, fabs(row->native_lse - row->lse));
    }
    stats->bad_rows += bad;
}

int fc_error_passes(const struct fc_error_stats *stats)
{
    /* FP8 attention: FP8 WGMMA accumulates Q K^T in less than fp32 (about 14 bits kept: DeepSeek-V3's
     * report), so its LSE may be off by that accumulation's bound (lse_bound) beyond PyTorch's own
     * error in the dtype (as O is), or LSE_TOLERANCE where that is more */
    const double error = stats->p_bounded ? stats->max_excess : stats->max_error;
    const double lse_limit = stats->p_bounded && ERROR_FACTOR * stats->native_lse_error > LSE_TOLERANCE
                                 ? ERROR_FACTOR * stats->native_lse_error : LSE_TOLERANCE;
    const double lse_error = stats->p_bounded ? stats->max_lse_excess : stats->max_lse_error;
    return stats->bad_rows == 0 && error <= ERROR_FACTOR * stats->native_error + ERROR_SLACK && lse_error <= lse_limit;
}
