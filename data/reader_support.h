// What every reader shares: opening its source file with one-line errors, the strict/lenient
// handling of a bad record, and the clock for ReadReport::seconds.
#pragma once
#include <cerrno>
#include <chrono>
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

// Opens `path` for reading, or throws one line saying why not. An empty file is an error:
// no format this project reads is valid when empty.
inline std::ifstream open_source_file(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code error_code;
    NCE_CHECK(fs::exists(path, error_code), "{}: no such file", path);
    NCE_CHECK(!fs::is_directory(path, error_code), "{}: is a folder; give the path of the file itself", path);
    std::ifstream file(path, std::ios::binary);
    NCE_CHECK(file.is_open(), "{}: cannot open the file ({})", path, std::strerror(errno));
    NCE_CHECK(file.peek() != std::ifstream::traits_type::eof(), "{}: the file is empty", path);
    return file;
}

// The whole file, for formats that must be parsed at once (JSON).
inline std::string read_source_file(const std::string& path) {
    std::ifstream file = open_source_file(path);
    std::ostringstream contents;
    contents << file.rdbuf();
    NCE_CHECK(!file.bad(), "{}: reading the file failed ({})", path, std::strerror(errno));
    return std::move(contents).str();
}

// Seconds since `start`, for ReadReport::seconds.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace nce::data
