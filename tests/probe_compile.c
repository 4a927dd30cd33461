/* Test helper: the Hopper probe kernels through the same NVRTC path the library uses. */
#include <stdio.h>
#include <stdlib.h>

#include "embedded_internal.h"
#include "probe_compile.h"

#define MAX_HEADERS 64

static char *read_probe_source(void)
{
    const char *root = getenv("FC_SOURCE_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/probe_sm90.cuh", root ? root : FC_SOURCE_ROOT_DEFAULT);
    FILE *file = fopen(path, "rb");
    if (!file)
        return NULL;
    char *text = NULL;
    if (fseek(file, 0, SEEK_END) == 0) {
        long size = ftell(file);
        rewind(file);
        text = size > 0 ? calloc((size_t)size + 1, 1) : NULL;
        if (text && fread(text, 1, (size_t)size, file) != (size_t)size) {
            free(text);
            text = NULL;
        }
    }
    fclose(file);
    return text;
}

enum fc_status fc_test_compile_probe(struct fc_nvrtc_output *out, char *msg, size_t msg_size)
{
    char *source = read_probe_source();
    if (!source) {
        snprintf(msg, msg_size, "tests/probe_sm90.cuh not found (set FC_SOURCE_ROOT)");
        return FC_ERR_CONFIG;
    }
    const char *names[MAX_HEADERS], *texts[MAX_HEADERS];
    int count = 0;
    for (const struct fc_embedded_file *f = fc_embedded_templates; f->name && count < MAX_HEADERS; f++) {
        names[count] = f->name;
        texts[count++] = f->text;
    }
    const char *options[] = {"--gpu-architecture=sm_90a", "-std=c++17", "--ptxas-options=-v"};
    enum fc_status status = fc_nvrtc_compile(source, "probe_sm90.cu", count, texts, names, 3, options, 1, out,
                                             msg, msg_size);
    free(source);
    return status;
}
