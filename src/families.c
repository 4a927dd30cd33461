/* The table of kernel families, in the selector's order of preference: a new family is a row. */
#include <string.h>

#include "family_internal.h"

extern const struct fc_family fc_family_decode, fc_family_sm90, fc_family_sm80, fc_family_reference, fc_family_merge,
    fc_family_quantize;

/* NOTE: decode first: where it takes a problem (few query rows per K/V head) it reads K and V
 * once for all of them; the reference kernel last: it takes every valid problem. */
const struct fc_family *const fc_families[] = {
    &fc_family_decode,
    &fc_family_sm90,
    &fc_family_sm80,
    &fc_family_reference,
    &fc_family_merge,   /* not an attention kernel: fc_attention_merge's; the selector skips it */
    &fc_family_quantize,   /* not an attention kernel: fc_quantize's; the selector skips it */
    NULL,
};

const struct fc_family *fc_family_of(enum fc_kernel_family id)
{
    for (int i = 0; fc_families[i]; i++)
        if (fc_families[i]->id == id)
            return fc_families[i];
    return NULL;
}

const char *fc_kernel_family_name(enum fc_kernel_family id)
{
    const struct fc_family *family = fc_family_of(id);
    return family ? family->name : "unknown";
}

int fc_kernel_family_parse(const char *name, enum fc_kernel_family *id)
{
    for (int i = 0; fc_families[i]; i++)
        if (strcmp(name, fc_families[i]->name) == 0) {
            *id = fc_families[i]->id;
            return 0;
        }
    return -1;
}
