// Global-memory stores written as the instruction, where C++ leaves the width to the compiler.
#pragma once

namespace fc {

// 16 bytes at a 16-byte aligned global address. NOTE: a uint4 store through a cast 16-bit pointer
// was split by NVVM into four 4-byte stores in some unrolled copies (NVRTC 13.0), which wastes half
// of each 32-byte sector again (PERF_NOTES v16).
__device__ __forceinline__ void st_global_v4(void *address, unsigned a, unsigned b, unsigned c, unsigned d)
{
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(address), "r"(a), "r"(b), "r"(c), "r"(d)
                 : "memory");
}

}  // namespace fc
