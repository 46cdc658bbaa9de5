// The reduction side of `kjit run`: reading --axis, and the call of the ReductionKernel on the
// GPU. Kept apart so that the call (which needs the GPU and the reduction launcher) is one small
// function, and what can be checked without a GPU is checked before it.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kjit/reduction_kernel.hpp"

namespace kjit::cli {

// The axes of every --axis (each "1", "-1" or "0,2"): none when no --axis was given (every axis
// is reduced). Throws Error naming the item that is not a list of integers.
std::optional<std::vector<int>> parse_axes(const std::vector<std::string>& items);

// Reduces `args` (inputs, then every output or none) on the GPU; returns the outputs.
Outputs run_reduction(const ReductionKernel& kernel, std::span<const KernelArg> args, const ReduceOptions& options);

}  // namespace kjit::cli
