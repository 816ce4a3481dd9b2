// The ranked question-answer JSON (StackExchange questions with their answers, as fetched
// from the site's API) as a retrieval data set:
//
//   [{"question": {"id", "title", "body", "score", ...},
//     "answers":  [{"id", "body", "score", "is_accepted"}, ...]}, ...]
//
// query   = title + "\n" + cleaned body (HTML, see data/text_cleaning.h)   id and group: question id
// passage = cleaned answer body                                            id: answer id, group: question id
// relevance: question -> each answer; score = the answer's score; rank = position by score,
//            highest first, ties broken by the accepted answer first, then by order in the file.
// Ids may be numbers or strings; "body" of a question and "is_accepted" may be left out.
// A question without id or title, or with an id longer than 1,024 bytes (it is copied into
// every answer), or an answer without id, body or numeric score, is skipped (lenient) or stops
// the read (strict) naming the file and question.
// ReadReport::records: "questions", "answers".
#pragma once
#include <string>

#include "data/dataset.h"

namespace nce::data {

RetrievalDataset read_ranked_qa_json(const std::string& path, Leniency leniency);

}  // namespace nce::data
