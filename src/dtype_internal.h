/* Internal: element types. One row per enum fc_dtype holds everything the host needs to know
 * about it (kernel_templates/element.cuh is the device side), so a new type is one row here and
 * one traits entry there. */
#ifndef FC_DTYPE_INTERNAL_H
#define FC_DTYPE_INTERNAL_H

#include "flashcore.h"

struct fc_dtype_traits {
    enum fc_dtype dtype;
    const char *name;           /* "f16": variant, bucket and spec names */
    int bytes;                  /* storage size of one element */
    const char *device_type;    /* the template's storage type, e.g. "fc::half_t" */
    int tma_type;               /* CUtensorMapDataType of TMA maps over it */
    int has_kernels;            /* 0: parsed and named, but no kernel takes it yet */
};

/** The row of a dtype, or NULL if it is not an enum fc_dtype value. */
const struct fc_dtype_traits *fc_dtype_traits(enum fc_dtype dtype);

/** "f16", "bf16", "e4m3"; "unknown" for a value that is none. */
const char *fc_dtype_name(enum fc_dtype dtype);

/** Parses a name or an alias ("fp16", "bfloat16", "fp8", any case); 0 on success. */
int fc_dtype_parse(const char *name, enum fc_dtype *dtype);

/** Storage bytes of one element; 0 for a value that is no dtype. */
int fc_dtype_bytes(enum fc_dtype dtype);

#endif
