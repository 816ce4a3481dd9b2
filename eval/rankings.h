// Ranked candidate lists with their scores, from the dense model, from BM25, and from the
// hybrid fusion of the two; and the relevance sets they are scored against.
//
// A ranking keeps the `depth` best passages of each query, best first, with their scores
// (ties: lower passage index first). Fusion works on these lists, so it never needs the
// whole [Q, N] score matrix.
//
// BM25 tokens (the lexical baseline reads the raw text, not the model's pieces):
//   whitespace:            split at Unicode white space, ASCII letters lower-cased, the
//                          punctuation at both ends of a word removed
//                          "서울의 날씨는?" -> {"서울의", "날씨는"}
//   whitespace + bigrams:  the words above, plus every pair of adjacent characters inside a
//                          word of two or more characters
//                          "서울의 날씨는?" -> {"서울의", "날씨는", "서울", "울의", "날씨", "씨는"}
//
// Hybrid fusion (a convex combination of min-max normalised scores, per query):
//   for query q, each list's scores are rescaled to [0, 1] over that list,
//     norm(s) = (s - min) / (max - min)            (all equal: every norm is 1)
//   every passage in either list gets
//     fused = w · norm_dense + (1 - w) · norm_bm25
//   where a passage missing from one list gets 0 for that list; ranked by fused, then index.
// The weight w is chosen on the validation split (choose_fusion_weight), never the test split.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "engine/tensor.h"
#include "eval/bm25.h"
#include "eval/metrics.h"

namespace nce::eval {

struct RankedLists {
    std::vector<std::vector<int64_t>> passages;  // [Q][<= depth] passage indices, best first
    std::vector<std::vector<double>> scores;     // the same shape: their scores
};

// relevant[q]: the passages `dataset.relevance` marks for query q (hard negatives are not
// relevant). Throws naming the data set
// when a query has none (every query must be answerable to be scored).
RelevantSets relevant_sets(const data::RetrievalDataset& dataset);

// Exact inner-product search (eval/exact_search.h): queries [Q, D], passages [N, D] float32.
// depth is capped at N.
RankedLists dense_rankings(const Tensor& query_embeddings, const Tensor& passage_embeddings, int64_t depth);

// CodeIdentifiers (nce code): words are runs of letters, digits and '_' (any other character
// separates them, so "os.path.join(a, b)" -> {"os", "path", "join", "a", "b"}), lower-cased;
// a word with '_', a camelCase hump or a letter-digit change also gives its parts:
//   "getLineNumber_v2" -> {"getlinenumber_v2", "get", "line", "number", "v", "2"}
//   "HTTPServer"       -> {"httpserver", "http", "server"}
enum class LexicalTokens { Whitespace, WhitespaceAndBigrams, CodeIdentifiers };
// "whitespace", "whitespace+bigrams", "code identifiers"
const char* lexical_tokens_name(LexicalTokens tokens);

// The BM25 tokens of one text, as described above.
std::vector<std::string> lexical_tokens(const std::string& text, LexicalTokens tokens);
// The same tokens handed to `visit` one at a time, never all held at once: memory grows with the
// longest word, not with the text (a 50 MB line of words costs its token ids alone).
void for_each_lexical_token(const std::string& text, LexicalTokens tokens,
                            const std::function<void(const std::string&)>& visit);

// Okapi BM25 (eval/bm25.h) of each query over the passages, both tokenised with `tokens`;
// depth is capped at the number of passages. A query with no token gets an empty-score
// ranking (every passage 0, by index).
RankedLists bm25_rankings(const std::vector<std::string>& queries, const std::vector<std::string>& passages,
                          LexicalTokens tokens, eval::Bm25Parameters parameters, int64_t depth);

// The fusion above with dense weight w in [0, 1]; both lists must have the same queries.
RankedLists fuse_rankings(const RankedLists& lexical, const RankedLists& dense, double dense_weight);

struct FusionChoice {
    double dense_weight = 0.5;
    double validation_mrr = 0;  // MRR@10 of the fused ranking on the validation split at that weight
};

// Tries w = 0, 0.05, ..., 1 on the validation rankings and keeps the one with the best
// MRR@10 (ties: the smaller w, i.e. leaning on BM25).
FusionChoice choose_fusion_weight(const RankedLists& lexical, const RankedLists& dense,
                                  const RelevantSets& relevant);

// The passage lists alone, for eval/metrics.h.
Rankings passage_lists(const RankedLists& rankings);

}  // namespace nce::eval
