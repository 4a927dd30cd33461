// WGMMA (sm_90a): warpgroup matrix multiply-accumulate, A and B from shared memory through
// 64-bit matrix descriptors, fp32 accumulators in registers (m64nNk16: N / 2 per thread; inline
// PTX names operands by number, so their lists are spelled out, 32 at a time).
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

// A shared-memory matrix descriptor: the start address, the leading and stride byte offsets (each
// >> 4, 14 bits) and the swizzle mode (1: 128 bytes, 2: 64), as the layouts below read them.
__device__ __forceinline__ unsigned long long wgmma_descriptor(unsigned smem_address, unsigned leading_bytes,
                                                               unsigned stride_bytes, unsigned long long swizzle)
{
    return static_cast<unsigned long long>((smem_address & 0x3ffffu) >> 4) |
           static_cast<unsigned long long>((leading_bytes & 0x3ffffu) >> 4) << 16 |
           static_cast<unsigned long long>((stride_bytes & 0x3ffffu) >> 4) << 32 | swizzle << 62;
}

// K-major operand in 128-byte-swizzled shared memory (what TMA writes with SWIZZLE_128B): rows of
// 64 16-bit values, atoms of 8 rows x 128 bytes, 1024-byte aligned, `atom_stride` bytes apart
// (1024: the atoms of a column block back to back). The k-th 16-wide slice of a row starts 32 * k
// bytes in: add 2 * k to the descriptor (address >> 4). The leading offset is unused by swizzled
// K-major layouts (16).
__device__ __forceinline__ unsigned long long wgmma_descriptor_sw128(unsigned smem_address,
                                                                     unsigned atom_stride = 1024)
{
    return wgmma_descriptor(smem_address, 16, atom_stride, 1);
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

// The width N of a form as a type: each form below also defines wgmma_ss(WgmmaN<N>, ..., TAG) or
// wgmma_rs(WgmmaN<N>, ..., TAG), so that a kernel names the form by (N, input type) and overload
// resolution finds it (a shape a type lacks does not compile).
template <int N> struct WgmmaN {};

// The last argument selects the input type; accumulate = 0 overwrites d. Each form (A from a
// descriptor, A from registers) is written once, as a macro over the shape N, the accumulator
// count and the operand numbers, and defined for every shape in fp16 and bf16. Inline PTX names
// operands by number only, so the lists of "%i" and of "+f"(d[i]) are spelled out 32 at a time.
#define FC_WGMMA_PLACES_0 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define FC_WGMMA_PLACES_32 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define FC_WGMMA_PLACES_64 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define FC_WGMMA_PLACES_96 \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define FC_WGMMA_ACC8(I) "+f"(d[I]), "+f"(d[I + 1]), "+f"(d[I + 2]), "+f"(d[I + 3]), "+f"(d[I + 4]), "+f"(d[I + 5]), \
    "+f"(d[I + 6]), "+f"(d[I + 7])
#define FC_WGMMA_ACC32(I) FC_WGMMA_ACC8(I), FC_WGMMA_ACC8(I + 8), FC_WGMMA_ACC8(I + 16), FC_WGMMA_ACC8(I + 24)

// A and B from shared-memory descriptors: S = Q K^T.
#define FC_WGMMA_SS(TAG, TY, N, COUNT, PLACES, A, B, PRED, ...)                                                     \
__device__ __forceinline__ void wgmma_m64n##N##k16(float (&d)[COUNT], unsigned long long a, unsigned long long b,   \
                                                   int accumulate, TAG)                                             \
{                                                                                                                   \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " PRED ", 0;\n"                                                \
                 " wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " "                                   \
                 "{" PLACES "}, " A ", " B ", p, 1, 1, 0, 0;\n}\n"                                                  \
                 : __VA_ARGS__                                                                                      \
                 : "l"(a), "l"(b), "r"(accumulate));                                                                \
}                                                                                                                   \
__device__ __forceinline__ void wgmma_ss(WgmmaN<N>, float (&d)[COUNT], unsigned long long a, unsigned long long b,  \
                                         int accumulate, TAG)                                                       \
{                                                                                                                   \
    wgmma_m64n##N##k16(d, a, b, accumulate, TAG{});                                                                 \
}

// MN-major operand (transposed B: rows of the tile run along K, 64 16-bit values of N per
// 128-byte row, 128B swizzle), as TMA writes a V tile: atoms of 8 K-rows x 64 N-values,
// `atom_stride` bytes apart along K (1024: back to back); `mn_block_bytes` apart between successive
// 64-wide blocks of N. The k-th 16-row slice starts 2 * atom_stride * k bytes in: add
// atom_stride / 8 * k to the descriptor.
__device__ __forceinline__ unsigned long long wgmma_descriptor_sw128_mn(unsigned smem_address, unsigned mn_block_bytes,
                                                                        unsigned atom_stride = 1024)
{
    return wgmma_descriptor(smem_address, mn_block_bytes, atom_stride, 1);
}

// The same in 64-byte-swizzled shared memory (SWIZZLE_64B): 32 16-bit values of N per 64-byte row,
// atoms of 8 K-rows x 32 N-values (512 bytes), `atom_stride` bytes apart along K, `mn_block_bytes`
// apart between successive 32-wide blocks of N (a head_dim of 96 is three: fwd_sm90.cuh's V).
__device__ __forceinline__ unsigned long long wgmma_descriptor_sw64_mn(unsigned smem_address, unsigned mn_block_bytes,
                                                                       unsigned atom_stride = 512)
{
    return wgmma_descriptor(smem_address, mn_block_bytes, atom_stride, 2);
}

// A tile in shared memory as TMA writes it and WGMMA reads it, its layout in its type: column
// blocks of SWIZZLE-byte lines (128: 64 16-bit columns; 64: 32), block b at BLOCK_STRIDE * b bytes
// in, each block's rows in swizzle atoms of 8 lines, ATOM_STRIDE bytes apart. It builds its own
// WGMMA descriptors; the element type only changes how many columns a line holds.
template <int SWIZZLE, int BLOCK_STRIDE, int ATOM_STRIDE>
struct SmemTile {
    static_assert(SWIZZLE == 128 || SWIZZLE == 64, "128- or 64-byte swizzled lines");
    unsigned address;   // shared-space address of block 0

    // As a K-major operand (Q or K of Q K^T, rows along M or N; FP8's V^T, rows along N): column
    // block `block`, its first 32-byte k-step; step k of the block is + 2 k. 64-byte lines: FP8's
    // V^T of 64 keys (the leading offset is unused by swizzled K-major layouts either way).
    __device__ __forceinline__ unsigned long long k_major(int block) const
    {
        if constexpr (SWIZZLE == 128)
            return wgmma_descriptor_sw128(address + block * BLOCK_STRIDE, ATOM_STRIDE);
        else
            return wgmma_descriptor(address + block * BLOCK_STRIDE, 16, ATOM_STRIDE, 2);
    }
    // As an MN-major operand (V of P V, rows along K): all its blocks, the first 16 rows.
    __device__ __forceinline__ unsigned long long mn_major() const
    {
        if constexpr (SWIZZLE == 128)
            return wgmma_descriptor_sw128_mn(address, BLOCK_STRIDE, ATOM_STRIDE);
        else
            return wgmma_descriptor_sw64_mn(address, BLOCK_STRIDE, ATOM_STRIDE);
    }
    // ... rows 16 k to 16 k + 15: mn_major() plus this (two atoms, in the descriptor's 16-byte units).
    static __device__ __forceinline__ unsigned long long mn_step(int k) { return ATOM_STRIDE / 8 * k; }
    // ... from column block b on (a WGMMA as wide as one block: N = the block's columns): plus this.
    static __device__ __forceinline__ unsigned long long block_step(int b) { return BLOCK_STRIDE / 16 * b; }
};

// A ring of such tiles in shared memory, SLOT_BYTES apart from `first`: slot s's descriptors are
// slot 0's plus s * SLOT_BYTES in 16-byte units (the address field holds any shared address >> 4,
// so the sum never carries into the next field). A loop over the ring adds a slot's offset to
// descriptors encoded once, where encoding each slot's address masks, shifts and ORs every time.
template <class Tile, int SLOT_BYTES>
struct SmemRing {
    static_assert(SLOT_BYTES % 16 == 0, "slots at whole descriptor units");
    Tile first;
    __device__ __forceinline__ unsigned long long k_major(unsigned slot, int block) const
    {
        return at(first.k_major(block), slot);
    }
    __device__ __forceinline__ unsigned long long mn_major(unsigned slot) const { return at(first.mn_major(), slot); }
    // NOTE: the sum in the low word alone, masked to its two fields (bits 0-13 and 16-29): a 64-bit
    // sum was reassociated with the k-steps' offsets, and without the mask ptxas could not rule out
    // a carry and added each k-step's offset with a carry and a move of the constant high word.
    static __device__ __forceinline__ unsigned long long at(unsigned long long descriptor, unsigned slot)
    {
        return descriptor >> 32 << 32 | (static_cast<unsigned>(descriptor) + slot * (SLOT_BYTES / 16) & 0x3fff3fffu);
    }
};

// A from registers (the mma.sync A fragment of each warp's 16 rows), B an MN-major descriptor
// (imm-trans-b = 1): the P V step of attention, P straight from the softmax registers.
#define FC_WGMMA_RS(TAG, TY, N, COUNT, PLACES, A, B, PRED, ...)                                                     \
__device__ __forceinline__ void wgmma_m64n##N##k16_rs(float (&d)[COUNT], const unsigned (&a)[4], unsigned long long b,\
                                                      int accumulate, TAG)                                          \
{                                                                                                                   \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " PRED ", 0;\n"                                                \
                 " wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " "                                   \
                 "{" PLACES "}, {" A "}, " B ", p, 1, 1, 1;\n}\n"                                                   \
                 : __VA_ARGS__                                                                                      \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));                            \
}                                                                                                                   \
__device__ __forceinline__ void wgmma_rs(WgmmaN<N>, float (&d)[COUNT], const unsigned (&a)[4], unsigned long long b, \
                                         int accumulate, TAG)                                                       \
{                                                                                                                   \
    wgmma_m64n##N##k16_rs(d, a, b, accumulate, TAG{});                                                              \
}

#define FC_WGMMA_BOTH_TYPES(FORM, ...) FORM(half_t, "f16", __VA_ARGS__) FORM(bfloat16_t, "bf16", __VA_ARGS__)
#define FC_WGMMA_PLACES_16_ACC "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define FC_WGMMA_PLACES_48_ACC FC_WGMMA_PLACES_0 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, " \
    "%44, %45, %46, %47"
#define FC_WGMMA_PLACES_64_ACC FC_WGMMA_PLACES_0 ", " FC_WGMMA_PLACES_32
#define FC_WGMMA_PLACES_96_ACC FC_WGMMA_PLACES_64_ACC ", " FC_WGMMA_PLACES_64
#define FC_WGMMA_PLACES_128_ACC FC_WGMMA_PLACES_96_ACC ", " FC_WGMMA_PLACES_96

// The wider key tiles' accumulator lists: 40 (n80), 56 (n112) and 88 (n176) per thread.
#define FC_WGMMA_PLACES_40_ACC FC_WGMMA_PLACES_0 ", %32, %33, %34, %35, %36, %37, %38, %39"
#define FC_WGMMA_PLACES_56_ACC FC_WGMMA_PLACES_48_ACC ", %48, %49, %50, %51, %52, %53, %54, %55"
#define FC_WGMMA_PLACES_88_ACC FC_WGMMA_PLACES_64_ACC ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, " \
    "%75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87"

// S = Q K^T: 64 and 128 keys per tile, and the wider tiles FlashAttention-3 takes where the
// registers allow (80 at head_dim 256, 112 at 192, 176 at 128, 192 at 64); 32 for the quick first
// call's kernel (fwd_sm90.cuh's QUICK).
FC_WGMMA_BOTH_TYPES(FC_WGMMA_SS, 32, 16, FC_WGMMA_PLACES_16_ACC, "%16", "%17", "%18", FC_WGMMA_ACC8(0), FC_WGMMA_ACC8(8))
FC_WGMMA_BOTH_TYPES(FC_WGMMA_SS, 64, 32, FC_WGMMA_PLACES_0, "%32", "%33", "%34", FC_WGMMA_ACC32(0))
FC_WGMMA_BOTH_TYPES(FC_WGMMA_SS, 80, 40, FC_WGMMA_PLACES_40_ACC, "%40", "%41", "%42", FC_WGMMA_ACC32(0),
                    FC_WGMMA_ACC8(32))
FC_WGMMA_BOTH_TYPES(FC_WGMMA_SS, 112, 56, FC_WGMMA_PLACES_56_ACC, "%56", "%57", "%58", FC_WGMMA_ACC32(0),
                    FC_WGMMA_ACC8(32), FC_WGMMA_ACC8(40), FC_WGMMA_ACC8(48))
FC_WGMMA_BOTH_TYPES(FC_WGMMA_SS, 128, 64, FC_WGMMA_PLACES_64_ACC, "%64", "%65", "%66", FC_WGMMA_ACC32(0),
                    FC_WGMMA_ACC32(32))
FC_WGMMA_BOTH_TYPES(FC_WGMMA_SS, 176, 88, FC_WGMMA_PLACES_88_ACC, "%88", "%89", "%90", FC_WGMMA_ACC32(0),
                    FC_WGMMA_ACC32(32), FC_WGMMA_ACC8(64), FC_WGMMA_ACC8(72), FC_WGMMA_ACC8(80))
FC_WGMMA_BOTH_TYPES(FC_WGMMA_SS, 192, 96, FC_WGMMA_PLACES_96_ACC, "%96", "%97", "%98", FC_WGMMA_ACC32(0),
                    FC_WGMMA_ACC32(32), FC_WGMMA_ACC32(64))
// P V: head_dim 64, 96 (48 accumulators per thread), 128, 192 (96) and 256 (128).
FC_WGMMA_BOTH_TYPES(FC_WGMMA_RS, 64, 32, FC_WGMMA_PLACES_0, "%32, %33, %34, %35", "%36", "%37", FC_WGMMA_ACC32(0))
FC_WGMMA_BOTH_TYPES(FC_WGMMA_RS, 96, 48, FC_WGMMA_PLACES_48_ACC, "%48, %49, %50, %51", "%52", "%53",
                    FC_WGMMA_ACC32(0), FC_WGMMA_ACC8(32), FC_WGMMA_ACC8(40))
FC_WGMMA_BOTH_TYPES(FC_WGMMA_RS, 128, 64, FC_WGMMA_PLACES_64_ACC, "%64, %65, %66, %67", "%68", "%69",
                    FC_WGMMA_ACC32(0), FC_WGMMA_ACC32(32))
FC_WGMMA_BOTH_TYPES(FC_WGMMA_RS, 192, 96, FC_WGMMA_PLACES_96_ACC, "%96, %97, %98, %99", "%100", "%101",
                    FC_WGMMA_ACC32(0), FC_WGMMA_ACC32(32), FC_WGMMA_ACC32(64))
FC_WGMMA_BOTH_TYPES(FC_WGMMA_RS, 256, 128, FC_WGMMA_PLACES_128_ACC, "%128, %129, %130, %131", "%132", "%133",
                    FC_WGMMA_ACC32(0), FC_WGMMA_ACC32(32), FC_WGMMA_ACC32(64), FC_WGMMA_ACC32(96))

// FP8 (e4m3 x e4m3, k = 32 bytes): both operands K-major (WGMMA transposes no 8-bit operand), so V
// must be transposed first (fwd_sm90.cuh). A from registers takes the 8-bit A fragment: register i
// of thread t holds 4 bytes of row 16 (t / 32) + t % 32 / 4 (+ 8 for i odd), columns 4 (t % 4) ..
// + 3 (+ 16 for i >= 2).
#define FC_WGMMA_SS_FP8(N, COUNT, PLACES, A, B, PRED, ...)                                                          \
__device__ __forceinline__ void wgmma_m64n##N##k32(float (&d)[COUNT], unsigned long long a, unsigned long long b,   \
                                                   int accumulate, e4m3_t)                                          \
{                                                                                                                   \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " PRED ", 0;\n"                                                \
                 " wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 "                                       \
                 "{" PLACES "}, " A ", " B ", p, 1, 1;\n}\n"                                                          \
                 : __VA_ARGS__                                                                                      \
                 : "l"(a), "l"(b), "r"(accumulate));                                                                \
}                                                                                                                   \
__device__ __forceinline__ void wgmma_ss(WgmmaN<N>, float (&d)[COUNT], unsigned long long a, unsigned long long b,  \
                                         int accumulate, e4m3_t)                                                    \
{                                                                                                                   \
    wgmma_m64n##N##k32(d, a, b, accumulate, e4m3_t{});                                                              \
}
#define FC_WGMMA_RS_FP8(N, COUNT, PLACES, A, B, PRED, ...)                                                          \
__device__ __forceinline__ void wgmma_m64n##N##k32_rs(float (&d)[COUNT], const unsigned (&a)[4], unsigned long long b,\
                                                      int accumulate, e4m3_t)                                       \
{                                                                                                                   \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " PRED ", 0;\n"                                                \
                 " wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 "                                       \
                 "{" PLACES "}, {" A "}, " B ", p, 1, 1;\n}\n"                                                        \
                 : __VA_ARGS__                                                                                      \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));                            \
}                                                                                                                   \
__device__ __forceinline__ void wgmma_rs(WgmmaN<N>, float (&d)[COUNT], const unsigned (&a)[4], unsigned long long b, \
                                         int accumulate, e4m3_t)                                                    \
{                                                                                                                   \
    wgmma_m64n##N##k32_rs(d, a, b, accumulate, e4m3_t{});                                                           \
}
// S = Q K^T: 64 and 128 keys per tile, and FlashAttention-3's wider FP8 tiles (160 at head_dim 64,
// 224 at 128; 192 between). P V: head_dim 64, 128, 192 and 256.
#define FC_WGMMA_PLACES_80_ACC FC_WGMMA_PLACES_64_ACC ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, " \
    "%75, %76, %77, %78, %79"
#define FC_WGMMA_PLACES_112_ACC FC_WGMMA_PLACES_96_ACC ", %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, " \
    "%106, %107, %108, %109, %110, %111"
FC_WGMMA_SS_FP8(64, 32, FC_WGMMA_PLACES_0, "%32", "%33", "%34", FC_WGMMA_ACC32(0))
FC_WGMMA_SS_FP8(128, 64, FC_WGMMA_PLACES_64_ACC, "%64", "%65", "%66", FC_WGMMA_ACC32(0), FC_WGMMA_ACC32(32))
FC_WGMMA_SS_FP8(160, 80, FC_WGMMA_PLACES_80_ACC, "%80", "%81", "%82", FC_WGMMA_ACC32(0), FC_WGMMA_ACC32(32),
                FC_WGMMA_ACC8(64), FC_WGMMA_ACC8(72))
FC_WGMMA_SS_FP8(192, 96, FC_WGMMA_PLACES_96_ACC, "%96", "%97", "%98", FC_WGMMA_ACC32(0), FC_WGMMA_ACC32(32),
                FC_WGMMA_ACC32(64))
FC_WGMMA_SS_FP8(224, 112, FC_WGMMA_PLACES_112_ACC, "%112", "%113", "%114", FC_WGMMA_ACC32(0), FC_WGMMA_ACC32(32),
                FC_WGMMA_ACC32(64), FC_WGMMA_ACC8(96), FC_WGMMA_ACC8(104))
FC_WGMMA_RS_FP8(64, 32, FC_WGMMA_PLACES_0, "%32, %33, %34, %35", "%36", "%37", FC_WGMMA_ACC32(0))
FC_WGMMA_RS_FP8(128, 64, FC_WGMMA_PLACES_64_ACC, "%64, %65, %66, %67", "%68", "%69", FC_WGMMA_ACC32(0),
                FC_WGMMA_ACC32(32))
FC_WGMMA_RS_FP8(192, 96, FC_WGMMA_PLACES_96_ACC, "%96, %97, %98, %99", "%100", "%101", FC_WGMMA_ACC32(0),
                FC_WGMMA_ACC32(32), FC_WGMMA_ACC32(64))
FC_WGMMA_RS_FP8(256, 128, FC_WGMMA_PLACES_128_ACC, "%128, %129, %130, %131", "%132", "%133", FC_WGMMA_ACC32(0),
                FC_WGMMA_ACC32(32), FC_WGMMA_ACC32(64), FC_WGMMA_ACC32(96))
#undef FC_WGMMA_RS_FP8
#undef FC_WGMMA_SS_FP8

#undef FC_WGMMA_PLACES_128_ACC
#undef FC_WGMMA_PLACES_112_ACC
#undef FC_WGMMA_PLACES_96_ACC
#undef FC_WGMMA_PLACES_88_ACC
#undef FC_WGMMA_PLACES_80_ACC
#undef FC_WGMMA_PLACES_64_ACC
#undef FC_WGMMA_PLACES_56_ACC
#undef FC_WGMMA_PLACES_48_ACC
#undef FC_WGMMA_PLACES_16_ACC
#undef FC_WGMMA_PLACES_40_ACC
#undef FC_WGMMA_BOTH_TYPES
#undef FC_WGMMA_RS
#undef FC_WGMMA_SS
#undef FC_WGMMA_ACC32
#undef FC_WGMMA_ACC8
#undef FC_WGMMA_PLACES_96
#undef FC_WGMMA_PLACES_64
#undef FC_WGMMA_PLACES_32
#undef FC_WGMMA_PLACES_0

}  // namespace fc
