/* Sweep specs from files: the text is read whole, then parsed by config.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

#define SPEC_FILE_BYTES_MAX (16 * 1024 * 1024)   /* far past any spec: a wrong file, not a spec */

static enum fc_status file_error(enum fc_status status, const char *path, const char *reason,
                                 char *err, size_t err_size)
{
    if (err && err_size)
        snprintf(err, err_size, "%s: %s", path, reason);
    return status;
}

/* Reads the whole file; a loop rather than a size from fseek, so pipes and /dev/stdin work. */
static enum fc_status read_file(const char *path, char **text, size_t *length, char *err,
                                size_t err_size)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return file_error(FC_ERR_CONFIG, path, strerror(errno), err, err_size);
    char *buffer = NULL;
    size_t used = 0, capacity = 0, got = 0;
    enum fc_status status = FC_OK;
    do {
        if (used == capacity && capacity >= SPEC_FILE_BYTES_MAX) {
            status = file_error(FC_ERR_CONFIG, path, "larger than 16 MiB, too large for a spec",
                                err, err_size);
            break;
        }
        if (used == capacity) {
            capacity = capacity ? capacity * 2 : 4096;
            char *grown = realloc(buffer, capacity);
            if (!grown) {
                status = file_error(FC_ERR_NOMEM, path, "out of memory", err, err_size);
                break;
            }
            buffer = grown;
        }
        got = fread(buffer + used, 1, capacity - used, file);
        used += got;
    } while (got > 0);
    if (status == FC_OK && ferror(file))   /* e.g. EISDIR: a directory opens, but won't read */
        status = file_error(FC_ERR_CONFIG, path, strerror(errno), err, err_size);
    fclose(file);
    if (status != FC_OK) {
        free(buffer);
        return status;
    }
    *text = buffer;
    *length = used;
    return FC_OK;
}

enum fc_status fc_config_load_variants(const char *path, struct fc_variant_list *out, char *err,
                                       size_t err_size)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!path || !out) {
        if (err && err_size)
            snprintf(err, err_size, "fc_config_load_variants: %s is NULL", path ? "out" : "path");
        return FC_ERR_INVALID_ARG;
    }
    char *text = NULL;
    size_t length = 0;
    enum fc_status status = read_file(path, &text, &length, err, err_size);
    if (status != FC_OK)
        return status;
    status = fc_config_parse_variants(text, length, path, out, err, err_size);
    free(text);
    return status;
}

enum fc_status fc_config_load_tune(const char *path, struct fc_variant_list *variants,
                                   struct fc_tune_problem_list *problems, char *err, size_t err_size)
{
    if (variants)
        memset(variants, 0, sizeof *variants);
    if (problems)
        memset(problems, 0, sizeof *problems);
    if (!path || !variants || !problems) {
        if (err && err_size)
            snprintf(err, err_size, "fc_config_load_tune: an argument is NULL");
        return FC_ERR_INVALID_ARG;
    }
    char *text = NULL;
    size_t length = 0;
    enum fc_status status = read_file(path, &text, &length, err, err_size);
    if (status != FC_OK)
        return status;
    status = fc_config_parse_tune(text, length, path, variants, problems, err, err_size);
    free(text);
    return status;
}

void fc_tune_problem_list_free(struct fc_tune_problem_list *list)
{
    if (!list)
        return;
    free(list->items);
    memset(list, 0, sizeof *list);
}

void fc_variant_list_free(struct fc_variant_list *list)
{
    if (!list)
        return;
    free(list->items);
    memset(list, 0, sizeof *list);
}
