// nvJitLink, loaded at run time like NVRTC (libnvJitLink.so.13, then other sonames and the
// toolkit's folders): only relocatable device code and LTO-IR need it, so kjit runs without it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

// The header's nvJitLinkCreate... are inline wrappers of versioned symbols (__nvJitLinkCreate_13_0);
// the library also exports the plain names, which the table loads: they stay across versions.
#define NVJITLINK_NO_INLINE
#include <nvJitLink.h>

namespace kjit::detail {

struct NvJitLinkApi {
    nvJitLinkResult (*nvJitLinkCreate)(nvJitLinkHandle*, std::uint32_t, const char**) = nullptr;
    nvJitLinkResult (*nvJitLinkDestroy)(nvJitLinkHandle*) = nullptr;
    nvJitLinkResult (*nvJitLinkAddData)(nvJitLinkHandle, nvJitLinkInputType, const void*, std::size_t,
                                        const char*) = nullptr;
    nvJitLinkResult (*nvJitLinkAddFile)(nvJitLinkHandle, nvJitLinkInputType, const char*) = nullptr;
    nvJitLinkResult (*nvJitLinkComplete)(nvJitLinkHandle) = nullptr;
    nvJitLinkResult (*nvJitLinkGetLinkedCubinSize)(nvJitLinkHandle, std::size_t*) = nullptr;
    nvJitLinkResult (*nvJitLinkGetLinkedCubin)(nvJitLinkHandle, void*) = nullptr;
    nvJitLinkResult (*nvJitLinkGetErrorLogSize)(nvJitLinkHandle, std::size_t*) = nullptr;
    nvJitLinkResult (*nvJitLinkGetErrorLog)(nvJitLinkHandle, char*) = nullptr;
    nvJitLinkResult (*nvJitLinkGetInfoLogSize)(nvJitLinkHandle, std::size_t*) = nullptr;
    nvJitLinkResult (*nvJitLinkGetInfoLog)(nvJitLinkHandle, char*) = nullptr;
    nvJitLinkResult (*nvJitLinkVersion)(unsigned*, unsigned*) = nullptr;
    std::string library_path;  // what was opened
};

// The process's nvJitLink, loaded on first use; throws NoDeviceError naming every place tried and
// saying that linking (relocatable device code, LTO-IR) needs it.
const NvJitLinkApi& nvjitlink();
// As nvjitlink(), but null (and the reason in `why`) instead of throwing.
const NvJitLinkApi* try_nvjitlink(std::string* why = nullptr) noexcept;

// Where kjit looks for nvJitLink, in order: $KJIT_NVJITLINK_LIBRARY, the sonames through the
// loader's search path, then the lib64 folders of $CUDA_PATH, $CUDA_HOME, /usr/local/cuda and the
// toolkit kjit was built with.
std::vector<std::string> nvjitlink_candidates();

// nvJitLink's name for a status ("NVJITLINK_ERROR_NVVM_COMPILE"): the library has no
// nvJitLinkGetErrorString.
const char* nvjitlink_status_name(int status) noexcept;

// Replaces the nvJitLink table for the scope's lifetime (tests); null makes it missing.
class ScopedNvJitLinkOverride {
public:
    explicit ScopedNvJitLinkOverride(const NvJitLinkApi* api);
    ~ScopedNvJitLinkOverride();
    ScopedNvJitLinkOverride(const ScopedNvJitLinkOverride&) = delete;
    ScopedNvJitLinkOverride& operator=(const ScopedNvJitLinkOverride&) = delete;

private:
    const NvJitLinkApi* previous_;
    bool previous_set_;
};

}  // namespace kjit::detail
