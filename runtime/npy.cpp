// NumPy .npy reader and writer (format versions 1.0, 2.0 and 3.0), written from the format's
// description in numpy/lib/format.py's documentation.
//
// Layout of a file: the magic "\x93NUMPY", one byte each for the major and minor version, the
// header length (2 bytes little-endian in 1.0, 4 bytes in 2.0 and 3.0), the header itself (a
// Python dict literal, latin-1 in 1.0/2.0 and UTF-8 in 3.0, padded with spaces and ended by '\n'),
// then the raw elements in C or Fortran order. The header dict itself is parsed and written by
// runtime/detail/npy_header.cpp; this file reads and writes the framing and the elements.
#include "kjit/npy.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
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

// Reads exactly `bytes` bytes or reports how many there were.
std::uint64_t read_fully(std::ifstream& in, void* dst, std::uint64_t bytes) {
    in.read(static_cast<char*>(dst), static_cast<std::streamsize>(bytes));
    return static_cast<std::uint64_t>(in.gcount());
}

NpyHeader read_header(std::ifstream& in, const std::string& path) {
    std::array<unsigned char, 12> prefix{};
    const std::uint64_t got = read_fully(in, prefix.data(), 8);
    if (got < kMagic.size() || std::memcmp(prefix.data(), kMagic.data(), kMagic.size()) != 0)
        fail_npy_read(path, "not a .npy file (it does not start with the magic \"\\x93NUMPY\")");
    if (got < 8) fail_npy_read(path, "the header is truncated (the file ends inside the version number)");
    const int major = prefix[6];
    const int minor = prefix[7];
    if (major < 1 || major > 3 || minor != 0)
        fail_npy_read(path, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                       " (kjit reads 1.0, 2.0 and 3.0)");
    const int length_bytes = major == 1 ? 2 : 4;
    if (read_fully(in, prefix.data() + 8, length_bytes) < static_cast<std::uint64_t>(length_bytes))
        fail_npy_read(path, "the header is truncated (the file ends inside the header length)");
    const std::uint64_t header_len = little_endian(prefix.data() + 8, length_bytes);
    if (header_len > kMaxHeaderBytes)
        fail_npy_read(path, "the header length " + std::to_string(header_len) + " is implausibly large (the file is corrupt)");

    std::string text(header_len, '\0');
    const std::uint64_t got_header = read_fully(in, text.data(), header_len);
    if (got_header < header_len)
        fail_npy_read(path, "the header is truncated: its length field says " + std::to_string(header_len) +
                       " bytes but the file has only " + std::to_string(got_header) + " after it");
    // Version 3.0 only changes the header's encoding to UTF-8; the keys, descr codes and numbers
    // we accept are ASCII, and any non-ASCII byte can only be inside a string we reject anyway.
    return detail::parse_npy_header(text, path);
}

void byteswap_elements(unsigned char* data, std::uint64_t bytes, std::size_t itemsize, bool complex) {
    // A complex number is two floats, each stored big-endian on its own.
    const std::size_t part = complex ? itemsize / 2 : itemsize;
    for (std::uint64_t i = 0; i + part <= bytes; i += part) std::reverse(data + i, data + i + part);
}

Array read_npy(const std::string& path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (status.type() == std::filesystem::file_type::not_found) fail_npy_read(path, "no such file");
    if (status.type() == std::filesystem::file_type::directory) fail_npy_read(path, "it is a directory");
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) fail_npy_read(path, std::string("cannot open it: ") + (errno ? std::strerror(errno) : "unknown error"));
    const NpyHeader h = read_header(in, path);
    const DType dtype = h.dtype;

    // Check the length before allocating, so that a truncated file with a huge shape gives the
    // right message rather than an allocation failure.
    const std::streamoff data_start = in.tellg();
    in.seekg(0, std::ios::end);
    const std::streamoff file_end = in.tellg();
    in.seekg(data_start);
    if (data_start < 0 || file_end < data_start || !in) fail_npy_read(path, "cannot determine the file size");
    const auto available = static_cast<std::uint64_t>(file_end - data_start);
    if (available < h.data_bytes)
        fail_npy_read(path, "the data is truncated: shape " + shape_to_string(h.shape) + " of " + std::string(dtype.name()) +
                       " needs " + std::to_string(h.data_bytes) + " bytes but the file has " +
                       std::to_string(available) + " after the header");
    // Bytes after the data are ignored, as np.load does: some writers pad files, and they never
    // change the array's meaning.

    Array host = Array::empty(h.shape, dtype, Device::cpu());
    if (h.fortran_order && h.shape.size() > 1)
        host = Array::view_of(host.buffer(), dtype, h.shape, f_strides(h.shape), 0);
    auto* data = static_cast<unsigned char*>(host.data());
    if (h.data_bytes > 0 && read_fully(in, data, h.data_bytes) < h.data_bytes)
        fail_npy_read(path, "reading the data failed: " + std::string(std::strerror(errno)));
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

// Writes a host array whose elements are contiguous, in C or Fortran order (save_npy packs any
// other layout first).
void write_npy(const std::string& path, const Array& a) {
    const bool fortran = !a.is_c_contiguous() && a.is_f_contiguous();
    // The pid keeps processes apart and the counter keeps threads of one process apart, so two
    // concurrent saves to one path never write the same temporary file.
    static std::atomic<unsigned> counter{0};
    const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    TempFileGuard guard(tmp);
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail_write(path, "cannot create '" + tmp + "': " + std::strerror(errno));

    const std::string pre = preamble(a.dtype(), fortran, a.shape());
    out.write(pre.data(), static_cast<std::streamsize>(pre.size()));
    // data() is element (0,...,0); a contiguous view's elements all follow it.
    if (a.size() > 0) out.write(static_cast<const char*>(a.data()), static_cast<std::streamsize>(a.nbytes()));
    out.close();
    if (!out) fail_write(path, "writing '" + tmp + "' failed: " + std::strerror(errno));
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
