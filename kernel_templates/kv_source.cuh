// Where the K and V rows of one (batch, K/V head) come from: row `key` of the caller's [batch, seq,
// head, head_dim] tensor (StridedRows, StridedTmaRows), or of a paged cache's [pages, page_size,
// head, head_dim] through the sequence's row of the page table (PagedRows).
#pragma once

#include "fc_args.h"
#include "mask.cuh"
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

    // Rows of one sequence of a batch: its row 0 is the tensor's row `first_row` (a varlen batch's
    // cu_seqlens; the host passes the batch stride as 0 there).
    __device__ __forceinline__ StridedRows(const void *tensor, const long long (&s)[3], int batch, int head,
                                           long long first_row)
        : base(static_cast<const T *>(tensor) + batch * s[0] + first_row * s[1] + head * s[2]), strides(s)
    {
    }

    // Elements from one row to the next.
    __device__ __forceinline__ long long stride() const { return strides[1]; }
    __device__ __forceinline__ const T *row(int key) const { return base + key * strides[1]; }
};

// One sequence of a batch, for variants with per-sequence lengths (VARLEN): where its rows start
// and how many it has. Dense (no cu_seqlens): every sequence starts at its batch's row 0 and has
// the argument's lengths; seqused_k, if given, replaces the key count. NOTE: the values are the
// caller's contract (src/flashcore.h); a negative length counts as 0. PAGED: keys come from the page
// table (cu_seqlens_k is NULL), so a sequence has the argument's seqlen_k keys unless seqused_k
// says otherwise, and its key rows start at key 0 of its table row.
struct Sequence {
    long long q_row0, k_row0;   // the tensors' token index of the sequence's first query / key
    long long lse_row0;         // LSE index of (head 0, row 0): [heads_q, tokens] varlen, else [batch, heads_q, seqlen_q]
    int len_q, len_k;
};

template <bool PAGED = false>
__device__ __forceinline__ Sequence sequence_of(const fc_kernel_args &args, const fc_seqlens &s, int batch)
{
    Sequence seq;
    if (s.cu_seqlens_q) {
        const int q0 = s.cu_seqlens_q[batch], k0 = PAGED ? 0 : s.cu_seqlens_k[batch];
        seq.q_row0 = q0;
        seq.k_row0 = k0;
        seq.lse_row0 = q0;
        seq.len_q = s.cu_seqlens_q[batch + 1] - q0;
        seq.len_k = PAGED ? args.seqlen_k : s.cu_seqlens_k[batch + 1] - k0;
    } else {
        seq.q_row0 = seq.k_row0 = 0;
        seq.lse_row0 = static_cast<long long>(batch) * args.heads_q * args.seqlen_q;
        seq.len_q = args.seqlen_q;
        seq.len_k = args.seqlen_k;
    }
    if (s.seqused_k)
        seq.len_k = s.seqused_k[batch];
    seq.len_q = max(seq.len_q, 0);
    seq.len_k = max(seq.len_k, 0);
    return seq;
}

// The CTA's sequence lengths (mask.cuh's publish_sequence_lengths put them in shared memory), or
// the argument's for a dense kernel.
template <bool VARLEN>
__device__ __forceinline__ int sequence_len_q(const fc_kernel_args &args)
{
    return MaskLengths<VARLEN>().seqlen_q(args);
}
template <bool VARLEN>
__device__ __forceinline__ int sequence_len_k(const fc_kernel_args &args)
{
    return MaskLengths<VARLEN>().seqlen_k(args);
}

// A kernel's sequence, for kernels that keep it (VARLEN); an empty base otherwise, so that dense
// kernels keep their layout and code.
template <bool VARLEN>
struct SequenceState {};
template <>
struct SequenceState<true> {
    Sequence seq;
};

// The per-sequence lengths of a VARLEN kernel's argument: its first member is the dense argument.
__device__ __forceinline__ const fc_seqlens &seqlens_of(const fc_kernel_args &args)
{
    return reinterpret_cast<const fc_varlen_args &>(args).seqlens;
}

// The page table of a PAGED kernel's argument: its prefixes are the VARLEN argument and the dense one.
__device__ __forceinline__ const fc_pages &pages_of(const fc_kernel_args &args)
{
    return reinterpret_cast<const fc_paged_args &>(args).pages;
}

// Where key `key` of sequence `batch` lives in a paged cache: its page id (one read of the table)
// and its slot in the page. NOTE: the id is the caller's contract (src/flashcore.h); only keys below
// the sequence's count may be asked for (the table's entries past them may hold anything).
struct PageSlot {
    int page, slot;
};

// The page of a key's sequence that holds it (its index in the table's row). A power-of-two page
// size (vLLM's 16, SGLang's 1) divides by a shift: a 32-bit division is ~20 instructions, in the
// lookups' critical path (PERF_NOTES v8.5). Keys are never negative.
__device__ __forceinline__ unsigned page_index(const fc_pages &pages, int key)
{
    const unsigned size = pages.page_size, k = key;
    return (size & (size - 1)) == 0 ? k >> (__ffs(size) - 1) : k / size;
}

__device__ __forceinline__ PageSlot page_slot(const fc_pages &pages, int batch, int key)
{
    const unsigned index = page_index(pages, key);
    return PageSlot{pages.page_table[static_cast<long long>(batch) * pages.page_table_stride + index],
                    static_cast<int>(key - index * pages.page_size)};
}

// page_slot of a key that may lie past the sequence's (valid false: page 0, slot 0, no table read).
__device__ __forceinline__ PageSlot page_slot_if(bool valid, const fc_pages &pages, int batch, int key)
{
    return valid ? page_slot(pages, batch, key) : PageSlot{0, 0};
}

// One head's K or V rows of a batch, or (VARLEN) of a sequence whose keys start at first_row.
template <bool VARLEN, typename T>
__device__ __forceinline__ StridedRows<T> sequence_rows(const void *tensor, const long long (&s)[3], int batch, int head,
                                                        long long first_row)
{
    if constexpr (VARLEN)
        return StridedRows<T>(tensor, s, batch, head, first_row);
    else
        return StridedRows<T>(tensor, s, batch, head);
}

// The same, its table read issued where it stands in the code: an asm volatile load keeps its place
// among the kernel's asm volatile statements (the barrier waits around it), where the compiler may
// sink a plain load to its first use. For a lookup made ahead of its use (fwd_sm90.cuh's gather path:
// the sunk read, a tile ahead, left its L2 latency in every tile's critical path, 0.73x the non-paged
// run). NOTE: the table is read-only while the kernel runs (the caller's contract): the .nc path.
__device__ __forceinline__ PageSlot page_slot_ahead(const fc_pages &pages, int batch, int key)
{
    const unsigned index = page_index(pages, key);
    int page;
    asm volatile("ld.global.nc.s32 %0, [%1];\n"
                 : "=r"(page)
                 : "l"(pages.page_table + static_cast<long long>(batch) * pages.page_table_stride + index));
    return PageSlot{page, static_cast<int>(key - index * pages.page_size)};
}

// Rows of one K/V head of a paged cache [pages, page_size, head, head_dim], strides {page, slot,
// head}: the kernel looks up a row's PageSlot once (page_slot) and takes it for K and V alike.
template <typename T>
struct PagedRows {
    const T *base;                   // (page 0, slot 0) of this head
    const long long (&strides)[3];   // the kernel argument's {page, slot, head} strides

    __device__ __forceinline__ PagedRows(const void *tensor, const long long (&s)[3], int head)
        : base(static_cast<const T *>(tensor) + head * s[2]), strides(s)
    {
    }

    __device__ __forceinline__ const T *row(PageSlot at) const
    {
        return base + at.page * strides[0] + at.slot * strides[1];
    }
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

// Where one sequence's rows start in TMA maps of the whole tensors (VARLEN): a varlen batch's maps
// hold every token in one batch (coordinate 0) and its sequence starts at its cu_seqlens; a dense
// batch with seqused_k keeps its batch coordinate and row 0.
struct SequenceTmaOrigin {
    int q_row0, k_row0, batch;
};

// PAGED: keys come from the page table (cu_seqlens_k is NULL): the key origin is 0.
template <bool PAGED = false>
__device__ __forceinline__ SequenceTmaOrigin sequence_tma_origin(const fc_seqlens &s, int batch)
{
    if (s.cu_seqlens_q)
        return SequenceTmaOrigin{s.cu_seqlens_q[batch], PAGED ? 0 : s.cu_seqlens_k[batch], 0};
    return SequenceTmaOrigin{0, 0, batch};
}

// One sequence's K or V tiles through TMA maps of a paged cache, grouped: 5-D maps (head_dim in a
// 128-byte line, row in a group of 8 slots, column block of the heads' rows, group of 8 slots in the
// page, page) whose boxes are (line, 8, a head's column blocks, box_rows / 8, 1) (src/family_sm90.c).
// A box lands as box_rows / 8 atom groups, each the head's column blocks of 8 rows, 1024 bytes each:
// fwd_sm90.cuh's grouped tile layout, every column block of a box in one copy. box_rows divides both
// page_size and the tile (so a box lies inside one page) and is a multiple of 8 (whole atoms). Box i
// of the tile whose first key is `key` is the box at (0, 0, the head's first column block, group of
// key + i * box_rows in its page, its page): one table read per box. A box that starts at or past
// the sequence's keys reads page 0 (the table's row may end before it: page_slot_if). NOTE: rows
// past the sequence's keys are the page's other slots or page 0's (maybe NaN): the kernel masks them
// as it masks a varlen box's (fwd_sm90.cuh zeroes V's).
struct PagedTmaRows {
    int head, column_blocks;

    // One box at dst: the rows at `at`, every column block, counted on the mbarrier bar.
    __device__ __forceinline__ void load(unsigned dst, const TensorMap &map, const PageSlot &at, unsigned bar) const
    {
        tma_load_5d(dst, map, 0, 0, head * column_blocks, static_cast<unsigned>(at.slot) / 8, at.page, bar);
    }
};

// One sequence's K or V rows through TMA (VARLEN): its key `key` is the map's row first_row + key.
// NOTE: a box that runs past the sequence's end brings whatever follows it (the next sequence's
// tokens, rows past seqused_k that may hold NaN, zeros past the tensor): the kernel must mask
// those keys' scores and keep those V rows out of P V (fwd_sm90.cuh zeroes them).
struct SequenceTmaRows {
    int head, batch, first_row;

    __device__ __forceinline__ void load(unsigned dst, const TensorMap &map, int column, int key, unsigned bar) const
    {
        tma_load_4d(dst, map, column, first_row + key, head, batch, bar);
    }
};

// An FP8 cache's dequantization scale of one (sequence, K/V head), from a [batch, heads_kv] array
// (fc_kernel_args' k_descale / v_descale); 1 without one.
__device__ __forceinline__ float kv_descale(const float *scales, const fc_kernel_args &args, int batch, int kv_head)
{
    return scales ? scales[batch * args.heads_kv + kv_head] : 1.f;
}

}  // namespace fc
