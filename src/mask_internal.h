/* Internal: which keys a query row sees. The host mirror of kernel_templates/mask.cuh, used by
 * the CPU reference (and through it every check) and by the planner's block counts: a new mask
 * is one rule there and one here. */
#ifndef FC_MASK_INTERNAL_H
#define FC_MASK_INTERNAL_H

#include "fc_args.h"   /* struct fc_mask: the same parameters the kernels get */

/** Keys [begin, end): begin == end when none is visible. */
struct fc_key_range {
    int begin, end;
};

/** The keys some query row in [row_begin, row_end) of a seqlen_q x seqlen_k problem sees (for one
 *  row: row_end = row_begin + 1): one range, since each row's keys are, and both ends grow with the
 *  row. Query row i's diagonal is d = i + seqlen_k - seqlen_q (bottom-right aligned); causal: keys
 *  j <= d; a window: d - window_left <= j <= d + window_right (struct fc_mask); always j < seqlen_k. */
struct fc_key_range fc_mask_keys(const struct fc_mask *mask, int seqlen_q, int seqlen_k, int row_begin,
                                 int row_end);

/** 1 if query row `row` sees key `key`. */
int fc_mask_visible(const struct fc_mask *mask, int seqlen_q, int seqlen_k, int row, int key);

#endif
