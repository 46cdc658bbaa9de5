// Stream capture (CUDA graphs): what kjit's calls ask before doing what a capture cannot record.
//
// A call on a stream that is being captured must record into the graph or fail saying what to
// do. Two things break a capture: work the driver refuses while a thread captures in global or
// thread-local mode (loading a module, which kjit does on a kernel's first use), and a wait for
// the GPU (reading a count back). The first is made in relaxed mode for its duration, which the
// driver allows; the second is refused with an Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

#include "kjit/dtype.hpp"

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

// kjit's own scratch memory that a captured call uses (a reduction's workspace, kept between
// calls): a saved graph gives it fresh memory of its own instead of asking for it by name.
void note_scratch_used(Buffer& buffer);

// The scalar arguments of a kjit call, as Graph::capture records them so that a saved graph can
// name them: the kernel's parameter, its dtype and its offset in the launch's first parameter
// (the argument struct).
struct CapturedScalar {
    std::string parameter;
    DType dtype;
    std::uint32_t offset = 0;
};
// One launch of a kjit call under capture: its kernel, the call's name and index among the calls
// of that name, its scalars, and the argument struct it passed (to find its node in the graph).
struct CapturedLaunch {
    CUfunction function = nullptr;
    std::string kernel;
    std::size_t call = 0;
    std::vector<CapturedScalar> scalars;
    std::vector<std::byte> arguments;
};
// Whether this thread's calls are being collected (one thread-local read).
bool capture_collecting() noexcept;
// The call about to launch: its kernel's name, scalars and argument struct (`bytes` at `args`).
// Its launches (note_kernel_launch) are recorded with them.
void note_captured_call(const std::string& kernel, std::vector<CapturedScalar> scalars, const void* args, std::size_t bytes);
void note_kernel_launch(CUfunction f);

// Collects those notes on this thread for its lifetime.
class CollectCapturedBuffers {
public:
    CollectCapturedBuffers();
    ~CollectCapturedBuffers();
    CollectCapturedBuffers(const CollectCapturedBuffers&) = delete;
    CollectCapturedBuffers& operator=(const CollectCapturedBuffers&) = delete;
    const std::vector<std::weak_ptr<Buffer>>& made() const noexcept { return made_; }
    std::vector<std::shared_ptr<Buffer>> take_used() noexcept { return std::move(used_); }
    std::vector<const Buffer*> take_scratch() noexcept { return std::move(scratch_); }
    std::vector<CapturedLaunch> take_launches() noexcept { return std::move(launches_); }

private:
    friend void note_buffer_made(const std::shared_ptr<Buffer>&);
    friend void note_buffer_used(Buffer&);
    friend void note_scratch_used(Buffer&);
    friend void note_captured_call(const std::string&, std::vector<CapturedScalar>, const void*, std::size_t);
    friend void note_kernel_launch(CUfunction);
    std::vector<std::weak_ptr<Buffer>> made_;
    std::vector<const Buffer*> made_addresses_;
    std::vector<std::shared_ptr<Buffer>> used_;
    std::vector<const Buffer*> scratch_;
    std::vector<CapturedLaunch> launches_;
    CapturedLaunch pending_;                      // the call being made (function not yet set)
    std::map<std::string, std::size_t> calls_;   // calls made so far, by kernel name
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
