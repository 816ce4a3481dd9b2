// Embedding: a table of learned vectors looked up by integer id, as PyTorch's nn.Embedding.
#pragma once
#include "nn/module.h"

namespace nce::nn {

class Embedding : public Module {
public:
    // weight [num_embeddings, embedding_dim] ~ normal(0, 1), PyTorch's default, from `generator`.
    Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator& generator, Dtype dtype = Dtype::Float32);

    // ids: int64 [...] with every id in [0, num_embeddings) -> [..., embedding_dim].
    // The gradient scatter-adds into the rows that were looked up (engine index_select).
    Var forward(const Tensor& ids) const;

    int64_t num_embeddings() const { return weight.size(0); }
    int64_t embedding_dim() const { return weight.size(1); }

    Var weight;  // [num_embeddings, embedding_dim]
};

}  // namespace nce::nn
