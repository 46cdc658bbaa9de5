// The stages every kernel call goes through, shared by elementwise and reduction kernels (and the
// kinds built on them): validate the arguments' count, locate the call (host or which GPU, which
// stream), find or make the plan for the arguments' dtypes, hold the operands (given, allocated,
// copied), check outputs against inputs, pack the argument struct, launch, finish. Each kind adds
// its own shape rule and variant choice between these (jit/kernels/*/call.cpp, docs/ARCHITECTURE.md).
#pragma once

#include <cuda.h>

#include <bitset>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "jit/frontend/type_checker.hpp"
#include "jit/host/host_call.hpp"
#include "jit/kernels/call_memo.hpp"
#include "jit/kernels/made_arrays.hpp"
#include "kjit/array.hpp"
#include "kjit/device.hpp"
#include "kjit/kernel_arg.hpp"
#include "kjit/stream.hpp"
#include "runtime/detail/call_layout.hpp"
#include "runtime/detail/capture.hpp"
#include "templates/launch_layout.cuh"

namespace kjit::jit::kernels {

// Who is called, for messages: "kernel 'axpb': input 'x' ...". Strings are made only for errors.
struct CallSite {
    const char* what;  // "kernel", "reduction"
    const std::string& name;
    const frontend::CallSignature& sig;

    std::string prefix() const;                // "kernel 'axpb': "
    std::string label(std::size_t k) const;    // "input 'x'", "output 'y'"
    std::string where(std::size_t k) const { return prefix() + label(k); }
};

// The count checks every call makes before anything is bound: at most kMaxCallParams
// parameters; the inputs, or every parameter; launch() (outputs_wanted false) gives every output.
void validate_arity(const CallSite& site, std::size_t count, bool outputs_wanted);

// Where a call runs: host arrays on the CPU (jit/host/), device arrays on their GPU, on the stream
// the options give (else the current one). The one place a call decides between the two.
struct Target {
    bool host = false;
    int ordinal = 0;  // host::kHostOrdinal on the CPU
    Device device = Device::cpu();
    Stream stream;
};
Target locate(const CallSite& site, std::span<const KernelArg> args, const std::optional<Stream>& stream);

// The plan for these arguments' kinds and dtypes on this target, made by make() the first time.
// Host plans compile code through the back end, one at a time.
template <class Plan, class Make>
const Plan& plan_for(CallMemo<Plan>& calls, const Target& target, std::span<const KernelArg> args, std::size_t params, Make&& make) {
    const CallKey key = call_key(args, params, target.ordinal);
    if (const Plan* plan = calls.find(key)) return *plan;
    if (!target.host) return *calls.insert(key, make());
    std::lock_guard lock(host::compile_mutex());
    if (const Plan* plan = calls.find(key)) return *plan;
    return *calls.insert(key, make());
}

// The arrays of one call by parameter: those given, and those kjit makes (outputs not given,
// copies of inputs that overlap an output).
class Operands {
public:
    explicit Operands(std::span<const KernelArg> args) : args_(args) {}
    // Parameter k's array: made, else given; null for a scalar or a parameter not given.
    const Array* array(std::size_t k) const {
        if (const Array* a = made_.find(k)) return a;
        return k < args_.size() && args_[k].is_array() ? &args_[k].array() : nullptr;
    }
    void set(std::size_t k, Array a) { made_.set(k, std::move(a)); }
    // Every buffer the call used is recorded on its stream (so that memory freed meanwhile is
    // reused only after the launch), then the outputs (parameters first_output.. params-1).
    void finish(const Target& target, std::size_t first_output, std::size_t params, std::vector<Array>* outputs) const;

private:
    std::span<const KernelArg> args_;
    MadeArrays made_;
};

// Outputs are written while inputs are read. For the array operands `arrays` (parameter indices;
// those from `first_output` on are outputs): throws when an output repeats elements (a broadcast
// view) or overlaps another output, and returns the inputs that share memory with an output and
// so are read from a copy, except those `in_place(i, o)` accepts (positions in `arrays`: the same
// elements in the same order, so each is read before it is written).
void check_writable(const CallSite& site, std::size_t k, const Array& output);
[[noreturn]] void throw_outputs_overlap(const CallSite& site, std::size_t a, std::size_t b);
template <class InPlace>
std::bitset<kMaxCallParams> inputs_to_copy(const CallSite& site, const Operands& operands, std::span<const int> arrays,
                                           std::size_t first_output, InPlace&& in_place) {
    std::bitset<kMaxCallParams> copy;
    for (std::size_t o = 0; o < arrays.size(); ++o) {
        const std::size_t ko = static_cast<std::size_t>(arrays[o]);
        if (ko < first_output) continue;
        const Array& out = *operands.array(ko);
        if (out.size() == 0) continue;
        check_writable(site, ko, out);
        char *olo, *ohi;
        detail::byte_range(operand_view(out), olo, ohi);
        for (std::size_t p = 0; p < arrays.size(); ++p) {
            const std::size_t kp = static_cast<std::size_t>(arrays[p]);
            if (kp == ko) continue;
            const Array& other = *operands.array(kp);
            if (other.size() == 0) continue;
            char *plo, *phi;
            detail::byte_range(operand_view(other), plo, phi);
            if (!(plo < ohi && olo < phi)) continue;
            if (kp >= first_output) throw_outputs_overlap(site, ko, kp);
            if (!in_place(p, o)) copy.set(kp);
        }
    }
    return copy;
}

// The argument struct and the layout being prepared on this thread: cuLaunchKernel copies them,
// so one buffer per thread serves every launch. Allocated on a thread's first call (about 30 KB
// would otherwise be part of every thread's static TLS block) and not zeroed: each launch writes
// what it passes. A call that launches other kernels first (copies of inputs) fills them after.
struct LaunchBuffers {
    alignas(16) unsigned char args[frontend::kMaxArgumentBytes];
    union {
        kjit::Layout<detail::kMaxCallOperands> elementwise;
        kjit::ReduceLayout<detail::kMaxCallOperands, detail::kMaxCallOperands> reduction;
    } layout;
    detail::CallLayout call;    // an elementwise call's operands over their broadcast shape
    detail::CallLayout inputs;  // a reduction's inputs: kept while it copies with elementwise calls
};
LaunchBuffers& launch_buffers();

// Records the call's scalars and argument struct for Graph::capture (runtime/detail/capture.hpp),
// so that a saved graph can name its scalars by kernel and parameter.
void note_call_for_capture(const CallSite& site, const detail::ArgsLayout& layout, const frontend::BoundCall& bound,
                           const unsigned char* args);

// The argument struct: write_args (call_memo.hpp) over the call's arrays, messages naming the site.
template <class PointerOf>
void pack_args(const CallSite& site, unsigned char* a, const detail::ArgsLayout& layout, const frontend::BoundCall& bound,
               std::span<const KernelArg> args, const Operands& operands, PointerOf pointer_of) {
    write_args(a, layout, bound, args, site.sig.params.size(), pointer_of, [&](std::size_t k) { return operands.array(k); },
               [&](std::size_t k) { return site.where(k); });
    if (detail::capture_collecting()) note_call_for_capture(site, layout, bound, a);
}

// The layout of the argument struct of a kernel with these fields; more bytes than a launch
// passes is the site's TypeError.
detail::ArgsLayout args_layout_for(const CallSite& site, const std::vector<detail::ArgField>& fields, const std::vector<DType>& types);

// One launch on the call's device and stream: grid (x, y) of `block` threads, with
// `shared_bytes` of dynamic shared memory.
void launch(const Target& target, CUfunction f, unsigned grid_x, unsigned grid_y, unsigned block, void** params,
            unsigned shared_bytes = 0);

}  // namespace kjit::jit::kernels
