// Attention forward for Hopper (sm_90a): TMA loads on mbarriers, WGMMA on the tensor cores.
//
// Each consumer warpgroup (128 threads) of a CTA computes 64 query rows of one (batch, head), and
// the BLOCK_M / 64 consumer warpgroups share the K/V tiles of BLOCK_N keys. S = Q K^T is one
// m64nBLOCK_Nk16 WGMMA per 16 head dims, both operands from 128B-swizzled shared memory; O += P V
// takes P straight from the softmax registers (each warp's WGMMA accumulator has the mma C
// layout, so the softmax, masking and epilogue are attention_common.cuh's) and V transposed from
// shared memory. Two schedules, chosen by WARPS:
//
// - plain (WARPS = 4 per consumer): thread 0 issues the TMA copies into a two-stage ring, every
//   warpgroup waits for each GEMM before the softmax, and the CTA syncs once per tile.
// - warp-specialized (one more warpgroup, the producer): one producer thread issues the TMA copies
//   of K and V into STAGES-deep rings, each slot with a "full" barrier (bytes arrived) and an
//   "empty" one (every consumer thread done with it); setmaxnreg moves the producer's registers
//   to the consumers. Each consumer issues Q K^T of tile t and P V of tile t - 1 back to back and
//   computes the softmax of tile t while P V runs (FlashAttention-3's intra-warpgroup overlap);
//   consumers never sync with each other, so one's softmax overlaps another's GEMMs.
//
//   With PINGPONG, the consumers also take turns issuing their GEMMs (FlashAttention-3's
//   inter-warpgroup schedule), so that the turns order what the hardware would otherwise interleave.
//
// With VARLEN (varlen batches, seqused_k), a CTA computes rows of one sequence: the TMA maps hold
// the whole packed tensors and the sequence's rows start at its cu_seqlens (kv_source.cuh's
// SequenceTmaRows); the mask takes the sequence's lengths; a CTA whose rows start past its
// sequence's end leaves before anything exists to wait for; the last key tile's rows past the
// sequence's keys (other tokens, NaN allowed) are masked in S and zeroed in V before P V; rows
// past the sequence's queries are computed and never written.
//
// With PAGED (a paged K/V cache; VARLEN too), K and V each come one of two ways, chosen by the
// host (src/family_sm90.c) and told by the argument's box_rows (K) and v_box_rows (V); the producer
// warpgroup's warps 0-1 load K, warps 2-3 V, each pair on its own:
// - TMA boxes (rows > 0): 5-D maps of the paged tensors; each key tile is BLOCK_N / rows boxes,
//   each at its page's coordinate and each one copy of every column block of its rows, which land
//   in the grouped tile layout (KV_ATOM_STRIDE; kv_source.cuh's PagedTmaRows: one table read per
//   box, a tile ahead). The pair's first warp issues them, a box per lane.
// - gather (rows 0; warp-specialized only): the pair's 64 threads copy the tile's rows by cp.async
//   into the same 128B-swizzled layout TMA writes (one table read per row, a tile ahead), each
//   thread arriving on its slot's barrier when its copies land (the barrier counts 64 arrivals, no
//   bytes); each consumer fences the proxies before its WGMMAs read such a slot. The host takes it
//   where a tile would need many boxes, or the cache's layout has none: TMA costs about the same
//   per copy whatever its size, so many small copies a tile make the TMA unit the bottleneck; K
//   boxed and V gathered shares the work between the two (PERF_NOTES v8.4, v8.5).
// The tail of the last tile (slots past the sequence's keys) is masked and zeroed as VARLEN's.
//
// With PERSISTENT (dense, warp-specialized), the grid is as many CTAs as fit on the GPU at once, each
// looping over the problem's row blocks (units of one, or causal two of equal weight, blockIdx.x then
// gridDim.x apart: attention_common.cuh's persistent_units; FP8 causal, the next free block of one
// list, taken from a counter: run_scheduled): the producer loads the next block's Q
// as soon as the consumers' last Q K^T of this one is done (the "Q empty" barrier) and its first
// K/V tiles as the ring frees, so a block's prologue and its epilogue (O and the LSE out of the
// consumers' registers) overlap the work of the blocks beside it; the K/V ring and its barriers'
// phases run on across blocks (PERF_NOTES v10).
//
// With FP8 (FP8 attention: Q, K and V e4m3, O in T; warp-specialized; dense or VARLEN, whose last
// staged V tile the producer clears past the sequence: clear_staged_tail), both products run on
// WGMMA's e4m3 form (k = 32 bytes), which takes only K-major operands: Q and K are as above, but V
// arrives by TMA (rows of keys) into a staging ring, and the producer warpgroup's 128 threads transpose
// each tile into the V^T slot P V reads (rows of head dims; transpose_v), then fence the proxies and
// arrive on its full barrier. The keys of V^T's rows are permuted within each 16 so that the softmax
// registers are P's A fragment as they lie (p_fragments: no shuffle). P is rounded to e4m3 with
// the row's running max shifted down by P_LOG2_SHIFT (P <= 2^8: small probabilities keep e4m3's
// normal range; the shift cancels in O / sum and the LSE, FA3's Max_offset); the descales join the
// softmax scale (q and k) and O's scale (v).
//
// With PACK_GQA (dense, 16-bit, warp-specialized, one CTA a row block), a CTA's rows are the query
// heads of one K/V head (FlashAttention-3's pack_gqa): each consumer warpgroup's 64 rows are
// 64 / q_per_kv query rows x the q_per_kv heads sharing the K/V head (row = position x q_per_kv +
// head; 64 mod q_per_kv rows unused), so that each K/V tile read serves every head of the group: a
// few query rows against many keys then fill the tile. Q arrives by one 5-D TMA box a column block
// (src/family_sm90.c's q map: head_dim, heads of the group, K/V head, query row, batch), whose lines
// are the rows in that order; the mask and the stores take each row's query row and head
// (packed_row); row0 is the block's first query row.
//
// Not yet: TMA stores of O.
#pragma once

#include "attention_common.cuh"
#include "element.cuh"
#include "fc_args.h"
#include "kv_source.cuh"
#include "mask.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/ldmatrix.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/registers.cuh"
#include "ptx/smem.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "softmax.cuh"
#include "split_kv.cuh"

namespace fc {

// S += A B^T over one 32-byte k-step, N = 64 or 128 columns (16-bit: also 80, 112, 176, 192; e4m3:
// also 160, 192, 224): the form of that width and input type (ptx/wgmma.cuh).
template <int N, typename T>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], unsigned long long a, unsigned long long b, int accumulate)
{
    wgmma_ss(WgmmaN<N>{}, d, a, b, accumulate, T{});
}

// O += P V over one k-step (16 keys; e4m3: 32), N = head_dim = 64, 96 (16-bit), 128, 192 or 256, P
// from registers.
template <int N, typename T>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const unsigned (&a)[4], unsigned long long b)
{
    wgmma_rs(WgmmaN<N>{}, d, a, b, 1, T{});
}

template <typename T, int HEAD_DIM, bool CAUSAL, int BLOCK_M, int BLOCK_N, int STAGES = 2, int WARPS = BLOCK_M / 16,
          bool PINGPONG = false, bool WINDOW = false, bool SOFTCAP = false, bool VARLEN = false, bool PAGED = false,
          bool PERSISTENT = false, bool FP8 = false, bool PACK_GQA = false, bool SCHEDULED_GRID = false,
          bool STATIC_TAIL = false, bool V_TRANSPOSED = false, bool QUICK = false>
struct Sm90Forward {
    using In = typename KvElement<T, FP8>::type;   // Q, K and V storage: T, or e4m3 (FP8); O is T
    using E = Element<In>;
    static constexpr int CONSUMERS = BLOCK_M / 64;                   // warpgroups, 64 rows each
    static constexpr bool SPECIALIZED = WARPS == 4 * (CONSUMERS + 1);   // plus a producer warpgroup
    static constexpr int THREADS = 32 * WARPS, CONSUMER_THREADS = 128 * CONSUMERS;
    static constexpr int SWIZZLE_BYTES = 128, SWIZZLE_ALIGN = 1024;
    static constexpr int COLUMNS = E::PER_LINE;                      // columns of a block: one 128-byte line
    // head_dim in whole column blocks: a head_dim of an odd multiple of 32 (96, 160, 224) computes as
    // the next multiple of 64, its last block half zeros (TMA fills the columns past the maps'
    // innermost dimension, head_dim, with zeros); Q K^T skips those k-steps, P V computes them (WGMMA
    // n64-n256) and the store leaves them out. NOTE: enumerators (see PRODUCER_THREADS).
    enum : int { PADDED_DIM = (HEAD_DIM + COLUMNS - 1) / COLUMNS * COLUMNS };
    static constexpr int COLUMN_BLOCKS = PADDED_DIM / COLUMNS;       // swizzled column blocks of a row
    static constexpr int Q_BLOCK_BYTES = 64 * SWIZZLE_BYTES;         // (64 rows, COLUMNS) T, 128B swizzle
    static constexpr int KV_BLOCK_BYTES = BLOCK_N * SWIZZLE_BYTES;   // (BLOCK_N rows, COLUMNS) T, 128B swizzle
    static constexpr int K_STEPS = HEAD_DIM / E::MMA_K;              // k-steps of Q K^T, 32 bytes each
    static constexpr int STEPS_PER_BLOCK = SWIZZLE_BYTES / (E::MMA_K * E::BYTES);   // k-steps per column block
    static constexpr int STEP_DESCRIPTOR = E::MMA_K * E::BYTES / 16;   // a k-step in descriptor units (16 B)
    static constexpr int Q_BYTES = CONSUMERS * COLUMN_BLOCKS * Q_BLOCK_BYTES;   // per warpgroup: its blocks
    static constexpr int KV_BYTES = COLUMN_BLOCKS * KV_BLOCK_BYTES;  // one K or V tile
    // A K or V tile is 128B-swizzle atoms of 8 rows x one column block (1024 bytes, 1024-aligned).
    // Dense and VARLEN: each column block's atoms back to back, the blocks KV_BLOCK_BYTES apart (as a
    // box of BLOCK_N rows a block writes them). PAGED: grouped, the column blocks of 8 rows back to
    // back, then those of the next 8 rows (as one 5-D box of a page's rows writes them: one TMA copy
    // a box, not one a column block; PERF_NOTES v8.5). WGMMA's descriptors take either. NOTE:
    // enumerators (see PRODUCER_THREADS): `PAGED ? a : b` of static members takes their values.
    enum : int {
        ATOM_BYTES = 8 * SWIZZLE_BYTES,
        KV_BLOCK_STRIDE = PAGED ? ATOM_BYTES : KV_BLOCK_BYTES,                // the next column block
        KV_ATOM_STRIDE = PAGED ? COLUMN_BLOCKS * ATOM_BYTES : ATOM_BYTES,   // the next 8 rows
    };
    // FP8: V^T slots of HEAD_DIM rows x BLOCK_N keys in lines of VT_LINE keys (128, swizzled over
    // 128 bytes: a column block of HEAD_DIM lines per 128 keys, the last one's lines unused past
    // the tile's keys; 64-key tiles: one 64-byte line a row), and a staging ring of VS_STAGES V
    // tiles as TMA writes them (K's layout). NOTE: enumerators (see PRODUCER_THREADS).
    enum : int {
        VT_LINE = BLOCK_N < 128 ? BLOCK_N : 128,
        VT_BLOCK_BYTES = HEAD_DIM * VT_LINE,
        VT_BYTES = FP8 ? HEAD_DIM * FC_SM90_FP8_VT_KEYS(BLOCK_N) : 0,
        VS_STAGES = 2,
        P_STEPS = BLOCK_N / E::MMA_K,
        VT_LINE_STEPS = VT_LINE / E::MMA_K,   // FP8: P V's k-steps (32 keys) a line
    };
    static constexpr int SMEM_BYTES =
        SWIZZLE_ALIGN + Q_BYTES +
        (FP8 ? STAGES * (KV_BYTES + VT_BYTES) + (V_TRANSPOSED ? 0 : VS_STAGES * KV_BYTES) : 2 * STAGES * KV_BYTES);
    // V at head_dim 96: P V at its exact width (WGMMA n96), V in 64-byte-swizzled blocks of 32 columns
    // (three a row: a 128-byte swizzle's atoms are 64 columns wide, so n96 could not be described
    // there), each its own TMA box; K and Q stay padded (PERF_NOTES v9). Other odd multiples of 32
    // (160, 224) compute P V padded. NOTE: enumerators (see PRODUCER_THREADS).
    enum : int {
        V_LINE_BYTES = FC_SM90_V_LINE_BYTES(HEAD_DIM),        // fc_args.h: the host's V map agrees
        V_EXACT = V_LINE_BYTES < SWIZZLE_BYTES,
        V_WIDTH = V_EXACT || FP8 ? HEAD_DIM : PADDED_DIM,     // P V's N and O's accumulator columns (FP8: V^T's rows)
        V_COLUMNS = V_LINE_BYTES / E::BYTES,                  // columns of a V block
        V_BLOCKS = V_WIDTH / V_COLUMNS,
        V_BLOCK_BYTES = BLOCK_N * V_LINE_BYTES,
        V_BYTES = V_BLOCKS * V_BLOCK_BYTES,                   // one V tile (in a KV_BYTES slot)
    };
    static constexpr int N_TILES = BLOCK_N / 8, D_TILES = V_WIDTH / 8;
    enum : int { OUT_TILES = HEAD_DIM / 8 };   // O's tiles that are stored (D_TILES past them: padding)
    // setmaxnreg: the pool is what ptxas gives each thread at launch (65536 per SM shared by
    // MIN_BLOCKS CTAs, in multiples of 8); the producer keeps 24 and the consumers split the rest.
    // (the generated unit's __launch_bounds__ minimum): two CTAs per SM leave no room for head_dim
    // 256's P V accumulators (the n256 P V WGMMA alone needs 158 registers, ptxas C7602)
    static constexpr int MIN_BLOCKS = FC_SM90_MIN_BLOCKS(SPECIALIZED, CONSUMERS, HEAD_DIM);
    static constexpr int LAUNCH_REGISTERS = 65536 / (THREADS * MIN_BLOCKS) / 8 * 8 > 248
                                                ? 248 : 65536 / (THREADS * MIN_BLOCKS) / 8 * 8;
    // PAGED: the gather path's addresses and page ids need more than 24; FP8: the transposes' words
    // (64-key tiles: 56, their steps' addresses; the consumers, with half the S and P, keep 224)
    // NOTE: 80-key tiles (head_dim 256, 224) give the producer 32: at 24 its loop spilled 12 bytes
    // (the consumers keep 232, without ptxas serializing their WGMMAs).
    // NOTE: FP8 at head_dim 256 gives the producer 24 (its transposes then spill a few bytes) so that
    // the consumers get 240: at 232, ptxas serializes their WGMMAs for want of registers (its C7512
    // warning: no Q K^T / P V overlap), 0.88-0.93x the time at 240 (H100, PERF_NOTES v13.1)
    // NOTE: FP8 with three consumers and keys wider than 128 (head_dim 64's 160) gives the producer
    // 32, so that the consumers get 160: at 152 they spilled 96 bytes and ptxas serialized their
    // WGMMAs (C7512); at 32 the persistent loop's unit counter spills, loaded once a row block. With
    // two consumers, the wider tiles keep 40 and spill 12 bytes (a counter or two, once a block): at
    // 48 none spill at 160 or 192 keys, but the consumers' 224 registers ran 192 keys 0.96x as fast at
    // 8k-16k keys, and 224 keys then serialize their WGMMAs (C7512) (H100, PERF_NOTES v18)
    static constexpr int PRODUCER_REGISTERS =
        PAGED || FP8 ? (FP8 && BLOCK_N == 64                     ? 56
                        : FP8 && HEAD_DIM == 256                 ? 24
                        : FP8 && CONSUMERS == 3 && BLOCK_N > 128 ? 32
                                                                 : 40)
                     : BLOCK_N == 80 ? 32 : 24;
    // PAGED, gather: the producer warpgroup's threads and those copying each of K and V. NOTE:
    // enumerators, not static members: a member the code takes a value of puts a constant symbol in
    // the PTX of every variant, dense ones too.
    enum : int { PRODUCER_THREADS = 128, GATHERERS = PRODUCER_THREADS / 2 };
    static constexpr int CONSUMER_REGISTERS_POOL =
        (LAUNCH_REGISTERS * (CONSUMERS + 1) - PRODUCER_REGISTERS) / CONSUMERS / 8 * 8;
    static constexpr int CONSUMER_REGISTERS = CONSUMER_REGISTERS_POOL > 240 ? 240 : CONSUMER_REGISTERS_POOL;
    static_assert(HEAD_DIM % (COLUMNS / 2) == 0 && HEAD_DIM <= 256, "head_dim: whole 64-byte half lines, up to 256");
    static_assert(!PAGED || HEAD_DIM == PADDED_DIM, "a paged cache's boxes and gathered rows are whole lines");
    static_assert(FP8 || V_WIDTH % V_COLUMNS == 0, "whole V blocks");
    static_assert(!FP8 || (SPECIALIZED && HEAD_DIM % 64 == 0 && !PAGED),
                  "FP8: not paged, warp-specialized, head_dim 64, 128, 192 or 256");
    // NOTE: the wider tiles (16-bit, not paged) amortize each tile's fixed work (barriers, the row
    // max and sum, O's rescale) over more keys where the registers hold S and P of that many:
    // FlashAttention-3's choices (176 keys at head_dim 128, 112 at 192, 80 at 256; PERF_NOTES v14)
    // FP8 likewise: 160 keys at head_dim 64, 224 at 128 (FlashAttention-3's), 192 between
    static_assert(BLOCK_N == 64 || BLOCK_N == 128 ||
                      (!FP8 && !PAGED && (BLOCK_N == 80 || BLOCK_N == 112 || BLOCK_N == 176 || BLOCK_N == 192)) ||
                      (FP8 && (BLOCK_N == 160 || BLOCK_N == 192 || BLOCK_N == 224)) || (QUICK && BLOCK_N == 32),
                  "block_n 64 or 128 (WGMMA n64 / n128 for Q K^T); 16-bit, not paged: also 80, 112, 176, 192; "
                  "FP8: also 160, 192, 224; QUICK: also 32");
    static_assert(BLOCK_M == 64 || BLOCK_M == 128 || BLOCK_M == 192, "one to three warpgroups of 64 rows");
    static_assert(WARPS == 4 * CONSUMERS || SPECIALIZED, "4 warps per consumer warpgroup, plus 4 for a producer");
    static_assert(SPECIALIZED ? STAGES >= 2 && STAGES <= 4 : STAGES == 2, "2 stages (plain) or 2-4 (specialized)");
    static_assert(!PINGPONG || (SPECIALIZED && CONSUMERS >= 2), "ping-pong takes turns between consumers");
    static_assert(!PAGED || VARLEN, "a paged cache takes the per-sequence form");
    static_assert(!PERSISTENT || (SPECIALIZED && !VARLEN), "a persistent grid: dense, warp-specialized");
    static_assert(!PACK_GQA || (SPECIALIZED && !VARLEN && !PERSISTENT && !FP8),
                  "GQA-packed rows: dense, 16-bit, warp-specialized, a CTA a row block");
    // QUICK: the quick first call's kernel (src/family_sm90.c's quick_override), the plain schedule
    // written for NVRTC's time rather than its own: P V in WGMMAs of 64 columns (ptxas's time grows
    // faster than the accumulators of one WGMMA), O by 4-byte stores, and (the host's choice) 32-key
    // tiles: a fifth to a third less NVRTC time than the plain 64-key kernel at head_dim 128-256,
    // serving until the planned kernel is in (PERF_NOTES v37).
    static_assert(!QUICK || (!SPECIALIZED && !FP8 && !PAGED), "QUICK: the plain schedule, 16-bit, not paged");
    enum : int { PV_WIDTH = QUICK && V_COLUMNS == 64 ? 64 : V_WIDTH };   // P V's N a WGMMA
    static constexpr int TURN_BARRIER = 1;   // named barriers TURN_BARRIER + consumer: "your turn"
    // The consumers' key tiles with no masked key run a loop without mask code (unmasked_tiles_end),
    // where ptxas keeps the wait for P V(t - 1) after the row max and a share of the exponentials,
    // FlashAttention-3's place (PERF_NOTES v28.5). NOTE: not for three consumers taking turns (head_dim
    // 64's ping-pong kernels): there it lost 2-4.5% in 16-bit and 4-8% in FP8; elsewhere (H100,
    // PERF_NOTES v29.1) head_dim 128 +2.3% (16-bit, GQA +4%), three consumers without turns up to +4.8%,
    // head_dim 256 and FP8's two consumers 0 +- 1%. An enumerator (see PRODUCER_THREADS).
    enum : int { LOOP_SPLIT = CONSUMERS == 2 || !PINGPONG };
    // Consumers taking turns wait for V(t - 1) inside the turn, after Q K^T(t)'s issue and O's rescale
    // (V_WAIT_IN_TURN), FlashAttention-3's order (the SYNCS round trip off the turn's critical path); with
    // two, consumer 0 alone waits for a tile's K and V (TURN_WAITS, waits_for_data). H100: two consumers
    // both, PERF_NOTES v38.3, head_dim 128 +1.0% (GQA +0.8-2.0%), 256 and FP8 within the noise; three
    // consumers (head_dim 64) the moved wait alone, v39.3, 16-bit +0.5%, FP8 +0.9% on their rows in two
    // runs. NOTE: the skip not for three consumers (FP8 -7%, 16-bit -2.5% with it, v38.3), nor the moved
    // wait without turns (-4% at 2k and 16k keys). Enumerators (see PRODUCER_THREADS).
    enum : int { TURN_WAITS = PINGPONG && CONSUMERS == 2, V_WAIT_IN_TURN = PINGPONG };
    // NOTE: the consumers carry their ring position and build K's and V's descriptors from slot 0's
    // with two consumers only: three (head_dim 64) measured 1.2% slower so (PERF_NOTES v32.1), and
    // the plain schedule's single warpgroup was not measured. An enumerator (see PRODUCER_THREADS).
    enum : int { CARRIED_RING = CONSUMERS == 2 };
    // Where the loop is not split, the wait for P V(t - 1) after the max and the first quarter of tile
    // t's exponentials (OnlineSoftmax::update's hold: a consumer warpgroup meets on barrier
    // HOLD_BARRIER + group): ptxas otherwise moves it to the softmax's start, since P(t)'s conversion,
    // which must follow it (a WGMMA's input registers may not be written while a group is in flight,
    // ptxas C7513), is interleaved with the exponentials. NOTE: for three consumers taking turns
    // without a softcap, where it measured +1.4-6% from 4k keys (H100, PERF_NOTES v25.5). On the split
    // loop the holds lost: three consumers without turns -1.3% to -3.9%, head_dim 256's 80-key tiles
    // (held a warp a barrier since v26.7) 0 +- 1% (v29.2); FP8's three consumers held 0.980x and a
    // softcap's kernels -3% to +4% (v25.5, v26.2). Enumerators (see PRODUCER_THREADS).
    enum : int {
        HOLD_TILES = SPECIALIZED && !FP8 && !SOFTCAP && !LOOP_SPLIT ? N_TILES / 4 : 0,
        HOLD_BARRIER = TURN_BARRIER + CONSUMERS + 3,   // after the turns', the clears' and the gatherers'
    };
    static_assert(!HOLD_TILES || HOLD_BARRIER + CONSUMERS <= 16,
                  "the hold's named barriers, one a warpgroup, within the 16 a CTA has");
    // SCHEDULED (SCHEDULED_GRID: the host's choice, src/family_sm90.c's scheduled; a persistent causal
    // grid): the CTAs take their row blocks from a counter (run_scheduled); its slots of scheduled
    // blocks, and the threads that read each: the consumers, and FP8's producer threads but the
    // publisher (16-bit producers but the publisher have left). NOTE: enumerators (see PRODUCER_THREADS).
    enum : int {
        SCHEDULED = SCHEDULED_GRID,
        SCHED_SLOTS = 2,
        SCHED_READERS = CONSUMER_THREADS + (FP8 ? PRODUCER_THREADS - 1 : 0)
    };
    static_assert(!SCHEDULED || (PERSISTENT && CAUSAL), "a counter deals the row blocks of persistent causal grids");
    // STATIC_TAIL (the host's choice, src/family_sm90.c's static_tail_grid): a persistent causal grid
    // off the counter deals its last args.tail_heads (batch, head)s' blocks one a unit, heaviest first
    // (fc_args.h's fc_static_tail_rank); else its units are the pairs throughout (and no code
    // for the tail).
    static_assert(!STATIC_TAIL || (PERSISTENT && CAUSAL && !SCHEDULED), "the static tail: static causal grids");
    // V_TRANSPOSED (FP8, dense, the host's choice: src/family_sm90.c's transposes_ahead): the module's
    // second kernel has written V^T in P's key order (transpose_v_ahead, below) before this one runs;
    // the producer thread loads it by TMA into the V^T slots as it loads K (produce's load_transposed): no
    // staging ring, no transposes in shared memory.
    static_assert(!V_TRANSPOSED || (FP8 && !VARLEN && !PAGED && BLOCK_N >= 128),
                  "V^T from memory: FP8, dense, lines of 128 keys");
    // PINGPONG's turns go round continuously across row blocks (FlashAttention-3's order, turn_begin),
    // or restart at consumer 0 each block. NOTE: continuous only where it measured faster: causal
    // 16-bit head_dim 128 kernels of two consumers and 128 keys or more (H100: +1.1% over the 7 bf16
    // causal rows, +2.1-2.7% at 512 keys, GQA +0.1-1.3%, PERF_NOTES v27.4, as in v23.10); head_dim
    // 128 without a mask lost 1.5-5.8% from 4k keys, head_dim 64's three consumers and 256's 80-key
    // tiles moved -2% to +2% (v23.10), head_dim 96 causal -1.9% to +2.5%, 0.999x, and GQA-packed
    // few-query rows (head_dim 128, 16 x 4 rows against 16k keys) 185 us either way (v27.5); a scheduled
    // grid's consumers keep each block's turns. An enumerator (see PRODUCER_THREADS).
    enum : int {
        CONTINUOUS_TURNS = PINGPONG && CAUSAL && !FP8 && !PACK_GQA && !SCHEDULED && HEAD_DIM == 128 &&
                           CONSUMERS == 2 && BLOCK_N >= 128
    };
    // RESCALE_SLACK >= 0 (OnlineSoftmax::update's SLACK): a row's max moves only when a tile's exceeds
    // it by more than RESCALE_SLACK (log2 units: P reaches 2^8, in range for bf16 and fp16 and the
    // fp32 sums), and a warp whose rows' maxima all held skips O's rescale (rescale), FlashAttention-4's
    // lazy rescale: fewer instructions, less energy a tile at the board's power limit. NOTE: only
    // where it measured faster (H100, PERF_NOTES v27.6, v28.1, v28.4): the 16-bit warp-specialized
    // kernels of head_dim 64 and 256 (+2.0% and +3.3% over their f16 and bf16 rows, up to +7%) and
    // head_dim 128's of 128-key tiles (+0.8% to +2.6% on the sweep's rows that take them); with a
    // softcap, head_dim 64's (+0.7% to +2.5%) and 128's (+3.0%: 0.999-1.051 over 12 rows). Head_dim
    // 128's 192-key tiles lost 1-4% without a mask from 2k keys, head_dim 96's 128-key tiles 0.995x,
    // the plain schedule (one warpgroup, no producer) -1.3% to +0.5%. Not measured, so off: windows,
    // head_dim 256's softcaps (whose windowed kernels then spilled 24-32 bytes), varlen, paged and
    // GQA-packed rows. FP8 keeps it off: at head_dim 256 a slack of 2 (P's shift lowered to 6) ran
    // 1.031x, of 0.75 (the shift kept) 1.017x, but each moved the relative RMSE above FA3's fp8 on
    // every row (5.21% against 5.16% at 512 keys; main's equals FA3's), the issue's bar (v28.1).
    // FP8 at head_dim 256 takes a slack of 0: the max moves as without the rule, so the output is the
    // same bit for bit, and a warp skips only multiplications by exactly 1 (none of its rows' maxima
    // rose); the skip's branch also keeps the 128 multiplications out of the Q K^T issue, which ptxas
    // otherwise splits with them. NOTE: only there (H100, PERF_NOTES v30.2: 1.017x, up to 1.041x at 16k);
    // FP8 head_dim 64 lost (0.977x, the turns' rows 0.92-0.95x), 128 moved 0.94-1.03x by tile (0.989x;
    // with FA3's FP8 order, the rescale after P V's wait, 1.001x). An enumerator (see PRODUCER_THREADS).
    enum : int {
        RESCALE_SLACK = SPECIALIZED && FP8 && HEAD_DIM == 256 && !WINDOW && !VARLEN && !SOFTCAP ? 0
                        : SPECIALIZED && !FP8 && !WINDOW && !VARLEN && !PACK_GQA &&
                                (HEAD_DIM == 64 || (HEAD_DIM == 256 && !SOFTCAP) || (HEAD_DIM == 128 && BLOCK_N == 128))
                            ? 8
                            : -1
    };
    // FP8: P = 2^(S - (row max - 8)) <= 256 before its rounding to e4m3 (see the top comment)
    static constexpr float P_LOG2_SHIFT = 8.f;

    const fc_sm90_args &args;
    const fc_kernel_args &base;
    const KeyMask<CAUSAL, WINDOW, VARLEN> mask;
    float qk_descale = 1.f;   // FP8: the block's q_descale * k_descale (consume sets it)
    char *smem;   // 1024-byte aligned: Q, then K stages, then V stages
    int batch, head, kv_head, row0, warp, group;   // group: this thread's warpgroup
    int split;   // PACK_GQA: which of the row block's splits of its keys (0 of 1 unsplit)

    __device__ Sm90Forward(const fc_sm90_args &a, char *shared) : args(a), base(a.base), mask(a.base)
    {
        const unsigned address = smem_address(shared);
        smem = shared + (SWIZZLE_ALIGN - address % SWIZZLE_ALIGN) % SWIZZLE_ALIGN;
        BlockCoordinates c;
        split = 0;
        if constexpr (PACK_GQA) {
            c = packed_block_coordinates<CAUSAL>(base, block_rows());
            split = blockIdx.x % base.splits;
        } else {
            c = block_coordinates<CAUSAL>(base, BLOCK_M);
        }
        batch = c.batch;
        head = c.head;
        kv_head = c.kv_head;
        row0 = c.row0;
        warp = threadIdx.x / WARP_SIZE;
        // NOTE: through a shuffle, so that the compiler knows it warp-uniform and keeps Q's WGMMA
        // descriptors in uniform registers (CUTLASS's canonical_warp_group_idx): the 16 ordinary registers
        // they took let the 192-key loop keep its wait for P V(t - 1) after the max (PERF_NOTES v28.5).
        group = __shfl_sync(FULL_WARP, threadIdx.x / 128, 0);
    }

    // PERSISTENT: the row block this CTA computes next.
    __device__ __forceinline__ void set_block(const BlockCoordinates &c)
    {
        batch = c.batch;
        head = c.head;
        kv_head = c.kv_head;
        row0 = c.row0;
    }

    // PERSISTENT: the grid's units, unit `unit`'s row blocks, and row block `part` of it
    // (attention_common.cuh's persistent_units, unit_parts and tile_coordinates).
    __device__ __forceinline__ int unit_count() const
    {
        return persistent_units<CAUSAL, STATIC_TAIL>(base, args.tail_heads);
    }
    __device__ __forceinline__ int parts(int unit) const
    {
        return unit_parts<CAUSAL, STATIC_TAIL>(base, unit, args.tail_heads);
    }
    __device__ __forceinline__ void set_tile(int unit, int part)
    {
        set_block(tile_coordinates<CAUSAL, STATIC_TAIL>(base, BLOCK_M, unit, part, args.tail_heads));
    }

    // VARLEN: the same argument followed by the per-sequence lengths (fc_args.h).
    __device__ Sm90Forward(const fc_sm90_varlen_args &a, char *shared) : Sm90Forward(a.sm90, shared) {}
    // PAGED: ... and the page table (fc_args.h).
    __device__ Sm90Forward(const fc_sm90_paged_args &a, char *shared) : Sm90Forward(a.varlen.sm90, shared) {}

    // VARLEN: the argument's per-sequence lengths (args is the first member of a fc_sm90_varlen_args).
    __device__ __forceinline__ const fc_seqlens &seqlens() const
    {
        return reinterpret_cast<const fc_sm90_varlen_args &>(args).seqlens;
    }
    // PAGED: the argument's page table and box rows (args is the first member of a fc_sm90_paged_args).
    __device__ __forceinline__ const fc_sm90_paged_args &paged() const
    {
        return reinterpret_cast<const fc_sm90_paged_args &>(args);
    }

    __device__ __forceinline__ unsigned q_tile(int g = 0) const
    {
        return smem_address(smem) + g * COLUMN_BLOCKS * Q_BLOCK_BYTES;
    }
    __device__ __forceinline__ unsigned k_tile(int stage) const { return q_tile() + Q_BYTES + stage * KV_BYTES; }
    __device__ __forceinline__ unsigned v_tile(int stage) const
    {
        return k_tile(STAGES) + stage * (FP8 ? int(VT_BYTES) : KV_BYTES);   // FP8: V^T
    }
    // FP8: staging slot `slot` of V as TMA writes it, after the V^T slots.
    __device__ __forceinline__ unsigned vs_tile(int slot) const { return v_tile(STAGES) + slot * KV_BYTES; }

    // The same tiles as WGMMA reads them (ptx/wgmma.cuh's SmemTile): Q and K 128B-swizzled, K's and
    // V's blocks and atoms as the tile layout above puts them; V at head_dim 96 64B-swizzled.
    using QTile = SmemTile<SWIZZLE_BYTES, Q_BLOCK_BYTES, ATOM_BYTES>;
    using KTile = SmemTile<SWIZZLE_BYTES, KV_BLOCK_STRIDE, KV_ATOM_STRIDE>;
    using VTile = SmemTile<V_LINE_BYTES, V_EXACT ? int(V_BLOCK_BYTES) : int(KV_BLOCK_STRIDE),
                           V_EXACT ? 8 * int(V_LINE_BYTES) : int(KV_ATOM_STRIDE)>;
    __device__ __forceinline__ QTile q_smem(int g) const { return {q_tile(g)}; }
    __device__ __forceinline__ KTile k_smem(int stage) const { return {k_tile(stage)}; }
    __device__ __forceinline__ VTile v_smem(int stage) const { return {v_tile(stage)}; }
    // FP8: V^T as P V's K-major B operand (rows of head dims, VT_LINE permuted keys a line: 128 or 64
    // bytes, swizzled over the line's span, atoms of 8 lines; a column block per line of keys).
    using VtTile = SmemTile<VT_LINE, VT_BLOCK_BYTES, 8 * VT_LINE>;
    __device__ __forceinline__ VtTile vt_smem(int stage) const { return {v_tile(stage)}; }
    // The MMAs' descriptors of a K/V slot: CARRIED_RING, slot 0's plus the slot's offset (SmemRing);
    // else the slot's address encoded.
    __device__ __forceinline__ unsigned long long k_major(int stage, int block) const
    {
        return CARRIED_RING ? SmemRing<KTile, KV_BYTES>{k_smem(0)}.k_major(stage, block) : k_smem(stage).k_major(block);
    }
    __device__ __forceinline__ unsigned long long v_major(int stage) const
    {
        return CARRIED_RING ? SmemRing<VTile, KV_BYTES>{v_smem(0)}.mn_major(stage) : v_smem(stage).mn_major();
    }
    __device__ __forceinline__ unsigned long long vt_major(int stage, int block) const
    {
        return CARRIED_RING ? SmemRing<VtTile, VT_BYTES>{vt_smem(0)}.k_major(stage, block) : vt_smem(stage).k_major(block);
    }

    // PACK_GQA: the query rows a consumer warpgroup's 64 rows hold (each with its q_per_kv heads), and
    // the CTA's block's, from row0 (else BLOCK_M). NOTE: the other variants use BLOCK_M as they did:
    // through a function, its sums were reassociated in their PTX.
    __device__ __forceinline__ int group_rows() const { return 64 / base.q_per_kv; }
    __device__ __forceinline__ int block_rows() const { return CONSUMERS * group_rows(); }

    // PACK_GQA: this thread's row h (lane / 4 + 8 h of its warp's 16) as a query row and head, and
    // whether it is one (not one of the 64 mod q_per_kv unused rows, nor past seqlen_q).
    struct PackedRow {
        int row, head;
        bool inside;
    };
    __device__ __forceinline__ PackedRow packed_row(int h) const
    {
        const int r = base.q_per_kv, line = warp % 4 * 16 + threadIdx.x % WARP_SIZE / 4 + 8 * h;
        const int row = row0 + group * group_rows() + line / r;
        return {row, kv_head * r + line % r, line < group_rows() * r && row < base.seqlen_q};
    }

    // PACK_GQA split into several CTAs along the keys (split-KV, split_kv.cuh): each split's tiles,
    // counted from the row block's first (a split past the block's last has none).
    __device__ __forceinline__ int split_tiles() const { return base.split_keys / BLOCK_N; }

    // The first tile of keys this CTA sees (0 without a window or a split): its loops count tiles
    // from it.
    __device__ __forceinline__ int first_tile() const
    {
        if constexpr (PACK_GQA)
            return mask.key_begin(row0) / BLOCK_N + split * split_tiles();
        else
            return mask.key_begin(row0) / BLOCK_N;
    }
    // Whether the loops' tiles start at first_tile() rather than at tile 0 (an enum: a static
    // constexpr member gave every variant's PTX a constant symbol).
    enum : bool { OFFSET_TILES = WINDOW || PACK_GQA };
    // The first key of the loops' tile t is (first_tile() + t) * BLOCK_N. NOTE: written out where
    // it is used, and as t * BLOCK_N where the tiles start at 0: a helper for it, or first_tile()'s 0
    // folded late, reordered the PTX of the masking of the kernels without a window.

    // Keys this CTA sees, in tiles from first_tile(): whole tiles outside a window are skipped;
    // PACK_GQA split, at most its split's.
    __device__ __forceinline__ int key_tiles() const
    {
        int key_end;
        if constexpr (PACK_GQA)
            key_end = mask.key_end(row0 + block_rows());
        else
            key_end = mask.key_end(row0 + BLOCK_M);
        const int end_tile = key_end > 0 ? (key_end + BLOCK_N - 1) / BLOCK_N : 0;
        if constexpr (PACK_GQA) {
            const int tiles = max(0, end_tile - first_tile());
            return base.splits > 1 ? min(tiles, split_tiles()) : tiles;
        } else if constexpr (WINDOW) {
            return max(0, end_tile - first_tile());
        } else {
            return end_tile;
        }
    }

    // One thread: Q of every consumer warpgroup, on one barrier. VARLEN: from the sequence's first
    // token (origin); rows past its end bring other tokens (or zeros past the tensor), whose rows
    // of O are never written.
    __device__ __forceinline__ void load_q(unsigned bar, const SequenceTmaOrigin &origin = {})
    {
        if constexpr (PACK_GQA) {   // each warpgroup's group_rows() x q_per_kv lines, a box a column block
            mbarrier_arrive_expect_tx(bar, CONSUMERS * COLUMN_BLOCKS * group_rows() * base.q_per_kv * SWIZZLE_BYTES);
            for (int g = 0; g < CONSUMERS; g++)
                for (int j = 0; j < COLUMN_BLOCKS; j++)
                    tma_load_5d(q_tile(g) + j * Q_BLOCK_BYTES, reinterpret_cast<const TensorMap &>(args.q_map),
                                COLUMNS * j, 0, kv_head, row0 + g * group_rows(), batch, bar);
            return;
        }
        mbarrier_arrive_expect_tx(bar, Q_BYTES);
        for (int g = 0; g < CONSUMERS; g++)
            for (int j = 0; j < COLUMN_BLOCKS; j++)
                if constexpr (VARLEN)
                    tma_load_4d(q_tile(g) + j * Q_BLOCK_BYTES, reinterpret_cast<const TensorMap &>(args.q_map),
                                COLUMNS * j, origin.q_row0 + row0 + 64 * g, head, origin.batch, bar);
                else
                    tma_load_4d(q_tile(g) + j * Q_BLOCK_BYTES, reinterpret_cast<const TensorMap &>(args.q_map),
                                COLUMNS * j, row0 + 64 * g, head, batch, bar);
    }

    // One thread: K or V (map; V: its blocks, V_BLOCKS of V_COLUMNS) of tile t into the slot at
    // dst; rows past seqlen_k arrive as zeros (TMA out-of-bounds fill). VARLEN: the sequence's rows
    // (origin); rows past its keys bring whatever follows them (see clear_tail_rows).
    template <bool V = false>
    __device__ __forceinline__ void load_tile(const fc_tensor_map &map, unsigned dst, int t, unsigned bar,
                                              const SequenceTmaOrigin &origin = {})
    {
        constexpr int BLOCKS = V ? int(V_BLOCKS) : int(COLUMN_BLOCKS);
        constexpr int BLOCK_BYTES = V ? int(V_BLOCK_BYTES) : int(KV_BLOCK_BYTES);
        constexpr int WIDTH = V ? int(V_COLUMNS) : int(COLUMNS);
        if constexpr (PAGED) {
            load_paged_tile(map, dst, t, bar);
            return;
        }
        if constexpr (VARLEN) {
            const SequenceTmaRows rows{kv_head, origin.batch, origin.k_row0};
            for (int j = 0; j < BLOCKS; j++)
                rows.load(dst + j * BLOCK_BYTES, reinterpret_cast<const TensorMap &>(map), WIDTH * j,
                          OFFSET_TILES ? (first_tile() + t) * BLOCK_N : t * BLOCK_N, bar);
            return;
        }
        const StridedTmaRows rows{kv_head, batch};
        for (int j = 0; j < BLOCKS; j++)
            rows.load(dst + j * BLOCK_BYTES, reinterpret_cast<const TensorMap &>(map), WIDTH * j,
                      OFFSET_TILES ? (first_tile() + t) * BLOCK_N : t * BLOCK_N, bar);
    }

    // FP8, V_TRANSPOSED (one thread): V^T of tile t into the V^T slot at dst. Its map (src/family_sm90.c's
    // encode_transposed) is (keys, head dim, K/V head, batch), boxes of a line of 128 keys x HEAD_DIM
    // lines with the 128-byte swizzle: a box is a column block of the slot (vt_smem); keys past the
    // map's arrive as zeros.
    __device__ __forceinline__ void load_transposed(unsigned dst, int t, unsigned bar)
    {
        constexpr int BLOCKS = VT_BYTES / VT_BLOCK_BYTES;
        const int key0 = OFFSET_TILES ? (first_tile() + t) * BLOCK_N : t * BLOCK_N;
        for (int j = 0; j < BLOCKS; j++)
            tma_load_4d(dst + j * VT_BLOCK_BYTES, reinterpret_cast<const TensorMap &>(args.v_map), key0 + VT_LINE * j,
                        0, kv_head, batch, bar);
    }

    // PAGED, plain schedule (thread 0): every box of tile t into the slot at dst, each at its page,
    // looked up here (box i is rows [i * box_rows, (i + 1) * box_rows), every column block).
    __device__ __forceinline__ void load_paged_tile(const fc_tensor_map &map, unsigned dst, int t, unsigned bar)
    {
        const int box_rows = paged().box_rows, keys = mask.seqlen_k();
        const int key0 = OFFSET_TILES ? (first_tile() + t) * BLOCK_N : t * BLOCK_N;
        for (int i = 0; i * box_rows < BLOCK_N; i++) {
            const int key = key0 + i * box_rows;
            load_paged_box(map, dst, i, page_slot_if(key < keys, paged().pages, batch, key), bar, box_rows);
        }
    }

    // PAGED, gather: where row `row` of tile t lives in K or V (its strides), in elements from its
    // head's (page 0, slot 0) (row < BLOCK_N; rows past the sequence's keys: there).
    __device__ __forceinline__ long long row_offset(int t, int row, int keys, const long long *stride) const
    {
        const int key = (OFFSET_TILES ? (first_tile() + t) * BLOCK_N : t * BLOCK_N) + row;
        const PageSlot at = row < BLOCK_N && key < keys ? page_slot_ahead(paged().pages, batch, key) : PageSlot{0, 0};
        return at.page * stride[0] + at.slot * stride[1];
    }

    // PAGED, gather (warp-specialized): gatherer q's share of K or V (head_rows: its head's (page 0,
    // slot 0); the tile's rows at `offsets` from it) of tile t into the slot at dst, rows past the
    // sequence's keys zero-filled: 16-byte chunk q % 8 of rows q / 8 + 8 j of every column block,
    // copied to where a grouped TMA box puts it (row q / 8 of atom j of each block; chunk c of line
    // r at c ^ r % 8: the same for all of this thread's rows). A warp's copies are four whole
    // 128-byte lines. NOTE: each row's address is found once for all its column blocks, from its
    // offset found once for the tile; found per copy (and q signed, so every division a real one),
    // the producer's ~50 instructions a copy took the consumers' issue slots (0.50x the non-paged
    // run); with the page and slot multiplied out per row, ~20 a row (0.73x; PERF_NOTES v8.3).
    __device__ __forceinline__ void gather_tile(const T *head_rows, unsigned dst, int t, unsigned q,
                                                const long long *offsets, int keys)
    {
        constexpr int LINE_CHUNKS = SWIZZLE_BYTES / 16, ROWS_PER_PASS = GATHERERS / LINE_CHUNKS;
        static_assert(BLOCK_N % ROWS_PER_PASS == 0, "whole passes of the gatherers");
        static_assert(ROWS_PER_PASS == 8, "a pass is an atom's 8 rows: row0 + 8 j is row row0 of atom j");
        const int key0 = OFFSET_TILES ? (first_tile() + t) * BLOCK_N : t * BLOCK_N;
        const unsigned row0 = q / LINE_CHUNKS, chunk = q % LINE_CHUNKS;
        const unsigned to = dst + row0 * SWIZZLE_BYTES + (chunk ^ row0 % 8) * 16;   // (row0 + 8 j) % 8 = row0 % 8
#pragma unroll
        for (int j = 0; j < BLOCK_N / ROWS_PER_PASS; j++) {
            const int r = row0 + j * ROWS_PER_PASS;
            const T *from = head_rows + offsets[r] + chunk * E::PER_CHUNK;
            const bool valid = key0 + r < keys;
#pragma unroll
            for (int b = 0; b < COLUMN_BLOCKS; b++)
                cp_async_16(to + b * KV_BLOCK_STRIDE + j * KV_ATOM_STRIDE, from + b * COLUMNS, valid);
        }
    }

    // PAGED: whether K (v false) or V comes by gather_tile (its box rows 0) rather than TMA boxes.
    __device__ __forceinline__ bool gathered(bool v) const
    {
        if constexpr (PAGED)
            return (v ? paged().v_box_rows : paged().box_rows) == 0;
        else
            return false;
    }

    // Whether this consumer waits for a tile's K (v false) or V on its full barrier before its turn
    // uses them. With turns, consumer 0's turn on each tile of a block comes first (consume,
    // turn_begin) and waits for K(t) and V(t - 1); the other consumer's turn on the same tile begins
    // only after consumer 0's ended (a named barrier between them), so the data has landed and only
    // consumer 0 waits (TURN_WAITS). Gathered slots (PAGED's cp.async, the generic proxy) keep every
    // consumer's wait and its fence.
    __device__ __forceinline__ bool waits_for_data(bool v) const
    {
        return !TURN_WAITS || group == 0 || gathered(v);
    }

    // Waits for the slot's K or V (v; full barrier `bar`, phase); a gathered slot was written by
    // the generic proxy's cp.async, which WGMMA (the async proxy) reads only after this thread's fence.
    __device__ __forceinline__ void wait_full(unsigned bar, int phase, bool v) const
    {
        mbarrier_wait(bar, phase);
        if (gathered(v))
            fence_proxy_async();
    }

    // Thread 0 (plain schedule): K and V of tile t into its stage, on one barrier.
    __device__ __forceinline__ void load_kv(int t, unsigned bar, const SequenceTmaOrigin &origin = {})
    {
        const int stage = t % STAGES;
        mbarrier_arrive_expect_tx(bar, KV_BYTES + V_BYTES);
        load_tile(args.k_map, k_tile(stage), t, bar, origin);
        load_tile<true>(args.v_map, v_tile(stage), t, bar, origin);
    }

    // VARLEN, every consumer thread, once V of the CTA's last tile t has arrived in `stage`: its
    // rows past the sequence's last key hold whatever followed the sequence (another sequence's
    // tokens, zeros, or rows past seqused_k, which may be NaN). P is exactly 0 there, but 0 * NaN
    // is NaN in P V, so those rows become zeros first. Only the last tile can hold such rows: the
    // loops stop at key_end <= the sequence's keys, so every earlier tile lies inside it, and the
    // last one starts below key_end (valid >= 1). The condition is the CTA's (its lengths, its
    // tile), so every consumer thread takes the same branch and reaches the barrier. NOTE: 128B
    // swizzling permutes 16-byte chunks within a row's 128-byte line, so row r of a column block
    // is line r whatever the swizzle: zeroing whole lines needs no swizzle arithmetic.
    __device__ __forceinline__ void clear_tail_rows(int t, int stage)
    {
        const int key0 = OFFSET_TILES ? (first_tile() + t) * BLOCK_N : t * BLOCK_N;
        const int valid = mask.seqlen_k() - key0;   // the tile's rows inside the sequence
        if (valid >= BLOCK_N || gathered(true))   // gathered: those rows were zero-filled
            return;
        constexpr int LINE_CHUNKS = V_LINE_BYTES / 16, CHUNKS = V_BLOCKS * BLOCK_N * LINE_CHUNKS;
        const unsigned v = v_tile(stage);   // (V_BLOCKS x BLOCK_N lines of V_LINE_BYTES)
        for (int i = threadIdx.x; i < CHUNKS; i += CONSUMER_THREADS) {   // consumers are threads 0 ..
            const int line = i / LINE_CHUNKS;   // PAGED: grouped (8 lines of each column block in turn)
            const int row = PAGED ? line / (8 * COLUMN_BLOCKS) * 8 + line % 8 : line % BLOCK_N;
            if (row >= valid)
                st_shared_zero16(v + 16 * i);
        }
        // every writer orders its stores before WGMMA's (async proxy) reads, then all consumers
        // meet: after the barrier, no consumer's P V can read a line before it is zero. NOTE: a
        // named barrier of the consumers only, after the turn barriers (1 .. CONSUMERS); declared
        // here, not as a member, so that the PTX of dense variants gains no constant symbol.
        constexpr int CLEAR_BARRIER = TURN_BARRIER + CONSUMERS;
        fence_proxy_async();
        named_barrier_sync(CLEAR_BARRIER, CONSUMER_THREADS);
    }

    // O and the LSE of this thread's rows: VARLEN, only the sequence's rows (its others are other
    // tokens', or none), at its tokens (fresh reads of its lengths: nothing kept through the loop).
    // Of O, the head_dim columns (OUT_TILES): the tiles past them are padding.
    __device__ __forceinline__ void store(const float (&padded)[1][D_TILES][4], const OnlineSoftmax<1, N_TILES> &softmax)
    {
        const float(&o)[1][OUT_TILES][4] = reinterpret_cast<const float(&)[1][OUT_TILES][4]>(padded);
        if constexpr (PACK_GQA) {
            const PackedRow r0 = packed_row(0), r1 = packed_row(1);
            if (base.splits > 1)   // the combine writes O and the LSE
                store_head_partials(base, split, batch, {r0.head, r1.head}, {r0.row, r1.row}, {r0.inside, r1.inside}, o,
                                    softmax);
            else
                store_head_rows<T>(base, batch, {r0.head, r1.head}, {r0.row, r1.row}, {r0.inside, r1.inside}, o,
                                   softmax);
        } else if constexpr (VARLEN && FP8)   // O times v_descale (the sequence's)
            store_sequence_output<T, 1, OUT_TILES, N_TILES, false, true>(
                base, sequence_of<PAGED>(base, seqlens(), batch), batch, head, row0 + warp * 16, o, softmax,
                kv_descale(base.v_descale, base, batch, kv_head));
        else if constexpr (VARLEN)
            store_sequence_output<T, 1, OUT_TILES, N_TILES, false, false, QUICK>(
                base, sequence_of<PAGED>(base, seqlens(), batch), batch, head, row0 + warp * 16, o, softmax);
        else if constexpr (FP8)   // O times v_descale
            store_output<T, 1, OUT_TILES, N_TILES, false, true>(base, batch, head, row0 + warp * 16, o, softmax,
                                                                kv_descale(base.v_descale, base, batch, kv_head));
        else
            store_output<T, 1, OUT_TILES, N_TILES, false, false, QUICK>(base, batch, head, row0 + warp * 16, o, softmax);
    }

    // Issues S = Q K^T: K_STEPS k-steps; step k reads 32 bytes of column block k / STEPS_PER_BLOCK.
    __device__ __forceinline__ void qk_issue(float (&s)[1][N_TILES][4], int stage)
    {
        float(&d)[BLOCK_N / 2] = reinterpret_cast<float(&)[BLOCK_N / 2]>(s);
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < K_STEPS; k++) {
            const int block = k / STEPS_PER_BLOCK, step = STEP_DESCRIPTOR * (k % STEPS_PER_BLOCK);
            wgmma_ss<BLOCK_N, In>(d, q_smem(group).k_major(block) + step, k_major(stage, block) + step, k > 0);
        }
        wgmma_commit();
    }

    __device__ __forceinline__ void qk(float (&s)[1][N_TILES][4], int stage)
    {
        qk_issue(s, stage);
        wgmma_wait<0>();
        wgmma_fence_registers(reinterpret_cast<float(&)[BLOCK_N / 2]>(s));
    }

    // P as the A fragments of the P V k-steps (16 keys each; FP8, 32 keys in e4m3: k-step k's
    // fragment takes S tiles 4k .. 4k + 3 as they lie, so its byte c of 16 is key 2 (c / 4) + c % 2 +
    // 8 (c % 4 / 2) of those 16, the order transpose_v gives V^T's lines).
    __device__ __forceinline__ void p_fragments(unsigned (&a)[P_STEPS][4], const float (&p)[1][N_TILES][4])
    {
#pragma unroll
        for (int k = 0; k < P_STEPS; k++)
            if constexpr (FP8) {
                const float(&t)[N_TILES][4] = p[0];
                a[k][0] = f32x4_to_e4m3x4(t[4 * k][0], t[4 * k][1], t[4 * k + 1][0], t[4 * k + 1][1]);
                a[k][1] = f32x4_to_e4m3x4(t[4 * k][2], t[4 * k][3], t[4 * k + 1][2], t[4 * k + 1][3]);
                a[k][2] = f32x4_to_e4m3x4(t[4 * k + 2][0], t[4 * k + 2][1], t[4 * k + 3][0], t[4 * k + 3][1]);
                a[k][3] = f32x4_to_e4m3x4(t[4 * k + 2][2], t[4 * k + 2][3], t[4 * k + 3][2], t[4 * k + 3][3]);
            } else {
                p_fragment<T, N_TILES>(a[k], p[0], k);
            }
    }

    // Issues O += P V: BLOCK_N / 16 k-steps of 16 keys (2048 bytes of V rows each, across its
    // column blocks). a must stay unchanged until the group has completed.
    __device__ __forceinline__ void pv_issue(float (&o)[1][D_TILES][4], const unsigned (&a)[P_STEPS][4], int stage)
    {
        float(&d)[V_WIDTH / 2] = reinterpret_cast<float(&)[V_WIDTH / 2]>(o);
        if constexpr (FP8) {   // V^T K-major: k-step k is 32 bytes into the lines of column block k / VT_LINE_STEPS
            wgmma_fence_registers(d);
            wgmma_fence();
#pragma unroll
            for (int k = 0; k < P_STEPS; k++)
                wgmma_rs<V_WIDTH, In>(d, a[k], vt_major(stage, k / VT_LINE_STEPS) + STEP_DESCRIPTOR * (k % VT_LINE_STEPS));
        } else {
            const unsigned long long dv = v_major(stage);
            wgmma_fence_registers(d);
            wgmma_fence();
#pragma unroll
            for (int k = 0; k < BLOCK_N / 16; k++)
#pragma unroll
                for (int b = 0; b < V_WIDTH / PV_WIDTH; b++)   // QUICK: V's column block b, O's columns with it
                    wgmma_rs<PV_WIDTH, T>(reinterpret_cast<float(&)[PV_WIDTH / 2]>(d[PV_WIDTH / 2 * b]), a[k],
                                          dv + VTile::mn_step(k) + VTile::block_step(b));
        }
        wgmma_commit();
    }

    // After the wait for a P V group: O may be read, and P's registers reused.
    __device__ __forceinline__ void pv_retire(float (&o)[1][D_TILES][4], unsigned (&a)[P_STEPS][4])
    {
        wgmma_fence_registers(reinterpret_cast<float(&)[V_WIDTH / 2]>(o));
#pragma unroll
        for (int k = 0; k < P_STEPS; k++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                asm volatile("" : "+r"(a[k][i])::"memory");
    }

    // The scores' scale in log2 units (FP8: times q_descale * k_descale), and whether it goes into the
    // exponent (softmax_step's fold_scale: with a softcap, or a positive scale; else mask_tile applies it).
    __device__ __forceinline__ float qk_scale_log2() const
    {
        return FP8 ? base.scale_log2 * qk_descale : base.scale_log2;
    }
    __device__ __forceinline__ bool scale_folds() const { return SOFTCAP || qk_scale_log2() > 0.f; }

    // HOLD_TILES: a word a consumer thread, written, never read. NOTE: here, not in softmax_tile, whose
    // two instantiations (UNMASKED) would each have their own array: the 1 KiB more did not fit head_dim
    // 256's 80-key kernels while they held (CUDA_ERROR_INVALID_VALUE, PERF_NOTES v29.1).
    __device__ __forceinline__ static float *hold_sink()
    {
        __shared__ float words[CONSUMER_THREADS];
        return words;
    }

    // Masks tile t's scores where needed and turns them into P, giving the O correction. UNMASKED: the
    // caller knows the tile has no masked key and the scale folded (unmasked_tiles_end): no mask code.
    template <bool UNMASKED = false>
    __device__ __forceinline__ void softmax_tile(float (&s)[1][N_TILES][4], OnlineSoftmax<1, N_TILES> &softmax,
                                                 float (&correction)[1][2], int t)
    {
        // the scale goes into the exp2 FFMA (with a softcap, the cap's: the scale went into the tanh);
        // FP8: times q_descale * k_descale
        const float scale_log2 = qk_scale_log2();
        float softcap_scale = base.softcap_scale;
        if constexpr (FP8)
            softcap_scale *= qk_descale;
        const bool fold_scale = UNMASKED || scale_folds();
        const float factor = SOFTCAP ? base.softcap_log2 : fold_scale ? scale_log2 : 1.f;
        const float prescale = fold_scale ? 1.f : scale_log2;
        const int key0 = OFFSET_TILES ? (first_tile() + t) * BLOCK_N : t * BLOCK_N;
        bool masked = false;   // UNMASKED: the caller knows it is not
        if constexpr (!UNMASKED)
            masked = mask.partial(row0, row0 + (PACK_GQA ? block_rows() : BLOCK_M) - 1, key0, BLOCK_N);
        const float shift = FP8 ? P_LOG2_SHIFT : 0.f;
        float *const sink = hold_sink();
        const auto hold = [&](float partial_sum) {
            named_barrier_sync_after(HOLD_BARRIER + group, 128, smem_address(&sink[threadIdx.x % CONSUMER_THREADS]),
                                     partial_sum);
        };
        const auto mask_tile = [&](float(&scores)[1][N_TILES][4]) {
            if constexpr (PACK_GQA) {
                const int rows[1][2] = {{packed_row(0).row, packed_row(1).row}};
                mask_row_scores(scores, mask, rows, key0, masked, prescale);
            } else {
                mask_scores(scores, mask, row0 + warp * 16, key0, masked, prescale);
            }
        };
        softmax_step<SOFTCAP, HOLD_TILES, RESCALE_SLACK>(softmax, s, correction, factor, shift, softcap_scale,
                                                         masked, fold_scale, mask_tile, hold);
    }

    __device__ __forceinline__ static void zero(float (&o)[1][D_TILES][4])
    {
#pragma unroll
        for (int d = 0; d < D_TILES; d++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                o[0][d][i] = 0.f;
    }

    __device__ void run()
    {
        if constexpr (VARLEN) {
            // Every thread reads its sequence (the same few words) and thread 0 publishes its lengths
            // for the mask (with a CTA-wide sync). A block of the longest sequence's rows past this
            // one's end leaves here, before any mbarrier or copy exists: the test is the CTA's, so
            // the producer and every consumer leave together, and no TMA write can outlive the CTA.
            const Sequence seq = sequence_of<PAGED>(base, seqlens(), batch);
            publish_sequence_lengths(seq.len_q, seq.len_k);
            if (row0 >= seq.len_q)
                return;
        }
        if constexpr (SPECIALIZED)
            run_specialized();
        else
            run_plain();
    }

    __device__ void run_plain()
    {
        __shared__ __align__(8) unsigned long long q_barrier, kv_barriers[STAGES];
        const unsigned q_bar = smem_address(&q_barrier), kv_bar = smem_address(kv_barriers);
        const int tiles = key_tiles();

        if (threadIdx.x == 0) {
            mbarrier_init(q_bar, 1);
            for (int s = 0; s < STAGES; s++)
                mbarrier_init(kv_bar + 8 * s, 1);
            mbarrier_init_fence();
        }
        __syncthreads();
        SequenceTmaOrigin origin{};   // VARLEN: where the sequence's rows start (thread 0 loads)
        if constexpr (VARLEN)
            origin = sequence_tma_origin<PAGED>(seqlens(), batch);
        if (threadIdx.x == 0) {
            load_q(q_bar, origin);
            if (tiles > 0)
                load_kv(0, kv_bar, origin);
        }

        float o[1][D_TILES][4];
        zero(o);
        OnlineSoftmax<1, N_TILES> softmax;
        softmax.init();
        mbarrier_wait(q_bar, 0);   // also when no key is visible: no TMA write may outlive the CTA

        for (int t = 0; t < tiles; t++) {
            const int stage = t % STAGES;
            if (threadIdx.x == 0 && t + 1 < tiles)   // its stage was released by the barrier ending t - 1
                load_kv(t + 1, kv_bar + 8 * ((t + 1) % STAGES), origin);
            mbarrier_wait(kv_bar + 8 * stage, (t / STAGES) & 1);
            if constexpr (VARLEN)
                if (t == tiles - 1)   // no thread reads this stage's V before the clear's barrier
                    clear_tail_rows(t, stage);

            float s[1][N_TILES][4];
            qk(s, stage);
            float correction[1][2];
            softmax_tile(s, softmax, correction, t);
            rescale_output(o, correction);
            unsigned a[BLOCK_N / 16][4];   // all of P, live until the MMAs that read it have completed
            p_fragments(a, s);
            pv_issue(o, a, stage);
            wgmma_wait<0>();
            pv_retire(o, a);
            __syncthreads();   // every warp is done with this stage before TMA refills it
        }
        softmax.finish();
        store(o, softmax);
    }

    // Barriers of the specialized schedule: Q, then per slot K full, V full, K empty, V empty;
    // PERSISTENT, then Q empty (every consumer thread done with Q K^T of the block); FP8, then per
    // staging slot V staged (TMA's bytes), V unstaged (every producer thread done reading it);
    // SCHEDULED, then per slot of the scheduled blocks (run_scheduled) published, read. Slots are
    // taken in ring order: the ring's i-th tile goes to slot i % STAGES, its round i / STAGES (the
    // staging ring's: i % VS_STAGES, i / VS_STAGES).
    // A tile's place in the K/V ring as the consumers' loop carries it: its slot (stage) and the
    // parity of its round (the phase its full barriers complete). CARRIED_RING: those two, next() a
    // compare and selects; else the ring index, both divided out where used (next(i): the ring's
    // next tile, its index i). NOTE: without CARRIED_RING the loop takes every index from its count
    // (of(ring + t)), as it did before: one carried from tile to tile changed three consumers' code.
    struct RingPosition {
        unsigned carried_stage, carried_phase;   // CARRIED_RING
        int index;                               // else
        static __device__ __forceinline__ RingPosition of(int i)
        {
            if constexpr (CARRIED_RING)
                return {unsigned(i) % STAGES, unsigned(i) / STAGES & 1, 0};
            else
                return {0, 0, i};
        }
        __device__ __forceinline__ RingPosition next(int i) const
        {
            if constexpr (CARRIED_RING)
                return carried_stage + 1 == STAGES ? RingPosition{0, carried_phase ^ 1, 0}
                                                   : RingPosition{carried_stage + 1, carried_phase, 0};
            else
                return {0, 0, i};
        }
        __device__ __forceinline__ int stage() const { return CARRIED_RING ? int(carried_stage) : index % STAGES; }
        __device__ __forceinline__ int phase() const { return CARRIED_RING ? int(carried_phase) : index / STAGES & 1; }
    };

    struct Barriers {
        unsigned q, k_full, v_full, k_empty, v_empty, q_empty, vs_full, vs_empty, sched_full, sched_empty;
        __device__ __forceinline__ unsigned slot(unsigned first, int i) const { return first + 8 * (i % STAGES); }
        __device__ __forceinline__ unsigned slot(unsigned first, RingPosition at) const { return first + 8 * at.stage(); }
        __device__ __forceinline__ unsigned staging(unsigned first, int i) const { return first + 8 * (i % VS_STAGES); }
    };

    // The producer thread: Q, then K and V of every tile, each into its slot once every consumer
    // thread has released the tile that was there (round r waits for phase r - 1 of the slot).
    // ring: the ring's tiles before this block's (PERSISTENT; else 0). FP8, V_TRANSPOSED: V^T from
    // memory into the V^T slots (load_transposed).
    __device__ __forceinline__ void produce(const Barriers &b, int tiles, int ring = 0)
    {
        SequenceTmaOrigin origin{};   // VARLEN: where the sequence's rows start
        if constexpr (VARLEN)
            origin = sequence_tma_origin<PAGED>(seqlens(), batch);
        load_q(b.q, origin);
        for (int t = 0; t < tiles; t++) {
            // NOTE: t itself without PERSISTENT: ring + t with ring 0 moved other variants' branches
            const int i = PERSISTENT ? ring + t : t, stage = i % STAGES, round = i / STAGES;
            if (round > 0)
                mbarrier_wait(b.slot(b.k_empty, i), (round - 1) & 1);
            mbarrier_arrive_expect_tx(b.slot(b.k_full, i), KV_BYTES);
            load_tile(args.k_map, k_tile(stage), t, b.slot(b.k_full, i), origin);
            if (round > 0)
                mbarrier_wait(b.slot(b.v_empty, i), (round - 1) & 1);
            mbarrier_arrive_expect_tx(b.slot(b.v_full, i), V_TRANSPOSED ? int(VT_BYTES) : int(V_BYTES));
            if constexpr (V_TRANSPOSED)
                load_transposed(v_tile(stage), t, b.slot(b.v_full, i));
            else
                load_tile<true>(args.v_map, v_tile(stage), t, b.slot(b.v_full, i), origin);
        }
    }

    // FP8: producer thread p (of 128) transposes its share of the staged V tile at src (K's layout:
    // BLOCK_N rows of keys, 128-byte lines of head dims, column blocks KV_BLOCK_BYTES apart) into the
    // V^T slot at dst (HEAD_DIM rows of VT_LINE keys a column block, swizzled over their 128- or
    // 64-byte lines: P V's K-major B operand). The tile is slots of 32 keys x steps of 16 head dims,
    // an equal share for every warp: warp w takes slot 4 q + w of each whole round of four slots,
    // every step, then steps w * SPAN .. w * SPAN + SPAN - 1 of each slot left (64-key tiles: both;
    // 160 keys: one; 224: three). A step: ldmatrix.trans reads four 8-key x 16-byte blocks (one
    // 16-byte chunk of each of its lanes' rows), which leaves thread t (q = t % 4, c = t / 4)
    // holding dims 2c and 2c + 1 of keys 2q, 2q + 1 (and + 8) of each 16; two prmt a 16 keys make
    // dim rows of them in the order 2q, 2q + 1, 2q + 8, 2q + 9: word q of each 16 keys of a V^T line
    // is those four keys, as p_fragments' P expects; stmatrix writes the eight rows 2c (and 2c + 1)
    // of the step's 16 as its four 8-row x 16-byte matrices. The loads touch every bank once (8
    // rows, chunk j ^ row % 8); the stores twice (rows 2c: row % 8 takes 4 values).
    __device__ __forceinline__ void transpose_v(unsigned src, unsigned dst, unsigned p) const
    {
        constexpr int SLOTS = BLOCK_N / 32, SLOTS_PER_LINE = VT_LINE / 32, ROUNDS = SLOTS / 4;
        constexpr int STEPS = HEAD_DIM / 16, SPAN = STEPS / 4;
        static_assert(BLOCK_N % 32 == 0 && STEPS % 4 == 0, "whole slots, whole steps for every warp");
        const unsigned w = p / WARP_SIZE % 4, lane = p % WARP_SIZE, r = lane % 8;   // % 4: p < 128, said to ptxas
        // ldmatrix: lane l gives the row of key 32 s + l. stmatrix: lane l gives row 2 (l % 8) + l / 8 % 2
        // of the step's 16 (+ 16 j), in the chunk of keys 32 s + 16 (l / 16) of its line, 2 (s %
        // SLOTS_PER_LINE) + l / 16, at that ^ (row % 8) (128-byte lines) or ^ (row / 2 % 4) (64-byte);
        // 2 (s % ...) has no bit 0, so the XOR splits into the lane's part and the slot's.
        const unsigned from = src + lane * SWIZZLE_BYTES, row = 2 * r + lane / 8 % 2;
        const unsigned to = dst + row * VT_LINE, lane_chunk = lane / 16 ^ (VT_LINE == 128 ? row % 8 : row / 2 % 4);
        // step j (dims 16 j .. 16 j + 15: chunk j % 8 of column block j / 8) of the slot whose rows
        // start at `load`, into the line chunk `chunk` of the column block at `store`
        const auto step = [&](unsigned load, unsigned store, unsigned chunk, unsigned j) {
            unsigned x[4], y[4];
            ldmatrix_x4_trans(x, load + j / 8 * KV_BLOCK_BYTES + (((j % 8) ^ r) << 4));
            y[0] = __byte_perm(x[0], x[1], 0x6420);   // row 2c, keys of 16 (the slot's first)
            y[1] = __byte_perm(x[0], x[1], 0x7531);   // row 2c + 1
            y[2] = __byte_perm(x[2], x[3], 0x6420);   // row 2c, the next 16 keys
            y[3] = __byte_perm(x[2], x[3], 0x7531);
            stmatrix_x4(store + j * 16 * VT_LINE + (chunk << 4), y);
        };
#pragma unroll
        for (int q = 0; q < ROUNDS; q++) {   // 128-byte lines: round q is column block q
            const unsigned slot = 4 * q + w;
#pragma unroll
            for (int j = 0; j < STEPS; j++)
                step(from + 32 * slot * SWIZZLE_BYTES, to + q * VT_BLOCK_BYTES, 2 * w ^ lane_chunk, j);
        }
#pragma unroll
        for (int i = 0; i < SPAN; i++)
#pragma unroll
            for (int s = 4 * ROUNDS; s < SLOTS; s++)
                step(from + 32 * s * SWIZZLE_BYTES, to + s / SLOTS_PER_LINE * VT_BLOCK_BYTES,
                     2 * (s % SLOTS_PER_LINE) ^ lane_chunk, w * SPAN + i);
    }

    // FP8: the producer warpgroup (thread p of 128). Thread 0 loads Q, then K and staged V a tile
    // ahead of the transposes (K into its slot once the consumers released it, V into a staging slot
    // once the transposes of the tile VS_STAGES before are done); every thread then transposes its
    // share of tile t into the V^T slot once the consumers released it, fences the proxies (WGMMA
    // reads what ordinary stores wrote) and arrives on the slot's full barrier and the staging slot's
    // empty one. ring: as produce's.
    // VARLEN: from the sequence's rows (origin), as load_tile's.
    __device__ __forceinline__ void load_kv_fp8(const Barriers &b, int t, int i, const SequenceTmaOrigin &origin)
    {
        const int round = i / STAGES, staged = i / VS_STAGES;
        if (round > 0)
            mbarrier_wait(b.slot(b.k_empty, i), (round - 1) & 1);
        mbarrier_arrive_expect_tx(b.slot(b.k_full, i), KV_BYTES);
        load_tile(args.k_map, k_tile(i % STAGES), t, b.slot(b.k_full, i), origin);
        if (staged > 0)
            mbarrier_wait(b.staging(b.vs_empty, i), (staged - 1) & 1);
        mbarrier_arrive_expect_tx(b.staging(b.vs_full, i), KV_BYTES);
        load_tile(args.v_map, vs_tile(i % VS_STAGES), t, b.staging(b.vs_full, i), origin);
    }

    // FP8, VARLEN, producer thread p, once staged V of the CTA's last tile t has arrived at src: its
    // rows past the sequence's keys (other tokens, NaN allowed: see clear_tail_rows, the 16-bit
    // kernels' form of this) become zeros before the transpose reads them, then the producer
    // warpgroup meets (the transposes read other threads' lines). The condition is the CTA's. The
    // staged tile is K's layout (column blocks of BLOCK_N 128-byte lines): row r of a block is line r
    // whatever the swizzle. The producer's fence before its V^T arrival also orders these stores
    // before the next TMA write into the slot.
    __device__ __forceinline__ void clear_staged_tail(int t, unsigned src, unsigned p)
    {
        const int key0 = OFFSET_TILES ? (first_tile() + t) * BLOCK_N : t * BLOCK_N;
        const int valid = mask.seqlen_k() - key0;   // the tile's rows inside the sequence
        if (valid >= BLOCK_N)
            return;
        constexpr int LINE_CHUNKS = SWIZZLE_BYTES / 16, CHUNKS = COLUMN_BLOCKS * BLOCK_N * LINE_CHUNKS;
        for (int i = p; i < CHUNKS; i += PRODUCER_THREADS)
            if (i / LINE_CHUNKS % BLOCK_N >= valid)
                st_shared_zero16(src + 16 * i);
        constexpr int STAGED_CLEAR_BARRIER = TURN_BARRIER + CONSUMERS + 1;   // after the consumers' (clear_tail_rows)
        named_barrier_sync(STAGED_CLEAR_BARRIER, PRODUCER_THREADS);
    }

    __device__ __forceinline__ void produce_fp8(const Barriers &b, int tiles, int ring, unsigned p,
                                                const SequenceTmaOrigin &origin = {})
    {
        if constexpr (V_TRANSPOSED) {   // thread 0 alone, as in 16 bits
            if (p == 0)
                produce(b, tiles, ring);
            return;
        }
        if (p == 0) {
            load_q(b.q, origin);
            if (tiles > 0)
                load_kv_fp8(b, 0, ring, origin);
        }
        for (int t = 0; t < tiles; t++) {
            const int i = ring + t, round = i / STAGES;
            if (p == 0 && t + 1 < tiles)
                load_kv_fp8(b, t + 1, i + 1, origin);
            mbarrier_wait(b.staging(b.vs_full, i), (i / VS_STAGES) & 1);
            if constexpr (VARLEN)
                if (t == tiles - 1)
                    clear_staged_tail(t, vs_tile(i % VS_STAGES), p);
            if (round > 0)
                mbarrier_wait(b.slot(b.v_empty, i), (round - 1) & 1);
            transpose_v(vs_tile(i % VS_STAGES), v_tile(i % STAGES), p);
            fence_proxy_async();
            mbarrier_arrive(b.slot(b.v_full, i));
            mbarrier_arrive(b.staging(b.vs_empty, i));
        }
    }

    // PAGED, gather: the producer warpgroup, as produce, in two halves of GATHERERS threads, one for
    // K and one for V, each on its own: every thread of a half waits for its tensor's slot, copies its
    // share of the tile and arrives on the slot's barrier when its copies have landed. Each half looks
    // the tile's rows up once, BLOCK_N / GATHERERS rows a thread, a tile ahead (the table reads in
    // flight while the tile before is copied), and shares them through `offsets` as offsets into its
    // tensor. NOTE: each copy reading its own row's table entry left the producer waiting on L2 four
    // times a tile (0.25x the non-paged run); one producer for K then V left K's copies waiting behind
    // V's slot (PERF_NOTES v8.3).
    __device__ __forceinline__ void produce_gathered(const Barriers &b, int tiles, bool v, unsigned q)
    {
        __shared__ long long offsets[2][BLOCK_N];   // K's and V's rows of the tiles being copied (src/family_sm90.c counts them)
        constexpr int ROWS = BLOCK_N / GATHERERS;
        static_assert(BLOCK_N % GATHERERS == 0, "whole rows for every gatherer");
        const int keys = mask.seqlen_k(), half_barrier = TURN_BARRIER + CONSUMERS + 1 + v;
        const long long *stride = v ? base.v_stride : base.k_stride;
        const T *head_rows = static_cast<const T *>(v ? base.v : base.k) + kv_head * stride[2];
        const unsigned full = v ? b.v_full : b.k_full, empty = v ? b.v_empty : b.k_empty;
        const unsigned tile0 = v ? v_tile(0) : k_tile(0);
        long long next[ROWS];
#pragma unroll
        for (int i = 0; i < ROWS; i++)
            next[i] = row_offset(0, q + i * GATHERERS, keys, stride);
        for (int t = 0; t < tiles; t++) {
            const int stage = t % STAGES, round = t / STAGES;
            named_barrier_sync(half_barrier, GATHERERS);   // the half has read the last tile's rows
#pragma unroll
            for (int i = 0; i < ROWS; i++)
                offsets[v][q + i * GATHERERS] = next[i];
            named_barrier_sync(half_barrier, GATHERERS);
            if (t + 1 < tiles)
#pragma unroll
                for (int i = 0; i < ROWS; i++)
                    next[i] = row_offset(t + 1, q + i * GATHERERS, keys, stride);
            if (round > 0)
                mbarrier_wait(b.slot(empty, t), (round - 1) & 1);
            gather_tile(head_rows, tile0 + stage * KV_BYTES, t, q, offsets[v], keys);
            cp_async_mbarrier_arrive_noinc(b.slot(full, t));
        }
    }

    // PAGED, TMA boxes: box `box` of tile t (its page at `at`) into the slot at dst, every column
    // block in one copy.
    __device__ __forceinline__ void load_paged_box(const fc_tensor_map &map, unsigned dst, int box, const PageSlot &at,
                                                   unsigned bar, int box_rows)
    {
        const PagedTmaRows rows{kv_head, COLUMN_BLOCKS};
        rows.load(dst + box * box_rows / 8 * KV_ATOM_STRIDE, reinterpret_cast<const TensorMap &>(map), at, bar);
    }

    // PAGED, TMA boxes: a producer warp for K (v false) or V, as produce: every lane waits for the
    // tensor's slot, lane 0 expects its bytes, and lane i issues box i of the tile (a tile has at
    // most BLOCK_N / 8 <= 16) at the page it looked up a tile ahead. NOTE: looked up at the copy,
    // the table read sat in every tile's load: one box a tile ran at 0.94x the non-paged kernel,
    // the varlen one at 0.98x (PERF_NOTES v8.4).
    __device__ __forceinline__ void produce_paged(const Barriers &b, int tiles, bool v, int lane)
    {
        const int box_rows = v ? paged().v_box_rows : paged().box_rows, keys = mask.seqlen_k();
        const bool boxing = lane * box_rows < BLOCK_N;   // this lane has a box of every tile
        const auto box_page = [&](int t) {
            const int key = (OFFSET_TILES ? (first_tile() + t) * BLOCK_N : t * BLOCK_N) + lane * box_rows;
            return boxing && key < keys ? page_slot_ahead(paged().pages, batch, key) : PageSlot{0, 0};
        };
        const unsigned full = v ? b.v_full : b.k_full, empty = v ? b.v_empty : b.k_empty;
        const unsigned tile0 = v ? v_tile(0) : k_tile(0);
        const fc_tensor_map &map = v ? args.v_map : args.k_map;
        PageSlot next = box_page(0);
        for (int t = 0; t < tiles; t++) {
            const int stage = t % STAGES, round = t / STAGES;
            const PageSlot at = next;
            if (t + 1 < tiles)
                next = box_page(t + 1);
            if (round > 0)
                mbarrier_wait(b.slot(empty, t), (round - 1) & 1);
            if (lane == 0)
                mbarrier_arrive_expect_tx(b.slot(full, t), KV_BYTES);
            __syncwarp();
            if (boxing)
                load_paged_box(map, tile0 + stage * KV_BYTES, lane, at, b.slot(full, t), box_rows);
        }
    }

    // Ping-pong: consumer c issues its GEMMs only in its turn, then passes the turn to c + 1, so
    // that one warpgroup's softmax runs while the next one's GEMMs have the tensor cores. Each
    // block's turns start afresh (consume): every consumer takes tiles + 1 turns; the last one in
    // the ring does not pass its final turn on, so that every barrier sees as many arrivals as
    // waits. CONTINUOUS_TURNS: the turns go round block after block; every consumer takes a block's
    // `tiles` turns (Q K^T(0), then Q K^T(t) with P V(t - 1)), its final P V outside them, so that
    // consumer 0 starts the next block once the last consumer has issued its last Q K^T of this one,
    // not once it has stored its O. One token goes round the ring: turns_open puts it at consumer 0
    // before the CTA's first block; every consumer taking as many turns, it is back there after the
    // last, where turns_close takes it (no barrier is arrived at twice unseen: c - 1's next arrival
    // at c's barrier needs a turn of c's in between).
    __device__ __forceinline__ void turn_begin() const
    {
        if constexpr (PINGPONG)
            named_barrier_sync(TURN_BARRIER + group, 256);
    }
    __device__ __forceinline__ void turn_end(bool last) const
    {
        if constexpr (PINGPONG)
            if (!last || group != CONSUMERS - 1)   // CONTINUOUS_TURNS: never last (no final turn)
                named_barrier_arrive(TURN_BARRIER + (group + 1) % CONSUMERS, 256);
    }
    __device__ __forceinline__ void turns_open() const
    {
        if constexpr (CONTINUOUS_TURNS)
            if (group == CONSUMERS - 1)
                named_barrier_arrive(TURN_BARRIER, 256);
    }
    __device__ __forceinline__ void turns_close() const
    {
        if constexpr (CONTINUOUS_TURNS)
            if (group == 0)
                named_barrier_sync(TURN_BARRIER, 256);
    }

    // The key tiles before this one have no masked key for any of the block's rows, and the scale folds
    // into the exponent: the consumers' loop runs them without mask code (consume), so that ptxas keeps
    // the wait for P V(t - 1) after the row max and a share of the exponentials, where FlashAttention-3's
    // masking-free loop has it (PERF_NOTES v28.5). Without a window, a tile is unmasked iff all its
    // keys are below the block's first row's key_end (KeyMask::partial); windows: 1 (their first
    // tiles may be masked too).
    __device__ __forceinline__ int unmasked_tiles_end() const
    {
        if constexpr (WINDOW) {
            return 1;
        } else {
            if (!scale_folds())
                return 1;
            const int end = mask.key_end(row0 + 1);
            if constexpr (PACK_GQA)   // tiles counted from first_tile()
                return max(0, end / BLOCK_N - first_tile());
            else
                return end > 0 ? end / BLOCK_N : 0;
        }
    }

    // O times its rows' corrections; with RESCALE_SLACK, not by a warp whose every correction is 1
    // (its rows' maxima held: a warp-uniform branch).
    __device__ __forceinline__ static void rescale(float (&o)[1][D_TILES][4], const float (&correction)[1][2])
    {
        if constexpr (RESCALE_SLACK >= 0)
            if (!__any_sync(FULL_WARP, correction[0][0] != 1.f || correction[0][1] != 1.f))
                return;
        rescale_output(o, correction);
    }

    // PERSISTENT, if `done`: this consumer thread is done with Q of the block (its last Q K^T has
    // completed): the producer may load the next block's. NOTE: the test too only where PERSISTENT
    // (a test of nothing still moved other variants' branches).
    __device__ __forceinline__ void release_q_if(bool done, const Barriers &b) const
    {
        if constexpr (PERSISTENT)
            if (done)
                mbarrier_arrive(b.q_empty);
    }

    // A consumer warpgroup: Q K^T(t) and P V(t - 1) in flight together, the softmax of tile t
    // computed while P V(t - 1) runs; O takes the correction of tile t - 1 while Q K^T(t) runs.
    // ring: the ring's tiles before this block's, block: the CTA's blocks before it (PERSISTENT;
    // else 0 and 0). With ping-pong, each block's turns start afresh, consumer 0 first: the last
    // consumer's go-ahead for the next block comes after its final turn of this one, which waited
    // for every other consumer's final turn, so no turn barrier is arrived at twice unseen; with
    // CONTINUOUS_TURNS, between the role's turns_open and turns_close, the final P V takes no turn.
    __device__ __forceinline__ void consume(const Barriers &b, int tiles, int ring = 0, int block = 0)
    {
        float o[1][D_TILES][4];
        zero(o);
        OnlineSoftmax<1, N_TILES> softmax;
        softmax.init();
        if constexpr (FP8)
            qk_descale = kv_descale(base.q_descale, base, batch, kv_head) * kv_descale(base.k_descale, base, batch, kv_head);
        mbarrier_wait(b.q, block & 1);   // also when no key is visible: no TMA write may outlive the CTA
        release_q_if(tiles == 0, b);
        if (tiles > 0) {
            float s[1][N_TILES][4], correction[1][2];
            unsigned a[P_STEPS][4];   // P of the tile before
            if (PINGPONG && !CONTINUOUS_TURNS && group == CONSUMERS - 1)
                named_barrier_arrive(TURN_BARRIER, 256);   // consumer 0 goes first
            RingPosition at = RingPosition::of(ring);   // tile t's place (the loop carries it)
            if (waits_for_data(false))
                wait_full(b.slot(b.k_full, at), at.phase(), false);
            turn_begin();
            qk_issue(s, at.stage());
            turn_end(false);
            wgmma_wait<0>();
            wgmma_fence_registers(reinterpret_cast<float(&)[BLOCK_N / 2]>(s));
            mbarrier_arrive(b.slot(b.k_empty, at));
            release_q_if(tiles == 1, b);
            softmax_tile(s, softmax, correction, 0);   // O is 0: its correction changes nothing
            p_fragments(a, s);
            const auto step = [&](int t, bool unmasked) {   // inlined with a constant `unmasked`
                const int i = ring + t;
                const RingPosition previous = at;
                at = at.next(i);
                // tile t - 1's (NOTE: a call at each use, as the index's slot and phase were)
                const auto before = [&] { return CARRIED_RING ? previous : RingPosition::of(i - 1); };
                if (waits_for_data(false))
                    wait_full(b.slot(b.k_full, at), at.phase(), false);
                const auto wait_v = [&] {   // V(t - 1): before the turn, or (V_WAIT_IN_TURN) inside it
                    if (waits_for_data(true))
                        wait_full(b.slot(b.v_full, before()), before().phase(), true);
                };
                if constexpr (!V_WAIT_IN_TURN)
                    wait_v();
                turn_begin();
                qk_issue(s, at.stage());
                rescale(o, correction);
                if constexpr (V_WAIT_IN_TURN)
                    wait_v();
                pv_issue(o, a, before().stage());
                turn_end(false);
                wgmma_wait<1>();   // Q K^T(t) is done, P V(t - 1) may still run
                wgmma_fence_registers(reinterpret_cast<float(&)[BLOCK_N / 2]>(s));
                mbarrier_arrive(b.slot(b.k_empty, at));
                release_q_if(t == tiles - 1, b);
                if (unmasked)
                    softmax_tile<true>(s, softmax, correction, t);
                else
                    softmax_tile<false>(s, softmax, correction, t);
                wgmma_wait<0>();
                pv_retire(o, a);
                mbarrier_arrive(b.slot(b.v_empty, before()));
                p_fragments(a, s);
            };
            const int unmasked_end = LOOP_SPLIT ? min(tiles, unmasked_tiles_end()) : 1;
            int t = 1;
            for (; t < unmasked_end; t++)
                step(t, true);
            for (; t < tiles; t++)
                step(t, false);
            if constexpr (!CARRIED_RING)
                at = RingPosition::of(ring + tiles - 1);   // the last tile's (CARRIED_RING: at is)
            wait_full(b.slot(b.v_full, at), at.phase(), true);
            // VARLEN: before this consumer's turn. NOTE: no deadlock with ping-pong: every consumer
            // has taken its turns of the loop (each needs only the previous consumer's turn of the
            // same tile, passed before that one got here), and the final turns come after the clear.
            if constexpr (VARLEN && !FP8)   // FP8: the producer cleared staged V (clear_staged_tail)
                clear_tail_rows(tiles - 1, at.stage());
            if constexpr (!CONTINUOUS_TURNS)
                turn_begin();
            rescale(o, correction);
            pv_issue(o, a, at.stage());
            if constexpr (!CONTINUOUS_TURNS)
                turn_end(true);
            wgmma_wait<0>();
            pv_retire(o, a);
            if constexpr (PERSISTENT)   // the slot is free for the ring's next tile
                mbarrier_arrive(b.slot(b.v_empty, at));
        }
        softmax.finish();
        store(o, softmax);
    }

    __device__ void run_specialized()
    {
        __shared__ __align__(8) unsigned long long
            barriers[1 + 4 * STAGES + PERSISTENT + (FP8 ? 2 * VS_STAGES : 0) + (SCHEDULED ? 2 * SCHED_SLOTS : 0)];
        Barriers b;
        b.q = smem_address(barriers);
        b.k_full = b.q + 8;
        b.v_full = b.k_full + 8 * STAGES;
        b.k_empty = b.v_full + 8 * STAGES;
        b.v_empty = b.k_empty + 8 * STAGES;
        b.q_empty = b.v_empty + 8 * STAGES;   // PERSISTENT only
        b.vs_full = b.q_empty + 8 * PERSISTENT;   // FP8 only
        b.vs_empty = b.vs_full + 8 * VS_STAGES;
        b.sched_full = b.vs_full + (FP8 ? 16 * VS_STAGES : 0);   // SCHEDULED only
        b.sched_empty = b.sched_full + 8 * SCHED_SLOTS;
        const int tiles = key_tiles();         // PERSISTENT: each block's, in run_persistent
        if (threadIdx.x == 0) {
            mbarrier_init(b.q, 1);
            if constexpr (PERSISTENT)
                mbarrier_init(b.q_empty, CONSUMER_THREADS);
            for (int s = 0; s < STAGES; s++) {   // filled by a TMA thread, or the gatherers (FP8 V^T: the transposers)
                mbarrier_init(b.k_full + 8 * s, gathered(false) ? GATHERERS : 1);
                mbarrier_init(b.v_full + 8 * s, FP8 && !V_TRANSPOSED ? PRODUCER_THREADS : gathered(true) ? GATHERERS : 1);
                mbarrier_init(b.k_empty + 8 * s, CONSUMER_THREADS);
                mbarrier_init(b.v_empty + 8 * s, CONSUMER_THREADS);
            }
            if constexpr (FP8)
                for (int s = 0; s < VS_STAGES; s++) {
                    mbarrier_init(b.vs_full + 8 * s, 1);
                    mbarrier_init(b.vs_empty + 8 * s, PRODUCER_THREADS);
                }
            if constexpr (SCHEDULED)
                for (int s = 0; s < SCHED_SLOTS; s++) {
                    mbarrier_init(b.sched_full + 8 * s, 1);
                    mbarrier_init(b.sched_empty + 8 * s, SCHED_READERS);
                }
            mbarrier_init_fence();
        }
        __syncthreads();   // the last CTA-wide barrier: the warpgroups run apart from here on
        if constexpr (PERSISTENT) {
            run_persistent(b);
            return;
        }
        if (group == CONSUMERS) {   // the producer warpgroup: one thread issues (PAGED: one warp), the rest leave
            registers_release<PRODUCER_REGISTERS>();
            if constexpr (FP8) {   // every thread transposes V
                SequenceTmaOrigin origin{};   // VARLEN: where the sequence's rows start
                if constexpr (VARLEN)
                    origin = sequence_tma_origin<PAGED>(seqlens(), batch);
                produce_fp8(b, tiles, 0, threadIdx.x - CONSUMER_THREADS, origin);
                return;
            }
            if constexpr (PAGED) {   // threads 0-63 of the warpgroup load K, 64-127 V
                const unsigned p = threadIdx.x - CONSUMER_THREADS, q = p % GATHERERS;
                const bool v = p >= GATHERERS;
                if (p == 0)
                    load_q(b.q, sequence_tma_origin<PAGED>(seqlens(), batch));
                if (gathered(v))
                    produce_gathered(b, tiles, v, q);
                else if (q < WARP_SIZE)
                    produce_paged(b, tiles, v, q);
            } else if (threadIdx.x == CONSUMER_THREADS) {
                produce(b, tiles);
            }
            return;
        }
        registers_claim<CONSUMER_REGISTERS>();
        turns_open();
        consume(b, tiles);
        turns_close();
    }

    // PERSISTENT, the producer warpgroup's threads that take part (p: 0 for the issuing thread), on
    // the CTA's block-th row block, its coordinates set: its key tiles continue the ring at `ring`
    // once the consumers are done with the last block's Q; returns the ring's position after them.
    __device__ __forceinline__ int produce_block(const Barriers &b, int block, int ring, unsigned p)
    {
        const int tiles = key_tiles();
        if (block > 0 && p == 0)
            mbarrier_wait(b.q_empty, (block - 1) & 1);
        if constexpr (FP8)
            produce_fp8(b, tiles, ring, p);
        else
            produce(b, tiles, ring);
        return ring + tiles;
    }

    // PERSISTENT: the producer thread and the consumers walk the same row blocks (those of units
    // blockIdx.x, then gridDim.x apart: attention_common.cuh's persistent_units), each block's key
    // tiles continuing the ring where the last block's ended; the producer loads a block's Q once
    // every consumer thread is done with the last block's (phase block - 1 of Q empty). After
    // run_specialized's barrier set-up.
    __device__ void run_persistent(const Barriers &b)
    {
        if constexpr (SCHEDULED) {
            run_scheduled(b);
            return;
        }
        const int units = unit_count();   // the host checked the row blocks fit an int
        if (group == CONSUMERS) {   // the producer warpgroup: one thread issues, the rest leave
            registers_release<PRODUCER_REGISTERS>();
            if constexpr (FP8) {   // every thread transposes V; thread 0 issues
                const unsigned p = threadIdx.x - CONSUMER_THREADS;
                for (int unit = blockIdx.x, ring = 0, block = 0; unit < units; unit += gridDim.x)
                    for (int part = 0; part < parts(unit); part++, block++) {
                        set_tile(unit, part);
                        ring = produce_block(b, block, ring, p);
                    }
                return;
            }
            if (threadIdx.x != CONSUMER_THREADS)
                return;
            for (int unit = blockIdx.x, ring = 0, block = 0; unit < units; unit += gridDim.x)
                for (int part = 0; part < parts(unit); part++, block++) {
                    set_tile(unit, part);
                    ring = produce_block(b, block, ring, 0);
                }
            return;
        }
        registers_claim<CONSUMER_REGISTERS>();
        turns_open();
        for (int unit = blockIdx.x, ring = 0, block = 0; unit < units; unit += gridDim.x)
            for (int part = 0; part < parts(unit); part++, block++) {
                set_tile(unit, part);
                const int tiles = key_tiles();
                consume(b, tiles, ring, block);
                ring += tiles;
            }
        turns_close();
    }

    // SCHEDULED (after run_specialized's barrier set-up): the CTAs take the row blocks of one list
    // (attention_common.cuh's scheduled_block) from a counter (args.next_block, zero at launch), each
    // its next block when it is free, so that blocks of many sizes even out across the CTAs where the
    // static units of two blocks leave a round's worth idle. Each CTA's first block is position
    // blockIdx.x, the later ones gridDim.x + the counter's value; there are as many takes as blocks,
    // and the one past the list's end that took the counter's last value zeroes it for the next
    // launch on the stream (src/counters.c). Without a counter, each CTA takes its units of two blocks
    // (persistent_units' order). The producer thread publishes each block's coordinates in a ring of
    // SCHED_SLOTS slots (its full barrier; free again when every reader has read it: its empty
    // barrier) and takes the next position from the counter after it, its latency under the block's
    // loads; a block of batch -1 ends every role's loop. NOTE: one loop for each role, as
    // run_persistent's: a loop both roles ran, setmaxnreg's two register counts meeting in it,
    // spilled 0.7-2.7 KB (PERF_NOTES v17).
    __device__ void run_scheduled(const Barriers &b)
    {
        __shared__ int4 scheduled[SCHED_SLOTS];   // a block's (batch, head, kv_head, row0); batch -1: the list's end
        // block `block` of this CTA: taken and published (the publisher), or read; its coordinates
        // set. NOTE: the block count is the host's (args.blocks): computed here, ptxas kept the
        // product in a register across the loops and spilled it. NOTE: a consumer warp reads the
        // coordinates through warp reductions (the same values in every lane), whose results ptxas
        // keeps in uniform registers, and decides its exit by a vote: read plainly, they and the
        // loop's counters left the uniform registers for the consumers' own, and ptxas spilled 16-56
        // bytes. The other producer threads read them plainly.
        const auto take = [&](int block, bool publisher, bool consumer, int &next) {   // consumer: whole warps
            const int slot = block % SCHED_SLOTS, round = block / SCHED_SLOTS;
            if (publisher) {
                const int unit = next >> 1, part = next & 1;   // without a counter
                bool valid;
                if (args.next_block) {
                    valid = next < args.blocks;
                    if (next == gridDim.x + args.blocks - 1)   // the launch's last take: zero for the next launch
                        atomicExch(args.next_block, 0);
                    if (valid)
                        set_block(block_coordinates<false>(base, BLOCK_M, scheduled_block(base, next, args.tail_heads)));
                } else {
                    valid = unit < unit_count();
                    if (valid)
                        set_tile(unit, part);
                }
                if (!valid)
                    batch = -1;
                if (round > 0)
                    mbarrier_wait(b.sched_empty + 8 * slot, (round - 1) & 1);
                scheduled[slot] = make_int4(batch, head, kv_head, row0);
                mbarrier_arrive(b.sched_full + 8 * slot);   // release: the store is seen after the wait
                if (valid) {   // the next take's: the counter's latency under this block's loads
                    if (args.next_block)
                        next = gridDim.x + atomicAdd(args.next_block, 1);
                    else
                        next = part + 1 < parts(unit) ? next + 1 : (unit + gridDim.x) << 1;
                }
                return valid;
            }
            mbarrier_wait(b.sched_full + 8 * slot, round & 1);
            const int4 c = scheduled[slot];
            mbarrier_arrive(b.sched_empty + 8 * slot);
            if (!consumer) {
                batch = c.x;
                head = c.y;
                kv_head = c.z;
                row0 = c.w;
                return batch >= 0;
            }
            batch = static_cast<int>(__reduce_min_sync(FULL_WARP, static_cast<unsigned>(c.x)));
            head = static_cast<int>(__reduce_min_sync(FULL_WARP, static_cast<unsigned>(c.y)));
            kv_head = static_cast<int>(__reduce_min_sync(FULL_WARP, static_cast<unsigned>(c.z)));
            row0 = static_cast<int>(__reduce_min_sync(FULL_WARP, static_cast<unsigned>(c.w)));
            return __all_sync(FULL_WARP, batch >= 0) != 0;
        };
        int next = args.next_block ? blockIdx.x : blockIdx.x << 1;   // without a counter: unit * 2 + part
        if (group == CONSUMERS) {   // the producer warpgroup: every thread transposes V, thread 0 publishes and issues
            registers_release<PRODUCER_REGISTERS>();
            const unsigned p = threadIdx.x - CONSUMER_THREADS;
            if (!FP8 && p != 0)   // 16-bit: thread 0 alone publishes and issues
                return;
            for (int block = 0, ring = 0; take(block, p == 0, false, next); block++)
                ring = produce_block(b, block, ring, p);
            return;
        }
        registers_claim<CONSUMER_REGISTERS>();
        // NOTE: the count too through a warp reduction, for a uniform register (see take)
        for (int block = 0, ring = 0; take(block, false, true, next);
             block = static_cast<int>(__reduce_min_sync(FULL_WARP, static_cast<unsigned>(block + 1)))) {
            const int tiles = key_tiles();
            consume(b, tiles, ring, block);
            ring += tiles;
        }
    }
};

// FP8, V_TRANSPOSED: the module's second kernel, launched before the attention kernel on the same
// stream (src/family_sm90.c's launch): V (e4m3 rows of HEAD_DIM bytes at a's strides) to V^T, for each
// (batch, K/V head) HEAD_DIM lines of a.padded_keys bytes (a multiple of 16), in the key order the
// attention kernel's P takes (p_fragments; transpose_v's): key 16 g + 2 q + (r & 1) + 8 (r >> 1) at
// byte 16 g + 4 q + r, zeros past seqlen_k. A CTA: 64 keys of one (batch, K/V head) through shared
// memory (rows padded by 16 bytes, so that a warp's byte reads of 8 keys fall in different banks).
template <int HEAD_DIM>
__device__ __forceinline__ void transpose_v_ahead(const fc_sm90_vt_args &a)
{
    constexpr int KEYS = 64, CHUNKS = HEAD_DIM / 16, ROW = HEAD_DIM + 16;
    __shared__ __align__(16) unsigned char rows[KEYS * ROW];
    const int key0 = blockIdx.x * KEYS, head = blockIdx.y, batch = blockIdx.z;
    const unsigned char *v = static_cast<const unsigned char *>(a.v) + batch * a.batch_stride + head * a.head_stride;
    for (int i = threadIdx.x; i < KEYS * CHUNKS; i += blockDim.x) {
        const int r = i / CHUNKS, c = i % CHUNKS, key = key0 + r;
        uint4 x = make_uint4(0, 0, 0, 0);
        if (key < a.seqlen_k)
            x = *reinterpret_cast<const uint4 *>(v + key * a.row_stride + 16 * c);
        *reinterpret_cast<uint4 *>(rows + r * ROW + 16 * c) = x;
    }
    __syncthreads();
    unsigned char *vt = static_cast<unsigned char *>(a.vt) +
                        (static_cast<long long>(batch) * a.heads_kv + head) * HEAD_DIM * a.padded_keys;
    for (int i = threadIdx.x; i < HEAD_DIM * (KEYS / 16); i += blockDim.x) {
        const int d = i / (KEYS / 16), g = i % (KEYS / 16), pos = key0 + 16 * g;
        if (pos >= a.padded_keys)
            continue;
        const unsigned char *k = rows + 16 * g * ROW + d;
        unsigned w[4];
#pragma unroll
        for (int q = 0; q < 4; q++)
            w[q] = k[(2 * q) * ROW] | k[(2 * q + 1) * ROW] << 8 | k[(2 * q + 8) * ROW] << 16 |
                   static_cast<unsigned>(k[(2 * q + 9) * ROW]) << 24;
        *reinterpret_cast<uint4 *>(vt + static_cast<long long>(d) * a.padded_keys + pos) =
            make_uint4(w[0], w[1], w[2], w[3]);
    }
}

}  // namespace fc
