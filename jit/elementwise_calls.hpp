// What an ElementwiseKernel keeps between calls: its parameter signature (parsed once) and, per
// device and argument dtypes, the plan of a launch (the loaded module, the bound types, the
// layout of the argument struct). A warm call finds its plan with one hash lookup under a shared
// lock, which it releases before launching.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "jit/call_binding.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "runtime/detail/call_layout.hpp"
#include "runtime/detail/kernel_args.hpp"

namespace kjit::jit {

// Which module a call needs beyond the type binding: parameters passed as scalars, array inputs
// stored as another dtype.
struct ModuleVariant {
    std::vector<bool> scalar;
    std::vector<std::optional<DType>> storage;
};

// The module of `kernel` for this binding and variant, compiled or found in a cache, loaded on
// device `ordinal`.
KernelModule load_elementwise(const ElementwiseKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                              int ordinal);

// The module of `kernel` for this binding and variant, compiled for `arch` or found in a cache
// (as ElementwiseKernel::compile does for the plain binding).
KernelBinary compile_elementwise(const ElementwiseKernel& kernel, const TypeBinding& types, const ModuleVariant& variant,
                                 const std::string& arch);

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

struct CallPlan {
    KernelModule module;
    BoundCall bound;
    detail::ArgsLayout args;
    detail::VariantNeeds needs;
    std::vector<int> operand_param;   // parameter of each array operand, in parameter order
    int first_output_operand = -1;
    int sm_count = 0;
};

class ElementwiseCalls {
public:
    // Parsed on first use; a kernel that does not parse throws its ParseError at every call.
    const CallSignature& signature(const ElementwiseKernel& kernel);
    const CallPlan* find(const CallKey& key) const;
    const CallPlan* insert(const CallKey& key, std::unique_ptr<CallPlan> plan);

private:
    std::mutex signature_mutex_;
    std::atomic<bool> have_signature_{false};
    CallSignature signature_;
    mutable std::shared_mutex plans_mutex_;
    std::unordered_map<CallKey, std::unique_ptr<CallPlan>, CallKeyHash> plans_;
};

// The implementation of ElementwiseKernel's calls: `outputs` null for launch().
void call_elementwise(const ElementwiseKernel& kernel, ElementwiseCalls& calls, std::span<const KernelArg> args,
                      const CallOptions& options, std::vector<Array>* outputs);

}  // namespace kjit::jit
