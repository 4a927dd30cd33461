// Shared-memory addresses as the 32-bit values ldmatrix, cp.async and friends take.
#pragma once

namespace fc {

__device__ __forceinline__ unsigned smem_address(const void *pointer)
{
    unsigned address;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(address) : "l"(pointer));
    return address;
}

// 16 zero bytes at a 16-byte aligned shared address.
__device__ __forceinline__ void st_shared_zero16(unsigned address)
{
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(address), "r"(0) : "memory");
}

}  // namespace fc
