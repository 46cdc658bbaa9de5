// One cache folder on disk: entries stored atomically, read without locks, created once across
// threads and processes, verified on every read, evicted least-recently-used under a size cap.
// The protocol is jitify2's LRUFileCache (DESIGN.md §Examples 6):
//
//   <dir>/<key[0..1]>/<key>.kjit                 an entry (cache/entry.hpp), sharded by key prefix
//   <dir>/<key[0..1]>/<key>.kjit.tmp.<pid>.<n>   an entry being written; renamed into place when
//                                                complete and fsynced, so a reader never sees half
//   <dir>/<key[0..1]>/<key>.lock                 flock()ed by whoever writes that key, who writes
//                                                its pid in it; removed by the holder before it
//                                                unlocks (see lock_file)
//
// Readers take no lock: rename() is atomic, so they see the old file, the new one or none.
// Writers of one key serialise on its lock file, which is what makes get_or_create() compile a
// key once across processes; while holding it, every temporary of that key is known to be stale.
// Nobody waits for a lock longer than the store's lock timeout (KJIT_CACHE_LOCK_TIMEOUT): a
// holder that is stopped or hung costs the others that wait once, then they compile without
// storing.
//
// Trust: every read is verified (magic, version, sizes, checksum, key); a damaged entry is
// never returned. A folder that other users can write to is not used at all (see DiskStore()),
// nor is a shard folder or file that is not the user's own (see shard_trusted()), and no symlink
// is followed to read a file.
//
// Thread safety: a DiskStore may be used from many threads at once; its mutable state is atomic
// (counters, and which shard folders were found sound).
//
// Beside the shards, <dir>/nvrtc-identity records the NVRTC last loaded (jit/compile/nvrtc_identity.hpp).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/entry.hpp"
#include "cache/file_io.hpp"

namespace kjit::cache {

class DiskStore {
public:
    // A store for `dir`. Never throws because of the folder; instead:
    //  - writable and missing: the folder is created (parents as needed) with mode 0700, so that a
    //    cache kjit makes for itself is private. To share a cache read-only with other users (a
    //    cache built on a build machine and shipped), create the folder with 0755 beforehand:
    //    files follow the folder's read permissions (0644 in a 0755 folder, 0600 in a 0700 one).
    //  - writable but it cannot be created or written: one warning, writable() == false, and it is
    //    still read from.
    //  - group- or world-writable (any S_IWGRP|S_IWOTH on the folder), or owned by another user
    //    than the effective one (a read-only folder may also be root's), writable or not: one
    //    warning and the store is unusable, for reads as well as writes: anyone who can write
    //    there could plant a binary that kjit would load and run, and a checksum proves nothing
    //    about who wrote the file. Reads miss, writes fail, get_or_create() just produces.
    //    Shard folders and the files read are held to the same rule, a shard folder that is a
    //    symlink is refused (one warning each, and a miss), and files are opened O_NOFOLLOW.
    //  - read-only and missing: reads miss.
    // `max_bytes` caps the total size of the entries, notes and aliases (0 = no cap); write()
    // prunes to it. `lock_timeout`: the longest a write waits for another writer's lock of its key.
    DiskStore(std::filesystem::path dir, bool writable, std::uint64_t max_bytes = 0,
              std::chrono::milliseconds lock_timeout = kDefaultLockTimeout);

    const std::filesystem::path& dir() const { return dir_; }
    // False when opened read-only, and also when the folder could not be used for writing.
    bool writable() const { return writable_; }
    // False when the folder is refused altogether (other users can write to it).
    bool usable() const { return usable_; }
    std::uint64_t max_bytes() const { return max_bytes_; }

    // Entries this store was asked to keep (write(), or get_or_create() producing one) and kept,
    // and those it could not: a folder that cannot be written or was refused, a failed write (a
    // full disk), a lock held too long. So that `kjit precompile` can say what it did not store.
    std::uint64_t stores() const { return stores_.load(std::memory_order_relaxed); }
    std::uint64_t store_failures() const { return store_failures_.load(std::memory_order_relaxed); }

    // <dir>/<key[0..1]>/<key>.kjit. Throws kjit::CacheError if `key` is not 32 lowercase hex
    // characters (a bug in the caller; it also keeps a key from naming a path outside the folder).
    std::filesystem::path entry_path(const std::string& key) const;

    // The entry, verified, or nullopt. Takes no lock. A damaged entry is never returned: it is
    // removed (if writable) and a warning is logged once per path. A hit on a writable store
    // records the access time for LRU eviction.
    std::optional<Entry> read(const std::string& key);

    // Stores `e` atomically (temporary file, fsync, rename, fsync of the shard folder) under the
    // key's lock. False if the store is not writable or writing failed (logged). Then, with a cap,
    // prunes to it, never evicting the entry just written. (The cap check lists the folder, so a
    // write costs O(entries) stat calls when a cap is set.)
    bool write(const Entry& e);

    // Compile once across threads and processes: the stored entry if there is one; otherwise,
    // under the key's exclusive lock, looks again, removes stale temporaries of the key, calls
    // produce(), stores its result and returns it. Other callers wait on the lock and then find
    // the entry. A store that cannot be written to is read, and on a miss produce() is called and
    // its result returned without being stored; a failed write is logged and the entry returned.
    // A lock held longer than the lock timeout (a stopped or hung holder) is warned about once,
    // naming the holder's pid, and produce()'s result is returned without being stored.
    // Exceptions from produce() propagate (the lock is released, nothing is stored). `stored`,
    // when given, says whether the entry returned is in the folder (found there or stored).
    Entry get_or_create(const std::string& key, const std::function<Entry()>& produce, bool* stored = nullptr);

    struct Item {
        std::string key;  // an entry's key, or a note's name
        std::filesystem::path path;
        std::uint64_t bytes = 0;
        std::int64_t last_used_unix = 0;  // atime as kjit records it, or mtime if there is no atime
    };
    // Entries only (not notes, temporaries or lock files), in no particular order. Works on any
    // folder that exists, even a refused one (listing loads nothing).
    std::vector<Item> list() const;
    // What the size cap counts: entries, notes and aliases.
    std::uint64_t total_bytes() const;

    // Every damaged entry and what is wrong with it. Removes nothing.
    std::vector<std::pair<std::filesystem::path, std::string>> verify() const;

    // Removes least-recently-used entries, notes and aliases until they total at most `max_bytes`;
    // returns the bytes removed. Order: the access time kjit records on each hit (see read()), or mtime
    // where a file system keeps no atime; ties broken by path. Does nothing unless writable().
    std::uint64_t prune(std::uint64_t max_bytes);

    // Removes every entry, alias and note, every temporary whose key is not being written, and
    // every lock file not held. Shard folders are left (a writer may be about to use one). Does
    // nothing unless writable(). Returns each file that could not be removed and why.
    std::vector<std::pair<std::filesystem::path, std::string>> clear();

    // Aliases: <dir>/<aa>/<alias>.alias holds the key of an entry, so that a process without NVRTC
    // (whose version is part of every key) finds entries by a key without it
    // (cache/kernel_cache.hpp). Written atomically like entries; clear() removes them; they count
    // in the size cap and are evicted with entries and notes, by the use kjit records when
    // reading one; an alias whose entry was evicted just misses. The file holds the key and then its own name, each on
    // a line, so that a file that holds another alias's key (swapped, copied) is a miss with a
    // warning; one of the key alone (written by kjit before 2026-12-06) is still read, and the
    // entry it leads to is checked against the request (KernelCache::find_alias).
    bool write_alias(const std::string& alias, const std::string& key);
    std::optional<std::string> read_alias(const std::string& alias) const;
    // Every alias file that is not sound: unreadable, not a key, or another alias's. Removes nothing.
    std::vector<std::pair<std::filesystem::path, std::string>> verify_aliases() const;

    // Notes: <dir>/<aa>/<name>.note holds a short text that lets a process skip work on a later
    // hit (jit/kernels/plan_note.hpp). Written atomically like aliases (but not fsynced), the text with
    // an XXH3 line of its own that read_note() checks (a damaged text reads as no note, never as
    // other text). The file starts with a line naming its note ("note=<name>", under the check line),
    // so that another note's file in its place (swapped, copied) reads as no note. Notes count in the size cap and are evicted like entries, by the access time kjit
    // records when reading one; clear() removes them. `name` is a key (32 lowercase hex
    // characters).
    struct Note {
        // The whole file (not a std::string, which would zero it before the read overwrites it).
        std::unique_ptr<unsigned char[]> bytes;
        std::size_t size = 0;
        std::size_t text_at = 0;    // bytes[text_at, text_size): the text, without its name and check lines
        std::size_t text_size = 0;
        std::string_view text() const {
            return {reinterpret_cast<const char*>(bytes.get()) + text_at, text_size - text_at};
        }
    };
    bool write_note(const std::string& name, const std::string& text);
    std::optional<Note> read_note(const std::string& name) const;
    // Every note whose text fails its check line. Removes nothing.
    std::vector<std::pair<std::filesystem::path, std::string>> verify_notes() const;

    // Removes temporaries older than `older_than` whose key nobody is writing now (left by a
    // killed writer); returns how many. Does nothing unless writable(). The first entry a store
    // writes sweeps those older than kStaleTemporaryAge (one listing of the folder per store, paid
    // after a compile, never by a cache hit); `kjit cache prune` sweeps them too.
    std::size_t sweep_stale_temporaries(std::chrono::seconds older_than);
    static constexpr std::chrono::seconds kStaleTemporaryAge{3600};

private:
    // Why the shard folder of `name` (a key or a note's or alias's name) may not be used: a
    // symlink, not a folder, not the user's own or writable by others; "" when it may be.
    // `missing` is set when it does not exist.
    std::string shard_problem(std::string_view name, bool* missing = nullptr) const;
    // Whether the shard folder of `name` may be read from and written to; a refused one is
    // warned about once. A sound one is remembered: only this user can replace a shard of a
    // folder that passed open_folder(), so a fresh process pays one lstat per shard it reads.
    bool shard_trusted(std::string_view name) const;
    bool ensure_shard(const std::filesystem::path& path, std::string& error) const;
    std::uint64_t prune_except(std::uint64_t max_bytes, const std::filesystem::path& keep,
                               const std::filesystem::path& keep_too = {});
    bool write_small_file(const std::string& name, std::string_view suffix, const std::string& bytes, const char* what,
                          bool durable);
    std::optional<std::string> read_small_file(const std::string& name, std::string_view suffix, std::size_t max_bytes) const;
    bool write_locked(const Entry& e, const std::filesystem::path& path);
    std::size_t remove_temporaries(const std::string& key, std::chrono::seconds older_than, bool lock_each);
    void open_folder(bool want_writable);

    std::filesystem::path dir_;
    bool writable_ = false;
    bool usable_ = true;
    bool root_may_own_ = false;  // a read-only folder: root's folders and files are trusted too
    std::uint64_t max_bytes_ = 0;
    std::chrono::milliseconds lock_timeout_;
    std::atomic<std::uint64_t> stores_{0}, store_failures_{0};
    unsigned file_mode_ = 0600;   // entries, temporaries and lock files
    unsigned shard_mode_ = 0700;  // shard folders
    std::atomic<std::uint64_t> tmp_counter_{0};
    mutable std::array<std::atomic<bool>, 256> shard_trusted_{};  // by the key's first byte
    std::once_flag swept_;  // the sweep after this store's first write
};

namespace detail {
// For tests only: called while an entry is being written, after the first half of its bytes are
// in the temporary file (with the temporary's path), so that a test can kill a writer mid-write.
// Not thread-safe to change while stores are writing.
void set_write_pause_hook(std::function<void(const std::filesystem::path& tmp)> hook);
}  // namespace detail

}  // namespace kjit::cache
