// What a kjit::Graph holds, shared by its copies: the graph it was instantiated from, the
// executable graph, the memory it keeps alive and what the capture recorded of kjit's calls. Here
// rather than in graph.cpp so that saved graphs (jit/graphs/saved_graph.cpp) can read a captured
// graph and make a loaded one.
#pragma once

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <cuda.h>

#include "kjit/buffer.hpp"
#include "kjit/graph.hpp"
#include "runtime/detail/capture.hpp"
#include "runtime/detail/graph_arguments.hpp"

namespace kjit {

struct Graph::State {
    CUgraph graph = nullptr;   // the graph `exec` was instantiated from: its nodes name exec's
    CUgraph latest = nullptr;  // the capture of the last update(stream, calls), if any
    CUgraphExec exec = nullptr;
    int ordinal = 0;
    std::vector<std::shared_ptr<Buffer>> kept;  // the buffers the captured calls use, made before
    // Of those, kjit's own scratch (workspaces), and kjit's launches as the capture recorded them
    // (their scalars by name): what save() needs beyond the graph.
    std::vector<const Buffer*> scratch;
    std::vector<detail::CapturedLaunch> launches;
    std::vector<std::shared_ptr<const void>> modules;  // a loaded graph's modules
    // The kernel nodes' arguments as the executable graph has them now, read on the first
    // update() with arrays.
    std::optional<detail::GraphArguments> arguments;
    ~State();
};

namespace detail {

// Makes a Graph of a state, and reads a Graph's state.
struct GraphAccess {
    static Graph make(std::shared_ptr<Graph::State> state) {
        Graph g;
        g.state_ = std::move(state);
        return g;
    }
    static const std::shared_ptr<Graph::State>& state(const Graph& g) { return g.state_; }
};

// The device bytes `a` addresses: [begin, end).
std::pair<CUdeviceptr, CUdeviceptr> address_range(const Array& a);

}  // namespace detail
}  // namespace kjit
