// Saved graphs (Graph::save / Graph::load, issue 33) on the GPU: a captured sequence saved with
// named arrays and scalars, loaded again here and replayed by a fresh process that never loads
// NVRTC, each against the eager calls' bits; and save's and load's refusals.
#include "test_support.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gpu_data.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/error.hpp"
#include "kjit/graph.hpp"
#include "kjit/matmul.hpp"
#include "kjit/npy.hpp"
#include "kjit/reduction_kernel.hpp"
#include "kjit/reductions.hpp"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

using Catch::Matchers::Contains;
using kjit::Array;
using kjit::DType;
using kjit::Graph;
using kjit::Stream;

namespace {

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::filesystem::path replay_program() {
    std::error_code ec;
    return std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "kjit_saved_graph_replay";
}

// The arrays one run of the sequence uses.
struct Arrays {
    kjit::test::DeviceData x;
    Array y, total, rows, chained;
};

Arrays make_arrays(std::int64_t n, const Stream& s) {
    return {kjit::test::random_device(DType::float32, {n}), kjit::test::poisoned(DType::float32, {n}, s),
            kjit::test::poisoned(DType::float32, kjit::Shape{}, s), kjit::test::poisoned(DType::float32, {n / 128}, s),
            kjit::test::poisoned(DType::float64, kjit::Shape{}, s)};
}

void poison(const Arrays& a, const Stream& s) {
    for (const Array& out : {a.y, a.total, a.rows, a.chained}) out.copy_from_host(std::vector<unsigned char>(out.nbytes(), 0xff).data(), s);
    s.synchronize();
}

std::vector<std::vector<unsigned char>> outputs(const Arrays& a) {
    return {kjit::test::to_host(a.y), kjit::test::to_host(a.total), kjit::test::to_host(a.rows), kjit::test::to_host(a.chained)};
}

}  // namespace

TEST_CASE("a saved graph loads with other arrays and scalars, here and in a process without NVRTC, to the eager bits",
          "[graph][gpu]") {
    KJIT_REQUIRE_GPU();
    const Stream s = Stream::create();
    const kjit::ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "saved_axpb");
    const kjit::ReductionKernel sumsq("T x", "U y", "x * x", "a + b", "y = a", "0", "saved_sumsq");
    const std::int64_t n = 1 << 15;
    // Elementwise with scalars, a full reduction (kjit's scratch workspace), a row reduction, and
    // a temporary made inside the capture (graph memory: an alloc and a free step).
    const auto calls = [&](const Arrays& t, float a) {
        return [&t, &s, &axpb, &sumsq, n, a] {
            axpb.launch({t.x.device, a, 1.0f, t.y}, kjit::CallOptions{s});
            sumsq.launch({t.y, t.total}, kjit::ReduceOptions{{s}});
            kjit::sum(t.y.reshape({n / 128, 128}), kjit::ReduceOptions{{s}, std::vector<int>{1}}, t.rows);
            const Array temp = axpb({t.y, 0.5f, -2.0f}, kjit::CallOptions{s});
            sumsq.launch({temp, t.chained}, kjit::ReduceOptions{{s}});
        };
    };
    const Arrays one = make_arrays(n, s), two = make_arrays(n, s), three = make_arrays(n, s);
    calls(one, 2.0f)();  // eager: kernels compiled into the test's cache, workspaces made
    const auto want_one = outputs(one);
    calls(two, -3.0f)();
    const auto want_two = outputs(two);
    calls(three, 0.25f)();
    const auto want_three = outputs(three);
    poison(one, s);
    const Graph g = Graph::capture(s, calls(one, 2.0f));
    g.launch(s);
    s.synchronize();
    REQUIRE(outputs(one) == want_one);

    const kjit::test::TempDir dir;
    const std::string path = (dir.path() / "sequence.kjitgraph").string();
    const Graph::NamedArray names_one[] = {{"x", one.x.device}, {"y", one.y}, {"total", one.total}, {"rows", one.rows}, {"chained", one.chained}};
    g.save(path, names_one, std::vector<Graph::NamedScalar>{{"a", "saved_axpb.a@0"}});

    // Saving what cannot be saved, each refused naming why.
    CHECK_THROWS_WITH(g.save(path, {{"x", one.x.device}, {"y", one.y}, {"total", one.total}, {"rows", one.rows}}),
                      Contains("was not given a name for"));
    CHECK_THROWS_WITH(g.save(path, names_one, std::vector<Graph::NamedScalar>{{"a", "saved_axpb.alpha"}}),
                      Contains("saved_axpb.a") && Contains("no scalar parameter"));
    CHECK_THROWS_WITH(g.save(path, {{"x", one.x.device}, {"x", one.y}}), Contains("named twice"));

    // Loaded here, on other arrays, with another scalar: the eager bits of that run.
    poison(two, s);
    const Graph::NamedArray names_two[] = {{"x", two.x.device}, {"y", two.y}, {"total", two.total}, {"rows", two.rows}, {"chained", two.chained}};
    const Graph loaded = Graph::load(path, s, names_two, std::vector<Graph::ScalarValue>{{"a", -3.0}});
    CHECK(loaded.node_count() == g.node_count());
    loaded.launch(s);
    loaded.launch(s);  // twice: graph memory and scratch are reused correctly
    s.synchronize();
    CHECK(outputs(two) == want_two);
    CHECK(kjit::test::to_host(one.total) == want_one[1]);  // the captured graph's arrays untouched

    // Loading what does not fit, refused naming it.
    CHECK_THROWS_WITH(Graph::load(path, s, {{"x", two.x.device}}), Contains("'y'") && Contains("was not given"));
    const Array wrong = kjit::test::poisoned(DType::float32, {n / 2}, s);
    CHECK_THROWS_WITH(Graph::load(path, s, {{"x", two.x.device}, {"y", wrong}, {"total", two.total}, {"rows", two.rows}, {"chained", two.chained}}),
                      Contains("'y' must have the dtype, shape and strides"));
    CHECK_THROWS_WITH(Graph::load(path, s, names_two, std::vector<Graph::ScalarValue>{{"b", 1.0}}), Contains("no scalar 'b'"));

    // A fresh process: the same cache folder (KJIT_CACHE_DIR, inherited), no NVRTC loaded.
    const std::filesystem::path program = replay_program();
    REQUIRE(std::filesystem::exists(program));
    const std::vector<std::pair<std::string, Array>> files = {{"x", three.x.device}, {"y", three.y}, {"total", three.total},
                                                              {"rows", three.rows}, {"chained", three.chained}};
    poison(three, s);
    std::string command = program.string() + " " + path;
    for (const auto& [name, array] : files) {
        const std::string file = (dir.path() / (name + ".npy")).string();
        kjit::save_npy(file, array, s);
        command += " " + name + "=" + file;
    }
    command += " a:=0.25 > " + (dir.path() / "replay.txt").string() + " 2>&1";
    const int status = std::system(command.c_str());
    INFO(read_text(dir.path() / "replay.txt"));
    REQUIRE(status == 0);
    std::vector<std::vector<unsigned char>> replayed;
    for (const auto& [name, array] : files) replayed.push_back(kjit::test::to_host(kjit::load_npy((dir.path() / (name + ".npy")).string())));
    CHECK(replayed[1] == want_three[0]);
    CHECK(replayed[2] == want_three[1]);
    CHECK(replayed[3] == want_three[2]);
    CHECK(replayed[4] == want_three[3]);
}

TEST_CASE("a graph with a cuBLAS product cannot be saved, and says so", "[graph][gpu]") {
    KJIT_REQUIRE_GPU();
    const Stream s = Stream::create();
    const kjit::test::DeviceData a = kjit::test::random_device(DType::float32, {256, 128});
    const kjit::test::DeviceData b = kjit::test::random_device(DType::float32, {128, 192});
    const Array c = kjit::test::poisoned(DType::float32, {256, 192}, s);
    kjit::matmul(a.device, b.device, c, {.stream = s});  // eager: cuBLAS's handle and workspace
    const Graph g = Graph::capture(s, [&] { kjit::matmul(a.device, b.device, c, {.stream = s}); });
    const kjit::test::TempDir dir;
    CHECK_THROWS_WITH(g.save((dir.path() / "g.kjitgraph").string(), {{"a", a.device}, {"b", b.device}, {"c", c}}),
                      Contains("kernel kjit did not compile"));
}

TEST_CASE("a graph moved to other arrays keeps their memory when the application drops them", "[graph][gpu]") {
    KJIT_REQUIRE_GPU();
    const Stream s = Stream::create();
    const kjit::ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "kept_axpb");
    const std::int64_t n = 1 << 16;
    const kjit::test::DeviceData one = kjit::test::random_device(DType::float32, {n});
    const Array y = kjit::test::poisoned(DType::float32, {n}, s);
    std::vector<unsigned char> want;
    Graph g = Graph::capture(s, [&] { axpb.launch({one.device, 2.0f, 1.0f, y}, kjit::CallOptions{s}); });
    {
        const kjit::test::DeviceData two = kjit::test::random_device(DType::float32, {n});
        axpb.launch({two.device, 2.0f, 1.0f, y}, kjit::CallOptions{s});
        want = kjit::test::to_host(y);
        g.update({{one.device, two.device}});
    }  // the application's last handle on `two` goes; the graph's stays
    // New allocations of the same size would take that memory were it freed: fill them with other values.
    std::vector<Array> others;
    for (int k = 0; k < 4; ++k) others.push_back(kjit::test::random_device(DType::float32, {n}).device);
    y.copy_from_host(std::vector<unsigned char>(y.nbytes(), 0xff).data(), s);
    g.launch(s);
    s.synchronize();
    CHECK(kjit::test::to_host(y) == want);
}
