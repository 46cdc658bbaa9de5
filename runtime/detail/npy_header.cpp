// Parsing and writing the header dict of a .npy file, written from the format's description in
// numpy/lib/format.py's documentation.
#include "runtime/detail/npy_header.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kjit/error.hpp"
#include "runtime/detail/printable.hpp"

namespace kjit::detail {

void fail_npy_read(const std::string& path, const std::string& problem) {
    // The problem quotes the file's own bytes (a key, a descr, the header): escaped, so that an
    // escape sequence in a file cannot reach the terminal that shows the message.
    throw IoError("cannot read .npy file '" + printable(path) + "': " + printable(problem));
}

namespace {

// ---------------------------------------------------------------------------------------------
// dtype <-> descr

// What a descr says: the dtype, and whether the elements are stored big-endian.
struct Descr {
    DType dtype;
    bool big_endian = false;
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
    // Appended rather than `"<" + std::string(code)`, which trips GCC 12's false -Wrestrict.
    std::string descr(dtype.itemsize() == 1 ? "|" : "<");
    descr += type_code(dtype);
    return descr;
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
        fail_npy_read(path_, "bad header: " + what + " in " + quoted_header());
    }

    std::string quoted_header() const {
        std::string h(text_.substr(0, std::min<std::size_t>(text_.size(), 200)));
        while (!h.empty() && (h.back() == '\n' || h.back() == ' ')) h.pop_back();
        // Its control bytes are escaped by fail_npy_read, which keeps the message on one line.
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
// Interpreting the dict

// Elements and bytes the shape needs; throws when they cannot be represented. Extents of zero
// are counted as one here so that, say, (0, 2**62, 2**62) is refused too: its strides would
// overflow even though it holds no element.
std::uint64_t checked_bytes(const std::string& path, const Shape& shape, std::size_t itemsize) {
    std::int64_t reach = static_cast<std::int64_t>(itemsize);
    bool empty = false;
    for (std::int64_t extent : shape) {
        if (extent == 0) empty = true;
        if (__builtin_mul_overflow(reach, std::max<std::int64_t>(extent, 1), &reach))
            fail_npy_read(path, "shape " + shape_to_string(shape) + " is too large (more than 2**63 bytes)");
    }
    return empty ? 0 : static_cast<std::uint64_t>(reach);
}

const Value* find_key(const Value& dict, std::string_view key) {
    for (const auto& [k, v] : dict.entries)
        if (k == key) return &v;
    return nullptr;
}

NpyHeader interpret_header(const std::string& path, const Value& dict) {
    for (const auto& [key, unused] : dict.entries)
        if (key != "descr" && key != "fortran_order" && key != "shape")
            fail_npy_read(path, "bad header: unexpected key '" + key + "' (expected only 'descr', 'fortran_order', 'shape')");
    const Value* descr = find_key(dict, "descr");
    const Value* fortran = find_key(dict, "fortran_order");
    const Value* shape = find_key(dict, "shape");
    const std::array<std::pair<const char*, const Value*>, 3> required{
        {{"descr", descr}, {"fortran_order", fortran}, {"shape", shape}}};
    for (const auto& [name, value] : required)
        if (value == nullptr) fail_npy_read(path, std::string("bad header: missing key '") + name + "'");

    NpyHeader h;
    if (descr->kind != Value::Kind::string)
        fail_npy_read(path, std::string("unsupported descr: ") + kind_name(descr->kind) +
                       " (structured dtypes are not supported; kjit reads plain numeric dtypes)");
    const auto parsed = parse_descr(descr->text);
    if (!parsed) {
        // NumPy saves ml_dtypes' bfloat16 (and other custom dtypes) as raw void bytes, '<V2'; the
        // file no longer says which type it was, so kjit does not guess but says what to do.
        const bool void_type = descr->text.size() >= 2 && descr->text[1] == 'V';
        fail_npy_read(path, "unsupported descr '" + descr->text +
                       "' (kjit reads bool, int8-64, uint8-64, float16/32/64, bfloat16, complex64/128)" +
                       (void_type ? "; NumPy writes custom dtypes such as ml_dtypes.bfloat16 as void bytes: save "
                                    "them viewed as uint16 (or another integer type of their size) instead"
                                  : ""));
    }
    h.dtype = parsed->dtype;
    h.big_endian = parsed->big_endian;

    if (fortran->kind != Value::Kind::boolean)
        fail_npy_read(path, std::string("bad header: 'fortran_order' is ") + kind_name(fortran->kind) + ", not True or False");
    h.fortran_order = fortran->flag;

    if (shape->kind != Value::Kind::tuple && shape->kind != Value::Kind::list)
        fail_npy_read(path, std::string("bad shape: 'shape' is ") + kind_name(shape->kind) + ", not a tuple");
    for (std::size_t i = 0; i < shape->items.size(); ++i) {
        const Value& extent = shape->items[i];
        if (extent.kind != Value::Kind::integer)
            fail_npy_read(path, "bad shape: extent " + std::to_string(i) + " is " + kind_name(extent.kind) + ", not an integer");
        if (extent.number_overflow)
            fail_npy_read(path, "bad shape: extent " + std::to_string(i) + " does not fit in 64 bits");
        if (extent.number < 0)
            fail_npy_read(path, "bad shape: extent " + std::to_string(i) + " is negative (" + std::to_string(extent.number) + ")");
        h.shape.push_back(extent.number);
    }
    h.data_bytes = checked_bytes(path, h.shape, h.dtype.itemsize());
    return h;
}

}  // namespace

NpyHeader parse_npy_header(std::string_view text, const std::string& path) {
    return interpret_header(path, HeaderParser(text, path).parse_header());
}

std::string npy_header_text(DType dtype, bool fortran_order, const Shape& shape) {
    // shape_to_string prints a Python tuple literal, "(5,)" for one extent included.
    return "{'descr': '" + descr_of(dtype) + "', 'fortran_order': " + (fortran_order ? "True" : "False") +
           ", 'shape': " + shape_to_string(shape) + ", }";
}

}  // namespace kjit::detail
