// NVRTC, loaded at run time (libnvrtc.so.13, then other sonames and the toolkit's folders), so
// that an application whose kernels all come from a precompiled cache runs without it.
#pragma once

#include <string>
#include <vector>

#include <nvrtc.h>

namespace kjit::detail {

#define KJIT_NVRTC_FUNCTIONS(X)                                                                   \
    X(nvrtcGetErrorString) X(nvrtcVersion) X(nvrtcGetNumSupportedArchs) X(nvrtcGetSupportedArchs) \
    X(nvrtcCreateProgram) X(nvrtcDestroyProgram) X(nvrtcCompileProgram)                          \
    X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog) X(nvrtcGetPTXSize) X(nvrtcGetPTX)            \
    X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcAddNameExpression) X(nvrtcGetLoweredName)

struct NvrtcApi {
#define KJIT_DECLARE_ENTRY(name) decltype(&::name) name = nullptr;
    KJIT_NVRTC_FUNCTIONS(KJIT_DECLARE_ENTRY)
#undef KJIT_DECLARE_ENTRY
    std::string library_path;  // what was opened
};

// Whether this process has loaded NVRTC already (or a test installed a table); never loads it.
bool nvrtc_loaded() noexcept;

// The process's NVRTC, loaded on first use; throws NoDeviceError naming every place tried.
const NvrtcApi& nvrtc();
// As nvrtc(), but null (and the reason in `why`) instead of throwing.
const NvrtcApi* try_nvrtc(std::string* why = nullptr) noexcept;

// Where kjit looks for NVRTC, in order: $KJIT_NVRTC_LIBRARY, the sonames through the loader's
// search path, then the lib64 folders of $CUDA_PATH, $CUDA_HOME, /usr/local/cuda and the
// toolkit kjit was built with.
std::vector<std::string> nvrtc_candidates();

// Replaces the NVRTC table for the scope's lifetime (tests); a null entry makes calls fail as
// if NVRTC were missing.
class ScopedNvrtcOverride {
public:
    explicit ScopedNvrtcOverride(const NvrtcApi* api);
    ~ScopedNvrtcOverride();
    ScopedNvrtcOverride(const ScopedNvrtcOverride&) = delete;
    ScopedNvrtcOverride& operator=(const ScopedNvrtcOverride&) = delete;

private:
    const NvrtcApi* previous_;
    bool previous_set_;
};

}  // namespace kjit::detail
