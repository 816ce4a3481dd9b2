// KorQuAD 1.0 (and any SQuAD v1 JSON) as a retrieval data set: each question is a query, the
// paragraph it was asked about is its one relevant passage.
//
//   {"version", "data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
//                                                   "answers": [{"text", "answer_start"}]}]}]}]}
//
// query   = question          (id: the qa id, group: the article title)
// passage = paragraph context (id: "<title>#<paragraph index>", group: the article title);
//           a context that appears twice in the file (KorQuAD dev has 3 such) is one passage
// Every answer is checked: `answer_start` counts Unicode code points, so it is turned into a
// UTF-8 byte offset and the answer text must be found there. A question failing that, or one
// missing a field, is skipped (lenient) or stops the read (strict) naming the file and qa id;
// so is an article whose title is longer than 1,024 bytes (it is copied into every record).
// ReadReport::records: "articles", "paragraphs", "questions" (those read), "passages" (distinct).
#pragma once
#include <string>

#include "data/dataset.h"

namespace nce::data {

RetrievalDataset read_korquad(const std::string& path, Leniency leniency);

}  // namespace nce::data
