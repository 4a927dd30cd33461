/* The host's rule of which keys a query row sees (kernel_templates/mask.cuh is the device's). */
#include <stdint.h>

#include "mask_internal.h"

/* The diagonal of row `row`: the key it sits on, bottom-right aligned; 64-bit: sizes come from the caller. */
static int64_t diagonal(int seqlen_q, int seqlen_k, int row)
{
    return (int64_t)row + seqlen_k - seqlen_q;
}

/* The first key row `row` sees, before clamping to 0. */
static int64_t row_key_begin(const struct fc_mask *m, int seqlen_q, int seqlen_k, int row)
{
    return m->window ? diagonal(seqlen_q, seqlen_k, row) - m->window_left : 0;
}

/* The last key row `row` sees, plus one, before clamping to seqlen_k. */
static int64_t row_key_end(const struct fc_mask *m, int seqlen_q, int seqlen_k, int row)
{
    if (m->causal)
        return diagonal(seqlen_q, seqlen_k, row) + 1;
    if (m->window)
        return diagonal(seqlen_q, seqlen_k, row) + m->window_right + 1;
    return seqlen_k;
}

struct fc_key_range fc_mask_keys(const struct fc_mask *m, int seqlen_q, int seqlen_k, int row_begin, int row_end)
{
    struct fc_key_range keys = {0, 0};
    if (row_end <= row_begin)
        return keys;
    /* Each row's keys are one interval, and both of its ends grow with the row: the union over
     * the rows runs from the first row's first key to the last row's last. */
    int64_t begin = row_key_begin(m, seqlen_q, seqlen_k, row_begin);
    int64_t end = row_key_end(m, seqlen_q, seqlen_k, row_end - 1);
    begin = begin > 0 ? begin : 0;
    end = end < seqlen_k ? end : seqlen_k;
    if (end > begin) {
        keys.begin = (int)begin;
        keys.end = (int)end;
    }
    return keys;
}

int fc_mask_visible(const struct fc_mask *m, int seqlen_q, int seqlen_k, int row, int key)
{
    const struct fc_key_range keys = fc_mask_keys(m, seqlen_q, seqlen_k, row, row + 1);
    return key >= keys.begin && key < keys.end;
}
