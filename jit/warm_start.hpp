// A fresh process's first kernel call, readied while the driver creates the first context.
//
// Creating a device's primary context takes the driver 100 ms or more, most of it waiting on
// the device. The first call of a cached kernel after it takes about a quarter of a millisecond
// on the H200 host, and part of that is kjit's own once-per-process work, all of it cold: the
// process's kernel cache (the environment, a stat and an access check of each folder), kjit's
// build ID, a stat of libnvrtc, and page faults on libkjit's code; then reading the kernel's
// note, a file of its own. Most of it depends on no kernel, and the notes a folder wrote last
// are the ones a program's first calls read. So when kjit is about to create a primary context
// (not when the application's is already active: then there is nothing to overlap), it starts
// one short-lived thread that does that work beside the driver, and the first call finds it done:
//  - the process's kernel cache is made from the settings the environment gives at that moment;
//    the first call takes it only if the environment then still gives the same settings;
//  - kjit's build ID is read (plan notes are named with it);
//  - the notes the writable folder wrote last are read into that cache (up to 16, 1 MB), so that
//    a first call that wants one of them opens no file (cache/recent_notes.hpp);
//  - the NVRTC file that the writable folder's record names is `stat`ed, and the next plan
//    note's identity check of that path takes this `stat` instead of making its own;
//  - every page of libkjit's code and read-only data is read once, so that the kernel maps them;
//  - the entries those notes carry are checked, and once the driver has made the context (the
//    runtime's on_context_created news), their modules are loaded onto the device
//    (jit/module_preload.hpp), so that the first calls find their kernels loaded or loading.
// The thread reads no environment variable: getenv racing an application's setenv is undefined
// behaviour, so what it needs is read before it starts. A process that exits or forks while it
// runs tells it to load no further module, and waits for it (at most the module load under way,
// or the file work of about a millisecond): exit must not destroy what it uses, and a child must
// not inherit a lock it holds.
//
// KJIT_WARM_START=0 turns it off; KJIT_WARM_START=files does all but load the modules.
#pragma once

namespace kjit::jit {

// Starts the thread described above, once per process; later calls do nothing. Never throws:
// a thread that cannot be started is only a lost head start. Installed as the runtime's
// context-creation hook when libkjit loads.
void start_warm_start() noexcept;

// Waits until the thread has finished, if one was started (tests).
void wait_for_warm_start() noexcept;

// Whether this process started the thread (tests).
bool warm_start_started() noexcept;

// Tests: a thread started from now on first sleeps this long (0: not at all), so that a test can
// exit or fork while it runs.
void set_warm_start_pause_for_tests(int milliseconds) noexcept;

}  // namespace kjit::jit
