/* Internal: a plan's kernel argument (TMA maps encoded per call for the Hopper kernel). */
#ifndef FC_LAUNCH_INTERNAL_H
#define FC_LAUNCH_INTERNAL_H

#include <stddef.h>

#include "cuda_api_internal.h"
#include "fc_args.h"
#include "plan_internal.h"

struct fc_launch_args {
    union {
        struct fc_kernel_args common;
        struct fc_sm90_args sm90;
    } arg;
    void *params[1];   /* cuLaunchKernel's kernelParams: the one by-value argument */
};

/**
 * Fills the argument the plan's kernel takes. For the Hopper kernel this encodes TMA maps of Q,
 * K and V (a few hundred ns of host time); FC_ERR_UNSUPPORTED if TMA cannot describe a tensor.
 */
enum fc_status fc_launch_args_build(const struct fc_cuda_api *cuda, const struct fc_plan *plan,
                                    const struct fc_problem *problem, struct fc_launch_args *out,
                                    char *msg, size_t msg_size);

#endif
