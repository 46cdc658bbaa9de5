// The GPU and the host back end compute the same thing (issue 9): the shared tables of cases
// (backend_cases.hpp: elementwise kernels and reductions) run on the GPU and is compared with the outputs the host back end wrote on
// the build machine, since the GPU machine has no LLVM. Make them there with
//   KJIT_HOST_REFERENCE_DIR=DIR build/tests/kjit_tests "[host-reference]"
// and run the [gpu] tests with KJIT_HOST_REFERENCE_DIR=DIR (a copy of that folder).
#include <cstdlib>
#include <filesystem>

#include "backend_cases.hpp"
#include "kjit/kjit.hpp"
#include "test_support.hpp"

using namespace kjit;
using namespace kjit::test;

TEST_CASE("GPU and host back ends agree on every case of the shared table", "[gpu]") {
    KJIT_REQUIRE_GPU();
    const char* dir = std::getenv("KJIT_HOST_REFERENCE_DIR");
    if (dir == nullptr || !std::filesystem::exists(std::string(dir) + "/" + backend_cases().front().name + ".out0.npy")) {
        WARN("SKIPPED: KJIT_HOST_REFERENCE_DIR does not name a folder of host back end outputs ("
             << (dir ? dir : "unset") << "); write one on a machine with LLVM: KJIT_HOST_REFERENCE_DIR=DIR kjit_tests \"[host-reference]\"");
        return;
    }
    for (const BackendCase& c : backend_cases()) {
        INFO("case " << c.name << ": " << c.op);
        std::vector<Array> arrays;
        for (std::size_t k = 0; k < c.inputs.size(); ++k)
            arrays.push_back(c.inputs[k].scalar ? Array() : load_npy(std::string(dir) + "/" + c.name + ".in" + std::to_string(k) + ".npy", Device::cuda(0)));
        const CaseCall call = case_arguments(c, arrays);
        const Outputs out = ElementwiseKernel(c.in, c.out, c.op, "case_" + c.name)(std::span<const KernelArg>(call.args));
        for (std::size_t o = 0; o < out.size(); ++o) {
            const Array want = load_npy(std::string(dir) + "/" + c.name + ".out" + std::to_string(o) + ".npy");
            REQUIRE(out[o].shape() == want.shape());
            CHECK(agreement_mismatches(c, out[o], want) == 0);
        }
    }
}

TEST_CASE("GPU and host back ends agree on every reduction case of the shared table", "[gpu]") {
    KJIT_REQUIRE_GPU();
    const char* dir = std::getenv("KJIT_HOST_REFERENCE_DIR");
    if (dir == nullptr || !std::filesystem::exists(std::string(dir) + "/red_" + reduction_cases().front().name + ".out0.npy")) {
        WARN("SKIPPED: KJIT_HOST_REFERENCE_DIR does not name a folder of host back end reduction outputs ("
             << (dir ? dir : "unset") << "); write one on a machine with LLVM: KJIT_HOST_REFERENCE_DIR=DIR kjit_tests \"[host-reference]\"");
        return;
    }
    for (const ReductionCase& c : reduction_cases()) {
        INFO("reduction case " << c.name);
        const std::string prefix = std::string(dir) + "/red_" + c.name;
        std::vector<Array> arrays;
        for (std::size_t k = 0; k < c.inputs.size(); ++k)
            arrays.push_back(c.inputs[k].scalar ? Array() : load_npy(prefix + ".in" + std::to_string(k) + ".npy", Device::cuda(0)));
        const CaseCall call = case_arguments(c, arrays);
        const Outputs out = run_reduction_case(c, std::span<const KernelArg>(call.args));
        for (std::size_t o = 0; o < out.size(); ++o) {
            const Array want = load_npy(prefix + ".out" + std::to_string(o) + ".npy");
            REQUIRE(out[o].shape() == want.shape());
            CHECK(out[o].dtype() == want.dtype());
            CHECK(reduction_agreement_mismatches(c, call.args, out[o], want) == 0);
        }
    }
}
