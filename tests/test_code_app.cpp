// nce code's own parts: the corpus miner's filters and groups, the whole-corpus test split,
// the code-identifier BM25 tokens, and the teacher-features folder (synthetic writer, reader
// and its one-line errors).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "retrieval/code/code_corpus.h"
#include "retrieval/code/cpp_functions.h"
#include "retrieval/code/teacher_features.h"
#include "retrieval/code/whole_corpus_split.h"
#include "eval/rankings.h"
#include "tests/test_helpers.h"

using namespace nce;
namespace fs = std::filesystem;

namespace {

// A fresh, empty folder under the system's temporary folder.
fs::path fresh_folder(const std::string& name) {
    fs::path folder = fs::temp_directory_path() / ("nce_test_code_app_" + name);
    fs::remove_all(folder);
    fs::create_directories(folder);
    return folder;
}

void write_file(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
}

// def <name>(x): with a docstring (or not) and a body that returns `value`.
std::string python_function(const std::string& name, const std::string& docstring, const std::string& value) {
    std::string documented = docstring.empty() ? "" : fmt::format("    \"\"\"{}\"\"\"\n", docstring);
    return fmt::format("def {}(x):\n{}    return x + {}\n\n", name, documented, value);
}

}  // namespace

TEST_CASE("code identifiers: words split at punctuation, '_', camelCase humps and digits") {
    using eval::LexicalTokens;
    using eval::lexical_tokens;
    CHECK(eval::lexical_tokens("os.path.join(a, b)", eval::LexicalTokens::CodeIdentifiers) ==
          std::vector<std::string>{"os", "path", "join", "a", "b"});
    CHECK(eval::lexical_tokens("getLineNumber_v2", eval::LexicalTokens::CodeIdentifiers) ==
          std::vector<std::string>{"getlinenumber_v2", "get", "line", "number", "v", "2"});
    CHECK(eval::lexical_tokens("HTTPServer", eval::LexicalTokens::CodeIdentifiers) ==
          std::vector<std::string>{"httpserver", "http", "server"});
    CHECK(eval::lexical_tokens("_private", eval::LexicalTokens::CodeIdentifiers) == std::vector<std::string>{"_private", "private"});
    CHECK(eval::lexical_tokens("x = 1 + 2;", eval::LexicalTokens::CodeIdentifiers) == std::vector<std::string>{"x", "1", "2"});
    CHECK(eval::lexical_tokens("(), ...", eval::LexicalTokens::CodeIdentifiers).empty());
    // Whitespace tokens keep the punctuation inside a word: the reason for the code variant.
    CHECK(eval::lexical_tokens("os.path.join(a, b)", eval::LexicalTokens::Whitespace) == std::vector<std::string>{"os.path.join(a", "b"});
    CHECK(std::string(eval::lexical_tokens_name(eval::LexicalTokens::CodeIdentifiers)) == "code identifiers");
}

TEST_CASE("code corpus: documented functions outside the tests, one per distinct body, grouped by file or package") {
    fs::path root = fresh_folder("corpus");
    write_file(root / "alpha.py", python_function("add_one", "Adds one.", "1") + python_function("bare", "", "2"));
    write_file(root / "pkg" / "inner.py",
               python_function("add_three", "Adds three.", "3") + python_function("add_one_again", "Also adds one.", "1"));
    write_file(root / "pkg" / "sub" / "deep.py", python_function("add_four", "Adds four.", "4"));
    write_file(root / "pkg" / "tests" / "helper.py", python_function("in_tests", "Left out.", "5"));
    write_file(root / "pkg" / "test_inner.py", python_function("test_file", "Left out.", "6"));
    write_file(root / "test" / "everything.py", python_function("suite", "Left out.", "7"));
    write_file(root / "notes.txt", "not python");

    code::CodeCorpusOptions options;
    data::RetrievalDataset corpus = code::mine_code_corpus(root.string(), options);
    std::vector<std::string> ids, groups;
    for (size_t i = 0; i < corpus.queries.size(); ++i) {
        ids.push_back(corpus.queries[i].id);
        groups.push_back(corpus.queries[i].group);
        CHECK(corpus.passages[i].id == corpus.queries[i].id);
        CHECK(corpus.relevance[i].query == static_cast<int64_t>(i));
        CHECK(corpus.relevance[i].passage == static_cast<int64_t>(i));
    }
    // bare: no docstring; add_one_again: the same body as add_one; tests: left out.
    CHECK(ids == std::vector<std::string>{"alpha.py:1:add_one", "pkg/inner.py:1:add_three", "pkg/sub/deep.py:1:add_four"});
    CHECK(groups == std::vector<std::string>{"alpha.py", "pkg/inner.py", "pkg/sub/deep.py"});
    CHECK(corpus.queries[0].text == "def add_one(x):\nAdds one.");
    CHECK(corpus.passages[0].text == "return x + 1");
    CHECK(corpus.report.skipped.at("no docstring") == 1);
    CHECK(corpus.report.skipped.at("body equal to an earlier one") == 1);
    // pkg/tests/helper.py and pkg/test_inner.py, inside a kept folder (test/ is never mined)
    CHECK(corpus.report.skipped.at("in a test folder or test_*.py") == 2);

    options.split_by = "package";
    options.require_docstring = false;
    options.skip_tests = false;
    corpus = code::mine_code_corpus(root.string(), options);
    std::set<std::string> packages;
    for (const data::Query& query : corpus.queries) packages.insert(query.group);
    CHECK(packages == std::set<std::string>{"alpha", "pkg", "test"});
    CHECK(corpus.queries.size() == 7);  // every distinct body: 1 2 3 4 5 6 7

    options.max_functions = 2;
    CHECK(code::mine_code_corpus(root.string(), options).queries.size() == 2);

    CHECK_THROWS_WITH_AS(code::mine_code_corpus((root / "missing").string(), {}),
                         doctest::Contains("no such folder or file"), Error);
    fs::path empty = fresh_folder("corpus_empty");
    write_file(empty / "only_bare.py", python_function("bare", "", "1"));
    CHECK_THROWS_WITH_AS(code::mine_code_corpus(empty.string(), {}), doctest::Contains("no function to retrieve"),
                         Error);
    CHECK_THROWS_WITH_AS(code::code_corpus_options_from_json({{"split_by", "folder"}}, "run.json"),
                         doctest::Contains("split_by"), Error);
    CHECK_THROWS_WITH_AS(code::code_corpus_options_from_json({{"splitby", "file"}}, "run.json"),
                         doctest::Contains("unknown code setting app.splitby"), Error);
    fs::remove_all(root);
    fs::remove_all(empty);
}

TEST_CASE("C++ fallback corpus: namespace-level functions with the comment above, bodies dedented") {
    fs::path root = fresh_folder("cpp");
    write_file(root / "engine" / "scale.cpp", R"source(#include <string>
namespace nce {
namespace {

// Doubles x.
// Twice, exactly.
int twice(int x) {
    // a comment inside
    return 2 * x;  // "}" in a comment
}

}  // namespace

struct Point {
    int x;
    int norm() const { return x; }
};

const char* label = "{ not a block (";

int undocumented(int y) {
    if (y > 0) {
        return y;
    }
    return -y;
}

// A raw string holds braces.
std::string text_of(
    int z) {
    std::string raw = R"x({"a": 1})x";
    return raw + '}' + std::to_string(z);
}

}  // namespace nce
)source");
    write_file(root / "build-x" / "skipped.cpp", "// Skipped.\nint skipped() {\n    return 1;\n}\n");
    data::RetrievalDataset functions = code::mine_cpp_tree(root.string(), false);
    std::vector<std::string> ids;
    for (const data::Query& query : functions.queries) ids.push_back(query.id);
    CHECK(ids == std::vector<std::string>{"engine/scale.cpp:7:twice", "engine/scale.cpp:21:undocumented",
                                          "engine/scale.cpp:29:text_of"});
    REQUIRE(functions.queries.size() == 3);
    CHECK(functions.queries[0].text == "int twice(int x)\nDoubles x.\nTwice, exactly.");
    CHECK(functions.passages[0].text == "// a comment inside\nreturn 2 * x;  // \"}\" in a comment");
    CHECK(functions.queries[1].text == "int undocumented(int y)");
    CHECK(functions.passages[1].text == "if (y > 0) {\n    return y;\n}\nreturn -y;");
    CHECK(functions.queries[2].text == "std::string text_of( int z)\nA raw string holds braces.");
    CHECK(functions.queries[0].group == "engine/scale.cpp");
    CHECK(code::mine_cpp_tree(root.string(), true).queries.size() == 2);
    CHECK_THROWS_WITH_AS(code::mine_cpp_tree((root / "none").string(), false), doctest::Contains("no such folder"),
                         Error);
    fs::remove_all(root);
}

TEST_CASE("whole-corpus split: test queries keep their own body among every body of the corpus") {
    data::RetrievalDataset dataset;
    dataset.name = "functions";
    for (int64_t i = 0; i < 40; ++i) {
        std::string id = "f" + std::to_string(i), group = "file" + std::to_string(i / 4);
        dataset.queries.push_back({id, "signature " + id, group});
        dataset.passages.push_back({id, "body " + id, group});
        dataset.relevance.push_back({i, i, 1.0, 0, false});
    }
    data::DatasetSplits plain = data::split_by_group(dataset, 0.2, 0.3, 5);
    data::DatasetSplits splits = code::split_with_whole_corpus_test(dataset, 0.2, 0.3, 5);
    CHECK(splits.train.queries.size() == plain.train.queries.size());
    CHECK(splits.validation.passages.size() == plain.validation.passages.size());
    CHECK(splits.test.queries.size() == plain.test.queries.size());
    REQUIRE(splits.test.passages.size() == dataset.passages.size());
    REQUIRE(splits.test.relevance.size() == splits.test.queries.size());
    for (const data::Relevance& relevance : splits.test.relevance)
        CHECK(splits.test.passages[relevance.passage].id == splits.test.queries[relevance.query].id);
}

TEST_CASE("teacher features: the synthetic folder reads back with the documented layout") {
    fs::path folder = fresh_folder("features") / "written";
    code::SyntheticFeatureOptions options;
    options.functions = 50;
    options.tokens = 8;
    options.input_dim = 6;
    options.output_dim = 5;
    options.group_size = 10;
    code::write_synthetic_teacher_features(folder.string(), options);
    code::TeacherFeatures features = code::read_teacher_features(folder.string());
    CHECK(features.signature_features.shape() == Shape{50, 8, 6});
    CHECK(features.signature_mask.shape() == Shape{50, 8});
    CHECK(features.body_embeddings.shape() == Shape{50, 5});
    CHECK(features.groups.size() == 50);
    CHECK(features.groups[49] == 4);
    std::vector<double> mask = features.signature_mask.to_vector(), bodies = features.body_embeddings.to_vector();
    for (int64_t i = 0; i < 50; ++i) {
        double tokens = 0, norm = 0;
        for (int64_t t = 0; t < 8; ++t) tokens += mask[static_cast<size_t>(i * 8 + t)];
        for (int64_t j = 0; j < 5; ++j) norm += bodies[static_cast<size_t>(i * 5 + j)] * bodies[static_cast<size_t>(i * 5 + j)];
        CHECK(tokens >= 4);
        CHECK(norm == doctest::Approx(1.0).epsilon(1e-5));
    }
    // The same seed writes the same numbers.
    fs::path again = folder.parent_path() / "again";
    code::write_synthetic_teacher_features(again.string(), options);
    CHECK(allclose(code::read_teacher_features(again.string()).signature_features, features.signature_features, 0, 0));

    // A folder that is not empty is refused and left as it was.
    CHECK_THROWS_WITH_AS(code::write_synthetic_teacher_features(again.string(), options),
                         doctest::Contains("not an empty folder"), Error);
    CHECK(fs::exists(again / "body_embeddings.npy"));
    fs::remove_all(folder.parent_path());
}

TEST_CASE("teacher features: a missing or malformed file is one line naming it") {
    fs::path folder = fresh_folder("features_bad");
    CHECK_THROWS_WITH_AS(code::read_teacher_features((folder / "nothing").string()),
                         doctest::Contains("no such folder"), Error);
    write_npy((folder / "signature_features.npy").string(), Tensor::zeros({3, 4, 2}, Dtype::Float32));
    CHECK_THROWS_WITH_AS(code::read_teacher_features(folder.string()), doctest::Contains("missing body_embeddings.npy"),
                         Error);
    write_npy((folder / "body_embeddings.npy").string(), Tensor::full({2, 5}, 1.0, Dtype::Float32));
    CHECK_THROWS_WITH_AS(code::read_teacher_features(folder.string()),
                         doctest::Contains("body_embeddings.npy: expected [N, out_dim] with N = 3"), Error);
    write_npy((folder / "body_embeddings.npy").string(), Tensor::full({3, 5}, 1.0, Dtype::Float32));
    Tensor mask = Tensor::full({3, 4}, 1.0, Dtype::Float32);
    mask.data<float>()[4] = mask.data<float>()[5] = mask.data<float>()[6] = mask.data<float>()[7] = 0;
    write_npy((folder / "signature_mask.npy").string(), mask);
    CHECK_THROWS_WITH_AS(code::read_teacher_features(folder.string()), doctest::Contains("row 1 has no token"), Error);
    fs::remove(folder / "signature_mask.npy");
    write_npy((folder / "groups.npy").string(), Tensor::zeros({3}, Dtype::Float32));
    CHECK_THROWS_WITH_AS(code::read_teacher_features(folder.string()), doctest::Contains("groups.npy: expected int64"),
                         Error);
    fs::remove(folder / "groups.npy");
    CHECK(code::read_teacher_features(folder.string()).rows() == 3);
    std::ofstream(folder / "body_embeddings.npy") << "not a numpy file";
    CHECK_THROWS_WITH_AS(code::read_teacher_features(folder.string()), doctest::Contains("body_embeddings.npy"), Error);
    fs::remove_all(folder);
}
