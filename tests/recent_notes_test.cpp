// Reading ahead what a fresh process's first calls read (jit/warm_start.hpp): the folder's list of
// recent notes (cache/recent_notes.hpp), the notes a kernel cache reads ahead from it, and the
// `stat` of NVRTC's file taken ahead for the next identity check.
#include "test_support.hpp"

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>

#include "cache/disk_store.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/recent_notes.hpp"
#include "jit/nvrtc_identity.hpp"

namespace fs = std::filesystem;
using kjit::cache::DiskStore;
using kjit::cache::KernelCache;

namespace {

// The name of note k: 32 lowercase hex characters.
std::string name_of(int k) {
    char s[33];
    std::snprintf(s, sizeof s, "%032x", k + 0xabc);
    return s;
}

std::string read_file(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), {}};
}

void write_file(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes; }

fs::path note_file(const fs::path& dir, const std::string& name) { return dir / name.substr(0, 2) / (name + ".note"); }

// Sets a file's recorded last use `seconds` into the past, its mtime further back.
void age(const fs::path& p, int seconds) {
    const timespec used{::time(nullptr) - seconds, 0}, modified{::time(nullptr) - 2 * seconds, 0};
    const timespec times[2] = {used, modified};
    REQUIRE(::utimensat(AT_FDCWD, p.c_str(), times, 0) == 0);
}

std::int64_t atime_of(const fs::path& p) {
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    return st.st_atim.tv_sec;
}

}  // namespace

TEST_CASE("a folder lists the notes written last, newest first, each once", "[recent_notes][disk_store]") {
    const kjit::test::TempDir tmp;
    const fs::path dir = tmp.path() / "c";
    DiskStore store(dir, true);
    CHECK(kjit::cache::read_recent_notes(dir).empty());
    REQUIRE(store.write_note(name_of(1), "one\n"));
    REQUIRE(store.write_note(name_of(2), "two\n"));
    REQUIRE(store.write_note(name_of(1), "one again\n"));
    CHECK(kjit::cache::read_recent_notes(dir) == std::vector<std::string>{name_of(1), name_of(2)});
    for (int k = 3; k < 3 + static_cast<int>(kjit::cache::kRecentNotes) + 5; ++k) REQUIRE(store.write_note(name_of(k), "n\n"));
    const std::vector<std::string> names = kjit::cache::read_recent_notes(dir);
    REQUIRE(names.size() == kjit::cache::kRecentNotes);
    CHECK(names.front() == name_of(2 + static_cast<int>(kjit::cache::kRecentNotes) + 5));
    CHECK(std::find(names.begin(), names.end(), name_of(1)) == names.end());  // the oldest went

    // A damaged list is the names before the damage, or none.
    const fs::path list = dir / kjit::cache::kRecentNotesFile;
    const std::string good = read_file(list);
    write_file(list, good.substr(0, good.size() - 5));  // a torn last line
    CHECK(kjit::cache::read_recent_notes(dir).size() == kjit::cache::kRecentNotes - 1);
    std::string bad_name = good;
    bad_name[bad_name.find('\n') + 1 + 33] = 'X';  // the second name
    write_file(list, bad_name);
    CHECK(kjit::cache::read_recent_notes(dir).size() == 1);
    write_file(list, "kjit-recent-notes 2\n" + name_of(1) + "\n");
    CHECK(kjit::cache::read_recent_notes(dir).empty());
    write_file(list, good + good);  // longer than any list
    CHECK(kjit::cache::read_recent_notes(dir).empty());

    store.clear();
    CHECK_FALSE(fs::exists(list));
}

TEST_CASE("notes read ahead are served from memory once, their use recorded as a read's", "[recent_notes][kernel_cache]") {
    const kjit::test::TempDir tmp;
    const fs::path dir = tmp.path() / "c";
    {
        KernelCache writer(kjit::test::cache_in(dir));
        REQUIRE(writer.write_note(name_of(1), "first\n"));
        REQUIRE(writer.write_note(name_of(2), "second\n", std::vector<unsigned char>(3000, 7)));
    }
    SECTION("read ahead, then no file is opened for them") {
        age(note_file(dir, name_of(2)), 3600);
        KernelCache fresh(kjit::test::cache_in(dir));
        CHECK(fresh.prefetch_notes(16, 1 << 20) == 2);
        fs::remove(note_file(dir, name_of(1)));
        const auto one = fresh.read_note(name_of(1));
        REQUIRE(one);
        CHECK(one->note.text() == "first\n");
        CHECK(one->layer == 0);
        CHECK_FALSE(fresh.read_note(name_of(1)));  // once: then from the folder, where it is gone
        // A relatime mount may stamp the read ahead by itself: old again, so that the stamp below
        // can only be kjit's (which reading ahead saw was due).
        age(note_file(dir, name_of(2)), 3600);
        const auto two = fresh.read_note(name_of(2));
        REQUIRE(two);
        CHECK(two->note.entry().size() == 3000);
        CHECK(atime_of(note_file(dir, name_of(2))) > ::time(nullptr) - 100);  // its use, recorded
    }
    SECTION("within the count and byte budgets, newest first") {
        KernelCache fresh(kjit::test::cache_in(dir));
        CHECK(fresh.prefetch_notes(1, 1 << 20) == 1);
        fs::remove(note_file(dir, name_of(1)));
        fs::remove(note_file(dir, name_of(2)));
        CHECK(fresh.read_note(name_of(2)));  // the newest, read ahead
        CHECK_FALSE(fresh.read_note(name_of(1)));
    }
    SECTION("a note past the bytes left is not read ahead; a smaller older one is") {
        KernelCache fresh(kjit::test::cache_in(dir));
        CHECK(fresh.prefetch_notes(16, 1000) == 1);  // the newest (3 KB) is too big
        fs::remove(note_file(dir, name_of(1)));
        CHECK(fresh.read_note(name_of(1)));
        CHECK(fresh.read_note(name_of(2)));  // from the folder
    }
    SECTION("a note written after it was read ahead is read from the folder") {
        KernelCache fresh(kjit::test::cache_in(dir));
        REQUIRE(fresh.prefetch_notes(16, 1 << 20) == 2);
        REQUIRE(fresh.write_note(name_of(1), "rewritten\n"));
        const auto one = fresh.read_note(name_of(1));
        REQUIRE(one);
        CHECK(one->note.text() == "rewritten\n");
    }
    SECTION("a damaged note is not read ahead") {
        std::string bytes = read_file(note_file(dir, name_of(1)));
        bytes[0] ^= 0x20;
        write_file(note_file(dir, name_of(1)), bytes);
        KernelCache fresh(kjit::test::cache_in(dir));
        CHECK(fresh.prefetch_notes(16, 1 << 20) == 1);
        CHECK_FALSE(fresh.read_note(name_of(1)));
    }
    SECTION("no writable folder: nothing") {
        kjit::CacheSettings s = kjit::test::cache_in(dir);
        s.disk = false;
        KernelCache memory_only(s);
        CHECK(memory_only.prefetch_notes(16, 1 << 20) == 0);
    }
}

TEST_CASE("the stat of NVRTC's file taken ahead serves the next identity check of that path, once", "[recent_notes][plan_note]") {
    const kjit::test::TempDir tmp;
    const fs::path library = tmp.path() / "libnvrtc-pretend.so";
    write_file(library, "not really a library");
    const std::string lines = kjit::jit::nvrtc_identity_lines(library.string());
    REQUIRE_FALSE(lines.empty());
    write_file(tmp.path() / "nvrtc-identity", "kjit-nvrtc-identity 1\n" + lines + "version_key=x\narchs=90\n");

    kjit::jit::stat_recorded_nvrtc(tmp.path().string());
    write_file(library, "another library, longer");  // changed after the stat ahead
    CHECK(kjit::jit::held_identity_lines(lines) == lines.size());  // the file as it was then
    CHECK(kjit::jit::held_identity_lines(lines) == 0);             // then as it is

    // A record naming another file: its stat serves no check of this one.
    const std::string now = kjit::jit::nvrtc_identity_lines(library.string());
    write_file(tmp.path() / "nvrtc-identity", "kjit-nvrtc-identity 1\n" + lines + "version_key=x\narchs=90\n");
    const fs::path other = tmp.path() / "other.so";
    write_file(other, "x");
    std::string other_record = read_file(tmp.path() / "nvrtc-identity");
    other_record.replace(other_record.find(library.string()), library.string().size(), other.string());
    write_file(tmp.path() / "nvrtc-identity", other_record);
    kjit::jit::stat_recorded_nvrtc(tmp.path().string());
    CHECK(kjit::jit::held_identity_lines(now) == now.size());
    fs::remove(library);
    CHECK(kjit::jit::held_identity_lines(now) == 0);
}

TEST_CASE("entries the notes read ahead carry are checked ahead, listed newest first, and taken by their key only",
          "[recent_notes][kernel_cache]") {
    const kjit::test::TempDir tmp;
    const fs::path dir = tmp.path() / "c";
    const auto entry_of = [](char digit) {
        kjit::cache::Entry e;
        e.key = std::string(32, digit);
        e.meta.arch = "sm_90";
        e.cubin = {1, 2, 3, static_cast<unsigned char>(digit)};
        return e;
    };
    const kjit::cache::Entry first = entry_of('1'), second = entry_of('2');
    {
        KernelCache writer(kjit::test::cache_in(dir));
        REQUIRE(writer.write_note(name_of(1), "first\n", kjit::cache::serialize_entry(first)));
        REQUIRE(writer.write_note(name_of(2), "second\n", kjit::cache::serialize_entry(second)));
        REQUIRE(writer.write_note(name_of(3), "not an entry\n", std::vector<unsigned char>(100, 9)));
    }
    KernelCache fresh(kjit::test::cache_in(dir));
    REQUIRE(fresh.prefetch_notes(16, 1 << 20) == 3);
    const auto ahead = fresh.entries_read_ahead();
    REQUIRE(ahead.size() == 2);  // the one carrying no entry is not listed
    CHECK(*ahead[0] == second);
    CHECK(*ahead[1] == first);

    auto one = fresh.read_note(name_of(1));
    REQUIRE(one);
    REQUIRE(one->carried);
    CHECK(fresh.entries_read_ahead().size() == 1);  // a note read is no longer ahead
    std::string problem;
    // Parsed for another key: not taken; the bytes are parsed for the key asked (and do not match).
    CHECK_FALSE(fresh.take_carried_entry(second.key, one->note.entry(), 0, {}, "sm_90", problem, one->carried));
    CHECK_THAT(problem, Catch::Matchers::Contains("key differs"));
    const auto taken = fresh.take_carried_entry(first.key, one->note.entry(), 0, {}, "sm_90", problem, one->carried);
    CHECK(taken == one->carried);  // the entry parsed ahead, no second parse
    CHECK(fresh.stats().layers.at(0).hits == 1);
    CHECK_FALSE(fresh.read_note(name_of(3))->carried);  // read from its folder, or ahead with no entry
}
