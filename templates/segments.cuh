// Runs of equal neighbouring keys -> segments (jit/kernels/ops/segments.cpp): the offsets a segmented reduction
// takes, for a reduce-by-key over sorted keys. A whole program on its own (compiled as a RawModule,
// with -minimal: no headers).
//
// Three launches on one stream:
//   1. kjit_segments_count_<K>: each block counts the run starts in its tile of KJIT_SEG_TILE keys
//      (element i starts a run when i == 0 or key[i] differs from key[i - 1]).
//   2. kjit_segments_scan: one block turns the per-block counts into exclusive offsets in place,
//      with the total (the number of runs) after them.
//   3. kjit_segments_write_<K>: each block finds its starts again and writes, for the r-th start i,
//      offsets[r] = i and run_keys[r] = key[i]; r = the block's offset + the starts before i in the
//      tile (warp ballots, counts per warp in shared memory). Block 0 writes offsets[count] = n.
// The host reads the total between 2 and 3 (to size the outputs): the one synchronisation. Given
// outputs of the largest size instead, nothing is read: kjit_segments_pad fills the offsets past
// the last run and writes the count on the device.
//
// Indices are 64-bit (n may exceed 2^31); keys are read through a stride in elements (any sign).
// <K> names how keys compare: integers of one width compare equal exactly when their bits do, so
// signed and unsigned share a kernel; bool compares truth (any non-zero byte is true); floats
// compare with ==, so -0.0 and 0.0 are one run and every NaN starts a run of its own.

// KJIT_SEG_THREADS, KJIT_SEG_ITEMS and KJIT_SEG_SCAN_THREADS come from the host (jit/kernels/ops/segments.cpp
// prepends them), which launches with the same numbers.
#if !defined(KJIT_SEG_THREADS) || !defined(KJIT_SEG_ITEMS) || !defined(KJIT_SEG_SCAN_THREADS)
#error "segments.cuh: define KJIT_SEG_THREADS, KJIT_SEG_ITEMS and KJIT_SEG_SCAN_THREADS first"
#endif
#if KJIT_SEG_THREADS % 32 != 0
#error "segments.cuh: KJIT_SEG_THREADS must be whole warps (ballots cover full warps)"
#endif
#if KJIT_SEG_SCAN_THREADS != 1024
#error "segments.cuh: the scan's warp-of-warps step assumes 32 warps"
#endif
#define KJIT_SEG_TILE (KJIT_SEG_THREADS * KJIT_SEG_ITEMS)
#define KJIT_SEG_WARPS (KJIT_SEG_THREADS / 32)
#define KJIT_SEG_SCAN_ITEMS 4

struct kjit_seg_u8 {
    typedef unsigned char T;
    static __device__ __forceinline__ bool same(T a, T b) { return a == b; }
};
struct kjit_seg_b8 {
    typedef unsigned char T;
    static __device__ __forceinline__ bool same(T a, T b) { return (a != 0) == (b != 0); }
};
struct kjit_seg_u16 {
    typedef unsigned short T;
    static __device__ __forceinline__ bool same(T a, T b) { return a == b; }
};
struct kjit_seg_u32 {
    typedef unsigned int T;
    static __device__ __forceinline__ bool same(T a, T b) { return a == b; }
};
struct kjit_seg_u64 {
    typedef unsigned long long T;
    static __device__ __forceinline__ bool same(T a, T b) { return a == b; }
};
struct kjit_seg_f32 {
    typedef float T;
    static __device__ __forceinline__ bool same(T a, T b) { return a == b; }
};
struct kjit_seg_f64 {
    typedef double T;
    static __device__ __forceinline__ bool same(T a, T b) { return a == b; }
};

// Whether element i (< n) starts a run. key[i - 1] is the neighbouring thread's key[i] in the same
// step, so the second load is almost always an L1 hit.
template <class K>
__device__ __forceinline__ bool kjit_seg_starts(const typename K::T* keys, long long stride, long long i) {
    return i == 0 || !K::same(keys[i * stride], keys[(i - 1) * stride]);
}

// Element k of a block's tile is tile + step * KJIT_SEG_THREADS + threadIdx.x: a warp reads
// neighbouring keys in each step (coalesced when the stride is 1), and the steps visit the tile in
// order, which the write kernel's ranks rely on.
template <class K>
__device__ void kjit_seg_count(const typename K::T* keys, long long stride, long long n, long long* block_counts) {
    __shared__ int warp_counts[KJIT_SEG_WARPS];
    const long long tile = (long long)blockIdx.x * KJIT_SEG_TILE;
    int count = 0;
#pragma unroll
    for (int step = 0; step < KJIT_SEG_ITEMS; ++step) {
        const long long i = tile + step * KJIT_SEG_THREADS + threadIdx.x;
        if (i < n && kjit_seg_starts<K>(keys, stride, i)) ++count;
    }
    for (int d = 16; d > 0; d >>= 1) count += __shfl_down_sync(0xffffffffu, count, d);
    if ((threadIdx.x & 31) == 0) warp_counts[threadIdx.x >> 5] = count;
    __syncthreads();
    if (threadIdx.x == 0) {
        long long total = 0;
        for (int w = 0; w < KJIT_SEG_WARPS; ++w) total += warp_counts[w];
        block_counts[blockIdx.x] = total;
    }
}

template <class K>
__device__ void kjit_seg_write(const typename K::T* keys, long long stride, long long n,
                               const long long* block_offsets, long long count, long long* offsets,
                               typename K::T* run_keys) {
    __shared__ int warp_counts[KJIT_SEG_WARPS];
    const long long tile = (long long)blockIdx.x * KJIT_SEG_TILE;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const unsigned lanes_before = (1u << lane) - 1u;
    long long base = block_offsets[blockIdx.x];
    // Every thread runs every step (no early exit), so the full-mask ballot and the barriers are
    // reached by the whole block.
    for (int step = 0; step < KJIT_SEG_ITEMS; ++step) {
        const long long i = tile + step * KJIT_SEG_THREADS + threadIdx.x;
        const bool start = i < n && kjit_seg_starts<K>(keys, stride, i);
        const unsigned ballot = __ballot_sync(0xffffffffu, start);
        if (lane == 0) warp_counts[warp] = __popc(ballot);
        __syncthreads();
        int before = 0, total = 0;
        for (int w = 0; w < KJIT_SEG_WARPS; ++w) {
            const int c = warp_counts[w];
            if (w < warp) before += c;
            total += c;
        }
        if (start) {
            const long long r = base + before + __popc(ballot & lanes_before);
            offsets[r] = i;
            run_keys[r] = keys[i * stride];
        }
        base += total;
        __syncthreads();  // warp_counts is rewritten by the next step
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) offsets[count] = n;
}

#define KJIT_SEG_KERNELS(K)                                                                                  \
    extern "C" __global__ void __launch_bounds__(KJIT_SEG_THREADS)                                           \
        kjit_segments_count_##K(const kjit_seg_##K::T* keys, long long stride, long long n,                  \
                                long long* block_counts) {                                                   \
        kjit_seg_count<kjit_seg_##K>(keys, stride, n, block_counts);                                         \
    }                                                                                                        \
    extern "C" __global__ void __launch_bounds__(KJIT_SEG_THREADS)                                           \
        kjit_segments_write_##K(const kjit_seg_##K::T* keys, long long stride, long long n,                  \
                                const long long* block_offsets, long long count, long long* offsets,         \
                                kjit_seg_##K::T* run_keys) {                                                 \
        kjit_seg_write<kjit_seg_##K>(keys, stride, n, block_offsets, count, offsets, run_keys);              \
    }

KJIT_SEG_KERNELS(u8)
KJIT_SEG_KERNELS(b8)
KJIT_SEG_KERNELS(u16)
KJIT_SEG_KERNELS(u32)
KJIT_SEG_KERNELS(u64)
KJIT_SEG_KERNELS(f32)
KJIT_SEG_KERNELS(f64)

// The form that does not wait (group_sorted_keys with outputs given at their largest): with
// count = block_offsets[blocks] still on the device, offsets[count .. n] = n, so the runs past the
// last are empty, and *count_out = count. Grid-stride over the n + 1 - count offsets.
extern "C" __global__ void kjit_segments_pad(const long long* block_offsets, long long blocks, long long n,
                                             long long* offsets, long long* count_out) {
    const long long count = block_offsets[blocks];
    if (blockIdx.x == 0 && threadIdx.x == 0) *count_out = count;
    for (long long r = count + (long long)blockIdx.x * blockDim.x + threadIdx.x; r <= n; r += (long long)gridDim.x * blockDim.x)
        offsets[r] = n;
}

// counts[0 .. blocks) -> exclusive offsets in place, and counts[blocks] = the sum. One block of
// KJIT_SEG_SCAN_THREADS threads walks the counts in chunks, carrying the sum so far; each thread
// owns KJIT_SEG_SCAN_ITEMS consecutive counts of a chunk, reads them all before writing, and no
// other thread touches them, so the scan can be in place.
extern "C" __global__ void __launch_bounds__(KJIT_SEG_SCAN_THREADS)
    kjit_segments_scan(long long* counts, long long blocks) {
    __shared__ long long warp_sums[KJIT_SEG_SCAN_THREADS / 32];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    long long carry = 0;
    for (long long chunk = 0; chunk < blocks; chunk += KJIT_SEG_SCAN_THREADS * KJIT_SEG_SCAN_ITEMS) {
        const long long first = chunk + (long long)threadIdx.x * KJIT_SEG_SCAN_ITEMS;
        long long v[KJIT_SEG_SCAN_ITEMS];
        long long mine = 0;
#pragma unroll
        for (int j = 0; j < KJIT_SEG_SCAN_ITEMS; ++j) {
            v[j] = first + j < blocks ? counts[first + j] : 0;
            mine += v[j];
        }
        // Inclusive scan of `mine` across the warp, then across the warps' sums.
        long long inclusive = mine;
        for (int d = 1; d < 32; d <<= 1) {
            const long long up = __shfl_up_sync(0xffffffffu, inclusive, d);
            if (lane >= d) inclusive += up;
        }
        if (lane == 31) warp_sums[warp] = inclusive;
        __syncthreads();
        if (warp == 0) {
            long long s = warp_sums[lane];  // KJIT_SEG_SCAN_THREADS / 32 == 32 warps
            for (int d = 1; d < 32; d <<= 1) {
                const long long up = __shfl_up_sync(0xffffffffu, s, d);
                if (lane >= d) s += up;
            }
            warp_sums[lane] = s;
        }
        __syncthreads();
        long long at = carry + (warp == 0 ? 0 : warp_sums[warp - 1]) + inclusive - mine;
#pragma unroll
        for (int j = 0; j < KJIT_SEG_SCAN_ITEMS; ++j) {
            if (first + j < blocks) counts[first + j] = at;
            at += v[j];
        }
        carry += warp_sums[31];
        __syncthreads();  // warp_sums is rewritten by the next chunk
    }
    if (threadIdx.x == 0) counts[blocks] = carry;
}
