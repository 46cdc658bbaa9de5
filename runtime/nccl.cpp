// kjit::nccl's communicators, ids, groups and errors (the collectives are in nccl_collectives.cpp).
#include "kjit/nccl.hpp"

#include <algorithm>
#include <cstring>
#include <set>

#include "runtime/detail/driver.hpp"
#include "runtime/detail/log.hpp"
#include "runtime/detail/nccl.hpp"

namespace kjit::nccl {
namespace {

// Puts back the calling thread's CUDA context when the scope ends: NCCL's set-up and tear-down
// switch devices through the runtime API, and the application's current device should not move.
class ContextKeeper {
public:
    ContextKeeper() noexcept : driver_(detail::try_driver()) {
        if (driver_ != nullptr && driver_->cuCtxGetCurrent(&saved_) != CUDA_SUCCESS) driver_ = nullptr;
    }
    ~ContextKeeper() {
        CUcontext now = nullptr;
        if (driver_ != nullptr && driver_->cuCtxGetCurrent(&now) == CUDA_SUCCESS && now != saved_)
            driver_->cuCtxSetCurrent(saved_);
    }
    ContextKeeper(const ContextKeeper&) = delete;
    ContextKeeper& operator=(const ContextKeeper&) = delete;

private:
    detail::Driver* driver_;
    CUcontext saved_ = nullptr;
};

std::string describe(int rank, int size, int ordinal) {
    return "rank " + std::to_string(rank) + " of " + std::to_string(size) + ", cuda:" + std::to_string(ordinal);
}

// The ordinal of `device` for a communicator, checked against the driver's devices.
int checked_ordinal(const Device& device, const std::string& where) {
    if (!device.is_cuda()) throw Error(where + ": NCCL needs a CUDA device, not " + device.to_string());
    const int ordinal = device.ordinal();
    const int count = detail::driver().device_count();
    if (ordinal < 0 || ordinal >= count)
        throw Error(where + ": there is no " + device.to_string() + " (this process sees " + std::to_string(count) +
                    " CUDA device" + (count == 1 ? "" : "s") + ")");
    return ordinal;
}

}  // namespace

struct Communicator::State {
    detail::NcclComm comm = nullptr;
    int rank = 0;
    int size = 0;
    int ordinal = 0;
};

NcclError::NcclError(int code, std::string call, const std::string& what)
    : Error(what), code_(code), call_(std::move(call)) {}

bool available() noexcept { return detail::try_nccl() != nullptr; }

std::string no_nccl_reason() {
    std::string why;
    return detail::try_nccl(&why) != nullptr ? std::string() : why;
}

int version() { return detail::nccl().version; }

std::string_view op_name(Op op) noexcept {
    switch (op) {
        case Op::sum: return "sum";
        case Op::prod: return "prod";
        case Op::min: return "min";
        case Op::max: return "max";
        case Op::avg: return "avg";
    }
    return "unknown";
}

// --- UniqueId

UniqueId UniqueId::create() {
    const detail::NcclApi& api = detail::nccl();
    detail::NcclUniqueId raw{};
    KJIT_NCCL_CHECK(api, ncclGetUniqueId(&raw), "nccl::UniqueId::create", nullptr);
    std::array<std::uint8_t, size> bytes{};
    static_assert(sizeof raw.internal == size, "ncclUniqueId is 128 bytes");
    std::memcpy(bytes.data(), raw.internal, size);
    return UniqueId(bytes);
}

UniqueId UniqueId::from_bytes(const void* data, std::size_t count) {
    if (count != size)
        throw Error("nccl::UniqueId::from_bytes: an NCCL unique id is " + std::to_string(size) + " bytes, not " +
                    std::to_string(count));
    if (data == nullptr) throw Error("nccl::UniqueId::from_bytes: null data");
    std::array<std::uint8_t, size> bytes{};
    std::memcpy(bytes.data(), data, size);
    return UniqueId(bytes);
}

std::string UniqueId::to_hex() const {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * size);
    for (std::uint8_t b : bytes_) {
        out += kDigits[b >> 4];
        out += kDigits[b & 0xf];
    }
    return out;
}

UniqueId UniqueId::from_hex(std::string_view hex) {
    if (hex.size() != 2 * size)
        throw Error("nccl::UniqueId::from_hex: expected " + std::to_string(2 * size) + " hex digits, got " +
                    std::to_string(hex.size()) + " characters");
    auto digit = [&](std::size_t i) {
        const char c = hex[i];
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        throw Error("nccl::UniqueId::from_hex: '" + std::string(1, c) + "' at position " + std::to_string(i) +
                    " is not a hex digit");
    };
    std::array<std::uint8_t, size> bytes{};
    for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::uint8_t>(digit(2 * i) * 16 + digit(2 * i + 1));
    return UniqueId(bytes);
}

// --- Communicator

Communicator::Communicator() noexcept = default;
Communicator::Communicator(Communicator&& other) noexcept = default;

Communicator& Communicator::operator=(Communicator&& other) noexcept {
    if (this != &other) {
        Communicator old(std::move(*this));  // destroyed here, before taking the other's
        state_ = std::move(other.state_);
    }
    return *this;
}

Communicator::~Communicator() {
    if (!state_ || state_->comm == nullptr) return;
    const detail::NcclApi* api = detail::try_nccl();
    if (api == nullptr) return;  // a test's table went away first: nothing to call
    const ContextKeeper keep;
    const detail::NcclResult status = api->ncclCommDestroy(state_->comm);
    if (status != detail::kNcclSuccess)
        detail::log(detail::LogLevel::warn, "ncclCommDestroy failed for nccl::Communicator(" +
                                                describe(state_->rank, state_->size, state_->ordinal) +
                                                "): " + detail::nccl_status_name(status));
}

Communicator::Communicator(const UniqueId& id, int nranks, int rank, Device device) {
    const std::string where = "nccl::Communicator(rank " + std::to_string(rank) + " of " + std::to_string(nranks) +
                              ", " + device.to_string() + ")";
    if (nranks < 1) throw Error(where + ": a communicator needs at least one rank");
    if (rank < 0 || rank >= nranks)
        throw Error(where + ": rank must be in [0, " + std::to_string(nranks) + ")");
    if (id == UniqueId())
        throw Error(where + ": the UniqueId is all zero; make one with nccl::UniqueId::create() on one rank and "
                            "send its bytes to the others");
    const detail::NcclApi& api = detail::nccl();
    const int ordinal = checked_ordinal(device, where);
    detail::NcclUniqueId raw{};
    std::memcpy(raw.internal, id.data(), UniqueId::size);
    detail::NcclComm comm = nullptr;
    {
        const ContextKeeper keep;
        detail::driver_on(ordinal);  // NCCL takes the rank's device from the current context
        KJIT_NCCL_CHECK(api, ncclCommInitRank(&comm, nranks, raw, rank), where, nullptr);
    }
    state_ = std::make_unique<State>(State{comm, rank, nranks, ordinal});
}

std::vector<Communicator> Communicator::local(const std::vector<Device>& devices) {
    const std::string where = "nccl::Communicator::local";
    if (devices.empty()) throw Error(where + ": no devices given");
    const detail::NcclApi& api = detail::nccl();
    std::vector<int> ordinals;
    std::set<int> seen;
    for (const Device& d : devices) {
        const int ordinal = checked_ordinal(d, where);
        if (!seen.insert(ordinal).second)
            throw Error(where + ": " + d.to_string() + " is given twice; NCCL needs one rank per device here");
        ordinals.push_back(ordinal);
    }
    const int n = static_cast<int>(ordinals.size());
    std::vector<detail::NcclComm> comms(ordinals.size(), nullptr);
    {
        const ContextKeeper keep;
        KJIT_NCCL_CHECK(api, ncclCommInitAll(comms.data(), n, ordinals.data()),
                        where + " (" + std::to_string(n) + " devices)", nullptr);
    }
    std::vector<Communicator> out(ordinals.size());
    for (int i = 0; i < n; ++i) out[i].state_ = std::make_unique<State>(State{comms[i], i, n, ordinals[i]});
    return out;
}

bool Communicator::valid() const noexcept { return state_ != nullptr && state_->comm != nullptr; }

namespace {
[[noreturn]] void throw_empty(const char* what) {
    throw Error(std::string("nccl::Communicator::") + what + ": the communicator is empty (moved from, aborted or "
                "default-constructed)");
}
}  // namespace

int Communicator::rank() const {
    if (!valid()) throw_empty("rank");
    return state_->rank;
}

int Communicator::size() const {
    if (!valid()) throw_empty("size");
    return state_->size;
}

Device Communicator::device() const {
    if (!valid()) throw_empty("device");
    return Device::cuda(state_->ordinal);
}

void* Communicator::handle() const noexcept { return valid() ? static_cast<void*>(state_->comm) : nullptr; }

void Communicator::check_async_error() const {
    if (!valid()) throw_empty("check_async_error");
    const detail::NcclApi& api = detail::nccl();
    detail::NcclResult async = detail::kNcclSuccess;
    const std::string where = "nccl::Communicator::check_async_error (" + to_string() + ")";
    KJIT_NCCL_CHECK(api, ncclCommGetAsyncError(state_->comm, &async), where, state_->comm);
    if (async != detail::kNcclSuccess && async != detail::kNcclInProgress)
        detail::throw_nccl_error(api, async, "ncclCommGetAsyncError (an asynchronous error)", where, state_->comm);
}

void Communicator::abort() noexcept {
    if (!valid()) return;
    if (const detail::NcclApi* api = detail::try_nccl()) {
        const ContextKeeper keep;
        const detail::NcclResult status = api->ncclCommAbort(state_->comm);
        if (status != detail::kNcclSuccess)
            detail::log(detail::LogLevel::warn, "ncclCommAbort failed for " + to_string() + ": " +
                                                    detail::nccl_status_name(status));
    }
    state_.reset();
}

std::string Communicator::to_string() const {
    if (!valid()) return "nccl::Communicator(empty)";
    return "nccl::Communicator(" + describe(state_->rank, state_->size, state_->ordinal) + ")";
}

// --- GroupGuard

GroupGuard::GroupGuard() : open_(false) {
    const detail::NcclApi& api = detail::nccl();
    KJIT_NCCL_CHECK(api, ncclGroupStart(), "nccl::GroupGuard", nullptr);
    open_ = true;
}

GroupGuard::~GroupGuard() {
    if (!open_) return;
    const detail::NcclApi* api = detail::try_nccl();
    if (api == nullptr) return;
    const ContextKeeper keep;
    const detail::NcclResult status = api->ncclGroupEnd();
    if (status != detail::kNcclSuccess)
        detail::log(detail::LogLevel::warn, "ncclGroupEnd failed when a nccl::GroupGuard was destroyed: " +
                                                detail::nccl_status_name(status));
}

void GroupGuard::end() {
    if (!open_) throw Error("nccl::GroupGuard::end: the group has ended already");
    open_ = false;
    const detail::NcclApi& api = detail::nccl();
    const ContextKeeper keep;
    KJIT_NCCL_CHECK(api, ncclGroupEnd(), "nccl::GroupGuard::end", nullptr);
}

}  // namespace kjit::nccl
