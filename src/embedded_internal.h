/* Internal: text files compiled into the library (tools/embed_files.py writes the tables). */
#ifndef FC_EMBEDDED_INTERNAL_H
#define FC_EMBEDDED_INTERNAL_H

#include <stddef.h>

struct fc_embedded_file {
    const char *name;     /* relative path, '/'-separated, e.g. "ptx/warp.cuh" */
    unsigned length;      /* bytes, without the terminating NUL */
    const char *text;
};

/* kernel_templates/, every file; ends with a NULL name. */
extern const struct fc_embedded_file fc_embedded_templates[];
extern const unsigned fc_embedded_templates_count;

/* tuning_db/: schema.sql and the default specs; ends with a NULL name. */
extern const struct fc_embedded_file fc_embedded_data[];
extern const unsigned fc_embedded_data_count;

/* The entry named name in table, or NULL. */
const struct fc_embedded_file *fc_embedded_find(const struct fc_embedded_file *table, const char *name);

#endif
