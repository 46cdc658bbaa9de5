// Streams and events: ownership, borrowing, current stream, synchronisation and timing.
#include "test_support.hpp"

#include <cstring>
#include <thread>

#include "fake_driver.hpp"
#include "kjit/array.hpp"
#include "kjit/error.hpp"
#include "kjit/event.hpp"
#include "kjit/stream.hpp"

using kjit::Array;
using kjit::DType;
using kjit::Event;
using kjit::Stream;

TEST_CASE("the current stream is per thread and guarded", "[stream]") {
    CHECK(Stream::current().handle() == nullptr);  // legacy default until changed
    const Stream borrowed = Stream::wrap(reinterpret_cast<CUstream>(0x1234), kjit::Device::cuda(0));
    CHECK_FALSE(borrowed.owns_handle());
    {
        kjit::CurrentStreamGuard guard(borrowed);
        CHECK(Stream::current() == borrowed);
        Stream in_thread;
        std::thread([&] { in_thread = Stream::current(); }).join();
        CHECK(in_thread.handle() == nullptr);  // other threads are unaffected
    }
    CHECK(Stream::current().handle() == nullptr);
    CHECK(Stream::per_thread_default(kjit::Device::cuda(0)).handle() == CU_STREAM_PER_THREAD);
}

TEST_CASE("for_device binds default streams and refuses foreign ones", "[stream]") {
    const Stream neutral;
    CHECK(neutral.for_device(kjit::Device::cuda(2)).device() == kjit::Device::cuda(2));
    const Stream on1 = Stream::wrap(reinterpret_cast<CUstream>(0x10), kjit::Device::cuda(1));
    CHECK(on1.for_device(kjit::Device::cuda(1)) == on1);
    CHECK_THROWS_AS(on1.for_device(kjit::Device::cuda(0)), kjit::Error);
    CHECK_THROWS_AS(neutral.for_device(kjit::Device::cpu()), kjit::Error);
}

TEST_CASE("an owned stream is destroyed once, when its last copy goes", "[stream]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_driver(), 1);
    const auto& st = kjit::test::fake_state();
    Stream keep;
    {
        const Stream s = Stream::create(kjit::Device::cuda(0));
        CHECK(st.streams_created == 1);
        CHECK(st.streams_destroyed == 0);
        keep = s;
        const Stream borrowed = Stream::wrap(s.handle(), kjit::Device::cuda(0));
        CHECK_FALSE(borrowed.owns_handle());
    }
    CHECK(st.streams_destroyed == 0);  // `keep` still owns it; the borrowed copy never destroys
    Stream moved = std::move(keep);
    CHECK(st.streams_destroyed == 0);
    moved = Stream();
    CHECK(st.streams_destroyed == 1);
}

TEST_CASE("owned streams live as long as a copy does", "[gpu][stream]") {
    KJIT_REQUIRE_GPU();
    Stream copy;
    {
        const Stream s = Stream::create();
        CHECK(s.owns_handle());
        copy = s;
    }
    CHECK(copy.owns_handle());
    CHECK_NOTHROW(copy.synchronize());
    CHECK(copy.query());
    Stream moved = std::move(copy);
    CHECK(moved.owns_handle());
    CHECK_NOTHROW(moved.synchronize());
}

TEST_CASE("a borrowed stream is used and not destroyed", "[gpu][stream]") {
    KJIT_REQUIRE_GPU();
    const Stream owner = Stream::create();
    {
        const Stream borrowed = Stream::wrap(owner.handle());
        CHECK_FALSE(borrowed.owns_handle());
        const auto src = kjit::test::random_elements(DType::int64, 4096);
        const Array a = Array::from_host(src.data(), DType::int64, {4096}, kjit::Device::cuda(0), borrowed);
        std::vector<unsigned char> back(src.size(), 0);
        a.copy_to_host(back.data(), borrowed);
        CHECK(back == src);
    }
    CHECK_NOTHROW(owner.synchronize());  // still alive after the borrowing copy died
}

TEST_CASE("events order streams and time work", "[gpu][stream][event]") {
    KJIT_REQUIRE_GPU();
    const Stream s1 = Stream::create();
    const Stream s2 = Stream::create();
    const std::int64_t n = std::int64_t{1} << 24;  // 128 MiB of float64
    const auto src = kjit::test::random_elements(DType::float64, n);
    Event start, end;
    start.record(s1);
    const Array a = Array::from_host(src.data(), DType::float64, {n}, kjit::Device::cuda(0), s1);
    const Array b = a.to(kjit::Device::cuda(0), s1);
    end.record(s1);
    end.wait_on(s2);  // s2 sees b complete
    std::vector<unsigned char> back(src.size(), 0);
    b.copy_to_host(back.data(), s2);
    CHECK(back == src);
    end.synchronize();
    CHECK(end.query());
    const float ms = Event::elapsed_ms(start, end);
    CHECK(ms > 0.0f);
    WARN("host->device + device->device of 128 MiB: " << ms << " ms");
    Event untimed(false);
    untimed.record(s2);
    untimed.synchronize();
    CHECK_THROWS_AS(Event::elapsed_ms(start, untimed), kjit::CudaError);
    // Events move; the moved-from one is empty.
    Event moved = std::move(start);
    CHECK(moved.handle() != nullptr);
}

TEST_CASE("two streams copy at once without mixing data", "[gpu][stream]") {
    KJIT_REQUIRE_GPU();
    const Stream s[2] = {Stream::create(), Stream::create()};
    std::vector<unsigned char> src[2];
    Array dev[2];
    for (int k = 0; k < 2; ++k) {
        src[k] = kjit::test::random_elements(DType::float32, 1 << 20);
        dev[k] = Array::from_host(src[k].data(), DType::float32, {1 << 20}, kjit::Device::cuda(0), s[k]);
    }
    for (int k = 0; k < 2; ++k) {
        std::vector<unsigned char> back(src[k].size(), 0);
        dev[k].copy_to_host(back.data(), s[k]);
        CHECK(back == src[k]);
    }
}
