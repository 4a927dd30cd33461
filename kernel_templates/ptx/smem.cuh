// Shared-memory addresses as the 32-bit values ldmatrix, cp.async and friends take.
#pragma once

namespace fc {

__device__ __forceinline__ unsigned smem_address(const void *pointer)
{
    unsigned address;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(address) : "l"(pointer));
    return address;
}

__device__ __forceinline__ unsigned ld_shared_u32(unsigned address)
{
    unsigned r;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(r) : "r"(address));
    return r;
}

// Two 32-bit words at an 8-byte aligned shared address.
__device__ __forceinline__ void ld_shared_v2(unsigned &a, unsigned &b, unsigned address)
{
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(a), "=r"(b) : "r"(address));
}

__device__ __forceinline__ void st_shared_u32(unsigned address, unsigned value)
{
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(address), "r"(value) : "memory");
}

// 16 zero bytes at a 16-byte aligned shared address.
__device__ __forceinline__ void st_shared_zero16(unsigned address)
{
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(address), "r"(0) : "memory");
}

}  // namespace fc
