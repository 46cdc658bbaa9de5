// NumPy .npy reader and writer (format versions 1.0, 2.0 and 3.0), written from the format's
// description in numpy/lib/format.py's documentation.
//
// Layout of a file: the magic "\x93NUMPY", one byte each for the major and minor version, the
// header length (2 bytes little-endian in 1.0, 4 bytes in 2.0 and 3.0), the header itself (a
// Python dict literal, latin-1 in 1.0/2.0 and UTF-8 in 3.0, padded with spaces and ended by '\n'),
// then the raw elements in C or Fortran order. The header dict itself is parsed and written by
// runtime/detail/npy_header.cpp; this file reads and writes the framing and the elements.
#include "kjit/npy.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "kjit/error.hpp"
#include "runtime/detail/npy_header.hpp"

namespace kjit {
namespace {

using detail::fail_npy_read;
using detail::NpyHeader;

constexpr std::string_view kMagic{"\x93NUMPY", 6};
// NumPy aligns the start of the data to 64 bytes so that memory-mapped arrays are aligned for
// any element type; we do the same when writing.
constexpr std::size_t kAlignment = 64;
// A header larger than this is not something NumPy would write (it caps at a few KiB for plain
// dtypes); refusing early keeps a corrupt length field from making us allocate gigabytes.
constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t{1} << 24;

// ---------------------------------------------------------------------------------------------
// Reading

std::uint64_t little_endian(const unsigned char* p, int bytes) {
    std::uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

// Owns a file descriptor.
class FileDescriptor {
public:
    explicit FileDescriptor(int fd) : fd_(fd) {}
    FileDescriptor(FileDescriptor&& o) noexcept : fd_(o.release()) {}
    ~FileDescriptor() {
        if (fd_ >= 0) ::close(fd_);
    }
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    FileDescriptor& operator=(FileDescriptor&&) = delete;
    int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }

private:
    int fd_;
};

// What a file that is not a regular one is, for the message refusing it.
const char* file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

// Opens `path` for reading and returns it with its size, refusing anything but a regular file
// before reading a byte: a FIFO would block the read forever (and, with no writer, the open
// itself, hence O_NONBLOCK), a device such as /dev/zero would never end.
FileDescriptor open_regular_file(const std::string& path, std::uint64_t& size) {
    int raw = -1;
    do {
        raw = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    } while (raw < 0 && errno == EINTR);
    if (raw < 0) {
        if (errno == ENOENT) fail_npy_read(path, "no such file");
        fail_npy_read(path, std::string("cannot open it: ") + std::strerror(errno));
    }
    FileDescriptor fd(raw);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) fail_npy_read(path, std::string("cannot stat it: ") + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) fail_npy_read(path, "it is a directory");
    if (!S_ISREG(st.st_mode))
        fail_npy_read(path, std::string("it is ") + file_kind(st.st_mode) + ", not a regular file");
    // Reads of a regular file do not block anyway; blocking mode is what the reads below expect.
    const int flags = ::fcntl(fd.get(), F_GETFL);
    if (flags >= 0) (void)::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
    size = static_cast<std::uint64_t>(st.st_size);
    return fd;
}

// Reads up to `bytes` bytes (fewer only at the end of the file); how many it read. A read error
// fails naming the file.
std::uint64_t read_fully(int fd, void* dst, std::uint64_t bytes, const std::string& path) {
    auto* out = static_cast<unsigned char*>(dst);
    std::uint64_t got = 0;
    while (got < bytes) {
        // Linux reads at most about 2 GiB at once.
        const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(bytes - got, std::uint64_t{1} << 30));
        const ssize_t n = ::read(fd, out + got, chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail_npy_read(path, std::string("reading it failed: ") + std::strerror(errno));
        if (n == 0) break;
        got += static_cast<std::uint64_t>(n);
    }
    return got;
}

// Reads the magic, version, length and header dict; `data_start` gets the offset of the data.
NpyHeader read_header(int fd, const std::string& path, std::uint64_t& data_start) {
    std::array<unsigned char, 12> prefix{};
    const std::uint64_t got = read_fully(fd, prefix.data(), 8, path);
    if (got < kMagic.size() || std::memcmp(prefix.data(), kMagic.data(), kMagic.size()) != 0)
        fail_npy_read(path, "not a .npy file (it does not start with the magic \"\\x93NUMPY\")");
    if (got < 8) fail_npy_read(path, "the header is truncated (the file ends inside the version number)");
    const int major = prefix[6];
    const int minor = prefix[7];
    if (major < 1 || major > 3 || minor != 0)
        fail_npy_read(path, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                       " (kjit reads 1.0, 2.0 and 3.0)");
    const int length_bytes = major == 1 ? 2 : 4;
    if (read_fully(fd, prefix.data() + 8, length_bytes, path) < static_cast<std::uint64_t>(length_bytes))
        fail_npy_read(path, "the header is truncated (the file ends inside the header length)");
    const std::uint64_t header_len = little_endian(prefix.data() + 8, length_bytes);
    if (header_len > kMaxHeaderBytes)
        fail_npy_read(path, "the header length " + std::to_string(header_len) + " is implausibly large (the file is corrupt)");

    std::string text(header_len, '\0');
    const std::uint64_t got_header = read_fully(fd, text.data(), header_len, path);
    if (got_header < header_len)
        fail_npy_read(path, "the header is truncated: its length field says " + std::to_string(header_len) +
                       " bytes but the file has only " + std::to_string(got_header) + " after it");
    data_start = 8 + static_cast<std::uint64_t>(length_bytes) + header_len;
    // Version 3.0 only changes the header's encoding to UTF-8; the keys, descr codes and numbers
    // we accept are ASCII, and any non-ASCII byte can only be inside a string we reject anyway.
    return detail::parse_npy_header(text, path);
}

void byteswap_elements(unsigned char* data, std::uint64_t bytes, std::size_t itemsize, bool complex) {
    // A complex number is two floats, each stored big-endian on its own.
    const std::size_t part = complex ? itemsize / 2 : itemsize;
    for (std::uint64_t i = 0; i + part <= bytes; i += part) std::reverse(data + i, data + i + part);
}

std::string mib(std::uint64_t bytes) { return std::to_string(bytes / (1024 * 1024)) + " MiB"; }

Array read_npy(const std::string& path) {
    std::uint64_t file_size = 0;
    const FileDescriptor fd = open_regular_file(path, file_size);
    std::uint64_t data_start = 0;
    const NpyHeader h = read_header(fd.get(), path, data_start);
    const DType dtype = h.dtype;

    // Check the length before allocating, so that a damaged file whose header claims a huge shape
    // gives the right message rather than an allocation failure.
    const std::uint64_t available = file_size > data_start ? file_size - data_start : 0;
    if (available < h.data_bytes)
        fail_npy_read(path, "the data is truncated: shape " + shape_to_string(h.shape) + " of " + std::string(dtype.name()) +
                       " needs " + std::to_string(h.data_bytes) + " bytes but the file has " +
                       std::to_string(available) + " after the header");
    // Bytes after the data are ignored, as np.load does: some writers pad files, and they never
    // change the array's meaning.

    Array host;
    try {
        host = Array::empty(h.shape, dtype, Device::cpu());
    } catch (const std::bad_alloc&) {
        fail_npy_read(path, "its data, shape " + shape_to_string(h.shape) + " of " + std::string(dtype.name()) + ", is " +
                       std::to_string(h.data_bytes) + " bytes (" + mib(h.data_bytes) +
                       "), more than this process can allocate in host memory");
    }
    if (h.fortran_order && h.shape.size() > 1)
        host = Array::view_of(host.buffer(), dtype, h.shape, f_strides(h.shape), 0);
    auto* data = static_cast<unsigned char*>(host.data());
    if (h.data_bytes > 0 && read_fully(fd.get(), data, h.data_bytes, path) < h.data_bytes)
        fail_npy_read(path, "the file ended while reading the data (it shrank while being read)");
    if (h.big_endian) byteswap_elements(data, h.data_bytes, dtype.itemsize(), dtype.is_complex());
    if (dtype == DType::bool_)  // any non-zero byte is True in NumPy; kernels expect exactly 0 or 1
        for (std::uint64_t i = 0; i < h.data_bytes; ++i) data[i] = data[i] != 0;
    return host;
}

// ---------------------------------------------------------------------------------------------
// Writing

// Magic, version, length and the space-padded header ending in '\n', so that the data starts
// at a multiple of kAlignment. Version 2.0 only when the header outgrows 1.0's 16-bit length.
std::string padded_header(const std::string& text, std::size_t fixed) {
    const std::size_t total = (fixed + text.size() + 1 + kAlignment - 1) / kAlignment * kAlignment;
    return text + std::string(total - fixed - text.size() - 1, ' ') + '\n';
}

std::string preamble(DType dtype, bool fortran_order, const Shape& shape) {
    const std::string text = detail::npy_header_text(dtype, fortran_order, shape);
    std::string header = padded_header(text, kMagic.size() + 2 + 2);
    const bool v1 = header.size() <= 0xffff;
    if (!v1) header = padded_header(text, kMagic.size() + 2 + 4);

    std::string out(kMagic);
    out += static_cast<char>(v1 ? 1 : 2);
    out += '\0';
    const std::size_t len = header.size();
    for (int i = 0; i < (v1 ? 2 : 4); ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
    return out + header;
}

[[noreturn]] void fail_write(const std::string& path, const std::string& problem) {
    throw IoError("cannot write .npy file '" + path + "': " + problem);
}

// Removes the temporary file unless released: any exception between creating and renaming it
// leaves nothing behind.
class TempFileGuard {
public:
    explicit TempFileGuard(std::string path) : path_(std::move(path)) {}
    ~TempFileGuard() {
        if (!path_.empty()) {
            std::error_code ignored;
            std::filesystem::remove(path_, ignored);
        }
    }
    TempFileGuard(const TempFileGuard&) = delete;
    TempFileGuard& operator=(const TempFileGuard&) = delete;
    void release() { path_.clear(); }

private:
    std::string path_;
};

// 64 random bits in hex, for a temporary name no one can guess.
std::string random_hex() {
    std::random_device random;
    const std::uint64_t bits = (std::uint64_t{random()} << 32) ^ random();
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(bits));
    return text;
}

// Creates the temporary file beside `path` that the save writes and renames into place; sets
// `tmp` to its name. Opened O_EXCL | O_NOFOLLOW: never an existing file, nor a symlink planted at
// the name (another user could point one at any file this process may write), and the name holds
// random bits besides the pid and a counter (which keep concurrent saves apart), so that it
// cannot be guessed ahead.
FileDescriptor create_temporary(const std::string& path, std::string& tmp) {
    static std::atomic<unsigned> counter{0};
    for (int attempt = 0; attempt < 16; ++attempt) {
        tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++) + "." + random_hex();
        const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0) return FileDescriptor(fd);
        if (errno != EEXIST && errno != EINTR) fail_write(path, "cannot create '" + tmp + "': " + std::strerror(errno));
    }
    fail_write(path, "cannot create a temporary file beside it: 16 random names were all taken");
}

// Writes all `size` bytes; false on an error (errno says which).
bool write_all(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, std::min<std::size_t>(size, std::size_t{1} << 30));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

// Writes a host array whose elements are contiguous, in C or Fortran order (save_npy packs any
// other layout first).
void write_npy(const std::string& path, const Array& a) {
    const bool fortran = !a.is_c_contiguous() && a.is_f_contiguous();
    std::string tmp;
    FileDescriptor out = create_temporary(path, tmp);
    TempFileGuard guard(tmp);

    const std::string pre = preamble(a.dtype(), fortran, a.shape());
    // data() is element (0,...,0); a contiguous view's elements all follow it.
    const bool written = write_all(out.get(), pre.data(), pre.size()) &&
                         (a.size() == 0 || write_all(out.get(), static_cast<const char*>(a.data()), a.nbytes()));
    if (!written) fail_write(path, "writing '" + tmp + "' failed: " + std::strerror(errno));
    // close reports the write-back errors some file systems (NFS) keep until then.
    if (::close(out.release()) != 0) fail_write(path, "writing '" + tmp + "' failed: " + std::strerror(errno));
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) fail_write(path, "renaming '" + tmp + "' into place failed: " + ec.message());
    guard.release();
}

}  // namespace

Array load_npy(const std::string& path, Device device, const Stream& stream) {
    Array host = read_npy(path);
    if (device.is_cpu()) return host;
    return host.to(device, stream);
}

void save_npy(const std::string& path, const Array& array, const Stream& stream) {
    if (!array.valid()) fail_write(path, "the array is empty (default-constructed, no buffer)");
    // A host array in C or Fortran order is written as it is; anything else (a device array, or a
    // host view with steps, reversed or broadcast axes) through to_host(), a C-order host copy.
    const bool as_is = array.is_host() && array.is_contiguous();
    write_npy(path, as_is ? array : array.to_host(stream));
}

}  // namespace kjit
