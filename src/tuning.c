/* Tuned winners: bucket names, the TSV row format, the in-memory table a context looks up. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuning_internal.h"

void fc_bucket_name(const struct fc_tune_problem *b, char out[FC_BUCKET_NAME_MAX])
{
    snprintf(out, FC_BUCKET_NAME_MAX, "%s_d%d%s_gqa%d_s%d", fc_dtype_name(b->dtype), b->head_dim,
             b->causal ? "_causal" : "", b->gqa, b->seqlen);
}

int fc_bucket_parse(const char *name, struct fc_tune_problem *b)
{
    char dtype[8], rest[FC_BUCKET_NAME_MAX];
    memset(b, 0, sizeof *b);
    if (sscanf(name, "%7[a-z0-9]_d%d_%63s", dtype, &b->head_dim, rest) != 3 || fc_dtype_parse(dtype, &b->dtype))
        return -1;
    const char *p = rest;
    if (strncmp(p, "causal_", 7) == 0) {
        b->causal = 1;
        p += 7;
    }
    if (sscanf(p, "gqa%d_s%d", &b->gqa, &b->seqlen) != 2 || b->gqa < 1 || b->seqlen < 1)
        return -1;
    char again[FC_BUCKET_NAME_MAX];
    fc_bucket_name(b, again);
    return strcmp(again, name) == 0 ? 0 : -1;
}

struct fc_tune_problem fc_bucket_of(const struct fc_problem *p)
{
    struct fc_tune_problem b;
    memset(&b, 0, sizeof b);
    b.dtype = p->q_fp8 ? FC_E4M3 : p->dtype;   /* FP8 attention: q's type; p->dtype is its output's */
    b.head_dim = p->head_dim;
    b.causal = p->mask.causal;
    b.gqa = p->heads_q / p->heads_kv;
    /* varlen: the longest sequence (the selector's tiles take it so too), not the token totals */
    const int seqlen_q = p->varlen ? p->max_seqlen_q : p->seqlen_q, seqlen_k = p->varlen ? p->max_seqlen_k : p->seqlen_k;
    b.seqlen = seqlen_q > seqlen_k ? seqlen_q : seqlen_k;
    return b;
}

enum fc_dtype fc_bucket_dtype(const struct fc_variant *v)
{
    return v->q_fp8 ? FC_E4M3 : v->dtype;
}

int fc_bucket_measures(const struct fc_variant *v)
{
    if (v->window || v->softcap || v->varlen || v->paged)
        return 0;
    return v->q_fp8 ? v->dtype == FC_BUCKET_FP8_OUT : !v->kv_fp8;
}

void fc_tuning_row_format(const struct fc_tuning_row *r, char *out, size_t size)
{
    snprintf(out, size, "%s\t%d\t%s\t%s\t%s\t%s\t%.6f\t%.3f\t%d\t%d\t%s\n", r->id.gpu_name, r->id.sm_count,
             r->id.driver, r->id.kernel_set, r->bucket, r->variant, r->median_ms, r->tflops, r->passed_check,
             r->winner, r->measured_at);
}

/* Copies field i (tab-separated, up to the newline) of line into out; -1 if there is none or it
 * does not fit. */
static int field(const char *line, int i, char *out, size_t size)
{
    const char *start = line;
    for (; i > 0; i--) {
        start = strchr(start, '\t');
        if (!start)
            return -1;
        start++;
    }
    size_t n = strcspn(start, "\t\r\n");
    if (n >= size)
        return -1;
    memcpy(out, start, n);
    out[n] = 0;
    return 0;
}

/* A whole field as a finite number: no blanks, nothing left over. */
static int parse_number(const char *text, double *value)
{
    char *end;
    if (!*text || !(text[0] == '-' || text[0] == '.' || (text[0] >= '0' && text[0] <= '9')))
        return -1;
    *value = strtod(text, &end);
    return *end || !isfinite(*value) ? -1 : 0;
}

int fc_tuning_row_parse(const char *line, struct fc_tuning_row *r)
{
    memset(r, 0, sizeof *r);
    char number[5][32];
    double value[5];
    if (field(line, 0, r->id.gpu_name, sizeof r->id.gpu_name) || field(line, 1, number[0], sizeof number[0]) ||
        field(line, 2, r->id.driver, sizeof r->id.driver) ||
        field(line, 3, r->id.kernel_set, sizeof r->id.kernel_set) ||
        field(line, 4, r->bucket, sizeof r->bucket) || field(line, 5, r->variant, sizeof r->variant) ||
        field(line, 6, number[1], sizeof number[1]) || field(line, 7, number[2], sizeof number[2]) ||
        field(line, 8, number[3], sizeof number[3]) || field(line, 9, number[4], sizeof number[4]) ||
        field(line, 10, r->measured_at, sizeof r->measured_at))
        return -1;
    int tabs = 0;   /* exactly 11 fields */
    for (const char *p = line; *p && *p != '\n'; p++)
        tabs += *p == '\t';
    if (tabs != 10)
        return -1;
    for (int i = 0; i < 5; i++)
        if (parse_number(number[i], &value[i]))
            return -1;
    r->id.sm_count = (int)value[0];
    r->median_ms = value[1];
    r->tflops = value[2];
    r->passed_check = (int)value[3];
    r->winner = (int)value[4];
    /* a candidate that failed its check or its launch was stored without a time */
    if (value[0] != r->id.sm_count || r->id.sm_count <= 0 || r->median_ms < 0. ||
        (r->passed_check && !(r->median_ms > 0.)) || (value[3] != 0. && value[3] != 1.) ||
        (value[4] != 0. && value[4] != 1.) || (r->winner && !r->passed_check))
        return -1;
    struct fc_tune_problem bucket;
    struct fc_variant variant;
    return fc_bucket_parse(r->bucket, &bucket) || fc_variant_parse_name(r->variant, &variant) ? -1 : 0;
}

/* ---- the table ---- */

struct loader {
    struct fc_tuned_table *table;
    const struct fc_tuning_identity *id;
    int arch, arch_specific, shipped;
};

static struct fc_tuned *find_bucket(struct fc_tuned_table *t, const struct fc_tune_problem *b)
{
    for (size_t i = 0; i < t->count; i++)
        if (memcmp(&t->items[i].bucket, b, sizeof *b) == 0)
            return &t->items[i];
    return NULL;
}

/* Adds a winner row that applies here; a bucket already filled keeps the newer measurement from
 * the database, and any measurement from the database over the shipped layer's. */
static int add(void *user, const struct fc_tuning_row *row)
{
    struct loader *l = user;
    if (!row->winner || !row->passed_check || strcmp(row->id.gpu_name, l->id->gpu_name) != 0 ||
        row->id.sm_count != l->id->sm_count || (!l->shipped && strcmp(row->id.kernel_set, l->id->kernel_set) != 0))
        return 0;
    struct fc_tune_problem bucket;
    struct fc_variant variant;
    /* NOTE: a variant its bucket did not measure as named is left out: before FP8 buckets, the tuner
     * timed q_fp8 and kv_fp8 candidates in 16-bit buckets as the 16-bit kernel */
    if (fc_bucket_parse(row->bucket, &bucket) || fc_variant_parse_name(row->variant, &variant) ||
        !fc_bucket_measures(&variant) || fc_bucket_dtype(&variant) != bucket.dtype || variant.arch != l->arch ||
        variant.arch_specific != l->arch_specific || fc_variant_check(&variant, NULL, 0))
        return 0;
    struct fc_tuned *slot = find_bucket(l->table, &bucket);
    const int own_driver = !l->shipped && strcmp(row->id.driver, l->id->driver) == 0;
    /* the database's own driver first, then its newest measurement on another driver, then the
     * shipped layer */
    if (slot && (l->shipped || slot->own_driver ||
                 (!own_driver && !slot->shipped && strcmp(row->measured_at, slot->measured_at) <= 0)))
        return 0;
    if (!slot) {
        struct fc_tuned_table *t = l->table;
        if (t->count == t->capacity) {
            size_t capacity = t->capacity ? 2 * t->capacity : 32;
            struct fc_tuned *grown = realloc(t->items, capacity * sizeof *grown);
            if (!grown)
                return 1;
            t->items = grown;
            t->capacity = capacity;
        }
        slot = &t->items[t->count++];
    }
    memset(slot, 0, sizeof *slot);
    slot->bucket = bucket;
    slot->log2_seqlen = log2((double)bucket.seqlen);
    slot->variant = variant;
    slot->median_ms = row->median_ms;
    slot->shipped = l->shipped;
    slot->own_driver = own_driver;
    snprintf(slot->measured_at, sizeof slot->measured_at, "%s", row->measured_at);
    snprintf(slot->reason, sizeof slot->reason, "tuned: winner of bucket %s on this GPU (%.3f ms, %s %.10s)",
             row->bucket, row->median_ms, l->shipped ? "shipped winners measured" : "measured", row->measured_at);
    return 0;
}

enum fc_status fc_tuned_load(struct fc_tuned_table *table, struct fc_cache *cache, const struct fc_tuning_identity *id,
                             int arch, int arch_specific, const char *shipped_text, char *msg, size_t size)
{
    memset(table, 0, sizeof *table);
    struct loader l = {table, id, arch, arch_specific, 0};
    enum fc_status status = FC_OK;
    if (cache)
        status = fc_tuning_foreach(cache, 1, add, &l, msg, size);
    l.shipped = 1;
    for (const char *line = shipped_text; line && *line;) {
        struct fc_tuning_row row;
        if (*line != '#' && fc_tuning_row_parse(line, &row) == 0)
            add(&l, &row);
        const char *next = strchr(line, '\n');
        line = next ? next + 1 : NULL;
    }
    return status;
}

void fc_tuned_free(struct fc_tuned_table *table)
{
    free(table->items);
    memset(table, 0, sizeof *table);
}

const struct fc_tuned *fc_tuned_find(const struct fc_tuned_table *table, const struct fc_problem *problem)
{
    if (table->count == 0)
        return NULL;
    const struct fc_tune_problem want = fc_bucket_of(problem);
    const double log2_seqlen = log2((double)want.seqlen);
    const struct fc_tuned *best = NULL;
    double best_distance = 0.;
    for (size_t i = 0; i < table->count; i++) {
        const struct fc_tune_problem *b = &table->items[i].bucket;
        if (b->dtype != want.dtype || b->head_dim != want.head_dim || b->causal != want.causal || b->gqa != want.gqa)
            continue;
        const double distance = fabs(log2_seqlen - table->items[i].log2_seqlen);
        if (!best || distance < best_distance) {
            best = &table->items[i];
            best_distance = distance;
        }
    }
    return best;
}
