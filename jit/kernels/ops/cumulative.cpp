// NumPy's cumsum and cumprod as scans (kjit/scan_kernel.hpp).
#include <array>
#include <memory>
#include <mutex>
#include <string>

#include "kjit/error.hpp"
#include "kjit/reductions.hpp"
#include "kjit/scan_kernel.hpp"

namespace kjit {

namespace {

// The kernels of one operation, one per output dtype (made on first use): any input converted to
// NumPy's output dtype as loaded; float16 and bfloat16 accumulate in float32 (NumPy adds float16
// in float16: the wider running value is the more accurate answer).
class Cumulative {
public:
    // `what`: "cumsum"; the kernels are named "kjit_cumsum_<dtype>".
    Cumulative(const char* op, const char* identity, const char* what) : op_(op), identity_(identity), what_(what) {}

    const ScanKernel& kernel(DType out) {
        const std::size_t k = out.id();
        std::call_once(once_[k], [&] {
            KernelOptions o;
            if (out == DType::float16 || out == DType::bfloat16) o.reduce_type = "float32";
            kernels_[k] = std::make_unique<ScanKernel>("T x", std::string(out.name()) + " y", op_, identity_,
                                                       "kjit_" + std::string(what_) + "_" + std::string(out.name()), o);
        });
        return *kernels_[k];
    }

    Array operator()(const Array& x, const ScanOptions& options, const Array& out) {
        if (!x.valid()) throw Error("kjit::" + std::string(what_) + ": the input is invalid (default-constructed)");
        const DType t = sum_dtype(x.dtype());
        if (!out.valid()) return kernel(t)({x}, options)[0];
        if (!(out.dtype() == t))
            throw TypeError("kjit::" + std::string(what_) + ": out has dtype " + std::string(out.dtype().name()) + " but a " +
                            std::string(x.dtype().name()) + " input gives " + std::string(t.name()));
        kernel(t).launch({x, out}, options);
        return out;
    }

private:
    const char* op_;
    const char* identity_;
    const char* what_;
    std::array<std::once_flag, DType::count> once_;
    std::array<std::unique_ptr<ScanKernel>, DType::count> kernels_;
};

}  // namespace

Array cumsum(const Array& x, const ScanOptions& options, const Array& out) {
    static Cumulative k("a + b", "0", "cumsum");
    return k(x, options, out);
}

Array cumprod(const Array& x, const ScanOptions& options, const Array& out) {
    static Cumulative k("a * b", "1", "cumprod");
    return k(x, options, out);
}

}  // namespace kjit
