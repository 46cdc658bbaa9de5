// Scans on host arrays: the loop around a scan's compiled pieces (its map folds one element into
// the running value, its post writes an output), in libkjit. jit/kernels/scan/call.cpp binds the
// call, allocates the output and comes here to run.
//
// Each row is scanned in order, element 0 first: running = reduce(running, map(element)), from
// identity(); rows are spread over the pool, a row stays on one thread. Floating-point results are
// those of that left-to-right order, so they may differ in the last bits from the GPU's grouping.
#pragma once

#include <cstdint>
#include <vector>

#include "jit/host/host_backend.hpp"

namespace kjit::jit::host {

// A scan's iteration, as the GPU launcher and the host loop both take it: the rows, C order over
// kept_shape, row r's first element at element offset sum(coordinate[d] * in_kept[d]) from the
// input pointer (out_kept for the output); each row `length` elements at in_step / out_step.
struct ScanRows {
    std::vector<std::int64_t> kept_shape, in_kept, out_kept;
    std::int64_t length = 0;
    std::int64_t in_step = 0;
    std::int64_t out_step = 0;
    std::int64_t rows() const {
        std::int64_t r = 1;
        for (const std::int64_t e : kept_shape) r *= e;
        return r;
    }
};

struct HostScan {
    const ReductionCode* code = nullptr;  // from compile_reduction_on_host (has an identity)
    std::size_t value_size = 0;           // the scan type's itemsize
    const unsigned char* args = nullptr;  // the argument struct: the input's and output's first elements
    const ScanRows* rows = nullptr;
    bool exclusive = false;
    // A segmented scan (one row): the sorted element indices where the scan restarts.
    const std::int64_t* heads = nullptr;
    std::int64_t head_count = 0;
};

// Runs the scan over the pool; returns when every output element is written.
void run_scan_on_host(const HostScan& s);

}  // namespace kjit::jit::host
