// kjit::matmul: the plan (jit/kernels/ops/matmul_plan.hpp) carried out with one strided batched
// cuBLAS GEMM. Operands cuBLAS cannot take as they are, and outputs it cannot write, go through a
// copy made by kjit's copy kernel (jit/kernels/elementwise/copy.hpp).
#include "kjit/matmul.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include <cuComplex.h>

#include "jit/kernels/elementwise/copy.hpp"
#include "jit/kernels/ops/matmul_plan.hpp"
#include "jit/kernels/ops/small_matmul.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/call_layout.hpp"
#include "runtime/detail/capture.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/cublas.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/log.hpp"

namespace kjit {
namespace {

namespace elementwise = jit::kernels::elementwise;
namespace ops = jit::kernels::ops;

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;  // cuBLAS's recommendation for Hopper

// cuBLAS handles of this thread, one per device, destroyed when the thread ends.
class ThreadHandles {
public:
    ~ThreadHandles() {
        for (auto& [device, h] : handles_) {
            try {
                if (const detail::CublasApi* api = detail::try_cublas()) {
                    detail::driver_on(device);
                    api->cublasDestroy_v2(h);
                }
            } catch (const std::exception& e) {
                detail::log(detail::LogLevel::warn, std::string("destroying a cuBLAS handle failed: ") + e.what());
            }
        }
    }
    // The handle of `device`, bound to `s` with this thread's workspace for (device, s). Binding
    // costs two cuBLAS calls (cublasSetStream puts back the default workspace, so ours is set
    // after it), made only when the stream changes.
    cublasHandle_t get(const detail::CublasApi& api, int device, const Stream& s) {
        auto it = handles_.find(device);
        if (it == handles_.end()) {
            detail::refuse_kept_allocation_under_capture(detail::driver_on(device), s.handle(),
                                                         "kjit::matmul's first call on this thread (its cuBLAS handle)");
            cublasHandle_t h = nullptr;
            KJIT_CUBLAS_CHECK(api.cublasCreate_v2(&h));
            it = handles_.emplace(device, h).first;
            bound_.erase(device);
        }
        void* ws = workspace(device, s);
        auto b = bound_.find(device);
        if (b == bound_.end() || b->second != s.handle()) {
            KJIT_CUBLAS_CHECK(api.cublasSetStream_v2(it->second, s.handle()));
            KJIT_CUBLAS_CHECK(api.cublasSetWorkspace_v2(it->second, ws, kWorkspaceBytes));
            bound_[device] = s.handle();
        }
        return it->second;
    }
    // A workspace per device and stream, so that work queued on two streams never shares one.
    void* workspace(int device, const Stream& s) {
        std::shared_ptr<Buffer>& w = workspaces_[{device, s.handle()}];
        if (!w) {
            detail::refuse_kept_allocation_under_capture(detail::driver_on(device), s.handle(),
                                                         "kjit::matmul's first call on this stream (cuBLAS's workspace)");
            w = Buffer::allocate_device(kWorkspaceBytes, s);
        }
        w->record_stream(s);
        detail::note_scratch_used(*w);
        return w->data();
    }

private:
    std::map<int, cublasHandle_t> handles_;
    std::map<int, CUstream> bound_;  // the stream each device's handle is bound to
    std::map<std::pair<int, CUstream>, std::shared_ptr<Buffer>> workspaces_;
};

struct GemmTypes {
    cudaDataType data;
    cublasComputeType_t compute;
    unsigned char one[16];
    unsigned char zero[16];
};

GemmTypes gemm_types(DType t, bool tf32) {
    GemmTypes g{};
    auto set = [&](auto one, auto zero) {
        std::memcpy(g.one, &one, sizeof one);
        std::memcpy(g.zero, &zero, sizeof zero);
    };
    switch (t.id()) {
        case DType::float16:
            g.data = CUDA_R_16F;
            g.compute = CUBLAS_COMPUTE_32F;  // half inputs, float accumulation and scalars
            set(1.0f, 0.0f);
            break;
        case DType::bfloat16:
            g.data = CUDA_R_16BF;
            g.compute = CUBLAS_COMPUTE_32F;
            set(1.0f, 0.0f);
            break;
        case DType::float32:
            g.data = CUDA_R_32F;
            g.compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
            set(1.0f, 0.0f);
            break;
        case DType::float64:
            g.data = CUDA_R_64F;
            g.compute = CUBLAS_COMPUTE_64F;
            set(1.0, 0.0);
            break;
        case DType::complex64:
            g.data = CUDA_C_32F;
            g.compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
            set(make_cuComplex(1, 0), make_cuComplex(0, 0));
            break;
        case DType::complex128:
            g.data = CUDA_C_64F;
            g.compute = CUBLAS_COMPUTE_64F;
            set(make_cuDoubleComplex(1, 0), make_cuDoubleComplex(0, 0));
            break;
        default: throw TypeError("matmul: cuBLAS does not multiply " + std::string(t.name()));
    }
    return g;
}

// Read once: getenv walks the environment, which a 64x64 product's host time notices.
bool tf32_from_environment() {
    static const bool allowed = [] {
        const char* e = std::getenv("KJIT_ALLOW_TF32");
        return e != nullptr && std::string(e) == "1";
    }();
    return allowed;
}

ops::MatmulOperand operand_of(const Array& a) { return {a.dtype(), a.shape(), a.strides()}; }

// Whether the elements of x and y share any byte.
bool overlaps(const Array& x, const Array& y) {
    char *xl, *xh, *yl, *yh;
    detail::byte_range({static_cast<char*>(x.data()), static_cast<int>(x.itemsize()), x.ndim(), x.shape().data(), x.strides().data()}, xl, xh);
    detail::byte_range({static_cast<char*>(y.data()), static_cast<int>(y.itemsize()), y.ndim(), y.shape().data(), y.strides().data()}, yl, yh);
    return xl < yh && yl < xh;
}

// The product in kjit's small-product kernel (jit/kernels/ops/small_matmul_plan.hpp) when it is small
// enough, has at most one batch dimension, and `result` can be written as it is; false (nothing
// launched) otherwise. Operands of any strides go as they are: the kernel reads through strides.
// Allocates nothing: with the output given, this is a warm small product's whole host path.
bool small_product(const Array& A, const Array& B, const Array& result, const Stream& stream) {
    ops::SmallMatmul s;
    if (!ops::describe_small_matmul(A, B, result, s)) return false;
    if (!ops::use_small_matmul(s.m, s.n, s.k, s.batch) && !ops::cublas_crashes_on(A.dtype(), s.m, s.n, s.k, s.batch))
        return false;
    if (overlaps(result, A) || overlaps(result, B)) return false;
    return ops::launch_small_matmul(A, B, result, s, stream);  // the launch records the stream on the buffers
}

Stream stream_of(const MatmulOptions& options, int device) {
    return (options.stream ? *options.stream : Stream::current()).for_device(Device::cuda(device));
}

int device_of(const Array& a, const char* what) {
    if (!a.valid()) throw Error(std::string("matmul: ") + what + " is an empty kjit::Array");
    if (a.is_host())
        throw Error(std::string("matmul: ") + what + " is in host memory: copy it to the GPU first (array.to(kjit::Device::cuda(0)))");
    return a.device().ordinal();
}

}  // namespace

Array matmul(const Array& a, const Array& b, const Array& out, const MatmulOptions& options) {
    // A small product of one dtype into a given output, on one device: straight to the kernel.
    // Whatever this does not take goes on to the checks (and their errors) and the general path.
    if (out.valid() && a.valid() && b.valid() && a.dtype() == b.dtype() && out.dtype() == a.dtype() && !a.is_host() &&
        !b.is_host() && !out.is_host()) {
        const int d = a.device().ordinal();
        if (b.device().ordinal() == d && out.device().ordinal() == d && small_product(a, b, out, stream_of(options, d)))
            return out;
    }
    const int device = device_of(a, "a");
    if (device_of(b, "b") != device)
        throw Error("matmul: a is on cuda:" + std::to_string(device) + " but b is on " + b.device().to_string());
    const DType r = ops::matmul_result_dtype(a.dtype(), b.dtype());
    const Shape shape = ops::matmul_result_shape(a.shape(), b.shape());
    if (out.valid()) {
        if (device_of(out, "out") != device) throw Error("matmul: out is on " + out.device().to_string() + ", not cuda:" + std::to_string(device));
        if (out.shape() != shape)
            throw ShapeError("matmul: out has shape " + shape_to_string(out.shape()) + " but a " + shape_to_string(a.shape()) +
                             " @ b " + shape_to_string(b.shape()) + " is " + shape_to_string(shape));
        if (!(out.dtype() == r))
            throw TypeError("matmul: out is " + std::string(out.dtype().name()) + " but a @ b is " + std::string(r.name()));
    }
    const Stream stream = stream_of(options, device);
    const detail::CublasApi& api = detail::cublas();
    const bool tf32 = options.allow_tf32.value_or(tf32_from_environment());

    // Operands of the result's dtype, in layouts cuBLAS takes.
    Array A = a.dtype() == r ? a : elementwise::pack(a, r, stream);
    Array B = b.dtype() == r ? b : elementwise::pack(b, r, stream);
    Array result = out.valid() ? out : Array::empty(shape, r, Device::cuda(device), stream);
    if (result.size() == 0) return result;
    if (small_product(A, B, result, stream)) return result;
    ops::MatmulViews views = ops::matmul_views(operand_of(A), operand_of(B));
    auto make_usable = [&](Array& arr, ops::MatmulOperand& view) {
        if (ops::gemm_layout_problem(view).empty()) return;
        const Array broadcast = Array::view_of(arr.buffer(), r, view.shape, view.strides, arr.offset());
        arr = elementwise::pack(broadcast, r, stream);  // C order, batches materialised
        view = operand_of(arr);
    };
    make_usable(A, views.a);
    make_usable(B, views.b);

    // The output seen with the promoted axes kept (their strides do not matter: extent 1).
    const std::size_t nd = views.out_shape.size();
    Array target;
    bool through_temporary = false;
    try {
        target = result.reshape(views.out_shape);  // a view when it can be one
    } catch (const ShapeError&) {
        through_temporary = true;
    }
    ops::MatmulOperand c_view = through_temporary ? ops::MatmulOperand{} : operand_of(target);
    std::int64_t batch = 1;
    for (std::size_t d = 0; d + 2 < nd; ++d) batch *= views.out_shape[d];
    if (!through_temporary) through_temporary = !ops::gemm_layout_problem(c_view).empty();
    // An output sharing memory with an operand would be read while cuBLAS writes it.
    if (!through_temporary && (overlaps(result, A) || overlaps(result, B))) through_temporary = true;
    if (!through_temporary && batch > 1) {
        for (std::size_t d = 0; d + 2 < nd; ++d)
            if (views.out_shape[d] > 1 && c_view.strides[d] == 0) through_temporary = true;  // batches would collide
    }
    if (through_temporary) {
        target = Array::empty(views.out_shape, r, Device::cuda(device), stream);
        c_view = operand_of(target);
    }

    const std::int64_t k = views.a.shape[nd - 1];
    detail::Driver& drv = detail::driver_on(device);
    if (k == 0) {
        // A sum of nothing: zeros (the temporary when the output is not contiguous).
        if (!through_temporary && !target.is_c_contiguous()) {
            target = Array::empty(views.out_shape, r, Device::cuda(device), stream);
            through_temporary = true;
        }
        KJIT_CU_CHECK(drv.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(target.data()), 0, target.nbytes(), stream.handle()));
    } else {
        const ops::GemmPlan p = ops::plan_gemm(views.a, views.b, c_view);
        const Array& first = p.swapped ? B : A;
        const Array& second = p.swapped ? A : B;
        const GemmTypes g = gemm_types(r, tf32);
        thread_local ThreadHandles handles;
        const cublasHandle_t h = handles.get(api, device, stream);
        auto op = [](bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; };
        KJIT_CUBLAS_CHECK(api.cublasGemmStridedBatchedEx_64(
            h, op(p.first.transpose), op(p.second.transpose), p.m, p.n, p.k, g.one, first.data(), g.data, p.first.ld,
            p.first.batch_stride, second.data(), g.data, p.second.ld, p.second.batch_stride, g.zero, target.data(), g.data,
            p.c.ld, p.c.batch_stride, p.batch, g.compute, CUBLAS_GEMM_DEFAULT));
    }
    A.record_stream(stream);
    B.record_stream(stream);
    target.record_stream(stream);
    if (through_temporary) elementwise::copy_into(target.reshape(result.shape()), result, stream);
    return result;
}

}  // namespace kjit
