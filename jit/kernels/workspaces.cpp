#include "jit/kernels/workspaces.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "kjit/buffer.hpp"
#include "runtime/detail/capture.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit::jit::kernels {
namespace {

class Workspaces {
public:
    void* get(int device, const Stream& stream, Scratch use, std::size_t bytes, const char* what) {
        Slot& s = slots_[{device, stream.handle(), static_cast<int>(use)}];
        if (!s.buffer || s.bytes < bytes) {
            detail::refuse_kept_allocation_under_capture(detail::driver_on(device), stream.handle(),
                                                         std::string(what) + " (its workspace of " + std::to_string(bytes) + " bytes)");
            const std::size_t size = std::max<std::size_t>(bytes, s.bytes * 2);
            s.buffer = Buffer::allocate_device(size, stream);
            s.bytes = size;
            if (use == Scratch::reduce_full)
                KJIT_CU_CHECK(detail::driver_on(device).cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(s.buffer->data()), 0, 16,
                                                                        stream.handle()));
        }
        s.buffer->record_stream(stream);
        detail::note_scratch_used(*s.buffer);
        return s.buffer->data();
    }

private:
    struct Slot {
        std::shared_ptr<Buffer> buffer;
        std::size_t bytes = 0;
    };
    std::map<std::tuple<int, CUstream, int>, Slot> slots_;
};

}  // namespace

void* scratch_memory(int device, const Stream& stream, Scratch use, std::size_t bytes, const char* what) {
    thread_local Workspaces w;
    return w.get(device, stream, use, bytes, what);
}

}  // namespace kjit::jit::kernels
