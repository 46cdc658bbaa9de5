// How the CLI's kernel commands are told which kernel: flags (--in, --out, --op, --name,
// --preamble, --nvrtc-option, --types; --loop-prep and --after-loop for an elementwise kernel;
// --map, --reduce, --post, --identity, --reduce-type for a reduction) or
// --spec FILE.json holding one manifest entry (elementwise or reduction).
#pragma once

#include <string>
#include <variant>
#include <vector>

#include <CLI/CLI.hpp>

#include "kjit/elementwise_kernel.hpp"
#include "kjit/reduction_kernel.hpp"

namespace kjit::cli {

struct KernelFlags {
    std::string in, out, op, name = "kernel", preamble, types, spec_file, loop_prep, after_loop;
    std::vector<std::string> nvrtc_options;
    // A reduction: an empty string is the same as an absent flag (an empty identity means none).
    std::string map, reduce, post, identity, reduce_type;
};

// Registers the flags on `cmd`.
void add_kernel_flags(CLI::App& cmd, KernelFlags& flags);

struct KernelRequest {
    std::variant<ElementwiseKernel, ReductionKernel> kernel;
    std::vector<TypeBinding> bindings;  // from --types or the spec's "types"; may be empty

    bool is_reduction() const { return std::holds_alternative<ReductionKernel>(kernel); }
    const ReductionKernel& reduction() const { return std::get<ReductionKernel>(kernel); }
    const ElementwiseKernel& elementwise() const { return std::get<ElementwiseKernel>(kernel); }

    // What both kinds have, so that commands need not ask which kind it is.
    const std::string& name() const;
    const std::string& in_params() const;
    const std::string& out_params() const;
    std::vector<std::string> placeholders() const;
    void check(const TypeBinding& types = {}) const;
    std::string source(const TypeBinding& types) const;
};

// Builds the kernel the flags describe. Throws kjit::Error (exit status 1) for a missing or
// conflicting flag, an unreadable spec or a malformed binding.
KernelRequest load_kernel(const KernelFlags& flags);

}  // namespace kjit::cli
