// Attention forward on tensor cores with mma.sync (sm_80 and later; also the Hopper fallback).
//
// One CTA computes BLOCK_M query rows of one (batch, head). Each warp owns 16 * M_TILES rows.
// Q is staged through shared memory once and kept in registers as mma A fragments; K and V tiles
// of BLOCK_N keys stream through a two-stage cp.async double buffer. S = Q K^T and O += P V run on
// mma.sync m16n8k16 with fp32 accumulation; P never leaves registers (the C fragment of S is the
// A fragment of P V). The online softmax works in the exp2 domain; O is divided by the row sum
// once at the end.
#pragma once

#include "attention_common.cuh"
#include "fc_args.h"
#include "ptx/cp_async.cuh"
#include "ptx/ldmatrix.cuh"
#include "ptx/mma.cuh"
#include "ptx/smem.cuh"
#include "softmax.cuh"

namespace fc {

template <typename T, int HEAD_DIM, bool CAUSAL, int BLOCK_M, int BLOCK_N, int WARPS>
struct Sm80Forward {
    static constexpr int THREADS = WARPS * WARP_SIZE;
    static constexpr int M_TILES = BLOCK_M / (16 * WARPS);   // 16-row mma tiles per warp
    static constexpr int N_TILES = BLOCK_N / 8;              // 8-key tiles of S per warp
    static constexpr int D_TILES = HEAD_DIM / 8;             // 8-wide tiles of O per warp
    static constexpr int K_STEPS = HEAD_DIM / 16;            // k-steps of Q K^T
    static constexpr int PV_STEPS = BLOCK_N / 16;            // k-steps of P V
    static constexpr int CHUNKS = HEAD_DIM / 8;              // 16-byte chunks per row
    // NOTE: rows are padded by one 16-byte chunk: CHUNKS + 1 is odd, so the 8 rows an ldmatrix
    // reads fall on 8 distinct chunk positions of the 128-byte bank window, for any head_dim.
    static constexpr int PITCH = HEAD_DIM * 2 + 16;          // bytes per shared-memory row
    static constexpr int STAGES = 2;
    static constexpr int Q_BYTES = BLOCK_M * PITCH;          // (BLOCK_M, HEAD_DIM) 16-bit, padded rows
    static constexpr int KV_BYTES = BLOCK_N * PITCH;         // (BLOCK_N, HEAD_DIM) 16-bit, padded rows
    static constexpr int SMEM_BYTES = Q_BYTES + 2 * STAGES * KV_BYTES;
    // NOTE: Q fragments stay in registers unless they and the O accumulators would pass ~160
    // registers (head_dim 256): then each k-step re-reads its Q fragment from shared memory.
    static constexpr bool Q_IN_REGISTERS = M_TILES * (K_STEPS + D_TILES) * 4 <= 160;
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

    // Copies rows [first, first + ROWS) of a [seq, head_dim] slice into padded shared rows;
    // rows at or past `rows` are zero-filled (they are masked, but must not hold NaN).
    // NOTE: when the threads tile whole rows, each thread keeps one 16-byte column and steps its
    // pointers by a constant: a few instructions per cp.async instead of a divide, a modulo and
    // a 64-bit multiply (this loop runs for every K and V tile).
    template <int ROWS>
    __device__ __forceinline__ void load_tile(unsigned dst, const T *src, long long stride, int first, int rows)
    {
        if (THREADS % CHUNKS == 0) {
            constexpr int ROWS_PER_PASS = THREADS / CHUNKS;
            const int c = threadIdx.x % CHUNKS, r = threadIdx.x / CHUNKS;
            const int left = rows - first - r;   // rows this thread may still read
            const T *from = src + (first + r) * stride + c * 8;
            const unsigned to = dst + r * PITCH + c * 16;
#pragma unroll
            for (int pass = 0; pass < (ROWS + ROWS_PER_PASS - 1) / ROWS_PER_PASS; pass++)
                if (ROWS % ROWS_PER_PASS == 0 || r + pass * ROWS_PER_PASS < ROWS) {
                    const bool valid = pass * ROWS_PER_PASS < left;
                    cp_async_16(to + pass * ROWS_PER_PASS * PITCH, valid ? from + pass * ROWS_PER_PASS * stride : src,
                                valid);
                }
            return;
        }
#pragma unroll
        for (int i = threadIdx.x; i < ROWS * CHUNKS; i += THREADS) {
            const int r = i / CHUNKS, c = i % CHUNKS;
            const bool valid = first + r < rows;
            const T *from = valid ? src + (first + r) * stride + c * 8 : src;
            cp_async_16(dst + r * PITCH + c * 16, from, valid);
        }
    }

    // The A fragment of Q for m-tile m and k-step k.
    __device__ __forceinline__ void load_q_fragment(unsigned (&q)[4], unsigned q_smem, int m, int k)
    {
        const int row = (warp * M_TILES + m) * 16 + lane % 16;
        ldmatrix_x4(q, q_smem + row * PITCH + (2 * k + lane / 16) * 16);
    }

    __device__ __forceinline__ void load_q_fragments(unsigned (&q)[M_TILES][Q_FRAGMENTS][4], unsigned q_smem)
    {
        if (!Q_IN_REGISTERS)
            return;
#pragma unroll
        for (int m = 0; m < M_TILES; m++)
#pragma unroll
            for (int k = 0; k < Q_FRAGMENTS; k++)
                load_q_fragment(q[m][k], q_smem, m, k);
    }

    // S = Q K^T for one tile of keys.
    __device__ __forceinline__ void qk(float (&s)[M_TILES][N_TILES][4], unsigned (&q)[M_TILES][Q_FRAGMENTS][4],
                                       unsigned q_smem, unsigned k_smem)
    {
#pragma unroll
        for (int m = 0; m < M_TILES; m++)
#pragma unroll
            for (int n = 0; n < N_TILES; n++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    s[m][n][i] = 0.f;
#pragma unroll
        for (int k = 0; k < K_STEPS; k++) {
            const int f = Q_IN_REGISTERS ? k : 0;
            if (!Q_IN_REGISTERS)
#pragma unroll
                for (int m = 0; m < M_TILES; m++)
                    load_q_fragment(q[m][0], q_smem, m, k);
#pragma unroll
            for (int n = 0; n < N_TILES; n += 2) {   // two 8-key tiles per ldmatrix
                unsigned b[4];
                const int key = n * 8 + lane % 8 + 8 * (lane / 16);
                ldmatrix_x4(b, k_smem + key * PITCH + (2 * k + (lane / 8) % 2) * 16);
#pragma unroll
                for (int m = 0; m < M_TILES; m++) {
                    MMA::run(s[m][n], q[m][f], b[0], b[1]);
                    MMA::run(s[m][n + 1], q[m][f], b[2], b[3]);
                }
            }
        }
    }

    // O += P V for one tile of keys; P (in s) becomes the A operand, 16 keys per k-step.
    __device__ __forceinline__ void pv(float (&o)[M_TILES][D_TILES][4], const float (&p)[M_TILES][N_TILES][4],
                                       unsigned v_smem)
    {
#pragma unroll
        for (int k = 0; k < PV_STEPS; k++) {
            unsigned a[M_TILES][4];
#pragma unroll
            for (int m = 0; m < M_TILES; m++)
                p_fragment<T, N_TILES>(a[m], p[m], k);
#pragma unroll
            for (int d = 0; d < D_TILES; d += 2) {   // two 8-wide tiles of O per ldmatrix
                unsigned b[4];
                const int key = k * 16 + lane % 8 + 8 * ((lane / 8) % 2);
                ldmatrix_x4_trans(b, v_smem + key * PITCH + (d + lane / 16) * 16);
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
        const T *q = static_cast<const T *>(args.q) + batch * args.q_stride[0] + head * args.q_stride[2];
        const T *k = static_cast<const T *>(args.k) + batch * args.k_stride[0] + kv_head * args.k_stride[2];
        const T *v = static_cast<const T *>(args.v) + batch * args.v_stride[0] + kv_head * args.v_stride[2];
        const unsigned q_smem = smem_address(smem);
        const unsigned k_smem = q_smem + Q_BYTES, v_smem = k_smem + STAGES * KV_BYTES;

        // Causal, bottom-right aligned: row i sees keys j <= i + seqlen_k - seqlen_q.
        const int diagonal = args.seqlen_k - args.seqlen_q;
        int key_end = args.seqlen_k;
        if (CAUSAL)
            key_end = min(key_end, row0 + BLOCK_M + diagonal);
        const int tiles = key_end > 0 ? (key_end + BLOCK_N - 1) / BLOCK_N : 0;

        load_tile<BLOCK_M>(q_smem, q, args.q_stride[1], row0, args.seqlen_q);
        cp_async_commit();
        if (tiles > 0) {
            load_tile<BLOCK_N>(k_smem, k, args.k_stride[1], 0, args.seqlen_k);
            load_tile<BLOCK_N>(v_smem, v, args.v_stride[1], 0, args.seqlen_k);
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
        const bool fold_scale = args.scale_log2 > 0.f;   // the scale goes into the exp2 FFMA
        const float factor = fold_scale ? args.scale_log2 : 1.f, prescale = fold_scale ? 1.f : args.scale_log2;
        unsigned q_frag[M_TILES][Q_FRAGMENTS][4];

        for (int t = 0; t < tiles; t++) {
            const int stage = t % STAGES, key0 = t * BLOCK_N;
            if (t + 1 < tiles) {   // prefetch the next tile into the other stage
                const int next = (t + 1) % STAGES;
                load_tile<BLOCK_N>(k_smem + next * KV_BYTES, k, args.k_stride[1], key0 + BLOCK_N, args.seqlen_k);
                load_tile<BLOCK_N>(v_smem + next * KV_BYTES, v, args.v_stride[1], key0 + BLOCK_N, args.seqlen_k);
                cp_async_commit();
                cp_async_wait<1>();
            } else {
                cp_async_wait<0>();
            }
            __syncthreads();
            if (t == 0)
                load_q_fragments(q_frag, q_smem);

            float s[M_TILES][N_TILES][4];
            qk(s, q_frag, q_smem, k_smem + stage * KV_BYTES);
            const bool masked = key0 + BLOCK_N > args.seqlen_k || (CAUSAL && key0 + BLOCK_N - 1 > row0 + diagonal);
            if (masked || !fold_scale)
                mask_scores<CAUSAL>(s, args, row0 + warp * M_TILES * 16, key0, masked, prescale);
            float correction[M_TILES][2];
            softmax.update(s, correction, factor);
            rescale_output(o, correction);
            pv(o, s, v_smem + stage * KV_BYTES);
            __syncthreads();   // this stage is refilled two iterations on
        }
        cp_async_wait<0>();
        softmax.finish();
        store_output<T>(args, batch, head, row0 + warp * M_TILES * 16, o, softmax);
    }
};

}  // namespace fc
