#include "cache/recent_notes.hpp"

#include <algorithm>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/cache_key.hpp"
#include "cache/file_io.hpp"

namespace kjit::cache {
namespace {

constexpr std::string_view kHeader = "kjit-recent-notes 1\n";
// The header and kRecentNotes names of 32 characters and a line end: anything longer is not a list.
constexpr std::size_t kMaxBytes = kHeader.size() + kRecentNotes * 33;

std::string list_path(const std::filesystem::path& dir) { return (dir / kRecentNotesFile).native(); }

}  // namespace

std::vector<std::string> read_recent_notes(const std::filesystem::path& dir) {
    std::vector<std::string> names;
    // Not through a symlink, and a FIFO planted here fails the read instead of blocking it.
    const Fd fd = open_retry(list_path(dir).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    if (!fd) return names;
    unsigned char bytes[kMaxBytes + 1];
    const std::optional<std::size_t> got = read_all(fd.get(), bytes, sizeof bytes);
    if (!got || *got > kMaxBytes) return names;
    const std::string_view text(reinterpret_cast<const char*>(bytes), *got);
    if (!text.starts_with(kHeader)) return names;
    for (std::size_t at = kHeader.size(); at < text.size();) {
        const std::size_t end = text.find('\n', at);
        if (end == std::string_view::npos) break;  // a torn last line: the names before it stand
        const std::string_view name = text.substr(at, end - at);
        if (!is_key(name) || std::find(names.begin(), names.end(), name) != names.end()) break;
        names.emplace_back(name);
        at = end + 1;
    }
    return names;
}

bool remember_recent_note(const std::filesystem::path& dir, const std::string& name, mode_t mode) {
    if (!is_key(name)) return false;
    std::vector<std::string> names = read_recent_notes(dir);
    if (!names.empty() && names.front() == name) return true;  // already first: no write
    std::erase(names, name);
    names.insert(names.begin(), name);
    if (names.size() > kRecentNotes) names.resize(kRecentNotes);
    std::string text(kHeader);
    for (const std::string& n : names) (text += n) += '\n';
    return replace_file(list_path(dir), text, mode, ModeIs::exact, /*durable=*/false).empty();
}

void forget_recent_notes(const std::filesystem::path& dir) {
    const std::string temporaries = std::string(kRecentNotesFile) + ".tmp.";
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = f.path().filename().string();
        if (name == kRecentNotesFile || name.starts_with(temporaries)) ::unlink(f.path().c_str());
    }
}

}  // namespace kjit::cache
