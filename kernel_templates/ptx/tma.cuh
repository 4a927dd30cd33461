// TMA (sm_90): bulk tensor copies between global and shared memory, described by a tensor map
// the host encodes with cuTensorMapEncodeTiled and passes as a `const __grid_constant__` parameter.
#pragma once

namespace fc {

// CUtensorMap, opaque: 128 bytes, 64-byte aligned (cuda.h), without including cuda.h.
struct __align__(64) TensorMap {
    unsigned long long opaque[16];
};

__device__ __forceinline__ unsigned long long tensor_map_address(const TensorMap &map)
{
    return reinterpret_cast<unsigned long long>(&map);
}

// Loads the box at coordinates (x, y) -- x the innermost dimension, in elements -- into shared
// memory at dst; completion is counted in bytes on the mbarrier bar.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const TensorMap &map, int x, int y, unsigned bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
                 "l"(tensor_map_address(map)), "r"(x), "r"(y), "r"(bar)
                 : "memory");
}

__device__ __forceinline__ void tma_load_3d(unsigned dst, const TensorMap &map, int x, int y, int z, unsigned bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
                 "l"(tensor_map_address(map)), "r"(x), "r"(y), "r"(z), "r"(bar)
                 : "memory");
}

// The 4-D form: (x, y, z, w) with x innermost, e.g. (head dim, row, head, batch).
__device__ __forceinline__ void tma_load_4d(unsigned dst, const TensorMap &map, int x, int y, int z, int w,
                                            unsigned bar)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
                 "l"(tensor_map_address(map)), "r"(x), "r"(y), "r"(z), "r"(w), "r"(bar)
                 : "memory");
}

// The 5-D form: (x, y, z, w, v) with x innermost, e.g. (head dim, row of a group of 8, column
// block, group, page) for a paged cache's grouped boxes (kv_source.cuh's PagedTmaRows).
__device__ __forceinline__ void tma_load_5d(unsigned dst, const TensorMap &map, int x, int y, int z, int w, int v,
                                            unsigned bar)
{
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3, %4, %5, %6}], [%7];\n" ::"r"(dst),
                 "l"(tensor_map_address(map)), "r"(x), "r"(y), "r"(z), "r"(w), "r"(v), "r"(bar)
                 : "memory");
}

// Stores the box at (x, y) from shared memory; ordered by tma_store_commit / tma_store_wait.
__device__ __forceinline__ void tma_store_2d(const TensorMap &map, unsigned src, int x, int y)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                     tensor_map_address(map)),
                 "r"(src), "r"(x), "r"(y)
                 : "memory");
}

__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

__device__ __forceinline__ void tma_store_wait() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// Shared memory written by ordinary stores, about to be read by TMA or WGMMA (the async proxy).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

}  // namespace fc
