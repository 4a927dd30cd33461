/* NVRTC, loaded at run time (dlopen), so that the library works with a warm cache and no toolkit. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nvrtc.h>

#include "jit_internal.h"   /* FC_KERNEL_ENTRY */
#include "nvrtc_internal.h"

#define NVRTC_FUNCTIONS(X) \
    X(nvrtcVersion) X(nvrtcGetErrorString) X(nvrtcCreateProgram) X(nvrtcDestroyProgram) \
    X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) \
    X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcGetPTXSize) X(nvrtcGetPTX)

static struct {
#define NVRTC_MEMBER(name) __typeof__(name) *name;
    NVRTC_FUNCTIONS(NVRTC_MEMBER)
#undef NVRTC_MEMBER
} nvrtc;

static char load_error[PATH_MAX + 1024];
static char version[16];
static char loaded_path[PATH_MAX];
static int load_ok;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* Tries one library file; remembers its name when it loads. */
static void *try_open(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib)
        snprintf(loaded_path, sizeof loaded_path, "%s", path);
    return lib;
}

static void *open_first(void)
{
    const char *env = getenv("FC_NVRTC_LIBRARY");
    if (env && *env)
        return try_open(env);
    /* The sonames first (the loader's search path), then the toolkit's usual homes. */
    static const char *const SONAMES[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    for (size_t i = 0; i < sizeof SONAMES / sizeof SONAMES[0]; i++) {
        void *lib = try_open(SONAMES[i]);
        if (lib)
            return lib;
    }
    char path[PATH_MAX];
    const char *home = getenv("CUDA_HOME");
    snprintf(path, sizeof path, "%s/lib64/libnvrtc.so", home && *home ? home : "/usr/local/cuda");
    return try_open(path);
}

static void load(void)
{
    void *lib = open_first();
    if (!lib) {
        snprintf(load_error, sizeof load_error,
                 "NVRTC could not be loaded (%s): install the CUDA toolkit's NVRTC or set "
                 "FC_NVRTC_LIBRARY; cached kernels still run", dlerror());
        return;
    }
#define NVRTC_RESOLVE(name)                                                                    \
    if (!(nvrtc.name = (__typeof__(name) *)dlsym(lib, #name))) {                               \
        snprintf(load_error, sizeof load_error, "%s has no %s", loaded_path, #name);           \
        return;                                                                                \
    }
    NVRTC_FUNCTIONS(NVRTC_RESOLVE)
#undef NVRTC_RESOLVE
    int major = 0, minor = 0;
    nvrtc.nvrtcVersion(&major, &minor);
    snprintf(version, sizeof version, "%d.%d", major, minor);
    load_ok = 1;
}

int fc_nvrtc_load(char *why, size_t why_size)
{
    pthread_once(&load_once, load);
    if (load_ok)
        return 0;
    if (why && why_size)
        snprintf(why, why_size, "%s", load_error);
    return -1;
}

const char *fc_nvrtc_version(void)
{
    return fc_nvrtc_load(NULL, 0) == 0 ? version : NULL;
}

const char *fc_nvrtc_path(void)
{
    return fc_nvrtc_load(NULL, 0) == 0 ? loaded_path : NULL;
}

/* The number just before the first `suffix` in [log, end). */
static int read_int_before(const char *log, const char *end, const char *suffix, int *value)
{
    const char *hit = strstr(log, suffix);
    if (!hit || hit >= end)
        return -1;
    const char *start = hit;
    while (start > log && start[-1] == ' ')
        start--;
    while (start > log && start[-1] >= '0' && start[-1] <= '9')
        start--;
    *value = atoi(start);
    return 0;
}

/* One kernel's part of the report, [start, end): its registers and shared memory; the worst stack
 * and spill figures over every kernel of the module. */
static void parse_kernel_report(const char *start, const char *end, int is_entry, struct fc_compile_report *report)
{
    int value;
    const char *used = strstr(start, "Used ");
    if (used && used < end && (is_entry || report->registers < 0))
        report->registers = atoi(used + 5);
    if (read_int_before(start, end, "bytes smem", &value) == 0 && (is_entry || report->smem_static == 0))
        report->smem_static = value;
    int *worst[] = {&report->stack_bytes, &report->spill_stores, &report->spill_loads};
    const char *suffix[] = {"bytes stack frame", "bytes spill stores", "bytes spill loads"};
    for (int i = 0; i < 3; i++)
        if (read_int_before(start, end, suffix[i], &value) == 0 && value > *worst[i])
            *worst[i] = value;
}

void fc_parse_ptxas_report(const char *log, struct fc_compile_report *report)
{
    report->registers = report->stack_bytes = report->spill_stores = report->spill_loads = -1;
    report->smem_static = 0;   /* ptxas omits the line when there is none */
    /* NOTE: "Potential Performance Loss: wgmma.mma_async instructions are serialized due to ..."
     * (C7512): the kernel is correct but each WGMMA waits for the one before (PERF_NOTES v13.1) */
    report->wgmma_serialized = strstr(log, "wgmma.mma_async instructions are serialized") != NULL;
    static const char SECTION[] = "Compiling entry function '";
    const char *section = strstr(log, SECTION);
    if (!section) {   /* a bare report: one kernel */
        parse_kernel_report(log, log + strlen(log), 1, report);
        return;
    }
    /* NOTE: a module can hold several kernels (the decode family's combine kernel); registers
     * and shared memory are the attention kernel's, stack and spills the worst of any. */
    while (section) {
        const char *next = strstr(section + 1, SECTION);
        const char *name = section + sizeof SECTION - 1;
        const int is_entry = strncmp(name, FC_KERNEL_ENTRY "'", sizeof FC_KERNEL_ENTRY) == 0;
        parse_kernel_report(section, next ? next : section + strlen(section), is_entry, report);
        section = next;
    }
}

static char *program_log(nvrtcProgram program)
{
    size_t size = 0;
    nvrtc.nvrtcGetProgramLogSize(program, &size);
    char *log = calloc(size + 1, 1);
    if (log && size)
        nvrtc.nvrtcGetProgramLog(program, log);
    return log;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static enum fc_status take_outputs(nvrtcProgram program, int want_ptx, struct fc_nvrtc_output *out,
                                   char *message, size_t message_size)
{
    if (nvrtc.nvrtcGetCUBINSize(program, &out->cubin_size) != NVRTC_SUCCESS || !out->cubin_size) {
        snprintf(message, message_size, "NVRTC produced no cubin (was a real sm_XX arch given?)");
        return FC_ERR_COMPILE;
    }
    out->cubin = malloc(out->cubin_size);
    if (!out->cubin)
        return FC_ERR_NOMEM;
    nvrtc.nvrtcGetCUBIN(program, out->cubin);
    if (want_ptx) {
        size_t size = 0;
        nvrtc.nvrtcGetPTXSize(program, &size);
        out->ptx = calloc(size + 1, 1);
        if (!out->ptx)
            return FC_ERR_NOMEM;
        nvrtc.nvrtcGetPTX(program, out->ptx);
    }
    return FC_OK;
}

enum fc_status fc_nvrtc_compile(const char *source, const char *source_name, int header_count,
                                const char *const *header_texts, const char *const *header_names,
                                int option_count, const char *const *options, int want_ptx,
                                struct fc_nvrtc_output *out, char *message, size_t message_size)
{
    memset(out, 0, sizeof *out);
    if (fc_nvrtc_load(message, message_size))
        return FC_ERR_NO_COMPILER;
    double start = now_ms();
    nvrtcProgram program;
    nvrtcResult result = nvrtc.nvrtcCreateProgram(&program, source, source_name, header_count,
                                                  header_texts, header_names);
    if (result != NVRTC_SUCCESS) {
        snprintf(message, message_size, "nvrtcCreateProgram failed: %s",
                 nvrtc.nvrtcGetErrorString(result));
        return result == NVRTC_ERROR_OUT_OF_MEMORY ? FC_ERR_NOMEM : FC_ERR_COMPILE;
    }
    result = nvrtc.nvrtcCompileProgram(program, option_count, options);
    out->log = program_log(program);
    enum fc_status status = FC_OK;
    if (result != NVRTC_SUCCESS) {
        snprintf(message, message_size, "NVRTC could not compile %s: %s\n%s", source_name,
                 nvrtc.nvrtcGetErrorString(result), out->log ? out->log : "");
        status = FC_ERR_COMPILE;
    } else {
        status = take_outputs(program, want_ptx, out, message, message_size);
    }
    nvrtc.nvrtcDestroyProgram(&program);
    if (status != FC_OK) {
        fc_nvrtc_output_free(out);
        return status;
    }
    out->report.compile_ms = now_ms() - start;
    fc_parse_ptxas_report(out->log ? out->log : "", &out->report);
    return FC_OK;
}

void fc_nvrtc_output_free(struct fc_nvrtc_output *out)
{
    free(out->cubin);
    free(out->ptx);
    free(out->log);
    memset(out, 0, sizeof *out);
}
