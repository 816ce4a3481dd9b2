// Retrieval from Python: BM25 over token ids (eval/bm25.h), exact and FAISS nearest-neighbour
// search (eval/exact_search.h, eval/faiss_index.h), the retrieval metrics (eval/metrics.h),
// and a search over an index folder written by `nce ... index` (retrieval/index/passage_index.h).
//
//   bm25 = nce.BM25([tok.encode_ids(p) for p in passages])
//   idx, scores = bm25.search([tok.encode_ids(q) for q in queries], k=10)
//   index = nce.FaissIndex.build(model.embed(tok, passages))
//   idx, scores = index.search(model.embed(tok, queries), k=10)
//   nce.retrieval_metrics(idx, [[target] for target in targets], ks=[1, 5, 10])[5]["recall"]
#include <map>
#include <string>
#include <vector>

#include "retrieval/index/passage_index.h"
#include "eval/bm25.h"
#include "eval/exact_search.h"
#include "eval/faiss_index.h"
#include "eval/metrics.h"
#include "python/bindings.h"
#include "python/numpy_conversion.h"

namespace nce::python {
namespace {

py::tuple top_k_tuple(const eval::TopK& top) {
    return py::make_tuple(tensor_to_numpy(top.indices), tensor_to_numpy(top.scores));
}

// Rankings from an int64 [Q, k] array or a list of lists.
eval::Rankings rankings_from_python(py::handle rankings) {
    if (py::isinstance<py::array>(rankings) || py::isinstance<Tensor>(rankings)) {
        Tensor indices = tensor_from_python(rankings);
        NCE_CHECK(indices.dtype() == Dtype::Int64 && indices.rank() == 2,
                  "retrieval_metrics: rankings must be int64 [queries, k], got {} {}", dtype_name(indices.dtype()),
                  shape_string(indices.shape()));
        return eval::rankings_from_tensor(indices);
    }
    return rankings.cast<eval::Rankings>();
}

py::dict metrics_dict(const eval::MetricsAtK& metrics) {
    return py::dict(py::arg("accuracy") = metrics.accuracy, py::arg("precision") = metrics.precision,
                    py::arg("recall") = metrics.recall, py::arg("mrr") = metrics.mrr, py::arg("ndcg") = metrics.ndcg,
                    py::arg("map") = metrics.map);
}

eval::FaissIndexKind parse_index_kind(const std::string& kind) {
    if (kind == "flat") return eval::FaissIndexKind::Flat;
    if (kind == "hnsw") return eval::FaissIndexKind::Hnsw;
    fail("FaissIndex: kind must be flat or hnsw; got '{}'", kind);
}

}  // namespace

void bind_search(py::module_& module) {
    using py::arg;
    py::class_<eval::Bm25Index>(module, "BM25", "Okapi BM25 (Lucene's idf) over token-id documents")
        .def(py::init([](const std::vector<std::vector<int64_t>>& documents, double k1, double b) {
                 return eval::Bm25Index(documents, eval::Bm25Parameters{k1, b});
             }),
             arg("documents"), arg("k1") = 1.2, arg("b") = 0.75)
        .def_property_readonly("document_count", &eval::Bm25Index::document_count)
        .def("scores", [](const eval::Bm25Index& index, const std::vector<int64_t>& query) {
                 std::vector<double> scores = index.scores(query);
                 return tensor_to_numpy(
                     Tensor::from_vector(scores, {static_cast<int64_t>(scores.size())}, Dtype::Float64));
             }, arg("query"), "score(query, d) for every document: float64 [N]")
        .def("search", [](const eval::Bm25Index& index, const std::vector<std::vector<int64_t>>& queries, int64_t k) {
                 return top_k_tuple(index.search(queries, k));
             }, arg("queries"), arg("k"), "(indices int64 [Q,k], scores float64 [Q,k]); ties: lower index first");

    py::class_<eval::FaissIndex>(module, "FaissIndex", "A FAISS inner-product index (flat: exact; hnsw: approximate)")
        .def_static("build", [](const ArrayLike& embeddings, const ArrayLike& ids, const std::string& kind, int hnsw_links,
                                int hnsw_ef_construction, int hnsw_ef_search) {
                        eval::FaissIndexOptions options{parse_index_kind(kind), hnsw_links, hnsw_ef_construction,
                                                        hnsw_ef_search};
                        Tensor rows = embeddings.tensor();
                        if (ids.object.is_none()) return eval::FaissIndex::build(rows, options);
                        return eval::FaissIndex::build(rows, ids.tensor(), options);
                    },
                    arg("embeddings"), arg("ids") = py::none(), arg("kind") = "flat", arg("hnsw_links") = 32,
                    arg("hnsw_ef_construction") = 40, arg("hnsw_ef_search") = 64,
                    "embeddings float32 [N, D]; ids int64 [N] (search returns them instead of row numbers)")
        .def_static("load", &eval::FaissIndex::load, arg("path"))
        .def("save", &eval::FaissIndex::save, arg("path"))
        .def("search", [](const eval::FaissIndex& index, const ArrayLike& queries, int64_t k) {
                 return top_k_tuple(index.search(queries.tensor(), k));
             }, arg("queries"), arg("k"), "(indices int64 [Q,k], scores float32 [Q,k]), best first")
        .def("set_ef_search", &eval::FaissIndex::set_ef_search, arg("ef_search"))
        .def_property_readonly("size", &eval::FaissIndex::size)
        .def_property_readonly("dimension", &eval::FaissIndex::dimension);

    module.def("exact_search", [](const ArrayLike& queries, const ArrayLike& corpus, int64_t k) {
        return top_k_tuple(eval::exact_search(queries.tensor(), corpus.tensor(), k));
    }, arg("queries"), arg("corpus"), arg("k"), "Exact top k by inner product: (indices [Q,k], scores [Q,k])");

    module.def("retrieval_metrics", [](const ArrayLike& rankings, const eval::RelevantSets& relevant,
                                       const std::vector<int64_t>& ks) {
        py::dict by_k;
        for (const auto& [k, metrics] : eval::retrieval_metrics(rankings_from_python(rankings.object), relevant, ks))
            by_k[py::int_(k)] = metrics_dict(metrics);
        return by_k;
    }, arg("rankings"), arg("relevant"), arg("ks") = std::vector<int64_t>{1, 5, 10},
       "{k: {accuracy, precision, recall, mrr, ndcg, map}}: rankings [Q,k] (best first), relevant[q] = the "
       "passages relevant to query q");

    module.def("search_passage_index", [](const std::string& index_dir, const std::string& query, int64_t k,
                                          const std::string& ranker) {
        retrieval::SearchResult result =
            retrieval::search_passage_index(index_dir, query, k, retrieval::parse_ranker(ranker));
        py::list hits;
        for (const retrieval::SearchHit& hit : result.hits)
            hits.append(py::dict(py::arg("score") = hit.score, py::arg("passage_id") = hit.passage_id,
                                 py::arg("group") = hit.group, py::arg("text") = hit.text));
        return py::dict(py::arg("hits") = hits, py::arg("query_truncated") = result.query_truncated);
    }, arg("index_dir"), arg("query"), arg("k") = 10, arg("ranker") = "dense",
       "Searches an index folder written by `nce <app> index`: ranker 'dense' (the model and tokenizer inside it "
       "embed the query), 'bm25', or 'hybrid' (the run's fusion of the two at the weight it chose on validation)");
}

}  // namespace nce::python
