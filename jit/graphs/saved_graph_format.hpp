// A saved graph's description (Graph::save writes it, Graph::load reads it): the steps of a
// captured graph in an order that respects their dependencies, each kernel by its kernel cache key
// and entry point, with its launch shape and argument bytes, and the places in those bytes that
// hold addresses (of the named arrays, of graph memory, of kjit's scratch) or named scalars. A
// fresh process rebuilds the graph from it with its own arrays, loading the kernels from a kernel
// cache: no source, no NVRTC.
//
// The file is JSON:
//   {"kjit_saved_graph": 1,
//    "arrays":  [{"name", "dtype", "shape", "strides", "align"}],       align: address mod 256
//    "scalars": [{"name", "parameter"}],                                 "kernel.param[@call]"
//    "scratch": [bytes, ...],                                            fresh zeroed memory each
//    "steps":   [{"kind": "kernel", "after": [step...], "kernel", "key", "entry", "grid", "block",
//                 "shared", "params": [[offset, size]...], "bytes": hex,
//                 "addresses": [[at, "array"|"graph"|"scratch", index, offset]...],
//                 "scalars": [[at, scalar, dtype]...]},
//               {"kind": "memset", "after", "to": address, "value", "element", "width", "height", "pitch"},
//               {"kind": "copy", "after", "to": address, "from": address, "bytes"},
//               {"kind": "alloc", "after", "bytes"}, {"kind": "free", "after", "alloc": step},
//               {"kind": "empty", "after"}]}
// where an address of a memset or copy is ["array"|"graph"|"scratch", index, offset] ("graph"
// indexes the alloc step). Reading validates every field and index before anything uses it, and
// every address and the bytes a memset or copy touches against its target: a damaged file is an
// Error naming the field. What a kernel does with its argument bytes (sizes, strides) the file
// still decides, as a program's code would: load only saved graphs you trust.
//
// Since the file is JSON read whole, it is bounded at 64 MiB (saved_graph.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kjit/dtype.hpp"

namespace kjit::jit::graphs {

inline constexpr int kSavedGraphVersion = 1;

struct SavedArray {
    std::string name;
    DType dtype;
    std::vector<std::int64_t> shape, strides;  // as kjit::Array has them (strides in elements)
    std::uint32_t align = 0;                   // the captured array's address modulo 256
};

struct SavedScalar {
    std::string name;
    std::string parameter;  // "kernel.param" or "kernel.param@call"
};

// Where an address points: into a named array (offset from its data pointer, may be negative for
// a view with negative strides), into the memory of an alloc step, or into a scratch buffer.
struct SavedAddress {
    enum class Into : unsigned char { array, graph, scratch } into = Into::array;
    std::size_t index = 0;
    std::int64_t offset = 0;
};

struct SavedRelocation {
    std::size_t at = 0;  // byte offset in the kernel's argument bytes (8 bytes there)
    SavedAddress address;
};

struct SavedScalarSlot {
    std::size_t at = 0;  // byte offset in the argument bytes
    std::size_t scalar = 0;
    DType dtype;         // the kernel parameter's dtype (a given value is cast to it)
};

struct SavedStep {
    enum class Kind : unsigned char { kernel, memset, copy, alloc, free, empty } kind = Kind::empty;
    std::vector<std::size_t> after;  // earlier steps this one depends on
    // kernel
    std::string kernel, key, entry;
    std::array<unsigned, 3> grid{1, 1, 1}, block{1, 1, 1};
    unsigned shared = 0;
    std::vector<std::pair<std::size_t, std::size_t>> params;  // each parameter's (offset, size)
    std::vector<std::byte> bytes;                               // the parameter buffer
    std::vector<SavedRelocation> addresses;
    std::vector<SavedScalarSlot> scalars;
    // memset, copy
    SavedAddress to, from;
    unsigned value = 0, element = 1;
    std::size_t width = 0, height = 1, pitch = 0;
    // copy, alloc
    std::size_t size = 0;
    // free
    std::size_t alloc = 0;
};

struct SavedGraph {
    std::vector<SavedArray> arrays;
    std::vector<SavedScalar> scalars;
    std::vector<std::size_t> scratch;
    std::vector<SavedStep> steps;
};

// The JSON text of `g`.
std::string write_saved_graph(const SavedGraph& g);
// `text` read back; an Error "<where>: saved graph: <field>: <what is wrong>" when it is not a
// valid description (every index, offset and size checked).
SavedGraph read_saved_graph(const std::string& text, const std::string& where);

// "kernel.param" or "kernel.param@call" split; an Error naming `text` when it is neither.
struct ScalarParameter {
    std::string kernel, parameter;
    long long call = -1;  // -1: every call of the kernel
};
ScalarParameter parse_scalar_parameter(const std::string& text);

}  // namespace kjit::jit::graphs
