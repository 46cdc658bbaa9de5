// The driver's own first-module costs, paid ahead on another thread.
//
// A fresh process's first kernel call pays the driver more than later ones do for the same
// steps: on the H200 host (docs/PERFORMANCE.md) the first module load took 77 us against 53 for a
// second kernel's, asking for its function 25 against 18, its launch 22 against 12. Part of that
// is the driver's code and data touched for the first time in the process, part once-per-context
// state. Loading a module, any module, pays some of it, on the warm start's thread
// (jit/warm_start.hpp) while the application goes on. kjit carries one for the purpose: an empty
// kernel as machine code for every architecture its nvcc targets (runtime/detail/warm_up_kernel.cu).
#pragma once

namespace kjit::detail {

class Driver;

// Waits until `driver` has made device `ordinal`'s primary context (the thread that makes it is
// busy for 100 ms or more), then loads the warm-up module into it and asks for its function
// (which, with CUDA's lazy loading, puts its code on the GPU). No launch: on the H200 host a
// launch as well gained nothing more (docs/PERFORMANCE.md), and it would queue work on the
// device. The module stays loaded (a few hundred bytes of device memory) for the context's life.
// True when every step succeeded; false, and nothing left half done, when one failed, when the
// context was never made, or when libkjit was built without the module (no nvcc). Never throws.
// Only for the process's driver (Driver::is_process_driver), which outlives the calling thread.
bool warm_up_driver(Driver& driver, int ordinal) noexcept;

// Whether warm_up_driver() has succeeded in this process (tests, diagnostics).
bool driver_warmed_up() noexcept;

}  // namespace kjit::detail
