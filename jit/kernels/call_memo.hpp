// What a kernel object (ElementwiseKernel, ReductionKernel) keeps between calls: its parameter
// signature, parsed once, and per call key (device, each argument's kind and dtype) the plan of a
// launch. A warm call finds its plan with one hash lookup under a shared lock, which it releases
// before launching. Also the steps every call takes before its plan: the device, the key.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>

#include "jit/frontend/call_binding.hpp"
#include "kjit/kernel_arg.hpp"
#include "kjit/stream.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/call_layout.hpp"
#include "runtime/detail/kernel_args.hpp"

namespace kjit::jit::kernels {

constexpr int kMaxCallParams = 64;

// The memo key: device, then each argument's kind and dtype.
struct CallKey {
    std::uint8_t count = 0;
    std::int16_t device = 0;
    std::uint8_t kind[kMaxCallParams] = {};
    std::uint8_t dtype[kMaxCallParams] = {};
    friend bool operator==(const CallKey& a, const CallKey& b) noexcept {
        return a.count == b.count && a.device == b.device && std::memcmp(a.kind, b.kind, a.count) == 0 &&
               std::memcmp(a.dtype, b.dtype, a.count) == 0;
    }
};

struct CallKeyHash {
    std::size_t operator()(const CallKey& k) const noexcept {
        std::uint64_t h = 1469598103934665603ull ^ (static_cast<std::uint64_t>(k.count) << 16) ^ static_cast<std::uint16_t>(k.device);
        for (int i = 0; i < k.count; ++i) h = (h ^ (k.kind[i] | (k.dtype[i] << 8))) * 1099511628211ull;
        return static_cast<std::size_t>(h);
    }
};

// The key of a call of a kernel of `params` parameters with `args` (outputs not given count as absent).
CallKey call_key(std::span<const KernelArg> args, std::size_t params, int device);

// The kinds and dtypes of `args`, as bind_call takes them.
std::vector<frontend::ArgumentKind> argument_kinds(std::span<const KernelArg> args);

// The device every array argument is on (else the stream's, else the current one). Host arrays,
// invalid arrays and arrays on several devices are errors whose message starts with `where(k)`
// (the kernel and argument k), called only then: a warm call allocates nothing here.
int call_device(std::span<const KernelArg> args, const std::optional<Stream>& stream,
                const std::function<std::string(std::size_t)>& where);

// An array as the layout code sees it.
detail::OperandView operand_view(const Array& a);

// The field of each parameter in the kernel's argument struct: raw, a scalar's value, or a pointer.
std::vector<detail::ArgField> arg_fields(const frontend::CallSignature& sig, const frontend::BoundCall& bound);

// Writes the argument struct at `a`: pointer fields from pointer_of(k); scalars cast to their
// parameter's type (a NaN or an infinity for an integer parameter is a TypeError starting with
// where(k)); raw fields as RawField of raw_array(k), any strides, at most kjit::max_raw_dims
// dimensions (else a ShapeError starting with where(k)). A template so that a warm call's lambdas inline.
template <class PointerOf, class RawArray, class Where>
void write_args(unsigned char* a, const detail::ArgsLayout& layout, const frontend::BoundCall& bound, std::span<const KernelArg> args,
                std::size_t params, PointerOf pointer_of, RawArray raw_array, Where where) {
    for (std::size_t k = 0; k < params; ++k) {
        const detail::ArgSlot& field = layout.slots[k];
        switch (field.field) {
            case detail::ArgField::pointer: {
                const void* data = pointer_of(k);
                std::memcpy(a + field.offset, &data, sizeof data);
                break;
            }
            case detail::ArgField::value: {
                const Scalar& given = args[k].scalar();
                // C leaves a NaN or an infinity converted to an integer undefined: say so instead.
                if (bound.param_types[k].is_integer() && !given.dtype().is_integer() && !given.dtype().is_bool() &&
                    !std::isfinite(given.to_double()))
                    throw TypeError(where(k) + " is " + std::string(bound.param_types[k].name()) + ", and " +
                                    given.to_string() + " has no integer value");
                const Scalar v = given.cast(bound.param_types[k]);
                std::memcpy(a + field.offset, v.data(), bound.param_types[k].itemsize());
                break;
            }
            case detail::ArgField::raw: {
                const Array* r = raw_array(k);
                if (r == nullptr) throw ShapeError(where(k) + " is raw: it needs an array");
                if (r->ndim() > kjit::max_raw_dims)
                    throw ShapeError(where(k) + " is raw, and a raw array has at most " + std::to_string(kjit::max_raw_dims) +
                                     " dimensions, not " + std::to_string(r->ndim()));
                detail::RawField raw{};
                raw.data = static_cast<const char*>(r->data());
                raw.count = r->size();
                raw.ndim = r->ndim();
                raw.contiguous = r->is_c_contiguous() ? 1 : 0;
                const auto item = static_cast<long long>(r->dtype().itemsize());
                for (int d = 0; d < raw.ndim; ++d) {
                    raw.extents[d] = r->shape()[static_cast<std::size_t>(d)];
                    raw.steps[d] = r->strides()[static_cast<std::size_t>(d)] * item;
                }
                std::memcpy(a + field.offset, &raw, sizeof raw);
                break;
            }
        }
    }
}

template <class Plan>
class CallMemo {
public:
    // The signature, made by `make()` on first use; a kernel whose parameters do not parse throws at
    // every call.
    template <class Make>
    const frontend::CallSignature& signature(Make&& make) {
        if (have_signature_.load(std::memory_order_acquire)) return signature_;
        std::lock_guard lock(signature_mutex_);
        if (!have_signature_.load(std::memory_order_relaxed)) {
            signature_ = make();
            have_signature_.store(true, std::memory_order_release);
        }
        return signature_;
    }
    const Plan* find(const CallKey& key) const {
        std::shared_lock lock(plans_mutex_);
        const auto it = plans_.find(key);
        return it == plans_.end() ? nullptr : it->second.get();
    }
    // A plan another thread inserted first wins.
    const Plan* insert(const CallKey& key, std::unique_ptr<Plan> plan) {
        std::unique_lock lock(plans_mutex_);
        return plans_.emplace(key, std::move(plan)).first->second.get();
    }

private:
    std::mutex signature_mutex_;
    std::atomic<bool> have_signature_{false};
    frontend::CallSignature signature_;
    mutable std::shared_mutex plans_mutex_;
    std::unordered_map<CallKey, std::unique_ptr<Plan>, CallKeyHash> plans_;
};

}  // namespace kjit::jit::kernels
