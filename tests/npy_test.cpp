// Tests of kjit::load_npy and kjit::save_npy: round trips of every dtype and layout, files written
// by hand in each format version and byte order, and one test per kind of malformed file.
#include "test_support.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "kjit/array.hpp"
#include "kjit/error.hpp"
#include "kjit/npy.hpp"

namespace {

using kjit::Array;
using kjit::Device;
using kjit::DType;
using kjit::Shape;
using Bytes = std::vector<unsigned char>;
namespace fs = std::filesystem;
using kjit::test::all_dtypes;
using kjit::test::host_bytes_c_order;
using kjit::test::random_array;

// The descr NumPy (with ml_dtypes for bfloat16) writes for each dtype, spelled out independently
// of the implementation.
std::string expected_descr(DType dtype) {
    switch (dtype.id()) {
        case DType::bool_: return "|b1";
        case DType::int8: return "|i1";
        case DType::int16: return "<i2";
        case DType::int32: return "<i4";
        case DType::int64: return "<i8";
        case DType::uint8: return "|u1";
        case DType::uint16: return "<u2";
        case DType::uint32: return "<u4";
        case DType::uint64: return "<u8";
        case DType::float16: return "<f2";
        case DType::bfloat16: return "bfloat16";
        case DType::float32: return "<f4";
        case DType::float64: return "<f8";
        case DType::complex64: return "<c8";
        case DType::complex128: return "<c16";
    }
    return "?";
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
}

std::string as_string(const Bytes& b) { return {b.begin(), b.end()}; }
Bytes to_bytes(const std::string& s) { return {s.begin(), s.end()}; }

// A .npy file by hand: magic, version, little-endian length (2 bytes for 1.x, 4 otherwise), the
// header exactly as given (callers add their own padding and '\n'), then the data.
std::string npy_file(int major, int minor, const std::string& header, const std::string& data = {}) {
    std::string out("\x93NUMPY", 6);
    out += static_cast<char>(major);
    out += static_cast<char>(minor);
    const int length_bytes = major == 1 ? 2 : 4;
    for (int i = 0; i < length_bytes; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
    return out + header + data;
}

// Runs `f`, which must throw kjit::IoError, and returns its message.
template <class F>
std::string io_error_message(F&& f) {
    try {
        f();
    } catch (const kjit::IoError& e) {
        return e.what();
    } catch (const std::exception& e) {
        FAIL("expected kjit::IoError, got another exception: " << e.what());
    }
    FAIL("expected kjit::IoError, nothing was thrown");
    return {};
}

// Writes `bytes` to a file and returns the IoError message load_npy gives for it.
std::string load_error(const std::string& bytes, std::string* path_out = nullptr) {
    kjit::test::TempDir dir;
    const std::string path = (dir.path() / "bad.npy").string();
    write_file(path, bytes);
    if (path_out) *path_out = path;
    return io_error_message([&] { kjit::load_npy(path); });
}

template <class T>
std::string raw(const std::vector<T>& values) {
    std::string out(values.size() * sizeof(T), '\0');
    if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
    return out;
}

const char* const kF4Header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n";

}  // namespace

using Catch::Contains;

TEST_CASE("npy round trip keeps every dtype, shape and element", "[npy]") {
    kjit::test::TempDir dir;
    const std::vector<Shape> shapes{{}, {0, 3}, {7}, {3, 4}, {2, 3, 5}, {1, 1, 4}};
    for (DType dtype : all_dtypes()) {
        for (const Shape& shape : shapes) {
            INFO("dtype " << dtype.name() << ", shape " << kjit::shape_to_string(shape) << ", seed "
                          << kjit::test::seed());
            const fs::path path = dir.path() / (std::string(dtype.name()) + ".npy");
            const Array a = random_array(dtype, shape);
            kjit::save_npy(path.string(), a);

            const std::string file = read_file(path);
            REQUIRE(file.size() >= 10);
            CHECK(file.compare(0, 6, std::string("\x93NUMPY", 6)) == 0);
            CHECK(file[6] == 1);  // version 1.0: these headers are small
            CHECK(file[7] == 0);
            const std::size_t header_len = static_cast<unsigned char>(file[8]) | (static_cast<unsigned char>(file[9]) << 8);
            const std::size_t data_start = 10 + header_len;
            CHECK(data_start % 64 == 0);
            CHECK(file[data_start - 1] == '\n');
            CHECK_THAT(file.substr(10, header_len), Contains("'descr': '" + expected_descr(dtype) + "'"));
            CHECK_THAT(file.substr(10, header_len), Contains("'fortran_order': False"));
            CHECK_THAT(file.substr(10, header_len), Contains("'shape': " + kjit::shape_to_string(shape)));
            CHECK(file.size() == data_start + a.nbytes());

            const Array b = kjit::load_npy(path.string());
            CHECK(b.is_host());
            CHECK(b.dtype() == dtype);
            CHECK(b.shape() == shape);
            CHECK(b.strides() == kjit::c_strides(shape));
            CHECK(host_bytes_c_order(b) == host_bytes_c_order(a));
        }
    }
}

TEST_CASE("npy writes a one-element tuple as (n,)", "[npy]") {
    kjit::test::TempDir dir;
    const fs::path path = dir.path() / "v.npy";
    kjit::save_npy(path.string(), random_array(DType::int32, {5}));
    CHECK_THAT(read_file(path), Contains("'shape': (5,)"));
}

TEST_CASE("npy saves a Fortran-contiguous array with fortran_order True and loads it back so", "[npy]") {
    kjit::test::TempDir dir;
    for (DType dtype : {DType(DType::float32), DType(DType::complex128), DType(DType::bool_), DType(DType::bfloat16)}) {
        INFO("dtype " << dtype.name() << ", seed " << kjit::test::seed());
        // A C-order (5, 4, 3) array transposed is a Fortran-order (3, 4, 5) one.
        const Array f = random_array(dtype, {5, 4, 3}).transpose();
        REQUIRE(f.is_f_contiguous());
        REQUIRE_FALSE(f.is_c_contiguous());
        const fs::path path = dir.path() / "f.npy";
        kjit::save_npy(path.string(), f);
        const std::string file = read_file(path);
        CHECK_THAT(file, Contains("'fortran_order': True"));
        CHECK_THAT(file, Contains("'shape': (3, 4, 5)"));
        // The bytes after the header are the buffer as it is: Fortran order, not a copy in C order.
        const Array c_view = f.transpose();
        CHECK(file.substr(file.size() - f.nbytes()) == as_string(host_bytes_c_order(c_view)));

        const Array g = kjit::load_npy(path.string());
        CHECK(g.shape() == Shape{3, 4, 5});
        CHECK(g.strides() == kjit::f_strides({3, 4, 5}));
        CHECK(host_bytes_c_order(g) == host_bytes_c_order(f));
    }
}

TEST_CASE("npy saves non-contiguous views in C order", "[npy]") {
    kjit::test::TempDir dir;
    const fs::path path = dir.path() / "view.npy";
    for (DType dtype : all_dtypes()) {
        INFO("dtype " << dtype.name() << ", seed " << kjit::test::seed());
        const Array base = random_array(dtype, {4, 5, 6});
        const std::vector<std::pair<const char*, Array>> views{
            {"reversed middle axis", base.slice(1, {std::nullopt, std::nullopt, -1})},
            {"reversed and transposed", base.slice(0, {std::nullopt, std::nullopt, -1}).transpose()},
            {"step 2 and step -3", base.slice(2, {std::nullopt, std::nullopt, 2}).slice(1, {4, std::nullopt, -3})},
            {"permuted", base.permute({1, 0, 2})},
            {"broadcast (zero strides)", base.index(0, 1).index(0, 2).broadcast_to({3, 6})},
            {"one column", base.index(2, -1)},
        };
        for (const auto& [what, view] : views) {
            INFO(what);
            REQUIRE_FALSE(view.is_contiguous());
            kjit::save_npy(path.string(), view);
            CHECK_THAT(read_file(path), Contains("'fortran_order': False"));
            const Array back = kjit::load_npy(path.string());
            CHECK(back.dtype() == dtype);
            CHECK(back.shape() == view.shape());
            CHECK(back.strides() == kjit::c_strides(view.shape()));
            CHECK(host_bytes_c_order(back) == host_bytes_c_order(view));
        }
    }
}

TEST_CASE("npy save replaces an existing file and leaves no temporary file", "[npy]") {
    kjit::test::TempDir dir;
    const fs::path path = dir.path() / "a.npy";
    kjit::save_npy(path.string(), random_array(DType::float64, {100}));
    const Array small = random_array(DType::int16, {3});
    kjit::save_npy(path.string(), small);
    const Array back = kjit::load_npy(path.string());
    CHECK(back.dtype() == DType::int16);
    CHECK(host_bytes_c_order(back) == host_bytes_c_order(small));
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir.path())) names.push_back(entry.path().filename().string());
    CHECK(names == std::vector<std::string>{"a.npy"});
}

TEST_CASE("npy save into a missing directory throws IoError naming the file", "[npy]") {
    kjit::test::TempDir dir;
    const std::string path = (dir.path() / "no-such-dir" / "a.npy").string();
    const std::string message = io_error_message([&] { kjit::save_npy(path, random_array(DType::float32, {2})); });
    CHECK_THAT(message, Contains(path));
    CHECK_THAT(message, Contains("No such file or directory"));
    CHECK_FALSE(fs::exists(path));
}

TEST_CASE("npy save of a default-constructed array throws IoError", "[npy]") {
    kjit::test::TempDir dir;
    const std::string path = (dir.path() / "a.npy").string();
    CHECK_THAT(io_error_message([&] { kjit::save_npy(path, Array()); }), Contains("no buffer"));
    CHECK_FALSE(fs::exists(path));
}

TEST_CASE("npy reads format versions 2.0 and 3.0", "[npy]") {
    kjit::test::TempDir dir;
    const std::vector<float> values{1.5f, -2.25f, 3.0f, 4.5f, -5.75f, 6.125f};
    for (int major : {2, 3}) {
        INFO("version " << major << ".0");
        const fs::path path = dir.path() / "v.npy";
        write_file(path, npy_file(major, 0, kF4Header, raw(values)));
        const Array a = kjit::load_npy(path.string());
        CHECK(a.dtype() == DType::float32);
        CHECK(a.shape() == Shape{2, 3});
        CHECK(host_bytes_c_order(a) == to_bytes(raw(values)));
    }
}

TEST_CASE("npy reads a 3.0 header with UTF-8 padding bytes it does not interpret", "[npy]") {
    // UTF-8 is only legal inside strings; a non-ASCII descr is simply an unknown one.
    kjit::test::TempDir dir;
    const fs::path path = dir.path() / "u.npy";
    write_file(path, npy_file(3, 0, "{'descr': '<f4\xc3\xa9', 'fortran_order': False, 'shape': (1,), }\n", raw(std::vector<float>{1})));
    CHECK_THAT(io_error_message([&] { kjit::load_npy(path.string()); }), Contains("unsupported descr '<f4\xc3\xa9'"));
}

TEST_CASE("npy header parsing tolerates key order, whitespace, quotes and commas", "[npy]") {
    kjit::test::TempDir dir;
    const fs::path path = dir.path() / "h.npy";
    const std::vector<std::int32_t> values{7, -8, 9};
    const std::vector<std::string> headers{
        "{'shape': (3,), 'fortran_order': False, 'descr': '<i4'}\n",
        "{ \"descr\" : \"<i4\" ,\n 'fortran_order':False,'shape':( 3 , ) ,  }        \n",
        "{'fortran_order': False, 'descr': '<i4', 'shape': [3]}",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (3L,)}\n",
        "\t{'descr':'<i4','fortran_order':True,'shape':(3,),}\t\r\n",
    };
    for (const std::string& header : headers) {
        INFO("header " << header);
        write_file(path, npy_file(1, 0, header, raw(values)));
        const Array a = kjit::load_npy(path.string());
        CHECK(a.dtype() == DType::int32);
        CHECK(a.shape() == Shape{3});
        CHECK(host_bytes_c_order(a) == to_bytes(raw(values)));
    }
}

TEST_CASE("npy reads a scalar shape () and an empty shape (0, 3)", "[npy]") {
    kjit::test::TempDir dir;
    const fs::path path = dir.path() / "s.npy";
    write_file(path, npy_file(1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': ()}\n", raw(std::vector<double>{2.5})));
    const Array s = kjit::load_npy(path.string());
    CHECK(s.ndim() == 0);
    CHECK(s.size() == 1);
    CHECK(*s.data_as<double>() == 2.5);

    write_file(path, npy_file(1, 0, "{'descr': '<f8', 'fortran_order': True, 'shape': (0, 3)}\n"));
    const Array e = kjit::load_npy(path.string());
    CHECK(e.shape() == Shape{0, 3});
    CHECK(e.size() == 0);
}

TEST_CASE("npy reads big-endian and native-order files", "[npy]") {
    kjit::test::TempDir dir;
    const fs::path path = dir.path() / "be.npy";
    struct Case {
        const char* descr;
        DType dtype;
        std::size_t part;  // bytes swapped as one unit: the whole element, or each complex part
    };
    const std::vector<Case> cases{
        {">i2", DType::int16, 2},      {">i4", DType::int32, 4},      {">i8", DType::int64, 8},
        {">u2", DType::uint16, 2},     {">u4", DType::uint32, 4},     {">u8", DType::uint64, 8},
        {">f2", DType::float16, 2},    {">f4", DType::float32, 4},    {">f8", DType::float64, 8},
        {">c8", DType::complex64, 4},  {">c16", DType::complex128, 8}, {">i1", DType::int8, 1},
        {"|u1", DType::uint8, 1},      {"=i4", DType::int32, 0},      {"=c16", DType::complex128, 0},
    };
    for (const Case& c : cases) {
        INFO("descr " << c.descr << ", seed " << kjit::test::seed());
        const Bytes little = kjit::test::random_elements(c.dtype, 6);
        Bytes stored = little;
        if (c.part > 1)
            for (std::size_t i = 0; i < stored.size(); i += c.part) std::reverse(stored.begin() + i, stored.begin() + i + c.part);
        write_file(path, npy_file(1, 0, std::string("{'descr': '") + c.descr + "', 'fortran_order': False, 'shape': (2, 3), }\n",
                                  as_string(stored)));
        const Array a = kjit::load_npy(path.string());
        CHECK(a.dtype() == c.dtype);
        CHECK(host_bytes_c_order(a) == little);
    }
}

TEST_CASE("npy reads any non-zero bool byte as true", "[npy]") {
    kjit::test::TempDir dir;
    const fs::path path = dir.path() / "b.npy";
    write_file(path, npy_file(1, 0, "{'descr': '|b1', 'fortran_order': False, 'shape': (4,)}\n", std::string("\x00\x01\x02\xff", 4)));
    CHECK(host_bytes_c_order(kjit::load_npy(path.string())) == Bytes{0, 1, 1, 1});
}

TEST_CASE("npy ignores bytes after the data, as np.load does", "[npy]") {
    kjit::test::TempDir dir;
    const fs::path path = dir.path() / "t.npy";
    const std::vector<float> values{1, 2, 3, 4, 5, 6};
    write_file(path, npy_file(1, 0, kF4Header, raw(values) + "trailing junk"));
    CHECK(host_bytes_c_order(kjit::load_npy(path.string())) == to_bytes(raw(values)));
}

// --- malformed files: one test per problem, each checking the message ---

TEST_CASE("npy load of a missing file names it", "[npy]") {
    kjit::test::TempDir dir;
    const std::string path = (dir.path() / "missing.npy").string();
    const std::string message = io_error_message([&] { kjit::load_npy(path); });
    CHECK_THAT(message, Contains(path));
    CHECK_THAT(message, Contains("no such file"));
}

TEST_CASE("npy load of a directory says so", "[npy]") {
    kjit::test::TempDir dir;
    CHECK_THAT(io_error_message([&] { kjit::load_npy(dir.path().string()); }), Contains("is a directory"));
}

TEST_CASE("npy load of a file without the magic says it is not a .npy file", "[npy]") {
    std::string path;
    const std::string message = load_error("PK\x03\x04 this is a zip file, not an array", &path);
    CHECK_THAT(message, Contains(path));
    CHECK_THAT(message, Contains("not a .npy file"));
}

TEST_CASE("npy load of an empty file says it is not a .npy file", "[npy]") {
    CHECK_THAT(load_error(""), Contains("not a .npy file"));
}

TEST_CASE("npy load of an unsupported version names it", "[npy]") {
    CHECK_THAT(load_error(npy_file(4, 0, kF4Header)), Contains("unsupported .npy format version 4.0"));
    CHECK_THAT(load_error(npy_file(1, 1, kF4Header)), Contains("unsupported .npy format version 1.1"));
    CHECK_THAT(load_error(npy_file(0, 0, kF4Header)), Contains("unsupported .npy format version 0.0"));
}

TEST_CASE("npy load of a file ending inside the version says the header is truncated", "[npy]") {
    CHECK_THAT(load_error(std::string("\x93NUMPY\x01", 7)), Contains("header is truncated"));
}

TEST_CASE("npy load of a file ending inside the header length says the header is truncated", "[npy]") {
    CHECK_THAT(load_error(std::string("\x93NUMPY\x02\x00\x10\x00", 10)), Contains("header is truncated"));
}

TEST_CASE("npy load of a file shorter than its header length says the header is truncated", "[npy]") {
    const std::string full = npy_file(1, 0, kF4Header);
    const std::string message = load_error(full.substr(0, full.size() - 20));
    CHECK_THAT(message, Contains("header is truncated"));
    CHECK_THAT(message, Contains("says 60 bytes but the file has only 40"));
}

TEST_CASE("npy load of an absurd header length refuses it before reading", "[npy]") {
    CHECK_THAT(load_error(std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14)), Contains("implausibly large"));
}

TEST_CASE("npy load of a header that is not a dict says so", "[npy]") {
    CHECK_THAT(load_error(npy_file(1, 0, "('<f4', False, (2, 3))\n")), Contains("header is not a dict"));
    CHECK_THAT(load_error(npy_file(1, 0, "\n")), Contains("header is not a dict"));
}

TEST_CASE("npy load of a header dict with a syntax error points at it", "[npy]") {
    const std::string message = load_error(npy_file(1, 0, "{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3)}\n"));
    CHECK_THAT(message, Contains("bad header: expected ',' or '}'"));
    CHECK_THAT(message, Contains("{'descr': '<f4' 'fortran_order'"));
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)\n")),
               Contains("bad header"));
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '<f4\n")), Contains("unterminated string"));
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '<f4', 'fortran_order': false, 'shape': (2, 3)}\n")),
               Contains("expected a value"));
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} x\n")),
               Contains("after the header dict"));
}

TEST_CASE("npy load of a deeply nested header refuses it without recursing forever", "[npy]") {
    CHECK_THAT(load_error(npy_file(2, 0, "{'shape': " + std::string(100000, '(') + "}\n")), Contains("nested too deeply"));
}

TEST_CASE("npy load of a header without 'shape' names the missing key", "[npy]") {
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '<f4', 'fortran_order': False}\n")), Contains("missing key 'shape'"));
}

TEST_CASE("npy load of a header without 'descr' names the missing key", "[npy]") {
    CHECK_THAT(load_error(npy_file(1, 0, "{'fortran_order': False, 'shape': (2,)}\n")), Contains("missing key 'descr'"));
}

TEST_CASE("npy load of a header with an unexpected or repeated key names it", "[npy]") {
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}\n")),
               Contains("unexpected key 'extra'"));
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (2,)}\n")),
               Contains("key 'descr' appears twice"));
}

TEST_CASE("npy load of a bad shape says which extent is wrong", "[npy]") {
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3)}\n")),
               Contains("bad shape: extent 1 is negative (-3)"));
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, '3')}\n")),
               Contains("bad shape: extent 1 is a string, not an integer"));
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': 6}\n")),
               Contains("bad shape: 'shape' is an integer, not a tuple"));
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}\n")),
               Contains("does not fit in 64 bits"));
}

TEST_CASE("npy load of an absurdly large shape refuses it without allocating", "[npy]") {
    const std::string big = std::to_string(std::int64_t{1} << 62);
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (" + big + ", " + big + ")}\n")),
               Contains("is too large"));
    // No element, but strides for it would overflow all the same.
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '<u1', 'fortran_order': False, 'shape': (0, " + big + ", 8)}\n")),
               Contains("is too large"));
    // Representable but far larger than the file: the truncation message, not an allocation.
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,)}\n")),
               Contains("data is truncated"));
}

TEST_CASE("npy load of a bad fortran_order says so", "[npy]") {
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}\n")),
               Contains("'fortran_order' is an integer, not True or False"));
}

TEST_CASE("npy load of a string dtype names the unsupported descr", "[npy]") {
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '<U4', 'fortran_order': False, 'shape': (2,)}\n")),
               Contains("unsupported descr '<U4'"));
}

TEST_CASE("npy load of an object dtype names the unsupported descr", "[npy]") {
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': '|O', 'fortran_order': False, 'shape': (2,)}\n")),
               Contains("unsupported descr '|O'"));
}

TEST_CASE("npy load of other unsupported descrs names them", "[npy]") {
    for (const char* descr : {"<f16", "<i3", "<V2", "<M8[ns]", "", "<", "b", "<bfloat16"}) {
        INFO("descr " << descr);
        CHECK_THAT(load_error(npy_file(1, 0, std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (2,)}\n")),
                   Contains(std::string("unsupported descr '") + descr + "'"));
    }
}

TEST_CASE("npy load of a void descr (NumPy's spelling of custom dtypes) says what to do", "[npy]") {
    const std::string message = load_error(npy_file(1, 0, "{'descr': '<V2', 'fortran_order': False, 'shape': (2,)}\n"));
    CHECK_THAT(message, Contains("unsupported descr '<V2'"));
    CHECK_THAT(message, Contains("viewed as uint16"));
}

TEST_CASE("npy load of a structured dtype says structured dtypes are not supported", "[npy]") {
    CHECK_THAT(load_error(npy_file(1, 0, "{'descr': [('x', '<f4'), ('y', '<i4')], 'fortran_order': False, 'shape': (2,)}\n")),
               Contains("structured dtypes are not supported"));
}

TEST_CASE("npy load of a file with too little data says how many bytes it expected and found", "[npy]") {
    std::string path;
    const std::string message = load_error(npy_file(1, 0, kF4Header, std::string(20, 'x')), &path);
    CHECK_THAT(message, Contains(path));
    CHECK_THAT(message, Contains("data is truncated"));
    CHECK_THAT(message, Contains("needs 24 bytes but the file has 20"));
}

TEST_CASE("npy load never crashes on corrupted or truncated files", "[npy]") {
    kjit::test::TempDir dir;
    const fs::path good = dir.path() / "good.npy";
    kjit::save_npy(good.string(), random_array(DType::complex64, {3, 2}));
    const std::string original = read_file(good);
    const fs::path path = dir.path() / "fuzz.npy";
    auto& rng = kjit::test::rng();
    INFO("seed " << kjit::test::seed());
    int errors = 0;
    for (int round = 0; round < 2000; ++round) {
        std::string bytes = original;
        if (round % 3 == 0) {
            bytes.resize(rng() % (bytes.size() + 1));
        } else {
            const int flips = 1 + static_cast<int>(rng() % 4);
            for (int i = 0; i < flips; ++i) {
                // Mostly hit the preamble and header, where the parsing is.
                const std::size_t at = rng() % (round % 2 ? 80 : bytes.size());
                bytes[at] = static_cast<char>(rng() % 2 ? rng() % 256 : "(),:'0123456789-{}[] \n"[rng() % 22]);
            }
        }
        write_file(path, bytes);
        try {
            kjit::load_npy(path.string());
        } catch (const kjit::IoError&) {
            ++errors;
        }
    }
    CHECK(errors > 0);
}

// --- on a GPU ---

TEST_CASE("npy loads onto the GPU and saves a device array", "[npy][gpu]") {
    KJIT_REQUIRE_GPU();
    kjit::test::TempDir dir;
    const fs::path path = dir.path() / "g.npy";
    for (DType dtype : all_dtypes()) {
        INFO("dtype " << dtype.name() << ", seed " << kjit::test::seed());
        const Array host = random_array(dtype, {3, 7});
        kjit::save_npy(path.string(), host);
        const Array dev = kjit::load_npy(path.string(), Device::cuda(0));
        CHECK(dev.device() == Device::cuda(0));
        CHECK(dev.shape() == host.shape());
        CHECK(host_bytes_c_order(dev.to_host()) == host_bytes_c_order(host));

        // Saving from the device, including a Fortran-order device array.
        const fs::path path2 = dir.path() / "g2.npy";
        kjit::save_npy(path2.string(), dev);
        CHECK(host_bytes_c_order(kjit::load_npy(path2.string())) == host_bytes_c_order(host));
        const Array fdev = dev.transpose();
        kjit::save_npy(path2.string(), fdev);
        const Array fback = kjit::load_npy(path2.string());
        CHECK(fback.shape() == Shape{7, 3});
        CHECK(host_bytes_c_order(fback) == host_bytes_c_order(host.transpose()));
    }
}
