// Attention forward for Hopper (sm_90a): TMA loads on mbarriers, WGMMA on the tensor cores.
//
// The simplest correct shape: each warpgroup (128 threads) of a CTA computes 64 query rows of one
// (batch, head), and BLOCK_M / 64 warpgroups share the K/V tiles. Thread 0 issues the TMA copies:
// Q once, K and V tiles of BLOCK_N keys into a two-stage ring, each stage completing on its own
// mbarrier. S = Q K^T is one m64nBLOCK_Nk16 WGMMA
// per 16 head dims, both operands from 128B-swizzled shared memory; O += P V takes P straight from
// the softmax registers (the WGMMA accumulator of each warp has the mma C layout, so the softmax,
// masking and epilogue are attention_common.cuh's) and V transposed from shared memory.
// Not yet: warp specialization, setmaxnreg, ping-pong between two consumer warpgroups, overlap of
// softmax with the next GEMM, TMA stores.
#pragma once

#include "attention_common.cuh"
#include "fc_args.h"
#include "ptx/mbarrier.cuh"
#include "ptx/smem.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "softmax.cuh"

namespace fc {

// S += A B^T over one 16-wide k-step, N = 64 or 128 columns.
template <int N, typename T>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], unsigned long long a, unsigned long long b, int accumulate)
{
    if constexpr (N == 64)
        wgmma_m64n64k16(d, a, b, accumulate, T{});
    else
        wgmma_m64n128k16(d, a, b, accumulate, T{});
}

// O += P V over one 16-key k-step, N = head_dim = 64, 128, 192 or 256, P from registers.
template <int N, typename T>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const unsigned (&a)[4], unsigned long long b)
{
    if constexpr (N == 64)
        wgmma_m64n64k16_rs(d, a, b, 1, T{});
    else if constexpr (N == 128)
        wgmma_m64n128k16_rs(d, a, b, 1, T{});
    else if constexpr (N == 192)
        wgmma_m64n192k16_rs(d, a, b, 1, T{});
    else
        wgmma_m64n256k16_rs(d, a, b, 1, T{});
}

template <typename T, int HEAD_DIM, bool CAUSAL, int BLOCK_M, int BLOCK_N>
struct Sm90Forward {
    static constexpr int CONSUMERS = BLOCK_M / 64;                   // warpgroups, 64 rows each
    static constexpr int THREADS = 128 * CONSUMERS, STAGES = 2;
    static constexpr int SWIZZLE_BYTES = 128, SWIZZLE_ALIGN = 1024;
    static constexpr int COLUMN_BLOCKS = HEAD_DIM / 64;             // 64-wide swizzled column blocks
    static constexpr int Q_BLOCK_BYTES = 64 * SWIZZLE_BYTES;         // (64 rows, 64) 16-bit, 128B swizzle
    static constexpr int KV_BLOCK_BYTES = BLOCK_N * SWIZZLE_BYTES;   // (BLOCK_N rows, 64), 128B swizzle
    static constexpr int Q_BYTES = CONSUMERS * COLUMN_BLOCKS * Q_BLOCK_BYTES;   // per warpgroup: its blocks
    static constexpr int KV_BYTES = COLUMN_BLOCKS * KV_BLOCK_BYTES;  // one K or V tile
    static constexpr int SMEM_BYTES = SWIZZLE_ALIGN + Q_BYTES + 2 * STAGES * KV_BYTES;
    static constexpr int N_TILES = BLOCK_N / 8, D_TILES = HEAD_DIM / 8;
    static_assert(HEAD_DIM % 64 == 0 && HEAD_DIM <= 256, "head_dim 64, 128, 192 or 256 (64-wide swizzle blocks)");
    static_assert(BLOCK_N == 64 || BLOCK_N == 128, "block_n 64 or 128 (WGMMA n64 / n128 for Q K^T)");
    static_assert(BLOCK_M == 64 || BLOCK_M == 128, "one or two warpgroups of 64 rows");

    const fc_sm90_args &args;
    const fc_kernel_args &base;
    char *smem;   // 1024-byte aligned: Q, then K stages, then V stages
    int batch, head, kv_head, row0, warp, group;   // group: this thread's warpgroup

    __device__ Sm90Forward(const fc_sm90_args &a, char *shared) : args(a), base(a.base)
    {
        const unsigned address = smem_address(shared);
        smem = shared + (SWIZZLE_ALIGN - address % SWIZZLE_ALIGN) % SWIZZLE_ALIGN;
        const BlockCoordinates c = block_coordinates<CAUSAL>(base, BLOCK_M);
        batch = c.batch;
        head = c.head;
        kv_head = c.kv_head;
        row0 = c.row0;
        warp = threadIdx.x / WARP_SIZE;
        group = threadIdx.x / 128;
    }

    __device__ __forceinline__ unsigned q_tile(int g = 0) const
    {
        return smem_address(smem) + g * COLUMN_BLOCKS * Q_BLOCK_BYTES;
    }
    __device__ __forceinline__ unsigned k_tile(int stage) const { return q_tile() + Q_BYTES + stage * KV_BYTES; }
    __device__ __forceinline__ unsigned v_tile(int stage) const { return k_tile(STAGES) + stage * KV_BYTES; }

    // Thread 0: K and V of tile t into its stage; rows past seqlen_k arrive as zeros (TMA OOB fill).
    __device__ __forceinline__ void load_kv(int t, unsigned bar)
    {
        const int stage = t % STAGES;
        mbarrier_arrive_expect_tx(bar, 2 * KV_BYTES);
        for (int j = 0; j < COLUMN_BLOCKS; j++) {
            tma_load_4d(k_tile(stage) + j * KV_BLOCK_BYTES, reinterpret_cast<const TensorMap &>(args.k_map), 64 * j,
                        t * BLOCK_N, kv_head, batch, bar);
            tma_load_4d(v_tile(stage) + j * KV_BLOCK_BYTES, reinterpret_cast<const TensorMap &>(args.v_map), 64 * j,
                        t * BLOCK_N, kv_head, batch, bar);
        }
    }

    // S = Q K^T: HEAD_DIM / 16 k-steps; step k reads 32 bytes into column block k / 4.
    __device__ __forceinline__ void qk(float (&s)[1][N_TILES][4], int stage)
    {
        float(&d)[BLOCK_N / 2] = reinterpret_cast<float(&)[BLOCK_N / 2]>(s);
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < HEAD_DIM / 16; k++) {
            const unsigned long long dq = wgmma_descriptor_sw128(q_tile(group) + k / 4 * Q_BLOCK_BYTES) + 2 * (k % 4);
            const unsigned long long dk = wgmma_descriptor_sw128(k_tile(stage) + k / 4 * KV_BLOCK_BYTES) + 2 * (k % 4);
            wgmma_ss<BLOCK_N, T>(d, dq, dk, k > 0);
        }
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_fence_registers(d);
    }

    // O += P V: BLOCK_N / 16 k-steps of 16 keys (2048 bytes of V rows each, across its column blocks).
    __device__ __forceinline__ void pv(float (&o)[1][D_TILES][4], const float (&p)[1][N_TILES][4], int stage)
    {
        float(&d)[HEAD_DIM / 2] = reinterpret_cast<float(&)[HEAD_DIM / 2]>(o);
        unsigned a[BLOCK_N / 16][4];   // all of P, live until the MMAs that read it have completed
#pragma unroll
        for (int k = 0; k < BLOCK_N / 16; k++)
            p_fragment<T, N_TILES>(a[k], p[0], k);
        const unsigned long long dv = wgmma_descriptor_sw128_mn(v_tile(stage), KV_BLOCK_BYTES);
        wgmma_fence_registers(d);
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < BLOCK_N / 16; k++)
            wgmma_rs<HEAD_DIM, T>(d, a[k], dv + 128 * k);
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_fence_registers(d);
    }

    __device__ void run()
    {
        __shared__ __align__(8) unsigned long long q_barrier, kv_barriers[STAGES];
        const unsigned q_bar = smem_address(&q_barrier), kv_bar = smem_address(kv_barriers);
        const int diagonal = base.seqlen_k - base.seqlen_q;
        int key_end = base.seqlen_k;
        if (CAUSAL)
            key_end = min(key_end, row0 + BLOCK_M + diagonal);
        const int tiles = key_end > 0 ? (key_end + BLOCK_N - 1) / BLOCK_N : 0;

        if (threadIdx.x == 0) {
            mbarrier_init(q_bar, 1);
            for (int s = 0; s < STAGES; s++)
                mbarrier_init(kv_bar + 8 * s, 1);
            mbarrier_init_fence();
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            mbarrier_arrive_expect_tx(q_bar, Q_BYTES);
            for (int g = 0; g < CONSUMERS; g++)
                for (int j = 0; j < COLUMN_BLOCKS; j++)
                    tma_load_4d(q_tile(g) + j * Q_BLOCK_BYTES, reinterpret_cast<const TensorMap &>(args.q_map),
                                64 * j, row0 + 64 * g, head, batch, q_bar);
            if (tiles > 0)
                load_kv(0, kv_bar);
        }

        float o[1][D_TILES][4];
#pragma unroll
        for (int d = 0; d < D_TILES; d++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                o[0][d][i] = 0.f;
        OnlineSoftmax<1, N_TILES> softmax;
        softmax.init();
        const bool fold_scale = base.scale_log2 > 0.f;
        const float factor = fold_scale ? base.scale_log2 : 1.f, prescale = fold_scale ? 1.f : base.scale_log2;
        mbarrier_wait(q_bar, 0);   // also when no key is visible: no TMA write may outlive the CTA

        for (int t = 0; t < tiles; t++) {
            const int stage = t % STAGES, key0 = t * BLOCK_N;
            if (threadIdx.x == 0 && t + 1 < tiles)   // its stage was released by the barrier ending t - 1
                load_kv(t + 1, kv_bar + 8 * ((t + 1) % STAGES));
            mbarrier_wait(kv_bar + 8 * stage, (t / STAGES) & 1);

            float s[1][N_TILES][4];
            qk(s, stage);
            const bool masked = key0 + BLOCK_N > base.seqlen_k || (CAUSAL && key0 + BLOCK_N - 1 > row0 + diagonal);
            if (masked || !fold_scale)
                mask_scores<CAUSAL>(s, base, row0 + warp * 16, key0, masked, prescale);
            float correction[1][2];
            softmax.update(s, correction, factor);
            rescale_output(o, correction);
            pv(o, s, stage);
            __syncthreads();   // every warp is done with this stage before TMA refills it
        }
        softmax.finish();
        store_output<T>(base, batch, head, row0 + warp * 16, o, softmax);
    }
};

}  // namespace fc
