#include "retrieval/code/code_corpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <vector>

#include "retrieval/code/cpp_functions.h"
#include "data/python_miner.h"
#include "engine/error.h"

namespace nce::code {
namespace {

namespace fs = std::filesystem;

// Folders and files of a source tree that are tests or installed packages, not the library.
bool is_left_out(const std::string& name, bool is_folder) {
    static const std::set<std::string> folders{"test",          "tests",         "idle_test",
                                               "site-packages", "dist-packages", "__pycache__"};
    if (is_folder) return folders.count(name) > 0;
    return name.starts_with("test_");
}

// True when any component of the relative path "a/b/c.py" is left out.
bool path_is_left_out(const std::string& relative_path) {
    size_t start = 0;
    while (start <= relative_path.size()) {
        size_t slash = relative_path.find('/', start);
        bool last = slash == std::string::npos;
        std::string part = relative_path.substr(start, last ? std::string::npos : slash - start);
        if (is_left_out(part, !last)) return true;
        if (last) break;
        start = slash + 1;
    }
    return false;
}

// Appends `part` (mined from root/<entry>) to `corpus`, with ids and groups made relative to
// the root again: the miner names them relative to the entry it was given.
void append_mined(data::RetrievalDataset& corpus, data::RetrievalDataset part, const std::string& entry, bool is_folder) {
    auto rooted = [&](const std::string& group) { return is_folder ? entry + "/" + group : entry; };
    auto offset = static_cast<int64_t>(corpus.queries.size());
    for (data::Query& query : part.queries) {
        query.id = rooted(query.group) + query.id.substr(query.id.find(':'));
        query.group = rooted(query.group);
        corpus.queries.push_back(std::move(query));
    }
    for (data::Passage& passage : part.passages) {
        passage.id = rooted(passage.group) + passage.id.substr(passage.id.find(':'));
        passage.group = rooted(passage.group);
        corpus.passages.push_back(std::move(passage));
    }
    for (data::Relevance relevance : part.relevance) {
        relevance.query += offset;
        relevance.passage += offset;
        corpus.relevance.push_back(relevance);
    }
    for (const auto& [kind, count] : part.report.records) corpus.report.records[kind] += count;
    for (const auto& [reason, count] : part.report.skipped) corpus.report.skipped[reason] += count;
    for (std::string& example : part.report.skipped_examples)
        if (corpus.report.skipped_examples.size() < 10) corpus.report.skipped_examples.push_back(rooted("") + ": " + example);
}

// The first line `command` prints, without its line end; empty when it cannot run.
std::string first_output_line(const char* command) {
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command, "r"), pclose);
    if (!pipe) return "";
    char buffer[4096];
    std::string line;
    if (fgets(buffer, sizeof buffer, pipe.get())) line = buffer;
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    return line;
}

}  // namespace

std::string find_python_standard_library() {
    std::string path = first_output_line(
        "python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"stdlib\"])' 2>/dev/null");
    std::error_code error_code;
    return !path.empty() && fs::is_directory(path, error_code) ? path : "";
}

CodeCorpusLocation default_code_corpus() {
    std::string standard_library = find_python_standard_library();
    if (!standard_library.empty())
        return {standard_library, fmt::format("the Python standard library of python3 ({})", standard_library), "python"};
#ifdef NCE_SOURCE_ROOT
    std::string project = NCE_SOURCE_ROOT;
    std::error_code error_code;
    if (fs::is_directory(project, error_code))
        return {project, fmt::format("the project's own C++ sources ({}): there is no python3 on PATH to find the "
                                     "Python standard library", project), "cpp"};
#endif
    fail("code: no python3 on PATH to find the Python standard library; pass --data DIR (a folder of .py files)");
}

data::RetrievalDataset mine_code_corpus(const std::string& root, const CodeCorpusOptions& options) {
    std::error_code error_code;
    NCE_CHECK(fs::exists(root, error_code), "code corpus {}: no such folder or file; pass --data DIR (a folder of .py files)",
              root);
    NCE_CHECK(options.split_by == "file" || options.split_by == "package",
              "code: split_by must be \"file\" or \"package\", got \"{}\"", options.split_by);
    NCE_CHECK(options.language == "python" || options.language == "cpp",
              "code: language must be \"python\" or \"cpp\", got \"{}\"", options.language);
    data::RetrievalDataset mined;
    if (options.language == "cpp") {
        mined = mine_cpp_tree(root, false);
    } else if (fs::is_directory(root, error_code)) {
        // Entry by entry, so the folders left out are never read at all.
        std::vector<fs::directory_entry> entries;
        for (fs::directory_iterator entry(root, error_code); !error_code && entry != fs::directory_iterator();
             entry.increment(error_code))
            entries.push_back(*entry);
        NCE_CHECK(!error_code, "code corpus {}: cannot list the folder ({})", root, error_code.message());
        std::sort(entries.begin(), entries.end(),
                  [](const fs::directory_entry& a, const fs::directory_entry& b) { return a.path() < b.path(); });
        for (const fs::directory_entry& entry : entries) {
            std::string name = entry.path().filename().string();
            bool is_folder = entry.is_directory(error_code) && !entry.is_symlink(error_code);
            if (!is_folder && entry.path().extension() != ".py") continue;
            if (options.skip_tests && is_left_out(name, is_folder)) continue;
            append_mined(mined, data::mine_python_tree(entry.path().string(), data::Leniency::Lenient), name, is_folder);
        }
    } else {
        std::string name = fs::path(root).filename().string();
        append_mined(mined, data::mine_python_tree(root, data::Leniency::Lenient), name, false);
    }

    // Keep one function per distinct body, with a docstring when asked, outside the tests.
    data::RetrievalDataset corpus;
    corpus.name = fmt::format("python functions of {}", root);
    corpus.report = mined.report;
    std::set<std::string> bodies_seen;
    int64_t without_docstring = 0, duplicate_bodies = 0, in_tests = 0;
    for (const data::Relevance& pair : mined.relevance) {
        const data::Query& query = mined.queries[pair.query];
        const data::Passage& passage = mined.passages[pair.passage];
        if (options.skip_tests && path_is_left_out(passage.group)) {
            ++in_tests;
            continue;
        }
        // The miner writes the signature on one line and the docstring after a line break.
        if (options.require_docstring && query.text.find('\n') == std::string::npos) {
            ++without_docstring;
            continue;
        }
        if (!bodies_seen.insert(passage.text).second) {
            ++duplicate_bodies;
            continue;
        }
        if (options.max_functions > 0 && static_cast<int64_t>(corpus.queries.size()) >= options.max_functions) break;
        auto index = static_cast<int64_t>(corpus.queries.size());
        corpus.queries.push_back(query);
        corpus.passages.push_back(passage);
        corpus.relevance.push_back({index, index, 1.0, 0, false});
    }
    corpus.report.records["kept"] = static_cast<int64_t>(corpus.queries.size());
    if (in_tests) corpus.report.skipped["in a test folder or test_*.py"] = in_tests;
    if (without_docstring) corpus.report.skipped["no docstring"] = without_docstring;
    if (duplicate_bodies) corpus.report.skipped["body equal to an earlier one"] = duplicate_bodies;
    NCE_CHECK(!corpus.queries.empty(),
              "code corpus {}: no function to retrieve ({} mined, {} without a docstring, {} in tests); give a folder of "
              "Python sources with documented functions",
              root, mined.queries.size(), without_docstring, in_tests);
    if (options.split_by == "package") data::regroup_by_package(corpus);
    return corpus;
}

CodeCorpusOptions code_corpus_options_from_json(const nlohmann::json& settings, const std::string& source) {
    CodeCorpusOptions options;
    NCE_CHECK(settings.is_object(), "{}: \"app\" must be an object of code settings", source);
    for (const auto& [key, value] : settings.items()) {
        if (key == "require_docstring" || key == "skip_tests") {
            NCE_CHECK(value.is_boolean(), "{}: app.{} must be true or false", source, key);
            (key == "require_docstring" ? options.require_docstring : options.skip_tests) = value.get<bool>();
        } else if (key == "split_by") {
            NCE_CHECK(value.is_string(), "{}: app.split_by must be \"file\" or \"package\"", source);
            options.split_by = value.get<std::string>();
            NCE_CHECK(options.split_by == "file" || options.split_by == "package",
                      "{}: app.split_by must be \"file\" or \"package\", got \"{}\"", source, options.split_by);
        } else if (key == "language") {
            NCE_CHECK(value.is_string() && (value == "python" || value == "cpp"),
                      "{}: app.language must be \"python\" or \"cpp\", got {}", source, value.dump());
            options.language = value.get<std::string>();
        } else if (key == "max_functions") {
            NCE_CHECK(value.is_number_integer() && value.get<int64_t>() >= 0,
                      "{}: app.max_functions must be an integer >= 0 (0: all)", source);
            options.max_functions = value.get<int64_t>();
        } else {
            fail("{}: unknown code setting app.{}; known: require_docstring, skip_tests, split_by, language, max_functions", source,
                 key);
        }
    }
    return options;
}

}  // namespace nce::code
