// One check macro per API: a failed call throws with the call's own text, file:line, and the
// status's name and message (DESIGN.md, example 1). Never an assert: these stay under NDEBUG.
#pragma once

#include <cuda.h>

namespace kjit::detail {

[[noreturn]] void throw_cuda_error(CUresult status, const char* call, const char* file, int line);
[[noreturn]] void throw_nvrtc_error(int status, const char* call, const char* file, int line);

}  // namespace kjit::detail

#define KJIT_CU_CHECK(call)                                                                     \
    do {                                                                                        \
        const CUresult kjit_status_ = (call);                                                   \
        if (kjit_status_ != CUDA_SUCCESS)                                                       \
            ::kjit::detail::throw_cuda_error(kjit_status_, #call, __FILE__, __LINE__);          \
    } while (0)

#define KJIT_NVRTC_CHECK(call)                                                                  \
    do {                                                                                        \
        const int kjit_status_ = static_cast<int>(call);                                        \
        if (kjit_status_ != 0) ::kjit::detail::throw_nvrtc_error(kjit_status_, #call, __FILE__, __LINE__); \
    } while (0)
