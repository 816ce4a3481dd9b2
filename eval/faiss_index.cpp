#include "eval/faiss_index.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <vector>

#include <omp.h>

#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>
#include <faiss/IndexIDMap.h>
#include <faiss/impl/FaissException.h>
#include <faiss/index_io.h>

#include "engine/atomic_file.h"
#include "engine/tensor_math.h"
#include "engine/threads.h"

namespace nce::eval {
namespace {

void check_float32_rows(const Tensor& x, const char* function, const char* what) {
    check_rank(x, 2, function, what);
    NCE_CHECK(x.dtype() == Dtype::Float32, "{}: {} must be float32 (FAISS stores float32), got {}; use .to(Dtype::Float32)",
              function, what, dtype_name(x.dtype()));
    NCE_CHECK(all_finite(x), "{}: {} contain NaN or infinity", function, what);
}

std::unique_ptr<faiss::Index> make_index(int64_t dimension, const FaissIndexOptions& options) {
    int d = static_cast<int>(dimension);
    if (options.kind == FaissIndexKind::Flat) return std::make_unique<faiss::IndexFlatIP>(d);
    NCE_CHECK(options.hnsw_links >= 2 && options.hnsw_ef_construction >= 1 && options.hnsw_ef_search >= 1,
              "FaissIndex::build: HNSW needs hnsw_links >= 2 and ef values >= 1, got M = {}, efConstruction = {}, "
              "efSearch = {}",
              options.hnsw_links, options.hnsw_ef_construction, options.hnsw_ef_search);
    auto hnsw = std::make_unique<faiss::IndexHNSWFlat>(d, options.hnsw_links, faiss::METRIC_INNER_PRODUCT);
    hnsw->hnsw.efConstruction = options.hnsw_ef_construction;
    hnsw->hnsw.efSearch = options.hnsw_ef_search;
    return hnsw;
}

// The HNSW inside `index` (possibly wrapped in an IndexIDMap), or null.
faiss::IndexHNSW* hnsw_inside(faiss::Index* index) {
    if (auto* id_map = dynamic_cast<faiss::IndexIDMap*>(index)) index = id_map->index;
    return dynamic_cast<faiss::IndexHNSW*>(index);
}

}  // namespace

FaissIndex::FaissIndex(std::unique_ptr<faiss::Index> index) : index_(std::move(index)) {}
FaissIndex::FaissIndex(FaissIndex&&) noexcept = default;
FaissIndex& FaissIndex::operator=(FaissIndex&&) noexcept = default;
FaissIndex::~FaissIndex() = default;

FaissIndex FaissIndex::build(const Tensor& embeddings, const FaissIndexOptions& options) {
    check_float32_rows(embeddings, "FaissIndex::build", "embeddings");
    NCE_CHECK(embeddings.size(0) > 0, "FaissIndex::build: no embeddings; give at least one row");
    Tensor host = embeddings.to(Device::CPU);
    omp_set_num_threads(num_threads());  // FAISS's OpenMP threads follow NCE_NUM_THREADS too
    std::unique_ptr<faiss::Index> index = make_index(host.size(1), options);
    index->add(host.size(0), host.data<float>());
    return FaissIndex(std::move(index));
}

FaissIndex FaissIndex::build(const Tensor& embeddings, const Tensor& ids, const FaissIndexOptions& options) {
    check_float32_rows(embeddings, "FaissIndex::build", "embeddings");
    NCE_CHECK(ids.rank() == 1 && ids.dtype() == Dtype::Int64 && ids.size(0) == embeddings.size(0),
              "FaissIndex::build: ids must be int64 [{}], one per embedding, got {} {}", embeddings.size(0),
              dtype_name(ids.dtype()), shape_string(ids.shape()));
    NCE_CHECK(embeddings.size(0) > 0, "FaissIndex::build: no embeddings; give at least one row");
    Tensor host = embeddings.to(Device::CPU), host_ids = ids.to(Device::CPU);
    omp_set_num_threads(num_threads());
    auto id_map = std::make_unique<faiss::IndexIDMap>(make_index(host.size(1), options).release());
    id_map->own_fields = true;
    id_map->add_with_ids(host.size(0), host.data<float>(), host_ids.data<int64_t>());
    return FaissIndex(std::move(id_map));
}

FaissIndex FaissIndex::load(const std::string& path) {
    std::error_code error;
    NCE_CHECK(std::filesystem::is_regular_file(path, error), "FaissIndex::load: '{}' does not exist or is not a file",
              path);
    try {
        return FaissIndex(std::unique_ptr<faiss::Index>(faiss::read_index(path.c_str())));
    } catch (const faiss::FaissException& exception) {
        // FAISS's message spans several lines; its first line says what it could not read.
        std::string reason = exception.msg.substr(0, exception.msg.find('\n'));
        fail("FaissIndex::load: '{}' is not a readable FAISS index (corrupt or truncated?): {}", path, reason);
    }
}

void FaissIndex::save(const std::string& path) const {
    std::string temporary = atomic_temporary_for(path);
    try {
        faiss::write_index(index_.get(), temporary.c_str());
    } catch (const faiss::FaissException& exception) {
        discard_atomic_temporary(temporary);
        fail("FaissIndex::save: cannot write '{}': {}", path, exception.msg.substr(0, exception.msg.find('\n')));
    }
    commit_atomic_temporary(temporary, path, "FaissIndex::save");
}

TopK FaissIndex::search(const Tensor& queries, int64_t k) const {
    check_float32_rows(queries, "FaissIndex::search", "queries");
    NCE_CHECK(queries.size(1) == dimension(),
              "FaissIndex::search: queries have dimension {} but the index holds dimension {}", queries.size(1),
              dimension());
    NCE_CHECK(1 <= k && k <= size(), "FaissIndex::search: k = {} must be between 1 and the index size {}", k, size());
    Tensor host = queries.to(Device::CPU);
    int64_t query_count = host.size(0);
    TopK result{Tensor::empty({query_count, k}, Dtype::Int64), Tensor::empty({query_count, k}, Dtype::Float32)};
    omp_set_num_threads(num_threads());
    index_->search(query_count, host.data<float>(), k, result.scores.data<float>(), result.indices.data<int64_t>());

    // Within each row, equal scores by lower id (missing hits, id -1, stay last).
    int64_t* ids = result.indices.data<int64_t>();
    float* scores = result.scores.data<float>();
    std::vector<int64_t> order(static_cast<std::size_t>(k));
    std::vector<int64_t> row_ids(order.size());
    std::vector<float> row_scores(order.size());
    for (int64_t q = 0; q < query_count; ++q) {
        int64_t* id = ids + q * k;
        float* score = scores + q * k;
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
            if ((id[a] < 0) != (id[b] < 0)) return id[b] < 0;
            return score[a] > score[b] || (score[a] == score[b] && id[a] < id[b]);
        });
        for (int64_t i = 0; i < k; ++i) {
            row_ids[i] = id[order[i]];
            row_scores[i] = score[order[i]];
        }
        std::copy(row_ids.begin(), row_ids.end(), id);
        std::copy(row_scores.begin(), row_scores.end(), score);
    }
    return result;
}

void FaissIndex::set_ef_search(int ef_search) {
    faiss::IndexHNSW* hnsw = hnsw_inside(index_.get());
    NCE_CHECK(hnsw != nullptr, "FaissIndex::set_ef_search: this is a flat index; efSearch applies to HNSW only");
    NCE_CHECK(ef_search >= 1, "FaissIndex::set_ef_search: efSearch must be >= 1, got {}", ef_search);
    hnsw->hnsw.efSearch = ef_search;
}

int64_t FaissIndex::size() const { return index_->ntotal; }
int64_t FaissIndex::dimension() const { return index_->d; }

}  // namespace nce::eval
