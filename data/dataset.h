// The one in-memory form every reader produces: queries, passages, and which passages are
// relevant to which query (with a grade where the source has one).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nce::data {

struct Query {
    std::string id;     // the source's id (KorQuAD qa id, StackExchange post id, function path)
    std::string text;
    std::string group;  // what a split keeps together: article title, file or package
};

struct Passage {
    std::string id;
    std::string text;
    std::string group;
};

// Query `query` (index into queries) is answered by passage `passage` (index into passages).
struct Relevance {
    int64_t query = 0;
    int64_t passage = 0;
    double score = 1.0;     // the source's score (StackExchange votes), 1 where there is none
    int64_t rank = 0;       // 0 = best, by score within the query
    bool accepted = false;  // StackExchange's accepted answer
    // Where the answer sits in the passage's text, in bytes [answer_begin, answer_end)
    // (KorQuAD's answer_start, converted from code points); -1 where the source has none.
    int64_t answer_begin = -1;
    int64_t answer_end = -1;
    // The source marks this passage as one that does NOT answer the query (a pairs file's
    // negative column, data/pairs_reader.h). Training uses it as a hard negative of the
    // query; evaluation never counts it relevant. Such entries rank after the query's answers.
    bool hard_negative = false;
};

// What a reader found, for `nce data stats` and error reports.
struct ReadReport {
    std::map<std::string, int64_t> records;  // kind -> count ("questions", "answers", ...)
    std::map<std::string, int64_t> skipped;  // reason -> count
    std::vector<std::string> skipped_examples;  // the first few, with file and line or id
    double seconds = 0;
};

struct RetrievalDataset {
    std::string name;
    std::vector<Query> queries;
    std::vector<Passage> passages;
    std::vector<Relevance> relevance;
    ReadReport report;
};

// Strict readers stop at the first bad record with one line naming the file and record;
// lenient ones skip it and count the reason.
enum class Leniency { Strict, Lenient };

}  // namespace nce::data
