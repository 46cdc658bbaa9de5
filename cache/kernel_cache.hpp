// The process's kernel cache: compiled kernels by key, in memory, in the writable folder and in
// read-only folders, compiling each key once per process (and once across processes sharing the
// writable folder). It knows bytes and keys, not kernels: the caller says how to compile.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/disk_store.hpp"
#include "cache/entry.hpp"
#include "kjit/cache.hpp"
#include "runtime/detail/once_value.hpp"

namespace kjit::cache {

struct Request {
    std::string key;        // make_key(): with NVRTC's version
    std::string alias;      // make_alias_key(): without it, for processes that have no NVRTC
    std::string arch;       // for the manifest KJIT_CACHE_RECORD writes
    std::string spec_json;  // the manifest entry (one binding) for KJIT_CACHE_RECORD
    std::function<Entry()> compile;
};

// What a request asks of an entry it reaches by another name than the entry's key (an alias):
// the entry's own metadata must say the same, or it is another kernel's.
struct Wanted {
    std::string kernel_name;
    std::string types;  // "T=float32", empty when none
    std::string arch;
};
// "" when `meta` is what `wanted` asks; else what differs, for a warning.
std::string mismatch(const EntryMetadata& meta, const Wanted& wanted);

class KernelCache {
public:
    explicit KernelCache(const CacheSettings& settings);
    const CacheSettings& settings() const { return settings_; }

    // Memory, then the writable folder, then the read-only ones, then request.compile(). Throws
    // what compile() throws; a failed key is forgotten, so that a later call tries again.
    std::shared_ptr<const Entry> get(const Request& request);
    // The entry stored under an alias in any folder (for a process without NVRTC), or null. An
    // entry that is not `wanted` (an alias file swapped or copied) is passed over with a warning.
    std::shared_ptr<const Entry> find_alias(const std::string& alias, const std::string& spec_json,
                                            const std::string& arch, const Wanted& wanted);
    // The entry of `key` in memory or any folder, or null; never compiles.
    std::shared_ptr<const Entry> find_key(const std::string& key, const std::string& spec_json, const std::string& arch);
    // The writable folder when it can be written; empty otherwise.
    std::string writable_dir() const;

    // The note stored under `name` (cache/disk_store.hpp) in the writable folder, else in the
    // first read-only folder that has one, and that folder's layer (0 is the first folder);
    // nothing when no folder has it or the disk is off.
    struct FoundNote {
        DiskStore::Note note;
        std::size_t layer = 0;
        // The entry the note carries, parsed and checked (not yet against a key) when the note
        // was read ahead; null otherwise.
        std::shared_ptr<const Entry> carried;
    };
    std::optional<FoundNote> read_note(const std::string& name) const;
    // Stores a note, and the entry file it carries, in the writable folder (false when there is
    // none or writing failed).
    bool write_note(const std::string& name, const std::string& text, std::span<const unsigned char> entry = {});
    // The entry of `key` from the bytes a note of folder layer `layer` carries, verified as an
    // entry file read from that folder is, and taken as such a read would be (kept in memory,
    // counted as that layer's hit, recorded under KJIT_CACHE_RECORD); an entry already in memory
    // is that one. Null, with `problem` saying why, when the bytes are not a sound entry of `key`.
    // `parsed`, when not null, is those bytes already parsed and checked (FoundNote::carried):
    // taken when it is `key`'s.
    std::shared_ptr<const Entry> take_carried_entry(const std::string& key, std::span<const unsigned char> bytes,
                                                    std::size_t layer, const std::string& spec_json,
                                                    const std::string& arch, std::string& problem,
                                                    const std::shared_ptr<const Entry>& parsed = nullptr);
    // A note read was taken (its plan and keys used): counted in cache_stats().note_hits.
    void count_note_hit();
    // Reads ahead up to `max_notes` of the notes the writable folder names as written last
    // (cache/recent_notes.hpp), `max_bytes` in all, and keeps them until read_note() asks for one
    // (which then opens no file, and records the note's use as a read would). Returns how many.
    // For the warm start's thread (jit/warm_start.hpp); safe beside every other call.
    std::size_t prefetch_notes(std::size_t max_notes, std::size_t max_bytes);
    // The entries that the notes read ahead and not yet read carry, parsed and checked, in the
    // order the folder wrote them, newest first (for loading their modules ahead of need:
    // jit/module_preload.hpp). Neither counted nor kept as cache hits: a first call that takes
    // its note is what counts.
    std::vector<std::shared_ptr<const Entry>> entries_read_ahead() const;

    // Stores an entry made outside a compile (a cubin the driver made from PTX) in the writable
    // folder and in memory, reachable by its key and by `alias`.
    void store(const Entry& entry, const std::string& alias);

    CacheStats stats() const;

private:
    using SlotValue = kjit::detail::OnceValue<std::shared_ptr<const Entry>>;
    using Slot = std::shared_ptr<SlotValue>;
    struct Shard {
        std::mutex mutex;
        std::unordered_map<std::string, Slot> entries;
    };
    // A warm lookup locks one of many shards (by key), never one lock for the whole process.
    static constexpr std::size_t kShards = 64;

    Shard& shard_of(const std::string& key);
    // The entry kept in memory under `name` (waiting while it is being made), counted as a
    // memory hit; false, counting nothing, when there is none.
    bool from_memory(Shard& shard, const std::string& name, std::shared_ptr<const Entry>& out);
    // An entry read from folder layer `layer`: counted as its hit, recorded under
    // KJIT_CACHE_RECORD, kept in memory under `name`.
    std::shared_ptr<const Entry> keep_disk_hit(Shard& shard, const std::string& name, std::shared_ptr<const Entry> entry,
                                               std::size_t layer, const std::string& spec_json, const std::string& arch);
    std::shared_ptr<const Entry> find(const std::string& name, const Wanted* alias_of, const std::string& spec_json,
                                      const std::string& arch);
    std::shared_ptr<const Entry> load_or_compile(const Request& request);
    void record(const std::string& spec_json, const std::string& arch);

    // A note of the writable folder read ahead (prefetch_notes), until it is read or written.
    struct PrefetchedNote {
        std::string name;
        DiskStore::Note note;
        std::int64_t last_used_ns = 0;  // its recorded last use, as read ahead
        std::shared_ptr<const Entry> carried;  // the entry it carries, parsed; null when none or damaged
    };
    std::optional<PrefetchedNote> take_prefetched(const std::string& name) const;

    CacheSettings settings_;
    std::unique_ptr<DiskStore> writable_;                  // null: memory only
    mutable std::mutex prefetch_mutex_;
    mutable std::vector<PrefetchedNote> prefetched_;  // a few: a flat list
    std::vector<std::string> written_notes_;          // notes this cache wrote: never read ahead after
    std::vector<std::unique_ptr<DiskStore>> read_only_;
    std::array<Shard, kShards> shards_;

    std::atomic<std::uint64_t> memory_hits_{0}, memory_misses_{0}, compiles_{0}, compile_us_{0};
    mutable std::atomic<std::uint64_t> note_hits_{0};
    std::unique_ptr<std::atomic<std::uint64_t>[]> layer_hits_, layer_misses_;  // writable first
};

// The process's cache, made from the environment (or configure_cache()) on first use.
std::shared_ptr<KernelCache> process_cache();
// Makes a cache with `settings` ahead of the first use (its folders checked: the system calls
// a fresh process's first call would make), for process_cache() to take if the environment
// then still gives those settings; otherwise it is dropped. Does nothing once the process's
// cache is made or one is prepared. Settings come from the caller, never from the environment
// here: this runs on a thread of its own (jit/warm_start.cpp), where reading the environment
// would race with an application's setenv. The cache it made; null when it made none.
std::shared_ptr<KernelCache> prepare_process_cache(const CacheSettings& settings);
// Whether the process's cache, once made, is one that prepare_process_cache() made (tests).
bool process_cache_was_prepared();
// Forgets the process's cache, so that the next process_cache() makes it from the environment
// again, as a fresh process's first call does (for the first-call probes in the tests).
void forget_process_cache();

}  // namespace kjit::cache
