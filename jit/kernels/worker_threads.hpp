// Running one piece of work on several threads at once, as `kjit precompile -j N` does, without
// ever stopping the process when the system will not give a thread.
#pragma once

#include <string>
#include <functional>

namespace kjit::jit::kernels {

// Calls `work` once on each of up to `threads` threads, the calling thread being one of them;
// `work` takes jobs from a shared counter until none is left, so any number of threads finishes
// them all. When the system refuses a thread (a pids limit, RLIMIT_NPROC, no memory for a stack),
// the threads started so far and the calling thread do the work: slower, never aborted. Returns
// how many threads ran it (at least 1); when fewer than asked, `why_fewer` (if given) gets the
// system's reason. Every thread started is joined before it returns, on every path, and an
// exception `work` throws on any thread is rethrown here after that (the first one).
int run_on_threads(int threads, const std::function<void()>& work, std::string* why_fewer = nullptr);

// Tests only: while one lives, run_on_threads cannot start more than `allowed` threads besides
// the calling one; the next start fails as std::thread's does when the system refuses (with
// std::system_error), so that what happens under a pids limit can be checked as any user.
class ScopedThreadStartLimit {
public:
    explicit ScopedThreadStartLimit(int allowed);
    ~ScopedThreadStartLimit();
    ScopedThreadStartLimit(const ScopedThreadStartLimit&) = delete;
    ScopedThreadStartLimit& operator=(const ScopedThreadStartLimit&) = delete;

private:
    int previous_;
};

}  // namespace kjit::jit::kernels
