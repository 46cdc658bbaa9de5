// One table of kernel cases for both back ends (issue 9): each case is a kernel, its inputs (made
// from a fixed seed: dtype, shape, value range, view) and a reference computed here in double
// precision. host_backend_test.cpp runs the table on the host back end ([host], in CI);
// host_agreement_test.cpp runs it on the GPU ([gpu]) against the outputs the host back end wrote
// on the build machine (KJIT_HOST_REFERENCE_DIR), since the GPU machine has no LLVM.
#pragma once

#include <complex>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kjit/array.hpp"
#include "kjit/elementwise_kernel.hpp"

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

// The value v as dtype t holds it (C's conversion, complex to real taking the real part).
std::complex<double> as(DType t, std::complex<double> v);

}  // namespace kjit::test
