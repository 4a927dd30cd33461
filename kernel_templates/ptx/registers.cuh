// setmaxnreg (sm_90a): a warpgroup hands registers back to, or takes them from, the CTA's pool.
// Every warp of the warpgroup must execute it (.sync.aligned); COUNT is a multiple of 8 in
// [24, 256]. A kernel that uses it must be compiled with a known register count at launch
// (__launch_bounds__), which is what the pool starts from.
#pragma once

namespace fc {

template <int COUNT> __device__ __forceinline__ void registers_release()
{
    static_assert(COUNT % 8 == 0 && COUNT >= 24 && COUNT <= 256, "setmaxnreg takes multiples of 8 in [24, 256]");
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(COUNT));
}

template <int COUNT> __device__ __forceinline__ void registers_claim()
{
    static_assert(COUNT % 8 == 0 && COUNT >= 24 && COUNT <= 256, "setmaxnreg takes multiples of 8 in [24, 256]");
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(COUNT));
}

}  // namespace fc
