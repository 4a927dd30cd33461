// An FP8 KV cache on mma.sync m16n8k16 (fwd_decode.cuh, fwd_sm80.cuh): K and V stay e4m3 in shared
// memory and become f16 only at the fragments (cvt.rn.f16x2.e4m3x2, exact: e4m3 is a subset of f16),
// so both products run in f16 (P is in [0, 1]).
//
// A sum over an index does not care how that index is ordered, so each product takes the order the
// bytes come in and nothing is transposed:
// - Q K^T: ldmatrix of a K tile gives lane (g, c) the 32-bit word c of key row g's 16 bytes of a
//   k-step, its dims 4c .. 4c+3. They become the B fragment's k-indices 2c, 2c+1 (low half) and 2c+8,
//   2c+9 (high half), so Q's A fragment is read in the same order: dims (4c, 4c+1 | 4c+2, 4c+3) of
//   rows g and g + 8 (q_fragment_fp8).
// - P V: P's A fragment is the S accumulator's, keys 2c, 2c+1 and 2c+8, 2c+9 of a 16-key step. Lane
//   (g, c) reads the words of dims 4g .. 4g+3 of a 32-dim group in those four key rows, and byte j of
//   them, paired across rows by a byte permute, makes the B fragment of n-tile j of the group
//   (v_fragments_fp8), whose column g is then dim 4g + j. O's C fragment leaves lane (g, c) holding
//   dims 8c .. 8c+7 of each group (fp8_o_dim; attention_common.cuh's store_row FP8_ORDER).
// A bf16 Q becomes f16 times a power of two per row (q_row_scales) that puts the row's largest |q| in
// [2^14, 2^15): exact for every element down to 2^-24 of it (f16's subnormals below), undone on the
// row's scores.
#pragma once

#include "element.cuh"
#include "ptx/convert.cuh"
#include "ptx/mma.cuh"
#include "ptx/smem.cuh"
#include "ptx/warp.cuh"

namespace fc {

// Q's A fragment of one k-step in K's byte order: `at` is row g's first element of the step (dims
// 16k + 4c ..), rows PITCH bytes apart; a bf16 Q times its rows' scales (rows g, g + 8), as f16.
template <typename T, int PITCH>
__device__ __forceinline__ void q_fragment_fp8(unsigned (&q)[4], unsigned at, const float (&scale)[2])
{
    ld_shared_v2(q[0], q[2], at);              // row g: dims 4c, 4c+1 | 4c+2, 4c+3
    ld_shared_v2(q[1], q[3], at + 8 * PITCH);  // row g + 8
    if constexpr (!Same<T, half_t>::value)
#pragma unroll
        for (int i = 0; i < 4; i++)   // q[1], q[3]: row g + 8
            q[i] = Mma<half_t>::pack(__uint_as_float(q[i] << 16) * scale[i % 2],
                                     __uint_as_float(q[i] & 0xffff0000u) * scale[i % 2]);
}

// A bf16 Q's scales for rows g and g + 8 (lane (g, c), with its quad): `at` as q_fragment_fp8's for
// the first of STEPS k-steps of 32 bytes; scale[r] * unscale[r] = 1, both powers of two.
template <int PITCH, int STEPS>
__device__ __forceinline__ void q_row_scales(unsigned at, float (&scale)[2], float (&unscale)[2])
{
    unsigned top[2] = {0, 0};   // bf16 magnitude bits: ordered as the values (NaN above all)
#pragma unroll
    for (int kk = 0; kk < STEPS; kk++) {
        unsigned w[4];
        ld_shared_v2(w[0], w[1], at + 32 * kk);
        ld_shared_v2(w[2], w[3], at + 32 * kk + 8 * PITCH);
#pragma unroll
        for (int i = 0; i < 4; i++)
            top[i / 2] = max(top[i / 2], max(w[i] & 0x7fffu, (w[i] >> 16) & 0x7fffu));
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        top[r] = max(top[r], __shfl_xor_sync(FULL_WARP, top[r], 1));
        top[r] = max(top[r], __shfl_xor_sync(FULL_WARP, top[r], 2));
        const int exponent = static_cast<int>(top[r] >> 7) - 127;   // of the largest |q|
        const int shift = min(max(14 - exponent, -126), 126);
        scale[r] = __uint_as_float(static_cast<unsigned>(127 + shift) << 23);
        unscale[r] = __uint_as_float(static_cast<unsigned>(127 - shift) << 23);
    }
}

// S += Q K^T of one k-step and one 8-key n-tile, from K's ldmatrix word.
__device__ __forceinline__ void mma_qk_fp8(float (&s)[4], const unsigned (&q)[4], unsigned k_word)
{
    Mma<half_t>::run(s, q, e4m3x2_to_f16x2(k_word), e4m3x2_to_f16x2(k_word >> 16));
}

// P V's B fragments of n-tiles j and j + 1 of a 32-dim group (b[n - j] = {b0, b1}), from V's words
// of key rows 2c, 2c+1, 2c+8, 2c+9 (w0 .. w3): bytes j and j + 1 of each, paired across rows.
__device__ __forceinline__ void v_fragments_fp8(unsigned (&b)[2][2], unsigned w0, unsigned w1, unsigned w2,
                                                unsigned w3, int j)
{
    const unsigned selector = j | (4 + j) << 4 | (j + 1) << 8 | (5 + j) << 12;
    const unsigned lo = __byte_perm(w0, w1, selector), hi = __byte_perm(w2, w3, selector);
    b[0][0] = e4m3x2_to_f16x2(lo);
    b[0][1] = e4m3x2_to_f16x2(hi);
    b[1][0] = e4m3x2_to_f16x2(lo >> 16);
    b[1][1] = e4m3x2_to_f16x2(hi >> 16);
}

// The head dim of column e (0, 1) of lane (g, c)'s pair in O's d-tile d.
__device__ __forceinline__ int fp8_o_dim(int d, int e, int lane)
{
    return 32 * (d / 4) + 4 * (2 * (lane % 4) + e) + d % 4;
}

}  // namespace fc
