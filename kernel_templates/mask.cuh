// Which keys a query row sees: the one device rule (src/mask.c is its host mirror, used by the
// CPU reference and the planner). Query row i's diagonal is key d = i + seqlen_k - seqlen_q
// (bottom-right aligned). Causal: keys up to d. Sliding window: keys in [d - window_left,
// d + window_right] (src/problem.c resolves an unbounded side to a bound past the sequence, so
// the kernels never test for -1). Always only keys below seqlen_k. CAUSAL and WINDOW are the
// variant's compile-time switches: without them the code is what it was before windows existed.
#pragma once

#include "fc_args.h"
#include "ptx/math.cuh"
#include "ptx/warp.cuh"

namespace fc {

// NOTE: it reads the sizes and bounds from the kernel argument at each use rather than keeping
// copies: the argument lives in constant memory, which instructions read for free, and copies
// would be live registers through the key loop of kernels that have none to spare (sm80 at
// head_dim 128).
// The lengths the rule applies to: the argument's (dense), or the CTA's sequence's (VARLEN: a
// varlen batch or seqused_k), which publish_sequence_lengths puts in shared memory. NOTE: read
// from shared memory at each use, as the dense rule reads the argument's: kept in registers
// through the key loop, they spilled the sm80 kernel at head_dim 64 and 128 causal (20-60 bytes).
// An empty base either way, so that KeyMask is what it was before per-sequence lengths existed.
__shared__ int fc_sequence_lengths[2];   // the CTA's sequence: queries, keys

template <bool VARLEN>
struct MaskLengths {
    __device__ __forceinline__ int seqlen_q(const fc_kernel_args &args) const { return args.seqlen_q; }
    __device__ __forceinline__ int seqlen_k(const fc_kernel_args &args) const { return args.seqlen_k; }
};
template <>
struct MaskLengths<true> {
    __device__ __forceinline__ int seqlen_q(const fc_kernel_args &) const { return fc_sequence_lengths[0]; }
    __device__ __forceinline__ int seqlen_k(const fc_kernel_args &) const { return fc_sequence_lengths[1]; }
};

// VARLEN: thread 0 publishes the CTA's sequence lengths, then the CTA syncs (every thread calls it).
__device__ __forceinline__ void publish_sequence_lengths(int len_q, int len_k)
{
    if (threadIdx.x == 0) {
        fc_sequence_lengths[0] = len_q;
        fc_sequence_lengths[1] = len_k;
    }
    __syncthreads();
}

template <bool CAUSAL, bool WINDOW = false, bool VARLEN = false>
struct KeyMask : MaskLengths<VARLEN> {
    const fc_kernel_args &args;

    __device__ __forceinline__ explicit KeyMask(const fc_kernel_args &a) : args(a) {}

    __device__ __forceinline__ int seqlen_q() const { return MaskLengths<VARLEN>::seqlen_q(args); }
    __device__ __forceinline__ int seqlen_k() const { return MaskLengths<VARLEN>::seqlen_k(args); }

    // The last key query row 0 sees, if causal.
    __device__ __forceinline__ int diagonal() const { return seqlen_k() - seqlen_q(); }

    // The first key row `row` sees (window), before clamping to 0.
    __device__ __forceinline__ int first_key(int row) const { return row + diagonal() - args.mask.window_left; }
    // The last key row `row` sees (causal or window), before clamping to seqlen_k - 1.
    __device__ __forceinline__ int last_key(int row) const
    {
        return CAUSAL ? row + diagonal() : row + diagonal() + args.mask.window_right;
    }

    // Query row `row` sees key `key` (the rule), and its negation.
    __device__ __forceinline__ bool visible(int row, int key) const
    {
        if constexpr (WINDOW)
            return key < seqlen_k() && key <= last_key(row) && key >= first_key(row);
        else
            return key < seqlen_k() && (!CAUSAL || key <= row + diagonal());
    }
    __device__ __forceinline__ bool hidden(int row, int key) const
    {
        if constexpr (WINDOW)
            return key >= seqlen_k() || key > last_key(row) || key < first_key(row);
        else
            return key >= seqlen_k() || (CAUSAL && key > row + diagonal());
    }

    // A window's keys of row `row` as a span [first, first + count), count >= 0 (first may be
    // negative: no key below 0 is ever asked about), for masking many keys of one row: key >= 0 is
    // hidden iff unsigned(key - first) >= unsigned(count), one subtraction and one comparison.
    struct Span {
        int first, count;
        __device__ __forceinline__ bool hides(int key) const
        {
            return static_cast<unsigned>(key - first) >= static_cast<unsigned>(count);
        }
    };
    __device__ __forceinline__ Span span(int row) const
    {
        const int first = first_key(row), end = min(seqlen_k(), last_key(row) + 1);
        return Span{first, max(0, end - first)};
    }

    // The first key that rows from row_begin on see: where a block's key loop starts (0 without
    // a window). The caller rounds it down to its tiles.
    __device__ __forceinline__ int key_begin(int row_begin) const
    {
        if constexpr (WINDOW)
            return max(0, first_key(row_begin));
        else
            return 0;
    }

    // One past the last key that rows below row_end see: where a block's key loop stops.
    __device__ __forceinline__ int key_end(int row_end) const
    {
        if constexpr (WINDOW)
            return min(seqlen_k(), last_key(row_end - 1) + 1);
        else
            return CAUSAL ? min(seqlen_k(), row_end + diagonal()) : seqlen_k();
    }

    // Whether some key of [key0, key0 + count) is hidden from some row of [first_row, last_row]:
    // the tile must be masked element by element (the others are used as they are). The right
    // bound is tightest for the first row, the left bound (a window's) for the last.
    __device__ __forceinline__ bool partial(int first_row, int last_row, int key0, int count) const
    {
        if constexpr (WINDOW)
            return key0 + count > seqlen_k() || key0 + count - 1 > last_key(first_row) || key0 < first_key(last_row);
        else
            return key0 + count > seqlen_k() || (CAUSAL && key0 + count - 1 > first_row + diagonal());
    }
};

// Masks scores held as mma C fragments: the thread's rows h = 0, 1 of m-tile m are query rows
// row_of(m, h), and it holds two adjacent keys of every 8-key tile; hidden keys become -inf where
// `masked`; with a negative softmax scale also scales (the softmax then gets factor 1, see
// softmax.cuh). mask_scores and mask_row_scores (below) name the rows. NOTE: mask_scores' rows
// from a lane of its own: given this function's (a third argument of row_of), the sm80 kernels'
// PTX reordered its lane and block arithmetic; so, 56 sm90 kernels compute lane / 4 as
// (tid & 28) >> 2 where they had (tid & 31) >> 2, their only change.
template <bool CAUSAL, bool WINDOW, bool VARLEN, int M_TILES, int N_TILES, typename RowOf>
__device__ __forceinline__ void mask_scores_of_rows(float (&s)[M_TILES][N_TILES][4],
                                                    const KeyMask<CAUSAL, WINDOW, VARLEN> &mask, RowOf row_of,
                                                    int key0, bool masked, float prescale)
{
    const int lane = threadIdx.x % WARP_SIZE;
    if constexpr (WINDOW) {
        // NOTE: per row a span, per key a subtraction and a comparison: with hidden()'s three
        // comparisons per key, the sm90 kernel with three consumers spilled (12 bytes).
#pragma unroll
        for (int m = 0; m < M_TILES; m++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const auto span = mask.span(row_of(m, h));
#pragma unroll
                for (int n = 0; n < N_TILES; n++)
#pragma unroll
                    for (int j = 0; j < 2; j++) {
                        const bool hidden = span.hides(key0 + n * 8 + 2 * (lane % 4) + j);
                        float &score = s[m][n][2 * h + j];
                        score = masked && hidden ? -infinity() : score * prescale;
                    }
            }
        return;
    }
#pragma unroll
    for (int m = 0; m < M_TILES; m++)
#pragma unroll
        for (int n = 0; n < N_TILES; n++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int row = row_of(m, i / 2);
                const int key = key0 + n * 8 + 2 * (lane % 4) + i % 2;
                // NOTE: evaluated apart from `masked`: inside the condition it becomes a branch per
                // element, and the sm90 kernel with three consumers then spills (476 bytes).
                const bool hidden = mask.hidden(row, key);
                s[m][n][i] = masked && hidden ? -infinity() : s[m][n][i] * prescale;
            }
}

// The rows of a warp's m-tiles from first_row: m-tile m's rows h are first_row + 16 m + lane / 4 + 8 h.
template <bool CAUSAL, bool WINDOW, bool VARLEN, int M_TILES, int N_TILES>
__device__ __forceinline__ void mask_scores(float (&s)[M_TILES][N_TILES][4], const KeyMask<CAUSAL, WINDOW, VARLEN> &mask,
                                            int first_row, int key0, bool masked, float prescale)
{
    const int lane = threadIdx.x % WARP_SIZE;
    mask_scores_of_rows(s, mask, [&](int m, int h) { return first_row + m * 16 + lane / 4 + 8 * h; }, key0, masked,
                        prescale);
}

// Rows that are not consecutive query rows: m-tile m's rows h are rows[m][h], e.g. GQA-packed rows,
// several heads' rows in one tile (the sm90 kernel's PACK_GQA).
template <bool CAUSAL, bool WINDOW, bool VARLEN, int M_TILES, int N_TILES>
__device__ __forceinline__ void mask_row_scores(float (&s)[M_TILES][N_TILES][4],
                                                const KeyMask<CAUSAL, WINDOW, VARLEN> &mask,
                                                const int (&rows)[M_TILES][2], int key0, bool masked, float prescale)
{
    mask_scores_of_rows(s, mask, [&](int m, int h) { return rows[m][h]; }, key0, masked, prescale);
}

}  // namespace fc
