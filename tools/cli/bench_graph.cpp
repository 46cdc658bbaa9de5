// `kjit bench`: the CUDA graph cases of issue 33: the host time of replaying captured sequences
// (10 elementwise calls; a chain of 20 elementwise, reduction and matmul calls) beside the same
// calls made eagerly, the GPU time of a replay, and the cost of moving a graph to other arrays.
// The peers (tools/bench/peers.py) capture the same sequences with CuPy's and PyTorch's graphs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "tools/cli/bench_support.hpp"

namespace kjit::cli::bench {
namespace {

constexpr std::int64_t kN = 1000;        // elements of the elementwise and reduction arrays
constexpr std::int64_t kSide = 64;       // the matrices' side
constexpr int kEwCalls = 10, kChainCalls = 20;
constexpr float kA = 1.5f, kB = -0.25f;  // y = a*x + b, as the peers (peers.py's A_SCALAR, B_SCALAR)

// The median, min and max of the repeats, as the notes give them.
struct Spread {
    double median = 0, min = 0, max = 0;
};

Spread spread_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return {v[v.size() / 2], v.front(), v.back()};
}

// Host µs per unit of `run` (a replay, or the calls made eagerly), as the peers time host cost
// and as raw_launch_cluster does: `warm` untimed runs, then `runs` runs and one sync, all timed;
// median of 5. `units`: the kernels or calls one run makes. The GPU's own pace can bound it,
// which submit_us() tells apart.
Spread wall_us(const std::function<void()>& run, int warm, int runs, int units, const Stream& s) {
    for (int k = 0; k < warm; ++k) run();
    s.synchronize();
    std::vector<double> us;
    for (int r = 0; r < 5; ++r) {
        const auto t0 = Clock::now();
        for (int k = 0; k < runs; ++k) run();
        s.synchronize();
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / (runs * units));
    }
    return spread_of(us);
}

// The host's share alone: `batches` batches of 100 runs, a sync after each, only the runs timed
// (100 replays are fewer launches than the queue holds, so a GPU slower than the host does not
// set the pace); µs per unit, median of 5.
Spread submit_us(const std::function<void()>& run, int batches, int units, const Stream& s) {
    std::vector<double> us;
    for (int r = 0; r < 5; ++r) {
        double seconds = 0;
        for (int b = 0; b < batches; ++b) {
            const auto t0 = Clock::now();
            for (int k = 0; k < 100; ++k) run();
            seconds += std::chrono::duration<double>(Clock::now() - t0).count();
            s.synchronize();
        }
        us.push_back(seconds * 1e6 / (batches * 100.0 * units));
    }
    return spread_of(us);
}

// One set of the chain's arrays: the input x and the ten elementwise outputs y (1000 float32
// each), the five sums of squares (0-d), the matrices a, b and the five products (64x64). The
// inputs are multiples of 1/8 small enough that every y and product is exact in float32 (TF32
// included), so that the checks need no tolerance but for the sums' order of addition; `set`
// shifts them, so that two sets hold different results.
struct Chain {
    std::vector<float> x_host, a_host, b_host;
    Array x, a, b;
    std::vector<Array> y, sums, products;

    Chain(int set, const Stream& s) {
        for (std::int64_t i = 0; i < kN; ++i) x_host.push_back(static_cast<float>((i * 7 + set * 5) % 17 - 8) * 0.125f);
        for (std::int64_t i = 0; i < kSide; ++i)
            for (std::int64_t j = 0; j < kSide; ++j) {
                a_host.push_back(static_cast<float>((i * 5 + j * 3 + set) % 9 - 4) * 0.125f);
                b_host.push_back(static_cast<float>((i * 3 + j * 7 + 2 * set) % 11 - 5) * 0.125f);
            }
        const Device d = Device::cuda(0);
        x = Array::from_host(x_host.data(), DType::float32, {kN}, d, s);
        a = Array::from_host(a_host.data(), DType::float32, {kSide, kSide}, d, s);
        b = Array::from_host(b_host.data(), DType::float32, {kSide, kSide}, d, s);
        for (int k = 0; k < kEwCalls; ++k) y.push_back(Array::empty({kN}, DType::float32, d, s));
        for (int j = 0; j < 5; ++j) {
            sums.push_back(Array::empty({}, DType::float32, d, s));
            products.push_back(Array::empty({kSide, kSide}, DType::float32, d, s));
        }
    }

    // Every array the chain's calls use, in one order: update() pairs two sets by it.
    std::vector<Array> arrays() const {
        std::vector<Array> all{x, a, b};
        for (const auto* group : {&y, &sums, &products}) all.insert(all.end(), group->begin(), group->end());
        return all;
    }

    // NaN in every output, so that a check after a replay shows that the replay wrote them.
    void poison(const Stream& s) const {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        for (const auto* group : {&y, &sums, &products})
            for (const Array& out : *group) out.copy_from_host(std::vector<float>(static_cast<std::size_t>(out.size()), nan).data(), s);
        s.synchronize();
    }
};

// The kernels of the chain, under the names the other cases give them (one compilation each).
struct Kernels {
    ElementwiseKernel axpb{"T x, T a, T b", "T y", "y = a * x + b", "axpb"};
    ReductionKernel sumsq{"T x", "T y", "x * x", "a + b", "y = a", "0", "sumsq"};
};

// The 10 elementwise calls: y[0] = a*x + b, y[k] = a*y[k-1] + b (each reads the one before).
void ew_calls(const Kernels& k, const Chain& t, const Stream& s) {
    const CallOptions o{s, -1};
    for (int i = 0; i < kEwCalls; ++i) k.axpb.launch({i == 0 ? t.x : t.y[i - 1], kA, kB, t.y[i]}, o);
}

// The 20 calls, in five rounds of four: two of the elementwise calls above, the sum of squares
// of the second one's output, a product a @ b.
void chain_calls(const Kernels& k, const Chain& t, const Stream& s) {
    const CallOptions o{s, -1};
    ReduceOptions r;
    r.stream = s;
    MatmulOptions m;
    m.stream = s;
    for (int j = 0; j < 5; ++j) {
        k.axpb.launch({j == 0 ? t.x : t.y[2 * j - 1], kA, kB, t.y[2 * j]}, o);
        k.axpb.launch({t.y[2 * j], kA, kB, t.y[2 * j + 1]}, o);
        k.sumsq.launch({t.y[2 * j + 1], t.sums[j]}, r);
        kjit::matmul(t.a, t.b, t.products[j], m);
    }
}

std::vector<float> to_host(const Array& a, const Stream& s) {
    std::vector<float> h(static_cast<std::size_t>(a.size()));
    a.copy_to_host(h.data(), s);
    return h;
}

// "NAME is GOT, not WANT", as a check's error says it.
std::string differs(const std::string& name, double got, double want) {
    return name + " is " + std::to_string(got) + ", not " + std::to_string(want);
}

// The outputs against the host's computation from the inputs: "" when they agree, else the
// first that does not. `whole_chain`: the sums and products too, not only the y.
std::string chain_mismatch(const Chain& t, bool whole_chain, const Stream& s) {
    auto close = [](double got, double want, double rel) { return std::abs(got - want) <= rel * std::max(1.0, std::abs(want)); };
    auto at = [](const std::string& name, int k, std::size_t i) { return name + std::to_string(k) + "[" + std::to_string(i) + "]"; };
    std::vector<double> want(t.x_host.begin(), t.x_host.end());
    std::vector<std::vector<double>> ys;
    for (int k = 0; k < kEwCalls; ++k) {
        for (double& v : want) v = kA * v + kB;
        ys.push_back(want);
        const std::vector<float> got = to_host(t.y[k], s);
        for (std::size_t i = 0; i < got.size(); ++i)
            if (!close(got[i], want[i], 1e-6)) return differs(at("y", k, i), got[i], want[i]);
    }
    if (!whole_chain) return "";
    for (int j = 0; j < 5; ++j) {
        double sum = 0;
        for (const double v : ys[2 * j + 1]) sum += v * v;
        const float got = to_host(t.sums[j], s)[0];
        if (!close(got, sum, 1e-5)) return differs("sum" + std::to_string(j), got, sum);
    }
    std::vector<double> product(static_cast<std::size_t>(kSide * kSide), 0.0);
    for (std::int64_t i = 0; i < kSide; ++i)
        for (std::int64_t j = 0; j < kSide; ++j)
            for (std::int64_t k = 0; k < kSide; ++k)
                product[i * kSide + j] += double(t.a_host[i * kSide + k]) * t.b_host[k * kSide + j];
    for (int j = 0; j < 5; ++j) {
        const std::vector<float> got = to_host(t.products[j], s);
        for (std::size_t i = 0; i < got.size(); ++i)
            if (!close(got[i], product[i], 1e-6)) return differs(at("product", j, i), got[i], product[i]);
    }
    return "";
}

// A record of one of the cases, µs per unit, with the spread in its note after `what`.
Record us_record(const std::string& name, const Spread& us, const std::string& variant, const std::string& what) {
    Record r;
    r.name = name;
    r.dtype = "float32";
    r.n = kN;
    r.us_per_call = us.median;
    r.variant = variant;
    std::ostringstream note;
    note << what << "; median of 5 (min " << us.min << ", max " << us.max << " us)";
    r.note = note.str();
    return r;
}

// graph_ew10 and graph_chain20: a sequence of `units` calls captured once, the host's share of
// its replays timed (the main record, as the peers'), then, as variants, replays back to back all
// timed, the same calls made eagerly, and the GPU time of a replay; all per call of the sequence.
// The results of a last replay, outputs poisoned before it, are checked.
Record replay_case(const std::string& name, int units, const Stream& s) {
    const bool whole_chain = units == kChainCalls;
    const Kernels k;
    const Chain t(0, s);
    const std::function<void()> eager = [&] { whole_chain ? chain_calls(k, t, s) : ew_calls(k, t, s); };
    // Eager first: the kernels are compiled and loaded, the reduction's workspace and cuBLAS's
    // handle made, outside the capture.
    eager();
    s.synchronize();
    const Graph g = Graph::capture(s, eager);
    const std::function<void()> replay = [&] { g.launch(s); };
    const std::string calls = whole_chain ? "the chain of 20 calls (10 axpb.launch, 5 sum-of-squares ReductionKernel "
                                            "launch into 0-d outputs, 5 kjit::matmul 64x64 into preallocated outputs)"
                                          : "10 axpb.launch(y[k-1], 1.5, -0.25, y[k]) calls on 1000 float32";
    const std::string per = std::string(" per ") + (whole_chain ? "call (replay / 20)" : "kernel (replay / 10)");
    const std::size_t nodes = g.node_count();

    const Spread replayed = wall_us(replay, 1000, 10000, units, s);
    const Spread submitted = submit_us(replay, 100, units, s);
    const Spread eager_us = wall_us(eager, 1000 / units, 10000 / units, units, s);
    const double gpu_ms = time_ms(replay, s, 1000, 5);

    t.poison(s);
    g.launch(s);
    s.synchronize();
    // The measure is the host's time: replays back to back are paced by the GPU once
    // it is slower than the host (about 1.1 us a node for these kernels on an H100), so they
    // are a variant.
    Record r = us_record(name, submitted, "",
                         "Graph::capture of " + calls + " (" + std::to_string(nodes) + " graph nodes), g.launch(s) in 100 "
                         "batches of 100 replays, a sync after each, only the launches timed (as the peers), host us" + per);
    r.error = chain_mismatch(t, whole_chain, s);
    if (!r.error.empty()) r.error = "after a replay: " + r.error;

    extra_records().push_back(us_record(name, eager_us, "the same calls eager",
                                        "the same calls eager, " + std::to_string(10000 / units) +
                                            " sequences (10000 calls) then one sync, all timed, host us per call"));
    extra_records().push_back(us_record(name, replayed, "replays back to back, all timed",
                                        "1000 warm-up replays, then 10000 replays and one sync, all timed: the GPU's "
                                        "pace when it is slower than the host, us" + per));
    Record gpu;
    gpu.name = name;
    gpu.dtype = "float32";
    gpu.n = kN;
    gpu.ms = gpu_ms;
    gpu.us_per_call = gpu_ms * 1e3 / units;
    gpu.variant = "GPU time of a replay, per call";
    std::ostringstream gpu_note;
    gpu_note << "GPU time: CUDA events around 1000 back-to-back replays, median of 5, in us" << per
             << " (as the peers, who cannot count their graphs' nodes); per graph node (/ " << nodes
             << "): " << gpu_ms * 1e3 / static_cast<double>(nodes) << " us";
    gpu.note = gpu_note.str();
    extra_records().push_back(gpu);
    return r;
}

}  // namespace

void add_graph_cases(Cases& c) {
    c.emplace_back("graph_ew10", [](const Stream& s) { return replay_case("graph_ew10", kEwCalls, s); });
    c.emplace_back("graph_chain20", [](const Stream& s) { return replay_case("graph_chain20", kChainCalls, s); });

    // The chain's graph moved between two sets of arrays by update({...}) naming every array
    // (23), alternately to the other set, so that each update really changes the kernel nodes'
    // addresses; 5 batches of 200, µs per update. Variant: update(s, calls), a new capture of the
    // chain on the other set applied with cuGraphExecUpdate; 5 batches of 20. Then the graph is
    // moved to the second set, whose outputs are poisoned, replayed and checked.
    c.emplace_back("graph_update", [](const Stream& s) {
        const Kernels k;
        const Chain one(0, s), two(1, s);
        chain_calls(k, one, s);
        chain_calls(k, two, s);
        s.synchronize();
        Graph g = Graph::capture(s, [&] { chain_calls(k, one, s); });
        std::vector<Graph::ArrayUpdate> to_two, to_one;
        const std::vector<Array> arrays_one = one.arrays(), arrays_two = two.arrays();
        for (std::size_t i = 0; i < arrays_one.size(); ++i) {
            to_two.push_back({arrays_one[i], arrays_two[i]});
            to_one.push_back({arrays_two[i], arrays_one[i]});
        }
        // An even count of updates per batch: each batch starts and ends on the first set.
        auto timed = [&](int updates, const std::function<void(bool)>& update) {
            for (int i = 0; i < 10; ++i) update(i % 2 == 0);
            std::vector<double> us;
            for (int r = 0; r < 5; ++r) {
                const auto t0 = Clock::now();
                for (int i = 0; i < updates; ++i) update(i % 2 == 0);
                us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / updates);
            }
            return spread_of(us);
        };
        const Spread patched = timed(200, [&](bool forth) { g.update(forth ? to_two : to_one); });
        const Spread recaptured = timed(20, [&](bool forth) { g.update(s, [&] { chain_calls(k, forth ? two : one, s); }); });

        g.update(to_two);
        two.poison(s);
        g.launch(s);
        s.synchronize();
        Record r = us_record("graph_update", patched, "",
                             "g.update({...}) of all " + std::to_string(to_two.size()) + " arrays of the chain of 20 calls (" +
                                 std::to_string(g.node_count()) + " graph nodes), alternating between two sets; 5 batches of 200 "
                                 "updates, host us per update (no sync: an update is host work)");
        r.error = chain_mismatch(two, true, s);
        if (!r.error.empty()) r.error = "replayed after update() to the second set: " + r.error;
        extra_records().push_back(us_record("graph_update", recaptured, "update(stream, calls): a new capture, cuGraphExecUpdate",
                                            "g.update(s, calls) with the chain's calls on the other set, alternating; 5 batches "
                                            "of 20, host us per update"));
        return r;
    });
}

}  // namespace kjit::cli::bench
