// kjit: support code for reduction kernels (embedded in every generated reduction module, after
// elementwise.cuh, whose max_dims, Raw, thread_index and thread_count it uses).
//
// A generated module for kernel NAME (jit/codegen/reduction.cpp) defines
//   struct NAME_args: the parameters in order, inputs then outputs: `const T* x` for an array
//       input, `kjit::Raw<const T> t` for a raw input, `T* y` for an output (outputs are arrays);
//   struct NAME_ops: value_type (the reduce type), has_identity, inputs (array inputs), in_slots
//       (max(1, inputs)), outputs, vector (elements per vector load), and map / reduce /
//       identity / post calling the user's pieces, aligned / fold_vector for vector loads;
// and these entry points, each as NAME_<strategy>32 (Index = int: every offset, count and index
// below 2^31) and NAME_<strategy>64 (Index = long long):
//   full(NAME_args args, kjit::ReduceLayout<in_slots, outputs> layout, void* workspace)
//       kept_size == 1: every element to one value, in one launch over many blocks.
//   small(args, layout), only NAME_small32: kept_size == 1 and at most a few thousand elements,
//       contiguous in every array input (reduced_ndim <= 1, stride 1), one block: what a first call
//       on small arrays compiles (no vectors, no workspace, no offsets over dimensions).
//   rows_warp(args, layout), rows_block(args, layout)
//       one warp (rows_warp) or one block (rows_block) per output, grid-stride over the outputs;
//       for reducing the trailing dimensions when they are contiguous (loads coalesce along a row).
//   columns(args, layout)
//       one thread per output, grid-stride over the outputs, looping over the reduced elements;
//       for reducing outer dimensions (neighbouring threads read neighbouring columns).
//   segments_warp(args, layout, const long long* offsets), segments_block(...): the segments of
//       1-D inputs given by offsets (see reduce_segments_warp below), a warp or a block each.
//   columns_split(args, layout, void* workspace), then columns_finish(args, layout,
//       const void* workspace, int chunks): columns for few outputs and many reduced elements,
//       the reduced elements cut into gridDim.y = chunks chunks across blocks (two launches;
//       columns_split's grid.x * blockDim.x must cover kept_size; workspace: chunks * kept_size
//       values, then as many bools without an identity).
// Launch contract (the host launcher's part):
//   - blockDim.x a multiple of 32, at most 512 (__launch_bounds__(512)); blockDim.y = z = 1;
//   - full: workspace holds an unsigned counter at byte 0, zero before the first launch (each
//     launch leaves it zero again), then from byte 16 one value_type per block (gridDim.x of them)
//     and, without an identity, one bool per block after them (whether the block saw an element):
//     16 + gridDim.x * sizeof(value_type) (+ gridDim.x without an identity) bytes, 16-byte
//     aligned, not shared by launches in flight at once;
//   - the 32-bit variants need every offset, and reduced_size (or kept_size) plus the number of
//     threads of the grid, below 2^31;
//   - without an identity, reduced_size == 0 is the host's error to report (nothing is launched);
//     with one, an empty reduction writes post(identity) to every output.
//
// Reduction order (fixed, so a launch with the same shapes, grid and block gives the same bits on
// every run; `reduce` is assumed associative and commutative, as in CuPy):
//   - each thread starts from identity() (or, with none, its first element) and folds in its
//     elements in increasing index order: v = reduce(v, map(element));
//     full: thread t of T = gridDim.x * blockDim.x takes elements t, t + T, t + 2T...;
//     small: thread t takes t, t + blockDim.x... (its one block then combines by the block tree);
//     rows_warp: lane l takes l, l + 32...; rows_block: thread t takes t, t + blockDim.x...;
//     columns: the one thread takes 0, 1, 2... (C order over the reduced dimensions);
//     columns_split: chunk c's thread takes its chunk's elements in order, and columns_finish
//     folds chunks 0, 1, 2... in order (the order depends on the number of chunks);
//     except that full, rows_warp and rows_block, when the reduced elements are contiguous in
//     every array input and each input's first reduced element is aligned for a vector of
//     NAME_ops::vector elements (16 bytes of the widest input), deal out vectors instead of
//     elements (vector q = elements q*V .. q*V+V-1, in the same round-robin; full's vectors go
//     by warp tiles instead: warp w of W takes tiles w, w + W... of 32 * reduce_unroll vectors,
//     lane l vectors l, l + 32... of each), then the n - n % V.. tail elements one at a time in
//     the element round-robin. So the order also depends on the inputs' alignment, which is the
//     same for the same arrays;
//   - a warp combines its 32 values by a tree: for d = 16, 8, 4, 2, 1, lane l takes
//     reduce(v[l], v[l + d]); a block combines its warps' results in shared memory by the same
//     tree in warp 0 (warps beyond blockDim.x / 32 count as identity);
//   - full: each block writes its result to workspace slot blockIdx.x; the last block to finish
//     (an atomic counter after __threadfence) folds slots t, t + blockDim.x... per thread in
//     increasing order, then combines them by the block tree, and applies post. Which block is
//     last does not change the order: it depends only on gridDim.x and blockDim.x.
#ifndef KJIT_REDUCTION_CUH
#define KJIT_REDUCTION_CUH

// Vectors (or elements) each thread of the row and full strategies loads per unrolled step: more
// loads in flight per thread.
#ifndef KJIT_REDUCE_UNROLL
#define KJIT_REDUCE_UNROLL 4
#endif
// Full reductions deal out tiles of 32 * reduce_unroll consecutive vectors per warp (1, measured
// faster) or single vectors per thread (0).
#ifndef KJIT_REDUCE_WARP_TILES
#define KJIT_REDUCE_WARP_TILES 1
#endif

namespace kjit {

enum : int { reduce_unroll = KJIT_REDUCE_UNROLL };  // an enumerator, not a variable (elementwise.cuh)

// Adds to off[a] the offsets of element `e` (C order) of dimensions [first, first + count).
template <class Index, int N>
__device__ __forceinline__ void add_offsets(const long long (&shape)[max_dims], const long long (*strides)[max_dims],
                                            int first, int count, Index e, Index (&off)[N]) {
    if (count <= 0) return;
    for (int d = first + count - 1; d > first; --d) {
        const Index extent = static_cast<Index>(shape[d]);
        const Index k = e % extent;
        e /= extent;
#pragma unroll
        for (int a = 0; a < N; ++a) off[a] += k * static_cast<Index>(strides[a][d]);
    }
#pragma unroll
    for (int a = 0; a < N; ++a) off[a] += e * static_cast<Index>(strides[a][first]);
}

// The inputs' offsets of the first element reduced into output `o`.
template <class Index, int I, int O>
__device__ __forceinline__ void kept_in_offsets(const ReduceLayout<I, O>& layout, Index o, Index (&off)[I]) {
#pragma unroll
    for (int a = 0; a < I; ++a) off[a] = 0;
    add_offsets(layout.shape, layout.strides, 0, layout.kept_ndim, o, off);
}

// The outputs' offsets of output `o`.
template <class Index, int I, int O>
__device__ __forceinline__ void kept_out_offsets(const ReduceLayout<I, O>& layout, Index o, Index (&off)[O]) {
#pragma unroll
    for (int a = 0; a < O; ++a) off[a] = 0;
    add_offsets(layout.shape, layout.strides + I, 0, layout.kept_ndim, o, off);
}

// off = base + the inputs' offsets of reduced element j.
template <class Index, int I, int O>
__device__ __forceinline__ void reduced_in_offsets(const ReduceLayout<I, O>& layout, const Index (&base)[I], Index j,
                                                   Index (&off)[I]) {
#pragma unroll
    for (int a = 0; a < I; ++a) off[a] = base[a];
    add_offsets(layout.shape, layout.strides, layout.kept_ndim, layout.reduced_ndim, j, off);
}

// Whether the reduced elements are one dimension of stride 1 in every array input.
template <int I, int O>
__device__ __forceinline__ bool reduced_contiguous(const ReduceLayout<I, O>& layout, int inputs) {
    if (layout.reduced_ndim != 1) return false;
    for (int a = 0; a < inputs; ++a)
        if (layout.strides[a][layout.kept_ndim] != 1) return false;
    return true;
}

// Whether `p` may be read as a Vec<T, N> (elementwise.cuh).
template <int N, class T>
__device__ __forceinline__ bool is_aligned(const T* p) {
    return reinterpret_cast<unsigned long long>(p) % alignof(Vec<T, N>) == 0;
}

// A warp shuffle of any trivially copyable type, 4 bytes at a time: `shuffle` moves one word
// (a lambda around __shfl_down_sync, __shfl_up_sync or __shfl_sync).
template <class T, class Shuffle>
__device__ __forceinline__ T shuffle_words(const T& v, Shuffle shuffle) {
    constexpr int W = (sizeof(T) + 3) / 4;
    unsigned int w[W];
#pragma unroll
    for (int k = 0; k < W; ++k) w[k] = 0;
    const unsigned char* from = reinterpret_cast<const unsigned char*>(&v);
    unsigned char* bytes = reinterpret_cast<unsigned char*>(w);
#pragma unroll
    for (int k = 0; k < static_cast<int>(sizeof(T)); ++k) bytes[k] = from[k];
#pragma unroll
    for (int k = 0; k < W; ++k) w[k] = shuffle(w[k]);
    T r;
    unsigned char* to = reinterpret_cast<unsigned char*>(&r);
#pragma unroll
    for (int k = 0; k < static_cast<int>(sizeof(T)); ++k) to[k] = bytes[k];
    return r;
}

// __shfl_down_sync for any trivially copyable type.
template <class T>
__device__ __forceinline__ T shfl_down(const T& v, int delta) {
    return shuffle_words(v, [delta](unsigned int w) { return __shfl_down_sync(0xffffffffu, w, delta); });
}
__device__ __forceinline__ float shfl_down(const float& v, int delta) { return __shfl_down_sync(0xffffffffu, v, delta); }
__device__ __forceinline__ double shfl_down(const double& v, int delta) { return __shfl_down_sync(0xffffffffu, v, delta); }
__device__ __forceinline__ int shfl_down(const int& v, int delta) { return __shfl_down_sync(0xffffffffu, v, delta); }
__device__ __forceinline__ long long shfl_down(const long long& v, int delta) { return __shfl_down_sync(0xffffffffu, v, delta); }

// A partial result: `ok` says it holds a value. With an identity it always does, and the flag
// is a constant the compiler removes.
template <class K>
__device__ __forceinline__ void start(typename K::value_type& v, bool& ok) {
    if constexpr (K::has_identity) {
        v = K::identity();
        ok = true;
    } else {
        ok = false;
    }
}

// v = reduce(v, x), where either may be empty (no identity).
template <class K>
__device__ __forceinline__ void combine(typename K::value_type& v, bool& ok, const typename K::value_type& x, bool x_ok) {
    if constexpr (K::has_identity) {
        v = K::reduce(v, x);
    } else if (x_ok) {
        v = ok ? K::reduce(v, x) : x;
        ok = true;
    }
}

// The warp's 32 values combined into lane 0 (the tree of the order above). Every lane calls it.
template <class K>
__device__ __forceinline__ void warp_reduce(typename K::value_type& v, bool& ok) {
#pragma unroll
    for (int d = 16; d > 0; d /= 2) {
        const typename K::value_type other = shfl_down(v, d);
        bool other_ok = true;
        if constexpr (!K::has_identity) other_ok = __shfl_down_sync(0xffffffffu, ok ? 1 : 0, d) != 0;
        combine<K>(v, ok, other, other_ok);
    }
}

// The block's values combined into thread 0. Every thread of the block calls it.
template <class K>
__device__ __forceinline__ void block_reduce(typename K::value_type& v, bool& ok) {
    typedef typename K::value_type V;
    __shared__ __align__(16) unsigned char storage[32 * sizeof(V)];
    __shared__ bool oks[32];
    V* values = reinterpret_cast<V*>(storage);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    warp_reduce<K>(v, ok);
    if (lane == 0) {
        values[warp] = v;
        oks[warp] = ok;
    }
    __syncthreads();
    if (warp == 0) {
        if (lane < warps) {
            v = values[lane];
            ok = oks[lane];
        } else {
            start<K>(v, ok);
        }
        warp_reduce<K>(v, ok);
    }
    __syncthreads();  // the shared memory is free for the next call
}

// kept_size == 1: post() of the reduced value into the one output.
template <class K, class Index, class Args>
__device__ __forceinline__ void post_only_output(const Args& args, const typename K::value_type& v, Index n) {
    Index out[K::outputs];
#pragma unroll
    for (int a = 0; a < K::outputs; ++a) out[a] = 0;
    K::template post<Index>(args, out, v, Index(0), n);
}

// kept_size == 1, few elements, contiguous in every array input: one block (see the order above).
template <class K, class Index, class Args, class Layout>
__device__ __forceinline__ void reduce_small(const Args& args, const Layout& layout) {
    typedef typename K::value_type V;
    const Index n = static_cast<Index>(layout.reduced_size);
    V v;
    bool ok;
    start<K>(v, ok);
    for (Index j = static_cast<Index>(threadIdx.x); j < n; j += static_cast<Index>(blockDim.x)) {
        Index off[K::in_slots];
#pragma unroll
        for (int a = 0; a < K::in_slots; ++a) off[a] = j;
        combine<K>(v, ok, K::template map<Index>(args, off, j, n), true);
    }
    block_reduce<K>(v, ok);
    if (threadIdx.x == 0) post_only_output<K>(args, v, n);
}

// kept_size == 1: every element into one value, one launch (see the order above).
template <class K, class Index, class Args, class Layout>
__device__ __forceinline__ void reduce_full(const Args& args, const Layout& layout, void* workspace) {
    typedef typename K::value_type V;
    const Index n = static_cast<Index>(layout.reduced_size);
    const Index stride = static_cast<Index>(thread_count());
    const bool contiguous = reduced_contiguous(layout, K::inputs);
    Index zero[K::in_slots];
#pragma unroll
    for (int a = 0; a < K::in_slots; ++a) zero[a] = 0;
    V v;
    bool ok;
    start<K>(v, ok);
    Index first = 0;  // where the element-by-element loop starts
    if (K::vector > 1 && contiguous && K::template aligned<Index>(args, zero)) {
        // Vector q holds elements q * vector ... q * vector + vector - 1; thread t takes vectors
        // t, t + T... (folding each vector's elements in order), then the tail element by element.
        const Index vectors = n / K::vector;
#if KJIT_REDUCE_WARP_TILES
        // Warp w takes tiles of 32 * reduce_unroll consecutive vectors,
        // tiles w, w + warps...; lane l takes vectors l, l + 32... of each tile.
        const Index lane = static_cast<Index>(threadIdx.x & 31), warps = stride >> 5, tile = 32 * reduce_unroll;
        for (Index b = static_cast<Index>(thread_index() >> 5) * tile; b < vectors; b += warps * tile) {
#pragma unroll
            for (int u = 0; u < reduce_unroll; ++u) {
                const Index q = b + u * 32 + lane;
                if (q >= vectors) break;
                Index off[K::in_slots];
#pragma unroll
                for (int a = 0; a < K::in_slots; ++a) off[a] = q * K::vector;
                K::template fold_vector<Index>(v, ok, args, off, q * K::vector, n);
            }
        }
#else
#pragma unroll (reduce_unroll)
        for (Index q = static_cast<Index>(thread_index()); q < vectors; q += stride) {
            Index off[K::in_slots];
#pragma unroll
            for (int a = 0; a < K::in_slots; ++a) off[a] = q * K::vector;
            K::template fold_vector<Index>(v, ok, args, off, q * K::vector, n);
        }
#endif
        first = vectors * K::vector;
    }
    for (Index j = first + static_cast<Index>(thread_index()); j < n; j += stride) {
        Index off[K::in_slots];
        if (contiguous) {
#pragma unroll
            for (int a = 0; a < K::in_slots; ++a) off[a] = j;
        } else {
            reduced_in_offsets(layout, zero, j, off);
        }
        combine<K>(v, ok, K::template map<Index>(args, off, j, n), true);
    }
    block_reduce<K>(v, ok);

    unsigned int* counter = static_cast<unsigned int*>(workspace);
    V* partials = reinterpret_cast<V*>(static_cast<unsigned char*>(workspace) + 16);
    bool* filled = reinterpret_cast<bool*>(partials + gridDim.x);  // without an identity only
    __shared__ bool last;
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = v;
        if constexpr (!K::has_identity) filled[blockIdx.x] = ok;
        __threadfence();
        last = atomicAdd(counter, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    start<K>(v, ok);
    for (unsigned int b = threadIdx.x; b < gridDim.x; b += blockDim.x) combine<K>(v, ok, partials[b], K::has_identity ? true : filled[b]);
    block_reduce<K>(v, ok);
    if (threadIdx.x == 0) {
        *counter = 0;  // ready for the next launch
        post_only_output<K>(args, v, n);
    }
}

// Folds into v the n reduced elements of one output whose first element is at `base`: this thread
// takes elements (or, when contiguous and aligned, vectors) t, t + step, t + 2 * step..., then the
// tail after the last whole vector element by element in the same round-robin.
template <class K, class Index, class Args, class Layout>
__device__ __forceinline__ void fold_row(const Args& args, const Layout& layout, const Index (&base)[K::in_slots], Index n, Index t,
                                         Index step, bool contiguous, typename K::value_type& v, bool& ok) {
    Index first = 0;  // where the element-by-element loop starts
    if (K::vector > 1 && contiguous && K::template aligned<Index>(args, base)) {
        const Index vectors = n / K::vector;
#pragma unroll (reduce_unroll)
        for (Index q = t; q < vectors; q += step) {
            Index off[K::in_slots];
#pragma unroll
            for (int a = 0; a < K::in_slots; ++a) off[a] = base[a] + q * K::vector;
            K::template fold_vector<Index>(v, ok, args, off, q * K::vector, n);
        }
        first = vectors * K::vector;
    }
    for (Index j = first + t; j < n; j += step) {
        Index off[K::in_slots];
        if (contiguous) {
#pragma unroll
            for (int a = 0; a < K::in_slots; ++a) off[a] = base[a] + j;
        } else {
            reduced_in_offsets(layout, base, j, off);
        }
        combine<K>(v, ok, K::template map<Index>(args, off, j, n), true);
    }
}

// Where output o's reduced elements start in each input and how many there are: the kept
// dimensions' offsets and reduced_size (KeptRows), or a segment of 1-D inputs (SegmentRows: output
// o reduces elements offsets[o] .. offsets[o + 1] - 1, clamped to 0 .. reduced_size so that bad
// offsets never read outside the inputs).
struct KeptRows {
    template <class Index, class Layout, int S>
    __device__ __forceinline__ void operator()(const Layout& layout, Index o, Index (&base)[S], Index& n) const {
        kept_in_offsets(layout, o, base);
        n = static_cast<Index>(layout.reduced_size);
    }
};
struct SegmentRows {
    const long long* offsets;
    template <class Index, class Layout, int S>
    __device__ __forceinline__ void operator()(const Layout& layout, Index o, Index (&base)[S], Index& n) const {
        const long long total = layout.reduced_size;
        long long b = offsets[o], e = offsets[o + 1];
        b = b < 0 ? 0 : (b > total ? total : b);
        e = e < b ? b : (e > total ? total : e);
        n = static_cast<Index>(e - b);
#pragma unroll
        for (int a = 0; a < S; ++a) base[a] = static_cast<Index>(b) * static_cast<Index>(layout.strides[a][1]);
    }
};

// One warp per output (lanes stride the row by 32), grid-stride over the outputs.
template <class K, class Index, class Args, class Layout, class Rows>
__device__ __forceinline__ void reduce_warp_per_row(const Args& args, const Layout& layout, const Rows& rows) {
    typedef typename K::value_type V;
    const Index outputs = static_cast<Index>(layout.kept_size);
    const Index lane = static_cast<Index>(threadIdx.x & 31);
    const Index warps = static_cast<Index>(thread_count() >> 5);
    const bool contiguous = reduced_contiguous(layout, K::inputs);
    for (Index o = static_cast<Index>(thread_index() >> 5); o < outputs; o += warps) {
        Index base[K::in_slots], n;
        rows(layout, o, base, n);
        V v;
        bool ok;
        start<K>(v, ok);
        fold_row<K, Index>(args, layout, base, n, lane, Index(32), contiguous, v, ok);
        warp_reduce<K>(v, ok);
        if (lane == 0) {
            Index out[K::outputs];
            kept_out_offsets(layout, o, out);
            K::template post<Index>(args, out, v, o, n);
        }
    }
}

// One block per output (threads stride the row by blockDim.x), grid-stride over the outputs.
template <class K, class Index, class Args, class Layout, class Rows>
__device__ __forceinline__ void reduce_block_per_row(const Args& args, const Layout& layout, const Rows& rows) {
    typedef typename K::value_type V;
    const Index outputs = static_cast<Index>(layout.kept_size);
    const bool contiguous = reduced_contiguous(layout, K::inputs);
    for (Index o = static_cast<Index>(blockIdx.x); o < outputs; o += static_cast<Index>(gridDim.x)) {
        Index base[K::in_slots], n;
        rows(layout, o, base, n);
        V v;
        bool ok;
        start<K>(v, ok);
        fold_row<K, Index>(args, layout, base, n, static_cast<Index>(threadIdx.x), static_cast<Index>(blockDim.x), contiguous, v, ok);
        block_reduce<K>(v, ok);
        if (threadIdx.x == 0) {
            Index out[K::outputs];
            kept_out_offsets(layout, o, out);
            K::template post<Index>(args, out, v, o, n);
        }
    }
}

template <class K, class Index, class Args, class Layout>
__device__ __forceinline__ void reduce_rows_warp(const Args& args, const Layout& layout) {
    reduce_warp_per_row<K, Index>(args, layout, KeptRows{});
}
template <class K, class Index, class Args, class Layout>
__device__ __forceinline__ void reduce_rows_block(const Args& args, const Layout& layout) {
    reduce_block_per_row<K, Index>(args, layout, KeptRows{});
}

// Segments of 1-D inputs (segmented reductions): the layout has one kept dimension (the kept_size
// segments; input strides 0, the outputs' strides) and one reduced dimension (reduced_size
// elements; the inputs' strides). `i` in map is the element's index in its segment and `n` the
// segment's length. The order is rows_warp's (segments_warp) or rows_block's (segments_block) over
// each segment.
template <class K, class Index, class Args, class Layout>
__device__ __forceinline__ void reduce_segments_warp(const Args& args, const Layout& layout, const long long* offsets) {
    reduce_warp_per_row<K, Index>(args, layout, SegmentRows{offsets});
}
template <class K, class Index, class Args, class Layout>
__device__ __forceinline__ void reduce_segments_block(const Args& args, const Layout& layout, const long long* offsets) {
    reduce_block_per_row<K, Index>(args, layout, SegmentRows{offsets});
}

// One thread per output, looping over the reduced elements in order: neighbouring threads read
// neighbouring outputs' elements (coalesced when the last kept dimension is contiguous).
template <class K, class Index, class Args, class Layout>
__device__ __forceinline__ void reduce_columns(const Args& args, const Layout& layout) {
    typedef typename K::value_type V;
    const Index outputs = static_cast<Index>(layout.kept_size), n = static_cast<Index>(layout.reduced_size);
    const bool one_dim = layout.reduced_ndim == 1;
    Index step[K::in_slots];
#pragma unroll
    for (int a = 0; a < K::in_slots; ++a) step[a] = one_dim ? static_cast<Index>(layout.strides[a][layout.kept_ndim]) : 0;
    for (Index o = static_cast<Index>(thread_index()); o < outputs; o += static_cast<Index>(thread_count())) {
        Index base[K::in_slots];
        kept_in_offsets(layout, o, base);
        V v;
        bool ok;
        start<K>(v, ok);
        Index off[K::in_slots];
#pragma unroll
        for (int a = 0; a < K::in_slots; ++a) off[a] = base[a];
#pragma unroll (reduce_unroll)
        for (Index j = 0; j < n; ++j) {
            if (!one_dim) reduced_in_offsets(layout, base, j, off);
            combine<K>(v, ok, K::template map<Index>(args, off, j, n), true);
            if (one_dim) {
#pragma unroll
                for (int a = 0; a < K::in_slots; ++a) off[a] += step[a];
            }
        }
        Index out[K::outputs];
        kept_out_offsets(layout, o, out);
        K::template post<Index>(args, out, v, o, n);
    }
}

// Outer-axis reductions with few outputs and many reduced elements, in two launches.
// columns_split: blockIdx.y picks a chunk of the reduced elements (chunk c of C = gridDim.y holds
// elements c * ceil(n / C) .. up to n); thread blockIdx.x * blockDim.x + threadIdx.x owns one
// output and folds its chunk in order into workspace value c * kept_size + o (and, without an
// identity, bool c * kept_size + o after the C * kept_size values: whether the chunk had any).
template <class K, class Index, class Args, class Layout>
__device__ __forceinline__ void reduce_columns_split(const Args& args, const Layout& layout, void* workspace) {
    typedef typename K::value_type V;
    const Index outputs = static_cast<Index>(layout.kept_size), n = static_cast<Index>(layout.reduced_size);
    const Index o = static_cast<Index>(blockIdx.x) * static_cast<Index>(blockDim.x) + static_cast<Index>(threadIdx.x);
    if (o >= outputs) return;
    const Index chunks = static_cast<Index>(gridDim.y), c = static_cast<Index>(blockIdx.y);
    const Index per_chunk = (n + chunks - 1) / chunks;
    const Index begin = c * per_chunk < n ? c * per_chunk : n;
    const Index end = begin + per_chunk < n ? begin + per_chunk : n;
    const bool one_dim = layout.reduced_ndim == 1;
    Index base[K::in_slots], off[K::in_slots], step[K::in_slots];
    kept_in_offsets(layout, o, base);
#pragma unroll
    for (int a = 0; a < K::in_slots; ++a) {
        step[a] = one_dim ? static_cast<Index>(layout.strides[a][layout.kept_ndim]) : 0;
        off[a] = base[a] + begin * step[a];
    }
    V v;
    bool ok;
    start<K>(v, ok);
#pragma unroll (reduce_unroll)
    for (Index j = begin; j < end; ++j) {
        if (!one_dim) reduced_in_offsets(layout, base, j, off);
        combine<K>(v, ok, K::template map<Index>(args, off, j, n), true);
        if (one_dim) {
#pragma unroll
            for (int a = 0; a < K::in_slots; ++a) off[a] += step[a];
        }
    }
    V* partials = static_cast<V*>(workspace);
    partials[c * outputs + o] = v;
    if constexpr (!K::has_identity) reinterpret_cast<bool*>(partials + chunks * outputs)[c * outputs + o] = ok;
}

// columns_finish: thread per output folds the `chunks` partial results of columns_split in chunk
// order and applies post.
template <class K, class Index, class Args, class Layout>
__device__ __forceinline__ void reduce_columns_finish(const Args& args, const Layout& layout, const void* workspace, int chunks) {
    typedef typename K::value_type V;
    const Index outputs = static_cast<Index>(layout.kept_size), n = static_cast<Index>(layout.reduced_size);
    const V* partials = static_cast<const V*>(workspace);
    const bool* filled = reinterpret_cast<const bool*>(partials + static_cast<Index>(chunks) * outputs);
    for (Index o = static_cast<Index>(thread_index()); o < outputs; o += static_cast<Index>(thread_count())) {
        V v;
        bool ok;
        start<K>(v, ok);
        for (Index c = 0; c < static_cast<Index>(chunks); ++c)
            combine<K>(v, ok, partials[c * outputs + o], K::has_identity ? true : filled[c * outputs + o]);
        Index out[K::outputs];
        kept_out_offsets(layout, o, out);
        K::template post<Index>(args, out, v, o, n);
    }
}

// Elements into groups named by an index (reduce_by_key over keys grouped by
// jit/kernels/ops/dense_groups.hpp): the layout has one kept dimension (the kept_size groups;
// input strides 0, the outputs' strides) and one reduced dimension (the n elements; the inputs'
// strides). Element j belongs to group group_of[j]; an index outside 0 .. kept_size - 1 drops the
// element. Needs an identity; map must not read `i` or `n` (the host checks: an element's place
// in its group is not known here), and sees i = j, n = 0.
//   bins(args, layout, group_of, offsets, workspace), dynamic shared memory warps * kept_size *
//       sizeof(value_type): block b takes elements b * per_block .. (per_block = n / gridDim.x
//       rounded up to whole warp rounds), cut into one run per warp; each warp folds its run in
//       index order into its own copy of every group's value (lanes of one group in lane order),
//       then the block folds its warps' copies in warp order into workspace value b * kept_size
//       + g.
//   bins_finish(args, layout, group_of, offsets, workspace, blocks): thread per group folds the
//       blocks' values in block order and applies post with o = g and n = offsets[g + 1] -
//       offsets[g] (the group's size).
// So every group folds its elements in index order, whatever the grid: the same bits as the
// segmented reduction of the sorted elements would give with a serial fold.
extern __shared__ __align__(16) unsigned char kjit_dynamic_shared[];

enum : int { bins_rounds = 4 };  // rounds of 32 elements each lane loads ahead of folding them

template <class K, class Index, class Args, class Layout>
__device__ __forceinline__ void reduce_bins(const Args& args, const Layout& layout, const int* group_of, const long long* offsets,
                                            void* workspace) {
    typedef typename K::value_type V;
    (void)offsets;
    if constexpr (K::has_identity) {  // without one the host never launches it
        const int groups = static_cast<int>(layout.kept_size);
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
        V* mine = reinterpret_cast<V*>(kjit_dynamic_shared) + static_cast<Index>(warp) * groups;
        for (int g = lane; g < groups; g += 32) mine[g] = K::identity();
        __syncwarp();
        const Index n = static_cast<Index>(layout.reduced_size);
        const Index round = 32 * bins_rounds;
        Index per_block = (n + gridDim.x - 1) / gridDim.x;
        per_block = (per_block + 32 * warps - 1) / (32 * warps) * (32 * warps);
        const Index per_warp = per_block / warps;
        const Index block_begin = static_cast<Index>(blockIdx.x) * per_block;
        const Index begin = block_begin + warp * per_warp < n ? block_begin + warp * per_warp : n;
        const Index end = begin + per_warp < n ? begin + per_warp : n;
        for (Index at = begin; at < end; at += round) {
            V x[bins_rounds];
            int g[bins_rounds];
#pragma unroll
            for (int r = 0; r < bins_rounds; ++r) {
                const Index j = at + r * 32 + lane;
                g[r] = -1;
                if (j < end) {
                    g[r] = group_of[j];
                    Index off[K::in_slots];
#pragma unroll
                    for (int a = 0; a < K::in_slots; ++a) off[a] = j * static_cast<Index>(layout.strides[a][1]);
                    x[r] = K::template map<Index>(args, off, j, Index(0));
                }
            }
#pragma unroll
            for (int r = 0; r < bins_rounds; ++r) {
                const bool valid = g[r] >= 0 && g[r] < groups;
                const unsigned peers = __match_any_sync(0xffffffffu, valid ? g[r] : -1);
                const int rank = __popc(peers & ((1u << lane) - 1u));  // lanes of the same group before this one
                for (int k = 0; __any_sync(0xffffffffu, valid && rank >= k); ++k) {
                    if (valid && rank == k) mine[g[r]] = K::reduce(mine[g[r]], x[r]);
                    __syncwarp();
                }
            }
        }
        __syncthreads();
        V* partials = static_cast<V*>(workspace) + static_cast<Index>(blockIdx.x) * groups;
        const V* all = reinterpret_cast<const V*>(kjit_dynamic_shared);
        for (int g = threadIdx.x; g < groups; g += blockDim.x) {
            V v = all[g];
            for (int w = 1; w < warps; ++w) v = K::reduce(v, all[static_cast<Index>(w) * groups + g]);
            partials[g] = v;
        }
    }
}

template <class K, class Index, class Args, class Layout>
__device__ __forceinline__ void reduce_bins_finish(const Args& args, const Layout& layout, const int* group_of,
                                                   const long long* offsets, const void* workspace, int blocks) {
    typedef typename K::value_type V;
    (void)group_of;
    if constexpr (K::has_identity) {
        const Index groups = static_cast<Index>(layout.kept_size);
        const V* partials = static_cast<const V*>(workspace);
        for (Index o = static_cast<Index>(thread_index()); o < groups; o += static_cast<Index>(thread_count())) {
            V v = partials[o];
            for (Index b = 1; b < static_cast<Index>(blocks); ++b) v = K::reduce(v, partials[b * groups + o]);
            Index out[K::outputs];
            kept_out_offsets(layout, o, out);
            K::template post<Index>(args, out, v, o, static_cast<Index>(offsets[o + 1] - offsets[o]));
        }
    }
}

}  // namespace kjit

#endif  // KJIT_REDUCTION_CUH
