// Code-search readers: the Python scanner and function finder (data/python_scanner.h,
// data/python_functions.h), the source-tree miner (data/python_miner.h) and the
// CodeSearchNet reader (data/codesearchnet_reader.h).
//
// The reference for what a Python file defines is Python itself:
// tests/fixtures/make_python_functions_reference.py runs the ast module over a sample written
// to trip a reader and stores what it finds in
// tests/fixtures/python_functions_reference/python_functions_reference.h. The other
// expectations are written out by hand below. Trees and JSON-lines files are written to a
// temporary folder by each test.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "data/codesearchnet_reader.h"
#include "data/korquad_reader.h"
#include "data/python_functions.h"
#include "data/python_miner.h"
#include "data/ranked_qa_reader.h"
#include "tests/fixtures/python_functions_reference/python_functions_reference.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::data;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the system's temporary folder, removed with all it holds at the end.
struct TemporaryFolder {
    fs::path path;

    TemporaryFolder() {
        static int created = 0;
        path = fs::temp_directory_path() / fmt::format("nce_test_readers_code_{}_{}", ::getpid(), created++);
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TemporaryFolder() {
        std::error_code ignored;
        for (auto& entry : fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ignored)) {
            fs::permissions(entry.path(), fs::perms::owner_all, fs::perm_options::add, ignored);
        }
        fs::remove_all(path, ignored);
    }
    TemporaryFolder(const TemporaryFolder&) = delete;
    TemporaryFolder& operator=(const TemporaryFolder&) = delete;

    fs::path write(const std::string& relative, const std::string& contents) const {
        fs::path file = path / relative;
        fs::create_directories(file.parent_path());
        std::ofstream(file, std::ios::binary) << contents;
        return file;
    }
};

// Each line stripped, blank lines and comment-only lines dropped: the form of the
// reference's body_lines.
std::string statement_lines(const std::string& body) {
    std::istringstream lines(body);
    std::string line, kept;
    while (std::getline(lines, line)) {
        size_t first = line.find_first_not_of(" \t\f");
        if (first == std::string::npos || line[first] == '#') continue;
        size_t last = line.find_last_not_of(" \t\f");
        if (!kept.empty()) kept += '\n';
        kept += line.substr(first, last - first + 1);
    }
    return kept;
}

std::vector<std::string> qualified_names(const std::vector<PythonFunction>& functions) {
    std::vector<std::string> names;
    for (const PythonFunction& function : functions) names.push_back(function.qualified_name);
    return names;
}

const PythonFunction& function_named(const std::vector<PythonFunction>& functions, const std::string& name) {
    auto found = std::find_if(functions.begin(), functions.end(),
                              [&](const PythonFunction& function) { return function.qualified_name == name; });
    REQUIRE_MESSAGE(found != functions.end(), "no function named " << name);
    return *found;
}

// The message of the PythonSyntaxError find_python_functions throws on `source`, or "" if none.
std::string syntax_error_of(const std::string& source) {
    try {
        find_python_functions(source);
    } catch (const PythonSyntaxError& error) {
        return error.what();
    }
    return "";
}

const Query* query_with_id_ending(const RetrievalDataset& dataset, const std::string& suffix) {
    for (const Query& query : dataset.queries) {
        if (query.id.ends_with(suffix)) return &query;
    }
    return nullptr;
}

}  // namespace

TEST_CASE("python functions: the same functions, docstrings and bodies as Python's ast module finds") {
    namespace reference = python_functions_reference;
    std::vector<PythonFunction> found = find_python_functions(reference::sample_module);
    REQUIRE(found.size() == std::size(reference::functions));
    for (size_t i = 0; i < found.size(); ++i) {
        const reference::Function& expected = reference::functions[i];
        CAPTURE(expected.qualified_name);
        CAPTURE(expected.line);
        CHECK(found[i].qualified_name == expected.qualified_name);
        CHECK(found[i].line == expected.line);
        CHECK(found[i].is_method == expected.is_method);
        CHECK(found[i].is_async == expected.is_async);
        CHECK(found[i].docstring == expected.docstring);
        CHECK(statement_lines(found[i].body) == expected.body_lines);
        CHECK(found[i].body_is_placeholder == expected.body_is_placeholder);
    }
}

TEST_CASE("python functions: def in strings, comments and function bodies is not mined") {
    std::string source =
        "TEXT = '''\n"
        "def in_triple_quotes():\n"
        "    pass\n"
        "'''\n"
        "# def in_comment():\n"
        "SQL = \"def in_string(): \"  # def in_trailing_comment():\n"
        "NAME = f\"{'def in_fstring():'}\"\n"
        "def real():\n"
        "    def inner():\n"
        "        return 1\n"
        "    return inner\n"
        "class Holder:\n"
        "    TEMPLATE = \"\"\"\n"
        "def in_class_string():\n"
        "\"\"\"\n"
        "    def method(self):\n"
        "        return 2\n";
    std::vector<PythonFunction> found = find_python_functions(source);
    CHECK(qualified_names(found) == std::vector<std::string>{"real", "Holder.method"});
    CHECK(function_named(found, "real").body == "def inner():\n    return 1\nreturn inner");
}

TEST_CASE("python functions: a signature is one line from def to its colon") {
    std::string source =
        "@decorator(arg='x')\n"
        "async def configure(\n"
        "    name: str = \"a, b) -> no:\",  # a comment\n"
        "    sizes: list[int] = [1, (2, 3)],\n"
        "    *args,\n"
        "    key=lambda item: item[0],\n"
        "    **kwargs,\n"
        ") -> dict[str, \"Callable[[int], str]\"]:\n"
        "    return {}\n"
        "def generic[T](items: list[T]) -> T: return items[0]\n"
        "def continued(a, \\\n"
        "              b):\n"
        "    return a\n";
    std::vector<PythonFunction> found = find_python_functions(source);
    REQUIRE(found.size() == 3);
    CHECK(found[0].signature ==
          "async def configure(name: str = \"a, b) -> no:\", sizes: list[int] = [1, (2, 3)], *args, "
          "key=lambda item: item[0], **kwargs,) -> dict[str, \"Callable[[int], str]\"]:");
    CHECK(found[0].is_async);
    CHECK(found[0].line == 2);
    CHECK(found[1].signature == "def generic[T](items: list[T]) -> T:");
    CHECK(found[1].body == "return items[0]");
    CHECK(found[2].signature == "def continued(a, b):");
}

TEST_CASE("python functions: docstrings in every quote style") {
    std::string source =
        "def a():\n    \"\"\"Triple \"double\" quotes.\"\"\"\n    return 1\n"
        "def b():\n    '''Triple 'single' quotes.'''\n    return 1\n"
        "def c():\n    r\"\"\"Raw \\d+ and \\n.\"\"\"\n    return 1\n"
        "def d():\n    'It\\'s single.'\n    return 1\n"
        "def e():\n    \"Say \\\"hi\\\".\"\n    return 1\n"
        "def f():\n    \"\"\"Escaped \\\"\"\" inside.\"\"\"\n    return 1\n"
        "def g():\n    R'''Raw, upper case.'''\n    return 1\n"
        "def h():\n    u'Unicode prefix.'\n    return 1\n"
        "def i():\n    'Implicitly ' \"joined.\"\n    return 1\n"
        "def j():\n    b'Bytes are no docstring.'\n    return 1\n"
        "def k():\n    \"\"\"\n    Starts on the second line.\n\n        Indented.\n    \"\"\"\n    return 1\n";
    std::vector<PythonFunction> found = find_python_functions(source);
    std::vector<std::string> docstrings;
    for (const PythonFunction& function : found) docstrings.push_back(function.docstring);
    CHECK(docstrings == std::vector<std::string>{
                            "Triple \"double\" quotes.", "Triple 'single' quotes.", "Raw \\d+ and \\n.", "It's single.",
                            "Say \"hi\".", "Escaped \"\"\" inside.", "Raw, upper case.", "Unicode prefix.",
                            "Implicitly joined.", "", "Starts on the second line.\n\n    Indented."});
    for (const PythonFunction& function : found) {
        CAPTURE(function.qualified_name);
        CHECK(function.body == (function.qualified_name == "j" ? "b'Bytes are no docstring.'\nreturn 1" : "return 1"));
    }
}

TEST_CASE("python functions: a body keeps its comments and the indentation inside its strings") {
    std::string source =
        "class Report:\n"
        "    def render(self):\n"
        "        \"\"\"Docstring.\"\"\"\n"
        "        # explain\n"
        "        text = '''\n"
        "    kept as written\n"
        "'''\n"
        "\n"
        "        if text:\n"
        "            return text\n"
        "        return ''\n"
        "    # a comment between methods\n"
        "\n";
    std::vector<PythonFunction> found = find_python_functions(source);
    REQUIRE(found.size() == 1);
    CHECK(found[0].body == "# explain\ntext = '''\n    kept as written\n'''\n\nif text:\n    return text\nreturn ''");
    CHECK(found[0].is_method);
}

TEST_CASE("python functions: source the scanner cannot follow is a PythonSyntaxError naming the line") {
    CHECK(syntax_error_of("def f():\n    return 'open\n") == "line 2: string is never closed on its line (use ''' or \"\"\" to span lines)");
    CHECK(syntax_error_of("x = 1\ns = \"\"\"never\nclosed\n") == "line 2: triple-quoted string is never closed");
    CHECK(syntax_error_of("def f(a,\n      b:\n    return a\n") == "line 1: '(' is never closed");
    CHECK(syntax_error_of("x = [1, 2)\n") == "line 1: ')' does not match '[' opened at line 1");
    CHECK(syntax_error_of("x = 1)\n") == "line 1: unmatched ')'");
    CHECK(syntax_error_of("x = 1\n    y = 2\n") == "line 2: unexpected indent");
    CHECK(syntax_error_of("if x:\n        y = 1\n    z = 2\n") == "line 3: unindent does not match any outer indentation level");
    CHECK(syntax_error_of("def f():\nreturn 1\n") == "line 2: expected an indented block after line 1");
    CHECK(syntax_error_of("class A:\n") == "line 1: the block opened here has no body before the end of the file");
    CHECK(syntax_error_of("def (x):\n    pass\n") == "line 1: 'def' is not followed by a function name");
    CHECK(syntax_error_of("def f:\n    pass\n") == "line 1: def f: expected '(' after the name");
    CHECK(syntax_error_of("x = 1 \\ 2\n") == "line 1: a backslash outside a string must be the last character of its line");
    CHECK(syntax_error_of(std::string("x = 1\0\n", 7)) == "line 1: the source contains a null byte");
    CHECK(syntax_error_of("s = f'{x'\n") != "");
    // Python source that only looks odd is followed.
    CHECK(syntax_error_of("") == "");
    CHECK(syntax_error_of("\n\n# only a comment\n") == "");
    CHECK(syntax_error_of("def f():\n    return f\"{'}'}\" + f'{x!r:>{w}}'\n") == "");
}

TEST_CASE("python functions: classes whose names come to more than 1,024 bytes are refused, not copied into every method") {
    // A 1 MB class name over 1,000 one-line methods: a 1 MB source whose qualified names
    // alone would take 1 GB.
    auto source_with_class = [](const std::string& name) {
        std::string source = "class " + name + ":\n";
        for (int k = 0; k < 1000; ++k) source += fmt::format("    def m{}(self): return {}\n", k, k);
        return source;
    };
    CHECK(syntax_error_of(source_with_class(std::string(1'000'000, 'C'))) ==
          "line 2: def m0: the names of the classes around it come to 1000001 bytes, more than the 1024 followed");
    std::vector<PythonFunction> found = find_python_functions(source_with_class(std::string(1023, 'C')));
    REQUIRE(found.size() == 1000);
    CHECK(found[999].qualified_name == std::string(1023, 'C') + ".m999");
}

TEST_CASE("python miner: a tree of files becomes queries, passages and a report") {
    TemporaryFolder tree;
    tree.write("pkg/__init__.py", "");
    tree.write("pkg/geometry.py",
               "import math\n"
               "\n"
               "@cache\n"
               "def area(radius):\n"
               "    \"\"\"Area of a circle.\"\"\"\n"
               "    return math.pi * radius ** 2\n"
               "\n"
               "class Shape:\n"
               "    def name(self):\n"
               "        return 'shape'\n"
               "\n"
               "    def stub(self): ...\n"
               "\n"
               "    def documented_only(self):\n"
               "        \"\"\"Nothing else.\"\"\"\n");
    tree.write("pkg/sub/deep.py", "async def walk(path):\n    return path\n");
    tree.write("top.py", "def main():\n    pass\n\ndef run():\n    return main()\n");
    tree.write("empty.py", "");
    tree.write("notes.txt", "def not_python():\n    return 1\n");
    tree.write("latin1.py", "# caf\xe9\ndef lost():\n    return 1\n");
    tree.write("broken.py", "def fine():\n    return 1\n\ndef broken():\n    return 'unterminated\n");
    tree.write("windows.py", "def crlf():\r\n    \"\"\"CRLF lines.\"\"\"\r\n    return 1\r\n");
    fs::create_directory_symlink(tree.path / "pkg", tree.path / "pkg" / "loop");  // a cycle, not followed

    for (Leniency leniency : {Leniency::Lenient, Leniency::Strict}) {
        RetrievalDataset dataset = mine_python_tree(tree.path.string(), leniency);
        const ReadReport& report = dataset.report;
        CHECK(report.records.at("files") == 6);  // __init__, geometry, deep, top, empty, windows
        CHECK(report.records.at("functions") == 4);  // area, walk, run, crlf
        CHECK(report.records.at("methods") == 1);    // Shape.name
        CHECK(report.skipped.at("invalid UTF-8") == 1);
        CHECK(report.skipped.at("syntax the miner cannot follow") == 1);
        CHECK(report.skipped.at("symlinked folder not followed") == 1);
        CHECK(report.skipped.at("function body is only pass or ...") == 2);  // Shape.stub, main
        CHECK(report.skipped.at("function body is only a docstring") == 1);
        CHECK(report.skipped_examples ==
              std::vector<std::string>{"pkg/loop: a link to a folder",
                                       "broken.py: line 5: string is never closed on its line (use ''' or \"\"\" to span lines)",
                                       "latin1.py: invalid UTF-8 at byte 5 (line 1); only UTF-8 sources are read"});

        REQUIRE(dataset.queries.size() == 5);
        REQUIRE(dataset.passages.size() == 5);
        REQUIRE(dataset.relevance.size() == 5);
        std::vector<std::string> ids;
        for (const Query& query : dataset.queries) ids.push_back(query.id);
        CHECK(ids == std::vector<std::string>{"pkg/geometry.py:4:area", "pkg/geometry.py:9:Shape.name",
                                              "pkg/sub/deep.py:1:walk", "top.py:4:run", "windows.py:1:crlf"});
        for (size_t i = 0; i < dataset.queries.size(); ++i) {
            CHECK(dataset.passages[i].id == dataset.queries[i].id);
            CHECK(dataset.passages[i].group == dataset.queries[i].group);
            CHECK(dataset.relevance[i].query == static_cast<int64_t>(i));
            CHECK(dataset.relevance[i].passage == static_cast<int64_t>(i));
        }
        CHECK(dataset.queries[0].text == "def area(radius):\nArea of a circle.");
        CHECK(dataset.passages[0].text == "return math.pi * radius ** 2");
        CHECK(dataset.queries[0].group == "pkg/geometry.py");
        CHECK(dataset.queries[1].text == "def name(self):");
        CHECK(dataset.passages[1].text == "return 'shape'");
        CHECK(dataset.queries[2].group == "pkg/sub/deep.py");
        CHECK(dataset.queries[4].text == "def crlf():\nCRLF lines.");

        regroup_by_package(dataset);
        std::vector<std::string> groups;
        for (const Query& query : dataset.queries) groups.push_back(query.group);
        CHECK(groups == std::vector<std::string>{"pkg", "pkg", "pkg", "top", "windows"});
        CHECK(dataset.passages[2].group == "pkg");
    }
}

TEST_CASE("python miner: an unreadable file or folder is counted, never fatal") {
    TemporaryFolder tree;
    tree.write("good.py", "def good():\n    return 1\n");
    fs::path locked_file = tree.write("locked.py", "def hidden():\n    return 1\n");
    fs::path locked_folder = tree.path / "locked_folder";
    tree.write("locked_folder/inside.py", "def inside():\n    return 1\n");
    fs::permissions(locked_file, fs::perms::none);
    fs::permissions(locked_folder, fs::perms::none);
    if (std::ifstream(locked_file).is_open()) {
        // Running as root: permissions do not stop reading, so there is nothing to check here.
        MESSAGE("permissions do not block reading here (root?); the unreadable-file check is skipped");
        return;
    }
    RetrievalDataset dataset = mine_python_tree(tree.path.string(), Leniency::Strict);
    CHECK(dataset.report.records.at("files") == 1);
    CHECK(dataset.report.skipped.at("unreadable file") == 1);
    CHECK(dataset.report.skipped.at("unreadable folder") == 1);
    CHECK(dataset.queries.size() == 1);
}

TEST_CASE("python miner: a single file can be mined; a missing root is the one error") {
    TemporaryFolder tree;
    fs::path file = tree.write("solo.py", "def solo():\n    return 1\n");
    RetrievalDataset dataset = mine_python_tree(file.string(), Leniency::Strict);
    REQUIRE(dataset.queries.size() == 1);
    CHECK(dataset.queries[0].id == "solo.py:1:solo");
    CHECK_ERROR_MENTIONS(mine_python_tree((tree.path / "missing").string(), Leniency::Lenient), "does not exist");
    fs::path text = tree.write("notes.txt", "x");
    CHECK_ERROR_MENTIONS(mine_python_tree(text.string(), Leniency::Lenient), "neither a folder nor a .py file");
}

TEST_CASE("python miner: the Python standard library on this machine") {
    const fs::path standard_library = "/usr/lib/python3.11";
    if (!fs::is_directory(standard_library)) {
        MESSAGE("no /usr/lib/python3.11 here; the standard-library smoke test is skipped");
        return;
    }
    auto start = std::chrono::steady_clock::now();
    int64_t mined = 0;
    for (const char* package : {"json", "email"}) {
        RetrievalDataset dataset = mine_python_tree((standard_library / package).string(), Leniency::Strict);
        CHECK(dataset.queries.size() == dataset.passages.size());
        CHECK(dataset.report.records.at("files") >= 5);
        mined += static_cast<int64_t>(dataset.queries.size());
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(mined > 100);
    CHECK(seconds < 20);
    const RetrievalDataset json = mine_python_tree((standard_library / "json").string(), Leniency::Lenient);
    const Query* decode = query_with_id_ending(json, ":JSONDecoder.decode");
    REQUIRE(decode != nullptr);
    CHECK(decode->text.starts_with("def decode(self, s, _w=WHITESPACE.match):\nReturn the Python representation"));
}

// ---- CodeSearchNet -------------------------------------------------------------------------

namespace {

// One CodeSearchNet line with the given code and docstring and the other fields filled in.
std::string codesearchnet_line(const std::string& code_json, const std::string& docstring_json,
                               const std::string& extra_fields = R"("repo": "octo/widgets", "path": "widgets/core.py", "url": "https://github.com/octo/widgets/blob/main/widgets/core.py#L10-L20")") {
    return fmt::format(R"({{"code": {}, "docstring": {}, "func_name": "Widget.size", "code_tokens": ["def"], "docstring_tokens": ["Size"], {}}})",
                       code_json, docstring_json, extra_fields);
}

}  // namespace

TEST_CASE("codesearchnet: good lines become signature+docstring queries and body passages") {
    TemporaryFolder folder;
    std::string lines =
        codesearchnet_line(R"("def size(self, unit='px'):\n    \"\"\"Size of the widget.\n\n    In pixels.\n    \"\"\"\n    # measured\n    return self._size")",
                           R"("Size of the widget.\n\nIn pixels.")") + "\n" +
        "\n" +  // blank lines are not records
        codesearchnet_line(R"("    def indented(self,\r\n                 other):\r\n        return other\r\n")", R"("")",
                           R"("path": "lib/other.py")") + "\n" +
        codesearchnet_line(R"("def stub():\n    pass\n")", R"("A stub.")") + "\n";
    fs::path file = folder.write("python_train_0.jsonl", lines);
    RetrievalDataset dataset = read_codesearchnet_jsonl(file.string(), Leniency::Strict);
    CHECK(dataset.report.records.at("lines") == 3);
    CHECK(dataset.report.records.at("functions") == 2);
    CHECK(dataset.report.skipped.at("function body is only pass or ...") == 1);
    REQUIRE(dataset.queries.size() == 2);
    CHECK(dataset.queries[0].id == "https://github.com/octo/widgets/blob/main/widgets/core.py#L10-L20");
    CHECK(dataset.queries[0].text == "def size(self, unit='px'):\nSize of the widget.\n\nIn pixels.");
    CHECK(dataset.passages[0].text == "# measured\nreturn self._size");
    CHECK(dataset.queries[0].group == "octo/widgets");
    CHECK(dataset.queries[1].id == "python_train_0.jsonl:3:Widget.size");
    CHECK(dataset.queries[1].text == "def indented(self, other):");
    CHECK(dataset.passages[1].text == "return other");
    CHECK(dataset.queries[1].group == "lib/other.py");
    CHECK(dataset.relevance.size() == 2);
    CHECK(dataset.relevance[1].query == 1);
    CHECK(dataset.relevance[1].passage == 1);
}

TEST_CASE("codesearchnet: bad lines are skipped and counted (lenient) or stop the read naming file and line (strict)") {
    TemporaryFolder folder;
    const std::string good = codesearchnet_line(R"("def ok():\n    return 1")", R"("Fine.")");
    std::vector<std::pair<std::string, std::string>> bad_lines = {
        {"{\"code\": \"def f(", "invalid JSON"},
        {"[1, 2]", "invalid JSON"},
        {"{\"code\": \"caf\xe9\"}", "invalid UTF-8"},
        {R"({"docstring": "", "func_name": "f", "code_tokens": [], "docstring_tokens": []})", "missing field"},
        {codesearchnet_line("42", R"("")"), "field of the wrong type"},
        {codesearchnet_line(R"("x = 1")", R"("")"), "code without a function"},
        {codesearchnet_line(R"("def f():\n    return 'open\n")", R"("")"), "code the scanner cannot follow"},
        {codesearchnet_line(R"("def f():\n    return 1")", R"("")", R"("repo": 7)"), "field of the wrong type"},
        {codesearchnet_line(R"("def f():\n    return 1")", R"("")", R"("stars": 1e999)"), "invalid JSON"},
    };
    std::string contents = good + "\n";
    for (const auto& [line, reason] : bad_lines) contents += line + "\n";
    contents += good + "\n";
    fs::path file = folder.write("bad.jsonl", contents);

    RetrievalDataset dataset = read_codesearchnet_jsonl(file.string(), Leniency::Lenient);
    CHECK(dataset.queries.size() == 2);
    CHECK(dataset.report.records.at("lines") == static_cast<int64_t>(bad_lines.size() + 2));
    std::map<std::string, int64_t> expected_skipped;
    for (const auto& [line, reason] : bad_lines) ++expected_skipped[reason];
    CHECK(dataset.report.skipped == expected_skipped);
    REQUIRE(dataset.report.skipped_examples.size() == bad_lines.size());
    CHECK(dataset.report.skipped_examples[0].starts_with(file.string() + " line 2: not valid JSON"));
    CHECK(dataset.report.skipped_examples[1] == file.string() + " line 3: the line is a JSON array, expected an object");
    CHECK(dataset.report.skipped_examples[2] == file.string() + " line 4: invalid UTF-8 at byte 13");
    CHECK(dataset.report.skipped_examples[3] == file.string() + " line 5: missing field 'code'");
    CHECK(dataset.report.skipped_examples[4] == file.string() + " line 6: field 'code' is number, expected a string");
    CHECK(dataset.report.skipped_examples[5] == file.string() + " line 7: code of Widget.size has no 'def'");
    CHECK(dataset.report.skipped_examples[6] ==
          file.string() + " line 8: code of Widget.size, line 2: string is never closed on its line (use ''' or \"\"\" to span lines)");
    CHECK(dataset.report.skipped_examples[7] == file.string() + " line 9: field 'repo' is number, expected a string");
    CHECK(dataset.report.skipped_examples[8] ==
          file.string() + " line 10: not valid JSON: number overflow parsing '1e999'");  // not a crash

    // Strict: the first bad line stops the read, in one line naming the file and line number.
    CHECK_ERROR_MENTIONS(read_codesearchnet_jsonl(file.string(), Leniency::Strict), file.string() + " line 2: not valid JSON");
    for (size_t i = 0; i < bad_lines.size(); ++i) {
        fs::path single = folder.write(fmt::format("single_{}.jsonl", i), good + "\n" + bad_lines[i].first + "\n");
        try {
            read_codesearchnet_jsonl(single.string(), Leniency::Strict);
            FAIL("a strict read accepted bad line " << i);
        } catch (const Error& error) {
            std::string message = error.what();
            CHECK(message.find(single.string() + " line 2: ") == 0);
            CHECK(message.find('\n') == std::string::npos);
        }
    }
}

TEST_CASE("codesearchnet: a missing, empty or still-gzipped file is one clear error") {
    TemporaryFolder folder;
    CHECK_ERROR_MENTIONS(read_codesearchnet_jsonl((folder.path / "missing.jsonl").string(), Leniency::Lenient), "no such file");
    fs::path empty = folder.write("empty.jsonl", "");
    CHECK_ERROR_MENTIONS(read_codesearchnet_jsonl(empty.string(), Leniency::Lenient), "the file is empty");
    fs::path gzipped = folder.write("python_train_0.jsonl.gz", std::string("\x1f\x8b\x08\x00\x00\x00", 6));
    CHECK_ERROR_MENTIONS(read_codesearchnet_jsonl(gzipped.string(), Leniency::Lenient), "gunzip");
}

// The JSON readers of untrusted files check the nesting before they parse
// (engine/json_nesting.h): 100,000 '[' are one error naming the file, never a stack overflow.
// KorQuAD and ranked-QA files are read by data/json_file.h, tested here beside CodeSearchNet.
TEST_CASE("json readers: a CodeSearchNet line or a KorQuAD / ranked-QA file nested 100,000 deep is refused by name") {
    TemporaryFolder folder;
    const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
    const std::string good = codesearchnet_line(R"("def ok():\n    return 1")", R"("Fine.")");
    fs::path lines = folder.write("deep.jsonl", good + "\n" + deep + "\n" + good + "\n");
    RetrievalDataset dataset = read_codesearchnet_jsonl(lines.string(), Leniency::Lenient);
    CHECK(dataset.queries.size() == 2);
    CHECK(dataset.report.skipped.at("invalid JSON") == 1);
    CHECK_ERROR_MENTIONS(read_codesearchnet_jsonl(lines.string(), Leniency::Strict),
                         lines.string() + " line 2: JSON nesting exceeds 64 levels at byte 64");

    fs::path file = folder.write("deep.json", R"({"version": "1", "data": )" + deep + "}");
    for (Leniency leniency : {Leniency::Lenient, Leniency::Strict}) {
        CHECK_ERROR_MENTIONS(read_korquad(file.string(), leniency), file.string() + ": JSON nesting exceeds 64 levels");
        CHECK_ERROR_MENTIONS(read_ranked_qa_json(file.string(), leniency),
                             file.string() + ": JSON nesting exceeds 64 levels");
    }
}
