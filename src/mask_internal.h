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
 *  row: row_end = row_begin + 1). Every key in the range is seen by the last of those rows.
 *  Causal is bottom-right aligned: query row i sees keys j <= i + seqlen_k - seqlen_q. */
struct fc_key_range fc_mask_keys(const struct fc_mask *mask, int seqlen_q, int seqlen_k, int row_begin,
                                 int row_end);

/** 1 if query row `row` sees key `key`. */
int fc_mask_visible(const struct fc_mask *mask, int seqlen_q, int seqlen_k, int row, int key);

#endif
