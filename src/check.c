/* Device checks: random inputs in a chosen layout, NaN-poisoned outputs, fp64 CPU judgement. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_internal.h"

#define POISON_16 0x7fffu          /* a NaN in both fp16 and bf16 */
#define POISON_E4M3 0x7f           /* a NaN in e4m3 (e4m3fn's only one, with 0xff) */
#define POISON_32 0x7fc00000u      /* a NaN in fp32 */
#define ROW_PADDING_BYTES 16       /* added to each row in FC_LAYOUT_BHSD: strides stay on 16 bytes */

struct checked_row;   /* below */
/* The rows fc_check_verify samples, and their references once computed (fc_check_run's reference). */
struct fc_check_reference {
    long long rows;                   /* 0: not computed */
    struct checked_row *at;           /* where each sampled row is */
    struct fc_row_reference *row;
    double *values;                   /* rows x 3 x head_dim: each row's out, native and p_bound */
};

/* Element strides {batch, seq, head} of a tensor of element_bytes elements in a layout. */
static void layout_strides(enum fc_check_layout layout, int seqlen, int heads, int dim, int element_bytes,
                           int64_t out[3])
{
    if (layout == FC_LAYOUT_BHSD) {
        out[1] = dim + ROW_PADDING_BYTES / element_bytes;
        out[2] = (int64_t)seqlen * out[1];
        out[0] = (int64_t)heads * out[2];
    } else {
        out[2] = dim;
        out[1] = (int64_t)heads * dim;
        out[0] = (int64_t)seqlen * out[1];
    }
}

/* Copies between a packed host tensor and a strided one (strides in elements of element_bytes),
 * either way. */
static void restride(void *packed, void *strided, const int64_t stride[3], int batch, int seqlen, int heads,
                     int dim, int element_bytes, int to_strided)
{
    unsigned char *tight = packed, *wide = strided;
    const size_t row_bytes = (size_t)dim * (size_t)element_bytes;
    size_t n = 0;
    for (int b = 0; b < batch; b++)
        for (int s = 0; s < seqlen; s++)
            for (int h = 0; h < heads; h++, n += row_bytes) {
                unsigned char *row = wide + (size_t)(b * stride[0] + s * stride[1] + h * stride[2]) * element_bytes;
                if (to_strided)
                    memcpy(row, tight + n, row_bytes);
                else
                    memcpy(tight + n, row, row_bytes);
            }
}

static enum fc_status cuda_fail(const struct fc_check_run *run, CUresult r, const char *what, char *msg, size_t size)
{
    return fc_cuda_fail(run->cuda, r, what, msg, size);
}

/* A packed host tensor of element_bytes elements (2: 16-bit, 1: e4m3) to a new device buffer of
 * `elements` in its strides. */
static enum fc_status upload(struct fc_check_run *run, CUdeviceptr *device, const void *packed, int element_bytes,
                             const int64_t stride[3], int batch, int seqlen, int heads, size_t elements, char *msg,
                             size_t size)
{
    const struct fc_attention_params *p = &run->params;
    const size_t bytes = elements * (size_t)element_bytes;   /* at most the staging buffer's */
    CUresult r = run->cuda->cuMemAlloc(device, bytes);
    if (r != CUDA_SUCCESS)
        return cuda_fail(run, r, "cuMemAlloc", msg, size);
    if (element_bytes == 1)   /* padding holds NaN: reading it would show */
        memset(run->staging, POISON_E4M3, bytes);
    else
        for (size_t i = 0; i < elements; i++)
            run->staging[i] = POISON_16;
    restride((void *)packed, run->staging, stride, batch, seqlen, heads, p->head_dim, element_bytes, 1);
    r = run->cuda->cuMemcpyHtoD(*device, run->staging, bytes);
    return r == CUDA_SUCCESS ? FC_OK : cuda_fail(run, r, "cuMemcpyHtoD", msg, size);
}

/* Runs work(data, thread, threads) for thread 0 .. threads - 1, threads = min(CPUs, PARALLEL_MAX,
 * most), on threads of their own but the first (a thread that cannot start: this one runs its share).
 * What work does must not depend on how many threads share it. */
enum { PARALLEL_MAX = 16 };

struct parallel_job {
    void (*work)(void *data, int thread, int threads);
    void *data;
    int thread, threads;
};

static void *parallel_thread(void *job)
{
    const struct parallel_job *j = job;
    j->work(j->data, j->thread, j->threads);
    return NULL;
}

static void run_parallel(void (*work)(void *data, int thread, int threads), void *data, long long most)
{
    struct parallel_job jobs[PARALLEL_MAX];
    pthread_t threads[PARALLEL_MAX];
    int started[PARALLEL_MAX] = {0};
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long long count = cpus > 1 ? cpus : 1;
    count = count < PARALLEL_MAX ? count : PARALLEL_MAX;
    count = count < most ? count : most > 1 ? most : 1;
    for (int t = 0; t < count; t++) {
        jobs[t] = (struct parallel_job){.work = work, .data = data, .thread = t, .threads = (int)count};
        started[t] = t > 0 && pthread_create(&threads[t], NULL, parallel_thread, &jobs[t]) == 0;
    }
    for (int t = 0; t < count; t++)
        if (!started[t])
            parallel_thread(&jobs[t]);
    for (int t = 1; t < count; t++)
        if (started[t])
            pthread_join(threads[t], NULL);
}

/* The inputs are drawn in blocks of DRAW_BLOCK elements, each block from a stream of its own (the
 * seed, the tensor, the block's index), so that threads draw them in any order and a seed's values
 * are the same on any machine; FP8 ones are the codes of the values 16-bit ones would hold. */
enum { DRAW_BLOCK = 1 << 18 };

struct draw {
    struct fc_check_run *run;
    size_t elements[3];   /* of q, k and v */
};

static void draw_block(struct fc_check_run *run, int tensor, size_t block, size_t elements)
{
    const struct fc_attention_params *p = &run->params;
    const int fp8 = tensor == 0 ? run->q_bytes == 1 : run->kv_bytes == 1;
    const double unit = run->c.kv_descale > 0.f ? run->c.kv_descale : 1.0;   /* FP8: the codes' scale */
    struct fc_random random;
    fc_random_seed(&random, run->c.seed ^ fc_mix64((uint64_t)tensor << 48 | block));
    uint8_t *codes = tensor == 0 ? run->host_q8 : tensor == 1 ? run->host_k8 : run->host_v8;
    uint16_t *storage = tensor == 0 ? run->host_q : tensor == 1 ? run->host_k : run->host_v;
    const size_t first = block * DRAW_BLOCK, end = first + DRAW_BLOCK < elements ? first + DRAW_BLOCK : elements;
    for (size_t i = first; i < end; i++) {
        const double value = fc_random_normal(&random);
        if (fp8)
            codes[i] = fc_float_to_e4m3((float)(value / unit));
        else
            storage[i] = fc_float_to_storage(p->dtype, (float)value);
    }
}

static void draw_share(void *data, int thread, int threads)
{
    const struct draw *d = data;
    for (int tensor = 0; tensor < 3; tensor++)
        for (size_t block = (size_t)thread; block * DRAW_BLOCK < d->elements[tensor]; block += (size_t)threads)
            draw_block(d->run, tensor, block, d->elements[tensor]);
}

static enum fc_status allocate_host(struct fc_check_run *run, char *msg, size_t size)
{
    const struct fc_attention_params *p = &run->params;
    size_t q = (size_t)run->layout_batch * p->seqlen_q * p->heads_q * p->head_dim;
    size_t kv = (size_t)run->kv_batch * run->kv_seqlen * p->heads_kv * p->head_dim;
    size_t staging = run->q_elements > run->kv_elements ? run->q_elements : run->kv_elements;   /* 16-bit */
    staging = staging > run->o_elements ? staging : run->o_elements;
    const int fp8 = run->kv_bytes == 1, q_fp8 = run->q_bytes == 1;
    if (q_fp8)
        run->host_q8 = malloc(q);
    else
        run->host_q = malloc(q * 2);
    if (fp8) {
        run->host_k8 = malloc(kv);
        run->host_v8 = malloc(kv);
    } else {
        run->host_k = malloc(kv * 2);
        run->host_v = malloc(kv * 2);
    }
    run->host_out = malloc(q * 2);
    run->staging = malloc(staging * 2);
    run->host_lse = malloc(run->lse_count * 4);
    if (!(q_fp8 ? (void *)run->host_q8 : (void *)run->host_q) ||
        !(fp8 ? run->host_k8 && run->host_v8 : run->host_k && run->host_v) || !run->host_out ||
        !run->staging || !run->host_lse) {
        snprintf(msg, size, "out of host memory for a %zu-element problem", q + 2 * kv);
        return FC_ERR_NOMEM;
    }
    struct draw d = {.run = run, .elements = {q, kv, kv}};
    run_parallel(draw_share, &d, (long long)((q + 2 * kv) / DRAW_BLOCK + 1));
    return FC_OK;
}

/* FP8 with kv_descale > 0: each (sequence, K/V head)'s k and v descales (FP8 attention: and q's),
 * kv_descale times 2^U(-1, 1), on the host and the device (a stream of their own: K and V stay those
 * of the seed; q's drawn after K's and V's, so that theirs are those of an FP8 cache's check). */
static enum fc_status make_descales(struct fc_check_run *run, char *msg, size_t size)
{
    const struct fc_attention_params *p = &run->params;
    if (run->kv_bytes != 1 || run->c.kv_descale == 0.f)
        return FC_OK;
    const size_t count = (size_t)p->batch * (size_t)p->heads_kv, tensors = run->q_bytes == 1 ? 3 : 2;
    run->host_k_descale = malloc(count * sizeof(float));
    run->host_v_descale = malloc(count * sizeof(float));
    run->host_q_descale = tensors == 3 ? malloc(count * sizeof(float)) : NULL;
    if (!run->host_k_descale || !run->host_v_descale || (tensors == 3 && !run->host_q_descale)) {
        snprintf(msg, size, "out of host memory for %zu descales", tensors * count);
        return FC_ERR_NOMEM;
    }
    enum { UNIFORM_BITS = 24 };
    struct fc_random random;
    fc_random_seed(&random, run->c.seed ^ 0xde5ca1eull);
    for (size_t i = 0; i < tensors * count; i++) {
        const double uniform = ldexp((double)fc_random_below(&random, 1ull << UNIFORM_BITS), -UNIFORM_BITS);
        float *const descales[] = {run->host_k_descale, run->host_v_descale, run->host_q_descale};
        descales[i / count][i % count] = (float)(run->c.kv_descale * exp2(2.0 * uniform - 1.0));
    }
    CUresult r = CUDA_SUCCESS;
    if (tensors == 3 && (r = run->cuda->cuMemAlloc(&run->q_descale, count * sizeof(float))) == CUDA_SUCCESS)
        r = run->cuda->cuMemcpyHtoD(run->q_descale, run->host_q_descale, count * sizeof(float));
    if (r == CUDA_SUCCESS)
        r = run->cuda->cuMemAlloc(&run->k_descale, count * sizeof(float));
    if (r == CUDA_SUCCESS)
        r = run->cuda->cuMemAlloc(&run->v_descale, count * sizeof(float));
    if (r == CUDA_SUCCESS)
        r = run->cuda->cuMemcpyHtoD(run->k_descale, run->host_k_descale, count * sizeof(float));
    if (r == CUDA_SUCCESS)
        r = run->cuda->cuMemcpyHtoD(run->v_descale, run->host_v_descale, count * sizeof(float));
    return r == CUDA_SUCCESS ? FC_OK : cuda_fail(run, r, "uploading the descales", msg, size);
}

/* The host's view of the case: the library's own resolution of its shape rules (mask, scale). */
static enum fc_status host_problem(struct fc_check_run *run, char *msg, size_t size)
{
    struct fc_attention_params shape = run->params;
    shape.q = shape.k = shape.v = shape.out = NULL;
    shape.lse = NULL;
    memset(shape.q_stride, 0, sizeof shape.q_stride);   /* packed on the host */
    memset(shape.k_stride, 0, sizeof shape.k_stride);
    memset(shape.v_stride, 0, sizeof shape.v_stride);
    memset(shape.o_stride, 0, sizeof shape.o_stride);
    struct fc_problem problem;
    enum fc_status status = fc_problem_shape(&shape, &problem, msg, size);
    if (status != FC_OK)
        return status;
    run->host = (struct fc_host_problem){
        .dtype = problem.dtype, .batch = problem.batch, .seqlen_q = problem.seqlen_q, .seqlen_k = problem.seqlen_k,
        .heads_q = problem.heads_q, .heads_kv = problem.heads_kv, .head_dim = problem.head_dim,
        .mask = problem.mask, .softmax_scale = problem.softmax_scale, .q = run->host_q, .k = run->host_k,
        .v = run->host_v, .sinks = run->host_sinks, .softcap = problem.softcap, .cu_seqlens_q = run->host_cu_q,
        .cu_seqlens_k = run->host_cu_k, .seqused_k = run->host_used_k, .page_size = run->params.page_size,
        .page_table_stride = run->params.page_table_stride, .page_table = run->host_page_table,
        .kv_fp8 = problem.kv_fp8, .k8 = run->host_k8, .v8 = run->host_v8, .k_descale = run->host_k_descale,
        .v_descale = run->host_v_descale, .q_fp8 = problem.q_fp8, .q8 = run->host_q8,
        .q_descale = run->host_q_descale,
    };
    return FC_OK;
}

/* A case's per-sequence lengths: cu_seqlens (varlen: the shape's totals and maxima follow, plus
 * FC_CHECK_PAD_TOKENS tokens of no sequence) and seqused_k, on the host and the device. */
static enum fc_status make_sequences(struct fc_check_run *run, char *msg, size_t size)
{
    struct fc_attention_params *p = &run->params;
    const struct fc_check_case *c = &run->c;
    const size_t n = (size_t)p->batch + 1;
    run->layout_batch = p->batch;
    if (c->lens_q) {
        run->host_cu_q = calloc(n, sizeof(int32_t));
        run->host_cu_k = calloc(n, sizeof(int32_t));
        if (!run->host_cu_q || !run->host_cu_k) {
            snprintf(msg, size, "out of host memory for %d sequences", p->batch);
            return FC_ERR_NOMEM;
        }
        /* paged: no cu_seqlens_k; every sequence may have seqlen_k keys (used_k says how many it has) */
        const int *lens_k = c->page_size > 0 ? NULL : c->lens_k ? c->lens_k : c->lens_q;
        p->max_seqlen_q = p->max_seqlen_k = 1;   /* varlen needs both positive, even if every sequence is empty */
        for (int b = 0; b < p->batch; b++) {
            run->host_cu_q[b + 1] = run->host_cu_q[b] + c->lens_q[b];
            p->max_seqlen_q = c->lens_q[b] > p->max_seqlen_q ? c->lens_q[b] : p->max_seqlen_q;
            if (!lens_k)
                continue;
            run->host_cu_k[b + 1] = run->host_cu_k[b] + lens_k[b];
            p->max_seqlen_k = lens_k[b] > p->max_seqlen_k ? lens_k[b] : p->max_seqlen_k;
        }
        p->seqlen_q = run->host_cu_q[p->batch] + FC_CHECK_PAD_TOKENS;
        if (lens_k) {
            p->seqlen_k = run->host_cu_k[p->batch] + FC_CHECK_PAD_TOKENS;
        } else {   /* paged: the keys' capacity stays the shape's */
            p->max_seqlen_k = p->seqlen_k;
            free(run->host_cu_k);
            run->host_cu_k = NULL;
        }
        run->layout_batch = 1;
        run->c.layout = FC_LAYOUT_PACKED;
    }
    if (c->used_k) {
        run->host_used_k = malloc((size_t)p->batch * sizeof(int32_t));
        if (!run->host_used_k) {
            snprintf(msg, size, "out of host memory for %d sequences", p->batch);
            return FC_ERR_NOMEM;
        }
        for (int b = 0; b < p->batch; b++)
            run->host_used_k[b] = c->used_k[b];
    }
    return FC_OK;
}

/* Elements [first, end) of the packed host K and V hold NaN, e4m3's or the 16-bit one. */
static void poison_kv(struct fc_check_run *run, size_t first, size_t end)
{
    if (first >= end)
        return;
    if (run->host_k8) {
        memset(run->host_k8 + first, POISON_E4M3, end - first);
        memset(run->host_v8 + first, POISON_E4M3, end - first);
        return;
    }
    for (size_t i = first; i < end; i++)
        run->host_k[i] = run->host_v[i] = POISON_16;
}

/* Rows no sequence owns hold NaN, so that a kernel reading one shows: the tokens after a varlen
 * batch's last sequence, and each sequence's keys past its seqused_k. */
static void poison_unused_rows(struct fc_check_run *run)
{
    const struct fc_attention_params *p = &run->params;
    const size_t q_row = (size_t)p->heads_q * p->head_dim, kv_row = (size_t)p->heads_kv * p->head_dim;
    if (run->host_cu_q) {
        for (size_t i = (size_t)run->host_cu_q[p->batch] * q_row; i < (size_t)p->seqlen_q * q_row; i++)
            if (run->host_q8)
                run->host_q8[i] = POISON_E4M3;
            else
                run->host_q[i] = POISON_16;
        if (run->host_cu_k)
            poison_kv(run, (size_t)run->host_cu_k[p->batch] * kv_row, (size_t)p->seqlen_k * kv_row);
    }
    for (int b = 0; !run->host_page_table && run->host_used_k && b < p->batch; b++) {
        const size_t first = run->host_cu_k ? (size_t)run->host_cu_k[b] : (size_t)b * p->seqlen_k;
        const size_t end = run->host_cu_k ? (size_t)run->host_cu_k[b + 1] : first + (size_t)p->seqlen_k;
        poison_kv(run, (first + (size_t)run->host_used_k[b]) * kv_row, end * kv_row);
    }
}

/* Paged: the key count of sequence b (used_k, else the capacity seqlen_k). */
static int paged_keys(const struct fc_check_run *run, int b)
{
    const int used = run->host_used_k ? run->host_used_k[b] : run->params.seqlen_k;
    return used < run->params.seqlen_k ? used : run->params.seqlen_k;
}

/* Paged: the table's shape (every sequence's row has room for seqlen_k keys, plus one entry of
 * slack) and the pool of pages (FC_CHECK_SPARE_PAGES unused). Sets the K/V tensors' dimensions. */
static void paged_shape(struct fc_check_run *run)
{
    struct fc_attention_params *p = &run->params;
    const int per_sequence = (p->seqlen_k + run->c.page_size - 1) / run->c.page_size;
    p->page_size = run->c.page_size;
    p->page_table_stride = per_sequence + 1;
    p->num_pages = p->batch * per_sequence + FC_CHECK_SPARE_PAGES;
    run->kv_batch = p->num_pages;
    run->kv_seqlen = p->page_size;
}

/* Paged: a random page table (Fisher-Yates over the pool; sequence b takes the next ids for the
 * pages its keys fill, so its pages are in no order), and NaN in every slot no used key owns. The
 * entries past a sequence's pages name the first spare page, all NaN: a kernel reading them shows. */
static enum fc_status make_page_table(struct fc_check_run *run, char *msg, size_t size)
{
    struct fc_attention_params *p = &run->params;
    const int pages = p->num_pages, page_size = p->page_size;
    int32_t *pool = malloc((size_t)pages * sizeof(int32_t));
    unsigned char *used = calloc((size_t)pages * (size_t)page_size, 1);
    run->host_page_table = malloc((size_t)p->batch * (size_t)p->page_table_stride * sizeof(int32_t));
    if (!pool || !used || !run->host_page_table) {
        free(pool);
        free(used);
        snprintf(msg, size, "out of host memory for %d pages", pages);
        return FC_ERR_NOMEM;
    }
    struct fc_random random;
    fc_random_seed(&random, run->c.seed ^ 0x9a6e5ull);
    for (int i = 0; i < pages; i++)
        pool[i] = i;
    for (int i = pages - 1; i > 0; i--) {
        const int j = (int)fc_random_below(&random, (uint64_t)i + 1);
        const int32_t t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
    }
    int next = 0;
    const int32_t nan_page = pool[pages - 1];   /* a spare: never given to a sequence */
    for (int b = 0; b < p->batch; b++) {
        const int keys = paged_keys(run, b), filled = (keys + page_size - 1) / page_size;
        int32_t *row = run->host_page_table + (size_t)b * (size_t)p->page_table_stride;
        for (int e = 0; e < p->page_table_stride; e++)
            row[e] = e < filled ? pool[next++] : nan_page;
        for (int j = 0; j < keys; j++)
            used[(size_t)row[j / page_size] * (size_t)page_size + (size_t)(j % page_size)] = 1;
    }
    const size_t kv_row = (size_t)p->heads_kv * p->head_dim;
    for (size_t slot = 0; slot < (size_t)pages * (size_t)page_size; slot++)
        if (!used[slot])
            poison_kv(run, slot * kv_row, (slot + 1) * kv_row);
    free(pool);
    free(used);
    return FC_OK;
}

static enum fc_status upload_ints(struct fc_check_run *run, CUdeviceptr *device, const int32_t *host, size_t count,
                                  char *msg, size_t size)
{
    if (!host)
        return FC_OK;
    CUresult r = run->cuda->cuMemAlloc(device, count * sizeof(int32_t));
    if (r == CUDA_SUCCESS)
        r = run->cuda->cuMemcpyHtoD(*device, host, count * sizeof(int32_t));
    return r == CUDA_SUCCESS ? FC_OK : cuda_fail(run, r, "uploading sequence lengths", msg, size);
}

/* The case's sinks, if it has any: N(0, 1) times its magnitude per query head (a stream of their
 * own, so that q, k and v are those of the same seed without sinks), on the host and the device. */
static enum fc_status make_sinks(struct fc_check_run *run, char *msg, size_t size)
{
    const int heads = run->c.shape.heads_q;
    if (run->c.sinks_magnitude == 0.f)
        return FC_OK;
    run->host_sinks = malloc((size_t)heads * sizeof(float));
    if (!run->host_sinks) {
        snprintf(msg, size, "out of host memory for %d sinks", heads);
        return FC_ERR_NOMEM;
    }
    struct fc_random random;
    fc_random_seed(&random, run->c.seed ^ 0x51a4c0ffeeull);
    for (int h = 0; h < heads; h++)
        run->host_sinks[h] = (float)fc_random_normal(&random) * run->c.sinks_magnitude;
    CUresult r = run->cuda->cuMemAlloc(&run->sinks, (size_t)heads * sizeof(float));
    if (r == CUDA_SUCCESS)
        r = run->cuda->cuMemcpyHtoD(run->sinks, run->host_sinks, (size_t)heads * sizeof(float));
    return r == CUDA_SUCCESS ? FC_OK : cuda_fail(run, r, "uploading the sinks", msg, size);
}

enum fc_status fc_check_prepare(struct fc_context *ctx, const struct fc_check_case *c, struct fc_check_run *run,
                                char *msg, size_t size)
{
    memset(run, 0, sizeof *run);
    run->c = *c;
    run->cuda = ctx->cuda;
    run->reference = calloc(1, sizeof *run->reference);   /* NULL: references computed each verify */
    if (!run->cuda) {
        snprintf(msg, size, "the context has no GPU");
        return FC_ERR_NO_DEVICE;
    }
    struct fc_attention_params *p = &run->params;
    *p = c->shape;
    if (c->page_size < 0 || (c->page_size > 0 && c->lens_k)) {
        snprintf(msg, size, "a paged check takes page_size > 0 and no lens_k (the key counts are used_k)");
        return FC_ERR_INVALID_ARG;
    }
    run->q_bytes = p->dtype == FC_E4M3 ? 1 : 2;   /* FP8 attention: q, k and v e4m3 */
    run->kv_bytes = p->kv_dtype == FC_E4M3 || run->q_bytes == 1 ? 1 : 2;   /* another kv_dtype: the library's rules answer */
    if (!(c->kv_descale >= 0.f) || !isfinite(c->kv_descale) || (c->kv_descale > 0.f && run->kv_bytes != 1)) {
        snprintf(msg, size, "kv_descale (%g) is FP8's (shape.kv_dtype FC_E4M3): 0 (no descales) or finite and "
                 "positive", (double)c->kv_descale);
        return FC_ERR_INVALID_ARG;
    }
    enum fc_status status = make_sequences(run, msg, size);
    if (status != FC_OK)
        return status;
    run->kv_batch = run->layout_batch;
    run->kv_seqlen = p->seqlen_k;
    if (c->page_size > 0)
        paged_shape(run);
    layout_strides(run->c.layout, p->seqlen_q, p->heads_q, p->head_dim, run->q_bytes, p->q_stride);
    layout_strides(run->c.layout, run->kv_seqlen, p->heads_kv, p->head_dim, run->kv_bytes, p->k_stride);
    layout_strides(run->c.layout, run->kv_seqlen, p->heads_kv, p->head_dim, run->kv_bytes, p->v_stride);
    layout_strides(run->c.layout, p->seqlen_q, p->heads_q, p->head_dim, 2, p->o_stride);
    run->q_elements = (size_t)run->layout_batch * (size_t)p->q_stride[0];
    run->o_elements = (size_t)run->layout_batch * (size_t)p->o_stride[0];   /* FP8 attention: q's pitch differs */
    run->kv_elements = (size_t)run->kv_batch * (size_t)p->k_stride[0];
    run->lse_count = (size_t)run->layout_batch * p->heads_q * p->seqlen_q;
    status = allocate_host(run, msg, size);
    if (status == FC_OK)
        status = make_sinks(run, msg, size);
    if (status == FC_OK)
        status = make_descales(run, msg, size);
    if (status != FC_OK)
        return status;
    if (c->page_size > 0 && (status = make_page_table(run, msg, size)) != FC_OK)
        return status;
    if ((status = host_problem(run, msg, size)) != FC_OK)
        return status;
    poison_unused_rows(run);
    if ((status = upload_ints(run, &run->cu_q, run->host_cu_q, (size_t)p->batch + 1, msg, size)) ||
        (status = upload_ints(run, &run->cu_k, run->host_cu_k, (size_t)p->batch + 1, msg, size)) ||
        (status = upload_ints(run, &run->used_k, run->host_used_k, (size_t)p->batch, msg, size)) ||
        (status = upload_ints(run, &run->page_table, run->host_page_table,
                              (size_t)p->batch * (size_t)p->page_table_stride, msg, size)))
        return status;
    const void *host_k = run->host_k8 ? (const void *)run->host_k8 : run->host_k;
    const void *host_v = run->host_v8 ? (const void *)run->host_v8 : run->host_v;
    const void *host_q = run->host_q8 ? (const void *)run->host_q8 : run->host_q;
    if ((status = upload(run, &run->q, host_q, run->q_bytes, p->q_stride, run->layout_batch, p->seqlen_q, p->heads_q,
                         run->q_elements, msg, size)) ||
        (status = upload(run, &run->k, host_k, run->kv_bytes, p->k_stride, run->kv_batch, run->kv_seqlen,
                         p->heads_kv, run->kv_elements, msg, size)) ||
        (status = upload(run, &run->v, host_v, run->kv_bytes, p->v_stride, run->kv_batch, run->kv_seqlen,
                         p->heads_kv, run->kv_elements, msg, size)))
        return status;
    CUresult r;
    if ((r = run->cuda->cuMemAlloc(&run->out, run->o_elements * 2)) ||
        (r = run->cuda->cuMemAlloc(&run->lse, run->lse_count * 4)))
        return cuda_fail(run, r, "cuMemAlloc", msg, size);
    if (c->layout == FC_LAYOUT_PACKED) {   /* packed: all-zero strides, the library derives them */
        memset(p->q_stride, 0, sizeof p->q_stride);
        memset(p->k_stride, 0, sizeof p->k_stride);
        memset(p->v_stride, 0, sizeof p->v_stride);
        memset(p->o_stride, 0, sizeof p->o_stride);
    }
    p->q = (const void *)run->q;
    p->k = (const void *)run->k;
    p->v = (const void *)run->v;
    p->out = (void *)run->out;
    p->lse = c->want_lse ? (float *)run->lse : NULL;
    p->sinks = (const float *)run->sinks;   /* NULL (0) without */
    p->cu_seqlens_q = (const int32_t *)run->cu_q;
    p->cu_seqlens_k = (const int32_t *)run->cu_k;
    p->seqused_k = (const int32_t *)run->used_k;
    p->page_table = (const int32_t *)run->page_table;   /* NULL (0) unless paged */
    p->k_descale = (const float *)run->k_descale;       /* NULL (0) unless FP8 with kv_descale */
    p->v_descale = (const float *)run->v_descale;
    p->q_descale = (const float *)run->q_descale;       /* NULL (0) unless FP8 attention with kv_descale */
    return fc_check_poison(run, msg, size);
}

enum fc_status fc_check_poison(struct fc_check_run *run, char *msg, size_t size)
{
    CUresult r;
    if ((r = run->cuda->cuMemsetD16(run->out, POISON_16, run->o_elements)) ||
        (r = run->cuda->cuMemsetD32(run->lse, POISON_32, run->lse_count)))
        return cuda_fail(run, r, "poisoning the output", msg, size);
    return FC_OK;
}

enum fc_status fc_check_download(struct fc_check_run *run, char *msg, size_t size)
{
    const struct fc_attention_params *p = &run->params;
    CUresult r;
    if ((r = run->cuda->cuMemcpyDtoH(run->staging, run->out, run->o_elements * 2)) ||
        (r = run->cuda->cuMemcpyDtoH(run->host_lse, run->lse, run->lse_count * 4)))
        return cuda_fail(run, r, "cuMemcpyDtoH", msg, size);
    int64_t stride[3];
    layout_strides(run->c.layout, p->seqlen_q, p->heads_q, p->head_dim, 2, stride);
    restride(run->host_out, run->staging, stride, run->layout_batch, p->seqlen_q, p->heads_q, p->head_dim, 2, 0);
    return FC_OK;
}

/* Padding around out rows must still hold the poison: nothing was written outside the tensor. */
static long long written_outside(const struct fc_check_run *run)
{
    if (run->c.layout != FC_LAYOUT_BHSD)
        return 0;
    const struct fc_attention_params *p = &run->params;
    const size_t pitch = (size_t)p->head_dim + ROW_PADDING_BYTES / 2;   /* out is 16-bit */
    long long stray = 0;
    for (size_t row = 0; row < run->o_elements / pitch; row++)
        for (size_t d = (size_t)p->head_dim; d < pitch; d++)
            stray += run->staging[row * pitch + d] != POISON_16;
    return stray;
}

/* Varlen: query row `index` of the check's numbering (dense: [batch, head, row]; varlen: [head,
 * token] over the tokens of sequences) as (b, h, i) and its out and lse offsets. */
struct checked_row {
    int b, h, i;
    size_t out, lse;
};

static struct checked_row varlen_row(const struct fc_host_problem *hp, long long index)
{
    const int tokens = hp->cu_seqlens_q[hp->batch];
    struct checked_row row = {0, (int)(index / tokens), 0, 0, 0};
    const int token = (int)(index % tokens);
    int low = 0, high = hp->batch - 1;   /* the sequence holding the token: the last b with cu[b] <= token */
    while (low < high) {
        const int mid = (low + high + 1) / 2;
        if (hp->cu_seqlens_q[mid] <= token)
            low = mid;
        else
            high = mid - 1;
    }
    row.b = low;
    row.i = token - hp->cu_seqlens_q[low];
    row.out = ((size_t)token * hp->heads_q + row.h) * hp->head_dim;
    row.lse = (size_t)row.h * hp->seqlen_q + token;
    return row;
}

/* Every element of a sequence's token finite (so written); varlen: the tokens of no sequence still
 * hold the poison (never written). */
static long long unwritten_or_stray(const struct fc_check_run *run)
{
    const struct fc_host_problem *hp = &run->host;
    const size_t row = (size_t)hp->heads_q * hp->head_dim;
    const size_t tokens = hp->cu_seqlens_q ? (size_t)hp->cu_seqlens_q[hp->batch] : (size_t)hp->batch * hp->seqlen_q;
    const size_t elements = (size_t)run->layout_batch * hp->seqlen_q * row;
    long long bad = 0;
    for (size_t i = 0; i < elements; i++) {
        if (i < tokens * row)
            bad += !isfinite(fc_storage_to_float(hp->dtype, run->host_out[i]));
        else
            bad += run->host_out[i] != POISON_16;
    }
    for (size_t i = 0; hp->cu_seqlens_q && run->c.want_lse && i < run->lse_count; i++) {   /* [heads, tokens] */
        uint32_t bits;
        memcpy(&bits, &run->host_lse[i], sizeof bits);
        bad += i % (size_t)hp->seqlen_q >= tokens && bits != POISON_32;
    }
    return bad + written_outside(run);
}

static void reference_free(struct fc_check_reference *r)
{
    if (!r)
        return;
    free(r->at);
    free(r->row);
    free(r->values);
    memset(r, 0, sizeof *r);
}

/* Sampled row n of `rows` (of `total`): all of them in order when rows == total, else the first, the
 * last, then random ones. */
static struct checked_row sampled_row(const struct fc_host_problem *hp, long long n, long long rows, long long total,
                                      struct fc_random *random)
{
    const long long index = rows == total ? n : n == 0 ? 0 : n == 1 ? total - 1
                                                  : (long long)fc_random_below(random, (uint64_t)total);
    if (hp->cu_seqlens_q)
        return varlen_row(hp, index);
    struct checked_row at;
    at.i = (int)(index % hp->seqlen_q);
    at.h = (int)(index / hp->seqlen_q % hp->heads_q);
    at.b = (int)(index / hp->seqlen_q / hp->heads_q);
    at.out = (((size_t)at.b * hp->seqlen_q + at.i) * hp->heads_q + at.h) * hp->head_dim;
    at.lse = (size_t)index;
    return at;
}

/* The sampled rows' references, computed on threads (each its own scratch). */
struct references {
    const struct fc_host_problem *hp;
    struct fc_check_reference *r;
    int failed[PARALLEL_MAX];   /* a thread without its scratch */
};

static void reference_share(void *data, int thread, int threads)
{
    struct references *refs = data;
    double *scratch = malloc(sizeof(double) * 2 * (size_t)refs->hp->seqlen_k);
    if (!scratch) {
        refs->failed[thread] = 1;
        return;
    }
    for (long long n = thread; n < refs->r->rows; n += threads)
        fc_reference_row(refs->hp, refs->r->at[n].b, refs->r->at[n].h, refs->r->at[n].i, &refs->r->row[n], scratch);
    free(scratch);
}

/* Computes and keeps the references of the run's sampled rows; 0 if it cannot (memory, too many). */
static int keep_references(const struct fc_check_run *run, long long rows, long long total)
{
    struct fc_check_reference *r = run->reference;
    if (!r || rows > FC_CHECK_ROWS_KEPT)
        return 0;
    if (r->rows == rows)
        return 1;
    const struct fc_host_problem *hp = &run->host;
    const size_t D = (size_t)hp->head_dim;
    reference_free(r);
    r->at = malloc(sizeof *r->at * (size_t)rows);
    r->row = malloc(sizeof *r->row * (size_t)rows);
    r->values = malloc(sizeof *r->values * 3 * D * (size_t)rows);
    if (!r->at || !r->row || !r->values) {
        reference_free(r);
        return 0;
    }
    struct fc_random random;
    fc_random_seed(&random, run->c.seed ^ 0x5eedull);
    for (long long n = 0; n < rows; n++) {
        double *values = r->values + 3 * D * (size_t)n;
        r->row[n] = (struct fc_row_reference){.out = values, .native = values + D, .p_bound = values + 2 * D};
        r->at[n] = sampled_row(hp, n, rows, total, &random);
    }
    r->rows = rows;   /* the rows the threads compute */
    struct references refs = {.hp = hp, .r = r};
    run_parallel(reference_share, &refs, rows);
    for (int t = 0; t < PARALLEL_MAX; t++)
        if (refs.failed[t]) {
            reference_free(r);
            return 0;
        }
    return 1;
}

int fc_check_verify(const struct fc_check_run *run, struct fc_error_stats *stats)
{
    const struct fc_host_problem *hp = &run->host;
    memset(stats, 0, sizeof *stats);
    stats->bad_rows += unwritten_or_stray(run);
    double *scratch = malloc(sizeof(double) * 2 * (size_t)hp->seqlen_k);
    double *values = malloc(sizeof(double) * 3 * (size_t)hp->head_dim);
    if (!scratch || !values) {
        free(scratch);
        free(values);
        stats->bad_rows++;
        return 0;
    }
    struct fc_row_reference row = {.out = values, .native = values + hp->head_dim,
                                   .p_bound = values + 2 * hp->head_dim};
    long long total = hp->cu_seqlens_q ? (long long)hp->cu_seqlens_q[hp->batch] * hp->heads_q
                                       : (long long)run->lse_count;
    long long rows = run->c.check_rows > 0 && run->c.check_rows < total ? run->c.check_rows : total;
    const int kept = keep_references(run, rows, total);
    struct fc_random random;
    fc_random_seed(&random, run->c.seed ^ 0x5eedull);
    for (long long n = 0; n < rows; n++) {
        struct checked_row at;
        const struct fc_row_reference *reference = &row;
        if (kept) {
            at = run->reference->at[n];
            reference = &run->reference->row[n];
        } else {
            at = sampled_row(hp, n, rows, total, &random);
            fc_reference_row(hp, at.b, at.h, at.i, &row, scratch);
        }
        fc_error_accumulate(stats, hp, reference, run->host_out + at.out,
                            run->c.want_lse ? &run->host_lse[at.lse] : NULL);
    }
    free(scratch);
    free(values);
    return fc_error_passes(stats);
}

long long fc_check_kept_rows(const struct fc_check_run *run)
{
    return run->reference ? run->reference->rows : 0;
}

void fc_check_release(struct fc_check_run *run)
{
    CUdeviceptr device[] = {run->q, run->k, run->v, run->out, run->lse, run->sinks, run->cu_q, run->cu_k, run->used_k,
                            run->page_table, run->k_descale, run->v_descale, run->q_descale};
    for (size_t i = 0; i < sizeof device / sizeof device[0]; i++)
        if (device[i])
            run->cuda->cuMemFree(device[i]);
    free(run->host_q);
    free(run->host_q8);
    free(run->host_k);
    free(run->host_v);
    free(run->host_k8);
    free(run->host_v8);
    free(run->host_k_descale);
    free(run->host_v_descale);
    free(run->host_q_descale);
    free(run->host_out);
    free(run->staging);
    free(run->host_lse);
    free(run->host_sinks);
    free(run->host_cu_q);
    free(run->host_cu_k);
    free(run->host_used_k);
    free(run->host_page_table);
    reference_free(run->reference);
    free(run->reference);
    memset(run, 0, sizeof *run);
}
