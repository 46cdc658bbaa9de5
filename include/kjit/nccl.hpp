// NCCL collectives on kjit arrays and streams: all-reduce, reduce-scatter, all-gather and broadcast
// across the GPUs of one process, of several processes, or of several machines.
//
// kjit does not ship NCCL and never links it: it loads libnccl.so.2 when a communicator or id is
// first made, from $KJIT_NCCL_LIBRARY, then the loader's search path (an NCCL already loaded into
// the process, say PyTorch's, is found there), then the CUDA toolkit's lib64 and lib folders.
// Without NCCL these calls throw NoDeviceError naming every place tried; the rest of kjit works.
//
//   One process, every local GPU (one communicator per device, one thread):
//     std::vector<kjit::nccl::Communicator> comms = kjit::nccl::Communicator::local(devices);
//     kjit::nccl::all_reduce(comms, parts, parts);            // in place, one group, sum
//
//   One process per GPU (MPI or any launcher): rank 0 makes the id and sends its bytes to the rest.
//     kjit::nccl::UniqueId id = rank == 0 ? kjit::nccl::UniqueId::create() : receive_from_rank0();
//     kjit::nccl::Communicator comm(id, nranks, rank, kjit::Device::cuda(local_rank));
//     kjit::nccl::all_reduce(comm, x, x);
//
// The collectives queue work on a stream and return at once (stream-ordered, as kernels are). The
// arrays must be C-contiguous, on the communicator's device, of one dtype; the stream defaults to
// the thread's current stream on that device. When one thread drives several communicators, their
// calls must be inside one group (GroupGuard, group(), or the vector forms below, which do it):
// NCCL waits for every rank of a collective, and without a group the first call would wait for
// the others forever.
#pragma once

#include "kjit/export.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kjit/array.hpp"
#include "kjit/device.hpp"
#include "kjit/error.hpp"
#include "kjit/stream.hpp"

namespace kjit::nccl {

// An NCCL call failed: its text, NCCL's status (ncclResult_t) and messages, and the kjit call and
// communicator it was made for.
class KJIT_API NcclError : public Error {
public:
    NcclError(int code, std::string call, const std::string& what);
    int code() const noexcept { return code_; }          // the ncclResult_t
    const std::string& call() const noexcept { return call_; }

private:
    int code_;
    std::string call_;
};

// Whether NCCL can be loaded, and why not (empty when it can). Never throw.
KJIT_API bool available() noexcept;
KJIT_API std::string no_nccl_reason();
// The loaded NCCL's version code (22809 for 2.28.9); throws NoDeviceError without NCCL.
KJIT_API int version();

// The reduction of all_reduce and reduce_scatter. avg needs NCCL 2.10 or later.
enum class Op { sum, prod, min, max, avg };
KJIT_API std::string_view op_name(Op op) noexcept;

// The 128 bytes (ncclUniqueId) that name a communicator being made: created once (by one rank),
// sent to every rank by the application's own means, and given to each rank's Communicator.
class KJIT_API UniqueId {
public:
    static constexpr std::size_t size = 128;  // NCCL_UNIQUE_ID_BYTES

    UniqueId() noexcept = default;  // all zero: not a usable id
    explicit UniqueId(const std::array<std::uint8_t, size>& bytes) noexcept : bytes_(bytes) {}
    // ncclGetUniqueId: a new id (NCCL's bootstrap listens on this process's network interface).
    static UniqueId create();
    // From `count` bytes received from the rank that created it; any other count is an Error.
    static UniqueId from_bytes(const void* data, std::size_t count);
    // 256 lower-case hex digits and back (for an environment variable or a file); from_hex throws
    // Error on anything else.
    std::string to_hex() const;
    static UniqueId from_hex(std::string_view hex);

    const std::array<std::uint8_t, size>& bytes() const noexcept { return bytes_; }
    const std::uint8_t* data() const noexcept { return bytes_.data(); }

    friend bool operator==(const UniqueId& a, const UniqueId& b) noexcept { return a.bytes_ == b.bytes_; }
    friend bool operator!=(const UniqueId& a, const UniqueId& b) noexcept { return !(a == b); }

private:
    std::array<std::uint8_t, size> bytes_{};
};

// One rank of an NCCL communicator, bound to one CUDA device. Move-only; destroying it destroys
// the NCCL communicator (ncclCommDestroy): synchronise the streams of its collectives first. As
// NCCL requires, one thread at a time issues work on a communicator.
class KJIT_API Communicator {
public:
    // Rank `rank` of `nranks` of the communicator that `id` names, on `device`
    // (ncclCommInitRank). Returns once every rank has joined: call it from every rank at about the
    // same time, one thread or process each, or from one thread inside a GroupGuard.
    Communicator(const UniqueId& id, int nranks, int rank, Device device);
    // One communicator over `devices` of this process, rank i on devices[i] (ncclCommInitAll).
    // The devices must be distinct CUDA devices.
    static std::vector<Communicator> local(const std::vector<Device>& devices);

    Communicator() noexcept;  // empty: valid() is false
    Communicator(Communicator&& other) noexcept;
    Communicator& operator=(Communicator&& other) noexcept;
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;
    ~Communicator();

    bool valid() const noexcept;
    int rank() const;    // each throws Error on an empty communicator
    int size() const;
    Device device() const;
    // The ncclComm_t, for the application's own NCCL calls; kjit still owns it.
    void* handle() const noexcept;
    // Throws NcclError if NCCL reports an asynchronous error on the communicator
    // (ncclCommGetAsyncError: a peer failed, a network error...).
    void check_async_error() const;
    // Aborts what is in flight and frees the communicator (ncclCommAbort): how to recover from a
    // collective that cannot finish (a rank that died, a group left half-issued). Leaves it empty.
    void abort() noexcept;

    std::string to_string() const;  // "nccl::Communicator(rank 1 of 2, cuda:1)"

private:
    struct State;
    std::unique_ptr<State> state_;
};

// NCCL's group (ncclGroupStart, then ncclGroupEnd at end() or destruction): the collectives issued
// by this thread meanwhile are launched together. Needed when one thread issues a collective on
// several communicators of one clique; the arrays must stay alive until the group ends.
class KJIT_API GroupGuard {
public:
    GroupGuard();
    // Ends the group if end() was not called; logs (does not throw) if that fails.
    ~GroupGuard();
    GroupGuard(const GroupGuard&) = delete;
    GroupGuard& operator=(const GroupGuard&) = delete;
    // ncclGroupEnd: launches the group's collectives; throws NcclError if NCCL refuses them.
    void end();

private:
    bool open_;
};

// Runs `issue()` inside a group. If it throws, the group is still ended (NCCL needs that) and the
// exception passes on; collectives it issued before throwing were launched without the rest of
// their clique: abort() those communicators.
template <class Issue>
void group(Issue&& issue) {
    GroupGuard g;
    issue();
    g.end();
}

// --- Collectives on one communicator: queued on `stream` (the thread's current stream on the
// --- communicator's device by default); every rank of the communicator must make the same call.

// recv[i] = op over ranks of send[i]. send and recv have one dtype and size; recv may be send
// (in place).
KJIT_API void all_reduce(const Communicator& comm, const Array& send, const Array& recv, Op op = Op::sum,
                         const Stream& stream = Stream::current());
// Reduces send over ranks and leaves block `rank` of the result in recv:
// send.size() == recv.size() * comm.size().
KJIT_API void reduce_scatter(const Communicator& comm, const Array& send, const Array& recv, Op op = Op::sum,
                             const Stream& stream = Stream::current());
// recv holds every rank's send, rank after rank (C order): recv.size() == send.size() * comm.size().
KJIT_API void all_gather(const Communicator& comm, const Array& send, const Array& recv,
                         const Stream& stream = Stream::current());
// Copies rank `root`'s array into every rank's (in place).
KJIT_API void broadcast(const Communicator& comm, const Array& array, int root, const Stream& stream = Stream::current());

// --- The same for every communicator of a vector (Communicator::local's), part i on comms[i]:
// --- checked first, then issued in one group. `streams` empty: each device's current stream.
KJIT_API void all_reduce(const std::vector<Communicator>& comms, const std::vector<Array>& send,
                         const std::vector<Array>& recv, Op op = Op::sum, const std::vector<Stream>& streams = {});
KJIT_API void reduce_scatter(const std::vector<Communicator>& comms, const std::vector<Array>& send,
                             const std::vector<Array>& recv, Op op = Op::sum, const std::vector<Stream>& streams = {});
KJIT_API void all_gather(const std::vector<Communicator>& comms, const std::vector<Array>& send,
                         const std::vector<Array>& recv, const std::vector<Stream>& streams = {});
KJIT_API void broadcast(const std::vector<Communicator>& comms, const std::vector<Array>& arrays, int root,
                        const std::vector<Stream>& streams = {});

}  // namespace kjit::nccl
