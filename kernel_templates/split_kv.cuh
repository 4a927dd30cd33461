// Split-KV: several CTAs share one row block's keys, each writing its rows' fp32 O (already
// divided by its own sum) and LSE to a scratch buffer of partials, and a second kernel of the module
// merges the splits through their LSEs (FlashAttention's split-KV "combine"). The decode kernel
// (fwd_decode.cuh) and the sm90 kernel's GQA-packed rows (fwd_sm90.cuh's PACK_GQA) split so; the
// host sizes the buffer and launches both kernels (src/split.c).
#pragma once

#include "attention_common.cuh"
#include "fc_args.h"

namespace fc {

// The rows of the split-KV partials per split: [batch, heads_q, seqlen_q]; varlen [heads_q, tokens].
template <bool VARLEN>
__device__ __forceinline__ long long partial_rows(const fc_kernel_args &args)
{
    if (VARLEN && seqlens_of(args).cu_seqlens_q)
        return static_cast<long long>(args.heads_q) * args.seqlen_q;
    return static_cast<long long>(args.batch) * args.heads_q * args.seqlen_q;
}

// Packed row (head, query)'s row of split `split`'s partials: [split][batch, heads_q, seqlen_q]
// (dense; the varlen rows are the decode kernel's own).
__device__ __forceinline__ long long partial_row(const fc_kernel_args &args, int split, int batch, int head, int query)
{
    return ((static_cast<long long>(split) * args.batch + batch) * args.heads_q + head) * args.seqlen_q + query;
}

// A split's O (divided by its own sum; 0 where it saw no key) and LSE (-inf there) of this thread's
// two rows h (lane / 4 + 8 h of its warp's 16), query row row[h] of head head[h], written if
// inside[h], from the mma C-fragment layout (columns 8 d + 2 (lane % 4), + 1 of tile d): the sm90
// kernel's PACK_GQA rows. The sinks join in the combine, once.
template <int D_TILES, int N_TILES>
__device__ __forceinline__ void store_head_partials(const fc_kernel_args &args, int split, int batch,
                                                    const int (&head)[2], const int (&row)[2], const bool (&inside)[2],
                                                    const float (&o)[1][D_TILES][4],
                                                    const OnlineSoftmax<1, N_TILES> &softmax)
{
    const int lane = threadIdx.x % WARP_SIZE;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        if (!inside[h])
            continue;
        const float sum = softmax.row_sum[0][h], inverse = sum > 0.f ? 1.f / sum : 0.f;   // no key: 0
        const long long at = partial_row(args, split, batch, head[h], row[h]);
        float *out = args.o_partial + at * (8 * D_TILES) + 2 * (lane % 4);
#pragma unroll
        for (int d = 0; d < D_TILES; d++)
            *reinterpret_cast<float2 *>(out + 8 * d) = make_float2(o[0][d][2 * h] * inverse, o[0][d][2 * h + 1] * inverse);
        if (lane % 4 == 0)
            args.lse_partial[at] = OnlineSoftmax<1, N_TILES>::log_sum_exp(softmax.row_max[0][h], sum);
    }
}

// The rows one combine CTA merges: one per warp (src/split.c launches rows / this CTAs of
// COMBINE_WARPS warps). An enum: a constexpr variable gave every including unit's PTX a symbol.
enum : int { COMBINE_WARPS = 4 };

// Merges the splits of one query row per warp: LSE = log (sum_s exp(LSE_s) [+ exp(sink)]), O =
// sum_s exp(LSE_s - LSE) O_s: the head's sink, if there are sinks, joins the denominator here,
// once, and brings no value. A row no split saw a key of is 0 with LSE -inf (or its sink). NOTE: a
// warp a row, its lanes on adjacent columns, the splits' partial rows read as whole 128-byte lines:
// with a CTA a row (128 threads, one column each) the combine took 13 us of a 240 us decode at 4096
// rows x 2 splits (Nsight Compute, H100, PERF_NOTES v15).
template <typename T, int HEAD_DIM, bool VARLEN = false>
__device__ __forceinline__ void combine_splits(const fc_kernel_args &args)
{
    const long long rows = partial_rows<VARLEN>(args);
    const long long row = static_cast<long long>(blockIdx.x) * COMBINE_WARPS + threadIdx.x / WARP_SIZE;
    const int lane = threadIdx.x % WARP_SIZE;
    if (row >= rows)   // (batch, head, query); varlen (head, token)
        return;
    const int query = static_cast<int>(row % args.seqlen_q);
    const int head = static_cast<int>(row / args.seqlen_q % args.heads_q);
    const int batch = static_cast<int>(row / args.seqlen_q / args.heads_q);
    // varlen: tokens past the last sequence belong to none: no split wrote their partials, and
    // their output is never written
    if (VARLEN && seqlens_of(args).cu_seqlens_q && query >= seqlens_of(args).cu_seqlens_q[args.batch])
        return;
    const float sink = args.sinks ? args.sinks[head] : -infinity();
    float top = sink;   // NOTE: in the max, so that a large sink cannot overflow the sum
    for (int s = lane; s < args.splits; s += WARP_SIZE)
        top = fmaxf(top, args.lse_partial[s * rows + row]);
    top = warp_max(top);
    float sum = 0.f;
    if (top != -infinity()) {
        for (int s = lane; s < args.splits; s += WARP_SIZE)
            sum += __expf(args.lse_partial[s * rows + row] - top);
        sum = warp_sum(sum) + __expf(sink - top);   // the sink's term: 0 without one
    }
    const float lse = sum > 0.f ? top + __logf(sum) : -infinity();
    constexpr int PER_LANE = (HEAD_DIM + WARP_SIZE - 1) / WARP_SIZE;   // columns lane, lane + 32, ...
    float value[PER_LANE];
#pragma unroll
    for (int j = 0; j < PER_LANE; j++)
        value[j] = 0.f;
    if (sum > 0.f)
        for (int s = 0; s < args.splits; s++) {
            const float weight = __expf(args.lse_partial[s * rows + row] - lse);   // 0 for an empty split
            const float *partial = args.o_partial + (s * rows + row) * HEAD_DIM;
#pragma unroll
            for (int j = 0; j < PER_LANE; j++)
                if (lane + j * WARP_SIZE < HEAD_DIM)
                    value[j] += weight * partial[lane + j * WARP_SIZE];
        }
    T *out = static_cast<T *>(args.o) + batch * args.o_stride[0] + head * args.o_stride[2] + query * args.o_stride[1];
#pragma unroll
    for (int j = 0; j < PER_LANE; j++)
        if (lane + j * WARP_SIZE < HEAD_DIM)
            out[lane + j * WARP_SIZE] = from_float<T>(value[j]);
    if (lane == 0 && args.lse)
        args.lse[row] = lse;
}

}  // namespace fc
