/* Internal: split-KV, shared by the families whose CTAs split a row block's keys (the decode kernel,
 * the sm90 kernel's GQA-packed rows): how many splits, the combine kernel's source, and the launch
 * of both kernels over a scratch buffer of partials (kernel_templates/split_kv.cuh). */
#ifndef FC_SPLIT_INTERNAL_H
#define FC_SPLIT_INTERNAL_H

#include <stddef.h>

#include "launch_internal.h"
#include "plan_internal.h"

#define FC_SPLITS_MAX 128

/** Splits of `tiles` key tiles of block_n keys for `blocks` CTAs' worth of row blocks on `slots` CTA
 *  slots (SMs x CTAs an SM): the fewest whose last wave of CTAs is nearly as full as the best
 *  (FlashAttention's wave-efficiency rule), at least FC_SPLIT_MIN_TILES tiles each; `requested` > 0
 *  forces that many (fewer where there are fewer tiles). Sets plan->splits (no empty split) and
 *  plan->split_keys (whole tiles each). */
void fc_split_choose(long long blocks, long long slots, int tiles, int block_n, int requested, struct fc_plan *plan);

/** The combine kernel's source, appended to a family's unit: extern "C" `entry`, taking the
 *  family's kernel argument `args_type` (the one the launch passes both kernels), whose member
 *  `base` (e.g. ".base"; "": the argument itself) is its fc_kernel_args; a varlen variant's rows
 *  per sequence. snprintf's return. */
int fc_split_combine_source(const struct fc_variant *v, const char *entry, const char *args_type, const char *base,
                            char *out, size_t size);

/** The plan's kernel (l->kernel->function) on `args`, whose fc_kernel_args is `base`: as is with one
 *  split; with several, over a stream-ordered scratch buffer of the splits' partials, then the
 *  combine (l->kernel->second), then the buffer back to the pool. */
enum fc_status fc_split_launch(const struct fc_launch *l, struct fc_launch_args *args, struct fc_kernel_args *base);

#endif
