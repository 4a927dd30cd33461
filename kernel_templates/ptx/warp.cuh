// Warp-wide reductions (butterfly shuffles: every lane ends with the result).
#pragma once

namespace fc {

constexpr unsigned FULL_WARP = 0xffffffffu;
constexpr int WARP_SIZE = 32;

__device__ __forceinline__ float warp_max(float x)
{
    for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2)
        x = fmaxf(x, __shfl_xor_sync(FULL_WARP, x, offset));
    return x;
}

__device__ __forceinline__ float warp_sum(float x)
{
    for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2)
        x += __shfl_xor_sync(FULL_WARP, x, offset);
    return x;
}

}  // namespace fc
