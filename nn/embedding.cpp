#include "nn/embedding.h"

namespace nce::nn {

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator& generator, Dtype dtype) {
    NCE_CHECK(num_embeddings > 0 && embedding_dim > 0,
              "Embedding: num_embeddings and embedding_dim must be positive, got {} and {}", num_embeddings,
              embedding_dim);
    NCE_CHECK(is_floating(dtype), "Embedding: parameters must be float32 or float64, got {}", dtype_name(dtype));
    weight = Var::parameter(generator.normal({num_embeddings, embedding_dim}, dtype));
    register_parameter("weight", weight);
}

Var Embedding::forward(const Tensor& ids) const {
    NCE_CHECK(ids.defined() && ids.dtype() == Dtype::Int64, "Embedding: ids must be an int64 tensor, got {}",
              ids.defined() ? dtype_name(ids.dtype()) : "an undefined tensor");
    // On a device the lookup's kernel checks the ids (an id out of range is reported at the
    // next read-back) rather than reading them all back here.
    if (ids.device() != Device::CPU) return index_select(weight, ids);  // [..., embedding_dim]
    // Name the first bad id and where it is, so a tokenizer/vocabulary mismatch is easy to find.
    const std::vector<int64_t> values = ids.to_indices();
    const int64_t rows = num_embeddings();
    for (size_t i = 0; i < values.size(); ++i)
        NCE_CHECK(values[i] >= 0 && values[i] < rows,
                  "Embedding: id {} at flat position {} of ids {} is out of range; ids must be in [0, {}) "
                  "(the table has {} rows)",
                  values[i], i, shape_string(ids.shape()), rows, rows);
    return index_select(weight, ids);  // [..., embedding_dim]
}

}  // namespace nce::nn
