// Buffers: the stream-ordered pool, out-of-memory and recovery, pinned and borrowed memory.
#include "test_support.hpp"

#include <cstring>

#include "fake_driver.hpp"
#include "kjit/array.hpp"
#include "kjit/buffer.hpp"
#include "kjit/error.hpp"
#include "kjit/event.hpp"

using kjit::Array;
using kjit::Buffer;
using kjit::DType;
using Catch::Matchers::Contains;

TEST_CASE("host buffers: aligned, zero-sized, borrowed", "[memory]") {
    auto b = Buffer::allocate_host(100);
    CHECK(b->size() == 100);
    CHECK(b->kind() == Buffer::Kind::host);
    CHECK(b->device().is_cpu());
    CHECK(reinterpret_cast<std::uintptr_t>(b->data()) % 64 == 0);
    std::memset(b->data(), 0x5a, 100);  // writable across the whole size (ASan checks it)
    CHECK(Buffer::allocate_host(0)->data() == nullptr);

    int released = 0;
    {
        std::shared_ptr<void> keep(nullptr, [&released](void*) { ++released; });
        int storage[4] = {};
        auto borrowed = Buffer::borrow(storage, sizeof storage, kjit::Device::cpu(), keep);
        keep.reset();
        CHECK(released == 0);  // the buffer holds it
        CHECK(borrowed->data() == storage);
    }
    CHECK(released == 1);
}

TEST_CASE("out of memory trims the pool, retries, then throws OutOfMemory; the next fit works", "[memory]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_driver(), 1);
    auto& st = kjit::test::fake_state();
    st.free_bytes = 1000;
    st.total_bytes = 4000;
    const kjit::Stream s = kjit::Stream::wrap(nullptr, kjit::Device::cuda(0));
    {
        auto a = Buffer::allocate_device(600, s);
        CHECK(a->kind() == Buffer::Kind::device_pool);
        CHECK(a->data() != nullptr);
    }
    CHECK(st.free_calls == 1);
    CHECK(st.cached_bytes == 600);  // freed into the pool, not to the driver
    // 800 bytes fit only once the pool gives its cached 600 back: the retry must find them.
    auto b = Buffer::allocate_device(800, s);
    CHECK(st.trim_calls == 1);
    CHECK(st.synchronize_calls == 1);
    // Now nothing fits: the error names the size asked and what is free.
    try {
        Buffer::allocate_device(5000, s);
        FAIL("allocation did not throw");
    } catch (const kjit::OutOfMemory& e) {
        CHECK(e.code() == CUDA_ERROR_OUT_OF_MEMORY);
        CHECK(e.requested_bytes() == 5000);
        CHECK(e.free_bytes() == 200);
        CHECK_THAT(std::string(e.what()), Contains("cannot allocate 5000 bytes") && Contains("200 bytes (0 MiB) free"));
    }
    // The runtime is still usable.
    auto c = Buffer::allocate_device(100, s);
    CHECK(c->data() != nullptr);
    CHECK(Buffer::allocate_device(0, s)->data() == nullptr);
}

TEST_CASE("device buffers are freed on the stream that used them last", "[memory]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_driver(), 1);
    const kjit::Stream s0 = kjit::Stream::wrap(nullptr, kjit::Device::cuda(0));
    const kjit::Stream s1 = kjit::Stream::wrap(reinterpret_cast<CUstream>(0x77), kjit::Device::cuda(0));
    auto b = Buffer::allocate_device(64, s0);
    CHECK(b->last_stream() == s0);
    b->record_stream(s1);
    CHECK(b->last_stream() == s1);
    const Array a = Array::view_of(b, DType::int8, {64}, {1});
    a.record_stream(s0);
    CHECK(b->last_stream() == s0);
}

TEST_CASE("a stream of another device is refused", "[memory]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_driver(), 2);
    const kjit::Stream on1 = kjit::Stream::wrap(reinterpret_cast<CUstream>(0x55), kjit::Device::cuda(1));
    CHECK_THROWS_WITH(Array::empty({4}, DType::float32, kjit::Device::cuda(0), on1),
                      Contains("belongs to cuda:1") && Contains("cuda:0"));
}

TEST_CASE("GPU allocation, reuse and free", "[gpu][memory]") {
    KJIT_REQUIRE_GPU();
    for (int round = 0; round < 100; ++round) {
        auto b = Buffer::allocate_device(std::size_t{1} << 20);
        REQUIRE(b->data() != nullptr);
    }
    auto [free_before, total] = kjit::Device::cuda(0).memory_info();
    CHECK(free_before <= total);
    CHECK(total > 0);
}

TEST_CASE("GPU out of memory, then recovery", "[gpu][memory]") {
    KJIT_REQUIRE_GPU();
    const auto [free_bytes, total] = kjit::Device::cuda(0).memory_info();
    const std::size_t too_much = total * 2;
    try {
        Buffer::allocate_device(too_much);
        FAIL("allocating twice the device memory did not throw");
    } catch (const kjit::OutOfMemory& e) {
        CHECK(e.code() == CUDA_ERROR_OUT_OF_MEMORY);
        CHECK(e.requested_bytes() == too_much);
        CHECK(e.free_bytes() > 0);
        CHECK_THAT(std::string(e.what()), Contains(std::to_string(too_much) + " bytes"));
    }
    // A real allocation and copy work right after.
    const auto src = kjit::test::random_elements(DType::float32, 1 << 16);
    const Array a = Array::from_host(src.data(), DType::float32, {1 << 16}, kjit::Device::cuda(0));
    std::vector<unsigned char> back(src.size(), 0xEE);
    a.copy_to_host(back.data());
    CHECK(back == src);
}

TEST_CASE("pinned host memory copies asynchronously and correctly", "[gpu][memory]") {
    KJIT_REQUIRE_GPU();
    const std::int64_t n = 1 << 20;
    const Array pinned = Array::empty({n}, DType::float64, kjit::Device::cpu(), kjit::Stream(), /*pinned=*/true);
    CHECK(pinned.buffer()->kind() == Buffer::Kind::host_pinned);
    const auto src = kjit::test::random_elements(DType::float64, n);
    std::memcpy(pinned.data(), src.data(), src.size());
    const kjit::Stream s = kjit::Stream::create();
    const Array d = pinned.to(kjit::Device::cuda(0), s);
    s.synchronize();
    const Array back_pinned = Array::empty({n}, DType::float64, kjit::Device::cpu(), kjit::Stream(), true);
    std::memset(back_pinned.data(), 0xCD, back_pinned.nbytes());
    d.copy_to_host(back_pinned.data(), s);
    CHECK(std::memcmp(back_pinned.data(), src.data(), src.size()) == 0);
}

TEST_CASE("an external device pointer is borrowed, never freed by kjit", "[gpu][memory]") {
    KJIT_REQUIRE_GPU();
    const auto src = kjit::test::random_elements(DType::float32, 256);
    std::vector<float> values(256);
    std::memcpy(values.data(), src.data(), src.size());
    const Array owner = Array::from_host(src.data(), DType::float32, {256}, kjit::Device::cuda(0));
    {
        const Array wrapped = Array::wrap(owner.data(), DType::float32, {16, 16}, kjit::Device::cuda(0));
        CHECK(wrapped.buffer()->kind() == Buffer::Kind::borrowed);
        CHECK(wrapped.data() == owner.data());
        const Array col = wrapped.transpose().index(0, 3);  // wrapped[:, 3]
        std::vector<float> got(16, -1.0f);
        col.copy_to_host(got.data());
        for (int j = 0; j < 16; ++j) CHECK(got[j] == values[j * 16 + 3]);
    }
    // The memory is still the owner's and still valid after the borrowing arrays died.
    std::vector<unsigned char> back(src.size(), 0);
    owner.copy_to_host(back.data());
    CHECK(back == src);
}
