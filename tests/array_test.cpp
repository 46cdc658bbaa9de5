// Array: shape and stride arithmetic, views checked against real element values on host arrays,
// and copies between host and device ([gpu]).
#include "test_support.hpp"

#include <cstring>
#include <numeric>

#include "kjit/array.hpp"
#include "kjit/error.hpp"

using kjit::Array;
using kjit::DType;
using kjit::Shape;
using kjit::Slice;
using kjit::Strides;
using Catch::Matchers::Contains;

namespace {

// A host int32 array holding 0, 1, 2... in C order.
Array iota(const Shape& shape) {
    Array a = Array::empty(shape, DType::int32, kjit::Device::cpu());
    std::iota(a.data_as<std::int32_t>(), a.data_as<std::int32_t>() + a.size(), 0);
    return a;
}

// The element at a multi-index, read through the strides.
std::int32_t at(const Array& a, std::initializer_list<std::int64_t> idx) {
    std::int64_t off = 0;
    std::size_t k = 0;
    for (std::int64_t i : idx) off += i * a.strides()[k++];
    return a.data_as<std::int32_t>()[off];
}

// All elements of an int32 view in C order, through copy_to_host's gather.
std::vector<std::int32_t> elements(const Array& a) {
    std::vector<std::int32_t> out(static_cast<std::size_t>(a.size()));
    a.copy_to_host(out.data());
    return out;
}

}  // namespace

TEST_CASE("shape helpers", "[array]") {
    CHECK(kjit::shape_to_string({}) == "()");
    CHECK(kjit::shape_to_string({3}) == "(3,)");
    CHECK(kjit::shape_to_string({2, 3}) == "(2, 3)");
    CHECK(kjit::shape_size({}) == 1);
    CHECK(kjit::shape_size({2, 0, 3}) == 0);
    CHECK(kjit::c_strides({2, 3, 4}) == Strides{12, 4, 1});
    CHECK(kjit::f_strides({2, 3, 4}) == Strides{1, 2, 6});
    CHECK(kjit::broadcast_shapes({{3, 1}, {4}}) == Shape{3, 4});
    CHECK(kjit::broadcast_shapes({{}, {2, 1}, {1, 5}}) == Shape{2, 5});
    CHECK(kjit::broadcast_shapes({{0, 1}, {1, 4}}) == Shape{0, 4});
    CHECK_THROWS_AS(kjit::broadcast_shapes({{3}, {4}}), kjit::ShapeError);
    CHECK_THROWS_WITH(kjit::broadcast_shapes({{2, 3}, {4}}), Contains("(2, 3), (4,)") && Contains("cannot be broadcast"));
}

TEST_CASE("empty arrays: layout, contiguity and bad shapes", "[array]") {
    const Array a = Array::empty({2, 3}, DType::float64, kjit::Device::cpu());
    CHECK(a.valid());
    CHECK(a.is_host());
    CHECK(a.ndim() == 2);
    CHECK(a.size() == 6);
    CHECK(a.nbytes() == 48);
    CHECK(a.strides() == Strides{3, 1});
    CHECK(a.is_c_contiguous());
    CHECK_FALSE(a.is_f_contiguous());
    CHECK(a.transpose().is_f_contiguous());
    CHECK(reinterpret_cast<std::uintptr_t>(a.data()) % 64 == 0);
    CHECK(a.to_string() == "Array(float64, (2, 3), cpu)");
    const Array scalar = Array::empty({}, DType::int8, kjit::Device::cpu());
    CHECK(scalar.size() == 1);
    CHECK(scalar.is_c_contiguous());
    const Array none = Array::empty({4, 0}, DType::int8, kjit::Device::cpu());
    CHECK(none.size() == 0);
    CHECK(none.is_c_contiguous());
    CHECK(none.is_f_contiguous());
    CHECK_THROWS_AS(Array::empty({2, -1}, DType::int8, kjit::Device::cpu()), kjit::ShapeError);
    CHECK_THROWS_WITH(Array::empty({std::int64_t{1} << 40, std::int64_t{1} << 40}, DType::int8, kjit::Device::cpu()),
                      Contains("too large"));
    CHECK_FALSE(Array().valid());
    CHECK_THROWS_AS(Array().to_host(), kjit::Error);
}

TEST_CASE("transpose, permute and swapaxes move the right elements", "[array][views]") {
    const Array a = iota({2, 3, 4});
    const Array t = a.transpose();
    CHECK(t.shape() == Shape{4, 3, 2});
    CHECK(at(t, {3, 1, 1}) == at(a, {1, 1, 3}));
    const Array p = a.permute({1, 2, 0});
    CHECK(p.shape() == Shape{3, 4, 2});
    CHECK(at(p, {2, 3, 1}) == at(a, {1, 2, 3}));
    CHECK(a.swapaxes(0, -1).shape() == Shape{4, 3, 2});
    CHECK_THROWS_AS(a.permute({0, 0, 1}), kjit::ShapeError);
    CHECK_THROWS_AS(a.permute({0, 1}), kjit::ShapeError);
    CHECK_THROWS_WITH(a.permute({0, 1, 3}), Contains("axis 3 is out of range"));
    CHECK(a.transpose().data() == a.data());  // a view: same memory
}

TEST_CASE("slices follow Python's rules, negative steps included", "[array][views]") {
    const Array v = iota({10});
    CHECK(elements(v.slice(0, {2, 8, 2})) == std::vector<std::int32_t>{2, 4, 6});
    CHECK(elements(v.slice(0, {{}, {}, -1})) == std::vector<std::int32_t>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
    CHECK(elements(v.slice(0, {8, 2, -3})) == std::vector<std::int32_t>{8, 5});
    CHECK(elements(v.slice(0, {-3, {}, 1})) == std::vector<std::int32_t>{7, 8, 9});
    CHECK(elements(v.slice(0, {{}, -7, -2})) == std::vector<std::int32_t>{9, 7, 5});
    CHECK(elements(v.slice(0, {-100, 100, 4})) == std::vector<std::int32_t>{0, 4, 8});
    CHECK(v.slice(0, {5, 2, 1}).size() == 0);
    CHECK(v.slice(0, {2, 5, -1}).size() == 0);
    CHECK_THROWS_WITH(v.slice(0, {{}, {}, 0}), Contains("step cannot be zero"));
    const Array m = iota({4, 5});
    const Array s = m.slice(0, {{}, {}, -2}).slice(1, {1, 4, 2});  // rows 3,1; cols 1,3
    CHECK(s.shape() == Shape{2, 2});
    CHECK(elements(s) == std::vector<std::int32_t>{16, 18, 6, 8});
    CHECK_FALSE(s.is_contiguous());
}

TEST_CASE("index removes an axis; out of range is a ShapeError", "[array][views]") {
    const Array m = iota({3, 4});
    CHECK(elements(m.index(0, 1)) == std::vector<std::int32_t>{4, 5, 6, 7});
    CHECK(elements(m.index(1, -1)) == std::vector<std::int32_t>{3, 7, 11});
    CHECK(m.index(0, 2).index(0, 3).ndim() == 0);
    CHECK(elements(m.index(0, 2).index(0, 3)) == std::vector<std::int32_t>{11});
    CHECK_THROWS_WITH(m.index(0, 3), Contains("3 is out of range for axis 0 of extent 3"));
    CHECK_THROWS_AS(m.index(2, 0), kjit::ShapeError);
}

TEST_CASE("reshape is a view when the layout allows it and says so when not", "[array][views]") {
    const Array a = iota({2, 3, 4});
    const Array r = a.reshape({6, -1});
    CHECK(r.shape() == Shape{6, 4});
    CHECK(r.data() == a.data());
    CHECK(elements(r) == elements(a));
    CHECK(a.reshape({24}).strides() == Strides{1});
    CHECK(a.reshape({1, 24, 1}).shape() == Shape{1, 24, 1});
    // A slice of whole rows can be merged with the axes inside it.
    const Array rows = a.slice(0, {1, 2, 1});  // shape (1, 3, 4)
    CHECK(elements(rows.reshape({12})) == elements(rows));
    // Every other row of a matrix: rows are contiguous inside, so splitting columns is fine.
    const Array m = iota({6, 4}).slice(0, {{}, {}, 2});
    const Array split = m.reshape({3, 2, 2});
    CHECK(elements(split) == elements(m));
    // A transposed matrix cannot be flattened without a copy.
    CHECK_THROWS_AS(a.transpose().reshape({24}), kjit::ShapeError);
    CHECK_THROWS_WITH(a.transpose().reshape({24}), Contains("without a copy"));
    CHECK_THROWS_WITH(a.reshape({5, 5}), Contains("cannot reshape an array of shape (2, 3, 4)"));
    CHECK_THROWS_WITH(a.reshape({-1, -1}), Contains("more than one -1"));
    CHECK_THROWS_AS(a.reshape({7, -1}), kjit::ShapeError);
    const Array z = Array::empty({0, 3}, DType::int32, kjit::Device::cpu());
    CHECK(z.reshape({3, 0}).shape() == Shape{3, 0});
    CHECK_THROWS_AS(z.reshape({-1, 0}), kjit::ShapeError);  // ambiguous
    // Reversed views flatten with a negative stride.
    const Array rev = iota({3, 4}).slice(0, {{}, {}, -1}).slice(1, {{}, {}, -1});
    const Array flat = rev.reshape({12});
    CHECK(flat.strides() == Strides{-1});
    CHECK(elements(flat) == elements(rev));
}

TEST_CASE("broadcast_to, squeeze and expand_dims", "[array][views]") {
    const Array row = iota({3});
    const Array b = row.broadcast_to({2, 3});
    CHECK(b.strides() == Strides{0, 1});
    CHECK(elements(b) == std::vector<std::int32_t>{0, 1, 2, 0, 1, 2});
    const Array col = iota({2, 1}).broadcast_to({2, 3});
    CHECK(elements(col) == std::vector<std::int32_t>{0, 0, 0, 1, 1, 1});
    CHECK_THROWS_WITH(row.broadcast_to({2, 4}), Contains("cannot broadcast shape (3,) to (2, 4)"));
    CHECK_THROWS_AS(row.broadcast_to({}), kjit::ShapeError);
    const Array e = row.expand_dims(0).expand_dims(-1);
    CHECK(e.shape() == Shape{1, 3, 1});
    CHECK(e.is_c_contiguous());
    CHECK(e.squeeze().shape() == Shape{3});
    CHECK(e.squeeze(-1).shape() == Shape{1, 3});
    CHECK_THROWS_WITH(e.squeeze(1), Contains("has extent 3, not 1"));
    CHECK_THROWS_AS(row.expand_dims(3), kjit::ShapeError);
}

TEST_CASE("view_as reinterprets bytes of the same size only", "[array][views]") {
    Array f = Array::empty({2}, DType::float32, kjit::Device::cpu());
    f.data_as<float>()[0] = 1.0f;
    const Array i = f.view_as(DType::int32);
    CHECK(i.data_as<std::int32_t>()[0] == 0x3f800000);
    CHECK_THROWS_AS(f.view_as(DType::float64), kjit::TypeError);
}

TEST_CASE("view_of and wrap check bounds and borrow without owning", "[array]") {
    auto buf = kjit::Buffer::allocate_host(10 * sizeof(std::int32_t));
    CHECK_NOTHROW(Array::view_of(buf, DType::int32, {2, 5}, {5, 1}));
    CHECK_NOTHROW(Array::view_of(buf, DType::int32, {5}, {-2}, 8));
    CHECK_THROWS_WITH(Array::view_of(buf, DType::int32, {3, 5}, {5, 1}), Contains("buffer holds 10 int32"));
    CHECK_THROWS_AS(Array::view_of(buf, DType::int32, {5}, {-2}, 7), kjit::ShapeError);
    CHECK_THROWS_AS(Array::view_of(buf, DType::int32, {2}, {1, 1}), kjit::ShapeError);

    std::vector<std::int32_t> host(12);
    std::iota(host.begin(), host.end(), 100);
    const Array w = Array::wrap(host.data(), DType::int32, {3, 4}, kjit::Device::cpu());
    CHECK(w.data() == host.data());
    CHECK(w.buffer()->kind() == kjit::Buffer::Kind::borrowed);
    CHECK(at(w, {2, 3}) == 111);
    // A reversed view of the caller's memory: data() is the last element.
    const Array r = Array::wrap(host.data() + 11, DType::int32, {12}, kjit::Device::cpu(), {-1});
    CHECK(elements(r).front() == 111);
    CHECK(elements(r).back() == 100);
}

TEST_CASE("host copies gather any layout into C order", "[array]") {
    const Array a = iota({3, 4, 5});
    const Array view = a.permute({2, 0, 1}).slice(1, {{}, {}, -1}).slice(2, {1, 4, 2});
    const Array packed = view.to_host();
    CHECK(packed.is_c_contiguous());
    CHECK(packed.shape() == view.shape());
    // Compare element by element with a direct strided read.
    for (std::int64_t i = 0; i < view.shape()[0]; ++i)
        for (std::int64_t j = 0; j < view.shape()[1]; ++j)
            for (std::int64_t k = 0; k < view.shape()[2]; ++k)
                REQUIRE(at(packed, {i, j, k}) == at(view, {i, j, k}));
    const Array copy = a.to(kjit::Device::cpu());
    CHECK(copy.data() != a.data());
    CHECK(elements(copy) == elements(a));
}

TEST_CASE("host -> device -> host round trips every dtype", "[gpu][array]") {
    KJIT_REQUIRE_GPU();
    for (int id = 0; id < DType::count; ++id) {
        const DType t(static_cast<DType::Id>(id));
        INFO(t.name());
        const Shape shape{37, 129};
        const auto src = kjit::test::random_elements(t, kjit::shape_size(shape));
        const Array d = Array::from_host(src.data(), t, shape, kjit::Device::cuda(0));
        CHECK(d.device() == kjit::Device::cuda(0));
        std::vector<unsigned char> back(src.size(), 0xAB);  // poisoned
        d.copy_to_host(back.data());
        CHECK(back == src);
        const Array h = d.to_host();
        CHECK(std::memcmp(h.data(), src.data(), src.size()) == 0);
    }
}

TEST_CASE("non-contiguous device views copy to the host correctly", "[gpu][array]") {
    KJIT_REQUIRE_GPU();
    const Array host = iota({6, 7, 8});
    const Array dev = host.to(kjit::Device::cuda(0));
    const Array view_h = host.permute({2, 0, 1}).slice(0, {{}, {}, -3}).slice(2, {1, {}, 2});
    const Array view_d = dev.permute({2, 0, 1}).slice(0, {{}, {}, -3}).slice(2, {1, {}, 2});
    std::vector<std::int32_t> got(static_cast<std::size_t>(view_d.size()), -7);
    view_d.copy_to_host(got.data());
    CHECK(got == elements(view_h));
    const Array bcast = dev.index(0, 2).index(0, 3).broadcast_to({4, 8});
    CHECK(elements(bcast.to_host()) == elements(host.index(0, 2).index(0, 3).broadcast_to({4, 8})));
}

TEST_CASE("device to device copies, contiguous or not", "[gpu][array]") {
    KJIT_REQUIRE_GPU();
    const auto src = kjit::test::random_elements(DType::float64, 1000);
    const Array a = Array::from_host(src.data(), DType::float64, {10, 100}, kjit::Device::cuda(0));
    const Array b = a.to(kjit::Device::cuda(0));
    CHECK(b.data() != a.data());
    std::vector<unsigned char> back(src.size(), 0);
    b.copy_to_host(back.data());
    CHECK(back == src);
    // Non-contiguous: packed in C order by the copy kernel.
    const Array t = a.transpose().to(kjit::Device::cuda(0));
    CHECK(t.is_c_contiguous());
    std::vector<double> tback(1000, 0.0), orig(1000);
    std::memcpy(orig.data(), src.data(), src.size());
    t.copy_to_host(tback.data());
    std::size_t wrong = 0;
    for (std::size_t k = 0; k < 1000; ++k) wrong += tback[k] != orig[(k % 10) * 100 + k / 10];
    CHECK(wrong == 0);
    // Size 0 copies are fine everywhere.
    const Array z = Array::empty({0, 5}, DType::float32, kjit::Device::cuda(0));
    CHECK(z.to_host().size() == 0);
    CHECK(z.to(kjit::Device::cuda(0)).size() == 0);
}

TEST_CASE("copy_from_host overwrites an array in place", "[array]") {
    const Array a = Array::empty({3, 4}, DType::int32, kjit::Device::cpu());
    const auto src = kjit::test::random_elements(DType::int32, 12);
    a.copy_from_host(src.data());
    CHECK(std::memcmp(a.data(), src.data(), src.size()) == 0);
    // A view that is not C-contiguous is refused, naming it; so is an array without a buffer.
    CHECK_THROWS_WITH(a.transpose().copy_from_host(src.data()),
                      Contains("Array(int32, (4, 3), cpu) is not C-contiguous"));
    CHECK_THROWS_WITH(Array().copy_from_host(src.data()), Contains("invalid"));
    // A contiguous slice is written where it lies.
    const std::int32_t row[4] = {7, 8, 9, 10};
    a.index(0, 1).copy_from_host(row);
    CHECK(elements(a.index(0, 1)) == std::vector<std::int32_t>{7, 8, 9, 10});
}

TEST_CASE("copy_from_host fills a device array in place", "[gpu][array]") {
    KJIT_REQUIRE_GPU();
    const auto src = kjit::test::random_elements(DType::float32, 1000);
    const Array d = Array::empty({1000}, DType::float32, kjit::Device::cuda(0));
    const void* before = d.data();
    d.copy_from_host(src.data());
    CHECK(d.data() == before);
    std::vector<unsigned char> back(src.size(), 0xAB);  // poisoned
    d.copy_to_host(back.data());
    CHECK(back == src);
}
