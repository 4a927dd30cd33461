// Fast special functions: the SFU instructions the softmax is built on.
#pragma once

namespace fc {

__device__ __forceinline__ float exp2_approx(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float log2_approx(float x)
{
    float y;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// NOTE: the SFU's tanh (sm_75 and later), max relative error about 2^-11: what FlashAttention-3
// soft-caps with. The logit it gives is off by up to softcap * 2^-11, about what rounding the scores
// to fp16 costs PyTorch's own path.
__device__ __forceinline__ float tanh_approx(float x)
{
    float y;
    asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float infinity() { return __int_as_float(0x7f800000); }

}  // namespace fc
