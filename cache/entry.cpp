#include "cache/entry.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <nlohmann/json.hpp>

#include "kjit/error.hpp"

namespace kjit::cache {
namespace {

using Json = nlohmann::json;

constexpr std::size_t kMagicSize = 8;
constexpr std::size_t kVersionOffset = kMagicSize;
constexpr std::size_t kLengthsOffset = kVersionOffset + 4;
constexpr std::size_t kSectionCount = 4;  // key, metadata, cubin, ptx
constexpr std::size_t kHeaderSize = kLengthsOffset + 8 * kSectionCount;
static_assert(kHeaderSize == kEntryHeaderBytes);
constexpr std::size_t kChecksumSize = 8;
static_assert(kEntryMagic.size() == kMagicSize);

// Integers are written byte by byte so the format does not depend on the host's byte order.
void put_le(std::vector<unsigned char>& out, std::uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<unsigned char>(value >> (8 * i)));
}

std::uint64_t get_le(std::span<const unsigned char> bytes, std::size_t offset, int count) {
    std::uint64_t value = 0;
    for (int i = 0; i < count; ++i) value |= std::uint64_t{bytes[offset + i]} << (8 * i);
    return value;
}

void append(std::vector<unsigned char>& out, const void* data, std::size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    out.insert(out.end(), p, p + size);
}

std::uint64_t checksum(std::span<const unsigned char> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

// Version 2 metadata (cache/entry.hpp): fields in a fixed order, strings length-prefixed.
void put_string(std::vector<unsigned char>& out, const std::string& s, const EntryMetadata& meta) {
    if (s.size() > 0xffffffffu)
        throw CacheError("cannot store the cache entry's metadata (kernel '" + meta.kernel_name.substr(0, 64) +
                         "'): a field of " + std::to_string(s.size()) + " bytes");
    put_le(out, s.size(), 4);
    append(out, s.data(), s.size());
}

std::vector<unsigned char> metadata_fields(const EntryMetadata& meta) {
    std::vector<unsigned char> out;
    for (const std::string* s : {&meta.kernel_name, &meta.types, &meta.arch, &meta.nvrtc_version}) put_string(out, *s, meta);
    put_le(out, static_cast<std::uint64_t>(meta.created_unix), 8);
    if (meta.lowered_names.size() > 0xffffffffu) throw CacheError("cannot store the cache entry's metadata: too many lowered names");
    put_le(out, meta.lowered_names.size(), 4);
    for (const auto& [name, lowered] : meta.lowered_names) {
        put_string(out, name, meta);
        put_string(out, lowered, meta);
    }
    put_string(out, meta.spec_json, meta);
    return out;
}

// Reads version 2 metadata: every field whole, in order, and nothing after the last.
class FieldReader {
public:
    explicit FieldReader(std::span<const unsigned char> bytes) : bytes_(bytes) {}
    bool integer(int size, std::uint64_t& value) {
        if (bytes_.size() - at_ < static_cast<std::size_t>(size)) return false;
        value = get_le(bytes_, at_, size);
        at_ += static_cast<std::size_t>(size);
        return true;
    }
    bool string(std::string& out) {
        std::uint64_t n = 0;
        if (!integer(4, n) || n > bytes_.size() - at_) return false;
        out.assign(reinterpret_cast<const char*>(bytes_.data() + at_), static_cast<std::size_t>(n));
        at_ += static_cast<std::size_t>(n);
        return true;
    }
    std::size_t left() const { return bytes_.size() - at_; }

private:
    std::span<const unsigned char> bytes_;
    std::size_t at_ = 0;
};

std::optional<EntryMetadata> parse_metadata_fields(std::span<const unsigned char> bytes, std::string& problem) {
    FieldReader r(bytes);
    EntryMetadata meta;
    std::uint64_t created = 0, lowered = 0;
    if (!r.string(meta.kernel_name) || !r.string(meta.types) || !r.string(meta.arch) || !r.string(meta.nvrtc_version) ||
        !r.integer(8, created) || !r.integer(4, lowered)) {
        problem = "malformed metadata: a field runs past the end of the section";
        return std::nullopt;
    }
    meta.created_unix = static_cast<std::int64_t>(created);
    // Each lowered name takes at least 8 bytes, so a damaged count cannot make this reserve more
    // than the section holds.
    if (lowered > r.left() / 8) {
        problem = "malformed metadata: " + std::to_string(lowered) + " lowered names in " + std::to_string(r.left()) + " bytes";
        return std::nullopt;
    }
    meta.lowered_names.resize(static_cast<std::size_t>(lowered));
    for (auto& [name, mangled] : meta.lowered_names)
        if (!r.string(name) || !r.string(mangled)) {
            problem = "malformed metadata: a lowered name runs past the end of the section";
            return std::nullopt;
        }
    if (!r.string(meta.spec_json)) {
        problem = "malformed metadata: a field runs past the end of the section";
        return std::nullopt;
    }
    if (r.left() != 0) {
        problem = "malformed metadata: " + std::to_string(r.left()) + " bytes after the last field";
        return std::nullopt;
    }
    return meta;
}

// Version 1 metadata, a JSON object, still read. One required string field; false (and
// `problem` set) when it is missing or not a string.
bool read_string(const Json& j, const char* field, std::string& out, std::string& problem) {
    const auto it = j.find(field);
    if (it == j.end() || !it->is_string()) {
        problem = std::string("malformed metadata: field '") + field + "' is missing or not a string";
        return false;
    }
    out = it->get<std::string>();
    return true;
}

bool read_lowered_names(const Json& j, EntryMetadata& meta, std::string& problem) {
    const auto it = j.find("lowered_names");
    if (it == j.end() || !it->is_array()) {
        problem = "malformed metadata: field 'lowered_names' is missing or not an array";
        return false;
    }
    for (const Json& pair : *it) {
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string()) {
            problem = "malformed metadata: 'lowered_names' holds something other than [name, lowered] pairs";
            return false;
        }
        meta.lowered_names.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
    }
    return true;
}

std::optional<EntryMetadata> parse_json_metadata(std::string_view text, std::string& problem) {
    try {
        const Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
        if (!j.is_object()) {
            problem = j.is_discarded() ? "malformed metadata: not valid JSON" : "malformed metadata: not a JSON object";
            return std::nullopt;
        }
        EntryMetadata meta;
        if (!read_string(j, "kernel_name", meta.kernel_name, problem) || !read_string(j, "types", meta.types, problem) ||
            !read_string(j, "arch", meta.arch, problem) ||
            !read_string(j, "nvrtc_version", meta.nvrtc_version, problem) ||
            !read_string(j, "spec_json", meta.spec_json, problem) || !read_lowered_names(j, meta, problem))
            return std::nullopt;
        const auto created = j.find("created_unix");
        if (created == j.end() || !created->is_number_integer()) {
            problem = "malformed metadata: field 'created_unix' is missing or not an integer";
            return std::nullopt;
        }
        meta.created_unix = created->get<std::int64_t>();
        return meta;
    } catch (const Json::exception& e) {
        problem = std::string("malformed metadata: ") + e.what();
        return std::nullopt;
    }
}

// The four section lengths, from `bytes` (at least the header) of a file of `file_size` bytes,
// checked to add up to exactly the bytes between header and checksum. Each length is compared
// with what is left before it is added, so a corrupt length can neither overflow the sum nor make
// the caller allocate more than the file holds.
bool read_lengths(std::span<const unsigned char> bytes, std::uint64_t file_size,
                  std::array<std::uint64_t, kSectionCount>& lengths, std::string& problem) {
    const std::uint64_t available = file_size - kHeaderSize - kChecksumSize;
    std::uint64_t used = 0;
    bool fits = true;
    for (std::size_t i = 0; i < kSectionCount; ++i) {
        lengths[i] = get_le(bytes, kLengthsOffset + 8 * i, 8);
        if (lengths[i] > available - used) fits = false;
        if (fits) used += lengths[i];
    }
    if (fits && used == available) return true;
    problem = "sizes do not add up: sections of " + std::to_string(lengths[0]) + " (key) + " +
              std::to_string(lengths[1]) + " (metadata) + " + std::to_string(lengths[2]) + " (cubin) + " +
              std::to_string(lengths[3]) + " (ptx) bytes in a file with room for " + std::to_string(available);
    return false;
}

// Magic and version first: a file of another version may have another layout after them.
// `bytes` holds the file's first bytes (at least the header, or all of a shorter file).
bool check_preamble(std::span<const unsigned char> bytes, std::uint64_t file_size, std::string& problem) {
    if (file_size < kLengthsOffset) {
        problem = "too short: " + std::to_string(file_size) + " bytes, not even a header";
        return false;
    }
    if (std::memcmp(bytes.data(), kEntryMagic.data(), kMagicSize) != 0) {
        problem = "bad magic: not a kjit cache entry";
        return false;
    }
    const auto version = static_cast<std::uint32_t>(get_le(bytes, kVersionOffset, 4));
    if (version != kEntryFormatVersion && version != kJsonEntryFormatVersion) {
        problem = "unsupported format version " + std::to_string(version) + " (this kjit reads versions " +
                  std::to_string(kJsonEntryFormatVersion) + " and " + std::to_string(kEntryFormatVersion) + ")";
        return false;
    }
    if (file_size < kHeaderSize + kChecksumSize) {
        problem = "too short: " + std::to_string(file_size) + " bytes, less than the " +
                  std::to_string(kHeaderSize + kChecksumSize) + " of an empty entry";
        return false;
    }
    return true;
}

}  // namespace

bool is_valid_key(std::string_view key) noexcept {
    if (key.size() != 32) return false;
    for (const char c : key)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

bool check_entry_header(std::span<const unsigned char> header, std::uint64_t file_size, std::string& problem) {
    problem.clear();
    if (header.size() < std::min<std::uint64_t>(file_size, kHeaderSize)) {
        problem = "cannot read the header: " + std::to_string(header.size()) + " of " + std::to_string(file_size) + " bytes";
        return false;
    }
    std::array<std::uint64_t, kSectionCount> lengths{};
    if (!check_preamble(header, file_size, problem) || !read_lengths(header, file_size, lengths, problem)) return false;
    if (lengths[0] != 32) {
        problem = "malformed key: " + std::to_string(lengths[0]) + " bytes, not 32";
        return false;
    }
    return true;
}

std::vector<unsigned char> serialize_entry(const Entry& entry) {
    const std::vector<unsigned char> meta = metadata_fields(entry.meta);
    std::vector<unsigned char> out;
    out.reserve(kHeaderSize + entry.key.size() + meta.size() + entry.cubin.size() + entry.ptx.size() + kChecksumSize);
    append(out, kEntryMagic.data(), kMagicSize);
    put_le(out, kEntryFormatVersion, 4);
    for (const std::size_t size : {entry.key.size(), meta.size(), entry.cubin.size(), entry.ptx.size()})
        put_le(out, size, 8);
    append(out, entry.key.data(), entry.key.size());
    append(out, meta.data(), meta.size());
    append(out, entry.cubin.data(), entry.cubin.size());
    append(out, entry.ptx.data(), entry.ptx.size());
    put_le(out, checksum(out), 8);
    return out;
}

std::optional<Entry> parse_entry(std::span<const unsigned char> bytes, std::string_view expected_key,
                                 std::string& problem) {
    problem.clear();
    std::array<std::uint64_t, kSectionCount> lengths{};
    if (!check_preamble(bytes, bytes.size(), problem) || !read_lengths(bytes, bytes.size(), lengths, problem))
        return std::nullopt;

    const std::size_t body_end = bytes.size() - kChecksumSize;
    const std::uint64_t stored = get_le(bytes, body_end, 8);
    if (const std::uint64_t actual = checksum(bytes.first(body_end)); actual != stored) {
        problem = "checksum mismatch: the file is damaged";
        return std::nullopt;
    }

    // Lengths are known to fit now; cut the sections out one after another.
    std::size_t offset = kHeaderSize;
    auto next = [&](std::size_t i) {
        const auto section = bytes.subspan(offset, lengths[i]);
        offset += lengths[i];
        return section;
    };
    const auto key = next(0), meta = next(1), cubin = next(2), ptx = next(3);

    Entry entry;
    entry.key.assign(key.begin(), key.end());
    if (!is_valid_key(entry.key)) {
        problem = "malformed key: not 32 lowercase hex characters";
        return std::nullopt;
    }
    if (!expected_key.empty() && entry.key != expected_key) {
        problem = "key differs from expected: the file holds " + entry.key + ", expected " + std::string(expected_key);
        return std::nullopt;
    }
    const bool json = get_le(bytes, kVersionOffset, 4) == kJsonEntryFormatVersion;
    auto parsed = json ? parse_json_metadata(std::string_view(reinterpret_cast<const char*>(meta.data()), meta.size()), problem)
                       : parse_metadata_fields(meta, problem);
    if (!parsed) return std::nullopt;
    entry.meta = std::move(*parsed);
    entry.cubin.assign(cubin.begin(), cubin.end());
    entry.ptx.assign(ptx.begin(), ptx.end());
    return entry;
}

}  // namespace kjit::cache
