#include "engine/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "engine/error.h"

namespace nce {
namespace {

namespace fs = std::filesystem;

// Step 1. One of a live process is kept (another writer of the same path on this machine:
// its rename is still to come), and so is one whose pid a new process has taken, until that
// process ends. Best effort: a write never fails over this.
void remove_stale_temporaries(const std::string& path) {
    fs::path target(path);
    fs::path folder = target.parent_path().empty() ? "." : target.parent_path();
    std::string prefix = target.filename().string() + ".tmp-";
    std::error_code error;
    for (fs::directory_iterator entry(folder, error), end; !error && entry != end; entry.increment(error)) {
        std::string name = entry->path().filename().string();
        if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
        const char* digits = name.data() + prefix.size();
        const char* digits_end = name.data() + name.size();
        pid_t pid = 0;
        auto [parsed_end, parse_error] = std::from_chars(digits, digits_end, pid);
        if (parse_error != std::errc() || parsed_end != digits_end || pid <= 0 || pid == ::getpid()) continue;
        if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive, or another user's (EPERM)
        std::error_code ignored;
        fs::remove(entry->path(), ignored);
    }
}

// Step 4. Best effort: the file itself is already on disk.
void sync_folder_of(const std::string& path) {
    fs::path folder = fs::path(path).parent_path();
    int descriptor = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY);
    if (descriptor < 0) return;
    ::fsync(descriptor);
    ::close(descriptor);
}

void rename_into_place(const std::string& temporary, const std::string& path, std::string_view what) {
    if (std::rename(temporary.c_str(), path.c_str()) != 0) {
        int rename_errno = errno;
        std::remove(temporary.c_str());
        fail("{}: cannot move '{}' into place as '{}': {}", what, temporary, path, std::strerror(rename_errno));
    }
    sync_folder_of(path);
}

}  // namespace

std::string atomic_temporary_for(const std::string& path) {
    remove_stale_temporaries(path);
    return path + ".tmp-" + std::to_string(::getpid());
}

void write_file_atomically(const std::string& path, std::string_view what,
                           const std::function<bool(std::FILE*)>& write) {
    std::string temporary = atomic_temporary_for(path);
    std::FILE* file = std::fopen(temporary.c_str(), "wb");
    NCE_CHECK(file != nullptr, "{}: cannot write '{}': creating '{}' failed: {}", what, path, temporary,
              std::strerror(errno));
    bool written = write(file) && std::fflush(file) == 0 && ::fsync(::fileno(file)) == 0;
    int write_errno = errno;
    bool closed = std::fclose(file) == 0;
    if (!written || !closed) {
        std::remove(temporary.c_str());
        fail("{}: writing '{}' failed: {}", what, path, std::strerror(written ? errno : write_errno));
    }
    rename_into_place(temporary, path, what);
}

void write_bytes_atomically(const std::string& path, std::string_view what, std::string_view bytes) {
    write_file_atomically(path, what, [&](std::FILE* file) {
        return std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
    });
}

void copy_file_atomically(const std::string& from, const std::string& to, std::string_view what) {
    std::string temporary = atomic_temporary_for(to);
    std::error_code error;
    fs::copy_file(from, temporary, fs::copy_options::overwrite_existing, error);
    if (error) {
        discard_atomic_temporary(temporary);
        fail("{}: cannot copy '{}' to '{}': {}", what, from, to, error.message());
    }
    commit_atomic_temporary(temporary, to, what);
}

void commit_atomic_temporary(const std::string& temporary, const std::string& path, std::string_view what) {
    int descriptor = ::open(temporary.c_str(), O_RDONLY);
    bool synced = descriptor >= 0 && ::fsync(descriptor) == 0;
    int sync_errno = errno;
    if (descriptor >= 0) ::close(descriptor);
    if (!synced) {
        std::remove(temporary.c_str());
        fail("{}: writing '{}' failed: {}", what, path, std::strerror(sync_errno));
    }
    rename_into_place(temporary, path, what);
}

void discard_atomic_temporary(const std::string& temporary) {
    std::error_code ignored;
    fs::remove_all(temporary, ignored);
}

}  // namespace nce
