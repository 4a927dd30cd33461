// Pieces every attention kernel shares, written against the mma C-fragment layout (which is also
// each warp's share of a WGMMA m64 accumulator): a thread holds, per 16-row m-tile, rows
// first_row + lane / 4 (+ 8) and two adjacent columns of every 8-wide tile.
#pragma once

#include "fc_args.h"
#include "kv_source.cuh"
#include "ptx/gmem.cuh"
#include "ptx/math.cuh"
#include "ptx/mma.cuh"
#include "softmax.cuh"

namespace fc {

// Which rows of which (batch, head) this CTA computes: blockIdx.x runs over row blocks fastest
// (CTAs of one head run together and share its K/V in L2), then heads, then batches.
struct BlockCoordinates {
    int batch, head, kv_head, row0;
};

// `block` is blockIdx.x (a kernel may pass a fresh read of it to re-derive the coordinates late).
template <bool CAUSAL>
__device__ __forceinline__ BlockCoordinates block_coordinates(const fc_kernel_args &args, int block_m, int block)
{
    int m_block = block % args.m_blocks;
    if (CAUSAL)   // NOTE: the heaviest blocks (most keys) first: the tail of the grid is short
        m_block = args.m_blocks - 1 - m_block;
    block /= args.m_blocks;
    BlockCoordinates c;
    c.head = block % args.heads_q;
    c.batch = block / args.heads_q;
    c.kv_head = c.head / args.q_per_kv;   // GQA: heads share K/V, nothing is copied
    c.row0 = m_block * block_m;
    return c;
}

template <bool CAUSAL>
__device__ __forceinline__ BlockCoordinates block_coordinates(const fc_kernel_args &args, int block_m)
{
    return block_coordinates<CAUSAL>(args, block_m, blockIdx.x);
}

// A CTA whose rows are the query heads of one K/V head (the sm90 kernel's PACK_GQA): blockIdx.x runs
// over the splits of the keys fastest (split-KV: blockIdx.x % splits; 1 unsplit), then blocks of
// `positions` query rows (causal: the heaviest first), then K/V heads, then batches; head is the K/V
// head's first query head, row0 the block's first query row.
template <bool CAUSAL>
__device__ __forceinline__ BlockCoordinates packed_block_coordinates(const fc_kernel_args &args, int positions)
{
    int block = blockIdx.x / args.splits, m_block = block % args.m_blocks;
    if (CAUSAL)
        m_block = args.m_blocks - 1 - m_block;
    block /= args.m_blocks;
    BlockCoordinates c;
    c.kv_head = block % args.heads_kv;
    c.batch = block / args.heads_kv;
    c.head = c.kv_head * args.q_per_kv;
    c.row0 = m_block * positions;
    return c;
}

// A persistent grid's units of work: its CTAs take units blockIdx.x, then gridDim.x apart, in turn,
// each unit one row block (block_coordinates' order) or, causal, two of one (batch, head): row
// blocks p and m_blocks - 1 - p, whose keys add up to the same count for every p, so that every
// unit weighs the same (the middle block of an odd m_blocks alone). With TAIL (causal), the last
// `tail` (batch, head)s' blocks are units of one block each, dealt heaviest first (fc_args.h's fc_static_tail_rank),
// so that the CTAs the pairs' last round left idle take the heaviest of them and every CTA finishes
// with light ones (the host chooses `tail`: src/family_sm90.c's static_tail); without it, `tail` is
// not read (and no code for it). A unit's blocks are tile_coordinates(.., unit, part) for part <
// unit_parts(unit). NOTE: not the heaviest blocks of every head first: a round of CTAs then reads as
// many heads' K/V as it has CTAs, and L2 keeps none of them (0.52x at 512 causal keys, PERF_NOTES
// v10); nor block_coordinates' order, whose heavy and light blocks a CTA meets by the grid's stride,
// e.g. only its heaviest when gridDim.x is a multiple of m_blocks.
template <bool CAUSAL, bool TAIL>
__device__ __forceinline__ int persistent_units(const fc_kernel_args &args, int tail)
{
    if constexpr (!TAIL)
        return FC_PERSISTENT_HEAD_UNITS(args.m_blocks, CAUSAL) * args.heads_q * args.batch;
    return FC_PERSISTENT_HEAD_UNITS(args.m_blocks, true) * (args.heads_q * args.batch - tail) + tail * args.m_blocks;
}

// TAIL: the pairs' units before the tail's.
__device__ __forceinline__ int front_units(const fc_kernel_args &args, int tail)
{
    return FC_PERSISTENT_HEAD_UNITS(args.m_blocks, true) * (args.heads_q * args.batch - tail);
}

template <bool CAUSAL, bool TAIL>
__device__ __forceinline__ int unit_parts(const fc_kernel_args &args, int unit, int tail)
{
    if constexpr (!CAUSAL)
        return 1;
    if (TAIL && unit >= front_units(args, tail))
        return 1;
    const int p = unit % FC_PERSISTENT_HEAD_UNITS(args.m_blocks, true);
    return p == args.m_blocks - 1 - p ? 1 : 2;
}

template <bool CAUSAL, bool TAIL>
__device__ __forceinline__ BlockCoordinates tile_coordinates(const fc_kernel_args &args, int block_m, int unit, int part,
                                                             int tail)
{
    if constexpr (!CAUSAL)
        return block_coordinates<false>(args, block_m, unit);
    const int pairs = FC_PERSISTENT_HEAD_UNITS(args.m_blocks, true);
    BlockCoordinates c;
    if constexpr (!TAIL) {
        const int p = unit % pairs, heads = unit / pairs;
        c.head = heads % args.heads_q;
        c.batch = heads / args.heads_q;
        c.kv_head = c.head / args.q_per_kv;
        c.row0 = (part == 0 ? args.m_blocks - 1 - p : p) * block_m;   // the heavier first
        return c;
    }
    const int front = front_units(args, tail);
    int heads, m;
    if (unit < front) {
        const int p = unit % pairs;
        heads = unit / pairs;
        m = part == 0 ? args.m_blocks - 1 - p : p;
    } else {   // the tail's (batch, head)s' blocks, heaviest first across them
        const int rank = fc_static_tail_rank(unit, front, tail * args.m_blocks, static_cast<int>(gridDim.x));
        heads = front / pairs + rank % tail;
        m = args.m_blocks - 1 - rank / tail;
    }
    c.head = heads % args.heads_q;
    c.batch = heads / args.heads_q;
    c.kv_head = c.head / args.q_per_kv;
    c.row0 = m * block_m;
    return c;
}

// A scheduled persistent grid (FP8, causal: fwd_sm90.cuh's run_scheduled) takes the row blocks of
// one list from a counter, each CTA its next block when it is free; this is the list. The (batch,
// head)s in turn, each head's blocks heaviest, lightest, next heaviest, next lightest, ... (the
// pairs of persistent_units, so that the CTAs running together share one or two heads' K and V);
// but the last `tail` heads' blocks heaviest first across those heads, so that the last blocks any
// CTA takes are light ones and the CTAs finish together. Position i of the list, as the block's
// index in block_coordinates<false>' order ((batch * heads_q + head) * m_blocks + m).
__device__ __forceinline__ int scheduled_block(const fc_kernel_args &args, int i, int tail)
{
    const int m_blocks = args.m_blocks, front = (args.heads_q * args.batch - tail) * m_blocks;
    if (i < front) {
        const int heads = i / m_blocks, r = i - heads * m_blocks, p = r / 2;
        return heads * m_blocks + (r % 2 ? p : m_blocks - 1 - p);
    }
    const int j = i - front, k = j / tail;
    return (front / m_blocks + (j - k * tail)) * m_blocks + m_blocks - 1 - k;
}

// Quad transpose: lane c of each quad of a warp holds words[j] = its two columns of tile j (of four
// consecutive 8-column tiles of one row); after it, lane c holds the eight columns of tile c, in
// order (lane j's pair of tile c in words[j]). Round `lanes` (1, then 2) swaps with lane c ^ lanes
// the words whose index differs from c in that bit. Every lane of the warp takes part.
__device__ __forceinline__ void quad_transpose(unsigned (&words)[4], int c)
{
#pragma unroll
    for (int lanes = 1; lanes < 4; lanes *= 2) {
        const bool upper = c & lanes;   // this lane keeps words i + lanes and takes words i
#pragma unroll
        for (int i = 0; i < 4; i++)
            if (!(i & lanes)) {
                const unsigned got = __shfl_xor_sync(FULL_WARP, upper ? words[i] : words[i + lanes], lanes);
                if (upper)
                    words[i] = got;
                else
                    words[i + lanes] = got;
            }
    }
}

// One row of O (this thread's columns, times `inverse`) into `row_out` if `write` (every lane of the
// warp calls it: the quads' shuffles). Each 32-column group x as 16-byte stores: lane c of the row's
// quad stores columns 32 x + 8 c .. + 7, which the mma C layout's pairs become after a quad
// transpose, or with FP8_ORDER (mma.sync kernels reading FP8 V, fwd_decode.cuh's top comment) which
// that lane holds already. NOTE: a 4-byte store a pair (each warp store filling half of each 32-byte
// sector) had L2 take 1.45x FlashAttention-3's write sectors at 512 keys, where O is a quarter of the
// bytes (PERF_NOTES v16). D_TILES not a multiple of 4 (a head_dim not a multiple of 32) keeps them,
// and so does NARROW (the sm90 quick first call's kernel: a fifth less NVRTC time, PERF_NOTES v37).
template <typename T, bool FP8_ORDER, bool NARROW = false, int D_TILES>
__device__ __forceinline__ void store_row(T *row_out, const float (&o)[D_TILES][4], int h, float inverse, int lane,
                                          bool write)
{
    if constexpr (FP8_ORDER) {
#pragma unroll
        for (int x = 0; x < D_TILES / 4; x++) {
            unsigned w[4];   // word 2e + jj: dims 8c + 4e + 2jj, +1 of the group
#pragma unroll
            for (int e = 0; e < 2; e++)
#pragma unroll
                for (int jj = 0; jj < 2; jj++)
                    w[2 * e + jj] = Mma<T>::pack(o[4 * x + 2 * jj][2 * h + e] * inverse,
                                                 o[4 * x + 2 * jj + 1][2 * h + e] * inverse);
            if (write)
                st_global_v4(row_out + 32 * x + 8 * (lane % 4), w[0], w[1], w[2], w[3]);
        }
    } else if constexpr (D_TILES % 4 == 0 && !NARROW) {
#pragma unroll
        for (int x = 0; x < D_TILES / 4; x++) {
            unsigned w[4];   // tile 4 x + j's pair, then (quad_transpose) tile 4 x + lane % 4's eight columns
#pragma unroll
            for (int j = 0; j < 4; j++)
                w[j] = Mma<T>::pack(o[4 * x + j][2 * h] * inverse, o[4 * x + j][2 * h + 1] * inverse);
            quad_transpose(w, lane % 4);
            if (write)
                st_global_v4(row_out + 32 * x + 8 * (lane % 4), w[0], w[1], w[2], w[3]);
        }
    } else if (write) {
        unsigned *words = reinterpret_cast<unsigned *>(row_out);
#pragma unroll
        for (int d = 0; d < D_TILES; d++)
            words[d * 4 + lane % 4] = Mma<T>::pack(o[d][2 * h] * inverse, o[d][2 * h + 1] * inverse);
    }
}

// O (divided by the row sums) and the LSE of this thread's rows, with the head's sink folded in
// if there are sinks (softmax.cuh); rows past seqlen_q are skipped. FP8_ORDER: see store_row. With
// OUT_SCALED (FP8_ORDER's default), O is scaled by out_scale (an FP8 V's v_descale) too. NARROW: see
// store_row.
template <typename T, int M_TILES, int D_TILES, int N_TILES, bool FP8_ORDER = false, bool OUT_SCALED = FP8_ORDER,
          bool NARROW = false>
__device__ __forceinline__ void store_output(const fc_kernel_args &args, int batch, int head, int first_row,
                                             const float (&o)[M_TILES][D_TILES][4],
                                             const OnlineSoftmax<M_TILES, N_TILES> &softmax, float out_scale = 1.f)
{
    const int lane = threadIdx.x % WARP_SIZE;
    T *out = static_cast<T *>(args.o) + batch * args.o_stride[0] + head * args.o_stride[2];
    const bool sinks = args.sinks != nullptr;   // run time: a uniform branch per row, after the key loop
    const float sink = sinks ? args.sinks[head] * LOG2E : 0.f;
#pragma unroll
    for (int m = 0; m < M_TILES; m++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int row = first_row + m * 16 + lane / 4 + 8 * h;
            const bool inside = row < args.seqlen_q;   // rows past it: finished (every lane shuffles), not written
            float row_max = softmax.row_max[m][h], sum = softmax.row_sum[m][h], scale = 1.f;
            if (sinks)
                scale = fold_sink(row_max, sum, sink);
            const float inverse = sum > 0.f ? (OUT_SCALED ? scale * out_scale : scale) / sum : 0.f;   // no key: 0
            store_row<T, FP8_ORDER, NARROW>(out + row * args.o_stride[1], o[m], h, inverse, lane, inside);
            if (inside && args.lse && lane % 4 == 0)
                args.lse[(static_cast<long long>(batch) * args.heads_q + head) * args.seqlen_q + row] =
                    OnlineSoftmax<M_TILES, N_TILES>::log_sum_exp(row_max, sum);
        }
}

// store_output for GQA-packed rows (the sm90 kernel's PACK_GQA), one m-tile: this thread's row h
// (lane / 4 + 8 h of its warp's 16) is query row row[h] of head head[h], written if inside[h]; each
// row's sink is its head's.
template <typename T, int D_TILES, int N_TILES>
__device__ __forceinline__ void store_head_rows(const fc_kernel_args &args, int batch, const int (&head)[2],
                                                const int (&row)[2], const bool (&inside)[2],
                                                const float (&o)[1][D_TILES][4], const OnlineSoftmax<1, N_TILES> &softmax)
{
    const int lane = threadIdx.x % WARP_SIZE;
    T *out = static_cast<T *>(args.o) + batch * args.o_stride[0];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float row_max = softmax.row_max[0][h], sum = softmax.row_sum[0][h], scale = 1.f;
        if (args.sinks)
            scale = fold_sink(row_max, sum, args.sinks[head[h]] * LOG2E);
        const float inverse = sum > 0.f ? scale / sum : 0.f;   // no key: 0
        store_row<T, false>(out + row[h] * args.o_stride[1] + head[h] * args.o_stride[2], o[0], h, inverse, lane,
                            inside[h]);
        if (inside[h] && args.lse && lane % 4 == 0)
            args.lse[(static_cast<long long>(batch) * args.heads_q + head[h]) * args.seqlen_q + row[h]] =
                OnlineSoftmax<1, N_TILES>::log_sum_exp(row_max, sum);
    }
}

// store_output for one sequence (VARLEN variants): its rows start at seq.q_row0 in out, only its
// len_q rows are written, and the LSE is at Sequence::lse_row0's index.
template <typename T, int M_TILES, int D_TILES, int N_TILES, bool FP8_ORDER = false, bool OUT_SCALED = FP8_ORDER,
          bool NARROW = false>
__device__ __forceinline__ void store_sequence_output(const fc_kernel_args &args, const Sequence &seq, int batch,
                                                      int head, int first_row, const float (&o)[M_TILES][D_TILES][4],
                                                      const OnlineSoftmax<M_TILES, N_TILES> &softmax,
                                                      float out_scale = 1.f)
{
    const int lane = threadIdx.x % WARP_SIZE;
    T *out = static_cast<T *>(args.o) + batch * args.o_stride[0] + seq.q_row0 * args.o_stride[1] +
             head * args.o_stride[2];
    const bool sinks = args.sinks != nullptr;
    const float sink = sinks ? args.sinks[head] * LOG2E : 0.f;
#pragma unroll
    for (int m = 0; m < M_TILES; m++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int row = first_row + m * 16 + lane / 4 + 8 * h;
            const bool inside = row < seq.len_q;   // the block's rows past the sequence: another sequence's, or none
            float row_max = softmax.row_max[m][h], sum = softmax.row_sum[m][h], scale = 1.f;
            if (sinks)
                scale = fold_sink(row_max, sum, sink);
            const float inverse = sum > 0.f ? (OUT_SCALED ? scale * out_scale : scale) / sum : 0.f;
            store_row<T, FP8_ORDER, NARROW>(out + row * args.o_stride[1], o[m], h, inverse, lane, inside);
            if (inside && args.lse && lane % 4 == 0)
                args.lse[seq.lse_row0 + static_cast<long long>(head) * args.seqlen_q + row] =
                    OnlineSoftmax<M_TILES, N_TILES>::log_sum_exp(row_max, sum);
        }
}

// Multiplies each row of O by its softmax correction.
template <int M_TILES, int D_TILES>
__device__ __forceinline__ void rescale_output(float (&o)[M_TILES][D_TILES][4], const float (&correction)[M_TILES][2])
{
#pragma unroll
    for (int m = 0; m < M_TILES; m++)
#pragma unroll
        for (int d = 0; d < D_TILES; d++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                o[m][d][i] *= correction[m][i / 2];
}

// P (fp32 scores after the softmax) as the 16-bit A fragment of k-step k (keys 16k ... 16k + 15).
template <typename T, int N_TILES>
__device__ __forceinline__ void p_fragment(unsigned (&a)[4], const float (&p)[N_TILES][4], int k)
{
    a[0] = Mma<T>::pack(p[2 * k][0], p[2 * k][1]);
    a[1] = Mma<T>::pack(p[2 * k][2], p[2 * k][3]);
    a[2] = Mma<T>::pack(p[2 * k + 1][0], p[2 * k + 1][1]);
    a[3] = Mma<T>::pack(p[2 * k + 1][2], p[2 * k + 1][3]);
}

}  // namespace fc
