/* Lookup in the tables of embedded files (the tables themselves are generated at build time). */
#include <string.h>

#include "embedded_internal.h"

const struct fc_embedded_file *fc_embedded_find(const struct fc_embedded_file *table, const char *name)
{
    for (; table->name; table++)
        if (strcmp(table->name, name) == 0)
            return table;
    return NULL;
}
