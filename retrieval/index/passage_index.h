// The vector store: passages cut into overlapping chunks, each chunk encoded by the trained
// model into a FAISS inner-product index, and queries answered from it.
//
// Chunking (in the model's tokens, so every chunk fits the model):
//   the passage's own pieces, without the special tokens a pretrained tokenizer puts around
//   every text ([CLS] ... [SEP]; passage_window leaves room for them): a passage of n tokens with window W = max_tokens and overlap O (0 <= O < W) gives the
//   windows [0, W), [W - O, 2W - O), ... until the end is covered; a passage of n <= W
//   tokens is one chunk, its own text. Each chunk's text is the stretch of the passage its
//   tokens came from (the original characters, not a decoding of the tokens).
//   n = 300, W = 128, O = 32:  [0, 128) [96, 224) [192, 300)
//
// An index folder holds everything a search needs, so it can be moved on its own:
//   index.faiss        faiss::IndexFlatIP over the chunks' float32 embeddings
//   embeddings.npy     the same embeddings, float32 [chunks, d], in index order (for another
//                      store: python/nce_chroma.py writes them into a ChromaDB collection)
//   chunks.jsonl       one line per chunk, in index order: {"passage_id", "group", "text"}
//   model.safetensors  the model that encoded them (a copy)
//   tokenizer.model    its tokenizer (a copy)
//   index.json         {"max_query_length", "max_passage_length", "query_prompt", "passage_prompt",
//                       "overlap", "chunks", "passages", "bm25": {"tokens", "k1", "b"}, and
//                       "dense_weight" when the run chose the hybrid's weight} (the prompts are
//                       the model's, for reading; search takes them from model.safetensors)
//
// Search ranks the chunks by the model (dense), by BM25 over the chunks' text with the app's
// tokens, or by the hybrid: the run's own fusion of the two (rankings.h) at the weight it
// chose on validation, so the best ranker of the run's table is the one a user can serve.
// Each file is written to a temporary name and renamed; the folder is complete only when
// index.json (written last) is there.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "eval/rankings.h"
#include "retrieval/settings/run_config.h"
#include "data/dataset.h"
#include "data/tokenizer.h"
#include "nn/model.h"

namespace nce::retrieval {

struct PassageChunk {
    int64_t passage = 0;     // index into the passages chunked
    std::string passage_id;  // that passage's id
    std::string group;       // and its group
    std::string text;        // the passage's own text from byte `begin` to byte `end`
    int64_t begin = 0;
    int64_t end = 0;
};

// Cuts each passage into windows as above; throws unless 0 <= overlap < max_tokens.
std::vector<PassageChunk> chunk_passages(const std::vector<data::Passage>& passages, const data::Tokenizer& tokenizer,
                                         int64_t max_tokens, int64_t overlap);

// The window chunk_passages should cut for a model whose passage prompt and special tokens
// take part of its max_passage_length tokens: max_passage_length - the special tokens -
// prompt_tokens(passage_prompt), so that [CLS] prompt chunk [SEP] fits and no chunk loses
// its end. Throws naming --passage-prompt when that
// leaves no more than `overlap` tokens.
int64_t passage_window(const data::Tokenizer& tokenizer, const std::string& passage_prompt, int64_t max_passage_length,
                       int64_t overlap);

struct IndexSummary {
    int64_t passages = 0;
    int64_t chunks = 0;
    int64_t passages_split = 0;  // passages longer than one window
    double seconds = 0;
};

// Chunks `passages` (window: passage_window of the model's passage prompt, `overlap` tokens),
// encodes passage prompt + chunk with `model`, and writes the index folder `index_dir` as above, copying `model_path` and
// `tokenizer_path` into it. An empty passage list is an error naming the data.
// `bm25_tokens` and config's bm25_k1, bm25_b are what BM25 reads at search time;
// `dense_weight` is the hybrid's (none: search cannot serve the hybrid).
IndexSummary build_passage_index(const std::string& index_dir, nn::EmbeddingModel& model,
                                 const data::Tokenizer& tokenizer, const std::vector<data::Passage>& passages,
                                 const RunConfig& config, int64_t overlap, const std::string& model_path,
                                 const std::string& tokenizer_path, eval::LexicalTokens bm25_tokens,
                                 std::optional<double> dense_weight);

enum class Ranker { Dense, Bm25, Hybrid };
// "dense", "bm25", "hybrid"; anything else is an error naming the three.
Ranker parse_ranker(const std::string& name);

struct SearchHit {
    double score = 0;        // dense: the cosine; bm25: its score; hybrid: the fused score
    std::string passage_id;
    std::string group;
    std::string text;
};

struct SearchResult {
    std::vector<SearchHit> hits;  // best first
    bool query_truncated = false; // the query had more than max_query_length tokens
};

// Loads the index folder (an incomplete or missing folder is one error line naming it and
// the command that builds it), encodes the index model's query prompt + `query` and returns
// its top k chunks.
SearchResult search_passage_index(const std::string& index_dir, const std::string& query, int64_t k,
                                  Ranker ranker = Ranker::Dense);

// Prints the hits: rank, score, passage id, and the text cut to `max_characters` code points.
void print_search_result(const SearchResult& result, int64_t max_characters = 160);

}  // namespace nce::retrieval
