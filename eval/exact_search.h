// Exact top-k retrieval by inner product: scores = queries · corpus^T, computed one corpus
// chunk and one query block at a time, so memory is bounded by chunk size × block size, not by
// the corpus. With L2-normalised embeddings the inner product is the cosine similarity.
//
// Ties: passages with equal scores are ordered by lower passage index first, so results never
// depend on chunk sizes or on the order the work is done in.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "engine/tensor.h"

namespace nce::eval {

struct TopK {
    Tensor indices;  // [Q, k] int64: passage indices, best first
    Tensor scores;   // [Q, k] in the queries' dtype: their inner products with the query
};

struct ExactSearchOptions {
    int64_t corpus_chunk_rows = 65536;  // corpus rows scored at once
    int64_t query_block_rows = 1024;    // queries scored at once against a chunk
};

// Returns corpus rows [start, end) as a [end - start, D] tensor: a corpus that lives elsewhere
// (on disk, in another process) handed over one piece at a time.
using CorpusChunkProvider = std::function<Tensor(int64_t start, int64_t end)>;

// queries [Q, D] and corpus [N, D] of the same floating dtype; 1 <= k <= N.
TopK exact_search(const Tensor& queries, const Tensor& corpus, int64_t k, const ExactSearchOptions& options = {});

// The corpus has `corpus_rows` rows, fetched chunk by chunk from `chunks`.
TopK exact_search(const Tensor& queries, int64_t corpus_rows, const CorpusChunkProvider& chunks, int64_t k,
                  const ExactSearchOptions& options = {});

// The corpus is a 2-D .npy file, read options.corpus_chunk_rows rows at a time: the corpus size
// is bounded by disk, not memory.
TopK exact_search_npy(const Tensor& queries, const std::string& corpus_path, int64_t k,
                      const ExactSearchOptions& options = {});

}  // namespace nce::eval
