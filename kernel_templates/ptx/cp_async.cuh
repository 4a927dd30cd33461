// cp.async (sm_80): 16-byte global -> shared copies that bypass registers, in commit groups.
#pragma once

namespace fc {

// Copies 16 bytes, or writes 16 zero bytes when !valid (src is then not read).
__device__ __forceinline__ void cp_async_16(unsigned dst, const void *src, bool valid)
{
    const int src_bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

// The same for data read once in long runs (decode's K/V): also asks L2 to fetch the whole
// 256-byte block around it from DRAM. Into padded tiles it was 2% faster (PERF_NOTES v4.1); into
// swizzled ones, whose copies reach L2 as whole lines anyway, it makes no difference (v4.4).
__device__ __forceinline__ void cp_async_16_stream(unsigned dst, const void *src, bool valid)
{
    const int src_bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Arrives on the mbarrier at `bar` once every cp.async this thread has issued so far has landed,
// without raising its expected count: the barrier counts this thread among its arrivals.
__device__ __forceinline__ void cp_async_mbarrier_arrive_noinc(unsigned bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

// Waits until at most PENDING of this thread's committed groups are still in flight.
template <int PENDING> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
}

}  // namespace fc
