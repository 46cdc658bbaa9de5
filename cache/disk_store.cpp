#include "cache/disk_store.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <tuple>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cache/cache_key.hpp"
#include "cache/file_io.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/log.hpp"

namespace kjit::cache {
namespace fs = std::filesystem;
using kjit::detail::LogLevel;

namespace {

constexpr std::string_view kEntrySuffix = ".kjit";
constexpr std::string_view kTmpInfix = ".kjit.tmp.";
constexpr std::string_view kLockSuffix = ".lock";
constexpr std::string_view kAliasSuffix = ".alias";
constexpr std::string_view kAliasTmpInfix = ".alias.tmp.";
constexpr std::string_view kNoteSuffix = ".note";
constexpr std::string_view kNoteTmpInfix = ".note.tmp.";
// A note's text is a few lines; anything much bigger is not one.
constexpr std::size_t kMaxNoteTextBytes = 64 * 1024;
// No entry is anywhere near this (a cubin is at most tens of MB); a bigger file is damage or
// something else, and reading it whole would be the huge allocation a corrupt cache must not cause.
constexpr std::uint64_t kMaxEntryBytes = std::uint64_t{1} << 30;
// An entry file up to this size is read whole at once (one read: a fresh process's first cached
// call reads one, of a few KB); a bigger one has its header read and checked first
// (check_entry_header), so that a damaged or sparse file is not read whole to learn that it is no
// entry.
constexpr std::uint64_t kReadWholeBytes = std::uint64_t{1} << 20;

std::function<void(const fs::path&)>& write_pause_hook() {
    static std::function<void(const fs::path&)> hook;
    return hook;
}

// Creates a shard folder with exactly `mode` (not whatever the umask leaves); see also
// DiskStore::ensure_shard.
bool make_dir(const fs::path& dir, const fs::path& parent, mode_t mode, std::string& error) {
    if (::mkdir(dir.c_str(), mode) == 0) {
        if (::chmod(dir.c_str(), mode) != 0) {
            error = os_error("cannot set the mode of", dir);
            return false;
        }
        fsync_dir(parent);
        return true;
    }
    if (errno == EEXIST) return true;
    error = os_error("cannot create cache folder", dir);
    return false;
}

// Why a folder or file of a cache may not be trusted, or "" when it may. kjit loads and runs
// what it reads, and a checksum proves integrity, not authorship: only this user, and for a
// read-only layer root (a cache installed system-wide), may have written it.
std::string untrusted_because(const struct stat& st, bool root_may_own) {
    const uid_t me = ::geteuid();
    if (st.st_uid != me && !(root_may_own && st.st_uid == 0))
        return "owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " + std::to_string(me) + ")";
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return std::string("mode ") + mode + ": other users can write to it";
    }
    return {};
}

// 0-15 for a lowercase hex digit (names are checked by is_valid_key first).
unsigned hex_digit(char c) { return c <= '9' ? static_cast<unsigned>(c - '0') : static_cast<unsigned>(c - 'a' + 10); }

// Flags of every read of a cache file: a symlink is not followed (it could name any file), and
// a FIFO planted as an entry does not block the open (the fstat after it refuses it).
constexpr int kReadFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;

// Time of last use as kjit records it (explicitly, see DiskStore::read), in nanoseconds; mtime
// for a file system that keeps no atime at all.
std::int64_t last_used_ns(const struct stat& st) {
    const timespec t = (st.st_atim.tv_sec != 0 || st.st_atim.tv_nsec != 0) ? st.st_atim : st.st_mtim;
    return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// Whether an entry's recorded use is recent enough that recording this one changes nothing that
// eviction needs: least recently used to within a minute. Saves a syscall (and an inode write) on
// the reads of processes started one after another.
bool used_lately(std::int64_t last_used) {
    constexpr std::int64_t kResolutionNs = 60'000'000'000;
    timespec now{};
    if (::clock_gettime(CLOCK_REALTIME, &now) != 0) return false;
    const std::int64_t age = std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec - last_used;
    return age >= 0 && age < kResolutionNs;
}
bool used_lately(const struct stat& st) { return used_lately(last_used_ns(st)); }

// Records a read of the open file `fd` (entry, alias or note) for eviction, unless it was used
// lately: the access time kjit keeps itself, as file systems are often mounted noatime or relatime.
void record_use(int fd, const struct stat& st, const std::string& path) {
    if (used_lately(st)) return;
    const timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
    if (::futimens(fd, times) != 0) kjit::detail::log(LogLevel::debug, os_error("cannot record the access time of", path));
}

// What a file name in a shard is, and for which key.
enum class FileKind { entry, temporary, lock, alias, alias_temporary, note, note_temporary, other };

FileKind classify(const std::string& name, std::string& key) {
    if (name.size() < 32) return FileKind::other;
    key = name.substr(0, 32);
    if (!is_valid_key(key)) return FileKind::other;
    const std::string_view rest = std::string_view(name).substr(32);
    if (rest == kEntrySuffix) return FileKind::entry;
    if (rest == kLockSuffix) return FileKind::lock;
    if (rest == kAliasSuffix) return FileKind::alias;
    if (rest.starts_with(kAliasTmpInfix)) return FileKind::alias_temporary;
    if (rest == kNoteSuffix) return FileKind::note;
    if (rest.starts_with(kNoteTmpInfix)) return FileKind::note_temporary;
    if (rest.starts_with(kTmpInfix)) return FileKind::temporary;
    return FileKind::other;
}

bool is_shard_name(const std::string& name) {
    return name.size() == 2 && is_valid_key(name + std::string(30, '0'));
}

struct ShardFile {
    fs::path path;
    std::string key;
    FileKind kind;
};

// Every file kjit knows in the shard folders. Files may come and go meanwhile (other processes),
// so errors while listing are skipped rather than reported.
std::vector<ShardFile> shard_files(const fs::path& dir) {
    std::vector<ShardFile> files;
    std::error_code ec;
    for (fs::directory_iterator shards(dir, ec), end; !ec && shards != end; shards.increment(ec)) {
        // Not through a symlink: clear() and prune() would remove files wherever it points.
        if (!is_shard_name(shards->path().filename().string()) || shards->is_symlink(ec) || !shards->is_directory(ec))
            continue;
        std::error_code ec2;
        for (fs::directory_iterator it(shards->path(), ec2); !ec2 && it != end; it.increment(ec2)) {
            ShardFile f{it->path(), {}, FileKind::other};
            f.kind = classify(f.path.filename().string(), f.key);
            if (f.kind != FileKind::other) files.push_back(std::move(f));
        }
    }
    return files;
}

struct ScannedEntry {
    DiskStore::Item item;
    std::int64_t last_used_ns = 0;
};

// The entries, and with `capped` the notes and aliases too (what the size cap counts).
std::vector<ScannedEntry> scan_entries(const fs::path& dir, bool capped = false) {
    std::vector<ScannedEntry> entries;
    for (auto& f : shard_files(dir)) {
        struct stat st {};
        if (!(f.kind == FileKind::entry || (capped && (f.kind == FileKind::note || f.kind == FileKind::alias)))) continue;
        if (::stat(f.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        ScannedEntry e;
        e.last_used_ns = last_used_ns(st);
        e.item = {std::move(f.key), std::move(f.path), static_cast<std::uint64_t>(st.st_size),
                  e.last_used_ns / 1'000'000'000};
        entries.push_back(std::move(e));
    }
    return entries;
}

fs::path lock_path_of(const fs::path& entry_path, const std::string& key) {
    return entry_path.parent_path() / (key + std::string(kLockSuffix));
}

// The problem with the entry file at `path`, or the entry. `st` receives the file's identity.
std::optional<Entry> load(int fd, const std::string& path, const std::string& key, bool root_may_own, struct stat& st,
                          std::string& problem) {
    if (::fstat(fd, &st) != 0) {
        problem = os_error("cannot stat", path);
        return std::nullopt;
    }
    if (!S_ISREG(st.st_mode)) {
        problem = "not a regular file";
        return std::nullopt;
    }
    if (problem = untrusted_because(st, root_may_own); !problem.empty()) return std::nullopt;
    if (static_cast<std::uint64_t>(st.st_size) > kMaxEntryBytes) {
        problem = "too large: " + std::to_string(st.st_size) + " bytes";
        return std::nullopt;
    }
    if (static_cast<std::uint64_t>(st.st_size) > kReadWholeBytes) {
        unsigned char header[kEntryHeaderBytes];
        const std::optional<std::size_t> got = read_all(fd, header, sizeof header);
        if (!got) {
            problem = os_error("cannot read", path);
            return std::nullopt;
        }
        if (!check_entry_header(std::span<const unsigned char>(header, *got), static_cast<std::uint64_t>(st.st_size), problem))
            return std::nullopt;
    }
    // Not zeroed first (a vector would be): the read overwrites it, and a fresh process's first
    // cached call reads an entry.
    const auto size = static_cast<std::size_t>(st.st_size);
    const std::unique_ptr<unsigned char[]> bytes(new unsigned char[size]);
    const std::optional<std::size_t> got = read_all(fd, bytes.get(), size);
    if (!got) {
        problem = os_error("cannot read", path);
        return std::nullopt;
    }
    return parse_entry(std::span<const unsigned char>(bytes.get(), *got), key, problem);
}

}  // namespace

namespace detail {
void set_write_pause_hook(std::function<void(const fs::path& tmp)> hook) { write_pause_hook() = std::move(hook); }
}  // namespace detail

DiskStore::DiskStore(fs::path dir, bool writable, std::uint64_t max_bytes, std::chrono::milliseconds lock_timeout)
    : dir_(std::move(dir)), max_bytes_(max_bytes), lock_timeout_(lock_timeout) {
    open_folder(writable);
}

// Decides once what this store may do with its folder (see the constructor's comment).
void DiskStore::open_folder(bool want_writable) {
    writable_ = false;
    const std::string warn_key = "cache-folder:" + dir_.string();
    struct stat st {};
    if (::stat(dir_.c_str(), &st) != 0) {
        if (errno != ENOENT) {
            usable_ = false;  // every read would fail the same way, and warn for each entry
            kjit::detail::warn_once(warn_key, os_error("cannot use cache folder", dir_) + "; not using it");
            return;
        }
        if (!want_writable) return;  // a read-only layer that is not there: every read misses
        std::error_code ec;
        if (dir_.has_parent_path()) fs::create_directories(dir_.parent_path(), ec);
        // 0700: a cache kjit creates for itself is private (see the header).
        if ((::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) || ::stat(dir_.c_str(), &st) != 0) {
            kjit::detail::warn_once(warn_key, os_error("cannot create cache folder", dir_) +
                                                  "; kernels are cached in memory only");
            return;
        }
    }
    if (!S_ISDIR(st.st_mode)) {
        usable_ = false;
        kjit::detail::warn_once(warn_key, "cache folder " + dir_.string() + " is not a folder; not using it");
        return;
    }
    root_may_own_ = !want_writable;
    if (const std::string why = untrusted_because(st, root_may_own_); !why.empty()) {
        // Refused for reads too: whoever else can write here could plant an entry, and kjit would
        // load and run that code.
        usable_ = false;
        kjit::detail::warn_once(warn_key, "refusing cache folder " + dir_.string() + " (" + why +
                                              "): it could hold kernel binaries planted by another user; "
                                              "not reading or writing it");
        return;
    }
    // Files are readable by others only if the folder is.
    file_mode_ = 0600 | (st.st_mode & (S_IRGRP | S_IROTH));
    shard_mode_ = 0700 | (st.st_mode & (S_IRGRP | S_IXGRP | S_IROTH | S_IXOTH));
    if (!want_writable) return;
    if (::access(dir_.c_str(), W_OK | X_OK) != 0) {
        kjit::detail::warn_once(warn_key, os_error("cannot write to cache folder", dir_) + "; using it read-only");
        return;
    }
    writable_ = true;
}

namespace {
// "DIR/ab/abcd...SUFFIX", the file of `name` in its shard. Spelled out in one allocation rather
// than with std::filesystem::path or a chain of `+`: reads make it on a fresh process's first call.
std::string file_path(std::string_view dir, std::string_view name, std::string_view suffix) {
    std::string path;
    path.reserve(dir.size() + 4 + name.size() + suffix.size());
    path.append(dir).append("/").append(name.substr(0, 2)).append("/").append(name).append(suffix);
    return path;
}
}  // namespace

fs::path DiskStore::entry_path(const std::string& key) const {
    if (!is_valid_key(key)) throw CacheError("invalid cache key '" + key + "': expected 32 lowercase hex characters");
    return dir_ / key.substr(0, 2) / (key + std::string(kEntrySuffix));
}

std::string DiskStore::shard_problem(std::string_view name, bool* missing) const {
    const std::string shard = dir_.native() + "/" + std::string(name.substr(0, 2));
    struct stat st {};
    if (::lstat(shard.c_str(), &st) != 0) {
        if (missing) *missing = errno == ENOENT;
        return os_error("cannot stat", shard);
    }
    if (S_ISLNK(st.st_mode)) return "a symlink";
    if (!S_ISDIR(st.st_mode)) return "not a folder";
    return untrusted_because(st, root_may_own_);
}

bool DiskStore::shard_trusted(std::string_view name) const {
    std::atomic<bool>& trusted = shard_trusted_[hex_digit(name[0]) * 16 + hex_digit(name[1])];
    if (trusted.load(std::memory_order_relaxed)) return true;
    bool missing = false;
    const std::string problem = shard_problem(name, &missing);
    if (problem.empty()) {
        // For good: only this user can replace a shard of a trusted folder.
        trusted.store(true, std::memory_order_relaxed);
        return true;
    }
    if (missing) return false;  // not made yet: a plain miss
    const std::string shard = dir_.string() + "/" + std::string(name.substr(0, 2));
    kjit::detail::warn_once("cache-folder:" + shard, "refusing cache folder " + shard + " (" + problem +
                                                         "): it could hold kernel binaries planted by another user; "
                                                         "not reading or writing it");
    return false;
}

std::optional<Entry> DiskStore::read(const std::string& key) {
    if (!is_valid_key(key)) entry_path(key);  // throws its error
    if (!usable_ || !shard_trusted(key)) return std::nullopt;
    const std::string path = file_path(dir_.native(), key, kEntrySuffix);
    Fd fd = open_retry(path.c_str(), kReadFlags);
    if (!fd) {
        if (errno != ENOENT && errno != ENOTDIR)
            kjit::detail::warn_once("cache-read:" + path, os_error("cannot read cache entry", path));
        return std::nullopt;
    }
    struct stat st {};
    std::string problem;
    auto entry = load(fd.get(), path, key, root_may_own_, st, problem);
    if (!entry) {
        std::string what = "damaged cache entry " + path + ": " + problem;
        if (writable_) {
            // Only if nobody is writing the key now (a writer replaces it anyway; this also covers
            // our own get_or_create, which reads again under the lock) and the path still names
            // the file we read, so that a good entry renamed in meanwhile is not the one removed.
            EntryLock lock = lock_file(lock_path_of(fs::path(path), key), file_mode_, Wait::try_only);
            struct stat now {};
            if (lock && ::stat(path.c_str(), &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev &&
                ::unlink(path.c_str()) == 0)
                what += "; removed";
        }
        kjit::detail::warn_once("cache-damaged:" + path, what);
        return std::nullopt;
    }
    if (writable_) record_use(fd.get(), st, path);
    return entry;
}

bool DiskStore::write(const Entry& e) {
    const fs::path path = entry_path(e.key);
    if (!writable_) {
        ++store_failures_;
        return false;
    }
    std::string error;
    if (!ensure_shard(path, error)) {
        ++store_failures_;
        kjit::detail::warn_once("cache-write:" + error, "cannot store a cache entry: " + error);
        return false;
    }
    bool ok;
    {
        // Serialises with get_or_create and with removal of a damaged file of this key; the
        // write is atomic without it, so a lock that cannot be had does not stop it.
        EntryLock lock = lock_file(lock_path_of(path, e.key), file_mode_, Wait::bounded, &error, lock_timeout_);
        if (!lock) kjit::detail::log(LogLevel::debug, error);
        ok = write_locked(e, path);
    }
    if (ok && max_bytes_ > 0) prune_except(max_bytes_, path);
    return ok;
}

// The entry goes to a temporary file first and is renamed over `path` once complete and on
// disk, so that the name only ever points at a whole entry, even across a crash.
bool DiskStore::write_locked(const Entry& e, const fs::path& path) {
    std::vector<unsigned char> bytes;
    try {
        bytes = serialize_entry(e);
    } catch (const Error& err) {
        ++store_failures_;
        kjit::detail::log(LogLevel::warn, err.what());
        return false;
    }
    const fs::path tmp = path.string() + std::string(".tmp.") + std::to_string(::getpid()) + "." +
                         std::to_string(tmp_counter_.fetch_add(1));
    int err = 0;
    std::string error = write_new_file(tmp, bytes, file_mode_, err, /*durable=*/true, write_pause_hook());
    if (error.empty() && ::rename(tmp.c_str(), path.c_str()) != 0) {
        err = errno;
        error = os_error("cannot rename into place", path);
    }
    if (!error.empty()) {
        ::unlink(tmp.c_str());
        ++store_failures_;
        // Once per folder and kind of error: a full disk would otherwise warn for every kernel.
        kjit::detail::warn_once("cache-write:" + dir_.string() + ":" + std::to_string(err),
                                "cannot store a cache entry: " + error);
        return false;
    }
    fsync_dir(path.parent_path());
    ++stores_;
    return true;
}

// The shard folder of the file at `path`, made if missing; false, with `error`, when it cannot
// be made or is refused (written there, an entry could be replaced by another user).
bool DiskStore::ensure_shard(const fs::path& path, std::string& error) const {
    if (!make_dir(path.parent_path(), dir_, shard_mode_, error)) return false;
    const std::string name = path.filename().string();
    if (shard_trusted(name)) return true;
    error = "refused cache folder " + path.parent_path().string();
    return false;
}

Entry DiskStore::get_or_create(const std::string& key, const std::function<Entry()>& produce, bool* stored) {
    bool ignored = false;
    bool& in_folder = stored ? *stored : ignored;
    in_folder = false;
    const fs::path path = entry_path(key);
    if (auto hit = read(key)) return in_folder = true, std::move(*hit);

    auto checked = [&](Entry e) {
        if (e.key != key)
            throw CacheError("the kernel produced for cache key " + key + " carries the key '" + e.key + "'");
        return e;
    };
    // Produced, and not stored: counted, for `kjit precompile` to say so.
    auto unstored = [&] {
        Entry e = checked(produce());
        ++store_failures_;
        return e;
    };
    if (!writable_) return unstored();
    std::string error;
    if (!ensure_shard(path, error)) {
        kjit::detail::warn_once("cache-write:" + error, "cannot store a cache entry: " + error);
        return unstored();
    }
    LockFailure failure = LockFailure::none;
    EntryLock lock = lock_file(lock_path_of(path, key), file_mode_, Wait::bounded, &error, lock_timeout_, &failure);
    if (!lock && failure == LockFailure::timed_out) {
        // A stopped or hung holder: waiting longer may be forever. Said once per lock; the
        // holder stores the entry if it ever goes on.
        kjit::detail::warn_once("cache-lock-held:" + lock_path_of(path, key).string(),
                                error + "; compiling the kernel without storing it");
        return unstored();
    }
    if (!lock) {
        // Without the lock the work may be done twice, never wrongly: writes are atomic.
        kjit::detail::warn_once("cache-lock:" + dir_.string(), "cache entries may be compiled twice: " + error);
        Entry e = checked(produce());
        in_folder = write(e);
        return e;
    }
    if (auto hit = read(key)) return in_folder = true, std::move(*hit);  // someone else made it while we waited
    // Every writer of this key holds the lock, so any temporary of it is a killed writer's.
    remove_temporaries(key, std::chrono::seconds(0), /*lock_each=*/false);
    Entry e = checked(produce());
    const bool ok = in_folder = write_locked(e, path);
    lock.unlock();
    if (ok && max_bytes_ > 0) prune_except(max_bytes_, path);
    // Killed writers of other keys leave temporaries no later writer of theirs may remove.
    if (ok) std::call_once(swept_, [this] { sweep_stale_temporaries(kStaleTemporaryAge); });
    return e;
}

std::vector<DiskStore::Item> DiskStore::list() const {
    std::vector<Item> items;
    for (auto& e : scan_entries(dir_)) items.push_back(std::move(e.item));
    return items;
}

std::uint64_t DiskStore::total_bytes() const {
    std::uint64_t total = 0;
    for (const auto& e : scan_entries(dir_, /*capped=*/true)) total += e.item.bytes;
    return total;
}

namespace {
// Every shard file of `kind`, by name (a FIFO or a device planted as one is named too): "in a
// refused folder" where its shard is refused, else what `check` finds wrong with it, opened.
template <class ShardProblem, class Check>
std::vector<std::pair<fs::path, std::string>> verify_files(const fs::path& dir, FileKind kind, ShardProblem shard_problem,
                                                           Check check) {
    std::vector<std::pair<fs::path, std::string>> damaged;
    for (const auto& f : shard_files(dir)) {
        if (f.kind != kind) continue;
        if (const std::string problem = shard_problem(f.key); !problem.empty()) {
            damaged.emplace_back(f.path, "in a refused folder: " + problem);
            continue;
        }
        Fd fd = open_retry(f.path.c_str(), kReadFlags);
        if (!fd) {
            if (errno != ENOENT) damaged.emplace_back(f.path, os_error("cannot open", f.path));
            continue;  // removed meanwhile
        }
        if (std::string problem = check(fd.get(), f); !problem.empty()) damaged.emplace_back(f.path, std::move(problem));
    }
    return damaged;
}
}  // namespace

std::vector<std::pair<fs::path, std::string>> DiskStore::verify() const {
    return verify_files(dir_, FileKind::entry, [this](const std::string& key) { return shard_problem(key); },
                        [this](int fd, const ShardFile& f) {
                            struct stat st {};
                            std::string problem;
                            load(fd, f.path, f.key, root_may_own_, st, problem);
                            return problem;
                        });
}

std::uint64_t DiskStore::prune(std::uint64_t max_bytes) { return prune_except(max_bytes, {}); }

// Least recently used first; ties (same timestamp) broken by path so the order is stable.
std::uint64_t DiskStore::prune_except(std::uint64_t max_bytes, const fs::path& keep, const fs::path& keep_too) {
    if (!writable_) return 0;
    auto entries = scan_entries(dir_, /*capped=*/true);
    std::uint64_t total = 0;
    for (const auto& e : entries) total += e.item.bytes;
    if (total <= max_bytes) return 0;
    std::sort(entries.begin(), entries.end(), [](const ScannedEntry& a, const ScannedEntry& b) {
        return std::tie(a.last_used_ns, a.item.path) < std::tie(b.last_used_ns, b.item.path);
    });
    std::uint64_t removed = 0;
    for (const auto& e : entries) {
        if (total <= max_bytes) break;
        if (e.item.path.filename() == keep.filename() || e.item.path.filename() == keep_too.filename()) continue;
        if (::unlink(e.item.path.c_str()) == 0) {
            removed += e.item.bytes;
        } else if (errno != ENOENT) {
            kjit::detail::log(LogLevel::warn, os_error("cannot evict cache entry", e.item.path));
            continue;
        }
        total -= e.item.bytes;  // gone, by us or by someone else
    }
    return removed;
}

std::vector<std::pair<fs::path, std::string>> DiskStore::clear() {
    std::vector<std::pair<fs::path, std::string>> left;
    if (!writable_) return left;
    for (const auto& f : shard_files(dir_)) {
        if (f.kind == FileKind::entry || f.kind == FileKind::alias || f.kind == FileKind::alias_temporary ||
            f.kind == FileKind::note || f.kind == FileKind::note_temporary) {
            if (::unlink(f.path.c_str()) != 0 && errno != ENOENT) left.emplace_back(f.path, os_error("cannot remove", f.path));
            continue;
        }
        // A lock we can take is nobody's: taking it removes its file (EntryLock). A temporary
        // whose key lock is free is a killed writer's.
        EntryLock lock = lock_file(lock_path_of(f.path, f.key), file_mode_, Wait::try_only);
        if (lock && f.kind == FileKind::temporary && ::unlink(f.path.c_str()) != 0 && errno != ENOENT)
            left.emplace_back(f.path, os_error("cannot remove", f.path));
    }
    return left;
}

std::size_t DiskStore::sweep_stale_temporaries(std::chrono::seconds older_than) {
    if (!writable_) return 0;
    return remove_temporaries({}, older_than, /*lock_each=*/true);
}

// Temporaries of `key` (of every key if empty) whose mtime is older than `older_than`; with
// lock_each, only those whose key lock is free (a live writer holds it).
std::size_t DiskStore::remove_temporaries(const std::string& key, std::chrono::seconds older_than, bool lock_each) {
    const std::int64_t now = ::time(nullptr);
    std::size_t removed = 0;
    std::vector<ShardFile> files;
    if (key.empty()) {
        files = shard_files(dir_);
    } else {
        std::error_code ec;
        for (fs::directory_iterator it(dir_ / key.substr(0, 2), ec), end; !ec && it != end; it.increment(ec)) {
            ShardFile f{it->path(), {}, FileKind::other};
            f.kind = classify(f.path.filename().string(), f.key);
            if (f.kind == FileKind::temporary && f.key == key) files.push_back(std::move(f));
        }
    }
    for (const auto& f : files) {
        struct stat st {};
        if (f.kind != FileKind::temporary || ::stat(f.path.c_str(), &st) != 0) continue;
        if (now - st.st_mtim.tv_sec < older_than.count()) continue;
        EntryLock lock;
        if (lock_each && !(lock = lock_file(lock_path_of(f.path, f.key), file_mode_, Wait::try_only))) continue;
        if (::unlink(f.path.c_str()) == 0) {
            ++removed;
            kjit::detail::log(LogLevel::info, "removed stale cache temporary " + f.path.string());
        }
    }
    return removed;
}

// <dir>/<aa>/<name><suffix> holding `bytes`, written to a temporary and renamed into place (fsynced
// first when `durable`); a failure is warned once per folder and `what`.
bool DiskStore::write_small_file(const std::string& name, std::string_view suffix, const std::string& bytes,
                                 const char* what, bool durable) {
    const fs::path path = dir_ / name.substr(0, 2) / (name + std::string(suffix));
    std::string error;
    if (ensure_shard(path, error)) {
        const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid()) + "." +
                             std::to_string(tmp_counter_.fetch_add(1));
        int err = 0;
        error = write_new_file(tmp, std::span(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()), file_mode_, err,
                               durable, write_pause_hook());
        if (error.empty() && ::rename(tmp.c_str(), path.c_str()) != 0) error = os_error("cannot rename into place", path);
        if (error.empty()) return true;
        ::unlink(tmp.c_str());
    }
    kjit::detail::warn_once(std::string("cache-") + what + ":" + dir_.string(), std::string("cannot store a cache ") + what + ": " + error);
    return false;
}

// The bytes of <dir>/<aa>/<name><suffix> when it exists and holds at most `max_bytes`.
std::optional<std::string> DiskStore::read_small_file(const std::string& name, std::string_view suffix,
                                                      std::size_t max_bytes) const {
    if (!shard_trusted(name)) return std::nullopt;
    const std::string path = file_path(dir_.native(), name, suffix);
    Fd fd = open_retry(path.c_str(), kReadFlags);
    if (!fd) return std::nullopt;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) > max_bytes ||
        !untrusted_because(st, root_may_own_).empty())
        return std::nullopt;
    if (writable_) record_use(fd.get(), st, path);  // aliases count in the size cap
    std::string bytes;
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::nullopt;
        if (n == 0) return bytes;
        bytes.append(buffer, static_cast<std::size_t>(n));
        if (bytes.size() > max_bytes) return std::nullopt;
        // A read of a regular file that stops short of the buffer stopped at its end: no second
        // read to see 0 (a syscall less on a fresh process's first call). Should it ever stop
        // short for another reason, the caller's check (a note's check line, an alias's key and
        // its entry's checksum) finds the text incomplete: a miss, never a wrong answer.
        if (static_cast<std::size_t>(n) < sizeof buffer) return bytes;
    }
}

bool DiskStore::write_alias(const std::string& alias, const std::string& key) {
    if (!writable_ || !is_valid_key(alias) || !is_valid_key(key)) return false;
    if (!write_small_file(alias, kAliasSuffix, key + "\n" + alias + "\n", "alias", true)) return false;
    // Aliases count in the cap; neither the alias nor its entry goes for it.
    if (max_bytes_ > 0) prune_except(max_bytes_, file_path(dir_.native(), alias, kAliasSuffix), entry_path(key));
    return true;
}

namespace {
// "<key>\n<alias>\n", or the key alone (written before aliases named themselves).
constexpr std::size_t kAliasFileBytes = 32 + 1 + 32 + 1;

// The key an alias file's `bytes` hold for `alias`, or nothing with `problem` saying why.
std::optional<std::string> alias_key(std::string_view bytes, std::string_view alias, std::string& problem) {
    const std::string_view key = bytes.substr(0, 32);
    if (!is_valid_key(key) || !(bytes.size() == 32 || bytes.size() == kAliasFileBytes)) {
        problem = "not a cache key";
        return std::nullopt;
    }
    if (bytes.size() == kAliasFileBytes &&
        (bytes[32] != '\n' || bytes.substr(33, 32) != alias || bytes.back() != '\n')) {
        problem = "it is alias " + std::string(bytes.substr(33, 32)) + "'s file (swapped or copied)";
        return std::nullopt;
    }
    return std::string(key);
}
}  // namespace

std::optional<std::string> DiskStore::read_alias(const std::string& alias) const {
    if (!usable_ || !is_valid_key(alias)) return std::nullopt;
    const std::optional<std::string> bytes = read_small_file(alias, kAliasSuffix, kAliasFileBytes);
    if (!bytes) return std::nullopt;
    std::string problem;
    std::optional<std::string> key = alias_key(*bytes, alias, problem);
    if (!key) {  // a miss, never a wrong entry
        const std::string path = file_path(dir_.native(), alias, kAliasSuffix);
        kjit::detail::warn_once("cache-alias:" + path, "cache alias " + path + " not used: " + problem);
    }
    return key;
}

std::vector<std::pair<fs::path, std::string>> DiskStore::verify_aliases() const {
    return verify_files(dir_, FileKind::alias, [this](const std::string& key) { return shard_problem(key); },
                        [this](int fd, const ShardFile& f) {
                            struct stat st {};
                            char bytes[kAliasFileBytes + 1];
                            if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::string("not a regular file");
                            std::string problem = untrusted_because(st, root_may_own_);
                            if (!problem.empty()) return problem;
                            const std::optional<std::size_t> got = read_all(fd, reinterpret_cast<unsigned char*>(bytes), sizeof bytes);
                            if (!got) return os_error("cannot read", f.path);
                            (void)alias_key(std::string_view(bytes, *got), f.key, problem);
                            return problem;
                        });
}

namespace {
// A note's last line: "xxh3=" and 16 hex digits of XXH3-64 over the text before it.
constexpr std::string_view kNoteCheckPrefix = "xxh3=";
constexpr std::string_view kNoteCheckLineStart = "\nxxh3=";  // no line of a note's text starts so
constexpr std::size_t kNoteCheckLineBytes = 5 + 16 + 1;
std::string note_check_line(std::string_view text) {
    return std::string(kNoteCheckPrefix) + hex16(XXH3_64bits(text.data(), text.size())) + "\n";
}
// Whether `line` is the check line of `text`, compared in place (read on a fresh process's first
// cached call).
bool is_check_line_of(std::string_view line, std::string_view text) {
    if (line.size() != kNoteCheckLineBytes || !line.starts_with(kNoteCheckPrefix) || line.back() != '\n') return false;
    char digits[16];
    put_hex16(digits, XXH3_64bits(text.data(), text.size()));
    return line.substr(kNoteCheckPrefix.size(), 16) == std::string_view(digits, 16);
}
}  // namespace

namespace {
// A note's first line: whose it is.
std::string note_name_line(std::string_view name) { return "note=" + std::string(name) + "\n"; }
}  // namespace

bool DiskStore::write_note(const std::string& name, const std::string& text) {
    if (!writable_ || !is_valid_key(name) || text.size() + kNoteCheckLineBytes > kMaxNoteTextBytes ||
        text.starts_with(kNoteCheckPrefix) ||
        text.find(kNoteCheckLineStart) != std::string::npos ||
        (!text.empty() && text.back() != '\n'))
        return false;
    std::string bytes = note_name_line(name) + text;
    bytes += note_check_line(bytes);
    // Not fsynced: a note lost in a crash is a miss, and a torn one fails its check line.
    if (!write_small_file(name, kNoteSuffix, bytes, "note", false)) return false;
    if (max_bytes_ > 0) prune_except(max_bytes_, file_path(dir_.native(), name, kNoteSuffix));
    return true;
}

namespace {
// The note in bytes[0, size): its text ends at the first line that starts with the check prefix
// (no line of a note's text does), which must be its check line and the file's end.
std::optional<DiskStore::Note> split_note(std::unique_ptr<unsigned char[]> bytes, std::size_t size, std::string_view name) {
    const std::string_view all(reinterpret_cast<const char*>(bytes.get()), size);
    std::size_t check_at = 0;
    if (!all.starts_with(kNoteCheckPrefix)) {
        const std::size_t found = all.find(kNoteCheckLineStart);
        if (found == std::string_view::npos) return std::nullopt;
        check_at = found + 1;
    }
    if (size != check_at + kNoteCheckLineBytes ||
        !is_check_line_of(all.substr(check_at, kNoteCheckLineBytes), all.substr(0, check_at)))
        return std::nullopt;
    // Compared in place: 5 + 32 + 1 bytes (a fresh process's first cached call reads a note).
    constexpr std::size_t kNameLineBytes = 5 + 32 + 1;
    if (check_at < kNameLineBytes || !all.starts_with("note=") || all.substr(5, 32) != name || all[37] != '\n')
        return std::nullopt;
    DiskStore::Note note;
    note.text_at = kNameLineBytes;
    note.bytes = std::move(bytes);
    note.size = size;
    note.text_size = check_at;
    return note;
}
}  // namespace

namespace {
// The note file open as `fd` (of `path`), read whole with one fstat (its size, and `st` for the
// access time) and one read; nothing when it is not a note.
std::optional<DiskStore::Note> read_note_file(int fd, std::string_view name, bool root_may_own, struct stat& st) {
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) > kMaxNoteTextBytes ||
        !untrusted_because(st, root_may_own).empty())
        return std::nullopt;
    const auto size = static_cast<std::size_t>(st.st_size);
    std::unique_ptr<unsigned char[]> bytes(new unsigned char[size]);
    const std::optional<std::size_t> got = read_all(fd, bytes.get(), size);
    if (!got || *got != size) return std::nullopt;
    return split_note(std::move(bytes), size, name);
}
}  // namespace

std::optional<DiskStore::Note> DiskStore::read_note(const std::string& name) const {
    if (!usable_ || !is_valid_key(name) || !shard_trusted(name)) return std::nullopt;
    const std::string path = file_path(dir_.native(), name, kNoteSuffix);
    Fd fd = open_retry(path.c_str(), kReadFlags);
    if (!fd) return std::nullopt;
    struct stat st {};
    std::optional<Note> note = read_note_file(fd.get(), name, root_may_own_, st);
    if (note && writable_) record_use(fd.get(), st, path);
    return note;
}

std::vector<std::pair<fs::path, std::string>> DiskStore::verify_notes() const {
    return verify_files(dir_, FileKind::note, [this](const std::string& key) { return shard_problem(key); },
                        [this](int fd, const ShardFile& f) -> std::string {
                            struct stat st {};
                            if (read_note_file(fd, f.key, root_may_own_, st)) return {};
                            std::string problem;
                            if (::fstat(fd, &st) == 0 && !(problem = untrusted_because(st, root_may_own_)).empty())
                                return problem;
                            return "note fails its check line, or is another note's";
                        });
}

}  // namespace kjit::cache
