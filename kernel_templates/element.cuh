// Element traits: what a kernel needs to know about its storage type (src/dtype.c is the host's
// table). A new type, such as a 1-byte e4m3, is a new entry here: the kernels derive their row
// widths, copy chunks, swizzle spans and k-steps from these rather than from literals.
#pragma once

#include "ptx/convert.cuh"

namespace fc {

template <int BYTES_, int MMA_K_>
struct ElementTraits {
    static constexpr int BYTES = BYTES_;          // storage size of one element
    static constexpr int MMA_K = MMA_K_;          // k of one tensor-core step (mma.sync, WGMMA): 32 bytes
    static constexpr int PER_CHUNK = 16 / BYTES;  // elements in one 16-byte copy (cp.async, ldmatrix row)
    static constexpr int PER_LINE = 128 / BYTES;  // elements in one 128-byte line (the swizzle span)
    static constexpr int PER_WORD = 4 / BYTES;    // elements in one 32-bit register
};

template <typename T> struct Element;
template <> struct Element<half_t> : ElementTraits<2, 16> {};
template <> struct Element<bfloat16_t> : ElementTraits<2, 16> {};
template <> struct Element<e4m3_t> : ElementTraits<1, 32> {};

template <typename A, typename B> struct Same { static constexpr bool value = false; };
template <typename A> struct Same<A, A> { static constexpr bool value = true; };

// A kernel's K/V storage type: T, or e4m3 with the KV_FP8 switch (an FP8 KV cache).
template <typename T, bool KV_FP8> struct KvElement { using type = T; };
template <typename T> struct KvElement<T, true> { using type = e4m3_t; };

}  // namespace fc
