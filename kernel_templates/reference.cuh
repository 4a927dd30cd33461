// The reference attention forward: simple, obviously correct, fp32 throughout.
//
// It is the correctness oracle of the GPU tests and the fallback for any shape no fast kernel
// takes, so it favours clarity over speed: CUDA cores only, one key per lane for Q K^T, one head
// dim per lane for P V, online softmax in fp32 (exp2, scale folded into Q). KV_FP8: K and V are e4m3
// (an FP8 KV cache), converted exactly as they are read, their scales applied in fp32. Q_FP8 (FP8
// attention; KV_FP8 too): q is e4m3 as well, converted and scaled the same way; P stays fp32 (this is
// the oracle: the fast kernels' rounding of P is theirs to answer for), O is written in T.
#pragma once

#include "element.cuh"
#include "fc_args.h"
#include "kv_source.cuh"
#include "mask.cuh"
#include "ptx/convert.cuh"
#include "ptx/math.cuh"
#include "ptx/warp.cuh"
#include "softmax.cuh"

namespace fc {

template <typename T, int HEAD_DIM, bool CAUSAL, int BLOCK_M, int WARPS, bool WINDOW = false, bool SOFTCAP = false,
          bool VARLEN = false, bool PAGED = false, bool KV_FP8 = false, bool Q_FP8 = false>
struct ReferenceKernel : SequenceState<VARLEN> {
    static_assert(!PAGED || VARLEN, "a paged cache takes the per-sequence form");
    static constexpr int BLOCK_N = WARP_SIZE;                    // one key per lane
    static constexpr int THREADS = WARPS * WARP_SIZE;
    static constexpr int ROWS = BLOCK_M / WARPS;                 // query rows per warp
    static constexpr int DIMS_PER_LANE = (HEAD_DIM + WARP_SIZE - 1) / WARP_SIZE;
    static_assert(!Q_FP8 || KV_FP8, "FP8 attention: q, k and v in e4m3");
    using KV = typename KvElement<T, KV_FP8>::type;   // K/V storage
    using QT = typename KvElement<T, Q_FP8>::type;    // q storage
    using E = Element<KV>;
    static constexpr int WORDS_PER_ROW = HEAD_DIM / E::PER_WORD;    // 32-bit words of a K/V row
    // NOTE: one spare word per K/V row puts lane j's row on bank j: Q K^T reads are conflict-free.
    static constexpr int PITCH_WORDS = WORDS_PER_ROW + 1;
    static_assert(HEAD_DIM % 8 == 0 && HEAD_DIM <= 256, "head_dim: a multiple of 8 up to 256");
    static_assert(BLOCK_M % WARPS == 0 && ROWS >= 1 && ROWS <= 8, "1 to 8 query rows per warp");

    struct Shared {
        float q[BLOCK_M * HEAD_DIM];              // (BLOCK_M, HEAD_DIM) fp32, scaled (see load_q)
        unsigned k[BLOCK_N * PITCH_WORDS];        // (BLOCK_N, HEAD_DIM) KV, packed in words, padded rows
        unsigned v[BLOCK_N * PITCH_WORDS];        // (BLOCK_N, HEAD_DIM) KV, packed in words, padded rows
    };
    static constexpr int SMEM_BYTES = sizeof(Shared);
    static constexpr int MIN_BLOCKS = 1;

    const fc_kernel_args &args;
    Shared &smem;
    int batch, head, kv_head, row0;

    __device__ ReferenceKernel(const fc_kernel_args &a, char *shared) : args(a), smem(*reinterpret_cast<Shared *>(shared))
    {
        int block = blockIdx.x;
        const int m_block = block % args.m_blocks;
        block /= args.m_blocks;
        head = block % args.heads_q;
        batch = block / args.heads_q;
        kv_head = head / args.q_per_kv;
        row0 = m_block * BLOCK_M;
    }

    // VARLEN: one sequence of a ragged batch (or of a dense one with seqused_k).
    __device__ ReferenceKernel(const fc_varlen_args &a, char *shared) : ReferenceKernel(a.base, shared)
    {
        this->seq = sequence_of(args, a.seqlens, batch);
    }

    // PAGED: the sequence's keys through its row of the page table.
    __device__ ReferenceKernel(const fc_paged_args &a, char *shared) : ReferenceKernel(a.base, shared)
    {
        this->seq = sequence_of<true>(args, a.seqlens, batch);
    }

    // The sequence's query and key counts, and where its rows start (dense: the argument's, row 0).
    __device__ __forceinline__ int len_q() const
    {
        if constexpr (VARLEN)
            return this->seq.len_q;
        else
            return args.seqlen_q;
    }
    __device__ __forceinline__ int len_k() const
    {
        if constexpr (VARLEN)
            return this->seq.len_k;
        else
            return args.seqlen_k;
    }
    __device__ __forceinline__ long long q_row0() const
    {
        if constexpr (VARLEN)
            return this->seq.q_row0;
        else
            return 0;
    }

    __device__ __forceinline__ long long k_row0() const
    {
        if constexpr (VARLEN)
            return this->seq.k_row0;
        else
            return 0;
    }
    __device__ __forceinline__ KeyMask<CAUSAL, WINDOW, VARLEN> make_mask() const
    {
        return KeyMask<CAUSAL, WINDOW, VARLEN>(args);   // VARLEN: the lengths run() publishes
    }
    // The LSE of (head, row): [batch, heads_q, seqlen_q]; varlen [heads_q, tokens] (Sequence::lse_row0).
    __device__ __forceinline__ long long lse_index(int row) const
    {
        if constexpr (VARLEN)
            return this->seq.lse_row0 + static_cast<long long>(head) * args.seqlen_q + row;
        else
            return (static_cast<long long>(batch) * args.heads_q + head) * args.seqlen_q + row;
    }

    // KV_FP8: this (sequence, K/V head)'s scale (kv_source.cuh's kv_descale); 1 for 16-bit K/V.
    __device__ __forceinline__ float descale(const float *scales) const
    {
        return KV_FP8 ? kv_descale(scales, args, batch, kv_head) : 1.f;
    }

    // Q times scale * log2(e): a dot product is then a score in the log2 domain; with a softcap,
    // times scale / softcap: a dot product is what the tanh takes. KV_FP8: times k_descale too;
    // Q_FP8: and q_descale.
    __device__ void load_q()
    {
        float scale = (SOFTCAP ? args.softcap_scale : args.scale_log2) * descale(args.k_descale);
        if constexpr (Q_FP8)
            scale *= kv_descale(args.q_descale, args, batch, kv_head);
        const QT *q = static_cast<const QT *>(args.q) + batch * args.q_stride[0] + head * args.q_stride[2];
        if constexpr (VARLEN)
            q += q_row0() * args.q_stride[1];
        for (int i = threadIdx.x; i < BLOCK_M * HEAD_DIM; i += THREADS) {
            const int row = row0 + i / HEAD_DIM, d = i % HEAD_DIM;
            smem.q[i] = row < len_q()
                            ? to_float(q[row * args.q_stride[1] + d]) * scale
                            : 0.f;
        }
    }

    // Rows past seqlen_k (the sequence's keys) are zero-filled: they are masked, but must not hold
    // NaN bit patterns (VARLEN: they are another sequence's, or unused slots of a KV cache).
    __device__ void load_kv(int key0)
    {
        if constexpr (PAGED) {
            load_kv_paged(key0);
            return;
        }
        const StridedRows<KV> k = sequence_rows<VARLEN, KV>(args.k, args.k_stride, batch, kv_head, this->k_row0());
        const StridedRows<KV> v = sequence_rows<VARLEN, KV>(args.v, args.v_stride, batch, kv_head, this->k_row0());
        for (int i = threadIdx.x; i < BLOCK_N * WORDS_PER_ROW; i += THREADS) {
            const int j = i / WORDS_PER_ROW, w = i % WORDS_PER_ROW, key = key0 + j;
            unsigned kw = 0, vw = 0;
            if (key < len_k()) {
                kw = reinterpret_cast<const unsigned *>(k.row(key))[w];
                vw = reinterpret_cast<const unsigned *>(v.row(key))[w];
            }
            smem.k[j * PITCH_WORDS + w] = kw;
            smem.v[j * PITCH_WORDS + w] = vw;
        }
    }

    // PAGED: the tile's rows through the page table (the oracle: a lookup per word, shared by K and V;
    // the table is a few cached lines). Rows past the sequence's keys are zeros, as above.
    __device__ void load_kv_paged(int key0)
    {
        const PagedRows<KV> k(args.k, args.k_stride, kv_head), v(args.v, args.v_stride, kv_head);
        for (int i = threadIdx.x; i < BLOCK_N * WORDS_PER_ROW; i += THREADS) {
            const int j = i / WORDS_PER_ROW, w = i % WORDS_PER_ROW, key = key0 + j;
            unsigned kw = 0, vw = 0;
            if (key < len_k()) {
                const PageSlot at = page_slot(pages_of(args), batch, key);
                kw = reinterpret_cast<const unsigned *>(k.row(at))[w];
                vw = reinterpret_cast<const unsigned *>(v.row(at))[w];
            }
            smem.k[j * PITCH_WORDS + w] = kw;
            smem.v[j * PITCH_WORDS + w] = vw;
        }
    }

    __device__ void run()
    {
        const int warp = threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
        const int my_row0 = row0 + warp * ROWS;
        if constexpr (VARLEN) {
            publish_sequence_lengths(len_q(), len_k());
            if (row0 >= len_q())   // a block of the longest sequence's rows past this one's
                return;
        }
        const KeyMask<CAUSAL, WINDOW, VARLEN> mask = make_mask();
        // keys outside the block's visible range (before a window, past the last visible one) are
        // skipped. NOTE: a literal 0 without a window, so that that code is what it was before windows.
        const int key_begin = WINDOW ? mask.key_begin(row0) : 0, key_end = mask.key_end(row0 + BLOCK_M);

        float row_max[ROWS], row_sum[ROWS], acc[ROWS][DIMS_PER_LANE];
        for (int r = 0; r < ROWS; r++) {
            row_max[r] = -infinity();
            row_sum[r] = 0.f;
            for (int i = 0; i < DIMS_PER_LANE; i++)
                acc[r][i] = 0.f;
        }

        load_q();
        for (int key0 = key_begin; key0 < key_end; key0 += BLOCK_N) {
            __syncthreads();   // the previous tile is consumed
            load_kv(key0);
            __syncthreads();

            // S = Q K^T for this lane's key, ROWS rows at once.
            float s[ROWS];
            for (int r = 0; r < ROWS; r++)
                s[r] = 0.f;
            for (int w = 0; w < WORDS_PER_ROW; w++) {
                if constexpr (KV_FP8) {   // four keys' dims a word
                    float kx[E::PER_WORD];
                    unpack_word<KV>(smem.k[lane * PITCH_WORDS + w], kx);
                    for (int r = 0; r < ROWS; r++) {
                        const float4 q = reinterpret_cast<const float4 *>(smem.q + (warp * ROWS + r) * HEAD_DIM)[w];
                        s[r] += q.x * kx[0] + q.y * kx[1] + q.z * kx[2] + q.w * kx[3];
                    }
                } else {
                    float k0, k1;
                    unpack2<T>(smem.k[lane * PITCH_WORDS + w], k0, k1);
                    for (int r = 0; r < ROWS; r++) {
                        const float2 q = reinterpret_cast<const float2 *>(smem.q + (warp * ROWS + r) * HEAD_DIM)[w];
                        s[r] += q.x * k0 + q.y * k1;
                    }
                }
            }

            // Online softmax: new running max, rescale what was accumulated, P = exp2(S - max). The
            // softcap with the accurate tanh: this kernel is the oracle.
            float p[ROWS];
            for (int r = 0; r < ROWS; r++) {
                const float capped = SOFTCAP ? args.softcap_log2 * tanhf(s[r]) : s[r];
                const float score = mask.visible(my_row0 + r, key0 + lane) ? capped : -infinity();
                const float new_max = fmaxf(row_max[r], warp_max(score));
                const bool none_yet = new_max == -infinity();   // exp2(-inf - -inf) would be NaN
                p[r] = none_yet ? 0.f : exp2_approx(score - new_max);
                const float correction = none_yet ? 1.f : exp2_approx(row_max[r] - new_max);
                row_sum[r] = row_sum[r] * correction + warp_sum(p[r]);
                row_max[r] = new_max;
                for (int i = 0; i < DIMS_PER_LANE; i++)
                    acc[r][i] *= correction;
            }

            // O += P V: this lane's head dims, every key of the tile.
            using Bits = decltype(KV::bits);   // the raw storage of one element
            const Bits *v_tile = reinterpret_cast<const Bits *>(smem.v);
            for (int j = 0; j < BLOCK_N; j++) {
                float vj[DIMS_PER_LANE];
                for (int i = 0; i < DIMS_PER_LANE; i++) {
                    const int d = lane + i * WARP_SIZE;
                    KV x;
                    x.bits = d < HEAD_DIM ? v_tile[j * E::PER_WORD * PITCH_WORDS + d] : 0;
                    vj[i] = to_float(x);
                }
                for (int r = 0; r < ROWS; r++) {
                    const float pj = __shfl_sync(FULL_WARP, p[r], j);
                    for (int i = 0; i < DIMS_PER_LANE; i++)
                        acc[r][i] += pj * vj[i];
                }
            }
        }
        store(acc, row_max, row_sum);
    }

    __device__ void store(const float (&acc)[ROWS][DIMS_PER_LANE], const float (&row_max)[ROWS],
                          const float (&row_sum)[ROWS])
    {
        const int warp = threadIdx.x / WARP_SIZE, lane = threadIdx.x % WARP_SIZE;
        T *o = static_cast<T *>(args.o) + batch * args.o_stride[0] + head * args.o_stride[2];
        if constexpr (VARLEN)
            o += q_row0() * args.o_stride[1];
        for (int r = 0; r < ROWS; r++) {
            const int row = row0 + warp * ROWS + r;
            if (row >= len_q())
                break;
            float top = row_max[r], sum = row_sum[r], scale = 1.f;
            if (args.sinks)   // the head's sink joins the denominator (softmax.cuh)
                scale = fold_sink(top, sum, args.sinks[head] * LOG2E);
            const float inverse = sum > 0.f ? scale * descale(args.v_descale) / sum : 0.f;   // no visible key: 0
            for (int i = 0; i < DIMS_PER_LANE; i++) {
                const int d = lane + i * WARP_SIZE;
                if (d < HEAD_DIM)
                    o[row * args.o_stride[1] + d] = from_float<T>(acc[r][i] * inverse);
            }
            if (args.lse && lane == 0) {
                constexpr float LN2 = 0.693147180559945309f;
                const float lse = sum > 0.f ? (top + log2_approx(sum)) * LN2 : -infinity();
                args.lse[lse_index(row)] = lse;
            }
        }
    }
};

}  // namespace fc
