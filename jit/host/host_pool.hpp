// The threads host kernels run on: a small pool (hardware_concurrency threads, or
// $KJIT_HOST_THREADS), and work cut into chunks of a fixed number of elements. The chunks do not
// depend on the thread count, so a reduction that combines per-chunk results in chunk order gives
// the same bits with one thread or sixteen.
#pragma once

#include <cstdint>
#include <functional>

namespace kjit::jit::host {

// Elements per chunk: large enough that a chunk's work dwarfs handing it out, small enough that
// every core gets several chunks of a few-megabyte array.
constexpr std::int64_t kChunkElements = std::int64_t{1} << 15;

// The number of threads work is spread over (the calling thread included).
int host_threads();

// Runs body(chunk) for chunk in [0, chunks), spread over the pool; returns when all are done.
// The first exception thrown by a body is rethrown here. When the pool is busy (another thread's
// call, or a call from inside a body) the chunks run on the calling thread.
void parallel_chunks(std::int64_t chunks, const std::function<void(std::int64_t)>& body);

// While one is alive on a thread, parallel_chunks called from that thread runs every chunk on it,
// in increasing or decreasing chunk order: tests check that results do not depend on which thread
// runs which chunk, nor when.
class ScopedSerialChunks {
public:
    explicit ScopedSerialChunks(bool reversed);
    ~ScopedSerialChunks();
    ScopedSerialChunks(const ScopedSerialChunks&) = delete;
    ScopedSerialChunks& operator=(const ScopedSerialChunks&) = delete;

private:
    int previous_;
};

}  // namespace kjit::jit::host
