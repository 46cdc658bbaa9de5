#include "jit/graphs/saved_graph_format.hpp"

#include <set>

#include <nlohmann/json.hpp>

#include "cache/entry.hpp"
#include "kjit/error.hpp"

namespace kjit::jit::graphs {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxArgumentBytes = 32768;  // the driver's limit on a launch's parameters is below this
constexpr std::size_t kMaxDims = 64;

const char* into_name(SavedAddress::Into i) {
    switch (i) {
        case SavedAddress::Into::array: return "array";
        case SavedAddress::Into::graph: return "graph";
        case SavedAddress::Into::scratch: return "scratch";
    }
    return "?";
}

const char* kind_name(SavedStep::Kind k) {
    switch (k) {
        case SavedStep::Kind::kernel: return "kernel";
        case SavedStep::Kind::memset: return "memset";
        case SavedStep::Kind::copy: return "copy";
        case SavedStep::Kind::alloc: return "alloc";
        case SavedStep::Kind::free: return "free";
        case SavedStep::Kind::empty: return "empty";
    }
    return "?";
}

std::string hex(const std::vector<std::byte>& bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s;
    s.reserve(bytes.size() * 2);
    for (std::byte b : bytes) {
        s += digits[static_cast<unsigned>(b) >> 4];
        s += digits[static_cast<unsigned>(b) & 15];
    }
    return s;
}

json address_json(const SavedAddress& a) { return json::array({into_name(a.into), a.index, a.offset}); }

// The bytes a saved array's elements span, relative to its data pointer: [lo, hi); empty for an
// array with no elements. Extents and strides are bounded by the reader (2^48, and |stride| is
// checked here), so the sums stay far inside 64 bits.
std::pair<std::int64_t, std::int64_t> array_bytes(const SavedArray& a) {
    std::int64_t lo = 0, hi = 0;
    for (std::size_t d = 0; d < a.shape.size(); ++d) {
        if (a.shape[d] == 0) return {0, 0};
        const std::int64_t reach = (a.shape[d] - 1) * a.strides[d] * static_cast<std::int64_t>(a.dtype.itemsize());
        (reach < 0 ? lo : hi) += reach;
    }
    return {lo, hi + static_cast<std::int64_t>(a.dtype.itemsize())};
}

// Reads with every check: `fail` throws naming the path of the field.
class Reader {
public:
    explicit Reader(std::string where) : where_(std::move(where)) {}

    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw Error(where_ + ": saved graph: " + field + ": " + what);
    }
    const json& member(const json& object, const char* name, const std::string& field) const {
        if (!object.is_object()) fail(field, "must be an object");
        const auto it = object.find(name);
        if (it == object.end()) fail(field + "." + name, "missing");
        return *it;
    }
    const json& list(const json& v, const std::string& field) const {
        if (!v.is_array()) fail(field, "must be a list");
        return v;
    }
    std::string text(const json& v, const std::string& field) const {
        if (!v.is_string()) fail(field, "must be a string");
        return v.get<std::string>();
    }
    std::uint64_t count(const json& v, const std::string& field, std::uint64_t max) const {
        if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
            fail(field, "must be a whole number of at least 0");
        const std::uint64_t n = v.get<std::uint64_t>();
        if (n > max) fail(field, std::to_string(n) + " is more than " + std::to_string(max));
        return n;
    }
    std::int64_t integer(const json& v, const std::string& field) const {
        if (!v.is_number_integer()) fail(field, "must be a whole number");
        return v.get<std::int64_t>();
    }
    std::vector<std::byte> bytes(const json& v, const std::string& field) const {
        const std::string s = text(v, field);
        if (s.size() % 2 != 0 || s.size() / 2 > kMaxArgumentBytes) fail(field, "must be hex digits in pairs, at most " + std::to_string(kMaxArgumentBytes) + " bytes");
        std::vector<std::byte> out(s.size() / 2);
        const auto digit = [&](char c) -> unsigned {
            if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
            if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
            fail(field, "holds a character that is not a lowercase hex digit");
        };
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>(digit(s[2 * i]) << 4 | digit(s[2 * i + 1]));
        return out;
    }
    // An address, and the `extent` bytes from it that a step touches, inside its target: a
    // named array's elements (from its saved shape and strides), a scratch buffer, an allocation.
    SavedAddress address(const json& v, const std::string& field, const SavedGraph& g, std::size_t step, std::uint64_t extent = 1) const {
        list(v, field);
        if (v.size() != 3) fail(field, "must be [kind, index, offset]");
        SavedAddress a;
        const std::string kind = text(v[0], field + "[0]");
        if (kind == "array") a.into = SavedAddress::Into::array;
        else if (kind == "graph") a.into = SavedAddress::Into::graph;
        else if (kind == "scratch") a.into = SavedAddress::Into::scratch;
        else fail(field + "[0]", "must be \"array\", \"graph\" or \"scratch\", not \"" + kind + "\"");
        a.index = static_cast<std::size_t>(count(v[1], field + "[1]", 1u << 30));
        a.offset = integer(v[2], field + "[2]");
        const auto inside = [&](std::int64_t lo, std::int64_t hi) {
            // [offset, offset + extent) within [lo, hi); extents are at most 2^62 (checked by callers)
            if (a.offset < lo || a.offset > hi || static_cast<std::uint64_t>(hi - a.offset) < extent)
                fail(field + "[2]", "the bytes it touches are outside its " + std::string(into_name(a.into)) + " target");
        };
        switch (a.into) {
            case SavedAddress::Into::array: {
                if (a.index >= g.arrays.size()) fail(field + "[1]", "no array " + std::to_string(a.index));
                const auto [lo, hi] = array_bytes(g.arrays[a.index]);
                inside(lo, hi);
                break;
            }
            case SavedAddress::Into::scratch:
                if (a.index >= g.scratch.size()) fail(field + "[1]", "no scratch buffer " + std::to_string(a.index));
                inside(0, static_cast<std::int64_t>(g.scratch[a.index]));
                break;
            case SavedAddress::Into::graph:
                if (a.index >= step || g.steps[a.index].kind != SavedStep::Kind::alloc)
                    fail(field + "[1]", "step " + std::to_string(a.index) + " is not an earlier alloc step");
                inside(0, static_cast<std::int64_t>(g.steps[a.index].size));
                break;
        }
        return a;
    }

private:
    std::string where_;
};

SavedStep read_step(const Reader& r, const json& j, const std::string& field, const SavedGraph& g, std::size_t index) {
    SavedStep s;
    const std::string kind = r.text(r.member(j, "kind", field), field + ".kind");
    bool known = false;
    for (SavedStep::Kind k : {SavedStep::Kind::kernel, SavedStep::Kind::memset, SavedStep::Kind::copy, SavedStep::Kind::alloc,
                              SavedStep::Kind::free, SavedStep::Kind::empty})
        if (kind == kind_name(k)) s.kind = k, known = true;
    if (!known) r.fail(field + ".kind", "unknown step kind \"" + kind + "\"");
    const json& after = r.list(r.member(j, "after", field), field + ".after");
    for (std::size_t k = 0; k < after.size(); ++k) {
        const std::size_t a = static_cast<std::size_t>(r.count(after[k], field + ".after", 1u << 30));
        if (a >= index) r.fail(field + ".after", "step " + std::to_string(a) + " does not come before this one");
        s.after.push_back(a);
    }
    const auto u = [&](const char* name, std::uint64_t max) { return r.count(r.member(j, name, field), field + "." + name, max); };
    switch (s.kind) {
        case SavedStep::Kind::kernel: {
            s.kernel = r.text(r.member(j, "kernel", field), field + ".kernel");
            s.key = r.text(r.member(j, "key", field), field + ".key");
            if (!cache::is_valid_key(s.key)) r.fail(field + ".key", "not a kernel cache key (32 lowercase hex digits)");
            s.entry = r.text(r.member(j, "entry", field), field + ".entry");
            if (s.entry.empty()) r.fail(field + ".entry", "empty");
            for (const char* dims : {"grid", "block"}) {
                const json& d = r.list(r.member(j, dims, field), field + "." + dims);
                if (d.size() != 3) r.fail(field + "." + dims, "must hold 3 numbers");
                auto& out = dims[0] == 'g' ? s.grid : s.block;
                for (std::size_t k = 0; k < 3; ++k) {
                    out[k] = static_cast<unsigned>(r.count(d[k], field + "." + dims, 0x7fffffff));
                    if (out[k] == 0) r.fail(field + "." + dims, "a dimension of 0");
                }
            }
            if (std::uint64_t{s.block[0]} * s.block[1] * s.block[2] > 1024) r.fail(field + ".block", "more than 1024 threads");
            s.shared = static_cast<unsigned>(u("shared", 1u << 30));
            s.bytes = r.bytes(r.member(j, "bytes", field), field + ".bytes");
            const json& params = r.list(r.member(j, "params", field), field + ".params");
            for (const json& p : params) {
                r.list(p, field + ".params");
                if (p.size() != 2) r.fail(field + ".params", "each must be [offset, size]");
                const std::size_t off = static_cast<std::size_t>(r.count(p[0], field + ".params", kMaxArgumentBytes));
                const std::size_t size = static_cast<std::size_t>(r.count(p[1], field + ".params", kMaxArgumentBytes));
                if (off + size > s.bytes.size()) r.fail(field + ".params", "a parameter past the end of the bytes");
                s.params.emplace_back(off, size);
            }
            const json& addresses = r.list(r.member(j, "addresses", field), field + ".addresses");
            for (const json& a : addresses) {
                r.list(a, field + ".addresses");
                if (a.size() != 4) r.fail(field + ".addresses", "each must be [at, kind, index, offset]");
                SavedRelocation rel;
                rel.at = static_cast<std::size_t>(r.count(a[0], field + ".addresses", kMaxArgumentBytes));
                if (rel.at % 8 != 0 || rel.at + 8 > s.bytes.size()) r.fail(field + ".addresses", "an address not 8 aligned 8 bytes inside the bytes");
                rel.address = r.address(json::array({a[1], a[2], a[3]}), field + ".addresses", g, index);
                s.addresses.push_back(rel);
            }
            const json& scalars = r.list(r.member(j, "scalars", field), field + ".scalars");
            for (const json& a : scalars) {
                r.list(a, field + ".scalars");
                if (a.size() != 3) r.fail(field + ".scalars", "each must be [at, scalar, dtype]");
                SavedScalarSlot slot;
                slot.at = static_cast<std::size_t>(r.count(a[0], field + ".scalars", kMaxArgumentBytes));
                slot.scalar = static_cast<std::size_t>(r.count(a[1], field + ".scalars", 1u << 30));
                if (slot.scalar >= g.scalars.size()) r.fail(field + ".scalars", "no scalar " + std::to_string(slot.scalar));
                try {
                    slot.dtype = DType::parse(r.text(a[2], field + ".scalars"));
                } catch (const Error& e) {
                    r.fail(field + ".scalars", e.what());
                }
                if (slot.at + slot.dtype.itemsize() > s.bytes.size()) r.fail(field + ".scalars", "a scalar past the end of the bytes");
                s.scalars.push_back(slot);
            }
            break;
        }
        case SavedStep::Kind::memset: {
            s.value = static_cast<unsigned>(u("value", 0xffffffffu));
            s.element = static_cast<unsigned>(u("element", 4));
            if (s.element != 1 && s.element != 2 && s.element != 4) r.fail(field + ".element", "must be 1, 2 or 4");
            s.width = static_cast<std::size_t>(u("width", std::uint64_t{1} << 40));
            s.height = static_cast<std::size_t>(u("height", std::uint64_t{1} << 20));
            s.pitch = static_cast<std::size_t>(u("pitch", std::uint64_t{1} << 40));
            if (s.width == 0 || s.height == 0) r.fail(field, "an empty memset");
            const std::uint64_t row = std::uint64_t{s.width} * s.element;
            if (s.height > 1 && s.pitch < row) r.fail(field + ".pitch", "rows that overlap");
            const std::uint64_t extent = std::uint64_t{s.pitch} * (s.height - 1) + row;  // below 2^62 by the bounds above
            s.to = r.address(r.member(j, "to", field), field + ".to", g, index, extent);
            break;
        }
        case SavedStep::Kind::copy:
            s.size = static_cast<std::size_t>(u("bytes", std::uint64_t{1} << 40));
            if (s.size == 0) r.fail(field + ".bytes", "an empty copy");
            s.to = r.address(r.member(j, "to", field), field + ".to", g, index, s.size);
            s.from = r.address(r.member(j, "from", field), field + ".from", g, index, s.size);
            break;
        case SavedStep::Kind::alloc:
            s.size = static_cast<std::size_t>(u("bytes", std::uint64_t{1} << 40));
            if (s.size == 0) r.fail(field + ".bytes", "an empty allocation");
            break;
        case SavedStep::Kind::free:
            s.alloc = static_cast<std::size_t>(u("alloc", 1u << 30));
            if (s.alloc >= index || g.steps[s.alloc].kind != SavedStep::Kind::alloc)
                r.fail(field + ".alloc", "step " + std::to_string(s.alloc) + " is not an earlier alloc step");
            break;
        case SavedStep::Kind::empty:
            break;
    }
    return s;
}

}  // namespace

std::string write_saved_graph(const SavedGraph& g) {
    json j;
    j["kjit_saved_graph"] = kSavedGraphVersion;
    j["arrays"] = json::array();
    for (const SavedArray& a : g.arrays)
        j["arrays"].push_back({{"name", a.name}, {"dtype", std::string(a.dtype.name())}, {"shape", a.shape}, {"strides", a.strides},
                               {"align", a.align}});
    j["scalars"] = json::array();
    for (const SavedScalar& s : g.scalars) j["scalars"].push_back({{"name", s.name}, {"parameter", s.parameter}});
    j["scratch"] = g.scratch;
    j["steps"] = json::array();
    for (const SavedStep& s : g.steps) {
        json step = {{"kind", kind_name(s.kind)}, {"after", s.after}};
        switch (s.kind) {
            case SavedStep::Kind::kernel: {
                step["kernel"] = s.kernel;
                step["key"] = s.key;
                step["entry"] = s.entry;
                step["grid"] = s.grid;
                step["block"] = s.block;
                step["shared"] = s.shared;
                step["params"] = json::array();
                for (const auto& [off, size] : s.params) step["params"].push_back({off, size});
                step["bytes"] = hex(s.bytes);
                step["addresses"] = json::array();
                for (const SavedRelocation& r : s.addresses)
                    step["addresses"].push_back({r.at, into_name(r.address.into), r.address.index, r.address.offset});
                step["scalars"] = json::array();
                for (const SavedScalarSlot& sl : s.scalars) step["scalars"].push_back({sl.at, sl.scalar, std::string(sl.dtype.name())});
                break;
            }
            case SavedStep::Kind::memset:
                step["to"] = address_json(s.to);
                step["value"] = s.value;
                step["element"] = s.element;
                step["width"] = s.width;
                step["height"] = s.height;
                step["pitch"] = s.pitch;
                break;
            case SavedStep::Kind::copy:
                step["to"] = address_json(s.to);
                step["from"] = address_json(s.from);
                step["bytes"] = s.size;
                break;
            case SavedStep::Kind::alloc: step["bytes"] = s.size; break;
            case SavedStep::Kind::free: step["alloc"] = s.alloc; break;
            case SavedStep::Kind::empty: break;
        }
        j["steps"].push_back(std::move(step));
    }
    return j.dump(1) + "\n";
}

SavedGraph read_saved_graph(const std::string& text, const std::string& where) {
    const Reader r(where);
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        r.fail("the file", std::string("not JSON (") + e.what() + ")");
    }
    const json& version = r.member(j, "kjit_saved_graph", "the file");
    if (!version.is_number_integer() || version.get<std::int64_t>() != kSavedGraphVersion)
        r.fail("kjit_saved_graph", "version " + version.dump() + "; this kjit reads version " + std::to_string(kSavedGraphVersion));
    SavedGraph g;
    std::set<std::string> names;
    const json& arrays = r.list(r.member(j, "arrays", "the file"), "arrays");
    for (std::size_t k = 0; k < arrays.size(); ++k) {
        const std::string f = "arrays[" + std::to_string(k) + "]";
        SavedArray a;
        a.name = r.text(r.member(arrays[k], "name", f), f + ".name");
        if (a.name.empty() || !names.insert(a.name).second) r.fail(f + ".name", "empty or given twice");
        try {
            a.dtype = DType::parse(r.text(r.member(arrays[k], "dtype", f), f + ".dtype"));
        } catch (const Error& e) {
            r.fail(f + ".dtype", e.what());
        }
        const json& shape = r.list(r.member(arrays[k], "shape", f), f + ".shape");
        const json& strides = r.list(r.member(arrays[k], "strides", f), f + ".strides");
        if (shape.size() != strides.size() || shape.size() > kMaxDims) r.fail(f, "shape and strides of different lengths, or too many");
        for (std::size_t d = 0; d < shape.size(); ++d) {
            a.shape.push_back(static_cast<std::int64_t>(r.count(shape[d], f + ".shape", std::uint64_t{1} << 20)));
            a.strides.push_back(r.integer(strides[d], f + ".strides"));
            if (a.strides.back() > (std::int64_t{1} << 40) || a.strides.back() < -(std::int64_t{1} << 40))
                r.fail(f + ".strides", "a stride beyond 2^40 elements");
        }
        a.align = static_cast<std::uint32_t>(r.count(r.member(arrays[k], "align", f), f + ".align", 255));
        g.arrays.push_back(std::move(a));
    }
    const json& scalars = r.list(r.member(j, "scalars", "the file"), "scalars");
    for (std::size_t k = 0; k < scalars.size(); ++k) {
        const std::string f = "scalars[" + std::to_string(k) + "]";
        SavedScalar s;
        s.name = r.text(r.member(scalars[k], "name", f), f + ".name");
        if (s.name.empty() || !names.insert(s.name).second) r.fail(f + ".name", "empty or a name given twice");
        s.parameter = r.text(r.member(scalars[k], "parameter", f), f + ".parameter");
        g.scalars.push_back(std::move(s));
    }
    const json& scratch = r.list(r.member(j, "scratch", "the file"), "scratch");
    for (const json& s : scratch) {
        g.scratch.push_back(static_cast<std::size_t>(r.count(s, "scratch", std::uint64_t{1} << 40)));
        if (g.scratch.back() == 0) r.fail("scratch", "an empty buffer");
    }
    const json& steps = r.list(r.member(j, "steps", "the file"), "steps");
    for (std::size_t k = 0; k < steps.size(); ++k) g.steps.push_back(read_step(r, steps[k], "steps[" + std::to_string(k) + "]", g, k));
    return g;
}

ScalarParameter parse_scalar_parameter(const std::string& text) {
    const auto bad = [&] {
        return Error("the scalar parameter \"" + text + "\" is not \"kernel.parameter\" or \"kernel.parameter@call\" (call: 0 for a "
                     "kernel's first call in the graph)");
    };
    ScalarParameter p;
    const std::size_t dot = text.find('.');
    if (dot == std::string::npos || dot == 0) throw bad();
    p.kernel = text.substr(0, dot);
    std::string rest = text.substr(dot + 1);
    const std::size_t at = rest.find('@');
    if (at != std::string::npos) {
        const std::string call = rest.substr(at + 1);
        if (call.empty() || call.size() > 9 || call.find_first_not_of("0123456789") != std::string::npos) throw bad();
        p.call = std::stoll(call);
        rest = rest.substr(0, at);
    }
    if (rest.empty() || rest.find_first_of(".@") != std::string::npos) throw bad();
    p.parameter = rest;
    return p;
}

}  // namespace kjit::jit::graphs
