/* Test helper: compiles tests/probe_sm90.cuh with NVRTC for sm_90a (no GPU needed). */
#ifndef FC_TEST_PROBE_COMPILE_H
#define FC_TEST_PROBE_COMPILE_H

#include "nvrtc_internal.h"

/** FC_OK and out filled (PTX too), or the status with the reason in msg. */
enum fc_status fc_test_compile_probe(struct fc_nvrtc_output *out, char *msg, size_t msg_size);

#endif
