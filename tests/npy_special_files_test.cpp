// kjit::load_npy against files that are not what they seem: header bytes that would drive a
// terminal.
#include "test_support.hpp"

#include <filesystem>
#include <fstream>
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

}  // namespace

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
