// Counts heap allocations made by the calling thread while a CountAllocations object lives
// (tests/allocation_counter.cpp replaces the global operator new to do it; in sanitizer builds it
// does not, and counts nothing).
#pragma once

#include <cstddef>

namespace kjit::test {

class CountAllocations {
public:
    CountAllocations();
    ~CountAllocations();
    std::size_t count() const;

private:
    std::size_t start_;
};

}  // namespace kjit::test
