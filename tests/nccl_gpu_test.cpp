// kjit::nccl with the real NCCL on GPUs (issue 38): one-rank communicators on one GPU, then
// collectives of random data on two GPUs against host sums. Each test skips visibly without its
// GPUs or without NCCL (KJIT_NCCL_LIBRARY, docs/NCCL.md). The fake-NCCL tests of the same calls:
// tests/nccl_test.cpp.
#include "test_support.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <thread>

#include "kjit/nccl.hpp"
#include "kjit/reductions.hpp"
#include "runtime/detail/nccl.hpp"

using kjit::Array;
using kjit::Device;
using kjit::DType;
namespace nccl = kjit::nccl;
namespace detail = kjit::detail;

// NCCL loaded, or a visible skip.
#define KJIT_REQUIRE_NCCL()                                                \
    do {                                                                   \
        if (!::kjit::nccl::available()) {                                  \
            WARN("SKIPPED (no NCCL): " << ::kjit::nccl::no_nccl_reason()); \
            return;                                                        \
        }                                                                  \
    } while (0)

// ------------------------------------------------------------------ one GPU, the real NCCL

TEST_CASE("one-rank communicators on one GPU: the real NCCL's calls as kjit makes them", "[nccl][gpu]") {
    KJIT_REQUIRE_GPU();
    KJIT_REQUIRE_NCCL();
    INFO("NCCL " << detail::nccl_version_string(nccl::version()));
    // One rank: every collective is a copy (or nothing), which checks the calls' arguments and
    // types against the real library without a second GPU.
    std::vector<nccl::Communicator> comms = nccl::Communicator::local({Device::cuda(0)});
    REQUIRE(comms.size() == 1);
    std::vector<float> values(1000);
    std::iota(values.begin(), values.end(), 1.0f);
    const Array send = Array::from_host(values.data(), DType::float32, {1000}, Device::cuda(0));
    const Array recv = Array::empty({1000}, DType::float32, Device::cuda(0));
    nccl::all_reduce(comms[0], send, recv, nccl::Op::max);
    std::vector<float> back(1000);
    recv.copy_to_host(back.data());
    CHECK(back == values);

    const Array gathered = Array::empty({1000}, DType::float32, Device::cuda(0));
    nccl::all_gather(comms, {send}, {gathered});
    gathered.copy_to_host(back.data());
    CHECK(back == values);

    const kjit::Stream stream = kjit::Stream::create(Device::cuda(0));
    const Array scattered = Array::empty({1000}, DType::float32, Device::cuda(0));
    Device::cuda(0).synchronize();
    nccl::reduce_scatter(comms[0], send, scattered, nccl::Op::sum, stream);
    scattered.copy_to_host(back.data(), stream);
    CHECK(back == values);
    nccl::broadcast(comms[0], send, 0);
    comms[0].check_async_error();

    // A communicator from an id, one rank.
    const nccl::Communicator solo(nccl::UniqueId::create(), 1, 0, Device::cuda(0));
    const std::vector<std::int64_t> ints = {1, -2, 3};
    const Array x = Array::from_host(ints.data(), DType::int64, {3}, Device::cuda(0));
    nccl::all_reduce(solo, x, x, nccl::Op::prod);
    std::vector<std::int64_t> ints_back(3);
    x.copy_to_host(ints_back.data());
    CHECK(ints_back == ints);
    Device::cuda(0).synchronize();
}

// ------------------------------------------------------------------ two GPUs

namespace {
std::vector<float> random_floats(std::size_t n) {
    std::uniform_real_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(kjit::test::rng());
    return v;
}
}  // namespace

TEST_CASE("an NCCL all-reduce of partial reductions on two GPUs matches the host", "[nccl][gpu][gpu2]") {
    KJIT_REQUIRE_GPUS(2);
    KJIT_REQUIRE_NCCL();
    INFO("seed " << kjit::test::seed() << ", NCCL " << detail::nccl_version_string(nccl::version()));
    const std::size_t n = (std::size_t{1} << 22) + 7;
    const std::vector<float> host = random_floats(n);
    double reference = 0;
    for (float x : host) reference += x;
    const std::size_t half = n / 2;
    std::vector<nccl::Communicator> comms = nccl::Communicator::local({Device::cuda(0), Device::cuda(1)});
    const Array part0 = Array::from_host(host.data(), DType::float32, {static_cast<std::int64_t>(half)}, Device::cuda(0));
    const Array part1 =
        Array::from_host(host.data() + half, DType::float32, {static_cast<std::int64_t>(n - half)}, Device::cuda(1));
    const Array sum0 = kjit::sum(part0), sum1 = kjit::sum(part1);  // 0-d, on each device
    REQUIRE(sum0.device() == Device::cuda(0));
    REQUIRE(sum1.device() == Device::cuda(1));
    float partial[2] = {0, 0};
    sum0.copy_to_host(&partial[0]);
    sum1.copy_to_host(&partial[1]);
    nccl::all_reduce(comms, {sum0, sum1}, {sum0, sum1});  // in place
    float total[2] = {0, 0};
    sum0.copy_to_host(&total[0]);
    sum1.copy_to_host(&total[1]);
    INFO("partials " << partial[0] << " + " << partial[1] << ", all-reduced " << total[0] << " and " << total[1]
                     << ", host " << reference);
    CHECK(total[0] == total[1]);
    CHECK(total[0] == partial[0] + partial[1]);
    CHECK(std::fabs(total[0] - reference) <= 1e-5 * reference);

    // Op::max and a separate recv array, on each device's own stream.
    const std::vector<kjit::Stream> streams = {kjit::Stream::create(Device::cuda(0)), kjit::Stream::create(Device::cuda(1))};
    const Array max0 = kjit::max(part0), max1 = kjit::max(part1);
    const Array out0 = Array::empty({}, DType::float32, Device::cuda(0)), out1 = Array::empty({}, DType::float32, Device::cuda(1));
    // The reductions ran on the default streams, which the new streams do not wait for.
    Device::cuda(0).synchronize();
    Device::cuda(1).synchronize();
    nccl::all_reduce(comms, {max0, max1}, {out0, out1}, nccl::Op::max, streams);
    float m[2];
    out0.copy_to_host(&m[0], streams[0]);
    out1.copy_to_host(&m[1], streams[1]);
    const float host_max = *std::max_element(host.begin(), host.end());
    CHECK(m[0] == host_max);
    CHECK(m[1] == host_max);
}

TEST_CASE("NCCL all_gather and reduce_scatter and broadcast round trips on two GPUs", "[nccl][gpu][gpu2]") {
    KJIT_REQUIRE_GPUS(2);
    KJIT_REQUIRE_NCCL();
    std::vector<nccl::Communicator> comms = nccl::Communicator::local({Device::cuda(0), Device::cuda(1)});
    const std::int64_t m = 1000;
    std::vector<std::int32_t> data[2];
    for (int r = 0; r < 2; ++r) {
        data[r].resize(2 * m);
        for (std::int64_t i = 0; i < 2 * m; ++i) data[r][i] = static_cast<std::int32_t>(r * 100000 + i);
    }
    auto read = [](const Array& a) {
        std::vector<std::int32_t> v(static_cast<std::size_t>(a.size()));
        a.copy_to_host(v.data());
        return v;
    };

    SECTION("all_gather: every rank's block, rank after rank") {
        const Array s0 = Array::from_host(data[0].data(), DType::int32, {m}, Device::cuda(0));
        const Array s1 = Array::from_host(data[1].data(), DType::int32, {m}, Device::cuda(1));
        const Array r0 = Array::empty({2, m}, DType::int32, Device::cuda(0));
        const Array r1 = Array::empty({2, m}, DType::int32, Device::cuda(1));
        nccl::all_gather(comms, {s0, s1}, {r0, r1});
        std::vector<std::int32_t> expected(data[0].begin(), data[0].begin() + m);
        expected.insert(expected.end(), data[1].begin(), data[1].begin() + m);
        CHECK(read(r0) == expected);
        CHECK(read(r1) == expected);
    }
    SECTION("reduce_scatter: rank r gets block r of the sum") {
        const Array s0 = Array::from_host(data[0].data(), DType::int32, {2 * m}, Device::cuda(0));
        const Array s1 = Array::from_host(data[1].data(), DType::int32, {2 * m}, Device::cuda(1));
        const Array r0 = Array::empty({m}, DType::int32, Device::cuda(0));
        const Array r1 = Array::empty({m}, DType::int32, Device::cuda(1));
        nccl::reduce_scatter(comms, {s0, s1}, {r0, r1});
        const std::vector<std::int32_t> got[2] = {read(r0), read(r1)};
        for (int r = 0; r < 2; ++r)
            for (std::int64_t i = 0; i < m; ++i) {
                INFO("rank " << r << ", element " << i);
                REQUIRE(got[r][i] == data[0][r * m + i] + data[1][r * m + i]);
            }
    }
    SECTION("broadcast from rank 1, float64, and complex64 as bytes") {
        std::vector<double> values(777);
        std::iota(values.begin(), values.end(), 0.5);
        const std::vector<double> zeros(values.size(), 0.0);
        const Array a0 = Array::from_host(zeros.data(), DType::float64, {777}, Device::cuda(0));
        const Array a1 = Array::from_host(values.data(), DType::float64, {777}, Device::cuda(1));
        nccl::broadcast(comms, {a0, a1}, 1);
        std::vector<double> back(values.size());
        a0.copy_to_host(back.data());
        CHECK(back == values);
        const Array c0 = Array::from_host(values.data(), DType::complex64, {388}, Device::cuda(0));
        const Array c1 = Array::from_host(zeros.data(), DType::complex64, {388}, Device::cuda(1));
        nccl::broadcast(comms, {c0, c1}, 0);
        std::vector<unsigned char> bytes0(c0.nbytes()), bytes1(c1.nbytes());
        c0.copy_to_host(bytes0.data());
        c1.copy_to_host(bytes1.data());
        CHECK(bytes0 == bytes1);
    }
}

TEST_CASE("communicators from a UniqueId with one thread per GPU all-reduce on two GPUs", "[nccl][gpu][gpu2]") {
    KJIT_REQUIRE_GPUS(2);
    KJIT_REQUIRE_NCCL();
    // What two processes would do, one rank per thread: the id's bytes are what travels.
    const nccl::UniqueId id = nccl::UniqueId::create();
    const std::string sent = id.to_hex();
    double got[2] = {0, 0};
    std::string errors[2];
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r) {
        ranks.emplace_back([&, r] {
            try {
                const nccl::Communicator comm(nccl::UniqueId::from_hex(sent), 2, r, Device::cuda(r));
                const std::vector<double> mine(4096, r + 1.0);
                const Array x = Array::from_host(mine.data(), DType::float64, {4096}, Device::cuda(r));
                nccl::all_reduce(comm, x, x, nccl::Op::sum);
                std::vector<double> back(4096);
                x.copy_to_host(back.data());
                got[r] = *std::min_element(back.begin(), back.end()) + *std::max_element(back.begin(), back.end());
                Device::cuda(r).synchronize();
            } catch (const std::exception& e) {
                errors[r] = e.what();
            }
        });
    }
    for (std::thread& t : ranks) t.join();
    INFO(errors[0] << " / " << errors[1]);
    CHECK(errors[0].empty());
    CHECK(errors[1].empty());
    CHECK(got[0] == 6.0);  // every element 1 + 2, min + max
    CHECK(got[1] == 6.0);
}
