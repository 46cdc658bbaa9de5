// How call arguments bind a kernel's parameters (CuPy's rules), and the argument struct's layout.
#include "test_support.hpp"

#include "jit/frontend/call_binding.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/kernel_args.hpp"

using kjit::DType;
using kjit::ElementwiseKernel;
using kjit::jit::frontend::ArgumentKind;
using Catch::Matchers::Contains;

namespace {

kjit::jit::frontend::BoundCall bind(const ElementwiseKernel& k, std::vector<ArgumentKind> args) {
    const kjit::jit::frontend::CallSignature sig = kjit::jit::frontend::call_signature(k.in_params(), k.out_params());
    return kjit::jit::frontend::bind_call(sig, k.name(), args.data(), args.size());
}

ArgumentKind array(DType t) { return {ArgumentKind::array, t}; }
ArgumentKind scalar(DType t) { return {ArgumentKind::scalar, t}; }

}  // namespace

TEST_CASE("placeholders bind from outputs first, then array inputs, then scalars", "[binding]") {
    const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb");
    const auto b = bind(axpb, {array(DType::float32), scalar(DType::float64), scalar(DType::float64)});
    CHECK(b.types.at("T") == DType::float32);
    CHECK(b.scalar == std::vector<bool>{false, true, true, false});
    CHECK_FALSE(b.storage[0]);

    // The output decides T; an input that casts safely to it is converted as it is loaded.
    const auto o = bind(axpb, {array(DType::int16), scalar(DType::int32), scalar(DType::int32), array(DType::float32)});
    CHECK(o.types.at("T") == DType::float32);
    REQUIRE(o.storage[0]);
    CHECK(*o.storage[0] == DType::int16);

    // Only scalars: the first scalar gives T its type.
    const ElementwiseKernel fill("T v", "T y", "y = v", "fill");
    CHECK(bind(fill, {scalar(DType::float64)}).types.at("T") == DType::float64);

    // A fixed type takes a scalar of any real type, converted.
    const ElementwiseKernel fixed("float32 x, int32 k", "float32 y", "y = x * k", "fixed");
    const auto f = bind(fixed, {array(DType::float32), scalar(DType::float64)});
    CHECK(f.param_types[1] == DType::int32);
    CHECK(f.scalar[1]);
}

TEST_CASE("binding errors name the kernel and the parameter", "[binding]") {
    const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb");
    CHECK_THROWS_WITH(bind(axpb, {array(DType::float32)}), Contains("kernel 'axpb'") && Contains("takes 3 inputs"));
    CHECK_THROWS_WITH(bind(axpb, {array(DType::float32), array(DType::float64), scalar(DType::int32)}),
                      Contains("input 'a'") && Contains("float64") && Contains("without loss"));
    CHECK_THROWS_WITH(bind(axpb, {array(DType::float64), scalar(DType::int32), scalar(DType::int32), array(DType::float32)}),
                      Contains("input 'x' is float32 but the array is float64"));
    CHECK_THROWS_WITH(bind(axpb, {array(DType::float32), scalar(DType::int32), scalar(DType::int32), scalar(DType::float32)}),
                      Contains("output 'y' must be an array"));
    CHECK_THROWS_WITH(bind(axpb, {array(DType::float32), scalar(DType::complex64), scalar(DType::int32)}),
                      Contains("imaginary part"));
    const ElementwiseKernel two("T x", "U y", "y = x", "two");
    CHECK_THROWS_WITH(bind(two, {array(DType::float32)}), Contains("placeholder 'U'") && Contains("pass the output"));
    const ElementwiseKernel fixed_out("T x", "float32 y", "y = x", "fo");
    CHECK_THROWS_WITH(bind(fixed_out, {array(DType::float32), array(DType::float64)}),
                      Contains("output 'y' is declared float32 but the array is float64"));
    const ElementwiseKernel raw("raw T table, int32 k", "T y", "y = table[k]", "gather");
    CHECK_THROWS_WITH(bind(raw, {array(DType::float32), array(DType::int16), array(DType::float64)}),
                      Contains("raw arrays are indexed as they are"));
    CHECK_THROWS_WITH(bind(raw, {scalar(DType::float32), array(DType::int32)}), Contains("must be an array"));
    CHECK_THROWS_AS(bind(raw, {scalar(DType::float32), array(DType::int32)}), kjit::TypeError);
}

TEST_CASE("the argument struct follows C's layout rules", "[binding]") {
    using kjit::detail::ArgField;
    // double* x; int8 scalar; complex128 scalar (aligned 16); Raw<T> (a RawField: data, count,
    // ndim, contiguous, 8 extents, 8 strides: 152 bytes); long long n.
    const kjit::detail::ArgsLayout l = kjit::detail::args_layout(
        {ArgField::pointer, ArgField::value, ArgField::value, ArgField::raw},
        {DType::float64, DType::int8, DType::complex128, DType::float32});
    REQUIRE(l.slots.size() == 4);
    CHECK(l.slots[0].offset == 0);
    CHECK(l.slots[1].offset == 8);
    CHECK(l.slots[2].offset == 16);
    CHECK(l.slots[3].offset == 32);
    CHECK(l.n_offset == 32 + 152);
    CHECK(l.size == 192);  // padded to the complex128's 16
    const kjit::detail::ArgsLayout h = kjit::detail::args_layout({ArgField::value, ArgField::value}, {DType::float16, DType::int32});
    CHECK(h.slots[1].offset == 4);
    CHECK(h.n_offset == 8);
    CHECK(h.size == 16);
}
