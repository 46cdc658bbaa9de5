// kjit::load_npy and kjit::save_npy against files that are not what they seem: a FIFO or a
// device given as an input, a header claiming more memory than the process can have, header
// bytes that would drive a terminal, and a symlink planted where the writer puts its temporary
// file.
#include "test_support.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <string>

#include "kjit/array.hpp"
#include "kjit/error.hpp"
#include "kjit/npy.hpp"

namespace {

namespace fs = std::filesystem;
using Catch::Contains;

// The message load_npy gives for `path`, without Catch's macros: it may run on another thread.
std::string load_message(const std::string& path) {
    try {
        kjit::load_npy(path);
    } catch (const kjit::IoError& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("not an IoError: ") + e.what();
    }
    return "no error";
}

// A version 1.0 .npy file's bytes up to its data: `header` as given, length included.
std::string npy_preamble(const std::string& header) {
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    return out + header;
}

void write_file(const fs::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("npy load of a FIFO refuses it instead of blocking", "[npy]") {
    const kjit::test::TempDir dir;
    const std::string fifo = (dir.path() / "x.npy").string();
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    // No one writes to it: opening it to read, or reading it, would wait forever.
    auto loaded = std::async(std::launch::async, [&] { return load_message(fifo); });
    if (loaded.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
        // Let the blocked reader go (a writer comes and leaves: it reads the end of the file), so
        // that the test ends.
        const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
        if (writer >= 0) ::close(writer);
        FAIL("load_npy of a FIFO blocked");
    }
    const std::string message = loaded.get();
    CHECK_THAT(message, Contains("cannot read .npy file '" + fifo + "'"));
    CHECK_THAT(message, Contains("FIFO") && Contains("not a regular file"));
}

TEST_CASE("npy load of a device refuses it instead of reading without end", "[npy]") {
    if (!fs::exists("/dev/zero")) {
        WARN("SKIPPED: no /dev/zero");
        return;
    }
    CHECK_THAT(load_message("/dev/zero"), Contains("character device") && Contains("not a regular file"));
}

TEST_CASE("npy load of data larger than memory can hold names the file and the size", "[npy]") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    // A sanitizer's allocator stops the process on an allocation this size instead of failing it.
    WARN("SKIPPED: the sanitizer's allocator does not return failure for a 2**47-byte allocation");
    return;
#endif
    // A sparse file whose data is 2**47 bytes: more than a 47-bit address space (x86-64, and
    // AArch64's default) can hold, so the allocation fails on any machine, whatever the
    // overcommit policy. tmpfs takes such a file; most disk file systems cap files lower.
    const std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (140737488355328,), }";
    const std::string pre = npy_preamble(header + std::string(64 - (10 + header.size() + 1) % 64, ' ') + "\n");
    REQUIRE(pre.size() % 64 == 0);
    const kjit::test::TempDir dir;
    std::string path = "/dev/shm/kjit-npy-huge-" + std::to_string(::getpid()) + ".npy";
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        path = (dir.path() / "huge.npy").string();
        fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    }
    REQUIRE(fd >= 0);
    const bool made = ::write(fd, pre.data(), pre.size()) == static_cast<ssize_t>(pre.size()) &&
                      ::ftruncate(fd, static_cast<off_t>(pre.size() + (std::uint64_t{1} << 47))) == 0;
    ::close(fd);
    const std::string message = made ? load_message(path) : std::string();
    ::unlink(path.c_str());
    if (!made) {
        WARN("SKIPPED: no file system here takes a sparse file of 2**47 bytes");
        return;
    }
    CHECK_THAT(message, Contains("cannot read .npy file '" + path + "'"));
    CHECK_THAT(message, Contains("140737488355328 bytes") && Contains("134217728 MiB") && Contains("host memory"));
}

TEST_CASE("npy load escapes the control bytes of a header it quotes", "[npy]") {
    const kjit::test::TempDir dir;
    const fs::path path = dir.path() / "evil.npy";
    // A key, a descr and a syntax error, each carrying escape sequences (ESC, BEL, a lone C1 CSI).
    const std::string headers[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), '\x1b[2J\x1b]0;owned\x07': 1}\n",
        "{'descr': '\x1b[31m<f4', 'fortran_order': False, 'shape': (2,)}\n",
        "{'descr': '<f4' \x9b" "2J, 'fortran_order': False, 'shape': (2,)}\n",
    };
    const std::string escaped[] = {"\\x1b[2J\\x1b]0;owned\\x07", "\\x1b[31m<f4", "\\x9b2J"};
    for (int i = 0; i < 3; ++i) {
        INFO("header " << i);
        write_file(path, npy_preamble(headers[i]) + std::string(8, '\0'));
        const std::string message = load_message(path.string());
        CHECK_THAT(message, Contains("cannot read .npy file"));
        CHECK_THAT(message, Contains(escaped[i]));
        CHECK(message.find('\x1b') == std::string::npos);
        CHECK(message.find('\x07') == std::string::npos);
        CHECK(message.find('\x9b') == std::string::npos);
    }
}

TEST_CASE("npy save does not write through a symlink planted at a temporary name", "[npy]") {
    const kjit::test::TempDir dir;
    const fs::path victim = dir.path() / "victim";
    write_file(victim, "precious");
    const fs::path target = dir.path() / "a.npy";
    // The names the writer used to pick, "<path>.tmp.<pid>.<counter>", all taken by symlinks to
    // another file: a writer following them would overwrite it.
    for (int n = 0; n < 4096; ++n)
        fs::create_symlink(victim, target.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(n));
    const kjit::Array a = kjit::test::random_array(kjit::DType::float32, {5});
    kjit::save_npy(target.string(), a);
    CHECK(read_file(victim) == "precious");
    CHECK(fs::is_regular_file(fs::symlink_status(target)));
    CHECK(kjit::test::host_bytes_c_order(kjit::load_npy(target.string())) == kjit::test::host_bytes_c_order(a));
    std::size_t files = 0;
    for (const auto& entry : fs::directory_iterator(dir.path())) files += entry.is_regular_file() && !entry.is_symlink();
    CHECK(files == 2);  // the victim and a.npy: no temporary file left
}
