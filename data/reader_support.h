// What every reader shares: opening its source file with one-line errors, the strict/lenient
// handling of a bad record, and the clock for ReadReport::seconds.
#pragma once
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "data/dataset.h"
#include "engine/error.h"

namespace nce::data {

// How many skipped records a lenient read describes in ReadReport::skipped_examples.
inline constexpr size_t kSkippedExamplesKept = 10;

// A record the reader cannot use. Strict: stop with `message`, one line naming the file and
// the record. Lenient: count it under `reason` (a short category shared by all such records)
// and keep the first few messages as examples.
inline void skip_or_fail(ReadReport& report, Leniency leniency, const std::string& reason, const std::string& message) {
    if (leniency == Leniency::Strict) fail("{} (a lenient read skips such records)", message);
    ++report.skipped[reason];
    if (report.skipped_examples.size() < kSkippedExamplesKept) report.skipped_examples.push_back(message);
}

// The most a reader takes in one piece (a JSON file, a --text file): past it, one line
// before anything is read rather than memory running out.
inline constexpr std::uintmax_t kMaxWholeFileBytes = std::uintmax_t{1} << 30;  // 1 GiB

// Opens `path` for reading, or throws one line saying why not. An empty file is an error:
// no format this project reads is valid when empty. A device (/dev/zero, /dev/random) or a
// socket is refused: it never ends. A pipe (`<(command)`) is read as it comes.
inline std::ifstream open_source_file(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code error_code;
    NCE_CHECK(fs::exists(path, error_code), "{}: no such file", path);
    NCE_CHECK(!fs::is_directory(path, error_code), "{}: is a folder; give the path of the file itself", path);
    fs::file_status status = fs::status(path, error_code);
    NCE_CHECK(fs::is_regular_file(status) || fs::is_fifo(status),
              "{}: is a device or a socket, not a file (it would be read without end); give a file", path);
    std::ifstream file(path, std::ios::binary);
    NCE_CHECK(file.is_open(), "{}: cannot open the file ({})", path, std::strerror(errno));
    NCE_CHECK(file.peek() != std::ifstream::traits_type::eof(), "{}: the file is empty", path);
    return file;
}

// The whole file, for formats that must be parsed at once (JSON), at most kMaxWholeFileBytes:
// a larger file is refused by its size before it is read, a pipe once it has given that much.
inline std::string read_source_file(const std::string& path) {
    std::error_code error_code;
    std::uintmax_t size = std::filesystem::is_regular_file(path, error_code)
                              ? std::filesystem::file_size(path, error_code)
                              : 0;
    NCE_CHECK(size <= kMaxWholeFileBytes, "{}: the file has {} MiB; nce reads at most {} MiB of it at once", path,
              size >> 20, kMaxWholeFileBytes >> 20);
    std::ifstream file = open_source_file(path);
    std::string contents;
    char chunk[1 << 16];
    while (file.read(chunk, sizeof chunk) || file.gcount() > 0) {
        contents.append(chunk, static_cast<size_t>(file.gcount()));
        NCE_CHECK(contents.size() <= kMaxWholeFileBytes, "{}: more than {} MiB came through; nce reads at most that "
                  "much of it at once", path, kMaxWholeFileBytes >> 20);
    }
    NCE_CHECK(!file.bad(), "{}: reading the file failed ({})", path, std::strerror(errno));
    return contents;
}

// Seconds since `start`, for ReadReport::seconds.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace nce::data
