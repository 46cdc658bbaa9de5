// What a kernel's table of calls keeps: a plan (and its loader, note and programs) keeps the
// kernel's definition, never the kernel's own strings and table, or the two would keep each other
// alive and a kernel object that goes would leak all its plans. Checked by counting the owners of
// the kernel's strings after first calls down each path (generated; read through a plan note).
#include "test_support.hpp"

#include "fake_driver.hpp"
#include "jit/kernels/elementwise/calls.hpp"
#include "jit/kernels/reduction/calls.hpp"
#include "kjit/cache.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/reduction_kernel.hpp"
#include "runtime/detail/driver.hpp"

using kjit::Array;
using kjit::DType;

TEST_CASE("after its first calls a kernel's strings and table have no owner but the kernel", "[nvrtc][lifetime]") {
    const kjit::test::ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    kjit::detail::DriverApi api = kjit::test::make_fake_launching_driver();
    api.cuMemsetD8Async = [](CUdeviceptr, unsigned char, std::size_t, CUstream) { return CUDA_SUCCESS; };  // workspaces
    const kjit::detail::ScopedDriverOverride fake(api, 1);
    const Array x = Array::empty({1000}, DType::float32, kjit::Device::cuda(0));
    const Array y = Array::empty({1000}, DType::float32, kjit::Device::cuda(0));
    const Array total = Array::empty({}, DType::float32, kjit::Device::cuda(0));
    // Twice: the first process generates and notes the plans, the second reads the notes.
    for (int process = 0; process < 2; ++process) {
        INFO("process " << process);
        kjit::configure_cache(kjit::test::cache_in(work.path() / "cache"));
        const kjit::ElementwiseKernel axpb("T x", "T y", "y = 2 * x + 1", "lifetime_axpb");
        const kjit::ReductionKernel sumsq("T x", "T y", "x * x", "a + b", "y = a", "0", "lifetime_sumsq");
        axpb.launch({x, y});
        axpb.launch({x.slice(0, {0, 1000, 2}), y.slice(0, {0, 500})});  // a strided variant too
        sumsq.launch({x, total});
        CHECK(kjit::jit::ElementwiseKernelAccess::owners(axpb) == 1);
        CHECK(kjit::jit::ReductionKernelAccess::owners(sumsq) == 1);
        const kjit::ElementwiseKernel copy = axpb;  // copies share them, as they should
        CHECK(kjit::jit::ElementwiseKernelAccess::owners(axpb) == 2);
    }
}
