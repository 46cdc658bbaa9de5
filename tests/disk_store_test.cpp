// One cache folder: atomic writes, compile-once across threads and processes, killed writers,
// damage detection, LRU eviction, folder permissions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/disk_store.hpp"
#include "kjit/error.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using kjit::cache::DiskStore;
using kjit::cache::Entry;

namespace {

std::string key_of(int i) {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%08x%024x", 0xabcd0000u + static_cast<unsigned>(i), static_cast<unsigned>(i) * 7919u);
    return buf;
}

Entry make_entry(const std::string& key, std::size_t cubin_bytes = 200) {
    Entry e;
    e.key = key;
    e.meta.kernel_name = "k_" + key.substr(0, 6);
    e.meta.types = "T=float32";
    e.meta.arch = "sm_90";
    e.meta.nvrtc_version = "12.8";
    e.meta.created_unix = 1'700'000'000;
    e.meta.lowered_names = {{"k<float>", "_Z1kIfEvv"}};
    e.meta.spec_json = R"({"kind":"raw"})";
    e.cubin.resize(cubin_bytes);
    for (auto& b : e.cubin) b = static_cast<unsigned char>(kjit::test::rng()());
    e.ptx = "// ptx of " + key;
    return e;
}

std::vector<unsigned char> file_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

void put_file(const fs::path& p, const std::vector<unsigned char>& bytes) {
    fs::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

unsigned mode_of(const fs::path& p) {
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

void set_atime(const fs::path& p, std::int64_t seconds) {
    const timespec times[2] = {{static_cast<time_t>(seconds), 0}, {0, UTIME_OMIT}};
    REQUIRE(::utimensat(AT_FDCWD, p.c_str(), times, 0) == 0);
}

// Every file name in the folder's shards, to see what a test left behind.
std::set<std::string> names_in(const fs::path& dir) {
    std::set<std::string> names;
    for (const auto& f : fs::recursive_directory_iterator(dir))
        if (!f.is_directory()) names.insert(f.path().filename().string());
    return names;
}

// What kjit writes to stderr (its warnings) while this object lives.
class StderrCapture {
public:
    StderrCapture() : file_(std::tmpfile()) {
        std::fflush(stderr);
        saved_ = ::dup(2);
        ::dup2(::fileno(file_), 2);
    }
    ~StderrCapture() {
        restore();
        std::fclose(file_);
    }
    std::string text() {
        restore();
        std::string s;
        std::rewind(file_);
        for (int c; (c = std::fgetc(file_)) != EOF;) s.push_back(static_cast<char>(c));
        return s;
    }

private:
    void restore() {
        if (saved_ < 0) return;
        std::fflush(stderr);
        ::dup2(saved_, 2);
        ::close(saved_);
        saved_ = -1;
    }
    std::FILE* file_;
    int saved_ = -1;
};

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

// A folder with exactly `mode`, whatever the umask.
void chmod_dir(const fs::path& p, unsigned mode) { REQUIRE(::chmod(p.c_str(), mode) == 0); }

}  // namespace

TEST_CASE("entries round-trip through a folder, sharded by key prefix", "[disk_store]") {
    kjit::test::TempDir tmp;
    DiskStore store(tmp.path(), true);
    REQUIRE(store.writable());
    const Entry e = make_entry(key_of(1));
    CHECK(store.entry_path(e.key) == tmp.path() / e.key.substr(0, 2) / (e.key + ".kjit"));
    CHECK_FALSE(store.read(e.key).has_value());
    REQUIRE(store.write(e));
    CHECK(store.read(e.key) == e);
    CHECK(DiskStore(tmp.path(), false).read(e.key) == e);

    const auto items = store.list();
    REQUIRE(items.size() == 1);
    CHECK(items[0].key == e.key);
    CHECK(items[0].path == store.entry_path(e.key));
    CHECK(items[0].bytes == fs::file_size(items[0].path));
    CHECK(store.total_bytes() == items[0].bytes);
    CHECK(store.verify().empty());
    // Nothing but the entry is left: no temporary, no lock file.
    CHECK(names_in(tmp.path()) == std::set<std::string>{e.key + ".kjit"});

    // Writing again replaces it atomically.
    const Entry e2 = make_entry(e.key, 300);
    REQUIRE(store.write(e2));
    CHECK(store.read(e.key) == e2);
}

TEST_CASE("a key that is not 32 lowercase hex characters is refused", "[disk_store]") {
    kjit::test::TempDir tmp;
    DiskStore store(tmp.path(), true);
    for (const std::string bad : {"", "../../etc/passwd", "0123456789ABCDEF0123456789ABCDEF", "abc"}) {
        CHECK_THROWS_AS(store.entry_path(bad), kjit::CacheError);
        CHECK_THROWS_AS(store.read(bad), kjit::CacheError);
        CHECK_THROWS_AS(store.get_or_create(bad, [] { return Entry{}; }), kjit::CacheError);
    }
    // produce() must return the entry of the key asked for.
    CHECK_THROWS_AS(store.get_or_create(key_of(1), [] { return make_entry(key_of(2)); }), kjit::CacheError);
    CHECK(store.list().empty());
}

TEST_CASE("threads calling get_or_create on one key produce it once", "[disk_store]") {
    kjit::test::TempDir tmp;
    DiskStore store(tmp.path(), true);
    const std::string key = key_of(7);
    std::atomic<int> produced{0};
    std::vector<Entry> results(16);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < results.size(); ++t)
        threads.emplace_back([&, t] {
            results[t] = store.get_or_create(key, [&] {
                ++produced;
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                return make_entry(key, 5000);
            });
        });
    for (auto& t : threads) t.join();
    CHECK(produced == 1);
    for (const auto& r : results) CHECK(r == results[0]);
    CHECK(store.read(key) == results[0]);
    CHECK(names_in(tmp.path()) == std::set<std::string>{key + ".kjit"});
}

TEST_CASE("threads on different keys each produce their own once", "[disk_store]") {
    kjit::test::TempDir tmp;
    DiskStore store(tmp.path(), true);
    std::atomic<int> produced{0};
    std::vector<std::string> got(24);  // checked after the join: Catch's assertions are not thread-safe
    std::vector<std::thread> threads;
    for (int t = 0; t < 24; ++t)
        threads.emplace_back([&, t] {
            const std::string key = key_of(t % 6);
            got[t] = store.get_or_create(key, [&] {
                ++produced;
                return make_entry(key);
            }).key;
        });
    for (auto& t : threads) t.join();
    for (int t = 0; t < 24; ++t) CHECK(got[t] == key_of(t % 6));
    CHECK(produced == 6);
    CHECK(store.list().size() == 6);
}

TEST_CASE("processes calling get_or_create on one folder produce once in total", "[disk_store]") {
    kjit::test::TempDir tmp;
    const fs::path cache = tmp.path() / "cache";
    const fs::path counter = tmp.path() / "produced";
    const std::string key = key_of(11);
    int go[2];
    REQUIRE(::pipe(go) == 0);
    std::vector<pid_t> children;
    for (int i = 0; i < 6; ++i) {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            // Child: wait until every sibling exists, then race. Never returns into Catch.
            ::close(go[1]);
            char c;
            while (::read(go[0], &c, 1) < 0 && errno == EINTR) {
            }
            int rc = 1;
            try {
                DiskStore store(cache, true);
                const Entry got = store.get_or_create(key, [&] {
                    const int fd = ::open(counter.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
                    if (fd >= 0 && ::write(fd, "x", 1) == 1) ::close(fd);
                    std::this_thread::sleep_for(std::chrono::milliseconds(200));
                    Entry e = make_entry(key, 100'000);
                    e.meta.created_unix = 42;
                    return e;
                });
                rc = got.key == key && got.meta.created_unix == 42 && got.cubin.size() == 100'000 ? 0 : 2;
            } catch (...) {
                rc = 3;
            }
            ::_exit(rc);
        }
        children.push_back(pid);
    }
    ::close(go[0]);
    ::close(go[1]);  // start them all
    for (const pid_t pid : children) {
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
    }
    CHECK(fs::file_size(counter) == 1);
    CHECK(names_in(cache) == std::set<std::string>{key + ".kjit"});
}

TEST_CASE("a writer killed mid-write leaves nothing visible and the next one succeeds", "[disk_store]") {
    kjit::test::TempDir tmp;
    const std::string key = key_of(21);
    int paused[2];
    REQUIRE(::pipe(paused) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(paused[0]);
        // Half of the temporary is written: tell the parent, then wait to be killed.
        kjit::cache::detail::set_write_pause_hook([&](const fs::path&) {
            if (::write(paused[1], "p", 1) != 1) ::_exit(4);
            for (;;) ::pause();
        });
        try {
            DiskStore store(tmp.path(), true);
            store.get_or_create(key, [&] { return make_entry(key, 4 << 20); });
        } catch (...) {
        }
        ::_exit(5);  // only reached if the hook did not run
    }
    ::close(paused[1]);
    char c = 0;
    ssize_t n;
    do n = ::read(paused[0], &c, 1);
    while (n < 0 && errno == EINTR);
    ::close(paused[0]);
    REQUIRE(n == 1);
    REQUIRE(::kill(pid, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFSIGNALED(status));

    DiskStore store(tmp.path(), true);
    const fs::path path = store.entry_path(key);
    CHECK_FALSE(fs::exists(path));
    std::size_t temporaries = 0;
    for (const auto& name : names_in(tmp.path())) temporaries += name.starts_with(key + ".kjit.tmp.");
    CHECK(temporaries == 1);  // the half-written file, left by the killed writer
    CHECK_FALSE(store.read(key).has_value());
    CHECK(store.list().empty());

    int produced = 0;
    const Entry got = store.get_or_create(key, [&] {
        ++produced;
        return make_entry(key, 1000);
    });
    CHECK(produced == 1);
    CHECK(store.read(key) == got);
    // The stale temporary was swept under the lock, and the killed writer's lock file is gone.
    CHECK(names_in(tmp.path()) == std::set<std::string>{key + ".kjit"});
}

TEST_CASE("stale temporaries are swept by age, unless their key is being written", "[disk_store]") {
    kjit::test::TempDir tmp;
    DiskStore store(tmp.path(), true);
    const std::string a = key_of(1), b = key_of(2);
    const fs::path ta = store.entry_path(a).string() + ".tmp.99999.0";
    const fs::path tb = store.entry_path(b).string() + ".tmp.99999.1";
    put_file(ta, {1, 2, 3});
    put_file(tb, {1, 2, 3});
    CHECK(store.sweep_stale_temporaries(std::chrono::hours(1)) == 0);  // too young
    const auto old = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()) - 7200;
    for (const auto& p : {ta, tb}) {
        const timespec times[2] = {{old, 0}, {old, 0}};
        REQUIRE(::utimensat(AT_FDCWD, p.c_str(), times, 0) == 0);
    }
    // Someone holds b's lock: its temporary may be a live write.
    const fs::path lock_b = store.entry_path(b).parent_path() / (b + ".lock");
    const int fd = ::open(lock_b.c_str(), O_RDWR | O_CREAT, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX) == 0);
    CHECK(store.sweep_stale_temporaries(std::chrono::hours(1)) == 1);
    CHECK_FALSE(fs::exists(ta));
    CHECK(fs::exists(tb));
    ::close(fd);
    CHECK(store.sweep_stale_temporaries(std::chrono::hours(1)) == 1);
    CHECK_FALSE(fs::exists(tb));
}

TEST_CASE("a store's first write sweeps other keys' stale temporaries, once", "[disk_store]") {
    kjit::test::TempDir tmp;
    const std::string a = key_of(4), b = key_of(5), c = key_of(6);
    const fs::path old_tmp = DiskStore(tmp.path(), true).entry_path(b).string() + ".tmp.99999.0";
    const fs::path young_tmp = DiskStore(tmp.path(), true).entry_path(c).string() + ".tmp.99999.1";
    put_file(old_tmp, {1, 2, 3});
    put_file(young_tmp, {1, 2, 3});
    const auto old = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()) - 7200;
    const timespec times[2] = {{old, 0}, {old, 0}};
    REQUIRE(::utimensat(AT_FDCWD, old_tmp.c_str(), times, 0) == 0);
    DiskStore store(tmp.path(), true);
    (void)store.read(a);  // a miss lists nothing
    CHECK(fs::exists(old_tmp));
    (void)store.get_or_create(a, [&] { return make_entry(a, 100); });
    CHECK_FALSE(fs::exists(old_tmp));  // an hour old and nobody writing b
    CHECK(fs::exists(young_tmp));      // may be a live write
    // Once per store: a later stale temporary waits for the next store (process) or a prune.
    put_file(old_tmp, {1, 2, 3});
    REQUIRE(::utimensat(AT_FDCWD, old_tmp.c_str(), times, 0) == 0);
    (void)store.get_or_create(c, [&] { return make_entry(c, 100); });
    CHECK(fs::exists(old_tmp));
    CHECK(DiskStore(tmp.path(), true).sweep_stale_temporaries(DiskStore::kStaleTemporaryAge) == 1);
}

TEST_CASE("every bit flip and truncation of a stored entry is detected on read", "[disk_store]") {
    kjit::test::TempDir tmp;
    DiskStore store(tmp.path(), true);
    const Entry e = make_entry(key_of(3), 24);
    REQUIRE(store.write(e));
    const fs::path path = store.entry_path(e.key);
    const auto good = file_bytes(path);
    StderrCapture capture;
    for (std::size_t bit = 0; bit < good.size() * 8; ++bit) {
        auto bad = good;
        bad[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
        put_file(path, bad);
        INFO("bit " << bit);
        CHECK_FALSE(store.read(e.key).has_value());
        CHECK_FALSE(fs::exists(path));  // removed, so that it is compiled again
    }
    for (std::size_t n = 0; n < good.size(); ++n) {
        put_file(path, std::vector<unsigned char>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)));
        INFO("truncated to " << n);
        CHECK_FALSE(store.read(e.key).has_value());
        CHECK_FALSE(fs::exists(path));
    }
    const std::string log = capture.text();
    CHECK(count_of(log, "damaged cache entry " + path.string()) == 1);  // once per path
    CHECK(count_of(log, "; removed") == 1);
    put_file(path, good);
    CHECK(store.read(e.key) == e);
}

TEST_CASE("a damaged entry in a read-only store is ignored, not removed", "[disk_store]") {
    kjit::test::TempDir tmp;
    const Entry e = make_entry(key_of(4));
    REQUIRE(DiskStore(tmp.path(), true).write(e));
    DiskStore store(tmp.path(), false);
    const fs::path path = store.entry_path(e.key);
    auto bytes = file_bytes(path);
    bytes[bytes.size() / 2] ^= 0x10;
    put_file(path, bytes);
    StderrCapture capture;
    for (int i = 0; i < 3; ++i) CHECK_FALSE(store.read(e.key).has_value());
    CHECK(fs::exists(path));
    int produced = 0;
    CHECK(store.get_or_create(e.key, [&] { return ++produced, e; }) == e);
    CHECK(produced == 1);
    const std::string log = capture.text();
    CHECK(count_of(log, "damaged cache entry " + path.string() + ": checksum mismatch") == 1);
    CHECK(count_of(log, "removed") == 0);

    const auto damaged = store.verify();
    REQUIRE(damaged.size() == 1);
    CHECK(damaged[0].first == path);
    CHECK(damaged[0].second.starts_with("checksum mismatch"));
}

TEST_CASE("verify names every damaged entry and removes nothing", "[disk_store]") {
    kjit::test::TempDir tmp;
    DiskStore store(tmp.path(), true);
    for (int i = 0; i < 5; ++i) REQUIRE(store.write(make_entry(key_of(i))));
    // Entry 1 truncated, entry 3 stored under the wrong name.
    const fs::path p1 = store.entry_path(key_of(1));
    auto b1 = file_bytes(p1);
    b1.resize(b1.size() - 1);
    put_file(p1, b1);
    const fs::path p3 = store.entry_path(key_of(3));
    put_file(p3, file_bytes(store.entry_path(key_of(4))));
    auto damaged = store.verify();
    std::sort(damaged.begin(), damaged.end());
    REQUIRE(damaged.size() == 2);
    CHECK(damaged[0].first == std::min(p1, p3));
    const auto& problem3 = damaged[0].first == p3 ? damaged[0].second : damaged[1].second;
    const auto& problem1 = damaged[0].first == p1 ? damaged[0].second : damaged[1].second;
    CHECK(problem1.starts_with("sizes do not add up"));
    CHECK(problem3.starts_with("key differs from expected"));
    CHECK(store.list().size() == 5);
}

TEST_CASE("eviction removes the least recently used entries first", "[disk_store]") {
    kjit::test::TempDir tmp;
    DiskStore store(tmp.path(), true);
    for (int i = 0; i < 4; ++i) REQUIRE(store.write(make_entry(key_of(i), 1000)));
    const std::uint64_t one = fs::file_size(store.entry_path(key_of(0)));
    // Last used: 2 (oldest), 0, 3, 1 (newest).
    const std::int64_t base = 1'600'000'000;
    set_atime(store.entry_path(key_of(2)), base);
    set_atime(store.entry_path(key_of(0)), base + 10);
    set_atime(store.entry_path(key_of(3)), base + 20);
    set_atime(store.entry_path(key_of(1)), base + 30);
    for (const auto& item : store.list())
        if (item.key == key_of(3)) CHECK(item.last_used_unix == base + 20);

    CHECK(store.prune(4 * one) == 0);
    CHECK(store.prune(3 * one) == one);
    CHECK_FALSE(fs::exists(store.entry_path(key_of(2))));
    CHECK(store.prune(2 * one + one / 2) == one);
    CHECK_FALSE(fs::exists(store.entry_path(key_of(0))));

    // A read is a use: 3 becomes newer than 1, so 1 goes next.
    REQUIRE(store.read(key_of(3)).has_value());
    CHECK(store.prune(one) == one);
    CHECK_FALSE(fs::exists(store.entry_path(key_of(1))));
    CHECK(fs::exists(store.entry_path(key_of(3))));
    CHECK(store.prune(0) == one);
    CHECK(store.list().empty());
}

TEST_CASE("a size cap prunes after each write but never the entry just written", "[disk_store]") {
    kjit::test::TempDir tmp;
    const std::uint64_t one = kjit::cache::serialize_entry(make_entry(key_of(0), 1000)).size();
    DiskStore store(tmp.path(), true, 2 * one);
    CHECK(store.max_bytes() == 2 * one);
    REQUIRE(store.write(make_entry(key_of(0), 1000)));
    REQUIRE(store.write(make_entry(key_of(1), 1000)));
    set_atime(store.entry_path(key_of(0)), 1'600'000'100);
    set_atime(store.entry_path(key_of(1)), 1'600'000'000);  // 1 is older than 0
    REQUIRE(store.write(make_entry(key_of(2), 1000)));
    CHECK(fs::exists(store.entry_path(key_of(0))));
    CHECK_FALSE(fs::exists(store.entry_path(key_of(1))));
    CHECK(store.total_bytes() == 2 * one);

    // An entry bigger than the cap stays (everything else goes); so does one from get_or_create.
    REQUIRE(store.write(make_entry(key_of(3), 5000)));
    CHECK(store.list().size() == 1);
    CHECK(fs::exists(store.entry_path(key_of(3))));
    store.get_or_create(key_of(4), [] { return make_entry(key_of(4), 5000); });
    REQUIRE(store.list().size() == 1);
    CHECK(store.list()[0].key == key_of(4));
}

TEST_CASE("clear removes entries, stale temporaries and free lock files only", "[disk_store]") {
    kjit::test::TempDir tmp;
    DiskStore store(tmp.path(), true);
    for (int i = 0; i < 3; ++i) REQUIRE(store.write(make_entry(key_of(i))));
    const fs::path shard = store.entry_path(key_of(0)).parent_path();
    put_file(store.entry_path(key_of(0)).string() + ".tmp.1.0", {1});  // a killed writer's
    put_file(shard / (key_of(0) + ".lock"), {});                         // a killed writer's lock
    put_file(store.entry_path(key_of(5)).string() + ".tmp.1.1", {1});  // a live writer's:
    const fs::path live_lock = store.entry_path(key_of(5)).parent_path() / (key_of(5) + ".lock");
    const int fd = ::open(live_lock.c_str(), O_RDWR | O_CREAT, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX) == 0);
    put_file(shard / "README", {'h', 'i'});  // not ours: left alone

    store.clear();
    CHECK(store.list().empty());
    CHECK(names_in(tmp.path()) == std::set<std::string>{key_of(5) + ".kjit.tmp.1.1", key_of(5) + ".lock", "README"});
    ::close(fd);
}

TEST_CASE("list counts entries only", "[disk_store]") {
    kjit::test::TempDir tmp;
    DiskStore store(tmp.path(), true);
    REQUIRE(store.write(make_entry(key_of(1))));
    put_file(store.entry_path(key_of(1)).string() + ".tmp.5.5", std::vector<unsigned char>(1000));
    put_file(store.entry_path(key_of(2)).parent_path() / (key_of(2) + ".lock"), {});
    put_file(tmp.path() / "zz" / (key_of(3) + ".kjit"), {1});  // not a hex shard
    put_file(tmp.path() / (key_of(4) + ".kjit"), {1});         // not in a shard
    const auto items = store.list();
    REQUIRE(items.size() == 1);
    CHECK(store.total_bytes() == fs::file_size(store.entry_path(key_of(1))));
}

TEST_CASE("a read-only store whose folder is missing just misses", "[disk_store]") {
    kjit::test::TempDir tmp;
    const fs::path missing = tmp.path() / "not" / "there";
    DiskStore store(missing, false);
    CHECK_FALSE(store.writable());
    CHECK_FALSE(store.read(key_of(1)).has_value());
    CHECK_FALSE(store.write(make_entry(key_of(1))));
    int produced = 0;
    CHECK(store.get_or_create(key_of(1), [&] { return ++produced, make_entry(key_of(1)); }).key == key_of(1));
    CHECK(produced == 1);
    CHECK(store.list().empty());
    CHECK(store.verify().empty());
    CHECK_FALSE(fs::exists(missing));
}

TEST_CASE("a writable store creates its folder privately, or falls back with a warning", "[disk_store]") {
    kjit::test::TempDir tmp;
    const fs::path dir = tmp.path() / "a" / "b";
    DiskStore store(dir, true);
    CHECK(store.writable());
    CHECK(mode_of(dir) == 0700);
    REQUIRE(store.write(make_entry(key_of(1))));
    CHECK(mode_of(store.entry_path(key_of(1))) == 0600);
    CHECK(mode_of(store.entry_path(key_of(1)).parent_path()) == 0700);

    // A folder that cannot exist (under a regular file): a warning, no exception, memory only.
    put_file(tmp.path() / "file", {1});
    StderrCapture capture;
    DiskStore impossible(tmp.path() / "file" / "cache", true);
    CHECK_FALSE(impossible.writable());
    CHECK_FALSE(impossible.write(make_entry(key_of(1))));
    int produced = 0;
    impossible.get_or_create(key_of(1), [&] { return ++produced, make_entry(key_of(1)); });
    CHECK(produced == 1);
    CHECK(count_of(capture.text(), "cache folder " + (tmp.path() / "file" / "cache").string()) == 1);
}

TEST_CASE("a folder other users can write to is refused for writing and reading", "[disk_store]") {
    for (const unsigned mode : {0775u, 0757u, 0777u, 0720u}) {
        kjit::test::TempDir tmp;
        const Entry e = make_entry(key_of(9));
        REQUIRE(DiskStore(tmp.path(), true).write(e));  // as if planted while the folder was open
        chmod_dir(tmp.path(), mode);
        INFO("mode " << std::oct << mode);
        StderrCapture capture;
        for (const bool writable : {true, false}) {
            DiskStore store(tmp.path(), writable);
            CHECK_FALSE(store.writable());
            CHECK_FALSE(store.usable());
            CHECK_FALSE(store.read(e.key).has_value());
            CHECK_FALSE(store.write(make_entry(key_of(10))));
            int produced = 0;
            store.get_or_create(e.key, [&] { return ++produced, e; });
            CHECK(produced == 1);
        }
        CHECK(count_of(capture.text(), "refusing cache folder " + tmp.path().string()) == 1);
        CHECK_FALSE(fs::exists(DiskStore(tmp.path(), false).entry_path(key_of(10))));
        chmod_dir(tmp.path(), 0700);
    }
}

TEST_CASE("files are readable by others only if the folder is", "[disk_store]") {
    const mode_t old_umask = ::umask(077);  // the folder decides, not the umask
    for (const auto& [dir_mode, file_mode, shard_mode] :
         {std::tuple{0755u, 0644u, 0755u}, {0700u, 0600u, 0700u}, {0750u, 0640u, 0750u}, {0705u, 0604u, 0705u}}) {
        kjit::test::TempDir tmp;
        chmod_dir(tmp.path(), dir_mode);
        DiskStore store(tmp.path(), true);
        REQUIRE(store.writable());
        store.get_or_create(key_of(1), [] { return make_entry(key_of(1)); });
        INFO("folder " << std::oct << dir_mode);
        CHECK(mode_of(store.entry_path(key_of(1))) == file_mode);
        CHECK(mode_of(store.entry_path(key_of(1)).parent_path()) == shard_mode);
    }
    ::umask(old_umask);
}

TEST_CASE("an exception from produce() stores nothing and releases the lock", "[disk_store]") {
    kjit::test::TempDir tmp;
    DiskStore store(tmp.path(), true);
    const std::string key = key_of(8);
    CHECK_THROWS_AS(store.get_or_create(key, []() -> Entry { throw std::runtime_error("compile failed"); }),
                    std::runtime_error);
    CHECK_FALSE(store.read(key).has_value());
    CHECK(store.get_or_create(key, [&] { return make_entry(key); }).key == key);
    CHECK(names_in(tmp.path()) == std::set<std::string>{key + ".kjit"});
}

// Issue 30, planted entries: every folder and file read is the user's own and writable by no one
// else. The entry planted in each case is a sound one (valid checksum, the requested key), as an
// attacker's would be.
TEST_CASE("a shard folder other users can write to is refused: a miss, one warning", "[disk_store][trust]") {
    kjit::test::TempDir tmp;
    chmod_dir(tmp.path(), 0755);
    const Entry e = make_entry(key_of(1));
    REQUIRE(DiskStore(tmp.path(), true).write(e));
    const fs::path shard = DiskStore(tmp.path(), false).entry_path(e.key).parent_path();
    chmod_dir(shard, 0777);
    StderrCapture capture;
    for (const bool writable : {true, false}) {
        DiskStore store(tmp.path(), writable);
        REQUIRE(store.usable());  // the top folder is sound: other shards still serve
        CHECK_FALSE(store.read(e.key).has_value());
        CHECK_FALSE(store.read(e.key).has_value());
        int produced = 0;
        CHECK(store.get_or_create(e.key, [&] { return ++produced, e; }).key == e.key);
        CHECK(produced == 1);
    }
    CHECK_FALSE(DiskStore(tmp.path(), true).write(e));  // not into a folder others can change either
    CHECK(count_of(capture.text(), "refusing cache folder " + shard.string()) == 1);
    chmod_dir(shard, 0755);
    CHECK(DiskStore(tmp.path(), false).read(e.key).has_value());
}

TEST_CASE("a shard folder that is a symlink is refused, and entry files are not followed", "[disk_store][trust]") {
    kjit::test::TempDir tmp, elsewhere;
    const Entry e = make_entry(key_of(2));
    REQUIRE(DiskStore(elsewhere.path(), true).write(e));
    DiskStore probe(tmp.path(), true);
    const fs::path shard = probe.entry_path(e.key).parent_path();
    fs::create_directory_symlink(DiskStore(elsewhere.path(), false).entry_path(e.key).parent_path(), shard);
    StderrCapture capture;
    CHECK_FALSE(DiskStore(tmp.path(), false).read(e.key).has_value());
    CHECK_FALSE(DiskStore(tmp.path(), true).read(e.key).has_value());
    CHECK(count_of(capture.text(), "refusing cache folder " + shard.string()) == 1);

    // A real shard folder whose entry is a symlink to a sound entry of that key.
    fs::remove(shard);
    fs::create_directory(shard);
    fs::create_symlink(DiskStore(elsewhere.path(), false).entry_path(e.key), probe.entry_path(e.key));
    CHECK_FALSE(DiskStore(tmp.path(), false).read(e.key).has_value());
    CHECK_FALSE(DiskStore(tmp.path(), false).verify().empty());  // verify names it
}

TEST_CASE("a group- or world-writable entry file is refused", "[disk_store][trust]") {
    kjit::test::TempDir tmp;
    const Entry e = make_entry(key_of(3));
    DiskStore store(tmp.path(), true);
    REQUIRE(store.write(e));
    REQUIRE(::chmod(store.entry_path(e.key).c_str(), 0666) == 0);
    CHECK_FALSE(DiskStore(tmp.path(), false).read(e.key).has_value());
    const auto damaged = DiskStore(tmp.path(), false).verify();
    REQUIRE(damaged.size() == 1);
    CHECK_THAT(damaged[0].second, Catch::Matchers::Contains("other users can write"));
}

namespace {
constexpr uid_t kOtherUser = 65534;  // nobody

// Whether this process may give files to another user (root); a visible skip otherwise.
bool can_chown_to_other_user(const fs::path& probe) {
    if (::geteuid() == 0 && ::lchown(probe.c_str(), kOtherUser, kOtherUser) == 0) return true;
    WARN("SKIPPED (not root: cannot give files to another user): ownership checks untested here");
    return false;
}
}  // namespace

TEST_CASE("folders and files owned by another user are refused", "[disk_store][trust]") {
    kjit::test::TempDir tmp;
    put_file(tmp.path() / "probe", {1});
    if (!can_chown_to_other_user(tmp.path() / "probe")) return;
    const Entry e = make_entry(key_of(4));
    REQUIRE(DiskStore(tmp.path(), true).write(e));
    const fs::path entry = DiskStore(tmp.path(), false).entry_path(e.key);
    for (const fs::path& p : {tmp.path(), entry.parent_path(), entry}) {
        INFO(p);
        REQUIRE(::chown(p.c_str(), kOtherUser, kOtherUser) == 0);
        StderrCapture capture;
        for (const bool writable : {false, true}) CHECK_FALSE(DiskStore(tmp.path(), writable).read(e.key).has_value());
        if (p != entry) {
            CHECK(count_of(capture.text(), "refusing cache folder " + p.string()) == 1);
            REQUIRE(::chown(p.c_str(), 0, 0) == 0);
        } else {
            CHECK_FALSE(fs::exists(entry));  // removed from the user's own folder, as a damaged entry is
            REQUIRE(DiskStore(tmp.path(), true).write(e));
        }
        CHECK(DiskStore(tmp.path(), true).read(e.key).has_value());
    }
}

TEST_CASE("a read-only layer may be owned by root, a writable folder may not", "[disk_store][trust]") {
    kjit::test::TempDir tmp;
    chmod_dir(tmp.path(), 0755);
    const Entry e = make_entry(key_of(5));
    REQUIRE(DiskStore(tmp.path(), true).write(e));  // 0644 files in 0755 folders, owned by us
    put_file(tmp.path() / "probe", {1});
    if (!can_chown_to_other_user(tmp.path() / "probe")) return;
    if (::geteuid() != 0) return;
    // As another user (a child that switched to it): the root-owned folder is a sound read-only
    // layer, and refused as that user's writable cache.
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        if (::setgid(kOtherUser) != 0 || ::setuid(kOtherUser) != 0) ::_exit(10);
        if (!DiskStore(tmp.path(), false).read(e.key)) ::_exit(11);
        DiskStore as_own(tmp.path(), true);
        if (as_own.usable() || as_own.read(e.key)) ::_exit(12);
        ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

// Issue 30, special files: a FIFO where a file is expected must not block a lookup (nothing would
// ever write to it), and verify must name it.
TEST_CASE("a FIFO as an entry, an alias or a note is a miss, never a wait", "[disk_store][trust]") {
    kjit::test::TempDir tmp;
    DiskStore store(tmp.path(), true);
    const std::string key = key_of(6), alias = key_of(7), note = key_of(8);
    REQUIRE(store.write(make_entry(key_of(9))));  // makes the shard folder (all keys share "ab")
    const fs::path shard = store.entry_path(key).parent_path();
    REQUIRE(::mkfifo(store.entry_path(key).c_str(), 0600) == 0);
    REQUIRE(::mkfifo((shard / (alias + ".alias")).c_str(), 0600) == 0);
    REQUIRE(::mkfifo((shard / (note + ".note")).c_str(), 0600) == 0);
    DiskStore reader(tmp.path(), false);
    CHECK_FALSE(reader.read(key).has_value());
    CHECK_FALSE(reader.read_alias(alias).has_value());
    CHECK_FALSE(reader.read_note(note).has_value());
    const auto damaged = reader.verify();
    REQUIRE(damaged.size() == 1);
    CHECK(damaged[0].first == store.entry_path(key));
}

// Issue 30, swapped files: an alias or a note holds what another name should, with its own
// checksum intact. Each must say whose it is, so that a swap is a miss and verify names it.
TEST_CASE("aliases and notes swapped between names are misses, and verify names them", "[disk_store][trust]") {
    kjit::test::TempDir tmp;
    DiskStore store(tmp.path(), true);
    const std::string a1 = key_of(11), a2 = key_of(12), n1 = key_of(13), n2 = key_of(14);
    REQUIRE(store.write_alias(a1, key_of(21)));
    REQUIRE(store.write_alias(a2, key_of(22)));
    REQUIRE(store.write_note(n1, "plan=one\n"));
    REQUIRE(store.write_note(n2, "plan=two\n"));
    const fs::path shard = store.entry_path(a1).parent_path();
    auto swap_files = [&](const std::string& x, const std::string& y, const std::string& suffix) {
        const std::vector<unsigned char> bx = file_bytes(shard / (x + suffix)), by = file_bytes(shard / (y + suffix));
        put_file(shard / (x + suffix), by);
        put_file(shard / (y + suffix), bx);
    };
    CHECK(store.read_alias(a1) == key_of(21));
    CHECK(store.read_note(n1).has_value());
    swap_files(a1, a2, ".alias");
    swap_files(n1, n2, ".note");
    DiskStore reader(tmp.path(), false);
    CHECK_FALSE(reader.read_alias(a1).has_value());
    CHECK_FALSE(reader.read_alias(a2).has_value());
    CHECK_FALSE(reader.read_note(n1).has_value());
    CHECK_FALSE(reader.read_note(n2).has_value());
    CHECK(reader.verify_notes().size() == 2);
    CHECK(reader.verify_aliases().size() == 2);
}

// Issue 30, held locks: a writer that is stopped (SIGSTOP, a debugger) or hung holds its key's
// lock for good. Others wait no longer than the lock timeout, say once who holds it (the pid the
// holder wrote into the lock file), and produce the entry without storing it.
TEST_CASE("a lock held by a stopped process is waited for a bounded time, and its holder named", "[disk_store][lock]") {
    kjit::test::TempDir tmp;
    const std::string key = key_of(31);
    REQUIRE(DiskStore(tmp.path(), true).write(make_entry(key_of(30))));  // makes the shard folder
    const fs::path lock_path = DiskStore(tmp.path(), false).entry_path(key).parent_path() / (key + ".lock");
    const pid_t holder = ::fork();
    REQUIRE(holder >= 0);
    if (holder == 0) {
        kjit::cache::EntryLock lock = kjit::cache::lock_file(lock_path, 0600, kjit::cache::Wait::try_only);
        if (!lock) ::_exit(1);
        ::raise(SIGSTOP);
        ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(holder, &status, WUNTRACED) == holder);
    REQUIRE(WIFSTOPPED(status));

    DiskStore store(tmp.path(), true, 0, std::chrono::milliseconds(300));
    StderrCapture capture;
    int produced = 0;
    const auto start = std::chrono::steady_clock::now();
    CHECK(store.get_or_create(key, [&] { return ++produced, make_entry(key); }).key == key);
    bool stored = true;
    CHECK(store.get_or_create(key, [&] { return ++produced, make_entry(key); }, &stored).key == key);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string warnings = capture.text();
    ::kill(holder, SIGKILL);
    REQUIRE(::waitpid(holder, &status, 0) == holder);

    CHECK(produced == 2);
    CHECK_FALSE(stored);
    CHECK(waited >= 0.6);
    CHECK(waited < 10);
    CHECK(store.stores() == 0);
    CHECK(store.store_failures() == 2);
    CHECK_FALSE(DiskStore(tmp.path(), false).read(key).has_value());  // not stored: the holder may yet
    CHECK(count_of(warnings, "is held by process " + std::to_string(holder)) == 1);  // once
    CHECK_THAT(warnings, Catch::Matchers::Contains("without storing"));
    // The holder gone, its lock is free again (the file with its pid stays until the next taker).
    CHECK(store.get_or_create(key, [&] { return ++produced, make_entry(key); }, &stored).key == key);
    CHECK(stored);
    CHECK(store.stores() == 1);
    CHECK(DiskStore(tmp.path(), false).read(key).has_value());
}

// Issue 30, planted symlinks: a dangling symlink as a lock file made open(O_CREAT) create the
// file it names, anywhere the user may write.
TEST_CASE("a symlink planted as a lock file is never followed", "[disk_store][trust]") {
    kjit::test::TempDir tmp, elsewhere;
    const std::string key = key_of(32);
    DiskStore store(tmp.path(), true);
    REQUIRE(store.write(make_entry(key_of(30))));  // makes the shard folder
    const fs::path victim = elsewhere.path() / "created-through-the-lock";
    fs::create_symlink(victim, store.entry_path(key).parent_path() / (key + ".lock"));
    StderrCapture capture;
    int produced = 0;
    CHECK(store.get_or_create(key, [&] { return ++produced, make_entry(key); }).key == key);
    CHECK(produced == 1);
    CHECK_FALSE(fs::exists(victim));
    CHECK(fs::is_symlink(store.entry_path(key).parent_path() / (key + ".lock")));
    std::string error;
    CHECK_FALSE(kjit::cache::lock_file(store.entry_path(key).parent_path() / (key + ".lock"), 0600,
                                       kjit::cache::Wait::try_only, &error));
    CHECK_THAT(error, Catch::Matchers::Contains("cannot open lock file"));
    CHECK_FALSE(fs::exists(victim));
}

// Issue 30, false success: `kjit precompile` must know how many entries were stored and how many
// were not, whatever stopped them.
TEST_CASE("stores and the entries that could not be stored are counted", "[disk_store]") {
    kjit::test::TempDir tmp;
    DiskStore store(tmp.path(), true);
    REQUIRE(store.write(make_entry(key_of(40))));
    store.get_or_create(key_of(41), [] { return make_entry(key_of(41)); });
    store.get_or_create(key_of(41), [] { return make_entry(key_of(41)); });  // found: no store
    CHECK(store.stores() == 2);
    CHECK(store.store_failures() == 0);

    // A shard folder that is refused: produced, not stored, counted.
    const std::string other = "cd" + key_of(42).substr(2);
    fs::create_directory(tmp.path() / "cd");
    chmod_dir(tmp.path() / "cd", 0777);
    StderrCapture capture;
    bool stored = true;
    store.get_or_create(other, [&] { return make_entry(other); }, &stored);
    CHECK_FALSE(stored);
    CHECK_FALSE(store.write(make_entry(other)));
    CHECK(store.stores() == 2);
    CHECK(store.store_failures() == 2);

    // A folder that is not writable (as a user other than root: root writes anywhere).
    put_file(tmp.path() / "probe", {1});
    if (!can_chown_to_other_user(tmp.path() / "probe")) return;
    kjit::test::TempDir ro;
    chmod_dir(ro.path(), 0500);
    REQUIRE(::chown(ro.path().c_str(), kOtherUser, kOtherUser) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        if (::setgid(kOtherUser) != 0 || ::setuid(kOtherUser) != 0) ::_exit(10);
        DiskStore as_other(ro.path(), true);
        if (as_other.writable() || !as_other.usable()) ::_exit(11);
        bool in_folder = true;
        as_other.get_or_create(key_of(43), [] { return make_entry(key_of(43)); }, &in_folder);
        ::_exit(in_folder || as_other.stores() != 0 || as_other.store_failures() != 1 ? 12 : 0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

// Issue 30, unbounded reads: an entry file near the size limit (sparse: it costs no disk) was
// read whole, a gigabyte allocated, before its header said that it is no entry. Run with an
// address space too small for that, in a child.
TEST_CASE("a huge entry file has its header checked before it is read whole", "[disk_store][trust]") {
    kjit::test::TempDir tmp;
    const Entry e = make_entry(key_of(50));
    DiskStore store(tmp.path(), true);
    REQUIRE(store.write(e));
    const fs::path path = store.entry_path(e.key);
    REQUIRE(::truncate(path.c_str(), (off_t{1} << 30) - 4096) == 0);  // the real header, sizes that no longer add up
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // What the process maps now, and 256 MB more: a gigabyte cannot be had.
        std::ifstream status_file("/proc/self/status");
        std::string line;
        std::uint64_t vm_kb = 0;
        while (std::getline(status_file, line))
            if (line.rfind("VmSize:", 0) == 0) vm_kb = std::stoull(line.substr(7));
        const rlimit limit{(vm_kb << 10) + (256u << 20), (vm_kb << 10) + (256u << 20)};
        if (vm_kb == 0 || ::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(10);
        try {
            DiskStore reader(tmp.path(), false);
            if (reader.read(e.key)) ::_exit(11);
            const auto damaged = reader.verify();
            if (damaged.size() != 1 || damaged[0].second.find("sizes do not add up") == std::string::npos) ::_exit(12);
        } catch (const std::bad_alloc&) {
            ::_exit(13);
        }
        ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

// Issue 30, the size cap: aliases were neither counted nor evicted, so a cache could grow past
// its cap by its aliases.
TEST_CASE("aliases count in the size cap and are evicted with entries", "[disk_store]") {
    kjit::test::TempDir tmp;
    const Entry a = make_entry(key_of(60)), b = make_entry(key_of(61));
    std::uint64_t entry_bytes = 0;
    {
        DiskStore sizer(tmp.path(), true);
        REQUIRE(sizer.write(a));
        entry_bytes = fs::file_size(sizer.entry_path(a.key));
        REQUIRE(sizer.write_alias(key_of(70), a.key));
        CHECK(sizer.total_bytes() == entry_bytes + 66);  // the alias file: key and name, a line each
        sizer.clear();
    }
    // Room for two entries exactly: with their aliases, the older entry goes.
    DiskStore store(tmp.path(), true, 2 * entry_bytes);
    REQUIRE(store.write(a));
    REQUIRE(store.write_alias(key_of(70), a.key));
    set_atime(store.entry_path(a.key), 1'000'000'000);
    set_atime(store.entry_path(key_of(70)).parent_path() / (key_of(70) + ".alias"), 1'000'000'000);
    REQUIRE(store.write(b));
    REQUIRE(store.write_alias(key_of(71), b.key));
    CHECK(store.total_bytes() <= store.max_bytes());
    CHECK(store.read(b.key).has_value());
    CHECK(store.read_alias(key_of(71)) == b.key);  // neither the alias just written nor its entry goes
}

// Issue 30, false success: `kjit cache clear` said "cleared" with the files still there.
TEST_CASE("clear returns the files it could not remove", "[disk_store]") {
    kjit::test::TempDir tmp;
    put_file(tmp.path() / "probe", {1});
    if (!can_chown_to_other_user(tmp.path() / "probe")) return;
    fs::remove(tmp.path() / "probe");
    const Entry e = make_entry(key_of(80));
    REQUIRE(DiskStore(tmp.path(), true).write(e));
    const fs::path shard = DiskStore(tmp.path(), false).entry_path(e.key).parent_path();
    for (const auto& f : fs::recursive_directory_iterator(tmp.path())) REQUIRE(::chown(f.path().c_str(), kOtherUser, kOtherUser) == 0);
    REQUIRE(::chown(tmp.path().c_str(), kOtherUser, kOtherUser) == 0);
    chmod_dir(shard, 0500);  // the top folder writable, the shard's files not removable
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        if (::setgid(kOtherUser) != 0 || ::setuid(kOtherUser) != 0) ::_exit(10);
        DiskStore store(tmp.path(), true);
        if (!store.writable()) ::_exit(11);
        const auto left = store.clear();
        ::_exit(left.size() == 1 && left[0].first == store.entry_path(e.key) &&
                        left[0].second.find("Permission denied") != std::string::npos
                    ? 0
                    : 12);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    chmod_dir(shard, 0700);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(fs::exists(DiskStore(tmp.path(), false).entry_path(e.key)));  // still there, and said so
}
