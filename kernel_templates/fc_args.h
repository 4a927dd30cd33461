/*
 * Kernel arguments, shared by the host (C, src/launch.c) and the kernel templates (NVRTC), so
 * the two can never disagree on the layout. Plain C, no includes: NVRTC ships no headers.
 */
#ifndef FC_ARGS_H
#define FC_ARGS_H

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
    int m_blocks;                   /* query row blocks per (batch, head) */
};

#endif
