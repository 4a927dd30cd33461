// Conversions between fp32 and the storage types (16-bit; e4m3 for FP8 K/V), one PTX instruction each
// where one exists.
#pragma once

namespace fc {

struct half_t { unsigned short bits; };       // IEEE binary16, stored raw
struct bfloat16_t { unsigned short bits; };   // bfloat16, stored raw
struct e4m3_t { unsigned char bits; };        // FP8 e4m3 (OCP "e4m3fn": bias 7, no infinities), stored raw

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

// NOTE: by hand, exactly, on any arch (the reference kernel serves sm_75): 2^(e - 7) (1 + m / 8), a
// subnormal (e = 0) m 2^-9; 0x7f / 0xff are NaN.
__device__ __forceinline__ float to_float(e4m3_t x)
{
    const unsigned e = (x.bits >> 3) & 0xfu, m = x.bits & 7u;
    float magnitude;
    if (e == 0)
        magnitude = static_cast<float>(m) * 0.001953125f;   // m * 2^-9
    else if (e == 15 && m == 7)
        magnitude = __uint_as_float(0x7fc00000u);
    else
        magnitude = __uint_as_float((e + 120u) << 23 | m << 20);
    return x.bits & 0x80u ? -magnitude : magnitude;
}

// Two e4m3 values (the low 16 bits of `pair`, the lower byte first in memory) as one f16x2 register,
// low half first: exact, e4m3 is a subset of f16 (sm_89).
__device__ __forceinline__ unsigned e4m3x2_to_f16x2(unsigned pair)
{
    unsigned r;
    asm("{ .reg .b16 lo, hi; mov.b32 {lo, hi}, %1; cvt.rn.f16x2.e4m3x2 %0, lo; }" : "=r"(r) : "r"(pair));
    return r;
}

// Four fp32 values as four e4m3 bytes, x0 in the lowest: round to nearest, saturating to +-448 (sm_89).
// NOTE: cvt's e4m3x2 puts its first source in the upper byte.
__device__ __forceinline__ unsigned f32x4_to_e4m3x4(float x0, float x1, float x2, float x3)
{
    unsigned r;
    asm("{ .reg .b16 lo, hi; cvt.rn.satfinite.e4m3x2.f32 lo, %2, %1; cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;"
        " mov.b32 %0, {lo, hi}; }"
        : "=r"(r)
        : "f"(x0), "f"(x1), "f"(x2), "f"(x3));
    return r;
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

// The elements packed in one 32-bit word, in memory order (two 16-bit values, or four e4m3).
template <typename T> __device__ __forceinline__ void unpack_word(unsigned word, float (&out)[4 / sizeof(T)])
{
    for (int i = 0; i < static_cast<int>(4 / sizeof(T)); i++) {
        T x;
        x.bits = static_cast<decltype(x.bits)>(word >> (8 * sizeof(T) * i));
        out[i] = to_float(x);
    }
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
