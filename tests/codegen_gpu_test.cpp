// Generated modules run on the GPU: load the cubin, launch the contiguous and strided variants by
// hand (the launcher comes later) and compare with a host reference on fresh random data.
#include "test_support.hpp"

#include <cmath>
#include <cstring>

#include "kjit/array.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/half.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"

using kjit::Array;
using kjit::DType;

namespace {

// The generated axpb_args for float: four pointers and n.
struct AxpbArgs {
    const float* x;
    const float* a;
    const float* b;
    float* y;
    long long n;
};

// kjit::Layout<4> as templates/elementwise.cuh declares it.
struct Layout4 {
    int ndim;
    long long shape[16];
    long long strides[4][16];
};

struct Module {
    CUmodule handle = nullptr;
    explicit Module(const std::vector<unsigned char>& cubin) {
        auto& d = kjit::detail::driver_on(0);
        KJIT_CU_CHECK(d.cuModuleLoadData(&handle, cubin.data()));
    }
    ~Module() { kjit::detail::driver().cuModuleUnload(handle); }
    CUfunction function(const std::string& name) const {
        CUfunction f = nullptr;
        KJIT_CU_CHECK(kjit::detail::driver().cuModuleGetFunction(&f, handle, name.c_str()));
        return f;
    }
};

std::vector<float> random_floats(std::size_t n) {
    std::vector<float> v(n);
    const auto bytes = kjit::test::random_elements(DType::float32, static_cast<std::int64_t>(n));
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
}

void launch(CUfunction f, void** params, unsigned blocks) {
    auto& d = kjit::detail::driver_on(0);
    KJIT_CU_CHECK(d.cuLaunchKernel(f, blocks, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
    KJIT_CU_CHECK(d.cuCtxSynchronize());
}

}  // namespace

TEST_CASE("a generated module's contiguous and strided variants compute a*x+b", "[gpu][codegen]") {
    KJIT_REQUIRE_GPU();
    const kjit::ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb");
    const kjit::Binary bin = axpb.compile({{"T", DType::float32}});
    REQUIRE_FALSE(bin.cubin.empty());
    const Module module(bin.cubin);

    const std::size_t n = 1000003;  // not a multiple of the vector width: the tail runs too
    const auto x = random_floats(n), a = random_floats(n), b = random_floats(n);
    const Array dx = Array::from_host(x.data(), DType::float32, {std::int64_t(n)}, kjit::Device::cuda(0));
    const Array da = Array::from_host(a.data(), DType::float32, {std::int64_t(n)}, kjit::Device::cuda(0));
    const Array db = Array::from_host(b.data(), DType::float32, {std::int64_t(n)}, kjit::Device::cuda(0));
    const std::vector<float> poison(n, std::nanf(""));
    for (const std::string& entry : {bin.entry_point("contiguous32"), bin.entry_point("contiguous64")}) {
        INFO(entry);
        const Array dy = Array::from_host(poison.data(), DType::float32, {std::int64_t(n)}, kjit::Device::cuda(0));
        AxpbArgs args{dx.data_as<float>(), da.data_as<float>(), db.data_as<float>(), dy.data_as<float>(), (long long)n};
        void* params[] = {&args};
        launch(module.function(entry), params, 264);
        std::vector<float> y(n);
        dy.copy_to_host(y.data());
        std::size_t wrong = 0;
        for (std::size_t k = 0; k < n; ++k) {
            const double ref = double(a[k]) * double(x[k]) + double(b[k]);
            if (!(std::fabs(y[k] - ref) <= 1e-5 * (std::fabs(ref) + 1))) ++wrong;
        }
        CHECK(wrong == 0);
    }

    // Strided: x transposed (a 1000 x 999 matrix read by columns), a broadcast along rows, b a scalar
    // row broadcast to every row (stride 0 on both axes but one).
    const std::int64_t rows = 999, cols = 1000;
    const Array xt = Array::from_host(x.data(), DType::float32, {cols, rows}, kjit::Device::cuda(0)).transpose();
    const Array arow = Array::from_host(a.data(), DType::float32, {cols}, kjit::Device::cuda(0));
    const Array bcol = Array::from_host(b.data(), DType::float32, {rows, 1}, kjit::Device::cuda(0));
    const std::vector<float> poison2(rows * cols, std::nanf(""));
    const Array dy = Array::from_host(poison2.data(), DType::float32, {rows, cols}, kjit::Device::cuda(0));
    for (const std::string& entry : {bin.entry_point("strided32"), bin.entry_point("strided64")}) {
        INFO(entry);
        Layout4 layout{};
        layout.ndim = 2;
        layout.shape[0] = rows;
        layout.shape[1] = cols;
        const long long strides[4][2] = {{xt.strides()[0], xt.strides()[1]}, {0, 1}, {1, 0}, {cols, 1}};
        for (int k = 0; k < 4; ++k) {
            layout.strides[k][0] = strides[k][0];
            layout.strides[k][1] = strides[k][1];
        }
        AxpbArgs args{xt.data_as<float>(), arow.data_as<float>(), bcol.data_as<float>(), dy.data_as<float>(),
                      rows * cols};
        void* params[] = {&args, &layout};
        launch(module.function(entry), params, 264);
        std::vector<float> y(static_cast<std::size_t>(rows * cols));
        dy.copy_to_host(y.data());
        std::size_t wrong = 0;
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < cols; ++c) {
                const double ref = double(a[c]) * double(x[c * rows + r]) + double(b[r]);
                if (!(std::fabs(y[r * cols + c] - ref) <= 1e-5 * (std::fabs(ref) + 1))) ++wrong;
            }
        CHECK(wrong == 0);
    }
}

TEST_CASE("float16, bfloat16 and complex modules load and compute", "[gpu][codegen]") {
    KJIT_REQUIRE_GPU();
    // y = x * x + 1 for 16-bit floats through the contiguous variant, checked against float math
    // rounded once; complex z * conj(z) must be |z|^2 with no imaginary part.
    for (DType t : {DType::float16, DType::bfloat16}) {
        INFO(t.name());
        const kjit::ElementwiseKernel k("T x", "T y", "y = x * x + 1", "sq");
        const kjit::Binary bin = k.compile({{"T", t}});
        const Module module(bin.cubin);
        const std::int64_t n = 4099;
        const auto x = kjit::test::random_elements(t, n);
        const Array dx = Array::from_host(x.data(), t, {n}, kjit::Device::cuda(0));
        const std::vector<unsigned char> poison(static_cast<std::size_t>(n) * 2, 0xff);  // NaN bits
        const Array dy = Array::from_host(poison.data(), t, {n}, kjit::Device::cuda(0));
        struct {
            const void* x;
            void* y;
            long long n;
        } args{dx.data(), dy.data(), n};
        void* params[] = {&args};
        launch(module.function(bin.entry_point("contiguous32")), params, 8);
        std::vector<std::uint16_t> xs(n), ys(n);
        std::memcpy(xs.data(), x.data(), x.size());
        dy.copy_to_host(ys.data());
        std::size_t wrong = 0;
        for (std::int64_t k2 = 0; k2 < n; ++k2) {
            const float xf = t == DType::float16 ? kjit::half::to_float(xs[k2]) : kjit::bfloat16::to_float(xs[k2]);
            const auto round16 = [&](float v) {
                return t == DType::float16 ? kjit::half::to_float(kjit::half::from_float(v))
                                           : kjit::bfloat16::to_float(kjit::bfloat16::from_float(v));
            };
            // Rounded after each operation, or once when the compiler fuses them into an FMA.
            const float separate = round16(round16(xf * xf) + 1.0f);
            const float fused = round16(static_cast<float>(double(xf) * double(xf) + 1.0));
            const float got = t == DType::float16 ? kjit::half::to_float(ys[k2]) : kjit::bfloat16::to_float(ys[k2]);
            if (got != separate && got != fused) ++wrong;
        }
        CHECK(wrong == 0);
    }
    {
        const kjit::ElementwiseKernel k("T z", "T y", "y = z * conj(z)", "norm2");
        const kjit::Binary bin = k.compile({{"T", DType::complex64}});
        const Module module(bin.cubin);
        const std::int64_t n = 3001;
        const auto z = kjit::test::random_elements(DType::complex64, n);
        const Array dz = Array::from_host(z.data(), DType::complex64, {n}, kjit::Device::cuda(0));
        const std::vector<float> poison(static_cast<std::size_t>(2 * n), std::nanf(""));
        const Array dy = Array::from_host(poison.data(), DType::complex64, {n}, kjit::Device::cuda(0));
        struct {
            const void* z;
            void* y;
            long long n;
        } args{dz.data(), dy.data(), n};
        void* params[] = {&args};
        launch(module.function(bin.entry_point("contiguous64")), params, 8);
        std::vector<float> zs(2 * n), ys(2 * n);
        std::memcpy(zs.data(), z.data(), z.size());
        dy.copy_to_host(ys.data());
        std::size_t wrong = 0;
        for (std::int64_t k2 = 0; k2 < n; ++k2) {
            const double re = zs[2 * k2], im = zs[2 * k2 + 1];
            const double ref = re * re + im * im;
            if (!(std::fabs(ys[2 * k2] - ref) <= 1e-6 * ref && std::fabs(ys[2 * k2 + 1]) <= 1e-6 * ref)) ++wrong;
        }
        CHECK(wrong == 0);
    }
}
