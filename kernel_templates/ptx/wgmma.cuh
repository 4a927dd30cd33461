// WGMMA (sm_90a): warpgroup matrix multiply-accumulate, A and B from shared memory through
// 64-bit matrix descriptors, fp32 accumulators in registers (m64nNk16: N / 2 per thread; the
// operand lists are written out in full, as inline PTX requires).
//
// Accumulator layout, thread t of the warpgroup (warp w = t / 32, lane l): for each 8-column
// block j, d[4j], d[4j + 1] = (row 16w + l / 4, columns 8j + 2(l % 4) + {0, 1}) and
// d[4j + 2], d[4j + 3] = the same columns of row 16w + l / 4 + 8.
//
// Usage: wgmma_fence(); the MMAs; wgmma_commit(); wgmma_wait<N>(). Shared memory written by
// ordinary stores needs fence_proxy_async() (tma.cuh) and a barrier before the first MMA.
#pragma once

#include "ptx/convert.cuh"

namespace fc {

// K-major operand in 128-byte-swizzled shared memory (what TMA writes with SWIZZLE_128B): rows of
// 64 16-bit values, atoms of 8 rows x 128 bytes, 1024 bytes apart, 1024-byte aligned. The k-th
// 16-wide slice of a row starts 32 * k bytes in: add 2 * k to the descriptor (address >> 4).
__device__ __forceinline__ unsigned long long wgmma_descriptor_sw128(unsigned smem_address)
{
    constexpr unsigned long long STRIDE_BYTES = 1024;   // between 8-row atoms
    constexpr unsigned long long LEADING_BYTES = 16;    // unused by swizzled K-major layouts
    constexpr unsigned long long SWIZZLE_128B = 1;
    return static_cast<unsigned long long>((smem_address & 0x3ffffu) >> 4) | (LEADING_BYTES >> 4) << 16 |
           (STRIDE_BYTES >> 4) << 32 | SWIZZLE_128B << 62;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }

__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

// Waits until at most PENDING committed groups of this warpgroup are still running.
template <int PENDING> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}

// Keeps the compiler from moving accesses to accumulators across an asynchronous MMA window.
template <int N> __device__ __forceinline__ void wgmma_fence_registers(float (&d)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

// The last argument selects the input type; accumulate = 0 overwrites d. Each shape is written
// once and defined for fp16 and bf16 (the PTX type is the only difference).

#define FC_DEFINE_WGMMA_M64N64K16(TAG, TY)                                                                                       \
__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[32], unsigned long long a, unsigned long long b, int accumulate, TAG) \
{                                                                                                                                \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n"                                                                  \
                 " wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " "                                                    \
                 "{"                                                                                                             \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                        \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"                                \
                 "}, %32, %33, p, 1, 1, 0, 0;\n}\n"                                                                              \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),               \
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),         \
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),       \
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])        \
                 : "l"(a), "l"(b), "r"(accumulate));                                                                             \
}
FC_DEFINE_WGMMA_M64N64K16(half_t, "f16")
FC_DEFINE_WGMMA_M64N64K16(bfloat16_t, "bf16")
#undef FC_DEFINE_WGMMA_M64N64K16

#define FC_DEFINE_WGMMA_M64N128K16(TAG, TY)                                                                                       \
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], unsigned long long a, unsigned long long b, int accumulate, TAG) \
{                                                                                                                                 \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %66, 0;\n"                                                                   \
                 " wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " "                                                    \
                 "{"                                                                                                              \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                         \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                               \
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                               \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"                                 \
                 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"                                                                               \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),                \
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),          \
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),        \
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),        \
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),        \
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),        \
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),        \
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])         \
                 : "l"(a), "l"(b), "r"(accumulate));                                                                              \
}
FC_DEFINE_WGMMA_M64N128K16(half_t, "f16")
FC_DEFINE_WGMMA_M64N128K16(bfloat16_t, "bf16")
#undef FC_DEFINE_WGMMA_M64N128K16

// MN-major operand (transposed B: rows of the tile run along K, 64 16-bit values of N per
// 128-byte row, 128B swizzle), as TMA writes a V tile: atoms of 8 K-rows x 64 N-values, 1024 bytes
// apart along K; `mn_block_bytes` apart between successive 64-wide blocks of N. The k-th 16-row
// slice starts 2048 * k bytes in: add 128 * k to the descriptor.
__device__ __forceinline__ unsigned long long wgmma_descriptor_sw128_mn(unsigned smem_address, unsigned mn_block_bytes)
{
    constexpr unsigned long long STRIDE_BYTES = 1024;   // between 8-row atoms along K
    constexpr unsigned long long SWIZZLE_128B = 1;
    return static_cast<unsigned long long>((smem_address & 0x3ffffu) >> 4) |
           static_cast<unsigned long long>((mn_block_bytes & 0x3ffffu) >> 4) << 16 | (STRIDE_BYTES >> 4) << 32 |
           SWIZZLE_128B << 62;
}

// A from registers (the mma.sync A fragment of each warp's 16 rows), B an MN-major descriptor
// (imm-trans-b = 1): the P V step of attention, P straight from the softmax registers.
#define FC_DEFINE_WGMMA_M64N64K16_RS(TAG, TY)                                                                                         \
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const unsigned (&a)[4], unsigned long long b, int accumulate, TAG) \
{                                                                                                                                     \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %37, 0;\n"                                                                       \
                 " wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " "                                                         \
                 "{"                                                                                                                  \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                             \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"                                     \
                 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"                                                                     \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),                    \
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),              \
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),            \
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])             \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));                                              \
}
FC_DEFINE_WGMMA_M64N64K16_RS(half_t, "f16")
FC_DEFINE_WGMMA_M64N64K16_RS(bfloat16_t, "bf16")
#undef FC_DEFINE_WGMMA_M64N64K16_RS

#define FC_DEFINE_WGMMA_M64N128K16_RS(TAG, TY)                                                                                         \
__device__ __forceinline__ void wgmma_m64n128k16_rs(float (&d)[64], const unsigned (&a)[4], unsigned long long b, int accumulate, TAG) \
{                                                                                                                                      \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %69, 0;\n"                                                                        \
                 " wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " "                                                         \
                 "{"                                                                                                                   \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                              \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                                    \
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                                    \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"                                      \
                 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"                                                                      \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),                     \
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),               \
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),             \
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),             \
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),             \
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),             \
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),             \
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])              \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));                                               \
}
FC_DEFINE_WGMMA_M64N128K16_RS(half_t, "f16")
FC_DEFINE_WGMMA_M64N128K16_RS(bfloat16_t, "bf16")
#undef FC_DEFINE_WGMMA_M64N128K16_RS

// head_dim 192: the P V step with 96 fp32 accumulators per thread.
#define FC_DEFINE_WGMMA_M64N192K16_RS(TAG, TY)                                                                                         \
__device__ __forceinline__ void wgmma_m64n192k16_rs(float (&d)[96], const unsigned (&a)[4], unsigned long long b, int accumulate, TAG) \
{                                                                                                                                      \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %101, 0;\n"                                                                       \
                 " wgmma.mma_async.sync.aligned.m64n192k16.f32." TY "." TY " "                                                         \
                 "{"                                                                                                                   \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                              \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                                    \
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                                    \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                                    \
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                                    \
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"                                      \
                 "}, {%96, %97, %98, %99}, %100, p, 1, 1, 1;\n}\n"                                                                     \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),                     \
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),               \
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),             \
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),             \
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),             \
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),             \
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),             \
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),             \
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),             \
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),             \
                   "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),             \
                   "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])              \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));                                               \
}
FC_DEFINE_WGMMA_M64N192K16_RS(half_t, "f16")
FC_DEFINE_WGMMA_M64N192K16_RS(bfloat16_t, "bf16")
#undef FC_DEFINE_WGMMA_M64N192K16_RS

// head_dim 256: the P V step with 128 fp32 accumulators per thread.
#define FC_DEFINE_WGMMA_M64N256K16_RS(TAG, TY)                                                                                          \
__device__ __forceinline__ void wgmma_m64n256k16_rs(float (&d)[128], const unsigned (&a)[4], unsigned long long b, int accumulate, TAG) \
{                                                                                                                                       \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %133, 0;\n"                                                                        \
                 " wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " "                                                          \
                 "{"                                                                                                                    \
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                               \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                                     \
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                                     \
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                                     \
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                                     \
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                                     \
                 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "                         \
                 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"                       \
                 "}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"                                                                  \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),                      \
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),                \
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),              \
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),              \
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),              \
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),              \
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),              \
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),              \
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),              \
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),              \
                   "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),              \
                   "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),              \
                   "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),          \
                   "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),      \
                   "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),      \
                   "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])       \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));                                                \
}
FC_DEFINE_WGMMA_M64N256K16_RS(half_t, "f16")
FC_DEFINE_WGMMA_M64N256K16_RS(bfloat16_t, "bf16")
#undef FC_DEFINE_WGMMA_M64N256K16_RS

}  // namespace fc
