// Attention forward on tensor cores with mma.sync (sm_80 and later; also the Hopper fallback).
//
// One CTA computes BLOCK_M query rows of one (batch, head). Each warp owns 16 * M_TILES rows.
// Q is staged through shared memory once and kept in registers as mma A fragments; K and V tiles
// of BLOCK_N keys stream through a two-stage cp.async double buffer (rows swizzled where they are
// whole 128-byte lines, else padded). S = Q K^T and O += P V run on
// mma.sync m16n8k16 with fp32 accumulation; P never leaves registers (the C fragment of S is the
// A fragment of P V). The online softmax works in the exp2 domain; O is divided by the row sum
// once at the end.
//
// KV_FP8 (an FP8 KV cache, sm_89+, head_dim a multiple of 32): K and V are e4m3 in shared memory
// (their own loader: swizzled where a row is whole 128-byte lines, else padded) and become f16 at
// the fragments in fp8_kv.cuh's byte orders; O ends with each thread holding 8 whole dims of a 32-dim
// group, which it stores as one 16-byte vector (store_output's FP8_ORDER). k_descale joins the
// softmax scale, v_descale the output.
//
// Registers (head_dim 128, 32 rows per warp: O alone is 128 of the 255): the tile loop keeps only
// O, the softmax state, a K and a V pointer and a few lane offsets live; everything else (the
// output coordinates, the copy offsets) is re-derived from the special registers where needed, so
// that ptxas can keep ldmatrix loads in flight ahead of the mma's that use them without spilling.
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
#include "ptx/special.cuh"
#include "softmax.cuh"

namespace fc {

template <typename T, int HEAD_DIM, bool CAUSAL, int BLOCK_M, int BLOCK_N, int WARPS, bool WINDOW = false,
          bool SOFTCAP = false, bool VARLEN = false, bool PAGED = false, bool KV_FP8 = false>
struct Sm80Forward {
    static_assert(!PAGED || VARLEN, "a paged cache takes the per-sequence form");
    static_assert(!KV_FP8 || HEAD_DIM % 32 == 0, "FP8 K/V: head_dim in 32-dim groups of P V's n-tiles");
    using E = Element<T>;
    using KV = typename KvElement<T, KV_FP8>::type;   // K/V storage
    using EK = Element<KV>;
    static constexpr int KV_CHUNKS = HEAD_DIM / EK::PER_CHUNK;   // 16-byte chunks per K/V row
    static constexpr int THREADS = WARPS * WARP_SIZE;
    static constexpr int M_TILES = BLOCK_M / (16 * WARPS);   // 16-row mma tiles per warp
    static constexpr int N_TILES = BLOCK_N / 8;              // 8-key tiles of S per warp
    static constexpr int D_TILES = HEAD_DIM / 8;             // 8-wide tiles of O per warp
    static constexpr int K_STEPS = HEAD_DIM / E::MMA_K;      // k-steps of Q K^T
    static constexpr int PV_STEPS = BLOCK_N / E::MMA_K;      // k-steps of P V
    static constexpr int CHUNKS = HEAD_DIM / E::PER_CHUNK;   // 16-byte chunks per row
    // NOTE: rows are padded by one 16-byte chunk: CHUNKS + 1 is odd, so the 8 rows an ldmatrix
    // reads fall on 8 distinct chunk positions of the 128-byte bank window, for any head_dim.
    static constexpr int PITCH = HEAD_DIM * E::BYTES + 16;   // bytes per shared-memory row
    static constexpr int STAGES = 2;
    static constexpr int Q_BYTES = BLOCK_M * PITCH;          // (BLOCK_M, HEAD_DIM) T, padded rows
    // Q, K and V tiles when the threads tile whole rows (ROW_TILED): see load_rows.
    static constexpr bool ROW_TILED = THREADS % CHUNKS == 0;
    static constexpr int ROWS_PER_PASS = ROW_TILED ? THREADS / CHUNKS : 1;
    // NOTE: K and V rows swizzled instead of padded (chunk c of row r at c ^ (r % 8)) where rows are
    // whole 128-byte lines and each thread's rows share r % 8: each warp's cp.async then fills whole
    // 128-byte lines of shared memory from whole lines of global memory, and L2 sees one request
    // per line, not ~2.7 (fwd_decode.cuh, PERF_NOTES v4.4); +5-6% at head_dim 64 and 128 (v1.5).
    // Not at head_dim 64 causal with 128-key tiles, where the XOR patterns cost the one register
    // ptxas has left (a 4-byte spill); padded, it is still at least FlashAttention-2's speed.
    static constexpr bool SWIZZLED = !KV_FP8 && CHUNKS % 8 == 0 && ROW_TILED && ROWS_PER_PASS % 8 == 0 &&
                                     !(CAUSAL && HEAD_DIM == 64 && BLOCK_N == 128);
    static constexpr bool FP8_SWIZZLED = KV_FP8 && KV_CHUNKS % 8 == 0;   // KV_FP8's rows (fp8_kv_offset)
    static constexpr int KV_PITCH = KV_FP8 ? HEAD_DIM + (FP8_SWIZZLED ? 0 : 16) : SWIZZLED ? HEAD_DIM * E::BYTES : PITCH;
    static constexpr int KV_BYTES = BLOCK_N * KV_PITCH;      // (BLOCK_N, HEAD_DIM) T
    // swizzled, K starts on a 128-byte boundary (the ldmatrix addresses XOR bits 4-6): up to 128
    // bytes more. src/family_sm80.c allocates the padded layout's size, which is at least this.
    static constexpr int SMEM_BYTES = Q_BYTES + 2 * STAGES * KV_BYTES + (SWIZZLED || FP8_SWIZZLED ? 128 : 0);
    static constexpr int MIN_BLOCKS = 1;   // __launch_bounds__: registers are not capped for a second CTA
    // NOTE: Q fragments stay in registers unless they and the O and S accumulators would pass 200
    // registers (head_dim 128 and 256; 64 with 128-key tiles): then each k-step re-reads its Q
    // fragment from shared memory. At head_dim 64, m128 n128 w4 spills 76-96 bytes with Q in
    // registers and none without.
    static constexpr bool Q_IN_REGISTERS = M_TILES * (K_STEPS + D_TILES + N_TILES) * 4 <= 200;
    static constexpr int Q_FRAGMENTS = Q_IN_REGISTERS ? K_STEPS : 1;
    static_assert(HEAD_DIM % 16 == 0 && HEAD_DIM <= 256, "head_dim: a multiple of 16 up to 256");
    static_assert(BLOCK_M % (16 * WARPS) == 0 && M_TILES >= 1 && M_TILES <= 2, "16 or 32 rows per warp");
    static_assert(BLOCK_N % 16 == 0 && BLOCK_N <= 128, "block_n: a multiple of 16 up to 128");

    using MMA = Mma<T>;

    const fc_kernel_args &args;
    char *smem;
    int batch, head, kv_head, row0, warp, lane;

    __device__ Sm80Forward(const fc_kernel_args &a, char *shared) : args(a), smem(shared)
    {
        const BlockCoordinates c = block_coordinates<CAUSAL>(args, BLOCK_M);
        batch = c.batch;
        head = c.head;
        kv_head = c.kv_head;
        row0 = c.row0;
        warp = threadIdx.x / WARP_SIZE;
        lane = threadIdx.x % WARP_SIZE;
    }

    // VARLEN: one sequence of a ragged batch (or of a dense one with seqused_k); rows and keys past
    // its lengths are zero-filled like those past a dense tensor's.
    __device__ Sm80Forward(const fc_varlen_args &a, char *shared) : Sm80Forward(a.base, shared) {}
    // PAGED: the same, with the sequence's keys through its row of the page table.
    __device__ Sm80Forward(const fc_paged_args &a, char *shared) : Sm80Forward(a.base, shared) {}

    // Q, K and V tiles when the threads tile whole rows (ROW_TILED): thread (r, c) = (tid / CHUNKS, tid %
    // CHUNKS) copies chunk c of rows r, r + ROWS_PER_PASS, ... `from` points at its first element,
    // `to` at its shared address, `left` = rows - first - r. NOTE: the caller steps one pointer per
    // tensor by a tile each iteration: no 64-bit multiply per pass, and no second pointer kept for
    // the zero-filled rows (cp.async with src-size 0 does not read the out-of-range address).
    template <int ROWS, int ROW_BYTES = PITCH>
    __device__ __forceinline__ void load_rows(unsigned to, const T *from, long long stride, int left)
    {
        const int r = threadIdx.x / CHUNKS;
#pragma unroll
        for (int pass = 0; pass < (ROWS + ROWS_PER_PASS - 1) / ROWS_PER_PASS; pass++)
            if (ROWS % ROWS_PER_PASS == 0 || r + pass * ROWS_PER_PASS < ROWS)
                cp_async_16(to + pass * ROWS_PER_PASS * ROW_BYTES, from + pass * ROWS_PER_PASS * stride,
                            pass * ROWS_PER_PASS < left);
    }

    // This thread's byte offset in a K or V tile (row-tiled copies: row r, chunk c).
    __device__ __forceinline__ static unsigned kv_copy_offset(int tid)
    {
        const int r = tid / CHUNKS, c = tid % CHUNKS;
        return r * KV_PITCH + (SWIZZLED ? c ^ (r % 8) : c) * 16;
    }

    // Copies rows [first, first + ROWS) of a (batch, head)'s rows into padded shared rows; rows at or
    // past `count` are zero-filled (they are masked, but must not hold NaN).
    template <int ROWS>
    __device__ __forceinline__ void load_tile(unsigned dst, const StridedRows<T> &src, int first, int count)
    {
        if (ROW_TILED) {
            const int c = threadIdx.x % CHUNKS, r = threadIdx.x / CHUNKS;
            load_rows<ROWS>(dst + r * PITCH + c * 16, src.row(first + r) + c * E::PER_CHUNK, src.stride(),
                            count - first - r);
            return;
        }
#pragma unroll
        for (int i = threadIdx.x; i < ROWS * CHUNKS; i += THREADS) {
            const int r = i / CHUNKS, c = i % CHUNKS;
            const bool valid = first + r < count;
            const T *from = valid ? src.row(first + r) + c * E::PER_CHUNK : src.base;
            cp_async_16(dst + r * PITCH + c * 16, from, valid);
        }
    }

    // PAGED: keys [first, first + BLOCK_N) of K and V into a stage's tiles through the page table;
    // keys at or past `count` are zero-filled. NOTE: each row's page is looked up once (one table
    // read), for K and V alike, and the copies keep the strided path's layout (row-tiled: each thread
    // copies chunk c of rows r, r + ROWS_PER_PASS, ..., swizzled where that one is).
    __device__ __forceinline__ void load_paged(unsigned k_dst, unsigned v_dst, int first, int count)
    {
        const PagedRows<T> k(args.k, args.k_stride, kv_head), v(args.v, args.v_stride, kv_head);
        if (ROW_TILED) {
            const int tid = fresh_thread_index(), r = tid / CHUNKS, c = tid % CHUNKS;
            const unsigned to = kv_copy_offset(tid);
#pragma unroll
            for (int pass = 0; pass < (BLOCK_N + ROWS_PER_PASS - 1) / ROWS_PER_PASS; pass++) {
                const int row = r + pass * ROWS_PER_PASS;
                if (BLOCK_N % ROWS_PER_PASS == 0 || row < BLOCK_N) {
                    const bool valid = first + row < count;
                    const PageSlot at = page_slot_if(valid, pages_of(args), batch, first + row);
                    cp_async_16(k_dst + to + pass * ROWS_PER_PASS * KV_PITCH, k.row(at) + c * E::PER_CHUNK, valid);
                    cp_async_16(v_dst + to + pass * ROWS_PER_PASS * KV_PITCH, v.row(at) + c * E::PER_CHUNK, valid);
                }
            }
            return;
        }
#pragma unroll
        for (int i = threadIdx.x; i < BLOCK_N * CHUNKS; i += THREADS) {
            const int r = i / CHUNKS, c = i % CHUNKS;
            const bool valid = first + r < count;
            const PageSlot at = page_slot_if(valid, pages_of(args), batch, first + r);
            cp_async_16(k_dst + r * PITCH + c * 16, k.row(at) + c * E::PER_CHUNK, valid);
            cp_async_16(v_dst + r * PITCH + c * 16, v.row(at) + c * E::PER_CHUNK, valid);
        }
    }

    // KV_FP8: byte offset of 16-byte chunk c of key row r in a K or V tile.
    __device__ __forceinline__ static unsigned fp8_kv_offset(int r, int c)
    {
        return r * KV_PITCH + (FP8_SWIZZLED ? c ^ (r % 8) : c) * 16;
    }

    // KV_FP8: keys [first, first + BLOCK_N) of K and V into a stage's tiles (strided, or PAGED
    // through the table, a lookup per row for both); keys at or past `count` are zero-filled.
    __device__ __forceinline__ void load_kv_fp8(unsigned k_dst, unsigned v_dst, long long k_row0, int first, int count)
    {
        // NOTE: the row sources built in the loop, not hoisted by hand: hoisted, the PTX of every sm80
        // FP8 variant grew by some 70 integer instructions (64-bit row offsets kept across the loop)
#pragma unroll
        for (int i = threadIdx.x; i < BLOCK_N * KV_CHUNKS; i += THREADS) {
            const int r = i / KV_CHUNKS, c = i % KV_CHUNKS;
            const bool valid = first + r < count;
            const KV *k_from, *v_from;
            if constexpr (PAGED) {
                const PageSlot at = page_slot_if(valid, pages_of(args), batch, first + r);
                k_from = PagedRows<KV>(args.k, args.k_stride, kv_head).row(at);
                v_from = PagedRows<KV>(args.v, args.v_stride, kv_head).row(at);
            } else {
                const StridedRows<KV> k = sequence_rows<VARLEN, KV>(args.k, args.k_stride, batch, kv_head, k_row0);
                const StridedRows<KV> v = sequence_rows<VARLEN, KV>(args.v, args.v_stride, batch, kv_head, k_row0);
                k_from = valid ? k.row(first + r) : k.base;
                v_from = valid ? v.row(first + r) : v.base;
            }
            cp_async_16(k_dst + fp8_kv_offset(r, c), k_from + c * EK::PER_CHUNK, valid);
            cp_async_16(v_dst + fp8_kv_offset(r, c), v_from + c * EK::PER_CHUNK, valid);
        }
    }

    // KV_FP8: Q's fragment of m-tile m, k-step kk in K's byte order, as f16 (fp8_kv.cuh).
    static constexpr bool BF16_Q = KV_FP8 && !Same<T, half_t>::value;
    unsigned q_base;                          // KV_FP8: Q's shared tile
    float q_scale[M_TILES][2], q_unscale[M_TILES][2];
    __device__ __forceinline__ unsigned q_step_address(int m, int kk) const
    {
        return q_base + (warp * M_TILES * 16 + m * 16 + lane / 4) * PITCH + (16 * kk + 4 * (lane % 4)) * E::BYTES;
    }
    __device__ __forceinline__ void load_q_step(unsigned (&q)[4], int m, int kk) const
    {
        q_fragment_fp8<T, PITCH>(q, q_step_address(m, kk), q_scale[m]);
    }
    __device__ __forceinline__ void find_q_scales()
    {
#pragma unroll
        for (int m = 0; m < M_TILES; m++)
            q_row_scales<PITCH, K_STEPS>(q_step_address(m, 0), q_scale[m], q_unscale[m]);
    }

    // KV_FP8: S = Q K^T over the tile (fwd_decode.cuh's qk_fp8, every m-tile of the warp).
    __device__ __forceinline__ void qk_fp8(float (&s)[M_TILES][N_TILES][4], unsigned (&q)[M_TILES][Q_FRAGMENTS][4],
                                           unsigned k_tile)
    {
#pragma unroll
        for (int k = 0; k < K_STEPS; k += 2) {
            unsigned read[M_TILES][2][4];   // !Q_IN_REGISTERS: steps k and k + 1
            if constexpr (!Q_IN_REGISTERS) {
#pragma unroll
                for (int m = 0; m < M_TILES; m++) {
                    load_q_step(read[m][0], m, k);
                    load_q_step(read[m][1], m, k + 1);
                }
            }
#pragma unroll
            for (int n = 0; n < N_TILES; n += 2) {
                unsigned b[4];
                const int j = lane / 8;
                ldmatrix_x4(b, k_tile + fp8_kv_offset((n + j % 2) * 8 + lane % 8, k + j / 2));
#pragma unroll
                for (int mm = 0; mm < 4; mm++)
#pragma unroll
                    for (int m = 0; m < M_TILES; m++) {
                        if constexpr (Q_IN_REGISTERS)
                            mma_qk_fp8(s[m][n + mm % 2], q[m][k + mm / 2], b[mm]);
                        else
                            mma_qk_fp8(s[m][n + mm % 2], read[m][mm / 2], b[mm]);
                    }
            }
        }
        if constexpr (BF16_Q)
            rescale_output(s, q_unscale);   // the rows' powers of two undone
    }

    // KV_FP8: O += P V over the tile in f16 (fwd_decode.cuh's pv_fp8, every m-tile of the warp).
    __device__ __forceinline__ void pv_fp8(float (&o)[M_TILES][D_TILES][4], const float (&p)[M_TILES][N_TILES][4],
                                           unsigned v_tile)
    {
        const int g = lane / 4, c = lane % 4;
#pragma unroll
        for (int k = 0; k < BLOCK_N / 16; k++) {
            unsigned a[M_TILES][4];
#pragma unroll
            for (int m = 0; m < M_TILES; m++)
                p_fragment<half_t, N_TILES>(a[m], p[m], k);
            const int key = k * 16 + 2 * c;
#pragma unroll
            for (int x = 0; x < HEAD_DIM / 32; x++) {
                const int chunk = 2 * x + g / 4, word = 4 * (g % 4);
                const unsigned w0 = ld_shared_u32(v_tile + fp8_kv_offset(key, chunk) + word);
                const unsigned w1 = ld_shared_u32(v_tile + fp8_kv_offset(key + 1, chunk) + word);
                const unsigned w2 = ld_shared_u32(v_tile + fp8_kv_offset(key + 8, chunk) + word);
                const unsigned w3 = ld_shared_u32(v_tile + fp8_kv_offset(key + 9, chunk) + word);
#pragma unroll
                for (int j = 0; j < 4; j += 2) {   // bytes j, j+1 of the words: n-tiles 4x + j, 4x + j + 1
                    unsigned b[2][2];
                    v_fragments_fp8(b, w0, w1, w2, w3, j);
#pragma unroll
                    for (int m = 0; m < M_TILES; m++) {
                        Mma<half_t>::run(o[m][4 * x + j], a[m], b[0][0], b[0][1]);
                        Mma<half_t>::run(o[m][4 * x + j + 1], a[m], b[1][0], b[1][1]);
                    }
                }
            }
        }
    }

    // The rows of `tensor` for `h` (a query or K/V head): of this CTA's batch, or of its sequence
    // (VARLEN: from the sequence's first query or key token on).
    __device__ __forceinline__ StridedRows<T> rows_of(const void *tensor, const long long (&s)[3], int h,
                                                      long long first_row) const
    {
        return sequence_rows<VARLEN, T>(tensor, s, batch, h, first_row);
    }

    // Per-lane parts of the ldmatrix addresses, computed once. NOTE: each is added to a base the
    // compiler cannot see the bits of (the shared window, the stage) before the constant offset of
    // an (m, n, k, d): written as one expression, the lane bits and the constant are disjoint, get
    // merged by OR/AND, and one register per k-step (Q) and per d (V) stays live: 16 at D128.
    unsigned q_lane, k_lane, v_lane;

    __device__ __forceinline__ void lane_addresses(unsigned q_smem)
    {
        q_lane = q_smem + (warp * M_TILES * 16 + lane % 16) * PITCH + (lane / 16) * 16;
        const int swizzle = SWIZZLED ? lane % 8 : 0;   // each ldmatrix row's r % 8
        k_lane = (lane % 8 + 8 * (lane / 16)) * KV_PITCH + (((lane / 8) % 2) ^ swizzle) * 16;
        v_lane = (lane % 8 + 8 * ((lane / 8) % 2)) * KV_PITCH + ((lane / 16) ^ swizzle) * 16;
    }

    // The A fragment of Q for m-tile m and k-step k.
    __device__ __forceinline__ void load_q_fragment(unsigned (&q)[4], int m, int k)
    {
        ldmatrix_x4(q, q_lane + m * 16 * PITCH + k * 32);
    }

    __device__ __forceinline__ void load_q_fragments(unsigned (&q)[M_TILES][Q_FRAGMENTS][4])
    {
        if (!Q_IN_REGISTERS)
            return;
#pragma unroll
        for (int m = 0; m < M_TILES; m++)
#pragma unroll
            for (int k = 0; k < Q_FRAGMENTS; k++) {
                if constexpr (KV_FP8)
                    load_q_step(q[m][k], m, k);
                else
                    load_q_fragment(q[m][k], m, k);
            }
    }

    // S = Q K^T for one tile of keys; k_tile is this stage's K base plus k_lane.
    __device__ __forceinline__ void qk(float (&s)[M_TILES][N_TILES][4], unsigned (&q)[M_TILES][Q_FRAGMENTS][4],
                                       unsigned k_tile)
    {
#pragma unroll
        for (int m = 0; m < M_TILES; m++)
#pragma unroll
            for (int n = 0; n < N_TILES; n++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    s[m][n][i] = 0.f;
        if constexpr (KV_FP8) {
            qk_fp8(s, q, k_tile);
            return;
        }
#pragma unroll
        for (int step = 0; step < K_STEPS; step++) {
            // swizzled: the k-steps that share an XOR pattern (k % 4) run back to back
            constexpr int GROUPS = K_STEPS % 4 == 0 ? K_STEPS / 4 : 1;
            const int k = SWIZZLED ? step % GROUPS * 4 + step / GROUPS : step;
            const int f = Q_IN_REGISTERS ? k : 0;
            if (!Q_IN_REGISTERS)
#pragma unroll
                for (int m = 0; m < M_TILES; m++)
                    load_q_fragment(q[m][0], m, k);
#pragma unroll
            for (int n = 0; n < N_TILES; n += 2) {   // two 8-key tiles per ldmatrix
                unsigned b[4];
                // swizzled: chunk 2k + b of a row r sits at (2k + b) ^ (r % 8) = 2k ^ (b ^ r % 8)
                if (SWIZZLED)
                    ldmatrix_x4(b, (k_tile ^ (k % 4 * 32)) + n * 8 * KV_PITCH + k / 4 * 128);
                else
                    ldmatrix_x4(b, k_tile + n * 8 * PITCH + k * 32);
#pragma unroll
                for (int m = 0; m < M_TILES; m++) {
                    MMA::run(s[m][n], q[m][f], b[0], b[1]);
                    MMA::run(s[m][n + 1], q[m][f], b[2], b[3]);
                }
            }
        }
    }

    // O += P V for one tile of keys; P (in s) becomes the A operand, 16 keys per k-step;
    // v_tile is this stage's V base plus v_lane.
    __device__ __forceinline__ void pv(float (&o)[M_TILES][D_TILES][4], const float (&p)[M_TILES][N_TILES][4],
                                       unsigned v_tile)
    {
        if constexpr (KV_FP8) {
            pv_fp8(o, p, v_tile);
            return;
        }
#pragma unroll
        for (int k = 0; k < PV_STEPS; k++) {
            unsigned a[M_TILES][4];
#pragma unroll
            for (int m = 0; m < M_TILES; m++)
                p_fragment<T, N_TILES>(a[m], p[m], k);
#pragma unroll
            for (int d = 0; d < D_TILES; d += 2) {   // two 8-wide tiles of O per ldmatrix
                unsigned b[4];
                if (SWIZZLED)
                    ldmatrix_x4_trans(b, (v_tile ^ (d % 8 * 16)) + k * 16 * KV_PITCH + d / 8 * 128);
                else
                    ldmatrix_x4_trans(b, v_tile + k * 16 * PITCH + d * 16);
#pragma unroll
                for (int m = 0; m < M_TILES; m++) {
                    MMA::run(o[m][d], a[m], b[0], b[1]);
                    MMA::run(o[m][d + 1], a[m], b[2], b[3]);
                }
            }
        }
    }

    __device__ void run()
    {
        long long q_row0 = 0, k_row0 = 0;   // VARLEN: the sequence's first query and key tokens
        if constexpr (VARLEN) {
            const Sequence seq = sequence_of<PAGED>(args, seqlens_of(args), batch);
            publish_sequence_lengths(seq.len_q, seq.len_k);
            if (row0 >= seq.len_q)   // a block of the longest sequence's rows past this one's
                return;
            q_row0 = seq.q_row0;
            k_row0 = seq.k_row0;
        }
        // Q's rows: the same layout as K's
        const StridedRows<T> q = rows_of(args.q, args.q_stride, head, q_row0);
        const StridedRows<T> k = rows_of(args.k, args.k_stride, kv_head, k_row0);
        const StridedRows<T> v = rows_of(args.v, args.v_stride, kv_head, k_row0);
        const unsigned q_smem = smem_address(smem);
        const unsigned k_smem = SWIZZLED || FP8_SWIZZLED ? (q_smem + Q_BYTES + 127) & ~127u : q_smem + Q_BYTES;
        q_base = q_smem;
        const unsigned v_smem = k_smem + STAGES * KV_BYTES;
        lane_addresses(q_smem);

        const KeyMask<CAUSAL, WINDOW, VARLEN> mask(args);
        // Keys from first_key (a tile boundary; 0 without a window) to key_end: whole tiles outside a
        // window are skipped. NOTE: a literal 0 without one, not key_begin's 0: folded that late, it
        // changed the order of predicates in the PTX of kernels that have no window.
        const int first_key = WINDOW ? mask.key_begin(row0) / BLOCK_N * BLOCK_N : 0;
        const int key_end = mask.key_end(row0 + BLOCK_M);
        const int tiles = key_end > first_key ? (key_end - first_key + BLOCK_N - 1) / BLOCK_N : 0;

        load_tile<BLOCK_M>(q_smem, q, row0, sequence_len_q<VARLEN>(args));
        cp_async_commit();
        // ROW_TILED: this thread's K and V pointers into the tile being loaded (row r, chunk c).
        const int kv_r = ROW_TILED ? threadIdx.x / CHUNKS : 0, kv_c = ROW_TILED ? threadIdx.x % CHUNKS : 0;
        const T *k_next = k.row(first_key + kv_r) + kv_c * E::PER_CHUNK;
        const T *v_next = v.row(first_key + kv_r) + kv_c * E::PER_CHUNK;
        if (KV_FP8 && tiles > 0) {
            load_kv_fp8(k_smem, v_smem, k_row0, first_key, sequence_len_k<VARLEN>(args));
        } else if (PAGED && tiles > 0) {
            load_paged(k_smem, v_smem, first_key, sequence_len_k<VARLEN>(args));
        } else if (tiles > 0) {
            if (ROW_TILED) {
                const unsigned to = kv_copy_offset(threadIdx.x);
                load_rows<BLOCK_N, KV_PITCH>(k_smem + to, k_next, k.stride(), sequence_len_k<VARLEN>(args) - first_key - kv_r);
                load_rows<BLOCK_N, KV_PITCH>(v_smem + to, v_next, v.stride(), sequence_len_k<VARLEN>(args) - first_key - kv_r);
            } else {
                load_tile<BLOCK_N>(k_smem, k, first_key, sequence_len_k<VARLEN>(args));
                load_tile<BLOCK_N>(v_smem, v, first_key, sequence_len_k<VARLEN>(args));
            }
        }
        cp_async_commit();

        float o[M_TILES][D_TILES][4];
#pragma unroll
        for (int m = 0; m < M_TILES; m++)
#pragma unroll
            for (int d = 0; d < D_TILES; d++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    o[m][d][i] = 0.f;
        OnlineSoftmax<M_TILES, N_TILES> softmax;
        softmax.init();
        // the scale goes into the exp2 FFMA (with a softcap, the cap's: the scale went into the tanh)
        // KV_FP8: times this K/V head's k_descale
        const float k_descale = KV_FP8 ? kv_descale(args.k_descale, args, batch, kv_head) : 1.f;
        const float scale_log2 = KV_FP8 ? args.scale_log2 * k_descale : args.scale_log2;
        const bool fold_scale = SOFTCAP || scale_log2 > 0.f;
        const float factor = SOFTCAP ? args.softcap_log2 : fold_scale ? scale_log2 : 1.f;
        const float prescale = fold_scale ? 1.f : scale_log2;
        unsigned q_frag[M_TILES][Q_FRAGMENTS][4];

        for (int t = 0; t < tiles; t++) {
            const int stage = t % STAGES, key0 = first_key + t * BLOCK_N;
            if (t + 1 < tiles) {   // prefetch the next tile into the other stage
                const int next = (t + 1) % STAGES;
                if (KV_FP8) {
                    load_kv_fp8(k_smem + next * KV_BYTES, v_smem + next * KV_BYTES, k_row0, key0 + BLOCK_N,
                                sequence_len_k<VARLEN>(args));
                } else if (PAGED) {
                    load_paged(k_smem + next * KV_BYTES, v_smem + next * KV_BYTES, key0 + BLOCK_N,
                               sequence_len_k<VARLEN>(args));
                } else if (ROW_TILED) {
                    k_next += BLOCK_N * k.stride();
                    v_next += BLOCK_N * v.stride();
                    const int tid = fresh_thread_index(), r = tid / CHUNKS;
                    const unsigned to = next * KV_BYTES + kv_copy_offset(tid);
                    const int left = sequence_len_k<VARLEN>(args) - key0 - BLOCK_N - r;
                    load_rows<BLOCK_N, KV_PITCH>(k_smem + to, k_next, k.stride(), left);
                    load_rows<BLOCK_N, KV_PITCH>(v_smem + to, v_next, v.stride(), left);
                } else {
                    load_tile<BLOCK_N>(k_smem + next * KV_BYTES, k, key0 + BLOCK_N, sequence_len_k<VARLEN>(args));
                    load_tile<BLOCK_N>(v_smem + next * KV_BYTES, v, key0 + BLOCK_N, sequence_len_k<VARLEN>(args));
                }
                cp_async_commit();
                cp_async_wait<1>();
            } else {
                cp_async_wait<0>();
            }
            __syncthreads();
            if (t == 0) {
                if constexpr (BF16_Q)
                    find_q_scales();
                load_q_fragments(q_frag);
            }

            float s[M_TILES][N_TILES][4];
            qk(s, q_frag, k_smem + stage * KV_BYTES + (KV_FP8 ? 0 : k_lane));
            const bool masked = mask.partial(row0, row0 + BLOCK_M - 1, key0, BLOCK_N);
            const float softcap_scale = KV_FP8 ? args.softcap_scale * k_descale : args.softcap_scale;
            float correction[M_TILES][2];
            softmax_step<SOFTCAP>(softmax, s, correction, factor, 0.f, softcap_scale, masked, fold_scale,
                                  [&](float(&scores)[M_TILES][N_TILES][4]) {
                                      mask_scores(scores, mask, row0 + warp * M_TILES * 16, key0, masked, prescale);
                                  });
            rescale_output(o, correction);
            // NOTE: the V base depends on the finished row sums (min(0, sum) is +0: sums of exp2 are
            // never negative), so no V ldmatrix and no P V mma is scheduled before the last exp2 of
            // the tile: the fp32 scores are dead (packed to P) before the V fragments are loaded.
            // Left to itself, ptxas interleaves the exp2's with P V and spills at head_dim 128.
            float zero = 0.f;
#pragma unroll
            for (int m = 0; m < M_TILES; m++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    zero = fminf(zero, softmax.row_sum[m][h]);
            pv(o, s, v_smem + stage * KV_BYTES + (KV_FP8 ? 0 : v_lane) + __float_as_uint(zero));
            __syncthreads();   // this stage is refilled two iterations on
        }
        cp_async_wait<0>();
        softmax.finish();
        // NOTE: the coordinates again, from fresh reads: kept from the start, they and the output
        // pointers computed from them would hold registers through the tile loop.
        const BlockCoordinates c = block_coordinates<CAUSAL>(args, BLOCK_M, fresh_block_index());
        // KV_FP8: O in the byte order's dims, times the K/V head's v_descale
        const float out_scale = KV_FP8 ? kv_descale(args.v_descale, args, c.batch, c.kv_head) : 1.f;
        if constexpr (VARLEN)   // NOTE: the sequence again, from fresh reads, like the coordinates
            store_sequence_output<T, M_TILES, D_TILES, N_TILES, KV_FP8>(
                args, sequence_of<PAGED>(args, seqlens_of(args), c.batch), c.batch, c.head,
                c.row0 + fresh_thread_index() / WARP_SIZE * M_TILES * 16, o, softmax, out_scale);
        else
            store_output<T, M_TILES, D_TILES, N_TILES, KV_FP8>(
                args, c.batch, c.head, c.row0 + fresh_thread_index() / WARP_SIZE * M_TILES * 16, o, softmax, out_scale);
    }
};

}  // namespace fc
