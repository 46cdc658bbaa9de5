#include "jit/warm_start.hpp"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <optional>
#include <string_view>
#include <sys/stat.h>
#include <thread>
#include <utility>
#include <vector>

#include "cache/kernel_cache.hpp"
#include "jit/elf_image.hpp"
#include "jit/module_preload.hpp"
#include "jit/nvrtc_identity.hpp"
#include "jit/plan_note.hpp"
#include "kjit/cache.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/log.hpp"
#include "runtime/detail/module.hpp"

namespace kjit::jit {
namespace {

// Made once and never destroyed (the exit handlers run while static objects are being destroyed).
struct WarmStart {
    std::thread thread;
    std::mutex join_mutex;
    // The news of the context's creation (on_context_created), which the thread waits for.
    std::mutex news_mutex;
    std::condition_variable news;
    bool context_done = false;
    bool context_made = false;
    int ordinal = 0;
    std::uint64_t loads_at_context = 0;  // the module registry's loads started by then
    // Set when the process exits or forks: the thread loads no further module and waits no
    // longer for the context (what it has not done is only a lost head start).
    std::atomic<bool> stopping{false};
};
std::atomic<WarmStart*> g_warm{nullptr};
std::once_flag g_once;
std::atomic<int> g_pause_ms{0};  // set_warm_start_pause_for_tests()

// Notes read ahead: enough for the kernels a program's first calls use, little memory.
constexpr std::size_t kNotesAhead = 16;
constexpr std::size_t kNoteBytesAhead = std::size_t{1} << 20;
// Modules loaded ahead (jit/module_preload.hpp): those of every note read ahead. Which of them
// the first calls want is a guess (a run of the side by side at 15:12 UTC, 2026-12-04, called
// the newest note's kernel first, where 8 loaded oldest first missed it); loading all of them
// takes 1-3 ms on the H200 host, less than an application's setup before its first call (the
// input's allocation alone: 7-12 ms there), and their cubins are within the notes' 1 MB.
constexpr std::size_t kModulesAhead = kNotesAhead;
// How long the thread waits for the context before it gives the modules up: far longer than the
// driver takes (about 0.2 s on the H200 host), short enough that exit never waits long on it.
constexpr auto kContextWait = std::chrono::seconds(5);

bool absolute(const std::string& dir) { return !dir.empty() && dir.front() == '/'; }

bool is_folder(const std::string& dir) {
    struct stat st {};
    return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The device whose context was made, and the registry's loads started by then, once the
// driver is done making it; nothing when it failed, took too long, or the process is exiting.
std::optional<std::pair<int, std::uint64_t>> wait_for_context(WarmStart& w) {
    std::unique_lock lock(w.news_mutex);
    const bool news = w.news.wait_for(lock, kContextWait, [&] { return w.context_done || w.stopping.load(); });
    if (!news || !w.context_made || w.stopping.load()) return std::nullopt;
    return std::pair{w.ordinal, w.loads_at_context};
}

// The thread's work (see the header). Reads no environment variable.
void warm(WarmStart& w, const CacheSettings& settings, int pause_ms, bool load_modules) noexcept {
    try {
        if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
        // Only folders that exist (making the writable one is the first call's business, and an
        // application that never calls a kernel should find none made) and absolute paths (the
        // working folder may change before the first call).
        bool folders = settings.disk && absolute(settings.dir) && is_folder(settings.dir);
        for (const std::string& d : settings.read_only) folders = folders && absolute(d);
        std::vector<std::shared_ptr<const cache::Entry>> entries;
        if (folders) {
            const std::shared_ptr<cache::KernelCache> prepared = cache::prepare_process_cache(settings);
            stat_recorded_nvrtc(settings.dir);
            if (prepared && prepared->prefetch_notes(kNotesAhead, kNoteBytesAhead) > 0 && load_modules)
                entries = prepared->entries_read_ahead();
        }
        (void)detail::map_in_own_image();
        if (!entries.empty())
            if (const auto context = wait_for_context(w))
                (void)preload_modules(entries, context->first, kModulesAhead, context->second, w.stopping);
    } catch (...) {
        // only a head start: the first call does whatever was not done here
    }
}

// The runtime's news that the context is made (or failed), handed to the thread.
void context_created(int ordinal, bool created) noexcept {
    WarmStart* w = g_warm.load();
    if (w == nullptr) return;
    try {
        {
            const std::lock_guard lock(w->news_mutex);
            if (w->context_done) return;  // the first context's news only
            w->context_done = true;
            w->context_made = created;
            w->ordinal = ordinal;
            // Counted now: any load from here on that the thread did not start is the
            // application's, however late the thread comes to look.
            w->loads_at_context = kjit::detail::ModuleRegistry::process().loads_started();
        }
        w->news.notify_all();
    } catch (...) {
        // a lock that cannot be taken: the thread gives the modules up after its wait
    }
}

// At exit and before a fork: the thread stops loading modules, and is waited for.
void stop_at_exit() noexcept {
    if (WarmStart* w = g_warm.load()) {
        w->stopping.store(true);
        try {
            { const std::lock_guard lock(w->news_mutex); }  // a waiting thread sees the flag when woken
            w->news.notify_all();
        } catch (...) {
            // it wakes at its time limit then
        }
    }
    wait_for_warm_start();
}

// Installed when libkjit loads: the runtime calls it before it creates a primary context.
[[maybe_unused]] const bool g_installed = (kjit::detail::on_context_creation(&start_warm_start),
                                            kjit::detail::on_context_created(&context_created), true);

}  // namespace

void start_warm_start() noexcept {
    try {
        std::call_once(g_once, [] {
            const char* setting = std::getenv("KJIT_WARM_START");
            const std::string_view mode = setting != nullptr ? setting : "";
            if (mode == "0") return;
            // Made here, not on the thread: KJIT_LOG is read on first use (a warning on the thread
            // would read it there), and a function's static object made after the exit handler
            // below is registered would be destroyed before that handler waits for the thread.
            (void)kjit::detail::log_level();
            auto w = std::make_unique<WarmStart>();
            // Published before the thread starts: the runtime's news of the context may come
            // before the thread looks for it.
            WarmStart& started = *w;
            g_warm.store(w.release());
            const std::lock_guard lock(started.join_mutex);  // a wait meanwhile finds the thread set
            started.thread = std::thread(warm, std::ref(started), CacheSettings::from_environment(), g_pause_ms.load(),
                                         mode != "files");
            // A process that exits, or forks, while the thread runs waits for it first: exit must
            // not destroy what it uses, and a child must not inherit a lock it holds (the process
            // cache's, the log's), which nothing in the child would ever release.
            pthread_atfork(&stop_at_exit, nullptr, nullptr);
            std::atexit(&stop_at_exit);
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
