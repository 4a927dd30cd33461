/*
 * Kernel arguments, shared by the host (C, src/launch.c) and the kernel templates (NVRTC), so
 * the two can never disagree on the layout. Plain C, no includes: NVRTC ships no headers.
 */
#ifndef FC_ARGS_H
#define FC_ARGS_H

/* The key mask's parameters, shared by the kernels (kernel_templates/mask.cuh) and the host's
 * mirror of its rule (src/mask.c); src/problem.c fills them from the caller's fields. Query row i's
 * diagonal is key i + seqlen_k - seqlen_q. */
struct fc_mask {
    int causal;         /* 0 or 1: keys up to the diagonal; the kernels take it at compile time */
    int window;         /* 0 or 1: a sliding window (compile time too): the bounds below apply */
    int window_left;    /* window: keys from the diagonal - window_left on; an unbounded side is
                           seqlen_k here (no row's window then starts above key 0) */
    int window_right;   /* window, not causal: keys up to the diagonal + window_right; unbounded:
                           seqlen_q (every row's window then reaches key seqlen_k - 1) */
};

/* Passed by value as one `const __grid_constant__` parameter. Strides in elements. */
struct fc_kernel_args {
    const void *q, *k, *v;
    void *o;
    float *lse;                     /* NULL: not written */
    long long q_stride[3];          /* batch, seq, head */
    long long k_stride[3];
    long long v_stride[3];
    long long o_stride[3];
    int batch, seqlen_q, seqlen_k, heads_q, heads_kv;
    int q_per_kv;                   /* heads_q / heads_kv */
    float scale_log2;               /* softmax_scale * log2(e): scores go straight into exp2 */
    int m_blocks;                   /* query row blocks per (batch, head); GQA-packed rows (the sm90
                                       kernel's PACK_GQA): per (batch, K/V head) */
    /* split-KV (the decode family): splits CTAs per (batch, K/V head), split_keys keys each; with
     * more than one split, each writes fp32 O (divided by its sum) and LSE per (split, batch,
     * head, query row) for the combine kernel. */
    int splits, split_keys;
    float *o_partial, *lse_partial;
    struct fc_mask mask;
    const float *sinks;             /* [heads_q] logits (natural log) joining each row's denominator, or NULL */
    /* logit soft-capping (the variant's compile-time switch): S -> softcap * tanh(scale * S / softcap),
     * computed as tanh(S * softcap_scale) into exp2 with the factor softcap_log2 */
    float softcap_scale;            /* softmax_scale / softcap */
    float softcap_log2;             /* softcap * log2(e) */
    /* FP8 K/V (the variant's KV_FP8 switch): fp32 [batch, heads_kv] dequantization scales, or NULL
     * for 1; k_descale joins the softmax scale, v_descale the output */
    const float *k_descale, *v_descale;
    /* FP8 attention (the variant's Q_FP8 switch: q, k and v e4m3): q's [batch, heads_kv] scales, or
     * NULL for 1; they join the softmax scale as k_descale does */
    const float *q_descale;
};

/* Per-sequence lengths, for variants with the VARLEN switch (varlen batches, seqused_k): they take
 * fc_varlen_args (or fc_sm90_varlen_args), whose first member is the dense argument, so that the
 * kernels of other variants keep their argument, and their code, as it was. In varlen mode the
 * host passes the tensors' batch strides as 0 and seqlen_q / seqlen_k as the total token counts
 * (the LSE is then [heads_q, seqlen_q]). */
struct fc_seqlens {
    const int *cu_seqlens_q, *cu_seqlens_k;   /* [batch + 1] token offsets, or NULL: a dense batch */
    const int *seqused_k;                      /* [batch] keys present per sequence, or NULL: all */
};

struct fc_varlen_args {
    struct fc_kernel_args base;
    struct fc_seqlens seqlens;
};

/* A paged K/V cache, for variants with the PAGED switch (which have VARLEN too): they take
 * fc_paged_args, the VARLEN argument followed by this, so that other variants keep theirs. K and V
 * are [pages, page_size, heads_kv, head_dim] with the argument's k_stride / v_stride read as
 * {page, token, head}; key j of sequence b is slot j % page_size of page
 * page_table[b * page_table_stride + j / page_size]. cu_seqlens_k is NULL in paged mode. */
struct fc_pages {
    const int *page_table;          /* [batch, page_table_stride] page ids */
    int page_size;                  /* tokens per page, >= 1 */
    int page_table_stride;          /* elements from one sequence's row of the table to the next */
};

struct fc_paged_args {
    struct fc_kernel_args base;
    struct fc_seqlens seqlens;
    struct fc_pages pages;
};

/* fc_attention_merge's kernel (merge.cuh): two partial results of the same queries, and where the
 * merged one goes. Tensors [batch, seq, head, head_dim] with strides in elements {batch, seq, head};
 * LSEs [batch, head, seq] fp32. */
struct fc_merge_args {
    const void *out_a, *out_b;
    void *out;
    const float *lse_a, *lse_b;
    float *lse;                     /* NULL: not written */
    long long a_stride[3], b_stride[3], o_stride[3];
    int batch, seqlen, heads;
};

/* fc_quantize's two kernels (quantize.cuh): in [batch, seq, head, head_dim] 16-bit to out (e4m3, or
 * 16-bit: rotation only), strides in elements {batch, seq, head}; varlen (cu_seqlens) packed tokens.
 * The rows of descale slot (b, g) are its sequence's tokens x heads g * group .. (g + 1) * group - 1. */
struct fc_quantize_args {
    const void *in;
    void *out;
    float *descale;                 /* [batch, descale_heads]: written, or read (given) */
    unsigned *amax;                 /* scratch: |x|max's fp32 bits per slot (per tensor: [0]), zeroed first */
    const int *cu_seqlens;          /* varlen: [batch + 1]; NULL: dense */
    long long in_stride[3], out_stride[3];
    unsigned long long rotation_seed;
    int seqlen;                     /* dense: every sequence's */
    int descale_heads, group;       /* slots per sequence, heads per slot */
    int per_tensor, given, rotate, out_fp8;   /* 0 or 1 each */
};

/* CUtensorMap's storage (128 bytes, 64-byte aligned, as cuda.h defines it), spelled so that both
 * C and NVRTC's C++ accept it. */
#ifdef __cplusplus
#define FC_ALIGN64 alignas(64)
#else
#define FC_ALIGN64 _Alignas(64)
#endif
struct fc_tensor_map {
    FC_ALIGN64 unsigned long long opaque[16];
};

/* The Hopper kernel's argument: the common one plus TMA maps of Q, K and V, each a 4-D view
 * (head_dim, seq, head, batch) of the caller's tensor with boxes of 64 x block rows. */
struct fc_sm90_args {
    struct fc_tensor_map q_map, k_map, v_map;
    struct fc_kernel_args base;
    /* A scheduled persistent grid (FP8, causal: fwd_sm90.cuh's run_scheduled): a counter, zero at
     * launch and zeroed again by the launch's last take (src/counters.c owns it), from which each CTA
     * takes the blocks of attention_common.cuh's scheduled_block list after its first; NULL: each CTA
     * takes its static units of two blocks (attention_common.cuh's persistent_units). Other variants
     * read none of the three. */
    int *next_block;
    int tail_heads;   /* the last (batch, head)s, whose blocks come heaviest first across them: the list's
                         (scheduled), or one a unit after the static pairs (attention_common.cuh's
                         persistent_units, causal; 0: pairs throughout) */
    int blocks;       /* the list's row blocks: m_blocks * heads_q * batch */
};

/* The Hopper kernel's argument with the VARLEN switch (varlen: the maps' batch dimension is 1 and
 * their seq dimension every token). */
struct fc_sm90_varlen_args {
    struct fc_sm90_args sm90;
    struct fc_seqlens seqlens;
};

/* The Hopper kernel's argument with the PAGED switch (which has VARLEN too), per tensor (box_rows for
 * K, v_box_rows for V): > 0, its map is a 4-D view (head_dim, page_size, head, page) of the paged
 * tensor with boxes of that many slots, and a key tile is block_n / rows boxes, each inside one page;
 * 0, two producer warps gather its rows by cp.async from the base argument's pointer and strides (the
 * map unused). src/family_sm90.c chooses. */
/* The sm90 kernel's V rows: 128-byte-swizzled lines of 64 16-bit columns, but at head_dim 96
 * 64-byte ones (three blocks of 32 columns), so that P V runs at its exact width (WGMMA n96; a
 * 128-byte swizzle's atoms are 64 columns wide). fwd_sm90.cuh lays V out so, src/family_sm90.c
 * encodes its TMA map so. */
#define FC_SM90_V_LINE_BYTES(head_dim) ((head_dim) == 96 ? 64 : 128)

/* The sm90 module's second kernel (FP8, v_transposed variants: fwd_sm90.cuh's transpose_v_ahead): V's
 * e4m3 rows (strides in bytes) to V^T in scratch, heads_kv x head_dim lines of padded_keys a batch. */
struct fc_sm90_vt_args {
    const void *v;
    long long row_stride, head_stride, batch_stride;
    void *vt;
    int seqlen_k, padded_keys, heads_kv;
};

/* FP8 attention's V^T slot on the sm90 kernel: the keys of its lines, block_n up to 128 (one line a
 * head dim), else whole 128-key lines (a column block each, the last one's keys past the tile unused).
 * fwd_sm90.cuh's VT_BYTES; src/family_sm90.c's shared memory size. */
#define FC_SM90_FP8_VT_KEYS(block_n) ((block_n) <= 128 ? (block_n) : ((block_n) + 127) / 128 * 128)

/* The sm90 kernel's CTAs per SM as its __launch_bounds__ minimum (ptxas fits the registers for it):
 * two for one consumer warpgroup beside the producer up to head_dim 128, else one. fwd_sm90.cuh's
 * MIN_BLOCKS; src/family_sm90.c sizes the persistent grid from it. */
#define FC_SM90_MIN_BLOCKS(specialized, consumers, head_dim) \
    ((specialized) && (consumers) == 1 && (head_dim) <= 128 ? 2 : 1)

/* A persistent grid's units of work per (batch, head): each row block, or causal, row blocks p and
 * m_blocks - 1 - p together (attention_common.cuh's persistent_units; src/family_sm90.c's grid). */
#define FC_PERSISTENT_HEAD_UNITS(m_blocks, causal) ((causal) ? ((m_blocks) + 1) / 2 : (m_blocks))

/* A rule both sides compute: a device function in the kernels, a static one in the host's C. */
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define FC_SHARED_RULE __device__ __forceinline__
#else
#define FC_SHARED_RULE static inline
#endif

/* The static tail's deal (attention_common.cuh's tile_coordinates; src/family_sm90.c's static_tail
 * forms the CTAs' sums by it): tail unit `unit` of a persistent grid of `grid` CTAs, after the pairs'
 * `front` units, as a rank in the tail's n blocks heaviest first. Its CTA is unit % grid: the pairs'
 * last round ends at CTA front % grid, the tail's first ranks go to that CTA and those after it, in
 * order; then the grid's rounds in turn, each round's ranks to the CTAs in order and the next
 * round's in reverse order (a round the tail does not fill in order), so that the sums even out. */
FC_SHARED_RULE int fc_static_tail_rank(int unit, int front, int n, int grid)
{
    const int round = unit / grid - front / grid, cta = unit % grid;
    if (round == 0)
        return cta - front % grid;
    const int first = grid - front % grid + (round - 1) * grid;
    return first + (round % 2 && first + grid <= n ? grid - 1 - cta : cta);
}

struct fc_sm90_paged_args {
    struct fc_sm90_varlen_args varlen;
    struct fc_pages pages;
    int box_rows, v_box_rows;   /* K's and V's: 0 gathered */
};

#endif
