// The kernel arguments of an instantiated graph, read once and patched in place, for
// Graph::update with arrays: every captured launch (kjit's, a raw kernel's, cuBLAS's) passed its
// arrays as device addresses inside its arguments, so moving a graph to new arrays is moving those
// addresses and setting the changed nodes' parameters on the executable graph (no capture, no
// instantiation).
//
// An address is recognised by value: an 8-byte word, 8-byte aligned in the parameter buffer,
// whose value lies inside the memory of an array being replaced. Graph memory and the other arrays'
// memory are never touched, and a scalar argument whose bits equal a device address inside one of
// the replaced arrays is the only thing this can mistake (a 64-bit integer that is such an address
// is in all likelihood one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <cuda.h>

namespace kjit::detail {

class Driver;

// Addresses in [begin, end) move to [to, to + (end - begin)).
struct AddressMove {
    CUdeviceptr begin = 0, end = 0, to = 0;
};

// Moves the addresses in one argument buffer of `bytes`, whose first byte sits at `offset` in its
// kernel's parameter buffer (so alignment is judged there). `moves` are sorted by `begin` and do
// not overlap; matched[m], when given, is set for each move m that some word fell in. Returns how
// many words moved.
std::size_t move_addresses(std::span<std::byte> bytes, std::size_t offset, std::span<const AddressMove> moves,
                           std::vector<char>* matched = nullptr);

// Whether any 8-byte aligned word of `bytes` (at `offset`) lies in [begin, end).
bool holds_address_in(std::span<const std::byte> bytes, std::size_t offset, CUdeviceptr begin, CUdeviceptr end);

// One kernel node of a graph with a copy of its arguments, laid out as the parameter buffer
// (cuFuncGetParamInfo gives each one's offset and size).
struct KernelNodeArguments {
    CUgraphNode node = nullptr;
    CUDA_KERNEL_NODE_PARAMS params{};  // kernelParams points into `pointers`
    std::vector<std::byte> buffer;
    std::vector<std::size_t> offsets, sizes;
    std::vector<void*> pointers;       // pointers[i] == buffer.data() + offsets[i]
};

// What Graph::update needs of a graph: its kernel nodes' arguments, and the address ranges that
// copy and memset nodes use (which it cannot move: their nodes are not patched).
struct GraphArguments {
    std::vector<KernelNodeArguments> kernels;
    std::vector<std::pair<CUdeviceptr, CUdeviceptr>> copy_ranges;  // [begin, end) read or written by copies and memsets
    std::string unreadable;  // why some node's arguments cannot be read (empty when all can)
};

// Whether some kernel argument holds an address in [begin, end).
bool kernels_use(const GraphArguments& arguments, CUdeviceptr begin, CUdeviceptr end);

// Reads the graph's nodes (driver calls only, no GPU work). Throws CudaError on a driver failure.
GraphArguments read_graph_arguments(Driver& d, CUgraph graph);

// The graph's nodes, in the driver's order (cuGraphGetNodes).
std::vector<CUgraphNode> graph_nodes(Driver& d, CUgraph graph);

}  // namespace kjit::detail
