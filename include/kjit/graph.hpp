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
#include "kjit/stream.hpp"

namespace kjit {

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

private:
    struct State;
    std::shared_ptr<State> state_;  // copies share the graph, updates included
};

}  // namespace kjit
