// The host back end (jit/host/): the shared table of kernel cases against references computed
// here, and what only the host path has: loading the back end, mixing host and device arrays,
// defined integer edge cases, in-place calls, concurrent first calls, raw CUDA refused.
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "backend_cases.hpp"
#include "jit/host/backend_loader.hpp"
#include "kjit/kjit.hpp"
#include "test_support.hpp"

using namespace kjit;
using namespace kjit::test;

TEST_CASE("host back end: every case of the shared table matches its reference", "[host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    for (const BackendCase& c : backend_cases()) {
        INFO("case " << c.name << ": " << c.op);
        const std::vector<Array> arrays = make_case_arrays(c);
        const CaseCall call = case_arguments(c, arrays);
        const ElementwiseKernel k(c.in, c.out, c.op, "case_" + c.name);
        const Outputs out = k(std::span<const KernelArg>(call.args));
        std::vector<Array> got;
        for (std::size_t o = 0; o < out.size(); ++o) {
            CHECK(out[o].is_host());
            got.push_back(out[o]);
        }
        CHECK(case_mismatches(c, call.args, got) == 0);
    }
}

TEST_CASE("host back end: every reduction case of the shared table matches its reference", "[host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    for (const ReductionCase& c : reduction_cases()) {
        INFO("reduction case " << c.name);
        const std::vector<Array> arrays = make_case_arrays(c);
        const CaseCall call = case_arguments(c, arrays);
        const Outputs out = run_reduction_case(c, std::span<const KernelArg>(call.args));
        std::vector<Array> got(out.begin(), out.end());
        for (const Array& g : got) CHECK(g.is_host());
        CHECK(reduction_mismatches(c, call.args, got) == 0);
    }
}

TEST_CASE("host back end: outputs the host back end wrote for the GPU agreement test", "[.][host-reference]") {
    // KJIT_HOST_REFERENCE_DIR=DIR kjit_tests "[host-reference]" writes each case's input arrays and
    // outputs as .npy; the [gpu] test "GPU and host back ends agree" reads them on the GPU machine.
    KJIT_REQUIRE_HOST_BACKEND();
    const char* dir = std::getenv("KJIT_HOST_REFERENCE_DIR");
    REQUIRE(dir != nullptr);
    std::filesystem::create_directories(dir);
    for (const BackendCase& c : backend_cases()) {
        const std::vector<Array> arrays = make_case_arrays(c);
        const CaseCall call = case_arguments(c, arrays);
        const Outputs out = ElementwiseKernel(c.in, c.out, c.op, "case_" + c.name)(std::span<const KernelArg>(call.args));
        for (std::size_t k = 0; k < arrays.size(); ++k)
            if (arrays[k].valid()) save_npy(std::string(dir) + "/" + c.name + ".in" + std::to_string(k) + ".npy", arrays[k]);
        for (std::size_t o = 0; o < out.size(); ++o) save_npy(std::string(dir) + "/" + c.name + ".out" + std::to_string(o) + ".npy", out[o]);
    }
    for (const ReductionCase& c : reduction_cases()) {
        const std::vector<Array> arrays = make_case_arrays(c);
        const CaseCall call = case_arguments(c, arrays);
        const Outputs out = run_reduction_case(c, std::span<const KernelArg>(call.args));
        for (std::size_t k = 0; k < arrays.size(); ++k)
            if (arrays[k].valid()) save_npy(std::string(dir) + "/red_" + c.name + ".in" + std::to_string(k) + ".npy", arrays[k]);
        for (std::size_t o = 0; o < out.size(); ++o)
            save_npy(std::string(dir) + "/red_" + c.name + ".out" + std::to_string(o) + ".npy", out[o]);
    }
}

TEST_CASE("host back end: integer division by zero, overflow and wide shifts are defined", "[host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    const ElementwiseKernel k("int32 a, int32 b", "int32 q, int32 r, int32 l, int32 s", "q = a / b; r = a % b; l = a << b; s = a >> b",
                              "edges");
    const Array a = host_array<std::int32_t>({7, -7, INT32_MIN, 5, -8}, DType::int32);
    const Array b = host_array<std::int32_t>({0, 0, -1, 40, 33}, DType::int32);
    const Outputs o = k({a, b});
    CHECK(values_of<std::int32_t>(o[0]) == std::vector<std::int32_t>{-1, -1, INT32_MIN, 0, 0});
    CHECK(values_of<std::int32_t>(o[1]) == std::vector<std::int32_t>{7, -7, 0, 5, -8});
    CHECK(values_of<std::int32_t>(o[2]) == std::vector<std::int32_t>{7, -7, 0, 0, 0});
    CHECK(values_of<std::int32_t>(o[3]) == std::vector<std::int32_t>{7, -7, -1, 0, -1});
    const ElementwiseKernel sat("float64 x", "int8 y, uint16 u", "y = x; u = x", "saturate");
    const Outputs s = sat({host_array<double>({1e9, -1e9, std::nan(""), -3.7}, DType::float64)});
    CHECK(values_of<std::int8_t>(s[0]) == std::vector<std::int8_t>{127, -128, 0, -3});
    CHECK(values_of<std::uint16_t>(s[1]) == std::vector<std::uint16_t>{65535, 0, 0, 0});
}

TEST_CASE("host back end: in place, and an input overlapping the output shifted is read from a copy", "[host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    const ElementwiseKernel twice("T x", "T y", "y = y * 2 + x", "twice_plus");
    Array y = host_array<float>({1, 2, 3, 4}, DType::float32);
    twice.launch({y, y});
    CHECK(values_of<float>(y) == std::vector<float>{3, 6, 9, 12});
    const ElementwiseKernel copy("T x", "T y", "y = x", "copy_shifted");
    Array z = host_array<float>({1, 2, 3, 4, 5}, DType::float32);
    copy.launch({z.slice(0, Slice{0, 4, 1}), z.slice(0, Slice{1, 5, 1})});
    CHECK(values_of<float>(z) == std::vector<float>{1, 1, 2, 3, 4});
}

TEST_CASE("host back end: large arrays spread over the pool give the same result as small ones", "[host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    const std::int64_t n = (std::int64_t{1} << 20) + 12345;  // many chunks and a ragged last one
    Array x = Array::empty({n}, DType::float64, Device::cpu());
    auto* p = static_cast<double*>(x.data());
    for (std::int64_t k = 0; k < n; ++k) p[k] = static_cast<double>(k);
    const ElementwiseKernel k("T x", "T y", "y = x * 0.5 + i", "half_plus_index");
    const Array y = k({x});
    const auto* q = static_cast<const double*>(y.data());
    std::int64_t wrong = 0;
    for (std::int64_t e = 0; e < n; ++e) wrong += q[e] != static_cast<double>(e) * 1.5;
    CHECK(wrong == 0);
    CHECK(jit::host::host_backend().description().find("LLVM 19") != std::string::npos);
}

TEST_CASE("host back end: concurrent first calls of one kernel", "[host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    const ElementwiseKernel k("T x", "T y", "y = x * x - 1", "concurrent_square");
    const std::vector<std::string> results = run_on_all_cores(8, [&](std::size_t t) {
        const Array y = k({host_array<double>({static_cast<double>(t), 3.0}, DType::float64)});
        const std::vector<double> v = values_of<double>(y);
        return std::to_string(v[0]) + "," + std::to_string(v[1]);
    });
    for (std::size_t t = 0; t < results.size(); ++t)
        CHECK(results[t] == std::to_string(static_cast<double>(t * t) - 1) + "," + std::to_string(8.0));
}

TEST_CASE("host back end: raw CUDA and mixed locations are refused with a clear error", "[host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    KernelOptions o;
    o.preamble = "__device__ float twice(float v) { return 2 * v; }";
    const ElementwiseKernel raw("T x", "T y", "y = twice(x)", "with_preamble", o);
    const Array x = host_array<float>({1, 2}, DType::float32);
    CHECK_THROWS_WITH(raw({x}), Catch::Contains("with_preamble") && Catch::Contains("preamble is raw CUDA"));
    float fake = 0;  // never read: the call is refused before anything runs
    const Array on_gpu = Array::wrap(&fake, DType::float32, {2}, Device::cuda(0));
    const ElementwiseKernel add("T x, T z", "T y", "y = x + z", "mixed");
    CHECK_THROWS_WITH(add({x, on_gpu}), Catch::Contains("input 'x' is on cpu") && Catch::Contains("input 'z' is on cuda:0"));
}
