// kjit: support code for scan kernels (embedded in a generated scan module after reduction.cuh,
// whose NAME_ops contract, offsets helpers and shuffles it uses).
//
// A scan module (jit/codegen/reduction.cpp with ReductionModuleSpec::scan) defines NAME_args and
// NAME_ops as a reduction's do (map reads the one array input, post writes the one output; the
// ops always have an identity) and these entry points, each as NAME_<entry>32 (Index = int) and
// NAME_<entry>64 (Index = long long):
//   scan(NAME_args args, kjit::ReduceLayout<1, 1> layout, void* workspace, const long long* offsets,
//        long long n_offsets, int exclusive)
//       every row scanned on its own: the kept dimensions of layout are the rows, its one reduced
//       dimension (extent reduced_size = L) the scanned axis. Unlike a reduction's layout, the
//       output's row of strides covers the scanned dimension too (stride at index kept_ndim).
//   scan_segments(...): the same for one row (kept_size 1) that restarts at every element whose
//       index is in offsets[0 .. n_offsets) (sorted, repeats allowed: empty segments).
// Launch contract:
//   - blockDim.x == scan_threads; gridDim.x == kept_size * ceil(L / (scan_threads * NAME_ops::scan_items))
//     (one tile each);
//   - workspace: scan_workspace_bytes(tiles, sizeof(value_type)) bytes (jit/kernels/scan/ computes the same), 16-byte
//     aligned, its first scan_zeroed_bytes(tiles, sizeof(value_type)) bytes zero at launch (the tile
//     counter, the flags, and packed slots);
//   - the 32-bit variants need every offset, L + scan_tile and gridDim.x below 2^31.
//
// The algorithm is the decoupled look-back single pass (Merrill and Garland, 2016): blocks take
// tiles in launch order from an atomic counter (so a tile's predecessors are running or done),
// scan their tile, publish its aggregate, then look back over the flags of the tiles before them
// until one has published its inclusive prefix, combining the aggregates in between; then they
// publish their own inclusive prefix and write their outputs. Each element is read once and
// written once.
//
// Order: `reduce(a, b)` has `a` the earlier value (scans need associativity, not
// commutativity). Within a tile the grouping is fixed; across tiles it depends on how far each
// look-back had to go, which depends on timing: integer scans are exact, floating-point scans
// may differ in the last bits from run to run (as CUB's do).
#ifndef KJIT_SCAN_CUH
#define KJIT_SCAN_CUH

namespace kjit {

enum : int { scan_threads = 256 };

// A scanned value with whether a segment starts within it (segmented scans only; otherwise the
// flag is a constant false the compiler removes).
template <class V>
struct ScanPair {
    V v;
    bool head;
};

// a then b.
template <class K, bool Segmented>
__device__ __forceinline__ ScanPair<typename K::value_type> scan_op(const ScanPair<typename K::value_type>& a,
                                                                    const ScanPair<typename K::value_type>& b) {
    if constexpr (Segmented) return {b.head ? b.v : K::reduce(a.v, b.v), a.head || b.head};
    else return {K::reduce(a.v, b.v), false};
}

// __shfl_up_sync and __shfl_sync (from lane `src`) for any trivially copyable type
// (reduction.cuh's shuffle_words).
template <class T>
__device__ __forceinline__ T shfl_up(const T& v, int delta) {
    return shuffle_words(v, [delta](unsigned int w) { return __shfl_up_sync(0xffffffffu, w, delta); });
}
template <class T>
__device__ __forceinline__ T shfl_from(const T& v, int src) {
    return shuffle_words(v, [src](unsigned int w) { return __shfl_sync(0xffffffffu, w, src); });
}

template <class V>
__device__ __forceinline__ ScanPair<V> shfl_from_pair(const ScanPair<V>& p, int src) {
    return {shfl_from(p.v, src), __shfl_sync(0xffffffffu, p.head ? 1 : 0, src) != 0};
}
template <class V>
__device__ __forceinline__ ScanPair<V> shfl_up_pair(const ScanPair<V>& p, int delta) {
    return {shfl_up(p.v, delta), __shfl_up_sync(0xffffffffu, p.head ? 1 : 0, delta) != 0};
}
template <class V>
__device__ __forceinline__ ScanPair<V> shfl_down_pair(const ScanPair<V>& p, int delta) {
    return {shfl_down(p.v, delta), __shfl_down_sync(0xffffffffu, p.head ? 1 : 0, delta) != 0};
}

// The workspace: a 16-byte tile counter, a flag per tile (0: nothing yet, 1: its aggregate, 2: its
// inclusive prefix), then two value slots per tile (aggregate, inclusive prefix). A slot holds the
// value and, in its last byte, the segment flag: sizeof(value) + 1 bytes rounded up to 16 (32 for
// a dtype of 16 bytes, up to 80 for a 64-byte struct).
// A value of at most 14 bytes (every dtype but complex128) is "packed": its tile's one slot (the
// first array) holds the flag too, in byte 14, so that a look-back reads flag and value in one
// 16-byte load, and a tile publishes both in one 16-byte store: no fence between them and one trip
// to L2 per look-back step instead of two (CUB's tile descriptors rely on the same 16-byte
// accesses being whole). Larger values keep the flags apart: store the slot, fence, then set the
// flag; a reader who saw the flag fences and then reads the slot, and the aggregate and prefix
// slots are kept apart so that a reader who saw flag 1 never reads a slot being overwritten.
enum : int { scan_flag_none = 0, scan_flag_aggregate = 1, scan_flag_prefix = 2 };
__host__ __device__ constexpr long long scan_flags_bytes(long long tiles) { return (16 + 4 * tiles + 15) / 16 * 16; }
__host__ __device__ constexpr long long scan_slot_bytes(long long value_size) { return (value_size + 1 + 15) / 16 * 16; }
__host__ __device__ constexpr bool scan_packed(long long value_size) { return value_size <= 14; }
__host__ __device__ constexpr long long scan_workspace_bytes(long long tiles, long long value_size) {
    return scan_flags_bytes(tiles) + 2 * scan_slot_bytes(value_size) * tiles;
}
// What must be zero at launch: the counter and flags, and the packed slots (whose flag byte is 0).
__host__ __device__ constexpr long long scan_zeroed_bytes(long long tiles, long long value_size) {
    return scan_flags_bytes(tiles) + (scan_packed(value_size) ? scan_slot_bytes(value_size) * tiles : 0);
}

template <class V>
struct ScanSlot {
    enum : int { words = static_cast<int>(scan_slot_bytes(sizeof(V)) / 16) };
    uint4 w[words];
};

template <class V>
__device__ __forceinline__ void scan_store_slot(ScanSlot<V>* slot, const ScanPair<V>& p, int flag = scan_flag_none) {
    static_assert(sizeof(V) <= 64, "kjit: a scan value has at most 64 bytes");
    ScanSlot<V> s;
#pragma unroll
    for (int k = 0; k < ScanSlot<V>::words; ++k) s.w[k] = make_uint4(0, 0, 0, 0);
    unsigned char* bytes = reinterpret_cast<unsigned char*>(&s);
    const unsigned char* from = reinterpret_cast<const unsigned char*>(&p.v);
#pragma unroll
    for (int k = 0; k < static_cast<int>(sizeof(V)); ++k) bytes[k] = from[k];
    if constexpr (scan_packed(sizeof(V))) bytes[14] = static_cast<unsigned char>(flag);
    bytes[sizeof(s) - 1] = p.head ? 1 : 0;
#pragma unroll
    for (int k = 0; k < ScanSlot<V>::words; ++k) __stcg(&slot->w[k], s.w[k]);
}
template <class V>
__device__ __forceinline__ ScanPair<V> scan_unpack_slot(const ScanSlot<V>& s) {
    const unsigned char* bytes = reinterpret_cast<const unsigned char*>(&s);
    ScanPair<V> p;
    unsigned char* to = reinterpret_cast<unsigned char*>(&p.v);
#pragma unroll
    for (int k = 0; k < static_cast<int>(sizeof(V)); ++k) to[k] = bytes[k];
    p.head = bytes[sizeof(s) - 1] != 0;
    return p;
}
template <class V>
__device__ __forceinline__ ScanPair<V> scan_load_slot(const ScanSlot<V>* slot) {
    ScanSlot<V> s;
#pragma unroll
    for (int k = 0; k < ScanSlot<V>::words; ++k) s.w[k] = __ldcg(&slot->w[k]);
    return scan_unpack_slot<V>(s);
}
// A packed slot, read afresh on every call (it is polled); its flag in `flag`.
template <class V>
__device__ __forceinline__ ScanSlot<V> scan_poll_packed(const ScanSlot<V>* slot, int& flag) {
    static_assert(scan_packed(sizeof(V)), "kjit: only packed slots hold their flag");
    uint4 w;
    asm volatile("ld.volatile.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w) : "l"(&slot->w[0]));
    ScanSlot<V> s;
    s.w[0] = w;
    flag = static_cast<int>((w.w >> 16) & 0xffu);  // byte 14
    return s;
}

// Index of the first offset >= e (offsets sorted).
__device__ __forceinline__ long long scan_lower_bound(const long long* offsets, long long n, long long e) {
    long long lo = 0, hi = n;
    while (lo < hi) {
        const long long mid = lo + (hi - lo) / 2;
        if (offsets[mid] < e) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// The exclusive prefix of tile `tile` (whose row starts at tile `first`) from its predecessors'
// flags, by warp 0 of the block; every lane returns it.
template <class K, bool Segmented>
__device__ __forceinline__ ScanPair<typename K::value_type> scan_look_back(const volatile int* flags,
                                                                           const ScanSlot<typename K::value_type>* aggregates,
                                                                           const ScanSlot<typename K::value_type>* prefixes, long long tile,
                                                                           long long first) {
    typedef typename K::value_type V;
    typedef ScanPair<V> P;
    const int lane = threadIdx.x & 31;
    P exclusive{K::identity(), false};
    for (long long newest = tile - 1;; newest -= 32) {
        const long long j = newest - lane;  // lane 0 the nearest predecessor
        // Before the row's first tile there is nothing (identity), as if published.
        int f = scan_flag_prefix;
        P v{K::identity(), false};
        if constexpr (scan_packed(sizeof(V))) {
            // Flag and value in one load (aggregates holds each tile's one packed slot).
            ScanSlot<V> s;
            if (j >= first) s = scan_poll_packed<V>(aggregates + j, f);
            // The whole warp waits until every lane's tile has published something.
            while (__any_sync(0xffffffffu, f == scan_flag_none)) {
                if (f == scan_flag_none) s = scan_poll_packed<V>(aggregates + j, f);
            }
            if (j >= first) v = scan_unpack_slot<V>(s);
        } else {
            if (j >= first) f = *(flags + j);
            while (__any_sync(0xffffffffu, f == scan_flag_none)) {
                if (f == scan_flag_none) f = *(flags + j);
            }
            __threadfence();  // the value slots after the flags
            if (j >= first) v = scan_load_slot<V>(f == scan_flag_prefix ? prefixes + j : aggregates + j);
        }
        const unsigned done = __ballot_sync(0xffffffffu, f == scan_flag_prefix);
        const int stop = done ? __ffs(static_cast<int>(done)) - 1 : 32;  // the nearest inclusive prefix
        if (lane > stop) v = P{K::identity(), false};
        // Older (higher) lanes to the left: lane 0 ends with v[31] . v[30] ... v[0].
#pragma unroll
        for (int d = 1; d < 32; d *= 2) {
            const P other = shfl_down_pair(v, d);
            if ((lane & (2 * d - 1)) == 0) v = scan_op<K, Segmented>(other, v);
        }
        v = shfl_from_pair(v, 0);
        exclusive = scan_op<K, Segmented>(v, exclusive);
        if (done) return exclusive;
    }
}

template <class K, class Index, bool Segmented, class Args>
__device__ __forceinline__ void scan_tile(const Args& args, const ReduceLayout<K::in_slots, K::outputs>& layout, void* workspace,
                                          const long long* offsets, long long n_offsets, bool exclusive) {
    typedef typename K::value_type V;
    typedef ScanPair<V> P;
    // Items per thread: K::scan_items, which the code generator chose (and the launcher sizes the
    // grid by: jit/codegen/reduction.cpp's scan_items_for).
    enum : int { T = scan_threads, ITEMS = K::scan_items, TILE = T * ITEMS };
    // The tile in shared memory, one padding slot per 32 so that reading a thread's consecutive
    // items does not conflict on banks.
    __shared__ __align__(16) unsigned char storage[(TILE + TILE / 32) * sizeof(V)];
    __shared__ __align__(16) unsigned char warp_storage[(T / 32) * sizeof(P)];
    __shared__ __align__(16) unsigned char prefix_storage[sizeof(P)];
    __shared__ unsigned long long tile_shared;
    V* tile_values = reinterpret_cast<V*>(storage);
    P* warp_totals = reinterpret_cast<P*>(warp_storage);
    P* tile_prefix = reinterpret_cast<P*>(prefix_storage);
    auto slot = [](int k) { return k + k / 32; };

    unsigned char* ws = static_cast<unsigned char*>(workspace);
    int* flags = reinterpret_cast<int*>(ws + 16);
    const long long tiles = static_cast<long long>(gridDim.x);
    ScanSlot<V>* aggregates = reinterpret_cast<ScanSlot<V>*>(ws + scan_flags_bytes(tiles));
    ScanSlot<V>* prefixes = aggregates + tiles;

    if (threadIdx.x == 0) tile_shared = atomicAdd(reinterpret_cast<unsigned long long*>(ws), 1ull);
    __syncthreads();
    const long long tile = static_cast<long long>(tile_shared);
    const Index L = static_cast<Index>(layout.reduced_size);
    const long long per_row = (static_cast<long long>(L) + TILE - 1) / TILE;
    const Index row = static_cast<Index>(tile / per_row);
    const long long first = tile - tile % per_row;  // the row's first tile
    const Index start = static_cast<Index>((tile - first) * TILE);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

    Index in_row[K::in_slots], out_row[K::outputs];
    kept_in_offsets(layout, row, in_row);
    kept_out_offsets(layout, row, out_row);
    const Index in_step = static_cast<Index>(layout.strides[0][layout.kept_ndim]);
    const Index out_step = static_cast<Index>(layout.strides[K::in_slots][layout.kept_ndim]);

    // Load striped (coalesced): item k of thread t is element start + k * T + t.
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const Index e = start + static_cast<Index>(k * T + tid);
        V v = K::identity();
        if (e < L) {
            Index off[K::in_slots];
#pragma unroll
            for (int a = 0; a < K::in_slots; ++a) off[a] = in_row[a] + e * in_step;
            v = K::template map<Index>(args, off, e, L);
        }
        tile_values[slot(k * T + tid)] = v;
    }
    __syncthreads();

    // Then blocked: thread t scans elements t * ITEMS .. t * ITEMS + ITEMS - 1 of the tile, read from
    // shared memory (twice: here for its total, after the look-back for its outputs, rather than
    // kept in registers across the look-back, which would cost occupancy).
    bool heads[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) heads[k] = false;
    if constexpr (Segmented) {
        const long long e0 = static_cast<long long>(start) + tid * ITEMS;
        long long at = scan_lower_bound(offsets, n_offsets, e0);
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            while (at < n_offsets && offsets[at] < e0 + k) ++at;  // defensive: offsets not sorted
            heads[k] = at < n_offsets && offsets[at] == e0 + k;
        }
    }
    P thread_total{tile_values[slot(tid * ITEMS)], heads[0]};
#pragma unroll
    for (int k = 1; k < ITEMS; ++k) thread_total = scan_op<K, Segmented>(thread_total, P{tile_values[slot(tid * ITEMS + k)], heads[k]});

    // The block's exclusive scan of the threads' totals: warps by shuffles, then the warps' totals.
    P inclusive = thread_total;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
        const P other = shfl_up_pair(inclusive, d);
        if (lane >= d) inclusive = scan_op<K, Segmented>(other, inclusive);
    }
    P before = shfl_up_pair(inclusive, 1);
    if (lane == 0) before = P{K::identity(), false};
    if (lane == 31) warp_totals[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        P w = lane < T / 32 ? warp_totals[lane] : P{K::identity(), false};
#pragma unroll
        for (int d = 1; d < 32; d *= 2) {
            const P other = shfl_up_pair(w, d);
            if (lane >= d) w = scan_op<K, Segmented>(other, w);
        }
        P w_before = shfl_up_pair(w, 1);
        if (lane == 0) w_before = P{K::identity(), false};
        if (lane < T / 32) warp_totals[lane] = w_before;  // each warp's exclusive prefix within the tile
        const P aggregate = shfl_from_pair(w, T / 32 - 1);
        // With nothing before it in its row, or a segment starting in it, a tile's aggregate is
        // already its inclusive prefix: published as such at once, so that look-backs stop here.
        const bool self_contained = tile == first || (Segmented && aggregate.head);
        auto publish = [&](const P& value, int flag) {
            if constexpr (scan_packed(sizeof(V))) {
                scan_store_slot(aggregates + tile, value, flag);
            } else {
                scan_store_slot(flag == scan_flag_prefix ? prefixes + tile : aggregates + tile, value);
                __threadfence();
                atomicExch(flags + tile, flag);
            }
        };
        if (lane == 0) publish(aggregate, self_contained ? scan_flag_prefix : scan_flag_aggregate);
        P prefix{K::identity(), false};
        if (tile != first) prefix = scan_look_back<K, Segmented>(flags, aggregates, prefixes, tile, first);
        if (lane == 0) {
            if (!self_contained) publish(scan_op<K, Segmented>(prefix, aggregate), scan_flag_prefix);
            *tile_prefix = prefix;
        }
    }
    __syncthreads();

    // Each thread's items again, from its prefix: the tile's, its warp's, its lane's; each thread
    // rewrites its own slots only.
    P running = scan_op<K, Segmented>(scan_op<K, Segmented>(*tile_prefix, warp_totals[warp]), before);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        V& item = tile_values[slot(tid * ITEMS + k)];
        const P next = scan_op<K, Segmented>(running, P{item, heads[k]});
        item = exclusive ? (heads[k] ? K::identity() : running.v) : next.v;
        running = next;
    }
    __syncthreads();
    // Store striped (coalesced).
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const Index e = start + static_cast<Index>(k * T + tid);
        if (e < L) {
            Index off[K::outputs];
#pragma unroll
            for (int a = 0; a < K::outputs; ++a) off[a] = out_row[a] + e * out_step;
            K::template post<Index>(args, off, tile_values[slot(k * T + tid)], e, L);
        }
    }
}

}  // namespace kjit

#endif  // KJIT_SCAN_CUH
