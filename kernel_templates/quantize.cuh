// Quantizes one tensor to FP8 e4m3 for FP8 attention (fc_quantize), optionally rotating each row
// first by R = H diag(s) / sqrt(n): H the Sylvester Hadamard matrix of order n (the largest power of
// two dividing head_dim, once per n-element block) and s a +-1 sign per dimension from the seed. R is
// orthogonal, so q and k rotated alike keep every score, while an outlier dimension's magnitude is
// spread over n: the amax, and with it the quantization step, falls (the FA3 paper's "incoherent
// processing").
//
// Two kernels over the same rows, one CTA column per descale slot (sequence, descale head):
//   QuantizeAmax: |R x|max of the slot's rows, into the zeroed scratch by atomicMax on the fp32 bits
//                 (non-negative floats order as their bits; deterministic, whatever the order);
//   QuantizeStore (the second entry): out = e4m3(R x * 448 / amax), and descale = amax / 448.
// Each thread holds 8 consecutive elements of a row (one 16-byte load); a row is CHUNKS consecutive
// threads, so the Hadamard's strides of 8 and up are lane shuffles inside an aligned group of n / 8
// lanes, all within one row.
#pragma once

#include "element.cuh"
#include "fc_args.h"
#include "ptx/convert.cuh"
#include "ptx/warp.cuh"

namespace fc {

constexpr float E4M3_MAX = 448.f;   // e4m3's largest finite magnitude

// The rotation's sign of dimension d: the top bit of splitmix64's finalizer of seed + (d + 1) * 2^64 / phi
// (src/reference_cpu.c's fc_rotation_sign is the same function).
__device__ __forceinline__ float rotation_sign(unsigned long long seed, int d)
{
    unsigned long long z = seed + static_cast<unsigned long long>(d + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z >> 63 ? -1.f : 1.f;
}

__host__ __device__ constexpr int log2_of(int n) { return n > 1 ? 1 + log2_of(n / 2) : 0; }

template <typename T, int HEAD_DIM>
struct QuantizeRows {
    using E = Element<T>;
    static constexpr int PER_THREAD = E::PER_CHUNK;             // 8 elements, one 16-byte load
    static constexpr int CHUNKS = HEAD_DIM / PER_THREAD;        // threads per row
    static constexpr int THREADS = 256;
    static constexpr int SMEM_BYTES = 0, MIN_BLOCKS = 1;
    static constexpr int ROWS = THREADS / CHUNKS;               // rows per pass of the CTA
    static constexpr int ORDER = HEAD_DIM & -HEAD_DIM;          // the Hadamard's n
    static constexpr int LOG2_ORDER = log2_of(ORDER);
    static constexpr float NORM = (LOG2_ORDER % 2 ? 0.70710678118654752f : 1.f) / (1 << LOG2_ORDER / 2);   // 1 / sqrt(n)
    static_assert(PER_THREAD == 8 && HEAD_DIM % 16 == 0 && HEAD_DIM <= 256, "head_dim: a multiple of 16 up to 256");
    static_assert(ORDER / PER_THREAD <= WARP_SIZE && CHUNKS % (ORDER / PER_THREAD) == 0, "a block's lanes: one warp, one row");

    const fc_quantize_args &args;
    int batch, head_base;      // the slot's sequence and first head
    long long first_token;     // its sequence's first token (varlen), else 0
    long long rows;            // its rows: tokens x group
    int chunk;                 // this thread's elements: chunk * 8 .. + 7 of a row
    bool active;               // threads past ROWS whole rows only take part in the shuffles
    float sign[PER_THREAD];

    __device__ QuantizeRows(const fc_quantize_args &a) : args(a)
    {
        const int slot = blockIdx.x;
        batch = slot / a.descale_heads;
        head_base = slot % a.descale_heads * a.group;
        long long tokens = a.seqlen;
        first_token = 0;
        if (a.cu_seqlens) {
            first_token = a.cu_seqlens[batch];
            tokens = a.cu_seqlens[batch + 1] - first_token;
        }
        rows = tokens * a.group;
        chunk = threadIdx.x % CHUNKS;
        active = threadIdx.x < ROWS * CHUNKS;
        if (a.rotate)
#pragma unroll
            for (int i = 0; i < PER_THREAD; i++)
                sign[i] = rotation_sign(a.rotation_seed, chunk * PER_THREAD + i);
    }

    // Row r's first element of this thread, in a tensor with these strides.
    __device__ long long offset(const long long (&stride)[3], long long r) const
    {
        const long long token = first_token + r / args.group;
        const long long head = head_base + r % args.group;
        return batch * stride[0] + token * stride[1] + head * stride[2] + chunk * PER_THREAD;
    }

    // x = R (row r's 8 elements of this thread), or 0 where !valid. Every lane of the warp calls it.
    __device__ void load(long long r, bool valid, float (&x)[PER_THREAD]) const
    {
        uint4 raw = make_uint4(0u, 0u, 0u, 0u);
        if (valid)
            raw = *reinterpret_cast<const uint4 *>(static_cast<const T *>(args.in) + offset(args.in_stride, r));
        const unsigned *words = &raw.x;
#pragma unroll
        for (int w = 0; w < 4; w++)
            unpack2<T>(words[w], x[2 * w], x[2 * w + 1]);
        if (args.rotate)
            rotate(x);
    }

    // x = H diag(s) x / sqrt(n) over each n-element block: in-thread butterflies for strides 1-4,
    // lane shuffles for 8 and up (the lower index of a pair gets a + b, the upper a - b).
    __device__ void rotate(float (&x)[PER_THREAD]) const
    {
#pragma unroll
        for (int i = 0; i < PER_THREAD; i++)
            x[i] *= sign[i];
#pragma unroll
        for (int stride = 1; stride < PER_THREAD; stride *= 2)
#pragma unroll
            for (int i = 0; i < PER_THREAD; i++)
                if (!(i & stride)) {
                    const float a = x[i], b = x[i + stride];
                    x[i] = a + b;
                    x[i + stride] = a - b;
                }
#pragma unroll
        for (int lanes = 1; lanes < ORDER / PER_THREAD; lanes *= 2) {
            const bool upper = threadIdx.x & lanes;
#pragma unroll
            for (int i = 0; i < PER_THREAD; i++) {
                const float other = __shfl_xor_sync(FULL_WARP, x[i], lanes);
                x[i] = upper ? other - x[i] : x[i] + other;
            }
        }
#pragma unroll
        for (int i = 0; i < PER_THREAD; i++)
            x[i] *= NORM;
    }

    // Calls f(r, valid, x) for each of the slot's rows this CTA takes; passes are CTA-uniform.
    template <typename F>
    __device__ void for_rows(F &&f) const
    {
        for (long long base = static_cast<long long>(blockIdx.y) * ROWS; base < rows;
             base += static_cast<long long>(gridDim.y) * ROWS) {
            const long long r = base + threadIdx.x / CHUNKS;
            const bool valid = active && r < rows;
            float x[PER_THREAD];
            load(r, valid, x);
            f(r, valid, x);
        }
    }

    __device__ int amax_slot() const { return args.per_tensor ? 0 : static_cast<int>(blockIdx.x); }
};

template <typename T, int HEAD_DIM>
struct QuantizeAmax : QuantizeRows<T, HEAD_DIM> {
    using Rows = QuantizeRows<T, HEAD_DIM>;
    using Rows::PER_THREAD;
    using Rows::THREADS;

    __device__ QuantizeAmax(const fc_quantize_args &a, char *) : Rows(a) {}

    __device__ void run()
    {
        __shared__ float warp_amax[THREADS / WARP_SIZE];
        float amax = 0.f;
        this->for_rows([&](long long, bool valid, const float (&x)[PER_THREAD]) {
            if (valid)
#pragma unroll
                for (int i = 0; i < PER_THREAD; i++)
                    amax = fmaxf(amax, fabsf(x[i]));
        });
        amax = warp_max(amax);
        if (threadIdx.x % WARP_SIZE == 0)
            warp_amax[threadIdx.x / WARP_SIZE] = amax;
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int w = 1; w < THREADS / WARP_SIZE; w++)
                amax = fmaxf(amax, warp_amax[w]);
            if (amax > 0.f)
                atomicMax(this->args.amax + this->amax_slot(), __float_as_uint(amax));
        }
    }
};

// The second entry: the rows again, scaled and rounded (or, with a 16-bit out, rotated only).
template <typename T, int HEAD_DIM>
__device__ void quantize_store(const fc_quantize_args &args)
{
    using Rows = QuantizeRows<T, HEAD_DIM>;
    constexpr int PER_THREAD = Rows::PER_THREAD;
    const Rows rows(args);
    float scale = 1.f;   // 448 / amax
    if (args.out_fp8 && args.given) {
        scale = 1.f / args.descale[blockIdx.x];
    } else if (args.out_fp8) {
        const float amax = __uint_as_float(args.amax[rows.amax_slot()]);
        if (amax > 0.f)
            scale = E4M3_MAX / amax;
        if (blockIdx.y == 0 && threadIdx.x == 0)
            args.descale[blockIdx.x] = amax > 0.f ? amax / E4M3_MAX : 1.f;
    }
    rows.for_rows([&](long long r, bool valid, const float (&x)[PER_THREAD]) {
        if (!valid)
            return;
        if (args.out_fp8) {
            uint2 codes;
            codes.x = f32x4_to_e4m3x4(x[0] * scale, x[1] * scale, x[2] * scale, x[3] * scale);
            codes.y = f32x4_to_e4m3x4(x[4] * scale, x[5] * scale, x[6] * scale, x[7] * scale);
            *reinterpret_cast<uint2 *>(static_cast<unsigned char *>(args.out) + rows.offset(args.out_stride, r)) = codes;
        } else {
            uint4 packed;
            unsigned *words = &packed.x;
#pragma unroll
            for (int w = 0; w < 4; w++)
                words[w] = static_cast<unsigned>(from_float<T>(x[2 * w]).bits) |
                           static_cast<unsigned>(from_float<T>(x[2 * w + 1]).bits) << 16;
            *reinterpret_cast<uint4 *>(static_cast<T *>(args.out) + rows.offset(args.out_stride, r)) = packed;
        }
    });
}

}  // namespace fc
