// NCCL, loaded at run time like cuBLAS: kjit never links it and ships no copy. libkjit loads, and
// everything but kjit::nccl works, where NCCL is missing; kjit::nccl says what it tried.
//
// Where kjit looks (nccl_candidates()), in order: $KJIT_NCCL_LIBRARY, libnccl.so.2 and libnccl.so
// through the loader's search path (which also finds a copy already loaded into the process, as
// PyTorch's wheel loads its own), then the lib64 and lib folders of $CUDA_PATH, $CUDA_HOME,
// /usr/local/cuda and the toolkit kjit was built with.
//
// NCCL's header is not part of the CUDA toolkit, so kjit builds without it: the few types below
// are declared here as nccl.h declares them (NCCL's ABI, unchanged since 2.0 for what is used
// here); tests/nccl_test.cpp checks them against nccl.h where one is installed.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <cuda.h>

namespace kjit::detail {

struct NcclCommOpaque;                      // struct ncclComm
using NcclComm = NcclCommOpaque*;           // ncclComm_t
inline constexpr std::size_t kNcclUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
struct NcclUniqueId {                       // ncclUniqueId
    char internal[kNcclUniqueIdBytes];
};
using NcclResult = int;                     // ncclResult_t (a C enum: passed and returned as int)
using NcclDataType = int;                   // ncclDataType_t
using NcclRedOp = int;                      // ncclRedOp_t

// ncclResult_t's values (constants of the int types above, so that fakes and checks need no casts).
inline constexpr NcclResult kNcclSuccess = 0;
inline constexpr NcclResult kNcclUnhandledCudaError = 1;
inline constexpr NcclResult kNcclSystemError = 2;
inline constexpr NcclResult kNcclInternalError = 3;
inline constexpr NcclResult kNcclInvalidArgument = 4;
inline constexpr NcclResult kNcclInvalidUsage = 5;
inline constexpr NcclResult kNcclRemoteError = 6;
inline constexpr NcclResult kNcclInProgress = 7;

// ncclDataType_t's values (bfloat16 since NCCL 2.10).
inline constexpr NcclDataType kNcclInt8 = 0;
inline constexpr NcclDataType kNcclUint8 = 1;
inline constexpr NcclDataType kNcclInt32 = 2;
inline constexpr NcclDataType kNcclUint32 = 3;
inline constexpr NcclDataType kNcclInt64 = 4;
inline constexpr NcclDataType kNcclUint64 = 5;
inline constexpr NcclDataType kNcclFloat16 = 6;
inline constexpr NcclDataType kNcclFloat32 = 7;
inline constexpr NcclDataType kNcclFloat64 = 8;
inline constexpr NcclDataType kNcclBfloat16 = 9;

// ncclRedOp_t's values (avg since NCCL 2.10).
inline constexpr NcclRedOp kNcclSum = 0;
inline constexpr NcclRedOp kNcclProd = 1;
inline constexpr NcclRedOp kNcclMax = 2;
inline constexpr NcclRedOp kNcclMin = 3;
inline constexpr NcclRedOp kNcclAvg = 4;

// NCCL_VERSION(2, 10, 0): the first with bfloat16 and ncclAvg.
inline constexpr int kNcclVersionBf16AndAvg = 21000;

// Every entry kjit calls: X(name, return type, parameter list). All must be there except those of
// KJIT_NCCL_OPTIONAL_FUNCTIONS, which may be null (an older NCCL).
#define KJIT_NCCL_FUNCTIONS(X)                                                                     \
    X(ncclGetVersion, NcclResult, (int*))                                                          \
    X(ncclGetUniqueId, NcclResult, (NcclUniqueId*))                                                \
    X(ncclCommInitRank, NcclResult, (NcclComm*, int, NcclUniqueId, int))                           \
    X(ncclCommInitAll, NcclResult, (NcclComm*, int, const int*))                                   \
    X(ncclCommDestroy, NcclResult, (NcclComm))                                                     \
    X(ncclCommAbort, NcclResult, (NcclComm))                                                       \
    X(ncclCommGetAsyncError, NcclResult, (NcclComm, NcclResult*))                                  \
    X(ncclCommCount, NcclResult, (NcclComm, int*))                                                 \
    X(ncclCommCuDevice, NcclResult, (NcclComm, int*))                                              \
    X(ncclCommUserRank, NcclResult, (NcclComm, int*))                                              \
    X(ncclAllReduce, NcclResult, (const void*, void*, std::size_t, NcclDataType, NcclRedOp, NcclComm, CUstream)) \
    X(ncclReduceScatter, NcclResult, (const void*, void*, std::size_t, NcclDataType, NcclRedOp, NcclComm, CUstream)) \
    X(ncclAllGather, NcclResult, (const void*, void*, std::size_t, NcclDataType, NcclComm, CUstream)) \
    X(ncclBroadcast, NcclResult, (const void*, void*, std::size_t, NcclDataType, int, NcclComm, CUstream)) \
    X(ncclGroupStart, NcclResult, ())                                                              \
    X(ncclGroupEnd, NcclResult, ())                                                                \
    X(ncclGetErrorString, const char*, (NcclResult))
// ncclGetLastError: NCCL 2.13 and later.
#define KJIT_NCCL_OPTIONAL_FUNCTIONS(X) X(ncclGetLastError, const char*, (NcclComm))

struct NcclApi {
#define KJIT_DECLARE_ENTRY(name, ret, params) ret(*name) params = nullptr;
    KJIT_NCCL_FUNCTIONS(KJIT_DECLARE_ENTRY)
    KJIT_NCCL_OPTIONAL_FUNCTIONS(KJIT_DECLARE_ENTRY)
#undef KJIT_DECLARE_ENTRY
    std::string library_path;  // what opened it
    int version = 0;           // ncclGetVersion's code: 22809 for 2.28.9
};

// The result of trying to load NCCL from `candidates`: the table, or why not (naming NCCL, every
// candidate tried and KJIT_NCCL_LIBRARY).
struct NcclLoad {
    NcclApi api;
    bool ok = false;
    std::string error;
};
NcclLoad load_nccl(const std::vector<std::string>& candidates);

std::vector<std::string> nccl_candidates();

// The process's NCCL (or a test's override). Loaded on first use and kept; a failed load is tried
// again at the next use (so that setting KJIT_NCCL_LIBRARY later works). nccl() throws
// NoDeviceError with the reason; try_nccl() returns null and puts it in `why`.
const NcclApi& nccl();
const NcclApi* try_nccl(std::string* why = nullptr) noexcept;

// Replaces the NCCL table for the scope's lifetime (tests). A null `api` makes NCCL absent, with
// `why_absent` as the reason. Only for tests: not safe while other threads use kjit::nccl.
class ScopedNcclOverride {
public:
    explicit ScopedNcclOverride(const NcclApi* api, std::string why_absent = "NCCL not found (a test's override)");
    ~ScopedNcclOverride();
    ScopedNcclOverride(const ScopedNcclOverride&) = delete;
    ScopedNcclOverride& operator=(const ScopedNcclOverride&) = delete;

private:
    const NcclApi* previous_;
    bool previous_set_;
    std::string previous_why_;
};

// "ncclInvalidArgument" for a status; "ncclResult 42" for one NCCL does not define.
std::string nccl_status_name(NcclResult status);
// "2.28.9" for 22809 (and NCCL's older coding, 2708 for 2.7.8).
std::string nccl_version_string(int code);

// Throws kjit::nccl::NcclError: `call` (its text) failed with `status`, in `where` (a kjit
// function and what it worked on), with NCCL's text for the status and, where NCCL has
// ncclGetLastError, NCCL's own last message (`comm` is passed to it; may be null).
[[noreturn]] void throw_nccl_error(const NcclApi& api, NcclResult status, const char* call, const std::string& where,
                                   NcclComm comm = nullptr);

}  // namespace kjit::detail

// Calls api.<call> and throws NcclError unless it returns ncclSuccess: `where` says which kjit call
// and what it worked on, `comm` (may be null) gives NCCL's last message.
#define KJIT_NCCL_CHECK(api, call, where, comm)                                                    \
    do {                                                                                           \
        const ::kjit::detail::NcclResult kjit_nccl_status_ = (api).call;                           \
        if (kjit_nccl_status_ != ::kjit::detail::kNcclSuccess)                                     \
            ::kjit::detail::throw_nccl_error((api), kjit_nccl_status_, #call, (where), (comm));   \
    } while (0)
