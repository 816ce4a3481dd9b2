#include "data/ranked_qa_reader.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_set>
#include <vector>

#include "data/json_file.h"
#include "data/reader_support.h"
#include "data/text_cleaning.h"

namespace nce::data {
namespace {

using nlohmann::json;

// A question's id is copied into every answer (as its group), so an id of megabytes over
// thousands of small answers would make the data set thousands of times bigger than the file.
// Real ones are numbers or short strings.
constexpr size_t kMaxQuestionIdBytes = 1024;

// An id written as a string ("123") or an integer (123), as text; nothing if neither.
std::optional<std::string> id_field(const json& object) {
    if (!object.is_object() || !object.contains("id")) return std::nullopt;
    const json& id = object["id"];
    if (id.is_string()) return id.get<std::string>();
    if (id.is_number_integer()) return id.dump();  // exact for any integer JSON holds, unsigned ones included
    return std::nullopt;
}

bool has_string(const json& object, const char* name) {
    return object.is_object() && object.contains(name) && object[name].is_string();
}

struct Candidate {  // one answer of a question, before ranking
    int64_t passage = 0;
    double score = 0;
    bool accepted = false;
};

}  // namespace

RetrievalDataset read_ranked_qa_json(const std::string& path, Leniency leniency) {
    auto start = std::chrono::steady_clock::now();
    json document = read_json_file(path);
    NCE_CHECK(document.is_array(), "{}: the top level must be an array of {{\"question\", \"answers\"}} records", path);

    RetrievalDataset dataset;
    dataset.name = "ranked-qa";
    ReadReport& report = dataset.report;
    report.records["questions"] = 0;
    report.records["answers"] = 0;
    // An id names one question, or one answer (a passage): rankings, runs and mined negatives
    // are keyed by it, so a second record with the same id is refused, not silently merged.
    std::unordered_set<std::string> question_ids, answer_ids;

    for (size_t record_index = 0; record_index < document.size(); ++record_index) {
        const json& record = document[record_index];
        bool has_parts = record.is_object() && record.contains("question") && record.contains("answers") &&
                         record["answers"].is_array();
        const json& question = has_parts ? record["question"] : record;
        std::optional<std::string> question_id = has_parts ? id_field(question) : std::nullopt;
        if (!question_id || !has_string(question, "title")) {
            skip_or_fail(report, leniency, "question without id or title",
                         fmt::format("{}: record {} needs a \"question\" with an \"id\" and a \"title\" string, and an "
                                     "\"answers\" array",
                                     path, record_index));
            continue;
        }
        if (question_id->size() > kMaxQuestionIdBytes) {
            skip_or_fail(report, leniency, "question with an id too long",
                         fmt::format("{}: record {} has a question id of {} bytes, more than the {} an id may have", path,
                                     record_index, question_id->size(), kMaxQuestionIdBytes));
            continue;
        }
        if (!question_ids.insert(*question_id).second) {
            skip_or_fail(report, leniency, "duplicate question id",
                         fmt::format("{}: record {} repeats the question id \"{}\"; every question needs an id of "
                                     "its own",
                                     path, record_index, *question_id));
            continue;
        }
        std::string body = has_string(question, "body") ? clean_html(question["body"].get<std::string>()) : "";
        int64_t query_index = static_cast<int64_t>(dataset.queries.size());
        dataset.queries.push_back(
            {*question_id, collapse_whitespace(question["title"].get<std::string>()) + "\n" + body, *question_id});

        std::vector<Candidate> candidates;
        for (const json& answer : record["answers"]) {
            std::optional<std::string> answer_id = id_field(answer);
            bool has_score = answer.is_object() && answer.contains("score") && answer["score"].is_number();
            if (!answer_id || !has_string(answer, "body") || !has_score) {
                skip_or_fail(report, leniency, "answer without id, body or score",
                             fmt::format("{}: question {}: an answer needs an \"id\", a \"body\" string and a numeric "
                                         "\"score\"",
                                         path, *question_id));
                continue;
            }
            if (answer_id->size() > kMaxQuestionIdBytes || !answer_ids.insert(*answer_id).second) {
                skip_or_fail(report, leniency, "duplicate or oversized answer id",
                             fmt::format("{}: question {}: the answer id \"{}\" is used by another answer too (or is "
                                         "longer than {} bytes); every answer needs an id of its own",
                                         path, *question_id, truncate_utf8(*answer_id, 60), kMaxQuestionIdBytes));
                continue;
            }
            bool accepted = answer.contains("is_accepted") && answer["is_accepted"].is_boolean() &&
                            answer["is_accepted"].get<bool>();
            candidates.push_back(
                {static_cast<int64_t>(dataset.passages.size()), answer["score"].get<double>(), accepted});
            dataset.passages.push_back({*answer_id, clean_html(answer["body"].get<std::string>()), *question_id});
        }

        // rank 0 = the highest score; among equal scores the accepted answer first, then file order.
        std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
            if (a.score != b.score) return a.score > b.score;
            return a.accepted && !b.accepted;
        });
        for (size_t rank = 0; rank < candidates.size(); ++rank)
            dataset.relevance.push_back({query_index, candidates[rank].passage, candidates[rank].score,
                                         static_cast<int64_t>(rank), candidates[rank].accepted});
    }
    report.records["questions"] = static_cast<int64_t>(dataset.queries.size());
    report.records["answers"] = static_cast<int64_t>(dataset.passages.size());
    report.seconds = seconds_since(start);
    return dataset;
}

}  // namespace nce::data
