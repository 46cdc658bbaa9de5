// A reduction's iteration space: axes as NumPy takes them, output shapes, kept-then-reduced
// dimensions merged, and the strategy for the usual layouts. No GPU needed.
#include "test_support.hpp"

#include "kjit/error.hpp"
#include "runtime/detail/reduce_layout.hpp"

using kjit::Shape;
using kjit::detail::ReduceStrategy;
using Catch::Matchers::Contains;

TEST_CASE("axes are normalised as NumPy does", "[reduce_layout]") {
    using kjit::detail::normalize_axes;
    CHECK(normalize_axes({}, 3) == std::vector<int>{0, 1, 2});
    CHECK(normalize_axes({-1, 0}, 3) == std::vector<int>{0, 2});
    CHECK_THROWS_WITH(normalize_axes({3}, 3), Contains("axis 3 is out of range for an array of 3 dimensions"));
    CHECK_THROWS_WITH(normalize_axes({1, -2}, 3), Contains("axis -2 is given twice"));
    CHECK(normalize_axes({}, 0).empty());
}

TEST_CASE("output shapes with and without keepdims", "[reduce_layout]") {
    using kjit::detail::reduction_output_shape;
    CHECK(reduction_output_shape({4, 5, 6}, {1}, false) == Shape{4, 6});
    CHECK(reduction_output_shape({4, 5, 6}, {1}, true) == Shape{4, 1, 6});
    CHECK(reduction_output_shape({4, 5, 6}, {0, 1, 2}, false) == Shape{});
    CHECK(reduction_output_shape({4, 5, 6}, {0, 2}, true) == Shape{1, 5, 1});
}

TEST_CASE("the usual reductions get their strategies and merged layouts", "[reduce_layout]") {
    using kjit::detail::plan_reduction;
    const int sms = 132;
    // Sum of everything: one value.
    auto all = plan_reduction({1 << 14, 1 << 14}, {{1 << 14, 1}}, {{}}, {0, 1}, sms);
    CHECK(all.strategy == ReduceStrategy::full);
    CHECK(all.reduced_ndim == 1);  // one contiguous run
    CHECK(all.reduced_size == std::int64_t{1} << 28);
    // A few thousand contiguous elements (merged), or a 0-d input: one block; strided or
    // broadcast ones, or more of them: full.
    CHECK(plan_reduction({64, 64}, {{64, 1}}, {{}}, {0, 1}, sms).strategy == ReduceStrategy::small);
    CHECK(plan_reduction({}, {{}}, {{}}, {}, sms).strategy == ReduceStrategy::small);
    CHECK(plan_reduction({4097}, {{1}}, {{}}, {0}, sms).strategy == ReduceStrategy::full);
    CHECK(plan_reduction({1000}, {{2}}, {{}}, {0}, sms).strategy == ReduceStrategy::full);
    CHECK(plan_reduction({1000}, {{1}, {0}}, {{}}, {0}, sms).strategy == ReduceStrategy::full);
    CHECK(plan_reduction({64, 64}, {{1, 64}}, {{}}, {0, 1}, sms).strategy == ReduceStrategy::full);  // transposed
    // Sum over the contiguous axis: a warp per row.
    auto rows = plan_reduction({16384, 16384}, {{16384, 1}}, {{1}}, {1}, sms);
    CHECK(rows.strategy == ReduceStrategy::rows_warp);
    CHECK(rows.kept_size == 16384);
    CHECK(rows.reduced_size == 16384);
    CHECK(rows.in_strides[0] == std::vector<std::int64_t>{16384, 1});
    CHECK(rows.out_strides[0] == std::vector<std::int64_t>{1});
    // Few long rows: a block per row.
    CHECK(plan_reduction({8, 1 << 20}, {{1 << 20, 1}}, {{1}}, {1}, sms).strategy == ReduceStrategy::rows_block);
    // Sum over the outer axis: columns; few columns over many rows: split.
    CHECK(plan_reduction({16384, 16384}, {{16384, 1}}, {{1}}, {0}, sms).strategy == ReduceStrategy::columns_split);
    CHECK(plan_reduction({1024, 1 << 20}, {{1 << 20, 1}}, {{1}}, {0}, sms).strategy == ReduceStrategy::columns);
    // A transposed input reduced over axis 0 reads rows: its reduced axis is the contiguous one.
    CHECK(plan_reduction({300, 200}, {{1, 300}}, {{1}}, {0}, sms).strategy == ReduceStrategy::rows_warp);
    // (2, 3, 4) reduced over the last two axes: they merge into one run of 12.
    auto merged = plan_reduction({2, 3, 4}, {{12, 4, 1}}, {{1}}, {1, 2}, sms);
    CHECK(merged.reduced_ndim == 1);
    CHECK(merged.reduced_size == 12);
    CHECK(merged.shape == std::vector<std::int64_t>{2, 12});
    // Extent-1 dimensions vanish; a broadcast input (stride 0) reduces like a contiguous one.
    auto ones = plan_reduction({1, 5, 1, 7}, {{35, 7, 7, 1}}, {{0, 1, 0}}, {3}, sms);
    CHECK(ones.shape == std::vector<std::int64_t>{5, 7});
    auto bcast = plan_reduction({50, 60}, {{0, 1}}, {{1}}, {1}, sms);
    CHECK(bcast.strategy == ReduceStrategy::rows_warp);
}
