// `kjit bench`: the elementwise cases of issue 5 (bandwidth, host time per call), and the copy
// ceiling they are judged against.
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>

#include "jit/kernels/elementwise/calls.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/kernel_args.hpp"
#include "tools/cli/bench_support.hpp"

namespace kjit::cli::bench {

namespace {

// The floor of the host-time case: the function kjit's call of y = a*x + b on 1000 float32
// launches (the small variant, a and b passed by value), with its argument struct laid out as
// the launcher lays it out, launched by cuLaunchKernel alone. y is poisoned first, so that
// wrote_y() shows the launches ran.
class BareLaunch {
public:
    BareLaunch(const ElementwiseKernel& axpb, const Array& x, const Array& y, const Stream& s)
        : driver_(detail::driver_on(0)), y_(y) {
        const TypeBinding types{{"T", DType::float32}};
        function_ = jit::kernels::elementwise_variants(axpb, types, jit::kernels::ModuleVariant{{false, true, true, false}, {}}, 0)
                        .function(jit::kernels::ElementwiseEntry::small32);
        using detail::ArgField;
        const detail::ArgsLayout l = detail::args_layout({ArgField::pointer, ArgField::value, ArgField::value, ArgField::pointer},
                                                         std::vector<DType>(4, DType::float32));
        const void* xp = x.data();
        const void* yp = y.data();
        const float a = 2.0f, b = 1.0f;
        const long long n = 1000;
        std::memcpy(args_ + l.slots[0].offset, &xp, sizeof xp);
        std::memcpy(args_ + l.slots[1].offset, &a, sizeof a);
        std::memcpy(args_ + l.slots[2].offset, &b, sizeof b);
        std::memcpy(args_ + l.slots[3].offset, &yp, sizeof yp);
        std::memcpy(args_ + l.n_offset, &n, sizeof n);
        const std::vector<float> poison(1000, std::numeric_limits<float>::quiet_NaN());
        KJIT_CU_CHECK(driver_.cuMemcpyHtoDAsync(y_pointer(), poison.data(), 4000, s.handle()));
        s.synchronize();
    }
    void launch(const Stream& s) {
        void* params[] = {args_};
        KJIT_CU_CHECK(driver_.cuLaunchKernel(function_, 4, 1, 1, 256, 1, 1, 0, s.handle(), params, nullptr));
    }
    bool wrote_y(const Stream& s) const {
        std::vector<float> host(1000);
        KJIT_CU_CHECK(driver_.cuMemcpyDtoHAsync(host.data(), y_pointer(), 4000, s.handle()));
        s.synchronize();
        return std::all_of(host.begin(), host.end(), [](float v) { return v == 4.0f; });
    }

private:
    CUdeviceptr y_pointer() const { return reinterpret_cast<CUdeviceptr>(y_.data()); }

    detail::Driver& driver_;  // looked up once: the timed loop is the launch alone
    Array y_;
    CUfunction function_ = nullptr;
    alignas(16) unsigned char args_[64] = {};
};

}  // namespace

void add_elementwise_cases(Cases& c) {
    const std::int64_t n28 = std::int64_t{1} << 28;
    c.emplace_back("copy", [=](const Stream& s) {
        const Array x = filled(DType::float32, {n28}, 1.0, s), y = Array::empty({n28}, DType::float32, Device::cuda(0), s);
        detail::Driver& d = detail::driver_on(0);
        return bandwidth_case("copy", DType::float32, n28, 2.0 * 4 * n28, [&] {
            KJIT_CU_CHECK(d.cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(y.data()), reinterpret_cast<CUdeviceptr>(x.data()),
                                              x.nbytes(), s.handle()));
        }, s, "cuMemcpyDtoDAsync, bytes read + written");
    });
    auto axpb_case = [=](const std::string& name, DType t) {
        return [=](const Stream& s) {
            const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb");
            const Array x = filled(t, {n28}, 1.5, s), y = Array::empty({n28}, t, Device::cuda(0), s);
            return bandwidth_case(name, t, n28, 2.0 * t.itemsize() * n28, [&] { axpb.launch({x, 2.0, 1.0, y}, {s, -1}); }, s,
                                  "a, b scalars; x read, y written");
        };
    };
    c.emplace_back("ew_axpb_f32", axpb_case("ew_axpb_f32", DType::float32));
    c.emplace_back("ew_axpb_f16", axpb_case("ew_axpb_f16", DType::float16));
    c.emplace_back("ew_axpb_bf16", axpb_case("ew_axpb_bf16", DType::bfloat16));
    c.emplace_back("ew_abc_f32", [=](const Stream& s) {
        const ElementwiseKernel k("T a, T b, T c", "T y", "y = a * b + c", "fma3");
        const Array a = filled(DType::float32, {n28}, 1.5, s), b = filled(DType::float32, {n28}, 2.0, s),
                    cc = filled(DType::float32, {n28}, 0.5, s), y = Array::empty({n28}, DType::float32, Device::cuda(0), s);
        return bandwidth_case("ew_abc_f32", DType::float32, n28, 4.0 * 4 * n28, [&] { k.launch({a, b, cc, y}, {s, -1}); }, s,
                              "three arrays read, one written");
    });
    const std::int64_t side = 16384;
    c.emplace_back("ew_rowadd_f32", [=](const Stream& s) {
        const ElementwiseKernel k("T x, T r", "T y", "y = x + r", "row_add");
        const Array x = filled(DType::float32, {side, side}, 1.5, s), row = filled(DType::float32, {side}, 2.0, s),
                    y = Array::empty({side, side}, DType::float32, Device::cuda(0), s);
        return bandwidth_case("ew_rowadd_f32", DType::float32, side * side, 2.0 * 4 * side * side + 4.0 * side,
                              [&] { k.launch({x, row, y}, {s, -1}); }, s, "x + row[None, :]");
    });
    c.emplace_back("ew_trowadd_f32", [=](const Stream& s) {
        const ElementwiseKernel k("T x, T r", "T y", "y = x + r", "row_add");
        const Array x = filled(DType::float32, {side, side}, 1.5, s), row = filled(DType::float32, {side}, 2.0, s),
                    y = Array::empty({side, side}, DType::float32, Device::cuda(0), s);
        const Array xt = x.transpose();
        return bandwidth_case("ew_trowadd_f32", DType::float32, side * side, 2.0 * 4 * side * side + 4.0 * side,
                              [&] { k.launch({xt, row, y}, {s, -1}); }, s, "x.T + row[None, :], C-ordered output");
    });
    c.emplace_back("ew_inplace_f64", [=](const Stream& s) {
        const ElementwiseKernel k("T x", "T y", "y = x + 5", "add5");
        const std::int64_t n = 300000000;
        const Array x = filled(DType::float64, {n}, 1.0, s);
        return bandwidth_case("ew_inplace_f64", DType::float64, n, 2.0 * 8 * n, [&] { k.launch({x, x}, {s, -1}); }, s,
                              "x = x + 5 in place");
    });
    // Host time per call at 1000 elements. As the peers measure it: many calls, then one sync, all
    // timed (the GPU's own pace can bound it); variants: calls in batches of 100 between syncs,
    // only the calls timed (kjit's host cost alone), calls that allocate their output, and the
    // floor: the very function and argument struct kjit launches, by cuLaunchKernel alone (what
    // the host and driver of this run charge for a launch, kjit's work left out).
    enum class HostMode { peers, batches, allocating, bare };
    auto host_case = [=](HostMode mode) {
        return [=](const Stream& s) {
            const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb");
            const Array x = filled(DType::float32, {1000}, 1.5, s), y = Array::empty({1000}, DType::float32, Device::cuda(0), s);
            const CallOptions o{s, -1};
            for (int k = 0; k < 1000; ++k) axpb.launch({x, 2.0f, 1.0f, y}, o);
            s.synchronize();
            std::vector<double> us;
            const int calls = 10000;
            auto timed = [&](const std::function<void()>& call) { return timed_calls(call, calls, s); };
            std::optional<BareLaunch> bare;
            if (mode == HostMode::bare) bare.emplace(axpb, x, y, s);
            for (int r = 0; r < 5; ++r) {
                double seconds = 0;
                switch (mode) {
                    case HostMode::peers: seconds = timed([&] { axpb.launch({x, 2.0f, 1.0f, y}, o); }); break;
                    case HostMode::allocating: seconds = timed([&] { (void)axpb({x, 2.0f, 1.0f}, o); }); break;
                    case HostMode::bare: seconds = timed([&] { bare->launch(s); }); break;
                    case HostMode::batches:
                        for (int b = 0; b < calls / 100; ++b) {
                            const auto t0 = Clock::now();
                            for (int k = 0; k < 100; ++k) axpb.launch({x, 2.0f, 1.0f, y}, o);
                            seconds += std::chrono::duration<double>(Clock::now() - t0).count();
                            s.synchronize();
                        }
                        break;
                }
                us.push_back(seconds * 1e6 / calls);
            }
            std::sort(us.begin(), us.end());
            Record r;
            if (bare && !bare->wrote_y(s)) r.error = "the bare launches did not compute y = 2 * 1.5 + 1 everywhere";
            r.name = "ew_host_1k";
            r.dtype = "float32";
            r.n = 1000;
            r.us_per_call = us[us.size() / 2];
            std::ostringstream note;
            note << "median of 5 x 10000 calls (min " << us.front() << ", max " << us.back() << " us); ";
            switch (mode) {
                case HostMode::peers: note << "axpb.launch(x, 2, 1, y), then one sync, all timed (as the peers)"; break;
                case HostMode::batches:
                    r.variant = "launch(), batches of 100 between syncs, calls only";
                    note << r.variant;
                    break;
                case HostMode::allocating:
                    r.variant = "axpb(x, 2, 1), output allocated per call, then one sync";
                    note << r.variant;
                    break;
                case HostMode::bare:
                    r.variant = "the launch floor: cuLaunchKernel of the same function and arguments, then one sync";
                    note << r.variant;
                    break;
            }
            r.note = note.str();
            return r;
        };
    };
    c.emplace_back("ew_host_1k", host_case(HostMode::peers));
    c.emplace_back("ew_host_1k_batches", host_case(HostMode::batches));
    c.emplace_back("ew_host_1k_alloc", host_case(HostMode::allocating));
    c.emplace_back("ew_host_1k_bare", host_case(HostMode::bare));
}

}  // namespace kjit::cli::bench
