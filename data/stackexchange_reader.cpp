#include "data/stackexchange_reader.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "data/reader_support.h"
#include "data/text_cleaning.h"

namespace nce::data {
namespace {

using Attributes = std::unordered_map<std::string, std::string>;

// Hashes post ids for the tables keyed by them. std::hash<int64_t> is the identity, so a file
// whose ids are all multiples of a table's bucket count would put them in one bucket, and
// each insert would walk every id before it: 200,000 such rows took 39 s, growing with their
// square. The id is first mixed with a seed drawn once per process, which no file can aim at
// (the tables are only looked up, never iterated, so the output does not depend on it).
struct PostIdHash {
    size_t operator()(int64_t id) const {
        static const uint64_t seed = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
        uint64_t x = static_cast<uint64_t>(id) ^ seed;  // then the splitmix64 finalizer
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
        return static_cast<size_t>(x ^ (x >> 31));
    }
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view trim(std::string_view text) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

// Parses `<row Name="value" ... />` into name -> XML-unescaped value. Returns what is wrong
// with the row, or nothing when it parsed.
std::optional<std::string> parse_row(std::string_view row, Attributes& attributes) {
    size_t position = 4;  // past "<row"
    while (true) {
        while (position < row.size() && is_space(row[position])) ++position;
        if (position >= row.size()) return "the row does not end with \"/>\" (cut short?)";
        if (row.substr(position, 2) == "/>") {
            if (position + 2 != row.size()) return "there is text after the row's \"/>\"";
            return std::nullopt;
        }
        size_t name_start = position;
        while (position < row.size() && row[position] != '=' && !is_space(row[position]) && row[position] != '/')
            ++position;
        std::string name(row.substr(name_start, position - name_start));
        if (name.empty()) return fmt::format("expected an attribute name at column {}", name_start + 1);
        while (position < row.size() && is_space(row[position])) ++position;
        if (position >= row.size() || row[position] != '=')
            return fmt::format("attribute {} has no '=' after it", name);
        ++position;
        while (position < row.size() && is_space(row[position])) ++position;
        if (position >= row.size() || (row[position] != '"' && row[position] != '\''))
            return fmt::format("the value of attribute {} is not in quotes", name);
        char quote = row[position];
        size_t value_end = row.find(quote, position + 1);
        if (value_end == std::string_view::npos)
            return fmt::format("the value of attribute {} has no closing quote (cut short?)", name);
        attributes[name] = decode_xml_entities(row.substr(position + 1, value_end - position - 1));
        position = value_end + 1;
    }
}

// The whole of `text` as an integer, or nothing.
std::optional<int64_t> parse_integer(const std::string& text) {
    int64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

std::optional<int64_t> integer_attribute(const Attributes& attributes, const char* name) {
    auto found = attributes.find(name);
    return found == attributes.end() ? std::nullopt : parse_integer(found->second);
}

const std::string* text_attribute(const Attributes& attributes, const char* name) {
    auto found = attributes.find(name);
    return found == attributes.end() ? nullptr : &found->second;
}

struct QuestionRow {
    int64_t id = 0;
    std::string text;
    std::optional<int64_t> accepted_answer_id;
};

struct AnswerRow {
    int64_t id = 0;
    int64_t parent_id = 0;
    int64_t score = 0;
    std::string text;
    int64_t line = 0;
};

// Everything the streaming pass collects; answers are matched to questions at the end, so
// their order in the file does not matter.
struct PostsInFile {
    std::vector<QuestionRow> questions;
    std::vector<AnswerRow> answers;
    std::unordered_set<int64_t, PostIdHash> ids_seen;
};

// Files one parsed row as a question, an answer or an other post type; a row missing what its
// type needs is a skipped record.
void file_row(const Attributes& attributes, const std::string& path, int64_t line, PostsInFile& posts,
              ReadReport& report, Leniency leniency) {
    std::string where = fmt::format("{}:{}", path, line);
    std::optional<int64_t> id = integer_attribute(attributes, "Id");
    std::optional<int64_t> post_type = integer_attribute(attributes, "PostTypeId");
    if (!id || !post_type) {
        skip_or_fail(report, leniency, "row without an integer Id and PostTypeId",
                     fmt::format("{}: the row needs integer Id and PostTypeId attributes", where));
        return;
    }
    if (*post_type != 1 && *post_type != 2) {
        ++report.skipped["other post type"];
        return;
    }
    if (!posts.ids_seen.insert(*id).second) {
        skip_or_fail(report, leniency, "duplicate Id", fmt::format("{}: Id {} appears a second time", where, *id));
        return;
    }
    const std::string* body = text_attribute(attributes, "Body");
    if (*post_type == 1) {
        const std::string* title = text_attribute(attributes, "Title");
        if (!title || !body) {
            skip_or_fail(report, leniency, "question without Title or Body",
                         fmt::format("{}: question {} needs Title and Body attributes", where, *id));
            return;
        }
        posts.questions.push_back({*id, collapse_whitespace(*title) + "\n" + clean_html(*body),
                                   integer_attribute(attributes, "AcceptedAnswerId")});
        return;
    }
    std::optional<int64_t> parent_id = integer_attribute(attributes, "ParentId");
    std::optional<int64_t> score = integer_attribute(attributes, "Score");
    if (!parent_id || !score || !body) {
        skip_or_fail(report, leniency, "answer without ParentId, Score or Body",
                     fmt::format("{}: answer {} needs integer ParentId and Score and a Body", where, *id));
        return;
    }
    posts.answers.push_back({*id, *parent_id, *score, clean_html(*body), line});
}

// Turns the collected posts into queries, passages and ranked relevance.
void build_dataset(const PostsInFile& posts, const std::string& path, Leniency leniency, RetrievalDataset& dataset) {
    std::unordered_map<int64_t, int64_t, PostIdHash> query_of_question;  // question Id -> query index
    for (const QuestionRow& question : posts.questions) {
        query_of_question[question.id] = static_cast<int64_t>(dataset.queries.size());
        std::string id = std::to_string(question.id);
        dataset.queries.push_back({id, question.text, id});
    }

    struct Candidate {  // one answer of a question, before ranking
        int64_t passage = 0;
        int64_t answer_id = 0;
        int64_t score = 0;
        bool accepted = false;
    };
    std::vector<std::vector<Candidate>> answers_of_query(dataset.queries.size());
    for (const AnswerRow& answer : posts.answers) {
        auto query = query_of_question.find(answer.parent_id);
        if (query == query_of_question.end()) {
            skip_or_fail(dataset.report, leniency, "answer whose question is absent",
                         fmt::format("{}:{}: answer {} has ParentId {}, which is not a question in this file", path,
                                     answer.line, answer.id, answer.parent_id));
            continue;
        }
        const QuestionRow& question = posts.questions[static_cast<size_t>(query->second)];
        bool accepted = question.accepted_answer_id == answer.id;
        answers_of_query[static_cast<size_t>(query->second)].push_back(
            {static_cast<int64_t>(dataset.passages.size()), answer.id, answer.score, accepted});
        dataset.passages.push_back({std::to_string(answer.id), answer.text, std::to_string(answer.parent_id)});
    }

    // rank 0 = the highest Score; among equal scores the accepted answer first, then lower Id.
    for (size_t query = 0; query < answers_of_query.size(); ++query) {
        std::vector<Candidate>& candidates = answers_of_query[query];
        std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
            if (a.score != b.score) return a.score > b.score;
            if (a.accepted != b.accepted) return a.accepted;
            return a.answer_id < b.answer_id;
        });
        for (size_t rank = 0; rank < candidates.size(); ++rank)
            dataset.relevance.push_back({static_cast<int64_t>(query), candidates[rank].passage,
                                         static_cast<double>(candidates[rank].score), static_cast<int64_t>(rank),
                                         candidates[rank].accepted});
    }
    dataset.report.records["questions"] = static_cast<int64_t>(dataset.queries.size());
    dataset.report.records["answers"] = static_cast<int64_t>(dataset.passages.size());
}

}  // namespace

RetrievalDataset read_stackexchange_posts(const std::string& path, Leniency leniency) {
    auto start = std::chrono::steady_clock::now();
    std::ifstream file = open_source_file(path);
    RetrievalDataset dataset;
    dataset.name = "stackexchange";
    ReadReport& report = dataset.report;

    PostsInFile posts;
    bool posts_opened = false, posts_closed = false;
    int64_t line_number = 0;
    std::string line;
    while (std::getline(file, line)) {
        ++line_number;
        std::string_view content(line);
        if (line_number == 1 && content.substr(0, 3) == "\xEF\xBB\xBF") content.remove_prefix(3);  // byte-order mark
        content = trim(content);
        std::string where = fmt::format("{}:{}", path, line_number);
        if (content.empty() || content.substr(0, 5) == "<?xml") continue;
        if (content.substr(0, 6) == "<posts") {
            posts_opened = true;
            continue;
        }
        if (content == "</posts>") {
            posts_closed = true;
            continue;
        }
        if (size_t invalid = find_invalid_utf8(content); invalid != std::string_view::npos) {
            skip_or_fail(report, leniency, "invalid UTF-8",
                         fmt::format("{}: invalid UTF-8 at column {}; the file must be UTF-8", where, invalid + 1));
            continue;
        }
        if (content.substr(0, 5) != "<row " || posts_closed) {
            skip_or_fail(report, leniency, "line that is not a <row/> inside <posts>",
                         fmt::format("{}: expected a <row .../> inside <posts>, found \"{}\"", where,
                                     truncate_utf8(content, 40)));
            continue;
        }
        Attributes attributes;
        if (auto problem = parse_row(content, attributes)) {
            skip_or_fail(report, leniency, "malformed row", fmt::format("{}: {}", where, *problem));
            continue;
        }
        file_row(attributes, path, line_number, posts, report, leniency);
    }
    NCE_CHECK(!file.bad(), "{}: reading failed after line {} ({})", path, line_number, std::strerror(errno));
    NCE_CHECK(posts_opened, "{}: no <posts> element; is this a StackExchange dump's Posts.xml?", path);
    if (!posts_closed)
        skip_or_fail(
            report, leniency, "file ends before </posts>",
            fmt::format("{}: the file ends at line {} without </posts>; it looks cut short", path, line_number));

    build_dataset(posts, path, leniency, dataset);
    report.seconds = seconds_since(start);
    return dataset;
}

}  // namespace nce::data
