/* Internal: NVRTC, loaded at run time. A warm kernel cache needs no NVRTC at all. */
#ifndef FC_NVRTC_INTERNAL_H
#define FC_NVRTC_INTERNAL_H

#include <stddef.h>

#include "flashcore.h"

/** What the compiler and ptxas said about one kernel. */
struct fc_compile_report {
    int registers;
    int spill_stores, spill_loads;   /* bytes */
    int stack_bytes;
    int smem_static;                 /* bytes of static shared memory */
    int wgmma_serialized;            /* 1: ptxas serialized the WGMMAs (its C7512 warning: no overlap) */
    double compile_ms;
};

/** One compile's products; free with fc_nvrtc_output_free. */
struct fc_nvrtc_output {
    void *cubin;
    size_t cubin_size;
    char *ptx;       /* NUL-terminated; NULL unless asked for */
    char *log;       /* NUL-terminated compiler log (warnings, ptxas -v) */
    struct fc_compile_report report;
};

/** Loads libnvrtc once per process. Returns 0, or -1 with the reason in why. */
int fc_nvrtc_load(char *why, size_t why_size);

/** "13.0" once loaded, else NULL. */
const char *fc_nvrtc_version(void);

/** The library file NVRTC was loaded from, else NULL. */
const char *fc_nvrtc_path(void);

/**
 * Compiles source (headers given by name and text) into a cubin.
 * @return FC_OK, FC_ERR_NO_COMPILER, FC_ERR_COMPILE (log in message), FC_ERR_NOMEM
 */
enum fc_status fc_nvrtc_compile(const char *source, const char *source_name,
                                int header_count, const char *const *header_texts,
                                const char *const *header_names,
                                int option_count, const char *const *options, int want_ptx,
                                struct fc_nvrtc_output *out, char *message, size_t message_size);

void fc_nvrtc_output_free(struct fc_nvrtc_output *out);

/** Reads registers, spills, stack and shared memory from a `ptxas -v` log. */
void fc_parse_ptxas_report(const char *log, struct fc_compile_report *report);

#endif
