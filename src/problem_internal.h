/* Internal: a validated attention problem. */
#ifndef FC_PROBLEM_INTERNAL_H
#define FC_PROBLEM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "flashcore.h"

/** fc_attention_params after every rule is checked: strides resolved, scale resolved. */
struct fc_problem {
    enum fc_dtype dtype;
    int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, causal;
    const void *q, *k, *v;
    void *out;
    float *lse;
    int64_t q_stride[3], k_stride[3], v_stride[3], o_stride[3];
    float softmax_scale;
};

/**
 * Checks every parameter before anything is compiled or launched; the message names the field
 * and the rule. Needs no GPU.
 * @return FC_OK, FC_ERR_INVALID_ARG (a rule is broken) or FC_ERR_UNSUPPORTED (valid, no kernel)
 */
enum fc_status fc_problem_from_params(const struct fc_attention_params *params, struct fc_problem *out,
                                      char *msg, size_t msg_size);

#endif
