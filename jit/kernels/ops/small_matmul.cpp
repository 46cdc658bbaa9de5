// The small-product kernel of jit/kernels/ops/small_matmul_plan.hpp: templates/small_matmul.cuh compiled
// once per dtype (a RawModule of one kernel, compiled or found in the kernel cache the first time
// a product of that dtype is small enough, so a program that multiplies only float32 compiles one
// kernel), launched as a RawKernel.
#include "jit/kernels/ops/small_matmul.hpp"

#include <array>
#include <atomic>
#include <memory>
#include <string>

#include "jit/codegen/templates.hpp"
#include "kjit/error.hpp"
#include "kjit/raw_kernel.hpp"
#include "runtime/detail/log.hpp"

namespace kjit::jit::kernels::ops {
namespace {

struct Flavour {
    const char* suffix;  // of the module's name
    const char* type;    // the element type, as the template's KJIT_SMM_T
    const char* acc;     // the accumulator
    const char* prelude; // what the types need
};

// The dtypes matmul multiplies (jit/kernels/ops/matmul_plan.hpp), each with its accumulator: the
// types cuBLAS computes them in (float for float16 and bfloat16).
const Flavour* flavour_of(DType t) {
    static const Flavour f16{"f16", "__half", "float", "#include <cuda_fp16.h>\n"};
    static const Flavour bf16{"bf16", "__nv_bfloat16", "float", "#include <cuda_bf16.h>\n"};
    static const Flavour f32{"f32", "float", "float", ""};
    static const Flavour f64{"f64", "double", "double", ""};
    static const Flavour c64{"c64", "kjit::complex<float>", "kjit::complex<float>", nullptr};
    static const Flavour c128{"c128", "kjit::complex<double>", "kjit::complex<double>", nullptr};
    switch (t.id()) {
        case DType::float16: return &f16;
        case DType::bfloat16: return &bf16;
        case DType::float32: return &f32;
        case DType::float64: return &f64;
        case DType::complex64: return &c64;
        case DType::complex128: return &c128;
        default: return nullptr;
    }
}

RawModule module_of(const Flavour& f) {
    std::string source = f.prelude != nullptr ? f.prelude : std::string(codegen::template_text("complex.cuh")) + "\n";
    source += std::string("#define KJIT_SMM_T ") + f.type + "\n#define KJIT_SMM_ACC " + f.acc +
              "\n#define KJIT_SMM_NAME kjit_small_matmul\n";
    source += codegen::template_text("small_matmul.cuh");
    RawModuleOptions options;
    // No header beyond cuda_fp16/bf16: -minimal saves NVRTC a third of its time.
    options.nvrtc_options = {"-minimal"};
    options.name = std::string("kjit_small_matmul_") + f.suffix;
    return RawModule(std::move(source), std::move(options));
}

// One kernel per dtype (constructing one compiles nothing), `unavailable` once it could not be had.
struct Kernels {
    std::array<std::unique_ptr<RawKernel>, DType::count> kernel;
    std::array<std::atomic<bool>, DType::count> unavailable{};
    Kernels() {
        for (int id = 0; id < DType::count; ++id)
            if (const Flavour* f = flavour_of(DType(static_cast<DType::Id>(id))))
                kernel[static_cast<std::size_t>(id)] = std::make_unique<RawKernel>(module_of(*f).get_function("kjit_small_matmul"));
    }
};

Kernels& kernels() {
    // Never destroyed: a product may run in another static object's destructor.
    static Kernels* k = new Kernels();
    return *k;
}

}  // namespace

bool launch_small_matmul(const Array& a, const Array& b, const Array& c, const SmallMatmul& s, const Stream& stream) {
    Kernels& ks = kernels();
    const int id = a.dtype().id();
    RawKernel* kernel = ks.kernel[static_cast<std::size_t>(id)].get();
    if (kernel == nullptr || ks.unavailable[static_cast<std::size_t>(id)].load(std::memory_order_relaxed)) return false;
    constexpr unsigned kTile = 16;  // templates/small_matmul.cuh's KJIT_SMM_TILE
    const Dim3 grid(static_cast<unsigned>((s.n + kTile - 1) / kTile), static_cast<unsigned>((s.m + kTile - 1) / kTile),
                    static_cast<unsigned>(s.batch));
    LaunchConfig config;
    config.stream = stream;
    try {
        (*kernel)(grid, kTile * kTile,
                  {a, b, c, s.m, s.n, s.k, s.a_strides[0], s.a_strides[1], s.a_strides[2], s.b_strides[0], s.b_strides[1],
                   s.b_strides[2], s.c_strides[0], s.c_strides[1], s.c_strides[2]},
                  config);
    } catch (const NoDeviceError& e) {
        // Not in any kernel cache and no NVRTC to compile it (an application shipping a cache
        // built without it): cuBLAS does the products of this dtype from now on.
        ks.unavailable[static_cast<std::size_t>(id)].store(true, std::memory_order_relaxed);
        kjit::detail::log(kjit::detail::LogLevel::info, std::string("matmul: the small-product kernel for ") + std::string(a.dtype().name()) +
                                                " cannot be had (" + e.what() + "); cuBLAS multiplies small products");
        return false;
    }
    return true;
}

RawModule small_matmul_module(DType t) {
    const Flavour* f = flavour_of(t);
    if (f == nullptr) throw TypeError("matmul: no small-product kernel for " + std::string(t.name()));
    return module_of(*f);
}

}  // namespace kjit::jit::kernels::ops
