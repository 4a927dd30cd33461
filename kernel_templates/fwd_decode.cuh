// Attention forward for a few query rows against many keys (decode, short prefill): split-KV with
// the query heads of a GQA group packed into one tile (sm_80 and later, mma.sync).
//
// A CTA takes one (batch, K/V head) and one split: a range of split_keys keys. Its ROWS (16, 32 or
// 64) tile rows are the (query head of the group, query row) pairs, q_per_kv * seqlen_q <= ROWS of
// them, so each K/V element read from memory serves the whole group. K and V stream through a
// STAGES-deep cp.async ring in tiles of BLOCK_N keys. The warps form M_TILES row groups of 16 rows
// times SLICES key slices: warp w takes the rows of m-tile w % M_TILES and keys [s * KEYS, (s + 1) *
// KEYS), s = w / M_TILES, of each tile, with its own online softmax (S and P V on mma.sync
// m16n8k16, as fwd_sm80.cuh), and the slices of each m-tile merge (max, sum, O) through shared
// memory at the end. With one split the CTA writes O and
// the LSE; with several it writes fp32 O (already divided by its sum) and its LSE per split, and
// split_kv.cuh's combine_splits, the second kernel of the module, merges them.
//
// KV_FP8 (an FP8 KV cache, sm_89+): K and V stay e4m3 in shared memory, half the bytes through the
// ring, and become f16 at the fragments in fp8_kv.cuh's byte orders (the merge writes O back in dim
// order). The scales are fp32 per (batch, K/V head): k_descale joins the softmax scale, v_descale the
// output.
#pragma once

#include "attention_common.cuh"
#include "element.cuh"
#include "fc_args.h"
#include "fp8_kv.cuh"
#include "kv_source.cuh"
#include "mask.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/ldmatrix.cuh"
#include "ptx/mma.cuh"
#include "ptx/smem.cuh"
#include "softmax.cuh"
#include "split_kv.cuh"

namespace fc {

template <typename T, int HEAD_DIM, bool CAUSAL, int BLOCK_N, int STAGES, int WARPS, bool WINDOW = false,
          bool SOFTCAP = false, bool VARLEN = false, bool PAGED = false, bool KV_FP8 = false, int ROWS = 16>
struct DecodeForward {
    static_assert(!PAGED || VARLEN, "a paged cache takes the per-sequence form");
    static_assert(!KV_FP8 || HEAD_DIM % 32 == 0, "FP8 K/V: head_dim in 32-dim groups of P V's n-tiles");
    using E = Element<T>;
    using KV = typename KvElement<T, KV_FP8>::type;   // K/V storage
    using EK = Element<KV>;
    static constexpr int M_TILES = ROWS / 16;           // m-tiles of packed (head, query) rows
    static constexpr int SLICES = WARPS / M_TILES;      // warps per m-tile, each on its own keys
    static constexpr int THREADS = WARPS * WARP_SIZE;
    static constexpr int KEYS = BLOCK_N / SLICES;       // keys of each tile per warp
    static constexpr int N_TILES = KEYS / 8, D_TILES = HEAD_DIM / 8, K_STEPS = HEAD_DIM / E::MMA_K;
    static constexpr int CHUNKS = HEAD_DIM / E::PER_CHUNK;      // 16-byte chunks per Q row
    static constexpr int KV_CHUNKS = HEAD_DIM / EK::PER_CHUNK;  // ... per K/V row
    static constexpr int PITCH = HEAD_DIM * E::BYTES + 16;   // padded Q rows: conflict-free ldmatrix (fwd_sm80.cuh)
    // NOTE: K and V rows are not padded but swizzled where a row is whole 128-byte lines (chunk c
    // of row r at c ^ (r % 8)): each warp's cp.async then fills whole 128-byte lines of shared
    // memory from whole lines of global memory, and L2 sees one 4-sector request per line. Into
    // padded rows, the same copies reached L2 as 2.7 requests per line and 1.5x the sectors
    // (Nsight Compute, PERF_NOTES v4.4), which held DRAM at 88% of its peak.
    static constexpr bool SWIZZLED = KV_CHUNKS % 8 == 0;
    static constexpr int KV_PITCH = HEAD_DIM * EK::BYTES + (SWIZZLED ? 0 : 16);
    static constexpr int Q_BYTES = ROWS * PITCH, KV_BYTES = BLOCK_N * KV_PITCH;
    static constexpr int MERGE_BYTES = SLICES * ROWS * (HEAD_DIM + 2) * 4;   // per warp: O, max, sum of its 16 rows
    static constexpr int PIPE_BYTES = 2 * STAGES * KV_BYTES;
    static constexpr int SMEM_BYTES = Q_BYTES + (PIPE_BYTES > MERGE_BYTES ? PIPE_BYTES : MERGE_BYTES);
    static constexpr int MIN_BLOCKS = 1;   // __launch_bounds__: registers are not capped for a second CTA
    static_assert(HEAD_DIM % 16 == 0 && HEAD_DIM <= 256, "head_dim: a multiple of 16 up to 256");
    static_assert(ROWS == 16 || ROWS == 32 || ROWS == 64 || ROWS == 128, "16, 32, 64 or 128 packed rows");
    static_assert(WARPS % M_TILES == 0 && BLOCK_N % SLICES == 0, "whole key slices per m-tile");
    static_assert(KEYS == 16 || KEYS == 32 || KEYS == 64, "16, 32 or 64 keys of each tile per warp");
    static_assert(STAGES >= 2 && STAGES <= 4, "2 to 4 stages");

    using MMA = Mma<T>;

    // PAGED: the pages of the rows of a thread's chunks of one tile (its copy j: chunk threadIdx.x + j
    // * THREADS), looked up a tile before their copies are issued (lookup_pages), where a thread has
    // at most 8 copies a tile; with more (head_dim 256: 16, two registers each), or at head_dim 256 at
    // all (FP8 K/V: 8), the lookups stay at the copies: kept, they spilled. Sizes written out, not members: a member constant put a symbol
    // in every variant's PTX.
    __device__ static constexpr int page_copies() { return (BLOCK_N * KV_CHUNKS + THREADS - 1) / THREADS; }
    __device__ static constexpr bool pages_ahead() { return PAGED && page_copies() <= 8 && HEAD_DIM <= 128; }
    struct TilePages {
        PageSlot at[pages_ahead() ? page_copies() : 1];
    };

    const fc_kernel_args &args;
    char *smem;
    int split, batch, kv_head, rows, warp, lane;

    __device__ DecodeForward(const fc_kernel_args &a, char *shared) : args(a), smem(shared)
    {
        int block = blockIdx.x;
        split = block % args.splits;
        block /= args.splits;
        kv_head = block % args.heads_kv;
        batch = block / args.heads_kv;
        rows = args.q_per_kv * args.seqlen_q;   // <= ROWS: the selector's rule
        warp = threadIdx.x / WARP_SIZE;
        lane = threadIdx.x % WARP_SIZE;
    }

    // This warp's m-tile's first packed row, and its key slice. NOTE: computed where used, not
    // members: kept, they cost head_dim 256's varlen variants 8 bytes of spills.
    __device__ __forceinline__ int row0() const { return 16 * (warp % M_TILES); }
    __device__ __forceinline__ int slice() const { return warp / M_TILES; }

    // VARLEN: one sequence's queries (at most max_seqlen_q: the selector's rule holds for them) and
    // keys; its lengths are published in shared memory by run().
    __device__ DecodeForward(const fc_varlen_args &a, char *shared) : DecodeForward(a.base, shared)
    {
        rows = min(ROWS, args.q_per_kv * sequence().len_q);   // NOTE: min: a caller's wrong max_seqlen_q stays in the tile
    }

    // PAGED: the same, with the sequence's keys through its row of the page table.
    __device__ DecodeForward(const fc_paged_args &a, char *shared) : DecodeForward(a.base, shared)
    {
        rows = min(ROWS, args.q_per_kv * sequence().len_q);
    }

    // VARLEN: this CTA's sequence. NOTE: read again where it is needed rather than kept: kept through
    // the key loop, its offsets spilled the head_dim 256 kernels (12-20 bytes).
    __device__ __forceinline__ Sequence sequence() const { return sequence_of<PAGED>(args, seqlens_of(args), batch); }

    // Packed row r: query head kv_head * q_per_kv + r / seqlen_q, query row r % seqlen_q.
    __device__ __forceinline__ int row_head(int r) const
    {
        return kv_head * args.q_per_kv + r / sequence_len_q<VARLEN>(args);
    }
    __device__ __forceinline__ int row_query(int r) const { return r % sequence_len_q<VARLEN>(args); }

    // The LSE index (and, with splits, the partials' row) of packed row (head, query): [batch,
    // heads_q, seqlen_q]; varlen [heads_q, tokens] (Sequence::lse_row0).
    __device__ __forceinline__ long long lse_index(int head, int query) const
    {
        if constexpr (VARLEN)
            return sequence().lse_row0 + static_cast<long long>(head) * args.seqlen_q + query;
        else
            return (static_cast<long long>(batch) * args.heads_q + head) * args.seqlen_q + query;
    }

    // Byte offset of 16-byte chunk c of key row r in a K or V tile.
    __device__ __forceinline__ static int kv_offset(int r, int c)
    {
        return r * KV_PITCH + (SWIZZLED ? c ^ (r % 8) : c) * 16;
    }

    // Keys [first, first + BLOCK_N) of K or V into a tile; keys at or past `end` are zeros.
    __device__ __forceinline__ void load_tile(unsigned dst, const StridedRows<KV> &rows, int first, int end)
    {
#pragma unroll
        for (int i = threadIdx.x; i < BLOCK_N * KV_CHUNKS; i += THREADS) {
            const int r = i / KV_CHUNKS, c = i % KV_CHUNKS;
            const bool valid = first + r < end;
            cp_async_16_stream(dst + kv_offset(r, c), valid ? rows.row(first + r) + c * EK::PER_CHUNK : rows.base, valid);
        }
    }

    // PAGED: the pages of this thread's rows of keys [first, first + BLOCK_N) (keys at or past `end`:
    // none read). NOTE: plain loads, issued a tile before load_paged uses them: a table read in
    // front of each copy left every thread waiting on L2 once a tile (page 1: 58% of the copy
    // bandwidth, half the stalls on it; PERF_NOTES v8.3).
    __device__ __forceinline__ void lookup_pages(TilePages &pages, int first, int end) const
    {
        if constexpr (!pages_ahead())
            return;
#pragma unroll
        for (int j = 0; j < page_copies(); j++) {
            const int i = threadIdx.x + j * THREADS, r = i / KV_CHUNKS;
            pages.at[j] = i < BLOCK_N * KV_CHUNKS && first + r < end ? page_slot(pages_of(args), batch, first + r)
                                                                  : PageSlot{0, 0};
        }
    }

    // PAGED: keys [first, first + BLOCK_N) of K and V into their tiles, at the pages lookup_pages
    // found; keys at or past `end` are zeros. NOTE: each row's page is looked up once, for K and V
    // alike, and its chunks stay whole 16-byte copies of one contiguous row (a page of 16 tokens is
    // 16 such rows per head; a page of 1, one), so the copies fill shared memory's lines as the
    // strided ones do.
    __device__ __forceinline__ void load_paged(unsigned k_dst, unsigned v_dst, int first, int end,
                                               const TilePages &pages)
    {
        const PagedRows<KV> k(args.k, args.k_stride, kv_head), v(args.v, args.v_stride, kv_head);
        if constexpr (pages_ahead()) {
#pragma unroll
            for (int j = 0; j < page_copies(); j++) {
                const int i = threadIdx.x + j * THREADS, r = i / KV_CHUNKS, c = i % KV_CHUNKS;
                if (i < BLOCK_N * KV_CHUNKS) {
                    const bool valid = first + r < end;
                    cp_async_16_stream(k_dst + kv_offset(r, c), k.row(pages.at[j]) + c * EK::PER_CHUNK, valid);
                    cp_async_16_stream(v_dst + kv_offset(r, c), v.row(pages.at[j]) + c * EK::PER_CHUNK, valid);
                }
            }
        } else {
#pragma unroll
            for (int i = threadIdx.x; i < BLOCK_N * KV_CHUNKS; i += THREADS) {
                const int r = i / KV_CHUNKS, c = i % KV_CHUNKS;
                const bool valid = first + r < end;
                const PageSlot at = page_slot_if(valid, pages_of(args), batch, first + r);
                cp_async_16_stream(k_dst + kv_offset(r, c), k.row(at) + c * EK::PER_CHUNK, valid);
                cp_async_16_stream(v_dst + kv_offset(r, c), v.row(at) + c * EK::PER_CHUNK, valid);
            }
        }
    }

    // One stage of the ring: K and V tiles from `first` on (strided rows, or PAGED through the table
    // at `pages`).
    __device__ __forceinline__ void load_kv(unsigned k_dst, unsigned v_dst, const StridedRows<KV> &k,
                                            const StridedRows<KV> &v, int first, int end, const TilePages &pages)
    {
        if constexpr (PAGED) {
            load_paged(k_dst, v_dst, first, end, pages);
        } else {
            load_tile(k_dst, k, first, end);
            load_tile(v_dst, v, first, end);
        }
    }

    __device__ __forceinline__ void load_q(unsigned dst)
    {
        const T *q = static_cast<const T *>(args.q) + batch * args.q_stride[0];
        if constexpr (VARLEN)
            q += sequence().q_row0 * args.q_stride[1];
        for (int i = threadIdx.x; i < ROWS * CHUNKS; i += THREADS) {
            const int r = i / CHUNKS, c = i % CHUNKS;
            const bool valid = r < rows;
            const T *from =
                valid ? q + row_head(r) * args.q_stride[2] + row_query(r) * args.q_stride[1] + c * E::PER_CHUNK : q;
            cp_async_16(dst + r * PITCH + c * 16, from, valid);
        }
    }

    // K or V rows of this CTA's batch, or of its sequence (VARLEN: from its first key token on).
    __device__ __forceinline__ StridedRows<KV> kv_rows(const void *tensor, const long long (&s)[3]) const
    {
        return sequence_rows<VARLEN, KV>(tensor, s, batch, kv_head, VARLEN ? sequence().k_row0 : 0);
    }

    // KV_FP8: Q's fragment of k-step kk in K's byte order, as f16 (fp8_kv.cuh).
    __device__ __forceinline__ void load_q_step(unsigned (&q)[4], unsigned q_smem, int kk) const
    {
        q_fragment_fp8<T, PITCH>(q, q_smem + (lane / 4) * PITCH + (16 * kk + 4 * (lane % 4)) * E::BYTES, q_scale[0]);
    }

    // KV_FP8 with a bf16 Q: its rows g and g + 8 as f16 times a power of two each (fp8_kv.cuh).
    static constexpr bool BF16_Q = KV_FP8 && !Same<T, half_t>::value;
    float q_scale[1][2], q_unscale[1][2];   // the tile's one m-tile
    __device__ __forceinline__ void find_q_scales(unsigned q_smem)
    {
        q_row_scales<PITCH, K_STEPS>(q_smem + (lane / 4) * PITCH + 4 * (lane % 4) * E::BYTES, q_scale[0], q_unscale[0]);
    }

    // Q's fragments, kept in registers for every tile: ldmatrix's order, or KV_FP8 load_q_step's. NOTE:
    // not above head_dim 128, where Q K^T reads them from shared memory at each step: kept beside O's
    // 96-128 accumulators they spilled (FP8 K/V; 16-bit with 32- and 64-row tiles), or held ptxas at
    // 255 registers, a change of instruction order from spilling (16-bit varlen at head_dim 256).
    static constexpr bool Q_IN_REGISTERS = HEAD_DIM <= 128 && WARPS <= 8;
    using QFragments = unsigned[Q_IN_REGISTERS ? K_STEPS : 1][4];
    __device__ __forceinline__ void load_q_fragments(QFragments &q, unsigned q_smem) const
    {
#pragma unroll
        for (int kk = 0; kk < (Q_IN_REGISTERS ? K_STEPS : 0); kk++) {
            if constexpr (KV_FP8)
                load_q_step(q[kk], q_smem, kk);
            else
                ldmatrix_x4(q[kk], q_smem + (lane % 16) * PITCH + (2 * kk + lane / 16) * 16);
        }
    }

    // KV_FP8: S = Q K^T over this warp's keys. ldmatrix of e4m3 rows: matrix j is 8 keys x 16 dims (one
    // k-step) of n-tile n + j % 2, k-step k + j / 2 (fp8_kv.cuh's order).
    __device__ __forceinline__ void qk_fp8(float (&s)[1][N_TILES][4], const QFragments &q, unsigned k_smem,
                                           unsigned q_smem)
    {
#pragma unroll
        for (int k = 0; k < K_STEPS; k += 2)
#pragma unroll
        {
            unsigned read[2][4];   // !Q_IN_REGISTERS: steps k and k + 1
            if constexpr (!Q_IN_REGISTERS) {
                load_q_step(read[0], q_smem, k);
                load_q_step(read[1], q_smem, k + 1);
            }
#pragma unroll
            for (int n = 0; n < N_TILES; n += 2) {
                unsigned b[4];
                const int j = lane / 8, key = slice() * KEYS + (n + j % 2) * 8 + lane % 8;
                ldmatrix_x4(b, k_smem + kv_offset(key, k + j / 2));
#pragma unroll
                for (int m = 0; m < 4; m++) {
                    if constexpr (Q_IN_REGISTERS)
                        mma_qk_fp8(s[0][n + m % 2], q[k + m / 2], b[m]);
                    else
                        mma_qk_fp8(s[0][n + m % 2], read[m / 2], b[m]);
                }
            }
        }
        if constexpr (BF16_Q)
            rescale_output(s, q_unscale);   // the rows' powers of two undone
    }

    // KV_FP8: O += P V over this warp's keys (f16). Lane (g, c) reads, of key rows 2c, 2c+1, 2c+8, 2c+9
    // of a 16-key step, the word of dims 4g .. 4g+3 of each 32-dim group (fp8_kv.cuh's order).
    __device__ __forceinline__ void pv_fp8(float (&o)[1][D_TILES][4], const float (&p)[1][N_TILES][4], unsigned v_smem)
    {
        using MmaH = Mma<half_t>;
        const int g = lane / 4, c = lane % 4;
#pragma unroll
        for (int k = 0; k < KEYS / 16; k++) {
            unsigned a[4];
            p_fragment<half_t, N_TILES>(a, p[0], k);
            const int key = slice() * KEYS + k * 16 + 2 * c;
#pragma unroll
            for (int x = 0; x < HEAD_DIM / 32; x++) {
                const int chunk = 2 * x + g / 4, word = 4 * (g % 4);
                const unsigned w0 = ld_shared_u32(v_smem + kv_offset(key, chunk) + word);
                const unsigned w1 = ld_shared_u32(v_smem + kv_offset(key + 1, chunk) + word);
                const unsigned w2 = ld_shared_u32(v_smem + kv_offset(key + 8, chunk) + word);
                const unsigned w3 = ld_shared_u32(v_smem + kv_offset(key + 9, chunk) + word);
#pragma unroll
                for (int j = 0; j < 4; j += 2) {   // bytes j, j+1 of the words: n-tiles 4x + j, 4x + j + 1
                    unsigned b[2][2];
                    v_fragments_fp8(b, w0, w1, w2, w3, j);
                    MmaH::run(o[0][4 * x + j], a, b[0][0], b[0][1]);
                    MmaH::run(o[0][4 * x + j + 1], a, b[1][0], b[1][1]);
                }
            }
        }
    }

    // Column e (0, 1) of lane (g, c)'s pair of d-tile d: its head dim (KV_FP8: see pv_fp8).
    __device__ __forceinline__ int o_dim(int d, int e) const
    {
        if constexpr (KV_FP8)
            return fp8_o_dim(d, e, lane);
        else
            return d * 8 + 2 * (lane % 4) + e;
    }

    // S = Q K^T over this warp's keys of the tile.
    __device__ __forceinline__ void qk(float (&s)[1][N_TILES][4], const QFragments &q, unsigned k_smem, unsigned q_smem)
    {
#pragma unroll
        for (int n = 0; n < N_TILES; n++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                s[0][n][i] = 0.f;
        if constexpr (KV_FP8) {
            qk_fp8(s, q, k_smem, q_smem);
            return;
        }
#pragma unroll
        for (int k = 0; k < K_STEPS; k++) {
            unsigned a[4];   // Q's fragment of step k (!Q_IN_REGISTERS: read now)
            if constexpr (Q_IN_REGISTERS) {
#pragma unroll
                for (int i = 0; i < 4; i++)
                    a[i] = q[Q_IN_REGISTERS ? k : 0][i];
            } else {
                ldmatrix_x4(a, q_smem + (lane % 16) * PITCH + (2 * k + lane / 16) * 16);
            }
#pragma unroll
            for (int n = 0; n < N_TILES; n += 2) {   // two 8-key tiles per ldmatrix
                unsigned b[4];
                const int key = slice() * KEYS + n * 8 + lane % 8 + 8 * (lane / 16);
                ldmatrix_x4(b, k_smem + kv_offset(key, 2 * k + (lane / 8) % 2));
                MMA::run(s[0][n], a, b[0], b[1]);
                MMA::run(s[0][n + 1], a, b[2], b[3]);
            }
        }
    }

    // O += P V over this warp's keys of the tile.
    __device__ __forceinline__ void pv(float (&o)[1][D_TILES][4], const float (&p)[1][N_TILES][4], unsigned v_smem)
    {
        if constexpr (KV_FP8) {
            pv_fp8(o, p, v_smem);
            return;
        }
#pragma unroll
        for (int k = 0; k < KEYS / 16; k++) {
            unsigned a[4];
            p_fragment<T, N_TILES>(a, p[0], k);
#pragma unroll
            for (int d = 0; d < D_TILES; d += 2) {
                unsigned b[4];
                const int key = slice() * KEYS + k * 16 + lane % 8 + 8 * ((lane / 8) % 2);
                ldmatrix_x4_trans(b, v_smem + kv_offset(key, d + lane / 16));
                MMA::run(o[0][d], a, b[0], b[1]);
                MMA::run(o[0][d + 1], a, b[2], b[3]);
            }
        }
    }

    // Hides the keys each packed row does not see (mask.cuh's rule on its query row); with a negative
    // scale also scales (see softmax.cuh).
    __device__ __forceinline__ void mask_packed(float (&s)[1][N_TILES][4], const KeyMask<CAUSAL, WINDOW, VARLEN> &mask, int key0,
                                                bool masked, float prescale)
    {
        if constexpr (WINDOW) {   // per row a span, per key a comparison (see mask_scores)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const auto span = mask.span(row_query(row0() + lane / 4 + 8 * h));
#pragma unroll
                for (int n = 0; n < N_TILES; n++)
#pragma unroll
                    for (int j = 0; j < 2; j++) {
                        const bool hidden = span.hides(key0 + slice() * KEYS + n * 8 + 2 * (lane % 4) + j);
                        s[0][n][2 * h + j] = masked && hidden ? -infinity() : s[0][n][2 * h + j] * prescale;
                    }
            }
            return;
        }
#pragma unroll
        for (int n = 0; n < N_TILES; n++)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int r = row0() + lane / 4 + 8 * (i / 2);
                const int key = key0 + slice() * KEYS + n * 8 + 2 * (lane % 4) + i % 2;
                const bool hidden = mask.hidden(row_query(r), key);   // NOTE: not in the condition: see mask.cuh
                s[0][n][i] = masked && hidden ? -infinity() : s[0][n][i] * prescale;
            }
    }

    __device__ void run()
    {
        if constexpr (VARLEN) {
            const Sequence seq = sequence();
            publish_sequence_lengths(seq.len_q, seq.len_k);
            if (rows <= 0)   // an empty sequence: nothing to write
                return;
        }
        const StridedRows<KV> k = kv_rows(args.k, args.k_stride), v = kv_rows(args.v, args.v_stride);
        const KeyMask<CAUSAL, WINDOW, VARLEN> mask(args);
        const unsigned q_smem = smem_address(smem), k_smem = q_smem + Q_BYTES, v_smem = k_smem + STAGES * KV_BYTES;
        const unsigned q_warp = q_smem + row0() * PITCH;   // this warp's m-tile of Q
        // The splits share the keys some packed row sees, from the first (0 without a window; the
        // planner counts them by src/mask.c's rule) to seqlen_k (the last query row's diagonal).
        // NOTE: a literal 0 without a window, so that those kernels' code is what it was before windows.
        const int key_begin = (WINDOW ? mask.key_begin(0) : 0) + split * args.split_keys;
        const int key_end = min(sequence_len_k<VARLEN>(args), key_begin + args.split_keys);
        const int tiles = key_end > key_begin ? (key_end - key_begin + BLOCK_N - 1) / BLOCK_N : 0;

        load_q(q_smem);
        cp_async_commit();
        TilePages pages;   // PAGED: the next tile to load's (one ahead of its copies); unused otherwise
        if constexpr (PAGED)
            lookup_pages(pages, key_begin, key_end);
#pragma unroll
        for (int t = 0; t < STAGES - 1; t++) {   // the ring's first STAGES - 1 tiles, one group each
            if (t < tiles) {
                load_kv(k_smem + t * KV_BYTES, v_smem + t * KV_BYTES, k, v, key_begin + t * BLOCK_N, key_end, pages);
                if constexpr (PAGED)
                    lookup_pages(pages, key_begin + (t + 1) * BLOCK_N, key_end);
            }
            cp_async_commit();
        }

        float o[1][D_TILES][4];
#pragma unroll
        for (int d = 0; d < D_TILES; d++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                o[0][d][i] = 0.f;
        OnlineSoftmax<1, N_TILES> softmax;
        softmax.init();
        // the scale goes into the exp2 FFMA (with a softcap, the cap's: the scale went into the tanh);
        // KV_FP8: times this K/V head's k_descale
        const float k_descale = KV_FP8 ? kv_descale(args.k_descale, args, batch, kv_head) : 1.f;
        const float scale_log2 = KV_FP8 ? args.scale_log2 * k_descale : args.scale_log2;
        const bool fold_scale = SOFTCAP || scale_log2 > 0.f;
        const float factor = SOFTCAP ? args.softcap_log2 : fold_scale ? scale_log2 : 1.f;
        const float prescale = fold_scale ? 1.f : scale_log2;
        QFragments q_frag;

        for (int t = 0; t < tiles; t++) {
            cp_async_wait<STAGES - 2>();   // tile t (and Q) has landed for this thread ...
            __syncthreads();               // ... and for all; tile t - 1's stage is free again
            const int ahead = t + STAGES - 1;
            if (ahead < tiles) {
                const int stage = ahead % STAGES;
                load_kv(k_smem + stage * KV_BYTES, v_smem + stage * KV_BYTES, k, v, key_begin + ahead * BLOCK_N,
                        key_end, pages);
                if constexpr (PAGED)   // read while tile t is computed; used at t + 1
                    lookup_pages(pages, key_begin + (ahead + 1) * BLOCK_N, key_end);
            }
            cp_async_commit();   // possibly empty: keeps one group per tile
            if (t == 0) {
                if constexpr (BF16_Q)
                    find_q_scales(q_warp);
                load_q_fragments(q_frag, q_warp);
            }

            const int stage = t % STAGES, key0 = key_begin + t * BLOCK_N;
            float s[1][N_TILES][4];
            qk(s, q_frag, k_smem + stage * KV_BYTES, q_warp);
            // rows past `rows` hold zeros: their scores are finite, and they are never written. The
            // packed rows are the query rows 0 .. seqlen_q - 1, so the tile is partial for them if it
            // is for those rows.
            const bool masked = mask.partial(0, sequence_len_q<VARLEN>(args) - 1, key0, BLOCK_N);
            const float softcap_scale = KV_FP8 ? args.softcap_scale * k_descale : args.softcap_scale;
            float correction[1][2];
            softmax_step<SOFTCAP>(softmax, s, correction, factor, 0.f, softcap_scale, masked, fold_scale,
                                  [&](float(&scores)[1][N_TILES][4]) { mask_packed(scores, mask, key0, masked, prescale); });
            rescale_output(o, correction);
            pv(o, s, v_smem + stage * KV_BYTES);
        }
        cp_async_wait<0>();
        softmax.finish();
        __syncthreads();   // the pipeline's shared memory becomes the merge area
        merge_and_store(o, softmax);
    }

    // Each warp's (max, sum, O) of its 16 rows into shared memory; then every thread merges some
    // (row, column) pairs over the key slices and writes them: final O and LSE with one split, else
    // fp32 partials.
    __device__ __forceinline__ void merge_and_store(const float (&o)[1][D_TILES][4],
                                                    const OnlineSoftmax<1, N_TILES> &softmax)
    {
        float *merge_o = reinterpret_cast<float *>(smem + Q_BYTES);     // [SLICES][ROWS][HEAD_DIM]
        float *merge_max = merge_o + SLICES * ROWS * HEAD_DIM;         // [SLICES][ROWS]
        float *merge_sum = merge_max + SLICES * ROWS;                  // [SLICES][ROWS]
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int r = slice() * ROWS + row0() + lane / 4 + 8 * h;
#pragma unroll
            for (int d = 0; d < D_TILES; d++) {
                float *at = merge_o + r * HEAD_DIM;
                at[o_dim(d, 0)] = o[0][d][2 * h];
                at[o_dim(d, 1)] = o[0][d][2 * h + 1];
            }
            if (lane % 4 == 0) {
                merge_max[r] = softmax.row_max[0][h];
                merge_sum[r] = softmax.row_sum[0][h];
            }
        }
        __syncthreads();
        constexpr float LN2 = 0.693147180559945309f;
        const bool partial = args.splits > 1;
        const float v_descale = KV_FP8 ? kv_descale(args.v_descale, args, batch, kv_head) : 1.f;
        for (int i = threadIdx.x; i < rows * HEAD_DIM; i += THREADS) {
            const int r = i / HEAD_DIM, c = i % HEAD_DIM;
            float top = -infinity();
#pragma unroll
            for (int w = 0; w < SLICES; w++)
                top = fmaxf(top, merge_max[w * ROWS + r]);
            float sum = 0.f, value = 0.f;
            if (top != -infinity())
#pragma unroll
                for (int w = 0; w < SLICES; w++) {
                    const float weight = exp2_approx(merge_max[w * ROWS + r] - top);   // 0 for a slice with no key
                    sum += merge_sum[w * ROWS + r] * weight;
                    value += merge_o[(w * ROWS + r) * HEAD_DIM + c] * weight;
                }
            const int head = row_head(r), query = row_query(r);
            if (!partial && args.sinks)   // one split: the sink joins here (else in the combine)
                value *= fold_sink(top, sum, args.sinks[head] * LOG2E);
            float out = sum > 0.f ? value / sum : 0.f;   // no visible key: 0
            if constexpr (KV_FP8)
                out *= v_descale;
            const float lse = sum > 0.f ? (top + log2_approx(sum)) * LN2 : -infinity();
            const long long row = lse_index(head, query);
            if (partial) {
                const long long at = VARLEN ? split * partial_rows<VARLEN>(args) + row
                                            : static_cast<long long>(split) * args.batch * args.heads_q * args.seqlen_q + row;
                args.o_partial[at * HEAD_DIM + c] = out;
                if (c == 0)
                    args.lse_partial[at] = lse;
            } else {
                T *dst = static_cast<T *>(args.o) + batch * args.o_stride[0] + head * args.o_stride[2] +
                         query * args.o_stride[1] + c;
                if constexpr (VARLEN)
                    dst += sequence().q_row0 * args.o_stride[1];
                *dst = from_float<T>(out);
                if (c == 0 && args.lse)
                    args.lse[row] = lse;
            }
        }
    }
};

}  // namespace fc
