// `kjit bench`: the cases of several GPUs (issue 38), each judged against what one GPU or the
// bare driver / NCCL call does in the same run. On a machine with one GPU they report an error
// saying so.
#include <chrono>
#include <sstream>

#include "kjit/nccl.hpp"
#include "kjit/split.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/nccl.hpp"
#include "tools/cli/bench_support.hpp"

namespace kjit::cli::bench {
namespace {

Record needs_two(const std::string& name) {
    Record r;
    r.name = name;
    r.error = "needs 2 GPUs; this machine has " + std::to_string(Device::count());
    return r;
}

// Milliseconds per round of `round` (work queued on both GPUs), host-timed around a
// synchronisation of both streams: median over 7 batches of `batch` rounds.
double both_ms(const std::function<void()>& round, const Stream& s0, const Stream& s1, int batch = 10) {
    return median_host_ms(round, {s0, s1}, 7, batch);
}

// The same case done the reference way (one GPU, the bare driver call, bare NCCL), recorded beside
// kjit's under `impl` for the table's "vs_impl" goal.
void add_reference(const Record& kjit_record, const std::string& impl, double ms, const std::string& note) {
    Record ref = kjit_record;
    ref.impl = impl;
    ref.ms = ms;
    ref.gbps = ref.bytes / (ms * 1e-3) / 1e9;
    ref.note = note;
    extra_records().push_back(ref);
}

std::string fixed(double v, int digits = 3) {
    std::ostringstream o;
    o.precision(digits);
    o << std::fixed << v;
    return o.str();
}

}  // namespace

void add_device_cases(Cases& c) {
    c.emplace_back("mg_axpb_split_f32", [](const Stream& s0) {
        if (Device::count() < 2) return needs_two("mg_axpb_split_f32");
        const std::int64_t n = std::int64_t{1} << 29;
        const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb");
        const Stream s1 = Stream::create(Device::cuda(1));
        const Array x = filled(DType::float32, {n}, 1.5, s0), y = Array::empty({n}, DType::float32, Device::cuda(0), s0);
        const double one = time_ms([&] { axpb.launch({x, 2.0, 1.0, y}, {s0, -1}); }, s0);
        const std::vector<Array> xs = split(x, {Device::cuda(0), Device::cuda(1)}, 0, {s0, s1});
        const Array y0 = Array::empty(xs[0].shape(), DType::float32, Device::cuda(0), s0),
                    y1 = Array::empty(xs[1].shape(), DType::float32, Device::cuda(1), s1);
        const double two = both_ms([&] {
            axpb.launch({xs[0], 2.0, 1.0, y0}, {s0, -1});
            axpb.launch({xs[1], 2.0, 1.0, y1}, {s1, -1});
        }, s0, s1);
        Record r;
        r.name = "mg_axpb_split_f32";
        r.dtype = "float32";
        r.n = n;
        r.bytes = 2.0 * 4 * n;
        r.ms = two;
        r.gbps = r.bytes / (two * 1e-3) / 1e9;
        r.note = "halves on cuda:0 and cuda:1 (host-timed rounds): " + fixed(one / two, 2) + "x one GPU (goal >= 1.9x)";
        add_reference(r, "one_gpu", one, "the whole on cuda:0 (event-timed)");
        return r;
    });
    c.emplace_back("mg_peer_copy_1g", [](const Stream& s0) {
        if (Device::count() < 2) return needs_two("mg_peer_copy_1g");
        const std::int64_t n = std::int64_t{1} << 28;  // float32: 1 GiB
        const Stream s1 = Stream::create(Device::cuda(1));
        const Array x = filled(DType::float32, {n}, 1.0, s0), bare_out = Array::empty({n}, DType::float32, Device::cuda(1), s1);
        detail::Driver& d = detail::driver();
        const bool peer = d.peer_access(0, 1);
        const double kjit_ms = both_ms([&] { (void)x.to(Device::cuda(1), s0, s1); }, s0, s1);
        const double bare_ms = both_ms([&] {
            detail::driver_on(0);
            KJIT_CU_CHECK(d.cuMemcpyPeerAsync(reinterpret_cast<CUdeviceptr>(bare_out.data()), d.primary_context(1),
                                              reinterpret_cast<CUdeviceptr>(x.data()), d.primary_context(0), x.nbytes(), s0.handle()));
        }, s0, s1);
        Record r;
        r.name = "mg_peer_copy_1g";
        r.dtype = "float32";
        r.n = n;
        r.bytes = static_cast<double>(x.nbytes());
        r.ms = kjit_ms;
        r.gbps = r.bytes / (kjit_ms * 1e-3) / 1e9;
        r.note = std::string(peer ? "peer to peer" : "staged (no peer access)") + ", allocation included: " +
                 fixed(100 * bare_ms / kjit_ms, 1) + "% of the bare copy (goal >= 90%)";
        add_reference(r, "driver", bare_ms, "cuMemcpyPeerAsync into a kept buffer");
        return r;
    });
    c.emplace_back("mg_first_call_second_device", [](const Stream& s0) {
        if (Device::count() < 2) return needs_two("mg_first_call_second_device");
        // A kernel no earlier run has: its first call on cuda:0 compiles it, and the one on
        // cuda:1 (a GPU of the same kind) should find everything in memory.
        const std::string body =
            "y = x * " + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000003) + " + 1";
        const ElementwiseKernel k("T x", "T y", body, "mg_first_call");
        const Stream s1 = Stream::create(Device::cuda(1));
        const Array x0 = filled(DType::float32, {1000}, 1.0, s0), x1 = Array::empty({1000}, DType::float32, Device::cuda(1), s1),
                    y1 = Array::empty({1000}, DType::float32, Device::cuda(1), s1);
        k.launch({x0, Array::empty({1000}, DType::float32, Device::cuda(0), s0)}, {s0, -1});
        s0.synchronize();
        s1.synchronize();
        const std::uint64_t compiles = cache_stats().compiles;
        const auto t0 = Clock::now();
        k.launch({x1, y1}, {s1, -1});
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        s1.synchronize();
        Record r;
        r.name = "mg_first_call_second_device";
        r.dtype = "float32";
        r.n = 1000;
        r.ms = ms;
        r.note = "host time of the first launch on cuda:1 after one on cuda:0; compiles during it: " +
                 std::to_string(cache_stats().compiles - compiles) + " (goal <= 0.3 ms, none)";
        return r;
    });
    c.emplace_back("mg_allreduce_256m_f32", [](const Stream& s0) {
        if (Device::count() < 2) return needs_two("mg_allreduce_256m_f32");
        if (!nccl::available()) {
            Record r;
            r.name = "mg_allreduce_256m_f32";
            r.error = nccl::no_nccl_reason();
            return r;
        }
        const std::int64_t n = std::int64_t{1} << 26;  // float32: 256 MiB
        const Stream s1 = Stream::create(Device::cuda(1));
        std::vector<nccl::Communicator> comms = nccl::Communicator::local({Device::cuda(0), Device::cuda(1)});
        const std::vector<Array> bufs{filled(DType::float32, {n}, 1.0, s0), Array::empty({n}, DType::float32, Device::cuda(1), s1)};
        const std::vector<Stream> streams{s0, s1};
        const double kjit_ms = both_ms([&] { nccl::all_reduce(comms, bufs, bufs, nccl::Op::sum, streams); }, s0, s1);
        const detail::NcclApi& api = detail::nccl();
        const double bare_ms = both_ms([&] {
            api.ncclGroupStart();
            for (std::size_t k = 0; k < 2; ++k)
                api.ncclAllReduce(bufs[k].data(), bufs[k].data(), static_cast<std::size_t>(n), detail::kNcclFloat32,
                                  detail::kNcclSum, static_cast<detail::NcclComm>(comms[k].handle()), streams[k].handle());
            api.ncclGroupEnd();
        }, s0, s1);
        Record r;
        r.name = "mg_allreduce_256m_f32";
        r.dtype = "float32";
        r.n = n;
        r.bytes = 4.0 * n;
        r.ms = kjit_ms;
        r.gbps = r.bytes / (kjit_ms * 1e-3) / 1e9;  // NCCL's algorithm bandwidth
        r.note = "in place, 2 ranks, one NCCL group: " + fixed(100 * bare_ms / kjit_ms, 1) + "% of bare NCCL (goal >= 95%)";
        add_reference(r, "nccl", bare_ms, "ncclAllReduce on both ranks in one group, same buffers");
        return r;
    });
}

}  // namespace kjit::cli::bench
