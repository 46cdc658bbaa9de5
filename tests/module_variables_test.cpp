// The modules kjit generates hold no device variables: with NVRTC's -default-device a
// namespace-scope or static member `constexpr` becomes one, and a module with any costs the
// driver 50-100 us more to load on the H200 (tools/bench/experiments/first_call_floor.cpp), which
// a fresh process's first call waits for. The templates use enumerators instead; this keeps it so.
#include "test_support.hpp"

#include <algorithm>
#include <string_view>

#include "jit/kernels/ops/arg_reduction.hpp"
#include "jit/kernels/ops/segments.hpp"
#include "jit/kernels/ops/small_matmul.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/raw_kernel.hpp"
#include "kjit/reduction_kernel.hpp"

using kjit::DType;

namespace {

// The cubin's section names live in its .shstrtab: a device variable puts .nv.global (or
// .nv.global.init) there.
bool has_device_variables(const std::vector<unsigned char>& cubin) {
    constexpr std::string_view section = ".nv.global";
    return std::search(cubin.begin(), cubin.end(), section.begin(), section.end()) != cubin.end();
}

}  // namespace

TEST_CASE("generated modules hold no device variables", "[codegen][nvrtc]") {
    const kjit::ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "no_globals_axpb");
    for (const DType t : {DType::float32, DType::float16, DType::complex128}) {
        INFO("elementwise, every variant, " << t.name());
        const kjit::Binary b = axpb.compile({{"T", t}}, "sm_90");
        REQUIRE_FALSE(b.cubin.empty());
        CHECK_FALSE(has_device_variables(b.cubin));
        // A test that can fail: a plain constexpr at namespace scope is a device variable.
        if (t == DType::float32) {
            kjit::KernelOptions with_variable;
            with_variable.preamble = "constexpr int planted = 3;\n__device__ int use_planted(int v) { return v + planted; }";
            const kjit::ElementwiseKernel planted("T x", "T y", "y = use_planted(x)", "with_global", with_variable);
            CHECK(has_device_variables(planted.compile({{"T", DType::int32}}, "sm_90").cubin));
        }
    }
    const kjit::ReductionKernel l2("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "no_globals_l2");
    for (const DType t : {DType::float32, DType::float64}) {
        INFO("reduction, every strategy, " << t.name());
        const kjit::Binary b = l2.compile({{"T", t}}, "sm_90");
        REQUIRE_FALSE(b.cubin.empty());
        CHECK_FALSE(has_device_variables(b.cubin));
    }
    {
        INFO("argmax");
        const kjit::Binary b = kjit::jit::kernels::arg_reduction_kernel(true).compile({{"T", DType::float32}}, "sm_90");
        CHECK_FALSE(has_device_variables(b.cubin));
    }
    {
        INFO("segment scan");
        CHECK_FALSE(has_device_variables(kjit::detail::segments_module().compile("sm_90").cubin));
    }
    {
        INFO("small matmul");
        CHECK_FALSE(has_device_variables(kjit::jit::kernels::ops::small_matmul_module(DType::float32).compile("sm_90").cubin));
    }
}
