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

// named_barrier_sync_after for one warp alone: its barrier is FIRST_ID + the warp's index in the
// CTA and its word sink_base + 4 x the thread's index, both computed here from %tid.x, so that no
// register holds them through a loop (held in registers, the head_dim 256 kernels spilled 8-16
// bytes; PERF_NOTES v26.7).
template <int FIRST_ID>
__device__ __forceinline__ void warp_barrier_sync_after(unsigned sink_base, float value)
{
    asm volatile("{\n\t.reg .u32 t, a, id;\n\tmov.u32 t, %%tid.x;\n\tshl.b32 a, t, 2;\n\tadd.u32 a, a, %0;\n\t"
                 "st.shared.f32 [a], %1;\n\tshr.u32 id, t, 5;\n\tadd.u32 id, id, %2;\n\tbar.sync id, 32;\n\t}\n"
                 ::"r"(sink_base), "f"(value), "n"(FIRST_ID)
                 : "memory");
}

__device__ __forceinline__ void named_barrier_arrive(int id, int threads)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace fc
