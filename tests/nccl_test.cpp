// kjit::nccl (issue 38): NCCL loaded at run time, communicators, ids, groups and collectives.
//
// These CPU tests drive a fake NCCL table (ScopedNcclOverride) over the pretend driver with two
// devices: they check the loader's message when NCCL is absent, the dtype mapping, every argument
// check, and that the right pointers, counts, types, streams and groups reach NCCL. The real
// NCCL on GPUs: tests/nccl_gpu_test.cpp.
#include "test_support.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <thread>

#if __has_include(<nccl.h>)
#include <nccl.h>
#define KJIT_TEST_HAVE_NCCL_H 1
#endif

#include "fake_driver.hpp"
#include "kjit/nccl.hpp"
#include "kjit/reductions.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/nccl.hpp"
#include "runtime/detail/nccl_types.hpp"

using Catch::Contains;
using kjit::Array;
using kjit::Device;
using kjit::DType;
namespace nccl = kjit::nccl;
namespace detail = kjit::detail;

namespace {

// --- A fake NCCL: records what reaches it, returns what the test says.

struct Collective {
    std::string name;
    const void* send = nullptr;
    void* recv = nullptr;
    std::size_t count = 0;
    int type = -1;
    int op = -1;
    int root = -1;
    detail::NcclComm comm = nullptr;
    CUstream stream = nullptr;
    int group_depth = 0;  // the thread's group depth when it was called
};

struct FakeNccl {
    int version = 22809;
    int group_depth = 0;
    int group_starts = 0;
    int group_ends = 0;
    int init_all_calls = 0;
    std::vector<int> init_all_devices;
    int init_rank_calls = 0;
    int init_rank_nranks = 0;
    int init_rank_rank = -1;
    detail::NcclUniqueId init_rank_id{};
    CUcontext init_rank_context = nullptr;  // the thread's context at ncclCommInitRank
    std::vector<detail::NcclComm> destroyed;
    std::vector<detail::NcclComm> aborted;
    std::vector<Collective> calls;
    detail::NcclResult collective_result = detail::kNcclSuccess;  // what collectives return
    detail::NcclResult init_result = detail::kNcclSuccess;        // what the inits return
    detail::NcclResult group_end_result = detail::kNcclSuccess;
    detail::NcclResult async_error = detail::kNcclSuccess;
    std::string last_error;  // what ncclGetLastError says
    std::uintptr_t next_comm = 0x7000;
};
FakeNccl g_nccl;

// The pretend driver keeps no current context; this one does (per thread, as CUDA does).
thread_local CUcontext t_context = nullptr;

detail::NcclComm new_comm() { return reinterpret_cast<detail::NcclComm>(g_nccl.next_comm++); }

detail::NcclResult record(const char* name, const void* send, void* recv, std::size_t count, int type, int op,
                          int root, detail::NcclComm comm, CUstream stream) {
    g_nccl.calls.push_back({name, send, recv, count, type, op, root, comm, stream, g_nccl.group_depth});
    return g_nccl.collective_result;
}

detail::NcclApi fake_nccl_api() {
    detail::NcclApi api;
    api.library_path = "fake libnccl.so.2";
    api.version = g_nccl.version;
    api.ncclGetVersion = [](int* v) {
        *v = g_nccl.version;
        return detail::kNcclSuccess;
    };
    api.ncclGetUniqueId = [](detail::NcclUniqueId* id) {
        for (std::size_t i = 0; i < detail::kNcclUniqueIdBytes; ++i) id->internal[i] = static_cast<char>(i * 7 + 1);
        return detail::kNcclSuccess;
    };
    api.ncclCommInitRank = [](detail::NcclComm* comm, int nranks, detail::NcclUniqueId id, int rank) {
        ++g_nccl.init_rank_calls;
        g_nccl.init_rank_nranks = nranks;
        g_nccl.init_rank_rank = rank;
        g_nccl.init_rank_id = id;
        g_nccl.init_rank_context = t_context;
        if (g_nccl.init_result != detail::kNcclSuccess) return g_nccl.init_result;
        *comm = new_comm();
        return detail::kNcclSuccess;
    };
    api.ncclCommInitAll = [](detail::NcclComm* comms, int n, const int* devices) {
        ++g_nccl.init_all_calls;
        g_nccl.init_all_devices.assign(devices, devices + n);
        if (g_nccl.init_result != detail::kNcclSuccess) return g_nccl.init_result;
        for (int i = 0; i < n; ++i) comms[i] = new_comm();
        return detail::kNcclSuccess;
    };
    api.ncclCommDestroy = [](detail::NcclComm c) {
        g_nccl.destroyed.push_back(c);
        return detail::kNcclSuccess;
    };
    api.ncclCommAbort = [](detail::NcclComm c) {
        g_nccl.aborted.push_back(c);
        return detail::kNcclSuccess;
    };
    api.ncclCommGetAsyncError = [](detail::NcclComm, detail::NcclResult* r) {
        *r = g_nccl.async_error;
        return detail::kNcclSuccess;
    };
    api.ncclCommCount = [](detail::NcclComm, int* n) {
        *n = 2;
        return detail::kNcclSuccess;
    };
    api.ncclCommCuDevice = [](detail::NcclComm, int* d) {
        *d = 0;
        return detail::kNcclSuccess;
    };
    api.ncclCommUserRank = [](detail::NcclComm, int* r) {
        *r = 0;
        return detail::kNcclSuccess;
    };
    api.ncclAllReduce = [](const void* s, void* r, std::size_t n, int t, int op, detail::NcclComm c, CUstream st) {
        return record("ncclAllReduce", s, r, n, t, op, -1, c, st);
    };
    api.ncclReduceScatter = [](const void* s, void* r, std::size_t n, int t, int op, detail::NcclComm c, CUstream st) {
        return record("ncclReduceScatter", s, r, n, t, op, -1, c, st);
    };
    api.ncclAllGather = [](const void* s, void* r, std::size_t n, int t, detail::NcclComm c, CUstream st) {
        return record("ncclAllGather", s, r, n, t, -1, -1, c, st);
    };
    api.ncclBroadcast = [](const void* s, void* r, std::size_t n, int t, int root, detail::NcclComm c, CUstream st) {
        return record("ncclBroadcast", s, r, n, t, -1, root, c, st);
    };
    api.ncclGroupStart = [] {
        ++g_nccl.group_starts;
        ++g_nccl.group_depth;
        return detail::kNcclSuccess;
    };
    api.ncclGroupEnd = [] {
        ++g_nccl.group_ends;
        --g_nccl.group_depth;
        return g_nccl.group_end_result;
    };
    api.ncclGetErrorString = [](detail::NcclResult r) -> const char* {
        return r == detail::kNcclInvalidArgument ? "invalid argument (run with NCCL_DEBUG=WARN for details)"
                                                 : "some NCCL error";
    };
    api.ncclGetLastError = [](detail::NcclComm) { return g_nccl.last_error.c_str(); };
    return api;
}

detail::DriverApi context_keeping_driver() {
    detail::DriverApi api = kjit::test::make_fake_driver();
    api.cuCtxGetCurrent = [](CUcontext* c) {
        *c = t_context;
        return CUDA_SUCCESS;
    };
    api.cuCtxSetCurrent = [](CUcontext c) {
        t_context = c;
        return CUDA_SUCCESS;
    };
    return api;
}

// The pretend driver with two devices and the fake NCCL, for one test; fresh state each time.
struct FakeNcclScope {
    FakeNcclScope()
        : api((g_nccl = FakeNccl{}, t_context = nullptr, fake_nccl_api())),
          driver(context_keeping_driver(), 2),
          nccl(&api) {}
    detail::NcclApi api;
    detail::ScopedDriverOverride driver;
    detail::ScopedNcclOverride nccl;
};

Array on(int device, kjit::Shape shape, DType t = DType::float32) { return Array::empty(shape, t, Device::cuda(device)); }

}  // namespace

// ------------------------------------------------------------------ loading

#ifdef KJIT_TEST_HAVE_NCCL_H
// kjit builds without nccl.h (runtime/detail/nccl.hpp declares what it uses); where the header is
// installed, its declarations must agree.
static_assert(sizeof(ncclUniqueId) == sizeof(detail::NcclUniqueId));
static_assert(NCCL_UNIQUE_ID_BYTES == nccl::UniqueId::size);
static_assert(sizeof(ncclResult_t) == sizeof(detail::NcclResult));
static_assert(sizeof(ncclDataType_t) == sizeof(detail::NcclDataType));
static_assert(sizeof(ncclRedOp_t) == sizeof(detail::NcclRedOp));
static_assert(ncclSuccess == detail::kNcclSuccess && ncclInvalidArgument == detail::kNcclInvalidArgument &&
              ncclInProgress == detail::kNcclInProgress && ncclRemoteError == detail::kNcclRemoteError);
static_assert(ncclInt8 == detail::kNcclInt8 && ncclUint8 == detail::kNcclUint8 && ncclInt32 == detail::kNcclInt32 &&
              ncclUint32 == detail::kNcclUint32 && ncclInt64 == detail::kNcclInt64 &&
              ncclUint64 == detail::kNcclUint64 && ncclFloat16 == detail::kNcclFloat16 &&
              ncclFloat32 == detail::kNcclFloat32 && ncclFloat64 == detail::kNcclFloat64 &&
              ncclBfloat16 == detail::kNcclBfloat16);
static_assert(ncclSum == detail::kNcclSum && ncclProd == detail::kNcclProd && ncclMax == detail::kNcclMax &&
              ncclMin == detail::kNcclMin && ncclAvg == detail::kNcclAvg);
static_assert(sizeof(ncclComm_t) == sizeof(detail::NcclComm));
static_assert(sizeof(cudaStream_t) == sizeof(CUstream));
#endif

TEST_CASE("nccl.h where installed declares what kjit's NCCL table assumes", "[nccl]") {
#ifdef KJIT_TEST_HAVE_NCCL_H
    SUCCEED("checked at compile time against nccl.h " << NCCL_MAJOR << "." << NCCL_MINOR);
#else
    WARN("SKIPPED (no nccl.h on this build machine): the compile-time check of NCCL's types did not run");
#endif
}

TEST_CASE("NCCL candidates: KJIT_NCCL_LIBRARY first then the sonames then the toolkit's lib64 and lib", "[nccl]") {
    const kjit::test::ScopedEnv env("KJIT_NCCL_LIBRARY", "/opt/custom/libnccl.so.2");
    const std::vector<std::string> c = detail::nccl_candidates();
    REQUIRE(c.size() >= 5);
    CHECK(c[0] == "/opt/custom/libnccl.so.2");
    CHECK(c[1] == "libnccl.so.2");
    CHECK(c[2] == "libnccl.so");
    CHECK(std::find(c.begin(), c.end(), "/usr/local/cuda/lib64/libnccl.so.2") != c.end());
    CHECK(std::find(c.begin(), c.end(), "/usr/local/cuda/lib/libnccl.so.2") != c.end());
    const kjit::test::ScopedEnv unset("KJIT_NCCL_LIBRARY", nullptr);
    CHECK(detail::nccl_candidates().front() == "libnccl.so.2");
}

TEST_CASE("NCCL absent: a NoDeviceError naming NCCL and every place tried and KJIT_NCCL_LIBRARY", "[nccl]") {
    const kjit::test::ScopedEnv env("KJIT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2");
    // What the loader says when nothing opens (here: only the missing file, so that an NCCL
    // installed on this machine cannot be found instead).
    const detail::NcclLoad load = detail::load_nccl({"/nonexistent/libnccl.so.2", "libkjit-no-such-nccl.so.2"});
    CHECK_FALSE(load.ok);
    CHECK_THAT(load.error, Contains("NCCL not found"));
    CHECK_THAT(load.error, Contains("/nonexistent/libnccl.so.2"));
    CHECK_THAT(load.error, Contains("libkjit-no-such-nccl.so.2"));
    CHECK_THAT(load.error, Contains("KJIT_NCCL_LIBRARY"));
    CHECK_THAT(load.error, Contains("does not ship NCCL"));

    // Every entry point then reports it as NoDeviceError, with the same words.
    const detail::ScopedNcclOverride absent(nullptr, load.error);
    CHECK_FALSE(nccl::available());
    CHECK(nccl::no_nccl_reason() == load.error);
    CHECK_THROWS_AS(nccl::version(), kjit::NoDeviceError);
    CHECK_THROWS_AS(nccl::UniqueId::create(), kjit::NoDeviceError);
    CHECK_THROWS_WITH(nccl::UniqueId::create(), Contains("KJIT_NCCL_LIBRARY") && Contains("/nonexistent/libnccl.so.2"));
    CHECK_THROWS_AS(nccl::Communicator::local({Device::cuda(0), Device::cuda(1)}), kjit::NoDeviceError);
    CHECK_THROWS_AS(nccl::GroupGuard(), kjit::NoDeviceError);
}

TEST_CASE("a library that is not NCCL is refused naming what it lacks", "[nccl]") {
    // libc opens, and has none of NCCL's entry points.
    const detail::NcclLoad load = detail::load_nccl({"libc.so.6"});
    CHECK_FALSE(load.ok);
    CHECK_THAT(load.error, Contains("libc.so.6") && Contains("ncclAllReduce") && Contains("KJIT_NCCL_LIBRARY"));
}

TEST_CASE("the real NCCL loads where it is installed", "[nccl]") {
    std::string why;
    const detail::NcclApi* api = detail::try_nccl(&why);
    if (api == nullptr) {
        WARN("SKIPPED (no NCCL on this machine): " << why);
        CHECK_THAT(why, Contains("NCCL"));
        return;
    }
    INFO("loaded " << api->library_path << ", NCCL " << detail::nccl_version_string(api->version));
    CHECK(api->version >= 20000);
    CHECK(nccl::version() == api->version);
    CHECK(nccl::available());
    CHECK(nccl::no_nccl_reason().empty());
    CHECK_FALSE(api->library_path.empty());
    CHECK(api->ncclGetErrorString != nullptr);
    CHECK_THAT(std::string(api->ncclGetErrorString(detail::kNcclInvalidArgument)), Contains("invalid argument"));
}

TEST_CASE("NCCL's version codes and status names in words", "[nccl]") {
    CHECK(detail::nccl_version_string(22809) == "2.28.9");
    CHECK(detail::nccl_version_string(21003) == "2.10.3");
    CHECK(detail::nccl_version_string(2708) == "2.7.8");
    CHECK(detail::nccl_status_name(detail::kNcclInvalidUsage) == "ncclInvalidUsage");
    CHECK(detail::nccl_status_name(42) == "ncclResult 42");
}

// ------------------------------------------------------------------ ids

TEST_CASE("UniqueId: made by NCCL and sent as bytes or hex and read back", "[nccl]") {
    const FakeNcclScope fake;
    const nccl::UniqueId id = nccl::UniqueId::create();
    CHECK(id != nccl::UniqueId());
    CHECK(id.bytes()[0] == 1);
    CHECK(id.bytes()[1] == 8);
    CHECK(nccl::UniqueId::from_bytes(id.data(), nccl::UniqueId::size) == id);
    const std::string hex = id.to_hex();
    CHECK(hex.size() == 256);
    CHECK(hex.substr(0, 4) == "0108");
    CHECK(nccl::UniqueId::from_hex(hex) == id);
    std::string upper = hex;
    std::transform(upper.begin(), upper.end(), upper.begin(), [](char c) { return static_cast<char>(std::toupper(c)); });
    CHECK(nccl::UniqueId::from_hex(upper) == id);

    CHECK_THROWS_WITH(nccl::UniqueId::from_bytes(id.data(), 64), Contains("128 bytes, not 64"));
    CHECK_THROWS_WITH(nccl::UniqueId::from_hex("abc"), Contains("256 hex digits"));
    std::string bad = hex;
    bad[10] = 'x';
    CHECK_THROWS_WITH(nccl::UniqueId::from_hex(bad), Contains("'x' at position 10"));
}

// ------------------------------------------------------------------ communicators

TEST_CASE("Communicator::local: one ncclCommInitAll over the devices with rank i on device i", "[nccl]") {
    const FakeNcclScope fake;
    std::vector<detail::NcclComm> handles;
    {
        std::vector<nccl::Communicator> comms = nccl::Communicator::local({Device::cuda(1), Device::cuda(0)});
        CHECK(g_nccl.init_all_calls == 1);
        CHECK(g_nccl.init_all_devices == std::vector<int>{1, 0});
        REQUIRE(comms.size() == 2);
        for (int i = 0; i < 2; ++i) {
            CHECK(comms[i].valid());
            CHECK(comms[i].rank() == i);
            CHECK(comms[i].size() == 2);
            handles.push_back(static_cast<detail::NcclComm>(comms[i].handle()));
        }
        CHECK(comms[0].device() == Device::cuda(1));
        CHECK(comms[1].device() == Device::cuda(0));
        CHECK(comms[1].to_string() == "nccl::Communicator(rank 1 of 2, cuda:0)");
        CHECK(t_context == nullptr);  // the thread's context is where it was
        CHECK(g_nccl.destroyed.empty());
    }
    // Each destroyed once, when the vector went.
    CHECK(g_nccl.destroyed.size() == 2);
    CHECK(std::is_permutation(handles.begin(), handles.end(), g_nccl.destroyed.begin()));
}

TEST_CASE("Communicator::local refuses what NCCL cannot use and says why", "[nccl]") {
    const FakeNcclScope fake;
    CHECK_THROWS_WITH(nccl::Communicator::local({}), Contains("no devices given"));
    CHECK_THROWS_WITH(nccl::Communicator::local({Device::cuda(0), Device::cuda(0)}),
                      Contains("cuda:0 is given twice"));
    CHECK_THROWS_WITH(nccl::Communicator::local({Device::cuda(0), Device::cpu()}),
                      Contains("NCCL needs a CUDA device, not cpu"));
    CHECK_THROWS_WITH(nccl::Communicator::local({Device::cuda(0), Device::cuda(2)}),
                      Contains("there is no cuda:2") && Contains("sees 2 CUDA devices"));
    CHECK(g_nccl.init_all_calls == 0);
}

TEST_CASE("Communicator from a UniqueId: the id and ranks and the device's context reach ncclCommInitRank", "[nccl]") {
    const FakeNcclScope fake;
    const nccl::UniqueId id = nccl::UniqueId::create();
    {
        const nccl::Communicator comm(id, 4, 3, Device::cuda(1));
        CHECK(g_nccl.init_rank_calls == 1);
        CHECK(g_nccl.init_rank_nranks == 4);
        CHECK(g_nccl.init_rank_rank == 3);
        CHECK(std::memcmp(g_nccl.init_rank_id.internal, id.data(), nccl::UniqueId::size) == 0);
        // NCCL takes the rank's device from the current context: cuda:1's, then put back.
        CHECK(g_nccl.init_rank_context == detail::driver().primary_context(1));
        CHECK(t_context == nullptr);
        CHECK(comm.rank() == 3);
        CHECK(comm.size() == 4);
        CHECK(comm.device() == Device::cuda(1));
    }
    CHECK(g_nccl.destroyed.size() == 1);

    CHECK_THROWS_WITH(nccl::Communicator(id, 2, 2, Device::cuda(0)), Contains("rank must be in [0, 2)"));
    CHECK_THROWS_WITH(nccl::Communicator(id, 0, 0, Device::cuda(0)), Contains("at least one rank"));
    CHECK_THROWS_WITH(nccl::Communicator(nccl::UniqueId(), 2, 0, Device::cuda(0)),
                      Contains("all zero") && Contains("UniqueId::create()"));
    CHECK_THROWS_WITH(nccl::Communicator(id, 2, 0, Device::cpu()), Contains("not cpu"));
    CHECK(g_nccl.init_rank_calls == 1);
}

TEST_CASE("Communicator is move-only and destroys its NCCL communicator once; abort frees it", "[nccl]") {
    const FakeNcclScope fake;
    static_assert(!std::is_copy_constructible_v<nccl::Communicator>);
    static_assert(std::is_nothrow_move_constructible_v<nccl::Communicator>);
    std::vector<nccl::Communicator> comms = nccl::Communicator::local({Device::cuda(0), Device::cuda(1)});
    const auto first = static_cast<detail::NcclComm>(comms[0].handle());
    const auto second = static_cast<detail::NcclComm>(comms[1].handle());
    nccl::Communicator moved(std::move(comms[0]));
    CHECK_FALSE(comms[0].valid());
    CHECK(comms[0].handle() == nullptr);
    CHECK_THROWS_WITH(comms[0].rank(), Contains("empty"));
    CHECK(comms[0].to_string() == "nccl::Communicator(empty)");
    CHECK(moved.handle() == first);
    CHECK(g_nccl.destroyed.empty());
    moved = std::move(comms[1]);  // the old one goes first
    REQUIRE(g_nccl.destroyed.size() == 1);
    CHECK(g_nccl.destroyed[0] == first);
    CHECK(moved.handle() == second);
    moved.abort();
    CHECK(g_nccl.aborted == std::vector<detail::NcclComm>{second});
    CHECK_FALSE(moved.valid());
    comms.clear();
    CHECK(g_nccl.destroyed.size() == 1);  // nothing left to destroy
}

TEST_CASE("check_async_error throws NCCL's asynchronous error", "[nccl]") {
    const FakeNcclScope fake;
    std::vector<nccl::Communicator> comms = nccl::Communicator::local({Device::cuda(0), Device::cuda(1)});
    CHECK_NOTHROW(comms[1].check_async_error());
    g_nccl.async_error = detail::kNcclRemoteError;
    g_nccl.last_error = "peer 0 closed the connection";
    try {
        comms[1].check_async_error();
        FAIL("no error");
    } catch (const nccl::NcclError& e) {
        CHECK(e.code() == detail::kNcclRemoteError);
        CHECK_THAT(std::string(e.what()), Contains("ncclRemoteError") && Contains("peer 0 closed the connection") &&
                                              Contains("rank 1 of 2, cuda:1"));
    }
}

// ------------------------------------------------------------------ dtypes

TEST_CASE("kjit dtypes as NCCL's: reductions", "[nccl]") {
    using detail::nccl_reduction_elements;
    const int v = 22809;
    struct Case {
        DType t;
        int type;
        std::size_t per_element;
    };
    for (const Case c : {Case{DType::int8, detail::kNcclInt8, 1}, Case{DType::uint8, detail::kNcclUint8, 1},
                         Case{DType::int32, detail::kNcclInt32, 1}, Case{DType::uint32, detail::kNcclUint32, 1},
                         Case{DType::int64, detail::kNcclInt64, 1}, Case{DType::uint64, detail::kNcclUint64, 1},
                         Case{DType::float16, detail::kNcclFloat16, 1}, Case{DType::bfloat16, detail::kNcclBfloat16, 1},
                         Case{DType::float32, detail::kNcclFloat32, 1}, Case{DType::float64, detail::kNcclFloat64, 1},
                         Case{DType::complex64, detail::kNcclFloat32, 2},
                         Case{DType::complex128, detail::kNcclFloat64, 2}}) {
        INFO(c.t.name());
        const detail::NcclElements e = nccl_reduction_elements(c.t, 10, nccl::Op::sum, v, "here");
        CHECK(e.type == c.type);
        CHECK(e.count == 10 * c.per_element);
        CHECK(nccl_reduction_elements(c.t, 10, nccl::Op::avg, v, "here").type == c.type);
    }
    // bool: min, max and prod as uint8 (and, or, and); a sum of bools is not a bool.
    CHECK(nccl_reduction_elements(DType::bool_, 5, nccl::Op::max, v, "here").type == detail::kNcclUint8);
    CHECK(nccl_reduction_elements(DType::bool_, 5, nccl::Op::prod, v, "here").count == 5);
    CHECK_THROWS_AS(nccl_reduction_elements(DType::bool_, 5, nccl::Op::sum, v, "here"), kjit::TypeError);
    CHECK_THROWS_WITH(nccl_reduction_elements(DType::bool_, 5, nccl::Op::sum, v, "nccl::all_reduce"),
                      Contains("nccl::all_reduce") && Contains("the sum of bools is not a bool"));
    // No 16-bit integers in NCCL.
    for (DType t : {DType(DType::int16), DType(DType::uint16)}) {
        CHECK_THROWS_AS(nccl_reduction_elements(t, 5, nccl::Op::sum, v, "here"), kjit::TypeError);
        CHECK_THROWS_WITH(nccl_reduction_elements(t, 5, nccl::Op::max, v, "here"),
                          Contains("no 16-bit integer type") && Contains(std::string(t.name())));
    }
    // Complex: only sum and avg, which are those of the parts.
    for (nccl::Op op : {nccl::Op::prod, nccl::Op::min, nccl::Op::max}) {
        CHECK_THROWS_AS(nccl_reduction_elements(DType::complex64, 5, op, v, "here"), kjit::TypeError);
        CHECK_THROWS_WITH(nccl_reduction_elements(DType::complex128, 5, op, v, "here"),
                          Contains("NCCL has no complex types") && Contains(std::string(nccl::op_name(op))));
    }
    // An NCCL older than 2.10 has neither bfloat16 nor avg.
    CHECK_THROWS_WITH(nccl_reduction_elements(DType::bfloat16, 5, nccl::Op::sum, 2708, "here"),
                      Contains("NCCL 2.10") && Contains("2.7.8"));
    CHECK_THROWS_WITH(detail::nccl_red_op(nccl::Op::avg, 2708, "here"), Contains("Op::avg needs NCCL 2.10"));
    CHECK(detail::nccl_red_op(nccl::Op::avg, v, "here") == detail::kNcclAvg);
    CHECK(detail::nccl_red_op(nccl::Op::min, v, "here") == detail::kNcclMin);
    CHECK(detail::nccl_red_op(nccl::Op::max, v, "here") == detail::kNcclMax);
    CHECK(detail::nccl_red_op(nccl::Op::prod, v, "here") == detail::kNcclProd);
}

TEST_CASE("kjit dtypes as NCCL's: moves take every dtype as bytes where NCCL has no type", "[nccl]") {
    using detail::nccl_copy_elements;
    for (DType t : kjit::test::all_dtypes()) {
        INFO(t.name());
        const detail::NcclElements e = nccl_copy_elements(t, 10, 22809);
        if (t == DType::bool_ || t == DType::int16 || t == DType::uint16 || t.is_complex()) {
            CHECK(e.type == detail::kNcclUint8);
            CHECK(e.count == 10 * t.itemsize());
        } else {
            CHECK(e.type == detail::nccl_reduction_elements(t, 10, nccl::Op::sum, 22809, "").type);
            CHECK(e.count == 10);
        }
    }
    CHECK(nccl_copy_elements(DType::bfloat16, 10, 2708).type == detail::kNcclUint8);
    CHECK(nccl_copy_elements(DType::bfloat16, 10, 2708).count == 20);
}

// ------------------------------------------------------------------ collectives

TEST_CASE("all_reduce: the pointers and count and type and op and communicator and stream reach NCCL", "[nccl]") {
    const FakeNcclScope fake;
    std::vector<nccl::Communicator> comms = nccl::Communicator::local({Device::cuda(0), Device::cuda(1)});
    const Array send = on(1, {3, 5}), recv = on(1, {15});
    const kjit::Stream stream = kjit::Stream::create(Device::cuda(1));
    nccl::all_reduce(comms[1], send, recv, nccl::Op::max, stream);
    REQUIRE(g_nccl.calls.size() == 1);
    const Collective& c = g_nccl.calls[0];
    CHECK(c.name == "ncclAllReduce");
    CHECK(c.send == send.data());
    CHECK(c.recv == recv.data());
    CHECK(c.count == 15);
    CHECK(c.type == detail::kNcclFloat32);
    CHECK(c.op == detail::kNcclMax);
    CHECK(c.comm == comms[1].handle());
    CHECK(c.stream == stream.handle());
    CHECK(c.group_depth == 0);  // one communicator: no group
    // The buffers are freed in order on the stream NCCL used.
    CHECK(send.buffer()->last_stream() == stream);
    CHECK(recv.buffer()->last_stream() == stream);
    CHECK(t_context == detail::driver().primary_context(1));

    // In place, the default op (sum) and the thread's current stream (device 1's default).
    const Array x = on(1, {8}, DType::complex64);
    nccl::all_reduce(comms[1], x, x);
    REQUIRE(g_nccl.calls.size() == 2);
    CHECK(g_nccl.calls[1].send == g_nccl.calls[1].recv);
    CHECK(g_nccl.calls[1].count == 16);  // complex: (re, im) float32 pairs
    CHECK(g_nccl.calls[1].type == detail::kNcclFloat32);
    CHECK(g_nccl.calls[1].op == detail::kNcclSum);
    CHECK(g_nccl.calls[1].stream == nullptr);
    // avg passes through.
    nccl::all_reduce(comms[1], x, x, nccl::Op::avg);
    CHECK(g_nccl.calls.back().op == detail::kNcclAvg);
}

TEST_CASE("reduce_scatter and all_gather and broadcast reach NCCL with NCCL's counts", "[nccl]") {
    const FakeNcclScope fake;
    std::vector<nccl::Communicator> comms = nccl::Communicator::local({Device::cuda(0), Device::cuda(1)});
    const kjit::Stream stream = kjit::Stream::create(Device::cuda(0));

    const Array big = on(0, {2, 6}, DType::int64), small = on(0, {6}, DType::int64);
    nccl::reduce_scatter(comms[0], big, small, nccl::Op::min, stream);
    nccl::all_gather(comms[0], small, big, stream);
    const Array flags = on(0, {7}, DType::bool_);
    nccl::broadcast(comms[0], flags, 1, stream);
    REQUIRE(g_nccl.calls.size() == 3);
    const Collective& rs = g_nccl.calls[0];
    CHECK(rs.name == "ncclReduceScatter");
    CHECK(rs.count == 6);  // recvcount
    CHECK(rs.type == detail::kNcclInt64);
    CHECK(rs.op == detail::kNcclMin);
    CHECK(rs.send == big.data());
    CHECK(rs.recv == small.data());
    const Collective& ag = g_nccl.calls[1];
    CHECK(ag.name == "ncclAllGather");
    CHECK(ag.count == 6);  // sendcount
    CHECK(ag.send == small.data());
    CHECK(ag.recv == big.data());
    CHECK(ag.stream == stream.handle());
    const Collective& b = g_nccl.calls[2];
    CHECK(b.name == "ncclBroadcast");
    CHECK(b.send == flags.data());
    CHECK(b.recv == flags.data());
    CHECK(b.root == 1);
    CHECK(b.count == 7);
    CHECK(b.type == detail::kNcclUint8);  // bool moved as bytes

    // In-place forms NCCL allows: recv at this rank's block of send, send at this rank's block of recv.
    const Array whole = on(1, {12}, DType::float32);
    nccl::reduce_scatter(comms[1], whole, whole.slice(0, kjit::Slice{6, 12}));
    nccl::all_gather(comms[1], whole.slice(0, kjit::Slice{6, 12}), whole);
    CHECK(g_nccl.calls.size() == 5);
}

TEST_CASE("collective argument checks say what is wrong in which call and rank", "[nccl]") {
    const FakeNcclScope fake;
    std::vector<nccl::Communicator> comms = nccl::Communicator::local({Device::cuda(0), Device::cuda(1)});
    const nccl::Communicator& c0 = comms[0];
    const Array a = on(0, {8}), b = on(0, {8});

    SECTION("arrays on another device, on the host, or empty") {
        CHECK_THROWS_WITH(nccl::all_reduce(c0, a, on(1, {8})),
                          Contains("nccl::all_reduce (nccl::Communicator(rank 0 of 2, cuda:0))") &&
                              Contains("recv is on cuda:1 but the communicator's device is cuda:0"));
        CHECK_THROWS_WITH(nccl::all_reduce(c0, Array::empty({8}, DType::float32, Device::cpu()), b),
                          Contains("send is a host array"));
        CHECK_THROWS_WITH(nccl::broadcast(c0, Array(), 0), Contains("the array is an empty Array"));
    }
    SECTION("non-contiguous arrays") {
        const Array m = on(0, {4, 2});
        CHECK_THROWS_AS(nccl::all_reduce(c0, m.transpose(), m.transpose()), kjit::ShapeError);
        CHECK_THROWS_WITH(nccl::all_reduce(c0, m.transpose(), on(0, {2, 4})), Contains("send must be C-contiguous"));
        CHECK_THROWS_WITH(nccl::broadcast(c0, on(0, {8}).slice(0, kjit::Slice{0, 8, 2}), 0),
                          Contains("the array must be C-contiguous"));
    }
    SECTION("dtypes and sizes") {
        CHECK_THROWS_AS(nccl::all_reduce(c0, a, on(0, {8}, DType::float64)), kjit::TypeError);
        CHECK_THROWS_WITH(nccl::all_reduce(c0, a, on(0, {8}, DType::float64)),
                          Contains("send is float32 but recv is float64"));
        CHECK_THROWS_AS(nccl::all_reduce(c0, a, on(0, {9})), kjit::ShapeError);
        CHECK_THROWS_WITH(nccl::reduce_scatter(c0, a, on(0, {8})),
                          Contains("send.size() == recv.size() * 2 ranks"));
        CHECK_THROWS_WITH(nccl::all_gather(c0, a, on(0, {8})), Contains("recv.size() == send.size() * 2 ranks"));
        CHECK_THROWS_WITH(nccl::all_reduce(c0, on(0, {8}, DType::int16), on(0, {8}, DType::int16)),
                          Contains("nccl::all_reduce") && Contains("no 16-bit integer type"));
    }
    SECTION("roots, overlaps, streams and empty communicators") {
        CHECK_THROWS_WITH(nccl::broadcast(c0, a, 2), Contains("root 2 is not a rank (0 to 1)"));
        CHECK_THROWS_WITH(nccl::broadcast(c0, a, -1), Contains("root -1"));
        const Array whole = on(0, {16});
        CHECK_THROWS_WITH(nccl::all_reduce(c0, whole.slice(0, kjit::Slice{0, 8}), whole.slice(0, kjit::Slice{4, 12})),
                          Contains("send and recv overlap"));
        // Rank 0's block is the first half: the second half is not in place.
        CHECK_THROWS_WITH(nccl::reduce_scatter(c0, whole, whole.slice(0, kjit::Slice{8, 16})),
                          Contains("recv being this rank's block of send"));
        CHECK_THROWS_WITH(nccl::all_reduce(c0, a, b, nccl::Op::sum, kjit::Stream::create(Device::cuda(1))),
                          Contains("nccl::all_reduce") && Contains("the stream belongs to cuda:1"));
        nccl::Communicator empty;
        CHECK_THROWS_WITH(nccl::all_reduce(empty, a, b), Contains("nccl::all_reduce: the communicator is empty"));
    }
    CHECK(g_nccl.calls.empty());  // nothing reached NCCL
}

TEST_CASE("the vector forms check every part first and then issue them in one group", "[nccl]") {
    const FakeNcclScope fake;
    std::vector<nccl::Communicator> comms = nccl::Communicator::local({Device::cuda(0), Device::cuda(1)});
    const std::vector<Array> parts = {on(0, {4}), on(1, {4})};

    nccl::all_reduce(comms, parts, parts);
    REQUIRE(g_nccl.calls.size() == 2);
    for (int i = 0; i < 2; ++i) {
        CHECK(g_nccl.calls[i].comm == comms[i].handle());
        CHECK(g_nccl.calls[i].send == parts[i].data());
        CHECK(g_nccl.calls[i].group_depth == 1);  // inside the group
    }
    CHECK(g_nccl.group_starts == 1);
    CHECK(g_nccl.group_ends == 1);
    CHECK(g_nccl.group_depth == 0);

    // Streams, one per part.
    const std::vector<kjit::Stream> streams = {kjit::Stream::create(Device::cuda(0)), kjit::Stream::create(Device::cuda(1))};
    nccl::broadcast(comms, parts, 0, streams);
    nccl::all_gather(comms, {on(0, {2}), on(1, {2})}, parts, streams);
    nccl::reduce_scatter(comms, parts, {on(0, {2}), on(1, {2})}, nccl::Op::prod, streams);
    REQUIRE(g_nccl.calls.size() == 8);
    CHECK(g_nccl.calls[3].stream == streams[1].handle());
    CHECK(g_nccl.calls[3].root == 0);
    CHECK(g_nccl.calls[5].name == "ncclAllGather");
    CHECK(g_nccl.calls[7].op == detail::kNcclProd);
    CHECK(g_nccl.group_starts == 4);
    CHECK(g_nccl.group_ends == 4);

    // A wrong part: nothing issued, no group started.
    const std::size_t before = g_nccl.calls.size();
    CHECK_THROWS_WITH(nccl::all_reduce(comms, {parts[0], parts[0]}, {parts[0], parts[0]}),
                      Contains("nccl::all_reduce, part 1 (nccl::Communicator(rank 1 of 2, cuda:1))") &&
                          Contains("send is on cuda:0"));
    CHECK_THROWS_WITH(nccl::all_reduce(comms, {parts[0]}, parts), Contains("2 communicators but 1 send and 2 recv"));
    CHECK_THROWS_WITH(nccl::broadcast(comms, parts, 0, {streams[0]}), Contains("2 communicators but 1 streams"));
    CHECK_THROWS_WITH(nccl::all_reduce(std::vector<nccl::Communicator>{}, {}, {}), Contains("no communicators"));
    CHECK(g_nccl.calls.size() == before);
    CHECK(g_nccl.group_starts == 4);
}

TEST_CASE("NCCL's failures become NcclError naming the NCCL call and the kjit call and NCCL's words", "[nccl]") {
    const FakeNcclScope fake;
    std::vector<nccl::Communicator> comms = nccl::Communicator::local({Device::cuda(0), Device::cuda(1)});
    const Array a = on(1, {8});
    g_nccl.collective_result = detail::kNcclInvalidArgument;
    g_nccl.last_error = "Invalid config blocking attribute value -1";
    try {
        nccl::all_reduce(comms[1], a, a);
        FAIL("no error");
    } catch (const nccl::NcclError& e) {
        CHECK(e.code() == detail::kNcclInvalidArgument);
        CHECK_THAT(e.call(), Contains("ncclAllReduce("));
        const std::string what = e.what();
        CHECK_THAT(what, Contains("ncclAllReduce(") && Contains("failed in nccl::all_reduce") &&
                             Contains("rank 1 of 2, cuda:1") && Contains("ncclInvalidArgument") &&
                             Contains("invalid argument (run with NCCL_DEBUG=WARN for details)") &&
                             Contains("NCCL says: Invalid config blocking attribute value -1"));
    }
    // In a vector form the group is still ended.
    CHECK_THROWS_AS(nccl::all_reduce(comms, {on(0, {4}), on(1, {4})}, {on(0, {4}), on(1, {4})}), nccl::NcclError);
    CHECK(g_nccl.group_depth == 0);
    CHECK(g_nccl.group_starts == g_nccl.group_ends);

    g_nccl.collective_result = detail::kNcclSuccess;
    g_nccl.group_end_result = detail::kNcclUnhandledCudaError;
    CHECK_THROWS_WITH(nccl::all_reduce(comms, {on(0, {4}), on(1, {4})}, {on(0, {4}), on(1, {4})}),
                      Contains("ncclGroupEnd()") && Contains("ncclUnhandledCudaError"));

    g_nccl.init_result = detail::kNcclSystemError;
    g_nccl.last_error = "socket: no interface found";
    CHECK_THROWS_WITH(nccl::Communicator(nccl::UniqueId::create(), 2, 0, Device::cuda(0)),
                      Contains("ncclCommInitRank(") && Contains("nccl::Communicator(rank 0 of 2, cuda:0)") &&
                          Contains("ncclSystemError") && Contains("socket: no interface found"));
    CHECK_THROWS_AS(nccl::Communicator::local({Device::cuda(0)}), nccl::NcclError);
    CHECK_THROWS_AS(nccl::Communicator::local({Device::cuda(0)}), kjit::Error);
}

TEST_CASE("GroupGuard and group(): every start has its end also when an exception passes", "[nccl]") {
    const FakeNcclScope fake;
    {
        nccl::GroupGuard g;
        CHECK(g_nccl.group_depth == 1);
        g.end();
        CHECK(g_nccl.group_depth == 0);
        CHECK_THROWS_WITH(g.end(), Contains("ended already"));
    }
    CHECK(g_nccl.group_ends == 1);
    { const nccl::GroupGuard g; }  // ended by the destructor
    CHECK(g_nccl.group_ends == 2);
    int issued = 0;
    nccl::group([&] {
        CHECK(g_nccl.group_depth == 1);
        ++issued;
    });
    CHECK(issued == 1);
    CHECK_THROWS_WITH(nccl::group([] { throw kjit::Error("a part failed"); }), Contains("a part failed"));
    CHECK(g_nccl.group_depth == 0);
    CHECK(g_nccl.group_starts == g_nccl.group_ends);

    // Local communicators used one by one inside a group the application holds.
    std::vector<nccl::Communicator> comms = nccl::Communicator::local({Device::cuda(0), Device::cuda(1)});
    const Array x0 = on(0, {4}), x1 = on(1, {4});
    nccl::group([&] {
        nccl::all_reduce(comms[0], x0, x0);
        nccl::all_reduce(comms[1], x1, x1);
    });
    REQUIRE(g_nccl.calls.size() == 2);
    CHECK(g_nccl.calls[0].group_depth == 1);
    CHECK(g_nccl.calls[1].group_depth == 1);
}
