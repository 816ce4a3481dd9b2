#include "data/korquad_reader.h"

#include <fmt/core.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "data/json_file.h"
#include "data/reader_support.h"
#include "data/text_cleaning.h"

namespace nce::data {
namespace {

using nlohmann::json;

// The title is copied into every passage (id and group) and every query (group) of its
// article, so a title of megabytes over thousands of small paragraphs would make the data set
// thousands of times bigger than the file. Real ones are short (Wikipedia's are at most 255
// bytes, KorQuAD dev's at most 48).
constexpr size_t kMaxTitleBytes = 1024;

// The string at object[name], or nullptr when it is missing or not a string.
const std::string* string_field(const json& object, const char* name) {
    if (!object.is_object()) return nullptr;
    auto field = object.find(name);
    return field != object.end() && field->is_string() ? field->get_ptr<const std::string*>() : nullptr;
}

bool has_array(const json& object, const char* name) {
    return object.is_object() && object.contains(name) && object[name].is_array();
}

// Why a qa record cannot be used: `reason` is the category counted in the report, `message`
// the one line naming the record.
struct Problem {
    std::string reason;
    std::string message;
};

// Checks one answer of a question against its paragraph: answer_start is an index in code
// points, so it becomes a byte offset (through `offsets`, built once per paragraph: a paragraph
// may have thousands of answers) before the text is compared.
std::optional<Problem> check_answer(const json& answer, const std::string& context, const CodePointOffsets& offsets,
                                    const std::string& where) {
    const std::string* text = string_field(answer, "text");
    bool has_start =
        answer.is_object() && answer.contains("answer_start") && answer["answer_start"].is_number_integer();
    if (!text || !has_start)
        return Problem{"answer without text or answer_start",
                       fmt::format("{}: an answer has no \"text\" string or no integer \"answer_start\"", where)};
    // A start above int64's range (JSON allows any integer) is past every paragraph, not negative.
    if (answer["answer_start"].is_number_unsigned() &&
        answer["answer_start"].get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return Problem{"answer not at answer_start",
                       fmt::format("{}: answer \"{}\" is not at answer_start {} (counted in code points) of its "
                                   "paragraph; the paragraph is shorter than that",
                                   where, truncate_utf8(*text, 30), answer["answer_start"].get<uint64_t>())};
    int64_t answer_start = answer["answer_start"].get<int64_t>();
    size_t byte_offset = offsets.byte_offset(answer_start);
    if (byte_offset != std::string::npos && context.compare(byte_offset, text->size(), *text) == 0) return std::nullopt;
    std::string found;
    if (answer_start < 0) found = "a start cannot be negative";
    else if (byte_offset == std::string::npos) found = "the paragraph is shorter than that";
    else found = fmt::format("found \"{}\"", truncate_utf8(std::string_view(context).substr(byte_offset), 30));
    return Problem{
        "answer not at answer_start",
        fmt::format("{}: answer \"{}\" is not at answer_start {} (counted in code points) of its paragraph; {}", where,
                    truncate_utf8(*text, 30), answer_start, found)};
}

// Checks everything a question needs to become a query with its paragraph as the passage.
std::optional<Problem> check_question(const json& qa, const std::string& context, const CodePointOffsets& offsets,
                                      const std::string& where) {
    if (!string_field(qa, "id") || !string_field(qa, "question") || !has_array(qa, "answers"))
        return Problem{
            "question without id, question or answers",
            fmt::format("{}: needs an \"id\" string, a \"question\" string and an \"answers\" array", where)};
    if (string_field(qa, "question")->empty())
        return Problem{"empty question", fmt::format("{}: the question text is empty", where)};
    if (qa["answers"].empty())
        return Problem{"question without an answer", fmt::format("{}: the \"answers\" array is empty", where)};
    for (const json& answer : qa["answers"])
        if (auto problem = check_answer(answer, context, offsets, where)) return problem;
    return std::nullopt;
}

}  // namespace

RetrievalDataset read_korquad(const std::string& path, Leniency leniency) {
    auto start = std::chrono::steady_clock::now();
    json document = read_json_file(path);
    NCE_CHECK(has_array(document, "data"),
              "{}: not SQuAD v1 JSON: the top level must be an object with a \"data\" array of articles", path);

    RetrievalDataset dataset;
    dataset.name = "korquad";
    ReadReport& report = dataset.report;
    for (const char* kind : {"articles", "paragraphs", "questions", "passages"}) report.records[kind] = 0;
    std::unordered_map<std::string, int64_t> passage_of_context;  // context text -> passage index
    std::unordered_set<std::string> question_ids;                  // a query id names one question

    const json& articles = document["data"];
    for (size_t article_index = 0; article_index < articles.size(); ++article_index) {
        const json& article = articles[article_index];
        const std::string* title = string_field(article, "title");
        if (!title || !has_array(article, "paragraphs")) {
            skip_or_fail(
                report, leniency, "article without title or paragraphs",
                fmt::format("{}: article {} needs a \"title\" string and a \"paragraphs\" array", path, article_index));
            continue;
        }
        if (title->size() > kMaxTitleBytes) {
            skip_or_fail(report, leniency, "article with a title too long",
                         fmt::format("{}: article {} has a title of {} bytes, more than the {} a title may have", path,
                                     article_index, title->size(), kMaxTitleBytes));
            continue;
        }
        ++report.records["articles"];

        const json& paragraphs = article["paragraphs"];
        for (size_t paragraph_index = 0; paragraph_index < paragraphs.size(); ++paragraph_index) {
            const json& paragraph = paragraphs[paragraph_index];
            const std::string* context = string_field(paragraph, "context");
            if (!context || !has_array(paragraph, "qas")) {
                skip_or_fail(
                    report, leniency, "paragraph without context or qas",
                    fmt::format("{}: article \"{}\" paragraph {} needs a \"context\" string and a \"qas\" array", path,
                                *title, paragraph_index));
                continue;
            }
            ++report.records["paragraphs"];
            auto [known, is_new] =
                passage_of_context.try_emplace(*context, static_cast<int64_t>(dataset.passages.size()));
            if (is_new) dataset.passages.push_back({fmt::format("{}#{}", *title, paragraph_index), *context, *title});
            int64_t passage_index = known->second;

            const json& qas = paragraph["qas"];
            CodePointOffsets offsets(*context);
            for (size_t qa_index = 0; qa_index < qas.size(); ++qa_index) {
                const json& qa = qas[qa_index];
                const std::string* id = string_field(qa, "id");
                std::string where =
                    id ? fmt::format("{}: qa {}", path, *id)
                       : fmt::format("{}: article \"{}\" paragraph {} qa {}", path, *title, paragraph_index, qa_index);
                if (auto problem = check_question(qa, *context, offsets, where)) {
                    skip_or_fail(report, leniency, problem->reason, problem->message);
                    continue;
                }
                if (!question_ids.insert(*id).second) {
                    skip_or_fail(report, leniency, "duplicate question id",
                                 fmt::format("{}: the id \"{}\" names an earlier question too; every question needs "
                                             "an id of its own (rankings and mined negatives are keyed by it)",
                                             where, truncate_utf8(*id, 60)));
                    continue;
                }
                int64_t query_index = static_cast<int64_t>(dataset.queries.size());
                dataset.queries.push_back({*id, *string_field(qa, "question"), *title});
                // The first answer's place (checked above), for training on the window that holds it.
                const json& answer = qa["answers"][0];
                int64_t answer_begin = static_cast<int64_t>(offsets.byte_offset(answer["answer_start"].get<int64_t>()));
                int64_t answer_end = answer_begin + static_cast<int64_t>(answer["text"].get_ref<const std::string&>().size());
                dataset.relevance.push_back({query_index, passage_index, 1.0, 0, false, answer_begin, answer_end});
                ++report.records["questions"];
            }
        }
    }
    report.records["passages"] = static_cast<int64_t>(dataset.passages.size());
    report.seconds = seconds_since(start);
    return dataset;
}

}  // namespace nce::data
