// kjit::nccl's collectives: each call's arguments checked (what is wrong, and in which call, part
// and rank), mapped to NCCL's types and counts, and queued on the stream.
#include <cstdint>
#include <string>
#include <vector>

#include "kjit/nccl.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/nccl.hpp"
#include "runtime/detail/nccl_types.hpp"

namespace kjit::detail {

namespace {
bool has_bf16_and_avg(int nccl_version) { return nccl_version >= kNcclVersionBf16AndAvg; }
}  // namespace

NcclElements nccl_copy_elements(DType dtype, std::int64_t count, int nccl_version) noexcept {
    const std::size_t n = static_cast<std::size_t>(count);
    switch (dtype.id()) {
        case DType::int8: return {kNcclInt8, n};
        case DType::uint8: return {kNcclUint8, n};
        case DType::int32: return {kNcclInt32, n};
        case DType::uint32: return {kNcclUint32, n};
        case DType::int64: return {kNcclInt64, n};
        case DType::uint64: return {kNcclUint64, n};
        case DType::float16: return {kNcclFloat16, n};
        case DType::float32: return {kNcclFloat32, n};
        case DType::float64: return {kNcclFloat64, n};
        case DType::bfloat16:
            if (has_bf16_and_avg(nccl_version)) return {kNcclBfloat16, n};
            break;
        default: break;
    }
    return {kNcclUint8, n * dtype.itemsize()};  // moved as bytes: NCCL has no such type
}

NcclElements nccl_reduction_elements(DType dtype, std::int64_t count, nccl::Op op, int nccl_version,
                                     const std::string& where) {
    const std::string what = where + ": NCCL cannot " + std::string(nccl::op_name(op)) + " " +
                             std::string(dtype.name()) + ": ";
    const std::size_t n = static_cast<std::size_t>(count);
    switch (dtype.id()) {
        case DType::bool_:
            // 0 and 1 as uint8: min is logical and, max logical or, prod logical and.
            if (op == nccl::Op::min || op == nccl::Op::max || op == nccl::Op::prod) return {kNcclUint8, n};
            throw TypeError(what + "the " + std::string(nccl::op_name(op)) +
                            " of bools is not a bool; cast to an integer dtype first (min, max and prod of bool work)");
        case DType::int16:
        case DType::uint16:
            throw TypeError(what + "NCCL has no 16-bit integer type; cast to int32 (or float32) first");
        case DType::bfloat16:
            if (!has_bf16_and_avg(nccl_version))
                throw TypeError(what + "bfloat16 needs NCCL 2.10 or later, and this one is " +
                                nccl_version_string(nccl_version));
            return {kNcclBfloat16, n};
        case DType::complex64:
        case DType::complex128:
            if (op == nccl::Op::sum || op == nccl::Op::avg)
                return {dtype == DType::complex64 ? kNcclFloat32 : kNcclFloat64, 2 * n};  // (re, im) pairs
            throw TypeError(what + "NCCL has no complex types; kjit sums and averages complex arrays as (real, "
                                   "imaginary) pairs, but their prod, min and max cannot be taken part by part");
        default: return nccl_copy_elements(dtype, count, nccl_version);
    }
}

NcclRedOp nccl_red_op(nccl::Op op, int nccl_version, const std::string& where) {
    switch (op) {
        case nccl::Op::sum: return kNcclSum;
        case nccl::Op::prod: return kNcclProd;
        case nccl::Op::min: return kNcclMin;
        case nccl::Op::max: return kNcclMax;
        case nccl::Op::avg:
            if (!has_bf16_and_avg(nccl_version))
                throw Error(where + ": Op::avg needs NCCL 2.10 or later, and this one is " +
                            nccl_version_string(nccl_version));
            return kNcclAvg;
    }
    throw Error(where + ": unknown nccl::Op " + std::to_string(static_cast<int>(op)));
}

}  // namespace kjit::detail

namespace kjit::nccl {
namespace {

enum class Kind { all_reduce, reduce_scatter, all_gather, broadcast };

const char* name_of(Kind kind) {
    switch (kind) {
        case Kind::all_reduce: return "nccl::all_reduce";
        case Kind::reduce_scatter: return "nccl::reduce_scatter";
        case Kind::all_gather: return "nccl::all_gather";
        case Kind::broadcast: return "nccl::broadcast";
    }
    return "nccl";
}

// One collective on one communicator, checked and ready for NCCL.
struct Call {
    Kind kind = Kind::all_reduce;
    detail::NcclComm comm = nullptr;
    int ordinal = 0;
    const void* send = nullptr;
    void* recv = nullptr;
    detail::NcclElements elements;
    detail::NcclRedOp op = detail::kNcclSum;
    int root = 0;
    Stream stream;
    Array send_array;
    Array recv_array;
    std::string where;
};

void check_array(const Array& a, const char* role, const Communicator& comm, const std::string& where) {
    if (!a.valid()) throw Error(where + ": " + role + " is an empty Array");
    if (!a.device().is_cuda())
        throw Error(where + ": " + role + " is a host array (" + a.to_string() + "); NCCL works on device memory of " +
                    comm.device().to_string());
    if (a.device().ordinal() != comm.device().ordinal())
        throw Error(where + ": " + role + " is on " + a.device().to_string() + " but the communicator's device is " +
                    comm.device().to_string());
    if (!a.is_c_contiguous())
        throw ShapeError(where + ": " + role + " must be C-contiguous (NCCL reads and writes one flat block); " +
                         a.to_string() + " is a strided view: copy it first");
}

// Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte.
bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
    const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
    return a_bytes != 0 && b_bytes != 0 && x < y + b_bytes && y < x + a_bytes;
}

std::string count_text(const Array& a) { return std::to_string(a.size()) + " elements " + a.to_string(); }

Call prepare(Kind kind, const Communicator& comm, const Array& send, const Array& recv, Op op, int root,
             const Stream& stream, const std::string& part) {
    if (!comm.valid())
        throw Error(std::string(name_of(kind)) + part + ": the communicator is empty (moved from, aborted or "
                                                        "default-constructed)");
    Call c;
    c.kind = kind;
    c.where = std::string(name_of(kind)) + part + " (" + comm.to_string() + ")";
    const detail::NcclApi& api = detail::nccl();
    const int nranks = comm.size();
    const int rank = comm.rank();
    const bool moves_only = kind == Kind::all_gather || kind == Kind::broadcast;
    const char* send_role = kind == Kind::broadcast ? "the array" : "send";
    check_array(send, send_role, comm, c.where);
    if (kind != Kind::broadcast) {
        check_array(recv, "recv", comm, c.where);
        if (!(send.dtype() == recv.dtype()))
            throw TypeError(c.where + ": send is " + std::string(send.dtype().name()) + " but recv is " +
                            std::string(recv.dtype().name()) + "; NCCL needs one dtype");
    }
    switch (kind) {
        case Kind::all_reduce:
            if (send.size() != recv.size())
                throw ShapeError(c.where + ": send has " + count_text(send) + " but recv has " + count_text(recv) +
                                 "; all_reduce needs the same size");
            break;
        case Kind::reduce_scatter:
            if (send.size() != recv.size() * nranks)
                throw ShapeError(c.where + ": send has " + count_text(send) + " but recv has " + count_text(recv) +
                                 "; reduce_scatter needs send.size() == recv.size() * " + std::to_string(nranks) +
                                 " ranks");
            break;
        case Kind::all_gather:
            if (recv.size() != send.size() * nranks)
                throw ShapeError(c.where + ": send has " + count_text(send) + " but recv has " + count_text(recv) +
                                 "; all_gather needs recv.size() == send.size() * " + std::to_string(nranks) +
                                 " ranks");
            break;
        case Kind::broadcast:
            if (root < 0 || root >= nranks)
                throw Error(c.where + ": root " + std::to_string(root) + " is not a rank (0 to " +
                            std::to_string(nranks - 1) + ")");
            break;
    }
    const Array& out = kind == Kind::broadcast ? send : recv;
    // What NCCL allows of overlapping buffers: all_reduce in place (the same memory), reduce_scatter
    // with recv at the rank's block of send, all_gather with send at the rank's block of recv.
    if (kind != Kind::broadcast && overlap(send.data(), send.nbytes(), recv.data(), recv.nbytes())) {
        const auto* s = static_cast<const char*>(send.data());
        const auto* r = static_cast<const char*>(recv.data());
        bool in_place = false;
        if (kind == Kind::all_reduce) in_place = s == r;
        if (kind == Kind::reduce_scatter) in_place = r == s + static_cast<std::size_t>(rank) * recv.nbytes();
        if (kind == Kind::all_gather) in_place = s == r + static_cast<std::size_t>(rank) * send.nbytes();
        if (!in_place)
            throw Error(c.where + ": send and recv overlap; NCCL allows only " +
                        (kind == Kind::all_reduce ? std::string("send and recv the same array (in place)")
                         : kind == Kind::reduce_scatter
                             ? std::string("recv being this rank's block of send (in place)")
                             : std::string("send being this rank's block of recv (in place)")));
    }
    try {
        c.stream = stream.for_device(comm.device());
    } catch (const Error& e) {
        throw Error(c.where + ": " + e.what());
    }
    const std::int64_t count = kind == Kind::reduce_scatter ? recv.size() : send.size();
    c.elements = moves_only ? detail::nccl_copy_elements(send.dtype(), count, api.version)
                            : detail::nccl_reduction_elements(send.dtype(), count, op, api.version, c.where);
    if (!moves_only) c.op = detail::nccl_red_op(op, api.version, c.where);
    c.comm = static_cast<detail::NcclComm>(comm.handle());
    c.ordinal = comm.device().ordinal();
    c.send = send.data();
    c.recv = out.data();
    c.root = root;
    c.send_array = send;
    c.recv_array = out;
    return c;
}

// Queues the call on its stream. The buffers are recorded on the stream so that kjit frees them
// after NCCL has used them.
void issue(const Call& c) {
    const detail::NcclApi& api = detail::nccl();
    detail::driver_on(c.ordinal);
    const CUstream s = c.stream.handle();
    switch (c.kind) {
        case Kind::all_reduce:
            KJIT_NCCL_CHECK(api, ncclAllReduce(c.send, c.recv, c.elements.count, c.elements.type, c.op, c.comm, s),
                            c.where, c.comm);
            break;
        case Kind::reduce_scatter:
            KJIT_NCCL_CHECK(api, ncclReduceScatter(c.send, c.recv, c.elements.count, c.elements.type, c.op, c.comm, s),
                            c.where, c.comm);
            break;
        case Kind::all_gather:
            KJIT_NCCL_CHECK(api, ncclAllGather(c.send, c.recv, c.elements.count, c.elements.type, c.comm, s), c.where,
                            c.comm);
            break;
        case Kind::broadcast:
            KJIT_NCCL_CHECK(api, ncclBroadcast(c.send, c.recv, c.elements.count, c.elements.type, c.root, c.comm, s),
                            c.where, c.comm);
            break;
    }
    c.send_array.record_stream(c.stream);
    if (c.recv_array.buffer() != c.send_array.buffer()) c.recv_array.record_stream(c.stream);
}

// The vector forms: every part checked, then all issued in one group.
void issue_all(Kind kind, const std::vector<Communicator>& comms, const std::vector<Array>& send,
               const std::vector<Array>& recv, Op op, int root, const std::vector<Stream>& streams) {
    const std::string name = name_of(kind);
    const bool one_array = kind == Kind::broadcast;
    if (comms.empty()) throw Error(name + ": no communicators given");
    if (send.size() != comms.size() || (!one_array && recv.size() != comms.size()))
        throw Error(name + ": " + std::to_string(comms.size()) + " communicators but " +
                    (one_array ? std::to_string(send.size()) + " arrays"
                               : std::to_string(send.size()) + " send and " + std::to_string(recv.size()) +
                                     " recv arrays") +
                    "; give one of each per communicator");
    if (!streams.empty() && streams.size() != comms.size())
        throw Error(name + ": " + std::to_string(comms.size()) + " communicators but " +
                    std::to_string(streams.size()) + " streams; give one per communicator, or none");
    std::vector<Call> calls;
    calls.reserve(comms.size());
    for (std::size_t i = 0; i < comms.size(); ++i) {
        const Stream stream = streams.empty() ? Stream::current() : streams[i];
        calls.push_back(prepare(kind, comms[i], send[i], one_array ? send[i] : recv[i], op, root, stream,
                                ", part " + std::to_string(i)));
    }
    GroupGuard group;
    for (const Call& c : calls) issue(c);
    group.end();
}

}  // namespace

void all_reduce(const Communicator& comm, const Array& send, const Array& recv, Op op, const Stream& stream) {
    issue(prepare(Kind::all_reduce, comm, send, recv, op, 0, stream, ""));
}

void reduce_scatter(const Communicator& comm, const Array& send, const Array& recv, Op op, const Stream& stream) {
    issue(prepare(Kind::reduce_scatter, comm, send, recv, op, 0, stream, ""));
}

void all_gather(const Communicator& comm, const Array& send, const Array& recv, const Stream& stream) {
    issue(prepare(Kind::all_gather, comm, send, recv, Op::sum, 0, stream, ""));
}

void broadcast(const Communicator& comm, const Array& array, int root, const Stream& stream) {
    issue(prepare(Kind::broadcast, comm, array, array, Op::sum, root, stream, ""));
}

void all_reduce(const std::vector<Communicator>& comms, const std::vector<Array>& send, const std::vector<Array>& recv,
                Op op, const std::vector<Stream>& streams) {
    issue_all(Kind::all_reduce, comms, send, recv, op, 0, streams);
}

void reduce_scatter(const std::vector<Communicator>& comms, const std::vector<Array>& send,
                    const std::vector<Array>& recv, Op op, const std::vector<Stream>& streams) {
    issue_all(Kind::reduce_scatter, comms, send, recv, op, 0, streams);
}

void all_gather(const std::vector<Communicator>& comms, const std::vector<Array>& send, const std::vector<Array>& recv,
                const std::vector<Stream>& streams) {
    issue_all(Kind::all_gather, comms, send, recv, Op::sum, 0, streams);
}

void broadcast(const std::vector<Communicator>& comms, const std::vector<Array>& arrays, int root,
               const std::vector<Stream>& streams) {
    issue_all(Kind::broadcast, comms, arrays, {}, Op::sum, root, streams);
}

}  // namespace kjit::nccl
