// Conversions between fp32 and the 16-bit storage types, one PTX instruction each where one exists.
#pragma once

namespace fc {

struct half_t { unsigned short bits; };       // IEEE binary16, stored raw
struct bfloat16_t { unsigned short bits; };   // bfloat16, stored raw

__device__ __forceinline__ float to_float(half_t x)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
    return f;
}

__device__ __forceinline__ float to_float(bfloat16_t x)
{
    return __uint_as_float(static_cast<unsigned>(x.bits) << 16);
}

template <typename T> __device__ __forceinline__ T from_float(float f);

template <> __device__ __forceinline__ half_t from_float<half_t>(float f)
{
    half_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
    return h;
}

// NOTE: round to nearest even by hand: cvt.rn.bf16.f32 needs sm_80 and the reference kernel
// also serves sm_75.
template <> __device__ __forceinline__ bfloat16_t from_float<bfloat16_t>(float f)
{
    unsigned u = __float_as_uint(f);
    bfloat16_t b;
    if ((u & 0x7fffffffu) > 0x7f800000u)
        b.bits = static_cast<unsigned short>((u >> 16) | 0x40u);   // quiet NaN
    else
        b.bits = static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    return b;
}

// The two 16-bit values packed in one 32-bit word, low half first (memory order).
template <typename T> __device__ __forceinline__ void unpack2(unsigned word, float &lo, float &hi)
{
    T a, b;
    a.bits = static_cast<unsigned short>(word & 0xffffu);
    b.bits = static_cast<unsigned short>(word >> 16);
    lo = to_float(a);
    hi = to_float(b);
}

}  // namespace fc
