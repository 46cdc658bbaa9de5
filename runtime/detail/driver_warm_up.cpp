#include "runtime/detail/driver_warm_up.hpp"

#include <atomic>
#include <cstddef>

#include "runtime/detail/driver.hpp"

namespace kjit::detail {

#if defined(KJIT_WARM_UP_MODULE)
// Generated at build time (CMakeLists.txt, cmake/embed_binary.cmake).
extern const unsigned char warm_up_fatbin[];
extern const std::size_t warm_up_fatbin_size;
#endif

namespace {
std::atomic<bool> g_warmed_up{false};
}  // namespace

bool warm_up_driver([[maybe_unused]] Driver& driver, [[maybe_unused]] int ordinal) noexcept {
#if defined(KJIT_WARM_UP_MODULE)
    try {
        const CUcontext context = driver.made_context(ordinal);
        if (context == nullptr || driver.cuCtxSetCurrent(context) != CUDA_SUCCESS) return false;
        CUmodule module = nullptr;
        CUfunction function = nullptr;
        const bool ok = warm_up_fatbin_size > 0 && driver.cuModuleLoadData(&module, warm_up_fatbin) == CUDA_SUCCESS &&
                        driver.cuModuleGetFunction(&function, module, "kjit_warm_up") == CUDA_SUCCESS;
        if (!ok && module != nullptr) (void)driver.cuModuleUnload(module);
        (void)driver.cuCtxSetCurrent(nullptr);
        if (ok) g_warmed_up.store(true);
        return ok;
    } catch (...) {
        return false;
    }
#else
    return false;
#endif
}

bool driver_warmed_up() noexcept { return g_warmed_up.load(); }

}  // namespace kjit::detail
