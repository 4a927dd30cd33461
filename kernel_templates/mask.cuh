// Which keys a query row sees: the one device rule (src/mask.c is its host mirror, used by the
// CPU reference and the planner). Causal is bottom-right aligned: query row i sees keys
// j <= i + seqlen_k - seqlen_q. A new mask (a sliding window) changes this struct and src/mask.c.
#pragma once

#include "fc_args.h"
#include "ptx/math.cuh"
#include "ptx/warp.cuh"

namespace fc {

// NOTE: it reads the sizes from the kernel argument at each use rather than keeping copies: the
// argument lives in constant memory, which instructions read for free, and copies would be live
// registers through the key loop of kernels that have none to spare (sm80 at head_dim 128).
template <bool CAUSAL>
struct KeyMask {
    const fc_kernel_args &args;

    __device__ __forceinline__ explicit KeyMask(const fc_kernel_args &a) : args(a) {}

    // The last key query row 0 sees, if causal.
    __device__ __forceinline__ int diagonal() const { return args.seqlen_k - args.seqlen_q; }

    // Query row `row` sees key `key` (the rule), and its negation.
    __device__ __forceinline__ bool visible(int row, int key) const
    {
        return key < args.seqlen_k && (!CAUSAL || key <= row + diagonal());
    }
    __device__ __forceinline__ bool hidden(int row, int key) const
    {
        return key >= args.seqlen_k || (CAUSAL && key > row + diagonal());
    }

    // One past the last key that rows below row_end see: where a block's key loop stops.
    __device__ __forceinline__ int key_end(int row_end) const
    {
        return CAUSAL ? min(args.seqlen_k, row_end + diagonal()) : args.seqlen_k;
    }

    // Whether some key of [key0, key0 + count) is hidden from some row from first_row on: the tile
    // must be masked element by element (the others are used as they are).
    __device__ __forceinline__ bool partial(int first_row, int key0, int count) const
    {
        return key0 + count > args.seqlen_k || (CAUSAL && key0 + count - 1 > first_row + diagonal());
    }
};

// Masks scores held as mma C fragments (a thread holds, per 16-row m-tile, rows first_row + lane / 4
// (+ 8) and two adjacent keys of every 8-key tile): hidden keys become -inf where `masked`; with a
// negative softmax scale also scales (the softmax then gets factor 1, see softmax.cuh).
template <bool CAUSAL, int M_TILES, int N_TILES>
__device__ __forceinline__ void mask_scores(float (&s)[M_TILES][N_TILES][4], const KeyMask<CAUSAL> &mask,
                                            int first_row, int key0, bool masked, float prescale)
{
    const int lane = threadIdx.x % WARP_SIZE;
#pragma unroll
    for (int m = 0; m < M_TILES; m++)
#pragma unroll
        for (int n = 0; n < N_TILES; n++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int row = first_row + m * 16 + lane / 4 + 8 * (i / 2);
                const int key = key0 + n * 8 + 2 * (lane % 4) + i % 2;
                // NOTE: evaluated apart from `masked`: inside the condition it becomes a branch per
                // element, and the sm90 kernel with three consumers then spills (476 bytes).
                const bool hidden = mask.hidden(row, key);
                s[m][n][i] = masked && hidden ? -infinity() : s[m][n][i] * prescale;
            }
}

}  // namespace fc
