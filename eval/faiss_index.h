// A persisted nearest-neighbour index on FAISS, built once from float32 embeddings and
// then serving many queries by inner product (cosine, for L2-normalised embeddings):
//
//   Flat: faiss::IndexFlatIP, exact, every query scores every passage.
//   Hnsw: faiss::IndexHNSWFlat with METRIC_INNER_PRODUCT, approximate, for large corpora:
//         M links per node (more: better recall, more memory), efSearch candidates kept while
//         searching (more: better recall, slower).
//
// With ids, the index is wrapped in faiss::IndexIDMap and search returns those ids instead of
// row numbers. Results are ordered by score, then by lower id; which of several passages tied
// at the k-th place make the cut is FAISS's choice (use eval/exact_search.h for an exact
// tie rule). An HNSW search may return fewer than k hits: the missing places hold id -1.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "eval/exact_search.h"

namespace faiss {
struct Index;
}

namespace nce::eval {

enum class FaissIndexKind { Flat, Hnsw };

struct FaissIndexOptions {
    FaissIndexKind kind = FaissIndexKind::Flat;
    int hnsw_links = 32;            // HNSW's M
    int hnsw_ef_construction = 40;  // candidates kept while building
    int hnsw_ef_search = 64;        // candidates kept while searching
};

class FaissIndex {
public:
    // embeddings [N, D] float32; ids, if given, [N] int64.
    static FaissIndex build(const Tensor& embeddings, const FaissIndexOptions& options = {});
    static FaissIndex build(const Tensor& embeddings, const Tensor& ids, const FaissIndexOptions& options = {});

    // Reads an index written by save; throws naming the file if it is missing or corrupt.
    static FaissIndex load(const std::string& path);
    // Writes to a temporary file beside `path`, then renames it into place.
    void save(const std::string& path) const;

    // queries [Q, D] float32 -> indices (row numbers, or ids) [Q, k] int64, scores [Q, k] float32.
    TopK search(const Tensor& queries, int64_t k) const;

    // HNSW's efSearch; throws for a flat index.
    void set_ef_search(int ef_search);

    int64_t size() const;
    int64_t dimension() const;

    FaissIndex(FaissIndex&&) noexcept;
    FaissIndex& operator=(FaissIndex&&) noexcept;
    ~FaissIndex();

private:
    explicit FaissIndex(std::unique_ptr<faiss::Index> index);
    std::unique_ptr<faiss::Index> index_;
};

}  // namespace nce::eval
