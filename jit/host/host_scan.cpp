#include "jit/host/host_scan.hpp"

#include <algorithm>
#include <cstring>

#include "jit/host/host_pool.hpp"
#include "kjit/error.hpp"

namespace kjit::jit::host {

namespace {

constexpr std::size_t kMaxValue = 64;  // a dtype, or a struct of at most 64 bytes

// Row r's first elements in the input and the output.
void row_offsets(const ScanRows& s, std::int64_t r, std::int64_t& in, std::int64_t& out) {
    in = out = 0;
    for (std::size_t d = s.kept_shape.size(); d-- > 0;) {
        const std::int64_t c = r % s.kept_shape[d];
        r /= s.kept_shape[d];
        in += c * s.in_kept[d];
        out += c * s.out_kept[d];
    }
}

void scan_row(const HostScan& s, std::int64_t r) {
    // The running value sits in lane 0 of the fold's lanes: a fold of one element is then exactly
    // running = reduce(running, map(element)).
    alignas(16) unsigned char acc[kReduceLanes * kMaxValue] = {};
    unsigned char ok[kReduceLanes] = {};
    alignas(16) unsigned char identity[kMaxValue] = {};
    s.code->identity(identity);
    std::memcpy(acc, identity, s.value_size);
    ok[0] = 1;
    const ScanRows& rows = *s.rows;
    std::int64_t in0, out0;
    row_offsets(rows, r, in0, out0);
    const std::int64_t stride = rows.in_step;
    std::int64_t next_head = 0;  // index into heads
    for (std::int64_t e = 0; e < rows.length; ++e) {
        if (s.heads != nullptr) {
            bool head = false;
            for (; next_head < s.head_count && s.heads[next_head] <= e; ++next_head)
                if (s.heads[next_head] == e) head = true;
            if (head) std::memcpy(acc, identity, s.value_size);
        }
        const std::int64_t in = in0 + e * rows.in_step, out = out0 + e * rows.out_step;
        if (s.exclusive) s.code->post(s.args, &out, acc, e, rows.length);
        s.code->fold(s.args, &in, &stride, 1, e, rows.length, acc, ok);
        if (!s.exclusive) s.code->post(s.args, &out, acc, e, rows.length);
    }
}

}  // namespace

void run_scan_on_host(const HostScan& s) {
    if (s.code == nullptr || s.code->identity == nullptr) throw Error("host scan: the scan has no identity");
    if (s.value_size > kMaxValue) throw Error("host scan: a scan type of " + std::to_string(s.value_size) + " bytes");
    const std::int64_t rows = s.rows->rows(), length = s.rows->length;
    if (rows == 0 || length == 0) return;
    // Whole rows per chunk, about kChunkElements elements each.
    const std::int64_t per_chunk = std::max<std::int64_t>(1, kChunkElements / std::max<std::int64_t>(1, length));
    const std::int64_t chunks = (rows + per_chunk - 1) / per_chunk;
    parallel_chunks(chunks, [&](std::int64_t c) {
        const std::int64_t end = std::min(rows, (c + 1) * per_chunk);
        for (std::int64_t r = c * per_chunk; r < end; ++r) scan_row(s, r);
    });
}

}  // namespace kjit::jit::host
