#include "kjit/graph.hpp"

#include "kjit/error.hpp"
#include "kjit/buffer.hpp"
#include "runtime/detail/capture.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit {

struct Graph::State {
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    int ordinal = 0;
    std::vector<std::shared_ptr<Buffer>> kept;  // the buffers the captured calls use, made before
    ~State() {
        detail::Driver* d = detail::try_driver();
        if (d == nullptr) return;
        if (exec != nullptr) d->cuGraphExecDestroy(exec);  // nothing useful to do if these fail
        if (graph != nullptr) d->cuGraphDestroy(graph);
    }
};

namespace {

// Ends a capture that `calls` left open (by an exception), dropping what was captured.
void abandon_capture(detail::Driver& d, CUstream stream) {
    CUgraph partial = nullptr;
    if (d.cuStreamEndCapture(stream, &partial) == CUDA_SUCCESS && partial != nullptr) d.cuGraphDestroy(partial);
}

}  // namespace

Graph Graph::capture(const Stream& stream, const std::function<void()>& calls) {
    if (stream.handle() == nullptr || stream.handle() == CU_STREAM_LEGACY || stream.handle() == CU_STREAM_PER_THREAD)
        throw Error("Graph::capture: a default stream cannot be captured into a graph; capture on a stream of its "
                    "own (kjit::Stream::create())");
    const int ordinal = stream.device().ordinal();
    detail::Driver& d = detail::driver_on(ordinal);
    // Thread-local mode: other threads' work is not this capture's business, and this thread's
    // unsafe calls fail rather than corrupt it (kjit makes its module loads relaxed).
    KJIT_CU_CHECK(d.cuStreamBeginCapture(stream.handle(), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    std::vector<std::shared_ptr<Buffer>> used;
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
        used = buffers.take_used();
    } catch (const std::exception& e) {
        abandon_capture(d, stream.handle());
        throw Error(std::string("Graph::capture failed, and nothing was captured: ") + e.what());
    } catch (...) {
        abandon_capture(d, stream.handle());
        throw;
    }
    auto state = std::make_shared<State>();
    state->ordinal = ordinal;
    state->kept = std::move(used);
    const CUresult ended = d.cuStreamEndCapture(stream.handle(), &state->graph);
    if (ended == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED || ended == CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
        throw CudaError(ended, "cuStreamEndCapture", __FILE__, __LINE__,
                        "a call during the capture did what a capture cannot record (a synchronisation, a "
                        "synchronous allocation or copy, work on another stream not joined back): make it "
                        "before the capture");
    KJIT_CU_CHECK(ended);
    KJIT_CU_CHECK(d.cuGraphInstantiateWithFlags(&state->exec, state->graph, 0));
    Graph g;
    g.state_ = std::move(state);
    return g;
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
    KJIT_CU_CHECK(detail::driver_on(state_->ordinal).cuGraphGetNodes(state_->graph, nullptr, &count));
    return count;
}

void Graph::debug_dot(const std::string& path) const {
    if (!state_) throw Error("Graph::debug_dot: an empty Graph");
    KJIT_CU_CHECK(detail::driver_on(state_->ordinal).cuGraphDebugDotPrint(state_->graph, path.c_str(),
                                                                          CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE));
}

}  // namespace kjit
