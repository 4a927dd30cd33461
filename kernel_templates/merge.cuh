// Merges two partial attention results of the same queries over disjoint key ranges through their
// log-sum-exps: the building block of context-parallel (ring) attention, fc_attention_merge.
//
//   lse = log(exp(lse_a) + exp(lse_b)),  out = exp(lse_a - lse) out_a + exp(lse_b - lse) out_b
//
// A part that saw no key (lse -inf) weighs 0; with both, out is 0 and lse -inf. One warp per
// (batch, head, query) row, WARPS rows per CTA, 16-byte loads and stores of PER_CHUNK elements. In
// place is allowed (out = out_a, lse = lse_a): each lane reads its elements before writing them,
// and a row's LSE is read by every lane before lane 0 replaces it.
#pragma once

#include "element.cuh"
#include "fc_args.h"
#include "ptx/convert.cuh"
#include "ptx/math.cuh"
#include "ptx/warp.cuh"

namespace fc {

template <typename T, int HEAD_DIM, int WARPS>
struct MergeKernel {
    using E = Element<T>;
    static constexpr int THREADS = WARPS * WARP_SIZE;
    static constexpr int SMEM_BYTES = 0, MIN_BLOCKS = 1;
    static constexpr int CHUNKS = HEAD_DIM / E::PER_CHUNK;   // 16-byte chunks of a row
    static_assert(HEAD_DIM % E::PER_CHUNK == 0 && CHUNKS <= WARP_SIZE, "head_dim: whole 16-byte chunks, one per lane");

    const fc_merge_args &args;

    __device__ MergeKernel(const fc_merge_args &a, char *) : args(a) {}

    // Element d of a row, as float, from a chunk of PER_CHUNK elements.
    __device__ __forceinline__ static float element(const uint4 &chunk, int d)
    {
        const unsigned word = (&chunk.x)[d / E::PER_WORD];
        T x;
        x.bits = static_cast<decltype(x.bits)>(word >> (d % E::PER_WORD * 8 * E::BYTES));
        return to_float(x);
    }

    __device__ void run()
    {
        const int lane = threadIdx.x % WARP_SIZE;
        const long long row = static_cast<long long>(blockIdx.x) * WARPS + threadIdx.x / WARP_SIZE;
        if (row >= static_cast<long long>(args.batch) * args.heads * args.seqlen)
            return;
        const float lse_a = args.lse_a[row], lse_b = args.lse_b[row];
        const float top = fmaxf(lse_a, lse_b);
        float weight_a = 0.f, weight_b = 0.f, lse = -infinity();
        if (top != -infinity()) {
            const float part_a = expf(lse_a - top), part_b = expf(lse_b - top);
            const float sum = part_a + part_b;
            lse = top + logf(sum);
            weight_a = part_a / sum;
            weight_b = part_b / sum;
        }
        __syncwarp();   // in place: every lane has read the row's LSEs before lane 0 replaces them
        const int query = static_cast<int>(row % args.seqlen);
        const int head = static_cast<int>(row / args.seqlen % args.heads);
        const int batch = static_cast<int>(row / args.seqlen / args.heads);
        if (lane < CHUNKS) {
            const long long a_at = batch * args.a_stride[0] + query * args.a_stride[1] + head * args.a_stride[2];
            const long long b_at = batch * args.b_stride[0] + query * args.b_stride[1] + head * args.b_stride[2];
            const long long o_at = batch * args.o_stride[0] + query * args.o_stride[1] + head * args.o_stride[2];
            const uint4 a = reinterpret_cast<const uint4 *>(static_cast<const T *>(args.out_a) + a_at)[lane];
            const uint4 b = reinterpret_cast<const uint4 *>(static_cast<const T *>(args.out_b) + b_at)[lane];
            uint4 merged;
            unsigned *words = &merged.x;
#pragma unroll
            for (int w = 0; w < 4; w++) {
                words[w] = 0;
#pragma unroll
                for (int i = 0; i < E::PER_WORD; i++) {
                    const int d = w * E::PER_WORD + i;
                    const T value = from_float<T>(weight_a * element(a, d) + weight_b * element(b, d));
                    words[w] |= static_cast<unsigned>(value.bits) << (i * 8 * E::BYTES);
                }
            }
            reinterpret_cast<uint4 *>(static_cast<T *>(args.out) + o_at)[lane] = merged;
        }
        if (lane == 0 && args.lse)
            args.lse[row] = lse;
    }
};

}  // namespace fc
