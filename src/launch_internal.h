/* Internal: launching a plan's kernel. The families fill their kernel's argument and may launch
 * more than one kernel (src/family_*.c); this holds what they share. */
#ifndef FC_LAUNCH_INTERNAL_H
#define FC_LAUNCH_INTERNAL_H

#include <stddef.h>

#include "counters_internal.h"
#include "scratch_internal.h"
#include "cuda_api_internal.h"
#include "fc_args.h"
#include "problem_internal.h"
#include "variant_internal.h"

struct fc_plan;

/** A loaded kernel: the in-memory level of the two-level cache. */
struct fc_kernel {
    struct fc_variant variant;
    CUmodule module;
    CUfunction function;
    CUfunction second;    /* the family's second entry (decode: the combine), else NULL */
    int occupied;
};

/** Room for any family's kernel argument (the largest, sm90's, is TMA maps + fc_kernel_args). */
#define FC_LAUNCH_ARGS_BYTES 1024

struct fc_launch_args {
    _Alignas(64) unsigned char bytes[FC_LAUNCH_ARGS_BYTES];   /* the family's argument struct */
    void *params[1];   /* cuLaunchKernel's kernelParams: the one by-value argument */
};

/** One forward call's launch: everything a family's launch needs. */
struct fc_launch {
    const struct fc_cuda_api *cuda;
    const struct fc_plan *plan;
    const struct fc_problem *problem;
    const struct fc_kernel *kernel;   /* NULL while only building arguments */
    CUstream stream;
    char *msg;
    size_t msg_size;
    struct fc_counters *counters;     /* the context's tile scheduler counters; NULL: none (static orders) */
    struct fc_scratch *scratch;       /* the context's scratch pool; NULL: the device's default pool */
};

/** The fields every kernel argument starts from, from a validated problem and its plan. */
void fc_launch_common_args(const struct fc_problem *problem, const struct fc_plan *plan, struct fc_kernel_args *args);

/** The per-sequence lengths of a VARLEN variant's argument (struct fc_varlen_args). */
void fc_launch_seqlens(const struct fc_problem *problem, struct fc_seqlens *seqlens);

/** The page table of a PAGED variant's argument (struct fc_paged_args). */
void fc_launch_pages(const struct fc_problem *problem, struct fc_pages *pages);

/** A family's kernel_args for kernels that take fc_kernel_args alone (fc_varlen_args for a VARLEN
 *  variant, fc_paged_args for a PAGED one). */
enum fc_status fc_launch_plain_args(const struct fc_launch *launch, struct fc_launch_args *args);

/** Builds the plan's kernel argument (the family's kernel_args); for the Hopper kernel this
 *  encodes TMA maps (a few hundred ns); FC_ERR_UNSUPPORTED if TMA cannot describe a tensor. */
enum fc_status fc_launch_args_build(const struct fc_launch *launch, struct fc_launch_args *args);

/** cuLaunchKernel of one function on the launch's stream, its failure in the launch's message. */
enum fc_status fc_launch_kernel(const struct fc_launch *launch, CUfunction function, unsigned grid,
                                unsigned threads, unsigned smem_bytes, void **params, const char *what);

/** The whole call: the family's launch, or its kernel once with plan->grid CTAs. */
enum fc_status fc_launch_run(const struct fc_launch *launch);

#endif
