#include "allocation_counter.hpp"

#include <cstdlib>
#include <new>

namespace {
thread_local std::size_t t_allocations = 0;
thread_local int t_counting = 0;
}  // namespace

// Sanitizer builds keep their own operator new (AddressSanitizer checks that new and delete
// match); the test that counts is not part of their run ("[nvrtc]" is left out there).
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
namespace {
void* allocate(std::size_t n) noexcept {
    if (t_counting) ++t_allocations;
    return std::malloc(n == 0 ? 1 : n);
}
void* allocate_or_throw(std::size_t n) {
    if (void* p = allocate(n)) return p;
    throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t n) { return allocate_or_throw(n); }
void* operator new[](std::size_t n) { return allocate_or_throw(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#endif

namespace kjit::test {
CountAllocations::CountAllocations() : start_(t_allocations) { ++t_counting; }
CountAllocations::~CountAllocations() { --t_counting; }
std::size_t CountAllocations::count() const { return t_allocations - start_; }
}  // namespace kjit::test
