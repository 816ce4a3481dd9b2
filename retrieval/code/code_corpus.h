// The corpus of `nce code`: functions mined from a tree of Python sources, each a query
// (signature, then its docstring) answered by one passage (its body).
//
// Where the tree comes from:
//   --data DIR       that folder (or one .py file)
//   default          the standard library of the `python3` on PATH, found by asking it:
//                    python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])'
//                    With no python3, the project's own C++ sources (NCE_SOURCE_ROOT at build
//                    time), cut by retrieval/code/cpp_functions.h into signature + the comment
//                    above it -> body; the run says so. "app": {"language": "cpp"} reads any
//                    --data folder of C++ sources the same way.
//
// What is kept (CodeCorpusOptions), so the corpus is code a person wrote to be read:
//   - the tree is mined entry by entry (data/python_miner.h); with skip_tests, the folders
//     test, tests, idle_test, site-packages, dist-packages and __pycache__ and the files
//     test_*.py are left out (the standard library's test suite is as large as the rest);
//   - with require_docstring, only functions that have a docstring (the query is then more
//     than a signature);
//   - a body that is the same text as an earlier one is dropped (two equal passages would
//     make one of them wrong by construction).
// Query and passage i describe function i; groups are file paths relative to the root
// ("email/mime/text.py"), or the top-level package ("email") with split_by "package".
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "data/dataset.h"

namespace nce::code {

struct CodeCorpusOptions {
    bool require_docstring = true;
    bool skip_tests = true;
    std::string split_by = "file";  // "file" or "package": what a split keeps on one side
    std::string language = "python";  // "python" (data/python_miner.h) or "cpp" (retrieval/code/cpp_functions.h)
    int64_t max_functions = 0;      // keep the first this many (in path order); 0: all
};

// The folder the default run mines and a sentence saying what it is.
struct CodeCorpusLocation {
    std::string root;
    std::string description;  // "the Python standard library of python3 (/usr/lib/python3.11)"
    std::string language;     // "python" or "cpp"
};

// Asks `python3` on PATH for its standard library; empty when there is no python3 or it does
// not answer with a folder.
std::string find_python_standard_library();

// The default corpus: the standard library, or the project's Python files when there is no
// python3 (see above). Throws naming what is missing when neither exists.
CodeCorpusLocation default_code_corpus();

// Mines `root` as described above. Throws nce::Error naming the path when it is missing, and
// naming the options when nothing is left to retrieve.
data::RetrievalDataset mine_code_corpus(const std::string& root, const CodeCorpusOptions& options);

// Reads the options from the run's "app" settings ({"require_docstring": true, "skip_tests":
// true, "split_by": "file", "language": "python", "max_functions": 0}); an unknown key or a wrong type throws
// naming the key and `source`.
CodeCorpusOptions code_corpus_options_from_json(const nlohmann::json& settings, const std::string& source);

}  // namespace nce::code
