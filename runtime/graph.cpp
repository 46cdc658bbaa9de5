#include "kjit/graph.hpp"

#include "kjit/error.hpp"
#include "kjit/buffer.hpp"
#include "runtime/detail/call_layout.hpp"
#include "runtime/detail/capture.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/graph_arguments.hpp"
#include "runtime/detail/graph_state.hpp"

#include <algorithm>
#include <optional>

namespace kjit {

Graph::State::~State() {
    detail::Driver* d = detail::try_driver();
    if (d == nullptr) return;
    if (exec != nullptr) d->cuGraphExecDestroy(exec);  // nothing useful to do if these fail
    if (graph != nullptr) d->cuGraphDestroy(graph);
    if (latest != nullptr) d->cuGraphDestroy(latest);
}

std::pair<CUdeviceptr, CUdeviceptr> detail::address_range(const Array& a) {
    char *lo, *hi;
    byte_range({static_cast<char*>(a.data()), static_cast<int>(a.itemsize()), a.ndim(), a.shape().data(), a.strides().data()}, lo, hi);
    return {reinterpret_cast<CUdeviceptr>(lo), reinterpret_cast<CUdeviceptr>(hi)};
}

namespace {

// Ends a capture that `calls` left open (by an exception), dropping what was captured.
void abandon_capture(detail::Driver& d, CUstream stream) {
    CUgraph partial = nullptr;
    if (d.cuStreamEndCapture(stream, &partial) == CUDA_SUCCESS && partial != nullptr) d.cuGraphDestroy(partial);
}

struct Captured {
    CUgraph graph = nullptr;
    std::vector<std::shared_ptr<Buffer>> used;
    std::vector<const Buffer*> scratch;
    std::vector<detail::CapturedLaunch> launches;
};

void refuse_default_stream(const Stream& stream, const char* what) {
    if (stream.handle() == nullptr || stream.handle() == CU_STREAM_LEGACY || stream.handle() == CU_STREAM_PER_THREAD)
        throw Error(std::string(what) + ": a default stream cannot be captured into a graph; capture on a stream of its "
                    "own (kjit::Stream::create())");
}

// Captures what `calls` enqueue on `stream` into a graph (not instantiated); `what` names the API
// in errors.
Captured capture_calls(detail::Driver& d, const Stream& stream, const std::function<void()>& calls, const char* what) {
    // Thread-local mode: other threads' work is not this capture's business, and this thread's
    // unsafe calls fail rather than corrupt it (kjit makes its module loads relaxed).
    KJIT_CU_CHECK(d.cuStreamBeginCapture(stream.handle(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    Captured c;
    try {
        const CurrentStreamGuard current(stream);
        detail::CollectCapturedBuffers buffers;
        calls();
        // Memory allocated under capture belongs to the graph and is freed inside it; an array
        // still held now would point at memory each replay allocates and frees again.
        for (const std::weak_ptr<Buffer>& b : buffers.made())
            if (const std::shared_ptr<Buffer> held = b.lock())
                throw Error("an array made by a captured call (" + std::to_string(held->size()) + " bytes on " +
                            held->device().to_string() + ") is still held after the calls: arrays made during a "
                            "capture live only inside it; make the outputs before the capture and pass them to "
                            "the calls");
        c.used = buffers.take_used();
        c.scratch = buffers.take_scratch();
        c.launches = buffers.take_launches();
    } catch (const std::exception& e) {
        abandon_capture(d, stream.handle());
        throw Error(std::string(what) + " failed, and nothing was captured: " + e.what());
    } catch (...) {
        abandon_capture(d, stream.handle());
        throw;
    }
    const CUresult ended = d.cuStreamEndCapture(stream.handle(), &c.graph);
    if (ended == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED || ended == CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
        throw CudaError(ended, "cuStreamEndCapture", __FILE__, __LINE__,
                        "a call during the capture did what a capture cannot record (a synchronisation, a "
                        "synchronous allocation or copy, work on another stream not joined back): make it "
                        "before the capture");
    KJIT_CU_CHECK(ended);
    return c;
}

const char* update_result_reason(CUgraphExecUpdateResult r) {
    switch (r) {
        case CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED: return "the calls enqueued a different number of steps or other dependencies";
        case CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED: return "a step is of another kind than before (a kernel where a copy was, say)";
        case CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED: return "a kernel step launches another kernel than before (other dtypes or another variant)";
        case CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED: return "a copy or memset step changed in a way the driver cannot update";
        case CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED: return "a step changed in a way the driver cannot update";
        case CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE: return "a kernel step changed its kernel in a way the driver cannot update";
        case CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED: return "a kernel step changed its launch attributes";
        default: return "the new capture does not match the graph";
    }
}

}  // namespace

Graph Graph::capture(const Stream& stream, const std::function<void()>& calls) {
    refuse_default_stream(stream, "Graph::capture");
    const int ordinal = stream.device().ordinal();
    detail::Driver& d = detail::driver_on(ordinal);
    Captured c = capture_calls(d, stream, calls, "Graph::capture");
    auto state = std::make_shared<State>();
    state->ordinal = ordinal;
    state->graph = c.graph;
    state->kept = std::move(c.used);
    state->scratch = std::move(c.scratch);
    state->launches = std::move(c.launches);
    KJIT_CU_CHECK(d.cuGraphInstantiateWithFlags(&state->exec, state->graph, 0));
    return detail::GraphAccess::make(std::move(state));
}

void Graph::update(const Stream& stream, const std::function<void()>& calls) {
    if (!state_) throw Error("Graph::update: an empty Graph (default-constructed or moved from)");
    refuse_default_stream(stream, "Graph::update");
    if (stream.device().ordinal() != state_->ordinal)
        throw Error("Graph::update: the graph was captured on cuda:" + std::to_string(state_->ordinal) + ", not " +
                    stream.device().to_string());
    detail::Driver& d = detail::driver_on(state_->ordinal);
    Captured c = capture_calls(d, stream, calls, "Graph::update");
    CUgraphExecUpdateResultInfo info{};
    const CUresult r = d.cuGraphExecUpdate(state_->exec, c.graph, &info);
    if (r != CUDA_SUCCESS) {
        d.cuGraphDestroy(c.graph);
        if (r != CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) KJIT_CU_CHECK(r);
        throw Error(std::string("Graph::update: the graph is unchanged, because the new capture does not match it: ") +
                    update_result_reason(info.result) + "; capture a new Graph instead");
    }
    // The first graph stays: an executable graph's nodes are named by the nodes of the graph it
    // was instantiated from.
    if (state_->latest != nullptr) d.cuGraphDestroy(state_->latest);
    state_->latest = c.graph;
    state_->kept = std::move(c.used);
    state_->scratch = std::move(c.scratch);
    state_->launches = std::move(c.launches);
    state_->arguments.reset();
}

namespace {

// The arguments the executable graph has now: those of its last capture, its nodes named by the
// graph it was instantiated from (cuGraphExecUpdate pairs them in order).
detail::GraphArguments current_arguments(detail::Driver& d, CUgraph instantiated, CUgraph latest) {
    if (latest == nullptr) return detail::read_graph_arguments(d, instantiated);
    detail::GraphArguments a = detail::read_graph_arguments(d, latest);
    const std::vector<CUgraphNode> from = detail::graph_nodes(d, latest), to = detail::graph_nodes(d, instantiated);
    // The driver does not document that order; each pair is checked to launch the same kernel.
    const auto unpaired = [] { return Error("Graph::update: the graph's steps no longer pair with those it was made from; capture a new Graph"); };
    for (detail::KernelNodeArguments& k : a.kernels) {
        const auto at = std::find(from.begin(), from.end(), k.node);
        if (at == from.end() || from.size() != to.size()) throw unpaired();
        CUgraphNode paired = to[static_cast<std::size_t>(at - from.begin())];
        CUgraphNodeType type;
        KJIT_CU_CHECK(d.cuGraphNodeGetType(paired, &type));
        if (type != CU_GRAPH_NODE_TYPE_KERNEL) throw unpaired();
        CUDA_KERNEL_NODE_PARAMS first{};
        KJIT_CU_CHECK(d.cuGraphKernelNodeGetParams(paired, &first));
        if (first.func != k.params.func || first.kern != k.params.kern) throw unpaired();
        k.node = paired;
    }
    return a;
}

std::string describe(const Array& a) { return a.to_string(); }

// Why `to` cannot replace `from` (array k of the update), or nothing when it can.
void check_replacement(std::size_t k, const Array& from, const Array& to, int ordinal) {
    const auto fail = [k](const std::string& why) { throw Error("Graph::update: array " + std::to_string(k) + ": " + why); };
    if (!from.valid() || !to.valid()) fail("an empty Array");
    if (from.device() != Device::cuda(ordinal) || to.device() != Device::cuda(ordinal))
        fail("the graph runs on cuda:" + std::to_string(ordinal) + ", the arrays are on " + from.device().to_string() + " and " +
             to.device().to_string());
    if (from.dtype() != to.dtype() || from.shape() != to.shape() || from.strides() != to.strides())
        fail("the replacement " + describe(to) + " must have the dtype, shape and strides of " + describe(from));
    if (from.size() == 0) fail(describe(from) + " has no elements, so the graph holds no address of it");
    const auto a = reinterpret_cast<std::uintptr_t>(from.data()), b = reinterpret_cast<std::uintptr_t>(to.data());
    if (a % 256 != b % 256)
        fail("the replacement's address is " + std::to_string(b % 256) + " bytes past a 256-byte boundary, the array's " +
             std::to_string(a % 256) + ": kernels chosen for one alignment may not run on the other");
}

}  // namespace

void Graph::update(std::span<const ArrayUpdate> arrays) {
    if (!state_) throw Error("Graph::update: an empty Graph (default-constructed or moved from)");
    State& st = *state_;
    // The moves, sorted by address (their array's index kept for errors).
    std::vector<detail::AddressMove> moves;
    std::vector<std::size_t> array_of;
    moves.reserve(arrays.size());
    for (std::size_t k = 0; k < arrays.size(); ++k) {
        const Array& from = arrays[k].captured;
        const Array& to = arrays[k].replacement;
        check_replacement(k, from, to, st.ordinal);
        const auto [begin, end] = detail::address_range(from);
        moves.push_back({begin, end, reinterpret_cast<CUdeviceptr>(to.data()) - (reinterpret_cast<CUdeviceptr>(from.data()) - begin)});
    }
    if (moves.empty()) return;
    std::vector<std::size_t> order(moves.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return moves[a].begin < moves[b].begin; });
    std::vector<detail::AddressMove> sorted(moves.size());
    for (std::size_t k = 0; k < order.size(); ++k) sorted[k] = moves[order[k]];
    for (std::size_t k = 1; k < sorted.size(); ++k)
        if (sorted[k].begin < sorted[k - 1].end)
            throw Error("Graph::update: arrays " + std::to_string(std::min(order[k - 1], order[k])) + " and " +
                        std::to_string(std::max(order[k - 1], order[k])) + " overlap in memory; give each memory once");
    // Replacements that overlap would make outputs alias inputs the captured calls did not copy.
    std::vector<std::pair<CUdeviceptr, CUdeviceptr>> targets;
    for (const detail::AddressMove& m : sorted) targets.emplace_back(m.to, m.to + (m.end - m.begin));
    std::sort(targets.begin(), targets.end());
    for (std::size_t k = 1; k < targets.size(); ++k)
        if (targets[k].first < targets[k - 1].second)
            throw Error("Graph::update: two replacements overlap in memory; each array needs memory of its own");

    detail::Driver& d = detail::driver_on(st.ordinal);
    if (!st.arguments) st.arguments = current_arguments(d, st.graph, st.latest);
    detail::GraphArguments& args = *st.arguments;
    if (!args.unreadable.empty())
        throw Error("Graph::update: " + args.unreadable + ", whose arguments this update cannot read; use update(stream, calls)");
    for (std::size_t k = 0; k < moves.size(); ++k)
        for (const auto& [begin, end] : args.copy_ranges)
            if (moves[k].begin < end && begin < moves[k].end)
                throw Error("Graph::update: array " + std::to_string(k) + " is used by a copy or memset step of the graph, whose "
                            "addresses this update does not move; use update(stream, calls)");

    // The changed nodes' new arguments, made before any is set: an array no kernel uses is an
    // Error that leaves the graph as it was.
    std::vector<char> matched(sorted.size(), 0);
    std::vector<std::pair<detail::KernelNodeArguments*, std::vector<std::byte>>> changed;
    for (detail::KernelNodeArguments& node : args.kernels) {
        std::vector<std::byte> patched = node.buffer;
        std::size_t moved = 0;
        for (std::size_t i = 0; i < node.offsets.size(); ++i)
            moved += detail::move_addresses(std::span<std::byte>(patched.data() + node.offsets[i], node.sizes[i]), node.offsets[i],
                                            sorted, &matched);
        if (moved != 0) changed.emplace_back(&node, std::move(patched));
    }
    for (std::size_t k = 0; k < sorted.size(); ++k)
        if (!matched[k])
            throw Error("Graph::update: array " + std::to_string(order[k]) + " (" + describe(arrays[order[k]].captured) +
                        ") is not one the graph's kernels use now");
    // The replacements' memory is kept before any node points at it: a driver failure part way
    // leaves the nodes set so far moved, recorded as moved, and their memory held.
    for (const ArrayUpdate& u : arrays)
        if (std::find(st.kept.begin(), st.kept.end(), u.replacement.buffer()) == st.kept.end()) st.kept.push_back(u.replacement.buffer());
    std::vector<void*> pointers;
    for (auto& [node, patched] : changed) {
        pointers.resize(node->offsets.size());
        for (std::size_t i = 0; i < pointers.size(); ++i) pointers[i] = patched.data() + node->offsets[i];
        CUDA_KERNEL_NODE_PARAMS params = node->params;
        params.kernelParams = pointers.data();
        KJIT_CU_CHECK(d.cuGraphExecKernelNodeSetParams(st.exec, node->node, &params));
        node->buffer = std::move(patched);
        for (std::size_t i = 0; i < node->pointers.size(); ++i) node->pointers[i] = node->buffer.data() + node->offsets[i];
        node->params.kernelParams = node->pointers.data();
    }
    // The old memory goes unless it is a replacement too (a swap) or some step still uses it (another
    // view of the same memory; an array that spans its whole buffer leaves no such view).
    for (std::size_t k = 0; k < arrays.size(); ++k) {
        const std::shared_ptr<Buffer>& b = arrays[k].captured.buffer();
        const bool replacement = std::any_of(arrays.begin(), arrays.end(), [&](const ArrayUpdate& u) { return u.replacement.buffer() == b; });
        const auto at = std::find(st.kept.begin(), st.kept.end(), b);
        if (replacement || at == st.kept.end()) continue;
        const auto begin = reinterpret_cast<CUdeviceptr>(b->data()), end = begin + b->size();
        const bool whole = moves[k].begin <= begin && moves[k].end >= end;
        const bool copied = std::any_of(args.copy_ranges.begin(), args.copy_ranges.end(),
                                        [&](const auto& r) { return r.first < end && begin < r.second; });
        if (whole || (!copied && !detail::kernels_use(args, begin, end))) st.kept.erase(at);
    }
}

void Graph::launch(const Stream& stream) const {
    if (!state_) throw Error("Graph::launch: an empty Graph (default-constructed or moved from)");
    if (stream.device().ordinal() != state_->ordinal)
        throw Error("Graph::launch: the graph was captured on cuda:" + std::to_string(state_->ordinal) +
                    " and cannot run on " + stream.device().to_string());
    detail::Driver& d = detail::driver_on(state_->ordinal);
    KJIT_CU_CHECK(d.cuGraphLaunch(state_->exec, stream.handle()));
    // Freed in order after this replay, should the graph hold their last reference.
    for (const std::shared_ptr<Buffer>& b : state_->kept)
        if (b->kind() == Buffer::Kind::device_pool) b->record_stream(stream);
}

std::size_t Graph::node_count() const {
    if (!state_) return 0;
    std::size_t count = 0;
    KJIT_CU_CHECK(detail::driver_on(state_->ordinal).cuGraphGetNodes(state_->latest ? state_->latest : state_->graph, nullptr, &count));
    return count;
}

void Graph::debug_dot(const std::string& path) const {
    if (!state_) throw Error("Graph::debug_dot: an empty Graph");
    KJIT_CU_CHECK(detail::driver_on(state_->ordinal).cuGraphDebugDotPrint(state_->latest ? state_->latest : state_->graph, path.c_str(),
                                                                          CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE));
}

}  // namespace kjit
