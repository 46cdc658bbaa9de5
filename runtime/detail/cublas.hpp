// cuBLAS, loaded at run time (libcublas.so.13, then other sonames and the toolkit's folders) like
// the driver and NVRTC, so that libkjit loads, and every kernel runs, where cuBLAS is missing:
// only matmul needs it, and says so when it cannot be found.
#pragma once

#include <string>
#include <vector>

#include <cublas_api.h>

namespace kjit::detail {

#define KJIT_CUBLAS_FUNCTIONS(X)                                                                \
    X(cublasCreate_v2) X(cublasDestroy_v2) X(cublasSetStream_v2) X(cublasSetWorkspace_v2)       \
    X(cublasGetStatusName) X(cublasGetStatusString) X(cublasGemmStridedBatchedEx_64)            \
    X(cublasGetVersion_v2) X(cublasSgemm_v2)

struct CublasApi {
#define KJIT_DECLARE_ENTRY(name) decltype(&::name) name = nullptr;
    KJIT_CUBLAS_FUNCTIONS(KJIT_DECLARE_ENTRY)
#undef KJIT_DECLARE_ENTRY
    std::string library_path;
};

// The process's cuBLAS, loaded on first use; throws NoDeviceError naming every place tried.
const CublasApi& cublas();
// As cublas(), but null (and the reason in `why`) instead of throwing.
const CublasApi* try_cublas(std::string* why = nullptr) noexcept;

std::vector<std::string> cublas_candidates();

[[noreturn]] void throw_cublas_error(int status, const char* call, const char* file, int line);

}  // namespace kjit::detail

#define KJIT_CUBLAS_CHECK(call)                                                                 \
    do {                                                                                        \
        const int kjit_status_ = static_cast<int>(call);                                        \
        if (kjit_status_ != 0) ::kjit::detail::throw_cublas_error(kjit_status_, #call, __FILE__, __LINE__); \
    } while (0)
