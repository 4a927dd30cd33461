/* Internal: TMA tensor maps, encoded on the host with cuTensorMapEncodeTiled. */
#ifndef FC_TMA_INTERNAL_H
#define FC_TMA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_api_internal.h"
#include "dtype_internal.h"

#define FC_TMA_RANK_MAX 5

/** A tiled view of a tensor: dims[0] is the innermost (contiguous) dimension. */
struct fc_tma_desc {
    int rank;
    uint64_t dims[FC_TMA_RANK_MAX];          /* elements */
    uint64_t strides[FC_TMA_RANK_MAX - 1];   /* bytes, for dims 1..rank-1 */
    uint32_t box[FC_TMA_RANK_MAX];           /* elements per copy, each <= 256 */
    int swizzle_bytes;                       /* 0, 32, 64 or 128 */
};

/**
 * Checks the rules of cuTensorMapEncodeTiled (alignment, stride multiples, box limits, the
 * swizzle span) and encodes a map of dtype elements. Shapes TMA cannot describe get
 * FC_ERR_UNSUPPORTED and the rule, so callers can fall back to another kernel.
 */
enum fc_status fc_tma_encode(const struct fc_cuda_api *cuda, CUtensorMap *map, const void *global,
                             enum fc_dtype dtype, const struct fc_tma_desc *desc, char *msg, size_t msg_size);

#endif
