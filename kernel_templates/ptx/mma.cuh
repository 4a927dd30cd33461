// mma.sync m16n8k16 (sm_80) with fp32 accumulation, and packing fp32 pairs into 16-bit A operands.
//
// Fragments (lane = 4 * group + quad): A (16x16, row-major) a0 = (group, 2quad..+1),
// a1 = (group + 8, same), a2 = (group, 2quad + 8..), a3 = (group + 8, 2quad + 8..);
// B (16x8, col-major) b0 = (k 2quad..+1, n group), b1 = (k 2quad + 8.., n group);
// C (16x8) c0, c1 = (group, 2quad..+1), c2, c3 = (group + 8, 2quad..+1).
#pragma once

#include "ptx/convert.cuh"

namespace fc {

template <typename T> struct Mma;

template <> struct Mma<half_t> {
    __device__ __forceinline__ static void run(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
    {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
    // Two fp32 values as one f16x2 register, lo in the low half (memory order).
    __device__ __forceinline__ static unsigned pack(float lo, float hi)
    {
        unsigned r;
        asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
        return r;
    }
};

template <> struct Mma<bfloat16_t> {
    __device__ __forceinline__ static void run(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
    {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
    __device__ __forceinline__ static unsigned pack(float lo, float hi)
    {
        unsigned r;
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
        return r;
    }
};

}  // namespace fc
