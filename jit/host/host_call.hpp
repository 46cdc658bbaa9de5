// The host side of a kernel call that libkjit handles itself (no LLVM here): deciding that a call
// runs on the CPU, compiling its code through the back end, and running the chunk functions over
// the thread pool. The call paths (jit/kernels/elementwise/call.cpp) do binding, layout, allocation and
// overlap checks as for the GPU and come here for the rest.
#pragma once

#include <functional>
#include <mutex>
#include <span>
#include <string>

#include "jit/frontend/call_binding.hpp"
#include "jit/host/host_backend.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/kernel_arg.hpp"

namespace kjit::jit::host {

// The device number host calls use in call keys (CUDA devices are 0 and up).
constexpr int kHostOrdinal = -2;

// Whether the call's arrays are in host memory. Throws when host and device arrays are mixed,
// naming each array argument and where it is (`name(k)`: the kernel and argument k).
bool is_host_call(std::span<const KernelArg> args, const std::function<std::string(std::size_t)>& name);

// Held while a plan for host code is made, so that concurrent first calls compile once.
std::mutex& compile_mutex();

// Compiles `kernel` for the bound types through the back end (loading it on first use).
ElementwiseCode compile_elementwise_on_host(const ElementwiseKernel& kernel, const frontend::BoundCall& bound, const detail::ArgsLayout& args);

// Runs the code over the n elements of `layout` (simplified), in chunks over the pool.
void run_elementwise_on_host(const ElementwiseCode& code, const unsigned char* args, const detail::CallLayout& layout, std::int64_t n);

}  // namespace kjit::jit::host
