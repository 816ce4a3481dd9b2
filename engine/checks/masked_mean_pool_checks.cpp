#include "engine/checks/checks.h"

namespace nce::checks {

// Each case pools x [B, T, D] under a fixed mask with padding in it; the mask is built in
// the checked dtype (or int64) inside the function, so it is a constant, not an input.
void add_masked_mean_pool_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        Shape x;
        std::vector<double> mask;  // [B, T], row-major: 1 = token, 0 = padding
        bool int64_mask;
    };
    for (const Case& c : {Case{"x [2,4,3], 3 and 2 tokens", {2, 4, 3}, {1, 1, 1, 0, 1, 1, 0, 0}, false},
                          Case{"x [3,5,2], 3, 5 and 1 tokens",
                               {3, 5, 2},
                               {1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
                               false},
                          Case{"x [2,3,4], int64 mask, 1 and 2 tokens", {2, 3, 4}, {0, 1, 0, 1, 0, 1}, true}}) {
        registry.add({"masked_mean_pool", c.description,
                      [c](Generator& g, Dtype) { return std::vector<Tensor>{normal(g, c.x)}; },
                      [c](const std::vector<Var>& x) {
                          Shape mask_shape{c.x[0], c.x[1]};
                          Tensor mask = Tensor::from_vector(c.mask, mask_shape, x[0].dtype());
                          if (c.int64_mask) mask = mask.to(Dtype::Int64);
                          return masked_mean_pool(x[0], mask);
                      },
                      {}});
    }
}

}  // namespace nce::checks
