// The saved-graph description (jit/graphs/saved_graph_format.hpp): what save() writes reads back
// the same, and a damaged or hostile file is an Error naming the field, never a crash.
#include "test_support.hpp"

#include <functional>

#include <nlohmann/json.hpp>

#include "jit/graphs/saved_graph_format.hpp"
#include "kjit/error.hpp"

using namespace kjit::jit::graphs;

namespace {

SavedGraph example() {
    SavedGraph g;
    g.arrays.push_back({"x", kjit::DType::float32, {4, 250}, {1000, 4}, 64});
    g.arrays.push_back({"y", kjit::DType::float64, {1000}, {8}, 0});
    g.scalars.push_back({"a", "axpb.a"});
    g.scratch.push_back(4096);
    SavedStep alloc;
    alloc.kind = SavedStep::Kind::alloc;
    alloc.size = 8192;
    g.steps.push_back(alloc);
    SavedStep k;
    k.kind = SavedStep::Kind::kernel;
    k.after = {0};
    k.kernel = "axpb";
    k.key = std::string(32, 'a');
    k.entry = "axpb_contiguous32";
    k.grid = {132, 1, 1};
    k.block = {256, 1, 1};
    k.shared = 0;
    k.params = {{0, 40}, {40, 8}};
    for (int i = 0; i < 48; ++i) k.bytes.push_back(static_cast<std::byte>(i * 7));
    k.addresses = {{0, {SavedAddress::Into::array, 1, 16}}, {8, {SavedAddress::Into::graph, 0, 0}}, {40, {SavedAddress::Into::scratch, 0, 8}}};
    k.scalars = {{16, 0, kjit::DType::float32}};
    g.steps.push_back(k);
    SavedStep m;
    m.kind = SavedStep::Kind::memset;
    m.after = {1};
    m.to = {SavedAddress::Into::array, 0, 12};
    m.value = 7;
    m.element = 4;
    m.width = 10;
    g.steps.push_back(m);
    SavedStep c;
    c.kind = SavedStep::Kind::copy;
    c.after = {2};
    c.to = {SavedAddress::Into::array, 1, 0};
    c.from = {SavedAddress::Into::graph, 0, 8};
    c.size = 100;
    g.steps.push_back(c);
    SavedStep f;
    f.kind = SavedStep::Kind::free;
    f.after = {3};
    f.alloc = 0;
    g.steps.push_back(f);
    SavedStep e;
    e.kind = SavedStep::Kind::empty;
    e.after = {4, 1};
    g.steps.push_back(e);
    return g;
}

bool same_address(const SavedAddress& a, const SavedAddress& b) { return a.into == b.into && a.index == b.index && a.offset == b.offset; }

std::string fails_with(const std::string& text) {
    try {
        read_saved_graph(text, "g.json");
    } catch (const kjit::Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("a saved graph's description reads back as written", "[graph]") {
    const SavedGraph g = example();
    const SavedGraph r = read_saved_graph(write_saved_graph(g), "g.json");
    REQUIRE(r.arrays.size() == 2);
    CHECK(r.arrays[0].name == "x");
    CHECK(r.arrays[0].dtype == kjit::DType::float32);
    CHECK(r.arrays[0].shape == g.arrays[0].shape);
    CHECK(r.arrays[0].strides == g.arrays[0].strides);
    CHECK(r.arrays[0].align == 64);
    REQUIRE(r.scalars.size() == 1);
    CHECK(r.scalars[0].parameter == "axpb.a");
    CHECK(r.scratch == g.scratch);
    REQUIRE(r.steps.size() == g.steps.size());
    for (std::size_t k = 0; k < g.steps.size(); ++k) {
        CHECK(r.steps[k].kind == g.steps[k].kind);
        CHECK(r.steps[k].after == g.steps[k].after);
    }
    const SavedStep& k = r.steps[1];
    CHECK(k.key == g.steps[1].key);
    CHECK(k.entry == "axpb_contiguous32");
    CHECK(k.grid == g.steps[1].grid);
    CHECK(k.block == g.steps[1].block);
    CHECK(k.params == g.steps[1].params);
    CHECK(k.bytes == g.steps[1].bytes);
    REQUIRE(k.addresses.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(k.addresses[i].at == g.steps[1].addresses[i].at);
        CHECK(same_address(k.addresses[i].address, g.steps[1].addresses[i].address));
    }
    REQUIRE(k.scalars.size() == 1);
    CHECK(k.scalars[0].at == 16);
    CHECK(k.scalars[0].dtype == kjit::DType::float32);
    CHECK(same_address(r.steps[2].to, g.steps[2].to));
    CHECK(r.steps[2].to.offset == 12);
    CHECK(r.steps[2].value == 7);
    CHECK(same_address(r.steps[3].from, g.steps[3].from));
    CHECK(r.steps[3].size == 100);
    CHECK(r.steps[4].alloc == 0);
}

TEST_CASE("a damaged saved graph is an Error that names the field", "[graph]") {
    const nlohmann::json good = nlohmann::json::parse(write_saved_graph(example()));
    const auto with = [&](const std::function<void(nlohmann::json&)>& change) {
        nlohmann::json j = good;
        change(j);
        return fails_with(j.dump());
    };
    CHECK_THAT(fails_with("{"), Catch::Contains("g.json: saved graph: the file: not JSON"));
    CHECK_THAT(with([](auto& j) { j["kjit_saved_graph"] = 2; }), Catch::Contains("version 2"));
    CHECK_THAT(with([](auto& j) { j["steps"][1]["key"] = "../../etc/passwd"; }), Catch::Contains("steps[1].key"));
    CHECK_THAT(with([](auto& j) { j["arrays"][1]["dtype"] = "float65"; }), Catch::Contains("arrays[1].dtype"));
    // an address past the argument bytes, into an array that is not there, into the scratch's end
    CHECK_THAT(with([](auto& j) { j["steps"][1]["addresses"][2][0] = 48; }), Catch::Contains("steps[1].addresses"));
    CHECK_THAT(with([](auto& j) { j["steps"][1]["addresses"][0][2] = 9; }), Catch::Contains("no array 9"));
    CHECK_THAT(with([](auto& j) { j["steps"][1]["addresses"][2][3] = 4096; }), Catch::Contains("outside its scratch target"));
    // a copy or memset whose bytes run past its target, an address before an array's first element
    CHECK_THAT(with([](auto& j) { j["steps"][3]["bytes"] = 1u << 30; }), Catch::Contains("steps[3].to[2]: the bytes it touches are outside"));
    CHECK_THAT(with([](auto& j) { j["steps"][2]["width"] = 100000; }), Catch::Contains("steps[2].to[2]"));
    CHECK_THAT(with([](auto& j) { j["steps"][1]["addresses"][0][3] = -8; }), Catch::Contains("outside its array target"));
    CHECK_THAT(with([](auto& j) { j["arrays"][0]["strides"][0] = std::int64_t{1} << 50; }), Catch::Contains("beyond 2^40"));
    CHECK_THAT(with([](auto& j) { j["steps"][1]["after"][0] = 5; }), Catch::Contains("does not come before"));
    CHECK_THAT(with([](auto& j) { j["steps"][4]["alloc"] = 2; }), Catch::Contains("not an earlier alloc step"));
    CHECK_THAT(with([](auto& j) { j["steps"][1]["block"][0] = 2048; }), Catch::Contains("more than 1024 threads"));
    CHECK_THAT(with([](auto& j) { j["steps"][2]["element"] = 3; }), Catch::Contains("must be 1, 2 or 4"));
    CHECK_THAT(with([](auto& j) { j["steps"][1]["bytes"] = "0g"; }), Catch::Contains("hex digit"));
    CHECK_THAT(with([](auto& j) { j["steps"][1]["scalars"][0][0] = 46; }), Catch::Contains("past the end"));
    CHECK_THAT(with([](auto& j) { j["steps"][1]["params"][1][1] = 9; }), Catch::Contains("past the end"));
    CHECK_THAT(with([](auto& j) { j["arrays"][1]["name"] = "x"; }), Catch::Contains("given twice"));
    CHECK_THAT(with([](auto& j) { j["steps"][0]["kind"] = "host"; }), Catch::Contains("unknown step kind"));
    CHECK_THAT(with([](auto& j) { j["steps"][1]["grid"] = "many"; }), Catch::Contains("steps[1].grid: must be a list"));
    CHECK_THAT(with([](auto& j) { j["steps"][0]["bytes"] = -1; }), Catch::Contains("steps[0].bytes"));
    CHECK_THAT(with([](auto& j) { j.erase("scratch"); }), Catch::Contains("scratch: missing"));
}

TEST_CASE("every cut of a saved graph reads or fails cleanly", "[graph]") {
    const std::string good = write_saved_graph(example());
    std::size_t errors = 0;
    for (std::size_t n = 0; n < good.size(); n += 3) {
        try {
            read_saved_graph(good.substr(0, n), "cut");
        } catch (const kjit::Error&) {
            ++errors;
        }
    }
    CHECK(errors == (good.size() + 2) / 3);  // every proper prefix of a JSON object is incomplete
    // Bytes flipped anywhere: a clean Error or a description that still reads (a digit changed).
    for (std::size_t at = 0; at < good.size(); at += 5) {
        std::string bad = good;
        bad[at] = static_cast<char>(bad[at] ^ 0x15);
        try {
            read_saved_graph(bad, "flipped");
        } catch (const kjit::Error&) {
        }
    }
}

TEST_CASE("a scalar parameter is kernel.param or kernel.param@call", "[graph]") {
    const ScalarParameter every = parse_scalar_parameter("axpb.a");
    CHECK(every.kernel == "axpb");
    CHECK(every.parameter == "a");
    CHECK(every.call == -1);
    const ScalarParameter second = parse_scalar_parameter("scale.factor@1");
    CHECK(second.kernel == "scale");
    CHECK(second.parameter == "factor");
    CHECK(second.call == 1);
    for (const char* bad : {"", "a", ".a", "k.", "k.a@", "k.a@x", "k.a.b", "k.a@1@2", "k.a@12345678901"})
        CHECK_THROWS_WITH(parse_scalar_parameter(bad), Catch::Contains("kernel.parameter"));
}
