// The on-disk entry format: round trips, and every kind of damage detected with the right reason.
#include <catch2/catch.hpp>

#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cache/entry.hpp"
#include "kjit/error.hpp"
#include "test_support.hpp"

using kjit::cache::Entry;
using kjit::cache::parse_entry;
using kjit::cache::serialize_entry;

namespace {

const std::string kKey = "0123456789abcdef0123456789abcdef";

Entry make_entry(std::size_t cubin_bytes = 64, std::size_t ptx_chars = 32) {
    Entry e;
    e.key = kKey;
    e.meta.kernel_name = "axpb";
    e.meta.types = "T=float32,U=int64";
    e.meta.arch = "sm_90";
    e.meta.nvrtc_version = "12.8";
    e.meta.created_unix = 1'700'000'000;
    e.meta.lowered_names = {{"axpb<float>", "_Z4axpbIfEvPf"}, {"k", "k"}};
    e.meta.spec_json = R"({"kind": "elementwise", "op": "y = a * x + b", "note": "ünïcödé \"quoted\""})";
    for (std::size_t i = 0; i < cubin_bytes; ++i) e.cubin.push_back(static_cast<unsigned char>(kjit::test::rng()()));
    for (std::size_t i = 0; i < ptx_chars; ++i) e.ptx.push_back(static_cast<char>('a' + i % 26));
    return e;
}

void put_le(std::vector<unsigned char>& out, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

// An entry file built here from the documented layout, independently of serialize_entry, so
// that the reader can be given well-checksummed files with exactly one thing wrong. The metadata
// is given as its bytes: JSON for version 1 (the default here), fields for version 2.
std::vector<unsigned char> build(const std::string& key, const std::string& meta, const std::string& cubin,
                                 const std::string& ptx, std::uint32_t version = kjit::cache::kJsonEntryFormatVersion) {
    std::vector<unsigned char> out(kjit::cache::kEntryMagic.begin(), kjit::cache::kEntryMagic.end());
    put_le(out, version, 4);
    for (const std::string* s : {&key, &meta, &cubin, &ptx}) put_le(out, s->size(), 8);
    for (const std::string* s : {&key, &meta, &cubin, &ptx}) out.insert(out.end(), s->begin(), s->end());
    put_le(out, XXH3_64bits(out.data(), out.size()), 8);
    return out;
}

const std::string kMeta =
    R"({"kernel_name":"k","types":"","arch":"sm_90","nvrtc_version":"12.8","created_unix":5,"lowered_names":[],"spec_json":""})";

// Version 2 metadata written from the documented layout: u32-prefixed strings, the creation time
// (i64), the count of lowered names (u32) and their pairs, the manifest entry.
std::string field(const std::string& s) {
    std::vector<unsigned char> out;
    put_le(out, s.size(), 4);
    return std::string(out.begin(), out.end()) + s;
}
std::string integer(std::uint64_t v, int bytes) {
    std::vector<unsigned char> out;
    put_le(out, v, bytes);
    return std::string(out.begin(), out.end());
}
const std::string kFields = field("k") + field("") + field("sm_90") + field("12.8") + integer(5, 8) + integer(1, 4) +
                            field("k<int>") + field("_Z1kIiEvv") + field("{}");

std::string problem_of(const std::vector<unsigned char>& bytes, std::string_view key = kKey) {
    std::string problem;
    const auto e = parse_entry(bytes, key, problem);
    CHECK_FALSE(e.has_value());
    return problem;
}

}  // namespace

TEST_CASE("an entry round-trips through its bytes", "[cache_entry]") {
    for (const auto& [cubin, ptx] : {std::pair{std::size_t{0}, std::size_t{0}}, {1, 0}, {0, 1}, {100'000, 50'000}}) {
        Entry e = make_entry(cubin, ptx);
        if (cubin == 0) e.meta.lowered_names.clear();
        const auto bytes = serialize_entry(e);
        std::string problem = "stale";
        const auto back = parse_entry(bytes, kKey, problem);
        REQUIRE(back.has_value());
        CHECK(problem.empty());
        CHECK(*back == e);
        // An empty expected key accepts the key the file holds.
        CHECK(parse_entry(bytes, "", problem) == e);
    }
}

TEST_CASE("serialized bytes follow the documented layout", "[cache_entry]") {
    const Entry e = make_entry(10, 7);
    const auto bytes = serialize_entry(e);
    REQUIRE(bytes.size() > 52);
    CHECK(std::memcmp(bytes.data(), "KJITCACH", 8) == 0);
    CHECK(bytes[8] == kjit::cache::kEntryFormatVersion);
    CHECK((bytes[9] | bytes[10] | bytes[11]) == 0);
    auto u64 = [&](std::size_t at) {
        std::uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v |= std::uint64_t{bytes[at + i]} << (8 * i);
        return v;
    };
    CHECK(u64(12) == 32);
    CHECK(u64(28) == 10);
    CHECK(u64(36) == 7);
    CHECK(44 + u64(12) + u64(20) + u64(28) + u64(36) + 8 == bytes.size());
    CHECK(std::string(bytes.begin() + 44, bytes.begin() + 76) == kKey);
    CHECK(u64(bytes.size() - 8) == XXH3_64bits(bytes.data(), bytes.size() - 8));
    // The reader accepts a file built from the layout alone, in either version.
    std::string problem;
    CHECK(parse_entry(build(kKey, kMeta, "cubin", "ptx"), kKey, problem).has_value());
    const auto v2 = parse_entry(build(kKey, kFields, "cubin", "ptx", kjit::cache::kEntryFormatVersion), kKey, problem);
    REQUIRE(v2.has_value());
    CHECK(v2->meta.kernel_name == "k");
    CHECK(v2->meta.arch == "sm_90");
    CHECK(v2->meta.created_unix == 5);
    CHECK(v2->meta.lowered_names == std::vector<std::pair<std::string, std::string>>{{"k<int>", "_Z1kIiEvv"}});
    CHECK(v2->meta.spec_json == "{}");
    // And what serialize_entry writes is version 2, metadata as documented.
    Entry small = make_entry(3, 2);
    small.meta = v2->meta;
    const auto written = serialize_entry(small);
    CHECK(std::string(written.begin() + 76, written.begin() + 76 + static_cast<std::ptrdiff_t>(kFields.size())) == kFields);
}

TEST_CASE("entries written by an earlier kjit (JSON metadata, version 1) are still read", "[cache_entry]") {
    std::string problem;
    const auto e = parse_entry(build(kKey, kMeta, "cubin", "ptx"), kKey, problem);
    REQUIRE(e.has_value());
    CHECK(problem.empty());
    CHECK(e->meta.arch == "sm_90");
    CHECK(e->meta.created_unix == 5);
    CHECK(std::string(e->cubin.begin(), e->cubin.end()) == "cubin");
    CHECK(e->ptx == "ptx");
}

TEST_CASE("every single-bit flip of an entry is detected", "[cache_entry]") {
    const auto good = serialize_entry(make_entry(16, 16));
    for (std::size_t bit = 0; bit < good.size() * 8; ++bit) {
        auto bad = good;
        bad[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
        INFO("bit " << bit << " of " << good.size() * 8);
        CHECK_FALSE(problem_of(bad).empty());
    }
}

TEST_CASE("every truncation and any extra byte is detected", "[cache_entry]") {
    const auto good = serialize_entry(make_entry(16, 16));
    for (std::size_t n = 0; n < good.size(); ++n) {
        INFO("truncated to " << n << " of " << good.size());
        const std::vector<unsigned char> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
        const std::string problem = problem_of(cut);
        const bool named = problem.starts_with("too short") || problem.starts_with("sizes do not add up");
        CHECK(named);
    }
    auto longer = good;
    longer.push_back(0);
    CHECK(problem_of(longer).starts_with("sizes do not add up"));
}

TEST_CASE("each kind of damage is reported as what it is", "[cache_entry]") {
    CHECK(problem_of({}).starts_with("too short"));
    auto bytes = build(kKey, kMeta, "c", "p");
    bytes[0] = 'X';
    CHECK(problem_of(bytes).starts_with("bad magic"));

    // A future version with a valid checksum: unsupported, whatever follows.
    CHECK(problem_of(build(kKey, kMeta, "c", "p", 3)) == "unsupported format version 3 (this kjit reads versions 1 and 2)");
    CHECK(problem_of(build(kKey, kMeta, "c", "p", 0)).starts_with("unsupported format version 0"));
    // JSON metadata in a version 2 file, and fields in a version 1 file, are malformed.
    CHECK(problem_of(build(kKey, kMeta, "c", "p", 2)).starts_with("malformed metadata"));
    CHECK(problem_of(build(kKey, kFields, "c", "p", 1)) == "malformed metadata: not valid JSON");

    bytes = build(kKey, kMeta, "c", "p");
    bytes[bytes.size() - 1] ^= 0x80;
    CHECK(problem_of(bytes).starts_with("checksum mismatch"));
    bytes = build(kKey, kMeta, "c", "p");
    bytes[bytes.size() - 9] ^= 0x01;  // last byte of the PTX
    CHECK(problem_of(bytes).starts_with("checksum mismatch"));

    CHECK(problem_of(build(kKey, kMeta, "c", "p"), "ffffffffffffffffffffffffffffffff").starts_with("key differs from expected"));
    CHECK(problem_of(build("../../../etc/passwd", kMeta, "c", "p"), "").starts_with("malformed key"));
    CHECK(problem_of(build("0123456789ABCDEF0123456789ABCDEF", kMeta, "c", "p"), "").starts_with("malformed key"));

    CHECK(problem_of(build(kKey, "{not json", "c", "p")) == "malformed metadata: not valid JSON");
    CHECK(problem_of(build(kKey, "[1, 2]", "c", "p")) == "malformed metadata: not a JSON object");
    CHECK(problem_of(build(kKey, R"({"kernel_name": "k"})", "c", "p")).starts_with("malformed metadata: field"));
    std::string meta = kMeta;
    meta.replace(meta.find("5"), 1, "\"5\"");
    CHECK(problem_of(build(kKey, meta, "c", "p")) ==
          "malformed metadata: field 'created_unix' is missing or not an integer");
    meta = kMeta;
    meta.replace(meta.find("[]"), 2, R"([["a"]])");
    CHECK(problem_of(build(kKey, meta, "c", "p")).starts_with("malformed metadata: 'lowered_names'"));
}

TEST_CASE("corrupt lengths cannot overflow or allocate", "[cache_entry]") {
    const auto good = build(kKey, kMeta, "cubin", "ptx");
    // Each length in turn set to huge values, and pairs that overflow 64 bits when added.
    for (std::size_t field = 0; field < 4; ++field) {
        for (const std::uint64_t v : {~std::uint64_t{0}, std::uint64_t{1} << 63, std::uint64_t{1} << 40,
                                      std::uint64_t{good.size()}}) {
            auto bad = good;
            for (int i = 0; i < 8; ++i) bad[12 + 8 * field + i] = static_cast<unsigned char>(v >> (8 * i));
            CHECK(problem_of(bad).starts_with("sizes do not add up"));
        }
    }
    auto wrap = good;  // key length 2^64 - 1 and metadata length 2: the sum wraps to 1
    for (int i = 0; i < 8; ++i) wrap[12 + i] = 0xff;
    for (int i = 0; i < 8; ++i) wrap[20 + i] = i == 0 ? 2 : 0;
    CHECK(problem_of(wrap).starts_with("sizes do not add up"));
}

TEST_CASE("version 2 metadata: any bytes round-trip, and every damaged field is named", "[cache_entry]") {
    Entry e = make_entry();
    e.meta.kernel_name = std::string("bad\xff\xfe\0\n", 7);  // not UTF-8 (JSON could not hold it)
    e.meta.created_unix = -1;
    std::string problem;
    CHECK(parse_entry(serialize_entry(e), kKey, problem) == e);

    const std::uint32_t v2 = kjit::cache::kEntryFormatVersion;
    // Every cut of the metadata section (the other sections' lengths still adding up).
    for (std::size_t n = 0; n < kFields.size(); ++n) {
        INFO("metadata cut to " << n << " of " << kFields.size() << " bytes");
        CHECK(problem_of(build(kKey, kFields.substr(0, n), "c", "p", v2)).starts_with("malformed metadata"));
    }
    CHECK(problem_of(build(kKey, kFields + "x", "c", "p", v2)) == "malformed metadata: 1 bytes after the last field");
    // A string length past the end, and a count of lowered names the section cannot hold.
    std::string meta = kFields;
    meta[0] = '\x7f';
    CHECK(problem_of(build(kKey, meta, "c", "p", v2)) == "malformed metadata: a field runs past the end of the section");
    meta = field("k") + field("") + field("sm_90") + field("12.8") + integer(5, 8) + integer(0xffffffffu, 4) + field("{}");
    CHECK(problem_of(build(kKey, meta, "c", "p", v2)).starts_with("malformed metadata: 4294967295 lowered names"));
}

TEST_CASE("random garbage and random damage never crash and never parse", "[cache_entry]") {
    auto& rng = kjit::test::rng();
    const auto good = serialize_entry(make_entry(40, 40));
    for (int round = 0; round < 3000; ++round) {
        std::vector<unsigned char> bytes;
        switch (round % 3) {
            case 0:  // pure garbage of any length
                bytes.resize(rng() % 600);
                for (auto& b : bytes) b = static_cast<unsigned char>(rng());
                break;
            case 1:  // a valid preamble followed by garbage (random lengths included)
                bytes.assign(good.begin(), good.begin() + 12);
                bytes.resize(12 + rng() % 600);
                for (std::size_t i = 12; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(rng());
                break;
            default:  // a valid entry with a few random bytes changed, maybe cut
                bytes = good;
                for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) bytes[rng() % bytes.size()] ^= 1 + rng() % 255;
                if (rng() % 2) bytes.resize(rng() % bytes.size());
                if (bytes == good) continue;  // two changes of one byte that cancel out
        }
        std::string problem;
        const auto e = parse_entry(bytes, kKey, problem);
        INFO("round " << round);
        CHECK_FALSE(e.has_value());
        CHECK_FALSE(problem.empty());
    }
}

TEST_CASE("cache keys are 32 lowercase hex characters", "[cache_entry]") {
    CHECK(kjit::cache::is_valid_key(kKey));
    CHECK_FALSE(kjit::cache::is_valid_key(""));
    CHECK_FALSE(kjit::cache::is_valid_key(std::string(33, 'a')));
    CHECK_FALSE(kjit::cache::is_valid_key("0123456789ABCDEF0123456789abcdef"));
    CHECK_FALSE(kjit::cache::is_valid_key("../3456789abcdef0123456789abcdef"));
    CHECK_FALSE(kjit::cache::is_valid_key(std::string(31, 'a') + 'g'));
}
