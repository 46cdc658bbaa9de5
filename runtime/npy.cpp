// NumPy .npy reader and writer (format versions 1.0, 2.0 and 3.0), written from the format's
// description in numpy/lib/format.py's documentation.
//
// Layout of a file: the magic "\x93NUMPY", one byte each for the major and minor version, the
// header length (2 bytes little-endian in 1.0, 4 bytes in 2.0 and 3.0), the header itself (a
// Python dict literal, latin-1 in 1.0/2.0 and UTF-8 in 3.0, padded with spaces and ended by '\n'),
// then the raw elements in C or Fortran order.
#include "kjit/npy.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "kjit/error.hpp"

namespace kjit {
namespace {

constexpr std::string_view kMagic{"\x93NUMPY", 6};
// NumPy aligns the start of the data to 64 bytes so that memory-mapped arrays are aligned for
// any element type; we do the same when writing.
constexpr std::size_t kAlignment = 64;
// A header larger than this is not something NumPy would write (it caps at a few KiB for plain
// dtypes); refusing early keeps a corrupt length field from making us allocate gigabytes.
constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t{1} << 24;

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
    throw IoError("cannot read .npy file '" + path + "': " + problem);
}

// ---------------------------------------------------------------------------------------------
// dtype <-> descr

struct Descr {
    DType dtype;
    bool big_endian = false;  // elements must be byte-swapped after reading
};

// The type part of a descr ("f4", "b1"...) for each kjit dtype other than bfloat16.
std::string_view type_code(DType dtype) {
    switch (dtype.id()) {
        case DType::bool_: return "b1";
        case DType::int8: return "i1";
        case DType::int16: return "i2";
        case DType::int32: return "i4";
        case DType::int64: return "i8";
        case DType::uint8: return "u1";
        case DType::uint16: return "u2";
        case DType::uint32: return "u4";
        case DType::uint64: return "u8";
        case DType::float16: return "f2";
        case DType::float32: return "f4";
        case DType::float64: return "f8";
        case DType::complex64: return "c8";
        case DType::complex128: return "c16";
        case DType::bfloat16: break;
    }
    return {};
}

// The descr written for `dtype`: byte order '|' for one-byte types as NumPy writes them.
std::string descr_of(DType dtype) {
    if (dtype == DType::bfloat16) return "bfloat16";  // ml_dtypes' name; NumPy has no code for it
    const std::string_view code = type_code(dtype);
    return (dtype.itemsize() == 1 ? "|" : "<") + std::string(code);
}

std::optional<Descr> parse_descr(std::string_view text) {
    if (text == "bfloat16") return Descr{DType::bfloat16, false};
    if (text.size() < 2) return std::nullopt;
    bool big = false;
    switch (text.front()) {
        case '<': text.remove_prefix(1); break;
        case '>': big = true; text.remove_prefix(1); break;
        case '=': big = std::endian::native == std::endian::big; text.remove_prefix(1); break;
        case '|': text.remove_prefix(1); break;
        default: break;  // no byte-order mark: NumPy treats that as native order
    }
    for (int id = 0; id < DType::count; ++id) {
        const DType dtype{static_cast<DType::Id>(id)};
        if (dtype != DType::bfloat16 && text == type_code(dtype)) return Descr{dtype, big && dtype.itemsize() > 1};
    }
    return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Header dict parser. The header is a Python literal; NumPy writes
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// but other writers vary whitespace, key order, quotes and trailing commas, so this parses the
// small subset of Python literals a header can hold instead of matching NumPy's exact text.

struct Value {
    enum class Kind { string, boolean, integer, tuple, list, none, dict };
    Kind kind = Kind::none;
    std::string text;        // string
    bool flag = false;       // boolean
    std::int64_t number = 0; // integer
    bool number_overflow = false;
    std::vector<Value> items;                          // tuple, list
    std::vector<std::pair<std::string, Value>> entries; // dict (only the top level is used)
};

const char* kind_name(Value::Kind kind) {
    switch (kind) {
        case Value::Kind::string: return "a string";
        case Value::Kind::boolean: return "a bool";
        case Value::Kind::integer: return "an integer";
        case Value::Kind::tuple: return "a tuple";
        case Value::Kind::list: return "a list";
        case Value::Kind::none: return "None";
        case Value::Kind::dict: return "a dict";
    }
    return "a value";
}

class HeaderParser {
public:
    HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

    // header := dict whitespace* ; anything else is an error
    Value parse_header() {
        skip_space();
        if (peek() != '{') error("the header is not a dict (it starts with " + describe_here() + ")");
        Value v = parse_value(0);
        skip_space();
        if (pos_ != text_.size()) error("unexpected " + describe_here() + " after the header dict");
        return v;
    }

private:
    // Nesting is capped so that a header of a million '(' cannot overflow the stack.
    static constexpr int kMaxDepth = 32;

    [[noreturn]] void error(const std::string& what) const {
        fail(path_, "bad header: " + what + " in " + quoted_header());
    }

    std::string quoted_header() const {
        std::string h(text_.substr(0, std::min<std::size_t>(text_.size(), 200)));
        while (!h.empty() && (h.back() == '\n' || h.back() == ' ')) h.pop_back();
        for (char& c : h)
            if (static_cast<unsigned char>(c) < 0x20) c = '?';  // keep the message on one line
        return "\"" + h + (text_.size() > 200 ? "...\"" : "\"");
    }

    std::string describe_here() const {
        if (pos_ >= text_.size()) return "the end of the header";
        const char c = text_[pos_];
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
            return "byte " + std::to_string(static_cast<unsigned char>(c));
        return std::string("'") + c + "'";
    }

    char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

    void skip_space() {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                                       text_[pos_] == '\r'))
            ++pos_;
    }

    void expect(char c) {
        skip_space();
        if (peek() != c) error(std::string("expected '") + c + "' but found " + describe_here());
        ++pos_;
    }

    // value := string | integer | True | False | None | tuple | list | dict
    Value parse_value(int depth) {
        if (depth > kMaxDepth) error("values nested too deeply");
        skip_space();
        const char c = peek();
        if (c == '\'' || c == '"') return parse_string();
        if (c == '(') return parse_sequence(')', Value::Kind::tuple, depth);
        if (c == '[') return parse_sequence(']', Value::Kind::list, depth);
        if (c == '{') return parse_dict(depth);
        if ((c >= '0' && c <= '9') || c == '-' || c == '+') return parse_integer();
        if (c >= 'A' && c <= 'Z') return parse_name();
        error("expected a value but found " + describe_here());
    }

    // string := quote (char | '\' char)* quote   (escapes are kept verbatim after the backslash)
    Value parse_string() {
        const char quote = text_[pos_++];
        Value v;
        v.kind = Value::Kind::string;
        while (pos_ < text_.size() && text_[pos_] != quote) {
            if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
            v.text += text_[pos_++];
        }
        if (pos_ >= text_.size()) error("unterminated string");
        ++pos_;
        return v;
    }

    // integer := [+-]? digit+ 'L'?   ('L' from Python 2 writers)
    Value parse_integer() {
        Value v;
        v.kind = Value::Kind::integer;
        bool negative = false;
        if (peek() == '-' || peek() == '+') negative = text_[pos_++] == '-';
        if (!(peek() >= '0' && peek() <= '9')) error("expected digits but found " + describe_here());
        std::int64_t n = 0;
        while (peek() >= '0' && peek() <= '9') {
            const int digit = text_[pos_++] - '0';
            if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, digit, &n)) v.number_overflow = true;
        }
        if (peek() == 'L' || peek() == 'l') ++pos_;
        v.number = negative ? -n : n;
        return v;
    }

    Value parse_name() {
        const std::size_t start = pos_;
        while ((peek() >= 'A' && peek() <= 'Z') || (peek() >= 'a' && peek() <= 'z') || peek() == '_') ++pos_;
        const std::string_view name = text_.substr(start, pos_ - start);
        Value v;
        if (name == "True" || name == "False") {
            v.kind = Value::Kind::boolean;
            v.flag = name == "True";
        } else if (name == "None") {
            v.kind = Value::Kind::none;
        } else {
            pos_ = start;
            error("unknown name '" + std::string(name) + "'");
        }
        return v;
    }

    // sequence := open (value (',' value)* ','?)? close
    Value parse_sequence(char close, Value::Kind kind, int depth) {
        ++pos_;
        Value v;
        v.kind = kind;
        skip_space();
        while (peek() != close) {
            v.items.push_back(parse_value(depth + 1));
            skip_space();
            if (peek() == ',') {
                ++pos_;
                skip_space();
            } else if (peek() != close) {
                error(std::string("expected ',' or '") + close + "' but found " + describe_here());
            }
        }
        ++pos_;
        // (3) is the integer 3 in Python, not a tuple; only (3,) is a one-element tuple. NumPy
        // never writes (3), so it is accepted as the tuple it was surely meant to be.
        return v;
    }

    // dict := '{' (string ':' value (',' string ':' value)* ','?)? '}'
    Value parse_dict(int depth) {
        ++pos_;
        Value v;
        v.kind = Value::Kind::dict;
        skip_space();
        while (peek() != '}') {
            if (peek() != '\'' && peek() != '"') error("expected a string key but found " + describe_here());
            std::string key = parse_string().text;
            expect(':');
            Value value = parse_value(depth + 1);
            for (const auto& [k, unused] : v.entries)
                if (k == key) error("key '" + key + "' appears twice");
            v.entries.emplace_back(std::move(key), std::move(value));
            skip_space();
            if (peek() == ',') {
                ++pos_;
                skip_space();
            } else if (peek() != '}') {
                error("expected ',' or '}' but found " + describe_here());
            }
        }
        ++pos_;
        return v;
    }

    std::string_view text_;
    const std::string& path_;
    std::size_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Reading

struct Header {
    Descr descr;
    bool fortran_order = false;
    Shape shape;
    std::uint64_t data_bytes = 0;  // itemsize * number of elements, checked against overflow
};

// Elements and bytes the shape needs; throws when they cannot be represented. Extents of zero
// are counted as one here so that, say, (0, 2**62, 2**62) is refused too: its strides would
// overflow even though it holds no element.
std::uint64_t checked_bytes(const std::string& path, const Shape& shape, std::size_t itemsize) {
    std::int64_t reach = static_cast<std::int64_t>(itemsize);
    bool empty = false;
    for (std::int64_t extent : shape) {
        if (extent == 0) empty = true;
        if (__builtin_mul_overflow(reach, std::max<std::int64_t>(extent, 1), &reach))
            fail(path, "shape " + shape_to_string(shape) + " is too large (more than 2**63 bytes)");
    }
    return empty ? 0 : static_cast<std::uint64_t>(reach);
}

const Value* find_key(const Value& dict, std::string_view key) {
    for (const auto& [k, v] : dict.entries)
        if (k == key) return &v;
    return nullptr;
}

Header interpret_header(const std::string& path, const Value& dict) {
    for (const auto& [key, unused] : dict.entries)
        if (key != "descr" && key != "fortran_order" && key != "shape")
            fail(path, "bad header: unexpected key '" + key + "' (expected only 'descr', 'fortran_order', 'shape')");
    const Value* descr = find_key(dict, "descr");
    const Value* fortran = find_key(dict, "fortran_order");
    const Value* shape = find_key(dict, "shape");
    const std::array<std::pair<const char*, const Value*>, 3> required{
        {{"descr", descr}, {"fortran_order", fortran}, {"shape", shape}}};
    for (const auto& [name, value] : required)
        if (value == nullptr) fail(path, std::string("bad header: missing key '") + name + "'");

    Header h;
    if (descr->kind != Value::Kind::string)
        fail(path, std::string("unsupported descr: ") + kind_name(descr->kind) +
                       " (structured dtypes are not supported; kjit reads plain numeric dtypes)");
    const auto parsed = parse_descr(descr->text);
    if (!parsed) {
        // NumPy saves ml_dtypes' bfloat16 (and other custom dtypes) as raw void bytes, '<V2'; the
        // file no longer says which type it was, so kjit does not guess but says what to do.
        const bool void_type = descr->text.size() >= 2 && descr->text[1] == 'V';
        fail(path, "unsupported descr '" + descr->text +
                       "' (kjit reads bool, int8-64, uint8-64, float16/32/64, bfloat16, complex64/128)" +
                       (void_type ? "; NumPy writes custom dtypes such as ml_dtypes.bfloat16 as void bytes: save "
                                    "them viewed as uint16 (or another integer type of their size) instead"
                                  : ""));
    }
    h.descr = *parsed;

    if (fortran->kind != Value::Kind::boolean)
        fail(path, std::string("bad header: 'fortran_order' is ") + kind_name(fortran->kind) + ", not True or False");
    h.fortran_order = fortran->flag;

    if (shape->kind != Value::Kind::tuple && shape->kind != Value::Kind::list)
        fail(path, std::string("bad shape: 'shape' is ") + kind_name(shape->kind) + ", not a tuple");
    for (std::size_t i = 0; i < shape->items.size(); ++i) {
        const Value& extent = shape->items[i];
        if (extent.kind != Value::Kind::integer)
            fail(path, "bad shape: extent " + std::to_string(i) + " is " + kind_name(extent.kind) + ", not an integer");
        if (extent.number_overflow)
            fail(path, "bad shape: extent " + std::to_string(i) + " does not fit in 64 bits");
        if (extent.number < 0)
            fail(path, "bad shape: extent " + std::to_string(i) + " is negative (" + std::to_string(extent.number) + ")");
        h.shape.push_back(extent.number);
    }
    h.data_bytes = checked_bytes(path, h.shape, h.descr.dtype.itemsize());
    return h;
}

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

Header read_header(std::ifstream& in, const std::string& path) {
    std::array<unsigned char, 12> prefix{};
    const std::uint64_t got = read_fully(in, prefix.data(), 8);
    if (got < kMagic.size() || std::memcmp(prefix.data(), kMagic.data(), kMagic.size()) != 0)
        fail(path, "not a .npy file (it does not start with the magic \"\\x93NUMPY\")");
    if (got < 8) fail(path, "the header is truncated (the file ends inside the version number)");
    const int major = prefix[6];
    const int minor = prefix[7];
    if (major < 1 || major > 3 || minor != 0)
        fail(path, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                       " (kjit reads 1.0, 2.0 and 3.0)");
    const int length_bytes = major == 1 ? 2 : 4;
    if (read_fully(in, prefix.data() + 8, length_bytes) < static_cast<std::uint64_t>(length_bytes))
        fail(path, "the header is truncated (the file ends inside the header length)");
    const std::uint64_t header_len = little_endian(prefix.data() + 8, length_bytes);
    if (header_len > kMaxHeaderBytes)
        fail(path, "the header length " + std::to_string(header_len) + " is implausibly large (the file is corrupt)");

    std::string text(header_len, '\0');
    const std::uint64_t got_header = read_fully(in, text.data(), header_len);
    if (got_header < header_len)
        fail(path, "the header is truncated: its length field says " + std::to_string(header_len) +
                       " bytes but the file has only " + std::to_string(got_header) + " after it");
    // Version 3.0 only changes the header's encoding to UTF-8; the keys, descr codes and numbers
    // we accept are ASCII, and any non-ASCII byte can only be inside a string we reject anyway.
    const Value dict = HeaderParser(text, path).parse_header();
    return interpret_header(path, dict);
}

void byteswap_elements(unsigned char* data, std::uint64_t bytes, std::size_t itemsize, bool complex) {
    // A complex number is two floats, each stored big-endian on its own.
    const std::size_t part = complex ? itemsize / 2 : itemsize;
    for (std::uint64_t i = 0; i + part <= bytes; i += part) std::reverse(data + i, data + i + part);
}

Array read_npy(const std::string& path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (status.type() == std::filesystem::file_type::not_found) fail(path, "no such file");
    if (status.type() == std::filesystem::file_type::directory) fail(path, "it is a directory");
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, std::string("cannot open it: ") + (errno ? std::strerror(errno) : "unknown error"));
    const Header h = read_header(in, path);
    const DType dtype = h.descr.dtype;

    // Check the length before allocating, so that a truncated file with a huge shape gives the
    // right message rather than an allocation failure.
    const std::streamoff data_start = in.tellg();
    in.seekg(0, std::ios::end);
    const std::streamoff file_end = in.tellg();
    in.seekg(data_start);
    if (data_start < 0 || file_end < data_start || !in) fail(path, "cannot determine the file size");
    const auto available = static_cast<std::uint64_t>(file_end - data_start);
    if (available < h.data_bytes)
        fail(path, "the data is truncated: shape " + shape_to_string(h.shape) + " of " + std::string(dtype.name()) +
                       " needs " + std::to_string(h.data_bytes) + " bytes but the file has " +
                       std::to_string(available) + " after the header");
    // Bytes after the data are ignored, as np.load does: some writers pad files, and they never
    // change the array's meaning.

    Array host = Array::empty(h.shape, dtype, Device::cpu());
    if (h.fortran_order && h.shape.size() > 1)
        host = Array::view_of(host.buffer(), dtype, h.shape, f_strides(h.shape), 0);
    auto* data = static_cast<unsigned char*>(host.data());
    if (h.data_bytes > 0 && read_fully(in, data, h.data_bytes) < h.data_bytes)
        fail(path, "reading the data failed: " + std::string(std::strerror(errno)));
    if (h.descr.big_endian) byteswap_elements(data, h.data_bytes, dtype.itemsize(), dtype.is_complex());
    if (dtype == DType::bool_)  // any non-zero byte is True in NumPy; kernels expect exactly 0 or 1
        for (std::uint64_t i = 0; i < h.data_bytes; ++i) data[i] = data[i] != 0;
    return host;
}

// ---------------------------------------------------------------------------------------------
// Writing

std::string header_text(DType dtype, bool fortran_order, const Shape& shape) {
    std::string shape_text = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i > 0) shape_text += ", ";
        shape_text += std::to_string(shape[i]);
    }
    shape_text += shape.size() == 1 ? ",)" : ")";
    return "{'descr': '" + descr_of(dtype) + "', 'fortran_order': " + (fortran_order ? "True" : "False") +
           ", 'shape': " + shape_text + ", }";
}

// Magic, version, length and the space-padded header ending in '\n', so that the data starts
// at a multiple of kAlignment. Version 2.0 only when the header outgrows 1.0's 16-bit length.
std::string padded_header(const std::string& text, std::size_t fixed) {
    const std::size_t total = (fixed + text.size() + 1 + kAlignment - 1) / kAlignment * kAlignment;
    return text + std::string(total - fixed - text.size() - 1, ' ') + '\n';
}

std::string preamble(DType dtype, bool fortran_order, const Shape& shape) {
    const std::string text = header_text(dtype, fortran_order, shape);
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

// Writes the elements of a host array of any layout in C order, gathering them through its
// strides (negative and zero strides included) in chunks so that no full copy is made.
template <class Sink>
void gather_c_order(const Array& a, Sink&& sink) {
    const std::size_t itemsize = a.itemsize();
    const int nd = a.ndim();
    const auto* base = static_cast<const unsigned char*>(a.data());
    const std::int64_t inner = nd == 0 ? 1 : a.shape()[nd - 1];
    const std::int64_t inner_stride = nd == 0 ? 0 : a.strides()[nd - 1];
    const std::int64_t rows = inner == 0 ? 0 : a.size() / inner;

    std::vector<unsigned char> chunk;
    constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
    chunk.reserve(kChunkBytes + itemsize);
    std::vector<std::int64_t> index(std::max(nd - 1, 0), 0);
    std::int64_t row_offset = 0;  // element offset of the current row's first element
    for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t j = 0; j < inner; ++j) {
            const unsigned char* src = base + (row_offset + j * inner_stride) * static_cast<std::int64_t>(itemsize);
            chunk.insert(chunk.end(), src, src + itemsize);
        }
        if (chunk.size() >= kChunkBytes) {
            sink(chunk.data(), chunk.size());
            chunk.clear();
        }
        // Odometer over the outer axes, last fastest.
        for (int axis = nd - 2; axis >= 0; --axis) {
            row_offset += a.strides()[axis];
            if (++index[axis] < a.shape()[axis]) break;
            row_offset -= a.strides()[axis] * a.shape()[axis];
            index[axis] = 0;
        }
    }
    if (!chunk.empty()) sink(chunk.data(), chunk.size());
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

void write_npy(const std::string& path, const Array& a) {
    const bool fortran = !a.is_c_contiguous() && a.is_f_contiguous();
    const bool contiguous = a.is_c_contiguous() || fortran;
    // The pid keeps processes apart and the counter keeps threads of one process apart, so two
    // concurrent saves to one path never write the same temporary file.
    static std::atomic<unsigned> counter{0};
    const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    TempFileGuard guard(tmp);
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail_write(path, "cannot create '" + tmp + "': " + std::strerror(errno));

    const std::string pre = preamble(a.dtype(), fortran, a.shape());
    out.write(pre.data(), static_cast<std::streamsize>(pre.size()));
    if (a.size() > 0) {
        if (contiguous) {
            // data() is element (0,...,0); a contiguous view's elements all follow it.
            out.write(static_cast<const char*>(a.data()), static_cast<std::streamsize>(a.nbytes()));
        } else {
            gather_c_order(a, [&](const unsigned char* p, std::size_t n) {
                out.write(reinterpret_cast<const char*>(p), static_cast<std::streamsize>(n));
            });
        }
    }
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
    if (array.is_host()) {
        write_npy(path, array);
    } else {
        write_npy(path, array.to_host(stream));
    }
}

}  // namespace kjit
