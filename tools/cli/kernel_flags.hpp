// How the CLI's kernel commands are told which kernel: flags (--in, --out, --op, --name,
// --preamble, --types) or --spec FILE.json holding one manifest entry.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kjit/elementwise_kernel.hpp"

namespace kjit::cli {

struct KernelFlags {
    std::string in, out, op, name = "kernel", preamble, types, spec_file;
};

// Registers the flags on `cmd`.
void add_kernel_flags(CLI::App& cmd, KernelFlags& flags);

struct KernelRequest {
    ElementwiseKernel kernel;
    std::vector<TypeBinding> bindings;  // from --types or the spec's "types"; may be empty
};

// Builds the kernel the flags describe. Throws kjit::Error (exit status 1) for a missing flag,
// an unreadable spec or a malformed binding.
KernelRequest load_kernel(const KernelFlags& flags);

}  // namespace kjit::cli
