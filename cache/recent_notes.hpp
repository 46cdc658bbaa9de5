// The notes a cache folder was given last: <dir>/recent-notes names them, newest first, so that a
// fresh process can read them ahead on the warm start's thread (jit/warm_start.hpp) and its first
// calls find their notes in memory instead of opening a file each (docs/CACHE.md, "Warm start").
//
// A hint, never the truth: written when a note is written (the long way, which writes files
// anyway), atomically (temporary, rename) but unlocked and unsynced, so that two processes
// writing notes at once may each drop the other's name; a name that no longer names a note is a
// miss; a damaged list reads as a shorter or an empty one.
//
//   kjit-recent-notes 1
//   <name>            32 lowercase hex characters each, at most kRecentNotes of them
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <sys/types.h>
#include <vector>

namespace kjit::cache {

inline constexpr std::size_t kRecentNotes = 32;
inline constexpr const char* kRecentNotesFile = "recent-notes";

// The names the list in `dir` holds, newest first (valid names only); empty when there is none.
std::vector<std::string> read_recent_notes(const std::filesystem::path& dir);

// Puts `name` first in the list in `dir` (once; the oldest dropped beyond kRecentNotes), written
// with `mode`. False when it could not be written (nothing else depends on it).
bool remember_recent_note(const std::filesystem::path& dir, const std::string& name, mode_t mode);

// Removes the list in `dir`, and temporaries of it that a killed writer left (kjit cache clear).
void forget_recent_notes(const std::filesystem::path& dir);

}  // namespace kjit::cache
