// The kernels made for array expressions (jit/expr/expr_eval.cpp, expr_reduce.cpp), kept for the
// life of the process, as built-in reductions are: their plans then serve every later evaluation
// of the same structure.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "jit/expr/expr_source.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/expr.hpp"
#include "kjit/reduction_kernel.hpp"

namespace kjit::detail {

template <class Kernel>
class ExprKernels {
public:
    // The kernel under `key`, made by `make()` the first time.
    template <class Make>
    const Kernel& get(const ExprKey& key, Make make) {
        {
            const std::lock_guard lock(mutex_);
            if (const auto it = kernels_.find(key); it != kernels_.end()) return *it->second;
        }
        auto made = std::make_unique<Kernel>(make());  // outside the lock: it parses nothing yet, but may throw
        const std::lock_guard lock(mutex_);
        return *kernels_.try_emplace(key, std::move(made)).first->second;
    }

private:
    std::mutex mutex_;
    std::unordered_map<ExprKey, std::unique_ptr<Kernel>, ExprKeyHash> kernels_;
};

ExprKernels<ElementwiseKernel>& expr_elementwise_kernels();
ExprKernels<ReductionKernel>& expr_reduction_kernels();

// The ElementwiseKernel `e` evaluates to (into an output of its dtype), made and kept as its first
// evaluation would: for compiling it ahead (`kjit demo` without a GPU).
const ElementwiseKernel& expr_elementwise_kernel(const Expr& e);

// A call's arguments for the expression's parameters: its distinct arrays, then its numbers in
// their parameters' dtypes (kept in `values`, which the arguments point into).
std::vector<KernelArg> expr_arguments(const FlatExpr& flat, std::vector<Scalar>& values);

}  // namespace kjit::detail
