// Files written whole or not at all: the one durability rule of every file nce writes.
//
//   1. the temporaries of `path` that dead writers left behind (`<path>.tmp-<pid>`, that pid
//      gone) are removed, so a job killed again and again does not pile them up;
//   2. the bytes go to `<path>.tmp-<pid>` beside the target, which is flushed and fsync'ed;
//   3. the temporary is renamed over `path`: a reader sees the old file or the whole new one;
//   4. the folder is fsync'ed, so the rename itself survives a crash.
//
// On any failure the temporary is removed, `path` is left as it was, and one error line
// names the writer (`what`, e.g. "write_npy"), the path and the reason:
//
//   write_npy: writing 'scores.npy' failed: No space left on device
#pragma once
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace nce {

// Writes through `write`, which gets the open temporary and returns false when a write failed.
void write_file_atomically(const std::string& path, std::string_view what,
                           const std::function<bool(std::FILE*)>& write);

// Writes `bytes` (a text, or any bytes) as the whole file.
void write_bytes_atomically(const std::string& path, std::string_view what, std::string_view bytes);

// Copies the file `from` over `to` by the same rule.
void copy_file_atomically(const std::string& from, const std::string& to, std::string_view what);

// For a library that writes a file by its name (FAISS, SentencePiece's trainer, a copy):
// step 1, then the temporary's name to give it. commit_atomic_temporary does steps 3 and 4
// after syncing what the library wrote; discard_atomic_temporary removes it after a failure.
std::string atomic_temporary_for(const std::string& path);
void commit_atomic_temporary(const std::string& temporary, const std::string& path, std::string_view what);
void discard_atomic_temporary(const std::string& temporary);

}  // namespace nce
