#include "allocation_counter.hpp"

#include <cstdlib>
#include <new>

namespace {
thread_local std::size_t t_allocations = 0;
thread_local int t_counting = 0;

void* allocate(std::size_t n) {
    if (t_counting) ++t_allocations;
    if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
    throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t n) { return allocate(n); }
void* operator new[](std::size_t n) { return allocate(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace kjit::test {
CountAllocations::CountAllocations() : start_(t_allocations) { ++t_counting; }
CountAllocations::~CountAllocations() { --t_counting; }
std::size_t CountAllocations::count() const { return t_allocations - start_; }
}  // namespace kjit::test
