// The file primitives the disk store is built on (cache/disk_store.cpp): an owned descriptor,
// open and whole reads and writes that retry on EINTR, an exclusive lock file that cannot be held
// twice, a durable rename, and the one way kjit replaces a file (replace_file). POSIX calls with
// C strings where a fresh process's first cached call reads, and errors spelled
// "<what> <path>: <strerror>".
#pragma once

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include <sys/types.h>
#include <unistd.h>

namespace kjit::cache {

// "<what> <path>: <strerror>" for the errno of the call that just failed.
std::string os_error(std::string_view what, const std::filesystem::path& path, int err = errno);

// Owns a file descriptor; closing a read-only one cannot lose data, so close errors matter only
// where a file was written, and that path calls close() itself.
class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    Fd& operator=(Fd&& o) noexcept {
        if (this != &o) reset(std::exchange(o.fd_, -1));
        return *this;
    }
    ~Fd() { reset(); }
    int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }
    explicit operator bool() const { return fd_ >= 0; }
    void reset(int fd = -1) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

private:
    int fd_;
};

// open(2) with O_CLOEXEC, again after EINTR. Takes a C string: the reads of a fresh process's
// first cached call hold a std::string, which an fs::path parameter would copy and split first.
Fd open_retry(const char* path, int flags, mode_t mode = 0);

// An exclusive flock on a lock file. The holder unlinks the file before unlocking, so lock files
// do not pile up; someone who opened the old file and was waiting on it then sees that the path
// no longer names what it locked, and starts again on a fresh file. Without that check two
// processes could hold "the" lock on two different inodes.
class EntryLock {
public:
    EntryLock() = default;
    EntryLock(Fd fd, std::filesystem::path path) : fd_(std::move(fd)), path_(std::move(path)) {}
    EntryLock(EntryLock&&) noexcept = default;
    EntryLock& operator=(EntryLock&& o) noexcept {
        if (this != &o) {
            unlock();  // a defaulted assignment would close the old lock without removing its file
            fd_ = std::move(o.fd_);
            path_ = std::move(o.path_);
        }
        return *this;
    }
    ~EntryLock() { unlock(); }
    explicit operator bool() const { return static_cast<bool>(fd_); }

    void unlock() noexcept {
        if (!fd_) return;
        ::unlink(path_.c_str());  // while still holding it: see above
        fd_.reset();
    }

private:
    Fd fd_;
    std::filesystem::path path_;
};

// try_only: one try. bounded: wait until the lock is free, but no longer than the timeout given
// (a holder that is stopped or hung must not stop everyone else for good).
enum class Wait { try_only, bounded };

// How long Wait::bounded waits when no timeout is configured (KJIT_CACHE_LOCK_TIMEOUT).
inline constexpr std::chrono::milliseconds kDefaultLockTimeout{30'000};

// Why lock_file() returned no lock.
enum class LockFailure { none, busy, timed_out, error };

// The lock, or an empty one: held by someone else (try_only: `busy`; bounded: `timed_out` after
// `timeout`, with `error` naming the holder's pid as its lock file says) or an error (set in
// `error`). The lock file is opened O_NOFOLLOW: a symlink planted as one (dangling, say) is an
// error, never a file created wherever it points. Whoever takes the lock writes its pid into the
// file, for those who wait too long to say who holds it.
EntryLock lock_file(const std::filesystem::path& path, mode_t mode, Wait wait, std::string* error = nullptr,
                    std::chrono::milliseconds timeout = kDefaultLockTimeout, LockFailure* failure = nullptr);

// Writes all `size` bytes; false on an error.
bool write_all(int fd, const unsigned char* data, std::size_t size);

// Reads up to `size` bytes from the start of `fd` into `out`; how many it read (fewer when the
// file is shorter than fstat said), or nothing on an error.
std::optional<std::size_t> read_all(int fd, unsigned char* out, std::size_t size);

// Writes `bytes` to the new file `tmp` (O_EXCL|O_NOFOLLOW) with exactly `mode` (not what the umask leaves),
// fsynced when `durable`, and closed with its error checked (NFS reports write-back errors
// there); "" or what went wrong, with the errno of the failure in `err`. `halfway`, when set, is
// called with `tmp` after the first half of the bytes is written (tests kill a writer there).
std::string write_new_file(const std::filesystem::path& tmp, std::span<const unsigned char> bytes, mode_t mode, int& err,
                           bool durable, const std::function<void(const std::filesystem::path&)>& halfway = {});

enum class ModeIs { exact, less_umask };

// Replaces the file at `path` with one holding `bytes`, atomically: the bytes go to a new
// temporary of a random name in the same folder (`<name>.tmp.<16 hex digits>`), created
// O_CREAT|O_EXCL|O_NOFOLLOW so that nothing planted there (a symlink, a file) is ever written
// through, fsynced when `durable`, and renamed over `path` (rename replaces a symlink at `path`,
// never what it points to; with `durable` the folder is fsynced too). The mode is `mode` exactly,
// or `mode` less the umask as open(2) would leave it. "" or what went wrong (the temporary is
// removed then). This is the only way kjit writes a file that is not a cache entry, alias or note.
std::string replace_file(const std::filesystem::path& path, std::span<const unsigned char> bytes, mode_t mode, ModeIs mode_is,
                         bool durable);
inline std::string replace_file(const std::filesystem::path& path, std::string_view text, mode_t mode, ModeIs mode_is,
                                bool durable) {
    return replace_file(path, std::span(reinterpret_cast<const unsigned char*>(text.data()), text.size()), mode, mode_is,
                        durable);
}

// The mode of files written in folder `dir`: readable by others only where the folder is, as the
// cache's own files are (0600, plus S_IRGRP and S_IROTH from the folder); 0600 when it cannot be
// read.
mode_t file_mode_in(const std::filesystem::path& dir);

// Makes a rename or a new name in `dir` durable (warns once when it cannot); what was renamed is
// visible without it.
void fsync_dir(const std::filesystem::path& dir);

}  // namespace kjit::cache
