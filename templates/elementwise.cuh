// kjit: support code for elementwise kernels (embedded in every generated elementwise module).
// Raw<T>, Layout<arrays> and the limits they use, shared with the host code that fills them.
#include "launch_layout.cuh"

namespace kjit {

// The rest serves the variants that walk vectors, layouts or grid-stride loops; a program of the
// small variant alone (one element per thread) leaves it out, which NVRTC notices.
#ifndef KJIT_ELEMENTWISE_SMALL_ONLY

// N consecutive elements moved with the widest loads the alignment allows (16 bytes and more).
template <class T, int N>
struct alignas(sizeof(T) * N >= 16 ? 16 : sizeof(T) * N) Vec {
    T v[N];
};
template <int N, class T>
__device__ __forceinline__ Vec<T, N> load(const T* p) { return *reinterpret_cast<const Vec<T, N>*>(p); }
template <int N, class T>
__device__ __forceinline__ void store(T* p, const Vec<T, N>& x) { *reinterpret_cast<Vec<T, N>*>(p) = x; }
// N copies of one element (an operand broadcast along the vector's dimension).
template <int N, class T>
__device__ __forceinline__ Vec<T, N> splat(const T& x) {
    Vec<T, N> r;
#pragma unroll
    for (int k = 0; k < N; ++k) r.v[k] = x;
    return r;
}

// The offsets in each operand of element `e` of the first `dims` dimensions, counted in C order.
template <class Index, int arrays>
__device__ __forceinline__ void offsets_over(const Layout<arrays>& layout, int dims, Index e, Index (&off)[arrays]) {
#pragma unroll
    for (int a = 0; a < arrays; ++a) off[a] = 0;
    for (int d = dims - 1; d >= 0; --d) {
        const Index extent = static_cast<Index>(layout.shape[d]);
        const Index k = e % extent;
        e /= extent;
#pragma unroll
        for (int a = 0; a < arrays; ++a) off[a] += k * static_cast<Index>(layout.strides[a][d]);
    }
}

// The offsets of element `e` (in C order over the shape) in each operand.
template <class Index, int arrays>
__device__ __forceinline__ void offsets(const Layout<arrays>& layout, Index e, Index (&off)[arrays]) {
    offsets_over(layout, layout.ndim, e, off);
}

// The offsets of row `row` (in C order over every dimension but the last) in each operand.
template <class Index, int arrays>
__device__ __forceinline__ void outer_offsets(const Layout<arrays>& layout, Index row, Index (&off)[arrays]) {
    offsets_over(layout, layout.ndim - 1, row, off);
}

__device__ __forceinline__ long long thread_index() { return blockIdx.x * (long long)blockDim.x + threadIdx.x; }
__device__ __forceinline__ long long thread_count() { return (long long)gridDim.x * blockDim.x; }

#endif  // KJIT_ELEMENTWISE_SMALL_ONLY

// --- The variants ---
//
// A generated module for kernel NAME (jit/codegen/elementwise.cpp) defines the user's body and
//   struct NAME_args: one field per parameter in order (`const T* x` for an array input, `T* y` for
//       an array output, `T a` for a scalar, `kjit::Raw<T> r` for a raw parameter), then `long long n`;
//   struct NAME_k: the per-operand accessors these loops call, with no loops of its own:
//       args (NAME_args); arrays (array operands, at least 1: the slots of Layout<arrays> in
//       parameter order), vector (V), tile, tile_per (enumerators: see below);
//       state, prep(state&, args), after(state&, args): CuPy's loop_prep and after_loop around
//           each thread's loop (an empty struct and no-ops without them);
//       at(args, off, i, state): the body on one element, array operand s at offset off[s] (its
//           element loaded, converted to the parameter's type, and an output written in place);
//       vectors: a kjit::Vec<T, V> per array operand, then
//           load(vectors&, args, off, broadcast): V elements of each array input from off[s] (one
//               element repeated where broadcast[s]), and of each output the body reads or may
//               leave unassigned;
//           compute(vectors&, args, e, state): the body on elements e .. e + V - 1 in registers;
//           store(vectors&, args, off): each output's V elements back to off[s];
//       lanes, tiles, each_input(tiles&, lanes&, args, f), at_tiled(args, lanes, k, off, i,
//           state): the tiled variant's per-input registers and shared tiles (below);
// and per variant one entry line, an extern "C" kernel with __launch_bounds__(256) calling the
// template below, with the argument struct by value (and the Layout by value where the variant
// takes one). Index is int (every offset and index below 2^31) or long long.

// Every array operand at the same offset `e` (operands of the same contiguous shape).
template <int arrays, class Index>
__device__ __forceinline__ void same_offsets(Index e, Index (&off)[arrays]) {
#pragma unroll
    for (int a = 0; a < arrays; ++a) off[a] = e;
}

// Small: contiguous operands of at most kSmallCallElements (runtime/detail/call_layout.hpp), one
// element per thread, no alignment needed. Such calls last as long as a launch whatever the
// kernel, and this one costs NVRTC less than half of the contiguous variant (no vectors, no
// unrolled steps): the difference a first call on small arrays waits for.
template <class K>
__device__ __forceinline__ void small(const typename K::args& args) {
    typename K::state state;
    K::prep(state, args);
    const int e = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (e < static_cast<int>(args.n)) {
        int off[K::arrays];
        same_offsets(e, off);
        K::at(args, off, e, state);
    }
    K::after(state, args);
}

#ifndef KJIT_ELEMENTWISE_SMALL_ONLY

// Contiguous: every array operand is C-contiguous over the same n elements and aligned to V
// elements. Each thread takes one vector at a time, a grid apart, then a scalar tail. Launched
// with one thread per vector (jit/kernels/elementwise/call.cpp); several vectors per thread at
// once measured no faster on the H200 (docs/perf-log.md).
template <class K, class Index>
__device__ __forceinline__ void contiguous(const typename K::args& args) {
    enum : int { V = K::vector };
    typename K::state state;
    K::prep(state, args);
    const bool broadcast[K::arrays] = {};
    const Index n = static_cast<Index>(args.n);
    const Index stride = static_cast<Index>(thread_count());
    const Index vectors = n / V;
    for (Index v = static_cast<Index>(thread_index()); v < vectors; v += stride) {
        const Index e = v * V;
        Index off[K::arrays];
        same_offsets(e, off);
        typename K::vectors r;
        K::load(r, args, off, broadcast);
        K::compute(r, args, e, state);
        K::store(r, args, off);
    }
    for (Index e = vectors * V + static_cast<Index>(thread_index()); e < n; e += stride) {
        Index off[K::arrays];
        same_offsets(e, off);
        K::at(args, off, e, state);
    }
    K::after(state, args);
}

// Strided: any shapes and strides (broadcasting by zero strides), in C order over the shape.
template <class K, class Index>
__device__ __forceinline__ void strided(const typename K::args& args, const Layout<K::arrays>& layout) {
    typename K::state state;
    K::prep(state, args);
    const Index n = static_cast<Index>(args.n);
    const Index stride = static_cast<Index>(thread_count());
    for (Index e = static_cast<Index>(thread_index()); e < n; e += stride) {
        Index off[K::arrays];
        offsets(layout, e, off);
        K::at(args, off, e, state);
    }
    K::after(state, args);
}

// Rows: the last dimension is contiguous (stride 1) or broadcast (stride 0) in every operand and a
// multiple of V long, so V elements of a row move with vector loads (or one load repeated); the
// other dimensions are strided. Broadcasting a row or a column runs here. 32-bit offsets.
template <class K>
__device__ __forceinline__ void rows(const typename K::args& args, const Layout<K::arrays>& layout) {
    typedef int Index;
    enum : int { V = K::vector };
    typename K::state state;
    K::prep(state, args);
    const int last = layout.ndim - 1;
    const Index inner = static_cast<Index>(layout.shape[last]);
    const Index stride = static_cast<Index>(thread_count());
    const Index vectors = static_cast<Index>(args.n) / V;
    for (Index v = static_cast<Index>(thread_index()); v < vectors; v += stride) {
        const Index e = v * V;
        const Index row = e / inner;
        const Index col = e - row * inner;
        Index outer[K::arrays];
        outer_offsets(layout, row, outer);
        // The row's offset and the column's, added as 64-bit pointer offsets: summed in 32 bits
        // instead, the variant took 2 registers more.
        long long off[K::arrays];
        bool broadcast[K::arrays];
#pragma unroll
        for (int a = 0; a < K::arrays; ++a) {
            off[a] = static_cast<long long>(outer[a]) + col * static_cast<Index>(layout.strides[a][last]);
            broadcast[a] = layout.strides[a][last] == 0;
        }
        typename K::vectors r;
        K::load(r, args, off, broadcast);
        K::compute(r, args, e, state);
        K::store(r, args, off);
    }
    K::after(state, args);
}

// Tiled: two dimensions where some inputs are transposed against the outputs (their first
// dimension is the contiguous one). Each block (of 256 threads) takes TILE x TILE tiles;
// transposed inputs are read along their contiguous dimension into shared memory (a TILE x
// (TILE + 1) tile each: the extra column keeps a column's elements in different banks), then
// every element is computed in the outputs' order, so that reads and writes stay coalesced. Each
// thread issues all of its loads of a step before using any (PER elements per input), which is
// what brings the transposed read near the copy's speed (docs/perf-log.md). A thread works on one
// lane of the tile and every STEP-th line across it: its PER elements are at one base address
// plus multiples of a stride, which keeps registers few (computing every element's address apart
// took 191 registers, one block per SM).
//   K::tiles: one `T x[TILE][TILE + 1]` per array input; K::lanes: one `T x[PER]` per array
//   input; K::each_input(tiles, lanes, args, f) calls f(tile, lane values, pointer, slot) for each
//   array input in parameter order.
template <class K>
__device__ __forceinline__ void tiled(const typename K::args& args, const Layout<K::arrays>& layout) {
    enum : int { TILE = K::tile, STEP = 256 / TILE, PER = K::tile_per };
    static_assert(PER * STEP == TILE, "K::tile_per is TILE / (256 / TILE)");
    __shared__ typename K::tiles tiles;
    typename K::state state;
    K::prep(state, args);
    const int rows = static_cast<int>(layout.shape[0]), cols = static_cast<int>(layout.shape[1]);
    const int tiles_across = (cols + TILE - 1) / TILE, count = ((rows + TILE - 1) / TILE) * tiles_across;
    const int lane = threadIdx.x % TILE, band = threadIdx.x / TILE;
    // Staged: the input's rows are its contiguous dimension, not its columns (outputs' slots unused).
    bool staged[K::arrays];
#pragma unroll
    for (int a = 0; a < K::arrays; ++a) staged[a] = (int)layout.strides[a][0] == 1 && (int)layout.strides[a][1] != 1;
    for (int t = blockIdx.x; t < count; t += gridDim.x) {
        const int r0 = (t / tiles_across) * TILE, c0 = (t % tiles_across) * TILE;
        typename K::lanes in;
        // Staging: row r0 + lane, columns c0 + band + k * STEP (along the input's contiguous
        // dimension across a warp); every load first, then the stores into the tiles.
        const int sr = r0 + lane;
        K::each_input(tiles, in, args, [&](auto&, auto& v, const auto* p, int a) {
            const int s0 = (int)layout.strides[a][0], s1 = (int)layout.strides[a][1];
            if (staged[a]) {
                const auto* base = p + sr * s0 + (c0 + band) * s1;
#pragma unroll
                for (int k = 0; k < PER; ++k)
                    if (sr < rows && c0 + band + k * STEP < cols) v[k] = base[k * STEP * s1];
            }
        });
        K::each_input(tiles, in, args, [&](auto& tile, auto& v, const auto*, int a) {
            if (staged[a]) {
#pragma unroll
                for (int k = 0; k < PER; ++k)
                    if (sr < rows && c0 + band + k * STEP < cols) tile[band + k * STEP][lane] = v[k];
            }
        });
        __syncthreads();
        // Computing: column c0 + lane, rows r0 + band + k * STEP (the outputs' order across a
        // warp); every input's values first, one loop per input and case (a select between the
        // tile and memory would issue both loads), then the body and the stores.
        const int cc = c0 + lane;
        K::each_input(tiles, in, args, [&](auto& tile, auto& v, const auto* p, int a) {
            const int s0 = (int)layout.strides[a][0], s1 = (int)layout.strides[a][1];
            if (staged[a]) {
#pragma unroll
                for (int k = 0; k < PER; ++k)
                    if (r0 + band + k * STEP < rows && cc < cols) v[k] = tile[lane][band + k * STEP];
            } else {
                const auto* base = p + (r0 + band) * s0 + cc * s1;
#pragma unroll
                for (int k = 0; k < PER; ++k)
                    if (r0 + band + k * STEP < rows && cc < cols) v[k] = base[k * STEP * s0];
            }
        });
#pragma unroll
        for (int k = 0; k < PER; ++k) {
            const int r = r0 + band + k * STEP;
            if (r >= rows || cc >= cols) continue;
            int off[K::arrays];
#pragma unroll
            for (int a = 0; a < K::arrays; ++a) off[a] = r * (int)layout.strides[a][0] + cc * (int)layout.strides[a][1];
            K::at_tiled(args, in, k, off, r * cols + cc, state);
        }
        __syncthreads();
    }
    K::after(state, args);
}

#endif  // KJIT_ELEMENTWISE_SMALL_ONLY

}  // namespace kjit
