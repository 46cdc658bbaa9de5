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
// writes those same arrays (fill their contents between replays). Arrays made during the capture
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
#include <memory>
#include <string>

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

    // The graph's nodes: kernels, copies, memsets, memory allocations and frees.
    std::size_t node_count() const;

    // Writes the graph in Graphviz's DOT language to `path` (cuGraphDebugDotPrint, verbose).
    void debug_dot(const std::string& path) const;

private:
    struct State;
    std::shared_ptr<const State> state_;
};

}  // namespace kjit
