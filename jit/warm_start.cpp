#include "jit/warm_start.hpp"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <sys/stat.h>
#include <thread>

#include "cache/kernel_cache.hpp"
#include "jit/nvrtc_identity.hpp"
#include "jit/nvrtc_version.hpp"
#include "jit/plan_note.hpp"
#include "kjit/cache.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit::jit {
namespace {

// Made once and never destroyed: a child forked while the thread runs inherits this object but
// not the thread, and must neither join nor destroy it.
struct WarmStart {
    std::thread thread;
    std::mutex join_mutex;
    std::atomic<bool> forked{false};
};
std::atomic<WarmStart*> g_warm{nullptr};
std::once_flag g_once;

// Notes read ahead: enough for the kernels a program's first calls use, little memory.
constexpr std::size_t kNotesAhead = 16;
constexpr std::size_t kNoteBytesAhead = std::size_t{1} << 20;

bool absolute(const std::string& dir) { return !dir.empty() && dir.front() == '/'; }

bool is_folder(const std::string& dir) {
    struct stat st {};
    return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The thread's work (see the header). Reads no environment variable.
void warm(const CacheSettings& settings) noexcept {
    try {
        // Only folders that exist (making the writable one is the first call's business, and an
        // application that never calls a kernel should find none made) and absolute paths (the
        // working folder may change before the first call).
        bool folders = settings.disk && absolute(settings.dir) && is_folder(settings.dir);
        for (const std::string& d : settings.read_only) folders = folders && absolute(d);
        if (folders) {
            const std::shared_ptr<cache::KernelCache> prepared = cache::prepare_process_cache(settings);
            stat_recorded_nvrtc(settings.dir);
            if (prepared) (void)prepared->prefetch_notes(kNotesAhead, kNoteBytesAhead);
        }
        (void)kjit_build_id();
        (void)detail::map_in_own_image();
    } catch (...) {
        // only a head start: the first call does whatever was not done here
    }
}

void forget_in_child() noexcept {
    if (WarmStart* w = g_warm.load()) w->forked.store(true);
}

void wait_at_exit() noexcept { wait_for_warm_start(); }

// Installed when libkjit loads: the runtime calls it before it creates a primary context.
[[maybe_unused]] const bool g_installed = (kjit::detail::on_context_creation(&start_warm_start), true);

}  // namespace

void start_warm_start() noexcept {
    try {
        std::call_once(g_once, [] {
            if (const char* off = std::getenv("KJIT_WARM_START"); off != nullptr && std::string_view(off) == "0") return;
            auto w = std::make_unique<WarmStart>();
            w->thread = std::thread(warm, CacheSettings::from_environment());
            g_warm.store(w.release());
            // Registered after every static object the thread uses was made, so that a process
            // exiting while it runs waits for it before those are destroyed.
            pthread_atfork(nullptr, nullptr, &forget_in_child);
            std::atexit(&wait_at_exit);
        });
    } catch (...) {
        // no thread: only a lost head start
    }
}

void wait_for_warm_start() noexcept {
    WarmStart* w = g_warm.load();
    if (w == nullptr || w->forked.load()) return;
    try {
        const std::lock_guard lock(w->join_mutex);
        if (w->thread.joinable()) w->thread.join();
    } catch (...) {
        // join failed (it cannot, short of a corrupt thread): nothing to wait for then
    }
}

bool warm_start_started() noexcept { return g_warm.load() != nullptr; }

}  // namespace kjit::jit
