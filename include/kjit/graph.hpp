// Graph: a sequence of kjit calls captured once on a stream (CUDA stream capture) and replayed as
// one CUDA graph, at a fraction of the calls' host cost.
//
//   const kjit::Stream s = kjit::Stream::create();
//   kjit::Graph g = kjit::Graph::capture(s, [&] {
//       axpb(x, 2.0f, 1.0f, y);                  // calls without a stream go to `s`
//       kjit::sum(y, {}, total);
//   });
//   for (int step = 0; step < 1000; ++step) g.launch(s);
//
// Capture records what the calls enqueue, with the arrays they were given: a replay reads and
// writes those same arrays (fill their contents between replays), until update() moves it to
// others. Arrays made during the capture
// (temporaries, outputs not given) are graph memory, allocated and freed by each replay: one still
// held when the calls return is an Error, so make outputs before the capture. The graph keeps the
// arrays' memory the calls used alive (and kjit keeps loaded modules for the process's life), so
// it may outlive the Array and kernel objects it was captured with. A kernel used for the first time inside the capture
// is compiled or loaded then, in the driver's relaxed capture mode, which keeps the capture valid.
// A call that must wait for the GPU (a copy to the host, counting groups) fails under capture
// with an Error saying what to do instead.
#pragma once

#include "kjit/export.hpp"

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>

#include "kjit/array.hpp"
#include "kjit/scalar.hpp"
#include "kjit/stream.hpp"

namespace kjit {

namespace detail {
struct GraphAccess;
}

class KJIT_API Graph {
public:
    // Captures what `calls` enqueue on `stream`, made the thread's current stream while they run,
    // and instantiates the graph. `stream` must be a stream of its own (Stream::create or a
    // wrapped CUstream), not a default stream, which CUDA cannot capture. An exception from
    // `calls`, or a call that breaks the capture, ends the capture and is rethrown as an Error
    // saying the capture failed; the stream is usable afterwards.
    static Graph capture(const Stream& stream, const std::function<void()>& calls);

    // Replays the graph on `stream` (any stream of the capture's device), asynchronously.
    void launch(const Stream& stream) const;

    // Moves the graph to other arrays: every use its kernels make of `captured`'s memory goes to
    // `replacement`'s, which must be on the same device with the same dtype, shape and strides, and
    // whose address has the same remainder modulo 256 (kernels may have been chosen for an
    // alignment). The executable graph's kernel nodes are patched in place: no capture, no
    // instantiation. `captured` is the array the graph uses now (the one given to the capture,
    // or the replacement of an earlier update). Replays already launched are not affected; the
    // graph then keeps the replacements' memory alive instead. Throws kjit::Error, changing
    // nothing, for arrays that do not match, an array the graph does not use, arrays that overlap,
    // or an array that a copy or memset node of the graph uses (update(stream, calls) handles
    // those).
    struct ArrayUpdate {
        Array captured;
        Array replacement;
    };
    void update(std::span<const ArrayUpdate> arrays);
    void update(std::initializer_list<ArrayUpdate> arrays) { update(std::span<const ArrayUpdate>(arrays.begin(), arrays.size())); }

    // Captures `calls` again on `stream` (other scalars, other arrays, any change that keeps the
    // graph's shape) and updates the executable graph in place (cuGraphExecUpdate), which is far
    // cheaper than instantiating a new one. The calls must enqueue the same kinds of work in the
    // same order and dependencies, with the same kernels; otherwise an Error says what differs and
    // the graph is unchanged.
    void update(const Stream& stream, const std::function<void()>& calls);
    // Copies of a Graph share one graph, updates included. Like CUDA's graphs, an update must not
    // run while another thread launches or updates the same graph (or a copy of it).

    // The graph's nodes: kernels, copies, memsets, memory allocations and frees.
    std::size_t node_count() const;

    // Writes the graph in Graphviz's DOT language to `path` (cuGraphDebugDotPrint, verbose).
    void debug_dot(const std::string& path) const;

    // Saved graphs: the graph written to `path` as a description (README, "Saved graphs") that another
    // process loads and replays with arrays of its own, its kernels found by their cache keys in
    // a kernel cache (KJIT_CACHE_DIR, or a read-only one shipped with the application): no
    // source, no NVRTC there.
    //   g.save("step.kjitgraph", {{"x", x}, {"y", y}}, {{"a", "axpb.a"}});
    //   ... in another process, with the cache the kernels were compiled into:
    //   kjit::Graph g = kjit::Graph::load("step.kjitgraph", s, {{"x", x2}, {"y", y2}}, {{"a", 3.0f}});
    // Every array the graph reads or writes must be named (an Error names the step that uses one
    // that is not); graph memory and kjit's scratch need no name: a loaded graph has its own. A
    // scalar is named by the parameter of the kjit kernel it was passed to, "kernel.param" (every
    // call of that kernel) or "kernel.param@k" (its k-th call in the graph, from 0); raw kernels'
    // scalars are not named. save() refuses a graph with steps that cannot be saved: a kernel
    // kjit did not compile (cuBLAS's), one whose cache entry is in no cache folder, a copy that
    // touches host memory, event or host steps.
    struct NamedArray {
        std::string name;
        Array array;
    };
    struct NamedScalar {
        std::string name;
        std::string parameter;  // "kernel.param" or "kernel.param@k"
    };
    void save(const std::string& path, std::span<const NamedArray> arrays, std::span<const NamedScalar> scalars = {}) const;
    void save(const std::string& path, std::initializer_list<NamedArray> arrays, std::initializer_list<NamedScalar> scalars = {}) const {
        save(path, std::span<const NamedArray>(arrays.begin(), arrays.size()), std::span<const NamedScalar>(scalars.begin(), scalars.size()));
    }

    // Builds the graph saved at `path` on `stream`'s device, bound to `arrays` (every name the
    // file has, each with the dtype, shape, strides and address alignment modulo 256 of the one
    // saved) and to `scalars` (any of the named scalars; the others keep their captured values;
    // a value is cast to its parameter's dtype). Kernels are loaded from the kernel cache; one
    // the cache does not hold is an Error naming it. The graph keeps `arrays`' memory alive.
    struct ScalarValue {
        std::string name;
        Scalar value;
    };
    static Graph load(const std::string& path, const Stream& stream, std::span<const NamedArray> arrays,
                      std::span<const ScalarValue> scalars = {});
    static Graph load(const std::string& path, const Stream& stream, std::initializer_list<NamedArray> arrays,
                      std::initializer_list<ScalarValue> scalars = {}) {
        return load(path, stream, std::span<const NamedArray>(arrays.begin(), arrays.size()),
                    std::span<const ScalarValue>(scalars.begin(), scalars.size()));
    }

    struct State;  // runtime/detail/graph_state.hpp

private:
    friend struct detail::GraphAccess;
    std::shared_ptr<State> state_;  // copies share the graph, updates included
};

}  // namespace kjit
