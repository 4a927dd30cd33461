// Warp-wide reductions (butterfly shuffles: every lane ends with the result).
#pragma once

namespace fc {

constexpr unsigned FULL_WARP = 0xffffffffu;
constexpr int WARP_SIZE = 32;

__device__ __forceinline__ float warp_max(float x)
{
    for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2)
        x = fmaxf(x, __shfl_xor_sync(FULL_WARP, x, offset));
    return x;
}

__device__ __forceinline__ float warp_sum(float x)
{
    for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2)
        x += __shfl_xor_sync(FULL_WARP, x, offset);
    return x;
}

// Named barriers 1-15 (0 is __syncthreads): `threads` (a multiple of 32) arrive in all, some
// waiting (sync), some only signalling (arrive). One call per warp's worth of threads counts 32.
__device__ __forceinline__ void named_barrier_sync(int id, int threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Stores `value` into `sink` (a shared word nothing reads; one a thread, or racecheck reports the
// threads' writes), then syncs barrier `id`. NOTE: ptxas
// moves a wgmma wait up past any instruction it does not depend on; it keeps the store after what
// `value` depends on and the wait after the barrier, so a wait placed after this call stays after
// those instructions (fwd_sm90.cuh's HOLD_TILES; PERF_NOTES v25.5).
__device__ __forceinline__ void named_barrier_sync_after(int id, int threads, unsigned sink, float value)
{
    asm volatile("{\n\tst.shared.f32 [%2], %3;\n\tbar.sync %0, %1;\n\t}\n" ::"r"(id), "r"(threads), "r"(sink), "f"(value)
                 : "memory");
}

__device__ __forceinline__ void named_barrier_arrive(int id, int threads)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace fc
