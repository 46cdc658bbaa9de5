#include "jit/warm_start.hpp"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <sys/stat.h>
#include <thread>

#include "cache/kernel_cache.hpp"
#include "jit/elf_image.hpp"
#include "jit/nvrtc_identity.hpp"
#include "jit/plan_note.hpp"
#include "kjit/cache.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/log.hpp"

namespace kjit::jit {
namespace {

// Made once and never destroyed (the exit handlers run while static objects are being destroyed).
struct WarmStart {
    std::thread thread;
    std::mutex join_mutex;
};
std::atomic<WarmStart*> g_warm{nullptr};
std::once_flag g_once;
std::atomic<int> g_pause_ms{0};  // set_warm_start_pause_for_tests()

// Notes read ahead: enough for the kernels a program's first calls use, little memory.
constexpr std::size_t kNotesAhead = 16;
constexpr std::size_t kNoteBytesAhead = std::size_t{1} << 20;

bool absolute(const std::string& dir) { return !dir.empty() && dir.front() == '/'; }

bool is_folder(const std::string& dir) {
    struct stat st {};
    return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The thread's work (see the header). Reads no environment variable.
void warm(const CacheSettings& settings, int pause_ms) noexcept {
    try {
        if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
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
        (void)detail::map_in_own_image();
    } catch (...) {
        // only a head start: the first call does whatever was not done here
    }
}

void wait_at_exit() noexcept { wait_for_warm_start(); }

// Installed when libkjit loads: the runtime calls it before it creates a primary context.
[[maybe_unused]] const bool g_installed = (kjit::detail::on_context_creation(&start_warm_start), true);

}  // namespace

void start_warm_start() noexcept {
    try {
        std::call_once(g_once, [] {
            if (const char* off = std::getenv("KJIT_WARM_START"); off != nullptr && std::string_view(off) == "0") return;
            // Made here, not on the thread: KJIT_LOG is read on first use (a warning on the thread
            // would read it there), and a function's static object made after the exit handler
            // below is registered would be destroyed before that handler waits for the thread.
            (void)kjit::detail::log_level();
            (void)kjit_build_id();
            auto w = std::make_unique<WarmStart>();
            w->thread = std::thread(warm, CacheSettings::from_environment(), g_pause_ms.load());
            g_warm.store(w.release());
            // A process that exits, or forks, while the thread runs waits for it first: exit must
            // not destroy what it uses, and a child must not inherit a lock it holds (the process
            // cache's, the log's), which nothing in the child would ever release.
            pthread_atfork(&wait_at_exit, nullptr, nullptr);
            std::atexit(&wait_at_exit);
        });
    } catch (...) {
        // no thread: only a lost head start
    }
}

void wait_for_warm_start() noexcept {
    WarmStart* w = g_warm.load();
    if (w == nullptr) return;
    try {
        const std::lock_guard lock(w->join_mutex);
        if (w->thread.joinable() && w->thread.get_id() != std::this_thread::get_id()) w->thread.join();
    } catch (...) {
        // join failed (it cannot, short of a corrupt thread): nothing to wait for then
    }
}

bool warm_start_started() noexcept { return g_warm.load() != nullptr; }

void set_warm_start_pause_for_tests(int milliseconds) noexcept { g_pause_ms.store(milliseconds); }

}  // namespace kjit::jit
