// kjit::bincount (issue 36's histogram): every bin hit, every value in one bin, values outside
// the bins, the shared-memory path and the global one (more bins than a block keeps), strided
// inputs, every integer dtype and bool; counts checked exactly against a count made here.
#include <cstring>

#include "cupy_support.hpp"
#include "jit/kernels/ops/bincount.hpp"
#include "kjit/reductions.hpp"

using namespace kjit;
using namespace kjit::test;
using Catch::Contains;

namespace {

std::vector<std::int64_t> counts_of(const Array& a) {
    const std::vector<unsigned char> bytes = a.is_host() ? host_bytes_c_order(a) : to_host(a);
    std::vector<std::int64_t> v(bytes.size() / 8);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
}

template <class T>
std::vector<std::int64_t> reference(const std::vector<T>& x, std::int64_t bins) {
    std::vector<std::int64_t> c(static_cast<std::size_t>(bins), 0);
    for (const T v : x)
        if (static_cast<double>(v) >= 0 && static_cast<double>(v) < static_cast<double>(bins)) ++c[static_cast<std::size_t>(v)];
    return c;
}

void bincount_on(Device device) {
    // 2^20 + 77 int32 values over [-5, 300): every one of 256 bins hit, some values below and above.
    const std::vector<std::int32_t> x = cast_all<std::int32_t>(draw((1 << 20) + 77, -5, 300, true));
    const Array xs = on(device, x, DType::int32);
    CHECK(counts_of(bincount(xs, 256)) == reference(x, 256));
    // Every value in one bin.
    const std::vector<std::int32_t> same(100003, 7);
    const std::vector<std::int64_t> one = counts_of(bincount(on(device, same, DType::int32), 8));
    CHECK(one[7] == 100003);
    CHECK(one[0] == 0);
    // More bins than a block keeps in shared memory: counted straight into the output.
    const std::vector<std::int64_t> wide = cast_all<std::int64_t>(draw(300001, 0, 40000, true));
    CHECK(counts_of(bincount(on(device, wide, DType::int64), 40000)) == reference(wide, 40000));
    // A strided view is packed first; a given output is reused (its old counts cleared).
    const Array every_other = xs.slice(0, Slice{std::nullopt, std::nullopt, 2});
    std::vector<std::int32_t> picked;
    for (std::size_t e = 0; e < x.size(); e += 2) picked.push_back(x[e]);
    const Array out = poisoned_on(device, DType::int64, {300});
    bincount(every_other, 300, {}, out);
    CHECK(counts_of(out) == reference(picked, 300));
    // Other dtypes: int8 with negatives, uint8, bool, uint64 past 2^63.
    const std::vector<std::int8_t> small = cast_all<std::int8_t>(draw(5000, -128, 127, true));
    CHECK(counts_of(bincount(on(device, small, DType::int8), 100)) == reference(small, 100));
    const std::vector<std::uint8_t> flags{1, 0, 1, 1, 0};
    CHECK(counts_of(bincount(on(device, flags, DType::bool_), 2)) == std::vector<std::int64_t>{2, 3});
    const std::vector<std::uint64_t> big{1, 2, 2, 0x8000000000000001ull, 3};
    CHECK(counts_of(bincount(on(device, big, DType::uint64), 4)) == std::vector<std::int64_t>{0, 1, 2, 1});
    // Contiguous views that start off a 16-byte boundary, at every offset 1..17 and lengths up to
    // a few vectors past the threads' first round: the elements before the first whole vector
    // and after the last one are counted apart from the vectors.
    const std::vector<std::int8_t> bytes = cast_all<std::int8_t>(draw(600011, -3, 60, true));
    const std::vector<std::int16_t> halves = cast_all<std::int16_t>(draw(300007, -3, 60, true));
    const Array bs = on(device, bytes, DType::int8), hs = on(device, halves, DType::int16);
    for (std::int64_t skip = 1; skip <= 17; skip += 4)
        for (const std::int64_t len : {std::int64_t{1}, std::int64_t{15}, std::int64_t{250001}, std::int64_t{600011} - skip}) {
            INFO("skip " << skip << ", length " << len);
            const std::vector<std::int8_t> b(bytes.begin() + skip, bytes.begin() + skip + len);
            CHECK(counts_of(bincount(bs.slice(0, Slice{skip, skip + len, 1}), 64)) == reference(b, 64));
            const std::int64_t hl = std::min<std::int64_t>(len, 300007 - skip);
            const std::vector<std::int16_t> h(halves.begin() + skip, halves.begin() + skip + hl);
            CHECK(counts_of(bincount(hs.slice(0, Slice{skip, skip + hl, 1}), 64)) == reference(h, 64));
        }
    // Errors leave it usable.
    CHECK_THAT(error_of([&] { bincount(on(device, std::vector<float>{1}, DType::float32), 4); }), Contains("not float32"));
    CHECK_THAT(error_of([&] { bincount(xs, 0); }), Contains("bins must be at least 1"));
    CHECK_THAT(error_of([&] { bincount(xs, 4, {}, poisoned_on(device, DType::int32, {4})); }), Contains("out must be a contiguous int64"));
    CHECK(counts_of(bincount(xs, 256)) == reference(x, 256));
}

}  // namespace

KJIT_ON_BOTH_BACK_ENDS_TAGGED("[atomics][bincount]", "bincount counts exactly through shared or global bins", bincount_on)

TEST_CASE("bincount's kernels compile with NVRTC", "[atomics][bincount][nvrtc]") {
    const Binary b = jit::kernels::bincount_module().compile("sm_90");
    CHECK_FALSE(b.cubin.empty());
    CHECK_THAT(b.source, Contains("kjit_bincount_uint64"));
}
