// Probe kernels for the Hopper building blocks, compiled by tests/test_hopper.c with NVRTC:
// one WGMMA product and one TMA tile load, each small enough that a failure points at a part.
#include "ptx/mbarrier.cuh"
#include "ptx/smem.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

namespace probe {

constexpr int ROWS = 64, K = 64;   // A: (64, 64), B: (64 n, 64 k), both K-major
constexpr int SWIZZLE_BYTES = 128, CHUNK = 16;
constexpr unsigned SWIZZLE_ALIGN = 1024;   // 128B-swizzled tiles start on 1024-byte boundaries

// The first 1024-byte-aligned byte of dynamic shared memory (launched with 1 KB to spare).
__device__ __forceinline__ char *aligned_smem(char *smem)
{
    const unsigned address = fc::smem_address(smem);
    return smem + ((SWIZZLE_ALIGN - address % SWIZZLE_ALIGN) % SWIZZLE_ALIGN);
}

// Byte offset of element (row, col) of a 64-wide 16-bit tile in 128-byte-swizzled shared memory.
__device__ __forceinline__ unsigned swizzled_offset(int row, int col)
{
    const int chunk = col * 2 / CHUNK;
    return row * SWIZZLE_BYTES + ((chunk ^ (row % 8)) * CHUNK) + col * 2 % CHUNK;
}

// D (64 x 64, fp32) = A (64 x 64) B^T, with B given as (n, k): four m64n64k16 steps over K.
template <typename T>
__device__ void wgmma_product(const T *a, const T *b, float *d)
{
    extern __shared__ __align__(16) char dynamic_smem[];
    char *smem = aligned_smem(dynamic_smem);
    T *a_tile = reinterpret_cast<T *>(smem);                       // (64, 64), 128B swizzle
    T *b_tile = reinterpret_cast<T *>(smem + ROWS * K * 2);        // (64, 64), 128B swizzle
    for (int i = threadIdx.x; i < ROWS * K; i += blockDim.x) {
        const int row = i / K, col = i % K;
        *reinterpret_cast<T *>(reinterpret_cast<char *>(a_tile) + swizzled_offset(row, col)) = a[i];
        *reinterpret_cast<T *>(reinterpret_cast<char *>(b_tile) + swizzled_offset(row, col)) = b[i];
    }
    fc::fence_proxy_async();   // ordinary stores, read next by the tensor cores
    __syncthreads();
    float acc[32];
    for (int i = 0; i < 32; i++)
        acc[i] = 0.f;
    const unsigned long long da = fc::wgmma_descriptor_sw128(fc::smem_address(a_tile));
    const unsigned long long db = fc::wgmma_descriptor_sw128(fc::smem_address(b_tile));
    fc::wgmma_fence();
#pragma unroll
    for (int k = 0; k < K / 16; k++)
        fc::wgmma_m64n64k16(acc, da + 2 * k, db + 2 * k, k > 0, T{});
    fc::wgmma_commit();
    fc::wgmma_wait<0>();
    fc::wgmma_fence_registers(acc);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int row = 16 * warp + lane / 4 + 8 * (i / 2), col = 8 * j + 2 * (lane % 4) + i % 2;
            d[row * 64 + col] = acc[4 * j + i];
        }
}

// D (64 x 128, fp32) = P (64 x 64 keys) V (64 keys x 128), the P V step of attention: P from
// registers (each warp's 16 rows as mma A fragments), V in shared memory as TMA would lay it out,
// two 64-column blocks of 128B-swizzled rows, read transposed (MN-major).
template <typename T>
__device__ void wgmma_pv(const T *p, const T *v, float *d)
{
    constexpr int KEYS = 64, COLUMNS = 128, BLOCK_BYTES = KEYS * SWIZZLE_BYTES;   // one 64-column block
    extern __shared__ __align__(16) char dynamic_smem[];
    char *v_tile = aligned_smem(dynamic_smem);   // (64 keys, 128) as two (64, 64) swizzled blocks
    for (int i = threadIdx.x; i < KEYS * COLUMNS; i += blockDim.x) {
        const int key = i / COLUMNS, column = i % COLUMNS;
        *reinterpret_cast<T *>(v_tile + column / 64 * BLOCK_BYTES + swizzled_offset(key, column % 64)) = v[i];
    }
    fc::fence_proxy_async();
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    unsigned a[KEYS / 16][4];   // P fragments, all loaded before the asynchronous MMAs read them
    const unsigned *p_words = reinterpret_cast<const unsigned *>(p);
#pragma unroll
    for (int k = 0; k < KEYS / 16; k++) {
        const int row = 16 * warp + lane / 4, column = 16 * k + 2 * (lane % 4);
        a[k][0] = p_words[(row * KEYS + column) / 2];
        a[k][1] = p_words[((row + 8) * KEYS + column) / 2];
        a[k][2] = p_words[(row * KEYS + column + 8) / 2];
        a[k][3] = p_words[((row + 8) * KEYS + column + 8) / 2];
    }
    float acc[64];
    for (int i = 0; i < 64; i++)
        acc[i] = 0.f;
    const unsigned long long dv = fc::wgmma_descriptor_sw128_mn(fc::smem_address(v_tile), BLOCK_BYTES);
    fc::wgmma_fence();
#pragma unroll
    for (int k = 0; k < KEYS / 16; k++)   // 16 keys = two 8-row atoms = 2048 bytes further
        fc::wgmma_m64n128k16_rs(acc, a[k], dv + 128 * k, k > 0, T{});
    fc::wgmma_commit();
    fc::wgmma_wait<0>();
    fc::wgmma_fence_registers(acc);
#pragma unroll
    for (int j = 0; j < 16; j++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int row = 16 * warp + lane / 4 + 8 * (i / 2), column = 8 * j + 2 * (lane % 4) + i % 2;
            d[row * COLUMNS + column] = acc[4 * j + i];
        }
}

}  // namespace probe

extern "C" __global__ void __launch_bounds__(128, 1)
fc_probe_wgmma_pv_f16(const fc::half_t *p, const fc::half_t *v, float *d)
{
    probe::wgmma_pv(p, v, d);
}

extern "C" __global__ void __launch_bounds__(128, 1)
fc_probe_wgmma_pv_bf16(const fc::bfloat16_t *p, const fc::bfloat16_t *v, float *d)
{
    probe::wgmma_pv(p, v, d);
}

extern "C" __global__ void __launch_bounds__(128, 1)
fc_probe_wgmma_f16(const fc::half_t *a, const fc::half_t *b, float *d)
{
    probe::wgmma_product(a, b, d);
}

extern "C" __global__ void __launch_bounds__(128, 1)
fc_probe_wgmma_bf16(const fc::bfloat16_t *a, const fc::bfloat16_t *b, float *d)
{
    probe::wgmma_product(a, b, d);
}

// Loads one (64 x 64) 16-bit box at (x, y) with TMA (128B swizzle) and copies the shared-memory
// bytes out unchanged, so the host can check both the data and the swizzled placement.
extern "C" __global__ void __launch_bounds__(128, 1)
fc_probe_tma(const __grid_constant__ fc::TensorMap map, int x, int y, unsigned *out)
{
    extern __shared__ __align__(16) char dynamic_smem[];
    char *smem = probe::aligned_smem(dynamic_smem);
    constexpr unsigned BYTES = 64 * 64 * 2;
    __shared__ __align__(8) unsigned long long barrier;
    const unsigned bar = fc::smem_address(&barrier);
    if (threadIdx.x == 0) {
        fc::mbarrier_init(bar, 1);
        fc::mbarrier_init_fence();
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        fc::mbarrier_arrive_expect_tx(bar, BYTES);
        fc::tma_load_2d(fc::smem_address(smem), map, x, y, bar);
    }
    fc::mbarrier_wait(bar, 0);
    const unsigned *words = reinterpret_cast<const unsigned *>(smem);
    for (int i = threadIdx.x; i < BYTES / 4; i += blockDim.x)
        out[i] = words[i];
}
