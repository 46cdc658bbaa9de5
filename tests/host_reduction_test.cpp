// Reductions on host arrays (jit/host/host_reduction.hpp) beyond the shared table: the same bits
// whichever thread runs which chunk, segmented reductions and reduce-by-key, outputs given and
// overlapping, the errors (mixed locations, no identity, raw CUDA).
#include <cmath>
#include <cstring>

#include "backend_cases.hpp"
#include "jit/host/host_pool.hpp"
#include "kjit/kjit.hpp"
#include "test_support.hpp"

using namespace kjit;
using namespace kjit::test;
using Catch::Contains;

namespace {

std::vector<float> noise(std::size_t n, unsigned seed) {
    std::vector<float> v(n);
    std::uint32_t s = seed;
    for (float& x : v) {
        s = s * 1664525u + 1013904223u;
        x = static_cast<float>(static_cast<std::int32_t>(s)) * 1e-7f;  // cancelling signs: order-sensitive sums
    }
    return v;
}

}  // namespace

TEST_CASE("host reductions: the same bits whichever thread runs which chunk, and in any order", "[host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    const std::size_t n = (std::size_t{1} << 20) + 12345;
    const Array x = host_array(noise(n, 7), DType::float32);
    const Array m = x.slice(0, {0, 1000 * 1000}).reshape({1000, 1000});
    const ReductionKernel l2("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2_bits");
    const Array offsets = host_array<std::int64_t>({0, 3, 3, 40000, 400000, static_cast<std::int64_t>(n)}, DType::int64);
    const ReductionKernel sum_kernel("T x", "T y", "x", "a + b", "y = a", "0", "segment_sum_bits");
    auto results = [&] {
        std::vector<std::vector<unsigned char>> r;
        r.push_back(host_bytes_c_order(sum(x)));
        r.push_back(host_bytes_c_order(mean(m, {.axis = std::vector<int>{1}})));
        r.push_back(host_bytes_c_order(sum(m, {.axis = std::vector<int>{0}})));
        r.push_back(host_bytes_c_order(l2({x})[0]));
        r.push_back(host_bytes_c_order(argmax(x)));
        r.push_back(host_bytes_c_order(segmented_reduce(sum_kernel, {x}, offsets)[0]));
        return r;
    };
    INFO("pool of " << jit::host::host_threads() << " threads");
    const auto pooled = results();
    std::vector<std::vector<unsigned char>> forward, backward;
    {
        jit::host::ScopedSerialChunks serial(false);
        forward = results();
    }
    {
        jit::host::ScopedSerialChunks serial(true);
        backward = results();
    }
    for (std::size_t k = 0; k < pooled.size(); ++k) {
        INFO("result " << k);
        CHECK(pooled[k] == forward[k]);
        CHECK(pooled[k] == backward[k]);
    }
    CHECK(pooled == results());  // and on every run
}

TEST_CASE("host reductions: outer axes folded in blocks of outputs give the bits of one output at a time", "[host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    // Column sums of a contiguous matrix fold neighbouring columns together (FoldColumnsFn); the
    // same values as every other column of a wider matrix are reduced one output at a time.
    const std::int64_t rows = 70001, cols = 37;
    const std::vector<float> wide_values = noise(static_cast<std::size_t>(rows * cols * 2), 11);
    const Array wide = host_array(wide_values, DType::float32, {rows, 2 * cols});
    std::vector<float> narrow_values(static_cast<std::size_t>(rows * cols));
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
            narrow_values[static_cast<std::size_t>(r * cols + c)] = wide_values[static_cast<std::size_t>(r * 2 * cols + 2 * c)];
    const Array narrow = host_array(narrow_values, DType::float32, {rows, cols});
    const Array strided = wide.slice(1, Slice{std::nullopt, std::nullopt, 2});
    const ReductionKernel no_identity("T x", "T y", "x", "a + b", "y = a", "", "columns_no_identity");
    const ReduceOptions columns{.axis = std::vector<int>{0}};
    CHECK(host_bytes_c_order(sum(narrow, columns)) == host_bytes_c_order(sum(strided, columns)));
    CHECK(host_bytes_c_order(mean(narrow, columns)) == host_bytes_c_order(mean(strided, columns)));
    CHECK(host_bytes_c_order(no_identity({narrow}, columns)[0]) == host_bytes_c_order(no_identity({strided}, columns)[0]));
}

TEST_CASE("host reductions: segmented_reduce, group_sorted_keys and reduce_by_key on host arrays", "[host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    const ReductionKernel total("T x", "T y", "x", "a + b", "y = a", "0", "seg_total");
    const ReductionKernel longest("T x", "int64 y", "x", "a > b ? a : b", "y = a + n * 1000", "-1", "seg_max_and_length");
    const Array x = host_array<double>({1, 2, 3, 4, 5, 6, 7}, DType::float64);
    // int32 offsets are converted; an empty segment gives post(identity).
    const Array offsets = host_array<std::int32_t>({0, 3, 3, 7}, DType::int32);
    CHECK(values_of<double>(segmented_reduce(total, {x}, offsets)[0]) == std::vector<double>{6, 0, 22});
    CHECK(values_of<std::int64_t>(segmented_reduce(longest, {x}, offsets)[0]) == std::vector<std::int64_t>{3003, -1, 4007});

    const Array days = host_array<std::int32_t>({5, 5, 5, 6, 9, 9, 9}, DType::int32);
    const KeyGroups g = group_sorted_keys(days);
    CHECK(g.count == 3);
    CHECK(g.keys.is_host());
    CHECK(values_of<std::int32_t>(g.keys) == std::vector<std::int32_t>{5, 6, 9});
    CHECK(values_of<std::int64_t>(g.offsets) == std::vector<std::int64_t>{0, 3, 4, 7});
    const ReducedByKey daily = reduce_by_key(total, days, {x});
    CHECK(values_of<std::int32_t>(daily.keys) == std::vector<std::int32_t>{5, 6, 9});
    CHECK(values_of<double>(daily.values[0]) == std::vector<double>{6, 4, 18});
    // The form that does not wait, into outputs of the largest size: the same groups, offsets past
    // the last one equal to n, and a segmented reduction over all of them gives the identity there.
    const Array offsets_into = Array::empty({8}, DType::int64, Device::cpu());
    const Array keys_into = host_array<std::int32_t>({-1, -1, -1, -1, -1, -1, -1}, DType::int32);
    const Array count_into = Array::empty({}, DType::int64, Device::cpu());
    group_sorted_keys(days, offsets_into, keys_into, count_into);
    CHECK(*count_into.data_as<std::int64_t>() == 3);
    CHECK(values_of<std::int64_t>(offsets_into) == std::vector<std::int64_t>{0, 3, 4, 7, 7, 7, 7, 7});
    CHECK(values_of<std::int32_t>(keys_into) == std::vector<std::int32_t>{5, 6, 9, -1, -1, -1, -1});
    CHECK(values_of<double>(segmented_reduce(total, {x}, offsets_into)[0]) == std::vector<double>{6, 4, 18, 0, 0, 0, 0});
    CHECK_THROWS_WITH(group_sorted_keys(days, offsets_into.slice(0, {0, 7}), keys_into, count_into),
                      Contains("offsets must be C-contiguous with 8 elements for 7 keys"));
    // Floats compare with ==: every NaN is a group of its own.
    const Array fk = host_array<float>({1, 1, NAN, NAN, 2}, DType::float32);
    CHECK(group_sorted_keys(fk).count == 4);
    const Array empty = Array::empty({0}, DType::int64, Device::cpu());
    const KeyGroups none = group_sorted_keys(empty);
    CHECK(none.count == 0);
    CHECK(values_of<std::int64_t>(none.offsets) == std::vector<std::int64_t>{0});

    float fake = 0;  // never read: refused first
    const Array on_gpu = Array::wrap(&fake, DType::int64, {4}, Device::cuda(0));
    CHECK_THROWS_WITH(segmented_reduce(total, {x}, on_gpu), Contains("the offsets must be too") && Contains("cuda:0"));
    const ReductionKernel no_identity("T x", "T y", "x", "a + b", "y = a", "", "seg_no_identity");
    CHECK_THROWS_WITH(segmented_reduce(no_identity, {x}, offsets), Contains("needs an identity"));
}

TEST_CASE("host reductions: outputs given, an output overlapping its input, empty reductions and errors", "[host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    const ReductionKernel total("T x", "T y", "x", "a + b", "y = a", "0", "given_total");
    std::vector<float> v(12);
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(k);
    const Array m = host_array(v, DType::float32, {3, 4});
    // Column sums written into row 0 of the input itself: the input is read from a copy first.
    total.launch({m, m.index(0, 0)}, {.axis = std::vector<int>{0}});
    CHECK(values_of<float>(m.index(0, 0)) == std::vector<float>{12, 15, 18, 21});
    // An output given with a stride (every other element of a wider array).
    const Array wide = Array::empty({6}, DType::float32, Device::cpu());
    std::memset(wide.data(), 0, 6 * sizeof(float));
    const Array rows = host_array(v, DType::float32, {3, 4});
    total.launch({rows, wide.slice(0, Slice{std::nullopt, std::nullopt, 2})}, {.axis = std::vector<int>{1}});
    CHECK(values_of<float>(wide) == std::vector<float>{6, 0, 22, 0, 38, 0});
    const Array wrong = Array::empty({4}, DType::float32, Device::cpu());
    CHECK_THROWS_WITH(total.launch({rows, wrong}, {.axis = std::vector<int>{1}}), Contains("gives (3,)"));

    // Empty: with an identity post(identity), without one the GPU's error; min/argmax NumPy's.
    const Array none = Array::empty({2, 0}, DType::float32, Device::cpu());
    CHECK(values_of<float>(total({none}, {.axis = std::vector<int>{1}})[0]) == std::vector<float>{0, 0});
    const ReductionKernel first("T x", "T y", "x", "a", "y = a", "", "no_identity_first");
    CHECK_THROWS_WITH(first({none}, {.axis = std::vector<int>{1}}), Contains("needs an identity"));
    CHECK_THROWS_WITH(kjit::min(none, {.axis = std::vector<int>{1}}), Contains("has no identity"));
    CHECK_THROWS_WITH(argmax(none, {.axis = std::vector<int>{1}}), Contains("has no identity"));
    CHECK(total({none}, {.axis = std::vector<int>{0}})[0].size() == 0);
    CHECK_THROWS_AS(argmax(host_array<float>({1, 2}, DType::complex64, {1})), TypeError);

    // Mixed locations, raw CUDA.
    float fake = 0;
    const Array on_gpu = Array::wrap(&fake, DType::float32, {}, Device::cuda(0));
    CHECK_THROWS_WITH(total.launch({rows.index(0, 0), on_gpu}), Contains("input 'x' is on cpu") && Contains("output 'y' is on cuda:0"));
    CHECK_THROWS_WITH(kjit::sum(rows.index(0, 0), {}, on_gpu), Contains("is on cpu") && Contains("is on cuda:0"));
    KernelOptions o;
    o.preamble = "__device__ float twice(float v) { return 2 * v; }";
    const ReductionKernel raw("T x", "T y", "twice(x)", "a + b", "y = a", "0", "red_with_preamble", o);
    CHECK_THROWS_WITH(raw({rows}), Contains("red_with_preamble") && Contains("preamble is raw CUDA"));
}

TEST_CASE("host reductions: scalars, raw inputs and inputs converted on load", "[host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    const Array x = host_array<std::int16_t>({1, -2, 3, -4, 5}, DType::int16);
    const Array table = host_array<double>({10, 20, 30, 40, 50}, DType::float64);
    // x (int16) converted to float64 as loaded; raw table indexed by i; a scalar weight.
    const ReductionKernel k("float64 x, raw float64 t, float64 w", "float64 y", "x * t[i] * w", "a + b", "y = a", "0", "mixed_inputs");
    const double want = (1 * 10 - 2 * 20 + 3 * 30 - 4 * 40 + 5 * 50) * 0.5;
    CHECK(values_of<double>(k({x, table, 0.5})[0]) == std::vector<double>{want});
}
