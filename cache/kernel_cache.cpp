#include "cache/kernel_cache.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cache/manifest.hpp"
#include "kjit/error.hpp"
#include "kjit/info.hpp"
#include "runtime/detail/log.hpp"

namespace kjit {

CacheSettings CacheSettings::from_environment() {
    CacheSettings s;
    s.dir = default_cache_dir();
    for (const std::string& d : cache_search_path()) s.read_only.push_back(d);
    const char* disable = std::getenv("KJIT_CACHE_DISABLE");
    s.disk = !(disable != nullptr && std::string(disable) == "1");
    if (s.disk && s.dir.empty())
        ::kjit::detail::warn_once("cache-no-home", "neither KJIT_CACHE_DIR, XDG_CACHE_HOME nor HOME is set: kernels are "
                                                   "cached in memory only (set KJIT_CACHE_DIR to keep them on disk)");
    if (const char* cap = std::getenv("KJIT_CACHE_MAX_BYTES"); cap && *cap) {
        // Digits only: strtoull would take "-1" as 2^64-1 (no cap at all) and skip blanks.
        const std::string_view text(cap);
        std::uint64_t v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec == std::errc() && end == text.data() + text.size())
            s.max_bytes = v;
        else
            ::kjit::detail::warn_once("KJIT_CACHE_MAX_BYTES", "KJIT_CACHE_MAX_BYTES='" + std::string(cap) +
                                                          "' refused: not a whole number of bytes from 0 to 2^64-1; "
                                                          "no size cap is applied");
    }
    if (const char* wait = std::getenv("KJIT_CACHE_LOCK_TIMEOUT"); wait && *wait) {
        char* end = nullptr;
        const double v = std::strtod(wait, &end);
        // No sign, blanks, "inf" or "nan": a number of seconds as written, up to a day.
        if (std::isdigit(static_cast<unsigned char>(wait[0])) && end != nullptr && *end == '\0' && v <= 86400)
            s.lock_timeout_seconds = v;
        else
            ::kjit::detail::warn_once("KJIT_CACHE_LOCK_TIMEOUT",
                                      "KJIT_CACHE_LOCK_TIMEOUT='" + std::string(wait) +
                                          "' refused: not a number of seconds from 0 to 86400 (such as 30 or 0.5); "
                                          "waiting up to " + std::to_string(static_cast<int>(s.lock_timeout_seconds)) +
                                          " s for a cache lock");
    }
    if (const char* rec = std::getenv("KJIT_CACHE_RECORD"); rec && *rec) s.record = rec;
    return s;
}

namespace cache {
namespace {

std::mutex g_process_mutex;
std::shared_ptr<KernelCache> g_process;

}  // namespace

std::shared_ptr<KernelCache> process_cache() {
    std::lock_guard lock(g_process_mutex);
    if (!g_process) g_process = std::make_shared<KernelCache>(CacheSettings::from_environment());
    return g_process;
}

namespace {
// CacheSettings' seconds as the store's wait; anything not a number of seconds from 0 to a day
// (a program may set the field itself) is the default.
std::chrono::milliseconds lock_timeout_of(const CacheSettings& s) {
    const double seconds = s.lock_timeout_seconds;
    if (!(seconds >= 0 && seconds <= 86400)) return kDefaultLockTimeout;
    return std::chrono::milliseconds(std::llround(seconds * 1000));
}
}  // namespace

KernelCache::KernelCache(const CacheSettings& settings) : settings_(settings) {
    if (settings_.disk && !settings_.dir.empty())
        writable_ = std::make_unique<DiskStore>(settings_.dir, /*writable=*/true, settings_.max_bytes, lock_timeout_of(settings_));
    if (settings_.disk)
        for (const std::string& d : settings_.read_only) read_only_.push_back(std::make_unique<DiskStore>(d, false));
    const std::size_t layers = (writable_ ? 1 : 0) + read_only_.size();
    layer_hits_ = std::make_unique<std::atomic<std::uint64_t>[]>(layers);
    layer_misses_ = std::make_unique<std::atomic<std::uint64_t>[]>(layers);
}

KernelCache::Shard& KernelCache::shard_of(const std::string& key) {
    return shards_[XXH3_64bits(key.data(), key.size()) % kShards];
}

std::shared_ptr<const Entry> KernelCache::get(const Request& request) {
    Shard& shard = shard_of(request.key);
    auto slot = std::make_shared<SlotValue>();
    {
        std::unique_lock lock(shard.mutex);
        if (auto it = shard.entries.find(request.key); it != shard.entries.end()) {
            const Slot found = it->second;
            lock.unlock();
            ++memory_hits_;
            return found->get();  // waits while another thread compiles it; rethrows its failure
        }
        shard.entries.emplace(request.key, slot);
    }
    ++memory_misses_;
    record(request.spec_json, request.arch);
    try {
        std::shared_ptr<const Entry> entry = load_or_compile(request);
        slot->set(entry);
        return entry;
    } catch (...) {
        slot->fail(std::current_exception());
        std::lock_guard lock(shard.mutex);
        shard.entries.erase(request.key);  // not remembered: the next call tries again
        throw;
    }
}

std::shared_ptr<const Entry> KernelCache::load_or_compile(const Request& request) {
    std::size_t layer = 0;
    if (writable_) {
        if (std::optional<Entry> e = writable_->read(request.key)) {
            ++layer_hits_[layer];
            return std::make_shared<const Entry>(std::move(*e));
        }
        ++layer_misses_[layer++];
    }
    for (const auto& store : read_only_) {
        if (std::optional<Entry> e = store->read(request.key)) {
            ++layer_hits_[layer];
            return std::make_shared<const Entry>(std::move(*e));
        }
        ++layer_misses_[layer++];
    }
    bool compiled = false;
    auto compile = [&] {
        const auto start = std::chrono::steady_clock::now();
        Entry e = request.compile();
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
        ++compiles_;
        compile_us_ += static_cast<std::uint64_t>(us.count());
        compiled = true;
        return e;
    };
    bool stored = false;
    Entry entry = writable_ ? writable_->get_or_create(request.key, compile, &stored) : compile();
    // An alias of an entry that is not in the folder would lead nowhere.
    if (compiled && stored && !request.alias.empty()) writable_->write_alias(request.alias, request.key);
    return std::make_shared<const Entry>(std::move(entry));
}

bool KernelCache::from_memory(Shard& shard, const std::string& name, std::shared_ptr<const Entry>& out) {
    std::unique_lock lock(shard.mutex);
    const auto it = shard.entries.find(name);
    if (it == shard.entries.end()) return false;
    ++memory_hits_;
    const Slot found = it->second;
    lock.unlock();
    out = found->get();
    return true;
}

std::shared_ptr<const Entry> KernelCache::keep_disk_hit(Shard& shard, const std::string& name,
                                                        std::shared_ptr<const Entry> entry, std::size_t layer,
                                                        const std::string& spec_json, const std::string& arch) {
    ++layer_hits_[layer];
    record(spec_json, arch);
    std::lock_guard lock(shard.mutex);
    shard.entries.emplace(name, std::make_shared<SlotValue>(entry));
    return entry;
}

std::string mismatch(const EntryMetadata& meta, const Wanted& wanted) {
    if (meta.kernel_name == wanted.kernel_name && meta.types == wanted.types && meta.arch == wanted.arch) return {};
    auto describe = [](const std::string& name, const std::string& types, const std::string& arch) {
        return "'" + name + "' (" + (types.empty() ? std::string() : types + ", ") + arch + ")";
    };
    return "it holds " + describe(meta.kernel_name, meta.types, meta.arch) + ", not " +
           describe(wanted.kernel_name, wanted.types, wanted.arch);
}

// `alias_of`: `name` is an alias, for that request; null: `name` is a key.
std::shared_ptr<const Entry> KernelCache::find(const std::string& name, const Wanted* alias_of, const std::string& spec_json,
                                               const std::string& arch) {
    Shard& shard = shard_of(name);
    if (std::shared_ptr<const Entry> found; from_memory(shard, name, found)) return found;
    ++memory_misses_;
    std::vector<DiskStore*> stores;
    if (writable_) stores.push_back(writable_.get());
    for (const auto& s : read_only_) stores.push_back(s.get());
    for (std::size_t layer = 0; layer < stores.size(); ++layer) {
        const std::optional<std::string> key = alias_of ? stores[layer]->read_alias(name) : std::optional(name);
        if (key) {
            std::optional<Entry> e = stores[layer]->read(*key);
            // An alias holds only a key: the entry must say it is what was asked.
            if (e && alias_of) {
                if (const std::string wrong = mismatch(e->meta, *alias_of); !wrong.empty()) {
                    ::kjit::detail::warn_once("cache-alias:" + stores[layer]->dir().string() + ":" + name,
                                              "cache alias " + name + " in " + stores[layer]->dir().string() +
                                                  " leads to another kernel's entry " + *key + " (" + wrong + "); not used");
                    e.reset();
                }
            }
            if (e) return keep_disk_hit(shard, name, std::make_shared<const Entry>(std::move(*e)), layer, spec_json, arch);
        }
        ++layer_misses_[layer];
    }
    return nullptr;
}

std::shared_ptr<const Entry> KernelCache::find_alias(const std::string& alias, const std::string& spec_json,
                                                     const std::string& arch, const Wanted& wanted) {
    return find(alias, &wanted, spec_json, arch);
}

std::shared_ptr<const Entry> KernelCache::find_key(const std::string& key, const std::string& spec_json,
                                                   const std::string& arch) {
    return find(key, nullptr, spec_json, arch);
}

std::string KernelCache::writable_dir() const {
    return writable_ && writable_->writable() ? writable_->dir().string() : std::string();
}

namespace {
// A kept note's text as read_note() gives a note: in bytes of its own, which the caller keeps.
DiskStore::Note note_of(const std::string& text) {
    DiskStore::Note note;
    note.bytes = std::make_unique_for_overwrite<unsigned char[]>(text.size());
    std::memcpy(note.bytes.get(), text.data(), text.size());
    note.size = note.text_size = text.size();
    return note;
}
}  // namespace

std::optional<KernelCache::FoundNote> KernelCache::read_note(const std::string& name) const {
    {
        const std::lock_guard lock(notes_mutex_);
        if (const auto it = notes_.find(name); it != notes_.end()) return FoundNote{note_of(*it->second.text), it->second.layer};
    }
    std::optional<FoundNote> found;
    std::size_t layer = 0;
    if (writable_) {
        if (std::optional<DiskStore::Note> note = writable_->read_note(name)) found = FoundNote{std::move(*note), layer};
        ++layer;
    }
    for (auto store = read_only_.begin(); !found && store != read_only_.end(); ++store, ++layer)
        if (std::optional<DiskStore::Note> note = (*store)->read_note(name)) found = FoundNote{std::move(*note), layer};
    if (found) {
        const std::lock_guard lock(notes_mutex_);
        notes_.try_emplace(name, KeptNote{std::make_shared<const std::string>(found->note.text()), found->layer});
    }
    return found;
}

void KernelCache::count_note_hit() { ++note_hits_; }

bool KernelCache::write_note(const std::string& name, const std::string& text) {
    {
        const std::lock_guard lock(notes_mutex_);
        notes_[name] = KeptNote{std::make_shared<const std::string>(text), 0};
    }
    return writable_ && writable_->write_note(name, text);
}

void KernelCache::store(const Entry& entry, const std::string& alias) {
    auto shared = std::make_shared<const Entry>(entry);
    for (const std::string& name : {entry.key, alias}) {
        Shard& shard = shard_of(name);
        std::lock_guard lock(shard.mutex);
        shard.entries[name] = std::make_shared<SlotValue>(shared);
    }
    if (writable_ && writable_->write(entry)) writable_->write_alias(alias, entry.key);
}

void KernelCache::record(const std::string& spec_json, const std::string& arch) {
    if (settings_.record.empty() || spec_json.empty()) return;
    try {
        record_in_manifest(settings_.record, nlohmann::json::parse(spec_json), arch, lock_timeout_of(settings_));
    } catch (const std::exception& e) {
        ::kjit::detail::warn_once("record:" + settings_.record,
                          "KJIT_CACHE_RECORD: cannot record in '" + settings_.record + "': " + e.what());
    }
}

CacheStats KernelCache::stats() const {
    CacheStats s;
    s.memory_hits = memory_hits_;
    s.memory_misses = memory_misses_;
    s.compiles = compiles_;
    s.compile_ms = static_cast<double>(compile_us_.load()) / 1000.0;
    s.note_hits = note_hits_;
    std::size_t layer = 0;
    if (writable_) {
        s.layers.push_back({writable_->dir().string(), writable_->writable(), layer_hits_[0], layer_misses_[0],
                            writable_->stores(), writable_->store_failures()});
        ++layer;
    }
    for (const auto& store : read_only_) {
        s.layers.push_back({store->dir().string(), false, layer_hits_[layer], layer_misses_[layer]});
        ++layer;
    }
    return s;
}

}  // namespace cache

void configure_cache(const CacheSettings& settings) {
    auto fresh = std::make_shared<cache::KernelCache>(settings);
    std::lock_guard lock(cache::g_process_mutex);
    cache::g_process = std::move(fresh);
}

CacheSettings cache_settings() { return cache::process_cache()->settings(); }

CacheStats cache_stats() { return cache::process_cache()->stats(); }

}  // namespace kjit
