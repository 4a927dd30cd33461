// mbarrier (sm_90): shared-memory barriers that also count bytes of asynchronous copies (TMA).
#pragma once

namespace fc {

__device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned arrivals)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
}

// Makes initialized barriers visible to the async proxy (TMA) and to the rest of the cluster.
__device__ __forceinline__ void mbarrier_init_fence()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival that also announces `bytes` of transactions the barrier must see complete.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbarrier_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// True once the phase with parity `phase` has completed.
__device__ __forceinline__ bool mbarrier_try_wait(unsigned bar, unsigned phase)
{
    unsigned done;
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 " selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(phase)
                 : "memory");
    return done != 0;
}

__device__ __forceinline__ void mbarrier_wait(unsigned bar, unsigned phase)
{
    while (!mbarrier_try_wait(bar, phase)) {
    }
}

}  // namespace fc
