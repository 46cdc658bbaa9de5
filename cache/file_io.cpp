#include "cache/file_io.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "runtime/detail/log.hpp"

namespace kjit::cache {
namespace fs = std::filesystem;

std::string os_error(std::string_view what, const fs::path& path, int err) {
    return std::string(what) + " " + path.string() + ": " + std::strerror(err);
}

Fd open_retry(const char* path, int flags, mode_t mode) {
    int fd;
    do fd = ::open(path, flags | O_CLOEXEC, mode);
    while (fd < 0 && errno == EINTR);
    return Fd(fd);
}

namespace {

// The pid written in the lock file open as `fd` by its holder (lock_file), or 0.
long holder_of(int fd) {
    char text[24];
    ssize_t n;
    do n = ::pread(fd, text, sizeof text - 1, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return 0;
    text[n] = '\0';
    char* end = nullptr;
    const long pid = std::strtol(text, &end, 10);
    return pid > 0 && end != text && (*end == '\n' || *end == '\0') ? pid : 0;
}

// The lock's new holder says who it is, for whoever waits too long (lock_file). Best effort: a
// lock is a lock without it.
void write_holder(int fd) {
    char text[24];
    const int n = std::snprintf(text, sizeof text, "%ld\n", static_cast<long>(::getpid()));
    if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, text, static_cast<std::size_t>(n), 0) == n) return;
    kjit::detail::log(kjit::detail::LogLevel::debug, std::string("cannot write the holder of a cache lock: ") + std::strerror(errno));
}

std::string seconds_text(std::chrono::milliseconds ms) {
    char text[32];
    std::snprintf(text, sizeof text, "%g s", static_cast<double>(ms.count()) / 1000.0);
    return text;
}

}  // namespace

EntryLock lock_file(const fs::path& path, mode_t mode, Wait wait, std::string* error, std::chrono::milliseconds timeout,
                    LockFailure* failure) {
    LockFailure ignored;
    LockFailure& why = failure ? *failure : ignored;
    why = LockFailure::none;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::chrono::milliseconds pause{1};
    for (;;) {
        // O_NOFOLLOW: a symlink planted as the lock (dangling, say) would have O_CREAT make its target.
        Fd fd = open_retry(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW, mode);
        if (!fd) {
            why = LockFailure::error;
            if (error) *error = os_error("cannot open lock file", path);
            return {};
        }
        // Polled, not a blocking flock: that one cannot be given up on, and a holder that is
        // stopped (SIGSTOP, a debugger) or hung would block every compile of the key for good.
        while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
            if (errno == EINTR) continue;
            if (errno != EWOULDBLOCK) {
                why = LockFailure::error;
                if (error) *error = os_error("cannot lock", path);
                return {};
            }
            if (wait == Wait::try_only) {
                why = LockFailure::busy;
                return {};
            }
            const auto now = std::chrono::steady_clock::now();
            if (now >= deadline) {
                why = LockFailure::timed_out;
                if (error) {
                    const long pid = holder_of(fd.get());
                    *error = "cache lock " + path.string() + " is held by " +
                             (pid > 0 ? "process " + std::to_string(pid) : std::string("another process")) +
                             " (still held after " + seconds_text(timeout) + ")";
                }
                return {};
            }
            std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
            pause = std::min(pause * 2, std::chrono::milliseconds(50));
        }
        struct stat held {}, named {};
        if (::fstat(fd.get(), &held) != 0) {
            why = LockFailure::error;
            if (error) *error = os_error("cannot stat lock file", path);
            return {};
        }
        if (::lstat(path.c_str(), &named) == 0 && named.st_ino == held.st_ino && named.st_dev == held.st_dev) {
            write_holder(fd.get());
            return EntryLock(std::move(fd), path);
        }
        // The holder before us removed the file we were waiting on: try again with the new one.
    }
}

bool write_all(int fd, const unsigned char* data, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

std::optional<std::size_t> read_all(int fd, unsigned char* out, std::size_t size) {
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = ::pread(fd, out + done, size - done, static_cast<off_t>(done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return std::nullopt;
        }
        if (n == 0) break;
        done += static_cast<std::size_t>(n);
    }
    return done;
}

void fsync_dir(const fs::path& dir) {
    Fd fd = open_retry(dir.c_str(), O_RDONLY | O_DIRECTORY);
    if (!fd || ::fsync(fd.get()) != 0)
        kjit::detail::warn_once("cache-fsync-dir:" + dir.string(), os_error("cannot fsync cache folder", dir));
}

namespace {
// Writes `bytes` to the new file open as `fd` (`path`), `halfway` called half way; see write_new_file.
std::string fill_new_file(Fd fd, const fs::path& path, std::span<const unsigned char> bytes, mode_t mode, bool exact_mode,
                          int& err, bool durable, const std::function<void(const fs::path&)>& halfway) {
    if (exact_mode && ::fchmod(fd.get(), mode) != 0) return err = errno, os_error("cannot set the mode of", path);
    const std::size_t half = bytes.size() / 2;
    if (!write_all(fd.get(), bytes.data(), half)) return err = errno, os_error("cannot write", path);
    if (halfway) halfway(path);
    if (!write_all(fd.get(), bytes.data() + half, bytes.size() - half)) return err = errno, os_error("cannot write", path);
    if (durable && ::fsync(fd.get()) != 0) return err = errno, os_error("cannot fsync", path);
    if (::close(fd.release()) != 0) return err = errno, os_error("cannot close", path);
    return {};
}

// 16 hex digits nobody can guess ahead (getrandom), for a temporary's name; should the kernel
// have none to give, the time, pid and a counter, which O_EXCL makes safe all the same.
std::string random_hex16() {
    std::uint64_t v = 0;
    if (::getrandom(&v, sizeof v, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof v)) {
        static std::atomic<std::uint64_t> counter{0};
        timespec now{};
        ::clock_gettime(CLOCK_REALTIME, &now);
        v = (static_cast<std::uint64_t>(now.tv_nsec) ^ (static_cast<std::uint64_t>(now.tv_sec) << 30) ^
             (static_cast<std::uint64_t>(::getpid()) << 40)) +
            counter.fetch_add(1) * 0x9e3779b97f4a7c15ull;
    }
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
    return text;
}
}  // namespace

std::string write_new_file(const fs::path& tmp, std::span<const unsigned char> bytes, mode_t mode, int& err, bool durable,
                           const std::function<void(const fs::path&)>& halfway) {
    Fd fd = open_retry(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
    if (!fd) return err = errno, os_error("cannot create", tmp);
    return fill_new_file(std::move(fd), tmp, bytes, mode, /*exact_mode=*/true, err, durable, halfway);
}

std::string replace_file(const fs::path& path, std::span<const unsigned char> bytes, mode_t mode, ModeIs mode_is,
                         bool durable) {
    const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
    const std::string prefix = path.filename().string() + ".tmp.";
    for (int attempt = 0;; ++attempt) {
        const fs::path tmp = dir / (prefix + random_hex16());
        Fd fd = open_retry(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
        if (!fd) {
            // A name taken (planted, or the one in 2^64 chance): another name, a few times.
            if (errno == EEXIST && attempt < 8) continue;
            return os_error("cannot create", tmp);
        }
        int err = 0;
        std::string error = fill_new_file(std::move(fd), tmp, bytes, mode, mode_is == ModeIs::exact, err, durable, {});
        if (error.empty() && ::rename(tmp.c_str(), path.c_str()) != 0) error = os_error("cannot rename into place", path);
        if (!error.empty()) {
            ::unlink(tmp.c_str());
            return error;
        }
        if (durable) fsync_dir(dir);
        return {};
    }
}

mode_t file_mode_in(const fs::path& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return 0600;
    return 0600 | (st.st_mode & (S_IRGRP | S_IROTH));
}

}  // namespace kjit::cache
