// Graph::save and Graph::load (include/kjit/graph.hpp): a captured graph written as a description
// (jit/graphs/saved_graph_format.hpp) and rebuilt from it in another process, its kernels loaded
// from the kernel cache by key.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "cache/file_io.hpp"
#include "cache/kernel_cache.hpp"
#include "jit/compile/program_store.hpp"
#include "jit/graphs/saved_graph_format.hpp"
#include "kjit/error.hpp"
#include "kjit/graph.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/graph_state.hpp"
#include "runtime/detail/module.hpp"

namespace kjit {
namespace {

using jit::graphs::SavedAddress;
using jit::graphs::SavedGraph;
using jit::graphs::SavedStep;

constexpr std::size_t kMaxFileBytes = std::size_t{64} << 20;

// The nodes in an order where each comes after those it depends on (Kahn's, ties in the driver's
// order), with each one's dependencies as indices in that order.
struct Ordered {
    std::vector<CUgraphNode> nodes;
    std::vector<std::vector<std::size_t>> after;
};
Ordered dependency_order(detail::Driver& d, CUgraph graph) {
    const std::vector<CUgraphNode> nodes = detail::graph_nodes(d, graph);
    std::size_t edges = 0;
    if (d.cuGraphGetEdges == nullptr) throw Error("Graph::save: the CUDA driver is older than 12.3 (no cuGraphGetEdges)");
    KJIT_CU_CHECK(d.cuGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges));
    std::vector<CUgraphNode> from(edges), to(edges);
    if (edges != 0) KJIT_CU_CHECK(d.cuGraphGetEdges(graph, from.data(), to.data(), nullptr, &edges));
    std::map<CUgraphNode, std::size_t> index;
    for (std::size_t k = 0; k < nodes.size(); ++k) index[nodes[k]] = k;
    std::vector<std::vector<std::size_t>> in(nodes.size());
    std::vector<std::size_t> pending(nodes.size(), 0);
    for (std::size_t e = 0; e < edges; ++e) {
        in[index.at(to[e])].push_back(index.at(from[e]));
        ++pending[index.at(to[e])];
    }
    Ordered o;
    std::vector<std::size_t> position(nodes.size(), SIZE_MAX);
    while (o.nodes.size() < nodes.size()) {
        bool progressed = false;
        for (std::size_t k = 0; k < nodes.size(); ++k) {
            if (position[k] != SIZE_MAX) continue;
            if (std::any_of(in[k].begin(), in[k].end(), [&](std::size_t p) { return position[p] == SIZE_MAX; })) continue;
            position[k] = o.nodes.size();
            o.nodes.push_back(nodes[k]);
            std::vector<std::size_t> after;
            for (std::size_t p : in[k]) after.push_back(position[p]);
            o.after.push_back(std::move(after));
            progressed = true;
        }
        if (!progressed) throw Error("Graph::save: the graph's dependencies form a cycle");
    }
    return o;
}

// The address ranges save() knows, each turned into a SavedAddress or refused.
class AddressBook {
public:
    struct Range {
        CUdeviceptr begin, end, base;
        SavedAddress::Into into;
        std::size_t index;
        std::string unnamed;  // set for memory the graph uses that no name covers
    };
    void add(Range r) { ranges_.push_back(std::move(r)); }
    // Graph memory freed by a step: its addresses may be handed out again within the graph, and
    // then belong to the later allocation.
    void retire_graph(std::size_t step) {
        std::erase_if(ranges_, [&](const Range& r) { return r.into == SavedAddress::Into::graph && r.index == step; });
    }
    // The range holding `v`: named arrays first, then graph memory, scratch, other kept memory.
    const Range* find(CUdeviceptr v) const {
        const Range* best = nullptr;
        for (const Range& r : ranges_)
            if (v >= r.begin && v < r.end && (best == nullptr || rank(r) < rank(*best))) best = &r;
        return best;
    }

private:
    static int rank(const Range& r) { return r.unnamed.empty() ? static_cast<int>(r.into) : 3; }
    std::vector<Range> ranges_;
};

std::string step_name(std::size_t k, const std::string& kernel) {
    return "step " + std::to_string(k) + (kernel.empty() ? std::string() : " (kernel '" + kernel + "')");
}

// Address `v`, found in range `r` of the book (nullptr: in none), as the saved graph names it.
SavedAddress resolve_in(const AddressBook::Range* r, CUdeviceptr v, std::size_t step, const std::string& kernel, std::vector<char>& used) {
    if (r == nullptr || !r->unnamed.empty())
        throw Error("Graph::save: " + step_name(step, kernel) + " uses " + (r ? r->unnamed : std::string("memory kjit does not know")) +
                    ", which save() was not given a name for: name every array the graph reads or writes");
    if (r->into == SavedAddress::Into::array) used[r->index] = 1;
    return SavedAddress{r->into, r->index, static_cast<std::int64_t>(v) - static_cast<std::int64_t>(r->base)};
}

SavedAddress resolve(const AddressBook& book, CUdeviceptr v, std::size_t step, const std::string& kernel, std::vector<char>& used) {
    return resolve_in(book.find(v), v, step, kernel, used);
}

// The launches kjit recorded, paired with the kernel nodes that hold them: same kernel, and the
// node's first parameter starts with the argument struct the launch passed.
std::vector<const detail::CapturedLaunch*> pair_launches(const std::vector<detail::CapturedLaunch>& launches,
                                                         const std::vector<const detail::KernelNodeArguments*>& kernels) {
    std::vector<const detail::CapturedLaunch*> paired(kernels.size(), nullptr);
    for (const detail::CapturedLaunch& l : launches)
        for (std::size_t k = 0; k < kernels.size(); ++k) {
            const detail::KernelNodeArguments* n = kernels[k];
            if (paired[k] != nullptr || n == nullptr || n->params.func != l.function || n->offsets.empty()) continue;
            if (n->sizes[0] < l.arguments.size() || std::memcmp(n->buffer.data() + n->offsets[0], l.arguments.data(), l.arguments.size()) != 0)
                continue;
            paired[k] = &l;
            break;
        }
    return paired;
}

}  // namespace

void Graph::save(const std::string& path, std::span<const NamedArray> arrays, std::span<const NamedScalar> scalars) const {
    if (!state_) throw Error("Graph::save: an empty Graph (default-constructed or moved from)");
    const State& st = *state_;
    detail::Driver& d = detail::driver_on(st.ordinal);
    const CUgraph source = st.latest ? st.latest : st.graph;
    SavedGraph g;
    AddressBook book;

    // Named arrays, checked as update() checks them.
    std::vector<std::pair<CUdeviceptr, CUdeviceptr>> named;
    for (std::size_t k = 0; k < arrays.size(); ++k) {
        const NamedArray& a = arrays[k];
        const auto fail = [&](const std::string& why) { throw Error("Graph::save: array '" + a.name + "': " + why); };
        if (a.name.empty()) throw Error("Graph::save: array " + std::to_string(k) + " has no name");
        for (std::size_t j = 0; j < k; ++j)
            if (arrays[j].name == a.name) fail("named twice");
        if (!a.array.valid() || a.array.size() == 0) fail("an empty Array");
        if (a.array.device() != Device::cuda(st.ordinal)) fail("on " + a.array.device().to_string() + ", the graph on cuda:" + std::to_string(st.ordinal));
        const auto [begin, end] = detail::address_range(a.array);
        for (std::size_t j = 0; j < named.size(); ++j)
            if (begin < named[j].second && named[j].first < end) fail("overlaps array '" + arrays[j].name + "'");
        named.emplace_back(begin, end);
        book.add({begin, end, reinterpret_cast<CUdeviceptr>(a.array.data()), SavedAddress::Into::array, k, {}});
        g.arrays.push_back({a.name, a.array.dtype(), a.array.shape(), a.array.strides(),
                            static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(a.array.data()) % 256)});
    }
    for (std::size_t k = 0; k < st.scratch.size(); ++k) {
        const auto base = reinterpret_cast<CUdeviceptr>(st.scratch[k]->data());
        book.add({base, base + st.scratch[k]->size(), base, SavedAddress::Into::scratch, k, {}});
        g.scratch.push_back(st.scratch[k]->size());
    }
    for (const std::shared_ptr<Buffer>& b : st.kept) {
        const auto base = reinterpret_cast<CUdeviceptr>(b->data());
        book.add({base, base + b->size(), base, SavedAddress::Into::array, 0,
                  "an array of " + std::to_string(b->size()) + " bytes on " + b->device().to_string()});
    }

    const Ordered order = dependency_order(d, source);
    // Kernel arguments as the executable graph has them now (update() with arrays patches them).
    detail::GraphArguments read = detail::read_graph_arguments(d, source);
    if (!read.unreadable.empty()) throw Error("Graph::save: " + read.unreadable + ", whose arguments cannot be read");
    std::map<CUgraphNode, const detail::KernelNodeArguments*> by_node;
    for (const detail::KernelNodeArguments& k : read.kernels) by_node[k.node] = &k;
    std::vector<const detail::KernelNodeArguments*> kernels(order.nodes.size(), nullptr);
    for (std::size_t k = 0; k < order.nodes.size(); ++k)
        if (const auto it = by_node.find(order.nodes[k]); it != by_node.end()) kernels[k] = it->second;
    const std::vector<const detail::CapturedLaunch*> launch_of = pair_launches(st.launches, kernels);
    std::map<CUgraphNode, const std::vector<std::byte>*> current;  // after update() with arrays
    if (st.arguments) {
        const std::vector<CUgraphNode> instantiated = detail::graph_nodes(d, st.graph), captured = detail::graph_nodes(d, source);
        for (const detail::KernelNodeArguments& k : st.arguments->kernels) {
            const auto at = std::find(instantiated.begin(), instantiated.end(), k.node);
            if (at != instantiated.end() && instantiated.size() == captured.size())
                current[captured[static_cast<std::size_t>(at - instantiated.begin())]] = &k.buffer;
        }
    }

    std::vector<char> used(arrays.size(), 0);
    std::map<CUdeviceptr, std::size_t> alloc_step;  // graph memory by its address
    const std::shared_ptr<cache::KernelCache> kernel_cache = cache::process_cache();
    if (!kernel_cache->settings().disk)
        throw Error("Graph::save: the kernel cache is in memory only (KJIT_CACHE_DISABLE): a loaded graph finds its kernels in a "
                    "cache folder, so save with a disk cache (KJIT_CACHE_DIR) and ship that cache");
    for (std::size_t k = 0; k < order.nodes.size(); ++k) {
        CUgraphNode node = order.nodes[k];
        CUgraphNodeType type;
        KJIT_CU_CHECK(d.cuGraphNodeGetType(node, &type));
        SavedStep s;
        s.after = order.after[k];
        switch (type) {
            case CU_GRAPH_NODE_TYPE_KERNEL: {
                if (kernels[k] == nullptr) throw Error("Graph::save: " + step_name(k, {}) + ": its kernel's arguments cannot be read");
                const detail::KernelNodeArguments& n = *kernels[k];
                detail::FunctionOrigin origin;
                if (n.params.func == nullptr || !detail::function_origin(n.params.func, origin))
                    throw Error("Graph::save: " + step_name(k, {}) + " launches a kernel kjit did not compile (a library's, such as "
                                "cuBLAS's in kjit::matmul, or a raw kernel from a binary image): it has no cache key to be saved by");
                const std::shared_ptr<const cache::Entry> entry =
                    cache::is_valid_key(origin.key) ? kernel_cache->find_key(origin.key, "", "") : nullptr;
                if (!entry)
                    throw Error("Graph::save: " + step_name(k, {}) + " launches '" + origin.entry + "', whose module is in no folder "
                                "of the kernel cache: a loaded graph finds its kernels there, so save with a disk cache "
                                "(KJIT_CACHE_DIR) and ship that cache");
                s.kind = SavedStep::Kind::kernel;
                s.kernel = entry->meta.kernel_name;
                s.key = origin.key;
                s.entry = origin.entry;
                s.grid = {n.params.gridDimX, n.params.gridDimY, n.params.gridDimZ};
                s.block = {n.params.blockDimX, n.params.blockDimY, n.params.blockDimZ};
                s.shared = n.params.sharedMemBytes;
                if (d.cuGraphKernelNodeGetAttribute != nullptr) {
                    CUkernelNodeAttrValue v{};
                    if (d.cuGraphKernelNodeGetAttribute(node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v) == CUDA_SUCCESS &&
                        std::uint64_t{v.clusterDim.x} * v.clusterDim.y * v.clusterDim.z > 1)
                        throw Error("Graph::save: " + step_name(k, s.kernel) + " launches thread block clusters, which saved graphs "
                                    "do not record yet");
                }
                const auto cur = current.find(node);
                s.bytes = cur != current.end() ? *cur->second : n.buffer;
                for (std::size_t i = 0; i < n.offsets.size(); ++i) {
                    s.params.emplace_back(n.offsets[i], n.sizes[i]);
                    for (std::size_t at = (n.offsets[i] + 7) / 8 * 8; at + 8 <= n.offsets[i] + n.sizes[i]; at += 8) {
                        CUdeviceptr v;
                        std::memcpy(&v, s.bytes.data() + at, 8);
                        const AddressBook::Range* r = book.find(v);
                        if (r == nullptr) continue;  // a value, not an address kjit knows
                        s.addresses.push_back({at, resolve_in(r, v, k, s.kernel, used)});
                    }
                }
                if (const detail::CapturedLaunch* l = launch_of[k]) {
                    for (std::size_t j = 0; j < scalars.size(); ++j) {
                        const jit::graphs::ScalarParameter p = jit::graphs::parse_scalar_parameter(scalars[j].parameter);
                        if (p.kernel != l->kernel || (p.call >= 0 && static_cast<std::size_t>(p.call) != l->call)) continue;
                        for (const detail::CapturedScalar& c : l->scalars)
                            if (c.parameter == p.parameter) s.scalars.push_back({n.offsets[0] + c.offset, j, c.dtype});
                    }
                }
                break;
            }
            case CU_GRAPH_NODE_TYPE_MEMSET: {
                CUDA_MEMSET_NODE_PARAMS p{};
                KJIT_CU_CHECK(d.cuGraphMemsetNodeGetParams(node, &p));
                s.kind = SavedStep::Kind::memset;
                s.to = resolve(book, p.dst, k, {}, used);
                s.value = p.value;
                s.element = p.elementSize;
                s.width = p.width;
                s.height = p.height;
                s.pitch = p.pitch;
                break;
            }
            case CU_GRAPH_NODE_TYPE_MEMCPY: {
                CUDA_MEMCPY3D p{};
                KJIT_CU_CHECK(d.cuGraphMemcpyNodeGetParams(node, &p));
                const auto device_memory = [](CUmemorytype t) { return t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED; };
                if (!device_memory(p.srcMemoryType) || !device_memory(p.dstMemoryType) || p.Height > 1 || p.Depth > 1 || p.srcY != 0 ||
                    p.srcZ != 0 || p.dstY != 0 || p.dstZ != 0)
                    throw Error("Graph::save: " + step_name(k, {}) + " is a copy to or from host memory, or a 2-D or 3-D copy, which "
                                "saved graphs do not hold");
                s.kind = SavedStep::Kind::copy;
                s.to = resolve(book, p.dstDevice + p.dstXInBytes, k, {}, used);
                s.from = resolve(book, p.srcDevice + p.srcXInBytes, k, {}, used);
                s.size = p.WidthInBytes;
                break;
            }
            case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
                CUDA_MEM_ALLOC_NODE_PARAMS p{};
                KJIT_CU_CHECK(d.cuGraphMemAllocNodeGetParams(node, &p));
                s.kind = SavedStep::Kind::alloc;
                s.size = p.bytesize;
                alloc_step[p.dptr] = g.steps.size();
                book.add({p.dptr, p.dptr + p.bytesize, p.dptr, SavedAddress::Into::graph, g.steps.size(), {}});
                break;
            }
            case CU_GRAPH_NODE_TYPE_MEM_FREE: {
                CUdeviceptr p = 0;
                KJIT_CU_CHECK(d.cuGraphMemFreeNodeGetParams(node, &p));
                const auto it = alloc_step.find(p);
                if (it == alloc_step.end())
                    throw Error("Graph::save: " + step_name(k, {}) + " frees memory the graph did not allocate, which a saved graph "
                                "cannot hold");
                s.kind = SavedStep::Kind::free;
                s.alloc = it->second;
                book.retire_graph(it->second);
                alloc_step.erase(it);
                break;
            }
            case CU_GRAPH_NODE_TYPE_EMPTY: s.kind = SavedStep::Kind::empty; break;
            default:
                throw Error("Graph::save: " + step_name(k, {}) + " is of a kind saved graphs do not hold (an event, host, child-graph "
                            "or conditional step; node type " + std::to_string(static_cast<int>(type)) + ")");
        }
        g.steps.push_back(std::move(s));
    }
    for (std::size_t k = 0; k < arrays.size(); ++k)
        if (!used[k]) throw Error("Graph::save: array '" + arrays[k].name + "' is not one the graph's steps use");
    for (std::size_t j = 0; j < scalars.size(); ++j) {
        const NamedScalar& sc = scalars[j];
        jit::graphs::parse_scalar_parameter(sc.parameter);  // an Error for a malformed one
        if (sc.name.empty()) throw Error("Graph::save: scalar " + std::to_string(j) + " has no name");
        for (std::size_t k = 0; k < j; ++k)
            if (scalars[k].name == sc.name) throw Error("Graph::save: scalar '" + sc.name + "' named twice");
        for (const NamedArray& a : arrays)
            if (a.name == sc.name) throw Error("Graph::save: '" + sc.name + "' names an array and a scalar");
        const bool found = std::any_of(g.steps.begin(), g.steps.end(), [&](const SavedStep& s) {
            return std::any_of(s.scalars.begin(), s.scalars.end(), [&](const auto& slot) { return slot.scalar == j; });
        });
        if (!found) {
            std::string known;
            for (const detail::CapturedLaunch& l : st.launches)
                for (const detail::CapturedScalar& c : l.scalars) {
                    const std::string p = l.kernel + "." + c.parameter;
                    if (known.find(p) == std::string::npos) known += (known.empty() ? "" : ", ") + p;
                }
            throw Error("Graph::save: scalar '" + sc.name + "' (" + sc.parameter + ") is no scalar parameter of a kjit call in the graph" +
                        (known.empty() ? std::string(" (its kjit calls take no scalars)") : "; the graph's are " + known));
        }
        g.scalars.push_back({sc.name, sc.parameter});
    }
    const std::string text = jit::graphs::write_saved_graph(g);
    const std::string failed = cache::replace_file(path, text, 0644, cache::ModeIs::less_umask, false);
    if (!failed.empty()) throw IoError("Graph::save: writing " + path + ": " + failed);
}

namespace {

// Owns a graph being built, destroyed unless released.
struct GraphOwner {
    detail::Driver& d;
    CUgraph graph = nullptr;
    ~GraphOwner() {
        if (graph != nullptr) d.cuGraphDestroy(graph);
    }
};

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw IoError("Graph::load: cannot open " + path);
    std::string text;
    char chunk[65536];
    while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
        text.append(chunk, static_cast<std::size_t>(in.gcount()));
        if (text.size() > kMaxFileBytes) throw Error("Graph::load: " + path + " is larger than a saved graph can be (64 MiB)");
    }
    if (in.bad()) throw IoError("Graph::load: reading " + path + " failed");
    return text;
}

}  // namespace

Graph Graph::load(const std::string& path, const Stream& stream, std::span<const NamedArray> arrays, std::span<const ScalarValue> scalars) {
    const SavedGraph g = jit::graphs::read_saved_graph(read_text_file(path), path);
    if (!stream.device().is_cuda()) throw Error("Graph::load: " + path + ": a graph loads onto a CUDA device's stream");
    const int ordinal = stream.device().ordinal();
    detail::Driver& d = detail::driver_on(ordinal);
    const int cc = detail::device_attributes(ordinal).compute_capability();
    auto state = std::make_shared<State>();
    state->ordinal = ordinal;
    const std::string where = "Graph::load: " + path + ": ";

    // Arrays: every saved name bound once, to an array like the one saved.
    std::vector<CUdeviceptr> array_base(g.arrays.size(), 0);
    for (const NamedArray& a : arrays)
        if (std::none_of(g.arrays.begin(), g.arrays.end(), [&](const jit::graphs::SavedArray& s) { return s.name == a.name; }))
            throw Error(where + "it names no array '" + a.name + "'");
    for (std::size_t k = 0; k < g.arrays.size(); ++k) {
        const jit::graphs::SavedArray& s = g.arrays[k];
        const NamedArray* given = nullptr;
        for (const NamedArray& a : arrays)
            if (a.name == s.name) {
                if (given != nullptr) throw Error(where + "array '" + s.name + "' given twice");
                given = &a;
            }
        std::string saved = std::string(s.dtype.name()) + " of shape (";
        for (std::size_t i = 0; i < s.shape.size(); ++i) saved += (i ? ", " : "") + std::to_string(s.shape[i]);
        saved += ")";
        if (given == nullptr) throw Error(where + "array '" + s.name + "' (" + saved + ") was not given");
        const Array& a = given->array;
        if (!a.valid() || a.device() != Device::cuda(ordinal))
            throw Error(where + "array '" + s.name + "' must be on cuda:" + std::to_string(ordinal));
        if (a.dtype() != s.dtype || a.shape() != s.shape || std::vector<std::int64_t>(a.strides().begin(), a.strides().end()) != s.strides)
            throw Error(where + "array '" + s.name + "' must have the dtype, shape and strides of the one saved (" + saved + "), not " +
                        a.to_string());
        const auto address = reinterpret_cast<std::uintptr_t>(a.data());
        if (address % 256 != s.align)
            throw Error(where + "array '" + s.name + "' is " + std::to_string(address % 256) + " bytes past a 256-byte boundary, the saved " +
                        "one " + std::to_string(s.align) + ": kernels chosen for one alignment may not run on the other");
        array_base[k] = reinterpret_cast<CUdeviceptr>(a.data());
        if (std::find(state->kept.begin(), state->kept.end(), a.buffer()) == state->kept.end()) state->kept.push_back(a.buffer());
    }
    for (std::size_t k = 0; k < arrays.size(); ++k)
        for (std::size_t j = 0; j < k; ++j) {
            const auto a = detail::address_range(arrays[k].array), b = detail::address_range(arrays[j].array);
            if (a.first < b.second && b.first < a.second)
                throw Error(where + "arrays '" + arrays[j].name + "' and '" + arrays[k].name + "' overlap in memory; give each its own");
        }
    // Scalars given by name; the others keep their saved bytes.
    std::vector<const Scalar*> scalar_value(g.scalars.size(), nullptr);
    for (const ScalarValue& v : scalars) {
        std::size_t k = 0;
        while (k < g.scalars.size() && g.scalars[k].name != v.name) ++k;
        if (k == g.scalars.size()) throw Error(where + "it names no scalar '" + v.name + "'");
        if (scalar_value[k] != nullptr) throw Error(where + "scalar '" + v.name + "' given twice");
        scalar_value[k] = &v.value;
    }
    // Scratch: fresh, zeroed (a reduction's workspace starts with a zero counter).
    std::vector<CUdeviceptr> scratch_base;
    for (std::size_t bytes : g.scratch) {
        std::shared_ptr<Buffer> b = Buffer::allocate_device(bytes, stream);
        KJIT_CU_CHECK(d.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(b->data()), 0, bytes, stream.handle()));
        scratch_base.push_back(reinterpret_cast<CUdeviceptr>(b->data()));
        state->scratch.push_back(b.get());
        state->kept.push_back(std::move(b));
    }
    // Kernels, each module loaded once from the cache.
    std::map<std::string, std::shared_ptr<detail::LoadedModule>> modules;
    for (const SavedStep& s : g.steps) {
        if (s.kind != SavedStep::Kind::kernel || modules.count(s.key)) continue;
        std::shared_ptr<detail::LoadedModule> m = jit::compile::load_cached_program(s.key, ordinal, cc, "", {});
        if (!m)
            throw Error(where + "kernel '" + s.kernel + "' (cache key " + s.key + ") is in no folder of the kernel cache with a cubin "
                        "for compute capability " + std::to_string(cc / 10) + "." + std::to_string(cc % 10) +
                        ": use the cache the graph was saved with (KJIT_CACHE_DIR, or a read-only folder of it)");
        modules[s.key] = m;
        state->modules.push_back(m);
    }

    GraphOwner owner{d};
    KJIT_CU_CHECK(d.cuGraphCreate(&owner.graph, 0));
    CUcontext context = nullptr;
    KJIT_CU_CHECK(d.cuCtxGetCurrent(&context));
    std::vector<CUgraphNode> nodes;
    std::vector<CUdeviceptr> alloc_base(g.steps.size(), 0);
    const auto address_of = [&](const SavedAddress& a) -> CUdeviceptr {
        switch (a.into) {
            case SavedAddress::Into::array: return array_base[a.index] + static_cast<CUdeviceptr>(a.offset);
            case SavedAddress::Into::graph: return alloc_base[a.index] + static_cast<CUdeviceptr>(a.offset);
            case SavedAddress::Into::scratch: return scratch_base[a.index] + static_cast<CUdeviceptr>(a.offset);
        }
        return 0;
    };
    for (std::size_t k = 0; k < g.steps.size(); ++k) {
        const SavedStep& s = g.steps[k];
        std::vector<CUgraphNode> deps;
        for (std::size_t a : s.after) deps.push_back(nodes[a]);
        CUgraphNode node = nullptr;
        switch (s.kind) {
            case SavedStep::Kind::kernel: {
                CUfunction f = modules.at(s.key)->function(s.entry);
                // The file's parameter layout must be the kernel's: the driver reads each
                // parameter's full size from its pointer.
                std::size_t count = 0;
                for (;; ++count) {
                    std::size_t offset = 0, size = 0;
                    const CUresult r = d.cuFuncGetParamInfo(f, count, &offset, &size);
                    if (r == CUDA_ERROR_INVALID_VALUE) break;
                    KJIT_CU_CHECK(r);
                    if (count >= s.params.size() || s.params[count] != std::pair{offset, size})
                        throw Error(where + "step " + std::to_string(k) + " (kernel '" + s.kernel + "'): its parameters in the file are not "
                                    "those of the kernel in the cache; the file is damaged or from another build of it");
                }
                if (count != s.params.size())
                    throw Error(where + "step " + std::to_string(k) + " (kernel '" + s.kernel + "'): the file lists " +
                                std::to_string(s.params.size()) + " parameters, the kernel has " + std::to_string(count));
                if (s.shared > 48 * 1024)
                    KJIT_CU_CHECK(d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(s.shared)));
                std::vector<std::byte> bytes = s.bytes;
                for (const jit::graphs::SavedRelocation& r : s.addresses) {
                    const CUdeviceptr v = address_of(r.address);
                    std::memcpy(bytes.data() + r.at, &v, 8);
                }
                for (const jit::graphs::SavedScalarSlot& slot : s.scalars)
                    if (const Scalar* v = scalar_value[slot.scalar]) {
                        const Scalar cast = v->cast(slot.dtype);
                        std::memcpy(bytes.data() + slot.at, cast.data(), slot.dtype.itemsize());
                    }
                std::vector<void*> params;
                for (const auto& [offset, size] : s.params) params.push_back(bytes.data() + offset);
                CUDA_KERNEL_NODE_PARAMS p{};
                p.func = f;
                p.gridDimX = s.grid[0], p.gridDimY = s.grid[1], p.gridDimZ = s.grid[2];
                p.blockDimX = s.block[0], p.blockDimY = s.block[1], p.blockDimZ = s.block[2];
                p.sharedMemBytes = s.shared;
                p.kernelParams = params.data();
                // The driver copies the parameters when the node is added.
                KJIT_CU_CHECK(d.cuGraphAddKernelNode(&node, owner.graph, deps.data(), deps.size(), &p));
                break;
            }
            case SavedStep::Kind::memset: {
                CUDA_MEMSET_NODE_PARAMS p{};
                p.dst = address_of(s.to);
                p.value = s.value;
                p.elementSize = s.element;
                p.width = s.width;
                p.height = s.height;
                p.pitch = s.pitch;
                KJIT_CU_CHECK(d.cuGraphAddMemsetNode(&node, owner.graph, deps.data(), deps.size(), &p, context));
                break;
            }
            case SavedStep::Kind::copy: {
                CUDA_MEMCPY3D p{};
                p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
                p.srcDevice = address_of(s.from);
                p.dstDevice = address_of(s.to);
                p.WidthInBytes = s.size;
                p.Height = p.Depth = 1;
                KJIT_CU_CHECK(d.cuGraphAddMemcpyNode(&node, owner.graph, deps.data(), deps.size(), &p, context));
                break;
            }
            case SavedStep::Kind::alloc: {
                CUDA_MEM_ALLOC_NODE_PARAMS p{};
                p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
                p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
                p.poolProps.location.id = ordinal;
                p.bytesize = s.size;
                KJIT_CU_CHECK(d.cuGraphAddMemAllocNode(&node, owner.graph, deps.data(), deps.size(), &p));
                alloc_base[k] = p.dptr;
                break;
            }
            case SavedStep::Kind::free:
                KJIT_CU_CHECK(d.cuGraphAddMemFreeNode(&node, owner.graph, deps.data(), deps.size(), alloc_base[s.alloc]));
                break;
            case SavedStep::Kind::empty:
                KJIT_CU_CHECK(d.cuGraphAddEmptyNode(&node, owner.graph, deps.data(), deps.size()));
                break;
        }
        nodes.push_back(node);
    }
    KJIT_CU_CHECK(d.cuGraphInstantiateWithFlags(&state->exec, owner.graph, 0));
    state->graph = owner.graph;
    owner.graph = nullptr;
    stream.synchronize();  // the scratch memsets done before any replay, on whatever stream
    return detail::GraphAccess::make(std::move(state));
}

}  // namespace kjit
