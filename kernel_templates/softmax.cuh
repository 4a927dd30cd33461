// Online softmax over scores held as mma C fragments (m16n8 tiles).
//
// A thread holds, per 16-row m-tile, two rows (group and group + 8) and two columns of each of
// the N_TILES n-tiles; the four lanes of a quad share those rows. Scores arrive masked with -inf
// and are brought into the log2 domain by `factor` inside the exponent: P = exp2(S * factor -
// max * factor), one FFMA per score (factor = scale * log2(e) when positive; a caller with a
// negative scale multiplies first and passes 1, since max(S) * factor would then be the min).
// Row sums stay per-thread partial until finish(): the rescaling is uniform across the quad, so
// one reduction at the end is enough.
#pragma once

#include "ptx/math.cuh"
#include "ptx/warp.cuh"

namespace fc {

__device__ __forceinline__ float quad_max(float x)
{
    x = fmaxf(x, __shfl_xor_sync(FULL_WARP, x, 1));
    return fmaxf(x, __shfl_xor_sync(FULL_WARP, x, 2));
}

__device__ __forceinline__ float quad_sum(float x)
{
    x += __shfl_xor_sync(FULL_WARP, x, 1);
    return x + __shfl_xor_sync(FULL_WARP, x, 2);
}

// Logit soft-capping of a tile of scores, before masking: S -> tanh(S * scale), scale = softmax
// scale / softcap; the softmax's factor (softcap * log2(e)) then brings back the cap. NOTE: a pass
// of its own over every tile, so that masking stays on the edge tiles: folded into the masking
// pass (which then ran on every tile), sm80 at head_dim 128 causal spilled 80 bytes.
template <int M_TILES, int N_TILES>
__device__ __forceinline__ void soft_cap(float (&s)[M_TILES][N_TILES][4], float scale)
{
#pragma unroll
    for (int m = 0; m < M_TILES; m++)
#pragma unroll
        for (int n = 0; n < N_TILES; n++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                s[m][n][i] = tanh_approx(s[m][n][i] * scale);
}

// OnlineSoftmax::update's default hold: none.
struct NoHold {
    __device__ __forceinline__ void operator()(float) const {}
};

template <int M_TILES, int N_TILES>
struct OnlineSoftmax {
    float row_max[M_TILES][2];   // running max of the scores times factor (log2 domain), per row
    float row_sum[M_TILES][2];   // running sum of P, partial per thread until finish()

    __device__ __forceinline__ void init()
    {
#pragma unroll
        for (int m = 0; m < M_TILES; m++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                row_max[m][h] = -infinity();
                row_sum[m][h] = 0.f;
            }
    }

    // S -> P in place; correction[m][h] is what the row's output accumulated so far must be
    // multiplied by. shift: the row's max is kept `shift` below the true one (log2 domain), so that
    // P reaches 2^shift (an FP8 P's range, fwd_sm90.cuh); sums, corrections and the LSE agree with it.
    // CAP (a tile with no masked score; cap_scale = softmax scale / softcap): S is soft-capped here,
    // S -> tanh(S * cap_scale) before the exponent. NOTE: the row max is taken of S * cap_scale and
    // capped once (tanh increases), so that its reduction and shuffles run while the SFU works
    // through the tile's tanh's, not after them: with a softcap the SFU's work per score (a tanh and
    // an exp2) equals the tensor cores' at head_dim 128, and the softmax must fit under the other
    // consumer's GEMMs (PERF_NOTES v25). A masked tile caps first (soft_cap), then masks.
    // HOLD_TILES > 0: every row's max first, then the exponentials of the first HOLD_TILES n-tiles,
    // then hold(their partial sum) (fwd_sm90.cuh's HOLD_TILES: a later wait kept after them), then
    // the rest. SLACK >= 0: a row's max moves only when a tile's exceeds it by more than SLACK (log2
    // units: P then reaches 2^SLACK), so that most tiles leave it, and its correction exactly 1 (the
    // SFU's exp2 of 0; a consumer may skip O's rescale); -1: the max moves to any larger tile max.
    template <bool CAP = false, int HOLD_TILES = 0, int SLACK = -1, typename Hold = NoHold>
    __device__ __forceinline__ void update(float (&s)[M_TILES][N_TILES][4], float (&correction)[M_TILES][2],
                                           float factor, float shift = 0.f, float cap_scale = 0.f,
                                           const Hold &hold = {})
    {
        if constexpr (HOLD_TILES == 0) {
#pragma unroll
            for (int m = 0; m < M_TILES; m++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const float offset = open_row<CAP, SLACK>(s, correction, m, h, factor, shift, cap_scale);
                    float sum = 0.f;
#pragma unroll
                    for (int n = 0; n < N_TILES; n++)
#pragma unroll
                        for (int i = 0; i < 2; i++)
                            sum += exponential<CAP>(s[m][n][2 * h + i], factor, offset);
                    row_sum[m][h] = row_sum[m][h] * correction[m][h] + sum;
                }
        } else {
            static_assert(HOLD_TILES < N_TILES, "some exponentials after the hold");
            float offset[M_TILES][2], sum[M_TILES][2];
#pragma unroll
            for (int m = 0; m < M_TILES; m++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    offset[m][h] = open_row<CAP, SLACK>(s, correction, m, h, factor, shift, cap_scale);
                    sum[m][h] = 0.f;
                }
#pragma unroll
            for (int n = 0; n < N_TILES; n++) {
                if (n == HOLD_TILES)
                    hold(sum[0][0] + sum[0][1]);
#pragma unroll
                for (int m = 0; m < M_TILES; m++)
#pragma unroll
                    for (int h = 0; h < 2; h++)
#pragma unroll
                        for (int i = 0; i < 2; i++)
                            sum[m][h] += exponential<CAP>(s[m][n][2 * h + i], factor, offset[m][h]);
            }
#pragma unroll
            for (int m = 0; m < M_TILES; m++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    row_sum[m][h] = row_sum[m][h] * correction[m][h] + sum[m][h];
        }
    }

    // update's first step for row (m, h): the tile's max (CAP: of the capped scores) joins the
    // row's (SLACK: see update); the correction of what the row accumulated so far; the offset the
    // exponents take.
    template <bool CAP, int SLACK = -1>
    __device__ __forceinline__ float open_row(float (&s)[M_TILES][N_TILES][4], float (&correction)[M_TILES][2],
                                              int m, int h, float factor, float shift, float cap_scale)
    {
        float tile_max = -infinity();
#pragma unroll
        for (int n = 0; n < N_TILES; n++) {
            if constexpr (CAP) {
                s[m][n][2 * h] *= cap_scale;
                s[m][n][2 * h + 1] *= cap_scale;
            }
            tile_max = fmaxf(tile_max, fmaxf(s[m][n][2 * h], s[m][n][2 * h + 1]));
        }
        tile_max = quad_max(tile_max);
        if constexpr (CAP)
            tile_max = tanh_approx(tile_max);
        float new_max;
        if constexpr (SLACK >= 0) {
            const float candidate = tile_max * factor - shift;
            new_max = candidate > row_max[m][h] + float(SLACK) ? candidate : row_max[m][h];
        } else {
            new_max = fmaxf(row_max[m][h], tile_max * factor - shift);
        }
        const bool none_yet = new_max == -infinity();   // exp2(-inf - -inf) would be NaN
        const float offset = none_yet ? 0.f : new_max;
        correction[m][h] = exp2_approx(row_max[m][h] - offset);   // a held max: exp2(0), exactly 1
        row_max[m][h] = new_max;
        return offset;
    }

    // A score -> its P, in place; returns it.
    template <bool CAP>
    __device__ __forceinline__ static float exponential(float &score, float factor, float offset)
    {
        const float capped = CAP ? tanh_approx(score) : score;
        score = exp2_approx(fmaf(capped, factor, -offset));
        return score;
    }

    // Completes the row sums across the quad. Returns nothing; read row_sum / row_max after.
    __device__ __forceinline__ void finish()
    {
#pragma unroll
        for (int m = 0; m < M_TILES; m++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                row_sum[m][h] = quad_sum(row_sum[m][h]);
    }

    // Natural-log log-sum-exp of a finished row; -inf when the row saw no key.
    __device__ __forceinline__ float lse(int m, int h) const { return log_sum_exp(row_max[m][h], row_sum[m][h]); }

    // The same of a row's (max, sum), e.g. after fold_sink.
    __device__ __forceinline__ static float log_sum_exp(float row_max, float row_sum)
    {
        constexpr float LN2 = 0.693147180559945309f;
        return row_sum > 0.f ? (row_max + log2_approx(row_sum)) * LN2 : -infinity();
    }
};

// A tile's scores -> P, with its softcap (SOFTCAP) and its mask: a tile without a masked score is
// capped inside the softmax (update<true>); another takes the tanh pass, then `mask_tile(s)` (the
// family's masking) where the tile is masked or the scale was not folded into the exponent, then the
// softmax. HOLD_TILES, SLACK, hold: OnlineSoftmax::update's.
template <bool SOFTCAP, int HOLD_TILES = 0, int SLACK = -1, int M_TILES, int N_TILES, typename Mask,
          typename Hold = NoHold>
__device__ __forceinline__ void softmax_step(OnlineSoftmax<M_TILES, N_TILES> &softmax, float (&s)[M_TILES][N_TILES][4],
                                             float (&correction)[M_TILES][2], float factor, float shift,
                                             float softcap_scale, bool masked, bool fold_scale,
                                             const Mask &mask_tile, const Hold &hold = {})
{
    if (SOFTCAP && !masked) {
        softmax.template update<true, HOLD_TILES, SLACK>(s, correction, factor, shift, softcap_scale, hold);
        return;
    }
    if constexpr (SOFTCAP)
        soft_cap(s, softcap_scale);
    if (masked || !fold_scale)
        mask_tile(s);
    softmax.template update<false, HOLD_TILES, SLACK>(s, correction, factor, shift, 0.f, hold);
}

constexpr float LOG2E = 1.4426950408889634f;

// Folds an attention sink into a finished row (max in the log2 domain, sum complete): the logit
// `sink` (log2 domain; -inf: none) joins the denominator and brings no value, gpt-oss's s_aux.
// NOTE: folded into the max, so that a large positive sink cannot overflow: max' = max(max, sink),
// sum' = sum 2^(max - max') + 2^(sink - max'). Returns 2^(max - max'), the factor O's accumulated
// sum takes; a row that saw no key gets sum' = 1 (out 0, lse = the sink).
__device__ __forceinline__ float fold_sink(float &row_max, float &row_sum, float sink)
{
    const float top = fmaxf(row_max, sink);
    if (top == -infinity())   // no key and no sink: nothing to fold (and exp2(-inf - -inf) is NaN)
        return 1.f;
    const float scale = exp2_approx(row_max - top);
    row_sum = row_sum * scale + exp2_approx(sink - top);
    row_max = top;
    return scale;
}

}  // namespace fc
