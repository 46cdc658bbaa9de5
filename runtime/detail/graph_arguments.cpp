#include "runtime/detail/graph_arguments.hpp"

#include <algorithm>
#include <cstring>

#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit::detail {

namespace {

constexpr std::size_t kWord = sizeof(CUdeviceptr);

// Calls `f(position, value)` for each aligned word of `bytes` (position within `bytes`).
template <class F>
void for_each_word(std::span<const std::byte> bytes, std::size_t offset, F&& f) {
    std::size_t k = (kWord - offset % kWord) % kWord;
    for (; k + kWord <= bytes.size(); k += kWord) {
        CUdeviceptr value;
        std::memcpy(&value, bytes.data() + k, kWord);
        f(k, value);
    }
}

// The bytes a 3-D copy's side reads or writes, from its base (a bound, not the exact set of rows).
std::pair<CUdeviceptr, CUdeviceptr> copy_side(CUdeviceptr base, std::size_t x, std::size_t y, std::size_t z, std::size_t pitch,
                                              std::size_t height, const CUDA_MEMCPY3D& c) {
    const std::size_t row = pitch != 0 ? pitch : c.WidthInBytes;
    const std::size_t rows = height != 0 ? height : c.Height;
    const CUdeviceptr first = base + x + row * (y + rows * z);
    const std::size_t span = row * (rows * (c.Depth > 0 ? c.Depth - 1 : 0) + (c.Height > 0 ? c.Height - 1 : 0)) + c.WidthInBytes;
    return {first, first + span};
}

bool is_device_side(CUmemorytype t) { return t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED; }

KernelNodeArguments read_kernel_node(Driver& d, CUgraphNode node, std::string& unreadable) {
    KernelNodeArguments k;
    k.node = node;
    KJIT_CU_CHECK(d.cuGraphKernelNodeGetParams(node, &k.params));
    if (k.params.extra != nullptr) {
        unreadable = "a kernel node passes its arguments packed (CU_LAUNCH_PARAM_BUFFER_POINTER)";
        return k;
    }
    CUfunction f = k.params.func;
    if (f == nullptr && k.params.kern != nullptr) KJIT_CU_CHECK(d.cuKernelGetFunction(&f, k.params.kern));
    if (k.params.kernelParams == nullptr) {  // no arguments at all, or none the driver shows
        std::size_t offset = 0, size = 0;
        if (d.cuFuncGetParamInfo(f, 0, &offset, &size) != CUDA_ERROR_INVALID_VALUE)
            unreadable = "a kernel node's arguments cannot be read";
        return k;
    }
    for (std::size_t i = 0;; ++i) {
        std::size_t offset = 0, size = 0;
        const CUresult r = d.cuFuncGetParamInfo(f, i, &offset, &size);
        if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
        KJIT_CU_CHECK(r);
        k.offsets.push_back(offset);
        k.sizes.push_back(size);
    }
    std::size_t end = 0;
    for (std::size_t i = 0; i < k.offsets.size(); ++i) end = std::max(end, k.offsets[i] + k.sizes[i]);
    k.buffer.resize(end);
    for (std::size_t i = 0; i < k.offsets.size(); ++i) {
        std::memcpy(k.buffer.data() + k.offsets[i], k.params.kernelParams[i], k.sizes[i]);
        k.pointers.push_back(k.buffer.data() + k.offsets[i]);
    }
    k.params.kernelParams = k.pointers.data();
    return k;
}

}  // namespace

std::size_t move_addresses(std::span<std::byte> bytes, std::size_t offset, std::span<const AddressMove> moves,
                           std::vector<char>* matched) {
    if (moves.empty()) return 0;
    const CUdeviceptr lowest = moves.front().begin;
    std::size_t moved = 0;
    for_each_word(bytes, offset, [&](std::size_t k, CUdeviceptr value) {
        if (value < lowest) return;
        // The last move that begins at or before the value: the only one that may hold it.
        const auto after = std::upper_bound(moves.begin(), moves.end(), value,
                                            [](CUdeviceptr v, const AddressMove& m) { return v < m.begin; });
        const AddressMove& m = *(after - 1);
        if (value >= m.end) return;
        const CUdeviceptr now = m.to + (value - m.begin);
        std::memcpy(bytes.data() + k, &now, kWord);
        if (matched != nullptr) (*matched)[static_cast<std::size_t>(&m - moves.data())] = 1;
        ++moved;
    });
    return moved;
}

bool holds_address_in(std::span<const std::byte> bytes, std::size_t offset, CUdeviceptr begin, CUdeviceptr end) {
    bool found = false;
    for_each_word(bytes, offset, [&](std::size_t, CUdeviceptr value) { found = found || (value >= begin && value < end); });
    return found;
}

bool kernels_use(const GraphArguments& arguments, CUdeviceptr begin, CUdeviceptr end) {
    for (const KernelNodeArguments& node : arguments.kernels)
        for (std::size_t i = 0; i < node.offsets.size(); ++i)
            if (holds_address_in(std::span<const std::byte>(node.buffer.data() + node.offsets[i], node.sizes[i]), node.offsets[i], begin, end))
                return true;
    return false;
}

GraphArguments read_graph_arguments(Driver& d, CUgraph graph) {
    GraphArguments out;
    std::size_t count = 0;
    KJIT_CU_CHECK(d.cuGraphGetNodes(graph, nullptr, &count));
    std::vector<CUgraphNode> nodes(count);
    if (count != 0) KJIT_CU_CHECK(d.cuGraphGetNodes(graph, nodes.data(), &count));
    for (CUgraphNode node : nodes) {
        CUgraphNodeType type;
        KJIT_CU_CHECK(d.cuGraphNodeGetType(node, &type));
        switch (type) {
            case CU_GRAPH_NODE_TYPE_KERNEL:
                out.kernels.push_back(read_kernel_node(d, node, out.unreadable));
                break;
            case CU_GRAPH_NODE_TYPE_MEMCPY: {
                CUDA_MEMCPY3D c{};
                KJIT_CU_CHECK(d.cuGraphMemcpyNodeGetParams(node, &c));
                if (is_device_side(c.srcMemoryType))
                    out.copy_ranges.push_back(copy_side(c.srcDevice, c.srcXInBytes, c.srcY, c.srcZ, c.srcPitch, c.srcHeight, c));
                if (is_device_side(c.dstMemoryType))
                    out.copy_ranges.push_back(copy_side(c.dstDevice, c.dstXInBytes, c.dstY, c.dstZ, c.dstPitch, c.dstHeight, c));
                break;
            }
            case CU_GRAPH_NODE_TYPE_MEMSET: {
                CUDA_MEMSET_NODE_PARAMS m{};
                KJIT_CU_CHECK(d.cuGraphMemsetNodeGetParams(node, &m));
                const std::size_t rows = m.height > 0 ? m.height - 1 : 0;
                out.copy_ranges.emplace_back(m.dst, m.dst + m.pitch * rows + std::size_t{m.width} * m.elementSize);
                break;
            }
            case CU_GRAPH_NODE_TYPE_GRAPH:
                out.unreadable = "the graph holds a child graph";
                break;
            default:  // memory allocation and free, events, host nodes: no array addresses of the user's
                break;
        }
    }
    return out;
}

std::vector<CUgraphNode> graph_nodes(Driver& d, CUgraph graph) {
    std::size_t count = 0;
    KJIT_CU_CHECK(d.cuGraphGetNodes(graph, nullptr, &count));
    std::vector<CUgraphNode> nodes(count);
    if (count != 0) KJIT_CU_CHECK(d.cuGraphGetNodes(graph, nodes.data(), &count));
    return nodes;
}

}  // namespace kjit::detail
