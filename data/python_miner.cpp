#include "data/python_miner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "data/python_functions.h"
#include "data/reader_support.h"
#include "data/text_cleaning.h"

namespace nce::data {

namespace {

namespace fs = std::filesystem;

struct SourceFile {
    fs::path path;
    std::string relative;  // to the mined root, with '/': the group of its functions
};

// A file or folder the miner cannot use: counted under `reason`, described in the examples.
// Never fatal (see python_miner.h), so always the lenient path.
void skip_path(ReadReport& report, const std::string& reason, const std::string& description) {
    skip_or_fail(report, Leniency::Lenient, reason, description);
}

// Every *.py file under `root`, sorted by relative path. Each folder is listed on its own so
// that one that cannot be listed is counted and the walk goes on with the others.
std::vector<SourceFile> find_python_files(const fs::path& root, ReadReport& report) {
    auto relative = [&](const fs::path& path) { return path.lexically_relative(root).generic_string(); };
    std::vector<SourceFile> files;
    std::vector<fs::path> folders_to_list{root};
    while (!folders_to_list.empty()) {
        fs::path folder = std::move(folders_to_list.back());
        folders_to_list.pop_back();
        std::error_code listing_error;
        for (fs::directory_iterator entry(folder, listing_error); !listing_error && entry != fs::directory_iterator();
             entry.increment(listing_error)) {
            std::error_code ignored;  // a status that cannot be read reads as "not found"
            fs::file_status own_status = entry->symlink_status(ignored);
            fs::file_status target_status = entry->status(ignored);
            if (fs::is_directory(own_status)) {
                folders_to_list.push_back(entry->path());
            } else if (fs::is_symlink(own_status) && fs::is_directory(target_status)) {
                skip_path(report, "symlinked folder not followed", fmt::format("{}: a link to a folder", relative(entry->path())));
            } else if (entry->path().extension() != ".py") {
                continue;
            } else if (fs::is_regular_file(target_status)) {
                files.push_back({entry->path(), relative(entry->path())});
            } else if (!fs::exists(target_status)) {
                skip_path(report, "unreadable file", fmt::format("{}: a broken symbolic link", relative(entry->path())));
            }
        }
        if (listing_error) {
            std::string name = folder == root ? folder.string() : relative(folder);
            skip_path(report, "unreadable folder", fmt::format("{}: {}", name, listing_error.message()));
        }
    }
    std::sort(files.begin(), files.end(), [](const SourceFile& a, const SourceFile& b) { return a.relative < b.relative; });
    return files;
}

// The file's bytes, or false with the reason in `problem`.
bool read_whole_file(const fs::path& path, std::string& contents, std::string& problem) {
    std::ifstream file(path, std::ios::binary);
    if (!file.is_open()) {
        problem = std::strerror(errno);
        return false;
    }
    std::ostringstream buffer;
    buffer << file.rdbuf();
    if (file.bad()) {
        problem = fmt::format("reading failed ({})", std::strerror(errno));
        return false;
    }
    contents = std::move(buffer).str();
    return true;
}

// One query, one passage and the relevance between them, or a count in `skipped` for a stub.
void add_function(PythonFunction& function, const SourceFile& file, RetrievalDataset& dataset) {
    ReadReport& report = dataset.report;
    if (function.body_is_placeholder) {
        ++report.skipped["function body is only pass or ..."];
        return;
    }
    if (function.body.empty()) {
        ++report.skipped["function body is only a docstring"];
        return;
    }
    std::string id = fmt::format("{}:{}:{}", file.relative, function.line, function.qualified_name);
    std::string query = function.docstring.empty() ? function.signature : function.signature + "\n" + function.docstring;
    auto index = static_cast<int64_t>(dataset.queries.size());
    dataset.queries.push_back({id, std::move(query), file.relative});
    dataset.passages.push_back({id, std::move(function.body), file.relative});
    dataset.relevance.push_back({index, index, 1.0, 0, false});
    ++report.records[function.is_method ? "methods" : "functions"];
}

void mine_file(const SourceFile& file, RetrievalDataset& dataset) {
    ReadReport& report = dataset.report;
    std::string bytes, problem;
    if (!read_whole_file(file.path, bytes, problem)) {
        skip_path(report, "unreadable file", fmt::format("{}: {}", file.relative, problem));
        return;
    }
    size_t invalid = find_invalid_utf8(bytes);
    if (invalid != std::string::npos) {
        auto line = 1 + std::count(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(invalid), '\n');
        skip_path(report, "invalid UTF-8",
                  fmt::format("{}: invalid UTF-8 at byte {} (line {}); only UTF-8 sources are read", file.relative, invalid, line));
        return;
    }
    std::string source = normalize_newlines(bytes);
    std::vector<PythonFunction> functions;
    try {
        functions = find_python_functions(source);
    } catch (const PythonSyntaxError& error) {
        skip_path(report, "syntax the miner cannot follow", fmt::format("{}: {}", file.relative, error.what()));
        return;
    }
    ++report.records["files"];
    for (PythonFunction& function : functions) add_function(function, file, dataset);
}

std::string package_of(const std::string& group) {
    size_t slash = group.find('/');
    if (slash != std::string::npos) return group.substr(0, slash);
    return group.ends_with(".py") ? group.substr(0, group.size() - 3) : group;
}

}  // namespace

RetrievalDataset mine_python_tree(const std::string& root, Leniency /*leniency*/) {
    auto start = std::chrono::steady_clock::now();
    fs::path root_path(root);
    std::error_code error;
    fs::file_status root_status = fs::status(root_path, error);
    NCE_CHECK(fs::exists(root_status), "mine_python_tree: {} does not exist; give a folder of Python sources", root);

    RetrievalDataset dataset;
    dataset.name = root;
    for (const char* kind : {"files", "functions", "methods"}) dataset.report.records[kind] = 0;
    std::vector<SourceFile> files;
    if (fs::is_directory(root_status)) {
        files = find_python_files(root_path, dataset.report);
    } else if (fs::is_regular_file(root_status) && root_path.extension() == ".py") {
        files.push_back({root_path, root_path.filename().generic_string()});
    } else {
        fail("mine_python_tree: {} is neither a folder nor a .py file; give a folder of Python sources", root);
    }
    for (const SourceFile& file : files) mine_file(file, dataset);
    dataset.report.seconds = seconds_since(start);
    return dataset;
}

void regroup_by_package(RetrievalDataset& dataset) {
    for (Query& query : dataset.queries) query.group = package_of(query.group);
    for (Passage& passage : dataset.passages) passage.group = package_of(passage.group);
}

}  // namespace nce::data
