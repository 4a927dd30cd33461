/* Sweep specs: reads the YAML that lists kernel variants and expands each entry into the
 * cartesian product of its values.
 *
 * libyaml's event API is used rather than its document API so that every node is read once, in
 * document order, with its own position, and aliases can be refused where they appear instead of
 * being silently resolved. Every problem is fatal, so the reader never has to skip a subtree.
 * The text goes through the parser once for syntax alone first, so that a YAML mistake is
 * reported as one rather than as the odd value it makes of the lines before it. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "config_internal.h"

#define SPEC_VERSION "1"
#define SPEC_INT_MAX 65535
/* Far more than anyone can compile or time; the cap keeps a typo (a list ten thousand long) from
 * exhausting memory during expansion. Counts candidates before pruning, over the whole spec. */
#define SPEC_CANDIDATES_MAX 100000
/* The same for `problems`: each bucket is timed with every candidate that fits it. */
#define SPEC_PROBLEMS_MAX 10000
/* A spec is a mapping of lists of mappings of lists: 4 levels. NOTE: libyaml spends time linear in
 * the depth on every token of a deep flow collection ("[[[[..."), quadratic in all; 100,000
 * levels took 47 s. The cap stops such a text after a few dozen levels. */
#define SPEC_NESTING_MAX 32
#define KEY_NAME_MAX 64
#define NAMES_MAX 256
#define DESCRIPTION_MAX 96
#define REASON_MAX 256

#if defined(__GNUC__)
#define PRINTF_LIKE(format_index) __attribute__((format(printf, format_index, format_index + 1)))
#else
#define PRINTF_LIKE(format_index)
#endif

/* Keys of a variants entry. The product nests them in this order: the last varies fastest. */
enum entry_key {
    KEY_KERNEL, KEY_ARCH, KEY_DTYPE, KEY_HEAD_DIM, KEY_CAUSAL,   /* required */
    KEY_BLOCK_M, KEY_BLOCK_N, KEY_STAGES, KEY_WARPS, KEY_PINGPONG, /* absent: the family default */
    KEY_WINDOW, KEY_SOFTCAP, KEY_VARLEN, KEY_PAGED, KEY_KV_FP8, KEY_Q_FP8, KEY_PACK_GQA,   /* absent: false */
    KEY_V_TRANSPOSED, KEY_QUICK,
    KEY_COUNT
};
#define KEY_FIRST_OPTIONAL KEY_BLOCK_M

enum top_key { TOP_VERSION, TOP_VARIANTS, TOP_PROBLEMS, TOP_COUNT };

/* Keys of a `problems` entry (a tuning spec's buckets). */
enum problem_key {
    PKEY_DTYPE, PKEY_HEAD_DIM, PKEY_CAUSAL, PKEY_SEQLEN,   /* required */
    PKEY_GQA, PKEY_TOKENS,                                 /* absent: 1, 16384 */
    PKEY_COUNT
};
#define PROBLEM_TOKENS_DEFAULT 16384

/* An arch is a pair (arch, arch_specific); packing it keeps every axis a plain list of ints. */
#define ARCH_PACK(arch, arch_specific) ((arch) << 1 | (arch_specific))

/* The keys one kind of mapping allows; the first `required` of them must be given. */
struct mapping_keys {
    const char *where;   /* for messages: "at the top of the spec" */
    const char *const *names;
    int count;
    int required;
};

static const char *const TOP_KEY_NAMES[TOP_COUNT] = {"version", "variants", "problems"};
static const char *const PROBLEM_KEY_NAMES[PKEY_COUNT] = {
    "dtype", "head_dim", "causal", "seqlen", "gqa", "tokens",
};
static const char *const ENTRY_KEY_NAMES[KEY_COUNT] = {
    "kernel", "arch", "dtype", "head_dim", "causal", "block_m", "block_n", "stages", "warps", "pingpong",
    "window", "softcap", "varlen", "paged", "kv_fp8", "q_fp8", "pack_gqa", "v_transposed",
    "quick",
};
static const struct mapping_keys TOP_KEYS = {
    "at the top of the spec", TOP_KEY_NAMES, TOP_COUNT, TOP_PROBLEMS,   /* problems: tuning specs */
};
static const struct mapping_keys PROBLEM_KEYS = {
    "in this problems entry", PROBLEM_KEY_NAMES, PKEY_COUNT, PKEY_GQA,
};
static const struct mapping_keys ENTRY_KEYS = {
    "in this variants entry", ENTRY_KEY_NAMES, KEY_COUNT, KEY_FIRST_OPTIONAL,
};

struct key_seen {
    int given;
    yaml_mark_t mark;   /* where, for "duplicate key" messages */
};

/* The values one key of an entry lists. */
struct axis {
    int *values;
    size_t count;
    size_t capacity;
};

struct entry {
    struct axis axes[KEY_COUNT];
    struct key_seen seen[KEY_COUNT];
    yaml_mark_t mark;
};

struct problem_entry {
    struct axis axes[PKEY_COUNT];
    struct key_seen seen[PKEY_COUNT];
    yaml_mark_t mark;
};

/* What parsing fills: the variants, and the problems if the caller wants them. */
struct spec_out {
    struct fc_variant_list *list;
    struct fc_tune_problem_list *problems;   /* NULL: `problems` is checked, then dropped */
};

struct reader {
    yaml_parser_t parser;
    yaml_event_t event;   /* the current event; owned while has_event */
    int has_event;
    const char *name;
    const char *text;     /* to place reader errors, which libyaml gives as a byte offset */
    size_t length;
    char *err;
    size_t err_size;
    size_t candidates;    /* expanded so far, against SPEC_CANDIDATES_MAX */
    size_t problems;      /* buckets expanded so far, against SPEC_PROBLEMS_MAX */
    size_t list_capacity;
    char description[DESCRIPTION_MAX];
};

typedef enum fc_status (*value_parser)(struct reader *r, const char *key, int *value);

PRINTF_LIKE(3)
static enum fc_status fail_at(struct reader *r, yaml_mark_t mark, const char *format, ...)
{
    if (!r->err || !r->err_size)
        return FC_ERR_CONFIG;
    int used = snprintf(r->err, r->err_size, "%s:%zu:%zu: ", r->name, mark.line + 1,
                        mark.column + 1);
    if (used >= 0 && (size_t)used < r->err_size) {
        va_list args;
        va_start(args, format);
        vsnprintf(r->err + used, r->err_size - (size_t)used, format, args);
        va_end(args);
    }
    return FC_ERR_CONFIG;
}

static enum fc_status out_of_memory(struct reader *r)
{
    if (r->err && r->err_size)
        snprintf(r->err, r->err_size, "%s: out of memory", r->name);
    return FC_ERR_NOMEM;
}

/* The position of a byte offset, counting columns in characters as libyaml's marks do. */
static yaml_mark_t mark_at_offset(const struct reader *r, size_t offset)
{
    yaml_mark_t mark = {0, 0, 0};
    for (size_t i = 0; i < offset && i < r->length; i++) {
        unsigned char byte = (unsigned char)r->text[i];
        if (byte == '\n') {
            mark.line++;
            mark.column = 0;
        } else if ((byte & 0xC0) != 0x80) {   /* not a UTF-8 continuation byte */
            mark.column++;
        }
    }
    mark.index = offset;
    return mark;
}

static enum fc_status syntax_error(struct reader *r, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR)
        return out_of_memory(r);
    if (p->error == YAML_READER_ERROR)
        return fail_at(r, mark_at_offset(r, p->problem_offset), "unreadable text: %s",
                       p->problem);
    if (p->context)
        return fail_at(r, p->problem_mark, "YAML syntax error: %s (%s that starts at %zu:%zu)",
                       p->problem, p->context, p->context_mark.line + 1,
                       p->context_mark.column + 1);
    return fail_at(r, p->problem_mark, "YAML syntax error: %s",
                   p->problem ? p->problem : "unknown problem");
}

/* Anchors, aliases and tags are refused: a spec is small enough to write out, and resolving
 * them would let one line expand into many without showing where. */
static enum fc_status refuse_unsupported(struct reader *r)
{
    const yaml_event_t *e = &r->event;
    const yaml_char_t *anchor = NULL, *tag = NULL;
    if (e->type == YAML_ALIAS_EVENT)
        return fail_at(r, e->start_mark, "aliases (*%s) are not supported in a spec; write the "
                       "values out", (const char *)e->data.alias.anchor);
    if (e->type == YAML_SCALAR_EVENT) {
        anchor = e->data.scalar.anchor;
        tag = e->data.scalar.tag;
    } else if (e->type == YAML_SEQUENCE_START_EVENT) {
        anchor = e->data.sequence_start.anchor;
        tag = e->data.sequence_start.tag;
    } else if (e->type == YAML_MAPPING_START_EVENT) {
        anchor = e->data.mapping_start.anchor;
        tag = e->data.mapping_start.tag;
    }
    if (anchor)
        return fail_at(r, e->start_mark, "anchors (&%s) are not supported in a spec; write the "
                       "values out", (const char *)anchor);
    if (tag)
        return fail_at(r, e->start_mark, "tags (%s) are not supported in a spec; write plain "
                       "values", (const char *)tag);
    /* A "\0" escape would cut every C string comparison short. */
    if (e->type == YAML_SCALAR_EVENT &&
        strlen((const char *)e->data.scalar.value) != e->data.scalar.length)
        return fail_at(r, e->start_mark, "a value holds a NUL character (\\0)");
    return FC_OK;
}

/* Replaces the current event with the next one. */
static enum fc_status next_event(struct reader *r)
{
    if (r->has_event) {
        yaml_event_delete(&r->event);
        r->has_event = 0;
    }
    if (!yaml_parser_parse(&r->parser, &r->event))
        return syntax_error(r, &r->parser);
    r->has_event = 1;
    return refuse_unsupported(r);
}

/* What the current node is, for messages: "\"sm_100\"", "an empty value", "a list". */
static const char *describe(struct reader *r)
{
    const yaml_event_t *e = &r->event;
    if (e->type == YAML_SEQUENCE_START_EVENT)
        return "a list";
    if (e->type == YAML_MAPPING_START_EVENT)
        return "a mapping";
    if (e->type != YAML_SCALAR_EVENT)
        return "nothing";
    if (e->data.scalar.length == 0 && e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
        return "an empty value";
    snprintf(r->description, sizeof r->description, "\"%.64s\"",
             (const char *)e->data.scalar.value);
    return r->description;
}

static const char *scalar_text(const struct reader *r)
{
    return (const char *)r->event.data.scalar.value;
}

static int scalar_is_plain(const struct reader *r)
{
    return r->event.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* "a, b, c" */
static void join_names(char *out, size_t size, const char *const *names, int count)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < count && used < size; i++) {
        int n = snprintf(out + used, size - used, "%s%s", i ? ", " : "", names[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

/* Refuses a value that is none of the accepted names, listing them. */
static enum fc_status fail_unknown(struct reader *r, const char *key, const char *const *names,
                                   int count)
{
    char accepted[NAMES_MAX];
    join_names(accepted, sizeof accepted, names, count);
    return fail_at(r, r->event.start_mark, "unknown %s %s; accepted: %s", key, describe(r),
                   accepted);
}

static enum fc_status parse_kernel(struct reader *r, const char *key, int *value)
{
    enum fc_kernel_family family;
    if (fc_kernel_family_parse(scalar_text(r), &family) == 0) {
        *value = (int)family;
        return FC_OK;
    }
    const char *names[FC_KERNEL_FAMILY_COUNT];
    for (int i = 0; i < FC_KERNEL_FAMILY_COUNT; i++)
        names[i] = fc_kernel_family_name((enum fc_kernel_family)i);
    return fail_unknown(r, key, names, FC_KERNEL_FAMILY_COUNT);
}

static enum fc_status parse_dtype(struct reader *r, const char *key, int *value)
{
    enum fc_dtype dtype;
    if (fc_dtype_parse(scalar_text(r), &dtype) == 0) {
        *value = (int)dtype;
        return FC_OK;
    }
    const char *names[FC_E4M3 + 1];
    for (int i = 0; i <= FC_E4M3; i++)
        names[i] = fc_dtype_name((enum fc_dtype)i);
    return fail_unknown(r, key, names, FC_E4M3 + 1);
}

static enum fc_status parse_arch(struct reader *r, const char *key, int *value)
{
    int arch = 0, arch_specific = 0;
    if (fc_arch_parse(scalar_text(r), &arch, &arch_specific) == 0) {
        *value = ARCH_PACK(arch, arch_specific);
        return FC_OK;
    }
    return fail_at(r, r->event.start_mark, "unknown %s %s; accepted: sm_XY or sm_XYa with a "
                   "compute capability X.Y of 7.0 or later, e.g. sm_80, sm_86, sm_90a",
                   key, describe(r));
}

/* Quoted scalars are strings in YAML, so "64" and "true" are refused where a number or a
 * boolean is expected rather than guessed at. */
static enum fc_status refuse_quoted(struct reader *r, const char *key, const char *expected)
{
    return fail_at(r, r->event.start_mark, "`%s` must be %s, but %s is quoted, which makes it a "
                   "string", key, expected, describe(r));
}

static enum fc_status parse_positive_int(struct reader *r, const char *key, int *value)
{
    const char *expected = "a positive integer (1 to 65535)";
    if (!scalar_is_plain(r))
        return refuse_quoted(r, key, expected);
    const char *text = scalar_text(r);
    const char *digits = text[0] == '-' ? text + 1 : text;
    char *end = NULL;
    errno = 0;
    long number = strtol(text, &end, 10);
    /* strtol alone would take " 12", "+12" and "12abc"; only an optional '-' and digits pass. */
    if (!isdigit((unsigned char)digits[0]) || *end != '\0' || errno == ERANGE || number < 1 ||
        number > SPEC_INT_MAX)
        return fail_at(r, r->event.start_mark, "`%s` must be %s, not %s", key, expected,
                       describe(r));
    *value = (int)number;
    return FC_OK;
}

static enum fc_status parse_boolean(struct reader *r, const char *key, int *value)
{
    /* YAML 1.2's core schema, plus 0 and 1; YAML 1.1's yes/no/on/off are refused as ambiguous. */
    static const struct { const char *word; int value; } WORDS[] = {
        {"true", 1}, {"True", 1}, {"TRUE", 1}, {"1", 1},
        {"false", 0}, {"False", 0}, {"FALSE", 0}, {"0", 0},
    };
    const char *expected = "true or false (or 1 or 0)";
    if (!scalar_is_plain(r))
        return refuse_quoted(r, key, expected);
    for (size_t i = 0; i < sizeof WORDS / sizeof WORDS[0]; i++) {
        if (strcmp(scalar_text(r), WORDS[i].word) == 0) {
            *value = WORDS[i].value;
            return FC_OK;
        }
    }
    return fail_at(r, r->event.start_mark, "`%s` must be %s, not %s", key, expected,
                   describe(r));
}

static const value_parser ENTRY_KEY_PARSERS[KEY_COUNT] = {
    [KEY_KERNEL] = parse_kernel,        [KEY_ARCH] = parse_arch,
    [KEY_DTYPE] = parse_dtype,          [KEY_HEAD_DIM] = parse_positive_int,
    [KEY_CAUSAL] = parse_boolean,       [KEY_BLOCK_M] = parse_positive_int,
    [KEY_BLOCK_N] = parse_positive_int, [KEY_STAGES] = parse_positive_int,
    [KEY_WARPS] = parse_positive_int,   [KEY_PINGPONG] = parse_boolean,
    [KEY_WINDOW] = parse_boolean,       [KEY_SOFTCAP] = parse_boolean, [KEY_VARLEN] = parse_boolean,
    [KEY_PAGED] = parse_boolean,        [KEY_KV_FP8] = parse_boolean, [KEY_Q_FP8] = parse_boolean,
    [KEY_PACK_GQA] = parse_boolean,     [KEY_V_TRANSPOSED] = parse_boolean,
    [KEY_QUICK] = parse_boolean,
};

/* A growing array (count items of *capacity) with room for one more: items itself or its grown
 * copy, NULL if out of memory (items is then untouched). */
static void *room_for_one(void *items, size_t *capacity, size_t count, size_t item_size)
{
    if (count < *capacity)
        return items;
    size_t grown_capacity = *capacity ? *capacity * 2 : 16;
    void *grown = realloc(items, grown_capacity * item_size);
    if (grown)
        *capacity = grown_capacity;
    return grown;
}

static enum fc_status axis_append(struct reader *r, struct axis *axis, int value)
{
    int *values = room_for_one(axis->values, &axis->capacity, axis->count, sizeof *values);
    if (!values)
        return out_of_memory(r);
    axis->values = values;
    values[axis->count++] = value;
    return FC_OK;
}

static enum fc_status parse_axis_item(struct reader *r, value_parser parse, const char *name, struct axis *axis)
{
    int value = 0;
    enum fc_status status = parse(r, name, &value);
    return status == FC_OK ? axis_append(r, axis, value) : status;
}

/* Reads the value of an entry's key, a scalar or a list of scalars, into its axis. */
static enum fc_status parse_axis(struct reader *r, value_parser parse, const char *name, struct axis *axis)
{
    if (r->event.type == YAML_SCALAR_EVENT)
        return parse_axis_item(r, parse, name, axis);
    if (r->event.type != YAML_SEQUENCE_START_EVENT)
        return fail_at(r, r->event.start_mark, "`%s` must be a value or a list of values, not %s",
                       name, describe(r));
    yaml_mark_t list_mark = r->event.start_mark;
    enum fc_status status;
    while ((status = next_event(r)) == FC_OK && r->event.type != YAML_SEQUENCE_END_EVENT) {
        if (r->event.type != YAML_SCALAR_EVENT)
            return fail_at(r, r->event.start_mark, "the items of `%s` must be single values, "
                           "not %s", name, describe(r));
        status = parse_axis_item(r, parse, name, axis);
        if (status != FC_OK)
            return status;
    }
    if (status == FC_OK && axis->count == 0)
        return fail_at(r, list_mark, "`%s` is an empty list; give at least one value", name);
    return status;
}

/* Moves to the next key of a mapping and copies its name out (the value's event will replace
 * the key's); *done is set at the end of the mapping instead. */
static enum fc_status next_key(struct reader *r, char key[KEY_NAME_MAX], yaml_mark_t *mark,
                               int *done)
{
    enum fc_status status = next_event(r);
    if (status != FC_OK)
        return status;
    *done = r->event.type == YAML_MAPPING_END_EVENT;
    if (*done)
        return FC_OK;
    if (r->event.type != YAML_SCALAR_EVENT)
        return fail_at(r, r->event.start_mark, "keys must be names such as `kernel`, not %s",
                       describe(r));
    *mark = r->event.start_mark;
    snprintf(key, KEY_NAME_MAX, "%s", scalar_text(r));
    /* A name too long for the buffer can match no key; keep it from matching a truncation. */
    if (r->event.data.scalar.length >= KEY_NAME_MAX)
        key[0] = '\0';
    return FC_OK;
}

/* Finds the key among those allowed and marks it given; refuses unknown and repeated keys. */
static enum fc_status accept_key(struct reader *r, const struct mapping_keys *keys,
                                 const char *key, yaml_mark_t mark, struct key_seen *seen,
                                 int *index)
{
    for (int i = 0; i < keys->count; i++) {
        if (strcmp(key, keys->names[i]) != 0)
            continue;
        if (seen[i].given)
            return fail_at(r, mark, "duplicate key `%s` %s (first given at %zu:%zu)", key,
                           keys->where, seen[i].mark.line + 1, seen[i].mark.column + 1);
        seen[i].given = 1;
        seen[i].mark = mark;
        *index = i;
        return FC_OK;
    }
    char allowed[NAMES_MAX];
    join_names(allowed, sizeof allowed, keys->names, keys->count);
    return fail_at(r, mark, "unknown key %s %s; allowed: %s", describe(r), keys->where, allowed);
}

static enum fc_status check_required(struct reader *r, const struct mapping_keys *keys,
                                     const struct key_seen *seen, yaml_mark_t mapping_mark)
{
    for (int i = 0; i < keys->required; i++) {
        if (!seen[i].given)
            return fail_at(r, mapping_mark, "missing required key `%s` %s", keys->names[i],
                           keys->where);
    }
    return FC_OK;
}

static enum fc_status list_append(struct reader *r, struct fc_variant_list *list,
                                  const struct fc_variant *variant)
{
    struct fc_variant *items = room_for_one(list->items, &r->list_capacity, list->count, sizeof *items);
    if (!items)
        return out_of_memory(r);
    list->items = items;
    items[list->count++] = *variant;
    return FC_OK;
}

/* The candidate at one position of the entry's product. */
static void build_candidate(const struct entry *entry, const size_t position[KEY_COUNT],
                            struct fc_variant *v)
{
    int value[KEY_COUNT];
    for (int k = 0; k < KEY_COUNT; k++)
        value[k] = entry->axes[k].count ? entry->axes[k].values[position[k]] : 0;
    /* Zeroed whole, padding included, so that no stale byte survives into a copy. */
    memset(v, 0, sizeof *v);
    v->family = (enum fc_kernel_family)value[KEY_KERNEL];
    v->arch = value[KEY_ARCH] >> 1;
    v->arch_specific = value[KEY_ARCH] & 1;
    v->dtype = (enum fc_dtype)value[KEY_DTYPE];
    v->head_dim = value[KEY_HEAD_DIM];
    v->causal = value[KEY_CAUSAL];
    v->window = value[KEY_WINDOW];   /* compile-time switches; the tiles stay the family's */
    v->softcap = value[KEY_SOFTCAP];
    v->paged = value[KEY_PAGED];
    v->varlen = value[KEY_VARLEN] || v->paged;   /* a paged kernel takes per-sequence lengths too */
    v->q_fp8 = value[KEY_Q_FP8];
    v->kv_fp8 = value[KEY_KV_FP8] || v->q_fp8;   /* an FP8 q takes FP8 K/V too */
    v->pack_gqa = value[KEY_PACK_GQA];
    v->v_transposed = value[KEY_V_TRANSPOSED];
    v->quick = value[KEY_QUICK];
    /* a family whose tiles follow block_m (decode's rows) sees it first; the others set their own */
    v->block_m = entry->axes[KEY_BLOCK_M].count ? value[KEY_BLOCK_M] : 0;
    fc_variant_defaults(v);   /* the family's choices, which the optional keys then override */
    if (entry->axes[KEY_BLOCK_M].count)
        v->block_m = value[KEY_BLOCK_M];
    if (entry->axes[KEY_BLOCK_N].count)
        v->block_n = value[KEY_BLOCK_N];
    if (entry->axes[KEY_STAGES].count)
        v->stages = value[KEY_STAGES];
    if (entry->axes[KEY_WARPS].count)
        v->warps = value[KEY_WARPS];
    if (entry->axes[KEY_PINGPONG].count)
        v->pingpong = value[KEY_PINGPONG];
}

/* Steps the position to the next candidate, the last key fastest; returns 0 after the last. */
static int next_position(const struct axis *axes, int count, size_t *position)
{
    for (int k = count - 1; k >= 0; k--) {
        if (axes[k].count == 0)
            continue;
        if (++position[k] < axes[k].count)
            return 1;
        position[k] = 0;
    }
    return 0;
}

/* How many combinations the axes make, saturated at cap + 1 instead of overflowing. */
static size_t axes_product(const struct axis *axes, int count, size_t cap)
{
    size_t product = 1;
    for (int k = 0; k < count; k++) {
        size_t n = axes[k].count;
        if (n && product > cap / n)
            return cap + 1;
        if (n)
            product *= n;
    }
    return product;
}

static enum fc_status count_candidates(struct reader *r, const struct entry *entry,
                                       size_t *total)
{
    const size_t product = axes_product(entry->axes, KEY_COUNT, SPEC_CANDIDATES_MAX);
    if (product > SPEC_CANDIDATES_MAX - r->candidates)
        return fail_at(r, entry->mark, "this entry brings the spec past %d candidates; split the "
                       "sweep or shorten its lists", SPEC_CANDIDATES_MAX);
    r->candidates += product;
    *total = product;
    return FC_OK;
}

/* Appends the entry's candidates that fc_variant_check accepts and counts the others; an entry
 * none of whose candidates can compile is a mistake in the spec, not something to prune. */
static enum fc_status expand_entry(struct reader *r, const struct entry *entry,
                                   struct fc_variant_list *list)
{
    size_t total = 0, valid = 0;
    enum fc_status status = count_candidates(r, entry, &total);
    if (status != FC_OK)
        return status;
    size_t position[KEY_COUNT] = {0};
    char why[REASON_MAX] = "", rejected[FC_VARIANT_NAME_MAX] = "";
    do {
        struct fc_variant v;
        build_candidate(entry, position, &v);
        char reason[REASON_MAX];
        if (fc_variant_check(&v, reason, sizeof reason) == 0) {
            status = list_append(r, list, &v);
            if (status != FC_OK)
                return status;
            valid++;
        } else {
            list->pruned++;
            if (why[0] == '\0') {   /* the first rejection explains an entry that yields none */
                snprintf(why, sizeof why, "%s", reason);
                fc_variant_name(&v, rejected);
            }
        }
    } while (next_position(entry->axes, KEY_COUNT, position));
    if (valid == 0)
        return fail_at(r, entry->mark, "this entry yields no valid variant (%zu rejected), "
                       "e.g. %s: %s", total, rejected, why);
    return FC_OK;
}

/* Reads the value of a known key, the current event; context is what the mapping fills. */
typedef enum fc_status (*value_reader)(struct reader *r, int key, void *context);

/* Reads the keys of the mapping whose start is the current event, up to its end: refuses
 * unknown and repeated keys, hands each value to read_value, then checks the required keys. */
static enum fc_status read_mapping(struct reader *r, const struct mapping_keys *keys,
                                   struct key_seen *seen, value_reader read_value, void *context)
{
    yaml_mark_t mapping_mark = r->event.start_mark;
    for (;;) {
        char key[KEY_NAME_MAX];
        yaml_mark_t mark;
        int done = 0, index = 0;
        enum fc_status status = next_key(r, key, &mark, &done);
        if (status != FC_OK)
            return status;
        if (done)
            return check_required(r, keys, seen, mapping_mark);
        status = accept_key(r, keys, key, mark, seen, &index);
        if (status == FC_OK)
            status = next_event(r);
        if (status == FC_OK)
            status = read_value(r, index, context);
        if (status != FC_OK)
            return status;
    }
}

static enum fc_status read_entry_value(struct reader *r, int key, void *context)
{
    struct entry *entry = context;
    return parse_axis(r, ENTRY_KEY_PARSERS[key], ENTRY_KEY_NAMES[key], &entry->axes[key]);
}

static enum fc_status parse_entry(struct reader *r, struct fc_variant_list *list)
{
    if (r->event.type != YAML_MAPPING_START_EVENT)
        return fail_at(r, r->event.start_mark, "each entry of `variants` must be a mapping "
                       "(kernel: ..., arch: ...), not %s", describe(r));
    struct entry entry;
    memset(&entry, 0, sizeof entry);
    entry.mark = r->event.start_mark;
    enum fc_status status = read_mapping(r, &ENTRY_KEYS, entry.seen, read_entry_value, &entry);
    if (status == FC_OK)
        status = expand_entry(r, &entry, list);
    for (int k = 0; k < KEY_COUNT; k++)
        free(entry.axes[k].values);
    return status;
}

/* A top-level list (`variants`, `problems`) of at least one entry, each read by parse_one. */
static enum fc_status parse_list(struct reader *r, const char *name, const char *first_key,
                                 enum fc_status (*parse_one)(struct reader *, void *), void *context)
{
    if (r->event.type != YAML_SEQUENCE_START_EVENT)
        return fail_at(r, r->event.start_mark, "`%s` must be a list of entries (- %s: ...), not %s", name,
                       first_key, describe(r));
    yaml_mark_t mark = r->event.start_mark;
    size_t entries = 0;
    enum fc_status status;
    while ((status = next_event(r)) == FC_OK && r->event.type != YAML_SEQUENCE_END_EVENT) {
        status = parse_one(r, context);
        if (status != FC_OK)
            return status;
        entries++;
    }
    if (status == FC_OK && entries == 0)
        return fail_at(r, mark, "`%s` is an empty list; give at least one entry", name);
    return status;
}

static enum fc_status parse_entry_into(struct reader *r, void *list)
{
    return parse_entry(r, list);
}

static const value_parser PROBLEM_KEY_PARSERS[PKEY_COUNT] = {
    [PKEY_DTYPE] = parse_dtype,         [PKEY_HEAD_DIM] = parse_positive_int,
    [PKEY_CAUSAL] = parse_boolean,      [PKEY_SEQLEN] = parse_positive_int,
    [PKEY_GQA] = parse_positive_int,    [PKEY_TOKENS] = parse_positive_int,
};

static enum fc_status read_problem_value(struct reader *r, int key, void *context)
{
    struct problem_entry *entry = context;
    return parse_axis(r, PROBLEM_KEY_PARSERS[key], PROBLEM_KEY_NAMES[key], &entry->axes[key]);
}

static enum fc_status problem_append(struct reader *r, struct fc_tune_problem_list *list,
                                     const struct fc_tune_problem *problem)
{
    struct fc_tune_problem *items = room_for_one(list->items, &list->capacity, list->count, sizeof *items);
    if (!items)
        return out_of_memory(r);
    list->items = items;
    items[list->count++] = *problem;
    return FC_OK;
}

/* One `problems` entry: every combination of its values is a bucket (a bucket listed twice is
 * kept once, later: remove_duplicate_problems). */
static enum fc_status parse_problem(struct reader *r, struct fc_tune_problem_list *list)
{
    if (r->event.type != YAML_MAPPING_START_EVENT)
        return fail_at(r, r->event.start_mark, "each entry of `problems` must be a mapping "
                       "(dtype: ..., head_dim: ..., causal: ..., seqlen: ...), not %s", describe(r));
    struct problem_entry entry;
    memset(&entry, 0, sizeof entry);
    entry.mark = r->event.start_mark;
    enum fc_status status = read_mapping(r, &PROBLEM_KEYS, entry.seen, read_problem_value, &entry);
    static const int DEFAULTS[PKEY_COUNT] = {[PKEY_GQA] = 1, [PKEY_TOKENS] = PROBLEM_TOKENS_DEFAULT};
    size_t position[PKEY_COUNT] = {0};
    for (int k = 0; status == FC_OK && k < PKEY_COUNT; k++)
        for (size_t i = 0; i < entry.axes[k].count; i++)
            if ((k == PKEY_HEAD_DIM && (entry.axes[k].values[i] % 8 || entry.axes[k].values[i] > 256)) ||
                (k == PKEY_GQA && entry.axes[k].values[i] > 64))
                status = fail_at(r, entry.seen[k].mark, "`%s` %d is out of range (%s)", PROBLEM_KEY_NAMES[k],
                                 entry.axes[k].values[i],
                                 k == PKEY_GQA ? "query heads per K/V head, 1 to 64" : "a multiple of 8 up to 256");
    const size_t product = axes_product(entry.axes, PKEY_COUNT, SPEC_PROBLEMS_MAX);
    if (status == FC_OK && product > SPEC_PROBLEMS_MAX - r->problems)
        status = fail_at(r, entry.mark, "this entry brings the spec past %d problem buckets; split the sweep or "
                         "shorten its lists", SPEC_PROBLEMS_MAX);
    else if (status == FC_OK)
        r->problems += product;
    while (status == FC_OK && list) {
        int value[PKEY_COUNT];
        for (int k = 0; k < PKEY_COUNT; k++)
            value[k] = entry.axes[k].count ? entry.axes[k].values[position[k]] : DEFAULTS[k];
        struct fc_tune_problem problem = {(enum fc_dtype)value[PKEY_DTYPE], value[PKEY_HEAD_DIM], value[PKEY_CAUSAL],
                                          value[PKEY_SEQLEN], value[PKEY_GQA], value[PKEY_TOKENS]};
        status = problem_append(r, list, &problem);
        if (!next_position(entry.axes, PKEY_COUNT, position))
            break;
    }
    for (int k = 0; k < PKEY_COUNT; k++)
        free(entry.axes[k].values);
    return status;
}

static enum fc_status parse_problem_into(struct reader *r, void *list)
{
    return parse_problem(r, list);
}

static enum fc_status read_top_value(struct reader *r, int key, void *context)
{
    struct spec_out *out = context;
    if (key == TOP_VARIANTS)
        return parse_list(r, "variants", "kernel", parse_entry_into, out->list);
    if (key == TOP_PROBLEMS)
        return parse_list(r, "problems", "dtype", parse_problem_into, out->problems);
    if (r->event.type == YAML_SCALAR_EVENT && !scalar_is_plain(r))
        return refuse_quoted(r, "version", SPEC_VERSION);
    if (r->event.type == YAML_SCALAR_EVENT && scalar_is_plain(r) &&
        strcmp(scalar_text(r), SPEC_VERSION) == 0)
        return FC_OK;
    return fail_at(r, r->event.start_mark, "unsupported `version`: %s; expected `version: "
                   SPEC_VERSION "`, the only spec version this FlashCore reads", describe(r));
}

/* The root: a mapping with `version` and `variants`. */
static enum fc_status parse_top(struct reader *r, struct spec_out *out)
{
    if (r->event.type != YAML_MAPPING_START_EVENT)
        return fail_at(r, r->event.start_mark, "a spec must be a mapping with `version: "
                       SPEC_VERSION "` and `variants`, not %s", describe(r));
    struct key_seen seen[TOP_COUNT];
    memset(seen, 0, sizeof seen);
    return read_mapping(r, &TOP_KEYS, seen, read_top_value, out);
}

static enum fc_status parse_stream(struct reader *r, struct spec_out *out)
{
    enum fc_status status = next_event(r);   /* STREAM-START */
    if (status == FC_OK)
        status = next_event(r);
    if (status != FC_OK)
        return status;
    if (r->event.type == YAML_STREAM_END_EVENT)
        return fail_at(r, r->event.start_mark, "the spec is empty; expected a mapping with "
                       "`version: " SPEC_VERSION "` and `variants`");
    status = next_event(r);   /* past DOCUMENT-START to the root node */
    if (status == FC_OK)
        status = parse_top(r, out);
    if (status == FC_OK)
        status = next_event(r);   /* DOCUMENT-END */
    if (status == FC_OK)
        status = next_event(r);
    if (status == FC_OK && r->event.type != YAML_STREAM_END_EVENT)
        return fail_at(r, r->event.start_mark, "a second YAML document starts here; a spec is "
                       "one document");
    return status;
}

/* Keeps the first of each set of equal variants, in list order. */
static enum fc_status remove_duplicates(struct reader *r, struct fc_variant_list *list)
{
    return fc_variants_unique(list->items, &list->count) ? out_of_memory(r) : FC_OK;
}

struct ranked_problem {
    struct fc_tune_problem problem;
    size_t order;   /* its place in the spec */
};

static int compare_ranked_problems(const void *a, const void *b)
{
    const struct ranked_problem *x = a, *y = b;
    int by_value = memcmp(&x->problem, &y->problem, sizeof x->problem);   /* ints only: no padding */
    return by_value ? by_value : (x->order > y->order) - (x->order < y->order);
}

/* Keeps the first of each set of equal buckets, in spec order: sorted, so n log n, not n^2. */
static enum fc_status remove_duplicate_problems(struct reader *r, struct fc_tune_problem_list *list)
{
    if (list->count < 2)
        return FC_OK;
    struct ranked_problem *ranked = malloc(list->count * sizeof *ranked);
    unsigned char *keep = calloc(list->count, 1);
    if (!ranked || !keep) {
        free(ranked);
        free(keep);
        return out_of_memory(r);
    }
    for (size_t i = 0; i < list->count; i++)
        ranked[i] = (struct ranked_problem){list->items[i], i};
    qsort(ranked, list->count, sizeof *ranked, compare_ranked_problems);
    for (size_t i = 0; i < list->count; i++)
        keep[ranked[i].order] = i == 0 || memcmp(&ranked[i - 1].problem, &ranked[i].problem, sizeof ranked[i].problem);
    size_t kept = 0;
    for (size_t i = 0; i < list->count; i++)
        if (keep[i])
            list->items[kept++] = list->items[i];
    list->count = kept;
    free(ranked);
    free(keep);
    return FC_OK;
}

/* Runs the text through the parser once before reading it, so that a syntax error is reported
 * as such even where the nodes before it already make no sense (an unclosed "[" swallows the
 * next line as a value). */
static enum fc_status check_syntax(struct reader *r)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return out_of_memory(r);
    yaml_parser_set_input_string(&parser, (const unsigned char *)r->text, r->length);
    enum fc_status status = FC_OK;
    int depth = 0;
    for (int done = 0; !done && status == FC_OK;) {
        yaml_event_t event;
        if (!yaml_parser_parse(&parser, &event)) {
            status = syntax_error(r, &parser);
            break;
        }
        done = event.type == YAML_STREAM_END_EVENT;
        if (event.type == YAML_SEQUENCE_START_EVENT || event.type == YAML_MAPPING_START_EVENT)
            depth++;
        else if (event.type == YAML_SEQUENCE_END_EVENT || event.type == YAML_MAPPING_END_EVENT)
            depth--;
        if (depth > SPEC_NESTING_MAX)
            status = fail_at(r, event.start_mark, "lists and mappings nested more than %d deep; a spec needs 4 (a "
                             "mapping of lists of mappings of lists)", SPEC_NESTING_MAX);
        yaml_event_delete(&event);
    }
    yaml_parser_delete(&parser);
    return status;
}

static enum fc_status parse_spec(const char *text, size_t length, const char *name, struct fc_variant_list *out,
                                 struct fc_tune_problem_list *problems_out, char *err, size_t err_size)
{
    if (err && err_size)
        err[0] = '\0';
    if (problems_out)
        memset(problems_out, 0, sizeof *problems_out);
    if (!out || (!text && length)) {
        if (err && err_size)
            snprintf(err, err_size, "fc_config_parse_variants: %s is NULL", out ? "text" : "out");
        return FC_ERR_INVALID_ARG;
    }
    memset(out, 0, sizeof *out);
    struct reader r;
    memset(&r, 0, sizeof r);
    r.name = name ? name : "<embedded>";
    r.text = text ? text : "";
    r.length = length;
    r.err = err;
    r.err_size = err_size;
    enum fc_status status = check_syntax(&r);
    if (status != FC_OK)
        return status;
    if (!yaml_parser_initialize(&r.parser))
        return out_of_memory(&r);
    yaml_parser_set_input_string(&r.parser, (const unsigned char *)r.text, length);
    struct fc_variant_list list = {NULL, 0, 0};
    struct fc_tune_problem_list problems = {NULL, 0, 0};
    struct spec_out spec = {&list, problems_out ? &problems : NULL};
    status = parse_stream(&r, &spec);
    if (status == FC_OK)
        status = remove_duplicates(&r, &list);
    if (status == FC_OK)
        status = remove_duplicate_problems(&r, &problems);
    if (status == FC_OK && problems_out && problems.count == 0)
        status = fail_at(&r, mark_at_offset(&r, 0), "a tuning spec needs `problems`: the buckets to "
                         "tune (dtype, head_dim, causal, seqlen; gqa, tokens optional)");
    if (r.has_event)
        yaml_event_delete(&r.event);
    yaml_parser_delete(&r.parser);
    if (status != FC_OK) {
        free(list.items);   /* nothing half-built is returned */
        free(problems.items);
        return status;
    }
    *out = list;
    if (problems_out)
        *problems_out = problems;
    return FC_OK;
}

enum fc_status fc_config_parse_variants(const char *text, size_t length, const char *name,
                                        struct fc_variant_list *out, char *err, size_t err_size)
{
    return parse_spec(text, length, name, out, NULL, err, err_size);
}

enum fc_status fc_config_parse_tune(const char *text, size_t length, const char *name,
                                    struct fc_variant_list *variants, struct fc_tune_problem_list *problems,
                                    char *err, size_t err_size)
{
    if (!problems) {
        if (err && err_size)
            snprintf(err, err_size, "fc_config_parse_tune: problems is NULL");
        return FC_ERR_INVALID_ARG;
    }
    return parse_spec(text, length, name, variants, problems, err, err_size);
}
