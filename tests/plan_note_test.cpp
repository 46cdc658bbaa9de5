// Plan notes (jit/kernels/plan_note.hpp): their text, their files, and a fresh process's first call that
// loads a cached kernel through one without checking it or generating its code.
#include "test_support.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <fstream>

#include "cache/disk_store.hpp"
#include "cache/manifest.hpp"
#include "fake_driver.hpp"
#include "gpu_data.hpp"
#include "jit/codegen/elementwise.hpp"
#include "jit/codegen/reduction.hpp"
#include "jit/kernels/reduction/note.hpp"
#include "jit/compile/nvrtc_identity.hpp"
#include "jit/compile/nvrtc_version.hpp"
#include "jit/kernels/plan_note.hpp"
#include "jit/kernels/precompile.hpp"
#include "jit/compile/source_identity.hpp"
#include "kjit/cache.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/reduction_kernel.hpp"
#include "kjit/stream.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/nvrtc.hpp"

using Catch::Matchers::Contains;
using kjit::DType;
using kjit::test::cache_in;
using kjit::test::ProcessCacheGuard;
namespace fs = std::filesystem;

namespace {

const std::string kKeyA = "0123456789abcdef0123456789abcdef";
const std::string kKeyB = "fedcba9876543210fedcba9876543210";

std::vector<fs::path> files_ending(const fs::path& dir, const std::string& suffix) {
    std::vector<fs::path> out;
    for (const auto& f : fs::recursive_directory_iterator(dir))
        if (f.path().string().ends_with(suffix)) out.push_back(f.path());
    return out;
}

std::string read_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << bytes;
}

}  // namespace

TEST_CASE("a plan note's text round-trips, and any other text reads as no note", "[plan_note]") {
    const kjit::jit::kernels::NoteKeying keying{"LD_LIBRARY_PATH=/opt/x\npath=/opt/x/libnvrtc.so.13\nsize=12\n", "nvrtc-13.0+bid:ab",
                                       "sm_90"};
    const kjit::jit::kernels::PlanNote::NotedValues values{{"vector_width", "4"}, {"entry.small32", "k_small32"}};
    const std::vector<std::string> keys{"", kKeyA, "", kKeyB};
    const std::vector<std::string> aliases{"", kKeyB, "", kKeyA};
    const std::string text = kjit::jit::kernels::format_plan_note(keying, values, keys, aliases);
    CHECK_THAT(text, Contains("\npath=/opt/x/libnvrtc.so.13\n") && Contains("\ntarget=sm_90\n") &&
                         Contains("\nalias.1=" + kKeyB + "\n"));
    kjit::jit::kernels::NoteKeying kk;
    kjit::jit::kernels::PlanNote::NotedValues v;
    std::vector<std::string> k, a;
    REQUIRE(kjit::jit::kernels::parse_plan_note(text, 4, kk, v, k, a));
    CHECK(kk.nvrtc_lines == keying.nvrtc_lines);
    CHECK(kk.nvrtc_version == keying.nvrtc_version);
    CHECK(kk.target == keying.target);
    CHECK(v == values);
    CHECK(k == keys);
    CHECK(a == aliases);

    // Version 3's last line named a group whose entry the note carried: no longer a note. Nor is
    // version 4's text, which had no alias lines (a note of another format reads as no note).
    CHECK_FALSE(kjit::jit::kernels::parse_plan_note(text + "entry=3\n", 4, kk, v, k, a));
    CHECK_FALSE(kjit::jit::kernels::parse_plan_note("kjit-plan-note 4" + text.substr(16, text.find("alias.") - 16), 4, kk, v, k, a));

    // Values or a keying that cannot be written on one line make no note at all.
    CHECK(kjit::jit::kernels::format_plan_note(keying, {{"a", "x\ny"}}, {}, {}).empty());
    CHECK(kjit::jit::kernels::format_plan_note(keying, {{"a=b", "x"}}, {}, {}).empty());
    CHECK(kjit::jit::kernels::format_plan_note({"", "v", "sm_90"}, values, keys, aliases).empty());
    CHECK(kjit::jit::kernels::format_plan_note({"path=/x", "v", "sm_90"}, values, keys, aliases).empty());  // no line end
    CHECK(kjit::jit::kernels::format_plan_note({"path=/x\n", "v\n1", "sm_90"}, values, keys, aliases).empty());
    CHECK(kjit::jit::kernels::format_plan_note({"path=/x\n", "v", ""}, values, keys, aliases).empty());
    CHECK(kjit::jit::kernels::format_plan_note({"version_key=1\n", "v", "sm_90"}, values, keys, aliases).empty());

    const std::size_t target_at = text.find("target=");
    const std::size_t version_at = text.find("version_key=");
    for (const std::string& bad : {std::string(), std::string("kjit-plan-note 5\n"), "kjit-plan-note 3" + text.substr(16),
                                  "kjit-plan-note 4" + text.substr(16),
                                  text.substr(0, text.size() - 1), text.substr(0, target_at),
                                  text.substr(0, version_at) + text.substr(target_at),  // no version
                                  text.substr(0, 17) + text.substr(version_at),          // no identity lines
                                  text.substr(0, target_at) + "target=\n" + text.substr(text.find('\n', target_at) + 1),
                                  text.substr(0, 17) + "noequals\n" + text.substr(17),
                                  text.substr(0, target_at) + "late=1\n" + text.substr(target_at),
                                  text.substr(0, version_at) + "version_key=\n" + text.substr(target_at),
                                  text + "target=sm_80\n", text + "path=/y\n", text + "version_key=2\n",
                                  text + "key.1=" + kKeyB + "\n", text + "key.4=" + kKeyB + "\n", text + "key.x=" + kKeyB + "\n",
                                  text + "key.2=" + kKeyA.substr(1) + "\n", text + "value.vector_width=8\n", text + "other=1\n",
                                  text + "key.99999999999999999999999=" + kKeyA + "\n", text + "novalue\n",
                                  text + "alias.1=" + kKeyA + "\n", text + "alias.4=" + kKeyA + "\n",
                                  text + "alias.0=" + kKeyA.substr(1) + "\n", text + "alias.=" + kKeyA + "\n"}) {
        INFO(bad);
        CHECK_FALSE(kjit::jit::kernels::parse_plan_note(bad, 4, kk, v, k, a));
    }
    // A changed byte or a cut: never a crash, and what does read is a well-formed note (damage
    // itself is the note file's checksum's to catch, cache/disk_store.hpp).
    auto well_formed = [&](const std::string& s) {
        if (!kjit::jit::kernels::parse_plan_note(s, 4, kk, v, k, a)) return;
        kjit::jit::kernels::NoteKeying kk2;
        kjit::jit::kernels::PlanNote::NotedValues v2;
        std::vector<std::string> k2, a2;
        const std::string again = kjit::jit::kernels::format_plan_note(kk, v, k, a);  // viewed by kk2 and v2
        CHECK(kjit::jit::kernels::parse_plan_note(again, 4, kk2, v2, k2, a2));
        CHECK(kk2.nvrtc_lines == kk.nvrtc_lines);
        CHECK(kk2.nvrtc_version == kk.nvrtc_version);
        CHECK(kk2.target == kk.target);
        CHECK(v2 == v);
        CHECK(k2 == k);
        CHECK(a2 == a);
    };
    std::mt19937_64& rng = kjit::test::rng();
    for (int trial = 0; trial < 2000; ++trial) {
        std::string s = text;
        s[rng() % s.size()] = static_cast<char>(rng() % 256);
        well_formed(s);
    }
    for (std::size_t cut = 0; cut < text.size(); ++cut) well_formed(text.substr(0, cut));
}

TEST_CASE("held identity lines are exactly the lines NVRTC's file and environment give now", "[plan_note]") {
    const kjit::test::TempDir dir;
    const fs::path library = dir.path() / "libnvrtc.so.13";
    write_bytes(library, "not really a library");
    const std::string lines = kjit::jit::compile::nvrtc_identity_lines(library.string());
    REQUIRE_FALSE(lines.empty());
    CHECK(kjit::jit::compile::held_identity_lines(lines) == lines.size());
    CHECK(kjit::jit::compile::held_identity_lines(lines + "version_key=x\n") == lines.size());  // what follows is not theirs
    // Any byte changed, any cut: not held (never a crash).
    for (std::size_t at = 0; at < lines.size(); ++at) {
        std::string bad = lines;
        bad[at] = bad[at] == '1' ? '2' : '1';
        INFO("byte " << at);
        CHECK(kjit::jit::compile::held_identity_lines(bad) == 0);
    }
    for (std::size_t cut = 0; cut < lines.size(); ++cut) CHECK(kjit::jit::compile::held_identity_lines(lines.substr(0, cut)) == 0);
    // The file rewritten (size, mtime), or an environment that could choose another NVRTC: not held.
    {
        const kjit::test::ScopedEnv elsewhere("CUDA_HOME", "/somewhere/else");
        CHECK(kjit::jit::compile::held_identity_lines(lines) == 0);
    }
    CHECK(kjit::jit::compile::held_identity_lines(lines) == lines.size());
    write_bytes(library, "another library, longer");
    CHECK(kjit::jit::compile::held_identity_lines(lines) == 0);
    fs::remove(library);
    CHECK(kjit::jit::compile::held_identity_lines(lines) == 0);
}

TEST_CASE("kjit's source identity, which names plan notes, is a hash made at build time", "[plan_note]") {
    const std::string id = kjit::jit::compile::kSourceIdentity;
    CHECK(id.size() == 32);
    CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);
}

TEST_CASE("notes round-trip through a folder, damaged ones read as none, clear removes them", "[disk_store]") {
    const kjit::test::TempDir dir;
    kjit::cache::DiskStore store(dir.path() / "c", true);
    CHECK_FALSE(store.read_note(kKeyA));
    REQUIRE(store.write_note(kKeyA, "line one\nline two\n"));
    REQUIRE(store.read_note(kKeyA));
    CHECK(store.read_note(kKeyA)->text() == "line one\nline two\n");
    CHECK_FALSE(store.write_note("not-a-key", "x"));
    CHECK_FALSE(store.read_note("../escape/0123456789abcdef012345"));

    // Every byte changed, and every cut: read as no note, never as other text.
    const fs::path file = dir.path() / "c" / kKeyA.substr(0, 2) / (kKeyA + ".note");
    REQUIRE(fs::exists(file));
    const std::string good = read_bytes(file);
    for (std::size_t at = 0; at < good.size(); ++at) {
        std::string bad = good;
        bad[at] = static_cast<char>(bad[at] ^ 0x20);
        write_bytes(file, bad);
        INFO("byte " << at);
        CHECK_FALSE(store.read_note(kKeyA));
    }
    for (std::size_t cut = 0; cut < good.size(); ++cut) {
        write_bytes(file, good.substr(0, cut));
        CHECK_FALSE(store.read_note(kKeyA));
    }
    write_bytes(file, good);
    CHECK(store.read_note(kKeyA));

    // A read-only store reads notes and writes none; list() counts entries only; clear() removes notes.
    kjit::cache::DiskStore read_only(dir.path() / "c", false);
    CHECK(read_only.read_note(kKeyA));
    CHECK_FALSE(read_only.write_note(kKeyB, "x\n"));
    CHECK(store.list().empty());
    store.clear();
    CHECK_FALSE(fs::exists(file));
    CHECK_FALSE(store.read_note(kKeyA));
}

TEST_CASE("a note counts in the size cap, is evicted and verified; bytes after its check line are damage", "[disk_store]") {
    const kjit::test::TempDir dir;
    kjit::cache::DiskStore store(dir.path() / "c", true);
    kjit::cache::Entry e;
    e.key = kKeyB;
    e.meta.kernel_name = "noted";
    e.meta.arch = "sm_90";
    e.cubin = kjit::test::random_elements(DType::uint8, 3000);
    const std::string text = "kjit-plan-note 4\nline\n";
    REQUIRE(store.write_note(kKeyA, text));
    std::optional<kjit::cache::DiskStore::Note> note = store.read_note(kKeyA);
    REQUIRE(note);
    CHECK(note->text() == text);
    // Texts a note cannot have: no note written.
    CHECK_FALSE(store.write_note(kKeyB, "a\nxxh3=0123456789abcdef\n"));
    CHECK_FALSE(store.write_note(kKeyB, "no line end"));
    CHECK_FALSE(store.write_note(kKeyB, "xxh3=0123456789abcdef\n"));
    CHECK(store.verify_notes().empty());

    // Damage in the text, and bytes after the check line (what an older kjit's note carried): no
    // note, and verify names it.
    const fs::path file = dir.path() / "c" / kKeyA.substr(0, 2) / (kKeyA + ".note");
    const std::string good = read_bytes(file);
    for (const std::string& bad : {good.substr(0, 3) + static_cast<char>(good[3] ^ 4) + good.substr(4), good + "x"}) {
        write_bytes(file, bad);
        CHECK_FALSE(store.read_note(kKeyA));
        CHECK(store.verify_notes().size() == 1);
    }
    write_bytes(file, good);

    // The size cap counts notes; the least recently used of entries and notes goes first.
    CHECK(store.total_bytes() == good.size());
    CHECK(store.list().empty());  // entries only
    REQUIRE(store.write(e));
    CHECK(store.total_bytes() == good.size() + fs::file_size(store.entry_path(kKeyB)));
    struct timespec old[2] = {{::time(nullptr) - 7200, 0}, {::time(nullptr) - 7200, 0}};
    REQUIRE(::utimensat(AT_FDCWD, file.c_str(), old, 0) == 0);
    store.prune(store.total_bytes() - 1);
    CHECK_FALSE(fs::exists(file));                         // the note, used longest ago
    CHECK(fs::exists(store.entry_path(kKeyB)));
}

namespace {

kjit::CacheSettings with_record(const fs::path& dir, const std::string& record) {
    kjit::CacheSettings s = cache_in(dir);
    s.record = record;
    return s;
}

// A process, as far as the kernel cache is concerned: its own cache object on `dir` (so nothing
// in memory from before), on the pretend sm_90 driver.
struct PretendProcess {
    kjit::Array x, y;
    explicit PretendProcess(const fs::path& dir, const std::string& record = {}) : PretendProcess(with_record(dir, record)) {}
    explicit PretendProcess(const kjit::CacheSettings& s) {
        kjit::configure_cache(s);
        x = kjit::Array::empty({1000}, DType::float32, kjit::Device::cuda(0));
        y = kjit::Array::empty({1000}, DType::float32, kjit::Device::cuda(0));
    }
    // A new kernel object (nothing of an earlier one's plans), called once.
    void call(const std::string& name = "noted") {
        const kjit::ElementwiseKernel k("T x, T a, T b", "T y", "y = a * x + b", name);
        k.launch({x, 2.0f, 1.0f, y});
    }
};

}  // namespace

TEST_CASE("a first call through a plan note loads the cached kernel without checking or generating it",
          "[kernel_cache][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    const kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    const fs::path dir = work.path() / "cache";
    {
        PretendProcess first(dir);
        first.call();
        CHECK(kjit::cache_stats().compiles == 1);
        CHECK(kjit::cache_stats().note_hits == 0);
    }
    REQUIRE(files_ending(dir, ".note").size() == 1);
    const fs::path note = files_ending(dir, ".note")[0];
    const int launches = kjit::test::fake_state().launches;

    SECTION("a later process finds the note") {
        PretendProcess later(dir);
        const std::uint64_t generated = kjit::jit::codegen::elementwise_generations();
        later.call();
        CHECK(kjit::jit::codegen::elementwise_generations() == generated);
        CHECK(kjit::cache_stats().note_hits == 1);
        CHECK(kjit::cache_stats().compiles == 0);
        CHECK(kjit::test::fake_state().launches == launches + 1);
        CHECK(kjit::test::fake_state().last_grid_x == 4);  // the small variant: 1000 elements, 256 a block
        // A variant the note has no key for yet is generated then, and noted.
        const kjit::ElementwiseKernel k("T x, T a, T b", "T y", "y = a * x + b", "noted");
        const kjit::Array big_x = kjit::Array::empty({1 << 20}, DType::float32, kjit::Device::cuda(0));
        const kjit::Array big_y = kjit::Array::empty({1 << 20}, DType::float32, kjit::Device::cuda(0));
        k.launch({big_x, 2.0f, 1.0f, big_y});
        CHECK(kjit::jit::codegen::elementwise_generations() > generated);
        CHECK(kjit::cache_stats().compiles == 1);
        PretendProcess third(dir);
        const std::uint64_t before_third = kjit::jit::codegen::elementwise_generations();
        const kjit::ElementwiseKernel k3("T x, T a, T b", "T y", "y = a * x + b", "noted");
        k3.launch({big_x, 2.0f, 1.0f, big_y});
        k3.launch({third.x, 2.0f, 1.0f, third.y});
        CHECK(kjit::jit::codegen::elementwise_generations() == before_third);
        CHECK(kjit::cache_stats().compiles == 0);
    }
    SECTION("a damaged note is no note: the long way, from the cache, and the note written again") {
        std::string bytes = read_bytes(note);
        bytes[40] = static_cast<char>(bytes[40] ^ 1);  // in its text
        write_bytes(note, bytes);
        PretendProcess later(dir);
        const std::uint64_t generated = kjit::jit::codegen::elementwise_generations();
        later.call();
        CHECK(kjit::jit::codegen::elementwise_generations() > generated);
        CHECK(kjit::cache_stats().note_hits == 0);
        CHECK(kjit::cache_stats().compiles == 0);
        CHECK(kjit::test::fake_state().launches == launches + 1);
        PretendProcess again(dir);
        again.call();
        CHECK(kjit::cache_stats().note_hits == 1);
    }
    SECTION("a note whose entry is gone sends the call the long way, which compiles it again") {
        for (const fs::path& e : files_ending(dir, ".kjit")) fs::remove(e);
        PretendProcess later(dir);
        later.call();
        CHECK(kjit::cache_stats().note_hits == 1);
        CHECK(kjit::cache_stats().compiles == 1);
        CHECK(kjit::test::fake_state().launches == launches + 1);
        PretendProcess again(dir);
        const std::uint64_t generated = kjit::jit::codegen::elementwise_generations();
        again.call();
        CHECK(kjit::jit::codegen::elementwise_generations() == generated);
        CHECK(kjit::cache_stats().compiles == 0);
    }
    SECTION("without NVRTC loaded, the note is taken while NVRTC's file and environment are unchanged") {
        const kjit::detail::ScopedNvrtcOverride no_nvrtc(nullptr);
        {
            PretendProcess later(dir);
            const std::uint64_t generated = kjit::jit::codegen::elementwise_generations();
            later.call();
            CHECK(kjit::jit::codegen::elementwise_generations() == generated);
            CHECK(kjit::cache_stats().note_hits == 1);
            CHECK(kjit::cache_stats().compiles == 0);
            CHECK(kjit::test::fake_state().launches == launches + 1);
        }
        // Another environment could load another NVRTC; a process that has none loaded and knows
        // of none still takes the note (by its keys while the NVRTC recorded beside the folder
        // holds, else by its aliases): its values do not depend on NVRTC.
        const kjit::test::ScopedEnv elsewhere("CUDA_HOME", "/somewhere/else");
        PretendProcess later(dir);
        const std::uint64_t generated = kjit::jit::codegen::elementwise_generations();
        later.call();
        CHECK(kjit::jit::codegen::elementwise_generations() == generated);
        CHECK(kjit::cache_stats().note_hits == 1);
        CHECK(kjit::cache_stats().compiles == 0);
        CHECK(kjit::test::fake_state().launches == launches + 2);
    }
    SECTION("a note made under another NVRTC is not taken") {
        std::string bytes = read_bytes(note);
        const std::size_t at = bytes.find("\nversion_key=") + 13;
        bytes.insert(at, "older-");
        // Rewritten with a good check line, as a note written by that other NVRTC's process would be.
        bytes.resize(bytes.rfind("xxh3="));
        REQUIRE(kjit::cache::DiskStore(dir, true).write_note(note.stem().string(), bytes));
        PretendProcess later(dir);
        const std::uint64_t generated = kjit::jit::codegen::elementwise_generations();
        later.call();
        CHECK(kjit::jit::codegen::elementwise_generations() > generated);
        CHECK(kjit::cache_stats().note_hits == 0);
        CHECK(kjit::cache_stats().compiles == 0);
        CHECK_THAT(read_bytes(note), !Contains("older-"));  // noted again by the long way
    }
    SECTION("another kernel name is another note") {
        PretendProcess later(dir);
        later.call("noted_other");
        CHECK(kjit::cache_stats().note_hits == 0);
    }
    SECTION("under KJIT_CACHE_RECORD a noted call is recorded too") {
        const fs::path manifest = work.path() / "manifest.json";
        PretendProcess later(dir, manifest.string());
        later.call();
        CHECK(kjit::cache_stats().note_hits == 1);
        const nlohmann::json recorded = kjit::cache::read_manifest(manifest);
        REQUIRE(recorded["kernels"].size() == 1);
        CHECK(recorded["kernels"][0]["name"] == "noted");
    }
}

TEST_CASE("kjit precompile notes plans: a read-only cache's first call without NVRTC loads through the note's aliases",
          "[kernel_cache][nvrtc][manifest]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    const kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    // The manifest a run records (the kernel with its binding and variant), precompiled into a
    // folder then shipped: used read-only, with no writable folder.
    const fs::path manifest = work.path() / "manifest.json";
    {
        PretendProcess recording(work.path() / "recording", manifest.string());
        recording.call("noted");
        recording.call("noted_other");
    }
    const fs::path shipped = work.path() / "shipped";
    kjit::configure_cache(cache_in(shipped));
    const kjit::jit::kernels::PrecompileResult r = kjit::jit::kernels::precompile(kjit::cache::read_manifest(manifest), {"sm_90", "compute_90"}, 2);
    CHECK(r.failures.empty());
    // One note per kernel and architecture that a GPU reports as its own (not PTX only).
    REQUIRE(files_ending(shipped, ".note").size() == 2);
    for (const fs::path& n : files_ending(shipped, ".note")) CHECK_THAT(read_bytes(n), Contains("\nalias.6="));

    kjit::CacheSettings read_only;
    read_only.read_only = {shipped.string()};
    const kjit::detail::ScopedNvrtcOverride no_nvrtc(nullptr);
    const kjit::test::ScopedEnv absent("KJIT_NVRTC_LIBRARY", "/nonexistent");  // the noted NVRTC does not hold
    const int launches = kjit::test::fake_state().launches;

    SECTION("the first call takes the note: nothing generated or compiled, and it launches") {
        PretendProcess later(read_only);
        const std::uint64_t generated = kjit::jit::codegen::elementwise_generations();
        later.call();
        CHECK(kjit::cache_stats().note_hits == 1);
        CHECK(kjit::jit::codegen::elementwise_generations() == generated);
        CHECK(kjit::cache_stats().compiles == 0);
        CHECK(kjit::test::fake_state().launches == launches + 1);
        CHECK(kjit::test::fake_state().last_grid_x == 4);  // the small variant
    }
    SECTION("an alias the note names that leads to another kernel's entry is a miss: the long way finds it") {
        // The small variant's alias of "noted" swapped for "noted_other"'s entry: a sound alias
        // file (it names itself), another kernel's entry.
        auto alias_of = [&](const std::string& text) {
            const std::size_t at = text.find("\nalias.6=") + 9;
            return text.substr(at, 32);
        };
        auto key_of = [&](const std::string& text) {
            const std::size_t at = text.find("\nkey.6=") + 7;
            return text.substr(at, 32);
        };
        std::vector<std::string> texts;
        for (const fs::path& n : files_ending(shipped, ".note"))
            if (read_bytes(n).find("\ntarget=sm_90\n") != std::string::npos) texts.push_back(read_bytes(n));
        REQUIRE(texts.size() == 2);
        REQUIRE(alias_of(texts[0]) != alias_of(texts[1]));
        kjit::cache::DiskStore store(shipped, true);
        const std::vector<std::pair<std::string, std::string>> straight{{alias_of(texts[0]), key_of(texts[0])},
                                                                        {alias_of(texts[1]), key_of(texts[1])}};
        REQUIRE(store.write_alias(alias_of(texts[0]), key_of(texts[1])));
        REQUIRE(store.write_alias(alias_of(texts[1]), key_of(texts[0])));
        PretendProcess later(read_only);
        const std::uint64_t generated = kjit::jit::codegen::elementwise_generations();
        CHECK_THROWS(later.call("noted"));
        CHECK(kjit::cache_stats().note_hits == 1);
        // The long way checks and generates, and its own alias (the same, swapped) misses too:
        // no kernel to run, and never another kernel's.
        CHECK(kjit::jit::codegen::elementwise_generations() > generated);
        CHECK(kjit::test::fake_state().launches == launches);
    }
    SECTION("a damaged alias the note names is a miss: the long way") {
        for (const fs::path& a : files_ending(shipped, ".alias")) write_bytes(a, "damaged\n");
        PretendProcess later(read_only);
        const std::uint64_t generated = kjit::jit::codegen::elementwise_generations();
        CHECK_THROWS(later.call());  // no NVRTC and no sound alias: nothing can serve it
        CHECK(kjit::cache_stats().note_hits == 1);
        CHECK(kjit::jit::codegen::elementwise_generations() > generated);
        CHECK(kjit::test::fake_state().launches == launches);
    }
    SECTION("a format-4 note (no alias lines) is no note: the long way finds the kernel by alias") {
        for (const fs::path& n : files_ending(shipped, ".note")) {
            std::string text = read_bytes(n);
            text.resize(text.rfind("xxh3="));
            text = "kjit-plan-note 4" + text.substr(16, text.find("alias.") - 16);
            REQUIRE(kjit::cache::DiskStore(shipped, true).write_note(n.stem().string(), text));
        }
        PretendProcess later(read_only);
        const std::uint64_t generated = kjit::jit::codegen::elementwise_generations();
        later.call();
        CHECK(kjit::cache_stats().note_hits == 0);
        CHECK(kjit::jit::codegen::elementwise_generations() > generated);
        CHECK(kjit::cache_stats().compiles == 0);
        CHECK(kjit::test::fake_state().launches == launches + 1);
    }
}

TEST_CASE("a kernel loaded through its plan note computes what the host does", "[gpu][plan_note]") {
    KJIT_REQUIRE_GPU();
    const ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    // The small variant, then the vectorised one: each first through the long way, then through the note.
    for (const std::int64_t n : {std::int64_t{1000}, std::int64_t{1} << 20}) {
        INFO("n = " << n);
        const kjit::test::DeviceData x = kjit::test::random_device(DType::float64, {n});
        for (int process = 0; process < 2; ++process) {
            INFO("process " << process);
            kjit::configure_cache(cache_in(work.path()));  // a fresh cache object: only the disk remembers
            const kjit::ElementwiseKernel k("T x, T a, T b", "T y", "y = a * x + b", "noted_gpu");
            const kjit::Array y = kjit::test::poisoned(DType::float64, {n});
            k.launch({x.device, 2.5, -1.25, y});
            CHECK(kjit::test::mismatches(y, [&](std::size_t i) {
                      return 2.5 * kjit::test::element_value(x.host, DType::float64, i) - 1.25;
                  }, 1e-14, 1e-14) == 0);  // the GPU may fuse the multiply-add
            // The large size's first process finds the note the small one made (without a key
            // for the vectorised variant yet, which it then compiles and notes).
            CHECK(kjit::cache_stats().note_hits == (process == 1 || n > 1000 ? 1u : 0u));
        }
    }
}

TEST_CASE("a noted kernel that reads i still visits elements in C order", "[gpu][plan_note]") {
    KJIT_REQUIRE_GPU();
    const ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    // A transposed input would be walked in memory order if its dimensions were merged or swapped;
    // `i` must stay the C-order index of the call's shape whether the plan came from a note or not.
    const std::int64_t rows = 300, cols = 70;
    const kjit::test::DeviceData x = kjit::test::random_device(DType::float32, {cols, rows});
    const kjit::Array xt = x.device.transpose();  // rows x cols, strides (1, rows)
    for (int process = 0; process < 2; ++process) {
        INFO("process " << process);
        kjit::configure_cache(cache_in(work.path()));
        const kjit::ElementwiseKernel k("T x", "float64 y", "y = x + i", "noted_index");
        const kjit::Array y = kjit::test::poisoned(DType::float64, {rows, cols});
        k.launch({xt, y});
        CHECK(kjit::test::mismatches(y, [&](std::size_t f) {
                  const std::size_t r = f / static_cast<std::size_t>(cols), c = f % static_cast<std::size_t>(cols);
                  return kjit::test::element_value(x.host, DType::float32, c * static_cast<std::size_t>(rows) + r) +
                         static_cast<double>(f);
              }, 1e-6) == 0);
        CHECK(kjit::cache_stats().note_hits == static_cast<std::uint64_t>(process));
    }
}

TEST_CASE("a user reduction's first call through its plan note loads it without checking or generating it",
          "[kernel_cache][nvrtc][plan_note]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    kjit::detail::DriverApi api = kjit::test::make_fake_launching_driver();
    api.cuMemsetD8Async = [](CUdeviceptr, unsigned char, std::size_t, CUstream) { return CUDA_SUCCESS; };  // workspaces
    const kjit::detail::ScopedDriverOverride fake(api, 1);
    const fs::path dir = work.path() / "cache";
    // A sum of squares of 1000 float32 to a 0-d output (the `full` strategy), or of a 100 x 1000
    // array along its rows (a rows strategy: another group of the module); `reduce_type` as given.
    const auto call = [](const std::string& name, bool rows = false, const std::string& reduce_type = {}) {
        kjit::KernelOptions o;
        o.reduce_type = reduce_type;
        const kjit::ReductionKernel sumsq("T x", "T y", "x * x", "a + b", "y = a", "0", name, o);
        const kjit::Shape in = rows ? kjit::Shape{100, 1000} : kjit::Shape{1000}, out = rows ? kjit::Shape{100} : kjit::Shape{};
        const kjit::Array x = kjit::Array::empty(in, DType::float32, kjit::Device::cuda(0));
        const kjit::Array y = kjit::Array::empty(out, DType::float32, kjit::Device::cuda(0));
        kjit::ReduceOptions options;
        if (rows) options.axis = std::vector<int>{1};
        sumsq.launch({x, y}, options);
    };
    kjit::configure_cache(cache_in(dir));
    call("noted_sumsq");
    CHECK(kjit::cache_stats().compiles == 1);
    CHECK(kjit::cache_stats().note_hits == 0);
    REQUIRE(files_ending(dir, ".note").size() == 1);
    const int launches = kjit::test::fake_state().launches;

    SECTION("a later process finds the note") {
        kjit::configure_cache(cache_in(dir));
        const std::uint64_t generated = kjit::jit::codegen::reduction_generations();
        call("noted_sumsq");
        CHECK(kjit::jit::codegen::reduction_generations() == generated);
        CHECK(kjit::cache_stats().note_hits == 1);
        CHECK(kjit::cache_stats().compiles == 0);
        CHECK(kjit::test::fake_state().launches > launches);
    }
    SECTION("another name, or another reduce type, is another note") {
        kjit::configure_cache(cache_in(dir));
        call("noted_sumsq_other");
        CHECK(kjit::cache_stats().note_hits == 0);
        kjit::configure_cache(cache_in(dir));
        call("noted_sumsq", false, "float64");
        CHECK(kjit::cache_stats().note_hits == 0);
    }
    SECTION("a strategy the note has no key for is generated then, once, and noted") {
        kjit::configure_cache(cache_in(dir));
        const std::uint64_t generated = kjit::jit::codegen::reduction_generations();
        call("noted_sumsq", true);
        CHECK(kjit::cache_stats().note_hits == 1);
        CHECK(kjit::jit::codegen::reduction_generations() == generated + 1);
        CHECK(kjit::cache_stats().compiles == 1);
        // A third process has both strategies noted: nothing generated, nothing compiled.
        kjit::configure_cache(cache_in(dir));
        const std::uint64_t before_third = kjit::jit::codegen::reduction_generations();
        call("noted_sumsq", true);
        call("noted_sumsq");
        CHECK(kjit::jit::codegen::reduction_generations() == before_third);
        CHECK(kjit::cache_stats().compiles == 0);
        CHECK(kjit::cache_stats().note_hits >= 1);
    }
}

TEST_CASE("kjit precompile notes reductions too: a read-only cache's first call without NVRTC takes the note",
          "[kernel_cache][nvrtc][manifest][plan_note]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    kjit::detail::DriverApi api = kjit::test::make_fake_launching_driver();
    api.cuMemsetD8Async = [](CUdeviceptr, unsigned char, std::size_t, CUstream) { return CUDA_SUCCESS; };  // workspaces
    const kjit::detail::ScopedDriverOverride fake(api, 1);
    const nlohmann::json manifest = {
        {"kernels", nlohmann::json::array({{{"kind", "reduction"}, {"name", "shipped_sumsq"}, {"in", "T x"}, {"out", "T y"},
                                            {"map", "x * x"}, {"reduce", "a + b"}, {"post", "y = a"}, {"identity", "0"},
                                            {"types", nlohmann::json::array({{{"T", "float32"}}})}}})}};
    const fs::path shipped = work.path() / "shipped";
    kjit::configure_cache(cache_in(shipped));
    const kjit::jit::kernels::PrecompileResult r = kjit::jit::kernels::precompile(manifest, {"sm_90"}, 2);
    CHECK(r.failures.empty());
    REQUIRE(files_ending(shipped, ".note").size() == 1);
    // Every strategy's group, by key and by alias: 6 groups x 2 index widths.
    const std::string note = read_bytes(files_ending(shipped, ".note")[0]);
    CHECK_THAT(note, Contains("\nalias.11=") && Contains("\nkey.0=") && Contains("entry.columns_split64.1="));

    kjit::CacheSettings read_only;
    read_only.read_only = {shipped.string()};
    kjit::configure_cache(read_only);
    const kjit::detail::ScopedNvrtcOverride no_nvrtc(nullptr);
    const kjit::test::ScopedEnv absent("KJIT_NVRTC_LIBRARY", "/nonexistent");
    const int launches = kjit::test::fake_state().launches;
    const std::uint64_t generated = kjit::jit::codegen::reduction_generations();
    const kjit::ReductionKernel sumsq("T x", "T y", "x * x", "a + b", "y = a", "0", "shipped_sumsq");
    const kjit::Array x = kjit::Array::empty({100, 1000}, DType::float32, kjit::Device::cuda(0));
    const kjit::Array y = kjit::Array::empty({100}, DType::float32, kjit::Device::cuda(0));
    const kjit::Array total = kjit::Array::empty({}, DType::float32, kjit::Device::cuda(0));
    kjit::ReduceOptions rows;
    rows.axis = std::vector<int>{1};
    sumsq.launch({x, y}, rows);   // a rows strategy
    sumsq.launch({x, total});     // full: another group of the same note
    CHECK(kjit::cache_stats().note_hits == 1);
    CHECK(kjit::cache_stats().compiles == 0);
    CHECK(kjit::jit::codegen::reduction_generations() == generated);
    CHECK(kjit::test::fake_state().launches == launches + 2);
}

TEST_CASE("a reduction's plan note values read back only when they are exactly a plan", "[plan_note]") {
    kjit::jit::kernels::ReductionModule m;
    m.reduce_itemsize = 8;
    m.has_identity = true;
    m.array_inputs = 1;
    m.outputs = 1;
    m.vector_width = 4;
    kjit::jit::codegen::GeneratedReduction g;
    int k = 0;
    for (std::string* name : {&g.full32, &g.full64, &g.rows_warp32, &g.rows_warp64, &g.rows_block32, &g.rows_block64, &g.columns32,
                              &g.columns64, &g.columns_split32, &g.columns_split64, &g.columns_finish32, &g.columns_finish64,
                              &g.segments_warp32, &g.segments_warp64, &g.segments_block32, &g.segments_block64, &g.small32, &g.bins64,
                              &g.bins_finish64})
        *name = "k_" + std::to_string(k++);
    const std::vector<std::vector<std::string>> groups = kjit::jit::kernels::reduction_groups(g);
    const kjit::jit::kernels::PlanNote::Values values = kjit::jit::kernels::reduction_note_values(m, groups);
    const auto read = [](const kjit::jit::kernels::PlanNote::Values& v, kjit::jit::kernels::ReductionModule& out, kjit::jit::kernels::EntryGroups& names) {
        const kjit::jit::kernels::PlanNote::NotedValues views(v.begin(), v.end());
        return kjit::jit::kernels::reduction_from_note(views, out, names);
    };
    kjit::jit::kernels::ReductionModule back;
    kjit::jit::kernels::EntryGroups names;
    REQUIRE(read(values, back, names));
    CHECK(back.reduce_itemsize == 8);
    CHECK(back.has_identity);
    CHECK(back.vector_width == 4);
    REQUIRE(names.size() == groups.size());
    for (std::size_t s = 0; s < groups.size(); ++s) CHECK(names.names(s) == groups[s]);

    kjit::jit::kernels::PlanNote::Values extra = values, missing = values, wrong = values;
    extra.emplace_back("entry.full32.1", "k_more");
    missing.pop_back();
    for (auto& [n, v] : wrong)
        if (n == "vector_width") v = "17";
    CHECK_FALSE(read(extra, back, names));
    CHECK_FALSE(read(missing, back, names));
    CHECK_FALSE(read(wrong, back, names));
}

TEST_CASE("a user reduction loaded through its plan note computes what the host does", "[gpu][plan_note]") {
    KJIT_REQUIRE_GPU();
    const ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    const std::int64_t n = 100003;
    const kjit::test::DeviceData x = kjit::test::random_device(DType::float64, {n});
    long double sum = 0;  // the host's reference, in higher precision
    for (std::int64_t i = 0; i < n; ++i) {
        const long double v = kjit::test::element_value(x.host, DType::float64, static_cast<std::size_t>(i)).real();
        sum += v * v;
    }
    const double want = static_cast<double>(sum);
    for (int process = 0; process < 2; ++process) {
        INFO("process " << process);
        kjit::configure_cache(cache_in(work.path()));  // a fresh cache object: only the disk remembers
        const std::uint64_t generated = kjit::jit::codegen::reduction_generations();
        const kjit::ReductionKernel sumsq("T x", "T y", "x * x", "a + b", "y = a", "0", "noted_sumsq_gpu");
        const kjit::Array y = kjit::test::poisoned(DType::float64, {});
        sumsq.launch({x.device, y});
        CHECK(kjit::test::mismatches(y, [&](std::size_t) { return want; }, 1e-10) == 0);
        CHECK(kjit::cache_stats().note_hits == static_cast<std::uint64_t>(process));
        CHECK((kjit::jit::codegen::reduction_generations() == generated) == (process == 1));
    }
}
