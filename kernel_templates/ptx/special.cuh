// Reads of the special registers %tid.x and %ctaid.x that the compiler cannot merge with earlier
// reads (asm volatile): values derived from them are recomputed where used instead of being held
// in registers across a long loop (fwd_sm80.cuh's epilogue and copy offsets).
#pragma once

namespace fc {

__device__ __forceinline__ int fresh_thread_index()
{
    int x;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(x));
    return x;
}

__device__ __forceinline__ int fresh_block_index()
{
    int x;
    asm volatile("mov.u32 %0, %%ctaid.x;\n" : "=r"(x));
    return x;
}

}  // namespace fc
