// Tests of Array::to_dlpack and Array::from_dlpack: zero-copy round trips of every dtype and
// layout, ownership (the producer's deleter runs exactly once, when the last view dies), and the
// errors for tensors kjit cannot take.
#include "test_support.hpp"

#include <dlpack/dlpack.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "kjit/array.hpp"
#include "kjit/error.hpp"

namespace {

using kjit::Array;
using kjit::Device;
using kjit::DType;
using kjit::Shape;
using kjit::Strides;
using Bytes = std::vector<unsigned char>;
using kjit::test::all_dtypes;
using kjit::test::host_bytes_c_order;
using kjit::test::random_array;

// DLPack's (code, bits) for each dtype, spelled out independently of the implementation;
// code 6 is kDLBool (DLPack 0.8+).
std::pair<int, int> expected_dl_dtype(DType dtype) {
    switch (dtype.id()) {
        case DType::bool_: return {6, 8};
        case DType::int8: return {kDLInt, 8};
        case DType::int16: return {kDLInt, 16};
        case DType::int32: return {kDLInt, 32};
        case DType::int64: return {kDLInt, 64};
        case DType::uint8: return {kDLUInt, 8};
        case DType::uint16: return {kDLUInt, 16};
        case DType::uint32: return {kDLUInt, 32};
        case DType::uint64: return {kDLUInt, 64};
        case DType::float16: return {kDLFloat, 16};
        case DType::bfloat16: return {kDLBfloat, 16};
        case DType::float32: return {kDLFloat, 32};
        case DType::float64: return {kDLFloat, 64};
        case DType::complex64: return {kDLComplex, 64};
        case DType::complex128: return {kDLComplex, 128};
    }
    return {-1, -1};
}

// A tensor a test builds itself, as another framework would export one, counting how often
// its deleter runs.
struct CountedTensor {
    DLManagedTensor managed{};
    std::vector<std::int64_t> shape;
    std::vector<std::int64_t> strides;
    int deletions = 0;

    CountedTensor(void* data, DLDataType dtype, std::vector<std::int64_t> shape_in,
                  std::optional<std::vector<std::int64_t>> strides_in = std::nullopt, DLDevice device = {kDLCPU, 0})
        : shape(std::move(shape_in)), strides(strides_in.value_or(std::vector<std::int64_t>{})) {
        DLTensor& t = managed.dl_tensor;
        t.data = data;
        t.device = device;
        t.ndim = static_cast<std::int32_t>(shape.size());
        t.dtype = dtype;
        t.shape = shape.data();
        t.strides = strides_in ? strides.data() : nullptr;
        t.byte_offset = 0;
        managed.manager_ctx = this;
        managed.deleter = [](DLManagedTensor* self) { ++static_cast<CountedTensor*>(self->manager_ctx)->deletions; };
    }
    CountedTensor(const CountedTensor&) = delete;
    CountedTensor& operator=(const CountedTensor&) = delete;
};

constexpr DLDataType kF32{kDLFloat, 32, 1};

}  // namespace

using Catch::Contains;

TEST_CASE("dlpack round trip of every dtype shares the memory and keeps shape, strides and dtype", "[dlpack]") {
    for (DType dtype : all_dtypes()) {
        INFO("dtype " << dtype.name() << ", seed " << kjit::test::seed());
        const Array a = random_array(dtype, {3, 4});
        const Bytes before = host_bytes_c_order(a);
        const long uses = a.buffer().use_count();

        DLManagedTensor* t = a.to_dlpack();
        REQUIRE(t != nullptr);
        REQUIRE(t->deleter != nullptr);
        CHECK(a.buffer().use_count() == uses + 1);  // the tensor keeps the buffer alive
        const DLTensor& dl = t->dl_tensor;
        CHECK(dl.data == a.data());
        CHECK(dl.byte_offset == 0);
        CHECK(dl.device.device_type == kDLCPU);
        CHECK(dl.device.device_id == 0);
        CHECK(dl.ndim == 2);
        CHECK(std::vector<std::int64_t>(dl.shape, dl.shape + 2) == Shape{3, 4});
        REQUIRE(dl.strides != nullptr);
        CHECK(std::vector<std::int64_t>(dl.strides, dl.strides + 2) == Strides{4, 1});
        CHECK(static_cast<int>(dl.dtype.code) == expected_dl_dtype(dtype).first);
        CHECK(static_cast<int>(dl.dtype.bits) == expected_dl_dtype(dtype).second);
        CHECK(dl.dtype.lanes == 1);

        {
            const Array b = Array::from_dlpack(t);
            CHECK(b.data() == a.data());
            CHECK(b.dtype() == dtype);
            CHECK(b.shape() == a.shape());
            CHECK(b.strides() == a.strides());
            CHECK(b.is_host());
            CHECK(host_bytes_c_order(b) == before);
        }
        // The last view of the import died, so the export's deleter ran and let go of the buffer.
        CHECK(a.buffer().use_count() == uses);
        CHECK(host_bytes_c_order(a) == before);
    }
}

TEST_CASE("dlpack export deleter works without an import and outlives the array", "[dlpack]") {
    DLManagedTensor* t = nullptr;
    Bytes before;
    {
        const Array a = random_array(DType::float64, {5});
        before = host_bytes_c_order(a);
        t = a.to_dlpack();
    }
    // The array is gone; the tensor still owns the memory.
    REQUIRE(t->dl_tensor.data != nullptr);
    CHECK(std::memcmp(t->dl_tensor.data, before.data(), before.size()) == 0);
    t->deleter(t);
}

TEST_CASE("dlpack round trip of views with negative, zero and permuted strides", "[dlpack]") {
    for (DType dtype : {DType(DType::float32), DType(DType::complex128), DType(DType::bool_), DType(DType::int8)}) {
        INFO("dtype " << dtype.name() << ", seed " << kjit::test::seed());
        const Array base = random_array(dtype, {4, 5, 6});
        const std::vector<std::pair<const char*, Array>> views{
            {"reversed", base.slice(0, {std::nullopt, std::nullopt, -1})},
            {"reversed and transposed", base.slice(2, {std::nullopt, std::nullopt, -2}).transpose()},
            {"offset slice", base.slice(1, {2, 4, 1}).index(0, 3)},
            {"broadcast", base.index(0, 1).index(0, 2).broadcast_to({3, 6})},
            {"scalar", base.index(0, 3).index(0, 2).index(0, 1)},
            {"empty", base.slice(1, {3, 3, 1})},
        };
        for (const auto& [what, view] : views) {
            INFO(what);
            DLManagedTensor* t = view.to_dlpack();
            CHECK(t->dl_tensor.data == view.data());
            CHECK(t->dl_tensor.ndim == view.ndim());
            CHECK(Strides(t->dl_tensor.strides, t->dl_tensor.strides + view.ndim()) == view.strides());
            const Array back = Array::from_dlpack(t);
            CHECK(back.data() == view.data());
            CHECK(back.shape() == view.shape());
            CHECK(back.strides() == view.strides());
            CHECK(host_bytes_c_order(back) == host_bytes_c_order(view));
            if (view.size() > 0) {
                // The borrowed buffer lies within the original one.
                const auto* lo = static_cast<const unsigned char*>(back.buffer()->data());
                const auto* base_lo = static_cast<const unsigned char*>(base.buffer()->data());
                CHECK(lo >= base_lo);
                CHECK(lo + back.buffer()->size() <= base_lo + base.buffer()->size());
            }
        }
    }
}

TEST_CASE("dlpack import runs the producer's deleter exactly once, when the last view dies", "[dlpack]") {
    std::vector<float> storage(12);
    for (std::size_t i = 0; i < storage.size(); ++i) storage[i] = static_cast<float>(i) + 0.5f;
    CountedTensor tensor(storage.data(), kF32, {3, 4});
    std::optional<Array> a = Array::from_dlpack(&tensor.managed);
    CHECK(tensor.deletions == 0);
    CHECK(a->data() == storage.data());
    CHECK(a->strides() == Strides{4, 1});  // NULL strides mean C order
    std::optional<Array> t = a->transpose();
    std::optional<Array> s = a->slice(1, {std::nullopt, std::nullopt, -1});
    a.reset();
    CHECK(tensor.deletions == 0);
    t.reset();
    CHECK(tensor.deletions == 0);
    CHECK(s->data_as<float>()[0] == 3.5f);
    s.reset();
    CHECK(tensor.deletions == 1);
}

TEST_CASE("dlpack import of a tensor with negative strides covers the memory it reaches", "[dlpack]") {
    std::vector<std::int32_t> storage{10, 11, 12, 13, 14, 15};
    // A (2, 3) view whose rows and columns both run backwards: element (0, 0) is the last one.
    CountedTensor tensor(storage.data() + 5, DLDataType{kDLInt, 32, 1}, {2, 3}, std::vector<std::int64_t>{-3, -1});
    {
        const Array a = Array::from_dlpack(&tensor.managed);
        CHECK(a.data() == storage.data() + 5);
        CHECK(a.buffer()->data() == storage.data());
        CHECK(a.buffer()->size() == 6 * sizeof(std::int32_t));
        CHECK(a.offset() == 5);
        const std::vector<std::int32_t> expected{15, 14, 13, 12, 11, 10};
        Bytes expected_bytes(expected.size() * 4);
        std::memcpy(expected_bytes.data(), expected.data(), expected_bytes.size());
        CHECK(host_bytes_c_order(a) == expected_bytes);
    }
    CHECK(tensor.deletions == 1);
}

TEST_CASE("dlpack import honours byte_offset", "[dlpack]") {
    std::vector<double> storage{1, 2, 3, 4, 5};
    CountedTensor tensor(storage.data(), DLDataType{kDLFloat, 64, 1}, {3});
    tensor.managed.dl_tensor.byte_offset = 2 * sizeof(double);
    {
        const Array a = Array::from_dlpack(&tensor.managed);
        CHECK(a.data() == storage.data() + 2);
        CHECK(a.data_as<double>()[2] == 5.0);
    }
    CHECK(tensor.deletions == 1);
}

TEST_CASE("dlpack import of scalars, empty tensors and kDLCUDAHost memory", "[dlpack]") {
    double scalar = 4.25;
    {
        CountedTensor tensor(&scalar, DLDataType{kDLFloat, 64, 1}, {});
        const Array a = Array::from_dlpack(&tensor.managed);
        CHECK(a.ndim() == 0);
        CHECK(*a.data_as<double>() == 4.25);
    }
    {
        CountedTensor tensor(nullptr, kF32, {0, 5});
        {
            const Array a = Array::from_dlpack(&tensor.managed);
            CHECK(a.shape() == Shape{0, 5});
            CHECK(a.size() == 0);
        }
        CHECK(tensor.deletions == 1);
    }
    {
        // Pinned host memory is plain host memory to kjit.
        CountedTensor tensor(&scalar, DLDataType{kDLFloat, 64, 1}, {1}, std::nullopt, DLDevice{kDLCUDAHost, 0});
        const Array a = Array::from_dlpack(&tensor.managed);
        CHECK(a.is_host());
    }
}

TEST_CASE("dlpack import accepts a tensor without a deleter", "[dlpack]") {
    float value = 1.0f;
    CountedTensor tensor(&value, kF32, {1});
    tensor.managed.deleter = nullptr;
    CHECK(Array::from_dlpack(&tensor.managed).data() == &value);
}

// --- errors: the caller keeps ownership of a tensor from_dlpack refuses ---

TEST_CASE("dlpack import of a null tensor throws TypeError", "[dlpack]") {
    CHECK_THROWS_AS(Array::from_dlpack(nullptr), kjit::TypeError);
    CHECK_THROWS_WITH(Array::from_dlpack(nullptr), Contains("null"));
}

TEST_CASE("dlpack import of an unsupported device throws TypeError naming it", "[dlpack]") {
    float value = 1.0f;
    // Raw numbers: 16 (kDLHexagon) and 99 lie outside DLPack 0.6's enum, as a newer producer's
    // tensor may, so they are stored bytewise rather than as DLDeviceType values.
    const std::vector<std::pair<int, const char*>> cases{
        {kDLOpenCL, "kDLOpenCL"}, {kDLROCM, "kDLROCM"}, {kDLCUDAManaged, "kDLCUDAManaged"},
        {16, "kDLHexagon"}, {99, "device type 99"}};
    for (const auto& [type, name] : cases) {
        INFO(name);
        CountedTensor tensor(&value, kF32, {1});
        std::underlying_type_t<DLDeviceType> raw = static_cast<std::underlying_type_t<DLDeviceType>>(type);
        std::memcpy(&tensor.managed.dl_tensor.device.device_type, &raw, sizeof raw);
        CHECK_THROWS_AS(Array::from_dlpack(&tensor.managed), kjit::TypeError);
        CHECK_THROWS_WITH(Array::from_dlpack(&tensor.managed), Contains(name));
        CHECK(tensor.deletions == 0);
    }
}

TEST_CASE("dlpack import of a vector dtype throws TypeError naming the lanes", "[dlpack]") {
    float value[4] = {1, 2, 3, 4};
    CountedTensor tensor(value, DLDataType{kDLFloat, 32, 4}, {1});
    CHECK_THROWS_AS(Array::from_dlpack(&tensor.managed), kjit::TypeError);
    CHECK_THROWS_WITH(Array::from_dlpack(&tensor.managed), Contains("lanes 4"));
    CHECK(tensor.deletions == 0);
}

TEST_CASE("dlpack import of an unsupported dtype throws TypeError naming it", "[dlpack]") {
    std::uint64_t value = 0;
    const std::vector<std::pair<DLDataType, const char*>> cases{
        {{kDLInt, 24, 1}, "code 0, bits 24"},        {{kDLFloat, 8, 1}, "code 2, bits 8"},
        {{kDLBfloat, 32, 1}, "code 4, bits 32"},     {{kDLComplex, 32, 1}, "code 5, bits 32"},
        {{kDLOpaqueHandle, 64, 1}, "code 3, bits 64"}, {{6, 1, 1}, "code 6, bits 1"},
        {{42, 32, 1}, "code 42, bits 32"},
    };
    for (const auto& [dtype, text] : cases) {
        INFO(text);
        CountedTensor tensor(&value, dtype, {1});
        CHECK_THROWS_AS(Array::from_dlpack(&tensor.managed), kjit::TypeError);
        CHECK_THROWS_WITH(Array::from_dlpack(&tensor.managed), Contains(text));
        CHECK(tensor.deletions == 0);
    }
}

TEST_CASE("dlpack import of a bad shape throws ShapeError", "[dlpack]") {
    float value[4] = {1, 2, 3, 4};
    {
        CountedTensor tensor(value, kF32, {2});
        tensor.managed.dl_tensor.ndim = -1;
        CHECK_THROWS_AS(Array::from_dlpack(&tensor.managed), kjit::ShapeError);
        CHECK_THROWS_WITH(Array::from_dlpack(&tensor.managed), Contains("negative ndim -1"));
    }
    {
        CountedTensor tensor(value, kF32, {2, -2});
        CHECK_THROWS_AS(Array::from_dlpack(&tensor.managed), kjit::ShapeError);
        CHECK_THROWS_WITH(Array::from_dlpack(&tensor.managed), Contains("negative extent"));
    }
    {
        CountedTensor tensor(value, kF32, {2});
        tensor.managed.dl_tensor.shape = nullptr;
        CHECK_THROWS_WITH(Array::from_dlpack(&tensor.managed), Contains("shape is null"));
    }
    {
        const std::int64_t big = std::int64_t{1} << 62;
        CountedTensor tensor(value, kF32, {4, 4}, std::vector<std::int64_t>{big, big});
        CHECK_THROWS_AS(Array::from_dlpack(&tensor.managed), kjit::ShapeError);
        CHECK_THROWS_WITH(Array::from_dlpack(&tensor.managed), Contains("beyond 2**63"));
        CHECK(tensor.deletions == 0);
    }
}

TEST_CASE("dlpack import of a null data pointer for a non-empty tensor throws TypeError", "[dlpack]") {
    CountedTensor tensor(nullptr, kF32, {3});
    CHECK_THROWS_AS(Array::from_dlpack(&tensor.managed), kjit::TypeError);
    CHECK(tensor.deletions == 0);
}

TEST_CASE("dlpack export of a default-constructed array throws TypeError", "[dlpack]") {
    CHECK_THROWS_AS(Array().to_dlpack(), kjit::TypeError);
}

// --- on a GPU ---

TEST_CASE("dlpack round trip of a device array", "[dlpack][gpu]") {
    KJIT_REQUIRE_GPU();
    for (DType dtype : all_dtypes()) {
        INFO("dtype " << dtype.name() << ", seed " << kjit::test::seed());
        const Array host = random_array(dtype, {5, 3});
        const Array dev = Array::from_host(host.data(), dtype, host.shape(), Device::cuda(0));
        DLManagedTensor* t = dev.transpose().to_dlpack();
        CHECK(t->dl_tensor.device.device_type == kDLCUDA);
        CHECK(t->dl_tensor.device.device_id == 0);
        CHECK(t->dl_tensor.data == dev.data());
        const Array back = Array::from_dlpack(t);
        CHECK(back.device() == Device::cuda(0));
        CHECK(back.data() == dev.data());
        CHECK(back.strides() == Strides{1, 3});
        CHECK(host_bytes_c_order(back.to_host()) == host_bytes_c_order(host.transpose()));
    }
}

TEST_CASE("dlpack export of pinned host memory says kDLCUDAHost", "[dlpack][gpu]") {
    KJIT_REQUIRE_GPU();
    const Array pinned = Array::empty({4}, DType::float32, Device::cpu(), kjit::Stream::current(), true);
    DLManagedTensor* t = pinned.to_dlpack();
    CHECK(t->dl_tensor.device.device_type == kDLCUDAHost);
    const Array back = Array::from_dlpack(t);
    CHECK(back.is_host());
    CHECK(back.data() == pinned.data());
}
