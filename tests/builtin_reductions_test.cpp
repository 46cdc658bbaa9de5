// kjit::sum, prod, min, max, mean: the kernels behind them check and compile for every dtype they
// take (here, with NVRTC, no GPU needed); on the GPU they match NumPy's semantics against a host
// reference: result dtypes, NaN propagation, empty reductions.
#include "test_support.hpp"

#include "jit/kernels/reduction/calls.hpp"
#include "gpu_data.hpp"

#include <cmath>
#include <cstring>

#include "jit/kernels/ops/arg_reduction.hpp"
#include "jit/kernels/ops/builtin_reductions.hpp"
#include "jit/kernels/precompile.hpp"
#include "kjit/error.hpp"
#include "kjit/reductions.hpp"

using kjit::Array;
using kjit::DType;
using kjit::ReduceOptions;
using kjit::Shape;
using Catch::Matchers::Contains;

TEST_CASE("the built-in reductions compile for every dtype", "[reduction][nvrtc]") {
    const std::vector<std::string> ops{"sum", "prod", "min", "max", "mean"};
    std::vector<std::pair<std::string, DType>> work;
    for (const std::string& op : ops)
        for (const DType t : kjit::test::all_dtypes()) work.emplace_back(op, t);
    const std::vector<std::string> errors = kjit::test::run_on_all_cores(work.size(), [&](std::size_t k) -> std::string {
        try {
            const kjit::Binary b = kjit::jit::kernels::builtin_reduction(work[k].first, work[k].second).compile({}, "sm_90");
            return b.cubin.empty() ? "no cubin" : "";
        } catch (const std::exception& e) {
            return e.what();
        }
    });
    for (std::size_t k = 0; k < work.size(); ++k) {
        INFO(work[k].first << " of " << work[k].second.name());
        CHECK(errors[k] == "");
    }
    CHECK(kjit::sum_dtype(DType::int8) == DType::int64);
    CHECK(kjit::sum_dtype(DType::uint16) == DType::uint64);
    CHECK(kjit::sum_dtype(DType::bool_) == DType::int64);
    CHECK(kjit::sum_dtype(DType::float16) == DType::float16);
    CHECK(kjit::mean_dtype(DType::int32) == DType::float64);
    CHECK_THROWS_WITH(kjit::jit::kernels::builtin_reduction("median", DType::float32), Contains("no built-in reduction 'median'"));
}

namespace {

std::complex<double> at(const std::vector<unsigned char>& bytes, DType t, std::size_t k) {
    return kjit::test::element_value(bytes, t, k);
}

// NumPy's order for min/max of complex numbers: real part, then imaginary part.
bool less(std::complex<double> a, std::complex<double> b) {
    return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
}

// Row r of a rows x cols C-ordered array reduced by `f` (a fold from the first element).
template <class F>
std::complex<double> fold_row(const std::vector<unsigned char>& bytes, DType t, std::size_t r, std::size_t cols, F f) {
    std::complex<double> v = at(bytes, t, r * cols);
    for (std::size_t c = 1; c < cols; ++c) v = f(v, at(bytes, t, r * cols + c));
    return v;
}

}  // namespace

TEST_CASE("sum, prod, min, max and mean follow NumPy for every dtype", "[gpu][reduction]") {
    KJIT_REQUIRE_GPU();
    INFO("seed " << kjit::test::seed());
    // Compiled in parallel first (75 kernels; each call below then finds its kernel cached).
    std::vector<std::pair<std::string, DType>> kernels;
    for (const char* op : {"sum", "prod", "min", "max", "mean"})
        for (const DType t : kjit::test::all_dtypes()) kernels.emplace_back(op, t);
    const std::vector<std::string> failed = kjit::test::run_on_all_cores(kernels.size(), [&](std::size_t k) -> std::string {
        try {
            (void)kjit::jit::kernels::builtin_reduction(kernels[k].first, kernels[k].second).compile({});
            return "";
        } catch (const std::exception& e) {
            return e.what();
        }
    });
    for (const std::string& f : failed) CHECK(f == "");
    const std::size_t rows = 40, cols = 777;
    ReduceOptions per_row;
    per_row.axis = std::vector<int>{1};
    for (const DType t : kjit::test::all_dtypes()) {
        INFO(t.name());
        kjit::test::DeviceData x = kjit::test::random_device(t, {static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)});
        const bool nan_able = t.is_floating() || t.is_complex();
        if (nan_able) {
            // A NaN in row 3: min and max of that row are NaN, the other rows are not.
            const std::vector<unsigned char> nan_bytes(t.itemsize(), 0xff);
            std::memcpy(x.host.data() + (3 * cols + 100) * t.itemsize(), nan_bytes.data(), t.itemsize());
            x.device = Array::from_host(x.host.data(), t, x.device.shape(), kjit::Device::cuda(0));
        }
        const auto is_nan = [](std::complex<double> v) { return std::isnan(v.real()) || std::isnan(v.imag()); };
        const auto lo = [&](std::complex<double> a, std::complex<double> b) {
            return is_nan(a) ? a : is_nan(b) ? b : less(b, a) ? b : a;
        };
        const auto hi = [&](std::complex<double> a, std::complex<double> b) {
            return is_nan(a) ? a : is_nan(b) ? b : less(a, b) ? b : a;
        };
        const Array mn = kjit::min(x.device, per_row), mx = kjit::max(x.device, per_row);
        CHECK(mn.dtype() == t);
        CHECK(mn.shape() == Shape{static_cast<std::int64_t>(rows)});
        CHECK(kjit::test::mismatches(mn, [&](std::size_t r) { return fold_row(x.host, t, r, cols, lo); }, 0) == 0);
        CHECK(kjit::test::mismatches(mx, [&](std::size_t r) { return fold_row(x.host, t, r, cols, hi); }, 0) == 0);
        if (nan_able) {
            const std::vector<unsigned char> got = kjit::test::to_host(mn);
            CHECK(is_nan(at(got, t, 3)));
            CHECK_FALSE(is_nan(at(got, t, 4)));
        }
        // The whole array, into a given output.
        const Array all_max = kjit::test::poisoned(t, {});
        kjit::max(x.device, {}, all_max);
        CHECK(kjit::test::mismatches(all_max, [&](std::size_t) {
                  std::complex<double> v = at(x.host, t, 0);
                  for (std::size_t k = 1; k < rows * cols; ++k) v = hi(v, at(x.host, t, k));
                  return v;
              }, 0) == 0);

        // sum, mean (rows without the NaN, so that the tolerance means something), prod of six.
        const Array clean = x.device.slice(0, {4, {}, 1});
        const Array s = kjit::sum(clean, per_row), m = kjit::mean(clean, per_row);
        CHECK(s.dtype() == kjit::sum_dtype(t));
        CHECK(m.dtype() == kjit::mean_dtype(t));
        const double tol = t == DType::float16 ? 2e-3 : t == DType::bfloat16 ? 1e-2 : (t == DType::float32 || t == DType::complex64) ? 1e-5 : 1e-12;
        if (t.is_floating() || t.is_complex()) {
            // Against the magnitudes' sum: random signs make sums far smaller than their terms.
            for (std::size_t r = 0; r < rows - 4; ++r) {
                std::complex<double> want = 0;
                double scale = 0;
                for (std::size_t c = 0; c < cols; ++c) {
                    want += at(x.host, t, (r + 4) * cols + c);
                    scale += std::abs(at(x.host, t, (r + 4) * cols + c));
                }
                const std::vector<unsigned char> gs = kjit::test::to_host(s), gm = kjit::test::to_host(m);
                CHECK(std::abs(at(gs, s.dtype(), r) - want) <= tol * scale);
                CHECK(std::abs(at(gm, m.dtype(), r) - want / static_cast<double>(cols)) <= tol * scale / static_cast<double>(cols));
            }
        } else {
            // Exact: 64-bit wrapping sums (bool counts its true values); the mean in float64.
            std::vector<std::int64_t> want(rows - 4, 0);
            for (std::size_t r = 0; r < rows - 4; ++r)
                for (std::size_t c = 0; c < cols; ++c) {
                    std::int64_t v = 0;
                    const std::size_t k = (r + 4) * cols + c;
                    if (t.is_signed()) {
                        const int bits = static_cast<int>(8 * t.itemsize());
                        std::uint64_t u = 0;
                        std::memcpy(&u, x.host.data() + k * t.itemsize(), t.itemsize());
                        v = bits == 64 ? static_cast<std::int64_t>(u) : static_cast<std::int64_t>(u << (64 - bits)) >> (64 - bits);
                    } else {
                        std::uint64_t u = 0;
                        std::memcpy(&u, x.host.data() + k * t.itemsize(), t.itemsize());
                        v = static_cast<std::int64_t>(u);
                    }
                    want[r] = static_cast<std::int64_t>(static_cast<std::uint64_t>(want[r]) + static_cast<std::uint64_t>(v));
                }
            const std::vector<unsigned char> gs = kjit::test::to_host(s);
            for (std::size_t r = 0; r < rows - 4; ++r) {
                std::int64_t g = 0;
                std::memcpy(&g, gs.data() + r * 8, 8);
                CHECK(g == want[r]);
            }
            if (t.itemsize() < 8)
                CHECK(kjit::test::mismatches(m, [&](std::size_t r) { return static_cast<double>(want[r]) / static_cast<double>(cols); },
                                             1e-12) == 0);
        }
        const Array six = x.device.slice(0, {4, {}, 1}).slice(1, {0, 6, 1});
        const Array p = kjit::prod(six, per_row);
        CHECK(p.dtype() == kjit::sum_dtype(t));
        const std::vector<unsigned char> six_host = kjit::test::host_bytes_c_order(
            Array::from_host(x.host.data(), t, x.device.shape(), kjit::Device::cpu()).slice(0, {4, {}, 1}).slice(1, {0, 6, 1}));
        if (t.is_floating() || t.is_complex()) {
            // float16 holds at most 65504: larger products are infinities, as NumPy's are.
            CHECK(kjit::test::mismatches(p, [&](std::size_t r) {
                      const std::complex<double> w =
                          fold_row(six_host, t, r, 6, [](std::complex<double> a, std::complex<double> b) { return a * b; });
                      if (t == DType::float16 && std::abs(w.real()) > 65520) return std::complex<double>(std::copysign(INFINITY, w.real()));
                      return w;
                  }, tol * 8) == 0);
        } else if (!t.is_bool()) {
            const std::vector<unsigned char> gp = kjit::test::to_host(p);
            for (std::size_t r = 0; r < rows - 4; ++r) {
                std::uint64_t want = 1;
                for (std::size_t c = 0; c < 6; ++c) {
                    std::uint64_t u = 0;
                    std::memcpy(&u, six_host.data() + (r * 6 + c) * t.itemsize(), t.itemsize());
                    const int bits = static_cast<int>(8 * t.itemsize());
                    if (t.is_signed() && bits < 64 && ((u >> (bits - 1)) & 1u)) u |= ~std::uint64_t{0} << bits;
                    want *= u;
                }
                std::uint64_t g = 0;
                std::memcpy(&g, gp.data() + r * 8, 8);
                CHECK(g == want);
            }
        }
    }
}

TEST_CASE("empty built-in reductions: sum 0, prod 1, mean NaN, min and max an error", "[gpu][reduction]") {
    KJIT_REQUIRE_GPU();
    const Array empty = Array::empty({4, 0}, DType::float32, kjit::Device::cuda(0));
    ReduceOptions per_row;
    per_row.axis = std::vector<int>{1};
    CHECK(kjit::test::mismatches(kjit::sum(empty, per_row), [](std::size_t) { return 0.0; }, 0) == 0);
    CHECK(kjit::test::mismatches(kjit::prod(empty, per_row), [](std::size_t) { return 1.0; }, 0) == 0);
    CHECK(kjit::test::mismatches(kjit::mean(empty, per_row), [](std::size_t) { return std::nan(""); }, 0) == 0);
    CHECK_THROWS_WITH(kjit::min(empty, per_row), Contains("zero elements") && Contains("(4, 0)"));
    CHECK_THROWS_WITH(kjit::max(empty), Contains("no identity"));
    // Reducing the other axis gives an empty result, which is fine.
    ReduceOptions per_col;
    per_col.axis = std::vector<int>{0};
    CHECK(kjit::max(empty, per_col).shape() == Shape{0});
}

TEST_CASE("argmin and argmax compile for every real dtype and refuse complex", "[reduction][nvrtc]") {
    std::vector<std::pair<bool, DType>> work;
    for (const DType t : kjit::test::all_dtypes())
        if (!t.is_complex()) work.emplace_back(true, t), work.emplace_back(false, t);
    const std::vector<std::string> errors = kjit::test::run_on_all_cores(work.size(), [&](std::size_t k) -> std::string {
        try {
            const kjit::jit::kernels::ReductionBinary b =
                kjit::jit::kernels::compile_reduction(kjit::jit::kernels::arg_reduction_kernel(work[k].first), {{"T", work[k].second}}, {}, "sm_90");
            return b.binary.cubin.empty() ? "no cubin" : b.reduce_itemsize == 16 ? "" : "reduce_itemsize";
        } catch (const std::exception& e) {
            return e.what();
        }
    });
    for (std::size_t k = 0; k < work.size(); ++k) {
        INFO((work[k].first ? "argmax of " : "argmin of ") << work[k].second.name());
        CHECK(errors[k] == "");
    }
    CHECK_THROWS_WITH(kjit::jit::kernels::arg_reduction_kernel(true).compile({{"T", DType::complex64}}, "sm_90"),
                      Contains("argmax of complex64"));
    // Manifest entries of "kind": "builtin" precompile by name.
    const nlohmann::json manifest = {
        {"kernels",
         {{{"kind", "builtin"}, {"name", "kjit_argmax"}, {"types", {{{"T", "float32"}}, {{"T", "int16"}}}}},
          {{"kind", "builtin"}, {"name", "kjit_median"}, {"types", {{{"T", "float32"}}}}}}}};
    const kjit::jit::kernels::PrecompileResult r = kjit::jit::kernels::precompile(manifest, {"sm_90"}, 2);
    CHECK(r.jobs == 2 * kjit::jit::kernels::kReductionPrograms);  // a module per strategy and index width
    REQUIRE(r.failures.size() == 1);
    CHECK_THAT(r.failures[0], Contains("no built-in kernel 'kjit_median'"));
}

TEST_CASE("argmin and argmax find the first extreme (or first NaN) along an axis or the flattened array", "[gpu][reduction]") {
    KJIT_REQUIRE_GPU();
    INFO("seed " << kjit::test::seed());
    // Compiled in parallel first (26 kernels; the calls below then find them cached).
    std::vector<std::pair<bool, DType>> kernels;
    for (const DType t : kjit::test::all_dtypes())
        if (!t.is_complex()) kernels.emplace_back(true, t), kernels.emplace_back(false, t);
    for (const std::string& f : kjit::test::run_on_all_cores(kernels.size(), [&](std::size_t k) -> std::string {
             try {
                 (void)kjit::jit::kernels::arg_reduction_kernel(kernels[k].first).compile({{"T", kernels[k].second}});
                 return "";
             } catch (const std::exception& e) {
                 return e.what();
             }
         }))
        CHECK(f == "");
    const std::int64_t rows = 40, cols = 777;
    for (const DType t : kjit::test::all_dtypes()) {
        if (t.is_complex()) continue;
        INFO(t.name());
        kjit::test::DeviceData x = kjit::test::random_device(t, {rows, cols});
        if (t.is_floating()) {
            // NaNs in row 3 (two of them: the first wins) and a tie of row 5's maximum.
            const std::vector<unsigned char> nan(t.itemsize(), 0xff);
            std::memcpy(x.host.data() + (3 * cols + 500) * t.itemsize(), nan.data(), t.itemsize());
            std::memcpy(x.host.data() + (3 * cols + 200) * t.itemsize(), nan.data(), t.itemsize());
            x.device = Array::from_host(x.host.data(), t, x.device.shape(), kjit::Device::cuda(0));
        }
        const auto value = [&](std::size_t k) { return at(x.host, t, k).real(); };
        const auto first = [&](bool max, std::size_t begin, std::size_t count, std::size_t step) {
            std::size_t best = 0;
            for (std::size_t j = 0; j < count; ++j) {
                const double v = value(begin + j * step), b = value(begin + best * step);
                if (std::isnan(b)) break;
                if (std::isnan(v) || (max ? v > b : v < b)) best = j;
            }
            return static_cast<double>(best);
        };
        for (const bool max : {true, false}) {
            INFO((max ? "argmax" : "argmin"));
            const auto f = max ? kjit::argmax : kjit::argmin;
            ReduceOptions along_rows;
            along_rows.axis = std::vector<int>{1};
            const Array r = f(x.device, along_rows, Array());
            CHECK(r.dtype() == DType::int64);
            CHECK(kjit::test::mismatches(r, [&](std::size_t i) { return first(max, i * cols, cols, 1); }, 0) == 0);
            ReduceOptions along_cols;
            along_cols.axis = std::vector<int>{0};
            along_cols.keepdims = true;
            const Array c = f(x.device, along_cols, Array());
            CHECK(c.shape() == Shape{1, cols});
            CHECK(kjit::test::mismatches(c, [&](std::size_t j) { return first(max, j, rows, cols); }, 0) == 0);
            const Array all = kjit::test::poisoned(DType::int64, {});
            f(x.device, {}, all);
            CHECK(kjit::test::mismatches(all, [&](std::size_t) { return first(max, 0, rows * cols, 1); }, 0) == 0);
        }
    }
    // A long array: the flattened index of the maximum, with ties resolved to the first.
    const std::int64_t n = (1 << 24) + 5;
    std::vector<float> big(static_cast<std::size_t>(n), 1.0f);
    big[9'000'001] = 3.0f;
    big[12'345'678] = 3.0f;
    big[77] = -2.0f;
    const Array b = Array::from_host(big.data(), DType::float32, {n}, kjit::Device::cuda(0));
    CHECK(kjit::test::mismatches(kjit::argmax(b), [](std::size_t) { return 9'000'001.0; }, 0) == 0);
    CHECK(kjit::test::mismatches(kjit::argmin(b), [](std::size_t) { return 77.0; }, 0) == 0);
    ReduceOptions two;
    two.axis = std::vector<int>{0, 1};
    CHECK_THROWS_WITH(kjit::argmax(kjit::test::random_device(DType::float32, {3, 3}).device, two), Contains("one axis or none"));
    CHECK_THROWS_WITH(kjit::argmin(Array::empty({0}, DType::float32, kjit::Device::cuda(0))), Contains("zero elements"));
}
