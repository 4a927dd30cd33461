// Shared-memory addresses as the 32-bit values ldmatrix, cp.async and friends take.
#pragma once

namespace fc {

__device__ __forceinline__ unsigned smem_address(const void *pointer)
{
    unsigned address;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(address) : "l"(pointer));
    return address;
}

}  // namespace fc
