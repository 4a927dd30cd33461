/* Internal: fc_quantize's rules, its fp64 CPU reference (the rotation), and its device check (random
 * inputs, poisoned outputs), shared by `fcjit quantize` and the GPU tests. */
#ifndef FC_QUANTIZE_INTERNAL_H
#define FC_QUANTIZE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "context_internal.h"

/** fc_quantize's rules, shape then tensors; resolves descale_heads, out_dtype and the strides in *p. */
enum fc_status fc_quantize_validate(struct fc_quantize_params *p, char *msg);

/** The rotation's sign of dimension d, +1 or -1 (quantize.cuh's rotation_sign): the top bit of
 *  splitmix64's finalizer of seed + (d + 1) * 0x9e3779b97f4a7c15. */
int fc_rotation_sign(uint64_t seed, int d);

/** The rotation's Hadamard order for head_dim: its largest power-of-two divisor. */
int fc_rotation_order(int head_dim);

/** x (head_dim values) = R x exactly: R = H diag(s) / sqrt(n) on each n-element block. */
void fc_rotate_reference(double *x, int head_dim, uint64_t seed);

/** One check of fc_quantize on the device. */
struct fc_quantize_case {
    struct fc_quantize_params shape;   /* dtype, out_dtype, sizes, descale_heads, scaling, rotate and
                                          rotation_seed; pointers, strides, cu_seqlens ignored */
    const int *lens;                   /* varlen: shape.batch sequence lengths (seqlen and max_seqlen
                                          follow, plus FC_CHECK_PAD_TOKENS tokens of no sequence); NULL: dense */
    uint64_t seed;                     /* the inputs' */
    double outlier_scale;              /* > 1: every 16th dimension (from 3) is N(0, 1) times this */
};

struct fc_quantize_result {
    size_t elements;          /* checked */
    size_t bad;               /* outside the rounding allowance (or unwritten, or a pad token written) */
    double worst_excess;      /* the largest |out - exact| less the allowance, in the element's rounding steps (<= 0: pass) */
    double descale_error;     /* the largest relative error of a descale against the exact amax / 448 */
    double relative_rmse;     /* ||dequantized - R x|| / ||R x|| over the tensor (R = 1 without rotate) */
    double amax_ratio;        /* the mean of the descales over the mean of the unrotated amax / 448 */
};

/** Draws the inputs, runs fc_quantize on them (poisoned out and descale) and judges every element
 *  against the fp64 reference. Makes the context current itself. Returns FC_OK when the run
 *  completed (result->bad then says whether it passed). */
enum fc_status fc_quantize_check(struct fc_context *ctx, const struct fc_quantize_case *c,
                                 struct fc_quantize_result *result, char *msg, size_t msg_size);

#endif
