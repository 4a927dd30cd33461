/* The host's rule of which keys a query row sees (kernel_templates/mask.cuh is the device's). */
#include <stdint.h>

#include "mask_internal.h"

/* The last key row `row` sees, plus one, before clamping; 64-bit: sizes come from the caller. */
static int64_t row_key_end(const struct fc_mask *m, int seqlen_q, int seqlen_k, int row)
{
    if (!m->causal)
        return seqlen_k;
    return (int64_t)row + 1 + seqlen_k - seqlen_q;
}

struct fc_key_range fc_mask_keys(const struct fc_mask *m, int seqlen_q, int seqlen_k, int row_begin, int row_end)
{
    struct fc_key_range keys = {0, 0};
    if (row_end <= row_begin)
        return keys;
    int64_t end = row_key_end(m, seqlen_q, seqlen_k, row_end - 1);
    end = end < seqlen_k ? end : seqlen_k;
    keys.end = end > 0 ? (int)end : 0;
    return keys;
}

int fc_mask_visible(const struct fc_mask *m, int seqlen_q, int seqlen_k, int row, int key)
{
    const struct fc_key_range keys = fc_mask_keys(m, seqlen_q, seqlen_k, row, row + 1);
    return key >= keys.begin && key < keys.end;
}
