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

    // The note stored under `name` (cache/disk_store.hpp): as this process last read or wrote it,
    // else from the writable folder, else from the first read-only folder that has one, and that
    // folder's layer (0 is the first folder); nothing when none has it. Kept in memory so that a
    // second device of the same architecture, whose note has the same name, reads no file.
    struct FoundNote {
        DiskStore::Note note;
        std::size_t layer = 0;
    };
    std::optional<FoundNote> read_note(const std::string& name) const;
    // Stores a note in memory and in the writable folder (false when there is none or writing
    // failed: the note still serves this process).
    bool write_note(const std::string& name, const std::string& text);
    // A note read was taken (its plan and keys used): counted in cache_stats().note_hits.
    void count_note_hit();
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

    CacheSettings settings_;
    std::unique_ptr<DiskStore> writable_;                  // null: memory only
    std::vector<std::unique_ptr<DiskStore>> read_only_;
    std::array<Shard, kShards> shards_;

    std::atomic<std::uint64_t> memory_hits_{0}, memory_misses_{0}, compiles_{0}, compile_us_{0};
    mutable std::atomic<std::uint64_t> note_hits_{0};
    // Notes read or written by this process, by name: their text (without name and check lines)
    // and the layer it came from. A few hundred bytes per kernel binding and architecture.
    struct KeptNote {
        std::shared_ptr<const std::string> text;
        std::size_t layer = 0;
    };
    mutable std::mutex notes_mutex_;
    mutable std::unordered_map<std::string, KeptNote> notes_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> layer_hits_, layer_misses_;  // writable first
};

// The process's cache, made from the environment (or configure_cache()) on first use.
std::shared_ptr<KernelCache> process_cache();

}  // namespace kjit::cache
