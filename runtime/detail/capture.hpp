// Stream capture (CUDA graphs): what kjit's calls ask before doing what a capture cannot record.
//
// A call on a stream that is being captured must record into the graph or fail saying what to
// do. Two things break a capture: work the driver refuses while a thread captures in global or
// thread-local mode (loading a module, which kjit does on a kernel's first use), and a wait for
// the GPU (reading a count back). The first is made in relaxed mode for its duration, which the
// driver allows; the second is refused with an Error.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

namespace kjit {
class Buffer;
}

namespace kjit::detail {

class Driver;

// Whether `stream` is being captured now (false when the driver cannot say).
bool is_capturing(Driver& d, CUstream stream);

// For its lifetime, lets this thread make calls that a capture in global or thread-local mode
// forbids (cuModuleLoadData, the driver's PTX linker): cuThreadExchangeStreamCaptureMode to
// relaxed, and back. Costs two driver calls that touch no GPU.
class RelaxedCaptureMode {
public:
    RelaxedCaptureMode();
    ~RelaxedCaptureMode();
    RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
    RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

private:
    Driver* driver_ = nullptr;
    CUstreamCaptureMode previous_ = CU_STREAM_CAPTURE_MODE_RELAXED;
};

// What the calls on this thread do with buffers while Graph::capture runs them: the device buffers
// they allocate (graph memory, valid only inside the capture: Buffer::allocate_device tells) and
// the buffers made before that they use (Buffer::record_stream tells), which the graph keeps
// alive. Outside a capture both notes cost one thread-local read.
void note_buffer_made(const std::shared_ptr<Buffer>& buffer);
void note_buffer_used(Buffer& buffer);

// Collects those notes on this thread for its lifetime.
class CollectCapturedBuffers {
public:
    CollectCapturedBuffers();
    ~CollectCapturedBuffers();
    CollectCapturedBuffers(const CollectCapturedBuffers&) = delete;
    CollectCapturedBuffers& operator=(const CollectCapturedBuffers&) = delete;
    const std::vector<std::weak_ptr<Buffer>>& made() const noexcept { return made_; }
    std::vector<std::shared_ptr<Buffer>> take_used() noexcept { return std::move(used_); }

private:
    friend void note_buffer_made(const std::shared_ptr<Buffer>&);
    friend void note_buffer_used(Buffer&);
    std::vector<std::weak_ptr<Buffer>> made_;
    std::vector<const Buffer*> made_addresses_;
    std::vector<std::shared_ptr<Buffer>> used_;
    CollectCapturedBuffers* previous_;
};

// Throws kjit::Error "<what> allocates memory that kjit keeps between calls, which a capture
// cannot ..." when `stream` is being captured: scratch memory made under capture would be graph
// memory, freed by each replay, while later calls count on it.
void refuse_kept_allocation_under_capture(Driver& d, CUstream stream, const std::string& what);

// Throws kjit::Error "<what> waits for the GPU, which a stream being captured into a graph cannot
// record: <instead>" when `stream` is being captured.
void refuse_under_capture(Driver& d, CUstream stream, const std::string& what, const std::string& instead);

}  // namespace kjit::detail
