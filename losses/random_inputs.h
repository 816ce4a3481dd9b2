// Random inputs for the losses' `example` problems: embeddings as the models give them,
// rows of unit length (the loss's dot product is then the cosine).
#pragma once
#include "engine/nce.h"

namespace nce::losses {

// [rows, dim] standard normal rows, each divided by its norm.   (float64)
inline Tensor random_unit_rows(Generator& generator, int64_t rows, int64_t dim) {
    Tensor x = generator.normal({rows, dim}, Dtype::Float64);
    return x / sqrt(sum(x * x, 1, /*keepdim=*/true));
}

}  // namespace nce::losses
