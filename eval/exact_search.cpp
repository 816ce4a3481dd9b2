#include "eval/exact_search.h"

#include <algorithm>
#include <vector>

#include "engine/tensor_math.h"
#include "eval/npy_row_reader.h"

namespace nce::eval {
namespace {

struct Candidate {
    double score;
    int64_t index;
};

// a ranks before b: higher score, or the same score and a lower index.
bool ranks_before(const Candidate& a, const Candidate& b) {
    return a.score > b.score || (a.score == b.score && a.index < b.index);
}

// The k best candidates seen so far for one query, as a heap whose top is the worst of them,
// so a new candidate only has to beat the top to get in.
class TopKHeap {
public:
    explicit TopKHeap(int64_t k) : k_(static_cast<std::size_t>(k)) { heap_.reserve(k_); }

    void offer(Candidate candidate) {
        if (heap_.size() < k_) {
            heap_.push_back(candidate);
            std::push_heap(heap_.begin(), heap_.end(), ranks_before);
        } else if (ranks_before(candidate, heap_.front())) {
            std::pop_heap(heap_.begin(), heap_.end(), ranks_before);
            heap_.back() = candidate;
            std::push_heap(heap_.begin(), heap_.end(), ranks_before);
        }
    }

    // Best first.
    std::vector<Candidate> sorted() const {
        std::vector<Candidate> best = heap_;
        std::sort(best.begin(), best.end(), ranks_before);
        return best;
    }

private:
    std::size_t k_;
    std::vector<Candidate> heap_;
};

void check_queries(const Tensor& queries, int64_t corpus_rows, int64_t k, const ExactSearchOptions& options) {
    check_rank(queries, 2, "exact_search", "queries");
    check_floating(queries, "exact_search", "queries");
    NCE_CHECK(corpus_rows > 0, "exact_search: the corpus is empty; it needs at least k = {} rows", k);
    NCE_CHECK(1 <= k && k <= corpus_rows, "exact_search: k = {} must be between 1 and the corpus size {}", k,
              corpus_rows);
    NCE_CHECK(options.corpus_chunk_rows > 0 && options.query_block_rows > 0,
              "exact_search: corpus_chunk_rows ({}) and query_block_rows ({}) must be positive",
              options.corpus_chunk_rows, options.query_block_rows);
}

}  // namespace

TopK exact_search(const Tensor& queries, int64_t corpus_rows, const CorpusChunkProvider& chunks, int64_t k,
                  const ExactSearchOptions& options) {
    check_queries(queries, corpus_rows, k, options);
    Tensor host_queries = queries.to(Device::CPU);
    int64_t query_count = host_queries.size(0), dim = host_queries.size(1);
    std::vector<TopKHeap> best(static_cast<std::size_t>(query_count), TopKHeap(k));

    for (int64_t chunk_start = 0; chunk_start < corpus_rows; chunk_start += options.corpus_chunk_rows) {
        int64_t chunk_end = std::min(corpus_rows, chunk_start + options.corpus_chunk_rows);
        Tensor chunk = chunks(chunk_start, chunk_end).to(Device::CPU);  // [C, D]
        NCE_CHECK(chunk.rank() == 2 && chunk.size(0) == chunk_end - chunk_start && chunk.size(1) == dim,
                  "exact_search: corpus rows [{}, {}) came back with shape {}; expected [{}, {}] to match the "
                  "queries' dimension",
                  chunk_start, chunk_end, shape_string(chunk.shape()), chunk_end - chunk_start, dim);
        NCE_CHECK(chunk.dtype() == host_queries.dtype(),
                  "exact_search: the corpus is {} but the queries are {}; convert one with .to(dtype)",
                  dtype_name(chunk.dtype()), dtype_name(host_queries.dtype()));
        NCE_CHECK(all_finite(chunk), "exact_search: corpus rows [{}, {}) contain NaN or infinity", chunk_start,
                  chunk_end);

        for (int64_t block_start = 0; block_start < query_count; block_start += options.query_block_rows) {
            int64_t block_end = std::min(query_count, block_start + options.query_block_rows);
            Tensor block = slice(host_queries, 0, block_start, block_end);     // [B, D]
            Tensor scores = matmul(block, chunk, Transpose::Second).to(Dtype::Float64);  // [B, C]
            const double* score = scores.data<double>();
            int64_t chunk_size = chunk_end - chunk_start;
            for (int64_t q = block_start; q < block_end; ++q) {
                const double* row = score + (q - block_start) * chunk_size;
                for (int64_t c = 0; c < chunk_size; ++c) best[q].offer({row[c], chunk_start + c});
            }
        }
    }

    TopK result{Tensor::empty({query_count, k}, Dtype::Int64), Tensor::empty({query_count, k}, Dtype::Float64)};
    int64_t* indices = result.indices.data<int64_t>();
    double* scores = result.scores.data<double>();
    for (int64_t q = 0; q < query_count; ++q) {
        std::vector<Candidate> sorted = best[q].sorted();
        for (int64_t i = 0; i < k; ++i) {
            indices[q * k + i] = sorted[i].index;
            scores[q * k + i] = sorted[i].score;
        }
    }
    result.scores = result.scores.to(host_queries.dtype());
    return result;
}

TopK exact_search(const Tensor& queries, const Tensor& corpus, int64_t k, const ExactSearchOptions& options) {
    check_rank(corpus, 2, "exact_search", "corpus");
    return exact_search(queries, corpus.size(0),
                        [&corpus](int64_t start, int64_t end) { return slice(corpus, 0, start, end); }, k, options);
}

TopK exact_search_npy(const Tensor& queries, const std::string& corpus_path, int64_t k,
                      const ExactSearchOptions& options) {
    NpyRowReader reader(corpus_path);
    return exact_search(queries, reader.rows(),
                        [&reader](int64_t start, int64_t end) { return reader.read_rows(start, end); }, k, options);
}

}  // namespace nce::eval
