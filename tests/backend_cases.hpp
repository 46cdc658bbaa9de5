// One table of kernel cases for both back ends (issue 9): each case is a kernel, its inputs (made
// from a fixed seed: dtype, shape, value range, view) and a reference computed here in double
// precision. host_backend_test.cpp runs the table on the host back end ([host], in CI);
// host_agreement_test.cpp runs it on the GPU ([gpu]) against the outputs the host back end wrote
// on the build machine (KJIT_HOST_REFERENCE_DIR), since the GPU machine has no LLVM.
#pragma once

#include <complex>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "jit/host/backend_loader.hpp"
#include "kjit/array.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/reduction_kernel.hpp"

// [host] tests need libkjit_host (built when LLVM 19 is found); a build without it says so.
#define KJIT_REQUIRE_HOST_BACKEND()                                                  \
    do {                                                                             \
        std::string why;                                                             \
        if (!kjit::jit::host::host_backend_available(&why)) {                        \
            WARN("SKIPPED (no host back end): " << why);                             \
            return;                                                                  \
        }                                                                            \
    } while (0)

namespace kjit::test {

// How an input array is viewed before the call: as made, transposed (last two axes), reversed
// (every axis, negative strides), or every other element of the last axis.
enum class View { plain, transposed, reversed, every_other };

struct CaseInput {
    DType dtype;
    Shape shape;           // of the array made (before the view); empty with `scalar`
    double lo = -4, hi = 4;  // values drawn uniformly (integers rounded; complex: both parts)
    View view = View::plain;
    bool scalar = false;   // a scalar argument of value `lo` instead
    std::int64_t nan_every = 0;  // floats: every nan_every-th element (C order, before the view) is NaN
};

using Values = std::vector<std::complex<double>>;

struct BackendCase {
    std::string name;  // also the reference files' prefix
    std::string in, out, op;
    std::vector<CaseInput> inputs;
    // The outputs' values at one element from the inputs' values there (broadcast) and the index.
    std::function<Values(const Values& x, std::int64_t i, std::int64_t n)> reference;
    double rtol = 0, atol = 0;        // host back end against the reference
    double gpu_rtol = 0, gpu_atol = 0;  // GPU against the host back end (CUDA's math differs by ULPs)
};

const std::vector<BackendCase>& backend_cases();

// The arrays a case's inputs are made of (host, C order, before the view), from a fixed seed.
std::vector<Array> make_case_arrays(const BackendCase& c);
// The call's arguments: the arrays with their views, scalars as Scalars (`args` point into `views`).
struct CaseCall {
    std::vector<Array> views;
    std::vector<KernelArg> args;
};
CaseCall case_arguments(const BackendCase& c, const std::vector<Array>& arrays);
// Elements of `got` (any device) that differ from the reference beyond the tolerance; the first
// few are logged with UNSCOPED_INFO.
std::size_t case_mismatches(const BackendCase& c, const std::vector<KernelArg>& args, const std::vector<Array>& got);
// Elements of `got` that differ from `want` (the host back end's outputs) beyond the GPU tolerance.
std::size_t agreement_mismatches(const BackendCase& c, const Array& got, const Array& want);

// Reduction cases (tests/reduction_cases.cpp): a reduction kernel (a built-in or one from strings),
// its inputs as above, the axes, and a reference computing the outputs of one reduction from the
// inputs' values over its reduced elements, in double.
struct ReductionCase {
    std::string name;
    std::string builtin;  // sum prod min max mean argmin argmax; empty: the kernel from the strings below
    std::string in = "T x", out = "T y", map, reduce, post, identity, reduce_type;
    std::vector<CaseInput> inputs;
    std::optional<std::vector<int>> axis;
    bool keepdims = false;
    // rows[k][j]: input k at reduced element j (C order over the reduced axes; a scalar repeated).
    std::function<Values(const std::vector<Values>& rows)> reference;
    // Allowed error: rtol |want| + atol + sum_tol * (the sum of |input 0| over the row): float sums
    // are grouped differently by the reference, the host back end and the GPU.
    double rtol = 0, atol = 0, sum_tol = 0;
};

const std::vector<ReductionCase>& reduction_cases();
// The case's arrays and arguments (make_case_arrays and case_arguments of its inputs).
std::vector<Array> make_case_arrays(const ReductionCase& c);
CaseCall case_arguments(const ReductionCase& c, const std::vector<Array>& arrays);
// Runs the case's reduction on `args` (on the device their arrays are on).
Outputs run_reduction_case(const ReductionCase& c, std::span<const KernelArg> args);
// Output elements that differ from the reference beyond the case's tolerance (first few logged).
std::size_t reduction_mismatches(const ReductionCase& c, const std::vector<KernelArg>& args, const std::vector<Array>& got);
// Output elements of `got` (the GPU's) that differ from `want` (the host back end's) beyond twice
// the case's tolerance (each is within it of the exact value), given the same arguments.
std::size_t reduction_agreement_mismatches(const ReductionCase& c, const std::vector<KernelArg>& args, const Array& got,
                                           const Array& want);

// The value v as dtype t holds it (C's conversion, complex to real taking the real part).
std::complex<double> as(DType t, std::complex<double> v);

}  // namespace kjit::test
