// Where the K and V rows of one (batch, K/V head) come from. Strided today: row `key` of the
// caller's [batch, seq, head, head_dim] tensor. A paged cache is a second source beside these
// (key -> page table -> page and row in it) with the same methods; kernels only ask for rows.
#pragma once

#include "fc_args.h"
#include "ptx/tma.cuh"

namespace fc {

// Rows through pointers (cp.async and plain loads).
template <typename T>
struct StridedRows {
    const T *base;                   // row 0 of this (batch, head)
    const long long (&strides)[3];   // the kernel argument's {batch, seq, head} strides

    __device__ __forceinline__ StridedRows(const void *tensor, const long long (&s)[3], int batch, int head)
        : base(static_cast<const T *>(tensor) + batch * s[0] + head * s[2]), strides(s)
    {
    }

    // Elements from one row to the next.
    __device__ __forceinline__ long long stride() const { return strides[1]; }
    __device__ __forceinline__ const T *row(int key) const { return base + key * strides[1]; }
};

// Rows through TMA: the caller's tensor as a 4-D map (head_dim, seq, head, batch), boxes of
// (columns, rows, 1, 1) (src/family_sm90.c encodes it).
struct StridedTmaRows {
    int head, batch;

    // The box whose first row is `key` and first column `column` into shared memory at dst,
    // counted on the mbarrier bar; rows past the tensor arrive as zeros.
    __device__ __forceinline__ void load(unsigned dst, const TensorMap &map, int column, int key, unsigned bar) const
    {
        tma_load_4d(dst, map, column, key, head, batch, bar);
    }
};

}  // namespace fc
