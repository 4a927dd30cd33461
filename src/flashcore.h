/*
 * FlashCore JIT: run-time specialized fused attention for NVIDIA GPUs.
 *
 * The one public header. Every call returns an enum fc_status; the context keeps the message of
 * the last failure (fc_context_errmsg). The library never aborts and never prints unless a log
 * level is asked for (fc_options.log_level or the FC_LOG environment variable).
 */
#ifndef FLASHCORE_H
#define FLASHCORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(FLASHCORE_BUILDING) && defined(__GNUC__)
#define FC_API __attribute__((visibility("default")))
#else
#define FC_API
#endif

#define FC_VERSION_MAJOR 0
#define FC_VERSION_MINOR 3
#define FC_VERSION_PATCH 0

/** Opaque: one per device and process; thread-safe. */
struct fc_context;

/** Status codes. Values are stable and never reused; new codes are added at the end. */
enum fc_status {
    FC_OK = 0,
    FC_ERR_INVALID_ARG = 1,   /**< a parameter breaks a documented rule; the message names it */
    FC_ERR_UNSUPPORTED = 2,   /**< valid, but no kernel takes it (dtype, head_dim, arch) */
    FC_ERR_NO_DEVICE = 3,     /**< no CUDA driver, no GPU, or the device index does not exist */
    FC_ERR_NO_COMPILER = 4,   /**< a kernel must be compiled but libnvrtc could not be loaded */
    FC_ERR_CUDA = 5,          /**< a CUDA driver call failed; the message has its name and code */
    FC_ERR_COMPILE = 6,       /**< NVRTC rejected a kernel; the message holds its log */
    FC_ERR_CACHE = 7,         /**< the SQLite kernel cache could not be read or written where that was
                                   the point (never from fc_context_create or the forward call: they fall
                                   back to reading only, or to memory, and log a warning) */
    FC_ERR_CONFIG = 8,        /**< a YAML spec or setting is malformed */
    FC_ERR_NOMEM = 9,         /**< host memory ran out */
    FC_ERR_INTERNAL = 10,     /**< a bug in FlashCore; please report the message */
};

enum fc_dtype {
    FC_F16 = 0,
    FC_BF16 = 1,
    FC_E4M3 = 2,   /**< FP8 e4m3 (OCP "e4m3fn": no infinities, NaN 0x7f/0xff): as dtype, q, k and v (FP8
                        attention, out in fc_attention_params.out_dtype); as kv_dtype, K and V only beside a
                        16-bit q (an FP8 KV cache) */
    FC_DTYPE_SAME = -1,   /**< fc_attention_params.kv_dtype and out_dtype only: dtype (their default) */
};

enum fc_log_level {
    FC_LOG_OFF = 0,
    FC_LOG_ERROR = 1,
    FC_LOG_WARN = 2,
    FC_LOG_INFO = 3,
    FC_LOG_DEBUG = 4,
};

/** Receives log lines when a log level is set; NULL prints them to stderr. */
typedef void (*fc_log_fn)(void *user, enum fc_log_level level, const char *message);

/** Passed to fc_context_create; start from fc_options_init(). */
struct fc_options {
    /** SQLite kernel cache file. NULL: $FC_TUNING_DB, else $XDG_CACHE_HOME/flashcore/tuning.db,
     *  else $HOME/.cache/flashcore/tuning.db. Created 0600 (its folder 0700). A file that cannot
     *  be written is only read; one that is damaged, missing a path, or not trusted (owned by
     *  another user, or writable by group or others, file or folder) is not used at all: kernels
     *  are then kept in memory, with one warning through the log. */
    const char *cache_path;
    /** Nonzero: keep compiled kernels in memory only (no file is opened or written). */
    int no_disk_cache;
    /** FC_LOG_OFF unless the FC_LOG environment variable (error|warn|info|debug) says otherwise. */
    enum fc_log_level log_level;
    fc_log_fn log_fn;
    void *log_user;
    /** Development: read kernel templates from this folder instead of the embedded copies.
     *  NULL: $FC_TEMPLATE_DIR if set, else the embedded copies. */
    const char *template_dir;
};

/** Pass as the device to create a context that compiles and caches kernels but runs none
 *  (precompiling on a machine without a GPU). */
#define FC_DEVICE_NONE (-1)

/**
 * One attention problem: out = softmax(cap(scale * Q K^T) [+ mask]) V, per batch and query head
 * (cap: softcap, if set; sinks, if set, join the softmax's denominator).
 *
 * Tensors are [batch, seq, head, head_dim] with the last dimension contiguous. Strides are in
 * elements, in the order {batch, seq, head}; all three 0 means packed BSHD.
 *
 * NOTE: struct_size is how this struct grows without breaking compiled callers: set it with
 * fc_attention_params_init (its own size, as the caller was compiled). The library reads the
 * fields a caller's struct_size covers (later fields take fc_attention_params_init's defaults: a
 * caller compiled before window_left existed gets -1, no window) and refuses a struct with
 * nonzero fields it does not know (so 0.2.0 refuses a caller compiled with the window fields,
 * whose default is -1, with FC_ERR_UNSUPPORTED).
 * Query head h reads key/value head h / (heads_q / heads_kv) (GQA/MQA).
 * Masks are bottom-right aligned: query row i's diagonal is key d = i + seqlen_k - seqlen_q.
 * Causal: row i sees keys j <= d. A sliding window: d - window_left <= j <= d + window_right, -1
 * meaning unbounded on that side; causal is window_right 0 (causal = 1 with window_right -1 or 0).
 * A window wider than the sequence is no window. Always j < seqlen_k.
 * A query row that sees no key at all gets out = 0 and lse = -inf (with sinks: lse = its sink).
 */
struct fc_attention_params {
    size_t struct_size;      /**< sizeof(struct fc_attention_params) as the caller was compiled: set by init */
    enum fc_dtype dtype;
    int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;
    const void *q, *k, *v;   /**< device pointers, 16-byte aligned */
    void *out;               /**< device pointer, 16-byte aligned, same dtype */
    float *lse;              /**< optional [batch, heads_q, seqlen_q] fp32, natural log; NULL = none */
    int64_t q_stride[3], k_stride[3], v_stride[3], o_stride[3];   /**< multiples of 8 elements */
    float softmax_scale;     /**< 0 = 1/sqrt(head_dim) */
    int causal;              /**< 0 or 1; 1 with window_right > 0 is FC_ERR_INVALID_ARG */
    /* Fields below were added after 0.2.0 (read only where struct_size covers them). */
    int window_left;         /**< keys before the diagonal a row sees; -1 = all (the default) */
    int window_right;        /**< keys after the diagonal a row sees; -1 = all (the default), 0 = causal */
    /** Optional attention sinks, NULL = none: a device pointer to fp32 [heads_q], 4-byte aligned, one
     *  logit per query head (on the scale of the scaled scores, natural log) that joins each row's
     *  softmax denominator and receives no value (gpt-oss's s_aux): out = sum_j e^(s_j) v_j /
     *  (e^sink + sum_j e^(s_j)), and the LSE includes it. A row that sees no key gets out = 0 and
     *  lse = its sink. Finite, or -inf for a head without one. */
    const float *sinks;
    /** Logit soft-capping, 0 = none (the default), else finite and positive: the scaled scores s
     *  become softcap * tanh(s / softcap) before masking (Gemma 2). Sinks are not capped. */
    float softcap;
    /* Fields below were added after 0.3.0 (read only where struct_size covers them). */
    /** Variable-length (ragged) batches, FlashAttention's varlen form; all 0/NULL (the default) for a
     *  dense batch. max_seqlen_q > 0 turns it on: then q and out are packed [seqlen_q, heads_q,
     *  head_dim] and k and v [seqlen_k, heads_kv, head_dim], where seqlen_q and seqlen_k are the
     *  TOTAL token counts (the tensors' first dimension), and sequence b's query rows are tokens
     *  cu_seqlens_q[b] .. cu_seqlens_q[b + 1] - 1 (its keys likewise through cu_seqlens_k). Strides:
     *  stride[0] (batch) must be 0; stride[1] is the token stride, stride[2] the head stride (both 0:
     *  packed). The LSE, if asked for, is [heads_q, seqlen_q] (per head, every token: FA3's layout).
     *  Masks are per sequence: causal is bottom-right aligned on each sequence's own lengths, and a
     *  window's bounds apply to each sequence. A sequence of length 0 is legal; tokens of no
     *  sequence (from cu_seqlens_q[batch] to seqlen_q) and rows of empty sequences are never
     *  written (out and lse keep what they held).
     *  cu_seqlens_q, cu_seqlens_k: device int32 [batch + 1], 4-byte aligned, non-decreasing from 0,
     *  cu_seqlens_q[batch] <= seqlen_q (cu_seqlens_k: <= seqlen_k), each sequence at most
     *  max_seqlen_q queries (max_seqlen_k keys). NOTE: the library never reads them on the host (no
     *  synchronization: CUDA-graph capturable), so these contents are the caller's contract. */
    const int32_t *cu_seqlens_q, *cu_seqlens_k;
    int max_seqlen_q;        /**< varlen: the longest sequence's query count (sizes the grid), > 0; else 0 */
    int max_seqlen_k;        /**< varlen: the longest sequence's key count, > 0; else 0 */
    /** Optional keys actually present per sequence, NULL = all (the default): device int32 [batch],
     *  4-byte aligned, 0 <= seqused_k[b] <= sequence b's key count (a KV cache's filled length). With
     *  it, sequence b has seqused_k[b] keys for everything, its causal diagonal included; rows past
     *  them are never read as values (they may hold anything, NaN included). Dense (no cu_seqlens):
     *  k and v are [batch, seqlen_k, heads_kv, head_dim] and seqlen_k is the longest. Contents are the
     *  caller's contract, as cu_seqlens'. When planning (fc_attention_plan), any non-NULL value says
     *  that it will be given: it selects the kernels' per-sequence form. */
    const int32_t *seqused_k;
    /* Fields below were added after the varlen fields (read only where struct_size covers them). */
    /** A paged K/V cache (vLLM's, SGLang's, FA3's page_table), off by default (page_size 0). page_size
     *  > 0 turns it on (a host int: planning needs no pointers): k and v are then
     *  [num_pages, page_size, heads_kv, head_dim], and k_stride / v_stride mean {page, token, head}
     *  (all 0: packed; multiples of 8 elements as always). Key j of sequence b is slot j % page_size of
     *  page page_table[b * page_table_stride + j / page_size]. Sequence b has seqused_k[b] keys if
     *  seqused_k is given, else seqlen_k; in paged mode seqlen_k is the most keys any sequence may
     *  have, at most page_table_stride * page_size. Any page size >= 1 works. With varlen queries
     *  (max_seqlen_q > 0: FA3's flash_attn_varlen_func / flash_attn_with_kvcache with a page
     *  table), cu_seqlens_q is required, cu_seqlens_k must be NULL (keys come from the page table)
     *  and max_seqlen_k must equal seqlen_k; dense queries stay [batch, seqlen_q, heads_q, head_dim].
     *  Masks, sinks, softcap, GQA and the LSE are as without paging (causal: bottom-right aligned on
     *  each sequence's key count). NOTE: page ids are device contents, never read on the host: ids in
     *  [0, num_pages) for every page a sequence's keys touch are the caller's contract, as
     *  cu_seqlens' contents are; table entries past them are never read. */
    int page_size;                /**< tokens per page, >= 1; 0 = K/V not paged (the default) */
    /** paged: device int32 [batch, page_table_stride], 4-byte aligned; required iff page_size > 0 */
    const int32_t *page_table;
    int page_table_stride;        /**< paged: elements between sequences' rows of page_table, >= ceil(seqlen_k / page_size) */
    int num_pages;                /**< paged: pages in k and v, >= 1 */
    /* Fields below were added after the paged fields (read only where struct_size covers them). */
    /** An FP8 KV cache: FC_E4M3 makes k and v e4m3 (one byte an element; their strides stay in
     *  elements, now multiples of 16) while q and out stay dtype (FC_F16 or FC_BF16); the kernels
     *  dequantize as they read. FC_DTYPE_SAME (the default) or dtype itself: k and v are dtype.
     *  head_dim must then be a multiple of 16. Works dense, varlen and paged, with every mask, sinks,
     *  softcap, GQA and the LSE. */
    enum fc_dtype kv_dtype;
    /** FP8 K/V: dequantization scales, FA3's k_descale / v_descale: device fp32 [batch, heads_kv]
     *  (varlen: batch is the sequence count), packed, 4-byte aligned, or NULL for 1. The kernels
     *  compute with k_descale[b * heads_kv + h] * K and v_descale[...] * V of sequence b, K/V head h,
     *  so scores are scale * q . (k_descale k) before any softcap. NULL unless kv_dtype is FC_E4M3.
     *  Contents (finite, positive for sense) are the caller's contract, as cu_seqlens' are. */
    const float *k_descale, *v_descale;
    /* Fields below were added after the FP8 KV cache fields (read only where struct_size covers them). */
    /** FP8 attention (dtype FC_E4M3: q, k and v all e4m3, FA3's fp8 forward; kv_dtype FC_DTYPE_SAME or
     *  FC_E4M3): out's type, FC_BF16 or FC_F16; FC_DTYPE_SAME (the default) is FC_BF16 there. With a
     *  16-bit dtype, out is dtype: FC_DTYPE_SAME or dtype itself. q's strides then count bytes, as an
     *  FP8 cache's k and v strides do (multiples of 16), and head_dim must be a multiple of 16. The
     *  scores use the e4m3 values exactly; P is rounded to e4m3 for P V (docs/ARCHITECTURE.md says
     *  how, and the error that costs). Works with every mask, sinks, softcap, GQA and the LSE. */
    enum fc_dtype out_dtype;
    /** FP8 attention: q's dequantization scales, FA3's q_descale: device fp32 [batch, heads_kv] (one per
     *  sequence and K/V head, shared by that head's query heads), packed, 4-byte aligned, or NULL for
     *  1; scores are scale * (q_descale q) . (k_descale k). NULL unless dtype is FC_E4M3. */
    const float *q_descale;
};

/** What the selector chose for a problem (fc_attention_plan). */
struct fc_plan_info {
    char kernel[96];   /**< readable variant name, e.g. "reference_f16_d128_causal_sm_90a" */
    char reason[256];  /**< why this kernel, and why faster ones were not taken */
    int splits;        /**< CTAs along the keys per row block: above 1 for split-KV (decode, GQA-packed rows) */
};

/** Fills *options with the defaults. */
FC_API void fc_options_init(struct fc_options *options);

/** Sets the struct_size bytes of *params to the defaults and params->struct_size to struct_size:
 *  packed strides, default scale, not causal, no window (window_left = window_right = -1), fp16,
 *  kv_dtype and out_dtype FC_DTYPE_SAME; everything else 0. Sizes and pointers must be set. Call it through fc_attention_params_init,
 *  which passes the size the caller was compiled with; from another language, pass the size of
 *  your copy of the struct (at least 0.2.0's, 184 bytes on LP64). */
FC_API void fc_attention_params_init_sized(struct fc_attention_params *params, size_t struct_size);

/** 0.2.0's initializer, kept for binaries compiled against it: it initializes the struct as 0.2.0
 *  knew it (its fields, its struct_size), and no further, since theirs may be shorter than this
 *  header's. */
FC_API void fc_attention_params_init(struct fc_attention_params *params);
/* NOTE: the library cannot know the size of a caller's struct, so that new fields never overrun an
 * older caller's: source compiled against this header initializes its own size. */
#define fc_attention_params_init(params) fc_attention_params_init_sized((params), sizeof *(params))

/**
 * Creates a context for one device (a CUDA ordinal) or FC_DEVICE_NONE.
 *
 * As with sqlite3_open, *context is set whenever memory allows, even on failure, so that
 * fc_context_errmsg can say what went wrong; destroy it in every case.
 * @param device   CUDA device ordinal, or FC_DEVICE_NONE
 * @param options  NULL for the defaults
 * @param context  receives the new context
 * A cache file that cannot be used does not fail it (see fc_options.cache_path).
 * @return FC_OK, FC_ERR_NO_DEVICE (no driver or GPU), FC_ERR_CONFIG (FC_FORCE_VARIANT), FC_ERR_NOMEM, ...
 */
FC_API enum fc_status fc_context_create(int device, const struct fc_options *options,
                                        struct fc_context **context);

/**
 * Validates the problem, picks and (at first use) compiles its kernel, and launches it on stream.
 *
 * Asynchronous like any kernel launch; on an in-memory hit it does no file I/O, no allocation and
 * no synchronization, so it can be captured in a CUDA graph. Nothing is launched unless every
 * parameter is valid. Exception: the first launch on the context of a kernel that schedules its
 * tiles from a device counter (FP8 causal attention on Hopper; then after every 4096 new streams
 * and captures) allocates 16 KB of counters and waits for its stream to zero them; during a capture
 * it allocates nothing, and a launch without a counter runs a static schedule instead. Two graph
 * executables instantiated from one capture share its counters: do not run them at the same time.
 *
 * The quick first call (on unless FC_QUICK_FIRST_CALL=0 or fc_context_set_quick_first_call): where
 * the planned kernel is in neither cache and its family has a kernel that compiles in a fraction of
 * the time for the problem (the Hopper kernel's plain schedule, in a form written for NVRTC's time,
 * for its warp-specialized one: a fifth to a third of the time), that
 * kernel serves the call and the planned one compiles on a worker thread of the context; a later
 * call that finds it compiled stores it in the cache, loads it and runs it from then on. The first
 * calls' results are then correct but not bit-identical to the later ones'; fc_context_wait_compiles
 * waits for the worker. Never during a stream capture: a captured call runs the planned kernel (waiting
 * for the worker's compile of it, if one is under way).
 * @param stream  a CUstream / cudaStream_t of the context's device; NULL = the legacy stream
 * @return FC_OK, FC_ERR_INVALID_ARG, FC_ERR_UNSUPPORTED, FC_ERR_NO_DEVICE, FC_ERR_COMPILE, ...
 */
FC_API enum fc_status fc_attention_forward(struct fc_context *context,
                                           const struct fc_attention_params *params,
                                           void *stream);

/**
 * Turns the quick first call (fc_attention_forward) on (nonzero) or off for this context; on at
 * creation unless the FC_QUICK_FIRST_CALL environment variable is "0". Off, a forward call whose
 * kernel is in neither cache compiles it before it launches, or waits for the worker's compile of it
 * if one was queued before.
 * @return FC_OK, or FC_ERR_INVALID_ARG for a NULL context
 */
FC_API enum fc_status fc_context_set_quick_first_call(struct fc_context *context, int enabled);

/**
 * Blocks until the context's worker has compiled every kernel the quick first call queued (a
 * benchmark's warm-up, or before timing a kernel). Compiled kernels are stored and run by the next
 * forward call that plans them.
 * @return FC_OK; FC_ERR_COMPILE if one of them failed to compile (its forward calls return the
 *         compile's error); FC_ERR_INVALID_ARG for a NULL context
 */
FC_API enum fc_status fc_context_wait_compiles(struct fc_context *context);

/**
 * Answers, with the selector fc_attention_forward uses, whether a problem is supported and which
 * kernel would run. Needs no GPU, compiles and launches nothing.
 * @param info  may be NULL
 */
FC_API enum fc_status fc_attention_plan(struct fc_context *context,
                                        const struct fc_attention_params *params,
                                        struct fc_plan_info *info);

/**
 * Two partial attention results of the same queries over disjoint sets of keys, for
 * fc_attention_merge: what context-parallel (ring) attention combines after each step. Each is an
 * output as fc_attention_forward writes it, [batch, seq, head, head_dim] with the strides of
 * fc_attention_params (all 0: packed; multiples of 8 elements), and its natural-log LSE,
 * [batch, head, seq] fp32. Start from fc_merge_params_init.
 *
 * NOTE: struct_size is how this struct grows without breaking compiled callers: the library reads
 * the fields a caller's struct_size covers (later fields count as 0) and refuses a struct that has
 * nonzero fields it does not know.
 */
struct fc_merge_params {
    size_t struct_size;      /**< sizeof(struct fc_merge_params) as the caller was compiled: set by init */
    enum fc_dtype dtype;     /**< FC_F16 or FC_BF16, all three outputs */
    int batch, seqlen, heads, head_dim;
    const void *out_a, *out_b;   /**< device pointers, 16-byte aligned */
    const float *lse_a, *lse_b;  /**< device pointers; a row that saw no key has -inf */
    void *out;               /**< the merged output; may be out_a or out_b (in place) */
    float *lse;              /**< the merged LSE, or NULL; may be lse_a or lse_b */
    int64_t a_stride[3], b_stride[3], o_stride[3];
};

/** Zeroes *params and sets struct_size. */
FC_API void fc_merge_params_init(struct fc_merge_params *params);

/**
 * Merges two partial results through their LSEs: lse = log(exp(lse_a) + exp(lse_b)) and out =
 * exp(lse_a - lse) out_a + exp(lse_b - lse) out_b, in fp32, per row; a part with LSE -inf (no
 * key) weighs 0, and a row with both -inf is 0 with LSE -inf. Asynchronous on stream, like
 * fc_attention_forward (graph-capturable on an in-memory hit), and validated the same way.
 */
FC_API enum fc_status fc_attention_merge(struct fc_context *context, const struct fc_merge_params *params,
                                         void *stream);

/** Where fc_quantize's descales come from. */
enum fc_quantize_scaling {
    FC_SCALE_PER_HEAD = 0,     /**< one per (sequence, descale head): the amax of its rows / 448 (the default) */
    FC_SCALE_PER_TENSOR = 1,   /**< one for the whole tensor (every entry of descale gets it) */
    FC_SCALE_GIVEN = 2,        /**< descale is read, not written (calibrated, static scales); values saturate */
};

/**
 * One tensor to quantize to FP8 e4m3 for FP8 attention (or an FP8 KV cache), optionally rotated
 * first. Start from fc_quantize_params_init.
 *
 * in is [batch, seq, head, head_dim] (16-bit, dtype), out the same shape in out_dtype, strides in
 * elements {batch, seq, head} as fc_attention_params' (all 0: packed; in's multiples of 8, an e4m3
 * out's of 16). descale is fp32 [batch, descale_heads], the layout fc_attention_params' q_descale,
 * k_descale and v_descale take: descale head g covers heads g * heads / descale_heads onwards (for
 * q with GQA: descale_heads = heads_kv). out = e4m3(x / descale), rounded to nearest and saturated
 * to +-448, with descale = amax / 448 (1 where amax is 0).
 *
 * The rotation (rotate = 1) is the FA3 paper's "incoherent processing": each row becomes
 * R x, R = H diag(s) / sqrt(n), H the Sylvester Hadamard matrix of order n (the largest power of two
 * dividing head_dim, applied to each n-element block of the row) and s a +-1 sign per dimension
 * drawn from rotation_seed. R is orthogonal, so rotating q and k with the same seed leaves every
 * score q . k unchanged while spreading an outlier dimension's magnitude over n: the amax, and so the
 * quantization step, falls. Do not rotate v (out would come out rotated). The signs depend only on
 * (rotation_seed, dimension): docs/ARCHITECTURE.md gives the formula.
 *
 * NOTE: struct_size is how this struct grows without breaking compiled callers, as fc_merge_params'.
 */
struct fc_quantize_params {
    size_t struct_size;      /**< sizeof(struct fc_quantize_params) as the caller was compiled: set by init */
    enum fc_dtype dtype;     /**< in's type: FC_F16 or FC_BF16 */
    enum fc_dtype out_dtype; /**< FC_E4M3 (the default), or dtype: rotation only (descale unused, NULL) */
    int batch, seqlen, heads, head_dim;   /**< head_dim: a multiple of 16 up to 256 */
    int descale_heads;       /**< descales per sequence, dividing heads; 0 = heads (the default) */
    const void *in;          /**< device pointer, 16-byte aligned */
    void *out;               /**< device pointer, 16-byte aligned; must not overlap in */
    float *descale;          /**< device fp32 [batch, descale_heads], 4-byte aligned: written (read with FC_SCALE_GIVEN) */
    int64_t in_stride[3], out_stride[3];
    enum fc_quantize_scaling scaling;
    int rotate;              /**< 0 or 1 */
    uint64_t rotation_seed;
    /** Varlen (packed [tokens, head, head_dim], fc_attention_params' form): cu_seqlens device int32
     *  [batch + 1] and max_seqlen > 0, seqlen the total token count, stride[0] 0; descale is then per
     *  sequence. Tokens of no sequence are not written. NULL and 0 (the default): dense. */
    const int32_t *cu_seqlens;
    int max_seqlen;
};

/** Zeroes *params, sets struct_size, out_dtype FC_E4M3 and scaling FC_SCALE_PER_HEAD. */
FC_API void fc_quantize_params_init(struct fc_quantize_params *params);

/**
 * Quantizes (and optionally rotates) one tensor on the GPU: two kernels, the amax and the
 * quantization, asynchronous on stream like fc_attention_forward (graph-capturable on an in-memory
 * hit: its scratch comes from the stream's memory pool) and validated the same way. Needs sm_89 or
 * newer (the e4m3 conversion). Deterministic. NaN or infinite inputs are the caller's contract.
 */
FC_API enum fc_status fc_quantize(struct fc_context *context, const struct fc_quantize_params *params,
                                  void *stream);

/** The message of the last failure on this context ("" if none). Valid until the next call. */
FC_API const char *fc_context_errmsg(const struct fc_context *context);

/** Releases the context and its loaded kernels. NULL is allowed. A kernel its worker is compiling
 *  for the quick first call is waited for and stored in the cache (kernels queued behind it are
 *  dropped: nothing was compiled for them). */
FC_API void fc_context_destroy(struct fc_context *context);

/** A short constant name for a status, e.g. "FC_ERR_INVALID_ARG". */
FC_API const char *fc_status_name(enum fc_status status);

/** "MAJOR.MINOR.PATCH". */
FC_API const char *fc_version(void);

#ifdef __cplusplus
}
#endif
#endif /* FLASHCORE_H */
