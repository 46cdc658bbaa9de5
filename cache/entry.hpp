// One compiled kernel as stored on disk: its key, what produced it, the cubin and the PTX, in a
// self-checking binary format. The disk store (cache/disk_store.hpp) only moves these bytes
// around; everything about what an entry file looks like is here.
//
// File layout, all integers little-endian:
//   offset  size  field
//        0     8  magic "KJITCACH"
//        8     4  format version (u32), kEntryFormatVersion
//       12     8  key length (u64)
//       20     8  metadata length (u64)
//       28     8  cubin length (u64)
//       36     8  ptx length (u64)
//       44     …  key bytes (32 lowercase hex chars), metadata, cubin bytes, PTX text, one
//                 after the other with no padding
//   end - 8    8  XXH3-64 (seed 0) of every byte before it
// The metadata of version 2 (what kjit writes) is its fields in a fixed order, each string a u32
// length then its bytes: kernel_name, types, arch, nvrtc_version, then created_unix (i64), the
// number of lowered names (u32) and each name expression and lowered name (strings), then
// spec_json. Version 1 held the same fields as a JSON object; kjit still reads it, so that caches
// written by an earlier kjit (a shipped read-only one too) keep serving.
// The lengths must add up to the file size exactly, so trailing garbage is an error as well as
// truncation. A reader checks magic, version, lengths, checksum, key and metadata in that order
// and never allocates more than the file it was given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit::cache {

// Bumped whenever the layout above or the meaning of a metadata field changes; a file with
// another version than these two is reported as unsupported, never guessed at. Version 2 holds
// its metadata in plain length-prefixed fields: a fresh process's first cached call reads one
// entry, and parsing its JSON metadata was a fifth of that call's instructions (docs/perf-log.md).
inline constexpr std::uint32_t kEntryFormatVersion = 2;
inline constexpr std::uint32_t kJsonEntryFormatVersion = 1;  // metadata as JSON: read, no longer written

// The 8 bytes every entry file starts with.
inline constexpr std::string_view kEntryMagic = "KJITCACH";

// Who made an entry and from what (the metadata section).
struct EntryMetadata {
    std::string kernel_name;
    std::string types;          // the dtype binding, e.g. "T=float32,U=int64"
    std::string arch;           // "sm_90" or "compute_90"
    std::string nvrtc_version;
    std::int64_t created_unix = 0;
    std::vector<std::pair<std::string, std::string>> lowered_names;  // name expression -> mangled
    std::string spec_json;      // the manifest entry that produced it, opaque to the cache

    bool operator==(const EntryMetadata&) const = default;
};

struct Entry {
    std::string key;  // 32 lowercase hex characters
    EntryMetadata meta;
    std::vector<unsigned char> cubin;
    std::string ptx;

    bool operator==(const Entry&) const = default;
};

// True when `key` is 32 lowercase hex characters, the only keys the cache accepts. The store also
// uses this to keep a key from naming a path outside its folder.
bool is_valid_key(std::string_view key) noexcept;

// The bytes of an entry file (the current format version). Throws kjit::CacheError when a
// metadata string is longer than a u32 length can say.
std::vector<unsigned char> serialize_entry(const Entry& entry);

// The size of an entry file's header: magic, version and the four section lengths.
inline constexpr std::size_t kEntryHeaderBytes = 44;

// Whether `header`, the first kEntryHeaderBytes of a file of `file_size` bytes (all of it when it
// is shorter), can begin an entry: the magic, a known version, a key of 32 characters, and
// section lengths that add up to the file's size exactly. Nothing else is read: a reader checks
// this before it allocates and reads a big file (a sparse one near the size limit, say) whole.
// False with `problem` saying why, in parse_entry()'s words.
bool check_entry_header(std::span<const unsigned char> header, std::uint64_t file_size, std::string& problem);

// The entry stored in `bytes`, or nullopt with `problem` saying exactly what is wrong: too short,
// bad magic, unsupported format version, sizes that do not add up, checksum mismatch, key differs
// from `expected_key`, malformed metadata. An empty `expected_key` accepts any valid key (for
// tools that inspect a file whose name they do not trust). No content makes it throw; only running
// out of memory for a file's own size could.
std::optional<Entry> parse_entry(std::span<const unsigned char> bytes, std::string_view expected_key,
                                 std::string& problem);

}  // namespace kjit::cache
