// `kjit precompile MANIFEST` and `kjit cache ls|stats|verify|prune|clear`: filling a kernel cache
// on a machine without a GPU, and looking after one.
#include <chrono>
#include <ctime>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cache/disk_store.hpp"
#include "cache/file_io.hpp"
#include "cache/manifest.hpp"
#include "jit/kernels/precompile.hpp"
#include "kjit/cache.hpp"
#include "kjit/error.hpp"
#include "tools/cli/commands.hpp"

namespace kjit::cli {
namespace {

std::vector<std::string> split_archs(const std::string& text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find(',', start);
        if (end == std::string::npos) end = text.size();
        if (end > start) out.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

// A one-line progress bar on a terminal: the job just finished and an estimate of the time left
// (from the pace so far); nothing otherwise (logs get the summary line only).
class Progress {
public:
    void show(std::size_t done, std::size_t total, const std::string& finished) {
        if (!terminal_) return;
        std::lock_guard lock(mutex_);
        const std::size_t width = 30, filled = total ? width * done / total : width;
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        const double left = done ? elapsed / static_cast<double>(done) * static_cast<double>(total - done) : 0;
        std::string label = finished.size() > 60 ? finished.substr(0, 57) + "..." : finished;
        fmt::print(stderr, "\r\033[K[{}{}] {}/{}, about {:.0f} s left: {}", std::string(filled, '#'), std::string(width - filled, ' '), done,
                   total, left, label);
        if (done == total) fmt::print(stderr, "\r\033[K");
    }

private:
    bool terminal_ = ::isatty(2) != 0;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    std::mutex mutex_;
};

int precompile(const std::string& manifest_path, const std::string& arch_flag, const std::string& cache_dir, int jobs_n) {
    const nlohmann::json manifest = cache::read_manifest(manifest_path);
    CacheSettings settings = CacheSettings::from_environment();
    if (!cache_dir.empty()) settings.dir = cache_dir;
    if (settings.dir.empty()) throw Error("no cache folder to fill: give --cache-dir (or set KJIT_CACHE_DIR)");
    settings.disk = true;
    settings.record.clear();  // precompiling must not write the manifest it reads
    configure_cache(settings);
    Progress progress;
    const jit::kernels::PrecompileResult r = jit::kernels::precompile(manifest, split_archs(arch_flag), jobs_n,
                                                    [&](std::size_t done, std::size_t total, const std::string& finished) {
                                                        progress.show(done, total, finished);
                                                    });
    for (const std::string& f : r.failures) fmt::print(stderr, "kjit precompile: failed: {}\n", f);
    const std::size_t failed_jobs = std::min(r.jobs, r.failures.size());
    std::string archs;
    for (const std::string& a : r.archs) archs += (archs.empty() ? "" : ",") + a;
    fmt::print("precompiled {} kernel{} for {} ({} build{}) into {} in {:.1f} s with {} thread{}: {} compiled, {} stored, {} not stored, "
               "{} already cached, {} failed\n",
               r.kernels, r.kernels == 1 ? "" : "s", archs.empty() ? "no architecture" : archs, r.jobs, r.jobs == 1 ? "" : "s",
               settings.dir, r.seconds, r.threads, r.threads == 1 ? "" : "s", r.compiled, r.stored, r.not_stored,
               r.jobs - std::min(r.jobs, r.compiled + failed_jobs), r.failures.size());
    // A compiled kernel that is not in the folder is not precompiled: the shipped cache lacks it.
    if (r.not_stored > 0)
        fmt::print(stderr, "kjit precompile: {} compiled kernel build{} not stored in {} (see the warnings above)\n",
                   r.not_stored, r.not_stored == 1 ? " was" : "s were", settings.dir);
    return r.failures.empty() && r.not_stored == 0 ? 0 : 1;
}

std::string when(std::int64_t unix_time) {
    char buf[32] = "-";
    const std::time_t t = static_cast<std::time_t>(unix_time);
    if (std::tm tm{}; unix_time > 0 && gmtime_r(&t, &tm)) std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
    return buf;
}

int cache_command(const std::string& action, const std::string& dir_flag, std::uint64_t max_bytes) {
    const std::string dir = dir_flag.empty() ? CacheSettings::from_environment().dir : dir_flag;
    if (dir.empty()) throw Error("no cache folder: KJIT_CACHE_DIR, XDG_CACHE_HOME and HOME are unset (give --cache-dir)");
    // Checking, pruning or clearing a folder that is not there is a mistake (a misspelt path),
    // not a clean cache; and a writable store would create it.
    if (action == "verify" || action == "prune" || action == "clear") {
        struct stat st {};
        if (::stat(dir.c_str(), &st) != 0) throw IoError(cache::os_error("no cache folder", dir));
        if (!S_ISDIR(st.st_mode)) throw IoError("no cache folder " + dir + ": not a folder");
    }
    cache::DiskStore store(dir, /*writable=*/action == "prune" || action == "clear");
    if (action == "ls") {
        for (const auto& item : store.list()) {
            fmt::print("{}  {:>9}  last used {}\n", item.key, item.bytes, when(item.last_used_unix));
        }
        return 0;
    }
    if (action == "stats") {
        const auto items = store.list();
        // The bytes the size cap counts: the entries, the plan notes (which carry an entry each)
        // and the aliases.
        fmt::print("{}: {} entries, {} bytes with the plan notes and aliases\n", dir, items.size(), store.total_bytes());
        return 0;
    }
    if (action == "verify") {
        const auto damaged = store.verify();
        for (const auto& [path, problem] : damaged) fmt::print("damaged: {}: {}\n", path.string(), problem);
        // A damaged note is never used either (it reads as none); named so that it can be removed.
        const auto damaged_notes = store.verify_notes();
        for (const auto& [path, problem] : damaged_notes) fmt::print("damaged note: {}: {}\n", path.string(), problem);
        // An alias that is another's (swapped, copied) is never used either (a miss with a warning).
        const auto damaged_aliases = store.verify_aliases();
        for (const auto& [path, problem] : damaged_aliases) fmt::print("damaged alias: {}: {}\n", path.string(), problem);
        fmt::print("{}: {} entries checked, {} damaged; {} damaged plan notes; {} damaged aliases\n", dir, store.list().size(),
                   damaged.size(), damaged_notes.size(), damaged_aliases.size());
        return damaged.empty() && damaged_notes.empty() && damaged_aliases.empty() ? 0 : 1;
    }
    if (action == "prune") {
        const std::uint64_t removed = store.prune(max_bytes);
        const std::size_t stale = store.sweep_stale_temporaries(cache::DiskStore::kStaleTemporaryAge);
        fmt::print("{}: removed {} bytes; {} bytes left; {} stale temporar{} removed\n", dir, removed, store.total_bytes(), stale,
                   stale == 1 ? "y" : "ies");
        return 0;
    }
    if (action == "clear") {
        // A folder that cannot be written is left as it was: say so, never "cleared".
        if (!store.writable())
            throw IoError("cannot clear " + dir + ": the folder cannot be written to (see the warning above); nothing removed");
        const auto left = store.clear();
        for (const auto& [path, problem] : left) fmt::print(stderr, "kjit cache clear: {}\n", problem);
        if (!left.empty()) {
            fmt::print("{}: not cleared: {} file{} could not be removed\n", dir, left.size(), left.size() == 1 ? "" : "s");
            return 1;
        }
        fmt::print("{}: cleared\n", dir);
        return 0;
    }
    throw Error("unknown cache action '" + action + "'");
}

}  // namespace

void add_cache_commands(CLI::App& app, int& exit_status) {
    {
        struct Flags {
            std::string manifest, arch, cache_dir;
            int jobs = 0;
        };
        auto f = std::make_shared<Flags>();
        CLI::App* cmd = app.add_subcommand("precompile", "Compile every kernel of a manifest into a cache (no GPU needed)");
        cmd->add_option("manifest", f->manifest, "The manifest (JSON), e.g. one KJIT_CACHE_RECORD wrote")->required();
        cmd->add_option("--arch", f->arch, "Targets, e.g. sm_80,sm_90 (default: the manifest's \"arch\")");
        cmd->add_option("--cache-dir", f->cache_dir, "The cache folder to fill (default: KJIT_CACHE_DIR)");
        cmd->add_option("-j,--jobs", f->jobs, "Parallel compiles (default: one per core)");
        cmd->callback([f, &exit_status] { exit_status = precompile(f->manifest, f->arch, f->cache_dir, f->jobs); });
    }
    {
        auto dir = std::make_shared<std::string>();
        auto max_bytes = std::make_shared<std::uint64_t>(0);
        CLI::App* cmd = app.add_subcommand("cache", "Look after a kernel cache folder");
        cmd->require_subcommand(1);
        for (const char* action : {"ls", "stats", "verify", "prune", "clear"}) {
            static const std::map<std::string, std::string> help = {
                {"ls", "List the entries"},
                {"stats", "Count entries and bytes"},
                {"verify", "Check every entry; exit 1 naming each damaged one"},
                {"prune", "Remove least recently used entries down to --max-bytes"},
                {"clear", "Remove every entry"}};
            CLI::App* sub = cmd->add_subcommand(action, help.at(action));
            sub->add_option("--cache-dir", *dir, "The cache folder (default: KJIT_CACHE_DIR)");
            if (std::string(action) == "prune") sub->add_option("--max-bytes", *max_bytes, "Size to prune to")->required();
            sub->callback([action, dir, max_bytes, &exit_status] { exit_status = cache_command(action, *dir, *max_bytes); });
        }
    }
}

}  // namespace kjit::cli
