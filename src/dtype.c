/* Element types: the host's traits table. */
#include <stddef.h>
#include <strings.h>

#include <cuda.h>

#include "dtype_internal.h"

static const struct fc_dtype_traits TRAITS[] = {
    {FC_F16, "f16", 2, "fc::half_t", CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 1},
    {FC_BF16, "bf16", 2, "fc::bfloat16_t", CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 1},
    {FC_E4M3, "e4m3", 1, "fc::e4m3_t", CU_TENSOR_MAP_DATA_TYPE_UINT8, 0},
};

const struct fc_dtype_traits *fc_dtype_traits(enum fc_dtype dtype)
{
    for (size_t i = 0; i < sizeof TRAITS / sizeof TRAITS[0]; i++)
        if (TRAITS[i].dtype == dtype)
            return &TRAITS[i];
    return NULL;
}

const char *fc_dtype_name(enum fc_dtype dtype)
{
    const struct fc_dtype_traits *t = fc_dtype_traits(dtype);
    return t ? t->name : "unknown";
}

int fc_dtype_bytes(enum fc_dtype dtype)
{
    const struct fc_dtype_traits *t = fc_dtype_traits(dtype);
    return t ? t->bytes : 0;
}

int fc_dtype_parse(const char *name, enum fc_dtype *dtype)
{
    static const struct { const char *name; enum fc_dtype dtype; } ALIASES[] = {
        {"fp16", FC_F16}, {"float16", FC_F16}, {"half", FC_F16},
        {"bfloat16", FC_BF16}, {"fp8", FC_E4M3},
    };
    for (size_t i = 0; i < sizeof TRAITS / sizeof TRAITS[0]; i++)
        if (strcasecmp(name, TRAITS[i].name) == 0) {
            *dtype = TRAITS[i].dtype;
            return 0;
        }
    for (size_t i = 0; i < sizeof ALIASES / sizeof ALIASES[0]; i++)
        if (strcasecmp(name, ALIASES[i].name) == 0) {
            *dtype = ALIASES[i].dtype;
            return 0;
        }
    return -1;
}
