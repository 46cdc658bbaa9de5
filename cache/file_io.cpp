#include "cache/file_io.hpp"

#include <cstring>

#include <fcntl.h>
#include <sys/file.h>
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

EntryLock lock_file(const fs::path& path, mode_t mode, Wait wait, std::string* error) {
    for (;;) {
        Fd fd = open_retry(path.c_str(), O_RDWR | O_CREAT, mode);
        if (!fd) {
            if (error) *error = os_error("cannot open lock file", path);
            return {};
        }
        int rc;
        do rc = ::flock(fd.get(), LOCK_EX | (wait == Wait::try_only ? LOCK_NB : 0));
        while (rc != 0 && errno == EINTR);
        if (rc != 0) {
            if (errno != EWOULDBLOCK && error) *error = os_error("cannot lock", path);
            return {};
        }
        struct stat held {}, named {};
        if (::fstat(fd.get(), &held) != 0) {
            if (error) *error = os_error("cannot stat lock file", path);
            return {};
        }
        if (::stat(path.c_str(), &named) == 0 && named.st_ino == held.st_ino && named.st_dev == held.st_dev)
            return EntryLock(std::move(fd), path);
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

std::string write_new_file(const fs::path& tmp, std::span<const unsigned char> bytes, mode_t mode, int& err, bool durable,
                           const std::function<void(const fs::path&)>& halfway) {
    Fd fd = open_retry(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL, mode);
    if (!fd) return err = errno, os_error("cannot create", tmp);
    if (::fchmod(fd.get(), mode) != 0) return err = errno, os_error("cannot set the mode of", tmp);
    const std::size_t half = bytes.size() / 2;
    if (!write_all(fd.get(), bytes.data(), half)) return err = errno, os_error("cannot write", tmp);
    if (halfway) halfway(tmp);
    if (!write_all(fd.get(), bytes.data() + half, bytes.size() - half)) return err = errno, os_error("cannot write", tmp);
    if (durable && ::fsync(fd.get()) != 0) return err = errno, os_error("cannot fsync", tmp);
    if (::close(fd.release()) != 0) return err = errno, os_error("cannot close", tmp);
    return {};
}

}  // namespace kjit::cache
